#include "sensor/engine/engine.h"

#include "sensor/capture/inline.h"
#include "sensor/engine/eve_config.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <thread>

namespace picket::sensor::engine {
namespace {

uint32_t to_u32_seconds(double s) {
    return s > 4e9 ? 4000000000u : static_cast<uint32_t>(s);
}

// capture.nfqueue.*, capture.afpacket-inline.*, ips.*. After the mode and `workers` are known:
// NFQUEUE fixes the worker count (one queue per worker).
void read_ips_config(const Config& c, SensorConfig* s) {
    s->simulate_ips = c.get_bool("ips.simulate", false);
    s->malformed_drop = c.get_choice("ips.malformed-policy", "pass", {"pass", "drop"}) == "drop";
    s->fail_open = c.get_bool("ips.fail-open", false);

    const std::string queue = c.get_string("capture.nfqueue.queue", "0");
    capture::QueueRange range;
    try {
        range = capture::parse_queue_range(queue);
    } catch (const capture::CaptureError& e) {
        throw ConfigError(c.source() + ": capture.nfqueue.queue (--queue): " + e.what());
    }
    s->nfqueue.queue = range.first;
    s->nfqueue_count = range.count;
    s->nfqueue.snaplen = std::min<uint32_t>(s->snaplen, 65535);
    s->nfqueue.fail_open = c.get_bool("capture.nfqueue.fail-open", s->fail_open);
    s->nfqueue.max_len =
        static_cast<uint32_t>(c.get_int("capture.nfqueue.max-len", 4096, 1, 1 << 20));
    // 0 leaves the packets' own mark alone.
    s->nfqueue.mark =
        static_cast<uint32_t>(c.get_int("capture.nfqueue.mark", 0, 0, int64_t{UINT32_MAX}));
    s->nfqueue.use_mark = s->nfqueue.mark != 0;
    if (s->mode == CaptureMode::kNfqueue) {
        const std::string workers = c.get_string("workers", "auto");
        if (workers != "auto" && s->workers != range.count) {
            throw ConfigError(c.source() + ": workers: " + std::to_string(s->workers) +
                              " does not match capture.nfqueue.queue '" + queue + "' (" +
                              std::to_string(range.count) +
                              " queue(s)): NFQUEUE runs one worker per queue; leave workers at "
                              "auto or give as many queues");
        }
        s->workers = range.count;
    }

    const std::string bridge = c.get_string("capture.afpacket-inline.bridge", "");
    if (!bridge.empty()) {
        try {
            auto [if1, if2] = capture::parse_bridge(bridge);
            s->afpacket_inline.iface1 = if1;
            s->afpacket_inline.iface2 = if2;
        } catch (const capture::CaptureError& e) {
            throw ConfigError(c.source() +
                              ": capture.afpacket-inline.bridge (--bridge): " + e.what());
        }
    } else if (s->mode == CaptureMode::kAfPacketInline) {
        throw ConfigError(c.source() +
                          ": capture.mode afpacket-inline needs the two ports: --bridge IF1:IF2 "
                          "(capture.afpacket-inline.bridge)");
    }
    auto& ai = s->afpacket_inline;
    ai.block_size =
        static_cast<uint32_t>(c.get_size("capture.afpacket-inline.block-size", 1ULL << 20));
    ai.block_count =
        static_cast<uint32_t>(c.get_int("capture.afpacket-inline.block-count", 16, 2, 65536));
    ai.block_timeout_ms =
        static_cast<uint32_t>(c.get_int("capture.afpacket-inline.block-timeout", 1, 1, 10000));
    // The bridge uses two fanout groups, fanout-id and fanout-id + 1.
    ai.fanout_id = s->afpacket.fanout_id;
    if (s->mode == CaptureMode::kAfPacketInline && ai.fanout_id == 65535) {
        throw ConfigError(c.source() +
                          ": capture.afpacket.fanout-id: at most 65534 with afpacket-inline "
                          "(its second port uses fanout-id + 1)");
    }
    if (ai.block_size < 65536 || (ai.block_size & (ai.block_size - 1))) {
        throw ConfigError(c.source() +
                          ": capture.afpacket-inline.block-size: must be a power of two >= 64kb");
    }
}

// dpdk.* in Suricata's layout (eal-params, interfaces: [{interface, copy-iface}], copy-mode),
// plus the pool and ring sizes. After `snaplen` and `promisc` are known.
void read_dpdk_config(const Config& c, SensorConfig* s) {
    capture::DpdkOptions& d = s->dpdk;
    d.eal_args = c.get_string_list("dpdk.eal-params");
    const std::string copy_mode = c.get_choice("dpdk.copy-mode", "none", {"none", "ips"});
    d.inline_mode = copy_mode == "ips";
    d.mbufs = static_cast<uint32_t>(c.get_int("dpdk.mempool-size", 0, 0, int64_t{1} << 30));
    d.burst = static_cast<uint16_t>(c.get_int("dpdk.burst", 32, 1, capture::kMaxBatch));
    d.rx_descriptors = static_cast<uint16_t>(c.get_int("dpdk.rx-descriptors", 1024, 32, 32768));
    d.tx_descriptors = static_cast<uint16_t>(c.get_int("dpdk.tx-descriptors", 1024, 32, 32768));
    d.promisc = s->promisc;
    s->dpdk_stop_after_idle_sec = c.get_seconds("dpdk.stop-after-idle", 0);
    if (s->dpdk_stop_after_idle_sec < 0) {
        throw ConfigError(c.source() + ": dpdk.stop-after-idle: must be >= 0");
    }

    // A list of maps: common/config.h has no getter for it, so read the YAML directly.
    constexpr const char* kInterfaces = "dpdk.interfaces";
    // dpdk must be a map before it is indexed: operator[] on a scalar throws
    // YAML::BadSubscript, which main() does not catch (found by tests/fuzz/config_fuzz).
    const YAML::Node dpdk = c.root().IsMap() ? c.root()["dpdk"] : YAML::Node();
    if (dpdk && !dpdk.IsNull() && !dpdk.IsMap()) {
        throw ConfigError(c.source() + ": dpdk: expected a map");
    }
    const YAML::Node list = dpdk && dpdk.IsMap() ? dpdk["interfaces"] : YAML::Node();
    if (list && !list.IsNull()) {
        if (!list.IsSequence()) {
            throw ConfigError(c.source() +
                              ": dpdk.interfaces: expected a list of {interface: NAME, "
                              "copy-iface: NAME}");
        }
        for (size_t i = 0; i < list.size(); ++i) {
            const std::string key = std::string(kInterfaces) + "[" + std::to_string(i) + "]";
            const YAML::Node& entry = list[i];
            if (!entry.IsMap()) {
                throw ConfigError(c.source() + ": " + key +
                                  ": expected a map {interface: NAME, copy-iface: NAME}");
            }
            capture::DpdkInterface iface;
            for (const auto& kv : entry) {
                if (!kv.first.IsScalar()) {
                    throw ConfigError(c.source() + ": " + key +
                                      ": expected a map {interface: NAME, copy-iface: NAME}");
                }
                const std::string name = kv.first.as<std::string>();
                if (name != "interface" && name != "copy-iface") {
                    throw ConfigError(c.source() + ": " + key + "." + name +
                                      ": unknown key (expected interface, copy-iface)");
                }
                if (!kv.second.IsScalar()) {
                    throw ConfigError(c.source() + ": " + key + "." + name +
                                      ": expected a DPDK device name");
                }
                (name == "interface" ? iface.name : iface.copy_iface) = kv.second.as<std::string>();
            }
            if (iface.name.empty()) {
                throw ConfigError(c.source() + ": " + key +
                                  ".interface: missing (a DPDK device: net_pcap0, 0000:01:00.0)");
            }
            if (d.inline_mode && iface.copy_iface.empty()) {
                throw ConfigError(c.source() + ": " + key +
                                  ".copy-iface: needed with dpdk.copy-mode ips (the port "
                                  "accepted packets leave through)");
            }
            d.interfaces.push_back(std::move(iface));
        }
    }
    if (s->mode == CaptureMode::kDpdk && d.interfaces.empty()) {
        throw ConfigError(c.source() +
                          ": capture.mode dpdk needs dpdk.interfaces: [{interface: NAME, "
                          "copy-iface: NAME}, ...]");
    }
}

}  // namespace

SensorConfig load_sensor_config(const Config& c, bool require_input) {
    SensorConfig s;

    // Input. Offline files win over an interface, as with suricata -r.
    s.pcap_paths = c.get_string_list("pcap-file.paths");
    s.iface = c.get_string("capture.interface", "");
    std::string mode = c.get_choice("capture.mode", "afpacket",
                                    {"pcap", "afpacket", "nfqueue", "afpacket-inline", "dpdk"});
    const bool inline_mode = mode == "nfqueue" || mode == "afpacket-inline";
    if (!s.pcap_paths.empty()) {
        s.mode = CaptureMode::kPcapFile;
    } else if (inline_mode) {
        // Inline modes take their packets from netfilter or the bridge ports, not from -i.
        if (!s.iface.empty()) {
            throw ConfigError(c.source() + ": capture.interface (-i " + s.iface +
                              ") is not used with capture.mode " + mode +
                              (mode == "nfqueue" ? ": give the queues with --queue Q[:R]"
                                                 : ": give the ports with --bridge IF1:IF2"));
        }
        s.mode = mode == "nfqueue" ? CaptureMode::kNfqueue : CaptureMode::kAfPacketInline;
    } else if (mode == "dpdk") {
        // DPDK takes its ports from dpdk.interfaces (device names), not from -i.
        if (!s.iface.empty()) {
            throw ConfigError(c.source() + ": capture.interface (-i " + s.iface +
                              ") is not used with capture.mode dpdk: list the ports in "
                              "dpdk.interfaces");
        }
        s.mode = CaptureMode::kDpdk;
    } else if (!s.iface.empty()) {
        s.mode = mode == "pcap" ? CaptureMode::kPcapLive : CaptureMode::kAfPacket;
    } else if (require_input) {
        throw ConfigError(
            "no input: give pcap files with -r, an interface with -i (capture.interface) or "
            "an inline mode (--capture nfqueue --queue Q, --capture afpacket-inline --bridge "
            "IF1:IF2, --capture dpdk with dpdk.interfaces)");
    }

    std::string workers = c.get_string("workers", "auto");
    if (workers == "auto") {
        s.workers = std::max(1u, std::thread::hardware_concurrency());
    } else {
        s.workers = static_cast<uint32_t>(c.get_int("workers", 1, 1, 256));
    }
    const std::string stages = c.get_choice(
        "engine.stages", "detect", {"read", "decode", "flow", "stream", "app-layer", "detect"});
    for (size_t i = 0; i < std::size(kStageNames); ++i) {
        if (stages == kStageNames[i]) {
            s.stages = static_cast<Stage>(i);
        }
    }

    s.log_dir = c.get_string("default-log-dir", ".");
    s.stats_interval_sec = c.get_seconds("stats-interval", 8);
    s.stats_picket_counters = c.get_bool("stats-picket-counters", false);
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
    s.pcap_strict = c.get_bool("pcap-file.strict", false);
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

    read_dpdk_config(c, &s);
    read_ips_config(c, &s);

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
    s.flow.use_vlan = c.get_bool("vlan.use-for-tracking", true);
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

    // Stream, with Suricata's key names.
    s.stream.midstream = c.get_bool("stream.midstream", false);
    s.stream_async_oneside = c.get_bool("stream.async-oneside", false);
    s.stream_raw_on_ack = c.get_bool("stream.raw-on-ack", true);
    // auto (Suricata's default): inline exactly when verdicts are decided (IPS modes).
    const std::string stream_inline =
        c.get_choice("stream.inline", "no", {"yes", "no", "auto", "true", "false"});
    s.stream.inline_mode =
        stream_inline == "yes" || stream_inline == "true" || (stream_inline == "auto" && s.ips());
    s.stream.memcap = c.get_size("stream.memcap", s.stream.memcap);
    s.stream.reassembly_memcap = c.get_size("stream.reassembly.memcap", s.stream.reassembly_memcap);
    s.stream.reassembly_depth = c.get_size("stream.reassembly.depth", s.stream.reassembly_depth);
    // A checksum offloaded by the capturing host looks wrong in a pcap: the stream checks
    // only when checksum-validation is "yes", unless stream.checksum-validation says.
    s.stream.checksum_validation =
        c.get_bool("stream.checksum-validation", s.decode.checksum == decode::ChecksumMode::kYes);
    const std::string stream_policy = c.get_string("stream.reassembly.policy", "bsd");
    if (!stream::parse_policy(stream_policy, &s.stream.policy)) {
        throw ConfigError(c.source() +
                          ": stream.reassembly.policy: expected one of first, last, bsd, linux, "
                          "old-linux, windows, vista, solaris, hpux10, hpux11, irix, macos, got '" +
                          stream_policy + "'");
    }
    // host-os-policy: {windows: [10.0.0.0/8], linux: [...]} as in suricata.yaml.
    if (c.root()["host-os-policy"] && c.root()["host-os-policy"].IsMap()) {
        for (const auto& kv : c.root()["host-os-policy"]) {
            const std::string name = kv.first.as<std::string>();
            stream::Policy pol;
            if (!stream::parse_policy(name, &pol)) {
                throw ConfigError(c.source() + ": host-os-policy." + name +
                                  ": unknown policy (expected first, last, bsd, linux, windows, "
                                  "solaris, ...)");
            }
            for (const auto& net : c.get_string_list("host-os-policy." + name)) {
                stream::PolicyNet pn;
                if (!stream::parse_cidr(net, &pn)) {
                    throw ConfigError(c.source() + ": host-os-policy." + name + ": bad network '" +
                                      net + "'");
                }
                pn.policy = pol;
                s.stream.policies.push_back(pn);
            }
        }
    }

    // App layer: app-layer.protocols.<proto>.enabled (yes | no | detection-only).
    auto proto_enabled = [&](const char* key) {
        const std::string v =
            c.get_choice(key, "yes", {"yes", "no", "detection-only", "true", "false"});
        return v != "no" && v != "false";
    };
    s.app_layer.http = proto_enabled("app-layer.protocols.http.enabled");
    s.app_layer.tls = proto_enabled("app-layer.protocols.tls.enabled");
    {
        // What happens once a TLS handshake is done (tls::EncryptionHandling).
        const std::string v = c.get_choice("app-layer.protocols.tls.encryption-handling", "default",
                                           {"default", "bypass", "full"});
        s.app_layer.tls_config.encryption = v == "full" ? applayer::tls::EncryptionHandling::kFull
                                            : v == "bypass"
                                                ? applayer::tls::EncryptionHandling::kBypass
                                                : applayer::tls::EncryptionHandling::kDefault;
    }
    s.app_layer.ssh = proto_enabled("app-layer.protocols.ssh.enabled");
    s.app_layer.ftp = proto_enabled("app-layer.protocols.ftp.enabled");
    s.app_layer.ftp_config.max_line = static_cast<uint32_t>(
        c.get_size("app-layer.protocols.ftp.max-line-length", s.app_layer.ftp_config.max_line));
    s.app_layer.dns = proto_enabled("app-layer.protocols.dns.enabled");
    // The sensor's total for per-flow app state (parsers, buffers); each worker gets its share.
    s.app_layer.memcap = c.get_size("app-layer.memcap", s.app_layer.memcap);
    auto& hc = s.app_layer.http_config;
    hc.request_body_limit = c.get_size(
        "app-layer.protocols.http.libhtp.default-config.request-body-limit", hc.request_body_limit);
    hc.response_body_limit =
        c.get_size("app-layer.protocols.http.libhtp.default-config.response-body-limit",
                   hc.response_body_limit);
    hc.decompress_limit = c.get_size(
        "app-layer.protocols.http.libhtp.default-config.decompression-limit", hc.decompress_limit);
    hc.decompress_layer_limit = static_cast<uint32_t>(c.get_int(
        "app-layer.protocols.http.libhtp.default-config.response-body-decompress-layer-limit",
        hc.decompress_layer_limit, 0, 4));
    hc.double_decode = c.get_bool(
        "app-layer.protocols.http.libhtp.default-config.double-decode-path", hc.double_decode);
    hc.lzma_enabled =
        c.get_bool("app-layer.protocols.http.libhtp.default-config.lzma-enabled", hc.lzma_enabled);
    hc.lzma_memlimit = c.get_size("app-layer.protocols.http.libhtp.default-config.lzma-memlimit",
                                  hc.lzma_memlimit);
    hc.oversize_dir_length = static_cast<uint32_t>(
        c.get_int("app-layer.protocols.http.libhtp.default-config.oversize-dir-length",
                  hc.oversize_dir_length, 1, 65535));

    // Detection, with Suricata's key names.
    std::string rule_path = c.get_string("default-rule-path", "");
    for (const auto& f : c.get_string_list("rule-files")) {
        s.detect.rule_files.push_back(
            f.empty() || f[0] == '/' || rule_path.empty() ? f : rule_path + "/" + f);
    }
    // rule-syntax: the language of every rule file the sensor loads by itself (rule-files, -S,
    // -s; --rule-syntax sets it). A map is a bundle's per-file form (config.yaml, docs/bundles.md),
    // applied by the agent to the bundle's files; read as sensor.yaml (-c config.yaml) it is
    // left alone, so a bundle's overlay stays a valid sensor.yaml.
    if (const YAML::Node syntax = c.root()["rule-syntax"]; !syntax || !syntax.IsMap()) {
        const std::string v = c.get_choice("rule-syntax", "auto", {"auto", "suricata", "snort3"});
        s.detect.rule_syntax = v == "snort3"     ? detect::DetectConfig::FileSyntax::kSnort3
                               : v == "suricata" ? detect::DetectConfig::FileSyntax::kSuricata
                                                 : detect::DetectConfig::FileSyntax::kAuto;
    }
    s.detect.classification_file = c.get_string("classification-file", "");
    s.detect.reference_file = c.get_string("reference-config-file", "");
    s.detect.threshold_file = c.get_string("threshold-file", "");
    // acl-file: the 5-tuple ACL applied before detection (docs/acl.md); relative names are read
    // from default-rule-path, as rule-files are.
    const std::string acl = c.get_string("acl-file", "");
    s.detect.acl_file =
        acl.empty() || acl[0] == '/' || rule_path.empty() ? acl : rule_path + "/" + acl;
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
    // outputs: Suricata's list (- eve-log, - fast) or Picket's map (eve, fast).
    const FastLogConfig fast = read_fast_log_config(c);
    s.fast_log_enabled = fast.enabled;
    s.fast_log_filename = fast.filename;
    s.alert_queue_bytes = c.get_size("outputs.alert-queue-size", 4ULL << 20);
    s.eve = read_eve_config(c, s.ips());
    s.eve.sink.log_dir = s.log_dir;
    // The fields the engine reads today, until it reads s.eve itself.
    s.eve_enabled = s.eve.enabled;
    s.eve_filename = s.eve.sink.filename;
    s.alert_payload = s.eve.alert.payload;
    s.alert_payload_printable = s.eve.alert.payload_printable;
    s.alert_packet = s.eve.alert.packet;
    s.alert_verdict = s.eve.alert.verdict_set ? s.eve.alert.verdict : s.ips();
    s.alert_xff.enabled = s.eve.alert.xff_enabled;
    s.alert_xff.mode =
        s.eve.alert.xff_overwrite ? output::XffMode::kOverwrite : output::XffMode::kExtraData;
    s.alert_xff.reverse = s.eve.alert.xff_reverse;
    s.alert_xff.header = s.eve.alert.xff_header;
    s.guess_applayer_tx = c.get_bool("detect.guess-applayer-tx", false);
    return s;
}

}  // namespace picket::sensor::engine
