// picket-manager: argument parsing and wiring only (manager/service does the work).
// Exit codes: 0 clean stop (SIGINT/SIGTERM), 1 runtime failure, 2 bad arguments.
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "common/log.h"
#include "common/pki/pki.h"
#include "common/time_util.h"
#include "manager/service/service.h"
#include "manager/store/store.h"

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

bool read_token(const std::string& path, std::string* token) {
    std::ifstream in(path);
    if (!in) {
        return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    *token = ss.str();
    const char* ws = " \t\r\n";
    size_t b = token->find_first_not_of(ws);
    size_t e = token->find_last_not_of(ws);
    *token = b == std::string::npos ? std::string() : token->substr(b, e - b + 1);
    return true;
}

// Enrollment: the token is shown once; only its hash is stored.
int enroll_sensor(const std::string& db_path, const std::string& name) {
    using namespace picket;
    if (absl::Status st = manager::store::validate_sensor_name(name); !st.ok()) {
        std::fprintf(stderr, "picket-manager: --enroll: %s\n", std::string(st.message()).c_str());
        return kExitUsage;
    }
    auto store = manager::store::Store::Open(db_path);
    if (!store.ok()) {
        std::fprintf(stderr, "picket-manager: --db %s: %s\n", db_path.c_str(),
                     std::string(store.status().message()).c_str());
        return kExitRuntime;
    }
    auto token = pki::generate_token();
    if (!token.ok()) {
        std::fprintf(stderr, "picket-manager: %s\n", std::string(token.status().message()).c_str());
        return kExitRuntime;
    }
    absl::Status st = (*store)->enroll_sensor(name, pki::token_hash(*token), wall_clock_ns(),
                                              "picket-manager --enroll");
    if (!st.ok()) {
        std::fprintf(stderr, "picket-manager: --enroll %s: %s\n", name.c_str(),
                     std::string(st.message()).c_str());
        return kExitRuntime;
    }
    std::printf("%s\n", token->c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace picket;
    CLI::App app{"picket-manager: Picket fleet manager (SensorLink + FleetAdmin gRPC services)"};
    app.set_version_flag("-V,--version", std::string("picket-manager ") + PICKET_VERSION);

    manager::service::ManagerOptions o;
    std::string token_file;
    bool verbose = false;
    std::string enroll;
    app.add_option("--listen", o.listen, "address to serve on, HOST:PORT")->type_name("ADDR");
    app.add_option("--db", o.db_path, "SQLite database file (created if missing)")
        ->type_name("FILE")
        ->required();
    app.add_option("--tls-cert", o.tls_cert_file, "manager certificate (PEM)")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
    app.add_option("--tls-key", o.tls_key_file, "manager private key (PEM)")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
    app.add_option("--client-ca", o.client_ca_file, "fleet CA that signs sensor certificates")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
    app.add_option("--admin-token-file", token_file, "file holding the picketctl admin token")
        ->type_name("FILE")
        ->check(CLI::ExistingFile);
    app.add_flag("--insecure", o.insecure,
                 "no TLS and no authentication (refused unless --listen is loopback)");
    app.add_option("--target-timeout", o.target_timeout_seconds,
                   "seconds a sensor has to answer an ApplyBundle (default 60)")
        ->type_name("S")
        ->check(CLI::PositiveNumber);
    app.add_option("--enroll", enroll,
                   "enroll sensor NAME: store a new enrollment token's hash in --db, print the "
                   "token and exit")
        ->type_name("NAME");
    app.add_flag("-v", verbose, "verbose logging");
    app.footer(
        "Examples:\n"
        "  picket-manager --listen 127.0.0.1:7443 --db fleet.db --insecure\n"
        "  picket-manager --listen 0.0.0.0:7443 --db fleet.db --tls-cert manager.crt \\\n"
        "      --tls-key manager.key --client-ca ca.crt --admin-token-file admin.token\n"
        "  picket-manager --db fleet.db --enroll sensor-7   # prints the sensor's token\n");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "picket-manager: %s\nRun with --help for usage.\n", e.what());
        return kExitUsage;
    }
    if (verbose) {
        log::set_level(log::Level::kDebug);
    }
    if (!enroll.empty()) {
        return enroll_sensor(o.db_path, enroll);
    }
    if (o.listen.empty()) {
        std::fprintf(stderr, "picket-manager: --listen is required\nRun with --help for usage.\n");
        return kExitUsage;
    }
    if (!token_file.empty()) {
        if (!read_token(token_file, &o.admin_token) || o.admin_token.empty()) {
            std::fprintf(stderr, "picket-manager: --admin-token-file %s: unreadable or empty\n",
                         token_file.c_str());
            return kExitUsage;
        }
    }
    if (absl::Status st = manager::service::validate_options(o); !st.ok()) {
        std::fprintf(stderr, "picket-manager: %s\n", std::string(st.message()).c_str());
        return kExitUsage;
    }

    // Block the stop signals in every thread (gRPC's and the store's inherit the mask); the
    // main thread waits for them with sigwait.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    auto store = manager::store::Store::Open(o.db_path);
    if (!store.ok()) {
        std::fprintf(stderr, "picket-manager: --db %s: %s\n", o.db_path.c_str(),
                     std::string(store.status().message()).c_str());
        return kExitRuntime;
    }
    auto server = manager::service::ManagerServer::start(o, **store);
    if (!server.ok()) {
        std::fprintf(stderr, "picket-manager: %s\n",
                     std::string(server.status().message()).c_str());
        return kExitRuntime;
    }
    std::fprintf(stderr, "picket-manager: serving on %s (port %d), database %s\n", o.listen.c_str(),
                 (*server)->port(), o.db_path.c_str());
    int sig = 0;
    sigwait(&stop_signals, &sig);
    log::info(std::string("picket-manager: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
              ", stopping");
    (*server)->stop();
    server->reset();
    store->reset();  // completes queued writes
    return 0;
}
