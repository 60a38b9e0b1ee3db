// ftpbounce (keywords/ftpbounce.cc): with an FTP transaction, the one the app layer flagged as a
// PORT / EPRT naming another host (AppView::ftp_bounce); in a packet rule, a to-server PORT
// command naming an IPv4 address other than the client's, in the bytes pkt_data is matched
// against. Then ftpdata_command.
#include <gtest/gtest.h>

#include <string>

#include "sensor/flow/flow.h"
#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::parse_error;

struct Case {
    const char* client = "10.0.0.1";
    flow::Direction dir = flow::Direction::kToServer;
    AppProto app = AppProto::kUnknown;
    bool with_flow = true;
};

// 1 = matched, 0 = not (the keyword always parses here).
int bounce(const std::string& payload, const Case& c = Case{}) {
    test::Fixture f;
    EXPECT_TRUE(f.parse(parse_ftpbounce, "", false));
    decode::Packet p = test::tcp_packet(0x18);
    p.src = test::v4("10.0.0.1");  // what the packet says; the flow's client decides
    p.payload = reinterpret_cast<const uint8_t*>(payload.data());
    p.payload_len = static_cast<uint32_t>(payload.size());
    flow::Flow fl;
    if (std::string_view(c.client).find(':') != std::string_view::npos) {
        uint8_t b[16];
        inet_pton(AF_INET6, c.client, b);
        fl.client_addr = decode::Address::from_v6(b);
    } else {
        fl.client_addr = test::v4(c.client);
    }
    PacketContext pc = test::ctx(p);
    pc.flow = c.with_flow ? &fl : nullptr;
    pc.dir = c.dir;
    pc.app = c.app;
    return f.match(pc) ? 1 : 0;
}

TEST(FtpbounceTest, PortToAnotherHost) {
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1\r\n"), 1);
    EXPECT_EQ(bounce("PORT 192,168,1,20,0,25\r\n"), 1);
    // The client's own address: an ordinary active-mode transfer.
    EXPECT_EQ(bounce("PORT 10,0,0,1,4,1\r\n"), 0);
    // Any case, a bare LF, a tab, blanks before the commas.
    EXPECT_EQ(bounce("port 10,0,0,9,4,1\r\n"), 1);
    EXPECT_EQ(bounce("PoRt 10,0,0,9,4,1\n"), 1);
    EXPECT_EQ(bounce("PORT\t10,0,0,9,4,1\r\n"), 1);
    EXPECT_EQ(bounce("PORT 10 ,0 ,0 ,9 ,4,1\r\n"), 1);
    // Only the address is read, as in Suricata: the port numbers may be anything.
    EXPECT_EQ(bounce("PORT 10,0,0,9,\r\n"), 1);
}

TEST(FtpbounceTest, AnyLineOfTheData) {
    EXPECT_EQ(bounce("USER anonymous\r\nPASS x\r\nPORT 10,0,0,9,4,1\r\n"), 1);
    EXPECT_EQ(bounce("PORT 10,0,0,1,4,1\r\nLIST\r\nPORT 10,0,0,9,4,2\r\nRETR a\r\n"), 1);
    EXPECT_EQ(bounce("PORT 10,0,0,1,4,1\r\nPORT 10,0,0,1,4,2\r\n"), 0);
    // A line that does not start with the command.
    EXPECT_EQ(bounce("NOOP PORT 10,0,0,9,4,1\r\n"), 0);
    EXPECT_EQ(bounce(" PORT 10,0,0,9,4,1\r\n"), 0);
    // An unfinished line is not a command yet (the stream window sees it once finished).
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1"), 0);
    EXPECT_EQ(bounce("USER a\r\nPORT 10,0,0,9,4,1"), 0);
}

TEST(FtpbounceTest, NotAnAddress) {
    EXPECT_EQ(bounce("PORTS 10,0,0,9,4,1\r\n"), 0);
    EXPECT_EQ(bounce("PORT\r\n"), 0);
    EXPECT_EQ(bounce("PORT 10,0,0\r\n"), 0);
    EXPECT_EQ(bounce("PORT 10,0,0,9\r\n"), 0);  // no comma after the fourth number
    EXPECT_EQ(bounce("PORT 10,0,0,256,4,1\r\n"), 0);
    EXPECT_EQ(bounce("PORT 10,0,0,0009,4,1\r\n"), 0);
    EXPECT_EQ(bounce("PORT 10,,0,9,4,1\r\n"), 0);
    EXPECT_EQ(bounce("PORT 10, 0,0,9,4,1\r\n"), 0);
    EXPECT_EQ(bounce("PORT a,b,c,d,e,f\r\n"), 0);
    EXPECT_EQ(bounce("EPRT |1|10.0.0.9|1025|\r\n"), 0);
    EXPECT_EQ(bounce(""), 0);
}

TEST(FtpbounceTest, DirectionProtocolAndClient) {
    Case c;
    c.dir = flow::Direction::kToClient;
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1\r\n", c), 0);
    c = Case{};
    c.app = AppProto::kHttp;
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1\r\n", c), 0);
    c.app = AppProto::kFtp;
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1\r\n", c), 1);
    // The flow's client is compared, not the packet's source.
    c = Case{};
    c.client = "10.0.0.9";
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1\r\n", c), 0);
    EXPECT_EQ(bounce("PORT 10,0,0,1,4,1\r\n", c), 1);
    // Without a flow, the packet's source.
    c = Case{};
    c.with_flow = false;
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1\r\n", c), 1);
    EXPECT_EQ(bounce("PORT 10,0,0,1,4,1\r\n", c), 0);
    // An IPv6 client: PORT cannot name it, so no comparison is made.
    c = Case{};
    c.client = "2001:db8::1";
    EXPECT_EQ(bounce("PORT 10,0,0,9,4,1\r\n", c), 0);
}

TEST(FtpbounceTest, ReadsTheMatchedBytes) {
    // Stream window (PacketContext::data) rather than the packet's payload.
    test::Fixture f;
    ASSERT_TRUE(f.parse(parse_ftpbounce, "", false));
    decode::Packet p = test::tcp_packet(0x18);
    const std::string pkt = "4,1\r\n";
    const std::string window = "PORT 10,0,0,9,4,1\r\n";
    p.payload = reinterpret_cast<const uint8_t*>(pkt.data());
    p.payload_len = static_cast<uint32_t>(pkt.size());
    PacketContext pc = test::ctx(p);
    EXPECT_FALSE(f.match(pc));
    pc.data = reinterpret_cast<const uint8_t*>(window.data());
    pc.data_len = static_cast<uint32_t>(window.size());
    EXPECT_TRUE(f.match(pc));
}

TEST(FtpbounceTest, MatchesTheFlaggedFtpTransactionOnly) {
    test::Fixture f;
    ASSERT_TRUE(f.parse(parse_ftpbounce, "", false));
    EXPECT_EQ(f.rule.app_needed, AppProto::kUnknown);  // packet rules keep working
    decode::Packet p = test::tcp_packet(0x18);
    PacketContext pc = test::ctx(p);
    EXPECT_FALSE(f.match(pc));  // no transaction, no payload
    AppView v;
    v.proto = AppProto::kFtp;
    pc.view = &v;
    EXPECT_FALSE(f.match(pc));  // a PORT to the client itself, or another command
    v.ftp_bounce = true;
    EXPECT_TRUE(f.match(pc));
    v.proto = AppProto::kHttp;
    EXPECT_FALSE(f.match(pc));
}

TEST(FtpbounceTest, Errors) {
    EXPECT_EQ(parse_error(parse_ftpbounce, "x"), "ftpbounce: takes no value, got 'x'");
    EXPECT_EQ(parse_error(parse_ftpbounce, ""), "ftpbounce: takes no value, got ''");
}

// ftpdata_command (keywords/ftpdata_command.cc): the ftp-data flow's transfer command.
TEST(FtpdataCommandTest, ParseAndMatch) {
    test::Fixture f;
    ASSERT_TRUE(f.parse(parse_ftpdata_command, "STOR"));
    EXPECT_EQ(f.rule.app_needed, AppProto::kFtpData);
    decode::Packet p = test::tcp_packet(0x18);
    PacketContext pc = test::ctx(p);
    EXPECT_FALSE(f.match(pc));
    AppView v;
    v.proto = AppProto::kFtpData;
    v.ftpdata_command = inspect::kFtpRetr;
    pc.view = &v;
    EXPECT_FALSE(f.match(pc));
    v.ftpdata_command = inspect::kFtpStor;
    EXPECT_TRUE(f.match(pc));
    v.proto = AppProto::kFtp;
    EXPECT_FALSE(f.match(pc));
    EXPECT_EQ(parse_error(parse_ftpdata_command, "list"),
              "ftpdata_command: invalid value 'list' (expected retr or stor)");
    test::Fixture g;
    g.rule.proto.app = AppProto::kFtp;
    EXPECT_FALSE(g.parse(parse_ftpdata_command, "retr"));
    EXPECT_EQ(g.error, "ftpdata_command: not usable on a rule for another app-layer protocol");
}

}  // namespace
}  // namespace picket::sensor::detect
