// Rollout driven step by step against a real store, with an injected clock and counters.
#include "manager/rollout/rollout.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <thread>

#include "gtest/gtest.h"
#include "tests/support/temp_dir.h"

namespace picket::manager::rollout {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSec;

using store::DeploymentState;
using store::TargetState;

CounterSnapshot snap(int64_t ts, uint64_t pkts, uint64_t drops, uint64_t alerts) {
    return {ts,
            {{"decoder.pkts", pkts}, {"capture.kernel_drops", drops}, {"detect.alert", alerts}}};
}

TEST(EvaluateGateTest, WithinBoundsPasses) {
    GateVerdict v =
        evaluate_gate({0.01, 100}, "s1", snap(0, 1000, 0, 0), snap(2 * kSec, 11000, 100, 150));
    EXPECT_TRUE(v.ok) << v.reason;
}

TEST(EvaluateGateTest, DropRatioOverBoundFails) {
    GateVerdict v = evaluate_gate({0.01, 100}, "s2", snap(0, 0, 0, 0), snap(kSec, 1000, 50, 0));
    EXPECT_FALSE(v.ok);
    EXPECT_EQ(v.reason, "drop ratio 0.0500 > 0.0100 on s2");
}

TEST(EvaluateGateTest, AlertRateOverBoundFails) {
    GateVerdict v = evaluate_gate({0.01, 10}, "s3", snap(0, 0, 0, 0), snap(2 * kSec, 10, 0, 42));
    EXPECT_FALSE(v.ok);
    EXPECT_EQ(v.reason, "alert rate 21.0000/s > 10.0000/s on s3");
}

TEST(EvaluateGateTest, CounterResetCountsFromZero) {
    GateVerdict v = evaluate_gate({0.01, 10}, "s1", snap(0, 5000, 0, 900), snap(kSec, 100, 0, 5));
    EXPECT_TRUE(v.ok) << v.reason;
}

// Timestamps are the sensors' own: one far in the past and one far in the future (found by
// metrics_fuzz as a signed overflow) still give a rate, and a clock that went back gives none.
TEST(EvaluateGateTest, WildTimestampsDoNotOverflow) {
    GateVerdict v = evaluate_gate({0.01, 10}, "s1", snap(INT64_MIN + 1, 0, 0, 0),
                                  snap(INT64_MAX, 10, 0, 1'000'000'000));
    EXPECT_TRUE(v.ok) << v.reason;  // 1e9 alerts over ~18e9 s
    v = evaluate_gate({0.01, 10}, "s1", snap(-8'051'980'535'581'529'088, 0, 0, 0),
                      snap(1'700'000'020'000'000'000, 10, 0, 5));
    EXPECT_TRUE(v.ok) << v.reason;
    v = evaluate_gate({0.01, 10}, "s1", snap(2 * kSec, 0, 0, 0), snap(kSec, 10, 0, 500));
    EXPECT_TRUE(v.ok) << v.reason;  // no span: the alert rate is not judged
}

class RolloutTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.path().string();
        auto s = store::Store::Open(dir_ + "/fleet.db");
        ASSERT_TRUE(s.ok()) << s.status();
        store_ = std::move(*s);
        for (int v = 1; v <= 2; ++v) {
            store::NewBundle b;
            b.name = "base";
            b.blob = "blob" + std::to_string(v);
            b.created_at = kT0;
            ASSERT_TRUE(store_->push_bundle(b).ok());
        }
        for (const char* n : {"s1", "s2", "s3", "s4"}) {
            store::SensorHello h;
            h.name = n;
            h.running_version = 1;
            ASSERT_TRUE(store_->connect_sensor(h, kT0, true).ok());
        }
        RolloutOptions o;
        o.target_timeout_seconds = 60;
        o.now = [this] { return now_; };
        rollout_ = std::make_unique<Rollout>(
            *store_, o,
            [this](const std::string& s) -> std::optional<CounterSnapshot> {
                auto it = counters_.find(s);
                if (it == counters_.end()) {
                    return std::nullopt;
                }
                return it->second;
            },
            [this] { ++wakes_; });
    }
    void TearDown() override {
        rollout_.reset();
        store_.reset();
    }
    int64_t deploy(int canary, int64_t soak) {
        store::NewDeployment d;
        d.bundle_version = 2;
        d.selector = "all";
        d.canary_percent = canary;
        d.soak_seconds = soak;
        d.created_at = now_;
        auto created = store_->create_deployment(d);
        EXPECT_TRUE(created.ok()) << created.status();
        return created->id;
    }
    store::Deployment get(int64_t id) { return store_->get_deployment(id).value(); }

    picket::testing::TempDir tmp_{"picket-rollout"};
    std::string dir_;
    std::unique_ptr<store::Store> store_;
    std::unique_ptr<Rollout> rollout_;
    int64_t now_ = kT0 + kSec;
    std::map<std::string, CounterSnapshot> counters_;
    int wakes_ = 0;
};

TEST_F(RolloutTest, HealthyCanaryGoesToEveryoneAfterTheSoak) {
    int64_t id = deploy(25, 10);
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kSent, "", now_).ok());
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kApplied, "", now_).ok());
    ASSERT_TRUE(rollout_->step().ok());
    EXPECT_EQ(get(id).state, DeploymentState::kSoaking);
    counters_["s1"] = snap(now_, 0, 0, 0);
    ASSERT_TRUE(rollout_->step().ok());
    now_ += 5 * kSec;
    counters_["s1"] = snap(now_, 100000, 10, 20);
    ASSERT_TRUE(rollout_->step().ok());
    EXPECT_EQ(get(id).state, DeploymentState::kSoaking);
    EXPECT_EQ(wakes_, 0);
    now_ += 5 * kSec;
    ASSERT_TRUE(rollout_->step().ok());
    EXPECT_EQ(get(id).state, DeploymentState::kRolling);
    EXPECT_EQ(wakes_, 1);
    EXPECT_EQ(store_->pending_targets("s4").value().size(), 1u);
}

TEST_F(RolloutTest, FailingGateRollsTheCanariesBack) {
    int64_t id = deploy(50, 10);  // s1, s2 are canaries
    for (const char* n : {"s1", "s2"}) {
        ASSERT_TRUE(store_->update_target(id, n, TargetState::kSent, "", now_).ok());
        ASSERT_TRUE(store_->update_target(id, n, TargetState::kApplied, "", now_).ok());
    }
    ASSERT_TRUE(rollout_->step().ok());
    counters_["s2"] = snap(now_, 0, 0, 0);
    ASSERT_TRUE(rollout_->step().ok());
    now_ += kSec;
    counters_["s2"] = snap(now_, 1000, 200, 0);
    ASSERT_TRUE(rollout_->step().ok());
    store::Deployment d = get(id);
    EXPECT_EQ(d.state, DeploymentState::kRolledBack);
    EXPECT_EQ(d.error, "health gate failed: drop ratio 0.2000 > 0.0100 on s2");
    EXPECT_EQ(d.targets[2].state, TargetState::kSuperseded);
    EXPECT_EQ(wakes_, 1);
    auto all = store_->list_deployments(10, true).value();
    ASSERT_EQ(all.size(), 2u);
    const store::Deployment& rb = all[0];
    EXPECT_EQ(rb.kind, store::DeploymentKind::kRollback);
    EXPECT_EQ(rb.parent_id, id);
    EXPECT_EQ(rb.actor, "rollout");
    ASSERT_EQ(rb.targets.size(), 2u);
    EXPECT_EQ(rb.targets[0].sensor, "s1");
    EXPECT_EQ(rb.targets[0].bundle_version, 1);
    EXPECT_EQ(rb.targets[1].bundle_version, 1);
}

// A canary that moves from this replica's stream to another replica's mid-soak: its counters
// come from the store from then on (every drop under capture.kernel_drops, the manager's
// clock). Compared with the live baseline, its 50 queue drops from before the soak would
// count as new (50 of 100 packets); its baseline starts over instead.
TEST_F(RolloutTest, ACanaryMovingToAnotherReplicaStartsItsBaselineOver) {
    int64_t id = deploy(25, 10);
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kSent, "", now_).ok());
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kApplied, "", now_).ok());
    ASSERT_TRUE(rollout_->step().ok());
    ASSERT_EQ(get(id).state, DeploymentState::kSoaking);
    counters_["s1"] = {now_ + 7 * kSec,  // the sensor's clock
                       {{"decoder.pkts", 1000},
                        {"capture.kernel_drops", 0},
                        {"capture.queue_drops", 50},
                        {"detect.alert", 0}}};
    ASSERT_TRUE(rollout_->step().ok());
    now_ += 2 * kSec;
    CounterSnapshot moved = snap(now_, 1100, 50, 0);
    moved.stored = true;
    counters_["s1"] = moved;
    ASSERT_TRUE(rollout_->step().ok());
    EXPECT_EQ(get(id).state, DeploymentState::kSoaking) << get(id).error;
    now_ += 8 * kSec;
    CounterSnapshot later = snap(now_, 101100, 50, 0);
    later.stored = true;
    counters_["s1"] = later;
    ASSERT_TRUE(rollout_->step().ok());
    EXPECT_EQ(get(id).state, DeploymentState::kRolling) << get(id).error;
    // And a drop ratio over the bound between two stored snapshots still fails the gate.
    int64_t id2 = deploy(25, 10);
    ASSERT_TRUE(store_->update_target(id2, "s1", TargetState::kSent, "", now_).ok());
    ASSERT_TRUE(store_->update_target(id2, "s1", TargetState::kApplied, "", now_).ok());
    ASSERT_TRUE(rollout_->step().ok());
    ASSERT_TRUE(rollout_->step().ok());
    now_ += kSec;
    CounterSnapshot bad = snap(now_, 102100, 250, 0);
    bad.stored = true;
    counters_["s1"] = bad;
    ASSERT_TRUE(rollout_->step().ok());
    EXPECT_EQ(get(id2).error, "health gate failed: drop ratio 0.2000 > 0.0100 on s1");
}

TEST_F(RolloutTest, RejectedCanaryFailsWithoutRollback) {
    int64_t id = deploy(25, 10);
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kSent, "", now_).ok());
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kRejected, "bad rule", now_).ok());
    ASSERT_TRUE(rollout_->step().ok());
    store::Deployment d = get(id);
    EXPECT_EQ(d.state, DeploymentState::kFailed);
    EXPECT_EQ(d.error, "canary s1 rejected: bad rule");
    EXPECT_EQ(store_->list_deployments(10, false).value().size(), 1u);
}

TEST_F(RolloutTest, SupersededCanaryEndsWithoutRollback) {
    int64_t id = deploy(50, 10);  // s1, s2 are canaries
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kSent, "", now_).ok());
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kApplied, "", now_).ok());
    int64_t newer = deploy(0, 0);  // supersedes s2's open canary target
    ASSERT_TRUE(rollout_->step().ok());
    store::Deployment d = get(id);
    EXPECT_EQ(d.state, DeploymentState::kSuperseded);
    EXPECT_EQ(d.error, "canary s2 superseded by deployment 2");
    EXPECT_EQ(store_->list_deployments(10, false).value().size(), 2u);
    EXPECT_EQ(get(newer).state, DeploymentState::kRolling);
}

TEST_F(RolloutTest, UnansweredTargetsTimeOut) {
    int64_t id = deploy(0, 0);
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kSent, "", now_).ok());
    now_ += 59 * kSec;
    ASSERT_TRUE(rollout_->step().ok());
    EXPECT_EQ(get(id).targets[0].state, TargetState::kSent);
    now_ += kSec;
    ASSERT_TRUE(rollout_->step().ok());
    store::Deployment d = get(id);
    EXPECT_EQ(d.targets[0].state, TargetState::kTimedOut);
    EXPECT_EQ(d.targets[0].error, "no ApplyResult within 60 s");
    EXPECT_EQ(d.targets[1].state, TargetState::kPending);  // never sent: waits for its sensor
}

// A pass reads the open deployments, not the newest 100 with all their targets: an open
// deployment with 101 newer (finished) ones still has its overdue targets timed out.
TEST_F(RolloutTest, AnOpenDeploymentBehindAHundredNewerOnesIsStillDriven) {
    int64_t id = deploy(0, 0);
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kSent, "", now_).ok());
    int64_t last = 0;
    for (int i = 0; i < 101; ++i) {  // each supersedes the one before it on s4
        store::NewDeployment d;
        d.bundle_version = 2;
        d.selector = "s4";
        d.created_at = now_;
        auto created = store_->create_deployment(d);
        ASSERT_TRUE(created.ok()) << created.status();
        last = created->id;
    }
    auto open = store_->open_deployments();
    ASSERT_TRUE(open.ok()) << open.status();
    ASSERT_EQ(open->size(), 2u);
    EXPECT_EQ((*open)[0].id, last);
    EXPECT_EQ((*open)[1].id, id);
    now_ += 60 * kSec;
    ASSERT_TRUE(rollout_->step().ok());
    store::Deployment d = get(id);
    EXPECT_EQ(d.state, DeploymentState::kRolling);  // s2 and s3 still pending
    EXPECT_EQ(d.targets[0].state, TargetState::kTimedOut);
    EXPECT_EQ(d.targets[0].error, "no ApplyResult within 60 s");
    EXPECT_EQ(d.targets[3].state, TargetState::kSuperseded);
    EXPECT_EQ(d.counts.timed_out, 1);
    EXPECT_EQ(d.counts.pending, 2);
    EXPECT_EQ(get(last).targets[0].state, TargetState::kPending);
}

TEST_F(RolloutTest, OfflineCanaryTimesOutAndFailsTheDeployment) {
    int64_t id = deploy(25, 10);
    now_ += 60 * kSec;
    ASSERT_TRUE(rollout_->step().ok());
    ASSERT_TRUE(rollout_->step().ok());
    store::Deployment d = get(id);
    EXPECT_EQ(d.state, DeploymentState::kFailed);
    EXPECT_EQ(d.targets[0].state, TargetState::kTimedOut);
}

TEST_F(RolloutTest, GateDefaultsFillUnsetBounds) {
    rollout_->set_gate(7, {0, 5});
    EXPECT_EQ(rollout_->gate(7).max_drop_ratio, 0.01);
    EXPECT_EQ(rollout_->gate(7).max_alerts_per_second, 5);
    EXPECT_EQ(rollout_->gate(8).max_alerts_per_second, 100);
}

TEST_F(RolloutTest, AStoredGateOutlivesTheManagersMemory) {
    // After a restart nothing was set_gate'd: the deployment's stored gate holds.
    store::Deployment d;
    d.id = 9;
    d.gate_max_drop_ratio = 0.2;
    EXPECT_EQ(rollout_->gate(d).max_drop_ratio, 0.2);
    EXPECT_EQ(rollout_->gate(d).max_alerts_per_second, 100);  // 0 = the default
    d.gate_max_alerts_per_second = 7;
    EXPECT_EQ(rollout_->gate(d).max_alerts_per_second, 7);
    rollout_->set_gate(9, {0.5, 0});
    EXPECT_EQ(rollout_->gate(d).max_drop_ratio, 0.5);
}

// Replicas on one database: only the leader's thread drives deployments; a follower's passes
// are skipped until it leads (manager/ha).
TEST_F(RolloutTest, OnlyTheLeadersThreadDrivesDeployments) {
    std::atomic<bool> leader{false};
    RolloutOptions o;
    o.poll_interval = std::chrono::milliseconds(10);
    o.now = [this] { return now_; };
    o.is_leader = [&leader] { return leader.load(); };
    Rollout r(
        *store_, o, [](const std::string&) { return std::nullopt; }, [] {});
    int64_t id = deploy(25, 10);
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kSent, "", now_).ok());
    ASSERT_TRUE(store_->update_target(id, "s1", TargetState::kApplied, "", now_).ok());
    r.start();
    for (int i = 0; i < 10; ++i) {
        r.kick();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(get(id).state, DeploymentState::kCanary);  // a follower: nothing moved
    leader = true;
    r.kick();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (get(id).state == DeploymentState::kCanary &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(get(id).state, DeploymentState::kSoaking);
    r.stop();
}

}  // namespace
}  // namespace picket::manager::rollout
