// Private to sensor/detect: the compiled engine (DetectEngine::Impl) and its parts, shared by
// the engine build (engine_build.cc, engine_prefilter.cc; control thread) and the per-packet
// match path (detect_engine.cc; worker threads, read-only).
#pragma once

#include <hs/hs.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/flowbits.h"
#include "sensor/detect/rule.h"
#include "sensor/detect/threshold.h"
#include "sensor/filter/filter.h"

namespace picket::sensor::detect {

enum ProtoClass : uint8_t { kClassTcp, kClassUdp, kClassIcmp, kClassOther, kNumClasses };

constexpr uint32_t kNoGroup = UINT32_MAX;

// Ports are only meaningful for TCP and UDP; for ICMP and other IP one group holds all.
inline bool class_has_ports(int c) {
    return c == kClassTcp || c == kClassUdp;
}

// The rank of each action (indexed by Action) in the configured action-order; Suricata's
// default is pass, drop, reject, alert.
using ActionRanks = std::array<uint8_t, 4>;
inline ActionRanks action_ranks(const std::array<Action, 4>& order) {
    ActionRanks r{3, 3, 3, 3};
    for (size_t i = 0; i < order.size(); ++i) {
        r[static_cast<size_t>(order[i])] = static_cast<uint8_t>(i);
    }
    return r;
}

struct FastPattern {
    BufferId buffer = BufferId::kPacket;
    uint32_t transforms = 0;
    std::string bytes;
    bool nocase = false;
    // The packet buffer's bytes [lo, hi) hold every occurrence that can match: the content's
    // absolute offset and depth (not relative, no variable). hi 0: anywhere.
    uint32_t lo = 0, hi = 0;
};

// Picks the rule's fast pattern: an explicit fast_pattern wins; otherwise the longest
// non-negated content (ties: the first). Returns false when the rule has no usable content.
bool choose_fast_pattern(const Rule& r, FastPattern* out, bool app_only = false);

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

// A Hyperscan database, shared by the parts and loads that use it.
using HsDatabase = std::shared_ptr<hs_database_t>;

// A fast pattern of at most kBoundedMaxLen bytes whose content's offset and depth leave it
// at most kBoundedMaxSpan bytes of the packet buffer: "|03|"; offset:0; depth:1, or
// "|00 01|"; offset:6; depth:2. In a literal database such a pattern matches every few
// hundred bytes of any traffic, and the few-byte literals slow the whole database's scan
// (ET Open: the literals of 1-4 bytes cost about 17 % of a worker's instructions on app-mix); read
// at its place instead (BoundedProbe), it costs a byte test per packet. Longer literals are
// cheap in the database, and many bounded ones share their first bytes at one place (ET
// Open's 500 "|FF|SMB.." of 5-6 bytes), where the probe's compares would cost more than
// they save. Suricata-syntax rules on Picket's stream windows (whose offsets count from the
// window's start, as a packet's from the payload's); not Snort 3 rules, which read PDUs and
// the new bytes of the window from their own start.
inline constexpr uint32_t kBoundedMaxLen = 4;
inline constexpr uint32_t kBoundedMaxSpan = 64;
struct BoundedPattern {
    std::string bytes;  // lower case when nocase
    bool nocase = false;
    uint32_t lo = 0, hi = 0;          // the occurrence lies in [lo, hi) (FastPattern)
    std::vector<uint32_t> rules;      // the rules with this pattern and bounds
    std::vector<uint32_t> pkt_rules;  // those that still read an in-stream packet (Part)
};
// Where a part's bounded patterns may start: one probe per buffer position, with the first
// bytes (both cases for nocase) of the patterns that may start there, so that a packet costs
// a byte test per position (ET Open's any-port TCP part: a handful) and a compare where the
// byte fits.
struct BoundedProbe {
    uint32_t pos = 0;
    uint32_t min_end = 0;           // pos + the shortest pattern's size
    uint64_t first_bytes[4] = {};   // bit c: some pattern here starts with byte c
    uint32_t first = 0, count = 0;  // Part::bounded_at_probe[first, first + count)
};

// A compiled set of rules: the packet-buffer prefilter and the rules checked without one.
struct Part {
    // May be null. Several port parts of a transport class may share one database (the union
    // of their patterns, engine_prefilter.cc): a pattern id of another part maps to no rule.
    hs_database_t* db = nullptr;
    std::vector<std::vector<uint32_t>> pattern_rules;  // pattern id -> rule indices
    std::vector<uint32_t> always;                      // checked on every packet
    AddrIndex by_src, by_dst;                          // checked when the address is in range
    // IP-only rules: their candidates come from match_all() (AclRule::id = rule index).
    std::shared_ptr<const filter::AclClassifier> ip_only;
    std::vector<uint32_t> ip_only_rules;  // sorted: every IP-only rule of the classifier
    uint32_t rule_count = 0;
    uint32_t max_pattern = 0;  // longest fast pattern (bytes of stream tail worth keeping)
    // While loading: the part's own fast patterns (pattern id = index); moved out when its
    // database is planned.
    std::vector<PatternKey> patterns;
    // TCP parts: a packet whose data went into the stream (InspectExtras::pkt_in_stream) is
    // matched only by the rules that do not read the stream (Rule::stream_capable off, Snort 3
    // packet rules): the others' payload candidates would all be skipped. Such a packet's
    // payload is scanned with pkt_db, the fast patterns of those rules alone (null: none),
    // when pkt_split; otherwise (they are all of the part's rules) with db.
    bool pkt_split = false;
    hs_database_t* pkt_db = nullptr;
    std::vector<std::vector<uint32_t>> pkt_pattern_rules;
    std::vector<PatternKey> pkt_patterns;  // while loading, as patterns
    // Short fast patterns bound to a few bytes at a fixed place (BoundedPattern): checked
    // there, not by the database; found through the probes.
    std::vector<BoundedPattern> bounded;
    std::vector<BoundedProbe> bounded_probes;  // ascending pos
    std::vector<uint32_t> bounded_at_probe;    // indices into bounded, by probe
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
    std::vector<HsDatabase> databases;  // owns every db pointer of parts and app_sets
    mutable std::unique_ptr<ThresholdTable> thresholds;  // shared, locked on the match path
    ActionRanks action_rank{3, 1, 2, 0};  // indexed by Action: pass 0, drop 1, reject 2, alert 3
    size_t max_candidates = 0;
    uint32_t max_stream_pattern = 0;  // longest fast pattern of the TCP parts
    // Bit (1 << AppProto) per service a Snort 3 rule that reads the stream may apply to (a rule
    // without a service: every bit): where Snort 3 PDUs are worth cutting (snort3_pdu.h).
    uint32_t snort3_pdu_services = 0;
    uint64_t memory = 0;
    // mpm-algo none: each rule's pkt_data fast pattern (empty: none), looked for in a stream
    // view's new bytes as the Hyperscan prefilter would, so the reference matches streams alike.
    std::vector<FastPattern> ref_stream_fps;

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

// Prefilter databases (engine_prefilter.cc).
// The IP-only classifiers of one load by their rules (null: over the memory budget).
using AclCache = std::map<std::vector<uint32_t>, std::shared_ptr<const filter::AclClassifier>>;
// Builds a part from a sorted set of rule indices, all but its Hyperscan database: its fast
// patterns are left in part.patterns for plan_part_databases(). acl_cache (may be null): the
// classifiers already built for the same IP-only rules.
void build_part(const std::vector<std::unique_ptr<Rule>>& rules,
                const std::vector<FastPattern>& fps, const std::vector<bool>& has_fp,
                const std::vector<uint32_t>& members, MpmAlgo mpm, bool ip_only_acl, Part& part,
                uint64_t* memory, AclCache* acl_cache);

// A literal database to compile: its patterns (id = index), the match mode, and the result.
struct DbJob {
    std::vector<PatternKey> patterns;
    bool all_matches = false;  // every match (TCP parts, for stream windows), not the first
    HsDatabase db;
    bool reused = false;
    double ms = 0;
    std::string error;
};
// Where a part's or app set's pattern ids go in a job's database.
struct DbUse {
    size_t job = 0;
    std::vector<uint32_t> id_map;  // own pattern id -> the database's pattern id
};

// Plans the databases of a set of parts (their patterns, moved out) compiled with the same match
// mode: a part whose patterns are almost all in an earlier database of the set (a few more, the
// result not much larger than the part) shares it, so that port groups differing by a rule or two
// compile once. Appends the jobs; returns each part's use, in the order given.
std::vector<DbUse> plan_part_databases(const std::vector<std::vector<PatternKey>*>& parts,
                                       bool all_matches, std::vector<DbJob>* jobs);
// Whether a rule of a TCP part can match the payload of a packet whose data went into the
// stream (see Part::pkt_split).
bool matches_in_stream_payload(const Rule& r);
// App-layer rules, per protocol: fast patterns from app buffers only (a rule's packet content
// cannot prefilter a transaction), one database per (buffer, transform chain). Fills
// d.app_sets but their databases; appends the jobs and per database its use (app_uses[a][k]).
void build_app_sets(DetectEngine::Impl& d, const std::vector<AppProto>& apps, MpmAlgo mpm,
                    std::vector<DbJob>* jobs, std::vector<std::vector<DbUse>>* app_uses);
// Compiles the jobs on `threads` threads (each job alone: the databases are those of a serial
// build), taking a job's database from the process-wide cache of live databases when `reuse`
// and the same patterns and mode were compiled before. Returns the wall time in ms.
double compile_databases(std::vector<DbJob>* jobs, uint32_t threads, bool reuse);
// The inclusive port ranges a port set contains (PortSet::contains() alike).
std::vector<std::pair<uint32_t, uint32_t>> port_set_ranges(const PortSet& s);
// Rewrites pattern_rules (own ids) to the database's ids.
void remap_pattern_rules(const DbUse& use, size_t db_patterns,
                         std::vector<std::vector<uint32_t>>* pattern_rules);

}  // namespace picket::sensor::detect
