// The fleet's PKI: creates the fleet CA and the manager / sensor / admin certificates
// (`picketctl pki init|issue`), loads and checks TLS credentials for the gRPC links, maps a
// client certificate to a peer identity, and hashes / compares / generates bearer tokens.
// Control-plane code only (start-up, CLI, per-connection checks); every function is
// thread-safe and keeps no state.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace picket::pki {

// What a certificate is for. Written into the subject's OU so that the manager can tell a
// sensor certificate from an admin certificate issued by the same CA.
enum class CertKind {
    kManager,  // TLS server (extendedKeyUsage serverAuth); SANs = the manager's names/IPs.
    kSensor,   // TLS client (clientAuth); CN and SAN dNSName = the sensor name.
    kAdmin,    // TLS client (clientAuth) for picketctl; CN = operator name.
};

std::string_view cert_kind_name(CertKind kind);  // "manager", "sensor", "admin"

// Paths of the files written by init_ca / issue.
struct IssuedFiles {
    std::filesystem::path cert;
    std::filesystem::path key;
};

// Default validity: CA 10 years, leaf certificates 1 year.
inline constexpr int kDefaultCaValidityDays = 3650;
inline constexpr int kDefaultCertValidityDays = 365;
// notBefore is backdated by this much to tolerate clock skew between hosts.
inline constexpr std::chrono::seconds kDefaultBackdate{300};

// A name usable as a file name and a certificate CN: 1-64 chars of [A-Za-z0-9._-], not
// starting with '.' or '-', and not the reserved "ca". InvalidArgument otherwise.
absl::Status validate_name(std::string_view name);

// Creates dir (mode 0700 when it does not exist) with dir/ca.key (0600, PKCS#8 ECDSA P-256)
// and dir/ca.crt (self-signed, basicConstraints CA:TRUE pathlen:0 critical, keyUsage
// keyCertSign+cRLSign critical, SKI/AKI). AlreadyExists naming the file if either exists.
absl::StatusOr<IssuedFiles> init_ca(const std::filesystem::path& dir, std::string_view common_name,
                                    int validity_days = kDefaultCaValidityDays);

// Issues dir/<name>.key (0600) and dir/<name>.crt signed by dir/ca.{crt,key}. `sans` are
// extra subjectAltNames (IPv4/IPv6 literals become iPAddress, anything else must be a DNS
// name); the name itself is always added as a dNSName. A random 128-bit serial; the
// certificate is valid from now - backdate for validity_days. Refuses to overwrite.
//
// `backdate` is also how tests make expired or not-yet-valid certificates: a backdate
// larger than the validity gives an expired one, a negative backdate a future notBefore.
absl::StatusOr<IssuedFiles> issue(const std::filesystem::path& dir, CertKind kind,
                                  std::string_view name, const std::vector<std::string>& sans,
                                  int validity_days = kDefaultCertValidityDays,
                                  std::chrono::seconds backdate = kDefaultBackdate);

// PEM strings ready for grpc::SslServerCredentialsOptions (pem_root_certs = ca_pem,
// pem_key_cert_pairs = {key_pem, cert_pem}) or grpc::SslCredentialsOptions.
struct TlsCredentials {
    std::string cert_pem;  // leaf first, then any intermediates from the file
    std::string key_pem;
    std::string ca_pem;
    std::chrono::system_clock::time_point not_after;  // of the leaf, for expiry warnings
};

// What the loaded certificate must be usable for (checked through extendedKeyUsage).
enum class Purpose { kAny, kServer, kClient };

// Reads the three PEM files and checks them: each file exists and parses, the key matches
// the certificate (EVP_PKEY_eq), the certificate chains to a CA in ca_file and is within its
// validity period (X509_verify_cert), and, unless kAny, it is allowed for `purpose`.
// Errors name the file: NotFound, InvalidArgument (not PEM / wrong content),
// FailedPrecondition (key mismatch, expired, not yet valid, not signed by the CA, wrong
// purpose). Encrypted keys are refused (never prompts on the terminal).
absl::StatusOr<TlsCredentials> load_credentials(const std::filesystem::path& cert_file,
                                                const std::filesystem::path& key_file,
                                                const std::filesystem::path& ca_file,
                                                Purpose purpose = Purpose::kAny);

// Identity in a peer certificate, e.g. gRPC's auth property "x509_pem_cert" of a sensor
// whose chain the TLS stack has already verified against the fleet CA.
struct PeerIdentity {
    std::string name;  // the identity to use: the CN, validated with validate_name
    std::string common_name;
    std::string kind;  // subject OU as written by issue(): "sensor", "admin", "manager", or ""
    std::vector<std::string> dns_names;     // SAN dNSName entries, in certificate order
    std::vector<std::string> ip_addresses;  // SAN iPAddress entries, textual form
};

// Parses the first certificate in cert_pem. InvalidArgument when it does not parse, has no
// CN, the CN is not a valid name, or the certificate carries SAN dNSNames none of which
// equals the CN (CN and SAN must agree, so one cannot be chosen to impersonate the other).
// Does NOT verify the chain: call it only on certificates the TLS handshake verified.
absl::StatusOr<PeerIdentity> peer_identity(std::string_view cert_pem);

// The manager's mapping from a verified client certificate to a sensor name: peer_identity()
// plus kind == "sensor" (PermissionDenied for an admin or manager certificate, or one not
// issued by issue()).
absl::StatusOr<std::string> sensor_name_from_cert(std::string_view cert_pem);

// Lowercase hex SHA-256 of the token (64 chars): what the manager stores instead of tokens.
std::string token_hash(std::string_view token);

// Compares in time that depends only on the lengths (CRYPTO_memcmp). Compare token hashes,
// which have a fixed length, so nothing about the token leaks.
bool constant_time_equal(std::string_view a, std::string_view b);

// 32 bytes from the OpenSSL CSPRNG, base64url without padding (43 chars).
absl::StatusOr<std::string> generate_token();

// ---- Enrollment: certificate signing requests (csr.cc) and signing them with the fleet CA.

// A CSR is refused past this size (a P-256 CSR is about 450 bytes).
inline constexpr size_t kMaxCsrBytes = 16 * 1024;

struct KeyAndCsr {
    std::string key_pem;  // PKCS#8, unencrypted: stays with the sensor, never sent
    std::string csr_pem;  // PKCS#10, subject O=Picket, OU=sensor, CN=name, signed by the key
};

// A new ECDSA P-256 key and a CSR for `name` (validate_name). No extensions are requested:
// the CA decides them.
absl::StatusOr<KeyAndCsr> make_csr(std::string_view name);

// What the manager takes from a CSR after checking it.
struct CheckedCsr {
    std::string name;            // the CN
    std::string public_key_der;  // SubjectPublicKeyInfo, DER
};

// Parses one PEM CSR and checks it; every failure is InvalidArgument "certificate signing
// request: ...": not PEM, larger than kMaxCsrBytes, signature not verifying (proof of
// possession of the key), key not ECDSA P-256, subject without exactly one CN, CN not a valid
// name. Requested extensions and SANs are ignored (sign_csr sets its own).
absl::StatusOr<CheckedCsr> parse_and_check_csr(std::string_view csr_pem);

// The fleet CA as the manager holds it to sign enrollments (tls.ca-key).
struct CaSigner {
    std::string cert_pem;
    std::string key_pem;
};

// Reads the CA certificate (the first one in the file) and its key: NotFound / InvalidArgument
// naming the file, FailedPrecondition when it is not a CA or the key does not match it.
absl::StatusOr<CaSigner> load_ca(const std::filesystem::path& cert_file,
                                 const std::filesystem::path& key_file);

struct SignedCert {
    std::string cert_pem;
    std::string serial_hex;  // lowercase
    std::chrono::system_clock::time_point not_before;
    std::chrono::system_clock::time_point not_after;
};

// Checks the CSR (parse_and_check_csr) and issues a certificate for its key, as issue() would
// for `kind` (subject O=Picket, OU=kind, CN=name; SAN dNSName = name; the extensions of
// issue(); random serial). Valid from now - min(kDefaultBackdate, validity / 10) for
// `validity` (1 second .. 100 years), never past the CA's notAfter.
absl::StatusOr<SignedCert> sign_csr(const CaSigner& ca, std::string_view csr_pem, CertKind kind,
                                    std::chrono::seconds validity);

// Serial, CN and validity of the first certificate in cert_pem (InvalidArgument if none).
struct CertInfo {
    std::string serial_hex;
    std::string common_name;
    std::chrono::system_clock::time_point not_before;
    std::chrono::system_clock::time_point not_after;
};
absl::StatusOr<CertInfo> cert_info(std::string_view cert_pem);

// True when less than a third of the certificate's lifetime (notBefore..notAfter) is left at
// `now`: time to renew.
bool renewal_due(const CertInfo& cert, std::chrono::system_clock::time_point now);

// ---- Bootstrap tokens (tokens.cc): "<id>.<secret>", id public, secret shown once.

struct BootstrapToken {
    std::string id;      // 8 characters of [a-z0-9] when generated; 6-16 accepted
    std::string secret;  // 43 characters of base64url (256 bits) when generated; 22-128 accepted
    std::string text() const { return id + "." + secret; }
};
absl::StatusOr<BootstrapToken> generate_bootstrap_token();
// InvalidArgument "bootstrap token: ..." naming what is wrong with the form (never echoing
// the secret).
absl::StatusOr<BootstrapToken> parse_bootstrap_token(std::string_view text);
// InvalidArgument unless 6-16 characters of [a-z0-9].
absl::Status validate_bootstrap_token_id(std::string_view id);

}  // namespace picket::pki
