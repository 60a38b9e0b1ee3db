// ack: TCP acknowledgement number, exact value (the ACK flag is not required, as in Suricata).
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_ack(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "ack", value, has_value, UINT32_MAX, false, false,
                            packet_field<has_tcp, &decode::Packet::tcp_ack>, error);
}

}  // namespace picket::sensor::detect::keywords
