// ttl: IPv4 TTL / IPv6 hop limit with the unsigned grammar (N, <N, >N, <=N, >=N, !N, N-M).
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_ttl(const decode::Packet& p, uint64_t* out) {
    if (p.ip_version != 4 && p.ip_version != 6) {
        return false;
    }
    *out = p.ttl;
    return true;
}

}  // namespace

bool parse_ttl(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_uint_option(st, "ttl", value, has_value, 255, get_ttl, error);
}

}  // namespace picket::sensor::detect::keywords
