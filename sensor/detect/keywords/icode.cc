// icode: ICMPv4/ICMPv6 code with the unsigned grammar (N, <N, >N, N<>M, ...).
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_icode(const decode::Packet& p, uint64_t* out) {
    if (!p.has(decode::kFlagIcmpv4) && !p.has(decode::kFlagIcmpv6)) {
        return false;
    }
    *out = p.icmp_code;
    return true;
}

}  // namespace

bool parse_icode(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_uint_option(st, "icode", value, has_value, 255, get_icode, error);
}

}  // namespace picket::sensor::detect::keywords
