// The PostgreSQL backend's own behaviour (the store's other tests run on both backends): an
// outage of the server (UNAVAILABLE, nothing acknowledged lost, reconnection by itself), and
// two Store objects on one database, as two manager replicas: each sees the other's commits,
// and their concurrent writes keep the deployment counters, bundle versions and token uses
// exact. Skipped when the PostgreSQL server binaries are absent.
#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <libpq-fe.h>

#include "gtest/gtest.h"
#include "manager/store/postgres.h"
#include "manager/store/store.h"
#include "tests/manager/store/store_fixture.h"
#include "tests/support/postgres_server.h"

namespace picket::manager::store {
namespace {

using picket::testing::PostgresServer;
using testing::at;
using testing::open_store;

NewBundle bundle(const std::string& blob) {
    NewBundle b;
    b.name = "et-open";
    b.author = "alice";
    b.created_at = at(1);
    b.blob = blob;
    return b;
}

SensorHello hello(const std::string& name) {
    SensorHello h;
    h.name = name;
    h.host = name + ".example";
    return h;
}

// prefix followed by n ("s" 100 -> "s100").
std::string named(const char* prefix, int n) {
    std::string out = prefix;
    out += std::to_string(n);
    return out;
}

PostgresServer* shared_or_skip(std::string* why) {
    return PostgresServer::shared(why);
}

// Another Store on the same database, as a second manager replica: opening it does not mark
// the first one's sensors disconnected.
std::unique_ptr<Store> open_replica(const std::string& dsn) {
    StoreOptions keep;
    keep.reset_connections = false;
    return open_store(dsn, keep);
}

// Connects sensors s<first> .. s<first + n - 1> through `store`.
::testing::AssertionResult connect_sensors(Store& store, int first, int n) {
    for (int i = first; i < first + n; ++i) {
        absl::Status st = store.connect_sensor(hello(named("s", i)), at(0), true).status();
        if (!st.ok()) {
            return ::testing::AssertionFailure() << named("s", i) << ": " << st;
        }
    }
    return ::testing::AssertionSuccess();
}

// Two Stores on one fresh database, as two manager replicas (skipped without the PostgreSQL
// server binaries).
class StorePostgresReplicas : public ::testing::Test {
protected:
    void SetUp() override {
        std::string why;
        PostgresServer* server = shared_or_skip(&why);
        if (server == nullptr) {
            GTEST_SKIP() << why;
        }
        dsn = server->fresh_dsn();
        a = open_store(dsn);
        ASSERT_NE(a, nullptr);
        b = open_replica(dsn);
        ASSERT_NE(b, nullptr);
    }
    std::string dsn;
    std::unique_ptr<Store> a;
    std::unique_ptr<Store> b;
};

TEST(PostgresSql, PlaceholdersAndLockingCommentsAreTranslated) {
    int n = 0;
    EXPECT_EQ(translate_placeholders("SELECT a FROM t WHERE b = ? AND c = '?' /*FOR UPDATE*/", &n),
              "SELECT a FROM t WHERE b = $1 AND c = '?' FOR UPDATE");
    EXPECT_EQ(n, 1);
    EXPECT_EQ(translate_placeholders("SELECT a FROM t WHERE b = ?2 /*FOR NO KEY UPDATE*/", &n),
              "SELECT a FROM t WHERE b = $2 FOR NO KEY UPDATE");
    EXPECT_EQ(n, 2);
    EXPECT_EQ(translate_placeholders("SELECT 1 /* a comment */", &n), "SELECT 1 /* a comment */");
    EXPECT_EQ(n, 0);
}

TEST(StorePostgres, ServerDownIsUnavailableNothingLostAndTheStoreReconnects) {
    // A server of its own: this test stops it.
    std::string why;
    auto server = PostgresServer::start(&why);
    if (server == nullptr) {
        GTEST_SKIP() << why;
    }
    const std::string dsn = server->fresh_dsn();
    auto store = open_store(dsn);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->enroll_sensor("s1", "hash1", at(0), "admin").ok());
    auto pushed = store->push_bundle(bundle("rules-1"));
    ASSERT_TRUE(pushed.ok()) << pushed.status();
    EXPECT_EQ(pushed->version, 1);

    ASSERT_TRUE(server->stop());
    absl::Status w = store->enroll_sensor("s2", "hash2", at(1), "admin");
    EXPECT_EQ(w.code(), absl::StatusCode::kUnavailable) << w;
    EXPECT_NE(w.message().find("database server unavailable"), std::string::npos) << w;
    EXPECT_EQ(w.message().find("password"), std::string::npos) << w;
    auto r = store->list_sensors();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();

    ASSERT_TRUE(server->restart());
    // The first write and read after the restart succeed: the store reconnects by itself.
    EXPECT_TRUE(store->enroll_sensor("s3", "hash3", at(2), "admin").ok());
    auto sensors = store->list_sensors();
    ASSERT_TRUE(sensors.ok()) << sensors.status();
    std::vector<std::string> names;
    for (const Sensor& s : *sensors) {
        names.push_back(s.name);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"s1", "s3"}));
    auto b = store->get_bundle(1, true);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->blob, "rules-1");
    // Versions only grow; after a server crash (stop -m immediate) PostgreSQL's sequences
    // resume past the values they had logged ahead (up to 32), so the next one may skip some.
    auto next = store->push_bundle(bundle("rules-2"));
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_TRUE(next->created);
    EXPECT_GE(next->version, 2);
    EXPECT_LE(next->version, 34);
}

TEST(StorePostgres, UnreachableServerIsUnavailableWithoutThePassword) {
    auto s = Store::Open("postgresql://picket:s3cret@127.0.0.1:1/postgres?connect_timeout=2");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
    EXPECT_EQ(s.status().message().find("s3cret"), std::string::npos) << s.status();
    EXPECT_NE(s.status().message().find("postgresql://picket:***@127.0.0.1:1/postgres"),
              std::string::npos)
        << s.status();
}

TEST(StorePostgres, TwoStoresOnOneDatabaseSeeEachOtherAndKeepCountersExact) {
    std::string why;
    PostgresServer* server = shared_or_skip(&why);
    if (server == nullptr) {
        GTEST_SKIP() << why;
    }
    const std::string dsn = server->fresh_dsn();
    auto a = open_store(dsn);
    ASSERT_NE(a, nullptr);
    auto b = open_replica(dsn);
    ASSERT_NE(b, nullptr);

    constexpr int kSensors = 40;
    for (int i = 0; i < kSensors; ++i) {
        Store& s = i % 2 == 0 ? *a : *b;
        ASSERT_TRUE(s.connect_sensor(hello(named("s", 100 + i)), at(0), true).ok());
    }
    EXPECT_EQ(a->list_sensors()->size(), static_cast<size_t>(kSensors));
    EXPECT_EQ(b->list_sensors()->size(), static_cast<size_t>(kSensors));

    // Pushes from both at once: versions unique, identical content one version.
    std::vector<int64_t> va, vb;
    std::thread ta([&] {
        for (int i = 0; i < 10; ++i) {
            va.push_back(a->push_bundle(bundle(named("a", i)))->version);
        }
    });
    std::thread tb([&] {
        for (int i = 0; i < 10; ++i) {
            vb.push_back(b->push_bundle(bundle(named("b", i)))->version);
        }
    });
    ta.join();
    tb.join();
    std::set<int64_t> versions(va.begin(), va.end());
    versions.insert(vb.begin(), vb.end());
    EXPECT_EQ(versions.size(), 20u);
    EXPECT_EQ(*versions.begin(), 1);
    EXPECT_EQ(*versions.rbegin(), 20);
    EXPECT_EQ(b->push_bundle(bundle("a3"))->version, va[3]);
    EXPECT_FALSE(b->push_bundle(bundle("a3"))->created);

    NewDeployment d;
    d.bundle_version = 1;
    d.selector = "all";
    d.actor = "alice";
    d.created_at = at(10);
    auto dep = a->create_deployment(d);
    ASSERT_TRUE(dep.ok()) << dep.status();
    // Each replica answers for the sensors connected to it, all at once: sent, then applied.
    auto drive = [&](Store& s, int parity) {
        for (int i = parity; i < kSensors; i += 2) {
            std::string n = named("s", 100 + i);
            EXPECT_TRUE(s.update_target(dep->id, n, TargetState::kSent, "", at(11)).ok());
            EXPECT_TRUE(s.update_target(dep->id, n, TargetState::kApplied, "", at(12)).ok());
        }
    };
    std::thread da([&] { drive(*a, 0); });
    std::thread db([&] { drive(*b, 1); });
    da.join();
    db.join();
    for (Store* s : {a.get(), b.get()}) {
        auto got = s->get_deployment(dep->id, false);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(got->counts.applied, kSensors);
        EXPECT_EQ(got->counts.pending, 0);
        EXPECT_EQ(got->counts.sent, 0);
        EXPECT_EQ(got->state, DeploymentState::kCompleted);
    }

    // One bootstrap token with 5 uses redeemed 12 times at once through both: exactly 5 win.
    NewBootstrapToken t;
    t.id = "token1";
    t.secret_hash = std::string(64, 'a');
    t.uses = 5;
    t.created_at = at(0);
    t.expires_at = at(3600);
    absl::Status created = a->create_bootstrap_token(t);
    ASSERT_TRUE(created.ok()) << created;
    std::atomic<int> won{0};
    std::vector<std::thread> racers;
    for (int i = 0; i < 12; ++i) {
        racers.emplace_back([&, i] {
            Redemption r;
            r.token_id = "token1";
            r.secret_hash = t.secret_hash;
            r.sensor = named("new", i);
            r.cert_serial = named("serial", i);
            r.cert_sha256 = named("sha", i);
            r.not_after = at(7200);
            r.ts = at(20);
            if ((i % 2 == 0 ? *a : *b).redeem_bootstrap_token(r).ok()) {
                ++won;
            }
        });
    }
    for (std::thread& r : racers) {
        r.join();
    }
    EXPECT_EQ(won.load(), 5);
    EXPECT_EQ(b->get_bootstrap_token("token1")->used, 5);
}

TEST(StorePostgres, CopyFromSqliteKeepsIdsBlobsAndCountersAndRefusesANonEmptyTarget) {
    std::string why;
    PostgresServer* server = shared_or_skip(&why);
    if (server == nullptr) {
        GTEST_SKIP() << why;
    }
    picket::testing::TempDir dir;
    const std::string file = dir.file("m.db");
    const std::string blob("\0\x01\xffrules\0\n", 10);  // binary, with NUL bytes
    int64_t dep_id = 0;
    {
        auto s = open_store(file);
        ASSERT_NE(s, nullptr);
        for (int i = 0; i < 3; ++i) {
            ASSERT_TRUE(s->connect_sensor(hello(named("s", i)), at(0), true).ok());
        }
        ASSERT_EQ(s->push_bundle(bundle(blob))->version, 1);
        ASSERT_EQ(s->push_bundle(bundle("two"))->version, 2);
        NewDeployment d;
        d.bundle_version = 1;
        d.selector = "all";
        d.actor = "alice";
        d.created_at = at(10);
        auto dep = s->create_deployment(d);
        ASSERT_TRUE(dep.ok()) << dep.status();
        dep_id = dep->id;
        ASSERT_TRUE(s->update_target(dep_id, "s0", TargetState::kSent, "", at(11)).ok());
        ASSERT_TRUE(s->update_target(dep_id, "s0", TargetState::kApplied, "", at(12)).ok());
        ASSERT_TRUE(s->update_target(dep_id, "s1", TargetState::kSent, "", at(11)).ok());
        ASSERT_TRUE(s->record_metrics("s0", at(13), {{"packets", 5}, {"drops", 1}}).ok());
    }
    const std::string dsn = server->fresh_dsn();
    auto report = copy_store(file, dsn);
    ASSERT_TRUE(report.ok()) << report.status();
    std::map<std::string, int64_t> rows(report->tables.begin(), report->tables.end());
    EXPECT_EQ(rows.size(), 19u);
    EXPECT_EQ(rows["sensors"], 3);
    EXPECT_EQ(rows["blobs"], 2);
    EXPECT_EQ(rows["bundles"], 2);
    EXPECT_EQ(rows["deployments"], 1);
    EXPECT_EQ(rows["deployment_targets"], 3);
    EXPECT_EQ(rows["metric_minutes"], 2);

    auto pg = open_store(dsn);
    ASSERT_NE(pg, nullptr);
    auto b = pg->get_bundle(1, true);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->blob, blob);
    auto d = pg->get_deployment(dep_id, false);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->counts.applied, 1);
    EXPECT_EQ(d->counts.sent, 1);
    EXPECT_EQ(d->counts.pending, 1);
    EXPECT_EQ(pg->list_sensors()->size(), 3u);
    // Generated ids continue after the copied ones.
    EXPECT_EQ(pg->push_bundle(bundle("three"))->version, 3);
    ASSERT_TRUE(pg->connect_sensor(hello("s9"), at(20), true).ok());
    EXPECT_TRUE(pg->update_target(dep_id, "s1", TargetState::kApplied, "", at(21)).ok());

    auto again = copy_store(file, dsn);
    EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
}

TEST(StorePostgres, ManagersStartingTogetherOnAnEmptyDatabaseMigrateItOnce) {
    std::string why;
    PostgresServer* server = shared_or_skip(&why);
    if (server == nullptr) {
        GTEST_SKIP() << why;
    }
    for (int round = 0; round < 3; ++round) {
        const std::string dsn = server->fresh_dsn();
        constexpr int kManagers = 4;
        std::vector<absl::Status> opened(kManagers);
        std::vector<int> versions(kManagers, 0);
        std::vector<std::thread> threads;
        for (int i = 0; i < kManagers; ++i) {
            threads.emplace_back([&, i] {
                StoreOptions keep;
                keep.reset_connections = false;
                auto s = Store::Open(dsn, keep);
                opened[i] = s.status();
                versions[i] = s.ok() ? (*s)->schema_version() : 0;
            });
        }
        for (std::thread& t : threads) {
            t.join();
        }
        for (int i = 0; i < kManagers; ++i) {
            EXPECT_TRUE(opened[i].ok()) << opened[i];
            EXPECT_EQ(versions[i], Store::kSchemaVersion);
        }
    }
}

TEST_F(StorePostgresReplicas, DeploymentsCreatedAtOnceThroughTwoStoresLeaveOneOpenTargetPerSensor) {
    constexpr int kSensors = 20;
    ASSERT_TRUE(connect_sensors(*a, 100, kSensors));
    ASSERT_EQ(a->push_bundle(bundle("rules-1"))->version, 1);
    constexpr int kRounds = 8;
    auto deploy = [&](Store& s) {
        for (int r = 0; r < kRounds; ++r) {
            NewDeployment d;
            d.bundle_version = 1;
            d.selector = "all";
            d.actor = "alice";
            d.created_at = at(10 + r);
            auto created = s.create_deployment(d);
            EXPECT_TRUE(created.ok()) << created.status();
        }
    };
    std::thread ta([&] { deploy(*a); });
    std::thread tb([&] { deploy(*b); });
    ta.join();
    tb.join();
    // The newest deployment holds every sensor's one open target; each older one was taken over.
    for (int i = 0; i < kSensors; ++i) {
        auto open = a->pending_targets(named("s", 100 + i));
        ASSERT_TRUE(open.ok()) << open.status();
        EXPECT_EQ(open->size(), 1u) << named("s", 100 + i);
    }
}

// Two replicas' report writers update the same sensors' rows in opposite orders, 512 reports
// a transaction: PostgreSQL picks deadlock victims, and the writer reruns a victim in a new
// transaction after committing the reports before it. Every report is added exactly once.
TEST_F(StorePostgresReplicas, ReportsDeadlockedAcrossReplicasAreRerunNeitherLostNorCountedTwice) {
    constexpr int kSensors = 300;
    ASSERT_TRUE(connect_sensors(*a, 1000, kSensors));
    // Rounds until a writer reran a deadlock victim (each round queues every sensor's report
    // on both, in opposite orders, so their transactions interleave); at most kMaxRounds.
    constexpr int kMaxRounds = 40;
    std::atomic<int> failed{0};
    int rounds = 0;
    auto queue = [&](Store& s, bool up) {
        std::atomic<int> left{kSensors};
        std::promise<void> all;
        for (int k = 0; k < kSensors; ++k) {
            const int i = up ? k : kSensors - 1 - k;
            SensorReport r;
            r.sensor = named("s", 1000 + i);
            r.ts = at(1 + rounds);
            r.deltas.packets = 1;
            r.deltas.bytes = i;
            s.report_async(std::move(r), [&](absl::Status st) {
                if (!st.ok()) {
                    ++failed;
                    ADD_FAILURE() << st;
                }
                if (--left == 0) {
                    all.set_value();
                }
            });
        }
        all.get_future().wait();
    };
    while (rounds < kMaxRounds &&
           a->writer_stats().conflicts_retried + b->writer_stats().conflicts_retried == 0) {
        std::thread ta([&] { queue(*a, true); });
        std::thread tb([&] { queue(*b, false); });
        ta.join();
        tb.join();
        ++rounds;
    }
    EXPECT_EQ(failed.load(), 0);
    EXPECT_GT(a->writer_stats().conflicts_retried + b->writer_stats().conflicts_retried, 0)
        << "no deadlock in " << rounds << " rounds: the rerun path was not exercised";
    for (int i = 0; i < kSensors; ++i) {
        auto runs = a->list_runs(named("s", 1000 + i));
        ASSERT_TRUE(runs.ok()) << runs.status();
        ASSERT_EQ(runs->size(), 1u);
        EXPECT_EQ(runs->back().totals.packets, 2 * rounds) << named("s", 1000 + i);
        EXPECT_EQ(runs->back().totals.bytes, int64_t{2} * rounds * i) << named("s", 1000 + i);
    }
}

// One report of a sensor stored through both replicas at once (a sensor that moved while its
// old stream was still draining): exactly one stores it, the other finds it ALREADY_EXISTS,
// and its counters enter the run once. The sensor's row is held by a third session until both
// writers are waiting, so that both read its report position before either commits.
TEST_F(StorePostgresReplicas, TheSameReportThroughBothReplicasAtOnceIsCountedOnce) {
    ASSERT_TRUE(connect_sensors(*a, 1, 1));
    auto report = [](int64_t seq, int64_t packets) {
        SensorReport r;
        r.sensor = "s1";
        r.ts = at(seq);
        r.boot = "boot-1";
        r.seq = seq;
        r.counters.packets = packets;
        return r;
    };
    ASSERT_TRUE(a->report(report(1, 100)).ok());

    PGconn* holder = PQconnectdb(dsn.c_str());
    ASSERT_EQ(PQstatus(holder), CONNECTION_OK) << PQerrorMessage(holder);
    auto exec = [&](const char* sql) {
        PGresult* res = PQexec(holder, sql);
        const ExecStatusType st = PQresultStatus(res);
        PQclear(res);
        return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    };
    ASSERT_TRUE(exec("BEGIN"));
    ASSERT_TRUE(exec("SELECT 1 FROM sensors WHERE name = 's1' FOR UPDATE"));
    std::promise<absl::Status> pa;
    std::promise<absl::Status> pb;
    a->report_async(report(2, 150), [&](absl::Status st) { pa.set_value(st); });
    b->report_async(report(2, 150), [&](absl::Status st) { pb.set_value(st); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_TRUE(exec("COMMIT"));
    PQfinish(holder);
    const absl::Status sa = pa.get_future().get();
    const absl::Status sb = pb.get_future().get();
    EXPECT_EQ(sa.ok() + sb.ok(), 1) << sa << " / " << sb;
    const absl::Status& dup = sa.ok() ? sb : sa;
    EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists) << dup;
    auto runs = a->list_runs("s1");
    ASSERT_TRUE(runs.ok()) << runs.status();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ(runs->back().totals.packets, 150);
    auto pos = b->report_position("s1");
    ASSERT_TRUE(pos.ok()) << pos.status();
    EXPECT_EQ(pos->seq, 2);
    EXPECT_EQ(pos->counters.packets, 150);
}

// A deploy to every sensor through one replica while the other stores those sensors' reports
// (512 a transaction, in another order): the deploy locks no sensor row, so neither waits for
// the other's rows and both succeed (a deploy locking every target's row was PostgreSQL's
// deadlock victim, UNAVAILABLE to the operator).
TEST_F(StorePostgresReplicas, ADeployThroughOneReplicaWhileTheOtherStoresReportsBothSucceed) {
    constexpr int kSensors = 600;  // more than SizedSql::kMax: pieces of 256, 256, 64, 16, 8
    ASSERT_TRUE(connect_sensors(*a, 1000, kSensors));
    ASSERT_EQ(a->push_bundle(bundle("rules-1"))->version, 1);
    std::atomic<bool> deploying{true};
    std::atomic<int> stored{0}, refused{0};
    std::thread reports([&] {
        for (int round = 0; deploying; ++round) {
            std::atomic<int> left{kSensors};
            std::promise<void> all;
            for (int k = 0; k < kSensors; ++k) {
                SensorReport r;
                r.sensor = named("s", 1000 + (k * 7 + round) % kSensors);
                r.ts = at(1);
                r.deltas.packets = 1;
                b->report_async(std::move(r), [&](absl::Status st) {
                    ++(st.ok() ? stored : refused);
                    if (--left == 0) {
                        all.set_value();
                    }
                });
            }
            all.get_future().wait();
        }
    });
    constexpr int kDeploys = 6;
    int64_t previous = 0;  // ids need not be consecutive (a rerun transaction takes another)
    int64_t last = 0;
    for (int r = 0; r < kDeploys; ++r) {
        NewDeployment d;
        d.bundle_version = 1;
        d.selector = "all";
        d.canary_percent = 10;
        d.actor = "alice";
        d.created_at = at(10 + r);
        auto created = a->create_deployment(d);
        ASSERT_TRUE(created.ok()) << created.status();
        EXPECT_EQ(created->counts.pending, kSensors);
        previous = last;
        last = created->id;
    }
    deploying = false;
    reports.join();
    EXPECT_EQ(refused.load(), 0);
    // The newest deployment holds each sensor's one open target, canaries first by name; the
    // older ones' were taken over, all of them.
    auto got = b->get_deployment(last, true);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->targets.size(), static_cast<size_t>(kSensors));
    EXPECT_EQ(std::count_if(got->targets.begin(), got->targets.end(),
                            [](const Target& t) { return t.stage == Stage::kCanary; }),
              kSensors / 10);
    EXPECT_EQ(got->targets.front().stage, Stage::kCanary);
    EXPECT_EQ(got->targets.back().stage, Stage::kRest);
    auto older = b->get_deployment(previous, false);
    ASSERT_TRUE(older.ok()) << older.status();
    EXPECT_EQ(older->counts.superseded, kSensors);
    EXPECT_EQ(std::count_if(got->targets.begin(), got->targets.end(),
                            [](const Target& t) { return t.state == TargetState::kPending; }),
              kSensors);
    for (int i = 0; i < kSensors / 10; i += 7) {  // canaries: sent before the deployment rolls
        auto open = a->pending_targets(named("s", 1000 + i));
        ASSERT_TRUE(open.ok()) << open.status();
        ASSERT_EQ(open->size(), 1u) << named("s", 1000 + i);
        EXPECT_EQ(open->front().deployment_id, last);
    }
    int64_t packets = 0;
    for (int i = 0; i < kSensors; ++i) {
        packets += a->list_runs(named("s", 1000 + i))->back().totals.packets;
    }
    EXPECT_EQ(packets, stored.load());
}

}  // namespace
}  // namespace picket::manager::store
