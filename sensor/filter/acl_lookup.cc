// Queries the per-family decision trees (acl_tree.h) that acl_build.cc built: one packet,
// a batch, or every match. Runs on the workers; reads only immutable data.
#include "sensor/filter/filter.h"

#include <algorithm>
#include <cstring>

#include "sensor/filter/acl_tree.h"

namespace picket::sensor::filter {

using internal::Forest;
using internal::Key;
using internal::kLeafBit;
using internal::Tree;
using internal::u128;

Verdict AclClassifier::lookup(const FiveTuple& t) const {
    uint32_t best = Verdict::kNoRule;
    AclAction action = AclAction::kPass;
    if (t.ip_version == 4) {
        impl_->v4.lookup(internal::key4(t), best, action);
    } else if (t.ip_version == 6) {
        impl_->v6.lookup(internal::key6(t), best, action);
    }
    Verdict v;
    if (best != Verdict::kNoRule) {
        v.rule = impl_->index_of(best);
        v.action = action;
    }
    return v;
}

namespace {

// A batch descends one tree at a time, one level per round for all its lookups: within a
// round the loads are independent of each other, so the CPU overlaps their cache misses
// (DRAM-bound at 100,000 rules) instead of waiting for one chain at a time. A round is
// branch-free: a lookup that reached its leaf reloads its own reference. Trees go in
// min_rank order, so a lookup skips the trees its best rule so far already beats.
constexpr size_t kBatch = 64;

template <class A>
void lookup_group(const Forest<A>& f, const Key<A>* keys, size_t n, uint32_t* best,
                  AclAction* action) {
    const uint64_t* slots = f.slots.data();
    // The lanes the trees so far could not settle: min_rank ascends from tree to tree and a
    // lane's best only falls, so each tree's lanes are among the previous tree's.
    uint8_t alive[kBatch];
    size_t n_alive = n;
    for (size_t i = 0; i < n; ++i) {
        alive[i] = static_cast<uint8_t>(i);
    }
    for (const Tree& t : f.trees) {
        const bool first = &t == &f.trees.front();
        uint8_t lane[kBatch];  // the lanes that go into the tree, packed
        uint64_t ref[kBatch];
        size_t m = 0;
        uint32_t d = 0;
        if ((t.root & kLeafBit) == 0 && !first) {
            // A later tree's root level, in the same pass over the lanes as the list of lanes
            // still alive: a lane goes in only if the root child its key selects can beat its
            // answer so far (root_min >= min_rank, so that test implies the alive one). The
            // later trees (min_rank order) mostly end here without a load of their deeper
            // levels or leaves. One pass rather than two: -5% a lookup from 1,000 rules up.
            uint32_t slot[kBatch];
            size_t still = 0;
            for (size_t j = 0; j < n_alive; ++j) {
                const uint8_t l = alive[j];
                const uint32_t b = best[l];
                const uint32_t c = internal::child_slot(keys[l], t.root);
                alive[still] = l;
                still += t.min_rank < b;
                lane[m] = l;
                slot[m] = c;
                m += f.root_min[c + t.root_min_at] < b;
            }
            n_alive = still;
            if (still == 0) {
                break;
            }
            for (size_t j = 0; j < m; ++j) {
                ref[j] = slots[slot[j]];
            }
            d = 1;
        } else {
            for (size_t j = 0; j < n_alive; ++j) {
                alive[m] = alive[j];
                m += t.min_rank < best[alive[j]];
            }
            n_alive = m;
            if (m == 0) {
                break;
            }
            std::memcpy(lane, alive, m);
            if ((t.root & kLeafBit) == 0) {
                // The first tree's root level: no lane has an answer yet, and its root_min
                // (4 bytes a root slot: 0.25 MiB at 100,000 rules) would cost a miss for
                // nothing (it is not even kept).
                for (size_t j = 0; j < m; ++j) {
                    ref[j] = slots[internal::child_slot(keys[lane[j]], t.root)];
                }
                d = 1;
            } else {
                for (size_t j = 0; j < m; ++j) {
                    ref[j] = t.root;
                }
            }
        }
        // A lane at its leaf reloads its own reference. Selected with a mask, not a branch: a
        // mispredicted branch would discard the loads in flight behind it. Returns 1 when the
        // lane is not at a leaf yet.
        auto down = [&](size_t j) {
            const uint64_t r = ref[j];
            const uintptr_t self = reinterpret_cast<uintptr_t>(&ref[j]);
            const uintptr_t child = reinterpret_cast<uintptr_t>(slots) +
                                    uintptr_t{internal::child_slot(keys[lane[j]], r)} * 8;
            const uintptr_t at_leaf = 0 - static_cast<uintptr_t>(r >> 63);
            ref[j] = *reinterpret_cast<const uint64_t*>((self & at_leaf) | (child & ~at_leaf));
            return static_cast<size_t>((ref[j] >> 63) ^ 1);
        };
        size_t inner = m;  // lanes not at a leaf (an upper bound before the first round)
        for (; d < t.depth && inner * 4 > m; ++d) {
            inner = 0;
            for (size_t j = 0; j < m; ++j) {
                inner += down(j);
            }
        }
        // The deep levels: a few lanes of the batch go on (at 100,000 rules one in twenty reaches
        // the fourth level); the others would only reload their leaves.
        if (d < t.depth && inner != 0) {
            uint8_t deep[kBatch];
            size_t q = 0;
            for (size_t j = 0; j < m; ++j) {
                deep[q] = static_cast<uint8_t>(j);
                q += (ref[j] >> 63) ^ 1;
            }
            for (; d < t.depth && inner != 0; ++d) {
                inner = 0;
                for (size_t x = 0; x < q; ++x) {
                    inner += down(deep[x]);
                }
            }
        }
        // Only the leaves that can beat a lane's best so far are prefetched and scanned: their
        // head ranks sit in the caches, the leaves themselves in DRAM at 100,000 rules.
        // In the first tree no lane has an answer yet: every leaf but the empty one is
        // scanned, and every rule of it could win, so neither the head ranks nor a rule's rank
        // is read before a match (-2% a lookup at 100 rules, -4 to -8% from 1,000 up; the head
        // ranks were 0.14 L2 misses a lookup at 100,000).
        size_t s = 0;
        if (first) {
            for (size_t j = 0; j < m; ++j) {
                lane[s] = lane[j];
                ref[s] = ref[j];
                s += ((ref[j] >> 32) & internal::kMaxLeafCount) != 0;
            }
        } else {
            for (size_t j = 0; j < m; ++j) {
                lane[s] = lane[j];
                ref[s] = ref[j];
                s += f.leaves.head_rank(ref[j]) < best[lane[j]];
            }
        }
        for (size_t j = 0; j < s; ++j) {
            // A leaf's first rules span two lines (a block of 4, or 80-byte IPv6 rules).
            const char* leaf = static_cast<const char*>(f.leaves.address(ref[j]));
            __builtin_prefetch(leaf);
            __builtin_prefetch(leaf + 64);
        }
        if (first) {
            for (size_t j = 0; j < s; ++j) {
                const size_t i = lane[j];
                f.leaves.scan_first(ref[j], keys[i], best[i], action[i]);
            }
        } else {
            for (size_t j = 0; j < s; ++j) {
                const size_t i = lane[j];
                f.leaves.template scan<true>(ref[j], keys[i], best[i], action[i]);
            }
        }
    }
}

}  // namespace

void AclClassifier::lookup_batch(std::span<const FiveTuple> tuples, std::span<Verdict> out) const {
    const size_t total = std::min(tuples.size(), out.size());
    for (size_t base = 0; base < total; base += kBatch) {
        const size_t n = std::min(kBatch, total - base);
        Key<uint32_t> k4[kBatch];
        Key<u128> k6[kBatch];
        uint32_t idx4[kBatch], idx6[kBatch];
        uint32_t best4[kBatch], best6[kBatch];
        AclAction act4[kBatch], act6[kBatch];
        size_t n4 = 0, n6 = 0;
        for (size_t i = 0; i < n; ++i) {
            const FiveTuple& t = tuples[base + i];
            out[base + i] = Verdict{};
            if (t.ip_version == 4) {
                k4[n4] = internal::key4(t);
                best4[n4] = Verdict::kNoRule;
                idx4[n4++] = static_cast<uint32_t>(base + i);
            } else if (t.ip_version == 6) {
                k6[n6] = internal::key6(t);
                best6[n6] = Verdict::kNoRule;
                idx6[n6++] = static_cast<uint32_t>(base + i);
            }
        }
        // The IPv6 lookups of a batch are few (a tenth in the benchmark): their rounds overlap
        // little, each one waits on its misses. Their first tree's root slots are fetched
        // while the IPv4 lookups run, which takes one miss off that chain (-2% a lookup at
        // 100,000 mixed rules, measured).
        const Forest<u128>& v6 = impl_->v6;
        if (n6 != 0 && !v6.trees.empty() && (v6.trees.front().root & kLeafBit) == 0) {
            for (size_t i = 0; i < n6; ++i) {
                __builtin_prefetch(v6.slots.data() +
                                   internal::child_slot(k6[i], v6.trees.front().root));
            }
        }
        if (n4 != 0) {
            lookup_group(impl_->v4, k4, n4, best4, act4);
        }
        if (n6 != 0) {
            lookup_group(impl_->v6, k6, n6, best6, act6);
        }
        for (size_t i = 0; i < n4; ++i) {
            if (best4[i] != Verdict::kNoRule) {
                out[idx4[i]] = Verdict{impl_->index_of(best4[i]), act4[i]};
            }
        }
        for (size_t i = 0; i < n6; ++i) {
            if (best6[i] != Verdict::kNoRule) {
                out[idx6[i]] = Verdict{impl_->index_of(best6[i]), act6[i]};
            }
        }
    }
}

namespace {

// Every matching rule of a forest in rank order: a merge of the trees' leaves (each sorted by
// rank), so nothing is allocated.
template <class A>
size_t match_all_forest(const Forest<A>& f, const Key<A>& k, const std::vector<uint32_t>& to_index,
                        std::span<uint32_t> out) {
    constexpr size_t kMaxTrees = internal::kMaxTrees;
    uint64_t leaf[kMaxTrees];
    uint32_t cur[kMaxTrees];
    uint32_t end[kMaxTrees];
    const size_t trees = std::min(kMaxTrees, f.trees.size());
    auto advance = [&](size_t t) {
        while (cur[t] != end[t] && !f.leaves.matches(leaf[t], cur[t], k)) {
            ++cur[t];
        }
    };
    for (size_t t = 0; t < trees; ++t) {
        leaf[t] = f.descend(k, f.trees[t].root);
        cur[t] = 0;
        end[t] = static_cast<uint32_t>(leaf[t] >> 32) & internal::kMaxLeafCount;
        advance(t);
    }
    size_t count = 0;
    for (;;) {
        size_t pick = kMaxTrees;
        uint32_t pick_rank = 0;
        for (size_t t = 0; t < trees; ++t) {
            if (cur[t] != end[t]) {
                const uint32_t r = f.leaves.rank(leaf[t], cur[t]);
                if (pick == kMaxTrees || r < pick_rank) {
                    pick = t;
                    pick_rank = r;
                }
            }
        }
        if (pick == kMaxTrees) {
            return count;
        }
        if (count < out.size()) {
            out[count] = to_index[pick_rank];
        }
        ++count;
        ++cur[pick];
        advance(pick);
    }
}

}  // namespace

size_t AclClassifier::match_all(const FiveTuple& t, std::span<uint32_t> out) const {
    if (!impl_->all_matches) {
        size_t count = 0;
        for (uint32_t index : impl_->rank_to_index) {
            if (rule_matches(rules_[index], t)) {
                if (count < out.size()) {
                    out[count] = index;
                }
                ++count;
            }
        }
        return count;
    }
    if (t.ip_version == 4) {
        return match_all_forest(impl_->v4, internal::key4(t), impl_->rank_to_index, out);
    }
    if (t.ip_version == 6) {
        return match_all_forest(impl_->v6, internal::key6(t), impl_->rank_to_index, out);
    }
    return 0;
}

}  // namespace picket::sensor::filter
