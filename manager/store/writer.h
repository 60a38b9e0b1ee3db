// Store::Impl (internal to manager/store): the one writer thread that batches queued write
// operations into transactions (group commit), and the pool of read-only connections that
// reads run on. Queries (sensors.cc, bundles.cc, ...) hand it closures over a Conn.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "manager/store/sqlite.h"
#include "manager/store/store.h"

namespace picket::manager::store {

struct WriteOp {
    std::function<absl::Status(Conn&)> run;
    std::function<void(const absl::Status&)> done;
    std::chrono::steady_clock::time_point enqueued{};  // set by enqueue(): op latency
    bool waited = false;  // a caller blocks until it commits (write_status, write)
};

class Store::Impl {
public:
    // Starts the writer thread, which owns `writer` from then on.
    Impl(std::string path, StoreOptions opt, std::unique_ptr<Conn> writer);
    // Completes every queued write, then stops the writer thread.
    ~Impl();

    void enqueue(WriteOp op);

    // Runs fn on the writer thread; returns after its transaction committed (or failed).
    absl::Status write_status(std::function<absl::Status(Conn&)> fn);

    // The op's value is delivered only once its transaction committed.
    template <typename T>
    absl::StatusOr<T> write(std::function<absl::StatusOr<T>(Conn&)> fn) {
        struct State {
            std::optional<absl::StatusOr<T>> value;
            std::promise<absl::StatusOr<T>> promise;
        };
        auto st = std::make_shared<State>();
        auto fut = st->promise.get_future();
        enqueue({[st, fn = std::move(fn)](Conn& c) {
                     st->value = fn(c);
                     return st->value->status();
                 },
                 [st](const absl::Status& s) {
                     if (s.ok()) {
                         st->promise.set_value(std::move(*st->value));
                     } else {
                         st->promise.set_value(s);
                     }
                 },
                 {},
                 true});
        return fut.get();
    }

    // Runs fn inside a read transaction (one snapshot) on a pooled read-only connection.
    template <typename F>
    auto read(F&& fn) -> decltype(fn(std::declval<Conn&>())) {
        absl::StatusOr<std::unique_ptr<Conn>> c = lease();
        if (!c.ok()) {
            return c.status();
        }
        decltype(fn(std::declval<Conn&>())) result = absl::InternalError("read not run");
        absl::Status begin = (*c)->exec("BEGIN");
        if (begin.ok()) {
            result = fn(**c);
            (*c)->exec("COMMIT").IgnoreError();  // read-only: nothing to lose
        } else {
            result = begin;
        }
        give_back(std::move(*c));
        return result;
    }

    WriterStats stats() const;
    const StoreOptions& options() const { return opt_; }

private:
    // An idle read connection, or a new one.
    absl::StatusOr<std::unique_ptr<Conn>> lease();
    // Keeps the connection idle unless read_pool_idle are already.
    void give_back(std::unique_ptr<Conn> c);

    void writer_loop();
    void run_batch(std::vector<WriteOp>& batch);

    std::string path_;
    StoreOptions opt_;
    std::unique_ptr<Conn> writer_;  // owned by the writer thread after construction
    int64_t stats_conflicts_ = 0;   // writer thread: retries not yet added to stats_

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<WriteOp> queue_;
    int waited_queued_ = 0;  // ops in queue_ whose caller blocks on them
    bool stopping_ = false;
    WriterStats stats_;
    std::thread thread_;

    std::mutex pool_mu_;
    std::vector<std::unique_ptr<Conn>> idle_;
};

}  // namespace picket::manager::store
