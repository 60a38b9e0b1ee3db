// libFuzzer target for common/pki's CSR checks, what the manager runs on a CSR any client of
// SensorLink.Enroll can send before it knows anything about it: parse_and_check_csr() on
// arbitrary bytes. When a CSR is accepted, it is also signed (sign_csr with a CA made once per
// process) and the certificate must map back to the CSR's name as a sensor (peer_identity):
// what the manager signs is what it checked.
// Seed corpus: tests/fuzz/corpus/csr (tests/fuzz/corpus/make_csr_corpus.py, openssl CLI).
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "common/pki/pki.h"

namespace {

const picket::pki::CaSigner& ca() {
    static const picket::pki::CaSigner signer = [] {
        char tmpl[] = "/tmp/picket-csr-fuzz-XXXXXX";
        const char* dir = mkdtemp(tmpl);
        if (dir == nullptr) {
            abort();
        }
        const std::filesystem::path d = std::filesystem::path(dir) / "ca";
        if (!picket::pki::init_ca(d, "fuzz CA").ok()) {
            abort();
        }
        auto loaded = picket::pki::load_ca(d / "ca.crt", d / "ca.key");
        std::filesystem::remove_all(dir);
        if (!loaded.ok()) {
            abort();
        }
        return *loaded;
    }();
    return signer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view pem(reinterpret_cast<const char*>(data), size);
    auto checked = picket::pki::parse_and_check_csr(pem);
    if (!checked.ok()) {
        if (checked.status().code() != absl::StatusCode::kInvalidArgument ||
            checked.status().message().substr(0, 29) != "certificate signing request: ") {
            abort();  // every refusal is INVALID_ARGUMENT naming the CSR
        }
        return 0;
    }
    if (!picket::pki::validate_name(checked->name).ok() || checked->public_key_der.empty()) {
        abort();
    }
    auto cert = picket::pki::sign_csr(ca(), pem, picket::pki::CertKind::kSensor,
                                      std::chrono::seconds(3600));
    if (!cert.ok()) {
        abort();  // a CSR that passed the checks must be signable
    }
    auto id = picket::pki::peer_identity(cert->cert_pem);
    if (!id.ok() || id->name != checked->name || id->kind != "sensor" ||
        id->dns_names.size() != 1) {
        abort();
    }
    return 0;
}
