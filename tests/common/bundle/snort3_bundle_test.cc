// Snort 3 rules files in bundles: sid extraction (gid:sid anywhere, comma options, quoted ';',
// rem, service headers, Snort 3 actions, rules spanning lines), diff and tuning over a bundle
// with a Snort 3 file next to a Suricata one, and config.yaml's rule-syntax.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/bundle/bundle.h"

namespace picket::bundle {
namespace {

using Strings = std::vector<std::string>;

Bundle make(uint64_t version, const std::map<std::string, std::string>& files) {
    Bundle b;
    b.mutable_manifest()->set_name("s3");
    b.mutable_manifest()->set_version(version);
    for (const auto& [path, content] : files) {
        auto* f = b.add_files();
        f->set_path(path);
        f->set_content(content);
    }
    update_manifest_files(b);
    return b;
}

TEST(ScanRuleSnort3, IdsAnywhereCommaOptionsQuotesRemAndServiceHeaders) {
    // gid before sid, a ';' inside a comma-option content, "sid:9" inside rem.
    auto r = scan_rule(R"(alert http (msg:"x"; gid:1; http_uri; content:"a;b",depth 3,nocase; )"
                       R"(rem:"sid:9; gid:8"; sid:1000001; rev:2;))");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->id, (RuleId{1, 1000001}));
    EXPECT_EQ(r->rev, 2u);
    EXPECT_TRUE(r->enabled);

    // gid after sid; Snort 3's block action; an option list closed without ';'.
    r = scan_rule(R"r(block tcp any any -> any any (sid:5; content:"(x)",nocase; gid:3 ))r");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->id, (RuleId{3, 5}));

    r = scan_rule(R"(# alert file (file_data; content:"MZ",depth 2; sid:8 ))");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->id, (RuleId{1, 8}));
    EXPECT_FALSE(r->enabled);
    EXPECT_EQ(r->body, R"(alert file (file_data; content:"MZ",depth 2; sid:8 ))");

    for (const char* action : {"react", "rewrite"}) {
        r = scan_rule(std::string(action) + " tcp any any -> any any (sid:6;)");
        ASSERT_TRUE(r.has_value()) << action;
        EXPECT_EQ(r->id, (RuleId{1, 6}));
    }
    EXPECT_FALSE(scan_rule("alert http (msg:\"no sid\"; rem:\"sid:4\";)").has_value());
}

TEST(ScanRuleSnort3, RulesSpanningLinesAreOneRule) {
    const std::string text =
        "alert http $HOME_NET any -> any any (\n"
        "    msg:\"multi; line\";\n"
        "    # a comment between options\n"
        "    content:\"x)y\",depth 3;\r\n"
        "    sid:10; rev:1;\n"
        ")\n"
        "alert tcp any any -> any any (msg:\"one\"; sid:11;)\n"
        "alert tcp any any -> any any (msg:\"unclosed\"; sid:12;\n"
        "alert tcp any any -> any any (msg:\"after\"; sid:13;)\n"
        "# alert tcp any any -> any any (msg:\"disabled, not joined\";\n"
        "    sid:14;)\n";
    std::vector<ScannedRule> rules = scan_rules(text);
    ASSERT_EQ(rules.size(), 4u);
    EXPECT_EQ(rules[0].id, (RuleId{1, 10}));
    EXPECT_EQ(rules[0].body,
              "alert http $HOME_NET any -> any any ( msg:\"multi; line\"; "
              "content:\"x)y\",depth 3; sid:10; rev:1; )");
    EXPECT_EQ(rules[1].id, (RuleId{1, 11}));
    // No ')' before the next rule: the line stays alone (the sensor reports it there).
    EXPECT_EQ(rules[2].id, (RuleId{1, 12}));
    EXPECT_EQ(rules[2].body, "alert tcp any any -> any any (msg:\"unclosed\"; sid:12;");
    EXPECT_EQ(rules[3].id, (RuleId{1, 13}));

    // Backslash continuations are joined as before.
    rules = scan_rules("alert http (msg:\"a\"; \\\n  sid:15;)\n");
    ASSERT_EQ(rules.size(), 1u);
    EXPECT_EQ(rules[0].body, "alert http (msg:\"a\";   sid:15;)");

    // An unclosed rule at the end of the file stays one line.
    rules = scan_rules("alert http (msg:\"a\"; sid:16;\n  content:\"b\";\n");
    ASSERT_EQ(rules.size(), 1u);
    EXPECT_EQ(rules[0].body, "alert http (msg:\"a\"; sid:16;");
}

const char kSnort3V1[] =
    "# Talos-style Snort 3 rules\n"
    "alert http (msg:\"uri\"; http_uri; content:\"/a.php\",fast_pattern,nocase; "
    "sid:1000001; rev:1;)\n"
    "alert tcp $EXTERNAL_NET any -> $HOME_NET 80 (msg:\"gone\"; content:\"a;b\",depth 3; "
    "rem:\"sid:5\"; service:http; sid:1000002; rev:1;)\n"
    "# alert http (msg:\"commented\"; http_header; content:\"X-Evil\"; sid:1000003; rev:1;)\n"
    "alert http (\n"
    "    msg:\"multi\";\n"
    "    http_method; content:\"POST\";\n"
    "    sid:1000004; rev:1;\n"
    ")\n";
const char kSuricataV1[] =
    "alert tcp any any -> any 22 (msg:\"ssh\"; content:\"SSH-\"; sid:2000001; rev:1;)\n";

TEST(DiffBundlesSnort3, AddedRemovedChangedByGidSidOverBothLanguages) {
    Bundle a = make(1, {{"rules/talos/snort3.rules", kSnort3V1},
                        {"rules/et.rules", kSuricataV1},
                        {"config.yaml", "rule-syntax:\n  rules/talos/: snort3\n"}});
    Bundle b = make(
        2, {{"rules/talos/snort3.rules",
             "# Talos-style Snort 3 rules\n"
             "alert http (msg:\"uri\"; http_uri; content:\"/b.php\",fast_pattern,nocase; "
             "sid:1000001; rev:2;)\n"
             "alert tcp $EXTERNAL_NET any -> $HOME_NET 80 (msg:\"gid 3\"; gid:3; "
             "content:\"a;b\",depth 3; sid:1000002; rev:1;)\n"
             "# alert http (msg:\"commented\"; http_header; content:\"X-Evil\"; sid:1000003; "
             "rev:1;)\n"
             "alert http (\n"
             "    msg:\"multi\";\n"
             "    http_method; content:\"POST\";\n"
             "    sid:1000004; rev:1;\n"
             ")\n"},
            {"rules/et.rules",
             "# alert tcp any any -> any 22 (msg:\"ssh\"; content:\"SSH-\"; sid:2000001; "
             "rev:1;)\n"},
            {"config.yaml", "rule-syntax:\n  rules/talos/: snort3\n  rules/et.rules: suricata\n"}});
    auto d = diff_bundles(a, b);
    ASSERT_TRUE(d.ok()) << d.status();

    ASSERT_EQ(d->rules_added_size(), 1);
    EXPECT_EQ(d->rules_added(0).gid(), 3u);
    EXPECT_EQ(d->rules_added(0).sid(), 1000002u);
    EXPECT_EQ(d->rules_added(0).file(), "rules/talos/snort3.rules");

    ASSERT_EQ(d->rules_removed_size(), 1);
    EXPECT_EQ(d->rules_removed(0).gid(), 1u);
    EXPECT_EQ(d->rules_removed(0).sid(), 1000002u);
    EXPECT_EQ(d->rules_removed(0).old_text(),
              "alert tcp $EXTERNAL_NET any -> $HOME_NET 80 (msg:\"gone\"; content:\"a;b\",depth 3; "
              "rem:\"sid:5\"; service:http; sid:1000002; rev:1;)");

    // By (gid, sid): 1:1000001 (Snort 3 text) then 1:2000001 (Suricata, now disabled). The
    // unchanged multi-line rule and the unchanged commented-out one are not listed.
    ASSERT_EQ(d->rules_changed_size(), 2);
    EXPECT_EQ(d->rules_changed(0).sid(), 1000001u);
    EXPECT_EQ(d->rules_changed(0).new_text(),
              "alert http (msg:\"uri\"; http_uri; content:\"/b.php\",fast_pattern,nocase; "
              "sid:1000001; rev:2;)");
    EXPECT_EQ(d->rules_changed(1).sid(), 2000001u);
    EXPECT_EQ(d->rules_changed(1).file(), "rules/et.rules");
    EXPECT_TRUE(d->rules_changed(1).old_enabled());
    EXPECT_FALSE(d->rules_changed(1).new_enabled());

    ASSERT_EQ(d->config_changes_size(), 1);
    EXPECT_EQ(d->config_changes(0).file(), "config.yaml");
    EXPECT_EQ(d->config_changes(0).key(), "rule-syntax.rules/et.rules");
    EXPECT_EQ(d->config_changes(0).kind(), picket::v1::CHANGE_KIND_ADDED);
    EXPECT_EQ(d->config_changes(0).new_value(), "suricata");
}

TEST(ApplyTuningSnort3, DisableModifyEnableOnSnort3Rules) {
    auto tuning = parse_tuning(
        "enable: [1000003]\n"
        "disable: [\"1:1000001\", 1000004]\n"
        "modify:\n"
        "  - {sid: 1000002, from: 'depth 3', to: 'depth 4'}\n"
        "suppress:\n"
        "  - {sid: 1000002, track: by_src, ip: 10.0.0.0/8}\n");
    ASSERT_TRUE(tuning.ok()) << tuning.status();
    TuningResult r = apply_tuning(
        {{"rules/talos/snort3.rules", kSnort3V1}, {"rules/et.rules", kSuricataV1}}, *tuning);
    EXPECT_EQ(r.report.errors, Strings{});
    EXPECT_EQ(r.report.warnings, Strings{});
    EXPECT_EQ(r.report.changes,
              (Strings{"enabled 1:1000003 (rules/talos/snort3.rules:4)",
                       "disabled 1:1000001 (rules/talos/snort3.rules:2)",
                       "disabled 1:1000004 (rules/talos/snort3.rules:5)",
                       "modified 1:1000002 (rules/talos/snort3.rules:3)", "suppress 1:1000002"}));
    EXPECT_EQ(r.rules.at("rules/talos/snort3.rules"),
              "# Talos-style Snort 3 rules\n"
              "# alert http (msg:\"uri\"; http_uri; content:\"/a.php\",fast_pattern,nocase; "
              "sid:1000001; rev:1;)\n"
              "alert tcp $EXTERNAL_NET any -> $HOME_NET 80 (msg:\"gone\"; content:\"a;b\",depth "
              "4; rem:\"sid:5\"; service:http; sid:1000002; rev:1;)\n"
              "alert http (msg:\"commented\"; http_header; content:\"X-Evil\"; sid:1000003; "
              "rev:1;)\n"
              // A tuned rule is written on one line, as with '\' continuations.
              "# alert http ( msg:\"multi\"; http_method; content:\"POST\"; sid:1000004; rev:1; "
              ")\n");
    EXPECT_EQ(r.rules.at("rules/et.rules"), kSuricataV1);
    EXPECT_EQ(r.threshold_config,
              "suppress gen_id 1, sig_id 1000002, track by_src, ip 10.0.0.0/8\n");
}

TEST(RuleSyntax, ExactFileWinsThenLongestDirectory) {
    Bundle b = make(1, {{"rules/talos/snort3.rules", "alert http (sid:1;)\n"},
                        {"rules/talos/lightspd/a.rules", "alert http (sid:2;)\n"},
                        {"rules/talos/lightspd/b.rules", "alert http (sid:3;)\n"},
                        {"rules/local.rules", "alert tcp any any -> any any (sid:4;)\n"},
                        {"rules/et.rules", "alert tcp any any -> any any (sid:5;)\n"},
                        {"config.yaml",
                         "rule-syntax:\n"
                         "  rules/: suricata\n"
                         "  rules/talos/: snort3\n"
                         "  rules/talos/lightspd/: auto\n"
                         "  rules/talos/lightspd/b.rules: snort3\n"
                         "  rules/local.rules: auto\n"}});
    auto s = rule_syntax_by_file(b);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(*s, (std::map<std::string, RuleSyntax>{
                      {"rules/et.rules", RuleSyntax::kSuricata},
                      {"rules/local.rules", RuleSyntax::kAuto},
                      {"rules/talos/lightspd/a.rules", RuleSyntax::kAuto},
                      {"rules/talos/lightspd/b.rules", RuleSyntax::kSnort3},
                      {"rules/talos/snort3.rules", RuleSyntax::kSnort3},
                  }));
    EXPECT_TRUE(check_content(b).ok()) << check_content(b);

    // No config.yaml, or none with rule-syntax: every file is auto.
    Bundle plain = make(1, {{"rules/a.rules", "alert http (sid:1;)\n"}, {"config.yaml", "{}\n"}});
    s = rule_syntax_by_file(plain);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(*s, (std::map<std::string, RuleSyntax>{{"rules/a.rules", RuleSyntax::kAuto}}));
    EXPECT_EQ(rule_syntax_name(RuleSyntax::kSnort3), "snort3");
    EXPECT_EQ(rule_syntax_name(RuleSyntax::kSuricata), "suricata");
    EXPECT_EQ(rule_syntax_name(RuleSyntax::kAuto), "auto");
}

TEST(RuleSyntax, BadKeysAndValuesRejectTheBundleNamingTheKey) {
    Bundle b = make(1, {{"rules/a.rules", "alert http (sid:1;)\n"},
                        {"rules/sub/b.rules", "alert http (sid:2;)\n"},
                        {"notes/x.rules", "not a rules file: outside rules/\n"},
                        {"config.yaml",
                         "rule-syntax:\n"
                         "  rules/x.rules: snort3\n"
                         "  rules/a.rules: snort\n"
                         "  rules/none/: suricata\n"
                         "  notes/x.rules: snort3\n"
                         "  rules/sub: snort3\n"}});
    absl::Status s = check_content(b);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    // In the YAML map's order, one line per key.
    EXPECT_EQ(std::string(s.message()),
              "config.yaml: rule-syntax: \"rules/x.rules\": no such rule file in the bundle\n"
              "config.yaml: rule-syntax: \"rules/a.rules\": unknown value 'snort' (expected "
              "snort3, suricata or auto)\n"
              "config.yaml: rule-syntax: \"rules/none/\": no rule file under it in the bundle\n"
              "config.yaml: rule-syntax: \"notes/x.rules\": no such rule file in the bundle\n"
              "config.yaml: rule-syntax: \"rules/sub\": no such rule file in the bundle");
    EXPECT_EQ(rule_syntax_by_file(b).status(), s);

    Bundle list = make(1, {{"rules/a.rules", "alert http (sid:1;)\n"},
                           {"config.yaml", "rule-syntax: [rules/a.rules]\n"}});
    EXPECT_EQ(std::string(check_content(list).message()),
              "config.yaml: rule-syntax: must be a map of rules file or directory (ending in "
              "'/') to snort3, suricata or auto");
    Bundle scalar = make(
        1, {{"rules/a.rules", "alert http (sid:1;)\n"}, {"config.yaml", "rule-syntax: snort3\n"}});
    EXPECT_EQ(check_content(scalar).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace picket::bundle
