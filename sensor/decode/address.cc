#include "sensor/decode/decode.h"

#include <arpa/inet.h>

namespace picket::sensor::decode {

bool Address::is_v4() const {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(b, kPrefix, 12) == 0;
}

const char* Address::to_string(char* buf) const {
    if (is_v4()) {
        inet_ntop(AF_INET, b + 12, buf, 46);
    } else {
        inet_ntop(AF_INET6, b, buf, 46);
    }
    return buf;
}

}  // namespace picket::sensor::decode
