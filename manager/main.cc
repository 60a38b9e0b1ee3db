// picket-manager: argument parsing and wiring only (manager/service does the work).
// Exit codes: 0 clean stop (SIGINT/SIGTERM), 1 runtime failure, 2 bad arguments.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "common/config.h"
#include "common/log.h"
#include "common/metrics/http_exporter.h"
#include "common/metrics/metrics.h"
#include "common/pki/pki.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "manager/service/service.h"
#include "manager/store/selector.h"
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
    // The manager may be running on this database: leave its sensors' connection state alone.
    manager::store::StoreOptions so;
    so.reset_connections = false;
    auto store = manager::store::Store::Open(db_path, so);
    if (!store.ok()) {
        std::fprintf(stderr, "picket-manager: --db %s: %s\n",
                     manager::store::redact_dsn(db_path).c_str(),
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

// picket-manager migrate: the whole store from SQLite into an empty PostgreSQL database.
int migrate_store(std::string from, std::string to) {
    using namespace picket;
    if (from.starts_with("sqlite:")) {
        from = from.substr(7);
    }
    if (to.empty()) {
        if (const char* dsn = std::getenv("PICKET_DB_DSN"); dsn != nullptr) {
            to = dsn;
        }
    }
    if (!manager::store::is_postgres_dsn(to)) {
        std::fprintf(stderr,
                     "picket-manager migrate: --to needs a postgresql:// DSN (or "
                     "$PICKET_DB_DSN)\n");
        return kExitUsage;
    }
    if (!std::filesystem::is_regular_file(from)) {
        std::fprintf(stderr, "picket-manager migrate: --from %s: no such file\n", from.c_str());
        return kExitUsage;
    }
    auto report = manager::store::copy_store(from, to);
    if (!report.ok()) {
        std::fprintf(stderr, "picket-manager migrate: %s -> %s: %s\n", from.c_str(),
                     manager::store::redact_dsn(to).c_str(),
                     std::string(report.status().message()).c_str());
        return kExitRuntime;
    }
    int64_t total = 0;
    for (const auto& [table, rows] : report->tables) {
        std::printf("%-24s %lld rows\n", table.c_str(), static_cast<long long>(rows));
        total += rows;
    }
    std::printf("copied %lld rows from %s to %s; row counts verified\n",
                static_cast<long long>(total), from.c_str(),
                manager::store::redact_dsn(to).c_str());
    return 0;
}

// manager.yaml keys (deploy/manager.yaml documents each). A key the manager does not know is an
// error: a typo must not silently fall back to a default.
constexpr const char* kConfigKeys[] = {"listen",
                                       "db",
                                       "store.postgres.dsn",
                                       "tls.cert",
                                       "tls.key",
                                       "tls.client-ca",
                                       "tls.ca-key",
                                       "tls.enroll-validity",
                                       "admin-token-file",
                                       "insecure",
                                       "target-timeout",
                                       "metrics-listen",
                                       "alert-ring-size",
                                       "rules.update-interval",
                                       "rules.deploy-to",
                                       "rules.canary",
                                       "rules.soak",
                                       "replica-name",
                                       "reconcile-interval"};

// "90s", "30m", "6h", "1d" or plain seconds; 0 = off. At most 30 days.
std::chrono::seconds parse_interval(const picket::Config& cfg, const std::string& key,
                                    const std::string& text) {
    const std::optional<uint64_t> s = picket::strings::parse_duration_seconds(text);
    if (!s || *s > 30ULL * 86400) {
        throw picket::ConfigError(cfg.source() + ": " + key + ": expected a duration of at most " +
                                  "30 days (90s, 30m, 6h, 1d or seconds), got '" + text + "'");
    }
    return std::chrono::seconds(static_cast<int64_t>(*s));
}

void check_keys(const picket::Config& cfg, const YAML::Node& node, const std::string& prefix) {
    if (!node.IsMap()) {
        return;
    }
    for (const auto& kv : node) {
        std::string key = prefix + kv.first.as<std::string>();
        bool known = false, is_parent = false;
        for (const char* k : kConfigKeys) {
            std::string_view ks(k);
            known = known || ks == key;
            is_parent = is_parent || (ks.size() > key.size() && ks.substr(0, key.size()) == key &&
                                      ks[key.size()] == '.');
        }
        if (is_parent) {
            check_keys(cfg, kv.second, key + ".");
        } else if (!known) {
            throw picket::ConfigError(cfg.source() + ":" +
                                      std::to_string(kv.first.Mark().line + 1) + ": unknown key '" +
                                      key + "'");
        }
    }
}

// Fills every option not given on the command line from the file.
void apply_config(const picket::Config& cfg, const CLI::App& app,
                  picket::manager::service::ManagerOptions* o, std::string* token_file,
                  std::string* metrics_listen, std::string* enroll_validity) {
    check_keys(cfg, cfg.root(), "");
    auto unset = [&](const char* flag) { return app.count(flag) == 0; };
    if (unset("--listen")) {
        o->listen = cfg.get_string("listen", o->listen);
    }
    if (unset("--db")) {
        o->db_path = cfg.get_string("db", o->db_path);
        // store: {postgres: {dsn: postgresql://...}}: the PostgreSQL backend (several managers
        // on one database).
        if (cfg.has("store.postgres.dsn")) {
            if (cfg.has("db")) {
                throw picket::ConfigError(cfg.source() +
                                          ": db and store.postgres.dsn name two databases; "
                                          "keep one");
            }
            o->db_path = cfg.get_string("store.postgres.dsn", "");
        }
    }
    if (unset("--tls-cert")) {
        o->tls_cert_file = cfg.get_string("tls.cert", o->tls_cert_file);
    }
    if (unset("--tls-key")) {
        o->tls_key_file = cfg.get_string("tls.key", o->tls_key_file);
    }
    if (unset("--client-ca")) {
        o->client_ca_file = cfg.get_string("tls.client-ca", o->client_ca_file);
    }
    if (unset("--ca-key")) {
        o->ca_key_file = cfg.get_string("tls.ca-key", o->ca_key_file);
    }
    if (unset("--enroll-validity")) {
        *enroll_validity = cfg.get_string("tls.enroll-validity", *enroll_validity);
    }
    if (unset("--admin-token-file")) {
        *token_file = cfg.get_string("admin-token-file", *token_file);
    }
    if (unset("--insecure")) {
        o->insecure = cfg.get_bool("insecure", o->insecure);
    }
    if (unset("--target-timeout")) {
        o->target_timeout_seconds =
            cfg.get_int("target-timeout", o->target_timeout_seconds, 1, 365LL * 24 * 3600);
    }
    if (unset("--metrics-listen")) {
        *metrics_listen = cfg.get_string("metrics-listen", *metrics_listen);
    }
    if (unset("--replica-name")) {
        o->replica_name = cfg.get_string("replica-name", o->replica_name);
    }
    if (cfg.has("reconcile-interval")) {
        o->reconcile_interval =
            parse_interval(cfg, "reconcile-interval", cfg.get_string("reconcile-interval", "30"));
    }
    o->alert_ring_size = static_cast<size_t>(
        cfg.get_int("alert-ring-size", static_cast<int64_t>(o->alert_ring_size), 1, 1'000'000));
    std::string interval = cfg.get_string("rules.update-interval", "0");
    o->rules_update_interval = parse_interval(cfg, "rules.update-interval", interval);
    o->rules_deploy_to = cfg.get_string("rules.deploy-to", "");
    if (!o->rules_deploy_to.empty()) {
        if (auto sel = picket::manager::store::Selector::parse(o->rules_deploy_to); !sel.ok()) {
            throw picket::ConfigError(cfg.source() +
                                      ": rules.deploy-to: " + std::string(sel.status().message()));
        }
    }
    o->rules_canary_percent = static_cast<uint32_t>(cfg.get_int("rules.canary", 0, 0, 99));
    o->rules_soak_seconds = static_cast<uint32_t>(cfg.get_int("rules.soak", 0, 0, 86400));
    if (o->rules_soak_seconds > 0 && o->rules_canary_percent == 0) {
        throw picket::ConfigError(cfg.source() +
                                  ": rules.soak: a soak needs a canary stage (rules.canary)");
    }
}

}  // namespace

int main(int argc, char** argv) {
    using namespace picket;
    // Debian builds abseil with its mutex deadlock detection on: every absl::Mutex lock (gRPC's,
    // protobuf's) updates a global lock graph under a global lock. A perf of the manager at
    // 10,000 streams showed ~7% of its CPU in that bookkeeping (GraphCycles::GetId). The
    // manager's own locks are std::mutex, and ThreadSanitizer checks lock order in the tests:
    // turn the run-time detection off before gRPC starts any thread.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    CLI::App app{"picket-manager: Picket fleet manager (SensorLink + FleetAdmin gRPC services)"};
    app.set_version_flag("-V,--version", std::string("picket-manager ") + PICKET_VERSION);

    manager::service::ManagerOptions o;
    std::string token_file;
    bool verbose = false;
    std::string enroll;
    std::string config_path;
    std::string metrics_listen;
    std::string enroll_validity = "30d";
    app.add_option("-c,--config", config_path,
                   "configuration file (YAML, see deploy/manager.yaml); flags override it")
        ->type_name("manager.yaml")
        ->check(CLI::ExistingFile);
    app.add_option("--listen", o.listen, "address to serve on, HOST:PORT")->type_name("ADDR");
    app.add_option("--db", o.db_path,
                   "SQLite database file (created if missing), or a PostgreSQL DSN "
                   "postgresql://USER@HOST:PORT/DB (default: $PICKET_DB_DSN, which keeps a "
                   "password out of the process list)")
        ->type_name("FILE|DSN");
    app.add_option("--tls-cert", o.tls_cert_file, "manager certificate (PEM)")->type_name("FILE");
    app.add_option("--tls-key", o.tls_key_file, "manager private key (PEM)")->type_name("FILE");
    app.add_option("--client-ca", o.client_ca_file, "fleet CA that signs sensor certificates")
        ->type_name("FILE");
    app.add_option("--ca-key", o.ca_key_file,
                   "fleet CA private key (the CA is --client-ca): sign bootstrap enrollments "
                   "and renewals (SensorLink.Enroll); without it enrollment is off")
        ->type_name("FILE");
    app.add_option("--enroll-validity", enroll_validity,
                   "validity of the certificates it signs: 90s, 30m, 6h, 1d (default 30d)")
        ->type_name("D");
    app.add_option("--admin-token-file", token_file, "file holding the picketctl admin token")
        ->type_name("FILE");
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
    app.add_option("--replica-name", o.replica_name,
                   "this replica's name among managers sharing a PostgreSQL --db (default: "
                   "--listen)")
        ->type_name("NAME");
    app.add_option("--metrics-listen", metrics_listen,
                   "serve Prometheus /metrics over HTTP on HOST:PORT (e.g. 127.0.0.1:9750)")
        ->type_name("ADDR");
    app.add_flag("-v", verbose, "verbose logging");
    std::string migrate_from, migrate_to;
    CLI::App* migrate = app.add_subcommand(
        "migrate",
        "copy a fleet's store from an SQLite file into an empty PostgreSQL database (ids, "
        "bundles and history as they are; row counts verified) and exit");
    migrate->add_option("--from", migrate_from, "the SQLite store: sqlite:PATH (or PATH)")
        ->type_name("sqlite:PATH")
        ->required();
    migrate
        ->add_option("--to", migrate_to,
                     "the PostgreSQL database: postgresql://USER@HOST:PORT/DB "
                     "(default: $PICKET_DB_DSN)")
        ->type_name("DSN");
    app.footer(
        "Examples:\n"
        "  picket-manager --listen 127.0.0.1:7443 --db fleet.db --insecure\n"
        "  picket-manager --listen 0.0.0.0:7443 --db fleet.db --tls-cert manager.crt \\\n"
        "      --tls-key manager.key --client-ca ca.crt --admin-token-file admin.token\n"
        "  picket-manager -c /etc/picket/manager.yaml --metrics-listen 0.0.0.0:9750\n"
        "  picket-manager --db fleet.db --enroll sensor-7   # prints the sensor's token\n"
        "  picket-manager --db postgresql://picket@db.example:5432/picket --listen ...\n"
        "  picket-manager migrate --from sqlite:/var/lib/picket/fleet.db \\\n"
        "      --to postgresql://picket@db.example:5432/picket\n");
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
    if (migrate->parsed()) {
        return migrate_store(migrate_from, migrate_to);
    }
    if (verbose) {
        log::set_level(log::Level::kDebug);
    }
    if (!config_path.empty()) {
        try {
            apply_config(Config::load_file(config_path), app, &o, &token_file, &metrics_listen,
                         &enroll_validity);
        } catch (const ConfigError& e) {
            std::fprintf(stderr, "picket-manager: %s\n", e.what());
            return kExitUsage;
        }
    }
    {
        // Same duration forms as rules.update-interval; 0 is refused.
        const std::string& v = enroll_validity;
        const std::optional<uint64_t> s = strings::parse_duration_seconds(v);
        if (!s || *s == 0 || *s > 3650ULL * 86400) {
            std::fprintf(stderr,
                         "picket-manager: --enroll-validity (tls.enroll-validity): expected a "
                         "duration of 1 second to 3650 days (90s, 30m, 6h, 30d), got '%s'\n",
                         v.c_str());
            return kExitUsage;
        }
        o.enroll_validity = std::chrono::seconds(static_cast<int64_t>(*s));
    }
    if (o.db_path.empty()) {
        if (const char* dsn = std::getenv("PICKET_DB_DSN"); dsn != nullptr) {
            o.db_path = dsn;
        }
    }
    if (o.db_path.empty()) {
        std::fprintf(stderr,
                     "picket-manager: --db (or db: or store.postgres.dsn in the configuration, "
                     "or $PICKET_DB_DSN) is required\n"
                     "Run with --help for usage.\n");
        return kExitUsage;
    }
    // Files named on the command line or in the configuration must exist.
    for (const auto& [what, path] :
         {std::pair<const char*, const std::string*>{"--tls-cert", &o.tls_cert_file},
          {"--tls-key", &o.tls_key_file},
          {"--client-ca", &o.client_ca_file},
          {"--ca-key", &o.ca_key_file},
          {"--admin-token-file", &token_file}}) {
        if (path->empty()) {
            continue;
        }
        // stat() tells a missing file from one in a directory this user may not enter
        // (a pki directory not yet given to group picket).
        std::error_code ec;
        const auto st = std::filesystem::status(*path, ec);
        if (ec && ec != std::errc::no_such_file_or_directory) {
            std::fprintf(stderr, "picket-manager: %s %s: %s\n", what, path->c_str(),
                         ec.message().c_str());
            return kExitUsage;
        }
        if (!std::filesystem::is_regular_file(st)) {
            std::fprintf(stderr, "picket-manager: %s %s: %s\n", what, path->c_str(),
                         std::filesystem::exists(st) ? "not a regular file" : "no such file");
            return kExitUsage;
        }
    }
    if (!metrics_listen.empty()) {
        if (absl::Status st = metrics::check_listen_address(metrics_listen); !st.ok()) {
            std::fprintf(stderr, "picket-manager: --metrics-listen: %s\n",
                         std::string(st.message()).c_str());
            return kExitUsage;
        }
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
    // A file size limit (RLIMIT_FSIZE) must fail the write, not kill the manager: SQLite then
    // sees EFBIG and the store answers RESOURCE_EXHAUSTED, as for a full disk.
    signal(SIGXFSZ, SIG_IGN);

    // The registry outlives the server and the store (their instruments live in it).
    metrics::Registry registry;
    manager::store::StoreOptions so;
    if (!metrics_listen.empty()) {
        auto* op = &registry.histogram(
            "picket_manager_store_op_duration_seconds",
            "Time from queueing one SQLite write to its commit (includes batching wait).", {},
            metrics::latency_buckets());
        auto* txn = &registry.histogram("picket_manager_store_transaction_duration_seconds",
                                        "Time of one SQLite write transaction, BEGIN to COMMIT.",
                                        {}, metrics::latency_buckets());
        so.observe_op = [op](double s) { op->observe(s); };
        so.observe_txn = [txn](double s) { txn->observe(s); };
        registry
            .gauge("picket_manager_start_time_seconds",
                   "When this manager process started (Unix seconds).")
            .set(static_cast<double>(wall_clock_ns()) / 1e9);
        registry
            .gauge("picket_manager_build_info", "1, labelled with the manager's version.",
                   {{"version", PICKET_VERSION}})
            .set(1);
    }
    // Replicas on one PostgreSQL database: a replica starting must not mark the sensors of the
    // others disconnected (each marks its own streams as they come and go).
    so.reset_connections = !manager::store::is_postgres_dsn(o.db_path);
    auto store = manager::store::Store::Open(o.db_path, so);
    if (!store.ok()) {
        std::fprintf(stderr, "picket-manager: --db %s: %s\n",
                     manager::store::redact_dsn(o.db_path).c_str(),
                     std::string(store.status().message()).c_str());
        return kExitRuntime;
    }
    // Replicas on one PostgreSQL database meet through it (LISTEN/NOTIFY, the leader lock);
    // a lone manager on its SQLite file needs nothing of the kind.
    std::unique_ptr<manager::ha::Coordinator> coordinator;
    if (manager::store::is_postgres_dsn(o.db_path)) {
        manager::ha::PgCoordinatorOptions co;
        co.dsn = o.db_path;
        co.replica = o.replica_name.empty() ? o.listen : o.replica_name;
        auto c = manager::ha::make_pg_coordinator(co);
        if (!c.ok()) {
            std::fprintf(stderr, "picket-manager: %s\n", std::string(c.status().message()).c_str());
            return kExitUsage;
        }
        coordinator = std::move(*c);
        if (o.reconcile_interval.count() == 0) {
            o.reconcile_interval = std::chrono::seconds(30);
        }
    }
    auto server = manager::service::ManagerServer::start(
        o, **store, metrics_listen.empty() ? nullptr : &registry, std::move(coordinator));
    if (!server.ok()) {
        std::fprintf(stderr, "picket-manager: %s\n",
                     std::string(server.status().message()).c_str());
        return kExitRuntime;
    }
    std::fprintf(stderr, "picket-manager: serving on %s (port %d), database %s\n", o.listen.c_str(),
                 (*server)->port(), manager::store::redact_dsn(o.db_path).c_str());
    std::unique_ptr<metrics::HttpExporter> exporter;
    if (!metrics_listen.empty()) {
        auto e = metrics::HttpExporter::start(metrics_listen, registry);
        if (!e.ok()) {
            std::fprintf(stderr, "picket-manager: --metrics-listen: %s\n",
                         std::string(e.status().message()).c_str());
            (*server)->stop();
            return kExitRuntime;
        }
        exporter = std::move(*e);
        std::fprintf(stderr, "picket-manager: metrics on %s\n", exporter->url().c_str());
    }
    int sig = 0;
    sigwait(&stop_signals, &sig);
    log::info(std::string("picket-manager: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
              ", stopping");
    if (exporter) {
        exporter->stop();
    }
    (*server)->stop();
    server->reset();
    store->reset();  // completes queued writes
    return 0;
}
