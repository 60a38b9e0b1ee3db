// Reads the sensor configuration's outputs into output::EveConfig and the fast.log settings.
// Two layouts are accepted: Suricata's list (`outputs: [- fast: {...}, - eve-log: {...}]`,
// other Suricata outputs warned about and ignored) and Picket's map (`outputs.eve.*`,
// `outputs.fast.*`). Setup code only: throws ConfigError naming the source and key path.
#pragma once

#include <string>

#include "common/config.h"
#include "sensor/output/eve_config.h"

namespace picket::sensor::engine {

// The EVE output. ips: the sensor decides verdicts (inline or simulated), which turns the
// alert "verdict" object on unless the configuration says. sink.log_dir is left at its
// default: the caller knows the log directory. Logs a warning (once per key) for what a
// Suricata configuration may hold that Picket does not act on.
output::EveConfig read_eve_config(const Config& c, bool ips);

// fast.log: `- fast: {enabled, filename}` in the list layout (absent = off), outputs.fast.* in
// the map layout; on, as fast.log, with no outputs section.
struct FastLogConfig {
    bool enabled = true;
    std::string filename = "fast.log";
};
FastLogConfig read_fast_log_config(const Config& c);

}  // namespace picket::sensor::engine
