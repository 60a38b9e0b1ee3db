// seq, tos and window: accepted and rejected forms and matches on hand-built packets.
//
// From the Suricata 7 user guide (rules/header-keywords.rst):
// - tos: "match on specific decimal values of the IP header TOS field ... a value from
//   0 - 255 ... hexadecimal values with a leading x, e.g. x88", format `tos:[!]<number>`,
//   examples `tos:8;` and `tos:!8;`. The TOS field is IPv4's (Suricata matches IPv4 only).
// - seq: "check for a specific TCP sequence number", example `seq:0;` (32 bits, no operator).
// - window: "check for a specific TCP window size", format `window:[!]<number>`, example
//   `window:55808;` (the 16-bit header field, unscaled).
// A TCP keyword never matches a packet without a TCP header, negated or not.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::ctx;
using test::eval;
using test::Fixture;
using test::parse_error;
using test::tcp_packet;

decode::Packet udp_packet() {
    decode::Packet p = tcp_packet(0);
    p.flags = decode::kFlagIpv4 | decode::kFlagUdp;
    p.proto = 17;
    return p;
}

// ----------------------------------------------------------------------------- tos

TEST(TosTest, DecimalHexAndNegation) {
    decode::Packet p = tcp_packet(0x10);
    p.tos = 0x88;  // the guide's example: DSCP 34 shifted left twice = 136 = x88
    EXPECT_EQ(eval(parse_tos, "136", p), 1);
    EXPECT_EQ(eval(parse_tos, "x88", p), 1);
    EXPECT_EQ(eval(parse_tos, "X88", p), 1);
    EXPECT_EQ(eval(parse_tos, "0x88", p), 1);
    EXPECT_EQ(eval(parse_tos, "34", p), 0);  // the unshifted DSCP value does not match
    EXPECT_EQ(eval(parse_tos, "x22", p), 0);
    EXPECT_EQ(eval(parse_tos, "!136", p), 0);
    EXPECT_EQ(eval(parse_tos, "!x88", p), 0);
    EXPECT_EQ(eval(parse_tos, "!8", p), 1);
    EXPECT_EQ(eval(parse_tos, "8", p), 0);
    EXPECT_EQ(eval(parse_tos, "\"136\"", p), 1);
    EXPECT_EQ(eval(parse_tos, " ! 136 ", p), 0);
    p.tos = 8;
    EXPECT_EQ(eval(parse_tos, "8", p), 1);
    EXPECT_EQ(eval(parse_tos, "!8", p), 0);
    EXPECT_EQ(eval(parse_tos, "x8", p), 1);
    EXPECT_EQ(eval(parse_tos, "x08", p), 1);
}

TEST(TosTest, Bounds) {
    decode::Packet p = tcp_packet(0x10);
    p.tos = 0;
    EXPECT_EQ(eval(parse_tos, "0", p), 1);
    EXPECT_EQ(eval(parse_tos, "x0", p), 1);
    EXPECT_EQ(eval(parse_tos, "!0", p), 0);
    EXPECT_EQ(eval(parse_tos, "255", p), 0);
    p.tos = 255;
    EXPECT_EQ(eval(parse_tos, "255", p), 1);
    EXPECT_EQ(eval(parse_tos, "xff", p), 1);
    EXPECT_EQ(eval(parse_tos, "xFF", p), 1);
    EXPECT_EQ(eval(parse_tos, "!255", p), 0);
    EXPECT_EQ(eval(parse_tos, "!254", p), 1);
}

TEST(TosTest, NotIpv4NeverMatches) {
    decode::Packet p = tcp_packet(0x10);
    p.tos = 8;
    p.ip_version = 6;  // traffic class 8: not the IPv4 TOS field
    EXPECT_EQ(eval(parse_tos, "8", p), 0);
    EXPECT_EQ(eval(parse_tos, "!8", p), 0);
    EXPECT_EQ(eval(parse_tos, "!9", p), 0);
    p.ip_version = 0;
    EXPECT_EQ(eval(parse_tos, "!9", p), 0);
    // Any IPv4 packet has a TOS field: UDP as well as TCP.
    decode::Packet u = udp_packet();
    u.tos = 8;
    EXPECT_EQ(eval(parse_tos, "8", u), 1);
    EXPECT_EQ(eval(parse_tos, "!9", u), 1);
}

TEST(TosTest, Errors) {
    EXPECT_EQ(parse_error(parse_tos, "", false), "tos: a value is required");
    EXPECT_EQ(parse_error(parse_tos, "  "), "tos: a value is required");
    EXPECT_EQ(parse_error(parse_tos, "256"), "tos: value out of range 0-255 in '256'");
    EXPECT_EQ(parse_error(parse_tos, "x100"), "tos: value out of range 0-255 in 'x100'");
    EXPECT_EQ(parse_error(parse_tos, "!256"), "tos: value out of range 0-255 in '!256'");
    EXPECT_EQ(parse_error(parse_tos, "x"),
              "tos: invalid value 'x' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "0x"),
              "tos: invalid value '0x' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "xg1"),
              "tos: invalid value 'xg1' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "abc"),
              "tos: invalid value 'abc' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "-1"),
              "tos: invalid value '-1' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "!!8"),
              "tos: invalid value '!!8' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "!"),
              "tos: invalid value '!' (expected N or !N with N from 0 to 255, decimal or hex)");
    // Only [!]N: no comparison operators or ranges.
    EXPECT_EQ(parse_error(parse_tos, "<8"),
              "tos: invalid value '<8' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, ">8"),
              "tos: invalid value '>8' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "1-8"),
              "tos: invalid value '1-8' (expected N or !N with N from 0 to 255, decimal or hex)");
    EXPECT_EQ(parse_error(parse_tos, "8,9"),
              "tos: invalid value '8,9' (expected N or !N with N from 0 to 255, decimal or hex)");
}

// ----------------------------------------------------------------------------- seq

TEST(SeqTest, ExactValue) {
    decode::Packet p = tcp_packet(0);
    p.tcp_seq = 0;  // the guide's NULL scan example: seq:0
    EXPECT_EQ(eval(parse_seq, "0", p), 1);
    EXPECT_EQ(eval(parse_seq, "1", p), 0);
    p.tcp_seq = 4294967295u;
    EXPECT_EQ(eval(parse_seq, "4294967295", p), 1);
    EXPECT_EQ(eval(parse_seq, "4294967294", p), 0);
    EXPECT_EQ(eval(parse_seq, "0", p), 0);
    p.tcp_seq = 1000;
    EXPECT_EQ(eval(parse_seq, "1000", p), 1);
    EXPECT_EQ(eval(parse_seq, "\"1000\"", p), 1);
    EXPECT_EQ(eval(parse_seq, " 1000 ", p), 1);
    EXPECT_EQ(eval(parse_seq, "01000", p), 1);  // decimal: a leading zero is not octal
}

TEST(SeqTest, NotTcpNeverMatches) {
    // A UDP packet has no sequence number, even if the field holds 0.
    decode::Packet u = udp_packet();
    u.tcp_seq = 0;
    EXPECT_EQ(eval(parse_seq, "0", u), 0);
    decode::Packet icmp = u;
    icmp.flags = decode::kFlagIpv4 | decode::kFlagIcmpv4;
    EXPECT_EQ(eval(parse_seq, "0", icmp), 0);
    decode::Packet v6 = tcp_packet(0);
    v6.flags = decode::kFlagIpv6 | decode::kFlagTcp;
    v6.ip_version = 6;
    v6.tcp_seq = 7;
    EXPECT_EQ(eval(parse_seq, "7", v6), 1);  // TCP over IPv6 has one
}

TEST(SeqTest, Errors) {
    EXPECT_EQ(parse_error(parse_seq, "", false), "seq: a value is required");
    EXPECT_EQ(parse_error(parse_seq, "4294967296"),
              "seq: value out of range 0-4294967295 in '4294967296'");
    EXPECT_EQ(parse_error(parse_seq, "99999999999999999999999"),
              "seq: value out of range 0-4294967295 in '99999999999999999999999'");
    EXPECT_EQ(parse_error(parse_seq, "-1"),
              "seq: invalid value '-1' (expected N with N from 0 to 4294967295)");
    EXPECT_EQ(parse_error(parse_seq, "!0"),
              "seq: invalid value '!0' (expected N with N from 0 to 4294967295)");
    EXPECT_EQ(parse_error(parse_seq, "0x10"),
              "seq: invalid value '0x10' (expected N with N from 0 to 4294967295)");
    EXPECT_EQ(parse_error(parse_seq, ">0"),
              "seq: invalid value '>0' (expected N with N from 0 to 4294967295)");
    EXPECT_EQ(parse_error(parse_seq, "1 2"),
              "seq: invalid value '1 2' (expected N with N from 0 to 4294967295)");
}

// ----------------------------------------------------------------------------- window

TEST(WindowTest, ExactAndNegated) {
    decode::Packet p = tcp_packet(0x02);
    p.tcp_window = 55808;  // the guide's example rule
    EXPECT_EQ(eval(parse_window, "55808", p), 1);
    EXPECT_EQ(eval(parse_window, "55807", p), 0);
    EXPECT_EQ(eval(parse_window, "!55808", p), 0);
    EXPECT_EQ(eval(parse_window, "!55807", p), 1);
    EXPECT_EQ(eval(parse_window, "\"55808\"", p), 1);
    EXPECT_EQ(eval(parse_window, "\"!55808\"", p), 0);
    EXPECT_EQ(eval(parse_window, "! 55808", p), 0);
    p.tcp_window = 0;
    EXPECT_EQ(eval(parse_window, "0", p), 1);
    EXPECT_EQ(eval(parse_window, "!0", p), 0);
    p.tcp_window = 65535;
    EXPECT_EQ(eval(parse_window, "65535", p), 1);
    EXPECT_EQ(eval(parse_window, "!65535", p), 0);
    EXPECT_EQ(eval(parse_window, "!0", p), 1);
}

TEST(WindowTest, NotTcpNeverMatches) {
    decode::Packet u = udp_packet();
    u.tcp_window = 0;
    EXPECT_EQ(eval(parse_window, "0", u), 0);
    EXPECT_EQ(eval(parse_window, "!5", u), 0);  // no window at all is not "not 5"
}

TEST(WindowTest, Errors) {
    EXPECT_EQ(parse_error(parse_window, "", false), "window: a value is required");
    EXPECT_EQ(parse_error(parse_window, "65536"), "window: value out of range 0-65535 in '65536'");
    EXPECT_EQ(parse_error(parse_window, "!65536"),
              "window: value out of range 0-65535 in '!65536'");
    EXPECT_EQ(
        parse_error(parse_window, "x10"),
        "window: invalid value 'x10' (expected N or !N with N from 0 to 65535)");  // decimal only
    EXPECT_EQ(parse_error(parse_window, "0x10"),
              "window: invalid value '0x10' (expected N or !N with N from 0 to 65535)");
    EXPECT_EQ(parse_error(parse_window, "<1024"),
              "window: invalid value '<1024' (expected N or !N with N from 0 to 65535)");
    EXPECT_EQ(parse_error(parse_window, "1-5"),
              "window: invalid value '1-5' (expected N or !N with N from 0 to 65535)");
    EXPECT_EQ(parse_error(parse_window, "!!5"),
              "window: invalid value '!!5' (expected N or !N with N from 0 to 65535)");
    EXPECT_EQ(parse_error(parse_window, "-1"),
              "window: invalid value '-1' (expected N or !N with N from 0 to 65535)");
}

// ----------------------------------------------------------------------------- sharing

TEST(IpTcpFieldsTest, SameValueSameOption) {
    // tos:16, tos:x10 and tos:0x10 are one check; the negation and other keywords are not.
    Fixture dec, hex, hex0, neg, win, seq16;
    ASSERT_TRUE(dec.parse(parse_tos, "16"));
    ASSERT_TRUE(hex.parse(parse_tos, "x10"));
    ASSERT_TRUE(hex0.parse(parse_tos, "0x10"));
    ASSERT_TRUE(neg.parse(parse_tos, "!16"));
    ASSERT_TRUE(win.parse(parse_window, "16"));
    ASSERT_TRUE(seq16.parse(parse_seq, "16"));
    const HeaderOption& o = *dec.rule.header_options[0];
    EXPECT_STREQ(o.keyword(), "tos");
    EXPECT_STREQ(win.rule.header_options[0]->keyword(), "window");
    EXPECT_STREQ(seq16.rule.header_options[0]->keyword(), "seq");
    EXPECT_TRUE(o.equals(*hex.rule.header_options[0]));
    EXPECT_TRUE(o.equals(*hex0.rule.header_options[0]));
    EXPECT_EQ(o.hash(), hex.rule.header_options[0]->hash());
    EXPECT_FALSE(o.equals(*neg.rule.header_options[0]));
    EXPECT_FALSE(o.equals(*win.rule.header_options[0]));
    EXPECT_FALSE(win.rule.header_options[0]->equals(*seq16.rule.header_options[0]));
}

TEST(IpTcpFieldsTest, AllOfARulesHeaderOptionsMustMatch) {
    // The guide's NULL scan rule: ack:0; flags:0; seq:0; plus a window and a tos.
    Fixture f;
    ASSERT_TRUE(f.parse(parse_ack, "0"));
    ASSERT_TRUE(f.parse(parse_flags, "0"));
    ASSERT_TRUE(f.parse(parse_seq, "0"));
    ASSERT_TRUE(f.parse(parse_window, "!0"));
    ASSERT_TRUE(f.parse(parse_tos, "0"));
    decode::Packet p = tcp_packet(0);
    p.tcp_seq = 0;
    p.tcp_ack = 0;
    p.tcp_window = 1024;
    p.tos = 0;
    EXPECT_TRUE(f.match(ctx(p)));
    p.tcp_seq = 1;
    EXPECT_FALSE(f.match(ctx(p)));
    p.tcp_seq = 0;
    p.tcp_window = 0;
    EXPECT_FALSE(f.match(ctx(p)));
    p.tcp_window = 1024;
    p.tos = 4;
    EXPECT_FALSE(f.match(ctx(p)));
}

}  // namespace
}  // namespace picket::sensor::detect
