// What several picket-manager replicas on one database need from each other: a change made
// through one replica (a deployment, a revocation, an enrollment) reaches the others, and the
// work that must run once per fleet (the rollout's stages and gates, the scheduled rules
// update, metric retention) runs on one replica at a time, the leader.
//
// Two implementations: LocalCoordinator for one manager on its SQLite file (always the leader;
// a change goes to its own listener), PgCoordinator for replicas on one PostgreSQL database
// (LISTEN/NOTIFY on one channel; leadership is a session-level advisory lock held on the
// coordinator's own connection, so the server frees it when the leader dies or loses its
// connection, and another replica takes it on its next tick).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace picket::manager::ha {

// One change published by a replica. kind names what changed ("deployment", "revoke",
// "enroll", "bundle", ...; "reconcile" is sent by the coordinator itself after its link to the
// database came back, since changes published meanwhile were missed); payload is the kind's
// argument (a deployment id, a sensor name); origin the publishing replica's name.
struct Change {
    std::string kind;
    std::string payload;
    std::string origin;
};

enum class Role { kLeader, kFollower, kUnavailable };
std::string_view to_string(Role r);

class Coordinator {
public:
    using ChangeFn = std::function<void(const Change&)>;
    using RoleFn = std::function<void(Role)>;
    virtual ~Coordinator() = default;

    // Starts delivering: on_change for every change published by any replica (this one
    // included), on_role when this replica's role changes. Both run on the coordinator's own
    // thread, one at a time (LocalCoordinator: on_change on the publisher's thread, so it must
    // be thread-safe); they must not block long.
    virtual void start(ChangeFn on_change, RoleFn on_role) = 0;
    // Gives up leadership (the next replica takes it at once) and stops; idempotent.
    virtual void stop() = 0;
    // Never blocks on the database: queued, sent by the coordinator's thread; while the
    // database is away the queue waits (at most 4,096 changes, the oldest dropped first), and
    // a batch whose sending fails is dropped: the "reconcile" each replica gets when its link
    // comes back, and the replicas' periodic reconcile, cover what was lost.
    virtual void publish(std::string_view kind, std::string_view payload) = 0;
    virtual Role role() const = 0;
    bool is_leader() const { return role() == Role::kLeader; }
    virtual const std::string& replica() const = 0;
};

// One manager alone: the leader from start() to stop(); publish() calls on_change at once.
std::unique_ptr<Coordinator> make_local_coordinator(std::string replica);

struct PgCoordinatorOptions {
    std::string dsn;      // postgres://... (libpq connection string or URI)
    std::string replica;  // this replica's name, e.g. its gRPC address
    // How often a follower tries the leader lock and a leader checks its connection: the
    // longest a dead leader's work waits for a successor (the server frees its lock when its
    // connection ends; a killed process's connection ends at once, a lost host's within the
    // TCP keepalive below).
    std::chrono::milliseconds tick{500};
    // Reconnect backoff after the database went away: doubles from tick up to this.
    std::chrono::milliseconds reconnect_max{5000};
    int64_t lock_key = 0x7069636b65746c64;  // "picketld": one leader per database
    std::string channel = "picket_change";
};

// INVALID_ARGUMENT for an empty dsn or replica name. Does not connect: start() does, and keeps
// trying while the database is away (role kUnavailable meanwhile).
absl::StatusOr<std::unique_ptr<Coordinator>> make_pg_coordinator(PgCoordinatorOptions options);

// NOTIFY payloads: "kind\torigin\tpayload" (kind and origin without tabs; at most 7,900 bytes
// in all, PostgreSQL's limit is 8,000). Exposed for tests.
std::string encode_change(const Change& c);
// false for a payload of another shape (another program on the channel): ignored.
bool decode_change(std::string_view text, Change* out);

}  // namespace picket::manager::ha
