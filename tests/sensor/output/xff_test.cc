// EVE alert xff (Suricata's outputs.eve-log.types.alert.xff): the client address parsed from
// an X-Forwarded-For value, and where the alert JSON puts it in each mode.
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "sensor/output/output.h"

namespace picket::sensor::output {
namespace {

std::string ip_of(std::string_view value, bool reverse) {
    char out[kXffIpMax];
    size_t n = xff_client_ip(value, reverse, out);
    EXPECT_EQ(n, std::strlen(out));
    return std::string(out, n);
}

TEST(XffClientIp, ReverseTakesTheLastForwardTheFirst) {
    // The http-xff-eve-* cases: "10.2.2.2, 10.3.3.3".
    EXPECT_EQ(ip_of("10.2.2.2, 10.3.3.3", true), "10.3.3.3");
    EXPECT_EQ(ip_of("10.2.2.2, 10.3.3.3", false), "10.2.2.2");
    EXPECT_EQ(ip_of("1.2.3.4", true), "1.2.3.4");
    EXPECT_EQ(ip_of("1.2.3.4", false), "1.2.3.4");
    // Reverse splits on the last space, forward on the first comma (as Suricata does), so a
    // chain without spaces has no reverse address, and a space before the comma spoils forward.
    EXPECT_EQ(ip_of("10.2.2.2,10.3.3.3", true), "");
    EXPECT_EQ(ip_of("10.2.2.2,10.3.3.3", false), "10.2.2.2");
    EXPECT_EQ(ip_of("10.2.2.2 , 10.3.3.3", false), "");
    EXPECT_EQ(ip_of("10.2.2.2, 10.3.3.3 ", true), "");
}

TEST(XffClientIp, PortsBracketsAndBadValues) {
    EXPECT_EQ(ip_of("1.2.3.4:5678", true), "1.2.3.4");
    EXPECT_EQ(ip_of("[12::34]:1234", true), "12::34");
    EXPECT_EQ(ip_of("[2a03:2880:1010:3f02:face:b00c:0:2]:80", true),
              "2a03:2880:1010:3f02:face:b00c:0:2");
    EXPECT_EQ(ip_of("[::ffff:1.2.3.4]:1234", false), "::ffff:1.2.3.4");
    EXPECT_EQ(ip_of("12::34:ab", true), "12::34:ab");
    EXPECT_EQ(ip_of("[1.2.3.4:1234", true), "");
    EXPECT_EQ(ip_of("999.999.999.999:1234", true), "");
    EXPECT_EQ(ip_of("unknown, proxy", false), "");
    // Shorter than 7 or longer than 255 bytes: ignored.
    EXPECT_EQ(ip_of("1::2", true), "");
    EXPECT_EQ(ip_of(std::string(250, ' ') + "1.2.3.4", true), "");
    EXPECT_EQ(ip_of(std::string(240, ' ') + "1.2.3.4", true), "1.2.3.4");
}

AlertEvent http_event(const AlertMeta* meta, AlertDirection dir) {
    AlertEvent ev;
    ev.ts_ns = 1704164645123456789;
    ev.src = decode::Address::from_v4(reinterpret_cast<const uint8_t*>("\x52\xa5\xb1\x9a"));
    ev.dst = decode::Address::from_v4(reinterpret_cast<const uint8_t*>("\x0a\x10\x01\x0b"));
    ev.sport = 80;
    ev.dport = 46676;
    ev.ip_version = 4;
    ev.proto = 6;
    ev.direction = dir;
    ev.meta = meta;
    ev.xff_len = static_cast<uint8_t>(xff_client_ip("10.2.2.2, 10.3.3.3", false, ev.xff));
    return ev;
}

std::string render(const AlertEvent& ev, const XffOptions& xff) {
    AlertOutputOptions opt;
    opt.xff = xff;
    std::string out;
    append_alert_json(ev, opt, out);
    return out;
}

const std::string kHead =
    "{\"timestamp\":\"2024-01-02T03:04:05.123456+0000\",\"event_type\":\"alert\",";
const std::string kAlert =
    "\"alert\":{\"action\":\"allowed\",\"gid\":1,\"signature_id\":1,\"rev\":1,\"signature\":"
    "\"TEST RULE\",\"category\":\"\",\"severity\":3";

AlertMeta test_meta() {
    AlertMeta m;
    m.sid = 1;
    m.rev = 1;
    m.signature = "TEST RULE";
    return m;
}

TEST(AlertJsonXff, ExtraDataAddsXffToTheAlertObject) {
    const AlertMeta meta = test_meta();
    XffOptions xff;
    xff.enabled = true;
    EXPECT_EQ(render(http_event(&meta, AlertDirection::kToClient), xff),
              kHead +
                  "\"src_ip\":\"82.165.177.154\",\"src_port\":80,\"dest_ip\":\"10.16.1.11\","
                  "\"dest_port\":46676,\"proto\":\"TCP\",\"pkt_src\":\"wire/pcap\"," +
                  kAlert + ",\"xff\":\"10.2.2.2\"},\"direction\":\"to_client\"}");
    // Off, or nothing found: no xff.
    xff.enabled = false;
    EXPECT_EQ(render(http_event(&meta, AlertDirection::kToClient), xff).find("xff"),
              std::string::npos);
    xff.enabled = true;
    AlertEvent none = http_event(&meta, AlertDirection::kToClient);
    none.xff_len = 0;
    EXPECT_EQ(render(none, xff).find("xff"), std::string::npos);
}

TEST(AlertJsonXff, OverwriteReplacesTheClientSideAddress) {
    const AlertMeta meta = test_meta();
    XffOptions xff;
    xff.enabled = true;
    xff.mode = XffMode::kOverwrite;
    // To the client: the client is the destination.
    EXPECT_EQ(render(http_event(&meta, AlertDirection::kToClient), xff),
              kHead +
                  "\"src_ip\":\"82.165.177.154\",\"src_port\":80,\"dest_ip\":\"10.2.2.2\","
                  "\"dest_port\":46676,\"proto\":\"TCP\",\"pkt_src\":\"wire/pcap\"," +
                  kAlert + "},\"direction\":\"to_client\"}");
    // To the server: the source.
    EXPECT_EQ(render(http_event(&meta, AlertDirection::kToServer), xff),
              kHead +
                  "\"src_ip\":\"10.2.2.2\",\"src_port\":80,\"dest_ip\":\"10.16.1.11\","
                  "\"dest_port\":46676,\"proto\":\"TCP\",\"pkt_src\":\"wire/pcap\"," +
                  kAlert + "},\"direction\":\"to_server\"}");
}

}  // namespace
}  // namespace picket::sensor::output
