// Running the steps: one whole Engine per run, rounds over the steps, figures per step.
#include <algorithm>
#include <cstdio>

#include "common/time_util.h"
#include "sensor/profile/profile.h"

namespace picket::sensor::profile {
namespace {

std::string seconds_text(double s) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3f s", s);
    return buf;
}

// One run. Setup (the Engine's construction: capture, flow pools, rule compilation) is timed
// apart from run(), which is what the table's rates are made of.
absl::StatusOr<RunSample> run_once(const engine::SensorConfig& step_config, StepResult* step) {
    // A damaged capture measures less than it should: a failed run, whatever the sensor does.
    engine::SensorConfig config = step_config;
    config.pcap_strict = true;
    try {
        const int64_t t0 = monotonic_ns();
        engine::Engine engine(config);
        const int64_t t1 = monotonic_ns();
        if (engine.detecting()) {
            step->rules_loaded = engine.load_summary().loaded;
            step->rules_skipped = engine.load_summary().skipped;
        }
        const engine::RunResult r = engine.run();
        if (r.exit_code != 0) {
            return absl::DataLossError(r.error);
        }
        RunSample s;
        s.seconds = r.elapsed_sec;
        s.packets = r.packets;
        s.bytes = r.bytes;
        s.setup_seconds = static_cast<double>(t1 - t0) / 1e9;
        s.busy_seconds = r.worker_busy_sec;
        return s;
    } catch (const std::exception& e) {
        // Setup throws (capture::CaptureError, ConfigError, a rule file that does not load).
        return absl::InvalidArgumentError(e.what());
    }
}

}  // namespace

double median(std::vector<double> v) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

StepFigures figures(const StepResult& step) {
    StepFigures f;
    if (step.runs.empty()) {
        return f;
    }
    std::vector<double> pps, mbps, setup, busy;
    for (const RunSample& r : step.runs) {
        const double secs = r.seconds > 0 ? r.seconds : 1e-9;
        pps.push_back(static_cast<double>(r.packets) / secs);
        mbps.push_back(static_cast<double>(r.bytes) * 8 / 1e6 / secs);
        setup.push_back(r.setup_seconds);
        busy.push_back(r.packets != 0 ? r.busy_seconds * 1e9 / static_cast<double>(r.packets) : 0);
    }
    f.pps = median(pps);
    f.pps_min = *std::min_element(pps.begin(), pps.end());
    f.pps_max = *std::max_element(pps.begin(), pps.end());
    f.mbps = median(mbps);
    f.ns_per_packet = f.pps > 0 ? 1e9 / f.pps : 0;
    f.setup_seconds = median(setup);
    f.worker_ns_per_packet = median(busy);
    f.packets = step.runs.front().packets;
    f.bytes = step.runs.front().bytes;
    return f;
}

absl::StatusOr<Report> run(const std::vector<PlannedStep>& steps, const RunOptions& options) {
    if (steps.empty()) {
        return absl::InvalidArgumentError("the ladder has no steps");
    }
    if (options.repeat == 0) {
        return absl::InvalidArgumentError("repeat must be at least 1");
    }
    Report report;
    report.repeat = options.repeat;
    const PlannedStep* first = nullptr;
    for (const auto& s : steps) {
        StepResult r;
        r.name = s.name;
        r.skipped = s.skipped;
        r.stages = s.config.stages;
        r.workers = s.config.workers;
        report.steps.push_back(std::move(r));
        if (first == nullptr && s.skipped.empty()) {
            first = &s;
        }
    }
    if (first == nullptr) {
        return absl::FailedPreconditionError(
            "no step can run: every step uses a variable that "
            "is not set (step 1: " +
            steps.front().skipped + ")");
    }
    report.inputs = first->config.pcap_paths;
    auto progress = [&](const std::string& line) {
        if (options.progress) {
            options.progress(line);
        }
    };
    if (options.warmup) {
        // Brings the files into the page cache and the allocator up to its working size, so
        // that the first measured run is not the slow one.
        StepResult ignored;
        auto w = run_once(first->config, &ignored);
        if (!w.ok()) {
            return absl::Status(w.status().code(), "warm-up (" + first->name +
                                                       "): " + std::string(w.status().message()));
        }
        progress("warm-up: " + first->name + ": " + seconds_text(w->seconds));
    }
    for (uint32_t round = 1; round <= options.repeat; ++round) {
        for (size_t i = 0; i < steps.size(); ++i) {
            if (!steps[i].skipped.empty()) {
                continue;
            }
            StepResult& r = report.steps[i];
            auto s = run_once(steps[i].config, &r);
            if (!s.ok()) {
                return absl::Status(s.status().code(), "step " + std::to_string(i + 1) + " (" +
                                                           steps[i].name + "), round " +
                                                           std::to_string(round) + ": " +
                                                           std::string(s.status().message()));
            }
            r.runs.push_back(*s);
            progress("round " + std::to_string(round) + "/" + std::to_string(options.repeat) +
                     ": " + steps[i].name + ": " + seconds_text(s->seconds) +
                     (s->setup_seconds >= 0.1 ? " (start-up " + seconds_text(s->setup_seconds) + ")"
                                              : ""));
        }
    }
    return report;
}

}  // namespace picket::sensor::profile
