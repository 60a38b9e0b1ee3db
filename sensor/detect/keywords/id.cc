// id: IPv4 identification field, exact value (quotes allowed); IPv4 only.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_id(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "id", value, has_value, 65535, false, false,
                            packet_field<has_ipv4, &decode::Packet::ip_id>, error);
}

}  // namespace picket::sensor::detect::keywords
