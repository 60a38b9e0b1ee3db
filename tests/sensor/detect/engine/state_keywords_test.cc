// stream_size and xbits through the compiled engine (DetectEngine::load, DetectWorker::inspect)
// on decoded TCP packets: the engine tracks the flow's sequence numbers once a stream_size rule
// is loaded, and applies xbits set/unset/toggle after a match. Expected values follow
// Suricata 7's documentation: stream_size compares next_seq - isn (1 after a bare SYN), xbits
// are per host (track ip_src / ip_dst) or per address pair, and expire.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/flowbits.h"
#include "sensor/flow/flow.h"
#include "tests/sensor/detect/engine/engine_fixture.h"
#include "tests/support/frames.h"

namespace picket::sensor::detect {
namespace {

namespace tb = picket::testing::frames;
using Sids = std::vector<uint32_t>;

constexpr int64_t kSec = 1000000000;

class StateKeywordsTest : public testing::EngineTest {
protected:
    StateKeywordsTest() : EngineTest("state_keywords") {}
    void SetUp() override { xbits_clear(); }

    void load(const std::string& rules) {
        EngineTest::load(rules);
        ASSERT_EQ(summary_.skipped, 0u) << summary_.to_string();
    }

    // One TCP segment src:sport -> dst:dport, inspected at time ts (seconds).
    Sids run(uint8_t src, uint8_t dst, uint16_t sport, uint16_t dport, uint8_t flags, uint32_t seq,
             uint32_t ack, const std::string& payload, int64_t ts = 1) {
        tb::Bytes t = tb::tcp(sport, dport, flags, {}, tb::Bytes(payload.begin(), payload.end()));
        tb::set_tcp_numbers(t, seq, ack, 65535);
        tb::V4 v4;
        v4.src[3] = src;
        v4.dst[3] = dst;
        frame_ = tb::eth(0x0800, tb::ipv4(v4, t));
        decode::Packet p;
        decode::decode_packet(dctx_, 1, frame_.data(), static_cast<uint32_t>(frame_.size()),
                              static_cast<uint32_t>(frame_.size()), ts * kSec, p);
        flow::Direction dir = flow::Direction::kToServer;
        flow::Flow* f = flows_->lookup(p, &dir);
        AlertRecord out[16];
        const uint32_t n = worker_->inspect(p, f, dir, out, 16);
        Sids v;
        for (uint32_t i = 0; i < n; ++i) {
            v.push_back(out[i].rule->sid);
        }
        return v;
    }

    tb::Bytes frame_;
};

TEST_F(StateKeywordsTest, StreamSizeFollowsTheHandshakeAndData) {
    load(
        "alert tcp any any -> any any (stream_size:client,=,1; sid:1;)\n"
        "alert tcp any any -> any any (stream_size:server,<,5; sid:2;)\n"
        "alert tcp any any -> any any (stream_size:both,>=,5; sid:3;)\n"
        "alert tcp any any -> any any (stream_size:either,!=,1; sid:4;)\n"
        "alert tcp any any -> any any (stream_size:client,<=,5; stream_size:client,>,4; "
        "sid:5;)\n");
    // SYN: client 1, server not seen (0).
    EXPECT_EQ(run(1, 2, 40000, 80, 0x02, 1000, 0, ""), (Sids{1, 2, 4}));
    // SYN-ACK: server 1.
    EXPECT_EQ(run(2, 1, 80, 40000, 0x12, 5000, 1001, ""), (Sids{1, 2}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x10, 1001, 5001, ""), (Sids{1, 2}));
    // 4 bytes from the client: client 5, counted with the packet that carries them.
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 1001, 5001, "abcd"), (Sids{2, 4, 5}));
    // A retransmission does not grow the stream.
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 1001, 5001, "abcd"), (Sids{2, 4, 5}));
    // 5 bytes from the server: server 6.
    EXPECT_EQ(run(2, 1, 80, 40000, 0x18, 5001, 1005, "hello"), (Sids{3, 4, 5}));
    // FIN counts one: client 6.
    EXPECT_EQ(run(1, 2, 40000, 80, 0x11, 1005, 5006, ""), (Sids{3, 4}));
}

TEST_F(StateKeywordsTest, StreamSizeMidstreamAndNonTcp) {
    load("alert ip any any -> any any (stream_size:client,=,11; sid:1;)\n");
    // Picked up midstream: isn is the first sequence number minus one.
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 7000, 1, "0123456789"), (Sids{1}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 7010, 1, "x"), (Sids{}));
}

TEST_F(StateKeywordsTest, XbitsPerHostAcrossFlowsAndExpiry) {
    load(
        "alert tcp any any -> any 80 (content:\"login\"; xbits:set,ET.x,track ip_src,expire 10; "
        "noalert; sid:10;)\n"
        "alert tcp any any -> any 80 (content:\"data\"; xbits:isset,ET.x,track ip_src; sid:11;)\n"
        "alert tcp any 80 -> any any (content:\"resp\"; xbits:isset,ET.x,track ip_dst; sid:12;)\n"
        "alert tcp any any -> any 80 (content:\"data\"; xbits:isnotset,ET.x,track ip_src; "
        "sid:13;)\n");
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 1, 1, "data", 100), (Sids{13}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 5, 1, "login", 100), (Sids{}));
    // Another flow of the same source host sees the bit.
    EXPECT_EQ(run(1, 2, 40001, 80, 0x18, 1, 1, "data", 101), (Sids{11}));
    // The server's answer to that host: track ip_dst.
    EXPECT_EQ(run(2, 1, 80, 40001, 0x18, 1, 5, "resp", 101), (Sids{12}));
    // Another host does not.
    EXPECT_EQ(run(3, 2, 40000, 80, 0x18, 1, 1, "data", 101), (Sids{13}));
    // Expired 10 s after the set (set at 100: live at 109, gone at 110).
    EXPECT_EQ(run(1, 2, 40002, 80, 0x18, 1, 1, "data", 109), (Sids{11}));
    EXPECT_EQ(run(1, 2, 40003, 80, 0x18, 1, 1, "data", 110), (Sids{13}));
}

TEST_F(StateKeywordsTest, XbitsIpPairUnsetToggle) {
    load(
        "alert tcp any any -> any any (content:\"SETP\"; xbits:set,p,track ip_pair; noalert; "
        "sid:1;)\n"
        "alert tcp any any -> any any (content:\"CHECK\"; xbits:isset,p,track ip_pair; sid:2;)\n"
        "alert tcp any any -> any any (content:\"CLEAR\"; xbits:unset,p,track ip_pair; noalert; "
        "sid:3;)\n"
        "alert tcp any any -> any any (content:\"FLIP\"; xbits:toggle,p,track ip_pair; noalert; "
        "sid:4;)\n");
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 1, 1, "CHECK"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 6, 1, "SETP"), (Sids{}));
    // The pair is unordered: the other direction and another port see it.
    EXPECT_EQ(run(2, 1, 80, 40000, 0x18, 1, 9, "CHECK"), (Sids{2}));
    EXPECT_EQ(run(2, 1, 5555, 6666, 0x18, 1, 1, "CHECK"), (Sids{2}));
    // Another pair does not.
    EXPECT_EQ(run(1, 3, 40000, 80, 0x18, 1, 1, "CHECK"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 9, 1, "CLEAR"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 14, 1, "CHECK"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 19, 1, "FLIP"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 23, 1, "CHECK"), (Sids{2}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 28, 1, "FLIP"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 32, 1, "CHECK"), (Sids{}));
}

// Suricata's documented login-fail counter: start at 1, count while set, alert above 5.
TEST_F(StateKeywordsTest, FlowintLoginFailCounter) {
    load(
        "alert tcp any any -> any any (content:\"login failed\"; flowint:loginfail, notset; "
        "flowint:loginfail, =, 1; noalert; sid:1;)\n"
        "alert tcp any any -> any any (content:\"login failed\"; flowint:loginfail, isset; "
        "flowint:loginfail, +, 1; noalert; sid:2;)\n"
        "alert tcp any any -> any any (content:\"login failed\"; flowint:loginfail, isset; "
        "flowint:loginfail, >, 5; sid:3;)\n"
        "alert tcp any any -> any any (content:\"ok\"; flowint:n, +, 1; flowint:n, >, 1; "
        "sid:4;)\n");
    uint32_t seq = 1;
    std::vector<Sids> got;
    for (int i = 0; i < 7; ++i) {
        got.push_back(run(1, 2, 40000, 80, 0x18, seq, 1, "login failed"));
        seq += 12;
    }
    // Values after each packet: 1 (sid 1, then sid 2 sees it set: 2), 3, 4, 5, 6, 7, 8.
    // sid 3 runs after sid 2 on the same packet and sees the incremented value.
    EXPECT_EQ(got, (std::vector<Sids>{{}, {}, {}, {}, {3}, {3}, {3}}));
    // Another flow has its own variables.
    EXPECT_EQ(run(1, 2, 40001, 80, 0x18, 1, 1, "login failed"), (Sids{}));
    // "+,1" then ">,1" in one rule compares the incremented value: the second "ok" alerts.
    EXPECT_EQ(run(3, 2, 40000, 80, 0x18, 1, 1, "ok"), (Sids{}));
    EXPECT_EQ(run(3, 2, 40000, 80, 0x18, 3, 1, "ok"), (Sids{4}));
}

TEST_F(StateKeywordsTest, Base64DataThroughTheEngine) {
    load(
        "alert tcp any any -> any any (content:\"<b>\"; base64_decode:offset 0,relative; "
        "base64_data; content:\"SYSTEM\"; startswith; sid:20;)\n"
        "alert tcp any any -> any any (base64_decode:bytes 8; base64_data; content:\"tests\"; "
        "sid:21;)\n");
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 1, 1, "<b>U1lTVEVNIHNlY3JldA=="), (Sids{20}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 30, 1, "<b>c2VjcmV0"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, 0x18, 50, 1, "dGVzdHM=<b>"), (Sids{21}));
}

}  // namespace
}  // namespace picket::sensor::detect
