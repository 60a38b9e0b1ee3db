// The output thread (alert drain, EVE stats events), the counters summed over the workers
// (collect_stats) and the end-of-run summary.
#include <cstdio>
#include <mutex>

#include "common/log.h"
#include "common/time_util.h"
#include "sensor/engine/engine_internal.h"
#include "sensor/output/stats_event.h"

namespace picket::sensor::engine {

void Engine::build_alert_output() {
    auto& o = *output_;
    if (config_.fast_log_enabled) {
        o.fast = std::make_unique<output::FastLogWriter>(config_.log_dir + "/" +
                                                         config_.fast_log_filename);
    }
    output::AlertOutputOptions opts;
    opts.payload = config_.alert_payload;
    opts.payload_printable = config_.alert_payload_printable;
    opts.packet = config_.alert_packet;
    opts.xff = config_.alert_xff;
    opts.rule_metadata = config_.eve.alert.metadata;
    opts.community_id = config_.eve.community_id;
    opts.community_id_seed = config_.eve.community_id_seed;
    opts.ethernet = config_.eve.ethernet;
    if (!config_.iface.empty()) {
        opts.interfaces.push_back(config_.iface);
    }
    // types: without alert: no alert records (fast.log keeps its own switch).
    o.sink = std::make_unique<output::AlertSink>(config_.eve.types.alert ? o.eve.get() : nullptr,
                                                 o.fast.get(), opts);
    for (auto& w : workers_) {
        o.queues.push_back(w->alerts.get());
    }
}

void Engine::reopen_if_asked() {
    if (!reopen_requested_.exchange(false, std::memory_order_relaxed)) {
        return;
    }
    auto& o = *output_;
    if (o.eve) {
        o.eve->flush();
        o.eve->reopen();
    }
    if (o.fast) {
        o.fast->flush();
        o.fast->reopen();
    }
    log::info("outputs reopened (SIGHUP)");
}

void Engine::drain_alerts() {
    auto& o = *output_;
    for (output::AlertQueue* q : o.queues) {
        q->drain([&](const output::AlertEvent& ev) {
            o.sink->write(ev);
            if (alert_tap_ && !ev.tagged) {  // a tagged packet is no alert for the manager
                alert_tap_(ev);
            }
        });
    }
}

StatsSnapshot Engine::collect_stats(std::vector<WorkerTotals>* totals) const {
    StatsSnapshot s;
    uint64_t cap_packets = 0, cap_drops = 0, filtered = 0, max_batch_ns = 0;
    struct {
        uint64_t accepted = 0, blocked = 0, rejected = 0, rules = 0, flow = 0, decode = 0,
                 stream = 0, flow_memcap = 0, sent = 0, failed = 0;
        uint64_t in_accepted = 0, in_dropped = 0, in_tx_errors = 0, in_injected = 0;
    } ips;
    uint64_t acl_pass = 0, acl_drop = 0, acl_bypass = 0, acl_nomatch = 0;
    if (totals != nullptr) {
        totals->clear();
    }
    for (const auto& w : workers_) {
        // Every worker exports into the same snapshot: the modules add, and the decoder
        // derives decoder.avg_pkt_size / max_pkt_size from what is already there. A worker's
        // share is what its export added, so the shares sum to the totals exactly.
        const uint64_t pkts_before = s.get("decoder.pkts");
        const uint64_t bytes_before = s.get("decoder.bytes");
        w->decode.export_stats(s);
        if (totals != nullptr) {
            totals->push_back(WorkerTotals{w->id, s.get("decoder.pkts") - pkts_before,
                                           s.get("decoder.bytes") - bytes_before});
        }
        w->defrag.export_stats(s);
        w->flows.export_stats(s);
        if (w->stream) {
            w->stream->export_stats(s);
        }
        if (w->app) {
            w->app->export_stats(s);
        }
        if (w->flow_state) {
            w->flow_state->export_stats(s);
        }
        cap_packets += w->cap_packets.get();
        max_batch_ns = std::max(max_batch_ns, w->max_batch_ns.get());
        cap_drops += w->cap_drops.get();
        filtered += w->bpf_filtered.get();
        ips.accepted += w->ips_accepted.get();
        ips.blocked += w->ips_blocked.get();
        ips.rejected += w->ips_rejected.get();
        ips.rules += w->drop_rules.get();
        ips.flow += w->drop_flow.get();
        ips.decode += w->drop_decode.get();
        ips.stream += w->drop_stream_memcap.get();
        ips.flow_memcap += w->drop_flow_memcap.get();
        ips.sent += w->resp_sent.get();
        ips.failed += w->resp_failed.get();
        ips.in_accepted += w->inl_accepted.get();
        ips.in_dropped += w->inl_dropped.get();
        ips.in_tx_errors += w->inl_tx_errors.get();
        ips.in_injected += w->inl_injected.get();
        acl_pass += w->acl_pass.get();
        acl_drop += w->acl_drop.get();
        acl_bypass += w->acl_bypass.get();
        acl_nomatch += w->acl_nomatch.get();
    }
    if (config_.ips()) {
        // ips.blocked = the sum of the drop reasons; ips.rejected is part of drop_reason.rules.
        s.set("ips.accepted", ips.accepted);
        s.set("ips.blocked", ips.blocked);
        s.set("ips.rejected", ips.rejected);
        s.set("ips.drop_reason.rules", ips.rules);
        s.set("ips.drop_reason.flow_drop", ips.flow);
        s.set("ips.drop_reason.decode_error", ips.decode);
        s.set("ips.drop_reason.stream_memcap", ips.stream);
        s.set("ips.drop_reason.flow_memcap", ips.flow_memcap);
        s.set("ips.responses.sent", ips.sent);
        s.set("ips.responses.failed", ips.failed);
        // What picket_sensor_ips_verdicts_total{verdict} reads (common/metrics/sensor_series.h):
        // every packet once, as pass, drop (not rejected) or reject.
        s.set("ips.verdict.pass", ips.accepted);
        s.set("ips.verdict.drop", ips.blocked - ips.rejected);
        s.set("ips.verdict.reject", ips.rejected);
    }
    if (config_.inline_capture()) {
        s.set("capture.inline.accepted", ips.in_accepted);
        s.set("capture.inline.dropped", ips.in_dropped);
        s.set("capture.inline.tx_errors", ips.in_tx_errors);
        s.set("capture.inline.injected", ips.in_injected);
    }
    if (config_.mode == CaptureMode::kPcapFile) {
        cap_packets = reader_.packets.load(std::memory_order_relaxed);
        filtered += reader_.filtered.load(std::memory_order_relaxed);
    } else if (config_.mode == CaptureMode::kPcapLive) {
        cap_packets = reader_.kernel_packets.load(std::memory_order_relaxed);
        cap_drops = reader_.kernel_drops.load(std::memory_order_relaxed);
    }
    // Drops by reason: the kernel's (ring full, as AF_PACKET and libpcap report them) and
    // ours (a worker's dispatcher queue full: the worker is the bottleneck, not the capture).
    s.set("capture.kernel_packets", cap_packets);
    s.set("capture.kernel_drops", cap_drops);
    s.set("capture.queue_drops",
          sources_->dispatcher() != nullptr ? sources_->dispatcher()->dropped() : 0);
    s.set("capture.bpf_filtered", filtered);
    s.set("engine.max_batch_us", max_batch_ns / 1000);
    if (detecting_) {
        std::lock_guard<std::mutex> info(gen_info_mu_);
        s.set("detect.rules_loaded", load_summary_.loaded);
        s.set("detect.rules_failed", load_summary_.skipped);
        s.set("detect.reloads", reloads_.load());
        s.set("detect.reload_failures", reload_failures_.load());
        s.set("detect.last_reload_unix_ms", static_cast<uint64_t>(detect_loaded_ns_ / 1000000));
        s.set("detect.last_reload_us", last_reload_us_);
        if (acl_loaded_) {
            // From the first generation with an acl-file on (a later one may have none).
            s.set("filter.acl.pass", acl_pass);
            s.set("filter.acl.drop", acl_drop);
            s.set("filter.acl.bypass", acl_bypass);
            s.set("filter.acl.nomatch", acl_nomatch);
            s.set("filter.acl.rules", acl_rules_);
        }
    }
    if (!output_->record_queues.empty()) {
        // eve.records.<type>: written by the output thread; eve.dropped.<type>: a worker's
        // record queue was full.
        for (size_t t = 0; t < output::kRecordTypes; ++t) {
            const auto type = static_cast<output::RecordType>(t);
            uint64_t dropped = 0;
            for (const output::RecordQueue* q : output_->record_queues) {
                dropped += q->dropped(type);
            }
            const std::string name = output::record_type_name(type);
            s.set("eve.records." + name, output_->records_written[t].get());
            s.set("eve.dropped." + name, dropped);
        }
    }
    if (output_->eve) {
        // Records (alerts and stats too) the EVE sink could not deliver: its file, socket,
        // syslog or Redis server was away.
        s.set("eve.dropped.sink", output_->sink_dropped.get());
    }
    return s;
}

void Engine::write_stats_event(bool final_event) {
    auto& o = *output_;
    int64_t now = monotonic_ns();
    double interval = static_cast<double>(now - o.last_ns) / 1e9;
    if (interval <= 0) {
        interval = 1e-9;
    }
    output::Rates rates;
    rates.interval_sec = interval;
    uint64_t total_pkts = 0, total_bytes = 0;
    o.last_pkts.resize(workers_.size());
    o.last_bytes.resize(workers_.size());
    for (size_t i = 0; i < workers_.size(); ++i) {
        uint64_t pk = workers_[i]->packets.get();
        uint64_t by = workers_[i]->bytes.get();
        output::WorkerRate wr;
        wr.worker = static_cast<uint32_t>(i);
        wr.packets = pk;
        wr.bytes = by;
        wr.pkts_per_sec = static_cast<double>(pk - o.last_pkts[i]) / interval;
        wr.mbit_per_sec = static_cast<double>(by - o.last_bytes[i]) * 8 / 1e6 / interval;
        rates.workers.push_back(wr);
        o.last_pkts[i] = pk;
        o.last_bytes[i] = by;
        total_pkts += pk;
        total_bytes += by;
    }
    rates.pkts_per_sec = static_cast<double>(total_pkts - o.last_total_pkts) / interval;
    rates.mbit_per_sec = static_cast<double>(total_bytes - o.last_total_bytes) * 8 / 1e6 / interval;
    o.last_total_pkts = total_pkts;
    o.last_total_bytes = total_bytes;
    o.last_ns = now;
    reopen_if_asked();
    if (o.sink) {
        drain_alerts();
        drain_epoch_.fetch_add(1, std::memory_order_release);
    }
    drain_records();
    if (o.eve && config_.eve.types.stats) {
        StatsSnapshot s = collect_stats();
        nlohmann::json ev =
            output::make_stats_event(wall_clock_ns(), (now - start_ns_) / 1000000000, s, rates);
        if (detecting_) {
            std::lock_guard<std::mutex> info(gen_info_mu_);
            ev["stats"]["detect"]["engines"] =
                nlohmann::json::array({{{"id", 0},
                                        {"last_reload", format_eve_timestamp(detect_loaded_ns_)},
                                        {"rules_loaded", load_summary_.loaded},
                                        {"rules_failed", load_summary_.skipped}}});
            // detect.reloads, reload_failures, rules_* and last_reload_* come with the
            // snapshot; last_reload_ms stays for readers of earlier versions.
            ev["stats"]["detect"]["last_reload_ms"] = static_cast<double>(last_reload_us_) / 1e3;
        }
        if (!config_.stats_picket_counters) {
            output::conform_stats(ev["stats"]);  // Suricata's schema, counters it knows only
        }
        // Suricata's member order (a json object would sort its keys).
        o.eve->write_line(
            "{\"timestamp\":" + ev["timestamp"].dump() + ",\"event_type\":\"stats\",\"stats\":" +
            ev["stats"].dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "}");
    }
    if (o.eve) {
        o.eve->flush();
        o.sink_dropped.set(o.eve->sink().dropped());
    }
    if (o.fast) {
        o.fast->flush();
    }
    (void)final_event;
}

void Engine::stats_main() {
    const int64_t interval_ns = static_cast<int64_t>(config_.stats_interval_sec * 1e9);
    int64_t next = monotonic_ns() + interval_ns;
    // The output thread: drains alert queues every few milliseconds, writes stats events.
    const bool drains = output_->sink || !output_->record_queues.empty();
    const int64_t slice_ns = drains ? 5000000 : 50000000;  // SIGHUP is seen within a slice
    std::unique_lock<std::mutex> lock(done_mu_);
    while (!stop_.load(std::memory_order_relaxed) && workers_done_.load() < workers_.size()) {
        lock.unlock();
        reopen_if_asked();
        if (drains) {
            if (output_->sink) {
                drain_alerts();
            }
            drain_records();
            drain_epoch_.fetch_add(1, std::memory_order_release);
        }
        lock.lock();
        int64_t wait_ns = std::min<int64_t>(next - monotonic_ns(), slice_ns);
        if (wait_ns > 0) {
            done_cv_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
        }
        if (monotonic_ns() >= next) {
            lock.unlock();
            write_stats_event(false);
            lock.lock();
            next += interval_ns;
        }
    }
    output_cpu_ns_.store(thread_cpu_ns(), std::memory_order_relaxed);
}

std::string format_summary(const RunResult& r, uint32_t workers) {
    const auto& s = r.stats;
    // printf's %llu for one counter of the snapshot.
    const auto n = [&s](const char* key) { return static_cast<unsigned long long>(s.get(key)); };
    double secs = r.elapsed_sec > 0 ? r.elapsed_sec : 1e-9;
    uint64_t pkts = s.get("decoder.pkts");
    uint64_t bytes = s.get("decoder.bytes");
    char buf[2048];
    std::snprintf(
        buf, sizeof(buf),
        "summary: %llu packets, %llu bytes in %.3f s with %u worker%s: %.0f packets/s, %.1f "
        "Mbit/s\n"
        "  capture: %llu packets, %llu kernel drops, %llu queue drops, %llu filtered by BPF\n"
        "  decoder: ipv4 %llu, ipv6 %llu, tcp %llu, udp %llu, icmpv4 %llu, icmpv6 %llu, "
        "vlan %llu, arp %llu, invalid %llu\n"
        "  defrag: ipv4 %llu fragments / %llu reassembled, ipv6 %llu / %llu, %llu timeouts, "
        "%llu memcap drops\n"
        "  flow: %llu created, %llu active at end, %llu timed out, %llu evicted, %llu memcap "
        "drops\n",
        static_cast<unsigned long long>(pkts), static_cast<unsigned long long>(bytes), secs,
        workers, workers == 1 ? "" : "s", static_cast<double>(pkts) / secs,
        static_cast<double>(bytes) * 8 / 1e6 / secs, n("capture.kernel_packets"),
        n("capture.kernel_drops"), n("capture.queue_drops"), n("capture.bpf_filtered"),
        n("decoder.ipv4"), n("decoder.ipv6"), n("decoder.tcp"), n("decoder.udp"),
        n("decoder.icmpv4"), n("decoder.icmpv6"), n("decoder.vlan"), n("decoder.arp"),
        n("decoder.invalid"), n("defrag.ipv4.fragments"), n("defrag.ipv4.reassembled"),
        n("defrag.ipv6.fragments"), n("defrag.ipv6.reassembled"), n("defrag.timeouts"),
        n("defrag.memcap_drops"), n("flow.total"), n("flow.active"), n("flow.timed_out"),
        n("flow.evicted"), n("flow.memcap_drops"));
    std::string out = buf;
    if (s.has("eve.dropped.sink")) {
        uint64_t written = 0, dropped = 0;
        for (size_t t = 0; t < output::kRecordTypes; ++t) {
            const std::string name = output::record_type_name(static_cast<output::RecordType>(t));
            written += s.get("eve.records." + name);
            dropped += s.get("eve.dropped." + name);
        }
        std::snprintf(buf, sizeof(buf),
                      "  eve: %llu records besides alerts and stats, %llu dropped (record queues "
                      "full), %llu lines not delivered (sink away)\n",
                      static_cast<unsigned long long>(written),
                      static_cast<unsigned long long>(dropped), n("eve.dropped.sink"));
        out += buf;
    }
    if (s.has("ips.accepted")) {
        std::snprintf(buf, sizeof(buf),
                      "  ips: %llu accepted, %llu blocked (rules %llu, flow drop %llu, decode "
                      "error %llu, stream memcap %llu, flow memcap %llu), %llu rejected\n",
                      n("ips.accepted"), n("ips.blocked"), n("ips.drop_reason.rules"),
                      n("ips.drop_reason.flow_drop"), n("ips.drop_reason.decode_error"),
                      n("ips.drop_reason.stream_memcap"), n("ips.drop_reason.flow_memcap"),
                      n("ips.rejected"));
        out += buf;
    }
    return out;
}

}  // namespace picket::sensor::engine
