// The sensor's manager link: one agent thread dials the manager's SensorLink stream, says Hello,
// streams MetricsReports, answers Ping and applies the bundles the manager sends (verify, write
// to the state directory, build a DetectConfig, swap it in through SensorHooks, answer
// ApplyResult), and keeps the last good bundle on disk for the next start. It knows nothing of
// the engine: main.cc implements SensorHooks. Only the agent thread talks to the network;
// start()/stop() and the free functions are for the main thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/stats.h"
#include "picket/v1/picket.pb.h"
#include "sensor/detect/detect.h"

namespace grpc {
class ClientContext;
}

namespace picket::sensor::agent {

struct WorkerCounters {
    uint32_t worker = 0;
    uint64_t packets = 0;
    uint64_t bytes = 0;
};

// What the agent needs from the sensor. Called on the agent thread.
struct SensorHooks {
    // Flat EVE stats names -> monotonic totals. Required.
    std::function<StatsSnapshot()> stats;
    // Per-worker totals; optional (empty function = the report carries none).
    std::function<std::vector<WorkerCounters>()> worker_stats;
    // Swap the rules in (Engine::reload semantics: on false the running rules stay and *error
    // says why). Required.
    std::function<bool(const detect::DetectConfig&, detect::LoadSummary*, std::string*)> reload;
};

struct Backoff {
    std::chrono::milliseconds initial{500};
    std::chrono::milliseconds max{30000};
    double jitter = 0.2;  // each delay is multiplied by a uniform factor in [1-j, 1+j]
};

// Delay before reconnect attempt `attempt` (0 = first retry): min(max, initial * 2^attempt)
// scaled by (1 - jitter + 2 * jitter * unit), unit in [0, 1).
std::chrono::milliseconds backoff_delay(const Backoff& b, uint32_t attempt, double unit);

// The bundle the sensor runs and the rules configuration it was loaded with.
struct RunningBundle {
    picket::v1::BundleRef ref;  // version 0 = local rules, no bundle
    detect::DetectConfig config;
};

struct AgentOptions {
    // HOST:PORT, or several separated by commas ("a:7443,b:7443"); a name with several
    // addresses gives one candidate per address (parse_manager_list, expand_candidates).
    std::string manager;
    std::string name;
    std::string token;  // enrollment token (sent in Hello)
    // Bootstrap enrollment (--bootstrap-token-file, read by main): the agent keeps its own
    // key and certificate in state_dir/tls, enrolls with this token when it has none, and
    // renews the certificate when less than a third of its life is left.
    std::string bootstrap_token;
    bool bootstrap = false;
    std::string tls_cert, tls_key, ca;  // PEM file paths; ca alone = server-authenticated TLS
    bool insecure = false;              // plaintext; only for a loopback manager
    std::filesystem::path state_dir;
    std::map<std::string, std::string> labels;
    std::string host;  // empty = gethostname()
    std::string version;
    picket::v1::CaptureMode capture_mode = picket::v1::CAPTURE_MODE_UNSPECIFIED;
    std::string capture_source;
    uint32_t workers = 1;
    bool ips_mode = false;
    int64_t started_at_ns = 0;
    std::chrono::milliseconds metrics_interval{10000};
    // How long to wait for Welcome after Hello before giving up on the stream.
    std::chrono::milliseconds welcome_timeout{10000};
    // How long a connection to one manager address may take before the next is tried.
    std::chrono::milliseconds connect_timeout{3000};
    Backoff backoff;
    // Reports kept until a manager says it stored them (Welcome.stored_report_seq): 720 = two
    // hours at 10 s. Past it the oldest is dropped; counted when it was never written.
    size_t max_buffered_reports = 720;
    // PEM Ed25519 key: when set, every bundle must be signed by it.
    std::string bundle_public_key_pem;
    // The sensor's own rules configuration: bundle settings are overlaid on it.
    detect::DetectConfig base_detect;
    // What runs when the agent starts (a last good bundle, or the local rules) and its load.
    RunningBundle running;
    detect::LoadSummary running_summary;
};

// ---------------------------------------------------------------------------------------
// Option checks (main.cc turns an error into exit code 2)

// True when the HOST of HOST:PORT ("[::1]:9000" for IPv6) is loopback: 127.0.0.0/8, ::1,
// ::ffff:127.x.x.x or "localhost".
bool is_loopback_address(std::string_view host_port);
// InvalidArgument unless `host_port` is HOST:PORT with a port in 1..65535.
absl::Status check_manager_address(std::string_view host_port);
// --manager: one or more HOST:PORT separated by commas (spaces around an entry ignored). Each
// is checked with check_manager_address (the error names the bad entry); no empty entry, no
// entry twice.
absl::StatusOr<std::vector<std::string>> parse_manager_list(std::string_view text);

// One address the agent may dial: `target` for gRPC, and the name the manager's certificate
// must carry when it differs from target's host (an address a DNS name resolved to).
struct ManagerCandidate {
    std::string target;
    std::string server_name;  // empty: target's own host, as gRPC checks by default
    bool operator==(const ManagerCandidate&) const = default;
};
// Numeric addresses of a host name (getaddrinfo by default).
using Resolver = std::function<std::vector<std::string>(const std::string& host)>;
std::vector<std::string> system_resolve(const std::string& host);
// The candidates of a parsed list, in list order: an IP literal, or a name resolving to fewer
// than two addresses, is itself (gRPC resolves it, as with one manager); a name resolving to
// several gives one candidate per address (sorted, each verified against the name).
std::vector<ManagerCandidate> expand_candidates(const std::vector<std::string>& entries,
                                                const Resolver& resolve);
// The sensor's first choice among n candidates: a stable hash (FNV-1a 64) of its name mod n,
// so that a fleet spreads over its managers and a sensor returns to the same one.
size_t first_choice(std::string_view sensor_name, size_t n);
// The order candidates are tried in: first_choice, then the next ones, wrapping around.
std::vector<size_t> walk_order(std::string_view sensor_name, size_t n);
// 32 lowercase hex digits from the system's random source (a sensor process's Hello.boot_id).
std::string new_boot_id();
// --insecure is only allowed towards a loopback manager (PermissionDenied otherwise).
absl::Status check_insecure(std::string_view host_port);
// "k=v,k2=v2": keys [A-Za-z0-9._-]{1,64}, values printable without ',' (may be empty), no
// duplicate key.
absl::StatusOr<std::map<std::string, std::string>> parse_labels(std::string_view text);
// Everything above plus: a name pki::validate_name accepts, a state directory, and either
// --insecure or TLS (--ca with --token, or --tls-cert + --tls-key + --ca).
absl::Status validate_options(const AgentOptions& options);
// Loads the TLS files once (start-up check; the agent reloads them on every connect): the
// client certificate, key and CA must load and chain (pki::load_credentials), or the CA alone
// must be readable. OK for --insecure. Also OK, with a warning, when the only problem is the
// validity period (a certificate not yet valid or expired by this host's clock): the sensor
// then inspects without the manager and the agent retries the link until the dates agree.
absl::Status check_credentials(const AgentOptions& options);
// True for pki's "not valid before" / "expired on" failures (clock-dependent).
bool is_validity_period_error(const absl::Status& s);

// ---------------------------------------------------------------------------------------
// Bundles on disk (bundle_apply.cc). Layout under the state directory:
//   bundles/<versioned_dir_name>/   the bundle as received (write_bundle_dir)
//   effective/<versioned_dir_name>/ its rules with tuning.yaml applied + threshold.config
//   current                         text file: the versioned_dir_name of the last good bundle

struct PreparedBundle {
    RunningBundle running;  // ref + DetectConfig pointing into the state directory
    std::vector<std::string> warnings;
};

// Verifies the bundle (hashes, limits, the signature when a key is given, content), writes it
// and its effective rules into the state directory (reusing an identical earlier copy) and
// builds the DetectConfig: base overlaid with the bundle's rules, threshold.config, vars from
// config.yaml and classification.config / reference.config when the bundle carries them. Never
// touches the running rules. The error lists every problem, one per line.
absl::StatusOr<PreparedBundle> prepare_bundle(const picket::v1::Bundle& bundle,
                                              const std::filesystem::path& state_dir,
                                              const detect::DetectConfig& base,
                                              const std::string& public_key_pem = "");

// Records the bundle as the last good one (atomic rename of "current").
absl::Status record_last_good(const std::filesystem::path& state_dir,
                              const picket::v1::BundleRef& ref);

// The last good bundle, re-verified from disk; nullopt when none was recorded. An error when
// one was recorded but cannot be used (then the sensor starts on its local rules).
absl::StatusOr<std::optional<RunningBundle>> load_last_good(const std::filesystem::path& state_dir,
                                                            const detect::DetectConfig& base,
                                                            const std::string& public_key_pem = "");

// ---------------------------------------------------------------------------------------
// Bootstrap enrollment and renewal (enroll.cc). Called on the main thread before the agent
// starts (ensure_identity) and on the agent thread (renew_identity).

struct IdentityFiles {
    std::filesystem::path cert;
    std::filesystem::path key;
};
// STATE/tls/sensor.crt and STATE/tls/sensor.key (STATE/tls is a symlink swapped atomically).
IdentityFiles identity_files(const std::filesystem::path& state_dir);
// Writes key (0600) and certificate (0644) into a new directory and points STATE/tls at it.
absl::Status install_identity(const std::filesystem::path& state_dir, const std::string& key_pem,
                              const std::string& cert_pem);
// With a stored identity: checks its CN is options.name (FailedPrecondition otherwise) and
// sets options.tls_cert / tls_key to it; no enrollment. Without one: generates a key, sends a
// CSR with the bootstrap token (SensorLink.Enroll, TLS verifying the manager against
// options.ca), stores the pair and sets tls_cert / tls_key. UNAVAILABLE and DEADLINE_EXCEEDED
// are retried with options.backoff; any other status is returned ("enrollment refused: CODE:
// the manager's message").
absl::Status ensure_identity(AgentOptions& options);
// When the certificate in options.tls_cert should be renewed (a third of its life left).
absl::StatusOr<std::chrono::system_clock::time_point> renewal_time(const AgentOptions& options);
// A new key and CSR, SensorLink.RenewCertificate over mutual TLS with the current pair, then
// the new pair replaces the old one (install_identity).
absl::Status renew_identity(const AgentOptions& options);

// ---------------------------------------------------------------------------------------
// The agent

struct AgentCounters {
    std::atomic<uint64_t> connect_attempts{0};
    std::atomic<uint64_t> sessions{0};  // accepted Welcomes
    std::atomic<uint64_t> reports_sent{0};
    std::atomic<uint64_t> reports_dropped{0};  // buffer full before they were ever written
    std::atomic<uint64_t> reports_resent{0};   // written again: not stored by the manager
    std::atomic<uint64_t> failovers{0};        // sessions on another address than the last
    std::atomic<uint64_t> bundles_applied{0};
    std::atomic<uint64_t> bundles_rejected{0};
    std::atomic<uint64_t> pongs{0};
    std::atomic<uint64_t> alerts_sent{0};
    std::atomic<uint64_t> alerts_dropped{0};  // queue full, or over the rate limit
};

class Agent {
public:
    Agent(AgentOptions options, SensorHooks hooks);
    ~Agent();  // stop()
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    // Starts the agent thread (returns at once; the sensor never waits for the manager).
    void start();
    // Cancels the stream and joins the thread. Idempotent.
    void stop();

    // Any thread (the sensor's output thread): queues one alert for the next AlertBatch. The
    // queue is bounded (kMaxPendingAlerts, oldest dropped and counted) and batches are
    // rate-limited (at most kMaxBatchesPerSecond of kMaxAlertsPerBatch), so a flood of alerts
    // never stalls the sensor or swamps the manager; eve.json keeps every alert.
    void on_alert(picket::v1::Alert alert);
    static constexpr size_t kMaxPendingAlerts = 10000;
    static constexpr size_t kMaxAlertsPerBatch = 1000;
    static constexpr int kMaxBatchesPerSecond = 5;

    const AgentCounters& counters() const { return counters_; }
    bool connected() const { return connected_.load(); }
    // This process's Hello.boot_id.
    const std::string& boot_id() const { return boot_id_; }
    // The address of the current (or last) session; empty before the first.
    std::string current_manager() const;
    picket::v1::BundleRef running_bundle() const;

private:
    void run();
    // One stream, from Connect to its end. True when it got an accepted Welcome.
    bool run_session(const ManagerCandidate& where);
    void take_report(std::chrono::steady_clock::time_point now);
    picket::v1::ApplyResult apply(const picket::v1::ApplyBundle& msg);
    // Waits until `deadline`, taking metrics snapshots when due. False when stopping.
    bool sleep_until(std::chrono::steady_clock::time_point deadline);

    AgentOptions options_;
    SensorHooks hooks_;
    AgentCounters counters_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> connected_{false};

    mutable std::mutex mu_;  // guards the members below
    std::condition_variable cv_;
    grpc::ClientContext* context_ = nullptr;  // the live stream's, for cancellation
    // The report ring: oldest first, kept until a manager says it stored them. The first
    // `sent_` were written on the current session.
    std::deque<picket::v1::MetricsReport> pending_;
    size_t sent_ = 0;
    uint64_t written_seq_ = 0;  // the highest seq ever written on a stream
    std::string boot_id_;
    std::string current_manager_;
    std::string last_welcomed_;  // the address of the last accepted session (agent thread)
    std::deque<picket::v1::Alert> alerts_;
    uint64_t alerts_dropped_unsent_ = 0;  // dropped since the last batch (goes in `dropped`)
    std::chrono::steady_clock::time_point next_alert_batch_{};
    RunningBundle running_;
    detect::LoadSummary running_summary_;

    std::chrono::milliseconds interval_;
    std::chrono::steady_clock::time_point next_report_;
    uint64_t seq_ = 0;
    std::mt19937_64 rng_;
    // Bootstrap identity: when its certificate is due for renewal (agent thread only).
    std::chrono::system_clock::time_point renew_at_ = std::chrono::system_clock::time_point::max();
    void maybe_renew();
};

}  // namespace picket::sensor::agent
