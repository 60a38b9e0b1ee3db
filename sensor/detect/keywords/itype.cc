// itype: ICMPv4/ICMPv6 type with the unsigned grammar (N, <N, >N, N<>M, ...).
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_itype(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_uint_option(st, "itype", value, has_value, 255,
                           packet_field<has_icmp, &decode::Packet::icmp_type>, error);
}

}  // namespace picket::sensor::detect::keywords
