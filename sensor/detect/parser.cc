// Rule parsing (header + options), classification/reference config files, and the rule file
// loader with its diagnostics and summary. Control thread only.
#include "sensor/detect/parser.h"

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/snort3.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace picket::sensor::detect {
namespace {

// Keywords (and sticky buffers) Suricata 7 or Snort 2.9 know that Picket does not implement.
// A rule using one is skipped as "unsupported keyword", which an operator reads differently
// from a typo ("unknown keyword").
// clang-format off
constexpr const char* kUnsupported[] = {
    // Lua, variables, tagging, reputation, datasets, misc engine features.
    "lua", "luajit", "iprep",
    "dataset", "datarep", "geoip", "bypass", "replace", "prefilter", "requires", "config",
    "rpc", "ipopts", "fragoffset", "entropy",
    "absent", "l3_proto", "pkthdr", "flow.age", "flow.pkts", "flow.bytes",
    "tcp.mss", "tcp.hdr", "udp.hdr", "ipv4.hdr", "ipv6.hdr", "icmpv4.hdr", "icmpv6.hdr",
    "icmpv6.mtu", "ipv4-csum", "tcpv4-csum", "tcpv6-csum", "udpv4-csum", "udpv6-csum",
    "icmpv4-csum", "icmpv6-csum", "app-layer-state",
    "decode-event", "stream-event", "engine-event",
    // Decoders and transforms.
    "to_md5", "to_sha1", "to_sha256",
    "xor", "pcrexform",
    "header_lowercase", "strip_pseudo_headers", "from_base64",
    // Files.
    "filestore", "filemagic", "file.magic", "filename", "fileext", "filemd5",
    "filesha1", "filesha256", "filesize",
    // HTTP buffers without a filler here.
    "http.request_header", "http.response_header", "http_request_header",
    "http_response_header", "http_raw_cookie", "http2.frametype", "http2.errorcode",
    "http2.priority", "http2.window", "http2.size_update", "http2.settings",
    "http2.header_name", "http2.header",
    // TLS / SSH.
    "tls.subject", "tls.issuerdn", "tls_cert_notbefore", "tls_cert_notafter",
    "tls_cert_expired", "tls_cert_valid", "tls.fingerprint", "tls.cert_fingerprint",
    "tls_cert_fingerprint", "tls.store", "tls.random", "tls.random_time", "tls.random_bytes",
    "tls.subjectaltname", "tls.alpn", "ssl_version", "ssl_state", "ja3s.string", "ja4.hash",
    // DNS and other application layers.
    "dns.answer.name", "dns.query.name", "dns.rrtype", "smb.named_pipe",
    "smb.share", "smb.ntlmssp_user", "smb.ntlmssp_domain", "smb.version", "dcerpc.iface",
    "dcerpc.opnum", "dcerpc.stub_data", "dce_iface", "dce_opnum", "dce_stub_data",
    "krb5_msg_type", "krb5_cname", "krb5_sname", "krb5_err_code", "krb5.ticket_encryption",
    "sip.method", "sip.uri", "sip.request_line", "sip.stat_code", "sip.stat_msg",
    "sip.response_line", "sip.protocol", "snmp.version", "snmp.community", "snmp.pdu_type",
    "snmp.usm", "mqtt.type", "mqtt.flags", "mqtt.qos", "mqtt.connect.clientid",
    "mqtt.publish.topic", "mqtt.publish.message", "rfb.name", "rfb.secresult", "rfb.sectype",
    "dhcp.leasetime", "modbus", "dnp3_func", "dnp3_ind", "dnp3_obj", "dnp3_data",
    "enip_command", "cip_service", "nfs_procedure", "nfs.version",
    "ike.init_spi", "ike.resp_spi", "ike.chosen_sa_attribute", "ike.exchtype", "ike.vendor",
    "ike.key_exchange_payload", "ike.nonce_payload", "quic.sni", "quic.ua", "quic.version",
    "quic.cyu.hash", "quic.cyu.string", "bittorrent-dht.node_id", "pgsql.query", "frame",
    "smtp.helo", "smtp.mail_from", "smtp.rcpt_to", "email.from", "email.subject", "email.to",
    "email.cc",
    // Snort 2.9 only.
    "http_encode", "resp", "react", "session", "logto", "activates", "activated_by", "count",
    "sd_pattern", "file_type", "file_group", "protected_content", "hash", "length",
    "stream_reassemble", "cvs", "gtp_type", "gtp_info", "gtp_version", "sip_header",
    "sip_body", "appid", "service", "soid",
};

constexpr const char* kUnsupportedProtocols[] = {
    "http2", "sctp", "nfs", "ntp", "dhcp", "krb5", "snmp", "sip", "rfb", "mqtt",
    "rdp", "modbus", "dnp3", "enip", "ike", "ikev2", "quic", "tftp", "imap", "pop3",
    "bittorrent-dht", "telnet", "pgsql", "ldap", "websocket", "pkthdr", "nntp", "irc",
    "ssl", "doh2", "template",
};
// clang-format on

bool is_unsupported(std::string_view name) {
    for (const char* u : kUnsupported) {
        if (name == u) {
            return true;
        }
    }
    return false;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() &&
           (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
        s.remove_prefix(1);
    }
    while (!s.empty() &&
           (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
        s.remove_suffix(1);
    }
    return s;
}

struct RawOption {
    std::string_view key;
    std::string_view value;
    bool has_value = false;
};

// Parse failure: category + reason.
struct Failure {
    std::string category;
    std::string reason;
};

bool is_blank(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// Splits the text between '(' and ')' into options. An unquoted value ends at the first
// unescaped ';'. A value that starts with '"' (or '!"') is quoted: it ends at the first '"'
// followed by ';' (blanks allowed) or the end, so ';' needs no escape inside quotes and a
// bare '"' inside a pattern (pcre:"/["']x/", in ET Open) does not end it. '\' escapes the
// next character. The parser unescapes nothing: keywords get their value as written.
bool split_options(std::string_view body, std::vector<RawOption>* out, Failure* f) {
    const size_t n = body.size();
    size_t pos = 0;
    while (true) {
        while (pos < n && is_blank(body[pos])) {
            ++pos;
        }
        if (pos >= n) {
            return true;
        }
        if (body[pos] == ';') {
            *f = {"syntax", "empty option (';;')"};
            return false;
        }
        const size_t key_start = pos;
        while (pos < n && body[pos] != ':' && body[pos] != ';') {
            ++pos;
        }
        RawOption o;
        o.key = trim(body.substr(key_start, pos - key_start));
        const bool key_ok = !o.key.empty() && std::all_of(o.key.begin(), o.key.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == '-';
        });
        if (!key_ok) {
            size_t end = body.find(';', key_start);
            end = std::min({end, n, key_start + 40});
            *f = {"syntax",
                  "bad option '" + std::string(body.substr(key_start, end - key_start)) + "'"};
            return false;
        }
        if (pos < n && body[pos] == ':') {
            ++pos;
            o.has_value = true;
            size_t q = pos;
            while (q < n && is_blank(body[q])) {
                ++q;
            }
            if (q < n && body[q] == '!') {
                ++q;
                while (q < n && is_blank(body[q])) {
                    ++q;
                }
            }
            size_t value_end = n;
            size_t next = n;
            bool closed = false;
            if (q < n && body[q] == '"') {
                for (size_t i = q + 1; i < n; ++i) {
                    if (body[i] == '\\') {
                        ++i;
                        continue;
                    }
                    if (body[i] != '"') {
                        continue;
                    }
                    size_t j = i + 1;
                    while (j < n && is_blank(body[j])) {
                        ++j;
                    }
                    if (j == n || body[j] == ';') {
                        value_end = i + 1;
                        next = j;
                        closed = true;
                        break;
                    }
                }
            }
            if (!closed) {
                // Unquoted, or a quote that never closes before a ';' (content:"a",nocase;
                // in Snort 3 syntax, a missing quote): up to the first unescaped ';', and the
                // keyword reports what is wrong with its value.
                size_t i = pos;
                while (i < n && body[i] != ';') {
                    i += body[i] == '\\' ? 2 : 1;
                }
                value_end = std::min(i, n);
                next = value_end;
            }
            o.value = trim(body.substr(pos, value_end - pos));
            pos = next;
        }
        out->push_back(o);
        if (pos < n) {
            ++pos;  // the ';'
        }
    }
}

// Splits the header on blanks outside [...] (address lists may contain spaces).
std::vector<std::string_view> split_header(std::string_view h) {
    std::vector<std::string_view> out;
    int depth = 0;
    size_t start = std::string_view::npos;
    for (size_t i = 0; i <= h.size(); ++i) {
        const char c = i < h.size() ? h[i] : ' ';
        const bool blank = c == ' ' || c == '\t';
        if (blank && depth <= 0) {
            if (start != std::string_view::npos) {
                out.push_back(h.substr(start, i - start));
                start = std::string_view::npos;
            }
            continue;
        }
        if (start == std::string_view::npos) {
            start = i;
        }
        if (c == '[') {
            ++depth;
        } else if (c == ']') {
            --depth;
        }
    }
    return out;
}

bool parse_action(std::string_view a, Action* out) {
    if (a == "alert") {
        *out = Action::kAlert;
    } else if (a == "drop") {
        *out = Action::kDrop;
    } else if (a == "reject" || a == "rejectsrc" || a == "rejectdst" || a == "rejectboth") {
        *out = Action::kReject;
    } else if (a == "pass") {
        *out = Action::kPass;
    } else {
        return false;
    }
    return true;
}

// Protocol of the header. dns and dcerpc run over TCP and UDP: l4 stays kIp and the app
// protocol restricts (the compiler places such rules in both the TCP and UDP groups).
bool parse_proto(std::string_view name, ProtoSpec* p, Failure* f) {
    const std::string n = ascii_lower(name);
    using L = ProtoSpec::L4;
    struct Entry {
        const char* name;
        L l4;
        AppProto app;
        int8_t ipv;
    };
    static constexpr Entry kProtos[] = {
        {"ip", L::kIp, AppProto::kUnknown, 0},       {"ipv4", L::kIp, AppProto::kUnknown, 4},
        {"ip4", L::kIp, AppProto::kUnknown, 4},      {"ipv6", L::kIp, AppProto::kUnknown, 6},
        {"ip6", L::kIp, AppProto::kUnknown, 6},      {"tcp", L::kTcp, AppProto::kUnknown, 0},
        {"tcp-pkt", L::kTcp, AppProto::kUnknown, 0}, {"tcp-stream", L::kTcp, AppProto::kUnknown, 0},
        {"udp", L::kUdp, AppProto::kUnknown, 0},     {"icmp", L::kIcmp, AppProto::kUnknown, 0},
        {"icmpv4", L::kIcmp, AppProto::kUnknown, 4}, {"icmpv6", L::kIcmp, AppProto::kUnknown, 6},
        {"http", L::kTcp, AppProto::kHttp, 0},       {"http1", L::kTcp, AppProto::kHttp, 0},
        {"tls", L::kTcp, AppProto::kTls, 0},         {"smtp", L::kTcp, AppProto::kSmtp, 0},
        {"ftp", L::kTcp, AppProto::kFtp, 0},         {"ssh", L::kTcp, AppProto::kSsh, 0},
        {"smb", L::kTcp, AppProto::kSmb, 0},         {"dns", L::kIp, AppProto::kDns, 0},
        {"dcerpc", L::kIp, AppProto::kDcerpc, 0},    {"ftp-data", L::kTcp, AppProto::kFtpData, 0},
    };
    for (const Entry& e : kProtos) {
        if (n == e.name) {
            *p = ProtoSpec{};
            p->l4 = e.l4;
            p->app = e.app;
            p->ip_version = e.ipv;
            p->tcp_pkt_only = n == "tcp-pkt";
            p->tcp_stream_only = n == "tcp-stream";
            return true;
        }
    }
    for (const char* u : kUnsupportedProtocols) {
        if (n == u) {
            *f = {"unsupported protocol", "unsupported protocol '" + std::string(name) + "'"};
            return false;
        }
    }
    *f = {"bad header", "unknown protocol '" + std::string(name) + "'"};
    return false;
}

const VarTable* vars_of(const ParseEnv& env) {
    static const VarTable kDefaultVars = VarTable::suricata_defaults();
    return env.vars != nullptr ? env.vars : &kDefaultVars;
}

bool parse_header(std::string_view header, const VarTable* vars, Rule* r, Failure* f) {
    const std::vector<std::string_view> t = split_header(header);
    if (t.size() != 7) {
        *f = {"bad header", "header has " + std::to_string(t.size()) +
                                " fields, expected 'action proto src sport -> dst dport'"};
        return false;
    }
    const std::string action = ascii_lower(t[0]);
    if (!parse_action(action, &r->action)) {
        *f = {"bad header", "unknown action '" + std::string(t[0]) + "'"};
        return false;
    }
    r->reject_to = action == "rejectdst"    ? RejectTo::kReceiver
                   : action == "rejectboth" ? RejectTo::kBoth
                                            : RejectTo::kSender;
    if (!parse_proto(t[1], &r->proto, f)) {
        return false;
    }
    if (t[4] == "->") {
        r->bidirectional = false;
    } else if (t[4] == "<>") {
        r->bidirectional = true;
    } else {
        *f = {"bad header", "bad direction '" + std::string(t[4]) + "' (expected -> or <>)"};
        return false;
    }
    std::string err;
    if (!parse_address_spec(t[2], vars, &r->src, &err) ||
        !parse_address_spec(t[5], vars, &r->dst, &err)) {
        *f = {"bad address", err};
        return false;
    }
    if (!parse_port_spec(t[3], vars, &r->sport, &err) ||
        !parse_port_spec(t[6], vars, &r->dport, &err)) {
        *f = {"bad port", err};
        return false;
    }
    return true;
}

// content:"x"; http_uri; moves the content to the modifier's buffer (Snort 2.9 semantics).
// The next plain content goes back to the sticky buffer (the packet unless one was set), not
// to http_uri: that is what Snort and Suricata do with `content:"a"; http_uri; content:"b";`.
bool apply_modifier(ParseState& st, std::string_view name, BufferId id, Failure* f) {
    const std::string kw(name);
    if (st.last_content == nullptr) {
        *f = {"bad " + kw, kw + ": no preceding content"};
        return false;
    }
    BufferMatch* from = nullptr;
    for (BufferMatch& m : st.rule->buffers) {
        if (!m.options.empty() && m.options.back().get() == st.last_content) {
            from = &m;
            break;
        }
    }
    if (from == nullptr) {
        *f = {"bad " + kw, kw + ": must follow its content and that content's modifiers"};
        return false;
    }
    if (from->buffer == id) {
        return true;  // repeated modifier
    }
    if (from->buffer != BufferId::kPacket) {
        *f = {"bad " + kw, kw + ": content is already in " + buffer_def(from->buffer).name};
        return false;
    }
    std::unique_ptr<PayloadOption> moved = std::move(from->options.back());
    from->options.pop_back();
    st.list_for(id).options.push_back(std::move(moved));
    st.current = &st.list_for(st.sticky);
    return true;
}

std::string keyword_error(std::string_view kw, const std::string& error) {
    const std::string prefix = std::string(kw) + ":";
    if (error.compare(0, prefix.size(), prefix) == 0) {
        return error;
    }
    return prefix + " " + (error.empty() ? std::string("invalid") : error);
}

uint32_t sid_for_diagnostics(const std::vector<RawOption>& opts) {
    for (const RawOption& o : opts) {
        if (ascii_lower(o.key) == "sid") {
            uint64_t v = 0;
            std::string_view s = trim(o.value);
            if (s.empty() || s.size() > 10) {
                return 0;
            }
            for (char c : s) {
                if (c < '0' || c > '9') {
                    return 0;
                }
                v = v * 10 + static_cast<uint64_t>(c - '0');
            }
            return v > UINT32_MAX ? 0 : static_cast<uint32_t>(v);
        }
    }
    return 0;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    }
    // Reserved at the file's size and read in large pieces (a stringstream grows and copies it
    // several times: 8% of loading ET Open). A source without a size (a pipe) is read the same.
    std::string out;
    in.seekg(0, std::ios::end);
    if (const std::streamoff size = in.tellg(); size > 0) {
        out.reserve(static_cast<size_t>(size));
    }
    in.clear();
    in.seekg(0, std::ios::beg);
    in.clear();
    char buf[65536];
    while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
        out.append(buf, static_cast<size_t>(in.gcount()));
    }
    if (in.bad()) {
        throw std::runtime_error(path + ": cannot open: read error");
    }
    return out;
}

// Calls fn(line_number, trimmed_line) for each non-blank, non-comment line.
template <typename Fn>
void for_each_config_line(std::string_view text, Fn fn) {
    uint32_t line_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) {
            nl = text.size();
        }
        ++line_no;
        std::string_view line = trim(text.substr(pos, nl - pos));
        pos = nl + 1;
        if (!line.empty() && line.front() != '#') {
            fn(line_no, line);
        }
        if (nl == text.size()) {
            break;
        }
    }
}

// "config NAME: rest" -> rest; false when the line is not that directive.
bool config_directive(std::string_view line, std::string_view name, std::string_view* rest) {
    if (line.substr(0, 6) != "config") {
        return false;
    }
    std::string_view s = trim(line.substr(6));
    if (s.substr(0, name.size()) != name) {
        return false;
    }
    s = trim(s.substr(name.size()));
    if (s.empty() || s.front() != ':') {
        return false;
    }
    *rest = trim(s.substr(1));
    return true;
}

}  // namespace

BufferMatch& ParseState::list_for(BufferId id) {
    // At most one list per buffer: reserving them all up front keeps st.current and other
    // BufferMatch pointers valid while keywords add lists.
    if (rule->buffers.capacity() < kNumBuffers) {
        rule->buffers.reserve(kNumBuffers);
    }
    for (BufferMatch& m : rule->buffers) {
        if (m.buffer == id) {
            return m;
        }
    }
    rule->buffers.emplace_back();
    rule->buffers.back().buffer = id;
    return rule->buffers.back();
}

namespace {

std::unique_ptr<Rule> parse_suricata_rule(std::string_view text, const ParseEnv& env,
                                          RuleDiagnostic* diag) {
    text = trim(text);
    auto rule = std::make_unique<Rule>();
    rule->file = env.file;
    rule->line = env.line;
    rule->text = std::string(text);
    rule->buffers.reserve(kNumBuffers);

    diag->file = env.file;
    diag->line = env.line;
    diag->sid = 0;
    diag->reason.clear();
    diag->category.clear();
    auto fail = [&](const Failure& f) {
        diag->category = f.category;
        diag->reason = f.reason;
        return nullptr;
    };

    const size_t open = text.find('(');
    if (open == std::string_view::npos) {
        return fail({"syntax", "missing '(' before the options"});
    }
    const size_t close = text.rfind(')');
    if (close == std::string_view::npos || close < open) {
        return fail({"syntax", "unterminated option list (missing ')')"});
    }
    if (!trim(text.substr(close + 1)).empty()) {
        return fail({"syntax", "unexpected text after ')'"});
    }

    Failure f;
    std::vector<RawOption> opts;
    if (!split_options(text.substr(open + 1, close - open - 1), &opts, &f)) {
        return fail(f);
    }
    diag->sid = sid_for_diagnostics(opts);

    if (!parse_header(text.substr(0, open), vars_of(env), rule.get(), &f)) {
        return fail(f);
    }

    ParseState st;
    st.rule = rule.get();
    st.flowbits = env.flowbits;
    st.vars = vars_of(env);
    st.pcre_jit = env.pcre_jit;
    st.current = &st.list_for(BufferId::kPacket);

    std::string error;
    for (const RawOption& o : opts) {
        const std::string key = ascii_lower(o.key);
        BufferId id;
        if (find_sticky_buffer(key, &id)) {
            if (o.has_value) {
                return fail({"bad " + key, key + ": takes no value"});
            }
            st.sticky = id;
            st.current = &st.list_for(id);
            st.last_content = nullptr;
            continue;
        }
        if (find_buffer_modifier(key, &id)) {
            if (o.has_value) {
                return fail({"bad " + key, key + ": takes no value"});
            }
            if (!apply_modifier(st, key, id, &f)) {
                return fail(f);
            }
            continue;
        }
        if (const KeywordDef* kw = find_keyword(key)) {
            error.clear();
            if (!kw->parse(st, o.value, o.has_value, &error)) {
                return fail({"bad " + key, keyword_error(key, error)});
            }
            continue;
        }
        if (is_unsupported(key)) {
            return fail({"unsupported keyword", "unsupported keyword '" + key + "'"});
        }
        return fail({"unknown keyword", "unknown keyword '" + std::string(o.key) + "'"});
    }

    if (rule->sid == 0) {
        return fail({"missing sid", "rule has no sid"});
    }
    diag->sid = rule->sid;

    if (!rule->classtype.empty() && env.classifications != nullptr &&
        !env.classifications->entries.empty()) {
        const Classification* c = env.classifications->find(rule->classtype);
        if (c == nullptr) {
            return fail({"unknown classtype", "unknown classtype '" + rule->classtype + "'"});
        }
        rule->category = c->description;
        if (!rule->priority_set) {
            rule->priority = c->priority;
        }
    }

    // Lists left empty (the initial packet list, a list emptied by content modifiers, a
    // sticky buffer with nothing after it) would make the rule require a buffer it never
    // inspects.
    std::erase_if(rule->buffers, [](const BufferMatch& m) { return m.options.empty(); });
    for (BufferMatch& m : rule->buffers) {
        link_payload_options(m);
    }
    if (std::string error; !keywords::finish_xbits(*rule, &error)) {
        return fail({"bad xbits", error});
    }
    return rule;
}

}  // namespace

// Syntax is chosen per rule: Suricata first, so a rule that parses as Suricata parses exactly
// as before; only a rule that fails and uses Snort 3-only syntax goes through the Snort 3
// front-end (snort3.h), whose diagnostics then replace the Suricata ones.
std::unique_ptr<Rule> parse_rule(std::string_view text, const ParseEnv& env, RuleDiagnostic* diag) {
    std::unique_ptr<Rule> rule;
    if (env.syntax != ParseEnv::Syntax::kSnort3) {
        rule = parse_suricata_rule(text, env, diag);
        if (rule || env.syntax == ParseEnv::Syntax::kSuricata || !snort3::looks_like_snort3(text)) {
            return rule;
        }
    }
    diag->file = env.file;
    diag->line = env.line;
    snort3::Translation t;
    std::string category;
    std::string reason;
    if (!snort3::translate(text, &t, &category, &reason)) {
        diag->category = category;
        diag->reason = "snort3: " + reason;
        if (diag->sid == 0) {
            diag->sid = t.sid;  // the Suricata split may not have reached the sid
        }
        return nullptr;
    }
    rule = parse_suricata_rule(t.text, env, diag);
    if (!rule) {
        diag->reason = "snort3: " + diag->reason;
        return nullptr;
    }
    if (!snort3::apply(t, rule.get(), &reason)) {
        diag->category = "unsupported service";
        diag->reason = "snort3: " + reason;
        return nullptr;
    }
    rule->syntax = RuleSyntax::kSnort3;
    rule->text = std::string(trim(text));
    return rule;
}

// ---------------------------------------------------------------------------------------
// classification.config / reference.config

const Classification* ClassificationTable::find(std::string_view name) const {
    auto it = entries.find(name);
    return it == entries.end() ? nullptr : &it->second;
}

ClassificationTable parse_classification_config(std::string_view text, std::string_view file,
                                                std::vector<std::string>* errors) {
    ClassificationTable t;
    for_each_config_line(text, [&](uint32_t line_no, std::string_view line) {
        auto err = [&](const std::string& why) {
            if (errors != nullptr) {
                errors->push_back(std::string(file) + ":" + std::to_string(line_no) + ": " + why);
            }
        };
        std::string_view rest;
        if (!config_directive(line, "classification", &rest)) {
            err("expected 'config classification: name,description,priority'");
            return;
        }
        const size_t first = rest.find(',');
        const size_t last = rest.rfind(',');
        if (first == std::string_view::npos || first == last) {
            err("expected 'name,description,priority', got '" + std::string(rest) + "'");
            return;
        }
        Classification c;
        c.name = std::string(trim(rest.substr(0, first)));
        c.description = std::string(trim(rest.substr(first + 1, last - first - 1)));
        std::string_view prio = trim(rest.substr(last + 1));
        int p = 0;
        const bool digits =
            !prio.empty() && prio.size() <= 3 &&
            std::all_of(prio.begin(), prio.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
        if (digits) {
            p = std::stoi(std::string(prio));
        }
        if (c.name.empty() || !digits) {
            err("expected 'name,description,priority', got '" + std::string(rest) + "'");
            return;
        }
        c.priority = p;
        t.entries[c.name] = std::move(c);
    });
    return t;
}

ClassificationTable load_classification_file(const std::string& path,
                                             std::vector<std::string>* errors) {
    return parse_classification_config(read_file(path), path, errors);
}

ClassificationTable ClassificationTable::load(const std::string& path,
                                              std::vector<std::string>* errors) {
    return load_classification_file(path, errors);
}

ReferenceTable parse_reference_config(std::string_view text, std::string_view file,
                                      std::vector<std::string>* errors) {
    ReferenceTable t;
    for_each_config_line(text, [&](uint32_t line_no, std::string_view line) {
        std::string_view rest;
        size_t sp = std::string_view::npos;
        if (config_directive(line, "reference", &rest)) {
            sp = rest.find_first_of(" \t");
        }
        if (sp == std::string_view::npos) {
            if (errors != nullptr) {
                errors->push_back(std::string(file) + ":" + std::to_string(line_no) +
                                  ": expected 'config reference: system url'");
            }
            return;
        }
        t.url_prefix[std::string(rest.substr(0, sp))] = std::string(trim(rest.substr(sp)));
    });
    return t;
}

ReferenceTable load_reference_file(const std::string& path, std::vector<std::string>* errors) {
    return parse_reference_config(read_file(path), path, errors);
}

// ---------------------------------------------------------------------------------------
// Diagnostics and the loader.

namespace {

// Actions that start a rule in either language (Suricata's, Snort 3's block/log/react/rewrite,
// Snort 2's sdrop): a line starting with one is a rule header. Whether the action is valid is
// parse_rule()'s business; here it only tells a rule from an option line.
constexpr std::string_view kRuleActions[] = {
    "alert",      "drop",  "pass", "reject", "rejectsrc", "rejectdst",
    "rejectboth", "block", "log",  "react",  "rewrite",   "sdrop",
};

bool starts_rule(std::string_view line) {
    size_t end = 0;
    while (end < line.size() && !is_blank(line[end])) {
        ++end;
    }
    if (end == line.size()) {
        return false;  // a bare word is no header
    }
    const std::string word = ascii_lower(line.substr(0, end));
    return std::find(std::begin(kRuleActions), std::end(kRuleActions), word) !=
           std::end(kRuleActions);
}

// True when the rule text holds the ')' that closes its option list: the text ends with ')'
// (every one-line rule, also one whose quotes the scan below would misread, such as ET Open's
// pcre:"/["']x/"), or a ')' outside double quotes ('\' escapes the next character) stands
// where an option would start (after the '(' or a ';'), which is where Snort 3 ends a rule.
bool options_closed(std::string_view text) {
    text = trim(text);
    if (!text.empty() && text.back() == ')') {
        return true;
    }
    const size_t open = text.find('(');
    if (open == std::string_view::npos) {
        return false;
    }
    bool quoted = false;
    bool boundary = true;
    for (size_t i = open + 1; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\\') {
            ++i;
            boundary = false;
        } else if (quoted) {
            quoted = c != '"';
        } else if (c == '"') {
            quoted = true;
            boundary = false;
        } else if (c == ';') {
            boundary = true;
        } else if (c == ')' && boundary) {
            return true;
        } else if (!is_blank(c)) {
            boundary = false;
        }
    }
    return false;
}

}  // namespace

RuleLoader::RuleLoader(ParseEnv env) : env_(std::move(env)) {}

void RuleLoader::add_file(const std::string& path) {
    add_text(read_file(path), path);
}

void RuleLoader::add_file(const std::string& path, ParseEnv::Syntax syntax) {
    const ParseEnv::Syntax saved = env_.syntax;
    env_.syntax = syntax;
    try {
        add_file(path);
    } catch (...) {
        env_.syntax = saved;
        throw;
    }
    env_.syntax = saved;
}

void RuleLoader::add_text(std::string_view text, std::string_view file, ParseEnv::Syntax syntax) {
    const ParseEnv::Syntax saved = env_.syntax;
    env_.syntax = syntax;
    add_text(text, file);  // does not throw: bad rules are diagnosed
    env_.syntax = saved;
}

// Lines become rules three ways: one line; lines joined by a trailing '\' (Suricata, Snort);
// and, as Snort 3 reads a rule up to its closing ')', a rule header whose '(' is not closed
// on its line, joined with the following lines (blank and '#' lines between options dropped)
// until the ')'. A rule is reported at its first line.
void RuleLoader::add_text(std::string_view text, std::string_view file) {
    const auto t0 = std::chrono::steady_clock::now();
    ++out_.summary.files;
    ParseEnv env = env_;
    env.file = std::string(file);

    std::string rule_text;
    uint32_t rule_line = 0;
    bool in_rule = false;    // rule_text holds the start of a rule
    bool backslash = false;  // the previous line ended with '\'
    uint32_t line_no = 0;
    size_t pos = 0;
    auto skip = [&](RuleDiagnostic d) {
        ++out_.summary.skipped;
        ++out_.summary.skipped_by_reason[d.category];
        out_.summary.diagnostics.push_back(std::move(d));
    };
    auto flush = [&]() {
        in_rule = false;
        ++out_.summary.rules_seen;
        env.line = rule_line;
        RuleDiagnostic d;
        std::unique_ptr<Rule> r = parse_rule(rule_text, env, &d);
        if (r) {
            out_.rules.push_back(std::move(r));
        } else {
            skip(std::move(d));
        }
        rule_text.clear();
    };
    // A multi-line rule without its ')': skipped, named at its first line.
    auto not_closed = [&](const std::string& before) {
        in_rule = false;
        ++out_.summary.rules_seen;
        RuleDiagnostic d;
        d.file = env.file;
        d.line = rule_line;
        d.category = "rule not closed";
        d.reason = "rule not closed: no ')' before " + before;
        skip(std::move(d));
        rule_text.clear();
    };
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) {
            nl = text.size();
        }
        ++line_no;
        std::string_view raw = text.substr(pos, nl - pos);
        pos = nl + 1;
        std::string_view piece;
        if (backslash) {
            // A continuation line is kept as written: its leading blanks may be inside a
            // quoted value.
            piece = raw;
            while (!piece.empty() &&
                   (piece.back() == '\r' || piece.back() == ' ' || piece.back() == '\t')) {
                piece.remove_suffix(1);
            }
        } else {
            // Blank lines and comments (including commented-out, i.e. disabled, rules; between
            // the options of a multi-line rule, Snort 3's comments).
            piece = trim(raw);
            if (piece.empty() || piece.front() == '#') {
                continue;
            }
            if (in_rule && starts_rule(piece)) {
                not_closed("line " + std::to_string(line_no));
            }
            if (in_rule) {
                rule_text.push_back(' ');  // the newline between two options
            } else {
                rule_line = line_no;
                in_rule = true;
            }
        }
        // A trailing '\' joins the next line (the backslash and the newline are dropped).
        backslash = !piece.empty() && piece.back() == '\\';
        if (backslash) {
            rule_text.append(piece.substr(0, piece.size() - 1));
            continue;
        }
        rule_text.append(piece);
        if (starts_rule(rule_text) && !options_closed(rule_text)) {
            continue;  // a multi-line rule: read on to its ')'
        }
        flush();
    }
    if (in_rule && !backslash && starts_rule(rule_text) && !options_closed(rule_text)) {
        not_closed("the end of the file");
    } else if (in_rule) {
        flush();  // file ended inside a continued rule
    }
    parse_ms_ +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

LoadedRules RuleLoader::finish() {
    // Duplicate (gid, sid): Suricata keeps the higher rev, the first one on a tie.
    std::unordered_map<uint64_t, size_t> first;
    std::vector<bool> dropped(out_.rules.size(), false);
    auto diagnose = [&](const Rule& lost, const Rule& kept) {
        RuleDiagnostic d;
        d.file = lost.file;
        d.line = lost.line;
        d.sid = lost.sid;
        d.category = "duplicate sid";
        d.reason = "duplicate sid (gid " + std::to_string(lost.gid) + " rev " +
                   std::to_string(lost.rev) + "), keeping rev " + std::to_string(kept.rev) +
                   " from " + kept.file + ":" + std::to_string(kept.line);
        out_.summary.diagnostics.push_back(std::move(d));
        ++out_.summary.skipped;
        ++out_.summary.skipped_by_reason["duplicate sid"];
    };
    for (size_t i = 0; i < out_.rules.size(); ++i) {
        const Rule& r = *out_.rules[i];
        const uint64_t key = (static_cast<uint64_t>(r.gid) << 32) | r.sid;
        auto [it, inserted] = first.emplace(key, i);
        if (inserted) {
            continue;
        }
        const Rule& old = *out_.rules[it->second];
        if (r.rev > old.rev) {
            dropped[it->second] = true;
            diagnose(old, r);
            it->second = i;
        } else {
            dropped[i] = true;
            diagnose(r, old);
        }
    }
    std::vector<std::unique_ptr<Rule>> kept;
    kept.reserve(out_.rules.size());
    for (size_t i = 0; i < out_.rules.size(); ++i) {
        if (!dropped[i]) {
            kept.push_back(std::move(out_.rules[i]));
        }
    }
    out_.rules = std::move(kept);
    out_.summary.loaded = static_cast<uint32_t>(out_.rules.size());
    out_.summary.parse_ms = parse_ms_;
    return std::move(out_);
}

LoadedRules load_rule_files(const std::vector<std::string>& files, const ParseEnv& env) {
    RuleLoader loader(env);
    for (const std::string& f : files) {
        loader.add_file(f);
    }
    return loader.finish();
}

LoadedRules load_rule_files(const std::vector<std::string>& files, const ParseEnv& env,
                            const std::map<std::string, ParseEnv::Syntax>& syntax_by_file) {
    RuleLoader loader(env);
    for (const std::string& f : files) {
        auto it = syntax_by_file.find(f);
        loader.add_file(f, it == syntax_by_file.end() ? env.syntax : it->second);
    }
    return loader.finish();
}

std::string ascii_lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

// Read-only view of the unsupported list for list_keywords() (--list-keywords).
std::vector<const char*> unsupported_keyword_names() {
    return std::vector<const char*>(std::begin(kUnsupported), std::end(kUnsupported));
}

}  // namespace picket::sensor::detect
