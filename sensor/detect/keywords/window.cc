// window: TCP window (raw, unscaled), [!]N; TCP only.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_window(const decode::Packet& p, uint64_t* out) {
    if (!p.has(decode::kFlagTcp)) {
        return false;
    }
    *out = p.tcp_window;
    return true;
}

}  // namespace

bool parse_window(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "window", value, has_value, 65535, true, false, get_window, error);
}

}  // namespace picket::sensor::detect::keywords
