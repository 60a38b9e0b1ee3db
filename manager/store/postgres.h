// The PostgreSQL backend of Conn and Stmt (internal to manager/store): one libpq connection,
// its named prepared statements, the SQLSTATE -> absl::Status mapping. sqlite.h's Conn and
// Stmt forward to these when the store was opened on a postgres:// DSN.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace picket::manager::store {

struct PgConn;

// A statement of the cache: the SQL with $N placeholders, prepared on the server under `name`
// at its first execution (per session: a reconnect prepares it again), its bindings and the
// result of the current execution (all rows at once, text format; blobs go as binary).
struct PgStmt {
    PgConn* conn = nullptr;
    std::string sql;   // translated
    std::string name;  // server-side prepared statement
    int nparams = 0;
    uint64_t prepared_epoch = 0;  // PgConn::epoch it was prepared in; 0: not yet
    std::vector<std::string> values;
    std::vector<char> null, binary;
    std::vector<unsigned int> types;  // Oid; 0 lets the server infer it
    PGresult* res = nullptr;
    int row = -1;
    int rows = 0;

    void clear();
};

struct PgConn {
    static absl::StatusOr<std::unique_ptr<PgConn>> connect(const std::string& dsn, bool read_only);
    ~PgConn();

    absl::Status exec(const char* sql);
    absl::StatusOr<PgStmt*> prepare(const char* sql);
    // Executes s (prepares it first when needed); leaves its rows in s.res.
    absl::Status run(PgStmt& s);
    bool in_transaction() const;
    // Reconnects a broken connection (outside a transaction only); UNAVAILABLE when the
    // server still cannot be reached.
    absl::Status ensure_connected();
    // The status for a failed result (nullptr: the connection's own error); sets sqlstate.
    absl::Status error(const PGresult* r, std::string_view what);

    PGconn* conn = nullptr;
    std::string dsn;
    bool read_only = false;
    int64_t changes = 0;
    std::string sqlstate;
    uint64_t epoch = 1;  // bumped by every reconnect
    int next_name = 0;
    std::unordered_map<const char*, std::unique_ptr<PgStmt>> cache;
};

// A PostgreSQL error as an absl::Status with the meaning the SQLite mapping gives the same
// kind of failure (sqlite_status): unreachable server or lost connection UNAVAILABLE, disk full
// RESOURCE_EXHAUSTED, constraint (and the schema's triggers' RAISE) FAILED_PRECONDITION, data
// corruption DATA_LOSS, unknown database NOT_FOUND. `sqlstate` "" = a connection-level error.
absl::Status pg_status(std::string_view sqlstate, std::string_view message, std::string_view what);

// SQLite-style placeholders (? numbered in order, ?N) as $N, outside string literals and
// quoted names; a locking clause in a comment (/*FOR UPDATE*/, /*FOR NO KEY UPDATE*/) becomes
// that clause (SQLite serializes writers, so it needs no row lock). *nparams: the highest
// parameter number.
std::string translate_placeholders(std::string_view sql, int* nparams);

}  // namespace picket::manager::store
