// Shared by the TPACKET_V3 sources (afpacket.cc, afpacket_inline.cc): the walk over a mapped
// RX ring's blocks and putting back the outer 802.1Q tag the kernel moved into the frame
// header. Internal to sensor/capture.
#pragma once

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sensor/capture/capture.h"

namespace picket::sensor::capture {

inline constexpr uint32_t kVlanTagLen = 4;
inline constexpr uint32_t kMacAddrsLen = 12;

// The kernel moved the outer VLAN tag of the frame at `*data` into tp_vlan_tci: write it back
// in front of the EtherType (as libpcap does), using the PACKET_RESERVE headroom the ring was
// set up with, and grow *caplen / *wirelen. Done once per frame: the header is updated so that
// a second walk over it does not insert the tag again.
inline void reinsert_vlan_tag(tpacket3_hdr* hdr, uint8_t** data, uint32_t* caplen,
                              uint32_t* wirelen) {
    if ((hdr->tp_status & TP_STATUS_VLAN_VALID) == 0 || *caplen < kMacAddrsLen) {
        return;
    }
    const uint16_t tpid =
        (hdr->tp_status & TP_STATUS_VLAN_TPID_VALID) != 0 ? hdr->hv1.tp_vlan_tpid : ETH_P_8021Q;
    std::memmove(*data - kVlanTagLen, *data, kMacAddrsLen);
    *data -= kVlanTagLen;
    const uint16_t tag[2] = {htons(tpid), htons(static_cast<uint16_t>(hdr->hv1.tp_vlan_tci))};
    std::memcpy(*data + kMacAddrsLen, tag, sizeof(tag));
    *caplen += kVlanTagLen;
    *wirelen += kVlanTagLen;
    hdr->tp_status &= ~TP_STATUS_VLAN_VALID;
    hdr->tp_mac -= kVlanTagLen;
    hdr->tp_snaplen = *caplen;
    hdr->tp_len = *wirelen;
}

// One mapped TPACKET_V3 RX ring and the walk position over it. Blocks are walked in ring
// order; a block goes back to the kernel (give_back) only once every batch holding its frames
// was released. Used by the owning worker only.
struct TpacketRing {
    uint8_t* map = nullptr;
    size_t bytes = 0;
    uint32_t block_size = 0;
    uint32_t block_count = 0;
    uint64_t cur_seq = 0;   // block being walked (index = seq % block_count)
    uint32_t cur_idx = 0;   // frames taken from it
    uint32_t cur_off = 0;   // offset of the next frame
    uint64_t returned = 0;  // blocks before this are the kernel's

    tpacket_block_desc* block(uint64_t seq) const {
        return reinterpret_cast<tpacket_block_desc*>(map + (seq % block_count) * block_size);
    }
    bool owns(const uint8_t* p) const { return p >= map && p < map + bytes; }
    // Every block before `upto` (a walk position) goes back to the kernel.
    void give_back(uint64_t upto) {
        for (; returned < upto; ++returned) {
            __atomic_store_n(&block(returned)->hdr.bh1.block_status, TP_STATUS_KERNEL,
                             __ATOMIC_RELEASE);
        }
    }

    // Appends the frames the kernel has handed over to `batch` (up to kMaxBatch), as Ethernet
    // packets with their outer VLAN tag put back, verdict accept. keep(hdr) false skips a
    // frame (it is walked over all the same). Stops when every block is held by us.
    template <typename Keep>
    void take_ready(Batch& batch, Keep keep) {
        while (batch.count < kMaxBatch) {
            if (cur_seq - returned >= block_count) {
                break;  // every block is held by us: wait for release()
            }
            tpacket_block_desc* desc = block(cur_seq);
            if ((__atomic_load_n(&desc->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) ==
                0) {
                break;
            }
            const uint32_t num = desc->hdr.bh1.num_pkts;
            if (cur_idx == 0) {
                cur_off = desc->hdr.bh1.offset_to_first_pkt;
            }
            if (cur_idx < num) {
                auto* hdr =
                    reinterpret_cast<tpacket3_hdr*>(reinterpret_cast<uint8_t*>(desc) + cur_off);
                cur_off += hdr->tp_next_offset;
                ++cur_idx;
                if (keep(hdr)) {
                    uint8_t* data = reinterpret_cast<uint8_t*>(hdr) + hdr->tp_mac;
                    uint32_t caplen = hdr->tp_snaplen;
                    uint32_t wirelen = hdr->tp_len;
                    reinsert_vlan_tag(hdr, &data, &caplen, &wirelen);
                    RawPacket& p = batch.pkts[batch.count];
                    p.data = data;
                    p.caplen = caplen;
                    p.wirelen = wirelen;
                    p.ts_ns = static_cast<int64_t>(hdr->tp_sec) * 1000000000 + hdr->tp_nsec;
                    p.linktype = 1;  // DLT_EN10MB
                    p.pcap_cnt = 0;
                    batch.verdict[batch.count] = Verdict::kAccept;
                    ++batch.count;
                }
            }
            if (cur_idx >= num) {
                ++cur_seq;
                cur_idx = 0;
            }
        }
    }
};

}  // namespace picket::sensor::capture
