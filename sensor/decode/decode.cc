// The worker's decoder: link layer -> IPv4/IPv6 -> transport, in one translation unit so
// that the per-packet path inlines. Shared wire helpers live in internal.h; statistics export
// in stats.cc; the dispatcher's hash in dispatch_hash.cc.
#include "sensor/decode/decode.h"

#include <algorithm>

#include "sensor/decode/internal.h"

namespace picket::sensor::decode {

namespace {

using internal::csum_add;
using internal::csum_ok;
using internal::kEtherArp;
using internal::kEtherIpv4;
using internal::kEtherIpv6;
using internal::rd16;
using internal::rd32;

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
    // Ends the call: checksum-auto bookkeeping, and an invalid packet is counted and flagged.
    DecodeResult finish(DecodeResult r) {
        if (checked_) {
            ctx_.note_checksum(!bad_);
        }
        if (r == DecodeResult::kInvalid) {
            ++c_.invalid;
            p_.flags |= kFlagInvalid;
        }
        return r;
    }

private:
    void event(DecodeEvent e) {
        ++c_.events[static_cast<size_t>(e)];
        if (p_.event_count < Packet::kMaxPacketEvents) {
            p_.events[p_.event_count++] = static_cast<uint16_t>(e);
        }
    }
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

    // Type-length-value options (IPv4 RFC 791 3.1, TCP RFC 9293 3.1): kind 0 ends the list,
    // 1 is a one-byte no-op, every other option has a length byte >= 2 that stays inside the
    // header. Calls f(kind, option, length) for each; an option list cut short counts
    // `short_event` and one with a bad length `len_event`, and the packet is invalid.
    template <class F>
    DecodeResult for_each_option(const uint8_t* d, uint32_t len, DecodeEvent short_event,
                                 DecodeEvent len_event, F&& f) {
        uint32_t i = 0;
        while (i < len) {
            const uint8_t kind = d[i];
            if (kind == 0) {
                break;
            }
            if (kind == 1) {
                ++i;
                continue;
            }
            if (len - i < 2) {
                return invalid(short_event);
            }
            const uint8_t olen = d[i + 1];
            if (olen < 2 || olen > len - i) {
                return invalid(len_event);
            }
            f(kind, d + i, olen);
            i += olen;
        }
        return DecodeResult::kOk;
    }
    // The checks IPv4 and IPv6 share: the family's counter (on entry, not again for a
    // reassembled datagram), the fixed header's length, the version nibble.
    bool ip_header(Counter& count, const uint8_t* d, uint32_t len, uint32_t fixed_len,
                   uint8_t version, DecodeEvent too_small, DecodeEvent wrong_version) {
        if (!reassembled_) {
            ++count;
        }
        if (len < fixed_len) {
            event(too_small);
            return false;
        }
        if ((d[0] >> 4) != version) {
            event(wrong_version);
            return false;
        }
        return true;
    }
    // The fields of an IPv4/IPv6 fragment; data is its payload, of len bytes captured.
    void set_fragment(uint32_t id, uint32_t offset, bool more, uint8_t next_header,
                      const uint8_t* data, uint32_t len) {
        p_.flags |= kFlagFragment;
        p_.frag_id = id;
        p_.frag_offset = offset;
        p_.frag_more = more;
        p_.frag_next_header = next_header;
        p_.frag_data = data;
        p_.frag_data_len = len;
    }
    // The part ICMPv4 and ICMPv6 share: an 8-byte header (type, code, checksum, 4 bytes that
    // depend on the type). False when the packet is too short (event counted).
    bool icmp_header(const uint8_t* d, uint32_t cap, uint32_t flag, DecodeEvent too_small) {
        if (cap < 8) {
            event(too_small);
            return false;
        }
        p_.flags |= flag;
        p_.l4 = d;
        p_.l4_len = cap;
        p_.icmp_type = d[0];
        p_.icmp_code = d[1];
        p_.payload = d + 8;
        p_.payload_len = cap - 8;
        return true;
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
    const internal::LinkLayer l = internal::link_layer(linktype, d, len);
    switch (l.kind) {
        case internal::LinkLayer::kEthernet:
            ++c_.ethernet;
            if (l.too_short) {
                return invalid(DecodeEvent::kEthernetPktTooSmall);
            }
            break;
        case internal::LinkLayer::kSll:
            ++c_.sll;
            if (l.too_short) {
                return invalid(DecodeEvent::kSllPktTooSmall);
            }
            break;
        case internal::LinkLayer::kRaw:
            ++c_.raw;
            return ip(d, len);
        case internal::LinkLayer::kNull:
            ++c_.null;
            if (l.too_short) {
                return invalid(DecodeEvent::kNullPktTooSmall);
            }
            if (l.ethertype == 0) {
                return invalid(DecodeEvent::kNullUnsupportedType);
            }
            break;
        default:
            return invalid(DecodeEvent::kUnknownLinkType);
    }
    return ethertype(l.ethertype, d + l.hdr_len, len - l.hdr_len);
}

// Raw IP (raw link types and reassembled datagrams): the version nibble picks the family.
DecodeResult Decoder::ip(const uint8_t* d, uint32_t len) {
    if (len < 1) {
        return invalid(DecodeEvent::kIpv4PktTooSmall);
    }
    const uint16_t et = internal::raw_ethertype(d[0]);
    if (et == 0) {
        return invalid(DecodeEvent::kIpv4WrongIpVersion);
    }
    p_.ethertype = et;
    return et == kEtherIpv4 ? ipv4(d, len) : ipv6(d, len);
}

DecodeResult Decoder::ethertype(uint16_t et, const uint8_t* d, uint32_t len) {
    while (internal::is_vlan_ethertype(et)) {
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
    if (!ip_header(c_.ipv4, d, len, 20, 4, DecodeEvent::kIpv4PktTooSmall,
                   DecodeEvent::kIpv4WrongIpVersion)) {
        return DecodeResult::kInvalid;
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
        set_fragment(p_.ip_id, offset, more, p_.proto, d + hlen, p_.l3_len - hlen);
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
    // The known option types: record route, quick-start, timestamp, security, loose source
    // route, CIPSO, stream id, strict source route, router alert.
    static constexpr uint8_t kKnown[] = {7, 25, 68, 130, 131, 134, 136, 137, 148};
    uint32_t seen = 0;  // bit per known option
    return for_each_option(d, len, DecodeEvent::kIpv4OptMalformed, DecodeEvent::kIpv4OptInvalidLen,
                           [&](uint8_t type, const uint8_t*, uint8_t) {
                               const auto* known =
                                   std::find(std::begin(kKnown), std::end(kKnown), type);
                               if (known == std::end(kKnown)) {
                                   event(DecodeEvent::kIpv4OptUnknown);
                                   return;
                               }
                               const uint32_t bit = 1u << (known - std::begin(kKnown));
                               if (seen & bit) {
                                   event(DecodeEvent::kIpv4OptDuplicate);
                               }
                               seen |= bit;
                           });
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
    if (!ip_header(c_.ipv6, d, len, 40, 6, DecodeEvent::kIpv6PktTooSmall,
                   DecodeEvent::kIpv6WrongIpVersion)) {
        return DecodeResult::kInvalid;
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
                set_fragment(rd32(h + 4), offset, more, h[0], h + 8, end - off - 8);
                p_.proto = h[0];
                p_.ip_hdr_len = static_cast<uint16_t>(off + 8);
                p_.frag_prev_nh_offset = static_cast<uint16_t>(prev_nh_off);
                p_.frag_unfrag_len = static_cast<uint16_t>(off);
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
// Suricata); a known option with the wrong fixed length is ignored with an event, and so is a
// repeated one (the first value stays).
DecodeResult Decoder::tcp_options(const uint8_t* d, uint32_t len) {
    // Whether a known option of `want` bytes is to be taken.
    auto take = [&](uint8_t olen, uint8_t want, bool present) {
        if (olen != want) {
            event(DecodeEvent::kTcpOptInvalidLen);
            return false;
        }
        if (present) {
            event(DecodeEvent::kTcpOptDuplicate);
            return false;
        }
        return true;
    };
    return for_each_option(d, len, DecodeEvent::kTcpOptInvalidLen, DecodeEvent::kTcpOptInvalidLen,
                           [&](uint8_t kind, const uint8_t* o, uint8_t olen) {
                               switch (kind) {
                                   case 2:  // MSS
                                       if (take(olen, 4, p_.tcp_mss != 0)) {
                                           p_.tcp_mss = rd16(o + 2);
                                       }
                                       break;
                                   case 3:  // window scale
                                       if (take(olen, 3, p_.tcp_wscale != 0xff)) {
                                           p_.tcp_wscale = o[2];
                                       }
                                       break;
                                   case 4:  // SACK permitted
                                       if (take(olen, 2, p_.tcp_sack_permitted)) {
                                           p_.tcp_sack_permitted = true;
                                       }
                                       break;
                                   case 8:  // timestamps
                                       if (take(olen, 10, p_.tcp_has_timestamp)) {
                                           p_.tcp_has_timestamp = true;
                                           p_.tcp_tsval = rd32(o + 2);
                                           p_.tcp_tsecr = rd32(o + 6);
                                       }
                                       break;
                                   default:
                                       break;
                               }
                           });
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
    if (!icmp_header(d, cap, kFlagIcmpv4, DecodeEvent::kIcmpv4PktTooSmall)) {
        return DecodeResult::kInvalid;
    }
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
    if (!icmp_header(d, cap, kFlagIcmpv6, DecodeEvent::kIcmpv6PktTooSmall)) {
        return DecodeResult::kInvalid;
    }
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

// The fields capture gave; everything the decoder fills starts cleared.
void begin_packet(Packet& p, const uint8_t* data, uint32_t caplen, uint32_t wirelen, int64_t ts_ns,
                  uint64_t pcap_cnt, int linktype) {
    p = Packet{};
    p.data = data;
    p.caplen = caplen;
    p.wirelen = wirelen;
    p.ts_ns = ts_ns;
    p.pcap_cnt = pcap_cnt;
    p.linktype = linktype;
}

}  // namespace

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

DecodeResult decode_packet(DecodeContext& ctx, int linktype, const uint8_t* data, uint32_t caplen,
                           uint32_t wirelen, int64_t ts_ns, Packet& p) {
    // pcap_cnt is set by capture, before or after decoding.
    begin_packet(p, data, caplen, wirelen, ts_ns, p.pcap_cnt, linktype);

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
    return dec.finish(dec.link(linktype, data, caplen));
}

DecodeResult decode_reassembled(DecodeContext& ctx, const uint8_t* data, uint32_t len, Packet& p) {
    // Keep what the capture and the link layer of the last fragment gave.
    const uint32_t vlan_flag = p.flags & kFlagVlan;
    const uint8_t vlan_count = p.vlan_count;
    const uint16_t vlan_id[2] = {p.vlan_id[0], p.vlan_id[1]};
    begin_packet(p, p.data, p.caplen, p.wirelen, p.ts_ns, p.pcap_cnt, p.linktype);
    p.flags = vlan_flag | kFlagReassembled;
    p.vlan_count = vlan_count;
    std::copy(vlan_id, vlan_id + 2, p.vlan_id);

    if (data == nullptr) {
        len = 0;
    }
    Decoder dec(ctx, p, false, true);
    return dec.finish(dec.ip(data, len));
}

}  // namespace picket::sensor::decode
