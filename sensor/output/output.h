// EVE JSON output. EveWriter appends one JSON object per line to LOGDIR/eve.json, in
// Suricata's field layout, so tools that read Suricata's eve.json read ours. Stats events
// nest the flat dotted counter names ("decoder.event.ipv4.trunc_pkt") into objects. One
// writer thread owns an EveWriter (the stats/output thread); workers never write to it.
// Alerts travel from each worker to the output thread through that worker's AlertQueue
// (single producer, single consumer, lock-free); the output thread renders them as EVE
// "alert" events (append_alert_json) and fast.log lines (FastLogWriter).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/decode/decode.h"
#include "sensor/output/ring.h"
#include "sensor/output/sink.h"

namespace picket::sensor::output {

struct WorkerRate {
    uint32_t worker = 0;
    uint64_t packets = 0;  // cumulative
    uint64_t bytes = 0;    // cumulative
    double pkts_per_sec = 0;
    double mbit_per_sec = 0;
};

struct Rates {
    double interval_sec = 0;
    double pkts_per_sec = 0;
    double mbit_per_sec = 0;
    std::vector<WorkerRate> workers;
};

// Turns {"a.b": 1, "a.c.d": 2} into {"a": {"b": 1, "c": {"d": 2}}}. A name that is both a
// leaf and a prefix of another keeps the leaf under "<name>._value" rather than losing it.
nlohmann::json nest_stats(const StatsSnapshot& stats);

// The EVE stats event: {"timestamp", "event_type": "stats", "stats": {"uptime", ...nested
// counters..., "rates": {...}}}.
nlohmann::json make_stats_event(int64_t ts_ns, int64_t uptime_sec, const StatsSnapshot& stats,
                                const Rates& rates);

// A file opened for appending, written by the one thread that owns it (EveWriter and
// FastLogWriter hold one each).
class AppendFile {
public:
    // Opens (appends to) path; throws std::runtime_error naming the path on failure.
    explicit AppendFile(const std::string& path);
    ~AppendFile();
    AppendFile(const AppendFile&) = delete;
    AppendFile& operator=(const AppendFile&) = delete;

    void write(std::string_view bytes) { std::fwrite(bytes.data(), 1, bytes.size(), file_); }
    void flush() { std::fflush(file_); }
    // Closes the file and opens the path again (logrotate moved it away). On failure the old
    // file stays open and the error is logged.
    void reopen();
    const std::string& path() const { return path_; }

private:
    std::string path_;
    FILE* file_ = nullptr;
};

// The EVE writer of the output thread: renders stats events and passes every record to its
// sink (a file, a socket, syslog or Redis: sink.h), counting records written per event type.
class EveWriter {
public:
    explicit EveWriter(std::unique_ptr<EveSink> sink) : sink_(std::move(sink)) {}
    // A regular file at path (appended to; a failure to open is reported by the sink, which
    // retries).
    explicit EveWriter(const std::string& path);

    void write(const nlohmann::json& event);
    // One already-rendered JSON object (no trailing newline).
    void write_line(std::string_view json) { sink_->write(json); }
    void flush() { sink_->flush(); }
    // SIGHUP: files are closed and opened again (logrotate), sockets reconnect.
    void reopen() { sink_->reopen(); }
    const std::string& path() const { return sink_->name(); }
    const EveSink& sink() const { return *sink_; }

private:
    std::unique_ptr<EveSink> sink_;
};

// ---------------------------------------------------------------------------------------
// Alerts

// What the output needs to know about a rule, rendered once when the engine is built and
// owned by that engine generation (the output thread holds a reference to the generation
// while it drains). The output module does not know sensor/detect: the engine converts.
struct AlertMeta {
    uint32_t gid = 1;
    uint32_t sid = 0;
    uint32_t rev = 0;
    std::string signature;  // msg
    std::string category;   // classification description ("" = none)
    int severity = 3;       // priority
    // metadata keyword pairs in rule order; rendered as {"key": ["v1", "v2"], ...}, keys in
    // order of first appearance.
    std::vector<std::pair<std::string, std::string>> metadata;
};

enum class AlertDirection : uint8_t { kUnknown, kToServer, kToClient };
enum class AlertAction : uint8_t { kAllowed, kBlocked };
enum class RejectTargetName : uint8_t { kToClient, kToServer, kBoth };

// Suricata's "verdict" object: the packet's final verdict as of the alert. kNone = no object
// (IDS mode unless outputs.eve.alert.verdict says otherwise).
enum class AlertVerdict : uint8_t { kNone, kAlert, kDrop, kPass };
// Suricata's pkt_src: where the packet that alerted came from.
enum class PacketOrigin : uint8_t { kWire, kDefrag, kStreamFlowTimeout, kStreamDetectLog };

inline constexpr uint16_t kNoInterface = 0xffff;
inline constexpr uint32_t kDefaultAlertBytesMax = 65535;
// Room for an address in text form (INET6_ADDRSTRLEN).
inline constexpr size_t kXffIpMax = 46;

// One alert as pushed by a worker. packet/payload are views: on push they point at the
// worker's packet, inside a drained record they point into the queue's ring (valid during
// the drain callback only). Trivially copyable: the queue copies it by memcpy.
struct AlertEvent {
    int64_t ts_ns = 0;
    uint64_t flow_id = 0;   // 0 = no flow: "flow_id" omitted
    uint64_t pcap_cnt = 0;  // 0 = live capture: "pcap_cnt" omitted
    uint64_t tx_id = 0;
    const AlertMeta* meta = nullptr;
    const char* app_proto =
        nullptr;  // static string ("http", "dns", "tls", "failed"); null = unknown
    const uint8_t* packet = nullptr;   // the whole frame from the link layer
    const uint8_t* payload = nullptr;  // L4 payload (or the stream chunk that matched)
    // App-layer metadata as JSON members without braces, written into the alert record as is
    // (`"http":{"hostname":"a","url":"/"}`); built by the worker when the alert is raised.
    const uint8_t* app_json = nullptr;
    uint32_t packet_len = 0;
    uint32_t payload_len = 0;
    uint32_t app_json_len = 0;
    decode::Address src, dst;
    int32_t linktype = 1;  // packet_info.linktype
    uint16_t sport = 0;
    uint16_t dport = 0;
    uint16_t vlan_id[2] = {0, 0};
    uint16_t in_iface = kNoInterface;  // index into AlertOutputOptions::interfaces
    uint8_t vlan_count = 0;
    uint8_t ip_version = 4;  // 4 or 6; 0 = not IP (fast.log prints the raw-packet form)
    uint8_t proto = 0;       // IP protocol number
    uint8_t icmp_type = 0;
    uint8_t icmp_code = 0;
    AlertDirection direction = AlertDirection::kUnknown;
    AlertAction action = AlertAction::kAllowed;
    PacketOrigin origin = PacketOrigin::kWire;
    bool has_tx_id = false;
    bool stream = false;     // payload is reassembled stream data ("stream": 1)
    bool drop_rule = false;  // a drop rule that did not drop (IDS mode): fast.log "[wDrop] "
    AlertVerdict verdict = AlertVerdict::kNone;
    // The packet was rejected: the verdict object carries "reject-target" (where the
    // responses went: "to_client", "to_server" or "both") and "reject":["tcp-reset"] (TCP) /
    // ["icmp-prohib"] (other protocols).
    bool reject = false;
    RejectTargetName reject_target = RejectTargetName::kBoth;
    // The client address from the HTTP X-Forwarded-For header (xff_client_ip), found by the
    // worker when outputs.eve.alert.xff is on; xff_len 0 = none.
    uint8_t xff_len = 0;
    char xff[kXffIpMax] = {};
    // Suricata's alert "flow" object (EveAddFlow): the flow's packets and wire bytes per
    // direction as of this packet, and its start. has_flow false: no object.
    bool has_flow = false;
    uint64_t flow_pkts[2] = {0, 0};   // to server, to client
    uint64_t flow_bytes[2] = {0, 0};  // to server, to client
    int64_t flow_start_ns = 0;
    // "action" in the flow object: "drop" / "pass" when a rule set the flow's action, null
    // when none (a static string).
    const char* flow_action = nullptr;
    // Not an alert: a packet the tag keyword tagged (tagged-packets), written by the alert
    // sink as Suricata's EVE "packet" record (append_packet_json) and nowhere else. meta,
    // payload and the alert fields are unused.
    bool tagged = false;
};

// Per-worker alert queue: one single-producer (the worker) single-consumer (the output
// thread) byte ring of variable-length records, like capture's Dispatcher rings. No lock and
// no allocation after construction; push never blocks.
class AlertQueue {
public:
    // ring_bytes is rounded down to 64 and must hold at least two records of the largest size
    // (bytes_max packet + bytes_max payload); throws std::invalid_argument otherwise.
    explicit AlertQueue(size_t ring_bytes = 4u << 20, uint32_t bytes_max = kDefaultAlertBytesMax);
    AlertQueue(const AlertQueue&) = delete;
    AlertQueue& operator=(const AlertQueue&) = delete;

    // Producer. Copies ev plus up to bytes_max bytes of the packet and of the payload (the
    // event's own packet/payload pointers are ignored). Returns false, and counts an
    // overflow, when the ring has no room; the caller bumps detect.alert_queue_overflow.
    // app_json (ev.app_json's bytes, up to bytes_max) travels with the record as well.
    bool push(const AlertEvent& ev, const uint8_t* packet, uint32_t packet_len,
              const uint8_t* payload, uint32_t payload_len, const uint8_t* app_json = nullptr,
              uint32_t app_json_len = 0);

    // Consumer. Calls f(const AlertEvent&) for each record, oldest first (at most max of
    // them), with packet/payload pointing into the ring; returns how many were delivered.
    template <typename F>
    size_t drain(F&& f, size_t max = SIZE_MAX);

    // Bytes one record takes in the ring (header + event + data, padded).
    static size_t record_bytes(uint32_t packet_len, uint32_t payload_len,
                               uint32_t app_json_len = 0);
    size_t capacity() const { return ring_.capacity(); }
    uint32_t bytes_max() const { return bytes_max_; }
    uint64_t pushed() const { return pushed_.get(); }
    uint64_t overflows() const { return overflows_.get(); }

private:
    static constexpr uint32_t kEvent = 1;

    ByteRing ring_;
    const uint32_t bytes_max_;
    Counter pushed_;
    Counter overflows_;
};

template <typename F>
size_t AlertQueue::drain(F&& f, size_t max) {
    return ring_.drain(
        [&](uint32_t, const uint8_t* at) {
            AlertEvent ev;
            std::memcpy(&ev, at, sizeof(AlertEvent));
            const uint8_t* data = at + sizeof(AlertEvent);
            ev.packet = ev.packet_len != 0 ? data : nullptr;
            ev.payload = ev.payload_len != 0 ? data + ev.packet_len : nullptr;
            ev.app_json = ev.app_json_len != 0 ? data + ev.packet_len + ev.payload_len : nullptr;
            f(static_cast<const AlertEvent&>(ev));
        },
        max);
}

// Suricata's outputs.eve-log.types.alert.xff: the client address an HTTP proxy put in a
// request header. extra-data adds "xff":"<ip>" to the alert object; overwrite puts it in
// place of the client side's address (src_ip on a to-server packet, dest_ip on a to-client
// one).
enum class XffMode : uint8_t { kExtraData, kOverwrite };
struct XffOptions {
    bool enabled = false;
    XffMode mode = XffMode::kExtraData;
    // deployment: reverse (a reverse proxy appended the client: the last address of the
    // chain) or forward (the first address). Suricata's default is reverse.
    bool reverse = true;
    std::string header = "X-Forwarded-For";
};

// The client address in an X-Forwarded-For value, as Suricata's HttpXFFGetIPFromTx and
// ParseXFFString find it: values shorter than 7 or longer than 255 bytes are ignored;
// reverse takes what follows the last space, forward what precedes the first comma; then
// "[v6]..." gives what is inside the brackets and an IPv4 address with a ":port" (three dots,
// one colon) loses the port; the result must be an IPv4 or IPv6 address. Writes it (NUL-
// terminated) to out (kXffIpMax bytes) and returns its length, or 0 when there is none.
size_t xff_client_ip(std::string_view value, bool reverse, char* out);

struct AlertOutputOptions {
    // Suricata's outputs.eve-log.types.alert options; Suricata's defaults.
    bool payload = false;            // "payload": base64 of the payload
    bool payload_printable = false;  // "payload_printable": non-printables as '.'
    bool packet = false;             // "packet" (base64) + "packet_info": {"linktype"}
    bool rule_metadata = true;       // "alert.metadata"
    XffOptions xff;                  // outputs.eve.alert.xff.*
    bool community_id = false;       // eve-log.community-id: "community_id"
    uint16_t community_id_seed = 0;
    bool ethernet = false;  // eve-log.ethernet: "ether" {src_mac, dest_mac} (Ethernet frames)
    // Names for AlertEvent::in_iface ("in_iface" is logged for live capture only).
    std::vector<std::string> interfaces;
};

// Appends the EVE alert object for ev to out (one line, no newline), field-compatible with
// Suricata 7's eve.json. Reuses out's capacity: no allocation once out is large enough.
void append_alert_json(const AlertEvent& ev, const AlertOutputOptions& options, std::string& out);

// Appends the EVE record of a tagged packet (ev.tagged), as Suricata 7's alert logger writes
// it with tagged-packets on: the common header with "event_type":"packet" (addresses as in
// the packet, pkt_src, community_id and ether as configured), then "packet" (the frame in
// base64) and "packet_info": {"linktype", "linktype_name"}.
void append_packet_json(const AlertEvent& ev, const AlertOutputOptions& options, std::string& out);

// An address as Suricata prints it: IPv4 dotted quad, IPv6 as eight 4-digit lowercase hex
// groups without zero compression ("fe80:0000:0000:0000:020c:29ff:faf2:ab42"). buf must hold
// 46 bytes; returns buf.
const char* format_address(const decode::Address& a, char* buf);

// IANA keyword as Suricata prints it ("TCP", "UDP", "ICMP", "IPV6-ICMP", ...) or null.
const char* proto_name(uint8_t proto);

// fast.log, Suricata's/Snort's one-line alert format:
// 01/02/2024-03:04:05.123456  [**] [1:2000001:3] msg [**] [Classification: c] [Priority: 1]
// {TCP} 10.0.0.1:1234 -> 10.0.0.2:80
// Times are UTC (Suricata uses local time; run it with TZ=UTC to compare).
class FastLogWriter {
public:
    // Opens (appends to) path; throws std::runtime_error naming the path on failure.
    explicit FastLogWriter(const std::string& path);

    void write(const AlertEvent& ev);
    void flush() { file_.flush(); }
    void reopen() { file_.reopen(); }
    const std::string& path() const { return file_.path(); }
    // Appends the line for ev, with its newline, to out.
    static void format(const AlertEvent& ev, std::string& out);

private:
    AppendFile file_;
    std::string line_;
};

// The output thread's alert sink: renders each drained alert to eve.json and/or fast.log.
class AlertSink {
public:
    // Either writer may be null (that output is off). The writers must outlive the sink.
    AlertSink(EveWriter* eve, FastLogWriter* fast, AlertOutputOptions options);
    // An alert goes to eve.json and fast.log; a tagged packet (ev.tagged) to eve.json only.
    void write(const AlertEvent& ev);
    // Drains every queue (up to max_per_queue records each); returns alerts written.
    size_t drain(const std::vector<AlertQueue*>& queues, size_t max_per_queue = SIZE_MAX);
    uint64_t written() const { return written_; }  // alerts (tagged packets not counted)
    uint64_t tagged_written() const { return tagged_written_; }
    const AlertOutputOptions& options() const { return options_; }

private:
    EveWriter* eve_;
    FastLogWriter* fast_;
    AlertOutputOptions options_;
    std::string json_;
    uint64_t written_ = 0;
    uint64_t tagged_written_ = 0;
};

}  // namespace picket::sensor::output
