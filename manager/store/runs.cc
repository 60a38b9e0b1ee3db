// Store queries that serve run history, metric history and the audit log: runs begun and
// totalled, sensor reports, per-minute metrics and their pruning, events and their pages.
#include <algorithm>
#include <array>
#include <string>
#include <unordered_map>

#include "common/strings.h"
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kNsPerMinute = 60 * kNsPerSecond;

int64_t minute_of(int64_t ts) {
    int64_t m = ts / kNsPerMinute;
    if (ts % kNsPerMinute < 0) {
        --m;
    }
    return m * kNsPerMinute;
}

absl::Status validate_totals(const RunTotals& d) {
    if (d.packets < 0 || d.bytes < 0 || d.drops < 0 || d.alerts < 0) {
        return absl::InvalidArgumentError(cat("run totals deltas must not be negative (packets ",
                                              d.packets, ", bytes ", d.bytes, ", drops ", d.drops,
                                              ", alerts ", d.alerts, ")"));
    }
    return absl::OkStatus();
}

// Adds deltas to the open run; returns false when there is none.
absl::StatusOr<bool> add_totals_in(Conn& c, int64_t sid, const RunTotals& d) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE runs SET packets = packets + ?, bytes = bytes + ?, "
                                       "drops = drops + ?, alerts = alerts + ? "
                                       "WHERE sensor_id = ? AND ended_at IS NULL"));
    s.bind(1, d.packets).bind(2, d.bytes).bind(3, d.drops).bind(4, d.alerts).bind(5, sid);
    RETURN_IF_ERROR(s.run());
    return c.changes() > 0;
}

// Name ids are cached on the writer connection; the cache is dropped on every rollback
// (run_batch), so it never holds an id whose insert was undone.
absl::StatusOr<int64_t> metric_name_id(Conn& c, const std::string& name) {
    auto it = c.metric_ids.find(name);
    if (it != c.metric_ids.end()) {
        return it->second;
    }
    ASSIGN_OR_RETURN(Stmt sel, c.prepare("SELECT id FROM metric_names WHERE name = ?"));
    sel.bind(1, name);
    ASSIGN_OR_RETURN(bool row, sel.step());
    int64_t id = 0;
    if (row) {
        id = sel.i64(0);
    } else {
        // Another replica may insert the same name at the same time (PostgreSQL): then this
        // insert does nothing (after waiting for that one's commit) and the name is read again.
        ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO metric_names(name) VALUES(?) "
                                             "ON CONFLICT(name) DO NOTHING RETURNING id"));
        ins.bind(1, name);
        ASSIGN_OR_RETURN(bool inserted, ins.step());
        if (inserted) {
            id = ins.i64(0);
        } else {
            ASSIGN_OR_RETURN(Stmt again, c.prepare("SELECT id FROM metric_names WHERE name = ?"));
            again.bind(1, name);
            RETURN_IF_ERROR(
                again.expect_row([] { return absl::InternalError("metric name vanished"); }));
            id = again.i64(0);
        }
    }
    c.metric_ids.emplace(name, id);
    return id;
}

// The upsert of `rows` samples in one statement (1 <= rows <= kMetricRowsPerStatement): one
// statement per report instead of one per counter (the writer's main cost at 10,000 sensors).
// Rows are applied in order, so a counter named twice keeps its later value as before.
constexpr size_t kMetricRowsPerStatement = 16;

const char* metric_upsert_sql(size_t rows) {
    static const std::array<std::string, kMetricRowsPerStatement + 1> sql = [] {
        std::array<std::string, kMetricRowsPerStatement + 1> a;
        for (size_t n = 1; n <= kMetricRowsPerStatement; ++n) {
            std::string q =
                "INSERT INTO metric_minutes(sensor_id, name_id, minute, value, "
                "sample_ts) VALUES";
            for (size_t i = 0; i < n; ++i) {
                q += strings::cat(i == 0 ? "(" : ", (", "?1, ?", 4 + 2 * i, ", ?2, ?", 5 + 2 * i,
                                  ", ?3)");
            }
            q += " ON CONFLICT(sensor_id, name_id, minute) DO UPDATE SET value = excluded.value, "
                 "sample_ts = excluded.sample_ts WHERE excluded.sample_ts >= "
                 "metric_minutes.sample_ts";
            a[n] = std::move(q);
        }
        return a;
    }();
    return sql[rows].c_str();  // stable: the statement cache is keyed by this pointer
}

absl::Status record_metrics_in(Conn& c, int64_t sid, int64_t ts,
                               const std::vector<MetricSample>& samples) {
    for (const MetricSample& m : samples) {
        if (m.name.empty()) {
            return absl::InvalidArgumentError("metric sample without a counter name");
        }
    }
    // PostgreSQL refuses an upsert that touches one row twice (a counter named twice in one
    // statement); SQLite applies the rows in order. Keep the last sample of each name there,
    // which is what SQLite ends with.
    std::vector<MetricSample> unique;
    const std::vector<MetricSample>* use = &samples;
    if (c.postgres()) {
        std::unordered_map<std::string_view, size_t> last;
        for (size_t i = 0; i < samples.size(); ++i) {
            last[samples[i].name] = i;
        }
        if (last.size() != samples.size()) {
            for (size_t i = 0; i < samples.size(); ++i) {
                if (last[samples[i].name] == i) {
                    unique.push_back(samples[i]);
                }
            }
            use = &unique;
        }
    }
    const std::vector<MetricSample>& todo = *use;
    for (size_t first = 0; first < todo.size(); first += kMetricRowsPerStatement) {
        const size_t rows = std::min(kMetricRowsPerStatement, todo.size() - first);
        ASSIGN_OR_RETURN(Stmt s, c.prepare(metric_upsert_sql(rows)));
        s.bind(1, sid).bind(2, minute_of(ts)).bind(3, ts);
        for (size_t i = 0; i < rows; ++i) {
            const MetricSample& m = todo[first + i];
            ASSIGN_OR_RETURN(int64_t name_id, metric_name_id(c, m.name));
            // ?1-?3 are shared; row i has its name at ?(4 + 2i) and its value at ?(5 + 2i).
            s.bind(static_cast<int>(4 + 2 * i), name_id).bind(static_cast<int>(5 + 2 * i), m.value);
        }
        RETURN_IF_ERROR(s.run());
    }
    return absl::OkStatus();
}

// A counter moves by about 1e9 per report at the most (100 Mpps for 10 s): a larger step (a
// wrap, garbage) adds nothing, as in LiveState::on_metrics.
constexpr int64_t kMaxReportDelta = int64_t{1} << 40;

int64_t counter_delta(int64_t cur, int64_t before) {
    const int64_t d = cur >= before ? cur - before : cur;  // below the base: a reset
    return d > kMaxReportDelta ? 0 : d;
}

// The deltas a report with a seq adds, from the stored position of its sensor (`stored_boot`,
// `stored_seq`, `base`: the cumulative counters of the last stored report): ALREADY_EXISTS
// when its boot's stored seq is at or above it.
absl::StatusOr<RunTotals> sequenced_deltas(const SensorReport& r, std::string_view stored_boot,
                                           int64_t stored_seq, const RunTotals& base) {
    const bool same_boot = stored_boot == r.boot;
    if (same_boot && r.seq <= stored_seq) {
        return absl::AlreadyExistsError(cat("duplicate report: seq ", r.seq, " of boot ", r.boot,
                                            " is at or below the stored seq ", stored_seq));
    }
    const RunTotals& now = r.counters;
    RunTotals deltas;
    if (same_boot) {
        deltas.packets = counter_delta(now.packets, base.packets);
        deltas.bytes = counter_delta(now.bytes, base.bytes);
        deltas.drops = counter_delta(now.drops, base.drops);
        deltas.alerts = counter_delta(now.alerts, base.alerts);
    } else if (r.seq == 1) {
        // A new process's first report: everything it counted since it started.
        deltas.packets = counter_delta(now.packets, 0);
        deltas.bytes = counter_delta(now.bytes, 0);
        deltas.drops = counter_delta(now.drops, 0);
        deltas.alerts = counter_delta(now.alerts, 0);
    }
    // Otherwise first heard of past its first report (those were lost to the sensor's full
    // buffer, or stored under an earlier schema): its counters become the base, adding
    // nothing, so that nothing is counted twice.
    return deltas;
}

// One report in as few statements as it takes (each a round trip on PostgreSQL, where they
// are most of the writer's cost): one read of the sensor's row (id, revocation, report
// position), one update of it (last_seen, and the new position with a seq), the run totals
// and the samples. On PostgreSQL the read locks the row as the update would (NO KEY UPDATE:
// a deploy's target rows, whose foreign key takes KEY SHARE on it, do not wait for it): two
// replicas storing the same sensor's report at once (a sensor that moved while its old stream
// drained) would otherwise both read the old position and both add the deltas.
std::function<absl::Status(Conn&)> report_op(std::shared_ptr<const SensorReport> r) {
    return [r](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt sel, c.prepare("SELECT id, revoked_at IS NOT NULL, report_boot, "
                                             "report_seq, report_packets, report_bytes, "
                                             "report_drops, report_alerts FROM sensors WHERE "
                                             "name = ? /*FOR NO KEY UPDATE*/"));
        sel.bind(1, r->sensor);
        RETURN_IF_ERROR(sel.expect_row(
            [&] { return absl::NotFoundError(cat("sensor '", r->sensor, "' not found")); }));
        const int64_t sid = sel.i64(0);
        if (sel.i64(1) != 0) {
            // A report already queued when the revocation committed is refused, not recorded.
            return absl::PermissionDeniedError(cat("sensor '", r->sensor, "' is revoked"));
        }
        RunTotals deltas = r->deltas;
        if (r->seq > 0) {
            const RunTotals base{sel.i64(4), sel.i64(5), sel.i64(6), sel.i64(7)};
            ASSIGN_OR_RETURN(deltas, sequenced_deltas(*r, sel.text(2), sel.i64(3), base));
            const RunTotals& now = r->counters;
            ASSIGN_OR_RETURN(Stmt upd, c.prepare("UPDATE sensors SET report_boot = ?1, "
                                                 "report_seq = ?2, report_packets = ?3, "
                                                 "report_bytes = ?4, report_drops = ?5, "
                                                 "report_alerts = ?6, last_seen = CASE WHEN "
                                                 "last_seen IS NULL OR last_seen < ?7 THEN ?7 "
                                                 "ELSE last_seen END WHERE id = ?8"));
            upd.bind(1, r->boot).bind(2, r->seq).bind(3, now.packets).bind(4, now.bytes);
            upd.bind(5, now.drops).bind(6, now.alerts).bind(7, r->ts).bind(8, sid);
            RETURN_IF_ERROR(upd.run());
        } else {
            RETURN_IF_ERROR(touch_in(c, sid, r->ts));
        }
        ASSIGN_OR_RETURN(bool added, add_totals_in(c, sid, deltas));
        (void)added;  // no open run: nothing to accumulate into (documented)
        return record_metrics_in(c, sid, r->ts, r->samples);
    };
}

Event event_from_row(const Stmt& s) {
    Event e;
    s.get(0, e.id, e.ts, e.actor, e.kind, e.sensor, e.bundle_version, e.deployment_id, e.message);
    return e;
}

}  // namespace

// ---- Row helpers (internal.h)

absl::Status begin_run_in(Conn& c, int64_t sid, int64_t version, int64_t ts,
                          int64_t deployment_id) {
    ASSIGN_OR_RETURN(Stmt open, c.prepare("SELECT id, bundle_version, started_at FROM runs "
                                          "WHERE sensor_id = ? AND ended_at IS NULL"));
    open.bind(1, sid);
    ASSIGN_OR_RETURN(bool row, open.step());
    int64_t start = ts;
    if (row) {
        if (open.i64(1) == version) {
            return absl::OkStatus();
        }
        int64_t run_id = open.i64(0);
        // A clock that stepped back must not make a period end before it began.
        start = std::max(ts, open.i64(2));
        ASSIGN_OR_RETURN(Stmt close, c.prepare("UPDATE runs SET ended_at = ? WHERE id = ?"));
        close.bind(1, start).bind(2, run_id);
        RETURN_IF_ERROR(close.run());
    }
    ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO runs(sensor_id, bundle_version, started_at, "
                                         "deployment_id) VALUES(?, ?, ?, ?)"));
    ins.bind(1, sid).bind(2, version).bind(3, start).bind_ref(4, deployment_id);
    return ins.run();
}

absl::StatusOr<int64_t> previous_version_in(Conn& c, int64_t sid, std::string_view name) {
    ASSIGN_OR_RETURN(Stmt cur, c.prepare("SELECT coalesce((SELECT bundle_version FROM runs WHERE "
                                         "sensor_id = ?1 AND ended_at IS NULL), (SELECT "
                                         "running_version FROM sensors WHERE id = ?1))"));
    cur.bind(1, sid);
    ASSIGN_OR_RETURN(bool row, cur.step());
    int64_t current = row ? cur.i64(0) : 0;
    ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT r.bundle_version FROM runs r JOIN bundles b ON "
                                       "b.version = r.bundle_version WHERE r.sensor_id = ? AND "
                                       "r.bundle_version != ? ORDER BY r.id DESC LIMIT 1"));
    s.bind(1, sid).bind(2, current);
    RETURN_IF_ERROR(s.expect_row([&] {
        return absl::NotFoundError(
            cat("sensor '", name, "' has no earlier bundle version than ", current));
    }));
    return s.i64(0);
}

absl::Status log_event(Conn& c, int64_t ts, std::string_view actor, std::string_view kind,
                       std::string_view sensor, int64_t version, int64_t deployment,
                       std::string_view message) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("INSERT INTO events(ts, actor, kind, sensor, "
                                       "bundle_version, deployment_id, message) "
                                       "VALUES(?, ?, ?, ?, ?, ?, ?)"));
    s.bind(1, ts).bind(2, actor).bind(3, kind).bind(4, sensor).bind(5, version).bind(6, deployment);
    s.bind(7, message);
    return s.run();
}

// ---- Writes

absl::Status Store::begin_run(const std::string& sensor, int64_t version, int64_t ts) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        return begin_run_in(c, sid, version, ts);
    });
}

absl::Status Store::add_run_totals(const std::string& sensor, const RunTotals& deltas) {
    RETURN_IF_ERROR(validate_totals(deltas));
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(bool added, add_totals_in(c, sid, deltas));
        if (!added) {
            return absl::FailedPreconditionError(cat("sensor '", sensor, "' has no open run"));
        }
        return absl::OkStatus();
    });
}

absl::Status Store::record_metrics(const std::string& sensor, int64_t ts,
                                   const std::vector<MetricSample>& samples) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        return record_metrics_in(c, sid, ts, samples);
    });
}

absl::Status Store::report(const SensorReport& r) {
    RETURN_IF_ERROR(validate_totals(r.deltas));
    RETURN_IF_ERROR(validate_totals(r.counters));
    return impl_->write_status(report_op(std::make_shared<const SensorReport>(r)));
}

absl::StatusOr<ReportPosition> Store::report_position(const std::string& sensor) {
    return impl_->write<ReportPosition>([sensor](Conn& c) -> absl::StatusOr<ReportPosition> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT report_boot, report_seq, report_packets, "
                                           "report_bytes, report_drops, report_alerts, "
                                           "coalesce(last_seen, 0) FROM sensors WHERE id = ?"));
        s.bind(1, sid);
        RETURN_IF_ERROR(s.expect_row([] { return absl::NotFoundError("sensor row vanished"); }));
        ReportPosition p;
        p.boot = s.text(0);
        p.seq = s.i64(1);
        p.counters.packets = s.i64(2);
        p.counters.bytes = s.i64(3);
        p.counters.drops = s.i64(4);
        p.counters.alerts = s.i64(5);
        p.last_seen = s.i64(6);
        return p;
    });
}

void Store::report_async(SensorReport r, std::function<void(absl::Status)> done) {
    absl::Status st = validate_totals(r.deltas);
    if (st.ok()) {
        st = validate_totals(r.counters);
    }
    if (!st.ok()) {
        if (done) {
            done(st);
        }
        return;
    }
    std::function<void(const absl::Status&)> cb;
    if (done) {
        cb = [done = std::move(done)](const absl::Status& st) { done(st); };
    }
    impl_->enqueue({report_op(std::make_shared<const SensorReport>(std::move(r))), std::move(cb)});
}

absl::StatusOr<int64_t> Store::prune_metrics(int64_t now) {
    // A minute is dropped once all of it is older than the retention window.
    int64_t cutoff = now - impl_->options().metric_retention_seconds * kNsPerSecond;
    return impl_->write<int64_t>([cutoff](Conn& c) -> absl::StatusOr<int64_t> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("DELETE FROM metric_minutes WHERE minute <= ?"));
        s.bind(1, cutoff - kNsPerMinute);
        RETURN_IF_ERROR(s.run());
        return c.changes();
    });
}

absl::Status Store::record_event(const Event& e) {
    if (e.kind.empty()) {
        return absl::InvalidArgumentError("event without a kind");
    }
    return impl_->write_status([e](Conn& c) {
        return log_event(c, e.ts, e.actor, e.kind, e.sensor, e.bundle_version, e.deployment_id,
                         e.message);
    });
}

// ---- Reads

absl::StatusOr<int64_t> Store::previous_version(const std::string& sensor) {
    return impl_->read([&sensor](Conn& c) -> absl::StatusOr<int64_t> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        return previous_version_in(c, sid, sensor);
    });
}

absl::StatusOr<int64_t> Store::desired_version(const std::string& sensor) {
    return impl_->read([&sensor](Conn& c) -> absl::StatusOr<int64_t> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT state, bundle_version FROM deployment_targets "
                                           "WHERE sensor_id = ? ORDER BY created_at DESC, "
                                           "deployment_id DESC LIMIT 1"));
        s.bind(1, sid);
        ASSIGN_OR_RETURN(bool row, s.step());
        return row && s.text(0) == "applied" ? s.i64(1) : int64_t{0};
    });
}

absl::StatusOr<std::vector<Run>> Store::recent_runs(size_t limit) {
    return impl_->read([limit](Conn& c) -> absl::StatusOr<std::vector<Run>> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT r.id, s.name, r.bundle_version, r.started_at, "
                                           "coalesce(r.ended_at, 0), r.packets, r.bytes, r.drops, "
                                           "r.alerts, coalesce(r.deployment_id, 0) FROM runs r "
                                           "JOIN sensors s ON s.id = r.sensor_id "
                                           "ORDER BY r.started_at DESC, r.id DESC LIMIT ?"));
        s.bind(1, static_cast<int64_t>(limit));
        return collect<Run>(s, [](const Stmt& r) {
            Run run;
            r.get(0, run.id, run.sensor, run.bundle_version, run.started_at, run.ended_at,
                  run.totals.packets, run.totals.bytes, run.totals.drops, run.totals.alerts,
                  run.deployment_id);
            return run;
        });
    });
}

absl::StatusOr<std::vector<Run>> Store::list_runs(const std::string& sensor) {
    return impl_->read([&sensor](Conn& c) -> absl::StatusOr<std::vector<Run>> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, bundle_version, started_at, "
                                           "coalesce(ended_at, 0), packets, bytes, drops, alerts, "
                                           "coalesce(deployment_id, 0) "
                                           "FROM runs WHERE sensor_id = ? ORDER BY id"));
        s.bind(1, sid);
        return collect<Run>(s, [&sensor](const Stmt& r) {
            Run run;
            run.sensor = sensor;
            r.get(0, run.id, run.bundle_version, run.started_at, run.ended_at, run.totals.packets,
                  run.totals.bytes, run.totals.drops, run.totals.alerts, run.deployment_id);
            return run;
        });
    });
}

absl::StatusOr<std::vector<MetricPoint>> Store::metric_history(const std::string& sensor,
                                                               const std::string& counter,
                                                               int64_t from, int64_t to) {
    return impl_->read([&, from, to](Conn& c) -> absl::StatusOr<std::vector<MetricPoint>> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT m.minute, m.value FROM metric_minutes m JOIN "
                                           "metric_names n ON n.id = m.name_id WHERE "
                                           "m.sensor_id = ? AND n.name = ? AND m.minute >= ? AND "
                                           "m.minute <= ? ORDER BY m.minute"));
        s.bind(1, sid).bind(2, counter).bind(3, minute_of(from)).bind(4, to);
        return collect<MetricPoint>(s, [](const Stmt& r) {
            return MetricPoint{r.i64(0), r.i64(1)};
        });
    });
}

absl::StatusOr<std::vector<Event>> Store::history(const std::string& sensor, int limit,
                                                  int64_t before_id) {
    return impl_->read([&, limit, before_id](Conn& c) -> absl::StatusOr<std::vector<Event>> {
        int64_t before = before_id > 0 ? before_id : INT64_MAX;
        // Per sensor: its own events plus those of the deployments that targeted it.
        ASSIGN_OR_RETURN(
            Stmt s,
            c.prepare("SELECT id, ts, actor, kind, sensor, bundle_version, deployment_id, message "
                      "FROM events WHERE id < ?1 AND (?2 = '' OR sensor = ?2 OR (sensor = '' AND "
                      "deployment_id IN (SELECT t.deployment_id FROM deployment_targets t JOIN "
                      "sensors s ON s.id = t.sensor_id WHERE s.name = ?2))) "
                      "ORDER BY id DESC LIMIT ?3"));
        s.bind(1, before).bind(2, sensor).bind(3, static_cast<int64_t>(limit));
        return collect<Event>(s, event_from_row);
    });
}

}  // namespace picket::manager::store
