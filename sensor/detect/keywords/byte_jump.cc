// byte_jump (Suricata 7 detect-bytejump.c).
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

bool ByteJumpOption::eval(const EvalInput& in, uint32_t cursor, uint32_t* new_cursor) const {
    uint64_t v = 0;
    uint32_t end = 0;
    if (p.ex.nbytes.get(in.scratch) == 0) {
        // byte_jump:0,... reads nothing: it moves by post_offset from the position (Suricata
        // accepts it; ET and suricata-verify bug 4623 use it to step back before a match).
        const int64_t pos =
            (p.ex.relative ? static_cast<int64_t>(cursor) : 0) + p.ex.offset.get(in.scratch);
        if (pos < 0 || pos > static_cast<int64_t>(in.len)) {
            return false;
        }
        end = static_cast<uint32_t>(pos);
    } else if (!extract_number(p.ex, in, cursor, &v, &end)) {
        return false;
    }
    v = apply_bitmask(p.ex, v);
    if (v > (uint64_t{1} << 40)) {
        return false;  // far beyond any buffer; also keeps the arithmetic below in range
    }
    int64_t jump = static_cast<int64_t>(v) * p.multiplier;
    if (p.align && (jump % 4) != 0) {
        jump += 4 - (jump % 4);
    }
    int64_t target;
    if (p.from_beginning) {
        target = jump;
    } else if (p.from_end) {
        target = static_cast<int64_t>(in.len) + jump;
    } else {
        target = static_cast<int64_t>(end) + jump;
    }
    target += p.post_offset;
    // Suricata 7: before the start clamps to the start; at or past the end fails.
    if (target < 0) {
        target = 0;
    } else if (target >= static_cast<int64_t>(in.len)) {
        return false;
    }
    *new_cursor = static_cast<uint32_t>(target);
    return true;
}

uint64_t ByteJumpOption::hash() const {
    Hasher h;
    p.ex.hash(h);
    h.add(p.multiplier).add(p.align).add(p.from_beginning).add(p.from_end);
    h.add(static_cast<uint64_t>(p.post_offset));
    return h.h;
}

}  // namespace payload

namespace keywords {

bool parse_byte_jump(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    auto toks = payload::split_args(value);
    if (!has_value || toks.size() < 2) {
        *error = "byte_jump: expected <bytes>,<offset>[,flags]";
        return false;
    }
    auto opt = std::make_unique<payload::ByteJumpOption>();
    auto& p = opt->p;
    if (!payload::parse_var_value(st, toks[0], 0, 23, &p.ex.nbytes)) {
        *error = "byte_jump: invalid number of bytes '" + std::string(toks[0]) +
                 "' (0 to 8, up to 23 with string, or a byte_extract/byte_math variable)";
        return false;
    }
    if (!payload::parse_var_value(st, toks[1], -65535, 65535, &p.ex.offset)) {
        *error = "byte_jump: invalid offset '" + std::string(toks[1]) +
                 "' (-65535 to 65535 or a byte_extract/byte_math variable)";
        return false;
    }
    std::vector<std::string_view> flags(toks.begin() + 2, toks.end());
    std::vector<std::string_view> rest;
    bool is_string = false;
    if (!payload::parse_common_flags("byte_jump", flags, &p.ex, &is_string, &rest, error)) {
        return false;
    }
    for (std::string_view t : rest) {
        int64_t n = 0;
        if (t == "align") {
            p.align = true;
        } else if (t == "from_beginning") {
            p.from_beginning = true;
        } else if (t == "from_end") {
            p.from_end = true;
        } else if (t.substr(0, 10) == "multiplier") {
            if (!payload::parse_int(t.substr(10), &n) || n < 1 || n > 65535) {
                *error = "byte_jump: invalid multiplier '" + std::string(t) + "' (1 to 65535)";
                return false;
            }
            p.multiplier = static_cast<uint32_t>(n);
        } else if (t.substr(0, 11) == "post_offset") {
            if (!payload::parse_int(t.substr(11), &n) || n < -65535 || n > 65535) {
                *error =
                    "byte_jump: invalid post_offset '" + std::string(t) + "' (-65535 to 65535)";
                return false;
            }
            p.post_offset = static_cast<int32_t>(n);
        } else {
            *error = "byte_jump: unknown option '" + std::string(t) + "'";
            return false;
        }
    }
    if (p.from_beginning && p.from_end) {
        *error = "byte_jump: from_beginning and from_end cannot be combined";
        return false;
    }
    return payload::append_with_nbytes(st, "byte_jump", std::move(opt), error);
}

}  // namespace keywords

}  // namespace picket::sensor::detect
