// Stream buffers: growth, shrinking and freeing under the reassembly memcap, and
// the held-segment array.
#include "sensor/stream/stream.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "sensor/stream/internal.h"

namespace picket::sensor::stream {

void StreamTracker::Impl::free_buffers(Half& h) {
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

bool StreamTracker::Impl::resize(Half& h, uint64_t newcap) {
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

// maybe_shrink() found a large buffer with nothing held: slide out what is not needed and
// give memory back (keeps the tail).
void StreamTracker::Impl::shrink(Half& h) {
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

// Room for one more held segment (grows the list within the memcap).
bool StreamTracker::Impl::reserve_held(Half& h) {
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

}  // namespace picket::sensor::stream
