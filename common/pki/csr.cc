// Certificate signing requests: the sensor makes one for a key it keeps (make_csr); the manager
// checks one before signing it (parse_and_check_csr). The manager never trusts anything in a
// CSR beyond the key and the CN: extensions and SANs are decided by sign_csr.
#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "common/pki/internal.h"
#include "common/pki/pki.h"
#include "common/strings.h"

namespace picket::pki {
namespace {

using internal::BioPtr;
using internal::PkeyPtr;
using internal::ReqPtr;
using strings::cat;

constexpr std::string_view kWhat = "certificate signing request: ";

absl::Status bad_csr(std::string_view why) {
    return absl::InvalidArgumentError(cat(kWhat, why));
}

// "RSA", "EC secp384r1", "ED25519": for the "key must be ECDSA P-256" message.
std::string key_description(EVP_PKEY* key) {
    const char* type = EVP_PKEY_get0_type_name(key);
    std::string out = type != nullptr ? type : "unknown";
    if (EVP_PKEY_is_a(key, "EC")) {
        char group[64] = {};
        size_t len = 0;
        if (EVP_PKEY_get_group_name(key, group, sizeof(group), &len) == 1) {
            out += cat(" ", std::string_view(group, len));
        }
    } else if (int bits = EVP_PKEY_get_bits(key); bits > 0) {
        out += cat("-", bits);
    }
    ERR_clear_error();
    return out;
}

bool is_p256(EVP_PKEY* key) {
    if (!EVP_PKEY_is_a(key, "EC")) {
        return false;
    }
    char group[64] = {};
    size_t len = 0;
    bool ok =
        EVP_PKEY_get_group_name(key, group, sizeof(group), &len) == 1 &&
        (std::string_view(group, len) == "prime256v1" || std::string_view(group, len) == "P-256");
    ERR_clear_error();
    return ok;
}

}  // namespace

absl::StatusOr<KeyAndCsr> make_csr(std::string_view name) {
    if (absl::Status st = validate_name(name); !st.ok()) {
        return st;
    }
    absl::StatusOr<PkeyPtr> key = internal::generate_p256_key();
    if (!key.ok()) {
        return key.status();
    }
    ReqPtr req(X509_REQ_new());
    if (!req || X509_REQ_set_version(req.get(), 0) != 1) {
        return internal::openssl_failure("X509_REQ_new");
    }
    X509_NAME* subject = X509_REQ_get_subject_name(req.get());
    auto add = [&](const char* field, std::string_view value) {
        return X509_NAME_add_entry_by_txt(subject, field, MBSTRING_UTF8,
                                          reinterpret_cast<const unsigned char*>(value.data()),
                                          static_cast<int>(value.size()), -1, 0) == 1;
    };
    if (!add("O", "Picket") || !add("OU", "sensor") || !add("CN", name) ||
        X509_REQ_set_pubkey(req.get(), key->get()) != 1 ||
        X509_REQ_sign(req.get(), key->get(), EVP_sha256()) <= 0) {
        return internal::openssl_failure("building the certificate signing request");
    }
    BioPtr bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_X509_REQ(bio.get(), req.get()) != 1) {
        return internal::openssl_failure("PEM_write_bio_X509_REQ");
    }
    char* data = nullptr;
    long n = BIO_get_mem_data(bio.get(), &data);
    KeyAndCsr out;
    out.csr_pem.assign(data, static_cast<size_t>(n));
    absl::StatusOr<std::string> key_pem = internal::key_to_pem(key->get());
    if (!key_pem.ok()) {
        return key_pem.status();
    }
    out.key_pem = std::move(*key_pem);
    return out;
}

absl::StatusOr<CheckedCsr> parse_and_check_csr(std::string_view csr_pem) {
    if (csr_pem.size() > kMaxCsrBytes) {
        return bad_csr(cat("larger than ", kMaxCsrBytes, " bytes"));
    }
    BioPtr bio(BIO_new_mem_buf(csr_pem.data(), static_cast<int>(csr_pem.size())));
    if (!bio) {
        return internal::openssl_failure("BIO_new_mem_buf");
    }
    ReqPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
    ERR_clear_error();
    if (!req) {
        return bad_csr("not a PEM certificate request");
    }
    EVP_PKEY* key = X509_REQ_get0_pubkey(req.get());
    if (key == nullptr) {
        ERR_clear_error();
        return bad_csr("no usable public key");
    }
    // Proof of possession: the request is signed by the key it asks a certificate for.
    const int verified = X509_REQ_verify(req.get(), key);
    ERR_clear_error();
    if (verified != 1) {
        return bad_csr("signature does not verify");
    }
    if (!is_p256(key)) {
        return bad_csr(cat("key must be ECDSA P-256, not ", key_description(key)));
    }
    X509_NAME* subject = X509_REQ_get_subject_name(req.get());
    int idx = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (idx < 0) {
        return bad_csr("subject has no CN");
    }
    if (X509_NAME_get_index_by_NID(subject, NID_commonName, idx) >= 0) {
        return bad_csr("subject has more than one CN");
    }
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, idx)));
    if (n < 0) {
        ERR_clear_error();
        return bad_csr("CN is not valid text");
    }
    CheckedCsr out;
    out.name.assign(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
    if (absl::Status st = validate_name(out.name); !st.ok()) {
        // validate_name never echoes control characters: its message quotes only valid names,
        // or names the rule. Bytes outside [A-Za-z0-9._-] are not repeated here.
        bool printable = true;
        for (unsigned char c : out.name) {
            printable = printable && c >= 0x20 && c < 0x7f;
        }
        return bad_csr(printable ? cat("CN: ", st.message())
                                 : std::string("CN contains characters other than letters, "
                                               "digits, '.', '_' and '-'"));
    }
    unsigned char* der = nullptr;
    int der_len = i2d_PUBKEY(key, &der);
    if (der_len <= 0) {
        return internal::openssl_failure("encoding the CSR's public key");
    }
    out.public_key_der.assign(reinterpret_cast<const char*>(der), static_cast<size_t>(der_len));
    OPENSSL_free(der);
    return out;
}

}  // namespace picket::pki
