// The manager's Prometheus series: per-sensor series (common/metrics/sensor_series.h) from the
// store's sensor rows and the in-memory latest reports, fleet series from the store, and the
// manager's own gRPC latencies (a server interceptor) and message counters.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/metrics/sensor_series.h"
#include "common/time_util.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/support/server_interceptor.h"
#include "manager/service/internal.h"

namespace picket::manager::service {

namespace {

using picket::metrics::Exposition;
using picket::metrics::Labels;
using picket::metrics::SensorSeriesInput;

constexpr double kNsPerSec = 1e9;

// Times one unary RPC from its creation to the status being sent.
class TimingInterceptor final : public grpc::experimental::Interceptor {
public:
    TimingInterceptor(const ServiceMetrics::Rpc* rpc)
        : rpc_(rpc), start_(std::chrono::steady_clock::now()) {}

    void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
        if (methods->QueryInterceptionHookPoint(
                grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
            double secs =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
            rpc_->duration->observe(secs);
            int code = static_cast<int>(methods->GetSendStatus().error_code());
            if (code >= 0 && code < static_cast<int>(rpc_->by_code.size())) {
                rpc_->by_code[static_cast<size_t>(code)]->inc();
            }
        }
        methods->Proceed();
    }

private:
    const ServiceMetrics::Rpc* rpc_;
    std::chrono::steady_clock::time_point start_;
};

class TimingFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
public:
    explicit TimingFactory(const ServiceMetrics* m) : m_(m) {}
    grpc::experimental::Interceptor* CreateServerInterceptor(
        grpc::experimental::ServerRpcInfo* info) override {
        if (info->type() != grpc::experimental::ServerRpcInfo::Type::UNARY) {
            return nullptr;  // the SensorLink stream lives as long as the sensor: not a latency
        }
        auto it = m_->rpcs.find(info->method());
        if (it == m_->rpcs.end()) {
            return nullptr;
        }
        return new TimingInterceptor(&it->second);
    }

private:
    const ServiceMetrics* m_;
};

// gRPC status code names by number (the `code` label).
constexpr std::string_view kCodes[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

std::string capture_text(const std::string& mode, const std::string& source) {
    // CAPTURE_MODE_AF_PACKET -> af-packet
    std::string m = mode;
    if (m.rfind("CAPTURE_MODE_", 0) == 0) {
        m = m.substr(13);
    }
    for (char& c : m) {
        c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (m.empty() || m == "unspecified") {
        m = "unknown";
    }
    return source.empty() ? m : m + ":" + source;
}

// The fleet's own series (sensors by state, bundles, deployments, rules updates): exported by
// one replica, the leader, when several share a database.
void collect_fleet(Core& core, Exposition& out, int64_t known, int64_t connected) {
    constexpr std::string_view kSensorsHelp =
        "Sensors known to the manager (ever connected), by connection state.";
    out.gauge("picket_sensors", kSensorsHelp, {{"state", "connected"}},
              static_cast<double>(connected));
    out.gauge("picket_sensors", kSensorsHelp, {{"state", "disconnected"}},
              static_cast<double>(known - connected));

    auto summary = core.store.fleet_summary();
    if (!summary.ok()) {
        throw std::runtime_error("metrics: fleet summary: " +
                                 std::string(summary.status().message()));
    }
    out.gauge("picket_bundle_latest_version",
              "Newest bundle version pushed to the manager (0 = none).", {},
              static_cast<double>(summary->latest_bundle_version));
    out.gauge("picket_bundles", "Bundle versions stored.", {},
              static_cast<double>(summary->bundles));
    out.counter("picket_deployments_total", "Deployments created (kind deploy).", {},
                static_cast<double>(summary->deploys));
    out.counter("picket_rollbacks_total", "Rollbacks created (manual and automatic).", {},
                static_cast<double>(summary->rollbacks));
    constexpr std::string_view kLastHelp =
        "Creation time of the newest deployment or rollback (absent before the first).";
    if (summary->last_deployment_at > 0) {
        out.gauge("picket_deployment_last_timestamp_seconds", kLastHelp, {},
                  static_cast<double>(summary->last_deployment_at) / kNsPerSec);
    } else {
        out.declare("picket_deployment_last_timestamp_seconds", kLastHelp,
                    picket::metrics::Type::kGauge);
    }

    // Targets of the newest deployment by state, every state listed (0 when none).
    // (The counts the store keeps per deployment: not its 10,000 targets on every scrape.)
    auto latest = core.store.list_deployments(1, false);
    if (!latest.ok()) {
        throw std::runtime_error("metrics: deployments: " + std::string(latest.status().message()));
    }
    constexpr store::TargetState kStates[] = {
        store::TargetState::kPending,  store::TargetState::kSent,
        store::TargetState::kApplied,  store::TargetState::kRejected,
        store::TargetState::kTimedOut, store::TargetState::kSuperseded};
    int64_t counts[std::size(kStates)] = {};
    int64_t latest_id = 0;
    std::string latest_state;
    if (!latest->empty()) {
        const store::Deployment& d = latest->front();
        latest_id = d.id;
        latest_state = std::string(store::to_string(d.state));
        const store::TargetCounts& c = d.counts;
        const int64_t by_state[] = {c.pending,  c.sent,      c.applied,
                                    c.rejected, c.timed_out, c.superseded};
        static_assert(std::size(by_state) == std::size(kStates));
        for (size_t i = 0; i < std::size(kStates); ++i) {
            counts[static_cast<int>(kStates[i])] = by_state[i];
        }
    }
    for (size_t i = 0; i < std::size(kStates); ++i) {
        out.gauge("picket_deployment_targets",
                  "Targets of the newest deployment by state (pending, sent, applied, rejected, "
                  "timed_out, superseded).",
                  {{"state", std::string(store::to_string(kStates[i]))}},
                  static_cast<double>(counts[i]));
    }
    out.gauge("picket_deployment_latest_id", "Id of the newest deployment (0 = none).", {},
              static_cast<double>(latest_id));
    constexpr store::DeploymentState kDeploymentStates[] = {
        store::DeploymentState::kCanary,    store::DeploymentState::kSoaking,
        store::DeploymentState::kRolling,   store::DeploymentState::kCompleted,
        store::DeploymentState::kFailed,    store::DeploymentState::kRolledBack,
        store::DeploymentState::kSuperseded};
    for (store::DeploymentState st : kDeploymentStates) {
        std::string name(store::to_string(st));
        out.gauge("picket_deployment_latest_state",
                  "1 for the state the newest deployment is in, 0 for the others.",
                  {{"state", name}}, name == latest_state ? 1.0 : 0.0);
    }

    // The rules update (manager/rules): how old the fleet's rules are, how updates went, and
    // what each source held at its last good fetch.
    auto updates = core.store.rule_update_summary();
    if (!updates.ok()) {
        throw std::runtime_error("metrics: rule updates: " +
                                 std::string(updates.status().message()));
    }
    constexpr std::string_view kUpdatesHelp =
        "Rules updates (picketctl rules update and the schedule) by result: new_version, "
        "unchanged, failed.";
    for (auto [result, n] : {std::pair<const char*, int64_t>{"new_version", updates->new_version},
                             {"unchanged", updates->unchanged},
                             {"failed", updates->failed}}) {
        out.counter("picket_rules_updates_total", kUpdatesHelp, {{"result", result}},
                    static_cast<double>(n));
    }
    constexpr std::string_view kUpdateLastHelp =
        "When the newest rules update that did not fail finished (absent before the first).";
    if (updates->last_success_at > 0) {
        out.gauge("picket_rules_update_last_success_timestamp_seconds", kUpdateLastHelp, {},
                  static_cast<double>(updates->last_success_at) / kNsPerSec);
    } else {
        out.declare("picket_rules_update_last_success_timestamp_seconds", kUpdateLastHelp,
                    picket::metrics::Type::kGauge);
    }
    auto sources = core.store.list_rule_sources();
    if (!sources.ok()) {
        throw std::runtime_error("metrics: rule sources: " +
                                 std::string(sources.status().message()));
    }
    constexpr std::string_view kSourceRulesHelp =
        "Rules (enabled or not) of a rule source at its last good fetch, after merging.";
    constexpr std::string_view kSourceFailHelp =
        "1 when the last fetch of a rule source failed (its last good fetch is still used).";
    if (sources->empty()) {
        out.declare("picket_rules_source_rules", kSourceRulesHelp, picket::metrics::Type::kGauge);
        out.declare("picket_rules_source_fetch_failing", kSourceFailHelp,
                    picket::metrics::Type::kGauge);
    }
    for (const store::RuleSourceRow& r : *sources) {
        out.gauge("picket_rules_source_rules", kSourceRulesHelp, {{"source", r.name}},
                  static_cast<double>(r.rules));
        out.gauge("picket_rules_source_fetch_failing", kSourceFailHelp, {{"source", r.name}},
                  r.last_error.empty() ? 0.0 : 1.0);
    }
}

void collect(Core& core, Exposition& out) {
    auto sensors = core.store.list_sensors();
    if (!sensors.ok()) {
        throw std::runtime_error("metrics: list sensors: " +
                                 std::string(sensors.status().message()));
    }
    auto live = core.live.all();
    std::vector<SensorSeriesInput> inputs;
    inputs.reserve(sensors->size());
    int64_t connected = 0;
    int64_t known = 0;
    // Replicas on one database: each exports the sensors streaming to it, the leader also
    // those connected nowhere and the fleet series, so that a Prometheus scraping every
    // replica sums to the fleet once.
    const bool leader = core.is_leader();
    std::vector<std::string> mine;
    for (const store::Sensor& s : *sensors) {
        if (s.first_seen == 0) {
            continue;  // enrolled, never connected: nothing to show but its name
        }
        ++known;
        connected += s.connected ? 1 : 0;
        const bool here = core.hub.contains(s.name);
        if (core.replicated && !here && !(leader && !s.connected)) {
            continue;
        }
        if (here) {
            mine.push_back(s.name);
        }
        SensorSeriesInput in;
        in.sensor = s.name;
        in.up = s.connected;
        in.host = s.host;
        in.version = s.version;
        in.labels = s.labels;
        in.bundle_version = static_cast<uint64_t>(s.running_version);
        if (s.running_version > 0) {
            in.bundle_sha = core.bundles.ref(s.running_version).sha256();
        }
        std::string source;
        auto it = live.find(s.name);
        if (it != live.end()) {
            const LiveState::SensorLive& l = it->second;
            source = l.capture_source;
            l.fill_series(&in);
        }
        in.capture = capture_text(s.capture_mode, source);
        inputs.push_back(std::move(in));
    }
    picket::metrics::append_sensor_series(out, inputs);
    // Also for a lone manager (its own leader): the dashboards' replica row is never empty.
    const std::string& replica = core.coordinator->replica();
    for (const std::string& name : mine) {
        out.gauge("picket_sensor_replica_info",
                  "1 for each sensor streaming to this manager replica.",
                  {{"sensor", name}, {"replica", replica}}, 1.0);
    }

    if (!core.replicated || leader) {
        collect_fleet(core, out, known, connected);
    }

    uint64_t alerts = 0, alerts_dropped = 0;
    for (const auto& [name, l] : live) {
        alerts += l.alerts_received;
        alerts_dropped += l.alerts_dropped;
    }
    out.counter("picket_manager_alerts_received_total",
                "Alerts received from sensors since the manager started.", {},
                static_cast<double>(alerts));
    out.counter("picket_manager_alerts_dropped_by_sensors_total",
                "Alerts sensors reported dropping before sending (full alert buffer).", {},
                static_cast<double>(alerts_dropped));

    // Report timestamps and picket_sensor_last_report_timestamp_seconds are the sensor's
    // clock; this says how far that clock is from the manager's (transit delay included; a
    // report sent late from the sensor's buffer reads as behind until the next fresh one).
    constexpr std::string_view kOffsetHelp =
        "Sensor clock minus manager clock at the latest metrics report, in seconds.";
    bool any_offset = false;
    for (const auto& [name, l] : live) {
        if (l.latest.timestamp != 0 && l.received_at != 0) {
            out.gauge("picket_manager_sensor_clock_offset_seconds", kOffsetHelp, {{"sensor", name}},
                      static_cast<double>(l.latest.timestamp - l.received_at) / kNsPerSec);
            any_offset = true;
        }
    }
    if (!any_offset) {
        out.declare("picket_manager_sensor_clock_offset_seconds", kOffsetHelp,
                    picket::metrics::Type::kGauge);
    }

    // Read at start-up: a renewed certificate takes effect (and shows here) after a restart.
    constexpr std::string_view kCertHelp =
        "Expiry (notAfter) of the manager's TLS certificate, Unix seconds; absent when insecure.";
    if (core.tls_cert_not_after > 0) {
        out.gauge("picket_manager_certificate_expiry_timestamp_seconds", kCertHelp, {},
                  static_cast<double>(core.tls_cert_not_after));
    } else {
        out.declare("picket_manager_certificate_expiry_timestamp_seconds", kCertHelp,
                    picket::metrics::Type::kGauge);
    }
}

}  // namespace

void LiveState::SensorLive::fill_series(SensorSeriesInput* in) const {
    in->ips = ips_mode;
    if (latest.timestamp != 0) {
        in->last_report_ns = latest.timestamp;
        in->counters = &latest.counters;
    }
    for (const auto& w : workers) {
        in->workers.push_back({w.worker(), w.packets(), w.bytes()});
    }
}

void ServiceMetrics::init(picket::metrics::Registry& registry, Core& core) {
    const auto* svc = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
        "picket.v1.FleetAdmin");
    if (svc != nullptr) {
        for (int i = 0; i < svc->method_count(); ++i) {
            const std::string& m = svc->method(i)->name();
            Rpc rpc;
            rpc.duration = &registry.histogram(
                "picket_manager_grpc_request_duration_seconds",
                "Time to serve one FleetAdmin RPC (picketctl), from arrival to status.",
                {{"method", m}}, picket::metrics::latency_buckets());
            for (std::string_view code : kCodes) {
                rpc.by_code.push_back(&registry.counter(
                    "picket_manager_grpc_requests_total", "FleetAdmin RPCs served, by status code.",
                    {{"method", m}, {"code", std::string(code)}}));
            }
            rpcs.emplace("/picket.v1.FleetAdmin/" + m, std::move(rpc));
        }
    }
    constexpr std::string_view kHelp = "SensorLink messages received, by kind.";
    hello = &registry.counter("picket_manager_sensor_messages_total", kHelp, {{"kind", "hello"}});
    metrics =
        &registry.counter("picket_manager_sensor_messages_total", kHelp, {{"kind", "metrics"}});
    alerts = &registry.counter("picket_manager_sensor_messages_total", kHelp, {{"kind", "alerts"}});
    apply_result = &registry.counter("picket_manager_sensor_messages_total", kHelp,
                                     {{"kind", "apply_result"}});
    pong = &registry.counter("picket_manager_sensor_messages_total", kHelp, {{"kind", "pong"}});
    reports_duplicate = &registry.counter(
        "picket_manager_reports_duplicate_total",
        "Metrics reports ignored as duplicates: their sensor process (boot id) already had a "
        "report with that seq or a later one received or stored (resent after a reconnect or a "
        "failover between managers).");
    registry.add_collector([&core](Exposition& out) { collect(core, out); });
    // Apart from the store's series, so that a replica without its database still says so.
    registry.add_collector([&core](Exposition& out) {
        out.gauge("picket_manager_replica_info",
                  "1 for this manager replica, with its name and role (leader, follower, "
                  "unavailable: no database).",
                  {{"replica", core.coordinator->replica()},
                   {"role", std::string(ha::to_string(core.coordinator->role()))}},
                  1.0);
        // The store's writer, from its own counters (no database read).
        const store::Store::WriterStats w = core.store.writer_stats();
        out.counter("picket_manager_store_writes_total",
                    "Writes (reports, target states, sensor connects, ...) the store's writer "
                    "has carried out, committed or failed.",
                    {}, static_cast<double>(w.ops));
        out.counter("picket_manager_store_write_transactions_total",
                    "Transactions the store's writer committed its writes in (batches).", {},
                    static_cast<double>(w.transactions));
        out.counter("picket_manager_store_conflicts_retried_total",
                    "Writes rerun in a new transaction after PostgreSQL chose them as a deadlock "
                    "victim or a serialization failure (replicas contending for rows).",
                    {}, static_cast<double>(w.conflicts_retried));
    });
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> ServiceMetrics::interceptor()
    const {
    return std::make_unique<TimingFactory>(this);
}

}  // namespace picket::manager::service
