// libFuzzer target for the command-line parsers that take input. picket-sensor and
// picket-manager parse their options in main() with CLI11 and hand the values to these
// validation functions, which are fuzzed on the input text (each on the whole text):
//   --queue Q[:R]         capture::parse_queue_range   (throws CaptureError)
//   --bridge IF1:IF2      capture::parse_bridge        (throws CaptureError)
//   --metrics-listen      metrics::check_listen_address
//   --manager HOST:PORT   agent::check_manager_address, is_loopback_address, check_insecure
//   --labels k=v,...      agent::parse_labels (a parsed key/value must re-parse the same)
//   --set KEY=VALUE       Config::set (throws ConfigError)
//   sizes / durations     parse_size, Config::get_size / get_seconds on the text as a value
//   --name                store::validate_sensor_name
// picketctl parses in cli::run(), which is fuzzed whole: the input split at NUL bytes is its
// argv. So that no input reaches the network or the file system, arguments starting with
// "--m" (--manager) or holding '/' or ".." are dropped, PICKETCTL_MANAGER is unset and the
// process runs in an empty directory: every command stops at its usage checks, before any
// connection. Selector syntax (--selector) is also parsed directly, with a round trip.
// Seed corpus: tests/fuzz/corpus/cli.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/metrics/http_exporter.h"
#include "manager/cli/picketctl.h"
#include "manager/store/store.h"
#include "sensor/agent/agent.h"
#include "sensor/capture/capture.h"
#include "sensor/capture/inline.h"

namespace {

void sensor_parsers(const std::string& text) {
    using namespace picket;
    try {
        auto q = sensor::capture::parse_queue_range(text);
        if (q.count == 0 || q.first + q.count - 1 > 65535) {
            __builtin_trap();
        }
    } catch (const sensor::capture::CaptureError&) {
    }
    try {
        auto [a, b] = sensor::capture::parse_bridge(text);
        if (a.empty() || b.empty()) {
            __builtin_trap();
        }
    } catch (const sensor::capture::CaptureError&) {
    }
    (void)metrics::check_listen_address(text);
    (void)sensor::agent::check_manager_address(text);
    (void)sensor::agent::is_loopback_address(text);
    (void)sensor::agent::check_insecure(text);
    auto labels = sensor::agent::parse_labels(text);
    if (labels.ok()) {
        std::string again;
        for (const auto& [k, v] : *labels) {
            again += (again.empty() ? "" : ",") + k + "=" + v;
        }
        auto re = sensor::agent::parse_labels(again);
        if (!re.ok() || *re != *labels) {
            __builtin_trap();
        }
    }
    uint64_t bytes = 0;
    (void)parse_size(text, &bytes);
    try {
        Config c;
        c.set(text);
        c.set("x=" + text);
        (void)c.get_size("x", 0);
        (void)c.get_seconds("x", 0);
        (void)c.get_int("x", 0, 1, 256);
        (void)c.get_bool("x", false);
    } catch (const ConfigError&) {
    }
    (void)manager::store::validate_sensor_name(text);
    auto sel = manager::store::Selector::parse(text);
    if (sel.ok()) {
        const std::string canon = sel->to_string();
        auto re = manager::store::Selector::parse(canon);
        if (!re.ok() || re->to_string() != canon) {
            __builtin_trap();
        }
        (void)sel->matches("s1", {{"site", "a"}});
    }
    (void)manager::cli::is_loopback_target(text);
}

void picketctl(std::string_view all) {
    std::vector<std::string> args = {"picketctl"};
    size_t pos = 0;
    while (pos <= all.size() && args.size() < 24) {
        size_t end = all.find('\0', pos);
        if (end == std::string_view::npos) {
            end = all.size();
        }
        std::string a(all.substr(pos, end - pos));
        if (a.rfind("--m", 0) != 0 && a.find('/') == std::string::npos &&
            a.find("..") == std::string::npos) {
            args.push_back(std::move(a));
        }
        pos = end + 1;
    }
    std::vector<const char*> argv;
    for (const auto& a : args) {
        argv.push_back(a.c_str());
    }
    argv.push_back(nullptr);
    std::ostringstream out, err;
    const int rc = picket::manager::cli::run(static_cast<int>(args.size()), argv.data(), out, err);
    if (rc != 0 && rc != 1 && rc != 2) {
        __builtin_trap();  // scripts depend on the exit codes
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    unsetenv("PICKETCTL_MANAGER");
    // An empty directory of our own: relative paths in an argv name nothing.
    std::filesystem::path d =
        std::filesystem::temp_directory_path() / ("picket-cli-fuzz." + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    if (chdir(d.c_str()) != 0) {
        std::abort();
    }
    static std::string dir = d.string();
    std::atexit([] { rmdir(dir.c_str()); });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 4096) {
        return 0;
    }
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const size_t nul = all.find('\0');
    sensor_parsers(std::string(all.substr(0, nul)));
    picketctl(all);
    return 0;
}
