// The worker loop: one thread per worker takes batches from its source, runs the pipeline on
// each packet, releases the batch with its verdicts and runs the timers.
#include <mutex>

#include "common/time_util.h"
#include "sensor/engine/engine_internal.h"

namespace picket::sensor::engine {

void Engine::process_batch(WorkerContext& w, int64_t& now_ns) {
    const bool ips = config_.ips();
    capture::Batch& b = w.batch;
    // Packet i's accounting and verdict, in packet order whichever path decoded it.
    const auto done = [&](uint32_t i, capture::Verdict v) {
        b.verdict[i] = v;
        if (ips) {
            if (v == capture::Verdict::kDrop) {
                ++w.ips_blocked;
            } else {
                ++w.ips_accepted;
            }
        }
    };
    const auto start = [&](uint32_t i) {
        ++w.packets;
        w.bytes += b.pkts[i].wirelen;
        now_ns = b.pkts[i].ts_ns > now_ns ? b.pkts[i].ts_ns : now_ns;
    };
    const filter::AclClassifier* acl =
        w.active != nullptr && config_.acl_batch ? w.active->acl : nullptr;
    if (acl == nullptr) {
        for (uint32_t i = 0; i < b.count; ++i) {
            start(i);
            done(i, process_packet(w, b.pkts[i], now_ns));
        }
        return;
    }
    // The ACL needs only the decoded 5-tuple: decode a run of packets, classify the run in one
    // lookup_batch() (its loads overlap), then take each packet through the rest. A run ends
    // after a fragment: only its reassembly (in the rest) has ports, so it is looked up on its
    // own there, and the decoder's calls keep their order (decode_reassembled() of one packet
    // before decode_packet() of the next, as per packet). w.active is fixed within a batch.
    WorkerContext::AclBatch& ab = *w.acl_batch;
    uint32_t i = 0;
    while (i < b.count) {
        uint32_t end = i;
        uint32_t n = 0;
        while (end < b.count) {
            decode::Packet& p = ab.pkts[end];
            decode::DecodeResult dr = decode::DecodeResult::kOk;
            ab.go[end] = decode_stage(w, b.pkts[end], p, &dr);
            ab.dr[end] = dr;
            ab.tuple[end] = WorkerContext::AclBatch::kNoTuple;
            if (ab.go[end] && dr == decode::DecodeResult::kOk && p.ip_version != 0) {
                ab.tuple[end] = static_cast<uint8_t>(n);
                ab.tuples[n++] = filter::FiveTuple::from_packet(p);
            }
            ++end;
            if (ab.go[end - 1] && dr == decode::DecodeResult::kFragment) {
                break;
            }
        }
        acl->lookup_batch({ab.tuples, n}, {ab.verdicts, n});
        for (; i < end; ++i) {
            start(i);
            capture::Verdict v = capture::Verdict::kAccept;
            if (ab.go[i]) {
                const bool classified = ab.tuple[i] != WorkerContext::AclBatch::kNoTuple;
                w.acl_pre_packet = classified ? &ab.pkts[i] : nullptr;
                w.acl_pre = classified ? ab.verdicts[ab.tuple[i]] : filter::Verdict{};
                v = process_decoded(w, ab.pkts[i], ab.dr[i], now_ns);
            }
            done(i, v);
        }
    }
    w.acl_pre_packet = nullptr;
}

void Engine::worker_main(WorkerContext& w) {
    const bool offline = config_.mode == CaptureMode::kPcapFile;
    int64_t last_timer_ns = 0;
    int64_t now_ns = 0;
    // dpdk.stop-after-idle: net_pcap vdevs have no end of file, they just stop delivering.
    const int64_t idle_end_ns = config_.mode == CaptureMode::kDpdk
                                    ? static_cast<int64_t>(config_.dpdk_stop_after_idle_sec * 1e9)
                                    : 0;
    int64_t last_rx_ns = monotonic_ns();
    bool input_ended = false;
    if (w.defer_tx) {
        w.end_hook = [this, &w](flow::Flow& f) { end_flow(w, f, false); };
        w.end_hook_on = true;
    }
    while (!stop_.load(std::memory_order_relaxed)) {
        if (w.flow_state) {
            w.adopt_generation();  // once per batch: no packet sees two rulesets
        }
        capture::ReadResult r = w.source->next_batch(w.batch, kPollTimeoutMs);
        if (r == capture::ReadResult::kEof) {
            input_ended = true;
            break;
        }
        if (idle_end_ns > 0) {
            const int64_t mono = monotonic_ns();
            if (r == capture::ReadResult::kOk) {
                last_rx_ns = mono;
            } else if (mono - last_rx_ns >= idle_end_ns) {
                input_ended = true;
                break;
            }
        }
        if (r == capture::ReadResult::kError) {
            w.error = w.source->error();
            break;
        }
        if (r == capture::ReadResult::kOk) {
            const int64_t batch_start = monotonic_ns();
            process_batch(w, now_ns);
            w.source->release(w.batch);
            const uint64_t batch_ns = static_cast<uint64_t>(monotonic_ns() - batch_start);
            w.busy_ns += batch_ns;
            if (batch_ns > w.max_batch_ns.get()) {
                w.max_batch_ns.set(batch_ns);
            }
        } else if (!offline) {
            // Idle live capture: let time advance for the timers.
            now_ns = std::max(now_ns, wall_clock_ns());
        }
        if (now_ns - last_timer_ns >= kTimerIntervalNs) {
            if (last_timer_ns != 0) {
                w.flows.expire(now_ns);
                w.defrag.expire(now_ns);
            }
            last_timer_ns = now_ns;
            w.copy_source_stats();
        }
    }
    w.end_hook_on = false;
    if (input_ended && !stop_.load(std::memory_order_relaxed)) {
        finish_flows(w);
    }
    if (w.records) {
        // Flows still active end with the run (Suricata's "shutdown"); the table's own clear()
        // at destruction logs nothing more.
        w.flows.for_each_active(
            [&](flow::Flow& f) { log_flow_end(w, f, flow::FlowEndReason::kShutdown); });
        w.flow_log_on = false;
    }
    w.copy_source_stats();
    w.cpu_ns = thread_cpu_ns();
    w.finished.store(true, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(done_mu_);
        workers_done_.fetch_add(1);
    }
    done_cv_.notify_all();
}

}  // namespace picket::sensor::engine
