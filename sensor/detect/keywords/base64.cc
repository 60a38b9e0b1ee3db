// base64_decode:[bytes <n>][, offset <n>][, relative] and base64_data (Suricata 7): decode
// base64 from the current buffer (RFC 4648: decoding stops at the first byte outside the
// alphabet) and match the options after base64_data on the decoded bytes. Both keywords are
// needed for a match: base64_decode without base64_data options never matches. bytes is 1 to
// 65535 (Suricata's 64 KiB limit) and defaults to the rest of the buffer; offset counts from
// the buffer start, or from the previous match with relative.
#include <algorithm>

#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

namespace {

// The value of a base64 alphabet byte, or -1.
int b64_value(uint8_t c) {
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+') {
        return 62;
    }
    if (c == '/') {
        return 63;
    }
    return -1;
}

}  // namespace

uint32_t base64_decode_rfc4648(const uint8_t* in, uint32_t n, uint8_t* out, uint32_t cap) {
    uint32_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const int v = b64_value(in[i]);
        if (v < 0) {
            break;
        }
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o == cap) {
                break;
            }
            out[o++] = static_cast<uint8_t>(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return o;
}

bool Base64DecodeOption::decode(const EvalInput& in, uint32_t cursor, uint32_t* n) const {
    uint64_t start = static_cast<uint64_t>(p.offset) + (p.relative ? cursor : 0);
    if (start >= in.len) {
        return false;
    }
    uint64_t len = in.len - start;
    if (p.bytes != 0 && p.bytes < len) {
        len = p.bytes;
    }
    *n = base64_decode_rfc4648(in.data + start, static_cast<uint32_t>(len), in.scratch.base64.get(),
                               PayloadScratch::kBase64Max);
    return *n > 0;
}

uint64_t Base64DecodeOption::hash() const {
    Hasher h;
    h.add(p.bytes).add(p.offset).add(p.relative);
    return h.h;
}

}  // namespace payload

namespace keywords {

namespace {

bool is_top_level(const ParseState& st) {
    for (const BufferMatch& m : st.rule->buffers) {
        if (&m == st.current) {
            return true;
        }
    }
    return st.current == nullptr;
}

}  // namespace

bool parse_base64_decode(ParseState& st, std::string_view value, bool has_value,
                         std::string* error) {
    if (!is_top_level(st)) {
        *error = "base64_decode: not allowed after base64_data";
        return false;
    }
    auto opt = std::make_unique<payload::Base64DecodeOption>();
    auto& p = opt->p;
    bool seen_bytes = false, seen_offset = false;
    if (has_value && !trim_blanks(value).empty()) {
        for (std::string_view t : payload::split_args(unquote(value))) {
            uint64_t v = 0;
            if (t == "relative") {
                p.relative = true;
            } else if (t.starts_with("bytes") && !seen_bytes) {
                if (!parse_decimal(trim_blanks(t.substr(5)), 65535, &v) || v == 0) {
                    *error = "base64_decode: bytes must be 1 to 65535, got '" +
                             std::string(trim_blanks(t.substr(5))) + "'";
                    return false;
                }
                p.bytes = static_cast<uint32_t>(v);
                seen_bytes = true;
            } else if (t.starts_with("offset") && !seen_offset) {
                if (!parse_decimal(trim_blanks(t.substr(6)), 65535, &v)) {
                    *error = "base64_decode: offset must be 0 to 65535, got '" +
                             std::string(trim_blanks(t.substr(6))) + "'";
                    return false;
                }
                p.offset = static_cast<uint32_t>(v);
                seen_offset = true;
            } else {
                *error = "base64_decode: unknown or repeated option '" + std::string(t) +
                         "' (bytes <n>, offset <n>, relative)";
                return false;
            }
        }
    }
    payload::append_option(st, std::move(opt));
    st.last_content = nullptr;
    return true;
}

bool parse_base64_data(ParseState& st, std::string_view, bool has_value, std::string* error) {
    if (has_value) {
        *error = "base64_data: takes no value";
        return false;
    }
    if (!is_top_level(st)) {
        *error = "base64_data: already given";
        return false;
    }
    payload::Base64DecodeOption* b = nullptr;
    if (st.current != nullptr) {
        for (auto it = st.current->options.rbegin(); it != st.current->options.rend(); ++it) {
            if ((b = payload::option_as<payload::Base64DecodeOption>(it->get())) != nullptr) {
                break;
            }
        }
    }
    if (b == nullptr) {
        *error = "base64_data: needs a base64_decode before it in the same buffer";
        return false;
    }
    b->data.buffer = st.current->buffer;
    st.current = &b->data;
    st.last_content = nullptr;
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
