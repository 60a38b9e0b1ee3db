// The ACL stage (acl-file, docs/acl.md) on crafted pcaps through the Engine: drop is counted and,
// with ips.simulate, blocks the packet; bypass stops the inspection of the rest of the flow;
// pass skips detection for its packet only; a bad acl.rules fails the load with its file:line
// and a failed reload keeps the running generation. Also IP-only detection rules through the
// classifier (detect.ip-only-acl) against the address index on a random rule set.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/rule.h"
#include "sensor/engine/engine.h"
#include "tests/sensor/engine/pcap_fixture.h"
#include "tests/support/frames.h"

namespace picket::sensor::engine {
namespace {

namespace fs = std::filesystem;
namespace tb = picket::testing::frames;
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

// Frames for the batched ACL stage: 40 UDP flows (client ports 2000-2039, five packets each,
// interleaved so that every capture batch mixes the verdicts) and two fragmented datagrams, whose
// ACL verdict comes from the reassembled datagram's ports. kMixedAcl drops 2000-2009, passes
// 2010-2019 and bypasses 2020-2029; 2030-2039 match no rule.
struct MixedTraffic {
    std::vector<Bytes> frames;
    std::vector<int> alert_ports;  // the packets detection sees (no ACL match), in order
};

constexpr const char* kMixedAcl =
    "drop udp any 2000:2009 -> any 53\n"
    "pass udp any 2010:2019 -> any 53\n"
    "bypass udp any 2020:2029 -> any 53\n";

// A UDP datagram from client_port to 53 carrying "hello ..." in two IPv4 fragments.
std::vector<Bytes> fragmented(uint16_t client_port, uint16_t ip_id) {
    tb::V4 h;
    h.proto = tb::kUdp;
    h.id = ip_id;
    const Bytes whole = tb::ipv4(h, tb::udp(client_port, 53, testing::text("hello, in pieces")));
    const Bytes l4(whole.begin() + 20, whole.end());  // UDP header and payload, checksummed
    tb::V4 first = h;
    first.frag = 0x2000;  // MF, offset 0
    tb::V4 second = h;
    second.frag = 2;  // offset 16 bytes
    return {tb::eth(0x0800, tb::ipv4(first, Bytes(l4.begin(), l4.begin() + 16))),
            tb::eth(0x0800, tb::ipv4(second, Bytes(l4.begin() + 16, l4.end())))};
}

MixedTraffic mixed_traffic() {
    MixedTraffic t;
    for (int k = 0; k < 200; ++k) {
        // Five windows of 40 packets; window w interleaves two flows of each verdict, each
        // flow's five packets 8 s apart (pcap time: one packet per second), within its
        // timeout.
        const int w = k / 40;
        const int j = k % 8;
        const auto port = static_cast<uint16_t>(2000 + 10 * (j % 4) + j / 4 + 2 * w);
        t.frames.push_back(udp_frame(port, true, "hello"));
        if (port >= 2030) {
            t.alert_ports.push_back(port);
        }
        if (k == 70) {
            for (Bytes& f : fragmented(2005, 0x4000)) {  // a dropped flow's datagram
                t.frames.push_back(std::move(f));
            }
        }
        if (k == 130) {
            for (Bytes& f : fragmented(2035, 0x4001)) {  // inspected: one alert
                t.frames.push_back(std::move(f));
            }
            t.alert_ports.push_back(2035);
        }
    }
    return t;
}

// The engine classifies a capture batch's packets with one lookup_batch() (decoded first,
// fragments ending a run since only their reassembly has ports); every packet's result is
// what one lookup() per packet gave.
TEST_F(AclStageTest, MixedVerdictsInOneBatchKeepEachPacketsResult) {
    const MixedTraffic t = mixed_traffic();
    StatsSnapshot s = run(t.frames, kMixedAcl, /*ips=*/true);
    EXPECT_EQ(s.get("decoder.pkts"), 204u);
    EXPECT_EQ(s.get("filter.acl.drop"), 51u);    // 10 flows x 5 + the reassembled datagram
    EXPECT_EQ(s.get("filter.acl.pass"), 50u);    // every packet: pass is per packet
    EXPECT_EQ(s.get("filter.acl.bypass"), 10u);  // each flow's first packet only
    EXPECT_EQ(s.get("filter.acl.nomatch"), 51u);
    EXPECT_EQ(s.get("ips.blocked"), 51u);  // the datagram's verdict falls on its last fragment
    EXPECT_EQ(s.get("ips.drop_reason.rules"), 51u);
    EXPECT_EQ(s.get("ips.accepted"), 153u);
    EXPECT_EQ(alert_ports_, t.alert_ports);
}

TEST_F(AclStageTest, MixedVerdictsInPassiveModeAreOnlyCounted) {
    const MixedTraffic t = mixed_traffic();
    StatsSnapshot s = run(t.frames, kMixedAcl, /*ips=*/false);
    EXPECT_EQ(s.get("filter.acl.drop"), 51u);
    EXPECT_EQ(s.get("filter.acl.pass"), 50u);
    EXPECT_EQ(s.get("filter.acl.bypass"), 10u);
    EXPECT_EQ(s.get("filter.acl.nomatch"), 51u);
    EXPECT_EQ(alert_ports_, t.alert_ports);
}

TEST_F(AclStageTest, BatchedAndPerPacketLookupsGiveTheSameRun) {
    const MixedTraffic t = mixed_traffic();
    SensorConfig per_packet = config(t.frames, kMixedAcl, /*ips=*/true);
    per_packet.acl_batch = false;
    Engine e1(per_packet);
    const StatsSnapshot s1 = run(e1);
    const std::vector<int> alerts1 = alert_ports_;
    fs::remove(dir_ / "eve.json");
    Engine e2(config(t.frames, kMixedAcl, /*ips=*/true));
    const StatsSnapshot s2 = run(e2);
    for (const char* key : {"filter.acl.drop", "filter.acl.pass", "filter.acl.bypass",
                            "filter.acl.nomatch", "ips.blocked", "ips.accepted"}) {
        EXPECT_EQ(s1.get(key), s2.get(key)) << key;
    }
    EXPECT_EQ(alerts1, alert_ports_);
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
// IP-only rules: the classifier (detect.ip-only-acl: yes) and the address index (no) on a
// random rule set and random packets. The expected alerts do not come from either path: a
// reference written from the rule language's semantics (below) decides, rule by rule, which
// sids a packet must raise.

// Reference semantics, after Suricata 7's rule header documentation (protocols, addresses,
// ports, direction): an IPv4 CIDR matches IPv4 addresses only and an IPv6 CIDR IPv6 addresses
// only (so ::ffff:0:0/96 matches only IPv6 packets); a list matches when any of its positive
// items matches (or it has none) and none of its negated items does; $HOME_NET is
// suricata.yaml's [192.168.0.0/16,10.0.0.0/8,172.16.0.0/12] and $EXTERNAL_NET is !$HOME_NET;
// "a:" is a..65535, ":b" 0..b; "<>" matches either way round; proto ip matches every packet,
// icmp ICMPv4 only.
struct RefAddr {
    bool neg = false;
    bool any = false;
    bool v6 = false;
    uint8_t net[16] = {};
    int prefix = 0;
};

struct RefPort {
    bool neg = false;
    uint32_t lo = 0, hi = 65535;
};

std::vector<RefAddr> ref_addresses(std::string text) {
    if (text == "$HOME_NET") {
        text = "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]";
    } else if (text == "$EXTERNAL_NET") {  // !$HOME_NET: none of the three
        text = "[!192.168.0.0/16,!10.0.0.0/8,!172.16.0.0/12]";
    }
    if (text.front() == '[') {
        text = text.substr(1, text.size() - 2);
    }
    std::vector<RefAddr> out;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
        RefAddr a;
        a.neg = item[0] == '!';
        item = item.substr(a.neg ? 1 : 0);
        if (item == "any") {
            a.any = true;
            out.push_back(a);
            continue;
        }
        const size_t slash = item.find('/');
        const std::string host = item.substr(0, slash);
        a.v6 = host.find(':') != std::string::npos;
        a.prefix =
            slash == std::string::npos ? (a.v6 ? 128 : 32) : std::stoi(item.substr(slash + 1));
        EXPECT_EQ(inet_pton(a.v6 ? AF_INET6 : AF_INET, host.c_str(), a.net), 1) << item;
        out.push_back(a);
    }
    return out;
}

std::vector<RefPort> ref_ports(std::string text) {
    if (text.front() == '[') {
        text = text.substr(1, text.size() - 2);
    }
    std::vector<RefPort> out;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
        RefPort r;
        r.neg = item[0] == '!';
        item = item.substr(r.neg ? 1 : 0);
        const size_t colon = item.find(':');
        if (item == "any") {
            // 0..65535
        } else if (colon == std::string::npos) {
            r.lo = r.hi = static_cast<uint32_t>(std::stoul(item));
        } else {
            r.lo = colon == 0 ? 0 : static_cast<uint32_t>(std::stoul(item.substr(0, colon)));
            r.hi = colon + 1 == item.size()
                       ? 65535
                       : static_cast<uint32_t>(std::stoul(item.substr(colon + 1)));
        }
        out.push_back(r);
    }
    return out;
}

// A packet address: 4 bytes for IPv4, 16 for IPv6.
struct RefIp {
    bool v6 = false;
    uint8_t b[16] = {};
};

bool ref_in(const RefAddr& a, const RefIp& ip) {
    if (a.any) {
        return true;
    }
    if (a.v6 != ip.v6) {
        return false;
    }
    for (int bit = 0; bit < a.prefix; ++bit) {
        const int mask = 0x80 >> (bit % 8);
        if ((a.net[bit / 8] & mask) != (ip.b[bit / 8] & mask)) {
            return false;
        }
    }
    return true;
}

template <typename Item, typename Value, typename In>
bool ref_list_matches(const std::vector<Item>& list, const Value& v, In in) {
    bool has_positive = false, positive_hit = false;
    for (const Item& item : list) {
        if (item.neg) {
            if (in(item, v)) {
                return false;
            }
        } else {
            has_positive = true;
            positive_hit = positive_hit || in(item, v);
        }
    }
    return !has_positive || positive_hit;
}

struct RefRule {
    uint32_t sid = 0;
    std::string proto;  // ip, tcp, udp, icmp
    std::vector<RefAddr> src, dst;
    std::vector<RefPort> sp, dp;
    bool both_ways = false;
    bool content_ab = false;
};

struct RefPacket {
    std::string proto;  // tcp, udp, icmp
    RefIp src, dst;
    uint16_t sp = 0, dp = 0;
    bool payload_ab = false;
};

bool ref_one_way(const RefRule& r, const RefIp& src, const RefIp& dst, uint16_t sp, uint16_t dp,
                 bool has_ports) {
    auto addr_in = [](const RefAddr& a, const RefIp& ip) { return ref_in(a, ip); };
    auto port_in = [](const RefPort& p, uint16_t v) { return v >= p.lo && v <= p.hi; };
    return ref_list_matches(r.src, src, addr_in) && ref_list_matches(r.dst, dst, addr_in) &&
           (!has_ports ||
            (ref_list_matches(r.sp, sp, port_in) && ref_list_matches(r.dp, dp, port_in)));
}

bool ref_matches(const RefRule& r, const RefPacket& p) {
    if (r.proto != "ip" && r.proto != p.proto) {
        return false;
    }
    if (r.content_ab && !p.payload_ab) {
        return false;
    }
    const bool ports = r.proto == "tcp" || r.proto == "udp";
    return ref_one_way(r, p.src, p.dst, p.sp, p.dp, ports) ||
           (r.both_ways && ref_one_way(r, p.dst, p.src, p.dp, p.sp, ports));
}

std::string describe(const RefPacket& p) {
    char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
    inet_ntop(p.src.v6 ? AF_INET6 : AF_INET, p.src.b, src, sizeof src);
    inet_ntop(p.dst.v6 ? AF_INET6 : AF_INET, p.dst.b, dst, sizeof dst);
    return p.proto + " " + src + ":" + std::to_string(p.sp) + " -> " + dst + ":" +
           std::to_string(p.dp);
}

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
        // Every matching rule is reported: no cut at Suricata's default of 15 per packet.
        cfg.packet_alert_max = kAlertCap;
        Loaded l;
        l.engine = detect::DetectEngine::load(cfg, nullptr, &summary_);
        l.flow_state = std::make_unique<detect::WorkerFlowState>(l.engine->flowbit_registry());
        l.worker = std::make_unique<detect::DetectWorker>(l.engine, l.flow_state.get());
        return l;
    }

    static constexpr uint32_t kAlertCap = 512;
    detect::LoadSummary summary_;
};

TEST_F(IpOnlyDetectTest, ClassifierAndAddressIndexGiveTheReferenceAlerts) {
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
                           "172.16.0.0/12"};
    // Neither ::ffff:0:0/96 in a rule nor a v4-mapped address in an IPv6 header: the engine
    // matches both as IPv4, unlike Suricata (see V4MappedAddressesAreIpv6 below).
    const char* ports[] = {"any", "80",          "1024:", ":1023", "[80,443,8000:8080]",
                           "!53", "[1:100,!50]", "53",    "7",     "[0,40000]"};
    const char* protos[] = {"ip", "tcp", "udp", "icmp"};
    std::mt19937 rng(20240611);
    auto pick = [&](auto& arr) { return arr[rng() % std::size(arr)]; };
    std::string rules;
    std::vector<RefRule> ref;
    for (uint32_t sid = 1; sid <= 400; ++sid) {
        // One draw per statement: the order of the draws is fixed, not left to the compiler.
        RefRule r;
        r.sid = sid;
        r.proto = pick(protos);
        const bool has_ports = r.proto == "tcp" || r.proto == "udp";
        // No pass rule: one matching nearly every packet would leave no alert to compare.
        const std::string action = rng() % 10 == 0 ? "drop" : "alert";
        const std::string src = pick(addrs);
        const std::string sp = has_ports ? pick(ports) : "any";
        r.both_ways = rng() % 5 == 0;
        const std::string dst = pick(addrs);
        const std::string dp = has_ports ? pick(ports) : "any";
        r.content_ab = rng() % 8 == 0;  // a few that are not IP-only
        rules += action + " " + r.proto + " " + src + " " + sp + (r.both_ways ? " <> " : " -> ") +
                 dst + " " + dp + " (msg:\"r" + std::to_string(sid) + "\";" +
                 (r.content_ab ? " content:\"ab\";" : "") + " sid:" + std::to_string(sid) + ";)\n";
        r.src = ref_addresses(src);
        r.dst = ref_addresses(dst);
        r.sp = ref_ports(sp);
        r.dp = ref_ports(dp);
        ref.push_back(std::move(r));
    }
    const std::string path =
        ::testing::TempDir() + "/ip_only_" + std::to_string(getpid()) + ".rules";
    std::ofstream(path) << rules;
    Loaded acl = load(path, true);
    // Every rule above is valid Suricata: all 400 load, on both paths.
    EXPECT_EQ(summary_.loaded, 400u) << summary_.to_string();
    Loaded index = load(path, false);
    EXPECT_EQ(summary_.loaded, 400u) << summary_.to_string();

    const uint8_t v4s[][4] = {{10, 0, 0, 1},    {10, 0, 5, 9},   {10, 1, 2, 3}, {192, 168, 1, 7},
                              {192, 168, 2, 2}, {172, 16, 3, 4}, {8, 8, 8, 8},  {10, 0, 0, 2}};
    const uint16_t pports[] = {80, 443, 53, 50, 1023, 1024, 8080, 40000, 7, 0};
    decode::DecodeContext dctx{decode::DecodeOptions{decode::ChecksumMode::kNo}};
    uint64_t alerts = 0;
    for (int i = 0; i < 20000; ++i) {
        const Bytes payload = {'a', 'b'};
        const uint16_t sp = pick(pports);
        const uint16_t dp = pick(pports);
        const uint32_t kind = rng() % 3;
        Bytes l4 = kind == 0   ? tb::tcp(sp, dp, 0x18, {}, payload)
                   : kind == 1 ? tb::udp(sp, dp, payload)
                               : tb::icmp(8, 0, 1, 1);
        const uint8_t proto = kind == 0 ? tb::kTcp : kind == 1 ? tb::kUdp : 1;
        RefPacket rp;
        rp.proto = kind == 0 ? "tcp" : kind == 1 ? "udp" : "icmp";
        rp.sp = kind == 2 ? 0 : sp;
        rp.dp = kind == 2 ? 0 : dp;
        rp.payload_ab = kind != 2;  // the echo request carries no data
        Bytes frame;
        const uint32_t family = rng() % 8;
        if (family < 6) {
            tb::V4 h;
            h.proto = proto;
            std::copy_n(pick(v4s), 4, h.src);
            std::copy_n(pick(v4s), 4, h.dst);
            std::copy_n(h.src, 4, rp.src.b);
            std::copy_n(h.dst, 4, rp.dst.b);
            frame = tb::eth(0x0800, tb::ipv4(h, l4));
        } else {
            if (kind == 2) {
                continue;  // ICMPv6 would need its own builder; IPv4 ICMP covers the class
            }
            tb::V6 h;
            h.nh = proto;
            h.l4_proto = proto;
            rp.src.v6 = rp.dst.v6 = true;
            std::copy_n(h.src, 16, rp.src.b);
            std::copy_n(h.dst, 16, rp.dst.b);
            frame = tb::eth(0x86dd, tb::ipv6(h, l4));
        }
        std::vector<uint32_t> want;
        for (const RefRule& r : ref) {
            if (ref_matches(r, rp)) {
                want.push_back(r.sid);
            }
        }
        decode::Packet p;
        decode::decode_packet(dctx, 1, frame.data(), static_cast<uint32_t>(frame.size()),
                              static_cast<uint32_t>(frame.size()), 1000000000, p);
        detect::AlertRecord a[kAlertCap], b[kAlertCap];
        const uint32_t na =
            acl.worker->inspect(p, nullptr, flow::Direction::kToServer, a, kAlertCap);
        const uint32_t nb =
            index.worker->inspect(p, nullptr, flow::Direction::kToServer, b, kAlertCap);
        // Compared as sets: the output order (drop before alert, then sid) is not the point.
        std::vector<uint32_t> sa, sb;
        for (uint32_t k = 0; k < na; ++k) {
            sa.push_back(a[k].rule->sid);
        }
        for (uint32_t k = 0; k < nb; ++k) {
            sb.push_back(b[k].rule->sid);
        }
        std::sort(sa.begin(), sa.end());
        std::sort(sb.begin(), sb.end());
        ASSERT_EQ(sa, want) << "classifier, packet " << i << ": " << describe(rp);
        ASSERT_EQ(sb, want) << "address index, packet " << i << ": " << describe(rp);

        alerts += na;
    }
    EXPECT_GT(alerts, 10000u);
    // The classifier also matches ports: it lists fewer candidates than the address index.
    EXPECT_LT(acl.worker->counters().prefilter_candidates.get(),
              index.worker->counters().prefilter_candidates.get());
    std::remove(path.c_str());
}

// Suricata keeps IPv4 and IPv6 rule addresses apart (an IPv4 packet is matched against the
// IPv4 ranges, an IPv6 one against the IPv6 ranges; a negation such as $EXTERNAL_NET leaves
// every IPv6 address in). So ::ffff:0:0/96 is an IPv6 range that no IPv4 packet falls in, and
// an IPv6 packet from ::ffff:10.0.0.1 is IPv6 traffic: outside 10.0.0.0/8, inside
// $EXTERNAL_NET. Picket stores IPv4 addresses v4-mapped and matches both the other way round
// today, on both the classifier and the address index; disabled until sensor/detect decides
// (reported under issue #27).
TEST_F(IpOnlyDetectTest, DISABLED_V4MappedAddressesAreIpv6) {
    const std::string path =
        ::testing::TempDir() + "/v4_mapped_" + std::to_string(getpid()) + ".rules";
    std::ofstream(path) << "alert ip ::ffff:0:0/96 any -> any any (msg:\"mapped\"; sid:1;)\n"
                           "alert ip 10.0.0.0/8 any -> any any (msg:\"ten\"; sid:2;)\n"
                           "alert ip $EXTERNAL_NET any -> any any (msg:\"external\"; sid:3;)\n";
    decode::DecodeContext dctx{decode::DecodeOptions{decode::ChecksumMode::kNo}};
    auto sids = [&](Loaded& l, const Bytes& frame) {
        decode::Packet p;
        decode::decode_packet(dctx, 1, frame.data(), static_cast<uint32_t>(frame.size()),
                              static_cast<uint32_t>(frame.size()), 1000000000, p);
        detect::AlertRecord out[8];
        const uint32_t n = l.worker->inspect(p, nullptr, flow::Direction::kToServer, out, 8);
        std::vector<uint32_t> got;
        for (uint32_t k = 0; k < n; ++k) {
            got.push_back(out[k].rule->sid);
        }
        std::sort(got.begin(), got.end());
        return got;
    };
    tb::V4 v4;  // 10.0.0.1 -> 10.0.0.2
    v4.proto = tb::kUdp;
    const Bytes ipv4 = tb::eth(0x0800, tb::ipv4(v4, tb::udp(1000, 53, {})));
    tb::V6 v6;  // ::ffff:10.0.0.1 -> 2001:db8::2
    v6.nh = tb::kUdp;
    v6.l4_proto = tb::kUdp;
    const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    std::copy_n(mapped, 16, v6.src);
    const Bytes ipv6 = tb::eth(0x86dd, tb::ipv6(v6, tb::udp(1000, 53, {})));
    for (const bool classifier : {true, false}) {
        Loaded l = load(path, classifier);
        EXPECT_EQ(sids(l, ipv4), std::vector<uint32_t>({2})) << "ip-only-acl " << classifier;
        EXPECT_EQ(sids(l, ipv6), std::vector<uint32_t>({1, 3})) << "ip-only-acl " << classifier;
    }
    std::remove(path.c_str());
}

}  // namespace
}  // namespace picket::sensor::engine
