#include "tests/support/postgres_server.h"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <system_error>

namespace picket::testing {

namespace {

int free_loopback_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
        return 0;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
        port = ntohs(a.sin_port);
    }
    ::close(fd);
    return port;
}

int sh(const std::string& cmd) {
    int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::atomic<int> g_schemas{0};

}  // namespace

std::unique_ptr<PostgresServer> PostgresServer::start(std::string* why) {
    const char* env = ::getenv("PICKET_PG_BIN");
    std::string bin = env != nullptr ? env : "/usr/lib/postgresql/15/bin";
    if (::access((bin + "/initdb").c_str(), X_OK) != 0 ||
        ::access((bin + "/pg_ctl").c_str(), X_OK) != 0) {
        *why = "PostgreSQL server binaries not found in " + bin +
               " (install postgresql-15; PICKET_PG_BIN names another directory)";
        return nullptr;
    }
    auto s = std::unique_ptr<PostgresServer>(new PostgresServer());
    s->bin_ = bin;
    const char* tmp = ::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/picket-pg-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
        *why = "mkdtemp failed for " + tmpl;
        return nullptr;
    }
    s->dir_ = tmpl;
    if (::geteuid() == 0) {
        for (const char* u : {"postgres", "nobody"}) {
            if (passwd* pw = ::getpwnam(u); pw != nullptr) {
                if (::chown(s->dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
                    *why = "cannot chown " + s->dir_;
                    return nullptr;
                }
                s->user_ = u;
                break;
            }
        }
        if (s->user_.empty()) {
            *why = "running as root and neither user postgres nor nobody exists";
            return nullptr;
        }
    }
    // The parent of a mkdtemp directory may be private to root: the server user must reach it.
    std::string prefix = s->user_.empty() ? "" : "runuser -u " + s->user_ + " -- ";
    std::string init = prefix + bin + "/initdb -D " + s->dir_ +
                       "/data -U picket --auth=trust --no-sync --locale=C -E UTF8 > " + s->dir_ +
                       "/initdb.log 2>&1";
    if (sh(init) != 0) {
        *why = "initdb failed (see " + s->dir_ + "/initdb.log)";
        return nullptr;
    }
    s->port_ = free_loopback_port();
    if (!s->run_pg_ctl("start")) {
        *why = "pg_ctl start failed (see " + s->dir_ + "/server.log)";
        return nullptr;
    }
    return s;
}

bool PostgresServer::run_pg_ctl(const std::string& action) {
    std::string prefix = user_.empty() ? "" : "runuser -u " + user_ + " -- ";
    // fsync off: a test server's data need not survive a power cut; everything else default.
    std::string cmd =
        prefix + bin_ + "/pg_ctl -D " + dir_ + "/data -w -t 30 -l " + dir_ + "/server.log ";
    if (action == "start") {
        cmd += "-o \"-p " + std::to_string(port_) + " -k " + dir_ +
               " -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off"
               " -c max_connections=200\" start";
    } else {
        cmd += "-m immediate stop";
    }
    cmd += " > /dev/null 2>&1";
    bool ok = sh(cmd) == 0;
    running_ = action == "start" ? ok : !ok && running_;
    return ok;
}

std::unique_ptr<PostgresServer> PostgresServer::adopt(const std::string& state_file, bool own) {
    std::ifstream in(state_file);
    int port = 0;
    std::string dir;
    if (!(in >> port >> dir) || port <= 0) {
        return nullptr;
    }
    auto s = std::unique_ptr<PostgresServer>(new PostgresServer());
    const char* env = ::getenv("PICKET_PG_BIN");
    s->bin_ = env != nullptr ? env : "/usr/lib/postgresql/15/bin";
    s->dir_ = dir;
    s->port_ = port;
    if (::geteuid() == 0) {
        struct stat st {};
        if (::stat(dir.c_str(), &st) == 0) {
            if (passwd* pw = ::getpwuid(st.st_uid); pw != nullptr && st.st_uid != 0) {
                s->user_ = pw->pw_name;
            }
        }
    }
    s->running_ = own;
    s->keep_dir_ = !own;
    if (!own) {
        std::string base =
            "postgresql://picket@127.0.0.1:" + std::to_string(port) + "/postgres?connect_timeout=5";
        PGconn* c = PQconnectdb(base.c_str());
        bool ok = PQstatus(c) == CONNECTION_OK;
        PQfinish(c);
        if (!ok) {
            return nullptr;
        }
    }
    return s;
}

PostgresServer* PostgresServer::shared(std::string* why) {
    static std::once_flag once;
    static std::unique_ptr<PostgresServer> server;
    static std::string reason;
    std::call_once(once, [] {
        if (const char* state = ::getenv("PICKET_TEST_PG_STATE"); state != nullptr) {
            server = adopt(state, false);  // the CTest run's server; not ours to stop
            if (server != nullptr) {
                return;
            }
        }
        server = start(&reason);
        if (server != nullptr) {
            // Stopped at exit, after every test of the binary.
            std::atexit([] { server.reset(); });
        }
    });
    *why = reason;
    return server.get();
}

PostgresServer::~PostgresServer() {
    if (running_) {
        run_pg_ctl("stop");
    }
    if (!keep_dir_ && !dir_.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
}

bool PostgresServer::stop() {
    return run_pg_ctl("stop");
}

bool PostgresServer::restart() {
    return run_pg_ctl("start");
}

std::string PostgresServer::fresh_dsn() {
    std::string base = "postgresql://picket@127.0.0.1:" + std::to_string(port_) + "/postgres";
    std::string schema = "t";
    schema += std::to_string(::getpid());
    schema += '_';
    schema += std::to_string(++g_schemas);
    PGconn* c = PQconnectdb(base.c_str());
    if (PQstatus(c) == CONNECTION_OK) {
        PQclear(PQexec(c, ("CREATE SCHEMA " + schema).c_str()));
    }
    PQfinish(c);
    return base + "?options=-csearch_path%3D" + schema;
}

}  // namespace picket::testing
