// libFuzzer target for the sensor's configuration: sensor.yaml text (Config::load_string, the
// YAML parser and its error positions), then --set KEY=VALUE overrides (Config::set), then
// everything the sensor reads from it (engine::load_sensor_config: capture, queues, bridge,
// sizes, durations, memcaps, outputs; detect::read_detect_settings: rule files, variables,
// mpm, profiling). Input: the YAML text, then NUL-separated --set assignments.
// Setup code reports a bad configuration by throwing ConfigError (main.cc turns it into exit
// 2); any other exception escaping here is a crash of picket-sensor at start-up, so only
// ConfigError is caught and libFuzzer reports the rest.
// Seed corpus: tests/fuzz/corpus/config (make_corpus.sh adds deploy/*.yaml).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/config.h"
#include "sensor/detect/detect.h"
#include "sensor/engine/engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace picket;
    if (size > 32768) {
        return 0;
    }
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    const size_t nul = all.find('\0');
    const std::string_view yaml = all.substr(0, nul);
    try {
        Config config = Config::load_string(yaml, "sensor.yaml");
        size_t pos = nul == std::string_view::npos ? all.size() : nul + 1;
        while (pos < all.size()) {
            size_t end = all.find('\0', pos);
            if (end == std::string_view::npos) {
                end = all.size();
            }
            config.set(all.substr(pos, end - pos));
            pos = end + 1;
        }
        sensor::engine::SensorConfig sc = sensor::engine::load_sensor_config(config, false);
        sensor::detect::read_detect_settings(config, &sc.detect);
        (void)config.get_string_list("rule-files");
        uint64_t bytes = 0;
        (void)parse_size(yaml, &bytes);
    } catch (const ConfigError&) {
    }
    return 0;
}
