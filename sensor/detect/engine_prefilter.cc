// Prefilter databases, built on the control thread by DetectEngine::load (engine_build.cc):
// the Hyperscan literal database of each part and app-layer set, the address index of the
// rules without a fast pattern, and the IP-only classifier.
//
// Compilation: rules are grouped by transport (tcp, udp, icmp, other IP) and destination
// port. A group is the set of rules that can match a packet to that port: the rules whose
// destination ports contain it (for `<>` rules, also their source ports) plus every rule with
// "any" destination port. Ports whose port-specific rule lists are equal share one group, so
// there are few groups. Each group gets one Hyperscan literal database for the packet buffer,
// built from the fast pattern of each rule (deduplicated patterns, each mapping to the rules
// that chose it), and a short list of rules without a usable fast pattern, checked on every
// packet of the group. Buffers that no layer fills yet (HTTP, DNS, TLS until the app layer
// exists) get no database: their rules load but stay inactive.
//
// Matching (per worker, per packet): group lookup, one hs_scan over the payload, candidates
// = matched patterns' rules + the group's always-check rules, verified in a fixed order
// (flowbit setters before checkers, then rule order) with the full option chain.
//
// detect.mpm-algo: none builds no database and no address index: every active rule of a part
// goes to its always-check list, so each packet verifies every rule of its group, in the same
// order. The prefilter only ever drops rules that cannot match (a rule's fast pattern is a
// substring of one of its contents), so alerts, flowbits and thresholds come out the same.
//
// IP-only rules (no payload, no header option, no flow keyword: detect.ip-only-acl, on by
// default) do not go to the address index: each part holds them in a filter::AclClassifier
// built with all_matches from their address and port sets (one AclRule per source prefix x
// destination prefix x port ranges, both directions for `<>`), and match_all() gives their
// candidates. The classifier only selects candidates; every candidate is still verified in
// full, so alerts are those of the address index as long as the candidates are a superset of
// the matching rules (the cases where they might not be fall back to all of the part's IP-only
#include <hs/hs.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "sensor/detect/engine_impl.h"
#include "sensor/detect/parser.h"

namespace picket::sensor::detect {

namespace {

using U128 = unsigned __int128;
U128 to_u128(const decode::Address& a) {
    return address_to_u128(a);
}
decode::Address from_u128(U128 v) {
    return address_from_u128(v);
}

// How many addresses a set names; ~infinite for "any" or a set defined by exclusions.
double coverage(const AddressSet& s) {
    if (s.any || !s.exclude.empty()) {
        return 1e40;
    }
    double total = 0;
    for (const auto& r : s.include) {
        total += static_cast<double>(to_u128(r.hi) - to_u128(r.lo)) + 1;
    }
    return total;
}

// Which side indexes a rule without a fast pattern: 0 none (always checked), 1 src, 2 dst.
int index_side(const Rule& r) {
    if (r.bidirectional) {
        return 0;
    }
    double cs = coverage(r.src), cd = coverage(r.dst);
    if (cs >= 1e39 && cd >= 1e39) {
        return 0;
    }
    return cs <= cd ? 1 : 2;
}

void build_index(const std::vector<std::unique_ptr<Rule>>& rules,
                 const std::vector<uint32_t>& members, bool by_src, AddrIndex* out) {
    std::vector<U128> bounds;
    for (uint32_t ri : members) {
        for (const auto& rg : (by_src ? rules[ri]->src : rules[ri]->dst).include) {
            bounds.push_back(to_u128(rg.lo));
            U128 hi = to_u128(rg.hi);
            if (hi != ~U128(0)) {
                bounds.push_back(hi + 1);
            }
        }
    }
    if (bounds.empty()) {
        return;
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    out->rules.assign(bounds.size(), {});
    for (U128 b : bounds) {
        out->starts.push_back(from_u128(b));
    }
    for (uint32_t ri : members) {
        for (const auto& rg : (by_src ? rules[ri]->src : rules[ri]->dst).include) {
            size_t from = static_cast<size_t>(
                std::lower_bound(bounds.begin(), bounds.end(), to_u128(rg.lo)) - bounds.begin());
            U128 hi = to_u128(rg.hi);
            size_t to =
                hi == ~U128(0)
                    ? bounds.size()
                    : static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), hi + 1) -
                                          bounds.begin());
            for (size_t i = from; i < to; ++i) {
                if (out->rules[i].empty() || out->rules[i].back() != ri) {
                    out->rules[i].push_back(ri);
                }
            }
        }
    }
}

// A rule expands to more AclRules than this (many ranges on both sides): it stays with the
// address index, which holds it once.
constexpr size_t kMaxAclRulesPerRule = 1024;

// The inclusive ranges of [lo, hi] that a set contains: its included ranges (all of
// [lo, hi] for "any") minus its excluded ones. The same set contains() tests.
template <typename T, typename R>
std::vector<std::pair<T, T>> set_ranges(bool any, const std::vector<R>& include,
                                        const std::vector<R>& exclude, T lo, T hi,
                                        T (*value)(decltype(R::lo))) {
    std::vector<std::pair<T, T>> in;
    if (any) {
        in.emplace_back(lo, hi);
    } else {
        for (const R& r : include) {
            in.emplace_back(value(r.lo), value(r.hi));
        }
    }
    for (const R& x : exclude) {
        const T xl = value(x.lo), xh = value(x.hi);
        std::vector<std::pair<T, T>> next;
        for (const auto& [a, b] : in) {
            if (xh < a || xl > b) {
                next.emplace_back(a, b);
                continue;
            }
            if (xl > a) {
                next.emplace_back(a, xl - 1);
            }
            if (xh < b) {
                next.emplace_back(xh + 1, b);
            }
        }
        in = std::move(next);
    }
    return in;
}

U128 addr_value(decode::Address a) {
    return to_u128(a);
}
uint32_t port_value(uint16_t p) {
    return p;
}

std::vector<filter::FamilyPrefix> address_prefixes(const AddressSet& s) {
    std::vector<filter::FamilyPrefix> out;
    for (const auto& [lo, hi] :
         set_ranges<U128, IpRange>(s.any, s.include, s.exclude, 0, ~U128(0), &addr_value)) {
        filter::append_range_prefixes(from_u128(lo), from_u128(hi), &out);
    }
    return out;
}

std::vector<std::pair<uint32_t, uint32_t>> port_ranges(const PortSet& s) {
    return set_ranges<uint32_t, PortRange>(s.any, s.include, s.exclude, 0, 65535, &port_value);
}

// The AclRules that match exactly the packets whose addresses and ports the rule's header
// accepts (any protocol: the part's class and the verification check that), id = the rule's
// index. False, with nothing appended, when there would be more than kMaxAclRulesPerRule.
bool append_acl_rules(const Rule& r, std::vector<filter::AclRule>* out) {
    const auto src = address_prefixes(r.src);
    const auto dst = address_prefixes(r.dst);
    const auto sp = port_ranges(r.sport);
    const auto dp = port_ranges(r.dport);
    const size_t n = src.size() * dst.size() * sp.size() * dp.size() * (r.bidirectional ? 2 : 1);
    if (n > kMaxAclRulesPerRule) {
        return false;
    }
    auto add = [&](const std::vector<filter::FamilyPrefix>& from,
                   const std::vector<filter::FamilyPrefix>& to,
                   const std::vector<std::pair<uint32_t, uint32_t>>& from_ports,
                   const std::vector<std::pair<uint32_t, uint32_t>>& to_ports) {
        for (const auto& a : from) {
            for (const auto& b : to) {
                if (a.family != b.family) {
                    continue;  // no packet has one IPv4 and one IPv6 address
                }
                for (const auto& fp : from_ports) {
                    for (const auto& tp : to_ports) {
                        filter::AclRule ar;
                        ar.family = a.family;
                        ar.src = a.prefix;
                        ar.dst = b.prefix;
                        ar.sport_lo = static_cast<uint16_t>(fp.first);
                        ar.sport_hi = static_cast<uint16_t>(fp.second);
                        ar.dport_lo = static_cast<uint16_t>(tp.first);
                        ar.dport_hi = static_cast<uint16_t>(tp.second);
                        ar.id = r.index;
                        out->push_back(ar);
                    }
                }
            }
        }
    };
    add(src, dst, sp, dp);
    if (r.bidirectional) {
        add(dst, src, dp, sp);
    }
    return true;
}

// The cache key of a database: its mode and every pattern with its flag.
std::string job_key(const DbJob& job) {
    std::string key(1, job.all_matches ? 'a' : 's');
    for (const PatternKey& k : job.patterns) {
        const uint32_t len = static_cast<uint32_t>(k.bytes.size());
        key.push_back(k.nocase ? 'i' : 'c');
        key.append(reinterpret_cast<const char*>(&len), sizeof(len));
        key.append(k.bytes);
    }
    return key;
}

// Compiles one literal database (pattern id = index); on failure job->error is set.
// all_matches off: HS_FLAG_SINGLEMATCH (the first match of each pattern is enough).
void compile_job(DbJob* job) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<const char*> exprs;
    std::vector<size_t> lens;
    std::vector<unsigned> flags, hs_ids;
    for (size_t i = 0; i < job->patterns.size(); ++i) {
        const PatternKey& k = job->patterns[i];
        exprs.push_back(k.bytes.data());
        lens.push_back(k.bytes.size());
        flags.push_back((job->all_matches ? 0 : HS_FLAG_SINGLEMATCH) |
                        (k.nocase ? HS_FLAG_CASELESS : 0));
        hs_ids.push_back(static_cast<unsigned>(i));
    }
    hs_database_t* db = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile_lit_multi(exprs.data(), flags.data(), hs_ids.data(), lens.data(),
                             static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK, nullptr, &db,
                             &err) != HS_SUCCESS) {
        job->error =
            std::string("hyperscan: ") + (err != nullptr ? err->message : "compile failed");
        hs_free_compile_error(err);
    } else {
        job->db = HsDatabase(db, hs_free_database);
    }
    job->ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Databases compiled by earlier loads that some engine still holds, by job_key().
struct DatabaseCache {
    std::mutex mu;
    std::unordered_map<std::string, std::weak_ptr<hs_database_t>> live;
};
DatabaseCache& database_cache() {
    static DatabaseCache cache;
    return cache;
}

}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> port_set_ranges(const PortSet& s) {
    return port_ranges(s);
}

double compile_databases(std::vector<DbJob>* jobs, uint32_t threads, bool reuse) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> keys(jobs->size());
    std::vector<size_t> todo;
    {
        DatabaseCache& cache = database_cache();
        std::lock_guard<std::mutex> lock(cache.mu);
        for (size_t i = 0; i < jobs->size(); ++i) {
            DbJob& job = (*jobs)[i];
            keys[i] = job_key(job);
            if (reuse) {
                auto it = cache.live.find(keys[i]);
                if (it != cache.live.end() && (job.db = it->second.lock()) != nullptr) {
                    job.reused = true;
                    continue;
                }
            }
            todo.push_back(i);
        }
    }
    // The slowest first, so that one long compile does not start last (ties: job order).
    std::stable_sort(todo.begin(), todo.end(), [&](size_t a, size_t b) {
        return (*jobs)[a].patterns.size() > (*jobs)[b].patterns.size();
    });
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < todo.size(); i = next++) {
            compile_job(&(*jobs)[todo[i]]);
        }
    };
    const size_t n_threads = std::min<size_t>(std::max<uint32_t>(threads, 1), todo.size());
    std::vector<std::thread> pool;
    for (size_t t = 1; t < n_threads; ++t) {
        pool.emplace_back(work);
    }
    work();
    for (auto& th : pool) {
        th.join();
    }
    DatabaseCache& cache = database_cache();
    std::lock_guard<std::mutex> lock(cache.mu);
    for (auto it = cache.live.begin(); it != cache.live.end();) {
        it = it->second.expired() ? cache.live.erase(it) : std::next(it);
    }
    for (size_t i : todo) {
        if ((*jobs)[i].db != nullptr) {
            cache.live[keys[i]] = (*jobs)[i].db;
        }
    }
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool matches_in_stream_payload(const Rule& r) {
    // Mirrors DetectWorker::inspect_packet's skip_payload: a stream-capable rule prefiltered
    // on the stream finds its in-stream bytes there; a Snort 3 rule without only_stream reads
    // every packet.
    const bool snort3_packets =
        r.syntax == RuleSyntax::kSnort3 && (r.flow_flags & kFlowOnlyStream) == 0;
    return !r.stream_capable || !r.stream_prefiltered || snort3_packets;
}

std::vector<DbUse> plan_part_databases(const std::vector<std::vector<PatternKey>*>& parts,
                                       bool all_matches, std::vector<DbJob>* jobs) {
    struct Shared {
        size_t job;
        std::unordered_map<PatternKey, uint32_t, PatternKeyHash> ids;
        size_t smallest;  // the smallest member's pattern count
    };
    std::vector<Shared> shared;
    std::vector<DbUse> uses(parts.size());
    for (size_t p = 0; p < parts.size(); ++p) {
        std::vector<PatternKey> pats = std::move(*parts[p]);
        parts[p]->clear();
        if (pats.empty()) {
            uses[p].job = SIZE_MAX;
            continue;
        }
        // The shared database that gains the fewest patterns, if it stays close to the part
        // (at most a quarter more patterns, plus 8) and to each earlier member likewise.
        size_t best = SIZE_MAX, best_new = SIZE_MAX;
        for (size_t c = 0; c < shared.size(); ++c) {
            size_t fresh = 0;
            for (const PatternKey& k : pats) {
                fresh += shared[c].ids.count(k) == 0 ? 1 : 0;
            }
            const size_t total = shared[c].ids.size() + fresh;
            const size_t smallest = std::min(shared[c].smallest, pats.size());
            if (total <= smallest + smallest / 4 + 8 && fresh < best_new) {
                best = c;
                best_new = fresh;
            }
        }
        if (best == SIZE_MAX) {
            best = shared.size();
            shared.push_back(Shared{jobs->size(), {}, pats.size()});
            jobs->emplace_back();
            jobs->back().all_matches = all_matches;
        }
        Shared& sh = shared[best];
        sh.smallest = std::min(sh.smallest, pats.size());
        DbJob& job = (*jobs)[sh.job];
        uses[p].job = sh.job;
        for (PatternKey& k : pats) {
            auto it = sh.ids.find(k);
            if (it == sh.ids.end()) {
                it = sh.ids.emplace(k, static_cast<uint32_t>(job.patterns.size())).first;
                job.patterns.push_back(std::move(k));
            }
            uses[p].id_map.push_back(it->second);
        }
    }
    return uses;
}

void remap_pattern_rules(const DbUse& use, size_t db_patterns,
                         std::vector<std::vector<uint32_t>>* pattern_rules) {
    std::vector<std::vector<uint32_t>> out(db_patterns);
    for (size_t i = 0; i < use.id_map.size() && i < pattern_rules->size(); ++i) {
        out[use.id_map[i]] = std::move((*pattern_rules)[i]);
    }
    *pattern_rules = std::move(out);
}

// Files rule ri under its bounded fast pattern (one entry per bytes, case and bounds).
void add_bounded(const FastPattern& fp, uint32_t ri, bool pkt, std::vector<BoundedPattern>* out) {
    std::string bytes = fp.bytes;
    if (fp.nocase) {
        for (char& c : bytes) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
    }
    auto it = std::find_if(out->begin(), out->end(), [&](const BoundedPattern& b) {
        return b.nocase == fp.nocase && b.lo == fp.lo && b.hi == fp.hi && b.bytes == bytes;
    });
    if (it == out->end()) {
        out->push_back(BoundedPattern{std::move(bytes), fp.nocase, fp.lo, fp.hi, {}, {}});
        it = out->end() - 1;
    }
    it->rules.push_back(ri);  // members are sorted: so are these lists
    if (pkt) {
        it->pkt_rules.push_back(ri);
    }
}

// Builds a part from a sorted set of rule indices.
void build_part(const std::vector<std::unique_ptr<Rule>>& rules,
                const std::vector<FastPattern>& fps, const std::vector<bool>& has_fp,
                const std::vector<uint32_t>& members, MpmAlgo mpm, bool ip_only_acl, Part& part,
                uint64_t* memory, AclCache* acl_cache) {
    std::unordered_map<PatternKey, uint32_t, PatternKeyHash> ids, pkt_ids;
    std::vector<uint32_t> src_indexed, dst_indexed;
    std::vector<filter::AclRule> acl_rules;
    part.rule_count = static_cast<uint32_t>(members.size());
    for (uint32_t ri : members) {
        // mpm none stays the plain reference: every rule checked on every packet.
        if (ip_only_acl && mpm != MpmAlgo::kNone && rules[ri]->ip_only &&
            append_acl_rules(*rules[ri], &acl_rules)) {
            part.ip_only_rules.push_back(ri);  // members are sorted: so is the list
            continue;
        }
        if (mpm == MpmAlgo::kNone) {
            part.always.push_back(ri);  // members are sorted: so is the list
            if (has_fp[ri]) {
                // The same stream tail as with the prefilter (fp_ends_in_new() stands in).
                part.max_pattern = std::max<uint32_t>(part.max_pattern,
                                                      static_cast<uint32_t>(fps[ri].bytes.size()));
            }
            continue;
        }
        const FastPattern& fp = fps[ri];
        if (has_fp[ri] && fp.hi != 0 && fp.bytes.size() <= kBoundedMaxLen &&
            fp.hi - fp.lo <= kBoundedMaxSpan && fp.hi - fp.lo >= fp.bytes.size() &&
            rules[ri]->syntax != RuleSyntax::kSnort3) {
            add_bounded(fp, ri, matches_in_stream_payload(*rules[ri]), &part.bounded);
            continue;
        }
        if (has_fp[ri]) {
            PatternKey key{fps[ri].bytes, fps[ri].nocase};
            auto it = ids.find(key);
            if (it == ids.end()) {
                it = ids.emplace(key, static_cast<uint32_t>(part.pattern_rules.size())).first;
                part.pattern_rules.emplace_back();
                part.patterns.push_back(key);
            }
            part.pattern_rules[it->second].push_back(ri);
            if (matches_in_stream_payload(*rules[ri])) {
                auto pit = pkt_ids.find(key);
                if (pit == pkt_ids.end()) {
                    pit =
                        pkt_ids.emplace(key, static_cast<uint32_t>(part.pkt_patterns.size())).first;
                    part.pkt_pattern_rules.emplace_back();
                    part.pkt_patterns.push_back(key);
                }
                part.pkt_pattern_rules[pit->second].push_back(ri);
            }
            continue;
        }
        switch (index_side(*rules[ri])) {
            case 1:
                src_indexed.push_back(ri);
                break;
            case 2:
                dst_indexed.push_back(ri);
                break;
            default:
                part.always.push_back(ri);
        }
    }
    build_index(rules, src_indexed, true, &part.by_src);
    build_index(rules, dst_indexed, false, &part.by_dst);
    if (!part.ip_only_rules.empty()) {
        // Parts with the same IP-only rules (port groups that differ in their other rules)
        // share one classifier: its rules and ids are the same.
        auto cached =
            acl_cache != nullptr ? acl_cache->find(part.ip_only_rules) : AclCache::iterator{};
        if (acl_cache != nullptr && cached != acl_cache->end()) {
            part.ip_only = cached->second;
        } else {
            filter::AclBuildOptions opts;
            opts.all_matches = true;
            auto acl = filter::AclClassifier::build(std::move(acl_rules), opts);
            if (acl.ok()) {
                part.ip_only = std::move(*acl);
                *memory += part.ip_only->stats().memory_bytes;
            }
            if (acl_cache != nullptr) {
                acl_cache->emplace(part.ip_only_rules, part.ip_only);
            }
        }
        if (part.ip_only == nullptr) {
            // Over the classifier's memory budget: the rules are checked on every packet of
            // the part instead (same alerts, more checks).
            part.always.insert(part.always.end(), part.ip_only_rules.begin(),
                               part.ip_only_rules.end());
            std::sort(part.always.begin(), part.always.end());
            part.ip_only_rules.clear();
        }
    }
    std::map<uint32_t, std::vector<uint32_t>> at;  // start position -> patterns
    for (uint32_t i = 0; i < part.bounded.size(); ++i) {
        const BoundedPattern& b = part.bounded[i];
        for (uint32_t pos = b.lo; pos + b.bytes.size() <= b.hi; ++pos) {
            at[pos].push_back(i);
        }
    }
    for (const auto& [pos, list] : at) {
        BoundedProbe probe;
        probe.pos = pos;
        probe.min_end = UINT32_MAX;
        probe.first = static_cast<uint32_t>(part.bounded_at_probe.size());
        probe.count = static_cast<uint32_t>(list.size());
        for (uint32_t i : list) {
            const BoundedPattern& b = part.bounded[i];
            probe.min_end = std::min(probe.min_end, pos + static_cast<uint32_t>(b.bytes.size()));
            const auto c = static_cast<unsigned char>(b.bytes[0]);
            probe.first_bytes[c >> 6] |= 1ull << (c & 63);
            if (b.nocase) {
                const auto u = static_cast<unsigned char>(std::toupper(c));
                probe.first_bytes[u >> 6] |= 1ull << (u & 63);
            }
            part.bounded_at_probe.push_back(i);
        }
        part.bounded_probes.push_back(probe);
    }
    // The stream tail kept for patterns that straddle chunks (mpm none: set above); the
    // bounded ones count too.
    for (const PatternKey& k : part.patterns) {
        part.max_pattern =
            std::max<uint32_t>(part.max_pattern, static_cast<uint32_t>(k.bytes.size()));
    }
    for (const BoundedPattern& b : part.bounded) {
        part.max_pattern =
            std::max<uint32_t>(part.max_pattern, static_cast<uint32_t>(b.bytes.size()));
    }
}

// App-layer rules, per protocol: fast patterns from app buffers only (a rule's packet content
// cannot prefilter a transaction), one database per (buffer, transform chain).
void build_app_sets(DetectEngine::Impl& d, const std::vector<AppProto>& apps, MpmAlgo mpm,
                    std::vector<DbJob>* jobs, std::vector<std::vector<DbUse>>* app_uses) {
    app_uses->assign(kNumAppProtos, {});
    for (size_t a = 0; a < kNumAppProtos; ++a) {
        AppSet& set = d.app_sets[a];
        std::map<std::pair<BufferId, uint32_t>, size_t> db_of;
        std::vector<std::unordered_map<PatternKey, uint32_t, PatternKeyHash>> ids;
        std::vector<std::vector<PatternKey>> orders;
        for (uint32_t ri = 0; ri < d.rules.size(); ++ri) {
            if (static_cast<size_t>(apps[ri]) != a) {
                continue;
            }
            ++set.rule_count;
            FastPattern fp;
            if (mpm == MpmAlgo::kNone || !choose_fast_pattern(*d.rules[ri], &fp, true)) {
                set.always.push_back(ri);
                continue;
            }
            auto key = std::make_pair(fp.buffer, fp.transforms);
            auto it = db_of.find(key);
            if (it == db_of.end()) {
                it = db_of.emplace(key, set.dbs.size()).first;
                set.dbs.emplace_back();
                set.dbs.back().buffer = fp.buffer;
                set.dbs.back().transforms = fp.transforms;
                ids.emplace_back();
                orders.emplace_back();
            }
            AppDb& adb = set.dbs[it->second];
            PatternKey pk{fp.bytes, fp.nocase};
            auto& id_map = ids[it->second];
            auto pit = id_map.find(pk);
            if (pit == id_map.end()) {
                pit = id_map.emplace(pk, static_cast<uint32_t>(adb.pattern_rules.size())).first;
                adb.pattern_rules.emplace_back();
                orders[it->second].push_back(pk);
            }
            adb.pattern_rules[pit->second].push_back(ri);
        }
        for (size_t k = 0; k < set.dbs.size(); ++k) {
            DbUse use;
            use.job = jobs->size();
            for (uint32_t i = 0; i < orders[k].size(); ++i) {
                use.id_map.push_back(i);
            }
            jobs->emplace_back();
            jobs->back().patterns = std::move(orders[k]);
            (*app_uses)[a].push_back(std::move(use));
        }
        d.max_candidates = std::max(d.max_candidates, static_cast<size_t>(set.rule_count));
    }
}

}  // namespace picket::sensor::detect
