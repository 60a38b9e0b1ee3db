// Alert thresholding (Suricata 7 semantics): the rule keywords threshold and detection_filter,
// and threshold.config (suppress, threshold, event_filter, rate_filter). ThresholdTable is built on
// the control thread with the engine, then consulted by any worker, only for a rule that matched
// (never per packet). Its state is shared because one source talks to hosts on every worker:
// a lock-striped hash table (a lock is taken only on that match path), bounded in memory by
// evicting the least recently used entry of a stripe (counted).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/decode/decode.h"
#include "sensor/detect/rule.h"

namespace picket::sensor::detect {

// ---------------------------------------------------------------------------------------
// threshold.config

// $VAR values for suppress ip (VarTable::address's type).
using AddressVars = std::map<std::string, std::string, std::less<>>;

enum class SuppressTrack : uint8_t { kNone, kSrc, kDst, kEither };

struct SuppressEntry {
    uint32_t gid = 0, sid = 0;  // 0 = wildcard (gid 0 and sid 0: every rule; sid 0: every
                                // rule of gid)
    SuppressTrack track = SuppressTrack::kNone;  // kNone: suppress the rule entirely
    AddressSet addrs;                            // ip ADDR|CIDR|[list]|$VAR
    bool contains(const decode::Address& a) const;
    std::string file;
    uint32_t line = 0;
};

struct ThresholdEntry {
    uint32_t gid = 0, sid = 0;  // wildcards as SuppressEntry
    ThresholdSpec spec;         // type limit/threshold/both/backoff, or kRate (rate_filter)
    std::string file;
    uint32_t line = 0;
};

struct ThresholdConfig {
    std::vector<SuppressEntry> suppress;
    std::vector<ThresholdEntry> thresholds;  // threshold, event_filter and rate_filter lines
};

// The values threshold.config and the threshold / detection_filter keywords share:
// limit|threshold|both|backoff and by_src|by_dst|by_rule|by_both|by_flow. False on anything
// else.
bool parse_threshold_type(std::string_view v, ThresholdType* out);
bool parse_track_by(std::string_view v, TrackBy* out);

// Parses threshold.config text. Lines:
//   suppress gen_id G, sig_id S[, track by_src|by_dst|by_either, ip ADDR|CIDR|[..]|$VAR]
//   threshold|event_filter gen_id G, sig_id S, type limit|threshold|both,
//       track by_src|by_dst|by_rule|by_both|by_flow, count N, seconds M
//   threshold|event_filter gen_id G, sig_id S, type backoff, track by_flow, count N,
//       multiplier M
//   rate_filter gen_id G, sig_id S, track by_src|by_dst|by_rule|by_both|by_flow, count N,
//       seconds M, new_action alert|drop|pass|reject, timeout T
// '#' starts a comment; a trailing '\' continues a line. Every bad line becomes one message
// "file:line: reason" in *errors and is skipped; the rest still load. address_vars resolves
// $VAR (values in the same address syntax; may be nullptr). Returns true when there was no
// error.
bool parse_threshold_config(std::string_view text, const std::string& file,
                            const AddressVars* address_vars, ThresholdConfig* out,
                            std::vector<std::string>* errors);
// Reads and parses a file; an unreadable file is one error "file: cannot read".
bool load_threshold_config(const std::string& path, const AddressVars* address_vars,
                           ThresholdConfig* out, std::vector<std::string>* errors);

// Parses an address list as used by suppress ip, in the rule header's address language
// ("1.2.3.4", "10.0.0.0/8", "2001:db8::/32", "[a,b,!c]", "$VAR", "any"). Error message names
// the bad part.
bool parse_suppress_addresses(std::string_view text, const AddressVars* address_vars,
                              AddressSet* out, std::string* error);

// ---------------------------------------------------------------------------------------
// Runtime

enum class ThresholdResult : uint8_t {
    kAlert,   // alert and apply the rule's action
    kSilent,  // apply the rule's action (e.g. drop) but raise no alert: limit/both over its
              // count, or suppressed
    kNone,    // as if the rule had not matched: threshold/both below count, detection_filter
              // not reached yet
};

struct ThresholdOptions {
    size_t max_entries = 65536;  // across all stripes
    uint32_t stripes = 64;
};

struct ThresholdStats {
    uint64_t entries = 0;    // in use
    uint64_t evictions = 0;  // entries dropped to make room (bounded memory)
};

class ThresholdTable {
public:
    explicit ThresholdTable(ThresholdConfig config = {}, ThresholdOptions options = {});
    ~ThresholdTable();
    ThresholdTable(const ThresholdTable&) = delete;
    ThresholdTable& operator=(const ThresholdTable&) = delete;

    // Control thread, once, before any check(): resolves for every rule its effective list
    // (suppressions first, then the config threshold replacing the rule's own threshold for a
    // specific gid/sid, else the rule's threshold/detection_filter, else a wildcard config
    // threshold — which, as in Suricata, never applies to a rule with its own). Returns
    // warnings ("file:line: threshold for unknown rule 1:123") for specific entries that
    // name no loaded rule, and "file:line: sid_id > 0 with gen_id 0" style errors.
    std::vector<std::string> bind(const std::vector<const Rule*>& rules);
    // Control thread, before bind(): parses a threshold.config file ($VARs from vars.address)
    // and adds its entries; errors as parse_threshold_config. False if any.
    bool load_config(const std::string& path, const VarTable& vars,
                     std::vector<std::string>* errors);

    // False when nothing applies to r: the engine may skip check() (no lock).
    bool applies(const Rule& r) const;  // after bind()
    // Any worker, after r matched a packet from src to dst at ts_ns (packet time). The first
    // entry that does not say "alert" decides, as Suricata's PacketAlertHandle.
    // A rule that bind() never saw is still thresholded by its own threshold/detection_filter.
    // flow_id: the packet's flow (flow::Flow::flow_id), 0 without one; by_flow entries count
    // in it (a match without a flow is not thresholded by them). action: when a rate_filter
    // is active for the match, its new_action is stored there (else left as it is).
    ThresholdResult check(const Rule& r, const decode::Address& src, const decode::Address& dst,
                          int64_t ts_ns, uint64_t flow_id = 0, Action* action = nullptr);
    // check() == kAlert.
    bool allow(const Rule& r, const decode::Address& src, const decode::Address& dst,
               int64_t ts_ns) {
        return check(r, src, dst, ts_ns) == ThresholdResult::kAlert;
    }

    ThresholdStats stats() const;
    // "detect.threshold.entries", "detect.threshold.evictions".
    void export_stats(StatsSnapshot& out) const;

private:
    struct Item;
    struct RuleItems;
    struct Stripe;
    struct Match {
        const decode::Address& src;
        const decode::Address& dst;
        int64_t ts_ns;
        uint64_t flow_id;
        Action* action;
    };
    ThresholdResult run(const Rule& r, const Item& it, uint8_t slot, const Match& m);

    ThresholdConfig config_;
    ThresholdOptions options_;
    std::unordered_map<const Rule*, std::unique_ptr<RuleItems>> rules_;
    std::unique_ptr<Stripe[]> stripes_;
    uint32_t nstripes_;
    uint32_t per_stripe_;
};

}  // namespace picket::sensor::detect
