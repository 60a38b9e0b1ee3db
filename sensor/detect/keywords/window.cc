// window: TCP window (raw, unscaled), [!]N; TCP only.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

bool parse_window(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "window", value, has_value, 65535, true, false,
                            packet_field<has_tcp, &decode::Packet::tcp_window>, error);
}

}  // namespace picket::sensor::detect::keywords
