// FleetAdmin's rules RPCs on a real manager: sources, policy files, the update (new version,
// no change, failure), its history and its metrics, and --deploy.
#include <fstream>

#include "common/metrics/metrics.h"
#include "tests/manager/service/service_fixture.h"

namespace picket::manager::service {
namespace {

namespace pb = picket::v1;
using namespace std::chrono_literals;
using testing::FakeSensor;
using testing::wait_for;

std::string rule(uint32_t sid, uint32_t rev) {
    return "alert tcp any any -> any 80 (msg:\"r" + std::to_string(sid) +
           "\"; content:\"x\"; sid:" + std::to_string(sid) + "; rev:" + std::to_string(rev) +
           ";)\n";
}

pb::Hello hello(const std::string& name) {
    pb::Hello h;
    h.set_sensor_name(name);
    h.set_host("host-" + name);
    h.set_version("0.1.0");
    h.set_capture_mode(pb::CAPTURE_MODE_PCAP_FILE);
    h.set_workers(1);
    return h;
}

class RulesManager : public testing::ManagerTest {
protected:
    RulesManager() : ManagerTest("picket-rules-service-") {}
    void SetUp() override {
        ManagerOptions o;
        o.listen = "127.0.0.1:0";
        o.insecure = true;
        o.rollout_poll = 50ms;
        ASSERT_NO_FATAL_FAILURE(start(o, &registry_));
        stub_ = pb::FleetAdmin::NewStub(grpc::CreateChannel(
            "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
        src_ = dir_.file("upstream");
        std::filesystem::create_directories(src_);
        write("emerging-scan.rules", rule(1, 1) + rule(2, 1) + "# " + rule(3, 1));
        write("emerging-info.rules", rule(4, 1));
    }
    void write(const std::string& name, const std::string& text) {
        std::ofstream(src_ + "/" + name) << text;
    }
    template <typename Req, typename Resp, typename Method>
    grpc::Status call(Method method, const Req& req, Resp* resp) {
        grpc::ClientContext ctx;
        return ((*stub_).*method)(&ctx, req, resp);
    }
    grpc::Status add_source(const std::string& name, const std::string& location) {
        pb::AddRuleSourceRequest req;
        req.mutable_source()->set_name(name);
        req.mutable_source()->set_location(location);
        pb::AddRuleSourceResponse resp;
        return call(&pb::FleetAdmin::Stub::AddRuleSource, req, &resp);
    }
    grpc::Status update(pb::UpdateRulesResponse* resp, pb::UpdateRulesRequest req = {}) {
        return call(&pb::FleetAdmin::Stub::UpdateRules, req, resp);
    }
    std::vector<pb::RuleUpdate> history() {
        pb::RuleUpdateHistoryResponse resp;
        EXPECT_TRUE(
            call(&pb::FleetAdmin::Stub::RuleUpdateHistory, pb::RuleUpdateHistoryRequest(), &resp)
                .ok());
        return {resp.updates().begin(), resp.updates().end()};
    }

    picket::metrics::Registry registry_;
    std::unique_ptr<pb::FleetAdmin::Stub> stub_;
    std::string src_;
};

TEST_F(RulesManager, UpdateStoresThenSeesNoChangeThenTheNewRules) {
    ASSERT_TRUE(add_source("et", src_).ok());
    pb::UpdateRulesResponse r1;
    grpc::Status st = update(&r1);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(r1.version(), 1u);
    EXPECT_EQ(r1.rules(), 4u);
    EXPECT_EQ(r1.rules_enabled(), 3u);
    ASSERT_EQ(r1.sources_size(), 1);
    EXPECT_EQ(r1.sources(0).files(), 2u);
    EXPECT_FALSE(r1.sources(0).not_modified());

    pb::UpdateRulesResponse r2;
    ASSERT_TRUE(update(&r2).ok());
    EXPECT_EQ(r2.version(), 0u);
    EXPECT_TRUE(r2.sources(0).not_modified());
    EXPECT_EQ(r2.message().rfind("no change: version 1 already holds et@", 0), 0u) << r2.message();

    write("emerging-info.rules", rule(4, 2) + rule(5, 1));
    pb::UpdateRulesResponse r3;
    ASSERT_TRUE(update(&r3).ok());
    EXPECT_EQ(r3.version(), 2u);
    ASSERT_EQ(r3.diff().rules_added_size(), 1);
    EXPECT_EQ(r3.diff().rules_added(0).sid(), 5u);
    ASSERT_EQ(r3.diff().rules_changed_size(), 1);
    EXPECT_EQ(r3.diff().rules_changed(0).sid(), 4u);
    EXPECT_EQ(r3.diff().to_version(), 2u);

    auto h = history();
    ASSERT_EQ(h.size(), 3u);
    EXPECT_EQ(h[0].result(), "new_version");
    EXPECT_EQ(h[0].version(), 2u);
    EXPECT_EQ(h[1].result(), "unchanged");
    EXPECT_EQ(h[2].trigger(), "picketctl");

    pb::ListRuleSourcesResponse sources;
    ASSERT_TRUE(
        call(&pb::FleetAdmin::Stub::ListRuleSources, pb::ListRuleSourcesRequest(), &sources).ok());
    ASSERT_EQ(sources.sources_size(), 1);
    EXPECT_EQ(sources.sources(0).rules(), 5u);
    EXPECT_EQ(sources.sources(0).sha256(), r3.sources(0).sha256());
    // The fetched bytes are kept by content address beside the database.
    const std::string& sha = r3.sources(0).sha256();
    EXPECT_TRUE(std::filesystem::exists(dir_.file("rule-sources/" + sha.substr(0, 2) + "/" + sha)));

    std::string text = registry_.render();
    EXPECT_NE(text.find("picket_rules_updates_total{result=\"new_version\"} 2"), std::string::npos);
    EXPECT_NE(text.find("picket_rules_updates_total{result=\"unchanged\"} 1"), std::string::npos);
    EXPECT_NE(text.find("picket_rules_source_rules{source=\"et\"} 5"), std::string::npos);
    EXPECT_NE(text.find("picket_rules_source_fetch_failing{source=\"et\"} 0"), std::string::npos);
}

// #25: ListRuleSources pages forward by name.
TEST_F(RulesManager, ListRuleSourcesPagesByName) {
    for (const char* n : {"c", "a", "b"}) {
        ASSERT_TRUE(add_source(n, src_).ok()) << n;
    }
    pb::ListRuleSourcesRequest req;
    req.set_page_size(2);
    pb::ListRuleSourcesResponse page;
    ASSERT_TRUE(call(&pb::FleetAdmin::Stub::ListRuleSources, req, &page).ok());
    ASSERT_EQ(page.sources_size(), 2);
    EXPECT_EQ(page.sources(0).name(), "a");
    EXPECT_EQ(page.sources(1).name(), "b");
    EXPECT_EQ(page.next_page_token(), "s:b");
    req.set_page_token(page.next_page_token());
    ASSERT_TRUE(call(&pb::FleetAdmin::Stub::ListRuleSources, req, &page).ok());
    ASSERT_EQ(page.sources_size(), 1);
    EXPECT_EQ(page.sources(0).name(), "c");
    EXPECT_EQ(page.next_page_token(), "");
    req.set_page_token("s:a b");
    grpc::Status st = call(&pb::FleetAdmin::Stub::ListRuleSources, req, &page);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message(), "page_token 's:a b' is not one this manager issued");
}

TEST_F(RulesManager, PolicyIsCheckedWholeAndApplied) {
    ASSERT_TRUE(add_source("et", src_).ok());
    pb::PutRulePolicyRequest bad;
    auto* f1 = bad.add_files();
    f1->set_name("disable.conf");
    f1->set_content("1\n");
    auto* f2 = bad.add_files();
    f2->set_name("drop.conf");
    f2->set_content("re:(\n");
    pb::PutRulePolicyResponse put;
    grpc::Status st = call(&pb::FleetAdmin::Stub::PutRulePolicy, bad, &put);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(st.error_message().rfind("drop.conf:1: ", 0), 0u) << st.error_message();
    pb::GetRulePolicyResponse stored;
    ASSERT_TRUE(
        call(&pb::FleetAdmin::Stub::GetRulePolicy, pb::GetRulePolicyRequest(), &stored).ok());
    EXPECT_EQ(stored.files_size(), 0);  // all or nothing

    f2->set_content("2\n");
    ASSERT_TRUE(call(&pb::FleetAdmin::Stub::PutRulePolicy, bad, &put).ok());
    pb::UpdateRulesResponse r;
    ASSERT_TRUE(update(&r).ok());
    EXPECT_EQ(r.policy_disabled(), 1u);
    EXPECT_EQ(r.policy_dropped(), 1u);
    EXPECT_EQ(r.rules_enabled(), 2u);
}

TEST_F(RulesManager, AFailedSourceStoresNothingAndIsRecorded) {
    ASSERT_TRUE(add_source("et", src_).ok());
    pb::UpdateRulesResponse ok;
    ASSERT_TRUE(update(&ok).ok());
    ASSERT_TRUE(add_source("gone", dir_.file("nowhere")).ok());
    pb::UpdateRulesResponse r;
    grpc::Status st = update(&r);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(st.error_message().rfind("source gone: ", 0), 0u) << st.error_message();
    EXPECT_EQ(store_->latest_version().value(), 1);
    auto h = history();
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[0].result(), "failed");
    EXPECT_EQ(h[0].message(), st.error_message());
    EXPECT_NE(registry_.render().find("picket_rules_source_fetch_failing{source=\"gone\"} 1"),
              std::string::npos);

    // --source of an unknown name, a disabled source, a bad spec.
    pb::UpdateRulesRequest only;
    only.add_sources("nosuch");
    EXPECT_EQ(update(&r, only).error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(add_source("et", src_).error_code(), grpc::StatusCode::ALREADY_EXISTS);
    EXPECT_EQ(add_source("bad name", src_).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(add_source("ftp", "ftp://example.invalid/x.tar.gz").error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(RulesManager, DeployTheNewVersion) {
    FakeSensor s1(grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                      grpc::InsecureChannelCredentials()),
                  hello("s1"));
    ASSERT_TRUE(wait_for([&] {
        auto s = store_->get_sensor("s1");
        return s.ok() && s->connected;
    }));
    ASSERT_TRUE(add_source("et", src_).ok());
    pb::UpdateRulesRequest req;
    req.mutable_deploy()->set_selector("all");
    pb::UpdateRulesResponse r;
    grpc::Status st = update(&r, req);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_TRUE(r.has_deployment());
    EXPECT_EQ(r.deployment().version(), 1u);
    EXPECT_TRUE(wait_for([&] { return store_->get_sensor("s1")->running_version == 1; }));
}

}  // namespace
}  // namespace picket::manager::service
