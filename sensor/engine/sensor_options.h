// picket-sensor's command line (sensor_options.cc): the options as parsed, the configuration
// they make, and -T. Used by sensor/main.cc only; part of the picket_sensor_cli library, not of
// picket_engine (it needs CLI11).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "sensor/engine/engine.h"
#include "sensor/profile/profile.h"

namespace picket::sensor::engine {

inline constexpr int kExitUsage = 2;  // bad options or configuration

// The agent's options from the command line; an error message means exit 2.
struct ManagerArgs {
    std::string manager, name, token, tls_cert, tls_key, ca, state_dir = "/var/lib/picket-sensor";
    std::string labels, bundle_key;
    std::string bootstrap_token_file;  // --bootstrap-token-file (a file: argv shows in ps)
    bool insecure = false;
    double metrics_interval = 10;
};

// Every option of the command line, as given.
struct SensorOptions {
    std::vector<std::string> pcaps;  // -r
    std::string iface, config_path, log_dir, capture_mode, checksum;
    std::vector<std::string> sets, bpf_words;
    int workers = 0;
    bool verbose = false;
    bool test_rules = false;     // -T
    bool profile_rules = false;  // --profile-rules
    bool simulate_ips = false;
    std::string queue, bridge;
    std::string exclusive_rules;           // -S
    std::vector<std::string> extra_rules;  // -s
    uint64_t pcap_loop = 1;
    double pcap_rate = 0;
    bool pcap_loop_given = false;  // --pcap-loop / --pcap-rate were on the command line
    bool pcap_rate_given = false;
    std::string metrics_listen;
    profile::CliArgs profile;  // --profile-*
    ManagerArgs manager;       // --manager and the Fleet group
};

// Parses argv into *out. Returns -1 to go on, else the exit code (help and version: 0, after
// printing them; a bad option: kExitUsage, after the message).
int parse_sensor_options(int argc, char** argv, SensorOptions* out);

// The rules between options that CLI11 does not check (--profile-configs conflicts, --queue
// without nfqueue, no input). Returns -1 to go on, else kExitUsage after the message.
int check_sensor_options(const SensorOptions& options);

// sensor.yaml (-c, or the defaults) with the command line's settings and every --set applied.
// Throws ConfigError.
Config sensor_yaml(const SensorOptions& options);

// The sensor's settings from that configuration, the detect settings and -S / -s. Throws
// ConfigError.
SensorConfig sensor_config_from(const Config& config, const SensorOptions& options);

// -T: load and compile the rules, print every diagnostic and the summary, exit 1 when any
// rule was skipped.
int check_rules(const SensorConfig& sc);

}  // namespace picket::sensor::engine
