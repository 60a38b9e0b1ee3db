// content, uricontent and the content modifiers (Suricata 7 detect-content.c, detect-depth.c,
// detect-offset.c, detect-distance.c, detect-within.c, detect-fast-pattern.c).
#include <cstring>

#include "common/strings.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

namespace {

uint8_t fold(uint8_t c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<uint8_t>(c + 32) : c;
}

}  // namespace

void ContentOption::prepare() {
    const size_t m = p.pattern.size();
    folded_ = p.pattern;
    if (p.nocase) {
        for (auto& ch : folded_) {
            ch = static_cast<char>(fold(static_cast<uint8_t>(ch)));
        }
    }
    for (auto& s : shift_) {
        s = static_cast<uint32_t>(m);
    }
    for (size_t k = 0; k + 1 < m; ++k) {
        const uint8_t c = static_cast<uint8_t>(folded_[k]);
        shift_[c] = static_cast<uint32_t>(m - 1 - k);
        if (p.nocase && c >= 'a' && c <= 'z') {
            shift_[c - 32] = static_cast<uint32_t>(m - 1 - k);
        }
    }
}

int64_t ContentOption::search(const uint8_t* hay, uint32_t n) const {
    const uint32_t m = static_cast<uint32_t>(folded_.size());
    if (m == 0 || m > n) {
        return -1;
    }
    const auto* pat = reinterpret_cast<const uint8_t*>(folded_.data());
    if (!p.nocase) {
        if (m == 1) {
            const void* f = std::memchr(hay, pat[0], n);
            return f == nullptr ? -1 : static_cast<const uint8_t*>(f) - hay;
        }
        for (uint32_t pos = 0; pos + m <= n; pos += shift_[hay[pos + m - 1]]) {
            if (hay[pos + m - 1] == pat[m - 1] && std::memcmp(hay + pos, pat, m - 1) == 0) {
                return pos;
            }
        }
        return -1;
    }
    for (uint32_t pos = 0; pos + m <= n; pos += shift_[hay[pos + m - 1]]) {
        uint32_t k = m;
        while (k > 0 && fold(hay[pos + k - 1]) == pat[k - 1]) {
            --k;
        }
        if (k == 0) {
            return pos;
        }
    }
    return -1;
}

uint64_t ContentOption::hash() const {
    Hasher h;
    h.add(p.pattern).add(p.negated).add(p.nocase).add(p.startswith).add(p.endswith);
    h.add(p.has_offset).add(p.has_depth).add(p.has_distance).add(p.has_within);
    for (const VarValue* v : {&p.offset, &p.depth, &p.distance, &p.within}) {
        h.add(static_cast<uint64_t>(v->value)).add(static_cast<uint64_t>(v->var));
    }
    h.add(p.fast_pattern).add(p.fast_pattern_only).add(p.has_chop);
    h.add(p.chop_offset).add(p.chop_length).add(p.rawbytes);
    return h.h;
}

}  // namespace payload

namespace keywords {

using payload::ContentOption;
using payload::VarValue;

// "abc|41 42|d\"e" -> bytes. The value still carries its quotes and optional '!'.
bool parse_content_string(std::string_view kw, std::string_view v, std::string* out, bool* negated,
                          std::string* error) {
    v = trim_blanks(v);
    *negated = false;
    if (!v.empty() && v.front() == '!') {
        *negated = true;
        v = trim_blanks(v.substr(1));
    }
    if (v.size() < 2 || v.front() != '"' || v.back() != '"') {
        *error = std::string(kw) + ": pattern must be enclosed in double quotes";
        return false;
    }
    v = v.substr(1, v.size() - 2);
    out->clear();
    bool in_hex = false;
    int hi = -1;
    for (size_t i = 0; i < v.size(); ++i) {
        const char c = v[i];
        if (in_hex) {
            if (c == '|') {
                if (hi >= 0) {
                    *error = std::string(kw) + ": odd number of hex digits";
                    return false;
                }
                in_hex = false;
            } else if (c == ' ' || c == '\t') {
                if (hi >= 0) {
                    *error = std::string(kw) + ": hex byte split by a space";
                    return false;
                }
            } else {
                const int h = strings::hex_value(c);
                if (h < 0) {
                    *error = std::string(kw) + ": invalid hex character '" + c + "'";
                    return false;
                }
                if (hi < 0) {
                    hi = h;
                } else {
                    out->push_back(static_cast<char>(hi * 16 + h));
                    hi = -1;
                }
            }
            continue;
        }
        if (c == '|') {
            in_hex = true;
        } else if (c == '\\') {
            if (i + 1 >= v.size()) {
                *error = std::string(kw) + ": trailing backslash";
                return false;
            }
            const char e = v[++i];
            if (e != '"' && e != ';' && e != '\\' && e != ':') {
                *error = std::string(kw) + ": invalid escape '\\" + e + "'";
                return false;
            }
            out->push_back(e);
        } else if (c == '"') {
            *error = std::string(kw) + ": unescaped '\"' in pattern";
            return false;
        } else {
            out->push_back(c);
        }
    }
    if (in_hex) {
        *error = std::string(kw) + ": unterminated hex block";
        return false;
    }
    if (out->empty()) {
        *error = std::string(kw) + ": empty pattern";
        return false;
    }
    return true;
}

namespace {

bool add_content(ParseState& st, std::string_view kw, std::string_view value, bool has_value,
                 bool uri, std::string* error) {
    if (!has_value) {
        *error = std::string(kw) + ": needs a pattern";
        return false;
    }
    auto c = std::make_unique<ContentOption>();
    if (!parse_content_string(kw, value, &c->p.pattern, &c->p.negated, error)) {
        return false;
    }
    if (c->p.pattern.size() > 65535) {
        *error = std::string(kw) + ": pattern longer than 65535 bytes";
        return false;
    }
    c->prepare();
    st.last_content = uri ? payload::append_option_to(st, BufferId::kHttpUri, std::move(c))
                          : payload::append_option(st, std::move(c));
    return true;
}

// The content a modifier applies to, or an error.
ContentOption* modifier_target(ParseState& st, const char* kw, std::string* error) {
    auto* c = payload::option_as<ContentOption>(st.last_content);
    if (c == nullptr) {
        *error = std::string(kw) + ": needs a preceding content";
    }
    return c;
}

// Checks shared by the positional modifiers (Suricata's depth/offset/distance/within
// setup functions).
bool positional_checks(const ContentOption& c, const char* kw, bool relative, std::string* error) {
    const auto& p = c.p;
    if (p.fast_pattern_only) {
        *error = std::string(kw) + ": cannot be used with fast_pattern:only";
        return false;
    }
    if (p.negated && p.fast_pattern && relative) {
        *error = std::string(kw) + ": a relative negated content cannot be the fast_pattern";
        return false;
    }
    if (relative && (p.has_offset || p.has_depth)) {
        *error = std::string(kw) +
                 ": cannot mix relative (distance/within) and absolute (offset/depth/"
                 "startswith) modifiers on one content";
        return false;
    }
    if (!relative && (p.has_distance || p.has_within)) {
        *error = std::string(kw) +
                 ": cannot mix relative (distance/within) and absolute (offset/depth/"
                 "startswith) modifiers on one content";
        return false;
    }
    return true;
}

bool parse_number_modifier(ParseState& st, const char* kw, std::string_view value, bool has_value,
                           int64_t lo, int64_t hi, VarValue* out, std::string* error) {
    value = trim_blanks(value);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        value = value.substr(1, value.size() - 2);
    }
    if (!has_value || !payload::parse_var_value(st, value, lo, hi, out)) {
        *error = std::string(kw) + ": invalid value '" + std::string(value) + "' (a number in [" +
                 std::to_string(lo) + ", " + std::to_string(hi) + "] or a byte_extract variable)";
        return false;
    }
    return true;
}

// The largest |distance| and |within| (1 MiB).
constexpr int64_t kMaxRelative = 1048576;

// offset, depth, distance, within: a number (or byte variable) on the previous content.
struct Positional {
    const char* kw;
    bool relative;          // distance/within; offset/depth are absolute
    bool at_least_pattern;  // depth/within: not below the content length
    bool ContentOption::Params::*has;
    VarValue ContentOption::Params::*value;
};

bool set_positional(ParseState& st, const Positional& m, std::string_view value, bool has_value,
                    std::string* error) {
    ContentOption* c = modifier_target(st, m.kw, error);
    if (c == nullptr || !positional_checks(*c, m.kw, m.relative, error)) {
        return false;
    }
    auto& p = c->p;
    if (!m.relative && p.startswith) {
        *error = std::string(m.kw) + ": cannot be used with startswith";
        return false;
    }
    if (p.*m.has) {
        *error = std::string(m.kw) + ": already set on this content";
        return false;
    }
    VarValue& v = p.*m.value;
    // Suricata 7 bounds distance and within by 1 MiB either way (the payload keywords' docs);
    // offset and depth are unsigned 16-bit.
    const int64_t lo = m.relative ? -kMaxRelative : 0;
    const int64_t hi = m.relative ? kMaxRelative : 65535;
    if (!parse_number_modifier(st, m.kw, value, has_value, lo, hi, &v, error)) {
        return false;
    }
    if (m.at_least_pattern && !v.is_var() && v.value < static_cast<int64_t>(p.pattern.size())) {
        *error = std::string(m.kw) + ": " + std::to_string(v.value) +
                 " is smaller than the content length " + std::to_string(p.pattern.size());
        return false;
    }
    p.*m.has = true;
    return true;
}

// nocase, rawbytes, startswith, endswith: a flag without value on the previous content, set
// once. Returns the content, or nullptr with *error set.
ContentOption* flag_target(ParseState& st, const char* kw, bool has_value,
                           bool ContentOption::Params::*flag, std::string* error) {
    ContentOption* c = modifier_target(st, kw, error);
    if (c == nullptr) {
        return nullptr;
    }
    if (has_value) {
        *error = std::string(kw) + ": takes no value";
        return nullptr;
    }
    if (c->p.*flag) {
        *error = std::string(kw) + ": already set on this content";
        return nullptr;
    }
    return c;
}

}  // namespace

using P = ContentOption::Params;

bool parse_content(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_content(st, "content", value, has_value, false, error);
}

bool parse_uricontent(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return add_content(st, "uricontent", value, has_value, true, error);
}

bool parse_nocase(ParseState& st, std::string_view, bool has_value, std::string* error) {
    ContentOption* c = flag_target(st, "nocase", has_value, &P::nocase, error);
    if (c == nullptr) {
        return false;
    }
    c->p.nocase = true;
    c->prepare();
    return true;
}

// Snort 2's "match the undecoded packet" modifier; Suricata accepts it on packet contents only,
// where it has no effect (pkt_data is already the raw payload), once, without a value.
bool parse_rawbytes(ParseState& st, std::string_view, bool has_value, std::string* error) {
    // A content inside a sticky buffer is never the last content once the buffer changed, so
    // checking "already set" first cannot hide the sticky-buffer error.
    ContentOption* c = flag_target(st, "rawbytes", has_value, &P::rawbytes, error);
    if (c == nullptr) {
        return false;
    }
    if (st.sticky != BufferId::kPacket) {
        *error =
            "rawbytes: cannot be combined with a sticky buffer (it applies to the packet "
            "payload only)";
        return false;
    }
    c->p.rawbytes = true;
    return true;
}

bool parse_offset(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return set_positional(st, {"offset", false, false, &P::has_offset, &P::offset}, value,
                          has_value, error);
}

bool parse_depth(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return set_positional(st, {"depth", false, true, &P::has_depth, &P::depth}, value, has_value,
                          error);
}

bool parse_distance(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return set_positional(st, {"distance", true, false, &P::has_distance, &P::distance}, value,
                          has_value, error);
}

bool parse_within(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return set_positional(st, {"within", true, true, &P::has_within, &P::within}, value, has_value,
                          error);
}

bool parse_startswith(ParseState& st, std::string_view, bool has_value, std::string* error) {
    ContentOption* c = flag_target(st, "startswith", has_value, &P::startswith, error);
    if (c == nullptr) {
        return false;
    }
    if (c->p.has_depth || c->p.has_offset) {
        *error = "startswith: cannot be used with depth or offset";
        return false;
    }
    if (!positional_checks(*c, "startswith", false, error)) {
        return false;
    }
    c->p.startswith = true;
    c->p.has_depth = true;
    c->p.depth = VarValue{static_cast<int64_t>(c->p.pattern.size()), -1};
    return true;
}

bool parse_endswith(ParseState& st, std::string_view, bool has_value, std::string* error) {
    ContentOption* c = flag_target(st, "endswith", has_value, &P::endswith, error);
    if (c == nullptr) {
        return false;
    }
    if (c->p.fast_pattern_only) {
        *error = "endswith: cannot be used with fast_pattern:only";
        return false;
    }
    c->p.endswith = true;
    return true;
}

bool parse_fast_pattern(ParseState& st, std::string_view value, bool has_value,
                        std::string* error) {
    ContentOption* c = modifier_target(st, "fast_pattern", error);
    if (c == nullptr) {
        return false;
    }
    auto& p = c->p;
    if (p.fast_pattern) {
        *error = "fast_pattern: already set on this content";
        return false;
    }
    for (const BufferMatch& b : st.rule->buffers) {
        for (const auto& o : b.options) {
            const auto* other = payload::option_as<ContentOption>(o.get());
            if (other != nullptr && other != c && other->p.fast_pattern) {
                *error = "fast_pattern: can be used on only one content in a rule";
                return false;
            }
        }
    }
    const bool relative = p.has_distance || p.has_within;
    value = trim_blanks(value);
    if (has_value && value == "only") {
        if (p.negated) {
            *error = "fast_pattern: only cannot be used on a negated content";
            return false;
        }
        if (relative || p.has_offset || p.has_depth || p.endswith) {
            *error =
                "fast_pattern: only cannot be used with offset, depth, distance, within, "
                "startswith or endswith";
            return false;
        }
        p.fast_pattern_only = true;
    } else if (has_value) {
        auto parts = payload::split_args(value);
        int64_t off = 0, len = 0;
        if (parts.size() != 2 || !payload::parse_int(parts[0], &off) ||
            !payload::parse_int(parts[1], &len) || off < 0 || len <= 0 || off > 65535 ||
            len > 65535) {
            *error = "fast_pattern: expected 'only' or '<offset>,<length>', got '" +
                     std::string(value) + "'";
            return false;
        }
        if (static_cast<size_t>(off + len) > p.pattern.size()) {
            *error = "fast_pattern: offset " + std::to_string(off) + " + length " +
                     std::to_string(len) + " exceeds the content length " +
                     std::to_string(p.pattern.size());
            return false;
        }
        p.has_chop = true;
        p.chop_offset = static_cast<uint16_t>(off);
        p.chop_length = static_cast<uint16_t>(len);
    }
    if (p.negated && relative) {
        *error = "fast_pattern: a relative negated content cannot be the fast_pattern";
        return false;
    }
    p.fast_pattern = true;
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
