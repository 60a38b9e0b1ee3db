// check_credentials and a host clock that disagrees with the certificates' validity period:
// the sensor must still start (and inspect); only files that do not load or chain refuse it.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "common/pki/pki.h"
#include "gtest/gtest.h"
#include "sensor/agent/agent.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ClockTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.path();
        ASSERT_TRUE(pki::init_ca(dir_ / "fleet", "Fleet CA", 30).ok());
        ASSERT_TRUE(pki::init_ca(dir_ / "other", "Other CA", 30).ok());
    }

    AgentOptions options(const std::string& name, const fs::path& ca_dir) {
        AgentOptions o;
        o.manager = "127.0.0.1:1";
        o.name = name;
        o.state_dir = dir_ / "state";
        o.tls_cert = (dir_ / "fleet" / (name + ".crt")).string();
        o.tls_key = (dir_ / "fleet" / (name + ".key")).string();
        o.ca = (ca_dir / "ca.crt").string();
        return o;
    }

    picket::testing::TempDir tmp_{"picket-agent-clock"};
    fs::path dir_;
};

TEST_F(ClockTest, NotYetValidCertificateStillStarts) {
    // notBefore two days ahead: what a sensor whose clock is a day behind sees.
    ASSERT_TRUE(pki::issue(dir_ / "fleet", pki::CertKind::kSensor, "ahead", {}, 30,
                           std::chrono::seconds(-2 * 86400))
                    .ok());
    auto creds = pki::load_credentials(dir_ / "fleet" / "ahead.crt", dir_ / "fleet" / "ahead.key",
                                       dir_ / "fleet" / "ca.crt", pki::Purpose::kClient);
    ASSERT_FALSE(creds.ok());
    EXPECT_TRUE(is_validity_period_error(creds.status())) << creds.status();
    EXPECT_TRUE(check_credentials(options("ahead", dir_ / "fleet")).ok());
}

TEST_F(ClockTest, ExpiredCertificateStillStarts) {
    // Valid 30 days, issued 40 days ago: what a sensor whose clock is far ahead sees.
    ASSERT_TRUE(pki::issue(dir_ / "fleet", pki::CertKind::kSensor, "old", {}, 30,
                           std::chrono::seconds(40 * 86400))
                    .ok());
    auto creds = pki::load_credentials(dir_ / "fleet" / "old.crt", dir_ / "fleet" / "old.key",
                                       dir_ / "fleet" / "ca.crt", pki::Purpose::kClient);
    ASSERT_FALSE(creds.ok());
    EXPECT_TRUE(is_validity_period_error(creds.status())) << creds.status();
    EXPECT_TRUE(check_credentials(options("old", dir_ / "fleet")).ok());
}

TEST_F(ClockTest, FilesThatDoNotChainOrLoadAreStillRefused) {
    ASSERT_TRUE(pki::issue(dir_ / "fleet", pki::CertKind::kSensor, "s1", {}, 30).ok());
    EXPECT_TRUE(check_credentials(options("s1", dir_ / "fleet")).ok());
    absl::Status other = check_credentials(options("s1", dir_ / "other"));
    EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(is_validity_period_error(other)) << other;
    AgentOptions missing = options("s1", dir_ / "fleet");
    missing.tls_key = (dir_ / "missing.key").string();
    EXPECT_FALSE(check_credentials(missing).ok());
}

TEST(ValidityPeriodError, OnlyPkiValidityMessages) {
    EXPECT_TRUE(is_validity_period_error(absl::FailedPreconditionError(
        "a.crt: certificate is not valid before 2026-12-01T00:00:00Z (check the clocks)")));
    EXPECT_TRUE(is_validity_period_error(
        absl::FailedPreconditionError("a.crt: certificate expired on 2026-12-01T00:00:00Z")));
    EXPECT_FALSE(is_validity_period_error(
        absl::InvalidArgumentError("a.crt: certificate expired on 2026-12-01T00:00:00Z")));
    EXPECT_FALSE(is_validity_period_error(
        absl::FailedPreconditionError("a.crt: certificate is not signed by a CA in ca.crt")));
    EXPECT_FALSE(is_validity_period_error(absl::OkStatus()));
}

}  // namespace
}  // namespace picket::sensor::agent
