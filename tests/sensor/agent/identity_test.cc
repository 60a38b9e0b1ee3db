// The enrolled identity in the sensor's state directory (sensor/agent/enroll.cc): the key and
// certificate files and their modes, the atomic swap of STATE/tls on renewal, the option
// checks of --bootstrap-token-file, and a stored identity reused (or refused for another name)
// without any RPC.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/pki/pki.h"
#include "gtest/gtest.h"
#include "sensor/agent/agent.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

int mode_of(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
}

std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

class Identity : public ::testing::Test {
protected:
    void SetUp() override {
        pki_ = tmp_.path() / "pki";
        state_ = tmp_.path() / "state";
        fs::create_directories(state_);
        ASSERT_TRUE(pki::init_ca(pki_, "test CA").ok());
        auto ca = pki::load_ca(pki_ / "ca.crt", pki_ / "ca.key");
        ASSERT_TRUE(ca.ok());
        ca_ = *ca;
    }
    // A key and a certificate for `name`, as the manager would sign them.
    std::pair<std::string, std::string> pair(const std::string& name) {
        auto made = pki::make_csr(name);
        EXPECT_TRUE(made.ok());
        auto cert = pki::sign_csr(ca_, made->csr_pem, pki::CertKind::kSensor, 3600s);
        EXPECT_TRUE(cert.ok());
        return {made->key_pem, cert->cert_pem};
    }
    AgentOptions options(const std::string& name) {
        AgentOptions o;
        o.manager = "127.0.0.1:1";
        o.name = name;
        o.ca = (pki_ / "ca.crt").string();
        o.state_dir = state_;
        o.bootstrap = true;
        o.bootstrap_token = "abcdef." + std::string(43, 'a');
        return o;
    }
    picket::testing::TempDir tmp_{"picket-agent-identity"};
    fs::path pki_, state_;
    pki::CaSigner ca_;
};

TEST_F(Identity, InstallWritesPrivateKeyAndSwapsAtomically) {
    auto [key1, cert1] = pair("edge-a");
    ASSERT_TRUE(install_identity(state_, key1, cert1).ok());
    const IdentityFiles files = identity_files(state_);
    EXPECT_EQ(files.key, state_ / "tls" / "sensor.key");
    EXPECT_TRUE(fs::is_symlink(state_ / "tls"));
    EXPECT_EQ(mode_of(files.key), 0600);
    EXPECT_EQ(mode_of(files.cert), 0644);
    EXPECT_EQ(read(files.key), key1);
    const fs::path first = fs::read_symlink(state_ / "tls");

    auto [key2, cert2] = pair("edge-a");
    ASSERT_TRUE(install_identity(state_, key2, cert2).ok());
    EXPECT_EQ(read(files.key), key2);
    EXPECT_EQ(read(files.cert), cert2);
    EXPECT_NE(fs::read_symlink(state_ / "tls"), first);
    EXPECT_FALSE(fs::exists(state_ / first));  // the old key went with its directory
    EXPECT_FALSE(fs::exists(state_ / ".tls.new"));
    auto creds =
        pki::load_credentials(files.cert, files.key, pki_ / "ca.crt", pki::Purpose::kClient);
    EXPECT_TRUE(creds.ok()) << creds.status();
}

TEST_F(Identity, StoredIdentityIsReusedWithoutEnrolling) {
    auto [key, cert] = pair("edge-a");
    ASSERT_TRUE(install_identity(state_, key, cert).ok());
    AgentOptions o = options("edge-a");
    // The manager address is closed: reaching it would block and retry, not return.
    ASSERT_TRUE(ensure_identity(o).ok());
    EXPECT_EQ(o.tls_cert, (state_ / "tls" / "sensor.crt").string());
    EXPECT_EQ(o.tls_key, (state_ / "tls" / "sensor.key").string());
    auto when = renewal_time(o);
    ASSERT_TRUE(when.ok());
    const auto now = std::chrono::system_clock::now();
    EXPECT_GT(*when, now + 2200s);  // 3600 s + 300 s backdate: renew with 1300 s left
    EXPECT_LT(*when, now + 2400s);
}

TEST_F(Identity, AnotherSensorsStateDirectoryIsRefused) {
    auto [key, cert] = pair("edge-b");
    ASSERT_TRUE(install_identity(state_, key, cert).ok());
    AgentOptions o = options("edge-a");
    absl::Status st = ensure_identity(o);
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(st.message(), (state_ / "tls" / "sensor.crt").string() +
                                " is the certificate of sensor 'edge-b', not of --name 'edge-a' "
                                "(use another --state-dir)");
    EXPECT_TRUE(o.tls_cert.empty());
}

TEST_F(Identity, MalformedTokenIsRefusedWithoutRetrying) {
    AgentOptions o = options("edge-a");
    o.bootstrap_token = "no-dot-here";
    absl::Status st = ensure_identity(o);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(),
              "enrollment refused: INVALID_ARGUMENT: --bootstrap-token-file: "
              "bootstrap token: expected the form ID.SECRET");
    EXPECT_FALSE(fs::exists(state_ / "tls"));
}

TEST_F(Identity, BootstrapOptionChecks) {
    AgentOptions o = options("edge-a");
    EXPECT_TRUE(validate_options(o).ok());
    o.tls_cert = "x.crt";
    o.tls_key = "x.key";
    EXPECT_EQ(validate_options(o).message(),
              "--bootstrap-token-file cannot be combined with --tls-cert / --tls-key (the "
              "enrolled key and certificate live in the state directory)");
    o = options("edge-a");
    o.ca.clear();
    EXPECT_EQ(validate_options(o).message(),
              "--bootstrap-token-file needs --ca (the fleet CA that signed the manager's "
              "certificate)");
    o = options("edge-a");
    o.token = "t";
    EXPECT_EQ(validate_options(o).message(),
              "--bootstrap-token-file and --token cannot be combined");
    o = options("edge-a");
    o.insecure = true;
    EXPECT_EQ(validate_options(o).message(),
              "--bootstrap-token-file needs TLS: it cannot be combined with --insecure");
    o = options("edge-a");
    o.bootstrap = false;
    EXPECT_EQ(validate_options(o).message(),
              "no sensor credentials: give --token T, --tls-cert F --tls-key F or "
              "--bootstrap-token-file F");
}

}  // namespace
}  // namespace picket::sensor::agent
