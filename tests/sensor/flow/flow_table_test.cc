#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "sensor/flow/flow.h"

namespace picket::sensor::flow {
namespace {

using decode::Address;
using decode::Packet;

constexpr int64_t kSec = 1'000'000'000;
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kAck = 0x10;

Address v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    const uint8_t raw[4] = {a, b, c, d};
    return Address::from_v4(raw);
}

Address v6(uint8_t last) {
    uint8_t raw[16] = {0x20, 0x01, 0x0d, 0xb8};
    raw[15] = last;
    return Address::from_v6(raw);
}

Packet ip_packet(Address src, Address dst, uint8_t proto, int64_t ts, uint32_t wirelen = 100) {
    Packet p;
    p.ip_version = src.is_v4() ? 4 : 6;
    p.flags = src.is_v4() ? decode::kFlagIpv4 : decode::kFlagIpv6;
    p.src = src;
    p.dst = dst;
    p.proto = proto;
    p.ts_ns = ts;
    p.wirelen = wirelen;
    return p;
}

Packet tcp(Address src, uint16_t sport, Address dst, uint16_t dport, uint8_t flags, int64_t ts,
           uint32_t wirelen = 100) {
    Packet p = ip_packet(src, dst, 6, ts, wirelen);
    p.flags |= decode::kFlagTcp;
    p.sport = sport;
    p.dport = dport;
    p.tcp_flags = flags;
    return p;
}

Packet udp(Address src, uint16_t sport, Address dst, uint16_t dport, int64_t ts,
           uint32_t wirelen = 100) {
    Packet p = ip_packet(src, dst, 17, ts, wirelen);
    p.flags |= decode::kFlagUdp;
    p.sport = sport;
    p.dport = dport;
    return p;
}

Packet icmp4(Address src, Address dst, uint8_t type, uint8_t code, uint16_t id, int64_t ts) {
    Packet p = ip_packet(src, dst, 1, ts);
    p.flags |= decode::kFlagIcmpv4;
    p.icmp_type = type;
    p.icmp_code = code;
    p.icmp_id = id;
    return p;
}

Packet icmp6(Address src, Address dst, uint8_t type, uint8_t code, uint16_t id, int64_t ts) {
    Packet p = ip_packet(src, dst, 58, ts);
    p.flags |= decode::kFlagIcmpv6;
    p.icmp_type = type;
    p.icmp_code = code;
    p.icmp_id = id;
    return p;
}

FlowConfig config_with_pool(size_t flows) {
    FlowConfig c;
    c.memcap = flows * sizeof(Flow);
    c.hash_size = 1024;
    c.hash_seed = 42;
    return c;
}

const Address kA = v4(10, 0, 0, 1);
const Address kB = v4(10, 0, 0, 2);
const Address kC = v4(10, 0, 0, 3);

TEST(FlowKey, NormalisedAndSymmetric) {
    bool first_fwd = false;
    bool first_rev = true;
    const FlowKey fwd = make_key(tcp(kB, 1234, kA, 80, kSyn, 0), &first_fwd);
    const FlowKey rev = make_key(tcp(kA, 80, kB, 1234, kSyn | kAck, 0), &first_rev);
    EXPECT_TRUE(fwd == rev);
    EXPECT_EQ(hash_key(fwd), hash_key(rev));
    EXPECT_FALSE(first_fwd);
    EXPECT_TRUE(first_rev);
    EXPECT_TRUE(fwd.addr[0] == kA);
    EXPECT_TRUE(fwd.addr[1] == kB);
    EXPECT_EQ(fwd.port[0], 80);
    EXPECT_EQ(fwd.port[1], 1234);
    EXPECT_EQ(fwd.proto, 6);
    EXPECT_EQ(fwd.vlan, 0);
}

TEST(FlowKey, EqualAddressesOrderByPort) {
    bool first = false;
    const FlowKey k = make_key(udp(kA, 5000, kA, 53, 0), &first);
    EXPECT_FALSE(first);
    EXPECT_EQ(k.port[0], 53);
    EXPECT_EQ(k.port[1], 5000);
    const FlowKey r = make_key(udp(kA, 53, kA, 5000, 0), &first);
    EXPECT_TRUE(first);
    EXPECT_TRUE(k == r);
}

TEST(FlowKey, OtherProtocolsHaveNoPorts) {
    Packet p = ip_packet(kA, kB, 47, 0);  // GRE
    p.sport = 7;
    p.dport = 9;
    const FlowKey k = make_key(p, nullptr);
    EXPECT_EQ(k.port[0], 0);
    EXPECT_EQ(k.port[1], 0);
}

TEST(FlowTable, BothDirectionsShareOneFlow) {
    FlowTable t(config_with_pool(16));
    Direction d = Direction::kToClient;
    Flow* f = t.lookup(tcp(kB, 40000, kA, 443, kSyn, 1 * kSec, 60), &d);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(d, Direction::kToServer);
    EXPECT_EQ(f->state, FlowState::kNew);
    EXPECT_TRUE(f->client_addr == kB);
    EXPECT_TRUE(f->server_addr == kA);
    EXPECT_EQ(f->client_port, 40000);
    EXPECT_EQ(f->server_port, 443);
    EXPECT_EQ(f->proto, 6);

    EXPECT_EQ(t.lookup(tcp(kA, 443, kB, 40000, kSyn | kAck, 2 * kSec, 70), &d), f);
    EXPECT_EQ(d, Direction::kToClient);
    EXPECT_EQ(f->state, FlowState::kEstablished);
    EXPECT_EQ(t.lookup(tcp(kB, 40000, kA, 443, kAck, 3 * kSec, 80), &d), f);
    EXPECT_EQ(d, Direction::kToServer);

    EXPECT_EQ(f->pkts[0], 2u);
    EXPECT_EQ(f->pkts[1], 1u);
    EXPECT_EQ(f->bytes[0], 140u);
    EXPECT_EQ(f->bytes[1], 70u);
    EXPECT_EQ(f->tcp_flags_seen[0], kSyn | kAck);
    EXPECT_EQ(f->tcp_flags_seen[1], kSyn | kAck);
    EXPECT_EQ(f->first_ts_ns, 1 * kSec);
    EXPECT_EQ(f->last_ts_ns, 3 * kSec);
    EXPECT_EQ(t.active(), 1u);
    EXPECT_EQ(t.counters().created.get(), 1u);
}

TEST(FlowTable, UdpDirectionsAndEstablished) {
    FlowTable t(config_with_pool(16));
    Direction d = Direction::kToClient;
    Flow* f = t.lookup(udp(kA, 5353, kB, 53, 0, 90), &d);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(d, Direction::kToServer);
    EXPECT_EQ(t.lookup(udp(kA, 5353, kB, 53, 1, 90), &d), f);
    EXPECT_EQ(f->state, FlowState::kNew);
    EXPECT_EQ(t.lookup(udp(kB, 53, kA, 5353, 2, 300), &d), f);
    EXPECT_EQ(d, Direction::kToClient);
    EXPECT_EQ(f->state, FlowState::kEstablished);
    EXPECT_EQ(f->pkts[0], 2u);
    EXPECT_EQ(f->pkts[1], 1u);
    EXPECT_EQ(f->bytes[0], 180u);
    EXPECT_EQ(f->bytes[1], 300u);
}

TEST(FlowTable, V4AndV6WithSameMappedBytesNeverCollide) {
    FlowTable t(config_with_pool(16));
    uint8_t mapped_a[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    uint8_t mapped_b[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    Packet p6 = udp(Address::from_v6(mapped_a), 1000, Address::from_v6(mapped_b), 53, 0);
    p6.ip_version = 6;
    p6.flags = decode::kFlagIpv6 | decode::kFlagUdp;
    const Packet p4 = udp(kA, 1000, kB, 53, 0);
    ASSERT_TRUE(p6.src == p4.src);

    Flow* f4 = t.lookup(p4, nullptr);
    Flow* f6 = t.lookup(p6, nullptr);
    ASSERT_NE(f4, nullptr);
    ASSERT_NE(f6, nullptr);
    EXPECT_NE(f4, f6);
    EXPECT_FALSE(make_key(p4, nullptr) == make_key(p6, nullptr));
    EXPECT_EQ(t.active(), 2u);
}

TEST(FlowTable, VlanSeparatesFlowsAndUsesInnermostTag) {
    FlowTable t(config_with_pool(16));
    Packet none = udp(kA, 1000, kB, 53, 0);
    Packet v10 = none;
    v10.vlan_count = 1;
    v10.vlan_id[0] = 10;
    Packet v20 = none;
    v20.vlan_count = 1;
    v20.vlan_id[0] = 20;
    Packet qinq_inner10 = none;  // outer 100, inner 10: same flow as the single tag 10
    qinq_inner10.vlan_count = 2;
    qinq_inner10.vlan_id[0] = 100;
    qinq_inner10.vlan_id[1] = 10;

    Flow* f0 = t.lookup(none, nullptr);
    Flow* f10 = t.lookup(v10, nullptr);
    Flow* f20 = t.lookup(v20, nullptr);
    EXPECT_NE(f0, f10);
    EXPECT_NE(f0, f20);
    EXPECT_NE(f10, f20);
    EXPECT_EQ(t.lookup(qinq_inner10, nullptr), f10);
    EXPECT_EQ(f10->key.vlan, 10);
    EXPECT_EQ(t.active(), 3u);
}

// The flow keeps the VLAN tags of the packet that created it (EVE flow records), both tags of
// a QinQ packet, whether or not the key uses them.
TEST(FlowTable, FlowKeepsItsFirstPacketsVlanTags) {
    FlowTable t(config_with_pool(16));
    Packet qinq = udp(kA, 1000, kB, 53, 0);
    qinq.vlan_count = 2;
    qinq.vlan_id[0] = 100;
    qinq.vlan_id[1] = 10;
    Flow* f = t.lookup(qinq, nullptr);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->key.vlan, 10);
    EXPECT_EQ(f->vlan_count, 2);
    EXPECT_EQ(f->vlan_id[0], 100);
    EXPECT_EQ(f->vlan_id[1], 10);
}

// vlan.use-for-tracking: false: a request tagged 3136 and an untagged reply are one flow, whose
// key has no VLAN and whose recorded tags are the first packet's.
TEST(FlowTable, WithoutVlanTrackingBothDirectionsShareAFlowThatKeepsTheFirstTag) {
    FlowConfig c = config_with_pool(16);
    c.use_vlan = false;
    FlowTable t(c);
    Packet req = udp(kA, 1000, kB, 53, 0);
    req.vlan_count = 1;
    req.vlan_id[0] = 3136;
    const Packet reply = udp(kB, 53, kA, 1000, 1);
    Direction d = Direction::kToClient;
    Flow* f = t.lookup(req, &d);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(d, Direction::kToServer);
    EXPECT_EQ(t.lookup(reply, &d), f);
    EXPECT_EQ(d, Direction::kToClient);
    EXPECT_EQ(f->key.vlan, 0);
    EXPECT_EQ(f->vlan_count, 1);
    EXPECT_EQ(f->vlan_id[0], 3136);
    EXPECT_EQ(t.active(), 1u);

    // The other way round: an untagged first packet leaves the flow without tags.
    Packet tagged_reply = udp(kB, 53, kC, 2000, 2);
    tagged_reply.vlan_count = 1;
    tagged_reply.vlan_id[0] = 7;
    Flow* g = t.lookup(udp(kC, 2000, kB, 53, 3), nullptr);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(t.lookup(tagged_reply, nullptr), g);
    EXPECT_EQ(g->vlan_count, 0);
}

TEST(FlowTable, IcmpEchoRequestAndReplyShareOneFlow) {
    FlowTable t(config_with_pool(16));
    Direction d = Direction::kToClient;
    Flow* f = t.lookup(icmp4(kA, kB, 8, 0, 77, 0), &d);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(d, Direction::kToServer);
    EXPECT_EQ(f->key.port[0], 77);
    EXPECT_EQ(f->key.port[1], 77);
    EXPECT_EQ(t.lookup(icmp4(kB, kA, 0, 0, 77, 1), &d), f);
    EXPECT_EQ(d, Direction::kToClient);
    EXPECT_EQ(f->state, FlowState::kEstablished);
    // Another identifier is another flow.
    EXPECT_NE(t.lookup(icmp4(kA, kB, 8, 0, 78, 2), nullptr), f);

    const Address a6 = v6(1);
    const Address b6 = v6(2);
    Flow* g = t.lookup(icmp6(a6, b6, 128, 0, 5, 3), &d);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(t.lookup(icmp6(b6, a6, 129, 0, 5, 4), &d), g);
    EXPECT_EQ(d, Direction::kToClient);
    EXPECT_EQ(g->state, FlowState::kEstablished);
    EXPECT_EQ(t.active(), 3u);
    EXPECT_EQ(t.counters().icmpv4.get(), 2u);
    EXPECT_EQ(t.counters().icmpv6.get(), 1u);
}

TEST(FlowTable, OtherIcmpKeyedByTypeAndCode) {
    FlowTable t(config_with_pool(16));
    Flow* unreach_host = t.lookup(icmp4(kC, kA, 3, 1, 0, 0), nullptr);
    Flow* unreach_port = t.lookup(icmp4(kC, kA, 3, 3, 0, 1), nullptr);
    ASSERT_NE(unreach_host, nullptr);
    ASSERT_NE(unreach_port, nullptr);
    EXPECT_NE(unreach_host, unreach_port);
    // The id field is not part of the key for non-echo types.
    EXPECT_EQ(t.lookup(icmp4(kC, kA, 3, 1, 99, 2), nullptr), unreach_host);
    EXPECT_EQ(unreach_host->client_port, 3);
    EXPECT_EQ(unreach_host->server_port, 1);
    EXPECT_EQ(unreach_host->pkts[0], 2u);
    // ICMPv6 packet too big (type 2) vs destination unreachable (type 1).
    Flow* ptb = t.lookup(icmp6(v6(9), v6(1), 2, 0, 0, 3), nullptr);
    Flow* du = t.lookup(icmp6(v6(9), v6(1), 1, 0, 0, 4), nullptr);
    EXPECT_NE(ptb, du);
    EXPECT_EQ(t.active(), 4u);
}

TEST(FlowTable, PacketsWithoutIpGetNoFlow) {
    FlowTable t(config_with_pool(16));
    Packet p;
    p.flags = decode::kFlagArp;
    EXPECT_EQ(t.lookup(p, nullptr), nullptr);
    EXPECT_EQ(t.counters().created.get(), 0u);
    EXPECT_EQ(t.counters().memcap_drops.get(), 0u);
    EXPECT_EQ(t.active(), 0u);
}

TEST(FlowTable, TcpFinFromBothSidesCloses) {
    FlowTable t(config_with_pool(16));
    Flow* f = t.lookup(tcp(kA, 1000, kB, 80, kSyn, 0), nullptr);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->state, FlowState::kNew);
    t.lookup(tcp(kA, 1000, kB, 80, kAck, 1), nullptr);
    EXPECT_EQ(f->state, FlowState::kNew);  // only the client so far
    t.lookup(tcp(kB, 80, kA, 1000, kSyn | kAck, 2), nullptr);
    EXPECT_EQ(f->state, FlowState::kEstablished);
    t.lookup(tcp(kA, 1000, kB, 80, kFin | kAck, 3), nullptr);
    EXPECT_EQ(f->state, FlowState::kEstablished);
    t.lookup(tcp(kA, 1000, kB, 80, kFin | kAck, 4), nullptr);  // retransmitted FIN
    EXPECT_EQ(f->state, FlowState::kEstablished);
    t.lookup(tcp(kB, 80, kA, 1000, kFin | kAck, 5), nullptr);
    EXPECT_EQ(f->state, FlowState::kClosed);
    t.lookup(tcp(kA, 1000, kB, 80, kAck, 6), nullptr);
    EXPECT_EQ(f->state, FlowState::kClosed);
}

// What flow:established sees (Suricata's FLOW_PKT_ESTABLISHED): TCP, the state before the
// packet; other protocols, after it.
TEST(FlowTable, PacketEstablishedFollowsSuricata) {
    FlowTable t(config_with_pool(16));
    Flow* f = t.lookup(tcp(kA, 1000, kB, 80, kSyn, 0), nullptr);
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->pkt_established);
    t.lookup(tcp(kB, 80, kA, 1000, kSyn | kAck, 1), nullptr);
    EXPECT_EQ(f->state, FlowState::kEstablished);
    EXPECT_FALSE(f->pkt_established);  // the SYN-ACK itself is not yet established
    t.lookup(tcp(kA, 1000, kB, 80, kAck, 2), nullptr);
    EXPECT_TRUE(f->pkt_established);
    t.lookup(tcp(kA, 1000, kB, 80, kFin | kAck, 3), nullptr);
    EXPECT_TRUE(f->pkt_established);
    t.lookup(tcp(kB, 80, kA, 1000, kFin | kAck, 4), nullptr);
    EXPECT_EQ(f->state, FlowState::kClosed);
    EXPECT_TRUE(f->pkt_established);  // the FIN that closes it still is
    t.lookup(tcp(kA, 1000, kB, 80, kAck, 5), nullptr);
    EXPECT_FALSE(f->pkt_established);

    Flow* u = t.lookup(udp(kA, 5353, kB, 53, 6, 90), nullptr);
    ASSERT_NE(u, nullptr);
    EXPECT_FALSE(u->pkt_established);
    t.lookup(udp(kB, 53, kA, 5353, 7, 90), nullptr);
    EXPECT_TRUE(u->pkt_established);  // the first answer is
}

TEST(FlowTable, TcpRstClosesFromAnyState) {
    FlowTable t(config_with_pool(16));
    Flow* f = t.lookup(tcp(kA, 1000, kB, 80, kSyn, 0), nullptr);
    ASSERT_NE(f, nullptr);
    t.lookup(tcp(kB, 80, kA, 1000, kRst | kAck, 1), nullptr);
    EXPECT_EQ(f->state, FlowState::kClosed);
    Flow* g = t.lookup(tcp(kA, 1001, kB, 80, kRst, 2), nullptr);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->state, FlowState::kClosed);
}

TEST(FlowTable, SynAckFirstMakesItsDestinationTheClient) {
    FlowTable t(config_with_pool(16));
    Direction d = Direction::kToServer;
    Flow* f = t.lookup(tcp(kA, 80, kB, 40000, kSyn | kAck, 0), &d);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(d, Direction::kToClient);
    EXPECT_TRUE(f->client_addr == kB);
    EXPECT_EQ(f->client_port, 40000);
    EXPECT_TRUE(f->server_addr == kA);
    EXPECT_EQ(f->server_port, 80);
    EXPECT_EQ(f->state, FlowState::kEstablished);
    EXPECT_EQ(f->pkts[1], 1u);
    EXPECT_EQ(t.lookup(tcp(kB, 40000, kA, 80, kAck, 1), &d), f);
    EXPECT_EQ(d, Direction::kToServer);
}

TEST(FlowTable, SynOnClosedFlowRecyclesIt) {
    FlowTable t(config_with_pool(16));
    std::vector<uint64_t> freed;
    t.set_on_free([&](Flow& f) { freed.push_back(f.flow_id); });
    Flow* f = t.lookup(tcp(kA, 1000, kB, 80, kSyn, 0), nullptr);
    ASSERT_NE(f, nullptr);
    const uint64_t old_id = f->flow_id;
    t.lookup(tcp(kB, 80, kA, 1000, kRst | kAck, 1), nullptr);
    ASSERT_EQ(f->state, FlowState::kClosed);
    // A retransmitted SYN-ACK or plain ACK does not recycle.
    EXPECT_EQ(t.lookup(tcp(kA, 1000, kB, 80, kAck, 2), nullptr)->flow_id, old_id);
    EXPECT_EQ(t.lookup(tcp(kB, 80, kA, 1000, kSyn | kAck, 2), nullptr)->flow_id, old_id);
    Direction d = Direction::kToClient;
    Flow* g = t.lookup(tcp(kA, 1000, kB, 80, kSyn, 3), &d);
    ASSERT_NE(g, nullptr);
    EXPECT_NE(g->flow_id, old_id);
    EXPECT_EQ(g->state, FlowState::kNew);
    EXPECT_EQ(d, Direction::kToServer);
    EXPECT_EQ(g->pkts[0], 1u);
    EXPECT_EQ(g->pkts[1], 0u);
    EXPECT_EQ(g->first_ts_ns, 3);
    EXPECT_EQ(freed, std::vector<uint64_t>{old_id});
    EXPECT_EQ(t.counters().closed_pruned.get(), 1u);
    EXPECT_EQ(t.counters().created.get(), 2u);
    EXPECT_EQ(t.active(), 1u);
}

// Creates a flow in the wanted state at t0 = 1000 s, then expires one nanosecond before the
// timeout and exactly at it. Returns {removed before, removed at, active after}.
struct TimeoutProbe {
    size_t before;
    size_t at;
    size_t left;
};

enum class Kind {
    kTcpNew,
    kTcpEst,
    kTcpClosed,
    kUdpNew,
    kUdpEst,
    kIcmpNew,
    kIcmpEst,
    kOtherNew,
    kOtherEst
};

TimeoutProbe probe(Kind kind, int64_t timeout_s) {
    FlowTable t(config_with_pool(16));
    const int64_t t0 = 1000 * kSec;
    switch (kind) {
        case Kind::kTcpNew:
            t.lookup(tcp(kA, 1000, kB, 80, kSyn, t0), nullptr);
            break;
        case Kind::kTcpEst:
            t.lookup(tcp(kA, 1000, kB, 80, kSyn, t0 - 1), nullptr);
            t.lookup(tcp(kB, 80, kA, 1000, kSyn | kAck, t0), nullptr);
            break;
        case Kind::kTcpClosed:
            t.lookup(tcp(kA, 1000, kB, 80, kSyn, t0 - 1), nullptr);
            t.lookup(tcp(kB, 80, kA, 1000, kRst | kAck, t0), nullptr);
            break;
        case Kind::kUdpNew:
            t.lookup(udp(kA, 1000, kB, 53, t0), nullptr);
            break;
        case Kind::kUdpEst:
            t.lookup(udp(kA, 1000, kB, 53, t0 - 1), nullptr);
            t.lookup(udp(kB, 53, kA, 1000, t0), nullptr);
            break;
        case Kind::kIcmpNew:
            t.lookup(icmp6(v6(1), v6(2), 128, 0, 1, t0), nullptr);
            break;
        case Kind::kIcmpEst:
            t.lookup(icmp4(kA, kB, 8, 0, 1, t0 - 1), nullptr);
            t.lookup(icmp4(kB, kA, 0, 0, 1, t0), nullptr);
            break;
        case Kind::kOtherNew:
            t.lookup(ip_packet(kA, kB, 47, t0), nullptr);
            break;
        case Kind::kOtherEst:
            t.lookup(ip_packet(kA, kB, 47, t0 - 1), nullptr);
            t.lookup(ip_packet(kB, kA, 47, t0), nullptr);
            break;
    }
    TimeoutProbe r;
    r.before = t.expire(t0 + timeout_s * kSec - 1);
    r.at = t.expire(t0 + timeout_s * kSec);
    r.left = t.active();
    return r;
}

void expect_timeout(Kind kind, int64_t timeout_s, const char* what) {
    SCOPED_TRACE(what);
    const TimeoutProbe r = probe(kind, timeout_s);
    EXPECT_EQ(r.before, 0u);
    EXPECT_EQ(r.at, 1u);
    EXPECT_EQ(r.left, 0u);
}

TEST(FlowTable, TimeoutsPerProtocolAndStateExactAtBoundary) {
    expect_timeout(Kind::kTcpNew, 60, "tcp new");
    expect_timeout(Kind::kTcpEst, 600, "tcp established");
    expect_timeout(Kind::kTcpClosed, 60, "tcp closed");
    expect_timeout(Kind::kUdpNew, 30, "udp new");
    expect_timeout(Kind::kUdpEst, 300, "udp established");
    expect_timeout(Kind::kIcmpNew, 30, "icmp new");
    expect_timeout(Kind::kIcmpEst, 300, "icmp established");
    expect_timeout(Kind::kOtherNew, 30, "other new");
    expect_timeout(Kind::kOtherEst, 300, "other established");
}

TEST(FlowTable, ShortTimeoutBehindLongOneStillExpires) {
    FlowTable t(config_with_pool(16));
    // An established TCP flow (600 s) is older than a new UDP flow (30 s).
    t.lookup(tcp(kA, 1000, kB, 80, kSyn, 0), nullptr);
    t.lookup(tcp(kB, 80, kA, 1000, kSyn | kAck, 0), nullptr);
    t.lookup(udp(kA, 1000, kB, 53, 1 * kSec), nullptr);
    EXPECT_EQ(t.expire(31 * kSec), 1u);
    EXPECT_EQ(t.active(), 1u);
    EXPECT_EQ(t.expire(600 * kSec - 1), 0u);
    EXPECT_EQ(t.expire(600 * kSec), 1u);
    EXPECT_EQ(t.counters().timed_out.get(), 2u);
}

TEST(FlowTable, PacketAfterTimeoutStartsNewFlow) {
    FlowTable t(config_with_pool(16));
    std::vector<uint64_t> freed;
    t.set_on_free([&](Flow& f) { freed.push_back(f.flow_id); });
    Flow* f = t.lookup(udp(kA, 1000, kB, 53, 0), nullptr);
    ASSERT_NE(f, nullptr);
    const uint64_t old_id = f->flow_id;
    EXPECT_EQ(t.lookup(udp(kA, 1000, kB, 53, 30 * kSec - 1), nullptr)->flow_id, old_id);
    // Idle for exactly 30 s since the last packet: expired, even though expire() never ran.
    Flow* g = t.lookup(udp(kB, 53, kA, 1000, 60 * kSec - 1), nullptr);
    ASSERT_NE(g, nullptr);
    EXPECT_NE(g->flow_id, old_id);
    EXPECT_TRUE(g->client_addr == kB);
    EXPECT_EQ(g->pkts[0], 1u);
    EXPECT_EQ(freed, std::vector<uint64_t>{old_id});
    EXPECT_EQ(t.counters().timed_out.get(), 1u);
    EXPECT_EQ(t.counters().created.get(), 2u);
}

TEST(FlowTable, ExpireRespectsMaxFlows) {
    FlowTable t(config_with_pool(16));
    for (uint16_t i = 0; i < 10; ++i) {
        t.lookup(udp(kA, static_cast<uint16_t>(1000 + i), kB, 53, i), nullptr);
    }
    EXPECT_EQ(t.expire(100 * kSec, 3), 3u);
    EXPECT_EQ(t.active(), 7u);
    EXPECT_EQ(t.expire(100 * kSec, 0), 0u);
    EXPECT_EQ(t.active(), 7u);
    EXPECT_EQ(t.expire(100 * kSec), 7u);
    EXPECT_EQ(t.active(), 0u);
    EXPECT_EQ(t.counters().timed_out.get(), 10u);
}

TEST(FlowTable, ExpireRemovesOldestFirst) {
    FlowTable t(config_with_pool(16));
    std::vector<uint16_t> freed_ports;
    t.set_on_free([&](Flow& f) { freed_ports.push_back(f.client_port); });
    t.lookup(udp(kA, 1, kB, 53, 3 * kSec), nullptr);
    t.lookup(icmp4(kA, kB, 3, 1, 0, 1 * kSec), nullptr);  // icmp: client_port = type 3
    t.lookup(ip_packet(kA, kC, 47, 2 * kSec), nullptr);   // other: port 0
    EXPECT_EQ(t.expire(100 * kSec, 2), 2u);
    EXPECT_EQ(freed_ports, (std::vector<uint16_t>{3, 0}));
}

TEST(FlowTable, MemcapEvictsLeastRecentlyUsedAndEntersEmergency) {
    FlowTable t(config_with_pool(4));
    ASSERT_EQ(t.pool_size(), 4u);
    std::vector<uint16_t> freed;
    t.set_on_free([&](Flow& f) { freed.push_back(f.client_port); });
    for (uint16_t i = 0; i < 4; ++i) {
        ASSERT_NE(t.lookup(udp(kA, static_cast<uint16_t>(1000 + i), kB, 53, i * kSec), nullptr),
                  nullptr);
    }
    EXPECT_FALSE(t.emergency());
    // Touch the oldest so that 1001 becomes the least recently used.
    t.lookup(udp(kA, 1000, kB, 53, 4 * kSec), nullptr);

    Flow* f = t.lookup(udp(kA, 2000, kB, 53, 5 * kSec), nullptr);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->client_port, 2000);
    EXPECT_TRUE(t.emergency());
    EXPECT_EQ(freed, std::vector<uint16_t>{1001});
    EXPECT_EQ(t.active(), 4u);
    EXPECT_EQ(t.counters().evicted.get(), 1u);
    EXPECT_EQ(t.counters().emergency_entered.get(), 1u);

    // Still in emergency: the next new flow evicts 1002, not counted as a new entry.
    ASSERT_NE(t.lookup(udp(kA, 2001, kB, 53, 6 * kSec), nullptr), nullptr);
    EXPECT_EQ(freed, (std::vector<uint16_t>{1001, 1002}));
    EXPECT_EQ(t.counters().evicted.get(), 2u);
    EXPECT_EQ(t.counters().emergency_entered.get(), 1u);
    EXPECT_EQ(t.counters().memcap_drops.get(), 0u);
    EXPECT_EQ(t.counters().created.get(), 6u);
}

TEST(FlowTable, EmergencyTimeoutsApplyAndRecoveryEndsIt) {
    FlowConfig c = config_with_pool(10);
    c.emergency_recovery = 30;  // leave once active < 3
    FlowTable t(c);
    for (uint16_t i = 0; i < 10; ++i) {
        t.lookup(udp(kA, static_cast<uint16_t>(1000 + i), kB, 53, i * kSec), nullptr);
    }
    // The 11th flow just before 10 s evicts 1000 (none is past the 10 s emergency timeout).
    t.lookup(udp(kA, 3000, kB, 53, 10 * kSec - 1), nullptr);
    ASSERT_TRUE(t.emergency());
    EXPECT_EQ(t.counters().evicted.get(), 1u);
    // Emergency new timeout is 10 s instead of 30 s: at 17 s flows 1001..1007 (last seen 1..7 s)
    // are idle for >= 10 s; 8 flows remain: still in emergency.
    EXPECT_EQ(t.expire(17 * kSec), 7u);
    EXPECT_EQ(t.active(), 3u);
    EXPECT_TRUE(t.emergency());
    // One more: 2 active < 30% of 10.
    EXPECT_EQ(t.expire(18 * kSec), 1u);
    EXPECT_EQ(t.active(), 2u);
    EXPECT_FALSE(t.emergency());
    // Back to normal timeouts: 1009 (last seen 9 s) survives until 39 s.
    EXPECT_EQ(t.expire(39 * kSec - 1), 0u);
    EXPECT_EQ(t.expire(39 * kSec), 1u);
}

TEST(FlowTable, FullTableWithExpiredHeadTimesItOutInsteadOfEvicting) {
    FlowTable t(config_with_pool(2));
    t.lookup(udp(kA, 1000, kB, 53, 0), nullptr);
    t.lookup(udp(kA, 1001, kB, 53, 50 * kSec), nullptr);
    // 1000 is past 30 s but expire() did not run; the new flow takes its slot as a timeout.
    ASSERT_NE(t.lookup(udp(kA, 1002, kB, 53, 51 * kSec), nullptr), nullptr);
    EXPECT_EQ(t.counters().timed_out.get(), 1u);
    EXPECT_EQ(t.counters().evicted.get(), 0u);
    EXPECT_TRUE(t.emergency());
    EXPECT_EQ(t.active(), 2u);
}

TEST(FlowTable, MemcapBelowOneFlowDropsPackets) {
    FlowConfig c;
    c.memcap = sizeof(Flow) - 1;
    FlowTable t(c);
    EXPECT_EQ(t.pool_size(), 0u);
    EXPECT_EQ(t.lookup(udp(kA, 1000, kB, 53, 0), nullptr), nullptr);
    EXPECT_EQ(t.lookup(udp(kA, 1000, kB, 53, 1), nullptr), nullptr);
    EXPECT_EQ(t.counters().memcap_drops.get(), 2u);
    EXPECT_EQ(t.counters().created.get(), 0u);
    EXPECT_EQ(t.active(), 0u);
}

TEST(FlowTable, PoolAndBucketBounds) {
    FlowConfig c;
    c.memcap = uint64_t{1} << 40;
    c.hash_size = 1000;
    FlowTable t(c);
    EXPECT_EQ(t.pool_size(), kMaxFlowPool);
    EXPECT_EQ(t.bucket_count(), 1024u);
    FlowConfig d = config_with_pool(8);
    d.hash_size = 0;
    FlowTable u(d);
    EXPECT_EQ(u.bucket_count(), 1u);
}

TEST(FlowTable, SingleBucketChainsStayConsistent) {
    FlowConfig c = config_with_pool(64);
    c.hash_size = 1;
    FlowTable t(c);
    std::vector<Flow*> flows;
    for (uint16_t i = 0; i < 40; ++i) {
        flows.push_back(t.lookup(udp(kA, static_cast<uint16_t>(1000 + i), kB, 53, i), nullptr));
    }
    // Odd ports are refreshed, even ones expire.
    for (uint16_t i = 1; i < 40; i += 2) {
        t.lookup(udp(kB, 53, kA, static_cast<uint16_t>(1000 + i), 20 * kSec), nullptr);
    }
    EXPECT_EQ(t.expire(31 * kSec), 20u);
    for (uint16_t i = 1; i < 40; i += 2) {
        EXPECT_EQ(t.lookup(udp(kA, static_cast<uint16_t>(1000 + i), kB, 53, 21 * kSec), nullptr),
                  flows[i]);
    }
    EXPECT_EQ(t.active(), 20u);
}

TEST(FlowTable, OnFreeCalledExactlyOncePerFlow) {
    FlowTable t(config_with_pool(8));
    std::map<uint64_t, int> freed;
    std::vector<uint64_t> created;
    t.set_on_free([&](Flow& f) { ++freed[f.flow_id]; });
    auto track = [&](Flow* f) {
        if (f != nullptr && f->pkts[0] + f->pkts[1] == 1) {
            created.push_back(f->flow_id);
        }
    };
    for (uint16_t i = 0; i < 20; ++i) {  // 12 removals (evictions or emergency timeouts)
        track(t.lookup(udp(kA, static_cast<uint16_t>(1000 + i), kB, 53, i * kSec), nullptr));
    }
    t.expire(25 * kSec);  // emergency timeouts: removes some
    track(t.lookup(tcp(kA, 5, kB, 80, kSyn, 26 * kSec), nullptr));
    track(t.lookup(tcp(kB, 80, kA, 5, kRst, 26 * kSec), nullptr));
    track(t.lookup(tcp(kA, 5, kB, 80, kSyn, 27 * kSec), nullptr));  // recycle
    t.clear();
    EXPECT_EQ(t.active(), 0u);
    EXPECT_EQ(created.size(), 22u);
    EXPECT_EQ(t.counters().created.get(), 22u);
    ASSERT_EQ(freed.size(), created.size());
    for (uint64_t id : created) {
        EXPECT_EQ(freed[id], 1) << id;
    }
    t.clear();
    EXPECT_EQ(freed.size(), 22u);
}

TEST(FlowTable, ForEachActiveVisitsEveryLiveFlowOnceAndRemovesNone) {
    FlowTable t(config_with_pool(16));
    int frees = 0;
    t.set_on_free([&](Flow&) { ++frees; });
    int calls = 0;
    t.for_each_active([&](Flow&) { ++calls; });
    EXPECT_EQ(calls, 0);  // empty table

    Flow* old_udp = t.lookup(udp(kB, 3000, kC, 53, 0), nullptr);  // times out at 30 s
    Flow* tcp_flow = t.lookup(tcp(kA, 1000, kB, 80, kSyn, 1 * kSec), nullptr);
    t.lookup(tcp(kB, 80, kA, 1000, kSyn | kAck, 1 * kSec), nullptr);  // established
    Flow* udp_flow = t.lookup(udp(kA, 2000, kC, 53, 2 * kSec), nullptr);
    Flow* icmp_flow = t.lookup(icmp4(kA, kC, 8, 0, 7, 20 * kSec), nullptr);
    ASSERT_NE(tcp_flow, nullptr);
    ASSERT_NE(udp_flow, nullptr);
    ASSERT_NE(old_udp, nullptr);
    ASSERT_NE(icmp_flow, nullptr);
    const uint64_t old_id = old_udp->flow_id;
    EXPECT_EQ(t.expire(31 * kSec), 1u);
    EXPECT_EQ(frees, 1);

    std::map<uint64_t, int> seen;
    t.for_each_active([&](Flow& f) {
        ++seen[f.flow_id];
        f.action = FlowAction::kPass;  // the callback may change a flow's contents
    });
    EXPECT_EQ(seen.size(), 3u);
    EXPECT_EQ(seen[tcp_flow->flow_id], 1);
    EXPECT_EQ(seen[udp_flow->flow_id], 1);
    EXPECT_EQ(seen[icmp_flow->flow_id], 1);
    EXPECT_EQ(seen.count(old_id), 0u);
    EXPECT_EQ(tcp_flow->action, FlowAction::kPass);
    EXPECT_EQ(icmp_flow->action, FlowAction::kPass);
    // Nothing removed: flow.active at the end stays what it was.
    EXPECT_EQ(t.active(), 3u);
    EXPECT_EQ(t.counters().active.get(), 3u);
    EXPECT_EQ(frees, 1);
}

TEST(FlowTable, FlowIdsUniqueNonZeroAndBelow2To53) {
    FlowConfig c0 = config_with_pool(1);
    FlowConfig c1 = c0;
    c1.worker_id = 1;
    FlowTable t0(c0);
    FlowTable t1(c1);
    std::unordered_set<uint64_t> ids;
    uint64_t max_id = 0;
    uint64_t min_id = UINT64_MAX;
    for (uint32_t i = 0; i < 100000; ++i) {
        // Pool of one: each new flow evicts the previous one and gets a fresh id.
        const uint16_t port = static_cast<uint16_t>(i);
        const Address dst = v4(10, 1, static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8));
        Flow* a = t0.lookup(udp(kA, port, dst, 53, i), nullptr);
        Flow* b = t1.lookup(udp(kA, port, dst, 53, i), nullptr);
        ids.insert(a->flow_id);
        ids.insert(b->flow_id);
        max_id = std::max({max_id, a->flow_id, b->flow_id});
        min_id = std::min({min_id, a->flow_id, b->flow_id});
    }
    EXPECT_EQ(ids.size(), 200000u);
    EXPECT_LT(max_id, uint64_t{1} << 53);
    EXPECT_GT(min_id, 0u);
    // Spread over the space (not a counter): the largest is in the top half.
    EXPECT_GE(max_id, uint64_t{1} << 52);
    EXPECT_EQ(t0.counters().created.get(), 100000u);
}

TEST(FlowTable, FlowIdsAreDeterministicPerWorker) {
    FlowTable a(config_with_pool(4));
    FlowTable b(config_with_pool(4));
    const uint64_t ia = a.lookup(udp(kA, 1, kB, 2, 0), nullptr)->flow_id;
    const uint64_t ib = b.lookup(udp(kC, 9, kB, 7, 5), nullptr)->flow_id;
    EXPECT_EQ(ia, ib);  // the id depends on worker and sequence only
}

TEST(FlowTable, ExportedStatsExact) {
    FlowTable t(config_with_pool(3));
    t.lookup(tcp(kA, 1000, kB, 80, kSyn, 0), nullptr);
    t.lookup(udp(kA, 1000, kB, 53, 1), nullptr);
    t.lookup(icmp4(kA, kB, 8, 0, 1, 2), nullptr);
    t.lookup(icmp6(v6(1), v6(2), 128, 0, 1, 3), nullptr);  // evicts the TCP flow
    t.lookup(ip_packet(kA, kB, 47, 40 * kSec), nullptr);   // times out UDP (emergency 10 s)
    t.expire(40 * kSec);                                   // icmp4 and icmp6 time out
    StatsSnapshot s;
    t.export_stats(s);
    const std::map<std::string, uint64_t> expected = {
        {"flow.total", 5},
        {"flow.active", 1},
        {"flow.tcp", 1},
        {"flow.udp", 1},
        {"flow.icmpv4", 1},
        {"flow.icmpv6", 1},
        {"flow.other", 1},
        {"flow.timed_out", 3},
        {"flow.evicted", 1},
        {"flow.tcp_reuse", 0},
        {"flow.memcap_drops", 0},
        {"flow.emerg_mode_entered", 1},
        {"flow.memuse", sizeof(Flow) + 1024 * sizeof(Flow*)},
    };
    EXPECT_EQ(s.values(), expected);
    EXPECT_TRUE(t.emergency());  // 1 of 3 is not below 30%
}

TEST(FlowTable, MemuseGaugeFollowsActive) {
    FlowTable t(config_with_pool(8));
    EXPECT_EQ(t.counters().memuse.get(), 1024 * sizeof(Flow*));
    t.lookup(udp(kA, 1, kB, 2, 0), nullptr);
    t.lookup(udp(kA, 3, kB, 4, 0), nullptr);
    EXPECT_EQ(t.counters().active.get(), 2u);
    EXPECT_EQ(t.counters().memuse.get(), 2 * sizeof(Flow) + 1024 * sizeof(Flow*));
    t.clear();
    EXPECT_EQ(t.counters().active.get(), 0u);
    EXPECT_EQ(t.counters().memuse.get(), 1024 * sizeof(Flow*));
}

}  // namespace
}  // namespace picket::sensor::flow
