#include "manager/rollout/rollout.h"

#include <cstdio>
#include <iterator>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace picket::manager::rollout {
namespace {

using store::DeploymentState;
using store::Stage;
using store::TargetState;

constexpr int64_t kNsPerSec = 1'000'000'000;

uint64_t delta(const CounterSnapshot& base, const CounterSnapshot& cur, const std::string& name) {
    auto c = cur.counters.find(name);
    if (c == cur.counters.end()) {
        return 0;
    }
    auto b = base.counters.find(name);
    uint64_t before = b == base.counters.end() ? 0 : b->second;
    return c->second >= before ? c->second - before : c->second;  // went backwards: restarted
}

std::string fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.4f", v);
    return buf;
}

}  // namespace

GateVerdict evaluate_gate(const HealthGate& gate, const std::string& sensor,
                          const CounterSnapshot& base, const CounterSnapshot& current) {
    uint64_t packets = std::max(delta(base, current, "decoder.pkts"),
                                delta(base, current, "capture.kernel_packets"));
    uint64_t drops =
        delta(base, current, "capture.kernel_drops") + delta(base, current, "capture.queue_drops");
    double ratio = packets > 0 ? static_cast<double>(drops) / static_cast<double>(packets)
                               : (drops > 0 ? 1.0 : 0.0);
    if (ratio > gate.max_drop_ratio) {
        return {false,
                "drop ratio " + fmt(ratio) + " > " + fmt(gate.max_drop_ratio) + " on " + sensor};
    }
    // The timestamps come from the sensors' reports: compared before they are subtracted, so
    // a wild value cannot overflow (the difference of two int64 in order fits a uint64).
    if (current.timestamp > base.timestamp) {
        const uint64_t span =
            static_cast<uint64_t>(current.timestamp) - static_cast<uint64_t>(base.timestamp);
        double rate = static_cast<double>(delta(base, current, "detect.alert")) /
                      (static_cast<double>(span) / kNsPerSec);
        if (rate > gate.max_alerts_per_second) {
            return {false, "alert rate " + fmt(rate) + "/s > " + fmt(gate.max_alerts_per_second) +
                               "/s on " + sensor};
        }
    }
    return {};
}

Rollout::Rollout(store::Store& store, RolloutOptions options, CountersFn counters, WakeFn wake)
    : store_(store),
      options_(std::move(options)),
      counters_(std::move(counters)),
      wake_(std::move(wake)) {}

Rollout::~Rollout() {
    stop();
}

int64_t Rollout::now() const {
    return options_.now ? options_.now() : wall_clock_ns();
}

void Rollout::start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable() || stop_) {
        return;
    }
    thread_ = std::thread([this] { run(); });
}

void Rollout::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
}

void Rollout::kick() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        kicked_ = true;
    }
    cv_.notify_all();
}

void Rollout::set_gate(int64_t deployment_id, const HealthGate& requested) {
    HealthGate g = options_.default_gate;
    if (requested.max_drop_ratio > 0) {
        g.max_drop_ratio = requested.max_drop_ratio;
    }
    if (requested.max_alerts_per_second > 0) {
        g.max_alerts_per_second = requested.max_alerts_per_second;
    }
    std::lock_guard<std::mutex> lock(mu_);
    gates_[deployment_id] = g;
}

HealthGate Rollout::gate(int64_t deployment_id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = gates_.find(deployment_id);
    return it == gates_.end() ? options_.default_gate : it->second;
}

HealthGate Rollout::gate(const store::Deployment& d) const {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = gates_.find(d.id); it != gates_.end()) {
            return it->second;
        }
    }
    HealthGate g = options_.default_gate;
    if (d.gate_max_drop_ratio > 0) {
        g.max_drop_ratio = d.gate_max_drop_ratio;
    }
    if (d.gate_max_alerts_per_second > 0) {
        g.max_alerts_per_second = d.gate_max_alerts_per_second;
    }
    return g;
}

void Rollout::run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
        cv_.wait_for(lock, options_.poll_interval, [this] { return stop_ || kicked_; });
        if (stop_) {
            break;
        }
        kicked_ = false;
        if (options_.is_leader && !options_.is_leader()) {
            lead_lost_ = true;
            continue;
        }
        lock.unlock();
        if (lead_lost_) {
            // Leading again (or for the first time): another replica may have driven the
            // deployments meanwhile; what this one kept of their soaks is stale.
            std::lock_guard<std::mutex> step_lock(step_mu_);
            soaks_.clear();
            lead_lost_ = false;
        }
        if (absl::Status st = step(); !st.ok()) {
            log::warning("rollout: " + std::string(st.message()));
        }
        lock.lock();
    }
}

absl::Status Rollout::step() {
    std::lock_guard<std::mutex> step_lock(step_mu_);
    // Only the open deployments, with their counts and without their targets: a pass reads the
    // targets it acts on (overdue ones, canaries), so its cost does not grow with the fleet.
    auto deployments = store_.open_deployments();
    if (!deployments.ok()) {
        return deployments.status();
    }
    for (auto it = soaks_.begin(); it != soaks_.end();) {
        bool open = false;
        for (const store::Deployment& d : *deployments) {
            open = open || d.id == it->first;
        }
        it = open ? std::next(it) : soaks_.erase(it);
    }
    bool woke = false;
    absl::Status first;
    for (const store::Deployment& d : *deployments) {
        if (absl::Status st = drive(d, &woke); !st.ok() && first.ok()) {
            first = st;
        }
    }
    if (woke && wake_) {
        wake_();
    }
    return first;
}

absl::Status Rollout::drive(const store::Deployment& d, bool* woke) {
    const int64_t t = now();
    const int64_t timeout = options_.target_timeout_seconds * kNsPerSec;
    const bool canary_stage =
        d.state == DeploymentState::kCanary || d.state == DeploymentState::kSoaking;
    std::vector<store::Target> canaries;
    if (canary_stage) {
        auto c = store_.canary_targets(d.id);
        if (!c.ok()) {
            return c.status();
        }
        canaries = std::move(*c);
    }
    // Timeouts first: a sent target that never answered, and a canary whose sensor never
    // came (the canary stage would otherwise wait forever). Rest targets of offline sensors
    // stay pending: they are sent when the sensor connects.
    std::vector<store::Target> overdue;
    if (d.counts.sent > 0) {
        auto o = store_.sent_targets_before(d.id, t - timeout);
        if (!o.ok()) {
            return o.status();
        }
        overdue = std::move(*o);
    }
    if (d.state == DeploymentState::kCanary && t - d.created_at >= timeout) {
        for (const store::Target& tg : canaries) {
            if (tg.state == TargetState::kPending) {
                overdue.push_back(tg);
            }
        }
    }
    int64_t timed_out = 0;
    for (const store::Target& tg : overdue) {
        const std::string why =
            tg.state == TargetState::kSent
                ? "no ApplyResult within " + std::to_string(options_.target_timeout_seconds) + " s"
                : "canary sensor did not take the bundle within " +
                      std::to_string(options_.target_timeout_seconds) + " s";
        absl::Status st = store_.update_target(d.id, tg.sensor, TargetState::kTimedOut, why, t);
        if (st.ok()) {
            ++timed_out;
            for (store::Target& c : canaries) {
                if (c.sensor == tg.sensor) {
                    c.state = TargetState::kTimedOut;
                    c.error = why;
                }
            }
        } else if (!absl::IsFailedPrecondition(st)) {  // raced with a result: fine
            return st;
        }
    }

    if (canary_stage) {
        bool all_applied = true;
        for (const store::Target& tg : canaries) {
            if (tg.state == TargetState::kSuperseded) {
                // A newer deployment took over this sensor (or it was revoked): stop here, and
                // do not roll back (that would undo the newer deployment).
                soaks_.erase(d.id);
                if (tg.error == "sensor revoked") {
                    return store_.set_deployment_state(d.id, DeploymentState::kFailed,
                                                       "canary " + tg.sensor + " was revoked", t);
                }
                return store_.set_deployment_state(
                    d.id, DeploymentState::kSuperseded,
                    "canary " + tg.sensor + " " +
                        (tg.error.empty() ? std::string("superseded by a newer deployment")
                                          : tg.error),
                    t);
            }
            if (tg.state == TargetState::kRejected || tg.state == TargetState::kTimedOut) {
                std::string reason =
                    "canary " + tg.sensor + " " + std::string(store::to_string(tg.state));
                if (!tg.error.empty()) {
                    reason += ": " + tg.error.substr(0, tg.error.find('\n'));
                }
                return fail(d, canaries, reason, woke);
            }
            all_applied = all_applied && tg.state == TargetState::kApplied;
        }
        if (d.state == DeploymentState::kCanary) {
            if (!all_applied) {
                return absl::OkStatus();
            }
            DeploymentState next =
                d.soak_seconds > 0 ? DeploymentState::kSoaking : DeploymentState::kRolling;
            std::string msg = d.soak_seconds > 0 ? "canaries applied; soaking " +
                                                       std::to_string(d.soak_seconds) + " s"
                                                 : std::string("canaries applied");
            absl::Status st = store_.set_deployment_state(d.id, next, msg, t);
            if (!st.ok()) {
                return st;
            }
            soaks_[d.id] = Soak{t, {}};
            *woke = *woke || next == DeploymentState::kRolling;
            if (next == DeploymentState::kRolling) {
                return absl::OkStatus();
            }
        }
        Soak& soak = soaks_.try_emplace(d.id, Soak{t, {}}).first->second;
        HealthGate g = gate(d);
        for (const store::Target& tg : canaries) {
            std::optional<CounterSnapshot> cur = counters_ ? counters_(tg.sensor) : std::nullopt;
            if (!cur) {
                continue;
            }
            auto [it, inserted] = soak.baseline.try_emplace(tg.sensor, *cur);
            if (inserted) {
                continue;
            }
            if (it->second.stored != cur->stored) {
                it->second = *cur;  // the sensor moved between replicas: another clock
                continue;
            }
            GateVerdict v = evaluate_gate(g, tg.sensor, it->second, *cur);
            if (!v.ok) {
                return fail(d, canaries, "health gate failed: " + v.reason, woke);
            }
        }
        if (t - soak.started_at >= d.soak_seconds * kNsPerSec) {
            absl::Status st = store_.set_deployment_state(d.id, DeploymentState::kRolling,
                                                          "health gate held; rolling out", t);
            if (!st.ok()) {
                return st;
            }
            soaks_.erase(d.id);
            *woke = true;
        }
        return absl::OkStatus();
    }

    if (d.state == DeploymentState::kRolling) {
        // The store finishes a rolling deployment when its last target ends; this catches one
        // whose targets all ended before it became rolling. The counts are those read at the
        // start of the pass, less the targets this pass timed out.
        const bool open = d.counts.open() - timed_out > 0;
        const bool failed = d.counts.rejected + d.counts.timed_out + timed_out > 0;
        const bool superseded = d.counts.taken_over > 0;
        if (!open) {
            absl::Status st =
                store_.set_deployment_state(d.id,
                                            failed       ? DeploymentState::kFailed
                                            : superseded ? DeploymentState::kSuperseded
                                                         : DeploymentState::kCompleted,
                                            "", t);
            if (!st.ok() && !absl::IsFailedPrecondition(st)) {
                return st;
            }
        }
    }
    return absl::OkStatus();
}

absl::Status Rollout::fail(const store::Deployment& d, const std::vector<store::Target>& canaries,
                           const std::string& reason, bool* woke) {
    const int64_t t = now();
    soaks_.erase(d.id);
    // Only canaries that applied run the new bundle; a rejected or timed-out one still runs
    // its previous bundle and must not be "rolled back" further.
    std::vector<std::string> applied;
    for (const store::Target& tg : canaries) {
        if (tg.stage == Stage::kCanary && tg.state == TargetState::kApplied) {
            applied.push_back(tg.sensor);
        }
    }
    if (applied.empty()) {
        return store_.set_deployment_state(d.id, DeploymentState::kFailed, reason, t);
    }
    absl::Status st = store_.set_deployment_state(d.id, DeploymentState::kRolledBack, reason, t);
    if (!st.ok()) {
        return st;
    }
    store::NewDeployment rb;
    rb.kind = store::DeploymentKind::kRollback;
    rb.bundle_version = 0;  // each canary's previous version
    rb.selector = strings::join(applied, ",");
    rb.parent_id = d.id;
    rb.actor = "rollout";
    rb.created_at = t;
    auto created = store_.create_deployment(rb);
    if (!created.ok()) {
        log::error("rollout: automatic rollback of deployment " + std::to_string(d.id) +
                   " failed: " + std::string(created.status().message()));
        store::Event e;
        e.ts = t;
        e.actor = "rollout";
        e.kind = "rollback.failed";
        e.deployment_id = d.id;
        e.message = std::string(created.status().message());
        (void)store_.record_event(e);
        return created.status();
    }
    log::warning("rollout: deployment " + std::to_string(d.id) + " rolled back (" + reason +
                 "); rollback deployment " + std::to_string(created->id));
    *woke = true;
    return absl::OkStatus();
}

}  // namespace picket::manager::rollout
