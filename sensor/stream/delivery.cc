// Chunks out of a session: the app and raw cursors (app_on_ack / raw_on_ack), the PDU
// splitter, and the end of each call (what both directions hand over now).
#include "sensor/stream/stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "sensor/stream/internal.h"

namespace picket::sensor::stream {

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
                   ((h.fin && h.app.done >= h.fin_off) ||
                    (s.state == SessionState::kClosed && h.nheld == 0))) {
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

}  // namespace picket::sensor::stream
