#include "sensor/detect/threshold.h"

#include "common/strings.h"
#include "sensor/detect/name_table.h"
#include "sensor/detect/parser.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace picket::sensor::detect {

namespace {

constexpr uint32_t kNil = UINT32_MAX;
constexpr int64_t kNsPerSec = 1000000000;

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

// Splits "a, b c, [x,y]" at top-level commas (brackets nest).
std::vector<std::string_view> split_top(std::string_view s) {
    std::vector<std::string_view> out;
    int depth = 0;
    size_t start = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '[') {
            ++depth;
        } else if (s[i] == ']') {
            --depth;
        } else if (s[i] == ',' && depth == 0) {
            out.push_back(trim(s.substr(start, i - start)));
            start = i + 1;
        }
    }
    out.push_back(trim(s.substr(start)));
    return out;
}

std::string where(const std::string& file, uint32_t line) {
    std::string w = file;
    w += ':';
    w += std::to_string(line);
    w += ": ";
    return w;
}

// One logical line (continuations joined, comment stripped). Returns "" on success.
std::string parse_line(std::string_view line, const AddressVars* vars, const std::string& file,
                       uint32_t lineno, ThresholdConfig* out) {
    size_t sp = line.find_first_of(" \t");
    std::string_view kind = line.substr(0, sp);
    std::string_view rest = sp == std::string_view::npos ? std::string_view() : line.substr(sp);
    const bool is_suppress = kind == "suppress";
    const bool is_rate = kind == "rate_filter";
    if (!is_suppress && !is_rate && kind != "threshold" && kind != "event_filter") {
        return "unknown directive '" + std::string(kind) +
               "' (expected suppress, threshold, event_filter or rate_filter)";
    }
    std::map<std::string, std::string, std::less<>> kv;
    for (std::string_view item : split_top(rest)) {
        size_t s2 = item.find_first_of(" \t");
        if (item.empty() || s2 == std::string_view::npos) {
            return "malformed option '" + std::string(item) + "' (expected 'name value')";
        }
        std::string key(item.substr(0, s2));
        if (kv.count(key) != 0) {
            return "'" + key + "' given twice";
        }
        kv[key] = std::string(trim(item.substr(s2)));
    }
    const std::set<std::string_view> allowed =
        is_suppress ? std::set<std::string_view>{"gen_id", "sig_id", "track", "ip"}
        : is_rate   ? std::set<std::string_view>{"gen_id",  "sig_id",     "track",  "count",
                                                 "seconds", "new_action", "timeout"}
                    : std::set<std::string_view>{"gen_id", "sig_id",  "type",      "track",
                                                 "count",  "seconds", "multiplier"};
    for (const auto& [k, v] : kv) {
        if (allowed.count(k) == 0) {
            return "unknown option '" + k + "' for " + std::string(kind);
        }
    }
    uint32_t gid = 0, sid = 0;
    if (kv.count("gen_id") == 0 || kv.count("sig_id") == 0) {
        return std::string(kind) + " needs gen_id and sig_id";
    }
    if (!strings::parse_u32(kv["gen_id"], &gid)) {
        return "invalid gen_id '" + kv["gen_id"] + "'";
    }
    if (!strings::parse_u32(kv["sig_id"], &sid)) {
        return "invalid sig_id '" + kv["sig_id"] + "'";
    }
    if (sid != 0 && gid == 0) {
        return "sig_id " + std::to_string(sid) + " needs a gen_id other than 0";
    }
    if (is_suppress) {
        SuppressEntry e;
        e.gid = gid;
        e.sid = sid;
        e.file = file;
        e.line = lineno;
        const bool has_track = kv.count("track") != 0, has_ip = kv.count("ip") != 0;
        if (has_track != has_ip) {
            return "suppress needs both track and ip, or neither";
        }
        if (has_track) {
            const std::string& t = kv["track"];
            static constexpr Named<SuppressTrack> kSuppressTracks[] = {
                {"by_src", SuppressTrack::kSrc},
                {"by_dst", SuppressTrack::kDst},
                {"by_either", SuppressTrack::kEither}};
            if (!find_named(kSuppressTracks, t, &e.track)) {
                return "invalid track '" + t + "' for suppress (expected by_src, by_dst or " +
                       "by_either)";
            }
            std::string err;
            if (!parse_suppress_addresses(kv["ip"], vars, &e.addrs, &err)) {
                return "ip: " + err;
            }
        }
        out->suppress.push_back(std::move(e));
        return "";
    }
    ThresholdEntry e;
    e.gid = gid;
    e.sid = sid;
    e.file = file;
    e.line = lineno;
    if (is_rate) {
        e.spec.type = ThresholdType::kRate;
    } else if (kv.count("type") == 0) {
        return std::string(kind) + " needs type";
    } else if (!parse_threshold_type(kv["type"], &e.spec.type)) {
        return "invalid type '" + kv["type"] + "' (expected limit, threshold, both or backoff)";
    }
    const bool backoff = e.spec.type == ThresholdType::kBackoff;
    std::vector<const char*> needs = {"track", "count", backoff ? "multiplier" : "seconds"};
    if (is_rate) {
        needs.push_back("new_action");
        needs.push_back("timeout");
    }
    for (const char* need : needs) {
        if (kv.count(need) == 0) {
            return std::string(kind) + " needs " + need;
        }
    }
    if (!parse_track_by(kv["track"], &e.spec.track)) {
        return "invalid track '" + kv["track"] +
               "' (expected by_src, by_dst, by_rule, by_both or by_flow)";
    }
    if (!strings::parse_u32(kv["count"], &e.spec.count) || e.spec.count == 0) {
        return "invalid count '" + kv["count"] + "'";
    }
    if (backoff) {
        if (e.spec.track != TrackBy::kFlow) {
            return "type backoff needs track by_flow";
        }
        if (kv.count("seconds") != 0) {
            return "type backoff takes a multiplier, not seconds";
        }
        if (!strings::parse_u32(kv["multiplier"], &e.spec.multiplier) || e.spec.multiplier < 2) {
            return "invalid multiplier '" + kv["multiplier"] + "' (2 or more)";
        }
        e.spec.seconds = 0;
    } else {
        if (kv.count("multiplier") != 0) {
            return "multiplier is only for type backoff";
        }
        if (!strings::parse_u32(kv["seconds"], &e.spec.seconds)) {
            return "invalid seconds '" + kv["seconds"] + "'";
        }
    }
    if (is_rate) {
        static constexpr Named<Action> kNewActions[] = {{"alert", Action::kAlert},
                                                        {"drop", Action::kDrop},
                                                        {"pass", Action::kPass},
                                                        {"reject", Action::kReject}};
        const std::string& a = kv["new_action"];
        if (a == "sdrop" || a == "log") {
            // Suricata's parser takes them and implements neither.
            return "new_action '" + a + "' is not supported (alert, drop, pass or reject)";
        }
        if (!find_named(kNewActions, a, &e.spec.new_action)) {
            return "invalid new_action '" + a + "' (expected alert, drop, pass or reject)";
        }
        if (!strings::parse_u32(kv["timeout"], &e.spec.timeout) || e.spec.timeout == 0) {
            return "invalid timeout '" + kv["timeout"] + "'";
        }
    }
    out->thresholds.push_back(std::move(e));
    return "";
}

}  // namespace

bool parse_threshold_type(std::string_view v, ThresholdType* out) {
    static constexpr Named<ThresholdType> kTypes[] = {{"limit", ThresholdType::kLimit},
                                                      {"threshold", ThresholdType::kThreshold},
                                                      {"both", ThresholdType::kBoth},
                                                      {"backoff", ThresholdType::kBackoff}};
    return find_named(kTypes, v, out);
}

bool parse_track_by(std::string_view v, TrackBy* out) {
    static constexpr Named<TrackBy> kTracks[] = {{"by_src", TrackBy::kSrc},
                                                 {"by_dst", TrackBy::kDst},
                                                 {"by_rule", TrackBy::kRule},
                                                 {"by_both", TrackBy::kBoth},
                                                 {"by_flow", TrackBy::kFlow}};
    return find_named(kTracks, v, out);
}

bool SuppressEntry::contains(const decode::Address& a) const {
    return addrs.contains(a);
}

// The same address language as rule headers (parse_address_spec), with the rule variables.
bool parse_suppress_addresses(std::string_view text, const AddressVars* address_vars,
                              AddressSet* out, std::string* error) {
    VarTable vars = VarTable::suricata_defaults();
    if (address_vars != nullptr) {
        for (const auto& [name, value] : *address_vars) {
            vars.address[name] = value;
        }
    }
    return parse_address_spec(text, &vars, out, error);
}

bool parse_threshold_config(std::string_view text, const std::string& file,
                            const AddressVars* address_vars, ThresholdConfig* out,
                            std::vector<std::string>* errors) {
    bool ok = true;
    uint32_t lineno = 0;
    std::string logical;
    uint32_t logical_start = 0;
    while (!text.empty() || !logical.empty()) {
        std::string_view raw;
        if (text.empty()) {
            raw = "";
        } else {
            size_t nl = text.find('\n');
            raw = text.substr(0, nl);
            text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
            ++lineno;
        }
        std::string_view line = trim(raw);
        if (logical.empty()) {
            logical_start = lineno;
        }
        const bool cont = !line.empty() && line.back() == '\\' && !text.empty();
        if (cont) {
            line.remove_suffix(1);
        }
        logical.append(line);
        if (cont) {
            logical += ' ';
            continue;
        }
        std::string_view l = trim(logical);
        if (!l.empty() && l[0] != '#') {
            std::string err = parse_line(l, address_vars, file, logical_start, out);
            if (!err.empty()) {
                errors->push_back(where(file, logical_start) + err);
                ok = false;
            }
        }
        logical.clear();
        if (text.empty()) {
            break;
        }
    }
    return ok;
}

bool load_threshold_config(const std::string& path, const AddressVars* address_vars,
                           ThresholdConfig* out, std::vector<std::string>* errors) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        errors->push_back(path + ": cannot read");
        return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_threshold_config(ss.str(), path, address_vars, out, errors);
}

// ---------------------------------------------------------------------------------------
// Runtime

struct ThresholdTable::Item {
    enum Kind : uint8_t { kSuppressAll, kSuppress, kCount } kind = kCount;
    const SuppressEntry* suppress = nullptr;
    ThresholdSpec spec;
};

struct ThresholdTable::RuleItems {
    std::vector<Item> items;
};

namespace {

// What an entry counts: addresses (by_src, by_dst, by_both), a flow id (by_flow) or nothing
// (by_rule), with the rule and its item's slot.
struct Key {
    decode::Address a, b;
    uint64_t flow = 0;
};

struct Entry {
    uint32_t gid = 0, sid = 0;
    uint8_t slot = 0;
    Key key;
    uint64_t hash = 0;
    int64_t tv1 = 0;    // window start; backoff: unused
    int64_t until = 0;  // rate_filter: new_action holds until then (0: not active)
    uint32_t count = 0;
    uint32_t mark = 0;  // backoff: the match count of the next alert
    uint32_t hnext = kNil, prev = kNil, next = kNil;
};

uint64_t key_hash(uint32_t gid, uint32_t sid, uint8_t slot, const Key& k) {
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t{gid} << 32 | sid) ^ (uint64_t{slot} << 56);
    uint64_t w[5];
    std::memcpy(w, k.a.b, 16);
    std::memcpy(w + 2, k.b.b, 16);
    w[4] = k.flow;
    for (uint64_t x : w) {
        h ^= x;
        h *= 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return h;
}

}  // namespace

struct alignas(64) ThresholdTable::Stripe {
    std::mutex mu;
    std::vector<Entry> entries;
    std::vector<uint32_t> buckets;
    uint32_t capacity = 0;     // the most entries: then the least recently used is evicted
    uint32_t lru_head = kNil;  // most recently used
    uint32_t lru_tail = kNil;
    Counter in_use;
    Counter evictions;

    void lru_unlink(uint32_t i) {
        Entry& e = entries[i];
        (e.prev == kNil ? lru_head : entries[e.prev].next) = e.next;
        (e.next == kNil ? lru_tail : entries[e.next].prev) = e.prev;
        e.prev = e.next = kNil;
    }
    void lru_push_front(uint32_t i) {
        Entry& e = entries[i];
        e.prev = kNil;
        e.next = lru_head;
        if (lru_head != kNil) {
            entries[lru_head].prev = i;
        }
        lru_head = i;
        if (lru_tail == kNil) {
            lru_tail = i;
        }
    }
    uint32_t find(uint64_t h, uint32_t gid, uint32_t sid, uint8_t slot, const Key& k) {
        for (uint32_t i = buckets[h & (buckets.size() - 1)]; i != kNil; i = entries[i].hnext) {
            const Entry& e = entries[i];
            if (e.hash == h && e.gid == gid && e.sid == sid && e.slot == slot &&
                e.key.flow == k.flow && e.key.a == k.a && e.key.b == k.b) {
                return i;
            }
        }
        return kNil;
    }
    uint32_t insert(uint64_t h, uint32_t gid, uint32_t sid, uint8_t slot, const Key& k) {
        uint32_t i = kNil;
        if (entries.size() < capacity) {
            // Entries are added as they are first needed: a table that never fills (most
            // rulesets, every short run) does not pay for its 65,536 entries up front.
            i = static_cast<uint32_t>(entries.size());
            entries.emplace_back();
            in_use.set(in_use.get() + 1);
        } else {
            // Evict the least recently used entry of this stripe.
            i = lru_tail;
            lru_unlink(i);
            uint32_t* link = &buckets[entries[i].hash & (buckets.size() - 1)];
            while (*link != i) {
                link = &entries[*link].hnext;
            }
            *link = entries[i].hnext;
            ++evictions;
        }
        Entry& e = entries[i];
        e.gid = gid;
        e.sid = sid;
        e.slot = slot;
        e.key = k;
        e.hash = h;
        e.until = 0;
        e.mark = 0;
        uint32_t& head = buckets[h & (buckets.size() - 1)];
        e.hnext = head;
        head = i;
        lru_push_front(i);
        return i;
    }
};

ThresholdTable::ThresholdTable(ThresholdConfig config, ThresholdOptions options)
    : config_(std::move(config)), options_(options) {
    nstripes_ = std::max<uint32_t>(1, options_.stripes);
    per_stripe_ = static_cast<uint32_t>(std::max<size_t>(1, options_.max_entries / nstripes_));
    stripes_ = std::make_unique<Stripe[]>(nstripes_);
    size_t nb = 1;
    while (nb < per_stripe_) {
        nb <<= 1;
    }
    for (uint32_t s = 0; s < nstripes_; ++s) {
        Stripe& st = stripes_[s];
        st.capacity = per_stripe_;
        st.buckets.assign(nb, kNil);
    }
}

ThresholdTable::~ThresholdTable() = default;

std::vector<std::string> ThresholdTable::bind(const std::vector<const Rule*>& rules) {
    std::vector<std::string> warnings;
    rules_.clear();
    std::set<std::pair<uint32_t, uint32_t>> known;
    for (const Rule* r : rules) {
        known.emplace(r->gid, r->sid);
    }
    auto applies_to = [](uint32_t gid, uint32_t sid, const Rule& r) {
        return (gid == 0 && sid == 0) || (sid == 0 && gid == r.gid) ||
               (gid == r.gid && sid == r.sid);
    };
    for (const SuppressEntry& s : config_.suppress) {
        if (s.sid != 0 && known.count({s.gid, s.sid}) == 0) {
            warnings.push_back(where(s.file, s.line) + "suppress for unknown rule " +
                               std::to_string(s.gid) + ":" + std::to_string(s.sid));
        }
    }
    for (const ThresholdEntry& t : config_.thresholds) {
        if (t.sid != 0 && known.count({t.gid, t.sid}) == 0) {
            warnings.push_back(where(t.file, t.line) + "threshold for unknown rule " +
                               std::to_string(t.gid) + ":" + std::to_string(t.sid));
        }
    }
    for (const Rule* r : rules) {
        auto items = std::make_unique<RuleItems>();
        for (const SuppressEntry& s : config_.suppress) {
            if (applies_to(s.gid, s.sid, *r)) {
                Item it;
                it.kind = s.track == SuppressTrack::kNone ? Item::kSuppressAll : Item::kSuppress;
                it.suppress = &s;
                items->items.push_back(it);
            }
        }
        bool specific = false;
        for (const ThresholdEntry& t : config_.thresholds) {
            if (t.sid != 0 && t.gid == r->gid && t.sid == r->sid) {
                specific = true;
                Item it;
                it.spec = t.spec;
                items->items.push_back(it);
            }
        }
        const bool own = r->has_threshold || r->has_detection_filter;
        // A specific config threshold replaces the rule's own threshold or detection_filter
        // (Suricata's override); wildcard ones never apply to a rule with its own.
        if (!specific && own) {
            Item it;
            it.spec = r->has_threshold ? r->threshold : r->detection_filter;
            items->items.push_back(it);
        } else if (!specific) {
            for (const ThresholdEntry& t : config_.thresholds) {
                if (t.sid == 0 && applies_to(t.gid, t.sid, *r)) {
                    Item it;
                    it.spec = t.spec;
                    items->items.push_back(it);
                }
            }
        }
        if (!items->items.empty()) {
            rules_.emplace(r, std::move(items));
        }
    }
    return warnings;
}

bool ThresholdTable::applies(const Rule& r) const {
    return rules_.count(&r) != 0;
}

bool ThresholdTable::load_config(const std::string& path, const VarTable& vars,
                                 std::vector<std::string>* errors) {
    return load_threshold_config(path, &vars.address, &config_, errors);
}

ThresholdResult ThresholdTable::check(const Rule& r, const decode::Address& src,
                                      const decode::Address& dst, int64_t ts_ns, uint64_t flow_id,
                                      Action* action) {
    const Match m{src, dst, ts_ns, flow_id, action};
    auto it = rules_.find(&r);
    if (it == rules_.end()) {
        if (!r.has_threshold && !r.has_detection_filter) {
            return ThresholdResult::kAlert;
        }
        Item own;
        own.spec = r.has_threshold ? r.threshold : r.detection_filter;
        return run(r, own, 0, m);
    }
    const std::vector<Item>& items = it->second->items;
    for (size_t i = 0; i < items.size(); ++i) {
        ThresholdResult res = run(r, items[i], static_cast<uint8_t>(i), m);
        if (res != ThresholdResult::kAlert) {
            return res;
        }
    }
    return ThresholdResult::kAlert;
}

namespace {

// The result of the first hit of a new (or restarted) window.
inline ThresholdResult first_in_window(const ThresholdSpec& td) {
    switch (td.type) {
        case ThresholdType::kLimit:
            return ThresholdResult::kAlert;
        case ThresholdType::kBoth:
            return td.count == 1 ? ThresholdResult::kAlert : ThresholdResult::kNone;
        case ThresholdType::kThreshold:
        case ThresholdType::kDetectionFilter:
            return ThresholdResult::kNone;
        case ThresholdType::kBackoff:  // handled apart
        case ThresholdType::kRate:
            return ThresholdResult::kAlert;
    }
    return ThresholdResult::kNone;
}

}  // namespace

ThresholdResult ThresholdTable::run(const Rule& r, const Item& item, uint8_t slot, const Match& m) {
    const decode::Address& src = m.src;
    const decode::Address& dst = m.dst;
    const int64_t ts_ns = m.ts_ns;
    switch (item.kind) {
        case Item::kSuppressAll:
            return ThresholdResult::kSilent;
        case Item::kSuppress: {
            const SuppressEntry& s = *item.suppress;
            bool hit = false;
            switch (s.track) {
                case SuppressTrack::kSrc:
                    hit = s.contains(src);
                    break;
                case SuppressTrack::kDst:
                    hit = s.contains(dst);
                    break;
                case SuppressTrack::kEither:
                    hit = s.contains(src) || s.contains(dst);
                    break;
                case SuppressTrack::kNone:
                    hit = true;
                    break;
            }
            return hit ? ThresholdResult::kSilent : ThresholdResult::kAlert;
        }
        case Item::kCount:
            break;
    }
    const ThresholdSpec& td = item.spec;
    // threshold with count 1 alerts on every match and keeps no state (as Suricata).
    if (td.type == ThresholdType::kThreshold && td.count == 1) {
        return ThresholdResult::kAlert;
    }
    Key k;
    switch (td.track) {
        case TrackBy::kSrc:
            k.a = src;
            break;
        case TrackBy::kDst:
            k.a = dst;
            break;
        case TrackBy::kRule:
            break;
        case TrackBy::kBoth:  // the pair, in either direction
            k.a = src < dst ? src : dst;
            k.b = src < dst ? dst : src;
            break;
        case TrackBy::kFlow:
            if (m.flow_id == 0) {
                return ThresholdResult::kAlert;  // no flow to count in (documented)
            }
            k.flow = m.flow_id;
            break;
    }
    const uint64_t h = key_hash(r.gid, r.sid, slot, k);
    Stripe& st = stripes_[(h >> 32) % nstripes_];
    std::lock_guard<std::mutex> lock(st.mu);
    uint32_t idx = st.find(h, r.gid, r.sid, slot, k);
    const bool fresh = idx == kNil;
    if (fresh) {
        idx = st.insert(h, r.gid, r.sid, slot, k);
    } else {
        st.lru_unlink(idx);
        st.lru_push_front(idx);
    }
    Entry& e = st.entries[idx];
    if (td.type == ThresholdType::kBackoff) {
        // Alerts at the count-th match, then at count*M, count*M^2, ... of the flow; the
        // matches before the count-th are as if the rule had not matched, those between two
        // marks keep the rule's action without an alert (Suricata 8's documentation).
        if (fresh) {
            e.count = 0;
            e.mark = td.count;
        }
        if (e.count < UINT32_MAX) {
            ++e.count;
        }
        if (e.count == e.mark) {
            const uint64_t next = uint64_t{e.mark} * td.multiplier;
            e.mark = next > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(next);
            return ThresholdResult::kAlert;
        }
        return e.count < td.count ? ThresholdResult::kNone : ThresholdResult::kSilent;
    }
    if (td.type == ThresholdType::kRate) {
        // Every match alerts; once more than count matches fall within seconds, the rule's
        // action becomes new_action until timeout seconds after that match. The window counts
        // again from the first match after the timeout.
        if (!fresh && e.until != 0) {
            if (ts_ns <= e.until) {
                if (m.action != nullptr) {
                    *m.action = td.new_action;
                }
                return ThresholdResult::kAlert;
            }
            e.until = 0;
            e.tv1 = ts_ns;
            e.count = 1;
            return ThresholdResult::kAlert;
        }
        if (fresh || ts_ns > e.tv1 + static_cast<int64_t>(td.seconds) * kNsPerSec) {
            e.tv1 = ts_ns;
            e.count = 1;
        } else if (e.count < UINT32_MAX) {
            ++e.count;
        }
        if (e.count > td.count) {
            e.until = ts_ns + static_cast<int64_t>(td.timeout) * kNsPerSec;
            if (m.action != nullptr) {
                *m.action = td.new_action;
            }
        }
        return ThresholdResult::kAlert;
    }
    if (fresh) {
        e.tv1 = ts_ns;
        e.count = 1;
        return first_in_window(td);
    }
    const bool within = ts_ns <= e.tv1 + static_cast<int64_t>(td.seconds) * kNsPerSec;
    if (!within) {
        e.tv1 = ts_ns;
        e.count = 1;
        return first_in_window(td);
    }
    ++e.count;
    switch (td.type) {
        case ThresholdType::kLimit:
            return e.count <= td.count ? ThresholdResult::kAlert : ThresholdResult::kSilent;
        case ThresholdType::kThreshold:
            if (e.count >= td.count) {
                e.count = 0;
                return ThresholdResult::kAlert;
            }
            return ThresholdResult::kNone;
        case ThresholdType::kBoth:
            return e.count == td.count  ? ThresholdResult::kAlert
                   : e.count > td.count ? ThresholdResult::kSilent
                                        : ThresholdResult::kNone;
        case ThresholdType::kDetectionFilter:
            return e.count > td.count ? ThresholdResult::kAlert : ThresholdResult::kNone;
        case ThresholdType::kBackoff:  // returned above
        case ThresholdType::kRate:
            break;
    }
    return ThresholdResult::kNone;
}

ThresholdStats ThresholdTable::stats() const {
    ThresholdStats s;
    for (uint32_t i = 0; i < nstripes_; ++i) {
        s.entries += stripes_[i].in_use.get();
        s.evictions += stripes_[i].evictions.get();
    }
    return s;
}

void ThresholdTable::export_stats(StatsSnapshot& out) const {
    ThresholdStats s = stats();
    out.add("detect.threshold.entries", s.entries);
    out.add("detect.threshold.evictions", s.evictions);
}

}  // namespace picket::sensor::detect
