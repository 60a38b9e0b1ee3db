// ttl: IPv4 TTL / IPv6 hop limit with the unsigned grammar (N, <N, >N, <=N, >=N, !N, N-M).
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_ttl(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_uint_option(st, "ttl", value, has_value, 255,
                           packet_field<has_ip, &decode::Packet::ttl>, error);
}

}  // namespace picket::sensor::detect::keywords
