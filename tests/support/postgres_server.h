// A throwaway PostgreSQL server for tests, from Debian's binaries (/usr/lib/postgresql/15/bin;
// $PICKET_PG_BIN overrides): `initdb` and `pg_ctl` in a fresh temporary directory, listening on
// a free loopback port (its unix socket in that directory too), run as the unprivileged user
// `postgres` (else `nobody`) when the test runs as root, since initdb refuses root. Tests take
// a fresh schema each (fresh_dsn), so one server serves a whole test binary: shared() starts it
// once and stops it at exit. Only the server it started is ever stopped.
// Library picket_test_postgres (links libpq); not part of picket_test_support.
#pragma once

#include <memory>
#include <string>

namespace picket::testing {

class PostgresServer {
public:
    // Starts a server; nullptr with *why set when the binaries are absent or it cannot start.
    static std::unique_ptr<PostgresServer> start(std::string* why);
    // The server of this test process: the one a CTest fixture started and named in the file
    // $PICKET_TEST_PG_STATE (pg_test_server), else one started at the first call and stopped
    // at exit (nullptr and *why as start()).
    static PostgresServer* shared(std::string* why);
    // The server described by a state file of pg_test_server (port and directory); with `own`
    // the object stops it and removes its directory when destroyed. nullptr when the file is
    // missing or the server does not answer.
    static std::unique_ptr<PostgresServer> adopt(const std::string& state_file, bool own);
    // Leaves the server running when this object is destroyed (pg_test_server start).
    void release() {
        running_ = false;
        keep_dir_ = true;
    }
    const std::string& dir() const { return dir_; }
    ~PostgresServer();  // stops the server (pg_ctl stop -m immediate) and removes the directory
    PostgresServer(const PostgresServer&) = delete;
    PostgresServer& operator=(const PostgresServer&) = delete;

    int port() const { return port_; }
    // postgresql://picket@127.0.0.1:PORT/postgres with search_path set to a schema created now,
    // empty and unique in this server (tests of several processes may share one server).
    std::string fresh_dsn();
    // Stops and starts the same server again (same port and data): for outage tests.
    bool stop();
    bool restart();

private:
    PostgresServer() = default;
    bool run_pg_ctl(const std::string& args);
    std::string bin_;
    std::string dir_;
    std::string user_;  // "" when not root
    int port_ = 0;
    bool running_ = false;
    bool keep_dir_ = false;
};

}  // namespace picket::testing
