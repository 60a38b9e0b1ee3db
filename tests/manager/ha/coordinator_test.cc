#include "manager/ha/coordinator.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tests/support/postgres_server.h"
#include "tests/support/wait.h"

namespace picket::manager::ha {
namespace {

using namespace std::chrono_literals;
using picket::testing::wait_until;

TEST(ChangeCodec, RoundTripsKindOriginAndPayload) {
    Change c{"deployment", "42", "mgr-a:7443"};
    EXPECT_EQ(encode_change(c), "deployment\tmgr-a:7443\t42");
    Change d;
    ASSERT_TRUE(decode_change("revoke\tmgr-b:7443\tsensor\twith tab", &d));
    EXPECT_EQ(d.kind, "revoke");
    EXPECT_EQ(d.origin, "mgr-b:7443");
    EXPECT_EQ(d.payload, "sensor\twith tab");
    EXPECT_FALSE(decode_change("no tabs", &d));
    EXPECT_FALSE(decode_change("\torigin\tpayload", &d));  // empty kind
    EXPECT_FALSE(decode_change("kind\tno payload field", &d));
    EXPECT_EQ(encode_change(Change{"k", std::string(9000, 'x'), "o"}).size(), 7900u);
}

TEST(LocalCoordinator, LeadsFromStartAndDeliversItsOwnChanges) {
    auto c = make_local_coordinator("mgr:7443");
    EXPECT_EQ(c->role(), Role::kUnavailable);
    std::vector<Change> got;
    std::vector<Role> roles;
    c->start([&](const Change& ch) { got.push_back(ch); }, [&](Role r) { roles.push_back(r); });
    EXPECT_TRUE(c->is_leader());
    c->publish("deployment", "7");
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].kind, "deployment");
    EXPECT_EQ(got[0].payload, "7");
    EXPECT_EQ(got[0].origin, "mgr:7443");
    EXPECT_EQ(roles, std::vector<Role>{Role::kLeader});
    c->stop();
    c->publish("deployment", "8");
    EXPECT_EQ(got.size(), 1u);
    EXPECT_EQ(c->role(), Role::kUnavailable);
}

TEST(PgCoordinatorOptions, RefusesWhatCannotWork) {
    EXPECT_EQ(make_pg_coordinator({}).status().message(), "coordinator: empty database address");
    PgCoordinatorOptions o;
    o.dsn = "postgresql://x@127.0.0.1:1/db";
    EXPECT_EQ(make_pg_coordinator(o).status().code(), absl::StatusCode::kInvalidArgument);
    o.replica = "a\tb";
    EXPECT_EQ(make_pg_coordinator(o).status().code(), absl::StatusCode::kInvalidArgument);
    o.replica = "a";
    o.tick = 0ms;
    EXPECT_EQ(make_pg_coordinator(o).status().code(), absl::StatusCode::kInvalidArgument);
    o.tick = 100ms;
    EXPECT_TRUE(make_pg_coordinator(o).ok());
}

// One replica under test: its coordinator and what it saw.
struct Replica {
    std::unique_ptr<Coordinator> c;
    std::mutex mu;
    std::vector<Change> changes;
    std::vector<Role> roles;

    Replica(const std::string& dsn, const std::string& name) {
        PgCoordinatorOptions o;
        o.dsn = dsn;
        o.replica = name;
        o.tick = 100ms;
        o.reconnect_max = 400ms;
        c = std::move(make_pg_coordinator(o).value());
        c->start(
            [this](const Change& ch) {
                std::lock_guard<std::mutex> lock(mu);
                changes.push_back(ch);
            },
            [this](Role r) {
                std::lock_guard<std::mutex> lock(mu);
                roles.push_back(r);
            });
    }
    ~Replica() { c->stop(); }  // before the vectors its callbacks fill go
    size_t count(const std::string& kind, const std::string& payload = {}) {
        std::lock_guard<std::mutex> lock(mu);
        size_t n = 0;
        for (const Change& ch : changes) {
            n += ch.kind == kind && (payload.empty() || ch.payload == payload) ? 1 : 0;
        }
        return n;
    }
};

class PgCoordinatorTest : public ::testing::Test {
protected:
    // A server of the suite's own (not the CTest run's shared one): the tests stop it, and the
    // leader lock and the channel are per database.
    static void SetUpTestSuite() {
        server_ = picket::testing::PostgresServer::start(&why_).release();
    }
    static void TearDownTestSuite() {
        delete server_;
        server_ = nullptr;
    }
    void SetUp() override {
        if (server_ == nullptr) {
            GTEST_SKIP() << why_;
        }
    }
    static std::string dsn() {
        return "postgresql://picket@127.0.0.1:" + std::to_string(server_->port()) + "/postgres";
    }
    // Runs one statement on a fresh connection; the first value of the first row.
    static std::string sql(const std::string& q) {
        PGconn* c = PQconnectdb(dsn().c_str());
        std::string v;
        if (PQstatus(c) == CONNECTION_OK) {
            PGresult* r = PQexec(c, q.c_str());
            if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0) {
                v = PQgetvalue(r, 0, 0);
            }
            PQclear(r);
        }
        PQfinish(c);
        return v;
    }
    static picket::testing::PostgresServer* server_;
    static std::string why_;
};
picket::testing::PostgresServer* PgCoordinatorTest::server_ = nullptr;
std::string PgCoordinatorTest::why_;

TEST_F(PgCoordinatorTest, OneLeaderAndEveryReplicaGetsEveryChange) {
    Replica a(dsn(), "a:7443");
    Replica b(dsn(), "b:7443");
    Replica c(dsn(), "c:7443");
    auto leaders = [&] {
        return int(a.c->is_leader()) + int(b.c->is_leader()) + int(c.c->is_leader());
    };
    ASSERT_TRUE(wait_until([&] { return leaders() == 1; }, 10s, "exactly one leader"));
    ASSERT_TRUE(wait_until(
        [&] {
            return a.c->role() != Role::kUnavailable && b.c->role() != Role::kUnavailable &&
                   c.c->role() != Role::kUnavailable;
        },
        10s, "every replica listening"));
    a.c->publish("deployment", "12");
    b.c->publish("revoke", "s7");
    for (Replica* r : {&a, &b, &c}) {
        ASSERT_TRUE(wait_until([&] { return r->count("deployment", "12") == 1; }, 10s,
                               r->c->replica() + " to see deployment 12 once"));
        ASSERT_TRUE(wait_until([&] { return r->count("revoke", "s7") == 1; }, 10s,
                               r->c->replica() + " to see the revocation once"));
    }
    std::lock_guard<std::mutex> lock(c.mu);
    for (const Change& ch : c.changes) {
        if (ch.kind == "deployment") {
            EXPECT_EQ(ch.origin, "a:7443");
        }
        if (ch.kind == "revoke") {
            EXPECT_EQ(ch.origin, "b:7443");
        }
    }
    EXPECT_EQ(leaders(), 1);
}

TEST_F(PgCoordinatorTest, ALeaderWhoseConnectionDiesIsReplacedWithinSeconds) {
    Replica a(dsn(), "a:7443");
    ASSERT_TRUE(wait_until([&] { return a.c->is_leader(); }, 10s, "a to lead alone"));
    Replica b(dsn(), "b:7443");
    ASSERT_TRUE(wait_until([&] { return b.c->role() == Role::kFollower; }, 10s, "b to follow"));
    // What a kill -9 of a's process does to its session: the server ends it, frees its lock.
    EXPECT_EQ(sql("SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = "
                  "'advisory' AND granted"),
              "1");
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(wait_until([&] { return b.c->is_leader(); }, 10s, "b to take over"));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
    // a noticed, reconnected as a follower, and was told it may have missed changes.
    ASSERT_TRUE(
        wait_until([&] { return a.c->role() == Role::kFollower; }, 10s, "a back as a follower"));
    ASSERT_TRUE(wait_until([&] { return a.count("reconcile") == 1; }, 10s, "a's reconcile"));
    EXPECT_EQ(b.count("reconcile"), 0u);
    // A clean stop hands over at once.
    b.c->stop();
    ASSERT_TRUE(wait_until([&] { return a.c->is_leader(); }, 10s, "a to lead again"));
}

TEST_F(PgCoordinatorTest, DatabaseAwayMakesEveryReplicaUnavailableUntilItReturns) {
    Replica a(dsn(), "a:7443");
    Replica b(dsn(), "b:7443");
    ASSERT_TRUE(wait_until(
        [&] {
            return a.c->role() != Role::kUnavailable && b.c->role() != Role::kUnavailable &&
                   a.c->is_leader() != b.c->is_leader();
        },
        10s, "one leader and one follower"));
    ASSERT_TRUE(server_->stop());
    ASSERT_TRUE(wait_until(
        [&] { return a.c->role() == Role::kUnavailable && b.c->role() == Role::kUnavailable; }, 10s,
        "both unavailable without the database"));
    a.c->publish("deployment", "99");  // queued until the link is back
    ASSERT_TRUE(server_->restart());
    ASSERT_TRUE(wait_until([&] { return a.c->is_leader() != b.c->is_leader(); }, 15s,
                           "one leader again once the database is back"));
    ASSERT_TRUE(wait_until([&] { return a.count("reconcile") == 1 && b.count("reconcile") == 1; },
                           10s, "each replica told to reconcile"));
    // Sent once a is back, to whoever listens by then (a itself at least; a replica that
    // came back later has its reconcile instead).
    ASSERT_TRUE(wait_until([&] { return a.count("deployment", "99") == 1; }, 10s,
                           "the change queued during the outage"));
    b.c->publish("deployment", "100");
    ASSERT_TRUE(wait_until([&] { return a.count("deployment", "100") == 1; }, 10s,
                           "a change after the outage"));
}

}  // namespace
}  // namespace picket::manager::ha
