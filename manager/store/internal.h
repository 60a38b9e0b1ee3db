// Row helpers shared by the store's query files (internal to manager/store). Each runs on the
// connection it is given, inside the caller's transaction (the writer's batch or a read).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "manager/store/sqlite.h"
#include "manager/store/store.h"

namespace picket::manager::store {

// ---- Sensors (sensors.cc)

// NOT_FOUND "sensor 'NAME' not found" for an unknown name.
absl::StatusOr<int64_t> sensor_id(Conn& c, std::string_view name);
// Every sensor with its labels, sorted by name.
absl::StatusOr<std::vector<Sensor>> load_sensors(Conn& c);
// The sensors a parsed selector picks: NOT_FOUND for an unknown name or no match.
absl::StatusOr<std::vector<Sensor>> select_in(Conn& c, const Selector& sel);
// The id of a sensor that may report: NOT_FOUND when unknown, PERMISSION_DENIED when revoked.
absl::StatusOr<int64_t> active_sensor_id(Conn& c, std::string_view name);
// last_seen = max(last_seen, ts).
absl::Status touch_in(Conn& c, int64_t sid, int64_t ts);

// ---- Deployment state machine (deployment_states.cc)

// Stored enum names back to the enum (CHECK constraints keep them valid).
TargetState target_state_from(std::string_view name);
Stage stage_from(std::string_view name);
DeploymentKind kind_from(std::string_view name);
DeploymentState deployment_state_from(std::string_view name);
// Stmt::get() columns holding those names.
inline void read_column(const Stmt& s, int c, TargetState& v) {
    v = target_state_from(s.text(c));
}
inline void read_column(const Stmt& s, int c, Stage& v) {
    v = stage_from(s.text(c));
}
inline void read_column(const Stmt& s, int c, DeploymentKind& v) {
    v = kind_from(s.text(c));
}
inline void read_column(const Stmt& s, int c, DeploymentState& v) {
    v = deployment_state_from(s.text(c));
}

// A rolling deployment without open targets is over: completed when none failed.
absl::Status maybe_finish(Conn& c, int64_t deployment_id, int64_t ts);
// Supersedes the open targets of sensor `sid`, except in deployment `keep` (0: none), with
// `error` (nullptr: each keeps its own), and appends their deployments' ids to `touched`
// (the caller runs maybe_finish on them once its own changes are made).
absl::Status supersede_sensor_targets(Conn& c, int64_t sid, int64_t keep, const char* error,
                                      int64_t ts, std::vector<int64_t>& touched);

// ---- Deployments (deployments.cc)

// A deployment's row; with `with_targets` its targets sorted by sensor name. NOT_FOUND
// "deployment N not found".
absl::StatusOr<Deployment> load_deployment(Conn& c, int64_t id, bool with_targets);
// A Target from the columns name, bundle_version, stage, state, error, created_at,
// coalesce(sent_at, 0), coalesce(finished_at, 0), updated_at.
Target target_from_row(const Stmt& t);

// ---- Queries run per target event or per rollout pass (deployments.cc,
// deployment_states.cc). Named here so that a test can check their query plans: each must be
// an index or primary-key search, never a scan of a table that grows with the fleet.

// One deployment with its counts (?1 = id); columns as deployment_from_row reads them.
inline constexpr const char* kDeploymentByIdSql =
    "SELECT id, coalesce(bundle_version, 0), kind, selector, canary_percent, soak_seconds, state, "
    "coalesce(parent_id, 0), actor, error, created_at, updated_at, "
    "coalesce(gate_max_drop_ratio, 0), coalesce(gate_max_alert_rate, 0), targets_pending, "
    "targets_sent, targets_applied, targets_rejected, targets_timed_out, targets_superseded, "
    "targets_taken_over FROM deployments WHERE id = ?";
// The open deployments, newest first (same columns).
inline constexpr const char* kOpenDeploymentsSql =
    "SELECT id, coalesce(bundle_version, 0), kind, selector, canary_percent, soak_seconds, state, "
    "coalesce(parent_id, 0), actor, error, created_at, updated_at, "
    "coalesce(gate_max_drop_ratio, 0), coalesce(gate_max_alert_rate, 0), targets_pending, "
    "targets_sent, targets_applied, targets_rejected, targets_timed_out, targets_superseded, "
    "targets_taken_over FROM deployments WHERE state IN ('canary', 'soaking', 'rolling') "
    "ORDER BY id DESC";
// A sensor's dispatchable open targets (?1 = sensor id).
inline constexpr const char* kPendingTargetsSql =
    "SELECT t.deployment_id, t.bundle_version, t.stage, t.state, coalesce(t.sent_at, 0) "
    "FROM deployment_targets t "
    "JOIN deployments d ON d.id = t.deployment_id WHERE t.sensor_id = ? AND t.state IN "
    "('pending', 'sent') AND (t.stage = 'canary' OR d.state = 'rolling') "
    "ORDER BY t.deployment_id DESC";
// A deployment's canary targets (?1 = deployment id), Target columns, by sensor name.
inline constexpr const char* kCanaryTargetsSql =
    "SELECT s.name, t.bundle_version, t.stage, t.state, t.error, t.created_at, "
    "coalesce(t.sent_at, 0), coalesce(t.finished_at, 0), t.updated_at FROM deployment_targets t "
    "JOIN sensors s ON s.id = t.sensor_id WHERE t.deployment_id = ? AND t.stage = 'canary' "
    "ORDER BY s.name";
// A deployment's sent targets with 0 < sent_at <= ?2 (?1 = deployment id), by sensor name.
inline constexpr const char* kSentTargetsBeforeSql =
    "SELECT s.name, t.bundle_version, t.stage, t.state, t.error, t.created_at, "
    "coalesce(t.sent_at, 0), coalesce(t.finished_at, 0), t.updated_at FROM deployment_targets t "
    "JOIN sensors s ON s.id = t.sensor_id WHERE t.deployment_id = ?1 AND t.state = 'sent' "
    "AND t.sent_at > 0 AND t.sent_at <= ?2 ORDER BY s.name";
// What maybe_finish reads (?1 = deployment id): state, open, failed, taken over, total.
inline constexpr const char* kFinishCountsSql =
    "SELECT state, targets_pending + targets_sent, targets_rejected + targets_timed_out, "
    "targets_taken_over, targets_pending + targets_sent + targets_applied + targets_rejected + "
    "targets_timed_out + targets_superseded FROM deployments WHERE id = ?";
// A target of a deployment (?1 = deployment id, ?2 = sensor id).
inline constexpr const char* kTargetStateSql =
    "SELECT state, bundle_version FROM deployment_targets WHERE deployment_id = ? AND "
    "sensor_id = ?";

// ---- Runs and events (runs.cc)

// Closes the sensor's open run and opens one for `version` (no-op for the same version).
absl::Status begin_run_in(Conn& c, int64_t sid, int64_t version, int64_t ts,
                          int64_t deployment_id = 0);
// The bundle version the sensor ran before its current one; NOT_FOUND if none.
absl::StatusOr<int64_t> previous_version_in(Conn& c, int64_t sid, std::string_view name);
absl::Status log_event(Conn& c, int64_t ts, std::string_view actor, std::string_view kind,
                       std::string_view sensor, int64_t version, int64_t deployment,
                       std::string_view message);

// ---- Bundles (bundles.cc)

// NOT_FOUND "bundle version N not found".
absl::Status require_bundle(Conn& c, int64_t version);

}  // namespace picket::manager::store
