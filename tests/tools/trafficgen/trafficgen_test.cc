// Reads the generator's pcaps back with libpcap and recounts them with a parser of its own
// (deliberately not sharing code with the generator's tally), then compares every field of
// the record, validates every checksum, the attack placements and the HTTP requests.
#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tools/trafficgen/generator.h"

namespace tg = picket::tools::trafficgen;

namespace {

uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t be32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
           static_cast<uint32_t>(p[2]) << 8 | p[3];
}

// Plain RFC 1071 sum of big-endian 16-bit words.
uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc = 0) {
    for (size_t i = 0; i + 1 < n; i += 2) {
        acc += be16(p + i);
    }
    if (n % 2) {
        acc += static_cast<uint32_t>(p[n - 1]) << 8;
    }
    return acc;
}
uint16_t fold(uint32_t acc) {
    while (acc >> 16) {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    return static_cast<uint16_t>(acc);
}

struct Counts {
    uint64_t packets = 0, bytes = 0, ipv4 = 0, ipv6 = 0, tcp = 0, udp = 0, icmpv4 = 0, icmpv6 = 0;
    uint64_t arp = 0, vlan = 0, ipv4_fragments = 0, ipv6_fragments = 0, reassembled = 0;
    uint64_t flows_tcp = 0, flows_udp = 0, flows_icmpv4 = 0, flows_icmpv6 = 0;
    uint64_t bad_checksums = 0, checked_checksums = 0;
    uint64_t http_requests = 0, http_bad = 0, tls_client_hellos = 0, tls_sni = 0;
    uint64_t oversize = 0, non_monotonic = 0;
    int64_t first_ts = 0, last_ts = 0;
    std::set<std::tuple<int, std::string, std::string, uint16_t, uint16_t, uint16_t>> flows;
    std::map<std::string, std::vector<uint64_t>> attack_packets;  // string -> packet numbers
};

struct Frag {
    std::map<uint32_t, std::vector<uint8_t>> parts;  // offset -> data
    uint32_t total = 0;
};

class Recount {
public:
    explicit Recount(const std::vector<std::string>& attacks) : attacks_(attacks) {}

    Counts run(const std::string& path) {
        char err[PCAP_ERRBUF_SIZE];
        pcap_t* pc = pcap_open_offline(path.c_str(), err);
        EXPECT_NE(pc, nullptr) << err;
        if (pc == nullptr) {
            return c_;
        }
        EXPECT_EQ(pcap_datalink(pc), DLT_EN10MB);
        pcap_pkthdr* h;
        const u_char* d;
        int64_t prev = 0;
        while (pcap_next_ex(pc, &h, &d) == 1) {
            ++c_.packets;
            c_.bytes += h->caplen;
            int64_t ts = static_cast<int64_t>(h->ts.tv_sec) * 1000000 + h->ts.tv_usec;
            if (c_.packets == 1) {
                c_.first_ts = ts;
            }
            c_.non_monotonic += ts < prev;
            prev = ts;
            c_.last_ts = ts;
            EXPECT_EQ(h->caplen, h->len);
            c_.oversize += h->caplen > 1518;
            for (const auto& a : attacks_) {
                if (std::search(d, d + h->caplen, a.begin(), a.end()) != d + h->caplen) {
                    c_.attack_packets[a].push_back(c_.packets);
                }
            }
            frame(d, h->caplen);
        }
        pcap_close(pc);
        return c_;
    }

private:
    void frame(const uint8_t* f, uint32_t len) {
        uint16_t type = be16(f + 12);
        uint32_t off = 14;
        uint16_t vlan = 0;
        if (type == 0x8100) {
            ++c_.vlan;
            vlan = be16(f + 14) & 0xfff;
            type = be16(f + 16);
            off = 18;
        }
        if (type == 0x0806) {
            ++c_.arp;
        } else if (type == 0x0800) {
            v4(f + off, len - off, vlan);
        } else if (type == 0x86dd) {
            v6(f + off, len - off, vlan);
        }
    }

    void check(bool ok) {
        ++c_.checked_checksums;
        c_.bad_checksums += !ok;
    }

    void v4(const uint8_t* p, uint32_t len, uint16_t vlan) {
        ++c_.ipv4;
        uint32_t ihl = (p[0] & 15) * 4u;
        uint32_t total = be16(p + 2);
        EXPECT_LE(total, len);
        EXPECT_LE(total, 1500u);
        check(fold(sum16(p, ihl)) == 0xffff);
        uint8_t src[16] = {}, dst[16] = {};
        std::memcpy(src, p + 12, 4);
        std::memcpy(dst, p + 16, 4);
        uint16_t fw = be16(p + 6);
        if ((fw & 0x2000) || (fw & 0x1fff)) {
            ++c_.ipv4_fragments;
            std::string key = "4" + std::string(reinterpret_cast<const char*>(p + 12), 8) +
                              std::to_string(be16(p + 4)) + "/" + std::to_string(vlan);
            add_frag(key, (fw & 0x1fff) * 8u, (fw & 0x2000) != 0, p + ihl, total - ihl, false, src,
                     dst, p[9], vlan);
            return;
        }
        l4(false, src, dst, p[9], p + ihl, total - ihl, vlan);
    }

    void v6(const uint8_t* p, uint32_t len, uint16_t vlan) {
        ++c_.ipv6;
        uint32_t plen = be16(p + 4);
        EXPECT_LE(40 + plen, len);
        EXPECT_LE(40 + plen, 1500u);
        uint8_t src[16], dst[16];
        std::memcpy(src, p + 8, 16);
        std::memcpy(dst, p + 24, 16);
        if (p[6] == 44) {
            ++c_.ipv6_fragments;
            const uint8_t* fh = p + 40;
            std::string key = "6" + std::string(reinterpret_cast<const char*>(p + 8), 32) +
                              std::to_string(be32(fh + 4)) + "/" + std::to_string(vlan);
            add_frag(key, be16(fh + 2) & 0xfff8u, (be16(fh + 2) & 1) != 0, fh + 8, plen - 8, true,
                     src, dst, fh[0], vlan);
            return;
        }
        l4(true, src, dst, p[6], p + 40, plen, vlan);
    }

    void add_frag(const std::string& key, uint32_t off, bool more, const uint8_t* d, uint32_t n,
                  bool is_v6, const uint8_t* src, const uint8_t* dst, uint8_t proto,
                  uint16_t vlan) {
        Frag& fr = frags_[key];
        fr.parts[off].assign(d, d + n);
        if (!more) {
            fr.total = off + n;
        }
        if (fr.total == 0) {
            return;
        }
        std::vector<uint8_t> whole;
        for (const auto& [o, part] : fr.parts) {
            if (o != whole.size()) {
                return;  // a hole: not complete yet
            }
            whole.insert(whole.end(), part.begin(), part.end());
        }
        if (whole.size() != fr.total) {
            return;
        }
        ++c_.reassembled;
        frags_.erase(key);
        l4(is_v6, src, dst, proto, whole.data(), static_cast<uint32_t>(whole.size()), vlan);
    }

    uint32_t pseudo(bool is_v6, const uint8_t* src, const uint8_t* dst, uint8_t proto,
                    uint32_t len) {
        uint32_t acc = sum16(src, is_v6 ? 16 : 4);
        acc = sum16(dst, is_v6 ? 16 : 4, acc);
        return acc + proto + (len >> 16) + (len & 0xffff);
    }

    void l4(bool is_v6, const uint8_t* src, const uint8_t* dst, uint8_t proto, const uint8_t* p,
            uint32_t n, uint16_t vlan) {
        uint16_t sp = 0, dp = 0;
        if (proto == 6) {
            ++c_.tcp;
            check(fold(sum16(p, n, pseudo(is_v6, src, dst, 6, n))) == 0xffff);
            sp = be16(p);
            dp = be16(p + 2);
            uint32_t hl = (p[12] >> 4) * 4u;
            payload(sp, dp, p + hl, n - hl);
        } else if (proto == 17) {
            ++c_.udp;
            check(be16(p + 6) != 0 && fold(sum16(p, n, pseudo(is_v6, src, dst, 17, n))) == 0xffff);
            EXPECT_EQ(be16(p + 4), n);
            sp = be16(p);
            dp = be16(p + 2);
        } else if (proto == 1 && !is_v6) {
            ++c_.icmpv4;
            check(fold(sum16(p, n)) == 0xffff);
            EXPECT_TRUE(p[0] == 8 || p[0] == 0);
            sp = dp = be16(p + 4);
        } else if (proto == 58 && is_v6) {
            ++c_.icmpv6;
            check(fold(sum16(p, n, pseudo(true, src, dst, 58, n))) == 0xffff);
            EXPECT_TRUE(p[0] == 128 || p[0] == 129);
            sp = dp = be16(p + 4);
        } else {
            ADD_FAILURE() << "unexpected protocol " << int(proto);
            return;
        }
        char a[64], b[64];
        inet_ntop(is_v6 ? AF_INET6 : AF_INET, src, a, sizeof(a));
        inet_ntop(is_v6 ? AF_INET6 : AF_INET, dst, b, sizeof(b));
        std::string sa = a, sb = b;
        if (std::tie(sb, dp) < std::tie(sa, sp)) {
            std::swap(sa, sb);
            std::swap(sp, dp);
        }
        int pk = proto | (is_v6 ? 0x100 : 0);
        if (c_.flows.insert({pk, sa, sb, sp, dp, vlan}).second) {
            (proto == 6    ? c_.flows_tcp
             : proto == 17 ? c_.flows_udp
             : proto == 1  ? c_.flows_icmpv4
                           : c_.flows_icmpv6)++;
        }
    }

    void payload(uint16_t sp, uint16_t dp, const uint8_t* p, uint32_t n) {
        std::string_view s(reinterpret_cast<const char*>(p), n);
        if (dp == 80 || dp == 8080) {
            static const char* const kMethods[] = {"GET ",  "POST ",   "PUT ",
                                                   "HEAD ", "DELETE ", "OPTIONS "};
            bool starts = false;
            for (const char* m : kMethods) {
                starts |= s.substr(0, std::strlen(m)) == m;
            }
            if (!starts) {
                return;
            }
            ++c_.http_requests;
            size_t eol = s.find("\r\n");
            size_t end = s.find("\r\n\r\n");
            size_t sp1 = s.find(' ');
            size_t sp2 = eol == std::string_view::npos ? eol : s.rfind(' ', eol);
            bool ok = eol != std::string_view::npos && end != std::string_view::npos && sp2 > sp1 &&
                      s.substr(sp2 + 1, eol - sp2 - 1) == "HTTP/1.1" &&
                      (s[sp1 + 1] == '/' || s[sp1 + 1] == '*') &&
                      s.substr(eol, end - eol + 2).find("\r\nHost: ") != std::string_view::npos;
            c_.http_bad += !ok;
        } else if (dp == 443 && n > 9 && p[0] == 0x16 && p[5] == 1) {
            ++c_.tls_client_hellos;
            // record(5) handshake(4) version(2) random(32) session id, suites, compression
            size_t o = 5 + 4 + 2 + 32;
            o += 1 + p[o];
            o += 2 + be16(p + o);
            o += 1 + p[o];
            size_t ext_end = o + 2 + be16(p + o);
            o += 2;
            EXPECT_EQ(ext_end, n);
            bool sni = false, versions = false;
            while (o + 4 <= ext_end) {
                uint16_t type = be16(p + o), len = be16(p + o + 2);
                if (type == 0) {
                    sni = p[o + 4 + 2] == 0 && be16(p + o + 4 + 3) + 5u == len;
                }
                versions |= type == 43;
                o += 4 + len;
            }
            EXPECT_EQ(o, ext_end);
            c_.tls_sni += sni && versions;
        }
        (void)sp;
    }

    std::vector<std::string> attacks_;
    Counts c_;
    std::map<std::string, Frag> frags_;
};

// CTest runs each test case as its own process, two at a time: the pid keeps their files apart.
std::string temp_path(const std::string& name) {
    return ::testing::TempDir() + "/trafficgen_" + std::to_string(getpid()) + "_" + name + ".pcap";
}

std::vector<uint8_t> slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The last one is long and has spaces: it must go in a body and still sit in one segment.
const std::vector<std::string> kAttacks = {"/etc/passwd", "<script>alert(1)</script>",
                                           "' OR 1=1 --", "cmd.exe",
                                           "LONG ATTACK " + std::string(480, 'q') + " END"};

class TrafficgenRecord : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        tg::Options o;
        o.seed = 7;
        o.sessions = 3000;
        o.ipv6_share = 0.3;
        o.vlan_share = 0.1;
        o.frag_share = 0.25;
        o.attacks = kAttacks;
        o.attack_share = 0.2;
        path_ = temp_path("record");
        rec_ = tg::generate(o, path_);
        counts_ = Recount(kAttacks).run(path_);
    }
    static void TearDownTestSuite() { std::remove(path_.c_str()); }

    static std::string path_;
    static tg::Record rec_;
    static Counts counts_;
};
std::string TrafficgenRecord::path_;
tg::Record TrafficgenRecord::rec_;
Counts TrafficgenRecord::counts_;

TEST_F(TrafficgenRecord, EveryCounterMatchesAnIndependentRecount) {
    const Counts& c = counts_;
    EXPECT_EQ(rec_.packets, c.packets);
    EXPECT_EQ(rec_.bytes, c.bytes);
    EXPECT_EQ(rec_.ipv4, c.ipv4);
    EXPECT_EQ(rec_.ipv6, c.ipv6);
    EXPECT_EQ(rec_.tcp, c.tcp);
    EXPECT_EQ(rec_.udp, c.udp);
    EXPECT_EQ(rec_.icmpv4, c.icmpv4);
    EXPECT_EQ(rec_.icmpv6, c.icmpv6);
    EXPECT_EQ(rec_.arp, c.arp);
    EXPECT_EQ(rec_.vlan, c.vlan);
    EXPECT_EQ(rec_.ipv4_fragments, c.ipv4_fragments);
    EXPECT_EQ(rec_.ipv6_fragments, c.ipv6_fragments);
    EXPECT_EQ(rec_.reassembled, c.reassembled);
    EXPECT_EQ(rec_.flows, c.flows.size());
    EXPECT_EQ(rec_.flows_tcp, c.flows_tcp);
    EXPECT_EQ(rec_.flows_udp, c.flows_udp);
    EXPECT_EQ(rec_.flows_icmpv4, c.flows_icmpv4);
    EXPECT_EQ(rec_.flows_icmpv6, c.flows_icmpv6);
    EXPECT_EQ(rec_.first_ts_us, c.first_ts);
    EXPECT_EQ(rec_.last_ts_us, c.last_ts);
    EXPECT_EQ(rec_.http_requests, c.http_requests);
    EXPECT_EQ(rec_.sessions.tls, c.tls_client_hellos);
    EXPECT_EQ(rec_.sessions.http + rec_.sessions.dns + rec_.sessions.tls + rec_.sessions.icmp,
              3000u);
    EXPECT_EQ(rec_.file_bytes, slurp(path_).size());
    EXPECT_EQ(rec_.seed, 7u);
}

TEST_F(TrafficgenRecord, TrafficHasEveryFeature) {
    // Every session is its own flow; ARP has none.
    EXPECT_EQ(rec_.flows, 3000u);
    EXPECT_GT(rec_.sessions.http, 1000u);
    EXPECT_GT(rec_.sessions.dns, 500u);
    EXPECT_GT(rec_.sessions.tls, 200u);
    EXPECT_GT(rec_.sessions.icmp, 50u);
    EXPECT_GT(rec_.http_requests, rec_.sessions.http);  // keep-alive
    EXPECT_GT(rec_.ipv6, 0u);
    EXPECT_GT(rec_.vlan, 0u);
    EXPECT_GT(rec_.arp, 0u);
    EXPECT_GT(rec_.ipv4_fragments, 0u);
    EXPECT_GT(rec_.ipv6_fragments, 0u);
    EXPECT_GT(rec_.icmpv6, 0u);
    EXPECT_EQ(rec_.first_ts_us, 1704067200000000LL);
    EXPECT_EQ(counts_.non_monotonic, 0u);
    EXPECT_EQ(counts_.oversize, 0u);
}

TEST_F(TrafficgenRecord, AllChecksumsAreValid) {
    EXPECT_GT(counts_.checked_checksums, rec_.packets);  // IPv4 header + L4 per packet
    EXPECT_EQ(counts_.bad_checksums, 0u);
}

TEST_F(TrafficgenRecord, HttpRequestsParse) {
    EXPECT_GT(counts_.http_requests, 0u);
    EXPECT_EQ(counts_.http_bad, 0u);
}

TEST_F(TrafficgenRecord, TlsClientHellosCarrySniAndSupportedVersions) {
    EXPECT_EQ(counts_.tls_sni, rec_.sessions.tls);
}

TEST_F(TrafficgenRecord, AttackStringsOccurInExactlyTheRecordedPackets) {
    ASSERT_GT(rec_.attacks.size(), 50u);
    std::map<std::string, std::vector<uint64_t>> expected;
    std::set<std::string> locations;
    for (size_t i = 0; i < rec_.attacks.size(); ++i) {
        const auto& a = rec_.attacks[i];
        EXPECT_EQ(a.string, kAttacks[i % kAttacks.size()]);  // round-robin
        EXPECT_EQ(a.flow.proto, "tcp");
        EXPECT_TRUE(a.flow.dport == 80 || a.flow.dport == 8080);
        expected[a.string].push_back(a.packet);
        locations.insert(a.location);
    }
    for (auto& [s, v] : expected) {
        std::sort(v.begin(), v.end());
    }
    EXPECT_EQ(counts_.attack_packets, expected);
    EXPECT_EQ(locations, (std::set<std::string>{"body", "uri"}));
    EXPECT_EQ(rec_.attack_string_packets, rec_.attacks.size());
}

TEST_F(TrafficgenRecord, JsonHasTheRecordFields) {
    nlohmann::json j = tg::to_json(rec_);
    EXPECT_EQ(j["packets"].get<uint64_t>(), rec_.packets);
    EXPECT_EQ(j["flows_icmpv6"].get<uint64_t>(), rec_.flows_icmpv6);
    EXPECT_EQ(j["sessions"]["http"].get<uint64_t>(), rec_.sessions.http);
    EXPECT_EQ(j["attacks"].size(), rec_.attacks.size());
    EXPECT_EQ(j["attacks"][0]["packet"].get<uint64_t>(), rec_.attacks[0].packet);
    EXPECT_EQ(j["attacks"][0]["flow"]["src"].get<std::string>(), rec_.attacks[0].flow.src);
    EXPECT_EQ(j["options"]["attacks"].size(), kAttacks.size());
    EXPECT_EQ(j["seed"].get<uint64_t>(), 7u);
}

TEST(Trafficgen, SameSeedIsByteIdenticalOtherSeedDiffers) {
    tg::Options o;
    o.sessions = 400;
    o.attacks = {"/etc/passwd"};
    o.seed = 42;
    tg::generate(o, temp_path("a"));
    tg::generate(o, temp_path("b"));
    o.seed = 43;
    tg::generate(o, temp_path("c"));
    auto a = slurp(temp_path("a")), b = slurp(temp_path("b")), c = slurp(temp_path("c"));
    EXPECT_GT(a.size(), 100000u);
    EXPECT_TRUE(a == b);
    EXPECT_FALSE(a == c);
    for (const char* n : {"a", "b", "c"}) {
        std::remove(temp_path(n).c_str());
    }
}

TEST(Trafficgen, DefaultSharesAndRecountAgree) {
    tg::Options o;
    o.seed = 3;
    o.sessions = 1500;
    std::string p = temp_path("defaults");
    tg::Record r = tg::generate(o, p);
    Counts c = Recount({}).run(p);
    EXPECT_EQ(r.packets, c.packets);
    EXPECT_EQ(r.tcp, c.tcp);
    EXPECT_EQ(r.udp, c.udp);
    EXPECT_EQ(r.ipv6, c.ipv6);
    EXPECT_EQ(r.flows, c.flows.size());
    EXPECT_EQ(r.reassembled, c.reassembled);
    EXPECT_EQ(c.bad_checksums, 0u);
    EXPECT_TRUE(r.attacks.empty());
    // 20% IPv6 and 5% VLAN by session: loose bounds on frame shares.
    EXPECT_GT(r.ipv6 * 100, r.packets * 10);
    EXPECT_LT(r.ipv6 * 100, r.packets * 32);
    EXPECT_GT(r.vlan * 100, r.packets * 1);
    EXPECT_LT(r.vlan * 100, r.packets * 12);
    std::remove(p.c_str());
}

TEST(Trafficgen, SizeControlWithinFivePercent) {
    tg::Options o;
    o.seed = 11;
    o.size_bytes = 20u << 20;
    std::string p = temp_path("size");
    tg::Record r = tg::generate(o, p);
    uint64_t size = slurp(p).size();
    EXPECT_EQ(size, r.file_bytes);
    EXPECT_GE(size, o.size_bytes);  // stops after the session that crosses the target
    EXPECT_LE(size, o.size_bytes + o.size_bytes / 20);
    std::remove(p.c_str());
}

TEST(Trafficgen, ParseSize) {
    uint64_t v = 0;
    EXPECT_TRUE(tg::parse_size("1000", &v));
    EXPECT_EQ(v, 1000u);
    EXPECT_TRUE(tg::parse_size("20M", &v));
    EXPECT_EQ(v, 20u << 20);
    EXPECT_TRUE(tg::parse_size("1g", &v));
    EXPECT_EQ(v, 1u << 30);
    EXPECT_TRUE(tg::parse_size("512KiB", &v));
    EXPECT_EQ(v, 512u << 10);
    EXPECT_FALSE(tg::parse_size("", &v));
    EXPECT_FALSE(tg::parse_size("M", &v));
    EXPECT_FALSE(tg::parse_size("12X", &v));
    EXPECT_FALSE(tg::parse_size("99999999999999999999", &v));
    EXPECT_FALSE(tg::parse_size("99999999999T", &v));
}

TEST(Trafficgen, InvalidOptionsAreRejected) {
    tg::Options o;
    EXPECT_EQ(tg::validate(o), "");
    o.ipv6_share = 1.5;
    EXPECT_NE(tg::validate(o).find("--ipv6-share"), std::string::npos);
    o = {};
    o.attacks = {""};
    EXPECT_NE(tg::validate(o).find("--attack"), std::string::npos);
    o = {};
    o.sessions = 0;
    EXPECT_NE(tg::validate(o).find("--sessions"), std::string::npos);
    EXPECT_THROW(tg::generate(o, temp_path("invalid")), std::invalid_argument);
    o = {};
    EXPECT_THROW(tg::generate(o, "/nonexistent-dir/x.pcap"), std::runtime_error);
}

}  // namespace
