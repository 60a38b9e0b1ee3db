// The project's one set of string helpers: concatenation, trimming, number parsing, hex digits
// and the JSON string writer. Every module uses these instead of keeping its own copy.
//
// Not `"lit" + string`: GCC 12 raises a false -Wrestrict on it (GCC PR 105329). Not
// absl::StrCat: Debian's Abseil has its own absl::string_view, which std::string_view does not
// convert to; `append` takes both.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"

namespace picket::strings {

inline void append_one(std::string& out, std::string_view s) {
    out.append(s);
}
inline void append_one(std::string& out, const std::string& s) {
    out.append(s);
}
inline void append_one(std::string& out, const char* s) {
    out.append(s);
}
inline void append_one(std::string& out, char c) {
    out.push_back(c);
}
#if !defined(ABSL_USES_STD_STRING_VIEW)
inline void append_one(std::string& out, absl::string_view s) {
    out.append(s.data(), s.size());
}
#endif
template <std::integral T>
requires(!std::same_as<T, char> && !std::same_as<T, bool>) void append_one(std::string& out, T v) {
    out.append(std::to_string(v));
}
template <std::floating_point T>
void append_one(std::string& out, T v) {
    out.append(std::to_string(v));
}

// Appends every argument to `out`: strings as they are, integers in decimal.
template <typename... A>
void append(std::string& out, const A&... a) {
    (append_one(out, a), ...);
}

// The arguments concatenated: cat("line ", 3, ": ", msg).
template <typename... A>
std::string cat(const A&... a) {
    std::string out;
    (append_one(out, a), ...);
    return out;
}

// The parts with `sep` between them.
template <typename Range>
std::string join(const Range& parts, std::string_view sep) {
    std::string out;
    bool first = true;
    for (const auto& p : parts) {
        if (!first) {
            out.append(sep);
        }
        first = false;
        append_one(out, p);
    }
    return out;
}

// Space, tab, CR, LF, VT, FF.
constexpr bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// `s` without leading and trailing is_space() characters.
std::string_view trim(std::string_view s);

// The pieces of `s` between `sep` characters ("a\nb\n" -> {"a", "b"}: no empty piece after a
// final separator; "" -> {}). Views into `s`.
std::vector<std::string_view> split(std::string_view s, char sep);

// `s` without one pair of surrounding double quotes, if it has them; trimmed inside.
std::string_view unquote(std::string_view s);

// A decimal number of 1..10 ASCII digits that fits in 32 bits; nothing else (no sign, no
// spaces, no quotes). Callers that accept `"10"` unquote and trim first.
std::optional<uint32_t> parse_u32(std::string_view s);

// The same into *out; false, and *out untouched, when `s` is not such a number.
inline bool parse_u32(std::string_view s, uint32_t* out) {
    const std::optional<uint32_t> v = parse_u32(s);
    if (v) {
        *out = *v;
    }
    return v.has_value();
}

// The same for 64 bits (1..20 digits).
std::optional<uint64_t> parse_u64(std::string_view s);

// A duration in seconds: 1..9 digits and an optional unit s, m, h or d ("90s", "30m", "6h",
// "7d", "3600"); nothing else. Callers check their own range.
std::optional<uint64_t> parse_duration_seconds(std::string_view s);

// The value of one hex digit (either case), or -1.
constexpr int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

// Lowercase hex of the bytes.
std::string hex_encode(std::string_view bytes);

// Appends `s` as a JSON string literal, quotes included. Valid UTF-8 is copied as it is; the
// short escapes are used where JSON has one, \u00XX for other control characters and for
// bytes that are not valid UTF-8 (the byte as a Latin-1 code point), so that the output is
// valid JSON whatever `s` holds.
void append_json_string(std::string& out, std::string_view s);

// Appends the bytes as a JSON string of their RFC 4648 base64 (with padding): each group of up
// to 3 bytes becomes 4 characters, those past the group's bytes '='.
void append_json_base64(std::string& out, const uint8_t* p, size_t n);

// Appends the bytes as a JSON string the way Suricata's PrintStringsToBuffer shows a payload:
// printable ASCII, CR and LF are kept (escaped where JSON needs it), every other byte is '.'.
void append_json_printable(std::string& out, const uint8_t* p, size_t n);

// Length of the valid UTF-8 sequence at p (1..4 bytes, of at most `avail`), or 0 when the
// bytes there are not one (overlong forms and surrogates are not valid).
size_t utf8_sequence(const uint8_t* p, size_t avail);

}  // namespace picket::strings
