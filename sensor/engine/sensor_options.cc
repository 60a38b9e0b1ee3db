// picket-sensor's command line: every option (CLI11), the rules between options CLI11 cannot
// express, and the configuration they make with sensor.yaml (-c) and --set.
#include "sensor/engine/sensor_options.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <CLI/CLI.hpp>

#include "sensor/detect/detect.h"
#include "sensor/detect/keywords_list.h"
#include "sensor/filter/filter.h"

namespace picket::sensor::engine {
namespace {

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

}  // namespace

int parse_sensor_options(int argc, char** argv, SensorOptions* out) {
    SensorOptions& o = *out;
    auto& pcaps = o.pcaps;
    auto& iface = o.iface;
    auto& config_path = o.config_path;
    auto& log_dir = o.log_dir;
    auto& capture_mode = o.capture_mode;
    auto& checksum = o.checksum;
    auto& sets = o.sets;
    auto& bpf_words = o.bpf_words;
    auto& workers = o.workers;
    auto& verbose = o.verbose;
    auto& test_rules = o.test_rules;
    auto& profile_rules = o.profile_rules;
    auto& simulate_ips = o.simulate_ips;
    auto& queue = o.queue;
    auto& bridge = o.bridge;
    auto& exclusive_rules = o.exclusive_rules;
    auto& extra_rules = o.extra_rules;
    auto& pcap_loop = o.pcap_loop;
    auto& pcap_rate = o.pcap_rate;
    auto& metrics_listen = o.metrics_listen;
    auto& profile_args = o.profile;
    auto& margs = o.manager;
    CLI::App app{"picket-sensor: network intrusion detection sensor"};
    app.set_version_flag("-V,--version", std::string("picket-sensor ") + PICKET_VERSION);

    app.add_option("-r", pcaps, "read packets from pcap/pcapng FILE or every file of DIR")
        ->type_name("FILE|DIR")
        ->allow_extra_args(false);
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
    std::string rule_syntax;
    app.add_option("--rule-syntax", rule_syntax,
                   "the language of the rules of every rule file loaded (-S, -s, rule-files): "
                   "snort3, suricata or auto (per rule, the default); same as --set "
                   "rule-syntax=...")
        ->check(CLI::IsMember({"auto", "suricata", "snort3"}));
    app.add_flag("-T", test_rules,
                 "check the configuration and rules, print the load summary, and exit "
                 "(non-zero when a rule was skipped)");
    bool list_keywords = false;
    app.add_flag("--list-keywords", list_keywords,
                 "print every Suricata and Snort 3 rule keyword, one per line: "
                 "LANGUAGE<TAB>NAME<TAB>KIND<TAB>STATUS, and exit");
    app.add_flag("--profile-rules", profile_rules,
                 "per-rule checks, matches and time: the costliest rules printed at exit, every "
                 "rule in LOGDIR/rule_perf.json (profiling.rules.enabled)");
    app.add_flag("-v", verbose, "verbose logging");
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
    auto* manager_opt = app.add_option("--manager", margs.manager,
                                       "fleet manager(s) to connect to: one address, several "
                                       "separated by commas, or a name with several addresses "
                                       "(first choice by a hash of --name, the next on failure)")
                            ->type_name("HOST:PORT[,HOST:PORT...]")
                            ->group("Fleet");
    app.add_option("--name", margs.name, "this sensor's name in the fleet")
        ->needs(manager_opt)
        ->group("Fleet");
    app.add_option("--token", margs.token, "enrollment token")->needs(manager_opt)->group("Fleet");
    app.add_option("--bootstrap-token-file", margs.bootstrap_token_file,
                   "bootstrap token (picketctl enroll token create): enroll with it once, keep "
                   "the generated key and certificate in --state-dir/tls and renew them")
        ->type_name("FILE")
        ->needs(manager_opt)
        ->group("Fleet");
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
    if (list_keywords) {
        // Needs no input or rules: the list comes from the parser's own tables.
        for (const detect::KeywordInfo& k : detect::list_keywords()) {
            std::printf("%s\t%s\t%s\t%s\n", k.language.c_str(), k.name.c_str(), k.kind.c_str(),
                        k.status.c_str());
        }
        return 0;
    }
    o.pcap_loop_given = loop_opt->count() != 0;
    o.pcap_rate_given = rate_opt->count() != 0;
    if (!rule_syntax.empty()) {
        // A sensor.yaml key like the others: sensor_yaml() applies it after -c, and
        // load_sensor_config() reads it, for -T and for a running sensor alike.
        o.sets.push_back("rule-syntax=" + rule_syntax);
    }
    return -1;
}

int check_sensor_options(const SensorOptions& o) {
    if (!o.profile.ladder.empty()) {
        // A profile reads files, once per run, and serves nothing.
        const char* conflict = !o.iface.empty()             ? "-i"
                               : !o.manager.manager.empty() ? "--manager"
                               : o.pcap_loop_given          ? "--pcap-loop"
                               : o.pcap_rate_given          ? "--pcap-rate"
                               : !o.metrics_listen.empty()  ? "--metrics-listen"
                               : o.test_rules               ? "-T"
                                                            : nullptr;
        if (conflict != nullptr) {
            std::fprintf(stderr, "picket-sensor: --profile-configs cannot be combined with %s\n",
                         conflict);
            return kExitUsage;
        }
        if (o.pcaps.empty()) {
            std::fprintf(stderr,
                         "picket-sensor: --profile-configs needs -r FILE: the traffic to run "
                         "through every step\n");
            return kExitUsage;
        }
    }
    // DPDK's ports come from dpdk.interfaces: like the inline modes it needs no -r or -i.
    const bool inline_capture = o.capture_mode == "nfqueue" ||
                                o.capture_mode == "afpacket-inline" || o.capture_mode == "dpdk";
    if (!o.queue.empty() && o.capture_mode != "nfqueue") {
        std::fprintf(stderr, "picket-sensor: --queue needs --capture nfqueue\n");
        return kExitUsage;
    }
    if (!o.bridge.empty() && o.capture_mode != "afpacket-inline") {
        std::fprintf(stderr, "picket-sensor: --bridge needs --capture afpacket-inline\n");
        return kExitUsage;
    }
    if (o.pcaps.empty() && o.iface.empty() && !inline_capture && !o.test_rules) {
        std::fprintf(stderr,
                     "picket-sensor: no input: give -r FILE, -i IFACE, --capture nfqueue "
                     "--queue Q, --capture afpacket-inline --bridge IF1:IF2 or --capture "
                     "dpdk\n");
        return kExitUsage;
    }

    return -1;
}

Config sensor_yaml(const SensorOptions& o) {
    Config config = o.config_path.empty() ? Config() : Config::load_file(o.config_path);
    if (!o.pcaps.empty()) {
        YAML::Node list(YAML::NodeType::Sequence);
        for (const auto& p : o.pcaps) {
            list.push_back(p);
        }
        config.set_value("pcap-file.paths", list);
    }
    if (!o.iface.empty()) {
        config.set_value("capture.interface", YAML::Node(o.iface));
    }
    if (o.pcap_loop_given) {
        config.set_value("pcap-file.loop", YAML::Node(o.pcap_loop));
    }
    if (o.pcap_rate_given) {
        config.set_value("pcap-file.rate", YAML::Node(o.pcap_rate));
    }
    if (!o.metrics_listen.empty()) {
        config.set_value("metrics.listen", YAML::Node(o.metrics_listen));
    }
    if (!o.capture_mode.empty()) {
        config.set_value("capture.mode", YAML::Node(o.capture_mode));
    }
    if (o.workers > 0) {
        config.set_value("workers", YAML::Node(o.workers));
    }
    if (!o.queue.empty()) {
        config.set_value("capture.nfqueue.queue", YAML::Node(o.queue));
    }
    if (!o.bridge.empty()) {
        config.set_value("capture.afpacket-inline.bridge", YAML::Node(o.bridge));
    }
    if (o.simulate_ips) {
        config.set_value("ips.simulate", YAML::Node(true));
    }
    if (!o.log_dir.empty()) {
        config.set_value("default-log-dir", YAML::Node(o.log_dir));
    }
    if (!o.checksum.empty()) {
        config.set_value("checksum-validation", YAML::Node(o.checksum == "all" ? "yes" : "no"));
    }
    if (!o.bpf_words.empty()) {
        std::string expr;
        for (const auto& w : o.bpf_words) {
            expr += (expr.empty() ? "" : " ") + w;
        }
        config.set_value("capture.bpf-filter", YAML::Node(expr));
    }
    if (o.profile_rules) {
        config.set_value("profiling.rules.enabled", YAML::Node(true));
    }
    for (const auto& s : o.sets) {
        config.set(s);
    }
    return config;
}

SensorConfig sensor_config_from(const Config& config, const SensorOptions& o) {
    SensorConfig sc = load_sensor_config(config, /*require_input=*/!o.test_rules);
    detect::read_detect_settings(config, &sc.detect);  // mpm-algo, profiling.rules
    if (!o.exclusive_rules.empty()) {
        sc.detect.rule_files = {o.exclusive_rules};
    }
    for (const auto& f : o.extra_rules) {
        sc.detect.rule_files.push_back(f);
    }
    return sc;
}

// -T: load and compile the rules, print every diagnostic and the summary, exit 1 when any
// rule was skipped.
int check_rules(const SensorConfig& sc) {
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

}  // namespace picket::sensor::engine
