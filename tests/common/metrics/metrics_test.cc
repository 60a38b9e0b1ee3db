#include "common/metrics/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

namespace picket::metrics {
namespace {

TEST(FormatValue, IntegersPrintWithoutFractionOrExponent) {
    EXPECT_EQ(format_value(0), "0");
    EXPECT_EQ(format_value(-0.0), "0");
    EXPECT_EQ(format_value(42), "42");
    EXPECT_EQ(format_value(-3), "-3");
    EXPECT_EQ(format_value(1e6), "1000000");
    EXPECT_EQ(format_value(1700000000), "1700000000");
    EXPECT_EQ(format_value(9007199254740992.0), "9007199254740992");  // 2^53
    EXPECT_EQ(format_value(-9007199254740992.0), "-9007199254740992");
}

TEST(FormatValue, OthersRoundTripInShortestForm) {
    EXPECT_EQ(format_value(0.1), "0.1");
    EXPECT_EQ(format_value(2.5), "2.5");
    EXPECT_EQ(format_value(-0.25), "-0.25");
    EXPECT_EQ(format_value(0.0001), "0.0001");
    EXPECT_EQ(format_value(0.00025), "0.00025");
    EXPECT_EQ(format_value(0.00001), "1e-05");
    EXPECT_EQ(format_value(1.0 / 3), "0.3333333333333333");
    EXPECT_EQ(format_value(0.1 + 0.2), "0.30000000000000004");
    // %g style with the default precision 6 deciding fixed vs exponent, as Go's
    // strconv.FormatFloat(v, 'g', -1, 64) in client_golang: large non-integers get an exponent.
    EXPECT_EQ(format_value(123456.5), "123456.5");
    EXPECT_EQ(format_value(1234567.5), "1.2345675e+06");
    EXPECT_EQ(format_value(1700000000.25), "1.70000000025e+09");
    EXPECT_EQ(format_value(1e20), "1e+20");  // integral but beyond 2^53
    EXPECT_EQ(format_value(18014398509481984.0), "1.8014398509481984e+16");  // 2^54
    EXPECT_EQ(format_value(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
}

TEST(FormatValue, SpecialValues) {
    EXPECT_EQ(format_value(std::numeric_limits<double>::quiet_NaN()), "NaN");
    EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(Names, MetricNames) {
    EXPECT_TRUE(valid_metric_name("picket_sensor_up"));
    EXPECT_TRUE(valid_metric_name("_x"));
    EXPECT_TRUE(valid_metric_name(":recording:rule"));
    EXPECT_TRUE(valid_metric_name("a1:b2_c3"));
    EXPECT_FALSE(valid_metric_name(""));
    EXPECT_FALSE(valid_metric_name("1abc"));
    EXPECT_FALSE(valid_metric_name("a-b"));
    EXPECT_FALSE(valid_metric_name("a.b"));
    EXPECT_FALSE(valid_metric_name("a b"));
    EXPECT_FALSE(valid_metric_name("é"));
}

TEST(Names, LabelNames) {
    EXPECT_TRUE(valid_label_name("sensor"));
    EXPECT_TRUE(valid_label_name("_x"));
    EXPECT_TRUE(valid_label_name("label_site_a"));
    EXPECT_FALSE(valid_label_name(""));
    EXPECT_FALSE(valid_label_name("__name__"));
    EXPECT_FALSE(valid_label_name("__x"));
    EXPECT_FALSE(valid_label_name("a:b"));
    EXPECT_FALSE(valid_label_name("9a"));
    EXPECT_FALSE(valid_label_name("a-b"));
}

TEST(Escape, LabelValues) {
    EXPECT_EQ(escape_label_value("plain"), "plain");
    EXPECT_EQ(escape_label_value("a\\b"), "a\\\\b");
    EXPECT_EQ(escape_label_value("say \"hi\""), "say \\\"hi\\\"");
    EXPECT_EQ(escape_label_value("two\nlines"), "two\\nlines");
    EXPECT_EQ(escape_label_value(""), "");
}

TEST(Exposition, CountersAndGaugesByteForByte) {
    Exposition e;
    e.counter("picket_test_total", "Things counted.", {}, 3);
    e.gauge("picket_temp", "A gauge.", {{"room", "a"}, {"floor", "1"}}, -2.5);
    e.gauge("picket_temp", "A gauge.", {{"room", "b"}, {"floor", "1"}}, 21);
    e.counter("picket_test_total", "Things counted.", {{"kind", "x"}}, 0.5);  // merged into first
    EXPECT_EQ(e.family_count(), 2u);
    EXPECT_EQ(e.render(),
              "# HELP picket_test_total Things counted.\n"
              "# TYPE picket_test_total counter\n"
              "picket_test_total 3\n"
              "picket_test_total{kind=\"x\"} 0.5\n"
              "# HELP picket_temp A gauge.\n"
              "# TYPE picket_temp gauge\n"
              "picket_temp{room=\"a\",floor=\"1\"} -2.5\n"
              "picket_temp{room=\"b\",floor=\"1\"} 21\n");
}

TEST(Exposition, EscapesHelpAndLabelValues) {
    Exposition e;
    e.gauge("picket_x", "Back\\slash, \"quotes\" stay,\nnewline.",
            {{"path", "C:\\dir"}, {"q", "\"quoted\""}, {"nl", "a\nb"}}, 1);
    EXPECT_EQ(e.render(),
              "# HELP picket_x Back\\\\slash, \"quotes\" stay,\\nnewline.\n"
              "# TYPE picket_x gauge\n"
              "picket_x{path=\"C:\\\\dir\",q=\"\\\"quoted\\\"\",nl=\"a\\nb\"} 1\n");
}

TEST(Exposition, SpecialValuesInSamples) {
    Exposition e;
    e.gauge("picket_g", "G.", {{"v", "nan"}}, std::numeric_limits<double>::quiet_NaN());
    e.gauge("picket_g", "G.", {{"v", "inf"}}, std::numeric_limits<double>::infinity());
    e.gauge("picket_g", "G.", {{"v", "-inf"}}, -std::numeric_limits<double>::infinity());
    EXPECT_EQ(e.render(),
              "# HELP picket_g G.\n"
              "# TYPE picket_g gauge\n"
              "picket_g{v=\"nan\"} NaN\n"
              "picket_g{v=\"inf\"} +Inf\n"
              "picket_g{v=\"-inf\"} -Inf\n");
}

TEST(Exposition, HistogramByteForByte) {
    Exposition e;
    e.histogram("picket_latency_seconds", "Latency.", {{"op", "scan"}}, {0.005, 0.1, 1}, {1, 3, 4},
                5, 7.125);
    e.histogram("picket_latency_seconds", "Latency.", {}, {0.005, 0.1, 1}, {0, 0, 0}, 0, 0);
    EXPECT_EQ(e.render(),
              "# HELP picket_latency_seconds Latency.\n"
              "# TYPE picket_latency_seconds histogram\n"
              "picket_latency_seconds_bucket{op=\"scan\",le=\"0.005\"} 1\n"
              "picket_latency_seconds_bucket{op=\"scan\",le=\"0.1\"} 3\n"
              "picket_latency_seconds_bucket{op=\"scan\",le=\"1\"} 4\n"
              "picket_latency_seconds_bucket{op=\"scan\",le=\"+Inf\"} 5\n"
              "picket_latency_seconds_sum{op=\"scan\"} 7.125\n"
              "picket_latency_seconds_count{op=\"scan\"} 5\n"
              "picket_latency_seconds_bucket{le=\"0.005\"} 0\n"
              "picket_latency_seconds_bucket{le=\"0.1\"} 0\n"
              "picket_latency_seconds_bucket{le=\"1\"} 0\n"
              "picket_latency_seconds_bucket{le=\"+Inf\"} 0\n"
              "picket_latency_seconds_sum 0\n"
              "picket_latency_seconds_count 0\n");
}

TEST(Exposition, DeclaredFamilyWithoutSamplesRendersHelpAndType) {
    Exposition e;
    e.declare("picket_empty_total", "Nothing yet.", Type::kCounter);
    e.declare("picket_hist_seconds", "No series.", Type::kHistogram);
    e.declare("picket_empty_total", "Nothing yet.", Type::kCounter);  // same again: no-op
    EXPECT_EQ(e.render(),
              "# HELP picket_empty_total Nothing yet.\n"
              "# TYPE picket_empty_total counter\n"
              "# HELP picket_hist_seconds No series.\n"
              "# TYPE picket_hist_seconds histogram\n");
}

TEST(Exposition, RejectsBadInput) {
    Exposition e;
    EXPECT_THROW(e.counter("1bad", "h", {}, 1), std::invalid_argument);
    EXPECT_THROW(e.counter("bad-name", "h", {}, 1), std::invalid_argument);
    EXPECT_THROW(e.counter("picket_ok_total", "h", {{"__reserved", "x"}}, 1),
                 std::invalid_argument);
    EXPECT_THROW(e.counter("picket_ok_total", "h", {{"a-b", "x"}}, 1), std::invalid_argument);
    EXPECT_THROW(e.counter("picket_ok_total", "h", {{"a", "1"}, {"a", "2"}}, 1),
                 std::invalid_argument);
    e.counter("picket_ok_total", "h", {}, 1);
    EXPECT_THROW(e.gauge("picket_ok_total", "h", {}, 1), std::invalid_argument);  // other type
    EXPECT_THROW(e.counter("picket_ok_total", "other help", {}, 1), std::invalid_argument);
    EXPECT_THROW(e.add("picket_h", "h", Type::kHistogram, {}, 1), std::invalid_argument);
    EXPECT_THROW(e.histogram("picket_h", "h", {}, {1, 2}, {1}, 1, 1), std::invalid_argument);
    EXPECT_THROW(e.histogram("picket_h", "h", {}, {2, 1}, {0, 0}, 0, 0), std::invalid_argument);
    EXPECT_THROW(e.histogram("picket_h", "h", {{"le", "1"}}, {1}, {0}, 0, 0),
                 std::invalid_argument);
    EXPECT_EQ(e.render(),
              "# HELP picket_ok_total h\n"
              "# TYPE picket_ok_total counter\n"
              "picket_ok_total 1\n");
}

TEST(Instruments, CounterAndGauge) {
    Counter c;
    c.inc();
    c.inc(2.5);
    c.inc(-1);  // ignored: counters only go up
    c.inc(std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(c.value(), 3.5);
    Gauge g;
    g.set(10);
    g.add(-12.5);
    EXPECT_EQ(g.value(), -2.5);
}

TEST(Instruments, HistogramSnapshot) {
    Histogram h({1, 2, 5});
    for (double v : {0.5, 1.0, 1.5, 2.0, 4.0, 5.0, 6.0, 100.0}) {
        h.observe(v);
    }
    Histogram::Snapshot s = h.snapshot();
    EXPECT_EQ(s.bounds, (std::vector<double>{1, 2, 5}));
    EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4, 6}));  // upper bounds are inclusive
    EXPECT_EQ(s.count, 8u);
    EXPECT_EQ(s.sum, 120.0);
    h.observe(std::numeric_limits<double>::quiet_NaN());  // +Inf bucket, NaN sum
    s = h.snapshot();
    EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4, 6}));
    EXPECT_EQ(s.count, 9u);
    EXPECT_TRUE(std::isnan(s.sum));
    EXPECT_THROW(Histogram({1, 1}), std::invalid_argument);
    EXPECT_THROW(Histogram({1, std::numeric_limits<double>::infinity()}), std::invalid_argument);
}

TEST(Instruments, LatencyBuckets) {
    EXPECT_EQ(latency_buckets(),
              (std::vector<double>{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                   0.1, 0.25, 0.5, 1, 2.5, 5, 10}));
}

TEST(Instruments, ConcurrentUpdatesGiveExactTotals) {
    Registry r;
    Counter& c = r.counter("picket_conc_total", "C.");
    Histogram& h = r.histogram("picket_conc_seconds", "H.", {}, {0.5, 1});
    Gauge& g = r.gauge("picket_conc_gauge", "G.");
    constexpr int kThreads = 4;
    constexpr int kPerThread = 100000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < kPerThread; ++i) {
                c.inc();
                g.add(0.5);
                h.observe(i % 2 == 0 ? 0.25 : 0.75);  // exact in binary: the sum is exact too
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    EXPECT_EQ(c.value(), 400000.0);
    EXPECT_EQ(g.value(), 200000.0);
    Histogram::Snapshot s = h.snapshot();
    EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{200000, 400000}));
    EXPECT_EQ(s.count, 400000u);
    EXPECT_EQ(s.sum, 200000.0);
}

TEST(Registry, SameNameAndLabelsReturnSameInstrument) {
    Registry r;
    Counter& a = r.counter("picket_req_total", "Requests.", {{"code", "200"}, {"method", "get"}});
    Counter& b = r.counter("picket_req_total", "Requests.", {{"code", "200"}, {"method", "get"}});
    Counter& reordered =
        r.counter("picket_req_total", "Requests.", {{"method", "get"}, {"code", "200"}});
    Counter& other =
        r.counter("picket_req_total", "Requests.", {{"code", "500"}, {"method", "get"}});
    EXPECT_EQ(&a, &b);
    EXPECT_EQ(&a, &reordered);
    EXPECT_NE(&a, &other);
    Histogram& h1 = r.histogram("picket_h_seconds", "H.", {}, {1, 2});
    Histogram& h2 = r.histogram("picket_h_seconds", "H.", {}, {1, 2});
    EXPECT_EQ(&h1, &h2);
    EXPECT_EQ(&r.gauge("picket_g", "G."), &r.gauge("picket_g", "G."));
}

TEST(Registry, ConflictsAndBadNamesThrow) {
    Registry r;
    r.counter("picket_req_total", "Requests.");
    EXPECT_THROW(r.gauge("picket_req_total", "Requests."), std::invalid_argument);
    EXPECT_THROW(r.counter("picket_req_total", "Other help."), std::invalid_argument);
    r.histogram("picket_h_seconds", "H.", {}, {1, 2});
    EXPECT_THROW(r.histogram("picket_h_seconds", "H.", {{"a", "b"}}, {1, 3}),
                 std::invalid_argument);
    EXPECT_THROW(r.counter("bad name", "h"), std::invalid_argument);
    EXPECT_THROW(r.counter("9lives_total", "h"), std::invalid_argument);
    EXPECT_THROW(r.gauge("picket_ok", "h", {{"__meta", "x"}}), std::invalid_argument);
    EXPECT_THROW(r.gauge("picket_ok", "h", {{"bad.label", "x"}}), std::invalid_argument);
    EXPECT_THROW(r.histogram("picket_h2_seconds", "h", {{"le", "1"}}, {1}), std::invalid_argument);
    EXPECT_THROW(r.histogram("picket_h3_seconds", "h", {}, {2, 1}), std::invalid_argument);
    EXPECT_THROW(r.counter("picket_metrics_collector_errors_total", "h"), std::invalid_argument);
}

TEST(Registry, RendersOwnedInstrumentsThenCollectors) {
    Registry r;
    r.counter("picket_requests_total", "Requests served.", {{"code", "200"}}).inc(7);
    r.counter("picket_requests_total", "Requests served.", {{"code", "404"}}).inc();
    r.gauge("picket_queue_depth", "Items queued.").set(3);
    Histogram& h = r.histogram("picket_scan_seconds", "Scan time.", {}, {0.001, 0.01, 0.1});
    h.observe(0.0005);
    h.observe(0.05);
    h.observe(0.5);
    r.add_collector([](Exposition& e) {
        e.gauge("picket_sensors", "Known sensors.", {{"state", "up"}}, 2);
        e.gauge("picket_sensors", "Known sensors.", {{"state", "down"}}, 1);
    });
    r.add_collector([](Exposition& e) {
        // Same family as an owned instrument: merged into it.
        e.gauge("picket_queue_depth", "Items queued.", {{"queue", "alerts"}}, 0);
    });
    EXPECT_EQ(r.render(),
              "# HELP picket_requests_total Requests served.\n"
              "# TYPE picket_requests_total counter\n"
              "picket_requests_total{code=\"200\"} 7\n"
              "picket_requests_total{code=\"404\"} 1\n"
              "# HELP picket_queue_depth Items queued.\n"
              "# TYPE picket_queue_depth gauge\n"
              "picket_queue_depth 3\n"
              "picket_queue_depth{queue=\"alerts\"} 0\n"
              "# HELP picket_scan_seconds Scan time.\n"
              "# TYPE picket_scan_seconds histogram\n"
              "picket_scan_seconds_bucket{le=\"0.001\"} 1\n"
              "picket_scan_seconds_bucket{le=\"0.01\"} 1\n"
              "picket_scan_seconds_bucket{le=\"0.1\"} 2\n"
              "picket_scan_seconds_bucket{le=\"+Inf\"} 3\n"
              "picket_scan_seconds_sum 0.5505\n"
              "picket_scan_seconds_count 3\n"
              "# HELP picket_sensors Known sensors.\n"
              "# TYPE picket_sensors gauge\n"
              "picket_sensors{state=\"up\"} 2\n"
              "picket_sensors{state=\"down\"} 1\n"
              "# HELP picket_metrics_collector_errors_total Scrapes on which a metrics collector "
              "threw; its series were left out of that scrape.\n"
              "# TYPE picket_metrics_collector_errors_total counter\n"
              "picket_metrics_collector_errors_total 0\n");
}

TEST(Registry, ThrowingCollectorIsSkippedAndCounted) {
    Registry r;
    r.counter("picket_a_total", "A.").inc(1);
    r.add_collector([](Exposition& e) {
        e.gauge("picket_partial", "Half written.", {}, 1);
        throw std::runtime_error("state unavailable");
    });
    r.add_collector([](Exposition& e) { e.gauge("picket_b", "B.", {}, 2); });
    r.add_collector([](Exposition& e) {
        e.counter("picket_a_total", "Different help.", {}, 1);  // conflict: throws too
    });
    const std::string tail =
        "# HELP picket_metrics_collector_errors_total Scrapes on which a metrics collector "
        "threw; its series were left out of that scrape.\n"
        "# TYPE picket_metrics_collector_errors_total counter\n";
    const std::string body =
        "# HELP picket_a_total A.\n"
        "# TYPE picket_a_total counter\n"
        "picket_a_total 1\n"
        "# HELP picket_b B.\n"
        "# TYPE picket_b gauge\n"
        "picket_b 2\n";
    EXPECT_EQ(r.render(), body + tail + "picket_metrics_collector_errors_total 2\n");
    EXPECT_EQ(r.render(), body + tail + "picket_metrics_collector_errors_total 4\n");
}

TEST(Registry, EmptyRegistryExposesItsOwnCounter) {
    Registry r;
    EXPECT_EQ(r.render(),
              "# HELP picket_metrics_collector_errors_total Scrapes on which a metrics collector "
              "threw; its series were left out of that scrape.\n"
              "# TYPE picket_metrics_collector_errors_total counter\n"
              "picket_metrics_collector_errors_total 0\n");
}

TEST(Registry, CollectorMayCreateInstruments) {
    Registry r;
    r.add_collector([&r](Exposition&) { r.counter("picket_lazy_total", "Lazy.").inc(); });
    r.render();  // creates the counter (after the owned families were rendered)
    // The second scrape shows the first increment: owned families are read before collectors.
    EXPECT_EQ(r.render(),
              "# HELP picket_lazy_total Lazy.\n"
              "# TYPE picket_lazy_total counter\n"
              "picket_lazy_total 1\n"
              "# HELP picket_metrics_collector_errors_total Scrapes on which a metrics collector "
              "threw; its series were left out of that scrape.\n"
              "# TYPE picket_metrics_collector_errors_total counter\n"
              "picket_metrics_collector_errors_total 0\n");
}

TEST(Registry, ConcurrentRendersAndUpdates) {
    Registry r;
    Counter& c = r.counter("picket_c_total", "C.");
    r.add_collector([](Exposition& e) { e.gauge("picket_g", "G.", {}, 1); });
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 200; ++i) {
                r.render();
            }
        });
        threads.emplace_back([&] {
            for (int i = 0; i < 10000; ++i) {
                c.inc();
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    EXPECT_EQ(c.value(), 20000.0);
}

}  // namespace
}  // namespace picket::metrics
