// The store's rule sources, policy files and update history (schema 4).
#include <gtest/gtest.h>

#include "manager/store/store.h"
#include "tests/manager/store/store_fixture.h"

namespace picket::manager::store {
namespace {

using testing::at;
using testing::backend_name;
using testing::BackendTest;
using testing::kBackends;
using testing::open_store;
using testing::TempDir;

RuleSourceRow source(const std::string& name, const std::string& location) {
    RuleSourceRow r;
    r.name = name;
    r.location = location;
    r.headers = {"Authorization: Bearer k", "X-Site: lab"};
    r.checksum_url = "https://example.invalid/" + name + ".md5";
    r.created_at = at(1);
    return r;
}

class StoreRuleSources : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreRuleSources, kBackends, backend_name);

class StoreRulePolicy : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreRulePolicy, kBackends, backend_name);

class StoreRuleUpdates : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreRuleUpdates, kBackends, backend_name);

TEST_P(StoreRuleSources, AddListRemoveAndEnable) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->add_rule_source(source("talos", "/srv/talos"), "admin").ok());
    ASSERT_TRUE(
        store->add_rule_source(source("et-open", "https://r.invalid/et.tar.gz"), "admin").ok());
    absl::Status dup = store->add_rule_source(source("talos", "/other"), "admin");
    EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
    EXPECT_EQ(dup.message(), "rule source 'talos' already exists (remove it first)");

    auto all = store->list_rule_sources();
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].name, "et-open");  // sorted by name
    EXPECT_EQ((*all)[1].name, "talos");
    EXPECT_EQ((*all)[1].location, "/srv/talos");  // the first add is kept
    EXPECT_EQ((*all)[1].headers,
              (std::vector<std::string>{"Authorization: Bearer k", "X-Site: lab"}));
    EXPECT_TRUE((*all)[1].enabled);

    ASSERT_TRUE(store->set_rule_source_enabled("talos", false, at(2), "admin").ok());
    EXPECT_FALSE(store->list_rule_sources()->at(1).enabled);
    EXPECT_EQ(store->set_rule_source_enabled("nope", true, at(2), "admin").code(),
              absl::StatusCode::kNotFound);

    ASSERT_TRUE(store->remove_rule_source("talos", at(3), "admin").ok());
    absl::Status again = store->remove_rule_source("talos", at(3), "admin");
    EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(again.message(), "rule source 'talos' not found");
    EXPECT_EQ(store->list_rule_sources()->size(), 1u);

    auto events = store->history("", 10);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), 4u);
    EXPECT_EQ((*events)[0].kind, "rules.source.remove");
    EXPECT_EQ((*events)[1].kind, "rules.source.disable");
}

TEST_P(StoreRuleSources, AFailedFetchKeepsTheLastGoodOne) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->add_rule_source(source("et", "https://r.invalid/et.tar.gz"), "a").ok());
    RuleSourceRow good = source("et", "");
    good.etag = "\"abc\"";
    good.last_modified = "Wed, 02 Dec 2026 10:00:00 GMT";
    good.sha256 = std::string(64, 'a');
    good.fetched_at = at(10);
    good.rules = 48211;
    ASSERT_TRUE(store->record_rule_fetch(good, "").ok());
    ASSERT_TRUE(store->record_rule_fetch(source("et", ""), "source et: GET u: HTTP 503").ok());
    RuleSourceRow row = store->list_rule_sources()->at(0);
    EXPECT_EQ(row.etag, "\"abc\"");
    EXPECT_EQ(row.sha256, std::string(64, 'a'));
    EXPECT_EQ(row.fetched_at, at(10));
    EXPECT_EQ(row.rules, 48211);
    EXPECT_EQ(row.last_error, "source et: GET u: HTTP 503");
    ASSERT_TRUE(store->record_rule_fetch(good, "").ok());
    EXPECT_EQ(store->list_rule_sources()->at(0).last_error, "");
    EXPECT_EQ(store->record_rule_fetch(source("gone", ""), "").code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreRulePolicy, PutReplacesByNameAndRemove) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store
                    ->put_rule_policy(
                        {{"disable.conf", "2019401\n", at(1)}, {"drop.conf", "re:trojan\n", at(1)}},
                        "admin")
                    .ok());
    ASSERT_TRUE(store->put_rule_policy({{"disable.conf", "2019402\n", at(2)}}, "admin").ok());
    auto files = store->rule_policy();
    ASSERT_TRUE(files.ok());
    ASSERT_EQ(files->size(), 2u);
    EXPECT_EQ((*files)[0].name, "disable.conf");
    EXPECT_EQ((*files)[0].content, "2019402\n");
    EXPECT_EQ((*files)[0].updated_at, at(2));
    EXPECT_EQ((*files)[1].content, "re:trojan\n");
    ASSERT_TRUE(store->remove_rule_policy("drop.conf", at(3), "admin").ok());
    absl::Status again = store->remove_rule_policy("drop.conf", at(3), "admin");
    EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(again.message(), "no policy file 'drop.conf' is stored");
    EXPECT_EQ(store->rule_policy()->size(), 1u);
}

TEST_P(StoreRuleUpdates, HistoryNewestFirstWithSources) {
    auto store = open_store(dir.file("m.db"));
    RuleUpdateRow failed;
    failed.started_at = at(1);
    failed.finished_at = at(2);
    failed.trigger = "schedule";
    failed.result = "failed";
    failed.message = "source et: GET u: HTTP 503";
    auto id1 = store->record_rule_update(failed);
    ASSERT_TRUE(id1.ok()) << id1.status();

    RuleUpdateRow unchanged;
    unchanged.started_at = at(3);
    unchanged.finished_at = at(4);
    unchanged.trigger = "picketctl";
    unchanged.result = "unchanged";
    unchanged.sources = {{"et", std::string(64, 'b'), "\"e1\"", true, 3, 100, 90},
                         {"talos", std::string(64, 'c'), "", false, 1, 20, 20}};
    auto id2 = store->record_rule_update(unchanged);
    ASSERT_TRUE(id2.ok());
    EXPECT_EQ(*id2, *id1 + 1);

    RuleUpdateRow bad = unchanged;
    bad.result = "maybe";  // the CHECK constraint
    EXPECT_FALSE(store->record_rule_update(bad).ok());
    RuleUpdateRow dangling = unchanged;
    dangling.result = "new_version";
    dangling.version = 42;  // no such bundle: REFERENCES bundles
    EXPECT_FALSE(store->record_rule_update(dangling).ok());

    // What the metrics exporter reads (a query that once used SQLite's sum of booleans,
    // which PostgreSQL refuses).
    auto summary = store->rule_update_summary();
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->new_version, 0);
    EXPECT_EQ(summary->unchanged, 1);
    EXPECT_EQ(summary->failed, 1);
    EXPECT_EQ(summary->last_success_at, at(4));

    auto rows = store->rule_updates(10);
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ((*rows)[0].result, "unchanged");
    ASSERT_EQ((*rows)[0].sources.size(), 2u);
    EXPECT_EQ((*rows)[0].sources[0].name, "et");
    EXPECT_TRUE((*rows)[0].sources[0].not_modified);
    EXPECT_EQ((*rows)[0].sources[0].rules, 100);
    EXPECT_EQ((*rows)[0].sources[0].rules_enabled, 90);
    EXPECT_EQ((*rows)[0].sources[1].etag, "");
    EXPECT_EQ((*rows)[1].result, "failed");
    EXPECT_EQ((*rows)[1].message, "source et: GET u: HTTP 503");
    EXPECT_TRUE((*rows)[1].sources.empty());
    EXPECT_EQ(store->rule_updates(1)->size(), 1u);
}

}  // namespace
}  // namespace picket::manager::store
