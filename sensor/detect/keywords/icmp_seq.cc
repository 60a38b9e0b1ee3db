// icmp_seq: ICMP sequence number, exact value; only ICMP messages that carry one, as icmp_id.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_icmp_seq(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "icmp_seq", value, has_value, 65535, false, false,
                            packet_field<icmp_has_id_seq, &decode::Packet::icmp_seq>, error);
}

}  // namespace picket::sensor::detect::keywords
