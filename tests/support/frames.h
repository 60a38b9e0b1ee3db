// Test-only frame builders: craft Ethernet / IPv4 / IPv6 / TCP / UDP / ICMP byte arrays with
// correct lengths and checksums (computed here independently of the decoder, with the plain
// RFC 1071 big-endian sum) so that tests can then corrupt exactly one field. Every field a
// suite relies on (addresses, MACs, TOS, IP id, L4 checksum on or off) is a parameter with a
// default, so suites that need other bytes say so at the call site.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace picket::testing::frames {

using Bytes = std::vector<uint8_t>;

inline void put16(Bytes& b, size_t off, uint16_t v) {
    b[off] = static_cast<uint8_t>(v >> 8);
    b[off + 1] = static_cast<uint8_t>(v);
}
inline void put32(Bytes& b, size_t off, uint32_t v) {
    put16(b, off, static_cast<uint16_t>(v >> 16));
    put16(b, off + 2, static_cast<uint16_t>(v));
}
inline uint16_t get16(const Bytes& b, size_t off) {
    return static_cast<uint16_t>((b[off] << 8) | b[off + 1]);
}

inline Bytes cat(std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes& p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

inline uint32_t sum16(const uint8_t* d, size_t n, uint32_t acc = 0) {
    for (size_t i = 0; i < n; i += 2) {
        acc += static_cast<uint32_t>(d[i] << 8) | (i + 1 < n ? d[i + 1] : 0);
    }
    return acc;
}
inline uint16_t fold(uint32_t acc) {
    while (acc >> 16) {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    return static_cast<uint16_t>(~acc & 0xffff);
}

inline constexpr uint8_t kTcp = 6;
inline constexpr uint8_t kUdp = 17;
inline constexpr uint8_t kIcmp = 1;
inline constexpr uint8_t kIcmp6 = 58;

// L4 headers with a zero checksum; ipv4()/ipv6() fill it in.
inline Bytes tcp(uint16_t sport, uint16_t dport, uint8_t flags, const Bytes& opts = {},
                 const Bytes& payload = {}) {
    Bytes b(20 + opts.size() + payload.size());
    put16(b, 0, sport);
    put16(b, 2, dport);
    put32(b, 4, 1000);
    put32(b, 8, 2000);
    b[12] = static_cast<uint8_t>(((20 + opts.size()) / 4) << 4);
    b[13] = flags;
    put16(b, 14, 65535);
    std::copy(opts.begin(), opts.end(), b.begin() + 20);
    std::copy(payload.begin(), payload.end(), b.begin() + 20 + opts.size());
    return b;
}
// Sets the sequence and acknowledgement numbers and the window of a tcp() segment (defaults
// 1000, 2000, 65535).
inline void set_tcp_numbers(Bytes& seg, uint32_t seq, uint32_t ack, uint16_t window) {
    put32(seg, 4, seq);
    put32(seg, 8, ack);
    put16(seg, 14, window);
}
inline Bytes udp(uint16_t sport, uint16_t dport, const Bytes& payload = {}) {
    Bytes b(8 + payload.size());
    put16(b, 0, sport);
    put16(b, 2, dport);
    put16(b, 4, static_cast<uint16_t>(8 + payload.size()));
    std::copy(payload.begin(), payload.end(), b.begin() + 8);
    return b;
}
inline Bytes icmp(uint8_t type, uint8_t code, uint16_t id, uint16_t seq,
                  const Bytes& payload = {}) {
    Bytes b(8 + payload.size());
    b[0] = type;
    b[1] = code;
    put16(b, 4, id);
    put16(b, 6, seq);
    std::copy(payload.begin(), payload.end(), b.begin() + 8);
    return b;
}

inline size_t l4_checksum_offset(uint8_t proto) {
    switch (proto) {
        case kTcp:
            return 16;
        case kUdp:
            return 6;
        default:
            return 2;  // ICMP, ICMPv6
    }
}

struct V4 {
    uint8_t src[4] = {10, 0, 0, 1};
    uint8_t dst[4] = {10, 0, 0, 2};
    uint8_t proto = kTcp;
    uint8_t tos = 0x10;
    uint16_t id = 0x1234;
    uint16_t frag = 0;  // flags + offset field as on the wire (0x2000 = MF)
    uint8_t ttl = 64;
    Bytes opts;  // multiple of 4
    bool l4_checksum = true;
    bool ip_checksum = true;  // false: the header checksum stays 0 (inputs decoded unchecked)

    V4& with_proto(uint8_t v) {
        proto = v;
        return *this;
    }
    V4& with_addrs(const std::array<uint8_t, 4>& s, const std::array<uint8_t, 4>& d) {
        std::copy(s.begin(), s.end(), src);
        std::copy(d.begin(), d.end(), dst);
        return *this;
    }
    V4& with_tos(uint8_t v) {
        tos = v;
        return *this;
    }
    V4& with_id(uint16_t v) {
        id = v;
        return *this;
    }
    V4& with_frag(uint16_t v) {
        frag = v;
        return *this;
    }
    V4& with_opts(const Bytes& v) {
        opts = v;
        return *this;
    }
    V4& with_l4_checksum(bool v) {
        l4_checksum = v;
        return *this;
    }
    V4& with_ip_checksum(bool v) {
        ip_checksum = v;
        return *this;
    }
    V4& with_ttl(uint8_t v) {
        ttl = v;
        return *this;
    }
};

inline Bytes ipv4(const V4& h, const Bytes& payload) {
    const size_t hlen = 20 + h.opts.size();
    Bytes b(hlen + payload.size());
    b[0] = static_cast<uint8_t>(0x40 | (hlen / 4));
    b[1] = h.tos;
    put16(b, 2, static_cast<uint16_t>(hlen + payload.size()));
    put16(b, 4, h.id);
    put16(b, 6, h.frag);
    b[8] = h.ttl;
    b[9] = h.proto;
    std::copy(h.src, h.src + 4, b.begin() + 12);
    std::copy(h.dst, h.dst + 4, b.begin() + 16);
    std::copy(h.opts.begin(), h.opts.end(), b.begin() + 20);
    if (h.ip_checksum) {
        put16(b, 10, fold(sum16(b.data(), hlen)));
    }
    std::copy(payload.begin(), payload.end(), b.begin() + hlen);
    // A payload cut short of the L4 checksum field (a truncated-header test) has none to fill.
    if (h.l4_checksum && (h.frag & 0x3fff) == 0 &&
        hlen + l4_checksum_offset(h.proto) + 2 <= b.size()) {
        const size_t co = hlen + l4_checksum_offset(h.proto);
        uint32_t acc = sum16(b.data() + 12, 8);
        acc += h.proto;
        acc += static_cast<uint32_t>(payload.size());
        if (h.proto == kIcmp) {
            acc = 0;
        }
        put16(b, co, fold(sum16(b.data() + hlen, payload.size(), acc)));
    }
    return b;
}

struct V6 {
    uint8_t src[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    uint8_t dst[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    uint8_t tclass = 0x02;
    uint8_t nh = kTcp;
    uint8_t hlim = 63;
    // Where the L4 header starts inside the payload and its protocol; checksummed when
    // l4_proto is TCP/UDP/ICMPv6.
    size_t l4_off = 0;
    uint8_t l4_proto = kTcp;
    bool l4_checksum = true;

    V6& with_nh(uint8_t v) {
        nh = v;
        return *this;
    }
    V6& with_addrs(const std::array<uint8_t, 16>& s, const std::array<uint8_t, 16>& d) {
        std::copy(s.begin(), s.end(), src);
        std::copy(d.begin(), d.end(), dst);
        return *this;
    }
    V6& with_tclass(uint8_t v) {
        tclass = v;
        return *this;
    }
    V6& with_hlim(uint8_t v) {
        hlim = v;
        return *this;
    }
    V6& with_l4_off(size_t v) {
        l4_off = v;
        return *this;
    }
    V6& with_l4_proto(uint8_t v) {
        l4_proto = v;
        return *this;
    }
    V6& with_l4_checksum(bool v) {
        l4_checksum = v;
        return *this;
    }
};

inline Bytes ipv6(const V6& h, const Bytes& payload) {
    Bytes b(40 + payload.size());
    b[0] = static_cast<uint8_t>(0x60 | (h.tclass >> 4));
    b[1] = static_cast<uint8_t>(h.tclass << 4);  // flow label 0
    put16(b, 4, static_cast<uint16_t>(payload.size()));
    b[6] = h.nh;
    b[7] = h.hlim;
    std::copy(h.src, h.src + 16, b.begin() + 8);
    std::copy(h.dst, h.dst + 16, b.begin() + 24);
    std::copy(payload.begin(), payload.end(), b.begin() + 40);
    if (h.l4_checksum && (h.l4_proto == kTcp || h.l4_proto == kUdp || h.l4_proto == kIcmp6) &&
        40 + h.l4_off + l4_checksum_offset(h.l4_proto) + 2 <= b.size()) {
        const size_t l4 = 40 + h.l4_off;
        const size_t len = b.size() - l4;
        uint32_t acc = sum16(b.data() + 8, 32);
        acc += static_cast<uint32_t>(len >> 16) + static_cast<uint32_t>(len & 0xffff);
        acc += h.l4_proto;
        put16(b, l4 + l4_checksum_offset(h.l4_proto), fold(sum16(b.data() + l4, len, acc)));
    }
    return b;
}

// Generic extension header (Hop-by-Hop, Destination Options, Routing): 8 bytes, PadN.
inline Bytes ext8(uint8_t nh) {
    return Bytes{nh, 0, 1, 4, 0, 0, 0, 0};
}
inline Bytes frag6(uint8_t nh, uint16_t offset, bool more, uint32_t id) {
    Bytes b(8);
    b[0] = nh;
    put16(b, 2, static_cast<uint16_t>(offset | (more ? 1 : 0)));
    put32(b, 4, id);
    return b;
}
// AH (RFC 4302): payload length 4 => (4 + 2) * 4 = 24 bytes.
inline Bytes ah(uint8_t nh) {
    Bytes b(24);
    b[0] = nh;
    b[1] = 4;
    return b;
}

using Mac = std::array<uint8_t, 6>;
inline constexpr Mac kDstMac = {0, 1, 2, 3, 4, 5};
inline constexpr Mac kSrcMac = {0, 6, 7, 8, 9, 10};
// Locally administered MACs for suites that want a client (..:01) and a server (..:02).
inline constexpr Mac kClientMac = {2, 0, 0, 0, 0, 1};
inline constexpr Mac kServerMac = {2, 0, 0, 0, 0, 2};

// Ethernet dst, src; tags = {tpid, vid} pairs, outer first.
inline Bytes eth(const Mac& dst, const Mac& src, uint16_t ethertype, const Bytes& payload,
                 std::initializer_list<std::pair<uint16_t, uint16_t>> tags = {}) {
    // Sized once and filled with std::copy: GCC 12 warns (-Warray-bounds), wrongly, about
    // vector::insert from the 6-byte MAC arrays here.
    Bytes b(12 + 4 * tags.size() + 2 + payload.size());
    std::copy(dst.begin(), dst.end(), b.begin());
    std::copy(src.begin(), src.end(), b.begin() + 6);
    size_t off = 12;
    for (const auto& [tpid, vid] : tags) {
        put16(b, off, tpid);
        put16(b, off + 2, vid);
        off += 4;
    }
    put16(b, off, ethertype);
    std::copy(payload.begin(), payload.end(), b.begin() + static_cast<std::ptrdiff_t>(off + 2));
    return b;
}
inline Bytes eth(uint16_t ethertype, const Bytes& payload,
                 std::initializer_list<std::pair<uint16_t, uint16_t>> tags = {}) {
    return eth(kDstMac, kSrcMac, ethertype, payload, tags);
}

inline Bytes arp_body() {
    return Bytes{0,  1, 8, 0, 6, 4, 0, 1, 0, 1, 2,  3, 4, 5,
                 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2};
}

}  // namespace picket::testing::frames
