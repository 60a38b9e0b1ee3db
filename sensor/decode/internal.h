// Internal to sensor/decode: wire constants, big-endian loads, the one's complement sum and the
// link-layer parse that decode_packet and dispatch_hash share. Everything is inline: it sits
// on the per-packet path of a worker and of the dispatcher. Other modules include decode.h.
#pragma once

#include <cstdint>
#include <cstring>

#include "sensor/decode/decode.h"

namespace picket::sensor::decode::internal {

inline constexpr uint16_t kEtherIpv4 = 0x0800;
inline constexpr uint16_t kEtherArp = 0x0806;
inline constexpr uint16_t kEtherIpv6 = 0x86dd;
inline constexpr uint16_t kEtherVlan = 0x8100;
inline constexpr uint16_t kEtherQinq = 0x88a8;
inline constexpr uint16_t kEtherQinqOld = 0x9100;

inline uint16_t rd16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t rd32(const uint8_t* p) {
    return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
           (static_cast<uint32_t>(p[2]) << 8) | p[3];
}

inline bool is_vlan_ethertype(uint16_t et) {
    return et == kEtherVlan || et == kEtherQinq || et == kEtherQinqOld;
}

// One's complement sum (RFC 1071). Words are loaded in host order: the folded sum of a
// correct message is 0xffff in either byte order, so no swapping is needed as long as every
// part (pseudo-header included) is summed the same way and starts at an even offset.
// A T loaded from unaligned memory, in host byte order.
template <class T>
inline T load(const uint8_t* d) {
    T v;
    std::memcpy(&v, d, sizeof(v));
    return v;
}

inline uint64_t csum_add(uint64_t acc, const uint8_t* d, uint32_t n) {
    for (; n >= 8; d += 8, n -= 8) {
        acc += load<uint32_t>(d);
        acc += load<uint32_t>(d + 4);
    }
    if (n >= 4) {
        acc += load<uint32_t>(d);
        d += 4;
        n -= 4;
    }
    if (n >= 2) {
        acc += load<uint16_t>(d);
        d += 2;
        n -= 2;
    }
    if (n == 1) {
        const uint8_t tail[2] = {d[0], 0};
        acc += load<uint16_t>(tail);
    }
    return acc;
}

inline bool csum_ok(uint64_t acc) {
    while (acc >> 16) {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    return acc == 0xffff;
}

// Family values of DLT_NULL / DLT_LOOP: AF_INET is 2 everywhere, AF_INET6 differs per OS
// (Linux 10, NetBSD/OpenBSD 24, FreeBSD 28, macOS 30).
inline uint16_t null_family_ethertype(uint32_t family) {
    switch (family) {
        case 2:
            return kEtherIpv4;
        case 10:
        case 24:
        case 28:
        case 30:
            return kEtherIpv6;
        default:
            return 0;
    }
}

// DLT_NULL is in the capturing host's byte order, which may not be ours: accept the family
// in either order (as Wireshark does).
inline uint16_t null_ethertype(const uint8_t* d, bool network_order) {
    uint32_t fam = rd32(d);
    uint16_t et = null_family_ethertype(fam);
    if (network_order || et != 0) {
        return et;
    }
    fam = __builtin_bswap32(fam);
    return null_family_ethertype(fam);
}

// Raw IP: the version nibble picks the family.
inline uint16_t raw_ethertype(uint8_t first) {
    switch (first >> 4) {
        case 4:
            return kEtherIpv4;
        case 6:
            return kEtherIpv6;
        default:
            return 0;
    }
}

// The link header of a frame: its kind (for the counters), whether the frame is too short to
// hold it, the ethertype of what follows (VLAN tags not yet skipped; for raw IP and loopback
// 0 when the version or family is not IPv4/IPv6) and where that starts.
struct LinkLayer {
    enum Kind : uint8_t { kUnknown, kEthernet, kSll, kRaw, kNull };
    Kind kind = kUnknown;
    bool too_short = false;
    uint16_t ethertype = 0;
    uint32_t hdr_len = 0;
};

inline LinkLayer link_layer(int linktype, const uint8_t* d, uint32_t len) {
    // A fixed header of hdr_len bytes with the ethertype at et_at.
    auto fixed = [&](LinkLayer::Kind kind, uint32_t hdr_len, uint32_t et_at) {
        if (len < hdr_len) {
            return LinkLayer{kind, true, 0, 0};
        }
        return LinkLayer{kind, false, rd16(d + et_at), hdr_len};
    };
    switch (linktype) {
        case kDltEn10mb:
            return fixed(LinkLayer::kEthernet, 14, 12);
        case kDltLinuxSll:
            return fixed(LinkLayer::kSll, 16, 14);
        case kDltLinuxSll2:
            return fixed(LinkLayer::kSll, 20, 0);
        case kDltRaw:
        case kDltRawOpenBsd:
        case kLinktypeRaw:
        case kDltIpv4:
        case kDltIpv6:
            if (len < 1) {
                return LinkLayer{LinkLayer::kRaw, true, 0, 0};
            }
            return LinkLayer{LinkLayer::kRaw, false, raw_ethertype(d[0]), 0};
        case kDltNull:
        case kDltLoop:
            if (len < 4) {
                return LinkLayer{LinkLayer::kNull, true, 0, 0};
            }
            return LinkLayer{LinkLayer::kNull, false, null_ethertype(d, linktype == kDltLoop), 4};
        default:
            return LinkLayer{};
    }
}

}  // namespace picket::sensor::decode::internal
