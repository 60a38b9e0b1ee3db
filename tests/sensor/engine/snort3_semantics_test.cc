// Where Snort 3 and Suricata define a rule's semantics differently, a Snort 3 rule gets Snort
// 3's (issue #20; docs/rules.md, "Snort 3 rules"). Each case runs crafted pcaps through the
// whole engine with a Snort 3 rule and the Suricata rule that reads the same, and checks that
// they differ where the two engines do:
// - a request its server never acknowledged, given to the HTTP parser at the flow's end: the
//   Suricata rule's http.uri matches it, the Snort 3 rule's http_uri does not;
// - service: as "OR ports": the header's ports when the flow's protocol is unknown, any port
//   when the flow is the service;
// - packets, not the raw stream: a Snort 3 rule without flow:only_stream matches each packet's
//   payload (once per packet that holds the match), a pattern split over two segments only
//   with only_stream; a midstream pickup is established for it at once;
// - Snort 3 PDUs: on an FTP flow (port 21) a Snort 3 rule that reads the stream sees each
//   acknowledged line (the ftp_server splitter's PDU) besides the packets, and does not alert
//   on a PDU again for what it alerted on a packet of it.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
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

class Snort3SemanticsTest : public ::testing::Test {
protected:
    void SetUp() override { dir_ = testing::make_test_dir("picket-snort3-semantics"); }
    void TearDown() override { fs::remove_all(dir_); }

    // Alerts per sid of the frames against the rules.
    std::map<uint32_t, int> run(const std::vector<Bytes>& frames, const std::string& rules,
                                bool midstream = false) {
        testing::write_pcap(dir_ / "t.pcap", frames);
        std::ofstream(dir_ / "t.rules") << rules;
        fs::remove(dir_ / "eve.json");
        Config c = testing::pcap_config({dir_ / "t.pcap"}, 1, dir_);
        c.set_value("stream.midstream", YAML::Node(midstream));
        SensorConfig sc = load_sensor_config(c);
        sc.detect.rule_files = {(dir_ / "t.rules").string()};
        Engine engine(sc);
        RunResult r = engine.run();
        EXPECT_EQ(r.exit_code, 0) << r.error;
        EXPECT_EQ(engine.load_summary().skipped, 0u) << engine.load_summary().to_string();
        std::map<uint32_t, int> by_sid;
        for (const json& a : testing::read_alerts(dir_ / "eve.json")) {
            ++by_sid[a["alert"]["signature_id"].get<uint32_t>()];
        }
        return by_sid;
    }

    fs::path dir_;
};

// A TCP session 10.0.0.1:40000 -> 10.0.0.2:port: the handshake (unless midstream), then each
// client segment, each acknowledged by the server when ack is true; no FIN (the run's end
// ends it).
std::vector<Bytes> session(uint16_t port, const std::vector<std::string>& client, bool ack,
                           bool handshake = true) {
    const uint32_t c0 = 1000, s0 = 5000;
    auto seg = [port](bool to_server, uint8_t flags, uint32_t seq, uint32_t ackno,
                      const std::string& payload) {
        Bytes t = to_server ? frames::tcp(40000, port, flags, {}, text(payload))
                            : frames::tcp(port, 40000, flags, {}, text(payload));
        frames::set_tcp_numbers(t, seq, ackno, 65535);
        return testing::frame(to_server, frames::kTcp, t);
    };
    std::vector<Bytes> out;
    if (handshake) {
        out = {seg(true, 0x02, c0 - 1, 0, ""), seg(false, 0x12, s0 - 1, c0, ""),
               seg(true, 0x10, c0, s0, "")};
    }
    uint32_t seq = c0;
    for (const std::string& data : client) {
        out.push_back(seg(true, 0x18, seq, s0, data));
        seq += static_cast<uint32_t>(data.size());
        if (ack) {
            out.push_back(seg(false, 0x10, s0, seq, ""));
        }
    }
    return out;
}

constexpr const char* kRequest = "GET /admin/x HTTP/1.1\r\nHost: example.test\r\n\r\n";

constexpr const char* kUriRules =
    "alert http any any -> any any (msg:\"suricata\"; http.uri; content:\"/admin\"; sid:1;)\n"
    "alert http (msg:\"snort3\"; http_uri; content:\"/admin\"; sid:2;)\n";

TEST_F(Snort3SemanticsTest, UnacknowledgedRequestIsNotInspectedBySnort3Rules) {
    EXPECT_EQ(run(session(80, {kRequest}, false), kUriRules), (std::map<uint32_t, int>{{1, 1}}));
    // Once the server acknowledged it, both languages inspect the request.
    EXPECT_EQ(run(session(80, {kRequest}, true), kUriRules),
              (std::map<uint32_t, int>{{1, 1}, {2, 1}}));
}

TEST_F(Snort3SemanticsTest, ServiceOptionIsTheServiceOrTheHeaderPorts) {
    const std::string rules =
        // Unknown protocol on the header's port: runs whatever service it names.
        "alert tcp any any -> any 2121 (msg:\"ftp or 2121\"; content:\"hello\"; service:ftp; "
        "sid:3;)\n"
        // The same as Suricata: the flow must be ftp.
        "alert ftp any any -> any 2121 (msg:\"ftp and 2121\"; content:\"hello\"; sid:4;)\n"
        // HTTP on a port the header does not name: the service is enough.
        "alert tcp any any -> any 80 (msg:\"http or 80\"; http_uri; content:\"/admin\"; "
        "service:http; sid:5;)\n"
        // A service header has no ports to fall back on.
        "alert ftp (msg:\"ftp only\"; content:\"hello\"; sid:6;)\n";
    EXPECT_EQ(run(session(2121, {"hello there\r\n"}, true), rules),
              (std::map<uint32_t, int>{{3, 1}}));
    EXPECT_EQ(run(session(8081, {kRequest}, true), rules), (std::map<uint32_t, int>{{5, 1}}));
}

TEST_F(Snort3SemanticsTest, Snort3RulesMatchPacketsAndOnlyStreamTheStream) {
    const std::string rules =
        "alert tcp any any -> any any (msg:\"suricata\"; flow:to_server,established; "
        "content:\"GNUTELLA\"; depth:8; sid:7;)\n"
        "alert tcp any any -> any any (msg:\"snort3\"; flow:to_server,established; "
        "content:\"GNUTELLA\",depth 8; sid:8;)\n"
        "alert tcp any any -> any any (msg:\"suricata split\"; flow:to_server,established; "
        "content:\"/scripts/\"; sid:9;)\n"
        "alert tcp any any -> any any (msg:\"snort3 split\"; flow:to_server,established; "
        "content:\"/scripts/\",nocase; sid:10;)\n"
        "alert tcp any any -> any any (msg:\"snort3 split stream\"; "
        "flow:to_server,established,only_stream; content:\"/scripts/\",nocase; sid:11;)\n";
    // Two messages, each in a packet of its own and acknowledged at once, then a pattern split
    // over two segments. The raw stream is inspected in chunks cut at acknowledgements (with
    // the tail before them), so depth 8 finds GNUTELLA only at the session's start for the
    // Suricata rule; the Snort 3 rule sees it at the start of each packet. The split pattern
    // is only in the stream.
    const std::vector<Bytes> frames =
        session(7777,
                {"GNUTELLA CONNECT/0.6\r\n\r\n", "GNUTELLA/0.6 200 OK\r\n\r\n", "GET /scr",
                 "ipts/ HTTP/1.0\r\n\r\n"},
                true);
    EXPECT_EQ(run(frames, rules), (std::map<uint32_t, int>{{7, 1}, {8, 2}, {9, 1}, {11, 1}}));
}

// Picket's raw stream chunks end where the app layer ends a message (an HTTP request) and
// start with the tail of the data before them, so a pattern straddling two chunks is found;
// a Snort 3 rule's stream buffer is the chunk's new bytes alone, as Snort 3's PDU starts where
// its service inspector cut the stream. depth then counts from the message's start.
TEST_F(Snort3SemanticsTest, Snort3StreamBufferStartsAtTheMessage) {
    const std::string rules =
        "alert tcp any any -> any any (msg:\"suricata\"; flow:to_server,established,only_stream; "
        "content:\"GET /second\"; depth:11; sid:13;)\n"
        "alert tcp any any -> any any (msg:\"snort3\"; flow:to_server,established,only_stream; "
        "content:\"GET /second\",depth 11; sid:14;)\n";
    const std::vector<Bytes> frames = session(
        80, {"GET /first HTTP/1.1\r\nHost: a\r\n\r\n", "GET /second HTTP/1.1\r\nHost: a\r\n\r\n"},
        true);
    EXPECT_EQ(run(frames, rules), (std::map<uint32_t, int>{{14, 1}}));
}

TEST_F(Snort3SemanticsTest, MidstreamPickupIsEstablishedForSnort3Rules) {
    const std::string rules =
        "alert tcp any any -> any any (msg:\"snort3\"; flow:to_server,established; "
        "content:\"/scripts/ \",nocase; sid:12;)\n";
    // One client packet, no handshake, nothing from the server: Snort 3's stream counts the
    // picked-up session established on that packet.
    EXPECT_EQ(run(session(80, {"GET /scripts/ HTTP/1.0\r\n\r\n"}, false, false), rules, true),
              (std::map<uint32_t, int>{{12, 1}}));
    // Without midstream pickup there is no session, so nothing is established.
    EXPECT_EQ(run(session(80, {"GET /scripts/ HTTP/1.0\r\n\r\n"}, false, false), rules, false),
              (std::map<uint32_t, int>{}));
}

TEST_F(Snort3SemanticsTest, FtpLinesAreSnort3Pdus) {
    const std::string rules =
        "alert tcp any any -> any any (msg:\"suricata\"; flow:to_server,established; "
        "content:\"RETR\"; nocase; content:\"1MB\"; distance:1; nocase; sid:15;)\n"
        "alert tcp any any -> any any (msg:\"snort3\"; flow:to_server,established; "
        "content:\"RETR\",nocase; content:\"1MB\",distance 1,nocase; sid:16;)\n"
        "alert tcp any any -> any any (msg:\"snort3 packet\"; flow:to_server,established,"
        "no_stream; content:\"RETR\",nocase; content:\"1MB\",distance 1,nocase; sid:17;)\n"
        "alert tcp any any -> any any (msg:\"snort3 line\"; flow:to_server,established; "
        "content:\"USER\",depth 4; pcre:\"/^USER\\s+anonymous\\r\\n$/\"; sid:18;)\n"
        "alert tcp any any -> any any (msg:\"snort3 stream\"; flow:to_server,established,"
        "only_stream; content:\"RETR 1MB.\",depth 9; sid:19;)\n";
    // A command split over two segments, then two commands each in a packet of its own.
    const std::vector<Bytes> split =
        session(21, {"RETR 1", "MB.zip\r\n", "USER anonymous\r\n", "RETR 1MB.tar\r\n"}, true);
    // Port 21: the Snort 3 rules see the packets and the lines. 16: the last packet, and the
    // line of the split command; the last line's PDU does not repeat the packet's alert. 18:
    // the USER packet (its PDU not again). no_stream (17): the packets only. 19 (only_stream):
    // the lines only.
    EXPECT_EQ(run(split, rules),
              (std::map<uint32_t, int>{{15, 1}, {16, 2}, {17, 1}, {18, 1}, {19, 2}}));
    // Another port, no FTP detected (no server banner): packets and Picket's raw chunks (cut at
    // the acknowledgements, each one's new bytes alone for a Snort 3 rule), so the split
    // command is not found by the Snort 3 rules.
    const std::vector<Bytes> other =
        session(2121, {"RETR 1", "MB.zip\r\n", "USER anonymous\r\n", "RETR 1MB.tar\r\n"}, true);
    EXPECT_EQ(run(other, rules),
              (std::map<uint32_t, int>{{15, 1}, {16, 1}, {17, 1}, {18, 1}, {19, 1}}));
}

}  // namespace
}  // namespace picket::sensor::engine
