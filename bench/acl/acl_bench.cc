// ACL classifier cost: for rule sets of 100, 1,000, 10,000, 25,600 and 100,000 rules, the build
// time and memory of AclClassifier, then the cost of one lookup three ways in the same run: one
// lookup() at a time, lookup_batch() over batches of 64 (how a worker holds packets), and the
// baseline, a first-match linear scan over the rules sorted by priority (compact rules, the
// best a classifier-less sensor could do). Every classifier answer is checked against the
// baseline on the packets the baseline ran, and lookup() against lookup_batch() on all
// ("diff", which must be 0).
//
// The anchor: DPDK's rte_acl (when libdpdk is found; otherwise "rte_acl: not built") holds the
// same rules (rte_acl_ref.h: IPv4 in a 5-field context, IPv6 in an 11-field one, priorities
// from Picket's first-match order, userdata = rule index + 1) and classifies the same packets,
// from keys laid out as rte_acl reads them (network byte order, built before the timing, as
// a DPDK application points rte_acl at its headers): rte_acl_classify over batches of 64 (split
// by family: one call per context) and with num = 1, its default classify method unless
// --rte-alg. Its build time is from the AclRules to both contexts built (rte_acl_build is
// nearly all of it); its memory is what the EAL heap gives the two contexts (rte_malloc's
// socket stats before and after). EAL runs --no-huge --no-pci. Its answers are checked
// against Picket's on every packet, against the linear scan on the packets that ran, and
// single against batched ("rdiff", which must be 0). A table per set puts both side by side.
//
// Rule sets are generated, seeded, two kinds:
//   classbench  ClassBench-like ACLs: 90% IPv4 / 10% IPv6; addresses clustered in sites (/16)
//               and subnets; destination /32 55%, /24 22%, /28-/30 8%, /16-/20 11%, /8 2%,
//               any 2%; source any 35%, /32 30%, /24-/27 20%, /16 10%, /8-/12 5%; tcp 65%,
//               udp 20%, icmp 5%, any 10%; tcp/udp destination port: one of 58 service ports
//               60%, any 20%, 1024:65535 8%, another single port 6%, a range of < 512 ports
//               6%; source port any 85%.
//               Ordered as an administrator writes an ACL: specific rules before general ones.
//   random      every field drawn independently: prefixes /8-/32 (/16-/128 for IPv6) of random
//               addresses, ports any / exact / random range, protocol tcp, udp or any, random
//               priorities.
// Packets: for each, a random rule (no locality: the caches' worst case); 90% a random point of
// it, 10% random addresses and ports. Times are the thread's CPU time (the machine is shared),
// median of the passes; the passes go round all sizes in turn so that the ratios compare
// like with like.
//
//   acl_bench [--set classbench|random|both] [--sizes 100,1000,...] [--packets N]
//             [--passes N] [--seed S] [--check] [--no-rte] [--rte-mem MiB]
//             [--rte-alg scalar|sse|avx2|avx512x16|avx512x32] [--rte-thp]
// --check: exit 1 on any difference in answers (ctest bench_acl_check runs it at small sizes),
// 77 (skipped) when rte_acl is built but DPDK's EAL does not start here.
//
// Last line (classbench set, lookup_batch figures; the table has lookup() beside them):
//   acl: ns_100=A ns_100000=B ratio=B/A mlookups_25600=C linear_ns_25600=D ratio_single=E
//        ratio_batch=B/A mlookups_batch_25600=C mlookups_single_25600=F
// ratio_single / mlookups_single_25600 are lookup() one packet at a time; ratio_batch and
// mlookups_batch_25600 name the lookup_batch() figures the first fields already give (they
// stay as they were for readers of earlier output).
// Then, when rte_acl ran at 25,600 and 100,000 classbench rules, each figure as picket/rte_acl:
//   acl_vs_rte: n=25600 batch_ns=P/R single_ns=P/R build_ms=P/R MiB=P/R n=100000 ...
//               alg=METHOD diff=D rte_diff=RD
// Never pass/fail on time: figures go to docs/performance.md.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench/common/bench_util.h"
#include "sensor/filter/filter.h"
#ifdef PICKET_HAVE_RTE_ACL
#include "bench/acl/rte_acl_ref.h"
#endif

namespace {

using picket::sensor::decode::Address;
using picket::sensor::filter::AclAction;
using picket::sensor::filter::AclBuildOptions;
using picket::sensor::filter::AclClassifier;
using picket::sensor::filter::AclFamily;
using picket::sensor::filter::AclPrefix;
using picket::sensor::filter::AclRule;
using picket::sensor::filter::FiveTuple;
using picket::sensor::filter::Verdict;

// Time is this thread's CPU time: the benchmark machine is shared, and CPU time leaves out the
// time other processes hold the core (it still pays for the caches they evict).
struct Clock {
    using time_point = double;
    static double now() {
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
    }
};

double since_ns(double t0) {
    return Clock::now() - t0;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

class Rng {
public:
    explicit Rng(uint64_t seed) : g_(seed) {}
    uint32_t u32() { return static_cast<uint32_t>(g_()); }
    uint32_t below(uint32_t n) { return static_cast<uint32_t>(g_() % n); }
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(g_) < p; }

private:
    std::mt19937_64 g_;
};

Address v4(uint32_t a) {
    uint8_t b[4] = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16),
                    static_cast<uint8_t>(a >> 8), static_cast<uint8_t>(a)};
    return Address::from_v4(b);
}
Address v6(uint64_t hi, uint64_t lo) {
    uint8_t b[16];
    for (int i = 0; i < 8; ++i) {
        b[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
        b[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
    }
    return Address::from_v6(b);
}

// ---- ClassBench-like ----------------------------------------------------------------------

constexpr uint16_t kServicePorts[] = {
    20,   21,   22,   23,   25,   53,   67,   69,   80,   88,   110,  111,   123,  135,  137,
    138,  139,  143,  161,  162,  179,  389,  443,  445,  465,  514,  515,   587,  631,  636,
    873,  993,  995,  1080, 1194, 1433, 1521, 1723, 2049, 2181, 3128, 3306,  3389, 5060, 5432,
    5900, 6379, 6443, 8000, 8080, 8443, 8888, 9000, 9090, 9200, 9418, 11211, 27017};

struct Sites {
    std::vector<uint32_t> v4_sites;  // /16 networks
    std::vector<uint64_t> v6_sites;  // /48 networks (upper 48 bits of the high half)
};

Sites make_sites(Rng& r, size_t rules) {
    Sites s;
    const size_t n = std::max<size_t>(16, rules / 64);
    for (size_t i = 0; i < n; ++i) {
        s.v4_sites.push_back(r.u32() & 0xffff0000u);
        s.v6_sites.push_back((uint64_t{0x2001} << 48 | (uint64_t{r.u32()} << 16)) &
                             0xffffffffffff0000ull);
    }
    return s;
}

// A prefix length drawn from a distribution given as (length, weight) pairs.
uint8_t draw_len(Rng& r, std::initializer_list<std::pair<uint8_t, int>> dist) {
    int total = 0;
    for (const auto& [len, w] : dist) {
        total += w;
    }
    int x = static_cast<int>(r.below(static_cast<uint32_t>(total)));
    for (const auto& [len, w] : dist) {
        if (x < w) {
            return len;
        }
        x -= w;
    }
    return dist.begin()->first;
}

AclPrefix cb_prefix4(Rng& r, const Sites& s, uint8_t len) {
    // Site /16, one of 16 subnets /24 per site (rules cluster), then the host.
    const uint32_t site = s.v4_sites[r.below(static_cast<uint32_t>(s.v4_sites.size()))];
    const uint32_t subnet = (r.below(16) * 37 % 256) << 8;
    const uint32_t a = site | subnet | r.below(256);
    return AclPrefix{v4(a), len};
}

AclPrefix cb_prefix6(Rng& r, const Sites& s, uint8_t len) {
    const uint64_t site = s.v6_sites[r.below(static_cast<uint32_t>(s.v6_sites.size()))];
    return AclPrefix{v6(site | r.below(16), r.below(4096)), len};
}

void ports(Rng& r, double any, double exact_service, double high_range, uint16_t* lo,
           uint16_t* hi) {
    if (r.chance(any)) {
        *lo = 0;
        *hi = 65535;
    } else if (r.chance(exact_service)) {
        *lo = *hi = kServicePorts[r.below(sizeof(kServicePorts) / sizeof(kServicePorts[0]))];
    } else if (r.chance(high_range)) {
        *lo = 1024;
        *hi = 65535;
    } else if (r.chance(0.5)) {
        *lo = *hi = static_cast<uint16_t>(1024 + r.below(64512));
    } else {
        *lo = static_cast<uint16_t>(1024 + r.below(60000));
        *hi = static_cast<uint16_t>(*lo + r.below(512));
    }
}

AclRule classbench_rule(Rng& r, const Sites& s) {
    AclRule rule;
    const bool is6 = r.chance(0.10);
    rule.family = is6 ? AclFamily::kIpv6 : AclFamily::kIpv4;
    if (is6) {
        rule.dst = cb_prefix6(r, s, draw_len(r, {{128, 45}, {64, 30}, {48, 15}, {32, 5}, {0, 5}}));
        rule.src = cb_prefix6(r, s, draw_len(r, {{0, 40}, {128, 25}, {64, 20}, {48, 15}}));
    } else {
        rule.dst = cb_prefix4(
            r, s,
            draw_len(r, {{32, 55}, {24, 22}, {28, 5}, {30, 3}, {16, 9}, {20, 2}, {8, 2}, {0, 2}}));
        rule.src = cb_prefix4(
            r, s, draw_len(r, {{0, 35}, {32, 30}, {24, 15}, {27, 5}, {16, 10}, {12, 3}, {8, 2}}));
    }
    const uint32_t p = r.below(100);
    if (p < 65) {
        rule.any_proto = false;
        rule.proto = 6;
    } else if (p < 85) {
        rule.any_proto = false;
        rule.proto = 17;
    } else if (p < 90) {
        rule.any_proto = false;
        rule.proto = is6 ? 58 : 1;
    }
    if (!rule.any_proto && (rule.proto == 6 || rule.proto == 17)) {
        ports(r, 0.20, 0.75, 0.4, &rule.dport_lo, &rule.dport_hi);
        ports(r, 0.85, 0.2, 0.7, &rule.sport_lo, &rule.sport_hi);
    }
    rule.priority = 1000;  // as parsed without "priority": rule order decides
    const uint32_t a = r.below(10);
    rule.action = a < 5 ? AclAction::kDrop : a < 8 ? AclAction::kPass : AclAction::kBypass;
    return rule;
}

// Fraction of each address's bits fixed, plus one for each exact port; coarse on purpose so
// that rules of one kind keep their random order.
int specificity(const AclRule& r) {
    const int bits = r.family == AclFamily::kIpv6 ? 128 : 32;
    return (r.src.len * 4 / bits) + (r.dst.len * 4 / bits) + (r.sport_lo == r.sport_hi) +
           (r.dport_lo == r.dport_hi);
}

// ---- random -------------------------------------------------------------------------------

AclRule random_rule(Rng& r) {
    AclRule rule;
    const bool is6 = r.chance(0.10);
    rule.family = is6 ? AclFamily::kIpv6 : AclFamily::kIpv4;
    auto prefix = [&]() {
        if (is6) {
            return AclPrefix{
                v6((uint64_t{r.u32()} << 32) | r.u32(), (uint64_t{r.u32()} << 32) | r.u32()),
                static_cast<uint8_t>(16 + r.below(113))};
        }
        return AclPrefix{v4(r.u32()), static_cast<uint8_t>(8 + r.below(25))};
    };
    rule.src = prefix();
    rule.dst = prefix();
    const uint32_t p = r.below(3);
    rule.any_proto = p == 2;
    rule.proto = p == 0 ? 6 : p == 1 ? 17 : 0;
    if (!rule.any_proto) {
        auto range = [&](uint16_t* lo, uint16_t* hi) {
            const uint32_t k = r.below(4);
            if (k == 0 || k == 1) {
                *lo = 0;
                *hi = 65535;
            } else if (k == 2) {
                *lo = *hi = static_cast<uint16_t>(r.u32());
            } else {
                const uint16_t a = static_cast<uint16_t>(r.u32());
                const uint16_t b = static_cast<uint16_t>(r.u32());
                *lo = std::min(a, b);
                *hi = std::max(a, b);
            }
        };
        range(&rule.sport_lo, &rule.sport_hi);
        range(&rule.dport_lo, &rule.dport_hi);
    }
    rule.priority = r.below(1000);
    rule.action = static_cast<AclAction>(r.below(3));
    return rule;
}

// ---- packets ------------------------------------------------------------------------------

Address inside(Rng& r, const AclPrefix& p, bool is4) {
    Address a = p.addr;
    const int first = is4 ? 12 : 0;
    const int bits = is4 ? 32 : 128;
    for (int bit = p.len; bit < bits; ++bit) {
        const uint8_t m = static_cast<uint8_t>(0x80 >> (bit % 8));
        a.b[first + bit / 8] =
            static_cast<uint8_t>((a.b[first + bit / 8] & ~m) | (r.chance(0.5) ? m : 0));
    }
    return a;
}

std::vector<FiveTuple> make_packets(Rng& r, const std::vector<AclRule>& rules, size_t n) {
    std::vector<FiveTuple> out;
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        FiveTuple t;
        const AclRule& rule = rules[r.below(static_cast<uint32_t>(rules.size()))];
        const bool is4 = rule.family != AclFamily::kIpv6;
        t.ip_version = is4 ? 4 : 6;
        if (r.chance(0.9)) {
            t.src = inside(r, rule.src, is4);
            t.dst = inside(r, rule.dst, is4);
            t.sport =
                static_cast<uint16_t>(rule.sport_lo + r.below(rule.sport_hi - rule.sport_lo + 1u));
            t.dport =
                static_cast<uint16_t>(rule.dport_lo + r.below(rule.dport_hi - rule.dport_lo + 1u));
            t.proto = rule.any_proto ? 6 : rule.proto;
        } else {
            t.src = inside(r, AclPrefix{rule.src.addr, 0}, is4);
            t.dst = inside(r, AclPrefix{rule.dst.addr, 0}, is4);
            t.sport = static_cast<uint16_t>(r.u32());
            t.dport = static_cast<uint16_t>(r.u32());
            t.proto = r.chance(0.5) ? 6 : 17;
        }
        out.push_back(t);
    }
    return out;
}

// ---- linear baseline ----------------------------------------------------------------------

// Rules sorted by (priority, index), compacted per family; the first match wins.
template <class A>
struct LinearRule {
    A src, smask, dst, dmask;
    uint16_t sp_lo, sp_hi, dp_lo, dp_hi;
    int16_t proto;  // -1: any
    uint32_t index;
    AclAction action;
};

using u128 = unsigned __int128;

uint32_t be32(const uint8_t* p) {
    return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
u128 be128(const uint8_t* p) {
    u128 x = 0;
    for (int i = 0; i < 16; ++i) {
        x = (x << 8) | p[i];
    }
    return x;
}

template <class A>
A mask_of(unsigned len) {
    constexpr unsigned kBits = sizeof(A) * 8;
    return len == 0 ? A(0) : ~A(0) << (kBits - len);
}

class Linear {
public:
    explicit Linear(const std::vector<AclRule>& rules) {
        std::vector<uint32_t> order(rules.size());
        for (uint32_t i = 0; i < order.size(); ++i) {
            order[i] = i;
        }
        std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
            return rules[a].priority < rules[b].priority;
        });
        for (uint32_t i : order) {
            const AclRule& r = rules[i];
            if (r.family != AclFamily::kIpv6) {
                add(v4_, r, i, be32(r.src.addr.b + 12), be32(r.dst.addr.b + 12));
            }
            if (r.family != AclFamily::kIpv4) {
                add(v6_, r, i, be128(r.src.addr.b), be128(r.dst.addr.b));
            }
        }
    }

    Verdict lookup(const FiveTuple& t) const {
        if (t.ip_version == 4) {
            return scan(v4_, be32(t.src.b + 12), be32(t.dst.b + 12), t);
        }
        return scan(v6_, be128(t.src.b), be128(t.dst.b), t);
    }

private:
    template <class A>
    static void add(std::vector<LinearRule<A>>& out, const AclRule& r, uint32_t index, A src,
                    A dst) {
        LinearRule<A> l;
        l.smask = mask_of<A>(r.src.len);
        l.src = src & l.smask;
        l.dmask = mask_of<A>(r.dst.len);
        l.dst = dst & l.dmask;
        l.sp_lo = r.sport_lo;
        l.sp_hi = r.sport_hi;
        l.dp_lo = r.dport_lo;
        l.dp_hi = r.dport_hi;
        l.proto = r.any_proto ? -1 : r.proto;
        l.index = index;
        l.action = r.action;
        out.push_back(l);
    }
    template <class A>
    static Verdict scan(const std::vector<LinearRule<A>>& rules, A src, A dst, const FiveTuple& t) {
        for (const LinearRule<A>& l : rules) {
            if (((src ^ l.src) & l.smask) == 0 && ((dst ^ l.dst) & l.dmask) == 0 &&
                t.sport >= l.sp_lo && t.sport <= l.sp_hi && t.dport >= l.dp_lo &&
                t.dport <= l.dp_hi && (l.proto < 0 || l.proto == t.proto)) {
                return Verdict{l.index, l.action};
            }
        }
        return Verdict{};
    }

    std::vector<LinearRule<uint32_t>> v4_;
    std::vector<LinearRule<u128>> v6_;
};

// ---- measurement --------------------------------------------------------------------------

struct Row {
    size_t rules = 0;
    double build_ms = 0;
    picket::sensor::filter::AclStats stats;
    double single_ns = 0;
    double batch_ns = 0;
    double linear_ns = 0;
    size_t linear_packets = 0;
    size_t mismatches = 0;
    double matched_pct = 0;
    // rte_acl (when built): same rules, same packets.
    bool rte = false;
    double rte_build_ms = 0;
    size_t rte_memory = 0, rte_runtime = 0;
    uint32_t rte_tries = 0;
    double rte_single_ns = 0, rte_batch_ns = 0;
    size_t rte_mismatches = 0;  // vs Picket (all packets), linear (its packets), single/batch
};

bool g_rte_wanted = true;  // --no-rte turns it off
std::string g_rte_algorithm;

struct Case {
    std::vector<AclRule> rules;
    std::vector<FiveTuple> packets;
    std::shared_ptr<const AclClassifier> classifier;
    std::vector<Verdict> out;
    std::vector<double> single, batch;
#ifdef PICKET_HAVE_RTE_ACL
    std::unique_ptr<picket::bench::RteAcl> rte;
    picket::bench::RteAcl::Keys keys;
    std::vector<uint32_t> rte_out;
    std::vector<double> rte_single, rte_batch;
#endif
    Row row;
};

uint64_t g_sink = 0;  // keeps the lookups from being optimised away

std::vector<AclRule> make_rules(const std::string& set, Rng& r, size_t n) {
    std::vector<AclRule> rules;
    rules.reserve(n);
    if (set == "classbench") {
        const Sites sites = make_sites(r, n);
        for (size_t i = 0; i < n; ++i) {
            rules.push_back(classbench_rule(r, sites));
        }
        // As an administrator orders an ACL: exceptions (specific rules) before the general
        // ones they refine, so "any any" rules come last and do not shadow the rest.
        std::stable_sort(rules.begin(), rules.end(), [](const AclRule& a, const AclRule& b) {
            return specificity(a) > specificity(b);
        });
    } else {
        for (size_t i = 0; i < n; ++i) {
            rules.push_back(random_rule(r));
        }
    }
    return rules;
}

#ifdef PICKET_HAVE_RTE_ACL
// rte_acl from the same rules (three builds, the median timed; one when a build takes over a
// second), its keys, and its answers checked against Picket's on every packet and against the
// linear scan on the packets that ran it.
void prepare_rte(Case& c, const Linear& linear) {
    std::vector<double> builds;
    for (int i = 0; i < 3 && (builds.empty() || builds.back() < 1000); ++i) {
        c.rte.reset();  // free the previous build first: the EAL heap is bounded
        std::string error;
        const double t0 = Clock::now();
        c.rte = picket::bench::RteAcl::build(c.rules, &error);
        builds.push_back(since_ns(t0) / 1e6);
        if (c.rte == nullptr) {
            std::fprintf(stderr, "acl_bench: rte_acl at %zu rules: %s\n", c.rules.size(),
                         error.c_str());
            return;
        }
    }
    Row& row = c.row;
    row.rte = true;
    row.rte_build_ms = median(builds);
    row.rte_memory = c.rte->memory_bytes();
    row.rte_runtime = c.rte->runtime_bytes();
    row.rte_tries = c.rte->tries_v4() + c.rte->tries_v6();
    g_rte_algorithm = c.rte->algorithm();
    c.keys = picket::bench::RteAcl::make_keys(c.packets);
    c.rte_out.resize(c.packets.size());
    constexpr size_t kWorkerBatch = 64;
    for (size_t i = 0; i < c.packets.size(); i += kWorkerBatch) {
        c.rte->classify_batch(c.keys, i, std::min(kWorkerBatch, c.packets.size() - i),
                              c.rte_out.data() + i);
    }
    for (size_t i = 0; i < c.packets.size(); ++i) {
        row.rte_mismatches += c.rte_out[i] != c.out[i].rule;
        row.rte_mismatches += c.rte->classify_one(c.keys, i) != c.rte_out[i];
        if (i < row.linear_packets) {
            row.rte_mismatches += linear.lookup(c.packets[i]).rule != c.rte_out[i];
        }
    }
}
#endif

// Rules, packets, three builds (the median timed), the linear baseline, and the check that
// the classifier answers as the baseline does.
void prepare(Case& c, const std::string& set, size_t n, size_t n_packets, uint64_t seed) {
    Rng r(seed * 1000003 + n);
    c.rules = make_rules(set, r, n);
    c.packets = make_packets(r, c.rules, n_packets);
    c.row.rules = n;
    std::vector<double> builds;
    for (int i = 0; i < 3; ++i) {
        const double t0 = Clock::now();
        auto built = AclClassifier::build(c.rules);
        builds.push_back(since_ns(t0) / 1e6);
        if (!built.ok()) {
            std::fprintf(stderr, "acl_bench: build failed: %s\n",
                         std::string(built.status().message()).c_str());
            std::exit(1);
        }
        c.classifier = *built;
    }
    c.row.build_ms = median(builds);
    c.row.stats = c.classifier->stats();

    c.out.resize(c.packets.size());
    c.classifier->lookup_batch(c.packets, c.out);
    for (size_t i = 0; i < c.packets.size(); ++i) {
        const Verdict v = c.classifier->lookup(c.packets[i]);
        c.row.mismatches += v.rule != c.out[i].rule;
    }
    // The baseline costs ~n ns a lookup: give it ~0.5 s of packets.
    const Linear linear(c.rules);
    c.row.linear_packets = std::clamp<size_t>(500000000 / (n * 2), 200, c.packets.size());
    std::vector<double> lin;
    size_t matched = 0;
    for (int p = 0; p < 3; ++p) {
        const double t0 = Clock::now();
        for (size_t i = 0; i < c.row.linear_packets; ++i) {
            const Verdict v = linear.lookup(c.packets[i]);
            g_sink += v.rule;
            if (p == 0) {
                matched += v.matched();
                c.row.mismatches +=
                    v.rule != c.out[i].rule || (v.matched() && v.action != c.out[i].action);
            }
        }
        lin.push_back(since_ns(t0) / static_cast<double>(c.row.linear_packets));
    }
    c.row.linear_ns = median(lin);
    c.row.matched_pct =
        100.0 * static_cast<double>(matched) / static_cast<double>(c.row.linear_packets);
#ifdef PICKET_HAVE_RTE_ACL
    if (g_rte_wanted) {
        prepare_rte(c, linear);
    }
#endif
}

// One timed pass of each way of looking up.
void time_pass(Case& c) {
    double t0 = Clock::now();
    uint64_t sum = 0;
    for (const FiveTuple& t : c.packets) {
        sum += c.classifier->lookup(t).rule;
    }
    c.single.push_back(since_ns(t0) / static_cast<double>(c.packets.size()));
    g_sink += sum;

    t0 = Clock::now();
    constexpr size_t kWorkerBatch = 64;
    for (size_t i = 0; i < c.packets.size(); i += kWorkerBatch) {
        const size_t m = std::min(kWorkerBatch, c.packets.size() - i);
        c.classifier->lookup_batch(std::span(c.packets).subspan(i, m),
                                   std::span(c.out).subspan(i, m));
    }
    c.batch.push_back(since_ns(t0) / static_cast<double>(c.packets.size()));
    g_sink += c.out[c.packets.size() / 2].rule;
#ifdef PICKET_HAVE_RTE_ACL
    if (c.rte != nullptr) {
        t0 = Clock::now();
        sum = 0;
        for (size_t i = 0; i < c.packets.size(); ++i) {
            sum += c.rte->classify_one(c.keys, i);
        }
        c.rte_single.push_back(since_ns(t0) / static_cast<double>(c.packets.size()));
        g_sink += sum;

        t0 = Clock::now();
        for (size_t i = 0; i < c.packets.size(); i += kWorkerBatch) {
            c.rte->classify_batch(c.keys, i, std::min(kWorkerBatch, c.packets.size() - i),
                                  c.rte_out.data() + i);
        }
        c.rte_batch.push_back(since_ns(t0) / static_cast<double>(c.packets.size()));
        g_sink += c.rte_out[c.packets.size() / 2];
    }
#endif
}

void print_header(const std::string& set) {
    std::printf("\nset=%s\n", set.c_str());
    std::printf("%7s %8s %9s %9s %5s %6s %8s %5s %5s | %9s %7s | %8s %7s | %10s %6s %5s %4s\n",
                "rules", "build_ms", "index_MiB", "total_MiB", "trees", "nodes", "leaf_ent",
                "maxlf", "depth", "lookup_ns", "Mlkp/s", "batch_ns", "Mlkp/s", "linear_ns",
                "lin_pk", "match", "diff");
}

void print_row(const Row& r) {
    std::printf(
        "%7zu %8.1f %9.2f %9.2f %5zu %6zu %8zu %5zu %5zu | %9.1f %7.2f | %8.1f %7.2f | "
        "%10.0f %6zu %4.0f%% %4zu\n",
        r.rules, r.build_ms, static_cast<double>(r.stats.index_bytes) / (1 << 20),
        static_cast<double>(r.stats.memory_bytes) / (1 << 20), r.stats.trees, r.stats.nodes,
        r.stats.leaf_entries, r.stats.max_leaf, r.stats.max_depth, r.single_ns, 1e3 / r.single_ns,
        r.batch_ns, 1e3 / r.batch_ns, r.linear_ns, r.linear_packets, r.matched_pct, r.mismatches);
    std::fflush(stdout);
}

double mib(size_t bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

// Picket and rte_acl side by side: build, memory (Picket: everything the classifier owns;
// rte_acl: the EAL heap bytes its two contexts hold), ns per lookup batched (64) and single,
// and the differences in answers (must be 0).
void print_compare(const std::string& set, const std::vector<Row>& rows) {
#ifdef PICKET_HAVE_RTE_ACL
    if (!g_rte_wanted) {
        std::printf("rte_acl: not run (--no-rte, or EAL did not start)\n");
        return;
    }
    std::printf("\nset=%s: Picket vs rte_acl (classify method %s), ns per lookup\n", set.c_str(),
                g_rte_algorithm.c_str());
    std::printf("%7s | %8s %8s | %7s %7s %7s | %8s %8s %6s | %8s %8s %6s | %5s %5s %5s\n", "rules",
                "build_ms", "rte_ms", "MiB", "rte_MiB", "rte_rt", "batch_ns", "rte_ns", "x",
                "single", "rte_ns", "x", "tries", "diff", "rdiff");
    for (const Row& r : rows) {
        if (!r.rte) {
            std::printf("%7zu | rte_acl: build failed\n", r.rules);
            continue;
        }
        std::printf(
            "%7zu | %8.1f %8.1f | %7.2f %7.2f %7.2f | %8.1f %8.1f %6.2f | %8.1f %8.1f %6.2f | "
            "%5u %5zu %5zu\n",
            r.rules, r.build_ms, r.rte_build_ms, mib(r.stats.memory_bytes), mib(r.rte_memory),
            mib(r.rte_runtime), r.batch_ns, r.rte_batch_ns, r.rte_batch_ns / r.batch_ns,
            r.single_ns, r.rte_single_ns, r.rte_single_ns / r.single_ns, r.rte_tries, r.mismatches,
            r.rte_mismatches);
    }
    std::printf(
        "(x: rte_acl's ns / Picket's, > 1 when Picket is faster; rte_rt: the part of rte_MiB "
        "rte_acl_build allocated; diff: Picket's lookup vs lookup_batch vs linear, rdiff: "
        "rte_acl vs Picket, vs linear, single vs batch)\n");
#else
    (void)set;
    (void)rows;
    std::printf("rte_acl: not built (no libdpdk)\n");
#endif
    std::fflush(stdout);
}

// Every size's classifier is built first; the timed passes then go round the sizes in turn,
// so that a slow stretch of a shared machine hits all sizes alike and the ratios hold.
std::map<size_t, Row> run_set(const std::string& set, const std::vector<size_t>& sizes,
                              size_t n_packets, int passes, uint64_t seed) {
    std::vector<Case> cases(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
        prepare(cases[i], set, sizes[i], n_packets, seed);
    }
    for (int p = 0; p < passes; ++p) {
        for (Case& c : cases) {
            time_pass(c);
        }
    }
    print_header(set);
    std::map<size_t, Row> rows;
    std::vector<Row> in_order;
    for (Case& c : cases) {
        c.row.single_ns = median(c.single);
        c.row.batch_ns = median(c.batch);
#ifdef PICKET_HAVE_RTE_ACL
        c.row.rte_single_ns = median(c.rte_single);
        c.row.rte_batch_ns = median(c.rte_batch);
#endif
        print_row(c.row);
        rows[c.row.rules] = c.row;
        in_order.push_back(c.row);
    }
    print_compare(set, in_order);
    return rows;
}

std::vector<size_t> parse_sizes(const std::string& s) {
    std::vector<size_t> out;
    size_t pos = 0;
    while (pos < s.size()) {
        const size_t comma = s.find(',', pos);
        out.push_back(std::stoul(s.substr(pos, comma - pos)));
        pos = comma == std::string::npos ? s.size() : comma + 1;
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::string set = "both";
    std::vector<size_t> sizes = {100, 1000, 10000, 25600, 100000};
    size_t packets = 500000;
    int passes = 9;
    uint64_t seed = 1;
    bool check = false;
    size_t rte_memory_mib = 4096;
    std::string rte_alg;  // empty: rte_acl's default
    bool rte_thp = false;
    bool rte_unavailable = false;  // built with rte_acl, but EAL would not start
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--check") {
            check = true;
            continue;
        }
        if (a == "--rte-thp") {
            rte_thp = true;
            continue;
        }
        if (a == "--no-rte") {
            g_rte_wanted = false;
            continue;
        }
        if (a == "--rte-mem" && v) {
            rte_memory_mib = std::stoul(v);
        } else if (a == "--rte-alg" && v) {
            rte_alg = v;
        } else if (a == "--set" && v) {
            set = v;
        } else if (a == "--sizes" && v) {
            sizes = parse_sizes(v);
        } else if (a == "--packets" && v) {
            packets = std::stoul(v);
        } else if (a == "--passes" && v) {
            passes = std::stoi(v);
        } else if (a == "--seed" && v) {
            seed = std::stoull(v);
        } else {
            std::fprintf(stderr,
                         "usage: acl_bench [--set classbench|random|both] [--sizes N,N,...] "
                         "[--packets N] [--passes N] [--seed S] [--check] [--no-rte] "
                         "[--rte-mem MiB] [--rte-alg scalar|sse|avx2|avx512x16|avx512x32] "
                         "[--rte-thp]\n");
            return 2;
        }
        ++i;
    }
    std::printf("acl_bench: %zu packets, %d passes (median), seed %llu; ns per lookup, one core\n",
                packets, passes, static_cast<unsigned long long>(seed));
#ifdef PICKET_HAVE_RTE_ACL
    if (g_rte_wanted) {
        std::string error;
        if (!picket::bench::RteAcl::init_eal(rte_memory_mib, rte_thp, &error)) {
            // Picket is still measured and checked; --check then ends as skipped (77).
            std::printf("rte_acl: not run, DPDK's EAL did not start: %s\n", error.c_str());
            g_rte_wanted = false;
            rte_unavailable = true;
        }
    }
    if (g_rte_wanted) {
        if (!rte_alg.empty() && !picket::bench::RteAcl::force_algorithm(rte_alg)) {
            std::fprintf(stderr, "acl_bench: unknown --rte-alg %s\n", rte_alg.c_str());
            return 2;
        }
        std::printf("rte_acl: DPDK EAL --no-huge -m %zu%s, classify method %s\n", rte_memory_mib,
                    rte_thp ? " (madvise MADV_HUGEPAGE)" : "",
                    rte_alg.empty() ? "rte_acl's default" : rte_alg.c_str());
    }
#else
    (void)rte_memory_mib;
    (void)rte_alg;
    (void)rte_thp;
    std::printf("rte_acl: not built (no libdpdk)\n");
#endif
    std::map<std::string, std::map<size_t, Row>> rows;
    for (const std::string s : {"random", "classbench"}) {
        if (set == "both" || set == s) {
            rows[s] = run_set(s, sizes, packets, passes, seed);
        }
    }
    std::printf("\npeak RSS %llu MiB%s\n",
                static_cast<unsigned long long>(picket::bench::proc_status_kb("VmHWM") / 1024),
                g_rte_wanted ? " (rte_acl's included)" : "");
    const auto& cb = rows["classbench"];
    if (cb.count(100) && cb.count(100000) && cb.count(25600)) {
        const double a = cb.at(100).batch_ns, b = cb.at(100000).batch_ns;
        const double sa = cb.at(100).single_ns, sb = cb.at(100000).single_ns;
        const double batch_m = 1e3 / cb.at(25600).batch_ns;
        std::printf(
            "acl: ns_100=%.1f ns_100000=%.1f ratio=%.2f mlookups_25600=%.2f "
            "linear_ns_25600=%.0f ratio_single=%.2f ratio_batch=%.2f mlookups_batch_25600=%.2f "
            "mlookups_single_25600=%.2f\n",
            a, b, b / a, batch_m, cb.at(25600).linear_ns, sb / sa, b / a, batch_m,
            1e3 / cb.at(25600).single_ns);
    }
    size_t diffs = 0, rte_diffs = 0;
    bool rte_failed = false;
    for (const auto& [name, by_size] : rows) {
        for (const auto& [n, r] : by_size) {
            diffs += r.mismatches;
            rte_diffs += r.rte_mismatches;
#ifdef PICKET_HAVE_RTE_ACL
            rte_failed |= g_rte_wanted && !r.rte;
#endif
        }
    }
    if (cb.count(25600) && cb.count(100000) && cb.at(25600).rte && cb.at(100000).rte) {
        std::printf("acl_vs_rte:");
        for (size_t n : {size_t{25600}, size_t{100000}}) {
            const Row& r = cb.at(n);
            std::printf(
                " n=%zu batch_ns=%.1f/%.1f single_ns=%.1f/%.1f build_ms=%.0f/%.0f "
                "MiB=%.1f/%.1f",
                n, r.batch_ns, r.rte_batch_ns, r.single_ns, r.rte_single_ns, r.build_ms,
                r.rte_build_ms, mib(r.stats.memory_bytes), mib(r.rte_memory));
        }
        std::printf(" alg=%s diff=%zu rte_diff=%zu (picket/rte_acl, classbench)\n",
                    g_rte_algorithm.c_str(), diffs, rte_diffs);
    }
#ifdef PICKET_HAVE_RTE_ACL
    picket::bench::RteAcl::cleanup_eal();
#endif
    if (check) {
        std::printf("check: diff=%zu rte_diff=%zu%s\n", diffs, rte_diffs,
                    rte_failed ? " rte_acl build failed" : "");
        if (diffs != 0 || rte_diffs != 0 || rte_failed) {
            return 1;
        }
        if (rte_unavailable) {
            return 77;  // ctest: skipped, rte_acl not compared
        }
    }
    return g_sink == 42 ? 3 : 0;
}
