// The rule and reload figures of the stats snapshot (detect.rules_loaded, rules_failed,
// reloads, reload_failures, last_reload_unix_ms, last_reload_us), which the agent's
// MetricsReport, EVE stats and /metrics carry: right after start-up, after a reload (what the
// agent's bundle apply calls), after a failed one, and after a SIGHUP-style request.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/config.h"
#include "common/time_util.h"
#include "sensor/engine/engine.h"
#include "tests/sensor/engine/pcap_fixture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "tools/trafficgen/generator.h"

namespace picket::sensor::engine {
namespace {

namespace fs = std::filesystem;

uint64_t wall_ms() {
    return static_cast<uint64_t>(wall_clock_ns() / 1000000);
}

class DetectStatsTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.path();
        tools::trafficgen::Options o;
        o.seed = 4;
        o.sessions = 50;
        tools::trafficgen::generate(o, (dir_ / "t.pcap").string());
        // One good rule, one the parser refuses (unknown keyword).
        write("a.rules",
              "alert tcp any any -> any any (msg:\"a\"; content:\"GET\"; sid:1;)\n"
              "alert tcp any any -> any any (msg:\"bad\"; no_such_keyword; sid:2;)\n");
        write("b.rules",
              "alert tcp any any -> any any (msg:\"b1\"; content:\"POST\"; sid:3;)\n"
              "alert udp any any -> any any (msg:\"b2\"; content:\"x\"; sid:4;)\n");
    }

    void write(const std::string& name, const std::string& text) {
        std::ofstream(dir_ / name) << text;
    }

    // An endless paced replay: the engine runs until stop().
    SensorConfig config() {
        Config c = testing::pcap_config({dir_ / "t.pcap"}, 2, dir_);
        c.set_value("pcap-file.loop", YAML::Node(0));
        c.set_value("pcap-file.rate", YAML::Node(2000));
        // detect.reloads, rules_* in the EVE stats record (Picket's, not in Suricata's schema).
        c.set_value("stats-picket-counters", YAML::Node(true));
        SensorConfig sc = load_sensor_config(c);
        sc.detect.rule_files = {(dir_ / "a.rules").string()};
        return sc;
    }

    picket::testing::TempDir tmp_{"picket-detect-stats"};
    fs::path dir_;
};

TEST_F(DetectStatsTest, StartUpReloadFailureAndSighup) {
    const uint64_t before_start = wall_ms();
    SensorConfig sc = config();
    Engine engine(sc);
    const uint64_t after_start = wall_ms();

    StatsSnapshot s = engine.collect_stats();
    EXPECT_EQ(s.get("detect.rules_loaded"), 1u);
    EXPECT_EQ(s.get("detect.rules_failed"), 1u);
    EXPECT_EQ(s.get("detect.reloads"), 0u);
    EXPECT_EQ(s.get("detect.reload_failures"), 0u);
    const uint64_t start_ms = s.get("detect.last_reload_unix_ms");
    EXPECT_GE(start_ms, before_start);
    EXPECT_LE(start_ms, after_start);
    EXPECT_GT(s.get("detect.last_reload_us"), 0u);
    EXPECT_LE(s.get("detect.last_reload_us"), (after_start - before_start + 1) * 1000);

    testing::BackgroundRun run(engine);

    // A successful reload: the figures of the new generation.
    detect::DetectConfig next = sc.detect;
    next.rule_files = {(dir_ / "b.rules").string()};
    detect::LoadSummary summary;
    std::string error;
    const uint64_t before_reload = wall_ms();
    ASSERT_TRUE(engine.reload(next, &summary, &error)) << error;
    const uint64_t after_reload = wall_ms();
    s = engine.collect_stats();
    EXPECT_EQ(s.get("detect.rules_loaded"), 2u);
    EXPECT_EQ(s.get("detect.rules_failed"), 0u);
    EXPECT_EQ(s.get("detect.reloads"), 1u);
    EXPECT_EQ(s.get("detect.reload_failures"), 0u);
    const uint64_t reload_ms = s.get("detect.last_reload_unix_ms");
    EXPECT_GE(reload_ms, before_reload);
    EXPECT_LE(reload_ms, after_reload);
    const uint64_t reload_us = s.get("detect.last_reload_us");
    EXPECT_GT(reload_us, 0u);
    EXPECT_LE(reload_us, (after_reload - before_reload + 1) * 1000);

    // A failed reload changes nothing but its counter.
    detect::DetectConfig broken = sc.detect;
    broken.rule_files = {(dir_ / "missing.rules").string()};
    EXPECT_FALSE(engine.reload(broken, nullptr, &error));
    s = engine.collect_stats();
    EXPECT_EQ(s.get("detect.rules_loaded"), 2u);
    EXPECT_EQ(s.get("detect.rules_failed"), 0u);
    EXPECT_EQ(s.get("detect.reloads"), 1u);
    EXPECT_EQ(s.get("detect.reload_failures"), 1u);
    EXPECT_EQ(s.get("detect.last_reload_unix_ms"), reload_ms);
    EXPECT_EQ(s.get("detect.last_reload_us"), reload_us);

    // SIGHUP: the control thread reloads the running rules (b.rules, not the configured
    // a.rules) from their files.
    write("b.rules",
          "alert tcp any any -> any any (msg:\"b1\"; content:\"POST\"; sid:3;)\n"
          "alert udp any any -> any any (msg:\"b2\"; content:\"x\"; sid:4;)\n"
          "alert tcp any any -> any any (msg:\"b3\"; bogus_option; sid:5;)\n");
    const uint64_t before_hup = wall_ms();
    engine.request_reload();
    ASSERT_TRUE(picket::testing::wait_until(
        [&] { return engine.collect_stats().get("detect.reloads"); },
        [](uint64_t reloads) { return reloads >= 2; }, picket::testing::kDefaultWait,
        "the SIGHUP-style reload to be counted (detect.reloads >= 2)"));
    s = engine.collect_stats();
    const RunResult& result = run.stop_and_join();
    EXPECT_EQ(s.get("detect.reloads"), 2u);
    EXPECT_EQ(s.get("detect.rules_loaded"), 2u);
    EXPECT_EQ(s.get("detect.rules_failed"), 1u);
    EXPECT_EQ(s.get("detect.reload_failures"), 1u);
    EXPECT_GE(s.get("detect.last_reload_unix_ms"), before_hup);
    EXPECT_LE(s.get("detect.last_reload_unix_ms"), wall_ms());
    EXPECT_EQ(result.exit_code, 0) << result.error;

    // The final EVE stats event carries the same figures.
    nlohmann::json last;
    std::ifstream eve(dir_ / "eve.json");
    std::string line;
    while (std::getline(eve, line)) {
        nlohmann::json ev = nlohmann::json::parse(line);
        if (ev["event_type"] == "stats") {
            last = ev["stats"]["detect"];
        }
    }
    EXPECT_EQ(last["rules_loaded"], 2);
    EXPECT_EQ(last["rules_failed"], 1);
    EXPECT_EQ(last["reloads"], 2);
    EXPECT_EQ(last["reload_failures"], 1);
    EXPECT_EQ(last["last_reload_unix_ms"], s.get("detect.last_reload_unix_ms"));
    EXPECT_EQ(last["last_reload_us"], s.get("detect.last_reload_us"));
    EXPECT_EQ(last["engines"][0]["rules_loaded"], 2);
    EXPECT_EQ(last["engines"][0]["rules_failed"], 1);
}

TEST_F(DetectStatsTest, AbsentWithoutRules) {
    SensorConfig sc = config();
    sc.detect.rule_files.clear();
    Engine engine(sc);
    const StatsSnapshot s = engine.collect_stats();
    EXPECT_FALSE(s.has("detect.rules_loaded"));
    EXPECT_FALSE(s.has("detect.reloads"));
    EXPECT_TRUE(s.has("capture.queue_drops"));
    EXPECT_TRUE(s.has("capture.kernel_drops"));
}

TEST_F(DetectStatsTest, WorkerSharesSumToTheTotals) {
    SensorConfig sc = config();
    Engine engine(sc);
    testing::BackgroundRun run(engine);
    std::vector<WorkerTotals> workers;
    StatsSnapshot s;
    // Taken while both workers are busy: the shares come from the same reads as the totals.
    ASSERT_TRUE(picket::testing::wait_until(
        [&] {
            s = engine.collect_stats(&workers);
            return s.get("decoder.pkts");
        },
        [](uint64_t pkts) { return pkts >= 200; }, picket::testing::kDefaultWait,
        "200 packets to be decoded (decoder.pkts >= 200)", std::chrono::milliseconds(20)));
    run.stop_and_join();
    ASSERT_EQ(workers.size(), 2u);
    EXPECT_EQ(workers[0].worker, 0u);
    EXPECT_EQ(workers[1].worker, 1u);
    EXPECT_EQ(workers[0].packets + workers[1].packets, s.get("decoder.pkts"));
    EXPECT_EQ(workers[0].bytes + workers[1].bytes, s.get("decoder.bytes"));
}

}  // namespace
}  // namespace picket::sensor::engine
