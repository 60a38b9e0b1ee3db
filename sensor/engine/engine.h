// The sensor's pipeline wiring: builds the capture source(s), one worker thread per queue
// running decode -> (user BPF) -> defrag -> flow to completion in batches, an optional reader
// thread that dispatches offline/libpcap packets to workers by a symmetric hash, and a stats
// thread that sums the workers' counters every stats interval into an EVE stats event.
// Inline (IPS) modes: NFQUEUE, the AF_PACKET bridge and DPDK with dpdk.copy-mode ips (one
// inline source per worker), or --simulate-ips on files: the worker sets each packet's verdict
// from drop / reject rules, the flow's drop mark and ips.malformed-policy, and rejects through
// its Responder. When the input ends, each worker flushes its flows before the final stats.
// Setup (load_sensor_config, Engine construction) throws; run() reports errors by status.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/stats.h"
#include "sensor/applayer/applayer.h"
#include "sensor/capture/capture.h"
#include "sensor/decode/decode.h"
#include "sensor/defrag/defrag.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/snort3_pdu.h"
#include "sensor/flow/flow.h"
#include "sensor/output/eve_config.h"
#include "sensor/output/output.h"
#include "sensor/stream/stream.h"

namespace picket::sensor::engine {

// Internal to the engine (worker_context.h): one worker's state and the pipeline's verdicts.
struct WorkerContext;
enum class PacketVerdict : uint8_t;
struct FlowVerdict;

// capture.mode: capture::CaptureMode (sensor/capture builds the sources of each mode).
using CaptureMode = capture::CaptureMode;

// engine.stages: how far each packet goes, so that --profile-configs can measure what each
// stage costs. Ordered: a stage runs every one before it. Below kDetect the rules are not
// even loaded.
enum class Stage : uint8_t {
    kRead,      // the workers take the packets in and count them; nothing else
    kDecode,    // + decode and IP defragmentation
    kFlow,      // + flow table
    kStream,    // + TCP session tracking and reassembly
    kAppLayer,  // + protocol detection and the HTTP, DNS and TLS parsers
    kDetect,    // + rules, when any are configured (the default)
};

// engine.stages' words, in Stage order.
inline constexpr const char* kStageNames[] = {"read",   "decode",    "flow",
                                              "stream", "app-layer", "detect"};
inline const char* stage_name(Stage s) {
    return kStageNames[static_cast<size_t>(s)];
}

struct SensorConfig {
    CaptureMode mode = CaptureMode::kPcapFile;
    std::vector<std::string> pcap_paths;  // -r, files or directories
    std::string iface;                    // -i
    uint32_t workers = 1;
    Stage stages = Stage::kDetect;  // engine.stages
    std::string log_dir = ".";
    bool eve_enabled = true;
    std::string eve_filename = "eve.json";
    // outputs: - eve-log: (Suricata's layout; see sensor/output/eve_config.h).
    output::EveConfig eve;
    double stats_interval_sec = 8;
    // stats-picket-counters: EVE stats records also carry Picket's own counters, which
    // Suricata's EVE schema has no room for (off: the record validates; Prometheus has all).
    bool stats_picket_counters = false;
    uint32_t snaplen = 262144;
    bool promisc = true;
    uint64_t pcap_buffer_bytes = 32ULL << 20;
    // capture.queue-size, per worker: "8mb" sets the dispatcher ring's bytes, "4096" a
    // packet limit (0 = the bytes alone limit the queue).
    uint64_t queue_bytes = 8ULL << 20;
    uint64_t queue_packets = 0;
    // Live-like replay of the files (pcap-file.loop / pcap-file.rate, set by --pcap-loop /
    // --pcap-rate): when either key is given, timestamps keep moving forward across passes
    // and the reader drops packets for a full worker queue (capture.queue_drops) instead of
    // waiting, as a live capture does.
    bool pcap_replay = false;
    uint64_t pcap_loops = 1;   // passes over the files; 0 = until stopped
    double pcap_rate_pps = 0;  // packets per second over all workers; 0 = unpaced
    // pcap-file.strict: a truncated or corrupt capture file ends the run with exit status 1.
    // Off (default, as Suricata): it ends that file, with a warning naming file and offset
    // (RunResult::warnings), and the run goes on with the next file.
    bool pcap_strict = false;
    std::string metrics_listen;  // metrics.listen: HOST:PORT serving /metrics; empty = off
    std::string bpf;
    capture::BpfMode bpf_mode = capture::BpfMode::kKernel;
    capture::AfPacketOptions afpacket;
    decode::DecodeOptions decode;
    defrag::DefragConfig defrag;
    flow::FlowConfig flow;
    stream::StreamConfig stream;  // stream.*
    // stream.async-oneside: a session the stream tracker established from one side only (the
    // SYN/ACK never seen) makes its flow "established" for flow:established, as Suricata's
    // async-oneside does. Off: such a flow stays not established.
    bool stream_async_oneside = false;
    // stream.raw-on-ack (experimental, off): raw stream inspection with Suricata's IDS timing
    // (stream::StreamConfig::raw_on_ack); a packet whose data went into the stream is then
    // not matched by stream-capable rules itself. Passive modes only.
    bool stream_raw_on_ack = false;
    applayer::AppLayerConfig app_layer;  // app-layer.*

    // Detection: on when at least one rule file is configured (rule-files, -S, -s).
    detect::DetectConfig detect;
    bool fast_log_enabled = true;
    std::string fast_log_filename = "fast.log";
    bool alert_payload = true;                // outputs.eve.alert.payload (base64)
    bool alert_payload_printable = true;      // outputs.eve.alert.payload-printable
    bool alert_packet = true;                 // outputs.eve.alert.packet (base64)
    uint64_t alert_queue_bytes = 4ULL << 20;  // worker -> output thread, per worker
    // outputs.eve.alert.verdict: Suricata's "verdict" object on alerts. Default: on in IPS
    // mode (inline or simulated), off in IDS mode.
    bool alert_verdict = false;
    // outputs.eve.alert.xff.*: the HTTP X-Forwarded-For client address on alerts.
    output::XffOptions alert_xff;
    // detect.guess-applayer-tx: a packet or stream alert on a flow whose app layer holds a
    // single transaction is logged with that transaction's metadata (Suricata's option).
    bool guess_applayer_tx = false;

    // Inline (IPS). capture.nfqueue.*: `nfqueue.queue` is the first queue of --queue Q[:R],
    // worker i binds queue + i; nfqueue_count queues = workers.
    capture::NfqueueOptions nfqueue;
    uint32_t nfqueue_count = 1;
    capture::AfPacketInlineOptions afpacket_inline;  // capture.afpacket-inline.*
    // dpdk.* (--capture dpdk): EAL arguments, ports, copy-mode (inline_mode), pool and rings.
    // rx_queues is set by the engine (= workers).
    capture::DpdkOptions dpdk;
    // dpdk.stop-after-idle: a DPDK worker whose queues delivered nothing for this long (since
    // its last packet, or its start) ends as at the end of a file; 0 = run until stopped. For
    // replaying net_pcap vdevs, which have no end of file.
    double dpdk_stop_after_idle_sec = 0;
    // ips.simulate (--simulate-ips): an offline or passive run decides verdicts as if inline
    // (drops counted and alerts marked blocked; nothing is sent or dropped for real).
    bool simulate_ips = false;
    bool malformed_drop = false;  // ips.malformed-policy: drop (decode errors); default pass
    // ips.fail-open: packets the sensor cannot inspect (no flow: flow memcap; stream memcap)
    // pass, and the NFQUEUE kernel queue accepts when full (unless capture.nfqueue.fail-open
    // says otherwise). Off (the default, as Suricata): they are dropped.
    bool fail_open = false;
    // The ACL stage classifies the packets of a capture batch with one lookup_batch() (decoded
    // first, then classified, then the rest per packet) instead of one lookup() per packet.
    // Same verdicts either way; false only to measure the difference (bench/pipeline).
    bool acl_batch = true;

    bool inline_capture() const {
        return mode == CaptureMode::kNfqueue || mode == CaptureMode::kAfPacketInline ||
               (mode == CaptureMode::kDpdk && dpdk.inline_mode);
    }
    // Verdicts are decided (inline capture or --simulate-ips).
    bool ips() const { return inline_capture() || simulate_ips; }
};

// Reads the sensor settings from a Config (sensor.yaml + --set overrides). Throws ConfigError
// naming the key for bad values.
// require_input: false for rule checking (-T), which needs no packets.
SensorConfig load_sensor_config(const Config& config, bool require_input = true);

// One worker's share of decoder.pkts / decoder.bytes.
struct WorkerTotals {
    uint32_t worker = 0;
    uint64_t packets = 0;
    uint64_t bytes = 0;
};

struct RunResult {
    int exit_code = 0;  // 0 ok; 1 capture error (e.g. a truncated file) after what was readable
    std::string error;  // what went wrong, with file and offset where known
    // Damaged capture files that were ended early (pcap-file.strict off), one line each.
    std::vector<std::string> warnings;
    StatsSnapshot stats;
    double elapsed_sec = 0;
    uint32_t files = 0;
    // What the workers took in (wire lengths), whatever engine.stages says: with kRead the
    // decoder.* counters stay 0.
    uint64_t packets = 0;
    uint64_t bytes = 0;
    // Time the workers spent on batches (from taking one to releasing it), summed: their cost
    // per packet without the waits for the reader, which elapsed_sec includes.
    double worker_busy_sec = 0;
    // Per thread, read once as each thread ends (CLOCK_THREAD_CPUTIME_ID: CPU the thread
    // used, not wall time, so that threads sharing a core are not charged for each other).
    // What the run would do with a core per thread is packets / the largest of these.
    struct WorkerRun {
        uint64_t packets = 0;  // what it took in (RunResult::packets' share)
        double busy_sec = 0;   // wall time on its batches
        double cpu_sec = 0;    // its thread's CPU time, waits for the reader excluded
    };
    std::vector<WorkerRun> workers;
    double reader_cpu_sec = 0;  // the Dispatcher modes' reader thread (0 without one)
    double output_cpu_sec = 0;  // the stats / output thread
};

class Engine {
public:
    // Opens the capture (throws capture::CaptureError with what and where: unknown
    // interface, unreadable file, bad BPF expression, DPDK's EAL or port setup, a DPDK mode in
    // a build without DPDK) and the EVE log. DPDK: config().workers is clamped to the queues
    // the ports have (virtual PMDs have one: no RSS), with a warning.
    explicit Engine(SensorConfig config);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Runs until offline input ends or stop() is called. Blocks.
    RunResult run();
    // Async-signal-safe request to stop.
    void stop();
    // Replaces the rules while packets flow: builds the new detection generation on the
    // calling (control) thread, publishes it to every worker, waits until each has switched
    // (each reads its pointer once per batch, so no packet sees two rulesets) and the output
    // thread has written every alert of the old one, then frees the old generation. On any
    // failure the running rules stay and *error says why. Not on a worker thread.
    bool reload(const detect::DetectConfig& config, detect::LoadSummary* summary,
                std::string* error);
    // Async-signal-safe (SIGUSR2): the engine's control thread reloads the configured rules.
    void request_reload();
    // Async-signal-safe (SIGHUP): the output thread closes and reopens eve.json and fast.log
    // (logrotate moved them away) before it writes its next record.
    void request_reopen() { reopen_requested_.store(true, std::memory_order_relaxed); }
    // Called on the output thread with every alert it writes (the fleet agent forwards them).
    // Set before run(); must not block.
    using AlertTap = std::function<void(const output::AlertEvent&)>;
    void set_alert_tap(AlertTap tap) { alert_tap_ = std::move(tap); }
    uint64_t reloads() const { return reloads_.load(); }
    // Sum of every worker's counters, the capture stats and (when detecting) the rule and
    // reload figures, as named in EVE stats. Any thread. With `workers`, also each worker's
    // share of decoder.pkts and decoder.bytes read in the same pass, so that they sum exactly
    // to the snapshot's totals.
    StatsSnapshot collect_stats(std::vector<WorkerTotals>* workers = nullptr) const;
    // The rule load of this engine (empty when no rules are configured).
    const detect::LoadSummary& load_summary() const { return load_summary_; }
    // profiling.rules: the per-rule figures of every generation, merged by gid:sid:rev
    // (reload() merges the generation it retires), calibrated and sorted. After run() returns.
    detect::RuleProfile rule_profile();
    bool detecting() const { return detecting_; }
    const SensorConfig& config() const { return config_; }

private:
    void worker_main(WorkerContext& w);
    void reader_main();
    bool wait_until(int64_t due_ns) const;
    void stats_main();
    void write_stats_event(bool final_event);
    void build_alert_output();
    void drain_alerts();
    // The output thread: SIGHUP's reopen of eve.json and fast.log, when one was asked for.
    void reopen_if_asked();
    AlertTap alert_tap_;

    // The per-packet pipeline (pipeline.cc). Each step returns what the rules decided so far
    // (PacketVerdict: a decision only gets stronger); nothing per packet is kept in w.
    //
    // Everything a worker does with one packet; returns its verdict (kAccept unless ips()).
    capture::Verdict process_packet(WorkerContext& w, const capture::RawPacket& raw,
                                    int64_t now_ns);
    // process_packet() in two steps, so that the ACL can classify a batch between them.
    // decode_stage: user BPF, engine.stages read and decode into p; false when the packet goes
    // no further (its verdict is accept). process_decoded: the rest, on p as decode_stage left
    // it (dr: its decode result).
    bool decode_stage(WorkerContext& w, const capture::RawPacket& raw, decode::Packet& p,
                      decode::DecodeResult* dr);
    capture::Verdict process_decoded(WorkerContext& w, decode::Packet& p, decode::DecodeResult dr,
                                     int64_t now_ns);
    // The worker loop's work on one batch (w.batch): each packet through the pipeline, its
    // verdict into the batch, the IPS counters. With an ACL (and acl_batch), runs of packets
    // are decoded, classified with one AclClassifier::lookup_batch(), then processed.
    void process_batch(WorkerContext& w, int64_t& now_ns);
    // Stream, app layer and detection for a packet that has a flow (or none: f nullptr).
    FlowVerdict inspect_flow_packet(WorkerContext& w, const decode::Packet& p, flow::Flow* f,
                                    flow::Direction dir, uint32_t link_len, int64_t now_ns);
    // Detection of one raw stream chunk of f's direction d on packet p (the packet that
    // delivered it, or pseudo_packet() of d): the rules that match on the stream, and only
    // their stream matches; a pass rule marks the flow passed. `verdict`: the packet's so far.
    PacketVerdict inspect_stream_chunk(WorkerContext& w, const decode::Packet& p, flow::Flow& f,
                                       flow::Direction d, const stream::StreamChunk& c,
                                       uint32_t link_len, PacketVerdict verdict);
    // Snort 3 PDUs (detect/snort3_pdu.h): the cutter of f's direction d when a Snort 3 rule
    // that reads the stream may apply to the flow's service and that service has PDUs here
    // (FTP: detected, or server port 21 as Snort 3's binder; its state is made on first use),
    // else nullptr. Costs two tests on a flow of another service.
    detect::PduCutter* snort3_pdu_cutter(WorkerContext& w, flow::Flow& f, flow::Direction d);
    // Feeds a's acknowledged bytes of f's direction d to its PDU cutter and inspects each PDU
    // that completes (on p when it is d's packet, else on pseudo_packet() of d): only Snort 3
    // rules that read the stream, on the whole PDU. A gap or a's end flushes what is held
    // first or last; `end` flushes it in any case (the flow ends). Returns the verdict.
    PacketVerdict inspect_snort3_pdus(WorkerContext& w, const decode::Packet* p, flow::Flow& f,
                                      flow::Direction d, detect::PduCutter& cutter,
                                      const stream::StreamChunk& a, bool end,
                                      PacketVerdict verdict);
    // w.pseudo made a packet of f's direction d without headers or payload of its own
    // (Suricata's stream pseudo packet): what alerts report as source, destination and time.
    const decode::Packet& pseudo_packet(WorkerContext& w, const flow::Flow& f, flow::Direction d);
    // Applies the actions of alerts w.alert_buf[0, n) (IPS: drop, reject, the flow's drop
    // mark), marks them blocked and returns what they decide (kNone, kDrop or kReject).
    PacketVerdict apply_actions(WorkerContext& w, flow::Flow* f, uint32_t n);
    // Whether one of w.alert_buf[0, n) is a drop or reject rule's (IDS mode too).
    static bool any_drop(const WorkerContext& w, uint32_t n);
    // IPS: the verdict of "drop ... noalert;" matches (extras.silent_*) into out, and the
    // flow's drop mark when one of them applies to the flow.
    void apply_silent_drop(WorkerContext& w, flow::Flow* f, const detect::InspectExtras& extras,
                           FlowVerdict& out);
    // The packet's part of an alert or packet record: time, flow id, addresses, ports, vlan,
    // interface, protocol, ICMP type and code.
    void set_packet_fields(output::AlertEvent& ev, const decode::Packet& p,
                           const flow::Flow* f) const;
    // Alerts w.alert_buf[0, n) of packet p, whose verdict so far is `verdict`. stream: the
    // stream window alerts that matched on the stream report as their payload; tx: they come
    // from a transaction of f.
    void emit_alerts(WorkerContext& w, const decode::Packet& p, flow::Flow* f, flow::Direction dir,
                     uint32_t n, uint32_t link_len, PacketVerdict verdict,
                     const detect::StreamView* stream = nullptr, bool tx = false);
    // A packet the tag keyword tagged (detect/tag.h): Suricata's EVE "packet" record, through
    // the worker's alert queue as Suricata's alert logger writes it (tagged-packets).
    void emit_tagged_packet(WorkerContext& w, const decode::Packet& p, const flow::Flow* f,
                            uint32_t link_len);
    // End of input (offline files, an idle DPDK replay): every active flow's held stream data
    // is flushed into the app layer and detection, its directions get the app layer's end of
    // stream, and its app state is released (TLS/DNS count truncated messages), before the
    // final stats. The flows themselves stay (flow.active at end is unchanged).
    void finish_flows(WorkerContext& w);
    // The end of one flow: the stream flushed, the app layer's last data, every transaction
    // inspected on pseudo packets; release_app also frees its app state.
    void end_flow(WorkerContext& w, flow::Flow& f, bool release_app);

    // EVE records (records.cc), pushed to w.records; nothing when the type is off.
    // The app layer's finished records (http, dns, tls, fileinfo, app-layer anomaly) of f.
    // p: the packet that produced the records (its VLAN tags go into them), or null at the
    // flow's end (the flow's own tags).
    void emit_app_records(WorkerContext& w, const flow::Flow& f, int64_t ts_ns, uint64_t pcap_cnt,
                          const decode::Packet* p = nullptr);
    // The end of f: its unlogged transactions, then its flow record; once per flow.
    void log_flow_end(WorkerContext& w, flow::Flow& f, flow::FlowEndReason reason);
    // Decoder anomalies of p, and the stream anomalies of its update (stream::UpdateEvent bits).
    void log_packet_anomalies(WorkerContext& w, const decode::Packet& p, const flow::Flow* f,
                              uint32_t stream_events);
    // A packet the IPS dropped, with Suricata's drop reason.
    void log_drop(WorkerContext& w, const decode::Packet& p, flow::Flow* f, const char* reason);
    // The output thread: writes every record the workers queued; returns how many.
    size_t drain_records();

    SensorConfig config_;
    // Every capture source (capture::open_sources). Declared before workers_: the workers'
    // responders send through the sources, so the workers go first.
    std::unique_ptr<capture::Sources> sources_;
    std::vector<std::unique_ptr<WorkerContext>> workers_;
    struct Output;
    std::unique_ptr<Output> output_;
    std::atomic<bool> stop_{false};
    std::atomic<uint32_t> workers_done_{0};
    // Wakes the stats thread when the last worker ends (or on stop), so a run ends at once.
    std::mutex done_mu_;
    std::condition_variable done_cv_;
    std::string reader_error_;
    std::vector<std::string> reader_warnings_;  // the reader thread's, read after it joined
    // Written by the reader thread per packet, read by the stats thread: a cache line of their
    // own, so that no worker's line (stop_, config_) is invalidated per packet.
    struct alignas(64) ReaderCounters {
        std::atomic<uint64_t> packets{0};
        std::atomic<uint64_t> filtered{0};
        std::atomic<uint64_t> kernel_packets{0};  // libpcap live: pcap_stats
        std::atomic<uint64_t> kernel_drops{0};
    };
    ReaderCounters reader_;
    // CPU time of the reader and output threads, stored as each ends (RunResult).
    std::atomic<uint64_t> reader_cpu_ns_{0};
    std::atomic<uint64_t> output_cpu_ns_{0};
    int64_t start_ns_ = 0;
    struct Generation;
    std::unique_ptr<Generation> build_generation(const detect::DetectConfig& config, uint64_t id,
                                                 detect::LoadSummary* summary);
    void control_main();
    bool detecting_ = false;
    std::shared_ptr<detect::FlowbitRegistry> flowbits_;  // outlives generations
    std::unique_ptr<Generation> gen_;                    // replaced only under reload_mu_
    std::mutex reload_mu_;
    detect::RuleProfile retired_profile_;  // generations replaced by reload(); under reload_mu_
    // Guards the members below up to reload_failures_ (read by the stats thread and the
    // exporters), so that a snapshot never mixes two loads. The two counters change under it
    // too and are atomic only for reloads().
    mutable std::mutex gen_info_mu_;
    detect::LoadSummary load_summary_;
    int64_t detect_loaded_ns_ = 0;  // wall clock of the running rules' load
    // That load's duration: from its start until every worker runs the new rules.
    uint64_t last_reload_us_ = 0;
    detect::DetectConfig running_detect_;  // what SIGHUP reloads: the last applied rules
    bool acl_loaded_ = false;              // some generation had an acl-file: filter.acl.*
    uint64_t acl_rules_ = 0;               // the running ACL's rules (after expansion)
    std::atomic<uint64_t> reloads_{0};     // successful, after start-up
    std::atomic<uint64_t> reload_failures_{0};
    std::atomic<bool> reload_requested_{false};
    std::atomic<bool> reopen_requested_{false};
    std::atomic<uint64_t> drain_epoch_{0};  // bumped by the output thread after each drain
    std::atomic<bool> output_running_{false};
};

// Human-readable end-of-run summary (offline runs print it).
std::string format_summary(const RunResult& result, uint32_t workers);

}  // namespace picket::sensor::engine
