// Sessions: creation under the session memcap (reclaiming half-open ones), the overlap
// policy per receiver, and the tracker's per-flow API outside the packet path.
#include "sensor/stream/stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <new>

#include "sensor/stream/internal.h"

namespace picket::sensor::stream {

Splitter::~Splitter() = default;

// The tag stored in Flow::user for flows that are deliberately not tracked (seen mid-stream
// with midstream off): no memory, and later packets skip session creation cheaply.
Session g_untracked;
Session g_reclaimed;

Policy StreamTracker::Impl::policy_for(const decode::Address& a) const {
    int best = -1;
    Policy pol = cfg.policy;
    for (const PolicyNet& n : cfg.policies) {
        if (static_cast<int>(n.prefix_len) > best && prefix_match(n, a)) {
            best = n.prefix_len;
            pol = n.policy;
        }
    }
    return pol;
}

void StreamTracker::Impl::list_append(Session* s) {
    s->older = newest;
    s->newer = nullptr;
    (newest == nullptr ? oldest : newest->newer) = s;
    newest = s;
    s->listed = true;
}

void StreamTracker::Impl::list_unlink(Session* s) {
    (s->older == nullptr ? oldest : s->older->newer) = s->newer;
    (s->newer == nullptr ? newest : s->newer->older) = s->older;
    s->older = s->newer = nullptr;
    s->listed = false;
}

// Frees the oldest session still in syn_sent. False when there is none.
bool StreamTracker::Impl::reclaim_half_open() {
    while (oldest != nullptr) {
        Session* s = oldest;
        list_unlink(s);
        if (s->state != SessionState::kSynSent) {
            continue;  // established or closing: never reclaimed, no longer listed
        }
        const bool had_data = s->half[0].delivered != 0 || s->half[1].delivered != 0;
        SessionSlot::set(*s->flow, had_data ? &g_reclaimed : &g_untracked);
        free_buffers(s->half[0]);
        free_buffers(s->half[1]);
        delete s;
        memuse -= sizeof(Session);
        c.memuse.set(memuse);
        ++c.ssn_memcap_reclaimed;
        return true;
    }
    return false;
}

bool StreamTracker::Impl::starts_session(const decode::Packet& p) const {
    const uint8_t fl = p.tcp_flags;
    // In Suricata's order: RST, FIN, SYN/ACK, SYN, ACK; anything else starts nothing.
    if ((fl & kRst) != 0) {
        return false;
    }
    if ((fl & kFin) != 0) {
        return cfg.midstream && p.payload_len > 0;
    }
    if ((fl & (kSyn | kAck)) == (kSyn | kAck)) {
        return cfg.midstream || cfg.async_oneside;
    }
    if ((fl & kSyn) != 0) {
        return true;
    }
    return (fl & kAck) != 0 && cfg.midstream;
}

uint32_t StreamTracker::Impl::no_session_events(const decode::Packet& p) const {
    if ((p.tcp_flags & kRst) != 0) {
        return kEventRstNoSession;
    }
    if ((p.tcp_flags & kFin) != 0 && (!cfg.midstream || p.payload_len == 0)) {
        return kEventFinNoSession;
    }
    return 0;
}

Session* StreamTracker::Impl::create(const decode::Packet& p, flow::Flow& f, flow::Direction dir,
                                     StreamUpdate& u) {
    const uint8_t fl = p.tcp_flags;
    const bool syn = (fl & kSyn) != 0 && (fl & (kRst | kFin)) == 0;
    const bool ack = (fl & kAck) != 0;
    const bool pure_syn = syn && !ack;
    if (!starts_session(p)) {
        if (!cfg.midstream) {
            // Only a SYN (or, with async_oneside, a SYN/ACK) can start this flow's session
            // now: later packets are turned away with one compare.
            SessionSlot::set(f, &g_untracked);
        }
        u.events |= kEventNotTracked | no_session_events(p);
        return nullptr;
    }
    while (memuse + sizeof(Session) > cfg.memcap && reclaim_half_open()) {
    }
    if (memuse + sizeof(Session) > cfg.memcap) {
        ++c.ssn_memcap_drop;
        u.events |= kEventSessionMemcap | kEventNotTracked;
        return nullptr;
    }
    auto* s = new (std::nothrow) Session;
    if (s == nullptr) {
        ++c.ssn_memcap_drop;
        u.events |= kEventSessionMemcap | kEventNotTracked;
        return nullptr;
    }
    memuse += sizeof(Session);
    c.memuse.set(memuse);
    ++c.sessions;
    SessionSlot::set(f, s);
    s->flow = &f;
    list_append(s);
    const int d = idx(dir);
    const int o = 1 - d;
    Half& h = s->half[d];
    Half& r = s->half[o];
    h.policy = policy_for(p.dst);
    r.policy = policy_for(p.src);
    s->client = static_cast<uint8_t>(d);
    if (pure_syn) {
        s->state = SessionState::kSynSent;
        h.base_seq = p.tcp_seq + 1;
        h.known = true;
        s->wscale[d] = p.tcp_wscale;
        return s;
    }
    ++c.midstream_pickups;
    u.events |= kEventMidstream;
    // Window scaling was negotiated on a handshake we did not see: assume the largest, so
    // the window check never rejects what the hosts accepted.
    s->shift[0] = s->shift[1] = kMaxWscale;
    if (syn) {  // SYN/ACK: the sender is the server
        s->state = SessionState::kSynRecv;
        s->client = static_cast<uint8_t>(o);
        s->synack_pickup = true;
        h.base_seq = p.tcp_seq + 1;
        h.known = true;
        r.base_seq = p.tcp_ack;
        r.known = true;
        r.last_ack = p.tcp_ack;
        r.rwnd = p.tcp_window;  // never scaled on a SYN (RFC 7323 2.2)
        r.ack_known = true;
        return s;
    }
    s->state = SessionState::kEstablished;
    h.base_seq = p.tcp_seq;
    h.known = true;
    if (ack) {
        r.base_seq = p.tcp_ack;
        r.known = true;
    }
    return s;
}

StreamTracker::StreamTracker(const StreamConfig& config)
    : impl_(std::make_unique<Impl>(config, counters_)) {}

StreamTracker::~StreamTracker() = default;

void StreamTracker::release_flow(flow::Flow& f) {
    Session* slot = SessionSlot::get(f);
    SessionSlot::set(f, nullptr);
    if (slot == nullptr || untracked(slot)) {
        return;
    }
    auto* s = static_cast<Session*>(slot);
    if (s->listed) {
        impl_->list_unlink(s);
    }
    impl_->free_buffers(s->half[0]);
    impl_->free_buffers(s->half[1]);
    delete s;
    impl_->memuse -= sizeof(Session);
    counters_.memuse.set(impl_->memuse);
}

bool StreamTracker::set_splitter(flow::Flow& f, Splitter* sp) {
    Session* slot = SessionSlot::get(f);
    if (slot == nullptr || untracked(slot)) {
        return false;
    }
    auto* s = static_cast<Session*>(slot);
    s->splitter = sp;
    s->half[0].splitter_aborted = false;
    s->half[1].splitter_aborted = false;
    return true;
}

void StreamTracker::trigger_raw(flow::Flow& f, flow::Direction dir) {
    Session* slot = SessionSlot::get(f);
    if (slot == nullptr || untracked(slot)) {
        return;
    }
    static_cast<Session*>(slot)->half[static_cast<int>(dir)].raw_trigger = true;
}

void StreamTracker::set_keep_tail(uint32_t bytes) {
    impl_->keep = std::min(bytes, impl_->cfg.chunk_size);
}

uint32_t StreamTracker::keep_tail() const {
    return impl_->keep;
}

SessionState StreamTracker::state(const flow::Flow& f) const {
    Session* slot = SessionSlot::get(f);
    if (slot == nullptr || untracked(slot)) {
        return SessionState::kNone;
    }
    return static_cast<const Session*>(slot)->state;
}

size_t StreamTracker::session_bytes() {
    return sizeof(Session);
}

Policy StreamTracker::policy_for(const decode::Address& dst) const {
    return impl_->policy_for(dst);
}

const char* state_name(SessionState s) {
    // By SessionState value.
    static constexpr const char* kNames[] = {"none",        "syn_sent", "syn_recv",
                                             "established", "closing",  "closed"};
    const auto i = static_cast<size_t>(s);
    return i < std::size(kNames) ? kNames[i] : "?";
}

void StreamTracker::export_stats(StatsSnapshot& out) const {
    static constexpr struct {
        const char* name;
        Counter StreamCounters::*counter;
    } kStats[] = {
        {"tcp.sessions", &StreamCounters::sessions},
        {"tcp.ssn_memcap_drop", &StreamCounters::ssn_memcap_drop},
        {"tcp.ssn_memcap_reclaimed", &StreamCounters::ssn_memcap_reclaimed},
        {"tcp.reassembly_memcap_no_tail", &StreamCounters::memcap_no_tail},
        {"tcp.segment_memcap_drop", &StreamCounters::segment_memcap_drop},
        {"tcp.reassembly_gap", &StreamCounters::reassembly_gap},
        {"tcp.overlap", &StreamCounters::overlap},
        {"tcp.overlap_diff_data", &StreamCounters::overlap_diff_data},
        {"tcp.midstream_pickups", &StreamCounters::midstream_pickups},
        {"tcp.invalid_checksum", &StreamCounters::invalid_checksum},
        {"tcp.retransmissions", &StreamCounters::retransmissions},
        {"tcp.out_of_window", &StreamCounters::out_of_window},
        {"tcp.reassembly_depth_reached", &StreamCounters::reassembly_depth_reached},
        {"tcp.rst_invalid", &StreamCounters::rst_invalid},
        {"tcp.memuse", &StreamCounters::memuse},
        {"tcp.reassembly_memuse", &StreamCounters::reassembly_memuse},
    };
    for (const auto& s : kStats) {
        out.add(s.name, (counters_.*s.counter).get());
    }
}

}  // namespace picket::sensor::stream
