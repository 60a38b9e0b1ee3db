// Bundle bounds and unpacking safety (docs/security.md): the rule-count limit, paths that are
// both a file and a directory, duplicates, and writing next to symlinks an attacker (or a
// crash) left behind; loading a directory with hard links and symlinked directories.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/bundle/bundle.h"
#include "tests/common/bundle/bundle_fixture.h"

namespace picket::bundle {
namespace {

namespace fs = std::filesystem;

using testing::add_file;
using testing::read;
using testing::TempDir;
using testing::write;

constexpr const char* kTempPrefix = "bundle_sec";

Bundle with_files(const std::vector<std::pair<std::string, std::string>>& files) {
    Bundle b;
    b.mutable_manifest()->set_name("sec");
    b.mutable_manifest()->set_version(1);
    for (const auto& [path, content] : files) {
        add_file(b, path, content);
    }
    update_manifest_files(b);
    return b;
}

const char* const kRules =
    "alert ip any any -> any any (msg:\"one\"; sid:1;)\n"
    "# alert ip any any -> any any (msg:\"disabled\"; sid:2;)\n"
    "# a comment, not a rule\n"
    "\n"
    "alert tcp any any -> any any (msg:\"continued\"; \\\n"
    "    sid:3;)\n";

TEST(RuleLimit, CountsEnabledAndDisabledRulesOfRulesFilesOnly) {
    Bundle b = with_files({{"rules/a.rules", kRules},
                           {"rules/notes.txt", "alert ip any any -> any any (sid:9;)\n"},
                           {"threshold.config", "alert ip any any -> any any (sid:8;)\n"}});
    EXPECT_EQ(count_rules(b), 3u);
}

TEST(RuleLimit, OverTheLimitIsResourceExhaustedNamingBoth) {
    Bundle b = with_files({{"rules/a.rules", kRules}});
    VerifyOptions at_limit;
    at_limit.limits.max_rules = 3;
    EXPECT_TRUE(verify_bundle(b, at_limit).ok());
    VerifyOptions over;
    over.limits.max_rules = 2;
    absl::Status st = verify_bundle(b, over);
    EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(st.message(), "bundle has 3 rules, over the limit of 2");
    // write_bundle_dir verifies with the limits it is given.
    TempDir tmp(kTempPrefix);
    EXPECT_EQ(write_bundle_dir(b, tmp.path() / "out", over.limits).message(),
              "bundle has 3 rules, over the limit of 2");
    EXPECT_FALSE(fs::exists(tmp.path() / "out"));
}

TEST(RuleLimit, DefaultsFitEtOpenWithRoom) {
    const Limits limits;
    EXPECT_EQ(limits.max_rules, 200'000u);
    EXPECT_EQ(limits.max_total_bytes, 64u << 20);
    EXPECT_EQ(kMaxMessageBytes, static_cast<int>(limits.max_total_bytes + kMaxEnvelopeBytes));
}

TEST(Unpack, PathThatIsBothFileAndDirectoryIsRefused) {
    TempDir tmp(kTempPrefix);
    Bundle b = with_files({{"rules/a.rules", kRules}, {"rules", "x"}});
    absl::Status st = verify_bundle(b);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), "manifest: rules: is both a file and a directory (rules/a.rules)");
    Bundle deep = with_files({{"rules/a.rules", kRules}, {"a/b", "x"}, {"a/b/c/d.txt", "y"}});
    EXPECT_EQ(verify_bundle(deep).message(),
              "manifest: a/b: is both a file and a directory (a/b/c/d.txt)");
    fs::path out = tmp.path() / "out";
    EXPECT_EQ(write_bundle_dir(b, out).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(tmp.path() / "out.tmp"));
}

TEST(Unpack, DuplicateNamesAreRefused) {
    TempDir tmp(kTempPrefix);
    Bundle b = with_files({{"rules/a.rules", kRules}, {"rules/a.rules", "alert other"}});
    absl::Status st = write_bundle_dir(b, tmp.path() / "out");
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(),
              "manifest: rules/a.rules: listed twice\nrules/a.rules: file present twice");
    EXPECT_FALSE(fs::exists(tmp.path() / "out"));
}

TEST(Unpack, AbsoluteAndDotDotPathsAreRefusedBeforeAnyWrite) {
    TempDir tmp(kTempPrefix);
    for (const std::string bad : {"/etc/cron.d/x", "../x", "rules/../../x", "rules/./a"}) {
        Bundle b = with_files({{"rules/a.rules", kRules}, {bad, "x"}});
        fs::path out = tmp.path() / "d" / "out";
        absl::Status st = write_bundle_dir(b, out);
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
        EXPECT_EQ(std::string(st.message()).rfind("manifest: path '" + bad + "': ", 0), 0u) << st;
        EXPECT_FALSE(fs::exists(tmp.path() / "d")) << bad;  // nothing created at all
        EXPECT_FALSE(fs::exists(tmp.path() / "x")) << bad;
    }
}

TEST(Unpack, DestinationThatIsASymlinkIsNotFollowed) {
    TempDir tmp(kTempPrefix);
    fs::create_directory(tmp.path() / "elsewhere");
    fs::create_directory_symlink(tmp.path() / "elsewhere", tmp.path() / "out");
    Bundle b = with_files({{"rules/a.rules", kRules}});
    absl::Status st = write_bundle_dir(b, tmp.path() / "out");
    EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
    EXPECT_TRUE(fs::is_empty(tmp.path() / "elsewhere"));
}

TEST(Unpack, LeftoverTmpSymlinkIsRemovedNotWrittenThrough) {
    TempDir tmp(kTempPrefix);
    fs::create_directory(tmp.path() / "elsewhere");
    fs::create_directory_symlink(tmp.path() / "elsewhere", tmp.path() / "out.tmp");
    Bundle b = with_files({{"rules/a.rules", kRules}});
    ASSERT_TRUE(write_bundle_dir(b, tmp.path() / "out").ok());
    EXPECT_TRUE(fs::is_empty(tmp.path() / "elsewhere"));
    EXPECT_EQ(fs::symlink_status(tmp.path() / "out").type(), fs::file_type::directory);
    EXPECT_EQ(fs::symlink_status(tmp.path() / "out" / "rules" / "a.rules").type(),
              fs::file_type::regular);
    EXPECT_FALSE(fs::exists(tmp.path() / "out.tmp"));
}

TEST(Load, HardLinkIsReadAsItsContentAndWrittenBackAsAPlainFile) {
    TempDir tmp(kTempPrefix);
    fs::path dir = tmp.path() / "b";
    write(dir / "rules" / "a.rules", kRules);
    write(tmp.path() / "outside.txt", "shared bytes\n");
    fs::create_hard_link(tmp.path() / "outside.txt", dir / "extra.txt");
    auto b = load_bundle_dir(dir);
    ASSERT_TRUE(b.ok()) << b.status();
    b->mutable_manifest()->set_version(1);
    fs::path out = tmp.path() / "out";
    ASSERT_TRUE(write_bundle_dir(*b, out).ok());
    EXPECT_EQ(read(out / "extra.txt"), "shared bytes\n");
    struct stat st {};
    ASSERT_EQ(::lstat((out / "extra.txt").c_str(), &st), 0);
    EXPECT_EQ(st.st_nlink, 1u);  // a copy: the bundle format has no links
}

TEST(Load, SymlinkedDirectoryLeavingTheBundleIsRefused) {
    TempDir tmp(kTempPrefix);
    fs::path dir = tmp.path() / "b";
    write(dir / "rules" / "a.rules", kRules);
    write(tmp.path() / "secrets" / "key.rules", "secret\n");
    fs::create_directory_symlink(tmp.path() / "secrets", dir / "rules" / "sub");
    auto b = load_bundle_dir(dir);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(b.status().message(), "rules/sub: symlink points outside the bundle directory (" +
                                        fs::canonical(tmp.path() / "secrets").string() + ")");
}

}  // namespace
}  // namespace picket::bundle
