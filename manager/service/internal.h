// Internals shared by the service's .cc files (not a public header).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/metrics/metrics.h"
#include "common/pki/pki.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_interceptor.h"
#include "manager/ha/coordinator.h"
#include "manager/rollout/rollout.h"
#include "manager/service/service.h"
#include "manager/store/store.h"
#include "picket/v1/picket.grpc.pb.h"

namespace picket::manager::service {

grpc::Status to_grpc(const absl::Status& status);

// One open SensorLink stream, as seen by the other threads (the Hub, the rollout's wake-ups,
// RevokeSensor, stop()). Implemented by the stream's reactor (sensor_link.cc); both calls only
// record the request and hand the stream to the link's worker pool: they never block on the
// store or on the network, and are safe on a stream that has already ended.
struct Session {
    virtual ~Session() = default;
    // Pending targets may have changed: dispatch again.
    virtual void wake() = 0;
    // Cancel the stream (the sensor reconnected, the manager stops); `revoked` also drops
    // whatever the sensor still sends on it.
    virtual void cancel(bool revoked) = 0;
};

// Open streams by sensor name; a new stream of a name replaces (cancels) the old one. The
// sessions are called outside the hub's lock.
class Hub {
public:
    std::shared_ptr<Session> replace(const std::string& name, std::shared_ptr<Session> s);
    // True when `s` was still the registered stream of `name` (and is now removed).
    bool remove_if(const std::string& name, const std::shared_ptr<Session>& s);
    // Marks the open stream of `name` revoked and cancels it; false when none is open.
    bool revoke(const std::string& name);
    // Wakes the open streams of `names` (the others are left alone).
    void wake(const std::vector<std::string>& names);
    void cancel_all();
    // True while a stream of `name` is registered here.
    bool contains(const std::string& name);
    // Waits until no stream is registered (each cancelled one has ended), at most `limit`.
    bool wait_empty(std::chrono::milliseconds limit);

private:
    std::vector<std::shared_ptr<Session>> snapshot();
    std::mutex mu_;
    std::condition_variable empty_cv_;
    std::map<std::string, std::shared_ptr<Session>> sessions_;
};

// Manifest-level facts of stored bundles, computed once per version (bundles are immutable).
class BundleCache {
public:
    explicit BundleCache(store::Store& store) : store_(store) {}
    absl::StatusOr<picket::v1::BundleSummary> summary(int64_t version);
    picket::v1::BundleRef ref(int64_t version);  // name/sha empty when unknown; version 0 = none

private:
    store::Store& store_;
    std::mutex mu_;
    std::map<int64_t, picket::v1::BundleSummary> cache_;
};

picket::v1::BundleSummary summarize(const picket::v1::Bundle& bundle,
                                    const store::BundleInfo& info);

struct Core;

// The manager's own instruments (null until init: a manager without --metrics-listen counts
// nothing). Created once before the server starts; updated lock-free from the handlers.
struct ServiceMetrics {
    struct Rpc {
        picket::metrics::Histogram* duration = nullptr;
        std::vector<picket::metrics::Counter*> by_code;  // index = grpc::StatusCode
    };
    std::map<std::string, Rpc> rpcs;  // by full method path "/picket.v1.FleetAdmin/Deploy"
    picket::metrics::Counter* hello = nullptr;
    picket::metrics::Counter* metrics = nullptr;
    picket::metrics::Counter* alerts = nullptr;
    picket::metrics::Counter* apply_result = nullptr;
    picket::metrics::Counter* pong = nullptr;
    // Reports ignored because one with the same boot id and seq was already received here or
    // stored (a resend after a reconnect or failover).
    picket::metrics::Counter* reports_duplicate = nullptr;

    // Creates the instruments in `registry` and adds the collector of the sensor and fleet
    // series (reads `core.store` and `core.live` on every scrape).
    void init(picket::metrics::Registry& registry, Core& core);
    std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> interceptor() const;

    static void inc(picket::metrics::Counter* c) {
        if (c != nullptr) {
            c->inc();
        }
    }
};

struct Core {
    Core(store::Store& s, const ManagerOptions& o)
        : store(s), options(o), live(o.alert_ring_size), bundles(s) {}
    store::Store& store;
    ManagerOptions options;
    LiveState live;
    BundleCache bundles;
    Hub hub;
    ServiceMetrics metrics;
    std::unique_ptr<rollout::Rollout> rollout;
    // The fleet CA that signs enrollments (options.ca_key_file); unset = enrollment off.
    std::optional<pki::CaSigner> ca;
    std::atomic<bool> stopping{false};
    // notAfter of the manager's own TLS certificate (Unix seconds), loaded once at start-up;
    // 0 = insecure, no certificate. Exported as
    // picket_manager_certificate_expiry_timestamp_seconds.
    int64_t tls_cert_not_after = 0;
    // One rules update at a time (picketctl's and the schedule's).
    std::mutex rules_update_mu;
    // The replicas' meeting point (server.cc owns it): a change made here reaches every
    // replica's streams through it, and only its leader drives deployments, the rules
    // schedule, metric retention and the fleet series.
    ha::Coordinator* coordinator = nullptr;
    bool replicated = false;  // a shared database: other replicas may hold other sensors
    bool is_leader() const;
    // Tells every replica (this one included) that `kind` changed; see ha::Change.
    void publish(std::string_view kind, std::string_view payload = {});
};

class LinkRuntime;

// The serialized ManagerMessage{apply_bundle{deployment_id, bundle}} whose bundle is
// `bundle_bytes` (a serialized picket.v1.Bundle), without copying them: a short header slice
// (the two messages' tags and lengths, the deployment id) and a reference to `bundle_bytes`.
// A deployment sends one bundle to every stream; each copy of a 20 MB bundle held per stream
// would be 200 GB at 10,000 sensors.
grpc::ByteBuffer apply_bundle_message(std::string_view deployment_id,
                                      const grpc::Slice& bundle_bytes);

// SensorLink: Connect on gRPC's callback API (sensor_link.cc: a reactor per stream, a small
// fixed pool of worker threads for the store work, one timer thread for the pings; no thread
// per stream); Enroll and RenewCertificate on the sync API (enroll.cc, low volume). Connect
// is the raw method (bytes in and out, parsed and serialized in sensor_link.cc), so that a
// bundle is serialized once per deployment, not once per stream; the wire is picket.v1's.
class SensorLinkService final : public picket::v1::SensorLink::WithRawCallbackMethod_Connect<
                                    picket::v1::SensorLink::Service> {
public:
    explicit SensorLinkService(Core& core);
    ~SensorLinkService() override;
    grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Connect(
        grpc::CallbackServerContext* ctx) override;
    // Bootstrap enrollment and renewal (enroll.cc).
    grpc::Status Enroll(grpc::ServerContext*, const picket::v1::EnrollRequest*,
                        picket::v1::EnrollResponse*) override;
    grpc::Status RenewCertificate(grpc::ServerContext*, const picket::v1::RenewCertificateRequest*,
                                  picket::v1::RenewCertificateResponse*) override;
    // Joins the worker and timer threads; after the gRPC server's Shutdown and Wait (every
    // stream has ended: the workers finish the streams). Idempotent.
    void stop();

private:
    Core& core_;
    std::unique_ptr<LinkRuntime> runtime_;
};

class FleetAdminService final : public picket::v1::FleetAdmin::Service {
public:
    explicit FleetAdminService(Core& core) : core_(core) {}
    grpc::Status ListSensors(grpc::ServerContext*, const picket::v1::ListSensorsRequest*,
                             picket::v1::ListSensorsResponse*) override;
    grpc::Status GetSensor(grpc::ServerContext*, const picket::v1::GetSensorRequest*,
                           picket::v1::GetSensorResponse*) override;
    grpc::Status PushBundle(grpc::ServerContext*, const picket::v1::PushBundleRequest*,
                            picket::v1::PushBundleResponse*) override;
    grpc::Status ListBundles(grpc::ServerContext*, const picket::v1::ListBundlesRequest*,
                             picket::v1::ListBundlesResponse*) override;
    grpc::Status GetBundle(grpc::ServerContext*, const picket::v1::GetBundleRequest*,
                           picket::v1::GetBundleResponse*) override;
    grpc::Status DiffBundles(grpc::ServerContext*, const picket::v1::DiffBundlesRequest*,
                             picket::v1::DiffBundlesResponse*) override;
    grpc::Status Deploy(grpc::ServerContext*, const picket::v1::DeployRequest*,
                        picket::v1::DeployResponse*) override;
    grpc::Status Rollback(grpc::ServerContext*, const picket::v1::RollbackRequest*,
                          picket::v1::RollbackResponse*) override;
    grpc::Status GetDeployment(grpc::ServerContext*, const picket::v1::GetDeploymentRequest*,
                               picket::v1::GetDeploymentResponse*) override;
    grpc::Status WatchDeployment(
        grpc::ServerContext*, const picket::v1::WatchDeploymentRequest*,
        grpc::ServerWriter<picket::v1::WatchDeploymentResponse>* writer) override;
    grpc::Status History(grpc::ServerContext*, const picket::v1::HistoryRequest*,
                         picket::v1::HistoryResponse*) override;
    grpc::Status ListAlerts(grpc::ServerContext*, const picket::v1::ListAlertsRequest*,
                            picket::v1::ListAlertsResponse*) override;
    grpc::Status RevokeSensor(grpc::ServerContext*, const picket::v1::RevokeSensorRequest*,
                              picket::v1::RevokeSensorResponse*) override;
    grpc::Status ReadmitSensor(grpc::ServerContext*, const picket::v1::ReadmitSensorRequest*,
                               picket::v1::ReadmitSensorResponse*) override;
    // Bootstrap tokens (enroll.cc).
    grpc::Status CreateBootstrapToken(grpc::ServerContext*,
                                      const picket::v1::CreateBootstrapTokenRequest*,
                                      picket::v1::CreateBootstrapTokenResponse*) override;
    grpc::Status ListBootstrapTokens(grpc::ServerContext*,
                                     const picket::v1::ListBootstrapTokensRequest*,
                                     picket::v1::ListBootstrapTokensResponse*) override;
    grpc::Status RevokeBootstrapToken(grpc::ServerContext*,
                                      const picket::v1::RevokeBootstrapTokenRequest*,
                                      picket::v1::RevokeBootstrapTokenResponse*) override;
    // Rule sources, policy and the update (rules_admin.cc).
    grpc::Status AddRuleSource(grpc::ServerContext*, const picket::v1::AddRuleSourceRequest*,
                               picket::v1::AddRuleSourceResponse*) override;
    grpc::Status ListRuleSources(grpc::ServerContext*, const picket::v1::ListRuleSourcesRequest*,
                                 picket::v1::ListRuleSourcesResponse*) override;
    grpc::Status RemoveRuleSource(grpc::ServerContext*, const picket::v1::RemoveRuleSourceRequest*,
                                  picket::v1::RemoveRuleSourceResponse*) override;
    grpc::Status SetRuleSourceEnabled(grpc::ServerContext*,
                                      const picket::v1::SetRuleSourceEnabledRequest*,
                                      picket::v1::SetRuleSourceEnabledResponse*) override;
    grpc::Status PutRulePolicy(grpc::ServerContext*, const picket::v1::PutRulePolicyRequest*,
                               picket::v1::PutRulePolicyResponse*) override;
    grpc::Status GetRulePolicy(grpc::ServerContext*, const picket::v1::GetRulePolicyRequest*,
                               picket::v1::GetRulePolicyResponse*) override;
    grpc::Status RemoveRulePolicy(grpc::ServerContext*, const picket::v1::RemoveRulePolicyRequest*,
                                  picket::v1::RemoveRulePolicyResponse*) override;
    grpc::Status UpdateRules(grpc::ServerContext*, const picket::v1::UpdateRulesRequest*,
                             picket::v1::UpdateRulesResponse*) override;
    grpc::Status RuleUpdateHistory(grpc::ServerContext*,
                                   const picket::v1::RuleUpdateHistoryRequest*,
                                   picket::v1::RuleUpdateHistoryResponse*) override;
    // UpdateRules' body, also run by the manager's schedule; `trigger` is "picketctl" or
    // "schedule". One at a time; records the history entry whatever happens.
    absl::Status update_rules(const picket::v1::UpdateRulesRequest& req, const std::string& trigger,
                              picket::v1::UpdateRulesResponse* resp);

private:
    absl::Status authorize(grpc::ServerContext* ctx) const;
    // Every RPC: authorize, then body(); the first failing status goes onto the wire as it is.
    template <typename Body>
    grpc::Status serve(grpc::ServerContext* ctx, Body&& body) {
        absl::Status st = authorize(ctx);
        return to_grpc(st.ok() ? body() : st);
    }
    // A stored bundle decoded; `info` gets its stored facts.
    absl::StatusOr<picket::v1::Bundle> load_bundle(uint64_t version, store::BundleInfo* info);
    // Deploy and Rollback: selector syntax, the version (when given), a selector that matches,
    // then the deployment is created, its gate set (deploy), streams and rollout woken.
    absl::StatusOr<picket::v1::Deployment> start_deployment(const std::string& selector,
                                                            std::optional<uint64_t> version,
                                                            store::NewDeployment nd,
                                                            const picket::v1::HealthGate* gate);
    absl::StatusOr<std::vector<store::Sensor>> resolve(const std::string& selector);
    // PushBundle after its checks, and UpdateRules: the bundle stored with its parent (the
    // newest version of the same name).
    absl::StatusOr<store::PushResult> store_bundle(const picket::v1::Bundle& bundle);
    // Deploy after authorization, and UpdateRules --deploy.
    absl::StatusOr<picket::v1::Deployment> deploy_version(const picket::v1::DeployRequest& req);
    // With d.counts (all targets) also when d.targets holds fewer (a history page).
    absl::StatusOr<picket::v1::Deployment> to_proto(const store::Deployment& d);
    Core& core_;
};

}  // namespace picket::manager::service
