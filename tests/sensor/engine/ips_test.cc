// IPS verdicts on crafted pcaps run with ips.simulate (--simulate-ips): a drop rule drops its
// packet, and every later packet of the flow when it acts on the flow (Suricata's scope: stream,
// transaction, app-layer or header-only), reject is counted as a drop plus a rejection,
// pass stops the flow's inspection, malformed packets follow ips.malformed-policy, and in
// passive (IDS) mode a drop rule only alerts. Also the inline configuration errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "sensor/engine/engine.h"
#include "tests/sensor/engine/pcap_fixture.h"

namespace picket::sensor::engine {
namespace {

namespace fs = std::filesystem;
namespace frames = picket::testing::frames;
using testing::Bytes;
using testing::frame;
using testing::text;
using testing::udp_frame;

Bytes tcp_frame(bool to_server, uint8_t flags, const std::string& payload) {
    return frame(to_server, frames::kTcp,
                 to_server ? frames::tcp(40000, 80, flags, {}, text(payload))
                           : frames::tcp(80, 40000, flags, {}, text(payload)));
}

class IpsTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = testing::make_test_dir("picket-ips"); }
    void TearDown() override { fs::remove_all(dir_); }

    // Runs the frames against the rules; ips: --simulate-ips. Returns the stats; the alerts
    // are in alerts_.
    // action_order: sensor.yaml's action-order, empty for the default.
    StatsSnapshot run(const std::vector<Bytes>& frames, const std::string& rules, bool ips,
                      const std::string& malformed = "pass",
                      const std::vector<std::string>& action_order = {}) {
        testing::write_pcap(dir_ / "t.pcap", frames);
        std::ofstream(dir_ / "t.rules") << rules;
        Config c = testing::pcap_config({dir_ / "t.pcap"}, 1, dir_);
        c.set_value("ips.simulate", YAML::Node(ips));
        c.set_value("ips.malformed-policy", YAML::Node(malformed));
        if (!action_order.empty()) {
            YAML::Node order;
            for (const std::string& a : action_order) {
                order.push_back(a);
            }
            c.set_value("action-order", order);
        }
        SensorConfig sc = load_sensor_config(c);
        sc.detect.rule_files = {(dir_ / "t.rules").string()};
        Engine engine(sc);
        RunResult r = engine.run();
        EXPECT_EQ(r.exit_code, 0) << r.error;
        alerts_ = testing::read_alerts(dir_ / "eve.json");
        return r.stats;
    }

    fs::path dir_;
    std::vector<nlohmann::json> alerts_;
};

// Flow 1000: "hello" passes, "evil" matches the drop rule, the client's next packet and the
// server's reply are of the same flow; flow 1001 is another.
std::vector<Bytes> drop_frames() {
    return {udp_frame(1000, true, "hello"), udp_frame(1000, true, "evil"),
            udp_frame(1000, true, "after"), udp_frame(1000, false, "reply"),
            udp_frame(1001, true, "benign")};
}

constexpr const char* kDropRule =
    "drop udp any any -> any any (msg:\"evil\"; content:\"evil\"; "
    "sid:1;)\n";

TEST_F(IpsTest, DropOnAPacketsPayloadDropsThatPacketOnly) {
    // As Suricata: a match on the packet's own payload (no stream, no transaction, not an
    // app-layer or header-only rule) drops that packet; the rest of the flow is inspected.
    StatsSnapshot s = run(drop_frames(), kDropRule, /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 4u);
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    EXPECT_EQ(s.get("ips.rejected"), 0u);
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 1u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 0u);
    EXPECT_EQ(s.get("ips.drop_reason.decode_error"), 0u);
    EXPECT_EQ(s.get("ips.drop_reason.stream_memcap"), 0u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_memcap"), 0u);
    EXPECT_EQ(s.get("ips.verdict.pass"), 4u);
    EXPECT_EQ(s.get("ips.verdict.drop"), 1u);
    EXPECT_EQ(s.get("ips.verdict.reject"), 0u);
    EXPECT_EQ(s.get("ips.responses.sent"), 0u);
    EXPECT_FALSE(s.has("capture.inline.accepted"));  // no inline source: simulated
    ASSERT_EQ(alerts_.size(), 1u);
    EXPECT_EQ(alerts_[0]["alert"]["action"], "blocked");
    EXPECT_EQ(alerts_[0]["alert"]["signature_id"], 1);
    EXPECT_EQ(alerts_[0]["pcap_cnt"], 2);
    EXPECT_EQ(alerts_[0]["verdict"], nlohmann::json::parse(R"({"action":"drop"})"));
    const std::string fast = [&] {
        std::ifstream in(dir_ / "fast.log");
        return std::string(std::istreambuf_iterator<char>(in), {});
    }();
    EXPECT_NE(fast.find("  [Drop] [**] [1:1:0] evil [**]"), std::string::npos) << fast;
}

TEST_F(IpsTest, DropOfAHeaderOnlyRuleDropsTheRestOfTheFlow) {
    // A header-only rule (addresses, ports, no option) acts on the flow: every later packet of
    // flow 1000, both directions, is dropped uninspected; flow 1001 is untouched.
    StatsSnapshot s =
        run(drop_frames(), "drop udp 10.0.0.1 1000 -> any any (msg:\"h\"; sid:4;)\n", true);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 4u);
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 1u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 3u);
    ASSERT_EQ(alerts_.size(), 1u);
    EXPECT_EQ(alerts_[0]["pcap_cnt"], 1);
}

TEST_F(IpsTest, DropOfAnAppLayerRuleDropsTheRestOfTheFlow) {
    // An app-layer rule (dns) acts on the flow too, although it matched one datagram.
    // A DNS query for evil.example (id 0x1234, one question, type A class IN).
    Bytes query = {0x12, 0x34, 0x01, 0x00, 0,   1,   0,   0,   0,   0,   0, 0, 4, 'e', 'v',
                   'i',  'l',  7,    'e',  'x', 'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0,   1};
    std::vector<Bytes> frames = {frame(true, frames::kUdp, frames::udp(40000, 53, query)),
                                 frame(false, frames::kUdp, frames::udp(53, 40000, query)),
                                 frame(true, frames::kUdp, frames::udp(40000, 53, query))};
    StatsSnapshot s = run(frames,
                          "drop dns any any -> any any (msg:\"q\"; dns.query; "
                          "content:\"evil\"; sid:5;)\n",
                          true);
    EXPECT_EQ(s.get("ips.blocked"), 3u);
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 1u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 2u);
}

TEST_F(IpsTest, NoalertDropRuleDropsWithoutAnAlert) {
    // Suricata's IPS idiom "drop ... noalert;": the packet is dropped, nothing is logged. A
    // noalert alert rule changes nothing.
    StatsSnapshot s = run(drop_frames(),
                          "drop udp any any -> any any (content:\"evil\"; noalert; sid:1;)\n"
                          "alert udp any any -> any any (content:\"hello\"; noalert; sid:2;)\n",
                          /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 4u);
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    EXPECT_EQ(s.get("ips.rejected"), 0u);
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 1u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 0u);
    EXPECT_EQ(alerts_.size(), 0u);
}

TEST_F(IpsTest, NoalertHeaderOnlyDropDropsTheFlowWithoutAnAlert) {
    StatsSnapshot s =
        run(drop_frames(), "drop udp 10.0.0.1 1000 -> any any (noalert; sid:1;)\n", true);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 4u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 3u);
    EXPECT_EQ(alerts_.size(), 0u);
}

// action-order [drop, pass, reject, alert]: a drop on a packet's payload comes before the
// header-only pass, so each packet carrying "Hi" is dropped with an alert and the pass only
// ends that packet's inspection (the alert rule after it is silent); it does not pass the flow,
// whose next packets are inspected again.
TEST_F(IpsTest, DropBeforePassDropsEachPacketAndDoesNotPassTheFlow) {
    std::vector<Bytes> frames = {udp_frame(1000, true, "Hi all"), udp_frame(1000, false, "Hi all"),
                                 udp_frame(1000, true, "Hi all"), udp_frame(1000, true, "bye")};
    StatsSnapshot s = run(frames,
                          "pass udp any any -> any any (msg:\"p\"; sid:1;)\n"
                          "drop udp any any -> any any (msg:\"d\"; content:\"Hi all\"; sid:2;)\n"
                          "alert udp any any -> any any (msg:\"a\"; sid:3;)\n",
                          true, "pass", {"drop", "pass", "reject", "alert"});
    EXPECT_EQ(s.get("ips.blocked"), 3u);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 0u);
    ASSERT_EQ(alerts_.size(), 3u);
    for (const nlohmann::json& a : alerts_) {
        EXPECT_EQ(a["alert"]["signature_id"], 2);
    }
}

// action-order [drop, alert, reject, pass]: a header-only drop drops the flow at its first
// packet; the alert rule ordered after it alerts on that packet only.
TEST_F(IpsTest, HeaderOnlyDropFirstInTheOrderDropsTheFlow) {
    std::vector<Bytes> frames = {udp_frame(1000, true, "Hi all"), udp_frame(1000, false, "Hi all"),
                                 udp_frame(1000, true, "Hi all")};
    StatsSnapshot s = run(frames,
                          "alert udp any any -> any any (msg:\"a\"; sid:1;)\n"
                          "pass udp any any -> any any (msg:\"p\"; content:\"Hi all\"; sid:2;)\n"
                          "drop udp any any -> any any (msg:\"d\"; sid:3;)\n",
                          true, "pass", {"drop", "alert", "reject", "pass"});
    EXPECT_EQ(s.get("ips.blocked"), 3u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 2u);
    std::vector<int> sids;
    for (const nlohmann::json& a : alerts_) {
        sids.push_back(a["alert"]["signature_id"].get<int>());
    }
    EXPECT_EQ(sids, (std::vector<int>{3, 1}));
}

TEST_F(IpsTest, NoalertRejectRuleRejectsWithoutAnAlert) {
    StatsSnapshot s =
        run({udp_frame(1000, true, "evil"), udp_frame(1001, true, "fine")},
            "reject udp any any -> any any (content:\"evil\"; flowbits:noalert; sid:3;)\n",
            /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    EXPECT_EQ(s.get("ips.rejected"), 1u);
    EXPECT_EQ(alerts_.size(), 0u);
}

TEST_F(IpsTest, PassRuleWinsOverANoalertDrop) {
    StatsSnapshot s = run({udp_frame(1000, true, "ok evil")},
                          "drop udp any any -> any any (content:\"evil\"; noalert; sid:1;)\n"
                          "pass udp any any -> any any (content:\"ok\"; sid:2;)\n",
                          /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 0u);
}

TEST_F(IpsTest, PassiveModeOnlyAlerts) {
    StatsSnapshot s = run(drop_frames(), kDropRule, /*ips=*/false);
    EXPECT_FALSE(s.has("ips.accepted"));
    EXPECT_FALSE(s.has("ips.blocked"));
    EXPECT_EQ(s.get("decoder.pkts"), 5u);
    ASSERT_EQ(alerts_.size(), 1u);
    EXPECT_EQ(alerts_[0]["alert"]["action"], "allowed");
    EXPECT_FALSE(alerts_[0].contains("verdict"));
}

TEST_F(IpsTest, AlertRulesAreAllowedWithAnAlertVerdict) {
    StatsSnapshot s =
        run(drop_frames(), "alert udp any any -> any any (msg:\"e\"; content:\"evil\"; sid:7;)\n",
            /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 5u);
    EXPECT_EQ(s.get("ips.blocked"), 0u);
    ASSERT_EQ(alerts_.size(), 1u);
    EXPECT_EQ(alerts_[0]["alert"]["action"], "allowed");
    EXPECT_EQ(alerts_[0]["verdict"], nlohmann::json::parse(R"({"action":"alert"})"));
}

TEST_F(IpsTest, RejectIsCountedAndDropsItsPacket) {
    // TCP without a handshake (not tracked by the stream: midstream off): packet rules see
    // each segment, and a reject on one drops that segment (a payload match), not the flow.
    std::vector<Bytes> frames = {tcp_frame(true, 0x18, "GET /ok"), tcp_frame(true, 0x18, "evil"),
                                 tcp_frame(false, 0x18, "HTTP/1.1 200"),
                                 udp_frame(1000, true, "evil")};
    StatsSnapshot s = run(frames,
                          "rejectdst tcp any any -> any any (msg:\"r\"; content:\"evil\"; sid:2;)\n"
                          "reject udp any any -> any any (msg:\"u\"; content:\"evil\"; sid:3;)\n",
                          /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 2u);
    EXPECT_EQ(s.get("ips.blocked"), 2u);
    EXPECT_EQ(s.get("ips.rejected"), 2u);
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 2u);
    EXPECT_EQ(s.get("ips.drop_reason.flow_drop"), 0u);
    EXPECT_EQ(s.get("ips.verdict.pass"), 2u);
    EXPECT_EQ(s.get("ips.verdict.drop"), 0u);
    EXPECT_EQ(s.get("ips.verdict.reject"), 2u);
    // Simulated: no responder, nothing is sent.
    EXPECT_EQ(s.get("ips.responses.sent"), 0u);
    ASSERT_EQ(alerts_.size(), 2u);
    EXPECT_EQ(alerts_[0]["alert"]["action"], "blocked");
    // rejectdst on a client's packet answers the server; reject (rejectsrc) the client.
    EXPECT_EQ(alerts_[0]["verdict"],
              nlohmann::json::parse(
                  R"({"action":"drop","reject-target":"to_server","reject":["tcp-reset"]})"));
    EXPECT_EQ(alerts_[1]["verdict"],
              nlohmann::json::parse(
                  R"({"action":"drop","reject-target":"to_client","reject":["icmp-prohib"]})"));
}

// Suricata's reject actions: reject and rejectsrc answer the matching packet's sender,
// rejectdst its receiver, rejectboth both; two rejects on one packet combine.
TEST_F(IpsTest, RejectTargetsFollowTheAction) {
    std::vector<Bytes> frames = {tcp_frame(true, 0x18, "hello"), tcp_frame(false, 0x18, "srv-evil"),
                                 udp_frame(1000, true, "both"), udp_frame(1001, true, "two")};
    run(frames,
        "rejectsrc tcp any any -> any any (msg:\"s\"; content:\"srv-evil\"; sid:1;)\n"
        "rejectboth udp any any -> any any (msg:\"b\"; content:\"both\"; sid:2;)\n"
        "rejectsrc udp any any -> any any (msg:\"x\"; content:\"two\"; sid:3;)\n"
        "rejectdst udp any any -> any any (msg:\"y\"; content:\"two\"; sid:4;)\n",
        /*ips=*/true);
    std::vector<std::string> got;
    for (const nlohmann::json& a : alerts_) {
        got.push_back(std::to_string(a["alert"]["signature_id"].get<int>()) + " " +
                      a["verdict"]["reject-target"].get<std::string>());
    }
    // The server's packet: its sender is the server. sid 3 and 4 on one packet: both ends.
    EXPECT_EQ(got, (std::vector<std::string>{"1 to_server", "2 both", "3 both", "4 both"}));
}

TEST_F(IpsTest, PassRuleStopsThePacketsInspection) {
    // The pass rule matches "ok": that packet raises no alert although sid 3 matches it too.
    StatsSnapshot s = run({udp_frame(1000, true, "ok x")},
                          "pass udp any any -> any any (content:\"ok\"; sid:2;)\n"
                          "drop udp any any -> any any (msg:\"x\"; content:\"x\"; sid:3;)\n",
                          /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 0u);
    EXPECT_EQ(alerts_.size(), 0u);
}

TEST_F(IpsTest, PassRuleStopsTheFlowsInspection) {
    // A header-only pass rule (addresses, ports, no option) passes the flow: after "ok", flow
    // 1000's "x" packets are neither inspected nor dropped; another flow's "x" is.
    StatsSnapshot s = run({udp_frame(1000, true, "ok"), udp_frame(1000, true, "x"),
                           udp_frame(1000, false, "x"), udp_frame(1001, true, "x")},
                          "pass ip 10.0.0.1 1000 -> any any (sid:2;)\n"
                          "drop udp any any -> any any (msg:\"x\"; content:\"x\"; sid:3;)\n",
                          /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 3u);
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 1u);
    ASSERT_EQ(alerts_.size(), 1u);
    EXPECT_EQ(alerts_[0]["pcap_cnt"], 4);
}

// Suricata finalises a packet's alerts as one queue in the action-order; a pass in it ends the
// queue, and the alerts queued before it are logged with verdict pass. action-order [alert,
// pass, drop, reject]: on "ok x" sid 1 alerts with verdict pass and the drop sid 3 (after the
// pass) neither alerts nor drops; the pass was on the packet's payload, so the next "x" is
// inspected again: sid 1 and sid 3 alert there, verdict drop (a drop wins over everything).
TEST_F(IpsTest, AlertsQueuedBeforeAPassCarryThePassVerdict) {
    StatsSnapshot s = run({udp_frame(1000, true, "ok x"), udp_frame(1000, true, "x")},
                          "alert udp any any -> any any (msg:\"a\"; content:\"x\"; sid:1;)\n"
                          "pass udp any any -> any any (content:\"ok\"; sid:2;)\n"
                          "drop udp any any -> any any (msg:\"d\"; content:\"x\"; sid:3;)\n",
                          /*ips=*/true, "pass", {"alert", "pass", "drop", "reject"});
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    std::vector<std::string> got;
    for (const nlohmann::json& a : alerts_) {
        got.push_back(std::to_string(a["pcap_cnt"].get<int>()) + " " +
                      std::to_string(a["alert"]["signature_id"].get<int>()) + " " +
                      a["verdict"]["action"].get<std::string>());
    }
    EXPECT_EQ(got, (std::vector<std::string>{"1 1 pass", "2 1 drop", "2 3 drop"}));
}

// A drop queued before the pass stands: action-order [drop, alert, pass, reject], both alerts
// of the packet say drop, and the packet is dropped.
TEST_F(IpsTest, DropQueuedBeforeAPassKeepsTheDropVerdict) {
    StatsSnapshot s = run({udp_frame(1000, true, "Hi")},
                          "drop udp any any -> any any (msg:\"d\"; content:\"Hi\"; sid:1;)\n"
                          "alert udp any any -> any any (msg:\"a\"; content:\"Hi\"; sid:2;)\n"
                          "pass udp any any -> any any (content:\"Hi\"; sid:3;)\n",
                          /*ips=*/true, "pass", {"drop", "alert", "pass", "reject"});
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    ASSERT_EQ(alerts_.size(), 2u);
    EXPECT_EQ(alerts_[0]["alert"]["signature_id"], 1);
    EXPECT_EQ(alerts_[1]["alert"]["signature_id"], 2);
    EXPECT_EQ(alerts_[0]["verdict"], nlohmann::json::parse(R"({"action":"drop"})"));
    EXPECT_EQ(alerts_[1]["verdict"], nlohmann::json::parse(R"({"action":"drop"})"));
}

// The same on a transaction: the DNS query's alert (sid 1, ordered first) is logged with verdict
// pass, as the pass rule matched the same transaction; the pass of a transaction passes the
// flow, so the second query of the flow is not inspected.
TEST_F(IpsTest, TransactionAlertBeforeAPassCarriesThePassVerdict) {
    Bytes query = {0x12, 0x34, 0x01, 0x00, 0,   1,   0,   0,   0,   0,   0, 0, 4, 'e', 'v',
                   'i',  'l',  7,    'e',  'x', 'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0,   1};
    std::vector<Bytes> frames = {frame(true, frames::kUdp, frames::udp(40000, 53, query)),
                                 frame(true, frames::kUdp, frames::udp(40000, 53, query))};
    StatsSnapshot s = run(frames,
                          "alert dns any any -> any any (msg:\"q\"; dns.query; "
                          "content:\"evil\"; sid:1;)\n"
                          "pass dns any any -> any any (dns.query; content:\"example\"; sid:2;)\n",
                          /*ips=*/true, "pass", {"alert", "pass", "drop", "reject"});
    EXPECT_EQ(s.get("ips.accepted"), 2u);
    ASSERT_EQ(alerts_.size(), 1u);
    EXPECT_EQ(alerts_[0]["pcap_cnt"], 1);
    EXPECT_EQ(alerts_[0]["alert"]["signature_id"], 1);
    EXPECT_EQ(alerts_[0]["verdict"], nlohmann::json::parse(R"({"action":"pass"})"));
}

TEST_F(IpsTest, PassOnAPacketsPayloadPassesThatPacketOnly) {
    // Suricata applies a pass to the flow only for stream, transaction, app-layer or header-only
    // matches: a udp content pass passes its packet, the next "x" of the flow is dropped.
    StatsSnapshot s = run({udp_frame(1000, true, "ok"), udp_frame(1000, true, "x")},
                          "pass udp any any -> any any (content:\"ok\"; sid:2;)\n"
                          "drop udp any any -> any any (msg:\"x\"; content:\"x\"; sid:3;)\n",
                          /*ips=*/true);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    ASSERT_EQ(alerts_.size(), 1u);
    EXPECT_EQ(alerts_[0]["pcap_cnt"], 2);
}

TEST_F(IpsTest, IpOnlyRulesMatchTheFirstPacketOfEachDirection) {
    // Suricata's IP-only rules (header only) are matched on the first packet of each direction
    // of a flow: flow 1000 (three to the server, one back) alerts twice, flow 1001 once. A
    // rule with any option (here dsize) is matched on every packet.
    run({udp_frame(1000, true, "a"), udp_frame(1000, true, "b"), udp_frame(1000, false, "c"),
         udp_frame(1000, true, "d"), udp_frame(1000, false, "e"), udp_frame(1001, true, "f")},
        "alert udp any any -> any any (msg:\"ip-only\"; sid:1;)\n"
        "alert udp any any -> any any (msg:\"every\"; dsize:1; sid:2;)\n",
        /*ips=*/false);
    std::vector<std::string> got;
    for (const nlohmann::json& a : alerts_) {
        got.push_back(std::to_string(a["pcap_cnt"].get<int>()) + ":" +
                      std::to_string(a["alert"]["signature_id"].get<int>()));
    }
    EXPECT_EQ(got, (std::vector<std::string>{"1:1", "1:2", "2:2", "3:1", "3:2", "4:2", "5:2", "6:1",
                                             "6:2"}));
}

// An IPv4 packet whose TCP header is cut short: a decode error.
std::vector<Bytes> malformed_frames() {
    Bytes short_tcp(10, 0);
    return {frame(true, frames::kTcp, short_tcp), udp_frame(1000, true, "fine")};
}

TEST_F(IpsTest, MalformedPolicyDrop) {
    StatsSnapshot s = run(malformed_frames(), kDropRule, /*ips=*/true, "drop");
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 1u);
    EXPECT_EQ(s.get("ips.drop_reason.decode_error"), 1u);
}

TEST_F(IpsTest, MalformedPolicyPass) {
    StatsSnapshot s = run(malformed_frames(), kDropRule, /*ips=*/true, "pass");
    EXPECT_EQ(s.get("ips.accepted"), 2u);
    EXPECT_EQ(s.get("ips.blocked"), 0u);
    EXPECT_EQ(s.get("ips.drop_reason.decode_error"), 0u);
}

// ---------------------------------------------------------------------------------------
// Inline configuration

Config inline_config(const std::string& mode) {
    Config c;
    c.set_value("capture.mode", YAML::Node(mode));
    return c;
}

std::string config_error(const Config& c) {
    try {
        load_sensor_config(c);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

TEST(IpsConfigTest, NfqueueRunsOneWorkerPerQueue) {
    Config c = inline_config("nfqueue");
    c.set_value("capture.nfqueue.queue", YAML::Node("2:5"));
    SensorConfig sc = load_sensor_config(c);
    EXPECT_EQ(sc.mode, CaptureMode::kNfqueue);
    EXPECT_TRUE(sc.ips());
    EXPECT_EQ(sc.workers, 4u);
    EXPECT_EQ(sc.nfqueue.queue, 2u);
    EXPECT_EQ(sc.nfqueue_count, 4u);
    EXPECT_FALSE(sc.nfqueue.fail_open);
    EXPECT_FALSE(sc.nfqueue.use_mark);
    EXPECT_TRUE(sc.alert_verdict);
}

TEST(IpsConfigTest, NfqueueKeys) {
    Config c = inline_config("nfqueue");
    c.set_value("capture.nfqueue.queue", YAML::Node("7"));
    c.set_value("capture.nfqueue.max-len", YAML::Node(100));
    c.set_value("capture.nfqueue.mark", YAML::Node(5));
    c.set_value("ips.fail-open", YAML::Node(true));
    c.set_value("workers", YAML::Node(1));
    SensorConfig sc = load_sensor_config(c);
    EXPECT_EQ(sc.workers, 1u);
    EXPECT_EQ(sc.nfqueue.queue, 7u);
    EXPECT_EQ(sc.nfqueue.max_len, 100u);
    EXPECT_EQ(sc.nfqueue.mark, 5u);
    EXPECT_TRUE(sc.nfqueue.use_mark);
    EXPECT_TRUE(sc.nfqueue.fail_open);  // ips.fail-open is its default
    EXPECT_TRUE(sc.fail_open);
    c.set_value("capture.nfqueue.fail-open", YAML::Node(false));
    EXPECT_FALSE(load_sensor_config(c).nfqueue.fail_open);
}

TEST(IpsConfigTest, NfqueueErrors) {
    Config c = inline_config("nfqueue");
    c.set_value("capture.nfqueue.queue", YAML::Node("0:3"));
    c.set_value("workers", YAML::Node(2));
    EXPECT_EQ(config_error(c),
              "<defaults>: workers: 2 does not match capture.nfqueue.queue '0:3' (4 queue(s)): "
              "NFQUEUE runs one worker per queue; leave workers at auto or give as many queues");
    Config bad = inline_config("nfqueue");
    bad.set_value("capture.nfqueue.queue", YAML::Node("5:1"));
    EXPECT_EQ(config_error(bad).rfind("<defaults>: capture.nfqueue.queue (--queue): bad queue "
                                      "range '5:1'",
                                      0),
              0u)
        << config_error(bad);
    Config with_iface = inline_config("nfqueue");
    with_iface.set_value("capture.interface", YAML::Node("eth0"));
    EXPECT_EQ(config_error(with_iface),
              "<defaults>: capture.interface (-i eth0) is not used with capture.mode nfqueue: give "
              "the queues with --queue Q[:R]");
}

TEST(IpsConfigTest, BridgeKeysAndErrors) {
    Config c = inline_config("afpacket-inline");
    EXPECT_EQ(config_error(c),
              "<defaults>: capture.mode afpacket-inline needs the two ports: --bridge IF1:IF2 "
              "(capture.afpacket-inline.bridge)");
    c.set_value("capture.afpacket-inline.bridge", YAML::Node("veth0:veth1"));
    c.set_value("capture.afpacket-inline.block-count", YAML::Node(8));
    c.set_value("workers", YAML::Node(2));
    SensorConfig sc = load_sensor_config(c);
    EXPECT_EQ(sc.mode, CaptureMode::kAfPacketInline);
    EXPECT_EQ(sc.workers, 2u);
    EXPECT_EQ(sc.afpacket_inline.iface1, "veth0");
    EXPECT_EQ(sc.afpacket_inline.iface2, "veth1");
    EXPECT_EQ(sc.afpacket_inline.block_count, 8u);
    EXPECT_EQ(sc.afpacket_inline.block_timeout_ms, 1u);
    c.set_value("capture.afpacket-inline.bridge", YAML::Node("veth0"));
    EXPECT_EQ(config_error(c).rfind("<defaults>: capture.afpacket-inline.bridge (--bridge): bad "
                                    "bridge 'veth0'",
                                    0),
              0u)
        << config_error(c);
}

TEST(IpsConfigTest, UnknownBridgePortFailsAtStart) {
    Config c = inline_config("afpacket-inline");
    c.set_value("capture.afpacket-inline.bridge", YAML::Node("picket-nosuch0:picket-nosuch1"));
    c.set_value("workers", YAML::Node(1));
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    SensorConfig sc = load_sensor_config(c);
    std::string error;
    try {
        Engine engine(sc);
    } catch (const capture::CaptureError& e) {
        error = e.what();
    }
    EXPECT_EQ(error,
              "bridge picket-nosuch0:picket-nosuch1: interface 'picket-nosuch0': no such "
              "interface");
}

TEST(IpsConfigTest, PassiveModesAreNotIps) {
    Config c;
    c.set_value("capture.interface", YAML::Node("eth0"));
    SensorConfig sc = load_sensor_config(c);
    EXPECT_FALSE(sc.ips());
    EXPECT_FALSE(sc.alert_verdict);
    c.set_value("ips.simulate", YAML::Node(true));
    sc = load_sensor_config(c);
    EXPECT_TRUE(sc.ips());
    EXPECT_FALSE(sc.inline_capture());
    EXPECT_TRUE(sc.alert_verdict);
}

}  // namespace
}  // namespace picket::sensor::engine
