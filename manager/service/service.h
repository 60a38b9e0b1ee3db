// picket-manager's gRPC front: the SensorLink service (one bidirectional stream per sensor:
// Hello/auth, metrics, alerts, apply results; ApplyBundle and Ping going out), the FleetAdmin
// service used by picketctl, and the in-memory live state (latest counters, recent alerts) the
// Prometheus exporter reads (metrics.cc). SensorLink.Connect runs on gRPC's callback API: no
// thread per stream, the store work of all streams on a few worker threads, one ping timer
// (README.md "Threads and ownership", "Limits"). All public methods are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/ha/coordinator.h"
#include "manager/rollout/rollout.h"
#include "manager/store/store.h"
#include "picket/v1/picket.pb.h"

namespace picket::metrics {
class Registry;
}

namespace picket::manager::service {

struct ManagerOptions {
    std::string listen;  // "127.0.0.1:7443", "[::1]:0", "0.0.0.0:7443"
    std::string db_path;
    std::string tls_cert_file;
    std::string tls_key_file;
    std::string client_ca_file;
    // tls.ca-key / --ca-key: the fleet CA's private key (the CA certificate is client_ca_file).
    // Set, the manager signs bootstrap enrollments and renewals (SensorLink.Enroll,
    // RenewCertificate); empty, both are FAILED_PRECONDITION.
    std::string ca_key_file;
    // tls.enroll-validity / --enroll-validity: validity of the certificates it signs.
    std::chrono::seconds enroll_validity{30 * 86400};
    std::string admin_token;  // empty: admin RPCs refused unless insecure
    bool insecure = false;    // no TLS, no auth: loopback only
    int64_t target_timeout_seconds = 60;
    std::chrono::milliseconds ping_interval{15000};
    std::chrono::milliseconds rollout_poll{500};
    rollout::HealthGate default_gate;
    size_t alert_ring_size = 1000;
    std::chrono::minutes metric_prune_interval{10};
    // Where fetched rule sources are kept by content address; "" = "rule-sources" beside the
    // database file.
    std::string rules_dir;
    // manager.yaml rules.update-interval: run the rules update (picketctl rules update) this
    // often, each wait jittered by up to 10% either way so that managers started together do
    // not hit a rule server at once; the first run comes within a minute of the start. 0 = only
    // on demand. rules.deploy-to (a selector, "" = store the new version only), rules.canary
    // and rules.soak deploy each new version as `deploy --to --canary --soak` would.
    std::chrono::seconds rules_update_interval{0};
    std::string rules_deploy_to;
    uint32_t rules_canary_percent = 0;
    uint32_t rules_soak_seconds = 0;
    // Several replicas on one PostgreSQL database (docs/fleet.md "Several managers"): this
    // replica's name in logs, changes and metrics ("" = the listen address), and how often
    // every stream re-reads what its sensor should run, the safety net under the change
    // notifications (0 = never: a lone manager has no other replica to miss).
    std::string replica_name;
    std::chrono::seconds reconcile_interval{0};
};

// True for 127.0.0.0/8, ::1 and "localhost" (host part of "HOST:PORT", "[V6]:PORT",
// optionally prefixed "ipv4:" / "ipv6:").
bool is_loopback_address(std::string_view address);
// Argument checks of picket-manager (exit 2 on error): a listen address with a port,
// --insecure only on a loopback address and without TLS files, otherwise all three TLS files
// and an admin token, a positive target timeout.
absl::Status validate_options(const ManagerOptions& options);

}  // namespace picket::manager::service
namespace picket::metrics {
struct SensorSeriesInput;
}
namespace picket::manager::service {

// The bounds of a sensor's MetricsReport: at most kMaxReportCounters counters named by at most
// 128 of [A-Za-z0-9._-], at most kMaxReportWorkers workers. A report past them is refused
// (InvalidArgument naming the bound) before anything of it is kept or stored: a sensor's real
// reports hold about 150 counters.
inline constexpr int kMaxReportCounters = 4096;
inline constexpr int kMaxReportWorkers = 1024;
absl::Status check_metrics_report(const picket::v1::MetricsReport& report);

// What the manager keeps in memory about connected sensors (not durable).
// The key of a sensor process's reports: Hello.boot_id, or "t<started_at>" from a sensor that
// sends none (older versions).
std::string report_boot(const picket::v1::Hello& hello);

class LiveState {
public:
    struct SensorLive {
        rollout::CounterSnapshot latest;  // timestamp 0 = no report yet
        std::vector<picket::v1::WorkerMetrics> workers;
        uint64_t last_seq = 0;
        int64_t started_at = 0;  // Hello.started_at
        std::string boot;        // report_boot(Hello): a new value = a new sensor process
        std::string peer;
        std::string capture_source;
        bool ips_mode = false;
        uint64_t alerts_received = 0;
        uint64_t alerts_dropped = 0;  // AlertBatch.dropped, summed
        int64_t received_at = 0;      // manager wall clock when `latest` arrived (0 = unknown)
        // Content address of the bundle the sensor runs: from its Hello, then from each
        // ApplyBundle it applied. "" = unknown (a sensor that predates it, local rules).
        std::string bundle_sha256;
        // The live part of the sensor's /metrics series: IPS mode, last report and its
        // counters (pointing into this object), workers. Capture and identity are the caller's.
        void fill_series(metrics::SensorSeriesInput* in) const;
    };
    struct RecentAlert {
        std::string sensor;
        picket::v1::Alert alert;
        uint64_t seq = 0;  // 1, 2, ... in the order received (ListAlerts' page tokens)
    };
    struct ApplyStats {
        uint64_t rules_loaded = 0;
        uint64_t rules_skipped = 0;
        uint64_t compile_ms = 0;
    };

    explicit LiveState(size_t alert_ring_size) : ring_size_(alert_ring_size) {}

    void on_hello(const std::string& sensor, const picket::v1::Hello& hello,
                  const std::string& peer);
    // Returns false (report ignored) for a duplicate seq; sets `deltas` to the increase of the
    // run counters since the previous report (0 for the first one of a process that is not at
    // seq 1: the counters before it were already counted or are unknown).
    // `received_ns` (manager wall clock) gives the sensor's clock offset for /metrics.
    bool on_metrics(const std::string& sensor, const picket::v1::MetricsReport& report,
                    store::RunTotals* deltas, int64_t received_ns = 0);
    void on_alerts(const std::string& sensor, const picket::v1::AlertBatch& batch);
    // The sensor applied the bundle with this content address.
    void on_running(const std::string& sensor, const std::string& bundle_sha256);
    void on_apply(int64_t deployment_id, const std::string& sensor, const ApplyStats& stats);

    std::optional<SensorLive> sensor(const std::string& name) const;
    std::optional<rollout::CounterSnapshot> counters(const std::string& name) const;
    std::map<std::string, SensorLive> all() const;
    std::vector<RecentAlert> recent_alerts() const;  // oldest first, at most the ring size
    std::optional<ApplyStats> apply_stats(int64_t deployment_id, const std::string& sensor) const;

private:
    mutable std::mutex mu_;
    size_t ring_size_;
    std::map<std::string, SensorLive> sensors_;
    std::deque<RecentAlert> alerts_;
    uint64_t alert_seq_ = 0;
    std::map<std::pair<int64_t, std::string>, ApplyStats> apply_;
};

// The serialized form of a stored bundle (the store's blob): the Bundle message with version
// and parent_version cleared and files sorted by path, serialized deterministically, so equal
// content gives an equal blob and the store deduplicates it.
std::string bundle_blob(picket::v1::Bundle bundle);
absl::StatusOr<picket::v1::Bundle> bundle_from_blob(const std::string& blob);

class ManagerServer {
public:
    // Loads the TLS credentials (unless insecure), binds, starts the services and the rollout
    // thread. UNAVAILABLE when the address cannot be bound (in use, not local).
    // With a `registry`, the manager's series (per sensor, fleet, its own gRPC latencies) are
    // added to it; it must outlive the server.
    // `coordinator`: how this replica meets the others on a shared database (ha/); null = a
    // lone manager (ha::make_local_coordinator). The server starts and stops it.
    static absl::StatusOr<std::unique_ptr<ManagerServer>> start(
        const ManagerOptions& options, store::Store& store,
        picket::metrics::Registry* registry = nullptr,
        std::unique_ptr<ha::Coordinator> coordinator = nullptr);
    ~ManagerServer();  // stop()
    ManagerServer(const ManagerServer&) = delete;
    ManagerServer& operator=(const ManagerServer&) = delete;

    int port() const;
    // Ends every stream (sensors see UNAVAILABLE and reconnect elsewhere/later), stops the
    // rollout thread; idempotent.
    void stop();
    // Whether this replica holds the leader lock (always, for a lone manager).
    bool is_leader() const;
    LiveState& live();
    rollout::Rollout& rollout();

    class Impl;

private:
    explicit ManagerServer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace picket::manager::service
