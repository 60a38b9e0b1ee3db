// EVE records beyond alerts: what the workers hand to the output thread (app-layer records,
// flow ends, anomalies, drops) and how the output thread writes them. Workers only copy
// fields into their RecordQueue (no lock, no I/O); the output thread renders and writes.
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "sensor/engine/engine_internal.h"

namespace picket::sensor::engine {

namespace {

// Suricata's decoder event names in anomaly records carry the "decoder." prefix.
const char* decode_event_name(uint16_t e) {
    static const std::array<std::string, decode::kNumDecodeEvents> kNames = [] {
        std::array<std::string, decode::kNumDecodeEvents> names;
        for (size_t i = 0; i < names.size(); ++i) {
            names[i] =
                std::string("decoder.") + decode::event_name(static_cast<decode::DecodeEvent>(i));
        }
        return names;
    }();
    return e < kNames.size() ? kNames[e].c_str() : "decoder.unknown";
}

// The stream events that are anomalies, with the names Suricata gives the closest event.
constexpr std::pair<uint32_t, const char*> kStreamAnomalies[] = {
    {stream::kEventBadChecksum, "stream.pkt_invalid_checksum"},
    {stream::kEventOutOfWindow, "stream.pkt_out_of_window"},
    {stream::kEventOverlapDiffData, "stream.reassembly_overlap_different_data"},
    {stream::kEventSegmentMemcap, "stream.reassembly_segment_memcap"},
    {stream::kEventDepthReached, "stream.reassembly_depth_reached"},
    {stream::kEventRstInvalid, "stream.rst_invalid"},
    {stream::kEventSessionMemcap, "stream.session_memcap"},
};

output::RecordType record_type_of(const char* event_type) {
    using output::RecordType;
    static constexpr std::pair<const char*, RecordType> kTypes[] = {
        {"http", RecordType::kHttp},       {"dns", RecordType::kDns},
        {"tls", RecordType::kTls},         {"fileinfo", RecordType::kFileinfo},
        {"anomaly", RecordType::kAnomaly}, {"ssh", RecordType::kSsh},
        {"ftp", RecordType::kFtp},         {"ftp_data", RecordType::kFtpData},
    };
    for (const auto& [name, t] : kTypes) {
        if (std::strcmp(name, event_type) == 0) {
            return t;
        }
    }
    return RecordType::kAnomaly;
}

// The envelope of a record about f: addresses as seen from direction d (kToServer: the
// client's are the source).
void fill_from_flow(output::RecordEvent& ev, const flow::Flow& f, flow::Direction d) {
    const bool ts = d == flow::Direction::kToServer;
    ev.flow_id = f.flow_id;
    ev.src = ts ? f.client_addr : f.server_addr;
    ev.dst = ts ? f.server_addr : f.client_addr;
    ev.sport = ts ? f.client_port : f.server_port;
    ev.dport = ts ? f.server_port : f.client_port;
    ev.ip_version = f.key.ip_version;
    ev.proto = f.proto;
    ev.vlan_id[0] = f.vlan_id[0];
    ev.vlan_id[1] = f.vlan_id[1];
    ev.vlan_count = f.vlan_count;
}

void fill_from_packet(output::RecordEvent& ev, const decode::Packet& p) {
    ev.ts_ns = p.ts_ns;
    ev.pcap_cnt = p.pcap_cnt;
    ev.src = p.src;
    ev.dst = p.dst;
    ev.sport = p.sport;
    ev.dport = p.dport;
    ev.ip_version = p.ip_version;
    ev.proto = p.proto;
    ev.icmp_type = p.icmp_type;
    ev.icmp_code = p.icmp_code;
    ev.vlan_count = p.vlan_count;
    ev.vlan_id[0] = p.vlan_id[0];
    ev.vlan_id[1] = p.vlan_id[1];
    if (p.linktype == 1 && p.caplen >= 14) {
        ev.has_ether = true;
        std::memcpy(ev.dst_mac, p.data, 6);
        std::memcpy(ev.src_mac, p.data + 6, 6);
    }
}

const char* flow_state_name(const flow::Flow& f) {
    switch (f.state) {
        case flow::FlowState::kNew:
            return "new";
        case flow::FlowState::kEstablished:
            return "established";
        case flow::FlowState::kClosed:
            return "closed";
    }
    return "new";
}

}  // namespace

void Engine::emit_app_records(WorkerContext& w, const flow::Flow& f, int64_t ts_ns,
                              uint64_t pcap_cnt, const decode::Packet* p) {
    if (!w.app) {
        return;
    }
    const std::string& json = w.app->records_json();
    for (const applayer::AppRecord& r : w.app->records()) {
        if (!w.records) {
            break;
        }
        output::RecordEvent ev;
        ev.type = record_type_of(r.event_type);
        fill_from_flow(ev, f, r.dir);
        if (p != nullptr) {
            // Suricata's transaction records carry the VLAN tags of the packet that logs them
            // (with vlan.use-for-tracking false the two directions may differ).
            ev.vlan_count = std::min<uint8_t>(p->vlan_count, 2);
            ev.vlan_id[0] = p->vlan_id[0];
            ev.vlan_id[1] = p->vlan_id[1];
        }
        ev.ts_ns = ts_ns;
        ev.pcap_cnt = pcap_cnt;
        ev.in_iface = w.iface_index;
        ev.has_tx_id = r.has_tx_id;
        ev.tx_id = r.tx_id;
        w.records->push(ev, reinterpret_cast<const uint8_t*>(json.data()) + r.offset, r.len);
    }
    w.app->clear_records();
}

void Engine::log_flow_end(WorkerContext& w, flow::Flow& f, flow::FlowEndReason reason) {
    if (!w.records || f.eve_logged) {
        return;
    }
    f.eve_logged = true;
    if (w.app) {
        w.app->finish_records(f);
        emit_app_records(w, f, f.last_ts_ns, 0);
    }
    if (!config_.eve.types.flow) {
        return;
    }
    output::RecordEvent ev;
    ev.type = output::RecordType::kFlow;
    fill_from_flow(ev, f, flow::Direction::kToServer);
    ev.ts_ns = f.last_ts_ns;
    ev.in_iface = w.iface_index;
    ev.app_proto = w.app ? w.app->proto_name(f) : nullptr;
    output::FlowEnd& e = ev.flow;
    for (int d = 0; d < 2; ++d) {
        e.pkts[d] = f.pkts[d];
        e.bytes[d] = f.bytes[d];
        e.tcp_flags[d] = f.tcp_flags_seen[d];
    }
    e.start_ns = f.first_ts_ns;
    e.end_ns = f.last_ts_ns;
    e.state = flow_state_name(f);
    e.reason = reason == flow::FlowEndReason::kShutdown ? "shutdown"
               : reason == flow::FlowEndReason::kForced ? "forced"
                                                        : "timeout";
    e.alerted = f.alerted;
    e.action = f.action == flow::FlowAction::kDrop   ? "drop"
               : f.action == flow::FlowAction::kPass ? "pass"
                                                     : nullptr;
    if (f.proto == IPPROTO_TCP && w.stream) {
        const stream::SessionState s = w.stream->state(f);
        if (s != stream::SessionState::kNone) {
            e.tcp_state = stream::state_name(s);
        }
    }
    w.records->push(ev);
}

void Engine::log_packet_anomalies(WorkerContext& w, const decode::Packet& p, const flow::Flow* f,
                                  uint32_t stream_events) {
    if (!w.records) {
        return;
    }
    output::RecordEvent ev;
    ev.type = output::RecordType::kAnomaly;
    fill_from_packet(ev, p);
    ev.in_iface = w.iface_index;
    ev.flow_id = f != nullptr ? f->flow_id : 0;
    if (config_.eve.anomaly.decode) {
        ev.anomaly_type = "decode";
        for (uint8_t i = 0; i < p.event_count; ++i) {
            ev.anomaly_event = decode_event_name(p.events[i]);
            w.records->push(ev);
        }
    }
    if (config_.eve.anomaly.stream && stream_events != 0) {
        ev.anomaly_type = "stream";
        for (const auto& [bit, name] : kStreamAnomalies) {
            if (stream_events & bit) {
                ev.anomaly_event = name;
                w.records->push(ev);
            }
        }
    }
}

void Engine::log_drop(WorkerContext& w, const decode::Packet& p, flow::Flow* f,
                      const char* reason) {
    if (!w.records || !config_.eve.types.drop || p.ip_version == 0) {
        return;
    }
    if (f != nullptr) {
        // flows: start (Suricata's default) logs the first dropped packet of each direction
        // of a flow, and every packet a rule dropped itself; flows: all every one.
        const bool to_server = p.src == f->client_addr && p.sport == f->client_port;
        const uint8_t bit = to_server ? 1 : 2;
        if (!config_.eve.drop.flows_all && (f->eve_drop_logged & bit) != 0 &&
            w.drop_meta == nullptr) {
            return;
        }
        f->eve_drop_logged |= bit;
    }
    output::RecordEvent ev;
    ev.type = output::RecordType::kDrop;
    fill_from_packet(ev, p);
    ev.in_iface = w.iface_index;
    ev.flow_id = f != nullptr ? f->flow_id : 0;
    output::DropInfo& d = ev.drop;
    d.len = p.l3_len;
    d.tos = p.tos;
    d.ttl = p.ttl;
    d.ipid = p.ip_id;
    if (p.has(decode::kFlagTcp)) {
        d.tcp_flags = p.tcp_flags;
        d.tcpseq = p.tcp_seq;
        d.tcpack = p.tcp_ack;
        d.tcpwin = p.tcp_window;
        if (p.l4 != nullptr && p.l4_len >= 20) {
            d.tcpurgp = static_cast<uint16_t>((p.l4[18] << 8) | p.l4[19]);
        }
    } else if (p.has(decode::kFlagUdp)) {
        d.udplen = static_cast<uint16_t>(p.l4_len);
    }
    d.reason = reason;
    // alerts: the rule that dropped this packet (with or without noalert), as the "alert"
    // object; none on the later packets of a dropped flow (no rule ran on them).
    ev.rule = config_.eve.drop.alerts ? w.drop_meta : nullptr;
    w.records->push(ev);
}

size_t Engine::drain_records() {
    auto& o = *output_;
    size_t n = 0;
    for (output::RecordQueue* q : o.record_queues) {
        n += q->drain([&](const output::RecordEvent& ev) {
            o.line.clear();
            output::append_record_json(ev, o.record_options, o.line);
            if (o.eve) {
                o.eve->write_line(o.line);
            }
            ++o.records_written[static_cast<size_t>(ev.type)];
        });
    }
    if (o.eve) {
        o.sink_dropped.set(o.eve->sink().dropped());
    }
    return n;
}

}  // namespace picket::sensor::engine
