// ftpbounce (keywords/ftpbounce.cc): the FTP transaction the app layer flagged as a PORT / EPRT
// naming another host than the client (AppView::ftp_bounce); the rule becomes an FTP rule.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::parse_error;

TEST(FtpbounceTest, MatchesTheFlaggedFtpTransactionOnly) {
    test::Fixture f;
    ASSERT_TRUE(f.parse(parse_ftpbounce, "", false));
    EXPECT_EQ(f.rule.app_needed, AppProto::kFtp);
    decode::Packet p = test::tcp_packet(0x18);
    PacketContext pc = test::ctx(p);
    EXPECT_FALSE(f.match(pc));  // no transaction
    AppView v;
    v.proto = AppProto::kFtp;
    pc.view = &v;
    EXPECT_FALSE(f.match(pc));  // a PORT to the client itself, or another command
    v.ftp_bounce = true;
    EXPECT_TRUE(f.match(pc));
    v.proto = AppProto::kHttp;
    EXPECT_FALSE(f.match(pc));
}

TEST(FtpbounceTest, RefusedOnAnotherProtocolsRule) {
    test::Fixture f;
    f.rule.proto.app = AppProto::kHttp;
    EXPECT_FALSE(f.parse(parse_ftpbounce, "", false));
    EXPECT_EQ(f.error, "ftpbounce: not usable on a rule for another app-layer protocol");
    test::Fixture g;
    g.rule.proto.app = AppProto::kFtp;
    EXPECT_TRUE(g.parse(parse_ftpbounce, "", false));
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
