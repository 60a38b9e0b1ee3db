// Store queries that serve sensors: enrollment, connect/disconnect, revocation and the sensor
// reads (list, select, get).
#include <algorithm>
#include <unordered_map>

#include "common/strings.h"
#include "manager/store/internal.h"
#include "manager/store/writer.h"

namespace picket::manager::store {

using strings::cat;

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

constexpr const char* kSensorColumns =
    "SELECT id, name, host, version, capture_mode, workers, token_hash IS NOT NULL, "
    "coalesce(enrolled_at, 0), coalesce(first_seen, 0), coalesce(last_seen, 0), connected, "
    "running_version, revoked_at IS NOT NULL, coalesce(revoked_at, 0) FROM sensors ";

Sensor sensor_from_row(const Stmt& s) {
    Sensor out;
    s.get(1, out.name, out.host, out.version, out.capture_mode, out.workers, out.enrolled,
          out.enrolled_at, out.first_seen, out.last_seen, out.connected, out.running_version,
          out.revoked, out.revoked_at);
    return out;
}

// The sensor row `sql` (kSensorColumns + a WHERE with one argument) picks, with its id;
// without a row: missing().
template <typename Arg, typename Missing>
absl::StatusOr<std::pair<int64_t, Sensor>> load_sensor_row(Conn& c, const std::string& sql,
                                                           const Arg& arg, Missing&& missing) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare(sql.c_str()));
    s.bind(1, arg);
    RETURN_IF_ERROR(s.expect_row(missing));
    return std::make_pair(s.i64(0), sensor_from_row(s));
}

struct SensorKey {
    int64_t id = 0;
    bool revoked = false;
    std::string cert;  // sha256 of the certificate it last connected with, "" for none
};

// NOT_FOUND "sensor 'NAME' not found" for an unknown name.
absl::StatusOr<SensorKey> sensor_key(Conn& c, std::string_view name) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("SELECT id, revoked_at IS NOT NULL, cert_sha256 FROM "
                                       "sensors WHERE name = ?"));
    s.bind(1, name);
    RETURN_IF_ERROR(
        s.expect_row([&] { return absl::NotFoundError(cat("sensor '", name, "' not found")); }));
    SensorKey k;
    s.get(0, k.id, k.revoked, k.cert);
    return k;
}

}  // namespace

// ---- Row helpers (internal.h)

absl::StatusOr<int64_t> sensor_id(Conn& c, std::string_view name) {
    std::string key(name);
    if (auto it = c.sensor_ids.find(key); it != c.sensor_ids.end()) {
        return it->second;
    }
    ASSIGN_OR_RETURN(SensorKey k, sensor_key(c, name));
    c.sensor_ids.emplace(std::move(key), k.id);
    return k.id;
}

// A report already queued when the revocation committed is refused, not recorded.
absl::StatusOr<int64_t> active_sensor_id(Conn& c, std::string_view name) {
    ASSIGN_OR_RETURN(SensorKey k, sensor_key(c, name));
    if (k.revoked) {
        return absl::PermissionDeniedError(cat("sensor '", name, "' is revoked"));
    }
    return k.id;
}

absl::Status touch_in(Conn& c, int64_t sid, int64_t ts) {
    ASSIGN_OR_RETURN(Stmt s, c.prepare("UPDATE sensors SET last_seen = CASE WHEN last_seen IS "
                                       "NULL OR last_seen < ?1 THEN ?1 ELSE last_seen END "
                                       "WHERE id = ?2"));
    s.bind(1, ts).bind(2, sid);
    return s.run();
}

absl::StatusOr<std::vector<Sensor>> load_sensors(Conn& c) {
    static const std::string kSql = std::string(kSensorColumns) + "ORDER BY name";
    ASSIGN_OR_RETURN(Stmt s, c.prepare(kSql.c_str()));
    std::vector<Sensor> out;
    std::unordered_map<int64_t, size_t> index;
    RETURN_IF_ERROR(each_row(s, [&](const Stmt& r) {
        index.emplace(r.i64(0), out.size());
        out.push_back(sensor_from_row(r));
    }));
    ASSIGN_OR_RETURN(Stmt l, c.prepare("SELECT sensor_id, key, value FROM sensor_labels"));
    RETURN_IF_ERROR(each_row(l, [&](const Stmt& r) {
        auto it = index.find(r.i64(0));
        if (it != index.end()) {
            out[it->second].labels.emplace(r.text(1), r.text(2));
        }
    }));
    return out;
}

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

// ---- Writes

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
                                                 "enrolled_at) VALUES(?, ?, ?) RETURNING id"));
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
                                                 "enrolled_at) VALUES(?, ?, ?) RETURNING id"));
            ins.bind(1, h.name);
            if (h.token_hash.empty()) {
                ins.bind_null(2).bind_null(3);
            } else {
                ins.bind(2, h.token_hash).bind(3, ts);
            }
            RETURN_IF_ERROR(ins.expect_row([] { return absl::InternalError("no id returned"); }));
            sid = ins.i64(0);
            RETURN_IF_ERROR(log_event(c, ts, "", "sensor.register", h.name, 0, 0, h.host));
        }
        ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE sensors SET host = ?, version = ?, "
                                           "capture_mode = ?, workers = ?, running_version = ?, "
                                           "connected = 1, first_seen = coalesce(first_seen, ?6), "
                                           "last_seen = ?6, cert_sha256 = coalesce(?8, "
                                           "cert_sha256) WHERE id = ?7"));
        u.bind(1, h.host).bind(2, h.version).bind(3, h.capture_mode).bind(4, h.workers);
        u.bind(5, h.running_version).bind(6, ts).bind(7, sid).bind_opt(8, h.cert_sha256);
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
        // Labels a bootstrap token imposed win over the sensor's own (schema 5).
        std::map<std::string, std::string> labels = h.labels;
        ASSIGN_OR_RETURN(Stmt imposed, c.prepare("SELECT key, value FROM sensor_imposed_labels "
                                                 "WHERE sensor_id = ?"));
        imposed.bind(1, sid);
        RETURN_IF_ERROR(each_row(
            imposed, [&labels](const Stmt& r) { labels.insert_or_assign(r.text(0), r.text(1)); }));
        for (const auto& [k, v] : labels) {
            if (h.labels.count(k) != 0 && h.labels.at(k) == v) {
                continue;
            }
            ASSIGN_OR_RETURN(Stmt l, c.prepare("INSERT INTO sensor_labels(sensor_id, key, value) "
                                               "VALUES(?, ?, ?) ON CONFLICT(sensor_id, key) DO "
                                               "UPDATE SET value = excluded.value"));
            l.bind(1, sid).bind(2, k).bind(3, v);
            RETURN_IF_ERROR(l.run());
        }
        RETURN_IF_ERROR(begin_run_in(c, sid, h.running_version, ts));
        static const std::string kSql = std::string(kSensorColumns) + "WHERE id = ?";
        ASSIGN_OR_RETURN(auto found, load_sensor_row(c, kSql, sid, [] {
                             return absl::InternalError("sensor row vanished");
                         }));
        Sensor out = std::move(found.second);
        out.labels = std::move(labels);
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
        RETURN_IF_ERROR(lock_targets_in(c));  // no deploy plans a target for it meanwhile
        ASSIGN_OR_RETURN(SensorKey k, sensor_key(c, name));
        if (k.revoked) {
            return false;
        }
        const int64_t sid = k.id;
        const std::string& cert = k.cert;
        // The token is forgotten: a re-enrollment issues a new one.
        ASSIGN_OR_RETURN(Stmt u, c.prepare("UPDATE sensors SET revoked_at = ?, token_hash = NULL, "
                                           "enrolled_at = NULL WHERE id = ?"));
        u.bind(1, ts).bind(2, sid);
        RETURN_IF_ERROR(u.run());
        if (!cert.empty()) {
            ASSIGN_OR_RETURN(Stmt rc, c.prepare("INSERT INTO revoked_certs(sha256, sensor_id, "
                                                "revoked_at) VALUES(?, ?, ?) ON CONFLICT(sha256) "
                                                "DO NOTHING"));
            rc.bind(1, cert).bind(2, sid).bind(3, ts);
            RETURN_IF_ERROR(rc.run());
        }
        // Every certificate the manager signed for it (bootstrap enrollment, renewals), also
        // those it has not presented yet.
        ASSIGN_OR_RETURN(Stmt ic, c.prepare("INSERT INTO revoked_certs(sha256, sensor_id, "
                                            "revoked_at) SELECT sha256, sensor_id, ? FROM "
                                            "issued_certs WHERE sensor_id = ? ON CONFLICT(sha256) "
                                            "DO NOTHING"));
        ic.bind(1, ts).bind(2, sid);
        RETURN_IF_ERROR(ic.run());
        // Its open targets can never be answered: cancel them so deployments can finish.
        std::vector<int64_t> touched;
        RETURN_IF_ERROR(supersede_sensor_targets(c, std::span<const int64_t>(&sid, 1), 0,
                                                 "sensor revoked", ts, touched));
        for (int64_t id : touched) {
            RETURN_IF_ERROR(maybe_finish(c, id, ts));
        }
        RETURN_IF_ERROR(log_event(c, ts, actor, "sensor.revoke", name, 0, 0,
                                  cert.empty() ? "" : cat("certificate ", cert, " revoked")));
        return true;
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
        ASSIGN_OR_RETURN(auto found, load_sensor_row(c, kSql, std::string_view(name), [&] {
                             return absl::NotFoundError(cat("sensor '", name, "' not found"));
                         }));
        Sensor out = std::move(found.second);
        ASSIGN_OR_RETURN(Stmt l, c.prepare("SELECT key, value FROM sensor_labels WHERE "
                                           "sensor_id = ?"));
        l.bind(1, found.first);
        RETURN_IF_ERROR(
            each_row(l, [&out](const Stmt& r) { out.labels.emplace(r.text(0), r.text(1)); }));
        return out;
    });
}

}  // namespace picket::manager::store
