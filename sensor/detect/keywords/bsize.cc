// bsize (Suricata 7 detect-bsize.c): size of the current sticky buffer, with the unsigned
// comparison forms shared with dsize (parse_uint_cmp).
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

bool UintCmp::match(uint64_t v) const {
    switch (op) {
        case Op::kEq:
            return v == a;
        case Op::kNe:
            return v != a;
        case Op::kLt:
            return v < a;
        case Op::kLe:
            return v <= a;
        case Op::kGt:
            return v > a;
        case Op::kGe:
            return v >= a;
        case Op::kRange:
            return v > a && v < b;
    }
    return false;
}

namespace {

bool parse_u(std::string_view s, uint64_t max, uint64_t* out) {
    int64_t v = 0;
    if (!parse_int(s, &v) || v < 0 || static_cast<uint64_t>(v) > max) {
        return false;
    }
    *out = static_cast<uint64_t>(v);
    return true;
}

}  // namespace

bool parse_uint_cmp(std::string_view s, uint64_t max, UintCmp* out) {
    s = trim_blanks(s);
    UintCmp c;
    using Op = UintCmp::Op;
    struct Prefix {
        const char* text;
        Op op;
    };
    static constexpr Prefix kPrefixes[] = {{"!=", Op::kNe}, {"<=", Op::kLe}, {">=", Op::kGe},
                                           {"!", Op::kNe},  {"<", Op::kLt},  {">", Op::kGt},
                                           {"=", Op::kEq}};
    for (const Prefix& p : kPrefixes) {
        const std::string_view t(p.text);
        if (s.substr(0, t.size()) == t) {
            c.op = p.op;
            if (!parse_u(s.substr(t.size()), max, &c.a)) {
                return false;
            }
            if (c.op == Op::kLt && c.a == 0) {
                return false;  // can never match
            }
            *out = c;
            return true;
        }
    }
    size_t sep = s.find("<>");
    size_t seplen = 2;
    if (sep == std::string_view::npos) {
        sep = s.find('-');
        seplen = 1;
    }
    if (sep != std::string_view::npos) {
        c.op = Op::kRange;
        if (!parse_u(s.substr(0, sep), max, &c.a) || !parse_u(s.substr(sep + seplen), max, &c.b) ||
            c.a >= c.b) {
            return false;
        }
        *out = c;
        return true;
    }
    c.op = Op::kEq;
    if (!parse_u(s, max, &c.a)) {
        return false;
    }
    *out = c;
    return true;
}

uint64_t BsizeOption::hash() const {
    Hasher h;
    h.add(static_cast<uint64_t>(p.op)).add(p.a).add(p.b);
    return h.h;
}

}  // namespace payload

namespace keywords {

bool parse_bsize(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    auto opt = std::make_unique<payload::BsizeOption>();
    if (!has_value || !payload::parse_uint_cmp(value, UINT32_MAX, &opt->p)) {
        *error = "bsize: invalid value '" + std::string(trim_blanks(value)) +
                 "' (expected N, <N, <=N, >N, >=N, !N or N<>M)";
        return false;
    }
    payload::append_option(st, std::move(opt));
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
