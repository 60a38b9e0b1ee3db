// What an alert carries of its flow beyond the rule, on crafted pcaps through the whole engine:
// Suricata's top-level "metadata":{"flowbits":[...]} with the bits set as of the alert, the
// HTTP bodies in the alert's "http" object (outputs.eve.alert.http-body /
// http-body-printable), and both gone with metadata: no.
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
using nlohmann::json;
using testing::Bytes;
using testing::text;
using testing::udp_frame;

class AlertMetadataTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = testing::make_test_dir("picket-alert-metadata"); }
    void TearDown() override { fs::remove_all(dir_); }

    // Runs the frames against the rules with the given outputs.eve.alert options; the alerts
    // are returned in file order.
    std::vector<json> run(const std::vector<Bytes>& frames, const std::string& rules,
                          const std::vector<std::pair<std::string, bool>>& alert_options = {}) {
        testing::write_pcap(dir_ / "t.pcap", frames);
        std::ofstream(dir_ / "t.rules") << rules;
        fs::remove(dir_ / "eve.json");  // a second run in the same test starts afresh
        Config c = testing::pcap_config({dir_ / "t.pcap"}, 1, dir_);
        for (const auto& [key, value] : alert_options) {
            c.set_value("outputs.eve.alert." + key, YAML::Node(value));
        }
        SensorConfig sc = load_sensor_config(c);
        sc.detect.rule_files = {(dir_ / "t.rules").string()};
        Engine engine(sc);
        RunResult r = engine.run();
        EXPECT_EQ(r.exit_code, 0) << r.error;
        return testing::read_alerts(dir_ / "eve.json");
    }

    fs::path dir_;
};

// sid 1 sets two bits, sid 2 checks one, sid 3 unsets it; sid 4 alerts on another flow that
// has no bit set.
constexpr const char* kFlowbitRules =
    "alert udp any any -> any any (msg:\"login\"; content:\"login\"; "
    "flowbits:set,logged_in; flowbits:set,ET.user.seen; sid:1;)\n"
    "alert udp any any -> any any (msg:\"cmd\"; content:\"cmd\"; flowbits:isset,logged_in; "
    "sid:2;)\n"
    "alert udp any any -> any any (msg:\"logout\"; content:\"logout\"; "
    "flowbits:unset,logged_in; sid:3;)\n"
    "alert udp any any -> any any (msg:\"other\"; content:\"other\"; sid:4;)\n";

std::vector<Bytes> flowbit_frames() {
    return {udp_frame(1000, true, "login"), udp_frame(1000, true, "cmd"),
            udp_frame(1000, true, "logout"), udp_frame(1001, true, "other")};
}

TEST_F(AlertMetadataTest, FlowbitsOfTheFlowAsOfTheAlert) {
    const std::vector<json> alerts = run(flowbit_frames(), kFlowbitRules);
    ASSERT_EQ(alerts.size(), 4u);
    EXPECT_EQ(alerts[0]["alert"]["signature_id"], 1);
    // The alerting rule's own set is applied first, as in Suricata.
    EXPECT_EQ(alerts[0]["metadata"], json::parse(R"({"flowbits":["logged_in","ET.user.seen"]})"));
    EXPECT_EQ(alerts[1]["alert"]["signature_id"], 2);
    EXPECT_EQ(alerts[1]["metadata"], json::parse(R"({"flowbits":["logged_in","ET.user.seen"]})"));
    EXPECT_EQ(alerts[2]["alert"]["signature_id"], 3);
    EXPECT_EQ(alerts[2]["metadata"], json::parse(R"({"flowbits":["ET.user.seen"]})"));
    EXPECT_EQ(alerts[3]["alert"]["signature_id"], 4);
    EXPECT_FALSE(alerts[3].contains("metadata")) << alerts[3].dump();
}

TEST_F(AlertMetadataTest, MetadataNoDropsTheFlowbits) {
    const std::vector<json> alerts = run(flowbit_frames(), kFlowbitRules, {{"metadata", false}});
    ASSERT_EQ(alerts.size(), 4u);
    for (const json& a : alerts) {
        EXPECT_FALSE(a.contains("metadata")) << a.dump();
    }
}

// pcre captures into a flow variable (named group) and packet variables (the capture list of
// Suricata's eve-metadata test), with a flowint and a flowbit: the alert's "metadata" as
// Suricata writes it, the packet variables on their packet's alert only.
TEST_F(AlertMetadataTest, FlowvarsPktvarsAndFlowints) {
    const std::string rules =
        "alert udp any any -> any any (msg:\"ua\"; content:\"ua=\"; "
        "pcre:\"/ua=(?P<flow_ua>\\w+)/\"; flowint:n,+,1; flowbits:set,seen; sid:1;)\n"
        "alert udp any any -> any any (msg:\"uid\"; content:\"uid=\"; "
        "pcre:\"/uid=(\\d+)\\(([^)]+)\\)/, pkt:uid, pkt:username\"; sid:2;)\n";
    const std::vector<json> alerts =
        run({udp_frame(1000, true, "ua=curl"), udp_frame(1000, true, "uid=0(root)"),
             udp_frame(1000, true, "ua=wget"), udp_frame(1001, true, "uid=7(x)")},
            rules);
    ASSERT_EQ(alerts.size(), 4u);
    EXPECT_EQ(alerts[0]["metadata"], json::parse(R"({"flowbits":["seen"],"flowints":{"n":1},
                                                     "flowvars":[{"ua":"curl"}]})"));
    EXPECT_EQ(alerts[1]["metadata"],
              json::parse(R"({"flowbits":["seen"],"flowints":{"n":1},"flowvars":[{"ua":"curl"}],
                              "pktvars":[{"uid":"0"},{"username":"root"}]})"));
    EXPECT_EQ(alerts[2]["metadata"], json::parse(R"({"flowbits":["seen"],"flowints":{"n":2},
                                                     "flowvars":[{"ua":"wget"}]})"));
    // Another flow: its packet's variables only.
    EXPECT_EQ(alerts[3]["metadata"], json::parse(R"({"pktvars":[{"uid":"7"},{"username":"x"}]})"));
    const std::vector<json> quiet =
        run({udp_frame(1000, true, "uid=0(root)")}, rules, {{"metadata", false}});
    ASSERT_EQ(quiet.size(), 1u);
    EXPECT_FALSE(quiet[0].contains("metadata")) << quiet[0].dump();
}

// One HTTP transaction over a whole TCP session between 10.0.0.1:40000 and 10.0.0.2:80.
std::vector<Bytes> http_frames(const std::string& request, const std::string& response) {
    const uint32_t c0 = 1000, s0 = 5000;
    auto seg = [](bool to_server, uint8_t flags, uint32_t seq, uint32_t ack,
                  const std::string& payload) {
        Bytes t = to_server ? frames::tcp(40000, 80, flags, {}, text(payload))
                            : frames::tcp(80, 40000, flags, {}, text(payload));
        frames::set_tcp_numbers(t, seq, ack, 65535);
        return testing::frame(to_server, frames::kTcp, t);
    };
    const auto req = static_cast<uint32_t>(request.size());
    const auto resp = static_cast<uint32_t>(response.size());
    return {seg(true, 0x02, c0 - 1, 0, ""),
            seg(false, 0x12, s0 - 1, c0, ""),
            seg(true, 0x10, c0, s0, ""),
            seg(true, 0x18, c0, s0, request),
            seg(false, 0x10, s0, c0 + req, ""),
            seg(false, 0x18, s0, c0 + req, response),
            seg(true, 0x10, c0 + req, s0 + resp, ""),
            seg(true, 0x11, c0 + req, s0 + resp, ""),
            seg(false, 0x11, s0 + resp, c0 + req + 1, ""),
            seg(true, 0x10, c0 + req + 1, s0 + resp + 1, "")};
}

const std::string kRequest =
    "POST /upload HTTP/1.1\r\nHost: example.test\r\nContent-Length: 11\r\n\r\nuser=a\x01\"b\\c";
const std::string kResponse =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nok\r\n\xff!";
constexpr const char* kHttpRule =
    "alert http any any -> any any (msg:\"response\"; http.stat_code; content:\"200\"; "
    "sid:10;)\n";

TEST_F(AlertMetadataTest, HttpBodiesBase64AndPrintable) {
    const std::vector<json> alerts = run(http_frames(kRequest, kResponse), kHttpRule,
                                         {{"http-body", true}, {"http-body-printable", true}});
    ASSERT_EQ(alerts.size(), 1u);
    const json& http = alerts[0]["http"];
    EXPECT_EQ(http["url"], "/upload");
    // base64 of "user=a\x01\"b\\c" and of "ok\r\n\xff!".
    EXPECT_EQ(http["http_request_body"], "dXNlcj1hASJiXGM=");
    EXPECT_EQ(http["http_request_body_printable"], "user=a.\"b\\c");
    EXPECT_EQ(http["http_response_body"], "b2sNCv8h");
    EXPECT_EQ(http["http_response_body_printable"], "ok\r\n.!");
}

TEST_F(AlertMetadataTest, HttpBodyAloneAndNotWithoutMetadata) {
    std::vector<json> alerts =
        run(http_frames(kRequest, kResponse), kHttpRule, {{"http-body", true}});
    ASSERT_EQ(alerts.size(), 1u);
    EXPECT_EQ(alerts[0]["http"]["http_request_body"], "dXNlcj1hASJiXGM=");
    EXPECT_FALSE(alerts[0]["http"].contains("http_request_body_printable"));
    // By default (and with metadata: no, which the bodies need) no body is written.
    for (const auto& options : std::vector<std::vector<std::pair<std::string, bool>>>{
             {}, {{"http-body", true}, {"metadata", false}}}) {
        alerts = run(http_frames(kRequest, kResponse), kHttpRule, options);
        ASSERT_EQ(alerts.size(), 1u);
        EXPECT_EQ(alerts[0]["http"]["url"], "/upload");
        EXPECT_FALSE(alerts[0]["http"].contains("http_request_body")) << alerts[0].dump();
        EXPECT_FALSE(alerts[0]["http"].contains("http_response_body")) << alerts[0].dump();
    }
}

}  // namespace
}  // namespace picket::sensor::engine
