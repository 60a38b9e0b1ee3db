#include "sensor/detect/tag.h"

#include <array>
#include <atomic>
#include <cstring>
#include <limits>

#include "sensor/detect/flowbits.h"

namespace picket::sensor::detect {

namespace {

constexpr int64_t kNsPerSec = 1000000000;

// Whole seconds of a packet time, rounded down (also before 1970).
int64_t secs_of(int64_t ts_ns) {
    return ts_ns >= 0 ? ts_ns / kNsPerSec : -((-ts_ns + kNsPerSec - 1) / kNsPerSec);
}

std::atomic<uint64_t> g_tags_dropped{0};

TagWindow window_of(const TagSpec& spec, int64_t ts_ns) {
    TagWindow w;
    w.count = spec.count;
    w.metric = spec.metric;
    w.start_s = secs_of(ts_ns);
    return w;
}

// ---------------------------------------------------------------------------------------
// Host table: open addressing over kHostTagSlots slots; a host's tags sit in the probe window
// that starts at its address's home slot, so a packet reads at most kHostTagProbe slots per
// address. A slot is free when its key is 0 or its expiry (packet time) has passed; an ended
// tag sets its expiry to 0.

struct HostSlot {
    std::atomic<uint64_t> key{0};   // hash of address and (gid, sid, index); 0 = never used
    std::atomic<uint64_t> host{0};  // hash of the address (never 0)
    std::atomic<uint64_t> spec{0};  // metric << 32 | count
    std::atomic<int64_t> start_s{0};
    std::atomic<uint64_t> used{0};
    std::atomic<int64_t> expire_ns{0};
};

std::array<HostSlot, kHostTagSlots>& host_table() {
    static std::array<HostSlot, kHostTagSlots> table;
    return table;
}
// The latest expiry of any host tag installed: past it no slot can be live.
std::atomic<int64_t> g_host_horizon{std::numeric_limits<int64_t>::min()};

uint64_t mix64(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

uint64_t host_hash(const decode::Address& a) {
    uint64_t lo = 0, hi = 0;
    std::memcpy(&lo, a.b, 8);
    std::memcpy(&hi, a.b + 8, 8);
    uint64_t h = mix64(mix64(0x7461670000000001ULL, lo), hi);
    h ^= h >> 29;
    return h == 0 ? 1 : h;
}

int64_t host_expiry(const TagSpec& spec, int64_t ts_ns) {
    const int64_t start = secs_of(ts_ns) * kNsPerSec;
    const int64_t age =
        spec.metric == TagMetric::kSeconds ? int64_t{spec.count} + 1 : kHostTagMaxAge;
    return start + age * kNsPerSec;
}

// Steps one live slot with a packet; ends the tag (expiry 0) at its limit.
bool host_slot_step(HostSlot& s, int64_t ts_s, uint32_t len) {
    const uint64_t spec = s.spec.load(std::memory_order_acquire);
    const auto metric = static_cast<TagMetric>(spec >> 32);
    const auto count = static_cast<uint32_t>(spec);
    bool in = false;
    switch (metric) {
        case TagMetric::kPackets:
            in = s.used.fetch_add(1, std::memory_order_relaxed) + 1 <= count;
            break;
        case TagMetric::kBytes:
            in = s.used.fetch_add(len, std::memory_order_relaxed) + len <= count;
            break;
        case TagMetric::kSeconds:
            in = ts_s - s.start_s.load(std::memory_order_relaxed) <= int64_t{count};
            break;
    }
    if (!in) {
        s.expire_ns.store(0, std::memory_order_release);
    }
    return in;
}

}  // namespace

bool tag_window_step(TagWindow& w, int64_t ts_s, uint32_t len) {
    switch (w.metric) {
        case TagMetric::kPackets:
            if (w.used >= w.count) {
                return false;
            }
            ++w.used;
            return true;
        case TagMetric::kBytes:
            if (w.used + len > w.count) {
                return false;
            }
            w.used += len;
            return true;
        case TagMetric::kSeconds:
            return ts_s - w.start_s <= int64_t{w.count};
    }
    return false;
}

bool session_tag_add(SessionTags& t, const TagSpec& spec, uint32_t gid, uint32_t sid, uint8_t index,
                     int64_t ts_ns) {
    for (uint8_t i = 0; i < t.n; ++i) {
        SessionTag& e = t.tag[i];
        if (e.gid == gid && e.sid == sid && e.index == index) {
            e.window = window_of(spec, ts_ns);  // renewed from this alert
            return true;
        }
    }
    if (t.n >= kMaxSessionTags) {
        g_tags_dropped.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    SessionTag& e = t.tag[t.n++];
    e.gid = gid;
    e.sid = sid;
    e.index = index;
    e.window = window_of(spec, ts_ns);
    return true;
}

bool session_tags_step(SessionTags& t, const decode::Packet& p) {
    const int64_t ts_s = secs_of(p.ts_ns);
    bool tagged = false;
    for (uint8_t i = 0; i < t.n;) {
        if (tag_window_step(t.tag[i].window, ts_s, p.caplen)) {
            tagged = true;
            ++i;
        } else {
            t.tag[i] = t.tag[--t.n];  // ended: removed (order does not matter)
        }
    }
    return tagged;
}

bool host_tag_add(const decode::Address& a, const TagSpec& spec, uint32_t gid, uint32_t sid,
                  uint8_t index, int64_t ts_ns) {
    const uint64_t host = host_hash(a);
    uint64_t key = mix64(mix64(host, (uint64_t{gid} << 32) | sid), index);
    key = key == 0 ? 1 : key;
    const uint64_t packed = (uint64_t{static_cast<uint8_t>(spec.metric)} << 32) | spec.count;
    const int64_t expire = host_expiry(spec, ts_ns);
    auto& t = host_table();
    const size_t home = static_cast<size_t>(host) & (kHostTagSlots - 1);
    HostSlot* slot = nullptr;
    // The same tag, live or not, is renewed in place; else the first free or expired slot.
    for (size_t i = 0; i < kHostTagProbe && slot == nullptr; ++i) {
        HostSlot& s = t[(home + i) & (kHostTagSlots - 1)];
        if (s.key.load(std::memory_order_acquire) == key) {
            slot = &s;
        }
    }
    for (size_t i = 0; i < kHostTagProbe && slot == nullptr; ++i) {
        HostSlot& s = t[(home + i) & (kHostTagSlots - 1)];
        uint64_t old = s.key.load(std::memory_order_acquire);
        if (old != 0 && s.expire_ns.load(std::memory_order_acquire) > ts_ns) {
            continue;  // a live tag
        }
        if (s.key.compare_exchange_strong(old, key, std::memory_order_acq_rel)) {
            slot = &s;
        }
    }
    if (slot == nullptr) {
        g_tags_dropped.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    // The expiry goes last: until then a reader sees the slot as ended (a renewal of a live
    // tag may show a packet the old window and the new count; one packet at most).
    slot->expire_ns.store(0, std::memory_order_release);
    slot->host.store(host, std::memory_order_relaxed);
    slot->spec.store(packed, std::memory_order_relaxed);
    slot->start_s.store(secs_of(ts_ns), std::memory_order_relaxed);
    slot->used.store(0, std::memory_order_relaxed);
    slot->expire_ns.store(expire, std::memory_order_release);
    int64_t horizon = g_host_horizon.load(std::memory_order_relaxed);
    while (horizon < expire &&
           !g_host_horizon.compare_exchange_weak(horizon, expire, std::memory_order_relaxed)) {
    }
    return true;
}

bool host_tags_maybe(int64_t ts_ns) {
    return ts_ns < g_host_horizon.load(std::memory_order_relaxed);
}

bool host_tags_step(const decode::Packet& p) {
    if (p.ip_version == 0) {
        return false;
    }
    const int64_t ts_s = secs_of(p.ts_ns);
    auto& t = host_table();
    bool tagged = false;
    const uint64_t hosts[2] = {host_hash(p.src), host_hash(p.dst)};
    const int nhosts = hosts[0] == hosts[1] ? 1 : 2;  // sameip: one lookup
    for (int k = 0; k < nhosts; ++k) {
        const uint64_t host = hosts[k];
        const size_t home = static_cast<size_t>(host) & (kHostTagSlots - 1);
        for (size_t i = 0; i < kHostTagProbe; ++i) {
            HostSlot& s = t[(home + i) & (kHostTagSlots - 1)];
            if (s.expire_ns.load(std::memory_order_acquire) <= p.ts_ns ||
                s.host.load(std::memory_order_relaxed) != host) {
                continue;
            }
            tagged |= host_slot_step(s, ts_s, p.caplen);
        }
    }
    return tagged;
}

void apply_tags(const Rule& r, const decode::Packet& p, flow::Flow* f, FlowbitPool& pool) {
    for (size_t i = 0; i < r.tags.size(); ++i) {
        const TagSpec& spec = r.tags[i];
        const auto index = static_cast<uint8_t>(i);
        if (spec.scope == TagScope::kSession) {
            if (f == nullptr) {
                continue;  // no session to tag (Suricata tags nothing either)
            }
            FlowbitStore* s = flowbits_acquire(*f, pool);
            if (s == nullptr) {
                g_tags_dropped.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            session_tag_add(s->tags, spec, r.gid, r.sid, index, p.ts_ns);
        } else if (p.ip_version != 0) {
            host_tag_add(spec.host_src ? p.src : p.dst, spec, r.gid, r.sid, index, p.ts_ns);
        }
    }
}

bool tag_packet(const decode::Packet& p, const flow::Flow* f) {
    bool tagged = false;
    if (FlowbitStore* s = flowbits_of(f); s != nullptr && s->tags.n != 0) {
        tagged = session_tags_step(s->tags, p);
    }
    if (host_tags_maybe(p.ts_ns)) {
        tagged |= host_tags_step(p);
    }
    return tagged;
}

uint64_t tags_dropped() {
    return g_tags_dropped.load(std::memory_order_relaxed);
}

void tags_clear() {
    for (HostSlot& s : host_table()) {
        s.key.store(0, std::memory_order_relaxed);
        s.host.store(0, std::memory_order_relaxed);
        s.expire_ns.store(0, std::memory_order_relaxed);
        s.used.store(0, std::memory_order_relaxed);
    }
    g_host_horizon.store(std::numeric_limits<int64_t>::min(), std::memory_order_relaxed);
    g_tags_dropped.store(0, std::memory_order_relaxed);
}

}  // namespace picket::sensor::detect
