// The manager's durable state in one SQLite file: sensors, bundles (blobs stored once by hash),
// deployments and their per-sensor targets, run history, per-minute metric history and the audit
// log. Thread-safe: every method may be called from any thread. Writes are queued to one writer
// thread that batches them into transactions and returns only after the commit (durable with
// synchronous=FULL); reads use a pool of read-only connections and never wait for the writer.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/store/selector.h"

namespace picket::manager::store {

// All timestamps are int64 nanoseconds since the Unix epoch (the project's time unit); the
// caller passes them in, so tests control the clock.

// ---- Sensors
// How the service authenticated a Hello (connect_sensor applies the matching rule).
enum class SensorAuth {
    kNone,         // --insecure: no check beyond a stored token hash, when one was sent
    kCertificate,  // a client certificate of the fleet CA names the sensor
    kToken,        // enrollment token: the name must be enrolled with exactly this token
};

struct SensorHello {
    std::string name;
    std::string host;
    std::string version;  // picket-sensor software version
    std::string capture_mode;
    int workers = 0;
    std::map<std::string, std::string> labels;
    int64_t running_version = 0;  // bundle version it runs; 0 = local rules, no bundle
    std::string token_hash;       // empty when authenticated otherwise (client cert, insecure)
    SensorAuth auth = SensorAuth::kNone;
    std::string cert_sha256;  // kCertificate: hex SHA-256 of the certificate (PEM), recorded
};

struct Sensor {
    std::string name;
    std::string host;
    std::string version;
    std::string capture_mode;
    int workers = 0;
    std::map<std::string, std::string> labels;
    int64_t first_seen = 0;  // 0 = never connected (enrolled only)
    int64_t last_seen = 0;
    bool connected = false;
    int64_t running_version = 0;
    bool enrolled = false;  // has a token hash
    int64_t enrolled_at = 0;
    bool revoked = false;  // refused until re-enrolled
    int64_t revoked_at = 0;
};

// ---- Bootstrap tokens (SensorLink.Enroll; docs/fleet.md "Enrolling sensors")
struct NewBootstrapToken {
    std::string id;            // public part of "<id>.<secret>" (pki::validate_bootstrap_token_id)
    std::string secret_hash;   // pki::token_hash(secret): the secret itself is never stored
    int64_t uses = 1;          // enrollments allowed, 1..10000
    int64_t expires_at = 0;    // ns, after created_at
    std::string name_pattern;  // full-match ECMAScript regex over sensor names; "" = any
    std::map<std::string, std::string> labels;  // imposed on the sensors it enrolls
    int64_t created_at = 0;
    std::string actor;
};

struct BootstrapToken {
    std::string id;
    int64_t uses = 0;
    int64_t used = 0;
    int64_t expires_at = 0;
    int64_t created_at = 0;
    int64_t revoked_at = 0;  // 0 = not revoked
    std::string name_pattern;
    std::map<std::string, std::string> labels;
    std::string created_by;
    // "revoked", "expired", "used_up" or "active", in that order of precedence.
    std::string state(int64_t now) const;
};

// The enrollment the service checked and signed: redeem_bootstrap_token re-checks the token
// and the sensor in the same transaction that spends one use.
struct Redemption {
    std::string token_id;
    std::string secret_hash;
    std::string sensor;
    std::string cert_serial;
    std::string cert_sha256;  // pki::token_hash(certificate PEM), as the TLS link reports it
    int64_t not_after = 0;
    int64_t ts = 0;
};

// UNAUTHENTICATED "bootstrap token 'ID' unknown" for a wrong secret; PERMISSION_DENIED
// "bootstrap token 'ID' is revoked | expired at T | used up (N of N uses)". OK when usable.
absl::Status check_bootstrap_token(const BootstrapToken& token, bool secret_matches, int64_t now);

// ---- Bundles (immutable; versions only grow; nothing is overwritten or deleted)
struct NewBundle {
    std::string name;
    std::string author;
    std::string message;
    int64_t created_at = 0;
    int64_t parent_version = 0;  // 0 = none
    std::string blob;            // the bundle archive; content address = sha256(blob)
};

struct PushResult {
    int64_t version = 0;
    std::string sha256;
    bool created = false;  // false: identical content already stored as `version`
};

struct BundleInfo {
    int64_t version = 0;
    std::string name;
    std::string sha256;  // lowercase hex of the blob
    std::string author;
    std::string message;
    int64_t created_at = 0;
    int64_t parent_version = 0;
    int64_t size = 0;
};

struct Bundle {
    BundleInfo info;
    std::string blob;
};

// ---- Deployments
enum class TargetState { kPending, kSent, kApplied, kRejected, kTimedOut, kSuperseded };
enum class Stage { kCanary, kRest };
enum class DeploymentKind { kDeploy, kRollback };
// kCanary: only canary targets are dispatched; kSoaking: canaries done, health gate holding;
// kRolling: every target may be dispatched; the rest are terminal.
enum class DeploymentState {
    kCanary,
    kSoaking,
    kRolling,
    kCompleted,
    kFailed,
    kRolledBack,
    // A newer deployment took over some of its targets before they applied (none failed).
    kSuperseded,
};

// The error a target gets when a newer deployment takes its sensor over ("superseded by
// deployment 12"), which tells it from a revoked sensor's target ("sensor revoked").
inline constexpr std::string_view kSupersededByPrefix = "superseded by deployment ";

std::string_view to_string(TargetState s);
std::string_view to_string(Stage s);
std::string_view to_string(DeploymentKind k);
std::string_view to_string(DeploymentState s);
bool is_terminal(TargetState s);
bool is_terminal(DeploymentState s);
// pending -> sent | applied (already running it) | timed_out | superseded;
// sent -> pending (lost before the result) | applied | rejected | timed_out | superseded.
bool valid_transition(TargetState from, TargetState to);
// canary -> soaking | rolling | failed | rolled_back | superseded;
// soaking -> rolling | failed | rolled_back | superseded; rolling -> completed | failed |
// superseded.
bool valid_transition(DeploymentState from, DeploymentState to);

struct NewDeployment {
    int64_t bundle_version = 0;  // deploy: required; rollback: 0 = each sensor's previous one
    DeploymentKind kind = DeploymentKind::kDeploy;
    std::string selector;
    int canary_percent = 0;  // 0 = no canary stage; else ceil(n * pct / 100) sensors, >= 1
    int64_t soak_seconds = 0;
    int64_t parent_id = 0;  // e.g. the canary deployment an automatic rollback reverts
    std::string actor;
    int64_t created_at = 0;
    // Health gate of the soak: drops / packets in [0, 1] and alerts per second per sensor,
    // finite and >= 0; 0 = the manager's default. Stored, so a restart keeps them.
    double gate_max_drop_ratio = 0;
    double gate_max_alerts_per_second = 0;
};

struct Target {
    std::string sensor;
    int64_t bundle_version = 0;  // per target: a rollback may send each sensor a different one
    Stage stage = Stage::kRest;
    TargetState state = TargetState::kPending;
    std::string error;
    int64_t created_at = 0;
    int64_t sent_at = 0;      // 0 = not yet
    int64_t finished_at = 0;  // when it reached a terminal state
    int64_t updated_at = 0;
};

// A deployment's targets counted by state, kept by the store as targets change (schema 7), so
// reading them costs the same at any fleet size.
struct TargetCounts {
    int64_t pending = 0;
    int64_t sent = 0;
    int64_t applied = 0;
    int64_t rejected = 0;
    int64_t timed_out = 0;
    int64_t superseded = 0;  // all superseded ones, including taken_over
    int64_t taken_over = 0;  // superseded by a newer deployment (error kSupersededByPrefix...)
    int64_t open() const { return pending + sent; }
    int64_t total() const { return pending + sent + applied + rejected + timed_out + superseded; }
    bool operator==(const TargetCounts&) const = default;
};

struct Deployment {
    int64_t id = 0;
    int64_t bundle_version = 0;  // 0 for a rollback to each sensor's previous version
    DeploymentKind kind = DeploymentKind::kDeploy;
    std::string selector;
    int canary_percent = 0;
    int64_t soak_seconds = 0;
    DeploymentState state = DeploymentState::kRolling;
    int64_t parent_id = 0;
    std::string actor;
    std::string error;
    int64_t created_at = 0;
    int64_t updated_at = 0;
    double gate_max_drop_ratio = 0;  // 0 = the manager's default
    double gate_max_alerts_per_second = 0;
    TargetCounts counts;          // always filled, with or without targets
    std::vector<Target> targets;  // sorted by sensor name
};

struct PendingTarget {
    int64_t deployment_id = 0;
    int64_t bundle_version = 0;
    Stage stage = Stage::kRest;
    TargetState state = TargetState::kPending;  // pending or sent (resend after a reconnect)
    int64_t sent_at = 0;                        // when it was last sent; 0 if never
};

// ---- Run history and metrics
struct RunTotals {
    int64_t packets = 0;
    int64_t bytes = 0;
    int64_t drops = 0;
    int64_t alerts = 0;
};

struct Run {
    int64_t id = 0;
    std::string sensor;
    int64_t bundle_version = 0;
    int64_t started_at = 0;
    int64_t ended_at = 0;  // 0 = still running
    RunTotals totals;
    int64_t deployment_id = 0;  // the deployment that began it; 0 = start-up, local reload
};

struct MetricSample {
    std::string name;
    int64_t value = 0;
};

struct MetricPoint {
    int64_t minute = 0;  // start of the minute, ns
    int64_t value = 0;   // last value reported within that minute
};

// One metrics report of a sensor: last_seen, run totals and per-minute samples in one write.
// With `seq` > 0 the report is one of sensor process `boot` (MetricsReport.seq, Hello.boot_id)
// and carries its cumulative `counters` (since that process started): the store computes the
// run totals' deltas from the previous stored report of the same boot (all of `counters` for a
// new boot), and ignores a report whose seq is at or below the stored one (ALREADY_EXISTS, no
// change), so that a report resent after a failover or reconnect is never counted twice. With
// `seq` = 0, `deltas` are added as given.
struct SensorReport {
    std::string sensor;
    int64_t ts = 0;
    RunTotals deltas;
    std::vector<MetricSample> samples;
    std::string boot;
    int64_t seq = 0;
    RunTotals counters;
};

// Where a sensor's stored reports stand: the boot id and seq of the last one stored, the
// cumulative counters that report carried (its boot's, since that process started) and the
// sensor's last_seen (manager clock, ns: the newest of its reports and connects). The health
// gate of a replica that does not hold the sensor's stream reads its counters from here.
struct ReportPosition {
    std::string boot;
    int64_t seq = 0;
    RunTotals counters;
    int64_t last_seen = 0;
};

// ---- Rule sources, policy and updates (manager/rules; docs/rules.md "Rule sources and updates")

struct RuleSourceRow {
    std::string name;
    std::string location;
    std::vector<std::string> headers;  // "Name: value" (no CR/LF: checked by the service)
    std::string checksum_url;
    bool enabled = true;
    int64_t created_at = 0;
    // The last successful fetch.
    std::string etag;
    std::string last_modified;
    std::string sha256;
    int64_t fetched_at = 0;
    int64_t rules = 0;
    std::string last_error;  // of the last fetch; "" when it succeeded
};

struct RulePolicyRow {
    std::string name;  // enable.conf, disable.conf, drop.conf, modify.conf, tuning.yaml
    std::string content;
    int64_t updated_at = 0;
};

struct RuleUpdateSource {
    std::string name;
    std::string sha256;
    std::string etag;
    bool not_modified = false;
    int64_t files = 0;
    int64_t rules = 0;
    int64_t rules_enabled = 0;
};

struct RuleUpdateRow {
    int64_t id = 0;
    int64_t started_at = 0;
    int64_t finished_at = 0;
    std::string trigger;  // picketctl, schedule
    std::string result;   // new_version, unchanged, failed
    std::string message;
    int64_t version = 0;  // the stored version (new_version), else 0
    std::vector<RuleUpdateSource> sources;
};

// ---- Audit log
struct Event {
    int64_t id = 0;
    int64_t ts = 0;
    std::string actor;
    std::string kind;  // bundle.push, deploy, rollback, target.applied, target.rejected, ...
    std::string sensor;
    int64_t bundle_version = 0;
    int64_t deployment_id = 0;
    std::string message;
};

// Store::Open's `path`: a postgres:// or postgresql:// DSN (libpq's URI form) opens the
// PostgreSQL backend; anything else is an SQLite file.
bool is_postgres_dsn(std::string_view path);
// `path` fit for messages and logs: a DSN's password (user:PASSWORD@, password=) as ***.
std::string redact_dsn(std::string_view path);

// What copy_store copied: rows per table, in copy order.
struct CopyReport {
    std::vector<std::pair<std::string, int64_t>> tables;
};

// Copies a whole store (picket-manager migrate): every table of `from` (an SQLite file) into
// `to` (normally a PostgreSQL DSN), ids, versions and blobs as they are, in one transaction of
// the target; both are first brought to the current schema. Refuses (FAILED_PRECONDITION) a
// target that holds any row. Afterwards the target's id sequences continue after the copied
// ids, every table's row count is compared (DATA_LOSS when one differs), and the deployments'
// target counters, rebuilt by the target's triggers, are checked against the source's.
absl::StatusOr<CopyReport> copy_store(const std::string& from, const std::string& to);

struct StoreOptions {
    int max_batch_ops = 512;                    // ops per transaction at most
    std::chrono::microseconds batch_linger{0};  // extra wait for more ops when a batch is short
    // Extra wait for more ops while no caller blocks on any queued op (only *_async writes
    // are queued): fewer, larger transactions for the reports of a large fleet.
    std::chrono::microseconds async_linger{10000};
    std::chrono::milliseconds busy_timeout{5000};
    int64_t metric_retention_seconds = 7 * 24 * 3600;
    int read_pool_idle = 4;         // idle read connections kept
    bool reset_connections = true;  // mark every sensor disconnected at Open
    int max_schema_version = 0;     // tests only: stop migrating at this version (0 = latest)
    int64_t max_page_count = 0;     // caps the file size in pages (quota; 0 = SQLite default)
    // Latency observers (the manager's Prometheus histograms), called on the writer thread:
    // seconds from a write's enqueue to its commit, and of each transaction (BEGIN to COMMIT).
    std::function<void(double)> observe_op;
    std::function<void(double)> observe_txn;
};

class Store {
public:
    static constexpr int kSchemaVersion = 9;

    // Creates (mode 0600) or opens the database and migrates it. FAILED_PRECONDITION when the
    // file's schema is newer than kSchemaVersion; DATA_LOSS when it is not a database.
    static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                       StoreOptions options = {});
    // Completes every queued write, then closes.
    ~Store();
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;

    int schema_version() const { return schema_version_; }
    const std::string& path() const { return path_; }

    // ---- Writes: each returns after its transaction committed (or failed).
    // Pre-enrolls a name with a token hash. ALREADY_EXISTS if enrolled with another token
    // (revoke it first to issue a new one). A revoked sensor is re-enrolled: the new token
    // replaces the old one and the revocation is lifted (its revoked certificates stay refused).
    absl::Status enroll_sensor(const std::string& name, const std::string& token_hash, int64_t ts,
                               const std::string& actor);
    // A sensor said Hello. Revoked name or revoked certificate: PERMISSION_DENIED. Unknown name:
    // created when allow_create, else NOT_FOUND. kToken: the name must hold exactly this token
    // hash (another one: ALREADY_EXISTS; none, i.e. a certificate sensor: UNAUTHENTICATED).
    // kCertificate: accepted whatever token is stored; the certificate's hash is recorded.
    // Also begins a run when the running version differs from its open run's.
    absl::StatusOr<Sensor> connect_sensor(const SensorHello& hello, int64_t ts, bool allow_create);
    absl::Status disconnect_sensor(const std::string& name, int64_t ts);
    // Revokes a sensor: refused at connect until re-enrolled, its reports refused, its token
    // forgotten, the certificate it last connected with refused for good, its open deployment
    // targets superseded. NOT_FOUND for an unknown name. Returns false when it was already
    // revoked (nothing changes).
    absl::StatusOr<bool> revoke_sensor(const std::string& name, int64_t ts,
                                       const std::string& actor);

    absl::StatusOr<PushResult> push_bundle(const NewBundle& bundle);

    // Resolves the selector over the sensors at commit time and records every target pending
    // (canary share first, by name order). NOT_FOUND for an unknown version or a selector that
    // matches nothing; a rollback without version uses each sensor's previous version
    // (FAILED_PRECONDITION naming the sensor if it has none).
    absl::StatusOr<Deployment> create_deployment(const NewDeployment& d);
    // Validated target transition; terminal ones are logged. When a rolling deployment has no
    // open target left it becomes completed (all applied) or failed.
    absl::Status update_target(int64_t deployment_id, const std::string& sensor, TargetState to,
                               const std::string& error, int64_t ts);
    // Same, without waiting: `done` (may be empty) runs on the writer thread after the commit.
    // Writes commit in the order they are queued: a `sent` queued this way commits before the
    // `applied` queued after it.
    void update_target_async(int64_t deployment_id, std::string sensor, TargetState to,
                             std::string error, int64_t ts, std::function<void(absl::Status)> done);
    // Returns once every write queued before it has committed and its `done` has run (the
    // callbacks of *_async writes may refer to objects that must outlive them).
    absl::Status sync();
    absl::Status set_deployment_state(int64_t id, DeploymentState to, const std::string& error,
                                      int64_t ts);

    // Closes the sensor's open run (ended_at = ts) and opens one for `version`. A no-op when
    // the open run already has that version.
    absl::Status begin_run(const std::string& sensor, int64_t version, int64_t ts);
    // FAILED_PRECONDITION when the sensor has no open run; INVALID_ARGUMENT for a negative delta.
    absl::Status add_run_totals(const std::string& sensor, const RunTotals& deltas);
    // Keeps, per (sensor, counter, minute), the last value reported in that minute.
    absl::Status record_metrics(const std::string& sensor, int64_t ts,
                                const std::vector<MetricSample>& samples);
    // last_seen + add_run_totals (skipped without an open run) + record_metrics, one op.
    // PERMISSION_DENIED for a revoked sensor.
    absl::Status report(const SensorReport& r);
    // Same, without waiting: `done` runs on the writer thread after the commit.
    void report_async(SensorReport r, std::function<void(absl::Status)> done);
    // The last stored report of `sensor` (NOT_FOUND when unknown). Runs on the writer, after
    // every report queued before it, so it is what the sensor may skip when it resends.
    absl::StatusOr<ReportPosition> report_position(const std::string& sensor);
    // Deletes metric minutes older than now - retention; returns the number of rows deleted.
    absl::StatusOr<int64_t> prune_metrics(int64_t now);
    absl::Status record_event(const Event& e);

    // Rule sources. ALREADY_EXISTS for a name in use; NOT_FOUND for an unknown one. Each change
    // is logged (rules.source.add / remove / enable / disable).
    absl::Status add_rule_source(const RuleSourceRow& source, const std::string& actor);
    absl::Status remove_rule_source(const std::string& name, int64_t ts, const std::string& actor);
    absl::Status set_rule_source_enabled(const std::string& name, bool enabled, int64_t ts,
                                         const std::string& actor);
    // A fetch of the source: error "" records etag, last_modified, sha256, fetched_at and rules
    // and clears last_error; otherwise only last_error changes (the last good fetch stays).
    absl::Status record_rule_fetch(const RuleSourceRow& fetched, const std::string& error);
    // Replaces the named policy files (all in one transaction; others are kept).
    absl::Status put_rule_policy(const std::vector<RulePolicyRow>& files, const std::string& actor);
    // NOT_FOUND when no such file is stored.
    absl::Status remove_rule_policy(const std::string& name, int64_t ts, const std::string& actor);
    // Returns the id of the history entry.
    absl::StatusOr<int64_t> record_rule_update(const RuleUpdateRow& update);

    // ---- Bootstrap tokens and issued certificates (bootstrap.cc)
    // ALREADY_EXISTS for an id in use; INVALID_ARGUMENT for a bad id, uses, expiry or label.
    absl::Status create_bootstrap_token(const NewBootstrapToken& token);
    // Oldest first.
    absl::StatusOr<std::vector<BootstrapToken>> list_bootstrap_tokens();
    // NOT_FOUND "bootstrap token 'ID' unknown".
    absl::StatusOr<BootstrapToken> get_bootstrap_token(const std::string& id);
    // The stored secret hash matches (constant time). NOT_FOUND for an unknown id.
    absl::StatusOr<bool> bootstrap_secret_matches(const std::string& id,
                                                  const std::string& secret_hash);
    // NOT_FOUND for an unknown id; false when it was already revoked.
    absl::StatusOr<bool> revoke_bootstrap_token(const std::string& id, int64_t ts,
                                                const std::string& actor);
    // One transaction: check_bootstrap_token again (UNAUTHENTICATED / PERMISSION_DENIED), the
    // sensor is not revoked and is new or readmitted (PERMISSION_DENIED: a token never gives a
    // sensor in use a second identity), one use spent, the sensor created when new
    // (authenticating by certificate from now on), the token's labels imposed on it, the
    // certificate recorded, an event "sensor.enroll" logged. Returns the token as it is now.
    absl::StatusOr<BootstrapToken> redeem_bootstrap_token(const Redemption& r);
    // A renewed certificate of a known, non-revoked sensor (PERMISSION_DENIED when revoked or
    // when `presented_sha256`, the certificate it authenticated with, is revoked).
    absl::Status record_renewal(const std::string& sensor, const std::string& presented_sha256,
                                const std::string& cert_serial, const std::string& cert_sha256,
                                int64_t not_after, int64_t ts);
    // Lifts a revocation so that the sensor may enroll again, once (its revoked certificates
    // stay refused). NOT_FOUND for an unknown name; false when it was not revoked.
    absl::StatusOr<bool> readmit_sensor(const std::string& name, int64_t ts,
                                        const std::string& actor);

    // ---- Reads (snapshot of the last commit).
    // Empty selector = all sensors, possibly none. With a selector: see select_sensors.
    absl::StatusOr<std::vector<Sensor>> list_sensors(std::string_view selector = {});
    // INVALID_ARGUMENT for a bad selector; NOT_FOUND for an unknown name in a name list or a
    // selector that matches no sensor.
    absl::StatusOr<std::vector<Sensor>> select_sensors(std::string_view selector);
    absl::StatusOr<Sensor> get_sensor(const std::string& name);
    absl::StatusOr<std::vector<BundleInfo>> list_bundles();
    absl::StatusOr<Bundle> get_bundle(int64_t version, bool with_blob = true);
    absl::StatusOr<int64_t> latest_version();  // 0 when no bundle was pushed
    // With its targets unless `with_targets` is false (d.counts is filled either way).
    absl::StatusOr<Deployment> get_deployment(int64_t id, bool with_targets = true);
    absl::StatusOr<std::vector<Deployment>> list_deployments(int limit, bool with_targets);
    // The deployments not yet terminal (canary, soaking, rolling), newest first, with their
    // counts and without targets: what the rollout drives each pass.
    absl::StatusOr<std::vector<Deployment>> open_deployments();
    // A deployment's canary targets, sorted by sensor name (empty without canaries).
    absl::StatusOr<std::vector<Target>> canary_targets(int64_t deployment_id);
    // A deployment's targets in state sent with sent_at <= sent_before, sorted by sensor name:
    // those whose ApplyResult is overdue. Index range reads, proportional to the result.
    absl::StatusOr<std::vector<Target>> sent_targets_before(int64_t deployment_id,
                                                            int64_t sent_before);
    // What to send to a sensor now: its open targets of the newest deployment that may be
    // dispatched (canary targets always, rest targets once the deployment is rolling).
    absl::StatusOr<std::vector<PendingTarget>> pending_targets(const std::string& sensor);
    // pending_targets and the sensor's stored running version, read in one snapshot (one read
    // per dispatch instead of two).
    struct DispatchView {
        int64_t running_version = 0;
        std::vector<PendingTarget> targets;
    };
    absl::StatusOr<DispatchView> dispatch_view(const std::string& sensor);
    // The sensors with a target pending_targets would return (a canary's, or any of a rolling
    // deployment), in one read: whose streams have something to dispatch.
    absl::StatusOr<std::vector<std::string>> dispatchable_sensors();
    // The version the manager last brought the sensor to: that of its newest deployment
    // target when that target applied; 0 when it has none, or when the newest is still open
    // or did not apply (an operator's decision is pending: nothing to reconcile).
    absl::StatusOr<int64_t> desired_version(const std::string& sensor);
    // The bundle version the sensor ran before its current one; NOT_FOUND if none.
    absl::StatusOr<int64_t> previous_version(const std::string& sensor);
    absl::StatusOr<std::vector<Run>> list_runs(const std::string& sensor);  // oldest first
    // The `limit` newest run periods of the whole fleet (by start, then id), in one query.
    absl::StatusOr<std::vector<Run>> recent_runs(size_t limit);
    // ---- One sensor's history (deployment_pages.cc): bounded work at any fleet size.
    // The `limit` newest deployments that target `sensor` (with their counts), each holding
    // that sensor's target only. NOT_FOUND for an unknown sensor.
    absl::StatusOr<std::vector<Deployment>> deployments_of(const std::string& sensor, int limit);
    // For each target of the deployment (by sensor name): the bundle version of the run that
    // was open when the deployment was created (absent: none), in one query; only `sensor`'s
    // when it is given.
    absl::StatusOr<std::map<std::string, int64_t>> previous_versions(
        int64_t deployment_id, const std::string& sensor = {});
    absl::StatusOr<std::vector<MetricPoint>> metric_history(const std::string& sensor,
                                                            const std::string& counter,
                                                            int64_t from, int64_t to);
    // Newest first; empty sensor = the whole fleet. before_id = 0: from the newest.
    absl::StatusOr<std::vector<Event>> history(const std::string& sensor, int limit,
                                               int64_t before_id = 0);
    // Sorted by name.
    absl::StatusOr<std::vector<RuleSourceRow>> list_rule_sources();
    // Sorted by name.
    absl::StatusOr<std::vector<RulePolicyRow>> rule_policy();
    // Newest first, with their sources.
    absl::StatusOr<std::vector<RuleUpdateRow>> rule_updates(int limit);
    // For the metrics exporter: updates by result, and when the newest one that did not fail
    // finished (0 = none).
    struct RuleUpdateSummary {
        int64_t new_version = 0;
        int64_t unchanged = 0;
        int64_t failed = 0;
        int64_t last_success_at = 0;
    };
    absl::StatusOr<RuleUpdateSummary> rule_update_summary();
    // PRAGMA integrity_check on a read connection: OK or DATA_LOSS with its report.
    absl::Status integrity_check();

    // Counts for the metrics exporter, in one read.
    struct FleetSummary {
        int64_t deploys = 0;                // deployments of kind deploy
        int64_t rollbacks = 0;              // of kind rollback (manual and automatic)
        int64_t last_deployment_at = 0;     // created_at of the newest deployment, 0 = none
        int64_t latest_bundle_version = 0;  // 0 = no bundle pushed
        int64_t bundles = 0;
    };
    absl::StatusOr<FleetSummary> fleet_summary();

    struct WriterStats {
        int64_t ops = 0;
        int64_t transactions = 0;
        int64_t conflicts_retried = 0;  // PostgreSQL: ops rerun after a deadlock or conflict
    };
    WriterStats writer_stats() const;

    class Impl;

private:
    explicit Store(std::unique_ptr<Impl> impl, std::string path, int schema_version);
    std::unique_ptr<Impl> impl_;
    std::string path_;
    int schema_version_;
};

}  // namespace picket::manager::store
