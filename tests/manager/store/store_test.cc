#include "manager/store/store.h"

#include <libpq-fe.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "common/strings.h"
#include "gtest/gtest.h"
#include "manager/store/internal.h"
#include "tests/manager/store/store_fixture.h"

namespace picket::manager::store {
namespace {

using testing::at;
using testing::Backend;
using testing::backend_name;
using testing::BackendTest;
using testing::kBackends;
using testing::kBase;
using testing::kSec;
using testing::mode_of;
using testing::open_store;
using testing::TempDir;

constexpr int64_t kMin = 60 * kSec;

// Raw database access for what the store API deliberately does not offer: SQLite, or libpq for a
// postgres:// DSN (raw_exec then answers SQLITE_OK, SQLITE_CONSTRAINT for a constraint or a
// trigger's refusal, SQLITE_ERROR otherwise).
bool is_pg(const std::string& path) {
    return path.starts_with("postgres");
}

PGresult* pg_exec(const std::string& dsn, const char* sql, std::string* state) {
    PGconn* c = PQconnectdb(dsn.c_str());
    EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c, sql);
    const char* st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    *state = st != nullptr ? st : "";
    PQfinish(c);
    return r;
}

int64_t raw_int(const std::string& db_path, const char* sql) {
    if (is_pg(db_path)) {
        std::string state;
        PGresult* r = pg_exec(db_path, sql, &state);
        EXPECT_EQ(state, "") << sql;
        int64_t v = PQntuples(r) > 0 ? std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10) : -1;
        PQclear(r);
        return v;
    }
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW) {
        v = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

std::string raw_text(const std::string& db_path, const char* sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    std::string v;
    if (sqlite3_step(s) == SQLITE_ROW) {
        v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

int raw_exec(const std::string& db_path, const char* sql) {
    if (is_pg(db_path)) {
        std::string state;
        PQclear(pg_exec(db_path, sql, &state));
        if (state.empty()) {
            return SQLITE_OK;
        }
        return state.starts_with("23") || state == "P0001" ? SQLITE_CONSTRAINT : SQLITE_ERROR;
    }
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
    int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
    sqlite3_close(db);
    return rc;
}

SensorHello hello(const std::string& name, std::map<std::string, std::string> labels = {},
                  int64_t running = 0) {
    SensorHello h;
    h.name = name;
    h.host = name + ".example";
    h.version = "0.1.0";
    h.capture_mode = "pcap";
    h.workers = 2;
    h.labels = std::move(labels);
    h.running_version = running;
    return h;
}

NewBundle bundle(const std::string& blob, int64_t parent = 0) {
    NewBundle b;
    b.name = "et-open";
    b.author = "alice";
    b.message = "update";
    b.created_at = at(1);
    b.parent_version = parent;
    b.blob = blob;
    return b;
}

std::string sensor_name(int t) {
    std::string n = "s";
    n += std::to_string(t);
    return n;
}

// The counts of a deployment's targets, from the targets themselves.
TargetCounts count_of(const Deployment& d) {
    TargetCounts n;
    for (const Target& t : d.targets) {
        switch (t.state) {
            case TargetState::kPending:
                ++n.pending;
                break;
            case TargetState::kSent:
                ++n.sent;
                break;
            case TargetState::kApplied:
                ++n.applied;
                break;
            case TargetState::kRejected:
                ++n.rejected;
                break;
            case TargetState::kTimedOut:
                ++n.timed_out;
                break;
            case TargetState::kSuperseded:
                ++n.superseded;
                n.taken_over += t.error.starts_with(kSupersededByPrefix) ? 1 : 0;
                break;
        }
    }
    return n;
}

TargetCounts counts(int64_t pending, int64_t sent, int64_t applied, int64_t rejected,
                    int64_t timed_out, int64_t superseded, int64_t taken_over) {
    return {pending, sent, applied, rejected, timed_out, superseded, taken_over};
}

std::string show(const TargetCounts& c) {
    return "pending " + std::to_string(c.pending) + " sent " + std::to_string(c.sent) +
           " applied " + std::to_string(c.applied) + " rejected " + std::to_string(c.rejected) +
           " timed_out " + std::to_string(c.timed_out) + " superseded " +
           std::to_string(c.superseded) + " taken_over " + std::to_string(c.taken_over);
}

// Suites run on both backends (SQLite-only tests are in suites named ...Sqlite).
class StoreOpen : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreOpen, kBackends, backend_name);
class StoreBundles : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreBundles, kBackends, backend_name);
class StoreSensors : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreSensors, kBackends, backend_name);
class StoreRuns : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreRuns, kBackends, backend_name);
class StoreMetrics : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreMetrics, kBackends, backend_name);
class StoreConcurrency : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreConcurrency, kBackends, backend_name);

// ---------------------------------------------------------------- open and migrations

TEST(StoreOpenSqlite, MigratesEmptyDatabaseWithPrivateFiles) {
    TempDir dir;
    std::string path = dir.file("m.db");
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 9);
    EXPECT_EQ(raw_int(path, "SELECT version FROM schema_version"), 9);
    EXPECT_EQ(raw_int(path,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                      "('sensors', 'sensor_labels', 'blobs', 'bundles', 'deployments', "
                      "'deployment_targets', 'events', 'runs', 'metric_names', "
                      "'metric_minutes', 'revoked_certs', 'rule_sources', 'rule_policy', "
                      "'rule_updates', 'rule_update_sources', 'bootstrap_tokens', "
                      "'bootstrap_token_labels', 'sensor_imposed_labels', 'issued_certs')"),
              19);
    EXPECT_EQ(raw_text(path, "PRAGMA journal_mode"), "wal");
    EXPECT_EQ(mode_of(path), 0600);
    EXPECT_EQ(mode_of(path + "-wal"), 0600);
    EXPECT_EQ(mode_of(path + "-shm"), 0600);
    EXPECT_TRUE(store->integrity_check().ok());
}

TEST_P(StoreOpen, UpgradesFromVersionOneKeepingData) {
    std::string path = dir.file("m.db");
    {
        StoreOptions opt;
        opt.max_schema_version = 1;
        auto store = open_store(path, opt);
        ASSERT_NE(store, nullptr);
        EXPECT_EQ(store->schema_version(), 1);
    }
    // Written the way version 1 code did (today's store code expects the latest schema).
    ASSERT_EQ(raw_exec(path,
                       "INSERT INTO sensors(name, token_hash, enrolled_at) "
                       "VALUES('s1', 'hash1', 0)"),
              SQLITE_OK);
    EXPECT_EQ(raw_int(path, is_pg(path) ? "SELECT count(*) FROM information_schema.tables WHERE "
                                          "table_name = 'runs' AND table_schema = "
                                          "current_schema()"
                                        : "SELECT count(*) FROM sqlite_master WHERE name = 'runs'"),
              0);
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 9);
    auto s = store->get_sensor("s1");
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(s->enrolled);
    EXPECT_TRUE(store->begin_run("s1", 0, at(1)).ok());
    EXPECT_EQ(store->list_runs("s1")->size(), 1u);
}

TEST(StoreOpenSqlite, UpgradeToVersionSixKeepsDeploymentsAndTheirReferences) {
    TempDir dir;
    std::string path = dir.file("m.db");
    {
        StoreOptions opt;
        opt.max_schema_version = 5;
        auto store = open_store(path, opt);
        ASSERT_NE(store, nullptr);
    }
    // Version 4 rows: a deployment, its rollback child, a target and a run naming it.
    for (const char* sql :
         {"INSERT INTO sensors(id, name, first_seen, last_seen) VALUES(1, 's1', 0, 0)",
          "INSERT INTO blobs(sha256, size, data) VALUES('aa', 1, '0')",
          "INSERT INTO bundles(version, name, sha256, created_at) VALUES(1, 'b', 'aa', 0)",
          "INSERT INTO deployments(id, bundle_version, kind, selector, state, created_at, "
          "updated_at, gate_max_drop_ratio) VALUES(7, 1, 'deploy', 'all', 'rolled_back', 1, 2, "
          "0.25)",
          "INSERT INTO deployments(id, bundle_version, kind, selector, state, parent_id, "
          "created_at, updated_at) VALUES(8, NULL, 'rollback', 's1', 'completed', 7, 3, 4)",
          "INSERT INTO deployment_targets(deployment_id, sensor_id, bundle_version, stage, "
          "state, created_at, updated_at) VALUES(7, 1, 1, 'canary', 'applied', 1, 2)",
          "INSERT INTO runs(sensor_id, bundle_version, started_at, deployment_id) "
          "VALUES(1, 1, 2, 7)"}) {
        ASSERT_EQ(raw_exec(path, sql), SQLITE_OK) << sql;
    }
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 9);
    auto d7 = store->get_deployment(7);
    ASSERT_TRUE(d7.ok()) << d7.status();
    EXPECT_EQ(d7->state, DeploymentState::kRolledBack);
    EXPECT_EQ(d7->gate_max_drop_ratio, 0.25);
    ASSERT_EQ(d7->targets.size(), 1u);
    EXPECT_EQ(d7->targets[0].state, TargetState::kApplied);
    EXPECT_EQ(store->get_deployment(8)->parent_id, 7);
    EXPECT_EQ(store->list_runs("s1")->at(0).deployment_id, 7);
    // The new state is accepted, the foreign keys are on again and still name the new table.
    EXPECT_EQ(raw_exec(path, "UPDATE deployments SET state = 'superseded' WHERE id = 8"),
              SQLITE_OK);
    EXPECT_EQ(raw_int(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
    EXPECT_EQ(raw_exec(path,
                       "PRAGMA foreign_keys=ON; INSERT INTO deployment_targets(deployment_id, "
                       "sensor_id, bundle_version, stage, state, created_at, updated_at) "
                       "VALUES(99, 1, 1, 'rest', 'pending', 1, 1)"),
              SQLITE_CONSTRAINT);
    EXPECT_TRUE(store->integrity_check().ok());
}

TEST_P(StoreOpen, UpgradeToVersionSevenCountsTheTargetsOfEveryDeployment) {
    std::string path = dir.file("m.db");
    {
        StoreOptions opt;
        opt.max_schema_version = 6;
        auto store = open_store(path, opt);
        ASSERT_NE(store, nullptr);
    }
    // Version 6 rows: deployment 7 with an applied, a sent and a taken-over target, and the
    // deployment 8 that took it over.
    for (const char* sql :
         {"INSERT INTO sensors(id, name, first_seen, last_seen) VALUES(1, 's1', 0, 0), "
          "(2, 's2', 0, 0), (3, 's3', 0, 0)",
          "INSERT INTO blobs(sha256, size, data) VALUES('aa', 1, '0')",
          "INSERT INTO bundles(version, name, sha256, created_at) VALUES(1, 'b', 'aa', 0)",
          "INSERT INTO deployments(id, bundle_version, kind, selector, state, created_at, "
          "updated_at) VALUES(7, 1, 'deploy', 'all', 'rolling', 1, 2), "
          "(8, 1, 'deploy', 's3', 'rolling', 3, 3)",
          "INSERT INTO deployment_targets(deployment_id, sensor_id, bundle_version, stage, "
          "state, error, created_at, sent_at, updated_at) VALUES"
          "(7, 1, 1, 'rest', 'applied', '', 1, 1, 2), (7, 2, 1, 'rest', 'sent', '', 1, 1, 1), "
          "(7, 3, 1, 'rest', 'superseded', 'superseded by deployment 8', 1, NULL, 3), "
          "(8, 3, 1, 'rest', 'pending', '', 3, NULL, 3)"}) {
        ASSERT_EQ(raw_exec(path, sql), SQLITE_OK) << sql;
    }
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 9);
    auto d7 = store->get_deployment(7);
    ASSERT_TRUE(d7.ok()) << d7.status();
    EXPECT_EQ(show(d7->counts), show(counts(0, 1, 1, 0, 0, 1, 1)));
    EXPECT_EQ(show(store->get_deployment(8)->counts), show(counts(1, 0, 0, 0, 0, 0, 0)));
    // The last open target ends deployment 7 from the migrated counts.
    ASSERT_TRUE(store->update_target(7, "s2", TargetState::kApplied, "", at(1)).ok());
    d7 = store->get_deployment(7);
    EXPECT_EQ(d7->state, DeploymentState::kSuperseded);
    EXPECT_EQ(d7->error, "1 of 3 targets taken over by a newer deployment");
    EXPECT_TRUE(store->integrity_check().ok());
}

TEST_P(StoreOpen, ReopenKeepsDataAndResetsConnections) {
    std::string path = dir.file("m.db");
    {
        auto store = open_store(path);
        ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
        EXPECT_TRUE(store->get_sensor("s1")->connected);
        ASSERT_TRUE(store->push_bundle(bundle("rules-a")).ok());
    }
    auto store = open_store(path);
    EXPECT_EQ(store->schema_version(), 9);
    auto s = store->get_sensor("s1");
    ASSERT_TRUE(s.ok());
    EXPECT_FALSE(s->connected);
    EXPECT_EQ(s->first_seen, at(0));
    EXPECT_EQ(*store->latest_version(), 1);
}

TEST_P(StoreOpen, RefusesNewerSchema) {
    std::string path = dir.file("m.db");
    { open_store(path); }
    ASSERT_EQ(raw_exec(path, "UPDATE schema_version SET version = 99"), SQLITE_OK);
    auto store = Store::Open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(store.status().message().find("schema version 99 is newer than this picket-manager "
                                            "supports (9)"),
              std::string::npos)
        << store.status();
}

TEST(StoreOpenSqlite, MissingDirectoryIsNotFound) {
    TempDir dir;
    auto store = Store::Open(dir.file("nope/m.db"));
    EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound) << store.status();
}

TEST(StoreOpenSqlite, RejectsAFileThatIsNotADatabase) {
    TempDir dir;
    std::string path = dir.file("junk.db");
    std::ofstream(path) << std::string(4096, 'x');
    auto store = Store::Open(path);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
}

// ---------------------------------------------------------------- bundles

TEST_P(StoreBundles, BlobsDedupedAndVersionsGrow) {
    std::string path = dir.file("m.db");
    auto store = open_store(path);
    auto a = store->push_bundle(bundle("rules-a"));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->version, 1);
    EXPECT_TRUE(a->created);
    EXPECT_EQ(a->sha256, "142b086be3b097aca06288ca84d55c0340e56feb86a6289cd681a6d84d665bba");
    auto b = store->push_bundle(bundle("rules-b", 1));
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->version, 2);
    auto again = store->push_bundle(bundle("rules-a"));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->version, 1);
    EXPECT_FALSE(again->created);
    EXPECT_EQ(*store->latest_version(), 2);
    EXPECT_EQ(raw_int(path, "SELECT count(*) FROM blobs"), 2);

    auto list = store->list_bundles();
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 2u);
    EXPECT_EQ((*list)[1].parent_version, 1);
    EXPECT_EQ((*list)[1].size, 7);
    auto got = store->get_bundle(1);
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->blob, "rules-a");
    EXPECT_EQ(got->info.author, "alice");
    EXPECT_EQ(store->get_bundle(2, false)->blob, "");

    auto missing = store->get_bundle(7);
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(missing.status().message(), "bundle version 7 not found");
    auto bad_parent = store->push_bundle(bundle("rules-c", 9));
    EXPECT_EQ(bad_parent.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(bad_parent.status().message(), "parent bundle version 9 not found");
    EXPECT_EQ(store->push_bundle(bundle("")).status().code(), absl::StatusCode::kInvalidArgument);
    // A failed push does not consume a version.
    EXPECT_EQ(store->push_bundle(bundle("rules-c", 2))->version, 3);
    // Immutable even to a raw writer.
    EXPECT_EQ(raw_exec(path, "UPDATE bundles SET message = 'x' WHERE version = 1"),
              SQLITE_CONSTRAINT);
    EXPECT_EQ(raw_exec(path, "DELETE FROM blobs"), SQLITE_CONSTRAINT);
}

// ---------------------------------------------------------------- sensors and selectors

TEST_P(StoreSensors, EnrollConnectTokensAndLabels) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->enroll_sensor("s1", "hash1", at(0), "admin").ok());
    EXPECT_TRUE(store->enroll_sensor("s1", "hash1", at(0), "admin").ok());  // idempotent
    auto dup = store->enroll_sensor("s1", "hash2", at(0), "admin");
    EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);

    SensorHello h = hello("s1", {{"env", "prod"}}, 0);
    h.token_hash = "hash2";
    auto wrong = store->connect_sensor(h, at(1), false);
    EXPECT_EQ(wrong.status().code(), absl::StatusCode::kAlreadyExists);
    EXPECT_EQ(wrong.status().message(),
              "sensor name 's1' is already registered with a different token");
    h.token_hash = "hash1";
    auto ok = store->connect_sensor(h, at(1), false);
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_TRUE(ok->connected);
    EXPECT_EQ(ok->first_seen, at(1));
    EXPECT_EQ(ok->labels.at("env"), "prod");

    auto unknown = store->connect_sensor(hello("s9"), at(1), false);
    EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(unknown.status().message(), "sensor 's9' is not enrolled");
    EXPECT_EQ(store->connect_sensor(hello("all"), at(1), true).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store->connect_sensor(hello("s2", {{"env", "a,b"}}), at(1), true).status().code(),
              absl::StatusCode::kInvalidArgument);

    // Reconnect replaces labels and keeps first_seen.
    h.labels = {{"zone", "eu"}};
    ASSERT_TRUE(store->connect_sensor(h, at(5), false).ok());
    ASSERT_TRUE(store->disconnect_sensor("s1", at(9)).ok());
    auto s = store->get_sensor("s1");
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->labels, (std::map<std::string, std::string>{{"zone", "eu"}}));
    EXPECT_EQ(s->first_seen, at(1));
    EXPECT_EQ(s->last_seen, at(9));
    EXPECT_FALSE(s->connected);
    EXPECT_EQ(s->host, "s1.example");
    EXPECT_EQ(s->workers, 2);
    EXPECT_EQ(store->disconnect_sensor("nope", at(9)).code(), absl::StatusCode::kNotFound);
}

TEST(Selector, ParsesValidForms) {
    auto all = Selector::parse(" all ");
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->kind(), Selector::Kind::kAll);
    auto names = Selector::parse("s2, s1,s2");
    ASSERT_TRUE(names.ok());
    EXPECT_EQ(names->kind(), Selector::Kind::kNames);
    EXPECT_EQ(names->to_string(), "s1,s2");
    auto labels = Selector::parse("label=zone=eu,label=env=prod");
    ASSERT_TRUE(labels.ok());
    EXPECT_EQ(labels->kind(), Selector::Kind::kLabels);
    EXPECT_EQ(labels->to_string(), "label=env=prod,label=zone=eu");
    EXPECT_TRUE(labels->matches("x", {{"env", "prod"}, {"zone", "eu"}, {"rack", "1"}}));
    EXPECT_FALSE(labels->matches("x", {{"env", "prod"}}));
    EXPECT_FALSE(labels->matches("x", {{"env", "dev"}, {"zone", "eu"}}));
    EXPECT_TRUE(names->matches("s1", {}));
    EXPECT_FALSE(names->matches("s3", {}));
    EXPECT_TRUE(all->matches("anything", {}));
}

TEST(Selector, RejectsBadForms) {
    for (const char* bad : {"", " ", "s1,,s2", "all,s1", "label=env", "label==prod",
                            "label=env=", "s1,label=env=prod", "bad name", "s1;drop",
                            "label=env=prod,label=env=dev"}) {
        auto r = Selector::parse(bad);
        EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << "'" << bad << "'";
    }
    EXPECT_EQ(Selector::parse("label=env").status().message(),
              "selector 'label=env': term 'label=env' must be label=KEY=VALUE");
}

TEST_P(StoreSensors, SelectSensors) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(hello("a", {{"env", "prod"}}), at(0), true).ok());
    ASSERT_TRUE(store->connect_sensor(hello("b", {{"env", "dev"}}), at(0), true).ok());
    ASSERT_TRUE(store->connect_sensor(hello("c", {{"env", "prod"}}), at(0), true).ok());
    EXPECT_EQ(store->list_sensors()->size(), 3u);
    EXPECT_EQ(store->select_sensors("all")->size(), 3u);
    auto prod = store->select_sensors("label=env=prod");
    ASSERT_TRUE(prod.ok());
    ASSERT_EQ(prod->size(), 2u);
    EXPECT_EQ((*prod)[0].name, "a");
    EXPECT_EQ((*prod)[1].name, "c");
    EXPECT_EQ(store->list_sensors("b,c")->size(), 2u);
    auto none = store->select_sensors("label=env=qa");
    EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(none.status().message(), "selector 'label=env=qa' matches no sensor");
    auto unknown = store->select_sensors("a,zz");
    EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(unknown.status().message(), "selector 'a,zz': sensor 'zz' not found");
    EXPECT_EQ(store->select_sensors("label=").status().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------- deployments

class StoreDeploy : public BackendTest {
protected:
    void SetUp() override {
        BackendTest::SetUp();
        if (IsSkipped()) {
            return;
        }
        store_ = open_store(dir.file("m.db"));
        ASSERT_NE(store_, nullptr);
        for (const char* n : {"a", "b", "c"}) {
            ASSERT_TRUE(store_->connect_sensor(hello(n, {{"env", "prod"}}), at(0), true).ok());
        }
        ASSERT_EQ(store_->push_bundle(bundle("rules-1"))->version, 1);
        ASSERT_EQ(store_->push_bundle(bundle("rules-2", 1))->version, 2);
    }
    NewDeployment deploy(int64_t version, const std::string& sel, int canary = 0) {
        NewDeployment d;
        d.bundle_version = version;
        d.selector = sel;
        d.canary_percent = canary;
        d.soak_seconds = 60;
        d.actor = "alice";
        d.created_at = at(10);
        return d;
    }
    std::unique_ptr<Store> store_;
};
INSTANTIATE_TEST_SUITE_P(Backends, StoreDeploy, kBackends, backend_name);

TEST_P(StoreDeploy, CanaryStateMachine) {
    auto d = store_->create_deployment(deploy(2, "label=env=prod", 50));
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->id, 1);
    EXPECT_EQ(d->state, DeploymentState::kCanary);
    ASSERT_EQ(d->targets.size(), 3u);
    EXPECT_EQ(d->targets[0].stage, Stage::kCanary);  // ceil(3 * 50%) = 2 canaries
    EXPECT_EQ(d->targets[1].stage, Stage::kCanary);
    EXPECT_EQ(d->targets[2].stage, Stage::kRest);
    EXPECT_EQ(d->targets[2].state, TargetState::kPending);
    EXPECT_EQ(store_->pending_targets("a")->size(), 1u);
    EXPECT_EQ(store_->pending_targets("c")->size(), 0u);  // held until rolling
    using Names = std::vector<std::string>;
    auto dispatchable = [this] {
        auto names = store_->dispatchable_sensors();
        EXPECT_TRUE(names.ok()) << names.status();
        Names out = names.ok() ? *names : Names{};
        std::sort(out.begin(), out.end());
        return out;
    };
    EXPECT_EQ(dispatchable(), (Names{"a", "b"}));

    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kSent, "", at(11)).ok());
    EXPECT_EQ(dispatchable(), (Names{"a", "b"}));  // sent: resent on a reconnect
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kApplied, "", at(12)).ok());
    auto back = store_->update_target(1, "a", TargetState::kPending, "", at(13));
    EXPECT_EQ(back.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(back.message(), "deployment 1 target 'a': invalid transition applied -> pending");
    EXPECT_EQ(store_->update_target(1, "zz", TargetState::kSent, "", at(13)).code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(store_->update_target(9, "a", TargetState::kSent, "", at(13)).code(),
              absl::StatusCode::kNotFound);
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kSent, "", at(13)).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kPending, "", at(14)).ok());  // lost
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kSent, "", at(15)).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kApplied, "", at(16)).ok());
    EXPECT_EQ(dispatchable(), Names{});

    ASSERT_TRUE(store_->set_deployment_state(1, DeploymentState::kSoaking, "", at(17)).ok());
    EXPECT_EQ(store_->pending_targets("c")->size(), 0u);
    EXPECT_EQ(dispatchable(), Names{});
    ASSERT_TRUE(store_->set_deployment_state(1, DeploymentState::kRolling, "", at(80)).ok());
    EXPECT_EQ(dispatchable(), Names{"c"});
    auto pc = store_->pending_targets("c");
    ASSERT_EQ(pc->size(), 1u);
    EXPECT_EQ((*pc)[0].bundle_version, 2);
    EXPECT_EQ((*pc)[0].stage, Stage::kRest);
    ASSERT_TRUE(store_->update_target(1, "c", TargetState::kSent, "", at(81)).ok());
    ASSERT_TRUE(
        store_->update_target(1, "c", TargetState::kRejected, "rules.rules:3: bad", at(82)).ok());
    EXPECT_EQ(dispatchable(), Names{});

    auto done = store_->get_deployment(1);
    ASSERT_TRUE(done.ok());
    EXPECT_EQ(done->state, DeploymentState::kFailed);
    EXPECT_EQ(done->error, "1 of 3 targets rejected or timed out");
    EXPECT_EQ(done->targets[0].state, TargetState::kApplied);
    EXPECT_EQ(done->targets[0].sent_at, at(11));
    EXPECT_EQ(done->targets[0].finished_at, at(12));
    EXPECT_EQ(done->targets[1].sent_at, at(15));
    EXPECT_EQ(done->targets[2].state, TargetState::kRejected);
    EXPECT_EQ(done->targets[2].error, "rules.rules:3: bad");
    EXPECT_EQ(done->selector, "label=env=prod");
    EXPECT_EQ(store_->get_sensor("a")->running_version, 2);
    EXPECT_EQ(store_->get_sensor("c")->running_version, 0);
    EXPECT_EQ(store_->set_deployment_state(1, DeploymentState::kRolling, "", at(90)).code(),
              absl::StatusCode::kFailedPrecondition);
}

TEST_P(StoreDeploy, BadRequests) {
    auto missing = store_->create_deployment(deploy(7, "all"));
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(missing.status().message(), "bundle version 7 not found");
    EXPECT_EQ(store_->create_deployment(deploy(1, "label=env=qa")).status().code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(store_->create_deployment(deploy(1, "a,,b")).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->create_deployment(deploy(1, "all", 101)).status().code(),
              absl::StatusCode::kInvalidArgument);
    NewDeployment ratio = deploy(1, "all", 50);
    ratio.gate_max_drop_ratio = 1.5;
    EXPECT_EQ(store_->create_deployment(ratio).status().message(),
              "health gate: max drop ratio 1.5 is not within 0..1");
    NewDeployment rate = deploy(1, "all", 50);
    rate.gate_max_alerts_per_second = std::numeric_limits<double>::infinity();
    EXPECT_EQ(store_->create_deployment(rate).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store_->list_deployments(10, false)->size(), 0u);
}

TEST_P(StoreDeploy, TheGateIsStoredAndTheRunNamesItsDeployment) {
    NewDeployment d = deploy(2, "a", 50);
    d.gate_max_drop_ratio = 0.05;
    auto created = store_->create_deployment(d);
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_EQ(created->gate_max_drop_ratio, 0.05);
    EXPECT_EQ(created->gate_max_alerts_per_second, 0);  // the manager's default
    ASSERT_TRUE(store_->update_target(created->id, "a", TargetState::kSent, "", at(11)).ok());
    ASSERT_TRUE(store_->update_target(created->id, "a", TargetState::kApplied, "", at(12)).ok());
    auto runs = store_->list_runs("a");
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 2u);
    EXPECT_EQ((*runs)[0].deployment_id, 0);  // the start-up period
    EXPECT_EQ((*runs)[1].bundle_version, 2);
    EXPECT_EQ((*runs)[1].deployment_id, created->id);

    // Reopened (a manager restart): the gate is still the deployment's.
    store_.reset();
    store_ = open_store(dir.file("m.db"));
    auto again = store_->get_deployment(created->id);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->gate_max_drop_ratio, 0.05);
}

TEST_P(StoreDeploy, NewerDeploymentSupersedesOpenTargets) {
    ASSERT_TRUE(store_->create_deployment(deploy(1, "all")).ok());
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kSent, "", at(11)).ok());
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kApplied, "", at(12)).ok());
    auto d2 = store_->create_deployment(deploy(2, "b,c"));
    ASSERT_TRUE(d2.ok());
    auto d1 = store_->get_deployment(1);
    EXPECT_EQ(d1->state, DeploymentState::kSuperseded);  // not completed: b and c never ran 1
    EXPECT_EQ(d1->error, "2 of 3 targets taken over by a newer deployment");
    EXPECT_EQ(d1->targets[1].state, TargetState::kSuperseded);
    EXPECT_EQ(d1->targets[1].error, "superseded by deployment 2");
    EXPECT_EQ(d1->targets[2].state, TargetState::kSuperseded);
    auto pb = store_->pending_targets("b");
    ASSERT_EQ(pb->size(), 1u);
    EXPECT_EQ((*pb)[0].deployment_id, 2);
    EXPECT_EQ(store_->pending_targets("a")->size(), 0u);
    EXPECT_EQ(store_->list_deployments(10, true)->size(), 2u);
}

TEST_P(StoreDeploy, RollbackDefaultsToPreviousVersion) {
    ASSERT_TRUE(store_->create_deployment(deploy(1, "a,b")).ok());
    for (const char* n : {"a", "b"}) {
        ASSERT_TRUE(store_->update_target(1, n, TargetState::kSent, "", at(11)).ok());
        ASSERT_TRUE(store_->update_target(1, n, TargetState::kApplied, "", at(12)).ok());
    }
    auto d2 = deploy(2, "a");
    d2.created_at = at(20);
    ASSERT_TRUE(store_->create_deployment(d2).ok());
    ASSERT_TRUE(store_->update_target(2, "a", TargetState::kApplied, "", at(21)).ok());
    EXPECT_EQ(*store_->previous_version("a"), 1);
    EXPECT_EQ(store_->previous_version("b").status().code(), absl::StatusCode::kNotFound);

    NewDeployment rb;
    rb.kind = DeploymentKind::kRollback;
    rb.selector = "a";
    rb.created_at = at(30);
    auto r = store_->create_deployment(rb);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->kind, DeploymentKind::kRollback);
    EXPECT_EQ(r->bundle_version, 0);
    ASSERT_EQ(r->targets.size(), 1u);
    EXPECT_EQ(r->targets[0].bundle_version, 1);

    rb.selector = "a,b";
    auto rb_b = store_->create_deployment(rb);
    EXPECT_EQ(rb_b.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(rb_b.status().message(), "rollback: sensor 'b' has no earlier bundle version than 1");
    rb.bundle_version = 1;
    EXPECT_TRUE(store_->create_deployment(rb).ok());
}

// The counts the store keeps per deployment (schema 7, what finishing a deployment and the
// rollout read instead of every target) follow every way a target changes: transitions,
// supersession by a newer deployment, revocation, a deployment ending with open targets.
TEST_P(StoreDeploy, TargetCountsFollowEveryChange) {
    auto expect = [&](int64_t id, TargetCounts want, DeploymentState state) {
        auto d = store_->get_deployment(id);
        ASSERT_TRUE(d.ok()) << d.status();
        EXPECT_EQ(show(d->counts), show(want)) << "deployment " << id;
        EXPECT_EQ(show(count_of(*d)), show(want)) << "deployment " << id << " targets";
        EXPECT_EQ(d->state, state) << "deployment " << id;
    };
    ASSERT_TRUE(store_->create_deployment(deploy(1, "all")).ok());
    expect(1, counts(3, 0, 0, 0, 0, 0, 0), DeploymentState::kRolling);
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kSent, "", at(11)).ok());
    expect(1, counts(2, 1, 0, 0, 0, 0, 0), DeploymentState::kRolling);
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kApplied, "", at(12)).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kSent, "", at(12)).ok());
    expect(1, counts(1, 1, 1, 0, 0, 0, 0), DeploymentState::kRolling);
    // A refused transition changes nothing.
    EXPECT_EQ(store_->update_target(1, "a", TargetState::kSent, "", at(12)).code(),
              absl::StatusCode::kFailedPrecondition);
    expect(1, counts(1, 1, 1, 0, 0, 0, 0), DeploymentState::kRolling);

    auto d2 = deploy(2, "b");
    d2.created_at = at(13);
    ASSERT_TRUE(store_->create_deployment(d2).ok());
    expect(1, counts(1, 0, 1, 0, 0, 1, 1), DeploymentState::kRolling);
    expect(2, counts(1, 0, 0, 0, 0, 0, 0), DeploymentState::kRolling);
    // Revoked: superseded, but not taken over; the last open target ends deployment 1.
    ASSERT_TRUE(store_->revoke_sensor("c", at(14), "admin").ok());
    expect(1, counts(0, 0, 1, 0, 0, 2, 1), DeploymentState::kSuperseded);
    EXPECT_EQ(store_->get_deployment(1)->error, "1 of 3 targets taken over by a newer deployment");

    ASSERT_TRUE(store_->update_target(2, "b", TargetState::kSent, "", at(15)).ok());
    ASSERT_TRUE(store_->update_target(2, "b", TargetState::kTimedOut, "late", at(16)).ok());
    expect(2, counts(0, 0, 0, 0, 1, 0, 0), DeploymentState::kFailed);

    auto d3 = deploy(2, "a,b", 50);
    d3.created_at = at(17);
    ASSERT_TRUE(store_->create_deployment(d3).ok());
    ASSERT_TRUE(store_->update_target(3, "a", TargetState::kSent, "", at(18)).ok());
    ASSERT_TRUE(store_->update_target(3, "a", TargetState::kRejected, "bad", at(19)).ok());
    expect(3, counts(1, 0, 0, 1, 0, 0, 0), DeploymentState::kCanary);
    ASSERT_TRUE(store_->set_deployment_state(3, DeploymentState::kRolledBack, "x", at(20)).ok());
    expect(3, counts(0, 0, 0, 1, 0, 1, 0), DeploymentState::kRolledBack);

    // Only the open deployments, newest first, with their counts.
    EXPECT_TRUE(store_->open_deployments()->empty());
    auto d4 = deploy(1, "a,b", 50);
    d4.created_at = at(21);
    ASSERT_TRUE(store_->create_deployment(d4).ok());
    auto d5 = deploy(1, "label=env=prod");  // b and a, not the revoked c
    d5.created_at = at(22);
    ASSERT_TRUE(store_->create_deployment(d5).ok());
    auto open = store_->open_deployments();
    ASSERT_TRUE(open.ok()) << open.status();
    // Deployment 4 was taken over whole, in its canary stage: the rollout ends it, not the store.
    ASSERT_EQ(open->size(), 2u);
    EXPECT_EQ((*open)[0].id, 5);
    EXPECT_EQ((*open)[1].id, 4);
    EXPECT_TRUE((*open)[0].targets.empty());
    EXPECT_EQ(show((*open)[0].counts), show(counts(2, 0, 0, 0, 0, 0, 0)));
    EXPECT_EQ(show((*open)[1].counts), show(counts(0, 0, 0, 0, 0, 2, 2)));
    expect(4, counts(0, 0, 0, 0, 0, 2, 2), DeploymentState::kCanary);
    auto listed = store_->list_deployments(10, false);
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->size(), 5u);
    for (const Deployment& d : *listed) {
        auto full = store_->get_deployment(d.id);
        EXPECT_EQ(show(d.counts), show(count_of(*full))) << "deployment " << d.id;
    }
}

TEST_P(StoreDeploy, CanaryAndOverdueTargetsOfOneDeployment) {
    ASSERT_TRUE(store_->create_deployment(deploy(2, "all", 50)).ok());  // canaries a, b
    auto canaries = store_->canary_targets(1);
    ASSERT_TRUE(canaries.ok()) << canaries.status();
    ASSERT_EQ(canaries->size(), 2u);
    EXPECT_EQ((*canaries)[0].sensor, "a");
    EXPECT_EQ((*canaries)[1].sensor, "b");
    EXPECT_EQ((*canaries)[1].state, TargetState::kPending);
    ASSERT_TRUE(store_->set_deployment_state(1, DeploymentState::kRolling, "", at(11)).ok());
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kSent, "", at(20)).ok());
    ASSERT_TRUE(store_->update_target(1, "c", TargetState::kSent, "", at(30)).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kSent, "", at(31)).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kApplied, "", at(32)).ok());
    EXPECT_TRUE(store_->sent_targets_before(1, at(19))->empty());
    auto overdue = store_->sent_targets_before(1, at(20));
    ASSERT_EQ(overdue->size(), 1u);
    EXPECT_EQ((*overdue)[0].sensor, "a");
    EXPECT_EQ((*overdue)[0].sent_at, at(20));
    overdue = store_->sent_targets_before(1, at(40));
    ASSERT_EQ(overdue->size(), 2u);  // b applied: not sent any more
    EXPECT_EQ((*overdue)[0].sensor, "a");
    EXPECT_EQ((*overdue)[1].sensor, "c");
    EXPECT_EQ((*overdue)[1].stage, Stage::kRest);
    EXPECT_TRUE(store_->sent_targets_before(2, at(40))->empty());
    EXPECT_TRUE(store_->canary_targets(2)->empty());
}

// EXPLAIN QUERY PLAN of `sql` on the database at `path`: the detail of every step.
std::vector<std::string> query_plan(const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    std::string eqp = "EXPLAIN QUERY PLAN " + sql;
    EXPECT_EQ(sqlite3_prepare_v2(db, eqp.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db) << ": " << sql;
    std::vector<std::string> steps;
    while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) {
        steps.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 3)));
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return steps;
}

// Every query that runs per target event (dispatch, a result, finishing a deployment) or per
// rollout pass reads through an index or the primary key: none scans a table, so its cost
// does not grow with the number of targets (a deploy to K sensors was O(K^2): finishing
// counted every target of the deployment on each result).
// The links' target updates are queued without waiting: they commit in queue order (a
// target's `sent` before its `applied`), each `done` runs after its commit with the op's own
// status, and sync() returns only when all of them have.
TEST_P(StoreDeploy, AsyncTargetUpdatesCommitInQueueOrder) {
    ASSERT_TRUE(store_->create_deployment(deploy(2, "all")).ok());
    std::mutex mu;
    std::vector<std::pair<int, absl::StatusCode>> seen;
    auto note = [&](int i) {
        return [&, i](absl::Status st) {
            std::lock_guard<std::mutex> lock(mu);
            seen.emplace_back(i, st.code());
        };
    };
    store_->update_target_async(1, "a", TargetState::kSent, "", at(11), note(0));
    store_->update_target_async(1, "a", TargetState::kApplied, "", at(12), note(1));
    store_->update_target_async(1, "a", TargetState::kApplied, "", at(13), note(2));  // again
    store_->update_target_async(1, "b", TargetState::kSent, "", at(14), note(3));
    store_->update_target_async(1, "b", TargetState::kRejected, "bad rule", at(15), note(4));
    store_->update_target_async(1, "c", TargetState::kApplied, "", at(16), note(5));
    store_->update_target_async(1, "zz", TargetState::kSent, "", at(17), note(6));
    store_->update_target_async(1, "c", TargetState::kSent, "", at(18), nullptr);  // no callback
    ASSERT_TRUE(store_->sync().ok());
    const std::vector<std::pair<int, absl::StatusCode>> want = {
        {0, absl::StatusCode::kOk},
        {1, absl::StatusCode::kOk},
        {2, absl::StatusCode::kFailedPrecondition},  // applied -> applied
        {3, absl::StatusCode::kOk},
        {4, absl::StatusCode::kOk},
        {5, absl::StatusCode::kOk},  // pending -> applied: already running that content
        {6, absl::StatusCode::kNotFound},
    };
    EXPECT_EQ(seen, want);
    auto d = store_->get_deployment(1);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->state, DeploymentState::kFailed);
    EXPECT_EQ(d->counts.applied, 2);
    EXPECT_EQ(d->counts.rejected, 1);
    EXPECT_EQ(d->targets[0].sent_at, at(11));
    EXPECT_EQ(d->targets[0].finished_at, at(12));
    EXPECT_EQ(d->targets[1].error, "bad rule");
    EXPECT_EQ(d->targets[2].state, TargetState::kApplied);  // the late `sent` was refused
    EXPECT_EQ(store_->get_sensor("c")->running_version, 2);
}

// One read gives a dispatch both what to send and what the sensor runs.
TEST_P(StoreDeploy, DispatchViewIsPendingTargetsAndRunningVersion) {
    ASSERT_TRUE(store_->create_deployment(deploy(1, "all")).ok());
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kSent, "", at(11)).ok());
    ASSERT_TRUE(store_->update_target(1, "a", TargetState::kApplied, "", at(12)).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kSent, "", at(13)).ok());
    auto a = store_->dispatch_view("a");
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->running_version, 1);
    EXPECT_TRUE(a->targets.empty());
    auto b = store_->dispatch_view("b");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->running_version, 0);
    ASSERT_EQ(b->targets.size(), 1u);
    EXPECT_EQ(b->targets[0].deployment_id, 1);
    EXPECT_EQ(b->targets[0].bundle_version, 1);
    EXPECT_EQ(b->targets[0].state, TargetState::kSent);
    EXPECT_EQ(b->targets[0].sent_at, at(13));  // a disconnect times it out from here
    EXPECT_EQ(store_->dispatch_view("nobody").status().code(), absl::StatusCode::kNotFound);
}

TEST(StoreQueryPlans, PerTargetQueriesReadOnlyThroughIndexes) {
    TempDir dir;
    std::string path = dir.file("m.db");
    ASSERT_NE(open_store(path), nullptr);
    struct Case {
        const char* name;
        const char* sql;
        std::vector<std::string> want;  // the plan's steps, exactly (a sort sorts the result)
    };
    const Case cases[] = {
        {"pending targets",
         kPendingTargetsSql,
         {"SEARCH t USING INDEX deployment_targets_by_sensor (sensor_id=? AND state=?)",
          "SEARCH d USING INTEGER PRIMARY KEY (rowid=?)", "USE TEMP B-TREE FOR ORDER BY"}},
        {"target state",
         kTargetStateSql,
         {"SEARCH deployment_targets USING INDEX sqlite_autoindex_deployment_targets_1 "
          "(deployment_id=? AND sensor_id=?)"}},
        {"finish counts",
         kFinishCountsSql,
         {"SEARCH deployments USING INTEGER PRIMARY KEY (rowid=?)"}},
        {"deployment",
         kDeploymentByIdSql,
         {"SEARCH deployments USING INTEGER PRIMARY KEY (rowid=?)"}},
        {"open deployments",
         kOpenDeploymentsSql,
         {"SEARCH deployments USING INDEX deployments_by_state (state=?)",
          "USE TEMP B-TREE FOR ORDER BY"}},
        {"canary targets",
         kCanaryTargetsSql,
         {"SEARCH t USING INDEX deployment_targets_by_stage (deployment_id=? AND stage=?)",
          "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)", "USE TEMP B-TREE FOR ORDER BY"}},
        {"overdue targets",
         kSentTargetsBeforeSql,
         {"SEARCH t USING INDEX deployment_targets_by_state (deployment_id=? AND state=? AND "
          "sent_at>? AND sent_at<?)",
          "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)", "USE TEMP B-TREE FOR ORDER BY"}},
    };
    for (const Case& c : cases) {
        std::vector<std::string> plan = query_plan(path, c.sql);
        std::string all;
        for (const std::string& step : plan) {
            all += "\n  " + step;
            EXPECT_FALSE(step.starts_with("SCAN")) << c.name << " scans: " << step;
        }
        // Exactly these steps: a subquery counting targets, or a second table read, is a
        // regression even when it uses an index.
        std::string want;
        for (const std::string& w : c.want) {
            want += "\n  " + w;
        }
        EXPECT_EQ(all, want) << c.name;
    }
}

// ---------------------------------------------------------------- run history

TEST_P(StoreRuns, PeriodsAndTotalsExact) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_EQ(store->push_bundle(bundle("rules-1"))->version, 1);
    ASSERT_EQ(store->push_bundle(bundle("rules-2"))->version, 2);
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());  // runs local rules (0)
    ASSERT_TRUE(store->add_run_totals("s1", {10, 1000, 1, 2}).ok());
    ASSERT_TRUE(store->begin_run("s1", 1, at(10)).ok());
    ASSERT_TRUE(store->add_run_totals("s1", {5, 500, 0, 1}).ok());
    ASSERT_TRUE(store->add_run_totals("s1", {7, 700, 3, 0}).ok());
    ASSERT_TRUE(store->begin_run("s1", 1, at(15)).ok());  // same version: same period
    SensorReport r;
    r.sensor = "s1";
    r.ts = at(18);
    r.deltas = {1, 100, 0, 4};
    ASSERT_TRUE(store->report(r).ok());
    ASSERT_TRUE(store->begin_run("s1", 2, at(20)).ok());
    ASSERT_TRUE(store->add_run_totals("s1", {3, 300, 0, 0}).ok());

    auto runs = store->list_runs("s1");
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 3u);
    const auto& r0 = (*runs)[0];
    EXPECT_EQ(r0.bundle_version, 0);
    EXPECT_EQ(r0.started_at, at(0));
    EXPECT_EQ(r0.ended_at, at(10));
    EXPECT_EQ(r0.totals.packets, 10);
    EXPECT_EQ(r0.totals.bytes, 1000);
    EXPECT_EQ(r0.totals.drops, 1);
    EXPECT_EQ(r0.totals.alerts, 2);
    const auto& r1 = (*runs)[1];
    EXPECT_EQ(r1.bundle_version, 1);
    EXPECT_EQ(r1.started_at, at(10));
    EXPECT_EQ(r1.ended_at, at(20));
    EXPECT_EQ(r1.totals.packets, 13);
    EXPECT_EQ(r1.totals.bytes, 1300);
    EXPECT_EQ(r1.totals.drops, 3);
    EXPECT_EQ(r1.totals.alerts, 5);
    const auto& r2 = (*runs)[2];
    EXPECT_EQ(r2.bundle_version, 2);
    EXPECT_EQ(r2.started_at, at(20));
    EXPECT_EQ(r2.ended_at, 0);
    EXPECT_EQ(r2.totals.packets, 3);
    EXPECT_EQ(store->get_sensor("s1")->last_seen, at(18));
    EXPECT_EQ(*store->previous_version("s1"), 1);

    EXPECT_EQ(store->add_run_totals("s1", {-1, 0, 0, 0}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(store->add_run_totals("zz", {1, 0, 0, 0}).code(), absl::StatusCode::kNotFound);
    ASSERT_TRUE(store->enroll_sensor("s2", "h", at(0), "admin").ok());
    auto no_run = store->add_run_totals("s2", {1, 0, 0, 0});
    EXPECT_EQ(no_run.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(no_run.message(), "sensor 's2' has no open run");

    // The fleet's newest periods in one query: s3 started last, then s1's two newest.
    ASSERT_TRUE(store->connect_sensor(hello("s3"), at(30), true).ok());
    auto recent = store->recent_runs(3);
    ASSERT_TRUE(recent.ok()) << recent.status();
    ASSERT_EQ(recent->size(), 3u);
    EXPECT_EQ((*recent)[0].sensor, "s3");
    EXPECT_EQ((*recent)[0].started_at, at(30));
    EXPECT_EQ((*recent)[1].sensor, "s1");
    EXPECT_EQ((*recent)[1].bundle_version, 2);
    EXPECT_EQ((*recent)[1].totals.packets, 3);
    EXPECT_EQ((*recent)[2].sensor, "s1");
    EXPECT_EQ((*recent)[2].bundle_version, 1);
    EXPECT_EQ((*recent)[2].ended_at, at(20));
    EXPECT_EQ(store->recent_runs(100)->size(), 4u);
}

// ---------------------------------------------------------------- metrics

TEST_P(StoreMetrics, DownsamplesPerMinuteAndPrunesExactly) {
    StoreOptions opt;
    opt.metric_retention_seconds = 3600;
    auto store = open_store(dir.file("m.db"), opt);
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
    ASSERT_TRUE(store->record_metrics("s1", at(5), {{"capture.kernel_packets", 100}}).ok());
    ASSERT_TRUE(store->record_metrics("s1", at(35), {{"capture.kernel_packets", 160}}).ok());
    ASSERT_TRUE(store->record_metrics("s1", at(20), {{"capture.kernel_packets", 130}}).ok());
    ASSERT_TRUE(
        store->record_metrics("s1", at(65), {{"capture.kernel_packets", 220}, {"detect.alert", 3}})
            .ok());
    auto h = store->metric_history("s1", "capture.kernel_packets", at(0), at(600));
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_EQ(h->size(), 2u);
    EXPECT_EQ((*h)[0].minute, kBase);
    EXPECT_EQ((*h)[0].value, 160);  // last sample of the minute, not the late older one
    EXPECT_EQ((*h)[1].minute, kBase + kMin);
    EXPECT_EQ((*h)[1].value, 220);
    EXPECT_EQ(store->metric_history("s1", "detect.alert", at(0), at(600))->size(), 1u);
    EXPECT_EQ(store->record_metrics("zz", at(0), {{"x", 1}}).code(), absl::StatusCode::kNotFound);

    // Minutes 2..121 -> 120 more rows of one counter.
    for (int m = 2; m < 122; ++m) {
        ASSERT_TRUE(store->record_metrics("s1", kBase + m * kMin + kSec, {{"c", m}}).ok());
    }
    // now = minute 122: cutoff = minute 62; minutes 0..61 lie wholly before it.
    auto pruned = store->prune_metrics(kBase + 122 * kMin);
    ASSERT_TRUE(pruned.ok());
    EXPECT_EQ(*pruned, 60 + 3);  // c at minutes 2..61, plus the three rows of minutes 0 and 1
    auto left = store->metric_history("s1", "c", kBase, kBase + 200 * kMin);
    ASSERT_EQ(left->size(), 60u);
    EXPECT_EQ(left->front().minute, kBase + 62 * kMin);
    EXPECT_EQ(left->front().value, 62);
    EXPECT_EQ(*store->prune_metrics(kBase + 122 * kMin), 0);
}

// A report's samples are written 16 to a statement: more than 16 span statements, each sample
// lands on its own counter, a counter named twice keeps its later value, and an empty name
// refuses the whole report with nothing written.
TEST_P(StoreMetrics, ManySamplesInOneReport) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
    std::vector<MetricSample> samples;
    for (int i = 0; i < 37; ++i) {
        samples.push_back({picket::strings::cat("c", i), 1000 + i});
    }
    samples.push_back({"c3", 7});  // again, later in the same report (another statement)
    samples.push_back({"c20", 8});
    samples.push_back({"c20", 9});  // twice in the same statement
    ASSERT_TRUE(store->record_metrics("s1", at(5), samples).ok());
    for (int i = 0; i < 37; ++i) {
        auto h = store->metric_history("s1", picket::strings::cat("c", i), at(0), at(60));
        ASSERT_TRUE(h.ok()) << h.status();
        ASSERT_EQ(h->size(), 1u) << "c" << i;
        const int64_t want = i == 3 ? 7 : i == 20 ? 9 : 1000 + i;
        EXPECT_EQ((*h)[0].value, want) << "c" << i;
    }
    auto bad = store->record_metrics("s1", at(6), {{"c0", 1}, {"", 2}});
    EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ((*store->metric_history("s1", "c0", at(0), at(60)))[0].value, 1000);
}

// ---------------------------------------------------------------- history

TEST_P(StoreDeploy, HistoryPerSensorAndFleet) {
    ASSERT_TRUE(store_->create_deployment(deploy(2, "b,c")).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kSent, "", at(11)).ok());
    ASSERT_TRUE(store_->update_target(1, "b", TargetState::kRejected, "bad rule", at(12)).ok());
    ASSERT_TRUE(
        store_->record_event({0, at(13), "", "sensor.error", "a", 0, 0, "apply timed out"}).ok());
    auto fleet = store_->history("", 100);
    ASSERT_TRUE(fleet.ok());
    std::vector<std::string> kinds;
    for (const Event& e : *fleet) {
        kinds.push_back(e.kind);
    }
    EXPECT_EQ(kinds, (std::vector<std::string>{"sensor.error", "target.rejected", "deploy",
                                               "bundle.push", "bundle.push", "sensor.register",
                                               "sensor.register", "sensor.register"}));
    auto b = store_->history("b", 100);
    ASSERT_EQ(b->size(), 3u);
    EXPECT_EQ((*b)[0].kind, "target.rejected");
    EXPECT_EQ((*b)[0].message, "bad rule");
    EXPECT_EQ((*b)[1].kind, "deploy");
    EXPECT_EQ((*b)[1].actor, "alice");
    EXPECT_EQ((*b)[1].message, "bundle version 2 to 'b,c': 2 sensors, 0 canary");
    EXPECT_EQ((*b)[2].kind, "sensor.register");
    auto a = store_->history("a", 100);
    ASSERT_EQ(a->size(), 2u);
    EXPECT_EQ((*a)[0].message, "apply timed out");
    auto page = store_->history("", 2, (*fleet)[1].id);
    ASSERT_EQ(page->size(), 2u);
    EXPECT_EQ((*page)[0].kind, "deploy");
}

// ---------------------------------------------------------------- concurrency

TEST_P(StoreConcurrency, EightThreadsThousandOpsEachAllAcknowledged) {
    auto store = open_store(dir.file("m.db"));
    constexpr int kThreads = 8;
    constexpr int kOps = 1000;
    for (int t = 0; t < kThreads; ++t) {
        ASSERT_TRUE(store->connect_sensor(hello(sensor_name(t)), at(0), true).ok());
    }
    auto before = store->writer_stats();
    std::atomic<int> failures{0};
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            std::string name = sensor_name(t);
            for (int i = 0; i < kOps; ++i) {
                if (!store->add_run_totals(name, {1, t + 1, 0, i % 2}).ok()) {
                    ++failures;
                }
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    auto after = store->writer_stats();
    EXPECT_EQ(failures.load(), 0);
    for (int t = 0; t < kThreads; ++t) {
        auto runs = store->list_runs(sensor_name(t));
        ASSERT_EQ(runs->size(), 1u);
        EXPECT_EQ((*runs)[0].totals.packets, kOps);
        EXPECT_EQ((*runs)[0].totals.bytes, kOps * (t + 1));
        EXPECT_EQ((*runs)[0].totals.alerts, kOps / 2);
    }
    int64_t ops = after.ops - before.ops;
    int64_t txns = after.transactions - before.transactions;
    EXPECT_EQ(ops, kThreads * kOps);
    EXPECT_LT(txns, ops);  // batched
    std::printf("[ store ] %lld ops in %lld transactions, %.2f s: %.0f ops/s, %.1f ops/txn\n",
                static_cast<long long>(ops), static_cast<long long>(txns), secs, ops / secs,
                static_cast<double>(ops) / static_cast<double>(txns));
    EXPECT_TRUE(store->integrity_check().ok());
}

TEST_P(StoreConcurrency, AsyncReportsCompleteAfterCommit) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
    std::atomic<int> ok{0};
    for (int i = 0; i < 500; ++i) {
        SensorReport r;
        r.sensor = "s1";
        r.ts = at(i);
        r.deltas = {2, 0, 0, 0};
        r.samples = {{"capture.kernel_packets", 2 * (i + 1)}};
        store->report_async(std::move(r), [&ok](absl::Status st) {
            if (st.ok()) {
                ++ok;
            }
        });
    }
    // A synchronous write queued after them returns only once they have all committed.
    ASSERT_TRUE(store->record_event({0, at(600), "", "barrier", "", 0, 0, ""}).ok());
    EXPECT_EQ(ok.load(), 500);
    EXPECT_EQ((*store->list_runs("s1"))[0].totals.packets, 1000);
    auto h = store->metric_history("s1", "capture.kernel_packets", at(0), at(600));
    ASSERT_EQ(h->size(), 9u);  // seconds 0..499 span minutes 0..8
    EXPECT_EQ(h->back().value, 1000);
}

// Async writes (reports) wait up to async_linger for more to commit with, and a write someone
// blocks on ends that wait at once: one transaction for all of them, no linger paid.
TEST_P(StoreConcurrency, AsyncWritesLingerUntilAWaitedWrite) {
    StoreOptions opt;
    opt.async_linger = std::chrono::seconds(30);
    auto store = open_store(dir.file("m.db"), opt);
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
    auto before = store->writer_stats();
    std::atomic<int> ok{0};
    for (int i = 0; i < 50; ++i) {
        SensorReport r;
        r.sensor = "s1";
        r.ts = at(i);
        r.deltas = {1, 0, 0, 0};
        store->report_async(std::move(r), [&ok](absl::Status st) { ok += st.ok() ? 1 : 0; });
    }
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(store->record_event({0, at(60), "", "barrier", "", 0, 0, ""}).ok());
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(waited, 15.0);  // not the 30 s linger
    EXPECT_EQ(ok.load(), 50);
    auto after = store->writer_stats();
    EXPECT_EQ(after.ops - before.ops, 51);
    EXPECT_EQ(after.transactions - before.transactions, 1);
    EXPECT_EQ((*store->list_runs("s1"))[0].totals.packets, 50);
}

// ---------------------------------------------------------------- durability

TEST(StoreDurability, AcknowledgedWritesSurviveSigkill) {
    TempDir dir;
    std::string path = dir.file("m.db");
    { open_store(path); }
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        auto s = Store::Open(path);
        if (!s.ok()) {
            _exit(3);
        }
        auto& store = *s;
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&store, t, fd = fds[1]] {
                for (int32_t i = t;; i += 4) {
                    Event e{0, at(0), "child", "test", "", 0, 0, std::to_string(i)};
                    if (!store->record_event(e).ok()) {
                        _exit(4);
                    }
                    if (write(fd, &i, sizeof i) != sizeof i) {
                        _exit(5);
                    }
                }
            });
        }
        for (auto& th : threads) {
            th.join();
        }
        _exit(0);
    }
    close(fds[1]);
    std::set<int32_t> acked;
    int32_t v = 0;
    while (acked.size() < 2000 && read(fds[0], &v, sizeof v) == sizeof v) {
        acked.insert(v);
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status));
    while (read(fds[0], &v, sizeof v) == sizeof v) {  // acks written before the kill
        acked.insert(v);
    }
    close(fds[0]);
    ASSERT_GE(acked.size(), 2000u);

    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->integrity_check().ok());
    auto events = store->history("", 1'000'000);
    ASSERT_TRUE(events.ok());
    std::set<int32_t> present;
    for (const Event& e : *events) {
        present.insert(std::stoi(e.message));
    }
    EXPECT_GE(present.size(), acked.size());
    size_t missing = 0;
    for (int32_t a : acked) {
        missing += present.count(a) == 0 ? 1 : 0;
    }
    EXPECT_EQ(missing, 0u);
    std::printf("[ store ] %zu acknowledged before SIGKILL, %zu present after reopen\n",
                acked.size(), present.size());
    EXPECT_EQ(raw_text(path, "PRAGMA quick_check"), "ok");
}

// ---------------------------------------------------------------- disk full

TEST(StoreDiskFull, ResourceExhaustedAndEarlierDataIntact) {
    TempDir dir;
    std::string path = dir.file("m.db");
    StoreOptions opt;
    opt.max_page_count = 100;  // 400 KiB with 4 KiB pages
    {
        auto store = open_store(path, opt);
        ASSERT_NE(store, nullptr);
        ASSERT_EQ(store->push_bundle(bundle(std::string(20'000, 'a')))->version, 1);
        auto full = store->push_bundle(bundle(std::string(2'000'000, 'b')));
        EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted) << full.status();
        EXPECT_NE(full.status().message().find("database or disk full"), std::string::npos);
        EXPECT_EQ(*store->latest_version(), 1);
        EXPECT_EQ(store->get_bundle(1)->blob, std::string(20'000, 'a'));
        // Small writes still fit and still work.
        EXPECT_TRUE(store->push_bundle(bundle("small"))->created);
        EXPECT_TRUE(store->integrity_check().ok());
    }
    auto store = open_store(path);
    EXPECT_EQ(*store->latest_version(), 2);
    EXPECT_EQ(store->get_bundle(1)->blob, std::string(20'000, 'a'));
    EXPECT_EQ(store->get_bundle(2)->blob, "small");
    EXPECT_TRUE(store->integrity_check().ok());
}

}  // namespace
}  // namespace picket::manager::store
