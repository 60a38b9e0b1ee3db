// Store::Open (file creation, connection pragmas, migration) and the store-wide reads
// (fleet summary, integrity check). The queries live in sensors.cc, bundles.cc,
// deployments.cc, deployment_states.cc and runs.cc; the writer thread in writer.cc.
#include "manager/store/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/strings.h"
#include "manager/store/migrations.h"
#include "manager/store/sqlite.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

namespace {

// SQLite creates files 0644; the database holds token hashes, so create it 0600 first. The
// -wal and -shm files inherit the database file's mode.
absl::Status create_private(const std::string& path) {
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
    return absl::OkStatus();
}

// WAL, synchronous=FULL, foreign keys and the page quota on the writer connection.
absl::Status configure(Conn& w, const StoreOptions& options) {
    ASSIGN_OR_RETURN(Stmt s, w.prepare("PRAGMA journal_mode=WAL"));
    ASSIGN_OR_RETURN(bool row, s.step());
    if (!row || s.text(0) != "wal") {
        return absl::FailedPreconditionError("cannot switch to WAL journal mode");
    }
    for (const char* pragma : {"PRAGMA synchronous=FULL", "PRAGMA foreign_keys=ON"}) {
        RETURN_IF_ERROR(w.exec(pragma));
    }
    if (options.max_page_count > 0) {
        std::string sql = cat("PRAGMA max_page_count=", options.max_page_count);
        RETURN_IF_ERROR(w.exec(sql.c_str()));
    }
    return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, StoreOptions options) {
    if (options.max_batch_ops < 1) {
        options.max_batch_ops = 1;
    }
    const bool pg = is_postgres_dsn(path);
    if (!pg) {
        RETURN_IF_ERROR(create_private(path));
    }
    const std::string shown = redact_dsn(path);  // never the password
    auto where = [&shown](absl::Status st) {
        if (st.ok()) {
            return st;
        }
        return absl::Status(st.code(), cat("database ", shown, ": ", st.message()));
    };
    auto opened = Conn::open(path, false, options);
    if (!opened.ok()) {
        return pg ? where(opened.status()) : opened.status();
    }
    std::unique_ptr<Conn> w = std::move(*opened);
    // PostgreSQL: durability (synchronous_commit, fsync) and foreign keys are the server's and
    // always on by default; there is no page quota (max_page_count is SQLite's).
    if (!pg) {
        RETURN_IF_ERROR(where(configure(*w, options)));
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
        RETURN_IF_ERROR(where(w->exec("UPDATE sensors SET connected = 0 WHERE connected = 1")));
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

absl::StatusOr<Store::FleetSummary> Store::fleet_summary() {
    return impl_->read([](Conn& c) -> absl::StatusOr<FleetSummary> {
        FleetSummary f;
        {
            ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT kind, count(*), max(created_at) FROM "
                                               "deployments GROUP BY kind"));
            RETURN_IF_ERROR(each_row(s, [&f](const Stmt& r) {
                (r.text(0) == "rollback" ? f.rollbacks : f.deploys) = r.i64(1);
                f.last_deployment_at = std::max(f.last_deployment_at, r.i64(2));
            }));
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

absl::Status Store::integrity_check() {
    return impl_->read([](Conn& c) -> absl::Status {
        if (c.postgres()) {
            // PostgreSQL has no integrity_check (amcheck needs an extension and superuser):
            // the server checksums its pages itself. Check that the store answers.
            ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT count(*) FROM schema_version"));
            return s.run();
        }
        ASSIGN_OR_RETURN(Stmt s, c.prepare("PRAGMA integrity_check"));
        std::string report;
        RETURN_IF_ERROR(each_row(
            s, [&report](const Stmt& r) { report += cat(report.empty() ? "" : "; ", r.text(0)); }));
        if (report != "ok") {
            return absl::DataLossError(cat("integrity check failed: ", report));
        }
        return absl::OkStatus();
    });
}

}  // namespace picket::manager::store
