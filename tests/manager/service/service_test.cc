// picket-manager services over real gRPC on 127.0.0.1 (port 0), with a temporary SQLite store
// and fake sensors (SensorLink clients, service_fixture.h).
#include "manager/service/service.h"

#include <sqlite3.h>
#include <functional>

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <thread>

#include "common/bundle/bundle.h"
#include "common/metrics/metrics.h"
#include "common/pki/pki.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "manager/ha/coordinator.h"
#include "manager/service/internal.h"
#include "picket/v1/picket.grpc.pb.h"
#include "tests/manager/service/service_fixture.h"
#include "tests/support/postgres_server.h"

namespace picket::manager::service {
namespace {

namespace pb = picket::v1;
using namespace std::chrono_literals;

using testing::FakeSensor;
using testing::read_file;
using testing::TempDir;
using testing::wait_for;

constexpr const char* kTempPrefix = "picket-service";

pb::Bundle make_bundle(const std::string& name, const std::string& rules) {
    pb::Bundle b;
    b.mutable_manifest()->set_name(name);
    b.mutable_manifest()->set_author("tester");
    b.mutable_manifest()->set_message("test bundle");
    b.mutable_manifest()->set_created_at(1'700'000'000'000'000'000);
    pb::BundleFile* f = b.add_files();
    f->set_path("rules/a.rules");
    f->set_content(rules);
    bundle::update_manifest_files(b);
    return b;
}

const char* const kRuleV1 = "alert ip any any -> any any (msg:\"one\"; sid:1; rev:1;)\n";
const char* const kRuleV2 = "alert ip any any -> any any (msg:\"two\"; sid:1; rev:2;)\n";

pb::Hello hello(const std::string& name, uint64_t version = 0,
                std::map<std::string, std::string> labels = {}) {
    pb::Hello h;
    h.set_sensor_name(name);
    h.set_host("host-" + name);
    h.set_version("0.1.0");
    h.set_capture_mode(pb::CAPTURE_MODE_PCAP_FILE);
    h.set_workers(2);
    h.mutable_labels()->insert(labels.begin(), labels.end());
    h.mutable_bundle()->set_version(version);
    return h;
}

class Admin {
public:
    Admin(std::shared_ptr<grpc::Channel> ch, std::string token = {})
        : stub_(pb::FleetAdmin::NewStub(ch)), token_(std::move(token)) {}

    template <typename Req, typename Resp, typename Method>
    grpc::Status call(Method method, const Req& req, Resp* resp) {
        grpc::ClientContext ctx;
        if (!token_.empty()) {
            ctx.AddMetadata("authorization", "Bearer " + token_);
        }
        return ((*stub_).*method)(&ctx, req, resp);
    }
    // WatchDeployment to its end: every message, in order, and the final status.
    grpc::Status watch(const std::string& id, std::vector<pb::Deployment>* seen,
                       const std::function<void(const pb::Deployment&)>& each = {}) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
        if (!token_.empty()) {
            ctx.AddMetadata("authorization", "Bearer " + token_);
        }
        pb::WatchDeploymentRequest req;
        req.set_id(id);
        auto reader = stub_->WatchDeployment(&ctx, req);
        pb::WatchDeploymentResponse resp;
        while (reader->Read(&resp)) {
            seen->push_back(resp.deployment());
            if (each) {
                each(resp.deployment());
            }
        }
        return reader->Finish();
    }
    uint64_t push(const pb::Bundle& b) {
        pb::PushBundleRequest req;
        *req.mutable_bundle() = b;
        pb::PushBundleResponse resp;
        grpc::Status st = call(&pb::FleetAdmin::Stub::PushBundle, req, &resp);
        EXPECT_TRUE(st.ok()) << st.error_message();
        return resp.version();
    }
    grpc::Status deploy(uint64_t version, const std::string& selector, pb::DeployResponse* resp,
                        uint32_t canary = 0, uint32_t soak = 0, double max_alert_rate = 0) {
        pb::DeployRequest req;
        req.set_version(version);
        req.set_selector(selector);
        req.set_canary_percent(canary);
        req.set_soak_seconds(soak);
        req.mutable_gate()->set_max_alerts_per_second(max_alert_rate);
        return call(&pb::FleetAdmin::Stub::Deploy, req, resp);
    }
    pb::Deployment deployment(const std::string& id) {
        pb::GetDeploymentRequest req;
        req.set_id(id);
        pb::GetDeploymentResponse resp;
        grpc::Status st = call(&pb::FleetAdmin::Stub::GetDeployment, req, &resp);
        EXPECT_TRUE(st.ok()) << st.error_message();
        return resp.deployment();
    }
    bool wait_state(const std::string& id, pb::DeploymentState state) {
        return wait_for([&] { return deployment(id).state() == state; });
    }
    pb::GetSensorResponse sensor(const std::string& name) {
        pb::GetSensorRequest req;
        req.set_name(name);
        pb::GetSensorResponse resp;
        grpc::Status st = call(&pb::FleetAdmin::Stub::GetSensor, req, &resp);
        EXPECT_TRUE(st.ok()) << st.error_message();
        return resp;
    }

private:
    std::unique_ptr<pb::FleetAdmin::Stub> stub_;
    std::string token_;
};

class InsecureManager : public testing::ManagerTest {
protected:
    InsecureManager() : ManagerTest(kTempPrefix) {}
    virtual void configure(ManagerOptions&) {}
    virtual picket::metrics::Registry* registry() { return nullptr; }
    void SetUp() override {
        ManagerOptions o;
        o.listen = "127.0.0.1:0";
        o.insecure = true;
        o.rollout_poll = 50ms;
        o.ping_interval = 60s;
        configure(o);
        ASSERT_NO_FATAL_FAILURE(start(o, registry()));
        channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                       grpc::InsecureChannelCredentials());
        admin_ = std::make_unique<Admin>(channel_);
    }
    bool wait_connected(const std::string& name, bool connected = true) {
        return wait_for([&] {
            auto s = store_->get_sensor(name);
            return s.ok() && s->connected == connected;
        });
    }

    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<Admin> admin_;
};

TEST_F(InsecureManager, HelloRegistersSensorAndWelcomes) {
    FakeSensor s1(channel_, hello("s1", 0, {{"site", "paris"}}));
    ASSERT_TRUE(wait_for([&] { return !s1.messages().empty(); }));
    pb::ManagerMessage first = s1.messages()[0];
    EXPECT_TRUE(first.has_welcome());
    EXPECT_TRUE(first.welcome().accepted());

    pb::ListSensorsResponse list;
    ASSERT_TRUE(
        admin_->call(&pb::FleetAdmin::Stub::ListSensors, pb::ListSensorsRequest(), &list).ok());
    ASSERT_EQ(list.sensors_size(), 1);
    EXPECT_EQ(list.sensors(0).name(), "s1");
    EXPECT_TRUE(list.sensors(0).connected());
    EXPECT_EQ(list.sensors(0).host(), "host-s1");
    EXPECT_EQ(list.sensors(0).workers(), 2u);
    EXPECT_EQ(list.sensors(0).capture_mode(), pb::CAPTURE_MODE_PCAP_FILE);
    EXPECT_EQ(list.sensors(0).labels().at("site"), "paris");

    s1.close();
    EXPECT_TRUE(wait_connected("s1", false));
}

TEST_F(InsecureManager, FirstMessageMustBeHello) {
    auto stub = pb::SensorLink::NewStub(channel_);
    grpc::ClientContext ctx;
    auto stream = stub->Connect(&ctx);
    pb::SensorMessage m;
    m.mutable_metrics()->set_seq(1);
    stream->Write(m);
    pb::ManagerMessage out;
    EXPECT_FALSE(stream->Read(&out));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// The stream is read as bytes (SensorLink.Connect is the raw method): bytes that are not a
// SensorMessage end it with INVALID_ARGUMENT naming that, and the sensor is disconnected.
TEST_F(InsecureManager, MalformedSensorMessageEndsTheStreamWithInvalidArgument) {
    grpc::GenericStub generic(channel_);
    grpc::CompletionQueue cq;
    grpc::ClientContext ctx;
    auto call = generic.PrepareCall(&ctx, "/picket.v1.SensorLink/Connect", &cq);
    auto step = [&](intptr_t want) {
        void* got = nullptr;
        bool ok = false;
        EXPECT_TRUE(cq.Next(&got, &ok));
        EXPECT_EQ(reinterpret_cast<intptr_t>(got), want);
        return ok;
    };
    auto bytes = [](const std::string& b) {
        grpc::Slice slice(b);
        return grpc::ByteBuffer(&slice, 1);
    };
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(step(1));
    pb::SensorMessage first;
    *first.mutable_hello() = hello("s1");
    call->Write(bytes(first.SerializeAsString()), reinterpret_cast<void*>(2));
    ASSERT_TRUE(step(2));
    grpc::ByteBuffer in;
    call->Read(&in, reinterpret_cast<void*>(3));
    ASSERT_TRUE(step(3));
    pb::ManagerMessage welcome;
    ASSERT_TRUE(grpc::SerializationTraits<pb::ManagerMessage>::Deserialize(&in, &welcome).ok());
    EXPECT_TRUE(welcome.welcome().accepted());
    EXPECT_TRUE(wait_connected("s1"));

    // Field 1 with wire type 7, which protobuf does not have.
    call->Write(bytes(std::string("\x0f\x01", 2)), reinterpret_cast<void*>(4));
    ASSERT_TRUE(step(4));
    call->Read(&in, reinterpret_cast<void*>(5));
    EXPECT_FALSE(step(5));
    grpc::Status st;
    call->Finish(&st, reinterpret_cast<void*>(6));
    ASSERT_TRUE(step(6));
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(st.error_message().find("malformed SensorMessage"), std::string::npos)
        << st.error_message();
    EXPECT_TRUE(wait_connected("s1", false));
    cq.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq.Next(&tag, &ok)) {
    }
}

// ApplyBundle is written around the deployment's one serialized bundle: the bytes are those of
// the typed message, for ids and bundles whose lengths take one to four varint bytes.
TEST(ApplyBundleMessage, IsTheTypedMessageByteForByte) {
    for (size_t content : {size_t{0}, size_t{100}, size_t{20'000}, size_t{3'000'000}}) {
        for (std::string id : {"", "7", "123456789012345678"}) {
            pb::Bundle b;
            b.mutable_manifest()->set_name("fleet");
            b.mutable_manifest()->set_version(42);
            pb::BundleFile* f = b.add_files();
            f->set_path("rules/local.rules");
            f->set_content(std::string(content, 'r'));
            b.set_signature(std::string(64, 's'));
            const std::string bundle_bytes = b.SerializeAsString();
            grpc::ByteBuffer bb =
                apply_bundle_message(id, grpc::Slice(bundle_bytes.data(), bundle_bytes.size()));

            pb::ManagerMessage want;
            want.mutable_apply_bundle()->set_deployment_id(id);
            *want.mutable_apply_bundle()->mutable_bundle() = b;
            std::vector<grpc::Slice> slices;
            ASSERT_TRUE(bb.Dump(&slices).ok());
            std::string got;
            for (const grpc::Slice& s : slices) {
                got.append(reinterpret_cast<const char*>(s.begin()), s.size());
            }
            EXPECT_EQ(got.size(), want.ByteSizeLong()) << content << " " << id;
            EXPECT_TRUE(got == want.SerializeAsString()) << content << " " << id;
            pb::ManagerMessage parsed;
            ASSERT_TRUE(
                grpc::SerializationTraits<pb::ManagerMessage>::Deserialize(&bb, &parsed).ok());
            EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, want));
        }
    }
}

TEST_F(InsecureManager, MetricsAreKeptAndAddedToTheRun) {
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    s1.send_metrics(1, 1000, {{"decoder.pkts", 100}, {"decoder.bytes", 6400}, {"detect.alert", 3}});
    s1.send_metrics(2, 2000, {{"decoder.pkts", 250}, {"decoder.bytes", 9000}, {"detect.alert", 5}});
    s1.send_metrics(2, 2000, {{"decoder.pkts", 999}, {"decoder.bytes", 9999}, {"detect.alert", 9}});
    ASSERT_TRUE(wait_for([&] {
        auto runs = store_->list_runs("s1");
        return runs.ok() && runs->size() == 1 && (*runs)[0].totals.packets == 250;
    }));
    auto runs = store_->list_runs("s1");
    EXPECT_EQ((*runs)[0].totals.bytes, 9000);
    EXPECT_EQ((*runs)[0].totals.alerts, 5);
    pb::GetSensorResponse got = admin_->sensor("s1");
    EXPECT_EQ(got.counters().at("decoder.pkts"), 250u);
    EXPECT_EQ(got.counters_timestamp(), 2000);
}

TEST_F(InsecureManager, AlertBatchesFillTheBoundedRing) {
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    pb::SensorMessage m;
    m.mutable_alerts()->set_dropped(4);
    m.mutable_alerts()->add_alerts()->set_sid(10);
    m.mutable_alerts()->add_alerts()->set_sid(11);
    s1.send(m);
    ASSERT_TRUE(wait_for([&] { return server_->live().recent_alerts().size() == 2; }));
    EXPECT_EQ(server_->live().recent_alerts()[1].alert.sid(), 11u);
    EXPECT_EQ(server_->live().sensor("s1")->alerts_dropped, 4u);
}

pb::Alert alert(uint32_t sid, int64_t ts) {
    pb::Alert a;
    a.set_timestamp(ts);
    a.set_gid(1);
    a.set_sid(sid);
    a.set_rev(2);
    a.set_msg("ET SCAN sid " + std::to_string(sid));
    a.set_src_ip("10.0.0.1");
    a.set_dst_ip("2001:db8::" + std::to_string(sid));
    a.set_src_port(40000 + sid);
    a.set_dst_port(443);
    a.set_proto("TCP");
    a.set_action(pb::ALERT_ACTION_BLOCKED);
    a.set_severity(1);
    a.set_bundle_version(7);
    return a;
}

pb::SensorMessage alert_batch(const std::vector<pb::Alert>& alerts, uint64_t dropped = 0) {
    pb::SensorMessage m;
    for (const pb::Alert& a : alerts) {
        *m.mutable_alerts()->add_alerts() = a;
    }
    m.mutable_alerts()->set_dropped(dropped);
    return m;
}

// "sensor/sid" of each entry, in order.
std::vector<std::string> entries(const pb::ListAlertsResponse& r) {
    std::vector<std::string> out;
    for (const pb::AlertEntry& e : r.alerts()) {
        out.push_back(e.sensor() + "/" + std::to_string(e.alert().sid()));
    }
    return out;
}

grpc::Status list_alerts(Admin& admin, pb::ListAlertsResponse* resp, const std::string& sensor = "",
                         uint32_t sid = 0, uint32_t limit = 0) {
    pb::ListAlertsRequest req;
    req.set_sensor(sensor);
    req.set_sid(sid);
    req.set_limit(limit);
    resp->Clear();
    return admin.call(&pb::FleetAdmin::Stub::ListAlerts, req, resp);
}

TEST_F(InsecureManager, ListAlertsNewestFirstWithFilters) {
    FakeSensor s1(channel_, hello("s1"));
    FakeSensor s2(channel_, hello("s2"));
    ASSERT_TRUE(wait_connected("s1"));
    ASSERT_TRUE(wait_connected("s2"));
    const pb::Alert a10 = alert(10, 1'000);
    const pb::Alert a11 = alert(11, 2'000);
    const pb::Alert b10 = alert(10, 1'500);  // older packet time, received last
    s1.send(alert_batch({a10, a11}, /*dropped=*/2));
    ASSERT_TRUE(wait_for([&] { return server_->live().recent_alerts().size() == 2; }));
    s2.send(alert_batch({b10}, /*dropped=*/1));
    ASSERT_TRUE(wait_for([&] { return server_->live().recent_alerts().size() == 3; }));

    pb::ListAlertsResponse r;
    ASSERT_TRUE(list_alerts(*admin_, &r).ok());
    EXPECT_EQ(entries(r), (std::vector<std::string>{"s2/10", "s1/11", "s1/10"}));
    using google::protobuf::util::MessageDifferencer;
    EXPECT_TRUE(MessageDifferencer::Equals(r.alerts(0).alert(), b10))
        << r.alerts(0).alert().DebugString();
    EXPECT_TRUE(MessageDifferencer::Equals(r.alerts(1).alert(), a11))
        << r.alerts(1).alert().DebugString();
    EXPECT_TRUE(MessageDifferencer::Equals(r.alerts(2).alert(), a10))
        << r.alerts(2).alert().DebugString();
    EXPECT_EQ(r.total_received(), 3u);
    EXPECT_EQ(r.dropped_by_sensors(), 3u);

    ASSERT_TRUE(list_alerts(*admin_, &r, "s1").ok());
    EXPECT_EQ(entries(r), (std::vector<std::string>{"s1/11", "s1/10"}));
    EXPECT_EQ(r.total_received(), 2u);
    EXPECT_EQ(r.dropped_by_sensors(), 2u);

    ASSERT_TRUE(list_alerts(*admin_, &r, "", 10).ok());
    EXPECT_EQ(entries(r), (std::vector<std::string>{"s2/10", "s1/10"}));
    EXPECT_EQ(r.total_received(), 3u);  // sid does not narrow the totals

    ASSERT_TRUE(list_alerts(*admin_, &r, "s1", 10).ok());
    EXPECT_EQ(entries(r), (std::vector<std::string>{"s1/10"}));

    ASSERT_TRUE(list_alerts(*admin_, &r, "", 0, 2).ok());
    EXPECT_EQ(entries(r), (std::vector<std::string>{"s2/10", "s1/11"}));
    EXPECT_EQ(r.total_received(), 3u);

    ASSERT_TRUE(list_alerts(*admin_, &r, "s2", 11).ok());
    EXPECT_EQ(r.alerts_size(), 0);
    EXPECT_EQ(r.total_received(), 1u);
    EXPECT_EQ(r.dropped_by_sensors(), 1u);
}

TEST_F(InsecureManager, ListAlertsRejectsBadAndUnknownSensorNames) {
    pb::ListAlertsResponse r;
    grpc::Status bad = list_alerts(*admin_, &r, "bad name");
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(bad.error_message(), "invalid sensor name 'bad name': use 1-64 of [A-Za-z0-9._-]");
    grpc::Status all = list_alerts(*admin_, &r, "all");
    EXPECT_EQ(all.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(all.error_message(), "invalid sensor name 'all': reserved for selectors");
    grpc::Status unknown = list_alerts(*admin_, &r, "s9");
    EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(unknown.error_message(), "sensor 's9' not found");
}

TEST_F(InsecureManager, ListAlertsDefaultsToTwenty) {
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    std::vector<pb::Alert> batch;
    for (uint32_t sid = 1; sid <= 25; ++sid) {
        batch.push_back(alert(sid, sid * 1'000));
    }
    s1.send(alert_batch(batch));
    ASSERT_TRUE(wait_for([&] { return server_->live().recent_alerts().size() == 25; }));
    pb::ListAlertsResponse r;
    ASSERT_TRUE(list_alerts(*admin_, &r).ok());
    ASSERT_EQ(r.alerts_size(), 20);
    EXPECT_EQ(r.alerts(0).alert().sid(), 25u);
    EXPECT_EQ(r.alerts(19).alert().sid(), 6u);
    EXPECT_EQ(r.total_received(), 25u);
    ASSERT_TRUE(list_alerts(*admin_, &r, "", 0, 25).ok());
    EXPECT_EQ(r.alerts_size(), 25);
}

class SmallAlertRing : public InsecureManager {
protected:
    void configure(ManagerOptions& o) override { o.alert_ring_size = 3; }
};

TEST_F(SmallAlertRing, LimitIsCappedAtTheRingAndTotalsKeepCounting) {
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    s1.send(alert_batch({alert(1, 1), alert(2, 2), alert(3, 3), alert(4, 4), alert(5, 5)}, 6));
    ASSERT_TRUE(wait_for([&] { return server_->live().sensor("s1")->alerts_received == 5; }));
    pb::ListAlertsResponse r;
    for (uint32_t limit : {0u, 3u, 100u}) {
        ASSERT_TRUE(list_alerts(*admin_, &r, "", 0, limit).ok());
        EXPECT_EQ(entries(r), (std::vector<std::string>{"s1/5", "s1/4", "s1/3"})) << limit;
        EXPECT_EQ(r.total_received(), 5u);
        EXPECT_EQ(r.dropped_by_sensors(), 6u);
    }
    ASSERT_TRUE(list_alerts(*admin_, &r, "", 1).ok());  // evicted from the ring
    EXPECT_EQ(r.alerts_size(), 0);
}

TEST_F(InsecureManager, DeployReachesSensorAndAppliedUpdatesRunningVersion) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    EXPECT_EQ(v, 1u);
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    ASSERT_TRUE(s1.wait_applies(1));
    pb::ApplyBundle ab = s1.applies()[0];
    EXPECT_EQ(ab.deployment_id(), dep.deployment().id());
    EXPECT_EQ(ab.bundle().manifest().name(), "base");
    EXPECT_EQ(ab.bundle().manifest().version(), v);
    ASSERT_EQ(ab.bundle().files_size(), 1);
    EXPECT_EQ(ab.bundle().files(0).content(), kRuleV1);
    EXPECT_TRUE(bundle::verify_bundle(ab.bundle()).ok());

    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    pb::Deployment d = admin_->deployment(dep.deployment().id());
    ASSERT_EQ(d.targets_size(), 1);
    EXPECT_EQ(d.targets(0).state(), pb::TARGET_STATE_APPLIED);
    EXPECT_EQ(d.targets(0).rules_loaded(), 1u);
    EXPECT_EQ(admin_->sensor("s1").sensor().bundle().version(), v);
    EXPECT_EQ(admin_->sensor("s1").sensor().bundle().name(), "base");

    // The run period the deployment began names it.
    pb::HistoryRequest hreq;
    hreq.set_sensor("s1");
    pb::HistoryResponse hist;
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::History, hreq, &hist).ok());
    ASSERT_GE(hist.runs_size(), 2);
    EXPECT_EQ(hist.runs(0).bundle().version(), v);
    EXPECT_EQ(hist.runs(0).deployment_id(), dep.deployment().id());
    EXPECT_EQ(hist.runs(1).deployment_id(), "");  // the start-up period
}

// #25: a manager restarted on an empty database numbers its bundles from 1 again; a sensor
// still running the old version 1 (other content) must be sent the new version 1, not be
// marked applied because the numbers match. The same content is still not sent twice.
TEST_F(InsecureManager, AReusedVersionNumberWithOtherContentIsSent) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    ASSERT_EQ(v, 1u);
    pb::Hello old = hello("s1", 1);
    old.mutable_bundle()->set_name("base");
    old.mutable_bundle()->set_sha256(std::string(64, '0'));  // what the lost database held
    FakeSensor s1(channel_, old);
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    ASSERT_TRUE(s1.wait_applies(1));
    EXPECT_EQ(s1.applies()[0].bundle().files(0).content(), kRuleV1);
    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));

    // A sensor that does run this very bundle is marked applied without a resend.
    pb::Hello same = hello("s2", 1);
    same.mutable_bundle()->set_sha256(s1.applies()[0].bundle().manifest().files_size() > 0
                                          ? bundle::bundle_sha256(s1.applies()[0].bundle())
                                          : "");
    FakeSensor s2(channel_, same);
    ASSERT_TRUE(wait_connected("s2"));
    pb::DeployResponse dep2;
    ASSERT_TRUE(admin_->deploy(v, "s2", &dep2).ok());
    ASSERT_TRUE(admin_->wait_state(dep2.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    EXPECT_TRUE(s2.applies().empty());
}

// #25 item 2: a deployment a newer one takes over before it reached every target ends
// SUPERSEDED (not SUCCEEDED with a cancelled target); the target names the newer deployment.
TEST_F(InsecureManager, ADeploymentTakenOverByANewerOneEndsSuperseded) {
    uint64_t v1 = admin_->push(make_bundle("base", kRuleV1));
    uint64_t v2 = admin_->push(make_bundle("base", kRuleV2));
    {
        FakeSensor gone(channel_, hello("s2"));
        ASSERT_TRUE(wait_connected("s2"));
    }
    ASSERT_TRUE(wait_connected("s2", false));
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse first;
    ASSERT_TRUE(admin_->deploy(v1, "all", &first).ok());
    ASSERT_TRUE(s1.wait_applies(1));  // s2 is offline: its target stays pending
    pb::DeployResponse second;
    ASSERT_TRUE(admin_->deploy(v2, "s2", &second).ok());
    ASSERT_TRUE(admin_->wait_state(first.deployment().id(), pb::DEPLOYMENT_STATE_SUPERSEDED));
    pb::Deployment d = admin_->deployment(first.deployment().id());
    EXPECT_EQ(d.message(), "1 of 2 targets taken over by a newer deployment");
    ASSERT_EQ(d.targets_size(), 2);
    EXPECT_EQ(d.targets(0).state(), pb::TARGET_STATE_APPLIED);
    EXPECT_EQ(d.targets(1).sensor(), "s2");
    EXPECT_EQ(d.targets(1).state(), pb::TARGET_STATE_CANCELLED);
    EXPECT_EQ(d.targets(1).error(), "superseded by deployment " + second.deployment().id());
}

// #25 item 1: reconciliation on Hello. A sensor that comes back without the bundle the manager
// last brought it to (its saved copy was damaged: it reports local rules, version 0) is sent
// that bundle again, as a deployment of its own; one that reports it is left alone.
TEST_F(InsecureManager, AReturningSensorThatLostItsBundleIsSentItAgain) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    std::string sha;
    std::string first_id;
    {
        FakeSensor s1(channel_, hello("s1"));
        ASSERT_TRUE(wait_connected("s1"));
        pb::DeployResponse dep;
        ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
        ASSERT_TRUE(s1.wait_applies(1));
        ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
        sha = bundle::bundle_sha256(s1.applies()[0].bundle());
        first_id = dep.deployment().id();
    }
    ASSERT_TRUE(wait_connected("s1", false));
    {
        FakeSensor lost(channel_, hello("s1"));  // started on its local rules
        ASSERT_TRUE(lost.wait_applies(1));
        const pb::ApplyBundle ab = lost.applies()[0];
        EXPECT_NE(ab.deployment_id(), first_id);
        EXPECT_EQ(ab.bundle().manifest().version(), v);
        EXPECT_EQ(ab.bundle().files(0).content(), kRuleV1);
        ASSERT_TRUE(admin_->wait_state(ab.deployment_id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
        EXPECT_EQ(admin_->deployment(ab.deployment_id()).selector(), "s1");
    }
    ASSERT_TRUE(wait_connected("s1", false));
    pb::Hello same = hello("s1", v);
    same.mutable_bundle()->set_name("base");
    same.mutable_bundle()->set_sha256(sha);
    FakeSensor fine(channel_, same);
    ASSERT_TRUE(wait_connected("s1"));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_TRUE(fine.applies().empty());
}

// A bundle the sensor refuses on reconciliation is not resent on every reconnect; a sensor
// that answers "applied" but reports running other content has not applied it.
TEST_F(InsecureManager, ReconciliationStopsAtARefusalAndChecksWhatTheSensorRuns) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    {
        FakeSensor s1(channel_, hello("s1"));
        ASSERT_TRUE(wait_connected("s1"));
        pb::DeployResponse dep;
        ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
        ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    }
    ASSERT_TRUE(wait_connected("s1", false));
    std::string refused_id;
    {
        FakeSensor refusing(channel_, hello("s1"), "rules/a.rules:1: unknown keyword 'frob'");
        ASSERT_TRUE(refusing.wait_applies(1));
        refused_id = refusing.applies()[0].deployment_id();
        ASSERT_TRUE(admin_->wait_state(refused_id, pb::DEPLOYMENT_STATE_FAILED));
    }
    ASSERT_TRUE(wait_connected("s1", false));
    {
        FakeSensor again(channel_, hello("s1"));
        ASSERT_TRUE(wait_connected("s1"));
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        EXPECT_TRUE(again.applies().empty());
    }
    ASSERT_TRUE(wait_connected("s1", false));

    // An operator's deploy; the sensor says "applied" but reports running something else.
    FakeSensor liar(channel_, hello("s1"), {}, /*silent=*/true);
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    ASSERT_TRUE(liar.wait_applies(1));
    pb::SensorMessage m;
    pb::ApplyResult* r = m.mutable_apply_result();
    r->set_deployment_id(dep.deployment().id());
    r->set_version(v);
    r->set_applied(true);
    r->mutable_running()->set_name("base");
    r->mutable_running()->set_version(v);
    r->mutable_running()->set_sha256(std::string(64, 'f'));
    liar.send(m);
    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_FAILED));
    pb::Deployment d = admin_->deployment(dep.deployment().id());
    ASSERT_EQ(d.targets_size(), 1);
    EXPECT_EQ(d.targets(0).state(), pb::TARGET_STATE_REJECTED);
    EXPECT_EQ(d.targets(0).error().rfind("sensor reports it runs version " + std::to_string(v) +
                                             " sha256 ffffffffffff, not the bundle sent (version " +
                                             std::to_string(v) + " sha256 ",
                                         0),
              0u)
        << d.targets(0).error();
}

// #25: WatchDeployment sends the deployment now, then at each change, and ends after the
// message in which it is final.
TEST_F(InsecureManager, WatchDeploymentStreamsEachChangeAndEndsWhenFinal) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    FakeSensor s1(channel_, hello("s1"), {}, /*silent=*/true);
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    ASSERT_TRUE(s1.wait_applies(1));
    std::vector<pb::Deployment> seen;
    bool answered = false;
    grpc::Status st = admin_->watch(dep.deployment().id(), &seen, [&](const pb::Deployment& d) {
        if (!answered && d.targets(0).state() == pb::TARGET_STATE_SENT) {
            answered = true;
            pb::SensorMessage m;
            m.mutable_apply_result()->set_deployment_id(d.id());
            m.mutable_apply_result()->set_version(v);
            m.mutable_apply_result()->set_applied(true);
            s1.send(m);
        }
    });
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].state(), pb::DEPLOYMENT_STATE_IN_PROGRESS);
    EXPECT_EQ(seen[0].targets(0).state(), pb::TARGET_STATE_SENT);
    EXPECT_EQ(seen[1].state(), pb::DEPLOYMENT_STATE_SUCCEEDED);
    EXPECT_EQ(seen[1].targets(0).state(), pb::TARGET_STATE_APPLIED);

    // A final deployment: one message and the end.
    seen.clear();
    ASSERT_TRUE(admin_->watch(dep.deployment().id(), &seen).ok());
    EXPECT_EQ(seen.size(), 1u);
    seen.clear();
    st = admin_->watch("999", &seen);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(st.error_message(), "deployment 999 not found");
    st = admin_->watch("x", &seen);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "deployment id 'x' is not a positive number");
    EXPECT_TRUE(seen.empty());
}

// #25: ListSensors pages by name; every sensor exactly once; a forged token is refused.
TEST_F(InsecureManager, ListSensorsPagesByName) {
    std::vector<std::unique_ptr<FakeSensor>> fleet;
    for (const char* n : {"s5", "s1", "s4", "s2", "s3"}) {
        fleet.push_back(std::make_unique<FakeSensor>(channel_, hello(n)));
        ASSERT_TRUE(wait_connected(n));
    }
    pb::ListSensorsRequest req;
    req.set_page_size(2);
    std::vector<std::string> names;
    std::vector<std::string> tokens;
    for (int pages = 0; pages < 10; ++pages) {
        pb::ListSensorsResponse resp;
        ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::ListSensors, req, &resp).ok());
        for (const pb::Sensor& s : resp.sensors()) {
            names.push_back(s.name());
        }
        tokens.push_back(resp.next_page_token());
        if (resp.next_page_token().empty()) {
            break;
        }
        req.set_page_token(resp.next_page_token());
    }
    EXPECT_EQ(names, (std::vector<std::string>{"s1", "s2", "s3", "s4", "s5"}));
    EXPECT_EQ(tokens, (std::vector<std::string>{"n:s2", "n:s4", ""}));
    pb::ListSensorsResponse all;
    ASSERT_TRUE(
        admin_->call(&pb::FleetAdmin::Stub::ListSensors, pb::ListSensorsRequest(), &all).ok());
    EXPECT_EQ(all.sensors_size(), 5);
    EXPECT_TRUE(all.next_page_token().empty());
    req.set_page_token("s2");
    pb::ListSensorsResponse bad;
    grpc::Status st = admin_->call(&pb::FleetAdmin::Stub::ListSensors, req, &bad);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "page_token 's2' is not one this manager issued");
}

// #25: a fleet's history holds deployments with their targets counted, not listed (counts_only),
// one sensor's history its own target with the fleet's counts; previous versions come from the
// runs open at the deployment's creation.
TEST_F(InsecureManager, HistoryCountsTargetsAndNarrowsToOneSensor) {
    const uint64_t v1 = admin_->push(make_bundle("base", kRuleV1));
    const uint64_t v2 = admin_->push(make_bundle("base", kRuleV2));
    std::vector<std::unique_ptr<FakeSensor>> fleet;
    for (const char* n : {"s1", "s2", "s3"}) {
        fleet.push_back(std::make_unique<FakeSensor>(channel_, hello(n, v1)));
        ASSERT_TRUE(wait_connected(n));
    }
    pb::DeployResponse all;
    ASSERT_TRUE(admin_->deploy(v2, "all", &all).ok());
    ASSERT_TRUE(admin_->wait_state(all.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    pb::DeployResponse one;
    ASSERT_TRUE(admin_->deploy(v1, "s1", &one).ok());
    ASSERT_TRUE(admin_->wait_state(one.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));

    pb::HistoryRequest req;
    req.set_counts_only(true);
    pb::HistoryResponse h;
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::History, req, &h).ok());
    ASSERT_EQ(h.deployments_size(), 2);
    EXPECT_EQ(h.deployments(0).id(), one.deployment().id());
    EXPECT_EQ(h.deployments(0).targets_size(), 0);
    EXPECT_EQ(h.deployments(0).target_counts().total(), 1u);
    EXPECT_EQ(h.deployments(0).target_counts().applied(), 1u);
    EXPECT_EQ(h.deployments(1).id(), all.deployment().id());
    EXPECT_EQ(h.deployments(1).targets_size(), 0);
    EXPECT_EQ(h.deployments(1).target_counts().total(), 3u);
    EXPECT_EQ(h.deployments(1).target_counts().applied(), 3u);
    EXPECT_EQ(h.deployments(1).target_counts().pending(), 0u);

    req.set_counts_only(false);
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::History, req, &h).ok());
    ASSERT_EQ(h.deployments_size(), 2);
    ASSERT_EQ(h.deployments(1).targets_size(), 3);
    for (const pb::DeploymentTarget& t : h.deployments(1).targets()) {
        EXPECT_EQ(t.previous_version(), v1) << t.sensor();
        EXPECT_EQ(t.state(), pb::TARGET_STATE_APPLIED) << t.sensor();
    }
    EXPECT_EQ(h.deployments(0).targets(0).previous_version(), v2);
    EXPECT_EQ(h.deployments(1).target_counts().applied(), 3u);

    req.set_sensor("s2");
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::History, req, &h).ok());
    ASSERT_EQ(h.deployments_size(), 1);  // the deployment to s1 alone is not s2's
    ASSERT_EQ(h.deployments(0).targets_size(), 1);
    EXPECT_EQ(h.deployments(0).targets(0).sensor(), "s2");
    EXPECT_EQ(h.deployments(0).targets(0).previous_version(), v1);
    EXPECT_EQ(h.deployments(0).target_counts().total(), 3u);

    // GetDeployment and Deploy count their targets too.
    EXPECT_EQ(admin_->deployment(all.deployment().id()).target_counts().applied(), 3u);
    EXPECT_EQ(all.deployment().target_counts().total(), 3u);
    EXPECT_EQ(all.deployment().target_counts().pending(), 3u);
    pb::GetDeploymentRequest greq;
    greq.set_id(all.deployment().id());
    greq.set_counts_only(true);
    pb::GetDeploymentResponse g;
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::GetDeployment, greq, &g).ok());
    EXPECT_EQ(g.deployment().targets_size(), 0);
    EXPECT_EQ(g.deployment().target_counts().applied(), 3u);
    EXPECT_EQ(g.deployment().state(), pb::DEPLOYMENT_STATE_SUCCEEDED);
}

// #25: ListBundles pages newest first, ListAlerts pages down the ring; forged tokens refused.
TEST_F(InsecureManager, ListBundlesAndAlertsPage) {
    for (int i = 1; i <= 3; ++i) {
        admin_->push(make_bundle(
            "base", "alert ip any any -> any any (msg:\"x\"; sid:" + std::to_string(i) + ";)\n"));
    }
    pb::ListBundlesRequest breq;
    breq.set_page_size(2);
    pb::ListBundlesResponse b;
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::ListBundles, breq, &b).ok());
    ASSERT_EQ(b.bundles_size(), 2);
    EXPECT_EQ(b.bundles(0).manifest().version(), 3u);
    EXPECT_EQ(b.bundles(1).manifest().version(), 2u);
    EXPECT_EQ(b.next_page_token(), "v:2");
    breq.set_page_token(b.next_page_token());
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::ListBundles, breq, &b).ok());
    ASSERT_EQ(b.bundles_size(), 1);
    EXPECT_EQ(b.bundles(0).manifest().version(), 1u);
    EXPECT_EQ(b.next_page_token(), "");
    breq.set_page_token("v:-1");
    grpc::Status st = admin_->call(&pb::FleetAdmin::Stub::ListBundles, breq, &b);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "page_token 'v:-1' is not one this manager issued");

    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    s1.send(alert_batch({alert(1, 1), alert(2, 2), alert(3, 3), alert(4, 4), alert(5, 5)}));
    ASSERT_TRUE(wait_for([&] { return server_->live().recent_alerts().size() == 5; }));
    pb::ListAlertsRequest areq;
    areq.set_page_size(2);
    std::vector<std::string> pages;
    for (int i = 0; i < 5; ++i) {
        pb::ListAlertsResponse a;
        ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::ListAlerts, areq, &a).ok());
        std::string page;
        for (const pb::AlertEntry& e : a.alerts()) {
            page += std::to_string(e.alert().sid());
        }
        pages.push_back(page + "|" + a.next_page_token());
        if (a.next_page_token().empty()) {
            break;
        }
        areq.set_page_token(a.next_page_token());
    }
    EXPECT_EQ(pages, (std::vector<std::string>{"54|a:4", "32|a:2", "1|"}));
    areq.set_page_token("n:s1");
    pb::ListAlertsResponse a;
    st = admin_->call(&pb::FleetAdmin::Stub::ListAlerts, areq, &a);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "page_token 'n:s1' is not one this manager issued");
}

// #25: ListBootstrapTokens pages forward by id, each token once.
TEST_F(InsecureManager, ListBootstrapTokensPagesById) {
    std::vector<std::string> created;
    for (int i = 0; i < 5; ++i) {
        pb::CreateBootstrapTokenResponse c;
        ASSERT_TRUE(admin_
                        ->call(&pb::FleetAdmin::Stub::CreateBootstrapToken,
                               pb::CreateBootstrapTokenRequest(), &c)
                        .ok());
        created.push_back(c.info().id());
    }
    std::sort(created.begin(), created.end());
    pb::ListBootstrapTokensRequest req;
    req.set_page_size(2);
    std::vector<std::string> ids;
    std::vector<std::string> tokens;
    for (int pages = 0; pages < 10; ++pages) {
        pb::ListBootstrapTokensResponse resp;
        ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::ListBootstrapTokens, req, &resp).ok());
        for (const pb::BootstrapTokenInfo& t : resp.tokens()) {
            ids.push_back(t.id());
        }
        tokens.push_back(resp.next_page_token());
        if (resp.next_page_token().empty()) {
            break;
        }
        req.set_page_token(resp.next_page_token());
    }
    EXPECT_EQ(ids, created);
    EXPECT_EQ(tokens, (std::vector<std::string>{"t:" + created[1], "t:" + created[3], ""}));
    req.set_page_token("t:");
    pb::ListBootstrapTokensResponse bad;
    grpc::Status st = admin_->call(&pb::FleetAdmin::Stub::ListBootstrapTokens, req, &bad);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "page_token 't:' is not one this manager issued");
}

TEST_F(InsecureManager, RejectedApplyRecordsTheError) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    FakeSensor s1(channel_, hello("s1"), "rules/a.rules:1: unknown keyword 'frob'");
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "all", &dep).ok());
    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_FAILED));
    pb::Deployment d = admin_->deployment(dep.deployment().id());
    EXPECT_EQ(d.targets(0).state(), pb::TARGET_STATE_REJECTED);
    EXPECT_EQ(d.targets(0).error(), "rules/a.rules:1: unknown keyword 'frob'");
    EXPECT_EQ(admin_->sensor("s1").sensor().bundle().version(), 0u);
}

TEST_F(InsecureManager, SensorConnectingLaterGetsThePendingDeployment) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    {
        FakeSensor first(channel_, hello("s1"));
        ASSERT_TRUE(wait_connected("s1"));
    }
    ASSERT_TRUE(wait_connected("s1", false));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    EXPECT_EQ(admin_->deployment(dep.deployment().id()).targets(0).state(),
              pb::TARGET_STATE_PENDING);
    FakeSensor again(channel_, hello("s1"));
    ASSERT_TRUE(again.wait_applies(1));
    EXPECT_EQ(again.applies()[0].bundle().manifest().version(), v);
    EXPECT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
}

TEST_F(InsecureManager, DisconnectMidApplyResendsOnReconnect) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    auto silent = std::make_unique<FakeSensor>(channel_, hello("s1"), "", /*silent=*/true);
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    const std::string id = dep.deployment().id();
    ASSERT_TRUE(silent->wait_applies(1));
    EXPECT_TRUE(wait_for(
        [&] { return admin_->deployment(id).targets(0).state() == pb::TARGET_STATE_SENT; }));
    silent.reset();
    EXPECT_TRUE(wait_for(
        [&] { return admin_->deployment(id).targets(0).state() == pb::TARGET_STATE_PENDING; }));
    FakeSensor again(channel_, hello("s1"));
    ASSERT_TRUE(again.wait_applies(1));
    EXPECT_EQ(again.applies()[0].deployment_id(), id);
    EXPECT_TRUE(admin_->wait_state(id, pb::DEPLOYMENT_STATE_SUCCEEDED));
}

TEST_F(InsecureManager, StopEndsOpenStreamsAndMarksSensorsDisconnected) {
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    server_->stop();
    EXPECT_EQ(s1.final_status().error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_FALSE(store_->get_sensor("s1")->connected);
}

TEST_F(InsecureManager, RestartedSensorCountsFromZeroAndDuplicatesAreDropped) {
    pb::Hello h = hello("s1");
    h.set_started_at(100);
    {
        FakeSensor first(channel_, h);
        ASSERT_TRUE(wait_connected("s1"));
        first.send_metrics(1, 1000, {{"decoder.pkts", 100}});
        first.send_metrics(2, 2000, {{"decoder.pkts", 300}});
        ASSERT_TRUE(wait_for([&] { return store_->list_runs("s1")->at(0).totals.packets == 300; }));
    }
    ASSERT_TRUE(wait_connected("s1", false));
    {
        FakeSensor same_process(channel_, h);  // reconnect: buffered report 2 sent again
        ASSERT_TRUE(wait_connected("s1"));
        same_process.send_metrics(2, 2000, {{"decoder.pkts", 300}});
        same_process.send_metrics(3, 3000, {{"decoder.pkts", 350}});
        ASSERT_TRUE(wait_for([&] { return store_->list_runs("s1")->at(0).totals.packets == 350; }));
    }
    ASSERT_TRUE(wait_connected("s1", false));
    h.set_started_at(200);
    FakeSensor restarted(channel_, h);
    ASSERT_TRUE(wait_connected("s1"));
    restarted.send_metrics(1, 4000, {{"decoder.pkts", 40}});
    EXPECT_TRUE(wait_for([&] { return store_->list_runs("s1")->at(0).totals.packets == 390; }));
}

// Issue #26: the Welcome says where the process's stored reports stand, and the store, not the
// stream, decides what is a duplicate: a report resent to a new stream of the same boot id is
// ignored and counted, a new boot id starts over.
TEST_F(InsecureManager, WelcomeCarriesTheStoredReportSeqOfThisBoot) {
    pb::Hello h = hello("s1");
    h.set_started_at(100);
    h.set_boot_id("0123456789abcdef0123456789abcdef");
    {
        FakeSensor first(channel_, h);
        ASSERT_TRUE(first.welcomed());
        ASSERT_TRUE(first.messages()[0].welcome().has_stored_report_seq());
        EXPECT_EQ(first.messages()[0].welcome().stored_report_seq(), 0u);
        first.send_metrics(1, 1000, {{"decoder.pkts", 100}});
        first.send_metrics(2, 2000, {{"decoder.pkts", 300}});
        ASSERT_TRUE(wait_for([&] { return store_->list_runs("s1")->at(0).totals.packets == 300; }));
    }
    ASSERT_TRUE(wait_connected("s1", false));
    {
        FakeSensor again(channel_, h);
        ASSERT_TRUE(again.welcomed());
        EXPECT_EQ(again.messages()[0].welcome().stored_report_seq(), 2u);
        again.send_metrics(3, 3000, {{"decoder.pkts", 360}});
        ASSERT_TRUE(wait_for([&] { return store_->list_runs("s1")->at(0).totals.packets == 360; }));
    }
    ASSERT_TRUE(wait_connected("s1", false));
    h.set_boot_id("fedcba9876543210fedcba9876543210");  // a new process
    FakeSensor restarted(channel_, h);
    ASSERT_TRUE(restarted.welcomed());
    EXPECT_EQ(restarted.messages()[0].welcome().stored_report_seq(), 0u);
    restarted.send_metrics(1, 4000, {{"decoder.pkts", 40}});
    EXPECT_TRUE(wait_for([&] { return store_->list_runs("s1")->at(0).totals.packets == 400; }));
    auto pos = store_->report_position("s1");
    ASSERT_TRUE(pos.ok());
    EXPECT_EQ(pos->boot, "fedcba9876543210fedcba9876543210");
    EXPECT_EQ(pos->seq, 1);
}

TEST_F(InsecureManager, RollbackPicksThePreviousVersion) {
    uint64_t v1 = admin_->push(make_bundle("base", kRuleV1));
    uint64_t v2 = admin_->push(make_bundle("base", kRuleV2));
    EXPECT_EQ(v2, v1 + 1);
    FakeSensor s1(channel_, hello("s1", v1));
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v2, "s1", &dep).ok());
    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));

    pb::RollbackRequest rb;
    rb.set_selector("s1");
    pb::RollbackResponse rresp;
    grpc::Status st = admin_->call(&pb::FleetAdmin::Stub::Rollback, rb, &rresp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(rresp.deployment().kind(), pb::DEPLOYMENT_KIND_ROLLBACK);
    EXPECT_EQ(rresp.deployment().targets(0).version(), v1);
    EXPECT_EQ(rresp.deployment().targets(0).previous_version(), v2);
    ASSERT_TRUE(s1.wait_applies(2));
    EXPECT_EQ(s1.applies()[1].bundle().manifest().version(), v1);
    EXPECT_EQ(s1.applies()[1].bundle().files(0).content(), kRuleV1);
    ASSERT_TRUE(admin_->wait_state(rresp.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    EXPECT_EQ(admin_->sensor("s1").sensor().bundle().version(), v1);
    EXPECT_EQ(admin_->deployment(dep.deployment().id()).targets(0).previous_version(), v1);

    pb::HistoryRequest hreq;
    hreq.set_sensor("s1");
    pb::HistoryResponse hist;
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::History, hreq, &hist).ok());
    ASSERT_EQ(hist.runs_size(), 3);  // v1 (hello), v2, v1 again: newest first
    EXPECT_EQ(hist.runs(0).bundle().version(), v1);
    EXPECT_EQ(hist.runs(0).ended_at(), 0);
    EXPECT_EQ(hist.runs(1).bundle().version(), v2);
    ASSERT_EQ(hist.deployments_size(), 2);
    EXPECT_EQ(hist.deployments(0).id(), rresp.deployment().id());
    EXPECT_EQ(hist.deployments(0).targets_size(), 1);
}

TEST_F(InsecureManager, CanaryWithFailingHealthGateRollsBackAutomatically) {
    uint64_t v1 = admin_->push(make_bundle("base", kRuleV1));
    uint64_t v2 = admin_->push(make_bundle("base", kRuleV2));
    std::vector<std::unique_ptr<FakeSensor>> sensors;
    for (const char* n : {"s1", "s2", "s3", "s4"}) {
        sensors.push_back(std::make_unique<FakeSensor>(channel_, hello(n, v1)));
        ASSERT_TRUE(wait_connected(n));
    }
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v2, "all", &dep, /*canary=*/25, /*soak=*/1, /*alerts/s=*/10).ok());
    const std::string id = dep.deployment().id();
    ASSERT_EQ(dep.deployment().targets_size(), 4);
    EXPECT_TRUE(dep.deployment().targets(0).canary());
    EXPECT_FALSE(dep.deployment().targets(1).canary());
    FakeSensor& canary = *sensors[0];
    ASSERT_TRUE(canary.wait_applies(1));
    EXPECT_EQ(canary.applies()[0].bundle().manifest().version(), v2);

    // The canary alerts at 10,000/s (1,000 per 100 ms report) against a bound of 10/s.
    uint64_t seq = 0;
    EXPECT_TRUE(wait_for([&] {
        ++seq;
        canary.send_metrics(seq, static_cast<int64_t>(seq) * 100'000'000,
                            {{"decoder.pkts", seq * 100}, {"detect.alert", seq * 1000}});
        std::this_thread::sleep_for(80ms);
        return admin_->deployment(id).state() == pb::DEPLOYMENT_STATE_ROLLED_BACK;
    }));
    pb::Deployment d = admin_->deployment(id);
    EXPECT_EQ(d.message().rfind("health gate failed: alert rate", 0), 0u) << d.message();
    EXPECT_EQ(d.targets(0).state(), pb::TARGET_STATE_APPLIED);
    EXPECT_EQ(d.targets(1).state(), pb::TARGET_STATE_CANCELLED);
    ASSERT_FALSE(d.rollback_deployment_id().empty());
    pb::Deployment rb = admin_->deployment(d.rollback_deployment_id());
    EXPECT_EQ(rb.kind(), pb::DEPLOYMENT_KIND_AUTO_ROLLBACK);
    EXPECT_EQ(rb.rolls_back_deployment_id(), id);
    ASSERT_EQ(rb.targets_size(), 1);
    EXPECT_EQ(rb.targets(0).sensor(), "s1");
    EXPECT_EQ(rb.targets(0).version(), v1);
    ASSERT_TRUE(canary.wait_applies(2));
    EXPECT_EQ(canary.applies()[1].bundle().manifest().version(), v1);
    EXPECT_TRUE(admin_->wait_state(rb.id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    EXPECT_EQ(sensors[1]->applies().size(), 0u);
    EXPECT_EQ(sensors[3]->applies().size(), 0u);
}

TEST_F(InsecureManager, CanaryWithHealthyGateReachesEveryone) {
    uint64_t v1 = admin_->push(make_bundle("base", kRuleV1));
    std::vector<std::unique_ptr<FakeSensor>> sensors;
    for (const char* n : {"s1", "s2"}) {
        sensors.push_back(std::make_unique<FakeSensor>(channel_, hello(n)));
        ASSERT_TRUE(wait_connected(n));
    }
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v1, "all", &dep, 50, 1).ok());
    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    EXPECT_EQ(sensors[0]->applies().size(), 1u);
    EXPECT_EQ(sensors[1]->applies().size(), 1u);
}

TEST_F(InsecureManager, CorruptOrTruncatedBundleIsRejectedAndNothingStored) {
    pb::Bundle corrupt = make_bundle("base", kRuleV1);
    corrupt.mutable_files(0)->set_content("alert ip any any -> any any (msg:\"evil\"; sid:1;)\n");
    pb::Bundle truncated = make_bundle("base", kRuleV1);
    truncated.mutable_files(0)->set_content(std::string(kRuleV1).substr(0, 10));
    for (const pb::Bundle& b : {corrupt, truncated}) {
        pb::PushBundleRequest req;
        *req.mutable_bundle() = b;
        pb::PushBundleResponse resp;
        grpc::Status st = admin_->call(&pb::FleetAdmin::Stub::PushBundle, req, &resp);
        EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
        EXPECT_NE(st.error_message().find("rules/a.rules"), std::string::npos)
            << st.error_message();
    }
    pb::ListBundlesResponse list;
    ASSERT_TRUE(
        admin_->call(&pb::FleetAdmin::Stub::ListBundles, pb::ListBundlesRequest(), &list).ok());
    EXPECT_EQ(list.bundles_size(), 0);
    EXPECT_EQ(store_->latest_version().value(), 0);
}

TEST_F(InsecureManager, IdenticalPushReturnsTheExistingVersion) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    EXPECT_EQ(admin_->push(make_bundle("base", kRuleV1)), v);
    uint64_t v2 = admin_->push(make_bundle("base", kRuleV2));
    EXPECT_EQ(v2, v + 1);
    pb::GetBundleRequest req;
    req.set_version(v2);
    pb::GetBundleResponse resp;
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::GetBundle, req, &resp).ok());
    EXPECT_EQ(resp.summary().manifest().parent_version(), v);
    EXPECT_EQ(resp.summary().rule_files(), 1u);
    EXPECT_EQ(resp.bundle().files_size(), 0);
    pb::DiffBundlesRequest dreq;
    dreq.set_from_version(v);
    dreq.set_to_version(v2);
    pb::DiffBundlesResponse dresp;
    ASSERT_TRUE(admin_->call(&pb::FleetAdmin::Stub::DiffBundles, dreq, &dresp).ok());
    ASSERT_EQ(dresp.diff().rules_changed_size(), 1);
    EXPECT_EQ(dresp.diff().rules_changed(0).sid(), 1u);
}

TEST_F(InsecureManager, DeployErrors) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    FakeSensor s1(channel_, hello("s1", 0, {{"site", "paris"}}));
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    EXPECT_EQ(admin_->deploy(v + 5, "all", &dep).error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(admin_->deploy(v, "label=site", &dep).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    grpc::Status none = admin_->deploy(v, "label=site=tokyo", &dep);
    EXPECT_EQ(none.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(none.error_message().find("matches no sensor"), std::string::npos);
    EXPECT_EQ(admin_->deploy(v, "nosuch", &dep).error_code(), grpc::StatusCode::NOT_FOUND);
    // Soak and gate values are checked, not silently dropped.
    pb::DeployResponse none2;
    grpc::Status soak = admin_->deploy(v, "all", &none2, /*canary=*/0, /*soak=*/60);
    EXPECT_EQ(soak.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(soak.error_message(),
              "a soak needs a canary stage: give a canary percent (picketctl deploy --canary N)");
    EXPECT_EQ(admin_->deploy(v, "all", &none2, 50, 86401).error_message(),
              "soak of 86401 s is longer than a day (86400 s)");
    EXPECT_EQ(admin_->deploy(v, "all", &none2, 50, 60, std::nan("")).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(admin_->deploy(v, "all", &none2, 50, 60, -1).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
    pb::DeployRequest bad_ratio;
    bad_ratio.set_version(v);
    bad_ratio.set_selector("all");
    bad_ratio.mutable_gate()->set_max_drop_ratio(1.5);
    grpc::Status ratio = admin_->call(&pb::FleetAdmin::Stub::Deploy, bad_ratio, &none2);
    EXPECT_EQ(ratio.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(ratio.error_message(), "health gate: max drop ratio 1.5 is not within 0..1");
    // A version past INT64_MAX is not "version -1".
    pb::GetBundleRequest huge;
    huge.set_version(UINT64_MAX);
    pb::GetBundleResponse got;
    grpc::Status big = admin_->call(&pb::FleetAdmin::Stub::GetBundle, huge, &got);
    EXPECT_EQ(big.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(big.error_message(), "bundle version 18446744073709551615 not found");
    EXPECT_EQ(admin_->deploy(UINT64_MAX, "all", &none2).error_message(),
              "bundle version 18446744073709551615 not found");

    pb::GetDeploymentRequest req;
    req.set_id("42");
    pb::GetDeploymentResponse resp;
    EXPECT_EQ(admin_->call(&pb::FleetAdmin::Stub::GetDeployment, req, &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
}

// ---- TLS + tokens

class SecureManager : public testing::ManagerTest {
protected:
    SecureManager() : ManagerTest(kTempPrefix) {}
    void SetUp() override {
        ASSERT_TRUE(pki::init_ca(dir_.path(), "test-ca").ok());
        ASSERT_TRUE(
            pki::issue(dir_.path(), pki::CertKind::kManager, "manager", {"127.0.0.1", "localhost"})
                .ok());
        ASSERT_TRUE(pki::issue(dir_.path(), pki::CertKind::kSensor, "s1", {}).ok());
        start(testing::tls_options(dir_));
    }
    std::shared_ptr<grpc::Channel> channel(bool with_client_cert) {
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = read_file(dir_.file("ca.crt"));
        if (with_client_cert) {
            ssl.pem_private_key = read_file(dir_.file("s1.key"));
            ssl.pem_cert_chain = read_file(dir_.file("s1.crt"));
        }
        grpc::ChannelArguments args;
        args.SetSslTargetNameOverride("manager");
        return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                         grpc::SslCredentials(ssl), args);
    }
};

TEST_F(SecureManager, AdminTokenIsRequired) {
    pb::ListSensorsResponse resp;
    Admin wrong(channel(false), "not-the-token");
    EXPECT_EQ(wrong.call(&pb::FleetAdmin::Stub::ListSensors, pb::ListSensorsRequest(), &resp)
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    Admin none(channel(false));
    EXPECT_EQ(
        none.call(&pb::FleetAdmin::Stub::ListSensors, pb::ListSensorsRequest(), &resp).error_code(),
        grpc::StatusCode::UNAUTHENTICATED);
    pb::PushBundleRequest push;
    *push.mutable_bundle() = make_bundle("base", kRuleV1);
    pb::PushBundleResponse presp;
    EXPECT_EQ(wrong.call(&pb::FleetAdmin::Stub::PushBundle, push, &presp).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(store_->latest_version().value(), 0);
    pb::ListAlertsResponse alerts;
    EXPECT_EQ(wrong.call(&pb::FleetAdmin::Stub::ListAlerts, pb::ListAlertsRequest(), &alerts)
                  .error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(
        none.call(&pb::FleetAdmin::Stub::ListAlerts, pb::ListAlertsRequest(), &alerts).error_code(),
        grpc::StatusCode::UNAUTHENTICATED);
    Admin right(channel(false), "admin-secret");
    grpc::Status st =
        right.call(&pb::FleetAdmin::Stub::ListSensors, pb::ListSensorsRequest(), &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    st = right.call(&pb::FleetAdmin::Stub::ListAlerts, pb::ListAlertsRequest(), &alerts);
    EXPECT_TRUE(st.ok()) << st.error_message();
}

TEST_F(SecureManager, EnrollmentTokenMustMatch) {
    ASSERT_TRUE(store_->enroll_sensor("s9", pki::token_hash("good-token"), 1, "test").ok());
    pb::Hello bad = hello("s9");
    bad.set_enrollment_token("bad-token");
    FakeSensor refused(channel(false), bad);
    EXPECT_EQ(refused.final_status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(refused.messages().size(), 0u);
    EXPECT_FALSE(store_->get_sensor("s9")->connected);

    pb::Hello unknown = hello("s10");
    unknown.set_enrollment_token("good-token");
    FakeSensor stranger(channel(false), unknown);
    EXPECT_EQ(stranger.final_status().error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(stranger.messages().size(), 0u);

    FakeSensor nothing(channel(false), hello("s9"));
    EXPECT_EQ(nothing.final_status().error_code(), grpc::StatusCode::UNAUTHENTICATED);

    pb::Hello good = hello("s9");
    good.set_enrollment_token("good-token");
    FakeSensor accepted(channel(false), good);
    ASSERT_TRUE(wait_for([&] { return !accepted.messages().empty(); }));
    EXPECT_TRUE(accepted.messages()[0].welcome().accepted());
}

TEST_F(SecureManager, ClientCertificateMustNameTheSensor) {
    FakeSensor impostor(channel(true), hello("s2"));
    EXPECT_EQ(impostor.final_status().error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(impostor.messages().size(), 0u);
    FakeSensor s1(channel(true), hello("s1"));
    ASSERT_TRUE(wait_for([&] { return !s1.messages().empty(); }));
    EXPECT_TRUE(s1.messages()[0].welcome().accepted());
    EXPECT_TRUE(store_->get_sensor("s1")->connected);
}

// ---- Arguments

TEST(ManagerOptionsTest, InsecureOnlyOnLoopback) {
    ManagerOptions o;
    o.insecure = true;
    for (const char* ok : {"127.0.0.1:7443", "127.1.2.3:0", "[::1]:7443", "localhost:7443"}) {
        o.listen = ok;
        EXPECT_TRUE(validate_options(o).ok()) << ok;
    }
    for (const char* bad : {"0.0.0.0:7443", "10.0.0.1:7443", "[::]:7443", "example.com:7443"}) {
        o.listen = bad;
        absl::Status st = validate_options(o);
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << bad;
        EXPECT_NE(st.message().find("--insecure"), std::string::npos) << bad;
    }
}

TEST(ManagerOptionsTest, OtherArgumentChecks) {
    ManagerOptions o;
    o.listen = "0.0.0.0:7443";
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);  // no TLS
    o.tls_cert_file = "m.crt";
    o.tls_key_file = "m.key";
    o.client_ca_file = "ca.crt";
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);  // no token
    o.admin_token = "t";
    EXPECT_TRUE(validate_options(o).ok());
    o.listen = "7443";
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);
    o.listen = "127.0.0.1:7443";
    o.insecure = true;
    EXPECT_EQ(validate_options(o).code(), absl::StatusCode::kInvalidArgument);  // + TLS files
    EXPECT_TRUE(is_loopback_address("ipv4:127.0.0.1:1"));
    EXPECT_FALSE(is_loopback_address("128.0.0.1:1"));
}

// ---------------------------------------------------------------- Prometheus series

class MeteredManager : public InsecureManager {
protected:
    picket::metrics::Registry* registry() override { return &registry_; }
    bool has_line(const std::string& line) {
        std::string text = registry_.render();
        return text.find("\n" + line + "\n") != std::string::npos;
    }
    // Waits until the rendering has `line` (the state reaches the collector asynchronously).
    bool wait_line(const std::string& line) {
        return wait_for([&] { return has_line(line); });
    }
    picket::metrics::Registry registry_;  // reset server_ (TearDown) before it goes
};

TEST_F(MeteredManager, SensorSeriesComeFromTheLatestReport) {
    FakeSensor s1(channel_, hello("s1", 0, {{"site", "paris"}}));
    ASSERT_TRUE(wait_connected("s1"));
    s1.send_metrics(1, 2'500'000'000,
                    {{"decoder.pkts", 100},
                     {"decoder.bytes", 6400},
                     {"capture.kernel_drops", 2},
                     {"capture.queue_drops", 3},
                     {"detect.alert", 4},
                     {"flow.active", 7},
                     {"detect.rules_loaded", 12},
                     {"detect.rules_failed", 1}});
    ASSERT_TRUE(wait_line(R"(picket_sensor_packets_total{sensor="s1"} 100)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_up{sensor="s1"} 1)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_bytes_total{sensor="s1"} 6400)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_drops_total{sensor="s1",reason="kernel"} 2)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_drops_total{sensor="s1",reason="queue"} 3)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_alerts_total{sensor="s1"} 4)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_flows_active{sensor="s1"} 7)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_rules_loaded{sensor="s1"} 12)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_rules_failed{sensor="s1"} 1)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_last_report_timestamp_seconds{sensor="s1"} 2.5)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_bundle_info{sensor="s1",version="0",sha=""} 1)"));
    EXPECT_TRUE(has_line(R"(picket_sensors{state="connected"} 1)"));
    EXPECT_TRUE(has_line(R"(picket_sensors{state="disconnected"} 0)"));
    EXPECT_TRUE(has_line(R"(picket_manager_sensor_messages_total{kind="hello"} 1)"));
    EXPECT_TRUE(has_line(R"(picket_manager_sensor_messages_total{kind="metrics"} 1)"));
    EXPECT_TRUE(has_line("picket_bundle_latest_version 0"));
    EXPECT_TRUE(has_line(R"(picket_deployment_targets{state="pending"} 0)"));

    // The sensor goes away: its series stay, with up 0.
    s1.close();
    ASSERT_TRUE(wait_line(R"(picket_sensor_up{sensor="s1"} 0)"));
    EXPECT_TRUE(has_line(R"(picket_sensors{state="disconnected"} 1)"));
    EXPECT_TRUE(has_line(R"(picket_sensor_packets_total{sensor="s1"} 100)"));
}

TEST_F(MeteredManager, AdminRpcsAreTimedAndBundlesAndDeploymentsCounted) {
    // Silent: the sensor never answers, so its target stays "sent" however slow the machine
    // (an answering sensor could move it to "applied" before the first look).
    FakeSensor s1(channel_, hello("s1"), /*reject_error=*/"", /*silent=*/true);
    ASSERT_TRUE(wait_connected("s1"));
    uint64_t v = admin_->push(make_bundle("demo", "alert tcp any any -> any any (sid:1;)\n"));
    ASSERT_EQ(v, 1u);
    pb::DeployResponse resp;
    ASSERT_TRUE(admin_->deploy(v, "all", &resp).ok());
    pb::ListSensorsResponse list;
    pb::ListSensorsRequest bad;
    bad.set_selector("label=");
    EXPECT_FALSE(admin_->call(&pb::FleetAdmin::Stub::ListSensors, bad, &list).ok());

    EXPECT_TRUE(has_line("picket_bundle_latest_version 1"));
    EXPECT_TRUE(has_line("picket_deployments_total 1"));
    EXPECT_TRUE(has_line("picket_rollbacks_total 0"));
    EXPECT_TRUE(has_line("picket_deployment_latest_id 1"));
    EXPECT_TRUE(
        has_line(R"(picket_manager_grpc_request_duration_seconds_count{method="PushBundle"} 1)"));
    EXPECT_TRUE(has_line(R"(picket_manager_grpc_requests_total{method="PushBundle",code="OK"} 1)"));
    EXPECT_TRUE(has_line(
        R"(picket_manager_grpc_requests_total{method="ListSensors",code="INVALID_ARGUMENT"} 1)"));
    EXPECT_TRUE(
        has_line(R"(picket_manager_grpc_requests_total{method="ListSensors",code="OK"} 0)"));
    // The target is sent to s1 (connected) and waits for its answer.
    ASSERT_TRUE(wait_line(R"(picket_deployment_targets{state="sent"} 1)"));
    EXPECT_TRUE(has_line(R"(picket_deployment_latest_state{state="rolling"} 1)"));
    // Store latencies are registered by picket-manager's main (not here); the SQLite writes
    // of this test must not have touched the registry.
    EXPECT_FALSE(has_line("picket_manager_store_op_duration_seconds_count 0"));
}

// A blob damaged in the database is never sent: the target is rejected with the manager's
// reason (not left pending for ever) and pushing the same bundle again repairs it.
TEST_F(InsecureManager, CorruptStoredBlobRejectsTheTargetAndTheSamePushRepairsIt) {
    uint64_t v = admin_->push(make_bundle("base", kRuleV1));
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(dir_.file("fleet.db").c_str(), &db), SQLITE_OK);
        const char* sql =
            "DROP TRIGGER blobs_immutable; UPDATE blobs SET data = data || x'0a00'; "
            "CREATE TRIGGER blobs_immutable BEFORE UPDATE ON blobs "
            "BEGIN SELECT RAISE(ABORT, 'blobs are immutable'); END;";
        EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
    }
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    pb::DeployResponse dep;
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_FAILED));
    pb::Deployment d = admin_->deployment(dep.deployment().id());
    ASSERT_EQ(d.targets_size(), 1);
    EXPECT_EQ(d.targets(0).state(), pb::TARGET_STATE_REJECTED);
    EXPECT_EQ(d.targets(0).error().rfind("manager: bundle version 1: stored blob is corrupt", 0),
              0u)
        << d.targets(0).error();
    EXPECT_TRUE(s1.applies().empty());

    EXPECT_EQ(admin_->push(make_bundle("base", kRuleV1)), v);
    ASSERT_TRUE(admin_->deploy(v, "s1", &dep).ok());
    ASSERT_TRUE(admin_->wait_state(dep.deployment().id(), pb::DEPLOYMENT_STATE_SUCCEEDED));
    ASSERT_EQ(s1.applies().size(), 1u);
    EXPECT_TRUE(bundle::verify_bundle(s1.applies()[0].bundle()).ok());
}

// The store's writer counters are the store's own (no database read), on a lone SQLite
// manager too: conflicts are PostgreSQL's and stay 0 here.
TEST_F(MeteredManager, StoreWriterCountersAreExported) {
    EXPECT_TRUE(has_line("# TYPE picket_manager_store_writes_total counter"));
    EXPECT_TRUE(has_line("# TYPE picket_manager_store_write_transactions_total counter"));
    EXPECT_TRUE(has_line("# TYPE picket_manager_store_conflicts_retried_total counter"));
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    s1.send_metrics(1, 1'000'000'000, {{"decoder.pkts", 10}});
    // The rendering matches the writer's counters once both are read between two writes.
    store::Store::WriterStats w;
    ASSERT_TRUE(wait_for([&] {
        w = store_->writer_stats();
        return w.ops >= 2 &&
               has_line("picket_manager_store_writes_total " + std::to_string(w.ops)) &&
               has_line("picket_manager_store_write_transactions_total " +
                        std::to_string(w.transactions));
    })) << registry_.render();
    EXPECT_GE(w.ops, w.transactions);
    EXPECT_GE(w.transactions, 1);
    EXPECT_TRUE(has_line("picket_manager_store_conflicts_retried_total 0"));
}

// The sensor's clock, as seen from the manager: report timestamp minus arrival time.
TEST_F(MeteredManager, SensorClockOffsetIsExported) {
    EXPECT_TRUE(has_line("# TYPE picket_manager_sensor_clock_offset_seconds gauge"));
    FakeSensor s1(channel_, hello("s1"));
    ASSERT_TRUE(wait_connected("s1"));
    const int64_t day_ahead =
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::system_clock::now().time_since_epoch() + std::chrono::hours(24))
            .count();
    s1.send_metrics(1, day_ahead, {{"decoder.pkts", 1}});
    const std::string prefix = R"(picket_manager_sensor_clock_offset_seconds{sensor="s1"} )";
    double offset = 0;
    ASSERT_TRUE(wait_for([&] {
        std::string text = registry_.render();
        size_t at = text.find("\n" + prefix);
        if (at == std::string::npos) {
            return false;
        }
        offset = std::stod(text.substr(at + 1 + prefix.size()));
        return true;
    }));
    // A day, less the time the report took to arrive (well under 10 s here).
    EXPECT_LE(offset, 86400.0);
    EXPECT_GT(offset, 86390.0);
}

// The manager's own certificate expiry (PicketManagerCertificateExpiring): absent when
// insecure, its notAfter (issue time - backdate + validity) with TLS.
TEST_F(MeteredManager, InsecureManagerHasNoCertificateExpiry) {
    EXPECT_TRUE(has_line("# TYPE picket_manager_certificate_expiry_timestamp_seconds gauge"));
    EXPECT_EQ(registry_.render().find("\npicket_manager_certificate_expiry_timestamp_seconds "),
              std::string::npos);
}

class MeteredSecureManager : public testing::ManagerTest {
protected:
    MeteredSecureManager() : ManagerTest(kTempPrefix) {}
    picket::metrics::Registry registry_;  // reset server_ (TearDown) before it goes
};

TEST_F(MeteredSecureManager, CertificateExpiryIsExported) {
    auto unix_now = [] {
        return std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
    ASSERT_TRUE(pki::init_ca(dir_.path(), "test-ca").ok());
    const int64_t before = unix_now();
    ASSERT_TRUE(pki::issue(dir_.path(), pki::CertKind::kManager, "manager", {"127.0.0.1"}, 20,
                           std::chrono::seconds(300))
                    .ok());
    const int64_t after = unix_now();
    ASSERT_NO_FATAL_FAILURE(start(testing::tls_options(dir_), &registry_));
    const std::string prefix = "\npicket_manager_certificate_expiry_timestamp_seconds ";
    const std::string text = registry_.render();
    const size_t at = text.find(prefix);
    ASSERT_NE(at, std::string::npos) << text;
    const double expiry = std::stod(text.substr(at + prefix.size()));
    EXPECT_GE(expiry, static_cast<double>(before - 300 + 20 * 86400));
    EXPECT_LE(expiry, static_cast<double>(after - 300 + 20 * 86400));
}

// Two replicas on one PostgreSQL database (a server of the test's own). Replica "a" holds the
// leader lock and drives the deployment; its canary streams to replica "b": the gate must read
// that sensor's counters from the store (a has no live entry for it), see its alert rate and
// roll the canary back, as a lone manager would.
TEST(ReplicatedManagers, TheLeaderGatesACanaryStreamingToAnotherReplica) {
    std::string why;
    std::unique_ptr<picket::testing::PostgresServer> pg =
        picket::testing::PostgresServer::start(&why);
    if (pg == nullptr) {
        GTEST_SKIP() << why;
    }
    const std::string dsn = pg->fresh_dsn();
    struct Replica {
        std::unique_ptr<store::Store> store;
        std::unique_ptr<ManagerServer> server;
        std::shared_ptr<grpc::Channel> channel;
    };
    auto start_replica = [&](const std::string& name, Replica* r) {
        store::StoreOptions so;
        so.reset_connections = false;
        auto s = store::Store::Open(dsn, so);
        ASSERT_TRUE(s.ok()) << s.status();
        r->store = std::move(*s);
        ha::PgCoordinatorOptions co;
        co.dsn = dsn;
        co.replica = name;
        co.tick = 100ms;
        auto c = ha::make_pg_coordinator(co);
        ASSERT_TRUE(c.ok()) << c.status();
        ManagerOptions o;
        o.listen = "127.0.0.1:0";
        o.insecure = true;
        o.rollout_poll = 50ms;
        o.ping_interval = 60s;
        o.replica_name = name;
        auto srv = ManagerServer::start(o, *r->store, nullptr, std::move(*c));
        ASSERT_TRUE(srv.ok()) << srv.status();
        r->server = std::move(*srv);
        r->channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(r->server->port()),
                                         grpc::InsecureChannelCredentials());
    };
    Replica a;
    Replica b;
    ASSERT_NO_FATAL_FAILURE(start_replica("a", &a));
    ASSERT_TRUE(wait_for([&] { return a.server->is_leader(); }));
    ASSERT_NO_FATAL_FAILURE(start_replica("b", &b));
    Admin admin(a.channel);
    uint64_t v1 = admin.push(make_bundle("base", kRuleV1));
    uint64_t v2 = admin.push(make_bundle("base", kRuleV2));
    // s1 (the canary: the first by name) on b, s2 on a.
    FakeSensor s1(b.channel, hello("s1", v1));
    ASSERT_TRUE(s1.welcomed());
    FakeSensor s2(a.channel, hello("s2", v1));
    ASSERT_TRUE(s2.welcomed());
    EXPECT_FALSE(b.server->is_leader());

    pb::DeployResponse dep;
    ASSERT_TRUE(admin.deploy(v2, "all", &dep, /*canary=*/50, /*soak=*/2, /*alerts/s=*/10).ok());
    const std::string id = dep.deployment().id();
    ASSERT_EQ(dep.deployment().targets_size(), 2);
    ASSERT_EQ(dep.deployment().targets(0).sensor(), "s1");
    ASSERT_TRUE(dep.deployment().targets(0).canary());
    ASSERT_TRUE(s1.wait_applies(1));  // through b, told by a's NOTIFY
    EXPECT_EQ(s1.applies()[0].bundle().manifest().version(), v2);

    // The canary alerts at about 10,000/s (1,000 a report, one report every 100 ms).
    uint64_t seq = 0;
    EXPECT_TRUE(wait_for(
        [&] {
            ++seq;
            s1.send_metrics(seq, static_cast<int64_t>(seq) * 100'000'000,
                            {{"decoder.pkts", seq * 100}, {"detect.alert", seq * 1000}});
            std::this_thread::sleep_for(100ms);
            return admin.deployment(id).state() == pb::DEPLOYMENT_STATE_ROLLED_BACK;
        },
        20s));
    pb::Deployment d = admin.deployment(id);
    EXPECT_EQ(d.message().rfind("health gate failed: alert rate", 0), 0u) << d.message();
    EXPECT_EQ(d.targets(1).state(), pb::TARGET_STATE_CANCELLED);
    ASSERT_FALSE(d.rollback_deployment_id().empty());
    ASSERT_TRUE(s1.wait_applies(2));
    EXPECT_EQ(s1.applies()[1].bundle().manifest().version(), v1);
    EXPECT_EQ(s2.applies().size(), 0u);
    s1.close();
    s2.close();
    b.server->stop();
    a.server->stop();
}

}  // namespace
}  // namespace picket::manager::service
