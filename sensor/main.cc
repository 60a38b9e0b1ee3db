// picket-sensor: parses the command line into the sensor's configuration and wires the
// engine, the fleet agent and the metrics exporter; the pipeline lives in sensor/engine, the
// options in sensor/engine/sensor_options.cc, the agent and metrics wiring in
// sensor/engine/sensor_wiring.cc.
#include <sys/stat.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "common/config.h"
#include "common/log.h"
#include "common/metrics/http_exporter.h"
#include "common/metrics/metrics.h"
#include "common/time_util.h"
#include "sensor/engine/engine.h"
#include "sensor/engine/sensor_options.h"
#include "sensor/engine/sensor_wiring.h"
#include "sensor/profile/profile.h"

namespace {

picket::sensor::engine::Engine* g_engine = nullptr;

void on_signal(int) {
    if (g_engine != nullptr) {
        g_engine->stop();
    }
}

// SIGUSR2: reload the configured rules without stopping (as Suricata does).
void on_usr2(int) {
    if (g_engine != nullptr) {
        g_engine->request_reload();
    }
}

// SIGHUP: reopen every output file (what logrotate's postrotate sends; Suricata does the same).
void on_hup(int) {
    if (g_engine != nullptr) {
        g_engine->request_reopen();
    }
}

}  // namespace

int main(int argc, char** argv) {
    using namespace picket;
    using namespace picket::sensor::engine;
    SensorOptions o;
    if (const int rc = parse_sensor_options(argc, argv, &o); rc >= 0) {
        return rc;
    }
    if (o.verbose) {
        log::set_level(log::Level::kDebug);
    }
    if (const int rc = check_sensor_options(o); rc >= 0) {
        return rc;
    }
    SensorConfig sc;
    try {
        Config config = sensor_yaml(o);
        if (!o.profile.ladder.empty()) {
            return sensor::profile::run_cli(o.profile, std::move(config), o.exclusive_rules,
                                            o.extra_rules);
        }
        sc = sensor_config_from(config, o);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "picket-sensor: config error: %s\n", e.what());
        return kExitUsage;
    }
    if (o.test_rules) {
        return check_rules(sc);
    }
    if (!sc.metrics_listen.empty()) {
        if (auto st = metrics::check_listen_address(sc.metrics_listen); !st.ok()) {
            std::fprintf(stderr, "picket-sensor: --metrics-listen (metrics.listen): %s\n",
                         std::string(st.message()).c_str());
            return kExitUsage;
        }
    }
    const bool managed = !o.manager.manager.empty();
    sensor::agent::AgentOptions agent_options;
    if (managed) {
        if (const int rc = prepare_managed(o.manager, sc, agent_options); rc >= 0) {
            return rc;
        }
    }
    struct stat st {};
    if (stat(sc.log_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        std::fprintf(stderr, "picket-sensor: log directory '%s' does not exist\n",
                     sc.log_dir.c_str());
        return kExitUsage;
    }

    try {
        Engine engine(sc);
        if (engine.detecting()) {
            const auto& summary = engine.load_summary();
            for (const auto& d : summary.diagnostics) {
                std::fprintf(stderr, "%s\n", d.to_string().c_str());
            }
            std::fputs(summary.to_string().c_str(), stdout);
            std::fputc('\n', stdout);
            std::fflush(stdout);  // a long-running sensor's output may go to a file
        }
        std::unique_ptr<sensor::agent::Agent> agent;
        metrics::SensorSeriesInput identity;
        identity.sensor = managed ? o.manager.name : host_name();
        identity.host = host_name();
        identity.version = PICKET_VERSION;
        identity.capture = capture_text(sc);
        identity.ips = sc.ips();
        identity.labels = agent_options.labels;  // empty without --manager
        if (managed) {
            agent = start_agent(engine, sc, std::move(agent_options), PICKET_VERSION);
        }
        // Before the metrics line: whoever waits for it may signal the sensor at once.
        g_engine = &engine;
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        std::signal(SIGHUP, on_hup);
        std::signal(SIGUSR2, on_usr2);
        // Declared after the engine and the agent: destroyed (and so stopped) before them.
        metrics::Registry registry;
        std::unique_ptr<metrics::HttpExporter> exporter;
        if (!sc.metrics_listen.empty()) {
            add_sensor_collector(registry, engine, agent.get(), identity);
            auto started = metrics::HttpExporter::start(sc.metrics_listen, registry);
            if (!started.ok()) {
                // The message names the address ("metrics: cannot listen on HOST:PORT: ...").
                std::fprintf(stderr, "picket-sensor: %s\n",
                             std::string(started.status().message()).c_str());
                g_engine = nullptr;
                return 1;
            }
            exporter = std::move(*started);
            log::info("metrics: serving " + exporter->url());
        }
        // engine.config(): DPDK may run fewer workers than asked (one per RX queue).
        log::info("running with " + std::to_string(engine.config().workers) + " worker(s)");
        RunResult result = engine.run();
        g_engine = nullptr;
        if (exporter) {
            exporter->stop();
        }
        if (agent) {
            agent->stop();
        }
        if (sc.mode == CaptureMode::kPcapFile || sc.mode == CaptureMode::kDpdk) {
            std::fputs(format_summary(result, engine.config().workers).c_str(), stdout);
        }
        if (sc.detect.profiling.enabled && engine.detecting()) {
            const auto rules_profile = engine.rule_profile();
            std::fputs(rules_profile.format_table(sc.detect.profiling.limit).c_str(), stdout);
            const std::string& name = sc.detect.profiling.filename;
            const std::string path = name[0] == '/' ? name : sc.log_dir + "/" + name;
            std::string error;
            if (!rules_profile.write_json(path, &error)) {
                std::fprintf(stderr, "picket-sensor: profiling.rules: %s\n", error.c_str());
            }
        }
        for (const std::string& w : result.warnings) {
            std::fprintf(stderr,
                         "picket-sensor: warning: %s; the rest of that file was skipped "
                         "(pcap-file.strict: yes makes this an error)\n",
                         w.c_str());
        }
        if (result.exit_code != 0) {
            std::fprintf(stderr, "picket-sensor: error: %s\n", result.error.c_str());
        }
        return result.exit_code;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "picket-sensor: error: %s\n", e.what());
        return 1;
    }
}