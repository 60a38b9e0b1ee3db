// copy_store: a whole store from one backend to another (picket-manager migrate --from
// sqlite:PATH --to postgres://...), ids and blobs as they are.
#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/strings.h"
#include "manager/store/sqlite.h"
#include "manager/store/store.h"

namespace picket::manager::store {

using strings::cat;

namespace {

// Every table of schema 7 in an order that satisfies the foreign keys (rows of one table are
// copied by their key, so a parent bundle or deployment comes before its children), with its
// id column when the target generates ids (its sequence is moved past the copied ones).
struct Table {
    const char* name;
    const char* order;
    const char* id;  // nullptr: no generated id
};
constexpr Table kTables[] = {
    {"sensors", "id", "id"},
    {"sensor_labels", "sensor_id, key", nullptr},
    {"blobs", "sha256", nullptr},
    {"bundles", "version", "version"},
    {"deployments", "id", "id"},
    {"deployment_targets", "deployment_id, sensor_id", nullptr},
    {"events", "id", "id"},
    {"runs", "id", "id"},
    {"metric_names", "id", "id"},
    {"metric_minutes", "sensor_id, name_id, minute", nullptr},
    {"revoked_certs", "sha256", nullptr},
    {"rule_sources", "name", nullptr},
    {"rule_policy", "name", nullptr},
    {"rule_updates", "id", "id"},
    {"rule_update_sources", "update_id, name", nullptr},
    {"bootstrap_tokens", "id", nullptr},
    {"bootstrap_token_labels", "token_id, key", nullptr},
    {"sensor_imposed_labels", "sensor_id, key", nullptr},
    {"issued_certs", "serial", nullptr},
};

constexpr const char* kCounters =
    "SELECT id, targets_pending, targets_sent, targets_applied, targets_rejected, "
    "targets_timed_out, targets_superseded, targets_taken_over FROM deployments ORDER BY id";

absl::StatusOr<int64_t> count_rows(Conn& c, const std::string& sql) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare(sql.c_str()));
    RETURN_IF_ERROR(s.expect_row([] { return absl::InternalError("count(*) without a row"); }));
    return s.i64(0);
}

absl::StatusOr<std::vector<std::vector<int64_t>>> counters(Conn& c) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare(kCounters));
    std::vector<std::vector<int64_t>> out;
    RETURN_IF_ERROR(each_row(s, [&out](const Stmt& r) {
        std::vector<int64_t> row;
        for (int i = 0; i < 8; ++i) {
            row.push_back(r.i64(i));
        }
        out.push_back(std::move(row));
    }));
    return out;
}

absl::Status copy_tables(Conn& src, Conn& dst, std::deque<std::string>& sql, CopyReport& report) {
    for (const Table& t : kTables) {
        sql.push_back(cat("SELECT count(*) FROM ", t.name));
        ASSIGN_OR_RETURN(int64_t there, count_rows(dst, sql.back()));
        if (there != 0) {
            return absl::FailedPreconditionError(
                cat("the target is not empty (table ", t.name, " has ", there,
                    " rows): migrate copies into an empty database only"));
        }
    }
    for (const Table& t : kTables) {
        sql.push_back(cat("SELECT * FROM ", t.name, " ORDER BY ", t.order));
        ASSIGN_OR_RETURN(Stmt rows, src.prepare(sql.back().c_str()));
        const int n = rows.columns();
        std::string cols, marks;
        for (int i = 0; i < n; ++i) {
            cols += cat(i == 0 ? "" : ", ", rows.column_name(i));
            marks += cat(i == 0 ? "?" : ", ?");
        }
        sql.push_back(cat("INSERT INTO ", t.name, "(", cols, ") VALUES(", marks, ")"));
        const char* insert = sql.back().c_str();
        const bool deployments = std::string_view(t.name) == "deployments";
        int64_t copied = 0;
        absl::Status st = absl::OkStatus();
        RETURN_IF_ERROR(each_row(rows, [&](const Stmt& r) {
            if (!st.ok()) {
                return;
            }
            auto ins = dst.prepare(insert);
            if (!ins.ok()) {
                st = ins.status();
                return;
            }
            for (int i = 0; i < n; ++i) {
                const int p = i + 1;
                if (deployments && r.column_name(i).starts_with("targets_")) {
                    // Rebuilt by the target's triggers as the targets are copied.
                    ins->bind(p, int64_t{0});
                    continue;
                }
                switch (r.column_type(i)) {
                    case SQLITE_NULL:
                        ins->bind_null(p);
                        break;
                    case SQLITE_INTEGER:
                        ins->bind(p, r.i64(i));
                        break;
                    case SQLITE_FLOAT:
                        ins->bind_double(p, r.f64(i));
                        break;
                    case SQLITE_BLOB:
                        ins->bind_blob(p, r.blob(i));
                        break;
                    default:
                        if (r.column_decltype(i) == "BLOB") {
                            ins->bind_blob(p, r.blob(i));
                        } else {
                            ins->bind(p, r.text(i));
                        }
                }
            }
            st = ins->run();
            ++copied;
        }));
        if (!st.ok()) {
            return absl::Status(st.code(), cat("copy table ", t.name, ": ", st.message()));
        }
        report.tables.emplace_back(t.name, copied);
    }
    // The target's generated ids continue after the copied ones (SQLite's AUTOINCREMENT
    // high-water mark included: a deleted row's id is not given out again).
    for (const Table& t : kTables) {
        if (t.id == nullptr) {
            continue;
        }
        sql.push_back(cat("SELECT coalesce(max(", t.id, "), 0) FROM ", t.name));
        ASSIGN_OR_RETURN(int64_t high, count_rows(src, sql.back()));
        sql.push_back(
            cat("SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = '", t.name, "'"));
        auto seq = count_rows(src, sql.back());
        if (seq.ok()) {
            high = std::max(high, *seq);
        }
        if (dst.postgres() && high > 0) {
            sql.push_back(cat("SELECT setval(pg_get_serial_sequence('", t.name, "', '", t.id,
                              "'), ", high, ")"));
            ASSIGN_OR_RETURN(Stmt s, dst.prepare(sql.back().c_str()));
            RETURN_IF_ERROR(s.run());
        }
    }
    // Verification inside the transaction: a mismatch commits nothing.
    for (const auto& [name, n] : report.tables) {
        sql.push_back(cat("SELECT count(*) FROM ", name));
        ASSIGN_OR_RETURN(int64_t there, count_rows(dst, sql.back()));
        if (there != n) {
            return absl::DataLossError(
                cat("table ", name, ": copied ", n, " rows but the target holds ", there));
        }
    }
    ASSIGN_OR_RETURN(auto want, counters(src));
    ASSIGN_OR_RETURN(auto got, counters(dst));
    if (want != got) {
        return absl::DataLossError(
            "the deployments' target counters of the copy differ from the source's");
    }
    return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CopyReport> copy_store(const std::string& from, const std::string& to) {
    if (is_postgres_dsn(from)) {
        return absl::InvalidArgumentError("migrate copies from an SQLite file");
    }
    StoreOptions keep;
    keep.reset_connections = false;
    for (const std::string* p : {&from, &to}) {
        // Both at the current schema (the source is upgraded in place, as picket-manager
        // would on start).
        auto s = Store::Open(*p, keep);
        if (!s.ok()) {
            return s.status();
        }
    }
    StoreOptions opt;
    ASSIGN_OR_RETURN(std::unique_ptr<Conn> src, Conn::open(from, true, opt));
    ASSIGN_OR_RETURN(std::unique_ptr<Conn> dst, Conn::open(to, false, opt));
    std::deque<std::string> sql;  // the statement cache is keyed by these strings' addresses

    CopyReport report;
    RETURN_IF_ERROR(src->exec("BEGIN"));
    RETURN_IF_ERROR(dst->exec("BEGIN IMMEDIATE"));
    absl::Status st = copy_tables(*src, *dst, sql, report);
    src->exec("COMMIT").IgnoreError();
    if (!st.ok()) {
        dst->exec("ROLLBACK").IgnoreError();
        return st;
    }
    RETURN_IF_ERROR(dst->exec("COMMIT"));
    return report;
}

}  // namespace picket::manager::store
