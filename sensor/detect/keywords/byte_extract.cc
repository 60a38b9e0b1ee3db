// byte_extract (Suricata 7 detect-byte-extract.c): stores a value in a rule variable and
// moves the cursor after the extracted bytes.
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

bool ByteExtractOption::eval(const EvalInput& in, uint32_t cursor, uint32_t* new_cursor) const {
    uint64_t v = 0;
    uint32_t end = 0;
    if (!extract_number(p.ex, in, cursor, &v, &end)) {
        return false;
    }
    v *= p.multiplier;
    if (p.align != 0 && (v % p.align) != 0) {
        v += p.align - (v % p.align);
    }
    in.scratch.byte_values[p.var] = v;
    *new_cursor = end;
    return true;
}

uint64_t ByteExtractOption::hash() const {
    Hasher h;
    p.ex.hash(h);
    h.add(p.multiplier).add(p.align).add(p.name).add(static_cast<uint64_t>(p.var));
    return h.h;
}

bool valid_var_name(std::string_view s) {
    if (s.empty() ||
        !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) {
        return false;
    }
    for (char c : s) {
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.')) {
            return false;
        }
    }
    return true;
}

}  // namespace payload

namespace keywords {

bool parse_byte_extract(ParseState& st, std::string_view value, bool has_value,
                        std::string* error) {
    auto toks = payload::split_args(value);
    if (!has_value || toks.size() < 3) {
        *error = "byte_extract: expected <bytes>,<offset>,<name>[,flags]";
        return false;
    }
    auto opt = std::make_unique<payload::ByteExtractOption>();
    auto& p = opt->p;
    int64_t n = 0;
    if (!payload::parse_int(toks[0], &n) || n < 1 || n > 23) {
        *error = "byte_extract: invalid number of bytes '" + std::string(toks[0]) +
                 "' (1 to 8, up to 23 with string)";
        return false;
    }
    p.ex.nbytes = payload::VarValue{n, -1};
    if (!payload::parse_int(toks[1], &n) || n < -65535 || n > 65535) {
        *error = "byte_extract: invalid offset '" + std::string(toks[1]) + "' (-65535 to 65535)";
        return false;
    }
    p.ex.offset = payload::VarValue{n, -1};
    if (!payload::valid_var_name(toks[2])) {
        *error = "byte_extract: invalid variable name '" + std::string(toks[2]) + "'";
        return false;
    }
    p.name = std::string(toks[2]);
    std::vector<std::string_view> flags(toks.begin() + 3, toks.end());
    std::vector<std::string_view> rest;
    bool is_string = false;
    if (!payload::parse_common_flags("byte_extract", flags, &p.ex, &is_string, &rest, error)) {
        return false;
    }
    if (p.ex.has_bitmask) {
        *error = "byte_extract: bitmask is not supported";
        return false;
    }
    for (std::string_view t : rest) {
        if (t.substr(0, 10) == "multiplier") {
            if (!payload::parse_int(t.substr(10), &n) || n < 1 || n > 65535) {
                *error = "byte_extract: invalid multiplier '" + std::string(t) + "' (1 to 65535)";
                return false;
            }
            p.multiplier = static_cast<uint32_t>(n);
        } else if (t.substr(0, 5) == "align") {
            if (!payload::parse_int(t.substr(5), &n) || (n != 2 && n != 4)) {
                *error = "byte_extract: align must be 2 or 4, got '" + std::string(t) + "'";
                return false;
            }
            p.align = static_cast<uint32_t>(n);
        } else {
            *error = "byte_extract: unknown option '" + std::string(t) + "'";
            return false;
        }
    }
    return payload::append_with_var(st, "byte_extract", 8, std::move(opt), error);
}

}  // namespace keywords

}  // namespace picket::sensor::detect
