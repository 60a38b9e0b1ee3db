// EVE records beyond alerts: the rendering of flow, drop and anomaly records, protocol
// records' members, Community ID, and RecordQueue's per-type drop count.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sensor/output/record.h"

namespace picket::sensor::output {
namespace {

decode::Address v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t bytes[4] = {a, b, c, d};
    return decode::Address::from_v4(bytes);
}

// 2024-01-02T03:04:05.000006 UTC.
constexpr int64_t kTs = 1704164645000006000;

RecordEvent tcp_flow() {
    RecordEvent ev;
    ev.type = RecordType::kFlow;
    ev.ts_ns = kTs;
    ev.flow_id = 77;
    ev.pcap_cnt = 9;  // flow records carry none
    ev.src = v4(10, 0, 0, 1);
    ev.dst = v4(10, 0, 0, 2);
    ev.sport = 40000;
    ev.dport = 80;
    ev.proto = 6;
    ev.app_proto = "http";
    ev.flow.pkts[0] = 5;
    ev.flow.pkts[1] = 4;
    ev.flow.bytes[0] = 500;
    ev.flow.bytes[1] = 1400;
    ev.flow.start_ns = kTs - 3000000000;
    ev.flow.end_ns = kTs;
    ev.flow.state = "closed";
    ev.flow.reason = "timeout";
    ev.flow.alerted = true;
    ev.flow.tcp_flags[0] = 0x1b;  // SYN FIN PSH ACK
    ev.flow.tcp_flags[1] = 0x1a;
    ev.flow.tcp_state = "closed";
    return ev;
}

TEST(RecordJson, FlowRecordInSuricataLayout) {
    std::string out;
    append_record_json(tcp_flow(), RecordOptions{}, out);
    EXPECT_EQ(out,
              "{\"timestamp\":\"2024-01-02T03:04:05.000006+0000\",\"flow_id\":77,"
              "\"event_type\":\"flow\",\"src_ip\":\"10.0.0.1\",\"src_port\":40000,"
              "\"dest_ip\":\"10.0.0.2\",\"dest_port\":80,\"proto\":\"TCP\",\"app_proto\":\"http\","
              "\"flow\":{\"pkts_toserver\":5,\"pkts_toclient\":4,\"bytes_toserver\":500,"
              "\"bytes_toclient\":1400,\"start\":\"2024-01-02T03:04:02.000006+0000\","
              "\"end\":\"2024-01-02T03:04:05.000006+0000\",\"age\":3,\"state\":\"closed\","
              "\"reason\":\"timeout\",\"alerted\":true},"
              "\"tcp\":{\"tcp_flags\":\"1b\",\"tcp_flags_ts\":\"1b\",\"tcp_flags_tc\":\"1a\","
              "\"syn\":true,\"fin\":true,\"psh\":true,\"ack\":true,\"state\":\"closed\"}}");
}

TEST(RecordJson, FlowActionAndNoAppProto) {
    RecordEvent ev = tcp_flow();
    ev.app_proto = nullptr;
    ev.flow.action = "drop";
    ev.flow.alerted = false;
    ev.flow.reason = "shutdown";
    std::string out;
    append_record_json(ev, RecordOptions{}, out);
    EXPECT_EQ(out.find("app_proto"), std::string::npos) << out;
    EXPECT_NE(out.find("\"reason\":\"shutdown\",\"alerted\":false,\"action\":\"drop\"}"),
              std::string::npos)
        << out;
}

TEST(RecordJson, DropRecordOfATcpPacket) {
    RecordEvent ev;
    ev.type = RecordType::kDrop;
    ev.ts_ns = kTs;
    ev.flow_id = 5;
    ev.pcap_cnt = 3;
    ev.src = v4(192, 168, 1, 1);
    ev.dst = v4(192, 168, 1, 2);
    ev.sport = 1234;
    ev.dport = 443;
    ev.proto = 6;
    ev.drop.len = 60;
    ev.drop.tos = 0;
    ev.drop.ttl = 64;
    ev.drop.ipid = 4660;
    ev.drop.tcpseq = 1000;
    ev.drop.tcpack = 0;
    ev.drop.tcpwin = 65535;
    ev.drop.tcp_flags = 0x02;
    ev.drop.reason = "rules";
    std::string out;
    append_record_json(ev, RecordOptions{}, out);
    EXPECT_EQ(out,
              "{\"timestamp\":\"2024-01-02T03:04:05.000006+0000\",\"flow_id\":5,\"pcap_cnt\":3,"
              "\"event_type\":\"drop\",\"src_ip\":\"192.168.1.1\",\"src_port\":1234,"
              "\"dest_ip\":\"192.168.1.2\",\"dest_port\":443,\"proto\":\"TCP\","
              "\"pkt_src\":\"wire/pcap\",\"drop\":{\"len\":60,\"tos\":0,\"ttl\":64,\"ipid\":4660,"
              "\"tcpseq\":1000,\"tcpack\":0,\"tcpwin\":65535,\"syn\":true,\"ack\":false,"
              "\"psh\":false,\"rst\":false,\"urg\":false,\"fin\":false,\"tcpres\":0,"
              "\"tcpurgp\":0,\"reason\":\"rules\"}}");
}

TEST(RecordJson, DecodeAnomalyAndProtocolMembers) {
    RecordEvent ev;
    ev.type = RecordType::kAnomaly;
    ev.ts_ns = kTs;
    ev.pcap_cnt = 2;
    ev.src = v4(1, 1, 1, 1);
    ev.dst = v4(2, 2, 2, 2);
    ev.proto = 17;
    ev.sport = 53;
    ev.dport = 5353;
    ev.anomaly_type = "decode";
    ev.anomaly_event = "decoder.udp.hlen_invalid";
    std::string out;
    append_record_json(ev, RecordOptions{}, out);
    EXPECT_EQ(out,
              "{\"timestamp\":\"2024-01-02T03:04:05.000006+0000\",\"pcap_cnt\":2,"
              "\"event_type\":\"anomaly\",\"src_ip\":\"1.1.1.1\",\"src_port\":53,"
              "\"dest_ip\":\"2.2.2.2\",\"dest_port\":5353,\"proto\":\"UDP\","
              "\"anomaly\":{\"type\":\"decode\",\"event\":\"decoder.udp.hlen_invalid\"}}");

    // A protocol record: the app layer's members follow the envelope as they are.
    RecordEvent http;
    http.type = RecordType::kHttp;
    http.ts_ns = kTs;
    http.src = v4(1, 1, 1, 1);
    http.dst = v4(2, 2, 2, 2);
    http.proto = 6;
    http.sport = 1;
    http.dport = 80;
    http.has_tx_id = true;
    http.tx_id = 4;
    const std::string body = "\"http\":{\"url\":\"/\"}";
    http.body = reinterpret_cast<const uint8_t*>(body.data());
    http.body_len = static_cast<uint32_t>(body.size());
    out.clear();
    append_record_json(http, RecordOptions{}, out);
    EXPECT_EQ(out,
              "{\"timestamp\":\"2024-01-02T03:04:05.000006+0000\",\"event_type\":\"http\","
              "\"src_ip\":\"1.1.1.1\",\"src_port\":1,\"dest_ip\":\"2.2.2.2\",\"dest_port\":80,"
              "\"proto\":\"TCP\",\"pkt_src\":\"wire/pcap\",\"tx_id\":4,\"http\":{\"url\":\"/\"}}");
}

// The specification's vectors (as Zeek's and Suricata's tests use them).
TEST(CommunityId, KnownVectors) {
    EXPECT_EQ(community_id(v4(1, 2, 3, 4), v4(5, 6, 7, 8), 1122, 3344, 6, 0),
              "1:wCb3OG7yAFWelaUydu0D+125CLM=");
    EXPECT_EQ(community_id(v4(1, 2, 3, 4), v4(5, 6, 7, 8), 1122, 3344, 17, 0),
              "1:0Mu9InQx6z4ZiCZM/7HXi2WMhOg=");
    // Both directions of a flow have one id.
    EXPECT_EQ(community_id(v4(5, 6, 7, 8), v4(1, 2, 3, 4), 3344, 1122, 6, 0),
              "1:wCb3OG7yAFWelaUydu0D+125CLM=");
    // The seed changes it.
    EXPECT_NE(community_id(v4(1, 2, 3, 4), v4(5, 6, 7, 8), 1122, 3344, 6, 1),
              "1:wCb3OG7yAFWelaUydu0D+125CLM=");
    std::string out;
    RecordOptions o;
    o.community_id = true;
    append_record_json(tcp_flow(), o, out);
    EXPECT_NE(out.find(",\"community_id\":\"1:"), std::string::npos) << out;
}

TEST(RecordQueue, FullQueueDropsAndCountsPerType) {
    RecordQueue q(64u << 10);
    const std::string body(1000, 'x');
    RecordEvent ev;
    ev.type = RecordType::kDns;
    uint32_t pushed = 0;
    while (q.push(ev, reinterpret_cast<const uint8_t*>(body.data()),
                  static_cast<uint32_t>(body.size()))) {
        ++pushed;
    }
    EXPECT_GT(pushed, 40u);
    EXPECT_EQ(q.pushed(RecordType::kDns), pushed);
    EXPECT_EQ(q.dropped(RecordType::kDns), 1u);
    EXPECT_EQ(q.dropped(RecordType::kFlow), 0u);
    // A record larger than a quarter of the ring never goes in.
    const std::string huge(20000, 'y');
    ev.type = RecordType::kHttp;
    EXPECT_FALSE(q.push(ev, reinterpret_cast<const uint8_t*>(huge.data()),
                        static_cast<uint32_t>(huge.size())));
    EXPECT_EQ(q.dropped(RecordType::kHttp), 1u);
    // Draining gives them back in order with their bodies.
    uint32_t seen = 0;
    q.drain([&](const RecordEvent& r) {
        EXPECT_EQ(r.type, RecordType::kDns);
        ASSERT_EQ(r.body_len, 1000u);
        EXPECT_EQ(r.body[0], 'x');
        ++seen;
    });
    EXPECT_EQ(seen, pushed);
    EXPECT_TRUE(q.push(ev));
}

}  // namespace
}  // namespace picket::sensor::output
