// The manager's security controls over real gRPC on 127.0.0.1 (port 0) with the fleet PKI:
// revocation (stream closed, refused at reconnect, re-enrollment), unauthenticated sensors
// (no / wrong token, a certificate of another CA), the admin token on RevokeSensor, and the
// request bounds (gRPC message size, bundle size, rule count). docs/security.md maps each
// threat to these tests.
#include <filesystem>
#include <memory>
#include <string>

#include "common/bundle/bundle.h"
#include "common/pki/pki.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "manager/service/service.h"
#include "picket/v1/picket.grpc.pb.h"
#include "tests/manager/service/service_fixture.h"

namespace picket::manager::service {
namespace {

namespace pb = picket::v1;
using namespace std::chrono_literals;

using testing::FakeSensor;
using testing::read_file;
using testing::TempDir;
using testing::wait_for;

constexpr const char* kTempPrefix = "picket-service-sec";

pb::Hello hello(const std::string& name, const std::string& token = {}) {
    pb::Hello h;
    h.set_sensor_name(name);
    h.set_host("host-" + name);
    h.set_enrollment_token(token);
    h.set_started_at(1);
    return h;
}

class SecureFleet : public testing::ManagerTest {
protected:
    SecureFleet() : ManagerTest(kTempPrefix) {}
    void SetUp() override {
        ASSERT_TRUE(pki::init_ca(dir_.path(), "fleet-ca").ok());
        ASSERT_TRUE(
            pki::issue(dir_.path(), pki::CertKind::kManager, "manager", {"127.0.0.1"}).ok());
        ASSERT_TRUE(pki::issue(dir_.path(), pki::CertKind::kSensor, "s1", {}).ok());
        std::filesystem::create_directory(dir_.file("other"));
        ASSERT_TRUE(pki::init_ca(dir_.file("other"), "other-ca").ok());
        ASSERT_TRUE(pki::issue(dir_.file("other"), pki::CertKind::kSensor, "s1", {}).ok());
        start(testing::tls_options(dir_));
    }
    // TLS to the manager; with `cert_dir`, the client certificate s1 issued there.
    std::shared_ptr<grpc::Channel> channel(const std::string& cert_dir = {}) {
        grpc::SslCredentialsOptions ssl;
        ssl.pem_root_certs = read_file(dir_.file("ca.crt"));
        if (!cert_dir.empty()) {
            ssl.pem_private_key = read_file(cert_dir + "/s1.key");
            ssl.pem_cert_chain = read_file(cert_dir + "/s1.crt");
        }
        grpc::ChannelArguments args;
        args.SetSslTargetNameOverride("manager");
        // Each stream gets its own connection: a refused handshake must not be shared.
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                         grpc::SslCredentials(ssl), args);
    }
    grpc::Status revoke(const std::string& name, pb::RevokeSensorResponse* resp,
                        const std::string& token = "admin-secret") {
        auto stub = pb::FleetAdmin::NewStub(channel());
        grpc::ClientContext ctx;
        ctx.AddMetadata("authorization", "Bearer " + token);
        pb::RevokeSensorRequest req;
        req.set_name(name);
        return stub->RevokeSensor(&ctx, req, resp);
    }
    pb::Sensor listed(const std::string& name) {
        auto stub = pb::FleetAdmin::NewStub(channel());
        grpc::ClientContext ctx;
        ctx.AddMetadata("authorization", "Bearer admin-secret");
        pb::ListSensorsResponse resp;
        EXPECT_TRUE(stub->ListSensors(&ctx, pb::ListSensorsRequest(), &resp).ok());
        for (const pb::Sensor& s : resp.sensors()) {
            if (s.name() == name) {
                return s;
            }
        }
        ADD_FAILURE() << name << " not listed";
        return {};
    }
};

TEST_F(SecureFleet, RevokedCertificateSensorIsDisconnectedAndRefused) {
    auto sensor = std::make_unique<FakeSensor>(channel(dir_.path()), hello("s1"));
    ASSERT_TRUE(sensor->welcomed());
    ASSERT_TRUE(store_->get_sensor("s1")->connected);

    pb::RevokeSensorResponse resp;
    grpc::Status st = revoke("s1", &resp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_TRUE(resp.revoked_now());
    EXPECT_TRUE(resp.disconnected());
    EXPECT_TRUE(resp.sensor().revoked());
    // The open stream ends at once (cancelled by the manager), not at the next ping.
    EXPECT_TRUE(wait_for([&] { return sensor->done(); }, 2s));
    EXPECT_EQ(sensor->final_status().error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_TRUE(wait_for([&] { return !store_->get_sensor("s1")->connected; }));
    pb::Sensor s = listed("s1");
    EXPECT_TRUE(s.revoked());
    EXPECT_FALSE(s.connected());
    EXPECT_GT(s.revoked_at(), 0);

    FakeSensor again(channel(dir_.path()), hello("s1"));
    grpc::Status refused = again.final_status();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(refused.error_message(),
              "the client certificate of sensor 's1' was revoked; issue it a new certificate "
              "(picketctl pki issue)");
    EXPECT_EQ(again.messages().size(), 0u);  // no Welcome

    pb::RevokeSensorResponse twice;
    ASSERT_TRUE(revoke("s1", &twice).ok());
    EXPECT_FALSE(twice.revoked_now());
    EXPECT_FALSE(twice.disconnected());
}

TEST_F(SecureFleet, RevokedTokenSensorNeedsANewEnrollment) {
    ASSERT_TRUE(store_->enroll_sensor("s9", pki::token_hash("token-1"), 1, "test").ok());
    {
        FakeSensor sensor(channel(), hello("s9", "token-1"));
        ASSERT_TRUE(sensor.welcomed());
        pb::RevokeSensorResponse resp;
        ASSERT_TRUE(revoke("s9", &resp).ok());
        EXPECT_EQ(sensor.final_status().error_code(), grpc::StatusCode::CANCELLED);
    }
    FakeSensor refused(channel(), hello("s9", "token-1"));
    EXPECT_EQ(refused.final_status().error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(refused.final_status().error_message(),
              "sensor 's9' is revoked (re-enroll it to let it back in: picket-manager --enroll "
              "s9)");

    // picket-manager --enroll s9 (what main.cc calls): a new token, the old one stays refused.
    ASSERT_TRUE(store_->enroll_sensor("s9", pki::token_hash("token-2"), 2, "test").ok());
    EXPECT_FALSE(listed("s9").revoked());
    FakeSensor old_token(channel(), hello("s9", "token-1"));
    EXPECT_EQ(old_token.final_status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(old_token.final_status().error_message(), "bad enrollment token for sensor 's9'");
    FakeSensor back(channel(), hello("s9", "token-2"));
    EXPECT_TRUE(back.welcomed());
}

TEST_F(SecureFleet, UnauthenticatedSensorsGetNothing) {
    ASSERT_TRUE(store_->enroll_sensor("s9", pki::token_hash("token-1"), 1, "test").ok());
    FakeSensor wrong(channel(), hello("s9", "guess"));
    EXPECT_EQ(wrong.final_status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
    FakeSensor none(channel(), hello("s9"));
    EXPECT_EQ(none.final_status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(none.final_status().error_message(), "no client certificate and no enrollment token");
    // A certificate of another CA fails the TLS handshake: no stream at all.
    FakeSensor foreign(channel(dir_.file("other")), hello("s1"));
    EXPECT_EQ(foreign.final_status().error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(foreign.messages().size(), 0u);
    EXPECT_FALSE(store_->get_sensor("s1").ok());  // never registered
    // A name registered by its certificate cannot be taken over with a token.
    {
        FakeSensor s1(channel(dir_.path()), hello("s1"));
        ASSERT_TRUE(s1.welcomed());
    }
    FakeSensor takeover(channel(), hello("s1", "any-token"));
    EXPECT_EQ(takeover.final_status().error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(takeover.final_status().error_message(),
              "sensor 's1' has no enrollment token (it authenticates with a client certificate)");
    for (FakeSensor* f : {&wrong, &none, &foreign, &takeover}) {
        EXPECT_EQ(f->messages().size(), 0u);
    }
}

TEST_F(SecureFleet, RevokeNeedsTheAdminTokenAndAKnownSensor) {
    pb::RevokeSensorResponse resp;
    EXPECT_EQ(revoke("s1", &resp, "not-the-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);
    grpc::Status unknown = revoke("nobody", &resp);
    EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(unknown.error_message(), "sensor 'nobody' not found");
    EXPECT_EQ(revoke("all", &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// ---- Revocation and deployments (insecure loopback manager: no TLS needed here)

TEST(RevokeDuringDeployment, RevokedCanaryFailsTheDeploymentNamingIt) {
    TempDir dir(kTempPrefix);
    auto s = store::Store::Open(dir.file("fleet.db"));
    ASSERT_TRUE(s.ok()) << s.status();
    ManagerOptions o;
    o.listen = "127.0.0.1:0";
    o.insecure = true;
    o.rollout_poll = 50ms;
    auto server = ManagerServer::start(o, **s);
    ASSERT_TRUE(server.ok()) << server.status();
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*server)->port()),
                                       grpc::InsecureChannelCredentials());
    auto admin = pb::FleetAdmin::NewStub(channel);
    {
        // Sensors that never answer ApplyBundle: the canary's target stays sent.
        FakeSensor a(channel, hello("a"), /*reject_error=*/"", /*silent=*/true);
        FakeSensor b(channel, hello("b"), /*reject_error=*/"", /*silent=*/true);
        ASSERT_TRUE(a.welcomed());
        ASSERT_TRUE(b.welcomed());
        pb::PushBundleRequest push;
        pb::BundleFile* f = push.mutable_bundle()->add_files();
        f->set_path("rules/a.rules");
        f->set_content("alert ip any any -> any any (sid:1;)\n");
        push.mutable_bundle()->mutable_manifest()->set_name("r");
        bundle::update_manifest_files(*push.mutable_bundle());
        pb::PushBundleResponse pushed;
        grpc::ClientContext c1;
        ASSERT_TRUE(admin->PushBundle(&c1, push, &pushed).ok());
        pb::DeployRequest deploy;
        deploy.set_version(pushed.version());
        deploy.set_selector("all");
        deploy.set_canary_percent(50);
        deploy.set_soak_seconds(60);
        pb::DeployResponse deployed;
        grpc::ClientContext c2;
        ASSERT_TRUE(admin->Deploy(&c2, deploy, &deployed).ok());
        const std::string id = deployed.deployment().id();
        auto target_a = [&] {
            auto d = (*s)->get_deployment(std::stoll(id));
            return d.ok() ? d->targets[0].state : store::TargetState::kPending;
        };
        ASSERT_TRUE(wait_for([&] { return target_a() == store::TargetState::kSent; }));

        pb::RevokeSensorRequest revoke;
        revoke.set_name("a");
        pb::RevokeSensorResponse revoked;
        grpc::ClientContext c3;
        ASSERT_TRUE(admin->RevokeSensor(&c3, revoke, &revoked).ok());
        EXPECT_TRUE(revoked.disconnected());
        pb::Deployment d;
        ASSERT_TRUE(wait_for([&] {
            pb::GetDeploymentRequest get;
            get.set_id(id);
            pb::GetDeploymentResponse got;
            grpc::ClientContext c4;
            if (!admin->GetDeployment(&c4, get, &got).ok()) {
                return false;
            }
            d = got.deployment();
            return d.state() == pb::DEPLOYMENT_STATE_FAILED;
        }));
        EXPECT_EQ(d.message(), "canary a was revoked");
        ASSERT_EQ(d.targets_size(), 2);
        EXPECT_EQ(d.targets(0).sensor(), "a");
        EXPECT_EQ(d.targets(0).state(), pb::TARGET_STATE_CANCELLED);
        EXPECT_EQ(d.targets(0).error(), "sensor revoked");
        EXPECT_EQ(b.messages().size(), 1u);  // Welcome only: the rest never got the bundle
    }
    (*server)->stop();
}

// ---- Request bounds (insecure loopback manager: the limits are the same with TLS)

class Bounds : public testing::ManagerTest {
protected:
    Bounds() : ManagerTest(kTempPrefix) {}
    void SetUp() override {
        ManagerOptions o;
        o.listen = "127.0.0.1:0";
        o.insecure = true;
        ASSERT_NO_FATAL_FAILURE(start(o));
        grpc::ChannelArguments args;
        args.SetMaxSendMessageSize(-1);  // let the server be the one that refuses
        stub_ = pb::FleetAdmin::NewStub(
            grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                      grpc::InsecureChannelCredentials(), args));
    }
    grpc::Status push(const pb::Bundle& b) {
        grpc::ClientContext ctx;
        pb::PushBundleRequest req;
        *req.mutable_bundle() = b;
        pb::PushBundleResponse resp;
        return stub_->PushBundle(&ctx, req, &resp);
    }
    static pb::Bundle bundle_with(const std::string& rules) {
        pb::Bundle b;
        b.mutable_manifest()->set_name("big");
        pb::BundleFile* f = b.add_files();
        f->set_path("rules/a.rules");
        f->set_content(rules);
        bundle::update_manifest_files(b);
        return b;
    }

    std::unique_ptr<pb::FleetAdmin::Stub> stub_;
};

TEST_F(Bounds, RuleCountOverTheLimitIsRefusedAtPush) {
    std::string rules;
    const uint64_t n = bundle::Limits{}.max_rules + 1;
    for (uint64_t sid = 1; sid <= n; ++sid) {
        rules += "alert ip any any -> any any (sid:" + std::to_string(sid) + ";)\n";
    }
    grpc::Status st = push(bundle_with(rules));
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(st.error_message(),
              "bundle 'big' rejected: bundle has 200001 rules, over the limit of 200000");
    EXPECT_EQ(store_->latest_version().value(), 0);
}

TEST_F(Bounds, BundleOverTheSizeLimitIsRefusedAtPush) {
    const uint64_t size = bundle::Limits{}.max_total_bytes + 1;  // fits in one gRPC message
    std::string rules = "alert ip any any -> any any (sid:1;)\n";
    rules.resize(size, '#');
    grpc::Status st = push(bundle_with(rules));
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(st.error_message(),
              "bundle 'big' rejected: rules/a.rules: 67108865 bytes, over the limit of "
              "67108864\nbundle files total 67108865 bytes, over the limit of 67108864");
    EXPECT_EQ(store_->latest_version().value(), 0);
}

TEST_F(Bounds, MessageOverTheGrpcLimitIsRefusedBeforeParsing) {
    std::string rules(static_cast<size_t>(bundle::kMaxMessageBytes) + 1, '#');
    grpc::Status st = push(bundle_with(rules));
    EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_EQ(store_->latest_version().value(), 0);
}

TEST(MessageLimit, LargestValidBundleFitsInOneMessage) {
    // A bundle at every limit at once: 4096 files with 255-byte paths, 4 KiB author and
    // message, a signature, max_total_bytes of content.
    const bundle::Limits limits;
    pb::PushBundleRequest req;
    pb::Bundle* b = req.mutable_bundle();
    b->mutable_manifest()->set_name(std::string(64, 'n'));
    b->mutable_manifest()->set_author(std::string(4096, 'a'));
    b->mutable_manifest()->set_message(std::string(4096, 'm'));
    b->mutable_manifest()->set_created_at(INT64_MAX);
    b->set_signature(std::string(64, 's'));
    b->set_signing_key_id(std::string(16, 'f'));
    const uint64_t per_file = limits.max_total_bytes / limits.max_files;
    for (uint32_t i = 0; i < limits.max_files; ++i) {
        std::string index = std::to_string(i);
        std::string path =
            "rules/" + std::string(255 - 6 - index.size() - 6, 'p') + index + ".rules";
        ASSERT_EQ(path.size(), 255u);
        pb::BundleFile* f = b->add_files();
        f->set_path(path);
        f->set_content(std::string(per_file, 'x'));
    }
    bundle::update_manifest_files(*b);
    ASSERT_TRUE(bundle::verify_bundle(*b, {limits, "", false}).ok());
    EXPECT_LE(req.ByteSizeLong(), static_cast<size_t>(bundle::kMaxMessageBytes));
    EXPECT_EQ(bundle::kMaxMessageBytes, 68 << 20);
}

}  // namespace
}  // namespace picket::manager::service
