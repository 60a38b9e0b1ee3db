#include "common/metrics/sensor_series.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace picket::metrics {
namespace {

// One entry per family, in the order of the header's table (= rendering order).
struct FamilyDef {
    const char* name;
    const char* help;
    Type type;
};

constexpr FamilyDef kUp{"picket_sensor_up", "1 if the sensor is connected (manager) or running.",
                        Type::kGauge};
constexpr FamilyDef kInfo{
    "picket_sensor_info",
    "Constant 1; labels describe the sensor: host, version, capture, ips and its configured "
    "labels (label_*).",
    Type::kGauge};
constexpr FamilyDef kLastReport{"picket_sensor_last_report_timestamp_seconds",
                                "Unix time of the sensor's latest metrics report.", Type::kGauge};
constexpr FamilyDef kPackets{"picket_sensor_packets_total", "Packets decoded.", Type::kCounter};
constexpr FamilyDef kBytes{"picket_sensor_bytes_total", "Bytes decoded.", Type::kCounter};
constexpr FamilyDef kDrops{
    "picket_sensor_drops_total",
    "Packets dropped, by reason: kernel (capture ring), queue (worker queue full), flow_memcap, "
    "defrag_memcap.",
    Type::kCounter};
constexpr FamilyDef kAlerts{"picket_sensor_alerts_total", "Alerts raised.", Type::kCounter};
constexpr FamilyDef kAlertsSuppressed{"picket_sensor_alerts_suppressed_total",
                                      "Alerts suppressed by thresholds or suppressions.",
                                      Type::kCounter};
constexpr FamilyDef kAlertQueueOverflow{"picket_sensor_alert_queue_overflow_total",
                                        "Alerts lost because the alert queue was full.",
                                        Type::kCounter};
constexpr FamilyDef kFlowsActive{"picket_sensor_flows_active", "Flows currently tracked.",
                                 Type::kGauge};
constexpr FamilyDef kFlowsTotal{"picket_sensor_flows_total", "Flows created.", Type::kCounter};
constexpr FamilyDef kRulesLoaded{"picket_sensor_rules_loaded", "Rules in the running ruleset.",
                                 Type::kGauge};
constexpr FamilyDef kRulesFailed{"picket_sensor_rules_failed",
                                 "Rules of the running ruleset that failed to load.", Type::kGauge};
constexpr FamilyDef kBundleInfo{
    "picket_sensor_bundle_info",
    "Constant 1; the rule bundle in use (version \"0\" and sha \"\" = local rules).", Type::kGauge};
constexpr FamilyDef kReloads{"picket_sensor_reloads_total", "Rule reloads, by result (ok, failed).",
                             Type::kCounter};
constexpr FamilyDef kLastReload{"picket_sensor_last_reload_timestamp_seconds",
                                "Unix time of the latest successful rule reload.", Type::kGauge};
constexpr FamilyDef kReloadDuration{"picket_sensor_reload_duration_seconds",
                                    "Duration of the latest rule reload.", Type::kGauge};
constexpr FamilyDef kVerdicts{"picket_sensor_ips_verdicts_total",
                              "IPS verdicts, by verdict (pass, drop, reject); 0 when passive.",
                              Type::kCounter};
constexpr FamilyDef kWorkerPackets{"picket_sensor_worker_packets_total",
                                   "Packets processed, per worker.", Type::kCounter};
constexpr FamilyDef kWorkerBytes{"picket_sensor_worker_bytes_total", "Bytes processed, per worker.",
                                 Type::kCounter};
constexpr FamilyDef kWorkerMaxBatch{"picket_sensor_worker_max_batch_seconds",
                                    "Longest time a worker spent on one batch of packets.",
                                    Type::kGauge};
constexpr FamilyDef kEveRecords{"picket_sensor_eve_records_total",
                                "EVE records written, by event type (other than alert and stats).",
                                Type::kCounter};
constexpr FamilyDef kEveDropped{"picket_sensor_eve_dropped_total",
                                "EVE records lost because a worker's record queue was full, by "
                                "event type.",
                                Type::kCounter};

constexpr FamilyDef kMemuse{"picket_sensor_memuse_bytes",
                            "Memory in use, by pool: flow, defrag, stream (TCP sessions), "
                            "reassembly (TCP segments), app_layer (parser state).",
                            Type::kGauge};
constexpr FamilyDef kAppLayerFlows{"picket_sensor_app_layer_flows_total",
                                   "Flows by detected application protocol (http, tls, dns_tcp, "
                                   "dns_udp; failed_tcp/failed_udp: none recognised).",
                                   Type::kCounter};

// pool label -> the sensor's counter (a gauge of bytes in its module).
constexpr std::pair<const char*, const char*> kMemusePools[] = {
    {"flow", "flow.memuse"},           {"defrag", "defrag.memuse"},
    {"stream", "tcp.memuse"},          {"reassembly", "tcp.reassembly_memuse"},
    {"app_layer", "app_layer.memuse"},
};
constexpr std::pair<const char*, const char*> kAppLayerProtocols[] = {
    {"http", "app_layer.flow.http"},
    {"tls", "app_layer.flow.tls"},
    {"dns_tcp", "app_layer.flow.dns_tcp"},
    {"dns_udp", "app_layer.flow.dns_udp"},
    {"failed_tcp", "app_layer.flow.failed_tcp"},
    {"failed_udp", "app_layer.flow.failed_udp"},
};

constexpr const FamilyDef* kAllFamilies[] = {
    &kUp,
    &kInfo,
    &kLastReport,
    &kPackets,
    &kBytes,
    &kDrops,
    &kAlerts,
    &kAlertsSuppressed,
    &kAlertQueueOverflow,
    &kFlowsActive,
    &kFlowsTotal,
    &kRulesLoaded,
    &kRulesFailed,
    &kBundleInfo,
    &kReloads,
    &kLastReload,
    &kReloadDuration,
    &kVerdicts,
    &kWorkerPackets,
    &kWorkerBytes,
    &kWorkerMaxBatch,
    &kEveRecords,
    &kEveDropped,
    &kMemuse,
    &kAppLayerFlows,
};

void put(Exposition& out, const FamilyDef& f, const Labels& labels, double value) {
    out.add(f.name, f.help, f.type, labels, value);
}

// A counter the sensor did not report (it predates the counter) reads 0.
double value_of(const std::map<std::string, uint64_t>& counters, const char* name) {
    auto it = counters.find(name);
    return it == counters.end() ? 0 : static_cast<double>(it->second);
}

Labels with(const Labels& base, std::string key, std::string value) {
    Labels l = base;
    l.emplace_back(std::move(key), std::move(value));
    return l;
}

void append_one(Exposition& out, const SensorSeriesInput& s) {
    const Labels base = {{"sensor", s.sensor}};
    put(out, kUp, base, s.up ? 1 : 0);

    Labels info = {{"sensor", s.sensor},
                   {"host", s.host},
                   {"version", s.version},
                   {"capture", s.capture},
                   {"ips", s.ips ? "true" : "false"}};
    // Sorted by the sanitised name; two keys that sanitise alike ("a.b", "a_b") would repeat a
    // label name and break the sample, so the first key in map order wins.
    std::vector<std::pair<std::string, std::string>> extra;
    for (const auto& [key, value] : s.labels) {
        extra.emplace_back(sensor_label_name(key), value);
    }
    std::stable_sort(extra.begin(), extra.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < extra.size(); ++i) {
        if (i == 0 || extra[i].first != extra[i - 1].first) {
            info.push_back(extra[i]);
        }
    }
    put(out, kInfo, info, 1);

    if (s.last_report_ns > 0) {
        // Split before converting: ns since 1970 exceed 2^53, seconds and the fraction do not.
        const double seconds = static_cast<double>(s.last_report_ns / 1'000'000'000) +
                               static_cast<double>(s.last_report_ns % 1'000'000'000) / 1e9;
        put(out, kLastReport, base, seconds);
    }

    // A sensor not yet heard from has no counters: its counter series stay absent rather than
    // read 0, because a 0 followed by the first real report looks like a jump to rate().
    if (s.counters != nullptr) {
        auto get = [&s](const char* name) { return value_of(*s.counters, name); };
        put(out, kPackets, base, get("decoder.pkts"));
        put(out, kBytes, base, get("decoder.bytes"));
        put(out, kDrops, with(base, "reason", "kernel"), get("capture.kernel_drops"));
        put(out, kDrops, with(base, "reason", "queue"), get("capture.queue_drops"));
        put(out, kDrops, with(base, "reason", "flow_memcap"), get("flow.memcap_drops"));
        put(out, kDrops, with(base, "reason", "defrag_memcap"), get("defrag.memcap_drops"));
        put(out, kAlerts, base, get("detect.alert"));
        put(out, kAlertsSuppressed, base, get("detect.alerts_suppressed"));
        put(out, kAlertQueueOverflow, base, get("detect.alert_queue_overflow"));
        put(out, kFlowsActive, base, get("flow.active"));
        put(out, kFlowsTotal, base, get("flow.total"));
        put(out, kRulesLoaded, base, get("detect.rules_loaded"));
        put(out, kRulesFailed, base, get("detect.rules_failed"));
    }

    put(out, kBundleInfo,
        {{"sensor", s.sensor},
         {"version", std::to_string(s.bundle_version)},
         {"sha", s.bundle_sha}},
        1);

    if (s.counters != nullptr) {
        auto get = [&s](const char* name) { return value_of(*s.counters, name); };
        put(out, kReloads, with(base, "result", "ok"), get("detect.reloads"));
        put(out, kReloads, with(base, "result", "failed"), get("detect.reload_failures"));
        if (const double ms = get("detect.last_reload_unix_ms"); ms != 0) {
            put(out, kLastReload, base, ms / 1e3);
        }
        put(out, kReloadDuration, base, get("detect.last_reload_us") / 1e6);
        put(out, kVerdicts, with(base, "verdict", "pass"), get("ips.verdict.pass"));
        put(out, kVerdicts, with(base, "verdict", "drop"), get("ips.verdict.drop"));
        put(out, kVerdicts, with(base, "verdict", "reject"), get("ips.verdict.reject"));
    }

    for (const SensorSeriesInput::Worker& w : s.workers) {
        put(out, kWorkerPackets, with(base, "worker", std::to_string(w.worker)),
            static_cast<double>(w.packets));
    }
    for (const SensorSeriesInput::Worker& w : s.workers) {
        put(out, kWorkerBytes, with(base, "worker", std::to_string(w.worker)),
            static_cast<double>(w.bytes));
    }
    if (s.counters != nullptr) {
        put(out, kWorkerMaxBatch, base, value_of(*s.counters, "engine.max_batch_us") / 1e6);
        // Present only for the record types the sensor writes (eve.records.<type>).
        for (const auto& [family, prefix] :
             {std::pair{&kEveRecords, std::string("eve.records.")},
              std::pair{&kEveDropped, std::string("eve.dropped.")}}) {
            for (auto it = s.counters->lower_bound(prefix);
                 it != s.counters->end() && it->first.compare(0, prefix.size(), prefix) == 0;
                 ++it) {
                put(out, *family, with(base, "type", it->first.substr(prefix.size())),
                    static_cast<double>(it->second));
            }
        }
        for (const auto& [pool, counter] : kMemusePools) {
            put(out, kMemuse, with(base, "pool", pool), value_of(*s.counters, counter));
        }
        for (const auto& [protocol, counter] : kAppLayerProtocols) {
            put(out, kAppLayerFlows, with(base, "protocol", protocol),
                value_of(*s.counters, counter));
        }
    }
}

}  // namespace

std::string sensor_label_name(const std::string& key) {
    std::string out = "label_";
    out.reserve(out.size() + key.size());
    for (char c : key) {
        const bool ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out += ok ? c : '_';
    }
    return out;
}

void append_sensor_series(Exposition& out, const std::vector<SensorSeriesInput>& sensors) {
    for (const FamilyDef* f : kAllFamilies) {
        out.declare(f->name, f->help, f->type);
    }
    for (const SensorSeriesInput& s : sensors) {
        append_one(out, s);
    }
}

}  // namespace picket::metrics
