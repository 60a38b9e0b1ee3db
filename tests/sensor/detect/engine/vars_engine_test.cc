// Flow and packet variables and hostbits through the compiled engine (DetectEngine::load,
// DetectWorker::inspect) on decoded TCP packets: a pcre capture stores a flow variable that a
// later packet of the same flow matches with flowvar (and no other flow does), a packet
// variable lasts for its packet only, and hostbits mark a host across its flows until they
// expire. Expected values follow Suricata 7's documentation.
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

class VarsEngineTest : public testing::EngineTest {
protected:
    VarsEngineTest() : EngineTest("vars_engine") {}
    void SetUp() override { xbits_clear(); }

    void load(const std::string& rules) {
        EngineTest::load(rules);
        ASSERT_EQ(summary_.skipped, 0u) << summary_.to_string();
    }

    // One TCP segment 10.0.0.src:sport -> 10.0.0.dst:dport, inspected at time ts (seconds).
    Sids run(uint8_t src, uint8_t dst, uint16_t sport, uint16_t dport, const std::string& payload,
             int64_t ts = 1) {
        tb::Bytes t = tb::tcp(sport, dport, 0x18, {}, tb::Bytes(payload.begin(), payload.end()));
        tb::set_tcp_numbers(t, seq_, 1, 65535);
        seq_ += static_cast<uint32_t>(payload.size());
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

    // HTTP transaction tx_id of the flow 10.0.0.1:40000 <-> 10.0.0.2:80 inspected in direction
    // `to_server` (the request) or not (the response), with its URI or status code.
    Sids run_tx(uint64_t tx_id, bool to_server, const std::string& text) {
        text_ = text;
        AppView v;
        v.proto = AppProto::kHttp;
        v.tx_id = tx_id;
        v.buf[static_cast<size_t>(to_server ? BufferId::kHttpUri : BufferId::kHttpStatCode)] =
            text_;
        tb::Bytes t = tb::tcp(to_server ? 40000 : 80, to_server ? 80 : 40000, 0x10, {}, {});
        tb::V4 v4;
        v4.src[3] = to_server ? 1 : 2;
        v4.dst[3] = to_server ? 2 : 1;
        frame_ = tb::eth(0x0800, tb::ipv4(v4, t));
        decode::Packet p;
        decode::decode_packet(dctx_, 1, frame_.data(), static_cast<uint32_t>(frame_.size()),
                              static_cast<uint32_t>(frame_.size()), kSec, p);
        flow::Direction dir = flow::Direction::kToServer;
        flow::Flow* f = flows_->lookup(p, &dir);
        AlertRecord out[16];
        const uint32_t n = worker_->inspect_tx(p, f, dir, v, &log_, out, 16);
        Sids r;
        for (uint32_t i = 0; i < n; ++i) {
            r.push_back(out[i].rule->sid);
        }
        return r;
    }

    uint32_t seq_ = 1;
    tb::Bytes frame_;
    std::string text_;
    TxAlertLog log_;
};

TEST_F(VarsEngineTest, CapturedFlowvarMatchesLaterInTheSameFlowOnly) {
    load(
        "alert tcp any any -> any 80 (content:\"User-Agent: \"; "
        "pcre:\"/User-Agent: (?P<flow_ua>[^\\r\\n]+)/\"; noalert; sid:1;)\n"
        "alert tcp any any -> any 80 (content:\"DATA\"; flowvar:ua,\"curl\"; sid:2;)\n"
        // Captures, but its last content never matches: nothing is stored.
        "alert tcp any any -> any 80 (content:\"X-Evil: \"; "
        "pcre:\"/X-Evil: (?P<flow_ua>[^\\r\\n]+)/\"; content:\"never\"; sid:3;)\n");
    EXPECT_EQ(run(1, 2, 40000, 80, "DATA"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, "GET / HTTP/1.1\r\nUser-Agent: curl/8.1\r\n\r\n"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, "DATA"), (Sids{2}));
    // Another flow, even of the same hosts, has its own variables.
    EXPECT_EQ(run(1, 2, 40001, 80, "DATA"), (Sids{}));
    // A new value replaces the old one.
    EXPECT_EQ(run(1, 2, 40000, 80, "User-Agent: wget\r\n"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, "DATA"), (Sids{}));
    // A rule that did not match stores nothing.
    EXPECT_EQ(run(1, 2, 40002, 80, "X-Evil: curl\r\n"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40002, 80, "DATA"), (Sids{}));
    EXPECT_EQ(worker_->counters().vars_dropped.get(), 0u);
}

TEST_F(VarsEngineTest, PktvarLastsForItsPacketOnly) {
    load(
        "alert tcp any any -> any any (content:\"uid=\"; pcre:\"/uid=(\\d+)/, pkt:uid\"; "
        "noalert; sid:10;)\n"
        "alert tcp any any -> any any (content:\"cmd\"; pktvar:uid,\"0\"; sid:11;)\n"
        "alert tcp any any -> any any (content:\"cmd\"; flowvar:uid,\"0\"; sid:12;)\n");
    // sid 10 stores uid before sid 11 checks it, on the same packet.
    EXPECT_EQ(run(1, 2, 40000, 80, "uid=0 cmd"), (Sids{11}));
    // The next packet of the flow starts without it.
    EXPECT_EQ(run(1, 2, 40000, 80, "cmd"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, "uid=7 cmd"), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 80, "uid=10 cmd"), (Sids{11}));  // "10" holds "0"
}

TEST_F(VarsEngineTest, HostbitsAcrossFlowsOfTheHostUntilTheyExpire) {
    load(
        "alert tcp any any -> any 22 (content:\"scan\"; hostbits:set,scanner,src,expire 5; "
        "noalert; sid:20;)\n"
        "alert tcp any any -> any 80 (content:\"GET\"; hostbits:isset,scanner,src; sid:21;)\n"
        "alert tcp any 80 -> any any (content:\"200\"; hostbits:isset,scanner,dst; sid:22;)\n"
        "alert tcp any any -> any 80 (content:\"GET\"; xbits:isset,scanner,track ip_src; "
        "sid:23;)\n");
    EXPECT_EQ(run(1, 2, 40000, 80, "GET", 100), (Sids{}));
    EXPECT_EQ(run(1, 2, 40000, 22, "scan", 100), (Sids{}));
    // Another flow of the marked host, both ways; xbits by ip_src sees the same bit.
    EXPECT_EQ(run(1, 2, 40001, 80, "GET", 101), (Sids{21, 23}));
    EXPECT_EQ(run(2, 1, 80, 40001, "200", 101), (Sids{22}));
    // Another host is not marked.
    EXPECT_EQ(run(3, 2, 40002, 80, "GET", 101), (Sids{}));
    // Set at 100 with expire 5: live at 104, gone at 105.
    EXPECT_EQ(run(1, 2, 40003, 80, "GET", 104), (Sids{21, 23}));
    EXPECT_EQ(run(1, 2, 40004, 80, "GET", 105), (Sids{}));
}

TEST_F(VarsEngineTest, TxBitSetOnTheRequestIsSeenByItsResponseOnly) {
    // The checkers come first in the file: the engine orders setters before them, so sid 32
    // sees the bit sid 30 sets in the same pass over the request.
    load(
        "alert http any any -> any any (http.stat_code; content:\"200\"; "
        "xbits:isset,admin,track tx; sid:31;)\n"
        "alert http any any -> any any (http.uri; content:\"/admin\"; "
        "xbits:isset,admin,track tx; sid:32;)\n"
        "alert http any any -> any any (http.uri; content:\"/admin\"; "
        "xbits:set,admin,track tx; noalert; sid:30;)\n"
        // A protocol-only rule becomes a transaction rule.
        "alert http any any -> any any (xbits:isset,admin,track tx; sid:33;)\n");
    EXPECT_EQ(run_tx(1, true, "/admin/login"), (Sids{32, 33}));
    EXPECT_EQ(run_tx(1, false, "200"), (Sids{31}));
    // Transaction 2 of the same flow has no bit.
    EXPECT_EQ(run_tx(2, true, "/index"), (Sids{}));
    EXPECT_EQ(run_tx(2, false, "200"), (Sids{}));
    // A packet of the flow (no transaction) does not see it either.
    EXPECT_EQ(run(1, 2, 40000, 80, "GET /admin"), (Sids{}));
}

TEST_F(VarsEngineTest, TxBitsNeedAnAppLayerRule) {
    EngineTest::load(
        "alert tcp any any -> any any (content:\"x\"; xbits:set,a,track tx; sid:40;)\n"
        "alert tcp any any -> any any (http.uri; content:\"x\"; xbits:set,a,track tx; "
        "sid:41;)\n"
        "alert dns any any -> any any (xbits:isset,a,track tx; sid:42;)\n");
    EXPECT_EQ(summary_.loaded, 2u);
    ASSERT_EQ(summary_.diagnostics.size(), 1u);
    EXPECT_EQ(summary_.diagnostics[0].sid, 40u);
    EXPECT_EQ(summary_.diagnostics[0].category, "bad xbits");
    EXPECT_EQ(summary_.diagnostics[0].reason,
              "xbits: track tx needs an app-layer rule (an app-layer protocol in the header, such "
              "as http or dns, or an app-layer buffer)");
}

TEST_F(VarsEngineTest, HostbitsBothMarksEachHost) {
    load(
        "alert tcp any any -> any 445 (content:\"lateral\"; hostbits:set,pivot,both; noalert; "
        "sid:50;)\n"
        "alert tcp any any -> any 80 (content:\"GET\"; hostbits:isset,pivot,src; sid:51;)\n"
        "alert tcp any any -> any 80 (content:\"GET\"; hostbits:isset,pivot,both; sid:52;)\n");
    EXPECT_EQ(run(1, 2, 40000, 445, "lateral", 10), (Sids{}));
    EXPECT_EQ(run(1, 7, 40001, 80, "GET", 11), (Sids{51}));  // the source host
    EXPECT_EQ(run(2, 7, 40002, 80, "GET", 11), (Sids{51}));  // the destination host
    EXPECT_EQ(run(2, 1, 40003, 80, "GET", 11), (Sids{51, 52}));
    EXPECT_EQ(run(3, 1, 40004, 80, "GET", 11), (Sids{}));
    // hostbits live 300 s by default (Suricata 7).
    EXPECT_EQ(run(2, 1, 40005, 80, "GET", 309), (Sids{51, 52}));
    EXPECT_EQ(run(2, 1, 40006, 80, "GET", 310), (Sids{}));
}

}  // namespace
}  // namespace picket::sensor::detect
