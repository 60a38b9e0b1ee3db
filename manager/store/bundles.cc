// Store queries that serve bundles: content-addressed, immutable pushes (with the repair of a
// damaged blob) and the bundle reads, which re-check a blob against its address.
#include <openssl/evp.h>

#include "common/strings.h"
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

namespace {

std::string sha256_hex(std::string_view data) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
    return strings::hex_encode(std::string_view(reinterpret_cast<const char*>(md), len));
}

constexpr const char* kBundleColumns =
    "SELECT b.version, b.name, b.sha256, b.author, b.message, b.created_at, "
    "coalesce(b.parent_version, 0), o.size FROM bundles b JOIN blobs o ON o.sha256 = b.sha256 ";

BundleInfo bundle_from_row(const Stmt& s) {
    BundleInfo b;
    s.get(0, b.version, b.name, b.sha256, b.author, b.message, b.created_at, b.parent_version,
          b.size);
    return b;
}

// Writes the blob row: `sql` inserts (sha256, size, data).
absl::Status put_blob(Conn& c, const char* sql, const std::string& sha, const std::string& blob) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare(sql));
    s.bind(1, sha).bind(2, static_cast<int64_t>(blob.size())).bind_blob(3, blob);
    return s.run();
}

}  // namespace

absl::Status require_bundle(Conn& c, int64_t version) {
    ASSIGN_OR_RETURN(std::optional<int64_t> v,
                     c.query_i64("SELECT version FROM bundles WHERE version = ?", version));
    if (!v) {
        return absl::NotFoundError(cat("bundle version ", version, " not found"));
    }
    return absl::OkStatus();
}

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
            // repair: the content is known good (it hashes to the address). SQLite: REPLACE
            // does not fire the immutability triggers (recursive_triggers is off) and keeps
            // the key that bundles refer to. PostgreSQL: an UPDATE, which its blobs trigger
            // allows only when the new content hashes to the row's address (migration 1).
            ASSIGN_OR_RETURN(Stmt old, c.prepare("SELECT data FROM blobs WHERE sha256 = ?"));
            old.bind(1, sha);
            ASSIGN_OR_RETURN(bool have, old.step());
            if (!have || sha256_hex(old.blob(0)) != sha) {
                RETURN_IF_ERROR(put_blob(c,
                                         c.postgres()
                                             ? "INSERT INTO blobs(sha256, size, data) "
                                               "VALUES(?, ?, ?) ON CONFLICT(sha256) DO UPDATE "
                                               "SET size = excluded.size, data = excluded.data"
                                             : "INSERT OR REPLACE INTO blobs(sha256, size, data) "
                                               "VALUES(?, ?, ?)",
                                         sha, b.blob));
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
        RETURN_IF_ERROR(put_blob(c,
                                 "INSERT INTO blobs(sha256, size, data) VALUES(?, ?, ?) "
                                 "ON CONFLICT(sha256) DO NOTHING",
                                 sha, b.blob));
        ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO bundles(name, sha256, author, message, "
                                             "created_at, parent_version) "
                                             "VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT(sha256) "
                                             "DO NOTHING RETURNING version"));
        ins.bind(1, b.name).bind(2, sha).bind(3, b.author).bind(4, b.message);
        ins.bind(5, b.created_at).bind_ref(6, b.parent_version);
        ASSIGN_OR_RETURN(bool inserted, ins.step());
        if (!inserted) {
            // PostgreSQL: another manager pushed the same content since the check above and
            // committed first; this push is the same version (idempotent, as a repeat).
            ASSIGN_OR_RETURN(Stmt again, c.prepare("SELECT version FROM bundles WHERE sha256 = ?"));
            again.bind(1, sha);
            RETURN_IF_ERROR(
                again.expect_row([] { return absl::InternalError("pushed bundle vanished"); }));
            return PushResult{again.i64(0), sha, false};
        }
        int64_t version = ins.i64(0);
        RETURN_IF_ERROR(log_event(c, b.created_at, b.author, "bundle.push", "", version, 0,
                                  cat(b.name, ": ", b.message)));
        return PushResult{version, sha, true};
    });
}

absl::StatusOr<std::vector<BundleInfo>> Store::list_bundles() {
    return impl_->read([](Conn& c) -> absl::StatusOr<std::vector<BundleInfo>> {
        static const std::string kSql = std::string(kBundleColumns) + "ORDER BY b.version";
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
        return collect<BundleInfo>(s, bundle_from_row);
    });
}

absl::StatusOr<Bundle> Store::get_bundle(int64_t version, bool with_blob) {
    return impl_->read([=](Conn& c) -> absl::StatusOr<Bundle> {
        static const std::string kSql = std::string(kBundleColumns) + "WHERE b.version = ?";
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
        s.bind(1, version);
        RETURN_IF_ERROR(s.expect_row(
            [&] { return absl::NotFoundError(cat("bundle version ", version, " not found")); }));
        Bundle b;
        b.info = bundle_from_row(s);
        if (with_blob) {
            ASSIGN_OR_RETURN(Stmt d, c.prepare("SELECT data FROM blobs WHERE sha256 = ?"));
            d.bind(1, b.info.sha256);
            RETURN_IF_ERROR(d.expect_row([&] {
                return absl::DataLossError(
                    cat("bundle version ", version, ": blob ", b.info.sha256, " missing"));
            }));
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

}  // namespace picket::manager::store
