// SensorLink.Connect on gRPC's callback API: a reactor (Link) per stream, no thread per stream.
//
// Threads: gRPC's callback threads run the reactions (OnReadDone, OnWriteDone, OnDone) and do
// only what cannot block: metrics, alerts and pongs are handled there; everything that talks
// to the store (Hello, dispatch, ApplyResult, the disconnect bookkeeping) is handed to a small
// fixed pool of workers (LinkRuntime). A link is queued at most once and run by one worker at
// a time, so its store work stays sequential, as in the thread-per-stream design it replaces.
// One timer thread sends every stream's Ping. Writes: one StartWrite outstanding per stream,
// the rest wait in the link's queue; OnWriteDone starts the next.
//
// Bytes: Connect is the raw method. A read is parsed here (OnReadDone); a write is serialized
// when queued, and an ApplyBundle is a few header bytes plus a reference to the deployment's
// one serialized bundle (apply_bundle_message), so a deploy to K streams holds one copy of the
// bundle, not K (nor K more in gRPC's send buffers).
//
// Lifetime: a Link is owned by shared_ptrs (itself until OnDone, the hub, the worker queue; the
// timer holds a weak_ptr). No lock of ours is held while calling into gRPC (a reaction may run
// inline on the calling thread). Finish is called only by a worker, once, when no write is
// outstanding and no read will be started; gRPC calls OnDone only after Finish, so a worker
// or the timer that still holds the link never touches a finished stream: they check
// `finish_wanted_` / `finish_called_` / `writing_` under the link's lock first.
#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <limits>
#include <list>
#include <queue>
#include <set>
#include <thread>
#include <utility>

#include "common/log.h"
#include "common/pki/pki.h"
#include "common/strings.h"
#include "common/time_util.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "manager/service/internal.h"

namespace picket::manager::service {
namespace {

using picket::v1::ManagerMessage;
using picket::v1::SensorMessage;

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
absl::StatusOr<Authenticated> authenticate(const Core& core, grpc::ServerContextBase* ctx,
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

class Link;

}  // namespace

// The workers, the ping timer and the cache of decoded bundles shared by every stream.
class LinkRuntime {
public:
    // Store work of the streams: a few threads whatever the number of streams (the store
    // serializes its writes anyway; more threads would only wait on it).
    static constexpr int kWorkers = 4;
    // Decoded bundles kept for dispatch: a deployment sends one version to many streams.
    static constexpr size_t kCachedBundles = 8;

    explicit LinkRuntime(Core& core) : core_(core) {
        for (int i = 0; i < kWorkers; ++i) {
            workers_.emplace_back([this] { work_loop(); });
        }
        timer_ = std::thread([this] { timer_loop(); });
    }
    ~LinkRuntime() { stop(); }

    // Queues `link` for a worker (the caller has marked it scheduled). Dropped after stop().
    void enqueue(std::shared_ptr<Link> link) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopped_) {
                return;
            }
            ready_.push_back(std::move(link));
        }
        cv_.notify_one();
    }

    // Calls link->ping() at `at`, unless the link is gone by then.
    void ping_at(std::chrono::steady_clock::time_point at, std::weak_ptr<Link> link) {
        bool first = false;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopped_) {
                return;
            }
            first = timers_.empty() || at < timers_.top().at;
            timers_.push({at, seq_++, std::move(link)});
        }
        if (first) {
            timer_cv_.notify_one();
        }
    }

    // Stored bundle `version` decoded, its version and parent set, serialized: the bytes every
    // stream it is sent to shares (bundles are immutable; a slice is reference-counted).
    // Errors are not cached: a repaired blob is read again on the next dispatch.
    absl::StatusOr<grpc::Slice> bundle(int64_t version);

    void stop() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (stopped_) {
                return;
            }
            stopped_ = true;
        }
        cv_.notify_all();
        timer_cv_.notify_all();
        for (std::thread& t : workers_) {
            t.join();
        }
        timer_.join();
        std::lock_guard<std::mutex> lock(mu_);
        ready_.clear();
        timers_ = {};
    }

    Core& core() { return core_; }

private:
    struct Timer {
        std::chrono::steady_clock::time_point at;
        uint64_t seq;
        std::weak_ptr<Link> link;
        bool operator>(const Timer& o) const { return at != o.at ? at > o.at : seq > o.seq; }
    };

    void work_loop();
    void timer_loop();

    Core& core_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::condition_variable timer_cv_;
    bool stopped_ = false;
    std::deque<std::shared_ptr<Link>> ready_;
    std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
    uint64_t seq_ = 0;
    std::vector<std::thread> workers_;
    std::thread timer_;

    std::mutex bundles_mu_;
    // Least recently used first.
    std::list<std::pair<int64_t, grpc::Slice>> bundles_;
};

namespace {

class Link final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                   public Session {
public:
    Link(LinkRuntime& rt, grpc::CallbackServerContext* ctx)
        : rt_(rt), core_(rt.core()), ctx_(ctx) {}

    // Called once from Connect: the reactor keeps itself alive until OnDone.
    void start(const std::shared_ptr<Link>& self) {
        self_ = self;
        self_weak_ = self;
        StartRead(&in_raw_);  // the Hello
    }

    // Session
    void wake() override {
        std::unique_lock<std::mutex> lock(mu_);
        if (phase_ != Phase::kOpen) {
            return;  // Hello's dispatch comes after registration; an ending stream sends nothing
        }
        want_dispatch_ = true;
        schedule(lock);
    }
    void cancel(bool revoked) override {
        std::unique_lock<std::mutex> lock(mu_);
        if (revoked) {
            revoked_ = true;
        }
        want_cancel_ = true;
        schedule(lock);
    }

    void ping() {
        std::unique_lock<std::mutex> lock(mu_);
        if (phase_ != Phase::kOpen) {
            return;  // no further pings: the timer drops the link
        }
        // A stream that carried a report, alerts or an ApplyResult within the interval is
        // evidently alive: a ping would only add a message each way (at 10,000 sensors
        // reporting every 5 s, 1,333 of the 3,333 messages a second). A quiet stream is pinged
        // one interval after the last thing it sent.
        const auto quiet_since = last_activity_;
        if (quiet_since.time_since_epoch().count() != 0 &&
            std::chrono::steady_clock::now() - quiet_since < core_.options.ping_interval) {
            lock.unlock();
            rt_.ping_at(quiet_since + core_.options.ping_interval, self_weak_);
            return;
        }
        ManagerMessage m;
        m.mutable_ping()->set_nonce(++ping_nonce_);
        m.mutable_ping()->set_sent_at(wall_clock_ns());
        send(std::move(m), lock);
        lock.unlock();
        rt_.ping_at(std::chrono::steady_clock::now() + core_.options.ping_interval, self_weak_);
    }

    // A worker: everything pending for this link, until nothing is.
    void run();

    // Reactions (gRPC's threads).
    void OnReadDone(bool ok) override;
    void OnWriteDone(bool ok) override;
    void OnDone() override;

private:
    enum class Phase { kHello, kOpen, kEnding };
    // Needs mu_ (held by `lock`): queues the link for a worker unless it is queued or running.
    void schedule(std::unique_lock<std::mutex>& lock) {
        if (scheduled_) {
            return;
        }
        scheduled_ = true;
        std::shared_ptr<Link> self = self_weak_.lock();
        lock.unlock();
        if (self) {
            rt_.enqueue(std::move(self));
        }
        lock.lock();
    }
    // Needs mu_: queues the serialized message `bytes` (an ApplyBundle refers to the shared
    // bundle's bytes) and starts writing unless a write is outstanding or the stream is being
    // finished. Unlocks while it calls StartWrite; returns with the lock held.
    void send(grpc::ByteBuffer bytes, std::unique_lock<std::mutex>& lock) {
        if (finish_wanted_ || write_broken_) {
            return;
        }
        out_.emplace_back();
        out_.back().Swap(&bytes);
        start_next_write(lock);
    }
    void send(const ManagerMessage& m, std::unique_lock<std::mutex>& lock) {
        grpc::ByteBuffer out;
        bool own = false;
        grpc::Status st = grpc::SerializationTraits<ManagerMessage>::Serialize(m, &out, &own);
        if (!st.ok()) {  // not for these small messages; the stream goes on without it
            log::error("sensor " + name_ + ": serializing a message: " + st.error_message());
            return;
        }
        send(std::move(out), lock);
    }
    void start_next_write(std::unique_lock<std::mutex>& lock) {
        if (writing_ || out_.empty() || finish_wanted_ || write_broken_) {
            return;
        }
        current_.Swap(&out_.front());
        out_.pop_front();
        writing_ = true;
        lock.unlock();
        StartWrite(&current_);
        lock.lock();
    }
    // The worker asks for the stream's end with `status` (sent once no write is outstanding).
    void finish_with(grpc::Status status) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!finish_wanted_) {
            finish_wanted_ = true;
            finish_status_ = std::move(status);
            out_.clear();
        }
    }

    void on_hello(const SensorMessage& first);
    void dispatch();
    void apply_result(const SensorMessage& m);
    void handle_inline(const SensorMessage& m);
    void disconnected();

    LinkRuntime& rt_;
    Core& core_;
    grpc::CallbackServerContext* const ctx_;  // valid until OnDone; used before Finish only
    std::shared_ptr<Link> self_;              // until OnDone
    std::weak_ptr<Link> self_weak_;

    grpc::ByteBuffer in_raw_;  // the read in progress (gRPC's, between StartRead and OnReadDone)
    SensorMessage in_;         // in_raw_ parsed (OnReadDone's)
    // The write in progress (gRPC's, StartWrite .. OnWriteDone; released then: it may hold a
    // reference to a bundle's bytes).
    grpc::ByteBuffer current_;

    std::mutex mu_;
    Phase phase_ = Phase::kHello;
    bool scheduled_ = false;  // queued for, or run by, a worker
    // Work for the worker.
    std::optional<SensorMessage> hello_;
    std::optional<SensorMessage> apply_;  // an ApplyResult; the next read starts after it
    bool want_dispatch_ = false;
    bool want_cancel_ = false;
    bool read_ended_ = false;
    // Writes.
    std::deque<grpc::ByteBuffer> out_;
    bool writing_ = false;
    bool write_broken_ = false;
    // The end.
    bool finish_wanted_ = false;
    grpc::Status finish_status_;
    bool finish_called_ = false;
    bool revoked_ = false;   // drop whatever the sensor still sends
    std::string malformed_;  // why a message read did not parse (the stream's end)
    uint64_t ping_nonce_ = 0;
    // When the sensor last sent something other than a Pong (zero: nothing since Hello).
    std::chrono::steady_clock::time_point last_activity_{};

    // Worker-only state (one worker at a time).
    std::string name_;
    std::string boot_;         // report_boot(Hello): the key of this process's reports
    bool registered_ = false;  // in the hub
    std::set<int64_t> sent_here_;
    std::shared_ptr<Session> as_session_;
    // Reader-only (one read at a time).
    bool warned_bad_report_ = false;
};

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* make_link(
    LinkRuntime& rt, grpc::CallbackServerContext* ctx) {
    auto link = std::make_shared<Link>(rt, ctx);
    link->start(link);
    return link.get();
}

void Link::OnReadDone(bool ok) {
    std::string bad;
    if (ok) {
        const size_t size = in_raw_.Length();
        if (!grpc::SerializationTraits<SensorMessage>::Deserialize(&in_raw_, &in_).ok()) {
            bad = "malformed SensorMessage: " + std::to_string(size) +
                  " bytes that do not parse as picket.v1.SensorMessage";
            ok = false;
        }
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (!ok) {
        if (!bad.empty() && !read_ended_) {
            malformed_ = std::move(bad);
        }
        read_ended_ = true;
        schedule(lock);
        return;
    }
    if (phase_ == Phase::kHello) {
        hello_ = std::move(in_);
        schedule(lock);
        return;  // reading resumes after the Welcome
    }
    if (revoked_) {
        // Messages read before the revocation cancelled the stream are dropped.
        lock.unlock();
        StartRead(&in_raw_);
        return;
    }
    if (!in_.has_pong()) {
        last_activity_ = std::chrono::steady_clock::now();
    }
    if (in_.has_apply_result()) {
        apply_ = std::move(in_);
        schedule(lock);
        return;  // the worker starts the next read when it has stored this one
    }
    lock.unlock();
    handle_inline(in_);
    // Not kept until the next message (the next parse would free it anyway): the last report
    // of each of 10,000 streams held 14 MB (bench/fleet), and an alert batch can be far more.
    in_.Clear();
    StartRead(&in_raw_);
}

void Link::OnWriteDone(bool ok) {
    std::unique_lock<std::mutex> lock(mu_);
    writing_ = false;
    current_.Clear();
    if (!ok) {
        write_broken_ = true;  // the stream is cancelled or gone: the read ends too
        out_.clear();
    }
    if (finish_wanted_) {
        schedule(lock);  // the finish waited for this write
        return;
    }
    start_next_write(lock);
}

void Link::OnDone() {
    std::shared_ptr<Link> keep;
    {
        std::lock_guard<std::mutex> lock(mu_);
        keep = std::move(self_);
        out_.clear();
    }
    // `keep` goes here: the link is freed now unless a worker, the hub or the timer still
    // holds it (they find it finished and leave it).
}

void Link::run() {
    for (;;) {
        std::optional<SensorMessage> hello;
        std::optional<SensorMessage> apply;
        bool dispatch_now = false;
        bool cancel_now = false;
        bool end_now = false;
        bool before_hello = false;
        bool finish_now = false;
        grpc::Status status;
        {
            std::lock_guard<std::mutex> lock(mu_);
            hello.swap(hello_);
            apply.swap(apply_);
            dispatch_now = std::exchange(want_dispatch_, false) && phase_ == Phase::kOpen;
            cancel_now = std::exchange(want_cancel_, false) && !finish_called_;
            if (read_ended_ && phase_ != Phase::kEnding) {
                end_now = true;
                before_hello = phase_ == Phase::kHello;
                phase_ = Phase::kEnding;
            }
            if (!hello && !apply && !dispatch_now && !cancel_now && !end_now) {
                if (finish_wanted_ && !finish_called_ && !writing_) {
                    finish_called_ = true;
                    finish_now = true;
                    status = finish_status_;
                } else {
                    scheduled_ = false;
                    return;
                }
            }
        }
        if (finish_now) {
            Finish(std::move(status));
            continue;  // and see whether anything else came meanwhile
        }
        if (cancel_now) {
            ctx_->TryCancel();  // Finish not called yet: the context is valid
        }
        if (hello) {
            on_hello(*hello);
        }
        if (apply) {
            apply_result(*apply);
            StartRead(&in_raw_);
        }
        if (dispatch_now) {
            dispatch();
        }
        if (end_now) {
            std::string malformed;
            {
                std::lock_guard<std::mutex> lock(mu_);
                malformed = malformed_;
            }
            if (!malformed.empty()) {
                log::warning("sensor " + (name_.empty() ? ctx_->peer() : name_) + ": " + malformed +
                             ": stream closed");
            }
            if (registered_ && core_.hub.remove_if(name_, as_session_)) {
                disconnected();
                log::info("sensor " + name_ + " disconnected");
            }
            registered_ = false;
            as_session_.reset();
            // (finish_with keeps an earlier status: Hello's refusal)
            if (!malformed.empty()) {
                finish_with(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, malformed));
            } else {
                finish_with(before_hello ? grpc::Status(grpc::StatusCode::CANCELLED,
                                                        "stream closed before Hello")
                                         : grpc::Status::OK);
            }
        }
    }
}

// Hello (on a worker): authentication, registration, reconciliation, Welcome; then reading
// and dispatching begin. Any refusal is the stream's final status; nothing is sent.
void Link::on_hello(const SensorMessage& first) {
    if (!first.has_hello()) {
        finish_with(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "the first message of a stream must be Hello"));
        return;
    }
    const picket::v1::Hello& hello = first.hello();
    const std::string name = hello.sensor_name();
    if (absl::Status st = store::validate_sensor_name(name); !st.ok()) {
        finish_with(to_grpc(st));
        return;
    }
    auto auth = authenticate(core_, ctx_, hello);
    if (!auth.ok()) {
        log::warning("sensor '" + name + "' from " + ctx_->peer() +
                     " refused: " + std::string(auth.status().message()));
        finish_with(to_grpc(auth.status()));
        return;
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
        log::warning("sensor '" + name + "' from " + ctx_->peer() +
                     " refused: " + std::string(st.message()));
        finish_with(to_grpc(st));
        return;
    }
    const std::string peer = ctx_->peer();
    core_.live.on_hello(name, hello, peer);
    ServiceMetrics::inc(core_.metrics.hello);

    name_ = name;
    as_session_ = self_weak_.lock();
    registered_ = true;
    if (std::shared_ptr<Session> old = core_.hub.replace(name, as_session_)) {
        old->cancel(false);  // the sensor reconnected; the old stream is stale
    }
    // A revocation that committed after connect_sensor but before the session was registered
    // found no stream to close, and so did a stop() that began meanwhile (its cancel_all()
    // would leave this stream open until the server's shutdown deadline): check both again
    // now that it is registered. RevokeSensor updates the store first, then the hub; stop()
    // sets `stopping` before Hub::cancel_all(); so one of the two sides sees the other.
    const auto now = core_.store.get_sensor(name);
    const bool revoked = now.ok() && now->revoked;
    if (revoked || core_.stopping) {
        core_.hub.remove_if(name, as_session_);
        registered_ = false;
        as_session_.reset();
        (void)core_.store.disconnect_sensor(name, wall_clock_ns());
        if (!revoked) {
            finish_with(grpc::Status(grpc::StatusCode::CANCELLED, "the manager is stopping"));
            return;
        }
        log::warning("sensor '" + name + "' from " + peer + " refused: revoked");
        finish_with(
            grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "sensor '" + name + "' is revoked"));
        return;
    }
    log::info("sensor " + name + " connected from " + peer);
    reconcile(core_, name, hello.bundle());

    ManagerMessage welcome;
    welcome.mutable_welcome()->set_accepted(true);
    welcome.mutable_welcome()->set_reason("welcome, " + name);
    // Where this process's stored reports stand (after every report queued before this Hello,
    // on this manager or, on a shared database, another): the sensor resends what follows.
    boot_ = report_boot(hello);
    if (auto pos = core_.store.report_position(name); pos.ok()) {
        welcome.mutable_welcome()->set_stored_report_seq(
            pos->boot == boot_ ? static_cast<uint64_t>(std::max<int64_t>(pos->seq, 0)) : 0);
    } else {
        // Without it the sensor resends only what it never wrote (as an older manager).
        log::warning("sensor " + name +
                     ": report position: " + std::string(pos.status().message()));
    }
    {
        std::unique_lock<std::mutex> lock(mu_);
        if (read_ended_ || finish_wanted_) {
            return;  // cancelled meanwhile (replaced, revoked, stopping): the end follows
        }
        phase_ = Phase::kOpen;
        send(std::move(welcome), lock);
    }
    StartRead(&in_raw_);
    rt_.ping_at(std::chrono::steady_clock::now() + core_.options.ping_interval, self_weak_);
    dispatch();  // whatever is pending when the sensor arrives
}

// Sends every dispatchable target not yet sent on this stream. One read per wake-up; the
// target's `sent` is written without waiting, and the bundle goes out once that write has
// committed (from the writer thread's callback), so a stream never carries a bundle the store
// does not show as sent, and a worker never waits for a commit: at 10,000 streams the waits,
// not the work, were what made a deploy slow.
void Link::dispatch() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (finish_wanted_ || write_broken_ || phase_ != Phase::kOpen) {
            return;
        }
    }
    auto view = core_.store.dispatch_view(name_);
    if (!view.ok()) {
        log::warning("sensor " + name_ +
                     ": pending targets: " + std::string(view.status().message()));
        return;
    }
    const int64_t running = view->running_version;
    // A version number alone does not say what a sensor runs: after the manager's database
    // was lost or restored, a new bundle may reuse a number the sensor ran with other content.
    // Only the same content address counts as "already running it".
    bool same_content = false;
    if (running > 0) {
        auto live = core_.live.sensor(name_);
        const std::string stored = core_.bundles.ref(running).sha256();
        same_content = live && !stored.empty() && live->bundle_sha256 == stored;
    }
    Core& core = core_;
    auto kick_after = [&core, name = name_](absl::Status st) {
        if (!st.ok()) {
            log::info("sensor " + name + ": " + std::string(st.message()));
        }
        core.rollout->kick();
    };
    for (const store::PendingTarget& p : view->targets) {
        if (sent_here_.count(p.deployment_id) != 0) {
            continue;
        }
        const int64_t now = wall_clock_ns();
        if (p.state == store::TargetState::kPending && p.bundle_version == running &&
            same_content) {
            core_.store.update_target_async(p.deployment_id, name_, store::TargetState::kApplied,
                                            "", now, kick_after);
            sent_here_.insert(p.deployment_id);
            continue;
        }
        auto bundle = rt_.bundle(p.bundle_version);
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
                    core_.store.update_target_async(p.deployment_id, name_,
                                                    store::TargetState::kSent, "", now, nullptr);
                }
                core_.store.update_target_async(
                    p.deployment_id, name_, store::TargetState::kRejected, why, now, kick_after);
                sent_here_.insert(p.deployment_id);
            }
            continue;
        }
        sent_here_.insert(p.deployment_id);
        grpc::ByteBuffer out = apply_bundle_message(std::to_string(p.deployment_id), *bundle);
        if (p.state != store::TargetState::kPending) {  // sent before the sensor reconnected
            std::unique_lock<std::mutex> lock(mu_);
            send(std::move(out), lock);
            continue;
        }
        // Sent once the store says so. A target superseded meanwhile is not sent (the newer
        // deployment's own dispatch follows); the link may be gone by the commit.
        core_.store.update_target_async(
            p.deployment_id, name_, store::TargetState::kSent, "", now,
            [weak = self_weak_, name = name_, out = std::move(out)](absl::Status st) mutable {
                if (!st.ok()) {
                    log::info("sensor " + name + ": " + std::string(st.message()));
                    return;
                }
                if (std::shared_ptr<Link> link = weak.lock()) {
                    std::unique_lock<std::mutex> lock(link->mu_);
                    link->send(std::move(out), lock);
                }
            });
    }
}

void Link::handle_inline(const SensorMessage& m) {
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
            store::RunTotals unused;  // the store computes the deltas from its stored base
            if (!core_.live.on_metrics(name_, m.metrics(), &unused, now)) {
                ServiceMetrics::inc(core_.metrics.reports_duplicate);
                return;
            }
            r.sensor = name_;
            r.ts = now;
            if (m.metrics().seq() > 0) {
                auto total = [&](const char* c) -> int64_t {
                    auto it = m.metrics().counters().find(c);
                    uint64_t v = it == m.metrics().counters().end() ? 0 : it->second;
                    return static_cast<int64_t>(
                        std::min<uint64_t>(v, std::numeric_limits<int64_t>::max() / 4));
                };
                r.boot = boot_;
                r.seq = static_cast<int64_t>(
                    std::min<uint64_t>(m.metrics().seq(), std::numeric_limits<int64_t>::max()));
                r.counters.packets = total("decoder.pkts");
                r.counters.bytes = total("decoder.bytes");
                r.counters.drops = total("capture.kernel_drops") + total("capture.queue_drops");
                r.counters.alerts = total("detect.alert");
            } else {
                r.deltas = unused;  // a sensor without seqs: LiveState's deltas, as before
            }
            for (const char* c : kRecordedCounters) {
                auto it = m.metrics().counters().find(c);
                if (it != m.metrics().counters().end()) {
                    r.samples.push_back({c, static_cast<int64_t>(it->second)});
                }
            }
            std::string name = name_;
            picket::metrics::Counter* dup = core_.metrics.reports_duplicate;
            core_.store.report_async(std::move(r), [name, dup](absl::Status st) {
                if (absl::IsAlreadyExists(st)) {
                    ServiceMetrics::inc(dup);  // stored before (this manager or another)
                    return;
                }
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
        case SensorMessage::kPong:
            ServiceMetrics::inc(core_.metrics.pong);
            return;
        case SensorMessage::kApplyResult:  // on a worker (apply_result)
        case SensorMessage::kHello:
        case SensorMessage::MSG_NOT_SET:
            return;
    }
}

void Link::apply_result(const SensorMessage& m) {
    {
        // An ApplyResult read before the revocation cancelled the stream is dropped.
        std::lock_guard<std::mutex> lock(mu_);
        if (revoked_) {
            return;
        }
    }
    const int64_t now = wall_clock_ns();
    ServiceMetrics::inc(core_.metrics.apply_result);
    const picket::v1::ApplyResult& r = m.apply_result();
    int64_t id = 0;
    const std::string& s = r.deployment_id();
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
    if (ec != std::errc() || end != s.data() + s.size() || id <= 0) {
        log::warning("sensor " + name_ + ": ApplyResult for unknown deployment '" + s + "'");
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
        error = strings::cat("sensor reports it runs version ", r.running().version(), " sha256 ",
                             r.running().sha256().substr(0, 12), ", not the bundle sent (version ",
                             r.version(), " sha256 ", sent.sha256().substr(0, 12), ")");
    }
    core_.live.on_apply(id, name_, {r.rules_loaded(), r.rules_skipped(), r.compile_ms()});
    if (applied) {
        core_.live.on_running(name_, sent.sha256());
    }
    // Stored without waiting (the writer commits in queue order, so after this target's
    // `sent`); the rollout looks once it has committed.
    Core& core = core_;
    core_.store.update_target_async(
        id, name_, applied ? store::TargetState::kApplied : store::TargetState::kRejected,
        std::move(error), now, [&core, name = name_](absl::Status st) {
            if (!st.ok()) {
                log::warning("sensor " + name + ": ApplyResult: " + std::string(st.message()));
            }
            core.rollout->kick();
        });
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
        const int64_t sent_at = p.sent_at > 0 ? p.sent_at : now;
        bool expired = now - sent_at >= timeout;
        (void)core_.store.update_target(
            p.deployment_id, name_,
            expired ? store::TargetState::kTimedOut : store::TargetState::kPending,
            expired ? "sensor disconnected without answering" : "", now);
    }
    core_.rollout->kick();
}

}  // namespace

void LinkRuntime::work_loop() {
    for (;;) {
        std::shared_ptr<Link> link;
        {
            std::unique_lock<std::mutex> lock(mu_);
            cv_.wait(lock, [this] { return stopped_ || !ready_.empty(); });
            if (stopped_) {
                return;
            }
            link = std::move(ready_.front());
            ready_.pop_front();
        }
        link->run();
    }
}

void LinkRuntime::timer_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopped_) {
        if (timers_.empty()) {
            timer_cv_.wait(lock);
            continue;
        }
        auto at = timers_.top().at;
        if (std::chrono::steady_clock::now() < at) {
            timer_cv_.wait_until(lock, at);
            continue;
        }
        std::weak_ptr<Link> weak = timers_.top().link;
        timers_.pop();
        lock.unlock();
        if (std::shared_ptr<Link> link = weak.lock()) {
            link->ping();  // re-arms itself while the stream is open
        }
        lock.lock();
    }
}

absl::StatusOr<grpc::Slice> LinkRuntime::bundle(int64_t version) {
    {
        std::lock_guard<std::mutex> lock(bundles_mu_);
        for (auto it = bundles_.begin(); it != bundles_.end(); ++it) {
            if (it->first == version) {
                bundles_.splice(bundles_.end(), bundles_, it);
                return bundles_.back().second;
            }
        }
    }
    auto stored = core_.store.get_bundle(version, true);
    if (!stored.ok()) {
        return stored.status();
    }
    auto decoded = bundle_from_blob(stored->blob);
    if (!decoded.ok()) {
        return decoded.status();
    }
    decoded->mutable_manifest()->set_version(static_cast<uint64_t>(stored->info.version));
    decoded->mutable_manifest()->set_parent_version(
        static_cast<uint64_t>(stored->info.parent_version));
    const size_t size = decoded->ByteSizeLong();
    grpc_slice raw = grpc_slice_malloc(size);
    decoded->SerializeWithCachedSizesToArray(GRPC_SLICE_START_PTR(raw));
    grpc::Slice bytes(raw, grpc::Slice::STEAL_REF);
    std::lock_guard<std::mutex> lock(bundles_mu_);
    for (const auto& [v, b] : bundles_) {
        if (v == version) {
            return b;  // another worker serialized it meanwhile
        }
    }
    bundles_.emplace_back(version, bytes);
    if (bundles_.size() > kCachedBundles) {
        bundles_.pop_front();
    }
    return bytes;
}

SensorLinkService::SensorLinkService(Core& core)
    : core_(core), runtime_(std::make_unique<LinkRuntime>(core)) {}

SensorLinkService::~SensorLinkService() {
    stop();
}

void SensorLinkService::stop() {
    runtime_->stop();
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SensorLinkService::Connect(
    grpc::CallbackServerContext* ctx) {
    return make_link(*runtime_, ctx);
}

}  // namespace picket::manager::service
