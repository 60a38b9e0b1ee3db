// Transforms (Suricata 7 detect-transform-*.c): dotprefix, to_lowercase, to_uppercase,
// strip_whitespace, compress_whitespace, url_decode. Each applies to the current sticky
// buffer and must come before that buffer's first option, as in Suricata ("transforms must
// directly follow stickybuffers").
#include "sensor/detect/transform.h"

#include <iterator>

#include "common/strings.h"
#include "sensor/detect/keywords/keywords.h"

namespace picket::sensor::detect {

bool push_transform(uint32_t* chain, Transform t) {
    for (uint32_t i = 0; i < kMaxTransforms; ++i) {
        if (((*chain >> (4 * i)) & 0xf) == 0) {
            *chain |= static_cast<uint32_t>(t) << (4 * i);
            return true;
        }
    }
    return false;
}

const char* transform_name(Transform t) {
    // Indexed by Transform.
    static constexpr const char* kNames[] = {
        "none",         "dotprefix",        "to_lowercase",
        "to_uppercase", "strip_whitespace", "compress_whitespace",
        "url_decode"};
    const auto i = static_cast<size_t>(t);
    return i < std::size(kNames) ? kNames[i] : "none";
}

namespace {

void apply_one(Transform t, std::string_view in, std::string* out) {
    out->clear();
    switch (t) {
        case Transform::kNone:
            out->assign(in);
            return;
        case Transform::kDotPrefix:
            out->push_back('.');
            out->append(in);
            return;
        case Transform::kToLowercase:
        case Transform::kToUppercase:
            out->assign(in);
            for (char& c : *out) {
                if (t == Transform::kToLowercase && c >= 'A' && c <= 'Z') {
                    c = static_cast<char>(c - 'A' + 'a');
                } else if (t == Transform::kToUppercase && c >= 'a' && c <= 'z') {
                    c = static_cast<char>(c - 'a' + 'A');
                }
            }
            return;
        case Transform::kStripWhitespace:
            for (char c : in) {
                if (!strings::is_space(c)) {
                    out->push_back(c);
                }
            }
            return;
        case Transform::kCompressWhitespace:
            for (size_t i = 0; i < in.size(); ++i) {
                if (strings::is_space(in[i])) {
                    out->push_back(' ');
                    while (i + 1 < in.size() && strings::is_space(in[i + 1])) {
                        ++i;
                    }
                } else {
                    out->push_back(in[i]);
                }
            }
            return;
        case Transform::kUrlDecode:
            for (size_t i = 0; i < in.size(); ++i) {
                if (in[i] == '%' && i + 2 < in.size() && strings::hex_value(in[i + 1]) >= 0 &&
                    strings::hex_value(in[i + 2]) >= 0) {
                    out->push_back(static_cast<char>(strings::hex_value(in[i + 1]) * 16 +
                                                     strings::hex_value(in[i + 2])));
                    i += 2;
                } else if (in[i] == '+') {
                    out->push_back(' ');
                } else {
                    out->push_back(in[i]);
                }
            }
            return;
    }
}

}  // namespace

std::string_view apply_transforms(uint32_t chain, std::string_view in, std::string* out,
                                  std::string* tmp) {
    if (chain == 0) {
        return in;
    }
    std::string_view cur = in;
    bool into_out = true;
    for (uint32_t i = 0; i < kMaxTransforms; ++i) {
        auto t = static_cast<Transform>((chain >> (4 * i)) & 0xf);
        if (t == Transform::kNone) {
            break;
        }
        std::string* dst = into_out ? out : tmp;
        apply_one(t, cur, dst);
        cur = *dst;
        into_out = !into_out;
    }
    if (cur.data() != out->data()) {
        out->assign(cur);
    }
    return *out;
}

namespace keywords {
namespace {

bool add_transform(ParseState& st, Transform t, bool has_value, std::string* error) {
    const char* name = transform_name(t);
    if (has_value) {
        *error = std::string(name) + ": takes no value";
        return false;
    }
    if (st.current == nullptr || st.sticky == BufferId::kPacket) {
        *error =
            std::string(name) + ": must follow a sticky buffer (e.g. dns.query; " + name + ";)";
        return false;
    }
    if (!st.current->options.empty()) {
        *error = std::string(name) + ": transforms must directly follow the sticky buffer";
        return false;
    }
    if (!push_transform(&st.current->transforms, t)) {
        *error = std::string(name) + ": at most 7 transforms per buffer";
        return false;
    }
    return true;
}

}  // namespace

bool parse_dotprefix(ParseState& st, std::string_view, bool has_value, std::string* error) {
    return add_transform(st, Transform::kDotPrefix, has_value, error);
}
bool parse_to_lowercase(ParseState& st, std::string_view, bool has_value, std::string* error) {
    return add_transform(st, Transform::kToLowercase, has_value, error);
}
bool parse_to_uppercase(ParseState& st, std::string_view, bool has_value, std::string* error) {
    return add_transform(st, Transform::kToUppercase, has_value, error);
}
bool parse_strip_whitespace(ParseState& st, std::string_view, bool has_value, std::string* error) {
    return add_transform(st, Transform::kStripWhitespace, has_value, error);
}
bool parse_compress_whitespace(ParseState& st, std::string_view, bool has_value,
                               std::string* error) {
    return add_transform(st, Transform::kCompressWhitespace, has_value, error);
}
bool parse_url_decode(ParseState& st, std::string_view, bool has_value, std::string* error) {
    return add_transform(st, Transform::kUrlDecode, has_value, error);
}

}  // namespace keywords
}  // namespace picket::sensor::detect
