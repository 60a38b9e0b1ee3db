// open_sources(): the one place that turns capture.mode into sources. Its own library
// (picket_capture_sources), which links the DPDK backend when the build has it.
#include <pcap/dlt.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "sensor/capture/capture.h"
#include "sensor/capture/inline.h"
#ifdef PICKET_HAVE_DPDK
#include "sensor/capture/dpdk.h"
#endif

namespace picket::sensor::capture {
namespace {

// Link types a capture may carry; user-mode BPF keeps one compiled program per type.
constexpr int kLinkTypes[] = {DLT_EN10MB, DLT_RAW, DLT_LINUX_SLL, DLT_NULL, DLT_LOOP, 276};

bool is_inline(const SourceOptions& o) {
    return o.mode == CaptureMode::kNfqueue || o.mode == CaptureMode::kAfPacketInline ||
           (o.mode == CaptureMode::kDpdk && o.dpdk.inline_mode);
}

}  // namespace

Sources::~Sources() {
    workers_.clear();
    owned_.clear();  // every source goes before the DPDK ports they poll
#ifdef PICKET_HAVE_DPDK
    delete dpdk_;
#endif
}

std::unique_ptr<Sources> open_sources(const SourceOptions& o) {
    std::unique_ptr<Sources> s(new Sources);
    if (!o.bpf.empty()) {
        // Compile once for Ethernet up front so a bad expression fails at start-up with
        // libpcap's message, whatever the mode.
        s->kernel_bpf_ = std::make_unique<BpfFilter>(o.bpf, DLT_EN10MB, o.snaplen);
        // Inline sources have no kernel filter: their packets are filtered in user space (a
        // packet the filter rejects passes uninspected).
        if (o.bpf_mode == BpfMode::kUser || is_inline(o)) {
            for (int lt : kLinkTypes) {
                try {
                    s->user_filters_.emplace(lt, BpfFilter(o.bpf, lt, o.snaplen));
                } catch (const CaptureError&) {
                    // The expression names a layer this link type lacks; such frames pass.
                }
            }
        }
    }
    const BpfFilter* kernel_filter =
        s->kernel_bpf_ && o.bpf_mode == BpfMode::kKernel ? s->kernel_bpf_.get() : nullptr;
    uint32_t workers = o.workers;
    std::vector<WorkerSource>& ws = s->workers_;
    // A source owned here, for the next worker.
    const auto add = [&](std::unique_ptr<PacketSource> src, InlineSource* inl) {
        WorkerSource w;
        w.source = src.get();
        w.inline_source = inl;
        if (inl != nullptr) {
            w.injector = bridge_injector(*src);
        }
        s->owned_.push_back(std::move(src));
        ws.push_back(w);
        return &ws.back();
    };

    switch (o.mode) {
        case CaptureMode::kPcapFile:
        case CaptureMode::kPcapLive: {
            bool blocking = false;
            if (o.mode == CaptureMode::kPcapFile) {
                s->file_reader_ = std::make_unique<PcapFileReader>(o.pcap_paths);
                if (kernel_filter != nullptr) {
                    s->file_reader_->set_filter(*kernel_filter);
                }
                // Plain reading is exact: the reader waits for a full queue. Live-like replay
                // drops and counts instead, as a live capture does.
                blocking = !o.pcap_replay;
            } else {
                s->live_reader_ = std::make_unique<PcapLiveReader>(
                    o.iface, o.snaplen, static_cast<int>(o.pcap_buffer_bytes >> 20), o.promisc);
                if (kernel_filter != nullptr) {
                    s->live_reader_->set_filter(*kernel_filter);
                }
            }
            s->dispatcher_ = std::make_unique<Dispatcher>(workers, o.queue_bytes, o.hash, blocking,
                                                          o.queue_packets);
            for (uint32_t i = 0; i < workers; ++i) {
                ws.push_back(WorkerSource{&s->dispatcher_->source(i)});
            }
            break;
        }
        case CaptureMode::kAfPacket: {
            AfPacketOptions opts = o.afpacket;
            opts.iface = o.iface;
            if (opts.fanout_id == 0) {
                opts.fanout_id = static_cast<uint16_t>(getpid() & 0xffff);
            }
            opts.kernel_filter = kernel_filter;
            for (uint32_t i = 0; i < workers; ++i) {
                add(open_afpacket(opts), nullptr);
            }
            break;
        }
        case CaptureMode::kNfqueue: {
            // Worker i binds queue first + i; responses leave through raw sockets of this
            // namespace, routed like the host's own traffic.
            for (uint32_t i = 0; i < workers; ++i) {
                NfqueueOptions opts = o.nfqueue;
                opts.queue = static_cast<uint16_t>(o.nfqueue.queue + i);
                auto src = make_nfqueue_source(opts);
                InlineSource* inl = src.get();
                add(std::move(src), inl)->raw_socket_responses = true;
            }
            break;
        }
        case CaptureMode::kAfPacketInline: {
            AfPacketInlineOptions opts = o.afpacket_inline;
            if (opts.fanout_id == 0) {
                // One id for every worker (they join the same two groups), +1 must fit too.
                opts.fanout_id = static_cast<uint16_t>(1 + getpid() % 65534);
            }
            for (uint32_t i = 0; i < workers; ++i) {
                auto src = make_afpacket_inline_source(opts);
                InlineSource* inl = src.get();
                add(std::move(src), inl);
            }
            break;
        }
        case CaptureMode::kDpdk: {
#ifdef PICKET_HAVE_DPDK
            // The ports decide how many workers get packets.
            DpdkOptions opts = o.dpdk;
            opts.rx_queues = static_cast<uint16_t>(std::min<uint32_t>(workers, UINT16_MAX));
            s->dpdk_ = new DpdkContext(opts);
            s->warnings_ = s->dpdk_->warnings();  // already "DPDK: ..."
            if (s->dpdk_->queues() < workers) {
                // Virtual PMDs have no RSS: one queue, so one worker; more would sit idle.
                s->warnings_.push_back(
                    "DPDK: the ports have " + std::to_string(s->dpdk_->queues()) +
                    " RX queue(s): running " + std::to_string(s->dpdk_->queues()) +
                    " worker(s) instead of " + std::to_string(workers));
                workers = s->dpdk_->queues();
            }
            // Worker i polls queue i of every port; inline, reject responses leave through the
            // same source (side 2k / 2k+1 = pair k), as on the AF_PACKET bridge.
            for (uint32_t i = 0; i < workers; ++i) {
                auto src = make_dpdk_source(*s->dpdk_, static_cast<uint16_t>(i));
                InlineSource* inl = o.dpdk.inline_mode ? src.get() : nullptr;
                add(std::move(src), inl);
            }
#else
            throw CaptureError(
                "--capture dpdk: this build has no DPDK support (libdpdk-dev was not found when "
                "it was built)");
#endif
            break;
        }
    }
    return s;
}

}  // namespace picket::sensor::capture
