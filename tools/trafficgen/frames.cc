#include "tools/trafficgen/frames.h"

#include <algorithm>
#include <cstring>

#include "tools/trafficgen/wire.h"

namespace picket::tools::trafficgen {
namespace {

uint64_t pseudo_sum(const Conn& c, bool fc, uint8_t proto, size_t l4_len) {
    const Host& src = fc ? *c.client : *c.server;
    const Host& dst = fc ? *c.server : *c.client;
    uint8_t ph[40];
    if (!c.v6) {
        std::memcpy(ph, src.addr, 4);
        std::memcpy(ph + 4, dst.addr, 4);
        ph[8] = 0;
        ph[9] = proto;
        put16(ph + 10, static_cast<uint16_t>(l4_len));
        return csum_add(0, ph, 12);
    }
    std::memcpy(ph, src.addr, 16);
    std::memcpy(ph + 16, dst.addr, 16);
    put32(ph + 32, static_cast<uint32_t>(l4_len));
    ph[36] = ph[37] = ph[38] = 0;
    ph[39] = proto;
    return csum_add(0, ph, 40);
}

void write_udp(const Conn& c, bool fc, uint8_t* u, const uint8_t* pl, size_t n) {
    size_t l4 = 8 + n;
    put16(u, fc ? c.cport : c.sport);
    put16(u + 2, fc ? c.sport : c.cport);
    put16(u + 4, static_cast<uint16_t>(l4));
    u[6] = u[7] = 0;
    std::memcpy(u + 8, pl, n);
    uint16_t cs = csum_fold(csum_add(pseudo_sum(c, fc, kProtoUdp, l4), u, l4));
    if (cs == 0) {
        cs = 0xffff;  // RFC 768: a computed zero is sent as all ones
    }
    store_csum(u + 6, cs);
}

}  // namespace

void derive_mac(Host& h) {
    uint64_t x = fnv1a(h.addr, h.v6 ? 16 : 4);
    h.mac[0] = 0x02;  // locally administered, unicast
    for (int i = 1; i < 6; ++i) {
        h.mac[i] = static_cast<uint8_t>(x >> (8 * i));
    }
}

uint8_t* ip_frame(Session& s, Conn& c, bool fc, uint8_t proto, size_t l4_len, int64_t ts,
                  int32_t attack, const FragInfo* frag) {
    const Host& src = fc ? *c.client : *c.server;
    const Host& dst = fc ? *c.server : *c.client;
    size_t l2 = c.vlan ? 18 : 14;
    size_t l3 = c.v6 ? 40 + (frag ? 8 : 0) : 20;
    size_t len = l2 + l3 + l4_len;
    size_t flen = std::max(len, kMinFrame);
    size_t off = s.data.size();
    s.data.resize(off + flen);
    uint8_t* f = s.data.data() + off;
    if (flen > len) {
        std::memset(f + len, 0, flen - len);
    }
    std::memcpy(f, dst.mac, 6);
    std::memcpy(f + 6, src.mac, 6);
    uint8_t* p = f + 12;
    if (c.vlan) {
        put16(p, 0x8100);
        put16(p + 2, c.vlan);
        p += 4;
    }
    put16(p, c.v6 ? 0x86dd : 0x0800);
    p += 2;
    if (!c.v6) {
        p[0] = 0x45;
        p[1] = 0;
        put16(p + 2, static_cast<uint16_t>(20 + l4_len));
        uint16_t id = frag ? static_cast<uint16_t>(frag->id) : (fc ? c.cipid++ : c.sipid++);
        put16(p + 4, id);
        // DF on TCP as Linux and Windows send it; fragments carry offset and MF.
        put16(p + 6, frag ? frag->v4word : (proto == kProtoTcp ? 0x4000 : 0));
        p[8] = fc ? c.cttl : c.sttl;
        p[9] = proto;
        p[10] = p[11] = 0;
        std::memcpy(p + 12, src.addr, 4);
        std::memcpy(p + 16, dst.addr, 4);
        store_csum(p + 10, csum_fold(csum_add(0, p, 20)));
        p += 20;
    } else {
        uint32_t fl = fc ? c.cflow : c.sflow;
        put32(p, 0x60000000u | (fl & 0xfffff));
        put16(p + 4, static_cast<uint16_t>(l3 - 40 + l4_len));
        p[6] = frag ? 44 : proto;
        p[7] = fc ? c.cttl : c.sttl;
        std::memcpy(p + 8, src.addr, 16);
        std::memcpy(p + 24, dst.addr, 16);
        p += 40;
        if (frag) {
            std::memcpy(p, frag->v6hdr, 8);
            p += 8;
        }
    }
    int64_t t = std::max(ts, s.last_ts);
    s.last_ts = t;
    s.pkts.push_back(Pkt{t, static_cast<uint32_t>(off), static_cast<uint32_t>(flen), attack});
    return p;
}

void tcp(Session& s, Conn& c, bool fc, uint8_t flags, const uint8_t* pl, size_t n, int64_t ts,
         int32_t attack) {
    size_t optlen = (flags & kSyn) ? 12 : 0;
    size_t l4 = 20 + optlen + n;
    uint8_t* t = ip_frame(s, c, fc, kProtoTcp, l4, ts, attack);
    uint32_t& seq = fc ? c.cseq : c.sseq;
    uint32_t ack = fc ? c.sseq : c.cseq;
    put16(t, fc ? c.cport : c.sport);
    put16(t + 2, fc ? c.sport : c.cport);
    put32(t + 4, seq);
    put32(t + 8, (flags & kAck) ? ack : 0);
    t[12] = static_cast<uint8_t>(((20 + optlen) / 4) << 4);
    t[13] = flags;
    put16(t + 14, (flags & kSyn) ? (fc ? 64240 : 65160) : (fc ? c.cwin : c.swin));
    t[16] = t[17] = 0;
    t[18] = t[19] = 0;
    if (optlen) {
        uint8_t* o = t + 20;
        o[0] = 2;  // MSS
        o[1] = 4;
        put16(o + 2, static_cast<uint16_t>(c.mss));
        o[4] = 1;  // NOP NOP SACK-permitted
        o[5] = 1;
        o[6] = 4;
        o[7] = 2;
        o[8] = 1;  // NOP, window scale 7
        o[9] = 3;
        o[10] = 3;
        o[11] = 7;
    }
    if (n) {
        std::memcpy(t + 20 + optlen, pl, n);
    }
    store_csum(t + 16, csum_fold(csum_add(pseudo_sum(c, fc, kProtoTcp, l4), t, l4)));
    seq += static_cast<uint32_t>(n) + ((flags & kSyn) ? 1 : 0) + ((flags & kFin) ? 1 : 0);
}

void udp(Session& s, Conn& c, bool fc, const uint8_t* pl, size_t n, int64_t ts,
         std::vector<uint8_t>& scratch) {
    size_t l4 = 8 + n;
    size_t l3 = c.v6 ? 40 : 20;
    if (l3 + l4 <= kMtu) {
        uint8_t* u = ip_frame(s, c, fc, kProtoUdp, l4, ts);
        write_udp(c, fc, u, pl, n);
        return;
    }
    // Fragmented datagram: build it whole (the checksum covers all of it), then cut.
    scratch.resize(l4);
    write_udp(c, fc, scratch.data(), pl, n);
    uint32_t id = c.v6 ? (c.frag_id++) : (fc ? c.cipid++ : c.sipid++);
    size_t chunk = c.v6 ? (kMtu - 40 - 8) / 8 * 8 : (kMtu - 20) / 8 * 8;
    for (size_t off = 0; off < l4; off += chunk) {
        size_t m = std::min(chunk, l4 - off);
        bool more = off + m < l4;
        FragInfo fi;
        fi.id = id;
        fi.v4word = static_cast<uint16_t>((off / 8) | (more ? 0x2000 : 0));
        fi.v6hdr[0] = kProtoUdp;
        fi.v6hdr[1] = 0;
        put16(fi.v6hdr + 2, static_cast<uint16_t>(off | (more ? 1 : 0)));
        put32(fi.v6hdr + 4, id);
        uint8_t* d = ip_frame(s, c, fc, kProtoUdp, m, ts, -1, &fi);
        std::memcpy(d, scratch.data() + off, m);
        ts += 3;
    }
}

void icmp_echo(Session& s, Conn& c, bool request, uint16_t id, uint16_t seq, const uint8_t* pl,
               size_t n, int64_t ts) {
    uint8_t proto = c.v6 ? kProtoIcmpv6 : kProtoIcmp;
    size_t l4 = 8 + n;
    uint8_t* m = ip_frame(s, c, request, proto, l4, ts);
    m[0] = c.v6 ? (request ? 128 : 129) : (request ? 8 : 0);
    m[1] = 0;
    m[2] = m[3] = 0;
    put16(m + 4, id);
    put16(m + 6, seq);
    std::memcpy(m + 8, pl, n);
    uint64_t acc = c.v6 ? pseudo_sum(c, request, proto, l4) : 0;
    store_csum(m + 2, csum_fold(csum_add(acc, m, l4)));
}

void arp_pair(Session& s, const Host& client, int64_t ts) {
    uint8_t gw_ip[4] = {client.addr[0], client.addr[1], client.addr[2], 1};
    Host gw;
    std::memcpy(gw.addr, gw_ip, 4);
    derive_mac(gw);
    for (int op = 1; op <= 2; ++op) {
        size_t off = s.data.size();
        s.data.resize(off + kMinFrame);
        uint8_t* f = s.data.data() + off;
        std::memset(f, 0, kMinFrame);
        const Host& from = op == 1 ? client : gw;
        const Host& to = op == 1 ? gw : client;
        if (op == 1) {
            std::memset(f, 0xff, 6);
        } else {
            std::memcpy(f, to.mac, 6);
        }
        std::memcpy(f + 6, from.mac, 6);
        put16(f + 12, 0x0806);
        uint8_t* a = f + 14;
        put16(a, 1);
        put16(a + 2, 0x0800);
        a[4] = 6;
        a[5] = 4;
        put16(a + 6, static_cast<uint16_t>(op));
        std::memcpy(a + 8, from.mac, 6);
        std::memcpy(a + 14, from.addr, 4);
        if (op == 2) {
            std::memcpy(a + 18, to.mac, 6);
        }
        std::memcpy(a + 24, to.addr, 4);
        int64_t t = std::max(ts + (op == 2 ? 150 : 0), s.last_ts);
        s.last_ts = t;
        s.pkts.push_back(Pkt{t, static_cast<uint32_t>(off), kMinFrame, -1});
    }
}

int64_t send_data(Session& s, Conn& c, bool fc, const uint8_t* d, size_t n, int64_t t,
                  bool ack_tail, size_t split, size_t mark, int32_t attack) {
    size_t pos = 0;
    int segs = 0;
    int window = 10;
    int in_window = 0;
    int64_t ack_delay = std::max<int64_t>(c.gap / 2, 5);
    while (pos < n) {
        size_t m = std::min<size_t>(c.mss, n - pos);
        if (split > pos && split < pos + m) {
            m = split - pos;
        }
        int32_t a = (mark >= pos && mark < pos + m) ? attack : -1;
        bool last = pos + m == n;
        tcp(s, c, fc, static_cast<uint8_t>(kAck | (last ? kPsh : 0)), d + pos, m, t, a);
        pos += m;
        ++segs;
        if (segs % 2 == 0 || (last && ack_tail)) {
            tcp(s, c, !fc, kAck, nullptr, 0, t + ack_delay);
        }
        t += c.gap;
        if (++in_window >= window && pos < n) {
            t += c.rtt;
            in_window = 0;
            window = std::min(window * 2, 44);
        }
    }
    return s.last_ts;
}

int64_t handshake(Session& s, Conn& c, int64_t t) {
    tcp(s, c, true, kSyn, nullptr, 0, t);
    tcp(s, c, false, kSyn | kAck, nullptr, 0, t + c.rtt);
    tcp(s, c, true, kAck, nullptr, 0, t + c.rtt + 30);
    return t + c.rtt + 30;
}

void teardown(Session& s, Conn& c, Rng& r, int64_t t) {
    bool server_first = r.chance(0.3);
    tcp(s, c, !server_first, kFin | kAck, nullptr, 0, t);
    tcp(s, c, server_first, kFin | kAck, nullptr, 0, t + c.rtt);
    tcp(s, c, !server_first, kAck, nullptr, 0, t + c.rtt + 20);
}

}  // namespace picket::tools::trafficgen
