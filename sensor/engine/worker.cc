// The worker loop: one thread per worker takes batches from its source, runs the pipeline on
// each packet, releases the batch with its verdicts and runs the timers.
#include <mutex>

#include "common/time_util.h"
#include "sensor/engine/engine_internal.h"

namespace picket::sensor::engine {

void Engine::worker_main(WorkerContext& w) {
    const bool offline = config_.mode == CaptureMode::kPcapFile;
    const bool ips = config_.ips();
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
            for (uint32_t i = 0; i < w.batch.count; ++i) {
                const capture::RawPacket& raw = w.batch.pkts[i];
                ++w.packets;
                w.bytes += raw.wirelen;
                now_ns = raw.ts_ns > now_ns ? raw.ts_ns : now_ns;
                const capture::Verdict v = process_packet(w, raw, now_ns);
                w.batch.verdict[i] = v;
                if (ips) {
                    if (v == capture::Verdict::kDrop) {
                        ++w.ips_blocked;
                    } else {
                        ++w.ips_accepted;
                    }
                }
            }
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
    w.finished.store(true, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(done_mu_);
        workers_done_.fetch_add(1);
    }
    done_cv_.notify_all();
}

}  // namespace picket::sensor::engine
