// asn1 (Snort 2.9's asn1 detection plugin, kept by Suricata 7): decodes the BER elements (ITU-T
// X.690) found from an offset of the buffer and matches when one of them shows a checked
// condition:
//
//   asn1: bitstring_overflow, double_overflow, oversize_length 2048, relative_offset 54;
//
// - bitstring_overflow: a universal primitive BIT STRING whose unused-bits count (its first
//   content byte) is greater than its length in bits (Suricata 7's test: 03 01 FF matches,
//   03 01 07 does not).
// - double_overflow: a universal primitive REAL in decimal (ISO 6093) encoding, first content
//   byte with bits 8-7 clear, longer than 256 bytes: the MSASN1 buffer overflow.
// - oversize_length N: an element (primitive or constructed) whose definite length is > N.
// - absolute_offset N (0-65535) starts at byte N of the buffer; relative_offset N (-65535 to
//   65535) at N bytes after the previous match (the cursor); else byte 0. Both given: the
//   absolute one wins, as in Suricata 7. An offset outside the buffer does not match.
//
// Decoding, as Suricata 7 (whose BER parser it follows where that shows): top-level elements
// follow each other to the end of the buffer; one that is malformed or runs past the end (its
// length, or a child's, larger than what is left) ends decoding and is not checked; elements
// decoded whole before it are. Constructed elements are decoded into their children, with a
// definite length or an indefinite one ended by an end-of-contents (00 00), at most
// kMaxDepth levels deep (deeper is malformed). More than kMaxFrames top-level elements is
// refused as a whole (Suricata's asn1-max-frames default, 30): no match. Only the structure is
// checked (identifiers, lengths, nesting), not the value of each universal type.
//
// Bounded work: one pass over the bytes from the offset, recursion at most kMaxDepth deep, no
// allocation.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

using payload::Asn1Option;

constexpr int kMaxDepth = 30;
constexpr uint32_t kMaxFrames = 30;

constexpr uint8_t kTagBitString = 3;
constexpr uint8_t kTagReal = 9;

struct Walk {
    const uint8_t* d;
    const Asn1Option::Params& p;
    bool hit = false;  // a checked condition, in the top-level element being decoded
};

// The checks of one element: universal class only for the type-specific ones.
void check_element(Walk& w, bool universal, bool constructed, uint32_t tag, bool definite,
                   uint64_t len, const uint8_t* content) {
    if (w.p.has_oversize_length && definite && len > w.p.oversize_length) {
        w.hit = true;
    }
    if (!universal || constructed || !definite || len == 0) {
        return;
    }
    if (w.p.bitstring_overflow && tag == kTagBitString && content[0] > len * 8) {
        w.hit = true;
    }
    if (w.p.double_overflow && tag == kTagReal && (content[0] & 0xC0) == 0 && len > 256) {
        w.hit = true;
    }
}

// Decodes the element at [pos, end) and its children; *next: the byte after it. False when
// it is malformed or runs past end.
bool decode_element(Walk& w, uint32_t pos, uint32_t end, int depth, uint32_t* next) {
    if (depth >= kMaxDepth || end - pos < 2) {
        return false;
    }
    const uint8_t id = w.d[pos++];
    const bool universal = (id >> 6) == 0;
    const bool constructed = (id & 0x20) != 0;
    uint32_t tag = id & 0x1f;
    if (tag == 0x1f) {  // high tag number: base-128 digits, at most 4 (28 bits)
        tag = 0;
        int digits = 0;
        while (true) {
            if (pos >= end || ++digits > 4) {
                return false;
            }
            const uint8_t b = w.d[pos++];
            tag = (tag << 7) | (b & 0x7f);
            if ((b & 0x80) == 0) {
                break;
            }
        }
    }
    if (pos >= end) {
        return false;
    }
    const uint8_t l0 = w.d[pos++];
    bool definite = true;
    uint64_t len = l0;
    if (l0 == 0x80) {
        definite = false;  // X.690 8.1.3.6: constructed only
        if (!constructed) {
            return false;
        }
    } else if (l0 > 0x80) {
        const uint32_t k = l0 & 0x7f;
        if (l0 == 0xff || k > 8 || end - pos < k) {
            return false;  // 0xFF is reserved (8.1.3.5 c)
        }
        len = 0;
        for (uint32_t i = 0; i < k; ++i) {
            len = (len << 8) | w.d[pos++];
        }
    }
    if (definite && len > end - pos) {
        return false;  // runs past the buffer
    }
    check_element(w, universal, constructed, tag, definite, len, w.d + pos);
    if (!constructed) {
        *next = pos + static_cast<uint32_t>(len);
        return true;
    }
    if (definite) {
        const uint32_t child_end = pos + static_cast<uint32_t>(len);
        while (pos < child_end) {
            if (!decode_element(w, pos, child_end, depth + 1, &pos)) {
                return false;
            }
        }
        *next = child_end;
        return true;
    }
    while (true) {  // indefinite: children up to the end-of-contents octets
        if (end - pos >= 2 && w.d[pos] == 0 && w.d[pos + 1] == 0) {
            *next = pos + 2;
            return true;
        }
        if (!decode_element(w, pos, end, depth + 1, &pos)) {
            return false;
        }
    }
}

// A number of [lo, hi] written in decimal digits, with a '-' when lo < 0.
bool parse_number(std::string_view s, int64_t lo, int64_t hi, int64_t* out) {
    bool neg = false;
    if (lo < 0 && !s.empty() && s.front() == '-') {
        neg = true;
        s.remove_prefix(1);
    }
    if (s.empty() || s.size() > 12) {
        return false;
    }
    int64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + (c - '0');
    }
    v = neg ? -v : v;
    if (v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// The blank-separated words of s.
std::vector<std::string_view> words(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && is_blank(s[i])) {
            ++i;
        }
        size_t j = i;
        while (j < s.size() && !is_blank(s[j])) {
            ++j;
        }
        if (j > i) {
            out.push_back(s.substr(i, j - i));
        }
        i = j;
    }
    return out;
}

}  // namespace

namespace payload {

uint64_t Asn1Option::hash() const {
    Hasher h;
    h.add(0xa5a1)
        .add(p.bitstring_overflow)
        .add(p.double_overflow)
        .add(p.has_oversize_length)
        .add(p.oversize_length)
        .add(p.has_absolute_offset)
        .add(p.absolute_offset)
        .add(p.has_relative_offset)
        .add(static_cast<uint64_t>(static_cast<int64_t>(p.relative_offset)));
    return h.h;
}

bool Asn1Option::eval(const EvalInput& in, uint32_t cursor) const {
    int64_t start = 0;
    if (p.has_absolute_offset) {
        start = p.absolute_offset;
    } else if (p.has_relative_offset) {
        start = static_cast<int64_t>(cursor) + p.relative_offset;
        if (start < 0 || start > 65535) {
            return false;  // Suricata 7: an offset out of 0-65535 is not decoded
        }
    }
    if (start >= in.len) {
        return false;
    }
    Walk w{in.data, p};
    bool any = false;
    uint32_t pos = static_cast<uint32_t>(start);
    uint32_t frames = 0;
    while (pos < in.len) {
        if (frames == kMaxFrames) {
            return false;  // too many elements: Suricata refuses the whole decoding
        }
        w.hit = false;
        uint32_t next = 0;
        if (!decode_element(w, pos, in.len, 0, &next)) {
            break;
        }
        any = any || w.hit;
        ++frames;
        pos = next;
    }
    return any;
}

}  // namespace payload

namespace keywords {

// asn1: options separated by commas or blanks (Suricata 7's grammar; a comma with nothing
// before it is refused). Each check and offset may be given once; a later one replaces it.
bool parse_asn1(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    const std::string_view v = trim_blanks(value);
    if (!has_value || v.empty()) {
        *error =
            "asn1: an option is required (bitstring_overflow, double_overflow, "
            "oversize_length N, absolute_offset N, relative_offset N)";
        return false;
    }
    auto opt = std::make_unique<payload::Asn1Option>();
    auto& p = opt->p;
    std::string_view rest = v;
    while (true) {
        const size_t comma = rest.find(',');
        const std::string_view part = rest.substr(0, comma);
        const std::vector<std::string_view> w = words(part);
        if (w.empty()) {
            if (comma == std::string_view::npos && rest.size() != v.size()) {
                break;  // a trailing comma, which Suricata accepts
            }
            *error = "asn1: empty option in '" + std::string(v) + "'";
            return false;
        }
        for (size_t i = 0; i < w.size(); ++i) {
            const std::string_view name = w[i];
            if (name == "bitstring_overflow") {
                p.bitstring_overflow = true;
                continue;
            }
            if (name == "double_overflow") {
                p.double_overflow = true;
                continue;
            }
            int64_t lo = 0, hi = 0;
            if (name == "oversize_length") {
                hi = 4294967295;
            } else if (name == "absolute_offset") {
                hi = 65535;
            } else if (name == "relative_offset") {
                lo = -65535;
                hi = 65535;
            } else {
                *error = "asn1: unknown option '" + std::string(name) + "'";
                return false;
            }
            const std::string_view arg = i + 1 < w.size() ? w[i + 1] : std::string_view();
            int64_t n = 0;
            if (!parse_number(arg, lo, hi, &n)) {
                *error = "asn1: " + std::string(name) + " needs a number from " +
                         std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                         std::string(arg) + "'";
                return false;
            }
            ++i;
            if (name == "oversize_length") {
                p.has_oversize_length = true;
                p.oversize_length = static_cast<uint32_t>(n);
            } else if (name == "absolute_offset") {
                p.has_absolute_offset = true;
                p.absolute_offset = static_cast<uint16_t>(n);
            } else {
                p.has_relative_offset = true;
                p.relative_offset = static_cast<int32_t>(n);
            }
        }
        if (comma == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(comma + 1);
    }
    payload::append_option(st, std::move(opt));
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
