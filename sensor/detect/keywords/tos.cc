// tos: IPv4 type of service, [!]N with N decimal or hex (x1F / 0x1F); IPv4 only as in Suricata.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_tos(const decode::Packet& p, uint64_t* out) {
    if (p.ip_version != 4) {
        return false;
    }
    *out = p.tos;
    return true;
}

}  // namespace

bool parse_tos(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "tos", value, has_value, 255, true, true, get_tos, error);
}

}  // namespace picket::sensor::detect::keywords
