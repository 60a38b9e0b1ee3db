// Mapping a peer certificate the TLS stack verified to a peer identity (CN, OU, SAN checks).
#include "common/pki/pki.h"

#include <arpa/inet.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/pki/internal.h"
#include "common/strings.h"

namespace picket::pki {
namespace {

using internal::BioPtr;
using internal::GeneralNamesPtr;
using internal::openssl_error;
using internal::subject_line;
using internal::X509Ptr;
using strings::cat;

absl::StatusOr<std::string> name_entry(X509_NAME* name, int nid, std::string_view what) {
    int idx = X509_NAME_get_index_by_NID(name, nid, -1);
    if (idx < 0) {
        return std::string();
    }
    if (X509_NAME_get_index_by_NID(name, nid, idx) >= 0) {
        return absl::InvalidArgumentError(cat("certificate subject has more than one ", what));
    }
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)));
    if (n < 0) {
        return absl::InvalidArgumentError(
            cat("certificate ", what, " is not valid text: ", openssl_error()));
    }
    std::string out(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
    if (out.find('\0') != std::string::npos) {
        return absl::InvalidArgumentError(cat("certificate ", what, " contains NUL"));
    }
    return out;
}

}  // namespace

absl::StatusOr<PeerIdentity> peer_identity(std::string_view cert_pem) {
    BioPtr bio(BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
    X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!cert) {
        return absl::InvalidArgumentError(cat("peer certificate is not PEM: ", openssl_error()));
    }
    PeerIdentity id;
    X509_NAME* subject = X509_get_subject_name(cert.get());
    absl::StatusOr<std::string> cn = name_entry(subject, NID_commonName, "commonName");
    if (!cn.ok()) {
        return cn.status();
    }
    absl::StatusOr<std::string> ou =
        name_entry(subject, NID_organizationalUnitName, "organizationalUnitName");
    if (!ou.ok()) {
        return ou.status();
    }
    id.common_name = std::move(*cn);
    id.kind = std::move(*ou);

    GeneralNamesPtr gens(static_cast<GENERAL_NAMES*>(
        X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
    for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens.get()); ++i) {
        const GENERAL_NAME* gen = sk_GENERAL_NAME_value(gens.get(), i);
        if (gen->type == GEN_DNS) {
            const ASN1_STRING* s = gen->d.dNSName;
            std::string dns(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                            static_cast<size_t>(ASN1_STRING_length(s)));
            if (dns.find('\0') != std::string::npos) {
                return absl::InvalidArgumentError("peer certificate dNSName contains NUL");
            }
            id.dns_names.push_back(std::move(dns));
        } else if (gen->type == GEN_IPADD) {
            const ASN1_OCTET_STRING* s = gen->d.iPAddress;
            char text[INET6_ADDRSTRLEN] = {};
            int len = ASN1_STRING_length(s);
            int af = len == 4 ? AF_INET : len == 16 ? AF_INET6 : 0;
            if (af == 0 || inet_ntop(af, ASN1_STRING_get0_data(s), text, sizeof(text)) == nullptr) {
                return absl::InvalidArgumentError("peer certificate has a malformed iPAddress");
            }
            id.ip_addresses.emplace_back(text);
        }
    }
    ERR_clear_error();

    if (id.common_name.empty()) {
        return absl::InvalidArgumentError(
            cat("peer certificate ", subject_line(cert.get()), " has no commonName"));
    }
    if (absl::Status st = validate_name(id.common_name); !st.ok()) {
        return absl::InvalidArgumentError(cat("peer certificate commonName: ", st.message()));
    }
    if (!id.dns_names.empty()) {
        bool found = false;
        for (const std::string& d : id.dns_names) {
            found = found || d == id.common_name;
        }
        if (!found) {
            return absl::InvalidArgumentError(cat("peer certificate commonName \"", id.common_name,
                                                  "\" is not among its dNSNames"));
        }
    }
    id.name = id.common_name;
    return id;
}

absl::StatusOr<std::string> sensor_name_from_cert(std::string_view cert_pem) {
    absl::StatusOr<PeerIdentity> id = peer_identity(cert_pem);
    if (!id.ok()) {
        return id.status();
    }
    if (id->kind != cert_kind_name(CertKind::kSensor)) {
        return absl::PermissionDeniedError(cat(
            "certificate \"", id->name, "\" is not a sensor certificate (OU \"", id->kind, "\")"));
    }
    return std::move(id->name);
}

}  // namespace picket::pki
