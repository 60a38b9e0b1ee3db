// The app layer of a worker: protocol detection per flow (by content, with the port only as a
// tie-break), the HTTP, DNS, TLS and SSH parsers hung on the flow, and the views detection inspects
// (inspect::AppView) plus the metadata EVE alerts carry. It knows nothing of TCP: the worker
// hands it in-order stream bytes (from sensor/stream) or UDP datagrams.
//
// Threads: one AppLayer per worker, used by that worker only; export_stats from any thread
// (counters are relaxed atomics).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/applayer/dns/dns.h"
#include "sensor/applayer/ftp/expect.h"
#include "sensor/applayer/ftp/ftp.h"
#include "sensor/applayer/http/http.h"
#include "sensor/applayer/ssh/ssh.h"
#include "sensor/applayer/tls/tls.h"
#include "sensor/flow/flow.h"
#include "sensor/inspect/inspect.h"

struct magic_set;  // libmagic's handle (magic_t), for file records

namespace picket::sensor::applayer {

struct FileLog;  // records.h: one file being hashed for EVE fileinfo

// Which protocol records the app layer writes for EVE (outputs eve-log types http, dns, tls,
// files, anomaly) and their options; all off unless the sensor's output asks.
struct AppLogConfig {
    bool http = false;
    bool dns = false;
    bool tls = false;
    bool ssh = false;
    bool ftp = false;      // ftp and ftp_data records
    bool files = false;    // fileinfo for HTTP bodies and ftp-data files
    bool anomaly = false;  // app-layer parser events as "anomaly" records
    // http: extended fields; dump-all-headers.
    bool http_extended = true;
    bool http_request_headers = false;
    bool http_response_headers = false;
    // dns: version 2 (a record per query and per answer) or 3 (one record per transaction);
    // requests/responses; formats detailed / grouped.
    int dns_version = 2;
    bool dns_requests = true;
    bool dns_responses = true;
    bool dns_detailed = true;
    bool dns_grouped = true;
    // tls: extended fields, ja3 / ja3s objects.
    bool tls_extended = true;
    bool tls_ja3 = true;
    bool tls_ja3s = true;
    // files: force-magic (libmagic), force-hash.
    bool file_magic = false;
    bool file_md5 = false;
    bool file_sha1 = false;
    bool file_sha256 = false;
    // Alerts (outputs.eve.alert.http-body / http-body-printable): the transaction's kept
    // request and response bodies in the alert's "http" object, base64 and/or printable, each
    // body cut at alert_body_max bytes (the alert record must fit its queue's bytes-max).
    bool alert_http_body = false;
    bool alert_http_body_printable = false;
    size_t alert_body_max = 8192;
};

// One EVE record the app layer finished (a logged transaction, a file, a parser event). The
// worker adds the envelope (timestamp, flow_id, addresses, ...) and hands it to the output.
struct AppRecord {
    // "http", "dns", "tls", "ssh", "ftp", "ftp_data", "fileinfo", "anomaly": EVE's event_type
    // (a static string).
    const char* event_type = nullptr;
    // Whose addresses are src_*: kToServer = the client's (Suricata's flow direction for
    // http and tls; the packet's direction for dns and fileinfo).
    flow::Direction dir = flow::Direction::kToServer;
    bool has_tx_id = false;
    uint64_t tx_id = 0;
    // The record's members after the envelope, as JSON members without braces, e.g.
    // `"http":{"hostname":"a",...}` or `"app_proto":"http","fileinfo":{...}`: bytes
    // [offset, offset + len) of AppLayer::records_json().
    uint32_t offset = 0;
    uint32_t len = 0;
};

struct AppLayerConfig {
    bool http = true;  // app-layer.protocols.http.enabled
    bool dns = true;   // app-layer.protocols.dns.enabled (UDP and TCP)
    bool tls = true;   // app-layer.protocols.tls.enabled
    bool ssh = true;   // app-layer.protocols.ssh.enabled
    bool ftp = true;   // app-layer.protocols.ftp.enabled (ftp and ftp-data)
    http::HttpConfig http_config;
    dns::DnsConfig dns_config;
    tls::TlsConfig tls_config;
    ssh::SshConfig ssh_config;
    ftp::FtpConfig ftp_config;
    // The FTP data-channel expectations, shared by every worker's AppLayer (a data connection
    // may land on another worker than its control connection): the engine makes one for the
    // sensor; an AppLayer given none makes its own.
    std::shared_ptr<ftp::ExpectTable> ftp_expect;
    // Bytes per direction looked at before giving up on detection (Suricata's
    // app-layer.protocols detection window): the flow's app_proto becomes "failed".
    uint32_t probe_bytes = 4096;
    // Bytes of per-flow app state this AppLayer may hold (app-layer.memcap is the sensor's
    // total; the engine gives each worker memcap / workers). See "Memcap" in README.md.
    uint64_t memcap = 64ULL << 20;
    AppLogConfig log;  // EVE records to write
};

// One transaction that changed, as detection sees it from the packet's direction.
struct TxUpdate {
    inspect::AppView view;
};

class AppLayer {
public:
    explicit AppLayer(const AppLayerConfig& config);
    ~AppLayer();
    AppLayer(const AppLayer&) = delete;
    AppLayer& operator=(const AppLayer&) = delete;

    // In-order bytes of one direction of a TCP flow (or one UDP datagram: is_tcp false).
    // Detects the protocol if not known yet, feeds its parser, and fills `out` with the
    // transactions that changed (up to cap; views valid until the next call on this flow).
    // Returns how many.
    uint32_t on_data(flow::Flow& f, flow::Direction dir, const uint8_t* data, size_t len,
                     bool is_tcp, TxUpdate* out, uint32_t cap);
    // A hole in a TCP direction (bytes never seen).
    void on_gap(flow::Flow& f, flow::Direction dir);
    // A TCP direction ended (FIN reached): completes a body that runs until close.
    uint32_t on_eof(flow::Flow& f, flow::Direction dir, TxUpdate* out, uint32_t cap);

    // Suricata inspects a transaction on packets of its own direction: a worker that got a
    // transaction of direction dir while processing a packet of the other direction (TCP data
    // handed over on the acknowledging packet) records it here, and gets its view back from
    // take_deferred() on the next packet of dir (or at the flow's end). Held transactions
    // stay until then. take_deferred() clears the record; views as for on_data().
    void defer_tx(flow::Flow& f, flow::Direction dir, uint64_t tx_id);
    bool has_deferred(const flow::Flow& f, flow::Direction dir) const;
    // At the flow's end: every held transaction, both directions, as Suricata's end-of-flow
    // pseudo packets inspect them (alerts already raised are not repeated).
    void defer_all(flow::Flow& f);
    uint32_t take_deferred(flow::Flow& f, flow::Direction dir, TxUpdate* out, uint32_t cap);
    // Whether a message of direction dir ended since the last call (an HTTP request or
    // response completed, a TLS record): Suricata then inspects that
    // direction's raw stream at once (stream::StreamTracker::trigger_raw()). Clears it.
    bool take_raw_trigger(flow::Flow& f, flow::Direction dir);
    // tls::TlsConfig::encryption: the flow's TLS handshake is done and its payload (packets and
    // raw stream) is no longer inspected (Suricata's APP_LAYER_PARSER_NO_INSPECTION_PAYLOAD);
    // bypassed: nothing more of the flow is inspected (encryption-handling: bypass).
    bool payload_inspection_off(const flow::Flow& f) const;
    bool bypassed(const flow::Flow& f) const;
    // The protocol could not be told or its parser gave up ("failed" in EVE).
    bool failed(const flow::Flow& f) const;
    // detect.guess-applayer-tx: the transaction a packet or stream alert on this flow is
    // logged with, as Suricata guesses it: the flow's only transaction still held (HTTP), or
    // the TLS session's. False: none.
    bool guess_tx(const flow::Flow& f, uint64_t* tx_id) const;
    // The flow's protocol: kUnknown while undecided or failed.
    inspect::AppProto proto(const flow::Flow& f) const;
    // EVE's app_proto: "http", "dns", "tls", "failed", or nullptr while undecided.
    const char* proto_name(const flow::Flow& f) const;
    // Alerts raised per transaction on this flow (nullptr when the flow has no app state).
    inspect::TxAlertLog* alert_log(flow::Flow& f);
    // Appends the EVE alert metadata of transaction tx_id ("http":{...}, "dns":{...},
    // "tls":{...}) to *out as JSON members without braces; nothing when unknown. The http
    // object carries the bodies when AppLogConfig::alert_http_body(_printable) asks.
    void render_metadata(const flow::Flow& f, uint64_t tx_id, std::string* out) const;
    // The value of request header `name` (case-insensitive) of HTTP transaction tx_id, or,
    // with kAnyTx, of the oldest held transaction that has one (EVE's xff); null when none.
    static constexpr uint64_t kAnyTx = UINT64_MAX;
    const std::string* http_request_header(const flow::Flow& f, uint64_t tx_id,
                                           std::string_view name) const;

    // EVE records finished by on_data/on_eof/on_gap/finish_records since clear_records(),
    // oldest first (see AppRecord). The worker takes them after each call and clears them.
    const std::vector<AppRecord>& records() const { return records_; }
    const std::string& records_json() const { return records_json_; }
    void clear_records() {
        records_.clear();
        records_json_.clear();
    }
    // At the flow's end, before release_flow(): records every transaction and file not yet
    // logged (Suricata logs unfinished transactions when the flow ends).
    void finish_records(flow::Flow& f);

    // Frees what hangs on the flow (the flow table's on_free).
    void release_flow(flow::Flow& f);
    // app_layer.flow.<proto>, app_layer.tx.<proto>, app_layer.memcap_evicted,
    // app_layer.memcap_drop, the app_layer.memuse gauge, and the parsers' counters and events.
    void export_stats(StatsSnapshot& out) const;
    // Bytes of per-flow app state held now (what the memcap limits).
    uint64_t memuse() const { return memuse_; }

    struct FlowState;

private:
    FlowState* state(flow::Flow& f);
    // Evicts least recently used states (never `keep`) until `need` more bytes fit under the
    // memcap; false when they still do not.
    bool make_room(size_t need, const FlowState* keep);
    void evict(FlowState* s);
    // Replaces a failed flow's state by the shared "failed" marker: a failed flow costs nothing.
    void retire_failed(flow::Flow& f, FlowState* s);
    void unlink(FlowState* s);
    void touch(FlowState* s);
    // Recomputes s's bytes after its parser ran, then evicts others if over the memcap.
    void account(FlowState* s);
    void adopt_scratch_log();
    // records.cc: EVE records (see "Records" in README.md). record_begin() opens one in
    // records_ / records_json_, record_end() sets its length.
    void record_begin(const char* event_type, flow::Direction dir, bool has_tx_id, uint64_t tx_id);
    void record_end();
    // HTTP after the parser ran in parser direction pd: the transactions in r (or, with all,
    // every one held) that are complete (all: started) and not yet logged; their new events;
    // the files whose body ended (all: every open one, truncated).
    void log_http(FlowState& s, http::Dir pd, const http::FeedResult& r, bool all);
    void log_http_tx(FlowState& s, http::HttpTx& tx);
    void log_http_events(FlowState& s, http::HttpTx& tx, http::Dir pd);
    void log_files(FlowState& s, bool all);
    // One DNS message just parsed, of transaction tx_id.
    void log_dns(uint64_t tx_id, const dns::Message& msg, flow::Direction dir);
    // TLS: the session once its handshake is done (force: at the flow's end), new events.
    void log_tls(FlowState& s, uint32_t update, flow::Direction dir, bool force);
    // SSH: the session once both sides are encrypted or gave up (force: at the flow's end),
    // new events.
    void log_ssh(FlowState& s, flow::Direction dir, bool force);
    void log_anomaly(const char* proto, const std::string& event, flow::Direction dir,
                     bool has_tx_id, uint64_t tx_id);
    uint32_t collect(FlowState& s, flow::Direction dir, const http::FeedResult& r, TxUpdate* out,
                     uint32_t cap);
    static void tls_view(const FlowState& s, flow::Direction dir, inspect::AppView& v);
    static void ssh_view(const FlowState& s, flow::Direction dir, inspect::AppView& v);
    // applayer_ftp.cc: FTP control and data flows (see "FTP" in README.md).
    bool ftp_match_expectation(FlowState& s, flow::Flow& f);
    uint32_t ftp_on_data(FlowState& s, flow::Flow& f, flow::Direction dir, const uint8_t* data,
                         size_t len, TxUpdate* out, uint32_t cap);
    uint32_t ftpdata_on_data(FlowState& s, flow::Direction dir, const uint8_t* data, size_t len,
                             TxUpdate* out, uint32_t cap);
    void ftpdata_on_eof(FlowState& s, flow::Direction dir);
    uint32_t ftp_views(FlowState& s, flow::Direction dir, uint64_t lo, uint64_t hi, TxUpdate* out,
                       uint32_t cap);
    static void ftpdata_view(const FlowState& s, inspect::AppView& v);
    void log_ftp(FlowState& s, bool force);
    void log_ftpdata(FlowState& s);
    void write_fileinfo(FileLog& fl, bool closed, uint64_t tx_id, std::string* out);
    void detect_proto(FlowState& s, flow::Flow& f, flow::Direction dir, const uint8_t* data,
                      size_t len, bool is_tcp);

    AppLayerConfig config_;
    std::vector<AppRecord> records_;
    std::string records_json_;
    http::HttpCounters http_counters_;
    dns::DnsCounters dns_counters_;
    tls::TlsCounters tls_counters_;
    ssh::SshCounters ssh_counters_;
    ftp::FtpCounters ftp_counters_;
    std::shared_ptr<ftp::ExpectTable> ftp_expect_;
    Counter flows_ftp_, flows_ftpdata_, tx_ftp_, ftp_expectations_, ftp_expect_full_;
    Counter flows_http_, flows_tls_, flows_ssh_, flows_dns_tcp_, flows_dns_udp_, flows_failed_tcp_,
        flows_failed_udp_;
    Counter tx_dns_tcp_, tx_dns_udp_, tx_tls_;
    Counter memcap_evicted_, memcap_drop_, memuse_gauge_;
    uint64_t memuse_ = 0;
    FlowState* lru_head_ = nullptr;  // least recently used
    FlowState* lru_tail_ = nullptr;  // most recently used
    // Alert logs are 520 bytes and most flows never alert: alert_log() lends this one to the
    // flow that asks, which gets its own copy only when the next flow asks and something was
    // recorded (see README.md).
    inspect::TxAlertLog scratch_log_;
    FlowState* scratch_owner_ = nullptr;
    // libmagic, opened on the first file logged with file_magic (one per worker).
    ::magic_set* magic_ = nullptr;
    bool magic_failed_ = false;
};

}  // namespace picket::sensor::applayer
