// Test-only fixtures for Engine tests that replay a pcap-file: a directory per test, Ethernet +
// IPv4 frames between 10.0.0.1 (client) and 10.0.0.2 (server), the pcap-file configuration these
// tests share and a reader of the alerts in eve.json. Packets are built with
// tests/support/frames.h, so lengths and checksums are right, and written with
// tests/support/pcap_writer.h. Also an engine run on its own thread that a failing test cannot
// leave behind.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "sensor/engine/engine.h"
#include "tests/support/frames.h"
#include "tests/support/pcap_writer.h"

namespace picket::sensor::engine::testing {

using picket::testing::write_pcap;  // classic pcap, Ethernet, one packet per second
namespace frames = picket::testing::frames;
using frames::Bytes;

// Creates <temp dir>/<prefix>-<pid>-<test name>: one directory per test, for the pcap, the
// rules and the logs.
inline std::filesystem::path make_test_dir(const std::string& prefix) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() /
        (prefix + "-" + std::to_string(getpid()) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir);
    return dir;
}

inline Bytes text(const std::string& s) {
    return Bytes(s.begin(), s.end());
}

// Ethernet + IPv4 carrying l4; to_server false swaps the addresses (server to client).
inline Bytes frame(bool to_server, uint8_t proto, const Bytes& l4) {
    frames::V4 h;
    h.proto = proto;
    if (!to_server) {
        std::swap(h.src, h.dst);
    }
    return frames::eth(0x0800, frames::ipv4(h, l4));
}

// UDP between 10.0.0.1:client_port and 10.0.0.2:53.
inline Bytes udp_frame(uint16_t client_port, bool to_server, const std::string& payload) {
    return frame(to_server, frames::kUdp,
                 to_server ? frames::udp(client_port, 53, text(payload))
                           : frames::udp(53, client_port, text(payload)));
}

// A pcap-file run over pcaps (in this order) on workers workers, logging into log_dir. The
// stats interval is longer than any test, so no periodic stats event falls within one.
inline Config pcap_config(const std::vector<std::filesystem::path>& pcaps, int workers,
                          const std::filesystem::path& log_dir) {
    Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    for (const std::filesystem::path& p : pcaps) {
        list.push_back(p.string());
    }
    c.set_value("pcap-file.paths", list);
    c.set_value("workers", YAML::Node(workers));
    c.set_value("default-log-dir", YAML::Node(log_dir.string()));
    c.set_value("stats-interval", YAML::Node(3600));
    return c;
}

// The alert events of an eve.json, in file order.
inline std::vector<nlohmann::json> read_alerts(const std::filesystem::path& eve) {
    std::vector<nlohmann::json> alerts;
    std::ifstream in(eve);
    for (std::string line; std::getline(in, line);) {
        nlohmann::json ev = nlohmann::json::parse(line);
        if (ev["event_type"] == "alert") {
            alerts.push_back(ev);
        }
    }
    return alerts;
}

// engine.run() on a thread of its own. A test that gives up early (an ASSERT_* after a wait
// that timed out) returns with the run still going: the destructor then stops the engine and
// joins, instead of std::thread's destructor aborting the whole test binary.
class BackgroundRun {
public:
    explicit BackgroundRun(Engine& engine)
        : engine_(engine), thread_([this] { result_ = engine_.run(); }) {}
    ~BackgroundRun() {
        if (thread_.joinable()) {
            engine_.stop();
            thread_.join();
        }
    }
    BackgroundRun(const BackgroundRun&) = delete;
    BackgroundRun& operator=(const BackgroundRun&) = delete;

    // Waits for the run to end by itself (offline input exhausted).
    const RunResult& join() {
        thread_.join();
        return result_;
    }
    const RunResult& stop_and_join() {
        engine_.stop();
        return join();
    }

private:
    Engine& engine_;
    RunResult result_;
    std::thread thread_;
};

}  // namespace picket::sensor::engine::testing
