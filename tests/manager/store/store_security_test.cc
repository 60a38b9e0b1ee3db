// Store side of the fleet's security controls: revocation (sensors, their tokens and
// certificates, their reports, their deployment targets), token rules per authentication
// method, and the database's file modes whatever the umask (docs/security.md).
#include <sqlite3.h>
#include <sys/stat.h>

#include <string>

#include "gtest/gtest.h"
#include "manager/store/store.h"
#include "tests/manager/store/store_fixture.h"

namespace picket::manager::store {
namespace {

using testing::at;
using testing::backend_name;
using testing::BackendTest;
using testing::kBackends;
using testing::mode_of;
using testing::open_store;
using testing::TempDir;

constexpr const char* kTempPrefix = "picket-store-sec";

SensorHello token_hello(const std::string& name, const std::string& token_hash) {
    SensorHello h;
    h.name = name;
    h.host = name + ".example";
    h.token_hash = token_hash;
    h.auth = SensorAuth::kToken;
    return h;
}

SensorHello cert_hello(const std::string& name, const std::string& cert_sha256) {
    SensorHello h;
    h.name = name;
    h.host = name + ".example";
    h.auth = SensorAuth::kCertificate;
    h.cert_sha256 = cert_sha256;
    return h;
}

class StoreRevoke : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreRevoke, kBackends, backend_name);

TEST_P(StoreRevoke, TokenSensorRefusedUntilReEnrolledWithANewToken) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->enroll_sensor("s1", "hash1", at(0), "admin").ok());
    ASSERT_TRUE(store->connect_sensor(token_hello("s1", "hash1"), at(1), false).ok());

    auto first = store->revoke_sensor("s1", at(2), "admin");
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_TRUE(*first);
    auto again = store->revoke_sensor("s1", at(3), "admin");
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(*again);  // already revoked: nothing changes, revoked_at stays
    auto s = store->get_sensor("s1");
    ASSERT_TRUE(s.ok());
    EXPECT_TRUE(s->revoked);
    EXPECT_EQ(s->revoked_at, at(2));
    EXPECT_FALSE(s->enrolled);  // the token is forgotten

    auto refused = store->connect_sensor(token_hello("s1", "hash1"), at(4), false);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(refused.status().message(),
              "sensor 's1' is revoked (re-enroll it to let it back in: picket-manager --enroll "
              "s1)");
    // Even --insecure (kNone) and a certificate cannot bring a revoked name back.
    SensorHello insecure;
    insecure.name = "s1";
    EXPECT_EQ(store->connect_sensor(insecure, at(4), true).status().code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(store->connect_sensor(cert_hello("s1", "c-new"), at(4), true).status().code(),
              absl::StatusCode::kPermissionDenied);

    SensorReport r;
    r.sensor = "s1";
    r.ts = at(5);
    r.samples = {{"decoder.pkts", 10}};
    absl::Status report = store->report(r);
    EXPECT_EQ(report.code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(report.message(), "sensor 's1' is revoked");
    EXPECT_EQ(store->metric_history("s1", "decoder.pkts", 0, at(100))->size(), 0u);

    EXPECT_EQ(store->revoke_sensor("nope", at(5), "admin").status().code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(store->revoke_sensor("all", at(5), "admin").status().code(),
              absl::StatusCode::kInvalidArgument);

    // Re-enrolling lifts the revocation with a new token; the old one stays wrong.
    ASSERT_TRUE(store->enroll_sensor("s1", "hash2", at(6), "picket-manager --enroll").ok());
    s = store->get_sensor("s1");
    EXPECT_FALSE(s->revoked);
    EXPECT_EQ(s->revoked_at, 0);
    EXPECT_TRUE(s->enrolled);
    EXPECT_EQ(store->connect_sensor(token_hello("s1", "hash1"), at(7), false).status().code(),
              absl::StatusCode::kAlreadyExists);
    EXPECT_TRUE(store->connect_sensor(token_hello("s1", "hash2"), at(7), false).ok());
    r.ts = at(8);
    EXPECT_TRUE(store->report(r).ok());

    auto events = store->history("s1", 10);
    ASSERT_TRUE(events.ok());
    std::vector<std::string> kinds;
    for (const Event& e : *events) {
        kinds.push_back(e.kind);
    }
    EXPECT_EQ(kinds, (std::vector<std::string>{"sensor.enroll", "sensor.revoke", "sensor.enroll"}));
    EXPECT_EQ((*events)[0].message, "re-enrolled: revocation lifted");
}

TEST_P(StoreRevoke, EnrolledSensorNeedsRevocationBeforeANewToken) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->enroll_sensor("s1", "hash1", at(0), "admin").ok());
    absl::Status dup = store->enroll_sensor("s1", "hash2", at(1), "admin");
    EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
    EXPECT_EQ(dup.message(),
              "sensor name 's1' is already enrolled with a different token (to issue a new one, "
              "revoke it first: picketctl sensor revoke s1)");
}

TEST_P(StoreRevoke, RevokedCertificateStaysRefusedAfterReEnrollment) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(cert_hello("s1", "cert-a"), at(0), true).ok());
    ASSERT_TRUE(store->revoke_sensor("s1", at(1), "admin").ok());
    ASSERT_TRUE(store->enroll_sensor("s1", "hash1", at(2), "admin").ok());

    auto old_cert = store->connect_sensor(cert_hello("s1", "cert-a"), at(3), true);
    EXPECT_EQ(old_cert.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(old_cert.status().message(),
              "the client certificate of sensor 's1' was revoked; issue it a new certificate "
              "(picketctl pki issue)");
    // A new certificate and the new token both work.
    EXPECT_TRUE(store->connect_sensor(cert_hello("s1", "cert-b"), at(4), true).ok());
    EXPECT_TRUE(store->connect_sensor(token_hello("s1", "hash1"), at(5), false).ok());
    auto events = store->history("s1", 10);
    ASSERT_TRUE(events.ok());
    EXPECT_EQ((*events)[1].kind, "sensor.revoke");
    EXPECT_EQ((*events)[1].message, "certificate cert-a revoked");
}

TEST_P(StoreRevoke, TokenIsRefusedForACertificateSensor) {
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(cert_hello("s1", "cert-a"), at(0), true).ok());
    // Without this rule, anyone knowing the name could connect with any token.
    auto any_token = store->connect_sensor(token_hello("s1", "whatever"), at(1), false);
    EXPECT_EQ(any_token.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(any_token.status().message(),
              "sensor 's1' has no enrollment token (it authenticates with a client certificate)");
    // A certificate sensor that was also enrolled keeps using its certificate.
    ASSERT_TRUE(store->enroll_sensor("s2", "hash2", at(0), "admin").ok());
    EXPECT_TRUE(store->connect_sensor(cert_hello("s2", "cert-2"), at(1), true).ok());
}

TEST_P(StoreRevoke, OpenTargetsCancelledAndRevokedSensorsNeverTargeted) {
    auto store = open_store(dir.file("m.db"));
    for (const char* n : {"a", "b"}) {
        SensorHello h = cert_hello(n, std::string("cert-") + n);
        h.labels = {{"env", n}};
        ASSERT_TRUE(store->connect_sensor(h, at(0), true).ok());
    }
    NewBundle nb;
    nb.name = "et-open";
    nb.created_at = at(1);
    nb.blob = "rules-1";
    ASSERT_EQ(store->push_bundle(nb)->version, 1);
    NewDeployment d;
    d.bundle_version = 1;
    d.selector = "all";
    d.actor = "alice";
    d.created_at = at(2);
    auto dep = store->create_deployment(d);
    ASSERT_TRUE(dep.ok()) << dep.status();
    ASSERT_TRUE(store->update_target(dep->id, "a", TargetState::kSent, "", at(3)).ok());
    ASSERT_TRUE(store->update_target(dep->id, "a", TargetState::kApplied, "", at(4)).ok());
    ASSERT_TRUE(store->update_target(dep->id, "b", TargetState::kSent, "", at(3)).ok());

    ASSERT_TRUE(store->revoke_sensor("b", at(5), "admin").ok());
    auto after = store->get_deployment(dep->id);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->state, DeploymentState::kCompleted);  // nothing left to wait for
    ASSERT_EQ(after->targets.size(), 2u);
    EXPECT_EQ(after->targets[1].sensor, "b");
    EXPECT_EQ(after->targets[1].state, TargetState::kSuperseded);
    EXPECT_EQ(after->targets[1].error, "sensor revoked");
    EXPECT_EQ(after->targets[1].finished_at, at(5));
    EXPECT_EQ(store->pending_targets("b")->size(), 0u);

    d.created_at = at(6);
    auto all = store->create_deployment(d);  // "all" skips the revoked sensor
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->targets.size(), 1u);
    EXPECT_EQ(all->targets[0].sensor, "a");
    d.selector = "b";
    auto named = store->create_deployment(d);
    EXPECT_EQ(named.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(named.status().message(), "sensor 'b' is revoked");
    d.selector = "label=env=b";
    auto labelled = store->create_deployment(d);
    EXPECT_EQ(labelled.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(labelled.status().message(),
              "selector 'label=env=b' matches no sensor that is not revoked");
}

TEST(StoreRevokeSqlite, MigrationFromVersionTwoKeepsSensorsNotRevoked) {
    TempDir dir(kTempPrefix);
    std::string path = dir.file("m.db");
    {
        StoreOptions opt;
        opt.max_schema_version = 2;
        auto store = open_store(path, opt);
        ASSERT_NE(store, nullptr);
        EXPECT_EQ(store->schema_version(), 2);
    }
    // A version 2 row (today's store code expects the latest schema).
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db,
                           "INSERT INTO sensors(name, token_hash, enrolled_at) "
                           "VALUES('s1', 'hash1', 0)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    auto store = open_store(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 9);
    auto s = store->get_sensor("s1");
    ASSERT_TRUE(s.ok());
    EXPECT_FALSE(s->revoked);
    EXPECT_TRUE(s->enrolled);
    EXPECT_TRUE(store->connect_sensor(token_hello("s1", "hash1"), at(1), false).ok());
}

TEST(StoreFiles, PrivateModesWhateverTheUmask) {
    TempDir dir(kTempPrefix);
    std::string path = dir.file("m.db");
    mode_t old = umask(0);  // the most permissive umask a service could inherit
    {
        auto store = open_store(path);
        ASSERT_NE(store, nullptr);
        ASSERT_TRUE(store->enroll_sensor("s1", "hash1", at(0), "admin").ok());
        EXPECT_EQ(mode_of(path), 0600);
        EXPECT_EQ(mode_of(path + "-wal"), 0600);
        EXPECT_EQ(mode_of(path + "-shm"), 0600);
    }
    umask(old);
}

}  // namespace
}  // namespace picket::manager::store
