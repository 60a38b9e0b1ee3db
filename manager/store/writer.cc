#include "manager/store/writer.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "common/strings.h"

namespace picket::manager::store {

using strings::cat;

Store::Impl::Impl(std::string path, StoreOptions opt, std::unique_ptr<Conn> writer)
    : path_(std::move(path)), opt_(std::move(opt)), writer_(std::move(writer)) {
    thread_ = std::thread([this] { writer_loop(); });
}

Store::Impl::~Impl() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void Store::Impl::enqueue(WriteOp op) {
    if (opt_.observe_op) {
        op.enqueued = std::chrono::steady_clock::now();
    }
    bool wake = false;
    {
        std::lock_guard lock(mu_);
        // The writer needs waking only when it may be idle (the queue was empty), or when it
        // lingers and this op ends the linger: an async op arriving during a linger would only
        // make it wake and sleep again (a context switch per sensor report at 10,000 sensors).
        wake = queue_.empty() || op.waited ||
               static_cast<int>(queue_.size()) + 1 >= opt_.max_batch_ops;
        waited_queued_ += op.waited ? 1 : 0;
        queue_.push_back(std::move(op));
    }
    if (wake) {
        cv_.notify_one();
    }
}

absl::Status Store::Impl::write_status(std::function<absl::Status(Conn&)> fn) {
    auto p = std::make_shared<std::promise<absl::Status>>();
    auto fut = p->get_future();
    enqueue({std::move(fn), [p](const absl::Status& st) { p->set_value(st); }, {}, true});
    return fut.get();
}

absl::StatusOr<std::unique_ptr<Conn>> Store::Impl::lease() {
    {
        std::lock_guard lock(pool_mu_);
        if (!idle_.empty()) {
            std::unique_ptr<Conn> c = std::move(idle_.back());
            idle_.pop_back();
            return c;
        }
    }
    return Conn::open(path_, true, opt_);
}

void Store::Impl::give_back(std::unique_ptr<Conn> c) {
    std::lock_guard lock(pool_mu_);
    if (static_cast<int>(idle_.size()) < opt_.read_pool_idle) {
        idle_.push_back(std::move(c));
    }
}

Store::WriterStats Store::Impl::stats() const {
    std::lock_guard lock(mu_);
    return stats_;
}

void Store::Impl::writer_loop() {
    std::vector<WriteOp> batch;
    for (;;) {
        {
            std::unique_lock lock(mu_);
            cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) {
                return;  // stopping and drained
            }
            auto full = [this] {
                return stopping_ || static_cast<int>(queue_.size()) >= opt_.max_batch_ops;
            };
            if (opt_.batch_linger.count() > 0 && !full()) {
                cv_.wait_for(lock, opt_.batch_linger, full);
            }
            // Nobody waits on what is queued (reports, the links' target updates): gather more
            // for one transaction (one fsync) until someone does, the batch is full, or the
            // linger is over. At 10,000 sensors reporting every 5 s this turns hundreds of
            // commits a second into tens.
            if (opt_.async_linger.count() > 0 && waited_queued_ == 0 && !full()) {
                cv_.wait_for(lock, opt_.async_linger,
                             [this, &full] { return waited_queued_ > 0 || full(); });
            }
            while (!queue_.empty() && static_cast<int>(batch.size()) < opt_.max_batch_ops) {
                waited_queued_ -= queue_.front().waited ? 1 : 0;
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
        }
        run_batch(batch);
        batch.clear();
    }
}

// Each op runs inside its own savepoint so a failing op (a NOT_FOUND, a bad transition)
// leaves the rest of the batch intact. Results are handed out only after COMMIT.
//
// PostgreSQL: an op chosen as a deadlock's victim (40P01) or failing serialization (40001) is
// not failed: it is rolled back to its savepoint, the ops before it are committed (which
// releases this transaction's locks, so the other side of the cycle goes on), and a new
// transaction starts with it, up to kConflictAttempts times. The other replica's writer holds
// rows of the same tables (a deploy's targets, the reports' sensor rows) in another order.
void Store::Impl::run_batch(std::vector<WriteOp>& batch) {
    constexpr int kConflictAttempts = 8;
    Conn& c = *writer_;
    std::vector<absl::Status> results(batch.size());
    int64_t txns = 0;
    size_t i = 0;
    int conflicts = 0;  // of batch[i], the op that starts the next transaction
    while (i < batch.size()) {
        if (conflicts > 0) {
            // A short, growing pause: the transaction that won the lock commits meanwhile.
            std::this_thread::sleep_for(std::chrono::milliseconds(2 << std::min(conflicts, 6)));
        }
        size_t first = i;
        auto txn_start = std::chrono::steady_clock::now();
        absl::Status st = c.exec("BEGIN IMMEDIATE");
        if (!st.ok()) {
            c.forget_uncommitted_ids();
            for (; i < batch.size(); ++i) {
                results[i] = st;
            }
            break;
        }
        ++txns;
        bool lost = false;
        bool retry = false;
        bool next_savepoint = false;  // the previous op's RELEASE opened this op's savepoint
        for (; i < batch.size() && !lost && !retry; ++i) {
            absl::Status r = next_savepoint ? absl::OkStatus() : c.exec("SAVEPOINT op");
            next_savepoint = false;
            if (r.ok()) {
                r = batch[i].run(c);
                if (r.ok()) {
                    // PostgreSQL: one round trip ends this op's savepoint and opens the next
                    // op's (a round trip is most of an op's cost there).
                    const bool next = c.postgres() && i + 1 < batch.size();
                    r = c.exec(next ? "RELEASE op; SAVEPOINT op" : "RELEASE op");
                    next_savepoint = next && r.ok();
                }
            }
            const bool conflict = !r.ok() && (c.sqlstate() == "40P01" || c.sqlstate() == "40001");
            if (conflict && c.in_transaction() && conflicts + 1 < kConflictAttempts) {
                c.forget_uncommitted_ids();
                c.exec("ROLLBACK TO op").IgnoreError();
                c.exec("RELEASE op").IgnoreError();
                ++conflicts;
                ++stats_conflicts_;
                retry = true;
                break;  // commit batch[first, i), then batch[i] again in a new transaction
            }
            conflicts = 0;
            if (!r.ok()) {
                if (!c.in_transaction()) {
                    // SQLite rolled the whole transaction back (I/O error, disk full in
                    // some paths): the earlier ops of this transaction are gone too.
                    lost = true;
                    c.forget_uncommitted_ids();
                    for (size_t j = first; j < i; ++j) {
                        if (results[j].ok()) {
                            results[j] = absl::Status(
                                r.code(), cat("rolled back with its batch: ", r.message()));
                        }
                    }
                } else {
                    c.forget_uncommitted_ids();
                    c.exec("ROLLBACK TO op").IgnoreError();
                    c.exec("RELEASE op").IgnoreError();
                }
            }
            results[i] = r;
        }
        if (!lost) {
            st = c.exec("COMMIT");
            if (!st.ok()) {
                c.forget_uncommitted_ids();
                if (c.in_transaction()) {
                    c.exec("ROLLBACK").IgnoreError();
                }
                for (size_t j = first; j < i; ++j) {
                    if (results[j].ok()) {
                        results[j] = st;
                    }
                }
            }
        }
        if (opt_.observe_txn) {
            opt_.observe_txn(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - txn_start)
                    .count());
        }
    }
    {
        // Counted before anyone is told: a caller that reads writer_stats() after its
        // write returned must see that write counted.
        std::lock_guard lock(mu_);
        stats_.ops += static_cast<int64_t>(batch.size());
        stats_.transactions += txns;
        stats_.conflicts_retried += std::exchange(stats_conflicts_, 0);
    }
    if (opt_.observe_op) {
        auto now = std::chrono::steady_clock::now();
        for (const WriteOp& op : batch) {
            opt_.observe_op(std::chrono::duration<double>(now - op.enqueued).count());
        }
    }
    for (size_t j = 0; j < batch.size(); ++j) {
        if (batch[j].done) {
            batch[j].done(results[j]);
        }
    }
}

}  // namespace picket::manager::store
