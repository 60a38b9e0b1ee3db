// The per-packet path: the TCP state machine (SYN/FIN/RST handling, windows, checksum),
// segment intake (in order, or held out of order under the overlap policy), the buffer
// window, and delivery (the app and raw cursors, the PDU splitter, the end of each call).
// Kept in one translation unit so that the compiler sees the whole packet path.
#include "sensor/stream/stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "sensor/stream/internal.h"

namespace picket::sensor::stream {

// Inserts [s, e) in (start, end) order; reserve_held() must have succeeded.
void StreamTracker::Impl::add_held(Half& h, uint64_t s, uint64_t e) {
    uint32_t lo = 0, hi = h.nheld;
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        const Held& m = h.held[mid];
        if (m.start < s || (m.start == s && m.end <= e)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (lo > 0 && h.held[lo - 1].start == s && h.held[lo - 1].end == e) {
        return;  // an exact duplicate adds nothing to the overlap rules
    }
    std::memmove(h.held + lo + 1, h.held + lo, (h.nheld - lo) * sizeof(Held));
    h.held[lo] = Held{s, e};
    ++h.nheld;
    h.max_held_len = std::max(h.max_held_len, e - s);
    h.held_end = std::max(h.held_end, e);
}

// Forgets held segments wholly delivered.
void StreamTracker::Impl::prune_held(Half& h) {
    uint32_t out = 0;
    for (uint32_t i = 0; i < h.nheld; ++i) {
        if (h.held[i].end > h.delivered) {
            h.held[out++] = h.held[i];
        }
    }
    h.nheld = out;
    if (out == 0) {
        h.max_held_len = 0;
        h.held_end = 0;
    }
}

// Delivers the next contiguous run (skipping one hole if the gap rule allows).
bool StreamTracker::Impl::deliver_one(Half& h, StreamChunk& ch) {
    if (!can_deliver(h)) {
        return false;
    }
    uint64_t gap = 0;
    uint64_t start = h.delivered;
    if (!h.bit(start)) {
        const uint64_t np = h.held[0].start;
        gap = np - start;
        if (cfg.app_on_ack) {
            h.app.gap_at = start;  // == app.done: can_deliver() waited for the app layer
            h.app.gap_len = gap;
        }
        if (raw_ack(h)) {
            h.raw.gap_at = start;  // == raw.done, likewise
            h.raw.gap_len = gap;
        }
        h.delivered = np;
        h.tail_start = np;
        start = np;
        ++c.reassembly_gap;
    }
    const uint64_t end = next_clear(h, start);
    h.delivered = end;
    fill_from_buffer(h, ch, start, end, gap);
    prune_held(h);
    return true;
}

// The data of one segment sent by half h. Delivers into ch what became contiguous.
void StreamTracker::Impl::handle_data(Half& h, const decode::Packet& p, uint32_t seq,
                                      StreamChunk& ch, StreamUpdate& u) {
    if (h.depth_reached && h.delivered >= cfg.reassembly_depth) {
        return;
    }
    const uint8_t* data = p.payload;
    uint32_t len = p.payload_len;
    int64_t so = h.off_of(seq);
    if (so < 0) {  // part before the stream's first byte (SYN data retransmitted)
        if (-so >= static_cast<int64_t>(len)) {
            return;
        }
        data += -so;
        len -= static_cast<uint32_t>(-so);
        so = 0;
    }
    // Window: a segment starting past the receiver's right edge is not accepted by it.
    if (h.ack_known && static_cast<int32_t>(seq - (h.last_ack + h.rwnd)) > 0) {
        ++c.out_of_window;
        u.events |= kEventOutOfWindow;
        return;
    }
    const uint64_t s0 = static_cast<uint64_t>(so);
    uint64_t e = s0 + len;
    uint64_t limit = UINT64_MAX;
    if (cfg.reassembly_depth != 0) {
        limit = cfg.reassembly_depth;
        if (e > limit) {
            u.events |= kEventDepthReached;
            if (!h.depth_reached) {
                h.depth_reached = true;
                ++c.reassembly_depth_reached;
            }
        }
    }
    if (h.fin) {
        limit = std::min(limit, h.fin_off);  // data after the FIN is not part of the stream
    }
    e = std::min(e, limit);
    if (e <= s0) {
        return;
    }
    if (raw_ack(h)) {
        u.events |= kEventStreamAdd;  // cleared again if the segment cannot be kept
    }
    bool overlapped = false;
    bool diff = false;
    if (e <= h.delivered || s0 < h.delivered) {
        // Compare what is still in the tail: a retransmission carrying other bytes is the
        // classic evasion signal.
        const uint64_t from = std::max({s0, h.buf != nullptr ? h.tail_start : h.delivered,
                                        h.buf != nullptr ? h.buf_base : h.delivered});
        const uint64_t to = std::min(e, h.delivered);
        if (from < to &&
            std::memcmp(data + (from - s0), h.buf + (from - h.buf_base), to - from) != 0) {
            diff = true;
        }
    }
    if (e <= h.delivered) {
        ++c.retransmissions;
        u.events |= kEventRetransmission;
        count_overlap(false, diff, u);
        return;
    }
    const uint64_t a = std::max(s0, h.delivered);
    overlapped = s0 < h.delivered;
    const uint8_t* src = data + (a - s0);
    const uint64_t n = e - a;

    if (h.nheld == 0 && a == h.delivered) {
        // In order, nothing held: the common case.
        count_overlap(overlapped, diff, u);
        if (keep == 0 && !cfg.app_on_ack && !cfg.raw_on_ack) {
            from_packet(h, ch, src, a, e);
            return;
        }
        if (!ensure(h, e)) {
            // Reassembly memcap reached (e.g. a flood of out-of-order segments on other
            // sessions): in-order data that the receiver accepts is still handed over,
            // straight from the packet as with keep_tail 0, instead of being dropped and
            // later skipped as a gap. Only a match straddling the previous segment can be
            // missed; counted in tcp.reassembly_memcap_no_tail.
            ++c.memcap_no_tail;
            from_packet(h, ch, src, a, e);
            if (cfg.app_on_ack) {
                // Not kept: the app layer takes it now, unacknowledged (after what it
                // was still owed), rather than never.
                h.app.pkt = src;
                h.app.pkt_len = static_cast<uint32_t>(n);
                h.app.pkt_off = a;
            }
            if (raw_ack(h)) {
                h.raw.pkt = src;  // likewise for raw inspection
                h.raw.pkt_len = static_cast<uint32_t>(n);
                h.raw.pkt_off = a;
            }
            return;
        }
        std::memcpy(h.buf + (a - h.buf_base), src, n);
        h.delivered = e;
        fill_from_buffer(h, ch, a, e, 0);
        return;
    }

    if (n > kScratchBytes || !ensure(h, e) || !reserve_held(h)) {
        ++c.segment_memcap_drop;
        u.events = (u.events | kEventSegmentMemcap) & ~uint32_t{kEventStreamAdd};
        return;
    }
    // Overlap resolution (Suricata's DoHandleData): start from the new bytes; for every
    // held segment whose rule keeps the old data, copy the held bytes back over the
    // intersection. A byte therefore takes the new value only if every held segment
    // covering it yields. Offsets below `delivered` are final and never rewritten. Every
    // byte of a held segment at or past `delivered` is in the buffer.
    uint8_t* tmp = scratch;
    std::memcpy(tmp, src, n);
    const Policy pol = h.policy;
    const bool old_wins_always = cfg.inline_mode;  // IPS: what was forwarded stands
    // Held segments starting before lo_start end before s0 (none is longer).
    const uint64_t lo_start = s0 >= h.max_held_len ? s0 - h.max_held_len : 0;
    uint32_t lo = 0, hi = h.nheld;
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (h.held[mid].start < lo_start) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    for (uint32_t i = lo; i < h.nheld && h.held[i].start < e; ++i) {
        const Held& r = h.held[i];
        const uint64_t ia = std::max(r.start, a);
        const uint64_t ib = std::min(r.end, e);
        if (ia >= ib) {
            continue;
        }
        overlapped = true;
        const uint8_t* old = h.buf + (ia - h.buf_base);
        if (!diff && std::memcmp(tmp + (ia - a), old, ib - ia) != 0) {
            diff = true;
        }
        if (old_wins_always || !new_data_wins(pol, s0, e, r.start, r.end)) {
            std::memcpy(tmp + (ia - a), old, ib - ia);
        }
    }
    add_held(h, s0, e);
    count_overlap(overlapped, diff, u);
    std::memcpy(h.buf + (a - h.buf_base), tmp, n);
    set_bits(h, a, e);
    deliver_one(h, ch);
}

bool StreamTracker::Impl::rst_acceptable(const Session& s, const Half& h, const Half& r,
                                         const decode::Packet& p) {
    if (s.state == SessionState::kSynSent) {
        // Refused connection: the RST must acknowledge the SYN.
        return (p.tcp_flags & kAck) != 0 && r.known && p.tcp_ack == r.base_seq;
    }
    if (!h.known) {
        return true;  // midstream: nothing seen from this side to check against
    }
    // RFC 793 3.4 / RFC 5961: in the receiver's window.
    const int64_t off = h.off_of(p.tcp_seq);
    if (h.ack_known) {
        const int64_t left =
            std::min<int64_t>(h.off_of(h.last_ack), static_cast<int64_t>(h.delivered));
        const int64_t right = h.off_of(h.last_ack) + std::max<uint32_t>(h.rwnd, 1);
        return off >= left && off <= right;
    }
    return off >= static_cast<int64_t>(h.delivered) - 65535 &&
           off <= static_cast<int64_t>(h.delivered) + 65535;
}

void StreamTracker::Impl::on_syn(Session& s, int d, const decode::Packet& p) {
    Half& h = s.half[d];
    Half& r = s.half[1 - d];
    const bool ack = (p.tcp_flags & kAck) != 0;
    if (!ack) {
        // SYN retransmission (possibly with a new ISN) before any answer. Once data came on
        // a SYN (TCP Fast Open), its stream keeps that ISN.
        if (s.state == SessionState::kSynSent && h.known && r.known == false && h.delivered == 0 &&
            h.nheld == 0) {
            h.base_seq = p.tcp_seq + 1;
            s.wscale[d] = p.tcp_wscale;
        }
        return;
    }
    // The SYN/ACK acknowledges the ISN + 1, or with TCP Fast Open also the SYN's data.
    if (s.state != SessionState::kSynSent || h.known || !r.known ||
        p.tcp_ack - r.base_seq > r.syn_data) {
        return;  // not an answer to our SYN
    }
    s.state = SessionState::kSynRecv;
    h.base_seq = p.tcp_seq + 1;
    h.known = true;
    s.wscale[d] = p.tcp_wscale;
    if (s.wscale[0] != 0xff && s.wscale[1] != 0xff) {
        s.shift[0] = std::min(s.wscale[0], kMaxWscale);
        s.shift[1] = std::min(s.wscale[1], kMaxWscale);
    }
    r.last_ack = p.tcp_ack;
    r.rwnd = p.tcp_window;
    r.ack_known = true;
}

bool StreamTracker::Impl::syn_sent_ack(Session& s, int d, const decode::Packet& p,
                                       StreamUpdate& u) const {
    if (!cfg.async_oneside) {
        return false;  // no event: Suricata just waits for the SYN/ACK
    }
    // One side only: the client's ACK must follow its SYN (and any SYN data) exactly.
    Half& c = s.half[s.client];
    if (d != s.client || p.tcp_seq != c.seq_of(c.delivered)) {
        u.events |= kEventAsyncWrongSeq;
        return false;
    }
    Half& sv = s.half[1 - s.client];
    if (!sv.known) {  // the ACK names the server's ISN + 1
        sv.base_seq = p.tcp_ack;
        sv.known = true;
    }
    return true;
}

bool StreamTracker::Impl::syn_recv_ack(const Session& s, int d, const decode::Packet& p,
                                       StreamUpdate& u) const {
    const Half& c = s.half[s.client];
    const Half& sv = s.half[1 - s.client];
    if (c.syn_data != 0 || sv.syn_data != 0) {
        return true;  // TCP Fast Open: the SYN/ACK already settled what was acknowledged
    }
    const bool from_client = d == s.client;
    if (!from_client && !s.synack_pickup && cfg.inline_mode) {
        // An IPS sees every packet: the server speaking before the handshake's last ACK is
        // injection, not loss.
        u.events |= kEventAckInWrongDir;
        return false;
    }
    auto after = [](uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) > 0; };
    const uint32_t seq = p.tcp_seq;
    const uint32_t ack = p.tcp_ack;
    const uint32_t c_next = c.seq_of(c.delivered);
    const uint32_t s_next = sv.seq_of(sv.delivered);
    // Suricata's StreamTcpPacketStateSynRecv, in its order.
    if (seq == c_next && ack == s_next) {
        return true;  // the handshake's ACK (or the client's first data)
    }
    if (cfg.async_oneside && seq == s_next) {
        return true;  // one side only: the server's first segment
    }
    if (seq == c_next) {
        u.events |= kEventRightSeqWrongAck;
        return false;
    }
    // The server's data after packets we missed. Suricata compares the server's sequence
    // number with the client's next one (two different sequence spaces), so whether this
    // holds depends on the ISNs; we do the same.
    if (!from_client && !cfg.inline_mode && after(seq, c_next) && after(ack, c.last_ack)) {
        return true;
    }
    // The client's data after a segment we missed, within the window the SYN/ACK gave.
    if (after(seq, c_next) && !after(seq, c.last_ack + c.rwnd) && ack == s_next) {
        return true;
    }
    // The server's first segment after a handshake ACK we missed.
    if (!from_client && !s.synack_pickup && ack == c.last_ack && seq == s_next) {
        return true;
    }
    u.events |= kEventWrongSeqWrongAck;
    return false;
}

void StreamTracker::Impl::handle_syn_data(Session& s, Half& h, const decode::Packet& p,
                                          flow::Direction dir, StreamUpdate& u) {
    // Only the SYN that set the side's ISN (a SYN with another ISN, or one the state
    // machine ignored, carries nothing of this stream).
    if (p.payload_len == 0 || !h.known || h.base_seq != p.tcp_seq + 1 ||
        (h.syn_data == 0 && (h.delivered != 0 || h.nheld != 0))) {
        return;
    }
    h.syn_data = static_cast<uint16_t>(std::min<uint32_t>(p.payload_len, UINT16_MAX));
    StreamChunk& ch = u.chunk[static_cast<int>(dir)];
    handle_data(h, p, p.tcp_seq + 1, ch, u);
    if (ch.window == nullptr && ch.gap == 0) {
        if (deliver_one(h, ch)) {
            run_splitter(s, h, dir, ch);
        }
    } else {
        run_splitter(s, h, dir, ch);
    }
}

// Frees buffers that can no longer be needed; runs at the start of a call so that the
// views handed out by the previous call stayed valid until now.
void StreamTracker::Impl::housekeeping(Session& s) {
    for (Half& h : s.half) {
        const bool depth_done = h.depth_reached && h.delivered >= cfg.reassembly_depth &&
                                h.nheld == 0 && !app_pending(h) && !raw_pending(h);
        const bool closed_done = s.state == SessionState::kClosed && !can_deliver(h) &&
                                 !app_pending(h) && !raw_pending(h);
        if ((depth_done || closed_done) && (h.cap != 0 || h.held_cap != 0 || h.pdu_cap != 0)) {
            free_buffers(h);
        } else if (h.buf != nullptr) {
            maybe_shrink(h);
        }
    }
}

StreamUpdate StreamTracker::Impl::process(const decode::Packet& p, flow::Flow& f,
                                          flow::Direction dir) {
    StreamUpdate u;
    if (!p.has(decode::kFlagTcp)) {
        u.events |= kEventNotTracked;
        return u;
    }
    Session* slot = SessionSlot::get(f);
    if (cfg.checksum_validation && p.has(decode::kFlagBadChecksum) && !tcp_checksum_ok(p)) {
        ++c.invalid_checksum;
        u.events |= kEventBadChecksum;
        if (slot != nullptr && !untracked(slot)) {
            u.state = static_cast<Session*>(slot)->state;
        }
        return u;
    }
    Session* s = nullptr;
    if (slot == &g_reclaimed) {
        u.events |= kEventNotTracked;
        return u;
    }
    if (slot == &g_untracked) {
        if ((p.tcp_flags & (kSyn | kRst | kFin)) != kSyn || !starts_session(p)) {
            u.events |= kEventNotTracked | no_session_events(p);
            return u;
        }
        SessionSlot::set(f, nullptr);
    } else {
        s = static_cast<Session*>(slot);
    }
    const int d = idx(dir);
    if (s == nullptr) {
        s = create(p, f, dir, u);
        if (s == nullptr) {
            return u;
        }
        if ((p.tcp_flags & kSyn) != 0) {
            handle_syn_data(*s, s->half[d], p, dir, u);
            finish(*s, u);
            return u;
        }
    } else {
        drop_pkt(s->half[0].app);
        drop_pkt(s->half[1].app);
        drop_pkt(s->half[0].raw);
        drop_pkt(s->half[1].raw);
        housekeeping(*s);
    }
    Session& ss = *s;
    Half& h = ss.half[d];
    Half& r = ss.half[1 - d];
    const uint8_t fl = p.tcp_flags;
    // Suricata's IDS timing: this packet acknowledges the other side's data, which the app
    // layer may now have; its own data waits for the other side (or the close).
    ss.app_allow = static_cast<uint8_t>(1u << (1 - d));
    ss.raw_allow = static_cast<uint8_t>(1u << d);  // raw: the packet's own direction
    if (ss.state == SessionState::kClosed) {
        ss.app_allow = 3;
        finish(ss, u);
        return u;
    }
    if ((fl & kSyn) != 0) {
        on_syn(ss, d, p);
        handle_syn_data(ss, h, p, dir, u);
        // A SYN/ACK acknowledging SYN data (TCP Fast Open) does not hand it to the app layer:
        // the server's next packet does (Suricata's timing: its app layer sees TFO data then).
        ss.app_allow = 0;
        finish(ss, u);
        return u;
    }
    if ((fl & kRst) != 0) {
        if (rst_acceptable(ss, h, r, p)) {
            close(ss);
            ss.app_allow = 3;
            deliver_both(ss, u);
        } else {
            ++c.rst_invalid;
            u.events |= kEventRstInvalid;
        }
        finish(ss, u);
        return u;
    }
    const bool ack = (fl & kAck) != 0;
    if (ss.state == SessionState::kSynSent) {
        // Suricata's SYN_SENT: only a SYN/ACK moves on (above), or with async_oneside the
        // client's ACK; a FIN, or an ACK without async_oneside, is ignored, its data too.
        if (!ack || (fl & kFin) != 0 || !syn_sent_ack(ss, d, p, u)) {
            finish(ss, u);
            return u;
        }
        ss.state = SessionState::kEstablished;
    } else if (ss.state == SessionState::kSynRecv) {
        // A FIN is taken as in established (Suricata's StreamTcpHandleFin); an ACK must fit.
        if (!ack || ((fl & kFin) == 0 && !syn_recv_ack(ss, d, p, u))) {
            finish(ss, u);
            return u;
        }
        ss.state = SessionState::kEstablished;
    }
    if (!h.known) {  // first packet from the side a midstream pickup had not seen
        h.base_seq = p.tcp_seq;
        h.known = true;
    }
    if (p.payload_len > 0) {
        handle_data(h, p, p.tcp_seq, u.chunk[d], u);
    }
    if (ack && r.known) {
        // This packet tells how far the other side's data was received, and the window.
        if (!r.ack_known || static_cast<int32_t>(p.tcp_ack - r.last_ack) > 0) {
            r.last_ack = p.tcp_ack;
        }
        r.rwnd = static_cast<uint32_t>(p.tcp_window) << ss.shift[d];
        r.ack_known = true;
    }
    if ((fl & kFin) != 0 && !h.fin) {
        const int64_t fo = h.off_of(p.tcp_seq + p.payload_len);
        h.fin = true;
        h.fin_off = static_cast<uint64_t>(std::max<int64_t>(fo, 0));
        h.fin_off = std::max(h.fin_off, h.delivered);
        if (ss.state == SessionState::kEstablished) {
            ss.state = SessionState::kClosing;
        }
    }
    if (h.fin && r.fin && fin_acked(h) && fin_acked(r)) {
        close(ss);
    }
    if (ss.state == SessionState::kClosed) {
        ss.app_allow = 3;
        deliver_both(ss, u);
    } else {
        // A data hole of either side may just have been acknowledged.
        if (u.chunk[d].window == nullptr && u.chunk[d].gap == 0) {
            if (deliver_one(h, u.chunk[d])) {
                run_splitter(ss, h, dir, u.chunk[d]);
            }
        } else {
            run_splitter(ss, h, dir, u.chunk[d]);
        }
        const auto odir = static_cast<flow::Direction>(1 - d);
        if (cfg.app_on_ack) {
            // Before the other side's hole may be skipped (can_deliver()).
            deliver_app(r, u.app[1 - d], false);
            if (h.app.pkt_len != 0) {
                deliver_app(h, u.app[d], true);
            }
        }
        if (deliver_one(r, u.chunk[1 - d])) {
            run_splitter(ss, r, odir, u.chunk[1 - d]);
        }
    }
    finish(ss, u);
    return u;
}

bool StreamTracker::Impl::tcp_checksum_ok(const decode::Packet& p) {
    if (p.l4 == nullptr) {
        return true;
    }
    uint64_t sum = 0;
    auto add = [&sum](const uint8_t* b, size_t n) {
        for (size_t i = 0; i + 1 < n; i += 2) {
            sum += static_cast<uint32_t>(b[i] << 8 | b[i + 1]);
        }
        if ((n & 1) != 0) {
            sum += static_cast<uint32_t>(b[n - 1] << 8);
        }
    };
    const uint32_t len = p.l4_len;
    if (p.ip_version == 4) {
        add(p.src.v4(), 4);
        add(p.dst.v4(), 4);
    } else {
        add(p.src.b, 16);
        add(p.dst.b, 16);
        sum += len >> 16;
    }
    sum += 6;  // protocol
    sum += len & 0xffff;
    add(p.l4, len);
    while ((sum >> 16) != 0) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum == 0xffff;
}

StreamUpdate StreamTracker::process(const decode::Packet& p, flow::Flow& f, flow::Direction dir,
                                    int64_t now_ns) {
    (void)now_ns;  // packet time is not needed yet: the flow table owns timeouts
    return impl_->process(p, f, dir);
}

// ---- buffer window (runs whenever a segment reaches past the buffer) ----

// Moves the buffer's window forward by k bytes (a multiple of 64, so that bitmap words
// move whole), keeping the tail and everything held.
void StreamTracker::Impl::slide(Half& h, uint64_t k) {
    // Bytes of buf in use; delivered may have run past the buffer (data handed over
    // without a copy while nothing was held).
    const uint64_t used = std::min(h.cap, std::max(h.delivered, h.held_end) - h.buf_base);
    if (k < used) {
        std::memmove(h.buf, h.buf + k, used - k);
    }
    if (h.bits_dirty) {
        const uint64_t words = h.cap / 64;
        const uint64_t kw = k / 64;
        if (h.nheld == 0 || kw >= words) {
            std::memset(h.bits, 0, words * 8);
            h.bits_dirty = h.nheld != 0;
        } else {
            std::memmove(h.bits, h.bits + kw, (words - kw) * 8);
            std::memset(h.bits + (words - kw), 0, kw * 8);
        }
    }
    h.buf_base += k;
    h.tail_start = std::max(h.tail_start, h.buf_base);
}

// First stream offset buf must keep: the raw tail, and what the app layer still needs.
uint64_t StreamTracker::Impl::keep_from_for(const Half& h) const {
    const uint64_t want = h.delivered >= keep ? h.delivered - keep : 0;
    uint64_t from = std::max(h.tail_start, want);
    if (cfg.app_on_ack) {
        const uint64_t app_need = h.app.gap_len != 0 && h.app.done == h.app.gap_at
                                      ? h.app.gap_at + h.app.gap_len
                                      : h.app.done;
        from = std::max(std::min(from, app_need), h.buf_base);
    }
    if (raw_ack(h)) {
        const uint64_t raw_need = gap_now(h.raw) ? h.raw.gap_at + h.raw.gap_len : h.raw.done;
        const uint64_t raw_from = std::max(raw_need >= keep ? raw_need - keep : 0, h.raw_tail);
        from = std::max(std::min(from, std::min(raw_from, raw_need)), h.buf_base);
    }
    return from;
}

// ---- delivery: cursors, splitter, the end of each call ----

// Hands the app layer h's next run: what the receiver acknowledged, or everything
// delivered when `all`; a pending hole comes first, as the chunk's gap. One run per call.
bool StreamTracker::Impl::deliver_app(Half& h, StreamChunk& ch, bool all) {
    if (take_pkt(h.app, ch)) {
        return true;
    }
    uint64_t gap = 0;
    if (gap_now(h.app)) {
        gap = h.app.gap_len;
        h.app.done += gap;
        h.app.gap_len = 0;
    }
    const uint64_t start = h.app.done;
    const uint64_t end = std::max(start, app_end(h, all));
    if (end == start && gap == 0) {
        return false;
    }
    ch.window = end > start ? h.buf + (start - h.buf_base) : nullptr;
    ch.window_len = static_cast<uint32_t>(end - start);
    ch.new_offset = 0;
    ch.stream_offset = start;
    ch.gap = gap;
    h.app.done = end;
    return true;
}

// Hands out h's next raw run when raw_ready(): from raw.done up to raw_end(), with up
// to `keep` bytes inspected before in front (never across a hole). One run per call.
bool StreamTracker::Impl::deliver_raw(const Session& s, Half& h, StreamChunk& ch) {
    if (!raw_ready(s, h)) {
        return false;
    }
    if (take_pkt(h.raw, ch)) {
        h.raw_tail = h.raw.done;
        return true;
    }
    uint64_t gap = 0;
    if (gap_now(h.raw)) {
        gap = h.raw.gap_len;
        h.raw.done += gap;
        h.raw_tail = h.raw.done;
        h.raw.gap_len = 0;
    }
    const uint64_t start = h.raw.done;
    const uint64_t end = std::max(start, raw_end(h, app_all(s, h) || h.raw_leave));
    if (end == start && gap == 0) {
        return false;
    }
    const uint64_t want = start >= keep ? start - keep : 0;
    const uint64_t from = end > start ? std::max({h.raw_tail, want, h.buf_base}) : start;
    ch = StreamChunk{};
    ch.window = end > start ? h.buf + (from - h.buf_base) : nullptr;
    ch.window_len = static_cast<uint32_t>(end - from);
    ch.new_offset = static_cast<uint32_t>(start - from);
    ch.stream_offset = start;
    ch.gap = gap;
    ch.depth_reached = h.depth_reached;
    h.raw.done = end;
    h.raw_trigger = false;
    return true;
}

void StreamTracker::Impl::run_splitter(Session& s, Half& h, flow::Direction dir, StreamChunk& ch) {
    ch.depth_reached = h.depth_reached;
    if (s.splitter == nullptr || h.splitter_aborted) {
        ch.splitter_aborted = h.splitter_aborted && s.splitter != nullptr;
        return;
    }
    if (ch.gap != 0) {
        s.splitter->gap(dir);
    }
    const uint8_t* data = ch.new_data();
    const uint32_t len = ch.new_len();
    uint32_t pos = 0;
    uint32_t n = 0;
    while (pos < len) {
        const SplitResult r = s.splitter->scan(dir, data + pos, len - pos);
        if (r.status == SplitStatus::kNeedMore) {
            break;
        }
        if (r.status == SplitStatus::kAbort || r.flush_at == 0 || r.flush_at > len - pos) {
            h.splitter_aborted = true;  // a flush point outside the data is a parser bug
            ch.splitter_aborted = true;
            break;
        }
        pos += r.flush_at;
        if (n == h.pdu_cap && n < kMaxPdusPerChunk) {
            const uint32_t ncap = std::min(kMaxPdusPerChunk, h.pdu_cap == 0 ? 8 : h.pdu_cap * 2);
            if (charge(uint64_t{ncap - h.pdu_cap} * sizeof(uint64_t))) {
                auto* p = static_cast<uint64_t*>(std::realloc(h.pdus, ncap * sizeof(uint64_t)));
                if (p != nullptr) {
                    h.pdus = p;
                    h.pdu_cap = ncap;
                } else {
                    refund(uint64_t{ncap - h.pdu_cap} * sizeof(uint64_t));
                }
            }
        }
        if (n < h.pdu_cap) {
            h.pdus[n++] = ch.stream_offset + pos;
        } else {
            ch.pdus_truncated = true;
        }
    }
    ch.pdu_ends = n == 0 ? nullptr : h.pdus;
    ch.pdu_count = n;
}

void StreamTracker::Impl::finish(Session& s, StreamUpdate& u) {
    u.state = s.state;
    for (int d = 0; d < 2; ++d) {
        Half& h = s.half[d];
        StreamChunk& ch = u.chunk[d];
        // Closed implies flush_all: only held data can still come (can_deliver() may
        // also be waiting for the app cursor).
        const bool ended = (h.fin && h.delivered >= h.fin_off) ||
                           (s.state == SessionState::kClosed && h.nheld == 0);
        if (ended && !h.eof_reported) {
            h.eof_reported = true;
            ch.eof = true;
        }
        if (can_deliver(h)) {
            u.more = true;
        }
        const bool raw_mode = raw_ack(h);
        if (raw_mode) {
            // The run just delivered waits in buf for the raw cursor (and the app one).
            const StreamChunk run = ch;
            ch = StreamChunk{};
            if (!cfg.app_on_ack) {
                u.app[d] = run;
            }
            if (raw_allowed(s, d)) {
                deliver_raw(s, h, ch);
                if (h.raw_leave && !raw_pending(h)) {
                    h.raw_pp = true;  // drained: per-packet chunks from here on
                    h.raw_tail = h.raw.done;
                }
                if (can_deliver(h)) {
                    u.more = true;  // a hole that waited for the raw cursor
                }
                if (raw_ready(s, h)) {
                    u.more = true;
                } else if (!h.raw.eof_reported && h.raw.done >= h.delivered && h.raw.gap_len == 0 &&
                           h.raw.pkt_len == 0 &&
                           ((h.fin && h.raw.done >= h.fin_off) ||
                            (s.state == SessionState::kClosed && h.nheld == 0))) {
                    h.raw.eof_reported = true;
                    ch.eof = true;
                }
            }
        }
        if (!cfg.app_on_ack) {
            if (!raw_mode) {
                u.app[d] = ch;
            }
            continue;
        }
        if (!app_allowed(s, h, d)) {
            continue;
        }
        if (app_deliverable(h, app_all(s, h))) {
            u.more = true;
        } else if (!h.app.eof_reported && h.app.done >= h.delivered && h.app.gap_len == 0 &&
                   ((h.fin && h.app.done >= h.fin_off && h.flush_all) ||
                    (s.state == SessionState::kClosed && h.nheld == 0))) {
            // Suricata's IDS timing: the app layer hears of a direction's end when the session
            // is closed (both FINs acknowledged, or a RST) or the flow ends, not when its FIN
            // is acknowledged; a response body that runs to the close completes then.
            h.app.eof_reported = true;
            u.app[d].eof = true;
        }
    }
}

// Delivers one run for each direction whose chunk is still empty (app_on_ack: the app
// layer's run first, for the directions it may have now).
void StreamTracker::Impl::deliver_both(Session& s, StreamUpdate& u) {
    for (int d = 0; d < 2; ++d) {
        Half& h = s.half[d];
        const bool app_empty = u.app[d].window == nullptr && u.app[d].gap == 0;
        if (cfg.app_on_ack && app_empty && app_allowed(s, h, d)) {
            deliver_app(h, u.app[d], app_all(s, h));
        }
        StreamChunk& ch = u.chunk[d];
        const bool filled = ch.window != nullptr || ch.gap != 0;
        const auto dir = static_cast<flow::Direction>(d);
        if (filled) {
            run_splitter(s, s.half[d], dir, ch);
        } else if (deliver_one(s.half[d], ch)) {
            run_splitter(s, s.half[d], dir, ch);
        }
    }
}

StreamUpdate StreamTracker::next(flow::Flow& f) {
    StreamUpdate u;
    Session* slot = SessionSlot::get(f);
    if (slot == nullptr || untracked(slot)) {
        u.events |= kEventNotTracked;
        return u;
    }
    auto* s = static_cast<Session*>(slot);
    impl_->deliver_both(*s, u);
    impl_->finish(*s, u);
    return u;
}

StreamUpdate StreamTracker::flush(flow::Flow& f) {
    Session* slot = SessionSlot::get(f);
    if (slot != nullptr && !untracked(slot)) {
        auto* s = static_cast<Session*>(slot);
        s->half[0].flush_all = true;
        s->half[1].flush_all = true;
        s->app_allow = 3;
        s->raw_allow = 3;
    }
    return next(f);
}

void StreamTracker::raw_per_packet(flow::Flow& f) {
    Session* slot = SessionSlot::get(f);
    if (slot == nullptr || untracked(slot) || !impl_->cfg.raw_on_ack) {
        return;
    }
    for (Half& h : static_cast<Session*>(slot)->half) {
        if (!h.raw_pp && !h.raw_leave) {
            h.raw_leave = true;
            if (!impl_->raw_pending(h)) {
                h.raw_pp = true;
                h.raw_tail = h.raw.done;
            }
        }
    }
}

bool StreamTracker::raw_on_ack(const flow::Flow& f, flow::Direction dir) const {
    Session* slot = SessionSlot::get(f);
    if (slot == nullptr || untracked(slot)) {
        return false;
    }
    return impl_->raw_ack(static_cast<const Session*>(slot)->half[static_cast<int>(dir)]);
}

}  // namespace picket::sensor::stream
