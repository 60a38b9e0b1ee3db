#include "sensor/decode/decode.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/frames.h"

namespace picket::sensor::decode {
namespace {

using namespace picket::testing::frames;  // NOLINT: the builders

class DecodeTest : public ::testing::Test {
protected:
    DecodeResult run(int linktype, const Bytes& b) {
        return decode_packet(ctx_, linktype, b.data(), static_cast<uint32_t>(b.size()),
                             static_cast<uint32_t>(b.size()), 1000, p_);
    }
    DecodeResult eth_run(const Bytes& b) { return run(kDltEn10mb, b); }
    uint64_t ev(DecodeEvent e) const {
        return ctx_.counters().events[static_cast<size_t>(e)].get();
    }
    uint64_t total_events() const {
        uint64_t n = 0;
        for (const Counter& c : ctx_.counters().events) {
            n += c.get();
        }
        return n;
    }
    std::string str(const Address& a) const {
        char buf[46];
        return a.to_string(buf);
    }

    DecodeContext ctx_{DecodeOptions{ChecksumMode::kYes}};
    Packet p_;
};

// ---- Link layers -----------------------------------------------------------------------

TEST_F(DecodeTest, EthernetIpv4TcpFields) {
    const Bytes payload = {'h', 'e', 'l', 'l', 'o'};
    const Bytes f = eth(0x0800, ipv4(V4{}, tcp(1234, 80, 0x18, {}, payload)));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.flags, kFlagIpv4 | kFlagTcp);
    EXPECT_EQ(p_.data, f.data());
    EXPECT_EQ(p_.caplen, 59u);
    EXPECT_EQ(p_.ts_ns, 1000);
    EXPECT_EQ(p_.ethertype, 0x0800);
    EXPECT_EQ(p_.ip_version, 4);
    EXPECT_EQ(p_.l3, f.data() + 14);
    EXPECT_EQ(p_.l3_len, 45u);
    EXPECT_EQ(p_.ip_hdr_len, 20);
    EXPECT_EQ(str(p_.src), "10.0.0.1");
    EXPECT_EQ(str(p_.dst), "10.0.0.2");
    EXPECT_EQ(p_.proto, 6);
    EXPECT_EQ(p_.ttl, 64);
    EXPECT_EQ(p_.tos, 0x10);
    EXPECT_EQ(p_.ip_id, 0x1234);
    EXPECT_EQ(p_.l4, f.data() + 34);
    EXPECT_EQ(p_.l4_len, 25u);
    EXPECT_EQ(p_.sport, 1234);
    EXPECT_EQ(p_.dport, 80);
    EXPECT_EQ(p_.tcp_seq, 1000u);
    EXPECT_EQ(p_.tcp_ack, 2000u);
    EXPECT_EQ(p_.tcp_flags, 0x18);
    EXPECT_EQ(p_.tcp_window, 65535);
    EXPECT_EQ(p_.tcp_hdr_len, 20);
    EXPECT_EQ(p_.tcp_mss, 0);
    EXPECT_EQ(p_.tcp_wscale, 0xff);
    EXPECT_EQ(p_.payload, f.data() + 54);
    EXPECT_EQ(p_.payload_len, 5u);
    EXPECT_EQ(total_events(), 0u);
    EXPECT_EQ(ctx_.counters().ethernet.get(), 1u);
    EXPECT_EQ(ctx_.counters().ipv4.get(), 1u);
    EXPECT_EQ(ctx_.counters().tcp.get(), 1u);
}

TEST_F(DecodeTest, PcapCntKeptAcrossDecode) {
    const Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02)));
    p_.pcap_cnt = 77;
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.pcap_cnt, 77u);
}

TEST_F(DecodeTest, EthernetTooSmall) {
    const Bytes f(13, 0);
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kEthernetPktTooSmall), 1u);
    EXPECT_TRUE(p_.has(kFlagInvalid));
    EXPECT_EQ(ctx_.counters().invalid.get(), 1u);
}

TEST_F(DecodeTest, EthernetPaddingIsNotPayload) {
    Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x10)));
    f.resize(60, 0xAA);  // minimum Ethernet frame
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.l3_len, 40u);
    EXPECT_EQ(p_.l4_len, 20u);
    EXPECT_EQ(p_.payload_len, 0u);
    EXPECT_EQ(total_events(), 0u);  // the padding is not in the TCP checksum either
}

TEST_F(DecodeTest, UdpPaddingIsNotPayload) {
    Bytes f = eth(0x0800, ipv4(V4().with_proto(kUdp), udp(53, 5353, {1, 2})));
    f.resize(60, 0xAA);
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.payload_len, 2u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, SingleVlan) {
    const Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02)), {{0x8100, 0x2064}});  // PCP 1, 100
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagVlan | kFlagTcp));
    EXPECT_EQ(p_.vlan_count, 1);
    EXPECT_EQ(p_.vlan_id[0], 100);
    EXPECT_EQ(p_.ethertype, 0x0800);
    EXPECT_EQ(p_.l3, f.data() + 18);
    EXPECT_EQ(ctx_.counters().vlan.get(), 1u);
    EXPECT_EQ(ctx_.counters().vlan_qinq.get(), 0u);
}

TEST_F(DecodeTest, QinQ88a8) {
    const Bytes f = eth(0x86dd, ipv6(V6{}, tcp(1, 2, 0x02)), {{0x88a8, 200}, {0x8100, 300}});
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.vlan_count, 2);
    EXPECT_EQ(p_.vlan_id[0], 200);
    EXPECT_EQ(p_.vlan_id[1], 300);
    EXPECT_EQ(p_.ip_version, 6);
    EXPECT_EQ(ctx_.counters().vlan.get(), 1u);
    EXPECT_EQ(ctx_.counters().vlan_qinq.get(), 1u);
}

TEST_F(DecodeTest, QinQ9100) {
    const Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02)), {{0x9100, 7}, {0x8100, 8}});
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.vlan_id[0], 7);
    EXPECT_EQ(p_.vlan_id[1], 8);
    EXPECT_EQ(ctx_.counters().vlan_qinq.get(), 1u);
}

TEST_F(DecodeTest, ThirdVlanTagIsTooMany) {
    const Bytes f =
        eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02)), {{0x88a8, 1}, {0x8100, 2}, {0x8100, 3}});
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kVlanTooManyLayers), 1u);
    EXPECT_EQ(p_.vlan_count, 2);
}

TEST_F(DecodeTest, VlanHeaderTooSmall) {
    const Bytes f = {0, 1, 2, 3, 4, 5, 0, 6, 7, 8, 9, 10, 0x81, 0x00, 0x00};
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kVlanHeaderTooSmall), 1u);
}

TEST_F(DecodeTest, ArpCounted) {
    const Bytes f = eth(0x0806, arp_body());
    EXPECT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagArp));
    EXPECT_EQ(ctx_.counters().arp.get(), 1u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, ArpTooSmall) {
    Bytes body = arp_body();
    body.resize(27);
    EXPECT_EQ(eth_run(eth(0x0806, body)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kArpPktTooSmall), 1u);
}

TEST_F(DecodeTest, OtherEthertypeCounted) {
    EXPECT_EQ(eth_run(eth(0x88cc, Bytes(30, 0))), DecodeResult::kOk);  // LLDP
    EXPECT_EQ(ctx_.counters().other_l3.get(), 1u);
    EXPECT_EQ(p_.ethertype, 0x88cc);
    EXPECT_EQ(p_.ip_version, 0);
}

TEST_F(DecodeTest, LinuxSll) {
    Bytes f(16, 0);
    f[14] = 0x08;
    const Bytes ip = ipv4(V4{}, tcp(1, 2, 0x02));
    f.insert(f.end(), ip.begin(), ip.end());
    ASSERT_EQ(run(kDltLinuxSll, f), DecodeResult::kOk);
    EXPECT_EQ(p_.l3, f.data() + 16);
    EXPECT_TRUE(p_.has(kFlagTcp));
    EXPECT_EQ(ctx_.counters().sll.get(), 1u);
    EXPECT_EQ(run(kDltLinuxSll, Bytes(15, 0)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kSllPktTooSmall), 1u);
}

TEST_F(DecodeTest, LinuxSll2) {
    Bytes f(20, 0);
    f[0] = 0x86;
    f[1] = 0xdd;
    const Bytes ip = ipv6(V6{}, tcp(1, 2, 0x02));
    f.insert(f.end(), ip.begin(), ip.end());
    ASSERT_EQ(run(kDltLinuxSll2, f), DecodeResult::kOk);
    EXPECT_EQ(p_.l3, f.data() + 20);
    EXPECT_EQ(p_.ip_version, 6);
    EXPECT_EQ(ctx_.counters().sll.get(), 1u);
    EXPECT_EQ(run(kDltLinuxSll2, Bytes(19, 0)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kSllPktTooSmall), 1u);
}

TEST_F(DecodeTest, RawLinkTypesUseVersionNibble) {
    const Bytes v4 = ipv4(V4{}, tcp(1, 2, 0x02));
    const Bytes v6 = ipv6(V6{}, tcp(1, 2, 0x02));
    for (int lt : {kDltRaw, kDltRawOpenBsd, kLinktypeRaw, kDltIpv4, kDltIpv6}) {
        ASSERT_EQ(run(lt, v4), DecodeResult::kOk) << lt;
        EXPECT_EQ(p_.ip_version, 4) << lt;
        EXPECT_EQ(p_.l3, v4.data()) << lt;
        ASSERT_EQ(run(lt, v6), DecodeResult::kOk) << lt;
        EXPECT_EQ(p_.ip_version, 6) << lt;
        EXPECT_EQ(p_.ethertype, 0x86dd) << lt;
    }
    EXPECT_EQ(ctx_.counters().raw.get(), 10u);
    EXPECT_EQ(ctx_.counters().tcp.get(), 10u);
    EXPECT_EQ(total_events(), 0u);
    const Bytes bad = {0x50, 0, 0, 0};
    EXPECT_EQ(run(kDltRaw, bad), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4WrongIpVersion), 1u);
}

TEST_F(DecodeTest, NullIsHostOrderLoopIsNetworkOrder) {
    const Bytes v4 = ipv4(V4{}, tcp(1, 2, 0x02));
    const Bytes v6 = ipv6(V6{}, tcp(1, 2, 0x02));
    uint32_t fam2 = 2;
    uint32_t fam24 = 24;
    Bytes host2(4), host24(4);
    std::memcpy(host2.data(), &fam2, 4);
    std::memcpy(host24.data(), &fam24, 4);
    ASSERT_EQ(run(kDltNull, cat({host2, v4})), DecodeResult::kOk);
    EXPECT_EQ(p_.ip_version, 4);
    ASSERT_EQ(run(kDltNull, cat({host24, v6})), DecodeResult::kOk);
    EXPECT_EQ(p_.ip_version, 6);
    ASSERT_EQ(run(kDltLoop, cat({{0, 0, 0, 2}, v4})), DecodeResult::kOk);
    EXPECT_EQ(p_.ip_version, 4);
    for (uint8_t fam : {10, 24, 28, 30}) {
        ASSERT_EQ(run(kDltLoop, cat({{0, 0, 0, fam}, v6})), DecodeResult::kOk) << int(fam);
        EXPECT_EQ(p_.ip_version, 6);
        EXPECT_TRUE(p_.has(kFlagTcp));
    }
    EXPECT_EQ(ctx_.counters().null.get(), 7u);
    EXPECT_EQ(total_events(), 0u);
    EXPECT_EQ(run(kDltLoop, cat({{0, 0, 0, 7}, v4})), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kNullUnsupportedType), 1u);
    EXPECT_EQ(run(kDltNull, Bytes{2, 0, 0}), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kNullPktTooSmall), 1u);
}

TEST_F(DecodeTest, UnknownLinkType) {
    EXPECT_EQ(run(147, Bytes(64, 0)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kUnknownLinkType), 1u);
    EXPECT_EQ(ctx_.counters().invalid.get(), 1u);
    EXPECT_EQ(ctx_.counters().pkts.get(), 1u);
}

// ---- IPv4 ------------------------------------------------------------------------------

TEST_F(DecodeTest, Ipv4OptionsWalked) {
    // NOP, Record Route (len 7: ptr + one address), Router Alert (len 4), EOL => 16 bytes.
    const Bytes opts = {1, 7, 7, 4, 0, 0, 0, 0, 148, 4, 0, 0, 0, 0, 0, 0};
    const Bytes f = eth(0x0800, ipv4(V4().with_opts(opts), tcp(1, 2, 0x02)));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagIpv4Options | kFlagTcp));
    EXPECT_EQ(p_.ip_hdr_len, 36);
    EXPECT_EQ(p_.l4, f.data() + 14 + 36);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv4OptionLengthPastHeader) {
    const Bytes opts = {7, 9, 4, 0};  // claims 9 bytes, 4 left
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4().with_opts(opts), tcp(1, 2, 0x02)))),
              DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4OptInvalidLen), 1u);
    EXPECT_TRUE(p_.has(kFlagIpv4Options | kFlagInvalid));
    EXPECT_FALSE(p_.has(kFlagTcp));
}

TEST_F(DecodeTest, Ipv4OptionLengthBelowTwo) {
    const Bytes opts = {68, 1, 0, 0};
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4().with_opts(opts), tcp(1, 2, 0x02)))),
              DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4OptInvalidLen), 1u);
}

TEST_F(DecodeTest, Ipv4OptionDuplicateAndUnknown) {
    const Bytes opts = {148, 4, 0, 0, 148, 4, 0, 0, 99, 4, 0, 0};
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4().with_opts(opts), tcp(1, 2, 0x02)))), DecodeResult::kOk);
    EXPECT_EQ(ev(DecodeEvent::kIpv4OptDuplicate), 1u);
    EXPECT_EQ(ev(DecodeEvent::kIpv4OptUnknown), 1u);
}

TEST_F(DecodeTest, Ipv4Truncated) {
    Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, {}, Bytes(40, 'x'))));
    f.resize(f.size() - 10);  // the frame ends before the datagram the header claims
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4TruncPkt), 1u);
    EXPECT_FALSE(p_.has(kFlagTcp));
}

TEST_F(DecodeTest, Ipv4SnapTruncatedDecodesHeaders) {
    const Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, {}, Bytes(40, 'x'))));
    // Snap length 64: the wire had the whole packet, the capture kept part of it.
    ASSERT_EQ(decode_packet(ctx_, kDltEn10mb, f.data(), 64, static_cast<uint32_t>(f.size()), 0, p_),
              DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagTcp));
    EXPECT_FALSE(p_.has(kFlagBadChecksum));
    EXPECT_EQ(p_.l3_len, 50u);
    EXPECT_EQ(p_.payload_len, 10u);
    EXPECT_EQ(ev(DecodeEvent::kIpv4TruncPkt), 1u);
    EXPECT_EQ(ev(DecodeEvent::kTcpChecksumInvalid), 0u);
}

TEST_F(DecodeTest, Ipv4BadIhl) {
    Bytes ip = ipv4(V4{}, tcp(1, 2, 0x02));
    ip[0] = 0x44;
    EXPECT_EQ(eth_run(eth(0x0800, ip)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4HlenTooSmall), 1u);
}

TEST_F(DecodeTest, Ipv4TotalLengthBelowIhl) {
    Bytes ip = ipv4(V4{}, tcp(1, 2, 0x02));
    put16(ip, 2, 19);
    EXPECT_EQ(eth_run(eth(0x0800, ip)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4IplenSmallerThanHlen), 1u);
}

TEST_F(DecodeTest, Ipv4TooSmallAndWrongVersion) {
    EXPECT_EQ(eth_run(eth(0x0800, Bytes(19, 0x45))), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4PktTooSmall), 1u);
    Bytes ip = ipv4(V4{}, tcp(1, 2, 0x02));
    ip[0] = 0x65;
    EXPECT_EQ(eth_run(eth(0x0800, ip)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4WrongIpVersion), 1u);
    EXPECT_EQ(ctx_.counters().ipv4.get(), 2u);
}

TEST_F(DecodeTest, Ipv4Fragments) {
    const Bytes data(24, 'd');
    const Bytes f1 = eth(0x0800, ipv4(V4().with_id(0xabcd).with_frag(0x2000),
                                      Bytes(data.begin(), data.begin() + 16)));
    ASSERT_EQ(eth_run(f1), DecodeResult::kFragment);
    EXPECT_TRUE(p_.has(kFlagFragment | kFlagIpv4));
    EXPECT_FALSE(p_.has(kFlagTcp));
    EXPECT_EQ(p_.frag_id, 0xabcdu);
    EXPECT_EQ(p_.frag_offset, 0u);
    EXPECT_TRUE(p_.frag_more);
    EXPECT_EQ(p_.frag_next_header, 6);
    EXPECT_EQ(p_.frag_data, f1.data() + 34);
    EXPECT_EQ(p_.frag_data_len, 16u);
    EXPECT_EQ(p_.l4, nullptr);

    const Bytes f2 = eth(0x0800, ipv4(V4().with_id(0xabcd).with_frag(2), Bytes(8, 'e')));
    ASSERT_EQ(eth_run(f2), DecodeResult::kFragment);
    EXPECT_EQ(p_.frag_offset, 16u);
    EXPECT_FALSE(p_.frag_more);
    EXPECT_EQ(p_.frag_data_len, 8u);
    EXPECT_EQ(ctx_.counters().ipv4_frag.get(), 2u);
    EXPECT_EQ(ctx_.counters().ipv4.get(), 2u);
    EXPECT_EQ(ctx_.counters().tcp.get(), 0u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv4FragmentNoChecksumValidation) {
    Bytes ip = ipv4(V4().with_frag(0x2000), Bytes(16, 'd'));
    ip[10] ^= 0xff;  // header checksum wrong, but fragments are not validated
    EXPECT_EQ(eth_run(eth(0x0800, ip)), DecodeResult::kFragment);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv4FragmentTooLarge) {
    // Offset 8189 * 8 = 65512; 20 + 65512 + 16 > 65535.
    const Bytes f = eth(0x0800, ipv4(V4().with_frag(8189), Bytes(16, 'd')));
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4FragPktTooLarge), 1u);
    // 20 + 65512 + 0 fits... with 3 bytes: 65535 exactly is allowed.
    const Bytes ok = eth(0x0800, ipv4(V4().with_frag(8189), Bytes(3, 'd')));
    EXPECT_EQ(eth_run(ok), DecodeResult::kFragment);
    EXPECT_EQ(ev(DecodeEvent::kIpv4FragPktTooLarge), 1u);
}

// ---- IPv6 ------------------------------------------------------------------------------

TEST_F(DecodeTest, Ipv6Fields) {
    const Bytes f = eth(0x86dd, ipv6(V6{}, tcp(443, 5000, 0x12, {}, {1, 2, 3})));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.flags, kFlagIpv6 | kFlagTcp);
    EXPECT_EQ(str(p_.src), "2001:db8::1");
    EXPECT_EQ(str(p_.dst), "2001:db8::2");
    EXPECT_EQ(p_.ttl, 63);
    EXPECT_EQ(p_.tos, 0x02);
    EXPECT_EQ(p_.l3_len, 63u);
    EXPECT_EQ(p_.ip_hdr_len, 40);
    EXPECT_EQ(p_.sport, 443);
    EXPECT_EQ(p_.payload_len, 3u);
    EXPECT_EQ(ctx_.counters().ipv6.get(), 1u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv6ExtensionHeaderChain) {
    // HBH(8) -> DST(8) -> Routing(8) -> AH(24) -> DST(8) -> TCP.
    const Bytes l4 = tcp(1, 2, 0x02, {}, {9, 9});
    const Bytes payload = cat({ext8(60), ext8(43), ext8(51), ah(60), ext8(kTcp), l4});
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(0).with_l4_off(56), payload));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.ip_hdr_len, 96);
    EXPECT_EQ(p_.proto, 6);
    EXPECT_EQ(p_.l4, f.data() + 14 + 96);
    EXPECT_EQ(p_.payload_len, 2u);
    EXPECT_TRUE(p_.has(kFlagTcp));
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv6HopByHopNotFirst) {
    const Bytes payload = cat({ext8(0), ext8(kUdp), udp(1, 2)});
    const Bytes f =
        eth(0x86dd, ipv6(V6().with_nh(60).with_l4_off(16).with_l4_proto(kUdp), payload));
    EXPECT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(ev(DecodeEvent::kIpv6HopoptsNotFirst), 1u);
    EXPECT_TRUE(p_.has(kFlagUdp));
    EXPECT_EQ(total_events(), 1u);
}

TEST_F(DecodeTest, Ipv6ZeroLengthPadN) {
    const Bytes hbh = {kTcp, 0, 1, 0, 1, 2, 0, 0};  // PadN len 0, then PadN len 2
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(0).with_l4_off(8), cat({hbh, tcp(1, 2, 0x02)})));
    EXPECT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(ev(DecodeEvent::kIpv6ZeroLenPadn), 1u);
}

TEST_F(DecodeTest, Ipv6NoNextHeader) {
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(60).with_l4_proto(59), ext8(59)));
    EXPECT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.proto, 59);
    EXPECT_EQ(p_.ip_hdr_len, 48);
    EXPECT_EQ(ctx_.counters().other_l4.get(), 1u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv6TruncatedExtensionHeader) {
    Bytes ext = ext8(kTcp);
    ext[1] = 3;  // claims 32 bytes
    const Bytes f =
        eth(0x86dd, ipv6(V6().with_nh(60).with_l4_checksum(false), cat({ext, Bytes(8)})));
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv6TruncExthdr), 1u);
}

TEST_F(DecodeTest, Ipv6TruncatedAndTooSmall) {
    Bytes ip = ipv6(V6{}, tcp(1, 2, 0x02));
    Bytes cut = ip;
    cut.resize(ip.size() - 1);
    EXPECT_EQ(eth_run(eth(0x86dd, cut)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv6TruncPkt), 1u);
    cut.resize(39);
    EXPECT_EQ(eth_run(eth(0x86dd, cut)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv6PktTooSmall), 1u);
    ip[0] = 0x40;
    EXPECT_EQ(eth_run(eth(0x86dd, ip)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv6WrongIpVersion), 1u);
}

TEST_F(DecodeTest, Ipv6FragmentDirectlyAfterHeader) {
    const Bytes data(16, 'z');
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(44).with_l4_checksum(false),
                                     cat({frag6(kTcp, 0, true, 0xdeadbeef), data})));
    ASSERT_EQ(eth_run(f), DecodeResult::kFragment);
    EXPECT_TRUE(p_.has(kFlagFragment | kFlagIpv6));
    EXPECT_FALSE(p_.has(kFlagTcp));
    EXPECT_EQ(p_.frag_id, 0xdeadbeefu);
    EXPECT_EQ(p_.frag_offset, 0u);
    EXPECT_TRUE(p_.frag_more);
    EXPECT_EQ(p_.frag_next_header, 6);
    EXPECT_EQ(p_.frag_prev_nh_offset, 6);
    EXPECT_EQ(p_.frag_unfrag_len, 40);
    EXPECT_EQ(p_.frag_data, f.data() + 14 + 48);
    EXPECT_EQ(p_.frag_data_len, 16u);
    EXPECT_EQ(p_.ip_hdr_len, 48);
    EXPECT_EQ(ctx_.counters().ipv6_frag.get(), 1u);
    EXPECT_EQ(ctx_.counters().tcp.get(), 0u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv6FragmentAfterExtensionHeaders) {
    // HBH(8) -> Routing(8) -> Fragment: the Next Header naming 44 is the routing header's
    // first byte, at offset 48.
    const Bytes f =
        eth(0x86dd, ipv6(V6().with_nh(0).with_l4_checksum(false),
                         cat({ext8(43), ext8(44), frag6(kUdp, 1232, false, 7), Bytes(10, 'q')})));
    ASSERT_EQ(eth_run(f), DecodeResult::kFragment);
    EXPECT_EQ(p_.frag_prev_nh_offset, 48);
    EXPECT_EQ(p_.l3[p_.frag_prev_nh_offset], 44);
    EXPECT_EQ(p_.frag_unfrag_len, 56);
    EXPECT_EQ(p_.frag_next_header, kUdp);
    EXPECT_EQ(p_.frag_offset, 1232u);
    EXPECT_FALSE(p_.frag_more);
    EXPECT_EQ(p_.frag_id, 7u);
    EXPECT_EQ(p_.frag_data_len, 10u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv6FragmentLengthNotMultipleOfEight) {
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(44).with_l4_checksum(false),
                                     cat({frag6(kTcp, 0, true, 1), Bytes(10, 'z')})));
    EXPECT_EQ(eth_run(f), DecodeResult::kFragment);
    EXPECT_EQ(ev(DecodeEvent::kIpv6FragInvalidLength), 1u);
}

TEST_F(DecodeTest, Ipv6FragmentTooLarge) {
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(44).with_l4_checksum(false),
                                     cat({frag6(kTcp, 65528, false, 1), Bytes(16, 'z')})));
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv6FragPktTooLarge), 1u);
}

TEST_F(DecodeTest, Ipv6AtomicFragmentDecodesL4) {
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(44).with_l4_off(8),
                                     cat({frag6(kTcp, 0, false, 5), tcp(1, 2, 0x02)})));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_FALSE(p_.has(kFlagFragment));
    EXPECT_TRUE(p_.has(kFlagTcp));
    EXPECT_EQ(p_.ip_hdr_len, 48);
    EXPECT_EQ(ctx_.counters().ipv6_frag.get(), 0u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Ipv6DuplicateFragmentHeader) {
    const Bytes f =
        eth(0x86dd, ipv6(V6().with_nh(44).with_l4_off(16),
                         cat({frag6(44, 0, false, 5), frag6(kTcp, 0, true, 6), tcp(1, 2, 0x02)})));
    EXPECT_EQ(eth_run(f), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv6ExthdrDupeFh), 1u);
}

// ---- TCP / UDP / ICMP ------------------------------------------------------------------

TEST_F(DecodeTest, TcpOptionsParsedExactly) {
    const Bytes opts = {2, 4,  0x05, 0xb4,                        // MSS 1460
                        1,                                        // NOP
                        3, 3,  7,                                 // WS 7
                        4, 2,                                     // SACK permitted
                        8, 10, 0,    0,    0, 100, 0, 0, 0, 200,  // TS 100 / 200
                        0, 0,  0,    0};                          // EOL + pad
    const Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, opts)));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.tcp_hdr_len, 44);
    EXPECT_EQ(p_.tcp_mss, 1460);
    EXPECT_EQ(p_.tcp_wscale, 7);
    EXPECT_TRUE(p_.tcp_sack_permitted);
    EXPECT_TRUE(p_.tcp_has_timestamp);
    EXPECT_EQ(p_.tcp_tsval, 100u);
    EXPECT_EQ(p_.tcp_tsecr, 200u);
    EXPECT_EQ(p_.payload_len, 0u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, TcpOptionLengthPastHeader) {
    const Bytes opts = {1, 8, 10, 0};  // NOP, TS claiming 10 bytes with 3 left
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, opts)))), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kTcpOptInvalidLen), 1u);
    EXPECT_TRUE(p_.has(kFlagInvalid));
}

TEST_F(DecodeTest, TcpOptionLengthZero) {
    const Bytes opts = {5, 0, 0, 0};
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, opts)))), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kTcpOptInvalidLen), 1u);
}

TEST_F(DecodeTest, TcpOptionWrongFixedLengthIgnored) {
    const Bytes opts = {2, 3, 5, 1};  // MSS with length 3
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, opts)))), DecodeResult::kOk);
    EXPECT_EQ(p_.tcp_mss, 0);
    EXPECT_EQ(ev(DecodeEvent::kTcpOptInvalidLen), 1u);
}

TEST_F(DecodeTest, TcpOptionDuplicate) {
    const Bytes opts = {3, 3, 2, 3, 3, 9, 0, 0};
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, opts)))), DecodeResult::kOk);
    EXPECT_EQ(p_.tcp_wscale, 2);
    EXPECT_EQ(ev(DecodeEvent::kTcpOptDuplicate), 1u);
}

TEST_F(DecodeTest, TcpHeaderLengthTooSmall) {
    Bytes ip = ipv4(V4{}, tcp(1, 2, 0x02));
    ip[20 + 12] = 0x40;
    EXPECT_EQ(eth_run(eth(0x0800, ip)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kTcpHlenTooSmall), 1u);
    EXPECT_EQ(ctx_.counters().tcp.get(), 1u);
}

TEST_F(DecodeTest, TcpTooSmallAndOptlenPastSegment) {
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4().with_l4_checksum(false), Bytes(19, 0)))),
              DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kTcpPktTooSmall), 1u);
    Bytes ip = ipv4(V4{}, tcp(1, 2, 0x02));
    ip[20 + 12] = 0x60;  // 24-byte header in a 20-byte segment
    EXPECT_EQ(eth_run(eth(0x0800, ip)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kTcpInvalidOptlen), 1u);
}

TEST_F(DecodeTest, UdpFields) {
    const Bytes f = eth(0x0800, ipv4(V4().with_proto(kUdp), udp(53, 40000, {1, 2, 3, 4})));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.flags, kFlagIpv4 | kFlagUdp);
    EXPECT_EQ(p_.sport, 53);
    EXPECT_EQ(p_.dport, 40000);
    EXPECT_EQ(p_.l4_len, 12u);
    EXPECT_EQ(p_.payload, f.data() + 42);
    EXPECT_EQ(p_.payload_len, 4u);
    EXPECT_EQ(ctx_.counters().udp.get(), 1u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, UdpLengthChecks) {
    Bytes longer = ipv4(V4().with_proto(kUdp), udp(1, 2, {1, 2, 3, 4}));
    put16(longer, 24, 13);  // more than the IP datagram holds
    EXPECT_EQ(eth_run(eth(0x0800, longer)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kUdpPktTooSmall), 1u);

    Bytes shorter = ipv4(V4().with_proto(kUdp), udp(1, 2, {1, 2, 3, 4}));
    put16(shorter, 24, 10);  // IP carries bytes past the UDP length
    EXPECT_EQ(eth_run(eth(0x0800, shorter)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kUdpHlenInvalid), 1u);

    Bytes tiny = ipv4(V4().with_proto(kUdp), udp(1, 2, {1, 2, 3, 4}));
    put16(tiny, 24, 4);
    EXPECT_EQ(eth_run(eth(0x0800, tiny)), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kUdpLenInvalid), 1u);

    EXPECT_EQ(
        eth_run(eth(0x0800, ipv4(V4().with_proto(kUdp).with_l4_checksum(false), Bytes(7, 0)))),
        DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kUdpHlenTooSmall), 1u);
    EXPECT_EQ(ctx_.counters().udp.get(), 4u);
    EXPECT_EQ(ctx_.counters().invalid.get(), 4u);
}

TEST_F(DecodeTest, Icmpv4Echo) {
    const Bytes f = eth(0x0800, ipv4(V4().with_proto(kIcmp), icmp(8, 0, 0x4242, 7, {1, 2, 3})));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.flags, kFlagIpv4 | kFlagIcmpv4);
    EXPECT_EQ(p_.icmp_type, 8);
    EXPECT_EQ(p_.icmp_code, 0);
    EXPECT_EQ(p_.icmp_id, 0x4242);
    EXPECT_EQ(p_.icmp_seq, 7);
    EXPECT_EQ(p_.payload_len, 3u);
    EXPECT_EQ(ctx_.counters().icmpv4.get(), 1u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Icmpv4UnknownTypeAndCode) {
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4().with_proto(kIcmp), icmp(42, 0, 0, 0)))),
              DecodeResult::kOk);
    EXPECT_EQ(ev(DecodeEvent::kIcmpv4UnknownType), 1u);
    EXPECT_EQ(eth_run(eth(0x0800, ipv4(V4().with_proto(kIcmp), icmp(3, 16, 0, 0)))),
              DecodeResult::kOk);
    EXPECT_EQ(ev(DecodeEvent::kIcmpv4UnknownCode), 1u);
    EXPECT_EQ(
        eth_run(eth(0x0800, ipv4(V4().with_proto(kIcmp).with_l4_checksum(false), Bytes(7, 0)))),
        DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIcmpv4PktTooSmall), 1u);
}

TEST_F(DecodeTest, Icmpv6Echo) {
    const Bytes f =
        eth(0x86dd, ipv6(V6().with_nh(kIcmp6).with_l4_proto(kIcmp6), icmp(129, 0, 99, 3, {5, 6})));
    ASSERT_EQ(eth_run(f), DecodeResult::kOk);
    EXPECT_EQ(p_.flags, kFlagIpv6 | kFlagIcmpv6);
    EXPECT_EQ(p_.icmp_type, 129);
    EXPECT_EQ(p_.icmp_id, 99);
    EXPECT_EQ(p_.icmp_seq, 3);
    EXPECT_EQ(p_.payload_len, 2u);
    EXPECT_EQ(ctx_.counters().icmpv6.get(), 1u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, Icmpv6UnknownTypeAndCode) {
    EXPECT_EQ(
        eth_run(eth(0x86dd, ipv6(V6().with_nh(kIcmp6).with_l4_proto(kIcmp6), icmp(99, 0, 0, 0)))),
        DecodeResult::kOk);
    EXPECT_EQ(ev(DecodeEvent::kIcmpv6UnknownType), 1u);
    EXPECT_EQ(
        eth_run(eth(0x86dd, ipv6(V6().with_nh(kIcmp6).with_l4_proto(kIcmp6), icmp(3, 2, 0, 0)))),
        DecodeResult::kOk);
    EXPECT_EQ(ev(DecodeEvent::kIcmpv6UnknownCode), 1u);
}

// ---- Checksums -------------------------------------------------------------------------

struct ChecksumCase {
    const char* name;
    Bytes frame;
    size_t corrupt;  // frame offset of a byte covered by exactly one checksum
    DecodeEvent event;
};

std::vector<ChecksumCase> checksum_cases() {
    const Bytes pl = {1, 2, 3, 4, 5};
    return {
        {"ipv4", eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, {}, pl))), 14 + 8,
         DecodeEvent::kIpv4ChecksumInvalid},
        {"tcp4", eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, {}, pl))), 14 + 20 + 20,
         DecodeEvent::kTcpChecksumInvalid},
        {"udp4", eth(0x0800, ipv4(V4().with_proto(kUdp), udp(1, 2, pl))), 14 + 20 + 8,
         DecodeEvent::kUdpChecksumInvalid},
        {"icmp4", eth(0x0800, ipv4(V4().with_proto(kIcmp), icmp(8, 0, 1, 1, pl))), 14 + 20 + 8,
         DecodeEvent::kIcmpv4ChecksumInvalid},
        {"tcp6", eth(0x86dd, ipv6(V6{}, tcp(1, 2, 0x02, {}, pl))), 14 + 40 + 20,
         DecodeEvent::kTcpChecksumInvalid},
        {"udp6", eth(0x86dd, ipv6(V6().with_nh(kUdp).with_l4_proto(kUdp), udp(1, 2, pl))),
         14 + 40 + 8, DecodeEvent::kUdpChecksumInvalid},
        {"icmp6",
         eth(0x86dd, ipv6(V6().with_nh(kIcmp6).with_l4_proto(kIcmp6), icmp(128, 0, 1, 1, pl))),
         14 + 40 + 8, DecodeEvent::kIcmpv6ChecksumInvalid},
        // The pseudo-header counts: a changed source address breaks the L4 checksum.
        {"tcp6-pseudo", eth(0x86dd, ipv6(V6{}, tcp(1, 2, 0x02, {}, pl))), 14 + 8 + 15,
         DecodeEvent::kTcpChecksumInvalid},
    };
}

TEST_F(DecodeTest, GoodChecksumsRaiseNothing) {
    for (const ChecksumCase& c : checksum_cases()) {
        EXPECT_EQ(eth_run(c.frame), DecodeResult::kOk) << c.name;
        EXPECT_FALSE(p_.has(kFlagBadChecksum)) << c.name;
    }
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, BadChecksumsRaiseTheirEvent) {
    for (const ChecksumCase& c : checksum_cases()) {
        DecodeContext ctx{DecodeOptions{ChecksumMode::kYes}};
        Bytes f = c.frame;
        f[c.corrupt] ^= 0x5a;
        EXPECT_EQ(decode_packet(ctx, kDltEn10mb, f.data(), static_cast<uint32_t>(f.size()),
                                static_cast<uint32_t>(f.size()), 0, p_),
                  DecodeResult::kOk)
            << c.name;
        EXPECT_TRUE(p_.has(kFlagBadChecksum)) << c.name;
        EXPECT_EQ(ctx.counters().events[static_cast<size_t>(c.event)].get(), 1u) << c.name;
        uint64_t n = 0;
        for (const Counter& e : ctx.counters().events) {
            n += e.get();
        }
        EXPECT_EQ(n, 1u) << c.name;
        EXPECT_EQ(ctx.counters().invalid.get(), 0u) << c.name;
    }
}

TEST_F(DecodeTest, UdpZeroChecksumMeansNoneOnlyOverIpv4) {
    Bytes v4 = eth(0x0800, ipv4(V4().with_proto(kUdp), udp(1, 2, {7})));
    put16(v4, 14 + 20 + 6, 0);
    EXPECT_EQ(eth_run(v4), DecodeResult::kOk);
    EXPECT_FALSE(p_.has(kFlagBadChecksum));
    Bytes v6 = eth(0x86dd, ipv6(V6().with_nh(kUdp).with_l4_proto(kUdp), udp(1, 2, {7})));
    put16(v6, 14 + 40 + 6, 0);
    EXPECT_EQ(eth_run(v6), DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagBadChecksum));
    EXPECT_EQ(ev(DecodeEvent::kUdpChecksumInvalid), 1u);
}

TEST_F(DecodeTest, ChecksumModeNoValidatesNothing) {
    DecodeContext ctx{DecodeOptions{ChecksumMode::kNo}};
    EXPECT_FALSE(ctx.validating_checksums());
    Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02)));
    f[14 + 10] ^= 1;
    f[14 + 20 + 16] ^= 1;
    EXPECT_EQ(decode_packet(ctx, kDltEn10mb, f.data(), static_cast<uint32_t>(f.size()),
                            static_cast<uint32_t>(f.size()), 0, p_),
              DecodeResult::kOk);
    EXPECT_FALSE(p_.has(kFlagBadChecksum));
    EXPECT_EQ(ctx.counters().events[static_cast<size_t>(DecodeEvent::kTcpChecksumInvalid)].get(),
              0u);
}

class ChecksumAutoTest : public ::testing::Test {
protected:
    // Feeds `good` valid and `bad` broken packets, then one more broken packet, and returns
    // how many TCP checksum events that last packet raised.
    uint64_t last_raised_after(int good, int bad) {
        Bytes ok = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x10)));
        Bytes broken = ok;
        broken[14 + 20 + 16] ^= 0xff;
        Packet p;
        for (int i = 0; i < good; ++i) {
            decode_packet(ctx_, kDltEn10mb, ok.data(), 54, 54, 0, p);
        }
        for (int i = 0; i < bad; ++i) {
            decode_packet(ctx_, kDltEn10mb, broken.data(), 54, 54, 0, p);
        }
        const auto& ev =
            ctx_.counters().events[static_cast<size_t>(DecodeEvent::kTcpChecksumInvalid)];
        const uint64_t before = ev.get();
        decode_packet(ctx_, kDltEn10mb, broken.data(), 54, 54, 0, p);
        return ev.get() - before;
    }
    DecodeContext ctx_{DecodeOptions{ChecksumMode::kAuto}};
};

TEST_F(ChecksumAutoTest, OffloadTurnsValidationOff) {
    EXPECT_TRUE(ctx_.validating_checksums());
    EXPECT_EQ(last_raised_after(0, 1000), 0u);
    EXPECT_FALSE(ctx_.validating_checksums());
    StatsSnapshot s;
    ctx_.export_stats(s);
    EXPECT_EQ(s.get("decoder.checksum_validation_disabled"), 1u);
    EXPECT_EQ(s.get("decoder.event.tcp.checksum_invalid"), 1000u);
}

TEST_F(ChecksumAutoTest, StaysOnBeforeTheSampleIsComplete) {
    EXPECT_EQ(last_raised_after(0, 998), 1u);  // the 999th packet is still validated
    EXPECT_TRUE(ctx_.validating_checksums());
}

TEST_F(ChecksumAutoTest, TenPercentBadStaysOn) {
    EXPECT_EQ(last_raised_after(900, 100), 1u);
    EXPECT_TRUE(ctx_.validating_checksums());
}

TEST_F(ChecksumAutoTest, JustOverTenPercentTurnsOff) {
    EXPECT_EQ(last_raised_after(899, 101), 0u);
    EXPECT_FALSE(ctx_.validating_checksums());
}

TEST_F(DecodeTest, SnapTruncatedPacketsAreNotChecksummed) {
    Bytes f = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02, {}, Bytes(20, 'p'))));
    f[14 + 10] ^= 1;
    EXPECT_EQ(decode_packet(ctx_, kDltEn10mb, f.data(), static_cast<uint32_t>(f.size()),
                            static_cast<uint32_t>(f.size()) + 100, 0, p_),
              DecodeResult::kOk);
    EXPECT_FALSE(p_.has(kFlagBadChecksum));
    EXPECT_EQ(total_events(), 0u);
}

// ---- Reassembled datagrams -------------------------------------------------------------

TEST_F(DecodeTest, ReassembledIpv4KeepsLinkFieldsAndCountsL4Only) {
    const Bytes frag = eth(0x0800, ipv4(V4().with_frag(2), Bytes(8, 'x')), {{0x8100, 42}});
    p_.pcap_cnt = 9;
    ASSERT_EQ(decode_packet(ctx_, kDltEn10mb, frag.data(), static_cast<uint32_t>(frag.size()),
                            static_cast<uint32_t>(frag.size()), 5555, p_),
              DecodeResult::kFragment);
    const Bytes whole = ipv4(V4{}, tcp(1000, 22, 0x18, {}, Bytes(16, 'y')));
    ASSERT_EQ(decode_reassembled(ctx_, whole.data(), static_cast<uint32_t>(whole.size()), p_),
              DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagReassembled | kFlagVlan | kFlagIpv4 | kFlagTcp));
    EXPECT_FALSE(p_.has(kFlagFragment));
    EXPECT_EQ(p_.ts_ns, 5555);
    EXPECT_EQ(p_.pcap_cnt, 9u);
    EXPECT_EQ(p_.vlan_count, 1);
    EXPECT_EQ(p_.vlan_id[0], 42);
    EXPECT_EQ(p_.data, frag.data());
    EXPECT_EQ(p_.l3, whole.data());
    EXPECT_EQ(p_.dport, 22);
    EXPECT_EQ(p_.payload_len, 16u);
    EXPECT_EQ(p_.frag_data, nullptr);
    EXPECT_EQ(ctx_.counters().pkts.get(), 1u);
    EXPECT_EQ(ctx_.counters().ipv4.get(), 1u);
    EXPECT_EQ(ctx_.counters().ipv4_frag.get(), 1u);
    EXPECT_EQ(ctx_.counters().tcp.get(), 1u);
    EXPECT_EQ(total_events(), 0u);
}

TEST_F(DecodeTest, ReassembledIpv6AndBadL4Checksum) {
    const Bytes whole = ipv6(V6().with_nh(kUdp).with_l4_proto(kUdp), udp(5, 6, Bytes(30, 'u')));
    ASSERT_EQ(decode_reassembled(ctx_, whole.data(), static_cast<uint32_t>(whole.size()), p_),
              DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagReassembled | kFlagIpv6 | kFlagUdp));
    EXPECT_EQ(ctx_.counters().udp.get(), 1u);
    EXPECT_EQ(ctx_.counters().ipv6.get(), 0u);
    Bytes bad = whole;
    bad[50] ^= 1;
    ASSERT_EQ(decode_reassembled(ctx_, bad.data(), static_cast<uint32_t>(bad.size()), p_),
              DecodeResult::kOk);
    EXPECT_TRUE(p_.has(kFlagBadChecksum));
    EXPECT_EQ(ev(DecodeEvent::kUdpChecksumInvalid), 1u);
}

TEST_F(DecodeTest, ReassembledGarbageIsInvalid) {
    const Bytes junk = {0x90, 1, 2};
    EXPECT_EQ(decode_reassembled(ctx_, junk.data(), 3, p_), DecodeResult::kInvalid);
    EXPECT_TRUE(p_.has(kFlagReassembled | kFlagInvalid));
    EXPECT_EQ(ctx_.counters().invalid.get(), 1u);
    EXPECT_EQ(decode_reassembled(ctx_, junk.data(), 0, p_), DecodeResult::kInvalid);
    EXPECT_EQ(ev(DecodeEvent::kIpv4PktTooSmall), 1u);
    EXPECT_EQ(ctx_.counters().pkts.get(), 0u);
}

// ---- Counters and stats ----------------------------------------------------------------

TEST_F(DecodeTest, ExactCountersAndExportNames) {
    Bytes tcp4 = eth(0x0800, ipv4(V4{}, tcp(1, 2, 0x02)));  // 54 bytes
    tcp4.resize(60, 0);                                     // padded frame: wirelen 60
    const Bytes udp6 =
        eth(0x86dd, ipv6(V6().with_nh(kUdp).with_l4_proto(kUdp), udp(1, 2, {1})));  // 63
    const Bytes frag1 = eth(0x0800, ipv4(V4().with_frag(0x2000), Bytes(8, 'a')));   // 42
    const Bytes frag2 = eth(0x0800, ipv4(V4().with_frag(1), Bytes(8, 'b')));        // 42
    const Bytes arp = eth(0x0806, arp_body());                                      // 42
    const Bytes junk(10, 0);                                                        // 10, invalid
    EXPECT_EQ(eth_run(tcp4), DecodeResult::kOk);
    EXPECT_EQ(eth_run(udp6), DecodeResult::kOk);
    EXPECT_EQ(eth_run(frag1), DecodeResult::kFragment);
    EXPECT_EQ(eth_run(frag2), DecodeResult::kFragment);
    const Bytes whole = ipv4(V4().with_proto(kIcmp), icmp(8, 0, 1, 1, Bytes(8, 'c')));
    EXPECT_EQ(decode_reassembled(ctx_, whole.data(), static_cast<uint32_t>(whole.size()), p_),
              DecodeResult::kOk);
    EXPECT_EQ(eth_run(arp), DecodeResult::kOk);
    EXPECT_EQ(eth_run(junk), DecodeResult::kInvalid);

    StatsSnapshot s;
    ctx_.export_stats(s);
    EXPECT_EQ(s.get("decoder.pkts"), 6u);
    EXPECT_EQ(s.get("decoder.bytes"), 60u + 63 + 42 + 42 + 42 + 10);
    EXPECT_EQ(s.get("decoder.avg_pkt_size"), 259u / 6);
    EXPECT_EQ(s.get("decoder.max_pkt_size"), 63u);
    EXPECT_EQ(s.get("decoder.invalid"), 1u);
    EXPECT_EQ(s.get("decoder.ethernet"), 6u);
    EXPECT_EQ(s.get("decoder.ipv4"), 3u);
    EXPECT_EQ(s.get("decoder.ipv6"), 1u);
    EXPECT_EQ(s.get("decoder.tcp"), 1u);
    EXPECT_EQ(s.get("decoder.udp"), 1u);
    EXPECT_EQ(s.get("decoder.icmpv4"), 1u);
    EXPECT_EQ(s.get("decoder.icmpv6"), 0u);
    EXPECT_EQ(s.get("decoder.arp"), 1u);
    EXPECT_EQ(s.get("decoder.ipv4_frag"), 2u);
    EXPECT_EQ(s.get("decoder.ipv6_frag"), 0u);
    EXPECT_EQ(s.get("decoder.event.ethernet.pkt_too_small"), 1u);
    EXPECT_TRUE(s.has("decoder.event.ipv6.exthdr_dupl_fh"));
    EXPECT_EQ(s.get("decoder.event.ipv6.exthdr_dupl_fh"), 0u);
    EXPECT_TRUE(s.has("decoder.vlan_qinq"));
    EXPECT_TRUE(s.has("decoder.other_l3"));
    size_t event_keys = 0;
    for (const auto& [name, value] : s.values()) {
        event_keys += name.rfind("decoder.event.", 0) == 0 ? 1 : 0;
    }
    EXPECT_EQ(event_keys, kNumDecodeEvents);
    EXPECT_EQ(s.values().size(), kNumDecodeEvents + 23);
}

TEST(DecodeStats, TwoWorkersIntoOneSnapshot) {
    DecodeContext a, b;
    Packet p;
    const Bytes small = eth(0x0806, arp_body());  // 42
    Bytes big = eth(0x0806, arp_body());
    big.resize(100, 0);
    decode_packet(a, kDltEn10mb, small.data(), 42, 42, 0, p);
    decode_packet(b, kDltEn10mb, big.data(), 100, 100, 0, p);
    decode_packet(b, kDltEn10mb, big.data(), 100, 100, 0, p);
    StatsSnapshot s;
    a.export_stats(s);
    b.export_stats(s);
    EXPECT_EQ(s.get("decoder.pkts"), 3u);
    EXPECT_EQ(s.get("decoder.avg_pkt_size"), 242u / 3);
    EXPECT_EQ(s.get("decoder.max_pkt_size"), 100u);
}

TEST(DecodeEvents, Names) {
    EXPECT_STREQ(event_name(DecodeEvent::kEthernetPktTooSmall), "ethernet.pkt_too_small");
    EXPECT_STREQ(event_name(DecodeEvent::kIpv4TruncPkt), "ipv4.trunc_pkt");
    EXPECT_STREQ(event_name(DecodeEvent::kArpPktTooSmall), "arp.pkt_too_small");
    EXPECT_STREQ(event_name(DecodeEvent::kCount), "unknown");
}

// ---- Malformed input -------------------------------------------------------------------

TEST_F(DecodeTest, EveryPrefixOfIpv6TcpRaisesAnEvent) {
    const Bytes opts = {2, 4, 5, 0xb4, 1, 3, 3, 7};
    const Bytes f = eth(0x86dd, ipv6(V6().with_nh(0).with_l4_off(8),
                                     cat({ext8(kTcp), tcp(1, 2, 0x18, opts, Bytes(12, 'p'))})));
    for (uint32_t n = 0; n < f.size(); ++n) {
        const uint64_t before = total_events();
        const Bytes prefix(f.begin(), f.begin() + n);  // exact size: ASan sees any overread
        EXPECT_EQ(decode_packet(ctx_, kDltEn10mb, prefix.data(), n, n, 0, p_),
                  DecodeResult::kInvalid)
            << n;
        EXPECT_GE(total_events(), before + 1) << n;
    }
    EXPECT_EQ(ctx_.counters().invalid.get(), f.size());
    EXPECT_EQ(eth_run(f), DecodeResult::kOk);
}

TEST_F(DecodeTest, EveryPrefixOfIpv4TcpRaisesAnEvent) {
    const Bytes opts = {2, 4, 5, 0xb4, 4, 2, 1, 1};
    const Bytes f =
        eth(0x0800, ipv4(V4().with_opts({1, 1, 1, 0}), tcp(1, 2, 0x18, opts, Bytes(5, 'p'))),
            {{0x8100, 5}});
    for (uint32_t n = 0; n < f.size(); ++n) {
        const uint64_t before = total_events();
        const Bytes prefix(f.begin(), f.begin() + n);
        EXPECT_EQ(decode_packet(ctx_, kDltEn10mb, prefix.data(), n, n, 0, p_),
                  DecodeResult::kInvalid)
            << n;
        EXPECT_GE(total_events(), before + 1) << n;
    }
    EXPECT_EQ(eth_run(f), DecodeResult::kOk);
}

}  // namespace
}  // namespace picket::sensor::decode
