#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sensor/capture/inline.h"
#include "sensor/capture/tpacket.h"

// Not in Debian 12's uapi headers; Linux 6.9 and later accept it (older kernels: EINVAL, and
// the frames the bridge namespace itself sends are skipped in user space instead).
#ifndef PACKET_FANOUT_FLAG_IGNORE_OUTGOING
#define PACKET_FANOUT_FLAG_IGNORE_OUTGOING 0x4000
#endif

namespace picket::sensor::capture {

namespace {

// One interface of the bridge: a TPACKET_V3 RX ring in that interface's fanout group. The
// same socket transmits the frames going out of this interface (plain send(): see README).
struct Ring : TpacketRing {
    std::string name;
    int ifindex = 0;
    int fd = -1;
    uint64_t packets = 0;
    uint64_t drops = 0;
};

class AfPacketInlineSource final : public InlineSource, public BridgeInjector {
public:
    explicit AfPacketInlineSource(const AfPacketInlineOptions& o);
    ~AfPacketInlineSource() override;

    ReadResult next_batch(Batch& batch, int timeout_ms) override;
    void release(Batch& batch) override;
    CaptureStats stats() override;
    std::string error() const override { return error_; }
    InlineStats inline_stats() const override { return istats_; }

    int side_of(const uint8_t* data) const override {
        return rings_[0].owns(data) ? 0 : rings_[1].owns(data) ? 1 : -1;
    }
    bool inject(int side, const uint8_t* frame, size_t len) override;

private:
    void open_ring(Ring& r, const AfPacketInlineOptions& o, uint16_t fanout_id);
    [[noreturn]] void fail(const Ring& r, const std::string& what, int err) const {
        throw CaptureError(prefix_ + "interface '" + r.name + "': " + what + ": " +
                           std::strerror(err));
    }
    void take_ready(Ring& r, Batch& batch);
    void send_side(int side, const uint32_t* idx, uint32_t n, const Batch& batch);

    std::string prefix_;
    Ring rings_[2];
    uint32_t start_ = 0;  // ring read first in the next batch (alternates for fairness)
    uint32_t held_ = 0;   // batches handed out and not yet released
    InlineStats istats_;
    std::string error_;
};

void AfPacketInlineSource::open_ring(Ring& r, const AfPacketInlineOptions& o, uint16_t fanout_id) {
    r.fd = socket(AF_PACKET, SOCK_RAW, 0);  // receives nothing until bind()
    if (r.fd < 0) {
        fail(r, "socket(AF_PACKET)", errno);
    }
    int version = TPACKET_V3;
    if (setsockopt(r.fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) != 0) {
        fail(r, "PACKET_VERSION TPACKET_V3", errno);
    }
    unsigned reserve = kVlanTagLen;  // room to put back a VLAN tag the kernel stripped
    if (setsockopt(r.fd, SOL_PACKET, PACKET_RESERVE, &reserve, sizeof(reserve)) != 0) {
        fail(r, "PACKET_RESERVE", errno);
    }
    const int one = 1;
    // Frames this host sends out of the interface (our own forwards are excluded anyway:
    // the kernel never loops a packet back to the fanout group that sent it).
    setsockopt(r.fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    if (o.qdisc_bypass &&
        setsockopt(r.fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) != 0) {
        fail(r, "PACKET_QDISC_BYPASS", errno);
    }
    tpacket_req3 req{};
    req.tp_block_size = o.block_size;
    req.tp_block_nr = o.block_count;
    req.tp_frame_size = 2048;  // only checked for consistency by V3
    req.tp_frame_nr = static_cast<unsigned>((static_cast<uint64_t>(o.block_size) * o.block_count) /
                                            req.tp_frame_size);
    req.tp_retire_blk_tov = o.block_timeout_ms;
    if (setsockopt(r.fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) != 0) {
        fail(r,
             "PACKET_RX_RING (block_size " + std::to_string(o.block_size) + ", blocks " +
                 std::to_string(o.block_count) + ")",
             errno);
    }
    r.block_size = o.block_size;
    r.block_count = o.block_count;
    r.bytes = static_cast<size_t>(o.block_size) * o.block_count;
    void* map = mmap(nullptr, r.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
    if (map == MAP_FAILED) {
        fail(r, "mmap of the RX ring", errno);
    }
    r.map = static_cast<uint8_t*>(map);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = r.ifindex;
    if (bind(r.fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
        fail(r, "bind", errno);
    }
    packet_mreq mreq{};
    mreq.mr_ifindex = r.ifindex;
    mreq.mr_type = PACKET_MR_PROMISC;
    if (setsockopt(r.fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof(mreq)) != 0) {
        fail(r, "PACKET_ADD_MEMBERSHIP promiscuous", errno);
    }
    // No PACKET_FANOUT_FLAG_DEFRAG: a reassembled datagram could not be forwarded (it is
    // larger than the MTU). Fragments hash on addresses only, so they stay together.
    uint32_t fanout = fanout_id | ((PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_IGNORE_OUTGOING) << 16);
    if (setsockopt(r.fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) != 0) {
        fanout = fanout_id | (PACKET_FANOUT_HASH << 16);
        if (setsockopt(r.fd, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) != 0) {
            fail(r, "PACKET_FANOUT id " + std::to_string(fanout_id), errno);
        }
    }
}

AfPacketInlineSource::AfPacketInlineSource(const AfPacketInlineOptions& o)
    : prefix_("bridge " + o.iface1 + ":" + o.iface2 + ": ") {
    if (o.iface1 == o.iface2) {
        throw CaptureError(prefix_ + "cannot bridge interface '" + o.iface1 + "' to itself");
    }
    rings_[0].name = o.iface1;
    rings_[1].name = o.iface2;
    for (Ring& r : rings_) {
        r.ifindex = static_cast<int>(if_nametoindex(r.name.c_str()));
        if (r.ifindex == 0) {
            throw CaptureError(prefix_ + "interface '" + r.name + "': no such interface");
        }
    }
    const uint16_t id = o.fanout_id != 0 ? o.fanout_id : static_cast<uint16_t>(getpid() & 0xffff);
    try {
        open_ring(rings_[0], o, id);
        open_ring(rings_[1], o, static_cast<uint16_t>(id + 1));
    } catch (...) {
        for (Ring& r : rings_) {
            if (r.map != nullptr) {
                munmap(r.map, r.bytes);
            }
            if (r.fd >= 0) {
                close(r.fd);
            }
        }
        throw;
    }
}

AfPacketInlineSource::~AfPacketInlineSource() {
    for (Ring& r : rings_) {
        if (r.map != nullptr) {
            munmap(r.map, r.bytes);
        }
        if (r.fd >= 0) {
            close(r.fd);
        }
    }
}

void AfPacketInlineSource::take_ready(Ring& r, Batch& batch) {
    // Frames this host sent out of the interface are not bridged (they are its own).
    r.take_ready(batch, [](const tpacket3_hdr* hdr) {
        const auto* sll = reinterpret_cast<const sockaddr_ll*>(
            reinterpret_cast<const uint8_t*>(hdr) + TPACKET_ALIGN(sizeof(tpacket3_hdr)));
        return sll->sll_pkttype != PACKET_OUTGOING;
    });
}

ReadResult AfPacketInlineSource::next_batch(Batch& batch, int timeout_ms) {
    batch.count = 0;
    const auto take = [&] {
        take_ready(rings_[start_], batch);
        take_ready(rings_[start_ ^ 1], batch);
        start_ ^= 1;
        if (batch.count == 0 && held_ == 0) {
            // Blocks that held only skipped (outgoing) frames: nobody will release them.
            for (Ring& r : rings_) {
                r.give_back(r.cur_seq);
            }
        }
    };
    take();
    if (batch.count == 0) {
        pollfd pfd[2] = {{rings_[0].fd, POLLIN | POLLERR, 0}, {rings_[1].fd, POLLIN | POLLERR, 0}};
        const int rc = poll(pfd, 2, timeout_ms);
        if (rc < 0 && errno != EINTR) {
            error_ = prefix_ + "poll: " + std::strerror(errno);
            return ReadResult::kError;
        }
        for (int i = 0; i < 2 && rc > 0; ++i) {
            if ((pfd[i].revents & POLLERR) != 0) {
                int err = 0;
                socklen_t len = sizeof(err);
                getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err == ENETDOWN) {
                    error_ = prefix_ + "interface '" + rings_[i].name + "': " + std::strerror(err);
                    return ReadResult::kError;
                }
            }
        }
        take();
        if (batch.count == 0) {
            return ReadResult::kTimeout;
        }
    }
    // Both rings' walk positions, 32 bits each: blocks before them are done once this batch
    // is released (fewer than 2^32 blocks are ever outstanding).
    batch.cookie = (rings_[0].cur_seq & 0xffffffffu) | (rings_[1].cur_seq << 32);
    ++held_;
    return ReadResult::kOk;
}

void AfPacketInlineSource::send_side(int side, const uint32_t* idx, uint32_t n,
                                     const Batch& batch) {
    mmsghdr msgs[kMaxBatch];
    iovec iov[kMaxBatch];
    for (uint32_t k = 0; k < n; ++k) {
        const RawPacket& p = batch.pkts[idx[k]];
        iov[k] = iovec{const_cast<uint8_t*>(p.data), p.caplen};
        msgs[k] = mmsghdr{};
        msgs[k].msg_hdr.msg_iov = &iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
    }
    const int fd = rings_[side].fd;
    uint32_t done = 0;
    while (done < n) {
        const int rc = sendmmsg(fd, msgs + done, n - done, 0);
        if (rc < 0) {
            if (errno == EINTR) {
                continue;
            }
            // This frame failed (EMSGSIZE: larger than the MTU, ENOBUFS...): count it and
            // go on with the next one.
            ++istats_.tx_errors;
            ++done;
            continue;
        }
        istats_.accepted += static_cast<uint32_t>(rc);
        done += static_cast<uint32_t>(rc);
    }
}

void AfPacketInlineSource::release(Batch& batch) {
    // Frames from side 0 leave on side 1 and vice versa, in arrival order per direction,
    // before their blocks go back to the kernel.
    uint32_t to[2][kMaxBatch];
    uint32_t n[2] = {0, 0};
    for (uint32_t i = 0; i < batch.count; ++i) {
        if (batch.verdict[i] == Verdict::kDrop) {
            ++istats_.dropped;
            continue;
        }
        const int out = rings_[0].owns(batch.pkts[i].data) ? 1 : 0;
        to[out][n[out]++] = i;
    }
    for (int side = 0; side < 2; ++side) {
        if (n[side] != 0) {
            send_side(side, to[side], n[side], batch);
        }
    }
    for (int i = 0; i < 2; ++i) {
        Ring& r = rings_[i];
        const uint32_t want = static_cast<uint32_t>(i == 0 ? batch.cookie : batch.cookie >> 32);
        r.give_back(r.returned + static_cast<uint32_t>(want - static_cast<uint32_t>(r.returned)));
    }
    if (held_ > 0) {
        --held_;
    }
    batch.count = 0;
}

bool AfPacketInlineSource::inject(int side, const uint8_t* frame, size_t len) {
    if (side < 0 || side > 1) {
        return false;
    }
    if (send(rings_[side].fd, frame, len, 0) != static_cast<ssize_t>(len)) {
        ++istats_.tx_errors;
        return false;
    }
    ++istats_.injected;
    return true;
}

CaptureStats AfPacketInlineSource::stats() {
    CaptureStats out;
    for (Ring& r : rings_) {
        tpacket_stats_v3 st{};
        socklen_t len = sizeof(st);
        if (getsockopt(r.fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) {
            r.packets += st.tp_packets;
            r.drops += st.tp_drops;
        }
        out.packets += r.packets;
        out.drops += r.drops;
    }
    return out;
}

}  // namespace

std::unique_ptr<InlineSource> make_afpacket_inline_source(const AfPacketInlineOptions& options) {
    return std::make_unique<AfPacketInlineSource>(options);
}

std::pair<std::string, std::string> parse_bridge(const std::string& spec) {
    const size_t colon = spec.find(':');
    if (colon == std::string::npos) {
        throw CaptureError("bad bridge '" + spec + "': expected IF1:IF2");
    }
    std::string a = spec.substr(0, colon);
    std::string b = spec.substr(colon + 1);
    if (a.empty() || b.empty() || b.find(':') != std::string::npos) {
        throw CaptureError("bad bridge '" + spec + "': expected IF1:IF2");
    }
    return {a, b};
}

BridgeInjector* bridge_injector(PacketSource& source) {
    return dynamic_cast<BridgeInjector*>(&source);
}

}  // namespace picket::sensor::capture
