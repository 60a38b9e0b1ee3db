// The agent against a fake manager: a real gRPC SensorLink server on 127.0.0.1 (port picked by
// the kernel) that records what the sensor sends and lets the test send ApplyBundle / Ping.
// The sensor side is test lambdas (SensorHooks); no engine.
#include "sensor/agent/agent.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "common/bundle/bundle.h"
#include "common/config.h"
#include "common/pki/pki.h"
#include "picket/v1/picket.grpc.pb.h"
#include "sensor/engine/engine.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"
#include "tools/trafficgen/generator.h"

namespace picket::sensor::agent {
namespace {

namespace fs = std::filesystem;
namespace v1 = picket::v1;
using namespace std::chrono_literals;

constexpr auto kWait = 10s;

class FakeManager final : public v1::SensorLink::Service {
public:
    explicit FakeManager(bool accept = true) : accept_(accept) {}

    grpc::Status Connect(
        grpc::ServerContext* ctx,
        grpc::ServerReaderWriter<v1::ManagerMessage, v1::SensorMessage>* stream) override {
        v1::SensorMessage first;
        if (!stream->Read(&first)) {
            return grpc::Status::OK;
        }
        record(first);
        v1::ManagerMessage welcome;
        welcome.mutable_welcome()->set_accepted(accept_);
        welcome.mutable_welcome()->set_reason(accept_ ? "welcome" : "unknown sensor");
        stream->Write(welcome);
        if (!accept_) {
            return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "unknown sensor");
        }
        bool done = false;
        std::thread reader([&] {
            v1::SensorMessage m;
            while (stream->Read(&m)) {
                record(m);
            }
            std::lock_guard lk(mu_);
            done = true;
            cv_.notify_all();
        });
        for (;;) {
            std::vector<v1::ManagerMessage> out;
            {
                std::unique_lock lk(mu_);
                cv_.wait_for(lk, 20ms, [&] { return done || closing_ || !outbox_.empty(); });
                if (done || closing_) {
                    break;
                }
                out.swap(outbox_);
            }
            for (const auto& m : out) {
                stream->Write(m);
            }
        }
        ctx->TryCancel();
        reader.join();
        return grpc::Status::OK;
    }

    void send(const v1::ManagerMessage& m) {
        std::lock_guard lk(mu_);
        outbox_.push_back(m);
        cv_.notify_all();
    }
    void close_streams() {
        std::lock_guard lk(mu_);
        closing_ = true;
        cv_.notify_all();
    }

    // Waits until at least n received messages satisfy `which`; returns them.
    template <class Pred>
    std::vector<v1::SensorMessage> wait_for(size_t n, Pred which,
                                            std::chrono::milliseconds timeout = kWait) {
        std::unique_lock lk(mu_);
        std::vector<v1::SensorMessage> hits;
        cv_.wait_for(lk, timeout, [&] {
            hits.clear();
            for (const auto& m : received_) {
                if (which(m)) {
                    hits.push_back(m);
                }
            }
            return hits.size() >= n;
        });
        hits.resize(std::min(hits.size(), n));
        return hits;
    }
    // Waits until the alert batches received carry at least n alerts in all; returns them in
    // order (the sender may cut them into several batches: it takes what is queued when it
    // wakes) and the sum of the batches' dropped counts.
    std::vector<v1::Alert> alerts(size_t n, uint64_t& dropped) {
        std::unique_lock lk(mu_);
        std::vector<v1::Alert> got;
        cv_.wait_for(lk, kWait, [&] {
            got.clear();
            dropped = 0;
            for (const auto& m : received_) {
                if (m.has_alerts()) {
                    got.insert(got.end(), m.alerts().alerts().begin(), m.alerts().alerts().end());
                    dropped += m.alerts().dropped();
                }
            }
            return got.size() >= n;
        });
        return got;
    }
    std::vector<v1::SensorMessage> hellos(size_t n) {
        return wait_for(n, [](const v1::SensorMessage& m) { return m.has_hello(); });
    }
    std::vector<v1::SensorMessage> metrics(size_t n) {
        return wait_for(n, [](const v1::SensorMessage& m) { return m.has_metrics(); });
    }
    std::vector<v1::SensorMessage> results(size_t n) {
        return wait_for(n, [](const v1::SensorMessage& m) { return m.has_apply_result(); });
    }

private:
    void record(const v1::SensorMessage& m) {
        std::lock_guard lk(mu_);
        received_.push_back(m);
        cv_.notify_all();
    }

    const bool accept_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<v1::SensorMessage> received_;
    std::vector<v1::ManagerMessage> outbox_;
    bool closing_ = false;
};

struct RunningServer {
    std::unique_ptr<FakeManager> service;
    std::unique_ptr<grpc::Server> server;
    int port = 0;

    void stop() {
        service->close_streams();
        server->Shutdown(std::chrono::system_clock::now() + 500ms);
        server->Wait();
    }
};

RunningServer start_server(int port, bool accept = true,
                           std::shared_ptr<grpc::ServerCredentials> creds = nullptr) {
    RunningServer s;
    s.service = std::make_unique<FakeManager>(accept);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:" + std::to_string(port),
                       creds ? creds : grpc::InsecureServerCredentials(), &s.port);
    b.RegisterService(s.service.get());
    s.server = b.BuildAndStart();
    return s;
}

const std::string kRules =
    "alert tcp any any -> any 80 (msg:\"one\"; content:\"GET\"; sid:1; rev:1;)\n"
    "alert tcp any any -> any 80 (msg:\"two\"; content:\"POST\"; sid:2; rev:1;)\n";
const std::string kConfig =
    "vars:\n"
    "  address-groups:\n"
    "    HOME_NET: \"[10.0.0.0/8]\"\n"
    "  port-groups:\n"
    "    HTTP_PORTS: \"8080\"\n";

v1::Bundle make_bundle(uint64_t version, const std::string& rules = kRules) {
    v1::Bundle b;
    auto* m = b.mutable_manifest();
    m->set_name("et");
    m->set_version(version);
    m->set_author("test");
    m->set_message("test bundle");
    m->set_created_at(1700000000000000000);
    auto add = [&](const std::string& path, const std::string& content) {
        auto* f = b.add_files();
        f->set_path(path);
        f->set_content(content);
    };
    add("rules/a.rules", rules);
    add("config.yaml", kConfig);
    add("tuning.yaml", "disable: [2]\n");
    add("classification.config", "config classification: trojan,Trojan,1\n");
    bundle::update_manifest_files(b);
    return b;
}

v1::ManagerMessage apply_message(const v1::Bundle& b, const std::string& id) {
    v1::ManagerMessage m;
    m.mutable_apply_bundle()->set_deployment_id(id);
    *m.mutable_apply_bundle()->mutable_bundle() = b;
    return m;
}

std::string read_text(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// What the fake engine saw.
struct FakeEngine {
    std::mutex mu;
    std::vector<detect::DetectConfig> reloads;
    bool fail = false;
    uint32_t loaded_override = UINT32_MAX;  // UINT32_MAX = one per rule file

    SensorHooks hooks() {
        SensorHooks h;
        h.stats = [] {
            StatsSnapshot s;
            s.set("decoder.pkts", 42);
            s.set("detect.alert", 3);
            return s;
        };
        h.worker_stats = [] { return std::vector<WorkerCounters>{{0, 10, 1000}, {1, 20, 2000}}; };
        h.reload = [this](const detect::DetectConfig& c, detect::LoadSummary* s,
                          std::string* error) {
            std::lock_guard lk(mu);
            reloads.push_back(c);
            if (fail) {
                *error = "boom: cannot compile";
                return false;
            }
            s->loaded = loaded_override == UINT32_MAX ? static_cast<uint32_t>(c.rule_files.size())
                                                      : loaded_override;
            s->skipped = 1;
            s->compile_ms = 12;
            return true;
        };
        return h;
    }
    size_t count() {
        std::lock_guard lk(mu);
        return reloads.size();
    }
};

class AgentTest : public ::testing::Test {
protected:
    void SetUp() override {
        state_ = tmp_.path();
        server_ = start_server(0);
    }
    void TearDown() override {
        agent_.reset();
        server_.stop();
    }
    AgentOptions options(int port) {
        AgentOptions o;
        o.manager = "127.0.0.1:" + std::to_string(port);
        o.name = "s1";
        o.token = "tok-123";
        o.insecure = true;
        o.state_dir = state_;
        o.labels = {{"site", "paris"}, {"rack", "r1"}};
        o.host = "h1";
        o.version = "0.1.0";
        o.capture_mode = v1::CAPTURE_MODE_AF_PACKET;
        o.capture_source = "eth1";
        o.workers = 2;
        o.started_at_ns = 1234;
        o.metrics_interval = 100ms;
        o.backoff = Backoff{50ms, 200ms, 0.2};
        o.base_detect.address_vars["EXTERNAL_NET"] = "!$HOME_NET";
        return o;
    }
    void start_agent(AgentOptions o) {
        agent_ = std::make_unique<Agent>(std::move(o), engine_.hooks());
        agent_->start();
    }

    picket::testing::TempDir tmp_{"picket-agent-test"};
    fs::path state_;
    RunningServer server_;
    FakeEngine engine_;
    std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, HelloCarriesIdentity) {
    start_agent(options(server_.port));
    auto hellos = server_.service->hellos(1);
    ASSERT_EQ(hellos.size(), 1u);
    const auto& h = hellos[0].hello();
    EXPECT_EQ(h.sensor_name(), "s1");
    EXPECT_EQ(h.host(), "h1");
    EXPECT_EQ(h.version(), "0.1.0");
    EXPECT_EQ(h.capture_mode(), v1::CAPTURE_MODE_AF_PACKET);
    EXPECT_EQ(h.capture_source(), "eth1");
    EXPECT_EQ(h.workers(), 2u);
    EXPECT_EQ(h.labels().size(), 2u);
    EXPECT_EQ(h.labels().at("site"), "paris");
    EXPECT_EQ(h.labels().at("rack"), "r1");
    EXPECT_EQ(h.bundle().version(), 0u);
    EXPECT_EQ(h.enrollment_token(), "tok-123");
    EXPECT_EQ(h.started_at(), 1234);
}

// Alerts reach the manager in batches; past the bounded queue the oldest are dropped and
// the batch says how many.
TEST_F(AgentTest, AlertsAreForwardedInBoundedBatches) {
    start_agent(options(server_.port));
    server_.service->hellos(1);
    for (uint32_t i = 0; i < 3; ++i) {
        v1::Alert a;
        a.set_sid(100 + i);
        a.set_msg("m");
        agent_->on_alert(a);
    }
    uint64_t dropped = 0;
    const std::vector<v1::Alert> sent = server_.service->alerts(3, dropped);
    ASSERT_EQ(sent.size(), 3u);
    EXPECT_EQ(sent[0].sid(), 100u);
    EXPECT_EQ(sent[1].sid(), 101u);
    EXPECT_EQ(sent[2].sid(), 102u);
    EXPECT_EQ(dropped, 0u);
    // Counted once Write() returned, which can be after the server has the batch.
    EXPECT_TRUE(picket::testing::wait_until(
        [&] { return agent_->counters().alerts_sent.load(); }, [](uint64_t n) { return n >= 3; },
        5s, "the agent to count its 3 alerts as sent (alerts_sent >= 3)"));
    EXPECT_EQ(agent_->counters().alerts_sent.load(), 3u);

    for (size_t i = 0; i < Agent::kMaxPendingAlerts + 5; ++i) {
        v1::Alert a;
        a.set_sid(1);
        agent_->on_alert(a);
    }
    EXPECT_EQ(agent_->counters().alerts_dropped.load(), 5u);
    auto more = server_.service->wait_for(
        1, [](const v1::SensorMessage& m) { return m.has_alerts() && m.alerts().dropped() == 5; });
    ASSERT_FALSE(more.empty());
    EXPECT_LE(static_cast<size_t>(more[0].alerts().alerts_size()), Agent::kMaxAlertsPerBatch);
}

TEST_F(AgentTest, MetricsArriveAtTheInterval) {
    start_agent(options(server_.port));
    auto reports = server_.service->metrics(3);
    ASSERT_EQ(reports.size(), 3u);
    const auto& first = reports[0].metrics();
    EXPECT_EQ(first.seq(), 1u);
    EXPECT_EQ(reports[1].metrics().seq(), 2u);
    EXPECT_EQ(reports[2].metrics().seq(), 3u);
    EXPECT_EQ(first.interval_ms(), 100u);
    EXPECT_EQ(first.counters().at("decoder.pkts"), 42u);
    EXPECT_EQ(first.counters().at("detect.alert"), 3u);
    ASSERT_EQ(first.workers_size(), 2);
    EXPECT_EQ(first.workers(1).worker(), 1u);
    EXPECT_EQ(first.workers(1).packets(), 20u);
    EXPECT_EQ(first.workers(1).bytes(), 2000u);
    EXPECT_EQ(first.bundle_version(), 0u);
    // Snapshots are taken on a fixed schedule: two intervals between the first and the third.
    const int64_t span_ms = (reports[2].metrics().timestamp() - first.timestamp()) / 1000000;
    EXPECT_GE(span_ms, 150);
    EXPECT_LT(span_ms, 2000);
}

TEST_F(AgentTest, PingIsAnsweredWithPong) {
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    v1::ManagerMessage ping;
    ping.mutable_ping()->set_nonce(77);
    ping.mutable_ping()->set_sent_at(99);
    server_.service->send(ping);
    auto pongs = server_.service->wait_for(1, [](const auto& m) { return m.has_pong(); });
    ASSERT_EQ(pongs.size(), 1u);
    EXPECT_EQ(pongs[0].pong().nonce(), 77u);
    EXPECT_EQ(pongs[0].pong().sent_at(), 99);
}

TEST_F(AgentTest, ValidBundleIsAppliedAndRecorded) {
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    const v1::Bundle b = make_bundle(7);
    const std::string name = bundle::versioned_dir_name(b);
    server_.service->send(apply_message(b, "d1"));
    auto results = server_.service->results(1);
    ASSERT_EQ(results.size(), 1u);
    const auto& r = results[0].apply_result();
    EXPECT_TRUE(r.applied());
    EXPECT_EQ(r.deployment_id(), "d1");
    EXPECT_EQ(r.version(), 7u);
    EXPECT_EQ(r.rules_loaded(), 1u);
    EXPECT_EQ(r.rules_skipped(), 1u);
    EXPECT_EQ(r.compile_ms(), 12u);
    EXPECT_EQ(r.errors_size(), 0);
    EXPECT_EQ(r.running().version(), 7u);
    EXPECT_EQ(r.running().sha256(), bundle::bundle_sha256(b));

    ASSERT_EQ(engine_.count(), 1u);
    const detect::DetectConfig c = engine_.reloads[0];
    const fs::path effective = state_ / "effective" / name;
    ASSERT_EQ(c.rule_files.size(), 1u);
    EXPECT_EQ(c.rule_files[0], (effective / "rules/a.rules").string());
    EXPECT_EQ(c.address_vars.at("HOME_NET"), "[10.0.0.0/8]");
    EXPECT_EQ(c.address_vars.at("EXTERNAL_NET"), "!$HOME_NET");  // the sensor's base config
    EXPECT_EQ(c.port_vars.at("HTTP_PORTS"), "8080");
    EXPECT_EQ(c.classification_file,
              (state_ / "bundles" / name / "classification.config").string());
    EXPECT_EQ(c.threshold_file, "");
    // tuning.yaml disabled sid 2 in the loaded copy; the received bundle is kept unchanged.
    const std::string loaded = read_text(c.rule_files[0]);
    EXPECT_EQ(loaded.substr(0, loaded.find('\n') + 1),
              "alert tcp any any -> any 80 (msg:\"one\"; content:\"GET\"; sid:1; rev:1;)\n");
    auto second = bundle::scan_rule(loaded.substr(loaded.find('\n') + 1));
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(second->id.sid, 2u);
    EXPECT_FALSE(second->enabled);
    EXPECT_EQ(read_text(state_ / "bundles" / name / "rules/a.rules"), kRules);
    EXPECT_EQ(read_text(state_ / "current"), name + "\n");
    EXPECT_EQ(agent_->running_bundle().version(), 7u);
    EXPECT_EQ(agent_->counters().bundles_applied.load(), 1u);

    // Metrics after the swap carry the new version.
    auto reports = server_.service->wait_for(
        1, [](const auto& m) { return m.has_metrics() && m.metrics().bundle_version() == 7; });
    EXPECT_EQ(reports.size(), 1u);
}

TEST_F(AgentTest, HashMismatchIsRejectedWithoutReload) {
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    v1::Bundle b = make_bundle(8);
    b.mutable_files(0)->set_content(kRules + "alert ip any any -> any any (sid:9;)\n");
    server_.service->send(apply_message(b, "d2"));
    auto results = server_.service->results(1);
    ASSERT_EQ(results.size(), 1u);
    const auto& r = results[0].apply_result();
    EXPECT_FALSE(r.applied());
    EXPECT_EQ(r.version(), 8u);
    ASSERT_GE(r.errors_size(), 1);
    EXPECT_NE(r.errors(0).find("rules/a.rules"), std::string::npos) << r.errors(0);
    EXPECT_EQ(r.running().version(), 0u);
    EXPECT_EQ(engine_.count(), 0u);
    EXPECT_FALSE(fs::exists(state_ / "current"));
    EXPECT_EQ(agent_->counters().bundles_rejected.load(), 1u);
}

TEST_F(AgentTest, FailedReloadIsRejectedWithItsError) {
    engine_.fail = true;
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    server_.service->send(apply_message(make_bundle(9), "d3"));
    auto results = server_.service->results(1);
    ASSERT_EQ(results.size(), 1u);
    const auto& r = results[0].apply_result();
    EXPECT_FALSE(r.applied());
    ASSERT_EQ(r.errors_size(), 1);
    EXPECT_EQ(r.errors(0), "reload failed: boom: cannot compile");
    EXPECT_EQ(r.running().version(), 0u);
    EXPECT_EQ(engine_.count(), 1u);
    EXPECT_FALSE(fs::exists(state_ / "current"));
}

TEST_F(AgentTest, BundleWithNoLoadedRuleIsRejectedAndRolledBack) {
    engine_.loaded_override = 0;
    AgentOptions o = options(server_.port);
    o.running.config.rule_files = {"/etc/picket/local.rules"};
    start_agent(o);
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    server_.service->send(apply_message(make_bundle(10), "d4"));
    auto results = server_.service->results(1);
    ASSERT_EQ(results.size(), 1u);
    const auto& r = results[0].apply_result();
    EXPECT_FALSE(r.applied());
    ASSERT_GE(r.errors_size(), 1);
    EXPECT_EQ(r.errors(0), "bundle et v10: no rule loaded (1 skipped)");
    // The previous rules were put back.
    ASSERT_EQ(engine_.count(), 2u);
    EXPECT_EQ(engine_.reloads[1].rule_files, std::vector<std::string>{"/etc/picket/local.rules"});
    EXPECT_FALSE(fs::exists(state_ / "current"));
}

TEST_F(AgentTest, BundleWithoutEnabledRuleIsRejectedBeforeReload) {
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    server_.service->send(apply_message(
        make_bundle(11, "# just a comment\n# alert tcp any any -> any any (sid:2;)\n"), "d5"));
    auto results = server_.service->results(1);
    ASSERT_EQ(results.size(), 1u);
    EXPECT_FALSE(results[0].apply_result().applied());
    ASSERT_EQ(results[0].apply_result().errors_size(), 1);
    EXPECT_EQ(results[0].apply_result().errors(0),
              "bundle et v11: no enabled rule in rules/*.rules");
    EXPECT_EQ(engine_.count(), 0u);
}

TEST_F(AgentTest, LastGoodBundleIsLoadedOnTheNextStart) {
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    const v1::Bundle b = make_bundle(12);
    server_.service->send(apply_message(b, "d6"));
    ASSERT_EQ(server_.service->results(1).size(), 1u);
    agent_.reset();

    // No manager needed: main.cc calls this before building the engine.
    AgentOptions o = options(server_.port);
    auto last = load_last_good(state_, o.base_detect);
    ASSERT_TRUE(last.ok()) << last.status();
    ASSERT_TRUE(last->has_value());
    const RunningBundle& rb = **last;
    EXPECT_EQ(rb.ref.name(), "et");
    EXPECT_EQ(rb.ref.version(), 12u);
    EXPECT_EQ(rb.ref.sha256(), bundle::bundle_sha256(b));
    EXPECT_EQ(rb.config.rule_files, engine_.reloads[0].rule_files);
    EXPECT_EQ(rb.config.address_vars.at("HOME_NET"), "[10.0.0.0/8]");

    // The next process says it runs that bundle.
    o.running = rb;
    start_agent(o);
    auto hellos = server_.service->hellos(2);
    ASSERT_EQ(hellos.size(), 2u);
    EXPECT_EQ(hellos[1].hello().bundle().version(), 12u);
    EXPECT_EQ(hellos[1].hello().bundle().sha256(), bundle::bundle_sha256(b));
}

TEST_F(AgentTest, NoLastGoodBundle) {
    auto last = load_last_good(state_, {});
    ASSERT_TRUE(last.ok());
    EXPECT_FALSE(last->has_value());
}

TEST_F(AgentTest, DamagedLastGoodBundleIsAnError) {
    const v1::Bundle b = make_bundle(13);
    auto prepared = prepare_bundle(b, state_, {});
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    ASSERT_TRUE(record_last_good(state_, prepared->running.ref).ok());
    std::ofstream(state_ / "bundles" / bundle::versioned_dir_name(b) / "rules/a.rules")
        << "alert ip any any -> any any (sid:666;)\n";
    auto last = load_last_good(state_, {});
    EXPECT_EQ(last.status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(AgentTest, ReconnectsAfterTheManagerComesBack) {
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    // The Hello can arrive before the agent has taken the Welcome: wait for the session.
    ASSERT_TRUE(picket::testing::wait_until([&] { return agent_->counters().sessions.load(); },
                                            [](uint64_t n) { return n >= 1; }, 10s,
                                            "the agent to take the Welcome (sessions >= 1)"));
    ASSERT_EQ(agent_->counters().sessions.load(), 1u);
    const int port = server_.port;
    server_.stop();
    // Down for a while: several attempts with backoff, reports buffered.
    EXPECT_TRUE(picket::testing::wait_until(
        [&] { return agent_->counters().connect_attempts.load(); },
        [](uint64_t n) { return n >= 3; }, 10s,
        "3 reconnect attempts while the manager is down (connect_attempts >= 3)", 10ms));
    EXPECT_FALSE(agent_->connected());
    server_ = start_server(port);
    ASSERT_EQ(server_.port, port);
    auto hellos = server_.service->hellos(1);
    ASSERT_EQ(hellos.size(), 1u);
    EXPECT_EQ(hellos[0].hello().sensor_name(), "s1");
    // Reports taken while disconnected are delivered, in order.
    auto reports = server_.service->metrics(3);
    ASSERT_EQ(reports.size(), 3u);
    EXPECT_EQ(reports[1].metrics().seq(), reports[0].metrics().seq() + 1);
    EXPECT_EQ(reports[2].metrics().seq(), reports[1].metrics().seq() + 1);
    EXPECT_EQ(agent_->counters().sessions.load(), 2u);
}

TEST_F(AgentTest, BufferDropsOldestReportsWhileDisconnected) {
    const int port = server_.port;
    server_.stop();
    AgentOptions o = options(port);
    o.metrics_interval = 20ms;
    o.max_buffered_reports = 3;
    start_agent(o);
    // Reports are taken every 20 ms; on a loaded machine fewer fit in any fixed sleep, so
    // wait (bounded) until the buffer has overflowed a few times.
    EXPECT_TRUE(picket::testing::wait_until(
        [&] { return agent_->counters().reports_dropped.load(); },
        [](uint64_t n) { return n >= 5; }, 10s,
        "the report buffer to overflow 5 times (reports_dropped >= 5)", 10ms));
    server_ = start_server(port);
    auto reports = server_.service->metrics(3);
    ASSERT_EQ(reports.size(), 3u);
    // The oldest were dropped: the first delivered report is not the first taken.
    EXPECT_GT(reports[0].metrics().seq(), 1u);
    EXPECT_EQ(reports[1].metrics().seq(), reports[0].metrics().seq() + 1);
    EXPECT_EQ(reports[2].metrics().seq(), reports[1].metrics().seq() + 1);
}

TEST_F(AgentTest, RefusedSensorKeepsRetrying) {
    const int port = server_.port;
    server_.stop();
    server_ = start_server(port, /*accept=*/false);
    start_agent(options(port));
    ASSERT_EQ(server_.service->hellos(2).size(), 2u);
    EXPECT_FALSE(agent_->connected());
    EXPECT_EQ(agent_->counters().sessions.load(), 0u);
    EXPECT_EQ(agent_->counters().reports_sent.load(), 0u);
}

TEST_F(AgentTest, StopIsPromptWhileConnected) {
    start_agent(options(server_.port));
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    const auto t0 = std::chrono::steady_clock::now();
    agent_->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
    EXPECT_FALSE(agent_->connected());
}

// Mutual TLS with certificates from the fleet CA; a sensor trusting another CA never gets in.
TEST_F(AgentTest, MutualTlsWithFleetCertificates) {
    const fs::path fleet = state_ / "fleet";
    const fs::path other = state_ / "other";
    ASSERT_TRUE(pki::init_ca(fleet, "Fleet CA", 30).ok());
    ASSERT_TRUE(pki::init_ca(other, "Other CA", 30).ok());
    ASSERT_TRUE(pki::issue(fleet, pki::CertKind::kManager, "manager", {"127.0.0.1"}, 30).ok());
    ASSERT_TRUE(pki::issue(fleet, pki::CertKind::kSensor, "s1", {}, 30).ok());
    ASSERT_TRUE(pki::issue(other, pki::CertKind::kSensor, "s1", {}, 30).ok());
    auto mc = pki::load_credentials(fleet / "manager.crt", fleet / "manager.key", fleet / "ca.crt",
                                    pki::Purpose::kServer);
    ASSERT_TRUE(mc.ok()) << mc.status();
    grpc::SslServerCredentialsOptions ssl(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = mc->ca_pem;
    ssl.pem_key_cert_pairs.push_back({mc->key_pem, mc->cert_pem});
    RunningServer tls = start_server(0, true, grpc::SslServerCredentials(ssl));

    AgentOptions bad = options(tls.port);
    bad.insecure = false;
    bad.token.clear();
    // A sensor of another fleet: valid credentials, but neither side trusts the other.
    bad.tls_cert = (other / "s1.crt").string();
    bad.tls_key = (other / "s1.key").string();
    bad.ca = (other / "ca.crt").string();
    ASSERT_TRUE(validate_options(bad).ok());
    ASSERT_TRUE(check_credentials(bad).ok());
    Agent refused(bad, engine_.hooks());
    refused.start();
    std::this_thread::sleep_for(500ms);
    refused.stop();
    EXPECT_GE(refused.counters().connect_attempts.load(), 2u);
    EXPECT_EQ(refused.counters().sessions.load(), 0u);

    AgentOptions good = bad;
    good.tls_cert = (fleet / "s1.crt").string();
    good.tls_key = (fleet / "s1.key").string();
    good.ca = (fleet / "ca.crt").string();
    ASSERT_TRUE(check_credentials(good).ok());
    AgentOptions mixed = good;
    mixed.ca = (other / "ca.crt").string();
    EXPECT_EQ(check_credentials(mixed).code(), absl::StatusCode::kFailedPrecondition);
    mixed.ca = (state_ / "missing.crt").string();
    EXPECT_FALSE(check_credentials(mixed).ok());
    start_agent(good);
    auto hellos = tls.service->hellos(1);
    ASSERT_EQ(hellos.size(), 1u);
    EXPECT_EQ(hellos[0].hello().sensor_name(), "s1");
    EXPECT_EQ(hellos[0].hello().enrollment_token(), "");
    agent_.reset();
    tls.stop();
}

// The real wiring of main.cc: an Engine replays a generated pcap while the manager deploys a
// bundle; the engine's own load summary comes back in ApplyResult.
TEST_F(AgentTest, RealEngineAppliesABundleWhilePacketsFlow) {
    tools::trafficgen::Options g;
    g.seed = 3;
    g.sessions = 200;
    g.attacks = {"cmd.exe"};
    g.attack_share = 0.5;
    tools::trafficgen::generate(g, (state_ / "t.pcap").string());
    std::ofstream(state_ / "local.rules")
        << "alert tcp any any -> any any (msg:\"local\"; content:\"zzz\"; sid:100;)\n";
    Config cfg;
    YAML::Node list(YAML::NodeType::Sequence);
    for (int i = 0; i < 200; ++i) {
        list.push_back((state_ / "t.pcap").string());
    }
    cfg.set_value("pcap-file.paths", list);
    cfg.set_value("workers", YAML::Node(2));
    cfg.set_value("default-log-dir", YAML::Node(state_.string()));
    cfg.set_value("stats-interval", YAML::Node(3600));
    engine::SensorConfig sc = engine::load_sensor_config(cfg);
    sc.detect.rule_files = {(state_ / "local.rules").string()};
    engine::Engine engine(sc);
    engine::RunResult run_result;
    std::thread runner([&] { run_result = engine.run(); });

    AgentOptions o = options(server_.port);
    o.base_detect = sc.detect;
    o.running.config = sc.detect;
    SensorHooks hooks;
    hooks.stats = [&engine] { return engine.collect_stats(); };
    hooks.reload = [&engine](const detect::DetectConfig& c, detect::LoadSummary* s,
                             std::string* e) { return engine.reload(c, s, e); };
    agent_ = std::make_unique<Agent>(std::move(o), std::move(hooks));
    agent_->start();
    ASSERT_EQ(server_.service->hellos(1).size(), 1u);
    server_.service->send(apply_message(
        make_bundle(20,
                    "alert tcp any any -> any any (msg:\"cmd\"; content:\"cmd.exe\"; "
                    "sid:1;)\nalert tcp any any -> any any (msg:\"x\"; sid:2; foo:1;)\n"),
        "d9"));
    auto results = server_.service->results(1);
    ASSERT_EQ(results.size(), 1u);
    const auto& r = results[0].apply_result();
    EXPECT_TRUE(r.applied());
    EXPECT_EQ(r.rules_loaded(), 1u);  // sid 2 is disabled by the bundle's tuning.yaml
    EXPECT_EQ(r.rules_skipped(), 0u);
    EXPECT_EQ(r.running().version(), 20u);
    auto reports = server_.service->wait_for(1, [](const v1::SensorMessage& m) {
        return m.has_metrics() && m.metrics().counters().count("decoder.pkts") == 1 &&
               m.metrics().counters().at("decoder.pkts") > 0;
    });
    EXPECT_EQ(reports.size(), 1u);
    engine.stop();
    runner.join();
    agent_->stop();
}

// ---------------------------------------------------------------------------------------
// Option checks

TEST(AgentOptionsTest, InsecureOnlyTowardsLoopback) {
    EXPECT_TRUE(check_insecure("127.0.0.1:50051").ok());
    EXPECT_TRUE(check_insecure("127.8.9.10:1").ok());
    EXPECT_TRUE(check_insecure("localhost:50051").ok());
    EXPECT_TRUE(check_insecure("LOCALHOST:50051").ok());
    EXPECT_TRUE(check_insecure("[::1]:50051").ok());
    EXPECT_TRUE(check_insecure("[::ffff:127.0.0.1]:50051").ok());
    EXPECT_EQ(check_insecure("10.0.0.1:50051").code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(check_insecure("128.0.0.1:50051").code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(check_insecure("manager.example:443").code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(check_insecure("[2001:db8::1]:443").code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(check_insecure("localhost.evil.example:443").code(),
              absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(check_insecure("127.0.0.1").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(check_insecure("127.0.0.1:0").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(check_insecure("127.0.0.1:65536").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(check_insecure("::1:50051").code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(check_insecure(":50051").code(), absl::StatusCode::kInvalidArgument);
}

TEST(AgentOptionsTest, ValidateOptions) {
    AgentOptions o;
    o.manager = "10.1.2.3:50051";
    o.name = "s1";
    o.state_dir = "/var/lib/picket";
    o.insecure = true;
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kPermissionDenied);
    o.insecure = false;
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);  // no --ca
    o.ca = "ca.crt";
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);  // no credential
    o.token = "t";
    EXPECT_TRUE(validate_options(o).ok());
    o.tls_cert = "s1.crt";
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);  // no --tls-key
    o.tls_key = "s1.key";
    EXPECT_TRUE(validate_options(o).ok());
    o.name = "bad name";
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);
    o.name = "s1";
    o.state_dir.clear();
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);
    o.state_dir = "/var/lib/picket";
    o.manager = "127.0.0.1:50051";
    o.insecure = true;  // with TLS files: contradictory
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);
    o.ca = o.tls_cert = o.tls_key = "";
    EXPECT_TRUE(validate_options(o).ok());
}

TEST(AgentOptionsTest, ParseLabels) {
    auto ok = parse_labels("site=paris,rack=r1,empty=");
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(*ok, (std::map<std::string, std::string>{
                       {"site", "paris"}, {"rack", "r1"}, {"empty", ""}}));
    EXPECT_TRUE(parse_labels("")->empty());
    EXPECT_EQ(parse_labels("site").status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parse_labels("=x").status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parse_labels("a=1,a=2").status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parse_labels("a=1,").status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parse_labels("a=b c").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AgentOptionsTest, BackoffDoublesToTheCapWithJitter) {
    const Backoff b{500ms, 30000ms, 0.2};
    EXPECT_EQ(backoff_delay(b, 0, 0.5), 500ms);
    EXPECT_EQ(backoff_delay(b, 1, 0.5), 1000ms);
    EXPECT_EQ(backoff_delay(b, 3, 0.5), 4000ms);
    EXPECT_EQ(backoff_delay(b, 1, 0.0), 800ms);
    EXPECT_EQ(backoff_delay(b, 1, 0.75), 1100ms);
    EXPECT_EQ(backoff_delay(b, 6, 0.5), 30000ms);
    EXPECT_EQ(backoff_delay(b, 6, 0.0), 24000ms);
    EXPECT_EQ(backoff_delay(b, 1000, 0.5), 30000ms);
}

}  // namespace
}  // namespace picket::sensor::agent
