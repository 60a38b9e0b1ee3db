// Internal to common/pki (not a public header): OpenSSL error reporting and owning pointers
// shared by the certificate code (pki.cc), peer identities (identity.cc), tokens (tokens.cc) and
// certificate signing requests (csr.cc).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace picket::pki::internal {

// Drains the thread's OpenSSL error queue into one line (so a later call does not report a
// stale error).
std::string openssl_error();

// InternalError "what: <the queued OpenSSL errors>".
absl::Status openssl_failure(std::string_view what);

// The certificate's subject in OpenSSL's one-line form, for messages.
std::string subject_line(X509* cert);

template <auto Fn>
struct Deleter {
    template <class T>
    void operator()(T* p) const {
        Fn(p);
    }
};
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using GeneralNamesPtr = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using ReqPtr = std::unique_ptr<X509_REQ, Deleter<X509_REQ_free>>;

// A fresh ECDSA P-256 key (the only key type pki creates).
absl::StatusOr<PkeyPtr> generate_p256_key();
// The key as unencrypted PKCS#8 PEM (what gRPC reads); the intermediate buffer is cleansed.
absl::StatusOr<std::string> key_to_pem(EVP_PKEY* key);

}  // namespace picket::pki::internal
