// Bearer tokens for enrollment and the admin service, and bootstrap tokens (ID.SECRET):
// generation, the stored hash, comparison.
#include "common/pki/pki.h"

#include <algorithm>

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

namespace {

bool is_id_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool is_base64url_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

}  // namespace

absl::Status validate_bootstrap_token_id(std::string_view id) {
    if (id.size() < 6 || id.size() > 16 ||
        !std::all_of(id.begin(), id.end(), [](char c) { return is_id_char(c); })) {
        return absl::InvalidArgumentError("bootstrap token id must be 6-16 characters of [a-z0-9]");
    }
    return absl::OkStatus();
}

absl::StatusOr<BootstrapToken> generate_bootstrap_token() {
    unsigned char raw[8];
    if (RAND_bytes(raw, sizeof(raw)) != 1) {
        return openssl_failure("RAND_bytes");
    }
    static constexpr char kIdAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    BootstrapToken t;
    for (unsigned char b : raw) {
        // 256 is not a multiple of 36: the id is public, so a slight bias costs nothing.
        t.id.push_back(kIdAlphabet[b % 36]);
    }
    absl::StatusOr<std::string> secret = generate_token();
    if (!secret.ok()) {
        return secret.status();
    }
    t.secret = std::move(*secret);
    return t;
}

absl::StatusOr<BootstrapToken> parse_bootstrap_token(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
        text.remove_suffix(1);  // a token file usually ends with a newline
    }
    const size_t dot = text.find('.');
    if (dot == std::string_view::npos) {
        return absl::InvalidArgumentError("bootstrap token: expected the form ID.SECRET");
    }
    BootstrapToken t{std::string(text.substr(0, dot)), std::string(text.substr(dot + 1))};
    if (absl::Status st = validate_bootstrap_token_id(t.id); !st.ok()) {
        return st;
    }
    if (t.secret.size() < 22 || t.secret.size() > 128 ||
        !std::all_of(t.secret.begin(), t.secret.end(),
                     [](char c) { return is_base64url_char(c); })) {
        return absl::InvalidArgumentError(
            "bootstrap token: the secret must be 22-128 characters of base64url");
    }
    return t;
}

}  // namespace picket::pki
