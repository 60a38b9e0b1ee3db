// seq: TCP sequence number, exact value; TCP only.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

bool get_seq(const decode::Packet& p, uint64_t* out) {
    if (!p.has(decode::kFlagTcp)) {
        return false;
    }
    *out = p.tcp_seq;
    return true;
}

}  // namespace

bool parse_seq(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_exact_option(st, "seq", value, has_value, UINT32_MAX, false, false, get_seq, error);
}

}  // namespace picket::sensor::detect::keywords
