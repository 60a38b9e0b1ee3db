// picketctl end to end: argument parsing and exit codes, and the client against an in-test fake
// FleetAdmin server on 127.0.0.1:0 (insecure, and once over TLS with certificates from pki).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "common/pki/pki.h"
#include "manager/cli/picketctl.h"

namespace picket::manager::cli {
namespace {

namespace fs = std::filesystem;
namespace v1 = picket::v1;
using nlohmann::json;

struct Result {
    int code = -1;
    std::string out;
    std::string err;
};

Result picketctl(std::vector<std::string> args) {
    args.insert(args.begin(), "picketctl");
    std::vector<const char*> argv;
    for (const std::string& a : args) {
        argv.push_back(a.c_str());
    }
    std::ostringstream out;
    std::ostringstream err;
    Result r;
    r.code = run(static_cast<int>(argv.size()), argv.data(), out, err);
    r.out = out.str();
    r.err = err.str();
    return r;
}

fs::path temp_root() {
    return fs::temp_directory_path() / ("picketctl_test_" + std::to_string(getpid()));
}

// Removes every directory temp_dir() made when the test program ends.
class TempCleanup : public ::testing::Environment {
public:
    void TearDown() override { fs::remove_all(temp_root()); }
};
const auto* const kTempCleanup = ::testing::AddGlobalTestEnvironment(new TempCleanup);

// A fresh empty directory per call, named `tag` (bundle push uses it as the bundle name).
fs::path temp_dir(const std::string& tag) {
    static int counter = 0;
    fs::path p = temp_root() / std::to_string(counter++) / tag;
    fs::remove_all(p);
    fs::create_directories(p);
    return p;
}

void write_file(const fs::path& p, const std::string& content) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
}

v1::DeploymentTarget target(const std::string& sensor, v1::TargetState state,
                            const std::string& error = "") {
    v1::DeploymentTarget t;
    t.set_sensor(sensor);
    t.set_state(state);
    t.set_version(7);
    t.set_error(error);
    return t;
}

v1::Deployment deployment(v1::DeploymentState state, std::vector<v1::DeploymentTarget> targets) {
    v1::Deployment d;
    d.set_id("12");
    d.set_kind(v1::DEPLOYMENT_KIND_DEPLOY);
    d.set_version(7);
    d.set_selector("all");
    d.set_state(state);
    for (auto& t : targets) {
        *d.add_targets() = t;
    }
    return d;
}

// Answers the RPCs the tests call from canned values and records the requests.
class FakeAdmin final : public v1::FleetAdmin::Service {
public:
    grpc::Status ListSensors(grpc::ServerContext* ctx, const v1::ListSensorsRequest* req,
                             v1::ListSensorsResponse* resp) override {
        std::lock_guard lock(mu_);
        record_auth(ctx);
        last_selector = req->selector();
        *resp = sensors;
        return grpc::Status::OK;
    }
    grpc::Status PushBundle(grpc::ServerContext* ctx, const v1::PushBundleRequest* req,
                            v1::PushBundleResponse* resp) override {
        std::lock_guard lock(mu_);
        record_auth(ctx);
        last_push = *req;
        resp->set_version(42);
        resp->set_sha256("feedfacefeedface");
        return grpc::Status::OK;
    }
    grpc::Status Deploy(grpc::ServerContext* ctx, const v1::DeployRequest* req,
                        v1::DeployResponse* resp) override {
        std::lock_guard lock(mu_);
        record_auth(ctx);
        last_deploy = *req;
        if (!deploy_error.ok()) {
            return deploy_error;
        }
        *resp->mutable_deployment() = created;
        return grpc::Status::OK;
    }
    grpc::Status Rollback(grpc::ServerContext* ctx, const v1::RollbackRequest* req,
                          v1::RollbackResponse* resp) override {
        std::lock_guard lock(mu_);
        record_auth(ctx);
        last_rollback = *req;
        *resp->mutable_deployment() = created;
        return grpc::Status::OK;
    }
    // Successive answers from `polls`; the last one repeats.
    grpc::Status GetDeployment(grpc::ServerContext* ctx, const v1::GetDeploymentRequest* req,
                               v1::GetDeploymentResponse* resp) override {
        std::lock_guard lock(mu_);
        record_auth(ctx);
        if (req->id() != created.id()) {
            return grpc::Status(grpc::StatusCode::NOT_FOUND,
                                "deployment " + req->id() + " not found");
        }
        size_t i = std::min(poll_count, polls.size() - 1);
        ++poll_count;
        *resp->mutable_deployment() = polls[i];
        return grpc::Status::OK;
    }

    grpc::Status ListAlerts(grpc::ServerContext* ctx, const v1::ListAlertsRequest* req,
                            v1::ListAlertsResponse* resp) override {
        std::lock_guard lock(mu_);
        record_auth(ctx);
        last_alerts = *req;
        if (!alerts_error.ok()) {
            return alerts_error;
        }
        *resp = alerts;
        return grpc::Status::OK;
    }

    // The fields below are set before the client runs and read after it returned; the RPC
    // in between goes through gRPC's own (uninstrumented) threads and sockets, which give the
    // test thread no happens-before edge that ThreadSanitizer can see. sync() takes the
    // handlers' mutex once, before and after each client run, to give it one.
    void sync() { std::lock_guard lock(mu_); }

    v1::ListSensorsResponse sensors;
    v1::ListAlertsResponse alerts;
    grpc::Status alerts_error = grpc::Status::OK;
    v1::Deployment created;
    std::vector<v1::Deployment> polls;
    grpc::Status deploy_error = grpc::Status::OK;

    std::string last_selector;
    v1::PushBundleRequest last_push;
    v1::DeployRequest last_deploy;
    v1::RollbackRequest last_rollback;
    v1::ListAlertsRequest last_alerts;
    std::vector<std::string> authorization;
    size_t poll_count = 0;

private:
    void record_auth(grpc::ServerContext* ctx) {
        auto it = ctx->client_metadata().find("authorization");
        authorization.push_back(it == ctx->client_metadata().end()
                                    ? "<none>"
                                    : std::string(it->second.data(), it->second.size()));
    }
    std::mutex mu_;
};

class FakeServer {
public:
    explicit FakeServer(FakeAdmin& service, std::shared_ptr<grpc::ServerCredentials> creds =
                                                grpc::InsecureServerCredentials()) {
        grpc::ServerBuilder builder;
        builder.AddListeningPort("127.0.0.1:0", creds, &port_);
        builder.RegisterService(&service);
        server_ = builder.BuildAndStart();
    }
    ~FakeServer() { server_->Shutdown(); }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    int port() const { return port_; }

private:
    int port_ = 0;
    std::unique_ptr<grpc::Server> server_;
};

class ClientTest : public ::testing::Test {
protected:
    ClientTest() : server_(fake_) {}

    // --manager ADDR --insecure --token tok, then args.
    Result cli(std::vector<std::string> args) {
        std::vector<std::string> all = {"--manager", server_.address(), "--insecure", "--token",
                                        "tok"};
        all.insert(all.end(), args.begin(), args.end());
        fake_.sync();
        Result r = picketctl(all);
        fake_.sync();
        return r;
    }

    FakeAdmin fake_;
    FakeServer server_;
};

// ---------------------------------------------------------------------------------------
// Usage errors: exit 2 with a message naming the problem, before any connection.

struct UsageCase {
    std::vector<std::string> args;
    std::string message;  // expected substring of stderr
};

class UsageTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(UsageTest, ExitsTwoWithMessage) {
    Result r = picketctl(GetParam().args);
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

const char* const kLocal[] = {"--manager", "127.0.0.1:1", "--insecure"};

std::vector<std::string> local(std::vector<std::string> args) {
    args.insert(args.begin(), std::begin(kLocal), std::end(kLocal));
    return args;
}

INSTANTIATE_TEST_SUITE_P(
    Commands, UsageTest,
    ::testing::Values(
        UsageCase{{}, "picketctl: no command given"},
        UsageCase{{"frobnicate"}, "not expected: frobnicate"},
        UsageCase{{"--json"}, "picketctl: no command given"},
        UsageCase{{"bundle"}, "A subcommand is required"},
        UsageCase{{"sensor"}, "A subcommand is required"},
        UsageCase{{"deployment"}, "A subcommand is required"},
        UsageCase{{"pki"}, "A subcommand is required"}, UsageCase{{"sensors", "extra"}, "extra"},
        UsageCase{{"sensors", "--selector", "label=site"}, "must be label=KEY=VALUE"},
        UsageCase{{"sensor", "show"}, "NAME is required"},
        UsageCase{local({"sensor", "show", "bad name"}), "invalid sensor name"},
        UsageCase{{"bundle", "push"}, "DIR is required"},
        UsageCase{{"bundle", "push", "/nonexistent/picket/dir"}, "Directory does not exist"},
        UsageCase{{"bundle", "list", "--limit", "0"}, "--limit"},
        UsageCase{{"bundle", "show"}, "V is required"},
        UsageCase{{"bundle", "show", "abc"}, "expected a positive integer, got 'abc'"},
        UsageCase{{"bundle", "show", "0"}, "expected a positive integer, got '0'"},
        UsageCase{{"bundle", "diff", "1"}, "V2 is required"},
        UsageCase{{"deploy", "3"}, "--to is required"},
        UsageCase{{"deploy", "--to", "all"}, "V is required"},
        UsageCase{{"deploy", "0", "--to", "all"}, "expected a positive integer"},
        UsageCase{{"deploy", "3", "--to", "all", "--canary", "100"}, "--canary"},
        UsageCase{{"deploy", "3", "--to", "all", "--soak", "60"}, "--canary"},
        UsageCase{{"deploy", "3", "--to", "all", "--timeout", "0"}, "--timeout"},
        UsageCase{local({"deploy", "3", "--to", "a,,b"}), "empty term between commas"},
        UsageCase{local({"deploy", "3", "--to", "all,s1"}), "'all' cannot be combined"},
        UsageCase{{"rollback"}, "--to is required"},
        UsageCase{{"rollback", "--to", "all", "--version", "x"}, "expected a positive integer"},
        UsageCase{local({"rollback", "--to", "label=site"}), "must be label=KEY=VALUE"},
        UsageCase{local({"history", "--sensor", "no/slash"}), "invalid sensor name"},
        UsageCase{local({"alerts", "--sensor", "no/slash"}), "invalid sensor name 'no/slash'"},
        UsageCase{{"alerts", "--sid", "0"}, "expected a positive integer, got '0'"},
        UsageCase{{"alerts", "--sid", "x"}, "expected a positive integer, got 'x'"},
        UsageCase{{"alerts", "--limit", "0"}, "--limit"}, UsageCase{{"alerts", "extra"}, "extra"},
        UsageCase{{"deployment", "show", "x7"}, "expected a positive integer, got 'x7'"},
        UsageCase{{"rules"}, "A subcommand is required"},
        UsageCase{{"rules", "source"}, "A subcommand is required"},
        UsageCase{{"rules", "source", "add", "et"}, "LOCATION is required"},
        UsageCase{{"rules", "policy", "put"}, "FILE is required"},
        UsageCase{local({"rules", "policy", "put", "/nonexistent/disable.conf"}),
                  "/nonexistent/disable.conf: cannot read"},
        UsageCase{{"rules", "update", "--to", "all"}, "--deploy"},
        UsageCase{local({"rules", "update", "--deploy"}), "--deploy needs --to SELECTOR"},
        UsageCase{local({"rules", "update", "--deploy", "--to", "label=x"}),
                  "must be label=KEY=VALUE"},
        UsageCase{{"rules", "update", "--deploy", "--to", "all", "--canary", "100"}, "--canary"},
        UsageCase{{"rules", "history", "--limit", "0"}, "--limit"},
        UsageCase{{"pki", "init"}, "DIR is required"},
        UsageCase{{"pki", "issue", "/tmp", "--kind", "root", "--name", "x"}, "root"},
        UsageCase{{"pki", "issue", "/tmp", "--kind", "sensor"}, "--name is required"},
        UsageCase{{"pki", "issue", "/tmp", "--kind", "sensor", "--name", "../x"}, "../x"},
        UsageCase{{"pki", "issue", "/nonexistent/picket/pki", "--kind", "sensor", "--name", "s1"},
                  "Directory does not exist"},
        UsageCase{{"sensors"}, "sensors: --manager ADDR is required"},
        UsageCase{{"--manager", "10.1.2.3:50051", "--insecure", "sensors"},
                  "--insecure refused: manager address '10.1.2.3:50051' is not loopback"},
        UsageCase{
            {"--manager", "manager.example.com:50051", "--insecure", "deploy", "3", "--to", "all"},
            "--insecure refused"},
        UsageCase{{"--manager", "127.0.0.1:1", "sensors"}, "TLS needs --ca"},
        UsageCase{{"--ca", "/nonexistent/ca.crt", "sensors"}, "File does not exist"},
        UsageCase{{"--token", "t", "--token-file", "/etc/hostname", "sensors"}, "excludes"},
        UsageCase{{"--cert", "/etc/hostname", "sensors"}, "--key"}));

TEST(Usage, HelpExitsZero) {
    Result r = picketctl({"--help"});
    EXPECT_EQ(r.code, kExitOk);
    EXPECT_NE(r.out.find("Usage: picketctl"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("deploy"), std::string::npos) << r.out;
}

TEST(Usage, UnreachableManagerIsAnOperationFailure) {
    Result r = picketctl(local({"sensors"}));
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err.rfind("picketctl: sensors: UNAVAILABLE: ", 0), 0u) << r.err;
}

// ---------------------------------------------------------------------------------------
// Against the fake manager.

TEST_F(ClientTest, SensorsJsonAndToken) {
    v1::Sensor* s = fake_.sensors.add_sensors();
    s->set_name("s1");
    s->set_connected(true);
    s->mutable_bundle()->set_version(7);
    (*s->mutable_labels())["site"] = "paris";
    Result r = cli({"sensors", "--json", "--selector", "label=site=paris"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    json doc = json::parse(r.out);
    ASSERT_EQ(doc.size(), 1u);
    EXPECT_EQ(doc[0]["name"], "s1");
    EXPECT_EQ(doc[0]["connected"], true);
    EXPECT_EQ(doc[0]["version"], 7);
    EXPECT_EQ(doc[0]["labels"], (json{{"site", "paris"}}));
    EXPECT_EQ(fake_.last_selector, "label=site=paris");
    EXPECT_EQ(fake_.authorization, std::vector<std::string>{"Bearer tok"});
}

TEST_F(ClientTest, TokenFromFile) {
    fs::path dir = temp_dir("token");
    write_file(dir / "token", "s3cret\n");
    Result r = picketctl({"--manager", server_.address(), "--insecure", "--token-file",
                          (dir / "token").string(), "sensors"});
    fake_.sync();
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out, "NAME  CONNECTED  BUNDLE  MODE  HOST  LABELS  LAST SEEN\n");
    EXPECT_EQ(fake_.authorization, std::vector<std::string>{"Bearer s3cret"});
}

TEST_F(ClientTest, BundlePushPrintsTheVersion) {
    fs::path dir = temp_dir("bundle1");
    write_file(dir / "rules/local.rules", "alert ip any any -> any any (msg:\"x\"; sid:1;)\n");
    Result r = cli({"bundle", "push", dir.string(), "--name", "dmz", "-m", "first", "--json"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    json doc = json::parse(r.out);
    EXPECT_EQ(doc["version"], 42);
    EXPECT_EQ(doc["sha256"], "feedfacefeedface");
    const v1::Manifest& m = fake_.last_push.bundle().manifest();
    EXPECT_EQ(m.name(), "dmz");
    EXPECT_EQ(m.message(), "first");
    EXPECT_EQ(m.version(), 0u);
    ASSERT_EQ(m.files_size(), 1);
    EXPECT_EQ(m.files(0).path(), "rules/local.rules");
    EXPECT_EQ(fake_.last_push.bundle().files(0).content(),
              "alert ip any any -> any any (msg:\"x\"; sid:1;)\n");
}

TEST_F(ClientTest, BundlePushTextDefaultsToTheDirectoryName) {
    fs::path dir = temp_dir("et-open");
    write_file(dir / "rules/a.rules", "alert ip any any -> any any (sid:2;)\n");
    Result r = cli({"bundle", "push", dir.string()});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(r.out, "pushed et-open as version 42 (1 files, sha256 feedfacefeed)\n");
}

TEST_F(ClientTest, BundlePushRefusesAnInvalidBundleLocally) {
    fs::path dir = temp_dir("norules");
    write_file(dir / "config.yaml", "vars: {}\n");
    Result r = cli({"bundle", "push", dir.string()});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err.rfind("picketctl: bundle push: INVALID_ARGUMENT: ", 0), 0u) << r.err;
    EXPECT_EQ(fake_.authorization.size(), 0u);  // never reached the manager
}

TEST_F(ClientTest, DeployWaitAllAppliedExitsZero) {
    fake_.created =
        deployment(v1::DEPLOYMENT_STATE_IN_PROGRESS,
                   {target("s1", v1::TARGET_STATE_SENT), target("s2", v1::TARGET_STATE_PENDING)});
    fake_.polls = {
        deployment(v1::DEPLOYMENT_STATE_IN_PROGRESS,
                   {target("s1", v1::TARGET_STATE_APPLIED), target("s2", v1::TARGET_STATE_SENT)}),
        deployment(v1::DEPLOYMENT_STATE_SUCCEEDED, {target("s1", v1::TARGET_STATE_APPLIED),
                                                    target("s2", v1::TARGET_STATE_APPLIED)})};
    Result r = cli({"deploy", "7", "--to", "s1,s2", "--wait", "--poll-ms", "10"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(fake_.poll_count, 2u);
    EXPECT_EQ(fake_.last_deploy.version(), 7u);
    EXPECT_EQ(fake_.last_deploy.selector(), "s1,s2");
    EXPECT_EQ(fake_.last_deploy.canary_percent(), 0u);
    EXPECT_NE(r.out.find("  s1: sent -> applied\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  s2: pending -> sent\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  s2: sent -> applied\n"), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
}

TEST_F(ClientTest, DeployWaitRejectedExitsOneWithJson) {
    fake_.created =
        deployment(v1::DEPLOYMENT_STATE_IN_PROGRESS,
                   {target("s1", v1::TARGET_STATE_SENT), target("s2", v1::TARGET_STATE_SENT)});
    fake_.polls = {deployment(v1::DEPLOYMENT_STATE_FAILED,
                              {target("s1", v1::TARGET_STATE_APPLIED),
                               target("s2", v1::TARGET_STATE_REJECTED, "rules/a.rules:1: bad")})};
    Result r = cli({"--json", "deploy", "7", "--to", "all", "--canary", "50", "--soak", "30",
                    "--wait", "--poll-ms", "10"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err,
              "picketctl: deploy: deployment 12: 1 of 2 targets not applied (s2 rejected)\n");
    json doc = json::parse(r.out);
    EXPECT_EQ(doc["deployment"], "12");
    ASSERT_EQ(doc["targets"].size(), 2u);
    EXPECT_EQ(doc["targets"][0]["sensor"], "s1");
    EXPECT_EQ(doc["targets"][0]["state"], "applied");
    EXPECT_EQ(doc["targets"][1]["state"], "rejected");
    EXPECT_EQ(doc["targets"][1]["error"], "rules/a.rules:1: bad");
    EXPECT_EQ(fake_.last_deploy.canary_percent(), 50u);
    EXPECT_EQ(fake_.last_deploy.soak_seconds(), 30u);
}

TEST_F(ClientTest, DeployWithoutWaitPrintsTheDeploymentAndExitsZero) {
    fake_.created =
        deployment(v1::DEPLOYMENT_STATE_IN_PROGRESS, {target("s1", v1::TARGET_STATE_PENDING)});
    fake_.polls = {fake_.created};
    Result r = cli({"deploy", "7", "--to", "all", "--json"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    json doc = json::parse(r.out);
    EXPECT_EQ(doc["deployment"], "12");
    EXPECT_EQ(doc["targets"][0]["state"], "pending");
    EXPECT_EQ(fake_.poll_count, 0u);
}

TEST_F(ClientTest, DeployWaitTimesOut) {
    fake_.created =
        deployment(v1::DEPLOYMENT_STATE_IN_PROGRESS, {target("s1", v1::TARGET_STATE_SENT)});
    fake_.polls = {fake_.created};
    Result r = cli({"deploy", "7", "--to", "all", "--wait", "--timeout", "1", "--poll-ms", "50"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err,
              "picketctl: deploy: DEADLINE_EXCEEDED: deployment 12 not finished after 1 s (0 of 1 "
              "targets final)\n");
}

TEST_F(ClientTest, DeployErrorMapsToExitOneWithStatusText) {
    fake_.deploy_error = grpc::Status(grpc::StatusCode::NOT_FOUND, "bundle version 7 not found");
    Result r = cli({"deploy", "7", "--to", "all", "--wait"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err, "picketctl: deploy: NOT_FOUND: bundle version 7 not found\n");
    EXPECT_EQ(r.out, "");
}

TEST_F(ClientTest, RollbackWithAndWithoutVersion) {
    fake_.created =
        deployment(v1::DEPLOYMENT_STATE_SUCCEEDED, {target("s1", v1::TARGET_STATE_APPLIED)});
    fake_.created.set_kind(v1::DEPLOYMENT_KIND_ROLLBACK);
    fake_.polls = {fake_.created};
    Result with = cli({"rollback", "--to", "label=site=paris", "--version", "3", "--json"});
    ASSERT_EQ(with.code, kExitOk) << with.err;
    EXPECT_EQ(fake_.last_rollback.selector(), "label=site=paris");
    EXPECT_TRUE(fake_.last_rollback.has_version());
    EXPECT_EQ(fake_.last_rollback.version(), 3u);
    json doc = json::parse(with.out);
    EXPECT_EQ(doc["deployment"], "12");
    EXPECT_EQ(doc["kind"], "rollback");
    EXPECT_EQ(doc["targets"][0]["state"], "applied");

    Result without = cli({"rollback", "--to", "s1", "--wait"});
    ASSERT_EQ(without.code, kExitOk) << without.err;
    EXPECT_FALSE(fake_.last_rollback.has_version());
}

TEST_F(ClientTest, DeploymentShowUnknownIsNotFound) {
    fake_.created = deployment(v1::DEPLOYMENT_STATE_SUCCEEDED, {});
    fake_.polls = {fake_.created};
    Result r = cli({"deployment", "show", "99"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err, "picketctl: deployment show: NOT_FOUND: deployment 99 not found\n");
}

// 2026-11-29T23:56:05Z
constexpr int64_t kT0 = 1795996565LL * 1000000000LL;

TEST_F(ClientTest, AlertsSendsTheFiltersAndPrintsJson) {
    v1::AlertEntry* e = fake_.alerts.add_alerts();
    e->set_sensor("s1");
    v1::Alert* a = e->mutable_alert();
    a->set_timestamp(kT0 + 5);
    a->set_gid(1);
    a->set_sid(2100498);
    a->set_rev(7);
    a->set_msg("GPL ATTACK_RESPONSE id check returned root");
    a->set_src_ip("10.0.0.5");
    a->set_src_port(80);
    a->set_dst_ip("192.168.1.20");
    a->set_dst_port(51544);
    a->set_proto("TCP");
    a->set_action(v1::ALERT_ACTION_ALLOWED);
    a->set_severity(2);
    a->set_bundle_version(42);
    fake_.alerts.set_total_received(1234);
    fake_.alerts.set_dropped_by_sensors(5);
    Result r = cli({"alerts", "--sensor", "s1", "--sid", "2100498", "--limit", "3", "--json"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(fake_.last_alerts.sensor(), "s1");
    EXPECT_EQ(fake_.last_alerts.sid(), 2100498u);
    EXPECT_EQ(fake_.last_alerts.limit(), 3u);
    EXPECT_EQ(fake_.authorization, std::vector<std::string>{"Bearer tok"});
    EXPECT_EQ(json::parse(r.out), (json{{"alerts",
                                         {{{"sensor", "s1"},
                                           {"time", "2026-11-29T23:56:05Z"},
                                           {"timestamp", kT0 + 5},
                                           {"gid", 1},
                                           {"sid", 2100498},
                                           {"rev", 7},
                                           {"msg", "GPL ATTACK_RESPONSE id check returned root"},
                                           {"src_ip", "10.0.0.5"},
                                           {"src_port", 80},
                                           {"dst_ip", "192.168.1.20"},
                                           {"dst_port", 51544},
                                           {"proto", "TCP"},
                                           {"action", "allowed"},
                                           {"severity", 2},
                                           {"bundle_version", 42}}}},
                                        {"total_received", 1234},
                                        {"dropped_by_sensors", 5}}));
    EXPECT_EQ(r.err, "");
}

TEST_F(ClientTest, AlertsWithoutFiltersPrintsTheTable) {
    Result r = cli({"alerts"});
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(fake_.last_alerts.sensor(), "");
    EXPECT_EQ(fake_.last_alerts.sid(), 0u);
    EXPECT_EQ(fake_.last_alerts.limit(), 0u);
    EXPECT_EQ(r.out,
              "TIME  SENSOR  SID:REV  ACTION  PROTO  SRC -> DST  MSG\n"
              "\n"
              "0 shown; 0 received since the manager started, 0 dropped by sensors\n");
}

TEST_F(ClientTest, AlertsErrorExitsOne) {
    fake_.alerts_error = grpc::Status(grpc::StatusCode::NOT_FOUND, "sensor 's9' not found");
    Result r = cli({"alerts", "--sensor", "s9"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err, "picketctl: alerts: NOT_FOUND: sensor 's9' not found\n");
    EXPECT_EQ(r.out, "");
}

TEST_F(ClientTest, UnimplementedRpcIsAnOperationFailure) {
    Result r = cli({"bundle", "list"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err.rfind("picketctl: bundle list: UNIMPLEMENTED", 0), 0u) << r.err;
}

// ---------------------------------------------------------------------------------------
// pki, and TLS with its certificates.

TEST(Pki, InitAndIssueCreateTheFiles) {
    fs::path dir = temp_dir("pki");
    Result init = picketctl({"pki", "init", dir.string(), "--cn", "Test CA"});
    ASSERT_EQ(init.code, kExitOk) << init.err;
    EXPECT_TRUE(fs::exists(dir / "ca.crt"));
    EXPECT_TRUE(fs::exists(dir / "ca.key"));
    Result issue = picketctl({"--json", "pki", "issue", dir.string(), "--kind", "sensor", "--name",
                              "s1", "--san", "10.0.0.5"});
    ASSERT_EQ(issue.code, kExitOk) << issue.err;
    json doc = json::parse(issue.out);
    EXPECT_EQ(doc["cert"], (dir / "s1.crt").string());
    EXPECT_EQ(doc["key"], (dir / "s1.key").string());
    EXPECT_TRUE(fs::exists(dir / "s1.crt"));
    EXPECT_TRUE(fs::exists(dir / "s1.key"));
    Result again = picketctl({"pki", "issue", dir.string(), "--kind", "sensor", "--name", "s1"});
    EXPECT_EQ(again.code, kExitFailed);
    EXPECT_EQ(again.err.rfind("picketctl: pki issue: ALREADY_EXISTS: ", 0), 0u) << again.err;
    Result reinit = picketctl({"pki", "init", dir.string()});
    EXPECT_EQ(reinit.code, kExitFailed);
}

TEST(Pki, IssueWithoutCaFails) {
    fs::path dir = temp_dir("noca");
    Result r = picketctl({"pki", "issue", dir.string(), "--kind", "admin", "--name", "ops"});
    EXPECT_EQ(r.code, kExitFailed);
    EXPECT_EQ(r.err.rfind("picketctl: pki issue: ", 0), 0u) << r.err;
}

TEST(Tls, MutualTlsWithPkiCertificates) {
    fs::path dir = temp_dir("tls");
    ASSERT_EQ(picketctl({"pki", "init", dir.string()}).code, kExitOk);
    ASSERT_EQ(picketctl({"pki", "issue", dir.string(), "--kind", "manager", "--name", "manager",
                         "--san", "127.0.0.1"})
                  .code,
              kExitOk);
    ASSERT_EQ(picketctl({"pki", "issue", dir.string(), "--kind", "admin", "--name", "ops"}).code,
              kExitOk);
    absl::StatusOr<pki::TlsCredentials> server_creds =
        pki::load_credentials(dir / "manager.crt", dir / "manager.key", dir / "ca.crt");
    ASSERT_TRUE(server_creds.ok()) << server_creds.status();
    grpc::SslServerCredentialsOptions opts(
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    opts.pem_root_certs = server_creds->ca_pem;
    opts.pem_key_cert_pairs.push_back({server_creds->key_pem, server_creds->cert_pem});
    FakeAdmin fake;
    fake.sensors.add_sensors()->set_name("s9");
    FakeServer server(fake, grpc::SslServerCredentials(opts));

    fake.sync();  // see FakeAdmin::sync()
    Result r = picketctl({"--manager", server.address(), "--ca", (dir / "ca.crt").string(),
                          "--cert", (dir / "ops.crt").string(), "--key", (dir / "ops.key").string(),
                          "--token", "tok", "--json", "sensors"});
    fake.sync();
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(json::parse(r.out)[0]["name"], "s9");
    EXPECT_EQ(fake.authorization, std::vector<std::string>{"Bearer tok"});

    // Without a client certificate the server refuses the handshake.
    Result anon =
        picketctl({"--manager", server.address(), "--ca", (dir / "ca.crt").string(), "sensors"});
    fake.sync();
    EXPECT_EQ(anon.code, kExitFailed);
    EXPECT_EQ(anon.err.rfind("picketctl: sensors: UNAVAILABLE: ", 0), 0u) << anon.err;
}

}  // namespace
}  // namespace picket::manager::cli
