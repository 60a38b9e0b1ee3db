// Reject responses (sensor/engine/respond.h): exact bytes for IPv4 (expected frames computed
// independently with Python's struct module), and every built frame decoded back with
// checksum validation on.
#include "sensor/engine/respond.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/frames.h"

namespace picket::sensor::engine {
namespace {

namespace frames = picket::testing::frames;
using frames::Bytes;

// Ethernet (optionally one 802.1Q tag) + IPv4 10.0.0.1 -> 10.0.0.2 (TOS 0, DF) + L4 segment.
Bytes eth_ipv4(uint8_t proto, const Bytes& l4, bool vlan = false) {
    frames::V4 h;
    h.with_proto(proto).with_tos(0).with_frag(0x4000);
    if (vlan) {
        return frames::eth(frames::kServerMac, frames::kClientMac, 0x0800, frames::ipv4(h, l4),
                           {{0x8100, 0x0064}});
    }
    return frames::eth(frames::kServerMac, frames::kClientMac, 0x0800, frames::ipv4(h, l4));
}

// Ethernet + IPv6 fd00::1 -> fd00::2 (traffic class 0, hop limit 64) + L4 segment.
Bytes eth_ipv6(uint8_t proto, const Bytes& l4) {
    frames::V6 h;
    h.with_addrs({0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
                 {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2})
        .with_tclass(0)
        .with_hlim(64)
        .with_nh(proto)
        .with_l4_proto(proto);
    return frames::eth(frames::kServerMac, frames::kClientMac, 0x86dd, frames::ipv6(h, l4));
}

// TCP 40000 -> 80, window 512.
Bytes tcp_seg(uint32_t seq, uint32_t ack, uint8_t flags, const std::string& payload) {
    Bytes t = frames::tcp(40000, 80, flags, {}, Bytes(payload.begin(), payload.end()));
    frames::set_tcp_numbers(t, seq, ack, 512);
    return t;
}

// UDP 5353 -> 53.
Bytes udp_dgram(const std::string& payload) {
    return frames::udp(5353, 53, Bytes(payload.begin(), payload.end()));
}

class RespondTest : public ::testing::Test {
protected:
    decode::Packet decode(const Bytes& f, int linktype = decode::kDltEn10mb) {
        decode::Packet p;
        EXPECT_EQ(decode::decode_packet(ctx_, linktype, f.data(), static_cast<uint32_t>(f.size()),
                                        static_cast<uint32_t>(f.size()), 0, p),
                  decode::DecodeResult::kOk);
        EXPECT_FALSE(p.has(decode::kFlagBadChecksum));
        EXPECT_FALSE(p.has(decode::kFlagInvalid));
        return p;
    }
    Bytes rst(const decode::Packet& p, bool to_sender, bool eth, bool dropped = false) {
        uint8_t buf[kMaxResponseFrame];
        return Bytes(buf, buf + build_tcp_rst(p, to_sender, buf, sizeof(buf), eth, dropped));
    }
    Bytes icmp(const decode::Packet& p, bool eth) {
        uint8_t buf[kMaxResponseFrame];
        return Bytes(buf, buf + build_icmp_unreachable(p, buf, sizeof(buf), eth));
    }

    decode::DecodeContext ctx_{decode::DecodeOptions{decode::ChecksumMode::kYes}};
};

TEST_F(RespondTest, Ipv4RstToSenderExactBytes) {
    const Bytes in = eth_ipv4(6, tcp_seg(1000, 2000, 0x18, "abcde"));
    const decode::Packet p = decode(in);
    const Bytes want = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00,
                        0x02, 0x08, 0x00, 0x45, 0x00, 0x00, 0x28, 0x00, 0x00, 0x40, 0x00,
                        0x40, 0x06, 0x26, 0xce, 0x0a, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00,
                        0x01, 0x00, 0x50, 0x9c, 0x40, 0x00, 0x00, 0x07, 0xd0, 0x00, 0x00,
                        0x03, 0xed, 0x50, 0x14, 0x00, 0x00, 0xf3, 0x80, 0x00, 0x00};
    const Bytes got = rst(p, true, true);
    EXPECT_EQ(got, want);
    const decode::Packet r = decode(got);
    EXPECT_EQ(r.sport, 80);
    EXPECT_EQ(r.dport, 40000);
    EXPECT_EQ(r.tcp_seq, 2000u);
    EXPECT_EQ(r.tcp_ack, 1005u);
    EXPECT_EQ(r.tcp_flags, 0x14);
}

TEST_F(RespondTest, Ipv4RstToReceiverSeqDependsOnWhetherTheSegmentGotThrough) {
    const Bytes in = eth_ipv4(6, tcp_seg(1000, 2000, 0x18, "abcde"));
    const decode::Packet p = decode(in);
    const Bytes passed = rst(p, false, false);  // raw IP: for the raw socket responder
    ASSERT_EQ(passed.size(), 40u);
    const decode::Packet r = decode(passed, decode::kDltRaw);
    char a[46], b[46];
    EXPECT_STREQ(r.src.to_string(a), "10.0.0.1");
    EXPECT_STREQ(r.dst.to_string(b), "10.0.0.2");
    EXPECT_EQ(r.sport, 40000);
    EXPECT_EQ(r.dport, 80);
    EXPECT_EQ(r.tcp_seq, 1005u);
    EXPECT_EQ(r.tcp_ack, 2000u);
    EXPECT_EQ(r.tcp_flags, 0x14);
    EXPECT_EQ(r.ttl, 64);
    const decode::Packet d = decode(rst(p, false, false, true), decode::kDltRaw);
    EXPECT_EQ(d.tcp_seq, 1000u);
    EXPECT_EQ(d.tcp_ack, 2000u);
}

TEST_F(RespondTest, SynCountsOneInTheAckAndReceiverRstHasNoAck) {
    const Bytes in = eth_ipv4(6, tcp_seg(77, 0, 0x02, ""));
    const decode::Packet p = decode(in);
    const decode::Packet s = decode(rst(p, true, true));
    EXPECT_EQ(s.tcp_seq, 0u);
    EXPECT_EQ(s.tcp_ack, 78u);
    EXPECT_EQ(s.tcp_flags, 0x14);
    const decode::Packet r = decode(rst(p, false, true));
    EXPECT_EQ(r.tcp_seq, 78u);
    EXPECT_EQ(r.tcp_ack, 0u);
    EXPECT_EQ(r.tcp_flags, 0x04);
}

TEST_F(RespondTest, VlanTagIsKeptAndMacsSwappedTowardTheSender) {
    const Bytes in = eth_ipv4(6, tcp_seg(1, 2, 0x10, "x"), true);
    const decode::Packet p = decode(in);
    const Bytes s = rst(p, true, true);
    ASSERT_EQ(s.size(), 58u);
    EXPECT_EQ(Bytes(s.begin(), s.begin() + 18),
              (Bytes{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0x00, 0x00, 0x64, 0x08, 0x00}));
    const decode::Packet r = decode(s);
    EXPECT_EQ(r.vlan_count, 1);
    EXPECT_EQ(r.vlan_id[0], 100);
    const Bytes t = rst(p, false, true);
    EXPECT_EQ(Bytes(t.begin(), t.begin() + 18), Bytes(in.begin(), in.begin() + 18));
}

TEST_F(RespondTest, Ipv6RstBothWays) {
    const Bytes in = eth_ipv6(6, tcp_seg(5000, 9000, 0x19, "hello"));
    const decode::Packet p = decode(in);
    const Bytes s = rst(p, true, true);
    ASSERT_EQ(s.size(), 14u + 40 + 20);
    EXPECT_EQ(s[12], 0x86);
    EXPECT_EQ(s[13], 0xdd);
    const decode::Packet r = decode(s);
    char a[46], b[46];
    EXPECT_STREQ(r.src.to_string(a), "fd00::2");
    EXPECT_STREQ(r.dst.to_string(b), "fd00::1");
    EXPECT_EQ(r.tcp_seq, 9000u);
    EXPECT_EQ(r.tcp_ack, 5006u);  // 5 bytes + FIN
    EXPECT_EQ(r.ttl, 64);
    const decode::Packet d = decode(rst(p, false, false, true), decode::kDltRaw);
    EXPECT_STREQ(d.src.to_string(a), "fd00::1");
    EXPECT_EQ(d.tcp_seq, 5000u);
    EXPECT_EQ(d.tcp_ack, 9000u);
}

TEST_F(RespondTest, Ipv4PortUnreachableExactBytes) {
    const Bytes in = eth_ipv4(17, udp_dgram("query"));
    const decode::Packet p = decode(in);
    const Bytes want = {0x45, 0x00, 0x00, 0x38, 0x00, 0x00, 0x40, 0x00, 0x40, 0x01, 0x26, 0xc3,
                        0x0a, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x01, 0x03, 0x03, 0x61, 0x06,
                        0x00, 0x00, 0x00, 0x00, 0x45, 0x00, 0x00, 0x21, 0x12, 0x34, 0x40, 0x00,
                        0x40, 0x11, 0x14, 0x96, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
                        0x14, 0xe9, 0x00, 0x35, 0x00, 0x0d, 0x86, 0xcb};
    const Bytes got = icmp(p, false);
    EXPECT_EQ(got, want);
    const decode::Packet r = decode(got, decode::kDltRaw);
    EXPECT_EQ(r.icmp_type, 3);
    EXPECT_EQ(r.icmp_code, 3);
    const Bytes eth = icmp(p, true);
    ASSERT_EQ(eth.size(), 14 + want.size());
    EXPECT_EQ(Bytes(eth.begin() + 14, eth.end()), want);
    EXPECT_EQ(Bytes(eth.begin(), eth.begin() + 12), (Bytes{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2}));
}

TEST_F(RespondTest, Ipv6PortUnreachableQuotesThePacket) {
    const Bytes in = eth_ipv6(17, udp_dgram("query"));
    const decode::Packet p = decode(in);
    const Bytes got = icmp(p, true);
    ASSERT_EQ(got.size(), 14u + 40 + 8 + (in.size() - 14));
    const decode::Packet r = decode(got);  // validates the ICMPv6 checksum
    EXPECT_EQ(r.icmp_type, 1);
    EXPECT_EQ(r.icmp_code, 4);
    char a[46];
    EXPECT_STREQ(r.dst.to_string(a), "fd00::1");
    EXPECT_EQ(Bytes(got.begin() + 14 + 48, got.end()), Bytes(in.begin() + 14, in.end()));
}

TEST_F(RespondTest, NothingIsBuiltWhereNoResponseFits) {
    const Bytes f1 = eth_ipv4(6, tcp_seg(1, 2, 0x14, ""));  // an RST itself
    const decode::Packet tcp = decode(f1);
    EXPECT_EQ(rst(tcp, true, true).size(), 0u);
    const Bytes f2 = eth_ipv4(17, udp_dgram("q"));
    const decode::Packet udp = decode(f2);
    EXPECT_EQ(rst(udp, true, true).size(), 0u);
    const Bytes f3 = eth_ipv4(6, tcp_seg(1, 2, 0x10, ""));
    const decode::Packet data = decode(f3);
    EXPECT_EQ(icmp(data, false).size(), 0u);
    uint8_t small[50];
    EXPECT_EQ(build_tcp_rst(data, true, small, sizeof(small), true), 0u);  // needs 54
    EXPECT_EQ(build_tcp_rst(data, true, small, sizeof(small), false), 40u);
    const Bytes raw(f3.begin() + 14, f3.end());
    const decode::Packet r = decode(raw, decode::kDltRaw);
    uint8_t buf[kMaxResponseFrame];
    EXPECT_EQ(build_tcp_rst(r, true, buf, sizeof(buf), true), 0u);  // no link header to copy
}

}  // namespace
}  // namespace picket::sensor::engine
