#include "manager/store/sqlite.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>

#include "common/strings.h"
#include "manager/store/postgres.h"

namespace picket::manager::store {

using strings::cat;

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

// ---- Stmt

absl::StatusOr<bool> Stmt::step() {
    if (p_ != nullptr) {
        return pg_step();
    }
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) {
        return true;
    }
    if (rc == SQLITE_DONE) {
        return false;
    }
    return sqlite_status(rc, db_, cat("sqlite step '", short_sql(), "'"));
}

absl::Status Stmt::run() {
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

std::string Stmt::short_sql() const {
    std::string sql = p_ != nullptr ? p_->sql : sqlite3_sql(s_);
    std::replace(sql.begin(), sql.end(), '\n', ' ');
    return sql.size() > 60 ? sql.substr(0, 60) + "..." : sql;
}

// ---- Conn

absl::StatusOr<std::unique_ptr<Conn>> Conn::open(const std::string& path, bool read_only,
                                                 const StoreOptions& opt) {
    if (is_postgres_dsn(path)) {
        ASSIGN_OR_RETURN(std::unique_ptr<PgConn> pg, PgConn::connect(path, read_only));
        return std::unique_ptr<Conn>(new Conn(std::move(pg)));
    }
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

Conn::Conn(sqlite3* db) : db_(db) {}

Conn::Conn(std::unique_ptr<PgConn> pg) : pg_(std::move(pg)) {}

Conn::~Conn() {
    if (pg_ != nullptr) {
        return;  // ~PgConn closes the connection
    }
    for (auto& [sql, s] : cache_) {
        sqlite3_finalize(s);
    }
    sqlite3_close_v2(db_);
}

int64_t Conn::changes() const {
    return pg_ != nullptr ? pg_->changes : sqlite3_changes(db_);
}

bool Conn::in_transaction() const {
    return pg_ != nullptr ? pg_->in_transaction() : sqlite3_get_autocommit(db_) == 0;
}

const std::string& Conn::sqlstate() const {
    static const std::string none;
    return pg_ != nullptr ? pg_->sqlstate : none;
}

absl::Status Conn::exec(const char* sql) {
    if (pg_ != nullptr) {
        return pg_->exec(sql);
    }
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

absl::StatusOr<Stmt> Conn::prepare(const char* sql) {
    if (pg_ != nullptr) {
        ASSIGN_OR_RETURN(PgStmt * p, pg_->prepare(sql));
        return Stmt(p);
    }
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

absl::StatusOr<std::optional<int64_t>> Conn::query_i64(const char* sql, int64_t arg) {
    ASSIGN_OR_RETURN(Stmt s, prepare(sql));
    s.bind(1, arg);
    ASSIGN_OR_RETURN(bool row, s.step());
    if (!row || s.null(0)) {
        return std::optional<int64_t>();
    }
    return std::optional<int64_t>(s.i64(0));
}

}  // namespace picket::manager::store
