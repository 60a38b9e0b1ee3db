// EVE drop records in IPS mode (--simulate-ips) on crafted pcaps, against Suricata 7's: the
// "alert" object names the rule that dropped the packet, also a noalert one (Suricata's
// PacketAlerts.drop), and only on that packet; outputs.eve-log.types.drop `alerts: no` leaves
// it out; `flows: start` logs the first drop of each direction plus every packet a rule
// dropped itself, `flows: all` every dropped packet.
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
using testing::Bytes;
using testing::udp_frame;

class DropRecordTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = testing::make_test_dir("picket-drop-record"); }
    void TearDown() override { fs::remove_all(dir_); }

    // Runs the frames in IPS mode with the drop record's alerts and flows options (Picket's
    // map layout of outputs); fills drops_ and alerts_.
    void run(const std::vector<Bytes>& frames, const std::string& rules, bool alerts,
             const std::string& flows) {
        testing::write_pcap(dir_ / "t.pcap", frames);
        std::ofstream(dir_ / "t.rules") << rules;
        Config c = testing::pcap_config({dir_ / "t.pcap"}, 1, dir_);
        c.set_value("ips.simulate", YAML::Node(true));
        c.set_value("outputs.eve.drop.alerts", YAML::Node(alerts));
        c.set_value("outputs.eve.drop.flows", YAML::Node(flows));
        SensorConfig sc = load_sensor_config(c);
        sc.detect.rule_files = {(dir_ / "t.rules").string()};
        Engine engine(sc);
        RunResult r = engine.run();
        ASSERT_EQ(r.exit_code, 0) << r.error;
        std::ifstream in(dir_ / "eve.json");
        std::string line;
        while (std::getline(in, line)) {
            nlohmann::json j = nlohmann::json::parse(line);
            if (j["event_type"] == "drop") {
                drops_.push_back(j);
            } else if (j["event_type"] == "alert") {
                alerts_.push_back(j);
            }
        }
    }

    fs::path dir_;
    std::vector<nlohmann::json> drops_;
    std::vector<nlohmann::json> alerts_;
};

// Flow 1000: "hello", "evil" (packet 2), "after", the server's "reply", "evil" again (packet
// 5); flow 1001: "benign".
std::vector<Bytes> frames() {
    return {udp_frame(1000, true, "hello"), udp_frame(1000, true, "evil"),
            udp_frame(1000, true, "after"), udp_frame(1000, false, "reply"),
            udp_frame(1000, true, "evil"),  udp_frame(1001, true, "benign")};
}

// A header-only noalert drop (bug-4663's "drop tcp any any -> any any (noalert; sid:1;)"):
// the flow is dropped from its first packet; only that packet's record names the rule.
TEST_F(DropRecordTest, NoalertFlowDropNamesItsRuleOnTheFirstDropOnly) {
    run(frames(), "drop udp 10.0.0.1 1000 -> any any (msg:\"quiet\"; noalert; sid:7; rev:3;)\n",
        true, "all");
    EXPECT_EQ(alerts_.size(), 0u);
    ASSERT_EQ(drops_.size(), 5u);
    EXPECT_EQ(drops_[0]["pcap_cnt"], 1);
    EXPECT_EQ(drops_[0]["drop"]["reason"], "rules");
    EXPECT_EQ(drops_[0]["alert"],
              nlohmann::json::parse(R"({"action":"blocked","gid":1,"signature_id":7,"rev":3,)"
                                    R"("signature":"quiet","category":"","severity":3})"));
    for (size_t i = 1; i < drops_.size(); ++i) {
        EXPECT_EQ(drops_[i]["pcap_cnt"], i + 1);
        EXPECT_EQ(drops_[i]["drop"]["reason"], "flow drop");
        EXPECT_FALSE(drops_[i].contains("alert")) << i;
    }
}

// A noalert drop on the packet's payload: each dropped packet's record names the rule.
TEST_F(DropRecordTest, NoalertPacketDropNamesItsRuleOnEachDrop) {
    run(frames(), "drop udp any any -> any any (content:\"evil\"; noalert; sid:8;)\n", true, "all");
    EXPECT_EQ(alerts_.size(), 0u);
    ASSERT_EQ(drops_.size(), 2u);
    EXPECT_EQ(drops_[0]["pcap_cnt"], 2);
    EXPECT_EQ(drops_[1]["pcap_cnt"], 5);
    EXPECT_EQ(drops_[0]["alert"]["signature_id"], 8);
    EXPECT_EQ(drops_[1]["alert"]["signature_id"], 8);
}

// flows: start logs once per direction of a dropped flow, but a packet a rule dropped itself
// is logged anyway (Suricata's JsonDropLogCondition).
TEST_F(DropRecordTest, FlowsStartStillLogsEveryRuleDrop) {
    run(frames(), "drop udp any any -> any any (content:\"evil\"; noalert; sid:8;)\n", true,
        "start");
    ASSERT_EQ(drops_.size(), 2u);
    EXPECT_EQ(drops_[0]["pcap_cnt"], 2);
    EXPECT_EQ(drops_[1]["pcap_cnt"], 5);
}

// flows: start on a flow drop: the first drop of each direction.
TEST_F(DropRecordTest, FlowsStartLogsTheFirstDropOfEachDirection) {
    run(frames(), "drop udp 10.0.0.1 1000 -> any any (noalert; sid:7;)\n", true, "start");
    ASSERT_EQ(drops_.size(), 2u);
    EXPECT_EQ(drops_[0]["pcap_cnt"], 1);
    EXPECT_EQ(drops_[1]["pcap_cnt"], 4);  // the server's reply
    EXPECT_EQ(drops_[0]["alert"]["signature_id"], 7);
    EXPECT_FALSE(drops_[1].contains("alert"));
}

// alerts: no: no "alert" object, whether the rule alerts or not; the alert record stays.
TEST_F(DropRecordTest, AlertsNoLeavesTheAlertObjectOut) {
    run(frames(), "drop udp any any -> any any (content:\"evil\"; sid:9;)\n", false, "all");
    ASSERT_EQ(alerts_.size(), 2u);
    ASSERT_EQ(drops_.size(), 2u);
    EXPECT_FALSE(drops_[0].contains("alert"));
    EXPECT_FALSE(drops_[1].contains("alert"));
}

}  // namespace
}  // namespace picket::sensor::engine
