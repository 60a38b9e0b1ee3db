#include "manager/store/postgres.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/strings.h"
#include "manager/status.h"
#include "manager/store/sqlite.h"

namespace picket::manager::store {

using strings::cat;

namespace {

constexpr unsigned int kInt8Oid = 20;
constexpr unsigned int kFloat8Oid = 701;
constexpr unsigned int kByteaOid = 17;

std::string one_line(std::string_view s, size_t max) {
    std::string out(s);
    std::replace(out.begin(), out.end(), '\n', ' ');
    while (!out.empty() && out.back() == ' ') {
        out.pop_back();
    }
    return out.size() > max ? out.substr(0, max) + "..." : out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return 0;
}

void ignore_notice(void*, const char*) {}

}  // namespace

bool is_postgres_dsn(std::string_view path) {
    return path.starts_with("postgres://") || path.starts_with("postgresql://");
}

std::string redact_dsn(std::string_view path) {
    if (!is_postgres_dsn(path)) {
        return std::string(path);
    }
    // scheme://user:password@host... -> scheme://user:***@host...; password=... in the query.
    std::string out(path);
    size_t scheme = out.find("://") + 3;
    size_t at = out.find('@', scheme);
    size_t slash = out.find('/', scheme);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
        size_t colon = out.find(':', scheme);
        if (colon != std::string::npos && colon < at) {
            out.replace(colon + 1, at - colon - 1, "***");
        }
    }
    for (size_t p = out.find("password="); p != std::string::npos;
         p = out.find("password=", p + 1)) {
        size_t end = out.find('&', p);
        out.replace(p + 9, (end == std::string::npos ? out.size() : end) - p - 9, "***");
    }
    return out;
}

absl::Status pg_status(std::string_view sqlstate, std::string_view message, std::string_view what) {
    std::string msg = cat(what, ": ", one_line(message, 400));
    if (sqlstate.empty() || sqlstate.starts_with("08") || sqlstate == "57P01" ||
        sqlstate == "57P02" || sqlstate == "57P03") {
        // No SQLSTATE: libpq's own error (refused, server gone); 08: connection exception;
        // 57P0x: the server is shutting down or starting.
        return absl::UnavailableError(cat(msg, " (database server unavailable)"));
    }
    if (sqlstate == "53100") {
        return absl::ResourceExhaustedError(
            cat(msg, " (database or disk full; nothing committed is lost)"));
    }
    if (sqlstate.starts_with("53")) {  // insufficient resources
        return absl::ResourceExhaustedError(msg);
    }
    if (sqlstate.starts_with("54")) {  // program limit exceeded (too big)
        return absl::InvalidArgumentError(msg);
    }
    if (sqlstate.starts_with("23") || sqlstate == "P0001") {
        // Integrity constraint, or the schema's triggers (RAISE, as SQLite's RAISE(ABORT)).
        return absl::FailedPreconditionError(msg);
    }
    if (sqlstate == "40001" || sqlstate == "40P01" || sqlstate == "55P03" || sqlstate == "25006" ||
        sqlstate.starts_with("57")) {
        // Serialization failure, deadlock, lock not available, read-only, cancelled: as
        // SQLite's busy.
        return absl::UnavailableError(msg);
    }
    if (sqlstate == "XX001" || sqlstate == "XX002") {
        return absl::DataLossError(msg);
    }
    if (sqlstate == "3D000") {  // the database does not exist
        return absl::NotFoundError(msg);
    }
    if (sqlstate.starts_with("28")) {  // authentication
        return absl::PermissionDeniedError(msg);
    }
    return absl::InternalError(msg);
}

std::string translate_placeholders(std::string_view sql, int* nparams) {
    std::string out;
    out.reserve(sql.size() + 16);
    int next = 0;
    int highest = 0;
    constexpr std::string_view kLockOpen = "/*FOR ";  // /*FOR UPDATE*/, /*FOR NO KEY UPDATE*/
    for (size_t i = 0; i < sql.size(); ++i) {
        char c = sql[i];
        if (c == '\'' || c == '"') {
            size_t end = sql.find(c, i + 1);
            end = end == std::string_view::npos ? sql.size() - 1 : end;
            out.append(sql.substr(i, end - i + 1));
            i = end;
            continue;
        }
        if (c == '/' && sql.substr(i).starts_with(kLockOpen)) {
            const size_t end = sql.find("*/", i);
            if (end != std::string_view::npos) {
                out.append(sql.substr(i + 2, end - i - 2));
                i = end + 1;
                continue;
            }
        }
        if (c != '?') {
            out += c;
            continue;
        }
        size_t j = i + 1;
        int n = 0;
        while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') {
            n = n * 10 + (sql[j] - '0');
            ++j;
        }
        if (j == i + 1) {
            n = ++next;  // plain ?: one more than the previous one
        } else {
            next = n;
        }
        highest = std::max(highest, n);
        out += cat("$", n);
        i = j - 1;
    }
    *nparams = highest;
    return out;
}

// ---- PgStmt

void PgStmt::clear() {
    if (res != nullptr) {
        PQclear(res);
        res = nullptr;
    }
    row = -1;
    rows = 0;
    std::fill(null.begin(), null.end(), 1);
    std::fill(binary.begin(), binary.end(), 0);
}

// ---- PgConn

absl::StatusOr<std::unique_ptr<PgConn>> PgConn::connect(const std::string& dsn, bool read_only) {
    auto c = std::make_unique<PgConn>();
    c->dsn = dsn;
    c->read_only = read_only;
    c->conn = PQconnectdb(dsn.c_str());
    if (c->conn == nullptr) {
        return absl::ResourceExhaustedError("postgres: out of memory");
    }
    PQsetNoticeProcessor(c->conn, ignore_notice, nullptr);
    if (PQstatus(c->conn) != CONNECTION_OK) {
        return c->error(nullptr, "connect");
    }
    return c;
}

PgConn::~PgConn() {
    for (auto& [sql, s] : cache) {
        s->clear();
    }
    if (conn != nullptr) {
        PQfinish(conn);
    }
}

absl::Status PgConn::error(const PGresult* r, std::string_view what) {
    const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const char* primary = r != nullptr ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    sqlstate = state != nullptr ? state : "";
    std::string message = primary != nullptr ? primary : PQerrorMessage(conn);
    if (message.empty()) {
        message = "connection lost";
    }
    return pg_status(sqlstate, message, what);
}

bool PgConn::in_transaction() const {
    PGTransactionStatusType t = PQtransactionStatus(conn);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR || t == PQTRANS_ACTIVE;
}

absl::Status PgConn::ensure_connected() {
    if (PQstatus(conn) == CONNECTION_OK) {
        return absl::OkStatus();
    }
    PQreset(conn);
    if (PQstatus(conn) != CONNECTION_OK) {
        sqlstate.clear();
        return pg_status("", PQerrorMessage(conn), cat("reconnect to ", redact_dsn(dsn)));
    }
    PQsetNoticeProcessor(conn, ignore_notice, nullptr);
    ++epoch;  // the server forgot the prepared statements
    return absl::OkStatus();
}

absl::Status PgConn::exec(const char* sql) {
    std::string_view q(sql);
    if (q == "BEGIN IMMEDIATE") {
        // The writer. READ COMMITTED: a row's UPDATE waits for a concurrent writer's lock and
        // then works on the committed row (the targets_* counters' `x = x + 1` stay exact);
        // read-modify-writes that must not interleave lock their row (/*FOR UPDATE*/).
        q = "BEGIN";
    } else if (q == "BEGIN" && read_only) {
        // A read: one snapshot for all its statements, as SQLite's read transaction.
        q = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    }
    const bool outside = !in_transaction();
    if (outside) {
        RETURN_IF_ERROR(ensure_connected());
    }
    sqlstate.clear();
    std::string text(q);
    PGresult* r = PQexec(conn, text.c_str());
    ExecStatusType st = PQresultStatus(r);
    if (outside && q.starts_with("BEGIN") && st != PGRES_COMMAND_OK &&
        PQstatus(conn) == CONNECTION_BAD) {
        // The server went away since this connection's last use (restarted, failed over):
        // libpq only notices now. A BEGIN changes nothing, so reconnect and try it once more.
        PQclear(r);
        RETURN_IF_ERROR(ensure_connected());
        r = PQexec(conn, text.c_str());
        st = PQresultStatus(r);
    }
    absl::Status out;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        out = error(r, cat("postgres '", one_line(q, 60), "'"));
    } else if (q == "COMMIT" && std::strcmp(PQcmdStatus(r), "ROLLBACK") == 0) {
        // COMMIT of a transaction that failed: the server rolled it back.
        out = absl::AbortedError("postgres 'COMMIT': the transaction was rolled back");
    }
    PQclear(r);
    return out;
}

absl::StatusOr<PgStmt*> PgConn::prepare(const char* sql) {
    auto it = cache.find(sql);
    if (it != cache.end()) {
        return it->second.get();
    }
    auto s = std::make_unique<PgStmt>();
    s->conn = this;
    s->sql = translate_placeholders(sql, &s->nparams);
    s->name = cat("p", ++next_name);
    s->values.resize(s->nparams);
    s->null.assign(s->nparams, 1);
    s->binary.assign(s->nparams, 0);
    s->types.assign(s->nparams, 0);
    for (int i = 1; i <= s->nparams; ++i) {
        // A number the statement skips (?1, ?2, ?4) still needs a type to prepare.
        std::string ref = cat("$", i);
        bool used = false;
        for (size_t at = s->sql.find(ref); at != std::string::npos && !used;
             at = s->sql.find(ref, at + 1)) {
            size_t end = at + ref.size();
            used = end >= s->sql.size() || s->sql[end] < '0' || s->sql[end] > '9';
        }
        if (!used) {
            s->types[i - 1] = kInt8Oid;
        }
    }
    PgStmt* p = s.get();
    cache.emplace(sql, std::move(s));
    return p;
}

absl::Status PgConn::run(PgStmt& s) {
    if (!in_transaction()) {
        RETURN_IF_ERROR(ensure_connected());
    }
    sqlstate.clear();
    if (s.prepared_epoch != epoch) {
        PGresult* r = PQprepare(conn, s.name.c_str(), s.sql.c_str(), s.nparams,
                                reinterpret_cast<const Oid*>(s.types.data()));
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            absl::Status st = error(r, cat("postgres prepare '", one_line(s.sql, 80), "'"));
            PQclear(r);
            return st;
        }
        PQclear(r);
        s.prepared_epoch = epoch;
    }
    std::vector<const char*> values(s.nparams);
    std::vector<int> lengths(s.nparams), formats(s.nparams);
    for (int i = 0; i < s.nparams; ++i) {
        values[i] = s.null[i] ? nullptr : s.values[i].data();
        lengths[i] = static_cast<int>(s.values[i].size());
        formats[i] = s.binary[i];
    }
    s.res = PQexecPrepared(conn, s.name.c_str(), s.nparams, values.data(), lengths.data(),
                           formats.data(), 0);
    ExecStatusType st = PQresultStatus(s.res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        absl::Status e = error(s.res, cat("postgres step '", one_line(s.sql, 60), "'"));
        PQclear(s.res);
        s.res = nullptr;
        return e;
    }
    std::string_view tag = PQcmdStatus(s.res);
    if (tag.starts_with("INSERT") || tag.starts_with("UPDATE") || tag.starts_with("DELETE")) {
        changes = std::strtoll(PQcmdTuples(s.res), nullptr, 10);
    }
    s.rows = PQntuples(s.res);
    s.row = -1;
    return absl::OkStatus();
}

// ---- Stmt, PostgreSQL side

void Stmt::pg_reset() {
    p_->clear();
}

Stmt& Stmt::pg_bind_i64(int i, int64_t v) {
    if (i >= 1 && i <= p_->nparams) {
        p_->values[i - 1] = cat(v);
        p_->null[i - 1] = 0;
        p_->binary[i - 1] = 0;
        if (p_->prepared_epoch == 0) {
            p_->types[i - 1] = kInt8Oid;
        }
    }
    return *this;
}

Stmt& Stmt::pg_bind_double(int i, double v) {
    if (i >= 1 && i <= p_->nparams) {
        char buf[40];
        std::snprintf(buf, sizeof(buf), "%.17g", v);
        p_->values[i - 1] = buf;
        p_->null[i - 1] = 0;
        p_->binary[i - 1] = 0;
        if (p_->prepared_epoch == 0) {
            p_->types[i - 1] = kFloat8Oid;
        }
    }
    return *this;
}

Stmt& Stmt::pg_bind_text(int i, std::string_view v, bool binary) {
    if (i >= 1 && i <= p_->nparams) {
        p_->values[i - 1].assign(v.data(), v.size());
        p_->null[i - 1] = 0;
        p_->binary[i - 1] = binary ? 1 : 0;  // blobs: bytea in binary format, as they are
        if (p_->prepared_epoch == 0 && binary) {
            p_->types[i - 1] = kByteaOid;
        }
    }
    return *this;
}

Stmt& Stmt::pg_bind_null(int i) {
    if (i >= 1 && i <= p_->nparams) {
        p_->null[i - 1] = 1;
    }
    return *this;
}

absl::StatusOr<bool> Stmt::pg_step() {
    if (p_->res == nullptr) {
        RETURN_IF_ERROR(p_->conn->run(*p_));
    }
    if (p_->row < p_->rows) {
        ++p_->row;
    }
    return p_->row < p_->rows;
}

bool Stmt::pg_null(int c) const {
    return p_->res == nullptr || p_->row < 0 || p_->row >= p_->rows ||
           PQgetisnull(p_->res, p_->row, c) != 0;
}

int64_t Stmt::pg_i64(int c) const {
    if (pg_null(c)) {
        return 0;
    }
    const char* v = PQgetvalue(p_->res, p_->row, c);
    if (v[0] == 't' && v[1] == '\0') {
        return 1;  // a boolean expression (x IS NOT NULL), as SQLite's 1
    }
    if (v[0] == 'f' && v[1] == '\0') {
        return 0;
    }
    return std::strtoll(v, nullptr, 10);
}

double Stmt::pg_f64(int c) const {
    return pg_null(c) ? 0.0 : std::strtod(PQgetvalue(p_->res, p_->row, c), nullptr);
}

std::string Stmt::pg_text(int c) const {
    if (pg_null(c)) {
        return std::string();
    }
    return std::string(PQgetvalue(p_->res, p_->row, c),
                       static_cast<size_t>(PQgetlength(p_->res, p_->row, c)));
}

std::string Stmt::pg_blob(int c) const {
    // bytea in text format: \x followed by two hex digits per byte.
    std::string hex = pg_text(c);
    if (!hex.starts_with("\\x")) {
        return hex;
    }
    std::string out((hex.size() - 2) / 2, '\0');
    for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<char>(hex_value(hex[2 + 2 * i]) * 16 + hex_value(hex[3 + 2 * i]));
    }
    return out;
}

}  // namespace picket::manager::store
