// RunResult's per-thread figures (bench/pipeline prints them to show how the run would scale):
// each worker's packets are its share of what was dispatched to it, they sum to the totals,
// and every thread that ran reports the CPU time it used.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "common/config.h"
#include "sensor/decode/decode.h"
#include "sensor/engine/engine.h"
#include "tests/sensor/engine/pcap_fixture.h"
#include "tests/support/frames.h"

namespace picket::sensor::engine {
namespace {

namespace fs = std::filesystem;
namespace tb = picket::testing::frames;
using tb::Bytes;

// UDP between 10.0.0.c and 10.0.1.s for c, s in 1..8: 64 host pairs, spread over the workers
// by the dispatcher's symmetric hash.
std::vector<Bytes> host_pairs() {
    std::vector<Bytes> frames;
    for (uint8_t c = 1; c <= 8; ++c) {
        for (uint8_t s = 1; s <= 8; ++s) {
            tb::V4 h;
            h.proto = tb::kUdp;
            h.with_addrs({10, 0, 0, c}, {10, 0, 1, s});
            for (int k = 0; k < 3; ++k) {
                frames.push_back(
                    tb::eth(0x0800, tb::ipv4(h, tb::udp(40000, 53, testing::text("query")))));
            }
        }
    }
    return frames;
}

class WorkerFiguresTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = testing::make_test_dir("picket-workerfig"); }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
};

TEST_F(WorkerFiguresTest, EachWorkersPacketsAreWhatWasDispatchedToIt) {
    const std::vector<Bytes> frames = host_pairs();
    std::array<uint64_t, 2> expected{0, 0};
    for (const Bytes& f : frames) {
        ++expected[decode::dispatch_hash(1, f.data(), static_cast<uint32_t>(f.size())) % 2];
    }
    testing::write_pcap(dir_ / "t.pcap", frames);
    Config c = testing::pcap_config({dir_ / "t.pcap"}, 2, dir_);
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    Engine engine(load_sensor_config(c));
    const RunResult r = engine.run();
    ASSERT_EQ(r.exit_code, 0) << r.error;
    ASSERT_EQ(r.workers.size(), 2u);
    EXPECT_EQ(r.workers[0].packets, expected[0]);
    EXPECT_EQ(r.workers[1].packets, expected[1]);
    EXPECT_EQ(r.workers[0].packets + r.workers[1].packets, 192u);
    EXPECT_EQ(r.stats.get("decoder.pkts"), 192u);
}

TEST_F(WorkerFiguresTest, EveryThreadReportsItsCpuTime) {
    testing::write_pcap(dir_ / "t.pcap", host_pairs());
    Config c = testing::pcap_config({dir_ / "t.pcap"}, 2, dir_);
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    Engine engine(load_sensor_config(c));
    const RunResult r = engine.run();
    ASSERT_EQ(r.workers.size(), 2u);
    EXPECT_GT(r.workers[0].cpu_sec, 0.0);
    EXPECT_GT(r.workers[1].cpu_sec, 0.0);
    EXPECT_GT(r.reader_cpu_sec, 0.0);
    EXPECT_GT(r.output_cpu_sec, 0.0);
}

}  // namespace
}  // namespace picket::sensor::engine
