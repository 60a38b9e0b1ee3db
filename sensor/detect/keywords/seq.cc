// seq: TCP sequence number, exact value; TCP only.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_seq(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "seq", value, has_value, UINT32_MAX, false, false,
                            packet_field<has_tcp, &decode::Packet::tcp_seq>, error);
}

}  // namespace picket::sensor::detect::keywords
