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

bool parse_value(const char* kw, std::string_view text, std::string_view digits, uint64_t max,
                 uint64_t* out, std::string* error) {
    digits = trim_blanks(digits);
    if (digits.empty()) {
        *error = std::string(kw) + ": invalid value " + quote(text);
        return false;
    }
    for (char c : digits) {
        if (c < '0' || c > '9') {
            *error = std::string(kw) + ": invalid value " + quote(text);
            return false;
        }
    }
    if (!parse_decimal(digits, max, out)) {
        *error = std::string(kw) + ": value out of range 0-" + std::to_string(max) + " in " +
                 quote(text);
        return false;
    }
    return true;
}

}  // namespace

bool parse_uint_spec(const char* kw, std::string_view text, uint64_t max, UintSpec* spec,
                     std::string* error) {
    std::string_view s = unquote(text);
    text = s;
    UintSpec r;
    bool negate = false;
    std::string_view op;
    if (s.starts_with("<=") || s.starts_with(">=") || s.starts_with("!=")) {
        op = s.substr(0, 2);
        s.remove_prefix(2);
    } else if (s.starts_with("<>")) {
        *error = std::string(kw) + ": invalid value " + quote(text);
        return false;
    } else if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '!' || s[0] == '=')) {
        op = s.substr(0, 1);
        s.remove_prefix(1);
    }
    s = trim_blanks(s);
    // A range: N-M or N<>M (optionally negated by a leading '!').
    size_t dash = s.find('-');
    size_t diamond = s.find("<>");
    if (dash != std::string_view::npos || diamond != std::string_view::npos) {
        if (!op.empty() && op != "!") {
            *error = std::string(kw) + ": invalid value " + quote(text);
            return false;
        }
        negate = op == "!";
        size_t cut = dash != std::string_view::npos ? dash : diamond;
        size_t skip = dash != std::string_view::npos ? 1 : 2;
        if (!parse_value(kw, text, s.substr(0, cut), max, &r.a, error) ||
            !parse_value(kw, text, s.substr(cut + skip), max, &r.b, error)) {
            return false;
        }
        if (r.a >= r.b) {
            *error = std::string(kw) + ": invalid range " + quote(text) +
                     " (the first value must be below the second)";
            return false;
        }
        r.mode = negate ? UintMode::kNotRange : UintMode::kRange;
        *spec = r;
        return true;
    }
    if (!parse_value(kw, text, s, max, &r.a, error)) {
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
        *error = std::string(kw) + ": " + quote(text) + " can never match";
        return false;
    }
    if ((r.mode == UintMode::kGte && r.a == 0) || (r.mode == UintMode::kLte && r.a == max)) {
        *error = std::string(kw) + ": " + quote(text) + " always matches";
        return false;
    }
    *spec = r;
    return true;
}

bool parse_exact_spec(const char* kw, std::string_view text, uint64_t max, bool allow_not,
                      bool allow_hex, UintSpec* spec, std::string* error) {
    std::string_view s = unquote(text);
    text = s;
    UintSpec r;
    r.mode = UintMode::kEq;
    if (allow_not && !s.empty() && s[0] == '!') {
        r.mode = UintMode::kNe;
        s = trim_blanks(s.substr(1));
    }
    if (allow_hex &&
        (s.starts_with("0x") || s.starts_with("0X") || s.starts_with("x") || s.starts_with("X"))) {
        s.remove_prefix(s[0] == '0' ? 2 : 1);
        if (s.empty() || s.size() > 16) {
            *error = std::string(kw) + ": invalid value " + quote(text);
            return false;
        }
        uint64_t v = 0;
        for (char c : s) {
            int d = (c >= '0' && c <= '9')   ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : -1;
            if (d < 0) {
                *error = std::string(kw) + ": invalid value " + quote(text);
                return false;
            }
            v = v * 16 + static_cast<uint64_t>(d);
        }
        if (v > max) {
            *error = std::string(kw) + ": value out of range 0-" + std::to_string(max) + " in " +
                     quote(text);
            return false;
        }
        r.a = v;
        *spec = r;
        return true;
    }
    if (!parse_value(kw, text, s, max, &r.a, error)) {
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
