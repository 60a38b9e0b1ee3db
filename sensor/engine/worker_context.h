// One worker's state (WorkerContext) and what the pipeline returns per packet. Internal to
// sensor/engine: the engine's .cc files include it, nothing outside sensor/engine does.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/counter.h"
#include "sensor/capture/capture.h"
#include "sensor/capture/inline.h"
#include "sensor/engine/engine.h"
#include "sensor/engine/respond.h"
#include "sensor/filter/filter.h"
#include "sensor/output/output.h"
#include "sensor/output/record.h"

namespace picket::sensor::engine {

// Detection's view of a stream chunk: its window, the new bytes from new_offset.
inline detect::StreamView view_of(const stream::StreamChunk& c) {
    return detect::StreamView{c.window, c.window_len, c.new_offset};
}

// CPU time the calling thread has used (CLOCK_THREAD_CPUTIME_ID), for RunResult's per-thread
// figures; read once as a thread ends, never per packet.
inline uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline constexpr size_t kCacheLine = 64;
inline constexpr int kPollTimeoutMs = 100;
inline constexpr int64_t kTimerIntervalNs = 1000000000;  // flow/defrag expiry once per second
// App-layer transactions one packet can advance that detection looks at (HTTP pipelining of
// many requests in one segment beyond this is inspected up to this many).
inline constexpr uint32_t kMaxTxPerPacket = 64;

// What the rules decided for one packet (or one end-of-flow pseudo packet) so far. Ordered:
// a later decision never weakens an earlier one (stronger()): a drop beats a pass, a reject is
// a drop that also answers the ends. kNone: no rule decided (the packet is accepted).
enum class PacketVerdict : uint8_t { kNone, kPass, kDrop, kReject };

inline PacketVerdict stronger(PacketVerdict a, PacketVerdict b) {
    return a > b ? a : b;
}

// What inspect_flow_packet() returns: the rules' verdict and whether the stream tracker hit
// its memcap on the packet (ips.drop_reason.stream_memcap unless ips.fail-open).
struct FlowVerdict {
    PacketVerdict verdict = PacketVerdict::kNone;
    bool stream_memcap = false;
};

// What a worker needs of one detection generation; published to it with one atomic store.
struct GenSlot {
    detect::DetectWorker* detect = nullptr;
    const output::AlertMeta* metas = nullptr;    // by rule index
    const filter::AclClassifier* acl = nullptr;  // acl-file; nullptr: none
    uint64_t id = 0;
    const detect::VarNames* var_names = nullptr;  // alert "metadata" names, by id
};

// Everything one worker thread owns: its capture source, decoder, defragmenter, flow table,
// stream tracker, app layer, detection state, alert queue and counters. Built on the control
// thread, then used by its worker thread only (the counters and the atomics are read by the
// stats thread). Cache-line aligned (and so a multiple of 64 bytes long): the counters it
// writes per packet never share a line with another worker's context or another allocation.
struct alignas(kCacheLine) WorkerContext {
    WorkerContext(uint32_t worker_id, const SensorConfig& c)
        : id(worker_id),
          decode(c.decode),
          defrag(defrag_config(c)),
          flows(flow_config(c, worker_id)) {
        if (c.stages >= Stage::kStream) {
            stream = std::make_unique<stream::StreamTracker>(stream_config(c));
        }
        if (c.stages >= Stage::kAppLayer) {
            applayer::AppLayerConfig a = c.app_layer;
            a.memcap = c.app_layer.memcap / c.workers;  // the sensor's, like the stream memcaps
            app = std::make_unique<applayer::AppLayer>(a);
            tx_buf.resize(kMaxTxPerPacket);
            defer_tx = stream != nullptr && stream_config(c).app_on_ack;
        }
        raw_on_ack = stream != nullptr && stream_config(c).raw_on_ack;
        set_on_free();
    }
    ~WorkerContext() {
        // Detection state hangs on flows: give it back while the flow state still exists.
        flows.clear();
    }

    // Called before the worker runs, when detection is on.
    void enable_detection(const SensorConfig& c,
                          const std::shared_ptr<detect::FlowbitRegistry>& registry) {
        flow_state = std::make_unique<detect::WorkerFlowState>(registry);
        alerts = std::make_unique<output::AlertQueue>(c.alert_queue_bytes);
        alert_buf.resize(c.detect.packet_alert_max);
        alert_packet.reserve(65535 + 64);
        acl_batch = std::make_unique<AclBatch>();
        set_on_free();
    }

    // Hands one direction's stream chunk to the app layer: a hole, the new bytes, the end of
    // the direction. Fills out with the transactions that changed; returns how many.
    uint32_t feed_app(flow::Flow& f, flow::Direction d, const stream::StreamChunk& c,
                      applayer::TxUpdate* out, uint32_t cap) {
        if (!app) {
            return 0;
        }
        if (c.gap != 0) {
            app->on_gap(f, d);
        }
        uint32_t n = 0;
        if (c.new_len() != 0) {
            n = app->on_data(f, d, c.new_data(), c.new_len(), true, out, cap);
        }
        if (c.eof) {
            n += app->on_eof(f, d, out + n, cap - n);
        }
        return n;
    }

    // Keeps the transactions of the packet's direction, older ones first: those deferred by
    // earlier packets of the other direction, then this packet's; the others are deferred to
    // the next packet of their direction. Returns how many are left in txs.
    uint32_t order_txs(flow::Flow& f, flow::Direction dir, applayer::TxUpdate* txs,
                       flow::Direction* tx_dir, uint32_t ntx, uint32_t cap) {
        uint32_t kept = 0;
        for (uint32_t i = 0; i < ntx; ++i) {
            if (tx_dir[i] != dir) {
                app->defer_tx(f, tx_dir[i], txs[i].view.tx_id);
            } else {
                txs[kept++] = txs[i];
            }
        }
        if (!app->has_deferred(f, dir)) {
            return kept;
        }
        const uint32_t k = app->take_deferred(f, dir, txs + kept, cap - kept);
        uint32_t n = kept;
        for (uint32_t i = kept; i < kept + k; ++i) {
            bool dup = false;
            for (uint32_t j = 0; j < kept; ++j) {
                dup = dup || txs[j].view.tx_id == txs[i].view.tx_id;
            }
            if (!dup) {
                txs[n++] = txs[i];
            }
        }
        std::rotate(txs, txs + kept, txs + n);
        for (uint32_t i = 0; i < n; ++i) {
            tx_dir[i] = dir;
        }
        return n;
    }

    // Every layer that hangs state on a flow gets it back before the flow is recycled.
    void set_on_free() {
        flows.set_on_free([this](flow::Flow& f) {
            if (end_hook_on && end_hook) {
                end_hook(f);
            }
            if (flow_log_on && flow_log_hook) {
                flow_log_hook(f);
            }
            if (flow_state) {
                flow_state->release_flow(f);
            }
            delete detect::PduSlot::take(f);  // Snort 3 PDUs (Engine::snort3_pdu_cutter)
            if (stream) {
                stream->release_flow(f);
            }
            if (app) {
                app->release_flow(f);
            }
        });
    }

    static stream::StreamConfig stream_config(const SensorConfig& c) {
        stream::StreamConfig s = c.stream;
        // Memcaps are the sensor's; each worker's tracker gets its share.
        s.memcap = c.stream.memcap / c.workers;
        s.reassembly_memcap = c.stream.reassembly_memcap / c.workers;
        // Suricata's IDS timing: the app layer gets what the receiver acknowledged. Inline
        // (stream.inline, an IPS mode) it gets what is forwarded; with async-oneside there is
        // no other side to acknowledge.
        s.app_on_ack = !s.inline_mode && !c.ips() && !c.stream_async_oneside;
        // stream.raw-on-ack: raw stream inspection likewise (Suricata's StreamReassembleRaw in
        // IDS mode: chunks of acknowledged data on the sender's own packets).
        s.raw_on_ack = s.app_on_ack && c.stream_raw_on_ack;
        s.async_oneside = c.stream_async_oneside;
        return s;
    }

    // Once per loop turn: switch to a newly published generation.
    void adopt_generation() {
        const GenSlot* slot = published.load(std::memory_order_acquire);
        if (slot != active) {
            active = slot;
            flow_state->adopt(slot->detect->engine());
            if (stream) {
                stream->set_keep_tail(slot->detect->engine().stream_tail_bytes());
            }
            gen_seen.store(slot->id, std::memory_order_release);
        }
    }

    // The source's and the responder's own counters, into this worker's (owner thread).
    void copy_source_stats() {
        if (source_stats) {
            capture::CaptureStats cs = source->stats();
            cap_packets.set(cs.packets);
            cap_drops.set(cs.drops);
        }
        if (inline_src != nullptr) {
            const capture::InlineStats is = inline_src->inline_stats();
            inl_accepted.set(is.accepted);
            inl_dropped.set(is.dropped);
            inl_tx_errors.set(is.tx_errors);
            inl_injected.set(is.injected);
        }
        if (responder) {
            const ResponderStats rs = responder->stats();
            resp_sent.set(rs.sent);
            resp_failed.set(rs.failed);
        }
    }

    // defrag.memcap and defrag.trackers are the sensor's, like the flow and stream memcaps:
    // each worker's defragmenter gets its share (before, every worker got the whole figure,
    // so N workers could hold N times defrag.memcap).
    static defrag::DefragConfig defrag_config(const SensorConfig& c) {
        defrag::DefragConfig d = c.defrag;
        d.memcap = c.defrag.memcap / c.workers;
        d.max_trackers = std::max<uint32_t>(1, c.defrag.max_trackers / c.workers);
        return d;
    }

    static flow::FlowConfig flow_config(const SensorConfig& c, uint32_t worker_id) {
        flow::FlowConfig f = c.flow;
        // The memcap is the sensor's; each worker's table gets its share.
        f.memcap = c.flow.memcap / c.workers;
        f.worker_id = static_cast<uint16_t>(worker_id);
        return f;
    }

    uint32_t id;
    capture::PacketSource* source = nullptr;      // owned by the engine's capture::Sources
    bool source_stats = false;                    // its own stats (not a dispatcher queue's)
    capture::InlineSource* inline_src = nullptr;  // source, in inline modes
    // Sends RSTs / ICMP for reject rules (inline modes, and live IDS capture). The bridge responder
    // uses the source's sockets: the engine's sources outlive the workers.
    std::unique_ptr<Responder> responder;
    decode::DecodeContext decode;
    defrag::Defragmenter defrag;
    flow::FlowTable flows;
    const std::map<int, capture::BpfFilter>* user_bpf = nullptr;

    Counter packets, bytes, bpf_filtered, no_flow, reassembled_inspected;
    Counter cap_packets, cap_drops;  // copied from the source's own stats (AF_PACKET)
    Counter max_batch_ns;            // gauge: longest time spent on one batch
    // IPS (ips()): verdicts by outcome and drops by reason (exactly one reason per drop).
    Counter ips_accepted, ips_blocked, ips_rejected;
    Counter drop_rules, drop_flow, drop_decode, drop_stream_memcap, drop_flow_memcap;
    // Copied from the inline source and the responder (their own counters).
    Counter inl_accepted, inl_dropped, inl_tx_errors, inl_injected, resp_sent, resp_failed;
    Counter acl_pass, acl_drop, acl_bypass, acl_nomatch;  // filter.acl.*: ACL verdicts
    std::unique_ptr<detect::WorkerFlowState> flow_state;  // outlives generations
    std::atomic<const GenSlot*> published{nullptr};
    const GenSlot* active = nullptr;  // this worker's current generation
    std::atomic<uint64_t> gen_seen{0};
    std::atomic<bool> finished{false};
    std::unique_ptr<stream::StreamTracker> stream;  // stages >= kStream
    std::unique_ptr<applayer::AppLayer> app;        // stages >= kAppLayer
    std::vector<applayer::TxUpdate> tx_buf;         // transactions changed by one packet
    // Suricata's IDS timing (StreamConfig::app_on_ack): a transaction is inspected on a packet
    // of its own direction (AppLayer::defer_tx).
    bool defer_tx = false;
    // StreamConfig::raw_on_ack: raw stream data is inspected in Suricata's chunks, and a
    // packet whose data went into the stream is not matched by stream-capable rules itself.
    bool raw_on_ack = false;
    std::string app_json;  // alert metadata being rendered
    std::unique_ptr<output::AlertQueue> alerts;
    std::vector<detect::AlertRecord> alert_buf;
    std::vector<uint8_t> alert_packet;  // reassembled packet for alert output
    capture::Batch batch;
    decode::Packet pkt;     // the packet being processed
    decode::Packet pseudo;  // end-of-flow pseudo packets (Engine::end_flow)
    // Suricata's IDS timing holds transactions (and, unacknowledged, stream data) for later
    // packets: a flow the table frees while the sensor runs (timeout, eviction) ends with
    // Engine::end_flow first, as Suricata's flow-timeout pseudo packets do.
    std::function<void(flow::Flow&)> end_hook;
    // EVE records (outputs eve-log types other than alert and stats): null when none is on.
    // flow_log_hook writes a removed flow's record (on) until the worker has logged every
    // flow left at its end (off).
    std::unique_ptr<output::RecordQueue> records;
    std::function<void(flow::Flow&)> flow_log_hook;
    bool flow_log_on = false;
    uint16_t iface_index = output::kNoInterface;
    // The first drop rule that matched the packet being processed (its EVE drop record's
    // "alert"); reset per packet.
    const output::AlertMeta* drop_meta = nullptr;
    // Where the packet's rejects send their responses (rejectsrc / rejectdst / rejectboth,
    // or-ed over its reject alerts); reset per packet.
    detect::RejectTo reject_to = detect::RejectTo::kNone;
    // IDS mode: a reject rule matched the packet being processed and the capture has a
    // responder; its responses go out once the packet is done. Reset per packet.
    bool ids_reject = false;
    bool end_hook_on = false;
    std::string error;
    // The ACL stage per batch (Engine::process_batch): a run of packets decoded ahead, their
    // 5-tuples and verdicts. Allocated with detection (the ACL is part of a generation).
    struct AclBatch {
        static constexpr uint8_t kNoTuple = 0xff;
        decode::Packet pkts[capture::kMaxBatch];
        decode::DecodeResult dr[capture::kMaxBatch];
        bool go[capture::kMaxBatch];        // decode_stage() let it on
        uint8_t tuple[capture::kMaxBatch];  // its index in tuples, or kNoTuple
        filter::FiveTuple tuples[capture::kMaxBatch];
        filter::Verdict verdicts[capture::kMaxBatch];
    };
    static_assert(capture::kMaxBatch < AclBatch::kNoTuple);
    std::unique_ptr<AclBatch> acl_batch;
    // The packet being processed when the batch classified it, and its verdict; nullptr when
    // the ACL stage must look the packet up itself (a reassembled datagram, no batch).
    const decode::Packet* acl_pre_packet = nullptr;
    filter::Verdict acl_pre;
    uint64_t busy_ns = 0;  // sum of the batch times; read after join
    uint64_t cpu_ns = 0;   // the thread's CPU time (thread_cpu_ns() as it ends); after join
    std::thread thread;
};
static_assert(alignof(WorkerContext) == kCacheLine && sizeof(WorkerContext) % kCacheLine == 0,
              "a worker's per-packet counters must not share a cache line with anything else");

}  // namespace picket::sensor::engine
