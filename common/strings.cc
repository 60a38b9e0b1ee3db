#include "common/strings.h"

#include <algorithm>

namespace picket::strings {

namespace {
constexpr char kHex[] = "0123456789abcdef";

template <typename T>
std::optional<T> parse_decimal(std::string_view s, size_t max_digits) {
    if (s.empty() || s.size() > max_digits) {
        return std::nullopt;
    }
    T v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        const T d = static_cast<T>(c - '0');
        if (v > (static_cast<T>(~T{0}) - d) / 10) {
            return std::nullopt;
        }
        v = v * 10 + d;
    }
    return v;
}
}  // namespace

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_space(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    while (start < s.size()) {
        size_t end = s.find(sep, start);
        if (end == std::string_view::npos) {
            end = s.size();
        }
        out.push_back(s.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

std::string_view unquote(std::string_view s) {
    s = trim(s);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
        s = trim(s.substr(1, s.size() - 2));
    }
    return s;
}

std::optional<uint32_t> parse_u32(std::string_view s) {
    return parse_decimal<uint32_t>(s, 10);
}

std::optional<uint64_t> parse_u64(std::string_view s) {
    return parse_decimal<uint64_t>(s, 20);
}

std::optional<uint64_t> parse_duration_seconds(std::string_view s) {
    const char last = s.empty() ? '0' : s.back();
    const uint64_t unit = last == 'm' ? 60 : last == 'h' ? 3600 : last == 'd' ? 86400 : 1;
    if (last == 's' || unit != 1) {
        s.remove_suffix(1);
    }
    const std::optional<uint64_t> n = parse_decimal<uint64_t>(s, 9);
    if (!n) {
        return std::nullopt;
    }
    return *n * unit;
}

std::string hex_encode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xf]);
    }
    return out;
}

size_t utf8_sequence(const uint8_t* p, size_t avail) {
    const uint8_t c = p[0];
    size_t len;
    uint32_t min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (avail < len) {
        return 0;
    }
    uint32_t cp = c & (0xff >> (len + 1));
    for (size_t i = 1; i < len; ++i) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return len;
}

void append_json_string(std::string& out, std::string_view s) {
    out.push_back('"');
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    const size_t n = s.size();
    for (size_t i = 0; i < n;) {
        // Printable ASCII other than '"' and '\\' goes out as it is, a run at a time (most of
        // what EVE writes: host names, URLs, header values).
        size_t run = i;
        while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\') {
            ++run;
        }
        if (run != i) {
            out.append(s.data() + i, run - i);
            i = run;
            continue;
        }
        const uint8_t c = p[i];
        if (c >= 0x80) {
            const size_t len = utf8_sequence(p + i, n - i);
            if (len != 0) {
                out.append(s.data() + i, len);
                i += len;
                continue;
            }
        }
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20 || c >= 0x80) {
                    out += "\\u00";
                    out.push_back(kHex[c >> 4]);
                    out.push_back(kHex[c & 0xf]);
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
        ++i;
    }
    out.push_back('"');
}

namespace {
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

void append_json_base64(std::string& out, const uint8_t* p, size_t n) {
    out.push_back('"');
    for (size_t i = 0; i < n; i += 3) {
        const size_t k = std::min<size_t>(3, n - i);
        uint32_t v = uint32_t{p[i]} << 16;
        if (k > 1) {
            v |= uint32_t{p[i + 1]} << 8;
        }
        if (k > 2) {
            v |= p[i + 2];
        }
        for (size_t j = 0; j < 4; ++j) {
            out.push_back(j <= k ? kBase64[(v >> (18 - 6 * j)) & 63] : '=');
        }
    }
    out.push_back('"');
}

void append_json_printable(std::string& out, const uint8_t* p, size_t n) {
    out.push_back('"');
    for (size_t i = 0; i < n; ++i) {
        const uint8_t c = p[i];
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '.');
        }
    }
    out.push_back('"');
}

}  // namespace picket::strings
