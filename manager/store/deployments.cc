// Store queries that serve deployments: creating one (selector resolution, canary share,
// superseding older targets) and reading deployments and the targets a sensor should get.
#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "common/strings.h"
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

Target target_from_row(const Stmt& t) {
    Target x;
    t.get(0, x.sensor, x.bundle_version, x.stage, x.state, x.error, x.created_at, x.sent_at,
          x.finished_at, x.updated_at);
    return x;
}

Deployment deployment_from_row(const Stmt& s) {
    Deployment d;
    s.get(0, d.id, d.bundle_version, d.kind, d.selector, d.canary_percent, d.soak_seconds, d.state,
          d.parent_id, d.actor, d.error, d.created_at, d.updated_at, d.gate_max_drop_ratio,
          d.gate_max_alerts_per_second, d.counts.pending, d.counts.sent, d.counts.applied,
          d.counts.rejected, d.counts.timed_out, d.counts.superseded, d.counts.taken_over);
    return d;
}

absl::StatusOr<Deployment> load_deployment(Conn& c, int64_t id, bool with_targets) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare(kDeploymentByIdSql));
    s.bind(1, id);
    RETURN_IF_ERROR(
        s.expect_row([&] { return absl::NotFoundError(cat("deployment ", id, " not found")); }));
    Deployment d = deployment_from_row(s);
    if (!with_targets) {
        return d;
    }
    ASSIGN_OR_RETURN(Stmt t,
                     c.prepare("SELECT s.name, t.bundle_version, t.stage, t.state, t.error, "
                               "t.created_at, coalesce(t.sent_at, 0), coalesce(t.finished_at, 0), "
                               "t.updated_at FROM deployment_targets t JOIN sensors s "
                               "ON s.id = t.sensor_id WHERE t.deployment_id = ? ORDER BY s.name"));
    t.bind(1, id);
    ASSIGN_OR_RETURN(d.targets, collect<Target>(t, target_from_row));
    return d;
}

std::string sql_marks(size_t n, std::string_view one) {
    std::string out;
    out.reserve(n * (one.size() + 2));
    for (size_t i = 0; i < n; ++i) {
        if (i > 0) {
            out += ", ";
        }
        out += one;
    }
    return out;
}

absl::Status lock_targets_in(Conn& c) {
    if (!c.postgres()) {
        return absl::OkStatus();
    }
    return c.exec("SELECT pg_advisory_xact_lock(hashtext('picket.deployment_targets'))");
}

namespace {

// The sensors a new deployment targets: the selector's, less revoked ones (naming one is
// FAILED_PRECONDITION), each with the bundle version it gets.
absl::StatusOr<std::vector<std::pair<int64_t, int64_t>>> plan_targets(Conn& c, const Selector& sel,
                                                                      int64_t bundle_version) {
    ASSIGN_OR_RETURN(std::vector<Sensor> selected, select_in(c, sel));
    // A revoked sensor cannot connect: never target it (naming one is an error).
    std::vector<Sensor> sensors;
    for (Sensor& s : selected) {
        if (!s.revoked) {
            sensors.push_back(std::move(s));
        } else if (sel.kind() == Selector::Kind::kNames) {
            return absl::FailedPreconditionError(cat("sensor '", s.name, "' is revoked"));
        }
    }
    if (sensors.empty()) {
        return absl::NotFoundError(
            cat("selector '", sel.to_string(), "' matches no sensor that is not revoked"));
    }
    // Their ids in one query, not one a sensor (a round trip each on PostgreSQL).
    std::unordered_map<std::string, int64_t> ids;
    ASSIGN_OR_RETURN(Stmt all, c.prepare("SELECT id, name FROM sensors"));
    RETURN_IF_ERROR(each_row(all, [&ids](const Stmt& r) { ids.emplace(r.text(1), r.i64(0)); }));
    std::vector<std::pair<int64_t, int64_t>> plan;  // sensor id, version
    for (const Sensor& s : sensors) {
        auto id = ids.find(s.name);
        if (id == ids.end()) {
            return absl::InternalError(cat("sensor '", s.name, "' vanished"));
        }
        const int64_t sid = id->second;
        int64_t version = bundle_version;
        if (version == 0) {
            auto prev = previous_version_in(c, sid, s.name);
            if (!prev.ok()) {
                return absl::FailedPreconditionError(cat("rollback: ", prev.status().message()));
            }
            version = *prev;
        }
        plan.emplace_back(sid, version);
    }
    return plan;
}

}  // namespace

absl::StatusOr<Deployment> Store::create_deployment(const NewDeployment& d) {
    ASSIGN_OR_RETURN(Selector sel, Selector::parse(d.selector));
    if (d.canary_percent < 0 || d.canary_percent > 100) {
        return absl::InvalidArgumentError(
            cat("canary percent ", d.canary_percent, " is not within 0..100"));
    }
    if (d.soak_seconds < 0 || d.bundle_version < 0 || d.parent_id < 0) {
        return absl::InvalidArgumentError("negative soak time, bundle version or parent id");
    }
    if (!std::isfinite(d.gate_max_drop_ratio) || d.gate_max_drop_ratio < 0 ||
        d.gate_max_drop_ratio > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "health gate: max drop ratio ", d.gate_max_drop_ratio, " is not within 0..1"));
    }
    if (!std::isfinite(d.gate_max_alerts_per_second) || d.gate_max_alerts_per_second < 0) {
        return absl::InvalidArgumentError(absl::StrCat("health gate: max alerts per second ",
                                                       d.gate_max_alerts_per_second,
                                                       " is not a finite number >= 0"));
    }
    if (d.kind == DeploymentKind::kDeploy && d.bundle_version == 0) {
        return absl::InvalidArgumentError("a deployment needs a bundle version");
    }
    return impl_->write<Deployment>([=](Conn& c) -> absl::StatusOr<Deployment> {
        // PostgreSQL: deployments are planned one at a time across replicas, so that one
        // created at the same time by another replica commits before this one supersedes its
        // targets (and sees them), instead of both keeping an open target per sensor. The
        // sensors' rows are not locked: the reports of every replica update them, in their
        // own order (a deadlock with a deploy that locked them all).
        RETURN_IF_ERROR(lock_targets_in(c));
        if (d.bundle_version != 0) {
            RETURN_IF_ERROR(require_bundle(c, d.bundle_version));
        }
        if (d.parent_id != 0) {
            ASSIGN_OR_RETURN(std::optional<int64_t> p,
                             c.query_i64("SELECT id FROM deployments WHERE id = ?", d.parent_id));
            if (!p) {
                return absl::NotFoundError(cat("parent deployment ", d.parent_id, " not found"));
            }
        }
        ASSIGN_OR_RETURN(auto plan, plan_targets(c, sel, d.bundle_version));
        size_t n = plan.size();
        size_t canaries = 0;
        if (d.canary_percent > 0) {
            canaries = std::max<size_t>(1, (n * d.canary_percent + 99) / 100);
        }
        DeploymentState state = canaries > 0 ? DeploymentState::kCanary : DeploymentState::kRolling;
        ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO deployments(bundle_version, kind, "
                                             "selector, canary_percent, soak_seconds, state, "
                                             "parent_id, actor, created_at, updated_at, "
                                             "gate_max_drop_ratio, gate_max_alert_rate) "
                                             "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?9, ?9, ?10, ?11) "
                                             "RETURNING id"));
        ins.bind_ref(1, d.bundle_version).bind(2, to_string(d.kind)).bind(3, sel.to_string());
        ins.bind(4, d.canary_percent).bind(5, d.soak_seconds).bind(6, to_string(state));
        ins.bind_ref(7, d.parent_id).bind(8, d.actor).bind(9, d.created_at);
        if (d.gate_max_drop_ratio > 0) {
            ins.bind_double(10, d.gate_max_drop_ratio);
        } else {
            ins.bind_null(10);
        }
        if (d.gate_max_alerts_per_second > 0) {
            ins.bind_double(11, d.gate_max_alerts_per_second);
        } else {
            ins.bind_null(11);
        }
        RETURN_IF_ERROR(ins.expect_row([] { return absl::InternalError("no id returned"); }));
        const int64_t id = ins.i64(0);

        // The targets, SizedSql::kMax rows an INSERT: canaries first (plan order).
        static const SizedSql kInsert([](size_t rows) {
            return cat(
                "INSERT INTO deployment_targets(deployment_id, sensor_id, bundle_version, "
                "stage, state, created_at, updated_at) VALUES ",
                sql_marks(rows, "(?, ?, ?, ?, 'pending', ?, ?)"));
        });
        using Planned = std::pair<int64_t, int64_t>;
        RETURN_IF_ERROR(SizedSql::each_piece(
            std::span<const Planned>(plan), [&](std::span<const Planned> rows) -> absl::Status {
                ASSIGN_OR_RETURN(Stmt t, c.prepare(kInsert.sql(rows.size())));
                int p = 1;
                for (const Planned& row : rows) {
                    const bool canary = static_cast<size_t>(&row - plan.data()) < canaries;
                    t.bind(p, id).bind(p + 1, row.first).bind(p + 2, row.second);
                    t.bind(p + 3, to_string(canary ? Stage::kCanary : Stage::kRest));
                    t.bind(p + 4, d.created_at).bind(p + 5, d.created_at);
                    p += 6;
                }
                return t.run();
            }));
        // A newer deployment supersedes the open targets of older ones on the same sensors.
        std::vector<int64_t> touched;
        RETURN_IF_ERROR(supersede_for_deployment(c, id, cat(kSupersededByPrefix, id).c_str(),
                                                 d.created_at, touched));
        std::sort(touched.begin(), touched.end());
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        for (int64_t old_id : touched) {
            RETURN_IF_ERROR(maybe_finish(c, old_id, d.created_at));
        }
        std::string what = d.bundle_version != 0
                               ? cat("bundle version ", d.bundle_version)
                               : std::string("each sensor's previous bundle version");
        RETURN_IF_ERROR(log_event(
            c, d.created_at, d.actor, to_string(d.kind), "", d.bundle_version, id,
            cat(what, " to '", sel.to_string(), "': ", n, " sensors, ", canaries, " canary")));
        return load_deployment(c, id, true);
    });
}

absl::StatusOr<Deployment> Store::get_deployment(int64_t id, bool with_targets) {
    return impl_->read([=](Conn& c) { return load_deployment(c, id, with_targets); });
}

absl::StatusOr<std::vector<Deployment>> Store::list_deployments(int limit, bool with_targets) {
    return impl_->read([=](Conn& c) -> absl::StatusOr<std::vector<Deployment>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id FROM deployments ORDER BY id DESC "
                                           "LIMIT ?"));
        s.bind(1, static_cast<int64_t>(limit));
        ASSIGN_OR_RETURN(std::vector<int64_t> ids,
                         collect<int64_t>(s, [](const Stmt& r) { return r.i64(0); }));
        std::vector<Deployment> out;
        for (int64_t id : ids) {
            ASSIGN_OR_RETURN(Deployment d, load_deployment(c, id, with_targets));
            out.push_back(std::move(d));
        }
        return out;
    });
}

absl::StatusOr<std::vector<PendingTarget>> Store::pending_targets(const std::string& sensor) {
    return impl_->read([&sensor](Conn& c) -> absl::StatusOr<std::vector<PendingTarget>> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kPendingTargetsSql));
        s.bind(1, sid);
        return collect<PendingTarget>(s, [](const Stmt& r) {
            PendingTarget p;
            r.get(0, p.deployment_id, p.bundle_version, p.stage, p.state, p.sent_at);
            return p;
        });
    });
}

absl::StatusOr<Store::DispatchView> Store::dispatch_view(const std::string& sensor) {
    return impl_->read([&sensor](Conn& c) -> absl::StatusOr<DispatchView> {
        ASSIGN_OR_RETURN(Stmt q,
                         c.prepare("SELECT id, running_version FROM sensors WHERE name = ?"));
        q.bind(1, sensor);
        RETURN_IF_ERROR(q.expect_row(
            [&] { return absl::NotFoundError(cat("unknown sensor '", sensor, "'")); }));
        const int64_t sid = q.i64(0);
        DispatchView v;
        v.running_version = q.i64(1);
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kPendingTargetsSql));
        s.bind(1, sid);
        ASSIGN_OR_RETURN(v.targets, collect<PendingTarget>(s, [](const Stmt& r) {
                             PendingTarget p;
                             r.get(0, p.deployment_id, p.bundle_version, p.stage, p.state,
                                   p.sent_at);
                             return p;
                         }));
        return v;
    });
}

absl::StatusOr<std::vector<std::string>> Store::dispatchable_sensors() {
    return impl_->read([](Conn& c) -> absl::StatusOr<std::vector<std::string>> {
        // kPendingTargetsSql's condition, for every sensor at once.
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT DISTINCT s.name FROM deployments d "
                                           "JOIN deployment_targets t ON t.deployment_id = d.id "
                                           "JOIN sensors s ON s.id = t.sensor_id "
                                           "WHERE d.state IN ('canary', 'soaking', 'rolling') "
                                           "AND t.state IN ('pending', 'sent') AND "
                                           "(t.stage = 'canary' OR d.state = 'rolling')"));
        return collect<std::string>(s, [](const Stmt& r) { return std::string(r.text(0)); });
    });
}

absl::StatusOr<std::vector<Deployment>> Store::open_deployments() {
    return impl_->read([](Conn& c) -> absl::StatusOr<std::vector<Deployment>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kOpenDeploymentsSql));
        return collect<Deployment>(s, deployment_from_row);
    });
}

absl::StatusOr<std::vector<Target>> Store::canary_targets(int64_t deployment_id) {
    return impl_->read([deployment_id](Conn& c) -> absl::StatusOr<std::vector<Target>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kCanaryTargetsSql));
        s.bind(1, deployment_id);
        return collect<Target>(s, target_from_row);
    });
}

absl::StatusOr<std::vector<Target>> Store::sent_targets_before(int64_t deployment_id,
                                                               int64_t sent_before) {
    return impl_->read([=](Conn& c) -> absl::StatusOr<std::vector<Target>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kSentTargetsBeforeSql));
        s.bind(1, deployment_id).bind(2, sent_before);
        return collect<Target>(s, target_from_row);
    });
}

}  // namespace picket::manager::store
