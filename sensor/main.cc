// picket-sensor: argument parsing and wiring only; the pipeline lives in sensor/engine.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/config.h"
#include "common/log.h"
#include "common/metrics/http_exporter.h"
#include "common/metrics/metrics.h"
#include "common/metrics/sensor_series.h"
#include "common/time_util.h"
#include "sensor/agent/agent.h"
#include "sensor/engine/engine.h"
#include "sensor/filter/filter.h"
#include "sensor/profile/profile.h"

namespace {

picket::sensor::engine::Engine* g_engine = nullptr;

void on_signal(int) {
    if (g_engine != nullptr) {
        g_engine->stop();
    }
}

// SIGHUP: reload the configured rules without stopping (as Suricata does).
void on_hup(int) {
    if (g_engine != nullptr) {
        g_engine->request_reload();
    }
}

constexpr int kExitUsage = 2;

// -T: load and compile the rules, print every diagnostic and the summary, exit 1 when any
// rule was skipped.
int check_rules(const picket::sensor::engine::SensorConfig& sc) {
    using namespace picket::sensor;
    if (sc.detect.rule_files.empty()) {
        std::fprintf(stderr, "picket-sensor: -T: no rule files (give -S FILE or rule-files)\n");
        return kExitUsage;
    }
    try {
        detect::LoadSummary summary;
        auto engine = detect::DetectEngine::load(sc.detect, nullptr, &summary);
        for (const auto& d : summary.diagnostics) {
            std::fprintf(stderr, "%s\n", d.to_string().c_str());
        }
        std::fputs(summary.to_string().c_str(), stdout);
        std::fputc('\n', stdout);
        // The acl-file is loaded with the rules at start and at every reload: check it too, so
        // that -T answers for everything a reload would read.
        bool acl_ok = true;
        if (!sc.detect.acl_file.empty()) {
            std::ifstream in(sc.detect.acl_file, std::ios::binary);
            if (!in) {
                std::fprintf(stderr, "picket-sensor: acl-file %s: cannot open\n",
                             sc.detect.acl_file.c_str());
                return 1;
            }
            const std::string text((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
            auto rules = filter::parse_acl_rules(text, sc.detect.acl_file);
            if (!rules.ok()) {
                std::fprintf(stderr, "%s\n", std::string(rules.status().message()).c_str());
                acl_ok = false;
            } else {
                const size_t n = rules->size();
                auto acl = filter::AclClassifier::build(std::move(*rules));
                if (!acl.ok()) {
                    std::fprintf(stderr, "%s: %s\n", sc.detect.acl_file.c_str(),
                                 std::string(acl.status().message()).c_str());
                    acl_ok = false;
                } else {
                    std::printf("acl-file %s: %zu rules\n", sc.detect.acl_file.c_str(), n);
                }
            }
        }
        return summary.skipped == 0 && acl_ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "picket-sensor: error: %s\n", e.what());
        return 1;
    }
}

// The agent's options from the command line; an error message means exit 2.
struct ManagerArgs {
    std::string manager, name, token, tls_cert, tls_key, ca, state_dir = "/var/lib/picket-sensor";
    std::string labels, bundle_key;
    bool insecure = false;
    double metrics_interval = 10;
};

std::string build_agent_options(const ManagerArgs& a, picket::sensor::agent::AgentOptions* o) {
    namespace agent = picket::sensor::agent;
    o->manager = a.manager;
    o->name = a.name;
    o->token = a.token;
    o->tls_cert = a.tls_cert;
    o->tls_key = a.tls_key;
    o->ca = a.ca;
    o->insecure = a.insecure;
    o->state_dir = a.state_dir;
    o->metrics_interval =
        std::chrono::milliseconds(static_cast<int64_t>(a.metrics_interval * 1000));
    auto labels = agent::parse_labels(a.labels);
    if (!labels.ok()) {
        return "--labels: " + std::string(labels.status().message());
    }
    o->labels = *labels;
    if (!a.bundle_key.empty()) {
        std::ifstream in(a.bundle_key);
        if (!in) {
            return "--bundle-key: cannot read " + a.bundle_key;
        }
        std::stringstream ss;
        ss << in.rdbuf();
        o->bundle_public_key_pem = ss.str();
    }
    if (auto s = agent::validate_options(*o); !s.ok()) {
        return std::string(s.message());
    }
    if (auto s = agent::check_credentials(*o); !s.ok()) {
        return std::string(s.message());
    }
    std::error_code ec;
    std::filesystem::create_directories(o->state_dir, ec);
    if (ec) {
        return "--state-dir: cannot create " + o->state_dir.string() + ": " + ec.message();
    }
    return "";
}

// CLI11 validators: "" when valid, else why (CLI11 puts the option's name in front).
std::string check_loop_count(std::string& v) {
    const bool digits =
        !v.empty() && v.size() <= 18 && v.find_first_not_of("0123456789") == std::string::npos;
    return digits ? "" : "expected a whole number (0 = forever), got '" + v + "'";
}

std::string check_packet_rate(std::string& v) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    const bool ok = !v.empty() && *end == '\0' && d >= 0 && d <= 1e9;
    return ok ? "" : "expected packets per second from 0 (unpaced) to 1e9, got '" + v + "'";
}

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0) {
        return "";
    }
    return buf;
}

// "pcap-file:/x.pcap", "pcap-live:eth0", "af-packet:eth0": the manager's form of the same.
std::string capture_text(const picket::sensor::engine::SensorConfig& sc) {
    using picket::sensor::engine::CaptureMode;
    switch (sc.mode) {
        case CaptureMode::kPcapFile:
            return "pcap-file:" + (sc.pcap_paths.empty() ? std::string() : sc.pcap_paths[0]);
        case CaptureMode::kPcapLive:
            return "pcap-live:" + sc.iface;
        case CaptureMode::kAfPacket:
            return "af-packet:" + sc.iface;
        case CaptureMode::kNfqueue:
            return "nfqueue:" + std::to_string(sc.nfqueue.queue) +
                   (sc.nfqueue_count > 1
                        ? ":" + std::to_string(sc.nfqueue.queue + sc.nfqueue_count - 1)
                        : std::string());
        case CaptureMode::kAfPacketInline:
            return "afpacket-inline:" + sc.afpacket_inline.iface1 + ":" + sc.afpacket_inline.iface2;
        case CaptureMode::kDpdk: {
            // "dpdk:net_pcap0>net_pcap1,0000:01:00.0" (">": inline, to the copy-iface).
            std::string text = "dpdk:";
            for (size_t i = 0; i < sc.dpdk.interfaces.size(); ++i) {
                const auto& port = sc.dpdk.interfaces[i];
                text += (i == 0 ? "" : ",") + port.name;
                if (sc.dpdk.inline_mode && !port.copy_iface.empty()) {
                    text += ">" + port.copy_iface;
                }
            }
            return text;
        }
    }
    return "unknown";
}

// --metrics-listen: one collector that renders this sensor's live counters on every scrape,
// with the same series the manager exports for it. `fixed` holds what does not change.
void add_sensor_collector(picket::metrics::Registry& registry,
                          const picket::sensor::engine::Engine& engine,
                          const picket::sensor::agent::Agent* agent,
                          picket::metrics::SensorSeriesInput fixed) {
    registry.add_collector(
        [&engine, agent, fixed = std::move(fixed)](picket::metrics::Exposition& out) {
            std::vector<picket::sensor::engine::WorkerTotals> workers;
            const picket::StatsSnapshot stats = engine.collect_stats(&workers);
            picket::metrics::SensorSeriesInput in = fixed;
            in.up = true;
            in.last_report_ns = picket::wall_clock_ns();
            in.counters = &stats.values();
            for (const auto& w : workers) {
                in.workers.push_back({w.worker, w.packets, w.bytes});
            }
            if (agent != nullptr) {
                const picket::v1::BundleRef ref = agent->running_bundle();
                in.bundle_version = ref.version();
                in.bundle_sha = ref.sha256();
            }
            picket::metrics::append_sensor_series(out, {in});
        });
}

// --profile-configs: the ladder's options from the command line.
struct ProfileArgs {
    std::string ladder;
    uint32_t repeat = 3;
    std::vector<std::string> vars;  // NAME=VALUE
    std::string format = "text";
};

// Runs the ladder over the -r files: the table on stdout, progress on stderr. Exit 2 for a bad
// ladder or arguments, 1 when a run fails.
int run_profile(const ProfileArgs& a, picket::Config base, const std::string& exclusive_rules,
                const std::vector<std::string>& extra_rules) {
    namespace profile = picket::sensor::profile;
    auto ladder = profile::load_ladder(a.ladder);
    if (!ladder.ok()) {
        std::fprintf(stderr, "picket-sensor: %s\n", std::string(ladder.status().message()).c_str());
        return kExitUsage;
    }
    const std::set<std::string> used = profile::referenced_variables(*ladder);
    // ${rules}: what this command line would load (-S replaces rule-files, -s adds). Absolute,
    // so that default-rule-path is not put in front of them a second time.
    std::vector<std::string> rules =
        picket::sensor::engine::load_sensor_config(base).detect.rule_files;
    if (!exclusive_rules.empty()) {
        rules = {exclusive_rules};
    }
    rules.insert(rules.end(), extra_rules.begin(), extra_rules.end());
    profile::Variables vars;
    for (const auto& r : rules) {
        vars["rules"].push_back(std::filesystem::absolute(r).string());
    }
    std::set<std::string> given;
    for (const auto& v : a.vars) {
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::fprintf(stderr, "picket-sensor: --profile-var %s: expected NAME=VALUE\n",
                         v.c_str());
            return kExitUsage;
        }
        const std::string name = v.substr(0, eq);
        std::string value = v.substr(eq + 1);
        if (used.count(name) == 0) {
            std::fprintf(stderr, "picket-sensor: --profile-var %s: %s has no ${%s}\n", v.c_str(),
                         a.ladder.c_str(), name.c_str());
            return kExitUsage;
        }
        if (given.insert(name).second) {
            vars[name].clear();  // the command line replaces ${rules} from -S / rule-files
        }
        std::error_code ec;
        if (!value.empty() && std::filesystem::exists(value, ec)) {
            value = std::filesystem::absolute(value).string();  // relative to here, as -S
        }
        vars[name].push_back(value);
    }
    if ((!exclusive_rules.empty() || !extra_rules.empty()) && used.count("rules") == 0) {
        std::fprintf(stderr, "picket-sensor: warning: %s has no ${rules}: -S / -s are not used\n",
                     a.ladder.c_str());
    }
    auto steps = profile::plan(*ladder, std::move(base), vars);
    if (!steps.ok()) {
        std::fprintf(stderr, "picket-sensor: %s\n", std::string(steps.status().message()).c_str());
        return kExitUsage;
    }
    profile::RunOptions options;
    options.repeat = a.repeat;
    options.progress = [](const std::string& line) {
        std::fprintf(stderr, "picket-sensor: profile: %s\n", line.c_str());
    };
    auto report = profile::run(*steps, options);
    if (!report.ok()) {
        std::fprintf(stderr, "picket-sensor: profile: %s\n",
                     std::string(report.status().message()).c_str());
        return report.status().code() == absl::StatusCode::kFailedPrecondition ? kExitUsage : 1;
    }
    const profile::Format format = a.format == "markdown" ? profile::Format::kMarkdown
                                   : a.format == "json"   ? profile::Format::kJson
                                                          : profile::Format::kText;
    std::fputs(profile::format_report(*report, format).c_str(), stdout);
    for (const auto& s : *steps) {
        if (!s.skipped.empty()) {
            std::fprintf(stderr,
                         "picket-sensor: profile: steps were skipped: give their variables with "
                         "--profile-var NAME=VALUE (-S FILE / -s FILE set ${rules})\n");
            break;
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace picket;
    CLI::App app{"picket-sensor: network intrusion detection sensor"};
    app.set_version_flag("-V,--version", std::string("picket-sensor ") + PICKET_VERSION);

    std::vector<std::string> pcaps;
    std::string iface, config_path, log_dir, capture_mode, checksum;
    std::vector<std::string> sets, bpf_words;
    int workers = 0;
    bool verbose = false;
    bool test_rules = false;
    bool profile_rules = false;
    bool simulate_ips = false;
    std::string queue, bridge;
    std::string exclusive_rules;
    std::vector<std::string> extra_rules;
    app.add_option("-r", pcaps, "read packets from pcap/pcapng FILE or every file of DIR")
        ->type_name("FILE|DIR")
        ->allow_extra_args(false);
    uint64_t pcap_loop = 1;
    double pcap_rate = 0;
    std::string metrics_listen;
    auto* loop_opt = app.add_option("--pcap-loop", pcap_loop,
                                    "with -r: read the files N times (0 = until SIGINT/SIGTERM) "
                                    "as a live source: time moves forward, a full worker queue "
                                    "drops packets")
                         ->type_name("N")
                         ->check(CLI::Validator(check_loop_count, ""));
    auto* rate_opt = app.add_option("--pcap-rate", pcap_rate,
                                    "with -r: pace the replay to PPS packets per second "
                                    "(0 = unpaced), as a live source")
                         ->type_name("PPS")
                         ->check(CLI::Validator(check_packet_rate, ""));
    app.add_option("--metrics-listen", metrics_listen,
                   "serve Prometheus metrics at http://HOST:PORT/metrics (port 0: any free port)")
        ->type_name("HOST:PORT");
    app.add_option("-i", iface, "capture live on interface IFACE")->type_name("IFACE");
    app.add_option("-c", config_path, "sensor configuration (YAML)")->type_name("sensor.yaml");
    app.add_option("-l", log_dir, "log directory; eve.json is written there")->type_name("DIR");
    app.add_option("--workers", workers, "worker threads (default: one per core)")
        ->check(CLI::Range(1, 256));
    auto* capture_opt =
        app.add_option("--capture", capture_mode,
                       "live capture backend: pcap, afpacket (passive, -i IFACE), inline "
                       "(IPS): nfqueue (--queue), afpacket-inline (--bridge), or dpdk (the "
                       "ports of dpdk.interfaces; inline with dpdk.copy-mode ips)")
            ->check(CLI::IsMember({"pcap", "afpacket", "nfqueue", "afpacket-inline", "dpdk"}));
    app.add_option("--queue", queue,
                   "with --capture nfqueue: netfilter queue Q, or queues Q..R (one worker each)")
        ->type_name("Q[:R]")
        ->needs(capture_opt);
    app.add_option("--bridge", bridge,
                   "with --capture afpacket-inline: forward between IF1 and IF2, dropping "
                   "what the rules drop")
        ->type_name("IF1:IF2")
        ->needs(capture_opt);
    app.add_flag("--simulate-ips", simulate_ips,
                 "decide verdicts as if inline (drop / reject rules block, alerts say "
                 "\"blocked\", ips.* counters) while reading -r files or a passive capture "
                 "(ips.simulate)");
    app.add_option("-k", checksum, "checksum validation: all (check) or none")
        ->check(CLI::IsMember({"all", "none"}));
    app.add_option("--set", sets, "override a configuration key: --set KEY=VALUE")
        ->type_name("KEY=VALUE")
        ->allow_extra_args(false);
    app.add_option("-S", exclusive_rules, "load only the rules of FILE (ignores rule-files)")
        ->type_name("FILE");
    app.add_option("-s", extra_rules, "load the rules of FILE as well (repeatable)")
        ->type_name("FILE")
        ->allow_extra_args(false);
    app.add_flag("-T", test_rules,
                 "check the configuration and rules, print the load summary, and exit "
                 "(non-zero when a rule was skipped)");
    app.add_flag("--profile-rules", profile_rules,
                 "per-rule checks, matches and time: the costliest rules printed at exit, every "
                 "rule in LOGDIR/rule_perf.json (profiling.rules.enabled)");
    app.add_flag("-v", verbose, "verbose logging");
    ProfileArgs profile_args;
    auto* profile_opt =
        app.add_option("--profile-configs", profile_args.ladder,
                       "run the -r files through each step of a ladder of configurations and "
                       "print packets/s and Mbit/s per step (see deploy/profile-ladder.yaml)")
            ->type_name("LADDER.yaml")
            ->group("Profiling");
    app.add_option("--profile-repeat", profile_args.repeat, "runs per step (median and spread)")
        ->type_name("N")
        ->check(CLI::Range(1, 100))
        ->capture_default_str()
        ->needs(profile_opt)
        ->group("Profiling");
    app.add_option("--profile-var", profile_args.vars,
                   "set the ladder's ${NAME} (repeat for a list; -S / -s set ${rules})")
        ->type_name("NAME=VALUE")
        ->allow_extra_args(false)
        ->needs(profile_opt)
        ->group("Profiling");
    app.add_option("--profile-format", profile_args.format, "table format")
        ->check(CLI::IsMember({"text", "markdown", "json"}))
        ->capture_default_str()
        ->needs(profile_opt)
        ->group("Profiling");
    ManagerArgs margs;
    auto* manager_opt = app.add_option("--manager", margs.manager, "fleet manager to connect to")
                            ->type_name("HOST:PORT")
                            ->group("Fleet");
    app.add_option("--name", margs.name, "this sensor's name in the fleet")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_option("--token", margs.token, "enrollment token")->needs(manager_opt)->group("Fleet");
    app.add_option("--tls-cert", margs.tls_cert, "sensor client certificate (PEM)")
        ->type_name("FILE")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_option("--tls-key", margs.tls_key, "sensor client key (PEM)")
        ->type_name("FILE")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_option("--ca", margs.ca, "fleet CA certificate that signed the manager's (PEM)")
        ->type_name("FILE")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_flag("--insecure", margs.insecure,
                 "no TLS and no authentication; only for a manager on loopback")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_option("--state-dir", margs.state_dir,
                   "where received bundles and the last good one are kept")
        ->type_name("DIR")
        ->capture_default_str()
        ->group("Fleet");
    app.add_option("--labels", margs.labels, "labels for deployment selectors")
        ->type_name("k=v,...")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_option("--metrics-interval", margs.metrics_interval,
                   "seconds between metrics reports to the manager")
        ->check(CLI::Range(0.01, 3600.0))
        ->capture_default_str()
        ->group("Fleet");
    app.add_option("--bundle-key", margs.bundle_key,
                   "Ed25519 public key (PEM): refuse bundles not signed by it")
        ->type_name("FILE")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_option("bpf", bpf_words, "BPF filter expression, as with tcpdump")
        ->type_name("EXPRESSION");
    app.footer(
        "Examples:\n"
        "  picket-sensor -r capture.pcap -l /tmp/out\n"
        "  picket-sensor -i eth0 --capture afpacket --workers 2 'tcp port 80'\n"
        "  picket-sensor --capture nfqueue --queue 0:1 -S drop.rules   (IPS, docs/inline.md)\n"
        "  picket-sensor --capture afpacket-inline --bridge eth1:eth2 -S drop.rules\n"
        "  picket-sensor -r capture.pcap --simulate-ips -S drop.rules\n"
        "  picket-sensor --capture dpdk -c sensor.yaml --set dpdk.copy-mode=ips -S drop.rules\n"
        "      (DPDK ports from dpdk.eal-params and dpdk.interfaces; docs/inline.md)\n"
        "  picket-sensor --profile-configs deploy/profile-ladder.yaml -r capture.pcap -S "
        "all.rules\n"
        "  picket-sensor -i eth0 --manager mgr:50051 --name s1 --ca ca.crt --tls-cert s1.crt "
        "--tls-key s1.key\n");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "picket-sensor: %s\nRun with --help for usage.\n", e.what());
        return kExitUsage;
    }
    if (verbose) {
        log::set_level(log::Level::kDebug);
    }
    if (!profile_args.ladder.empty()) {
        // A profile reads files, once per run, and serves nothing.
        const char* conflict = !iface.empty()            ? "-i"
                               : !margs.manager.empty()  ? "--manager"
                               : loop_opt->count() != 0  ? "--pcap-loop"
                               : rate_opt->count() != 0  ? "--pcap-rate"
                               : !metrics_listen.empty() ? "--metrics-listen"
                               : test_rules              ? "-T"
                                                         : nullptr;
        if (conflict != nullptr) {
            std::fprintf(stderr, "picket-sensor: --profile-configs cannot be combined with %s\n",
                         conflict);
            return kExitUsage;
        }
        if (pcaps.empty()) {
            std::fprintf(stderr,
                         "picket-sensor: --profile-configs needs -r FILE: the traffic to run "
                         "through every step\n");
            return kExitUsage;
        }
    }
    // DPDK's ports come from dpdk.interfaces: like the inline modes it needs no -r or -i.
    const bool inline_capture =
        capture_mode == "nfqueue" || capture_mode == "afpacket-inline" || capture_mode == "dpdk";
    if (!queue.empty() && capture_mode != "nfqueue") {
        std::fprintf(stderr, "picket-sensor: --queue needs --capture nfqueue\n");
        return kExitUsage;
    }
    if (!bridge.empty() && capture_mode != "afpacket-inline") {
        std::fprintf(stderr, "picket-sensor: --bridge needs --capture afpacket-inline\n");
        return kExitUsage;
    }
    if (pcaps.empty() && iface.empty() && !inline_capture && !test_rules) {
        std::fprintf(stderr,
                     "picket-sensor: no input: give -r FILE, -i IFACE, --capture nfqueue "
                     "--queue Q, --capture afpacket-inline --bridge IF1:IF2 or --capture "
                     "dpdk\n");
        return kExitUsage;
    }

    sensor::engine::SensorConfig sc;
    try {
        Config config = config_path.empty() ? Config() : Config::load_file(config_path);
        if (!pcaps.empty()) {
            YAML::Node list(YAML::NodeType::Sequence);
            for (const auto& p : pcaps) {
                list.push_back(p);
            }
            config.set_value("pcap-file.paths", list);
        }
        if (!iface.empty()) {
            config.set_value("capture.interface", YAML::Node(iface));
        }
        if (loop_opt->count() != 0) {
            config.set_value("pcap-file.loop", YAML::Node(pcap_loop));
        }
        if (rate_opt->count() != 0) {
            config.set_value("pcap-file.rate", YAML::Node(pcap_rate));
        }
        if (!metrics_listen.empty()) {
            config.set_value("metrics.listen", YAML::Node(metrics_listen));
        }
        if (!capture_mode.empty()) {
            config.set_value("capture.mode", YAML::Node(capture_mode));
        }
        if (workers > 0) {
            config.set_value("workers", YAML::Node(workers));
        }
        if (!queue.empty()) {
            config.set_value("capture.nfqueue.queue", YAML::Node(queue));
        }
        if (!bridge.empty()) {
            config.set_value("capture.afpacket-inline.bridge", YAML::Node(bridge));
        }
        if (simulate_ips) {
            config.set_value("ips.simulate", YAML::Node(true));
        }
        if (!log_dir.empty()) {
            config.set_value("default-log-dir", YAML::Node(log_dir));
        }
        if (!checksum.empty()) {
            config.set_value("checksum-validation", YAML::Node(checksum == "all" ? "yes" : "no"));
        }
        if (!bpf_words.empty()) {
            std::string expr;
            for (const auto& w : bpf_words) {
                expr += (expr.empty() ? "" : " ") + w;
            }
            config.set_value("capture.bpf-filter", YAML::Node(expr));
        }
        if (profile_rules) {
            config.set_value("profiling.rules.enabled", YAML::Node(true));
        }
        for (const auto& s : sets) {
            config.set(s);
        }
        if (!profile_args.ladder.empty()) {
            return run_profile(profile_args, std::move(config), exclusive_rules, extra_rules);
        }
        sc = sensor::engine::load_sensor_config(config, /*require_input=*/!test_rules);
        sensor::detect::read_detect_settings(config, &sc.detect);  // mpm-algo, profiling.rules
        if (!exclusive_rules.empty()) {
            sc.detect.rule_files = {exclusive_rules};
        }
        for (const auto& f : extra_rules) {
            sc.detect.rule_files.push_back(f);
        }
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "picket-sensor: config error: %s\n", e.what());
        return kExitUsage;
    }
    if (test_rules) {
        return check_rules(sc);
    }
    if (!sc.metrics_listen.empty()) {
        if (auto st = metrics::check_listen_address(sc.metrics_listen); !st.ok()) {
            std::fprintf(stderr, "picket-sensor: --metrics-listen (metrics.listen): %s\n",
                         std::string(st.message()).c_str());
            return kExitUsage;
        }
    }
    const bool managed = !margs.manager.empty();
    sensor::agent::AgentOptions agent_options;
    if (managed) {
        if (std::string err = build_agent_options(margs, &agent_options); !err.empty()) {
            std::fprintf(stderr, "picket-sensor: %s\n", err.c_str());
            return kExitUsage;
        }
        // Start on the last good bundle, if any; the manager is not needed for that.
        agent_options.base_detect = sc.detect;
        agent_options.running.config = sc.detect;
        auto last = sensor::agent::load_last_good(agent_options.state_dir, sc.detect,
                                                  agent_options.bundle_public_key_pem);
        if (!last.ok()) {
            log::warning("last good bundle unusable, starting on the local rules: " +
                         std::string(last.status().message()));
        } else if (last->has_value()) {
            agent_options.running = **last;
            sc.detect = agent_options.running.config;
            log::info("starting on bundle " + agent_options.running.ref.name() + " v" +
                      std::to_string(agent_options.running.ref.version()));
        }
        if (sc.detect.rule_files.empty()) {
            // The engine can only swap rules when it started with detection on: begin with an
            // empty rules file so that the first bundle can be applied.
            auto empty = agent_options.state_dir / "empty.rules";
            std::ofstream(empty, std::ios::trunc).flush();
            sc.detect.rule_files = {empty.string()};
            agent_options.running.config = sc.detect;
        }
    }
    struct stat st {};
    if (stat(sc.log_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        std::fprintf(stderr, "picket-sensor: log directory '%s' does not exist\n",
                     sc.log_dir.c_str());
        return kExitUsage;
    }

    try {
        sensor::engine::Engine engine(sc);
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
        identity.sensor = managed ? margs.name : host_name();
        identity.host = host_name();
        identity.version = PICKET_VERSION;
        identity.capture = capture_text(sc);
        identity.ips = sc.ips();
        identity.labels = agent_options.labels;  // empty without --manager
        if (managed) {
            using sensor::engine::CaptureMode;
            agent_options.version = PICKET_VERSION;
            agent_options.workers = engine.config().workers;
            agent_options.started_at_ns = wall_clock_ns();
            agent_options.running_summary = engine.load_summary();
            switch (sc.mode) {
                case CaptureMode::kPcapFile:
                    agent_options.capture_mode = v1::CAPTURE_MODE_PCAP_FILE;
                    agent_options.capture_source = sc.pcap_paths.empty() ? "" : sc.pcap_paths[0];
                    break;
                case CaptureMode::kPcapLive:
                    agent_options.capture_mode = v1::CAPTURE_MODE_PCAP_LIVE;
                    agent_options.capture_source = sc.iface;
                    break;
                case CaptureMode::kAfPacket:
                    agent_options.capture_mode = v1::CAPTURE_MODE_AF_PACKET;
                    agent_options.capture_source = sc.iface;
                    break;
                case CaptureMode::kNfqueue:
                case CaptureMode::kAfPacketInline:
                case CaptureMode::kDpdk:
                    // The protocol has no inline modes yet: the source text says which.
                    agent_options.capture_mode = sc.mode == CaptureMode::kAfPacketInline
                                                     ? v1::CAPTURE_MODE_AF_PACKET
                                                     : v1::CAPTURE_MODE_UNSPECIFIED;
                    agent_options.capture_source = capture_text(sc);
                    break;
            }
            sensor::agent::SensorHooks hooks;
            // The agent asks for the stats, then for the worker totals, of one report: hand it
            // the shares read together with those stats, so that they sum to decoder.pkts.
            struct WorkerShares {
                std::mutex mu;
                std::vector<sensor::agent::WorkerCounters> workers;
            };
            auto shares = std::make_shared<WorkerShares>();
            hooks.stats = [&engine, shares] {
                std::vector<sensor::engine::WorkerTotals> totals;
                StatsSnapshot s = engine.collect_stats(&totals);
                std::lock_guard<std::mutex> lock(shares->mu);
                shares->workers.clear();
                for (const auto& w : totals) {
                    shares->workers.push_back({w.worker, w.packets, w.bytes});
                }
                return s;
            };
            hooks.worker_stats = [shares] {
                std::lock_guard<std::mutex> lock(shares->mu);
                return shares->workers;
            };
            hooks.reload = [&engine](const sensor::detect::DetectConfig& c,
                                     sensor::detect::LoadSummary* summary, std::string* error) {
                return engine.reload(c, summary, error);
            };
            agent =
                std::make_unique<sensor::agent::Agent>(std::move(agent_options), std::move(hooks));
            agent->start();  // its own thread: inspection never waits for the manager
            // Alerts also go to the manager, in bounded, rate-limited batches.
            engine.set_alert_tap([a = agent.get()](const sensor::output::AlertEvent& ev) {
                v1::Alert alert;
                char buf[48];
                alert.set_timestamp(ev.ts_ns);
                alert.set_gid(ev.meta->gid);
                alert.set_sid(ev.meta->sid);
                alert.set_rev(ev.meta->rev);
                alert.set_msg(ev.meta->signature);
                alert.set_severity(static_cast<uint32_t>(ev.meta->severity));
                alert.set_src_ip(sensor::output::format_address(ev.src, buf));
                alert.set_dst_ip(sensor::output::format_address(ev.dst, buf));
                alert.set_src_port(ev.sport);
                alert.set_dst_port(ev.dport);
                const char* proto = sensor::output::proto_name(ev.proto);
                alert.set_proto(proto != nullptr ? proto : std::to_string(ev.proto));
                alert.set_action(ev.action == sensor::output::AlertAction::kBlocked
                                     ? v1::ALERT_ACTION_BLOCKED
                                     : v1::ALERT_ACTION_ALLOWED);
                a->on_alert(std::move(alert));
            });
        }
        // Before the metrics line: whoever waits for it may signal the sensor at once.
        g_engine = &engine;
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        std::signal(SIGHUP, on_hup);
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
        sensor::engine::RunResult result = engine.run();
        g_engine = nullptr;
        if (exporter) {
            exporter->stop();
        }
        if (agent) {
            agent->stop();
        }
        if (sc.mode == sensor::engine::CaptureMode::kPcapFile ||
            sc.mode == sensor::engine::CaptureMode::kDpdk) {
            std::fputs(sensor::engine::format_summary(result, engine.config().workers).c_str(),
                       stdout);
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
        if (result.exit_code != 0) {
            std::fprintf(stderr, "picket-sensor: error: %s\n", result.error.c_str());
        }
        return result.exit_code;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "picket-sensor: error: %s\n", e.what());
        return 1;
    }
}
