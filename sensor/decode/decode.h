// Packet decoding: link layer (Ethernet, 802.1Q/QinQ, Linux cooked v1/v2, raw IP, BSD
// loopback) -> IPv4 (options) / IPv6 (extension headers) -> TCP (options) / UDP / ICMPv4 /
// ICMPv6; ARP is counted. Fills a Packet of views into the capture buffer. Called by a
// worker on its own DecodeContext; never allocates, never throws: every anomaly is a named
// event counter and the packet is marked invalid or partially decoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/counter.h"
#include "common/stats.h"

namespace picket::sensor::decode {

// libpcap link types (DLT_* / LINKTYPE_*) that decode_packet understands.
inline constexpr int kDltNull = 0;         // BSD loopback, 4-byte family in host byte order
inline constexpr int kDltEn10mb = 1;       // Ethernet
inline constexpr int kDltRaw = 12;         // raw IP (most platforms)
inline constexpr int kDltRawOpenBsd = 14;  // raw IP (OpenBSD's DLT_RAW value)
inline constexpr int kLinktypeRaw = 101;   // raw IP as written in pcap files
inline constexpr int kDltLoop = 108;       // OpenBSD loopback, family in network byte order
inline constexpr int kDltLinuxSll = 113;   // Linux cooked capture v1 (16-byte header)
inline constexpr int kDltIpv4 = 228;
inline constexpr int kDltIpv6 = 229;
inline constexpr int kDltLinuxSll2 = 276;  // Linux cooked capture v2 (20-byte header)

// IP protocol numbers (IANA) that the decoder and its users name.
inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoTcp = 6;
inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint8_t kProtoIcmpv6 = 58;
inline constexpr uint8_t kProtoSctp = 132;

// TCP header flags, as in Packet::tcp_flags.
inline constexpr uint8_t kTcpFin = 0x01;
inline constexpr uint8_t kTcpSyn = 0x02;
inline constexpr uint8_t kTcpRst = 0x04;
inline constexpr uint8_t kTcpAck = 0x10;

// MurmurHash3's fmix64 finaliser: the last step of the hashes over decoded fields (worker
// dispatch, flow table, defrag trackers).
inline uint64_t mix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

// 16 bytes; IPv4 is stored v4-mapped (::ffff:a.b.c.d) so that a v4 and a v6 address never
// compare equal and one key type serves both families.
struct Address {
    alignas(8) uint8_t b[16] = {};

    static Address from_v4(const uint8_t* p) {
        Address a;
        a.b[10] = 0xff;
        a.b[11] = 0xff;
        std::memcpy(a.b + 12, p, 4);
        return a;
    }
    static Address from_v6(const uint8_t* p) {
        Address a;
        std::memcpy(a.b, p, 16);
        return a;
    }
    bool is_v4() const;
    const uint8_t* v4() const { return b + 12; }
    // Byte order (memcmp's), as two big-endian words: inline, where a memcmp call cost the
    // rules' address checks about 3 % of a worker's instructions (callgrind, ET Open).
    bool operator==(const Address& o) const { return raw(0) == o.raw(0) && raw(1) == o.raw(1); }
    bool operator<(const Address& o) const {
        const uint64_t a = word(0), c = o.word(0);
        return a != c ? a < c : word(1) < o.word(1);
    }
    // Text form, "10.0.0.1" or "2001:db8::1"; buf must hold 46 bytes. Returns buf.
    const char* to_string(char* buf) const;

private:
    uint64_t raw(int i) const {
        uint64_t w;
        std::memcpy(&w, b + 8 * i, 8);
        return w;
    }
    uint64_t word(int i) const {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        return __builtin_bswap64(raw(i));
#else
        return raw(i);
#endif
    }
};

enum PacketFlags : uint32_t {
    kFlagVlan = 1u << 0,
    kFlagIpv4 = 1u << 1,
    kFlagIpv6 = 1u << 2,
    kFlagTcp = 1u << 3,
    kFlagUdp = 1u << 4,
    kFlagIcmpv4 = 1u << 5,
    kFlagIcmpv6 = 1u << 6,
    kFlagArp = 1u << 7,
    kFlagFragment = 1u << 8,      // an IPv4/IPv6 fragment: defrag must see it; no L4 decoded
    kFlagReassembled = 1u << 9,   // decoded from a datagram that defrag rebuilt
    kFlagInvalid = 1u << 10,      // a decode event made the packet unusable past some layer
    kFlagBadChecksum = 1u << 11,  // IP or L4 checksum validated and wrong
    kFlagIpv4Options = 1u << 12,
};

struct Packet {
    // From capture.
    const uint8_t* data = nullptr;
    uint32_t caplen = 0;
    uint32_t wirelen = 0;
    int64_t ts_ns = 0;
    uint64_t pcap_cnt = 0;
    int linktype = 1;
    uint32_t flags = 0;

    // Link layer.
    uint16_t ethertype = 0;  // of the payload after VLAN tags
    uint8_t vlan_count = 0;
    uint16_t vlan_id[2] = {0, 0};

    // Network layer. l3 points at the IP header; l3_len is the datagram length the header
    // claims, clipped to what was captured.
    uint8_t ip_version = 0;  // 0 (none), 4 or 6
    const uint8_t* l3 = nullptr;
    uint32_t l3_len = 0;
    uint16_t ip_hdr_len = 0;  // IPv4 IHL*4; IPv6 40 + extension headers before L4
    Address src, dst;
    uint8_t proto = 0;   // transport protocol (after IPv6 extension headers)
    uint8_t ttl = 0;     // IPv4 TTL / IPv6 hop limit
    uint8_t tos = 0;     // IPv4 TOS / IPv6 traffic class
    uint16_t ip_id = 0;  // IPv4 identification
    // Decoder events this packet raised (DecodeEvent values), first kMaxPacketEvents of them:
    // EVE's decode anomaly records.
    static constexpr uint8_t kMaxPacketEvents = 4;
    uint8_t event_count = 0;
    uint16_t events[kMaxPacketEvents] = {};

    // Fragments (kFlagFragment). For IPv6, frag_prev_nh_offset is the offset from l3 of the
    // byte holding the Next Header value that named the Fragment header, and
    // frag_unfrag_len the length of the unfragmentable part (IPv6 header + extension
    // headers before the Fragment header): defrag copies that prefix, patches the byte with
    // frag_next_header and appends the reassembled data.
    uint32_t frag_id = 0;      // IPv4 id, IPv6 identification
    uint32_t frag_offset = 0;  // in bytes
    bool frag_more = false;    // MF flag
    uint8_t frag_next_header = 0;
    uint16_t frag_prev_nh_offset = 0;
    uint16_t frag_unfrag_len = 0;
    const uint8_t* frag_data = nullptr;  // the fragment's payload
    uint32_t frag_data_len = 0;

    // Transport layer.
    const uint8_t* l4 = nullptr;
    uint32_t l4_len = 0;
    uint16_t sport = 0;
    uint16_t dport = 0;
    uint8_t tcp_flags = 0;  // FIN 0x01 SYN 0x02 RST 0x04 PSH 0x08 ACK 0x10 URG 0x20 ECE CWR
    uint8_t tcp_hdr_len = 0;
    uint32_t tcp_seq = 0;
    uint32_t tcp_ack = 0;
    uint16_t tcp_window = 0;
    uint16_t tcp_mss = 0;       // 0 = option absent
    uint8_t tcp_wscale = 0xff;  // 0xff = option absent
    bool tcp_sack_permitted = false;
    bool tcp_has_timestamp = false;
    uint32_t tcp_tsval = 0;
    uint32_t tcp_tsecr = 0;
    uint8_t icmp_type = 0;
    uint8_t icmp_code = 0;
    uint16_t icmp_id = 0;
    uint16_t icmp_seq = 0;

    // Application payload (after the L4 header).
    const uint8_t* payload = nullptr;
    uint32_t payload_len = 0;

    bool has(uint32_t f) const { return (flags & f) != 0; }
};

// Decoder events; names follow Suricata's decoder.event.* where one exists. The X-macro keeps
// the enum and its names in one list.
#define PICKET_DECODE_EVENTS(X)                                  \
    X(kEthernetPktTooSmall, "ethernet.pkt_too_small")            \
    X(kVlanHeaderTooSmall, "vlan.header_too_small")              \
    X(kVlanTooManyLayers, "vlan.too_many_layers")                \
    X(kSllPktTooSmall, "sll.pkt_too_small")                      \
    X(kNullPktTooSmall, "null.pkt_too_small")                    \
    X(kNullUnsupportedType, "null.unsupported_type")             \
    X(kUnknownLinkType, "link.unsupported_type")                 \
    X(kIpv4PktTooSmall, "ipv4.pkt_too_small")                    \
    X(kIpv4HlenTooSmall, "ipv4.hlen_too_small")                  \
    X(kIpv4IplenSmallerThanHlen, "ipv4.iplen_smaller_than_hlen") \
    X(kIpv4TruncPkt, "ipv4.trunc_pkt")                           \
    X(kIpv4WrongIpVersion, "ipv4.wrong_ip_version")              \
    X(kIpv4OptInvalid, "ipv4.opt_invalid")                       \
    X(kIpv4OptInvalidLen, "ipv4.opt_invalid_len")                \
    X(kIpv4OptMalformed, "ipv4.opt_malformed")                   \
    X(kIpv4OptDuplicate, "ipv4.opt_duplicate")                   \
    X(kIpv4OptUnknown, "ipv4.opt_unknown")                       \
    X(kIpv4FragPktTooLarge, "ipv4.frag_pkt_too_large")           \
    X(kIpv4ChecksumInvalid, "ipv4.checksum_invalid")             \
    X(kIpv6PktTooSmall, "ipv6.pkt_too_small")                    \
    X(kIpv6TruncPkt, "ipv6.trunc_pkt")                           \
    X(kIpv6TruncExthdr, "ipv6.trunc_exthdr")                     \
    X(kIpv6WrongIpVersion, "ipv6.wrong_ip_version")              \
    X(kIpv6ExthdrDupeFh, "ipv6.exthdr_dupl_fh")                  \
    X(kIpv6ExthdrDupeHh, "ipv6.exthdr_dupl_hh")                  \
    X(kIpv6HopoptsNotFirst, "ipv6.hopopts_not_first")            \
    X(kIpv6FragPktTooLarge, "ipv6.frag_pkt_too_large")           \
    X(kIpv6FragInvalidLength, "ipv6.frag_invalid_length")        \
    X(kIpv6ZeroLenPadn, "ipv6.zero_len_padn")                    \
    X(kTcpPktTooSmall, "tcp.pkt_too_small")                      \
    X(kTcpHlenTooSmall, "tcp.hlen_too_small")                    \
    X(kTcpInvalidOptlen, "tcp.invalid_optlen")                   \
    X(kTcpOptInvalidLen, "tcp.opt_invalid_len")                  \
    X(kTcpOptDuplicate, "tcp.opt_duplicate")                     \
    X(kTcpChecksumInvalid, "tcp.checksum_invalid")               \
    X(kUdpPktTooSmall, "udp.pkt_too_small")                      \
    X(kUdpHlenTooSmall, "udp.hlen_too_small")                    \
    X(kUdpHlenInvalid, "udp.hlen_invalid")                       \
    X(kUdpLenInvalid, "udp.len_invalid")                         \
    X(kUdpChecksumInvalid, "udp.checksum_invalid")               \
    X(kIcmpv4PktTooSmall, "icmpv4.pkt_too_small")                \
    X(kIcmpv4UnknownType, "icmpv4.unknown_type")                 \
    X(kIcmpv4UnknownCode, "icmpv4.unknown_code")                 \
    X(kIcmpv4ChecksumInvalid, "icmpv4.checksum_invalid")         \
    X(kIcmpv6PktTooSmall, "icmpv6.pkt_too_small")                \
    X(kIcmpv6UnknownType, "icmpv6.unknown_type")                 \
    X(kIcmpv6UnknownCode, "icmpv6.unknown_code")                 \
    X(kIcmpv6ChecksumInvalid, "icmpv6.checksum_invalid")         \
    X(kArpPktTooSmall, "arp.pkt_too_small")

enum class DecodeEvent : uint16_t {
#define PICKET_X(id, name) id,
    PICKET_DECODE_EVENTS(PICKET_X)
#undef PICKET_X
        kCount
};
inline constexpr size_t kNumDecodeEvents = static_cast<size_t>(DecodeEvent::kCount);
const char* event_name(DecodeEvent e);  // "ipv4.trunc_pkt"

struct DecodeCounters {
    Counter pkts, bytes, invalid;
    Counter ethernet, sll, null, raw, vlan, vlan_qinq;
    Counter ipv4, ipv6, tcp, udp, icmpv4, icmpv6, arp, other_l3, other_l4;
    Counter ipv4_frag, ipv6_frag;  // fragments seen (before defrag)
    Counter avg_pkt_size_sum;      // sum for decoder.avg_pkt_size on export
    Counter max_pkt_size;          // gauge
    Counter events[kNumDecodeEvents];
};

enum class ChecksumMode : uint8_t { kAuto, kYes, kNo };

struct DecodeOptions {
    // kAuto validates like kYes until enough packets were seen, then turns validation off
    // for this worker if most checksums are wrong (NIC offload), as Suricata's auto mode.
    ChecksumMode checksum = ChecksumMode::kAuto;
};

// Per-worker decoder state.
class DecodeContext {
public:
    explicit DecodeContext(const DecodeOptions& options = {});
    DecodeCounters& counters() { return counters_; }
    const DecodeCounters& counters() const { return counters_; }
    bool validating_checksums() const { return validate_; }
    // Adds "decoder.*" and "decoder.event.*" entries (Suricata names: decoder.pkts,
    // decoder.bytes, decoder.ipv4, decoder.event.ipv4.trunc_pkt, ...).
    void export_stats(StatsSnapshot& out) const;

    // Internal to the decoder: checksum-auto bookkeeping.
    void note_checksum(bool ok);

private:
    DecodeOptions options_;
    DecodeCounters counters_;
    bool validate_ = true;
    uint64_t checked_ = 0;
    uint64_t bad_ = 0;
};

enum class DecodeResult : uint8_t {
    kOk,        // decoded as far as the packet goes (check flags)
    kFragment,  // an IP fragment: hand it to defrag
    kInvalid,   // malformed; an event was counted; p holds what was decoded before the fault
};

// Decodes one captured frame of the given libpcap link type.
DecodeResult decode_packet(DecodeContext& ctx, int linktype, const uint8_t* data, uint32_t caplen,
                           uint32_t wirelen, int64_t ts_ns, Packet& p);

// Decodes a reassembled IP datagram (starts at the IP header); keeps p's link-layer fields
// (VLAN, ts, pcap_cnt) from the last fragment and sets kFlagReassembled. Does not count the
// datagram again in decoder.pkts/bytes.
DecodeResult decode_reassembled(DecodeContext& ctx, const uint8_t* data, uint32_t len, Packet& p);

// Symmetric worker-dispatch hash over the raw frame: IP source/destination pair (order-
// independent) and VLAN id, deliberately without ports so every fragment of a datagram lands
// on the same worker as its flow. Non-IP frames hash to 0. Cheap: no full decode.
uint32_t dispatch_hash(int linktype, const uint8_t* data, uint32_t caplen, bool use_vlan = true);

}  // namespace picket::sensor::decode
