#include "tools/trafficgen/planner.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "tools/trafficgen/wire.h"

namespace picket::tools::trafficgen {
namespace {

const uint8_t kServerV4First[] = {23, 34, 35, 52, 54, 64, 69, 93, 104, 142, 151, 157, 185, 199};
const uint16_t kServerV6Prefix[][2] = {{0x2606, 0x4700}, {0x2a00, 0x1450}, {0x2001, 0x4860},
                                       {0x2a03, 0x2880}, {0x2620, 0x01ec}, {0x2600, 0x1f18},
                                       {0x2a04, 0x4e42}};
const uint16_t kVlanIds[] = {10, 20, 30, 100, 101, 200};

std::string addr_string(bool v6, const uint8_t* a) {
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(v6 ? AF_INET6 : AF_INET, a, buf, sizeof(buf));
    return buf;
}

// Replaces every occurrence of an attack string in a content pool, so that the strings occur
// only where they are injected.
void sanitize(std::vector<uint8_t>& pool, bool text, const std::vector<std::string>& attacks) {
    for (const auto& a : attacks) {
        for (int guard = 0; guard < 1000000; ++guard) {
            auto it = std::search(pool.begin(), pool.end(), a.begin(), a.end());
            if (it == pool.end()) {
                break;
            }
            uint8_t repl = text ? (a[0] == 'x' ? 'y' : 'x') : static_cast<uint8_t>(a[0] ^ 0x55);
            *it = repl;
        }
    }
}

}  // namespace

Planner::Planner(const Options& o) : opt(o), rng(o.seed) {
    build_pools();
    build_hosts();
}

void Planner::build_pools() {
    Rng r(opt.seed ^ 0x706f6f6cULL);
    text.reserve(kPoolSize + 256);
    const char* const tags[] = {"p", "div", "span", "li", "h2", "td", "a", "section"};
    while (text.size() < kPoolSize) {
        const char* tag = r.pick(tags);
        std::string s = std::string("<") + tag + " class=\"" + r.pick(kWords) + "\">";
        int nw = static_cast<int>(r.range(3, 40));
        for (int i = 0; i < nw; ++i) {
            s += r.pick(kLorem);
            s += (i + 1 < nw) ? " " : "";
        }
        s += std::string("</") + tag + ">\n";
        text.insert(text.end(), s.begin(), s.end());
    }
    text.resize(kPoolSize);
    binary.resize(kPoolSize);
    for (size_t i = 0; i < kPoolSize; i += 8) {
        uint64_t v = r.next();
        std::memcpy(binary.data() + i, &v, 8);
    }
    sanitize(text, true, opt.attacks);
    sanitize(binary, false, opt.attacks);
}

void Planner::build_hosts() {
    Rng r(opt.seed ^ 0x686f737473ULL);
    clients4.resize(1024);
    for (auto& h : clients4) {
        if (r.chance(0.5)) {
            h.addr[0] = 10;
            h.addr[1] = static_cast<uint8_t>(r.range(0, 255));
            h.addr[2] = static_cast<uint8_t>(r.range(0, 255));
        } else {
            h.addr[0] = 192;
            h.addr[1] = 168;
            h.addr[2] = static_cast<uint8_t>(r.range(0, 255));
        }
        h.addr[3] = static_cast<uint8_t>(r.range(2, 254));
        derive_mac(h);
    }
    clients6.resize(512);
    for (auto& h : clients6) {
        h.v6 = true;
        h.addr[0] = 0xfd;
        for (int i = 1; i < 16; ++i) {
            h.addr[i] = static_cast<uint8_t>(r.next());
        }
        derive_mac(h);
    }
    servers4.resize(256);
    servers6.resize(256);
    for (size_t i = 0; i < servers4.size(); ++i) {
        std::string name = std::string(r.pick(kWords)) + (r.chance(0.5) ? "-" : "") +
                           r.pick(kLorem) + "." + r.pick(kTlds);
        if (r.chance(0.6)) {
            name = "www." + name;
        }
        Host& h4 = servers4[i];
        h4.addr[0] = r.pick(kServerV4First);
        h4.addr[1] = static_cast<uint8_t>(r.range(0, 255));
        h4.addr[2] = static_cast<uint8_t>(r.range(0, 255));
        h4.addr[3] = static_cast<uint8_t>(r.range(1, 254));
        h4.name = name;
        derive_mac(h4);
        Host& h6 = servers6[i];
        h6.v6 = true;
        const auto& pre = kServerV6Prefix[r.below(std::size(kServerV6Prefix))];
        put16(h6.addr, pre[0]);
        put16(h6.addr + 2, pre[1]);
        for (int j = 4; j < 16; ++j) {
            h6.addr[j] = (j < 8 || j == 15 || r.chance(0.3)) ? static_cast<uint8_t>(r.next()) : 0;
        }
        h6.name = name;
        derive_mac(h6);
    }
    const uint8_t kResolvers4[][4] = {
        {8, 8, 8, 8}, {1, 1, 1, 1}, {9, 9, 9, 9}, {208, 67, 222, 222}};
    for (const auto& a : kResolvers4) {
        Host h;
        std::memcpy(h.addr, a, 4);
        derive_mac(h);
        resolvers4.push_back(h);
    }
    const uint16_t kResolvers6[][8] = {{0x2001, 0x4860, 0x4860, 0, 0, 0, 0, 0x8888},
                                       {0x2606, 0x4700, 0x4700, 0, 0, 0, 0, 0x1111}};
    for (const auto& a : kResolvers6) {
        Host h;
        h.v6 = true;
        for (int j = 0; j < 8; ++j) {
            put16(h.addr + 2 * j, a[j]);
        }
        derive_mac(h);
        resolvers6.push_back(h);
    }
}

bool Planner::claim_key(const Conn& c, uint8_t proto) {
    uint64_t h = fnv1a(c.client->addr, 16);
    h = fnv1a(c.server->addr, 16, h);
    uint8_t rest[7] = {proto,
                       static_cast<uint8_t>(c.cport >> 8),
                       static_cast<uint8_t>(c.cport),
                       static_cast<uint8_t>(c.sport >> 8),
                       static_cast<uint8_t>(c.sport),
                       static_cast<uint8_t>(c.vlan >> 8),
                       static_cast<uint8_t>(c.vlan)};
    h = fnv1a(rest, sizeof(rest), h);
    return used_keys_.insert(h).second;
}

void Planner::make_conn(Rng& r, Conn& c, Kind kind, uint16_t sport) {
    c = Conn{};
    c.v6 = r.chance(opt.ipv6_share);
    if (r.chance(opt.vlan_share)) {
        c.vlan = r.pick(kVlanIds);
    }
    auto& clients = c.v6 ? clients6 : clients4;
    c.client = &clients[r.below(clients.size())];
    if (kind == Kind::kDns) {
        auto& res = c.v6 ? resolvers6 : resolvers4;
        c.server = &res[r.below(res.size())];
    } else {
        c.server = &pick_skewed(r, c.v6 ? servers6 : servers4);
    }
    c.sport = sport;
    bool windows = r.chance(0.4);
    uint8_t proto = kind == Kind::kIcmp  ? (c.v6 ? kProtoIcmpv6 : kProtoIcmp)
                    : kind == Kind::kDns ? kProtoUdp
                                         : kProtoTcp;
    do {
        if (kind == Kind::kIcmp) {
            c.cport = c.sport = static_cast<uint16_t>(r.range(1, 65535));
        } else {
            c.cport =
                static_cast<uint16_t>(windows ? r.range(49152, 65535) : r.range(32768, 60999));
        }
    } while (!claim_key(c, proto));
    c.cipid = static_cast<uint16_t>(r.next());
    c.sipid = static_cast<uint16_t>(r.next());
    c.cttl = windows ? 128 : 64;
    c.sttl = static_cast<uint8_t>(r.chance(0.7) ? r.range(44, 60) : r.range(110, 122));
    c.cflow = static_cast<uint32_t>(r.next());
    c.sflow = static_cast<uint32_t>(r.next());
    c.frag_id = static_cast<uint32_t>(r.next());
    c.cseq = static_cast<uint32_t>(r.next());
    c.sseq = static_cast<uint32_t>(r.next());
    c.cwin = static_cast<uint16_t>(r.range(500, 2052));
    c.swin = static_cast<uint16_t>(r.range(235, 1026));
    c.mss = c.v6 ? 1440 : 1460;
    double u = r.unit();
    c.rtt = u < 0.3   ? r.range(1000, 10000)
            : u < 0.8 ? r.range(10000, 60000)
                      : r.range(60000, 250000);
    c.gap = r.range(12, 150);
}

std::string_view Planner::text_slice(Rng& r, size_t n) const {
    size_t off = r.below(kPoolSize - n);
    return {reinterpret_cast<const char*>(text.data() + off), n};
}
std::string_view Planner::binary_slice(Rng& r, size_t n) const {
    size_t off = r.below(kPoolSize - n);
    return {reinterpret_cast<const char*>(binary.data() + off), n};
}

void Planner::plan_session(Session& s, int64_t t) {
    Rng r(rng.next());
    if (r.chance(0.01) || session_count == 0) {
        arp_pair(s, clients4[r.below(clients4.size())], t);
        t += 300;
    }
    double u = r.unit();
    if (u < 0.55) {
        plan_http(*this, s, r, t);
    } else if (u < 0.83) {
        plan_dns(*this, s, r, t);
    } else if (u < 0.95) {
        plan_tls(*this, s, r, t);
    } else {
        plan_icmp(*this, s, r, t);
    }
    ++session_count;
}

std::string hex_token(Rng& r, int n) {
    static const char kHex[] = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < n; ++i) {
        s += kHex[r.below(16)];
    }
    return s;
}

int64_t think_time(Rng& r) {
    double u = r.unit();
    return u < 0.6   ? r.range(500, 50000)
           : u < 0.9 ? r.range(50000, 500000)
                     : r.range(500000, 3000000);
}

size_t body_size(Rng& r) {
    double u = r.unit();
    if (u < 0.5) {
        return static_cast<size_t>(r.range(200, 4096));
    }
    if (u < 0.85) {
        return static_cast<size_t>(r.range(4096, 32768));
    }
    if (u < 0.97) {
        return static_cast<size_t>(r.range(32768, 200000));
    }
    return static_cast<size_t>(r.range(200000, 800000));
}

FlowTuple tuple(const Conn& c, const char* proto) {
    FlowTuple ft;
    ft.proto = proto;
    ft.src = addr_string(c.v6, c.client->addr);
    ft.dst = addr_string(c.v6, c.server->addr);
    ft.sport = c.cport;
    ft.dport = c.sport;
    ft.vlan = c.vlan;
    return ft;
}

}  // namespace picket::tools::trafficgen
