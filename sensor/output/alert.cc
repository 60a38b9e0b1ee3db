#include "sensor/output/output.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

#include "common/strings.h"
#include "common/time_util.h"
#include "sensor/output/json_util.h"
#include "sensor/output/record.h"

namespace picket::sensor::output {

namespace {

using strings::append_json_string;
using namespace json_util;

constexpr char kHex[] = "0123456789abcdef";

const char* pkt_src_name(PacketOrigin o) {
    // In PacketOrigin's order.
    static constexpr const char* kNames[] = {"wire/pcap", "defrag", "stream (flow timeout)",
                                             "stream (detect/log)"};
    const auto i = static_cast<size_t>(o);
    return i < std::size(kNames) ? kNames[i] : kNames[0];
}

// A name from a table of (number, name) pairs, or nullptr.
template <class T, size_t N>
const char* name_of(const std::pair<T, const char*> (&table)[N], T value) {
    for (const auto& [v, name] : table) {
        if (v == value) {
            return name;
        }
    }
    return nullptr;
}

// Suricata's DatalinkValueToName for the link types the decoder reads.
const char* linktype_name(int32_t linktype) {
    static constexpr std::pair<int32_t, const char*> kNames[] = {
        {0, "NULL"},   {1, "EN10MB"},      {12, "RAW"},   {14, "RAW"},   {101, "RAW"},
        {108, "LOOP"}, {113, "LINUX_SLL"}, {228, "IPv4"}, {229, "IPv6"}, {276, "LINUX_SLL2"},
    };
    return name_of(kNames, linktype);
}

// "packet_info":{"linktype":N,"linktype_name":"..."} with its leading comma.
void append_packet_info(std::string& out, int32_t linktype) {
    append_key(out, "packet_info");
    out += "{\"linktype\":";
    append_uint(out, static_cast<uint32_t>(linktype));
    if (const char* name = linktype_name(linktype)) {
        out += ",\"linktype_name\":\"";
        out += name;
        out.push_back('"');
    }
    out.push_back('}');
}

void append_metadata(std::string& out, const AlertMeta& m) {
    // {"key": ["v1", "v2"]}: keys in order of first appearance, values in rule order. Rules
    // carry a handful of pairs, so the quadratic scan is cheaper than a map.
    const auto& md = m.metadata;
    out += "{";
    const char* key_sep = "";
    for (size_t i = 0; i < md.size(); ++i) {
        const auto same_key = [&](const auto& kv) { return kv.first == md[i].first; };
        if (std::any_of(md.begin(), md.begin() + i, same_key)) {
            continue;  // the key's values went out with its first pair
        }
        out += key_sep;
        key_sep = ",";
        append_json_string(out, md[i].first);
        out += ":[";
        const char* value_sep = "";
        for (size_t j = i; j < md.size(); ++j) {
            if (same_key(md[j])) {
                out += value_sep;
                value_sep = ",";
                append_json_string(out, md[j].second);
            }
        }
        out += "]";
    }
    out += "}";
}

}  // namespace

const char* format_address(const decode::Address& a, char* buf) {
    if (a.is_v4()) {
        const uint8_t* v = a.v4();
        std::snprintf(buf, 46, "%u.%u.%u.%u", v[0], v[1], v[2], v[3]);
        return buf;
    }
    char* o = buf;
    for (int i = 0; i < 16; i += 2) {
        if (i != 0) {
            *o++ = ':';
        }
        *o++ = kHex[a.b[i] >> 4];
        *o++ = kHex[a.b[i] & 0xf];
        *o++ = kHex[a.b[i + 1] >> 4];
        *o++ = kHex[a.b[i + 1] & 0xf];
    }
    *o = '\0';
    return buf;
}

const char* proto_name(uint8_t proto) {
    static constexpr std::pair<uint8_t, const char*> kNames[] = {
        {0, "HOPOPT"},   {1, "ICMP"},  {2, "IGMP"},        {4, "IPV4"},        {6, "TCP"},
        {17, "UDP"},     {41, "IPV6"}, {43, "IPV6-ROUTE"}, {44, "IPV6-FRAG"},  {47, "GRE"},
        {50, "ESP"},     {51, "AH"},   {58, "IPV6-ICMP"},  {59, "IPV6-NONXT"}, {60, "IPV6-OPTS"},
        {89, "OSPFIGP"}, {103, "PIM"}, {112, "VRRP"},      {132, "SCTP"},      {136, "UDPLITE"},
    };
    return name_of(kNames, proto);
}

size_t xff_client_ip(std::string_view value, bool reverse, char* out) {
    out[0] = '\0';
    // Suricata's XFF_CHAIN_MINLEN / XFF_CHAIN_MAXLEN.
    if (value.size() < 7 || value.size() >= 256) {
        return 0;
    }
    // The chain stops at a NUL, as Suricata's C string does.
    value = value.substr(0, value.find('\0'));
    std::string_view ip = value;
    if (reverse) {
        size_t sp = value.rfind(' ');
        if (sp != std::string_view::npos) {
            ip = value.substr(sp + 1);
        }
    } else {
        ip = value.substr(0, value.find(','));
    }
    if (ip.empty()) {
        return 0;
    }
    if (ip.front() == '[') {
        size_t end = ip.find(']');
        if (end == std::string_view::npos) {
            return 0;
        }
        ip = ip.substr(1, end - 1);
    } else if (std::count(ip.begin(), ip.end(), '.') == 3 &&
               std::count(ip.begin(), ip.end(), ':') == 1) {
        ip = ip.substr(0, ip.find(':'));
    }
    if (ip.empty() || ip.size() >= kXffIpMax) {
        return 0;
    }
    char buf[kXffIpMax];
    std::memcpy(buf, ip.data(), ip.size());
    buf[ip.size()] = '\0';
    uint8_t bin[16];
    if (inet_pton(AF_INET, buf, bin) != 1 && inet_pton(AF_INET6, buf, bin) != 1) {
        return 0;
    }
    std::memcpy(out, buf, ip.size() + 1);
    return ip.size();
}

namespace {

// The record's start, as Suricata 7's CreateEveHeader writes it: timestamp, flow_id, in_iface,
// pcap_cnt, event_type, vlan.
void append_eve_header(const AlertEvent& ev, const AlertOutputOptions& options,
                       const char* event_type, std::string& out) {
    out += "{\"timestamp\":";
    append_timestamp(out, ev.ts_ns);
    if (ev.flow_id != 0) {
        append_key(out, "flow_id");
        append_uint(out, ev.flow_id);
    }
    if (ev.in_iface != kNoInterface && ev.in_iface < options.interfaces.size()) {
        append_key(out, "in_iface");
        append_json_string(out, options.interfaces[ev.in_iface]);
    }
    if (ev.pcap_cnt != 0) {
        append_key(out, "pcap_cnt");
        append_uint(out, ev.pcap_cnt);
    }
    out += ",\"event_type\":\"";
    out += event_type;
    out.push_back('"');
    append_vlan(out, ev.vlan_id, ev.vlan_count);
}

// community_id and the ether object, when on: the same in alert and packet records.
void append_community_id_and_ether(const AlertEvent& ev, const AlertOutputOptions& options,
                                   std::string& out) {
    if (options.community_id && ev.ip_version != 0) {
        const bool icmp = is_icmp(ev.proto);
        append_community_id(ev.src, ev.dst, icmp ? ev.icmp_type : ev.sport,
                            icmp ? ev.icmp_code : ev.dport, ev.proto, options.community_id_seed,
                            out);
    }
    if (options.ethernet && ev.linktype == 1 && ev.packet_len >= 14) {
        char mac[64];
        const uint8_t* m = ev.packet;
        std::snprintf(mac, sizeof(mac),
                      ",\"ether\":{\"src_mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\",", m[6], m[7],
                      m[8], m[9], m[10], m[11]);
        out += mac;
        std::snprintf(mac, sizeof(mac), "\"dest_mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\"}", m[0],
                      m[1], m[2], m[3], m[4], m[5]);
        out += mac;
    }
}

}  // namespace

void append_alert_json(const AlertEvent& ev, const AlertOutputOptions& options, std::string& out) {
    // Field order follows Suricata 7's CreateEveHeader + AlertJson.
    append_eve_header(ev, options, "alert", out);
    if (ev.ip_version != 0) {
        char ip[46];
        // xff overwrite: the client side's address is the one the proxy reported.
        const bool xff_over = options.xff.enabled && options.xff.mode == XffMode::kOverwrite &&
                              ev.xff_len != 0 && ev.xff_len < kXffIpMax;
        const std::string_view xff(ev.xff, xff_over ? ev.xff_len : 0);
        const bool xff_dst = ev.direction == AlertDirection::kToClient;
        auto endpoint = [&](const char* ip_key, const decode::Address& a, bool use_xff,
                            const char* port_key, uint16_t port) {
            append_key(out, ip_key);
            append_json_string(out, use_xff ? xff : std::string_view(format_address(a, ip)));
            if (has_ports(ev.proto)) {
                append_key(out, port_key);
                append_uint(out, port);
            }
        };
        endpoint("src_ip", ev.src, xff_over && !xff_dst, "src_port", ev.sport);
        endpoint("dest_ip", ev.dst, xff_over && xff_dst, "dest_port", ev.dport);
        append_key(out, "proto");
        if (const char* name = proto_name(ev.proto)) {
            out.push_back('"');
            out += name;
            out.push_back('"');
        } else {
            out.push_back('"');
            append_uint(out, ev.proto);
            out.push_back('"');
        }
        if (is_icmp(ev.proto)) {
            append_key(out, "icmp_type");
            append_uint(out, ev.icmp_type);
            append_key(out, "icmp_code");
            append_uint(out, ev.icmp_code);
        }
    }
    append_key(out, "pkt_src");
    append_json_string(out, pkt_src_name(ev.origin));
    if (ev.has_tx_id) {
        append_key(out, "tx_id");
        append_uint(out, ev.tx_id);
    }
    append_community_id_and_ether(ev, options, out);

    append_key(out, "alert");
    out += "{\"action\":";
    out += ev.action == AlertAction::kBlocked ? "\"blocked\"" : "\"allowed\"";
    static const AlertMeta kNoMeta{};
    const AlertMeta& m = ev.meta != nullptr ? *ev.meta : kNoMeta;
    append_key(out, "gid");
    append_uint(out, m.gid);
    append_key(out, "signature_id");
    append_uint(out, m.sid);
    append_key(out, "rev");
    append_uint(out, m.rev);
    append_key(out, "signature");
    append_json_string(out, m.signature);
    append_key(out, "category");
    append_json_string(out, m.category);
    append_key(out, "severity");
    if (m.severity < 0) {
        out.push_back('-');
        append_uint(out, static_cast<uint64_t>(-static_cast<int64_t>(m.severity)));
    } else {
        append_uint(out, static_cast<uint64_t>(m.severity));
    }
    if (options.rule_metadata && !m.metadata.empty()) {
        append_key(out, "metadata");
        append_metadata(out, m);
    }
    if (options.xff.enabled && options.xff.mode == XffMode::kExtraData && ev.xff_len != 0 &&
        ev.xff_len < kXffIpMax) {
        append_key(out, "xff");
        append_json_string(out, std::string_view(ev.xff, ev.xff_len));
    }
    out.push_back('}');

    if (ev.app_json_len != 0) {
        out.push_back(',');
        out.append(reinterpret_cast<const char*>(ev.app_json), ev.app_json_len);
    }
    if (ev.app_proto != nullptr) {
        append_key(out, "app_proto");
        append_json_string(out, ev.app_proto);
    }
    if (ev.direction != AlertDirection::kUnknown) {
        append_key(out, "direction");
        out += ev.direction == AlertDirection::kToServer ? "\"to_server\"" : "\"to_client\"";
    }
    if (ev.has_flow) {
        out += ",\"flow\":{\"pkts_toserver\":";
        append_uint(out, ev.flow_pkts[0]);
        out += ",\"pkts_toclient\":";
        append_uint(out, ev.flow_pkts[1]);
        out += ",\"bytes_toserver\":";
        append_uint(out, ev.flow_bytes[0]);
        out += ",\"bytes_toclient\":";
        append_uint(out, ev.flow_bytes[1]);
        out += ",\"start\":";
        append_timestamp(out, ev.flow_start_ns);
        if (ev.direction != AlertDirection::kUnknown && ev.ip_version != 0) {
            // The flow's own direction (its client as src), whichever way the packet went.
            const bool to_server = ev.direction == AlertDirection::kToServer;
            char addr[46];
            append_key(out, "src_ip");
            append_json_string(out, format_address(to_server ? ev.src : ev.dst, addr));
            append_key(out, "dest_ip");
            append_json_string(out, format_address(to_server ? ev.dst : ev.src, addr));
            if (has_ports(ev.proto)) {
                append_key(out, "src_port");
                append_uint(out, to_server ? ev.sport : ev.dport);
                append_key(out, "dest_port");
                append_uint(out, to_server ? ev.dport : ev.sport);
            }
        }
        if (ev.flow_action != nullptr) {
            append_key(out, "action");
            append_json_string(out, ev.flow_action);
        }
        out.push_back('}');
    }
    if (options.payload || options.payload_printable) {
        if (options.payload) {
            append_key(out, "payload");
            append_base64(out, ev.payload, ev.payload_len);
        }
        if (options.payload_printable) {
            append_key(out, "payload_printable");
            append_printable(out, ev.payload, ev.payload_len);
        }
        append_key(out, "stream");
        out.push_back(ev.stream ? '1' : '0');
    }
    if (options.packet) {
        append_key(out, "packet");
        append_base64(out, ev.packet, ev.packet_len);
        append_packet_info(out, ev.linktype);
    }
    if (ev.verdict != AlertVerdict::kNone) {
        // Suricata 7's EveAddVerdict: a reject is a drop in IPS mode, with its target and the
        // kind of response sent.
        append_key(out, "verdict");
        out += "{\"action\":";
        out += ev.verdict == AlertVerdict::kDrop   ? "\"drop\""
               : ev.verdict == AlertVerdict::kPass ? "\"pass\""
                                                   : "\"alert\"";
        if (ev.reject) {
            out += ",\"reject-target\":";
            out += ev.reject_target == RejectTargetName::kToClient   ? "\"to_client\""
                   : ev.reject_target == RejectTargetName::kToServer ? "\"to_server\""
                                                                     : "\"both\"";
            out += ",\"reject\":[";
            out += ev.proto == 6 ? "\"tcp-reset\"" : "\"icmp-prohib\"";
            out.push_back(']');
        }
        out.push_back('}');
    }
    out.push_back('}');
}

void append_packet_json(const AlertEvent& ev, const AlertOutputOptions& options, std::string& out) {
    // Suricata 7's CreateEveHeader (LOG_DIR_PACKET) then EvePacket.
    append_eve_header(ev, options, "packet", out);
    if (ev.ip_version != 0) {
        char ip[46];
        append_key(out, "src_ip");
        append_json_string(out, format_address(ev.src, ip));
        if (has_ports(ev.proto)) {
            append_key(out, "src_port");
            append_uint(out, ev.sport);
        }
        append_key(out, "dest_ip");
        append_json_string(out, format_address(ev.dst, ip));
        if (has_ports(ev.proto)) {
            append_key(out, "dest_port");
            append_uint(out, ev.dport);
        }
        append_key(out, "proto");
        out.push_back('"');
        if (const char* name = proto_name(ev.proto)) {
            out += name;
        } else {
            append_uint(out, ev.proto);
        }
        out.push_back('"');
        if (is_icmp(ev.proto)) {
            append_key(out, "icmp_type");
            append_uint(out, ev.icmp_type);
            append_key(out, "icmp_code");
            append_uint(out, ev.icmp_code);
        }
    }
    append_key(out, "pkt_src");
    append_json_string(out, pkt_src_name(ev.origin));
    append_community_id_and_ether(ev, options, out);
    append_key(out, "packet");
    append_base64(out, ev.packet, ev.packet_len);
    append_packet_info(out, ev.linktype);
    out.push_back('}');
}

AlertSink::AlertSink(EveWriter* eve, FastLogWriter* fast, AlertOutputOptions options)
    : eve_(eve), fast_(fast), options_(std::move(options)) {
    json_.reserve(4096);
}

void AlertSink::write(const AlertEvent& ev) {
    if (ev.tagged) {
        if (eve_ != nullptr) {
            json_.clear();
            append_packet_json(ev, options_, json_);
            eve_->write_line(json_);
            ++tagged_written_;
        }
        return;
    }
    if (eve_ != nullptr) {
        json_.clear();
        append_alert_json(ev, options_, json_);
        eve_->write_line(json_);
    }
    if (fast_ != nullptr) {
        fast_->write(ev);
    }
    ++written_;
}

size_t AlertSink::drain(const std::vector<AlertQueue*>& queues, size_t max_per_queue) {
    size_t n = 0;
    for (AlertQueue* q : queues) {
        n += q->drain([this](const AlertEvent& ev) { write(ev); }, max_per_queue);
    }
    return n;
}

}  // namespace picket::sensor::output
