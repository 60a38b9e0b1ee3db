// The transforms to_uppercase, strip_whitespace, compress_whitespace and url_decode on http.uri
// transactions, and the keywords rawbytes, seq, tos and window on decoded packets, through the
// compiled engine (DetectEngine::load, prefilter, DetectWorker::inspect / inspect_tx). The
// keyword semantics are those of transform_test.cc and ip_tcp_fields_test.cc; here they must
// survive rule loading, fast-pattern selection on the transformed buffer and the real decoder.
#include <gtest/gtest.h>

#include <functional>
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
using Sids = std::vector<uint32_t>;

class KeywordEngineTest : public testing::EngineTest {
protected:
    KeywordEngineTest() : EngineTest("keyword_engine") {}

    void load(const std::string& rules, DetectConfig cfg = {}) {
        EngineTest::load(rules, std::move(cfg));
        ASSERT_EQ(summary_.skipped, 0u) << summary_.to_string();
    }

    static Sids sids(const AlertRecord* out, uint32_t n) {
        Sids v;
        for (uint32_t i = 0; i < n; ++i) {
            v.push_back(out[i].rule->sid);
        }
        return v;
    }

    // Decodes frame into p (which points into frame) and finds its flow and direction.
    flow::Flow* decode(const tb::Bytes& frame, decode::Packet& p, flow::Direction& dir) {
        decode::decode_packet(dctx_, 1, frame.data(), static_cast<uint32_t>(frame.size()),
                              static_cast<uint32_t>(frame.size()), 1000000000, p);
        dir = flow::Direction::kToServer;
        return flows_->lookup(p, &dir);
    }

    Sids run(const tb::Bytes& frame) {
        decode::Packet p;
        flow::Direction dir;
        flow::Flow* f = decode(frame, p, dir);
        AlertRecord out[16];
        return sids(out, worker_->inspect(p, f, dir, out, 16));
    }

    // One HTTP transaction whose http.uri is `uri`, inspected with a packet of its flow.
    Sids run_uri(const std::string& uri) {
        uri_ = uri;
        AppView v;
        v.proto = AppProto::kHttp;
        v.tx_id = next_tx_++;
        v.buf[static_cast<size_t>(BufferId::kHttpUri)] = uri_;
        decode::Packet p;
        flow::Direction dir;
        const tb::Bytes frame = tcp_frame(1000, 65535, 0x10, 80, "x");  // p points into it
        flow::Flow* f = decode(frame, p, dir);
        AlertRecord out[16];
        return sids(out, worker_->inspect_tx(p, f, dir, v, nullptr, out, 16));
    }

    // IPv4/TCP 40000 -> dport with the given sequence number, window and TOS (checksums
    // recomputed over the patched headers).
    static tb::Bytes tcp_frame(uint32_t seq, uint16_t window, uint8_t tos, uint16_t dport,
                               const std::string& payload) {
        tb::Bytes t = tb::tcp(40000, dport, 0x18, {}, tb::Bytes(payload.begin(), payload.end()));
        tb::put32(t, 4, seq);
        tb::put16(t, 14, window);
        tb::Bytes ip = tb::ipv4({}, t);
        ip[1] = tos;
        tb::put16(ip, 10, 0);
        tb::put16(ip, 10, tb::fold(tb::sum16(ip.data(), 20)));
        return tb::eth(0x0800, ip);
    }
    static tb::Bytes udp_frame(uint8_t tos) {
        tb::V4 v4;
        v4.proto = tb::kUdp;
        tb::Bytes ip = tb::ipv4(v4, tb::udp(40000, 53, tb::Bytes{'x'}));
        ip[1] = tos;
        tb::put16(ip, 10, 0);
        tb::put16(ip, 10, tb::fold(tb::sum16(ip.data(), 20)));
        return tb::eth(0x0800, ip);
    }

    std::string uri_;
    uint64_t next_tx_ = 0;
};

const char* const kTransformRules =
    "alert http any any -> any any (http.uri; content:\"/a+b\"; sid:1;)\n"
    "alert http any any -> any any (http.uri; url_decode; content:\"/a b\"; sid:2;)\n"
    "alert http any any -> any any (http.uri; strip_whitespace; to_uppercase; "
    "content:\"/ADMIN\"; startswith; sid:3;)\n"
    "alert http any any -> any any (http.uri; to_uppercase; content:\"login\"; nocase; sid:4;)\n"
    "alert http any any -> any any (http.uri; compress_whitespace; content:\"x y z\"; "
    "sid:5;)\n"
    "alert http any any -> any any (http.uri; url_decode; content:\"|00|\"; offset:3; depth:1; "
    "sid:6;)\n";

void expect_transform_alerts(const std::function<Sids(const std::string&)>& run_uri) {
    // The same http.uri seen raw (sid 1) and url-decoded (sid 2).
    EXPECT_EQ(run_uri("/a+b"), (Sids{1, 2}));
    EXPECT_EQ(run_uri("/a%20b"), (Sids{2}));
    EXPECT_EQ(run_uri("/a b"), (Sids{2}));
    EXPECT_EQ(run_uri("/a%2Bb"), (Sids{}));  // decodes to "/a+b": neither
    // The fast pattern "/ADMIN" exists only in the transformed buffer.
    EXPECT_EQ(run_uri("/ad min/x"), (Sids{3}));
    EXPECT_EQ(run_uri(" / a D m I n"), (Sids{3}));
    EXPECT_EQ(run_uri("/x/admin"), (Sids{}));
    // A lowercase nocase content on an uppercased buffer.
    EXPECT_EQ(run_uri("/LogIn.php"), (Sids{4}));
    EXPECT_EQ(run_uri("/x    y\t\tz"), (Sids{5}));
    EXPECT_EQ(run_uri("/xy z"), (Sids{}));
    // "/ab%00" decodes to "/ab\0": the NUL at offset 3.
    EXPECT_EQ(run_uri("/ab%00"), (Sids{6}));
    EXPECT_EQ(run_uri("/abc%00"), (Sids{}));
    EXPECT_EQ(run_uri(""), (Sids{}));
}

TEST_F(KeywordEngineTest, TransformsOnHttpUri) {
    load(kTransformRules);
    EXPECT_EQ(summary_.loaded, 6u);
    EXPECT_EQ(summary_.app_layer_rules, 6u);
    expect_transform_alerts([this](const std::string& u) { return run_uri(u); });
}

TEST_F(KeywordEngineTest, TransformsWithoutPrefilterGiveTheSameAlerts) {
    DetectConfig cfg;
    cfg.mpm_algo = MpmAlgo::kNone;
    load(kTransformRules, cfg);
    expect_transform_alerts([this](const std::string& u) { return run_uri(u); });
}

TEST_F(KeywordEngineTest, RawbytesIsANoOp) {
    load(
        "alert tcp any any -> any 23 (content:\"|FF FA 18 00|\"; rawbytes; depth:4; sid:20;)\n"
        "alert tcp any any -> any 23 (content:\"|FF FA 18 00|\"; depth:4; sid:21;)\n");
    EXPECT_EQ(run(tcp_frame(1000, 65535, 0, 23, std::string("\xff\xfa\x18\x00xterm", 9))),
              (Sids{20, 21}));
    EXPECT_EQ(run(tcp_frame(1000, 65535, 0, 23, std::string("x\xff\xfa\x18\x00", 5))), (Sids{}));
}

TEST_F(KeywordEngineTest, SeqWindowTosOnDecodedPackets) {
    load(
        "alert tcp any any -> any any (msg:\"GPL SCAN NULL\"; flow:stateless; ack:0; flags:0; "
        "seq:0; sid:30;)\n"
        "alert tcp any any -> any any (seq:3000000000; sid:31;)\n"
        "alert tcp any any -> any any (window:55808; sid:32;)\n"
        "alert tcp any any -> any any (window:!55808; sid:33;)\n"
        "alert ip any any -> any any (tos:x88; sid:34;)\n"
        "alert ip any any -> any any (tos:!136; sid:35;)\n"
        "alert tcp any any -> any any (tos:8; window:1024; content:\"hi\"; sid:36;)\n");
    EXPECT_EQ(summary_.loaded, 7u);
    EXPECT_EQ(run(tcp_frame(3000000000u, 55808, 0x88, 80, "a")), (Sids{31, 32, 34}));
    EXPECT_EQ(run(tcp_frame(3000000001u, 55807, 0x22, 80, "a")), (Sids{33, 35}));
    EXPECT_EQ(run(tcp_frame(7, 1024, 8, 80, "say hi")), (Sids{33, 35, 36}));
    EXPECT_EQ(run(tcp_frame(7, 1024, 9, 80, "say hi")), (Sids{33, 35}));
    // UDP: only the IP keyword; no TCP field matches, negated or not.
    EXPECT_EQ(run(udp_frame(0x88)), (Sids{34}));
    EXPECT_EQ(run(udp_frame(0)), (Sids{35}));
}

TEST_F(KeywordEngineTest, NullScanRule) {
    // The guide's seq:0 example: ack 0, no flag, seq 0. The builder's ack is 2000, so patch it.
    load(
        "alert tcp any any -> any any (flow:stateless; ack:0; flags:0; seq:0; sid:30;)\n"
        "alert tcp any any -> any any (flow:stateless; flags:0; seq:0; sid:31;)\n");
    tb::Bytes t = tb::tcp(40000, 80, 0);
    tb::put32(t, 4, 0);
    tb::put32(t, 8, 0);
    EXPECT_EQ(run(tb::eth(0x0800, tb::ipv4({}, t))), (Sids{30, 31}));
    tb::put32(t, 4, 1);
    EXPECT_EQ(run(tb::eth(0x0800, tb::ipv4({}, t))), (Sids{}));
}

}  // namespace
}  // namespace picket::sensor::detect
