// A bundle's config.yaml rule-syntax reaches the engine: prepare_bundle puts each rules
// file's syntax into DetectConfig::rule_file_syntax (keyed by the effective file's path), the
// sensor's own rule-syntax does not apply to bundle files, and a bundle of multi-line Snort 3
// rules counts its rules as enabled.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "common/bundle/bundle.h"
#include "sensor/agent/agent.h"
#include "sensor/detect/detect.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::agent {
namespace {

namespace fs = std::filesystem;
namespace v1 = picket::v1;

using picket::testing::TempDir;
using Syntax = detect::DetectConfig::FileSyntax;

v1::Bundle make(const std::map<std::string, std::string>& files) {
    v1::Bundle b;
    b.mutable_manifest()->set_name("s3");
    b.mutable_manifest()->set_version(4);
    for (const auto& [path, content] : files) {
        auto* f = b.add_files();
        f->set_path(path);
        f->set_content(content);
    }
    bundle::update_manifest_files(b);
    return b;
}

TEST(BundleRuleSyntax, PerFileSyntaxReachesTheEngine) {
    TempDir state;
    v1::Bundle b = make({
        {"rules/talos/community.rules",
         "alert http (\n"
         "    msg:\"multi\";\n"
         "    http_uri; content:\"/a.php\",nocase;\n"
         "    sid:1000001; rev:1;\n"
         ")\n"
         "alert tcp any any -> any 80 (msg:\"both\"; content:\"abc\"; sid:1000002;)\n"},
        {"rules/et.rules",
         "alert http (msg:\"snort3 text\"; http_uri; content:\"/b\",nocase; sid:2000001;)\n"
         "alert tcp any any -> any 22 (msg:\"ssh\"; content:\"SSH-\"; sid:2000002;)\n"},
        {"rules/local.rules", "alert tcp any any -> any 23 (content:\"x\"; sid:3000001;)\n"},
        {"config.yaml", "rule-syntax:\n  rules/talos/: snort3\n  rules/et.rules: suricata\n"},
    });
    detect::DetectConfig base;
    base.rule_syntax = Syntax::kSnort3;  // the sensor's own setting: not for bundle files
    auto prepared = prepare_bundle(b, state.path(), base);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    const detect::DetectConfig& c = prepared->running.config;
    const fs::path edir = state.path() / "effective" / bundle::versioned_dir_name(b) / "rules";
    EXPECT_EQ(c.rule_files, (std::vector<std::string>{(edir / "et.rules").string(),
                                                      (edir / "local.rules").string(),
                                                      (edir / "talos/community.rules").string()}));
    EXPECT_EQ(c.rule_syntax, Syntax::kAuto);
    EXPECT_EQ(c.rule_file_syntax,
              (std::map<std::string, Syntax>{
                  {(edir / "et.rules").string(), Syntax::kSuricata},
                  {(edir / "talos/community.rules").string(), Syntax::kSnort3}}));
}

TEST(BundleRuleSyntax, UnknownKeyRefusesTheBundleBeforeWriting) {
    TempDir state;
    v1::Bundle b = make({{"rules/a.rules", "alert http (msg:\"x\"; sid:1;)\n"},
                         {"config.yaml", "rule-syntax:\n  rules/x.rules: snort3\n"}});
    auto prepared = prepare_bundle(b, state.path(), {});
    EXPECT_EQ(prepared.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(prepared.status().message(),
              "config.yaml: rule-syntax: \"rules/x.rules\": no such rule file in the bundle");
    EXPECT_FALSE(fs::exists(state.path() / "bundles"));
}

}  // namespace
}  // namespace picket::sensor::agent
