// Bearer tokens for enrollment and the admin service: generation, the stored hash, comparison.
#include "common/pki/pki.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "common/pki/internal.h"
#include "common/strings.h"

namespace picket::pki {

using internal::openssl_failure;

std::string token_hash(std::string_view token) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(token.data(), token.size(), md, &len, EVP_sha256(), nullptr) != 1) {
        // Only on a broken OpenSSL install; an empty hash never equals a stored one.
        ERR_clear_error();
        return std::string();
    }
    return strings::hex_encode(std::string_view(reinterpret_cast<const char*>(md), len));
}

bool constant_time_equal(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::StatusOr<std::string> generate_token() {
    unsigned char raw[32];
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        return openssl_failure("RAND_bytes");
    }
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (unsigned char byte : raw) {
        acc = (acc << 8) | byte;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
        }
    }
    if (bits > 0) {
        out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
    }
    OPENSSL_cleanse(raw, sizeof(raw));
    return out;
}

}  // namespace picket::pki
