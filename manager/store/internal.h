// Row helpers shared by the store's query files (internal to manager/store). Each runs on the
// connection it is given, inside the caller's transaction (the writer's batch or a read).
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
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
// Supersedes the open targets of sensors `sids`, except in deployment `keep` (0: none), with
// `error` (nullptr: each keeps its own), and appends their deployments' ids to `touched`
// (the caller runs maybe_finish on them once its own changes are made). A few statements per
// 256 sensors, not per sensor (a round trip each on PostgreSQL).
absl::Status supersede_sensor_targets(Conn& c, std::span<const int64_t> sids, int64_t keep,
                                      const char* error, int64_t ts, std::vector<int64_t>& touched);
// The same for the sensors of deployment `id`'s targets, taken over by it (`error`): one
// statement over the whole deployment (a deploy to 20,000 sensors), after its targets exist.
absl::Status supersede_for_deployment(Conn& c, int64_t id, const char* error, int64_t ts,
                                      std::vector<int64_t>& touched);

// PostgreSQL: waits for, then holds until this transaction ends, the lock that serializes
// the writes creating or superseding deployment targets across replicas (a deploy, a
// revocation), so each sees the other's committed targets. A no-op on SQLite (one writer).
absl::Status lock_targets_in(Conn& c);

// ---- Statements over a set of rows

// "?, ?, ?" for n values.
std::string sql_marks(size_t n, std::string_view one = "?");

// Binds ids to consecutive parameters from `first`.
inline void bind_ids(Stmt& s, int first, std::span<const int64_t> ids) {
    for (size_t i = 0; i < ids.size(); ++i) {
        s.bind(first + static_cast<int>(i), ids[i]);
    }
}

// A statement over n rows (an IN list, a multi-row VALUES) for n a power of two up to kMax,
// each text built once: the connections' statement caches key on the text's address, so it
// outlives them; a set of any size is cut into such pieces (each_piece), which bounds the
// statements a connection prepares to nine per kind.
class SizedSql {
public:
    static constexpr size_t kMax = 256;
    template <typename Make>
    explicit SizedSql(Make make) {
        for (size_t n = 1, i = 0; n <= kMax; n *= 2, ++i) {
            texts_[i] = make(n);
        }
    }
    // n: a power of two up to kMax.
    const char* sql(size_t n) const {
        return texts_[static_cast<size_t>(std::countr_zero(n))].c_str();
    }

    // fn(piece) for consecutive pieces of `all` of those sizes, largest first; stops at the
    // first error.
    template <typename T, typename Fn>
    static absl::Status each_piece(std::span<const T> all, Fn fn) {
        while (!all.empty()) {
            size_t n = all.size() >= kMax ? kMax : std::bit_floor(all.size());
            RETURN_IF_ERROR(fn(all.first(n)));
            all = all.subspan(n);
        }
        return absl::OkStatus();
    }

private:
    std::array<std::string, 9> texts_;
};

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
