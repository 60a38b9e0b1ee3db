// Enrollment in common/pki: CSRs made by the sensor, checked and signed by the manager, and
// bootstrap tokens. Every refusal is checked with its exact message.
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/pki/pki.h"
#include "tests/common/pki/pki_test_util.h"

namespace picket::pki {
namespace {

using test_util::read_file;
using test_util::TempDir;
using namespace std::chrono_literals;

struct PkeyFree {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
struct ReqFree {
    void operator()(X509_REQ* p) const { X509_REQ_free(p); }
};
struct X509Free {
    void operator()(X509* p) const { X509_free(p); }
};

Pkey ec_key(const char* curve) {
    return Pkey(EVP_EC_gen(curve));
}

Pkey rsa_key(unsigned bits) {
    return Pkey(EVP_RSA_gen(bits));
}

// A CSR for `pub`, signed by `signer`, with the given subject entries and, optionally,
// requested extensions (a SAN and CA:TRUE) the manager must ignore.
std::string csr_pem(EVP_PKEY* pub, EVP_PKEY* signer,
                    const std::vector<std::pair<std::string, std::string>>& subject,
                    bool with_extensions = false) {
    std::unique_ptr<X509_REQ, ReqFree> req(X509_REQ_new());
    X509_NAME* name = X509_REQ_get_subject_name(req.get());
    for (const auto& [field, value] : subject) {
        X509_NAME_add_entry_by_txt(name, field.c_str(), MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(value.data()),
                                   static_cast<int>(value.size()), -1, 0);
    }
    X509_REQ_set_pubkey(req.get(), pub);
    if (with_extensions) {
        STACK_OF(X509_EXTENSION)* exts = sk_X509_EXTENSION_new_null();
        sk_X509_EXTENSION_push(exts, X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name,
                                                         "DNS:evil.example,IP:10.0.0.1"));
        sk_X509_EXTENSION_push(
            exts, X509V3_EXT_conf_nid(nullptr, nullptr, NID_basic_constraints, "critical,CA:TRUE"));
        X509_REQ_add_extensions(req.get(), exts);
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    }
    EXPECT_GT(X509_REQ_sign(req.get(), signer, EVP_sha256()), 0);
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509_REQ(bio, req.get());
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(bio);
    return out;
}

std::vector<std::pair<std::string, std::string>> cn(const std::string& name) {
    return {{"O", "Picket"}, {"CN", name}};
}

class Csr : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(init_ca(dir_.path(), "test CA").ok());
        auto ca = load_ca(dir_.path() / "ca.crt", dir_.path() / "ca.key");
        ASSERT_TRUE(ca.ok()) << ca.status();
        ca_ = *ca;
    }
    void expect_refused(const std::string& pem, const std::string& message) {
        auto checked = parse_and_check_csr(pem);
        ASSERT_FALSE(checked.ok());
        EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_EQ(checked.status().message(), message);
        // sign_csr refuses it the same way.
        auto signed_cert = sign_csr(ca_, pem, CertKind::kSensor, 3600s);
        ASSERT_FALSE(signed_cert.ok());
        EXPECT_EQ(signed_cert.status().message(), message);
    }
    TempDir dir_;
    CaSigner ca_;
};

TEST_F(Csr, MakeParseSignRoundTrip) {
    auto made = make_csr("edge-a");
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_NE(made->key_pem.find("-----BEGIN PRIVATE KEY-----"), std::string::npos);
    EXPECT_NE(made->csr_pem.find("-----BEGIN CERTIFICATE REQUEST-----"), std::string::npos);
    EXPECT_EQ(made->csr_pem.find("PRIVATE"), std::string::npos);
    auto checked = parse_and_check_csr(made->csr_pem);
    ASSERT_TRUE(checked.ok()) << checked.status();
    EXPECT_EQ(checked->name, "edge-a");
    EXPECT_FALSE(checked->public_key_der.empty());

    const auto before = std::chrono::system_clock::now();
    auto cert = sign_csr(ca_, made->csr_pem, CertKind::kSensor, 3600s);
    ASSERT_TRUE(cert.ok()) << cert.status();
    EXPECT_EQ(cert->serial_hex.size() % 2, 0u);
    EXPECT_GE(cert->serial_hex.size(), 30u);
    // Backdated by kDefaultBackdate (a tenth of an hour is more), valid for the hour asked.
    EXPECT_EQ(cert->not_after - cert->not_before, 3600s + kDefaultBackdate);
    EXPECT_LE(cert->not_after, before + 3602s);
    EXPECT_GE(cert->not_after, before + 3598s);

    auto id = peer_identity(cert->cert_pem);
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(id->name, "edge-a");
    EXPECT_EQ(id->kind, "sensor");
    EXPECT_EQ(id->dns_names, std::vector<std::string>{"edge-a"});
    EXPECT_EQ(*sensor_name_from_cert(cert->cert_pem), "edge-a");

    auto info = cert_info(cert->cert_pem);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->serial_hex, cert->serial_hex);
    EXPECT_EQ(info->common_name, "edge-a");

    // The key the sensor kept and the signed certificate load as a client pair of the CA.
    std::ofstream(dir_.path() / "edge-a.key") << made->key_pem;
    std::ofstream(dir_.path() / "edge-a.crt") << cert->cert_pem;
    auto creds = load_credentials(dir_.path() / "edge-a.crt", dir_.path() / "edge-a.key",
                                  dir_.path() / "ca.crt", Purpose::kClient);
    EXPECT_TRUE(creds.ok()) << creds.status();
    auto as_server = load_credentials(dir_.path() / "edge-a.crt", dir_.path() / "edge-a.key",
                                      dir_.path() / "ca.crt", Purpose::kServer);
    EXPECT_FALSE(as_server.ok());

    // Two enrollments of the same name get different serials.
    auto again = sign_csr(ca_, make_csr("edge-a")->csr_pem, CertKind::kSensor, 3600s);
    ASSERT_TRUE(again.ok());
    EXPECT_NE(again->serial_hex, cert->serial_hex);
}

TEST_F(Csr, ShortValidityIsBackdatedByATenth) {
    auto cert = sign_csr(ca_, make_csr("edge-a")->csr_pem, CertKind::kSensor, 30s);
    ASSERT_TRUE(cert.ok()) << cert.status();
    EXPECT_EQ(cert->not_after - cert->not_before, 33s);
    auto info = cert_info(cert->cert_pem);
    ASSERT_TRUE(info.ok());
    EXPECT_FALSE(renewal_due(*info, std::chrono::system_clock::now()));
    EXPECT_TRUE(renewal_due(*info, info->not_after - 10s));
    EXPECT_FALSE(renewal_due(*info, info->not_after - 12s));
}

TEST_F(Csr, RequestedExtensionsAreIgnored) {
    Pkey key = ec_key("P-256");
    const std::string pem = csr_pem(key.get(), key.get(), cn("edge-a"), true);
    auto cert = sign_csr(ca_, pem, CertKind::kSensor, 3600s);
    ASSERT_TRUE(cert.ok()) << cert.status();
    auto id = peer_identity(cert->cert_pem);
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(id->dns_names, std::vector<std::string>{"edge-a"});
    EXPECT_TRUE(id->ip_addresses.empty());
    BIO* bio = BIO_new_mem_buf(cert->cert_pem.data(), static_cast<int>(cert->cert_pem.size()));
    std::unique_ptr<X509, X509Free> x(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
    BIO_free(bio);
    ASSERT_NE(x, nullptr);
    EXPECT_EQ(X509_check_ca(x.get()), 0);
    EXPECT_EQ(X509_check_purpose(x.get(), X509_PURPOSE_SSL_CLIENT, 0), 1);
}

TEST_F(Csr, GarbageRefused) {
    expect_refused("", "certificate signing request: not a PEM certificate request");
    expect_refused("hello", "certificate signing request: not a PEM certificate request");
    expect_refused(read_file(dir_.path() / "ca.crt"),
                   "certificate signing request: not a PEM certificate request");
    std::string truncated = make_csr("edge-a")->csr_pem;
    truncated.erase(truncated.size() / 2, 40);
    expect_refused(truncated, "certificate signing request: not a PEM certificate request");
    expect_refused(std::string(kMaxCsrBytes + 1, 'A'),
                   "certificate signing request: larger than 16384 bytes");
}

TEST_F(Csr, BadSignatureRefused) {
    Pkey key = ec_key("P-256");
    Pkey other = ec_key("P-256");
    expect_refused(csr_pem(key.get(), other.get(), cn("edge-a")),
                   "certificate signing request: signature does not verify");
}

TEST_F(Csr, WrongKeyTypeRefused) {
    Pkey rsa = rsa_key(2048);
    expect_refused(csr_pem(rsa.get(), rsa.get(), cn("edge-a")),
                   "certificate signing request: key must be ECDSA P-256, not RSA-2048");
    Pkey p384 = ec_key("P-384");
    expect_refused(csr_pem(p384.get(), p384.get(), cn("edge-a")),
                   "certificate signing request: key must be ECDSA P-256, not EC secp384r1");
}

TEST_F(Csr, InvalidCommonNameRefused) {
    Pkey key = ec_key("P-256");
    expect_refused(csr_pem(key.get(), key.get(), {{"O", "Picket"}}),
                   "certificate signing request: subject has no CN");
    expect_refused(csr_pem(key.get(), key.get(), {{"CN", "a"}, {"CN", "b"}}),
                   "certificate signing request: subject has more than one CN");
    expect_refused(csr_pem(key.get(), key.get(), cn("bad name")),
                   "certificate signing request: CN: name \"bad name\" may only contain "
                   "letters, digits, '.', '_' and '-'");
    expect_refused(csr_pem(key.get(), key.get(), cn("ca")),
                   "certificate signing request: CN: name \"ca\" is reserved for the fleet CA");
    expect_refused(csr_pem(key.get(), key.get(), cn("-edge")),
                   "certificate signing request: CN: name \"-edge\" must not start with '.' or "
                   "'-'");
    expect_refused(csr_pem(key.get(), key.get(), cn("edge\x01")),
                   "certificate signing request: CN contains characters other than letters, "
                   "digits, '.', '_' and '-'");
}

TEST_F(Csr, MakeCsrRefusesABadName) {
    auto made = make_csr("a/b");
    ASSERT_FALSE(made.ok());
    EXPECT_EQ(made.status().message(),
              "name \"a/b\" may only contain letters, digits, '.', '_' and '-'");
}

TEST_F(Csr, SignRefusesBadValidity) {
    auto cert = sign_csr(ca_, make_csr("edge-a")->csr_pem, CertKind::kSensor, 0s);
    ASSERT_FALSE(cert.ok());
    EXPECT_EQ(cert.status().message(), "validity of 0 seconds is outside 1..3153600000");
}

TEST_F(Csr, LoadCaRefusesAKeyOfAnotherCa) {
    TempDir other;
    ASSERT_TRUE(init_ca(other.path(), "other CA").ok());
    auto ca = load_ca(dir_.path() / "ca.crt", other.path() / "ca.key");
    ASSERT_FALSE(ca.ok());
    EXPECT_EQ(ca.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(ca.status().message(), (other.path() / "ca.key").string() +
                                         ": key does not match the CA certificate " +
                                         (dir_.path() / "ca.crt").string());
    ASSERT_TRUE(issue(dir_.path(), CertKind::kSensor, "leaf", {}).ok());
    auto leaf = load_ca(dir_.path() / "leaf.crt", dir_.path() / "leaf.key");
    ASSERT_FALSE(leaf.ok());
    EXPECT_EQ(leaf.status().message(),
              (dir_.path() / "leaf.crt").string() + ": not a CA certificate");
}

TEST(BootstrapToken, GenerateAndParse) {
    auto t = generate_bootstrap_token();
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->id.size(), 8u);
    EXPECT_EQ(t->secret.size(), 43u);  // 256 bits
    EXPECT_TRUE(validate_bootstrap_token_id(t->id).ok());
    auto parsed = parse_bootstrap_token(t->text() + "\n");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->id, t->id);
    EXPECT_EQ(parsed->secret, t->secret);
    EXPECT_NE(generate_bootstrap_token()->text(), t->text());
}

TEST(BootstrapToken, ParseRefusals) {
    const std::string secret(43, 'a');
    auto msg = [](std::string_view text) {
        return std::string(parse_bootstrap_token(text).status().message());
    };
    EXPECT_EQ(msg("abcdef"), "bootstrap token: expected the form ID.SECRET");
    EXPECT_EQ(msg("abc." + secret), "bootstrap token id must be 6-16 characters of [a-z0-9]");
    EXPECT_EQ(msg("ABCDEF." + secret), "bootstrap token id must be 6-16 characters of [a-z0-9]");
    EXPECT_EQ(msg(std::string(17, 'a') + "." + secret),
              "bootstrap token id must be 6-16 characters of [a-z0-9]");
    EXPECT_EQ(msg("abcdef." + std::string(21, 'a')),
              "bootstrap token: the secret must be 22-128 characters of base64url");
    EXPECT_EQ(msg("abcdef." + secret + "!"),
              "bootstrap token: the secret must be 22-128 characters of base64url");
    EXPECT_EQ(msg("abcdef." + secret + ".x"),
              "bootstrap token: the secret must be 22-128 characters of base64url");
    EXPECT_TRUE(parse_bootstrap_token("abcdef." + std::string(22, 'a')).ok());
}

}  // namespace
}  // namespace picket::pki
