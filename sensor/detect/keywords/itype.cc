// itype: ICMPv4/ICMPv6 type with the unsigned grammar (N, <N, >N, N<>M, ...).
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_itype(const decode::Packet& p, uint64_t* out) {
    if (!p.has(decode::kFlagIcmpv4) && !p.has(decode::kFlagIcmpv6)) {
        return false;
    }
    *out = p.icmp_type;
    return true;
}

}  // namespace

bool parse_itype(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_uint_option(st, "itype", value, has_value, 255, get_itype, error);
}

}  // namespace picket::sensor::detect::keywords
