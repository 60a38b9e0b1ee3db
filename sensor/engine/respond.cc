#include "sensor/engine/respond.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "sensor/capture/inline.h"

namespace picket::sensor::engine {

namespace {

constexpr uint8_t kTtl = 64;
constexpr size_t kIpv6MinMtu = 1280;

uint16_t rd16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
void wr16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
void wr32(uint8_t* p, uint32_t v) {
    wr16(p, static_cast<uint16_t>(v >> 16));
    wr16(p + 2, static_cast<uint16_t>(v));
}

uint32_t sum16(uint32_t sum, const uint8_t* d, size_t n) {
    for (size_t i = 0; i + 1 < n; i += 2) {
        sum += rd16(d + i);
    }
    if ((n & 1) != 0) {
        sum += static_cast<uint32_t>(d[n - 1]) << 8;
    }
    return sum;
}
uint16_t fold(uint32_t sum) {
    while ((sum >> 16) != 0) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(~sum);
}

// Link header for a response: the original's (VLAN tags included), MACs swapped when the
// response goes back to the sender. Returns its length, or -1 when p has none.
long put_link(const decode::Packet& p, bool to_sender, uint8_t* out, size_t cap) {
    if (p.linktype != decode::kDltEn10mb || p.l3 == nullptr || p.l3 < p.data + 14) {
        return -1;
    }
    const auto n = static_cast<size_t>(p.l3 - p.data);
    if (n > cap) {
        return -1;
    }
    std::memcpy(out, p.data, n);
    if (to_sender) {
        std::memcpy(out, p.data + 6, 6);
        std::memcpy(out + 6, p.data, 6);
    }
    return static_cast<long>(n);
}

// IP header from src to dst for `payload` bytes of protocol proto; returns its length.
size_t put_ip(const decode::Packet& p, const decode::Address& src, const decode::Address& dst,
              uint8_t proto, size_t payload, uint8_t* out) {
    if (p.ip_version == 4) {
        std::memset(out, 0, 20);
        out[0] = 0x45;
        wr16(out + 2, static_cast<uint16_t>(20 + payload));
        wr16(out + 6, 0x4000);  // DF: an atomic datagram may carry id 0 (RFC 6864)
        out[8] = kTtl;
        out[9] = proto;
        std::memcpy(out + 12, src.v4(), 4);
        std::memcpy(out + 16, dst.v4(), 4);
        wr16(out + 10, fold(sum16(0, out, 20)));
        return 20;
    }
    std::memset(out, 0, 40);
    out[0] = 0x60;
    wr16(out + 4, static_cast<uint16_t>(payload));
    out[6] = proto;
    out[7] = kTtl;
    std::memcpy(out + 8, src.b, 16);
    std::memcpy(out + 24, dst.b, 16);
    return 40;
}

// Pseudo-header sum (RFC 793 / RFC 8200 8.1) for an L4 segment of len bytes.
uint32_t pseudo(const decode::Packet& p, const decode::Address& src, const decode::Address& dst,
                uint8_t proto, size_t len) {
    uint32_t s = 0;
    if (p.ip_version == 4) {
        s = sum16(s, src.v4(), 4);
        s = sum16(s, dst.v4(), 4);
    } else {
        s = sum16(s, src.b, 16);
        s = sum16(s, dst.b, 16);
    }
    return s + proto + static_cast<uint32_t>(len);
}

// Length of p's TCP segment in sequence space, from the IP header (not the capture, which
// may be cut): payload + SYN + FIN.
uint32_t tcp_seg_len(const decode::Packet& p) {
    uint32_t ip_total = p.ip_version == 4 ? rd16(p.l3 + 2) : 40u + rd16(p.l3 + 4);
    const uint32_t hdrs = static_cast<uint32_t>(p.ip_hdr_len) + p.tcp_hdr_len;
    uint32_t len = ip_total > hdrs ? ip_total - hdrs : 0;
    len += (p.tcp_flags & TH_SYN) != 0 ? 1 : 0;
    len += (p.tcp_flags & TH_FIN) != 0 ? 1 : 0;
    return len;
}

bool is_ip(const decode::Packet& p) {
    return (p.ip_version == 4 || p.ip_version == 6) && p.l3 != nullptr &&
           !p.has(decode::kFlagFragment);
}

}  // namespace

size_t build_tcp_rst(const decode::Packet& p, bool to_sender, uint8_t* out, size_t cap,
                     bool with_ethernet, bool original_dropped) {
    if (!is_ip(p) || p.proto != IPPROTO_TCP || !p.has(decode::kFlagTcp) ||
        (p.tcp_flags & TH_RST) != 0) {
        return 0;
    }
    const long link = with_ethernet ? put_link(p, to_sender, out, cap) : 0;
    if (link < 0) {
        return 0;
    }
    size_t off = static_cast<size_t>(link);
    const size_t ip_len = p.ip_version == 4 ? 20 : 40;
    if (cap < off + ip_len + 20) {
        return 0;
    }
    const decode::Address& src = to_sender ? p.dst : p.src;
    const decode::Address& dst = to_sender ? p.src : p.dst;
    off += put_ip(p, src, dst, IPPROTO_TCP, 20, out + off);
    uint8_t* t = out + off;
    std::memset(t, 0, 20);
    const uint32_t seg = tcp_seg_len(p);
    uint32_t seq = 0;
    uint32_t ack = 0;
    uint8_t flags = TH_RST | TH_ACK;
    if (to_sender) {
        wr16(t, p.dport);
        wr16(t + 2, p.sport);
        seq = (p.tcp_flags & TH_ACK) != 0 ? p.tcp_ack : 0;
        ack = p.tcp_seq + seg;
    } else {
        wr16(t, p.sport);
        wr16(t + 2, p.dport);
        seq = original_dropped ? p.tcp_seq : p.tcp_seq + seg;
        ack = p.tcp_ack;
        if ((p.tcp_flags & TH_ACK) == 0) {
            flags = TH_RST;
            ack = 0;
        }
    }
    wr32(t + 4, seq);
    wr32(t + 8, ack);
    t[12] = 5 << 4;
    t[13] = flags;
    wr16(t + 16, fold(sum16(pseudo(p, src, dst, IPPROTO_TCP, 20), t, 20)));
    return off + 20;
}

size_t build_icmp_unreachable(const decode::Packet& p, uint8_t* out, size_t cap,
                              bool with_ethernet) {
    if (!is_ip(p) || p.proto != IPPROTO_UDP || !p.has(decode::kFlagUdp)) {
        return 0;
    }
    const long link = with_ethernet ? put_link(p, true, out, cap) : 0;
    if (link < 0) {
        return 0;
    }
    size_t off = static_cast<size_t>(link);
    const size_t captured = p.caplen - static_cast<size_t>(p.l3 - p.data);
    const size_t ip_len = p.ip_version == 4 ? 20 : 40;
    // IPv4: the header and 8 bytes (RFC 792); IPv6: as much as fits in 1280 (RFC 4443 3.1).
    const size_t quote = p.ip_version == 4 ? std::min<size_t>(captured, p.ip_hdr_len + 8u)
                                           : std::min<size_t>(captured, kIpv6MinMtu - ip_len - 8);
    if (cap < off + ip_len + 8 + quote) {
        return 0;
    }
    const size_t icmp_len = 8 + quote;
    off +=
        put_ip(p, p.dst, p.src, p.ip_version == 4 ? uint8_t{IPPROTO_ICMP} : uint8_t{IPPROTO_ICMPV6},
               icmp_len, out + off);
    uint8_t* c = out + off;
    std::memset(c, 0, 8);
    std::memcpy(c + 8, p.l3, quote);
    if (p.ip_version == 4) {
        c[0] = 3;  // destination unreachable
        c[1] = 3;  // port unreachable
        wr16(c + 2, fold(sum16(0, c, icmp_len)));
    } else {
        c[0] = 1;  // destination unreachable
        c[1] = 4;  // port unreachable
        wr16(c + 2, fold(sum16(pseudo(p, p.dst, p.src, IPPROTO_ICMPV6, icmp_len), c, icmp_len)));
    }
    return off + icmp_len;
}

namespace {

// Builds what `target` asks for and hands each frame to send(frame, len, to_sender).
template <typename Send>
uint32_t respond(const decode::Packet& p, RejectTarget target, bool dropped, bool with_ethernet,
                 Send&& send) {
    uint8_t buf[kMaxResponseFrame];
    uint32_t sent = 0;
    if (p.proto == IPPROTO_TCP) {
        for (const bool to_sender : {true, false}) {
            if ((to_sender && target == RejectTarget::kReceiver) ||
                (!to_sender && target == RejectTarget::kSender)) {
                continue;
            }
            const size_t n = build_tcp_rst(p, to_sender, buf, sizeof(buf), with_ethernet, dropped);
            if (n != 0 && send(buf, n, to_sender)) {
                ++sent;
            }
        }
    } else if (p.proto == IPPROTO_UDP && target != RejectTarget::kReceiver) {
        const size_t n = build_icmp_unreachable(p, buf, sizeof(buf), with_ethernet);
        if (n != 0 && send(buf, n, true)) {
            ++sent;
        }
    }
    return sent;
}

class RawSocketResponder final : public Responder {
public:
    RawSocketResponder() {
        // IPPROTO_RAW implies IP_HDRINCL (and IPV6_HDRINCL for AF_INET6): we write the
        // whole IP header, spoofed source included.
        fd4_ = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
        const int err4 = errno;
        fd6_ = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
        if (fd4_ < 0 && fd6_ < 0) {
            throw ResponderError(std::string("raw socket: ") + std::strerror(err4) +
                                 " (needs CAP_NET_RAW)");
        }
    }
    ~RawSocketResponder() override {
        if (fd4_ >= 0) {
            close(fd4_);
        }
        if (fd6_ >= 0) {
            close(fd6_);
        }
    }
    uint32_t reject(const decode::Packet& p, RejectTarget target, bool dropped) override {
        return respond(p, target, dropped, false, [&](const uint8_t* f, size_t n, bool) {
            ssize_t rc = -1;
            if ((f[0] >> 4) == 4 && fd4_ >= 0) {
                sockaddr_in to{};
                to.sin_family = AF_INET;
                std::memcpy(&to.sin_addr, f + 16, 4);
                rc = sendto(fd4_, f, n, 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
            } else if ((f[0] >> 4) == 6 && fd6_ >= 0) {
                sockaddr_in6 to{};
                to.sin6_family = AF_INET6;
                std::memcpy(&to.sin6_addr, f + 24, 16);
                rc = sendto(fd6_, f, n, 0, reinterpret_cast<sockaddr*>(&to), sizeof(to));
            }
            const bool ok = rc == static_cast<ssize_t>(n);
            ++(ok ? stats_.sent : stats_.failed);
            return ok;
        });
    }
    ResponderStats stats() const override { return stats_; }

private:
    int fd4_ = -1;
    int fd6_ = -1;
    ResponderStats stats_;
};

class BridgeResponder final : public Responder {
public:
    explicit BridgeResponder(capture::BridgeInjector& injector) : injector_(injector) {}
    uint32_t reject(const decode::Packet& p, RejectTarget target, bool dropped) override {
        const int in = injector_.side_of(p.data);
        if (in < 0) {
            ++stats_.failed;
            return 0;
        }
        return respond(p, target, dropped, true, [&](const uint8_t* f, size_t n, bool to_sender) {
            const bool ok = injector_.inject(to_sender ? in : in ^ 1, f, n);
            ++(ok ? stats_.sent : stats_.failed);
            return ok;
        });
    }
    ResponderStats stats() const override { return stats_; }

private:
    capture::BridgeInjector& injector_;
    ResponderStats stats_;
};

}  // namespace

std::unique_ptr<Responder> make_raw_socket_responder() {
    return std::make_unique<RawSocketResponder>();
}

std::unique_ptr<Responder> make_bridge_responder(capture::BridgeInjector& injector) {
    return std::make_unique<BridgeResponder>(injector);
}

}  // namespace picket::sensor::engine
