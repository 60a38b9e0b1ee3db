// Duplicate-free reports (issue #26, failover between managers): the store keeps, per sensor,
// the boot id and seq of the last stored report and the cumulative counters of that report; a
// report at or below that seq for the same boot id is refused (ALREADY_EXISTS) and changes
// nothing, a new boot id starts over, and the run totals are the exact increases.
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "manager/store/store.h"
#include "tests/manager/store/store_fixture.h"

namespace picket::manager::store {
namespace {

using testing::at;
using testing::open_store;
using testing::TempDir;

SensorHello hello(const std::string& name) {
    SensorHello h;
    h.name = name;
    h.host = name + ".example";
    h.version = "0.1.0";
    h.capture_mode = "pcap";
    h.workers = 1;
    return h;
}

// Report `seq` of process `boot` with cumulative counters (packets, bytes, drops, alerts).
SensorReport report(const std::string& boot, int64_t seq, RunTotals counters, int64_t ts) {
    SensorReport r;
    r.sensor = "s1";
    r.ts = ts;
    r.boot = boot;
    r.seq = seq;
    r.counters = counters;
    r.samples = {{"decoder.pkts", counters.packets}};
    return r;
}

RunTotals open_run_totals(Store& store) {
    auto runs = store.list_runs("s1");
    EXPECT_TRUE(runs.ok()) << runs.status();
    if (!runs.ok() || runs->empty()) {
        return {};
    }
    return runs->back().totals;
}

constexpr const char* kBootA = "0123456789abcdef0123456789abcdef";
constexpr const char* kBootB = "fedcba9876543210fedcba9876543210";

TEST(StoreReportSeq, SameBootLowerOrEqualSeqIgnoredTotalsExact) {
    TempDir dir;
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
    EXPECT_EQ(store->schema_version(), 9);

    auto pos = store->report_position("s1");
    ASSERT_TRUE(pos.ok()) << pos.status();
    EXPECT_EQ(pos->boot, "");
    EXPECT_EQ(pos->seq, 0);
    EXPECT_EQ(pos->counters.packets, 0);
    EXPECT_EQ(pos->last_seen, at(0));

    ASSERT_TRUE(store->report(report(kBootA, 1, {100, 10000, 1, 2}, at(10))).ok());
    ASSERT_TRUE(store->report(report(kBootA, 2, {250, 25000, 3, 5}, at(20))).ok());
    // The same report again (a resend after a reconnect), and an older one: ignored.
    absl::Status again = store->report(report(kBootA, 2, {250, 25000, 3, 5}, at(30)));
    EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
    absl::Status older = store->report(report(kBootA, 1, {100, 10000, 1, 2}, at(31)));
    EXPECT_EQ(older.code(), absl::StatusCode::kAlreadyExists) << older;
    ASSERT_TRUE(store->report(report(kBootA, 3, {400, 40000, 3, 9}, at(40))).ok());

    RunTotals t = open_run_totals(*store);
    EXPECT_EQ(t.packets, 400);  // exactly the sensor's own counters
    EXPECT_EQ(t.bytes, 40000);
    EXPECT_EQ(t.drops, 3);
    EXPECT_EQ(t.alerts, 9);
    pos = store->report_position("s1");
    ASSERT_TRUE(pos.ok());
    EXPECT_EQ(pos->boot, kBootA);
    EXPECT_EQ(pos->seq, 3);
    // The counters of the last stored report (what another replica's health gate reads).
    EXPECT_EQ(pos->counters.packets, 400);
    EXPECT_EQ(pos->counters.bytes, 40000);
    EXPECT_EQ(pos->counters.drops, 3);
    EXPECT_EQ(pos->counters.alerts, 9);
    EXPECT_EQ(pos->last_seen, at(40));
    // An ignored report is not stored: last_seen stays at the last accepted one.
    EXPECT_EQ(store->get_sensor("s1")->last_seen, at(40));
    auto points = store->metric_history("s1", "decoder.pkts", at(0), at(120));
    ASSERT_TRUE(points.ok()) << points.status();
    ASSERT_EQ(points->size(), 1u);
    EXPECT_EQ(points->front().value, 400);
}

TEST(StoreReportSeq, NewBootStartsOver) {
    TempDir dir;
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
    ASSERT_TRUE(store->report(report(kBootA, 1, {100, 1000, 0, 1}, at(10))).ok());
    ASSERT_TRUE(store->report(report(kBootA, 2, {150, 1500, 0, 1}, at(20))).ok());
    // The sensor restarted: new boot id, seq from 1 again, counters from zero.
    ASSERT_TRUE(store->report(report(kBootB, 1, {30, 300, 2, 0}, at(30))).ok());
    ASSERT_TRUE(store->report(report(kBootB, 2, {70, 700, 2, 4}, at(40))).ok());
    // A late duplicate of the old process is a report of another boot: its seq 2 is above
    // nothing stored for it, but it is not its first either, so it becomes the base and adds
    // nothing.
    ASSERT_TRUE(store->report(report(kBootA, 3, {160, 1600, 0, 1}, at(41))).ok());
    RunTotals t = open_run_totals(*store);
    EXPECT_EQ(t.packets, 150 + 70);
    EXPECT_EQ(t.bytes, 1500 + 700);
    EXPECT_EQ(t.drops, 2);
    EXPECT_EQ(t.alerts, 1 + 4);
    auto pos = store->report_position("s1");
    ASSERT_TRUE(pos.ok());
    EXPECT_EQ(pos->boot, kBootA);
    EXPECT_EQ(pos->seq, 3);
}

TEST(StoreReportSeq, FirstReportPastSeqOneAddsNothingThenExactIncreases) {
    TempDir dir;
    auto store = open_store(dir.file("m.db"));
    ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
    // Seen first at seq 5 (its first four were lost to a full buffer): a base, not a total.
    ASSERT_TRUE(store->report(report(kBootA, 5, {500, 5000, 5, 5}, at(10))).ok());
    ASSERT_TRUE(store->report(report(kBootA, 7, {800, 8000, 5, 6}, at(20))).ok());
    EXPECT_EQ(store->report(report(kBootA, 6, {700, 7000, 5, 6}, at(21))).code(),
              absl::StatusCode::kAlreadyExists);
    RunTotals t = open_run_totals(*store);
    EXPECT_EQ(t.packets, 300);
    EXPECT_EQ(t.bytes, 3000);
    EXPECT_EQ(t.drops, 0);
    EXPECT_EQ(t.alerts, 1);
}

TEST(StoreReportSeq, DuplicatesIgnoredAcrossReopenAndAsync) {
    // A second manager on the same database (here: the same file reopened) knows where the
    // first one stopped; queued reports are deduplicated in queue order.
    TempDir dir;
    const std::string path = dir.file("m.db");
    {
        auto store = open_store(path);
        ASSERT_TRUE(store->connect_sensor(hello("s1"), at(0), true).ok());
        ASSERT_TRUE(store->report(report(kBootA, 1, {10, 100, 0, 0}, at(10))).ok());
        ASSERT_TRUE(store->report(report(kBootA, 2, {20, 200, 0, 0}, at(20))).ok());
    }
    auto store = open_store(path);
    auto pos = store->report_position("s1");
    ASSERT_TRUE(pos.ok());
    EXPECT_EQ(pos->boot, kBootA);
    EXPECT_EQ(pos->seq, 2);
    int ok = 0;
    int dup = 0;
    for (int64_t seq = 1; seq <= 4; ++seq) {  // the sensor resends everything it kept
        store->report_async(report(kBootA, seq, {seq * 10, seq * 100, 0, 0}, at(20 + seq)),
                            [&](absl::Status st) {
                                ok += st.ok() ? 1 : 0;
                                dup += absl::IsAlreadyExists(st) ? 1 : 0;
                            });
    }
    // report_position runs after the queued reports.
    pos = store->report_position("s1");
    ASSERT_TRUE(pos.ok());
    EXPECT_EQ(pos->seq, 4);
    ASSERT_TRUE(store->sync().ok());
    EXPECT_EQ(ok, 2);
    EXPECT_EQ(dup, 2);
    EXPECT_EQ(open_run_totals(*store).packets, 40);
    EXPECT_EQ(open_run_totals(*store).bytes, 400);
}

TEST(StoreReportSeq, UnknownSensorPositionNotFound) {
    TempDir dir;
    auto store = open_store(dir.file("m.db"));
    EXPECT_EQ(store->report_position("nobody").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace picket::manager::store
