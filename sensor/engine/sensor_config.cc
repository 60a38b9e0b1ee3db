#include "sensor/engine/engine.h"

#include <thread>

namespace picket::sensor::engine {
namespace {

uint32_t to_u32_seconds(double s) {
    return s > 4e9 ? 4000000000u : static_cast<uint32_t>(s);
}

}  // namespace

SensorConfig load_sensor_config(const Config& c, bool require_input) {
    SensorConfig s;

    // Input. Offline files win over an interface, as with suricata -r.
    s.pcap_paths = c.get_string_list("pcap-file.paths");
    s.iface = c.get_string("capture.interface", "");
    std::string mode = c.get_choice("capture.mode", "afpacket", {"pcap", "afpacket"});
    if (!s.pcap_paths.empty()) {
        s.mode = CaptureMode::kPcapFile;
    } else if (!s.iface.empty()) {
        s.mode = mode == "pcap" ? CaptureMode::kPcapLive : CaptureMode::kAfPacket;
    } else if (require_input) {
        throw ConfigError(
            "no input: give pcap files with -r or an interface with -i "
            "(capture.interface)");
    }

    std::string workers = c.get_string("workers", "auto");
    if (workers == "auto") {
        s.workers = std::max(1u, std::thread::hardware_concurrency());
    } else {
        s.workers = static_cast<uint32_t>(c.get_int("workers", 1, 1, 256));
    }
    const std::string stages =
        c.get_choice("engine.stages", "detect", {"read", "decode", "flow", "detect"});
    s.stages = stages == "read"     ? Stage::kRead
               : stages == "decode" ? Stage::kDecode
               : stages == "flow"   ? Stage::kFlow
                                    : Stage::kDetect;

    s.log_dir = c.get_string("default-log-dir", ".");
    s.eve_enabled = c.get_bool("outputs.eve.enabled", true);
    s.eve_filename = c.get_string("outputs.eve.filename", "eve.json");
    s.stats_interval_sec = c.get_seconds("stats-interval", 8);
    if (s.stats_interval_sec < 0.1) {
        throw ConfigError(c.source() + ": stats-interval: must be at least 0.1 seconds");
    }

    std::string csum = c.get_choice("checksum-validation", "auto", {"auto", "yes", "no"});
    s.decode.checksum = csum == "yes"  ? decode::ChecksumMode::kYes
                        : csum == "no" ? decode::ChecksumMode::kNo
                                       : decode::ChecksumMode::kAuto;

    s.snaplen = static_cast<uint32_t>(c.get_int("capture.snaplen", 262144, 64, 262144));
    s.promisc = c.get_bool("capture.promisc", true);
    s.pcap_buffer_bytes = c.get_size("capture.buffer-size", 32ULL << 20);
    // capture.queue-size: a plain number is a packet count (the ring keeps its default byte
    // size, so large packets still fit); a size with a unit is the ring's byte size.
    const std::string queue = c.get_string("capture.queue-size", "");
    if (!queue.empty() && queue.find_first_not_of("0123456789") == std::string::npos) {
        s.queue_packets =
            static_cast<uint64_t>(c.get_int("capture.queue-size", 0, 1, int64_t{1} << 32));
    } else if (!queue.empty()) {
        if (!parse_size(queue, &s.queue_bytes)) {
            throw ConfigError(c.source() +
                              ": capture.queue-size: expected a packet count such as 4096 or a "
                              "ring size such as 8mb, got '" +
                              queue + "'");
        }
        if (s.queue_bytes < (2ULL << 20)) {
            throw ConfigError(c.source() +
                              ": capture.queue-size: a ring size must be at least 2mb (it holds "
                              "several maximum-size packets); a plain number is a packet count");
        }
    }

    // Live-like replay of the files. Either key switches it on (even loop 1).
    s.pcap_replay = c.has("pcap-file.loop") || c.has("pcap-file.rate");
    s.pcap_loops = static_cast<uint64_t>(c.get_int("pcap-file.loop", 1, 0, INT64_MAX));
    s.pcap_rate_pps = c.get_double("pcap-file.rate", 0);
    if (!(s.pcap_rate_pps >= 0 && s.pcap_rate_pps <= 1e9)) {  // also refuses NaN
        throw ConfigError(c.source() +
                          ": pcap-file.rate: must be a packet rate from 0 (unpaced) to 1e9");
    }
    if (s.pcap_replay && s.mode != CaptureMode::kPcapFile && require_input) {
        throw ConfigError(c.source() + ": " +
                          (c.has("pcap-file.loop") ? "pcap-file.loop (--pcap-loop)"
                                                   : "pcap-file.rate (--pcap-rate)") +
                          ": replays pcap files, but none are given (-r, pcap-file.paths)");
    }
    s.metrics_listen = c.get_string("metrics.listen", "");
    s.bpf = c.get_string("capture.bpf-filter", "");
    s.bpf_mode = c.get_choice("capture.bpf-mode", "kernel", {"kernel", "user"}) == "user"
                     ? capture::BpfMode::kUser
                     : capture::BpfMode::kKernel;

    s.afpacket.iface = s.iface;
    s.afpacket.promisc = s.promisc;
    s.afpacket.fanout_id =
        static_cast<uint16_t>(c.get_int("capture.afpacket.fanout-id", 0, 0, 65535));
    s.afpacket.block_size =
        static_cast<uint32_t>(c.get_size("capture.afpacket.block-size", 1ULL << 20));
    s.afpacket.block_count =
        static_cast<uint32_t>(c.get_int("capture.afpacket.block-count", 32, 2, 65536));
    s.afpacket.block_timeout_ms =
        static_cast<uint32_t>(c.get_int("capture.afpacket.block-timeout", 10, 1, 10000));
    if (s.afpacket.block_size < 65536 || (s.afpacket.block_size & (s.afpacket.block_size - 1))) {
        throw ConfigError(c.source() +
                          ": capture.afpacket.block-size: must be a power of two >= 64kb");
    }

    std::string policy = c.get_string("defrag.policy", "bsd");
    if (!defrag::parse_policy(policy.c_str(), &s.defrag.policy)) {
        throw ConfigError(c.source() +
                          ": defrag.policy: expected one of first, last, bsd, "
                          "linux, windows, solaris, bsd-right, got '" +
                          policy + "'");
    }
    s.defrag.timeout_ns = static_cast<int64_t>(c.get_seconds("defrag.timeout", 60) * 1e9);
    s.defrag.memcap = c.get_size("defrag.memcap", 32ULL << 20);
    s.defrag.max_trackers = static_cast<uint32_t>(c.get_int("defrag.trackers", 65535, 1, 1 << 24));
    s.defrag.max_frags_per_tracker =
        static_cast<uint32_t>(c.get_int("defrag.max-frags", 256, 2, 65535));

    s.flow.memcap = c.get_size("flow.memcap", 128ULL << 20);
    s.flow.hash_size = static_cast<uint32_t>(c.get_int("flow.hash-size", 65536, 1, 1 << 26));
    s.flow.emergency_recovery =
        static_cast<uint32_t>(c.get_int("flow.emergency-recovery", 30, 1, 100));
    auto& t = s.flow.timeouts;
    auto secs = [&](const char* key, uint32_t def) {
        return to_u32_seconds(c.get_seconds(key, def));
    };
    t.tcp_new = secs("flow-timeouts.tcp.new", t.tcp_new);
    t.tcp_established = secs("flow-timeouts.tcp.established", t.tcp_established);
    t.tcp_closed = secs("flow-timeouts.tcp.closed", t.tcp_closed);
    t.udp_new = secs("flow-timeouts.udp.new", t.udp_new);
    t.udp_established = secs("flow-timeouts.udp.established", t.udp_established);
    t.icmp_new = secs("flow-timeouts.icmp.new", t.icmp_new);
    t.icmp_established = secs("flow-timeouts.icmp.established", t.icmp_established);
    t.other_new = secs("flow-timeouts.default.new", t.other_new);
    t.other_established = secs("flow-timeouts.default.established", t.other_established);
    t.emergency_new = secs("flow-timeouts.tcp.emergency-new", t.emergency_new);
    t.emergency_established =
        secs("flow-timeouts.tcp.emergency-established", t.emergency_established);
    t.emergency_closed = secs("flow-timeouts.tcp.emergency-closed", t.emergency_closed);

    // Detection, with Suricata's key names.
    std::string rule_path = c.get_string("default-rule-path", "");
    for (const auto& f : c.get_string_list("rule-files")) {
        s.detect.rule_files.push_back(
            f.empty() || f[0] == '/' || rule_path.empty() ? f : rule_path + "/" + f);
    }
    s.detect.classification_file = c.get_string("classification-file", "");
    s.detect.reference_file = c.get_string("reference-config-file", "");
    s.detect.threshold_file = c.get_string("threshold-file", "");
    s.detect.pcre_jit = c.get_bool("detect.pcre-jit", true);
    detect::read_detect_settings(c, &s.detect);  // detect.mpm-algo, profiling.rules.*
    // 0 means "the default", as in Suricata.
    s.detect.packet_alert_max = static_cast<uint32_t>(c.get_int("packet-alert-max", 15, 0, 1000));
    if (s.detect.packet_alert_max == 0) {
        s.detect.packet_alert_max = 15;
    }
    if (c.root()["vars"] && c.root()["vars"].IsMap()) {
        const YAML::Node vars = c.root()["vars"];
        for (const char* group : {"address-groups", "port-groups"}) {
            const YAML::Node g = vars[group];
            if (!g || !g.IsMap()) {
                continue;
            }
            for (const auto& kv : g) {
                std::string key = kv.first.as<std::string>();
                std::string value = c.get_string(std::string("vars.") + group + "." + key, "");
                if (std::string(group) == "address-groups") {
                    s.detect.address_vars[key] = value;
                } else {
                    s.detect.port_vars[key] = value;
                }
            }
        }
    }
    s.fast_log_enabled = c.get_bool("outputs.fast.enabled", true);
    s.fast_log_filename = c.get_string("outputs.fast.filename", "fast.log");
    s.alert_payload = c.get_bool("outputs.eve.alert.payload", true);
    s.alert_payload_printable = c.get_bool("outputs.eve.alert.payload-printable", true);
    s.alert_packet = c.get_bool("outputs.eve.alert.packet", true);
    s.alert_queue_bytes = c.get_size("outputs.alert-queue-size", 4ULL << 20);
    return s;
}

}  // namespace picket::sensor::engine
