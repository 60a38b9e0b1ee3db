// The sensor refuses, at apply, a bundle over the bundle limits (rule count, size) or with a
// path that escapes, before anything is written to its state directory: the manager's checks
// at push are not the only line (another manager, a stolen admin token, a corrupted store).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "common/bundle/bundle.h"
#include "sensor/agent/agent.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::agent {
namespace {

namespace fs = std::filesystem;
namespace v1 = picket::v1;

using picket::testing::TempDir;

v1::Bundle bundle_with(const std::string& path, const std::string& content) {
    v1::Bundle b;
    b.mutable_manifest()->set_name("big");
    b.mutable_manifest()->set_version(3);
    auto* f = b.add_files();
    f->set_path(path);
    f->set_content(content);
    bundle::update_manifest_files(b);
    return b;
}

TEST(ApplyLimits, TooManyRulesRefusedBeforeWriting) {
    TempDir state;
    std::string rules;
    for (uint64_t sid = 1; sid <= bundle::Limits{}.max_rules + 1; ++sid) {
        rules += "alert ip any any -> any any (sid:" + std::to_string(sid) + ";)\n";
    }
    auto prepared = prepare_bundle(bundle_with("rules/a.rules", rules), state.path(), {});
    EXPECT_EQ(prepared.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(prepared.status().message(), "bundle has 200001 rules, over the limit of 200000");
    EXPECT_FALSE(fs::exists(state.path() / "bundles"));
}

TEST(ApplyLimits, TooLargeRefusedBeforeWriting) {
    TempDir state;
    std::string rules = "alert ip any any -> any any (sid:1;)\n";
    rules.resize(bundle::Limits{}.max_total_bytes + 1, '#');
    auto prepared = prepare_bundle(bundle_with("rules/a.rules", rules), state.path(), {});
    EXPECT_EQ(prepared.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(prepared.status().message(),
              "rules/a.rules: 67108865 bytes, over the limit of 67108864\n"
              "bundle files total 67108865 bytes, over the limit of 67108864");
    EXPECT_FALSE(fs::exists(state.path() / "bundles"));
}

TEST(ApplyLimits, EscapingPathRefusedBeforeWriting) {
    TempDir state;
    v1::Bundle b = bundle_with("rules/a.rules", "alert ip any any -> any any (sid:1;)\n");
    auto* f = b.add_files();
    f->set_path("../../escaped.rules");
    f->set_content("x");
    bundle::update_manifest_files(b);
    auto prepared = prepare_bundle(b, state.path() / "s", {});
    EXPECT_EQ(prepared.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(prepared.status().message(),
              "manifest: path '../../escaped.rules': '..' escapes the bundle directory\n"
              "path '../../escaped.rules': '..' escapes the bundle directory");
    EXPECT_FALSE(fs::exists(state.path() / "escaped.rules"));
    EXPECT_FALSE(fs::exists(state.path() / "s" / "bundles"));
}

}  // namespace
}  // namespace picket::sensor::agent
