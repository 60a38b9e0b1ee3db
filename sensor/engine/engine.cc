// Engine construction (capture, workers, EVE log, the first rules), run() and stop().
#include "sensor/engine/engine.h"

#include <thread>

#include "common/log.h"
#include "common/time_util.h"
#include "sensor/engine/engine_internal.h"

namespace picket::sensor::engine {

namespace {

uint32_t hash_raw(const capture::RawPacket& p) {
    return decode::dispatch_hash(p.linktype, p.data, p.caplen);
}
// vlan.use-for-tracking: false.
uint32_t hash_raw_novlan(const capture::RawPacket& p) {
    return decode::dispatch_hash(p.linktype, p.data, p.caplen, /*use_vlan=*/false);
}

capture::SourceOptions source_options(const SensorConfig& c) {
    capture::SourceOptions o;
    o.mode = c.mode;
    o.workers = c.workers;
    o.pcap_paths = c.pcap_paths;
    o.iface = c.iface;
    o.snaplen = c.snaplen;
    o.promisc = c.promisc;
    o.pcap_buffer_bytes = c.pcap_buffer_bytes;
    o.queue_bytes = c.queue_bytes;
    o.queue_packets = c.queue_packets;
    o.hash = c.flow.use_vlan ? &hash_raw : &hash_raw_novlan;
    o.pcap_replay = c.pcap_replay;
    o.bpf = c.bpf;
    o.bpf_mode = c.bpf_mode;
    o.afpacket = c.afpacket;
    o.nfqueue = c.nfqueue;
    o.afpacket_inline = c.afpacket_inline;
    o.dpdk = c.dpdk;
    return o;
}

// Which records the app layer writes follows the EVE configuration.
void apply_eve_config(SensorConfig& c) {
    const output::EveConfig& e = c.eve;
    const bool on = c.eve_enabled && e.enabled;
    applayer::AppLogConfig& l = c.app_layer.log;
    l.http = on && e.types.http;
    l.dns = on && e.types.dns;
    l.tls = on && e.types.tls;
    l.ssh = on && e.types.ssh;
    l.ftp = on && e.types.ftp;
    l.files = on && e.types.files;
    l.anomaly = on && e.types.anomaly && e.anomaly.applayer;
    l.http_extended = e.http.extended;
    l.http_request_headers = e.http.dump_request_headers;
    l.http_response_headers = e.http.dump_response_headers;
    l.dns_version = e.dns.version;
    l.dns_requests = e.dns.requests;
    l.dns_responses = e.dns.responses;
    l.dns_detailed = e.dns.detailed;
    l.dns_grouped = e.dns.grouped;
    l.tls_extended = e.tls.extended;
    l.tls_ja3 = e.tls.ja3;
    l.tls_ja3s = e.tls.ja3s;
    l.file_magic = e.files.magic;
    l.file_md5 = e.files.md5;
    l.file_sha1 = e.files.sha1;
    l.file_sha256 = e.files.sha256;
    // Suricata: the bodies need metadata.
    const bool alert_meta = on && e.types.alert && e.alert.metadata;
    l.alert_http_body = alert_meta && e.alert.http_body;
    l.alert_http_body_printable = alert_meta && e.alert.http_body_printable;
}

// Whether any record beyond alert and stats is on: the workers then get record queues.
bool wants_records(const SensorConfig& c) {
    const output::EveConfig& e = c.eve;
    if (!c.eve_enabled || !e.enabled) {
        return false;
    }
    const applayer::AppLogConfig& l = c.app_layer.log;
    return l.http || l.dns || l.tls || l.ssh || l.ftp || l.files || l.anomaly || e.types.flow ||
           (e.types.drop && c.ips()) || (e.types.anomaly && (e.anomaly.decode || e.anomaly.stream));
}

}  // namespace

Engine::Engine(SensorConfig config) : config_(std::move(config)), output_(new Output) {
    apply_eve_config(config_);
    const auto& c = config_;
    // Before the workers: DPDK's ports decide how many get packets.
    sources_ = capture::open_sources(source_options(c));
    for (const std::string& warning : sources_->warnings()) {
        log::warning(warning);
    }
    config_.workers = sources_->workers();
    // One table of FTP data-channel expectations for every worker's app layer: the data
    // connection usually hashes to another worker than its control connection.
    config_.app_layer.ftp_expect = std::make_shared<applayer::ftp::ExpectTable>();
    for (uint32_t i = 0; i < c.workers; ++i) {
        auto w = std::make_unique<WorkerContext>(i, c);
        const capture::WorkerSource& ws = sources_->worker(i);
        w->source = ws.source;
        w->source_stats = sources_->dispatcher() == nullptr;
        w->inline_src = ws.inline_source;
        if (ws.raw_socket_responses) {
            w->responder = make_raw_socket_responder();
        } else if (ws.injector != nullptr) {
            w->responder = make_bridge_responder(*ws.injector);
        } else if (!c.ips() &&
                   (c.mode == CaptureMode::kAfPacket || c.mode == CaptureMode::kPcapLive)) {
            // A passive sensor on a live interface: reject rules answer through raw IP
            // sockets, routed like the host's own traffic (Suricata's IDS-mode reject). Not
            // for a pcap file: nothing is sent for traffic that is not on the wire.
            try {
                w->responder = make_raw_socket_responder();
            } catch (const ResponderError& e) {
                if (i == 0) {
                    log::warning(std::string("reject rules will alert without resetting: ") +
                                 e.what());
                }
            }
        }
        if (!sources_->user_filters().empty()) {
            w->user_bpf = &sources_->user_filters();
        }
        w->iface_index = c.iface.empty() ? output::kNoInterface : 0;
        if (wants_records(c)) {
            w->records = std::make_unique<output::RecordQueue>(c.eve.record_queue_bytes);
            WorkerContext* wp = w.get();
            w->flow_log_hook = [this, wp](flow::Flow& f) { log_flow_end(*wp, f, f.end_reason); };
            w->flow_log_on = true;
            output_->record_queues.push_back(w->records.get());
        }
        workers_.push_back(std::move(w));
    }
    if (!c.iface.empty()) {
        output_->interfaces.push_back(c.iface);
    }
    output_->record_options.community_id = c.eve.community_id;
    output_->record_options.community_id_seed = c.eve.community_id_seed;
    output_->record_options.ethernet = c.eve.ethernet;
    output_->record_options.interfaces = &output_->interfaces;

    if (c.eve_enabled && c.eve.enabled) {
        output::SinkOptions sink = c.eve.sink;
        sink.log_dir = c.log_dir;
        sink.filename = c.eve_filename;
        output_->eve = std::make_unique<output::EveWriter>(output::make_sink(sink));
    }
    if (!c.detect.rule_files.empty() && c.stages >= Stage::kDetect) {
        detecting_ = true;
        const int64_t t0 = monotonic_ns();
        gen_ = build_generation(c.detect, 1, &load_summary_);
        acl_loaded_ = gen_->acl != nullptr;
        acl_rules_ = gen_->acl ? gen_->acl->rules().size() : 0;
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
    if (sources_ && sources_->dispatcher() != nullptr) {
        sources_->dispatcher()->abort();
    }
}

RunResult Engine::run() {
    start_ns_ = monotonic_ns();
    output_->last_ns = start_ns_;
    for (auto& w : workers_) {
        WorkerContext* wp = w.get();
        w->thread = std::thread([this, wp] { worker_main(*wp); });
    }
    std::thread reader;
    if (sources_->dispatcher() != nullptr) {
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
        result.workers.push_back(RunResult::WorkerRun{w->packets.get(),
                                                      static_cast<double>(w->busy_ns) / 1e9,
                                                      static_cast<double>(w->cpu_ns) / 1e9});
    }
    result.reader_cpu_sec = static_cast<double>(reader_cpu_ns_.load()) / 1e9;
    result.output_cpu_sec = static_cast<double>(output_cpu_ns_.load()) / 1e9;
    if (sources_->file_reader() != nullptr) {
        result.files = static_cast<uint32_t>(sources_->file_reader()->files().size());
    }
    result.warnings = reader_warnings_;
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

}  // namespace picket::sensor::engine
