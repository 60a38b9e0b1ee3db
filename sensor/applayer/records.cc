// EVE protocol records (http, dns, tls, anomaly) and the renderers alert metadata shares;
// files are in file_log.cc. See "Records" in README.md.
#include <openssl/evp.h>

#include <ctime>
#include <string>
#include <string_view>

#include "common/strings.h"
#include "sensor/applayer/applayer.h"
#include "sensor/applayer/internal.h"
#include "sensor/applayer/records.h"

namespace picket::sensor::applayer {

using json::key;
using json::member;
using json::member_bool;
using json::member_if;
using json::member_num;

namespace {

// The port of a Host header ("example.com:8080", "[::1]:8080"); -1 when none or invalid.
int host_port(std::string_view host) {
    size_t colon;
    if (!host.empty() && host.front() == '[') {
        const size_t close = host.find(']');
        if (close == std::string_view::npos || close + 1 >= host.size() || host[close + 1] != ':') {
            return -1;
        }
        colon = close + 1;
    } else {
        colon = host.find(':');
        if (colon == std::string_view::npos ||
            host.find(':', colon + 1) != std::string_view::npos) {
            return -1;
        }
    }
    const std::string_view digits = host.substr(colon + 1);
    const std::optional<uint64_t> port =
        digits.size() <= 5 ? strings::parse_u64(digits) : std::nullopt;
    return port && *port <= 65535 ? static_cast<int>(*port) : -1;
}

void header_array(const std::vector<http::Header>& list, const char* name, std::string* out,
                  bool* first) {
    if (list.empty()) {
        return;
    }
    key(out, first, name);
    out->push_back('[');
    for (size_t i = 0; i < list.size(); ++i) {
        if (i != 0) {
            out->push_back(',');
        }
        out->push_back('{');
        bool f = true;
        member(out, &f, "name", list[i].name);
        member(out, &f, "value", list[i].value);
        out->push_back('}');
    }
    out->push_back(']');
}

// A JA3 / JA3S fingerprint: "name":{"hash":...,"string":...}.
void fingerprint(std::string* out, bool* first, const char* name, std::string_view hash,
                 std::string_view full) {
    key(out, first, name);
    out->push_back('{');
    bool f2 = true;
    member(out, &f2, "hash", hash);
    member(out, &f2, "string", full);
    out->push_back('}');
}

// Uppercase of a parser's own event name ("missing_crlf" -> "MISSING_CRLF").
std::string upper(const char* s) {
    std::string r(s);
    for (char& c : r) {
        if (c >= 'a' && c <= 'z') {
            c = static_cast<char>(c - 'a' + 'A');
        }
    }
    return r;
}

// DNS record types whose rdata the parser renders as text (A, NS, CNAME, PTR, MX, TXT, AAAA).
bool dns_has_rdata(uint16_t t) {
    return t == 1 || t == 2 || t == 5 || t == 12 || t == 15 || t == 16 || t == 28;
}

// "answers":[...] (detailed) and "grouped":{"A":[...],...}, types in first-seen order.
void dns_answers(const dns::Message& msg, bool detailed, bool grouped, std::string* out,
                 bool* first) {
    if (msg.answers.empty()) {
        return;
    }
    if (detailed) {
        key(out, first, "answers");
        out->push_back('[');
        bool fa = true;
        for (const dns::Answer& a : msg.answers) {
            if (!fa) {
                out->push_back(',');
            }
            fa = false;
            out->push_back('{');
            bool f = true;
            member(out, &f, "rrname", a.name);
            member(out, &f, "rrtype", dns::type_name(a.rtype));
            member_num(out, &f, "ttl", a.ttl);
            if (dns_has_rdata(a.rtype)) {
                member(out, &f, "rdata", a.rdata);
            }
            out->push_back('}');
        }
        out->push_back(']');
    }
    if (!grouped) {
        return;
    }
    bool any = false;
    for (const dns::Answer& a : msg.answers) {
        any = any || dns_has_rdata(a.rtype);
    }
    if (!any) {
        return;
    }
    key(out, first, "grouped");
    out->push_back('{');
    bool fg = true;
    for (size_t i = 0; i < msg.answers.size(); ++i) {
        const uint16_t t = msg.answers[i].rtype;
        bool seen = !dns_has_rdata(t);
        for (size_t j = 0; j < i && !seen; ++j) {
            seen = msg.answers[j].rtype == t;
        }
        if (seen) {
            continue;
        }
        key(out, &fg, dns::type_name(t).c_str());
        out->push_back('[');
        bool fv = true;
        for (size_t j = i; j < msg.answers.size(); ++j) {
            if (msg.answers[j].rtype == t) {
                if (!fv) {
                    out->push_back(',');
                }
                fv = false;
                strings::append_json_string(*out, msg.answers[j].rdata);
            }
        }
        out->push_back(']');
    }
    out->push_back('}');
}

// The header members of a DNS response (v2 answer, v3 both): flags as hex, the set bits.
void dns_flags(const dns::Header& h, std::string* out, bool* first) {
    static const char kHex[] = "0123456789abcdef";
    char buf[4];
    int n = 0;
    int shift = 12;
    while (shift > 0 && ((h.flags >> shift) & 0xf) == 0) {
        shift -= 4;
    }
    for (; shift >= 0; shift -= 4) {
        buf[n++] = kHex[(h.flags >> shift) & 0xf];
    }
    member(out, first, "flags", std::string_view(buf, static_cast<size_t>(n)));
    if (h.qr) {
        member_bool(out, first, "qr", true);
    }
    if (h.aa) {
        member_bool(out, first, "aa", true);
    }
    if (h.tc) {
        member_bool(out, first, "tc", true);
    }
    if (h.rd) {
        member_bool(out, first, "rd", true);
    }
    if (h.ra) {
        member_bool(out, first, "ra", true);
    }
    if (h.z) {
        member_bool(out, first, "z", true);
    }
}

}  // namespace

void render_http(const http::HttpTx& tx, bool extended, bool request_headers, bool response_headers,
                 std::string* out) {
    bool first = true;
    *out += "\"http\":{";
    member_if(out, &first, "hostname", tx.host);
    if (const int port = host_port(tx.host_raw); port >= 0) {
        member_num(out, &first, "http_port", static_cast<uint64_t>(port));
    }
    member_if(out, &first, "url", tx.uri_raw);
    member_if(out, &first, "http_user_agent", tx.user_agent);
    if (!tx.content_type_resp.empty()) {
        // The media type only, as Suricata logs it ("text/html; charset=..." -> "text/html").
        const std::string_view ct = tx.content_type_resp;
        member(out, &first, "http_content_type", ct.substr(0, ct.find(';')));
    }
    if (extended) {
        member_if(out, &first, "http_refer", tx.referer);
        member_if(out, &first, "http_method", tx.method);
        member_if(out, &first, "protocol", tx.protocol);
        if (tx.status != 0) {
            member_num(out, &first, "status", tx.status);
        }
        member_if(out, &first, "redirect", tx.location);
        // Always, as Suricata (0 before a response body).
        member_num(out, &first, "length", tx.response_body_bytes);
    }
    if (request_headers) {
        header_array(tx.request_header_list, "request_headers", out, &first);
    }
    if (response_headers) {
        header_array(tx.response_header_list, "response_headers", out, &first);
    }
    out->push_back('}');
}

std::string tls_date(int64_t t) {
    const auto tt = static_cast<time_t>(t);
    struct tm tm {};
    gmtime_r(&tt, &tm);
    char buf[32];
    const size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return std::string(buf, n);
}

std::string cert_fingerprint(const std::vector<uint8_t>& der) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(der.data(), der.size(), md, &len, EVP_sha1(), nullptr) != 1) {
        return std::string();
    }
    static const char kHex[] = "0123456789abcdef";
    std::string r;
    r.reserve(len * 3);
    for (unsigned int i = 0; i < len; ++i) {
        if (i != 0) {
            r.push_back(':');
        }
        r.push_back(kHex[md[i] >> 4]);
        r.push_back(kHex[md[i] & 0xf]);
    }
    return r;
}

void render_tls(const tls::TlsParser& p, bool extended, bool ja3, bool ja3s, std::string* out) {
    bool first = true;
    *out += "\"tls\":{";
    const tls::CertInfo* c = p.cert();
    const bool cert = c != nullptr && c->parsed;
    if (cert) {
        member(out, &first, "subject", c->subject);
        member(out, &first, "issuerdn", c->issuer);
    }
    if (extended) {
        if (cert) {
            member(out, &first, "serial", c->serial);
            if (!c->chain.empty() && !c->chain[0].empty()) {
                member(out, &first, "fingerprint", cert_fingerprint(c->chain[0]));
            }
        }
        const tls::ClientHello* ch = p.client_hello();
        if (ch != nullptr && !ch->sni.empty()) {
            member(out, &first, "sni", ch->sni);
        }
        member(out, &first, "version", tls::version_string(p.version()));
        if (cert) {
            member(out, &first, "notbefore", tls_date(c->not_before));
            member(out, &first, "notafter", tls_date(c->not_after));
        }
        if (ja3 && ch != nullptr && !ch->ja3.empty()) {
            fingerprint(out, &first, "ja3", ch->ja3_hash, ch->ja3);
        }
        if (const tls::ServerHello* sh = p.server_hello();
            ja3s && sh != nullptr && !sh->ja3s.empty()) {
            fingerprint(out, &first, "ja3s", sh->ja3s_hash, sh->ja3s);
        }
    }
    out->push_back('}');
}

std::string http_event_name(http::Event e, bool to_server) {
    using E = http::Event;
    switch (e) {
        case E::kHeaderTooLong:
            return to_server ? "REQUEST_FIELD_TOO_LONG" : "RESPONSE_FIELD_TOO_LONG";
        case E::kInvalidChunkSize:
        case E::kChunkSizeTooLong:
            return to_server ? "INVALID_REQUEST_CHUNK_LEN" : "INVALID_RESPONSE_CHUNK_LEN";
        case E::kInvalidContentLength:
            return to_server ? "INVALID_CONTENT_LENGTH_FIELD_IN_REQUEST"
                             : "INVALID_CONTENT_LENGTH_FIELD_IN_RESPONSE";
        case E::kDecompressionBomb:
            return "COMPRESSION_BOMB";
        case E::kDecompressionError:
            return "GZIP_DECOMPRESSION_FAILED";
        case E::kInvalidRequestLine:
            return "REQUEST_LINE_INVALID";
        case E::kInvalidStatusLine:
            return "RESPONSE_INVALID_STATUS";
        case E::kDoubleEncoding:
            return "DOUBLE_ENCODED_URI";
        case E::kMissingColon:
            return to_server ? "REQUEST_FIELD_MISSING_COLON" : "RESPONSE_FIELD_MISSING_COLON";
        case E::kInvalidHeaderName:
            return to_server ? "REQUEST_HEADER_INVALID" : "RESPONSE_HEADER_INVALID";
        case E::kMissingHost:
            return "MISSING_HOST_HEADER";
        case E::kUnmatchedResponse:
            return "UNABLE_TO_MATCH_RESPONSE_TO_REQUEST";
        default:
            return upper(http::event_name(e));
    }
}

std::string dns_event_name(dns::Event e) {
    using E = dns::Event;
    switch (e) {
        case E::kMalformedData:
        case E::kTruncated:
            return "MALFORMED_DATA";
        case E::kNameTooLong:
            return "NAME_TOO_LONG";
        case E::kCompressionLoop:
            return "INFINITE_LOOP";
        case E::kNotARequest:
            return "NOT_A_REQUEST";
        case E::kNotAResponse:
            return "NOT_A_RESPONSE";
        case E::kZFlagSet:
            return "Z_FLAG_SET";
        case E::kFlooded:
            return "FLOODED";
        default:
            return upper(dns::event_name(e));
    }
}

std::string tls_event_name(tls::Event e) {
    using E = tls::Event;
    switch (e) {
        case E::kInvalidRecordType:
            return "INVALID_RECORD_TYPE";
        case E::kInvalidRecordVersion:
            return "INVALID_RECORD_VERSION";
        case E::kInvalidRecordLength:
            return "INVALID_RECORD_LENGTH";
        case E::kInvalidHandshakeMessage:
            return "INVALID_HANDSHAKE_MESSAGE";
        case E::kInvalidCertificate:
            return "CERTIFICATE_INVALID_DER";
        case E::kMultipleSni:
            return "MULTIPLE_SNI_EXTENSIONS";
        case E::kInvalidSni:
            return "INVALID_SNI_LENGTH";
        default:
            return upper(tls::event_name(e));
    }
}

std::string dns_rcode_name(uint8_t rcode) {
    static constexpr const char* kNames[] = {
        "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED", "YXDOMAIN", "YXRRSET",
        "NXRRSET", "NOTAUTH", "NOTZONE",  "11",       "12",     "13",      "14",       "15"};
    return rcode < 16 ? kNames[rcode] : std::to_string(rcode);
}

// ---------------------------------------------------------------------------------------
// The records.

void AppLayer::record_begin(const char* event_type, flow::Direction dir, bool has_tx_id,
                            uint64_t tx_id) {
    AppRecord r;
    r.event_type = event_type;
    r.dir = dir;
    r.has_tx_id = has_tx_id;
    r.tx_id = tx_id;
    r.offset = static_cast<uint32_t>(records_json_.size());
    records_.push_back(r);
}

void AppLayer::record_end() {
    AppRecord& r = records_.back();
    r.len = static_cast<uint32_t>(records_json_.size() - r.offset);
}

void AppLayer::log_anomaly(const char* proto, const std::string& event, flow::Direction dir,
                           bool has_tx_id, uint64_t tx_id) {
    record_begin("anomaly", dir, has_tx_id, tx_id);
    records_json_ += "\"anomaly\":{";
    bool first = true;
    member(&records_json_, &first, "app_proto", proto);
    member(&records_json_, &first, "type", "applayer");
    member(&records_json_, &first, "event", event);
    member(&records_json_, &first, "layer", "proto_parser");
    records_json_.push_back('}');
    record_end();
}

void AppLayer::log_http_events(FlowState& s, http::HttpTx& tx, http::Dir pd) {
    const uint64_t fresh = tx.events.bits() & ~tx.eve_events_logged;
    if (fresh == 0) {
        return;
    }
    tx.eve_events_logged |= fresh;
    const auto fd = static_cast<flow::Direction>(pd);
    for (size_t i = 0; i < http::kEventCount; ++i) {
        if (((fresh >> i) & 1) != 0) {
            log_anomaly("http",
                        http_event_name(static_cast<http::Event>(i), pd == http::Dir::kToServer),
                        s.reversed ? flip(fd) : fd, true, tx.id);
        }
    }
}

void AppLayer::log_http_tx(FlowState& s, http::HttpTx& tx) {
    tx.eve_logged = true;
    // Suricata's flow direction: the client's addresses first.
    record_begin("http", s.reversed ? flow::Direction::kToClient : flow::Direction::kToServer, true,
                 tx.id);
    const AppLogConfig& l = config_.log;
    render_http(tx, l.http_extended, l.http_request_headers, l.http_response_headers,
                &records_json_);
    record_end();
}

void AppLayer::log_http(FlowState& s, http::Dir pd, const http::FeedResult& r, bool all) {
    const AppLogConfig& l = config_.log;
    if (!s.http) {
        return;
    }
    if (l.anomaly) {
        // Events of the transactions held (at most max_pipelined): those of a gap or of the
        // parser giving up land on transactions this call did not report.
        for (size_t i = 0; i < s.http->tx_count(); ++i) {
            log_http_events(s, s.http->tx_at(i), pd);
        }
    }
    if (l.http) {
        auto consider = [&](http::HttpTx& tx) {
            const bool started = tx.request_progress > http::HttpTx::kNew ||
                                 tx.response_progress > http::HttpTx::kResponseNew;
            if (!tx.eve_logged && (tx.complete() || (all && started))) {
                log_http_tx(s, tx);
            }
        };
        if (all) {
            for (size_t i = 0; i < s.http->tx_count(); ++i) {
                consider(s.http->tx_at(i));
            }
        } else {
            for (uint32_t i = 0; i < r.count; ++i) {
                if (http::HttpTx* tx = s.http->find_tx(r.first_id + i)) {
                    consider(*tx);
                }
            }
        }
    }
    if (l.files && files(s) != nullptr) {
        log_files(s, all);
    }
}

void AppLayer::log_dns(uint64_t tx_id, const dns::Message& msg, flow::Direction dir) {
    const AppLogConfig& l = config_.log;
    if (l.anomaly && msg.events != 0) {
        for (size_t i = 0; i < dns::kEventCount; ++i) {
            if (msg.has(static_cast<dns::Event>(i))) {
                log_anomaly("dns", dns_event_name(static_cast<dns::Event>(i)), dir, true, tx_id);
            }
        }
    }
    const bool response = msg.header.qr;
    if (!l.dns || !(response ? l.dns_responses : l.dns_requests)) {
        return;
    }
    std::string* out = &records_json_;
    const dns::Header& h = msg.header;
    if (l.dns_version >= 3) {
        // Suricata 8's v3: one record per message, the questions as "queries".
        record_begin("dns", dir, true, tx_id);
        bool first = true;
        *out += "\"dns\":{";
        member_num(out, &first, "version", 3);
        member(out, &first, "type", response ? "response" : "request");
        member_num(out, &first, "id", h.id);
        dns_flags(h, out, &first);
        member_num(out, &first, "opcode", h.opcode);
        member(out, &first, "rcode", dns_rcode_name(h.rcode));
        if (!msg.questions.empty()) {
            key(out, &first, "queries");
            out->push_back('[');
            for (size_t i = 0; i < msg.questions.size(); ++i) {
                if (i != 0) {
                    out->push_back(',');
                }
                out->push_back('{');
                bool f = true;
                member(out, &f, "rrname", msg.questions[i].name);
                member(out, &f, "rrtype", dns::type_name(msg.questions[i].qtype));
                out->push_back('}');
            }
            out->push_back(']');
        }
        dns_answers(msg, l.dns_detailed, l.dns_grouped, out, &first);
        out->push_back('}');
        record_end();
        return;
    }
    if (!response) {
        // v2: a record per question.
        for (const dns::Question& q : msg.questions) {
            record_begin("dns", dir, false, tx_id);
            bool first = true;
            *out += "\"dns\":{";
            member_num(out, &first, "version", 2);
            member(out, &first, "type", "query");
            member_num(out, &first, "id", h.id);
            member(out, &first, "rrname", q.name);
            member(out, &first, "rrtype", dns::type_name(q.qtype));
            member_num(out, &first, "tx_id", tx_id);
            if (h.z) {
                member_bool(out, &first, "z", true);
            }
            member_num(out, &first, "opcode", h.opcode);
            out->push_back('}');
            record_end();
        }
        return;
    }
    record_begin("dns", dir, false, tx_id);
    bool first = true;
    *out += "\"dns\":{";
    member_num(out, &first, "version", 2);
    member(out, &first, "type", "answer");
    member_num(out, &first, "id", h.id);
    dns_flags(h, out, &first);
    member_num(out, &first, "opcode", h.opcode);
    if (!msg.questions.empty()) {
        member(out, &first, "rrname", msg.questions[0].name);
        member(out, &first, "rrtype", dns::type_name(msg.questions[0].qtype));
    }
    member(out, &first, "rcode", dns_rcode_name(h.rcode));
    dns_answers(msg, l.dns_detailed, l.dns_grouped, out, &first);
    out->push_back('}');
    record_end();
}

void AppLayer::log_tls(FlowState& s, uint32_t update, flow::Direction dir, bool force) {
    const AppLogConfig& l = config_.log;
    if (!s.tls) {
        return;
    }
    if (l.anomaly) {
        const uint32_t fresh = s.tls->events() & ~s.tls->eve_events_logged;
        s.tls->eve_events_logged |= fresh;
        for (size_t i = 0; i < tls::kEventCount; ++i) {
            if (((fresh >> i) & 1) != 0) {
                log_anomaly("tls", tls_event_name(static_cast<tls::Event>(i)), dir, true, 0);
            }
        }
    }
    if (!l.tls || s.tls->eve_logged) {
        return;
    }
    const bool done = (update & (tls::kCertificate | tls::kAppData)) != 0;
    const bool something = s.tls->client_hello() != nullptr || s.tls->server_hello() != nullptr;
    if (!(done || force) || !something) {
        return;
    }
    s.tls->eve_logged = true;
    record_begin("tls", flow::Direction::kToServer, false, 0);
    render_tls(*s.tls, l.tls_extended, l.tls_ja3, l.tls_ja3s, &records_json_);
    record_end();
}

namespace {

void render_ssh_side(const ssh::Side& side, std::string* out) {
    bool first = true;
    out->push_back('{');
    json::member(out, &first, "proto_version", side.proto_version);
    json::member(out, &first, "software_version", side.software_version);
    if (side.has_kex) {
        json::key(out, &first, "hassh");
        bool f2 = true;
        out->push_back('{');
        json::member(out, &f2, "hash", side.hassh);
        json::member(out, &f2, "string", side.hassh_string);
        out->push_back('}');
    }
    out->push_back('}');
}

}  // namespace

void render_ssh(const ssh::SshParser& p, std::string* out) {
    bool first = true;
    *out += "\"ssh\":{";
    if (p.client().has_banner) {
        json::key(out, &first, "client");
        render_ssh_side(p.client(), out);
    }
    if (p.server().has_banner) {
        json::key(out, &first, "server");
        render_ssh_side(p.server(), out);
    }
    out->push_back('}');
}

void AppLayer::log_ssh(FlowState& s, flow::Direction dir, bool force) {
    const AppLogConfig& l = config_.log;
    if (!s.ssh) {
        return;
    }
    if (l.anomaly) {
        const uint32_t fresh = s.ssh->events() & ~s.ssh->eve_events_logged;
        s.ssh->eve_events_logged |= fresh;
        for (size_t i = 0; i < ssh::kEventCount; ++i) {
            if (((fresh >> i) & 1) != 0) {
                log_anomaly("ssh", upper(ssh::event_name(static_cast<ssh::Event>(i))), dir, true,
                            0);
            }
        }
    }
    // One record per session, as Suricata's ssh transaction: once both sides are past NEWKEYS
    // (or gave up), else at the flow's end.
    if (!l.ssh || s.ssh->eve_logged || !(s.ssh->done() || force) ||
        !(s.ssh->client().has_banner || s.ssh->server().has_banner)) {
        return;
    }
    s.ssh->eve_logged = true;
    record_begin("ssh", flow::Direction::kToServer, true, 0);
    render_ssh(*s.ssh, &records_json_);
    record_end();
}

void AppLayer::finish_records(flow::Flow& f) {
    auto* s = AppSlot::get(f);
    if (s == nullptr || s->marker || s->failed) {
        return;
    }
    if (s->http) {
        log_http(*s, http::Dir::kToServer, http::FeedResult{}, true);
    }
    if (s->tls) {
        log_tls(*s, 0, flow::Direction::kToServer, true);
    }
    if (s->ssh) {
        log_ssh(*s, flow::Direction::kToServer, true);
    }
    if (s->ftp && (config_.log.ftp || config_.log.anomaly)) {
        log_ftp(*s, true);
    }
    if (s->ftpdata) {
        log_ftpdata(*s);
    }
}

}  // namespace picket::sensor::applayer
