// EVE sinks (sensor/output/sink.h): a regular file (buffering, rotation, a missing directory,
// a full disk, a write cut short), unix stream and datagram sockets, syslog, and Redis (a real
// redis-server on a loopback port of its own; the Redis tests skip without
// /usr/bin/redis-server).
#include "sensor/output/sink.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

extern char** environ;

namespace picket::sensor::output {
namespace {

using namespace std::chrono_literals;
using picket::testing::TempDir;
using picket::testing::wait_until;
using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

SinkOptions file_options(const std::string& log_dir, uint32_t retry_sec = 1) {
    SinkOptions o;
    o.filetype = EveFiletype::kRegular;
    o.filename = "eve.json";
    o.log_dir = log_dir;
    o.retry_sec = retry_sec;
    return o;
}

// --- regular file ---------------------------------------------------------------------------

TEST(FileSink, WritesEachRecordAsOneLineOnFlush) {
    TempDir dir("picket-sink");
    auto sink = make_sink(file_options(dir.path().string()));
    EXPECT_EQ(sink->name(), dir.file("eve.json"));
    sink->write(R"({"a":1})");
    sink->write(R"({"b":2})");
    sink->write(R"({"c":3})");
    EXPECT_EQ(slurp(dir.file("eve.json")), "");  // buffered until flush
    sink->flush();
    EXPECT_EQ(slurp(dir.file("eve.json")), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    EXPECT_EQ(sink->written(), 3u);
    EXPECT_EQ(sink->dropped(), 0u);
    EXPECT_TRUE(sink->healthy());
}

TEST(FileSink, AbsoluteFilenameIgnoresLogDirAndAppends) {
    TempDir dir("picket-sink");
    { std::ofstream(dir.file("abs.json")) << "old\n"; }
    SinkOptions o = file_options("/nonexistent-log-dir");
    o.filename = dir.file("abs.json");
    auto sink = make_sink(o);
    EXPECT_EQ(sink->name(), dir.file("abs.json"));
    sink->write("new");
    sink->flush();
    EXPECT_EQ(slurp(dir.file("abs.json")), "old\nnew\n");
    EXPECT_TRUE(sink->healthy());
}

TEST(FileSink, FlushesOnItsOwnPastTheBuffer) {
    TempDir dir("picket-sink");
    auto sink = make_sink(file_options(dir.path().string()));
    const std::string record(1000, 'x');
    for (int i = 0; i < 66; ++i) {  // 66 * 1001 bytes > 64 KiB
        sink->write(record);
    }
    EXPECT_EQ(slurp(dir.file("eve.json")).size(), 66u * 1001u);
    EXPECT_EQ(sink->written(), 66u);
}

TEST(FileSink, ReopenAfterRenameSplitsRecordsBetweenTheFilesWhole) {
    TempDir dir("picket-sink");
    auto sink = make_sink(file_options(dir.path().string()));
    sink->write("r1");
    sink->write("r2");
    sink->flush();
    sink->write("r3");  // still buffered when logrotate renames the file
    std::filesystem::rename(dir.file("eve.json"), dir.file("eve.json.1"));
    sink->reopen();
    sink->write("r4");
    sink->write("r5");
    sink->flush();
    EXPECT_EQ(slurp(dir.file("eve.json.1")), "r1\nr2\nr3\n");
    EXPECT_EQ(slurp(dir.file("eve.json")), "r4\nr5\n");
    EXPECT_EQ(sink->written(), 5u);
    EXPECT_EQ(sink->dropped(), 0u);
}

TEST(FileSink, MissingDirectoryDropsWarnsOnceAndRecoversWhenCreated) {
    TempDir dir("picket-sink");
    const std::string log_dir = dir.file("later");
    const std::string path = log_dir + "/eve.json";
    ::testing::internal::CaptureStderr();
    auto sink = make_sink(file_options(log_dir, 0));
    EXPECT_FALSE(sink->healthy());
    sink->write("lost1");
    sink->write("lost2");
    sink->flush();
    EXPECT_EQ(sink->dropped(), 2u);
    EXPECT_FALSE(sink->healthy());
    std::filesystem::create_directory(log_dir);
    sink->write("kept");
    sink->flush();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "picket: warning: " + path +
                       ": cannot open for writing: No such file or directory; dropping EVE "
                       "records until it is writable again (retrying every 0 s)\n"
                       "picket: info: " +
                       path + ": writable again\n");
    EXPECT_TRUE(sink->healthy());
    EXPECT_EQ(slurp(path), "kept\n");
    EXPECT_EQ(sink->written(), 1u);
    EXPECT_EQ(sink->dropped(), 2u);
}

TEST(FileSink, RetriesAtMostEveryRetrySec) {
    TempDir dir("picket-sink");
    { std::ofstream(dir.file("notadir")) << "a regular file\n"; }
    auto sink = make_sink(file_options(dir.file("notadir"), 1));
    EXPECT_FALSE(sink->healthy());
    std::filesystem::remove(dir.file("notadir"));
    std::filesystem::create_directory(dir.file("notadir"));
    sink->write("too-early");  // the next attempt is 1 s after the failure
    sink->flush();
    EXPECT_EQ(sink->dropped(), 1u);
    EXPECT_FALSE(std::filesystem::exists(dir.file("notadir/eve.json")));
    std::this_thread::sleep_for(1100ms);
    sink->write("in-time");
    sink->flush();
    EXPECT_TRUE(sink->healthy());
    EXPECT_EQ(slurp(dir.file("notadir/eve.json")), "in-time\n");
    EXPECT_EQ(sink->written(), 1u);
    EXPECT_EQ(sink->dropped(), 1u);
}

TEST(FileSink, FullDiskDropsAndCountsWithoutThrowing) {
    TempDir dir("picket-sink");
    std::filesystem::create_symlink("/dev/full", dir.file("eve.json"));
    auto sink = make_sink(file_options(dir.path().string(), 0));
    EXPECT_TRUE(sink->healthy());  // opening /dev/full works; writing does not
    sink->write("a");
    sink->write("b");
    sink->write("c");
    EXPECT_NO_THROW(sink->flush());
    EXPECT_FALSE(sink->healthy());
    EXPECT_EQ(sink->written(), 0u);
    EXPECT_EQ(sink->dropped(), 3u);
    sink->write("d");
    sink->write("e");
    EXPECT_NO_THROW(sink->flush());
    EXPECT_EQ(sink->dropped(), 5u);
    EXPECT_FALSE(sink->healthy());
}

// A write cut short (RLIMIT_FSIZE: the kernel writes up to the limit, then EFBIG) must leave
// only whole lines, and the next record must start a line of its own.
TEST(FileSink, WriteCutShortLeavesOnlyWholeLines) {
    TempDir dir("picket-sink");
    auto sink = make_sink(file_options(dir.path().string(), 0));
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    auto* old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old;
    small.rlim_cur = 25;
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
    for (int i = 1; i <= 4; ++i) {
        sink->write("record-0" + std::to_string(i));  // 10 bytes a line
    }
    sink->flush();
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old), 0);
    ::signal(SIGXFSZ, old_handler);
    EXPECT_EQ(slurp(dir.file("eve.json")), "record-01\nrecord-02\n");
    EXPECT_EQ(sink->written(), 2u);
    EXPECT_EQ(sink->dropped(), 2u);
    EXPECT_FALSE(sink->healthy());
    sink->write("record-05");
    sink->flush();
    EXPECT_EQ(slurp(dir.file("eve.json")), "record-01\nrecord-02\nrecord-05\n");
    EXPECT_TRUE(sink->healthy());
    EXPECT_EQ(sink->written(), 3u);
}

TEST(FileSink, EmptyFilenameIsRejected) {
    SinkOptions o = file_options("/tmp");
    o.filename = "";
    try {
        make_sink(o);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "eve-log.filename: must not be empty");
    }
}

// --- unix sockets -------------------------------------------------------------------------

int bind_unix(const std::string& path, int type) {
    const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0) << path;
    if (type == SOCK_STREAM) {
        EXPECT_EQ(::listen(fd, 8), 0);
    }
    return fd;
}

// Reads from a stream until `want` bytes arrived (or 5 s passed).
std::string read_stream(int fd, size_t want) {
    std::string got;
    const auto deadline = Clock::now() + 5s;
    while (got.size() < want && Clock::now() < deadline) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
            continue;
        }
        char buf[4096];
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n <= 0) {
            break;
        }
        got.append(buf, static_cast<size_t>(n));
    }
    return got;
}

// One datagram (empty after 5 s without one).
std::string read_datagram(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) {
        return "";
    }
    char buf[65536];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

SinkOptions socket_options(EveFiletype type, const std::string& path) {
    SinkOptions o;
    o.filetype = type;
    o.filename = path;
    o.retry_sec = 0;
    return o;
}

TEST(UnixStreamSink, SendsEachRecordWithANewline) {
    TempDir dir("picket-sink");
    const std::string path = dir.file("eve.sock");
    const int listener = bind_unix(path, SOCK_STREAM);
    auto sink = make_sink(socket_options(EveFiletype::kUnixStream, path));
    EXPECT_EQ(sink->name(), "unix_stream " + path);
    const int conn = ::accept(listener, nullptr, nullptr);
    ASSERT_GE(conn, 0);
    sink->write(R"({"a":1})");
    sink->write(R"({"b":2})");
    sink->flush();
    EXPECT_EQ(read_stream(conn, 16), "{\"a\":1}\n{\"b\":2}\n");
    EXPECT_EQ(sink->written(), 2u);
    EXPECT_EQ(sink->dropped(), 0u);
    EXPECT_TRUE(sink->healthy());
    ::close(conn);
    ::close(listener);
}

TEST(UnixStreamSink, MissingSocketDropsThenDeliversOnceBound) {
    TempDir dir("picket-sink");
    const std::string path = dir.file("eve.sock");
    auto sink = make_sink(socket_options(EveFiletype::kUnixStream, path));
    EXPECT_FALSE(sink->healthy());
    sink->write("lost");
    EXPECT_EQ(sink->dropped(), 1u);
    const int listener = bind_unix(path, SOCK_STREAM);
    sink->write("kept");
    const int conn = ::accept(listener, nullptr, nullptr);
    ASSERT_GE(conn, 0);
    EXPECT_EQ(read_stream(conn, 5), "kept\n");
    EXPECT_TRUE(sink->healthy());
    EXPECT_EQ(sink->written(), 1u);
    EXPECT_EQ(sink->dropped(), 1u);

    // The reader goes away: the next record is dropped; a new reader gets the one after.
    ::close(conn);
    ::close(listener);
    ::unlink(path.c_str());
    sink->write("lost-too");
    EXPECT_FALSE(sink->healthy());
    EXPECT_EQ(sink->dropped(), 2u);
    const int listener2 = bind_unix(path, SOCK_STREAM);
    sink->write("back");
    const int conn2 = ::accept(listener2, nullptr, nullptr);
    ASSERT_GE(conn2, 0);
    EXPECT_EQ(read_stream(conn2, 5), "back\n");
    EXPECT_EQ(sink->written(), 2u);
    EXPECT_EQ(sink->dropped(), 2u);
    ::close(conn2);
    ::close(listener2);
}

// A reader that stops reading: records that find the socket full are dropped, one half out
// is finished before anything else, so the reader sees only whole lines, in order.
TEST(UnixStreamSink, SlowReaderSeesOnlyWholeLines) {
    TempDir dir("picket-sink");
    const std::string path = dir.file("eve.sock");
    const int listener = bind_unix(path, SOCK_STREAM);
    auto sink = make_sink(socket_options(EveFiletype::kUnixStream, path));
    const int conn = ::accept(listener, nullptr, nullptr);
    ASSERT_GE(conn, 0);
    const auto record = [](int i) {
        char head[16];
        std::snprintf(head, sizeof(head), "{\"i\":%03d", i);
        return head + std::string(10000, ' ') + "}";
    };
    constexpr int kRecords = 300;  // 3 MB: far beyond the socket's buffers
    for (int i = 0; i < kRecords; ++i) {
        sink->write(record(i));
    }
    EXPECT_GT(sink->dropped(), 0u);
    EXPECT_FALSE(sink->healthy());
    std::string got;
    ASSERT_TRUE(wait_until(
        [&] {
            char buf[65536];
            ssize_t n;
            while ((n = ::recv(conn, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
                got.append(buf, static_cast<size_t>(n));
            }
            sink->flush();
            return sink->written() + sink->dropped() == kRecords &&
                   got.size() == sink->written() * (record(0).size() + 1);
        },
        5s, "every record sent or dropped and read"));
    int lines = 0;
    size_t pos = 0;
    for (int i = 0; i < kRecords && pos < got.size(); ++i) {
        const std::string line = record(i) + "\n";
        if (got.compare(pos, line.size(), line) == 0) {
            pos += line.size();
            ++lines;
        }
    }
    EXPECT_EQ(pos, got.size());  // nothing but whole records, in order
    EXPECT_EQ(static_cast<uint64_t>(lines), sink->written());
    ::close(conn);
    ::close(listener);
}

TEST(UnixDgramSink, SendsOneDatagramPerRecord) {
    TempDir dir("picket-sink");
    const std::string path = dir.file("eve.dgram");
    const int rx = bind_unix(path, SOCK_DGRAM);
    auto sink = make_sink(socket_options(EveFiletype::kUnixDgram, path));
    EXPECT_EQ(sink->name(), "unix_dgram " + path);
    sink->write(R"({"a":1})");
    sink->write(R"({"b":2})");
    EXPECT_EQ(read_datagram(rx), R"({"a":1})");
    EXPECT_EQ(read_datagram(rx), R"({"b":2})");
    EXPECT_EQ(sink->written(), 2u);
    EXPECT_EQ(sink->dropped(), 0u);
    ::close(rx);
}

TEST(UnixDgramSink, MissingSocketDropsThenDeliversOnceBound) {
    TempDir dir("picket-sink");
    const std::string path = dir.file("eve.dgram");
    auto sink = make_sink(socket_options(EveFiletype::kUnixDgram, path));
    EXPECT_FALSE(sink->healthy());
    sink->write("lost");
    EXPECT_EQ(sink->dropped(), 1u);
    const int rx = bind_unix(path, SOCK_DGRAM);
    sink->write("kept");
    EXPECT_EQ(read_datagram(rx), "kept");
    EXPECT_TRUE(sink->healthy());
    EXPECT_EQ(sink->written(), 1u);
    EXPECT_EQ(sink->dropped(), 1u);
    ::close(rx);
}

// --- syslog -------------------------------------------------------------------------------

SinkOptions syslog_options(const std::string& socket, const std::string& facility,
                           const std::string& level, const std::string& identity) {
    SinkOptions o;
    o.filetype = EveFiletype::kSyslog;
    o.syslog.socket = socket;
    o.syslog.facility = facility;
    o.syslog.level = level;
    o.syslog.identity = identity;
    o.retry_sec = 0;
    return o;
}

TEST(SyslogSink, SendsPriIdentAndRecord) {
    TempDir dir("picket-sink");
    const std::string path = dir.file("log");
    const int rx = bind_unix(path, SOCK_DGRAM);
    auto sink = make_sink(syslog_options(path, "local5", "Info", "picket"));
    EXPECT_EQ(sink->name(), "syslog " + path);
    sink->write(R"({"event_type":"alert"})");
    EXPECT_EQ(read_datagram(rx), R"(<174>picket: {"event_type":"alert"})");

    auto kern = make_sink(syslog_options(path, "KERN", "emergency", "picket"));
    kern->write("{}");
    EXPECT_EQ(read_datagram(rx), "<0>picket: {}");

    auto local0 = make_sink(syslog_options(path, "local0", "DEBUG", "suricata"));
    local0->write("{}");
    EXPECT_EQ(read_datagram(rx), "<135>suricata: {}");

    auto daemon = make_sink(syslog_options(path, "daemon", "Warning", "ids"));
    daemon->write("{}");
    EXPECT_EQ(read_datagram(rx), "<28>ids: {}");
    ::close(rx);
}

TEST(SyslogSink, MissingSocketDropsThenDelivers) {
    TempDir dir("picket-sink");
    const std::string path = dir.file("log");
    auto sink = make_sink(syslog_options(path, "local5", "Notice", "picket"));
    EXPECT_FALSE(sink->healthy());
    sink->write("{}");
    EXPECT_EQ(sink->dropped(), 1u);
    const int rx = bind_unix(path, SOCK_DGRAM);
    sink->write("{}");
    EXPECT_EQ(read_datagram(rx), "<173>picket: {}");
    EXPECT_EQ(sink->written(), 1u);
    EXPECT_TRUE(sink->healthy());
    ::close(rx);
}

TEST(SyslogSink, UnknownFacilityOrLevelNamesTheOption) {
    try {
        make_sink(syslog_options("/dev/log", "x", "Info", "picket"));
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "eve-log.facility: unknown facility 'x'");
    }
    try {
        make_sink(syslog_options("/dev/log", "local5", "loud", "picket"));
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "eve-log.level: unknown level 'loud'");
    }
}

// --- redis --------------------------------------------------------------------------------

constexpr const char* kRedisServer = "/usr/bin/redis-server";

// A loopback port nobody listens on right now (bound to port 0, then released).
uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

// A redis-server child on 127.0.0.1:port, killed (by its pid) at destruction.
class RedisServer {
public:
    RedisServer(uint16_t port, const std::string& dir) : port_(port) {
        const std::string p = std::to_string(port);
        std::vector<std::string> args{
            kRedisServer,   "--port", p,       "--bind", "127.0.0.1",   "--save", "",
            "--appendonly", "no",     "--dir", dir,      "--daemonize", "no"};
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        if (posix_spawn(&pid_, kRedisServer, &fa, nullptr, argv.data(), environ) != 0) {
            pid_ = -1;
        }
        posix_spawn_file_actions_destroy(&fa);
    }
    ~RedisServer() {
        if (pid_ > 0) {
            ::kill(pid_, SIGCONT);
            ::kill(pid_, SIGTERM);
            int status = 0;
            ::waitpid(pid_, &status, 0);
        }
    }
    RedisServer(const RedisServer&) = delete;
    RedisServer& operator=(const RedisServer&) = delete;

    pid_t pid() const { return pid_; }

    // A client connection once the server answers PING (nullptr after 10 s).
    redisContext* client() const {
        const auto deadline = Clock::now() + 10s;
        while (Clock::now() < deadline) {
            redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeval{0, 200000});
            if (c != nullptr && c->err == 0) {
                redisSetTimeout(c, timeval{5, 0});
                auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
                const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
                if (r != nullptr) {
                    freeReplyObject(r);
                }
                if (ok) {
                    return c;
                }
            }
            if (c != nullptr) {
                redisFree(c);
            }
            std::this_thread::sleep_for(20ms);
        }
        return nullptr;
    }

private:
    uint16_t port_;
    pid_t pid_ = -1;
};

std::vector<std::string> lrange(redisContext* c, const std::string& key) {
    std::vector<std::string> out;
    auto* r = static_cast<redisReply*>(redisCommand(c, "LRANGE %s 0 -1", key.c_str()));
    if (r != nullptr && r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements; ++i) {
            out.emplace_back(r->element[i]->str, r->element[i]->len);
        }
    }
    if (r != nullptr) {
        freeReplyObject(r);
    }
    return out;
}

void command(redisContext* c, const std::string& cmd) {
    auto* r = static_cast<redisReply*>(redisCommand(c, cmd.c_str()));
    ASSERT_NE(r, nullptr) << cmd;
    freeReplyObject(r);
}

SinkOptions redis_options(uint16_t port, RedisOptions::Mode mode, const std::string& key) {
    SinkOptions o;
    o.filetype = EveFiletype::kRedis;
    o.redis.server = "127.0.0.1";
    o.redis.port = port;
    o.redis.mode = mode;
    o.redis.key = key;
    o.redis.reconnect_min_ms = 10;
    o.redis.reconnect_max_ms = 80;
    return o;
}

// Flushes until `n` records are acknowledged (written or refused).
::testing::AssertionResult settle(EveSink& sink, uint64_t n) {
    return wait_until(
        [&] {
            sink.flush();
            return sink.written() + sink.dropped();
        },
        [&](uint64_t v) { return v >= n; }, 10s, "the sink's records to be acknowledged");
}

class RedisSinkTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (::access(kRedisServer, X_OK) != 0) {
            GTEST_SKIP() << kRedisServer << " is not installed (apt-get install redis-server)";
        }
        port_ = free_port();
    }
    void start() {
        server_ = std::make_unique<RedisServer>(port_, dir_.path().string());
        ASSERT_GT(server_->pid(), 0);
        client_ = server_->client();
        ASSERT_NE(client_, nullptr) << "redis-server did not answer on port " << port_;
    }
    void TearDown() override {
        if (client_ != nullptr) {
            redisFree(client_);
        }
        server_.reset();
    }

    TempDir dir_{"picket-redis"};
    uint16_t port_ = 0;
    std::unique_ptr<RedisServer> server_;
    redisContext* client_ = nullptr;
};

TEST(RedisSinkOptions, NameAndInvalidOptions) {
    SinkOptions o;
    o.filetype = EveFiletype::kRedis;
    o.redis.port = free_port();
    EXPECT_EQ(make_sink(o)->name(),
              "redis 127.0.0.1:" + std::to_string(o.redis.port) + " lpush suricata");
    o.redis.mode = RedisOptions::Mode::kPublish;
    o.redis.key = "eve";
    EXPECT_EQ(make_sink(o)->name(),
              "redis 127.0.0.1:" + std::to_string(o.redis.port) + " publish eve");

    o.redis.key = "";
    try {
        make_sink(o);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "eve-log.redis.key: must not be empty");
    }
    o.redis.key = "suricata";
    o.redis.port = 0;
    try {
        make_sink(o);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(), "eve-log.redis.port: must be 1-65535, not 0");
    }
}

TEST_F(RedisSinkTest, LpushAndRpushKeepTheirOrder) {
    start();
    auto lpush = make_sink(redis_options(port_, RedisOptions::Mode::kLpush, "l"));
    auto rpush = make_sink(redis_options(port_, RedisOptions::Mode::kRpush, "r"));
    for (const char* r : {"r1", "r2", "r3"}) {
        lpush->write(r);
        rpush->write(r);
    }
    ASSERT_TRUE(settle(*lpush, 3));
    ASSERT_TRUE(settle(*rpush, 3));
    EXPECT_EQ(lpush->written(), 3u);
    EXPECT_EQ(rpush->written(), 3u);
    EXPECT_EQ(lpush->dropped(), 0u);
    EXPECT_TRUE(lpush->healthy());
    EXPECT_EQ(lrange(client_, "l"), (std::vector<std::string>{"r3", "r2", "r1"}));
    EXPECT_EQ(lrange(client_, "r"), (std::vector<std::string>{"r1", "r2", "r3"}));
}

TEST_F(RedisSinkTest, PublishReachesASubscriber) {
    start();
    redisContext* sub = server_->client();
    ASSERT_NE(sub, nullptr);
    command(sub, "SUBSCRIBE eve");
    auto sink = make_sink(redis_options(port_, RedisOptions::Mode::kPublish, "eve"));
    sink->write(R"({"m":1})");
    sink->write(R"({"m":2})");
    ASSERT_TRUE(settle(*sink, 2));
    EXPECT_EQ(sink->written(), 2u);
    for (const char* want : {R"({"m":1})", R"({"m":2})"}) {
        void* r = nullptr;
        ASSERT_EQ(redisGetReply(sub, &r), REDIS_OK);
        auto* reply = static_cast<redisReply*>(r);
        ASSERT_EQ(reply->type, REDIS_REPLY_ARRAY);
        ASSERT_EQ(reply->elements, 3u);
        EXPECT_EQ(std::string(reply->element[0]->str), "message");
        EXPECT_EQ(std::string(reply->element[1]->str), "eve");
        EXPECT_EQ(std::string(reply->element[2]->str, reply->element[2]->len), want);
        freeReplyObject(reply);
    }
    redisFree(sub);
}

TEST_F(RedisSinkTest, ServerDownDropsWithoutBlockingThenRecovers) {
    auto sink = make_sink(redis_options(port_, RedisOptions::Mode::kRpush, "k"));
    for (int i = 0; i < 3; ++i) {
        const auto t0 = Clock::now();
        sink->write("early");
        sink->flush();
        EXPECT_LT(Clock::now() - t0, 2s);
    }
    EXPECT_EQ(sink->dropped(), 3u);
    EXPECT_EQ(sink->written(), 0u);
    EXPECT_FALSE(sink->healthy());

    start();
    uint64_t writes = 3;
    ASSERT_TRUE(wait_until(
        [&] {
            sink->write("late");
            ++writes;
            sink->flush();
            return sink->written();
        },
        [](uint64_t v) { return v >= 1; }, 10s, "a record to reach Redis after it started"));
    EXPECT_TRUE(sink->healthy());
    sink->write("last");
    ++writes;
    ASSERT_TRUE(settle(*sink, writes));
    EXPECT_EQ(sink->written() + sink->dropped(), writes);
    std::vector<std::string> want(sink->written() - 1, "late");
    want.push_back("last");
    EXPECT_EQ(lrange(client_, "k"), want);
}

TEST_F(RedisSinkTest, StoppedServerHoldsMaxPendingAndFlushReturnsSoon) {
    start();
    ASSERT_EQ(::kill(server_->pid(), SIGSTOP), 0);
    SinkOptions o = redis_options(port_, RedisOptions::Mode::kLpush, "k");
    o.redis.max_pending = 2;
    auto small = make_sink(o);
    for (const char* r : {"r1", "r2", "r3", "r4", "r5"}) {
        small->write(r);
    }
    EXPECT_EQ(small->dropped(), 3u);
    const auto t0 = Clock::now();
    small->flush();
    EXPECT_LT(Clock::now() - t0, 2s);
    EXPECT_EQ(small->written(), 0u);
    ASSERT_EQ(::kill(server_->pid(), SIGCONT), 0);
    ASSERT_TRUE(settle(*small, 5));
    EXPECT_EQ(small->written(), 2u);
    EXPECT_EQ(small->dropped(), 3u);
    EXPECT_EQ(lrange(client_, "k"), (std::vector<std::string>{"r2", "r1"}));
}

TEST_F(RedisSinkTest, ErrorReplyCountsAsDropped) {
    start();
    command(client_, "SET s a-string");
    auto sink = make_sink(redis_options(port_, RedisOptions::Mode::kLpush, "s"));
    sink->write("r1");
    sink->write("r2");
    ASSERT_TRUE(settle(*sink, 2));
    EXPECT_EQ(sink->written(), 0u);
    EXPECT_EQ(sink->dropped(), 2u);
    EXPECT_TRUE(sink->healthy());  // the connection is fine; the key is not a list
    command(client_, "DEL s");
    sink->write("r3");
    ASSERT_TRUE(settle(*sink, 3));
    EXPECT_EQ(sink->written(), 1u);
    EXPECT_EQ(lrange(client_, "s"), (std::vector<std::string>{"r3"}));
}

}  // namespace
}  // namespace picket::sensor::output
