#include "common/pki/pki.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <system_error>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/pki/internal.h"
#include "common/strings.h"

namespace picket::pki {

namespace internal {

std::string openssl_error() {
    std::string out;
    char buf[256];
    while (unsigned long e = ERR_get_error()) {
        ERR_error_string_n(e, buf, sizeof(buf));
        if (!out.empty()) {
            out += "; ";
        }
        out += buf;
    }
    return out.empty() ? "unknown OpenSSL error" : out;
}

absl::Status openssl_failure(std::string_view what) {
    return absl::InternalError(strings::cat(what, ": ", openssl_error()));
}

std::string subject_line(X509* cert) {
    char buf[256];
    X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
    return buf;
}

// PKCS#8, unencrypted: what gRPC (OpenSSL or BoringSSL) reads.
absl::StatusOr<std::string> key_to_pem(EVP_PKEY* key) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio ||
        PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
        return openssl_failure("PEM_write_bio_PrivateKey");
    }
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    std::string out(data, static_cast<size_t>(n));
    OPENSSL_cleanse(data, static_cast<size_t>(n));
    return out;
}

absl::StatusOr<PkeyPtr> generate_p256_key() {
    PkeyPtr key(EVP_EC_gen("P-256"));
    if (!key) {
        return openssl_failure("generating an ECDSA P-256 key");
    }
    return key;
}

}  // namespace internal

namespace {

namespace fs = std::filesystem;

using internal::openssl_error;
using internal::openssl_failure;
using internal::subject_line;
using strings::cat;

using internal::BioPtr;
using internal::Deleter;
using internal::GeneralNamesPtr;
using internal::generate_p256_key;
using internal::key_to_pem;
using internal::PkeyPtr;
using internal::X509Ptr;
using StorePtr = std::unique_ptr<X509_STORE, Deleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using NamePtr = std::unique_ptr<X509_NAME, Deleter<X509_NAME_free>>;
struct StackFree {
    void operator()(STACK_OF(X509) * s) const { sk_X509_free(s); }
};
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

constexpr size_t kMaxPemFileBytes = 1 << 20;
constexpr int kMaxValidityDays = 36500;
constexpr size_t kMaxNameLength = 64;  // ub-common-name (RFC 5280 appendix A)

struct CertChain {
    std::vector<X509Ptr> certs;
};

absl::StatusOr<std::string> read_small_file(const fs::path& path, std::string_view what) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        std::string msg = cat(path.string(), ": cannot open ", what, ": ", strerror(e));
        if (e == ENOENT) {
            return absl::NotFoundError(msg);
        }
        if (e == EACCES || e == EPERM) {
            return absl::PermissionDeniedError(msg);
        }
        return absl::UnavailableError(msg);
    }
    std::string data;
    char buf[8192];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            int e = errno;
            ::close(fd);
            return absl::UnavailableError(
                cat(path.string(), ": cannot read ", what, ": ", strerror(e)));
        }
        if (n == 0) {
            break;
        }
        data.append(buf, static_cast<size_t>(n));
        if (data.size() > kMaxPemFileBytes) {
            ::close(fd);
            return absl::InvalidArgumentError(
                cat(path.string(), ": ", what, " is larger than ", kMaxPemFileBytes, " bytes"));
        }
    }
    ::close(fd);
    return data;
}

// Reads each (file, what it is, destination) in turn; the first failure is returned.
struct SmallFile {
    const fs::path& path;
    std::string_view what;
    std::string* out;
};
absl::Status read_small_files(std::initializer_list<SmallFile> files) {
    for (const SmallFile& f : files) {
        absl::StatusOr<std::string> text = read_small_file(f.path, f.what);
        if (!text.ok()) {
            return text.status();
        }
        *f.out = std::move(*text);
    }
    return absl::OkStatus();
}

absl::Status write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return absl::ErrnoToStatus(errno, "write");
        }
        data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
}

// Writes a new file atomically and without ever replacing an existing one: the data goes to a
// temporary file in the same directory (created 0600 by mkstemp, so a key is never readable
// by others, whatever the umask), then link(2) gives it its name, failing with EEXIST when
// the name is taken. A reader sees either no file or the complete one.
absl::Status write_new_file(const fs::path& path, std::string_view data, mode_t mode) {
    std::string tmp =
        (path.parent_path() / cat(".", path.filename().string(), ".tmp-XXXXXX")).string();
    int fd = ::mkstemp(tmp.data());
    if (fd < 0) {
        return absl::ErrnoToStatus(errno, cat(path.string(), ": cannot create file"));
    }
    absl::Status st = absl::OkStatus();
    if (::fchmod(fd, mode) != 0) {
        st = absl::ErrnoToStatus(errno, cat(path.string(), ": chmod"));
    }
    if (st.ok()) {
        st = write_all(fd, data);
        if (!st.ok()) {
            st = absl::Status(st.code(), cat(path.string(), ": ", st.message()));
        }
    }
    if (st.ok() && ::fsync(fd) != 0) {
        st = absl::ErrnoToStatus(errno, cat(path.string(), ": fsync"));
    }
    ::close(fd);
    if (st.ok() && ::link(tmp.c_str(), path.c_str()) != 0) {
        if (errno == EEXIST) {
            st = absl::AlreadyExistsError(
                cat(path.string(), ": already exists, refusing to overwrite it"));
        } else {
            st = absl::ErrnoToStatus(errno, cat(path.string(), ": cannot create file"));
        }
    }
    ::unlink(tmp.c_str());
    if (!st.ok()) {
        return st;
    }
    int dfd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);  // best effort: makes the new name durable
        ::close(dfd);
    }
    return absl::OkStatus();
}

absl::Status refuse_existing(const fs::path& path) {
    std::error_code ec;
    if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
        return absl::AlreadyExistsError(
            cat(path.string(), ": already exists, refusing to overwrite it"));
    }
    return absl::OkStatus();
}

absl::StatusOr<CertChain> parse_certs(std::string_view pem, const fs::path& file) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) {
        return openssl_failure("BIO_new_mem_buf");
    }
    CertChain chain;
    while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
        chain.certs.emplace_back(x);
    }
    // The loop ends with a "no start line" error at end of input; anything else means a
    // damaged PEM block.
    unsigned long last = ERR_peek_last_error();
    bool clean_end =
        ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
    std::string err = openssl_error();
    if (chain.certs.empty()) {
        return absl::InvalidArgumentError(
            cat(file.string(), ": not a PEM certificate (", err, ")"));
    }
    if (last != 0 && !clean_end) {
        return absl::InvalidArgumentError(
            cat(file.string(), ": damaged PEM certificate block (", err, ")"));
    }
    return chain;
}

// Never prompt on the terminal for a passphrase: encrypted keys are refused.
int no_password(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) {
    return -1;
}

absl::StatusOr<PkeyPtr> parse_key(std::string_view pem, const fs::path& file) {
    BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) {
        return openssl_failure("BIO_new_mem_buf");
    }
    PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_password, nullptr));
    if (!key) {
        return absl::InvalidArgumentError(
            cat(file.string(), ": not an unencrypted PEM private key (", openssl_error(), ")"));
    }
    ERR_clear_error();
    return key;
}

// A certificate chain and the private key for it, parsed in that order from PEM text (errors
// name the files).
struct ChainAndKey {
    CertChain chain;
    PkeyPtr key;
};

absl::StatusOr<ChainAndKey> parse_chain_and_key(std::string_view cert_pem,
                                                const fs::path& cert_file, std::string_view key_pem,
                                                const fs::path& key_file) {
    absl::StatusOr<CertChain> chain = parse_certs(cert_pem, cert_file);
    if (!chain.ok()) {
        return chain.status();
    }
    absl::StatusOr<PkeyPtr> key = parse_key(key_pem, key_file);
    if (!key.ok()) {
        return key.status();
    }
    return ChainAndKey{std::move(*chain), std::move(*key)};
}

std::string asn1_time_iso(const ASN1_TIME* t) {
    struct tm tm {};
    if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
        return "?";
    }
    char buf[32];
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::chrono::system_clock::time_point asn1_time_point(const ASN1_TIME* t) {
    struct tm tm {};
    if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
        return {};
    }
    return std::chrono::system_clock::from_time_t(timegm(&tm));
}

absl::StatusOr<std::string> to_pem(X509* cert) {
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) {
        return openssl_failure("PEM_write_bio_X509");
    }
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<size_t>(n));
}

absl::Status set_random_serial(X509* cert) {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
        return openssl_failure("RAND_bytes");
    }
    bytes[0] |= 0x01;  // never zero (RFC 5280 4.1.2.2 wants a positive integer)
    BnPtr bn(BN_bin2bn(bytes, sizeof(bytes), nullptr));
    if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) == nullptr) {
        return openssl_failure("setting the serial number");
    }
    return absl::OkStatus();
}

absl::Status set_validity(X509* cert, int validity_days, std::chrono::seconds backdate) {
    long back = static_cast<long>(backdate.count());
    if (X509_time_adj_ex(X509_getm_notBefore(cert), 0, -back, nullptr) == nullptr ||
        X509_time_adj_ex(X509_getm_notAfter(cert), validity_days, -back, nullptr) == nullptr) {
        return openssl_failure("setting the validity period");
    }
    return absl::OkStatus();
}

absl::StatusOr<NamePtr> make_subject(std::string_view kind, std::string_view cn) {
    NamePtr name(X509_NAME_new());
    auto add = [&](const char* field, std::string_view value) {
        return X509_NAME_add_entry_by_txt(name.get(), field, MBSTRING_UTF8,
                                          reinterpret_cast<const unsigned char*>(value.data()),
                                          static_cast<int>(value.size()), -1, 0) == 1;
    };
    if (!name || !add("O", "Picket") || !add("OU", kind) || !add("CN", cn)) {
        return openssl_failure("building the subject name");
    }
    return name;
}

// A fresh P-256 key and a v3 certificate for it: subject O=Picket, OU=kind, CN=cn, a random
// serial and the validity period. The caller sets the issuer and extensions, and signs.
struct NewCert {
    PkeyPtr key;
    X509Ptr cert;
    NamePtr subject;
};

absl::StatusOr<NewCert> new_cert(std::string_view kind, std::string_view cn, int validity_days,
                                 std::chrono::seconds backdate) {
    absl::StatusOr<PkeyPtr> key = generate_p256_key();
    if (!key.ok()) {
        return key.status();
    }
    X509Ptr cert(X509_new());
    if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
        return openssl_failure("X509_new");
    }
    absl::StatusOr<NamePtr> subject = make_subject(kind, cn);
    if (!subject.ok()) {
        return subject.status();
    }
    if (absl::Status st = set_random_serial(cert.get()); !st.ok()) {
        return st;
    }
    if (absl::Status st = set_validity(cert.get(), validity_days, backdate); !st.ok()) {
        return st;
    }
    return NewCert{std::move(*key), std::move(cert), std::move(*subject)};
}

// Refuses to overwrite STEM.key or STEM.crt: checked before any key is generated.
absl::Status refuse_existing_pair(const fs::path& dir, std::string_view stem) {
    if (absl::Status st = refuse_existing(dir / cat(stem, ".key")); !st.ok()) {
        return st;
    }
    return refuse_existing(dir / cat(stem, ".crt"));
}

absl::Status add_ext(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
    ExtPtr ext(X509V3_EXT_conf_nid(nullptr, ctx, nid, value));
    if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
        return openssl_failure(cat("adding extension ", OBJ_nid2sn(nid), "=", value));
    }
    return absl::OkStatus();
}

bool is_ip_literal(const std::string& s) {
    unsigned char buf[16];
    return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

absl::Status validate_dns_name(std::string_view s) {
    bool ok = !s.empty() && s.size() <= 253 && s.front() != '.' && s.back() != '.' &&
              s.find("..") == std::string_view::npos;
    for (char c : s) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_');
    }
    if (!ok) {
        return absl::InvalidArgumentError(
            cat("subjectAltName \"", s, "\" is neither an IP address nor a DNS name"));
    }
    return absl::OkStatus();
}

absl::Status add_sans(X509* cert, std::string_view name, const std::vector<std::string>& sans) {
    GeneralNamesPtr gens(sk_GENERAL_NAME_new_null());
    if (!gens) {
        return openssl_failure("sk_GENERAL_NAME_new_null");
    }
    std::vector<std::string> all{std::string(name)};
    for (const std::string& s : sans) {
        bool dup = false;
        for (const std::string& a : all) {
            dup = dup || a == s;
        }
        if (!dup) {
            all.push_back(s);
        }
    }
    for (const std::string& s : all) {
        GENERAL_NAME* gen = GENERAL_NAME_new();
        if (gen == nullptr) {
            return openssl_failure("GENERAL_NAME_new");
        }
        if (is_ip_literal(s)) {
            ASN1_OCTET_STRING* ip = a2i_IPADDRESS(s.c_str());
            if (ip == nullptr) {
                GENERAL_NAME_free(gen);
                return absl::InvalidArgumentError(
                    cat("subjectAltName \"", s, "\": bad IP address"));
            }
            GENERAL_NAME_set0_value(gen, GEN_IPADD, ip);
        } else {
            if (absl::Status st = validate_dns_name(s); !st.ok()) {
                GENERAL_NAME_free(gen);
                return st;
            }
            ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
            if (dns == nullptr || ASN1_STRING_set(dns, s.data(), static_cast<int>(s.size())) != 1) {
                ASN1_IA5STRING_free(dns);
                GENERAL_NAME_free(gen);
                return openssl_failure("building a dNSName");
            }
            GENERAL_NAME_set0_value(gen, GEN_DNS, dns);
        }
        if (sk_GENERAL_NAME_push(gens.get(), gen) <= 0) {
            GENERAL_NAME_free(gen);
            return openssl_failure("sk_GENERAL_NAME_push");
        }
    }
    if (X509_add1_ext_i2d(cert, NID_subject_alt_name, gens.get(), 0, X509V3_ADD_DEFAULT) != 1) {
        return openssl_failure("adding subjectAltName");
    }
    return absl::OkStatus();
}

// The extensions every leaf gets (issue() and sign_csr() alike), its SANs, and the CA's
// signature. The subject, issuer, key and validity are already set.
absl::Status finish_leaf(X509* cert, X509* ca, EVP_PKEY* ca_key, CertKind kind,
                         std::string_view name, const std::vector<std::string>& sans) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, ca, cert, nullptr, nullptr, 0);
    const char* eku = kind == CertKind::kManager ? "serverAuth" : "clientAuth";
    for (auto [nid, value] :
         {std::pair{NID_basic_constraints, "critical,CA:FALSE"},
          std::pair{NID_key_usage, "critical,digitalSignature"}, std::pair{NID_ext_key_usage, eku},
          std::pair{NID_subject_key_identifier, "hash"},
          std::pair{NID_authority_key_identifier, "keyid:always"}}) {
        if (absl::Status st = add_ext(cert, &ctx, nid, value); !st.ok()) {
            return st;
        }
    }
    if (absl::Status st = add_sans(cert, name, sans); !st.ok()) {
        return st;
    }
    if (X509_sign(cert, ca_key, EVP_sha256()) <= 0) {
        return openssl_failure("signing the certificate");
    }
    return absl::OkStatus();
}

absl::Status check_validity_days(int validity_days) {
    if (validity_days < 1 || validity_days > kMaxValidityDays) {
        return absl::InvalidArgumentError(
            cat("validity of ", validity_days, " days is outside 1..", kMaxValidityDays));
    }
    return absl::OkStatus();
}

// Writes key then certificate; removes the key again when the certificate cannot be written
// so that a failed issue leaves nothing behind.
absl::StatusOr<IssuedFiles> write_pair(const fs::path& dir, std::string_view base, X509* cert,
                                       EVP_PKEY* key) {
    IssuedFiles files{dir / cat(base, ".crt"), dir / cat(base, ".key")};
    if (absl::Status st = refuse_existing(files.key); !st.ok()) {
        return st;
    }
    if (absl::Status st = refuse_existing(files.cert); !st.ok()) {
        return st;
    }
    absl::StatusOr<std::string> cert_pem = to_pem(cert);
    if (!cert_pem.ok()) {
        return cert_pem.status();
    }
    absl::StatusOr<std::string> key_pem = key_to_pem(key);
    if (!key_pem.ok()) {
        return key_pem.status();
    }
    absl::Status st = write_new_file(files.key, *key_pem, 0600);
    OPENSSL_cleanse(key_pem->data(), key_pem->size());
    if (!st.ok()) {
        return st;
    }
    st = write_new_file(files.cert, *cert_pem, 0644);
    if (!st.ok()) {
        ::unlink(files.key.c_str());
        return st;
    }
    return files;
}

const char* verify_purpose_name(Purpose p) {
    return p == Purpose::kServer ? "TLS server (extendedKeyUsage serverAuth)"
                                 : "TLS client (extendedKeyUsage clientAuth)";
}

std::string issuer_line(X509* cert) {
    char buf[256];
    X509_NAME_oneline(X509_get_issuer_name(cert), buf, sizeof(buf));
    return buf;
}

}  // namespace

std::string_view cert_kind_name(CertKind kind) {
    switch (kind) {
        case CertKind::kManager:
            return "manager";
        case CertKind::kSensor:
            return "sensor";
        case CertKind::kAdmin:
            return "admin";
    }
    return "unknown";
}

absl::Status validate_name(std::string_view name) {
    if (name.empty()) {
        return absl::InvalidArgumentError("name is empty");
    }
    if (name.size() > kMaxNameLength) {
        return absl::InvalidArgumentError(
            cat("name \"", name, "\" is longer than ", kMaxNameLength, " characters"));
    }
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-';
        if (!ok) {
            return absl::InvalidArgumentError(
                cat("name \"", name, "\" may only contain letters, digits, '.', '_' and '-'"));
        }
    }
    if (name.front() == '.' || name.front() == '-') {
        return absl::InvalidArgumentError(
            cat("name \"", name, "\" must not start with '.' or '-'"));
    }
    if (name == "ca") {
        return absl::InvalidArgumentError("name \"ca\" is reserved for the fleet CA");
    }
    return absl::OkStatus();
}

absl::StatusOr<IssuedFiles> init_ca(const fs::path& dir, std::string_view common_name,
                                    int validity_days) {
    if (common_name.empty() || common_name.size() > kMaxNameLength) {
        return absl::InvalidArgumentError(
            cat("CA common name must be 1..", kMaxNameLength, " characters"));
    }
    for (unsigned char c : common_name) {
        if (c < 0x20 || c == 0x7f) {
            return absl::InvalidArgumentError("CA common name contains a control character");
        }
    }
    if (absl::Status st = check_validity_days(validity_days); !st.ok()) {
        return st;
    }
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
        // The directory itself is made 0700 by mkdir (a umask only removes bits), so it is
        // never writable by others, not even between creation and a chmod.
        if (dir.has_parent_path()) {
            fs::create_directories(dir.parent_path(), ec);
        }
        if (::mkdir(dir.c_str(), 0700) != 0 && !(errno == EEXIST && fs::is_directory(dir, ec))) {
            return absl::UnavailableError(
                cat(dir.string(), ": cannot create directory: ", std::strerror(errno)));
        }
        fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
    } else if (!fs::is_directory(dir, ec)) {
        return absl::InvalidArgumentError(cat(dir.string(), ": not a directory"));
    }
    if (absl::Status st = refuse_existing_pair(dir, "ca"); !st.ok()) {
        return st;
    }
    absl::StatusOr<NewCert> made = new_cert("ca", common_name, validity_days, kDefaultBackdate);
    if (!made.ok()) {
        return made.status();
    }
    auto& [key, cert, subject] = *made;
    if (X509_set_subject_name(cert.get(), subject.get()) != 1 ||
        X509_set_issuer_name(cert.get(), subject.get()) != 1 ||
        X509_set_pubkey(cert.get(), key.get()) != 1) {
        return openssl_failure("filling the CA certificate");
    }
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    X509V3_set_issuer_pkey(&ctx, key.get());
    // pathlen:0: the fleet CA signs leaf certificates only, never another CA.
    for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:TRUE,pathlen:0"},
                              std::pair{NID_key_usage, "critical,keyCertSign,cRLSign"},
                              std::pair{NID_subject_key_identifier, "hash"},
                              std::pair{NID_authority_key_identifier, "keyid:always"}}) {
        if (absl::Status st = add_ext(cert.get(), &ctx, nid, value); !st.ok()) {
            return st;
        }
    }
    if (X509_sign(cert.get(), key.get(), EVP_sha256()) <= 0) {
        return openssl_failure("signing the CA certificate");
    }
    return write_pair(dir, "ca", cert.get(), key.get());
}

absl::StatusOr<IssuedFiles> issue(const fs::path& dir, CertKind kind, std::string_view name,
                                  const std::vector<std::string>& sans, int validity_days,
                                  std::chrono::seconds backdate) {
    if (absl::Status st = validate_name(name); !st.ok()) {
        return st;
    }
    if (absl::Status st = check_validity_days(validity_days); !st.ok()) {
        return st;
    }
    const fs::path ca_cert_file = dir / "ca.crt";
    const fs::path ca_key_file = dir / "ca.key";
    std::string ca_cert_pem, ca_key_pem;
    if (absl::Status st = read_small_files(
            {{ca_cert_file, "CA certificate", &ca_cert_pem}, {ca_key_file, "CA key", &ca_key_pem}});
        !st.ok()) {
        return st;
    }
    absl::StatusOr<ChainAndKey> ca_pair =
        parse_chain_and_key(ca_cert_pem, ca_cert_file, ca_key_pem, ca_key_file);
    OPENSSL_cleanse(ca_key_pem.data(), ca_key_pem.size());
    if (!ca_pair.ok()) {
        return ca_pair.status();
    }
    const PkeyPtr& ca_key = ca_pair->key;
    X509* ca = ca_pair->chain.certs.front().get();
    if (X509_check_ca(ca) == 0) {
        return absl::FailedPreconditionError(cat(ca_cert_file.string(), ": not a CA certificate"));
    }
    if (EVP_PKEY_eq(X509_get0_pubkey(ca), ca_key.get()) != 1) {
        ERR_clear_error();
        return absl::FailedPreconditionError(cat(ca_key_file.string(),
                                                 ": key does not match the CA certificate ",
                                                 ca_cert_file.string()));
    }
    if (absl::Status st = refuse_existing_pair(dir, name); !st.ok()) {
        return st;
    }
    absl::StatusOr<NewCert> made = new_cert(cert_kind_name(kind), name, validity_days, backdate);
    if (!made.ok()) {
        return made.status();
    }
    auto& [key, cert, subject] = *made;
    // A certificate cannot outlive its issuer: clamp notAfter to the CA's.
    if (ASN1_TIME_compare(X509_get0_notAfter(cert.get()), X509_get0_notAfter(ca)) > 0 &&
        X509_set1_notAfter(cert.get(), X509_get0_notAfter(ca)) != 1) {
        return openssl_failure("clamping notAfter");
    }
    if (X509_set_subject_name(cert.get(), subject.get()) != 1 ||
        X509_set_issuer_name(cert.get(), X509_get_subject_name(ca)) != 1 ||
        X509_set_pubkey(cert.get(), key.get()) != 1) {
        return openssl_failure("filling the certificate");
    }
    if (absl::Status st = finish_leaf(cert.get(), ca, ca_key.get(), kind, name, sans); !st.ok()) {
        return st;
    }
    return write_pair(dir, name, cert.get(), key.get());
}

absl::StatusOr<TlsCredentials> load_credentials(const fs::path& cert_file, const fs::path& key_file,
                                                const fs::path& ca_file, Purpose purpose) {
    TlsCredentials out;
    std::string cert_pem, key_pem, ca_pem;
    if (absl::Status st = read_small_files({{cert_file, "certificate", &cert_pem},
                                            {key_file, "private key", &key_pem},
                                            {ca_file, "CA certificate", &ca_pem}});
        !st.ok()) {
        return st;
    }
    absl::StatusOr<ChainAndKey> pair = parse_chain_and_key(cert_pem, cert_file, key_pem, key_file);
    if (!pair.ok()) {
        return pair.status();
    }
    const CertChain& chain = pair->chain;
    const PkeyPtr& key = pair->key;
    absl::StatusOr<CertChain> cas = parse_certs(ca_pem, ca_file);
    if (!cas.ok()) {
        return cas.status();
    }
    X509* leaf = chain.certs.front().get();
    if (EVP_PKEY_eq(X509_get0_pubkey(leaf), key.get()) != 1) {
        ERR_clear_error();
        return absl::FailedPreconditionError(cat(key_file.string(),
                                                 ": private key does not match the certificate in ",
                                                 cert_file.string()));
    }

    StorePtr store(X509_STORE_new());
    StoreCtxPtr ctx(X509_STORE_CTX_new());
    STACK_OF(X509)* untrusted = sk_X509_new_null();
    std::unique_ptr<STACK_OF(X509), StackFree> untrusted_owner(untrusted);
    if (!store || !ctx || untrusted == nullptr) {
        return openssl_failure("allocating the verification store");
    }
    for (X509Ptr& ca : cas->certs) {
        if (X509_STORE_add_cert(store.get(), ca.get()) != 1) {
            return openssl_failure(cat(ca_file.string(), ": adding CA certificate"));
        }
    }
    for (size_t i = 1; i < chain.certs.size(); ++i) {
        sk_X509_push(untrusted, chain.certs[i].get());  // borrowed; the chain outlives ctx
    }
    if (X509_STORE_CTX_init(ctx.get(), store.get(), leaf, untrusted) != 1) {
        return openssl_failure("X509_STORE_CTX_init");
    }
    if (purpose != Purpose::kAny) {
        X509_STORE_CTX_set_purpose(ctx.get(), purpose == Purpose::kServer
                                                  ? X509_PURPOSE_SSL_SERVER
                                                  : X509_PURPOSE_SSL_CLIENT);
    }
    if (X509_verify_cert(ctx.get()) != 1) {
        int err = X509_STORE_CTX_get_error(ctx.get());
        int depth = X509_STORE_CTX_get_error_depth(ctx.get());
        X509* bad = X509_STORE_CTX_get_current_cert(ctx.get());
        ERR_clear_error();
        const std::string which = depth == 0
                                      ? cat(cert_file.string(), ": certificate")
                                      : cat(cert_file.string(), ": issuer certificate ",
                                            bad != nullptr ? subject_line(bad) : std::string("?"));
        switch (err) {
            case X509_V_ERR_CERT_HAS_EXPIRED:
                return absl::FailedPreconditionError(
                    cat(which, " expired on ",
                        asn1_time_iso(bad != nullptr ? X509_get0_notAfter(bad) : nullptr)));
            case X509_V_ERR_CERT_NOT_YET_VALID:
                return absl::FailedPreconditionError(
                    cat(which, " is not valid before ",
                        asn1_time_iso(bad != nullptr ? X509_get0_notBefore(bad) : nullptr),
                        " (check the clocks)"));
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
            case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            case X509_V_ERR_CERT_SIGNATURE_FAILURE:
            case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
            case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
                return absl::FailedPreconditionError(
                    cat(cert_file.string(), ": certificate is not signed by a CA in ",
                        ca_file.string(), " (issuer: ", issuer_line(leaf), ")"));
            case X509_V_ERR_INVALID_PURPOSE:
                return absl::FailedPreconditionError(
                    cat(which, " is not valid for ", verify_purpose_name(purpose)));
            default:
                return absl::FailedPreconditionError(cat(which, " failed verification against ",
                                                         ca_file.string(), ": ",
                                                         X509_verify_cert_error_string(err)));
        }
    }

    out.not_after = asn1_time_point(X509_get0_notAfter(leaf));
    out.cert_pem = std::move(cert_pem);
    out.key_pem = std::move(key_pem);
    out.ca_pem = std::move(ca_pem);
    return out;
}

absl::StatusOr<CaSigner> load_ca(const fs::path& cert_file, const fs::path& key_file) {
    CaSigner out;
    if (absl::Status st = read_small_files(
            {{cert_file, "CA certificate", &out.cert_pem}, {key_file, "CA key", &out.key_pem}});
        !st.ok()) {
        return st;
    }
    absl::StatusOr<ChainAndKey> pair =
        parse_chain_and_key(out.cert_pem, cert_file, out.key_pem, key_file);
    if (!pair.ok()) {
        return pair.status();
    }
    X509* ca = pair->chain.certs.front().get();
    if (X509_check_ca(ca) == 0) {
        return absl::FailedPreconditionError(cat(cert_file.string(), ": not a CA certificate"));
    }
    if (EVP_PKEY_eq(X509_get0_pubkey(ca), pair->key.get()) != 1) {
        ERR_clear_error();
        return absl::FailedPreconditionError(
            cat(key_file.string(), ": key does not match the CA certificate ", cert_file.string()));
    }
    // Keep only the CA certificate itself (a bundle file may hold more).
    absl::StatusOr<std::string> pem = to_pem(ca);
    if (!pem.ok()) {
        return pem.status();
    }
    out.cert_pem = std::move(*pem);
    return out;
}

namespace {

std::string serial_hex(X509* cert) {
    BnPtr bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
    if (!bn) {
        ERR_clear_error();
        return "";
    }
    char* hex = BN_bn2hex(bn.get());
    if (hex == nullptr) {
        ERR_clear_error();
        return "";
    }
    std::string out(hex);
    OPENSSL_free(hex);
    for (char& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

}  // namespace

absl::StatusOr<SignedCert> sign_csr(const CaSigner& ca, std::string_view csr_pem, CertKind kind,
                                    std::chrono::seconds validity) {
    constexpr int64_t kMaxValiditySeconds = int64_t{kMaxValidityDays} * 86400;
    if (validity.count() < 1 || validity.count() > kMaxValiditySeconds) {
        return absl::InvalidArgumentError(
            cat("validity of ", validity.count(), " seconds is outside 1..", kMaxValiditySeconds));
    }
    absl::StatusOr<CheckedCsr> csr = parse_and_check_csr(csr_pem);
    if (!csr.ok()) {
        return csr.status();
    }
    absl::StatusOr<ChainAndKey> pair =
        parse_chain_and_key(ca.cert_pem, "CA certificate", ca.key_pem, "CA key");
    if (!pair.ok()) {
        return pair.status();
    }
    X509* ca_cert = pair->chain.certs.front().get();
    const unsigned char* der = reinterpret_cast<const unsigned char*>(csr->public_key_der.data());
    PkeyPtr pub(d2i_PUBKEY(nullptr, &der, static_cast<long>(csr->public_key_der.size())));
    if (!pub) {
        return openssl_failure("decoding the CSR's public key");
    }
    X509Ptr cert(X509_new());
    if (!cert || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
        return openssl_failure("X509_new");
    }
    if (absl::Status st = set_random_serial(cert.get()); !st.ok()) {
        return st;
    }
    // A short-lived certificate is backdated by a tenth of its life at most, so that a third
    // of its life is still ahead when it arrives (renewal_due).
    const std::chrono::seconds backdate = std::min<std::chrono::seconds>(
        kDefaultBackdate, std::chrono::seconds(validity.count() / 10));
    long back = static_cast<long>(backdate.count());
    if (X509_time_adj_ex(X509_getm_notBefore(cert.get()), 0, -back, nullptr) == nullptr ||
        X509_time_adj_ex(X509_getm_notAfter(cert.get()), static_cast<int>(validity.count() / 86400),
                         static_cast<long>(validity.count() % 86400), nullptr) == nullptr) {
        return openssl_failure("setting the validity period");
    }
    if (ASN1_TIME_compare(X509_get0_notAfter(cert.get()), X509_get0_notAfter(ca_cert)) > 0 &&
        X509_set1_notAfter(cert.get(), X509_get0_notAfter(ca_cert)) != 1) {
        return openssl_failure("clamping notAfter");
    }
    absl::StatusOr<NamePtr> subject = make_subject(cert_kind_name(kind), csr->name);
    if (!subject.ok()) {
        return subject.status();
    }
    if (X509_set_subject_name(cert.get(), subject->get()) != 1 ||
        X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert)) != 1 ||
        X509_set_pubkey(cert.get(), pub.get()) != 1) {
        return openssl_failure("filling the certificate");
    }
    if (absl::Status st = finish_leaf(cert.get(), ca_cert, pair->key.get(), kind, csr->name, {});
        !st.ok()) {
        return st;
    }
    absl::StatusOr<std::string> pem = to_pem(cert.get());
    if (!pem.ok()) {
        return pem.status();
    }
    SignedCert out;
    out.cert_pem = std::move(*pem);
    out.serial_hex = serial_hex(cert.get());
    out.not_before = asn1_time_point(X509_get0_notBefore(cert.get()));
    out.not_after = asn1_time_point(X509_get0_notAfter(cert.get()));
    return out;
}

absl::StatusOr<CertInfo> cert_info(std::string_view cert_pem) {
    absl::StatusOr<CertChain> chain = parse_certs(cert_pem, "certificate");
    if (!chain.ok()) {
        return chain.status();
    }
    X509* cert = chain->certs.front().get();
    CertInfo out;
    out.serial_hex = serial_hex(cert);
    out.not_before = asn1_time_point(X509_get0_notBefore(cert));
    out.not_after = asn1_time_point(X509_get0_notAfter(cert));
    X509_NAME* subject = X509_get_subject_name(cert);
    int idx = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (idx >= 0) {
        const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, idx));
        out.common_name.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(data)),
                               static_cast<size_t>(ASN1_STRING_length(data)));
    }
    return out;
}

bool renewal_due(const CertInfo& cert, std::chrono::system_clock::time_point now) {
    const auto lifetime = cert.not_after - cert.not_before;
    return (cert.not_after - now) * 3 < lifetime;
}

}  // namespace picket::pki
