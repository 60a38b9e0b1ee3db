// SensorLink.Connect: one handler thread reads, one writer thread per stream sends ApplyBundle
// and Ping (gRPC allows one concurrent reader and one concurrent writer per stream).
#include <charconv>
#include <set>
#include <thread>

#include "common/log.h"
#include "common/pki/pki.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "manager/service/internal.h"

namespace picket::manager::service {
namespace {

using picket::v1::ManagerMessage;
using picket::v1::SensorMessage;
using Stream = grpc::ServerReaderWriter<ManagerMessage, SensorMessage>;

constexpr int64_t kNsPerSec = 1'000'000'000;

// Counters kept in the per-minute metric history (each sample is a row: a chosen subset).
constexpr const char* kRecordedCounters[] = {
    "decoder.pkts",         "decoder.bytes", "capture.kernel_packets",      "capture.kernel_drops",
    "capture.queue_drops",  "detect.alert",  "detect.alert_queue_overflow", "flow.active",
    "tcp.reassembly_memuse"};

// Reconciliation on Hello: a sensor is identified by the (name, version, sha256) of the bundle
// it runs. When that differs from the bundle the manager last brought it to (its saved copy
// was damaged and it started on local rules, or it was restored from an older image), the
// desired bundle is sent again as a deployment of its own (actor "reconcile", in the
// history). Nothing is done while a deployment to it is open or after one did not apply:
// that is the operator's to decide, and a bundle the sensor refuses is not resent forever.
void reconcile(Core& core, const std::string& name, const picket::v1::BundleRef& running) {
    auto desired = core.store.desired_version(name);
    if (!desired.ok() || *desired == 0) {
        return;
    }
    const picket::v1::BundleRef want = core.bundles.ref(*desired);
    if (want.sha256().empty()) {
        return;  // the stored bundle cannot be read now; dispatch would fail the same way
    }
    if (running.version() == want.version() && running.sha256() == want.sha256() &&
        running.name() == want.name()) {
        return;
    }
    store::NewDeployment nd;
    nd.bundle_version = *desired;
    nd.kind = store::DeploymentKind::kDeploy;
    nd.selector = name;
    nd.actor = "reconcile";
    nd.created_at = wall_clock_ns();
    auto d = core.store.create_deployment(nd);
    if (!d.ok()) {
        log::warning("sensor " + name + ": reconcile to version " + std::to_string(*desired) +
                     ": " + std::string(d.status().message()));
        return;
    }
    log::info(strings::cat("sensor ", name, " runs ", running.name().empty() ? "-" : running.name(),
                           " version ", running.version(), " sha256 ",
                           running.sha256().substr(0, 12), ", not ", want.name(), " version ",
                           want.version(), " sha256 ", want.sha256().substr(0, 12),
                           " that it last applied: sending it again (deployment ", d->id, ")"));
    core.rollout->kick();
}

struct Authenticated {
    bool allow_create = false;
    std::string token_hash;
    store::SensorAuth method = store::SensorAuth::kNone;
    std::string cert_sha256;  // recorded, so revoking the sensor revokes this certificate
};

// Decides who may say this Hello. Errors are the stream's final status; nothing is sent.
absl::StatusOr<Authenticated> authenticate(const Core& core, grpc::ServerContext* ctx,
                                           const picket::v1::Hello& hello) {
    Authenticated a;
    const std::string& token = hello.enrollment_token();
    if (!token.empty()) {
        a.token_hash = pki::token_hash(token);
    }
    if (core.options.insecure) {
        a.allow_create = true;  // loopback only (validate_options)
        return a;
    }
    std::shared_ptr<const grpc::AuthContext> auth = ctx->auth_context();
    std::vector<grpc::string_ref> certs;
    if (auth != nullptr) {
        certs = auth->FindPropertyValues("x509_pem_cert");
    }
    if (!certs.empty()) {
        // The TLS stack verified the chain against --client-ca before we get here.
        auto cert_name =
            pki::sensor_name_from_cert(std::string_view(certs[0].data(), certs[0].size()));
        if (!cert_name.ok()) {
            return absl::PermissionDeniedError("client certificate: " +
                                               std::string(cert_name.status().message()));
        }
        if (*cert_name != hello.sensor_name()) {
            return absl::PermissionDeniedError("client certificate is for sensor '" + *cert_name +
                                               "', Hello says '" + hello.sensor_name() + "'");
        }
        a.allow_create = true;
        a.method = store::SensorAuth::kCertificate;
        a.cert_sha256 = pki::token_hash(std::string_view(certs[0].data(), certs[0].size()));
        return a;
    }
    if (token.empty()) {
        return absl::UnauthenticatedError("no client certificate and no enrollment token");
    }
    a.allow_create = false;  // a token only works for a sensor enrolled with it
    a.method = store::SensorAuth::kToken;
    return a;
}

class Link {
public:
    Link(Core& core, grpc::ServerContext* ctx, Stream* stream, std::string name,
         std::shared_ptr<Session> session)
        : core_(core), ctx_(ctx), stream_(stream), name_(std::move(name)), session_(session) {}

    void run_writer();
    void handle(const SensorMessage& m);
    void disconnected();

private:
    bool dispatch();

    Core& core_;
    grpc::ServerContext* ctx_;
    Stream* stream_;
    std::string name_;
    std::shared_ptr<Session> session_;
    std::set<int64_t> sent_here_;  // writer thread only
    uint64_t ping_nonce_ = 0;
    bool warned_bad_report_ = false;  // reader thread only
};

void Link::run_writer() {
    auto interval = core_.options.ping_interval;
    auto next_ping = std::chrono::steady_clock::now() + interval;
    bool do_dispatch = true;  // whatever is pending when the sensor arrives
    for (;;) {
        if (do_dispatch && !dispatch()) {
            return;
        }
        if (std::chrono::steady_clock::now() >= next_ping) {
            ManagerMessage m;
            m.mutable_ping()->set_nonce(++ping_nonce_);
            m.mutable_ping()->set_sent_at(wall_clock_ns());
            if (!stream_->Write(m)) {
                return;
            }
            next_ping = std::chrono::steady_clock::now() + interval;
        }
        std::unique_lock<std::mutex> lock(session_->mu);
        session_->cv.wait_until(lock, next_ping,
                                [this] { return session_->stop || session_->wake; });
        if (session_->stop) {
            return;
        }
        do_dispatch = session_->wake;
        session_->wake = false;
    }
}

// Sends every dispatchable target not yet sent on this stream. False when the stream broke.
bool Link::dispatch() {
    auto pending = core_.store.pending_targets(name_);
    if (!pending.ok()) {
        log::warning("sensor " + name_ +
                     ": pending targets: " + std::string(pending.status().message()));
        return true;
    }
    int64_t running = -1;
    if (auto s = core_.store.get_sensor(name_); s.ok()) {
        running = s->running_version;
    }
    // A version number alone does not say what a sensor runs: after the manager's database
    // was lost or restored, a new bundle may reuse a number the sensor ran with other content.
    // Only the same content address counts as "already running it".
    bool same_content = false;
    if (running > 0) {
        auto live = core_.live.sensor(name_);
        const std::string stored = core_.bundles.ref(running).sha256();
        same_content = live && !stored.empty() && live->bundle_sha256 == stored;
    }
    for (const store::PendingTarget& p : *pending) {
        if (sent_here_.count(p.deployment_id) != 0) {
            continue;
        }
        const int64_t now = wall_clock_ns();
        if (p.state == store::TargetState::kPending && p.bundle_version == running &&
            same_content) {
            (void)core_.store.update_target(p.deployment_id, name_, store::TargetState::kApplied,
                                            "", now);
            sent_here_.insert(p.deployment_id);
            core_.rollout->kick();
            continue;
        }
        auto stored = core_.store.get_bundle(p.bundle_version, true);
        absl::StatusOr<picket::v1::Bundle> bundle =
            stored.ok() ? bundle_from_blob(stored->blob) : stored.status();
        if (!bundle.ok()) {
            log::error("sensor " + name_ + ": deployment " + std::to_string(p.deployment_id) +
                       ": bundle " + std::to_string(p.bundle_version) + ": " +
                       std::string(bundle.status().message()));
            if (bundle.status().code() == absl::StatusCode::kDataLoss) {
                // The stored bundle is damaged: it will not get better by waiting, and a
                // target left pending would hide that from the operator. Fail the target with
                // the manager's reason (pending -> sent -> rejected: the transitions the store
                // allows); other errors (I/O, busy) are retried on the next dispatch.
                const std::string why = "manager: " + std::string(bundle.status().message());
                if (p.state == store::TargetState::kPending) {
                    (void)core_.store.update_target(p.deployment_id, name_,
                                                    store::TargetState::kSent, "", now);
                }
                (void)core_.store.update_target(p.deployment_id, name_,
                                                store::TargetState::kRejected, why, now);
                sent_here_.insert(p.deployment_id);
                core_.rollout->kick();
            }
            continue;
        }
        bundle->mutable_manifest()->set_version(static_cast<uint64_t>(stored->info.version));
        bundle->mutable_manifest()->set_parent_version(
            static_cast<uint64_t>(stored->info.parent_version));
        if (p.state == store::TargetState::kPending) {
            absl::Status st = core_.store.update_target(p.deployment_id, name_,
                                                        store::TargetState::kSent, "", now);
            if (!st.ok()) {  // superseded meanwhile
                log::info("sensor " + name_ + ": " + std::string(st.message()));
                continue;
            }
        }
        ManagerMessage m;
        m.mutable_apply_bundle()->set_deployment_id(std::to_string(p.deployment_id));
        *m.mutable_apply_bundle()->mutable_bundle() = std::move(*bundle);
        sent_here_.insert(p.deployment_id);
        if (!stream_->Write(m)) {
            return false;
        }
    }
    return true;
}

void Link::handle(const SensorMessage& m) {
    {
        // Messages read before the revocation cancelled the stream are dropped.
        std::lock_guard<std::mutex> lock(session_->mu);
        if (session_->revoked) {
            return;
        }
    }
    const int64_t now = wall_clock_ns();
    switch (m.msg_case()) {
        case SensorMessage::kMetrics: {
            ServiceMetrics::inc(core_.metrics.metrics);
            if (absl::Status bad = check_metrics_report(m.metrics()); !bad.ok()) {
                if (!warned_bad_report_) {  // once per stream: a sensor reports every few seconds
                    log::warning("sensor " + name_ + ": " + std::string(bad.message()) +
                                 ": refused (further refusals on this stream are not logged)");
                    warned_bad_report_ = true;
                }
                return;
            }
            store::SensorReport r;
            if (!core_.live.on_metrics(name_, m.metrics(), &r.deltas, now)) {
                return;
            }
            r.sensor = name_;
            r.ts = now;
            for (const char* c : kRecordedCounters) {
                auto it = m.metrics().counters().find(c);
                if (it != m.metrics().counters().end()) {
                    r.samples.push_back({c, static_cast<int64_t>(it->second)});
                }
            }
            std::string name = name_;
            core_.store.report_async(std::move(r), [name](absl::Status st) {
                if (!st.ok()) {
                    log::warning("sensor " + name + ": metrics: " + std::string(st.message()));
                }
            });
            return;
        }
        case SensorMessage::kAlerts:
            ServiceMetrics::inc(core_.metrics.alerts);
            core_.live.on_alerts(name_, m.alerts());
            return;
        case SensorMessage::kApplyResult: {
            ServiceMetrics::inc(core_.metrics.apply_result);
            const picket::v1::ApplyResult& r = m.apply_result();
            int64_t id = 0;
            const std::string& s = r.deployment_id();
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
            if (ec != std::errc() || end != s.data() + s.size() || id <= 0) {
                log::warning("sensor " + name_ + ": ApplyResult for unknown deployment '" + s +
                             "'");
                return;
            }
            std::string error = strings::join(r.errors(), "\n");
            if (!r.applied() && error.empty()) {
                error = "rejected by the sensor (no reason given)";
            }
            bool applied = r.applied();
            const picket::v1::BundleRef sent = core_.bundles.ref(static_cast<int64_t>(r.version()));
            if (applied && !r.running().sha256().empty() &&
                (r.running().sha256() != sent.sha256() || r.running().version() != r.version())) {
                // "Applied", but what it says it runs is not what was sent: not applied.
                applied = false;
                error = strings::cat("sensor reports it runs version ", r.running().version(),
                                     " sha256 ", r.running().sha256().substr(0, 12),
                                     ", not the bundle sent (version ", r.version(), " sha256 ",
                                     sent.sha256().substr(0, 12), ")");
            }
            core_.live.on_apply(id, name_, {r.rules_loaded(), r.rules_skipped(), r.compile_ms()});
            if (applied) {
                core_.live.on_running(name_, sent.sha256());
            }
            absl::Status st = core_.store.update_target(
                id, name_, applied ? store::TargetState::kApplied : store::TargetState::kRejected,
                error, now);
            if (!st.ok()) {
                log::warning("sensor " + name_ + ": ApplyResult: " + std::string(st.message()));
            }
            core_.rollout->kick();
            return;
        }
        case SensorMessage::kPong:
            ServiceMetrics::inc(core_.metrics.pong);
            return;
        case SensorMessage::kHello:
        case SensorMessage::MSG_NOT_SET:
            return;
    }
}

// The stream ended: the sensor is offline, and what it was sent but did not answer is sent
// again when it comes back (or times out if it was sent long ago).
void Link::disconnected() {
    const int64_t now = wall_clock_ns();
    if (absl::Status st = core_.store.disconnect_sensor(name_, now); !st.ok()) {
        log::warning("sensor " + name_ + ": disconnect: " + std::string(st.message()));
    }
    auto pending = core_.store.pending_targets(name_);
    if (!pending.ok()) {
        return;
    }
    const int64_t timeout = core_.options.target_timeout_seconds * kNsPerSec;
    for (const store::PendingTarget& p : *pending) {
        if (p.state != store::TargetState::kSent) {
            continue;
        }
        int64_t sent_at = now;
        if (auto d = core_.store.get_deployment(p.deployment_id); d.ok()) {
            for (const store::Target& t : d->targets) {
                if (t.sensor == name_) {
                    sent_at = t.sent_at;
                }
            }
        }
        bool expired = now - sent_at >= timeout;
        (void)core_.store.update_target(
            p.deployment_id, name_,
            expired ? store::TargetState::kTimedOut : store::TargetState::kPending,
            expired ? "sensor disconnected without answering" : "", now);
    }
    core_.rollout->kick();
}

}  // namespace

grpc::Status SensorLinkService::Connect(grpc::ServerContext* ctx, Stream* stream) {
    SensorMessage first;
    if (!stream->Read(&first)) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed before Hello");
    }
    if (!first.has_hello()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "the first message of a stream must be Hello");
    }
    const picket::v1::Hello& hello = first.hello();
    const std::string name = hello.sensor_name();
    if (absl::Status st = store::validate_sensor_name(name); !st.ok()) {
        return to_grpc(st);
    }
    auto auth = authenticate(core_, ctx, hello);
    if (!auth.ok()) {
        log::warning("sensor '" + name + "' from " + ctx->peer() +
                     " refused: " + std::string(auth.status().message()));
        return to_grpc(auth.status());
    }
    store::SensorHello sh;
    sh.name = name;
    sh.host = hello.host();
    sh.version = hello.version();
    sh.capture_mode = picket::v1::CaptureMode_Name(hello.capture_mode());
    sh.workers = static_cast<int>(std::min<uint32_t>(hello.workers(), 1u << 20));
    sh.labels.insert(hello.labels().begin(), hello.labels().end());
    sh.running_version = static_cast<int64_t>(hello.bundle().version());
    sh.token_hash = auth->token_hash;
    sh.auth = auth->method;
    sh.cert_sha256 = auth->cert_sha256;
    auto sensor = core_.store.connect_sensor(sh, wall_clock_ns(), auth->allow_create);
    if (!sensor.ok()) {
        absl::Status st = sensor.status();
        if (absl::IsNotFound(st)) {
            st = absl::PermissionDeniedError("unknown sensor '" + name + "'");
        } else if (absl::IsAlreadyExists(st)) {
            st = absl::UnauthenticatedError("bad enrollment token for sensor '" + name + "'");
        }
        log::warning("sensor '" + name + "' from " + ctx->peer() +
                     " refused: " + std::string(st.message()));
        return to_grpc(st);
    }
    core_.live.on_hello(name, hello, ctx->peer());
    ServiceMetrics::inc(core_.metrics.hello);

    auto session = std::make_shared<Session>();
    session->ctx = ctx;
    if (std::shared_ptr<Session> old = core_.hub.replace(name, session)) {
        std::lock_guard<std::mutex> lock(old->mu);
        if (old->ctx != nullptr) {
            old->ctx->TryCancel();  // the sensor reconnected; the old stream is stale
        }
    }
    // A revocation that committed after connect_sensor but before the session was registered
    // found no stream to close, and so did a stop() that began meanwhile (its cancel_all()
    // would leave this stream open until the server's shutdown deadline): check both again
    // now that it is registered. RevokeSensor updates the store first, then the hub; stop()
    // sets `stopping` before Hub::cancel_all(); so one of the two sides sees the other.
    const auto now = core_.store.get_sensor(name);
    const bool revoked = now.ok() && now->revoked;
    if (revoked || core_.stopping) {
        core_.hub.remove_if(name, session);
        (void)core_.store.disconnect_sensor(name, wall_clock_ns());
        if (!revoked) {
            return grpc::Status(grpc::StatusCode::CANCELLED, "the manager is stopping");
        }
        log::warning("sensor '" + name + "' from " + ctx->peer() + " refused: revoked");
        return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                            "sensor '" + name + "' is revoked");
    }
    log::info("sensor " + name + " connected from " + ctx->peer());
    reconcile(core_, name, hello.bundle());

    ManagerMessage welcome;
    welcome.mutable_welcome()->set_accepted(true);
    welcome.mutable_welcome()->set_reason("welcome, " + name);
    Link link(core_, ctx, stream, name, session);
    if (stream->Write(welcome)) {
        std::thread writer([&link] { link.run_writer(); });
        SensorMessage m;
        while (stream->Read(&m)) {
            link.handle(m);
        }
        {
            std::lock_guard<std::mutex> lock(session->mu);
            session->stop = true;
        }
        session->cv.notify_all();
        writer.join();
    }
    {
        std::lock_guard<std::mutex> lock(session->mu);
        session->ctx = nullptr;
    }
    if (core_.hub.remove_if(name, session)) {
        link.disconnected();
        log::info("sensor " + name + " disconnected");
    }
    return grpc::Status::OK;
}

}  // namespace picket::manager::service
