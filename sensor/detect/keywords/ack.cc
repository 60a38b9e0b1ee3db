// ack: TCP acknowledgement number, exact value (the ACK flag is not required, as in Suricata).
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_ack(const decode::Packet& p, uint64_t* out) {
    if (!p.has(decode::kFlagTcp)) {
        return false;
    }
    *out = p.tcp_ack;
    return true;
}

}  // namespace

bool parse_ack(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "ack", value, has_value, UINT32_MAX, false, false, get_ack, error);
}

}  // namespace picket::sensor::detect::keywords
