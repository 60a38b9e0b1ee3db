// EVE alert JSON and fast.log rendering: exact field values against Suricata 7's layout.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sensor/output/output.h"

namespace picket::sensor::output {
namespace {

using nlohmann::json;

constexpr int64_t kTs = 1704164645123456789;  // 2024-01-02T03:04:05.123456789Z

decode::Address v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t p[4] = {a, b, c, d};
    return decode::Address::from_v4(p);
}

decode::Address v6(std::initializer_list<uint8_t> bytes) {
    uint8_t p[16] = {};
    size_t i = 0;
    for (uint8_t x : bytes) {
        p[i++] = x;
    }
    return decode::Address::from_v6(p);
}

AlertMeta make_meta() {
    AlertMeta m;
    m.gid = 1;
    m.sid = 2000001;
    m.rev = 3;
    m.signature = "ET TEST something \"quoted\"";
    m.category = "Attempted Information Leak";
    m.severity = 2;
    return m;
}

AlertEvent tcp_event(const AlertMeta* meta) {
    AlertEvent ev;
    ev.ts_ns = kTs;
    ev.flow_id = 1234567890123;
    ev.pcap_cnt = 7;
    ev.src = v4(10, 0, 0, 1);
    ev.dst = v4(192, 168, 1, 20);
    ev.sport = 49152;
    ev.dport = 80;
    ev.ip_version = 4;
    ev.proto = 6;
    ev.direction = AlertDirection::kToServer;
    ev.app_proto = "http";
    ev.meta = meta;
    return ev;
}

std::string render(const AlertEvent& ev, const AlertOutputOptions& opt = {}) {
    std::string out;
    append_alert_json(ev, opt, out);
    return out;
}

std::string fast_line(const AlertEvent& ev) {
    std::string out;
    FastLogWriter::format(ev, out);
    return out;
}

TEST(AlertJson, TcpIpv4ExactLine) {
    const AlertMeta meta = make_meta();
    const AlertEvent ev = tcp_event(&meta);
    EXPECT_EQ(render(ev),
              "{\"timestamp\":\"2024-01-02T03:04:05.123456+0000\",\"flow_id\":1234567890123,"
              "\"pcap_cnt\":7,\"event_type\":\"alert\",\"src_ip\":\"10.0.0.1\",\"src_port\":49152,"
              "\"dest_ip\":\"192.168.1.20\",\"dest_port\":80,\"proto\":\"TCP\",\"pkt_src\":"
              "\"wire/pcap\",\"alert\":{\"action\":\"allowed\",\"gid\":1,\"signature_id\":2000001,"
              "\"rev\":3,\"signature\":\"ET TEST something \\\"quoted\\\"\",\"category\":"
              "\"Attempted Information Leak\",\"severity\":2},\"app_proto\":\"http\","
              "\"direction\":\"to_server\"}");
}

// Suricata's alert "flow" object: the flow's counters as of the alert and its start.
TEST(AlertJson, FlowObjectAfterDirection) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.has_flow = true;
    ev.flow_pkts[0] = 4;
    ev.flow_pkts[1] = 2;
    ev.flow_bytes[0] = 379;
    ev.flow_bytes[1] = 1588;
    ev.flow_start_ns = 1255711456083524000;  // 2009-10-16T16:44:16.083524
    const std::string line = render(ev);
    EXPECT_NE(line.find("\"direction\":\"to_server\",\"flow\":{\"pkts_toserver\":4,"
                        "\"pkts_toclient\":2,\"bytes_toserver\":379,\"bytes_toclient\":1588,"
                        "\"start\":\"2009-10-16T16:44:16.083524+0000\",\"src_ip\":\"10.0.0.1\","
                        "\"dest_ip\":\"192.168.1.20\",\"src_port\":49152,\"dest_port\":80}}"),
              std::string::npos)
        << line;
}

// On a to-client packet the flow object still names the flow's client as src (the packet's
// dest), and a flow whose action a rule set says so.
TEST(AlertJson, FlowObjectKeepsTheFlowsDirectionAndAction) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    std::swap(ev.src, ev.dst);
    std::swap(ev.sport, ev.dport);
    ev.direction = AlertDirection::kToClient;
    ev.has_flow = true;
    ev.flow_start_ns = 1255711456083524000;
    ev.flow_action = "drop";
    const json j = json::parse(render(ev));
    EXPECT_EQ(j["src_ip"], "192.168.1.20");
    EXPECT_EQ(j["src_port"], 80);
    const json& f = j["flow"];
    EXPECT_EQ(f["src_ip"], "10.0.0.1");
    EXPECT_EQ(f["src_port"], 49152);
    EXPECT_EQ(f["dest_ip"], "192.168.1.20");
    EXPECT_EQ(f["dest_port"], 80);
    EXPECT_EQ(f["action"], "drop");
    // ICMP: addresses, no ports; no action unless set.
    ev.proto = 1;
    ev.flow_action = nullptr;
    const json icmp = json::parse(render(ev))["flow"];
    EXPECT_EQ(icmp["src_ip"], "10.0.0.1");
    EXPECT_FALSE(icmp.contains("src_port"));
    EXPECT_FALSE(icmp.contains("action"));
}

TEST(AlertJson, OptionalHeaderFieldsOmittedWhenUnknown) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.flow_id = 0;
    ev.pcap_cnt = 0;
    ev.app_proto = nullptr;
    ev.direction = AlertDirection::kUnknown;
    const json j = json::parse(render(ev));
    EXPECT_FALSE(j.contains("flow_id"));
    EXPECT_FALSE(j.contains("pcap_cnt"));
    EXPECT_FALSE(j.contains("app_proto"));
    EXPECT_FALSE(j.contains("direction"));
    EXPECT_FALSE(j.contains("flow"));
    EXPECT_FALSE(j.contains("vlan"));
    EXPECT_FALSE(j.contains("in_iface"));
    EXPECT_FALSE(j.contains("payload"));
    EXPECT_FALSE(j.contains("packet"));
    EXPECT_FALSE(j.contains("stream"));
    EXPECT_FALSE(j["alert"].contains("metadata"));
}

TEST(AlertJson, UdpBlockedToClientWithInterfaceAndTxId) {
    AlertMeta meta = make_meta();
    meta.category = "";
    meta.severity = 3;
    AlertEvent ev = tcp_event(&meta);
    ev.proto = 17;
    ev.sport = 53;
    ev.dport = 33000;
    ev.app_proto = "dns";
    ev.direction = AlertDirection::kToClient;
    ev.action = AlertAction::kBlocked;
    ev.in_iface = 1;
    ev.has_tx_id = true;
    ev.tx_id = 4;
    AlertOutputOptions opt;
    opt.interfaces = {"eth0", "eth1"};
    const json j = json::parse(render(ev, opt));
    EXPECT_EQ(j["proto"], "UDP");
    EXPECT_EQ(j["src_port"], 53);
    EXPECT_EQ(j["dest_port"], 33000);
    EXPECT_EQ(j["in_iface"], "eth1");
    EXPECT_EQ(j["tx_id"], 4);
    EXPECT_EQ(j["direction"], "to_client");
    EXPECT_EQ(j["app_proto"], "dns");
    EXPECT_EQ(j["alert"]["action"], "blocked");
    EXPECT_EQ(j["alert"]["category"], "");
    EXPECT_EQ(j["alert"]["severity"], 3);
}

TEST(AlertJson, IcmpPrintsTypeAndCodeInsteadOfPorts) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.proto = 1;
    ev.sport = 0;
    ev.dport = 0;
    ev.icmp_type = 8;
    ev.icmp_code = 0;
    ev.app_proto = nullptr;
    const json j = json::parse(render(ev));
    EXPECT_EQ(j["proto"], "ICMP");
    EXPECT_FALSE(j.contains("src_port"));
    EXPECT_FALSE(j.contains("dest_port"));
    EXPECT_EQ(j["icmp_type"], 8);
    EXPECT_EQ(j["icmp_code"], 0);
}

TEST(AlertJson, Ipv6FullAddressesAndIcmpv6) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.ip_version = 6;
    ev.src = v6({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x0c, 0x29, 0xff, 0xfe, 0xf3, 0xcf, 0x38});
    ev.dst = v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    json j = json::parse(render(ev));
    EXPECT_EQ(j["src_ip"], "fe80:0000:0000:0000:020c:29ff:fef3:cf38");
    EXPECT_EQ(j["dest_ip"], "2001:0db8:0000:0000:0000:0000:0000:0001");
    EXPECT_EQ(j["proto"], "TCP");
    ev.proto = 58;
    ev.icmp_type = 128;
    ev.icmp_code = 0;
    j = json::parse(render(ev));
    EXPECT_EQ(j["proto"], "IPV6-ICMP");
    EXPECT_EQ(j["icmp_type"], 128);
    EXPECT_FALSE(j.contains("src_port"));
}

TEST(AlertJson, UnknownProtocolIsANumberString) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.proto = 253;
    const json j = json::parse(render(ev));
    EXPECT_EQ(j["proto"], "253");
    EXPECT_FALSE(j.contains("src_port"));
    EXPECT_FALSE(j.contains("icmp_type"));
}

TEST(AlertJson, VlanIds) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.vlan_count = 1;
    ev.vlan_id[0] = 100;
    EXPECT_EQ(json::parse(render(ev))["vlan"], json::array({100}));
    ev.vlan_count = 2;
    ev.vlan_id[1] = 4094;
    const std::string line = render(ev);
    EXPECT_NE(line.find("\"event_type\":\"alert\",\"vlan\":[100,4094],\"src_ip\""),
              std::string::npos);
}

TEST(AlertJson, MetadataGroupsValuesByKeyInFirstSeenOrder) {
    AlertMeta meta = make_meta();
    meta.metadata = {{"created_at", "2010_07_30"},
                     {"affected_product", "Any"},
                     {"created_at", "2011_01_01"},
                     {"signature_severity", "Major"}};
    const AlertEvent ev = tcp_event(&meta);
    const std::string line = render(ev);
    EXPECT_NE(line.find("\"severity\":2,\"metadata\":{\"created_at\":[\"2010_07_30\","
                        "\"2011_01_01\"],\"affected_product\":[\"Any\"],"
                        "\"signature_severity\":[\"Major\"]}}"),
              std::string::npos)
        << line;
    AlertOutputOptions off;
    off.rule_metadata = false;
    EXPECT_FALSE(json::parse(render(ev, off))["alert"].contains("metadata"));
}

TEST(AlertJson, PayloadBase64PrintableAndPacket) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    const uint8_t payload[] = {'G', 'E', 'T', ' ', '/', '\r', '\n', 0x00, 0x7f, 0xff, '"', '\\'};
    const uint8_t packet[] = {0xde, 0xad, 0xbe, 0xef, 0x01};
    ev.payload = payload;
    ev.payload_len = sizeof(payload);
    ev.packet = packet;
    ev.packet_len = sizeof(packet);
    ev.linktype = 1;
    AlertOutputOptions opt;
    opt.payload = true;
    opt.payload_printable = true;
    opt.packet = true;
    const std::string line = render(ev, opt);
    const json j = json::parse(line);
    EXPECT_EQ(j["payload"], "R0VUIC8NCgB//yJc");
    EXPECT_EQ(j["payload_printable"], "GET /\r\n...\"\\");
    EXPECT_EQ(j["stream"], 0);
    EXPECT_EQ(j["packet"], "3q2+7wE=");
    EXPECT_EQ(j["packet_info"], json({{"linktype", 1}, {"linktype_name", "EN10MB"}}));
    // Suricata's order: payload, payload_printable, stream, packet, packet_info.
    EXPECT_LT(line.find("\"payload\""), line.find("\"payload_printable\""));
    EXPECT_LT(line.find("\"payload_printable\""), line.find("\"stream\""));
    EXPECT_LT(line.find("\"stream\""), line.find("\"packet\""));
}

TEST(AlertJson, Base64Padding) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    AlertOutputOptions opt;
    opt.payload = true;
    const uint8_t abc[] = {'A', 'B', 'C', 'D'};
    ev.payload = abc;
    const std::vector<std::string> expect = {"", "QQ==", "QUI=", "QUJD", "QUJDRA=="};
    for (uint32_t n = 0; n < expect.size(); ++n) {
        ev.payload_len = n;
        EXPECT_EQ(json::parse(render(ev, opt))["payload"], expect[n]) << n;
    }
}

TEST(AlertJson, StreamFlagAndOnlyPrintable) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    const uint8_t payload[] = {'a', 0x01, 'b'};
    ev.payload = payload;
    ev.payload_len = 3;
    ev.stream = true;
    AlertOutputOptions opt;
    opt.payload_printable = true;
    const json j = json::parse(render(ev, opt));
    EXPECT_FALSE(j.contains("payload"));
    EXPECT_EQ(j["payload_printable"], "a.b");
    EXPECT_EQ(j["stream"], 1);
}

TEST(AlertJson, LinktypeNamesOfRawAndCookedCaptures) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    AlertOutputOptions opt;
    opt.packet = true;
    ev.linktype = 229;
    EXPECT_EQ(json::parse(render(ev, opt))["packet_info"]["linktype_name"], "IPv6");
    ev.linktype = 276;
    EXPECT_EQ(json::parse(render(ev, opt))["packet_info"]["linktype_name"], "LINUX_SLL2");
    ev.linktype = 113;
    EXPECT_EQ(json::parse(render(ev, opt))["packet_info"]["linktype_name"], "LINUX_SLL");
}

TEST(AlertJson, ControlCharactersAndInvalidUtf8StayValidJson) {
    AlertMeta meta = make_meta();
    meta.signature = "a\tb\x01 caf\xc3\xa9 \xff";
    const AlertEvent ev = tcp_event(&meta);
    const std::string line = render(ev);
    EXPECT_NE(line.find("\"signature\":\"a\\tb\\u0001 caf\xc3\xa9 \\u00ff\""), std::string::npos)
        << line;
    EXPECT_EQ(json::parse(line)["alert"]["signature"], "a\tb\x01 caf\xc3\xa9 \xc3\xbf");
}

TEST(AlertJson, PktSrcOfDefragAndTimeoutPackets) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.origin = PacketOrigin::kDefrag;
    EXPECT_EQ(json::parse(render(ev))["pkt_src"], "defrag");
    ev.origin = PacketOrigin::kStreamFlowTimeout;
    EXPECT_EQ(json::parse(render(ev))["pkt_src"], "stream (flow timeout)");
}

TEST(AlertJson, AppendsWithoutClearing) {
    const AlertMeta meta = make_meta();
    const AlertEvent ev = tcp_event(&meta);
    std::string out = "X";
    append_alert_json(ev, {}, out);
    EXPECT_EQ(out.substr(0, 14), "X{\"timestamp\":");
}

// ---------------------------------------------------------------------------------------
// fast.log

TEST(FastLog, TcpIpv4Line) {
    const AlertMeta meta = make_meta();
    const AlertEvent ev = tcp_event(&meta);
    EXPECT_EQ(fast_line(ev),
              "01/02/2024-03:04:05.123456  [**] [1:2000001:3] ET TEST something \"quoted\" [**] "
              "[Classification: Attempted Information Leak] [Priority: 2] {TCP} "
              "10.0.0.1:49152 -> 192.168.1.20:80\n");
}

TEST(FastLog, IcmpTypeAndCodeInPlaceOfPorts) {
    AlertMeta meta = make_meta();
    meta.signature = "ping";
    meta.category = "Misc activity";
    meta.severity = 3;
    AlertEvent ev = tcp_event(&meta);
    ev.proto = 1;
    ev.icmp_type = 8;
    ev.icmp_code = 0;
    ev.sport = 0;
    ev.dport = 0;
    EXPECT_EQ(fast_line(ev),
              "01/02/2024-03:04:05.123456  [**] [1:2000001:3] ping [**] "
              "[Classification: Misc activity] [Priority: 3] {ICMP} 10.0.0.1:8 -> "
              "192.168.1.20:0\n");
}

TEST(FastLog, Ipv6UdpLineAndUnknownProtocol) {
    AlertMeta meta = make_meta();
    meta.signature = "v6";
    meta.category = "";
    meta.severity = 3;
    AlertEvent ev = tcp_event(&meta);
    ev.ip_version = 6;
    ev.src = v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    ev.dst = v6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2});
    ev.proto = 17;
    ev.sport = 5353;
    ev.dport = 53;
    EXPECT_EQ(fast_line(ev),
              "01/02/2024-03:04:05.123456  [**] [1:2000001:3] v6 [**] [Classification: ] "
              "[Priority: 3] {UDP} 2001:0db8:0000:0000:0000:0000:0000:0001:5353 -> "
              "2001:0db8:0000:0000:0000:0000:0000:0002:53\n");
    ev.proto = 58;
    ev.icmp_type = 135;
    ev.icmp_code = 0;
    EXPECT_NE(fast_line(ev).find("{IPV6-ICMP} 2001:0db8:0000:0000:0000:0000:0000:0001:135 -> "),
              std::string::npos);
    ev.proto = 253;
    ev.sport = 0;
    ev.dport = 0;
    EXPECT_NE(fast_line(ev).find("[Priority: 3] {PROTO:253} 2001:"), std::string::npos);
    ev.proto = 7;
    EXPECT_NE(fast_line(ev).find("{PROTO:007}"), std::string::npos);
}

TEST(FastLog, DropPrefixes) {
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    ev.action = AlertAction::kBlocked;
    EXPECT_EQ(fast_line(ev).substr(0, 40), "01/02/2024-03:04:05.123456  [Drop] [**] ");
    ev.action = AlertAction::kAllowed;
    ev.drop_rule = true;
    EXPECT_EQ(fast_line(ev).substr(0, 41), "01/02/2024-03:04:05.123456  [wDrop] [**] ");
}

TEST(FastLog, NonIpPacketPrintsRawBytes) {
    AlertMeta meta = make_meta();
    meta.signature = "arp";
    meta.category = "";
    meta.severity = 3;
    AlertEvent ev = tcp_event(&meta);
    ev.ip_version = 0;
    const uint8_t frame[3] = {0xff, 0x0a, 0x00};
    ev.packet = frame;
    ev.packet_len = 3;
    EXPECT_EQ(fast_line(ev),
              "01/02/2024-03:04:05.123456  [**] [1:2000001:3] arp [**] [Classification: ] "
              "[Priority: 3] [**] [Raw pkt: FF 0A 00 ] [pcap file packet: 7]\n");
}

// ---------------------------------------------------------------------------------------
// Files and the sink

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(AlertSink, WritesEveAndFastLogLines) {
    const std::string dir = ::testing::TempDir();
    const std::string eve_path = dir + "/picket_alert_sink_eve.json";
    const std::string fast_path = dir + "/picket_alert_sink_fast.log";
    std::remove(eve_path.c_str());
    std::remove(fast_path.c_str());
    const AlertMeta meta = make_meta();
    AlertEvent ev = tcp_event(&meta);
    {
        EveWriter eve(eve_path);
        FastLogWriter fast(fast_path);
        AlertSink sink(&eve, &fast, AlertOutputOptions{});
        AlertQueue q(1 << 20, 1024);
        const uint8_t payload[] = {'x'};
        ASSERT_TRUE(q.push(ev, nullptr, 0, payload, 1));
        ev.pcap_cnt = 8;
        ASSERT_TRUE(q.push(ev, nullptr, 0, payload, 1));
        EXPECT_EQ(sink.drain({&q}), 2u);
        EXPECT_EQ(sink.written(), 2u);
        eve.flush();
        fast.flush();
    }
    std::string expected_eve;
    std::string expected_fast;
    ev.pcap_cnt = 7;
    append_alert_json(ev, {}, expected_eve);
    expected_eve += "\n";
    FastLogWriter::format(ev, expected_fast);
    ev.pcap_cnt = 8;
    append_alert_json(ev, {}, expected_eve);
    expected_eve += "\n";
    FastLogWriter::format(ev, expected_fast);
    EXPECT_EQ(slurp(eve_path), expected_eve);
    EXPECT_EQ(slurp(fast_path), expected_fast);
}

TEST(FastLogWriter, UnwritablePathThrowsNamingIt) {
    try {
        FastLogWriter w("/nonexistent-dir/fast.log");
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/fast.log"), std::string::npos);
    }
}

}  // namespace
}  // namespace picket::sensor::output
