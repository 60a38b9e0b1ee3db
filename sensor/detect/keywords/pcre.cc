// pcre (Suricata 7 detect-pcre.c): "/regex/flags", optional leading '!'. PCRE flags
// i s m x A E G; R relative; B rawbytes (no-op); buffer flags U I P Q H D M C S Y V W Z move
// the pcre to that buffer. Compiled with PCRE2, JIT when ParseState::pcre_jit.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

PcreOption::~PcreOption() {
    if (code != nullptr) {
        pcre2_code_free(code);
    }
}

bool PcreOption::exec(const uint8_t* data, uint32_t len, uint32_t from, uint32_t start,
                      PayloadScratch& s, uint32_t* mstart, uint32_t* mend) const {
    if (code == nullptr || s.match_data == nullptr || from > len || start > len) {
        return false;
    }
    const uint8_t* subject = data + from;
    const PCRE2_SIZE slen = len - from;
    const PCRE2_SIZE soff = start - from;
    int rc = jit ? pcre2_jit_match(code, subject, slen, soff, 0, s.match_data, s.match_context)
                 : pcre2_match(code, subject, slen, soff, 0, s.match_data, s.match_context);
    if (rc < 0) {
        if (rc != PCRE2_ERROR_NOMATCH) {
            ++s.pcre_errors;
        }
        return false;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.match_data);
    *mstart = from + static_cast<uint32_t>(ov[0]);
    *mend = from + static_cast<uint32_t>(ov[1]);
    return true;
}

uint64_t PcreOption::hash() const {
    Hasher h;
    h.add(source);
    return h.h;
}

}  // namespace payload

namespace keywords {

bool parse_pcre(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view v = trim_blanks(value);
    if (!has_value || v.empty()) {
        *error = "pcre: needs a pattern";
        return false;
    }
    auto opt = std::make_unique<payload::PcreOption>();
    opt->source = std::string(v);
    if (v.front() == '!') {
        opt->negated = true;
        v = trim_blanks(v.substr(1));
    }
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
        v = v.substr(1, v.size() - 2);
    }
    // Errors quote the pattern as the rule writer thinks of it: /re/flags, without quotes.
    std::string written(opt->negated ? 1 : 0, '!');
    written.append(v);
    const size_t last = v.rfind('/');
    if (v.empty() || v.front() != '/' || last == 0 || last == std::string_view::npos) {
        *error = "bad pcre '" + written + "': expected /regex/flags";
        return false;
    }
    const std::string_view re = v.substr(1, last - 1);
    const std::string_view flags = v.substr(last + 1);
    uint32_t options = 0;
    bool has_buffer = false;
    BufferId buffer = BufferId::kPacket;
    for (char f : flags) {
        BufferId b = BufferId::kPacket;
        bool is_buffer = true;
        switch (f) {
            case 'i':
                options |= PCRE2_CASELESS;
                is_buffer = false;
                break;
            case 's':
                options |= PCRE2_DOTALL;
                is_buffer = false;
                break;
            case 'm':
                options |= PCRE2_MULTILINE;
                is_buffer = false;
                break;
            case 'x':
                options |= PCRE2_EXTENDED;
                is_buffer = false;
                break;
            case 'A':
                options |= PCRE2_ANCHORED;
                is_buffer = false;
                break;
            case 'E':
                options |= PCRE2_DOLLAR_ENDONLY;
                is_buffer = false;
                break;
            case 'G':
                options |= PCRE2_UNGREEDY;
                is_buffer = false;
                break;
            case 'R':
                opt->relative_ = true;
                is_buffer = false;
                break;
            case 'B':
                is_buffer = false;
                break;  // rawbytes: pkt_data is raw already
            case 'O':
                is_buffer = false;
                break;  // match-limit override: defaults are used
            case 'U':
                b = BufferId::kHttpUri;
                break;
            case 'I':
                b = BufferId::kHttpUriRaw;
                break;
            case 'P':
                b = BufferId::kHttpRequestBody;
                break;
            case 'Q':
                b = BufferId::kHttpResponseBody;
                break;
            case 'H':
                b = BufferId::kHttpHeader;
                break;
            case 'D':
                b = BufferId::kHttpHeaderRaw;
                break;
            case 'M':
                b = BufferId::kHttpMethod;
                break;
            case 'C':
                b = BufferId::kHttpCookie;
                break;
            case 'S':
                b = BufferId::kHttpStatCode;
                break;
            case 'Y':
                b = BufferId::kHttpStatMsg;
                break;
            case 'V':
                b = BufferId::kHttpUserAgent;
                break;
            case 'W':
                b = BufferId::kHttpHost;
                break;
            case 'Z':
                b = BufferId::kHttpHostRaw;
                break;
            default:
                *error = "bad pcre '" + written + "': unknown flag '" + f + "'";
                return false;
        }
        if (is_buffer) {
            if (has_buffer && b != buffer) {
                *error = "bad pcre '" + written + "': more than one buffer flag";
                return false;
            }
            has_buffer = true;
            buffer = b;
        }
    }
    // Q (the response body) under file.data names the same bytes for a response: the file
    // (ET Open writes "file.data; pcre:/.../QR").
    if (has_buffer && buffer == BufferId::kHttpResponseBody && st.sticky == BufferId::kFileData) {
        buffer = BufferId::kFileData;
    }
    if (has_buffer && st.sticky != BufferId::kPacket && st.sticky != buffer) {
        *error = "bad pcre '" + written + "': buffer flag conflicts with the sticky buffer '" +
                 buffer_def(st.sticky).name + "'";
        return false;
    }
    int errcode = 0;
    PCRE2_SIZE erroff = 0;
    opt->compile_options = options;
    opt->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(), options, &errcode,
                              &erroff, nullptr);
    if (opt->code == nullptr) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(errcode, buf, sizeof(buf));
        *error = "bad pcre '" + written + "': " + reinterpret_cast<const char*>(buf) +
                 " at offset " + std::to_string(erroff);
        return false;
    }
    if (st.pcre_jit && pcre2_jit_compile(opt->code, PCRE2_JIT_COMPLETE) == 0) {
        opt->jit = true;
    }
    if (has_buffer) {
        payload::append_option_to(st, buffer, std::move(opt));
    } else {
        payload::append_option(st, std::move(opt));
    }
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
