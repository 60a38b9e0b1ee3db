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
