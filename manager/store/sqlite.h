// Database plumbing of manager/store (internal): the status mapping, a cached prepared statement
// (Stmt), one connection with its statement cache (Conn), the row loops every query shares.
// Two backends behind the same Stmt and Conn: SQLite (inline below, the default) and
// PostgreSQL (postgres.cc, libpq; a Conn opened on a postgres:// DSN). Queries are written once
// in the SQL both accept; the PostgreSQL Conn rewrites the placeholders (? and ?N to $N) once
// per statement when it prepares it.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "manager/status.h"
#include "manager/store/store.h"

namespace picket::manager::store {

// An SQLite result code as an absl::Status with gRPC's meaning (disk full: RESOURCE_EXHAUSTED,
// busy: UNAVAILABLE, corrupt: DATA_LOSS, constraint: FAILED_PRECONDITION, ...).
absl::Status sqlite_status(int rc, sqlite3* db, std::string_view what);

class Stmt;
struct PgStmt;  // postgres.cc
struct PgConn;  // postgres.cc
void read_column(const Stmt& s, int c, int64_t& v);
void read_column(const Stmt& s, int c, int& v);
void read_column(const Stmt& s, int c, bool& v);
void read_column(const Stmt& s, int c, std::string& v);

// A prepared statement borrowed from a connection's cache; reset when it goes out of scope.
class Stmt {
public:
    Stmt(sqlite3_stmt* s, sqlite3* db) : s_(s), db_(db) {}
    explicit Stmt(PgStmt* p) : s_(nullptr), db_(nullptr), p_(p) {}
    Stmt(Stmt&& o) noexcept : s_(o.s_), db_(o.db_), p_(o.p_) {
        o.s_ = nullptr;
        o.p_ = nullptr;
    }
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;
    ~Stmt() {
        if (p_ != nullptr) {
            pg_reset();
        } else if (s_ != nullptr) {
            sqlite3_reset(s_);
            sqlite3_clear_bindings(s_);
        }
    }

    Stmt& bind(int i, int64_t v) {
        if (p_ != nullptr) {
            return pg_bind_i64(i, v);
        }
        sqlite3_bind_int64(s_, i, v);
        return *this;
    }
    Stmt& bind_double(int i, double v) {
        if (p_ != nullptr) {
            return pg_bind_double(i, v);
        }
        sqlite3_bind_double(s_, i, v);
        return *this;
    }
    Stmt& bind(int i, std::string_view v) {
        if (p_ != nullptr) {
            return pg_bind_text(i, v, false);
        }
        sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt& bind_blob(int i, std::string_view v) {
        if (p_ != nullptr) {
            return pg_bind_text(i, v, true);
        }
        sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Stmt& bind_null(int i) {
        if (p_ != nullptr) {
            return pg_bind_null(i);
        }
        sqlite3_bind_null(s_, i);
        return *this;
    }
    // Binds NULL for 0: optional references (parent version, parent deployment).
    Stmt& bind_ref(int i, int64_t v) { return v == 0 ? bind_null(i) : bind(i, v); }
    // Binds NULL for "": optional text (a certificate hash).
    Stmt& bind_opt(int i, std::string_view v) { return v.empty() ? bind_null(i) : bind(i, v); }

    // true: a row is available; false: done.
    absl::StatusOr<bool> step();
    // Steps to the end (statements without rows).
    absl::Status run();
    // Steps to the first row: OK when there is one, missing() (a Status) when there is none.
    template <typename Missing>
    absl::Status expect_row(Missing&& missing) {
        ASSIGN_OR_RETURN(bool row, step());
        return row ? absl::OkStatus() : missing();
    }

    int64_t i64(int c) const { return p_ != nullptr ? pg_i64(c) : sqlite3_column_int64(s_, c); }
    double f64(int c) const { return p_ != nullptr ? pg_f64(c) : sqlite3_column_double(s_, c); }
    bool null(int c) const {
        return p_ != nullptr ? pg_null(c) : sqlite3_column_type(s_, c) == SQLITE_NULL;
    }
    std::string text(int c) const {
        if (p_ != nullptr) {
            return pg_text(c);
        }
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
        return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, c));
    }
    std::string blob(int c) const {
        if (p_ != nullptr) {
            return pg_blob(c);
        }
        const auto* p = static_cast<const char*>(sqlite3_column_blob(s_, c));
        return p == nullptr ? std::string() : std::string(p, sqlite3_column_bytes(s_, c));
    }

    // SQLite only (the source of copy_store): the result's columns, a column's storage class
    // (SQLITE_INTEGER, ...) in the current row and its declared type.
    int columns() const { return s_ != nullptr ? sqlite3_column_count(s_) : 0; }
    std::string column_name(int c) const { return sqlite3_column_name(s_, c); }
    int column_type(int c) const { return sqlite3_column_type(s_, c); }
    std::string column_decltype(int c) const {
        const char* t = sqlite3_column_decltype(s_, c);
        return t != nullptr ? t : "";
    }

    // Reads columns first, first+1, ... into `out...` by type (int64_t, int, bool, std::string,
    // and the store's enums through read_column overloads found by argument lookup):
    // s.get(0, b.version, b.name) is b.version = s.i64(0); b.name = s.text(1).
    template <typename... T>
    void get(int first, T&... out) const {
        int c = first;
        (read_column(*this, c++, out), ...);
    }

private:
    std::string short_sql() const;
    // The PostgreSQL side (postgres.cc).
    void pg_reset();
    Stmt& pg_bind_i64(int i, int64_t v);
    Stmt& pg_bind_double(int i, double v);
    Stmt& pg_bind_text(int i, std::string_view v, bool binary);
    Stmt& pg_bind_null(int i);
    absl::StatusOr<bool> pg_step();
    int64_t pg_i64(int c) const;
    double pg_f64(int c) const;
    bool pg_null(int c) const;
    std::string pg_text(int c) const;
    std::string pg_blob(int c) const;

    sqlite3_stmt* s_;
    sqlite3* db_;
    PgStmt* p_ = nullptr;
};

inline void read_column(const Stmt& s, int c, int64_t& v) {
    v = s.i64(c);
}
inline void read_column(const Stmt& s, int c, int& v) {
    v = static_cast<int>(s.i64(c));
}
inline void read_column(const Stmt& s, int c, double& v) {
    v = s.f64(c);
}
inline void read_column(const Stmt& s, int c, bool& v) {
    v = s.i64(c) != 0;
}
inline void read_column(const Stmt& s, int c, std::string& v) {
    v = s.text(c);
}

// Calls fn(row) for every row of `s`; stops at the first error.
template <typename F>
absl::Status each_row(Stmt& s, F&& fn) {
    for (;;) {
        absl::StatusOr<bool> row = s.step();
        if (!row.ok()) {
            return row.status();
        }
        if (!*row) {
            return absl::OkStatus();
        }
        fn(static_cast<const Stmt&>(s));
    }
}

// Every row of `s`, converted by from_row(const Stmt&) -> T.
template <typename T, typename F>
absl::StatusOr<std::vector<T>> collect(Stmt& s, F&& from_row) {
    std::vector<T> out;
    RETURN_IF_ERROR(each_row(s, [&](const Stmt& r) { out.push_back(from_row(r)); }));
    return out;
}

// One connection (SQLite or PostgreSQL) with a statement cache keyed by the SQL literal's
// address. A connection is used by one thread at a time (the writer, or the holder of a read
// lease).
class Conn {
public:
    // `path`: an SQLite file, or a postgres:// DSN (is_postgres_dsn).
    static absl::StatusOr<std::unique_ptr<Conn>> open(const std::string& path, bool read_only,
                                                      const StoreOptions& opt);
    ~Conn();
    Conn(const Conn&) = delete;
    Conn& operator=(const Conn&) = delete;

    bool postgres() const { return pg_ != nullptr; }
    sqlite3* db() const { return db_; }
    // Rows changed by the last INSERT, UPDATE or DELETE (not counting triggers' changes).
    int64_t changes() const;
    // Inside a transaction (false after the backend rolled a failed one back by itself, or
    // lost the connection).
    bool in_transaction() const;
    // The SQLSTATE of the last PostgreSQL error ("" for none, and always for SQLite).
    const std::string& sqlstate() const;

    // One statement or a script. "BEGIN IMMEDIATE" (the writer) and "BEGIN" (a read) are
    // translated for PostgreSQL: BEGIN, and a repeatable-read read-only transaction.
    absl::Status exec(const char* sql);
    absl::StatusOr<Stmt> prepare(const char* sql);

    // The first column of the first row for one int64 argument; nullopt without a row or
    // for NULL.
    absl::StatusOr<std::optional<int64_t>> query_i64(const char* sql, int64_t arg);

    std::unordered_map<std::string, int64_t> metric_ids;  // writer only: metric name -> id
    // Sensor name -> row id (sensor_id): a row is never deleted nor renamed, so an id read
    // once stays true, unless the transaction that created the row is rolled back.
    std::unordered_map<std::string, int64_t> sensor_ids;
    // After a rollback: the ids the cache may hold of rows that are now gone.
    void forget_uncommitted_ids() {
        metric_ids.clear();
        sensor_ids.clear();
    }

private:
    explicit Conn(sqlite3* db);
    explicit Conn(std::unique_ptr<PgConn> pg);
    sqlite3* db_ = nullptr;
    std::unordered_map<const char*, sqlite3_stmt*> cache_;
    std::unique_ptr<PgConn> pg_;  // set for PostgreSQL (db_ is then nullptr)
};

}  // namespace picket::manager::store
