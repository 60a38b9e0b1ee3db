#include "sensor/applayer/digest.h"

#include <openssl/evp.h>

#include "common/strings.h"

namespace picket::sensor::applayer {

std::string md5_hex(std::string_view s) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(s.data(), s.size(), md, &n, EVP_md5(), nullptr) != 1) {
        return std::string();
    }
    return strings::hex_encode(std::string_view(reinterpret_cast<const char*>(md), n));
}

}  // namespace picket::sensor::applayer
