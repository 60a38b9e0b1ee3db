// The compiled engine end to end on crafted packets: rule files are written by the test,
// loaded with DetectEngine::load, and real decoded packets go through DetectWorker::inspect.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
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

class DetectEngineTest : public testing::EngineTest {
protected:
    DetectEngineTest() : EngineTest("detect") {}

    // Decodes the frame, finds its flow, inspects it; returns the alerts, in order.
    std::vector<AlertRecord> inspect(const tb::Bytes& frame, int64_t ts) {
        decode::Packet p;
        decode::decode_packet(dctx_, 1, frame.data(), static_cast<uint32_t>(frame.size()),
                              static_cast<uint32_t>(frame.size()), ts, p);
        flow::Direction dir = flow::Direction::kToServer;
        flow::Flow* f = flows_->lookup(p, &dir);
        AlertRecord out[16];
        uint32_t n = worker_->inspect(p, f, dir, out, 16);
        return std::vector<AlertRecord>(out, out + n);
    }
    // The sids alerted, in order.
    std::vector<uint32_t> run(const tb::Bytes& frame, int64_t ts = 1000000000) {
        std::vector<uint32_t> sids;
        for (const AlertRecord& a : inspect(frame, ts)) {
            sids.push_back(a.rule->sid);
        }
        return sids;
    }
    // The rule action each alert carries, in order.
    std::vector<Action> run_actions(const tb::Bytes& frame, int64_t ts = 1000000000) {
        std::vector<Action> actions;
        for (const AlertRecord& a : inspect(frame, ts)) {
            actions.push_back(a.rule_action);
        }
        return actions;
    }

    static tb::Bytes tcp_frame(uint16_t sport, uint16_t dport, const std::string& payload,
                               uint8_t flags = 0x18, tb::V4 v4 = {}) {
        tb::Bytes pl(payload.begin(), payload.end());
        return tb::eth(0x0800, tb::ipv4(v4, tb::tcp(sport, dport, flags, {}, pl)));
    }
    static tb::Bytes udp_frame(uint16_t sport, uint16_t dport, const std::string& payload) {
        tb::Bytes pl(payload.begin(), payload.end());
        tb::V4 v4;
        v4.proto = tb::kUdp;
        return tb::eth(0x0800, tb::ipv4(v4, tb::udp(sport, dport, pl)));
    }
};

TEST_F(DetectEngineTest, ContentOnPortGroup) {
    load(
        "alert tcp any any -> any 80 (msg:\"x\"; content:\"evil\"; sid:1;)\n"
        "alert tcp any any -> any any (msg:\"y\"; content:\"evil\"; sid:2;)\n");
    EXPECT_EQ(summary_.loaded, 2u);
    EXPECT_EQ(run(tcp_frame(40000, 80, "an evil thing")), (std::vector<uint32_t>{1, 2}));
    EXPECT_EQ(run(tcp_frame(40001, 8080, "an evil thing")), (std::vector<uint32_t>{2}));
    EXPECT_EQ(run(tcp_frame(40002, 80, "a good thing")), (std::vector<uint32_t>{}));
    EXPECT_EQ(run(udp_frame(40003, 80, "evil")), (std::vector<uint32_t>{}));
}

TEST_F(DetectEngineTest, NocaseFastPatternAndVerification) {
    load(
        "alert tcp any any -> any any (msg:\"x\"; content:\"EVIL\"; nocase; "
        "content:\"tail\"; distance:0; sid:3;)\n");
    EXPECT_EQ(run(tcp_frame(1, 2, "xx eViL yy tail")), (std::vector<uint32_t>{3}));
    // The fast pattern matches but the relative content comes before it: no alert.
    EXPECT_EQ(run(tcp_frame(1, 3, "tail xx evil")), (std::vector<uint32_t>{}));
}

TEST_F(DetectEngineTest, BidirectionalAndPortLists) {
    load(
        "alert tcp any [80,443] <> any any (msg:\"bi\"; content:\"zz\"; sid:4;)\n"
        "alert tcp any any -> any !22 (msg:\"not ssh\"; content:\"zz\"; sid:5;)\n");
    EXPECT_EQ(run(tcp_frame(443, 5555, "zz")), (std::vector<uint32_t>{4, 5}));
    EXPECT_EQ(run(tcp_frame(5555, 80, "zz")), (std::vector<uint32_t>{4, 5}));
    EXPECT_EQ(run(tcp_frame(5555, 22, "zz")), (std::vector<uint32_t>{}));
}

TEST_F(DetectEngineTest, HeaderOnlyRulesAreCheckedWithoutPrefilter) {
    load(
        "alert tcp any any -> any any (msg:\"syn\"; flags:S; sid:6;)\n"
        "alert ip any any -> any any (msg:\"ttl\"; ttl:3; sid:7;)\n");
    EXPECT_EQ(summary_.no_fast_pattern_rules, 2u);
    EXPECT_EQ(run(tcp_frame(1, 2, "", 0x02)), (std::vector<uint32_t>{6}));
    tb::V4 v4;
    v4.ttl = 3;
    EXPECT_EQ(run(tcp_frame(1, 2, "", 0x10, v4)), (std::vector<uint32_t>{7}));
}

TEST_F(DetectEngineTest, AlertOrderIsActionThenSid) {
    load(
        "alert tcp any any -> any any (msg:\"a\"; content:\"q\"; sid:30;)\n"
        "drop tcp any any -> any any (msg:\"d\"; content:\"q\"; sid:40;)\n"
        "alert tcp any any -> any any (msg:\"b\"; content:\"q\"; sid:10;)\n");
    EXPECT_EQ(run(tcp_frame(1, 2, "q")), (std::vector<uint32_t>{40, 10, 30}));
}

TEST_F(DetectEngineTest, AlertsCarryTheRuleAction) {
    load(
        "alert tcp any any -> any any (msg:\"a\"; content:\"q\"; sid:30;)\n"
        "drop tcp any any -> any any (msg:\"d\"; content:\"q\"; sid:40;)\n"
        "reject tcp any any -> any any (msg:\"r\"; content:\"q\"; sid:20;)\n");
    EXPECT_EQ(run_actions(tcp_frame(1, 2, "q")),
              (std::vector<Action>{Action::kDrop, Action::kReject, Action::kAlert}));
}

TEST_F(DetectEngineTest, PassRuleSilencesThePacket) {
    load(
        "pass tcp any any -> any any (msg:\"ok\"; content:\"trusted\"; sid:50;)\n"
        "alert tcp any any -> any any (msg:\"bad\"; content:\"bad\"; sid:51;)\n");
    EXPECT_EQ(run(tcp_frame(1, 2, "bad trusted")), (std::vector<uint32_t>{}));
    EXPECT_EQ(run(tcp_frame(1, 2, "bad")), (std::vector<uint32_t>{51}));
}

// Suricata's action-order: rules run in that order, and a pass ends the packet's inspection
// after the actions placed before it.
TEST_F(DetectEngineTest, ActionOrderDecidesWhatAPassStops) {
    const std::string rules =
        "alert tcp any any -> any any (msg:\"a\"; content:\"Hi\"; sid:1;)\n"
        "pass tcp any any -> any any (msg:\"p\"; content:\"Hi\"; sid:2;)\n"
        "drop tcp any any -> any any (msg:\"d\"; content:\"Hi\"; sid:3;)\n";
    load(rules);  // pass, drop, reject, alert: nothing alerts
    EXPECT_EQ(run(tcp_frame(1, 2, "Hi all")), (std::vector<uint32_t>{}));

    DetectConfig drop_first;
    drop_first.action_order = {Action::kDrop, Action::kPass, Action::kReject, Action::kAlert};
    flows_->clear();
    load(rules, drop_first);
    EXPECT_EQ(run(tcp_frame(1, 2, "Hi all")), (std::vector<uint32_t>{3}));
    EXPECT_EQ(run(tcp_frame(1, 2, "nothing")), (std::vector<uint32_t>{}));

    DetectConfig pass_last;
    pass_last.action_order = {Action::kDrop, Action::kAlert, Action::kReject, Action::kPass};
    flows_->clear();
    load(rules, pass_last);
    EXPECT_EQ(run(tcp_frame(1, 2, "Hi all")), (std::vector<uint32_t>{3, 1}));
}

TEST_F(DetectEngineTest, FlowbitsCarryAcrossPacketsOfOneFlow) {
    load(
        "alert tcp any any -> any any (msg:\"check\"; content:\"second\"; "
        "flowbits:isset,stage1; sid:61;)\n"
        "alert tcp any any -> any any (msg:\"set\"; content:\"first\"; flowbits:set,stage1; "
        "flowbits:noalert; sid:60;)\n");
    EXPECT_EQ(run(tcp_frame(1000, 80, "second")), (std::vector<uint32_t>{}));
    EXPECT_EQ(run(tcp_frame(1000, 80, "first")), (std::vector<uint32_t>{}));
    EXPECT_EQ(run(tcp_frame(1000, 80, "second")), (std::vector<uint32_t>{61}));
    // Another flow does not see the bit.
    EXPECT_EQ(run(tcp_frame(1001, 80, "second")), (std::vector<uint32_t>{}));
}

TEST_F(DetectEngineTest, SetAndCheckInOnePacket) {
    load(
        "alert tcp any any -> any any (msg:\"check\"; content:\"b\"; flowbits:isset,x; "
        "sid:71;)\n"
        "alert tcp any any -> any any (msg:\"set\"; content:\"a\"; flowbits:set,x; sid:70;)\n");
    EXPECT_EQ(run(tcp_frame(1, 2, "ab")), (std::vector<uint32_t>{70, 71}));
}

TEST_F(DetectEngineTest, ThresholdLimit) {
    load(
        "alert tcp any any -> any any (msg:\"t\"; content:\"x\"; threshold:type limit, track "
        "by_src, count 1, seconds 60; sid:80;)\n");
    EXPECT_EQ(run(tcp_frame(1, 2, "x"), 1000000000), (std::vector<uint32_t>{80}));
    EXPECT_EQ(run(tcp_frame(1, 2, "x"), 2000000000), (std::vector<uint32_t>{}));
    EXPECT_EQ(run(tcp_frame(1, 2, "x"), 62000000000), (std::vector<uint32_t>{80}));
}

TEST_F(DetectEngineTest, ThresholdLimitByFlowCountsEachFlow) {
    load(
        "alert tcp any any -> any any (msg:\"t\"; content:\"x\"; threshold:type limit, track "
        "by_flow, count 1, seconds 3600; sid:81;)\n");
    EXPECT_EQ(run(tcp_frame(1000, 2, "x")), (std::vector<uint32_t>{81}));
    EXPECT_EQ(run(tcp_frame(1000, 2, "x")), (std::vector<uint32_t>{}));
    // The same hosts on another connection: another flow, its own count.
    EXPECT_EQ(run(tcp_frame(1001, 2, "x")), (std::vector<uint32_t>{81}));
}

TEST_F(DetectEngineTest, ThresholdBackoffAlertsOnFirstTenthHundredth) {
    load(
        "drop tcp any any -> any any (msg:\"b\"; content:\"x\"; threshold:type backoff, track "
        "by_flow, count 1, multiplier 10; sid:82;)\n");
    std::vector<int> alerted;
    for (int i = 1; i <= 100; ++i) {
        if (!run(tcp_frame(1000, 2, "x")).empty()) {
            alerted.push_back(i);
        }
    }
    EXPECT_EQ(alerted, (std::vector<int>{1, 10, 100}));
}

// threshold.config's rate_filter: after count matches within seconds the alerts carry
// new_action (drop here, so an IPS drops), and the action decides their order.
TEST_F(DetectEngineTest, RateFilterTurnsAnAlertRuleIntoADrop) {
    const std::string conf = ::testing::TempDir() + "/rate_" + std::to_string(getpid()) + ".config";
    std::ofstream(conf) << "rate_filter gen_id 1, sig_id 90, track by_src, count 2, seconds 60, "
                           "new_action drop, timeout 30\n";
    DetectConfig cfg;
    cfg.threshold_file = conf;
    load(
        "alert tcp any any -> any any (msg:\"r\"; content:\"x\"; sid:90;)\n"
        "alert tcp any any -> any any (msg:\"a\"; content:\"x\"; sid:10;)\n",
        cfg);
    std::remove(conf.c_str());
    const int64_t s = 1000000000;
    EXPECT_EQ(run_actions(tcp_frame(1, 2, "x"), 1 * s),
              (std::vector<Action>{Action::kAlert, Action::kAlert}));
    EXPECT_EQ(run_actions(tcp_frame(1, 2, "x"), 2 * s),
              (std::vector<Action>{Action::kAlert, Action::kAlert}));
    EXPECT_EQ(run(tcp_frame(1, 2, "x"), 3 * s), (std::vector<uint32_t>{90, 10}));
    std::vector<AlertRecord> a = inspect(tcp_frame(1, 2, "x"), 20 * s);
    ASSERT_EQ(a.size(), 2u);
    EXPECT_EQ(a[0].rule->sid, 90u);
    EXPECT_EQ(a[0].rule_action, Action::kDrop);
    EXPECT_TRUE(a[0].drop_rule);
    // 30 s after the switch (at 3 s) the rule is an alert rule again.
    EXPECT_EQ(run_actions(tcp_frame(1, 2, "x"), 34 * s),
              (std::vector<Action>{Action::kAlert, Action::kAlert}));
}

TEST_F(DetectEngineTest, AddressVariables) {
    DetectConfig cfg;
    cfg.address_vars["HOME_NET"] = "[10.0.0.2/32]";
    load("alert tcp $EXTERNAL_NET any -> $HOME_NET any (msg:\"in\"; content:\"k\"; sid:90;)\n",
         cfg);
    EXPECT_EQ(run(tcp_frame(1, 2, "k")), (std::vector<uint32_t>{90}));  // 10.0.0.1 -> .2
    tb::V4 rev;
    rev.src[3] = 2;
    rev.dst[3] = 1;
    EXPECT_EQ(run(tcp_frame(1, 2, "k", 0x18, rev)), (std::vector<uint32_t>{}));
}

TEST_F(DetectEngineTest, AppLayerRulesLoadButStayInactive) {
    load(
        "alert http any any -> any any (msg:\"uri\"; http.uri; content:\"/evil\"; sid:100;)\n"
        "alert tcp any any -> any any (msg:\"raw\"; content:\"/evil\"; sid:101;)\n");
    EXPECT_EQ(summary_.loaded, 2u);
    EXPECT_EQ(run(tcp_frame(1, 80, "GET /evil HTTP/1.1\r\n\r\n")), (std::vector<uint32_t>{101}));
}

TEST_F(DetectEngineTest, BadRulesAreSkippedAndSummarised) {
    load(
        "alert tcp any any -> any any (msg:\"ok\"; content:\"a\"; sid:1;)\n"
        "alert tcp any any -> any any (msg:\"bad\"; frobnicate; sid:2;)\n"
        "alert tcp any any -> any any (msg:\"dup\"; content:\"b\"; sid:1;)\n");
    EXPECT_EQ(summary_.loaded, 1u);
    EXPECT_EQ(summary_.skipped, 2u);
    std::string s = summary_.to_string();
    while (!s.empty() && s.back() == '\n') {
        s.pop_back();
    }
    EXPECT_EQ(s.substr(s.rfind('\n') + 1), "rules: 1 loaded, 2 skipped");
}

// Ten port groups (ports 1000-1009) that differ by one rule each: their patterns are close, so
// they share one Hyperscan database (the union), and each port still matches its own rules only.
std::string close_port_groups() {
    std::string rules;
    for (int i = 1; i <= 20; ++i) {
        char line[160];
        std::snprintf(line, sizeof(line),
                      "alert tcp any any -> any 1000:1009 (msg:\"s\"; content:\"shared%02d\"; "
                      "sid:%d;)\n",
                      i, i);
        rules += line;
    }
    for (int k = 0; k < 10; ++k) {
        rules += "alert tcp any any -> any " + std::to_string(1000 + k) +
                 " (msg:\"o\"; content:\"only" + std::to_string(k) +
                 "\"; sid:" + std::to_string(100 + k) + ";)\n";
    }
    return rules;
}

TEST_F(DetectEngineTest, PortGroupsWithClosePatternsShareOneDatabase) {
    load(close_port_groups());
    EXPECT_EQ(summary_.loaded, 30u);
    EXPECT_GE(summary_.groups, 10u);       // a part per port list
    EXPECT_EQ(summary_.hs_databases, 1u);  // one database for all ten
    // A pattern of another port's group is in the database but maps to no rule of this one.
    EXPECT_EQ(run(tcp_frame(41000, 1003, "only5 only3")), (std::vector<uint32_t>{103}));
    EXPECT_EQ(run(tcp_frame(41001, 1005, "only3")), (std::vector<uint32_t>{}));
    EXPECT_EQ(run(tcp_frame(41002, 1009, "shared07 only9 only0")), (std::vector<uint32_t>{7, 109}));
    EXPECT_EQ(run(tcp_frame(41003, 1010, "shared07 only9")), (std::vector<uint32_t>{}));
}

TEST_F(DetectEngineTest, DatabasesAreTheSameOnAnyNumberOfThreads) {
    // Patterns far apart: every group gets its own database, compiled in parallel.
    std::string rules;
    for (int k = 0; k < 6; ++k) {
        for (int i = 0; i < 12; ++i) {
            rules += "alert tcp any any -> any " + std::to_string(2000 + k) +
                     " (msg:\"p\"; content:\"port" + std::to_string(k) + "pat" + std::to_string(i) +
                     ".\"; sid:" + std::to_string(1000 + 100 * k + i) + ";)\n";
        }
    }
    DetectConfig serial;
    serial.compile_threads = 1;
    serial.reuse_databases = false;
    load(rules, serial);
    EXPECT_EQ(summary_.compile_threads, 1u);
    EXPECT_EQ(summary_.hs_databases, 6u);
    const auto alerts_of = [&] {
        std::vector<std::vector<uint32_t>> out;
        for (int k = 0; k < 6; ++k) {
            out.push_back(run(tcp_frame(static_cast<uint16_t>(42000 + k), 2000 + k,
                                        "port" + std::to_string(k) + "pat3. port" +
                                            std::to_string((k + 1) % 6) + "pat4. port" +
                                            std::to_string(k) + "pat11.")));
        }
        return out;
    };
    const auto serial_alerts = alerts_of();
    EXPECT_EQ(serial_alerts[2], (std::vector<uint32_t>{1203, 1211}));
    DetectConfig parallel;
    parallel.compile_threads = 4;
    parallel.reuse_databases = false;
    load(rules, parallel);
    EXPECT_EQ(summary_.compile_threads, 4u);
    EXPECT_EQ(summary_.reused_databases, 0u);
    EXPECT_EQ(alerts_of(), serial_alerts);
}

TEST_F(DetectEngineTest, ReloadReusesTheDatabasesOfTheLiveEngine) {
    const std::string rules = close_port_groups() +
                              "alert udp any any -> any 53 (msg:\"u\"; content:\"udpx\"; "
                              "sid:500;)\n";
    load(rules);
    EXPECT_EQ(summary_.hs_databases, 2u);
    EXPECT_EQ(summary_.reused_databases, 0u);
    // The first engine is alive (the fixture holds it): the same rules reuse both databases.
    DetectConfig cfg;
    cfg.rule_files = {path_};
    LoadSummary again;
    auto second = DetectEngine::load(cfg, nullptr, &again);
    EXPECT_EQ(again.reused_databases, 2u);
    // One changed rule: only its group's database is compiled again.
    std::ofstream(path_) << close_port_groups()
                         << "alert udp any any -> any 53 (msg:\"u\"; content:\"udpy\"; "
                            "sid:500;)\n";
    auto third = DetectEngine::load(cfg, nullptr, &again);
    EXPECT_EQ(again.hs_databases, 2u);
    EXPECT_EQ(again.reused_databases, 1u);
    // Off: nothing reused.
    cfg.reuse_databases = false;
    auto fourth = DetectEngine::load(cfg, nullptr, &again);
    EXPECT_EQ(again.reused_databases, 0u);
}

TEST_F(DetectEngineTest, SummaryPrintsThePhasesAndThePeakMemory) {
    load("alert tcp any any -> any 80 (msg:\"x\"; content:\"evil\"; sid:1;)\n");
    const std::string s = summary_.to_string();
    EXPECT_NE(s.find("  compile phases: fast patterns "), std::string::npos) << s;
    EXPECT_NE(s.find(" reused), rest "), std::string::npos) << s;
    EXPECT_GT(summary_.peak_rss_bytes, 0u);
    EXPECT_NE(s.find("  peak memory during the load "), std::string::npos) << s;
}

}  // namespace
}  // namespace picket::sensor::detect
