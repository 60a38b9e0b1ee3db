// picket-sensor's wiring around the engine: the fleet agent (--manager), the Prometheus
// collector (--metrics-listen) and how the sensor names its capture to both.
#include "sensor/engine/sensor_wiring.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace picket::sensor::engine {
namespace {

std::string build_agent_options(const ManagerArgs& a, agent::AgentOptions* o) {
    o->manager = a.manager;
    o->name = a.name;
    o->token = a.token;
    o->tls_cert = a.tls_cert;
    o->tls_key = a.tls_key;
    o->ca = a.ca;
    o->insecure = a.insecure;
    o->state_dir = a.state_dir;
    if (!a.bootstrap_token_file.empty()) {
        std::ifstream in(a.bootstrap_token_file);
        std::string token;
        std::getline(in, token);
        while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
            token.pop_back();
        }
        if (token.empty()) {
            return "--bootstrap-token-file " + a.bootstrap_token_file + ": empty or unreadable";
        }
        o->bootstrap_token = token;
        o->bootstrap = true;
    }
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

}  // namespace

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof(buf) - 1) != 0) {
        return "";
    }
    return buf;
}

// "pcap-file:/x.pcap", "pcap-live:eth0", "af-packet:eth0": the manager's form of the same.
std::string capture_text(const SensorConfig& sc) {
    switch (sc.mode) {
        case CaptureMode::kPcapFile:
            return strings::cat("pcap-file:", sc.pcap_paths.empty() ? "" : sc.pcap_paths[0]);
        case CaptureMode::kPcapLive:
            return strings::cat("pcap-live:", sc.iface);
        case CaptureMode::kAfPacket:
            return strings::cat("af-packet:", sc.iface);
        case CaptureMode::kNfqueue: {
            std::string text = strings::cat("nfqueue:", sc.nfqueue.queue);
            if (sc.nfqueue_count > 1) {
                strings::append(text, ":", sc.nfqueue.queue + sc.nfqueue_count - 1);
            }
            return text;
        }
        case CaptureMode::kAfPacketInline:
            return strings::cat("afpacket-inline:", sc.afpacket_inline.iface1, ":",
                                sc.afpacket_inline.iface2);
        case CaptureMode::kDpdk: {
            // "dpdk:net_pcap0>net_pcap1,0000:01:00.0" (">": inline, to the copy-iface).
            std::string text = "dpdk:";
            for (size_t i = 0; i < sc.dpdk.interfaces.size(); ++i) {
                const auto& port = sc.dpdk.interfaces[i];
                strings::append(text, i == 0 ? "" : ",", port.name);
                if (sc.dpdk.inline_mode && !port.copy_iface.empty()) {
                    strings::append(text, ">", port.copy_iface);
                }
            }
            return text;
        }
    }
    return "unknown";
}

int prepare_managed(const ManagerArgs& margs, SensorConfig& sc,
                    agent::AgentOptions& agent_options) {
    if (std::string err = build_agent_options(margs, &agent_options); !err.empty()) {
        std::fprintf(stderr, "picket-sensor: %s\n", err.c_str());
        return kExitUsage;
    }
    if (agent_options.bootstrap) {
        // A node's identity: the stored pair, or a new key enrolled with the token now. A
        // refusal (bad / spent token, revoked name) is final: exit 1 with the manager's reason.
        if (absl::Status st = agent::ensure_identity(agent_options); !st.ok()) {
            std::fprintf(stderr, "picket-sensor: %s\n", std::string(st.message()).c_str());
            return 1;
        }
    }
    // Start on the last good bundle, if any; the manager is not needed for that.
    agent_options.base_detect = sc.detect;
    agent_options.running.config = sc.detect;
    auto last = agent::load_last_good(agent_options.state_dir, sc.detect,
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
    return -1;
}

std::unique_ptr<agent::Agent> start_agent(Engine& engine, const SensorConfig& sc,
                                          agent::AgentOptions agent_options,
                                          const std::string& version) {
    agent_options.version = version;
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
    agent::SensorHooks hooks;
    // The agent asks for the stats, then for the worker totals, of one report: hand it
    // the shares read together with those stats, so that they sum to decoder.pkts.
    struct WorkerShares {
        std::mutex mu;
        std::vector<agent::WorkerCounters> workers;
    };
    auto shares = std::make_shared<WorkerShares>();
    hooks.stats = [&engine, shares] {
        std::vector<WorkerTotals> totals;
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
    hooks.reload = [&engine](const detect::DetectConfig& c, detect::LoadSummary* summary,
                             std::string* error) { return engine.reload(c, summary, error); };
    auto agent = std::make_unique<agent::Agent>(std::move(agent_options), std::move(hooks));
    agent->start();  // its own thread: inspection never waits for the manager
    // Alerts also go to the manager, in bounded, rate-limited batches.
    engine.set_alert_tap([a = agent.get()](const output::AlertEvent& ev) {
        v1::Alert alert;
        char buf[48];
        alert.set_timestamp(ev.ts_ns);
        alert.set_gid(ev.meta->gid);
        alert.set_sid(ev.meta->sid);
        alert.set_rev(ev.meta->rev);
        alert.set_msg(ev.meta->signature);
        alert.set_severity(static_cast<uint32_t>(ev.meta->severity));
        alert.set_src_ip(output::format_address(ev.src, buf));
        alert.set_dst_ip(output::format_address(ev.dst, buf));
        alert.set_src_port(ev.sport);
        alert.set_dst_port(ev.dport);
        const char* proto = output::proto_name(ev.proto);
        alert.set_proto(proto != nullptr ? proto : std::to_string(ev.proto));
        alert.set_action(ev.action == output::AlertAction::kBlocked ? v1::ALERT_ACTION_BLOCKED
                                                                    : v1::ALERT_ACTION_ALLOWED);
        a->on_alert(std::move(alert));
    });
    return agent;
}

// --metrics-listen: one collector that renders this sensor's live counters on every scrape,
// with the same series the manager exports for it. `fixed` holds what does not change.
void add_sensor_collector(metrics::Registry& registry, const Engine& engine,
                          const agent::Agent* agent, metrics::SensorSeriesInput fixed) {
    registry.add_collector([&engine, agent, fixed = std::move(fixed)](metrics::Exposition& out) {
        std::vector<WorkerTotals> workers;
        const StatsSnapshot stats = engine.collect_stats(&workers);
        metrics::SensorSeriesInput in = fixed;
        in.up = true;
        in.last_report_ns = wall_clock_ns();
        in.counters = &stats.values();
        for (const auto& w : workers) {
            in.workers.push_back({w.worker, w.packets, w.bytes});
        }
        if (agent != nullptr) {
            const picket::v1::BundleRef ref = agent->running_bundle();
            in.bundle_version = ref.version();
            in.bundle_sha = ref.sha256();
        }
        metrics::append_sensor_series(out, {in});
    });
}

}  // namespace picket::sensor::engine
