// tos: IPv4 type of service, [!]N with N decimal or hex (x1F / 0x1F); IPv4 only as in Suricata.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_tos(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "tos", value, has_value, 255, true, true,
                            packet_field<has_ipv4, &decode::Packet::tos>, error);
}

}  // namespace picket::sensor::detect::keywords
