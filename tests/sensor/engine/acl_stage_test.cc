// The ACL stage (acl-file, docs/acl.md) on crafted pcaps through the Engine: drop is counted and,
// with ips.simulate, blocks the packet; bypass stops the inspection of the rest of the flow;
// pass skips detection for its packet only; a bad acl.rules fails the load with its file:line
// and a failed reload keeps the running generation. Also IP-only detection rules through the
// classifier (detect.ip-only-acl) against the address index on a random rule set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/rule.h"
#include "sensor/engine/engine.h"
#include "tests/sensor/decode/packet_builder.h"
#include "tests/sensor/engine/pcap_fixture.h"

namespace picket::sensor::engine {
namespace {

namespace fs = std::filesystem;
namespace tb = decode::testing;
using tb::Bytes;
using testing::udp_frame;

constexpr const char* kHelloRule =
    "alert udp any any -> any any (msg:\"hello\"; content:\"hello\"; sid:1;)\n";

class AclStageTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = testing::make_test_dir("picket-acl"); }
    void TearDown() override { fs::remove_all(dir_); }

    // The configuration for frames, kHelloRule and (unless empty) acl as acl.rules.
    SensorConfig config(const std::vector<Bytes>& frames, const std::string& acl, bool ips) {
        testing::write_pcap(dir_ / "t.pcap", frames);
        std::ofstream(dir_ / "t.rules") << kHelloRule;
        Config c = testing::pcap_config({dir_ / "t.pcap"}, 1, dir_);
        c.set_value("ips.simulate", YAML::Node(ips));
        if (!acl.empty()) {
            std::ofstream(dir_ / "acl.rules") << acl;
            c.set_value("acl-file", YAML::Node((dir_ / "acl.rules").string()));
        }
        SensorConfig sc = load_sensor_config(c);
        sc.detect.rule_files = {(dir_ / "t.rules").string()};
        return sc;
    }

    StatsSnapshot run(Engine& engine) {
        RunResult r = engine.run();
        EXPECT_EQ(r.exit_code, 0) << r.error;
        alert_ports_.clear();
        for (const nlohmann::json& ev : testing::read_alerts(dir_ / "eve.json")) {
            alert_ports_.push_back(ev["src_port"].get<int>());
        }
        return r.stats;
    }

    StatsSnapshot run(const std::vector<Bytes>& frames, const std::string& acl, bool ips) {
        Engine engine(config(frames, acl, ips));
        return run(engine);
    }

    fs::path dir_;
    std::vector<int> alert_ports_;  // source port of each alert, in order
};

// Flow 1000's client packets are dropped by the ACL; flow 1001 is inspected.
std::vector<Bytes> two_flows() {
    return {udp_frame(1000, true, "hello"), udp_frame(1000, true, "hello"),
            udp_frame(1001, true, "hello")};
}

constexpr const char* kDropAcl = "# flow 1000\ndrop udp any 1000 -> any 53\n";

TEST_F(AclStageTest, DropIsBlockedInIpsMode) {
    StatsSnapshot s = run(two_flows(), kDropAcl, /*ips=*/true);
    EXPECT_EQ(s.get("filter.acl.drop"), 2u);
    EXPECT_EQ(s.get("filter.acl.nomatch"), 1u);
    EXPECT_EQ(s.get("filter.acl.pass"), 0u);
    EXPECT_EQ(s.get("filter.acl.bypass"), 0u);
    EXPECT_EQ(s.get("filter.acl.rules"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 2u);
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 2u);
    EXPECT_EQ(s.get("ips.accepted"), 1u);
    EXPECT_EQ(alert_ports_, std::vector<int>({1001}));  // dropped packets are not inspected
}

TEST_F(AclStageTest, DropIsOnlyCountedInPassiveMode) {
    StatsSnapshot s = run(two_flows(), kDropAcl, /*ips=*/false);
    EXPECT_EQ(s.get("filter.acl.drop"), 2u);
    EXPECT_EQ(s.get("filter.acl.nomatch"), 1u);
    EXPECT_FALSE(s.has("ips.blocked"));
    EXPECT_EQ(alert_ports_, std::vector<int>({1001}));
}

TEST_F(AclStageTest, BypassStopsTheRestOfTheFlow) {
    // Only the client's first packet matches the ACL; the reply and the client's next packet
    // belong to the bypassed flow and are neither looked up nor inspected.
    StatsSnapshot s = run({udp_frame(1000, true, "hello"), udp_frame(1000, false, "hello"),
                           udp_frame(1000, true, "hello"), udp_frame(1001, true, "hello")},
                          "bypass udp any 1000 -> any 53\n", /*ips=*/true);
    EXPECT_EQ(s.get("filter.acl.bypass"), 1u);
    EXPECT_EQ(s.get("filter.acl.nomatch"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 0u);
    EXPECT_EQ(s.get("ips.accepted"), 4u);
    EXPECT_EQ(alert_ports_, std::vector<int>({1001}));
}

TEST_F(AclStageTest, PassSkipsDetectionForItsPacketOnly) {
    // The reply (53 -> 1000) matches no ACL rule and is inspected.
    StatsSnapshot s = run({udp_frame(1000, true, "hello"), udp_frame(1000, false, "hello"),
                           udp_frame(1000, true, "hello")},
                          "pass udp any 1000 -> any 53\n", /*ips=*/false);
    EXPECT_EQ(s.get("filter.acl.pass"), 2u);
    EXPECT_EQ(s.get("filter.acl.nomatch"), 1u);
    EXPECT_EQ(alert_ports_, std::vector<int>({53}));
}

TEST_F(AclStageTest, WithoutAclFileNothingChanges) {
    StatsSnapshot s = run(two_flows(), "", /*ips=*/true);
    EXPECT_FALSE(s.has("filter.acl.drop"));
    EXPECT_FALSE(s.has("filter.acl.rules"));
    EXPECT_EQ(s.get("ips.blocked"), 0u);
    EXPECT_EQ(alert_ports_, std::vector<int>({1000, 1000, 1001}));
}

TEST_F(AclStageTest, BadAclFailsTheLoadWithFileAndLine) {
    const SensorConfig sc =
        config(two_flows(), "pass udp any any -> any 53\nalert udp any any -> any any\n", true);
    try {
        Engine engine(sc);
        FAIL() << "the engine started with a bad acl.rules";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  (dir_ / "acl.rules").string() +
                      ":2: unknown action \"alert\" (expected pass, drop or bypass)");
    }
}

TEST_F(AclStageTest, FailedReloadKeepsTheRunningGeneration) {
    SensorConfig sc = config(two_flows(), kDropAcl, /*ips=*/true);
    Engine engine(sc);
    std::ofstream(dir_ / "bad.rules") << "drop udp any any -> 10.0.0.0/33 any\n";
    detect::DetectConfig next = sc.detect;
    next.acl_file = (dir_ / "bad.rules").string();
    std::string error;
    EXPECT_FALSE(engine.reload(next, nullptr, &error));
    EXPECT_EQ(error, (dir_ / "bad.rules").string() +
                         ":1: bad destination address \"10.0.0.0/33\": prefix length must be "
                         "0-32");
    // The first generation, its ACL included, still runs.
    StatsSnapshot s = run(engine);
    EXPECT_EQ(s.get("detect.reload_failures"), 1u);
    EXPECT_EQ(s.get("filter.acl.drop"), 2u);
    EXPECT_EQ(s.get("filter.acl.rules"), 1u);
    EXPECT_EQ(s.get("ips.blocked"), 2u);
    EXPECT_EQ(alert_ports_, std::vector<int>({1001}));
}

// ---------------------------------------------------------------------------------------
// IP-only rules: the classifier (detect.ip-only-acl: yes) and the address index (no) give the
// same alerts on a random rule set and random packets.

class IpOnlyDetectTest : public ::testing::Test {
protected:
    struct Loaded {
        std::shared_ptr<const detect::DetectEngine> engine;
        std::unique_ptr<detect::WorkerFlowState> flow_state;
        std::unique_ptr<detect::DetectWorker> worker;
    };

    Loaded load(const std::string& path, bool ip_only_acl) {
        detect::DetectConfig cfg;
        cfg.rule_files = {path};
        cfg.ip_only_acl = ip_only_acl;
        detect::LoadSummary sum;
        Loaded l;
        l.engine = detect::DetectEngine::load(cfg, nullptr, &sum);
        l.flow_state = std::make_unique<detect::WorkerFlowState>(l.engine->flowbit_registry());
        l.worker = std::make_unique<detect::DetectWorker>(l.engine, l.flow_state.get());
        loaded_ = sum.loaded;
        return l;
    }

    uint32_t loaded_ = 0;
};

TEST_F(IpOnlyDetectTest, ClassifierGivesTheAddressIndexAlerts) {
    const char* addrs[] = {"any",
                           "10.0.0.0/8",
                           "10.1.2.3",
                           "[10.0.0.0/16,!10.0.5.0/24]",
                           "!192.168.0.0/16",
                           "192.168.1.0/24",
                           "[10.0.0.1,192.168.1.7]",
                           "$HOME_NET",
                           "$EXTERNAL_NET",
                           "2001:db8::/32",
                           "[2001:db8::1,10.0.0.2]",
                           "172.16.0.0/12",
                           "::ffff:0:0/96"};
    const char* ports[] = {"any", "80",          "1024:", ":1023", "[80,443,8000:8080]",
                           "!53", "[1:100,!50]", "53",    "7",     "[0,40000]"};
    const char* protos[] = {"ip", "tcp", "udp", "icmp"};
    std::mt19937 rng(20240611);
    auto pick = [&](auto& arr) { return arr[rng() % std::size(arr)]; };
    std::string rules;
    for (uint32_t sid = 1; sid <= 400; ++sid) {
        const std::string proto = pick(protos);
        const bool has_ports = proto == "tcp" || proto == "udp";
        // No pass rule: one matching nearly every packet would leave no alert to compare.
        const std::string action = rng() % 10 == 0 ? "drop" : "alert";
        rules += action + " " + proto + " " + pick(addrs) + " " +
                 (has_ports ? pick(ports) : "any") + (rng() % 5 == 0 ? " <> " : " -> ") +
                 pick(addrs) + " " + (has_ports ? pick(ports) : "any") + " (msg:\"r" +
                 std::to_string(sid) + "\";" +
                 (rng() % 8 == 0 ? " content:\"ab\";" : "") +  // a few that are not IP-only
                 " sid:" + std::to_string(sid) + ";)\n";
    }
    const std::string path =
        ::testing::TempDir() + "/ip_only_" + std::to_string(getpid()) + ".rules";
    std::ofstream(path) << rules;
    Loaded acl = load(path, true);
    const uint32_t loaded_acl = loaded_;
    Loaded index = load(path, false);
    EXPECT_EQ(loaded_acl, loaded_);
    EXPECT_GT(loaded_, 300u);

    const uint8_t v4s[][4] = {{10, 0, 0, 1},    {10, 0, 5, 9},   {10, 1, 2, 3}, {192, 168, 1, 7},
                              {192, 168, 2, 2}, {172, 16, 3, 4}, {8, 8, 8, 8},  {10, 0, 0, 2}};
    const uint16_t pports[] = {80, 443, 53, 50, 1023, 1024, 8080, 40000, 7, 0};
    decode::DecodeContext dctx{decode::DecodeOptions{decode::ChecksumMode::kNo}};
    uint64_t alerts = 0;
    for (int i = 0; i < 20000; ++i) {
        const Bytes payload = {'a', 'b'};
        const uint16_t sp = pick(pports), dp = pick(pports);
        const uint32_t kind = rng() % 3;
        Bytes l4 = kind == 0   ? tb::tcp(sp, dp, 0x18, {}, payload)
                   : kind == 1 ? tb::udp(sp, dp, payload)
                               : tb::icmp(8, 0, 1, 1);
        const uint8_t proto = kind == 0 ? tb::kTcp : kind == 1 ? tb::kUdp : 1;
        Bytes frame;
        const uint32_t family = rng() % 8;
        if (family < 6) {
            tb::V4 h;
            h.proto = proto;
            std::copy_n(pick(v4s), 4, h.src);
            std::copy_n(pick(v4s), 4, h.dst);
            frame = tb::eth(0x0800, tb::ipv4(h, l4));
        } else {
            if (kind == 2) {
                continue;  // ICMPv6 would need its own builder; IPv4 ICMP covers the class
            }
            tb::V6 h;
            h.nh = proto;
            h.l4_proto = proto;
            if (family == 7) {  // a v4-mapped address in an IPv6 header: the fallback path
                const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
                std::copy_n(mapped, 16, rng() % 2 == 0 ? h.src : h.dst);
            }
            frame = tb::eth(0x86dd, tb::ipv6(h, l4));
        }
        decode::Packet p;
        decode::decode_packet(dctx, 1, frame.data(), static_cast<uint32_t>(frame.size()),
                              static_cast<uint32_t>(frame.size()), 1000000000, p);
        detect::AlertRecord a[64], b[64];
        const uint32_t na = acl.worker->inspect(p, nullptr, flow::Direction::kToServer, a, 64);
        const uint32_t nb = index.worker->inspect(p, nullptr, flow::Direction::kToServer, b, 64);
        std::vector<uint32_t> sa, sb;
        for (uint32_t k = 0; k < na; ++k) {
            sa.push_back(a[k].rule->sid);
        }
        for (uint32_t k = 0; k < nb; ++k) {
            sb.push_back(b[k].rule->sid);
        }
        ASSERT_EQ(sa, sb) << "packet " << i;

        alerts += na;
    }
    EXPECT_GT(alerts, 10000u);
    // The classifier also matches ports: it lists fewer candidates than the address index.
    EXPECT_LT(acl.worker->counters().prefilter_candidates.get(),
              index.worker->counters().prefilter_candidates.get());
    std::remove(path.c_str());
}

}  // namespace
}  // namespace picket::sensor::engine
