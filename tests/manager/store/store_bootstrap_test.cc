// Bootstrap tokens in the store (schema 5): create, list, redeem (the check and the spent use
// in one transaction), expiry, use-up, revocation of the token and of the sensor, readmission,
// imposed labels and renewal.
#include <string>

#include "gtest/gtest.h"
#include "manager/store/store.h"
#include "tests/manager/store/store_fixture.h"

namespace picket::manager::store {
namespace {

using testing::at;
using testing::BackendTest;
using testing::open_store;

const std::string kHash(64, 'a');
const std::string kOtherHash(64, 'b');

class Bootstrap : public BackendTest {
protected:
    void SetUp() override {
        BackendTest::SetUp();
        if (IsSkipped()) {
            return;
        }
        store_ = open_store(dir.file("m.db"));
        ASSERT_NE(store_, nullptr);
    }
    NewBootstrapToken token(const std::string& id, int64_t uses = 2) {
        NewBootstrapToken t;
        t.id = id;
        t.secret_hash = kHash;
        t.uses = uses;
        t.created_at = at(0);
        t.expires_at = at(3600);
        t.labels = {{"site", "lab"}};
        t.actor = "admin";
        return t;
    }
    Redemption redeem(const std::string& id, const std::string& sensor, int64_t ts,
                      const std::string& serial) {
        Redemption r;
        r.token_id = id;
        r.secret_hash = kHash;
        r.sensor = sensor;
        r.cert_serial = serial;
        r.cert_sha256 = "sha-" + serial;
        r.not_after = ts + at(86400) - at(0);
        r.ts = ts;
        return r;
    }
    std::unique_ptr<Store> store_;
};
INSTANTIATE_TEST_SUITE_P(Backends, Bootstrap, testing::kBackends, testing::backend_name);

TEST_P(Bootstrap, CreateListAndRefuseBadTokens) {
    ASSERT_TRUE(store_->create_bootstrap_token(token("abc123")).ok());
    auto dup = store_->create_bootstrap_token(token("abc123"));
    EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
    EXPECT_EQ(dup.message(), "bootstrap token 'abc123' already exists");
    auto bad = token("AB");
    EXPECT_EQ(store_->create_bootstrap_token(bad).message(),
              "bootstrap token id must be 6-16 characters of [a-z0-9]");
    bad = token("abc124", 0);
    EXPECT_EQ(store_->create_bootstrap_token(bad).message(),
              "bootstrap token uses 0 outside 1..10000");
    bad = token("abc125");
    bad.expires_at = bad.created_at;
    EXPECT_EQ(store_->create_bootstrap_token(bad).message(),
              "bootstrap token must expire after it is created");
    auto list = store_->list_bootstrap_tokens();
    ASSERT_TRUE(list.ok());
    ASSERT_EQ(list->size(), 1u);
    const BootstrapToken& t = (*list)[0];
    EXPECT_EQ(t.id, "abc123");
    EXPECT_EQ(t.uses, 2);
    EXPECT_EQ(t.used, 0);
    EXPECT_EQ(t.labels, (std::map<std::string, std::string>{{"site", "lab"}}));
    EXPECT_EQ(t.state(at(1)), "active");
    EXPECT_EQ(t.state(at(3600)), "expired");
    EXPECT_EQ(*store_->bootstrap_secret_matches("abc123", kHash), true);
    EXPECT_EQ(*store_->bootstrap_secret_matches("abc123", kOtherHash), false);
    auto missing = store_->get_bootstrap_token("zzzzzz");
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(missing.status().message(), "bootstrap token 'zzzzzz' unknown");
}

TEST_P(Bootstrap, RedeemSpendsUsesImposesLabelsAndUsesUp) {
    ASSERT_TRUE(store_->create_bootstrap_token(token("abc123")).ok());
    auto a = store_->redeem_bootstrap_token(redeem("abc123", "edge-a", at(10), "01"));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->used, 1);
    auto b = store_->redeem_bootstrap_token(redeem("abc123", "edge-b", at(11), "02"));
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(b->used, 2);
    auto c = store_->redeem_bootstrap_token(redeem("abc123", "edge-c", at(12), "03"));
    EXPECT_EQ(c.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(c.status().message(), "bootstrap token 'abc123' is used up (2 of 2 uses)");
    EXPECT_EQ(store_->get_bootstrap_token("abc123")->state(at(13)), "used_up");
    EXPECT_EQ(store_->get_sensor("edge-c").status().code(), absl::StatusCode::kNotFound);
    // A sensor in use cannot be enrolled again, not even with a fresh token.
    ASSERT_TRUE(store_->create_bootstrap_token(token("def456")).ok());
    auto again = store_->redeem_bootstrap_token(redeem("def456", "edge-a", at(12), "04"));
    EXPECT_EQ(again.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(again.status().message(),
              "sensor 'edge-a' already exists; to give it a new key, revoke and readmit it first "
              "(picketctl sensor revoke edge-a; picketctl sensor readmit edge-a)");
    EXPECT_EQ(store_->get_bootstrap_token("def456")->used, 0);

    // The sensor connects with its certificate; the token's label wins over its own.
    SensorHello h;
    h.name = "edge-a";
    h.auth = SensorAuth::kCertificate;
    h.cert_sha256 = "sha-01";
    h.labels = {{"site", "paris"}, {"rack", "7"}};
    auto s = store_->connect_sensor(h, at(20), true);
    ASSERT_TRUE(s.ok()) << s.status();
    const std::map<std::string, std::string> want{{"site", "lab"}, {"rack", "7"}};
    EXPECT_EQ(s->labels, want);
    EXPECT_EQ(store_->get_sensor("edge-a")->labels, want);
    auto selected = store_->select_sensors("label=site=lab");
    ASSERT_TRUE(selected.ok());
    EXPECT_EQ(selected->size(), 2u);
}

TEST_P(Bootstrap, WrongSecretExpiredAndRevokedTokensRefused) {
    ASSERT_TRUE(store_->create_bootstrap_token(token("abc123")).ok());
    Redemption wrong = redeem("abc123", "edge-a", at(10), "01");
    wrong.secret_hash = kOtherHash;
    auto r = store_->redeem_bootstrap_token(wrong);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(r.status().message(), "bootstrap token 'abc123' unknown");
    r = store_->redeem_bootstrap_token(redeem("nosuch", "edge-a", at(10), "01"));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(r.status().message(), "bootstrap token 'nosuch' unknown");
    r = store_->redeem_bootstrap_token(redeem("abc123", "edge-a", at(3600), "01"));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(r.status().message(), "bootstrap token 'abc123' expired at 2023-11-14T23:13:00Z");
    EXPECT_EQ(*store_->revoke_bootstrap_token("abc123", at(20), "admin"), true);
    EXPECT_EQ(*store_->revoke_bootstrap_token("abc123", at(21), "admin"), false);
    r = store_->redeem_bootstrap_token(redeem("abc123", "edge-a", at(30), "01"));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(r.status().message(), "bootstrap token 'abc123' is revoked");
    EXPECT_EQ(store_->get_bootstrap_token("abc123")->used, 0);
    EXPECT_EQ(store_->revoke_bootstrap_token("zzzzzz", at(22), "admin").status().code(),
              absl::StatusCode::kNotFound);
}

TEST_P(Bootstrap, RevokedSensorNeedsReadmitAndItsCertificatesStayRevoked) {
    ASSERT_TRUE(store_->create_bootstrap_token(token("abc123", 3)).ok());
    ASSERT_TRUE(store_->redeem_bootstrap_token(redeem("abc123", "edge-a", at(10), "01")).ok());
    ASSERT_TRUE(*store_->revoke_sensor("edge-a", at(20), "admin"));
    auto r = store_->redeem_bootstrap_token(redeem("abc123", "edge-a", at(30), "02"));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(r.status().message(),
              "sensor 'edge-a' is revoked; readmit it first: picketctl sensor readmit edge-a");
    EXPECT_EQ(store_->get_bootstrap_token("abc123")->used, 1);
    EXPECT_EQ(*store_->readmit_sensor("edge-a", at(40), "admin"), true);
    EXPECT_EQ(*store_->readmit_sensor("edge-a", at(41), "admin"), false);
    EXPECT_EQ(store_->readmit_sensor("nobody", at(41), "admin").status().code(),
              absl::StatusCode::kNotFound);
    ASSERT_TRUE(store_->redeem_bootstrap_token(redeem("abc123", "edge-a", at(50), "02")).ok());
    // Readmission allows one enrollment.
    EXPECT_EQ(
        store_->redeem_bootstrap_token(redeem("abc123", "edge-a", at(51), "09")).status().code(),
        absl::StatusCode::kPermissionDenied);
    // Certificate 01 was signed for it but never presented: revoked with it all the same.
    SensorHello h;
    h.name = "edge-a";
    h.auth = SensorAuth::kCertificate;
    h.cert_sha256 = "sha-01";
    auto old = store_->connect_sensor(h, at(60), true);
    EXPECT_EQ(old.status().code(), absl::StatusCode::kPermissionDenied);
    h.cert_sha256 = "sha-02";
    EXPECT_TRUE(store_->connect_sensor(h, at(61), true).ok());
    // Renewal: recorded for a sensor in good standing, refused with a revoked certificate.
    EXPECT_TRUE(store_->record_renewal("edge-a", "sha-02", "03", "sha-03", at(90000), at(70)).ok());
    auto bad = store_->record_renewal("edge-a", "sha-01", "04", "sha-04", at(90000), at(71));
    EXPECT_EQ(bad.code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(bad.message(), "the client certificate of sensor 'edge-a' was revoked");
    ASSERT_TRUE(*store_->revoke_sensor("edge-a", at(80), "admin"));
    auto revoked = store_->record_renewal("edge-a", "sha-09", "05", "sha-05", at(90000), at(81));
    EXPECT_EQ(revoked.code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(revoked.message(), "sensor 'edge-a' is revoked");
    h.cert_sha256 = "sha-03";  // the renewed one went with the revocation too
    ASSERT_TRUE(*store_->readmit_sensor("edge-a", at(90), "admin"));
    EXPECT_EQ(store_->connect_sensor(h, at(91), true).status().code(),
              absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace picket::manager::store
