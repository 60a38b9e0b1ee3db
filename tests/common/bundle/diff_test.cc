#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/bundle/bundle.h"

namespace picket::bundle {
namespace {

Bundle make(uint64_t version, const std::map<std::string, std::string>& files) {
    Bundle b;
    b.mutable_manifest()->set_name("d");
    b.mutable_manifest()->set_version(version);
    for (const auto& [path, content] : files) {
        auto* f = b.add_files();
        f->set_path(path);
        f->set_content(content);
    }
    update_manifest_files(b);
    return b;
}

TEST(DiffBundles, SmallExampleIsExact) {
    Bundle a = make(1, {
                           {"rules/a.rules",
                            "alert tcp any any -> any 80 (msg:\"keep\"; sid:1; rev:1;)\n"
                            "alert tcp any any -> any 81 (msg:\"old\"; sid:2; rev:1;)\n"
                            "alert tcp any any -> any 82 (msg:\"gone\"; sid:3; rev:1;)\n"
                            "alert tcp any any -> any 83 (msg:\"to disable\"; sid:4;)\n"},
                           {"config.yaml",
                            "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n"
                            "stats:\n  interval: 10\nold-key: x\nports: [1, 2]\n"},
                           {"notes.txt", "same\n"},
                       });
    Bundle b = make(2, {
                           {"rules/a.rules",
                            "alert tcp any any -> any 80 (msg:\"keep\"; sid:1; rev:1;)\n"
                            "alert tcp any any -> any 81 (msg:\"new\"; sid:2; rev:2;)\n"
                            "# alert tcp any any -> any 83 (msg:\"to disable\"; sid:4;)\n"},
                           {"rules/b.rules",
                            "alert udp any any -> any 53 (msg:\"added\"; gid:3; sid:3; rev:1;)\n"},
                           {"config.yaml",
                            "vars:\n  address-groups:\n    HOME_NET: \"[192.168.0.0/16]\"\n"
                            "stats:\n  interval: 10\n  enabled: yes\nports: [1, 2, 3]\n"},
                           {"tuning.yaml", "disable: [4]\n"},
                           {"notes.txt", "same\n"},
                       });
    auto d = diff_bundles(a, b);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->from_version(), 1u);
    EXPECT_EQ(d->to_version(), 2u);

    ASSERT_EQ(d->rules_added_size(), 1);
    EXPECT_EQ(d->rules_added(0).gid(), 3u);
    EXPECT_EQ(d->rules_added(0).sid(), 3u);
    EXPECT_EQ(d->rules_added(0).file(), "rules/b.rules");
    EXPECT_EQ(d->rules_added(0).old_text(), "");
    EXPECT_EQ(d->rules_added(0).new_text(),
              "alert udp any any -> any 53 (msg:\"added\"; gid:3; sid:3; rev:1;)");

    ASSERT_EQ(d->rules_removed_size(), 1);
    EXPECT_EQ(d->rules_removed(0).sid(), 3u);
    EXPECT_EQ(d->rules_removed(0).gid(), 1u);
    EXPECT_EQ(d->rules_removed(0).file(), "rules/a.rules");
    EXPECT_EQ(d->rules_removed(0).old_text(),
              "alert tcp any any -> any 82 (msg:\"gone\"; sid:3; rev:1;)");

    ASSERT_EQ(d->rules_changed_size(), 2);
    EXPECT_EQ(d->rules_changed(0).sid(), 2u);
    EXPECT_EQ(d->rules_changed(0).old_text(),
              "alert tcp any any -> any 81 (msg:\"old\"; sid:2; rev:1;)");
    EXPECT_EQ(d->rules_changed(0).new_text(),
              "alert tcp any any -> any 81 (msg:\"new\"; sid:2; rev:2;)");
    EXPECT_TRUE(d->rules_changed(0).old_enabled());
    EXPECT_TRUE(d->rules_changed(0).new_enabled());
    EXPECT_EQ(d->rules_changed(1).sid(), 4u);
    EXPECT_TRUE(d->rules_changed(1).old_enabled());
    EXPECT_FALSE(d->rules_changed(1).new_enabled());
    EXPECT_EQ(d->rules_changed(1).new_text(),
              "# alert tcp any any -> any 83 (msg:\"to disable\"; sid:4;)");

    ASSERT_EQ(d->config_changes_size(), 5);
    auto expect_change = [&](int i, const char* file, const char* key, picket::v1::ChangeKind kind,
                             const char* old_value, const char* new_value) {
        const auto& c = d->config_changes(i);
        EXPECT_EQ(c.file(), file) << i;
        EXPECT_EQ(c.key(), key) << i;
        EXPECT_EQ(c.kind(), kind) << i;
        EXPECT_EQ(c.old_value(), old_value) << i;
        EXPECT_EQ(c.new_value(), new_value) << i;
    };
    expect_change(0, "config.yaml", "old-key", picket::v1::CHANGE_KIND_REMOVED, "x", "");
    expect_change(1, "config.yaml", "ports", picket::v1::CHANGE_KIND_CHANGED, "[1, 2]",
                  "[1, 2, 3]");
    expect_change(2, "config.yaml", "stats.enabled", picket::v1::CHANGE_KIND_ADDED, "", "yes");
    expect_change(3, "config.yaml", "vars.address-groups.HOME_NET", picket::v1::CHANGE_KIND_CHANGED,
                  "\"[10.0.0.0/8]\"", "\"[192.168.0.0/16]\"");
    expect_change(4, "tuning.yaml", "disable", picket::v1::CHANGE_KIND_ADDED, "", "[4]");

    ASSERT_EQ(d->file_changes_size(), 4);
    EXPECT_EQ(d->file_changes(0).path(), "config.yaml");
    EXPECT_EQ(d->file_changes(0).kind(), picket::v1::CHANGE_KIND_CHANGED);
    EXPECT_EQ(d->file_changes(1).path(), "rules/a.rules");
    EXPECT_EQ(d->file_changes(1).kind(), picket::v1::CHANGE_KIND_CHANGED);
    EXPECT_EQ(d->file_changes(2).path(), "rules/b.rules");
    EXPECT_EQ(d->file_changes(2).kind(), picket::v1::CHANGE_KIND_ADDED);
    EXPECT_EQ(d->file_changes(2).old_sha256(), "");
    EXPECT_EQ(d->file_changes(2).new_sha256(), b.manifest().files(3).sha256());
    EXPECT_EQ(d->file_changes(3).path(), "tuning.yaml");
    EXPECT_EQ(d->file_changes(3).kind(), picket::v1::CHANGE_KIND_ADDED);
}

TEST(DiffBundles, IdenticalBundlesHaveNoDifferences) {
    Bundle a = make(1, {{"rules/a.rules", "alert ip any any -> any any (sid:1;)\n"},
                        {"config.yaml", "a: 1\n"}});
    Bundle b = a;
    b.mutable_manifest()->set_version(2);
    auto d = diff_bundles(a, b);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->rules_added_size() + d->rules_removed_size() + d->rules_changed_size() +
                  d->config_changes_size() + d->file_changes_size(),
              0);
}

TEST(DiffBundles, UnparsableYamlIsAnError) {
    Bundle a = make(1, {{"rules/a.rules", "\n"}, {"config.yaml", "a: [1\n"}});
    Bundle b = make(2, {{"rules/a.rules", "\n"}});
    EXPECT_EQ(std::string(diff_bundles(a, b).status().message()),
              "bundle 1: config.yaml:2:1: end of sequence flow not found");
}

}  // namespace
}  // namespace picket::bundle
