#include <gtest/gtest.h>

#include "common/config.h"
#include "sensor/engine/engine.h"
#include "sensor/output/output.h"

namespace picket::sensor::engine {
namespace {

Config with_input(std::string_view yaml) {
    Config c = Config::load_string(yaml, "sensor.yaml");
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back("x.pcap");
    c.set_value("pcap-file.paths", list);
    return c;
}

TEST(SensorConfigTest, DefaultsAreSuricatas) {
    SensorConfig s = load_sensor_config(with_input(""));
    EXPECT_EQ(s.mode, CaptureMode::kPcapFile);
    EXPECT_EQ(s.pcap_paths, std::vector<std::string>{"x.pcap"});
    EXPECT_EQ(s.stats_interval_sec, 8);
    EXPECT_EQ(s.decode.checksum, decode::ChecksumMode::kAuto);
    EXPECT_EQ(s.defrag.policy, defrag::OverlapPolicy::kBsd);
    EXPECT_EQ(s.defrag.timeout_ns, 60LL * 1000000000);
    EXPECT_EQ(s.defrag.memcap, 32ULL << 20);
    EXPECT_EQ(s.flow.memcap, 128ULL << 20);
    EXPECT_EQ(s.flow.timeouts.tcp_established, 600u);
    EXPECT_EQ(s.flow.timeouts.udp_new, 30u);
    EXPECT_EQ(s.bpf_mode, capture::BpfMode::kKernel);
    EXPECT_EQ(s.queue_bytes, 8ULL << 20);
    EXPECT_EQ(s.queue_packets, 0u);
    EXPECT_FALSE(s.pcap_replay);
    EXPECT_EQ(s.pcap_loops, 1u);
    EXPECT_EQ(s.pcap_rate_pps, 0);
    EXPECT_EQ(s.metrics_listen, "");
}

TEST(SensorConfigTest, ReplayQueueAndMetricsKeys) {
    SensorConfig s = load_sensor_config(
        with_input("pcap-file: {loop: 0, rate: 2500.5}\ncapture: {queue-size: 2}\n"
                   "metrics: {listen: '127.0.0.1:9750'}\n"));
    EXPECT_TRUE(s.pcap_replay);
    EXPECT_EQ(s.pcap_loops, 0u);
    EXPECT_EQ(s.pcap_rate_pps, 2500.5);
    EXPECT_EQ(s.queue_packets, 2u);
    EXPECT_EQ(s.queue_bytes, 8ULL << 20);  // the ring keeps its default size
    EXPECT_EQ(s.metrics_listen, "127.0.0.1:9750");
    // With a unit, the ring's bytes and no packet limit.
    SensorConfig bytes = load_sensor_config(with_input("capture: {queue-size: 16MB}\n"));
    EXPECT_EQ(bytes.queue_bytes, 16ULL << 20);
    EXPECT_EQ(bytes.queue_packets, 0u);
    // Either key alone switches replay on, even one pass.
    EXPECT_TRUE(load_sensor_config(with_input("pcap-file: {loop: 1}\n")).pcap_replay);
    SensorConfig rate_only = load_sensor_config(with_input("pcap-file: {rate: 10}\n"));
    EXPECT_TRUE(rate_only.pcap_replay);
    EXPECT_EQ(rate_only.pcap_loops, 1u);
}

TEST(SensorConfigTest, ReplayAndQueueErrorsNameTheKey) {
    const auto message = [](std::string_view yaml) {
        try {
            load_sensor_config(with_input(yaml));
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_EQ(message("pcap-file: {rate: -1}\n"),
              "sensor.yaml: pcap-file.rate: must be a packet rate from 0 (unpaced) to 1e9");
    EXPECT_EQ(message("pcap-file: {loop: -1}\n"),
              "sensor.yaml:1: pcap-file.loop: value -1 out of range [0, 9223372036854775807]");
    EXPECT_EQ(message("capture: {queue-size: many}\n"),
              "sensor.yaml: capture.queue-size: expected a packet count such as 4096 or a ring "
              "size such as 8mb, got 'many'");
    EXPECT_EQ(message("capture: {queue-size: 1mb}\n"),
              "sensor.yaml: capture.queue-size: a ring size must be at least 2mb (it holds "
              "several maximum-size packets); a plain number is a packet count");
    EXPECT_EQ(message("capture: {queue-size: 0}\n"),
              "sensor.yaml:1: capture.queue-size: value 0 out of range [1, 4294967296]");
    Config live =
        Config::load_string("capture: {interface: eth9}\npcap-file: {loop: 0}\n", "sensor.yaml");
    try {
        load_sensor_config(live);
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "sensor.yaml: pcap-file.loop (--pcap-loop): replays pcap files, but none are "
                  "given (-r, pcap-file.paths)");
    }
}

TEST(SensorConfigTest, ReadsEveryMappedKey) {
    Config c = with_input(
        "workers: 3\nstats-interval: 2\nchecksum-validation: no\n"
        "capture: {bpf-filter: 'tcp', bpf-mode: user, queue-size: 4mb}\n"
        "defrag: {policy: linux, timeout: 30, memcap: 1mb}\n"
        "flow: {memcap: 64mb, hash-size: 1024}\n"
        "flow-timeouts: {tcp: {new: 5, established: 50, closed: 7}, udp: {new: 9}}\n");
    SensorConfig s = load_sensor_config(c);
    EXPECT_EQ(s.workers, 3u);
    EXPECT_EQ(s.stats_interval_sec, 2);
    EXPECT_EQ(s.decode.checksum, decode::ChecksumMode::kNo);
    EXPECT_EQ(s.bpf, "tcp");
    EXPECT_EQ(s.bpf_mode, capture::BpfMode::kUser);
    EXPECT_EQ(s.queue_bytes, 4ULL << 20);
    EXPECT_EQ(s.defrag.policy, defrag::OverlapPolicy::kLinux);
    EXPECT_EQ(s.defrag.timeout_ns, 30LL * 1000000000);
    EXPECT_EQ(s.defrag.memcap, 1ULL << 20);
    EXPECT_EQ(s.flow.memcap, 64ULL << 20);
    EXPECT_EQ(s.flow.hash_size, 1024u);
    EXPECT_EQ(s.flow.timeouts.tcp_new, 5u);
    EXPECT_EQ(s.flow.timeouts.tcp_established, 50u);
    EXPECT_EQ(s.flow.timeouts.tcp_closed, 7u);
    EXPECT_EQ(s.flow.timeouts.udp_new, 9u);
}

TEST(SensorConfigTest, InterfaceSelectsLiveBackend) {
    Config c = Config::load_string("capture: {interface: eth9, mode: pcap}\n");
    EXPECT_EQ(load_sensor_config(c).mode, CaptureMode::kPcapLive);
    c.set("capture.mode=afpacket");
    SensorConfig s = load_sensor_config(c);
    EXPECT_EQ(s.mode, CaptureMode::kAfPacket);
    EXPECT_EQ(s.afpacket.iface, "eth9");
}

TEST(SensorConfigTest, ErrorsNameTheKey) {
    EXPECT_THROW(load_sensor_config(Config()), ConfigError);
    try {
        load_sensor_config(with_input("defrag:\n  policy: sideways\n"));
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "sensor.yaml: defrag.policy: expected one of first, last, bsd, linux, windows, "
                  "solaris, bsd-right, got 'sideways'");
    }
    EXPECT_THROW(load_sensor_config(with_input("workers: 0\n")), ConfigError);
    EXPECT_THROW(load_sensor_config(with_input("capture: {bpf-mode: both}\n")), ConfigError);
    EXPECT_THROW(load_sensor_config(with_input("capture: {afpacket: {block-size: 100kb}}\n")),
                 ConfigError);
    EXPECT_THROW(load_sensor_config(with_input("stats-interval: 0\n")), ConfigError);
}

TEST(EveStatsTest, NestsDottedNames) {
    StatsSnapshot s;
    s.set("decoder.pkts", 10);
    s.set("decoder.event.ipv4.trunc_pkt", 2);
    s.set("defrag.ipv4.fragments", 3);
    nlohmann::json j = output::nest_stats(s);
    EXPECT_EQ(j["decoder"]["pkts"], 10);
    EXPECT_EQ(j["decoder"]["event"]["ipv4"]["trunc_pkt"], 2);
    EXPECT_EQ(j["defrag"]["ipv4"]["fragments"], 3);
}

TEST(EveStatsTest, LeafAndPrefixBothKept) {
    StatsSnapshot s;
    s.set("a.b", 1);
    s.set("a.b.c", 2);
    nlohmann::json j = output::nest_stats(s);
    EXPECT_EQ(j["a"]["b"]["_value"], 1);
    EXPECT_EQ(j["a"]["b"]["c"], 2);
}

TEST(EveStatsTest, StatsEventLayout) {
    StatsSnapshot s;
    s.set("capture.kernel_packets", 5);
    output::Rates r;
    r.interval_sec = 8;
    r.pkts_per_sec = 1.5;
    r.workers.push_back({0, 5, 500, 1.5, 0.0005});
    nlohmann::json ev = output::make_stats_event(1700000000000000000LL, 8, s, r);
    EXPECT_EQ(ev["event_type"], "stats");
    EXPECT_EQ(ev["timestamp"], "2023-11-14T22:13:20.000000+0000");
    EXPECT_EQ(ev["stats"]["uptime"], 8);
    EXPECT_EQ(ev["stats"]["capture"]["kernel_packets"], 5);
    EXPECT_EQ(ev["stats"]["rates"]["pkts_per_sec"], 1.5);
    EXPECT_EQ(ev["stats"]["rates"]["workers"][0]["pkts"], 5);
    EXPECT_EQ(ev["stats"]["rates"]["workers"][0]["bytes"], 500);
}

// config_fuzz crash: a scalar dpdk (or a non-scalar key in dpdk.interfaces) threw
// YAML::BadSubscript / a conversion error out of load_sensor_config; main() catches only
// ConfigError, so picket-sensor terminated.
TEST(SensorConfigTest, ScalarDpdkIsAConfigError) {
    EXPECT_THROW(load_sensor_config(with_input("dpdk: x\n")), ConfigError);
    EXPECT_THROW(load_sensor_config(with_input("dpdk:\n  interfaces:\n    - {[a]: b}\n")),
                 ConfigError);
}

}  // namespace
}  // namespace picket::sensor::engine
