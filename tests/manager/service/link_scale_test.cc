// SensorLink at many streams: the manager serves them on a fixed set of threads (no thread per
// stream), every stream still gets its Ping every ping_interval, and a deployment to all of
// them reaches every one. The sensors are gRPC callback clients (no thread per stream either),
// in this process: /proc/self/task counts the manager's threads plus a fixed number of the
// client's and the test's.
#include <dirent.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/bundle/bundle.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "manager/service/service.h"
#include "picket/v1/picket.grpc.pb.h"
#include "tests/manager/service/service_fixture.h"

namespace picket::manager::service {
namespace {

namespace pb = picket::v1;
using namespace std::chrono_literals;
using testing::wait_for;

constexpr int kStreams = 300;
// Today's bound: gRPC's own threads, the manager's fixed ones (link workers, ping timer,
// rollout, store writer, retention, sync-API pollers) and the test's. The thread-per-stream
// design held 2 per stream (600 here).
constexpr int kMaxThreads = 64;
constexpr auto kPing = 400ms;

int thread_count() {
    int n = 0;
    DIR* d = opendir("/proc/self/task");
    if (d == nullptr) {
        return -1;
    }
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] != '.') {
            ++n;
        }
    }
    closedir(d);
    return n;
}

// A sensor on the callback API: Hello, then records Welcome, Pings (arrival times, nonces) and
// ApplyBundles, answering each ApplyBundle with an applied ApplyResult.
class ReactorSensor final : public grpc::ClientBidiReactor<pb::SensorMessage, pb::ManagerMessage> {
public:
    ReactorSensor(pb::SensorLink::Stub* stub, const std::string& name) {
        pb::SensorMessage hello;
        hello.mutable_hello()->set_sensor_name(name);
        hello.mutable_hello()->set_host("host-" + name);
        hello.mutable_hello()->set_version("0.1.0");
        hello.mutable_hello()->set_workers(1);
        stub->async()->Connect(&ctx_, this);
        queue_.push_back(std::move(hello));
        start_write_locked();
        StartRead(&in_);
        StartCall();
    }
    ~ReactorSensor() override { close(); }

    void close() {
        ctx_.TryCancel();
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return done_; });
    }
    bool welcomed() {
        std::lock_guard<std::mutex> lock(mu_);
        return welcomed_;
    }
    // Queues `m` on the stream (written after what is queued before it).
    void send(pb::SensorMessage m) {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(std::move(m));
        if (!writing_) {
            start_write_locked();
        }
    }
    // Ping.sent_at of each Ping received (the manager's clock, ns).
    std::vector<int64_t> pings() {
        std::lock_guard<std::mutex> lock(mu_);
        return ping_sent_;
    }
    std::vector<uint64_t> nonces() {
        std::lock_guard<std::mutex> lock(mu_);
        return nonces_;
    }
    std::vector<pb::ApplyBundle> applies() {
        std::lock_guard<std::mutex> lock(mu_);
        return applies_;
    }

    void OnReadDone(bool ok) override {
        if (!ok) {
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (in_.has_welcome()) {
                welcomed_ = in_.welcome().accepted();
            } else if (in_.has_ping()) {
                ping_sent_.push_back(in_.ping().sent_at());
                nonces_.push_back(in_.ping().nonce());
            } else if (in_.has_apply_bundle()) {
                applies_.push_back(in_.apply_bundle());
                pb::SensorMessage r;
                r.mutable_apply_result()->set_deployment_id(in_.apply_bundle().deployment_id());
                r.mutable_apply_result()->set_version(
                    in_.apply_bundle().bundle().manifest().version());
                r.mutable_apply_result()->set_applied(true);
                r.mutable_apply_result()->set_rules_loaded(1);
                queue_.push_back(std::move(r));
                if (!writing_) {
                    start_write_locked();
                }
            }
        }
        StartRead(&in_);
    }
    void OnWriteDone(bool ok) override {
        std::lock_guard<std::mutex> lock(mu_);
        writing_ = false;
        queue_.pop_front();
        if (ok && !queue_.empty()) {
            start_write_locked();
        }
    }
    void OnDone(const grpc::Status&) override {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = true;
        cv_.notify_all();
    }

private:
    // Needs mu_ (or the constructor): writes the queue's front.
    void start_write_locked() {
        writing_ = true;
        StartWrite(&queue_.front());
    }

    grpc::ClientContext ctx_;
    pb::ManagerMessage in_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<pb::SensorMessage> queue_;  // front = the write in progress
    bool writing_ = false;
    bool welcomed_ = false;
    bool done_ = false;
    std::vector<int64_t> ping_sent_;
    std::vector<uint64_t> nonces_;
    std::vector<pb::ApplyBundle> applies_;
};

class LinkScale : public testing::ManagerTest {
protected:
    LinkScale() : ManagerTest("picket-link-scale") {}
    void SetUp() override {
        ManagerOptions o;
        o.listen = "127.0.0.1:0";
        o.insecure = true;
        o.rollout_poll = 50ms;
        o.ping_interval = kPing;
        ASSERT_NO_FATAL_FAILURE(start(o));
        channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                       grpc::InsecureChannelCredentials());
        link_ = pb::SensorLink::NewStub(channel_);
        admin_ = pb::FleetAdmin::NewStub(channel_);
    }
    void TearDown() override {
        sensors_.clear();  // cancels each stream and waits for its end
        ManagerTest::TearDown();
    }

    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<pb::SensorLink::Stub> link_;
    std::unique_ptr<pb::FleetAdmin::Stub> admin_;
    std::vector<std::unique_ptr<ReactorSensor>> sensors_;
};

TEST_F(LinkScale, ManyStreamsOnAFixedSetOfThreadsArePingedAndDeployedTo) {
    for (int i = 0; i < kStreams; ++i) {
        sensors_.push_back(
            std::make_unique<ReactorSensor>(link_.get(), "sim-" + std::to_string(i)));
    }
    ASSERT_TRUE(wait_for(
        [&] {
            for (const auto& s : sensors_) {
                if (!s->welcomed()) {
                    return false;
                }
            }
            return true;
        },
        60s))
        << "not every stream was welcomed";
    const int threads = thread_count();
    EXPECT_GT(threads, 0);
    EXPECT_LT(threads, kMaxThreads) << "threads with " << kStreams << " streams open";

    // Every stream is pinged, at ping_interval: nonces 1, 2, 3 in order, not in a burst.
    ASSERT_TRUE(wait_for(
        [&] {
            for (const auto& s : sensors_) {
                if (s->pings().size() < 3) {
                    return false;
                }
            }
            return true;
        },
        30s))
        << "not every stream got 3 pings";
    for (const auto& s : sensors_) {
        const auto nonces = s->nonces();
        ASSERT_GE(nonces.size(), 3u);
        EXPECT_EQ(nonces[0], 1u);
        EXPECT_EQ(nonces[1], 2u);
        EXPECT_EQ(nonces[2], 3u);
        // Sent every kPing, not in a burst (the arrivals may bunch up on a loaded machine, so
        // the manager's send times are compared; 5 ms of slack for its wall clock).
        const auto sent = s->pings();
        EXPECT_GE(sent[2] - sent[1], std::chrono::nanoseconds(kPing).count() - 5'000'000);
        EXPECT_GE(sent[1] - sent[0], std::chrono::nanoseconds(kPing).count() - 5'000'000);
    }

    // One deployment to all: each stream gets it once, with its version, and applies it.
    pb::Bundle b;
    b.mutable_manifest()->set_name("base");
    b.mutable_manifest()->set_author("tester");
    b.mutable_manifest()->set_created_at(1'700'000'000'000'000'000);
    pb::BundleFile* f = b.add_files();
    f->set_path("rules/a.rules");
    f->set_content("alert ip any any -> any any (msg:\"one\"; sid:1; rev:1;)\n");
    bundle::update_manifest_files(b);
    pb::PushBundleRequest push;
    *push.mutable_bundle() = b;
    pb::PushBundleResponse pushed;
    {
        grpc::ClientContext ctx;
        ASSERT_TRUE(admin_->PushBundle(&ctx, push, &pushed).ok());
    }
    pb::DeployRequest deploy;
    deploy.set_version(pushed.version());
    deploy.set_selector("all");
    pb::DeployResponse dep;
    {
        grpc::ClientContext ctx;
        grpc::Status st = admin_->Deploy(&ctx, deploy, &dep);
        ASSERT_TRUE(st.ok()) << st.error_message();
    }
    ASSERT_TRUE(wait_for(
        [&] {
            pb::GetDeploymentRequest req;
            req.set_id(dep.deployment().id());
            pb::GetDeploymentResponse resp;
            grpc::ClientContext ctx;
            return admin_->GetDeployment(&ctx, req, &resp).ok() &&
                   resp.deployment().state() == pb::DEPLOYMENT_STATE_SUCCEEDED;
        },
        60s))
        << "the deployment to all did not succeed";
    for (const auto& s : sensors_) {
        const auto applies = s->applies();
        ASSERT_EQ(applies.size(), 1u);
        EXPECT_EQ(applies[0].deployment_id(), dep.deployment().id());
        EXPECT_EQ(applies[0].bundle().manifest().version(), pushed.version());
        EXPECT_EQ(applies[0].bundle().files(0).content(), b.files(0).content());
    }
    EXPECT_LT(thread_count(), kMaxThreads) << "threads after the deployment";
}

// A stream that reports more often than ping_interval is evidently alive and is not pinged;
// a quiet one next to it is, every interval.
TEST_F(LinkScale, OnlyQuietStreamsArePinged) {
    auto chatty = std::make_unique<ReactorSensor>(link_.get(), "chatty");
    auto quiet = std::make_unique<ReactorSensor>(link_.get(), "quiet");
    ASSERT_TRUE(wait_for([&] { return chatty->welcomed() && quiet->welcomed(); }, 30s));
    const auto until = std::chrono::steady_clock::now() + 4 * kPing;
    while (std::chrono::steady_clock::now() < until) {
        pb::SensorMessage m;
        m.mutable_metrics()->set_timestamp(
            std::chrono::system_clock::now().time_since_epoch().count());
        m.mutable_metrics()->set_interval_ms(50);
        chatty->send(std::move(m));
        std::this_thread::sleep_for(kPing / 8);
    }
    EXPECT_GE(quiet->pings().size(), 3u);
    EXPECT_EQ(chatty->pings().size(), 0u);
    // Once it falls quiet, it is pinged again.
    ASSERT_TRUE(wait_for([&] { return !chatty->pings().empty(); }, 30s))
        << "a stream that stopped reporting was never pinged";
}

}  // namespace
}  // namespace picket::manager::service
