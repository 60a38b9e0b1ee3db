// The PostgreSQL server that a CTest run shares between its test processes (each GoogleTest
// case is a process of its own): `pg_test_server start STATE` starts one (PostgresServer) and
// writes its port and directory to STATE; the store's tests find it through
// $PICKET_TEST_PG_STATE; `pg_test_server stop STATE` stops that server (only it) and removes its
// directory. The CTest fixture store_pg runs them (tests/manager/store/CMakeLists.txt). Without
// server binaries, start writes nothing and succeeds: the tests skip with the reason.
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/support/postgres_server.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: pg_test_server start|stop|pause|resume STATE\n");
        return 2;
    }
    const std::string action = argv[1];
    const std::string state = argv[2];
    if (action == "start") {
        std::remove(state.c_str());
        std::string why;
        auto server = picket::testing::PostgresServer::start(&why);
        if (server == nullptr) {
            std::printf("no PostgreSQL server for the tests: %s\n", why.c_str());
            return 0;
        }
        std::ofstream(state) << server->port() << ' ' << server->dir() << '\n';
        std::printf("PostgreSQL test server on 127.0.0.1:%d in %s\n", server->port(),
                    server->dir().c_str());
        server->release();  // keeps running for the tests; `stop` ends it
        return 0;
    }
    if (action == "stop") {
        auto server = picket::testing::PostgresServer::adopt(state, true);
        std::remove(state.c_str());
        return 0;  // ~PostgresServer stops it and removes its directory
    }
    if (action == "pause" || action == "resume") {
        // An outage: the same server stopped (fast: its connections end) and started again on
        // the same port and data (tests/e2e/manager_ha_test.py).
        auto server = picket::testing::PostgresServer::adopt(state, true);
        if (server == nullptr) {
            std::fprintf(stderr, "no server in %s\n", state.c_str());
            return 1;
        }
        const bool ok = action == "pause" ? server->stop() : server->restart();
        server->release();  // neither stopped again nor removed here
        return ok ? 0 : 1;
    }
    std::fprintf(stderr, "unknown action %s\n", action.c_str());
    return 2;
}
