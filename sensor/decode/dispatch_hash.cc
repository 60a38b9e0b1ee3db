// dispatch_hash: the reader/dispatcher thread's partial parse (link layer, VLAN tags, IP
// addresses) that picks a worker for a frame before any decoding.
#include "sensor/decode/decode.h"

#include <algorithm>
#include <utility>

#include "sensor/decode/internal.h"

namespace picket::sensor::decode {

using internal::kEtherIpv4;
using internal::kEtherIpv6;
using internal::rd16;

uint32_t dispatch_hash(int linktype, const uint8_t* d, uint32_t caplen, bool use_vlan) {
    if (d == nullptr) {
        return 0;
    }
    const internal::LinkLayer link = internal::link_layer(linktype, d, caplen);
    if (link.kind == internal::LinkLayer::kUnknown || link.too_short) {
        return 0;
    }
    uint16_t et = link.ethertype;
    uint32_t off = link.hdr_len;
    uint64_t vlan = 0;
    for (int i = 0; i < 2 && internal::is_vlan_ethertype(et); ++i) {
        if (caplen - off < 4) {
            return 0;
        }
        vlan = (vlan << 12) | (rd16(d + off) & 0x0fffu) | (1u << 31);
        et = rd16(d + off + 2);
        off += 4;
    }
    if (!use_vlan) {
        vlan = 0;  // vlan.use-for-tracking: false (both directions must meet on one worker)
    }
    if (et == kEtherIpv4) {
        if (caplen - off < 20) {
            return 0;
        }
        uint32_t a, b;
        std::memcpy(&a, d + off + 12, 4);
        std::memcpy(&b, d + off + 16, 4);
        const uint64_t lo = std::min(a, b);
        const uint64_t hi = std::max(a, b);
        const uint64_t h = mix64((lo << 32 | hi) ^ mix64(vlan ^ 0x4));
        return static_cast<uint32_t>(h ^ (h >> 32));
    }
    if (et == kEtherIpv6) {
        if (caplen - off < 40) {
            return 0;
        }
        const uint8_t* a = d + off + 8;
        const uint8_t* b = d + off + 24;
        if (std::memcmp(a, b, 16) > 0) {
            std::swap(a, b);
        }
        uint64_t w[4];
        std::memcpy(w, a, 16);
        std::memcpy(w + 2, b, 16);
        uint64_t h = mix64(vlan ^ 0x6);
        for (uint64_t x : w) {
            h = mix64(h ^ x) + 0x9e3779b97f4a7c15ULL;
        }
        return static_cast<uint32_t>(h ^ (h >> 32));
    }
    return 0;
}

}  // namespace picket::sensor::decode
