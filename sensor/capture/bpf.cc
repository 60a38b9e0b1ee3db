#include "sensor/capture/capture.h"

#include <pcap/pcap.h>

namespace picket::sensor::capture {

struct BpfFilter::Impl {
    bpf_program prog{};
    ~Impl() { pcap_freecode(&prog); }
};

BpfFilter::BpfFilter(const std::string& expression, int linktype, uint32_t snaplen)
    : expression_(expression), linktype_(linktype) {
    if (expression_.empty()) {
        return;
    }
    // pcap_compile_nopcap is deprecated; a dead handle gives the same compiler and a place to
    // read the error text from.
    pcap_t* dead = pcap_open_dead(linktype, static_cast<int>(snaplen));
    if (dead == nullptr) {
        throw CaptureError("bad BPF expression '" + expression + "': cannot open a pcap handle");
    }
    auto impl = std::make_unique<Impl>();
    if (pcap_compile(dead, &impl->prog, expression.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
        std::string msg = "bad BPF expression '" + expression + "': " + pcap_geterr(dead);
        pcap_close(dead);
        throw CaptureError(msg);
    }
    pcap_close(dead);
    impl_ = std::move(impl);
}

BpfFilter::BpfFilter() = default;
BpfFilter::BpfFilter(BpfFilter&&) noexcept = default;
BpfFilter& BpfFilter::operator=(BpfFilter&&) noexcept = default;
BpfFilter::~BpfFilter() = default;

bool BpfFilter::matches(const RawPacket& p) const {
    if (!impl_) {
        return true;
    }
    pcap_pkthdr hdr{};
    hdr.ts.tv_sec = static_cast<time_t>(p.ts_ns / 1000000000);
    hdr.ts.tv_usec = static_cast<suseconds_t>((p.ts_ns % 1000000000) / 1000);
    hdr.caplen = p.caplen;
    hdr.len = p.wirelen;
    return pcap_offline_filter(&impl_->prog, &hdr, p.data) != 0;
}

const void* BpfFilter::program() const {
    return impl_ ? &impl_->prog : nullptr;
}

}  // namespace picket::sensor::capture
