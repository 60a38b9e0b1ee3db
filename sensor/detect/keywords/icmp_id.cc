// icmp_id: ICMP identifier, exact value; only ICMP messages that carry one (echo, timestamp,
// information, address mask; ICMPv6 echo), as in Suricata.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_icmp_id(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "icmp_id", value, has_value, 65535, false, false,
                            packet_field<icmp_has_id_seq, &decode::Packet::icmp_id>, error);
}

}  // namespace picket::sensor::detect::keywords
