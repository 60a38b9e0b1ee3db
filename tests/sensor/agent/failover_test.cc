// Several manager addresses (issue #26): --manager list parsing, the spread over the list (a
// stable first choice by name hash) and the walk order, DNS names with several addresses, and
// the agent failing over between two fake managers and resending the reports a manager says it
// has not stored (Welcome.stored_report_seq), none twice.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "picket/v1/picket.grpc.pb.h"
#include "sensor/agent/agent.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace picket::sensor::agent {
namespace {

namespace v1 = picket::v1;
using namespace std::chrono_literals;

// ------------------------------------------------------------------ address list

TEST(ManagerList, ParsesEntriesInOrder) {
    auto l = parse_manager_list("a.example:7443,b.example:7443, [::1]:9000 ,10.0.0.3:1");
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(*l, (std::vector<std::string>{"a.example:7443", "b.example:7443", "[::1]:9000",
                                            "10.0.0.3:1"}));
    auto one = parse_manager_list("mgr:50051");
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(*one, std::vector<std::string>{"mgr:50051"});
}

TEST(ManagerList, ErrorNamesTheBadEntry) {
    auto bad_port = parse_manager_list("a:7443,b:http");
    ASSERT_EQ(bad_port.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(bad_port.status().message(),
              "manager address 'b:http': port must be a number in 1..65535");
    auto no_port = parse_manager_list("a:7443,b");
    ASSERT_FALSE(no_port.ok());
    EXPECT_EQ(no_port.status().message(), "manager address 'b': expected HOST:PORT ([IPV6]:PORT)");
    auto zero = parse_manager_list("a:0");
    EXPECT_EQ(zero.status().message(), "manager address 'a:0': port must be a number in 1..65535");
    EXPECT_EQ(parse_manager_list("a:1,,b:2").status().message(),
              "--manager 'a:1,,b:2': empty entry in the address list");
    EXPECT_EQ(parse_manager_list("a:1,").status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parse_manager_list("a:1,a:1").status().message(),
              "manager address 'a:1' given twice");
    EXPECT_EQ(parse_manager_list("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ManagerList, ValidateOptionsChecksEveryEntry) {
    AgentOptions o;
    o.name = "s1";
    o.state_dir = "/tmp/x";
    o.insecure = true;
    o.manager = "127.0.0.1:1,127.0.0.2:2";
    EXPECT_TRUE(validate_options(o).ok()) << validate_options(o);
    o.manager = "127.0.0.1:1,10.0.0.2:2";  // --insecure: every address must be loopback
    absl::Status st = validate_options(o);
    EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
    EXPECT_NE(st.message().find("not '10.0.0.2:2'"), std::string_view::npos) << st;
    o.manager = "127.0.0.1:1,127.0.0.1:x";
    EXPECT_EQ(validate_options(o).message(),
              "manager address '127.0.0.1:x': port must be a number in 1..65535");
}

// ------------------------------------------------------------------ spread and walk

TEST(ManagerSpread, FirstChoiceIsAStableNameHash) {
    // FNV-1a 64 of the name, mod the number of candidates (values computed independently).
    EXPECT_EQ(first_choice("s1", 2), 1u);
    EXPECT_EQ(first_choice("s2", 2), 0u);  // two names, two different managers
    EXPECT_EQ(first_choice("s3", 3), 2u);
    EXPECT_EQ(first_choice("s3", 4), 3u);
    EXPECT_EQ(first_choice("paris-01", 2), 0u);
    EXPECT_EQ(first_choice("paris-02", 2), 1u);
    EXPECT_EQ(first_choice("fo-sensor", 4), 3u);
    EXPECT_EQ(first_choice("anything", 1), 0u);
    EXPECT_EQ(first_choice("anything", 0), 0u);
    // Stable: the same name always picks the same.
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(first_choice("s1", 2), 1u);
    }
}

TEST(ManagerSpread, WalkOrderStartsAtFirstChoiceAndWraps) {
    EXPECT_EQ(walk_order("s3", 4), (std::vector<size_t>{3, 0, 1, 2}));
    EXPECT_EQ(walk_order("s1", 3), (std::vector<size_t>{1, 2, 0}));
    EXPECT_EQ(walk_order("s2", 2), (std::vector<size_t>{0, 1}));
    EXPECT_EQ(walk_order("s1", 2), (std::vector<size_t>{1, 0}));
    EXPECT_EQ(walk_order("x", 1), (std::vector<size_t>{0}));
    EXPECT_TRUE(walk_order("x", 0).empty());
}

TEST(ManagerSpread, NameWithSeveralAddressesGivesOneCandidateEach) {
    std::vector<std::string> asked;
    Resolver fake = [&](const std::string& host) -> std::vector<std::string> {
        asked.push_back(host);
        if (host == "managers.example") {
            return {"10.0.0.2", "2001:db8::1", "10.0.0.1"};
        }
        if (host == "one.example") {
            return {"10.0.0.9"};
        }
        return {};
    };
    auto c = expand_candidates(
        {"managers.example:7443", "10.0.0.5:7443", "one.example:7443", "gone.example:1"}, fake);
    std::vector<ManagerCandidate> want = {
        {"10.0.0.1:7443", "managers.example"},  // sorted, each checked against the name
        {"10.0.0.2:7443", "managers.example"},
        {"[2001:db8::1]:7443", "managers.example"},
        {"10.0.0.5:7443", ""},     // a literal: not resolved
        {"one.example:7443", ""},  // one address: gRPC resolves it, as with one manager
        {"gone.example:1", ""},    // none now: kept, tried (and failing) in its turn
    };
    EXPECT_EQ(c, want);
    EXPECT_EQ(asked, (std::vector<std::string>{"managers.example", "one.example", "gone.example"}));
}

TEST(ManagerSpread, BootIdIs128BitHexAndNewEachTime) {
    std::set<std::string> seen;
    for (int i = 0; i < 50; ++i) {
        std::string id = new_boot_id();
        ASSERT_EQ(id.size(), 32u);
        EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
        seen.insert(id);
    }
    EXPECT_EQ(seen.size(), 50u);
}

// ------------------------------------------------------------------ failover with the agent

// A manager that stores reports like the real store: per boot id the highest seq received,
// told in Welcome.stored_report_seq; records every stream's Hello and report seqs.
class SeqManager final : public v1::SensorLink::Service {
public:
    grpc::Status Connect(
        grpc::ServerContext* ctx,
        grpc::ServerReaderWriter<v1::ManagerMessage, v1::SensorMessage>* stream) override {
        v1::SensorMessage first;
        if (!stream->Read(&first) || !first.has_hello()) {
            return grpc::Status::OK;
        }
        const std::string boot = first.hello().boot_id();
        size_t stream_index = 0;
        v1::ManagerMessage welcome;
        {
            std::lock_guard lk(mu_);
            stream_index = streams_.size();
            streams_.push_back({boot, {}});
            welcome.mutable_welcome()->set_accepted(true);
            welcome.mutable_welcome()->set_stored_report_seq(stored_[boot]);
            cv_.notify_all();
        }
        stream->Write(welcome);
        std::thread reader([&] {
            v1::SensorMessage m;
            while (stream->Read(&m)) {
                if (!m.has_metrics()) {
                    continue;
                }
                std::lock_guard lk(mu_);
                streams_[stream_index].seqs.push_back(m.metrics().seq());
                uint64_t& st = stored_[boot];
                st = std::max(st, m.metrics().seq());
                cv_.notify_all();
            }
        });
        {
            std::unique_lock lk(mu_);
            cv_.wait(lk, [&] { return closing_ || ctx->IsCancelled(); });
        }
        ctx->TryCancel();
        reader.join();
        return grpc::Status::OK;
    }
    void close_streams() {
        std::lock_guard lk(mu_);
        closing_ = true;
        cv_.notify_all();
    }
    void reopen() {
        std::lock_guard lk(mu_);
        closing_ = false;
    }
    struct Stream {
        std::string boot;
        std::vector<uint64_t> seqs;
    };
    std::vector<Stream> streams() {
        std::lock_guard lk(mu_);
        return streams_;
    }
    // Waits until stream i exists and has at least n reports.
    bool wait_reports(size_t i, size_t n, std::chrono::milliseconds timeout = 10s) {
        std::unique_lock lk(mu_);
        return cv_.wait_for(lk, timeout,
                            [&] { return streams_.size() > i && streams_[i].seqs.size() >= n; });
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Stream> streams_;
    std::map<std::string, uint64_t> stored_;
    bool closing_ = false;
};

struct Server {
    SeqManager service;
    std::unique_ptr<grpc::Server> server;
    int port = 0;
    void start() {
        grpc::ServerBuilder b;
        b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
        b.RegisterService(&service);
        server = b.BuildAndStart();
    }
    void stop() {
        if (server) {
            service.close_streams();
            server->Shutdown(std::chrono::system_clock::now() + 200ms);
            server->Wait();
            server.reset();
        }
    }
    ~Server() { stop(); }
};

AgentOptions agent_options(const std::string& manager, const std::filesystem::path& state) {
    AgentOptions o;
    o.manager = manager;
    o.name = "s2";  // first_choice("s2", 2) == 0: the first address
    o.insecure = true;
    o.state_dir = state;
    o.version = "0.1.0";
    o.metrics_interval = 50ms;
    o.backoff = Backoff{50ms, 200ms, 0.2};
    o.connect_timeout = 1000ms;
    return o;
}

SensorHooks hooks() {
    SensorHooks h;
    h.stats = [] { return StatsSnapshot{}; };
    h.reload = [](const detect::DetectConfig&, detect::LoadSummary*, std::string*) { return true; };
    return h;
}

// Every seq from 1 to the last, exactly once, over all streams of one boot id.
void expect_each_seq_once(const std::vector<std::vector<uint64_t>>& per_stream_new) {
    std::vector<uint64_t> all;
    for (const auto& s : per_stream_new) {
        all.insert(all.end(), s.begin(), s.end());
    }
    ASSERT_FALSE(all.empty());
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i], i + 1) << "report " << i;
    }
}

TEST(AgentFailover, MovesToTheNextManagerAndResendsWhatItDidNotStore) {
    picket::testing::TempDir tmp{"picket-failover-test"};
    Server a;
    Server b;
    a.start();
    b.start();
    Agent agent(agent_options(
                    "127.0.0.1:" + std::to_string(a.port) + ",127.0.0.1:" + std::to_string(b.port),
                    tmp.path()),
                hooks());
    agent.start();
    ASSERT_TRUE(a.service.wait_reports(0, 5));  // the first choice for "s2"
    EXPECT_TRUE(b.service.streams().empty());
    a.stop();  // the manager goes away
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(b.service.wait_reports(0, 1, 10s));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
    const size_t on_a = a.service.streams().at(0).seqs.size();
    ASSERT_TRUE(b.service.wait_reports(0, on_a + 2, 10s));  // A's again, and new ones
    EXPECT_EQ(agent.current_manager(), "127.0.0.1:" + std::to_string(b.port));
    EXPECT_EQ(agent.counters().failovers.load(), 1u);
    agent.stop();

    auto sa = a.service.streams();
    auto sb = b.service.streams();
    ASSERT_EQ(sa.size(), 1u);
    ASSERT_EQ(sb.size(), 1u);
    EXPECT_EQ(sa[0].boot, agent.boot_id());
    EXPECT_EQ(sb[0].boot, agent.boot_id());
    // B stored nothing of this boot: it gets every report from seq 1, in order, none twice.
    expect_each_seq_once({sb[0].seqs});
    EXPECT_GE(sb[0].seqs.size(), on_a + 2);
    EXPECT_EQ(agent.counters().reports_dropped.load(), 0u);
}

TEST(AgentFailover, ReconnectToTheSameManagerSendsNoStoredReportAgain) {
    picket::testing::TempDir tmp{"picket-failover-test"};
    Server a;
    a.start();
    Agent agent(agent_options("127.0.0.1:" + std::to_string(a.port), tmp.path()), hooks());
    agent.start();
    ASSERT_TRUE(a.service.wait_reports(0, 5));
    a.service.close_streams();  // the stream breaks; the manager (and what it stored) stays
    // Let the agent see the end, then let the next stream live.
    ASSERT_TRUE(picket::testing::wait_until([&] { return agent.connected(); },
                                            [](bool c) { return !c; }, 5s, "disconnect"));
    a.service.reopen();
    ASSERT_TRUE(picket::testing::wait_until(
        [&] {
            size_t n = 0;
            auto s = a.service.streams();
            for (size_t i = 1; i < s.size(); ++i) {
                n += s[i].seqs.size();
            }
            return n;
        },
        [](size_t n) { return n >= 5; }, 10s, "reports on a later stream"));
    agent.stop();
    auto s = a.service.streams();
    ASSERT_GE(s.size(), 2u);
    std::vector<std::vector<uint64_t>> per_stream;
    for (const auto& st : s) {
        EXPECT_EQ(st.boot, agent.boot_id());
        per_stream.push_back(st.seqs);
    }
    expect_each_seq_once(per_stream);  // what the first stream carried is not sent again
    EXPECT_EQ(agent.counters().reports_resent.load(), 0u);
}

}  // namespace
}  // namespace picket::sensor::agent
