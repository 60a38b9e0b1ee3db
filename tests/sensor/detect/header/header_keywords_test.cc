#include <gtest/gtest.h>

#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::ctx;
using test::eval;
using test::Fixture;
using test::parse_error;
using test::tcp_packet;

TEST(TtlTest, Operators) {
    decode::Packet p = tcp_packet(0x02);
    p.ttl = 64;
    EXPECT_EQ(eval(parse_ttl, "64", p), 1);
    EXPECT_EQ(eval(parse_ttl, "63", p), 0);
    EXPECT_EQ(eval(parse_ttl, "<65", p), 1);
    EXPECT_EQ(eval(parse_ttl, "<64", p), 0);
    EXPECT_EQ(eval(parse_ttl, ">63", p), 1);
    EXPECT_EQ(eval(parse_ttl, ">64", p), 0);
    EXPECT_EQ(eval(parse_ttl, "<=64", p), 1);
    EXPECT_EQ(eval(parse_ttl, ">=65", p), 0);
    EXPECT_EQ(eval(parse_ttl, "!64", p), 0);
    EXPECT_EQ(eval(parse_ttl, "!63", p), 1);
    EXPECT_EQ(eval(parse_ttl, "63-65", p), 1);  // exclusive range
    EXPECT_EQ(eval(parse_ttl, "64-70", p), 0);
    EXPECT_EQ(eval(parse_ttl, "60<>70", p), 1);
    EXPECT_EQ(eval(parse_ttl, " \"64\" ", p), 1);
    // Hex and blanks, as Suricata's integer keywords take them (#22).
    EXPECT_EQ(eval(parse_ttl, "0x40", p), 1);
    EXPECT_EQ(eval(parse_ttl, "!0x40", p), 0);
    EXPECT_EQ(eval(parse_ttl, "> 0x3f", p), 1);
    EXPECT_EQ(eval(parse_ttl, "0x3c <> 0x41", p), 1);
    EXPECT_EQ(eval(parse_ttl, "!60-70", p), 0);
    EXPECT_EQ(eval(parse_ttl, "!64-70", p), 1);
    p.ip_version = 6;  // hop limit
    EXPECT_EQ(eval(parse_ttl, "64", p), 1);
    p.ip_version = 0;  // not IP
    EXPECT_EQ(eval(parse_ttl, "64", p), 0);
}

TEST(TtlTest, Errors) {
    EXPECT_EQ(parse_error(parse_ttl, "", false), "ttl: a value is required");
    EXPECT_EQ(parse_error(parse_ttl, "abc"),
              "ttl: invalid value 'abc' (expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M with "
              "N from 0 to 255)");
    EXPECT_EQ(parse_error(parse_ttl, "256"), "ttl: value out of range 0-255 in '256'");
    EXPECT_EQ(parse_error(parse_ttl, "10-5"),
              "ttl: invalid range '10-5' (the first value must be below the second)");
    EXPECT_EQ(parse_error(parse_ttl, "<0"), "ttl: '<0' can never match (values are 0-255)");
    EXPECT_EQ(parse_error(parse_ttl, ">=0"), "ttl: '>=0' always matches (values are 0-255)");
}

TEST(TosIdTest, ExactValues) {
    decode::Packet p = tcp_packet(0x10);
    p.tos = 0x10;
    p.ip_id = 4242;
    EXPECT_EQ(eval(parse_tos, "16", p), 1);
    EXPECT_EQ(eval(parse_tos, "0x10", p), 1);
    EXPECT_EQ(eval(parse_tos, "x10", p), 1);
    EXPECT_EQ(eval(parse_tos, "!16", p), 0);
    EXPECT_EQ(eval(parse_tos, "!8", p), 1);
    EXPECT_EQ(eval(parse_id, "4242", p), 1);
    EXPECT_EQ(eval(parse_id, "\"4242\"", p), 1);
    EXPECT_EQ(eval(parse_id, "4243", p), 0);
    EXPECT_EQ(parse_error(parse_id, "70000"), "id: value out of range 0-65535 in '70000'");
    EXPECT_EQ(parse_error(parse_tos, "0x1ff"), "tos: value out of range 0-255 in '0x1ff'");
    p.ip_version = 6;  // tos and id are IPv4-only
    EXPECT_EQ(eval(parse_tos, "16", p), 0);
    EXPECT_EQ(eval(parse_id, "4242", p), 0);
}

TEST(IpProtoTest, NumbersNamesOperators) {
    decode::Packet p = tcp_packet(0x02);
    EXPECT_EQ(eval(parse_ip_proto, "6", p), 1);
    EXPECT_EQ(eval(parse_ip_proto, "tcp", p), 1);
    EXPECT_EQ(eval(parse_ip_proto, "TCP", p), 1);
    EXPECT_EQ(eval(parse_ip_proto, "udp", p), 0);
    EXPECT_EQ(eval(parse_ip_proto, "!17", p), 1);
    EXPECT_EQ(eval(parse_ip_proto, "!tcp", p), 0);
    EXPECT_EQ(eval(parse_ip_proto, "<7", p), 1);
    EXPECT_EQ(eval(parse_ip_proto, ">6", p), 0);
    p.proto = 47;
    EXPECT_EQ(eval(parse_ip_proto, "gre", p), 1);
    EXPECT_EQ(parse_error(parse_ip_proto, "nope"), "ip_proto: unknown protocol 'nope'");
    EXPECT_EQ(parse_error(parse_ip_proto, "300"),
              "ip_proto: invalid protocol number '300' (0-255)");
}

TEST(SameIpTest, Matches) {
    decode::Packet p = tcp_packet(0x02);
    EXPECT_EQ(eval(parse_sameip, "", p), 0);
    p.dst = p.src;
    Fixture f;
    ASSERT_TRUE(f.parse(parse_sameip, "", false));
    EXPECT_TRUE(f.match(ctx(p)));
    EXPECT_EQ(parse_error(parse_sameip, "x"), "sameip: takes no value");
}

TEST(FragbitsTest, Modifiers) {
    uint8_t ip[20] = {0x45};
    decode::Packet p = tcp_packet(0);
    p.l3 = ip;
    p.l3_len = 20;
    ip[6] = 0x40;  // DF
    EXPECT_EQ(eval(parse_fragbits, "D", p), 1);
    EXPECT_EQ(eval(parse_fragbits, "M", p), 0);
    EXPECT_EQ(eval(parse_fragbits, "DM", p), 0);
    EXPECT_EQ(eval(parse_fragbits, "*DM", p), 1);
    EXPECT_EQ(eval(parse_fragbits, "!M", p), 1);
    EXPECT_EQ(eval(parse_fragbits, "!D", p), 0);
    ip[6] = 0x60;  // DF + MF
    EXPECT_EQ(eval(parse_fragbits, "D", p), 0);
    EXPECT_EQ(eval(parse_fragbits, "+D", p), 1);
    EXPECT_EQ(eval(parse_fragbits, "D+", p), 1);  // Snort's trailing modifier
    EXPECT_EQ(eval(parse_fragbits, "+R", p), 0);
    ip[6] = 0x80;  // reserved
    EXPECT_EQ(eval(parse_fragbits, "R", p), 1);
    EXPECT_EQ(parse_error(parse_fragbits, "X"),
              "fragbits: invalid bit 'X' in 'X' (expected M, D, R and one of + * !)");
    EXPECT_EQ(parse_error(parse_fragbits, "+*M"),
              "fragbits: only one modifier is allowed in '+*M'");
    p.ip_version = 6;
    EXPECT_EQ(eval(parse_fragbits, "R", p), 0);
}

TEST(FlagsTest, ModifiersAndMask) {
    constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;
    constexpr uint8_t kEce = 0x40, kCwr = 0x80;
    EXPECT_EQ(eval(parse_flags, "S", tcp_packet(kSyn)), 1);
    EXPECT_EQ(eval(parse_flags, "S", tcp_packet(kSyn | kAck)), 0);
    EXPECT_EQ(eval(parse_flags, "SA", tcp_packet(kSyn | kAck)), 1);
    EXPECT_EQ(eval(parse_flags, "+S", tcp_packet(kSyn | kAck)), 1);
    EXPECT_EQ(eval(parse_flags, "+SA", tcp_packet(kSyn)), 0);
    EXPECT_EQ(eval(parse_flags, "AP+", tcp_packet(kAck | kPsh | kSyn | kRst)), 1);
    EXPECT_EQ(eval(parse_flags, "*SF", tcp_packet(kFin | kAck)), 1);
    EXPECT_EQ(eval(parse_flags, "*SR", tcp_packet(kFin | kAck)), 0);
    EXPECT_EQ(eval(parse_flags, "!S", tcp_packet(kAck)), 1);
    EXPECT_EQ(eval(parse_flags, "!S", tcp_packet(kSyn)), 0);
    EXPECT_EQ(eval(parse_flags, "S,12", tcp_packet(kSyn | kEce | kCwr)), 1);
    EXPECT_EQ(eval(parse_flags, "S,CE", tcp_packet(kSyn | kEce)), 1);
    EXPECT_EQ(eval(parse_flags, "S", tcp_packet(kSyn | kEce)), 0);
    EXPECT_EQ(eval(parse_flags, "SE", tcp_packet(kSyn | kEce)), 1);
    EXPECT_EQ(eval(parse_flags, "S2", tcp_packet(kSyn | kEce)), 1);
    EXPECT_EQ(eval(parse_flags, "0", tcp_packet(0)), 1);
    EXPECT_EQ(eval(parse_flags, "0", tcp_packet(kAck)), 0);
    EXPECT_EQ(eval(parse_flags, "!0", tcp_packet(kAck)), 1);
    decode::Packet udp = tcp_packet(kSyn);
    udp.flags = decode::kFlagIpv4 | decode::kFlagUdp;
    EXPECT_EQ(eval(parse_flags, "S", udp), 0);
    EXPECT_EQ(parse_error(parse_flags, "SX"), "flags: invalid flag 'X' in 'SX'");
    EXPECT_EQ(parse_error(parse_flags, "!+S"), "flags: only one modifier is allowed in '!+S'");
    EXPECT_EQ(parse_error(parse_flags, "S,"), "flags: empty mask in 'S,'");
    EXPECT_EQ(parse_error(parse_flags, "S,Q"), "flags: invalid mask flag 'Q' in 'S,Q'");
    EXPECT_EQ(parse_error(parse_flags, "+"), "flags: no flag given in '+'");
}

TEST(TcpFieldsTest, SeqAckWindow) {
    decode::Packet p = tcp_packet(0x10);
    p.tcp_seq = 3000000000u;
    p.tcp_ack = 12345;
    p.tcp_window = 512;
    EXPECT_EQ(eval(parse_seq, "3000000000", p), 1);
    EXPECT_EQ(eval(parse_seq, "0", p), 0);
    EXPECT_EQ(eval(parse_ack, "12345", p), 1);
    EXPECT_EQ(eval(parse_ack, "12346", p), 0);
    EXPECT_EQ(eval(parse_window, "512", p), 1);
    EXPECT_EQ(eval(parse_window, "!512", p), 0);
    EXPECT_EQ(eval(parse_window, "!1024", p), 1);
    EXPECT_EQ(parse_error(parse_window, "65536"), "window: value out of range 0-65535 in '65536'");
    EXPECT_EQ(parse_error(parse_seq, "4294967296"),
              "seq: value out of range 0-4294967295 in '4294967296'");
    EXPECT_EQ(parse_error(parse_ack, "!1"),
              "ack: invalid value '!1' (expected N with N from 0 to 4294967295)");
    p.flags = decode::kFlagIpv4 | decode::kFlagUdp;
    EXPECT_EQ(eval(parse_seq, "3000000000", p), 0);
    EXPECT_EQ(eval(parse_window, "512", p), 0);
}

TEST(IcmpTest, TypeCodeIdSeq) {
    decode::Packet p;
    p.flags = decode::kFlagIpv4 | decode::kFlagIcmpv4;
    p.ip_version = 4;
    p.proto = 1;
    p.icmp_type = 8;
    p.icmp_code = 0;
    p.icmp_id = 77;
    p.icmp_seq = 3;
    EXPECT_EQ(eval(parse_itype, "8", p), 1);
    EXPECT_EQ(eval(parse_itype, "<8", p), 0);
    EXPECT_EQ(eval(parse_itype, ">7", p), 1);
    EXPECT_EQ(eval(parse_itype, "7<>9", p), 1);
    EXPECT_EQ(eval(parse_itype, "8<>9", p), 0);
    EXPECT_EQ(eval(parse_icode, "0", p), 1);
    EXPECT_EQ(eval(parse_icode, ">0", p), 0);
    EXPECT_EQ(eval(parse_icmp_id, "77", p), 1);
    EXPECT_EQ(eval(parse_icmp_id, "78", p), 0);
    EXPECT_EQ(eval(parse_icmp_seq, "3", p), 1);
    p.icmp_type = 3;  // destination unreachable carries no id/seq
    EXPECT_EQ(eval(parse_icmp_id, "77", p), 0);
    EXPECT_EQ(eval(parse_icmp_seq, "3", p), 0);
    p.flags = decode::kFlagIpv6 | decode::kFlagIcmpv6;
    p.icmp_type = 128;
    EXPECT_EQ(eval(parse_icmp_id, "77", p), 1);
    EXPECT_EQ(eval(parse_itype, "128", p), 1);
    decode::Packet t = tcp_packet(0x02);
    EXPECT_EQ(eval(parse_itype, "0", t), 0);
    EXPECT_EQ(parse_error(parse_icode, "5<>5"),
              "icode: invalid range '5<>5' (the first value must be below the second)");
    EXPECT_EQ(parse_error(parse_itype, "x"),
              "itype: invalid value 'x' (expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M with "
              "N from 0 to 255)");
}

TEST(HashEqualsTest, IdenticalOptionsShare) {
    Fixture a, b, c;
    ASSERT_TRUE(a.parse(parse_ttl, "<10"));
    ASSERT_TRUE(b.parse(parse_ttl, " < 10 "));
    ASSERT_TRUE(c.parse(parse_ttl, "<11"));
    const HeaderOption& oa = *a.rule.header_options[0];
    EXPECT_TRUE(oa.equals(*b.rule.header_options[0]));
    EXPECT_EQ(oa.hash(), b.rule.header_options[0]->hash());
    EXPECT_FALSE(oa.equals(*c.rule.header_options[0]));
    Fixture d;
    ASSERT_TRUE(d.parse(parse_itype, "<10"));  // same spec, other keyword
    EXPECT_FALSE(oa.equals(*d.rule.header_options[0]));
    Fixture e, g;
    ASSERT_TRUE(e.parse(parse_flags, "S,12"));
    ASSERT_TRUE(g.parse(parse_flags, "S,CE"));
    EXPECT_TRUE(e.rule.header_options[0]->equals(*g.rule.header_options[0]));
    EXPECT_STREQ(e.rule.header_options[0]->keyword(), "flags");
}

TEST(NoalertTest, SetsFlag) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_noalert, "", false));
    EXPECT_TRUE(f.rule.noalert);
    EXPECT_EQ(parse_error(parse_noalert, "x"), "noalert: takes no value");
}

}  // namespace
}  // namespace picket::sensor::detect
