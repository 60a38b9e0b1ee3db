// bsize (Suricata 7 detect-bsize.c): size of the current sticky buffer, an unsigned 64-bit
// value in the integer-keyword grammar (parse_uint_spec, header_util.h).
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

uint64_t BsizeOption::hash() const {
    Hasher h;
    h.add(static_cast<uint64_t>(p.mode)).add(p.a).add(p.b);
    return h.h;
}

}  // namespace payload

namespace keywords {

bool parse_bsize(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!has_value || trim_blanks(value).empty()) {
        *error = "bsize: a value is required";
        return false;
    }
    auto opt = std::make_unique<payload::BsizeOption>();
    if (!parse_uint_spec("bsize", value, UINT64_MAX, &opt->p, error)) {
        return false;
    }
    payload::append_option(st, std::move(opt));
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
