// Live-like replay (--pcap-loop / --pcap-rate) and drops by reason through a real Engine: exact
// packet counts over several passes, a paced run that cannot finish early, alerts whose pcap_cnt
// and timestamps move forward pass after pass, and a tiny worker queue that drops (counted as
// capture.queue_drops, never as kernel drops) in replay but waits in plain offline reading.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/time_util.h"
#include "sensor/capture/capture.h"
#include "sensor/engine/engine.h"
#include "tests/sensor/engine/pcap_fixture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "tools/trafficgen/generator.h"

namespace picket::sensor::engine {
namespace {

namespace fs = std::filesystem;

class ReplayTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.path();
        tools::trafficgen::Options o;
        o.seed = 9;
        o.sessions = 120;
        o.attacks = {"/etc/passwd"};
        o.attack_share = 0.3;
        record_ = tools::trafficgen::generate(o, pcap());
        std::ofstream(dir_ / "a.rules") << "alert tcp any any -> any any (msg:\"a\"; "
                                           "content:\"/etc/passwd\"; sid:1;)\n";
    }

    std::string pcap() const { return (dir_ / "t.pcap").string(); }

    // `sets`: --set style overrides. `copies`: the pcap given that many times with -r.
    SensorConfig config(const std::vector<std::string>& sets, int copies = 1) {
        Config c;
        YAML::Node list(YAML::NodeType::Sequence);
        for (int i = 0; i < copies; ++i) {
            list.push_back(pcap());
        }
        c.set_value("pcap-file.paths", list);
        c.set_value("default-log-dir", YAML::Node(dir_.string()));
        c.set_value("stats-interval", YAML::Node(3600));
        for (const auto& s : sets) {
            c.set(s);
        }
        return load_sensor_config(c);
    }

    // Alert lines of eve.json, in the order written.
    std::vector<nlohmann::json> alerts() const {
        std::vector<nlohmann::json> out;
        std::ifstream eve(dir_ / "eve.json");
        std::string line;
        while (std::getline(eve, line)) {
            nlohmann::json ev = nlohmann::json::parse(line);
            if (ev["event_type"] == "alert") {
                out.push_back(std::move(ev));
            }
        }
        return out;
    }

    picket::testing::TempDir tmp_{"picket-replay"};
    fs::path dir_;
    tools::trafficgen::Record record_;
};

TEST_F(ReplayTest, LoopedAndPacedCountsEveryPacket) {
    constexpr uint64_t kLoops = 3;
    constexpr double kRate = 20000;
    // A queue far larger than the whole replay: pacing alone keeps it from filling.
    SensorConfig sc = config(
        {"pcap-file.loop=3", "pcap-file.rate=20000", "workers=2", "capture.queue-size=64mb"});
    ASSERT_TRUE(sc.pcap_replay);
    Engine engine(sc);
    const RunResult r = engine.run();
    const uint64_t k = record_.packets;
    EXPECT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.stats.get("decoder.pkts"), kLoops * k);
    EXPECT_EQ(r.stats.get("decoder.bytes"), kLoops * record_.bytes);
    EXPECT_EQ(r.stats.get("capture.kernel_packets"), kLoops * k);
    EXPECT_EQ(r.stats.get("capture.queue_drops"), 0u);
    EXPECT_EQ(r.stats.get("capture.kernel_drops"), 0u);
    // Packet n leaves at start + n / rate: the last one no earlier than (N - 1) / rate.
    EXPECT_GE(r.elapsed_sec, static_cast<double>(kLoops * k - 1) / kRate);
}

TEST_F(ReplayTest, AlertsOfEveryPassMoveForward) {
    constexpr uint64_t kLoops = 3;
    // One worker: alerts are written in packet order.
    // Alerts on the attack packets themselves: raw content matched per packet, not in
    // Suricata's acknowledged chunks (which move them to a later packet of their flow).
    SensorConfig sc = config(
        {"pcap-file.loop=3", "workers=1", "capture.queue-size=64mb", "stream.raw-on-ack=no"});
    sc.detect.rule_files = {(dir_ / "a.rules").string()};
    // Unpaced replay drops when the worker falls behind: only a queue larger than the whole
    // replay makes the count exact.
    ASSERT_GT(64ULL << 20, kLoops * (record_.file_bytes + 32 * record_.packets));
    Engine engine(sc);
    const RunResult r = engine.run();
    ASSERT_EQ(r.exit_code, 0) << r.error;
    ASSERT_EQ(r.stats.get("capture.queue_drops"), 0u);
    ASSERT_FALSE(record_.attacks.empty());

    // Timestamps of the attack frames, read back from the file.
    std::vector<int64_t> ts(record_.packets + 1);
    {
        capture::PcapFileReader reader({pcap()});
        capture::RawPacket p;
        while (reader.next(p) == capture::ReadResult::kOk) {
            ts[p.pcap_cnt] = p.ts_ns;
        }
    }
    // The shift of each pass: span + mean gap of the first pass (the generator's timestamps
    // never go backwards, so its first and last packets are the earliest and latest).
    const int64_t span = (record_.last_ts_us - record_.first_ts_us) * 1000;
    const int64_t period = span + span / static_cast<int64_t>(record_.packets - 1);

    std::vector<uint64_t> attack_packets;
    for (const auto& a : record_.attacks) {
        attack_packets.push_back(a.packet);
    }
    std::sort(attack_packets.begin(), attack_packets.end());
    std::vector<uint64_t> want_cnt, got_cnt;
    std::vector<std::string> want_ts, got_ts;
    for (uint64_t pass = 0; pass < kLoops; ++pass) {
        for (uint64_t packet : attack_packets) {
            want_cnt.push_back(packet + pass * record_.packets);
            want_ts.push_back(
                format_eve_timestamp(ts[packet] + static_cast<int64_t>(pass) * period));
        }
    }
    for (const auto& ev : alerts()) {
        got_cnt.push_back(ev["pcap_cnt"].get<uint64_t>());
        got_ts.push_back(ev["timestamp"].get<std::string>());
    }
    EXPECT_EQ(got_cnt, want_cnt);
    EXPECT_EQ(got_ts, want_ts);
    EXPECT_EQ(r.stats.get("detect.alert"), kLoops * record_.attacks.size());
}

TEST_F(ReplayTest, TinyQueueDropsInReplayAndCountsThemAsQueueDrops) {
    constexpr uint64_t kLoops = 5;
    SensorConfig sc = config({"pcap-file.loop=5", "workers=1", "capture.queue-size=2"});
    sc.detect.rule_files = {(dir_ / "a.rules").string()};
    Engine engine(sc);
    const RunResult r = engine.run();
    EXPECT_EQ(r.exit_code, 0) << r.error;
    const uint64_t read = kLoops * record_.packets;
    EXPECT_EQ(r.stats.get("capture.kernel_packets"), read);
    // Every packet read was either inspected or dropped for the full queue.
    EXPECT_EQ(r.stats.get("decoder.pkts") + r.stats.get("capture.queue_drops"), read);
    EXPECT_GT(r.stats.get("capture.queue_drops"), 0u);
    EXPECT_EQ(r.stats.get("capture.kernel_drops"), 0u);
    const std::string summary = format_summary(r, 1);
    EXPECT_NE(summary.find("capture: " + std::to_string(read) + " packets, 0 kernel drops, " +
                           std::to_string(r.stats.get("capture.queue_drops")) + " queue drops"),
              std::string::npos)
        << summary;
}

TEST_F(ReplayTest, PlainReadingWaitsForATinyQueue) {
    // The same file three times without --pcap-loop: blocking, exact, no drops, no shift.
    SensorConfig sc = config({"workers=1", "capture.queue-size=2"}, 3);
    ASSERT_FALSE(sc.pcap_replay);
    sc.detect.rule_files = {(dir_ / "a.rules").string()};
    Engine engine(sc);
    const RunResult r = engine.run();
    EXPECT_EQ(r.exit_code, 0) << r.error;
    EXPECT_EQ(r.stats.get("decoder.pkts"), 3 * record_.packets);
    EXPECT_EQ(r.stats.get("capture.kernel_packets"), 3 * record_.packets);
    EXPECT_EQ(r.stats.get("capture.queue_drops"), 0u);
    EXPECT_EQ(r.stats.get("capture.kernel_drops"), 0u);
    std::vector<std::string> got_ts;
    for (const auto& ev : alerts()) {
        got_ts.push_back(ev["timestamp"].get<std::string>());
    }
    ASSERT_EQ(got_ts.size(), 3 * record_.attacks.size());
    // Each copy keeps the file's own timestamps.
    const size_t n = record_.attacks.size();
    EXPECT_EQ(std::vector<std::string>(got_ts.begin(), got_ts.begin() + n),
              std::vector<std::string>(got_ts.begin() + 2 * n, got_ts.end()));
}

TEST_F(ReplayTest, EndlessReplayStopsOnRequest) {
    SensorConfig sc = config({"pcap-file.loop=0", "pcap-file.rate=5000", "workers=2"});
    Engine engine(sc);
    testing::BackgroundRun run(engine);
    // Past one whole pass: the loop goes on. One pass at 5000 packets/s takes
    // record_.packets / 5000 s (about 0.5 s here).
    ASSERT_TRUE(picket::testing::wait_until(
        [&] { return engine.collect_stats().get("decoder.pkts"); },
        [&](uint64_t pkts) { return pkts > record_.packets; }, picket::testing::kDefaultWait,
        "the replay to pass the end of its first pass (decoder.pkts > " +
            std::to_string(record_.packets) + ")"));
    const RunResult& r = run.stop_and_join();
    EXPECT_EQ(r.exit_code, 0) << r.error;
    EXPECT_GT(r.stats.get("decoder.pkts"), record_.packets);
    EXPECT_EQ(r.stats.get("capture.kernel_drops"), 0u);
}

}  // namespace
}  // namespace picket::sensor::engine
