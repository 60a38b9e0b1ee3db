// What the app layer tells outputs about a transaction: EVE metadata ("http", "dns", "tls"
// objects of an alert) and request header look-ups.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "common/strings.h"
#include "sensor/applayer/applayer.h"
#include "sensor/applayer/internal.h"
#include "sensor/applayer/records.h"

namespace picket::sensor::applayer {

using json::member;
using json::member_if;
using json::member_num;

namespace {

// A JA3 / JA3S fingerprint: "name":{"hash":...,"string":...}.
void fingerprint(std::string* out, bool* first, const char* name, std::string_view hash,
                 std::string_view full) {
    json::key(out, first, name);
    out->push_back('{');
    bool f2 = true;
    member(out, &f2, "hash", hash);
    member(out, &f2, "string", full);
    out->push_back('}');
}

// "http_request_body":"<base64>","http_request_body_printable":"..." and the same for the
// response, each present when that body has bytes, appended to an http object whose '}' was
// taken off; a body longer than l.alert_body_max is cut there.
void append_bodies(const http::HttpTx& tx, const AppLogConfig& l, std::string* out) {
    bool first = out->back() == '{';
    auto body = [&](const std::string& b, const char* name, const char* printable_name) {
        if (b.empty()) {
            return;
        }
        const auto* p = reinterpret_cast<const uint8_t*>(b.data());
        const size_t n = std::min(b.size(), l.alert_body_max);
        if (l.alert_http_body) {
            json::key(out, &first, name);
            strings::append_json_base64(*out, p, n);
        }
        if (l.alert_http_body_printable) {
            json::key(out, &first, printable_name);
            strings::append_json_printable(*out, p, n);
        }
    };
    body(tx.request_body, "http_request_body", "http_request_body_printable");
    body(tx.response_body, "http_response_body", "http_response_body_printable");
}

}  // namespace

const std::string* AppLayer::http_request_header(const flow::Flow& f, uint64_t tx_id,
                                                 std::string_view name) const {
    const auto* s = AppSlot::get(f);
    if (s == nullptr || s->proto != AppProto::kHttp || !s->http) {
        return nullptr;
    }
    auto find = [&](const http::HttpTx& tx) -> const std::string* {
        for (const http::Header& h : tx.request_header_list) {
            if (h.name.size() == name.size() &&
                std::equal(h.name.begin(), h.name.end(), name.begin(), [](char a, char b) {
                    return std::tolower(static_cast<unsigned char>(a)) ==
                           std::tolower(static_cast<unsigned char>(b));
                })) {
                return &h.value;
            }
        }
        return nullptr;
    };
    if (tx_id != kAnyTx) {
        const http::HttpTx* tx = s->http->find_tx(tx_id);
        return tx != nullptr ? find(*tx) : nullptr;
    }
    for (size_t i = 0; i < s->http->tx_count(); ++i) {
        if (const std::string* v = find(s->http->tx_at(i))) {
            return v;
        }
    }
    return nullptr;
}

void AppLayer::render_metadata(const flow::Flow& f, uint64_t tx_id, std::string* out) const {
    const auto* s = AppSlot::get(f);
    if (s == nullptr || s->failed) {
        return;
    }
    bool first = true;
    switch (s->proto) {
        case AppProto::kHttp: {
            const http::HttpTx* tx = s->http ? s->http->find_tx(tx_id) : nullptr;
            if (tx == nullptr) {
                return;
            }
            // The same object as the EVE http record (basic + extended fields), and the bodies
            // when asked (Suricata's http-body / http-body-printable).
            render_http(*tx, true, false, false, out);
            const AppLogConfig& l = config_.log;
            if (l.alert_http_body || l.alert_http_body_printable) {
                out->pop_back();  // the object's '}'
                append_bodies(*tx, l, out);
                out->push_back('}');
            }
            return;
        }
        case AppProto::kFtp: {
            const ftp::FtpTx* t = s->ftp ? s->ftp->find_tx(tx_id) : nullptr;
            if (t != nullptr) {
                render_ftp(*t, out);
            }
            return;
        }
        case AppProto::kFtpData:
            if (s->ftpdata) {
                render_ftp_data(s->ftpdata->exp, out);
            }
            return;
        case AppProto::kDns: {
            for (const auto& m : s->dns_meta) {
                if (m.tx_id != tx_id) {
                    continue;
                }
                *out += "\"dns\":{\"version\":2,\"query\":[{";
                member(out, &first, "type", "query");
                member_num(out, &first, "id", m.id);
                member(out, &first, "rrname", m.rrname);
                member(out, &first, "rrtype", dns::type_name(m.rrtype));
                member_num(out, &first, "tx_id", m.tx_id);
                member_num(out, &first, "opcode", m.opcode);
                *out += "}]}";
                return;
            }
            return;
        }
        case AppProto::kTls: {
            if (!s->tls) {
                return;
            }
            *out += "\"tls\":{";
            const tls::CertInfo* c = s->tls->cert();
            if (c != nullptr && c->parsed) {
                member(out, &first, "subject", c->subject);
                member(out, &first, "issuerdn", c->issuer);
                member(out, &first, "serial", c->serial);
            }
            const tls::ClientHello* ch = s->tls->client_hello();
            if (ch != nullptr && !ch->sni.empty()) {
                member(out, &first, "sni", ch->sni);
            }
            member(out, &first, "version", tls::version_string(s->tls->version()));
            if (ch != nullptr && !ch->ja3.empty()) {
                fingerprint(out, &first, "ja3", ch->ja3_hash, ch->ja3);
            }
            if (const tls::ServerHello* sh = s->tls->server_hello();
                sh != nullptr && !sh->ja3s.empty()) {
                fingerprint(out, &first, "ja3s", sh->ja3s_hash, sh->ja3s);
            }
            out->push_back('}');
            return;
        }
        case AppProto::kSsh:
            if (s->ssh) {
                render_ssh(*s->ssh, out);
            }
            return;
        default:
            return;
    }
}

}  // namespace picket::sensor::applayer
