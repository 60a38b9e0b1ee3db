// Unix-socket sinks: unix_stream (record + '\n'), unix_dgram (one datagram per record) and
// syslog (a datagram "<PRI>IDENT: JSON" to the local daemon's socket, RFC 3164's local form
// without timestamp and hostname: the daemon adds them, as it does for glibc's syslog(3)).
// Every socket is non-blocking: a receiver that does not read costs dropped records, never a
// stalled output thread.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "common/log.h"
#include "sensor/output/sink_internal.h"

namespace picket::sensor::output::internal {
namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i])) {
            return false;
        }
    }
    return true;
}

// syslog(3)'s facility names and codes (LOG_KERN >> 3 ...).
constexpr std::array<std::pair<std::string_view, int>, 20> kFacilities{{
    {"kern", 0},      {"user", 1},    {"mail", 2},    {"daemon", 3},  {"auth", 4},
    {"syslog", 5},    {"lpr", 6},     {"news", 7},    {"uucp", 8},    {"cron", 9},
    {"authpriv", 10}, {"ftp", 11},    {"local0", 16}, {"local1", 17}, {"local2", 18},
    {"local3", 19},   {"local4", 20}, {"local5", 21}, {"local6", 22}, {"local7", 23},
}};

// Suricata's eve-log.level names, in syslog severity order (LOG_EMERG = 0 .. LOG_DEBUG = 7).
constexpr std::array<std::string_view, 8> kLevels{"Emergency", "Alert",  "Critical", "Error",
                                                  "Warning",   "Notice", "Info",     "Debug"};

int syslog_priority(const SyslogOptions& o) {
    int facility = -1;
    for (const auto& [name, code] : kFacilities) {
        if (iequals(name, o.facility)) {
            facility = code;
        }
    }
    if (facility < 0) {
        throw std::invalid_argument("eve-log.facility: unknown facility '" + o.facility + "'");
    }
    for (size_t i = 0; i < kLevels.size(); ++i) {
        if (iequals(kLevels[i], o.level)) {
            return facility * 8 + static_cast<int>(i);
        }
    }
    throw std::invalid_argument("eve-log.level: unknown level '" + o.level + "'");
}

class SocketSink final : public EveSink {
public:
    // prefix goes before each record (the syslog header); stream sockets add '\n' after it.
    SocketSink(std::string name, std::string path, bool stream, std::string prefix,
               uint32_t retry_sec)
        : path_(std::move(path)), stream_(stream), prefix_(std::move(prefix)), retry_(retry_sec) {
        name_ = std::move(name);
        connect_now();
    }
    ~SocketSink() override { close_socket(); }
    SocketSink(const SocketSink&) = delete;
    SocketSink& operator=(const SocketSink&) = delete;

    void write(std::string_view record) override {
        if (fd_ < 0 && !(Clock::now() >= next_retry_ && connect_now())) {
            ++dropped_;
            return;
        }
        if (stream_) {
            write_stream(record);
        } else {
            write_dgram(record);
        }
    }

    void flush() override {
        if (fd_ >= 0 && !out_.empty()) {
            push_out();
        }
    }

    void reopen() override {
        flush();
        if (!out_.empty()) {
            // Half a line is out and the rest cannot follow on a new connection.
            out_.clear();
            ++dropped_;
        }
        close_socket();
        connect_now();
    }

private:
    bool connect_now() {
        const int fd = ::socket(
            AF_UNIX, (stream_ ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            fail("cannot create a socket", errno);
            return false;
        }
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
            // A unix stream connect completes at once or fails (EAGAIN: backlog full).
            const int err = errno;
            ::close(fd);
            fail("cannot connect", err);
            return false;
        }
        fd_ = fd;
        return true;
    }

    void close_socket() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

    void write_dgram(std::string_view record) {
        std::string_view msg = record;
        if (!prefix_.empty()) {
            out_.assign(prefix_);
            out_.append(record);
            msg = out_;
        }
        ssize_t n;
        do {
            n = ::send(fd_, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        } while (n < 0 && errno == EINTR);
        // A datagram goes whole or not at all.
        const int err = n < 0 ? errno : EMSGSIZE;
        out_.clear();
        if (n == static_cast<ssize_t>(msg.size())) {
            delivered();
            return;
        }
        ++dropped_;
        if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
            congested(err);
        } else if (err == EMSGSIZE) {
            if (!size_warned_) {
                size_warned_ = true;
                log::warning(name_ + ": a record of " + std::to_string(msg.size()) +
                             " bytes does not fit in a datagram: " + errno_text(err) +
                             "; dropping such records");
            }
        } else {
            // ECONNREFUSED: the receiver went away (a new one at the same path is another
            // socket: reconnect).
            fail("cannot send", err);
        }
    }

    void write_stream(std::string_view record) {
        if (!out_.empty() && !push_out()) {
            // The previous record is still half out: this one cannot go in between.
            ++dropped_;
            return;
        }
        out_.assign(prefix_);
        out_.append(record);
        out_.push_back('\n');
        out_off_ = 0;
        push_out();
    }

    // Sends what is left of the current stream record; true when all of it is out. A record
    // none of which went out is dropped at once; one partly out stays until it is finished.
    bool push_out() {
        while (out_off_ < out_.size()) {
            const ssize_t n = ::send(fd_, out_.data() + out_off_, out_.size() - out_off_,
                                     MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                out_off_ += static_cast<size_t>(n);
                continue;
            }
            const int err = n < 0 ? errno : EPIPE;
            if (err == EINTR) {
                continue;
            }
            if (err == EAGAIN || err == EWOULDBLOCK) {
                if (out_off_ == 0) {
                    out_.clear();
                    ++dropped_;
                }
                congested(err);
                return false;
            }
            out_.clear();
            ++dropped_;
            fail("cannot send", err);
            return false;
        }
        out_.clear();
        out_off_ = 0;
        delivered();
        return true;
    }

    void delivered() {
        ++written_;
        if (!healthy_) {
            healthy_ = true;
            log::info(name_ + ": delivering again");
        }
    }

    // The receiver is there but not reading: keep the connection, drop until it reads.
    void congested(int err) {
        if (healthy_) {
            log::warning(name_ + ": the receiver is not reading (" + errno_text(err) +
                         "); dropping EVE records until it does");
        }
        healthy_ = false;
    }

    void fail(const char* what, int err) {
        close_socket();
        if (healthy_) {
            log::warning(name_ + ": " + what + ": " + errno_text(err) +
                         "; dropping EVE records until it is back (retrying every " +
                         std::to_string(retry_) + " s)");
        }
        healthy_ = false;
        next_retry_ = Clock::now() + std::chrono::seconds(retry_);
    }

    std::string path_;
    bool stream_;
    std::string prefix_;
    uint32_t retry_;
    int fd_ = -1;
    // Stream: the record being sent and how much of it is out. Datagram: scratch.
    std::string out_;
    size_t out_off_ = 0;
    bool size_warned_ = false;
    Clock::time_point next_retry_{};
};

std::string checked_socket_path(std::string path, const char* option) {
    if (path.empty()) {
        throw std::invalid_argument(std::string(option) + ": must not be empty");
    }
    if (path.size() >= sizeof(sockaddr_un::sun_path)) {
        throw std::invalid_argument(std::string(option) + ": socket path longer than " +
                                    std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
                                    " bytes: " + path);
    }
    return path;
}

}  // namespace

std::unique_ptr<EveSink> make_unix_sink(const SinkOptions& options, bool stream) {
    if (options.filename.empty()) {
        throw std::invalid_argument("eve-log.filename: must not be empty");
    }
    std::string path = checked_socket_path(resolve_path(options), "eve-log.filename");
    std::string name = (stream ? "unix_stream " : "unix_dgram ") + path;
    return std::make_unique<SocketSink>(std::move(name), std::move(path), stream, "",
                                        options.retry_sec);
}

std::unique_ptr<EveSink> make_syslog_sink(const SinkOptions& options) {
    const int pri = syslog_priority(options.syslog);
    std::string path = checked_socket_path(options.syslog.socket, "eve-log.syslog-socket");
    std::string prefix = "<";
    prefix += std::to_string(pri);
    prefix += '>';
    prefix += options.syslog.identity;
    prefix += ": ";
    return std::make_unique<SocketSink>("syslog " + path, std::move(path), false, std::move(prefix),
                                        options.retry_sec);
}

}  // namespace picket::sensor::output::internal
