#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/bundle/bundle.h"

namespace picket::bundle {
namespace {

using Strings = std::vector<std::string>;

TEST(ScanRule, ReadsIdsAndState) {
    auto r = scan_rule("alert tcp any any -> any 80 (msg:\"x\"; sid:2010935; rev:3;)");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->id, (RuleId{1, 2010935}));
    EXPECT_EQ(r->rev, 3u);
    EXPECT_TRUE(r->enabled);

    auto disabled = scan_rule("  ## alert udp any any -> any 53 (gid:3; sid: 7 ; rev:1;)  ");
    ASSERT_TRUE(disabled.has_value());
    EXPECT_EQ(disabled->id, (RuleId{3, 7}));
    EXPECT_FALSE(disabled->enabled);
    EXPECT_EQ(disabled->body, "alert udp any any -> any 53 (gid:3; sid: 7 ; rev:1;)");

    // ';' inside quotes and escaped ';' do not end an option; the text "sid:9" inside msg is
    // not the sid.
    auto quoted =
        scan_rule(R"(drop ip any any -> any any (msg:"a; sid:9;"; content:"x\;y"; sid:5))");
    ASSERT_TRUE(quoted.has_value());
    EXPECT_EQ(quoted->id.sid, 5u);

    // An unbalanced quote inside a value (ET Open's sid 2029732): the option ends at the next
    // unescaped ';', as Suricata reads it, so the sid and rev after it are found.
    auto odd = scan_rule(
        R"(alert http any any -> any any (msg:"q"; pcre:"/^["']?post/Ri"; sid:3000002; rev:2;))");
    ASSERT_TRUE(odd.has_value());
    EXPECT_EQ(odd->id.sid, 3000002u);
    EXPECT_EQ(odd->rev, 2u);

    EXPECT_FALSE(scan_rule("# just a comment (sid:1;)").has_value());
    EXPECT_FALSE(scan_rule("").has_value());
    EXPECT_FALSE(scan_rule("alert tcp any any -> any any (msg:\"no sid\";)").has_value());
    EXPECT_FALSE(scan_rule("alert tcp any any -> any any (sid:abc;)").has_value());
    EXPECT_FALSE(scan_rule("alert tcp any any -> any any (sid:0;)").has_value());
}

const std::map<std::string, std::string> kRules = {
    {"rules/a.rules",
     "# header comment\n"
     "alert tcp any any -> any 80 (msg:\"one\"; sid:1; rev:1;)\n"
     "# alert tcp any any -> any 81 (msg:\"two\"; sid:2; rev:1;)\n"
     "alert udp any any -> any 53 (msg:\"three\"; content:\"abc\"; sid:3; rev:2;)\r\n"},
    {"rules/b.rules",
     "alert tcp any any -> any 443 (msg:\"four\"; \\\n"
     "  sid:4; rev:1;)\n"
     "#alert icmp any any -> any any (msg:\"five\"; sid:5;)"},
};

TEST(ApplyTuning, NoTuningKeepsEveryByte) {
    TuningResult r = apply_tuning(kRules, Tuning{});
    EXPECT_EQ(r.rules, kRules);
    EXPECT_EQ(r.threshold_config, "");
    EXPECT_TRUE(r.report.ok());
    EXPECT_TRUE(r.report.changes.empty());
}

TEST(ApplyTuning, EnableDisableModify) {
    Tuning t;
    t.enable = {{1, 2}, {1, 5}, {1, 1}};
    t.disable = {{1, 3}, {1, 4}};
    t.modify = {{{1, 1}, "any 80", "$$HTTP_PORTS"},
                {{1, 2}, "msg:\"(\\w+)\"", "msg:\"$1 (tuned)\""}};
    TuningResult r = apply_tuning(kRules, t);
    EXPECT_EQ(r.rules.at("rules/a.rules"),
              "# header comment\n"
              "alert tcp any any -> $HTTP_PORTS (msg:\"one\"; sid:1; rev:1;)\n"
              "alert tcp any any -> any 81 (msg:\"two (tuned)\"; sid:2; rev:1;)\n"
              "# alert udp any any -> any 53 (msg:\"three\"; content:\"abc\"; sid:3; rev:2;)\r\n");
    EXPECT_EQ(r.rules.at("rules/b.rules"),
              "# alert tcp any any -> any 443 (msg:\"four\";   sid:4; rev:1;)\n"
              "alert icmp any any -> any any (msg:\"five\"; sid:5;)");
    EXPECT_EQ(r.report.changes, (Strings{
                                    "enabled 1:2 (rules/a.rules:3)",
                                    "enabled 1:5 (rules/b.rules:3)",
                                    "disabled 1:3 (rules/a.rules:4)",
                                    "disabled 1:4 (rules/b.rules:1)",
                                    "modified 1:1 (rules/a.rules:2)",
                                    "modified 1:2 (rules/a.rules:3)",
                                }));
    EXPECT_EQ(r.report.warnings,
              (Strings{"enable[2]: sid 1:1 is already enabled (rules/a.rules:2)"}));
    EXPECT_TRUE(r.report.ok());
}

TEST(ApplyTuning, SuppressAndThresholdRenderExactly) {
    Tuning t;
    t.suppress = {{{1, 1}, "", ""},
                  {{1, 3}, "by_src", "10.0.0.0/8"},
                  {{1, 4}, "by_either", "[1.2.3.4,$DNS]"}};
    t.threshold = {{{1, 2}, "limit", "by_src", 1, 60}, {{1, 5}, "both", "by_rule", 10, 3600}};
    TuningResult r = apply_tuning(kRules, t);
    EXPECT_EQ(r.threshold_config,
              "suppress gen_id 1, sig_id 1\n"
              "suppress gen_id 1, sig_id 3, track by_src, ip 10.0.0.0/8\n"
              "suppress gen_id 1, sig_id 4, track by_either, ip [1.2.3.4,$DNS]\n"
              "threshold gen_id 1, sig_id 2, type limit, track by_src, count 1, seconds 60\n"
              "threshold gen_id 1, sig_id 5, type both, track by_rule, count 10, seconds 3600\n");
    EXPECT_EQ(r.rules, kRules);
    EXPECT_TRUE(r.report.ok());
}

TEST(ApplyTuning, ErrorsNameTheEntryAndSid) {
    Tuning t;
    t.enable = {{1, 99}, {1, 3}};
    t.disable = {{1, 3}, {2, 1}};
    t.modify = {{{1, 1}, "(unclosed", "x"},
                {{1, 1}, "not-in-rule", "x"},
                {{1, 77}, "a", "b"},
                {{1, 1}, "sid:1;", "sid:2;"}};
    t.suppress = {{{1, 42}, "", ""}};
    t.threshold = {{{1, 43}, "limit", "by_src", 1, 1}};
    TuningResult r = apply_tuning(kRules, t);
    EXPECT_EQ(r.report.errors,
              (Strings{
                  "enable[1]: sid 1:3 is also in disable",
                  "modify[0] (sid 1:1): regex '(unclosed' does not compile: missing closing "
                  "parenthesis at offset 9",
                  "modify[1] (sid 1:1): regex 'not-in-rule' does not match the rule "
                  "(rules/a.rules:2)",
                  "modify[3] (sid 1:1): the result is no longer one rule with sid 1:1 "
                  "(rules/a.rules:2): alert tcp any any -> any 80 (msg:\"one\"; sid:2; rev:1;)",
              }));
    // A sid no rules file has (retired upstream) is ignored with a warning, not an error.
    EXPECT_EQ(r.report.warnings, (Strings{
                                     "enable[0]: sid 1:99 not found in the rules: ignored",
                                     "disable[1]: sid 2:1 not found in the rules: ignored",
                                     "modify[2] (sid 1:77): sid 1:77 not found in the rules: "
                                     "ignored",
                                     "suppress[0]: sid 1:42 not found in the rules: ignored",
                                     "threshold[0]: sid 1:43 not found in the rules: ignored",
                                 }));
    // Entries in error change nothing; the valid disable still applies.
    EXPECT_EQ(r.report.changes, (Strings{"disabled 1:3 (rules/a.rules:4)"}));
    EXPECT_EQ(r.rules.at("rules/b.rules"), kRules.at("rules/b.rules"));
    EXPECT_EQ(r.threshold_config, "");
}

TEST(ParseTuning, FullExample) {
    auto t = parse_tuning(R"(
enable: [2010935, "3:7"]
disable:
  - 2100498
modify:
  - sid: 2019401
    from: 'flow:established'
    to: 'flow:established,to_server'
suppress:
  - {sid: 2100498, track: by_src, ip: 10.0.0.0/8}
  - {gid: 1, sid: 5}
threshold:
  - {sid: 2010935, type: limit, track: by_src, count: 1, seconds: 60}
)");
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->enable, (std::vector<RuleId>{{1, 2010935}, {3, 7}}));
    EXPECT_EQ(t->disable, (std::vector<RuleId>{{1, 2100498}}));
    ASSERT_EQ(t->modify.size(), 1u);
    EXPECT_EQ(t->modify[0].id, (RuleId{1, 2019401}));
    EXPECT_EQ(t->modify[0].from, "flow:established");
    EXPECT_EQ(t->modify[0].to, "flow:established,to_server");
    ASSERT_EQ(t->suppress.size(), 2u);
    EXPECT_EQ(t->suppress[0].track, "by_src");
    EXPECT_EQ(t->suppress[0].ip, "10.0.0.0/8");
    EXPECT_EQ(t->suppress[1].id, (RuleId{1, 5}));
    EXPECT_EQ(t->suppress[1].track, "");
    ASSERT_EQ(t->threshold.size(), 1u);
    EXPECT_EQ(t->threshold[0].type, "limit");
    EXPECT_EQ(t->threshold[0].count, 1u);
    EXPECT_EQ(t->threshold[0].seconds, 60u);

    EXPECT_TRUE(parse_tuning("").ok());
}

TEST(ParseTuning, StructuralErrorsNameTheEntry) {
    auto msg = [](const char* yaml) { return std::string(parse_tuning(yaml).status().message()); };
    EXPECT_EQ(msg("threshold:\n  - {sid: 1, type: limit, track: by_src, seconds: 60}\n"),
              "tuning.yaml:2: threshold[0]: missing 'count'");
    EXPECT_EQ(msg("threshold:\n  - {sid: 1, type: often, track: by_src, count: 1, seconds: 1}\n"),
              "tuning.yaml:2: threshold[0]: type 'often' must be limit, threshold or both");
    EXPECT_EQ(msg("disable: [abc]\n"),
              "tuning.yaml:1: disable[0]: 'abc' is not a sid (N or GID:SID)");
    EXPECT_EQ(msg("disabled: [1]\n"),
              "tuning.yaml:1: top level: unknown key 'disabled' (allowed: enable, disable, "
              "modify, suppress, threshold)");
    EXPECT_EQ(msg("suppress:\n  - {sid: 1, track: by_src}\n"),
              "tuning.yaml:2: suppress[0]: 'track' and 'ip' go together");
    EXPECT_EQ(msg("modify:\n  - {sid: 1, from: x}\n"), "tuning.yaml:2: modify[0]: missing 'to'");
    EXPECT_EQ(msg("enable: 5\n"), "tuning.yaml:1: enable: must be a list");
    EXPECT_EQ(msg("enable: [1\n"), "tuning.yaml:2:1: end of sequence flow not found");
}

Bundle bundle_with(const std::map<std::string, std::string>& files) {
    Bundle b;
    b.mutable_manifest()->set_name("t");
    for (const auto& [path, content] : files) {
        auto* f = b.add_files();
        f->set_path(path);
        f->set_content(content);
    }
    update_manifest_files(b);
    return b;
}

TEST(EffectiveRules, TuningOnTopOfTheBundle) {
    Bundle b = bundle_with({
        {"rules/a.rules",
         "alert ip any any -> any any (sid:1;)\nalert ip any any -> any any (sid:2;)\n"},
        {"threshold.config", "suppress gen_id 1, sig_id 9"},
        {"tuning.yaml", "disable: [2]\nsuppress: [{sid: 1}]\n"},
        {"config.yaml", "x: 1\n"},
    });
    auto r = effective_rules(b);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->rules,
              (std::map<std::string, std::string>{{"rules/a.rules",
                                                   "alert ip any any -> any any (sid:1;)\n"
                                                   "# alert ip any any -> any any (sid:2;)\n"}}));
    EXPECT_EQ(r->threshold_config, "suppress gen_id 1, sig_id 9\nsuppress gen_id 1, sig_id 1\n");
    EXPECT_TRUE(check_content(b).ok());

    Bundle bad = bundle_with({
        {"rules/a.rules", "alert ip any any -> any any (sid:1;)\n"},
        {"tuning.yaml", "disable: [3, 1]\nenable: [1]\n"},
        {"config.yaml", "- a list\n"},
    });
    EXPECT_EQ(check_content(bad).message(),
              "config.yaml: the top level must be a map\n"
              "tuning.yaml: enable[0]: sid 1:1 is also in disable");
    Bundle retired = bundle_with({
        {"rules/a.rules", "alert ip any any -> any any (sid:1;)\n"},
        {"tuning.yaml", "disable: [3]\n"},
    });
    EXPECT_TRUE(check_content(retired).ok()) << check_content(retired);
}

}  // namespace
}  // namespace picket::bundle
