// DetectEngine (compile) and DetectWorker (match).
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
// rules, see inspect_packet()).
//
// Rule profiling (profiling.rules) instantiates the verification loop a second time with a
// tick read around each rule; inspect() picks the copy once per packet.
#include "sensor/detect/detect.h"

#include <hs/hs.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"
#include "sensor/detect/rule.h"
#include "sensor/detect/rule_profile.h"
#include "sensor/detect/threshold.h"
#include "sensor/detect/transform.h"
#include "sensor/filter/filter.h"

namespace picket::sensor::detect {
namespace {

enum ProtoClass : uint8_t { kClassTcp, kClassUdp, kClassIcmp, kClassOther, kNumClasses };

constexpr uint32_t kNoGroup = UINT32_MAX;

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Which transport classes a rule can apply to.
uint8_t class_mask(const Rule& r) {
    switch (r.proto.l4) {
        case ProtoSpec::kTcp:
            return 1u << kClassTcp;
        case ProtoSpec::kUdp:
            return 1u << kClassUdp;
        case ProtoSpec::kIcmp:
            return 1u << kClassIcmp;
        case ProtoSpec::kIp:
            break;
    }
    if (r.proto.app == AppProto::kDns) {
        return (1u << kClassTcp) | (1u << kClassUdp);
    }
    return 0x0f;
}

// "any" with exclusions (e.g. !80) is still port-specific: it misses some ports.
bool ports_are_specific(const PortSet& s) {
    return !s.any || !s.exclude.empty();
}

// Ports are only meaningful for TCP and UDP; for ICMP and other IP one group holds all.
bool class_has_ports(int c) {
    return c == kClassTcp || c == kClassUdp;
}

// Rank of an action in Suricata's default action order (pass, drop, reject, alert).
int action_rank(Action a) {
    switch (a) {
        case Action::kPass:
            return 0;
        case Action::kDrop:
            return 1;
        case Action::kReject:
            return 2;
        case Action::kAlert:
            return 3;
    }
    return 3;
}

struct FastPattern {
    BufferId buffer = BufferId::kPacket;
    uint32_t transforms = 0;
    std::string bytes;
    bool nocase = false;
};

// Picks the rule's fast pattern: an explicit fast_pattern wins; otherwise the longest
// non-negated content (ties: the first). Returns false when the rule has no usable content.
bool choose_fast_pattern(const Rule& r, FastPattern* out, bool app_only = false) {
    bool found = false;
    bool found_explicit = false;
    size_t best_len = 0;
    for (const auto& bm : r.buffers) {
        if (app_only && bm.buffer == BufferId::kPacket) {
            continue;
        }
        for (const auto& opt : bm.options) {
            ContentInfo ci;
            if (!get_content_info(*opt, &ci) || ci.negated || ci.bytes.empty()) {
                continue;
            }
            std::string bytes = ci.bytes;
            if (ci.has_chop && ci.chop_offset < bytes.size()) {
                bytes = bytes.substr(ci.chop_offset, ci.chop_length);
            }
            if (found_explicit && !ci.fast_pattern) {
                continue;
            }
            bool take = !found || (ci.fast_pattern && !found_explicit) || bytes.size() > best_len;
            if (take) {
                out->buffer = bm.buffer;
                out->transforms = bm.transforms;
                out->bytes = bytes;
                out->nocase = ci.nocase;
                best_len = bytes.size();
                found = true;
                found_explicit = found_explicit || ci.fast_pattern;
            }
        }
    }
    return found;
}

// The app-layer protocol a rule inspects (its buffers', or what a keyword such as urilen
// needs); kUnknown for packet rules, which may still name a protocol in their header
// (`alert http ... content:"x";` matches packets of HTTP flows).
AppProto rule_app(const Rule& r) {
    for (const auto& bm : r.buffers) {
        if (bm.buffer != BufferId::kPacket) {
            return buffer_def(bm.buffer).app;
        }
    }
    return r.app_needed;
}

struct PatternKey {
    std::string bytes;
    bool nocase;
    bool operator==(const PatternKey& o) const { return nocase == o.nocase && bytes == o.bytes; }
};
struct PatternKeyHash {
    size_t operator()(const PatternKey& k) const {
        return std::hash<std::string>()(k.bytes) ^ (k.nocase ? 0x9e3779b97f4a7c15ULL : 0);
    }
};

}  // namespace

// Candidate lookup by address for rules without a fast pattern: elementary intervals of the
// 16-byte address space, each with the rules whose (more selective) address set covers it.
struct AddrIndex {
    std::vector<decode::Address> starts;       // sorted; interval i = [starts[i], starts[i+1])
    std::vector<std::vector<uint32_t>> rules;  // per interval

    const std::vector<uint32_t>* find(const decode::Address& a) const {
        auto it = std::upper_bound(starts.begin(), starts.end(), a);
        if (it == starts.begin()) {
            return nullptr;
        }
        const auto& r = rules[static_cast<size_t>(it - starts.begin()) - 1];
        return r.empty() ? nullptr : &r;
    }
};

// A compiled set of rules: the packet-buffer prefilter and the rules checked without one.
struct Part {
    hs_database_t* db = nullptr;                       // may be null
    std::vector<std::vector<uint32_t>> pattern_rules;  // pattern id -> rule indices
    std::vector<uint32_t> always;                      // checked on every packet
    AddrIndex by_src, by_dst;                          // checked when the address is in range
    // IP-only rules: their candidates come from match_all() (AclRule::id = rule index).
    std::shared_ptr<const filter::AclClassifier> ip_only;
    std::vector<uint32_t> ip_only_rules;  // sorted: every IP-only rule of the classifier
    uint32_t rule_count = 0;
    uint32_t max_pattern = 0;  // longest fast pattern (bytes of stream tail worth keeping)
};

// The rules of one app-layer protocol that inspect its buffers: one Hyperscan database per
// (buffer, transform chain) holding the fast patterns found in that buffer, and the rules
// with no app-buffer fast pattern, checked on every transaction.
struct AppDb {
    BufferId buffer = BufferId::kPacket;
    uint32_t transforms = 0;
    hs_database_t* db = nullptr;
    std::vector<std::vector<uint32_t>> pattern_rules;
};
struct AppSet {
    std::vector<AppDb> dbs;
    std::vector<uint32_t> always;
    uint32_t rule_count = 0;
};

// A group = the rules that can match a packet of one transport class and destination port:
// the class's any-port part (shared by every port of the class) plus that port's own part.
struct Group {
    uint32_t any_part = kNoGroup;
    uint32_t port_part = kNoGroup;
};

struct DetectEngine::Impl {
    DetectConfig config;
    std::shared_ptr<FlowbitRegistry> flowbits;
    std::vector<std::unique_ptr<Rule>> rules;  // in evaluation order
    std::vector<Part> parts;
    // Per transport class: the group of each destination port (TCP/UDP), or one group.
    std::vector<Group> port_group[kNumClasses];
    Group class_group[kNumClasses];
    AppSet app_sets[kNumAppProtos];
    mutable std::unique_ptr<ThresholdTable> thresholds;  // shared, locked on the match path
    size_t max_candidates = 0;
    uint32_t max_stream_pattern = 0;  // longest fast pattern of the TCP parts
    uint64_t memory = 0;
    // mpm-algo none: each rule's pkt_data fast pattern (empty: none), looked for in a stream
    // view's new bytes as the Hyperscan prefilter would, so the reference matches streams alike.
    std::vector<FastPattern> ref_stream_fps;

    ~Impl() {
        for (auto& part : parts) {
            if (part.db != nullptr) {
                hs_free_database(part.db);
            }
        }
        for (auto& set : app_sets) {
            for (auto& adb : set.dbs) {
                if (adb.db != nullptr) {
                    hs_free_database(adb.db);
                }
            }
        }
    }

    const Group& group_for(const decode::Packet& p) const {
        int c = kClassOther;
        if (p.has(decode::kFlagTcp)) {
            c = kClassTcp;
        } else if (p.has(decode::kFlagUdp)) {
            c = kClassUdp;
        } else if (p.has(decode::kFlagIcmpv4) || p.has(decode::kFlagIcmpv6)) {
            c = kClassIcmp;
        }
        if (class_has_ports(c)) {
            return port_group[c][p.dport];
        }
        return class_group[c];
    }
};

DetectEngine::DetectEngine() : impl_(new Impl) {}
DetectEngine::~DetectEngine() = default;
uint32_t DetectEngine::rule_count() const {
    return static_cast<uint32_t>(impl_->rules.size());
}
const DetectConfig& DetectEngine::config() const {
    return impl_->config;
}

std::vector<RuleInfo> DetectEngine::rule_infos() const {
    std::vector<RuleInfo> out(impl_->rules.size());
    for (const auto& r : impl_->rules) {
        RuleInfo& i = out[r->index];
        i.gid = r->gid;
        i.sid = r->sid;
        i.rev = r->rev;
        i.msg = r->msg;
        i.category = r->category;
        i.priority = r->priority;
        i.metadata = r->metadata;
    }
    return out;
}

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

// Compiles a literal database of `order` (pattern id = index); nullptr with *error set on
// failure. single: HS_FLAG_SINGLEMATCH (the first match of each pattern is enough).
hs_database_t* compile_literals(const std::vector<const PatternKey*>& order, bool single,
                                uint64_t* memory, std::string* error) {
    std::vector<const char*> exprs;
    std::vector<size_t> lens;
    std::vector<unsigned> flags, hs_ids;
    for (size_t i = 0; i < order.size(); ++i) {
        exprs.push_back(order[i]->bytes.data());
        lens.push_back(order[i]->bytes.size());
        flags.push_back((single ? HS_FLAG_SINGLEMATCH : 0) |
                        (order[i]->nocase ? HS_FLAG_CASELESS : 0));
        hs_ids.push_back(static_cast<unsigned>(i));
    }
    hs_database_t* db = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile_lit_multi(exprs.data(), flags.data(), hs_ids.data(), lens.data(),
                             static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK, nullptr, &db,
                             &err) != HS_SUCCESS) {
        *error = std::string("hyperscan: ") + (err != nullptr ? err->message : "compile failed");
        hs_free_compile_error(err);
        return nullptr;
    }
    size_t size = 0;
    hs_database_size(db, &size);
    *memory += size;
    return db;
}

// Builds a part from a sorted set of rule indices.
void build_part(const std::vector<std::unique_ptr<Rule>>& rules,
                const std::vector<FastPattern>& fps, const std::vector<bool>& has_fp,
                const std::vector<uint32_t>& members, MpmAlgo mpm, bool all_matches,
                bool ip_only_acl, Part& part, uint64_t* memory, std::string* error) {
    std::unordered_map<PatternKey, uint32_t, PatternKeyHash> ids;
    std::vector<const PatternKey*> order;
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
        if (has_fp[ri]) {
            PatternKey key{fps[ri].bytes, fps[ri].nocase};
            auto it = ids.find(key);
            if (it == ids.end()) {
                it = ids.emplace(key, static_cast<uint32_t>(part.pattern_rules.size())).first;
                part.pattern_rules.emplace_back();
                order.push_back(&it->first);
            }
            part.pattern_rules[it->second].push_back(ri);
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
        filter::AclBuildOptions opts;
        opts.all_matches = true;
        auto acl = filter::AclClassifier::build(std::move(acl_rules), opts);
        if (acl.ok()) {
            part.ip_only = std::move(*acl);
            *memory += part.ip_only->stats().memory_bytes;
        } else {
            // Over the classifier's memory budget: the rules are checked on every packet of
            // the part instead (same alerts, more checks).
            part.always.insert(part.always.end(), part.ip_only_rules.begin(),
                               part.ip_only_rules.end());
            std::sort(part.always.begin(), part.always.end());
            part.ip_only_rules.clear();
        }
    }
    if (order.empty()) {
        return;
    }
    part.max_pattern = 0;
    for (const PatternKey* k : order) {
        part.max_pattern =
            std::max<uint32_t>(part.max_pattern, static_cast<uint32_t>(k->bytes.size()));
    }
    // TCP parts also scan stream windows, where only matches ending in the new bytes count:
    // they need every match, not just the first of each pattern.
    part.db = compile_literals(order, !all_matches, memory, error);
}

// A rule whose payload is matched by pcre alone: no content gives it a fast pattern, so the
// prefilter cannot skip it and the regex runs on every packet of its group (of its address
// range, when the address index takes it).
bool pcre_without_content(const Rule& r) {
    FastPattern fp;
    if (choose_fast_pattern(r, &fp)) {
        return false;
    }
    for (const auto& bm : r.buffers) {
        for (const auto& opt : bm.options) {
            if (std::string_view(opt->keyword()) == "pcre") {
                return true;
            }
        }
    }
    return false;
}

bool rule_sets_flowbits(const Rule& r) {
    for (const auto& op : r.flowbits) {
        if (op.cmd == FlowbitCmd::kSet || op.cmd == FlowbitCmd::kUnset ||
            op.cmd == FlowbitCmd::kToggle) {
            return true;
        }
    }
    return false;
}

}  // namespace

// App-layer rules, per protocol: fast patterns from app buffers only (a rule's packet content
// cannot prefilter a transaction), one database per (buffer, transform chain).
static void build_app_sets(DetectEngine::Impl& d, const std::vector<AppProto>& apps, MpmAlgo mpm,
                           std::string* error) {
    for (size_t a = 0; a < kNumAppProtos; ++a) {
        AppSet& set = d.app_sets[a];
        std::map<std::pair<BufferId, uint32_t>, size_t> db_of;
        std::vector<std::unordered_map<PatternKey, uint32_t, PatternKeyHash>> ids;
        std::vector<std::vector<const PatternKey*>> orders;
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
                orders[it->second].push_back(&pit->first);
            }
            adb.pattern_rules[pit->second].push_back(ri);
        }
        for (size_t k = 0; k < set.dbs.size(); ++k) {
            set.dbs[k].db = compile_literals(orders[k], true, &d.memory, error);
            if (set.dbs[k].db == nullptr) {
                return;
            }
        }
        d.max_candidates = std::max(d.max_candidates, static_cast<size_t>(set.rule_count));
    }
}

std::shared_ptr<const DetectEngine> DetectEngine::load(const DetectConfig& config,
                                                       std::shared_ptr<FlowbitRegistry> flowbits,
                                                       LoadSummary* summary) {
    std::shared_ptr<DetectEngine> engine(new DetectEngine());
    Impl& d = *engine->impl_;
    d.config = config;
    d.flowbits = flowbits ? std::move(flowbits) : std::make_shared<FlowbitRegistry>();

    VarTable vars = VarTable::suricata_defaults();
    for (const auto& [k, v] : config.address_vars) {
        vars.address[k] = v;
    }
    for (const auto& [k, v] : config.port_vars) {
        vars.port[k] = v;
    }
    ClassificationTable classes;
    if (!config.classification_file.empty()) {
        classes = ClassificationTable::load(config.classification_file);
    }
    ParseEnv env;
    env.vars = &vars;
    env.classifications = &classes;
    env.flowbits = d.flowbits.get();
    env.pcre_jit = config.pcre_jit;
    LoadedRules loaded = load_rule_files(config.rule_files, env);
    LoadSummary sum = std::move(loaded.summary);
    sum.mpm_algo = config.mpm_algo;
    // In file order, before the evaluation order moves flowbit setters first.
    for (const auto& r : loaded.rules) {
        if (pcre_without_content(*r)) {
            ++sum.pcre_without_content_rules;
            sum.warnings.push_back(r->file + ":" + std::to_string(r->line) + " sid " +
                                   std::to_string(r->sid) +
                                   ": pcre without content anchor: every packet of its port "
                                   "group runs the regex");
        }
    }

    // Evaluation order: flowbit setters first (so a bit set by one rule is visible to a
    // checker on the same packet), then file order. Stable.
    std::stable_partition(loaded.rules.begin(), loaded.rules.end(),
                          [](const std::unique_ptr<Rule>& r) { return rule_sets_flowbits(*r); });
    d.rules = std::move(loaded.rules);
    for (size_t i = 0; i < d.rules.size(); ++i) {
        Rule& r = *d.rules[i];
        r.index = static_cast<uint32_t>(i);
        // Only the header (addresses, ports, protocol) decides whether it can match.
        r.ip_only = r.buffers.empty() && r.header_options.empty() && r.flow_flags == 0 &&
                    r.app_needed == AppProto::kUnknown && r.proto.app == AppProto::kUnknown;
        r.packet_buffer = false;
        for (const BufferMatch& b : r.buffers) {
            r.packet_buffer = r.packet_buffer || b.buffer == BufferId::kPacket;
        }
        bool dsize = false;
        for (const auto& h : r.header_options) {
            dsize = dsize || std::string_view(h->keyword()) == "dsize";
        }
        r.stream_capable = r.packet_buffer && !r.proto.tcp_pkt_only &&
                           (r.flow_flags & kFlowNoStream) == 0 && !dsize;
    }

    auto t0 = std::chrono::steady_clock::now();
    const size_t n = d.rules.size();
    std::vector<FastPattern> fps(n);
    std::vector<bool> has_fp(n, false);
    for (size_t i = 0; i < n; ++i) {
        has_fp[i] = choose_fast_pattern(*d.rules[i], &fps[i]);
        d.rules[i]->stream_prefiltered =
            has_fp[i] && fps[i].buffer == BufferId::kPacket && fps[i].transforms == 0;
        if (config.mpm_algo == MpmAlgo::kNone) {
            d.ref_stream_fps.resize(n);
            if (d.rules[i]->stream_prefiltered) {
                d.ref_stream_fps[i] = fps[i];
            }
        }
        if (!has_fp[i]) {
            ++sum.no_fast_pattern_rules;
        }
    }

    // Parts: each distinct rule set compiled once. Rules that need an app-layer protocol wait
    // for the app layer (no flow has one yet) and join no part.
    std::map<std::pair<std::vector<uint32_t>, bool>, uint32_t> part_ids;
    std::string hs_error;
    auto part_of = [&](std::vector<uint32_t> members, bool tcp) {
        if (members.empty()) {
            return kNoGroup;
        }
        std::sort(members.begin(), members.end());
        auto key = std::make_pair(std::move(members), tcp);
        auto it = part_ids.find(key);
        if (it != part_ids.end()) {
            return it->second;
        }
        uint32_t id = static_cast<uint32_t>(d.parts.size());
        d.parts.emplace_back();
        build_part(d.rules, fps, has_fp, key.first, config.mpm_algo, tcp, config.ip_only_acl,
                   d.parts.back(), &d.memory, &hs_error);
        if (tcp) {
            d.max_stream_pattern = std::max(d.max_stream_pattern, d.parts.back().max_pattern);
        }
        part_ids.emplace(std::move(key), id);
        return id;
    };
    std::vector<AppProto> apps(n);
    uint32_t app_rules = 0;
    for (uint32_t i = 0; i < n; ++i) {
        apps[i] = rule_app(*d.rules[i]);
        app_rules += apps[i] != AppProto::kUnknown ? 1 : 0;
    }
    sum.app_layer_rules = app_rules;
    for (int c = 0; c < kNumClasses; ++c) {
        std::vector<uint32_t> any_port;
        std::vector<std::vector<uint32_t>> by_port;
        if (class_has_ports(c)) {
            by_port.resize(65536);
        }
        for (uint32_t i = 0; i < n; ++i) {
            const Rule& r = *d.rules[i];
            if ((class_mask(r) & (1u << c)) == 0 || apps[i] != AppProto::kUnknown) {
                continue;
            }
            if (!class_has_ports(c) || (!ports_are_specific(r.dport) &&
                                        !(r.bidirectional && ports_are_specific(r.sport)))) {
                any_port.push_back(i);
                continue;
            }
            if (r.bidirectional && (!ports_are_specific(r.dport) || !ports_are_specific(r.sport))) {
                any_port.push_back(i);
                continue;
            }
            auto add_port = [&](uint32_t port) {
                if (by_port[port].empty() || by_port[port].back() != i) {
                    by_port[port].push_back(i);
                }
            };
            auto add_ports = [&](const PortSet& ps) {
                if (!ps.any && ps.exclude.empty()) {
                    for (const auto& rg : ps.include) {
                        for (uint32_t port = rg.lo; port <= rg.hi; ++port) {
                            add_port(port);
                        }
                    }
                    return;
                }
                for (uint32_t port = 0; port < 65536; ++port) {
                    if (ps.contains(static_cast<uint16_t>(port))) {
                        add_port(port);
                    }
                }
            };
            add_ports(r.dport);
            if (r.bidirectional) {
                add_ports(r.sport);
            }
        }
        const bool tcp = c == kClassTcp;
        const uint32_t any_part = part_of(any_port, tcp);
        size_t any_count = any_port.size();
        if (!class_has_ports(c)) {
            d.class_group[c] = Group{any_part, kNoGroup};
            d.max_candidates = std::max(d.max_candidates, any_count);
            continue;
        }
        d.port_group[c].assign(65536, Group{any_part, kNoGroup});
        std::map<std::vector<uint32_t>, uint32_t> local;  // port-specific list -> part
        for (uint32_t port = 0; port < 65536; ++port) {
            if (by_port[port].empty()) {
                continue;
            }
            auto it = local.find(by_port[port]);
            if (it == local.end()) {
                it = local.emplace(by_port[port], part_of(by_port[port], tcp)).first;
                d.max_candidates = std::max(d.max_candidates, any_count + by_port[port].size());
            }
            d.port_group[c][port].port_part = it->second;
        }
        d.max_candidates = std::max(d.max_candidates, any_count);
    }
    build_app_sets(d, apps, config.mpm_algo, &hs_error);
    if (!hs_error.empty()) {
        throw std::runtime_error(hs_error);
    }

    std::vector<const Rule*> rule_ptrs;
    for (const auto& r : d.rules) {
        rule_ptrs.push_back(r.get());
    }
    d.thresholds = std::make_unique<ThresholdTable>();
    if (!config.threshold_file.empty()) {
        std::vector<std::string> errors;
        d.thresholds->load_config(config.threshold_file, vars, &errors);
        sum.warnings.insert(sum.warnings.end(), errors.begin(), errors.end());
    }
    for (auto& w : d.thresholds->bind(rule_ptrs)) {
        sum.warnings.push_back(std::move(w));
    }
    for (auto& w : flowbit_warnings(rule_ptrs, d.flowbits.get())) {
        sum.warnings.push_back(std::move(w));
    }

    sum.compile_ms = ms_since(t0);
    sum.groups = static_cast<uint32_t>(d.parts.size());
    for (const auto& part : d.parts) {
        sum.hs_databases += part.db != nullptr ? 1 : 0;
    }
    for (const auto& set : d.app_sets) {
        sum.groups += set.rule_count != 0 ? 1 : 0;
        sum.hs_databases += static_cast<uint32_t>(set.dbs.size());
    }
    d.memory += n * sizeof(Rule);
    for (int c = 0; c < kNumClasses; ++c) {
        d.memory += d.port_group[c].size() * sizeof(Group);
    }
    sum.memory_bytes = d.memory;
    if (summary != nullptr) {
        *summary = std::move(sum);
    }
    return engine;
}

// ---------------------------------------------------------------------------------------

struct WorkerFlowState::Impl {
    std::shared_ptr<FlowbitRegistry> registry;
    FlowbitPool pool;

    explicit Impl(std::shared_ptr<FlowbitRegistry> r)
        : registry(std::move(r)), pool(FlowbitPool::bits_for(registry ? registry->size() : 0)) {}
};

WorkerFlowState::WorkerFlowState(std::shared_ptr<FlowbitRegistry> registry)
    : impl_(new Impl(std::move(registry))) {}
WorkerFlowState::~WorkerFlowState() = default;

void WorkerFlowState::release_flow(flow::Flow& f) {
    flowbits_release(f, impl_->pool);
}

void WorkerFlowState::adopt(const DetectEngine& engine) {
    uint32_t bits = FlowbitPool::bits_for(engine.flowbit_registry()->size());
    if (bits > impl_->pool.nbits()) {
        impl_->pool.grow_bits(bits);
    }
}

const std::shared_ptr<FlowbitRegistry>& DetectEngine::flowbit_registry() const {
    return impl_->flowbits;
}

struct DetectWorker::Scratch {
    hs_scratch_t* hs = nullptr;
    PayloadScratchPtr payload;
    std::vector<uint32_t> candidates;
    std::vector<uint8_t> seen;          // per rule index: candidate already listed
    std::vector<uint32_t> acl_matches;  // match_all() output (AclRule indices)
    // Per rule index: its fast pattern ended in the new bytes of the stream window.
    std::vector<uint8_t> stream_hit;
    std::string xform;  // a transformed buffer (reused)
    // profiling.rules: per rule index; empty when off. Written by this worker only.
    std::vector<RuleCounters> profile;
    uint64_t profile_start_ticks = 0;  // when this worker was built, for the calibration
    int64_t profile_start_ns = 0;

    ~Scratch() {
        if (hs != nullptr) {
            hs_free_scratch(hs);
        }
    }
};

DetectWorker::DetectWorker(std::shared_ptr<const DetectEngine> engine, WorkerFlowState* flow_state)
    : engine_(std::move(engine)), flow_state_(flow_state), scratch_(new Scratch) {
    const auto& d = engine_->impl();
    for (const auto& part : d.parts) {
        if (part.db != nullptr && hs_alloc_scratch(part.db, &scratch_->hs) != HS_SUCCESS) {
            throw std::runtime_error("hyperscan: cannot allocate scratch");
        }
    }
    for (const auto& set : d.app_sets) {
        for (const auto& adb : set.dbs) {
            if (hs_alloc_scratch(adb.db, &scratch_->hs) != HS_SUCCESS) {
                throw std::runtime_error("hyperscan: cannot allocate scratch");
            }
        }
    }
    scratch_->stream_hit.assign(d.rules.size(), 0);
    scratch_->payload = make_payload_scratch();
    scratch_->candidates.reserve(d.max_candidates + 16);
    scratch_->seen.assign(d.rules.size(), 0);
    scratch_->acl_matches.resize(256);
    if (d.config.profiling.enabled) {
        profiling_ = true;
        scratch_->profile.assign(d.rules.size(), RuleCounters{});
        scratch_->profile_start_ns = profile_steady_ns();
        scratch_->profile_start_ticks = profile_ticks();
    }
}

DetectWorker::~DetectWorker() = default;

namespace {

struct ScanContext {
    const std::vector<std::vector<uint32_t>>* pattern_rules;
    std::vector<uint32_t>* candidates;
    std::vector<uint8_t>* seen;
    // Stream scans: matches ending at or before min_end lie in already inspected bytes; the
    // others mark their rules in stream_hit.
    unsigned long long min_end = 0;
    std::vector<uint8_t>* stream_hit = nullptr;
};

void add_candidates(const std::vector<uint32_t>& rules, std::vector<uint32_t>* candidates,
                    std::vector<uint8_t>* seen) {
    for (uint32_t ri : rules) {
        if (!(*seen)[ri]) {
            (*seen)[ri] = 1;
            candidates->push_back(ri);
        }
    }
}

// An IPv6 packet with a v4-mapped address (::ffff:a.b.c.d) has the same decode::Address as the
// IPv4 one, which AddressSet::contains() matches but the classifier (IPv4 rules for IPv4
// packets) does not; so do more than out->size() matching AclRules. Both take every IP-only
// rule of the part: a superset, which the verification narrows.
void add_ip_only_candidates(const Part& part, const decode::Packet& p,
                            std::vector<uint32_t>* matches, std::vector<uint32_t>* candidates,
                            std::vector<uint8_t>* seen) {
    static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (p.ip_version == 6 &&
        (std::memcmp(p.src.b, kV4Mapped, 12) == 0 || std::memcmp(p.dst.b, kV4Mapped, 12) == 0)) {
        add_candidates(part.ip_only_rules, candidates, seen);
        return;
    }
    const size_t total = part.ip_only->match_all(filter::FiveTuple::from_packet(p), *matches);
    if (total > matches->size()) {
        add_candidates(part.ip_only_rules, candidates, seen);
        return;
    }
    const std::vector<filter::AclRule>& acl = part.ip_only->rules();
    for (size_t i = 0; i < total; ++i) {
        const uint32_t ri = acl[(*matches)[i]].id;
        if (!(*seen)[ri]) {
            (*seen)[ri] = 1;
            candidates->push_back(ri);
        }
    }
}

int on_hs_match(unsigned int id, unsigned long long, unsigned long long to, unsigned int,
                void* ctx) {
    auto* sc = static_cast<ScanContext*>(ctx);
    if (sc->stream_hit != nullptr) {
        if (to <= sc->min_end) {
            return 0;
        }
        for (uint32_t ri : (*sc->pattern_rules)[id]) {
            (*sc->stream_hit)[ri] = 1;
        }
    }
    add_candidates((*sc->pattern_rules)[id], sc->candidates, sc->seen);
    return 0;
}

inline void record_check(RuleCounters& c, uint64_t ticks, bool matched) {
    ++c.checks;
    c.matches += matched ? 1 : 0;
    c.ticks += ticks;
    c.worst_ticks = ticks > c.worst_ticks ? ticks : c.worst_ticks;
}

// always_inline: called from both copies of the verification loop (profiling on and off), GCC
// no longer inlined them as functions called once, which cost ~2% of detection instructions
// with profiling off (callgrind).
[[gnu::always_inline]] inline bool addresses_match(const Rule& r, const decode::Packet& p) {
    if (r.src.contains(p.src) && r.dst.contains(p.dst) && r.sport.contains(p.sport) &&
        r.dport.contains(p.dport)) {
        return true;
    }
    return r.bidirectional && r.src.contains(p.dst) && r.dst.contains(p.src) &&
           r.sport.contains(p.dport) && r.dport.contains(p.sport);
}

[[gnu::always_inline]] inline bool proto_matches(const Rule& r, const decode::Packet& p,
                                                 AppProto app) {
    if (r.proto.ip_version != 0 && r.proto.ip_version != p.ip_version) {
        return false;
    }
    if (r.proto.app != AppProto::kUnknown && r.proto.app != app) {
        return false;
    }
    return true;
}

}  // namespace

static uint8_t to_lower_ascii(uint8_t c) {
    return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c;
}

// mpm-algo none's stand-in for the stream prefilter: whether fp occurs ending in the view's
// new bytes (what on_hs_match's new_off test accepts).
static bool fp_ends_in_new(const FastPattern& fp, const StreamView& sv) {
    const size_t m = fp.bytes.size();
    if (m == 0 || m > sv.len) {
        return false;
    }
    const auto* pat = reinterpret_cast<const uint8_t*>(fp.bytes.data());
    const size_t first = sv.new_off >= m ? sv.new_off - m + 1 : 0;
    for (size_t at = first; at + m <= sv.len; ++at) {
        size_t k = 0;
        while (k < m && (fp.nocase ? to_lower_ascii(sv.data[at + k]) == to_lower_ascii(pat[k])
                                   : sv.data[at + k] == pat[k])) {
            ++k;
        }
        if (k == m) {
            return true;
        }
    }
    return false;
}

template <bool kProfile>
uint32_t DetectWorker::inspect_packet(const decode::Packet& p, flow::Flow* f, flow::Direction dir,
                                      AlertRecord* out, uint32_t out_cap,
                                      const InspectExtras* extras, const AppView* view,
                                      TxAlertLog* log) {
    const auto& d = engine_->impl();
    if (p.ip_version == 0) {
        return 0;
    }
    Scratch& s = *scratch_;
    s.candidates.clear();
    const StreamView* stream = extras != nullptr ? extras->stream : nullptr;
    if (stream != nullptr && (stream->len == 0 || stream->new_off >= stream->len)) {
        stream = nullptr;
    }
    const bool pkt_in_stream = extras != nullptr && extras->pkt_in_stream;
    const bool stream_only = extras != nullptr && extras->stream_only;
    if (view == nullptr) {
        if (d.parts.empty()) {
            return 0;
        }
        const Group& g = d.group_for(p);
        for (uint32_t part_id : {g.any_part, g.port_part}) {
            if (part_id == kNoGroup) {
                continue;
            }
            const Part& part = d.parts[part_id];
            add_candidates(part.always, &s.candidates, &s.seen);
            if (const auto* r = part.by_src.find(p.src)) {
                add_candidates(*r, &s.candidates, &s.seen);
            }
            if (const auto* r = part.by_dst.find(p.dst)) {
                add_candidates(*r, &s.candidates, &s.seen);
            }
            if (part.ip_only) {
                add_ip_only_candidates(part, p, &s.acl_matches, &s.candidates, &s.seen);
            }
            if (part.db != nullptr && p.payload_len > 0) {
                ScanContext sc{&part.pattern_rules, &s.candidates, &s.seen};
                hs_scan(part.db, reinterpret_cast<const char*>(p.payload), p.payload_len, 0, s.hs,
                        on_hs_match, &sc);
            }
            if (part.db != nullptr && stream != nullptr) {
                // Only the new bytes and the tail a pattern may straddle from.
                uint32_t from =
                    stream->new_off > part.max_pattern ? stream->new_off - part.max_pattern : 0;
                ScanContext sc{&part.pattern_rules, &s.candidates, &s.seen, stream->new_off - from,
                               &s.stream_hit};
                hs_scan(part.db, reinterpret_cast<const char*>(stream->data + from),
                        stream->len - from, 0, s.hs, on_hs_match, &sc);
            }
        }
    } else {
        const AppSet& set = d.app_sets[static_cast<size_t>(view->proto)];
        if (set.rule_count == 0) {
            return 0;
        }
        add_candidates(set.always, &s.candidates, &s.seen);
        for (const AppDb& adb : set.dbs) {
            std::string_view buf = view->buf[static_cast<size_t>(adb.buffer)];
            if (buf.data() == nullptr) {
                continue;
            }
            buf = apply_transforms(adb.transforms, buf, &s.xform);
            if (buf.empty()) {
                continue;
            }
            ScanContext sc{&adb.pattern_rules, &s.candidates, &s.seen};
            hs_scan(adb.db, buf.data(), static_cast<unsigned>(buf.size()), 0, s.hs, on_hs_match,
                    &sc);
        }
    }
    counters().prefilter_candidates += s.candidates.size();
    std::sort(s.candidates.begin(), s.candidates.end());

    FlowbitStore* bits = flowbits_of(f);
    PacketContext pc;
    pc.p = &p;
    pc.flow = f;
    pc.dir = dir;
    pc.established = f != nullptr && f->pkt_established;
    pc.flowbits = bits;
    pc.app = view != nullptr ? view->proto : (extras != nullptr ? extras->app : AppProto::kUnknown);
    pc.view = view;

    // One pass of a rule's options: header options, then each buffer (the packet payload or
    // the stream window for pkt_data, the transaction's buffers otherwise).
    auto options_match = [&](const Rule& r, const uint8_t* pkt, uint32_t pkt_len) {
        for (const auto& h : r.header_options) {
            if (!h->match(pc)) {
                return false;
            }
        }
        for (const BufferMatch& bm : r.buffers) {
            if (bm.buffer == BufferId::kPacket) {
                if (!inspect_buffer(bm, pkt, pkt_len, pc, *s.payload)) {
                    return false;
                }
                continue;
            }
            if (view == nullptr) {
                return false;
            }
            std::string_view buf = view->buf[static_cast<size_t>(bm.buffer)];
            if (buf.data() == nullptr) {
                return false;  // the transaction has no such buffer (yet)
            }
            buf = apply_transforms(bm.transforms, buf, &s.xform);
            if (!inspect_buffer(bm, reinterpret_cast<const uint8_t*>(buf.data()),
                                static_cast<uint32_t>(buf.size()), pc, *s.payload)) {
                return false;
            }
        }
        return true;
    };

    uint32_t n = 0;
    bool passed = false;
    // Profiling: a rule's ticks run from just before its checks until the loop comes back for
    // the next candidate (or ends), so every way out of the body below (no match, threshold,
    // pass, noalert, alert) is timed without touching the body; with kProfile false the loop
    // is the plain one.
    constexpr uint32_t kNoRule = UINT32_MAX;
    uint32_t timed = kNoRule;
    uint64_t timed_t0 = 0;
    bool timed_matched = false;
    for (uint32_t ri : s.candidates) {
        if constexpr (kProfile) {
            if (timed != kNoRule) {
                record_check(s.profile[timed], profile_ticks() - timed_t0, timed_matched);
                timed = kNoRule;
            }
        }
        s.seen[ri] = 0;
        bool stream_hit = s.stream_hit[ri] != 0;
        s.stream_hit[ri] = 0;
        if (passed) {
            continue;
        }
        const Rule& r = *d.rules[ri];
        if (log != nullptr && log->seen(view->tx_id, r.sid)) {
            continue;  // this transaction already alerted on this rule
        }
        // Suricata: a packet whose data went into the stream is not matched by stream-capable
        // rules; they see its bytes when the raw stream is inspected. Without a stream view
        // to try, such a candidate (found in the payload) cannot match: not a check.
        const bool skip_payload = pkt_in_stream && r.stream_capable;
        const bool unindexed = stream != nullptr && r.stream_capable && !r.stream_prefiltered;
        const bool ref_hit = stream != nullptr && !d.ref_stream_fps.empty() &&
                             r.stream_prefiltered && fp_ends_in_new(d.ref_stream_fps[ri], *stream);
        stream_hit = stream_hit || ref_hit;
        const bool tx_stream = view != nullptr && stream != nullptr && r.packet_buffer;
        if ((skip_payload && !stream_hit && !unindexed && !tx_stream) ||
            (stream_only && view == nullptr && !r.stream_capable)) {
            continue;
        }
        ++counters().rules_evaluated;
        if constexpr (kProfile) {
            timed = ri;
            timed_matched = false;
            timed_t0 = profile_ticks();
        }
        if (!proto_matches(r, p, pc.app) || !addresses_match(r, p)) {
            continue;
        }
        pc.from_stream = false;
        bool ok =
            !r.proto.tcp_stream_only && !skip_payload && options_match(r, p.payload, p.payload_len);
        // The stream is tried when its prefilter found the rule's pattern in the new bytes;
        // a transaction's rule with raw content options (no prefilter ran on the stream for
        // it) tries it too (the packet carrying its bytes may be an earlier one, or none: a
        // pseudo packet at the flow's end); so does a stream-capable rule that no prefilter
        // indexes, as Suricata checks its non-prefilter rules on every stream chunk.
        if (!ok && (stream_hit || tx_stream) && !r.proto.tcp_pkt_only) {
            pc.from_stream = true;
            ok = options_match(r, stream->data, stream->len);
        } else if (!ok && unindexed && !r.proto.tcp_pkt_only) {
            // No pattern tells where it matched: the new bytes only, so that bytes already
            // inspected do not alert again.
            pc.from_stream = true;
            ok = options_match(r, stream->data + stream->new_off, stream->len - stream->new_off);
        }
        if (!ok) {
            continue;
        }
        if constexpr (kProfile) {
            timed_matched = true;  // every option matched, whatever thresholds decide
        }
        if (log != nullptr) {
            log->add(view->tx_id, r.sid);
        }
        // Thresholds decide first: kNone means "as if the rule had not matched" (threshold
        // below its count, detection_filter not reached), so its flowbits do not apply either.
        ThresholdResult tr = ThresholdResult::kAlert;
        if (r.action != Action::kPass && d.thresholds->applies(r)) {
            tr = d.thresholds->check(r, p.src, p.dst, p.ts_ns);
            if (tr == ThresholdResult::kNone) {
                continue;
            }
        }
        // Flowbit actions apply whether or not the rule alerts.
        if (f != nullptr && has_flowbit_actions(r)) {
            bits = flowbits_acquire(*f, flow_state_->impl().pool);
            pc.flowbits = bits;
            if (bits != nullptr) {
                apply_flowbit_actions(r, *bits);
            }
        }
        if (r.action == Action::kPass) {
            // A pass rule stops inspection of this packet and discards its other alerts.
            passed = true;
            if (extras != nullptr) {
                extras->passed = true;
                extras->silent_drop = false;
                extras->silent_reject = false;
            }
            n = 0;
            continue;
        }
        if (r.noalert) {
            // No alert, but the action stands: an IPS drops with "drop ... noalert;".
            if (extras != nullptr && (r.action == Action::kDrop || r.action == Action::kReject)) {
                extras->silent_drop = true;
                extras->silent_reject = extras->silent_reject || r.action == Action::kReject;
            }
            continue;
        }
        if (tr == ThresholdResult::kSilent) {
            ++counters().alerts_suppressed;
            continue;
        }
        if (n < out_cap) {
            out[n].rule = &r;
            out[n].rule_index = r.index;
            out[n].drop_rule = r.action == Action::kDrop || r.action == Action::kReject;
            out[n].action = AlertAction::kAllowed;
            out[n].tx_id = view != nullptr ? view->tx_id : 0;
            out[n].from_stream = pc.from_stream;
            ++n;
        }
    }
    if constexpr (kProfile) {
        if (timed != kNoRule) {
            record_check(s.profile[timed], profile_ticks() - timed_t0, timed_matched);
        }
    }
    // Suricata's order: action rank, then rule order. Most packets have no alert or one:
    // skip the call (GCC does not always inline it).
    if (n > 1) {
        std::sort(out, out + n, [](const AlertRecord& a, const AlertRecord& b) {
            int ra = action_rank(a.rule->action), rb = action_rank(b.rule->action);
            if (ra != rb) {
                return ra < rb;
            }
            return a.rule->sid < b.rule->sid;
        });
    }
    counters().alerts += n;
    return n;
}

uint32_t DetectWorker::inspect(const decode::Packet& p, flow::Flow* f, flow::Direction dir,
                               AlertRecord* out, uint32_t out_cap, const InspectExtras* extras) {
    // Profiling off costs this branch, taken the same way on every packet.
    if (__builtin_expect(profiling_, 0)) {
        return inspect_packet<true>(p, f, dir, out, out_cap, extras, nullptr, nullptr);
    }
    return inspect_packet<false>(p, f, dir, out, out_cap, extras, nullptr, nullptr);
}

uint32_t DetectWorker::inspect_tx(const decode::Packet& p, flow::Flow* f, flow::Direction dir,
                                  const AppView& view, TxAlertLog* log, AlertRecord* out,
                                  uint32_t out_cap, const InspectExtras* extras) {
    if (view.proto == AppProto::kUnknown) {
        return 0;
    }
    if (__builtin_expect(profiling_, 0)) {
        return inspect_packet<true>(p, f, dir, out, out_cap, extras, &view, log);
    }
    return inspect_packet<false>(p, f, dir, out, out_cap, extras, &view, log);
}

uint32_t DetectEngine::stream_tail_bytes() const {
    return impl_->max_stream_pattern;
}

void RuleProfile::add(const DetectWorker& worker) {
    if (!worker.profiling_) {
        return;
    }
    const DetectWorker::Scratch& s = *worker.scratch_;
    const DetectEngine::Impl& d = worker.engine().impl();
    if (last_engine_ != &d) {
        // Consecutive adds of one generation share its engine; two generations that follow
        // each other were alive together, so their engines never share an address.
        last_engine_ = &d;
        ++generations_;
    }
    ++arrays_;
    mpm_algo_ = d.config.mpm_algo;
    if (arrays_ == 1 || s.profile_start_ns < start_ns_) {
        start_ns_ = s.profile_start_ns;
        start_ticks_ = s.profile_start_ticks;
    }
    for (const auto& rp : d.rules) {
        const Rule& r = *rp;
        const RuleCounters& c = s.profile[r.index];
        auto [it, added] = index_.try_emplace(std::make_tuple(r.gid, r.sid, r.rev), rules_.size());
        if (added) {
            RuleProfileEntry e;
            e.gid = r.gid;
            e.sid = r.sid;
            e.rev = r.rev;
            e.msg = r.msg;
            e.file = r.file;
            e.line = r.line;
            e.keywords = rule_keywords(r);
            FastPattern fp;
            if (choose_fast_pattern(r, &fp)) {
                e.fast_pattern = format_fast_pattern(fp.buffer, fp.bytes, fp.nocase);
            }
            rules_.push_back(std::move(e));
        }
        RuleProfileEntry& e = rules_[it->second];
        e.checks += c.checks;
        e.matches += c.matches;
        e.ticks += c.ticks;
        e.worst_ticks = std::max(e.worst_ticks, c.worst_ticks);
    }
}

void WorkerFlowState::export_stats(StatsSnapshot& out) const {
    out.add("detect.alert", counters_.alerts.get());
    out.add("detect.rules_evaluated", counters_.rules_evaluated.get());
    out.add("detect.prefilter_candidates", counters_.prefilter_candidates.get());
    out.add("detect.alert_queue_overflow", counters_.alerts_dropped.get());
    out.add("detect.alerts_suppressed", counters_.alerts_suppressed.get());
}

}  // namespace picket::sensor::detect
