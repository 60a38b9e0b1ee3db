// picketctl enroll token create|list|revoke and sensor readmit: the requests they send, their
// text and JSON output, and the usage errors caught before any RPC. Against an in-test
// FleetAdmin on 127.0.0.1:0.
#include <gtest/gtest.h>

#include <mutex>
#include <sstream>

#include "manager/cli/picketctl.h"

namespace picket::manager::cli {
namespace {

namespace v1 = picket::v1;
using nlohmann::json;

constexpr int64_t kT0 = 1'764'547'200'000'000'000;  // 2025-12-01T00:00:00Z

v1::BootstrapTokenInfo info(const std::string& id, uint32_t uses, uint32_t used) {
    v1::BootstrapTokenInfo t;
    t.set_id(id);
    t.set_uses(uses);
    t.set_used(used);
    t.set_expires_at(kT0 + 3600'000'000'000);
    t.set_created_at(kT0);
    (*t.mutable_labels())["site"] = "lab";
    t.set_state(used >= uses ? "used_up" : "active");
    t.set_created_by("admin");
    return t;
}

class EnrollAdmin final : public v1::FleetAdmin::Service {
public:
    grpc::Status CreateBootstrapToken(grpc::ServerContext*,
                                      const v1::CreateBootstrapTokenRequest* req,
                                      v1::CreateBootstrapTokenResponse* resp) override {
        std::lock_guard<std::mutex> lock(mu);
        create = *req;
        resp->set_token("abcd1234.SECRETsecretSECRETsecretSECRETsecret12");
        *resp->mutable_info() = info("abcd1234", req->uses(), 0);
        return grpc::Status::OK;
    }
    grpc::Status ListBootstrapTokens(grpc::ServerContext*, const v1::ListBootstrapTokensRequest*,
                                     v1::ListBootstrapTokensResponse* resp) override {
        *resp->add_tokens() = info("abcd1234", 2, 2);
        *resp->add_tokens() = info("zz99zz99", 5, 1);
        resp->mutable_tokens(1)->set_name_pattern("edge-[0-9]+");
        return grpc::Status::OK;
    }
    grpc::Status RevokeBootstrapToken(grpc::ServerContext*,
                                      const v1::RevokeBootstrapTokenRequest* req,
                                      v1::RevokeBootstrapTokenResponse* resp) override {
        if (req->id() != "abcd1234") {
            return grpc::Status(grpc::StatusCode::NOT_FOUND,
                                "bootstrap token '" + req->id() + "' unknown");
        }
        *resp->mutable_info() = info("abcd1234", 2, 1);
        resp->set_revoked_now(true);
        return grpc::Status::OK;
    }
    grpc::Status ReadmitSensor(grpc::ServerContext*, const v1::ReadmitSensorRequest* req,
                               v1::ReadmitSensorResponse* resp) override {
        resp->mutable_sensor()->set_name(req->name());
        resp->set_readmitted_now(req->name() != "fine");
        return grpc::Status::OK;
    }
    std::mutex mu;
    v1::CreateBootstrapTokenRequest create;
};

struct Result {
    int code = -1;
    std::string out;
    std::string err;
};

class EnrollCli : public ::testing::Test {
protected:
    void SetUp() override {
        grpc::ServerBuilder b;
        b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
        b.RegisterService(&service_);
        server_ = b.BuildAndStart();
        ASSERT_NE(server_, nullptr);
    }
    void TearDown() override { server_->Shutdown(); }
    Result cli(std::vector<std::string> args) {
        std::vector<std::string> all = {"picketctl", "--manager",
                                        "127.0.0.1:" + std::to_string(port_), "--insecure"};
        all.insert(all.end(), args.begin(), args.end());
        std::vector<const char*> argv;
        for (const std::string& a : all) {
            argv.push_back(a.c_str());
        }
        std::ostringstream out, err;
        Result r;
        { std::lock_guard<std::mutex> fence(service_.mu); }
        r.code = run(static_cast<int>(argv.size()), argv.data(), out, err);
        { std::lock_guard<std::mutex> fence(service_.mu); }
        r.out = out.str();
        r.err = err.str();
        return r;
    }
    EnrollAdmin service_;
    std::unique_ptr<grpc::Server> server_;
    int port_ = 0;
};

TEST_F(EnrollCli, CreateSendsTheOptionsAndPrintsOnlyTheToken) {
    Result r = cli({"enroll", "token", "create", "--uses", "3", "--ttl", "2h", "--labels",
                    "site=lab,zone=dmz", "--name-pattern", "edge-[0-9]+"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out, "abcd1234.SECRETsecretSECRETsecretSECRETsecret12\n");
    std::lock_guard<std::mutex> lock(service_.mu);
    EXPECT_EQ(service_.create.uses(), 3u);
    EXPECT_EQ(service_.create.ttl_seconds(), 7200u);
    EXPECT_EQ(service_.create.labels().size(), 2u);
    EXPECT_EQ(service_.create.labels().at("zone"), "dmz");
    EXPECT_EQ(service_.create.name_pattern(), "edge-[0-9]+");
}

TEST_F(EnrollCli, CreateDefaultsAndJson) {
    Result r = cli({"--json", "enroll", "token", "create"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    json doc = json::parse(r.out);
    EXPECT_EQ(doc["token"], "abcd1234.SECRETsecretSECRETsecretSECRETsecret12");
    EXPECT_EQ(doc["id"], "abcd1234");
    EXPECT_EQ(doc["uses"], 1);
    EXPECT_EQ(doc["uses_left"], 1);
    EXPECT_EQ(doc["state"], "active");
    EXPECT_EQ(doc["expires_at"], "2025-12-01T01:00:00Z");
    std::lock_guard<std::mutex> lock(service_.mu);
    EXPECT_EQ(service_.create.ttl_seconds(), 86400u);
}

TEST_F(EnrollCli, CreateUsageErrorsNeverCallTheManager) {
    for (const auto& [args, message] :
         std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--ttl", "soon"},
              "picketctl: enroll token create: --ttl 'soon': expected a duration of 1s to 365d "
              "(90s, 30m, 6h, 7d)\n"},
             {{"--ttl", "0"},
              "picketctl: enroll token create: --ttl '0': expected a duration of 1s to 365d "
              "(90s, 30m, 6h, 7d)\n"},
             {{"--labels", "site"},
              "picketctl: enroll token create: --labels: 'site': expected KEY=VALUE\n"},
             {{"--labels", "a=1,a=2"},
              "picketctl: enroll token create: --labels: 'a' given twice\n"}}) {
        std::vector<std::string> argv{"enroll", "token", "create"};
        argv.insert(argv.end(), args.begin(), args.end());
        Result r = cli(argv);
        EXPECT_EQ(r.code, kExitUsage) << args[1];
        EXPECT_EQ(r.err, message);
        EXPECT_EQ(r.out, "");
    }
    std::lock_guard<std::mutex> lock(service_.mu);
    EXPECT_EQ(service_.create.uses(), 0u);  // never called
}

TEST_F(EnrollCli, ListTableHasNoSecrets) {
    Result r = cli({"enroll", "token", "list"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out,
              "ID        STATE    USED  EXPIRES               LABELS    NAME PATTERN\n"
              "abcd1234  used_up  2/2   2025-12-01T01:00:00Z  site=lab  -\n"
              "zz99zz99  active   1/5   2025-12-01T01:00:00Z  site=lab  edge-[0-9]+\n");
    Result j = cli({"--json", "enroll", "token", "list"});
    json doc = json::parse(j.out);
    ASSERT_EQ(doc["tokens"].size(), 2u);
    EXPECT_EQ(doc["tokens"][1]["uses_left"], 4);
    EXPECT_FALSE(doc["tokens"][0].contains("token"));
}

TEST_F(EnrollCli, RevokeAndReadmit) {
    Result r = cli({"enroll", "token", "revoke", "abcd1234"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out, "revoked bootstrap token abcd1234 (1 of 2 uses spent)\n");
    r = cli({"enroll", "token", "revoke", "zzzzzz"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err,
              "picketctl: enroll token revoke: NOT_FOUND: bootstrap token 'zzzzzz' unknown\n");
    r = cli({"enroll", "token", "revoke", "BAD"});
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_EQ(r.err,
              "picketctl: enroll token revoke: bootstrap token id must be 6-16 "
              "characters of [a-z0-9]\n");
    r = cli({"sensor", "readmit", "edge-a"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out,
              "readmitted sensor edge-a: it may enroll again (its revoked certificates stay "
              "refused)\n");
    r = cli({"sensor", "readmit", "fine"});
    EXPECT_EQ(r.out, "sensor fine was not revoked\n");
    r = cli({"--json", "sensor", "readmit", "edge-a"});
    EXPECT_EQ(json::parse(r.out), (json{{"name", "edge-a"}, {"readmitted_now", true}}));
}

}  // namespace
}  // namespace picket::manager::cli
