#include "manager/ha/coordinator.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/log.h"

namespace picket::manager::ha {

std::string_view to_string(Role r) {
    switch (r) {
        case Role::kLeader:
            return "leader";
        case Role::kFollower:
            return "follower";
        case Role::kUnavailable:
            return "unavailable";
    }
    return "unknown";
}

namespace {

constexpr size_t kMaxNotifyPayload = 7900;

// ---- One manager alone.
class LocalCoordinator final : public Coordinator {
public:
    explicit LocalCoordinator(std::string replica) : replica_(std::move(replica)) {}

    void start(ChangeFn on_change, RoleFn on_role) override {
        std::lock_guard<std::mutex> lock(mu_);
        on_change_ = std::move(on_change);
        role_ = Role::kLeader;
        if (on_role) {
            on_role(Role::kLeader);
        }
    }
    void stop() override {
        std::lock_guard<std::mutex> lock(mu_);
        on_change_ = nullptr;
        role_ = Role::kUnavailable;
    }
    // On the publisher's thread, outside the lock: a handler may publish in turn.
    void publish(std::string_view kind, std::string_view payload) override {
        ChangeFn fn;
        {
            std::lock_guard<std::mutex> lock(mu_);
            fn = on_change_;
        }
        if (fn) {
            fn(Change{std::string(kind), std::string(payload), replica_});
        }
    }
    Role role() const override {
        std::lock_guard<std::mutex> lock(mu_);
        return role_;
    }
    const std::string& replica() const override { return replica_; }

private:
    const std::string replica_;
    mutable std::mutex mu_;
    ChangeFn on_change_;
    Role role_ = Role::kUnavailable;
};

// ---- Replicas on one PostgreSQL database.
class PgCoordinator final : public Coordinator {
public:
    explicit PgCoordinator(PgCoordinatorOptions o) : opt_(std::move(o)) {}
    ~PgCoordinator() override { stop(); }

    void start(ChangeFn on_change, RoleFn on_role) override {
        std::lock_guard<std::mutex> lock(mu_);
        if (thread_.joinable()) {
            return;
        }
        on_change_ = std::move(on_change);
        on_role_ = std::move(on_role);
        if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
            wake_[0] = wake_[1] = -1;
        }
        stopping_ = false;
        thread_ = std::thread([this] { run(); });
    }

    void stop() override {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (!thread_.joinable()) {
                return;
            }
            stopping_ = true;
        }
        wake();
        thread_.join();
        for (int& fd : wake_) {
            if (fd >= 0) {
                close(fd);
                fd = -1;
            }
        }
    }

    void publish(std::string_view kind, std::string_view payload) override {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (outbox_.size() >= kMaxOutbox) {
                outbox_.pop_front();  // the reconcile covers what was dropped
            }
            outbox_.push_back(
                encode_change(Change{std::string(kind), std::string(payload), opt_.replica}));
        }
        wake();
    }

    Role role() const override { return role_.load(std::memory_order_acquire); }
    const std::string& replica() const override { return opt_.replica; }

private:
    static constexpr size_t kMaxOutbox = 4096;

    void wake() {
        if (wake_[1] >= 0) {
            const char b = 1;
            [[maybe_unused]] ssize_t n = write(wake_[1], &b, 1);
        }
    }

    void set_role(Role r) {
        if (role_.exchange(r, std::memory_order_acq_rel) != r) {
            log::info("manager replica " + opt_.replica + ": " + std::string(to_string(r)));
            if (on_role_) {
                on_role_(r);
            }
        }
    }

    // Default keepalives so that a replica behind a lost link learns it within ~15 s; the
    // DSN's own values win (it is expanded last).
    PGconn* connect() {
        const char* keys[] = {
            "connect_timeout",  "keepalives",       "keepalives_idle", "keepalives_interval",
            "keepalives_count", "application_name", "dbname",          nullptr};
        const char* vals[] = {"5", "1", "5", "2", "3", "picket-manager", opt_.dsn.c_str(), nullptr};
        PGconn* c = PQconnectdbParams(keys, vals, 1);
        if (c == nullptr || PQstatus(c) != CONNECTION_OK) {
            std::string why = c != nullptr ? PQerrorMessage(c) : "out of memory";
            while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) {
                why.pop_back();
            }
            if (why != last_error_) {
                log::warning("manager replica " + opt_.replica + ": database unavailable: " + why);
                last_error_ = why;
            }
            PQfinish(c);
            return nullptr;
        }
        last_error_.clear();
        return c;
    }

    // Runs one statement; false (and the connection dropped) when it failed.
    bool exec(PGconn*& c, const char* sql, int n, const char* const* params,
              std::string* first_value = nullptr) {
        PGresult* r = PQexecParams(c, sql, n, nullptr, params, nullptr, nullptr, 0);
        const ExecStatusType st = PQresultStatus(r);
        const bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
        if (ok && first_value != nullptr && PQntuples(r) > 0) {
            *first_value = PQgetvalue(r, 0, 0);
        }
        if (!ok) {
            log::warning("manager replica " + opt_.replica + ": " + sql + ": " + PQerrorMessage(c));
        }
        PQclear(r);
        if (!ok) {
            PQfinish(c);
            c = nullptr;
        }
        return ok;
    }

    void deliver(const Change& ch) {
        if (on_change_) {
            on_change_(ch);
        }
    }

    void run() {
        using clock = std::chrono::steady_clock;
        PGconn* c = nullptr;
        std::chrono::milliseconds backoff = opt_.tick;
        bool was_connected = false;
        auto next_tick = clock::now();
        std::string listen_sql = "LISTEN \"" + opt_.channel + "\"";
        const std::string key = std::to_string(opt_.lock_key);
        for (;;) {
            {
                std::lock_guard<std::mutex> lock(mu_);
                if (stopping_) {
                    break;
                }
            }
            if (c == nullptr) {
                c = connect();
                if (c == nullptr || !exec(c, listen_sql.c_str(), 0, nullptr)) {
                    set_role(Role::kUnavailable);
                    wait_for(backoff);
                    backoff = std::min(backoff * 2, opt_.reconnect_max);
                    continue;
                }
                backoff = opt_.tick;
                set_role(Role::kFollower);
                next_tick = clock::now();
                if (was_connected) {
                    // Whatever was published while this replica was away is lost to it.
                    deliver(Change{"reconcile", "", opt_.replica});
                    // The replica whose link failed is the doubtful one: the others get three
                    // ticks to take the lead first.
                    next_tick += 3 * opt_.tick;
                }
                was_connected = true;
            }
            // Outgoing changes.
            std::deque<std::string> out;
            {
                std::lock_guard<std::mutex> lock(mu_);
                out.swap(outbox_);
            }
            bool failed = false;
            for (const std::string& text : out) {
                const char* params[] = {opt_.channel.c_str(), text.c_str()};
                if (!exec(c, "SELECT pg_notify($1, $2)", 2, params)) {
                    failed = true;
                    break;
                }
            }
            if (failed) {
                set_role(Role::kUnavailable);
                continue;
            }
            // Leadership: a follower tries the lock, a leader proves its connection (its
            // lock lives exactly as long as it).
            if (clock::now() >= next_tick) {
                next_tick = clock::now() + opt_.tick;
                const char* params[] = {key.c_str()};
                std::string got;
                if (role() == Role::kLeader) {
                    if (!exec(c, "SELECT 1", 0, nullptr)) {
                        set_role(Role::kUnavailable);
                        continue;
                    }
                } else if (!exec(c, "SELECT pg_try_advisory_lock($1::bigint)", 1, params, &got)) {
                    set_role(Role::kUnavailable);
                    continue;
                } else if (got == "t") {
                    set_role(Role::kLeader);
                }
            }
            // Incoming changes (also those that arrived during the statements above).
            if (PQconsumeInput(c) == 0) {
                log::warning("manager replica " + opt_.replica +
                             ": database link lost: " + PQerrorMessage(c));
                PQfinish(c);
                c = nullptr;
                set_role(Role::kUnavailable);
                continue;
            }
            while (PGnotify* n = PQnotifies(c)) {
                Change ch;
                if (decode_change(n->extra, &ch)) {
                    deliver(ch);
                }
                PQfreemem(n);
            }
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - clock::now());
            pollfd fds[2] = {{PQsocket(c), POLLIN, 0}, {wake_[0], POLLIN, 0}};
            if (poll(fds, wake_[0] >= 0 ? 2 : 1,
                     static_cast<int>(std::max<int64_t>(0, left.count()))) > 0 &&
                (fds[1].revents & POLLIN) != 0) {
                char buf[64];
                while (read(wake_[0], buf, sizeof buf) > 0) {
                }
            }
        }
        if (c != nullptr) {
            if (role() == Role::kLeader) {
                const char* params[] = {key.c_str()};
                (void)exec(c, "SELECT pg_advisory_unlock($1::bigint)", 1, params);
            }
            PQfinish(c);
        }
        set_role(Role::kUnavailable);
    }

    // Sleeps up to d, or until stop()/publish() wakes the thread.
    void wait_for(std::chrono::milliseconds d) {
        pollfd fd{wake_[0], POLLIN, 0};
        if (wake_[0] < 0) {
            std::this_thread::sleep_for(d);
            return;
        }
        if (poll(&fd, 1, static_cast<int>(d.count())) > 0) {
            char buf[64];
            while (read(wake_[0], buf, sizeof buf) > 0) {
            }
        }
    }

    const PgCoordinatorOptions opt_;
    std::mutex mu_;
    bool stopping_ = false;
    std::deque<std::string> outbox_;
    ChangeFn on_change_;
    RoleFn on_role_;
    std::atomic<Role> role_{Role::kUnavailable};
    std::thread thread_;
    int wake_[2] = {-1, -1};
    std::string last_error_;
};

}  // namespace

std::unique_ptr<Coordinator> make_local_coordinator(std::string replica) {
    return std::make_unique<LocalCoordinator>(std::move(replica));
}

absl::StatusOr<std::unique_ptr<Coordinator>> make_pg_coordinator(PgCoordinatorOptions options) {
    if (options.dsn.empty()) {
        return absl::InvalidArgumentError("coordinator: empty database address");
    }
    if (options.replica.empty() || options.replica.find('\t') != std::string::npos) {
        return absl::InvalidArgumentError(
            "coordinator: the replica name must be non-empty and without tabs");
    }
    if (options.tick.count() <= 0 || options.reconnect_max < options.tick) {
        return absl::InvalidArgumentError(
            "coordinator: tick must be positive and at most reconnect_max");
    }
    return std::unique_ptr<Coordinator>(new PgCoordinator(std::move(options)));
}

std::string encode_change(const Change& c) {
    std::string s;
    s.reserve(c.kind.size() + c.origin.size() + c.payload.size() + 2);
    s += c.kind;
    s += '\t';
    s += c.origin;
    s += '\t';
    s += c.payload;
    if (s.size() > kMaxNotifyPayload) {
        s.resize(kMaxNotifyPayload);
    }
    return s;
}

bool decode_change(std::string_view text, Change* out) {
    const size_t a = text.find('\t');
    if (a == std::string_view::npos || a == 0) {
        return false;
    }
    const size_t b = text.find('\t', a + 1);
    if (b == std::string_view::npos) {
        return false;
    }
    out->kind = std::string(text.substr(0, a));
    out->origin = std::string(text.substr(a + 1, b - a - 1));
    out->payload = std::string(text.substr(b + 1));
    return true;
}

}  // namespace picket::manager::ha
