#include "sensor/capture/capture.h"

#include <pcap/pcap.h>
#include <poll.h>

namespace picket::sensor::capture {

namespace {

// A reason an operator can act on, then libpcap's own text.
std::string activate_reason(int rc, pcap_t* p) {
    const std::string detail = pcap_geterr(p);
    switch (rc) {
        case PCAP_ERROR_NO_SUCH_DEVICE:
            return "no such interface";
        case PCAP_ERROR_PERM_DENIED:
            return "permission denied: capture needs root or CAP_NET_RAW (" + detail + ")";
        case PCAP_ERROR_IFACE_NOT_UP:
            return "interface is down";
        case PCAP_ERROR_PROMISC_PERM_DENIED:
            return "permission denied for promiscuous mode (" + detail + ")";
        default:
            return std::string(pcap_statustostr(rc)) + (detail.empty() ? "" : ": " + detail);
    }
}

}  // namespace

PcapLiveReader::PcapLiveReader(const std::string& iface, uint32_t snaplen, int buffer_mb,
                               bool promisc)
    : iface_(iface) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* p = pcap_create(iface.c_str(), errbuf);
    if (p == nullptr) {
        throw CaptureError("interface '" + iface + "': " + errbuf);
    }
    pcap_set_snaplen(p, static_cast<int>(snaplen));
    pcap_set_promisc(p, promisc ? 1 : 0);
    // Short buffer timeout: next() polls with the caller's timeout, this only bounds how long
    // a packet may wait in a partly filled kernel block.
    pcap_set_timeout(p, 10);
    if (buffer_mb > 0) {
        pcap_set_buffer_size(p, buffer_mb * 1024 * 1024);
    }
    pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO);
    const int rc = pcap_activate(p);
    if (rc < 0) {
        std::string msg = "interface '" + iface + "': " + activate_reason(rc, p);
        pcap_close(p);
        throw CaptureError(msg);
    }
    if (pcap_setnonblock(p, 1, errbuf) != 0) {
        std::string msg = "interface '" + iface + "': " + errbuf;
        pcap_close(p);
        throw CaptureError(msg);
    }
    pcap_ = p;
}

PcapLiveReader::~PcapLiveReader() {
    if (pcap_ != nullptr) {
        pcap_close(static_cast<pcap_t*>(pcap_));
    }
}

int PcapLiveReader::linktype() const {
    return pcap_datalink(static_cast<pcap_t*>(pcap_));
}

void PcapLiveReader::set_filter(const BpfFilter& filter) {
    auto* p = static_cast<pcap_t*>(pcap_);
    if (filter.empty()) {
        return;
    }
    BpfFilter relinked;
    const BpfFilter* f = &filter;
    if (filter.linktype() != linktype()) {
        relinked = BpfFilter(filter.expression(), linktype());
        f = &relinked;
    }
    // pcap_setfilter copies the program, so the relinked one may go away.
    auto* prog = const_cast<bpf_program*>(static_cast<const bpf_program*>(f->program()));
    if (pcap_setfilter(p, prog) != 0) {
        throw CaptureError("interface '" + iface_ + "': cannot set filter '" + filter.expression() +
                           "': " + pcap_geterr(p));
    }
}

ReadResult PcapLiveReader::next(RawPacket& pkt, int timeout_ms) {
    auto* p = static_cast<pcap_t*>(pcap_);
    for (int attempt = 0; attempt < 2; ++attempt) {
        pcap_pkthdr* hdr = nullptr;
        const u_char* data = nullptr;
        const int rc = pcap_next_ex(p, &hdr, &data);
        if (rc == 1) {
            pkt.data = data;
            pkt.caplen = hdr->caplen;
            pkt.wirelen = hdr->len;
            pkt.ts_ns = static_cast<int64_t>(hdr->ts.tv_sec) * 1000000000 + hdr->ts.tv_usec;
            pkt.linktype = pcap_datalink(p);
            pkt.pcap_cnt = ++pcap_cnt_;
            return ReadResult::kOk;
        }
        if (rc < 0) {
            error_ = "interface '" + iface_ + "': " + pcap_geterr(p);
            return ReadResult::kError;
        }
        if (attempt == 0) {
            pollfd pfd{pcap_get_selectable_fd(p), POLLIN, 0};
            if (pfd.fd < 0 || poll(&pfd, 1, timeout_ms) <= 0) {
                return ReadResult::kTimeout;
            }
        }
    }
    return ReadResult::kTimeout;
}

CaptureStats PcapLiveReader::stats() {
    pcap_stat st{};
    if (pcap_stats(static_cast<pcap_t*>(pcap_), &st) == 0) {
        // On Linux ps_recv already includes the ring drops (kernel tp_packets semantics).
        const uint32_t drop = st.ps_drop + st.ps_ifdrop;
        total_recv_ += static_cast<uint32_t>(st.ps_recv - last_recv_);
        total_drop_ += static_cast<uint32_t>(drop - last_drop_);
        last_recv_ = st.ps_recv;
        last_drop_ = drop;
    }
    return CaptureStats{total_recv_, total_drop_};
}

}  // namespace picket::sensor::capture
