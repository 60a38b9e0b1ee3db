#include "sensor/decode/decode.h"

#include <algorithm>
#include <string>
#include <utility>

namespace picket::sensor::decode {

namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherArp = 0x0806;
constexpr uint16_t kEtherIpv6 = 0x86dd;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherQinq = 0x88a8;
constexpr uint16_t kEtherQinqOld = 0x9100;

constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmpv6 = 58;

// IPv6 extension headers (RFC 8200 section 4, RFC 4302 for AH).
constexpr uint8_t kIp6HopOpts = 0;
constexpr uint8_t kIp6Routing = 43;
constexpr uint8_t kIp6Fragment = 44;
constexpr uint8_t kIp6Ah = 51;
constexpr uint8_t kIp6NoNext = 59;
constexpr uint8_t kIp6DstOpts = 60;
constexpr uint8_t kIp6Mobility = 135;
constexpr uint8_t kIp6Hip = 139;
constexpr uint8_t kIp6Shim6 = 140;

// Suricata's auto checksum mode: decide once, after this many checked packets.
constexpr uint64_t kChecksumSample = 1000;

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
uint64_t csum_add(uint64_t acc, const uint8_t* d, uint32_t n) {
    while (n >= 8) {
        uint32_t a, b;
        std::memcpy(&a, d, 4);
        std::memcpy(&b, d + 4, 4);
        acc += a;
        acc += b;
        d += 8;
        n -= 8;
    }
    if (n >= 4) {
        uint32_t a;
        std::memcpy(&a, d, 4);
        acc += a;
        d += 4;
        n -= 4;
    }
    if (n >= 2) {
        uint16_t a;
        std::memcpy(&a, d, 2);
        acc += a;
        d += 2;
        n -= 2;
    }
    if (n == 1) {
        const uint8_t tail[2] = {d[0], 0};
        uint16_t a;
        std::memcpy(&a, tail, 2);
        acc += a;
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

class Decoder {
public:
    Decoder(DecodeContext& ctx, Packet& p, bool snap_truncated, bool reassembled)
        : ctx_(ctx),
          c_(ctx.counters()),
          p_(p),
          snap_truncated_(snap_truncated),
          reassembled_(reassembled),
          validate_(ctx.validating_checksums() && !snap_truncated) {}

    DecodeResult link(int linktype, const uint8_t* d, uint32_t len);
    DecodeResult ip(const uint8_t* d, uint32_t len);
    void finish() {
        if (checked_) {
            ctx_.note_checksum(!bad_);
        }
    }

private:
    void event(DecodeEvent e) { ++c_.events[static_cast<size_t>(e)]; }
    DecodeResult invalid(DecodeEvent e) {
        event(e);
        return DecodeResult::kInvalid;
    }
    void checksum_result(bool ok, DecodeEvent e) {
        checked_ = true;
        if (!ok) {
            bad_ = true;
            p_.flags |= kFlagBadChecksum;
            event(e);
        }
    }

    DecodeResult ethertype(uint16_t et, const uint8_t* d, uint32_t len);
    DecodeResult ipv4(const uint8_t* d, uint32_t len);
    DecodeResult ipv4_options(const uint8_t* d, uint32_t len);
    DecodeResult ipv6(const uint8_t* d, uint32_t len);
    bool ipv6_options(const uint8_t* d, uint32_t len);
    DecodeResult l4(uint8_t proto, const uint8_t* d, uint32_t claim, uint32_t cap);
    DecodeResult tcp(const uint8_t* d, uint32_t claim, uint32_t cap);
    DecodeResult tcp_options(const uint8_t* d, uint32_t len);
    DecodeResult udp(const uint8_t* d, uint32_t claim, uint32_t cap);
    DecodeResult icmpv4(const uint8_t* d, uint32_t claim, uint32_t cap);
    DecodeResult icmpv6(const uint8_t* d, uint32_t claim, uint32_t cap);
    uint64_t pseudo_header(uint8_t proto, uint32_t l4_len) const;

    DecodeContext& ctx_;
    DecodeCounters& c_;
    Packet& p_;
    // caplen < wirelen: bytes missing past the snap length are the capture's fault, not the
    // packet's; decode what is there (with an event) instead of rejecting the packet.
    const bool snap_truncated_;
    const bool reassembled_;
    const bool validate_;
    bool checked_ = false;
    bool bad_ = false;
};

DecodeResult Decoder::link(int linktype, const uint8_t* d, uint32_t len) {
    switch (linktype) {
        case kDltEn10mb:
            ++c_.ethernet;
            if (len < 14) {
                return invalid(DecodeEvent::kEthernetPktTooSmall);
            }
            return ethertype(rd16(d + 12), d + 14, len - 14);
        case kDltLinuxSll:
            ++c_.sll;
            if (len < 16) {
                return invalid(DecodeEvent::kSllPktTooSmall);
            }
            return ethertype(rd16(d + 14), d + 16, len - 16);
        case kDltLinuxSll2:
            ++c_.sll;
            if (len < 20) {
                return invalid(DecodeEvent::kSllPktTooSmall);
            }
            return ethertype(rd16(d), d + 20, len - 20);
        case kDltRaw:
        case kDltRawOpenBsd:
        case kLinktypeRaw:
        case kDltIpv4:
        case kDltIpv6:
            ++c_.raw;
            return ip(d, len);
        case kDltNull:
        case kDltLoop: {
            ++c_.null;
            if (len < 4) {
                return invalid(DecodeEvent::kNullPktTooSmall);
            }
            const uint16_t et = null_ethertype(d, linktype == kDltLoop);
            if (et == 0) {
                return invalid(DecodeEvent::kNullUnsupportedType);
            }
            p_.ethertype = et;
            return et == kEtherIpv4 ? ipv4(d + 4, len - 4) : ipv6(d + 4, len - 4);
        }
        default:
            return invalid(DecodeEvent::kUnknownLinkType);
    }
}

// Raw IP (raw link types and reassembled datagrams): the version nibble picks the family.
DecodeResult Decoder::ip(const uint8_t* d, uint32_t len) {
    if (len < 1) {
        return invalid(DecodeEvent::kIpv4PktTooSmall);
    }
    const uint16_t et = raw_ethertype(d[0]);
    if (et == 0) {
        return invalid(DecodeEvent::kIpv4WrongIpVersion);
    }
    p_.ethertype = et;
    return et == kEtherIpv4 ? ipv4(d, len) : ipv6(d, len);
}

DecodeResult Decoder::ethertype(uint16_t et, const uint8_t* d, uint32_t len) {
    while (is_vlan_ethertype(et)) {
        if (p_.vlan_count == 2) {
            return invalid(DecodeEvent::kVlanTooManyLayers);
        }
        if (len < 4) {
            return invalid(DecodeEvent::kVlanHeaderTooSmall);
        }
        if (p_.vlan_count == 0) {
            ++c_.vlan;
            p_.flags |= kFlagVlan;
        } else {
            ++c_.vlan_qinq;
        }
        p_.vlan_id[p_.vlan_count++] = rd16(d) & 0x0fff;
        et = rd16(d + 2);
        d += 4;
        len -= 4;
    }
    p_.ethertype = et;
    switch (et) {
        case kEtherIpv4:
            return ipv4(d, len);
        case kEtherIpv6:
            return ipv6(d, len);
        case kEtherArp:
            ++c_.arp;
            p_.flags |= kFlagArp;
            if (len < 28) {
                return invalid(DecodeEvent::kArpPktTooSmall);
            }
            return DecodeResult::kOk;
        default:
            ++c_.other_l3;
            return DecodeResult::kOk;
    }
}

DecodeResult Decoder::ipv4(const uint8_t* d, uint32_t len) {
    if (!reassembled_) {
        ++c_.ipv4;
    }
    if (len < 20) {
        return invalid(DecodeEvent::kIpv4PktTooSmall);
    }
    if ((d[0] >> 4) != 4) {
        return invalid(DecodeEvent::kIpv4WrongIpVersion);
    }
    const uint32_t hlen = (d[0] & 0x0fu) * 4;
    if (hlen < 20) {
        return invalid(DecodeEvent::kIpv4HlenTooSmall);
    }
    const uint32_t total = rd16(d + 2);
    if (total < hlen) {
        return invalid(DecodeEvent::kIpv4IplenSmallerThanHlen);
    }
    if (hlen > len) {
        return invalid(DecodeEvent::kIpv4TruncPkt);
    }
    p_.flags |= kFlagIpv4;
    p_.ip_version = 4;
    p_.l3 = d;
    p_.l3_len = std::min(total, len);
    p_.ip_hdr_len = static_cast<uint16_t>(hlen);
    p_.tos = d[1];
    p_.ip_id = rd16(d + 4);
    p_.ttl = d[8];
    p_.proto = d[9];
    p_.src = Address::from_v4(d + 12);
    p_.dst = Address::from_v4(d + 16);
    const bool truncated = len < total;
    if (truncated) {
        event(DecodeEvent::kIpv4TruncPkt);
        if (!snap_truncated_) {
            return DecodeResult::kInvalid;
        }
    }
    if (hlen > 20) {
        p_.flags |= kFlagIpv4Options;
        if (ipv4_options(d + 20, hlen - 20) != DecodeResult::kOk) {
            return DecodeResult::kInvalid;
        }
    }

    // A reassembled datagram is whole by definition, whatever defrag left in the field.
    const uint16_t frag = rd16(d + 6);
    const bool more = (frag & 0x2000) != 0;
    const uint32_t offset = (frag & 0x1fffu) * 8;
    if (!reassembled_ && (more || offset != 0)) {
        ++c_.ipv4_frag;
        p_.flags |= kFlagFragment;
        p_.frag_id = p_.ip_id;
        p_.frag_offset = offset;
        p_.frag_more = more;
        p_.frag_next_header = p_.proto;
        p_.frag_data = d + hlen;
        p_.frag_data_len = p_.l3_len - hlen;
        // The rebuilt datagram would exceed the 16-bit total length (ping of death).
        if (20 + offset + (total - hlen) > 65535) {
            return invalid(DecodeEvent::kIpv4FragPktTooLarge);
        }
        // A fragment missing bytes cannot be reassembled correctly.
        if (truncated) {
            return DecodeResult::kInvalid;
        }
        return DecodeResult::kFragment;
    }

    // defrag rewrites the header of a rebuilt datagram: only its L4 checksum is meaningful.
    if (validate_ && !reassembled_) {
        checksum_result(csum_ok(csum_add(0, d, hlen)), DecodeEvent::kIpv4ChecksumInvalid);
    }
    const uint32_t claim = total - hlen;
    const uint32_t cap = p_.l3_len - hlen;
    return l4(p_.proto, d + hlen, claim, cap);
}

// RFC 791 options. Known options keep Suricata's duplicate check; a length that is < 2 or
// runs past the header makes the packet invalid.
DecodeResult Decoder::ipv4_options(const uint8_t* d, uint32_t len) {
    uint32_t seen = 0;  // bit per known option
    uint32_t i = 0;
    while (i < len) {
        const uint8_t type = d[i];
        if (type == 0) {  // end of option list
            break;
        }
        if (type == 1) {  // no-op
            ++i;
            continue;
        }
        if (len - i < 2) {
            return invalid(DecodeEvent::kIpv4OptMalformed);
        }
        const uint8_t olen = d[i + 1];
        if (olen < 2 || olen > len - i) {
            return invalid(DecodeEvent::kIpv4OptInvalidLen);
        }
        int bit = -1;
        switch (type) {
            case 7:  // record route
                bit = 0;
                break;
            case 25:  // quick-start
                bit = 1;
                break;
            case 68:  // timestamp
                bit = 2;
                break;
            case 130:  // security
                bit = 3;
                break;
            case 131:  // loose source route
                bit = 4;
                break;
            case 134:  // CIPSO
                bit = 5;
                break;
            case 136:  // stream id
                bit = 6;
                break;
            case 137:  // strict source route
                bit = 7;
                break;
            case 148:  // router alert
                bit = 8;
                break;
            default:
                event(DecodeEvent::kIpv4OptUnknown);
                break;
        }
        if (bit >= 0) {
            if (seen & (1u << bit)) {
                event(DecodeEvent::kIpv4OptDuplicate);
            }
            seen |= 1u << bit;
        }
        i += olen;
    }
    return DecodeResult::kOk;
}

// Options of Hop-by-Hop / Destination Options headers (RFC 8200 4.2). Returns false when an
// option runs past the header (the header is then skipped as a whole).
bool Decoder::ipv6_options(const uint8_t* d, uint32_t len) {
    uint32_t i = 2;
    while (i < len) {
        if (d[i] == 0) {  // Pad1
            ++i;
            continue;
        }
        if (len - i < 2) {
            return false;
        }
        const uint8_t olen = d[i + 1];
        if (d[i] == 1 && olen == 0) {
            event(DecodeEvent::kIpv6ZeroLenPadn);
        }
        if (olen > len - i - 2) {
            return false;
        }
        i += 2u + olen;
    }
    return true;
}

DecodeResult Decoder::ipv6(const uint8_t* d, uint32_t len) {
    if (!reassembled_) {
        ++c_.ipv6;
    }
    if (len < 40) {
        return invalid(DecodeEvent::kIpv6PktTooSmall);
    }
    if ((d[0] >> 4) != 6) {
        return invalid(DecodeEvent::kIpv6WrongIpVersion);
    }
    const uint32_t total = 40u + rd16(d + 4);
    p_.flags |= kFlagIpv6;
    p_.ip_version = 6;
    p_.l3 = d;
    p_.l3_len = std::min(total, len);
    p_.tos = static_cast<uint8_t>((rd32(d) >> 20) & 0xff);
    p_.ttl = d[7];
    p_.src = Address::from_v6(d + 8);
    p_.dst = Address::from_v6(d + 24);
    p_.ip_hdr_len = 40;
    const bool truncated = len < total;
    if (truncated) {
        event(DecodeEvent::kIpv6TruncPkt);
        if (!snap_truncated_) {
            return DecodeResult::kInvalid;
        }
    }

    const uint32_t end = p_.l3_len;
    uint8_t nh = d[6];
    uint32_t off = 40;
    uint32_t prev_nh_off = 6;  // offset of the byte that holds nh
    bool seen_hh = false;
    bool seen_fh = false;
    for (;;) {
        p_.proto = nh;
        p_.ip_hdr_len = static_cast<uint16_t>(off);
        uint32_t hdr_len = 0;
        switch (nh) {
            case kIp6HopOpts:
            case kIp6DstOpts:
            case kIp6Routing:
            case kIp6Mobility:
            case kIp6Hip:
            case kIp6Shim6:
                if (end - off < 2) {
                    return invalid(DecodeEvent::kIpv6TruncExthdr);
                }
                hdr_len = (d[off + 1] + 1u) * 8;
                break;
            case kIp6Ah:  // RFC 4302: length in 4-octet units, minus 2
                if (end - off < 2) {
                    return invalid(DecodeEvent::kIpv6TruncExthdr);
                }
                hdr_len = (d[off + 1] + 2u) * 4;
                break;
            case kIp6Fragment:
                hdr_len = 8;
                break;
            case kIp6NoNext:
                ++c_.other_l4;
                return DecodeResult::kOk;
            default: {
                const uint32_t claim = total - off;
                const uint32_t cap = end - off;
                return l4(nh, d + off, claim, cap);
            }
        }
        if (hdr_len > end - off) {
            return invalid(DecodeEvent::kIpv6TruncExthdr);
        }
        const uint8_t* h = d + off;
        if (nh == kIp6HopOpts) {
            if (seen_hh) {
                event(DecodeEvent::kIpv6ExthdrDupeHh);
            }
            if (off != 40) {
                event(DecodeEvent::kIpv6HopoptsNotFirst);
            }
            seen_hh = true;
        }
        if (nh == kIp6HopOpts || nh == kIp6DstOpts) {
            ipv6_options(h, hdr_len);
        }
        if (nh == kIp6Fragment) {
            const uint16_t fo = rd16(h + 2);
            const uint32_t offset = fo & 0xfff8u;
            const bool more = (fo & 1) != 0;
            // A second Fragment header (after an atomic one, or inside a rebuilt datagram)
            // would nest fragmentation: no host reassembles that, treat it as an attack.
            if (seen_fh || (reassembled_ && (offset != 0 || more))) {
                return invalid(DecodeEvent::kIpv6ExthdrDupeFh);
            }
            seen_fh = true;
            // RFC 6946 atomic fragment: offset 0 and M=0 carries the whole packet.
            if (offset != 0 || more) {
                ++c_.ipv6_frag;
                p_.flags |= kFlagFragment;
                p_.proto = h[0];
                p_.ip_hdr_len = static_cast<uint16_t>(off + 8);
                p_.frag_id = rd32(h + 4);
                p_.frag_offset = offset;
                p_.frag_more = more;
                p_.frag_next_header = h[0];
                p_.frag_prev_nh_offset = static_cast<uint16_t>(prev_nh_off);
                p_.frag_unfrag_len = static_cast<uint16_t>(off);
                p_.frag_data = h + 8;
                p_.frag_data_len = end - off - 8;
                const uint32_t data_len = total - off - 8;
                // RFC 8200 4.5: every fragment but the last is a multiple of 8 octets.
                if (more && (data_len % 8) != 0) {
                    event(DecodeEvent::kIpv6FragInvalidLength);
                }
                // The rebuilt payload (unfragmentable part + data) must fit the 16-bit
                // payload length.
                if ((off - 40) + offset + data_len > 65535) {
                    return invalid(DecodeEvent::kIpv6FragPktTooLarge);
                }
                if (truncated) {
                    return DecodeResult::kInvalid;
                }
                return DecodeResult::kFragment;
            }
        }
        prev_nh_off = off;
        nh = h[0];
        off += hdr_len;
    }
}

DecodeResult Decoder::l4(uint8_t proto, const uint8_t* d, uint32_t claim, uint32_t cap) {
    p_.proto = proto;
    switch (proto) {
        case kProtoTcp:
            return tcp(d, claim, cap);
        case kProtoUdp:
            return udp(d, claim, cap);
        case kProtoIcmp:
            if (p_.ip_version == 4) {
                return icmpv4(d, claim, cap);
            }
            break;
        case kProtoIcmpv6:
            if (p_.ip_version == 6) {
                return icmpv6(d, claim, cap);
            }
            break;
        default:
            break;
    }
    ++c_.other_l4;
    p_.l4 = d;
    p_.l4_len = cap;
    return DecodeResult::kOk;
}

uint64_t Decoder::pseudo_header(uint8_t proto, uint32_t l4_len) const {
    if (p_.ip_version == 4) {
        uint8_t ph[12];
        std::memcpy(ph, p_.l3 + 12, 8);
        ph[8] = 0;
        ph[9] = proto;
        ph[10] = static_cast<uint8_t>(l4_len >> 8);
        ph[11] = static_cast<uint8_t>(l4_len);
        return csum_add(0, ph, sizeof(ph));
    }
    uint8_t ph[40];
    std::memcpy(ph, p_.l3 + 8, 32);
    ph[32] = static_cast<uint8_t>(l4_len >> 24);
    ph[33] = static_cast<uint8_t>(l4_len >> 16);
    ph[34] = static_cast<uint8_t>(l4_len >> 8);
    ph[35] = static_cast<uint8_t>(l4_len);
    ph[36] = ph[37] = ph[38] = 0;
    ph[39] = proto;
    return csum_add(0, ph, sizeof(ph));
}

DecodeResult Decoder::tcp(const uint8_t* d, uint32_t claim, uint32_t cap) {
    ++c_.tcp;
    if (cap < 20) {
        return invalid(DecodeEvent::kTcpPktTooSmall);
    }
    const uint32_t hlen = (d[12] >> 4) * 4u;
    if (hlen < 20) {
        return invalid(DecodeEvent::kTcpHlenTooSmall);
    }
    if (hlen > cap) {
        return invalid(DecodeEvent::kTcpInvalidOptlen);
    }
    p_.flags |= kFlagTcp;
    p_.l4 = d;
    p_.l4_len = cap;
    p_.sport = rd16(d);
    p_.dport = rd16(d + 2);
    p_.tcp_seq = rd32(d + 4);
    p_.tcp_ack = rd32(d + 8);
    p_.tcp_flags = d[13];
    p_.tcp_window = rd16(d + 14);
    p_.tcp_hdr_len = static_cast<uint8_t>(hlen);
    if (hlen > 20 && tcp_options(d + 20, hlen - 20) != DecodeResult::kOk) {
        return DecodeResult::kInvalid;
    }
    p_.payload = d + hlen;
    p_.payload_len = cap - hlen;
    if (validate_) {
        checksum_result(csum_ok(csum_add(pseudo_header(kProtoTcp, claim), d, claim)),
                        DecodeEvent::kTcpChecksumInvalid);
    }
    return DecodeResult::kOk;
}

// RFC 9293 3.1 options. A length < 2 or past the header makes the packet invalid (as
// Suricata); a known option with the wrong fixed length is ignored with an event.
DecodeResult Decoder::tcp_options(const uint8_t* d, uint32_t len) {
    uint32_t i = 0;
    while (i < len) {
        const uint8_t kind = d[i];
        if (kind == 0) {  // end of option list
            break;
        }
        if (kind == 1) {  // no-op
            ++i;
            continue;
        }
        if (len - i < 2) {
            return invalid(DecodeEvent::kTcpOptInvalidLen);
        }
        const uint8_t olen = d[i + 1];
        if (olen < 2 || olen > len - i) {
            return invalid(DecodeEvent::kTcpOptInvalidLen);
        }
        const uint8_t* o = d + i;
        switch (kind) {
            case 2:  // MSS
                if (olen != 4) {
                    event(DecodeEvent::kTcpOptInvalidLen);
                } else if (p_.tcp_mss != 0) {
                    event(DecodeEvent::kTcpOptDuplicate);
                } else {
                    p_.tcp_mss = rd16(o + 2);
                }
                break;
            case 3:  // window scale
                if (olen != 3) {
                    event(DecodeEvent::kTcpOptInvalidLen);
                } else if (p_.tcp_wscale != 0xff) {
                    event(DecodeEvent::kTcpOptDuplicate);
                } else {
                    p_.tcp_wscale = o[2];
                }
                break;
            case 4:  // SACK permitted
                if (olen != 2) {
                    event(DecodeEvent::kTcpOptInvalidLen);
                } else if (p_.tcp_sack_permitted) {
                    event(DecodeEvent::kTcpOptDuplicate);
                } else {
                    p_.tcp_sack_permitted = true;
                }
                break;
            case 8:  // timestamps
                if (olen != 10) {
                    event(DecodeEvent::kTcpOptInvalidLen);
                } else if (p_.tcp_has_timestamp) {
                    event(DecodeEvent::kTcpOptDuplicate);
                } else {
                    p_.tcp_has_timestamp = true;
                    p_.tcp_tsval = rd32(o + 2);
                    p_.tcp_tsecr = rd32(o + 6);
                }
                break;
            default:
                break;
        }
        i += olen;
    }
    return DecodeResult::kOk;
}

DecodeResult Decoder::udp(const uint8_t* d, uint32_t claim, uint32_t cap) {
    ++c_.udp;
    if (cap < 8) {
        return invalid(DecodeEvent::kUdpHlenTooSmall);
    }
    const uint32_t ulen = rd16(d + 4);
    p_.l4 = d;
    p_.l4_len = cap;
    p_.sport = rd16(d);
    p_.dport = rd16(d + 2);
    if (ulen > claim) {
        return invalid(DecodeEvent::kUdpPktTooSmall);
    }
    if (ulen < 8) {
        return invalid(DecodeEvent::kUdpLenInvalid);
    }
    if (ulen != claim) {
        return invalid(DecodeEvent::kUdpHlenInvalid);
    }
    p_.flags |= kFlagUdp;
    p_.payload = d + 8;
    p_.payload_len = cap - 8;
    const uint16_t sum = rd16(d + 6);
    // RFC 768: zero means "no checksum" over IPv4; RFC 8200 8.1 makes it mandatory over IPv6.
    if (validate_ && (sum != 0 || p_.ip_version == 6)) {
        checksum_result(sum != 0 && csum_ok(csum_add(pseudo_header(kProtoUdp, claim), d, claim)),
                        DecodeEvent::kUdpChecksumInvalid);
    }
    return DecodeResult::kOk;
}

DecodeResult Decoder::icmpv4(const uint8_t* d, uint32_t claim, uint32_t cap) {
    ++c_.icmpv4;
    if (cap < 8) {
        return invalid(DecodeEvent::kIcmpv4PktTooSmall);
    }
    p_.flags |= kFlagIcmpv4;
    p_.l4 = d;
    p_.l4_len = cap;
    p_.icmp_type = d[0];
    p_.icmp_code = d[1];
    p_.payload = d + 8;
    p_.payload_len = cap - 8;
    uint8_t max_code = 0;
    bool has_id = false;
    switch (d[0]) {
        case 0:   // echo reply
        case 8:   // echo request
        case 13:  // timestamp
        case 14:  // timestamp reply
        case 15:  // information request
        case 16:  // information reply
        case 17:  // address mask request
        case 18:  // address mask reply
            has_id = true;
            break;
        case 3:  // destination unreachable
            max_code = 15;
            break;
        case 4:   // source quench
        case 10:  // router solicitation
            break;
        case 5:  // redirect
            max_code = 3;
            break;
        case 9:  // router advertisement (code 16: does not route common traffic)
            max_code = d[1] == 16 ? 16 : 0;
            break;
        case 11:  // time exceeded
            max_code = 1;
            break;
        case 12:  // parameter problem
            max_code = 2;
            break;
        default:
            event(DecodeEvent::kIcmpv4UnknownType);
            max_code = 0xff;
            break;
    }
    if (d[1] > max_code) {
        event(DecodeEvent::kIcmpv4UnknownCode);
    }
    if (has_id) {
        p_.icmp_id = rd16(d + 4);
        p_.icmp_seq = rd16(d + 6);
    }
    if (validate_) {
        checksum_result(csum_ok(csum_add(0, d, claim)), DecodeEvent::kIcmpv4ChecksumInvalid);
    }
    return DecodeResult::kOk;
}

DecodeResult Decoder::icmpv6(const uint8_t* d, uint32_t claim, uint32_t cap) {
    ++c_.icmpv6;
    if (cap < 8) {
        return invalid(DecodeEvent::kIcmpv6PktTooSmall);
    }
    p_.flags |= kFlagIcmpv6;
    p_.l4 = d;
    p_.l4_len = cap;
    p_.icmp_type = d[0];
    p_.icmp_code = d[1];
    p_.payload = d + 8;
    p_.payload_len = cap - 8;
    const uint8_t type = d[0];
    uint8_t max_code = 0;
    if (type == 1) {  // destination unreachable (RFC 4443, RFC 8883)
        max_code = 8;
    } else if (type == 3) {  // time exceeded
        max_code = 1;
    } else if (type == 4) {  // parameter problem (RFC 7112 code 3)
        max_code = 3;
    } else if (type == 128 || type == 129) {  // echo
        p_.icmp_id = rd16(d + 4);
        p_.icmp_seq = rd16(d + 6);
    } else if (type == 2 || type == 100 || type == 101 || type == 127 || type == 200 ||
               type == 201 || type == 255) {
        max_code = 0xff;  // packet too big, private and reserved types: code not checked
    } else if (type >= 130 && type <= 161) {
        max_code = 0xff;  // MLD, ND, router renumbering, node info, mobility, RPL, ...
    } else {
        event(DecodeEvent::kIcmpv6UnknownType);
        max_code = 0xff;
    }
    if (d[1] > max_code) {
        event(DecodeEvent::kIcmpv6UnknownCode);
    }
    if (validate_) {
        checksum_result(csum_ok(csum_add(pseudo_header(kProtoIcmpv6, claim), d, claim)),
                        DecodeEvent::kIcmpv6ChecksumInvalid);
    }
    return DecodeResult::kOk;
}

inline uint64_t mix64(uint64_t k) {
    // MurmurHash3 fmix64 finaliser.
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

}  // namespace

const char* event_name(DecodeEvent e) {
    static constexpr const char* kNames[] = {
#define PICKET_X(id, name) name,
        PICKET_DECODE_EVENTS(PICKET_X)
#undef PICKET_X
    };
    const auto i = static_cast<size_t>(e);
    return i < kNumDecodeEvents ? kNames[i] : "unknown";
}

DecodeContext::DecodeContext(const DecodeOptions& options)
    : options_(options), validate_(options.checksum != ChecksumMode::kNo) {}

void DecodeContext::note_checksum(bool ok) {
    if (options_.checksum != ChecksumMode::kAuto || checked_ >= kChecksumSample) {
        return;
    }
    ++checked_;
    if (!ok) {
        ++bad_;
    }
    // One decision after the sample, like Suricata: more than 10% bad means the NIC
    // offloads checksums and every later packet would raise a false event.
    if (checked_ == kChecksumSample && bad_ * 10 > checked_) {
        validate_ = false;
    }
}

void DecodeContext::export_stats(StatsSnapshot& out) const {
    const DecodeCounters& c = counters_;
    const struct {
        const char* name;
        const Counter& value;
    } plain[] = {
        {"decoder.pkts", c.pkts},
        {"decoder.bytes", c.bytes},
        {"decoder.invalid", c.invalid},
        {"decoder.ethernet", c.ethernet},
        {"decoder.sll", c.sll},
        {"decoder.null", c.null},
        {"decoder.raw", c.raw},
        {"decoder.vlan", c.vlan},
        {"decoder.vlan_qinq", c.vlan_qinq},
        {"decoder.ipv4", c.ipv4},
        {"decoder.ipv6", c.ipv6},
        {"decoder.tcp", c.tcp},
        {"decoder.udp", c.udp},
        {"decoder.icmpv4", c.icmpv4},
        {"decoder.icmpv6", c.icmpv6},
        {"decoder.arp", c.arp},
        {"decoder.other_l3", c.other_l3},
        {"decoder.other_l4", c.other_l4},
        {"decoder.ipv4_frag", c.ipv4_frag},
        {"decoder.ipv6_frag", c.ipv6_frag},
    };
    for (const auto& e : plain) {
        out.add(e.name, e.value.get());
    }
    // Derived values are recomputed from the snapshot's totals so that several workers
    // exporting into one snapshot still give the right average and maximum.
    const uint64_t pkts = out.get("decoder.pkts");
    out.set("decoder.avg_pkt_size", pkts == 0 ? 0 : out.get("decoder.bytes") / pkts);
    out.set("decoder.max_pkt_size",
            std::max(out.get("decoder.max_pkt_size"), c.max_pkt_size.get()));
    const bool disabled = options_.checksum == ChecksumMode::kAuto && !validate_;
    out.add("decoder.checksum_validation_disabled", disabled ? 1 : 0);
    std::string name;
    for (size_t i = 0; i < kNumDecodeEvents; ++i) {
        name = "decoder.event.";
        name += event_name(static_cast<DecodeEvent>(i));
        out.add(name, c.events[i].get());
    }
}

DecodeResult decode_packet(DecodeContext& ctx, int linktype, const uint8_t* data, uint32_t caplen,
                           uint32_t wirelen, int64_t ts_ns, Packet& p) {
    const uint64_t pcap_cnt = p.pcap_cnt;  // set by capture, before or after decoding
    p = Packet{};
    p.data = data;
    p.caplen = caplen;
    p.wirelen = wirelen;
    p.ts_ns = ts_ns;
    p.pcap_cnt = pcap_cnt;
    p.linktype = linktype;

    DecodeCounters& c = ctx.counters();
    ++c.pkts;
    c.bytes += wirelen;
    c.avg_pkt_size_sum += wirelen;
    if (wirelen > c.max_pkt_size.get()) {
        c.max_pkt_size.set(wirelen);
    }

    if (data == nullptr) {
        caplen = 0;
    }
    Decoder dec(ctx, p, caplen < wirelen, false);
    const DecodeResult r = dec.link(linktype, data, caplen);
    dec.finish();
    if (r == DecodeResult::kInvalid) {
        ++c.invalid;
        p.flags |= kFlagInvalid;
    }
    return r;
}

DecodeResult decode_reassembled(DecodeContext& ctx, const uint8_t* data, uint32_t len, Packet& p) {
    // Keep what the capture and the link layer of the last fragment gave.
    Packet keep;
    keep.data = p.data;
    keep.caplen = p.caplen;
    keep.wirelen = p.wirelen;
    keep.ts_ns = p.ts_ns;
    keep.pcap_cnt = p.pcap_cnt;
    keep.linktype = p.linktype;
    keep.flags = (p.flags & kFlagVlan) | kFlagReassembled;
    keep.vlan_count = p.vlan_count;
    keep.vlan_id[0] = p.vlan_id[0];
    keep.vlan_id[1] = p.vlan_id[1];
    p = keep;

    if (data == nullptr) {
        len = 0;
    }
    Decoder dec(ctx, p, false, true);
    const DecodeResult r = dec.ip(data, len);
    dec.finish();
    if (r == DecodeResult::kInvalid) {
        ++ctx.counters().invalid;
        p.flags |= kFlagInvalid;
    }
    return r;
}

uint32_t dispatch_hash(int linktype, const uint8_t* d, uint32_t caplen, bool use_vlan) {
    if (d == nullptr) {
        return 0;
    }
    uint16_t et = 0;
    uint32_t off = 0;
    switch (linktype) {
        case kDltEn10mb:
            if (caplen < 14) {
                return 0;
            }
            et = rd16(d + 12);
            off = 14;
            break;
        case kDltLinuxSll:
            if (caplen < 16) {
                return 0;
            }
            et = rd16(d + 14);
            off = 16;
            break;
        case kDltLinuxSll2:
            if (caplen < 20) {
                return 0;
            }
            et = rd16(d);
            off = 20;
            break;
        case kDltRaw:
        case kDltRawOpenBsd:
        case kLinktypeRaw:
        case kDltIpv4:
        case kDltIpv6:
            if (caplen < 1) {
                return 0;
            }
            et = raw_ethertype(d[0]);
            break;
        case kDltNull:
        case kDltLoop:
            if (caplen < 4) {
                return 0;
            }
            et = null_ethertype(d, linktype == kDltLoop);
            off = 4;
            break;
        default:
            return 0;
    }
    uint64_t vlan = 0;
    for (int i = 0; i < 2 && is_vlan_ethertype(et); ++i) {
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
