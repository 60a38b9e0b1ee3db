// build_update: sources merged, policy applied, rules validated with the sensor's parser, the
// newest bundle's other files kept, and "nothing changed" recognised.
#include <gtest/gtest.h>

#include "common/bundle/bundle.h"
#include "manager/rules/rules.h"

namespace picket::rules {
namespace {

namespace pb = picket::v1;

std::string rule(uint32_t sid, uint32_t rev, const std::string& content = "x",
                 const std::string& extra = "") {
    return "alert tcp any any -> any 80 (msg:\"r" + std::to_string(sid) + "\"; content:\"" +
           content + "\"; " + extra + "sid:" + std::to_string(sid) +
           "; rev:" + std::to_string(rev) + ";)";
}

SourceFiles source(const std::string& name, std::map<std::string, std::string> files) {
    return SourceFiles{name, std::string(64, 'a'), std::move(files)};
}

const std::string* file(const pb::Bundle& b, const std::string& path) {
    for (const auto& f : b.files()) {
        if (f.path() == path) {
            return &f.content();
        }
    }
    return nullptr;
}

std::vector<std::string> paths(const pb::Bundle& b) {
    std::vector<std::string> out;
    for (const auto& f : b.manifest().files()) {
        out.push_back(f.path());
    }
    return out;
}

TEST(BuildUpdate, FirstBundleHoldsEverySourceUnderItsName) {
    UpdateInput in;
    in.sources.push_back(source(
        "et",
        {{"emerging-scan.rules", "# header comment\n" + rule(1, 1) + "\n# " + rule(2, 1) + "\n"},
         {"classification.config", "config classification: trojan,Trojan,1\n"}}));
    in.sources.push_back(source("local-feed", {{"feed.rules", rule(3, 1) + "\n"}}));
    in.author = "t";
    in.message = "m";
    auto out = build_update(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(out->changed);
    EXPECT_EQ(out->bundle.manifest().name(), "rules");
    EXPECT_EQ(paths(out->bundle),
              (std::vector<std::string>{"classification.config", "rules/et/emerging-scan.rules",
                                        "rules/local-feed/feed.rules"}));
    // Unchanged lines are byte-identical, comments included.
    EXPECT_EQ(*file(out->bundle, "rules/et/emerging-scan.rules"),
              "# header comment\n" + rule(1, 1) + "\n# " + rule(2, 1) + "\n");
    EXPECT_EQ(*file(out->bundle, "classification.config"),
              "# from source et\nconfig classification: trojan,Trojan,1\n");
    EXPECT_EQ(out->rules, 3u);
    EXPECT_EQ(out->rules_enabled, 2u);
    ASSERT_EQ(out->sources.size(), 2u);
    EXPECT_EQ(out->sources[0].files, 1u);
    EXPECT_EQ(out->sources[0].rules, 2u);
    EXPECT_EQ(out->sources[0].rules_enabled, 1u);
    EXPECT_EQ(out->unsupported, 0u);
}

TEST(BuildUpdate, ASidInTwoSourcesKeepsTheHigherRev) {
    UpdateInput in;
    in.sources.push_back(
        source("a", {{"a.rules", rule(10, 3, "old") + "\n" + rule(11, 1) + "\n"}}));
    in.sources.push_back(
        source("b", {{"b.rules", rule(10, 5, "new") + "\n" + rule(11, 1) + "\n"}}));
    auto out = build_update(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*file(out->bundle, "rules/a/a.rules"), rule(11, 1) + "\n");
    EXPECT_EQ(*file(out->bundle, "rules/b/b.rules"), rule(10, 5, "new") + "\n");
    EXPECT_EQ(out->rules, 2u);
    EXPECT_EQ(out->warnings,
              (std::vector<std::string>{"1:10: in a (rev 3) and b (rev 5): b kept",
                                        "1:11: in a (rev 1) and b (rev 1): a kept"}));
}

TEST(BuildUpdate, PolicyDisablesDropsAndModifiesInTheFiles) {
    UpdateInput in;
    in.sources.push_back(source("et", {{"emerging-scan.rules", rule(1, 1) + "\n" + rule(2, 1) +
                                                                   "\n" + rule(3, 1) + "\n"}}));
    in.policy_files["disable.conf"] = "1\n99999\n";
    in.policy_files["drop.conf"] = "2\n";
    in.policy_files["modify.conf"] = "3 \"content:\\\"x\\\"\" \"content:\\\"y\\\"\"\n";
    auto out = build_update(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(
        *file(out->bundle, "rules/et/emerging-scan.rules"),
        "# " + rule(1, 1) + "\n" + "drop" + rule(2, 1).substr(5) + "\n" + rule(3, 1, "y") + "\n");
    EXPECT_EQ(paths(out->bundle),
              (std::vector<std::string>{"policy/disable.conf", "policy/drop.conf",
                                        "policy/modify.conf", "rules/et/emerging-scan.rules"}));
    EXPECT_EQ(*file(out->bundle, "policy/drop.conf"), "2\n");
    EXPECT_EQ(out->policy.disabled, 1u);
    EXPECT_EQ(out->policy.dropped, 1u);
    EXPECT_EQ(out->policy.modified, 1u);
    EXPECT_EQ(out->rules_enabled, 2u);
    ASSERT_EQ(out->warnings.size(), 1u);
    EXPECT_NE(out->warnings[0].find("disable.conf:2"), std::string::npos) << out->warnings[0];
}

TEST(BuildUpdate, KeepsThePreviousBundlesConfigAndLocalRulesAndSeesNoChange) {
    UpdateInput first;
    first.sources.push_back(source("et", {{"e.rules", rule(1, 1) + "\n"}}));
    auto v1 = build_update(first);
    ASSERT_TRUE(v1.ok()) << v1.status();
    // The operator's own files in the stored bundle.
    pb::Bundle stored = v1->bundle;
    stored.mutable_manifest()->set_name("site");
    for (auto [path, text] : std::vector<std::pair<std::string, std::string>>{
             {"config.yaml", "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n"},
             {"rules/local/site.rules", rule(9000001, 1) + "\n"},
             {"rules/old-handmade.rules", rule(5, 1) + "\n"}}) {
        auto* f = stored.add_files();
        f->set_path(path);
        f->set_content(text);
    }
    bundle::update_manifest_files(stored);
    stored.mutable_manifest()->set_version(7);

    UpdateInput next = first;
    next.previous = &stored;
    auto v2 = build_update(next);
    ASSERT_TRUE(v2.ok()) << v2.status();
    EXPECT_EQ(v2->bundle.manifest().name(), "site");
    EXPECT_EQ(paths(v2->bundle), (std::vector<std::string>{"config.yaml", "rules/et/e.rules",
                                                           "rules/local/site.rules"}));
    EXPECT_TRUE(v2->changed);  // rules/old-handmade.rules is gone
    ASSERT_EQ(v2->diff.rules_removed_size(), 1);
    EXPECT_EQ(v2->diff.rules_removed(0).sid(), 5u);

    pb::Bundle stored2 = v2->bundle;
    stored2.mutable_manifest()->set_version(8);
    next.previous = &stored2;
    auto v3 = build_update(next);
    ASSERT_TRUE(v3.ok()) << v3.status();
    EXPECT_FALSE(v3->changed);
    EXPECT_EQ(
        v3->diff.rules_added_size() + v3->diff.rules_removed_size() + v3->diff.rules_changed_size(),
        0);
}

TEST(BuildUpdate, ReportsWhatTheSensorsParserRefusesWithFileAndLine) {
    UpdateInput in;
    in.sources.push_back(source(
        "et", {{"e.rules", rule(1, 1) + "\n" +
                               "alert tcp any any -> any any (msg:\"lua\"; lua:x.lua; sid:2; "
                               "rev:1;)\n" +
                               "# alert tcp any any -> any any (msg:\"off\"; lua:x; sid:3;)\n"}}));
    auto out = build_update(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->unsupported, 1u);
    ASSERT_EQ(out->unsupported_rules.size(), 1u);
    EXPECT_EQ(out->unsupported_rules[0].rfind("rules/et/e.rules:2 sid 2: ", 0), 0u)
        << out->unsupported_rules[0];
    EXPECT_EQ(out->rules_enabled, 2u);  // still in the bundle: the sensor skips it
}

TEST(BuildUpdate, BadPolicyAndEmptySourcesAreErrors) {
    UpdateInput none;
    EXPECT_EQ(build_update(none).status().code(), absl::StatusCode::kFailedPrecondition);

    UpdateInput in;
    in.sources.push_back(source("et", {{"e.rules", rule(1, 1) + "\n"}}));
    in.policy_files["disable.conf"] = "re:(\n";
    auto bad = build_update(in);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("disable.conf:1"), std::string::npos)
        << bad.status().message();

    in.policy_files = {{"enable.cfg", "1\n"}};
    EXPECT_EQ(check_policy_files(in.policy_files).message(),
              "enable.cfg: not a policy file (enable.conf, disable.conf, drop.conf, modify.conf "
              "or tuning.yaml)");

    UpdateInput html;
    html.sources.push_back(
        source("et", {{"emerging.rules", "<html><body>503 Service Unavailable</body></html>\n"}}));
    EXPECT_EQ(build_update(html).status().message(),
              "source et: no rule in its .rules files (emerging.rules, ...: not a rules file?)");

    UpdateInput configs_only;
    configs_only.sources.push_back(source("et", {{"classification.config", "x\n"}}));
    EXPECT_EQ(build_update(configs_only).status().message(), "source et: no .rules file");
}

TEST(BuildUpdate, MultiLineRulesAreOneRule) {
    UpdateInput in;
    in.sources.push_back(source("talos", {{"snort3.rules",
                                           "alert http (\n    msg:\"m\";\n    http_uri;\n"
                                           "    content:\"/a\";\n    sid:70;\n    rev:1;\n)\n" +
                                               rule(71, 1) + " \\\n\n"}}));
    in.policy_files["disable.conf"] = "70\n";
    auto out = build_update(in);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->rules, 2u);
    EXPECT_EQ(out->policy.disabled, 1u);
    const std::string& text = *file(out->bundle, "rules/talos/snort3.rules");
    EXPECT_EQ(
        text.rfind("# alert http ( msg:\"m\"; http_uri; content:\"/a\"; sid:70; rev:1; )\n", 0), 0u)
        << text;
}

}  // namespace
}  // namespace picket::rules
