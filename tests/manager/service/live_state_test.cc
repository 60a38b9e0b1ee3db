// LiveState (manager/service/common.cc) on hostile metrics reports: regression tests for what
// tests/fuzz/metrics_fuzz found.
#include <cstdint>

#include <gtest/gtest.h>

#include "manager/service/service.h"

namespace picket::manager::service {
namespace {

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
// store refuses together with the whole report. Such a value is a reset (#25): nothing added.
TEST(LiveStateTest, HugeFirstCountersAddNothing) {
    LiveState live(4);
    store::RunTotals d;
    ASSERT_TRUE(live.on_metrics("s1", report(1, 10, UINT64_MAX, UINT64_MAX), &d));
    EXPECT_EQ(d.packets, 0);
    EXPECT_EQ(d.bytes, 0);
    EXPECT_EQ(d.alerts, 0);
    EXPECT_EQ(d.drops, 0);
}

TEST(LiveStateTest, AJumpToTwoToTheSixtyFourIsAResetAndSmallStepsAreExact) {
    LiveState live(4);
    store::RunTotals d;
    ASSERT_TRUE(live.on_metrics("s1", report(1, 10, 5, 1), &d));
    EXPECT_EQ(d.packets, 5);
    EXPECT_EQ(d.drops, 2);
    ASSERT_TRUE(live.on_metrics("s1", report(2, 20, UINT64_MAX - 1, 3), &d));
    EXPECT_EQ(d.packets, 0);  // not 1.8e19 (nor 4.6e18) packets
    EXPECT_EQ(d.drops, 4);
    // From the new base, a real step counts.
    ASSERT_TRUE(live.on_metrics("s1", report(3, 25, UINT64_MAX, 3), &d));
    EXPECT_EQ(d.packets, 1);
    // Backwards (a restarted counter): counted from zero.
    ASSERT_TRUE(live.on_metrics("s1", report(4, 30, 7, 0), &d));
    EXPECT_EQ(d.packets, 7);
    EXPECT_EQ(d.drops, 0);
    // 2^40 in one report is still traffic; one more is not.
    ASSERT_TRUE(live.on_metrics("s1", report(5, 40, 7 + (uint64_t{1} << 40), 0), &d));
    EXPECT_EQ(d.packets, int64_t{1} << 40);
    ASSERT_TRUE(live.on_metrics("s1", report(6, 50, 8 + (uint64_t{2} << 40), 0), &d));
    EXPECT_EQ(d.packets, 0);
}

TEST(MetricsReportBounds, CountersWorkersAndNames) {
    picket::v1::MetricsReport r = report(1, 10, 1, 1);
    EXPECT_TRUE(check_metrics_report(r).ok());
    for (int i = 0; i < kMaxReportCounters; ++i) {
        (*r.mutable_counters())["c." + std::to_string(i)] = 1;
    }
    absl::Status many = check_metrics_report(r);
    EXPECT_EQ(many.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(many.message(), "metrics report: 4101 counters, over the limit of 4096");

    picket::v1::MetricsReport workers = report(1, 10, 1, 1);
    for (int i = 0; i <= kMaxReportWorkers; ++i) {
        workers.add_workers()->set_worker(static_cast<uint32_t>(i));
    }
    EXPECT_EQ(check_metrics_report(workers).message(),
              "metrics report: 1025 workers, over the limit of 1024");

    picket::v1::MetricsReport name = report(1, 10, 1, 1);
    (*name.mutable_counters())["bad\nname"] = 1;
    EXPECT_EQ(check_metrics_report(name).message(),
              "metrics report: counter name 'bad\\nname' is not 1-128 of [A-Za-z0-9._-]");
    picket::v1::MetricsReport longname = report(1, 10, 1, 1);
    (*longname.mutable_counters())[std::string(129, 'a')] = 1;
    EXPECT_FALSE(check_metrics_report(longname).ok());
}

}  // namespace
}  // namespace picket::manager::service
