// pcre (Suricata 7 detect-pcre.c): "/regex/flags", optional leading '!'. PCRE flags
// i s m x A E G; R relative; B rawbytes (no-op); buffer flags U I P Q H D M C S Y V W Z move
// the pcre to that buffer. Compiled with PCRE2, JIT when ParseState::pcre_jit.
//
// Captures into variables (Suricata 7's "PCRE extraction"): a named group (?P<flow_NAME>...)
// or (?P<pkt_NAME>...) stores what it matched in flow variable NAME or packet variable NAME;
// so does a list after the flags, "/re/flags, flow:NAME, pkt:NAME", whose names map to groups
// 1, 2, ... in order (names may hold any character but ',', blanks and '"'). At most
// kMaxPcreCaptures per pcre, groups up to kMaxCaptureGroup (the ovector read), values cut at
// kMaxVarLen. Refused: both forms in one pcre, a negated pcre that captures, Suricata 8's
// alert: scope, the pkt:key,pkt:value pair form, more names than groups.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cstring>

#include "sensor/detect/flowbits.h"
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
    // Only pcres with captures into variables pay for reading groups. rc is one more than the
    // highest group set (0: all the ovector's pairs are).
    const uint32_t set_pairs =
        rc == 0 ? pcre2_get_ovector_count(s.match_data) : static_cast<uint32_t>(rc);
    for (const Capture& c : captures) {
        const PCRE2_SIZE b = ov[2 * c.group];
        const PCRE2_SIZE e = ov[2 * c.group + 1];
        if (c.group >= set_pairs || b == PCRE2_UNSET || e < b) {
            s.cap_len[c.slot] = -1;
            continue;
        }
        const uint32_t n = std::min<uint32_t>(static_cast<uint32_t>(e - b), kMaxVarLen);
        std::memcpy(s.cap_bytes[c.slot], subject + b, n);
        s.cap_len[c.slot] = static_cast<int32_t>(n);
    }
    return true;
}

uint64_t PcreOption::hash() const {
    Hasher h;
    h.add(source);
    return h.h;
}

}  // namespace payload

namespace keywords {

namespace {

bool is_capture_item(std::string_view item) {
    item = trim_blanks(item);
    return item.starts_with("flow:") || item.starts_with("pkt:") || item.starts_with("alert:");
}

// Splits "/re/flags, flow:a, pkt:b" into "/re/flags" and "flow:a, pkt:b": at the first comma
// that follows "/flags" (letters after a '/') and starts a list of scope:name items. The
// regex itself may hold commas and the names slashes, so neither alone decides.
void split_capture_list(std::string_view* v, std::string_view* list) {
    for (size_t c = v->find(','); c != std::string_view::npos; c = v->find(',', c + 1)) {
        std::string_view head = trim_blanks(v->substr(0, c));
        size_t f = head.size();
        while (f > 0 && ((head[f - 1] >= 'a' && head[f - 1] <= 'z') ||
                         (head[f - 1] >= 'A' && head[f - 1] <= 'Z'))) {
            --f;
        }
        if (f < 2 || head[f - 1] != '/') {
            continue;
        }
        std::string_view rest = v->substr(c + 1);
        bool all = !trim_blanks(rest).empty();
        for (size_t from = 0; all;) {
            const size_t comma = rest.find(',', from);
            all = is_capture_item(rest.substr(from, comma - from));
            if (comma == std::string_view::npos) {
                break;
            }
            from = comma + 1;
        }
        if (all) {
            *list = trim_blanks(rest);
            *v = head;
            return;
        }
    }
}

bool valid_var_name(std::string_view n) {
    if (n.empty()) {
        return false;
    }
    for (char c : n) {
        if (c == ',' || c == ' ' || c == '\t' || c == '"' || c == ';' ||
            static_cast<unsigned char>(c) < 0x20) {
            return false;
        }
    }
    return true;
}

// Interns name in scope and gives the pcre's group its rule slot.
bool add_capture(ParseState& st, payload::PcreOption& opt, VarScope scope, std::string_view name,
                 uint32_t group, const std::string& written, std::string* error) {
    auto fail = [&](const std::string& why) {
        *error = "bad pcre '" + written + "': " + why;
        return false;
    };
    if (opt.negated) {
        return fail("a negated pcre cannot capture into variables");
    }
    if (group > kMaxCaptureGroup) {
        return fail("capture group " + std::to_string(group) + " is past group " +
                    std::to_string(kMaxCaptureGroup) + ", the last one read");
    }
    if (opt.captures.size() >= kMaxPcreCaptures) {
        return fail("more than " + std::to_string(kMaxPcreCaptures) + " captures");
    }
    if (st.rule->var_captures.size() >= kMaxRuleCaptures) {
        return fail("more than " + std::to_string(kMaxRuleCaptures) + " captures in one rule");
    }
    uint16_t id = 0;
    if (st.flowbits == nullptr) {
        return fail("no variable registry");
    }
    if (!st.flowbits->intern_var(scope, name, &id)) {
        return fail("more than " + std::to_string(kMaxVarNames) + " variable names");
    }
    opt.captures.push_back(
        {static_cast<uint8_t>(group), static_cast<uint8_t>(st.rule->var_captures.size())});
    st.rule->var_captures.push_back({scope, id});
    return true;
}

// The compiled pattern's (?P<flow_NAME>) / (?P<pkt_NAME>) groups and the capture list.
bool add_captures(ParseState& st, payload::PcreOption& opt, std::string_view list,
                  const std::string& written, std::string* error) {
    uint32_t count = 0, entry = 0;
    PCRE2_SPTR table = nullptr;
    pcre2_pattern_info(opt.code, PCRE2_INFO_NAMECOUNT, &count);
    pcre2_pattern_info(opt.code, PCRE2_INFO_NAMEENTRYSIZE, &entry);
    pcre2_pattern_info(opt.code, PCRE2_INFO_NAMETABLE, &table);
    bool named = false;
    for (uint32_t i = 0; i < count && table != nullptr; ++i) {
        const PCRE2_SPTR e = table + static_cast<size_t>(i) * entry;
        const uint32_t group = (static_cast<uint32_t>(e[0]) << 8) | e[1];
        const std::string_view name(reinterpret_cast<const char*>(e + 2));
        VarScope scope;
        std::string_view var;
        if (name.starts_with("flow_") && name.size() > 5) {
            scope = VarScope::kFlow;
            var = name.substr(5);
        } else if (name.starts_with("pkt_") && name.size() > 4) {
            scope = VarScope::kPacket;
            var = name.substr(4);
        } else {
            continue;  // another named group: no variable
        }
        named = true;
        if (!add_capture(st, opt, scope, var, group, written, error)) {
            return false;
        }
    }
    if (list.empty()) {
        return true;
    }
    if (named) {
        *error = "bad pcre '" + written +
                 "': named flow_/pkt_ groups and a capture list cannot be combined";
        return false;
    }
    uint32_t groups = 0;
    pcre2_pattern_info(opt.code, PCRE2_INFO_CAPTURECOUNT, &groups);
    const auto names = static_cast<uint32_t>(std::count(list.begin(), list.end(), ',') + 1);
    if (names > groups) {
        *error = "bad pcre '" + written + "': " + std::to_string(names) + " capture names for " +
                 std::to_string(groups) + " groups";
        return false;
    }
    uint32_t group = 0;
    for (size_t from = 0;;) {
        const size_t comma = list.find(',', from);
        const std::string_view item = trim_blanks(list.substr(from, comma - from));
        ++group;
        VarScope scope = VarScope::kFlow;
        std::string_view var;
        if (item.starts_with("flow:")) {
            var = item.substr(5);
        } else if (item.starts_with("pkt:")) {
            scope = VarScope::kPacket;
            var = item.substr(4);
        } else {
            *error = "bad pcre '" + written + "': '" + std::string(item) +
                     "': alert: captures (alert.context) are Suricata 8's, not supported";
            return false;
        }
        if (scope == VarScope::kPacket && (var == "key" || var == "value")) {
            *error = "bad pcre '" + written + "': the pkt:key,pkt:value pair form is not supported";
            return false;
        }
        if (!valid_var_name(var)) {
            *error =
                "bad pcre '" + written + "': invalid variable name in '" + std::string(item) + "'";
            return false;
        }
        if (!add_capture(st, opt, scope, var, group, written, error)) {
            return false;
        }
        if (comma == std::string_view::npos) {
            return true;
        }
        from = comma + 1;
    }
}

}  // namespace

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
    std::string_view capture_list;
    split_capture_list(&v, &capture_list);
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
    if (!add_captures(st, *opt, capture_list, written, error)) {
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
