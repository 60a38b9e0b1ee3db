#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "common/bundle/bundle.h"
#include "common/log.h"
#include "common/pki/pki.h"
#include "common/time_util.h"
#include "manager/service/internal.h"
#include "manager/service/service.h"

namespace picket::manager::service {

namespace {

// The counters the rollout's health gate reads for a canary: the live ones of a stream held
// here; with replicas on one database, a sensor streaming to another replica (this one may
// still hold its stale live entry from before it moved) is read from the store, where every
// replica writes its sensors' reports. A single manager keeps the live entry, as before.
std::optional<rollout::CounterSnapshot> gate_counters(Core& core, const std::string& sensor) {
    if (!core.replicated || core.hub.contains(sensor)) {
        return core.live.counters(sensor);
    }
    auto pos = core.store.report_position(sensor);
    if (!pos.ok() || pos->seq == 0) {
        return std::nullopt;  // not reported with a seq (yet), or the database is away
    }
    rollout::CounterSnapshot snap;
    snap.stored = true;
    snap.timestamp = pos->last_seen;
    snap.counters["decoder.pkts"] = static_cast<uint64_t>(pos->counters.packets);
    snap.counters["capture.kernel_drops"] = static_cast<uint64_t>(pos->counters.drops);
    snap.counters["detect.alert"] = static_cast<uint64_t>(pos->counters.alerts);
    return snap;
}

}  // namespace

class ManagerServer::Impl {
public:
    Impl(store::Store& store, const ManagerOptions& options)
        : core(store, options), sensor_link(core), fleet_admin(core) {}

    void prune_loop() {
        std::unique_lock<std::mutex> lock(mu);
        while (!stop_prune) {
            cv.wait_for(lock, core.options.metric_prune_interval, [this] { return stop_prune; });
            if (stop_prune) {
                break;
            }
            if (!core.is_leader()) {
                continue;  // the leader prunes for every replica
            }
            lock.unlock();
            auto n = core.store.prune_metrics(wall_clock_ns());
            if (!n.ok()) {
                log::warning("metric retention: " + std::string(n.status().message()));
            }
            lock.lock();
        }
    }

    // The scheduled rules update (ManagerOptions::rules_update_interval): sleeps a jittered
    // interval, runs the update as `picketctl rules update` would, logs the outcome (the
    // store's history records it). Skipped while no rule source is configured.
    void rules_loop() {
        using namespace std::chrono;
        std::mt19937_64 rng(std::random_device{}());
        const auto interval = core.options.rules_update_interval;
        auto jittered = [&](seconds base) {
            std::uniform_real_distribution<double> f(0.9, 1.1);
            return duration_cast<milliseconds>(base * f(rng));
        };
        // First run soon after the start (a manager restarted after a day catches up).
        std::uniform_int_distribution<int64_t> first(
            1000, std::min<int64_t>(60'000, interval.count() * 1000));
        milliseconds wait{first(rng)};
        std::unique_lock<std::mutex> lock(mu);
        while (!stop_prune) {
            cv.wait_for(lock, wait, [this] { return stop_prune; });
            if (stop_prune) {
                break;
            }
            lock.unlock();
            auto sources = core.store.list_rule_sources();
            // Once per fleet: the leader runs it (the others skip their turn).
            if (core.is_leader() && sources.ok() && !sources->empty()) {
                picket::v1::UpdateRulesRequest req;
                req.set_author("schedule");
                if (!core.options.rules_deploy_to.empty()) {
                    req.mutable_deploy()->set_selector(core.options.rules_deploy_to);
                    req.mutable_deploy()->set_canary_percent(core.options.rules_canary_percent);
                    req.mutable_deploy()->set_soak_seconds(core.options.rules_soak_seconds);
                }
                picket::v1::UpdateRulesResponse resp;
                absl::Status st = fleet_admin.update_rules(req, "schedule", &resp);
                if (!st.ok()) {
                    log::warning("scheduled rules update failed: " + std::string(st.message()));
                }
            }
            wait = jittered(interval);
            lock.lock();
        }
    }

    // The safety net under the change notifications (options.reconcile_interval): every
    // stream re-reads what its sensor should run.
    void reconcile_loop() {
        std::unique_lock<std::mutex> lock(mu);
        while (!stop_prune) {
            cv.wait_for(lock, core.options.reconcile_interval, [this] { return stop_prune; });
            if (stop_prune) {
                break;
            }
            lock.unlock();
            wake_dispatchable();
            lock.lock();
        }
    }

    void on_change(const ha::Change& ch) {
        if (ch.kind == "revoke") {
            if (ch.origin != coordinator->replica()) {
                core.hub.revoke(ch.payload);  // its stream is on this replica, if anywhere
            }
        } else {
            wake_dispatchable();  // a deployment (or a missed change)
        }
        core.rollout->kick();
    }

    // The streams of the sensors that have a target to dispatch re-read it: one read of the
    // store names them, instead of every stream reading its own (10,000 reads a replica at
    // each change and each reconcile, most finding nothing, e.g. while a canary soaks). A
    // stream also reads on its Hello, so a sensor connecting meanwhile is not missed.
    void wake_dispatchable() {
        auto names = core.store.dispatchable_sensors();
        if (!names.ok()) {
            log::warning("dispatchable targets: " + std::string(names.status().message()) +
                         " (streams re-read at the next change or reconcile)");
            return;
        }
        core.hub.wake(*names);
    }

    std::unique_ptr<ha::Coordinator> coordinator;
    std::thread reconcile;
    Core core;
    SensorLinkService sensor_link;
    FleetAdminService fleet_admin;
    std::unique_ptr<grpc::Server> server;
    int port = 0;
    std::mutex mu;
    std::condition_variable cv;
    bool stop_prune = false;
    bool stopped = false;
    std::thread prune;
    std::thread rules;
};

absl::StatusOr<std::unique_ptr<ManagerServer>> ManagerServer::start(
    const ManagerOptions& options, store::Store& store, picket::metrics::Registry* registry,
    std::unique_ptr<ha::Coordinator> coordinator) {
    if (absl::Status st = validate_options(options); !st.ok()) {
        return st;
    }
    auto impl = std::make_unique<Impl>(store, options);
    std::shared_ptr<grpc::ServerCredentials> creds;
    int64_t not_after = 0;
    if (options.insecure) {
        creds = grpc::InsecureServerCredentials();
    } else {
        auto tls = pki::load_credentials(options.tls_cert_file, options.tls_key_file,
                                         options.client_ca_file, pki::Purpose::kServer);
        if (!tls.ok()) {
            return tls.status();
        }
        // A client certificate is optional (token-enrolled sensors, picketctl) but, when
        // presented, must chain to the fleet CA.
        grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
        ssl.pem_root_certs = tls->ca_pem;
        ssl.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
        creds = grpc::SslServerCredentials(ssl);
        not_after =
            std::chrono::duration_cast<std::chrono::seconds>(tls->not_after.time_since_epoch())
                .count();
    }

    Core& core = impl->core;
    core.tls_cert_not_after = not_after;
    if (!options.ca_key_file.empty()) {
        auto ca = pki::load_ca(options.client_ca_file, options.ca_key_file);
        if (!ca.ok()) {
            return absl::Status(ca.status().code(),
                                "--ca-key (tls.ca-key): " + std::string(ca.status().message()));
        }
        core.ca = std::move(*ca);
    }
    rollout::RolloutOptions ro;
    ro.poll_interval = options.rollout_poll;
    ro.target_timeout_seconds = options.target_timeout_seconds;
    ro.default_gate = options.default_gate;
    ro.is_leader = [&core] { return core.is_leader(); };
    core.replicated = coordinator != nullptr;
    impl->coordinator =
        coordinator != nullptr
            ? std::move(coordinator)
            : ha::make_local_coordinator(options.replica_name.empty() ? options.listen
                                                                      : options.replica_name);
    core.coordinator = impl->coordinator.get();
    core.rollout = std::make_unique<rollout::Rollout>(
        store, ro, [&core](const std::string& s) { return gate_counters(core, s); },
        [&core] { core.publish("deployment"); });

    grpc::ServerBuilder builder;
    builder.AddListeningPort(options.listen, creds, &impl->port);
    builder.RegisterService(&impl->sensor_link);
    builder.RegisterService(&impl->fleet_admin);
    // The largest message is a bundle: its limit plus envelope (common/bundle), the same value
    // picketctl and the sensor agent use. Anything larger is refused (RESOURCE_EXHAUSTED)
    // before it is parsed.
    builder.SetMaxReceiveMessageSize(::picket::bundle::kMaxMessageBytes);
    builder.SetMaxSendMessageSize(::picket::bundle::kMaxMessageBytes);
    // gRPC sets SO_REUSEPORT by default: a second manager would silently share the port.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // No BDP probing of what the manager receives: the probe pings a stream that received data
    // and times the ack, so every report of a few hundred bytes cost a PING, its ack and a
    // timer (at 10,000 sensors reporting every 5 s: 39-43% of a core with it, 29-31% without;
    // docs/performance.md). What it tunes is the receive window, for large messages on long
    // paths: a fixed 4 MiB per stream instead, announced in the SETTINGS (a PushBundle of
    // 64 MiB at 50 ms round trip: 80 MB/s).
    builder.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 4 << 20);
    if (registry != nullptr) {
        core.metrics.init(*registry, core);
        std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> ic;
        ic.push_back(core.metrics.interceptor());
        builder.experimental().SetInterceptorCreators(std::move(ic));
    }
    impl->server = builder.BuildAndStart();
    if (impl->server == nullptr || impl->port == 0) {
        return absl::UnavailableError("cannot listen on '" + options.listen +
                                      "' (address in use or not available)");
    }
    impl->coordinator->start([p = impl.get()](const ha::Change& ch) { p->on_change(ch); },
                             [&core](ha::Role r) {
                                 if (r == ha::Role::kLeader) {
                                     core.rollout->kick();
                                 }
                             });
    core.rollout->start();
    impl->prune = std::thread([p = impl.get()] { p->prune_loop(); });
    if (options.reconcile_interval.count() > 0) {
        impl->reconcile = std::thread([p = impl.get()] { p->reconcile_loop(); });
    }
    if (options.rules_update_interval.count() > 0) {
        impl->rules = std::thread([p = impl.get()] { p->rules_loop(); });
    }
    log::info("picket-manager listening on " + options.listen + " (port " +
              std::to_string(impl->port) + (options.insecure ? ", INSECURE)" : ", TLS)"));
    return std::unique_ptr<ManagerServer>(new ManagerServer(std::move(impl)));
}

ManagerServer::ManagerServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ManagerServer::~ManagerServer() {
    stop();
}

int ManagerServer::port() const {
    return impl_->port;
}

void ManagerServer::stop() {
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        if (impl_->stopped) {
            return;
        }
        impl_->stopped = true;
        impl_->stop_prune = true;
    }
    impl_->cv.notify_all();
    if (impl_->reconcile.joinable()) {
        impl_->reconcile.join();
    }
    if (impl_->rules.joinable()) {
        // A scheduled update in progress finishes first (its fetches have timeouts), while the
        // store and the rollout it may deploy through are still up.
        impl_->rules.join();
    }
    impl_->core.stopping = true;
    impl_->core.hub.cancel_all();
    // The cancellations run on the link workers: let them reach the streams before the server
    // shuts down (a sensor sees CANCELLED, as it did when stop() cancelled them itself).
    (void)impl_->core.hub.wait_empty(std::chrono::seconds(2));
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    impl_->server->Wait();
    impl_->core.rollout->stop();
    // Its handlers use the hub and the rollout; another replica takes the lead at once.
    impl_->coordinator->stop();
    // Every stream has ended (its worker finished it): the link workers and timer can go.
    impl_->sensor_link.stop();
    // The store's callbacks of the links' writes (sending a bundle, kicking the rollout) have
    // run before Core goes.
    (void)impl_->core.store.sync();
    if (impl_->prune.joinable()) {
        impl_->prune.join();
    }
}

bool ManagerServer::is_leader() const {
    return impl_->core.is_leader();
}

LiveState& ManagerServer::live() {
    return impl_->core.live;
}

rollout::Rollout& ManagerServer::rollout() {
    return *impl_->core.rollout;
}

}  // namespace picket::manager::service
