#include "sensor/stream/stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "sensor/stream/internal.h"

namespace picket::sensor::stream {

Splitter::~Splitter() = default;

namespace {

constexpr uint8_t kFin = 0x01;
constexpr uint8_t kSyn = 0x02;
constexpr uint8_t kRst = 0x04;
constexpr uint8_t kAck = 0x10;

// Stream buffers start at 2 KiB (a 1460-byte segment plus a tail of up to 588 bytes) and
// double on demand; one direction's buffer never exceeds 1 GiB (the largest scaled window).
constexpr uint32_t kMinBufCap = 2048;
constexpr uint64_t kMaxBufCap = uint64_t{1} << 30;
// Out-of-order segments held per direction; past this a segment is dropped like a memcap
// drop, so a flood of tiny overlapping segments cannot make inserts quadratic.
constexpr uint32_t kMaxHeldSegments = 8192;
// Buffers larger than this are given back once nothing out of order is held (a burst of
// reordering or one giant segment should not pin memory for the session's life).
constexpr uint32_t kShrinkAbove = 256 * 1024;
constexpr uint8_t kMaxWscale = 14;  // RFC 7323 2.3
constexpr size_t kScratchBytes = 65536 + 64;

// The tag stored in Flow::user for flows that are deliberately not tracked (seen mid-stream
// with midstream off): no memory, and later packets skip session creation cheaply.
char g_untracked_tag;

int idx(flow::Direction d) {
    return static_cast<int>(d);
}

uint64_t pow2_at_least(uint64_t v) {
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

}  // namespace

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

    void free_buffers(Half& h) {
        refund(h.cap + h.cap / 8 + uint64_t{h.held_cap} * sizeof(Held) +
               uint64_t{h.pdu_cap} * sizeof(uint64_t));
        std::free(h.buf);
        std::free(h.bits);
        std::free(h.held);
        std::free(h.pdus);
        h.buf = nullptr;
        h.bits = nullptr;
        h.held = nullptr;
        h.pdus = nullptr;
        h.cap = 0;
        h.held_cap = 0;
        h.pdu_cap = 0;
        h.nheld = 0;
        h.max_held_len = 0;
        h.held_end = 0;
        h.bits_dirty = false;
        h.tail_start = h.delivered;
        h.buf_base = h.delivered;
    }

    // Moves the buffer's window forward by k bytes (a multiple of 64, so that bitmap words
    // move whole), keeping the tail and everything held.
    void slide(Half& h, uint64_t k) {
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
    uint64_t keep_from_for(const Half& h) const {
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

    bool resize(Half& h, uint64_t newcap) {
        const uint64_t old_bytes = h.cap + h.cap / 8;
        const uint64_t new_bytes = newcap + newcap / 8;
        if (new_bytes > old_bytes && !charge(new_bytes - old_bytes)) {
            return false;
        }
        auto* nb = static_cast<uint8_t*>(std::realloc(h.buf, newcap));
        if (nb == nullptr) {
            if (new_bytes > old_bytes) {
                refund(new_bytes - old_bytes);
            }
            return false;
        }
        h.buf = nb;
        auto* bits = static_cast<uint64_t*>(std::realloc(h.bits, newcap / 8));
        if (bits == nullptr) {
            // Keep the (possibly moved) data buffer; the old cap still describes it.
            if (new_bytes > old_bytes) {
                refund(new_bytes - old_bytes);
            }
            return false;
        }
        h.bits = bits;
        if (newcap > h.cap) {
            std::memset(reinterpret_cast<uint8_t*>(h.bits) + h.cap / 8, 0, (newcap - h.cap) / 8);
        }
        if (new_bytes < old_bytes) {
            refund(old_bytes - new_bytes);
        }
        h.cap = newcap;
        return true;
    }

    // Gives a large buffer back once nothing is held (keeps the tail).
    void maybe_shrink(Half& h) {
        if (h.cap <= kShrinkAbove || h.nheld != 0) {
            return;
        }
        const uint64_t keep_from = keep_from_for(h);
        const uint64_t k = (keep_from - h.buf_base) & ~uint64_t{63};
        if (k != 0) {
            slide(h, k);
        }
        const uint64_t need = std::max<uint64_t>(h.delivered - h.buf_base, 1);
        const uint64_t newcap = pow2_at_least(need * 2);
        if (newcap < h.cap) {
            if (h.bits_dirty) {
                std::memset(h.bits, 0, h.cap / 8);
                h.bits_dirty = false;
            }
            resize(h, newcap);
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

    // Room for one more held segment (grows the list within the memcap).
    bool reserve_held(Half& h) {
        if (h.nheld < h.held_cap) {
            return true;
        }
        if (h.held_cap >= kMaxHeldSegments) {
            return false;
        }
        const uint32_t ncap = h.held_cap == 0 ? 8 : h.held_cap * 2;
        if (!charge(uint64_t{ncap - h.held_cap} * sizeof(Held))) {
            return false;
        }
        auto* n = static_cast<Held*>(std::realloc(h.held, ncap * sizeof(Held)));
        if (n == nullptr) {
            refund(uint64_t{ncap - h.held_cap} * sizeof(Held));
            return false;
        }
        h.held = n;
        h.held_cap = ncap;
        return true;
    }

    // Inserts [s, e) in (start, end) order; reserve_held() must have succeeded.
    static void add_held(Half& h, uint64_t s, uint64_t e) {
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
    static void prune_held(Half& h) {
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

    // Delivers the next contiguous run (skipping one hole if the gap rule allows).
    bool deliver_one(Half& h, StreamChunk& ch) {
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

    // Hands the app layer h's next run: what the receiver acknowledged, or everything
    // delivered when `all`; a pending hole comes first, as the chunk's gap. One run per call.
    bool deliver_app(Half& h, StreamChunk& ch, bool all) {
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

    // Hands out h's next raw run when raw_ready(): from raw.done up to raw_end(), with up
    // to `keep` bytes inspected before in front (never across a hole). One run per call.
    bool deliver_raw(const Session& s, Half& h, StreamChunk& ch) {
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

    void run_splitter(Session& s, Half& h, flow::Direction dir, StreamChunk& ch) {
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
                const uint32_t ncap =
                    std::min(kMaxPdusPerChunk, h.pdu_cap == 0 ? 8 : h.pdu_cap * 2);
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

    // ---- segments ----

    // The data of one segment sent by half h. Delivers into ch what became contiguous.
    void handle_data(Half& h, const decode::Packet& p, StreamChunk& ch, StreamUpdate& u) {
        if (h.depth_reached && h.delivered >= cfg.reassembly_depth) {
            return;
        }
        const uint8_t* data = p.payload;
        uint32_t len = p.payload_len;
        int64_t so = h.off_of(p.tcp_seq);
        if (so < 0) {  // part before the stream's first byte (SYN data retransmitted)
            if (-so >= static_cast<int64_t>(len)) {
                return;
            }
            data += -so;
            len -= static_cast<uint32_t>(-so);
            so = 0;
        }
        // Window: a segment starting past the receiver's right edge is not accepted by it.
        if (h.ack_known && static_cast<int32_t>(p.tcp_seq - (h.last_ack + h.rwnd)) > 0) {
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
            if (diff) {
                ++c.overlap_diff_data;
                u.events |= kEventOverlapDiffData;
            }
            return;
        }
        const uint64_t a = std::max(s0, h.delivered);
        overlapped = s0 < h.delivered;
        const uint8_t* src = data + (a - s0);
        const uint64_t n = e - a;

        if (h.nheld == 0 && a == h.delivered) {
            // In order, nothing held: the common case.
            if (overlapped) {
                ++c.overlap;
                u.events |= kEventOverlap;
            }
            if (diff) {
                ++c.overlap_diff_data;
                u.events |= kEventOverlapDiffData;
            }
            if (keep == 0 && !cfg.app_on_ack && !cfg.raw_on_ack) {
                ch.window = src;
                ch.window_len = static_cast<uint32_t>(n);
                ch.new_offset = 0;
                ch.stream_offset = a;
                h.delivered = e;
                h.tail_start = e;
                return;
            }
            if (!ensure(h, e)) {
                // Reassembly memcap reached (e.g. a flood of out-of-order segments on other
                // sessions): in-order data that the receiver accepts is still handed over,
                // straight from the packet as with keep_tail 0, instead of being dropped and
                // later skipped as a gap. Only a match straddling the previous segment can be
                // missed; counted in tcp.reassembly_memcap_no_tail.
                ++c.memcap_no_tail;
                ch.window = src;
                ch.window_len = static_cast<uint32_t>(n);
                ch.new_offset = 0;
                ch.stream_offset = a;
                h.delivered = e;
                h.tail_start = e;
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
        if (overlapped) {
            ++c.overlap;
            u.events |= kEventOverlap;
        }
        if (diff) {
            ++c.overlap_diff_data;
            u.events |= kEventOverlapDiffData;
        }
        std::memcpy(h.buf + (a - h.buf_base), tmp, n);
        set_bits(h, a, e);
        deliver_one(h, ch);
    }

    static bool rst_acceptable(const Session& s, const Half& h, const Half& r,
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

    static bool fin_acked(const Half& h) {
        return h.fin && h.ack_known && h.off_of(h.last_ack) >= static_cast<int64_t>(h.fin_off) + 1;
    }

    void close(Session& s) {
        s.state = SessionState::kClosed;
        s.half[0].flush_all = true;
        s.half[1].flush_all = true;
    }

    Policy policy_for(const decode::Address& a) const {
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

    void list_append(Session* s) {
        s->older = newest;
        s->newer = nullptr;
        (newest == nullptr ? oldest : newest->newer) = s;
        newest = s;
        s->listed = true;
    }
    void list_unlink(Session* s) {
        (s->older == nullptr ? oldest : s->older->newer) = s->newer;
        (s->newer == nullptr ? newest : s->newer->older) = s->older;
        s->older = s->newer = nullptr;
        s->listed = false;
    }
    // Frees the oldest session still in syn_sent. False when there is none.
    bool reclaim_half_open() {
        while (oldest != nullptr) {
            Session* s = oldest;
            list_unlink(s);
            if (s->state != SessionState::kSynSent) {
                continue;  // established or closing: never reclaimed, no longer listed
            }
            s->flow->user[kStreamUserSlot] = &g_untracked_tag;
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

    Session* create(const decode::Packet& p, flow::Flow& f, flow::Direction dir, StreamUpdate& u) {
        const uint8_t fl = p.tcp_flags;
        const bool syn = (fl & kSyn) != 0;
        const bool ack = (fl & kAck) != 0;
        const bool pure_syn = syn && !ack;
        if (!pure_syn && (!cfg.midstream || (fl & kRst) != 0)) {
            if (!cfg.midstream) {
                f.user[kStreamUserSlot] = &g_untracked_tag;
            }
            u.events |= kEventNotTracked;
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
        f.user[kStreamUserSlot] = s;
        s->flow = &f;
        list_append(s);
        const int d = idx(dir);
        const int o = 1 - d;
        Half& h = s->half[d];
        Half& r = s->half[o];
        h.policy = policy_for(p.dst);
        r.policy = policy_for(p.src);
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

    void on_syn(Session& s, int d, const decode::Packet& p) {
        Half& h = s.half[d];
        Half& r = s.half[1 - d];
        const bool ack = (p.tcp_flags & kAck) != 0;
        if (!ack) {
            // SYN retransmission (possibly with a new ISN) before any answer.
            if (s.state == SessionState::kSynSent && h.known && r.known == false) {
                h.base_seq = p.tcp_seq + 1;
                s.wscale[d] = p.tcp_wscale;
            }
            return;
        }
        if (s.state != SessionState::kSynSent || h.known || !r.known || p.tcp_ack != r.base_seq) {
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

    void finish(Session& s, StreamUpdate& u) {
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
                    } else if (!h.raw.eof_reported && h.raw.done >= h.delivered &&
                               h.raw.gap_len == 0 && h.raw.pkt_len == 0 &&
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
                       ((h.fin && h.app.done >= h.fin_off) ||
                        (s.state == SessionState::kClosed && h.nheld == 0))) {
                h.app.eof_reported = true;
                u.app[d].eof = true;
            }
        }
    }

    // Frees buffers that can no longer be needed; runs at the start of a call so that the
    // views handed out by the previous call stayed valid until now.
    void housekeeping(Session& s) {
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

    StreamUpdate process(const decode::Packet& p, flow::Flow& f, flow::Direction dir) {
        StreamUpdate u;
        if (!p.has(decode::kFlagTcp)) {
            u.events |= kEventNotTracked;
            return u;
        }
        void* slot = f.user[kStreamUserSlot];
        if (cfg.checksum_validation && p.has(decode::kFlagBadChecksum) && !tcp_checksum_ok(p)) {
            ++c.invalid_checksum;
            u.events |= kEventBadChecksum;
            if (slot != nullptr && slot != &g_untracked_tag) {
                u.state = static_cast<Session*>(slot)->state;
            }
            return u;
        }
        Session* s = nullptr;
        if (slot == &g_untracked_tag) {
            if ((p.tcp_flags & (kSyn | kAck)) != kSyn) {
                u.events |= kEventNotTracked;
                return u;
            }
            f.user[kStreamUserSlot] = nullptr;
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
            if (!ack) {
                finish(ss, u);
                return u;
            }
            if (!h.known) {
                // The server answered with something other than a SYN/ACK (its SYN/ACK was
                // not captured): its stream starts here if it acknowledges our SYN.
                if (!r.known || p.tcp_ack != r.base_seq) {
                    finish(ss, u);
                    return u;
                }
                h.base_seq = p.tcp_seq;
                h.known = true;
            } else if (!r.known) {
                // The client's ACK of a SYN/ACK we missed names the server's ISN + 1.
                r.base_seq = p.tcp_ack;
                r.known = true;
            }
            ss.state = SessionState::kEstablished;
        } else if (ss.state == SessionState::kSynRecv) {
            if (!ack) {
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
            handle_data(h, p, u.chunk[d], u);
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

    // Delivers one run for each direction whose chunk is still empty (app_on_ack: the app
    // layer's run first, for the directions it may have now).
    void deliver_both(Session& s, StreamUpdate& u) {
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

    static bool tcp_checksum_ok(const decode::Packet& p) {
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
};

StreamTracker::StreamTracker(const StreamConfig& config)
    : impl_(std::make_unique<Impl>(config, counters_)) {}

StreamTracker::~StreamTracker() = default;

StreamUpdate StreamTracker::process(const decode::Packet& p, flow::Flow& f, flow::Direction dir,
                                    int64_t now_ns) {
    (void)now_ns;  // packet time is not needed yet: the flow table owns timeouts
    return impl_->process(p, f, dir);
}

StreamUpdate StreamTracker::next(flow::Flow& f) {
    StreamUpdate u;
    void* slot = f.user[kStreamUserSlot];
    if (slot == nullptr || slot == &g_untracked_tag) {
        u.events |= kEventNotTracked;
        return u;
    }
    auto* s = static_cast<Session*>(slot);
    impl_->deliver_both(*s, u);
    impl_->finish(*s, u);
    return u;
}

StreamUpdate StreamTracker::flush(flow::Flow& f) {
    void* slot = f.user[kStreamUserSlot];
    if (slot != nullptr && slot != &g_untracked_tag) {
        auto* s = static_cast<Session*>(slot);
        s->half[0].flush_all = true;
        s->half[1].flush_all = true;
        s->app_allow = 3;
        s->raw_allow = 3;
    }
    return next(f);
}

void StreamTracker::release_flow(flow::Flow& f) {
    void* slot = f.user[kStreamUserSlot];
    f.user[kStreamUserSlot] = nullptr;
    if (slot == nullptr || slot == &g_untracked_tag) {
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
    void* slot = f.user[kStreamUserSlot];
    if (slot == nullptr || slot == &g_untracked_tag) {
        return false;
    }
    auto* s = static_cast<Session*>(slot);
    s->splitter = sp;
    s->half[0].splitter_aborted = false;
    s->half[1].splitter_aborted = false;
    return true;
}

void StreamTracker::trigger_raw(flow::Flow& f, flow::Direction dir) {
    void* slot = f.user[kStreamUserSlot];
    if (slot == nullptr || slot == &g_untracked_tag) {
        return;
    }
    static_cast<Session*>(slot)->half[static_cast<int>(dir)].raw_trigger = true;
}

void StreamTracker::raw_per_packet(flow::Flow& f) {
    void* slot = f.user[kStreamUserSlot];
    if (slot == nullptr || slot == &g_untracked_tag || !impl_->cfg.raw_on_ack) {
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
    void* slot = f.user[kStreamUserSlot];
    if (slot == nullptr || slot == &g_untracked_tag) {
        return false;
    }
    return impl_->raw_ack(static_cast<const Session*>(slot)->half[static_cast<int>(dir)]);
}

void StreamTracker::set_keep_tail(uint32_t bytes) {
    impl_->keep = std::min(bytes, impl_->cfg.chunk_size);
}

uint32_t StreamTracker::keep_tail() const {
    return impl_->keep;
}

SessionState StreamTracker::state(const flow::Flow& f) const {
    void* slot = f.user[kStreamUserSlot];
    if (slot == nullptr || slot == &g_untracked_tag) {
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
    switch (s) {
        case SessionState::kNone:
            return "none";
        case SessionState::kSynSent:
            return "syn_sent";
        case SessionState::kSynRecv:
            return "syn_recv";
        case SessionState::kEstablished:
            return "established";
        case SessionState::kClosing:
            return "closing";
        case SessionState::kClosed:
            return "closed";
    }
    return "?";
}

void StreamTracker::export_stats(StatsSnapshot& out) const {
    const StreamCounters& c = counters_;
    out.add("tcp.sessions", c.sessions.get());
    out.add("tcp.ssn_memcap_drop", c.ssn_memcap_drop.get());
    out.add("tcp.ssn_memcap_reclaimed", c.ssn_memcap_reclaimed.get());
    out.add("tcp.reassembly_memcap_no_tail", c.memcap_no_tail.get());
    out.add("tcp.segment_memcap_drop", c.segment_memcap_drop.get());
    out.add("tcp.reassembly_gap", c.reassembly_gap.get());
    out.add("tcp.overlap", c.overlap.get());
    out.add("tcp.overlap_diff_data", c.overlap_diff_data.get());
    out.add("tcp.midstream_pickups", c.midstream_pickups.get());
    out.add("tcp.invalid_checksum", c.invalid_checksum.get());
    out.add("tcp.retransmissions", c.retransmissions.get());
    out.add("tcp.out_of_window", c.out_of_window.get());
    out.add("tcp.reassembly_depth_reached", c.reassembly_depth_reached.get());
    out.add("tcp.rst_invalid", c.rst_invalid.get());
    out.add("tcp.memuse", c.memuse.get());
    out.add("tcp.reassembly_memuse", c.reassembly_memuse.get());
}

}  // namespace picket::sensor::stream
