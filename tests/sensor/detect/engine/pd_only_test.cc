// app-layer-protocol and Suricata's protocol-detection-only rules: a rule whose only condition
// is app-layer-protocol (plus flow:to_server/to_client, flowbits:set) is checked only on the
// packet where its direction's protocol detection finished (InspectExtras::proto_detect_pkt);
// the keyword itself needs the direction's protocol known (flow::Flow::proto_detect). Crafted
// flows and packets, real compiled rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/rule.h"
#include "sensor/flow/flow.h"
#include "tests/sensor/detect/engine/engine_fixture.h"
#include "tests/support/frames.h"

namespace picket::sensor::detect {
namespace {

namespace tb = picket::testing::frames;

class PdOnlyTest : public testing::EngineTest {
protected:
    PdOnlyTest() : EngineTest("pdonly") {}

    void load_ok(const std::string& rules) {
        load(rules);
        ASSERT_EQ(summary_.skipped, 0u) << summary_.to_string();
    }

    // A to-server packet of the test's one flow (client 10.0.0.1:40000 -> :80).
    void decode(const std::string& payload) {
        tb::Bytes pl(payload.begin(), payload.end());
        frame_ = tb::eth(0x0800, tb::ipv4({}, tb::tcp(40000, 80, 0x18, {}, pl)));
        decode::decode_packet(dctx_, 1, frame_.data(), static_cast<uint32_t>(frame_.size()),
                              static_cast<uint32_t>(frame_.size()), 1000000000, p_);
        f_ = flows_->lookup(p_, &dir_);
        ASSERT_NE(f_, nullptr);
        ASSERT_EQ(dir_, flow::Direction::kToServer);
    }

    // The sids alerting on the packet with the flow's detection state `pd`, the flow's
    // protocol `app`, and whether detection finished with this packet.
    std::vector<uint32_t> run(uint8_t pd, AppProto app, bool pd_pkt) {
        f_->proto_detect = pd;
        InspectExtras x;
        x.app = app;
        x.proto_detect_pkt = pd_pkt;
        AlertRecord out[8];
        const uint32_t n = worker_->inspect(p_, f_, dir_, out, 8, &x);
        std::vector<uint32_t> v;
        for (uint32_t i = 0; i < n; ++i) {
            v.push_back(out[i].rule->sid);
        }
        return v;
    }

    // The reason the only rule of `rules` was skipped ("" when it loaded).
    std::string refused(const std::string& rules) {
        load(rules);
        return summary_.diagnostics.empty() ? "" : summary_.diagnostics[0].reason;
    }

    tb::Bytes frame_;
    decode::Packet p_;
    flow::Flow* f_ = nullptr;
    flow::Direction dir_ = flow::Direction::kToServer;
};

const uint8_t kTsDone = flow::proto_detect_done(flow::Direction::kToServer);
const uint8_t kTcDone = flow::proto_detect_done(flow::Direction::kToClient);
using V = std::vector<uint32_t>;

TEST_F(PdOnlyTest, PdOnlyRuleMatchesOnlyOnThePacketWhereDetectionFinished) {
    load_ok("alert tcp any any -> any any (app-layer-protocol:http; sid:1;)\n");
    decode("GET / HTTP/1.1\r\n\r\n");
    EXPECT_EQ(run(0, AppProto::kUnknown, false), V{});     // not detected yet
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, true), V{1});  // detection finished here
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, false), V{});  // a later packet: not again
    EXPECT_EQ(run(kTsDone | kTcDone, AppProto::kHttp, false), V{});
    EXPECT_EQ(run(kTsDone, AppProto::kTls, true), V{});  // another protocol
}

TEST_F(PdOnlyTest, TheDirectionsOwnDetectionMustBeDone) {
    // Only the to-client side is known: a to-server packet does not match yet.
    load_ok("alert tcp any any -> any any (app-layer-protocol:http; sid:1;)\n");
    decode("x");
    EXPECT_EQ(run(kTcDone, AppProto::kHttp, true), V{});
    EXPECT_EQ(run(kTcDone | kTsDone, AppProto::kHttp, true), V{1});
}

TEST_F(PdOnlyTest, NegationAndFailed) {
    load_ok(
        "alert tcp any any -> any any (app-layer-protocol:!tls; sid:1;)\n"
        "alert tcp any any -> any any (app-layer-protocol:failed; sid:2;)\n"
        "alert tcp any any -> any any (app-layer-protocol:!tls; app-layer-protocol:!ssh; "
        "sid:3;)\n");
    decode("x");
    // A negation does not match before the direction's protocol is known.
    EXPECT_EQ(run(0, AppProto::kUnknown, true), V{});
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, true), (V{1, 3}));
    EXPECT_EQ(run(kTsDone, AppProto::kTls, true), V{});
    EXPECT_EQ(run(kTsDone, AppProto::kSsh, true), V{1});
    // Detection gave up: "failed", and every negation holds.
    EXPECT_EQ(run(kTsDone | flow::kProtoDetectFailed, AppProto::kUnknown, true), (V{1, 2, 3}));
}

TEST_F(PdOnlyTest, OtherConditionsMakeItAPacketRule) {
    // With a content (or flowbits:isset) the keyword is one condition of a packet rule,
    // checked on every packet once the direction's protocol is known. flow:to_server and
    // flowbits:set keep a rule protocol-detection-only.
    load_ok(
        "alert tcp any any -> any any (app-layer-protocol:http; content:\"GET\"; sid:1;)\n"
        "alert tcp any any -> any any (flow:to_server; app-layer-protocol:http; "
        "flowbits:set,seen; sid:2;)\n"
        "alert tcp any any -> any any (flowbits:isset,seen; app-layer-protocol:http; sid:3;)\n");
    decode("GET / HTTP/1.1\r\n\r\n");
    EXPECT_EQ(run(0, AppProto::kUnknown, false), V{});
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, false), V{1});
    // sid 2 sets the bit on the detection packet; sid 3 (isset) sees it there and after.
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, true), (V{1, 2, 3}));
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, false), (V{1, 3}));
}

TEST_F(PdOnlyTest, HeaderProtocolRuleIsNotPdOnly) {
    // alert http ... (sid:1;) is Suricata's app_layer rule: every packet of an HTTP flow.
    load_ok("alert http any any -> any any (sid:1;)\n");
    decode("x");
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, false), V{1});
    EXPECT_EQ(run(kTsDone, AppProto::kHttp, true), V{1});
}

TEST_F(PdOnlyTest, BadValuesAreRefusedWithTheReason) {
    EXPECT_EQ(refused("alert tcp any any -> any any (app-layer-protocol:http,to_server; sid:1;)\n"),
              "app-layer-protocol: 'http,to_server': a mode after the protocol is Suricata 8's "
              "(Suricata 7 takes one protocol)");
    EXPECT_EQ(refused("alert tcp any any -> any any (app-layer-protocol:smb; sid:1;)\n"),
              "app-layer-protocol: unknown or undetected protocol 'smb' (Picket detects http, "
              "dns, tls, ssh, ftp and ftp-data; also 'failed')");
    EXPECT_EQ(refused("alert tcp any any -> any any (app-layer-protocol; sid:1;)\n"),
              "app-layer-protocol: needs a protocol such as http, !tls or failed");
    EXPECT_EQ(refused("alert http any any -> any any (app-layer-protocol:http; sid:1;)\n"),
              "app-layer-protocol: the rule header already names an app-layer protocol");
    EXPECT_EQ(refused("alert tcp any any -> any any (app-layer-protocol:http; "
                      "app-layer-protocol:!tls; sid:1;)\n"),
              "app-layer-protocol: can't mix a positive match with another app-layer-protocol "
              "(only negated ones combine)");
    EXPECT_EQ(refused("alert tcp any any -> any any (app-layer-protocol:!tls; "
                      "app-layer-protocol:!tls; sid:1;)\n"),
              "app-layer-protocol: '!tls' given twice");
    EXPECT_EQ(refused("alert tcp any any -> any any (app-layer-protocol:HTTP; sid:1;)\n"), "");
}

}  // namespace
}  // namespace picket::sensor::detect
