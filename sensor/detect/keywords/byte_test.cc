// byte_test (Suricata 7 detect-bytetest.c), plus the number extraction shared by byte_jump,
// byte_extract and byte_math.
#include <bit>
#include <climits>

#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"
#include "sensor/detect/name_table.h"

namespace picket::sensor::detect {

namespace payload {

uint32_t max_string_bytes(NumBase b) {
    switch (b) {
        case NumBase::kHex:
            return 14;
        case NumBase::kOct:
            return 23;
        default:
            return 20;
    }
}

bool parse_base(std::string_view s, NumBase* out) {
    if (s == "hex") {
        *out = NumBase::kHex;
    } else if (s == "dec") {
        *out = NumBase::kDec;
    } else if (s == "oct") {
        *out = NumBase::kOct;
    } else {
        return false;
    }
    return true;
}

void Extract::hash(Hasher& h) const {
    h.add(static_cast<uint64_t>(nbytes.value)).add(static_cast<uint64_t>(nbytes.var));
    h.add(static_cast<uint64_t>(offset.value)).add(static_cast<uint64_t>(offset.var));
    h.add(relative).add(little).add(static_cast<uint64_t>(base)).add(has_bitmask).add(bitmask);
}

uint64_t apply_bitmask(const Extract& e, uint64_t v) {
    if (!e.has_bitmask) {
        return v;
    }
    v &= e.bitmask;
    if (v != 0 && e.bitmask != 0) {
        v >>= std::countr_zero(e.bitmask);
    }
    return v;
}

bool extract_number(const Extract& e, const EvalInput& in, uint32_t cursor, uint64_t* value,
                    uint32_t* end, uint32_t* start) {
    const int64_t nbytes = e.nbytes.get(in.scratch);
    if (nbytes < 1 || (e.base == NumBase::kNone && nbytes > 8) ||
        (e.base != NumBase::kNone && nbytes > max_string_bytes(e.base))) {
        return false;
    }
    const int64_t pos = (e.relative ? static_cast<int64_t>(cursor) : 0) + e.offset.get(in.scratch);
    if (pos < 0 || pos + nbytes > static_cast<int64_t>(in.len)) {
        return false;
    }
    const uint8_t* p = in.data + pos;
    uint64_t v = 0;
    if (e.base == NumBase::kNone) {
        for (int64_t k = 0; k < nbytes; ++k) {
            const uint64_t b = p[e.little ? nbytes - 1 - k : k];
            v = (v << 8) | b;
        }
    } else {
        // strtoull semantics on the nbytes characters: leading digits, at least one.
        const unsigned base = e.base == NumBase::kHex ? 16 : e.base == NumBase::kOct ? 8 : 10;
        int64_t k = 0;
        if (base == 16 && nbytes > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
            k = 2;
        }
        int64_t digits = 0;
        for (; k < nbytes; ++k, ++digits) {
            const uint8_t c = p[k];
            unsigned d;
            if (c >= '0' && c <= '9') {
                d = c - '0';
            } else if (c >= 'a' && c <= 'f') {
                d = c - 'a' + 10;
            } else if (c >= 'A' && c <= 'F') {
                d = c - 'A' + 10;
            } else {
                break;
            }
            if (d >= base) {
                break;
            }
            if (v > (UINT64_MAX - d) / base) {
                return false;
            }
            v = v * base + d;
        }
        if (digits == 0) {
            return false;
        }
    }
    *value = v;
    *end = static_cast<uint32_t>(pos + nbytes);
    if (start != nullptr) {
        *start = static_cast<uint32_t>(pos);
    }
    return true;
}

bool ByteTestOption::eval(const EvalInput& in, uint32_t cursor) const {
    uint64_t v = 0;
    uint32_t end = 0;
    if (!extract_number(p.ex, in, cursor, &v, &end)) {
        return false;
    }
    v = apply_bitmask(p.ex, v);
    const uint64_t rhs = static_cast<uint64_t>(p.value.get(in.scratch));
    bool m = false;
    switch (p.op) {
        case Op::kLt:
            m = v < rhs;
            break;
        case Op::kGt:
            m = v > rhs;
            break;
        case Op::kEq:
            m = v == rhs;
            break;
        case Op::kLe:
            m = v <= rhs;
            break;
        case Op::kGe:
            m = v >= rhs;
            break;
        case Op::kAnd:
            m = (v & rhs) != 0;
            break;
        case Op::kXor:
            m = (v ^ rhs) != 0;
            break;
    }
    return m != p.negated;
}

uint64_t ByteTestOption::hash() const {
    Hasher h;
    p.ex.hash(h);
    h.add(static_cast<uint64_t>(p.op)).add(p.negated);
    h.add(static_cast<uint64_t>(p.value.value)).add(static_cast<uint64_t>(p.value.var));
    return h.h;
}

// Parses the trailing flags shared by byte_test / byte_jump / byte_extract. Returns the
// tokens it did not understand through *rest.
bool parse_common_flags(const char* kw, std::vector<std::string_view>& toks, Extract* ex,
                        bool* is_string, std::vector<std::string_view>* rest, std::string* error) {
    bool have_base = false;
    bool have_endian = false;
    for (size_t i = 0; i < toks.size(); ++i) {
        std::string_view t = toks[i];
        NumBase b;
        if (t == "relative") {
            ex->relative = true;
        } else if (t == "big" || t == "little") {
            if (have_endian) {
                *error = std::string(kw) + ": endianness given twice";
                return false;
            }
            have_endian = true;
            ex->little = t == "little";
        } else if (t == "dce") {
            *error = std::string(kw) + ": dce is not supported";
            return false;
        } else if (t == "string") {
            *is_string = true;
        } else if (parse_base(t, &b)) {
            have_base = true;
            ex->base = b;
        } else if (t.substr(0, 7) == "bitmask") {
            int64_t m = 0;
            if (!parse_int(t.substr(7), &m) || m <= 0 || m > UINT32_MAX) {
                *error = std::string(kw) + ": invalid bitmask '" + std::string(t) +
                         "' (1 to 4294967295)";
                return false;
            }
            ex->has_bitmask = true;
            ex->bitmask = static_cast<uint64_t>(m);
        } else {
            rest->push_back(t);
        }
    }
    if (have_base && !*is_string) {
        *error = std::string(kw) + ": hex/dec/oct need 'string'";
        return false;
    }
    if (*is_string && !have_base) {
        ex->base = NumBase::kDec;
    }
    if (*is_string && have_endian) {
        *error = std::string(kw) + ": endianness cannot be used with 'string'";
        return false;
    }
    return true;
}

// nbytes (number or variable) with the limits of the extraction form.
bool check_nbytes(const char* kw, const Extract& ex, uint32_t max_binary, std::string* error) {
    if (ex.nbytes.is_var()) {
        return true;
    }
    const int64_t n = ex.nbytes.value;
    if (ex.base == NumBase::kNone && (n < 1 || n > max_binary)) {
        *error = std::string(kw) + ": number of bytes must be 1.." + std::to_string(max_binary) +
                 " without 'string', got " + std::to_string(n);
        return false;
    }
    if (ex.base != NumBase::kNone && (n < 1 || n > max_string_bytes(ex.base))) {
        *error = std::string(kw) + ": number of bytes must be 1.." +
                 std::to_string(max_string_bytes(ex.base)) + " with 'string', got " +
                 std::to_string(n);
        return false;
    }
    return true;
}

}  // namespace payload

namespace keywords {

bool parse_byte_test(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    using payload::ByteTestOption;
    auto toks = payload::split_args(value);
    if (!has_value || toks.size() < 4) {
        *error = "byte_test: expected <bytes>,<operator>,<value>,<offset>[,flags]";
        return false;
    }
    auto opt = std::make_unique<ByteTestOption>();
    auto& p = opt->p;
    // 0 is accepted, as by Suricata 7 (ET Open uses it); such a test never matches.
    if (!payload::parse_var_value(st, toks[0], 0, 23, &p.ex.nbytes)) {
        *error = "byte_test: invalid number of bytes '" + std::string(toks[0]) +
                 "' (0 to 8, up to 23 with string, or a byte_extract/byte_math variable)";
        return false;
    }
    std::string_view op = toks[1];
    if (!op.empty() && op.front() == '!') {
        p.negated = true;
        op = trim_blanks(op.substr(1));
    }
    using Op = ByteTestOption::Op;
    static constexpr Named<Op> kOps[] = {{"<", Op::kLt},  {">", Op::kGt},  {"=", Op::kEq},
                                         {"<=", Op::kLe}, {">=", Op::kGe}, {"&", Op::kAnd},
                                         {"^", Op::kXor}};
    if (p.negated && op.empty()) {
        p.op = Op::kEq;  // "!" alone is "not equal", as in Snort
    } else if (!find_named(kOps, op, &p.op)) {
        *error = "byte_test: invalid operator '" + std::string(toks[1]) + "'";
        return false;
    }
    {
        // Values up to 2^64-1, decimal or 0x hex, are accepted as written; a larger number is
        // refused (it used to wrap silently), anything else is a byte variable's name.
        std::string_view vs = toks[2];
        uint64_t u = 0;
        int64_t iv = 0;
        const std::string range =
            "' (0 to 18446744073709551615 or a byte_extract/byte_math "
            "variable)";
        const NumberParse np = parse_uint_number(vs, UINT64_MAX, &u);
        if (np == NumberParse::kOk) {
            p.value = payload::VarValue{static_cast<int64_t>(u), -1};
        } else if (np == NumberParse::kOutOfRange) {
            *error = "byte_test: invalid value '" + std::string(vs) + range;
            return false;
        } else if (payload::parse_int(vs, &iv) && iv >= 0) {
            p.value = payload::VarValue{iv, -1};  // "+5"
        } else if (!payload::parse_var_value(st, vs, 0, INT64_MAX, &p.value)) {
            *error = "byte_test: invalid value '" + std::string(vs) + range;
            return false;
        }
    }
    if (!payload::parse_var_value(st, toks[3], -65535, 65535, &p.ex.offset)) {
        *error = "byte_test: invalid offset '" + std::string(toks[3]) +
                 "' (-65535 to 65535 or a byte_extract/byte_math variable)";
        return false;
    }
    std::vector<std::string_view> flags(toks.begin() + 4, toks.end());
    std::vector<std::string_view> rest;
    bool is_string = false;
    if (!payload::parse_common_flags("byte_test", flags, &p.ex, &is_string, &rest, error)) {
        return false;
    }
    if (!rest.empty()) {
        *error = "byte_test: unknown option '" + std::string(rest[0]) + "'";
        return false;
    }
    return payload::append_with_nbytes(st, "byte_test", std::move(opt), error);
}

}  // namespace keywords

}  // namespace picket::sensor::detect
