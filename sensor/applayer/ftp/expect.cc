// The shared, lock-free table of FTP data-channel expectations; see expect.h.
#include "sensor/applayer/ftp/expect.h"

#include <cstring>

namespace picket::sensor::applayer::ftp {

bool same_key(const ExpectKey& a, const ExpectKey& b) {
    return a.v6 == b.v6 && a.resp_port == b.resp_port && std::memcmp(a.orig, b.orig, 16) == 0 &&
           std::memcmp(a.resp, b.resp, 16) == 0;
}

ExpectTable::ExpectTable(size_t slots) {
    size_t n = kProbe;
    while (n < slots) {
        n <<= 1;
    }
    slots_ = std::make_unique<Slot[]>(n);
    mask_ = n - 1;
}

// FNV-1a over the responder's address and port (the originator may be NATed differently; it is
// compared, not hashed). Never 0: 0 marks a slot with no key.
uint64_t ExpectTable::hash(const ExpectKey& k) {
    uint64_t h = 1469598103934665603ULL;
    auto mix = [&h](uint8_t b) {
        h ^= b;
        h *= 1099511628211ULL;
    };
    for (uint8_t b : k.resp) {
        mix(b);
    }
    mix(static_cast<uint8_t>(k.resp_port >> 8));
    mix(static_cast<uint8_t>(k.resp_port & 0xff));
    return h | 1;
}

void ExpectTable::release(Slot& s) {
    s.tag.store(0, std::memory_order_relaxed);
    s.owner.store(0, std::memory_order_relaxed);
    s.state.store(kFree, std::memory_order_release);
    live_.fetch_sub(1, std::memory_order_relaxed);
}

bool ExpectTable::add(const Expectation& e, int64_t now_ns) {
    const uint64_t h = hash(e.key);
    for (size_t i = 0; i < kProbe; ++i) {
        Slot& s = slots_[(h + i) & mask_];
        uint32_t st = s.state.load(std::memory_order_acquire);
        if (st == kFree) {
            if (!s.state.compare_exchange_strong(st, kBusy, std::memory_order_acq_rel)) {
                continue;
            }
            live_.fetch_add(1, std::memory_order_relaxed);
        } else if (st == kLive) {
            if (!s.state.compare_exchange_strong(st, kBusy, std::memory_order_acq_rel)) {
                continue;
            }
            // Ours now: reuse it if expired or the same key (a newer announcement wins).
            if (s.e.expires_ns >= now_ns && !same_key(s.e.key, e.key)) {
                s.state.store(kLive, std::memory_order_release);
                continue;
            }
        } else {
            continue;
        }
        s.e = e;
        s.tag.store(h, std::memory_order_relaxed);
        s.owner.store(e.owner, std::memory_order_relaxed);
        s.state.store(kLive, std::memory_order_release);
        return true;
    }
    return false;
}

bool ExpectTable::take(const ExpectKey& k, int64_t now_ns, Expectation* out) {
    if (live_.load(std::memory_order_relaxed) <= 0) {
        return false;
    }
    const uint64_t h = hash(k);
    for (size_t i = 0; i < kProbe; ++i) {
        Slot& s = slots_[(h + i) & mask_];
        if (s.tag.load(std::memory_order_relaxed) != h) {
            continue;
        }
        uint32_t st = kLive;
        if (!s.state.compare_exchange_strong(st, kBusy, std::memory_order_acq_rel)) {
            continue;
        }
        if (s.e.expires_ns < now_ns) {
            release(s);  // expired: dropped
            continue;
        }
        if (!same_key(s.e.key, k)) {
            s.state.store(kLive, std::memory_order_release);
            continue;
        }
        *out = s.e;
        release(s);
        return true;
    }
    return false;
}

void ExpectTable::remove_owner(uint64_t owner) {
    if (live_.load(std::memory_order_relaxed) <= 0) {
        return;
    }
    for (size_t i = 0; i <= mask_; ++i) {
        Slot& s = slots_[i];
        if (s.owner.load(std::memory_order_relaxed) != owner) {
            continue;
        }
        uint32_t st = kLive;
        if (!s.state.compare_exchange_strong(st, kBusy, std::memory_order_acq_rel)) {
            continue;
        }
        if (s.e.owner == owner) {
            release(s);
        } else {
            s.state.store(kLive, std::memory_order_release);
        }
    }
}

}  // namespace picket::sensor::applayer::ftp
