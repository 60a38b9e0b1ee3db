#include "sensor/capture/capture.h"
#include "sensor/capture/tpacket.h"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace picket::sensor::capture {

namespace {

static_assert(sizeof(bpf_insn) == sizeof(sock_filter), "bpf_insn and sock_filter must match");

// Owns the socket and the ring; one per worker, used by that worker only.
class AfPacketSource final : public PacketSource {
public:
    explicit AfPacketSource(const AfPacketOptions& o);
    ~AfPacketSource() override;

    ReadResult next_batch(Batch& batch, int timeout_ms) override;
    void release(Batch& batch) override;
    CaptureStats stats() override;
    std::string error() const override { return error_; }

private:
    [[noreturn]] void fail(const std::string& what, int err) const {
        throw CaptureError("interface '" + iface_ + "': " + what + ": " + std::strerror(err));
    }
    uint32_t take_ready(Batch& batch) {
        ring_.take_ready(batch, [](const tpacket3_hdr*) { return true; });
        return batch.count;
    }

    std::string iface_;
    int fd_ = -1;
    TpacketRing ring_;
    uint64_t packets_ = 0;
    uint64_t drops_ = 0;
    std::string error_;
};

AfPacketSource::AfPacketSource(const AfPacketOptions& o) : iface_(o.iface) {
    const unsigned ifindex = if_nametoindex(o.iface.c_str());
    if (ifindex == 0) {
        throw CaptureError("interface '" + o.iface + "': no such interface");
    }
    if (o.kernel_filter != nullptr && !o.kernel_filter->empty() &&
        o.kernel_filter->linktype() != DLT_EN10MB) {
        throw CaptureError("interface '" + o.iface + "': kernel filter '" +
                           o.kernel_filter->expression() + "' is not compiled for Ethernet");
    }
    // Protocol 0: the socket receives nothing until bind(), so no unfiltered packet can slip
    // in before the filter and the ring are in place.
    fd_ = socket(AF_PACKET, SOCK_RAW, 0);
    if (fd_ < 0) {
        fail("socket(AF_PACKET)", errno);
    }
    try {
        int version = TPACKET_V3;
        if (setsockopt(fd_, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) != 0) {
            fail("PACKET_VERSION TPACKET_V3", errno);
        }
        // Headroom in front of each frame so a VLAN tag the kernel stripped can be put back.
        unsigned reserve = kVlanTagLen;
        if (setsockopt(fd_, SOL_PACKET, PACKET_RESERVE, &reserve, sizeof(reserve)) != 0) {
            fail("PACKET_RESERVE", errno);
        }
        if (o.kernel_filter != nullptr && !o.kernel_filter->empty()) {
            const auto* prog = static_cast<const bpf_program*>(o.kernel_filter->program());
            sock_fprog fprog{};
            fprog.len = static_cast<unsigned short>(prog->bf_len);
            fprog.filter = reinterpret_cast<sock_filter*>(prog->bf_insns);
            if (setsockopt(fd_, SOL_SOCKET, SO_ATTACH_FILTER, &fprog, sizeof(fprog)) != 0) {
                fail("SO_ATTACH_FILTER '" + o.kernel_filter->expression() + "'", errno);
            }
        }
        tpacket_req3 req{};
        req.tp_block_size = o.block_size;
        req.tp_block_nr = o.block_count;
        req.tp_frame_size = o.frame_size;
        req.tp_frame_nr =
            o.frame_size == 0
                ? 0
                : static_cast<unsigned>((static_cast<uint64_t>(o.block_size) * o.block_count) /
                                        o.frame_size);
        req.tp_retire_blk_tov = o.block_timeout_ms;
        if (setsockopt(fd_, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) != 0) {
            fail("PACKET_RX_RING (block_size " + std::to_string(o.block_size) + ", blocks " +
                     std::to_string(o.block_count) + ", frame_size " +
                     std::to_string(o.frame_size) + ")",
                 errno);
        }
        ring_.block_size = o.block_size;
        ring_.block_count = o.block_count;
        ring_.bytes = static_cast<size_t>(o.block_size) * o.block_count;
        void* map = mmap(nullptr, ring_.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (map == MAP_FAILED) {
            fail("mmap of the RX ring", errno);
        }
        ring_.map = static_cast<uint8_t*>(map);

        sockaddr_ll sll{};
        sll.sll_family = AF_PACKET;
        sll.sll_protocol = htons(ETH_P_ALL);
        sll.sll_ifindex = static_cast<int>(ifindex);
        if (bind(fd_, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
            fail("bind", errno);
        }
        if (o.promisc) {
            packet_mreq mreq{};
            mreq.mr_ifindex = static_cast<int>(ifindex);
            mreq.mr_type = PACKET_MR_PROMISC;
            if (setsockopt(fd_, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq, sizeof(mreq)) != 0) {
                fail("PACKET_ADD_MEMBERSHIP promiscuous", errno);
            }
        }
        const uint32_t id =
            o.fanout_id != 0 ? o.fanout_id : (static_cast<uint32_t>(getpid()) & 0xffff);
        const uint32_t fanout = id | ((PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG) << 16);
        if (setsockopt(fd_, SOL_PACKET, PACKET_FANOUT, &fanout, sizeof(fanout)) != 0) {
            fail("PACKET_FANOUT id " + std::to_string(id), errno);
        }
    } catch (...) {
        if (ring_.map != nullptr) {
            munmap(ring_.map, ring_.bytes);
        }
        close(fd_);
        throw;
    }
}

AfPacketSource::~AfPacketSource() {
    if (ring_.map != nullptr) {
        munmap(ring_.map, ring_.bytes);
    }
    if (fd_ >= 0) {
        close(fd_);
    }
}

ReadResult AfPacketSource::next_batch(Batch& batch, int timeout_ms) {
    batch.count = 0;
    if (take_ready(batch) == 0) {
        pollfd pfd{fd_, POLLIN | POLLERR, 0};
        const int rc = poll(&pfd, 1, timeout_ms);
        if (rc < 0 && errno != EINTR) {
            error_ = "interface '" + iface_ + "': poll: " + std::strerror(errno);
            return ReadResult::kError;
        }
        if (rc > 0 && (pfd.revents & POLLERR) != 0) {
            int err = 0;
            socklen_t len = sizeof(err);
            getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
            if (err == ENETDOWN) {
                error_ = "interface '" + iface_ + "': " + std::strerror(err);
                return ReadResult::kError;
            }
        }
        if (take_ready(batch) == 0) {
            return ReadResult::kTimeout;
        }
    }
    // Blocks before the walk position are fully taken once this batch is released.
    batch.cookie = ring_.cur_seq;
    return ReadResult::kOk;
}

void AfPacketSource::release(Batch& batch) {
    // Batches are released in order, so every block before the cookie is done with.
    ring_.give_back(batch.cookie);
    batch.count = 0;
}

CaptureStats AfPacketSource::stats() {
    // Reset on read by the kernel; tp_packets already includes tp_drops (af_packet.c adds
    // them), which is Suricata's capture.kernel_packets.
    tpacket_stats_v3 st{};
    socklen_t len = sizeof(st);
    if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) {
        packets_ += st.tp_packets;
        drops_ += st.tp_drops;
    }
    return CaptureStats{packets_, drops_};
}

}  // namespace

std::unique_ptr<PacketSource> open_afpacket(const AfPacketOptions& options) {
    return std::make_unique<AfPacketSource>(options);
}

}  // namespace picket::sensor::capture
