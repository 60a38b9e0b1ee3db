#include "sensor/engine/engine.h"

#include <pcap/dlt.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "common/counter.h"
#include "common/log.h"
#include "common/time_util.h"
#include "sensor/output/output.h"

namespace picket::sensor::engine {
namespace {

constexpr int kPollTimeoutMs = 100;
constexpr int64_t kTimerIntervalNs = 1000000000;  // flow/defrag expiry once per second

uint32_t hash_raw(const capture::RawPacket& p) {
    return decode::dispatch_hash(p.linktype, p.data, p.caplen);
}

// Link types a capture may carry; user-mode BPF keeps one compiled program per type.
constexpr int kLinkTypes[] = {DLT_EN10MB, DLT_RAW, DLT_LINUX_SLL, DLT_NULL, DLT_LOOP, 276};

// What a worker needs of one detection generation; published to it with one atomic store.
struct GenSlot {
    detect::DetectWorker* detect = nullptr;
    const output::AlertMeta* metas = nullptr;  // by rule index
    uint64_t id = 0;
};

}  // namespace

struct Engine::Generation {
    uint64_t id = 0;
    std::shared_ptr<const detect::DetectEngine> engine;
    std::vector<std::unique_ptr<detect::DetectWorker>> workers;  // one per worker
    std::vector<output::AlertMeta> metas;
    std::vector<GenSlot> slots;  // one per worker
};

struct Engine::Worker {
    Worker(uint32_t worker_id, const SensorConfig& c)
        : id(worker_id), decode(c.decode), defrag(c.defrag), flows(flow_config(c, worker_id)) {}
    ~Worker() {
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
        flows.set_on_free([this](flow::Flow& f) { flow_state->release_flow(f); });
    }

    // Once per loop turn: switch to a newly published generation.
    void adopt_generation() {
        const GenSlot* slot = published.load(std::memory_order_acquire);
        if (slot != active) {
            active = slot;
            flow_state->adopt(slot->detect->engine());
            gen_seen.store(slot->id, std::memory_order_release);
        }
    }

    static flow::FlowConfig flow_config(const SensorConfig& c, uint32_t worker_id) {
        flow::FlowConfig f = c.flow;
        // The memcap is the sensor's; each worker's table gets its share.
        f.memcap = c.flow.memcap / c.workers;
        f.worker_id = static_cast<uint16_t>(worker_id);
        return f;
    }

    uint32_t id;
    capture::PacketSource* source = nullptr;
    std::unique_ptr<capture::PacketSource> own_source;
    decode::DecodeContext decode;
    defrag::Defragmenter defrag;
    flow::FlowTable flows;
    const std::map<int, capture::BpfFilter>* user_bpf = nullptr;

    Counter packets, bytes, bpf_filtered, no_flow, reassembled_inspected;
    Counter cap_packets, cap_drops;  // copied from the source's own stats (AF_PACKET)
    Counter max_batch_ns;            // gauge: longest time spent on one batch
    std::unique_ptr<detect::WorkerFlowState> flow_state;  // outlives generations
    std::atomic<const GenSlot*> published{nullptr};
    const GenSlot* active = nullptr;  // this worker's current generation
    std::atomic<uint64_t> gen_seen{0};
    std::atomic<bool> finished{false};
    std::unique_ptr<output::AlertQueue> alerts;
    std::vector<detect::AlertRecord> alert_buf;
    std::vector<uint8_t> alert_packet;  // reassembled packet for alert output
    capture::Batch batch;
    std::string error;
    uint64_t busy_ns = 0;  // sum of the batch times; read after join
    std::thread thread;
};

struct Engine::Output {
    std::unique_ptr<output::EveWriter> eve;
    std::unique_ptr<output::FastLogWriter> fast;
    std::unique_ptr<output::AlertSink> sink;
    std::vector<output::AlertQueue*> queues;
    int64_t last_ns = 0;
    std::vector<uint64_t> last_pkts, last_bytes;
    uint64_t last_total_pkts = 0, last_total_bytes = 0;
    std::map<int, capture::BpfFilter> user_filters;
};

Engine::Engine(SensorConfig config) : config_(std::move(config)), output_(new Output) {
    const auto& c = config_;
    if (!c.bpf.empty()) {
        // Compile once for Ethernet up front so a bad expression fails at start-up with
        // libpcap's message, whatever the mode.
        bpf_ = std::make_unique<capture::BpfFilter>(c.bpf, DLT_EN10MB, c.snaplen);
        if (c.bpf_mode == capture::BpfMode::kUser) {
            for (int lt : kLinkTypes) {
                try {
                    output_->user_filters.emplace(lt, capture::BpfFilter(c.bpf, lt, c.snaplen));
                } catch (const capture::CaptureError&) {
                    // The expression names a layer this link type lacks; such frames pass.
                }
            }
        }
    }

    for (uint32_t i = 0; i < c.workers; ++i) {
        workers_.push_back(std::make_unique<Worker>(i, c));
        if (!output_->user_filters.empty()) {
            workers_.back()->user_bpf = &output_->user_filters;
        }
    }

    switch (c.mode) {
        case CaptureMode::kPcapFile: {
            file_reader_ = std::make_unique<capture::PcapFileReader>(c.pcap_paths);
            if (bpf_ && c.bpf_mode == capture::BpfMode::kKernel) {
                file_reader_->set_filter(*bpf_);
            }
            // Plain reading is exact: the reader waits for a full queue. Live-like replay
            // drops and counts instead, as a live capture does.
            dispatcher_ = std::make_unique<capture::Dispatcher>(
                c.workers, c.queue_bytes, &hash_raw, /*blocking=*/!c.pcap_replay, c.queue_packets);
            break;
        }
        case CaptureMode::kPcapLive: {
            live_reader_ = std::make_unique<capture::PcapLiveReader>(
                c.iface, c.snaplen, static_cast<int>(c.pcap_buffer_bytes >> 20), c.promisc);
            if (bpf_ && c.bpf_mode == capture::BpfMode::kKernel) {
                live_reader_->set_filter(*bpf_);
            }
            dispatcher_ = std::make_unique<capture::Dispatcher>(
                c.workers, c.queue_bytes, &hash_raw, /*blocking=*/false, c.queue_packets);
            break;
        }
        case CaptureMode::kAfPacket: {
            capture::AfPacketOptions opts = c.afpacket;
            opts.iface = c.iface;
            if (opts.fanout_id == 0) {
                opts.fanout_id = static_cast<uint16_t>(getpid() & 0xffff);
            }
            if (bpf_ && c.bpf_mode == capture::BpfMode::kKernel) {
                opts.kernel_filter = bpf_.get();
            }
            for (auto& w : workers_) {
                w->own_source = capture::open_afpacket(opts);
            }
            break;
        }
    }
    for (auto& w : workers_) {
        w->source = w->own_source ? w->own_source.get() : &dispatcher_->source(w->id);
    }

    if (c.eve_enabled) {
        output_->eve = std::make_unique<output::EveWriter>(c.log_dir + "/" + c.eve_filename);
    }
    if (!c.detect.rule_files.empty() && c.stages >= Stage::kDetect) {
        detecting_ = true;
        const int64_t t0 = monotonic_ns();
        gen_ = build_generation(c.detect, 1, &load_summary_);
        last_reload_us_ = static_cast<uint64_t>(monotonic_ns() - t0) / 1000;
        detect_loaded_ns_ = wall_clock_ns();
        running_detect_ = c.detect;
        for (size_t i = 0; i < workers_.size(); ++i) {
            workers_[i]->published.store(&gen_->slots[i], std::memory_order_release);
            workers_[i]->adopt_generation();
        }
        build_alert_output();
    }
}

std::unique_ptr<Engine::Generation> Engine::build_generation(const detect::DetectConfig& config,
                                                             uint64_t id,
                                                             detect::LoadSummary* summary) {
    auto gen = std::make_unique<Generation>();
    gen->id = id;
    gen->engine = detect::DetectEngine::load(config, flowbits_, summary);
    if (!flowbits_) {
        // The first engine's registry serves every later one: flow state survives reloads.
        flowbits_ = gen->engine->flowbit_registry();
        for (auto& w : workers_) {
            w->enable_detection(config_, flowbits_);
        }
    }
    const std::vector<detect::RuleInfo> rules = gen->engine->rule_infos();
    gen->metas.resize(rules.size());
    for (size_t i = 0; i < rules.size(); ++i) {
        const detect::RuleInfo& r = rules[i];
        output::AlertMeta& m = gen->metas[i];
        m.gid = r.gid;
        m.sid = r.sid;
        m.rev = r.rev;
        m.signature = r.msg;
        m.category = r.category;
        m.severity = r.priority;
        for (const auto& entry : r.metadata) {
            size_t sp = entry.find(' ');
            m.metadata.emplace_back(entry.substr(0, sp),
                                    sp == std::string::npos ? "" : entry.substr(sp + 1));
        }
    }
    // Each worker's scratch (Hyperscan, PCRE2) is allocated here, off the packet path.
    for (auto& w : workers_) {
        gen->workers.push_back(
            std::make_unique<detect::DetectWorker>(gen->engine, w->flow_state.get()));
        gen->slots.push_back(GenSlot{gen->workers.back().get(), gen->metas.data(), id});
    }
    return gen;
}

void Engine::request_reload() {
    reload_requested_.store(true, std::memory_order_relaxed);
}

bool Engine::reload(const detect::DetectConfig& config, detect::LoadSummary* summary,
                    std::string* error) {
    if (!detecting_) {
        *error = "detection is off: the sensor started without rules";
        return false;
    }
    std::lock_guard<std::mutex> lock(reload_mu_);
    const int64_t t0 = monotonic_ns();
    detect::LoadSummary sum;
    std::unique_ptr<Generation> next;
    try {
        next = build_generation(config, gen_->id + 1, &sum);
    } catch (const std::exception& e) {
        {
            std::lock_guard<std::mutex> info(gen_info_mu_);
            ++reload_failures_;
        }
        *error = e.what();
        return false;
    }
    // Publish: one atomic store per worker.
    for (size_t i = 0; i < workers_.size(); ++i) {
        workers_[i]->published.store(&next->slots[i], std::memory_order_release);
    }
    // Proof of use: every worker has switched, or has ended (an idle worker still turns its
    // loop at least once per poll timeout).
    for (;;) {
        bool all = true;
        for (const auto& w : workers_) {
            if (w->gen_seen.load(std::memory_order_acquire) < next->id &&
                !w->finished.load(std::memory_order_acquire)) {
                all = false;
            }
        }
        if (all) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Alerts queued under the old generation point at its metadata: wait for two drains.
    const uint64_t epoch = drain_epoch_.load(std::memory_order_acquire);
    while (output_running_.load(std::memory_order_acquire) &&
           drain_epoch_.load(std::memory_order_acquire) < epoch + 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::unique_ptr<Generation> old = std::move(gen_);
    gen_ = std::move(next);
    {
        std::lock_guard<std::mutex> info(gen_info_mu_);
        load_summary_ = sum;
        detect_loaded_ns_ = wall_clock_ns();
        running_detect_ = config;
        last_reload_us_ = static_cast<uint64_t>(monotonic_ns() - t0) / 1000;
        ++reloads_;
    }
    for (const auto& dw : old->workers) {
        retired_profile_.add(*dw);  // no-op unless profiling.rules; no worker uses it any more
    }
    old.reset();  // the last reference to the old engine goes with it
    if (summary != nullptr) {
        *summary = std::move(sum);
    }
    return true;
}

detect::RuleProfile Engine::rule_profile() {
    std::lock_guard<std::mutex> lock(reload_mu_);
    detect::RuleProfile out = retired_profile_;
    if (gen_) {
        for (const auto& dw : gen_->workers) {
            out.add(*dw);
        }
    }
    out.finish();
    return out;
}

void Engine::control_main() {
    while (!stop_.load(std::memory_order_relaxed) && workers_done_.load() < workers_.size()) {
        if (reload_requested_.exchange(false)) {
            detect::LoadSummary sum;
            std::string error;
            detect::DetectConfig config;
            {
                // The rules running now (a bundle applied since start-up replaces the
                // configured ones), read again from their files.
                std::lock_guard<std::mutex> info(gen_info_mu_);
                config = running_detect_;
            }
            if (reload(config, &sum, &error)) {
                std::string text = sum.to_string();
                log::info("rules reloaded: " + text.substr(text.rfind('\n') + 1));
            } else {
                log::error("rule reload failed, the running rules stay: " + error);
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

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
    if (!config_.iface.empty()) {
        opts.interfaces.push_back(config_.iface);
    }
    o.sink = std::make_unique<output::AlertSink>(o.eve.get(), o.fast.get(), opts);
    for (auto& w : workers_) {
        o.queues.push_back(w->alerts.get());
    }
}

void Engine::drain_alerts() {
    auto& o = *output_;
    for (output::AlertQueue* q : o.queues) {
        q->drain([&](const output::AlertEvent& ev) {
            o.sink->write(ev);
            if (alert_tap_) {
                alert_tap_(ev);
            }
        });
    }
}

void Engine::emit_alerts(Worker& w, const decode::Packet& p, const flow::Flow* f,
                         flow::Direction dir, uint32_t n, uint32_t link_len) {
    const uint8_t* packet = p.data;
    uint32_t packet_len = p.caplen;
    if (p.has(decode::kFlagReassembled)) {
        // Link header of the last fragment + the whole datagram. The buffer was sized at
        // start-up for the largest datagram, so this does not allocate.
        w.alert_packet.resize(link_len + p.l3_len);
        std::memcpy(w.alert_packet.data(), p.data, link_len);
        std::memcpy(w.alert_packet.data() + link_len, p.l3, p.l3_len);
        packet = w.alert_packet.data();
        packet_len = static_cast<uint32_t>(w.alert_packet.size());
    }
    for (uint32_t i = 0; i < n; ++i) {
        const detect::AlertRecord& a = w.alert_buf[i];
        output::AlertEvent ev;
        ev.ts_ns = p.ts_ns;
        ev.flow_id = f != nullptr ? f->flow_id : 0;
        ev.pcap_cnt = p.pcap_cnt;
        ev.meta = &w.active->metas[a.rule_index];
        ev.src = p.src;
        ev.dst = p.dst;
        ev.linktype = p.linktype;
        ev.sport = p.sport;
        ev.dport = p.dport;
        ev.vlan_count = p.vlan_count;
        ev.vlan_id[0] = p.vlan_id[0];
        ev.vlan_id[1] = p.vlan_id[1];
        ev.in_iface = config_.iface.empty() ? output::kNoInterface : 0;
        ev.ip_version = p.ip_version;
        ev.proto = p.proto;
        ev.icmp_type = p.icmp_type;
        ev.icmp_code = p.icmp_code;
        ev.direction = f == nullptr                        ? output::AlertDirection::kUnknown
                       : dir == flow::Direction::kToServer ? output::AlertDirection::kToServer
                                                           : output::AlertDirection::kToClient;
        ev.action = a.action == detect::AlertAction::kBlocked ? output::AlertAction::kBlocked
                                                              : output::AlertAction::kAllowed;
        ev.origin = p.has(decode::kFlagReassembled) ? output::PacketOrigin::kDefrag
                                                    : output::PacketOrigin::kWire;
        ev.drop_rule = a.drop_rule;
        if (!w.alerts->push(ev, packet, packet_len, p.payload, p.payload_len)) {
            ++w.flow_state->counters().alerts_dropped;
        }
    }
}

Engine::~Engine() {
    stop();
    for (auto& w : workers_) {
        if (w->thread.joinable()) {
            w->thread.join();
        }
    }
}

void Engine::stop() {
    // Called from a signal handler too: only lock-free atomic stores here; the stats thread
    // notices the flag within its wait slice.
    stop_.store(true, std::memory_order_relaxed);
    if (dispatcher_) {
        dispatcher_->abort();
    }
}

void Engine::worker_main(Worker& w) {
    const bool offline = config_.mode == CaptureMode::kPcapFile;
    const Stage stages = config_.stages;
    int64_t last_timer_ns = 0;
    int64_t now_ns = 0;
    decode::Packet p;
    while (!stop_.load(std::memory_order_relaxed)) {
        if (w.flow_state) {
            w.adopt_generation();  // once per batch: no packet sees two rulesets
        }
        capture::ReadResult r = w.source->next_batch(w.batch, kPollTimeoutMs);
        if (r == capture::ReadResult::kEof) {
            break;
        }
        if (r == capture::ReadResult::kError) {
            w.error = w.source->error();
            break;
        }
        if (r == capture::ReadResult::kOk) {
            const int64_t batch_start = monotonic_ns();
            for (uint32_t i = 0; i < w.batch.count; ++i) {
                const capture::RawPacket& raw = w.batch.pkts[i];
                w.batch.verdict[i] = capture::Verdict::kAccept;
                ++w.packets;
                w.bytes += raw.wirelen;
                now_ns = raw.ts_ns > now_ns ? raw.ts_ns : now_ns;
                if (w.user_bpf != nullptr) {
                    auto it = w.user_bpf->find(raw.linktype);
                    if (it != w.user_bpf->end() && !it->second.matches(raw)) {
                        ++w.bpf_filtered;
                        continue;
                    }
                }
                if (stages == Stage::kRead) {
                    continue;
                }
                p.pcap_cnt = raw.pcap_cnt;
                decode::DecodeResult dr = decode::decode_packet(
                    w.decode, raw.linktype, raw.data, raw.caplen, raw.wirelen, raw.ts_ns, p);
                if (dr == decode::DecodeResult::kInvalid) {
                    // A packet whose IP layer decoded still meets the IP-level rules (as in
                    // Suricata); it gets no flow, since its transport header is unusable.
                    if (w.active && p.ip_version != 0 && !p.has(decode::kFlagFragment)) {
                        uint32_t n = w.active->detect->inspect(
                            p, nullptr, flow::Direction::kToServer, w.alert_buf.data(),
                            static_cast<uint32_t>(w.alert_buf.size()));
                        if (n != 0) {
                            emit_alerts(w, p, nullptr, flow::Direction::kToServer, n, 0);
                        }
                    }
                    continue;
                }
                uint32_t link_len = 0;
                if (dr == decode::DecodeResult::kFragment) {
                    // The link header of the last fragment fronts the rebuilt datagram in
                    // alert output, as Suricata's reassembled pseudo-packet does.
                    link_len = static_cast<uint32_t>(p.l3 - p.data);
                    const uint8_t* dgram = nullptr;
                    uint32_t dgram_len = 0;
                    if (w.defrag.process(p, &dgram, &dgram_len) !=
                        defrag::DefragResult::kReassembled) {
                        continue;
                    }
                    if (decode::decode_reassembled(w.decode, dgram, dgram_len, p) ==
                        decode::DecodeResult::kInvalid) {
                        continue;
                    }
                    ++w.reassembled_inspected;
                }
                if (p.ip_version == 0 || stages == Stage::kDecode) {
                    continue;
                }
                flow::Direction dir = flow::Direction::kToServer;
                flow::Flow* f = w.flows.lookup(p, &dir);
                if (f == nullptr) {
                    ++w.no_flow;
                }
                if (w.active) {
                    uint32_t n = w.active->detect->inspect(
                        p, f, dir, w.alert_buf.data(), static_cast<uint32_t>(w.alert_buf.size()));
                    if (n != 0) {
                        emit_alerts(w, p, f, dir, n, link_len);
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
            if (w.own_source) {
                capture::CaptureStats cs = w.source->stats();
                w.cap_packets.set(cs.packets);
                w.cap_drops.set(cs.drops);
            }
        }
    }
    if (w.own_source) {
        capture::CaptureStats cs = w.source->stats();
        w.cap_packets.set(cs.packets);
        w.cap_drops.set(cs.drops);
    }
    w.finished.store(true, std::memory_order_release);
    {
        std::lock_guard<std::mutex> lock(done_mu_);
        workers_done_.fetch_add(1);
    }
    done_cv_.notify_all();
}

// Waits until monotonic time `due_ns` or a stop request, in short sleeps so that SIGINT ends a
// slowly paced replay at once. False when stopping.
bool Engine::wait_until(int64_t due_ns) const {
    for (;;) {
        if (stop_.load(std::memory_order_relaxed)) {
            return false;
        }
        const int64_t left = due_ns - monotonic_ns();
        if (left <= 0) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 10000000)));
    }
}

void Engine::reader_main() {
    capture::RawPacket p;
    if (file_reader_) {
        const uint64_t loops = config_.pcap_replay ? config_.pcap_loops : 1;
        capture::PcapReplay replay(*file_reader_, loops);
        // Pacing: packet n is due at start + n / rate, so an oversleep is caught up by a short
        // burst and the mean rate stays exact.
        const double ns_per_packet = config_.pcap_rate_pps > 0 ? 1e9 / config_.pcap_rate_pps : 0;
        const int64_t start = monotonic_ns();
        uint64_t sent = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
            capture::ReadResult r = replay.next(p);
            if (r == capture::ReadResult::kOk) {
                if (ns_per_packet > 0 &&
                    !wait_until(start +
                                static_cast<int64_t>(static_cast<double>(sent) * ns_per_packet))) {
                    break;
                }
                ++sent;
                dispatcher_->push(p);  // false: dropped and counted (replay only)
                reader_packets_.store(file_reader_->packets_read(), std::memory_order_relaxed);
                reader_filtered_.store(file_reader_->packets_filtered(), std::memory_order_relaxed);
                continue;
            }
            if (r == capture::ReadResult::kError) {
                reader_error_ = file_reader_->error();
            }
            break;
        }
        reader_packets_.store(file_reader_->packets_read(), std::memory_order_relaxed);
        reader_filtered_.store(file_reader_->packets_filtered(), std::memory_order_relaxed);
    } else if (live_reader_) {
        auto read_kernel_stats = [this] {
            const capture::CaptureStats cs = live_reader_->stats();
            reader_kernel_packets_.store(cs.packets, std::memory_order_relaxed);
            reader_kernel_drops_.store(cs.drops, std::memory_order_relaxed);
        };
        int64_t next_stats = monotonic_ns();
        while (!stop_.load(std::memory_order_relaxed)) {
            capture::ReadResult r = live_reader_->next(p, kPollTimeoutMs);
            if (r == capture::ReadResult::kOk) {
                dispatcher_->push(p);
            } else if (r == capture::ReadResult::kError) {
                reader_error_ = live_reader_->error();
                break;
            }
            // pcap_stats is a syscall: once per timer interval, not per packet.
            if (monotonic_ns() >= next_stats) {
                read_kernel_stats();
                next_stats = monotonic_ns() + kTimerIntervalNs;
            }
        }
        read_kernel_stats();
    }
    dispatcher_->finish();
}

StatsSnapshot Engine::collect_stats(std::vector<WorkerTotals>* totals) const {
    StatsSnapshot s;
    uint64_t cap_packets = 0, cap_drops = 0, filtered = 0, max_batch_ns = 0;
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
        if (w->flow_state) {
            w->flow_state->export_stats(s);
        }
        cap_packets += w->cap_packets.get();
        max_batch_ns = std::max(max_batch_ns, w->max_batch_ns.get());
        cap_drops += w->cap_drops.get();
        filtered += w->bpf_filtered.get();
    }
    if (config_.mode == CaptureMode::kPcapFile) {
        cap_packets = reader_packets_.load(std::memory_order_relaxed);
        filtered += reader_filtered_.load(std::memory_order_relaxed);
    } else if (config_.mode == CaptureMode::kPcapLive) {
        cap_packets = reader_kernel_packets_.load(std::memory_order_relaxed);
        cap_drops = reader_kernel_drops_.load(std::memory_order_relaxed);
    }
    // Drops by reason: the kernel's (ring full, as AF_PACKET and libpcap report them) and
    // ours (a worker's dispatcher queue full: the worker is the bottleneck, not the capture).
    s.set("capture.kernel_packets", cap_packets);
    s.set("capture.kernel_drops", cap_drops);
    s.set("capture.queue_drops", dispatcher_ ? dispatcher_->dropped() : 0);
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
    if (o.sink) {
        drain_alerts();
        drain_epoch_.fetch_add(1, std::memory_order_release);
    }
    if (o.eve) {
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
        o.eve->write(ev);
        o.eve->flush();
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
    const int64_t slice_ns = output_->sink ? 5000000 : 50000000;
    std::unique_lock<std::mutex> lock(done_mu_);
    while (!stop_.load(std::memory_order_relaxed) && workers_done_.load() < workers_.size()) {
        if (output_->sink) {
            lock.unlock();
            drain_alerts();
            drain_epoch_.fetch_add(1, std::memory_order_release);
            lock.lock();
        }
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
}

RunResult Engine::run() {
    start_ns_ = monotonic_ns();
    output_->last_ns = start_ns_;
    for (auto& w : workers_) {
        Worker* wp = w.get();
        w->thread = std::thread([this, wp] { worker_main(*wp); });
    }
    std::thread reader;
    if (dispatcher_) {
        reader = std::thread([this] { reader_main(); });
    }
    output_running_.store(true, std::memory_order_release);
    std::thread stats([this] { stats_main(); });
    std::thread control;
    if (detecting_) {
        control = std::thread([this] { control_main(); });
    }
    if (reader.joinable()) {
        reader.join();
    }
    for (auto& w : workers_) {
        w->thread.join();
    }
    if (control.joinable()) {
        control.join();  // a reload in progress finishes first
    }
    stats.join();
    output_running_.store(false, std::memory_order_release);

    RunResult result;
    result.elapsed_sec = static_cast<double>(monotonic_ns() - start_ns_) / 1e9;
    write_stats_event(true);
    result.stats = collect_stats();
    for (const auto& w : workers_) {
        result.packets += w->packets.get();
        result.bytes += w->bytes.get();
        result.worker_busy_sec += static_cast<double>(w->busy_ns) / 1e9;
    }
    if (file_reader_) {
        result.files = static_cast<uint32_t>(file_reader_->files().size());
    }
    if (!reader_error_.empty()) {
        result.exit_code = 1;
        result.error = reader_error_;
    }
    for (auto& w : workers_) {
        if (!w->error.empty() && result.error.empty()) {
            result.exit_code = 1;
            result.error = "worker " + std::to_string(w->id) + ": " + w->error;
        }
    }
    return result;
}

std::string format_summary(const RunResult& r, uint32_t workers) {
    const auto& s = r.stats;
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
        static_cast<double>(bytes) * 8 / 1e6 / secs,
        static_cast<unsigned long long>(s.get("capture.kernel_packets")),
        static_cast<unsigned long long>(s.get("capture.kernel_drops")),
        static_cast<unsigned long long>(s.get("capture.queue_drops")),
        static_cast<unsigned long long>(s.get("capture.bpf_filtered")),
        static_cast<unsigned long long>(s.get("decoder.ipv4")),
        static_cast<unsigned long long>(s.get("decoder.ipv6")),
        static_cast<unsigned long long>(s.get("decoder.tcp")),
        static_cast<unsigned long long>(s.get("decoder.udp")),
        static_cast<unsigned long long>(s.get("decoder.icmpv4")),
        static_cast<unsigned long long>(s.get("decoder.icmpv6")),
        static_cast<unsigned long long>(s.get("decoder.vlan")),
        static_cast<unsigned long long>(s.get("decoder.arp")),
        static_cast<unsigned long long>(s.get("decoder.invalid")),
        static_cast<unsigned long long>(s.get("defrag.ipv4.fragments")),
        static_cast<unsigned long long>(s.get("defrag.ipv4.reassembled")),
        static_cast<unsigned long long>(s.get("defrag.ipv6.fragments")),
        static_cast<unsigned long long>(s.get("defrag.ipv6.reassembled")),
        static_cast<unsigned long long>(s.get("defrag.timeouts")),
        static_cast<unsigned long long>(s.get("defrag.memcap_drops")),
        static_cast<unsigned long long>(s.get("flow.total")),
        static_cast<unsigned long long>(s.get("flow.active")),
        static_cast<unsigned long long>(s.get("flow.timed_out")),
        static_cast<unsigned long long>(s.get("flow.evicted")),
        static_cast<unsigned long long>(s.get("flow.memcap_drops")));
    return buf;
}

}  // namespace picket::sensor::engine
