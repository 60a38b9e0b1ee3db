// picketctl sensor revoke: the request it sends, its text and JSON output, exit codes, and how
// `picketctl sensors` shows a revoked sensor. Against an in-test FleetAdmin on 127.0.0.1:0.
#include <gtest/gtest.h>

#include <mutex>
#include <sstream>

#include "manager/cli/picketctl.h"

namespace picket::manager::cli {
namespace {

namespace v1 = picket::v1;
using nlohmann::json;

constexpr int64_t kT0 = 1'764'547'200'000'000'000;  // 2025-12-01T00:00:00Z

class RevokeOnly final : public v1::FleetAdmin::Service {
public:
    grpc::Status RevokeSensor(grpc::ServerContext* ctx, const v1::RevokeSensorRequest* req,
                              v1::RevokeSensorResponse* resp) override {
        std::lock_guard<std::mutex> lock(mu);
        names.push_back(req->name());
        auto it = ctx->client_metadata().find("authorization");
        auth = it == ctx->client_metadata().end()
                   ? ""
                   : std::string(it->second.data(), it->second.size());
        if (req->name() == "nobody") {
            return grpc::Status(grpc::StatusCode::NOT_FOUND, "sensor 'nobody' not found");
        }
        resp->mutable_sensor()->set_name(req->name());
        resp->mutable_sensor()->set_revoked(true);
        resp->mutable_sensor()->set_revoked_at(kT0);
        resp->set_revoked_now(req->name() != "again");
        resp->set_disconnected(req->name() == "edge-1");
        return grpc::Status::OK;
    }
    std::mutex mu;
    std::vector<std::string> names;
    std::string auth;
};

struct Result {
    int code = -1;
    std::string out;
    std::string err;
};

class RevokeCli : public ::testing::Test {
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
        std::vector<std::string> all = {
            "picketctl",  "--manager", "127.0.0.1:" + std::to_string(port_),
            "--insecure", "--token",   "tok"};
        all.insert(all.end(), args.begin(), args.end());
        std::vector<const char*> argv;
        for (const std::string& a : all) {
            argv.push_back(a.c_str());
        }
        std::ostringstream out, err;
        Result r;
        // The handler's mutex, taken before and after the run, orders the test thread's reads
        // of names/auth after the handler's writes for ThreadSanitizer (the RPC itself goes
        // through gRPC's uninstrumented threads).
        { std::lock_guard<std::mutex> fence(service_.mu); }
        r.code = run(static_cast<int>(argv.size()), argv.data(), out, err);
        { std::lock_guard<std::mutex> fence(service_.mu); }
        r.out = out.str();
        r.err = err.str();
        return r;
    }
    RevokeOnly service_;
    int port_ = 0;
    std::unique_ptr<grpc::Server> server_;
};

TEST_F(RevokeCli, RevokesAndSaysHowToComeBack) {
    Result r = cli({"sensor", "revoke", "edge-1"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out,
              "revoked sensor edge-1 (its stream was closed); re-enroll it with: picket-manager "
              "--db DB --enroll edge-1\n");
    EXPECT_EQ(service_.names, (std::vector<std::string>{"edge-1"}));
    EXPECT_EQ(service_.auth, "Bearer tok");
}

TEST_F(RevokeCli, JsonAndAlreadyRevoked) {
    Result r = cli({"--json", "sensor", "revoke", "again"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out), (json{{"name", "again"},
                                        {"revoked_now", false},
                                        {"disconnected", false},
                                        {"revoked_at", "2025-12-01T00:00:00Z"}}));
    r = cli({"sensor", "revoke", "again"});
    EXPECT_EQ(r.out, "sensor again was already revoked (at 2025-12-01T00:00:00Z)\n");
}

TEST_F(RevokeCli, UnknownSensorExitsOneAndBadNameTwo) {
    Result r = cli({"sensor", "revoke", "nobody"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("NOT_FOUND: sensor 'nobody' not found"), std::string::npos) << r.err;
    r = cli({"sensor", "revoke", "bad/name"});
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(service_.names, (std::vector<std::string>{"nobody"}));  // never sent
}

TEST(RevokeFormat, SensorsTableAndJsonShowRevoked) {
    v1::ListSensorsResponse resp;
    v1::Sensor* s = resp.add_sensors();
    s->set_name("edge-1");
    s->set_revoked(true);
    s->set_revoked_at(kT0);
    EXPECT_EQ(sensors_text(resp),
              "NAME    CONNECTED  BUNDLE  MODE  HOST  LABELS  LAST SEEN\n"
              "edge-1  revoked    -       ids   -     -       -\n");
    json doc = sensors_json(resp);
    EXPECT_EQ(doc[0]["revoked"], true);
    EXPECT_EQ(doc[0]["revoked_at"], "2025-12-01T00:00:00Z");
    EXPECT_EQ(doc[0]["connected"], false);
    v1::GetSensorResponse one;
    *one.mutable_sensor() = *s;
    EXPECT_NE(sensor_text(one).find("revoked:         2025-12-01T00:00:00Z\n"), std::string::npos)
        << sensor_text(one);
}

}  // namespace
}  // namespace picket::manager::cli
