// Builds the per-family decision trees (acl_tree.h) from the rules: a HiCuts /
// HyperCuts-style recursive cutter with EffiCuts-style separation; README.md has the why.
// Runs on the control thread; the lookups are in acl_lookup.cc.
#include "sensor/filter/filter.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <numeric>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "common/strings.h"
#include "sensor/filter/acl_tree.h"

namespace picket::sensor::filter {

using internal::Forest;
using internal::kDims;
using internal::kDport;
using internal::kDst;
using internal::kEmptyLeaf;
using internal::Key;
using internal::kLeafBit;
using internal::kProto;
using internal::kSport;
using internal::kSrc;
using internal::LeafRule;
using internal::Tree;
using internal::u128;

namespace {

constexpr size_t kMaxRules = (size_t{1} << 24) - 1;  // a leaf's count field holds any leaf

// Tuning. internal::kMaxCutBits bounds one node's fan-out (2^16 slots = 512 KiB). A cut's
// cost is the rule copies it creates plus its slots (a slot is 8 bytes, a copy 32-80: 4 slots
// count as one copy); space_factor bounds one cut's cost relative to its node's rules, and
// copy_budget the product of those ratios along any path, which bounds a whole tree to
// copy_budget copies of each of its rules: memory stays linear in the rules whatever they
// look like.
using internal::kMaxCutBits;

// Build attempts, in order. The first favours shallow trees. If its index comes out larger
// than kCompactAboveBytes (then it lives in DRAM rather than in the caches, and each line it
// touches costs more than a level saved), the second trades depth for fewer copies. The
// others only serve when AclBuildOptions::max_memory_bytes is exceeded: coarser leaves and
// fewer copies, then ResourceExhausted.
struct Attempt {
    double copy_budget;
    uint32_t leaf_scale;  // times AclBuildOptions::leaf_rules
    double space_factor;
};
constexpr Attempt kAttempts[] = {
    {4.0, 1, 4.0}, {2.0, 1, 4.0}, {1.5, 4, 2.5}, {1.25, 16, 1.75}, {1.1, 64, 1.4},
};
constexpr size_t kCompactAboveBytes = size_t{8} << 20;
constexpr size_t kSmallTreeRules = 8192;
constexpr double kSmallTreeCopyBudget = 8.0;
constexpr unsigned kMaxDepth = 24;

template <class A>
constexpr unsigned kAddrBits = sizeof(A) * 8;

// Separation (EffiCuts): rules go to one of kGroups trees by the first dimension in which
// they are narrow (group_of()), so that cutting a tree on its own dimension copies few rules.
// "Narrow": a prefix of at least kSpecificLen bits, a port range of fewer than kNarrowPorts
// ports; then, for rules wide in all four, a prefix of at least kShortLen bits. Groups of
// fewer than kMinTreeRules rules join a neighbour: every tree costs every lookup a descent.
template <class A>
constexpr unsigned kSpecificLen = sizeof(A) == 4 ? 16 : 32;
constexpr unsigned kNarrowPorts = 1024;
constexpr unsigned kShortLen = 4;
constexpr int kGroups = internal::kMaxTrees;
constexpr size_t kMinTreeRules = 64;

template <class A>
A ones(unsigned w) {
    return w >= kAddrBits<A> ? ~A(0) : (A(1) << w) - 1;
}
// The top `len` bits of a w-bit field.
template <class A>
A top_mask(unsigned w, unsigned len) {
    return len == 0 ? A(0) : ones<A>(w) & ~ones<A>(w - len);
}
template <class A>
unsigned highest_bit(A x) {  // x != 0
    if constexpr (sizeof(A) == 16) {
        const uint64_t hi = static_cast<uint64_t>(x >> 64);
        return hi != 0 ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll(static_cast<uint64_t>(x));
    } else {
        return 31 - __builtin_clz(static_cast<uint32_t>(x));
    }
}

// A rule as the builder sees it. Ternary dimensions (src, dst, proto): value + prefix length;
// range dimensions (sport, dport): lo/hi.
template <class A>
struct BRule {
    A val[kDims] = {};
    uint8_t len[kDims] = {};
    uint16_t lo[kDims] = {};
    uint16_t hi[kDims] = {};
    uint32_t rank = 0;
    AclAction action = AclAction::kPass;
};

template <class A>
constexpr unsigned width(int d) {
    return d == kSrc || d == kDst ? kAddrBits<A> : d == kProto ? 8 : 16;
}
constexpr bool is_range(int d) {
    return d == kSport || d == kDport;
}

struct Params {
    bool all_matches = false;
    uint32_t leaf_rules = 8;
    double space_factor = 4.0;
    double copy_budget = 4.0;
    size_t budget_bytes = 0;
};

struct BuildCounters {
    size_t nodes = 0, leaves = 0, leaf_entries = 0, max_leaf = 0, max_depth = 0, covered = 0;
};

// Whether every packet rule b matches, rule a matches too.
template <class A>
bool covers(const BRule<A>& a, const BRule<A>& b) {
    for (int d : {kSrc, kDst, kProto}) {
        const unsigned w = width<A>(d);
        if (a.len[d] > b.len[d] || ((a.val[d] ^ b.val[d]) & top_mask<A>(w, a.len[d])) != 0) {
            return false;
        }
    }
    for (int d : {kSport, kDport}) {
        if (a.lo[d] > b.lo[d] || a.hi[d] < b.hi[d]) {
            return false;
        }
    }
    return true;
}

// What a node knows about the region it covers. Ternary dims: bits before pos[d] are fixed
// by the path or carry no information for this node's rules (the cutter skips them). Range
// dims: the region is the aligned block base[d] + [0, 2^(16 - pos[d])).
struct Region {
    uint8_t pos[kDims] = {};
    uint32_t base[kDims] = {};
};

// One candidate cut of one dimension: bits [start, start + bits) from the top of the field.
struct Slice {
    int dim = 0;
    unsigned start = 0;
    unsigned bits = 0;
};

template <class A>
class Builder {
public:
    Builder(const std::vector<BRule<A>>& rules, const Params& p, Forest<A>& out)
        : rules_(rules), p_(p), out_(out) {}

    uint64_t build(const std::vector<uint32_t>& ids, double copy_budget, uint32_t* depth,
                   uint32_t* root_min_at) {
        tree_depth_ = 0;
        root_min_at_ = 0;
        const uint64_t root = node(ids, Region{}, 0, copy_budget);
        *depth = tree_depth_;
        *root_min_at = root_min_at_;
        return root;
    }
    bool over_budget() const { return over_budget_; }
    const BuildCounters& counters() const { return counters_; }

private:
    // Children of rule r for slice s in region g: [*a, *b].
    void child_range(const BRule<A>& r, const Slice& s, const Region& g, uint32_t* a,
                     uint32_t* b) const {
        const unsigned k = s.bits;
        if (is_range(s.dim)) {
            const unsigned shift = 16 - g.pos[s.dim] - k;
            const uint32_t size = 1u << (16 - g.pos[s.dim]);
            const uint32_t lo = std::max<uint32_t>(r.lo[s.dim], g.base[s.dim]);
            const uint32_t hi = std::min<uint32_t>(r.hi[s.dim], g.base[s.dim] + size - 1);
            *a = (lo - g.base[s.dim]) >> shift;
            *b = (hi - g.base[s.dim]) >> shift;
            return;
        }
        const unsigned w = width<A>(s.dim);
        const unsigned len = r.len[s.dim];
        const unsigned fixed = len <= s.start ? 0 : std::min(len - s.start, k);
        if (fixed == 0) {
            *a = 0;
            *b = (1u << k) - 1;
            return;
        }
        const uint32_t v =
            static_cast<uint32_t>(r.val[s.dim] >> (w - s.start - fixed)) & ((1u << fixed) - 1);
        *a = v << (k - fixed);
        *b = *a + (1u << (k - fixed)) - 1;
    }

    // First bit at or after g.pos[d] on which the rules disagree (some have it 0, others 1,
    // among those whose prefix covers it); w when there is none, so cutting d is useless.
    unsigned first_informative(const std::vector<uint32_t>& ids, int d, const Region& g) const {
        const unsigned w = width<A>(d);
        A and_acc = ones<A>(w), or_acc = 0;
        for (uint32_t id : ids) {
            const BRule<A>& r = rules_[id];
            const A m = top_mask<A>(w, r.len[d]);
            or_acc |= r.val[d] & m;
            and_acc &= r.val[d] | ~m;
        }
        const A informative = or_acc & ~and_acc & ones<A>(w - g.pos[d]);
        return informative == 0 ? w : w - 1 - highest_bit(informative);
    }

    // Children sizes of a cut: the largest, and the rule copies it creates. Children that
    // hold only the rules spanning every child are identical and share one subtree (node()
    // merges them), so they count once.
    void evaluate(const std::vector<uint32_t>& ids, const Slice& s, const Region& g,
                  uint32_t* max_child, uint64_t* sum) {
        const uint32_t n = 1u << s.bits;
        diff_.assign(n + 1, 0);
        uint64_t total = 0;
        int64_t spanning = 0;
        for (uint32_t id : ids) {
            uint32_t a, b;
            child_range(rules_[id], s, g, &a, &b);
            ++diff_[a];
            --diff_[b + 1];
            total += b - a + 1;
            spanning += a == 0 && b == n - 1;
        }
        int64_t run = 0;
        int64_t best = 0;
        uint64_t only_spanning = 0;
        for (uint32_t c = 0; c < n; ++c) {
            run += diff_[c];
            best = std::max(best, run);
            only_spanning += run == spanning;
        }
        if (spanning > 0 && only_spanning > 1) {
            total -= (only_spanning - 1) * static_cast<uint64_t>(spanning);
        }
        *max_child = static_cast<uint32_t>(best);
        *sum = total;
    }

    // The cut with the smallest largest child among those whose cost fits; *cost in copies.
    bool choose(const std::vector<uint32_t>& ids, const Region& g, double budget, Slice* out,
                double* cost) {
        const uint64_t n = ids.size();
        const double allowed = std::min(p_.space_factor, budget) * static_cast<double>(n);
        bool found = false;
        uint32_t best_max = static_cast<uint32_t>(n);
        double best_cost = 0;
        unsigned best_bits = 0;
        for (int d = 0; d < kDims; ++d) {
            const unsigned w = width<A>(d);
            const unsigned start = is_range(d) ? g.pos[d] : first_informative(ids, d, g);
            if (start >= w) {
                continue;
            }
            const unsigned max_bits = std::min<unsigned>(kMaxCutBits, w - start);
            for (unsigned k = 1; k <= max_bits; ++k) {
                const Slice s{d, start, k};
                uint32_t mc;
                uint64_t sum;
                evaluate(ids, s, g, &mc, &sum);
                const double c = static_cast<double>(sum) + static_cast<double>(1u << k) / 4;
                if (c > allowed) {
                    break;  // more bits only cost more
                }
                if (mc >= n) {
                    continue;
                }
                if (!found || mc < best_max || (mc == best_max && c < best_cost) ||
                    (mc == best_max && c == best_cost && k < best_bits)) {
                    found = true;
                    best_max = mc;
                    best_cost = c;
                    best_bits = k;
                    *out = s;
                    *cost = c;
                }
            }
        }
        return found;
    }

    // Rules a better rule of the leaf covers can never be lookup()'s answer: unless every
    // match is wanted, they are left out (a wide rule ahead of its own exceptions would
    // otherwise make every scan that misses it read them all). Compared with the first
    // kCoverWindow kept rules only, to stay linear.
    static constexpr size_t kCoverWindow = 256;

    uint64_t leaf(const std::vector<uint32_t>& all) {
        if (all.empty()) {
            return kEmptyLeaf;
        }
        const std::vector<uint32_t>* list = &all;
        if (!p_.all_matches) {
            kept_.clear();
            for (uint32_t id : all) {
                const size_t window = std::min(kept_.size(), kCoverWindow);
                bool covered = false;
                for (size_t j = 0; j < window && !covered; ++j) {
                    covered = covers(rules_[kept_[j]], rules_[id]);
                }
                if (covered) {
                    ++counters_.covered;
                } else {
                    kept_.push_back(id);
                }
            }
            list = &kept_;
        }
        const std::vector<uint32_t>& ids = *list;
        // Identical leaves anywhere in the family share storage (the wide rules of a
        // subtree make the same small leaf under many parents).
        uint64_t h = 1469598103934665603ull;
        for (uint32_t id : ids) {
            h = (h ^ id) * 1099511628211ull;
        }
        auto found = leaf_index_.find(h);
        if (found != leaf_index_.end() && found->second.first == ids) {
            return found->second.second;
        }
        entries_.clear();
        for (uint32_t id : ids) {
            const BRule<A>& r = rules_[id];
            LeafRule<A> l{};
            l.smask = top_mask<A>(kAddrBits<A>, r.len[kSrc]);
            l.src = r.val[kSrc] & l.smask;
            l.dmask = top_mask<A>(kAddrBits<A>, r.len[kDst]);
            l.dst = r.val[kDst] & l.dmask;
            l.sp_lo = r.lo[kSport];
            l.sp_span = static_cast<uint16_t>(r.hi[kSport] - r.lo[kSport]);
            l.dp_lo = r.lo[kDport];
            l.dp_span = static_cast<uint16_t>(r.hi[kDport] - r.lo[kDport]);
            l.pmask = r.len[kProto] == 0 ? 0 : 0xff;
            l.proto = static_cast<uint8_t>(r.val[kProto]) & l.pmask;
            l.action = r.action;
            l.rank = r.rank;
            entries_.push_back(l);
        }
        ++counters_.leaves;
        counters_.leaf_entries += ids.size();
        counters_.max_leaf = std::max(counters_.max_leaf, ids.size());
        const uint64_t ref = out_.leaves.append(entries_);
        if (found == leaf_index_.end()) {
            leaf_index_.emplace(h, std::make_pair(ids, ref));
        }
        check_budget();
        return ref;
    }

    void check_budget() {
        if (out_.bytes() > p_.budget_bytes) {
            over_budget_ = true;
        }
    }

    uint64_t node(const std::vector<uint32_t>& ids, const Region& g, unsigned depth,
                  double budget) {
        counters_.max_depth = std::max<size_t>(counters_.max_depth, depth);
        tree_depth_ = std::max(tree_depth_, depth);
        Slice s;
        double cost = 0;
        if (over_budget_ || ids.size() <= p_.leaf_rules || depth >= kMaxDepth ||
            !choose(ids, g, budget, &s, &cost)) {
            return leaf(ids);
        }
        const double child_budget = budget * static_cast<double>(ids.size()) / cost;
        ++counters_.nodes;

        // Children's rule lists, flat: offsets by counting, then fill in rank order.
        const uint32_t n = 1u << s.bits;
        std::vector<uint32_t> offsets(n + 1, 0);
        std::vector<std::pair<uint32_t, uint32_t>> ranges(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) {
            child_range(rules_[ids[i]], s, g, &ranges[i].first, &ranges[i].second);
            for (uint32_t c = ranges[i].first; c <= ranges[i].second; ++c) {
                ++offsets[c + 1];
            }
        }
        std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
        std::vector<uint32_t> flat(offsets[n]);
        std::vector<uint32_t> fill(offsets.begin(), offsets.end() - 1);
        for (size_t i = 0; i < ids.size(); ++i) {
            for (uint32_t c = ranges[i].first; c <= ranges[i].second; ++c) {
                flat[fill[c]++] = ids[i];
            }
        }
        ranges.clear();
        ranges.shrink_to_fit();
        fill.clear();
        fill.shrink_to_fit();

        const uint32_t base = static_cast<uint32_t>(out_.slots.size());
        out_.slots.resize(base + n, kEmptyLeaf);
        if (depth == 0) {
            root_min_at_ = static_cast<uint32_t>(out_.root_min.size()) - base;
            out_.root_min.resize(out_.root_min.size() + n, internal::kNoRank);
        }
        check_budget();

        Region child = g;
        if (is_range(s.dim)) {
            child.pos[s.dim] = static_cast<uint8_t>(g.pos[s.dim] + s.bits);
        } else {
            child.pos[s.dim] = static_cast<uint8_t>(s.start + s.bits);
        }
        const unsigned shift =
            is_range(s.dim) ? 16 - g.pos[s.dim] - s.bits : width<A>(s.dim) - s.start - s.bits;
        const uint64_t self =
            internal::make_node(base, static_cast<unsigned>(s.dim), shift, s.bits);

        // Siblings with the same rules share one subtree (wide rules make runs of them). Sound
        // for a port cut too, although the siblings' port blocks differ: each shared rule
        // then reaches into both blocks, so it holds the port at the block's edge facing the
        // other one, and every deeper cut of this port has a child with all the rules
        // (mc == n), which choose() never takes. The subtree never depends on the block.
        std::unordered_map<uint64_t, uint32_t> seen;
        std::vector<uint32_t> child_ids;
        for (uint32_t c = 0; c < n; ++c) {
            const uint32_t* begin = flat.data() + offsets[c];
            const uint32_t* end = flat.data() + offsets[c + 1];
            if (begin == end) {
                continue;
            }
            uint64_t h = 1469598103934665603ull;
            for (const uint32_t* p = begin; p != end; ++p) {
                h = (h ^ *p) * 1099511628211ull;
            }
            auto [it, inserted] = seen.emplace(h, c);
            if (!inserted) {
                const uint32_t o = it->second;
                if (offsets[o + 1] - offsets[o] == static_cast<uint32_t>(end - begin) &&
                    std::equal(begin, end, flat.data() + offsets[o])) {
                    out_.slots[base + c] = out_.slots[base + o];
                    if (depth == 0) {
                        out_.root_min[base + c + root_min_at_] =
                            out_.root_min[base + o + root_min_at_];
                    }
                    continue;
                }
            }
            if (is_range(s.dim)) {
                child.base[s.dim] = g.base[s.dim] + (c << shift);
            }
            child_ids.assign(begin, end);
            const uint64_t ref = node(child_ids, child, depth + 1, child_budget);
            out_.slots[base + c] = ref;
            if (depth == 0) {
                // The child's rules are in rank order; the first bounds what it can answer.
                out_.root_min[base + c + root_min_at_] = rules_[*begin].rank;
            }
        }
        return self;
    }

    const std::vector<BRule<A>>& rules_;
    Params p_;
    Forest<A>& out_;
    BuildCounters counters_;
    bool over_budget_ = false;
    std::vector<int64_t> diff_;
    std::vector<uint32_t> kept_;
    std::vector<LeafRule<A>> entries_;
    unsigned tree_depth_ = 0;
    uint32_t root_min_at_ = 0;  // the tree being built's Tree::root_min_at
    std::unordered_map<uint64_t, std::pair<std::vector<uint32_t>, uint64_t>> leaf_index_;
};

template <class A>
A prefix_value(const AclPrefix& p) {
    if constexpr (sizeof(A) == 4) {
        return internal::load_be32(p.addr.b + 12);
    } else {
        return internal::addr128(p.addr);
    }
}

// The tree a rule goes to: the first of dst, src, dport, sport in which it is narrow; then
// short destination prefixes (/8), short source prefixes; last the rules only the protocol
// separates. Within a tree no rule is wider than the tree's own dimension allows, so cutting
// that dimension copies few rules.
template <class A>
int group_of(const BRule<A>& r) {
    if (r.len[kDst] >= kSpecificLen<A>) {
        return 0;
    }
    if (r.len[kSrc] >= kSpecificLen<A>) {
        return 1;
    }
    if (static_cast<unsigned>(r.hi[kDport] - r.lo[kDport]) < kNarrowPorts) {
        return 2;
    }
    if (static_cast<unsigned>(r.hi[kSport] - r.lo[kSport]) < kNarrowPorts) {
        return 3;
    }
    if (r.len[kDst] >= kShortLen) {
        return 4;
    }
    if (r.len[kSrc] >= kShortLen) {
        return 5;
    }
    return 6;
}

// Builds one family's forest from the rules of that family (and "any any" rules).
template <class A>
bool build_forest(const std::vector<AclRule>& rules, const std::vector<uint32_t>& rank_of,
                  AclFamily family, const Params& p, Forest<A>& out, AclStats& stats) {
    std::vector<BRule<A>> brules;
    for (size_t i = 0; i < rules.size(); ++i) {
        const AclRule& r = rules[i];
        if (r.family != family && r.family != AclFamily::kAny) {
            continue;
        }
        BRule<A> b;
        b.val[kSrc] = prefix_value<A>(r.src);
        b.len[kSrc] = r.src.len;
        b.val[kDst] = prefix_value<A>(r.dst);
        b.len[kDst] = r.dst.len;
        b.lo[kSport] = r.sport_lo;
        b.hi[kSport] = r.sport_hi;
        b.lo[kDport] = r.dport_lo;
        b.hi[kDport] = r.dport_hi;
        b.val[kProto] = r.proto;
        b.len[kProto] = r.any_proto ? 0 : 8;
        b.rank = rank_of[i];
        b.action = r.action;
        brules.push_back(b);
    }
    // Rank order inside every list, so leaves come out sorted.
    std::sort(brules.begin(), brules.end(),
              [](const BRule<A>& a, const BRule<A>& b) { return a.rank < b.rank; });

    std::vector<uint32_t> groups[kGroups];
    for (uint32_t i = 0; i < brules.size(); ++i) {
        groups[group_of(brules[i])].push_back(i);
    }
    // A tree costs every lookup a descent: a small group joins the next one (the last joins
    // the one before), where the cutter separates its few rules well enough.
    for (int g = 1; g < kGroups; ++g) {
        if (groups[g].empty() || groups[g].size() >= kMinTreeRules) {
            continue;
        }
        int into = g + 1;
        while (into < kGroups && groups[into].empty()) {
            ++into;
        }
        if (into == kGroups) {
            into = g - 1;
            while (into > 0 && groups[into].empty()) {
                --into;
            }
            if (into == 0) {
                continue;  // the only secondary group
            }
        }
        std::vector<uint32_t> merged;
        std::merge(groups[g].begin(), groups[g].end(), groups[into].begin(), groups[into].end(),
                   std::back_inserter(merged));
        groups[into] = std::move(merged);
        groups[g].clear();
    }
    Builder<A> builder(brules, p, out);
    for (const auto& g : groups) {
        if (g.empty()) {
            continue;
        }
        Tree t;
        t.min_rank = brules[g.front()].rank;
        // A small tree stays small even with many copies: give it room to cut its wide
        // rules apart, unless memory is short.
        const double copy_budget = g.size() <= kSmallTreeRules && p.copy_budget >= 2.0
                                       ? std::max(p.copy_budget, kSmallTreeCopyBudget)
                                       : p.copy_budget;
        t.root = builder.build(g, copy_budget, &t.depth, &t.root_min_at);
        out.trees.push_back(t);
    }
    std::sort(out.trees.begin(), out.trees.end(),
              [](const Tree& a, const Tree& b) { return a.min_rank < b.min_rank; });
    // The first tree's root_min is never read (no lookup has an answer when it gets there).
    if (!out.trees.empty() && (out.trees[0].root & kLeafBit) == 0) {
        const Tree& first = out.trees[0];
        const uint32_t begin = static_cast<uint32_t>(first.root) + first.root_min_at;
        const uint32_t n = static_cast<uint32_t>((first.root >> 42) & 0xffff) + 1;
        out.root_min.erase(out.root_min.begin() + begin, out.root_min.begin() + begin + n);
        for (Tree& t : out.trees) {
            if ((t.root & kLeafBit) == 0 && static_cast<uint32_t>(t.root) + t.root_min_at > begin) {
                t.root_min_at -= n;
            }
        }
    }
    const BuildCounters& c = builder.counters();
    stats.trees += out.trees.size();
    stats.nodes += c.nodes;
    stats.leaves += c.leaves;
    stats.leaf_entries += c.leaf_entries;
    stats.covered += c.covered;
    stats.max_leaf = std::max(stats.max_leaf, c.max_leaf);
    stats.max_depth = std::max(stats.max_depth, c.max_depth);
    out.slots.shrink_to_fit();
    out.root_min.shrink_to_fit();
    out.leaves.shrink();
    return !builder.over_budget();
}

std::string rule_where(size_t i, const AclRule& r) {
    return strings::cat("rule ", i, " (id ", r.id, ")");
}

absl::Status validate(std::vector<AclRule>& rules) {
    if (rules.size() > kMaxRules) {
        return absl::InvalidArgumentError(
            strings::cat("too many ACL rules: ", rules.size(), " (the limit is ", kMaxRules, ")"));
    }
    for (size_t i = 0; i < rules.size(); ++i) {
        AclRule& r = rules[i];
        const unsigned max_len = r.family == AclFamily::kIpv6 ? 128 : 32;
        if (r.family == AclFamily::kAny && (r.src.len != 0 || r.dst.len != 0)) {
            return absl::InvalidArgumentError(
                strings::cat(rule_where(i, r), ": family any needs /0 prefixes"));
        }
        if (r.src.len > max_len || r.dst.len > max_len) {
            return absl::InvalidArgumentError(
                strings::cat(rule_where(i, r), ": prefix length over ", max_len));
        }
        if (r.sport_lo > r.sport_hi || r.dport_lo > r.dport_hi) {
            return absl::InvalidArgumentError(
                strings::cat(rule_where(i, r), ": port range with lo > hi"));
        }
        if (r.any_proto) {
            r.proto = 0;
        }
    }
    return absl::OkStatus();
}

}  // namespace

AclClassifier::~AclClassifier() = default;

absl::StatusOr<std::shared_ptr<const AclClassifier>> AclClassifier::build(
    std::vector<AclRule> rules, const AclBuildOptions& options) {
    if (absl::Status st = validate(rules); !st.ok()) {
        return st;
    }
    // rank = position in (priority, index) order; a stable sort keeps ties in rule order.
    std::vector<uint32_t> order(rules.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return rules[a].priority < rules[b].priority; });
    std::vector<uint32_t> rank_of(rules.size());
    for (uint32_t r = 0; r < order.size(); ++r) {
        rank_of[order[r]] = r;
    }

    const size_t fixed_bytes =
        rules.size() * (sizeof(AclRule) + sizeof(uint32_t)) + sizeof(AclClassifier) + sizeof(Impl);
    const size_t budget =
        options.max_memory_bytes > fixed_bytes ? options.max_memory_bytes - fixed_bytes : 0;
    std::shared_ptr<AclClassifier> roomy;  // the first attempt, if it came out large
    for (uint32_t attempt = 0; attempt < std::size(kAttempts); ++attempt) {
        Params p;
        p.all_matches = options.all_matches;
        p.leaf_rules = std::max<uint32_t>(1, options.leaf_rules) * kAttempts[attempt].leaf_scale;
        p.copy_budget = kAttempts[attempt].copy_budget;
        p.space_factor = kAttempts[attempt].space_factor;
        p.budget_bytes = budget;
        auto c = std::shared_ptr<AclClassifier>(new AclClassifier());
        c->impl_ = std::make_unique<Impl>();
        c->stats_.rules = rules.size();
        c->stats_.build_attempts = attempt + 1;
        const bool ok =
            build_forest<uint32_t>(rules, rank_of, AclFamily::kIpv4, p, c->impl_->v4, c->stats_) &&
            build_forest<u128>(rules, rank_of, AclFamily::kIpv6, p, c->impl_->v6, c->stats_);
        const size_t bytes = c->impl_->v4.bytes() + c->impl_->v6.bytes();
        if (!ok || bytes > budget) {
            continue;
        }
        c->impl_->rank_to_index = order;
        c->impl_->identity = std::is_sorted(order.begin(), order.end());
        c->impl_->all_matches = options.all_matches;
        c->stats_.index_bytes = bytes;
        c->stats_.memory_bytes = bytes + fixed_bytes;
        if (attempt == 0 && bytes > kCompactAboveBytes) {
            roomy = std::move(c);
            continue;
        }
        c->rules_ = std::move(rules);
        return std::shared_ptr<const AclClassifier>(std::move(c));
    }
    if (roomy != nullptr) {
        roomy->rules_ = std::move(rules);
        return std::shared_ptr<const AclClassifier>(std::move(roomy));
    }
    return absl::ResourceExhaustedError(strings::cat("ACL classifier over its memory budget of ",
                                                     options.max_memory_bytes, " bytes with ",
                                                     rules.size(), " rules"));
}

}  // namespace picket::sensor::filter
