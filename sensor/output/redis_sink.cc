// The redis sink: LPUSH / RPUSH each record to a list, or PUBLISH it to a channel, over one
// non-blocking hiredis connection. write() only appends the command to hiredis' output buffer
// (pipelining); flush() sends the buffer and reads the replies for at most kIoBudget, so a
// slow or absent server costs dropped records, never a stalled output thread. A record counts
// as written when its reply arrives, as dropped on an error reply or when the connection dies
// before the reply.
#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "common/log.h"
#include "sensor/output/sink_internal.h"

namespace picket::sensor::output::internal {
namespace {

// The longest flush() waits for the socket.
constexpr std::chrono::milliseconds kIoBudget{200};
// A connection not established by then is given up (and retried after the backoff).
constexpr std::chrono::milliseconds kConnectTimeout{1000};
// Unsent command bytes beyond which write() pushes them out without waiting.
constexpr size_t kPushBytes = 64 * 1024;

const char* mode_command(RedisOptions::Mode mode) {
    switch (mode) {
        case RedisOptions::Mode::kLpush:
            return "LPUSH";
        case RedisOptions::Mode::kRpush:
            return "RPUSH";
        case RedisOptions::Mode::kPublish:
            return "PUBLISH";
    }
    return "LPUSH";
}

const char* mode_name(RedisOptions::Mode mode) {
    switch (mode) {
        case RedisOptions::Mode::kLpush:
            return "lpush";
        case RedisOptions::Mode::kRpush:
            return "rpush";
        case RedisOptions::Mode::kPublish:
            return "publish";
    }
    return "lpush";
}

class RedisSink final : public EveSink {
public:
    explicit RedisSink(const RedisOptions& options)
        : options_(options),
          command_(mode_command(options.mode)),
          min_backoff_(std::max<uint32_t>(options.reconnect_min_ms, 1)),
          max_backoff_(std::max(options.reconnect_max_ms, min_backoff_)),
          max_pending_(std::max<uint32_t>(options.max_pending, 1)),
          backoff_ms_(min_backoff_) {
        name_ = "redis " + options.server + ":" + std::to_string(options.port) + " " +
                mode_name(options.mode) + " " + options.key;
        connect_now();
    }
    ~RedisSink() override {
        if (ctx_ != nullptr && pending_ > 0) {
            pump(Clock::now() + kIoBudget);
        }
        if (ctx_ != nullptr) {
            redisFree(ctx_);
        }
    }
    RedisSink(const RedisSink&) = delete;
    RedisSink& operator=(const RedisSink&) = delete;

    void write(std::string_view record) override {
        if (ctx_ == nullptr && !(Clock::now() >= next_attempt_ && connect_now())) {
            ++dropped_;
            return;
        }
        if (pending_ >= max_pending_) {
            pump(Clock::now());
            if (ctx_ == nullptr || pending_ >= max_pending_) {
                ++dropped_;
                if (!overflow_warned_ && ctx_ != nullptr) {
                    overflow_warned_ = true;
                    log::warning(name_ + ": " + std::to_string(max_pending_) +
                                 " records wait for Redis to acknowledge them; dropping more");
                }
                return;
            }
        }
        if (redisAppendCommand(ctx_, "%s %b %b", command_, options_.key.data(), options_.key.size(),
                               record.data(), record.size()) != REDIS_OK) {
            ++dropped_;
            return;
        }
        ++pending_;
        unsent_ += record.size() + options_.key.size() + 32;
        if (unsent_ >= kPushBytes) {
            pump(Clock::now());
        }
    }

    void flush() override {
        if (ctx_ != nullptr) {
            pump(Clock::now() + kIoBudget);
        }
    }

    // Nothing to rotate: the connection stays (closing it would lose the unacknowledged
    // records); a sink waiting to reconnect tries at once.
    void reopen() override {
        if (ctx_ == nullptr) {
            next_attempt_ = Clock::now();
        }
    }

private:
    bool connect_now() {
        ctx_ = redisConnectNonBlock(options_.server.c_str(), options_.port);
        if (ctx_ == nullptr) {
            fail("cannot allocate a connection");
            return false;
        }
        if (ctx_->err != 0) {
            fail(std::string("cannot connect: ") + ctx_->errstr);
            return false;
        }
        connecting_ = true;
        connect_deadline_ = Clock::now() + kConnectTimeout;
        return true;
    }

    // Waits for the socket until deadline (now: not at all); false when the time is up.
    bool wait(short events, Clock::time_point deadline) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        pollfd p{ctx_->fd, events, 0};
        int rc;
        do {
            rc = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
        } while (rc < 0 && errno == EINTR);
        return rc > 0;
    }

    // Drives the connection until everything is sent and acknowledged or deadline passes.
    void pump(Clock::time_point deadline) {
        if (connecting_) {
            const auto until = std::min(deadline, connect_deadline_);
            if (!wait(POLLOUT, until)) {
                if (Clock::now() >= connect_deadline_) {
                    fail("cannot connect: timed out");
                }
                return;
            }
            int err = 0;
            socklen_t len = sizeof(err);
            if (::getsockopt(ctx_->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
                err = errno;
            }
            if (err != 0) {
                fail("cannot connect: " + errno_text(err));
                return;
            }
            connecting_ = false;
            backoff_ms_ = min_backoff_;
            if (!healthy_) {
                healthy_ = true;
                log::info(name_ + ": connected again");
            }
        }
        for (;;) {
            int sent_all = 0;
            if (redisBufferWrite(ctx_, &sent_all) != REDIS_OK) {
                fail(std::string("cannot send: ") + ctx_->errstr);
                return;
            }
            if (sent_all) {
                unsent_ = 0;
            }
            if (pending_ > 0) {
                if (redisBufferRead(ctx_) != REDIS_OK) {
                    fail(std::string("cannot read: ") + ctx_->errstr);
                    return;
                }
                if (!take_replies()) {
                    return;
                }
            }
            if (pending_ == 0 && sent_all) {
                overflow_warned_ = false;
                return;
            }
            if (!wait(static_cast<short>(POLLIN | (sent_all ? 0 : POLLOUT)), deadline)) {
                return;
            }
        }
    }

    bool take_replies() {
        while (pending_ > 0) {
            void* r = nullptr;
            if (redisGetReplyFromReader(ctx_, &r) != REDIS_OK) {
                fail(std::string("bad reply: ") + ctx_->errstr);
                return false;
            }
            if (r == nullptr) {
                return true;
            }
            auto* reply = static_cast<redisReply*>(r);
            --pending_;
            if (reply->type == REDIS_REPLY_ERROR) {
                ++dropped_;
                if (!error_warned_) {
                    error_warned_ = true;
                    log::warning(name_ + ": " + command_ +
                                 " refused: " + std::string(reply->str, reply->len) +
                                 "; dropping the records it refuses");
                }
            } else {
                ++written_;
                error_warned_ = false;
            }
            freeReplyObject(reply);
        }
        return true;
    }

    // The connection is lost: what it had not acknowledged is dropped.
    void fail(const std::string& why) {
        dropped_ += pending_;
        pending_ = 0;
        unsent_ = 0;
        connecting_ = false;
        if (ctx_ != nullptr) {
            redisFree(ctx_);
            ctx_ = nullptr;
        }
        if (healthy_) {
            log::warning(name_ + ": " + why + "; dropping EVE records while Redis is away " +
                         "(reconnecting after " + std::to_string(min_backoff_) + " ms, up to " +
                         std::to_string(max_backoff_) + " ms between attempts)");
        }
        healthy_ = false;
        next_attempt_ = Clock::now() + std::chrono::milliseconds(backoff_ms_);
        backoff_ms_ = std::min(backoff_ms_ * 2, max_backoff_);
    }

    RedisOptions options_;
    const char* command_;
    uint32_t min_backoff_;
    uint32_t max_backoff_;
    uint32_t max_pending_;
    uint32_t backoff_ms_;
    redisContext* ctx_ = nullptr;
    bool connecting_ = false;
    Clock::time_point connect_deadline_{};
    Clock::time_point next_attempt_{};
    // Commands appended and not yet answered; their bytes not yet known to be sent.
    uint32_t pending_ = 0;
    size_t unsent_ = 0;
    bool overflow_warned_ = false;
    bool error_warned_ = false;
};

}  // namespace

std::unique_ptr<EveSink> make_redis_sink(const SinkOptions& options) {
    const RedisOptions& r = options.redis;
    if (r.server.empty()) {
        throw std::invalid_argument("eve-log.redis.server: must not be empty");
    }
    if (r.port == 0) {
        throw std::invalid_argument("eve-log.redis.port: must be 1-65535, not 0");
    }
    if (r.key.empty()) {
        throw std::invalid_argument("eve-log.redis.key: must not be empty");
    }
    return std::make_unique<RedisSink>(r);
}

}  // namespace picket::sensor::output::internal
