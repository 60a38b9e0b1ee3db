// RecordQueue and the rendering of flow, drop, anomaly and protocol records.
#include "sensor/output/record.h"

#include <openssl/evp.h>

#include <stdexcept>
#include <type_traits>

#include "common/strings.h"
#include "sensor/output/json_util.h"
#include "sensor/output/output.h"

namespace picket::sensor::output {

static_assert(std::is_trivially_copyable_v<RecordEvent>, "RecordQueue copies events by memcpy");

using namespace json_util;
using strings::append_json_string;

const char* record_type_name(RecordType t) {
    static constexpr const char* kNames[] = {"http", "dns",  "tls", "fileinfo", "anomaly",
                                             "flow", "drop", "ssh", "ftp",      "ftp_data"};
    const auto i = static_cast<size_t>(t);
    return i < std::size(kNames) ? kNames[i] : "unknown";
}

namespace {

size_t checked_size(size_t ring_bytes) {
    const size_t size = ring_bytes & ~(ByteRing::kCacheLine - 1);
    if (size < (64u << 10)) {
        throw std::invalid_argument("record queue: " + std::to_string(ring_bytes) +
                                    " bytes is below the minimum 65536");
    }
    return size;
}

void append_bool(std::string& out, const char* key, bool v) {
    append_key(out, key);
    out += v ? "true" : "false";
}

void append_num(std::string& out, const char* key, uint64_t v) {
    append_key(out, key);
    append_uint(out, v);
}

void append_hex2(std::string& out, uint8_t v) {
    static constexpr char kHexDigits[] = "0123456789abcdef";
    out.push_back('"');
    out.push_back(kHexDigits[v >> 4]);
    out.push_back(kHexDigits[v & 15]);
    out.push_back('"');
}

// The flag members Suricata writes for TCP (syn, fin, rst, psh, ack, urg, ecn, cwr), only
// those set.
void append_tcp_flag_members(std::string& out, uint8_t flags) {
    static constexpr std::pair<uint8_t, const char*> kFlags[] = {
        {0x02, "syn"}, {0x01, "fin"}, {0x04, "rst"}, {0x08, "psh"},
        {0x10, "ack"}, {0x20, "urg"}, {0x40, "ecn"}, {0x80, "cwr"},
    };
    for (const auto& [bit, name] : kFlags) {
        if (flags & bit) {
            append_bool(out, name, true);
        }
    }
}

void append_mac(std::string& out, const uint8_t* m) {
    char buf[24];
    const int n = std::snprintf(buf, sizeof(buf), "\"%02x:%02x:%02x:%02x:%02x:%02x\"", m[0], m[1],
                                m[2], m[3], m[4], m[5]);
    out.append(buf, static_cast<size_t>(n));
}

// The ICMP type that answers `type` (echo request <-> reply, ...), for Community ID; -1: none.
int icmp_counterpart(uint8_t proto, uint8_t type) {
    static constexpr std::pair<uint8_t, uint8_t> kV4[] = {{8, 0},   {0, 8},   {13, 14}, {14, 13},
                                                          {15, 16}, {16, 15}, {10, 9},  {9, 10},
                                                          {17, 18}, {18, 17}};
    static constexpr std::pair<uint8_t, uint8_t> kV6[] = {
        {128, 129}, {129, 128}, {133, 134}, {134, 133}, {135, 136},
        {136, 135}, {130, 131}, {131, 130}, {144, 145}, {145, 144}};
    if (proto == 1) {
        for (const auto& [a, b] : kV4) {
            if (a == type) {
                return b;
            }
        }
    } else {
        for (const auto& [a, b] : kV6) {
            if (a == type) {
                return b;
            }
        }
    }
    return -1;
}

}  // namespace

std::string community_id(const decode::Address& src, const decode::Address& dst, uint16_t sport,
                         uint16_t dport, uint8_t proto, uint16_t seed) {
    const size_t alen = src.is_v4() ? 4 : 16;
    const uint8_t* sa = src.is_v4() ? src.b + 12 : src.b;
    const uint8_t* da = dst.is_v4() ? dst.b + 12 : dst.b;
    bool one_way = false;
    if (is_icmp(proto)) {
        // sport/dport carry ICMP type/code here.
        const int other = icmp_counterpart(proto, static_cast<uint8_t>(sport));
        if (other >= 0) {
            dport = static_cast<uint16_t>(other);
        } else {
            one_way = true;
        }
    }
    // Endpoints in order: the smaller address (then port) first.
    const int c = std::memcmp(sa, da, alen);
    if (!one_way && (c > 0 || (c == 0 && sport > dport))) {
        std::swap(sa, da);
        std::swap(sport, dport);
    }
    uint8_t buf[2 + 16 + 16 + 2 + 4];
    size_t n = 0;
    buf[n++] = static_cast<uint8_t>(seed >> 8);
    buf[n++] = static_cast<uint8_t>(seed);
    std::memcpy(buf + n, sa, alen);
    n += alen;
    std::memcpy(buf + n, da, alen);
    n += alen;
    buf[n++] = proto;
    buf[n++] = 0;
    const bool ports = has_ports(proto) || is_icmp(proto);
    if (ports) {
        buf[n++] = static_cast<uint8_t>(sport >> 8);
        buf[n++] = static_cast<uint8_t>(sport);
        buf[n++] = static_cast<uint8_t>(dport >> 8);
        buf[n++] = static_cast<uint8_t>(dport);
    }
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    EVP_Digest(buf, n, digest, &dlen, EVP_sha1(), nullptr);
    std::string out;
    append_base64(out, digest, dlen);  // quoted
    return "1:" + out.substr(1, out.size() - 2);
}

void append_community_id(const decode::Address& src, const decode::Address& dst, uint16_t sport,
                         uint16_t dport, uint8_t proto, uint16_t seed, std::string& out) {
    append_key(out, "community_id");
    append_json_string(out, community_id(src, dst, sport, dport, proto, seed));
}

void append_record_json(const RecordEvent& ev, const RecordOptions& options, std::string& out) {
    // Suricata 7's CreateEveHeader order: timestamp, flow_id, in_iface, pcap_cnt, event_type,
    // vlan, addresses, proto, ICMP, pkt_src, tx_id; then the record's own members.
    const bool is_flow = ev.type == RecordType::kFlow;
    out += "{\"timestamp\":";
    append_timestamp(out, ev.ts_ns);
    if (ev.flow_id != 0) {
        append_num(out, "flow_id", ev.flow_id);
    }
    if (options.interfaces != nullptr && ev.in_iface < options.interfaces->size()) {
        append_key(out, "in_iface");
        append_json_string(out, (*options.interfaces)[ev.in_iface]);
    }
    if (ev.pcap_cnt != 0 && !is_flow) {
        append_num(out, "pcap_cnt", ev.pcap_cnt);
    }
    out += ",\"event_type\":\"";
    out += record_type_name(ev.type);
    out.push_back('"');
    append_vlan(out, ev.vlan_id, ev.vlan_count);
    if (ev.ip_version != 0) {
        char ip[46];
        append_key(out, "src_ip");
        append_json_string(out, format_address(ev.src, ip));
        if (has_ports(ev.proto)) {
            append_num(out, "src_port", ev.sport);
        }
        append_key(out, "dest_ip");
        append_json_string(out, format_address(ev.dst, ip));
        if (has_ports(ev.proto)) {
            append_num(out, "dest_port", ev.dport);
        }
        append_key(out, "proto");
        append_proto(out, ev.proto, proto_name(ev.proto));
        // A flow record knows no ICMP type (echo flows are keyed by their identifier).
        if (is_icmp(ev.proto) && !is_flow) {
            append_num(out, "icmp_type", ev.icmp_type);
            append_num(out, "icmp_code", ev.icmp_code);
        }
    }
    if (!is_flow && ev.ip_version != 0 && ev.type != RecordType::kAnomaly) {
        append_key(out, "pkt_src");
        append_json_string(out, "wire/pcap");
    }
    if (ev.has_tx_id) {
        append_num(out, "tx_id", ev.tx_id);
    }
    if (options.community_id && ev.ip_version != 0) {
        const bool icmp = is_icmp(ev.proto);
        append_community_id(ev.src, ev.dst, icmp ? ev.icmp_type : ev.sport,
                            icmp ? ev.icmp_code : ev.dport, ev.proto, options.community_id_seed,
                            out);
    }
    if (options.ethernet && ev.has_ether) {
        out += ",\"ether\":{\"src_mac\":";
        append_mac(out, ev.src_mac);
        out += ",\"dest_mac\":";
        append_mac(out, ev.dst_mac);
        out.push_back('}');
    }
    switch (ev.type) {
        case RecordType::kFlow: {
            const FlowEnd& f = ev.flow;
            if (ev.app_proto != nullptr) {
                append_key(out, "app_proto");
                append_json_string(out, ev.app_proto);
            }
            out += ",\"flow\":{\"pkts_toserver\":";
            append_uint(out, f.pkts[0]);
            append_num(out, "pkts_toclient", f.pkts[1]);
            append_num(out, "bytes_toserver", f.bytes[0]);
            append_num(out, "bytes_toclient", f.bytes[1]);
            append_key(out, "start");
            append_timestamp(out, f.start_ns);
            append_key(out, "end");
            append_timestamp(out, f.end_ns);
            const int64_t age = (f.end_ns - f.start_ns) / 1000000000;
            append_num(out, "age", static_cast<uint64_t>(age > 0 ? age : 0));
            append_key(out, "state");
            append_json_string(out, f.state);
            append_key(out, "reason");
            append_json_string(out, f.reason);
            append_bool(out, "alerted", f.alerted);
            if (f.action != nullptr) {
                append_key(out, "action");
                append_json_string(out, f.action);
            }
            out.push_back('}');
            if (ev.proto == 6) {
                out += ",\"tcp\":{\"tcp_flags\":";
                append_hex2(out, static_cast<uint8_t>(f.tcp_flags[0] | f.tcp_flags[1]));
                append_key(out, "tcp_flags_ts");
                append_hex2(out, f.tcp_flags[0]);
                append_key(out, "tcp_flags_tc");
                append_hex2(out, f.tcp_flags[1]);
                append_tcp_flag_members(out, static_cast<uint8_t>(f.tcp_flags[0] | f.tcp_flags[1]));
                if (f.tcp_state != nullptr) {
                    append_key(out, "state");
                    append_json_string(out, f.tcp_state);
                }
                out.push_back('}');
            }
            break;
        }
        case RecordType::kDrop: {
            const DropInfo& d = ev.drop;
            out += ",\"drop\":{\"len\":";
            append_uint(out, d.len);
            if (ev.ip_version == 4) {
                append_num(out, "tos", d.tos);
                append_num(out, "ttl", d.ttl);
                append_num(out, "ipid", d.ipid);
            } else if (ev.ip_version == 6) {
                append_num(out, "tc", d.tos);
                append_num(out, "hoplimit", d.ttl);
            }
            if (ev.proto == 6) {
                append_num(out, "tcpseq", d.tcpseq);
                append_num(out, "tcpack", d.tcpack);
                append_num(out, "tcpwin", d.tcpwin);
                append_bool(out, "syn", d.tcp_flags & 0x02);
                append_bool(out, "ack", d.tcp_flags & 0x10);
                append_bool(out, "psh", d.tcp_flags & 0x08);
                append_bool(out, "rst", d.tcp_flags & 0x04);
                append_bool(out, "urg", d.tcp_flags & 0x20);
                append_bool(out, "fin", d.tcp_flags & 0x01);
                append_num(out, "tcpres", 0);
                append_num(out, "tcpurgp", d.tcpurgp);
            } else if (ev.proto == 17) {
                append_num(out, "udplen", d.udplen);
            }
            append_key(out, "reason");
            append_json_string(out, d.reason);
            out.push_back('}');
            if (ev.rule != nullptr) {
                const AlertMeta& m = *ev.rule;
                out += ",\"alert\":{\"action\":\"blocked\",\"gid\":";
                append_uint(out, m.gid);
                append_num(out, "signature_id", m.sid);
                append_num(out, "rev", m.rev);
                append_key(out, "signature");
                append_json_string(out, m.signature);
                append_key(out, "category");
                append_json_string(out, m.category);
                append_num(out, "severity", static_cast<uint64_t>(m.severity));
                out.push_back('}');
            }
            break;
        }
        case RecordType::kAnomaly:
            if (ev.anomaly_event != nullptr) {
                out += ",\"anomaly\":{\"type\":";
                append_json_string(out, ev.anomaly_type != nullptr ? ev.anomaly_type : "decode");
                append_key(out, "event");
                append_json_string(out, ev.anomaly_event);
                out.push_back('}');
                break;
            }
            [[fallthrough]];
        default:
            if (ev.body_len != 0) {
                out.push_back(',');
                out.append(reinterpret_cast<const char*>(ev.body), ev.body_len);
            }
            break;
    }
    out.push_back('}');
}

RecordQueue::RecordQueue(size_t ring_bytes) : ring_(checked_size(ring_bytes)) {}

bool RecordQueue::push(const RecordEvent& ev, const uint8_t* body, uint32_t body_len) {
    const auto t = static_cast<size_t>(ev.type);
    if (body == nullptr) {
        body_len = 0;
    }
    uint8_t* at = body_len <= ring_.capacity() / 4
                      ? ring_.reserve(sizeof(RecordEvent) + body_len, static_cast<uint32_t>(t))
                      : nullptr;
    if (at == nullptr) {
        ++dropped_[t];
        return false;
    }
    RecordEvent copy = ev;
    copy.body = nullptr;
    copy.body_len = body_len;
    std::memcpy(at, &copy, sizeof(RecordEvent));
    if (body_len != 0) {
        std::memcpy(at + sizeof(RecordEvent), body, body_len);
    }
    ring_.commit();
    ++pushed_[t];
    return true;
}

}  // namespace picket::sensor::output
