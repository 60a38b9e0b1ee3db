// TCP session tracking and reassembly. Every packet is a real Ethernet/IPv4 or IPv6/TCP frame
// with correct checksums (unless a test breaks one), decoded by decode::decode_packet and
// looked up in a real flow::FlowTable whose on_free releases the stream state, as the worker
// will do. Expected bytes are exact; the overlap tables are Suricata's Sturges/Novak cases.
#include "sensor/stream/stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tests/sensor/stream/stream_rig.h"
#include "tests/support/frames.h"

namespace picket::sensor::stream {
namespace {

using namespace testrig;  // NOLINT(build/namespaces): the shared rig

// ---- handshake, in order, out of order ----

TEST(StreamNames, StateNames) {
    EXPECT_STREQ(state_name(SessionState::kNone), "none");
    EXPECT_STREQ(state_name(SessionState::kSynSent), "syn_sent");
    EXPECT_STREQ(state_name(SessionState::kSynRecv), "syn_recv");
    EXPECT_STREQ(state_name(SessionState::kEstablished), "established");
    EXPECT_STREQ(state_name(SessionState::kClosing), "closing");
    EXPECT_STREQ(state_name(SessionState::kClosed), "closed");
    EXPECT_STREQ(state_name(static_cast<SessionState>(6)), "?");
}

TEST(StreamNames, ExportsEveryCounterAtZero) {
    StreamTracker st(StreamConfig{});
    StatsSnapshot s;
    st.export_stats(s);
    EXPECT_EQ(s.values().size(), 16u);
    EXPECT_TRUE(s.has("tcp.sessions"));
    EXPECT_TRUE(s.has("tcp.reassembly_memcap_no_tail"));
    EXPECT_TRUE(s.has("tcp.reassembly_memuse"));
}

TEST(StreamSession, HandshakeThenInOrderData) {
    Rig rig;
    EXPECT_EQ(rig.send({true, kIsnC, 0, kSyn}).state, SessionState::kSynSent);
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck}).state, SessionState::kSynRecv);
    EXPECT_EQ(rig.send({true, kIsnC + 1, kIsnS + 1, kAck}).state, SessionState::kEstablished);

    StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "hello "});
    EXPECT_EQ(u.state, SessionState::kEstablished);
    EXPECT_EQ(u.data(Direction::kToServer).stream_offset, 0u);
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 6u);
    EXPECT_EQ(u.data(Direction::kToServer).gap, 0u);
    u = rig.send({true, kIsnC + 7, kIsnS + 1, kAck | kPsh, "world"});
    EXPECT_EQ(u.data(Direction::kToServer).stream_offset, 6u);
    rig.send({false, kIsnS + 1, kIsnC + 12, kAck | kPsh, "HTTP/1.1 200 OK"});

    EXPECT_EQ(rig.out(Direction::kToServer), "hello world");
    EXPECT_EQ(rig.out(Direction::kToClient), "HTTP/1.1 200 OK");
    const StatsSnapshot s = rig.stats();
    EXPECT_EQ(s.get("tcp.sessions"), 1u);
    EXPECT_EQ(s.get("tcp.memuse"), StreamTracker::session_bytes());
    EXPECT_EQ(s.get("tcp.reassembly_memuse"), 0u);  // keep_tail 0: in-order data is not copied
    EXPECT_EQ(s.get("tcp.overlap"), 0u);
    EXPECT_EQ(s.get("tcp.retransmissions"), 0u);
}

TEST(StreamSession, OutOfOrderHeldUntilTheHoleFills) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    StreamUpdate u = rig.send({true, kIsnC + 1 + 5, kIsnS + 1, kAck, "world"});
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 0u);
    u = rig.send({true, kIsnC + 1 + 10, kIsnS + 1, kAck, "!!"});
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 0u);
    u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "hello"});
    // The packet brought 5 bytes; 12 became contiguous.
    EXPECT_EQ(u.data(Direction::kToServer).stream_offset, 0u);
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 12u);
    EXPECT_EQ(rig.out(Direction::kToServer), "helloworld!!");
    EXPECT_EQ(rig.stats().get("tcp.overlap"), 0u);
    EXPECT_EQ(rig.stats().get("tcp.reassembly_gap"), 0u);
}

TEST(StreamSession, RetransmissionCountedAndDifferentDataFlagged) {
    StreamConfig cfg;
    cfg.keep_tail = 16;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "abcdef"});
    StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "abcdef"});
    EXPECT_TRUE(u.has(kEventRetransmission));
    EXPECT_FALSE(u.has(kEventOverlapDiffData));
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 0u);
    u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "abXdef"});
    EXPECT_TRUE(u.has(kEventRetransmission));
    EXPECT_TRUE(u.has(kEventOverlapDiffData));
    // A retransmission that also carries new bytes: the old part is final, the new part
    // is delivered.
    u = rig.send({true, kIsnC + 4, kIsnS + 1, kAck, "defghi"});
    EXPECT_TRUE(u.has(kEventOverlap));
    EXPECT_EQ(u.data(Direction::kToServer).stream_offset, 6u);
    EXPECT_EQ(rig.out(Direction::kToServer), "abcdefghi");
    const StatsSnapshot s = rig.stats();
    EXPECT_EQ(s.get("tcp.retransmissions"), 2u);
    EXPECT_EQ(s.get("tcp.overlap"), 1u);
    EXPECT_EQ(s.get("tcp.overlap_diff_data"), 1u);
}

// ---- overlap policies: Suricata's Sturges/Novak pattern (src/tests/stream-tcp-list.c) ----

struct Step {
    uint32_t rseq;  // relative to the ISN: 1 is the first data byte
    const char* data;
};

// The main pattern: the first byte (rseq 1) comes last, so every other segment is queued
// out of order when it meets the others, as in the paper.
const Step kMainPattern[] = {
    {2, "AAA"},  {6, "BB"},  {8, "CCC"}, {12, "D"},   {15, "EE"}, {17, "FFF"},
    {20, "GG"},  {22, "HH"}, {24, "I"},  {3, "JJJJ"}, {8, "KKK"}, {11, "LLL"},
    {14, "MMM"}, {18, "N"},  {21, "O"},  {22, "P"},   {24, "QQ"}, {1, "0"},
};
// Segments queued before the first byte arrives and overlaps it from before.
const Step kBeforePattern[] = {
    {3, "B"}, {9, "D"}, {12, "EE"}, {2, "AA"}, {1, "JJJJ"}, {8, "LLL"}, {11, "MMM"},
};

struct PolicyCase {
    const char* name;
    std::string main;
    std::string before;  // holes (never sent) shown as NUL, reported as gaps at close
};

std::string with_nuls(const char* s, size_t n) {
    return std::string(s, n);
}

const std::string kBsdBefore = with_nuls("JJJJ\0\0\0LLLMMM", 13);
const std::string kFirstBefore = with_nuls("JABJ\0\0\0LDLMEE", 13);

class OverlapPolicy : public ::testing::TestWithParam<PolicyCase> {};

std::string run_pattern(Policy pol, uint32_t isn, const Step* steps, size_t n) {
    StreamConfig cfg;
    cfg.policy = pol;
    Rig rig(cfg);
    rig.handshake(isn, kIsnS);
    for (size_t i = 0; i < n; ++i) {
        rig.send({true, isn + steps[i].rseq, kIsnS + 1, kAck, steps[i].data});
    }
    // Close: what is still held after a hole is delivered, the hole reported as a gap.
    rig.send({true, isn + 30, 0, kRst});
    EXPECT_EQ(rig.st().state(rig.flow()), SessionState::kClosed);
    return rig.out(Direction::kToServer);
}

TEST_P(OverlapPolicy, SturgesNovakPattern) {
    const PolicyCase& c = GetParam();
    Policy pol;
    ASSERT_TRUE(parse_policy(c.name, &pol));
    EXPECT_STREQ(policy_name(pol), c.name);
    // ISNs as Suricata's tests use them, sequence wrap-around included.
    for (uint32_t isn : {0u, 1u, 0xffffffffu, 0xfffffff5u}) {
        SCOPED_TRACE(isn);
        EXPECT_EQ(run_pattern(pol, isn, kMainPattern, std::size(kMainPattern)), c.main);
        EXPECT_EQ(run_pattern(pol, isn, kBeforePattern, std::size(kBeforePattern)), c.before);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Policies, OverlapPolicy,
    ::testing::Values(PolicyCase{"first", "0AAAJBBCCCLDLMEEFFFGGHHIQ", kFirstBefore},
                      PolicyCase{"vista", "0AAAJBBCCCLDLMEEFFFGGHHIQ", kFirstBefore},
                      PolicyCase{"last", "0AJJJJBKKKLLLMMMFNFGOPHQQ", kBsdBefore},
                      PolicyCase{"bsd", "0AAAJJBCCCLLLMMMFFFGGHHIQ", kBsdBefore},
                      PolicyCase{"windows", "0AAAJJBCCCLLLMMMFFFGGHHIQ", kBsdBefore},
                      PolicyCase{"hpux10", "0AAAJJBCCCLLLMMMFFFGGHHIQ", kBsdBefore},
                      PolicyCase{"irix", "0AAAJJBCCCLLLMMMFFFGGHHIQ", kBsdBefore},
                      PolicyCase{"macos", "0AAAJJBCCCLLLMMMFFFGGHHIQ", kBsdBefore},
                      PolicyCase{"linux", "0AAAJJBCCCLLLMMMFFFGGHHQQ", kBsdBefore},
                      PolicyCase{"old-linux", "0AAAJJBKKKLLLMMMFFFGGHHQQ", kBsdBefore},
                      PolicyCase{"solaris", "0AJJJBBKKKLLLMMMFFFGGHHQQ", kBsdBefore},
                      PolicyCase{"hpux11", "0AJJJBBKKKLLLMMMFFFGGHHQQ", kBsdBefore}),
    [](const ::testing::TestParamInfo<PolicyCase>& i) {
        std::string n = i.param.name;
        std::replace(n.begin(), n.end(), '-', '_');
        return n;
    });

TEST(OverlapPolicyCounters, MainPatternCountsOverlapsAndDifferences) {
    StreamConfig cfg;
    cfg.policy = Policy::kBsd;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    for (const Step& s : kMainPattern) {
        rig.send({true, kIsnC + s.rseq, kIsnS + 1, kAck, s.data});
    }
    const StatsSnapshot st = rig.stats();
    // J K L M N O P Q overlap held data; all of them carry different bytes. "0" does not.
    EXPECT_EQ(st.get("tcp.overlap"), 8u);
    EXPECT_EQ(st.get("tcp.overlap_diff_data"), 8u);
}

TEST(OverlapPolicyConfig, PerDestinationNetworkLongestPrefixWins) {
    StreamConfig cfg;
    cfg.policy = Policy::kBsd;
    PolicyNet a, b, c;
    ASSERT_TRUE(parse_cidr("10.0.0.0/8", &a));
    a.policy = Policy::kFirst;
    ASSERT_TRUE(parse_cidr("10.0.0.0/24", &b));
    b.policy = Policy::kLinux;
    ASSERT_TRUE(parse_cidr("2001:db8::/32", &c));
    c.policy = Policy::kSolaris;
    cfg.policies = {a, b, c};
    Rig rig(cfg);
    uint8_t ip[16] = {10, 0, 0, 2};
    EXPECT_EQ(rig.st().policy_for(decode::Address::from_v4(ip)), Policy::kLinux);
    ip[2] = 1;
    EXPECT_EQ(rig.st().policy_for(decode::Address::from_v4(ip)), Policy::kFirst);
    ip[0] = 192;
    EXPECT_EQ(rig.st().policy_for(decode::Address::from_v4(ip)), Policy::kBsd);
    EXPECT_EQ(rig.st().policy_for(decode::Address::from_v6(v6_hosts().server)), Policy::kSolaris);

    // The server 10.0.0.2 gets linux: its to-server data is resolved that way.
    rig.handshake(kIsnC, kIsnS);
    for (const Step& s : kMainPattern) {
        rig.send({true, kIsnC + s.rseq, kIsnS + 1, kAck, s.data});
    }
    EXPECT_EQ(rig.out(Direction::kToServer), "0AAAJJBCCCLLLMMMFFFGGHHQQ");
}

TEST(OverlapPolicyConfig, ParseNamesAndCidrs) {
    Policy p;
    EXPECT_TRUE(parse_policy("windows2k3", &p));
    EXPECT_EQ(p, Policy::kWindows);
    EXPECT_FALSE(parse_policy("Linux", &p));
    EXPECT_FALSE(parse_policy("", &p));
    PolicyNet n;
    EXPECT_TRUE(parse_cidr("192.0.2.77", &n));
    EXPECT_EQ(n.prefix_len, 128);
    EXPECT_TRUE(parse_cidr("192.0.2.77/24", &n));
    EXPECT_EQ(n.prefix_len, 120);
    EXPECT_EQ(n.net.b[15], 0);  // host bits cleared
    EXPECT_TRUE(parse_cidr("::/0", &n));
    EXPECT_EQ(n.prefix_len, 0);
    EXPECT_FALSE(parse_cidr("10.0.0.0/33", &n));
    EXPECT_FALSE(parse_cidr("10.0.0.0/", &n));
    EXPECT_FALSE(parse_cidr("10.0.0/8", &n));
    EXPECT_FALSE(parse_cidr("2001:db8::/129", &n));
}

TEST(OverlapPolicyConfig, InlineModeKeepsAcceptedData) {
    StreamConfig cfg;
    cfg.policy = Policy::kLast;
    cfg.inline_mode = true;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    for (const Step& s : kMainPattern) {
        rig.send({true, kIsnC + s.rseq, kIsnS + 1, kAck, s.data});
    }
    EXPECT_EQ(rig.out(Direction::kToServer), "0AAAJBBCCCLDLMEEFFFGGHHIQ");
}

// ---- depth, memcaps ----

TEST(StreamLimits, ReassemblyDepthPerDirectionCountedOnce) {
    StreamConfig cfg;
    cfg.reassembly_depth = 10;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "abcdef"});
    StreamUpdate u = rig.send({true, kIsnC + 7, kIsnS + 1, kAck, "ghijkl"});
    EXPECT_TRUE(u.has(kEventDepthReached));
    EXPECT_TRUE(u.data(Direction::kToServer).depth_reached);
    u = rig.send({true, kIsnC + 13, kIsnS + 1, kAck, "mnopqr"});
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 0u);
    rig.send({false, kIsnS + 1, kIsnC + 19, kAck, "0123456789ABCDEF"});
    EXPECT_EQ(rig.out(Direction::kToServer), "abcdefghij");
    EXPECT_EQ(rig.out(Direction::kToClient), "0123456789");
    EXPECT_EQ(rig.stats().get("tcp.reassembly_depth_reached"), 2u);
}

TEST(StreamLimits, SessionMemcapRefusesNewSessionsExactly) {
    StreamConfig cfg;
    cfg.memcap = 3 * StreamTracker::session_bytes();
    Rig rig(cfg);
    // Established sessions are never reclaimed: the fourth and fifth SYN get none.
    for (uint16_t i = 0; i < 3; ++i) {
        rig.hosts().cport = static_cast<uint16_t>(1000 + i);
        rig.handshake(kIsnC, kIsnS);
    }
    for (uint16_t i = 3; i < 5; ++i) {
        rig.hosts().cport = static_cast<uint16_t>(1000 + i);
        StreamUpdate u = rig.send({true, kIsnC, 0, kSyn});
        EXPECT_TRUE(u.has(kEventSessionMemcap));
    }
    StatsSnapshot s = rig.stats();
    EXPECT_EQ(s.get("tcp.sessions"), 3u);
    EXPECT_EQ(s.get("tcp.ssn_memcap_drop"), 2u);
    EXPECT_EQ(s.get("tcp.ssn_memcap_reclaimed"), 0u);
    EXPECT_EQ(s.get("tcp.memuse"), 3 * StreamTracker::session_bytes());
    // Freeing a flow gives its share back.
    rig.table().clear();
    s = rig.stats();
    EXPECT_EQ(s.get("tcp.memuse"), 0u);
    rig.hosts().cport = 2000;
    EXPECT_EQ(rig.send({true, kIsnC, 0, kSyn}).state, SessionState::kSynSent);
}

// A SYN flood fills the session memcap with half-open sessions: each new SYN frees the
// oldest session still in syn_sent (never an established one), so a real connection that
// starts during the flood is still reassembled.
TEST(StreamLimits, SynFloodReclaimsOldestHalfOpenSession) {
    StreamConfig cfg;
    cfg.memcap = 3 * StreamTracker::session_bytes();
    Rig rig(cfg);
    rig.hosts().cport = 999;
    rig.handshake(kIsnC, kIsnS);  // established: kept throughout
    for (uint16_t i = 0; i < 6; ++i) {
        rig.hosts().cport = static_cast<uint16_t>(1000 + i);
        StreamUpdate u = rig.send({true, kIsnC, 0, kSyn});
        EXPECT_FALSE(u.has(kEventSessionMemcap));
        EXPECT_EQ(u.state, SessionState::kSynSent);
    }
    StatsSnapshot s = rig.stats();
    EXPECT_EQ(s.get("tcp.sessions"), 7u);
    EXPECT_EQ(s.get("tcp.ssn_memcap_reclaimed"), 4u);  // ports 1000-1003, oldest first
    EXPECT_EQ(s.get("tcp.ssn_memcap_drop"), 0u);
    EXPECT_EQ(s.get("tcp.memuse"), 3 * StreamTracker::session_bytes());
    // A connection that starts now is reassembled in full.
    rig.hosts().cport = 2000;
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "GET /legit"});
    EXPECT_EQ(rig.out(Direction::kToServer), "GET /legit");
    EXPECT_EQ(rig.stats().get("tcp.ssn_memcap_reclaimed"), 5u);  // port 1004
    // The first flow is still reassembled; a reclaimed flow is untracked until a new SYN.
    rig.hosts().cport = 999;
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "kept"});
    EXPECT_EQ(rig.out(Direction::kToServer), "kept");
    rig.hosts().cport = 1000;
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck}).state, SessionState::kNone);
    rig.table().clear();
    EXPECT_EQ(rig.stats().get("tcp.memuse"), 0u);
}

TEST(StreamLimits, ReassemblyMemcapDropsSegmentsExactly) {
    StreamConfig cfg;
    cfg.keep_tail = 16;
    cfg.reassembly_memcap = 8192;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, std::string(100, 'a')});
    // 2 KiB buffer + its 256-byte bitmap.
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 2048u + 256u);
    // Held 5000 bytes ahead: the buffer would have to grow to 8 KiB (+1 KiB bitmap).
    StreamUpdate u = rig.send({true, kIsnC + 1 + 5000, kIsnS + 1, kAck, std::string(100, 'b')});
    EXPECT_TRUE(u.has(kEventSegmentMemcap));
    EXPECT_EQ(rig.stats().get("tcp.segment_memcap_drop"), 1u);
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 2048u + 256u);
    // Held 1000 bytes ahead fits; the held-segment list costs 8 entries of 16 bytes.
    u = rig.send({true, kIsnC + 1 + 1000, kIsnS + 1, kAck, std::string(100, 'c')});
    EXPECT_FALSE(u.has(kEventSegmentMemcap));
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 2048u + 256u + 128u);
    // The missing bytes are acknowledged: gap, then the held data.
    rig.send({false, kIsnS + 1, kIsnC + 1 + 1100, kAck});
    EXPECT_EQ(rig.out(Direction::kToServer),
              std::string(100, 'a') + std::string(900, '\0') + std::string(100, 'c'));
    EXPECT_EQ(rig.stats().get("tcp.reassembly_gap"), 1u);
    rig.table().clear();
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 0u);
    EXPECT_EQ(rig.stats().get("tcp.memuse"), 0u);
}

// At the reassembly memcap, in-order data is still delivered (from the packet, without a tail)
// rather than dropped; only out-of-order data, which needs the buffer, is dropped.
TEST(StreamLimits, InOrderDataPassesWithoutTailAtTheReassemblyMemcap) {
    StreamConfig cfg;
    cfg.keep_tail = 16;
    cfg.reassembly_memcap = 0;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "GET /legit"});
    EXPECT_FALSE(u.has(kEventSegmentMemcap));
    rig.send({true, kIsnC + 11, kIsnS + 1, kAck, " HTTP/1.1"});
    EXPECT_EQ(rig.out(Direction::kToServer), "GET /legit HTTP/1.1");
    u = rig.send({true, kIsnC + 40, kIsnS + 1, kAck, "later"});  // out of order: needs a buffer
    EXPECT_TRUE(u.has(kEventSegmentMemcap));
    StatsSnapshot s = rig.stats();
    EXPECT_EQ(s.get("tcp.reassembly_memcap_no_tail"), 2u);
    EXPECT_EQ(s.get("tcp.segment_memcap_drop"), 1u);
    EXPECT_EQ(s.get("tcp.reassembly_memuse"), 0u);
}

// ---- app_on_ack: Suricata's IDS timing for the app layer ----

StreamConfig app_on_ack_config() {
    StreamConfig cfg;
    cfg.app_on_ack = true;
    return cfg;
}

constexpr Direction kTs = Direction::kToServer;
constexpr Direction kTc = Direction::kToClient;

TEST(StreamAppOnAck, DataGoesToTheAppLayerOnTheOtherSidesAck) {
    Rig rig(app_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "GET /a"});
    // Raw detection has it at once; the app layer waits for the server.
    EXPECT_EQ(u.data(kTs).new_len(), 6u);
    EXPECT_EQ(rig.app(kTs), "");
    u = rig.send({false, kIsnS + 1, kIsnC + 1 + 3, kAck});  // acknowledges "GET"
    EXPECT_EQ(u.app_data(kTs).stream_offset, 0u);
    EXPECT_EQ(u.app_data(kTs).new_len(), 3u);
    EXPECT_EQ(u.app_data(kTs).new_offset, 0u);
    EXPECT_EQ(rig.app(kTs), "GET");
    u = rig.send({false, kIsnS + 1, kIsnC + 7, kAck | kPsh, "HTTP/1.1"});
    EXPECT_EQ(rig.app(kTs), "GET /a");
    EXPECT_EQ(u.data(kTc).new_len(), 8u);
    EXPECT_EQ(rig.app(kTc), "");
    // The client's own new data, with its ACK of the response: only the response moves on.
    u = rig.send({true, kIsnC + 7, kIsnS + 9, kAck | kPsh, "X"});
    EXPECT_EQ(u.app_data(kTs).new_len(), 0u);
    EXPECT_EQ(rig.app(kTc), "HTTP/1.1");
    EXPECT_EQ(rig.app(kTs), "GET /a");
    EXPECT_EQ(rig.out(kTs), "GET /aX");
}

TEST(StreamAppOnAck, AcknowledgedSynDataWaitsForTheServersNextPacket) {
    // The ACK that covers the client's data arrives before the session is established (as a
    // SYN/ACK does for TCP Fast Open data): the client's own next packet does not hand it
    // over, the server's next one does.
    Rig rig(app_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "abc"});
    rig.send({false, kIsnS + 1, kIsnC + 4, kAck});
    EXPECT_EQ(rig.app(kTs), "abc");
    rig.send({true, kIsnC + 4, kIsnS + 1, kAck | kPsh, "def"});
    rig.send({true, kIsnC + 7, kIsnS + 1, kAck});  // the client again: nothing
    EXPECT_EQ(rig.app(kTs), "abc");
    rig.send({false, kIsnS + 1, kIsnC + 4, kAck});  // a duplicate ACK: still only "abc"
    EXPECT_EQ(rig.app(kTs), "abc");
    rig.send({false, kIsnS + 1, kIsnC + 7, kAck});
    EXPECT_EQ(rig.app(kTs), "abcdef");
}

// TCP Fast Open (RFC 7413): the client's SYN carries data from ISN + 1, the SYN/ACK
// acknowledges it (ISN + 1 + its length); it is reassembled and reaches the app layer on the
// server's next packet, as data acknowledged by a SYN/ACK does.
TEST(StreamTcpFastOpen, SynDataIsReassembledAndAcknowledgedBySynAck) {
    Rig rig(app_on_ack_config());
    StreamUpdate u = rig.send({true, kIsnC, 0, kSyn, "GET /tfo HTTP/1.1\r\n"});
    EXPECT_EQ(u.state, SessionState::kSynSent);
    EXPECT_EQ(u.data(kTs).stream_offset, 0u);
    EXPECT_EQ(rig.out(kTs), "GET /tfo HTTP/1.1\r\n");
    const uint32_t n = 19;
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 1 + n, kSyn | kAck}).state, SessionState::kSynRecv);
    EXPECT_EQ(rig.send({true, kIsnC + 1 + n, kIsnS + 1, kAck}).state, SessionState::kEstablished);
    rig.send({true, kIsnC + 1 + n, kIsnS + 1, kAck | kPsh, "Host: a\r\n\r\n"});
    rig.send({false, kIsnS + 1, kIsnC + 1 + n + 11, kAck | kPsh, "HTTP/1.1 200 OK\r\n"});
    EXPECT_EQ(rig.out(kTs), "GET /tfo HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(rig.app(kTs), "GET /tfo HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(rig.out(kTc), "HTTP/1.1 200 OK\r\n");
    EXPECT_EQ(rig.stats().get("tcp.retransmissions"), 0u);
}

TEST(StreamTcpFastOpen, CookieRefusedDataIsSentAgainAfterTheHandshake) {
    // The server acknowledges only the SYN; the client sends the same bytes again.
    Rig rig(app_on_ack_config());
    rig.send({true, kIsnC, 0, kSyn, "hello"});
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck}).state, SessionState::kSynRecv);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "hello world"});
    rig.send({false, kIsnS + 1, kIsnC + 12, kAck});
    EXPECT_EQ(rig.out(kTs), "hello world");
    EXPECT_EQ(rig.app(kTs), "hello world");
}

TEST(StreamTcpFastOpen, SynAckDataAndAnAckPastTheSynDataIsNoAnswer) {
    Rig rig(app_on_ack_config());
    rig.send({true, kIsnC, 0, kSyn, "abc"});
    // Acknowledges more than the SYN carried: not an answer to this SYN.
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 5, kSyn | kAck}).state, SessionState::kSynSent);
    // The real SYN/ACK, with data of its own (allowed by RFC 7413).
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 4, kSyn | kAck, "220 hi"}).state,
              SessionState::kSynRecv);
    EXPECT_EQ(rig.out(kTc), "220 hi");
    rig.send({true, kIsnC + 4, kIsnS + 7, kAck});
    EXPECT_EQ(rig.app(kTc), "220 hi");
}

TEST(StreamAppOnAck, AHoleComesAfterTheDataBeforeIt) {
    StreamConfig cfg = app_on_ack_config();
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "aaa"});
    rig.send({true, kIsnC + 7, kIsnS + 1, kAck, "ccc"});  // bytes 3..5 never seen
    EXPECT_EQ(rig.out(kTs), "aaa");
    // The server acknowledges everything: the app layer gets "aaa", then the hole, then "ccc"
    // (the second run through next()); raw delivery skips the hole after the app layer.
    rig.send({false, kIsnS + 1, kIsnC + 10, kAck});
    EXPECT_EQ(rig.app(kTs), std::string("aaa\0\0\0ccc", 9));
    EXPECT_EQ(rig.app_gaps(kTs), 1);
    EXPECT_EQ(rig.out(kTs), std::string("aaa\0\0\0ccc", 9));
    EXPECT_EQ(rig.gaps(kTs), 1);
    EXPECT_EQ(rig.stats().get("tcp.reassembly_gap"), 1u);
}

TEST(StreamAppOnAck, CloseAndFlushHandOverWhatWasNeverAcknowledged) {
    Rig rig(app_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "request"});
    rig.send({false, kIsnS + 1, kIsnC + 1, kAck | kPsh, "reply"});
    EXPECT_EQ(rig.app(kTs), "");
    EXPECT_EQ(rig.app(kTc), "");
    rig.send({true, kIsnC + 8, kIsnS + 1, kRst});
    EXPECT_EQ(rig.app(kTs), "request");
    EXPECT_EQ(rig.app(kTc), "reply");
    EXPECT_EQ(rig.app_eofs(kTs), 1);
    EXPECT_EQ(rig.app_eofs(kTc), 1);
    rig.table().clear();
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 0u);

    Rig rig2(app_on_ack_config());
    rig2.handshake(kIsnC, kIsnS);
    rig2.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "one-sided"});
    rig2.flush();
    EXPECT_EQ(rig2.app(kTs), "one-sided");
    EXPECT_EQ(rig2.app_eofs(kTs), 0);  // as raw: flush() ends no direction (the caller does)
    EXPECT_EQ(rig2.eofs(kTs), 0);
}

// Suricata's IDS timing (STREAM_EOF only once the session is closed): the acknowledged FIN
// hands the app layer the data before it, and the end of the direction waits for the close.
TEST(StreamAppOnAck, AppLayerEndComesWithTheCloseNotWithTheAcknowledgedFin) {
    Rig rig(app_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({false, kIsnS + 1, kIsnC + 1, kAck | kPsh, "body until close"});
    rig.send({false, kIsnS + 17, kIsnC + 1, kAck | kFin});
    EXPECT_EQ(rig.eofs(kTc), 1);  // raw: the FIN is in order
    EXPECT_EQ(rig.app_eofs(kTc), 0);
    rig.send({true, kIsnC + 1, kIsnS + 18, kAck});
    EXPECT_EQ(rig.app(kTc), "body until close");
    EXPECT_EQ(rig.app_eofs(kTc), 0);  // acknowledged, but the session is not closed
    rig.send({true, kIsnC + 1, kIsnS + 18, kAck | kFin});
    EXPECT_EQ(rig.app_eofs(kTc), 0);
    EXPECT_EQ(rig.app_eofs(kTs), 0);
    rig.send({false, kIsnS + 18, kIsnC + 2, kAck});  // both FINs acknowledged: closed
    EXPECT_EQ(rig.app_eofs(kTc), 1);
    EXPECT_EQ(rig.app_eofs(kTs), 1);
    EXPECT_EQ(rig.app(kTc), "body until close");
}

// A flow that ends (flush) after a FIN the other side acknowledged, without the close: the
// flush ends that direction for the app layer.
TEST(StreamAppOnAck, FlushEndsADirectionWhoseFinWasAcknowledged) {
    Rig rig(app_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({false, kIsnS + 1, kIsnC + 1, kAck | kPsh, "half closed"});
    rig.send({false, kIsnS + 12, kIsnC + 1, kAck | kFin});
    rig.send({true, kIsnC + 1, kIsnS + 13, kAck});
    EXPECT_EQ(rig.app_eofs(kTc), 0);
    rig.flush();
    EXPECT_EQ(rig.app(kTc), "half closed");
    EXPECT_EQ(rig.app_eofs(kTc), 1);
    EXPECT_EQ(rig.app_eofs(kTs), 0);
}

TEST(StreamAppOnAck, AtTheReassemblyMemcapTheAppLayerStillGetsInOrderData) {
    StreamConfig cfg = app_on_ack_config();
    cfg.reassembly_memcap = 0;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "GET /legit"});
    rig.send({true, kIsnC + 11, kIsnS + 1, kAck, " HTTP/1.1"});
    // Nothing could be kept for the ACK: handed over at once, in order.
    EXPECT_EQ(rig.app(kTs), "GET /legit HTTP/1.1");
    EXPECT_EQ(rig.out(kTs), "GET /legit HTTP/1.1");
    rig.send({false, kIsnS + 1, kIsnC + 20, kAck});
    EXPECT_EQ(rig.app(kTs), "GET /legit HTTP/1.1");
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 0u);
}

TEST(StreamAppOnAck, RandomSegmentationGivesTheAppLayerTheWholeStream) {
    std::mt19937 rng(11);
    for (int round = 0; round < 50; ++round) {
        Rig rig(app_on_ack_config());
        rig.handshake(kIsnC, kIsnS);
        std::string req, resp;
        for (int i = 0; i < 300; ++i) {
            req.push_back(static_cast<char>('a' + rng() % 26));
            resp.push_back(static_cast<char>('A' + rng() % 26));
        }
        uint32_t cs = 0, ss = 0, cack = 0, sack = 0;  // sent, and acknowledged by the peer
        while (cs < req.size() || ss < resp.size() || cack < cs || sack < ss) {
            const uint32_t what = rng() % 4;
            if (what == 0 && cs < req.size()) {
                const uint32_t n = std::min<uint32_t>(1 + rng() % 40, req.size() - cs);
                rig.send({true, kIsnC + 1 + cs, kIsnS + 1 + sack, kAck, req.substr(cs, n)});
                cs += n;
            } else if (what == 1 && ss < resp.size()) {
                const uint32_t n = std::min<uint32_t>(1 + rng() % 40, resp.size() - ss);
                rig.send({false, kIsnS + 1 + ss, kIsnC + 1 + cack, kAck, resp.substr(ss, n)});
                ss += n;
            } else if (what == 2 && cack < cs) {
                cack += 1 + rng() % (cs - cack);
                rig.send({false, kIsnS + 1 + ss, kIsnC + 1 + cack, kAck});
            } else if (what == 3 && sack < ss) {
                sack += 1 + rng() % (ss - sack);
                rig.send({true, kIsnC + 1 + cs, kIsnS + 1 + sack, kAck});
            }
            // Never more than what the peer acknowledged.
            ASSERT_LE(rig.app(kTs).size(), cack);
            ASSERT_LE(rig.app(kTc).size(), sack);
        }
        EXPECT_EQ(rig.app(kTs), req) << "round " << round;
        EXPECT_EQ(rig.app(kTc), resp) << "round " << round;
        EXPECT_EQ(rig.out(kTs), req);
        EXPECT_EQ(rig.out(kTc), resp);
    }
}

// Whatever arrives, memory stays under both caps, and everything is given back.
TEST(StreamLimits, RandomTrafficStaysWithinMemcaps) {
    StreamConfig cfg;
    cfg.memcap = 20 * StreamTracker::session_bytes();
    cfg.reassembly_memcap = 64 * 1024;
    cfg.keep_tail = 32;
    cfg.midstream = true;
    cfg.reassembly_depth = 0;
    Rig rig(cfg);
    std::mt19937 rng(12345);
    uint64_t max_mem = 0, max_rmem = 0;
    for (int i = 0; i < 20000; ++i) {
        rig.hosts().cport = static_cast<uint16_t>(1000 + rng() % 40);
        Seg s;
        s.from_client = (rng() & 1) != 0;
        s.seq = kIsnC + static_cast<uint32_t>(rng() % 200000);
        s.ack = kIsnS + static_cast<uint32_t>(rng() % 200000);
        const uint32_t r = rng() % 100;
        s.flags = r < 3 ? kSyn : r < 5 ? kRst : r < 7 ? kFin | kAck : kAck;
        s.window = static_cast<uint16_t>(rng());
        s.data.assign(rng() % 1400, static_cast<char>('a' + rng() % 26));
        rig.send(s);
        const StatsSnapshot st = rig.stats();
        max_mem = std::max(max_mem, st.get("tcp.memuse"));
        max_rmem = std::max(max_rmem, st.get("tcp.reassembly_memuse"));
        ASSERT_LE(st.get("tcp.memuse"), cfg.memcap);
        ASSERT_LE(st.get("tcp.reassembly_memuse"), cfg.reassembly_memcap);
    }
    EXPECT_GT(max_rmem, 0u);
    EXPECT_GT(rig.stats().get("tcp.segment_memcap_drop"), 0u);
    rig.table().clear();
    EXPECT_EQ(rig.stats().get("tcp.memuse"), 0u);
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 0u);
    std::printf("random traffic: peak tcp.memuse %llu, peak tcp.reassembly_memuse %llu\n",
                static_cast<unsigned long long>(max_mem),
                static_cast<unsigned long long>(max_rmem));
}

// ---- raw_on_ack: Suricata's IDS timing for raw stream inspection ----

StreamConfig raw_on_ack_config() {
    StreamConfig cfg;
    cfg.app_on_ack = true;
    cfg.raw_on_ack = true;
    return cfg;
}

TEST(StreamRawOnAck, SmallAcknowledgedDataWaitsForTheClose) {
    Rig rig(raw_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "GET /a"});
    EXPECT_TRUE(u.has(kEventStreamAdd));  // the packet's data waits in the stream
    EXPECT_EQ(rig.out(kTs), "");
    rig.send({false, kIsnS + 1, kIsnC + 7, kAck});
    EXPECT_EQ(rig.app(kTs), "GET /a");  // the app layer has it on the ACK...
    EXPECT_EQ(rig.out(kTs), "");        // ...raw inspection waits for chunk_size bytes
    u = rig.send({true, kIsnC + 7, kIsnS + 1, kAck});
    EXPECT_FALSE(u.has(kEventStreamAdd));  // no data of its own
    EXPECT_EQ(rig.out(kTs), "");
    rig.send({true, kIsnC + 7, kIsnS + 1, kAck | kFin});
    rig.send({false, kIsnS + 1, kIsnC + 8, kAck | kFin});
    EXPECT_EQ(rig.out(kTs), "");  // the server's packets never carry the client's raw data
    u = rig.send({true, kIsnC + 8, kIsnS + 2, kAck});  // both FINs acknowledged: closed
    EXPECT_EQ(u.state, SessionState::kClosed);
    EXPECT_EQ(u.data(kTs).stream_offset, 0u);
    EXPECT_EQ(u.data(kTs).new_len(), 6u);
    EXPECT_EQ(rig.out(kTs), "GET /a");
    EXPECT_EQ(rig.eofs(kTs), 1);
}

TEST(StreamRawOnAck, ChunkSizeAcknowledgedBytesGoOutOnTheSendersNextPacket) {
    StreamConfig cfg = raw_on_ack_config();
    cfg.chunk_size = 100;
    cfg.keep_tail = 4;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    const std::string a(60, 'a'), b(60, 'b'), c(100, 'c');
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, a});
    rig.send({false, kIsnS + 1, kIsnC + 61, kAck});
    rig.send({true, kIsnC + 61, kIsnS + 1, kAck, b});
    EXPECT_EQ(rig.out(kTs), "");  // 60 acknowledged, under chunk_size
    rig.send({false, kIsnS + 1, kIsnC + 121, kAck});
    EXPECT_EQ(rig.out(kTs), "");  // 120 now, but this is the receiver's packet
    StreamUpdate u = rig.send({true, kIsnC + 121, kIsnS + 1, kAck, c});
    EXPECT_EQ(rig.out(kTs), a + b);  // what was acknowledged; its own 100 bytes wait
    EXPECT_EQ(u.data(kTs).new_offset, 0u);
    rig.send({false, kIsnS + 1, kIsnC + 221, kAck});
    u = rig.send({true, kIsnC + 221, kIsnS + 1, kAck});
    EXPECT_EQ(rig.out(kTs), a + b + c);
    // The next chunk carries keep_tail bytes inspected before, for a pattern across both.
    EXPECT_EQ(u.data(kTs).new_offset, 4u);
    EXPECT_EQ(u.data(kTs).stream_offset, 120u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(u.data(kTs).window), 4), "bbbb");
}

TEST(StreamRawOnAck, AMessageEndTriggersTheNextPacket) {
    Rig rig(raw_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "GET / HTTP/1.0\r\n\r\n"});
    rig.send({false, kIsnS + 1, kIsnC + 19, kAck});
    // The app layer saw the request end (Suricata's AppLayerParserTriggerRawStreamReassembly).
    rig.st().trigger_raw(rig.flow(), kTs);
    rig.send({false, kIsnS + 1, kIsnC + 19, kAck | kPsh, "HTTP/1.0 200 OK\r\n"});
    EXPECT_EQ(rig.out(kTs), "");  // not on the server's packet
    rig.send({true, kIsnC + 19, kIsnS + 18, kAck});
    EXPECT_EQ(rig.out(kTs), "GET / HTTP/1.0\r\n\r\n");
    EXPECT_EQ(rig.out(kTc), "");  // the response's own trigger has not come
}

TEST(StreamRawOnAck, PerPacketAfterTheHeldDataWentOut) {
    Rig rig(raw_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "abc"});
    EXPECT_TRUE(rig.st().raw_on_ack(rig.flow(), kTs));
    rig.st().raw_per_packet(rig.flow());
    EXPECT_TRUE(rig.st().raw_on_ack(rig.flow(), kTs));   // "abc" still to go out
    EXPECT_FALSE(rig.st().raw_on_ack(rig.flow(), kTc));  // nothing held that way
    StreamUpdate u = rig.send({true, kIsnC + 4, kIsnS + 1, kAck, "def"});
    EXPECT_TRUE(u.has(kEventStreamAdd));  // in the chunk that goes out now
    EXPECT_EQ(rig.out(kTs), "abcdef");
    EXPECT_FALSE(rig.st().raw_on_ack(rig.flow(), kTs));
    u = rig.send({true, kIsnC + 7, kIsnS + 1, kAck, "ghi"});
    EXPECT_FALSE(u.has(kEventStreamAdd));
    EXPECT_EQ(u.data(kTs).new_len(), 3u);  // at once, unacknowledged
    EXPECT_EQ(rig.out(kTs), "abcdefghi");
    rig.send({false, kIsnS + 1, kIsnC + 10, kAck | kPsh, "xyz"});
    EXPECT_EQ(rig.out(kTc), "xyz");
}

TEST(StreamRawOnAck, AHoleWaitsForTheRawCursorThenGoesOutAsAGap) {
    Rig rig(raw_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "aaa"});
    rig.send({true, kIsnC + 7, kIsnS + 1, kAck, "ccc"});  // bytes 3..5 never seen
    rig.send({false, kIsnS + 1, kIsnC + 10, kAck});       // the server got everything
    EXPECT_EQ(rig.app(kTs), "aaa");
    EXPECT_EQ(rig.out(kTs), "");
    // The client's next packet: the data before the hole, then the hole and what follows.
    rig.send({true, kIsnC + 10, kIsnS + 1, kAck});
    EXPECT_EQ(rig.out(kTs), std::string("aaa\0\0\0ccc", 9));
    EXPECT_EQ(rig.gaps(kTs), 1);
    rig.send({false, kIsnS + 1, kIsnC + 10, kAck});
    EXPECT_EQ(rig.app(kTs), std::string("aaa\0\0\0ccc", 9));
    EXPECT_EQ(rig.stats().get("tcp.reassembly_gap"), 1u);
}

TEST(StreamRawOnAck, FlushHandsOutBothDirections) {
    Rig rig(raw_on_ack_config());
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "request"});
    rig.send({false, kIsnS + 1, kIsnC + 8, kAck | kPsh, "reply"});
    EXPECT_EQ(rig.out(kTs), "");
    EXPECT_EQ(rig.out(kTc), "");
    rig.flush();
    EXPECT_EQ(rig.out(kTs), "request");
    EXPECT_EQ(rig.out(kTc), "reply");
    rig.table().clear();
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 0u);
}

TEST(StreamRawOnAck, AtTheReassemblyMemcapRawDataGoesOutFromThePacket) {
    StreamConfig cfg = raw_on_ack_config();
    cfg.reassembly_memcap = 0;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "GET /legit"});
    rig.send({true, kIsnC + 11, kIsnS + 1, kAck, " HTTP/1.1"});
    EXPECT_EQ(rig.out(kTs), "GET /legit HTTP/1.1");  // nothing could be kept for later
    EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), 0u);
}

// ---- midstream, RST, FIN, gaps, checksum ----

TEST(StreamSession, MidstreamOffIgnoresSessionsWithoutSyn) {
    Rig rig;
    StreamUpdate u = rig.send({true, 5000, 9000, kAck, "GET / HTTP/1.1\r\n"});
    EXPECT_EQ(u.state, SessionState::kNone);
    EXPECT_TRUE(u.has(kEventNotTracked));
    u = rig.send({false, 9000, 5016, kAck, "HTTP/1.1 200 OK\r\n"});
    EXPECT_EQ(u.state, SessionState::kNone);
    EXPECT_EQ(rig.out(Direction::kToServer), "");
    EXPECT_EQ(rig.stats().get("tcp.sessions"), 0u);
    EXPECT_EQ(rig.stats().get("tcp.midstream_pickups"), 0u);
    EXPECT_EQ(rig.stats().get("tcp.memuse"), 0u);
}

TEST(StreamSession, MidstreamOnPicksUpBothDirections) {
    StreamConfig cfg;
    cfg.midstream = true;
    Rig rig(cfg);
    StreamUpdate u = rig.send({true, 5000, 9000, kAck, "GET / HTTP/1.1\r\n"});
    EXPECT_EQ(u.state, SessionState::kEstablished);
    EXPECT_TRUE(u.has(kEventMidstream));
    EXPECT_EQ(u.data(Direction::kToServer).stream_offset, 0u);
    rig.send({false, 9000, 5016, kAck, "HTTP/1.1 200 OK\r\n"});
    rig.send({true, 5016, 9017, kAck, "next"});
    EXPECT_EQ(rig.out(Direction::kToServer), "GET / HTTP/1.1\r\nnext");
    EXPECT_EQ(rig.out(Direction::kToClient), "HTTP/1.1 200 OK\r\n");
    EXPECT_EQ(rig.stats().get("tcp.midstream_pickups"), 1u);
    EXPECT_EQ(rig.stats().get("tcp.sessions"), 1u);
}

TEST(StreamSession, MidstreamFromSynAck) {
    StreamConfig cfg;
    cfg.midstream = true;
    Rig rig(cfg);
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck}).state, SessionState::kSynRecv);
    EXPECT_EQ(rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "abc"}).state,
              SessionState::kEstablished);
    EXPECT_EQ(rig.out(Direction::kToServer), "abc");
}

TEST(StreamSession, AcceptableRstClosesAndFlushes) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "abc"});
    rig.send({true, kIsnC + 7, kIsnS + 1, kAck, "ghi"});  // held behind a 3-byte hole
    // A RST far outside the window is ignored.
    StreamUpdate u = rig.send({false, kIsnS + 1 + 10000000, 0, kRst});
    EXPECT_TRUE(u.has(kEventRstInvalid));
    EXPECT_EQ(u.state, SessionState::kEstablished);
    u = rig.send({false, kIsnS + 1, 0, kRst});
    EXPECT_EQ(u.state, SessionState::kClosed);
    EXPECT_EQ(u.data(Direction::kToServer).gap, 3u);
    EXPECT_TRUE(u.data(Direction::kToServer).eof);
    EXPECT_TRUE(u.data(Direction::kToClient).eof);
    EXPECT_EQ(rig.out(Direction::kToServer), with_nuls("abc\0\0\0ghi", 9));
    // Nothing after the close is reassembled.
    rig.send({true, kIsnC + 10, kIsnS + 1, kAck, "jkl"});
    EXPECT_EQ(rig.out(Direction::kToServer), with_nuls("abc\0\0\0ghi", 9));
    const StatsSnapshot s = rig.stats();
    EXPECT_EQ(s.get("tcp.rst_invalid"), 1u);
    EXPECT_EQ(s.get("tcp.reassembly_gap"), 1u);
}

TEST(StreamSession, RefusedConnection) {
    Rig rig;
    rig.send({true, kIsnC, 0, kSyn});
    EXPECT_EQ(rig.send({false, 0, kIsnC + 1, kRst | kAck}).state, SessionState::kClosed);
}

TEST(StreamSession, FinHandshakeCloses) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "req"});
    StreamUpdate u = rig.send({true, kIsnC + 4, kIsnS + 1, kFin | kAck});
    EXPECT_EQ(u.state, SessionState::kClosing);
    EXPECT_TRUE(u.data(Direction::kToServer).eof);
    u = rig.send({false, kIsnS + 1, kIsnC + 5, kAck | kFin, "resp"});
    EXPECT_EQ(u.state, SessionState::kClosing);
    EXPECT_TRUE(u.data(Direction::kToClient).eof);
    u = rig.send({true, kIsnC + 5, kIsnS + 6, kAck});
    EXPECT_EQ(u.state, SessionState::kClosed);
    EXPECT_EQ(rig.out(Direction::kToServer), "req");
    EXPECT_EQ(rig.out(Direction::kToClient), "resp");
    EXPECT_EQ(rig.eofs(Direction::kToServer), 1);
    EXPECT_EQ(rig.eofs(Direction::kToClient), 1);
}

TEST(StreamSession, AcknowledgedHoleBecomesAGap) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "one-"});
    // "two-" (4 bytes at offset 4) was never captured.
    rig.send({true, kIsnC + 9, kIsnS + 1, kAck, "three"});
    EXPECT_EQ(rig.out(Direction::kToServer), "one-");
    // The server acknowledges everything: it got the bytes we never saw. The gap and the
    // held data come out on the server's packet, in the to-server chunk.
    StreamUpdate u = rig.send({false, kIsnS + 1, kIsnC + 14, kAck});
    EXPECT_EQ(u.data(Direction::kToServer).gap, 4u);
    EXPECT_EQ(u.data(Direction::kToServer).stream_offset, 8u);
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 5u);
    EXPECT_EQ(u.data(Direction::kToClient).new_len(), 0u);
    EXPECT_EQ(rig.out(Direction::kToServer), with_nuls("one-\0\0\0\0three", 13));
    EXPECT_EQ(rig.stats().get("tcp.reassembly_gap"), 1u);
    // An ACK that does not reach the held data skips nothing.
    rig.send({true, kIsnC + 20, kIsnS + 1, kAck, "X"});
    rig.send({false, kIsnS + 1, kIsnC + 16, kAck});
    EXPECT_EQ(rig.stats().get("tcp.reassembly_gap"), 1u);
}

TEST(StreamSession, TwoAcknowledgedHolesNeedNext) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1 + 2, kIsnS + 1, kAck, "bb"});
    rig.send({true, kIsnC + 1 + 6, kIsnS + 1, kAck, "dd"});
    StreamUpdate u = rig.send({false, kIsnS + 1, kIsnC + 1 + 8, kAck});
    EXPECT_TRUE(u.more);  // one run per call; the rig loops on next()
    EXPECT_EQ(rig.out(Direction::kToServer), with_nuls("\0\0bb\0\0dd", 8));
    EXPECT_EQ(rig.gaps(Direction::kToServer), 2);
}

TEST(StreamSession, BadChecksumIgnored) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    Seg bad{true, kIsnC + 1, kIsnS + 1, kAck, "evil"};
    bad.bad_checksum = true;
    StreamUpdate u = rig.send(bad);
    EXPECT_TRUE(u.has(kEventBadChecksum));
    EXPECT_EQ(u.data(Direction::kToServer).new_len(), 0u);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "good"});
    EXPECT_EQ(rig.out(Direction::kToServer), "good");
    EXPECT_EQ(rig.stats().get("tcp.invalid_checksum"), 1u);
}

TEST(StreamSession, ChecksumValidationOff) {
    StreamConfig cfg;
    cfg.checksum_validation = false;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    Seg bad{true, kIsnC + 1, kIsnS + 1, kAck, "data"};
    bad.bad_checksum = true;
    rig.send(bad);
    EXPECT_EQ(rig.out(Direction::kToServer), "data");
    EXPECT_EQ(rig.stats().get("tcp.invalid_checksum"), 0u);
}

TEST(StreamSession, SegmentBeyondWindowIgnored) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);  // server window 65535, no scaling
    StreamUpdate u = rig.send({true, kIsnC + 1 + 70000, kIsnS + 1, kAck, "far"});
    EXPECT_TRUE(u.has(kEventOutOfWindow));
    EXPECT_EQ(rig.stats().get("tcp.out_of_window"), 1u);
    // Window scaling from the handshake widens it.
    Rig scaled;
    scaled.handshake(kIsnC, kIsnS, 2);
    scaled.send({false, kIsnS + 1, kIsnC + 1, kAck, "", 65535});
    u = scaled.send({true, kIsnC + 1 + 70000, kIsnS + 1, kAck, "far"});
    EXPECT_FALSE(u.has(kEventOutOfWindow));
}

// ---- inspection window, splitter, IPv6 ----

TEST(StreamWindow, PatternStraddlingSegmentsIsFound) {
    StreamConfig cfg;
    cfg.keep_tail = 7;  // longest pattern - 1
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "xxxxxxxxxxEVIL"});
    StreamUpdate u = rig.send({true, kIsnC + 15, kIsnS + 1, kAck, "PAYLOADyy"});
    const StreamChunk& c = u.data(Direction::kToServer);
    const std::string window(reinterpret_cast<const char*>(c.window), c.window_len);
    EXPECT_EQ(window, "xxxEVILPAYLOADyy");
    EXPECT_EQ(c.new_offset, 7u);
    EXPECT_EQ(c.stream_offset, 14u);
    EXPECT_EQ(window.find("EVILPAYLOAD"), 3u);  // found, and it ends in the new bytes
    // After a hole fills, the window still starts with the tail before the hole's start.
    rig.send({true, kIsnC + 28, kIsnS + 1, kAck, "TAIL"});
    u = rig.send({true, kIsnC + 24, kIsnS + 1, kAck, "abcd"});
    const StreamChunk& d = u.data(Direction::kToServer);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.window), d.window_len),
              "YLOADyyabcdTAIL");
    EXPECT_EQ(d.new_offset, 7u);
    EXPECT_EQ(d.stream_offset, 23u);
}

TEST(StreamWindow, TailNeverSpansAGap) {
    StreamConfig cfg;
    cfg.keep_tail = 8;
    Rig rig(cfg);
    rig.handshake(kIsnC, kIsnS);
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "before"});
    rig.send({true, kIsnC + 11, kIsnS + 1, kAck, "after"});
    StreamUpdate u = rig.send({false, kIsnS + 1, kIsnC + 16, kAck});
    const StreamChunk& c = u.data(Direction::kToServer);
    EXPECT_EQ(c.gap, 4u);
    EXPECT_EQ(c.new_offset, 0u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(c.window), c.window_len), "after");
}

// A toy line protocol: a message ends at each '\n'.
class LineSplitter : public Splitter {
public:
    SplitResult scan(Direction dir, const uint8_t* data, size_t len) override {
        ++calls[static_cast<int>(dir)];
        const void* nl = std::memchr(data, '\n', len);
        if (nl == nullptr) {
            return {SplitStatus::kNeedMore, 0};
        }
        return {SplitStatus::kFlush,
                static_cast<uint32_t>(static_cast<const uint8_t*>(nl) - data + 1)};
    }
    void gap(Direction dir) override { ++gaps[static_cast<int>(dir)]; }
    int calls[2] = {0, 0};
    int gaps[2] = {0, 0};
};

TEST(StreamSplitter, ReportsMessageEndsAcrossSegments) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    LineSplitter sp;
    ASSERT_TRUE(rig.st().set_splitter(rig.flow(), &sp));
    StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "GE"});
    EXPECT_EQ(u.data(Direction::kToServer).pdu_count, 0u);
    u = rig.send({true, kIsnC + 3, kIsnS + 1, kAck, "T /\r\nHo"});
    ASSERT_EQ(u.data(Direction::kToServer).pdu_count, 1u);
    EXPECT_EQ(u.data(Direction::kToServer).pdu_ends[0], 7u);
    // Out of order: the boundaries come out when the bytes become contiguous.
    rig.send({true, kIsnC + 17, kIsnS + 1, kAck, "\r\n"});
    rig.send({true, kIsnC + 10, kIsnS + 1, kAck, "st: a\r\n"});
    rig.send({false, kIsnS + 1, kIsnC + 19, kAck, "200\nok\n"});
    EXPECT_EQ(rig.out(Direction::kToServer), "GET /\r\nHost: a\r\n\r\n");
    EXPECT_EQ(rig.pdus(Direction::kToServer), (std::vector<uint64_t>{7, 16, 18}));
    EXPECT_EQ(rig.pdus(Direction::kToClient), (std::vector<uint64_t>{4, 7}));
}

class AbortSplitter : public Splitter {
public:
    SplitResult scan(Direction, const uint8_t*, size_t) override {
        ++calls;
        return {SplitStatus::kAbort, 0};
    }
    int calls = 0;
};

TEST(StreamSplitter, AbortStopsScanningThatDirection) {
    Rig rig;
    rig.handshake(kIsnC, kIsnS);
    AbortSplitter sp;
    ASSERT_TRUE(rig.st().set_splitter(rig.flow(), &sp));
    StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "x"});
    EXPECT_TRUE(u.data(Direction::kToServer).splitter_aborted);
    rig.send({true, kIsnC + 2, kIsnS + 1, kAck, "y"});
    EXPECT_EQ(sp.calls, 1);
    EXPECT_EQ(rig.out(Direction::kToServer), "xy");
}

TEST(StreamIpv6, HandshakeOutOfOrderAndOverlap) {
    StreamConfig cfg;
    cfg.policy = Policy::kFirst;
    Rig rig(cfg, v6_hosts());
    rig.handshake(kIsnC, kIsnS);
    EXPECT_EQ(rig.st().state(rig.flow()), SessionState::kEstablished);
    rig.send({true, kIsnC + 4, kIsnS + 1, kAck, "DEF"});
    rig.send({true, kIsnC + 4, kIsnS + 1, kAck, "xyz"});  // first wins
    rig.send({true, kIsnC + 1, kIsnS + 1, kAck, "ABC"});
    rig.send({false, kIsnS + 1, kIsnC + 7, kAck, "v6 reply"});
    EXPECT_EQ(rig.out(Direction::kToServer), "ABCDEF");
    EXPECT_EQ(rig.out(Direction::kToClient), "v6 reply");
    EXPECT_EQ(rig.stats().get("tcp.overlap_diff_data"), 1u);
    Seg bad{true, kIsnC + 7, kIsnS + 9, kAck, "bad"};
    bad.bad_checksum = true;
    rig.send(bad);
    EXPECT_EQ(rig.stats().get("tcp.invalid_checksum"), 1u);
}

// ---- property: any segmentation, order and duplication rebuilds the stream ----

TEST(StreamProperty, RandomSegmentationReorderingDuplicationRebuildsTheStream) {
    for (uint32_t seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE(seed);
        std::mt19937 rng(seed);
        StreamConfig cfg;
        cfg.reassembly_depth = 0;
        cfg.keep_tail = rng() % 3 == 0 ? 0 : rng() % 64;
        cfg.policy = static_cast<Policy>(rng() % 12);
        Rig rig(cfg);
        const uint32_t isn = static_cast<uint32_t>(rng());  // wraps for some seeds
        rig.handshake(isn, kIsnS);
        const size_t len = 20000 + rng() % 20000;
        std::string stream(len, '\0');
        for (char& ch : stream) {
            ch = static_cast<char>(rng());
        }
        // Segments: a cover of [0, len) with random cut points, plus duplicates and
        // re-segmented retransmissions of random ranges (same bytes, so no conflicts).
        std::vector<std::pair<size_t, size_t>> segs;
        for (size_t pos = 0; pos < len;) {
            const size_t n = std::min(len - pos, static_cast<size_t>(1 + rng() % 1460));
            segs.emplace_back(pos, n);
            pos += n;
        }
        const size_t extra = segs.size() / 3;
        for (size_t i = 0; i < extra; ++i) {
            const size_t a = rng() % len;
            segs.emplace_back(a, std::min(len - a, static_cast<size_t>(1 + rng() % 2000)));
        }
        // Local reordering: each segment moves up to 8 places.
        std::vector<std::pair<size_t, std::pair<size_t, size_t>>> keyed;
        for (size_t i = 0; i < segs.size(); ++i) {
            const size_t base = i < segs.size() - extra ? i : rng() % segs.size();
            keyed.push_back({base * 16 + rng() % 128, segs[i]});
        }
        std::stable_sort(keyed.begin(), keyed.end(),
                         [](const auto& x, const auto& y) { return x.first < y.first; });
        for (const auto& k : keyed) {
            const auto [a, n] = k.second;
            rig.send(
                {true, isn + 1 + static_cast<uint32_t>(a), kIsnS + 1, kAck, stream.substr(a, n)});
        }
        EXPECT_EQ(rig.out(Direction::kToServer).size(), len);
        EXPECT_TRUE(rig.out(Direction::kToServer) == stream);
        EXPECT_EQ(rig.stats().get("tcp.overlap_diff_data"), 0u);
        EXPECT_EQ(rig.stats().get("tcp.reassembly_gap"), 0u);
        EXPECT_EQ(rig.gaps(Direction::kToServer), 0);
    }
}

// ---- cost: in-order 1460-byte segments, tracker only (prints a figure, asserts bytes) ----

TEST(StreamPerf, InOrderSegmentsNsPerSegment) {
    for (uint32_t keep : {0u, 64u}) {
        StreamConfig cfg;
        cfg.reassembly_depth = 0;
        cfg.keep_tail = keep;
        Rig rig(cfg);
        rig.handshake(kIsnC, kIsnS, 14);  // scaled window: 1 GiB
        rig.send({false, kIsnS + 1, kIsnC + 1, kAck, "", 65535});
        const std::vector<uint8_t> fr =
            build_frame(rig.hosts(), {true, kIsnC + 1, kIsnS + 1, kAck, std::string(1460, 'z')});
        decode::DecodeContext dctx(decode::DecodeOptions{decode::ChecksumMode::kNo});
        Packet p;
        ASSERT_EQ(decode::decode_packet(dctx, decode::kDltEn10mb, fr.data(),
                                        static_cast<uint32_t>(fr.size()),
                                        static_cast<uint32_t>(fr.size()), 0, p),
                  decode::DecodeResult::kOk);
        constexpr uint32_t kSegments = 200000;
        // Warm up: the first copied segment sizes the buffer; after that nothing grows.
        p.tcp_seq = kIsnC + 1;
        rig.st().process(p, rig.flow(), Direction::kToServer, 0);
        const uint64_t mem_before = rig.stats().get("tcp.reassembly_memuse");
        uint64_t delivered = 1460;
        const auto t0 = std::chrono::steady_clock::now();
        for (uint32_t i = 1; i < kSegments; ++i) {
            p.tcp_seq = kIsnC + 1 + i * 1460;
            const StreamUpdate u = rig.st().process(p, rig.flow(), Direction::kToServer, 0);
            delivered += u.chunk[0].new_len();
        }
        const auto t1 = std::chrono::steady_clock::now();
        EXPECT_EQ(delivered, uint64_t{kSegments} * 1460);
        EXPECT_EQ(rig.stats().get("tcp.reassembly_memuse"), mem_before);
        EXPECT_EQ(mem_before, keep == 0 ? 0u : 2048u + 256u);
        const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / kSegments;
        std::printf("stream: in-order 1460-byte segments, keep_tail %u: %.1f ns/segment\n", keep,
                    ns);
    }
}

}  // namespace
}  // namespace picket::sensor::stream
