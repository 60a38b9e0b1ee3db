// What the app layer tells outputs about a transaction: EVE metadata ("http", "dns", "tls"
// objects of an alert) and request header look-ups.
#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

#include "common/strings.h"
#include "sensor/applayer/applayer.h"
#include "sensor/applayer/internal.h"

namespace picket::sensor::applayer {

namespace {

// `"key":` after a comma unless it is the object's first member.
void key(std::string* out, bool* first, const char* name) {
    if (!*first) {
        out->push_back(',');
    }
    *first = false;
    out->push_back('"');
    *out += name;
    *out += "\":";
}

void member(std::string* out, bool* first, const char* name, std::string_view value) {
    key(out, first, name);
    strings::append_json_string(*out, value);
}

// The member only when the value is not empty.
void member_if(std::string* out, bool* first, const char* name, std::string_view value) {
    if (!value.empty()) {
        member(out, first, name, value);
    }
}

void member_num(std::string* out, bool* first, const char* name, uint64_t value) {
    key(out, first, name);
    *out += std::to_string(value);
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
            *out += "\"http\":{";
            member_if(out, &first, "hostname", tx->host);
            member_if(out, &first, "url", tx->uri_raw);
            member_if(out, &first, "http_user_agent", tx->user_agent);
            if (!tx->content_type_resp.empty()) {
                // The media type only, as Suricata logs it ("text/html; charset=..." ->
                // "text/html").
                const std::string_view ct = tx->content_type_resp;
                member(out, &first, "http_content_type", ct.substr(0, ct.find(';')));
            }
            member_if(out, &first, "http_refer", tx->referer);
            member_if(out, &first, "http_method", tx->method);
            member_if(out, &first, "protocol", tx->protocol);
            if (tx->status != 0) {
                member_num(out, &first, "status", tx->status);
            }
            if (tx->response_progress >= http::HttpTx::kResponseHeaders) {
                member_num(out, &first, "length", tx->response_body_bytes);
            }
            out->push_back('}');
            return;
        }
        case AppProto::kDns: {
            for (const auto& m : s->dns_meta) {
                if (m.tx_id != tx_id) {
                    continue;
                }
                *out += "\"dns\":{\"query\":[{";
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
        default:
            return;
    }
}

}  // namespace picket::sensor::applayer
