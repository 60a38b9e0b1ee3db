// byte_math (Suricata 7 detect-bytemath.c): bytes N, offset N, oper OP, rvalue V, result
// NAME [, relative] [, endian big|little] [, string hex|dec|oct] [, bitmask N].
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"
#include "sensor/detect/name_table.h"

namespace picket::sensor::detect {

namespace payload {

bool ByteMathOption::eval(const EvalInput& in, uint32_t cursor, uint32_t* new_cursor) const {
    uint64_t v = 0;
    uint32_t end = 0;
    if (!extract_number(p.ex, in, cursor, &v, &end)) {
        return false;
    }
    v = apply_bitmask(p.ex, v);
    const uint64_t r = static_cast<uint64_t>(p.rvalue.get(in.scratch));
    switch (p.op) {
        case Op::kAdd:
            v += r;
            break;
        case Op::kSub:
            v -= r;
            break;
        case Op::kMul:
            v *= r;
            break;
        case Op::kDiv:
            if (r == 0) {
                return false;
            }
            v /= r;
            break;
        case Op::kShl:
            v = r >= 64 ? 0 : v << r;
            break;
        case Op::kShr:
            v = r >= 64 ? 0 : v >> r;
            break;
    }
    in.scratch.byte_values[p.var] = v;
    *new_cursor = end;
    return true;
}

uint64_t ByteMathOption::hash() const {
    Hasher h;
    p.ex.hash(h);
    h.add(static_cast<uint64_t>(p.op)).add(static_cast<uint64_t>(p.rvalue.value));
    h.add(static_cast<uint64_t>(p.rvalue.var)).add(p.name).add(static_cast<uint64_t>(p.var));
    return h.h;
}

}  // namespace payload

namespace keywords {

bool parse_byte_math(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    using Op = payload::ByteMathOption::Op;
    auto toks = payload::split_args(value);
    auto opt = std::make_unique<payload::ByteMathOption>();
    auto& p = opt->p;
    bool have_bytes = false, have_offset = false, have_oper = false, have_rvalue = false;
    bool have_result = false, is_string = false;
    if (!has_value) {
        *error = "byte_math: needs arguments";
        return false;
    }
    for (std::string_view t : toks) {
        const size_t sp = t.find_first_of(" \t");
        const std::string_view key = t.substr(0, sp);
        const std::string_view arg =
            sp == std::string_view::npos ? std::string_view() : trim_blanks(t.substr(sp));
        int64_t n = 0;
        if (key == "bytes") {
            if (!payload::parse_var_value(st, arg, 1, 10, &p.ex.nbytes)) {
                *error = "byte_math: invalid bytes '" + std::string(arg) +
                         "' (1 to 10 or a byte_extract/byte_math variable)";
                return false;
            }
            have_bytes = true;
        } else if (key == "offset") {
            if (!payload::parse_int(arg, &n) || n < -65535 || n > 65535) {
                *error = "byte_math: invalid offset '" + std::string(arg) + "' (-65535 to 65535)";
                return false;
            }
            p.ex.offset = payload::VarValue{n, -1};
            have_offset = true;
        } else if (key == "oper") {
            static constexpr Named<Op> kOpers[] = {{"+", Op::kAdd},  {"-", Op::kSub},
                                                   {"*", Op::kMul},  {"/", Op::kDiv},
                                                   {"<<", Op::kShl}, {">>", Op::kShr}};
            if (!find_named(kOpers, arg, &p.op)) {
                *error = "byte_math: invalid oper '" + std::string(arg) + "'";
                return false;
            }
            have_oper = true;
        } else if (key == "rvalue") {
            if (!payload::parse_var_value(st, arg, 0, UINT32_MAX, &p.rvalue)) {
                *error = "byte_math: invalid rvalue '" + std::string(arg) +
                         "' (0 to 4294967295 or a byte_extract/byte_math variable)";
                return false;
            }
            have_rvalue = true;
        } else if (key == "result") {
            if (!payload::valid_var_name(arg)) {
                *error = "byte_math: invalid result name '" + std::string(arg) + "'";
                return false;
            }
            p.name = std::string(arg);
            have_result = true;
        } else if (key == "relative" && arg.empty()) {
            p.ex.relative = true;
        } else if (key == "endian") {
            if (arg == "big") {
                p.ex.little = false;
            } else if (arg == "little") {
                p.ex.little = true;
            } else if (arg == "dce") {
                *error = "byte_math: dce is not supported";
                return false;
            } else {
                *error = "byte_math: invalid endian '" + std::string(arg) + "'";
                return false;
            }
        } else if (key == "dce" && arg.empty()) {
            *error = "byte_math: dce is not supported";
            return false;
        } else if (key == "string") {
            if (!payload::parse_base(arg, &p.ex.base)) {
                *error = "byte_math: invalid string base '" + std::string(arg) + "'";
                return false;
            }
            is_string = true;
        } else if (key == "bitmask") {
            if (!payload::parse_int(arg, &n) || n <= 0 || n > UINT32_MAX) {
                *error = "byte_math: invalid bitmask '" + std::string(arg) + "' (1 to 4294967295)";
                return false;
            }
            p.ex.has_bitmask = true;
            p.ex.bitmask = static_cast<uint64_t>(n);
        } else {
            *error = "byte_math: unknown option '" + std::string(t) + "'";
            return false;
        }
    }
    if (!have_bytes || !have_offset || !have_oper || !have_rvalue || !have_result) {
        *error = "byte_math: bytes, offset, oper, rvalue and result are required";
        return false;
    }
    if (!p.rvalue.is_var() && p.op == Op::kDiv && p.rvalue.value == 0) {
        *error = "byte_math: division by zero";
        return false;
    }
    (void)is_string;
    return payload::append_with_var(st, "byte_math", 4, std::move(opt), error);
}

}  // namespace keywords

}  // namespace picket::sensor::detect
