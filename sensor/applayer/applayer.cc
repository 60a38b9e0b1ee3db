// Protocol detection and parser dispatch per flow; see applayer.h.
//
// Detection looks at the first bytes of each direction (buffered up to probe_bytes while a
// probe needs more): HTTP request or response line, TLS handshake record, DNS header with a
// question that parses. The first protocol a probe says yes to owns the flow, whatever the
// port (an HTTP server on 8081 is HTTP); when every probe says no, or the window is used up,
// the flow's app_proto is "failed" and the app layer ignores it from then on.
#include "sensor/applayer/applayer.h"

#include <algorithm>
#include <cstring>

#include <magic.h>

#include "sensor/applayer/internal.h"

namespace picket::sensor::applayer {

namespace {

// One probe's answer (each parser has its own ProbeResult with kYes, kNo, kNeedMore): yes
// gives the flow to `proto`, need-more keeps the bytes for another look.
template <typename Result>
void take_probe(Result r, AppProto proto, AppProto* found, bool* need_more) {
    if (r == Result::kYes) {
        *found = proto;
    } else if (r == Result::kNeedMore) {
        *need_more = true;
    }
}

}  // namespace

// The markers hung on flows that have no state of their own: one per protocol (an evicted
// flow keeps its protocol for EVE and app-layer-protocol, but has no parser) and one "failed"
// (detection failed, or the state was refused by the memcap, or evicted before detection).
// Shared by every worker: nothing writes them after construction.
static AppLayer::FlowState* marker(AppProto proto, bool failed) {
    static AppLayer::FlowState* const markers = [] {
        auto* m = new AppLayer::FlowState[7];
        m[0].failed = true;
        m[1].proto = AppProto::kHttp;
        m[2].proto = AppProto::kDns;
        m[3].proto = AppProto::kTls;
        m[4].proto = AppProto::kSsh;
        m[5].proto = AppProto::kFtp;
        m[6].proto = AppProto::kFtpData;
        for (int i = 0; i < 7; ++i) {
            m[i].marker = true;
        }
        return m;
    }();
    if (failed) {
        return &markers[0];
    }
    switch (proto) {
        case AppProto::kHttp:
            return &markers[1];
        case AppProto::kDns:
            return &markers[2];
        case AppProto::kTls:
            return &markers[3];
        case AppProto::kSsh:
            return &markers[4];
        case AppProto::kFtp:
            return &markers[5];
        case AppProto::kFtpData:
            return &markers[6];
        default:
            return &markers[0];
    }
}

AppLayer::AppLayer(const AppLayerConfig& config)
    : config_(config),
      ftp_expect_(config.ftp_expect != nullptr ? config.ftp_expect
                                               : std::make_shared<ftp::ExpectTable>()) {}

AppLayer::~AppLayer() {
    if (magic_ != nullptr) {
        magic_close(magic_);
    }
    // Flows normally give their state back (release_flow) first; free what is left.
    while (lru_head_ != nullptr) {
        FlowState* s = lru_head_;
        AppSlot::set(*s->flow, nullptr);
        unlink(s);
        delete s;
    }
}

void AppLayer::unlink(FlowState* s) {
    (s->lru_prev != nullptr ? s->lru_prev->lru_next : lru_head_) = s->lru_next;
    (s->lru_next != nullptr ? s->lru_next->lru_prev : lru_tail_) = s->lru_prev;
    s->lru_prev = s->lru_next = nullptr;
    memuse_ -= s->mem;
    memuse_gauge_.set(memuse_);
    if (scratch_owner_ == s) {
        scratch_owner_ = nullptr;
    }
}

void AppLayer::touch(FlowState* s) {
    if (lru_tail_ == s) {
        return;
    }
    // Unlink without the accounting, append at the tail.
    (s->lru_prev != nullptr ? s->lru_prev->lru_next : lru_head_) = s->lru_next;
    (s->lru_next != nullptr ? s->lru_next->lru_prev : lru_tail_) = s->lru_prev;
    s->lru_next = nullptr;
    s->lru_prev = lru_tail_;
    (lru_tail_ != nullptr ? lru_tail_->lru_next : lru_head_) = s;
    lru_tail_ = s;
}

void AppLayer::evict(FlowState* s) {
    flow::Flow* f = s->flow;
    unlink(s);
    AppSlot::set(*f, marker(s->proto, s->failed));
    delete s;  // the parsers give back their memuse
    ++memcap_evicted_;
}

bool AppLayer::make_room(size_t need, const FlowState* keep) {
    FlowState* v = lru_head_;
    while (memuse_ + need > config_.memcap && v != nullptr) {
        FlowState* next = v->lru_next;
        if (v != keep) {
            evict(v);
        }
        v = next;
    }
    return memuse_ + need <= config_.memcap;
}

void AppLayer::retire_failed(flow::Flow& f, FlowState* s) {
    unlink(s);
    AppSlot::set(f, marker(AppProto::kUnknown, true));
    delete s;
}

void AppLayer::account(FlowState* s) {
    size_t n = sizeof(FlowState) + heap(s->probe[0]) + heap(s->probe[1]) +
               s->dns_meta.capacity() * sizeof(FlowState::DnsMeta);
    for (const auto& m : s->dns_meta) {
        n += heap(m.rrname);
    }
    if (s->log) {
        n += sizeof(inspect::TxAlertLog);
    }
    if (s->http) {
        n += s->http->memory();
    }
    if (const FileTracker* ft = files(*s)) {
        n += ft->memory();
    }
    if (s->dns) {
        n += s->dns->memory();
    }
    if (s->tls) {
        n += s->tls->memory();
    }
    if (s->ssh) {
        n += s->ssh->memory();
    }
    if (s->ftp) {
        n += s->ftp->memory();
    }
    if (s->ftpdata) {
        n += sizeof(FtpDataState) + heap(s->ftpdata->kept) +
             (s->ftpdata->file ? sizeof(FileLog) + heap(s->ftpdata->file->head) + 768 : 0);
    }
    memuse_ = memuse_ - s->mem + n;
    s->mem = n;
    if (memuse_ > config_.memcap) {
        // Growth of a live state: make room by evicting others. This flow stays (the caller
        // holds views into it); its parser's own limits bound how far it alone can go.
        make_room(0, s);
    }
    memuse_gauge_.set(memuse_);
}

AppLayer::FlowState* AppLayer::state(flow::Flow& f) {
    auto* s = AppSlot::get(f);
    if (s != nullptr) {
        return s;
    }
    constexpr size_t kNeed = sizeof(FlowState);
    if (!make_room(kNeed, nullptr)) {
        // Even an empty app layer has no room for it: the flow goes without (counted once,
        // the marker stops later packets from trying again).
        ++memcap_drop_;
        AppSlot::set(f, marker(AppProto::kUnknown, true));
        return AppSlot::get(f);
    }
    s = new FlowState();
    s->flow = &f;
    s->mem = kNeed;
    memuse_ += kNeed;
    memuse_gauge_.set(memuse_);
    s->lru_prev = lru_tail_;
    (lru_tail_ != nullptr ? lru_tail_->lru_next : lru_head_) = s;
    lru_tail_ = s;
    AppSlot::set(f, s);
    return s;
}

void AppLayer::release_flow(flow::Flow& f) {
    auto* s = AppSlot::get(f);
    if (s != nullptr) {
        if (!s->marker) {
            if (s->dns) {
                s->dns->finish();
            }
            if (s->tls) {
                s->tls->finish();
            }
            if (s->ftp) {
                // Suricata drops a control connection's expectations when it ends.
                ftp_expect_->remove_owner(reinterpret_cast<uintptr_t>(&f));
            }
            unlink(s);
            delete s;
        }
        AppSlot::set(f, nullptr);
    }
}

AppProto AppLayer::proto(const flow::Flow& f) const {
    const auto* s = AppSlot::get(f);
    return s == nullptr || s->failed ? AppProto::kUnknown : s->proto;
}

const char* AppLayer::proto_name(const flow::Flow& f) const {
    const auto* s = AppSlot::get(f);
    if (s == nullptr) {
        return nullptr;
    }
    if (s->failed) {
        return "failed";
    }
    return s->proto == AppProto::kUnknown ? nullptr : inspect::app_proto_name(s->proto);
}

inspect::TxAlertLog* AppLayer::alert_log(flow::Flow& f) {
    auto* s = AppSlot::get(f);
    if (s == nullptr || s->marker) {
        return nullptr;
    }
    if (s->log) {
        return s->log.get();
    }
    if (scratch_owner_ != s) {
        adopt_scratch_log();
        scratch_log_ = inspect::TxAlertLog{};
        scratch_owner_ = s;
    }
    return &scratch_log_;
}

void AppLayer::adopt_scratch_log() {
    FlowState* o = scratch_owner_;
    scratch_owner_ = nullptr;
    if (o == nullptr) {
        return;
    }
    static const inspect::TxAlertLog kEmpty{};
    if (std::memcmp(scratch_log_.key, kEmpty.key, sizeof(kEmpty.key)) == 0) {
        return;  // nothing recorded: the flow has no alerts to remember
    }
    o->log = std::make_unique<inspect::TxAlertLog>(scratch_log_);
    // Counted, but no eviction here: the flow asking for a log holds views into its state.
    // The next account() brings the total back under the memcap.
    o->mem += sizeof(inspect::TxAlertLog);
    memuse_ += sizeof(inspect::TxAlertLog);
    memuse_gauge_.set(memuse_);
}

void AppLayer::detect_proto(FlowState& s, flow::Flow& f, flow::Direction dir, const uint8_t* data,
                            size_t len, bool is_tcp) {
    const int d = static_cast<int>(dir);
    s.is_tcp = is_tcp;
    if (!is_tcp) {
        // One datagram decides: DNS or nothing.
        if (config_.dns && dns::probe(data, len, false) == dns::ProbeResult::kYes) {
            s.proto = AppProto::kDns;
            s.dns = std::make_unique<dns::DnsParser>(config_.dns_config, &dns_counters_, false);
            ++flows_dns_udp_;
        } else {
            s.failed = true;
            ++flows_failed_udp_;
        }
        return;
    }
    // A data connection an FTP control connection announced: decided by its addresses and
    // port before any byte is looked at (its bytes are a file, whatever they look like).
    if (s.probe[0].empty() && s.probe[1].empty() && !s.said_no[0] && !s.said_no[1] &&
        ftp_match_expectation(s, f)) {
        return;
    }
    std::string& buf = s.probe[d];
    size_t take = std::min<size_t>(
        len, config_.probe_bytes - std::min<size_t>(buf.size(), config_.probe_bytes));
    buf.append(reinterpret_cast<const char*>(data), take);
    const auto* b = reinterpret_cast<const uint8_t*>(buf.data());
    bool need_more = false;
    // SSH first: "SSH-" at the start of either direction (RFC 4253 4.2; the server may send
    // other lines first, the client's identification line then decides).
    if (config_.ssh) {
        take_probe(ssh::probe(b, buf.size()), AppProto::kSsh, &s.proto, &need_more);
    }
    if (s.proto == AppProto::kUnknown && config_.http) {
        switch (http::probe(static_cast<http::Dir>(d), b, buf.size())) {
            case http::ProbeResult::kYes:
                s.proto = AppProto::kHttp;
                break;
            case http::ProbeResult::kNeedMore:
                need_more = true;
                break;
            case http::ProbeResult::kNo: {
                // Midstream (no SYN seen either way) and the other side silent so far: the
                // "client" may be the server.
                constexpr uint8_t kSyn = 0x02;
                const int o = 1 - d;
                const bool midstream = ((f.tcp_flags_seen[0] | f.tcp_flags_seen[1]) & kSyn) == 0;
                if (midstream && s.probe[o].empty() && !s.said_no[o] &&
                    http::probe(static_cast<http::Dir>(o), b, buf.size()) ==
                        http::ProbeResult::kYes) {
                    s.proto = AppProto::kHttp;
                    s.reversed = true;
                }
                break;
            }
        }
    }
    if (s.proto == AppProto::kUnknown && config_.tls) {
        take_probe(tls::probe(b, buf.size()), AppProto::kTls, &s.proto, &need_more);
    }
    // FTP before DNS: a greeting "220 " would read as a DNS-over-TCP length that needs more.
    if (s.proto == AppProto::kUnknown && config_.ftp) {
        take_probe(ftp::probe(static_cast<ftp::Dir>(d), b, buf.size(), f.server_port == 21),
                   AppProto::kFtp, &s.proto, &need_more);
    }
    if (s.proto == AppProto::kUnknown && config_.dns) {
        take_probe(dns::probe(b, buf.size(), true), AppProto::kDns, &s.proto, &need_more);
    }
    if (s.proto == AppProto::kUnknown && config_.ssh && dir == flow::Direction::kToClient &&
        ssh::probe_server_lines(b, buf.size())) {
        s.proto = AppProto::kSsh;
    }
    switch (s.proto) {
        case AppProto::kHttp:
            s.http = std::make_unique<http::HttpParser>(&config_.http_config, &http_counters_);
            if (config_.log.files) {
                s.http->set_body_observer(std::make_unique<FileTracker>(&config_.log));
            }
            ++flows_http_;
            return;
        case AppProto::kTls:
            s.tls = std::make_unique<tls::TlsParser>(config_.tls_config, &tls_counters_);
            ++flows_tls_;
            return;
        case AppProto::kDns:
            s.dns = std::make_unique<dns::DnsParser>(config_.dns_config, &dns_counters_, true);
            ++flows_dns_tcp_;
            return;
        case AppProto::kSsh:
            s.ssh = std::make_unique<ssh::SshParser>(config_.ssh_config, &ssh_counters_);
            ++flows_ssh_;
            return;
        case AppProto::kFtp:
            s.ftp = std::make_unique<ftp::FtpParser>(config_.ftp_config, &ftp_counters_);
            ++flows_ftp_;
            return;
        default:
            break;
    }
    if (!need_more || buf.size() >= config_.probe_bytes) {
        s.said_no[d] = true;
        buf.clear();
        buf.shrink_to_fit();
    }
    // Both directions said no, or one did and the other has been silent while the first
    // used up its window.
    if (s.said_no[0] && s.said_no[1]) {
        s.failed = true;
        ++flows_failed_tcp_;
        s.probe[0].clear();
        s.probe[1].clear();
    }
}

// TLS buffers by direction, as Suricata registers them: the client's (sni, ja3) to the
// server, the server's (ja3s, certificate) to the client; tls.version is the sender's.
void AppLayer::tls_view(const FlowState& s, flow::Direction dir, inspect::AppView& v) {
    v = inspect::AppView{};
    v.proto = AppProto::kTls;
    v.tx_id = 0;
    v.events = s.tls->events();
    const tls::ClientHello* ch = s.tls->client_hello();
    uint16_t client_version = 0;
    if (ch != nullptr) {
        client_version = ch->legacy_version;
        for (uint16_t sv : ch->supported_versions) {
            if (!tls::is_grease(sv) && sv > client_version) {
                client_version = sv;
            }
        }
    }
    if (dir == flow::Direction::kToServer) {
        if (ch != nullptr) {
            set(v, BufferId::kTlsSni, ch->sni);
            set(v, BufferId::kJa3String, ch->ja3);
            set(v, BufferId::kJa3Hash, ch->ja3_hash);
            v.tls_version = client_version;
        }
        return;
    }
    v.tls_version = client_version;
    if (const tls::ServerHello* sh = s.tls->server_hello()) {
        set(v, BufferId::kJa3sHash, sh->ja3s_hash);
        v.tls_version = sh->version();
    }
    if (const tls::CertInfo* c = s.tls->cert(); c != nullptr && c->parsed) {
        set(v, BufferId::kTlsCertSubject, c->subject);
        set(v, BufferId::kTlsCertIssuer, c->issuer);
        set(v, BufferId::kTlsCertSerial, c->serial);
        if (!c->chain.empty() && !c->chain[0].empty()) {
            v.buf[bi(BufferId::kTlsCerts)] = std::string_view(
                reinterpret_cast<const char*>(c->chain[0].data()), c->chain[0].size());
        }
    }
}

// SSH buffers of the sender, as Suricata registers them: ssh.proto and ssh.software both ways,
// ssh.hassh(.string) to the server, ssh.hassh.server(.string) to the client.
void AppLayer::ssh_view(const FlowState& s, flow::Direction dir, inspect::AppView& v) {
    v = inspect::AppView{};
    v.proto = AppProto::kSsh;
    v.tx_id = 0;
    v.events = s.ssh->events();
    const ssh::Side& side = s.ssh->side(static_cast<ssh::Dir>(dir));
    if (side.has_banner) {
        set(v, BufferId::kSshProto, side.proto_version);
        set(v, BufferId::kSshSoftware, side.software_version);
    }
    if (side.has_kex) {
        const bool ts = dir == flow::Direction::kToServer;
        set(v, ts ? BufferId::kSshHassh : BufferId::kSshHasshServer, side.hassh);
        set(v, ts ? BufferId::kSshHasshString : BufferId::kSshHasshServerString, side.hassh_string);
    }
}

uint32_t AppLayer::collect(FlowState& s, flow::Direction dir, const http::FeedResult& r,
                           TxUpdate* out, uint32_t cap) {
    uint32_t n = 0;
    const bool to_server = dir == flow::Direction::kToServer;
    for (uint32_t i = 0; i < r.count && n < cap; ++i) {
        const http::HttpTx* tx = s.http->find_tx(r.first_id + i);
        if (tx == nullptr) {
            continue;
        }
        inspect::AppView& v = out[n].view;
        v = inspect::AppView{};
        v.proto = AppProto::kHttp;
        v.tx_id = tx->id;
        v.events = tx->events.bits();
        if (tx->request_progress >= http::HttpTx::kRequestLine) {
            set(v, BufferId::kHttpUri, tx->uri);
            set(v, BufferId::kHttpUriRaw, tx->uri_raw);
            set(v, BufferId::kHttpMethod, tx->method);
            set(v, BufferId::kHttpRequestLine, tx->request_line);
        }
        // Request-only buffers stay visible from the response side (a rule may combine
        // http.uri with http.stat_code); directional ones follow the packet.
        set(v, BufferId::kHttpUserAgent, tx->user_agent);
        set(v, BufferId::kHttpHost, tx->host);
        set(v, BufferId::kHttpHostRaw, tx->host_raw);
        set(v, BufferId::kHttpReferer, tx->referer);
        set(v, BufferId::kHttpAccept, tx->accept);
        set(v, BufferId::kHttpAcceptEnc, tx->accept_enc);
        set(v, BufferId::kHttpAcceptLang, tx->accept_lang);
        set(v, BufferId::kHttpRequestBody, tx->request_body);
        if (to_server) {
            set(v, BufferId::kHttpProtocol, tx->protocol);
            set(v, BufferId::kHttpHeader, tx->request_headers);
            set(v, BufferId::kHttpHeaderRaw, tx->request_headers_raw);
            set(v, BufferId::kHttpHeaderNames, tx->request_header_names);
            set(v, BufferId::kHttpCookie, tx->cookie);
            set(v, BufferId::kHttpContentType, tx->content_type_req);
            set(v, BufferId::kHttpContentLen, tx->content_len_req);
            set(v, BufferId::kHttpConnection, tx->connection);
            set(v, BufferId::kHttpStart, tx->request_start);
            // A POST or PUT body is a file (Suricata's HtpRequestBodyHandlePOSTorPUT); a
            // multipart body's files get a view each, below.
            if (!tx->request_multipart && !tx->request_body.empty() &&
                (tx->method == "POST" || tx->method == "PUT")) {
                set(v, BufferId::kFileData, tx->request_body);
                v.buf[bi(BufferId::kFileName)] = http_file_name(*tx, http::Dir::kToServer);
            }
        } else {
            set(v, BufferId::kHttpProtocol, tx->response_protocol);
            set(v, BufferId::kHttpHeader, tx->response_headers);
            set(v, BufferId::kHttpHeaderRaw, tx->response_headers_raw);
            set(v, BufferId::kHttpHeaderNames, tx->response_header_names);
            set(v, BufferId::kHttpCookie, tx->response_cookie);
            set(v, BufferId::kHttpContentType, tx->content_type_resp);
            set(v, BufferId::kHttpContentLen, tx->content_len_resp);
            set(v, BufferId::kHttpStatCode, tx->stat_code);
            set(v, BufferId::kHttpStatMsg, tx->stat_msg);
            set(v, BufferId::kHttpResponseLine, tx->response_line);
            set(v, BufferId::kHttpResponseBody, tx->response_body);
            set(v, BufferId::kHttpLocation, tx->location);
            set(v, BufferId::kHttpServer, tx->server);
            set(v, BufferId::kHttpStart, tx->response_start);
            if (tx->response_progress >= http::HttpTx::kResponseBody) {
                set(v, BufferId::kFileData, tx->response_body);
                v.buf[bi(BufferId::kFileName)] = http_file_name(*tx, http::Dir::kToClient);
            }
        }
        ++n;
        if (to_server && tx->request_multipart) {
            // One view per uploaded file (file.data is a multi-buffer): the same transaction,
            // file.data / file.name of that file. Alerts stay one per rule and transaction.
            const size_t first = n - 1;
            for (size_t f = 0; f < tx->request_files.size(); ++f) {
                const http::HttpFile& hf = tx->request_files[f];
                if (f > 0) {
                    if (n >= cap) {
                        break;
                    }
                    out[n++].view = out[first].view;
                }
                inspect::AppView& fv = out[n - 1].view;
                fv.buf[bi(BufferId::kFileData)] = std::string_view(hf.data);
                fv.buf[bi(BufferId::kFileName)] = std::string_view(hf.name);
            }
        }
    }
    return n;
}

uint32_t AppLayer::on_data(flow::Flow& f, flow::Direction dir, const uint8_t* data, size_t len,
                           bool is_tcp, TxUpdate* out, uint32_t cap) {
    if (len == 0) {
        return 0;
    }
    FlowState& s = *state(f);
    if (s.failed || s.marker) {
        return 0;
    }
    touch(&s);
    const int d = static_cast<int>(dir);
    if (s.proto == AppProto::kUnknown) {
        const size_t held_before = s.probe[d].size();
        detect_proto(s, f, dir, data, len, is_tcp);
        if (s.failed) {
            retire_failed(f, &s);
            return 0;
        }
        if (s.proto == AppProto::kUnknown) {
            account(&s);
            return 0;
        }
        if (is_tcp) {
            // Replay what was held: the other direction's bytes first (they came earlier),
            // then this direction's (which include this call's data).
            uint32_t n = 0;
            const int o = 1 - d;
            std::string held_other = std::move(s.probe[o]);
            std::string held_this = std::move(s.probe[d]);
            s.probe[0].clear();
            s.probe[1].clear();
            if (!held_other.empty()) {
                n += on_data(f, static_cast<flow::Direction>(o),
                             reinterpret_cast<const uint8_t*>(held_other.data()), held_other.size(),
                             true, out + n, cap - n);
            }
            if (!held_this.empty()) {
                n += on_data(f, dir, reinterpret_cast<const uint8_t*>(held_this.data()),
                             held_this.size(), true, out + n, cap - n);
            }
            // The probe buffer stops at probe_bytes: the rest of this call's data was never
            // held.
            const size_t taken = held_this.size() - held_before;
            if (taken < len) {
                n += on_data(f, dir, data + taken, len - taken, true, out + n, cap - n);
            }
            return n;
        }
    }
    switch (s.proto) {
        case AppProto::kHttp: {
            if (!s.http || s.http->failed()) {
                return 0;
            }
            // A completed transaction still waiting to be inspected stays.
            uint64_t keep_from = UINT64_MAX;
            for (int k = 0; k < 2; ++k) {
                if (s.has_defer(k)) {
                    keep_from = std::min(keep_from, s.defer_lo[k]);
                }
            }
            s.http->release_before(keep_from);
            const flow::Direction pd = s.reversed ? flip(dir) : dir;
            http::FeedResult r = s.http->feed(static_cast<http::Dir>(pd), data, len);
            for (uint32_t i = 0; i < r.count; ++i) {
                const http::HttpTx* tx = s.http->find_tx(r.first_id + i);
                if (tx != nullptr &&
                    (pd == flow::Direction::kToServer
                         ? tx->request_progress == http::HttpTx::kRequestComplete
                         : tx->response_progress == http::HttpTx::kResponseComplete)) {
                    s.raw_trigger |= static_cast<uint8_t>(1u << d);
                }
            }
            if (config_.log.http || config_.log.files || config_.log.anomaly) {
                log_http(s, static_cast<http::Dir>(pd), r, r.failed);
            }
            const uint32_t n = collect(s, pd, r, out, cap);
            account(&s);
            return n;
        }
        case AppProto::kTls: {
            if (!s.tls || s.tls->failed()) {
                return 0;
            }
            if (s.bypassed) {
                return 0;
            }
            uint32_t upd = s.tls->feed(static_cast<tls::Dir>(d), data, len);
            if ((upd & tls::kAppDataBegin) != 0 &&
                config_.tls_config.encryption != tls::EncryptionHandling::kFull) {
                s.payload_off = true;
                s.bypassed = config_.tls_config.encryption == tls::EncryptionHandling::kBypass;
            }
            if (config_.log.tls || config_.log.anomaly) {
                log_tls(s, upd, dir, false);
            }
            account(&s);
            if ((upd & tls::kRecordEnd) != 0) {
                // Suricata's TLS parser asks for the raw stream at the end of every record (and
                // of each handshake message): the bytes are inspected before the session turns
                // encrypted and its payload inspection goes off.
                s.raw_trigger |= static_cast<uint8_t>(1u << d);
            }
            if ((upd & (tls::kClientHello | tls::kServerHello | tls::kCertificate)) == 0 ||
                cap == 0) {
                return 0;
            }
            tls_view(s, dir, out[0].view);
            if ((upd & tls::kClientHello) != 0) {
                ++tx_tls_;
            }
            return 1;
        }
        case AppProto::kSsh: {
            if (!s.ssh || s.ssh->done()) {
                return 0;
            }
            const uint32_t upd = s.ssh->feed(static_cast<ssh::Dir>(d), data, len);
            if (config_.log.ssh || config_.log.anomaly) {
                log_ssh(s, dir, false);
            }
            account(&s);
            if ((upd & (ssh::kBanner | ssh::kKexInit)) == 0 &&
                (s.ssh->events() & ~s.ssh->events_viewed) == 0) {
                return 0;
            }
            if (cap == 0) {
                return 0;
            }
            s.ssh->events_viewed = s.ssh->events();
            ssh_view(s, dir, out[0].view);
            return 1;
        }
        case AppProto::kFtp:
            return s.ftp ? ftp_on_data(s, f, dir, data, len, out, cap) : 0;
        case AppProto::kFtpData:
            return s.ftpdata ? ftpdata_on_data(s, dir, data, len, out, cap) : 0;
        case AppProto::kDns: {
            if (!s.dns) {
                return 0;
            }
            s.dns->feed(static_cast<dns::Dir>(d), data, len);
            uint32_t n = 0;
            for (const auto& m : s.dns->messages()) {
                if (n >= cap) {
                    break;
                }
                const dns::Message& msg = m.message;
                if (!msg.header_ok) {
                    continue;
                }
                // Transaction: a query opens one; a response joins the open one of its id.
                FlowState::DnsMeta* meta = nullptr;
                if (msg.header.qr) {
                    for (auto it = s.dns_meta.rbegin(); it != s.dns_meta.rend(); ++it) {
                        if (it->id == msg.header.id && !it->answered) {
                            meta = &*it;
                            break;
                        }
                    }
                }
                if (meta == nullptr) {
                    if (s.dns_meta.size() >= kDnsMetaKept) {
                        s.dns_meta.erase(s.dns_meta.begin());
                    }
                    s.dns_meta.emplace_back();
                    meta = &s.dns_meta.back();
                    meta->tx_id = s.dns_next_tx++;
                    meta->id = msg.header.id;
                    meta->opcode = msg.header.opcode;
                    meta->query = !msg.header.qr;
                    if (!msg.questions.empty()) {
                        meta->rrname = msg.questions[0].name;
                        meta->rrtype = msg.questions[0].qtype;
                    }
                    if (is_tcp) {
                        ++tx_dns_tcp_;
                    } else {
                        ++tx_dns_udp_;
                    }
                }
                if (msg.header.qr) {
                    meta->answered = true;
                    meta->rcode = msg.header.rcode;
                }
                if (config_.log.dns || config_.log.anomaly) {
                    log_dns(meta->tx_id, msg, dir);
                }
                inspect::AppView& v = out[n].view;
                v = inspect::AppView{};
                v.proto = AppProto::kDns;
                v.tx_id = meta->tx_id;
                v.dns_opcode = msg.header.opcode;
                v.events = msg.events;
                // dns.query inspects the request's question (Suricata 7: to_server only). UDP:
                // the view points at the metadata's copy (the same name: a query opens its
                // transaction), so the message itself can go now.
                if (!msg.header.qr && !msg.questions.empty()) {
                    set(v, BufferId::kDnsQuery, is_tcp ? msg.questions[0].name : meta->rrname);
                }
                ++n;
            }
            if (!is_tcp) {
                // One datagram, one message, already copied into dns_meta: keep nothing else.
                s.dns->compact();
            }
            account(&s);
            return n;
        }
        default:
            return 0;
    }
}

void AppLayer::on_gap(flow::Flow& f, flow::Direction dir) {
    auto* s = AppSlot::get(f);
    if (s == nullptr || s->failed || s->marker) {
        return;
    }
    if (s->proto == AppProto::kUnknown) {
        // Detection cannot resume mid-stream: give up on this flow.
        ++flows_failed_tcp_;
        retire_failed(f, s);
        return;
    }
    if (s->ftpdata && s->ftpdata->file_dir == dir) {
        s->ftpdata->gaps = true;
    }
    if (s->http) {
        const auto pd = static_cast<http::Dir>(s->reversed ? flip(dir) : dir);
        s->http->on_gap(pd);
        if (FileTracker* ft = files(*s)) {
            for (auto& file : ft->open()) {
                file->gaps = file->gaps || file->dir == pd;
            }
        }
        if (config_.log.http || config_.log.files || config_.log.anomaly) {
            // A gap the parser cannot skip abandons the flow: its transactions and files
            // are logged as they are.
            log_http(*s, pd, http::FeedResult{}, s->http->failed());
        }
    }
}

uint32_t AppLayer::on_eof(flow::Flow& f, flow::Direction dir, TxUpdate* out, uint32_t cap) {
    auto* s = AppSlot::get(f);
    if (s != nullptr && !s->failed && !s->marker && s->ftpdata) {
        ftpdata_on_eof(*s, dir);
        return 0;
    }
    if (s == nullptr || s->failed || s->marker || !s->http) {
        return 0;
    }
    touch(s);
    const flow::Direction pd = s->reversed ? flip(dir) : dir;
    http::FeedResult r = s->http->on_close(static_cast<http::Dir>(pd));
    if (config_.log.http || config_.log.files || config_.log.anomaly) {
        log_http(*s, static_cast<http::Dir>(pd), r, false);
    }
    const uint32_t n = collect(*s, pd, r, out, cap);
    account(s);
    return n;
}

void AppLayer::defer_tx(flow::Flow& f, flow::Direction dir, uint64_t tx_id) {
    auto* s = AppSlot::get(f);
    if (s == nullptr || s->marker) {
        return;
    }
    const int d = static_cast<int>(dir);
    if (!s->has_defer(d)) {
        s->defer_lo[d] = tx_id;
        s->defer_span[d] = 0;
        return;
    }
    const uint64_t lo = std::min(s->defer_lo[d], tx_id);
    const uint64_t hi = std::max(s->defer_lo[d] + s->defer_span[d], tx_id);
    s->defer_lo[d] = lo;
    s->defer_span[d] = static_cast<uint32_t>(std::min<uint64_t>(hi - lo, FlowState::kNoDefer - 1));
}

void AppLayer::defer_all(flow::Flow& f) {
    auto* s = AppSlot::get(f);
    if (s == nullptr || s->marker || s->failed) {
        return;
    }
    for (flow::Direction d : {flow::Direction::kToServer, flow::Direction::kToClient}) {
        if (s->proto == AppProto::kHttp && s->http && s->http->tx_count() != 0) {
            defer_tx(f, d, s->http->tx_at(0).id);
            defer_tx(f, d, s->http->tx_at(s->http->tx_count() - 1).id);
        } else if (s->proto == AppProto::kFtp && s->ftp && s->ftp->tx_count() != 0) {
            defer_tx(f, d, s->ftp->tx_at(0).id);
            defer_tx(f, d, s->ftp->tx_at(s->ftp->tx_count() - 1).id);
        } else if ((s->proto == AppProto::kTls && s->tls) ||
                   (s->proto == AppProto::kSsh && s->ssh) ||
                   (s->proto == AppProto::kFtpData && s->ftpdata)) {
            defer_tx(f, d, 0);
        } else if (s->proto == AppProto::kDns && !s->dns_meta.empty()) {
            defer_tx(f, d, s->dns_meta.front().tx_id);
            defer_tx(f, d, s->dns_meta.back().tx_id);
        }
    }
}

bool AppLayer::failed(const flow::Flow& f) const {
    const auto* s = AppSlot::get(f);
    return s != nullptr && s->failed;
}

bool AppLayer::guess_tx(const flow::Flow& f, uint64_t* tx_id) const {
    const auto* s = AppSlot::get(f);
    if (s == nullptr || s->failed || s->marker) {
        return false;
    }
    if (s->proto == AppProto::kHttp && s->http && s->http->tx_count() == 1) {
        *tx_id = s->http->tx_at(0).id;
        return true;
    }
    if ((s->proto == AppProto::kTls && s->tls) || (s->proto == AppProto::kSsh && s->ssh)) {
        *tx_id = 0;
        return true;
    }
    return false;
}

bool AppLayer::take_raw_trigger(flow::Flow& f, flow::Direction dir) {
    auto* s = AppSlot::get(f);
    const auto bit = static_cast<uint8_t>(1u << static_cast<int>(dir));
    if (s == nullptr || s->marker || (s->raw_trigger & bit) == 0) {
        return false;
    }
    s->raw_trigger = static_cast<uint8_t>(s->raw_trigger & ~bit);
    return true;
}

bool AppLayer::payload_inspection_off(const flow::Flow& f) const {
    const auto* s = AppSlot::get(f);
    return s != nullptr && s->payload_off;
}

bool AppLayer::bypassed(const flow::Flow& f) const {
    const auto* s = AppSlot::get(f);
    return s != nullptr && s->bypassed;
}

bool AppLayer::has_deferred(const flow::Flow& f, flow::Direction dir) const {
    const auto* s = AppSlot::get(f);
    return s != nullptr && s->has_defer(static_cast<int>(dir));
}

uint32_t AppLayer::take_deferred(flow::Flow& f, flow::Direction dir, TxUpdate* out, uint32_t cap) {
    auto* s = AppSlot::get(f);
    const int d = static_cast<int>(dir);
    if (s == nullptr || !s->has_defer(d)) {
        return 0;
    }
    const uint64_t lo = s->defer_lo[d];
    const uint64_t hi = lo + s->defer_span[d];
    if (!s->marker) {  // the shared markers are never written
        s->defer_span[d] = FlowState::kNoDefer;
    }
    if (s->marker || s->failed || cap == 0) {
        return 0;
    }
    switch (s->proto) {
        case AppProto::kHttp: {
            if (!s->http) {
                return 0;
            }
            http::FeedResult r;
            r.first_id = lo;
            r.count = static_cast<uint32_t>(std::min<uint64_t>(hi - lo + 1, cap));
            return collect(*s, s->reversed ? flip(dir) : dir, r, out, cap);
        }
        case AppProto::kTls:
            if (!s->tls) {
                return 0;
            }
            tls_view(*s, dir, out[0].view);
            return 1;
        case AppProto::kSsh:
            if (!s->ssh) {
                return 0;
            }
            ssh_view(*s, dir, out[0].view);
            return 1;
        case AppProto::kFtp:
            return s->ftp ? ftp_views(*s, dir, lo, hi, out, cap) : 0;
        case AppProto::kFtpData:
            if (!s->ftpdata || dir != s->ftpdata->file_dir ||
                !ftp::is_file(s->ftpdata->exp.command)) {
                return 0;
            }
            ftpdata_view(*s, out[0].view);
            return 1;
        case AppProto::kDns: {
            // The transaction's metadata: opcode, and the question for a query.
            uint32_t n = 0;
            for (const FlowState::DnsMeta& m : s->dns_meta) {
                if (m.tx_id < lo || m.tx_id > hi || n >= cap) {
                    continue;
                }
                inspect::AppView& v = out[n++].view;
                v = inspect::AppView{};
                v.proto = AppProto::kDns;
                v.tx_id = m.tx_id;
                v.dns_opcode = m.opcode;
                if (dir == flow::Direction::kToServer && m.query && !m.rrname.empty()) {
                    set(v, BufferId::kDnsQuery, m.rrname);
                }
            }
            return n;
        }
        default:
            return 0;
    }
}

void AppLayer::export_stats(StatsSnapshot& out) const {
    static constexpr struct {
        const char* name;
        Counter AppLayer::*counter;
    } kStats[] = {
        {"app_layer.flow.http", &AppLayer::flows_http_},
        {"app_layer.flow.tls", &AppLayer::flows_tls_},
        {"app_layer.flow.ssh", &AppLayer::flows_ssh_},
        {"app_layer.flow.ftp", &AppLayer::flows_ftp_},
        {"app_layer.flow.ftp_data", &AppLayer::flows_ftpdata_},
        {"app_layer.tx.ftp", &AppLayer::tx_ftp_},
        {"app_layer.ftp.expectations", &AppLayer::ftp_expectations_},
        {"app_layer.ftp.expectations_full", &AppLayer::ftp_expect_full_},
        {"app_layer.flow.dns_tcp", &AppLayer::flows_dns_tcp_},
        {"app_layer.flow.dns_udp", &AppLayer::flows_dns_udp_},
        {"app_layer.flow.failed_tcp", &AppLayer::flows_failed_tcp_},
        {"app_layer.flow.failed_udp", &AppLayer::flows_failed_udp_},
        {"app_layer.tx.tls", &AppLayer::tx_tls_},
        {"app_layer.tx.dns_tcp", &AppLayer::tx_dns_tcp_},
        {"app_layer.tx.dns_udp", &AppLayer::tx_dns_udp_},
        {"app_layer.memcap_evicted", &AppLayer::memcap_evicted_},
        {"app_layer.memcap_drop", &AppLayer::memcap_drop_},
        {"app_layer.memuse", &AppLayer::memuse_gauge_},
    };
    for (const auto& s : kStats) {
        out.add(s.name, (this->*s.counter).get());
    }
    http_counters_.export_stats(out);
    dns::export_stats(dns_counters_, out);
    tls::export_stats(tls_counters_, out);
    ssh::export_stats(ssh_counters_, out);
    ftp::export_stats(ftp_counters_, out);
}

}  // namespace picket::sensor::applayer
