// Configuration cost profiler (picket-sensor --profile-configs): runs one pcap through a
// ladder of configurations, each step a few config keys applied on top of the previous ones,
// and reports packets/s and Mbit/s per step with the spread over repeated runs and the change
// from the step before. Everything here runs on the calling (main) thread; each run owns a
// whole engine::Engine with its own threads. Errors are absl::Status; nothing throws.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <yaml-cpp/yaml.h>

#include "common/config.h"
#include "sensor/engine/engine.h"

namespace picket::sensor::profile {

// One config key a step sets. Mappings in the file are flattened to their leaves
// (`flow: {memcap: 1gb}` = `flow.memcap: 1gb`), so a step merges into the configuration
// instead of replacing whole sections.
struct Setting {
    std::string key;   // dotted
    YAML::Node value;  // as written, ${variables} not yet substituted
    int line = 0;      // 1-based, in the ladder file
};

struct Step {
    std::string name;
    int line = 0;  // of the step's first key
    std::vector<Setting> set;
};

struct Ladder {
    std::string source;  // file name, for messages
    std::vector<Step> steps;
};

// Parses and checks a ladder: a YAML list of {name, set: {KEY: VALUE, ...}}. Every error is
// InvalidArgument "FILE:LINE: step N (NAME): KEY: what". Checked here: the structure, unique
// names, well-formed ${variable} references, and that every key is one picket-sensor reads
// (engine::load_sensor_config or detect::read_detect_settings rejects a nonsense value for it),
// so a misspelt key cannot make a step silently measure nothing. Values are checked by plan(),
// after substitution.
absl::StatusOr<Ladder> parse_ladder(std::string_view yaml, const std::string& source);
absl::StatusOr<Ladder> load_ladder(const std::string& path);

// The variables the ladder refers to (`${rules}` -> "rules").
std::set<std::string> referenced_variables(const Ladder& ladder);

// Values of ${variables}. A variable holds a list: as the whole of a value it becomes that
// list (or its only element), as a list element it is spliced in, inside a longer string it
// must hold exactly one value. A variable that is absent or empty leaves the steps that use
// it unrun (PlannedStep::skipped).
using Variables = std::map<std::string, std::vector<std::string>>;

struct PlannedStep {
    std::string name;
    int line = 0;
    std::string skipped;  // non-empty: why the step does not run ("${web-rules} is not set")
    engine::SensorConfig config;
};

// Applies the steps in order, each on top of the ones before (a skipped step adds nothing),
// over `base` (sensor.yaml, --set and the command line's -r etc.), and loads every step's
// SensorConfig before anything runs. EVE and fast.log output are turned off first (a step may
// turn them on to measure them). Errors name the ladder's line for a value the ladder set, the
// base configuration's otherwise; a step must read pcap files once (no live capture, no
// --pcap-loop / --pcap-rate). `base` is changed: yaml-cpp nodes are shared references, so
// pass a Config that is not used afterwards.
absl::StatusOr<std::vector<PlannedStep>> plan(const Ladder& ladder, Config base,
                                              const Variables& vars);

// One run of one step: Engine::run() only, not the engine's construction (rule compilation,
// flow pools), which is reported separately as start-up.
struct RunSample {
    double seconds = 0;
    uint64_t packets = 0;
    uint64_t bytes = 0;
    double setup_seconds = 0;
    double busy_seconds = 0;  // the workers' time on batches (RunResult::worker_busy_sec)
};

struct StepResult {
    std::string name;
    std::string skipped;
    engine::Stage stages = engine::Stage::kDetect;
    uint32_t workers = 0;
    uint64_t rules_loaded = 0;  // 0 without detection
    uint64_t rules_skipped = 0;
    std::vector<RunSample> runs;
};

struct Report {
    std::vector<std::string> inputs;  // the pcap paths
    uint32_t repeat = 0;
    std::vector<StepResult> steps;
};

struct RunOptions {
    uint32_t repeat = 3;
    bool warmup = true;  // read the input once and run the first step once, untimed
    // Called after each run with a line such as "round 2/3: decode: 0.041 s" (stderr).
    std::function<void(const std::string&)> progress;
};

// Runs every step `repeat` times in rounds (step 1..N, then again), so that a drift of the
// machine spreads over all steps instead of favouring the first. Any run that fails (engine
// construction, a truncated pcap) stops the profile with an error naming the step.
absl::StatusOr<Report> run(const std::vector<PlannedStep>& steps, const RunOptions& options);

// Medians and spread of one step.
struct StepFigures {
    double pps = 0, pps_min = 0, pps_max = 0;  // packets/s: median, min, max over the runs
    double mbps = 0;                           // Mbit/s (wire bytes), median
    double ns_per_packet = 0;                  // 1e9 / median packets/s
    double worker_ns_per_packet = 0;           // workers' busy time per packet, median
    double setup_seconds = 0;                  // median engine construction time
    uint64_t packets = 0, bytes = 0;           // of the first run
};
StepFigures figures(const StepResult& step);

double median(std::vector<double> values);

enum class Format { kText, kMarkdown, kJson };

// The table: per step median packets/s and Mbit/s, the min-max spread, the change from the
// previous step that ran (packets/s absolute and %), the workers' busy ns per packet and its
// change, start-up time, and "within noise" where the two steps' packets/s ranges overlap.
std::string format_report(const Report& report, Format format);

// --profile-configs LADDER (with --profile-repeat, --profile-var, --profile-format).
struct CliArgs {
    std::string ladder;
    uint32_t repeat = 3;
    std::vector<std::string> vars;  // NAME=VALUE
    std::string format = "text";
};

inline constexpr int kCliUsage = 2;  // picket-sensor's exit code for bad arguments

// Runs the ladder over the -r files of `base` (the sensor's configuration with the command
// line applied): the table on stdout, progress on stderr. exclusive_rules / extra_rules: -S
// and -s, which set ${rules}. Exit 2 for a bad ladder or arguments, 1 when a run fails.
int run_cli(const CliArgs& args, Config base, const std::string& exclusive_rules,
            const std::vector<std::string>& extra_rules);

}  // namespace picket::sensor::profile
