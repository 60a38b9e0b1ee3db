#include "tools/trafficgen/tally.h"

#include <algorithm>
#include <cstring>

namespace picket::tools::trafficgen {
namespace {

// Which L4 headers the record counts, and how each keys its flows: TCP and UDP by ports, ICMP
// echo request/reply by the identifier (both "ports"), other ICMP types by (type, code).
struct L4Counters {
    uint8_t proto;
    int family;  // 0: either, 4: IPv4 only, 6: IPv6 only
    uint32_t min_len;
    uint64_t Record::*packets;
    uint64_t Record::*flows;
    int echo_request, echo_reply;  // -1: the header starts with source and destination ports
};
constexpr L4Counters kL4[] = {
    {kProtoTcp, 0, 20, &Record::tcp, &Record::flows_tcp, -1, -1},
    {kProtoUdp, 0, 8, &Record::udp, &Record::flows_udp, -1, -1},
    {kProtoIcmp, 4, 8, &Record::icmpv4, &Record::flows_icmpv4, 8, 0},
    {kProtoIcmpv6, 6, 8, &Record::icmpv6, &Record::flows_icmpv6, 128, 129},
};

}  // namespace

void Tally::observe(const uint8_t* f, uint32_t len) {
    ++rec_.packets;
    rec_.bytes += len;
    if (!attacks_.empty()) {
        scan_attacks(f, len);
    }
    if (len < 14) {
        return;
    }
    uint16_t type = get16(f + 12);
    uint32_t off = 14;
    uint16_t vlan = 0;
    bool tagged = false;
    while ((type == 0x8100 || type == 0x88a8) && off + 4 <= len) {
        if (!tagged) {
            vlan = get16(f + off) & 0x0fff;
        }
        tagged = true;
        type = get16(f + off + 2);
        off += 4;
    }
    if (tagged) {
        ++rec_.vlan;
    }
    if (type == 0x0806) {
        ++rec_.arp;
    } else if (type == 0x0800) {
        ipv4(f + off, len - off, vlan);
    } else if (type == 0x86dd) {
        ipv6(f + off, len - off, vlan);
    }
}

void Tally::scan_attacks(const uint8_t* f, uint32_t len) {
    for (const auto& a : attacks_) {
        if (memmem(f, len, a.data(), a.size()) != nullptr) {
            ++rec_.attack_string_packets;
            return;
        }
    }
}

void Tally::ipv4(const uint8_t* p, uint32_t len, uint16_t vlan) {
    if (len < 20) {
        return;
    }
    ++rec_.ipv4;
    uint32_t ihl = (p[0] & 0x0f) * 4u;
    uint32_t total = std::min<uint32_t>(get16(p + 2), len);
    if (ihl < 20 || total < ihl) {
        return;
    }
    uint16_t frag = get16(p + 6);
    bool mf = (frag & 0x2000) != 0;
    uint32_t offset = (frag & 0x1fffu) * 8;
    if (mf || offset != 0) {
        ++rec_.ipv4_fragments;
        FragKey k{};
        std::memcpy(k.src, p + 12, 4);
        std::memcpy(k.dst, p + 16, 4);
        k.id = get16(p + 4);
        k.vlan = vlan;
        k.proto = p[9];
        k.v6 = 0;
        fragment(k, offset, mf, p + ihl, total - ihl, false, p + 12, p + 16);
        return;
    }
    l4(false, p[9], p + 12, p + 16, p + ihl, total - ihl, vlan);
}

void Tally::ipv6(const uint8_t* p, uint32_t len, uint16_t vlan) {
    if (len < 40) {
        return;
    }
    ++rec_.ipv6;
    uint32_t end = std::min<uint32_t>(40 + get16(p + 4), len);
    uint8_t nh = p[6];
    uint32_t off = 40;
    while (nh == 0 || nh == 43 || nh == 60 || nh == 44) {
        if (off + 8 > end) {
            return;
        }
        if (nh == 44) {
            ++rec_.ipv6_fragments;
            uint16_t fo = get16(p + off + 2);
            FragKey k{};
            std::memcpy(k.src, p + 8, 16);
            std::memcpy(k.dst, p + 24, 16);
            k.id = get32(p + off + 4);
            k.vlan = vlan;
            k.proto = p[off];
            k.v6 = 1;
            fragment(k, fo & 0xfff8u, (fo & 1) != 0, p + off + 8, end - off - 8, true, p + 8,
                     p + 24);
            return;
        }
        nh = p[off];
        off += (p[off + 1] + 1u) * 8;
    }
    if (off > end) {
        return;
    }
    l4(true, nh, p + 8, p + 24, p + off, end - off, vlan);
}

void Tally::fragment(const FragKey& k, uint32_t offset, bool mf, const uint8_t* data, uint32_t n,
                     bool v6, const uint8_t* src, const uint8_t* dst) {
    FragState& st = frags_[k];
    st.got += n;
    if (offset == 0 && n >= 8) {
        std::memcpy(st.l4, data, 8);
        st.have_first = true;
    }
    if (!mf) {
        st.total = offset + n;
    }
    if (st.total != 0 && st.got >= st.total && st.have_first) {
        ++rec_.reassembled;
        uint8_t hdr[8];
        std::memcpy(hdr, st.l4, 8);
        uint8_t proto = k.proto;
        uint16_t vlan = k.vlan;
        frags_.erase(k);
        l4(v6, proto, src, dst, hdr, 8, vlan);
    }
}

void Tally::l4(bool v6, uint8_t proto, const uint8_t* src, const uint8_t* dst, const uint8_t* p,
               uint32_t len, uint16_t vlan) {
    const L4Counters* kind = nullptr;
    for (const auto& e : kL4) {
        if (e.proto == proto && (e.family == 0 || e.family == (v6 ? 6 : 4))) {
            kind = &e;
        }
    }
    if (kind == nullptr || len < kind->min_len) {
        return;
    }
    ++(rec_.*kind->packets);
    uint16_t sport, dport;
    if (kind->echo_request < 0) {
        sport = get16(p);
        dport = get16(p + 2);
    } else if (p[0] == kind->echo_request || p[0] == kind->echo_reply) {
        sport = dport = get16(p + 4);
    } else {
        sport = p[0];
        dport = p[1];
    }
    FlowKey k{};
    uint8_t sa[16] = {}, da[16] = {};
    size_t alen = v6 ? 16 : 4;
    std::memcpy(sa, src, alen);
    std::memcpy(da, dst, alen);
    int c = std::memcmp(sa, da, 16);
    bool src_first = c < 0 || (c == 0 && sport <= dport);
    std::memcpy(k.a, src_first ? sa : da, 16);
    std::memcpy(k.b, src_first ? da : sa, 16);
    k.pa = src_first ? sport : dport;
    k.pb = src_first ? dport : sport;
    k.vlan = vlan;
    k.proto = static_cast<uint8_t>(proto | (v6 ? 0x80 : 0));  // families never collide
    if (flow_set_.insert(k).second) {
        ++rec_.flows;
        ++(rec_.*kind->flows);
    }
}

}  // namespace picket::tools::trafficgen
