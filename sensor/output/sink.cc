// make_sink and the regular-file sink: a 64 KiB buffer of whole lines written with write(2)
// to a file opened O_APPEND, so that a short write or a full disk can be undone to the last
// whole line instead of leaving half a record for the next one to continue.
#include "sensor/output/sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "common/log.h"
#include "sensor/output/sink_internal.h"

namespace picket::sensor::output {
namespace internal {

std::string resolve_path(const SinkOptions& options) {
    if (!options.filename.empty() && options.filename.front() == '/') {
        return options.filename;
    }
    return options.log_dir + "/" + options.filename;
}

std::string errno_text(int err) {
    char buf[256];
    // GNU strerror_r: returns the message, which may or may not be in buf.
    return strerror_r(err, buf, sizeof(buf));
}

namespace {

constexpr size_t kBufferBytes = 64 * 1024;

class FileSink final : public EveSink {
public:
    FileSink(std::string path, uint32_t retry_sec) : path_(std::move(path)), retry_(retry_sec) {
        name_ = path_;
        buf_.reserve(kBufferBytes);
        open_file();
    }
    ~FileSink() override {
        flush();
        close_file();
    }
    FileSink(const FileSink&) = delete;
    FileSink& operator=(const FileSink&) = delete;

    void write(std::string_view record) override {
        if (fd_ < 0 && !(Clock::now() >= next_retry_ && open_file())) {
            ++dropped_;
            return;
        }
        buf_.append(record);
        buf_.push_back('\n');
        ends_.push_back(buf_.size());
        if (buf_.size() >= kBufferBytes) {
            flush();
        }
    }

    void flush() override {
        if (fd_ < 0 || buf_.empty()) {
            return;
        }
        size_t done = 0;
        int err = 0;
        while (done < buf_.size()) {
            const ssize_t n = ::write(fd_, buf_.data() + done, buf_.size() - done);
            if (n > 0) {
                done += static_cast<size_t>(n);
            } else if (n < 0 && errno == EINTR) {
                continue;
            } else {
                err = n < 0 ? errno : EIO;
                break;
            }
        }
        if (err == 0) {
            written_ += ends_.size();
            clear_buffer();
            if (!healthy_) {
                healthy_ = true;
                log::info(path_ + ": writable again");
            }
            return;
        }
        // Keep the records that went out whole; cut the file back to the end of the last one.
        const size_t whole =
            static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), done) - ends_.begin());
        const size_t keep = whole == 0 ? 0 : ends_[whole - 1];
        if (done > keep) {
            // O_APPEND leaves the offset at the end of what this write appended; measuring
            // from there (not from a size remembered at open) stays right after a
            // copytruncate.
            const off_t end = ::lseek(fd_, 0, SEEK_CUR);
            const off_t cut = end - static_cast<off_t>(done - keep);
            if (end < 0 || cut < 0 || ::ftruncate(fd_, cut) != 0) {
                broken_line_ = true;
            }
        }
        written_ += whole;
        dropped_ += ends_.size() - whole;
        clear_buffer();
        fail("cannot write", err);
    }

    void reopen() override {
        flush();
        close_file();
        open_file();
    }

private:
    bool open_file() {
        const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
        if (fd < 0) {
            fail("cannot open for writing", errno);
            return false;
        }
        fd_ = fd;
        if (broken_line_) {
            // A cut that failed (a device, a pipe) may have left half a line: end it, so
            // that the next record starts a line of its own.
            buf_.push_back('\n');
            broken_line_ = false;
        }
        return true;
    }

    void close_file() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

    void clear_buffer() {
        buf_.clear();
        ends_.clear();
    }

    void fail(const char* what, int err) {
        close_file();
        if (healthy_) {
            log::warning(path_ + ": " + what + ": " + errno_text(err) +
                         "; dropping EVE records until it is writable again (retrying every " +
                         std::to_string(retry_) + " s)");
        }
        healthy_ = false;
        next_retry_ = Clock::now() + std::chrono::seconds(retry_);
    }

    std::string path_;
    uint32_t retry_;
    int fd_ = -1;
    std::string buf_;
    // End offset in buf_ of each record (after its newline).
    std::vector<size_t> ends_;
    bool broken_line_ = false;
    Clock::time_point next_retry_{};
};

}  // namespace

std::unique_ptr<EveSink> make_file_sink(const SinkOptions& options) {
    if (options.filename.empty()) {
        throw std::invalid_argument("eve-log.filename: must not be empty");
    }
    return std::make_unique<FileSink>(resolve_path(options), options.retry_sec);
}

}  // namespace internal

std::unique_ptr<EveSink> make_sink(const SinkOptions& options) {
    switch (options.filetype) {
        case EveFiletype::kRegular:
            return internal::make_file_sink(options);
        case EveFiletype::kUnixStream:
            return internal::make_unix_sink(options, true);
        case EveFiletype::kUnixDgram:
            return internal::make_unix_sink(options, false);
        case EveFiletype::kSyslog:
            return internal::make_syslog_sink(options);
        case EveFiletype::kRedis:
            return internal::make_redis_sink(options);
    }
    throw std::invalid_argument("eve-log.filetype: unknown filetype");
}

}  // namespace picket::sensor::output
