#include "common/pki/pki.h"

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tests/common/pki/pki_test_util.h"

namespace picket::pki {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
namespace fs = std::filesystem;

struct X509Free {
    void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr load_cert(const fs::path& p) {
    std::string pem = test_util::read_file(p);
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    return X509Ptr(x);
}

// Verifies `leaf` against `ca` with OpenSSL directly (independent of load_credentials).
int verify_chain(X509* leaf, X509* ca, int purpose) {
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, nullptr);
    X509_STORE_CTX_set_purpose(ctx, purpose);
    int rc = X509_verify_cert(ctx);
    int err = rc == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return err;
}

std::string hex_octets(const ASN1_OCTET_STRING* s) {
    std::string out;
    char buf[3];
    for (int i = 0; i < ASN1_STRING_length(s); ++i) {
        snprintf(buf, sizeof(buf), "%02x", ASN1_STRING_get0_data(s)[i]);
        out += buf;
    }
    return out;
}

mode_t file_mode(const fs::path& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 07777;
}

class PkiTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto ca = init_ca(dir(), "Picket Test CA", 30);
        ASSERT_TRUE(ca.ok()) << ca.status();
    }
    const fs::path& dir() const { return tmp_.path(); }
    fs::path file(std::string_view name) const { return dir() / name; }

    test_util::TempDir tmp_;
};

TEST_F(PkiTest, InitCaCreatesSelfSignedP256Ca) {
    EXPECT_EQ(file_mode(file("ca.key")), 0600u);
    EXPECT_EQ(file_mode(file("ca.crt")), 0644u);
    X509Ptr ca = load_cert(file("ca.crt"));
    ASSERT_NE(ca, nullptr);

    EXPECT_EQ(X509_check_ca(ca.get()), 1);
    EXPECT_EQ(X509_get_extension_flags(ca.get()) & EXFLAG_SS, static_cast<uint32_t>(EXFLAG_SS));
    EXPECT_EQ(X509_get_key_usage(ca.get()), static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
    int bc = X509_get_ext_by_NID(ca.get(), NID_basic_constraints, -1);
    ASSERT_GE(bc, 0);
    EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(ca.get(), bc)), 1);
    int ku = X509_get_ext_by_NID(ca.get(), NID_key_usage, -1);
    ASSERT_GE(ku, 0);
    EXPECT_EQ(X509_EXTENSION_get_critical(X509_get_ext(ca.get(), ku)), 1);
    EXPECT_EQ(X509_get_pathlen(ca.get()), 0);
    ASSERT_NE(X509_get0_subject_key_id(ca.get()), nullptr);
    ASSERT_NE(X509_get0_authority_key_id(ca.get()), nullptr);
    EXPECT_EQ(hex_octets(X509_get0_authority_key_id(ca.get())),
              hex_octets(X509_get0_subject_key_id(ca.get())));
    EXPECT_EQ(X509_verify(ca.get(), X509_get0_pubkey(ca.get())), 1);

    EVP_PKEY* pub = X509_get0_pubkey(ca.get());
    EXPECT_EQ(EVP_PKEY_get_base_id(pub), EVP_PKEY_EC);
    char group[64] = {};
    size_t group_len = 0;
    EVP_PKEY_get_group_name(pub, group, sizeof(group), &group_len);
    EXPECT_STREQ(group, "prime256v1");

    char cn[128] = {};
    X509_NAME_get_text_by_NID(X509_get_subject_name(ca.get()), NID_commonName, cn, sizeof(cn));
    EXPECT_STREQ(cn, "Picket Test CA");
    EXPECT_EQ(X509_cmp_current_time(X509_get0_notBefore(ca.get())), -1);
    EXPECT_EQ(X509_cmp_current_time(X509_get0_notAfter(ca.get())), 1);
}

TEST_F(PkiTest, InitCaRefusesToOverwrite) {
    std::string before = test_util::read_file(file("ca.key"));
    auto again = init_ca(dir(), "Another CA", 30);
    EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
    EXPECT_THAT(again.status().message(), HasSubstr(file("ca.key").string()));
    EXPECT_EQ(test_util::read_file(file("ca.key")), before);

    fs::remove(file("ca.key"));
    auto only_crt = init_ca(dir(), "Another CA", 30);
    EXPECT_EQ(only_crt.status().code(), absl::StatusCode::kAlreadyExists);
    EXPECT_THAT(only_crt.status().message(), HasSubstr(file("ca.crt").string()));
    EXPECT_FALSE(fs::exists(file("ca.key")));
}

TEST_F(PkiTest, InitCaCreatesPrivateDirectory) {
    fs::path sub = dir() / "new" / "pki";
    auto ca = init_ca(sub, "Nested CA", 30);
    ASSERT_TRUE(ca.ok()) << ca.status();
    EXPECT_EQ(ca->key, sub / "ca.key");
    EXPECT_EQ(ca->cert, sub / "ca.crt");
    EXPECT_EQ(file_mode(sub), 0700u);
}

TEST_F(PkiTest, IssuesManagerCertificateForServerAuth) {
    auto files = issue(dir(), CertKind::kManager, "manager", {"localhost", "127.0.0.1", "::1"}, 30);
    ASSERT_TRUE(files.ok()) << files.status();
    EXPECT_EQ(files->cert, file("manager.crt"));
    EXPECT_EQ(files->key, file("manager.key"));
    EXPECT_EQ(file_mode(files->key), 0600u);
    EXPECT_EQ(file_mode(files->cert), 0644u);

    X509Ptr ca = load_cert(file("ca.crt"));
    X509Ptr cert = load_cert(files->cert);
    ASSERT_NE(cert, nullptr);
    EXPECT_EQ(verify_chain(cert.get(), ca.get(), X509_PURPOSE_SSL_SERVER), X509_V_OK);
    EXPECT_EQ(verify_chain(cert.get(), ca.get(), X509_PURPOSE_SSL_CLIENT),
              X509_V_ERR_INVALID_PURPOSE);
    EXPECT_EQ(X509_get_extended_key_usage(cert.get()), static_cast<uint32_t>(XKU_SSL_SERVER));
    EXPECT_EQ(X509_get_key_usage(cert.get()), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
    EXPECT_EQ(X509_check_ca(cert.get()), 0);
    EXPECT_EQ(hex_octets(X509_get0_authority_key_id(cert.get())),
              hex_octets(X509_get0_subject_key_id(ca.get())));
    EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
    EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
    EXPECT_EQ(X509_check_ip_asc(cert.get(), "::1", 0), 1);
    EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.2", 0), 0);

    auto creds = load_credentials(files->cert, files->key, file("ca.crt"), Purpose::kServer);
    ASSERT_TRUE(creds.ok()) << creds.status();
    EXPECT_EQ(creds->cert_pem, test_util::read_file(files->cert));
    EXPECT_EQ(creds->key_pem, test_util::read_file(files->key));
    EXPECT_EQ(creds->ca_pem, test_util::read_file(file("ca.crt")));

    auto id = peer_identity(creds->cert_pem);
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(id->name, "manager");
    EXPECT_EQ(id->kind, "manager");
    EXPECT_THAT(id->dns_names, ElementsAre("manager", "localhost"));
    EXPECT_THAT(id->ip_addresses, ElementsAre("127.0.0.1", "::1"));
}

TEST_F(PkiTest, IssuesSensorAndAdminCertificatesForClientAuth) {
    auto sensor = issue(dir(), CertKind::kSensor, "sensor-01.dc1", {}, 30);
    ASSERT_TRUE(sensor.ok()) << sensor.status();
    auto admin = issue(dir(), CertKind::kAdmin, "alice", {}, 30);
    ASSERT_TRUE(admin.ok()) << admin.status();
    EXPECT_EQ(file_mode(sensor->key), 0600u);
    EXPECT_EQ(file_mode(admin->key), 0600u);

    X509Ptr ca = load_cert(file("ca.crt"));
    X509Ptr s = load_cert(sensor->cert);
    X509Ptr a = load_cert(admin->cert);
    EXPECT_EQ(verify_chain(s.get(), ca.get(), X509_PURPOSE_SSL_CLIENT), X509_V_OK);
    EXPECT_EQ(verify_chain(a.get(), ca.get(), X509_PURPOSE_SSL_CLIENT), X509_V_OK);
    EXPECT_EQ(verify_chain(s.get(), ca.get(), X509_PURPOSE_SSL_SERVER), X509_V_ERR_INVALID_PURPOSE);
    EXPECT_EQ(X509_get_extended_key_usage(s.get()), static_cast<uint32_t>(XKU_SSL_CLIENT));
    EXPECT_EQ(X509_get_extended_key_usage(a.get()), static_cast<uint32_t>(XKU_SSL_CLIENT));

    // Serials: 128 random bits, so distinct and at most 16 bytes.
    BIGNUM* bs = ASN1_INTEGER_to_BN(X509_get0_serialNumber(s.get()), nullptr);
    BIGNUM* ba = ASN1_INTEGER_to_BN(X509_get0_serialNumber(a.get()), nullptr);
    EXPECT_LE(BN_num_bytes(bs), 16);
    EXPECT_GE(BN_num_bytes(bs), 1);
    EXPECT_NE(BN_cmp(bs, ba), 0);
    BN_free(bs);
    BN_free(ba);

    // notBefore is backdated by kDefaultBackdate (5 minutes): within [now-6min, now-4min].
    time_t now = time(nullptr);
    time_t early = now - 360;
    time_t late = now - 240;
    EXPECT_EQ(X509_cmp_time(X509_get0_notBefore(s.get()), &early), 1);
    EXPECT_EQ(X509_cmp_time(X509_get0_notBefore(s.get()), &late), -1);

    auto sid = peer_identity(test_util::read_file(sensor->cert));
    ASSERT_TRUE(sid.ok()) << sid.status();
    EXPECT_EQ(sid->name, "sensor-01.dc1");
    EXPECT_EQ(sid->common_name, "sensor-01.dc1");
    EXPECT_EQ(sid->kind, "sensor");
    EXPECT_THAT(sid->dns_names, ElementsAre("sensor-01.dc1"));
    EXPECT_THAT(sid->ip_addresses, IsEmpty());

    auto aid = peer_identity(test_util::read_file(admin->cert));
    ASSERT_TRUE(aid.ok()) << aid.status();
    EXPECT_EQ(aid->name, "alice");
    EXPECT_EQ(aid->kind, "admin");

    auto sensor_name = sensor_name_from_cert(test_util::read_file(sensor->cert));
    ASSERT_TRUE(sensor_name.ok()) << sensor_name.status();
    EXPECT_EQ(*sensor_name, "sensor-01.dc1");
    auto admin_as_sensor = sensor_name_from_cert(test_util::read_file(admin->cert));
    EXPECT_EQ(admin_as_sensor.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(admin_as_sensor.status().message(),
              "certificate \"alice\" is not a sensor certificate (OU \"admin\")");

    auto creds = load_credentials(sensor->cert, sensor->key, file("ca.crt"), Purpose::kClient);
    EXPECT_TRUE(creds.ok()) << creds.status();
}

TEST_F(PkiTest, IssueRefusesToOverwrite) {
    ASSERT_TRUE(issue(dir(), CertKind::kSensor, "s1", {}, 30).ok());
    std::string before = test_util::read_file(file("s1.key"));
    auto again = issue(dir(), CertKind::kSensor, "s1", {}, 30);
    EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
    EXPECT_THAT(again.status().message(), HasSubstr(file("s1.key").string()));
    EXPECT_EQ(test_util::read_file(file("s1.key")), before);
}

TEST_F(PkiTest, IssueClampsValidityToTheCa) {
    auto files = issue(dir(), CertKind::kSensor, "long", {}, 3650);
    ASSERT_TRUE(files.ok()) << files.status();
    X509Ptr ca = load_cert(file("ca.crt"));
    X509Ptr cert = load_cert(files->cert);
    EXPECT_EQ(ASN1_TIME_compare(X509_get0_notAfter(cert.get()), X509_get0_notAfter(ca.get())), 0);
}

TEST_F(PkiTest, IssueWithoutCaNamesTheMissingFile) {
    test_util::TempDir empty;
    auto files = issue(empty.path(), CertKind::kSensor, "s1", {}, 30);
    EXPECT_EQ(files.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(files.status().message(), HasSubstr((empty.path() / "ca.crt").string()));
}

TEST_F(PkiTest, NamesCannotEscapeTheDirectory) {
    auto escape = issue(dir(), CertKind::kSensor, "../x", {}, 30);
    EXPECT_EQ(escape.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_FALSE(fs::exists(dir().parent_path() / "x.key"));
    EXPECT_EQ(issue(dir(), CertKind::kSensor, "a/b", {}, 30).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(issue(dir(), CertKind::kSensor, "", {}, 30).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(issue(dir(), CertKind::kSensor, "ca", {}, 30).status().code(),
              absl::StatusCode::kInvalidArgument);
    // Only ca.crt and ca.key remain.
    int entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir())) {
        ++entries;
    }
    EXPECT_EQ(entries, 2);

    EXPECT_TRUE(validate_name("sensor-01.dc1_a").ok());
    EXPECT_FALSE(validate_name("..").ok());
    EXPECT_FALSE(validate_name(".hidden").ok());
    EXPECT_FALSE(validate_name("-rf").ok());
    EXPECT_FALSE(validate_name(std::string("a\0b", 3)).ok());
    EXPECT_FALSE(validate_name("a b").ok());
    EXPECT_TRUE(validate_name(std::string(64, 'a')).ok());
    EXPECT_FALSE(validate_name(std::string(65, 'a')).ok());
    EXPECT_EQ(validate_name("../x").message(),
              "name \"../x\" may only contain letters, digits, '.', '_' and '-'");
}

TEST_F(PkiTest, IssueRejectsBadSubjectAltName) {
    auto bad = issue(dir(), CertKind::kManager, "manager", {"bad name,DNS:evil"}, 30);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(bad.status().message(), HasSubstr("bad name,DNS:evil"));
    EXPECT_FALSE(fs::exists(file("manager.key")));
}

TEST_F(PkiTest, LoadCredentialsRejectsKeyOfAnotherCertificate) {
    auto s1 = issue(dir(), CertKind::kSensor, "s1", {}, 30);
    auto s2 = issue(dir(), CertKind::kSensor, "s2", {}, 30);
    ASSERT_TRUE(s1.ok() && s2.ok());
    auto creds = load_credentials(s1->cert, s2->key, file("ca.crt"));
    EXPECT_EQ(creds.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(
        creds.status().message(),
        s2->key.string() + ": private key does not match the certificate in " + s1->cert.string());
}

TEST_F(PkiTest, LoadCredentialsRejectsCertificateFromAnotherCa) {
    test_util::TempDir other;
    ASSERT_TRUE(init_ca(other.path(), "Other CA", 30).ok());
    auto foreign = issue(other.path(), CertKind::kSensor, "s1", {}, 30);
    ASSERT_TRUE(foreign.ok()) << foreign.status();
    auto creds = load_credentials(foreign->cert, foreign->key, file("ca.crt"));
    EXPECT_EQ(creds.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(creds.status().message(),
              foreign->cert.string() + ": certificate is not signed by a CA in " +
                  file("ca.crt").string() + " (issuer: /O=Picket/OU=ca/CN=Other CA)");
}

TEST_F(PkiTest, LoadCredentialsRejectsExpiredCertificate) {
    // Valid for one day, starting ten days ago: expired nine days ago.
    auto old = issue(dir(), CertKind::kSensor, "old", {}, 1, std::chrono::hours(24 * 10));
    ASSERT_TRUE(old.ok()) << old.status();
    auto creds = load_credentials(old->cert, old->key, file("ca.crt"));
    EXPECT_EQ(creds.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(creds.status().message(),
                HasSubstr(old->cert.string() + ": certificate expired on 20"));
}

TEST_F(PkiTest, LoadCredentialsRejectsNotYetValidCertificate) {
    auto future = issue(dir(), CertKind::kSensor, "future", {}, 30, -std::chrono::hours(48));
    ASSERT_TRUE(future.ok()) << future.status();
    auto creds = load_credentials(future->cert, future->key, file("ca.crt"));
    EXPECT_EQ(creds.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(creds.status().message(),
                HasSubstr(future->cert.string() + ": certificate is not valid before 20"));
}

TEST_F(PkiTest, LoadCredentialsChecksPurpose) {
    auto s = issue(dir(), CertKind::kSensor, "s1", {}, 30);
    ASSERT_TRUE(s.ok());
    auto creds = load_credentials(s->cert, s->key, file("ca.crt"), Purpose::kServer);
    EXPECT_EQ(creds.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(creds.status().message(),
              s->cert.string() +
                  ": certificate is not valid for TLS server (extendedKeyUsage serverAuth)");
}

TEST_F(PkiTest, LoadCredentialsNamesMissingAndWrongFiles) {
    auto s = issue(dir(), CertKind::kSensor, "s1", {}, 30);
    ASSERT_TRUE(s.ok());
    auto missing = load_credentials(file("nope.crt"), s->key, file("ca.crt"));
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(missing.status().message(), file("nope.crt").string() +
                                              ": cannot open certificate: No such file or "
                                              "directory");

    auto key_as_cert = load_credentials(s->key, s->key, file("ca.crt"));
    EXPECT_EQ(key_as_cert.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(key_as_cert.status().message(),
                HasSubstr(s->key.string() + ": not a PEM certificate"));

    auto cert_as_key = load_credentials(s->cert, s->cert, file("ca.crt"));
    EXPECT_EQ(cert_as_key.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(cert_as_key.status().message(),
                HasSubstr(s->cert.string() + ": not an unencrypted PEM private key"));

    auto key_as_ca = load_credentials(s->cert, s->key, file("ca.key"));
    EXPECT_EQ(key_as_ca.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(key_as_ca.status().message(),
                HasSubstr(file("ca.key").string() + ": not a PEM certificate"));
}

// Builds a self-signed certificate with the given CN and one SAN dNSName.
std::string cert_with(const char* cn, const char* san) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* x = X509_new();
    X509_set_version(x, X509_VERSION_3);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_set_pubkey(x, key);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, san);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    X509_sign(x, key, EVP_sha256());
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_X509(bio, x);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    std::string pem(data, static_cast<size_t>(n));
    BIO_free(bio);
    X509_free(x);
    EVP_PKEY_free(key);
    return pem;
}

TEST(PeerIdentityTest, CommonNameMustBeAmongDnsNames) {
    auto mismatch = peer_identity(cert_with("sensor-1", "DNS:sensor-2"));
    EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(mismatch.status().message(),
              "peer certificate commonName \"sensor-1\" is not among its dNSNames");

    auto ok = peer_identity(cert_with("sensor-1", "DNS:sensor-1,IP:10.0.0.1"));
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(ok->name, "sensor-1");
    EXPECT_EQ(ok->kind, "");
    EXPECT_THAT(ok->dns_names, ElementsAre("sensor-1"));
    EXPECT_THAT(ok->ip_addresses, ElementsAre("10.0.0.1"));

    auto bad_cn = peer_identity(cert_with("../etc", "DNS:x"));
    EXPECT_EQ(bad_cn.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(bad_cn.status().message(), HasSubstr("peer certificate commonName: name"));

    EXPECT_EQ(peer_identity("not a certificate").status().code(),
              absl::StatusCode::kInvalidArgument);
}

TEST(TokenTest, HashIsSha256Hex) {
    EXPECT_EQ(token_hash("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(token_hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(TokenTest, ConstantTimeEqual) {
    EXPECT_TRUE(constant_time_equal(token_hash("t1"), token_hash("t1")));
    EXPECT_FALSE(constant_time_equal(token_hash("t1"), token_hash("t2")));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "abcd"));
    EXPECT_FALSE(constant_time_equal("", "a"));
    EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(TokenTest, GeneratedTokensAreBase64Url256Bits) {
    auto a = generate_token();
    auto b = generate_token();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->size(), 43u);
    EXPECT_EQ(
        a->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
        std::string::npos);
    EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace picket::pki
