#include "manager/store/store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "manager/store/migrations.h"
#include "manager/store/str.h"

namespace picket::manager::store {

namespace {

// Token hashes compared in constant time (no early exit on the first differing byte), so
// response timing says nothing about a stored hash.
bool same_secret(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) {
        return false;
    }
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        diff = static_cast<unsigned char>(
            diff | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
    }
    return diff == 0;
}

constexpr int64_t kNsPerSecond = 1'000'000'000;
constexpr int64_t kNsPerMinute = 60 * kNsPerSecond;

// ---- SQLite plumbing

absl::Status sqlite_status(int rc, sqlite3* db, std::string_view what) {
    std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    std::string msg = cat(what, ": ", detail);
    switch (rc & 0xff) {
        case SQLITE_FULL:
            return absl::ResourceExhaustedError(
                cat(msg, " (database or disk full; nothing committed is lost)"));
        case SQLITE_NOMEM:
            return absl::ResourceExhaustedError(msg);
        case SQLITE_TOOBIG:
            return absl::InvalidArgumentError(msg);
        case SQLITE_BUSY:
        case SQLITE_LOCKED:
            return absl::UnavailableError(msg);
        case SQLITE_CORRUPT:
        case SQLITE_NOTADB:
            return absl::DataLossError(msg);
        case SQLITE_CONSTRAINT:
            return absl::FailedPreconditionError(msg);
        case SQLITE_IOERR:
            // EFBIG (RLIMIT_FSIZE, `prlimit --fsize`; the manager ignores SIGXFSZ) reaches
            // SQLite as a plain write error, and its errno is not kept reliably: a write error
            // under a finite file size limit is that limit. Name it, it is not a broken disk.
            if (db != nullptr && sqlite3_extended_errcode(db) == SQLITE_IOERR_WRITE) {
                rlimit lim{};
                const bool limited =
                    getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY;
                if (limited || sqlite3_system_errno(db) == EFBIG) {
                    return absl::ResourceExhaustedError(
                        cat(msg, " (file size limit reached: EFBIG, RLIMIT_FSIZE ",
                            limited ? cat(static_cast<uint64_t>(lim.rlim_cur), " bytes")
                                    : std::string("?"),
                            ", see ulimit -f; nothing committed is lost)"));
                }
            }
            return absl::UnavailableError(msg);
        case SQLITE_CANTOPEN:
        case SQLITE_READONLY:
        case SQLITE_PERM:
            return absl::UnavailableError(msg);
        default:
            return absl::InternalError(msg);
    }
}

// A prepared statement borrowed from a connection's cache; reset when it goes out of scope.
class Stmt {
public:
    Stmt(sqlite3_stmt* s, sqlite3* db) : s_(s), db_(db) {}
    Stmt(Stmt&& o) noexcept : s_(o.s_), db_(o.db_) { o.s_ = nullptr; }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;
    ~Stmt() {
        if (s_ != nullptr) {
            sqlite3_reset(s_);
            sqlite3_clear_bindings(s_);
        }
    }

    Stmt& bind(int i, int64_t v) {
        sqlite3_bind_int64(s_, i, v);
        return *this;
    }
    Stmt& bind(int i, std::string_view v) {
        sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt& bind_blob(int i, std::string_view v) {
        sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt& bind_null(int i) {
        sqlite3_bind_null(s_, i);
        return *this;
    }
    // Binds NULL for 0: optional references (parent version, parent deployment).
    Stmt& bind_ref(int i, int64_t v) { return v == 0 ? bind_null(i) : bind(i, v); }

    // true: a row is available; false: done.
    absl::StatusOr<bool> step() {
        int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW) {
            return true;
        }
        if (rc == SQLITE_DONE) {
            return false;
        }
        return sqlite_status(rc, db_, cat("sqlite step '", short_sql(), "'"));
    }
    absl::Status run() {
        for (;;) {
            absl::StatusOr<bool> r = step();
            if (!r.ok()) {
                return r.status();
            }
            if (!*r) {
                return absl::OkStatus();
            }
        }
    }

    int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
    bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
    std::string text(int c) const {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
        return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, c));
    }
    std::string blob(int c) const {
        const auto* p = static_cast<const char*>(sqlite3_column_blob(s_, c));
        return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, c));
    }

private:
    std::string short_sql() const {
        std::string sql = sqlite3_sql(s_);
        std::replace(sql.begin(), sql.end(), '\n', ' ');
        return sql.size() > 60 ? sql.substr(0, 60) + "..." : sql;
    }
    sqlite3_stmt* s_;
    sqlite3* db_;
};

// One SQLite connection with a statement cache keyed by the SQL literal's address. A
// connection is used by one thread at a time (the writer, or the holder of a read lease).
class Conn {
public:
    static absl::StatusOr<std::unique_ptr<Conn>> open(const std::string& path, bool read_only,
                                                      const StoreOptions& opt) {
        sqlite3* db = nullptr;
        int flags = SQLITE_OPEN_NOMUTEX |
                    (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
        auto conn = std::unique_ptr<Conn>(new Conn(db));
        if (rc != SQLITE_OK) {
            return sqlite_status(rc, db, cat("open database ", path));
        }
        sqlite3_extended_result_codes(db, 1);
        sqlite3_busy_timeout(db, static_cast<int>(opt.busy_timeout.count()));
        return conn;
    }
    ~Conn() {
        for (auto& [sql, s] : cache_) {
            sqlite3_finalize(s);
        }
        sqlite3_close_v2(db_);
    }
    sqlite3* db() const { return db_; }

    absl::Status exec(const char* sql) {
        char* err = nullptr;
        int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
        sqlite3_free(err);
        if (rc != SQLITE_OK) {
            std::string what(sql);
            std::replace(what.begin(), what.end(), '\n', ' ');
            return sqlite_status(rc, db_, cat("sqlite '", what.substr(0, 60), "'"));
        }
        return absl::OkStatus();
    }

    absl::StatusOr<Stmt> prepare(const char* sql) {
        auto it = cache_.find(sql);
        if (it != cache_.end()) {
            return Stmt(it->second, db_);
        }
        sqlite3_stmt* s = nullptr;
        int rc = sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr);
        if (rc != SQLITE_OK) {
            return sqlite_status(rc, db_, cat("sqlite prepare '", sql, "'"));
        }
        cache_.emplace(sql, s);
        return Stmt(s, db_);
    }

    // Single-value query helpers.
    absl::StatusOr<std::optional<int64_t>> query_i64(const char* sql, int64_t arg) {
        auto s = prepare(sql);
        if (!s.ok()) {
            return s.status();
        }
        s->bind(1, arg);
        auto row = s->step();
        if (!row.ok()) {
            return row.status();
        }
        if (!*row || s->null(0)) {
            return std::optional<int64_t>();
        }
        return std::optional<int64_t>(s->i64(0));
    }

    std::unordered_map<std::string, int64_t> metric_ids;  // writer only: metric name -> id

private:
    explicit Conn(sqlite3* db) : db_(db) {}
    sqlite3* db_;
    std::unordered_map<const char*, sqlite3_stmt*> cache_;
};

#define PK_ASSIGN_OR_RETURN_IMPL(var, tmp, expr) \
    auto tmp = (expr);                           \
    if (!tmp.ok()) {                             \
        return tmp.status();                     \
    }                                            \
    var = std::move(*tmp)
#define PK_CONCAT2(a, b) a##b
#define PK_CONCAT(a, b) PK_CONCAT2(a, b)
#define ASSIGN_OR_RETURN(var, expr) \
    PK_ASSIGN_OR_RETURN_IMPL(var, PK_CONCAT(status_or_, __LINE__), expr)
#define RETURN_IF_ERROR(expr)          \
    do {                               \
        absl::Status status_ = (expr); \
        if (!status_.ok()) {           \
            return status_;            \
        }                              \
    } while (0)

// ---- Enum names

constexpr std::string_view kTargetStates[] = {"pending",  "sent",      "applied",
                                              "rejected", "timed_out", "superseded"};
constexpr std::string_view kStages[] = {"canary", "rest"};
constexpr std::string_view kKinds[] = {"deploy", "rollback"};
constexpr std::string_view kDeploymentStates[] = {"canary",    "soaking", "rolling",
                                                  "completed", "failed",  "rolled_back"};

template <typename E, size_t N>
E from_name(const std::string_view (&names)[N], std::string_view s) {
    for (size_t i = 0; i < N; ++i) {
        if (names[i] == s) {
            return static_cast<E>(i);
        }
    }
    return static_cast<E>(0);  // CHECK constraints make this unreachable
}

std::string sha256_hex(std::string_view data) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) {
        out.push_back(kHex[md[i] >> 4]);
        out.push_back(kHex[md[i] & 15]);
    }
    return out;
}

int64_t minute_of(int64_t ts) {
    int64_t m = ts / kNsPerMinute;
    if (ts % kNsPerMinute < 0) {
        --m;
    }
    return m * kNsPerMinute;
}

// ---- Row helpers shared by reads and writes

absl::StatusOr<int64_t> sensor_id(Conn& c, std::string_view name) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id FROM sensors WHERE name = ?"));
    s.bind(1, name);
    ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) {
        return absl::NotFoundError(cat("sensor '", name, "' not found"));
    }
    return s.i64(0);
}

absl::Status require_bundle(Conn& c, int64_t version) {
    ASSIGN_OR_RETURN(std::optional<int64_t> v,
                     c.query_i64("SELECT version FROM bundles WHERE version = ?", version));
    if (!v) {
        return absl::NotFoundError(cat("bundle version ", version, " not found"));
    }
    return absl::OkStatus();
}

constexpr const char* kSensorColumns =
    "SELECT id, name, host, version, capture_mode, workers, token_hash IS NOT NULL, "
    "coalesce(enrolled_at, 0), coalesce(first_seen, 0), coalesce(last_seen, 0), connected, "
    "running_version, revoked_at IS NOT NULL, coalesce(revoked_at, 0) FROM sensors ";

Sensor sensor_from_row(const Stmt& s) {
    Sensor out;
    out.name = s.text(1);
    out.host = s.text(2);
    out.version = s.text(3);
    out.capture_mode = s.text(4);
    out.workers = static_cast<int>(s.i64(5));
    out.enrolled = s.i64(6) != 0;
    out.enrolled_at = s.i64(7);
    out.first_seen = s.i64(8);
    out.last_seen = s.i64(9);
    out.connected = s.i64(10) != 0;
    out.running_version = s.i64(11);
    out.revoked = s.i64(12) != 0;
    out.revoked_at = s.i64(13);
    return out;
}

// The id of a sensor that may report: NOT_FOUND when unknown, PERMISSION_DENIED when revoked
// (a report already queued when the revocation committed is refused, not recorded).
absl::StatusOr<int64_t> active_sensor_id(Conn& c, std::string_view name) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, revoked_at IS NOT NULL FROM sensors "
                                       "WHERE name = ?"));
    s.bind(1, name);
    ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) {
        return absl::NotFoundError(cat("sensor '", name, "' not found"));
    }
    if (s.i64(1) != 0) {
        return absl::PermissionDeniedError(cat("sensor '", name, "' is revoked"));
    }
    return s.i64(0);
}

// Every sensor with its labels, sorted by name.
absl::StatusOr<std::vector<Sensor>> load_sensors(Conn& c) {
    static const std::string kSql = std::string(kSensorColumns) + "ORDER BY name";
    ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
    std::vector<Sensor> out;
    std::unordered_map<int64_t, size_t> index;
    for (;;) {
        ASSIGN_OR_RETURN(bool row, s.step());
        if (!row) {
            break;
        }
        index.emplace(s.i64(0), out.size());
        out.push_back(sensor_from_row(s));
    }
    ASSIGN_OR_RETURN(Stmt l, c.prepare("SELECT sensor_id, key, value FROM sensor_labels"));
    for (;;) {
        ASSIGN_OR_RETURN(bool row, l.step());
        if (!row) {
            break;
        }
        auto it = index.find(l.i64(0));
        if (it != index.end()) {
            out[it->second].labels.emplace(l.text(1), l.text(2));
        }
    }
    return out;
}

// INVALID_ARGUMENT for a bad selector, NOT_FOUND for an unknown name or no match.
absl::StatusOr<std::vector<Sensor>> select_in(Conn& c, const Selector& sel) {
    ASSIGN_OR_RETURN(std::vector<Sensor> all, load_sensors(c));
    std::vector<Sensor> out;
    for (Sensor& s : all) {
        if (sel.matches(s.name, s.labels)) {
            out.push_back(std::move(s));
        }
    }
    if (sel.kind() == Selector::Kind::kNames) {
        for (const std::string& name : sel.names()) {
            bool found = std::any_of(out.begin(), out.end(),
                                     [&name](const Sensor& s) { return s.name == name; });
            if (!found) {
                return absl::NotFoundError(
                    cat("selector '", sel.to_string(), "': sensor '", name, "' not found"));
            }
        }
    }
    if (out.empty()) {
        return absl::NotFoundError(cat("selector '", sel.to_string(), "' matches no sensor"));
    }
    return out;
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

absl::StatusOr<Deployment> load_deployment(Conn& c, int64_t id, bool with_targets) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, coalesce(bundle_version, 0), kind, selector, "
                                       "canary_percent, soak_seconds, state, "
                                       "coalesce(parent_id, 0), actor, error, created_at, "
                                       "updated_at FROM deployments WHERE id = ?"));
    s.bind(1, id);
    ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) {
        return absl::NotFoundError(cat("deployment ", id, " not found"));
    }
    Deployment d;
    d.id = s.i64(0);
    d.bundle_version = s.i64(1);
    d.kind = from_name<DeploymentKind>(kKinds, s.text(2));
    d.selector = s.text(3);
    d.canary_percent = static_cast<int>(s.i64(4));
    d.soak_seconds = s.i64(5);
    d.state = from_name<DeploymentState>(kDeploymentStates, s.text(6));
    d.parent_id = s.i64(7);
    d.actor = s.text(8);
    d.error = s.text(9);
    d.created_at = s.i64(10);
    d.updated_at = s.i64(11);
    if (!with_targets) {
        return d;
    }
    ASSIGN_OR_RETURN(Stmt t,
                     c.prepare("SELECT s.name, t.bundle_version, t.stage, t.state, t.error, "
                               "t.created_at, coalesce(t.sent_at, 0), coalesce(t.finished_at, 0), "
                               "t.updated_at FROM deployment_targets t JOIN sensors s "
                               "ON s.id = t.sensor_id WHERE t.deployment_id = ? ORDER BY s.name"));
    t.bind(1, id);
    for (;;) {
        ASSIGN_OR_RETURN(bool more, t.step());
        if (!more) {
            break;
        }
        Target x;
        x.sensor = t.text(0);
        x.bundle_version = t.i64(1);
        x.stage = from_name<Stage>(kStages, t.text(2));
        x.state = from_name<TargetState>(kTargetStates, t.text(3));
        x.error = t.text(4);
        x.created_at = t.i64(5);
        x.sent_at = t.i64(6);
        x.finished_at = t.i64(7);
        x.updated_at = t.i64(8);
        d.targets.push_back(std::move(x));
    }
    return d;
}

absl::Status set_deployment_state_in(Conn& c, int64_t id, DeploymentState to,
                                     std::string_view error, int64_t ts) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE deployments SET state = ?, error = ?, "
                                       "updated_at = ? WHERE id = ?"));
    s.bind(1, to_string(to)).bind(2, error).bind(3, ts).bind(4, id);
    RETURN_IF_ERROR(s.run());
    return log_event(c, ts, "", cat("deployment.", to_string(to)), "", 0, id, error);
}

// A rolling deployment without open targets is over: completed when none failed.
absl::Status maybe_finish(Conn& c, int64_t id, int64_t ts) {
    ASSIGN_OR_RETURN(Stmt s,
                     c.prepare("SELECT d.state, "
                               "(SELECT count(*) FROM deployment_targets WHERE deployment_id = "
                               "d.id AND state IN ('pending', 'sent')), "
                               "(SELECT count(*) FROM deployment_targets WHERE deployment_id = "
                               "d.id AND state IN ('rejected', 'timed_out')), "
                               "(SELECT count(*) FROM deployment_targets WHERE deployment_id = "
                               "d.id) FROM deployments d WHERE d.id = ?"));
    s.bind(1, id);
    ASSIGN_OR_RETURN(bool row, s.step());
    if (!row || s.text(0) != "rolling" || s.i64(1) != 0) {
        return absl::OkStatus();
    }
    int64_t failed = s.i64(2);
    int64_t total = s.i64(3);
    if (failed == 0) {
        return set_deployment_state_in(c, id, DeploymentState::kCompleted, "", ts);
    }
    return set_deployment_state_in(c, id, DeploymentState::kFailed,
                                   cat(failed, " of ", total, " targets rejected or timed out"),
                                   ts);
}

// Supersedes every open target of a deployment (when it ends without reaching them).
absl::Status supersede_open_targets(Conn& c, int64_t deployment_id, int64_t ts) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE deployment_targets SET state = 'superseded', "
                                       "finished_at = ?1, updated_at = ?1 WHERE deployment_id = "
                                       "?2 AND state IN ('pending', 'sent')"));
    s.bind(1, ts).bind(2, deployment_id);
    return s.run();
}

absl::Status begin_run_in(Conn& c, int64_t sid, int64_t version, int64_t ts) {
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
    ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO runs(sensor_id, bundle_version, started_at) "
                                         "VALUES(?, ?, ?)"));
    ins.bind(1, sid).bind(2, version).bind(3, start);
    return ins.run();
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
    return sqlite3_changes(c.db()) > 0;
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
        ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO metric_names(name) VALUES(?)"));
        ins.bind(1, name);
        RETURN_IF_ERROR(ins.run());
        id = sqlite3_last_insert_rowid(c.db());
    }
    c.metric_ids.emplace(name, id);
    return id;
}

absl::Status record_metrics_in(Conn& c, int64_t sid, int64_t ts,
                               const std::vector<MetricSample>& samples) {
    for (const MetricSample& m : samples) {
        if (m.name.empty()) {
            return absl::InvalidArgumentError("metric sample without a counter name");
        }
        ASSIGN_OR_RETURN(int64_t name_id, metric_name_id(c, m.name));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("INSERT INTO metric_minutes(sensor_id, name_id, minute, "
                                           "value, sample_ts) VALUES(?1, ?2, ?3, ?4, ?5) "
                                           "ON CONFLICT(sensor_id, name_id, minute) DO UPDATE SET "
                                           "value = excluded.value, sample_ts = excluded.sample_ts "
                                           "WHERE excluded.sample_ts >= metric_minutes.sample_ts"));
        s.bind(1, sid).bind(2, name_id).bind(3, minute_of(ts)).bind(4, m.value).bind(5, ts);
        RETURN_IF_ERROR(s.run());
    }
    return absl::OkStatus();
}

absl::Status touch_in(Conn& c, int64_t sid, int64_t ts) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE sensors SET last_seen = max(coalesce(last_seen, "
                                       "?1), ?1) WHERE id = ?2"));
    s.bind(1, ts).bind(2, sid);
    return s.run();
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
    ASSIGN_OR_RETURN(bool found, s.step());
    if (!found) {
        return absl::NotFoundError(
            cat("sensor '", name, "' has no earlier bundle version than ", current));
    }
    return s.i64(0);
}

struct WriteOp {
    std::function<absl::Status(Conn&)> run;
    std::function<void(const absl::Status&)> done;
    std::chrono::steady_clock::time_point enqueued{};  // set by enqueue(): op latency
};

}  // namespace

// ---- Enum helpers

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

bool is_terminal(TargetState s) {
    return s != TargetState::kPending && s != TargetState::kSent;
}
bool is_terminal(DeploymentState s) {
    return s == DeploymentState::kCompleted || s == DeploymentState::kFailed ||
           s == DeploymentState::kRolledBack;
}

bool valid_transition(TargetState from, TargetState to) {
    using T = TargetState;
    switch (from) {
        case T::kPending:
            return to == T::kSent || to == T::kApplied || to == T::kTimedOut ||
                   to == T::kSuperseded;
        case T::kSent:
            return to == T::kPending || to == T::kApplied || to == T::kRejected ||
                   to == T::kTimedOut || to == T::kSuperseded;
        default:
            return false;
    }
}

bool valid_transition(DeploymentState from, DeploymentState to) {
    using D = DeploymentState;
    switch (from) {
        case D::kCanary:
            return to == D::kSoaking || to == D::kRolling || to == D::kFailed ||
                   to == D::kRolledBack;
        case D::kSoaking:
            return to == D::kRolling || to == D::kFailed || to == D::kRolledBack;
        case D::kRolling:
            return to == D::kCompleted || to == D::kFailed;
        default:
            return false;
    }
}

// ---- Impl: the writer thread and the read pool

class Store::Impl {
public:
    Impl(std::string path, StoreOptions opt, std::unique_ptr<Conn> writer)
        : path_(std::move(path)), opt_(opt), writer_(std::move(writer)) {
        thread_ = std::thread([this] { writer_loop(); });
    }
    ~Impl() {
        {
            std::lock_guard lock(mu_);
            stopping_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

    void enqueue(WriteOp op) {
        if (opt_.observe_op) {
            op.enqueued = std::chrono::steady_clock::now();
        }
        {
            std::lock_guard lock(mu_);
            queue_.push_back(std::move(op));
        }
        cv_.notify_one();
    }

    absl::Status write_status(std::function<absl::Status(Conn&)> fn) {
        auto p = std::make_shared<std::promise<absl::Status>>();
        auto fut = p->get_future();
        enqueue({std::move(fn), [p](const absl::Status& st) { p->set_value(st); }});
        return fut.get();
    }

    // The op's value is delivered only once its transaction committed.
    template <typename T>
    absl::StatusOr<T> write(std::function<absl::StatusOr<T>(Conn&)> fn) {
        struct State {
            std::optional<absl::StatusOr<T>> value;
            std::promise<absl::StatusOr<T>> promise;
        };
        auto st = std::make_shared<State>();
        auto fut = st->promise.get_future();
        enqueue({[st, fn = std::move(fn)](Conn& c) {
                     st->value = fn(c);
                     return st->value->status();
                 },
                 [st](const absl::Status& s) {
                     if (s.ok()) {
                         st->promise.set_value(std::move(*st->value));
                     } else {
                         st->promise.set_value(s);
                     }
                 }});
        return fut.get();
    }

    // Runs fn inside a read transaction (one snapshot) on a pooled read-only connection.
    template <typename F>
    auto read(F&& fn) -> decltype(fn(std::declval<Conn&>())) {
        std::unique_ptr<Conn> c;
        {
            std::lock_guard lock(pool_mu_);
            if (!idle_.empty()) {
                c = std::move(idle_.back());
                idle_.pop_back();
            }
        }
        if (!c) {
            auto opened = Conn::open(path_, true, opt_);
            if (!opened.ok()) {
                return opened.status();
            }
            c = std::move(*opened);
        }
        decltype(fn(std::declval<Conn&>())) result = absl::InternalError("read not run");
        absl::Status begin = c->exec("BEGIN");
        if (begin.ok()) {
            result = fn(*c);
            c->exec("COMMIT").IgnoreError();  // read-only: nothing to lose
        } else {
            result = begin;
        }
        std::lock_guard lock(pool_mu_);
        if (static_cast<int>(idle_.size()) < opt_.read_pool_idle) {
            idle_.push_back(std::move(c));
        }
        return result;
    }

    WriterStats stats() const {
        std::lock_guard lock(mu_);
        return stats_;
    }

    const StoreOptions& options() const { return opt_; }

private:
    void writer_loop() {
        std::vector<WriteOp> batch;
        for (;;) {
            {
                std::unique_lock lock(mu_);
                cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
                if (queue_.empty()) {
                    return;  // stopping and drained
                }
                if (opt_.batch_linger.count() > 0 &&
                    static_cast<int>(queue_.size()) < opt_.max_batch_ops && !stopping_) {
                    cv_.wait_for(lock, opt_.batch_linger, [this] {
                        return stopping_ || static_cast<int>(queue_.size()) >= opt_.max_batch_ops;
                    });
                }
                while (!queue_.empty() && static_cast<int>(batch.size()) < opt_.max_batch_ops) {
                    batch.push_back(std::move(queue_.front()));
                    queue_.pop_front();
                }
            }
            run_batch(batch);
            batch.clear();
        }
    }

    // Each op runs inside its own savepoint so a failing op (a NOT_FOUND, a bad transition)
    // leaves the rest of the batch intact. Results are handed out only after COMMIT.
    void run_batch(std::vector<WriteOp>& batch) {
        Conn& c = *writer_;
        std::vector<absl::Status> results(batch.size());
        int64_t txns = 0;
        size_t i = 0;
        while (i < batch.size()) {
            size_t first = i;
            auto txn_start = std::chrono::steady_clock::now();
            absl::Status st = c.exec("BEGIN IMMEDIATE");
            if (!st.ok()) {
                c.metric_ids.clear();
                for (; i < batch.size(); ++i) {
                    results[i] = st;
                }
                break;
            }
            ++txns;
            bool lost = false;
            for (; i < batch.size() && !lost; ++i) {
                absl::Status r = c.exec("SAVEPOINT op");
                if (r.ok()) {
                    r = batch[i].run(c);
                    if (r.ok()) {
                        r = c.exec("RELEASE op");
                    }
                }
                if (!r.ok()) {
                    if (sqlite3_get_autocommit(c.db()) != 0) {
                        // SQLite rolled the whole transaction back (I/O error, disk full in
                        // some paths): the earlier ops of this transaction are gone too.
                        lost = true;
                        c.metric_ids.clear();
                        for (size_t j = first; j < i; ++j) {
                            if (results[j].ok()) {
                                results[j] = absl::Status(
                                    r.code(), cat("rolled back with its batch: ", r.message()));
                            }
                        }
                    } else {
                        c.metric_ids.clear();
                        c.exec("ROLLBACK TO op").IgnoreError();
                        c.exec("RELEASE op").IgnoreError();
                    }
                }
                results[i] = r;
            }
            if (!lost) {
                st = c.exec("COMMIT");
                if (!st.ok()) {
                    c.metric_ids.clear();
                    if (sqlite3_get_autocommit(c.db()) == 0) {
                        c.exec("ROLLBACK").IgnoreError();
                    }
                    for (size_t j = first; j < i; ++j) {
                        if (results[j].ok()) {
                            results[j] = st;
                        }
                    }
                }
            }
            if (opt_.observe_txn) {
                opt_.observe_txn(
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - txn_start)
                        .count());
            }
        }
        {
            // Counted before anyone is told: a caller that reads writer_stats() after its
            // write returned must see that write counted.
            std::lock_guard lock(mu_);
            stats_.ops += static_cast<int64_t>(batch.size());
            stats_.transactions += txns;
        }
        if (opt_.observe_op) {
            auto now = std::chrono::steady_clock::now();
            for (const WriteOp& op : batch) {
                opt_.observe_op(std::chrono::duration<double>(now - op.enqueued).count());
            }
        }
        for (size_t j = 0; j < batch.size(); ++j) {
            if (batch[j].done) {
                batch[j].done(results[j]);
            }
        }
    }

    std::string path_;
    StoreOptions opt_;
    std::unique_ptr<Conn> writer_;  // owned by the writer thread after construction

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<WriteOp> queue_;
    bool stopping_ = false;
    WriterStats stats_;
    std::thread thread_;

    std::mutex pool_mu_;
    std::vector<std::unique_ptr<Conn>> idle_;
};

// ---- Open and migrations

namespace {

absl::StatusOr<int> migrate(Conn& c, int target) {
    RETURN_IF_ERROR(c.exec("BEGIN IMMEDIATE"));
    auto fail = [&c](absl::Status st) {
        c.exec("ROLLBACK").IgnoreError();
        return st;
    };
    if (absl::Status st =
            c.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
        !st.ok()) {
        return fail(st);
    }
    int version = 0;
    {
        auto s = c.prepare("SELECT max(version) FROM schema_version");
        if (!s.ok()) {
            return fail(s.status());
        }
        auto row = s->step();
        if (!row.ok()) {
            return fail(row.status());
        }
        version = *row && !s->null(0) ? static_cast<int>(s->i64(0)) : 0;
    }
    if (version > Store::kSchemaVersion) {
        return fail(absl::FailedPreconditionError(cat(
            "database schema version ", version, " is newer than this picket-manager supports (",
            Store::kSchemaVersion, "); upgrade picket-manager or restore an older database")));
    }
    RETURN_IF_ERROR(c.exec("COMMIT"));
    auto steps = migrations();
    for (int v = version + 1; v <= target; ++v) {
        RETURN_IF_ERROR(c.exec("BEGIN IMMEDIATE"));
        absl::Status st = c.exec(steps[v - 1]);
        if (st.ok()) {
            auto s = c.prepare("DELETE FROM schema_version");
            st = s.ok() ? s->run() : s.status();
        }
        if (st.ok()) {
            auto s = c.prepare("INSERT INTO schema_version(version) VALUES(?)");
            st = s.ok() ? s->bind(1, v).run() : s.status();
        }
        if (st.ok()) {
            st = c.exec("COMMIT");
        }
        if (!st.ok()) {
            c.exec("ROLLBACK").IgnoreError();
            return absl::Status(st.code(),
                                cat("schema migration to version ", v, ": ", st.message()));
        }
    }
    return std::max(version, target);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, StoreOptions options) {
    static_assert(std::size(kTargetStates) == static_cast<size_t>(TargetState::kSuperseded) + 1);
    if (options.max_batch_ops < 1) {
        options.max_batch_ops = 1;
    }
    // SQLite creates files 0644; the database holds token hashes, so create it 0600 first. The
    // -wal and -shm files inherit the database file's mode.
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int err = errno;
        std::string msg = cat("cannot create database ", path, ": ", std::strerror(err));
        if (err == ENOENT || err == ENOTDIR) {
            return absl::NotFoundError(msg);
        }
        if (err == EACCES || err == EPERM || err == EROFS) {
            return absl::PermissionDeniedError(msg);
        }
        return absl::UnavailableError(msg);
    }
    ::close(fd);

    ASSIGN_OR_RETURN(std::unique_ptr<Conn> w, Conn::open(path, false, options));
    auto where = [&path](absl::Status st) {
        return absl::Status(st.code(), cat("database ", path, ": ", st.message()));
    };
    {
        auto s = w->prepare("PRAGMA journal_mode=WAL");
        if (!s.ok()) {
            return where(s.status());
        }
        auto row = s->step();
        if (!row.ok()) {
            return where(row.status());
        }
        if (!*row || s->text(0) != "wal") {
            return absl::FailedPreconditionError(
                cat("database ", path, ": cannot switch to WAL journal mode"));
        }
    }
    for (const char* pragma : {"PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
        if (absl::Status st = w->exec(pragma); !st.ok()) {
            return where(st);
        }
    }
    if (options.max_page_count > 0) {
        std::string sql = cat("PRAGMA max_page_count=", options.max_page_count);
        if (absl::Status st = w->exec(sql.c_str()); !st.ok()) {
            return where(st);
        }
    }
    int target = options.max_schema_version > 0
                     ? std::min(options.max_schema_version, kSchemaVersion)
                     : kSchemaVersion;
    auto version = migrate(*w, target);
    if (!version.ok()) {
        return where(version.status());
    }
    if (options.reset_connections && *version >= 1) {
        // Connections belong to the process; after a restart (or kill -9) no stream is open.
        if (absl::Status st = w->exec("UPDATE sensors SET connected = 0 WHERE connected = 1");
            !st.ok()) {
            return where(st);
        }
    }
    auto impl = std::make_unique<Impl>(path, options, std::move(w));
    return std::unique_ptr<Store>(new Store(std::move(impl), path, *version));
}

Store::Store(std::unique_ptr<Impl> impl, std::string path, int schema_version)
    : impl_(std::move(impl)), path_(std::move(path)), schema_version_(schema_version) {}

Store::~Store() = default;

Store::WriterStats Store::writer_stats() const {
    return impl_->stats();
}

// ---- Sensors

absl::Status Store::enroll_sensor(const std::string& name, const std::string& token_hash,
                                  int64_t ts, const std::string& actor) {
    RETURN_IF_ERROR(validate_sensor_name(name));
    if (token_hash.empty()) {
        return absl::InvalidArgumentError(cat("enroll sensor '", name, "': empty token"));
    }
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, token_hash, revoked_at IS NOT NULL FROM "
                                           "sensors WHERE name = ?"));
        s.bind(1, name);
        ASSIGN_OR_RETURN(bool row, s.step());
        const bool revoked = row && s.i64(2) != 0;
        if (row && !revoked && !s.null(1)) {
            if (!same_secret(s.text(1), token_hash)) {
                return absl::AlreadyExistsError(
                    cat("sensor name '", name,
                        "' is already enrolled with a different token (to issue a new one, revoke "
                        "it first: picketctl sensor revoke ",
                        name, ")"));
            }
            return absl::OkStatus();
        }
        if (row) {
            int64_t id = s.i64(0);
            // Re-enrolling a revoked sensor lifts the revocation (its revoked certificates stay
            // in revoked_certs).
            ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE sensors SET token_hash = ?, enrolled_at "
                                               "= ?, revoked_at = NULL WHERE id = ?"));
            u.bind(1, token_hash).bind(2, ts).bind(3, id);
            RETURN_IF_ERROR(u.run());
            if (revoked) {
                return log_event(c, ts, actor, "sensor.enroll", name, 0, 0,
                                 "re-enrolled: revocation lifted");
            }
        } else {
            ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO sensors(name, token_hash, "
                                                 "enrolled_at) VALUES(?, ?, ?)"));
            ins.bind(1, name).bind(2, token_hash).bind(3, ts);
            RETURN_IF_ERROR(ins.run());
        }
        return log_event(c, ts, actor, "sensor.enroll", name, 0, 0, "");
    });
}

absl::StatusOr<Sensor> Store::connect_sensor(const SensorHello& h, int64_t ts, bool allow_create) {
    RETURN_IF_ERROR(validate_sensor_name(h.name));
    for (const auto& [k, v] : h.labels) {
        if (absl::Status st = validate_label(k, v); !st.ok()) {
            return absl::InvalidArgumentError(cat("sensor '", h.name, "': ", st.message()));
        }
    }
    if (h.workers < 0 || h.running_version < 0) {
        return absl::InvalidArgumentError(
            cat("sensor '", h.name, "': negative workers or bundle version"));
    }
    return impl_->write<Sensor>([=](Conn& c) -> absl::StatusOr<Sensor> {
        if (!h.cert_sha256.empty()) {
            ASSIGN_OR_RETURN(Stmt rc, c.prepare("SELECT 1 FROM revoked_certs WHERE sha256 = ?"));
            rc.bind(1, h.cert_sha256);
            ASSIGN_OR_RETURN(bool revoked_cert, rc.step());
            if (revoked_cert) {
                return absl::PermissionDeniedError(
                    cat("the client certificate of sensor '", h.name,
                        "' was revoked; issue it a new certificate (picketctl pki issue)"));
            }
        }
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, token_hash, revoked_at IS NOT NULL FROM "
                                           "sensors WHERE name = ?"));
        s.bind(1, h.name);
        ASSIGN_OR_RETURN(bool row, s.step());
        int64_t sid = 0;
        if (row) {
            sid = s.i64(0);
            if (s.i64(2) != 0) {
                return absl::PermissionDeniedError(
                    cat("sensor '", h.name,
                        "' is revoked (re-enroll it to let it back in: "
                        "picket-manager --enroll ",
                        h.name, ")"));
            }
            if (h.auth == SensorAuth::kToken && s.null(1)) {
                // A name registered by its certificate (or --insecure) has no token: any token
                // offered for it is wrong, or anyone who knows the name could take it over.
                return absl::UnauthenticatedError(
                    cat("sensor '", h.name,
                        "' has no enrollment token (it authenticates with a "
                        "client certificate)"));
            }
            if (h.auth != SensorAuth::kCertificate && !s.null(1) &&
                !same_secret(s.text(1), h.token_hash)) {
                return absl::AlreadyExistsError(
                    cat("sensor name '", h.name, "' is already registered with a different token"));
            }
        } else if (!allow_create) {
            return absl::NotFoundError(cat("sensor '", h.name, "' is not enrolled"));
        } else {
            ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO sensors(name, token_hash, "
                                                 "enrolled_at) VALUES(?, ?, ?)"));
            ins.bind(1, h.name);
            if (h.token_hash.empty()) {
                ins.bind_null(2).bind_null(3);
            } else {
                ins.bind(2, h.token_hash).bind(3, ts);
            }
            RETURN_IF_ERROR(ins.run());
            sid = sqlite3_last_insert_rowid(c.db());
            RETURN_IF_ERROR(log_event(c, ts, "", "sensor.register", h.name, 0, 0, h.host));
        }
        ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE sensors SET host = ?, version = ?, "
                                           "capture_mode = ?, workers = ?, running_version = ?, "
                                           "connected = 1, first_seen = coalesce(first_seen, ?6), "
                                           "last_seen = ?6, cert_sha256 = coalesce(?8, "
                                           "cert_sha256) WHERE id = ?7"));
        u.bind(1, h.host).bind(2, h.version).bind(3, h.capture_mode).bind(4, h.workers);
        u.bind(5, h.running_version).bind(6, ts).bind(7, sid);
        if (h.cert_sha256.empty()) {
            u.bind_null(8);
        } else {
            u.bind(8, h.cert_sha256);
        }
        RETURN_IF_ERROR(u.run());
        ASSIGN_OR_RETURN(Stmt del, c.prepare("DELETE FROM sensor_labels WHERE sensor_id = ?"));
        del.bind(1, sid);
        RETURN_IF_ERROR(del.run());
        for (const auto& [k, v] : h.labels) {
            ASSIGN_OR_RETURN(Stmt l, c.prepare("INSERT INTO sensor_labels(sensor_id, key, value) "
                                               "VALUES(?, ?, ?)"));
            l.bind(1, sid).bind(2, k).bind(3, v);
            RETURN_IF_ERROR(l.run());
        }
        RETURN_IF_ERROR(begin_run_in(c, sid, h.running_version, ts));
        static const std::string kSql = std::string(kSensorColumns) + "WHERE id = ?";
        ASSIGN_OR_RETURN(Stmt r, c.prepare(kSql.c_str()));
        r.bind(1, sid);
        ASSIGN_OR_RETURN(bool found, r.step());
        if (!found) {
            return absl::InternalError("sensor row vanished");
        }
        Sensor out = sensor_from_row(r);
        out.labels = h.labels;
        return out;
    });
}

absl::Status Store::disconnect_sensor(const std::string& name, int64_t ts) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, name));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE sensors SET connected = 0 WHERE id = ?"));
        s.bind(1, sid);
        RETURN_IF_ERROR(s.run());
        return touch_in(c, sid, ts);
    });
}

absl::StatusOr<bool> Store::revoke_sensor(const std::string& name, int64_t ts,
                                          const std::string& actor) {
    RETURN_IF_ERROR(validate_sensor_name(name));
    return impl_->write<bool>([=](Conn& c) -> absl::StatusOr<bool> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, revoked_at IS NOT NULL, cert_sha256 FROM "
                                           "sensors WHERE name = ?"));
        s.bind(1, name);
        ASSIGN_OR_RETURN(bool row, s.step());
        if (!row) {
            return absl::NotFoundError(cat("sensor '", name, "' not found"));
        }
        if (s.i64(1) != 0) {
            return false;
        }
        const int64_t sid = s.i64(0);
        const std::string cert = s.null(2) ? std::string() : s.text(2);
        // The token is forgotten: a re-enrollment issues a new one.
        ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE sensors SET revoked_at = ?, token_hash = NULL, "
                                           "enrolled_at = NULL WHERE id = ?"));
        u.bind(1, ts).bind(2, sid);
        RETURN_IF_ERROR(u.run());
        if (!cert.empty()) {
            ASSIGN_OR_RETURN(Stmt rc, c.prepare("INSERT OR IGNORE INTO revoked_certs(sha256, "
                                                "sensor_id, revoked_at) VALUES(?, ?, ?)"));
            rc.bind(1, cert).bind(2, sid).bind(3, ts);
            RETURN_IF_ERROR(rc.run());
        }
        // Its open targets can never be answered: cancel them so deployments can finish.
        std::vector<int64_t> touched;
        {
            ASSIGN_OR_RETURN(Stmt open, c.prepare("SELECT deployment_id FROM deployment_targets "
                                                  "WHERE sensor_id = ? AND state IN "
                                                  "('pending', 'sent')"));
            open.bind(1, sid);
            for (;;) {
                ASSIGN_OR_RETURN(bool more, open.step());
                if (!more) {
                    break;
                }
                touched.push_back(open.i64(0));
            }
        }
        ASSIGN_OR_RETURN(Stmt sup, c.prepare("UPDATE deployment_targets SET state = 'superseded', "
                                             "error = 'sensor revoked', finished_at = ?1, "
                                             "updated_at = ?1 WHERE sensor_id = ?2 AND state IN "
                                             "('pending', 'sent')"));
        sup.bind(1, ts).bind(2, sid);
        RETURN_IF_ERROR(sup.run());
        for (int64_t id : touched) {
            RETURN_IF_ERROR(maybe_finish(c, id, ts));
        }
        RETURN_IF_ERROR(log_event(c, ts, actor, "sensor.revoke", name, 0, 0,
                                  cert.empty() ? "" : cat("certificate ", cert, " revoked")));
        return true;
    });
}

// ---- Bundles

absl::StatusOr<PushResult> Store::push_bundle(const NewBundle& b) {
    if (b.blob.empty()) {
        return absl::InvalidArgumentError(cat("bundle '", b.name, "' is empty"));
    }
    if (b.parent_version < 0) {
        return absl::InvalidArgumentError("negative parent bundle version");
    }
    // Hash on the caller's thread: the writer only does SQL.
    std::string sha = sha256_hex(b.blob);
    auto shared = std::make_shared<const NewBundle>(b);
    return impl_->write<PushResult>([shared, sha](Conn& c) -> absl::StatusOr<PushResult> {
        const NewBundle& b = *shared;
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT version FROM bundles WHERE sha256 = ?"));
        s.bind(1, sha);
        ASSIGN_OR_RETURN(bool row, s.step());
        if (row) {
            const int64_t existing = s.i64(0);
            // Same content pushed again. If the stored copy was damaged, this push is the
            // repair: the content is known good (it hashes to the address). REPLACE does not
            // fire the immutability triggers (recursive_triggers is off) and keeps the key
            // that bundles refer to.
            ASSIGN_OR_RETURN(Stmt old, c.prepare("SELECT data FROM blobs WHERE sha256 = ?"));
            old.bind(1, sha);
            ASSIGN_OR_RETURN(bool have, old.step());
            if (!have || sha256_hex(old.blob(0)) != sha) {
                ASSIGN_OR_RETURN(Stmt fix, c.prepare("INSERT OR REPLACE INTO blobs(sha256, "
                                                     "size, data) VALUES(?, ?, ?)"));
                fix.bind(1, sha).bind(2, static_cast<int64_t>(b.blob.size())).bind_blob(3, b.blob);
                RETURN_IF_ERROR(fix.run());
                RETURN_IF_ERROR(log_event(c, b.created_at, b.author, "bundle.repair", "", existing,
                                          0, cat(b.name, ": stored blob was corrupt, rewritten")));
            }
            return PushResult{existing, sha, false};
        }
        if (b.parent_version != 0) {
            ASSIGN_OR_RETURN(
                std::optional<int64_t> p,
                c.query_i64("SELECT version FROM bundles WHERE version = ?", b.parent_version));
            if (!p) {
                return absl::NotFoundError(
                    cat("parent bundle version ", b.parent_version, " not found"));
            }
        }
        ASSIGN_OR_RETURN(Stmt blob, c.prepare("INSERT INTO blobs(sha256, size, data) "
                                              "VALUES(?, ?, ?) ON CONFLICT(sha256) DO NOTHING"));
        blob.bind(1, sha).bind(2, static_cast<int64_t>(b.blob.size())).bind_blob(3, b.blob);
        RETURN_IF_ERROR(blob.run());
        ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO bundles(name, sha256, author, message, "
                                             "created_at, parent_version) "
                                             "VALUES(?, ?, ?, ?, ?, ?)"));
        ins.bind(1, b.name).bind(2, sha).bind(3, b.author).bind(4, b.message);
        ins.bind(5, b.created_at).bind_ref(6, b.parent_version);
        RETURN_IF_ERROR(ins.run());
        int64_t version = sqlite3_last_insert_rowid(c.db());
        RETURN_IF_ERROR(log_event(c, b.created_at, b.author, "bundle.push", "", version, 0,
                                  cat(b.name, ": ", b.message)));
        return PushResult{version, sha, true};
    });
}

// ---- Deployments

absl::StatusOr<Deployment> Store::create_deployment(const NewDeployment& d) {
    ASSIGN_OR_RETURN(Selector sel, Selector::parse(d.selector));
    if (d.canary_percent < 0 || d.canary_percent > 100) {
        return absl::InvalidArgumentError(
            cat("canary percent ", d.canary_percent, " is not within 0..100"));
    }
    if (d.soak_seconds < 0 || d.bundle_version < 0 || d.parent_id < 0) {
        return absl::InvalidArgumentError("negative soak time, bundle version or parent id");
    }
    if (d.kind == DeploymentKind::kDeploy && d.bundle_version == 0) {
        return absl::InvalidArgumentError("a deployment needs a bundle version");
    }
    return impl_->write<Deployment>([=](Conn& c) -> absl::StatusOr<Deployment> {
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
        std::vector<std::pair<int64_t, int64_t>> plan;  // sensor id, version
        for (const Sensor& s : sensors) {
            ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, s.name));
            int64_t version = d.bundle_version;
            if (version == 0) {
                auto prev = previous_version_in(c, sid, s.name);
                if (!prev.ok()) {
                    return absl::FailedPreconditionError(
                        cat("rollback: ", prev.status().message()));
                }
                version = *prev;
            }
            plan.emplace_back(sid, version);
        }
        size_t n = plan.size();
        size_t canaries = 0;
        if (d.canary_percent > 0) {
            canaries = std::max<size_t>(1, (n * d.canary_percent + 99) / 100);
        }
        DeploymentState state = canaries > 0 ? DeploymentState::kCanary : DeploymentState::kRolling;
        ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO deployments(bundle_version, kind, "
                                             "selector, canary_percent, soak_seconds, state, "
                                             "parent_id, actor, created_at, updated_at) "
                                             "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?9, ?9)"));
        ins.bind_ref(1, d.bundle_version).bind(2, to_string(d.kind)).bind(3, sel.to_string());
        ins.bind(4, d.canary_percent).bind(5, d.soak_seconds).bind(6, to_string(state));
        ins.bind_ref(7, d.parent_id).bind(8, d.actor).bind(9, d.created_at);
        RETURN_IF_ERROR(ins.run());
        int64_t id = sqlite3_last_insert_rowid(c.db());

        // A newer deployment supersedes the open targets of older ones on the same sensors.
        std::vector<int64_t> touched;
        for (size_t i = 0; i < n; ++i) {
            ASSIGN_OR_RETURN(Stmt old, c.prepare("SELECT deployment_id FROM deployment_targets "
                                                 "WHERE sensor_id = ? AND state IN "
                                                 "('pending', 'sent') AND deployment_id != ?"));
            old.bind(1, plan[i].first).bind(2, id);
            for (;;) {
                ASSIGN_OR_RETURN(bool row, old.step());
                if (!row) {
                    break;
                }
                touched.push_back(old.i64(0));
            }
            ASSIGN_OR_RETURN(Stmt sup, c.prepare("UPDATE deployment_targets SET state = "
                                                 "'superseded', finished_at = ?1, updated_at = "
                                                 "?1 WHERE sensor_id = ?2 AND state IN "
                                                 "('pending', 'sent') AND deployment_id != ?3"));
            sup.bind(1, d.created_at).bind(2, plan[i].first).bind(3, id);
            RETURN_IF_ERROR(sup.run());
            ASSIGN_OR_RETURN(Stmt t, c.prepare("INSERT INTO deployment_targets(deployment_id, "
                                               "sensor_id, bundle_version, stage, state, "
                                               "created_at, updated_at) "
                                               "VALUES(?, ?, ?, ?, 'pending', ?6, ?6)"));
            t.bind(1, id).bind(2, plan[i].first).bind(3, plan[i].second);
            t.bind(4, to_string(i < canaries ? Stage::kCanary : Stage::kRest));
            t.bind(6, d.created_at);
            RETURN_IF_ERROR(t.run());
        }
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

absl::Status Store::update_target(int64_t deployment_id, const std::string& sensor, TargetState to,
                                  const std::string& error, int64_t ts) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(std::optional<int64_t> dep,
                         c.query_i64("SELECT id FROM deployments WHERE id = ?", deployment_id));
        if (!dep) {
            return absl::NotFoundError(cat("deployment ", deployment_id, " not found"));
        }
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT state, bundle_version FROM deployment_targets "
                                           "WHERE deployment_id = ? AND sensor_id = ?"));
        s.bind(1, deployment_id).bind(2, sid);
        ASSIGN_OR_RETURN(bool row, s.step());
        if (!row) {
            return absl::NotFoundError(
                cat("deployment ", deployment_id, " has no target '", sensor, "'"));
        }
        TargetState from = from_name<TargetState>(kTargetStates, s.text(0));
        int64_t version = s.i64(1);
        if (!valid_transition(from, to)) {
            return absl::FailedPreconditionError(cat("deployment ", deployment_id, " target '",
                                                     sensor, "': invalid transition ",
                                                     to_string(from), " -> ", to_string(to)));
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
            RETURN_IF_ERROR(begin_run_in(c, sid, version, ts));
        }
        if (is_terminal(to)) {
            RETURN_IF_ERROR(log_event(c, ts, "", cat("target.", to_string(to)), sensor, version,
                                      deployment_id, error));
            RETURN_IF_ERROR(maybe_finish(c, deployment_id, ts));
        }
        return absl::OkStatus();
    });
}

absl::Status Store::set_deployment_state(int64_t id, DeploymentState to, const std::string& error,
                                         int64_t ts) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT state FROM deployments WHERE id = ?"));
        s.bind(1, id);
        ASSIGN_OR_RETURN(bool row, s.step());
        if (!row) {
            return absl::NotFoundError(cat("deployment ", id, " not found"));
        }
        DeploymentState from = from_name<DeploymentState>(kDeploymentStates, s.text(0));
        if (!valid_transition(from, to)) {
            return absl::FailedPreconditionError(cat("deployment ", id, ": invalid transition ",
                                                     to_string(from), " -> ", to_string(to)));
        }
        RETURN_IF_ERROR(set_deployment_state_in(c, id, to, error, ts));
        if (to == DeploymentState::kFailed || to == DeploymentState::kRolledBack) {
            RETURN_IF_ERROR(supersede_open_targets(c, id, ts));
        }
        if (to == DeploymentState::kRolling) {
            RETURN_IF_ERROR(maybe_finish(c, id, ts));
        }
        return absl::OkStatus();
    });
}

// ---- Runs, metrics, events

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

namespace {
std::function<absl::Status(Conn&)> report_op(std::shared_ptr<const SensorReport> r) {
    return [r](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(int64_t sid, active_sensor_id(c, r->sensor));
        RETURN_IF_ERROR(touch_in(c, sid, r->ts));
        ASSIGN_OR_RETURN(bool added, add_totals_in(c, sid, r->deltas));
        (void)added;  // no open run: nothing to accumulate into (documented)
        return record_metrics_in(c, sid, r->ts, r->samples);
    };
}
}  // namespace

absl::Status Store::report(const SensorReport& r) {
    RETURN_IF_ERROR(validate_totals(r.deltas));
    return impl_->write_status(report_op(std::make_shared<const SensorReport>(r)));
}

void Store::report_async(SensorReport r, std::function<void(absl::Status)> done) {
    if (absl::Status st = validate_totals(r.deltas); !st.ok()) {
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
        return static_cast<int64_t>(sqlite3_changes(c.db()));
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

absl::StatusOr<std::vector<Sensor>> Store::list_sensors(std::string_view selector) {
    if (!selector.empty()) {
        return select_sensors(selector);
    }
    return impl_->read([](Conn& c) { return load_sensors(c); });
}

absl::StatusOr<std::vector<Sensor>> Store::select_sensors(std::string_view selector) {
    ASSIGN_OR_RETURN(Selector sel, Selector::parse(selector));
    return impl_->read([&sel](Conn& c) { return select_in(c, sel); });
}

absl::StatusOr<Sensor> Store::get_sensor(const std::string& name) {
    return impl_->read([&name](Conn& c) -> absl::StatusOr<Sensor> {
        static const std::string kSql = std::string(kSensorColumns) + "WHERE name = ?";
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
        s.bind(1, name);
        ASSIGN_OR_RETURN(bool row, s.step());
        if (!row) {
            return absl::NotFoundError(cat("sensor '", name, "' not found"));
        }
        Sensor out = sensor_from_row(s);
        int64_t sid = s.i64(0);
        ASSIGN_OR_RETURN(Stmt l, c.prepare("SELECT key, value FROM sensor_labels WHERE "
                                           "sensor_id = ?"));
        l.bind(1, sid);
        for (;;) {
            ASSIGN_OR_RETURN(bool more, l.step());
            if (!more) {
                break;
            }
            out.labels.emplace(l.text(0), l.text(1));
        }
        return out;
    });
}

namespace {
constexpr const char* kBundleColumns =
    "SELECT b.version, b.name, b.sha256, b.author, b.message, b.created_at, "
    "coalesce(b.parent_version, 0), o.size FROM bundles b JOIN blobs o ON o.sha256 = b.sha256 ";

BundleInfo bundle_from_row(const Stmt& s) {
    BundleInfo b;
    b.version = s.i64(0);
    b.name = s.text(1);
    b.sha256 = s.text(2);
    b.author = s.text(3);
    b.message = s.text(4);
    b.created_at = s.i64(5);
    b.parent_version = s.i64(6);
    b.size = s.i64(7);
    return b;
}
}  // namespace

absl::StatusOr<Store::FleetSummary> Store::fleet_summary() {
    return impl_->read([](Conn& c) -> absl::StatusOr<FleetSummary> {
        FleetSummary f;
        {
            ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT kind, count(*), max(created_at) FROM "
                                               "deployments GROUP BY kind"));
            for (;;) {
                ASSIGN_OR_RETURN(bool row, s.step());
                if (!row) {
                    break;
                }
                (s.text(0) == "rollback" ? f.rollbacks : f.deploys) = s.i64(1);
                f.last_deployment_at = std::max(f.last_deployment_at, s.i64(2));
            }
        }
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT coalesce(max(version), 0), count(*) FROM "
                                           "bundles"));
        ASSIGN_OR_RETURN(bool row, s.step());
        if (row) {
            f.latest_bundle_version = s.i64(0);
            f.bundles = s.i64(1);
        }
        return f;
    });
}

absl::StatusOr<std::vector<BundleInfo>> Store::list_bundles() {
    return impl_->read([](Conn& c) -> absl::StatusOr<std::vector<BundleInfo>> {
        static const std::string kSql = std::string(kBundleColumns) + "ORDER BY b.version";
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
        std::vector<BundleInfo> out;
        for (;;) {
            ASSIGN_OR_RETURN(bool row, s.step());
            if (!row) {
                return out;
            }
            out.push_back(bundle_from_row(s));
        }
    });
}

absl::StatusOr<Bundle> Store::get_bundle(int64_t version, bool with_blob) {
    return impl_->read([=](Conn& c) -> absl::StatusOr<Bundle> {
        static const std::string kSql = std::string(kBundleColumns) + "WHERE b.version = ?";
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
        s.bind(1, version);
        ASSIGN_OR_RETURN(bool row, s.step());
        if (!row) {
            return absl::NotFoundError(cat("bundle version ", version, " not found"));
        }
        Bundle b;
        b.info = bundle_from_row(s);
        if (with_blob) {
            ASSIGN_OR_RETURN(Stmt d, c.prepare("SELECT data FROM blobs WHERE sha256 = ?"));
            d.bind(1, b.info.sha256);
            ASSIGN_OR_RETURN(bool found, d.step());
            if (!found) {
                return absl::DataLossError(
                    cat("bundle version ", version, ": blob ", b.info.sha256, " missing"));
            }
            b.blob = d.blob(0);
            // The address is the hash: a blob damaged on disk (or edited behind the store's
            // back) must never be sent to sensors as this version.
            if (std::string got = sha256_hex(b.blob); got != b.info.sha256) {
                return absl::DataLossError(
                    cat("bundle version ", version, ": stored blob is corrupt (sha256 ",
                        got.substr(0, 12), " instead of ", b.info.sha256.substr(0, 12),
                        "); push the bundle again and deploy that version (identical content also "
                        "repairs this one)"));
            }
        }
        return b;
    });
}

absl::StatusOr<int64_t> Store::latest_version() {
    return impl_->read([](Conn& c) -> absl::StatusOr<int64_t> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT coalesce(max(version), 0) FROM bundles"));
        ASSIGN_OR_RETURN(bool row, s.step());
        return row ? s.i64(0) : 0;
    });
}

absl::StatusOr<Deployment> Store::get_deployment(int64_t id) {
    return impl_->read([id](Conn& c) { return load_deployment(c, id, true); });
}

absl::StatusOr<std::vector<Deployment>> Store::list_deployments(int limit, bool with_targets) {
    return impl_->read([=](Conn& c) -> absl::StatusOr<std::vector<Deployment>> {
        std::vector<int64_t> ids;
        {
            ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id FROM deployments ORDER BY id DESC "
                                               "LIMIT ?"));
            s.bind(1, static_cast<int64_t>(limit));
            for (;;) {
                ASSIGN_OR_RETURN(bool row, s.step());
                if (!row) {
                    break;
                }
                ids.push_back(s.i64(0));
            }
        }
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
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT t.deployment_id, t.bundle_version, t.stage, "
                                           "t.state FROM deployment_targets t JOIN deployments d "
                                           "ON d.id = t.deployment_id WHERE t.sensor_id = ? AND "
                                           "t.state IN ('pending', 'sent') AND (t.stage = "
                                           "'canary' OR d.state = 'rolling') "
                                           "ORDER BY t.deployment_id DESC"));
        s.bind(1, sid);
        std::vector<PendingTarget> out;
        for (;;) {
            ASSIGN_OR_RETURN(bool row, s.step());
            if (!row) {
                return out;
            }
            PendingTarget p;
            p.deployment_id = s.i64(0);
            p.bundle_version = s.i64(1);
            p.stage = from_name<Stage>(kStages, s.text(2));
            p.state = from_name<TargetState>(kTargetStates, s.text(3));
            out.push_back(p);
        }
    });
}

absl::StatusOr<int64_t> Store::previous_version(const std::string& sensor) {
    return impl_->read([&sensor](Conn& c) -> absl::StatusOr<int64_t> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        return previous_version_in(c, sid, sensor);
    });
}

absl::StatusOr<std::vector<Run>> Store::list_runs(const std::string& sensor) {
    return impl_->read([&sensor](Conn& c) -> absl::StatusOr<std::vector<Run>> {
        ASSIGN_OR_RETURN(int64_t sid, sensor_id(c, sensor));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, bundle_version, started_at, "
                                           "coalesce(ended_at, 0), packets, bytes, drops, alerts "
                                           "FROM runs WHERE sensor_id = ? ORDER BY id"));
        s.bind(1, sid);
        std::vector<Run> out;
        for (;;) {
            ASSIGN_OR_RETURN(bool row, s.step());
            if (!row) {
                return out;
            }
            Run r;
            r.id = s.i64(0);
            r.sensor = sensor;
            r.bundle_version = s.i64(1);
            r.started_at = s.i64(2);
            r.ended_at = s.i64(3);
            r.totals = {s.i64(4), s.i64(5), s.i64(6), s.i64(7)};
            out.push_back(std::move(r));
        }
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
        std::vector<MetricPoint> out;
        for (;;) {
            ASSIGN_OR_RETURN(bool row, s.step());
            if (!row) {
                return out;
            }
            out.push_back({s.i64(0), s.i64(1)});
        }
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
        std::vector<Event> out;
        for (;;) {
            ASSIGN_OR_RETURN(bool row, s.step());
            if (!row) {
                return out;
            }
            Event e;
            e.id = s.i64(0);
            e.ts = s.i64(1);
            e.actor = s.text(2);
            e.kind = s.text(3);
            e.sensor = s.text(4);
            e.bundle_version = s.i64(5);
            e.deployment_id = s.i64(6);
            e.message = s.text(7);
            out.push_back(std::move(e));
        }
    });
}

absl::Status Store::integrity_check() {
    return impl_->read([](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("PRAGMA integrity_check"));
        std::string report;
        for (;;) {
            ASSIGN_OR_RETURN(bool row, s.step());
            if (!row) {
                break;
            }
            report += cat(report.empty() ? "" : "; ", s.text(0));
        }
        if (report != "ok") {
            return absl::DataLossError(cat("integrity check failed: ", report));
        }
        return absl::OkStatus();
    });
}

}  // namespace picket::manager::store
