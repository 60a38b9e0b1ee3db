// Snort 3 -> Suricata rule text. The rewrite is textual on purpose: every keyword keeps one
// parser (the Suricata one), and a Snort 3 rule gets exactly the matching behaviour of its
// Suricata equivalent. See docs/rules.md "Snort 3 rules" for the table and the differences.
#include "sensor/detect/snort3.h"

#include <algorithm>
#include <cctype>
#include <span>
#include <vector>

#include "common/strings.h"
#include "sensor/detect/parser.h"

namespace picket::sensor::detect::snort3 {
namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

struct Option {
    std::string key;  // lower case
    std::string_view value;
    bool has_value = false;
};

// Snort 3's lexer: an option ends at the first ';' outside a quoted string; inside quotes
// '\' escapes the next character, so ';' needs no escape there. False on an unterminated
// quote.
bool split_options(std::string_view body, std::vector<Option>* out) {
    const size_t n = body.size();
    size_t pos = 0;
    while (pos < n) {
        while (pos < n && (is_blank(body[pos]) || body[pos] == ';')) {
            ++pos;
        }
        if (pos >= n) {
            break;
        }
        const size_t start = pos;
        bool quoted = false;
        size_t colon = std::string_view::npos;
        while (pos < n) {
            const char c = body[pos];
            if (quoted && c == '\\') {
                pos += 2;
                continue;
            }
            if (c == '"') {
                quoted = !quoted;
            } else if (!quoted && c == ';') {
                break;
            } else if (!quoted && c == ':' && colon == std::string_view::npos) {
                colon = pos;
            }
            ++pos;
        }
        if (quoted) {
            return false;
        }
        pos = std::min(pos, n);
        Option o;
        if (colon == std::string_view::npos) {
            o.key = ascii_lower(strings::trim(body.substr(start, pos - start)));
        } else {
            o.key = ascii_lower(strings::trim(body.substr(start, colon - start)));
            o.value = strings::trim(body.substr(colon + 1, pos - colon - 1));
            o.has_value = true;
        }
        out->push_back(std::move(o));
        ++pos;
    }
    return true;
}

// Splits a quoted value ("...", optionally preceded by '!') from what follows its closing
// quote. False when the value does not start with a quote or never closes.
bool split_quoted(std::string_view v, bool* negated, std::string_view* str,
                  std::string_view* rest) {
    *negated = false;
    if (!v.empty() && v.front() == '!') {
        *negated = true;
        v = strings::trim(v.substr(1));
    }
    if (v.empty() || v.front() != '"') {
        return false;
    }
    for (size_t i = 1; i < v.size(); ++i) {
        if (v[i] == '\\') {
            ++i;
            continue;
        }
        if (v[i] == '"') {
            *str = v.substr(1, i - 1);
            *rest = strings::trim(v.substr(i + 1));
            return true;
        }
    }
    return false;
}

// The Suricata content parser wants ';' escaped; Snort 3 does not.
std::string escape_semicolons(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 4);
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            out.push_back(s[i]);
            out.push_back(s[++i]);
            continue;
        }
        if (s[i] == ';') {
            out.push_back('\\');
        }
        out.push_back(s[i]);
    }
    return out;
}

std::vector<std::string_view> split_commas(std::string_view s) {
    std::vector<std::string_view> out;
    size_t start = 0;
    while (start <= s.size()) {
        size_t c = s.find(',', start);
        if (c == std::string_view::npos) {
            c = s.size();
        }
        std::string_view part = strings::trim(s.substr(start, c - start));
        if (!part.empty()) {
            out.push_back(part);
        }
        start = c + 1;
    }
    return out;
}

// Snort 3 sticky buffers -> the Suricata sticky buffer Picket fills. nullptr: no filler.
// (BufferMap is declared in snort3.h so that --list-keywords reads this very table.)
// clang-format off
constexpr BufferMap kBuffers[] = {
    {"http_uri", "http.uri"},             {"http_raw_uri", "http.uri.raw"},
    {"http_header", "http.header"},       {"http_raw_header", "http.header.raw"},
    {"http_cookie", "http.cookie"},       {"http_raw_cookie", nullptr},
    {"http_client_body", "http.request_body"}, {"http_raw_body", nullptr},
    {"http_method", "http.method"},       {"http_stat_code", "http.stat_code"},
    {"http_stat_msg", "http.stat_msg"},   {"http_version", "http.protocol"},
    {"http_raw_request", "http.request_line"}, {"http_raw_status", "http.response_line"},
    {"http_true_ip", nullptr},            {"http_param", nullptr},
    {"http_trailer", nullptr},            {"http_raw_trailer", nullptr},
    {"http_header_test", nullptr},        {"http_trailer_test", nullptr},
    {"file_data", "file.data"},           {"pkt_data", "pkt_data"},
    {"raw_data", "pkt_data"},             {"js_data", nullptr},
    {"vba_data", nullptr},                {"base64_data", nullptr},
    {"sip_header", nullptr},              {"sip_body", nullptr},
};

// http_header:field NAME -> the single-header buffer holding that header's value.
constexpr BufferMap kHeaderFields[] = {
    {"user-agent", "http.user_agent"},    {"host", "http.host.raw"},
    {"cookie", "http.cookie"},            {"referer", "http.referer"},
    {"content-type", "http.content_type"}, {"content-length", "http.content_len"},
    {"accept", "http.accept"},            {"accept-encoding", "http.accept_enc"},
    {"accept-language", "http.accept_lang"}, {"connection", "http.connection"},
    {"location", "http.location"},        {"server", "http.server"},
};

// service: names -> the app-layer protocol Picket identifies.
struct ServiceMap {
    const char* name;
    AppProto app;
};
constexpr ServiceMap kServices[] = {
    {"http", AppProto::kHttp}, {"ssl", AppProto::kTls}, {"tls", AppProto::kTls},
    {"smtp", AppProto::kSmtp}, {"ftp", AppProto::kFtp}, {"ssh", AppProto::kSsh},
    {"dns", AppProto::kDns},   {"netbios-ssn", AppProto::kSmb}, {"smb", AppProto::kSmb},
    {"dcerpc", AppProto::kDcerpc},
};

// Snort 3 only options (with their --list-keywords status) and buffers that make a rule
// Snort 3. Buffers Suricata or Snort 2.9
// also know (file_data, base64_data, http_raw_cookie, sip_header, ...) are not listed: a
// Suricata rule using them keeps its Suricata diagnostic.
constexpr std::string_view kNotSupported = "not supported: ";
constexpr const char* kSoRefusal =
    "not supported: shared-object rules (so:) need Snort's .so plugins";
constexpr OwnKeyword kSnort3Only[] = {
    {"service", "supported"},
    {"rem", "supported"},
    {"bufferlen", "partly: relative is not supported"},
    {"so", kSoRefusal},
};
constexpr const char* kSnort3OnlyBuffers[] = {
    "raw_data",        "js_data",          "vba_data",         "http_raw_body",
    "http_true_ip",    "http_param",       "http_version",     "http_raw_request",
    "http_raw_status", "http_trailer",     "http_raw_trailer", "http_header_test",
    "http_trailer_test",
};

// content's comma options (Snort 3's content.nocase, ...).
using Form = ContentModifier::Form;
constexpr ContentModifier kContentModifiers[] = {
    {"nocase", "nocase", Form::kFlag},          {"fast_pattern", "fast_pattern", Form::kFlag},
    {"offset", "offset", Form::kValue},         {"depth", "depth", Form::kValue},
    {"distance", "distance", Form::kValue},     {"within", "within", Form::kValue},
    {"fast_pattern_offset", "fast_pattern", Form::kFastPatternPart},
    {"fast_pattern_length", "fast_pattern", Form::kFastPatternPart},
};

// Snort 3 options passed to the Suricata parser unchanged (see pass_through_options()).
constexpr const char* kPassThrough[] = {
    "msg", "reference", "classtype", "priority", "metadata", "gid", "sid", "rev",
    "content", "pcre", "isdataat", "byte_test", "byte_jump", "byte_extract", "byte_math",
    "flow", "flowbits", "detection_filter", "dsize", "flags", "itype", "icode", "ip_proto",
    "ttl", "id", "seq", "ack", "window", "tos", "fragbits", "sameip", "icmp_id", "icmp_seq",
    "ssl_state", "ssl_version", "sip_method", "sip_stat_code", "dce_iface", "dce_opnum",
    "dce_stub_data", "base64_decode", "tag", "replace", "sd_pattern", "stream_size",
    "file_type", "asn1", "cvs", "ipopts", "fragoffset",
};

// PCRE's own flags, then Snort's: R relative, B rawbytes, O match-limit override and the
// (Snort 2) HTTP buffer flags U I P H D M C K S Y.
constexpr std::string_view kPcreFlags = "ismxAEGRBOUIPHDMCKSY";
// clang-format on

// "alert file (...)": no service of its own; the buffers decide (see header_proto()).
constexpr OwnKeyword kFileHeader = {
    "file", "partly: no service condition; the buffers choose (file_data: HTTP bodies)"};

const BufferMap* find_buffer(std::string_view key) {
    for (const BufferMap& b : kBuffers) {
        if (key == b.snort) {
            return &b;
        }
    }
    return nullptr;
}

AppProto find_service(std::string_view name) {
    for (const ServiceMap& s : kServices) {
        if (name == s.name) {
            return s.app;
        }
    }
    return AppProto::kUnknown;
}

// Header protocol field -> Suricata's. A service name Picket parses becomes that app-layer
// protocol; "file" leaves the choice to the buffers (file_data: HTTP bodies). Any other
// service header has no ports to fall back on: empty proto, the rule is skipped.
struct HeaderProto {
    std::string proto;
    AppProto app = AppProto::kUnknown;
};
HeaderProto header_proto(std::string_view p) {
    const std::string n = ascii_lower(p);
    if (n == "ip" || n == "tcp" || n == "udp" || n == "icmp") {
        return {n, AppProto::kUnknown};
    }
    const AppProto app = find_service(n);
    if (app == AppProto::kDns || app == AppProto::kDcerpc) {
        return {"ip", app};
    }
    if (app != AppProto::kUnknown) {
        return {"tcp", app};
    }
    if (n == kFileHeader.name) {
        return {"ip", AppProto::kUnknown};
    }
    return {"", AppProto::kUnknown};
}

struct Failure {
    std::string category;
    std::string reason;
};

// The length in bytes of a content string as written ("ab|0D 0A|\"" is 5). False when a
// '|' group is not whole hex bytes or does not close.
bool content_length(std::string_view str, size_t* len) {
    size_t n = 0;
    bool hex = false;
    size_t digits = 0;
    for (size_t i = 0; i < str.size(); ++i) {
        const char c = str[i];
        if (c == '|') {
            if (hex && digits % 2 != 0) {
                return false;
            }
            hex = !hex;
            digits = 0;
        } else if (hex) {
            if (std::isxdigit(static_cast<unsigned char>(c)) != 0) {
                n += ++digits % 2 == 0 ? 1 : 0;
            } else if (c != ' ') {
                return false;
            }
        } else {
            i += c == '\\' ? 1 : 0;
            ++n;
        }
    }
    *len = n;
    return !hex;
}

// A decimal option value Snort bounds at 65535.
bool parse_u16(std::string_view arg, size_t* out) {
    if (arg.empty() || arg.size() > 5 || arg.find_first_not_of("0123456789") != arg.npos) {
        return false;
    }
    *out = std::stoul(std::string(arg));
    return *out <= 65535;
}

bool translate_content(std::string_view key, std::string_view value, std::string* out, Failure* f) {
    const std::string kw(key);
    auto bad = [&](const std::string& why) {
        *f = {"bad " + kw, kw + ": " + why};
        return false;
    };
    bool negated = false;
    std::string_view str;
    std::string_view rest;
    if (!split_quoted(value, &negated, &str, &rest)) {
        return bad("expected a quoted string");
    }
    out->append(key).append(":").append(negated ? "!" : "").append("\"");
    out->append(escape_semicolons(str)).append("\"; ");
    if (rest.empty()) {
        return true;
    }
    if (rest.front() != ',') {
        return bad("unexpected '" + std::string(rest) + "' after the string");
    }
    bool fast_pattern = false;
    size_t fp_offset = 0;
    size_t fp_length = 0;
    bool has_fp_offset = false;
    bool has_fp_length = false;
    for (std::string_view m : split_commas(rest.substr(1))) {
        const size_t sp = m.find_first_of(" \t");
        const std::string name = ascii_lower(m.substr(0, sp));
        const std::string_view arg =
            sp == std::string_view::npos ? std::string_view{} : strings::trim(m.substr(sp));
        const ContentModifier* mod = nullptr;
        for (const ContentModifier& c : kContentModifiers) {
            if (name == c.snort) {
                mod = &c;
            }
        }
        if (mod == nullptr) {
            return bad("unknown modifier '" + std::string(m) + "'");
        }
        switch (mod->form) {
            case Form::kFlag:
                if (!arg.empty()) {
                    return bad(name + " takes no value");
                }
                if (name == "fast_pattern") {
                    fast_pattern = true;  // written with the fast_pattern_* below, if any
                } else {
                    out->append(mod->suricata).append("; ");
                }
                break;
            case Form::kValue:
                if (arg.empty()) {
                    return bad(name + " needs a value");
                }
                out->append(mod->suricata).append(":").append(arg).append("; ");
                break;
            case Form::kFastPatternPart: {
                const bool is_offset = name == "fast_pattern_offset";
                if (!parse_u16(arg, is_offset ? &fp_offset : &fp_length)) {
                    return bad(name + " needs a number 0-65535, got '" + std::string(arg) + "'");
                }
                (is_offset ? has_fp_offset : has_fp_length) = true;
                fast_pattern = true;  // as Snort 2's fast_pattern:<offset>,<length>
                break;
            }
        }
    }
    if (!fast_pattern) {
        return true;
    }
    if (!has_fp_offset && !has_fp_length) {
        out->append("fast_pattern; ");
        return true;
    }
    // Suricata's fast_pattern takes both: a missing offset is 0, a missing length the rest of
    // the pattern after the offset.
    size_t len = 0;
    if (!content_length(str, &len)) {
        return bad("bad hex in the string");
    }
    const size_t off = fp_offset;
    const size_t n = has_fp_length ? fp_length : (off < len ? len - off : 0);
    if (n == 0 || off + n > len) {
        return bad("fast_pattern_offset " + std::to_string(off) + " + fast_pattern_length " +
                   std::to_string(n) + " do not fit the " + std::to_string(len) + "-byte pattern");
    }
    out->append("fast_pattern:")
        .append(std::to_string(off))
        .append(",")
        .append(std::to_string(n))
        .append("; ");
    return true;
}

// bufferlen:[op]N or A<>B (exclusive) or A<=>B (inclusive) -> bsize. Snort's relative form
// (the length left after the cursor) has no Suricata equivalent.
bool translate_bufferlen(std::string_view value, std::string* out, Failure* f) {
    const std::string v(strings::trim(value));
    if (v.find(',') != std::string::npos) {
        *f = {"bad bufferlen", "bufferlen: '" + v + "': relative is not supported"};
        return false;
    }
    const size_t incl = v.find("<=>");
    if (incl == std::string::npos) {
        *out = v;
        return true;
    }
    const std::string a(strings::trim(std::string_view(v).substr(0, incl)));
    const std::string b(strings::trim(std::string_view(v).substr(incl + 3)));
    const bool digits = !a.empty() && !b.empty() && a.size() <= 9 && b.size() <= 9 &&
                        a.find_first_not_of("0123456789") == std::string::npos &&
                        b.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) {
        *f = {"bad bufferlen", "bufferlen: bad range '" + v + "'"};
        return false;
    }
    const long lo = std::stol(a);
    const long hi = std::stol(b);
    if (lo > hi) {
        *f = {"bad bufferlen", "bufferlen: empty range '" + v + "'"};
        return false;
    }
    // bsize's A<>B is exclusive, as Snort's A<>B.
    *out = lo == 0 ? "<=" + std::to_string(hi)
                   : std::to_string(lo - 1) + "<>" + std::to_string(hi + 1);
    return true;
}

bool translate_options(std::string_view body, Translation* t, Failure* f) {
    std::vector<Option> opts;
    if (!split_options(body, &opts)) {
        *f = {"syntax", "unterminated quoted string in the options"};
        return false;
    }
    std::string& out = t->text;
    for (const Option& o : opts) {
        if (o.key == "sid" && !o.value.empty() && o.value.size() <= 9 &&
            o.value.find_first_not_of("0123456789") == std::string_view::npos) {
            t->sid = static_cast<uint32_t>(std::stoul(std::string(o.value)));
        }
    }
    for (const Option& o : opts) {
        const std::string& k = o.key;
        if (k == "service") {
            t->service = ascii_lower(o.value);
            const std::vector<std::string_view> names = split_commas(o.value);
            // One service Picket identifies: the rule waits for it. A list, or a service
            // without a parser here, keeps the header's transport and ports only.
            if (names.size() == 1) {
                t->app = find_service(ascii_lower(names[0]));
                t->service_option = t->app != AppProto::kUnknown;
            }
            continue;
        }
        if (k == "rem") {
            continue;
        }
        if (k == "so") {
            *f = {"unsupported keyword",
                  "so: " + std::string(std::string_view(kSoRefusal).substr(kNotSupported.size()))};
            return false;
        }
        if (k == "content" || k == "pcre") {
            if (k == "pcre") {
                out.append("pcre:").append(o.value).append("; ");
                continue;
            }
            if (!translate_content(k, o.value, &out, f)) {
                return false;
            }
            continue;
        }
        if (k == "http_header" && o.has_value) {
            const std::string v = ascii_lower(o.value);
            if (v.rfind("field", 0) != 0) {
                *f = {"unsupported buffer",
                      "unsupported buffer 'http_header:" + std::string(o.value) + "'"};
                return false;
            }
            const std::string name(strings::trim(std::string_view(v).substr(5)));
            const char* to = nullptr;
            for (const BufferMap& h : kHeaderFields) {
                if (name == h.snort) {
                    to = h.suricata;
                }
            }
            if (to == nullptr) {
                *f = {"unsupported buffer", "unsupported buffer 'http_header:field " + name + "'"};
                return false;
            }
            out.append(to).append("; ");
            continue;
        }
        if (const BufferMap* b = find_buffer(k)) {
            if (b->suricata == nullptr) {
                *f = {"unsupported buffer", "unsupported buffer '" + k + "'"};
                return false;
            }
            if (o.has_value) {
                *f = {"unsupported buffer",
                      "unsupported buffer '" + k + ":" + std::string(o.value) + "'"};
                return false;
            }
            out.append(b->suricata).append("; ");
            continue;
        }
        if (k == "bufferlen") {
            std::string bsize;
            if (!translate_bufferlen(o.value, &bsize, f)) {
                return false;
            }
            out.append("bsize:").append(bsize).append("; ");
            continue;
        }
        out.append(o.key);
        if (o.has_value) {
            out.append(":").append(o.value);
        }
        out.append("; ");
    }
    return true;
}

}  // namespace

std::span<const BufferMap> buffer_table() {
    return kBuffers;
}

std::span<const OwnKeyword> snort3_only_options() {
    return kSnort3Only;
}

std::span<const BufferMap> header_field_table() {
    return kHeaderFields;
}

std::span<const ContentModifier> content_modifier_table() {
    return kContentModifiers;
}

std::vector<OwnKeyword> service_headers() {
    std::vector<OwnKeyword> out;
    for (const ServiceMap& s : kServices) {
        out.push_back({s.name, "supported"});
    }
    out.push_back(kFileHeader);
    return out;
}

std::span<const char* const> pass_through_options() {
    return kPassThrough;
}

std::string_view pcre_flags() {
    return kPcreFlags;
}

bool looks_like_snort3(std::string_view text) {
    const size_t open = text.find('(');
    if (open == std::string_view::npos) {
        return false;
    }
    // "alert http (": two header fields.
    size_t fields = 0;
    bool in_field = false;
    for (char c : text.substr(0, open)) {
        const bool blank = is_blank(c);
        fields += (!blank && !in_field) ? 1 : 0;
        in_field = !blank;
    }
    if (fields == 2) {
        return true;
    }
    std::vector<Option> opts;
    const size_t close = text.rfind(')');
    if (close == std::string_view::npos || close < open ||
        !split_options(text.substr(open + 1, close - open - 1), &opts)) {
        return false;
    }
    bool seen_content = false;
    for (size_t i = 0; i < opts.size(); ++i) {
        const Option& o = opts[i];
        for (const OwnKeyword& s : kSnort3Only) {
            if (o.key == s.name) {
                return true;
            }
        }
        if (o.key == "content" || o.key == "pcre") {
            bool neg = false;
            std::string_view str;
            std::string_view rest;
            if (split_quoted(o.value, &neg, &str, &rest) && !rest.empty() && rest.front() == ',') {
                return true;
            }
            seen_content = true;
            continue;
        }
        if (o.key == "http_header" && o.has_value) {
            if (ascii_lower(o.value).rfind("field", 0) == 0) {
                return true;
            }
            continue;
        }
        if (o.has_value) {
            continue;
        }
        for (const char* s : kSnort3OnlyBuffers) {
            if (o.key == s) {
                return true;
            }
        }
        // A Suricata content modifier with no content before it and content after it is a
        // Snort 3 sticky buffer (http_uri; content:"x";). Without content after it, it stays
        // a Suricata error ("http_uri: no preceding content").
        BufferId id;
        if (!seen_content && find_buffer_modifier(o.key, &id)) {
            for (size_t j = i + 1; j < opts.size(); ++j) {
                if (opts[j].key == "content" || opts[j].key == "pcre") {
                    return true;
                }
            }
        }
    }
    return false;
}

bool translate(std::string_view text, Translation* out, std::string* category,
               std::string* reason) {
    text = strings::trim(text);
    Failure f;
    auto fail = [&](const Failure& why) {
        *category = why.category;
        *reason = why.reason;
        return false;
    };
    const size_t open = text.find('(');
    const size_t close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
        return fail({"syntax", "missing '(' or ')' around the options"});
    }
    std::vector<std::string_view> header;
    {
        std::string_view h = text.substr(0, open);
        size_t i = 0;
        while (i < h.size()) {
            while (i < h.size() && is_blank(h[i])) {
                ++i;
            }
            size_t j = i;
            int depth = 0;
            while (j < h.size() && (depth > 0 || !is_blank(h[j]))) {
                depth += h[j] == '[' ? 1 : (h[j] == ']' ? -1 : 0);
                ++j;
            }
            if (j > i) {
                header.push_back(h.substr(i, j - i));
            }
            i = j;
        }
    }
    if (header.size() != 2 && header.size() != 7) {
        return fail({"bad header", "header has " + std::to_string(header.size()) +
                                       " fields, expected 'action proto src sport -> dst "
                                       "dport' or Snort 3's 'action service'"});
    }
    std::string action = ascii_lower(header[0]);
    if (action == "block") {
        action = "drop";  // Snort 3's block drops the rest of the flow; Picket drops per packet.
    }
    const HeaderProto hp = header_proto(header[1]);
    if (hp.proto.empty()) {
        if (header.size() == 2) {
            return fail({"unsupported service", "unsupported service '" + std::string(header[1]) +
                                                    "' in the header (Picket cannot identify it "
                                                    "and the header has no ports)"});
        }
        return fail({"bad header", "unknown protocol '" + std::string(header[1]) + "'"});
    }
    out->text = action + " " + hp.proto + " ";
    if (header.size() == 2) {
        out->text += "any any -> any any";
    } else {
        for (size_t i = 2; i < 7; ++i) {
            out->text.append(header[i]).append(i < 6 ? " " : "");
        }
    }
    out->app = hp.app;
    out->service = hp.app != AppProto::kUnknown ? ascii_lower(header[1]) : "";
    out->text += " (";
    if (!translate_options(text.substr(open + 1, close - open - 1), out, &f)) {
        return fail(f);
    }
    out->text += ")";
    return true;
}

bool apply(const Translation& t, Rule* rule, std::string* reason) {
    if (t.app == AppProto::kUnknown) {
        return true;
    }
    for (const BufferMatch& m : rule->buffers) {
        const AppProto need = buffer_def(m.buffer).app;
        if (need == AppProto::kUnknown || need == t.app) {
            continue;
        }
        if (m.buffer == BufferId::kFileData) {
            *reason =
                "service:" + t.service + ": file_data is only filled from HTTP bodies in Picket";
        } else {
            *reason = "service:" + t.service + ": buffer '" + buffer_def(m.buffer).name +
                      "' is only filled for another app-layer protocol";
        }
        return false;
    }
    if (rule->app_needed != AppProto::kUnknown && rule->app_needed != t.app) {
        *reason = "service:" + t.service + ": conflicts with an app-layer keyword of the rule";
        return false;
    }
    rule->proto.app = t.app;
    // A service: option with the header's ports: Snort 3 also runs the rule on those ports
    // when the flow is not (or not yet) identified as the service. A service header (alert
    // http) has no ports: only the service.
    rule->service_or_ports =
        t.service_option && !(rule->sport.any && rule->dport.any && rule->sport.exclude.empty() &&
                              rule->dport.exclude.empty());
    return true;
}

}  // namespace picket::sensor::detect::snort3
