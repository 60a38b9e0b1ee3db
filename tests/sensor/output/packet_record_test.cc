// Tagged packets (the tag keyword, tagged-packets): Suricata 7's EVE "packet" record, rendered
// by append_packet_json, and the alert sink writing it to eve.json only.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "sensor/output/output.h"
#include "sensor/output/record.h"

namespace picket::sensor::output {
namespace {

decode::Address v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t p[4] = {a, b, c, d};
    return decode::Address::from_v4(p);
}

AlertEvent tagged_event() {
    AlertEvent ev;
    ev.tagged = true;
    ev.ts_ns = 1704164645123456789;  // 2024-01-02T03:04:05.123456789Z
    ev.flow_id = 1234567890123;
    ev.pcap_cnt = 9;
    ev.src = v4(192, 168, 1, 20);
    ev.dst = v4(10, 0, 0, 1);
    ev.sport = 80;
    ev.dport = 49152;
    ev.ip_version = 4;
    ev.proto = 6;
    return ev;
}

TEST(PacketJson, ExactLine) {
    AlertEvent ev = tagged_event();
    const uint8_t frame[] = {0xde, 0xad, 0xbe, 0xef, 0x01};
    ev.packet = frame;
    ev.packet_len = sizeof(frame);
    std::string out;
    append_packet_json(ev, AlertOutputOptions{}, out);
    EXPECT_EQ(out,
              "{\"timestamp\":\"2024-01-02T03:04:05.123456+0000\",\"flow_id\":1234567890123,"
              "\"pcap_cnt\":9,\"event_type\":\"packet\",\"src_ip\":\"192.168.1.20\","
              "\"src_port\":80,\"dest_ip\":\"10.0.0.1\",\"dest_port\":49152,\"proto\":\"TCP\","
              "\"pkt_src\":\"wire/pcap\",\"packet\":\"3q2+7wE=\",\"packet_info\":{\"linktype\":1,"
              "\"linktype_name\":\"EN10MB\"}}");
}

TEST(PacketJson, IcmpWithoutFlowOnRawLinkWithVlanAndCommunityId) {
    AlertEvent ev = tagged_event();
    ev.flow_id = 0;
    ev.pcap_cnt = 0;
    ev.proto = 1;
    ev.icmp_type = 8;
    ev.icmp_code = 0;
    ev.linktype = 101;
    ev.vlan_count = 1;
    ev.vlan_id[0] = 10;
    ev.origin = PacketOrigin::kDefrag;
    const uint8_t frame[] = {0x45};
    ev.packet = frame;
    ev.packet_len = 1;
    AlertOutputOptions opt;
    opt.community_id = true;
    std::string out;
    append_packet_json(ev, opt, out);
    EXPECT_EQ(out,
              "{\"timestamp\":\"2024-01-02T03:04:05.123456+0000\",\"event_type\":\"packet\","
              "\"vlan\":[10],\"src_ip\":\"192.168.1.20\",\"dest_ip\":\"10.0.0.1\",\"proto\":"
              "\"ICMP\",\"icmp_type\":8,\"icmp_code\":0,\"pkt_src\":\"defrag\",\"community_id\":"
              "\"" +
                  community_id(ev.src, ev.dst, 8, 0, 1, 0) +
                  "\",\"packet\":\"RQ==\",\"packet_info\":{\"linktype\":101,"
                  "\"linktype_name\":\"RAW\"}}");
}

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(PacketJson, SinkWritesTaggedPacketsToEveOnlyAndCountsThemApart) {
    const std::string dir = ::testing::TempDir();
    const std::string eve_path = dir + "/picket_tagged_eve.json";
    const std::string fast_path = dir + "/picket_tagged_fast.log";
    std::remove(eve_path.c_str());
    std::remove(fast_path.c_str());
    AlertEvent ev = tagged_event();
    const uint8_t frame[] = {1, 2, 3};
    {
        EveWriter eve(eve_path);
        FastLogWriter fast(fast_path);
        AlertSink sink(&eve, &fast, AlertOutputOptions{});
        AlertQueue q(1 << 20, 1024);
        ASSERT_TRUE(q.push(ev, frame, sizeof(frame), nullptr, 0));
        EXPECT_EQ(sink.drain({&q}), 1u);
        EXPECT_EQ(sink.written(), 0u);
        EXPECT_EQ(sink.tagged_written(), 1u);
        eve.flush();
        fast.flush();
    }
    ev.packet = frame;
    ev.packet_len = sizeof(frame);
    std::string expected;
    append_packet_json(ev, AlertOutputOptions{}, expected);
    EXPECT_EQ(slurp(eve_path), expected + "\n");
    EXPECT_EQ(slurp(fast_path), "");
}

}  // namespace
}  // namespace picket::sensor::output
