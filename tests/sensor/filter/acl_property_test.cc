// Property test: on random rule sets and random tuples, the classifier answers exactly what the
// linear scan answers (lookup, lookup_batch and match_all). Rule sets are drawn to overlap a
// lot: few address bases, prefix lengths at the edges (0, 1, 31, 32, 127, 128), ports at 0
// and 65535, priorities with many ties; tuples are drawn inside rules as often as not. Seeds
// are fixed, so a failure reproduces; the message names the seed and the rule set size.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "sensor/filter/filter.h"

namespace picket::sensor::filter {
namespace {

class Gen {
public:
    explicit Gen(uint64_t seed) : rng_(seed) {
        for (int i = 0; i < 4; ++i) {
            decode::Address a;
            for (uint8_t& byte : a.b) {
                byte = static_cast<uint8_t>(rng_());
            }
            bases6_.push_back(a);
            uint8_t v4[4];
            for (uint8_t& byte : v4) {
                byte = static_cast<uint8_t>(rng_());
            }
            bases4_.push_back(decode::Address::from_v4(v4));
        }
        max_priority_ = pick({1u, 3u, 10u, 1000000u});
    }

    uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
    template <class T>
    T pick(std::initializer_list<T> xs) {
        return xs.begin()[below(static_cast<uint32_t>(xs.size()))];
    }

    // An address near one of the set's bases: a few bits flipped, sometimes anywhere.
    decode::Address address(bool v4) {
        decode::Address a = v4 ? bases4_[below(4)] : bases6_[below(4)];
        const int first = v4 ? 12 : 0;
        if (below(8) == 0) {
            for (int i = first; i < 16; ++i) {
                a.b[i] = static_cast<uint8_t>(rng_());
            }
            return a;
        }
        for (uint32_t flips = below(4); flips > 0; --flips) {
            const uint32_t bit = below(v4 ? 32 : 128);
            a.b[first + bit / 8] ^= static_cast<uint8_t>(0x80 >> (bit % 8));
        }
        return a;
    }

    uint8_t prefix_len(bool v4) {
        if (v4) {
            return below(3) == 0 ? static_cast<uint8_t>(below(33))
                                 : pick<uint8_t>({0, 1, 7, 8, 16, 23, 24, 25, 31, 32});
        }
        return below(3) == 0 ? static_cast<uint8_t>(below(129))
                             : pick<uint8_t>({0, 1, 32, 48, 63, 64, 65, 127, 128});
    }

    void ports(uint16_t* lo, uint16_t* hi) {
        switch (below(6)) {
            case 0:
            case 1:
                *lo = 0;
                *hi = 65535;
                return;
            case 2:
                *lo = *hi = pick<uint16_t>({0, 1, 80, 443, 1023, 1024, 65534, 65535});
                return;
            case 3: {
                const uint16_t a = static_cast<uint16_t>(rng_()), b = static_cast<uint16_t>(rng_());
                *lo = std::min(a, b);
                *hi = std::max(a, b);
                return;
            }
            case 4:
                *lo = 0;
                *hi = static_cast<uint16_t>(rng_());
                return;
            default:
                *lo = static_cast<uint16_t>(rng_());
                *hi = 65535;
                return;
        }
    }

    AclRule rule() {
        AclRule r;
        const uint32_t f = below(10);
        r.family = f < 5 ? AclFamily::kIpv4 : f < 8 ? AclFamily::kIpv6 : AclFamily::kAny;
        if (r.family != AclFamily::kAny) {
            const bool v4 = r.family == AclFamily::kIpv4;
            r.src = AclPrefix{address(v4), prefix_len(v4)};
            r.dst = AclPrefix{address(v4), prefix_len(v4)};
        }
        ports(&r.sport_lo, &r.sport_hi);
        ports(&r.dport_lo, &r.dport_hi);
        r.any_proto = below(3) == 0;
        r.proto = r.any_proto ? 0 : pick<uint8_t>({6, 17, 1, 58, 0, 255, 6, 17});
        r.priority = below(max_priority_);
        r.action = pick({AclAction::kPass, AclAction::kDrop, AclAction::kBypass});
        r.id = below(1000);
        return r;
    }

    // Half the tuples fall inside a rule (a random point of it), half are near the bases.
    FiveTuple tuple(const std::vector<AclRule>& rules) {
        FiveTuple t;
        if (!rules.empty() && below(2) == 0) {
            const AclRule& r = rules[below(static_cast<uint32_t>(rules.size()))];
            t.ip_version = r.family == AclFamily::kIpv4   ? 4
                           : r.family == AclFamily::kIpv6 ? 6
                                                          : pick<uint8_t>({4, 6});
            const bool v4 = t.ip_version == 4;
            t.src = inside(r.src, v4);
            t.dst = inside(r.dst, v4);
            t.sport = inside(r.sport_lo, r.sport_hi);
            t.dport = inside(r.dport_lo, r.dport_hi);
            t.proto = r.any_proto || below(8) == 0 ? static_cast<uint8_t>(rng_()) : r.proto;
            return t;
        }
        t.ip_version = pick<uint8_t>({4, 4, 6, 6, 6, 0});
        const bool v4 = t.ip_version != 6;
        t.src = address(v4);
        t.dst = address(v4);
        t.sport = pick<uint16_t>({0, 65535, 80, static_cast<uint16_t>(rng_())});
        t.dport = pick<uint16_t>({0, 65535, 443, static_cast<uint16_t>(rng_())});
        t.proto = pick<uint8_t>({6, 17, 1, 58, static_cast<uint8_t>(rng_())});
        return t;
    }

private:
    decode::Address inside(const AclPrefix& p, bool v4) {
        decode::Address a = address(v4);
        const int first = v4 ? 12 : 0;
        for (unsigned bit = 0; bit < p.len; ++bit) {
            const uint8_t m = static_cast<uint8_t>(0x80 >> (bit % 8));
            a.b[first + bit / 8] =
                static_cast<uint8_t>((a.b[first + bit / 8] & ~m) | (p.addr.b[first + bit / 8] & m));
        }
        return a;
    }
    uint16_t inside(uint16_t lo, uint16_t hi) {
        switch (below(4)) {
            case 0:
                return lo;
            case 1:
                return hi;
            default:
                return static_cast<uint16_t>(lo + below(uint32_t{hi} - lo + 1));
        }
    }

    std::mt19937_64 rng_;
    std::vector<decode::Address> bases4_, bases6_;
    uint32_t max_priority_ = 10;
};

std::string describe(const FiveTuple& t) {
    char a[46], b[46];
    std::ostringstream s;
    s << "v" << int{t.ip_version} << " " << t.src.to_string(a) << ":" << t.sport << " -> "
      << t.dst.to_string(b) << ":" << t.dport << " proto " << int{t.proto};
    return s.str();
}

// One rule set against `packets` tuples; returns the number of mismatches (each reported).
int check_set(uint64_t seed, size_t n_rules, size_t packets) {
    Gen g(seed);
    std::vector<AclRule> rules;
    for (size_t i = 0; i < n_rules; ++i) {
        rules.push_back(g.rule());
    }
    // Best-match mode (covered rules left out) for lookup(), all-matches mode for match_all();
    // small leaves make deep trees out of small sets.
    AclBuildOptions options;
    options.leaf_rules = g.pick<uint32_t>({1, 2, 4, 8, 16});
    auto built = AclClassifier::build(rules, options);
    AclBuildOptions all_options = options;
    all_options.all_matches = true;
    auto built_all = AclClassifier::build(rules, all_options);
    EXPECT_TRUE(built.ok()) << built.status();
    EXPECT_TRUE(built_all.ok()) << built_all.status();
    if (!built.ok() || !built_all.ok()) {
        return 1;
    }
    const AclClassifier& c = **built;
    const AclClassifier& c_all = **built_all;
    std::vector<FiveTuple> tuples;
    for (size_t i = 0; i < packets; ++i) {
        tuples.push_back(g.tuple(rules));
    }
    std::vector<Verdict> batch(tuples.size());
    c.lookup_batch(tuples, batch);
    int bad = 0;
    std::vector<uint32_t> all(n_rules + 1);
    for (size_t i = 0; i < tuples.size(); ++i) {
        const FiveTuple& t = tuples[i];
        const Verdict want = linear_lookup(rules, t);
        const Verdict got = c.lookup(t);
        const Verdict got_in_all = c_all.lookup(t);
        const std::vector<uint32_t> want_all = linear_match_all(rules, t);
        const size_t n_all = c_all.match_all(t, all);
        const std::vector<uint32_t> got_all(all.begin(), all.begin() + std::min(n_all, all.size()));
        const bool same = got.rule == want.rule && got.action == want.action &&
                          batch[i].rule == want.rule && batch[i].action == want.action &&
                          got_in_all.rule == want.rule && n_all == want_all.size() &&
                          got_all == want_all;
        if (!same) {
            ++bad;
            ADD_FAILURE() << "seed " << seed << ", " << n_rules << " rules, leaf_rules "
                          << options.leaf_rules << ", tuple " << describe(t) << ": want rule "
                          << want.rule << " got " << got.rule << " (batch " << batch[i].rule
                          << "), match_all want " << want_all.size() << " got " << n_all;
        }
    }
    return bad;
}

TEST(AclPropertyTest, SmallSetsEqualLinearScan) {
    int bad = 0;
    for (uint64_t seed = 1; seed <= 3000 && bad < 5; ++seed) {
        bad += check_set(seed, seed % 97 + (seed % 5 == 0 ? 200 : 0), 200);
    }
    EXPECT_EQ(bad, 0);
}

// A memory budget the first build overshoots: the coarser retries answer exactly too.
TEST(AclPropertyTest, CoarseRetriesEqualLinearScan) {
    int bad = 0;
    for (uint64_t seed = 500; seed < 520; ++seed) {
        Gen g(seed);
        std::vector<AclRule> rules;
        for (int i = 0; i < 3000; ++i) {
            rules.push_back(g.rule());
        }
        AclBuildOptions options;
        options.leaf_rules = 2;
        const auto roomy = AclClassifier::build(rules, options);
        ASSERT_TRUE(roomy.ok()) << roomy.status();
        const AclStats& s = (*roomy)->stats();
        options.max_memory_bytes = s.memory_bytes - s.index_bytes / 2;
        const auto tight = AclClassifier::build(rules, options);
        ASSERT_TRUE(tight.ok()) << tight.status();
        EXPECT_GT((*tight)->stats().build_attempts, 1u);
        EXPECT_LE((*tight)->stats().memory_bytes, options.max_memory_bytes);
        for (int i = 0; i < 2000; ++i) {
            const FiveTuple t = g.tuple(rules);
            bad += (*tight)->lookup(t).rule != linear_lookup(rules, t).rule;
        }
    }
    EXPECT_EQ(bad, 0);
}

// append_range_prefixes: an address is in [lo, hi] exactly when one of the prefixes matches
// it (as the family the classifier would match it as), near the range's ends and anywhere.
TEST(AclPropertyTest, RangePrefixesCoverExactlyTheRange) {
    int bad = 0;
    for (uint64_t seed = 1; seed <= 300; ++seed) {
        Gen g(seed);
        const bool v4 = seed % 3 != 0;
        decode::Address lo = g.address(v4), hi = g.address(v4);
        if (hi < lo) {
            std::swap(lo, hi);
        }
        std::vector<FamilyPrefix> prefixes;
        append_range_prefixes(lo, hi, &prefixes);
        std::vector<AclRule> rules;
        for (const FamilyPrefix& p : prefixes) {
            AclRule r;
            r.family = p.family;
            r.src = p.prefix;
            rules.push_back(r);
        }
        for (int i = 0; i < 400; ++i) {
            decode::Address a = i % 4 == 0 ? lo : i % 4 == 1 ? hi : g.address(v4);
            a.b[15] = static_cast<uint8_t>(a.b[15] + (i % 3) - 1);  // just inside / outside
            FiveTuple t;
            t.src = a;
            t.ip_version = a.is_v4() ? 4 : 6;
            const bool in = !(a < lo) && !(hi < a);
            bad += in != linear_lookup(rules, t).matched();
        }
    }
    EXPECT_EQ(bad, 0);
}

TEST(AclPropertyTest, LargeSetsEqualLinearScan) {
    int bad = 0;
    for (uint64_t seed = 100001; seed <= 100012 && bad < 5; ++seed) {
        bad += check_set(seed, 1000 + (seed % 4) * 1500, 3000);
    }
    EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace picket::sensor::filter
