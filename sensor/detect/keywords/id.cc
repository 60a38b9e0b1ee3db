// id: IPv4 identification field, exact value (quotes allowed); IPv4 only.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_id(const decode::Packet& p, uint64_t* out) {
    if (p.ip_version != 4) {
        return false;
    }
    *out = p.ip_id;
    return true;
}

}  // namespace

bool parse_id(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "id", value, has_value, 65535, false, false, get_id, error);
}

}  // namespace picket::sensor::detect::keywords
