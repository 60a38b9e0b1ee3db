#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/name_table.h"

#include <memory>

namespace picket::sensor::detect::keywords {

namespace {

std::string quote(std::string_view s) {
    std::string r;
    r.reserve(s.size() + 2);
    r += '\'';
    r.append(s);
    r += '\'';
    return r;
}

std::string range_text(uint64_t max) {
    return "0-" + std::to_string(max);
}

std::string invalid_uint(const char* kw, std::string_view text, uint64_t max) {
    return std::string(kw) + ": invalid value " + quote(text) +
           " (expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M with N from 0 to " +
           std::to_string(max) + ")";
}

std::string out_of_range(const char* kw, std::string_view text, uint64_t max) {
    return std::string(kw) + ": value out of range " + range_text(max) + " in " + quote(text);
}

// One number of text; the messages name the whole value.
bool parse_value(const char* kw, std::string_view text, std::string_view digits, uint64_t max,
                 uint64_t* out, std::string* error, const std::string& invalid) {
    switch (parse_uint_number(digits, max, out)) {
        case NumberParse::kOk:
            return true;
        case NumberParse::kInvalid:
            *error = invalid;
            return false;
        case NumberParse::kOutOfRange:
            *error = out_of_range(kw, text, max);
            return false;
    }
    return false;
}

}  // namespace

NumberParse parse_uint_number(std::string_view s, uint64_t max, uint64_t* out) {
    s = trim_blanks(s);
    unsigned base = 10;
    if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    }
    if (s.empty()) {
        return NumberParse::kInvalid;
    }
    uint64_t v = 0;
    bool overflow = false;
    for (char c : s) {
        const int d = (c >= '0' && c <= '9')                 ? c - '0'
                      : (base == 16 && c >= 'a' && c <= 'f') ? c - 'a' + 10
                      : (base == 16 && c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                             : -1;
        if (d < 0) {
            return NumberParse::kInvalid;
        }
        const uint64_t ud = static_cast<uint64_t>(d);
        if (v > (UINT64_MAX - ud) / base) {
            overflow = true;  // keep checking the digits: junk is "invalid", not "too big"
        } else {
            v = v * base + ud;
        }
    }
    if (overflow || v > max) {
        return NumberParse::kOutOfRange;
    }
    *out = v;
    return NumberParse::kOk;
}

bool parse_uint_spec(const char* kw, std::string_view text, uint64_t max, UintSpec* spec,
                     std::string* error) {
    std::string_view s = unquote(text);
    text = s;
    const std::string invalid = invalid_uint(kw, text, max);
    UintSpec r;
    std::string_view op;
    if (s.starts_with("<=") || s.starts_with(">=") || s.starts_with("!=")) {
        op = s.substr(0, 2);
        s.remove_prefix(2);
    } else if (s.starts_with("<>")) {
        *error = invalid;
        return false;
    } else if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '!' || s[0] == '=')) {
        op = s.substr(0, 1);
        s.remove_prefix(1);
    }
    s = trim_blanks(s);
    // A range: N-M or N<>M (optionally negated by a leading '!').
    const size_t dash = s.find('-');
    const size_t diamond = s.find("<>");
    if (dash != std::string_view::npos || diamond != std::string_view::npos) {
        if (!op.empty() && op != "!") {
            *error = invalid;
            return false;
        }
        const bool use_dash =
            dash != std::string_view::npos && (diamond == std::string_view::npos || dash < diamond);
        const size_t cut = use_dash ? dash : diamond;
        const size_t skip = use_dash ? 1 : 2;
        if (!parse_value(kw, text, s.substr(0, cut), max, &r.a, error, invalid) ||
            !parse_value(kw, text, s.substr(cut + skip), max, &r.b, error, invalid)) {
            return false;
        }
        if (r.a >= r.b) {
            *error = std::string(kw) + ": invalid range " + quote(text) +
                     " (the first value must be below the second)";
            return false;
        }
        r.mode = op == "!" ? UintMode::kNotRange : UintMode::kRange;
        *spec = r;
        return true;
    }
    if (!parse_value(kw, text, s, max, &r.a, error, invalid)) {
        return false;
    }
    // The operators the grammar lets through; anything else here is ">=".
    static constexpr Named<UintMode> kModes[] = {
        {"", UintMode::kEq},  {"=", UintMode::kEq},   {"!", UintMode::kNe}, {"!=", UintMode::kNe},
        {"<", UintMode::kLt}, {"<=", UintMode::kLte}, {">", UintMode::kGt}};
    if (!find_named(kModes, op, &r.mode)) {
        r.mode = UintMode::kGte;
    }
    // Suricata rejects comparisons that can never match or always match.
    if ((r.mode == UintMode::kLt && r.a == 0) || (r.mode == UintMode::kGt && r.a == max)) {
        *error = std::string(kw) + ": " + quote(text) + " can never match (values are " +
                 range_text(max) + ")";
        return false;
    }
    if ((r.mode == UintMode::kGte && r.a == 0) || (r.mode == UintMode::kLte && r.a == max)) {
        *error = std::string(kw) + ": " + quote(text) + " always matches (values are " +
                 range_text(max) + ")";
        return false;
    }
    *spec = r;
    return true;
}

bool parse_exact_spec(const char* kw, std::string_view text, uint64_t max, bool allow_not,
                      bool allow_hex, UintSpec* spec, std::string* error) {
    std::string_view s = unquote(text);
    text = s;
    const std::string invalid = std::string(kw) + ": invalid value " + quote(text) +
                                " (expected N" + (allow_not ? " or !N" : "") +
                                " with N from 0 to " + std::to_string(max) +
                                (allow_hex ? ", decimal or hex" : "") + ")";
    UintSpec r;
    r.mode = UintMode::kEq;
    if (allow_not && !s.empty() && s[0] == '!') {
        r.mode = UintMode::kNe;
        s = trim_blanks(s.substr(1));
    }
    const bool hex =
        s.starts_with("0x") || s.starts_with("0X") || s.starts_with("x") || s.starts_with("X");
    if (hex && !allow_hex) {
        *error = invalid;
        return false;
    }
    if (hex && (s[0] == 'x' || s[0] == 'X')) {
        // tos's own spelling: x1F is 0x1F.
        std::string with_zero(1, '0');
        with_zero.append(s.data(), s.size());
        if (!parse_value(kw, text, with_zero, max, &r.a, error, invalid)) {
            return false;
        }
        *spec = r;
        return true;
    }
    if (!parse_value(kw, text, s, max, &r.a, error, invalid)) {
        return false;
    }
    *spec = r;
    return true;
}

bool add_uint_option(ParseState& st, const char* kw, std::string_view value, bool has_value,
                     uint64_t max, FieldGetter get, std::string* error) {
    if (!has_value || trim_blanks(value).empty()) {
        *error = std::string(kw) + ": a value is required";
        return false;
    }
    UintSpec spec;
    if (!parse_uint_spec(kw, value, max, &spec, error)) {
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<FieldOption>(kw, get, spec));
    return true;
}

bool add_exact_option(ParseState& st, const char* kw, std::string_view value, bool has_value,
                      uint64_t max, bool allow_not, bool allow_hex, FieldGetter get,
                      std::string* error) {
    if (!has_value || trim_blanks(value).empty()) {
        *error = std::string(kw) + ": a value is required";
        return false;
    }
    UintSpec spec;
    if (!parse_exact_spec(kw, value, max, allow_not, allow_hex, &spec, error)) {
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<FieldOption>(kw, get, spec));
    return true;
}

}  // namespace picket::sensor::detect::keywords
