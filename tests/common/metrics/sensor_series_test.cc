#include "common/metrics/sensor_series.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace picket::metrics {
namespace {

// HELP/TYPE lines of every family, in declaration order; the samples of family i go after
// kHeaders[i] in the expected texts below.
const char* const kHeaders[] = {
    "# HELP picket_sensor_up 1 if the sensor is connected (manager) or running.\n"
    "# TYPE picket_sensor_up gauge\n",
    "# HELP picket_sensor_info Constant 1; labels describe the sensor: host, version, capture, "
    "ips and its configured labels (label_*).\n"
    "# TYPE picket_sensor_info gauge\n",
    "# HELP picket_sensor_last_report_timestamp_seconds Unix time of the sensor's latest metrics "
    "report.\n"
    "# TYPE picket_sensor_last_report_timestamp_seconds gauge\n",
    "# HELP picket_sensor_packets_total Packets decoded.\n"
    "# TYPE picket_sensor_packets_total counter\n",
    "# HELP picket_sensor_bytes_total Bytes decoded.\n"
    "# TYPE picket_sensor_bytes_total counter\n",
    "# HELP picket_sensor_drops_total Packets dropped, by reason: kernel (capture ring), queue "
    "(worker queue full), flow_memcap, defrag_memcap.\n"
    "# TYPE picket_sensor_drops_total counter\n",
    "# HELP picket_sensor_alerts_total Alerts raised.\n"
    "# TYPE picket_sensor_alerts_total counter\n",
    "# HELP picket_sensor_alerts_suppressed_total Alerts suppressed by thresholds or "
    "suppressions.\n"
    "# TYPE picket_sensor_alerts_suppressed_total counter\n",
    "# HELP picket_sensor_alert_queue_overflow_total Alerts lost because the alert queue was "
    "full.\n"
    "# TYPE picket_sensor_alert_queue_overflow_total counter\n",
    "# HELP picket_sensor_flows_active Flows currently tracked.\n"
    "# TYPE picket_sensor_flows_active gauge\n",
    "# HELP picket_sensor_flows_total Flows created.\n"
    "# TYPE picket_sensor_flows_total counter\n",
    "# HELP picket_sensor_rules_loaded Rules in the running ruleset.\n"
    "# TYPE picket_sensor_rules_loaded gauge\n",
    "# HELP picket_sensor_rules_failed Rules of the running ruleset that failed to load.\n"
    "# TYPE picket_sensor_rules_failed gauge\n",
    "# HELP picket_sensor_bundle_info Constant 1; the rule bundle in use (version \"0\" and sha "
    "\"\" = local rules).\n"
    "# TYPE picket_sensor_bundle_info gauge\n",
    "# HELP picket_sensor_reloads_total Rule reloads, by result (ok, failed).\n"
    "# TYPE picket_sensor_reloads_total counter\n",
    "# HELP picket_sensor_last_reload_timestamp_seconds Unix time of the latest successful rule "
    "reload.\n"
    "# TYPE picket_sensor_last_reload_timestamp_seconds gauge\n",
    "# HELP picket_sensor_reload_duration_seconds Duration of the latest rule reload.\n"
    "# TYPE picket_sensor_reload_duration_seconds gauge\n",
    "# HELP picket_sensor_ips_verdicts_total IPS verdicts, by verdict (pass, drop, reject); 0 "
    "when passive.\n"
    "# TYPE picket_sensor_ips_verdicts_total counter\n",
    "# HELP picket_sensor_worker_packets_total Packets processed, per worker.\n"
    "# TYPE picket_sensor_worker_packets_total counter\n",
    "# HELP picket_sensor_worker_bytes_total Bytes processed, per worker.\n"
    "# TYPE picket_sensor_worker_bytes_total counter\n",
    "# HELP picket_sensor_worker_max_batch_seconds Longest time a worker spent on one batch of "
    "packets.\n"
    "# TYPE picket_sensor_worker_max_batch_seconds gauge\n",
    "# HELP picket_sensor_eve_records_total EVE records written, by event type (other than alert "
    "and stats).\n"
    "# TYPE picket_sensor_eve_records_total counter\n",
    "# HELP picket_sensor_eve_dropped_total EVE records lost because a worker's record queue was "
    "full, by event type.\n"
    "# TYPE picket_sensor_eve_dropped_total counter\n",
    "# HELP picket_sensor_memuse_bytes Memory in use, by pool: flow, defrag, stream (TCP "
    "sessions), reassembly (TCP segments), app_layer (parser state).\n"
    "# TYPE picket_sensor_memuse_bytes gauge\n",
    "# HELP picket_sensor_app_layer_flows_total Flows by detected application protocol (http, "
    "tls, dns_tcp, dns_udp; failed_tcp/failed_udp: none recognised).\n"
    "# TYPE picket_sensor_app_layer_flows_total counter\n",
};
constexpr size_t kFamilies = sizeof(kHeaders) / sizeof(kHeaders[0]);

std::string render(const std::vector<SensorSeriesInput>& sensors) {
    Exposition e;
    append_sensor_series(e, sensors);
    return e.render();
}

// The counters of a busy inline sensor; flow.memcap_drops is deliberately missing (-> 0).
const std::map<std::string, uint64_t> kCounters = {
    {"decoder.pkts", 1000},
    {"decoder.bytes", 123456},
    {"capture.kernel_drops", 3},
    {"capture.queue_drops", 1},
    {"defrag.memcap_drops", 2},
    {"detect.alert", 17},
    {"detect.alerts_suppressed", 4},
    {"detect.alert_queue_overflow", 0},
    {"flow.active", 12},
    {"flow.total", 345},
    {"detect.rules_loaded", 3200},
    {"detect.rules_failed", 1},
    {"detect.reloads", 2},
    {"detect.reload_failures", 1},
    {"detect.last_reload_unix_ms", 1700000000123},
    {"detect.last_reload_us", 1500},
    {"ips.verdict.pass", 990},
    {"ips.verdict.drop", 9},
    {"ips.verdict.reject", 1},
    {"engine.max_batch_us", 250},
    {"eve.records.flow", 345},
    {"eve.records.http", 20},
    {"eve.dropped.flow", 0},
    {"eve.dropped.http", 3},
    {"flow.memuse", 4096},
    {"defrag.memuse", 512},
    {"tcp.memuse", 2048},
    {"tcp.reassembly_memuse", 65536},  // app_layer.memuse missing (-> 0)
    {"app_layer.flow.http", 5},
    {"app_layer.flow.tls", 6},
    {"app_layer.flow.dns_udp", 7},
    {"app_layer.flow.failed_tcp", 1},
    {"app_layer.tx.tls", 60},  // not exported
    {"decoder.ipv4", 999},     // not exported
};

SensorSeriesInput busy_sensor() {
    SensorSeriesInput s;
    s.sensor = "s1";
    s.up = true;
    s.host = "host-1";
    s.version = "0.1.0";
    s.capture = "nfqueue:0";
    s.ips = true;
    s.labels = {{"site-a.dc", "eu \"west\""}, {"role", "edge"}};
    s.last_report_ns = 1700000000250000000;
    s.counters = &kCounters;
    s.workers = {{0, 600, 70000}, {1, 400, 53456}};
    s.bundle_version = 7;
    s.bundle_sha = "abc123";
    return s;
}

TEST(SensorSeries, LabelNames) {
    EXPECT_EQ(sensor_label_name("site-a.dc"), "label_site_a_dc");
    EXPECT_EQ(sensor_label_name("role"), "label_role");
    EXPECT_EQ(sensor_label_name("9x"), "label_9x");
    EXPECT_EQ(sensor_label_name("__x"), "label___x");
    EXPECT_EQ(sensor_label_name("a b/c:d"), "label_a_b_c_d");
    EXPECT_EQ(sensor_label_name("é"), "label___");  // two UTF-8 bytes
    EXPECT_EQ(sensor_label_name(""), "label_");
}

TEST(SensorSeries, EmptyFleetDeclaresEveryFamily) {
    std::string expected;
    for (const char* h : kHeaders) {
        expected += h;
    }
    EXPECT_EQ(render({}), expected);
    Exposition e;
    append_sensor_series(e, {});
    EXPECT_EQ(e.family_count(), 25u);
    EXPECT_EQ(kFamilies, 25u);
}

TEST(SensorSeries, OneSensorWithCounters) {
    const std::vector<std::string> samples = {
        "picket_sensor_up{sensor=\"s1\"} 1\n",
        "picket_sensor_info{sensor=\"s1\",host=\"host-1\",version=\"0.1.0\",capture=\"nfqueue:0\","
        "ips=\"true\",label_role=\"edge\",label_site_a_dc=\"eu \\\"west\\\"\"} 1\n",
        "picket_sensor_last_report_timestamp_seconds{sensor=\"s1\"} 1.70000000025e+09\n",
        "picket_sensor_packets_total{sensor=\"s1\"} 1000\n",
        "picket_sensor_bytes_total{sensor=\"s1\"} 123456\n",
        "picket_sensor_drops_total{sensor=\"s1\",reason=\"kernel\"} 3\n"
        "picket_sensor_drops_total{sensor=\"s1\",reason=\"queue\"} 1\n"
        "picket_sensor_drops_total{sensor=\"s1\",reason=\"flow_memcap\"} 0\n"
        "picket_sensor_drops_total{sensor=\"s1\",reason=\"defrag_memcap\"} 2\n",
        "picket_sensor_alerts_total{sensor=\"s1\"} 17\n",
        "picket_sensor_alerts_suppressed_total{sensor=\"s1\"} 4\n",
        "picket_sensor_alert_queue_overflow_total{sensor=\"s1\"} 0\n",
        "picket_sensor_flows_active{sensor=\"s1\"} 12\n",
        "picket_sensor_flows_total{sensor=\"s1\"} 345\n",
        "picket_sensor_rules_loaded{sensor=\"s1\"} 3200\n",
        "picket_sensor_rules_failed{sensor=\"s1\"} 1\n",
        "picket_sensor_bundle_info{sensor=\"s1\",version=\"7\",sha=\"abc123\"} 1\n",
        "picket_sensor_reloads_total{sensor=\"s1\",result=\"ok\"} 2\n"
        "picket_sensor_reloads_total{sensor=\"s1\",result=\"failed\"} 1\n",
        "picket_sensor_last_reload_timestamp_seconds{sensor=\"s1\"} 1.700000000123e+09\n",
        "picket_sensor_reload_duration_seconds{sensor=\"s1\"} 0.0015\n",
        "picket_sensor_ips_verdicts_total{sensor=\"s1\",verdict=\"pass\"} 990\n"
        "picket_sensor_ips_verdicts_total{sensor=\"s1\",verdict=\"drop\"} 9\n"
        "picket_sensor_ips_verdicts_total{sensor=\"s1\",verdict=\"reject\"} 1\n",
        "picket_sensor_worker_packets_total{sensor=\"s1\",worker=\"0\"} 600\n"
        "picket_sensor_worker_packets_total{sensor=\"s1\",worker=\"1\"} 400\n",
        "picket_sensor_worker_bytes_total{sensor=\"s1\",worker=\"0\"} 70000\n"
        "picket_sensor_worker_bytes_total{sensor=\"s1\",worker=\"1\"} 53456\n",
        "picket_sensor_worker_max_batch_seconds{sensor=\"s1\"} 0.00025\n",
        "picket_sensor_eve_records_total{sensor=\"s1\",type=\"flow\"} 345\n"
        "picket_sensor_eve_records_total{sensor=\"s1\",type=\"http\"} 20\n",
        "picket_sensor_eve_dropped_total{sensor=\"s1\",type=\"flow\"} 0\n"
        "picket_sensor_eve_dropped_total{sensor=\"s1\",type=\"http\"} 3\n",
        "picket_sensor_memuse_bytes{sensor=\"s1\",pool=\"flow\"} 4096\n"
        "picket_sensor_memuse_bytes{sensor=\"s1\",pool=\"defrag\"} 512\n"
        "picket_sensor_memuse_bytes{sensor=\"s1\",pool=\"stream\"} 2048\n"
        "picket_sensor_memuse_bytes{sensor=\"s1\",pool=\"reassembly\"} 65536\n"
        "picket_sensor_memuse_bytes{sensor=\"s1\",pool=\"app_layer\"} 0\n",
        "picket_sensor_app_layer_flows_total{sensor=\"s1\",protocol=\"http\"} 5\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s1\",protocol=\"tls\"} 6\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s1\",protocol=\"dns_tcp\"} 0\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s1\",protocol=\"dns_udp\"} 7\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s1\",protocol=\"failed_tcp\"} 1\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s1\",protocol=\"failed_udp\"} 0\n",
    };
    ASSERT_EQ(samples.size(), kFamilies);
    std::string expected;
    for (size_t i = 0; i < kFamilies; ++i) {
        expected += kHeaders[i];
        expected += samples[i];
    }
    EXPECT_EQ(render({busy_sensor()}), expected);
}

TEST(SensorSeries, SensorNotYetReportedAndPassiveSensor) {
    // s0 is known but silent: no counter series (they would read 0, then jump). s2 is passive,
    // reported an empty map, never reloaded: zeros, verdicts present, no reload timestamp.
    SensorSeriesInput s0;
    s0.sensor = "s0";
    s0.host = "h0";
    s0.version = "0.1.0";
    s0.capture = "af-packet:eth0";
    const std::map<std::string, uint64_t> none;
    SensorSeriesInput s2;
    s2.sensor = "s2";
    s2.up = true;
    s2.host = "h2";
    s2.version = "0.1.0";
    s2.capture = "pcap-file:/x.pcap";
    s2.labels = {{"a.b", "first"}, {"a_b", "second"}};  // both sanitise to label_a_b
    s2.counters = &none;
    s2.last_report_ns = 1000000000;
    const std::vector<std::string> samples = {
        "picket_sensor_up{sensor=\"s0\"} 0\n"
        "picket_sensor_up{sensor=\"s2\"} 1\n",
        "picket_sensor_info{sensor=\"s0\",host=\"h0\",version=\"0.1.0\",capture=\"af-packet:eth0\","
        "ips=\"false\"} 1\n"
        "picket_sensor_info{sensor=\"s2\",host=\"h2\",version=\"0.1.0\","
        "capture=\"pcap-file:/x.pcap\",ips=\"false\",label_a_b=\"first\"} 1\n",
        "picket_sensor_last_report_timestamp_seconds{sensor=\"s2\"} 1\n",
        "picket_sensor_packets_total{sensor=\"s2\"} 0\n",
        "picket_sensor_bytes_total{sensor=\"s2\"} 0\n",
        "picket_sensor_drops_total{sensor=\"s2\",reason=\"kernel\"} 0\n"
        "picket_sensor_drops_total{sensor=\"s2\",reason=\"queue\"} 0\n"
        "picket_sensor_drops_total{sensor=\"s2\",reason=\"flow_memcap\"} 0\n"
        "picket_sensor_drops_total{sensor=\"s2\",reason=\"defrag_memcap\"} 0\n",
        "picket_sensor_alerts_total{sensor=\"s2\"} 0\n",
        "picket_sensor_alerts_suppressed_total{sensor=\"s2\"} 0\n",
        "picket_sensor_alert_queue_overflow_total{sensor=\"s2\"} 0\n",
        "picket_sensor_flows_active{sensor=\"s2\"} 0\n",
        "picket_sensor_flows_total{sensor=\"s2\"} 0\n",
        "picket_sensor_rules_loaded{sensor=\"s2\"} 0\n",
        "picket_sensor_rules_failed{sensor=\"s2\"} 0\n",
        "picket_sensor_bundle_info{sensor=\"s0\",version=\"0\",sha=\"\"} 1\n"
        "picket_sensor_bundle_info{sensor=\"s2\",version=\"0\",sha=\"\"} 1\n",
        "picket_sensor_reloads_total{sensor=\"s2\",result=\"ok\"} 0\n"
        "picket_sensor_reloads_total{sensor=\"s2\",result=\"failed\"} 0\n",
        "",
        "picket_sensor_reload_duration_seconds{sensor=\"s2\"} 0\n",
        "picket_sensor_ips_verdicts_total{sensor=\"s2\",verdict=\"pass\"} 0\n"
        "picket_sensor_ips_verdicts_total{sensor=\"s2\",verdict=\"drop\"} 0\n"
        "picket_sensor_ips_verdicts_total{sensor=\"s2\",verdict=\"reject\"} 0\n",
        "",
        "",
        "picket_sensor_worker_max_batch_seconds{sensor=\"s2\"} 0\n",
        "",  // a sensor that writes no records has no eve series
        "",
        "picket_sensor_memuse_bytes{sensor=\"s2\",pool=\"flow\"} 0\n"
        "picket_sensor_memuse_bytes{sensor=\"s2\",pool=\"defrag\"} 0\n"
        "picket_sensor_memuse_bytes{sensor=\"s2\",pool=\"stream\"} 0\n"
        "picket_sensor_memuse_bytes{sensor=\"s2\",pool=\"reassembly\"} 0\n"
        "picket_sensor_memuse_bytes{sensor=\"s2\",pool=\"app_layer\"} 0\n",
        "picket_sensor_app_layer_flows_total{sensor=\"s2\",protocol=\"http\"} 0\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s2\",protocol=\"tls\"} 0\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s2\",protocol=\"dns_tcp\"} 0\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s2\",protocol=\"dns_udp\"} 0\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s2\",protocol=\"failed_tcp\"} 0\n"
        "picket_sensor_app_layer_flows_total{sensor=\"s2\",protocol=\"failed_udp\"} 0\n",
    };
    ASSERT_EQ(samples.size(), kFamilies);
    std::string expected;
    for (size_t i = 0; i < kFamilies; ++i) {
        expected += kHeaders[i];
        expected += samples[i];
    }
    EXPECT_EQ(render({s0, s2}), expected);
}

// promtool (Debian's `prometheus` package) parses and lints the exposition the way the
// Prometheus server would read it.
TEST(SensorSeries, PromtoolAcceptsTheRendering) {
    if (access("/usr/bin/promtool", X_OK) != 0) {
        GTEST_SKIP() << "/usr/bin/promtool not installed (Debian package prometheus)";
    }
    Registry registry;
    registry.counter("picket_manager_reports_total", "Reports received.", {{"kind", "metrics"}})
        .inc(3);
    registry.gauge("picket_manager_sensors_connected", "Sensors connected.").set(1);
    registry
        .histogram("picket_manager_rpc_seconds", "RPC latency.", {{"method", "Report"}},
                   latency_buckets())
        .observe(0.003);
    SensorSeriesInput silent;
    silent.sensor = "s0";
    registry.add_collector([&](Exposition& e) {
        append_sensor_series(e, {busy_sensor(), silent});
    });

    char path[] = "/tmp/picket_metrics_promtool_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    {
        std::ofstream out(path);
        out << registry.render();
    }
    const std::string log_path = std::string(path) + ".out";
    const std::string cmd =
        "/usr/bin/promtool check metrics < " + std::string(path) + " > " + log_path + " 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream log(log_path);
    std::stringstream output;
    output << log.rdbuf();
    std::remove(path);
    std::remove(log_path.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << rc;
    EXPECT_EQ(WEXITSTATUS(rc), 0) << output.str();
    EXPECT_EQ(output.str(), "");
}

}  // namespace
}  // namespace picket::metrics
