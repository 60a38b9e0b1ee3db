// The deployment state machine: the names of target and deployment states, the transitions
// they allow, and the writes that move targets and deployments along them (a deployment
// finishes by itself once its last target is terminal).
#include <initializer_list>
#include <span>

#include "common/strings.h"
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

namespace {

constexpr std::string_view kTargetStates[] = {"pending",  "sent",      "applied",
                                              "rejected", "timed_out", "superseded"};
constexpr std::string_view kStages[] = {"canary", "rest"};
constexpr std::string_view kKinds[] = {"deploy", "rollback"};
constexpr std::string_view kDeploymentStates[] = {"canary", "soaking",     "rolling",   "completed",
                                                  "failed", "rolled_back", "superseded"};
static_assert(std::size(kTargetStates) == static_cast<size_t>(TargetState::kSuperseded) + 1);
static_assert(std::size(kDeploymentStates) ==
              static_cast<size_t>(DeploymentState::kSuperseded) + 1);

// A set of states as a bit mask.
template <typename E>
constexpr uint32_t set_of(std::initializer_list<E> states) {
    uint32_t mask = 0;
    for (E s : states) {
        mask |= 1u << static_cast<int>(s);
    }
    return mask;
}

using T = TargetState;
using D = DeploymentState;

// The states each one may move to, indexed by state; terminal states move nowhere.
constexpr uint32_t kTargetNext[] = {
    set_of({T::kSent, T::kApplied, T::kTimedOut, T::kSuperseded}),                   // pending
    set_of({T::kPending, T::kApplied, T::kRejected, T::kTimedOut, T::kSuperseded}),  // sent
    0,
    0,
    0,
    0,
};
constexpr uint32_t kDeploymentNext[] = {
    set_of({D::kSoaking, D::kRolling, D::kFailed, D::kRolledBack, D::kSuperseded}),  // canary
    set_of({D::kRolling, D::kFailed, D::kRolledBack, D::kSuperseded}),               // soaking
    set_of({D::kCompleted, D::kFailed, D::kSuperseded}),                             // rolling
    0,
    0,
    0,
    0,
};
static_assert(std::size(kTargetNext) == std::size(kTargetStates));
static_assert(std::size(kDeploymentNext) == std::size(kDeploymentStates));

template <typename E, size_t N>
bool allowed(const uint32_t (&next)[N], E from, E to) {
    const auto i = static_cast<size_t>(from);
    return i < N && ((next[i] >> static_cast<int>(to)) & 1u) != 0;
}

template <typename E, size_t N>
E from_name(const std::string_view (&names)[N], std::string_view s) {
    for (size_t i = 0; i < N; ++i) {
        if (names[i] == s) {
            return static_cast<E>(i);
        }
    }
    return static_cast<E>(0);  // CHECK constraints make this unreachable
}

absl::Status set_deployment_state_in(Conn& c, int64_t id, DeploymentState to,
                                     std::string_view error, int64_t ts) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE deployments SET state = ?, error = ?, "
                                       "updated_at = ? WHERE id = ?"));
    s.bind(1, to_string(to)).bind(2, error).bind(3, ts).bind(4, id);
    RETURN_IF_ERROR(s.run());
    return log_event(c, ts, "", cat("deployment.", to_string(to)), "", 0, id, error);
}

// Supersedes every open target of a deployment (when it ends without reaching them).
absl::Status supersede_open_targets(Conn& c, int64_t deployment_id, int64_t ts) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE deployment_targets SET state = 'superseded', "
                                       "finished_at = ?1, updated_at = ?1 WHERE deployment_id = "
                                       "?2 AND state IN ('pending', 'sent')"));
    s.bind(1, ts).bind(2, deployment_id);
    return s.run();
}

}  // namespace

// ---- Names and transitions (store.h)

std::string_view to_string(TargetState s) {
    return kTargetStates[static_cast<int>(s)];
}
std::string_view to_string(Stage s) {
    return kStages[static_cast<int>(s)];
}
std::string_view to_string(DeploymentKind k) {
    return kKinds[static_cast<int>(k)];
}
std::string_view to_string(DeploymentState s) {
    return kDeploymentStates[static_cast<int>(s)];
}

TargetState target_state_from(std::string_view name) {
    return from_name<TargetState>(kTargetStates, name);
}
Stage stage_from(std::string_view name) {
    return from_name<Stage>(kStages, name);
}
DeploymentKind kind_from(std::string_view name) {
    return from_name<DeploymentKind>(kKinds, name);
}
DeploymentState deployment_state_from(std::string_view name) {
    return from_name<DeploymentState>(kDeploymentStates, name);
}

bool is_terminal(TargetState s) {
    return s != TargetState::kPending && s != TargetState::kSent;
}
bool is_terminal(DeploymentState s) {
    return s == DeploymentState::kCompleted || s == DeploymentState::kFailed ||
           s == DeploymentState::kRolledBack || s == DeploymentState::kSuperseded;
}

bool valid_transition(TargetState from, TargetState to) {
    return allowed(kTargetNext, from, to);
}

bool valid_transition(DeploymentState from, DeploymentState to) {
    return allowed(kDeploymentNext, from, to);
}

// ---- Row helpers (internal.h)

absl::Status maybe_finish(Conn& c, int64_t id, int64_t ts) {
    // The counts the triggers keep (schema 7): one row, whatever the number of targets.
    ASSIGN_OR_RETURN(Stmt s, c.prepare(kFinishCountsSql));
    s.bind(1, id);
    ASSIGN_OR_RETURN(bool row, s.step());
    if (!row || s.text(0) != "rolling" || s.i64(1) != 0) {
        return absl::OkStatus();
    }
    const int64_t failed = s.i64(2);
    const int64_t superseded = s.i64(3);
    const int64_t total = s.i64(4);
    if (failed != 0) {
        return set_deployment_state_in(c, id, DeploymentState::kFailed,
                                       cat(failed, " of ", total, " targets rejected or timed out"),
                                       ts);
    }
    if (superseded != 0) {
        return set_deployment_state_in(
            c, id, DeploymentState::kSuperseded,
            cat(superseded, " of ", total, " targets taken over by a newer deployment"), ts);
    }
    return set_deployment_state_in(c, id, DeploymentState::kCompleted, "", ts);
}

namespace {

// Reads the ids of the deployments whose targets are about to be superseded (`open`), and
// appends them to `touched`. PostgreSQL: their rows are locked first, in id order, as a target
// update of another replica takes them (update_target_in: the deployment's row, then its
// target's, whose counters trigger updates the deployment's row again). Superseding a target
// first would hold the target and wait for its deployment's row. False: none to supersede.
absl::StatusOr<bool> lock_open_deployments(Conn& c, Stmt& open, std::vector<int64_t>& touched) {
    static const SizedSql kLock([](size_t n) {
        return cat("SELECT id FROM deployments WHERE id IN (", sql_marks(n),
                   ") ORDER BY id /*FOR UPDATE*/");
    });
    std::vector<int64_t> ids;
    RETURN_IF_ERROR(each_row(open, [&ids](const Stmt& r) { ids.push_back(r.i64(0)); }));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    RETURN_IF_ERROR(
        SizedSql::each_piece(std::span<const int64_t>(ids), [&](std::span<const int64_t> piece) {
            ASSIGN_OR_RETURN(Stmt lock, c.prepare(kLock.sql(piece.size())));
            bind_ids(lock, 1, piece);
            return lock.run();
        }));
    touched.insert(touched.end(), ids.begin(), ids.end());
    return !ids.empty();
}

}  // namespace

absl::Status supersede_sensor_targets(Conn& c, std::span<const int64_t> sids, int64_t keep,
                                      const char* error, int64_t ts,
                                      std::vector<int64_t>& touched) {
    static const SizedSql kOpen([](size_t n) {
        return cat(
            "SELECT DISTINCT deployment_id FROM deployment_targets WHERE deployment_id "
            "!= ? AND state IN ('pending', 'sent') AND sensor_id IN (",
            sql_marks(n), ")");
    });
    static const SizedSql kSupersede([](size_t n) {
        return cat(
            "UPDATE deployment_targets SET state = 'superseded', error = coalesce(?, "
            "error), finished_at = ?, updated_at = ? WHERE deployment_id != ? AND state "
            "IN ('pending', 'sent') AND sensor_id IN (",
            sql_marks(n), ")");
    });
    return SizedSql::each_piece(sids, [&](std::span<const int64_t> piece) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt open, c.prepare(kOpen.sql(piece.size())));
        open.bind(1, keep);
        bind_ids(open, 2, piece);
        ASSIGN_OR_RETURN(bool any, lock_open_deployments(c, open, touched));
        if (!any) {
            return absl::OkStatus();
        }
        ASSIGN_OR_RETURN(Stmt sup, c.prepare(kSupersede.sql(piece.size())));
        if (error != nullptr) {
            sup.bind(1, std::string_view(error));
        } else {
            sup.bind_null(1);
        }
        sup.bind(2, ts).bind(3, ts).bind(4, keep);
        bind_ids(sup, 5, piece);
        return sup.run();
    });
}

absl::Status supersede_for_deployment(Conn& c, int64_t id, const char* error, int64_t ts,
                                      std::vector<int64_t>& touched) {
    ASSIGN_OR_RETURN(Stmt open, c.prepare("SELECT DISTINCT o.deployment_id FROM "
                                          "deployment_targets n JOIN deployment_targets o ON "
                                          "o.sensor_id = n.sensor_id WHERE n.deployment_id = ?1 "
                                          "AND o.deployment_id != ?1 AND o.state IN ('pending', "
                                          "'sent')"));
    open.bind(1, id);
    ASSIGN_OR_RETURN(bool any, lock_open_deployments(c, open, touched));
    if (!any) {
        return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Stmt sup, c.prepare("UPDATE deployment_targets SET state = 'superseded', "
                                         "error = ?2, finished_at = ?3, updated_at = ?3 WHERE "
                                         "deployment_id != ?1 AND state IN ('pending', 'sent') "
                                         "AND sensor_id IN (SELECT sensor_id FROM "
                                         "deployment_targets WHERE deployment_id = ?1)"));
    sup.bind(1, id).bind(2, std::string_view(error)).bind(3, ts);
    return sup.run();
}

// ---- Transitions

namespace {

absl::Status update_target_in(Conn& c, int64_t deployment_id, const std::string& sensor,
                              TargetState to, const std::string& error, int64_t ts) {
    ASSIGN_OR_RETURN(
        std::optional<int64_t> dep,
        c.query_i64("SELECT id FROM deployments WHERE id = ? /*FOR UPDATE*/", deployment_id));
    if (!dep) {
        return absl::NotFoundError(cat("deployment ", deployment_id, " not found"));
    }
    ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
    ASSIGN_OR_RETURN(Stmt s, c.prepare(kTargetStateSql));
    s.bind(1, deployment_id).bind(2, sid);
    RETURN_IF_ERROR(s.expect_row([&] {
        return absl::NotFoundError(
            cat("deployment ", deployment_id, " has no target '", sensor, "'"));
    }));
    TargetState from = target_state_from(s.text(0));
    int64_t version = s.i64(1);
    if (!valid_transition(from, to)) {
        return absl::FailedPreconditionError(cat("deployment ", deployment_id, " target '", sensor,
                                                 "': invalid transition ", to_string(from), " -> ",
                                                 to_string(to)));
    }
    ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE deployment_targets SET state = ?1, error = ?2, "
                                       "updated_at = ?3, "
                                       "sent_at = CASE WHEN ?1 = 'sent' THEN ?3 ELSE sent_at "
                                       "END, finished_at = CASE WHEN ?1 IN ('pending', "
                                       "'sent') THEN NULL ELSE ?3 END "
                                       "WHERE deployment_id = ?4 AND sensor_id = ?5"));
    u.bind(1, to_string(to)).bind(2, error).bind(3, ts).bind(4, deployment_id).bind(5, sid);
    RETURN_IF_ERROR(u.run());
    if (to == TargetState::kApplied) {
        ASSIGN_OR_RETURN(Stmt r, c.prepare("UPDATE sensors SET running_version = ? WHERE "
                                           "id = ?"));
        r.bind(1, version).bind(2, sid);
        RETURN_IF_ERROR(r.run());
        RETURN_IF_ERROR(begin_run_in(c, sid, version, ts, deployment_id));
    }
    if (is_terminal(to)) {
        RETURN_IF_ERROR(log_event(c, ts, "", cat("target.", to_string(to)), sensor, version,
                                  deployment_id, error));
        RETURN_IF_ERROR(maybe_finish(c, deployment_id, ts));
    }
    return absl::OkStatus();
}

}  // namespace

absl::Status Store::update_target(int64_t deployment_id, const std::string& sensor, TargetState to,
                                  const std::string& error, int64_t ts) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        return update_target_in(c, deployment_id, sensor, to, error, ts);
    });
}

absl::Status Store::sync() {
    return impl_->write_status([](Conn&) { return absl::OkStatus(); });
}

void Store::update_target_async(int64_t deployment_id, std::string sensor, TargetState to,
                                std::string error, int64_t ts,
                                std::function<void(absl::Status)> done) {
    std::function<void(const absl::Status&)> cb;
    if (done) {
        cb = [done = std::move(done)](const absl::Status& st) { done(st); };
    }
    impl_->enqueue(
        {[deployment_id, sensor = std::move(sensor), to, error = std::move(error), ts](Conn& c) {
             return update_target_in(c, deployment_id, sensor, to, error, ts);
         },
         std::move(cb)});
}

absl::Status Store::set_deployment_state(int64_t id, DeploymentState to, const std::string& error,
                                         int64_t ts) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT state FROM deployments WHERE id = ? "
                                           "/*FOR UPDATE*/"));
        s.bind(1, id);
        RETURN_IF_ERROR(s.expect_row(
            [&] { return absl::NotFoundError(cat("deployment ", id, " not found")); }));
        DeploymentState from = deployment_state_from(s.text(0));
        if (!valid_transition(from, to)) {
            return absl::FailedPreconditionError(cat("deployment ", id, ": invalid transition ",
                                                     to_string(from), " -> ", to_string(to)));
        }
        RETURN_IF_ERROR(set_deployment_state_in(c, id, to, error, ts));
        if (to == DeploymentState::kFailed || to == DeploymentState::kRolledBack ||
            to == DeploymentState::kSuperseded) {
            RETURN_IF_ERROR(supersede_open_targets(c, id, ts));
        }
        if (to == DeploymentState::kRolling) {
            RETURN_IF_ERROR(maybe_finish(c, id, ts));
        }
        return absl::OkStatus();
    });
}

}  // namespace picket::manager::store
