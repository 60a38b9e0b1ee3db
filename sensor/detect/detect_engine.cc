// DetectWorker: the per-packet and per-transaction match loop (worker threads). The engine it
// reads (engine_impl.h) is built by engine_build.cc and engine_prefilter.cc; the overview of
// both halves stays here, next to the loop that depends on it.
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
#include "sensor/detect/detect.h"

#include <hs/hs.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "sensor/detect/engine_impl.h"
#include "sensor/detect/rule_profile.h"
#include "sensor/detect/transform.h"

namespace picket::sensor::detect {

// ---------------------------------------------------------------------------------------

struct WorkerFlowState::Impl {
    std::shared_ptr<FlowbitRegistry> registry;
    FlowbitPool pool;
    // The packet variables of the packet being inspected (pktvar, pcre pkt_ captures): one
    // scratch set per worker, cleared when a packet's inspection starts (InspectExtras::
    // vars_open), read by the alerts of that packet.
    VarSet pkt_vars;

    explicit Impl(std::shared_ptr<FlowbitRegistry> r)
        : registry(std::move(r)), pool(FlowbitPool::bits_for(registry ? registry->size() : 0)) {}
};

WorkerFlowState::WorkerFlowState(std::shared_ptr<FlowbitRegistry> registry)
    : impl_(new Impl(std::move(registry))) {}
WorkerFlowState::~WorkerFlowState() = default;

const VarSet* WorkerFlowState::packet_vars() const {
    return &impl_->pkt_vars;
}

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
    std::string xform;      // a transformed buffer (reused)
    std::string xform_tmp;  // the transforms' second buffer (reused)
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
        for (hs_database_t* db : {part.db, part.pkt_db}) {
            if (db != nullptr && hs_alloc_scratch(db, &scratch_->hs) != HS_SUCCESS) {
                throw std::runtime_error("hyperscan: cannot allocate scratch");
            }
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
    const std::vector<uint32_t>& rules = (*sc->pattern_rules)[id];
    if (rules.empty()) {
        return 0;  // another part's pattern (a shared database)
    }
    // A pattern's rules are marked all at once, and by it alone (a rule has one fast pattern
    // and is in one part of the packet's group): a repeat of the pattern in this scan has
    // nothing to add. The stream databases report every match (a run of "AAAA" in a mail
    // body is thousands), so this is most of their callbacks.
    if (sc->stream_hit != nullptr) {
        if (to <= sc->min_end || (*sc->stream_hit)[rules.front()] != 0) {
            return 0;
        }
        for (uint32_t ri : rules) {
            (*sc->stream_hit)[ri] = 1;
        }
    } else if ((*sc->seen)[rules.front()] != 0) {
        return 0;
    }
    add_candidates(rules, sc->candidates, sc->seen);
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
[[gnu::always_inline]] inline bool addresses_match(const Rule& r, const decode::Packet& p,
                                                   AppProto app) {
    if (r.service_or_ports && app == r.proto.app) {
        // Identified as the rule's service: the header's ports do not matter (Rule).
        return (r.src.contains(p.src) && r.dst.contains(p.dst)) ||
               (r.bidirectional && r.src.contains(p.dst) && r.dst.contains(p.src));
    }
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
    if (r.proto.app != AppProto::kUnknown && r.proto.app != app && !r.service_or_ports) {
        return false;
    }
    return true;
}

}  // namespace

static uint8_t to_lower_ascii(uint8_t c) {
    return c >= 'A' && c <= 'Z' ? static_cast<uint8_t>(c + 32) : c;
}

// Whether pat[0, m) occurs starting in [from, to) of data (nocase: ASCII letters either case).
static bool occurs_in(const uint8_t* pat, uint32_t m, bool nocase, const uint8_t* data,
                      uint32_t from, uint32_t to) {
    for (uint32_t at = from; at + m <= to; ++at) {
        uint32_t k = 0;
        while (k < m && (nocase ? to_lower_ascii(data[at + k]) == to_lower_ascii(pat[k])
                                : data[at + k] == pat[k])) {
            ++k;
        }
        if (k == m) {
            return true;
        }
    }
    return false;
}

// Whether pat occurs ending in the view's new bytes (what on_hs_match's new_off test
// accepts in a stream scan): mpm-algo none's stand-in for the stream prefilter, and the
// bounded patterns' stream condition.
static bool ends_in_new(const std::string& pat, bool nocase, const StreamView& sv) {
    const auto m = static_cast<uint32_t>(pat.size());
    if (m == 0 || m > sv.len) {
        return false;
    }
    const uint32_t first = sv.new_off >= m ? sv.new_off - m + 1 : 0;
    return occurs_in(reinterpret_cast<const uint8_t*>(pat.data()), m, nocase, sv.data, first,
                     sv.len);
}

namespace {

// The three scans of inspect_packet, out of line so that profiles tell them apart.
[[gnu::noinline]] void scan_payload(const hs_database_t* db, const decode::Packet& p,
                                    hs_scratch_t* hs, ScanContext* sc) {
    hs_scan(db, reinterpret_cast<const char*>(p.payload), p.payload_len, 0, hs, on_hs_match, sc);
}
[[gnu::noinline]] void scan_stream(const hs_database_t* db, const uint8_t* data, uint32_t len,
                                   hs_scratch_t* hs, ScanContext* sc) {
    hs_scan(db, reinterpret_cast<const char*>(data), len, 0, hs, on_hs_match, sc);
}
[[gnu::noinline]] void scan_app_buffer(const hs_database_t* db, std::string_view buf,
                                       hs_scratch_t* hs, ScanContext* sc) {
    hs_scan(db, buf.data(), static_cast<unsigned>(buf.size()), 0, hs, on_hs_match, sc);
}

// Calls found(pattern index) for each of the part's bounded patterns that lies in its bytes
// [lo, hi) of data[0, len), once per place where it does (BoundedProbe).
template <typename Found>
[[gnu::always_inline]] inline void bounded_lookup(const Part& part, const uint8_t* data,
                                                  uint32_t len, Found found) {
    for (const BoundedProbe& probe : part.bounded_probes) {
        if (probe.min_end > len) {
            if (probe.pos >= len) {
                break;  // ascending pos
            }
            continue;
        }
        const uint8_t c = data[probe.pos];
        if ((probe.first_bytes[c >> 6] & (1ull << (c & 63))) == 0) {
            continue;
        }
        for (uint32_t k = probe.first; k < probe.first + probe.count; ++k) {
            const BoundedPattern& b = part.bounded[part.bounded_at_probe[k]];
            const auto m = static_cast<uint32_t>(b.bytes.size());
            if (occurs_in(reinterpret_cast<const uint8_t*>(b.bytes.data()), m, b.nocase, data,
                          probe.pos, std::min(probe.pos + m, len))) {
                found(b);
            }
        }
    }
}

// The bounded patterns on a packet's payload: a rule is a candidate when its pattern lies
// in its bytes [lo, hi), where alone its content can match (as a database scan of the whole
// payload, less the candidates that could not match). An in-stream packet: the rules that
// still read it (Part::pkt_split).
[[gnu::noinline]] void bounded_payload(const Part& part, bool pkt_in_stream, const uint8_t* data,
                                       uint32_t len, std::vector<uint32_t>* candidates,
                                       std::vector<uint8_t>* seen) {
    bounded_lookup(part, data, len, [&](const BoundedPattern& b) {
        add_candidates(pkt_in_stream ? b.pkt_rules : b.rules, candidates, seen);
    });
}

// The bounded patterns on a stream window, to the same effect as scan_stream with them in
// the database: a rule is a stream hit when its pattern occurs ending in the new bytes. Only
// a rule whose pattern lies in the window's [lo, hi) can match, so that is looked at first.
[[gnu::noinline]] void bounded_stream(const Part& part, const StreamView& sv,
                                      std::vector<uint32_t>* candidates, std::vector<uint8_t>* seen,
                                      std::vector<uint8_t>* stream_hit) {
    bounded_lookup(part, sv.data, sv.len, [&](const BoundedPattern& b) {
        if ((*stream_hit)[b.rules.front()] != 0) {
            return;  // found at another place of [lo, hi) already
        }
        if (!ends_in_new(b.bytes, b.nocase, sv)) {
            return;
        }
        for (uint32_t ri : b.rules) {
            (*stream_hit)[ri] = 1;
        }
        add_candidates(b.rules, candidates, seen);
    });
}

}  // namespace

template <bool kProfile>
uint32_t DetectWorker::inspect_packet(const decode::Packet& p, flow::Flow* f, flow::Direction dir,
                                      AlertRecord* out, uint32_t out_cap,
                                      const InspectExtras* extras, const AppView* view,
                                      TxAlertLog* log) {
    const auto& d = engine_->impl();
    VarSet& pkt_vars = flow_state_->impl().pkt_vars;
    if (extras == nullptr || !extras->vars_open) {
        pkt_vars.clear();  // a new packet: its variables start empty
        if (extras != nullptr) {
            extras->vars_open = true;
        }
    }
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
    const bool no_payload = extras != nullptr && extras->no_payload;
    if (no_payload) {
        stream = nullptr;
    }
    const bool stream_only = extras != nullptr && extras->stream_only;
    const bool unacked_end = extras != nullptr && extras->unacked_end;
    const bool pdu = extras != nullptr && extras->snort3_pdu && stream != nullptr;
    const bool pdu_dir = extras != nullptr && extras->snort3_pdu_dir;
    // Suricata's IP-only rules (header only) are matched on the first packet of each direction
    // of a flow, and on every packet that has no flow.
    const bool ip_only_now = f == nullptr || f->pkts[static_cast<int>(dir)] <= 1;
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
            if (part.ip_only && ip_only_now) {
                add_ip_only_candidates(part, p, &s.acl_matches, &s.candidates, &s.seen);
            }
            // A packet whose data went into the stream: only the patterns of the rules that
            // still read its payload (Part::pkt_split).
            const bool split = pkt_in_stream && part.pkt_split;
            hs_database_t* pkt_db = split ? part.pkt_db : part.db;
            if (pkt_db != nullptr && p.payload_len > 0 && !no_payload) {
                ScanContext sc{split ? &part.pkt_pattern_rules : &part.pattern_rules, &s.candidates,
                               &s.seen};
                scan_payload(pkt_db, p, s.hs, &sc);
            }
            if (!part.bounded.empty() && p.payload_len > 0 && !no_payload) {
                bounded_payload(part, pkt_in_stream, p.payload, p.payload_len, &s.candidates,
                                &s.seen);
            }
            if (part.db != nullptr && stream != nullptr) {
                // Only the new bytes and the tail a pattern may straddle from.
                uint32_t from =
                    stream->new_off > part.max_pattern ? stream->new_off - part.max_pattern : 0;
                ScanContext sc{&part.pattern_rules, &s.candidates, &s.seen, stream->new_off - from,
                               &s.stream_hit};
                scan_stream(part.db, stream->data + from, stream->len - from, s.hs, &sc);
            }
            if (!part.bounded.empty() && stream != nullptr) {
                bounded_stream(part, *stream, &s.candidates, &s.seen, &s.stream_hit);
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
            buf = apply_transforms(adb.transforms, buf, &s.xform, &s.xform_tmp);
            if (buf.empty()) {
                continue;
            }
            ScanContext sc{&adb.pattern_rules, &s.candidates, &s.seen};
            scan_app_buffer(adb.db, buf, s.hs, &sc);
        }
    }
    counters().prefilter_candidates += s.candidates.size();
    std::sort(s.candidates.begin(), s.candidates.end());

    FlowbitStore* bits = flowbits_of(f);
    // stream_size: the flow's TCP sequence numbers, tracked once a stream_size rule was loaded.
    if (f != nullptr && p.has(decode::kFlagTcp) && d.flowbits != nullptr &&
        d.flowbits->tcp_seq_wanted() && (extras == nullptr || !extras->stream_only)) {
        bits = flowbits_acquire(*f, flow_state_->impl().pool);
        if (bits != nullptr) {
            tcp_seq_note(bits->tcp, p, dir);
        }
    }
    PacketContext pc;
    pc.p = &p;
    pc.flow = f;
    pc.dir = dir;
    pc.established = f != nullptr && f->pkt_established;
    const bool established = pc.established;
    const bool snort3_established = established || (f != nullptr && f->pkt_midstream);
    pc.flowbits = bits;
    pc.pkt_vars = &pkt_vars;
    pc.app = view != nullptr ? view->proto : (extras != nullptr ? extras->app : AppProto::kUnknown);
    pc.view = view;

    // One pass of a rule's options: header options, then each buffer (the packet payload or
    // the stream window for pkt_data, the transaction's buffers otherwise).
    auto options_match = [&](const Rule& r, const uint8_t* pkt, uint32_t pkt_len) {
        pc.data = pkt;
        pc.data_len = pkt_len;
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
            buf = apply_transforms(bm.transforms, buf, &s.xform, &s.xform_tmp);
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
        if (r.ip_only && !ip_only_now) {
            continue;  // IP-only: the direction's first packet only (mpm none, over budget)
        }
        if (no_payload && r.packet_buffer) {
            continue;  // InspectExtras::no_payload
        }
        if (r.pd_only && (extras == nullptr || !extras->proto_detect_pkt)) {
            continue;  // protocol-detection-only: where the direction's detection finished
        }
        if (log != nullptr && log->seen(view->tx_id, r.sid)) {
            continue;  // this transaction already alerted on this rule
        }
        if (view != nullptr && unacked_end && r.syntax == RuleSyntax::kSnort3) {
            continue;  // InspectExtras::unacked_end
        }
        // Snort 3 PDUs: a Snort 3 rule that reads the stream sees each PDU whole (Snort 3's
        // rebuilt packet), nothing else does; on a direction cut into PDUs, one with
        // flow:only_stream sees the PDUs only, not Picket's raw chunks.
        const bool pdu_rule =
            r.syntax == RuleSyntax::kSnort3 && r.stream_capable && view == nullptr;
        if (pdu ? !pdu_rule : pdu_dir && pdu_rule && (r.flow_flags & kFlowOnlyStream) != 0) {
            continue;
        }
        // Suricata: a packet whose data went into the stream is not matched by stream-capable
        // rules; they see its bytes when the raw stream is inspected. Without a stream view
        // to try, such a candidate (found in the payload) cannot match: not a check.
        //
        // Snort 3 (a Snort 3 rule): every packet's payload is inspected as it arrives, and the
        // reassembled stream only by rules with flow:only_stream, so a rule alerts once per
        // packet that holds its match and the stream does not repeat it.
        const bool snort3_packets =
            r.syntax == RuleSyntax::kSnort3 && (r.flow_flags & kFlowOnlyStream) == 0 && !pdu;
        const bool skip_payload = (pkt_in_stream && r.stream_capable && !snort3_packets) || pdu;
        const bool unindexed = stream != nullptr && r.stream_capable && !r.stream_prefiltered;
        const bool ref_hit =
            stream != nullptr && !d.ref_stream_fps.empty() && r.stream_prefiltered &&
            ends_in_new(d.ref_stream_fps[ri].bytes, d.ref_stream_fps[ri].nocase, *stream);
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
        if (!proto_matches(r, p, pc.app) || !addresses_match(r, p, pc.app)) {
            continue;
        }
        pc.from_stream = false;
        pc.established = r.syntax == RuleSyntax::kSnort3 ? snort3_established : established;
        bool ok =
            !r.proto.tcp_stream_only && !skip_payload && options_match(r, p.payload, p.payload_len);
        // The stream is tried when its prefilter found the rule's pattern in the new bytes;
        // a transaction's rule with raw content options (no prefilter ran on the stream for
        // it) tries it too (the packet carrying its bytes may be an earlier one, or none: a
        // pseudo packet at the flow's end); so does a stream-capable rule that no prefilter
        // indexes, as Suricata checks its non-prefilter rules on every stream chunk.
        if (!ok && ((stream_hit && !snort3_packets) || tx_stream) && !r.proto.tcp_pkt_only) {
            pc.from_stream = true;
            ok = r.syntax == RuleSyntax::kSnort3 && !tx_stream
                     ? options_match(r, stream->data + stream->new_off,
                                     stream->len - stream->new_off)
                     : options_match(r, stream->data, stream->len);
        } else if (!ok && unindexed && !snort3_packets && !r.proto.tcp_pkt_only) {
            // No pattern tells where it matched: the new bytes only, so that bytes already
            // inspected do not alert again.
            pc.from_stream = true;
            ok = options_match(r, stream->data + stream->new_off, stream->len - stream->new_off);
        }
        if (!ok) {
            continue;
        }
        // flowint runs on the flow's values once the other options matched, in rule order: a
        // comparison that fails stops the rule and the modifiers before it stay applied.
        if (!r.flowints.empty()) {
            if (f == nullptr) {
                continue;
            }
            bits = flowbits_acquire(*f, flow_state_->impl().pool);
            pc.flowbits = bits;
            if (bits == nullptr || !run_flowints(r.flowints, bits->ints)) {
                continue;
            }
        }
        if constexpr (kProfile) {
            timed_matched = true;  // every option matched, whatever thresholds decide
        }
        if (log != nullptr) {
            log->add(view->tx_id, r.sid);
        }
        // Thresholds decide first: kNone means "as if the rule had not matched" (threshold
        // below its count, detection_filter not reached), so its flowbits do not apply either.
        // A rate_filter may give the match another action (new_action) for a while.
        ThresholdResult tr = ThresholdResult::kAlert;
        Action action = r.action;
        if (r.action != Action::kPass && d.thresholds->applies(r)) {
            tr = d.thresholds->check(r, p.src, p.dst, p.ts_ns, f != nullptr ? f->flow_id : 0,
                                     &action);
            if (tr == ThresholdResult::kNone) {
                continue;
            }
        }
        // pcre captures into variables, like flowbits, once the rule matched.
        if (!r.var_captures.empty()) {
            VarSet* flow_vars = nullptr;
            bool wants_flow = false;
            for (size_t i = 0; i < r.var_captures.size(); ++i) {
                wants_flow = wants_flow || (r.var_captures[i].scope == VarScope::kFlow &&
                                            s.payload->cap_len[i] >= 0);
            }
            if (f != nullptr && wants_flow) {
                bits = flowbits_acquire(*f, flow_state_->impl().pool);
                pc.flowbits = bits;
                if (bits != nullptr) {
                    flow_vars = flow_state_->impl().pool.vars_of(*bits);
                }
            }
            counters().vars_dropped += store_captures(r, *s.payload, flow_vars, &pkt_vars);
        }
        // Flowbit actions apply whether or not the rule alerts.
        if (f != nullptr && has_flowbit_actions(r)) {
            bits = flowbits_acquire(*f, flow_state_->impl().pool);
            pc.flowbits = bits;
            if (bits != nullptr) {
                apply_flowbit_actions(r, *bits);
            }
        }
        if (has_xbit_actions(r)) {
            // track tx bits go on the transaction this match is on (none for a packet rule).
            if (view != nullptr && f != nullptr && has_tx_xbit_sets(r)) {
                bits = flowbits_acquire(*f, flow_state_->impl().pool);
                pc.flowbits = bits;
            }
            apply_xbit_actions(r, p, view != nullptr ? bits : nullptr, view);
        }
        if (!r.tags.empty()) {
            apply_tags(r, p, f, flow_state_->impl().pool);  // tag.h: the packets that follow
        }
        // Suricata applies a drop or pass to the flow for these matches, else to the packet:
        // a transaction or stream match, an IP-only rule, an app-layer rule with no packet
        // condition (alert http any any -> any any (...);, Suricata's app_layer type; with
        // dsize, say, it is a packet rule).
        const bool app_only = r.proto.app != AppProto::kUnknown && r.buffers.empty() &&
                              r.header_options.empty() && r.flow_flags == 0;
        // Inline (IPS), an established session's packet data is inspected as part of its stream
        // (Suricata's inline stream): a stream-capable rule's match there is a stream match.
        const bool inline_stream = stream != nullptr && !stream_only && established &&
                                   r.stream_capable && r.syntax != RuleSyntax::kSnort3;
        const bool flow_scope = view != nullptr || pc.from_stream || inline_stream || r.ip_only ||
                                r.pd_only || app_only;
        if (action == Action::kPass) {
            // A pass rule (or a rate_filter's new_action pass) ends the packet's inspection:
            // the rules after it in the evaluation order (the actions after pass in the
            // action-order) are not checked, and their alerts are gone. The alerts of the rules
            // before it stand (none with the default order, where pass comes first).
            passed = true;
            if (extras != nullptr) {
                extras->passed = true;
                extras->pass_flow = extras->pass_flow || flow_scope;
                const uint8_t rp = d.action_rank[static_cast<size_t>(Action::kPass)];
                if (rp < d.action_rank[static_cast<size_t>(Action::kDrop)]) {
                    extras->silent_drop = extras->silent_reject;  // a reject may still stand
                }
                if (rp < d.action_rank[static_cast<size_t>(Action::kReject)]) {
                    extras->silent_reject = false;
                    extras->silent_reject_to = RejectTo::kNone;
                    if (rp < d.action_rank[static_cast<size_t>(Action::kDrop)]) {
                        extras->silent_drop = false;
                        extras->silent_drop_flow = false;
                        extras->silent_drop_rule = InspectExtras::kNoSilentRule;
                    }
                }
            }
            continue;
        }
        if (r.noalert) {
            // No alert, but the action stands: an IPS drops with "drop ... noalert;".
            if (extras != nullptr && (action == Action::kDrop || action == Action::kReject)) {
                extras->silent_drop = true;
                extras->silent_drop_flow = extras->silent_drop_flow || flow_scope;
                if (extras->silent_drop_rule == InspectExtras::kNoSilentRule) {
                    extras->silent_drop_rule = r.index;
                }
                extras->silent_reject = extras->silent_reject || action == Action::kReject;
                if (action == Action::kReject) {
                    extras->silent_reject_to =
                        static_cast<RejectTo>(static_cast<uint8_t>(extras->silent_reject_to) |
                                              static_cast<uint8_t>(r.reject_to));
                }
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
            out[n].drop_rule = action == Action::kDrop || action == Action::kReject;
            out[n].rule_action = action;
            out[n].reject_to = r.reject_to;
            out[n].action = AlertAction::kAllowed;
            out[n].tx_id = view != nullptr ? view->tx_id : 0;
            out[n].from_stream = pc.from_stream;
            out[n].flow_scope = flow_scope;
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
        std::sort(out, out + n, [&d](const AlertRecord& a, const AlertRecord& b) {
            const int ra = d.action_rank[static_cast<size_t>(a.rule_action)];
            const int rb = d.action_rank[static_cast<size_t>(b.rule_action)];
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

bool DetectEngine::snort3_pdus(AppProto service) const {
    return (impl_->snort3_pdu_services >> static_cast<unsigned>(service) & 1u) != 0;
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
    out.add("detect.vars_dropped", counters_.vars_dropped.get());
}

}  // namespace picket::sensor::detect
