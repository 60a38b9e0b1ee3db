// EVE records other than alerts and stats: what a worker hands to the output thread
// (RecordEvent plus the record's own members) through its RecordQueue, and how the output
// thread renders them (append_record_json). Protocol records (http, dns, tls, fileinfo,
// app-layer anomaly) arrive with their members already in JSON form from the app layer; flow,
// drop and decoder/stream anomaly records arrive as fields and are formatted here.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/counter.h"
#include "sensor/decode/decode.h"
#include "sensor/output/ring.h"

namespace picket::sensor::output {

struct AlertMeta;  // output.h

enum class RecordType : uint8_t {
    kHttp,
    kDns,
    kTls,
    kFileinfo,
    kAnomaly,
    kFlow,
    kDrop,
    kSsh,
    kFtp,
    kFtpData,
    kCount
};
inline constexpr size_t kRecordTypes = static_cast<size_t>(RecordType::kCount);
// EVE's event_type: "http", "dns", "tls", "fileinfo", "anomaly", "flow", "drop", "ssh", "ftp",
// "ftp_data".
const char* record_type_name(RecordType t);

// The flow's end (RecordType::kFlow): Suricata's "flow" and "tcp" objects.
struct FlowEnd {
    uint64_t pkts[2] = {0, 0};   // to server, to client
    uint64_t bytes[2] = {0, 0};  // to server, to client
    int64_t start_ns = 0;
    int64_t end_ns = 0;
    const char* state = "new";        // new | established | closed | bypassed
    const char* reason = "timeout";   // timeout | forced | shutdown
    const char* action = nullptr;     // "drop" / "pass" when a rule set the flow's action
    const char* tcp_state = nullptr;  // the TCP session's state (TCP flows only)
    bool alerted = false;
    uint8_t tcp_flags[2] = {0, 0};  // OR of the flags seen per direction (TCP only)
};

// A dropped packet (RecordType::kDrop): Suricata's "drop" object.
struct DropInfo {
    uint32_t len = 0;  // IP total length
    uint8_t tos = 0, ttl = 0;
    uint16_t ipid = 0;
    uint32_t tcpseq = 0, tcpack = 0;
    uint16_t tcpwin = 0, tcpurgp = 0;
    uint8_t tcp_flags = 0;         // 0 = not TCP
    uint16_t udplen = 0;           // UDP only
    const char* reason = "rules";  // rules | stream memcap | decode error | flow drop ...
};

// One record as a worker pushes it. Trivially copyable: the queue copies it by memcpy.
struct RecordEvent {
    RecordType type = RecordType::kFlow;
    int64_t ts_ns = 0;
    uint64_t flow_id = 0;   // 0: omitted
    uint64_t pcap_cnt = 0;  // 0: omitted
    bool has_tx_id = false;
    uint64_t tx_id = 0;
    decode::Address src, dst;
    uint16_t sport = 0, dport = 0;
    uint8_t ip_version = 4;  // 0: not IP
    uint8_t proto = 0;
    uint8_t icmp_type = 0, icmp_code = 0;
    uint16_t vlan_id[2] = {0, 0};
    uint8_t vlan_count = 0;
    uint16_t in_iface = 0xffff;
    const char* app_proto = nullptr;      // static string, rendered as "app_proto" (flow, anomaly)
    const char* anomaly_type = nullptr;   // decode / stream anomaly: "decode" | "stream"
    const char* anomaly_event = nullptr;  // static, e.g. "ipv4.trunc_pkt"
    bool has_ether = false;
    uint8_t src_mac[6] = {}, dst_mac[6] = {};
    FlowEnd flow;
    DropInfo drop;
    // The drop rule behind a drop record (its "alert" object); owned by the detection
    // generation, which outlives every record pushed while it ran.
    const AlertMeta* rule = nullptr;
    uint32_t body_len = 0;          // bytes of members that follow (protocol records)
    const uint8_t* body = nullptr;  // set by drain
};

// Options of the rendering that the configuration decides.
struct RecordOptions {
    bool community_id = false;
    uint16_t community_id_seed = 0;
    bool ethernet = false;
    const std::vector<std::string>* interfaces = nullptr;  // names for RecordEvent::in_iface
};

// Appends one EVE record (one line, no newline) to out. body: the protocol record's members.
void append_record_json(const RecordEvent& ev, const RecordOptions& options, std::string& out);

// Suricata's Community ID v1 ("1:base64(sha1(seed, saddr, daddr, proto, 0, sport, dport))",
// endpoints ordered) of a 5-tuple; ICMP maps type/code as the specification says.
std::string community_id(const decode::Address& src, const decode::Address& dst, uint16_t sport,
                         uint16_t dport, uint8_t proto, uint16_t seed);
// The same, appended as `"community_id":"..."` with a leading comma.
void append_community_id(const decode::Address& src, const decode::Address& dst, uint16_t sport,
                         uint16_t dport, uint8_t proto, uint16_t seed, std::string& out);

// Per-worker record queue: one single-producer (the worker) single-consumer (the output
// thread) ring. push never blocks: a full ring drops the record and counts it per type.
class RecordQueue {
public:
    // ring_bytes rounded down to 64; at least 64 KiB.
    explicit RecordQueue(size_t ring_bytes = 4u << 20);

    // Copies ev and body_len bytes of body (ev.body ignored). False (and counted) when full
    // or when the record is larger than a quarter of the ring.
    bool push(const RecordEvent& ev, const uint8_t* body = nullptr, uint32_t body_len = 0);

    // Calls f(const RecordEvent&) with ev.body pointing into the ring, oldest first.
    template <typename F>
    size_t drain(F&& f, size_t max = SIZE_MAX) {
        return ring_.drain(
            [&](uint32_t, const uint8_t* at) {
                RecordEvent ev;
                std::memcpy(&ev, at, sizeof(RecordEvent));
                ev.body = ev.body_len != 0 ? at + sizeof(RecordEvent) : nullptr;
                f(static_cast<const RecordEvent&>(ev));
            },
            max);
    }

    uint64_t pushed(RecordType t) const { return pushed_[static_cast<size_t>(t)].get(); }
    uint64_t dropped(RecordType t) const { return dropped_[static_cast<size_t>(t)].get(); }
    size_t capacity() const { return ring_.capacity(); }

private:
    ByteRing ring_;
    Counter pushed_[kRecordTypes];
    Counter dropped_[kRecordTypes];
};

}  // namespace picket::sensor::output
