// LiveState (manager/service/common.cc) on hostile metrics reports: regression tests for what
// tests/fuzz/metrics_fuzz found.
#include <cstdint>

#include <gtest/gtest.h>

#include "manager/service/service.h"

namespace picket::manager::service {
namespace {

constexpr int64_t kMaxDelta = INT64_MAX / 2;

picket::v1::MetricsReport report(uint64_t seq, int64_t ts, uint64_t pkts, uint64_t drops) {
    picket::v1::MetricsReport r;
    r.set_seq(seq);
    r.set_timestamp(ts);
    (*r.mutable_counters())["decoder.pkts"] = pkts;
    (*r.mutable_counters())["decoder.bytes"] = pkts;
    (*r.mutable_counters())["capture.kernel_drops"] = drops;
    (*r.mutable_counters())["capture.queue_drops"] = drops;
    (*r.mutable_counters())["detect.alert"] = pkts;
    return r;
}

// metrics_fuzz crash: a first report with counters of 2^64 - 1 gave negative deltas, which the
// store refuses together with the whole report.
TEST(LiveStateTest, HugeFirstCountersGiveCappedPositiveDeltas) {
    LiveState live(4);
    store::RunTotals d;
    ASSERT_TRUE(live.on_metrics("s1", report(1, 10, UINT64_MAX, UINT64_MAX), &d));
    EXPECT_EQ(d.packets, kMaxDelta);
    EXPECT_EQ(d.bytes, kMaxDelta);
    EXPECT_EQ(d.alerts, kMaxDelta);
    EXPECT_EQ(d.drops, 2 * kMaxDelta);  // two capped deltas still fit
}

TEST(LiveStateTest, HugeIncreaseIsCappedAndSmallOnesExact) {
    LiveState live(4);
    store::RunTotals d;
    ASSERT_TRUE(live.on_metrics("s1", report(1, 10, 5, 1), &d));
    EXPECT_EQ(d.packets, 5);
    EXPECT_EQ(d.drops, 2);
    ASSERT_TRUE(live.on_metrics("s1", report(2, 20, UINT64_MAX - 1, 3), &d));
    EXPECT_EQ(d.packets, kMaxDelta);
    EXPECT_EQ(d.drops, 4);
    // Backwards (a restarted counter): counted from zero.
    ASSERT_TRUE(live.on_metrics("s1", report(3, 30, 7, 0), &d));
    EXPECT_EQ(d.packets, 7);
    EXPECT_EQ(d.drops, 0);
}

}  // namespace
}  // namespace picket::manager::service
