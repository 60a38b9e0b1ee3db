// Store queries of bootstrap enrollment: tokens (create, list, revoke, redeem), the
// certificates the manager signs, renewal and readmission of revoked sensors.
#include <openssl/crypto.h>

#include "common/strings.h"
#include "common/time_util.h"
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

namespace {

constexpr int64_t kMaxUses = 10000;

bool same_hash(const std::string& a, const std::string& b) {
    return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string iso_time(int64_t ns) {
    UtcTime t = split_utc(ns);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", t.year, t.month, t.day,
                  t.hour, t.minute, t.second);
    return buf;
}

bool valid_token_id(std::string_view id) {
    if (id.size() < 6 || id.size() > 16) {
        return false;
    }
    for (char c : id) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
            return false;
        }
    }
    return true;
}

constexpr const char* kTokenColumns =
    "SELECT id, uses, used, expires_at, created_at, coalesce(revoked_at, 0), name_pattern, "
    "created_by FROM bootstrap_tokens ";

BootstrapToken token_from_row(const Stmt& s) {
    BootstrapToken t;
    s.get(0, t.id, t.uses, t.used, t.expires_at, t.created_at, t.revoked_at, t.name_pattern,
          t.created_by);
    return t;
}

absl::Status load_token_labels(Conn& c, BootstrapToken& t) {
    ASSIGN_OR_RETURN(Stmt l, c.prepare("SELECT key, value FROM bootstrap_token_labels WHERE "
                                       "token_id = ?"));
    l.bind(1, t.id);
    return each_row(l, [&t](const Stmt& r) { t.labels.emplace(r.text(0), r.text(1)); });
}

absl::StatusOr<BootstrapToken> load_token(Conn& c, std::string_view id) {
    static const std::string kSql = std::string(kTokenColumns) + "WHERE id = ?";
    ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
    s.bind(1, id);
    RETURN_IF_ERROR(s.expect_row(
        [&] { return absl::NotFoundError(cat("bootstrap token '", id, "' unknown")); }));
    BootstrapToken t = token_from_row(s);
    RETURN_IF_ERROR(load_token_labels(c, t));
    return t;
}

absl::StatusOr<bool> secret_matches_in(Conn& c, std::string_view id, const std::string& hash) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT secret_hash FROM bootstrap_tokens WHERE id = ?"));
    s.bind(1, id);
    RETURN_IF_ERROR(s.expect_row(
        [&] { return absl::NotFoundError(cat("bootstrap token '", id, "' unknown")); }));
    return same_hash(s.text(0), hash);
}

// Certificates of a sensor it was issued (recorded) or connected with: revoked with it.
absl::Status record_issued(Conn& c, int64_t sid, const std::string& serial,
                           const std::string& sha256, int64_t not_after, int64_t ts,
                           std::string_view token_id) {
    ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO issued_certs(serial, sensor_id, sha256, "
                                         "not_after, issued_at, token_id) VALUES(?, ?, ?, ?, ?, "
                                         "?)"));
    ins.bind(1, serial).bind(2, sid).bind(3, sha256).bind(4, not_after).bind(5, ts);
    ins.bind_opt(6, token_id);
    return ins.run();
}

absl::Status check_cert_not_revoked(Conn& c, std::string_view sensor, const std::string& sha) {
    if (sha.empty()) {
        return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Stmt rc, c.prepare("SELECT 1 FROM revoked_certs WHERE sha256 = ?"));
    rc.bind(1, sha);
    ASSIGN_OR_RETURN(bool revoked, rc.step());
    if (revoked) {
        return absl::PermissionDeniedError(
            cat("the client certificate of sensor '", sensor, "' was revoked"));
    }
    return absl::OkStatus();
}

absl::Status sensor_revoked_error(std::string_view name) {
    return absl::PermissionDeniedError(cat("sensor '", name,
                                           "' is revoked; readmit it first: picketctl sensor "
                                           "readmit ",
                                           name));
}

}  // namespace

std::string BootstrapToken::state(int64_t now) const {
    if (revoked_at != 0) {
        return "revoked";
    }
    if (now >= expires_at) {
        return "expired";
    }
    if (used >= uses) {
        return "used_up";
    }
    return "active";
}

absl::Status check_bootstrap_token(const BootstrapToken& t, bool secret_matches, int64_t now) {
    if (!secret_matches) {
        return absl::UnauthenticatedError(cat("bootstrap token '", t.id, "' unknown"));
    }
    if (t.revoked_at != 0) {
        return absl::PermissionDeniedError(cat("bootstrap token '", t.id, "' is revoked"));
    }
    if (now >= t.expires_at) {
        return absl::PermissionDeniedError(
            cat("bootstrap token '", t.id, "' expired at ", iso_time(t.expires_at)));
    }
    if (t.used >= t.uses) {
        return absl::PermissionDeniedError(
            cat("bootstrap token '", t.id, "' is used up (", t.used, " of ", t.uses, " uses)"));
    }
    return absl::OkStatus();
}

absl::Status Store::create_bootstrap_token(const NewBootstrapToken& t) {
    if (!valid_token_id(t.id)) {
        return absl::InvalidArgumentError("bootstrap token id must be 6-16 characters of [a-z0-9]");
    }
    if (t.secret_hash.size() != 64) {
        return absl::InvalidArgumentError("bootstrap token: secret hash must be SHA-256 hex");
    }
    if (t.uses < 1 || t.uses > kMaxUses) {
        return absl::InvalidArgumentError(
            cat("bootstrap token uses ", t.uses, " outside 1..", kMaxUses));
    }
    if (t.expires_at <= t.created_at) {
        return absl::InvalidArgumentError("bootstrap token must expire after it is created");
    }
    for (const auto& [k, v] : t.labels) {
        RETURN_IF_ERROR(validate_label(k, v));
    }
    return impl_->write_status([t](Conn& c) -> absl::Status {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT 1 FROM bootstrap_tokens WHERE id = ?"));
        s.bind(1, t.id);
        ASSIGN_OR_RETURN(bool exists, s.step());
        if (exists) {
            return absl::AlreadyExistsError(cat("bootstrap token '", t.id, "' already exists"));
        }
        ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO bootstrap_tokens(id, secret_hash, uses, "
                                             "expires_at, name_pattern, created_at, created_by) "
                                             "VALUES(?, ?, ?, ?, ?, ?, ?)"));
        ins.bind(1, t.id).bind(2, t.secret_hash).bind(3, t.uses).bind(4, t.expires_at);
        ins.bind(5, t.name_pattern).bind(6, t.created_at).bind(7, t.actor);
        RETURN_IF_ERROR(ins.run());
        for (const auto& [k, v] : t.labels) {
            ASSIGN_OR_RETURN(Stmt l, c.prepare("INSERT INTO bootstrap_token_labels(token_id, key, "
                                               "value) VALUES(?, ?, ?)"));
            l.bind(1, t.id).bind(2, k).bind(3, v);
            RETURN_IF_ERROR(l.run());
        }
        return log_event(
            c, t.created_at, t.actor, "bootstrap_token.create", "", 0, 0,
            cat("token ", t.id, ": ", t.uses, " use(s), expires ", iso_time(t.expires_at)));
    });
}

absl::StatusOr<std::vector<BootstrapToken>> Store::list_bootstrap_tokens() {
    return impl_->read([](Conn& c) -> absl::StatusOr<std::vector<BootstrapToken>> {
        static const std::string kSql = std::string(kTokenColumns) + "ORDER BY created_at, id";
        ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
        std::vector<BootstrapToken> out;
        RETURN_IF_ERROR(each_row(s, [&out](const Stmt& r) { out.push_back(token_from_row(r)); }));
        for (BootstrapToken& t : out) {
            RETURN_IF_ERROR(load_token_labels(c, t));
        }
        return out;
    });
}

absl::StatusOr<BootstrapToken> Store::get_bootstrap_token(const std::string& id) {
    return impl_->read([&id](Conn& c) { return load_token(c, id); });
}

absl::StatusOr<bool> Store::bootstrap_secret_matches(const std::string& id,
                                                     const std::string& secret_hash) {
    return impl_->read([&](Conn& c) { return secret_matches_in(c, id, secret_hash); });
}

absl::StatusOr<bool> Store::revoke_bootstrap_token(const std::string& id, int64_t ts,
                                                   const std::string& actor) {
    return impl_->write<bool>([=](Conn& c) -> absl::StatusOr<bool> {
        ASSIGN_OR_RETURN(BootstrapToken t, load_token(c, id));
        if (t.revoked_at != 0) {
            return false;
        }
        ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE bootstrap_tokens SET revoked_at = ? WHERE id "
                                           "= ?"));
        u.bind(1, ts).bind(2, id);
        RETURN_IF_ERROR(u.run());
        RETURN_IF_ERROR(
            log_event(c, ts, actor, "bootstrap_token.revoke", "", 0, 0,
                      cat("token ", id, " revoked after ", t.used, " of ", t.uses, " use(s)")));
        return true;
    });
}

absl::StatusOr<BootstrapToken> Store::redeem_bootstrap_token(const Redemption& r) {
    RETURN_IF_ERROR(validate_sensor_name(r.sensor));
    if (r.cert_serial.empty() || r.cert_sha256.empty()) {
        return absl::InvalidArgumentError("redeem: certificate serial and hash are required");
    }
    return impl_->write<BootstrapToken>([r](Conn& c) -> absl::StatusOr<BootstrapToken> {
        // PostgreSQL: the token's row stays locked until this transaction ends, so managers
        // redeeming the last use at once are served one after the other and the later one
        // sees it spent (SQLite has one writer at a time anyway).
        ASSIGN_OR_RETURN(Stmt lock, c.prepare("SELECT 1 FROM bootstrap_tokens WHERE id = ? "
                                              "/*FOR UPDATE*/"));
        lock.bind(1, r.token_id);
        RETURN_IF_ERROR(lock.run());
        absl::StatusOr<BootstrapToken> t = load_token(c, r.token_id);
        if (absl::IsNotFound(t.status())) {
            return absl::UnauthenticatedError(std::string(t.status().message()));
        }
        if (!t.ok()) {
            return t.status();
        }
        ASSIGN_OR_RETURN(bool matches, secret_matches_in(c, r.token_id, r.secret_hash));
        RETURN_IF_ERROR(check_bootstrap_token(*t, matches, r.ts));
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, revoked_at IS NOT NULL, may_enroll FROM "
                                           "sensors WHERE name = ?"));
        s.bind(1, r.sensor);
        ASSIGN_OR_RETURN(bool row, s.step());
        int64_t sid = 0;
        if (row) {
            if (s.i64(1) != 0) {
                return sensor_revoked_error(r.sensor);
            }
            if (s.i64(2) == 0) {
                // A token mints new names only: whoever holds one must not get a second
                // identity for a sensor in use.
                return absl::PermissionDeniedError(
                    cat("sensor '", r.sensor,
                        "' already exists; to give it a new key, revoke and readmit it first "
                        "(picketctl sensor revoke ",
                        r.sensor, "; picketctl sensor readmit ", r.sensor, ")"));
            }
            sid = s.i64(0);
            // From now on it authenticates by its certificate: a per-name token it may have had
            // is forgotten.
            ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE sensors SET token_hash = NULL, "
                                               "may_enroll = 0, enrolled_at = ? WHERE id = ?"));
            u.bind(1, r.ts).bind(2, sid);
            RETURN_IF_ERROR(u.run());
        } else {
            ASSIGN_OR_RETURN(Stmt ins, c.prepare("INSERT INTO sensors(name, enrolled_at) "
                                                 "VALUES(?, ?) RETURNING id"));
            ins.bind(1, r.sensor).bind(2, r.ts);
            RETURN_IF_ERROR(ins.expect_row([] { return absl::InternalError("no id returned"); }));
            sid = ins.i64(0);
        }
        ASSIGN_OR_RETURN(Stmt spend, c.prepare("UPDATE bootstrap_tokens SET used = used + 1 "
                                               "WHERE id = ? AND used < uses"));
        spend.bind(1, r.token_id);
        RETURN_IF_ERROR(spend.run());
        ASSIGN_OR_RETURN(Stmt del, c.prepare("DELETE FROM sensor_imposed_labels WHERE "
                                             "sensor_id = ?"));
        del.bind(1, sid);
        RETURN_IF_ERROR(del.run());
        for (const auto& [k, v] : t->labels) {
            for (const char* sql : {"INSERT INTO sensor_imposed_labels(sensor_id, key, value) "
                                    "VALUES(?1, ?2, ?3)",
                                    "INSERT INTO sensor_labels(sensor_id, key, value) "
                                    "VALUES(?1, ?2, ?3) ON CONFLICT(sensor_id, key) DO UPDATE "
                                    "SET value = excluded.value"}) {
                ASSIGN_OR_RETURN(Stmt l, c.prepare(sql));
                l.bind(1, sid).bind(2, k).bind(3, v);
                RETURN_IF_ERROR(l.run());
            }
        }
        RETURN_IF_ERROR(
            record_issued(c, sid, r.cert_serial, r.cert_sha256, r.not_after, r.ts, r.token_id));
        RETURN_IF_ERROR(log_event(
            c, r.ts, cat("bootstrap token ", r.token_id), "sensor.enroll", r.sensor, 0, 0,
            cat("certificate ", r.cert_serial, " issued, valid until ", iso_time(r.not_after))));
        t->used += 1;
        return *t;
    });
}

absl::Status Store::record_renewal(const std::string& sensor, const std::string& presented_sha256,
                                   const std::string& cert_serial, const std::string& cert_sha256,
                                   int64_t not_after, int64_t ts) {
    return impl_->write_status([=](Conn& c) -> absl::Status {
        RETURN_IF_ERROR(check_cert_not_revoked(c, sensor, presented_sha256));
        ASSIGN_OR_RETURN(int64_t sid, active_sensor_id(c, sensor));
        RETURN_IF_ERROR(record_issued(c, sid, cert_serial, cert_sha256, not_after, ts, ""));
        return log_event(
            c, ts, sensor, "sensor.renew", sensor, 0, 0,
            cat("certificate ", cert_serial, " issued, valid until ", iso_time(not_after)));
    });
}

absl::StatusOr<bool> Store::readmit_sensor(const std::string& name, int64_t ts,
                                           const std::string& actor) {
    RETURN_IF_ERROR(validate_sensor_name(name));
    return impl_->write<bool>([=](Conn& c) -> absl::StatusOr<bool> {
        ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, revoked_at IS NOT NULL FROM sensors WHERE "
                                           "name = ?"));
        s.bind(1, name);
        RETURN_IF_ERROR(s.expect_row(
            [&] { return absl::NotFoundError(cat("sensor '", name, "' not found")); }));
        if (s.i64(1) == 0) {
            return false;
        }
        ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE sensors SET revoked_at = NULL, may_enroll = 1 "
                                           "WHERE id = ?"));
        u.bind(1, s.i64(0));
        RETURN_IF_ERROR(u.run());
        RETURN_IF_ERROR(log_event(c, ts, actor, "sensor.readmit", name, 0, 0,
                                  "revocation lifted: it may enroll once; its revoked "
                                  "certificates stay refused"));
        return true;
    });
}

}  // namespace picket::manager::store
