// Internal to sensor/stream: the tracker's state (Half, Session, StreamTracker::Impl) and the
// helpers its .cc files and its tests share. Not a public header; other modules include only
// stream.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "sensor/stream/stream.h"

namespace picket::sensor::stream {

bool prefix_match(const PolicyNet& n, const decode::Address& a);

// Overlap rule: does a new segment [s, e) overwrite a held segment [ls, le) where they
// overlap, for a receiver using policy `pol`? (Stream offsets, s/e and ls/le overlap.)
bool new_data_wins(Policy pol, uint64_t s, uint64_t e, uint64_t ls, uint64_t le);

inline constexpr uint8_t kFin = 0x01;
inline constexpr uint8_t kSyn = 0x02;
inline constexpr uint8_t kRst = 0x04;
inline constexpr uint8_t kAck = 0x10;

// Stream buffers start at 2 KiB (a 1460-byte segment plus a tail of up to 588 bytes) and
// double on demand; one direction's buffer never exceeds 1 GiB (the largest scaled window).
inline constexpr uint32_t kMinBufCap = 2048;
inline constexpr uint64_t kMaxBufCap = uint64_t{1} << 30;
// Out-of-order segments held per direction; past this a segment is dropped like a memcap
// drop, so a flood of tiny overlapping segments cannot make inserts quadratic.
inline constexpr uint32_t kMaxHeldSegments = 8192;
// Buffers larger than this are given back once nothing out of order is held (a burst of
// reordering or one giant segment should not pin memory for the session's life).
inline constexpr uint32_t kShrinkAbove = 256 * 1024;
inline constexpr uint8_t kMaxWscale = 14;  // RFC 7323 2.3
inline constexpr size_t kScratchBytes = 65536 + 64;

inline int idx(flow::Direction d) {
    return static_cast<int>(d);
}

inline uint64_t pow2_at_least(uint64_t v) {
    uint64_t c = kMinBufCap;
    while (c < v) {
        c <<= 1;
    }
    return c;
}

// A segment held out of order: stream offsets [start, end) as it arrived (the start may lie
// before data already delivered). The overlap policy compares against these original edges.
struct Held {
    uint64_t start;
    uint64_t end;
};

// A consumer's position in a direction's delivered bytes, behind `delivered` (the app
// layer's with app_on_ack, raw inspection's with raw_on_ack): [done, delivered) was
// delivered but not yet handed to it and stays in the buffer. A hole the delivery skipped
// at gap_at (gap_len bytes) is reported with the chunk that passes it. At the reassembly
// memcap, in-order bytes go out straight from the packet: `pkt`, those still owed to it in
// this call (stream offset pkt_off).
struct Cursor {
    uint64_t done = 0;
    uint64_t gap_at = 0;
    uint64_t gap_len = 0;
    bool eof_reported = false;
    const uint8_t* pkt = nullptr;
    uint32_t pkt_len = 0;
    uint64_t pkt_off = 0;
};

// One direction of a session: the sender's byte stream as the receiver will see it.
struct Half {
    uint32_t base_seq = 0;  // sequence number of stream offset 0 (ISN + 1)
    bool known = false;     // base_seq is set
    bool ack_known = false;
    uint16_t syn_data = 0;  // bytes carried on this side's SYN (TCP Fast Open), up to 65535
    uint32_t last_ack = 0;  // highest ACK from the receiver for this data
    uint32_t rwnd = 0;      // receiver's window, scaled
    bool fin = false;
    uint64_t fin_off = 0;  // stream offset of the FIN (data ends there)
    bool eof_reported = false;
    bool depth_reached = false;
    bool flush_all = false;  // closing: skip every hole
    bool splitter_aborted = false;
    Policy policy = Policy::kBsd;

    uint64_t delivered = 0;   // stream offset of the next byte to deliver
    uint64_t tail_start = 0;  // [tail_start, delivered) is delivered data still in buf

    // Stream buffer: buf[i] holds stream offset buf_base + i. Bits mark which bytes at or
    // past `delivered` are held; bits below `delivered` are meaningless.
    uint8_t* buf = nullptr;
    uint64_t* bits = nullptr;
    uint64_t cap = 0;
    uint64_t buf_base = 0;
    bool bits_dirty = false;  // some bit may be set (else the bitmap is all zero)

    Held* held = nullptr;  // sorted by (start, end)
    uint32_t nheld = 0;
    uint32_t held_cap = 0;
    uint64_t max_held_len = 0;
    uint64_t held_end = 0;  // largest end of a held segment

    uint64_t* pdus = nullptr;
    uint32_t pdu_cap = 0;

    // App cursor (StreamConfig::app_on_ack): [app.done, delivered) was delivered but not yet
    // handed to the app layer, and stays in buf.
    Cursor app;
    // Raw cursor (StreamConfig::raw_on_ack): [raw.done, delivered) was delivered but not yet
    // handed out for raw inspection, and stays in buf; [raw_tail, raw.done) may precede the
    // next raw chunk as its tail (no hole in it). raw_trigger: the app layer ended a message
    // in this direction (inspect now).
    Cursor raw;
    uint64_t raw_tail = 0;
    bool raw_trigger = false;
    // StreamTracker::raw_per_packet(): raw_leave drains what the raw cursor still holds on
    // the next packet of this direction, then raw_pp: chunks are the data as soon as it is
    // contiguous again (as without raw_on_ack).
    bool raw_leave = false;
    bool raw_pp = false;

    uint32_t seq_of(uint64_t off) const { return base_seq + static_cast<uint32_t>(off); }
    // Offset of a sequence number near `delivered` (within 2 GiB either way).
    int64_t off_of(uint32_t seq) const {
        return static_cast<int64_t>(delivered) + static_cast<int32_t>(seq - seq_of(delivered));
    }
    bool bit(uint64_t off) const {
        const uint64_t pos = off - buf_base;
        return pos < cap && ((bits[pos >> 6] >> (pos & 63)) & 1) != 0;
    }
};

struct Session {
    Half half[2];  // by the sender's flow::Direction
    SessionState state = SessionState::kNone;
    Splitter* splitter = nullptr;
    uint8_t wscale[2] = {0xff, 0xff};  // option each side sent on its SYN (0xff none)
    uint8_t shift[2] = {0, 0};         // scale applied to the windows each side advertises
    bool closed_cleanup = false;       // buffers freed after the closing flush
    // The client's half (flow::Direction of the SYN's sender, or of the receiver of the
    // SYN/ACK a midstream session was picked up from), and whether it was picked up from a
    // SYN/ACK (Suricata's MIDSTREAM_SYNACK): the syn_recv checks depend on both.
    uint8_t client = 0;
    bool synack_pickup = false;
    // app_on_ack: the directions (bit 1 << d) whose acknowledged data this call and its
    // next() calls may hand to the app layer.
    uint8_t app_allow = 0;
    // raw_on_ack: the directions whose raw data this call may hand out (the packet's own;
    // both at flush()).
    uint8_t raw_allow = 0;
    // Creation-order list of the tracker's sessions, for reclaiming half-open ones at the
    // memcap (Impl::reclaim_half_open); the flow is the one whose slot holds this session.
    flow::Flow* flow = nullptr;
    Session* older = nullptr;
    Session* newer = nullptr;
    bool listed = false;
};

// The tracker's state and logic. Its member functions live in stream.cc (the whole per-packet
// path: state machine, intake, buffer window, delivery), buffers.cc (buffer growth, shrinking
// and freeing under the reassembly memcap) and session.cc (session creation, the half-open
// list at the session memcap, the public API's cold parts); the small per-packet helpers are
// defined here.
// The flow's session: the stream's flow slot.
using SessionSlot = flow::FlowStorage<Session, flow::FlowSlot::kStream>;

// The session stored in the slot of flows that are deliberately not tracked (seen mid-stream
// with midstream off): never used, no memory per flow, and later packets skip session
// creation cheaply.
extern Session g_untracked;
// The same for a flow whose half-open session was reclaimed after its SYN data (TCP Fast
// Open) had been delivered: a later SYN does not start the stream again from offset 0.
extern Session g_reclaimed;
inline bool untracked(const Session* slot) {
    return slot == &g_untracked || slot == &g_reclaimed;
}

struct StreamTracker::Impl {
    StreamConfig cfg;
    StreamCounters& c;
    uint32_t keep = 0;
    uint64_t memuse = 0;
    uint64_t rmemuse = 0;
    uint8_t* scratch = nullptr;

    Impl(const StreamConfig& config, StreamCounters& counters) : cfg(config), c(counters) {
        keep = std::min(cfg.keep_tail, cfg.chunk_size);
        scratch = static_cast<uint8_t*>(std::malloc(kScratchBytes));
    }
    ~Impl() { std::free(scratch); }

    // ---- memory ----

    bool charge(uint64_t bytes) {
        if (rmemuse + bytes > cfg.reassembly_memcap) {
            return false;
        }
        rmemuse += bytes;
        c.reassembly_memuse.set(rmemuse);
        return true;
    }
    void refund(uint64_t bytes) {
        rmemuse -= bytes;
        c.reassembly_memuse.set(rmemuse);
    }
    void free_buffers(Half& h);
    void slide(Half& h, uint64_t k);
    uint64_t keep_from_for(const Half& h) const;

    // Makes buf cover stream offsets up to `end` (exclusive), sliding out delivered data
    // not needed for the tail, then growing. False: memcap or size limit.
    bool ensure(Half& h, uint64_t end) {
        if (h.buf == nullptr) {
            h.tail_start = h.delivered;
            h.buf_base = h.delivered;
        } else {
            if (end - h.buf_base <= h.cap) {
                return true;
            }
            const uint64_t keep_from = keep_from_for(h);
            const uint64_t k = (keep_from - h.buf_base) & ~uint64_t{63};
            if (k != 0) {
                slide(h, k);
            }
            if (end - h.buf_base <= h.cap) {
                return true;
            }
        }
        const uint64_t need = end - h.buf_base;
        if (need > kMaxBufCap) {
            return false;
        }
        return resize(h, pow2_at_least(need));
    }
    bool resize(Half& h, uint64_t newcap);
    // Gives a large buffer back once nothing is held (keeps the tail). Runs per packet: the
    // test is inline, the work in buffers.cc.
    void maybe_shrink(Half& h) {
        if (h.cap > kShrinkAbove && h.nheld == 0) {
            shrink(h);
        }
    }
    void shrink(Half& h);

    // In-order bytes [a, e) handed over straight from the packet (`src`), not copied.
    static void from_packet(Half& h, StreamChunk& ch, const uint8_t* src, uint64_t a, uint64_t e) {
        ch.window = src;
        ch.window_len = static_cast<uint32_t>(e - a);
        ch.new_offset = 0;
        ch.stream_offset = a;
        h.delivered = e;
        h.tail_start = e;
    }

    // A segment overlapped data already seen (overlap) and disagreed with it (diff).
    void count_overlap(bool overlap, bool diff, StreamUpdate& u) {
        if (overlap) {
            ++c.overlap;
            u.events |= kEventOverlap;
        }
        if (diff) {
            ++c.overlap_diff_data;
            u.events |= kEventOverlapDiffData;
        }
    }

    // ---- bitmap ----

    static void set_bits(Half& h, uint64_t a, uint64_t b) {
        for (uint64_t p = a - h.buf_base, e = b - h.buf_base; p < e;) {
            const uint64_t w = p >> 6;
            const uint64_t lo = p & 63;
            const uint64_t n = std::min<uint64_t>(64 - lo, e - p);
            const uint64_t mask = (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << lo;
            h.bits[w] |= mask;
            p += n;
        }
        h.bits_dirty = true;
    }

    // First offset >= from whose bit is clear (bounded by the buffer end).
    static uint64_t next_clear(const Half& h, uint64_t from) {
        uint64_t p = from - h.buf_base;
        while (p < h.cap) {
            const uint64_t w = ~h.bits[p >> 6] >> (p & 63);
            if (w != 0) {
                p += static_cast<uint64_t>(__builtin_ctzll(w));
                return std::min(p, h.cap) + h.buf_base;
            }
            p = (p | 63) + 1;
        }
        return h.cap + h.buf_base;
    }
    // ---- held segments ----
    bool reserve_held(Half& h);
    static void add_held(Half& h, uint64_t s, uint64_t e);
    static void prune_held(Half& h);

    // Ack-based gap rule: a hole at `delivered` may be skipped when the receiver has
    // acknowledged up to (or past) the next held byte: it got the hole's data, we never will.
    // Closing (flush_all) skips any hole.
    bool can_deliver(const Half& h) const {
        if (h.nheld == 0) {
            return false;
        }
        if (h.bit(h.delivered)) {
            return true;
        }
        // app_on_ack: a hole is skipped only once the app layer has everything before it (one
        // pending hole per direction), which the same acknowledgement allows.
        if (cfg.app_on_ack && (h.app.done < h.delivered || h.app.gap_len != 0)) {
            return false;
        }
        if (raw_ack(h) && (h.raw.done < h.delivered || h.raw.gap_len != 0)) {
            return false;
        }
        if (h.flush_all) {
            return true;
        }
        // With a hole at `delivered`, no held segment covers it, so the first held byte is
        // the smallest start.
        const uint64_t np = h.held[0].start;
        return h.ack_known && h.off_of(h.last_ack) >= static_cast<int64_t>(np);
    }

    // ---- delivery ----

    void fill_from_buffer(Half& h, StreamChunk& ch, uint64_t start, uint64_t end, uint64_t gap) {
        const uint64_t want = start >= keep ? start - keep : 0;
        const uint64_t from = std::max({h.tail_start, want, h.buf_base});
        ch.window = h.buf + (from - h.buf_base);
        ch.window_len = static_cast<uint32_t>(end - from);
        ch.new_offset = static_cast<uint32_t>(start - from);
        ch.stream_offset = start;
        ch.gap = gap;
    }
    bool deliver_one(Half& h, StreamChunk& ch);

    // ---- app cursor (StreamConfig::app_on_ack) ----

    static bool app_all(const Session& s, const Half& h) {
        return s.state == SessionState::kClosed || h.flush_all;
    }
    static bool app_allowed(const Session& s, const Half& h, int d) {
        return ((s.app_allow >> d) & 1) != 0 || h.app.pkt_len != 0;
    }
    // End (exclusive) of what cursor c may take now: what the receiver acknowledged
    // (everything delivered when `all`), before a pending hole or the packet's own bytes.
    static uint64_t cursor_end(const Half& h, const Cursor& c, bool all) {
        uint64_t end = h.delivered;
        if (!all && c.pkt_len == 0) {
            const int64_t acked = h.ack_known ? h.off_of(h.last_ack) : 0;
            end = std::min<uint64_t>(end, static_cast<uint64_t>(std::max<int64_t>(acked, 0)));
        }
        if (c.pkt_len != 0) {
            end = std::min(end, c.pkt_off);
        }
        if (c.gap_len != 0 && c.done < c.gap_at) {
            end = std::min(end, c.gap_at);
        }
        return end;
    }
    // c's pending hole starts where c stands.
    static bool gap_now(const Cursor& c) { return c.gap_len != 0 && c.done == c.gap_at; }
    // A call's in-order bytes still owed to c from the packet (reassembly memcap) that the
    // caller did not collect with next(): a hole for c.
    static void drop_pkt(Cursor& c) {
        if (c.pkt_len == 0) {
            return;
        }
        if (c.gap_len == 0) {
            c.gap_at = c.pkt_off;
            c.gap_len = c.pkt_len;
        } else if (c.gap_at + c.gap_len == c.pkt_off) {
            c.gap_len += c.pkt_len;
        }
        c.pkt = nullptr;
        c.pkt_len = 0;
    }
    // The packet's bytes, when c has everything before them: the whole chunk (no tail).
    static bool take_pkt(Cursor& c, StreamChunk& ch) {
        if (c.pkt_len == 0 || c.done != c.pkt_off || gap_now(c)) {
            return false;
        }
        ch = StreamChunk{};
        ch.window = c.pkt;
        ch.window_len = c.pkt_len;
        ch.stream_offset = c.pkt_off;
        c.done = c.pkt_off + c.pkt_len;
        c.pkt = nullptr;
        c.pkt_len = 0;
        return true;
    }
    static uint64_t app_end(const Half& h, bool all) { return cursor_end(h, h.app, all); }
    static bool app_deliverable(const Half& h, bool all) {
        return h.app.pkt_len != 0 || gap_now(h.app) || app_end(h, all) > h.app.done;
    }
    bool app_pending(const Half& h) const {
        return cfg.app_on_ack &&
               (h.app.done < h.delivered || h.app.gap_len != 0 || h.app.pkt_len != 0);
    }
    bool deliver_app(Half& h, StreamChunk& ch, bool all);

    // ---- raw cursor (StreamConfig::raw_on_ack) ----

    bool raw_ack(const Half& h) const { return cfg.raw_on_ack && !h.raw_pp; }
    static bool raw_allowed(const Session& s, int d) { return ((s.raw_allow >> d) & 1) != 0; }
    static uint64_t raw_end(const Half& h, bool all) { return cursor_end(h, h.raw, all); }
    // A hole at `delivered` the gap rule would skip if the raw cursor had caught up.
    bool hole_waiting(const Half& h) const {
        if (h.nheld == 0 || h.bit(h.delivered)) {
            return false;
        }
        return h.flush_all ||
               (h.ack_known && h.off_of(h.last_ack) >= static_cast<int64_t>(h.held[0].start));
    }
    // Suricata's StreamTcpReassembleRawCheckLimit: raw data is inspected once chunk_size
    // acknowledged bytes wait, the app layer ended a message, the depth was reached, the
    // session closed or is flushed; here also when a hole or the packet's own bytes (at the
    // memcap) wait behind it.
    bool raw_ready(const Session& s, const Half& h) const {
        const bool all = app_all(s, h) || h.raw_leave;
        if (h.raw.pkt_len != 0 || gap_now(h.raw)) {
            return true;
        }
        const uint64_t end = raw_end(h, all);
        if (end <= h.raw.done) {
            return false;
        }
        return all || h.raw_trigger || h.depth_reached || h.raw.gap_len != 0 ||
               end - h.raw.done >= cfg.chunk_size || hole_waiting(h);
    }
    bool raw_pending(const Half& h) const {
        return raw_ack(h) && (h.raw.done < h.delivered || h.raw.gap_len != 0 || h.raw.pkt_len != 0);
    }
    bool deliver_raw(const Session& s, Half& h, StreamChunk& ch);
    void run_splitter(Session& s, Half& h, flow::Direction dir, StreamChunk& ch);
    // ---- segments ----
    // seq: the sequence number of the payload's first byte (p.tcp_seq, + 1 on a SYN).
    void handle_data(Half& h, const decode::Packet& p, uint32_t seq, StreamChunk& ch,
                     StreamUpdate& u);
    // Data on a SYN or SYN/ACK (TCP Fast Open, RFC 7413): reassembled from ISN + 1.
    void handle_syn_data(Session& s, Half& h, const decode::Packet& p, flow::Direction dir,
                         StreamUpdate& u);
    static bool rst_acceptable(const Session& s, const Half& h, const Half& r,
                               const decode::Packet& p);

    static bool fin_acked(const Half& h) {
        return h.fin && h.ack_known && h.off_of(h.last_ack) >= static_cast<int64_t>(h.fin_off) + 1;
    }

    void close(Session& s) {
        s.state = SessionState::kClosed;
        s.half[0].flush_all = true;
        s.half[1].flush_all = true;
    }
    Policy policy_for(const decode::Address& a) const;

    // ---- half-open sessions at the memcap ----
    //
    // A SYN flood from random sources fills the session memcap with sessions that never get
    // an answer; refusing every new session from then on would blind the sensor to every new
    // connection. As Linux does with a full SYN queue, the oldest half-open session (syn_sent:
    // a SYN, nothing since) is freed for the new one: its flow is left untracked (a
    // retransmitted SYN starts tracking again) and tcp.ssn_memcap_reclaimed counts it.
    // Sessions stay in the list in creation order and are skipped lazily once past syn_sent,
    // so each one is unlinked at most once: O(1) amortised per reclaim.
    Session* oldest = nullptr;
    Session* newest = nullptr;
    void list_append(Session* s);
    void list_unlink(Session* s);
    bool reclaim_half_open();
    Session* create(const decode::Packet& p, flow::Flow& f, flow::Direction dir, StreamUpdate& u);
    // Suricata's state NONE: whether a packet starts a session (a SYN; a SYN/ACK with
    // midstream or async_oneside; an ACK, or a FIN with data, with midstream), and the events
    // of one that does not.
    bool starts_session(const decode::Packet& p) const;
    uint32_t no_session_events(const decode::Packet& p) const;
    // Suricata's SYN_SENT and SYN_RECV checks of an ACK (no SYN, RST or FIN): true when it
    // establishes the session; false (with the event, if Suricata raises one) when the packet
    // is to be ignored.
    bool syn_sent_ack(Session& s, int d, const decode::Packet& p, StreamUpdate& u) const;
    bool syn_recv_ack(const Session& s, int d, const decode::Packet& p, StreamUpdate& u) const;
    void on_syn(Session& s, int d, const decode::Packet& p);
    void finish(Session& s, StreamUpdate& u);
    void housekeeping(Session& s);
    StreamUpdate process(const decode::Packet& p, flow::Flow& f, flow::Direction dir);
    void deliver_both(Session& s, StreamUpdate& u);
    static bool tcp_checksum_ok(const decode::Packet& p);
};

}  // namespace picket::sensor::stream
