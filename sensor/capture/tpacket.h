// Shared by the TPACKET_V3 sources (afpacket.cc, afpacket_inline.cc): putting back the outer
// 802.1Q tag the kernel moved into the frame header. Internal to sensor/capture.
#pragma once

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>

#include <cstdint>
#include <cstring>

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

}  // namespace picket::sensor::capture
