// Internal to sensor/filter: the decision trees behind AclClassifier (README.md explains the
// design). One Forest per address family; A is the family's address as an integer (uint32_t
// for IPv4, unsigned __int128 for IPv6). Immutable once built; lookups only read.
#pragma once

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <cstdint>
#include <cstring>
#include <vector>

#include "sensor/filter/filter.h"

namespace picket::sensor::filter::internal {

using u128 = unsigned __int128;

// Dimensions. src, dst and proto are ternary (a prefix: some leading bits fixed, the rest
// free); the two ports are ranges.
enum : int { kSrc = 0, kDst = 1, kSport = 2, kDport = 3, kProto = 4, kDims = 5 };

// Every field widened to A, so that one shift and mask extracts a slice of any dimension
// without a branch on which dimension a node cuts. Eight entries (the last three 0) so that
// child_slot() can decode a leaf reference too without reading out of bounds: the batched
// descent computes it for every lane and discards it for leaves, rather than branch.
template <class A>
struct Key {
    A f[8];
};

// A rule as a leaf holds it: masks instead of prefix lengths, port ranges as (lo, hi - lo) so
// that one unsigned comparison tests both ends. 32 bytes for IPv4, 80 for IPv6.
template <class A>
struct LeafRule {
    A src, smask, dst, dmask;
    uint16_t sp_lo, sp_span, dp_lo, dp_span;
    uint8_t proto, pmask;
    AclAction action;
    uint8_t pad;
    uint32_t rank;  // position in (priority, index) order: lower wins
};

// A reference to a node, 64 bits, stored in the parent's child slot so that descending one
// level costs one load and a few ALU operations.
//   leaf:     bit 63 set; bits 0-31 where the leaf starts in its LeafStore (an entry for
//             IPv6, a Block4 for IPv4); bits 32-55 its rule count (0: empty leaf).
//   internal: bits 0-31 first child slot; bits 32-34 the dimension cut, 35-41 the shift and
//             42-57 the mask of the slice: child = (field >> shift) & mask.
inline constexpr uint64_t kLeafBit = uint64_t{1} << 63;
inline constexpr uint64_t kEmptyLeaf = kLeafBit;
inline constexpr uint32_t kMaxLeafCount = (1u << 24) - 1;
inline constexpr unsigned kMaxCutBits = 16;
// The most trees a Forest has: one per separation group of the builder.
inline constexpr int kMaxTrees = 7;

inline uint64_t make_leaf(uint32_t offset, uint32_t count) {
    return kLeafBit | (uint64_t{count} << 32) | offset;
}
inline uint64_t make_node(uint32_t base, unsigned dim, unsigned shift, unsigned bits) {
    return uint64_t{base} | (uint64_t{dim} << 32) | (uint64_t{shift} << 35) |
           (uint64_t{(1u << bits) - 1} << 42);
}

template <class A>
inline uint32_t child_slot(const Key<A>& k, uint64_t ref) {
    const unsigned dim = (ref >> 32) & 7, shift = (ref >> 35) & (sizeof(A) * 8 - 1);
    const uint32_t mask = (ref >> 42) & 0xffff;
    return static_cast<uint32_t>(ref) + (static_cast<uint32_t>(k.f[dim] >> shift) & mask);
}

template <class A>
inline bool leaf_match(const LeafRule<A>& r, const Key<A>& k) {
    const A addr = ((k.f[kSrc] ^ r.src) & r.smask) | ((k.f[kDst] ^ r.dst) & r.dmask);
    const uint32_t proto = (static_cast<uint32_t>(k.f[kProto]) ^ r.proto) & r.pmask;
    const uint16_t sp = static_cast<uint16_t>(static_cast<uint32_t>(k.f[kSport]) - r.sp_lo);
    const uint16_t dp = static_cast<uint16_t>(static_cast<uint32_t>(k.f[kDport]) - r.dp_lo);
    return (addr == 0) & (proto == 0) & (sp <= r.sp_span) & (dp <= r.dp_span);
}

struct Tree {
    uint64_t root = kEmptyLeaf;
    uint32_t min_rank = 0;     // best rule in the tree: skip the tree when a better one matched
    uint32_t depth = 0;        // internal nodes on the longest path
    uint32_t root_min_at = 0;  // root slot + root_min_at (mod 2^32): its Forest::root_min
};

inline constexpr uint32_t kNoRank = 0xffffffffu;

// Leaf storage, IPv6: one LeafRule per rule, in rank order. Entry 0 is a sentinel that no
// leaf uses, so that the empty leaf (offset 0) has a head rank (kNoRank) like any other.
// head_ holds every entry's rank apart from the entries: lookup_batch() reads it first and
// touches a rule's line only when the rule could beat the best so far (see the IPv4 store).
template <class A>
class LeafStore {
public:
    LeafStore() : rules_(1), head_(1, kNoRank) { rules_[0].rank = kNoRank; }

    uint64_t append(const std::vector<LeafRule<A>>& rules) {
        const uint32_t offset = static_cast<uint32_t>(rules_.size());
        rules_.insert(rules_.end(), rules.begin(), rules.end());
        for (const LeafRule<A>& r : rules) {
            head_.push_back(r.rank);
        }
        return make_leaf(offset, static_cast<uint32_t>(rules.size()));
    }
    size_t bytes() const {
        return rules_.size() * sizeof(LeafRule<A>) + head_.size() * sizeof(uint32_t);
    }
    void shrink() {
        rules_.shrink_to_fit();
        head_.shrink_to_fit();
    }
    const void* address(uint64_t leaf) const { return rules_.data() + static_cast<uint32_t>(leaf); }
    // The best rank in the leaf (kNoRank for the empty leaf), without touching the leaf.
    uint32_t head_rank(uint64_t leaf) const { return head_[static_cast<uint32_t>(leaf)]; }

    // Lowers best (a rank) to the leaf's first rule that matches and beats it. kHeads: read
    // the ranks from head_ (lookup_batch(), which skips a block without touching it) or from
    // the rules themselves (lookup(): with head_ it measured 0-7% slower at 100,000 rules,
    // median 3%, paired runs; one load more on its chain of dependent loads).
    template <bool kHeads>
    void scan(uint64_t leaf, const Key<A>& k, uint32_t& best, AclAction& action) const {
        const uint32_t offset = static_cast<uint32_t>(leaf);
        const LeafRule<A>* r = rules_.data() + offset;
        const uint32_t* head = head_.data() + offset;
        const uint32_t n = static_cast<uint32_t>(leaf >> 32) & kMaxLeafCount;
        for (uint32_t j = 0; j < n && (kHeads ? head[j] : r[j].rank) < best; ++j) {
            if (leaf_match(r[j], k)) {
                best = r[j].rank;
                action = r[j].action;
                return;
            }
        }
    }
    // scan() for a lookup with no answer yet (the first tree): every rule could win.
    void scan_first(uint64_t leaf, const Key<A>& k, uint32_t& best, AclAction& action) const {
        const LeafRule<A>* r = rules_.data() + static_cast<uint32_t>(leaf);
        const uint32_t n = static_cast<uint32_t>(leaf >> 32) & kMaxLeafCount;
        for (uint32_t j = 0; j < n; ++j) {
            if (leaf_match(r[j], k)) {
                best = r[j].rank;
                action = r[j].action;
                return;
            }
        }
    }
    // Entry j of a leaf, for match_all.
    uint32_t rank(uint64_t leaf, uint32_t j) const {
        return rules_[static_cast<uint32_t>(leaf) + j].rank;
    }
    bool matches(uint64_t leaf, uint32_t j, const Key<A>& k) const {
        return leaf_match(rules_[static_cast<uint32_t>(leaf) + j], k);
    }

private:
    std::vector<LeafRule<A>> rules_;
    std::vector<uint32_t> head_;
};

// Leaf storage, IPv4: the leaf's rules in blocks of four laid out field by field (a leaf
// starts a new block; the last one is padded), so that SSE2 tests four rules at once with
// no branch. 128 bytes per block, as dense as one 32-byte struct per rule.
struct alignas(64) Block4 {
    uint32_t src[4], smask[4], dst[4], dmask[4];
    uint16_t port_lo[8];    // sport of the 4 rules, then dport
    uint16_t port_span[8];  // hi - lo
    uint8_t proto[4], pmask[4];
    uint32_t rank[4];  // kNoRank in padding
    AclAction action[4];
    uint8_t valid;  // bit j: lane j holds a rule
    uint8_t pad[3];
};
static_assert(sizeof(Block4) == 128);

// Bit j set when lane j of the block matches the key.
inline unsigned block_match(const Block4& b, const Key<uint32_t>& k) {
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    const __m128i ks = _mm_set1_epi32(static_cast<int>(k.f[kSrc]));
    const __m128i kd = _mm_set1_epi32(static_cast<int>(k.f[kDst]));
    const __m128i addr = _mm_or_si128(
        _mm_and_si128(_mm_xor_si128(ks, _mm_load_si128(reinterpret_cast<const __m128i*>(b.src))),
                      _mm_load_si128(reinterpret_cast<const __m128i*>(b.smask))),
        _mm_and_si128(_mm_xor_si128(kd, _mm_load_si128(reinterpret_cast<const __m128i*>(b.dst))),
                      _mm_load_si128(reinterpret_cast<const __m128i*>(b.dmask))));
    __m128i m = _mm_cmpeq_epi32(addr, zero);
    // Ports: (port - lo) <= span as unsigned 16-bit: the saturating difference is 0.
    const __m128i kp = _mm_unpacklo_epi64(_mm_set1_epi16(static_cast<short>(k.f[kSport])),
                                          _mm_set1_epi16(static_cast<short>(k.f[kDport])));
    const __m128i off =
        _mm_sub_epi16(kp, _mm_load_si128(reinterpret_cast<const __m128i*>(b.port_lo)));
    __m128i ports = _mm_cmpeq_epi16(
        _mm_subs_epu16(off, _mm_load_si128(reinterpret_cast<const __m128i*>(b.port_span))), zero);
    ports = _mm_and_si128(ports, _mm_srli_si128(ports, 8));  // lanes 0-3: sport and dport
    m = _mm_and_si128(m, _mm_unpacklo_epi16(ports, ports));
    uint32_t proto, pmask;
    std::memcpy(&proto, b.proto, 4);
    std::memcpy(&pmask, b.pmask, 4);
    const uint32_t kproto = static_cast<uint32_t>(k.f[kProto]) * 0x01010101u;
    __m128i pr =
        _mm_cmpeq_epi8(_mm_cvtsi32_si128(static_cast<int>((kproto ^ proto) & pmask)), zero);
    pr = _mm_unpacklo_epi8(pr, pr);
    m = _mm_and_si128(m, _mm_unpacklo_epi16(pr, pr));
    return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(m))) & b.valid;
#else
    unsigned m = 0;
    for (unsigned j = 0; j < 4; ++j) {
        const bool addr =
            (((k.f[kSrc] ^ b.src[j]) & b.smask[j]) | ((k.f[kDst] ^ b.dst[j]) & b.dmask[j])) == 0;
        const bool sp = static_cast<uint16_t>(k.f[kSport] - b.port_lo[j]) <= b.port_span[j];
        const bool dp = static_cast<uint16_t>(k.f[kDport] - b.port_lo[4 + j]) <= b.port_span[4 + j];
        const bool pr = ((k.f[kProto] ^ b.proto[j]) & b.pmask[j]) == 0;
        m |= static_cast<unsigned>(addr & sp & dp & pr) << j;
    }
    return m & b.valid;
#endif
}

// Block 0 is a sentinel (no rule) that only the empty leaf (offset 0) points at. head_ holds
// each block's best rank (lane 0) apart from the blocks, 4 bytes a block: small enough to
// stay in the caches when the blocks do not (100,000 rules), so a leaf that cannot beat the
// best rule so far is skipped without reading a line of it, and lookup_batch() prefetches
// only the leaves it will scan.
template <>
class LeafStore<uint32_t> {
public:
    LeafStore() { append_block(); }

    // The leaf's offset counts blocks.
    uint64_t append(const std::vector<LeafRule<uint32_t>>& rules) {
        const uint32_t offset = static_cast<uint32_t>(blocks_.size());
        for (size_t i = 0; i < rules.size(); ++i) {
            if (i % 4 == 0) {
                append_block();
                head_.back() = rules[i].rank;
            }
            Block4& b = blocks_.back();
            const LeafRule<uint32_t>& r = rules[i];
            const size_t j = i % 4;
            b.src[j] = r.src;
            b.smask[j] = r.smask;
            b.dst[j] = r.dst;
            b.dmask[j] = r.dmask;
            b.port_lo[j] = r.sp_lo;
            b.port_span[j] = r.sp_span;
            b.port_lo[4 + j] = r.dp_lo;
            b.port_span[4 + j] = r.dp_span;
            b.proto[j] = r.proto;
            b.pmask[j] = r.pmask;
            b.rank[j] = r.rank;
            b.action[j] = r.action;
            b.valid = static_cast<uint8_t>(b.valid | (1u << j));
        }
        return make_leaf(offset, static_cast<uint32_t>(rules.size()));
    }
    size_t bytes() const {
        return blocks_.size() * sizeof(Block4) + head_.size() * sizeof(uint32_t);
    }
    void shrink() {
        blocks_.shrink_to_fit();
        head_.shrink_to_fit();
    }
    const void* address(uint64_t leaf) const {
        return blocks_.data() + static_cast<uint32_t>(leaf);
    }
    uint32_t head_rank(uint64_t leaf) const { return head_[static_cast<uint32_t>(leaf)]; }

    // As LeafStore<A>::scan().
    template <bool kHeads>
    void scan(uint64_t leaf, const Key<uint32_t>& k, uint32_t& best, AclAction& action) const {
        const uint32_t offset = static_cast<uint32_t>(leaf);
        const Block4* b = blocks_.data() + offset;
        const uint32_t* head = head_.data() + offset;
        const uint32_t n = ((static_cast<uint32_t>(leaf >> 32) & kMaxLeafCount) + 3) / 4;
        // Ranks ascend through the leaf: the first block with a match holds its best rule.
        for (uint32_t i = 0; i < n && (kHeads ? head[i] : b[i].rank[0]) < best; ++i) {
            const unsigned m = block_match(b[i], k);
            if (m != 0) {
                const unsigned j = static_cast<unsigned>(__builtin_ctz(m));
                if (b[i].rank[j] < best) {
                    best = b[i].rank[j];
                    action = b[i].action[j];
                }
                return;
            }
        }
    }
    // As LeafStore<A>::scan_first(): the first block with a match holds the leaf's best.
    void scan_first(uint64_t leaf, const Key<uint32_t>& k, uint32_t& best,
                    AclAction& action) const {
        const Block4* b = blocks_.data() + static_cast<uint32_t>(leaf);
        const uint32_t n = ((static_cast<uint32_t>(leaf >> 32) & kMaxLeafCount) + 3) / 4;
        for (uint32_t i = 0; i < n; ++i) {
            const unsigned m = block_match(b[i], k);
            if (m != 0) {
                const unsigned j = static_cast<unsigned>(__builtin_ctz(m));
                best = b[i].rank[j];
                action = b[i].action[j];
                return;
            }
        }
    }
    uint32_t rank(uint64_t leaf, uint32_t j) const {
        return blocks_[static_cast<uint32_t>(leaf) + j / 4].rank[j % 4];
    }
    bool matches(uint64_t leaf, uint32_t j, const Key<uint32_t>& k) const {
        return ((block_match(blocks_[static_cast<uint32_t>(leaf) + j / 4], k) >> (j % 4)) & 1) != 0;
    }

private:
    void append_block() {
        blocks_.emplace_back();
        Block4& b = blocks_.back();
        std::memset(&b, 0, sizeof(b));
        for (uint32_t& r : b.rank) {
            r = kNoRank;
        }
        head_.push_back(kNoRank);
    }

    std::vector<Block4> blocks_;
    std::vector<uint32_t> head_;
};

inline constexpr uint64_t kLookupRootMinSlots = 4096;  // 16 KiB of root_min

template <class A>
struct Forest {
    std::vector<Tree> trees;  // ascending min_rank
    std::vector<uint64_t> slots;
    // For each root slot of each tree, the best rank its subtree can answer (kNoRank: empty):
    // a lookup leaves a later tree at its root when the child there cannot beat the answer
    // so far. Indexed by slot + Tree::root_min_at.
    std::vector<uint32_t> root_min;
    LeafStore<A> leaves;

    size_t bytes() const {
        return slots.size() * sizeof(uint64_t) + root_min.size() * sizeof(uint32_t) +
               leaves.bytes();
    }

    uint64_t descend(const Key<A>& k, uint64_t ref) const {
        while ((ref & kLeafBit) == 0) {
            ref = slots[child_slot(k, ref)];
        }
        return ref;
    }

    void lookup(const Key<A>& k, uint32_t& best, AclAction& action) const {
        for (const Tree& t : trees) {
            if (t.min_rank >= best) {
                break;
            }
            uint64_t ref = t.root;
            if ((ref & kLeafBit) == 0) {
                // The root's child: skip the tree when it cannot beat the answer so far
                // (none yet in the first tree: no root_min load, see lookup_batch()). Only
                // for roots of at most kLookupRootMinSlots slots, whose root_min stays in
                // the caches: a wider one (large random sets, where it seldom prunes) costs
                // a miss on each lookup (+5% at 100,000 random rules, measured).
                const uint32_t c = child_slot(k, ref);
                if (best != kNoRank && ((ref >> 42) & 0xffff) < kLookupRootMinSlots &&
                    root_min[c + t.root_min_at] >= best) {
                    continue;
                }
                ref = slots[c];
            }
            leaves.template scan<false>(descend(k, ref), k, best, action);
        }
    }
};

inline uint32_t load_be32(const uint8_t* p) {
    uint32_t x;
    std::memcpy(&x, p, 4);
    return __builtin_bswap32(x);
}
inline uint64_t load_be64(const uint8_t* p) {
    uint64_t x;
    std::memcpy(&x, p, 8);
    return __builtin_bswap64(x);
}

inline Key<uint32_t> key4(const FiveTuple& t) {
    return Key<uint32_t>{
        {load_be32(t.src.b + 12), load_be32(t.dst.b + 12), t.sport, t.dport, t.proto}};
}
inline u128 addr128(const decode::Address& a) {
    return (static_cast<u128>(load_be64(a.b)) << 64) | load_be64(a.b + 8);
}
inline Key<u128> key6(const FiveTuple& t) {
    return Key<u128>{{addr128(t.src), addr128(t.dst), t.sport, t.dport, t.proto}};
}

}  // namespace picket::sensor::filter::internal

namespace picket::sensor::filter {

struct AclClassifier::Impl {
    internal::Forest<uint32_t> v4;
    internal::Forest<internal::u128> v6;
    std::vector<uint32_t> rank_to_index;
    // Rules given in priority order (an acl.rules without "priority", the usual case) have
    // rank == index: no table read, which at 100,000 rules is one cache miss less.
    bool identity = false;
    bool all_matches = false;

    uint32_t index_of(uint32_t rank) const { return identity ? rank : rank_to_index[rank]; }
};

}  // namespace picket::sensor::filter
