// The per-sensor Prometheus series, built from a sensor's flat stats counters (the EVE dotted
// names the sensor reports to the manager in every MetricsReport). One mapping for both
// exporters: the manager (one set per known sensor, from its latest report) and a sensor's own
// --metrics-listen (its live counters), so a dashboard works against either.
//
// Series (label `sensor` on all; counters only go up within one sensor process). Columns:
// name {labels}, type, source counter(s).
//   picket_sensor_up                              gauge    1 connected / 0 not
//   picket_sensor_info {host, version, ...}       gauge    1; labels host, version, capture,
//                                                          ips, label_K (sensor labels)
//   picket_sensor_last_report_timestamp_seconds   gauge    absent before the first report
//   picket_sensor_packets_total                   counter  decoder.pkts
//   picket_sensor_bytes_total                     counter  decoder.bytes
//   picket_sensor_drops_total {reason}            counter  kernel: capture.kernel_drops,
//                                                          queue: capture.queue_drops,
//                                                          flow_memcap: flow.memcap_drops,
//                                                          defrag_memcap: defrag.memcap_drops
//   picket_sensor_alerts_total                    counter  detect.alert
//   picket_sensor_alerts_suppressed_total         counter  detect.alerts_suppressed
//   picket_sensor_alert_queue_overflow_total      counter  detect.alert_queue_overflow
//   picket_sensor_flows_active                    gauge    flow.active
//   picket_sensor_flows_total                     counter  flow.total
//   picket_sensor_rules_loaded                    gauge    detect.rules_loaded
//   picket_sensor_rules_failed                    gauge    detect.rules_failed
//   picket_sensor_bundle_info {version, sha}      gauge    1 (version "0", sha "" = local)
//   picket_sensor_reloads_total {result}          counter  ok: detect.reloads,
//                                                          failed: detect.reload_failures
//   picket_sensor_last_reload_timestamp_seconds   gauge    detect.last_reload_unix_ms / 1000
//                                                          (absent while 0: never loaded)
//   picket_sensor_reload_duration_seconds         gauge    detect.last_reload_us / 1e6
//   picket_sensor_ips_verdicts_total {verdict}    counter  pass|drop|reject from
//                                                          ips.verdict.pass/.drop/.reject
//                                                          (0 on a passive sensor; the
//                                                          engine sets them to ips.accepted,
//                                                          blocked - rejected, rejected)
//   picket_sensor_worker_packets_total {worker}   counter  per-worker packets
//   picket_sensor_worker_bytes_total {worker}     counter  per-worker bytes
//   picket_sensor_worker_max_batch_seconds        gauge    engine.max_batch_us / 1e6
//   picket_sensor_eve_records_total {type}        counter  eve.records.<type> (absent for
//                                                          types the sensor does not write)
//   picket_sensor_eve_dropped_total {type}        counter  eve.dropped.<type> (likewise)
//   picket_sensor_memuse_bytes {pool}             gauge    flow: flow.memuse,
//                                                          defrag: defrag.memuse,
//                                                          stream: tcp.memuse,
//                                                          reassembly: tcp.reassembly_memuse,
//                                                          app_layer: app_layer.memuse
//   picket_sensor_app_layer_flows_total {protocol} counter app_layer.flow.<protocol>: http,
//                                                          tls, dns_tcp, dns_udp, failed_tcp,
//                                                          failed_udp
// A counter missing from the map is exported as 0 (a sensor that predates the counter), except
// where marked "absent"; a sensor with no report yet has only up, info, bundle_info and its
// worker series. Label values are bounded: reasons, verdicts, pools and protocols are fixed
// sets, worker ids are the sensor's worker count, sensor labels come from its configuration.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/metrics/metrics.h"

namespace picket::metrics {

struct SensorSeriesInput {
    std::string sensor;
    bool up = false;
    std::string host;
    std::string version;
    std::string capture;  // "af-packet:eth0", "pcap-file:/x.pcap", ...
    bool ips = false;
    std::map<std::string, std::string> labels;  // sensor labels -> picket_sensor_info label_K
    int64_t last_report_ns = 0;                 // 0 = no report yet
    const std::map<std::string, uint64_t>* counters = nullptr;  // null = none yet
    struct Worker {
        uint32_t worker = 0;
        uint64_t packets = 0;
        uint64_t bytes = 0;
    };
    std::vector<Worker> workers;
    uint64_t bundle_version = 0;
    std::string bundle_sha;
};

// Declares every family above (so an empty fleet still renders HELP/TYPE) and appends the
// series of each sensor in order.
void append_sensor_series(Exposition& out, const std::vector<SensorSeriesInput>& sensors);

// "site-a.dc" -> "label_site_a_dc": a sensor label key as a Prometheus label name.
std::string sensor_label_name(const std::string& key);

}  // namespace picket::metrics
