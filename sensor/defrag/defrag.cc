#include "sensor/defrag/defrag.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <random>
#include <vector>

namespace picket::sensor::defrag {

namespace {

using decode::Address;
using decode::Packet;

constexpr uint32_t kNil = 0xffffffffu;
constexpr uint32_t kNoEnd = 0xffffffffu;
constexpr uint32_t kIpv4MinHeader = 20;
constexpr uint32_t kIpv4MaxHeader = 60;
constexpr uint32_t kIpv6Header = 40;
constexpr uint32_t kMaxIpLen = 65535;  // IPv4 total length, IPv6 payload length (no jumbograms)
constexpr uint32_t kOutCapacity = kIpv6Header + kMaxIpLen;  // also bounds IPv4
constexpr uint32_t kMaxTrackers = 1u << 24;
constexpr uint32_t kMaxFragsPerTracker = 65535;

struct Chunk {
    uint32_t next;
    uint8_t data[kDefragChunkDataBytes];
};
static_assert(sizeof(Chunk) == kDefragChunkBytes);

// One fragment held: its payload lives in a chain of chunks. Fragments of a tracker form a
// list sorted by offset; seq is the arrival order, which the overlap policies need.
struct Frag {
    uint32_t next;
    uint32_t chunk;
    uint32_t offset;
    uint32_t len;
    uint32_t seq;
};
static_assert(sizeof(Frag) <= kDefragFragBytes);

struct Tracker {
    Address src, dst;
    int64_t last_seen_ns;
    uint32_t id;
    uint32_t hash;
    uint32_t hash_next;  // bucket chain, or the free list when unused
    uint32_t lru_prev, lru_next;
    uint32_t frags;  // offset-sorted list
    uint32_t nfrags;
    uint32_t next_seq;
    uint32_t end;        // end of the datagram's data once a fragment with MF=0 arrived
    uint32_t hdr_chunk;  // header of the offset-0 fragment
    uint32_t mem;        // bytes charged to the memcap
    uint16_t vlan[2];
    uint16_t hdr_len;
    uint16_t prev_nh_offset;
    uint8_t version;
    uint8_t proto;
    uint8_t next_header;
    bool in_use;
};
static_assert(sizeof(Tracker) <= kDefragTrackerBytes);

// Index-addressed pool of T (each T has a `next` link), grown lazily in blocks and never
// shrunk: once traffic reached a size, the same memory is reused through the free list.
// The memcap bounds what is in use, so it also bounds how far the pool ever grows.
template <typename T, uint32_t kShift>
class Pool {
public:
    static constexpr uint32_t kBlockItems = 1u << kShift;

    explicit Pool(uint64_t max_items) {
        // Reserved up front so that growing never reallocates the block table; a pool that
        // would need more blocks than that fails like an exhausted memcap.
        uint64_t blocks = max_items / kBlockItems + 2;
        blocks_.reserve(static_cast<size_t>(std::min<uint64_t>(blocks, 1u << 18)));
    }

    T& at(uint32_t i) { return blocks_[i >> kShift][i & (kBlockItems - 1)]; }

    uint32_t alloc() {
        if (free_ == kNil && !grow()) {
            return kNil;
        }
        uint32_t i = free_;
        free_ = at(i).next;
        at(i).next = kNil;
        return i;
    }

    void release(uint32_t i) {
        at(i).next = free_;
        free_ = i;
    }

private:
    bool grow() {
        if (blocks_.size() == blocks_.capacity()) {
            return false;
        }
        std::unique_ptr<T[]> block(new (std::nothrow) T[kBlockItems]);
        if (!block) {
            return false;
        }
        const uint32_t base = static_cast<uint32_t>(blocks_.size()) << kShift;
        for (uint32_t k = 0; k < kBlockItems; ++k) {
            block[k].next = k + 1 < kBlockItems ? base + k + 1 : kNil;
        }
        blocks_.push_back(std::move(block));
        free_ = base;
        return true;
    }

    std::vector<std::unique_ptr<T[]>> blocks_;
    uint32_t free_ = kNil;
};

uint32_t chunks_for(uint32_t len) {
    return (len + kDefragChunkDataBytes - 1) / kDefragChunkDataBytes;
}

uint32_t rotl(uint32_t x, int r) {
    return (x << r) | (x >> (32 - r));
}

uint32_t mix(uint32_t h, uint32_t w) {
    w *= 0xcc9e2d51u;
    w = rotl(w, 15);
    w *= 0x1b873593u;
    h ^= w;
    h = rotl(h, 13);
    return h * 5 + 0xe6546b64u;
}

uint32_t load32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

bool ieq(const char* a, const char* b) {
    for (; *a != '\0' && *b != '\0'; ++a, ++b) {
        char x = *a >= 'A' && *a <= 'Z' ? static_cast<char>(*a - 'A' + 'a') : *a;
        if (x != *b) {
            return false;
        }
    }
    return *a == *b;
}

}  // namespace

bool parse_policy(const char* name, OverlapPolicy* out) {
    if (name == nullptr) {
        return false;
    }
    struct Entry {
        const char* name;
        OverlapPolicy policy;
    };
    static constexpr Entry kNames[] = {
        {"first", OverlapPolicy::kFirst},    {"last", OverlapPolicy::kLast},
        {"bsd", OverlapPolicy::kBsd},        {"linux", OverlapPolicy::kLinux},
        {"windows", OverlapPolicy::kFirst},  {"solaris", OverlapPolicy::kFirst},
        {"bsd-right", OverlapPolicy::kLast},
    };
    for (const Entry& e : kNames) {
        if (ieq(name, e.name)) {
            *out = e.policy;
            return true;
        }
    }
    return false;
}

struct Defragmenter::Impl {
    Impl(const DefragConfig& config, DefragCounters& counters);

    DefragResult process(const Packet& p, const uint8_t** out, uint32_t* out_len);
    void expire(int64_t now_ns);

    // Whether fragment a's bytes win over b's where they overlap. Every policy is a total
    // order on (offset, arrival), so the winner of each byte is the greatest fragment
    // covering it, and writing fragments in ascending order leaves the winners in place.
    bool beats(const Frag& a, const Frag& b) const {
        switch (cfg_.policy) {
            case OverlapPolicy::kFirst:
                return a.seq < b.seq;
            case OverlapPolicy::kLast:
                return a.seq > b.seq;
            case OverlapPolicy::kBsd:
                return a.offset < b.offset || (a.offset == b.offset && a.seq < b.seq);
            case OverlapPolicy::kLinux:
                return a.offset < b.offset || (a.offset == b.offset && a.seq > b.seq);
        }
        return false;
    }

    uint32_t hash_key(const Packet& p, uint8_t proto) const;
    uint32_t find(const Packet& p, uint8_t proto, uint32_t h);
    uint32_t new_tracker(const Packet& p, uint8_t proto, uint32_t h);
    void release_tracker(uint32_t ti);
    void lru_unlink(uint32_t ti);
    void lru_append(uint32_t ti);
    void expire_idle(int64_t now_ns);
    void evict_oldest();
    uint32_t store(const uint8_t* data, uint32_t len);
    void free_chain(uint32_t ci);
    bool complete(const Tracker& t);
    DefragResult reassemble(Tracker& t, const uint8_t** out, uint32_t* out_len);
    void sync_gauges() {
        ctr_.trackers_active.set(active_);
        ctr_.memuse.set(memuse_);
    }

    DefragConfig cfg_;
    DefragCounters& ctr_;
    std::vector<Tracker> trackers_;
    std::vector<uint32_t> buckets_;
    uint32_t bucket_mask_ = 0;
    uint32_t free_trackers_ = kNil;
    uint32_t lru_head_ = kNil;
    uint32_t lru_tail_ = kNil;
    uint32_t active_ = 0;
    uint64_t memuse_ = 0;
    uint32_t seed_ = 0;
    Pool<Frag, 10> frags_;
    Pool<Chunk, 8> chunks_;
    std::vector<uint32_t> order_;  // scratch: fragments in painting order
    std::unique_ptr<uint8_t[]> out_;
};

Defragmenter::Impl::Impl(const DefragConfig& config, DefragCounters& counters)
    : cfg_(config),
      ctr_(counters),
      frags_(config.memcap / kDefragFragBytes),
      chunks_(config.memcap / kDefragChunkBytes) {
    cfg_.max_trackers = std::clamp<uint32_t>(cfg_.max_trackers, 1, kMaxTrackers);
    cfg_.max_frags_per_tracker =
        std::clamp<uint32_t>(cfg_.max_frags_per_tracker, 1, kMaxFragsPerTracker);
    trackers_.resize(cfg_.max_trackers);
    for (uint32_t i = 0; i < cfg_.max_trackers; ++i) {
        trackers_[i].in_use = false;
        trackers_[i].hash_next = i + 1 < cfg_.max_trackers ? i + 1 : kNil;
    }
    free_trackers_ = 0;
    uint32_t nb = 16;
    while (nb < cfg_.max_trackers) {
        nb <<= 1;
    }
    buckets_.assign(nb, kNil);
    bucket_mask_ = nb - 1;
    seed_ = std::random_device{}();
    order_.resize(cfg_.max_frags_per_tracker);
    out_.reset(new uint8_t[kOutCapacity]);
}

uint32_t Defragmenter::Impl::hash_key(const Packet& p, uint8_t proto) const {
    uint32_t h = seed_;
    for (int i = 0; i < 16; i += 4) {
        h = mix(h, load32(p.src.b + i));
        h = mix(h, load32(p.dst.b + i));
    }
    h = mix(h, p.frag_id);
    h = mix(h, (uint32_t{p.ip_version} << 8) | proto);
    h = mix(h, (uint32_t{p.vlan_id[0]} << 16) | p.vlan_id[1]);
    return static_cast<uint32_t>(decode::mix64(h));
}

uint32_t Defragmenter::Impl::find(const Packet& p, uint8_t proto, uint32_t h) {
    for (uint32_t ti = buckets_[h & bucket_mask_]; ti != kNil; ti = trackers_[ti].hash_next) {
        const Tracker& t = trackers_[ti];
        if (t.hash == h && t.id == p.frag_id && t.version == p.ip_version && t.proto == proto &&
            t.vlan[0] == p.vlan_id[0] && t.vlan[1] == p.vlan_id[1] && t.src == p.src &&
            t.dst == p.dst) {
            return ti;
        }
    }
    return kNil;
}

void Defragmenter::Impl::lru_unlink(uint32_t ti) {
    Tracker& t = trackers_[ti];
    (t.lru_prev == kNil ? lru_head_ : trackers_[t.lru_prev].lru_next) = t.lru_next;
    (t.lru_next == kNil ? lru_tail_ : trackers_[t.lru_next].lru_prev) = t.lru_prev;
    t.lru_prev = t.lru_next = kNil;
}

void Defragmenter::Impl::lru_append(uint32_t ti) {
    Tracker& t = trackers_[ti];
    t.lru_prev = lru_tail_;
    t.lru_next = kNil;
    (lru_tail_ == kNil ? lru_head_ : trackers_[lru_tail_].lru_next) = ti;
    lru_tail_ = ti;
}

uint32_t Defragmenter::Impl::new_tracker(const Packet& p, uint8_t proto, uint32_t h) {
    if (free_trackers_ == kNil) {
        expire_idle(p.ts_ns);
        if (free_trackers_ == kNil) {
            if (lru_head_ == kNil) {
                return kNil;
            }
            evict_oldest();  // see evict_oldest(): a flood must not lock new datagrams out
        }
    }
    const uint32_t ti = free_trackers_;
    Tracker& t = trackers_[ti];
    free_trackers_ = t.hash_next;
    t.src = p.src;
    t.dst = p.dst;
    t.last_seen_ns = p.ts_ns;
    t.id = p.frag_id;
    t.hash = h;
    t.frags = kNil;
    t.nfrags = 0;
    t.next_seq = 0;
    t.end = kNoEnd;
    t.hdr_chunk = kNil;
    t.mem = 0;
    t.vlan[0] = p.vlan_id[0];
    t.vlan[1] = p.vlan_id[1];
    t.hdr_len = 0;
    t.prev_nh_offset = 0;
    t.version = p.ip_version;
    t.proto = proto;
    t.next_header = 0;
    t.in_use = true;
    uint32_t& bucket = buckets_[h & bucket_mask_];
    t.hash_next = bucket;
    bucket = ti;
    lru_append(ti);
    ++active_;
    return ti;
}

void Defragmenter::Impl::free_chain(uint32_t ci) {
    while (ci != kNil) {
        const uint32_t next = chunks_.at(ci).next;
        chunks_.release(ci);
        ci = next;
    }
}

void Defragmenter::Impl::release_tracker(uint32_t ti) {
    Tracker& t = trackers_[ti];
    for (uint32_t fi = t.frags; fi != kNil;) {
        Frag& f = frags_.at(fi);
        const uint32_t next = f.next;
        free_chain(f.chunk);
        frags_.release(fi);
        fi = next;
    }
    free_chain(t.hdr_chunk);
    uint32_t* link = &buckets_[t.hash & bucket_mask_];
    while (*link != ti) {
        link = &trackers_[*link].hash_next;
    }
    *link = t.hash_next;
    lru_unlink(ti);
    memuse_ -= t.mem;
    --active_;
    t.in_use = false;
    t.frags = kNil;
    t.hdr_chunk = kNil;
    t.hash_next = free_trackers_;
    free_trackers_ = ti;
}

// Under pressure (memcap or every tracker in use, nothing idle past the timeout) the datagram
// with the oldest activity is given up for the new fragment, as Suricata reuses its oldest
// tracker: a flood of fragments that never complete would otherwise make every later
// datagram, complete or not, a memcap drop until the flood's trackers time out. A real
// datagram completes within milliseconds, so it survives unless a memcap's worth of fragments
// arrives in between. Counted in defrag.evicted.
void Defragmenter::Impl::evict_oldest() {
    release_tracker(lru_head_);
    ++ctr_.evicted;
}

void Defragmenter::Impl::expire_idle(int64_t now_ns) {
    while (lru_head_ != kNil && now_ns - trackers_[lru_head_].last_seen_ns > cfg_.timeout_ns) {
        release_tracker(lru_head_);
        ++ctr_.timeouts;
    }
}

void Defragmenter::Impl::expire(int64_t now_ns) {
    expire_idle(now_ns);
    sync_gauges();
}

// Copies len bytes into a fresh chunk chain; kNil (nothing held) if the pool cannot grow.
uint32_t Defragmenter::Impl::store(const uint8_t* data, uint32_t len) {
    uint32_t head = kNil;
    uint32_t* link = &head;
    for (uint32_t done = 0; done < len;) {
        const uint32_t ci = chunks_.alloc();
        if (ci == kNil) {
            free_chain(head);
            return kNil;
        }
        const uint32_t n = std::min(len - done, kDefragChunkDataBytes);
        std::memcpy(chunks_.at(ci).data, data + done, n);
        done += n;
        *link = ci;
        link = &chunks_.at(ci).next;
    }
    return head;
}

bool Defragmenter::Impl::complete(const Tracker& t) {
    if (t.end == kNoEnd || t.hdr_len == 0) {
        return false;
    }
    uint32_t reach = 0;
    for (uint32_t fi = t.frags; fi != kNil; fi = frags_.at(fi).next) {
        const Frag& f = frags_.at(fi);
        if (f.offset > reach) {
            return false;  // a hole
        }
        reach = std::max(reach, f.offset + f.len);
        if (reach >= t.end) {
            return true;
        }
    }
    return false;
}

DefragResult Defragmenter::Impl::reassemble(Tracker& t, const uint8_t** out, uint32_t* out_len) {
    const uint32_t hdr = t.hdr_len;
    const uint32_t total = hdr + t.end;
    if ((t.version == 4 && total > kMaxIpLen) ||
        (t.version == 6 && total - kIpv6Header > kMaxIpLen)) {
        ++ctr_.invalid;
        return DefragResult::kDropped;
    }
    uint8_t* buf = out_.get();
    uint32_t pos = 0;
    for (uint32_t ci = t.hdr_chunk; ci != kNil && pos < hdr; ci = chunks_.at(ci).next) {
        const uint32_t n = std::min(hdr - pos, kDefragChunkDataBytes);
        std::memcpy(buf + pos, chunks_.at(ci).data, n);
        pos += n;
    }

    uint32_t n = 0;
    for (uint32_t fi = t.frags; fi != kNil; fi = frags_.at(fi).next) {
        order_[n++] = fi;
    }
    std::sort(order_.begin(), order_.begin() + n,
              [this](uint32_t a, uint32_t b) { return beats(frags_.at(b), frags_.at(a)); });
    uint8_t* data = buf + hdr;
    for (uint32_t k = 0; k < n; ++k) {
        const Frag& f = frags_.at(order_[k]);
        if (f.offset >= t.end) {
            continue;
        }
        const uint32_t len = std::min(f.len, t.end - f.offset);
        uint32_t done = 0;
        for (uint32_t ci = f.chunk; ci != kNil && done < len; ci = chunks_.at(ci).next) {
            const uint32_t c = std::min(len - done, kDefragChunkDataBytes);
            std::memcpy(data + f.offset + done, chunks_.at(ci).data, c);
            done += c;
        }
    }

    if (t.version == 4) {
        buf[2] = static_cast<uint8_t>(total >> 8);
        buf[3] = static_cast<uint8_t>(total);
        buf[6] &= 0x40;  // keep DF; clear the reserved bit, MF and the offset
        buf[7] = 0;
        buf[10] = 0;
        buf[11] = 0;
        uint32_t sum = 0;
        for (uint32_t i = 0; i + 1 < hdr; i += 2) {
            sum += (uint32_t{buf[i]} << 8) | buf[i + 1];
        }
        while (sum > 0xffff) {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        const uint16_t csum = static_cast<uint16_t>(~sum);
        buf[10] = static_cast<uint8_t>(csum >> 8);
        buf[11] = static_cast<uint8_t>(csum);
        ++ctr_.ipv4_reassembled;
    } else {
        const uint32_t plen = total - kIpv6Header;
        buf[4] = static_cast<uint8_t>(plen >> 8);
        buf[5] = static_cast<uint8_t>(plen);
        buf[t.prev_nh_offset] = t.next_header;
        ++ctr_.ipv6_reassembled;
    }
    *out = buf;
    *out_len = total;
    return DefragResult::kReassembled;
}

DefragResult Defragmenter::Impl::process(const Packet& p, const uint8_t** out, uint32_t* out_len) {
    *out = nullptr;
    *out_len = 0;
    const bool v4 = p.ip_version == 4;
    const bool v6 = p.ip_version == 6;
    if (v4) {
        ++ctr_.ipv4_fragments;
    } else if (v6) {
        ++ctr_.ipv6_fragments;
    }
    const uint64_t off = p.frag_offset;
    const uint64_t len = p.frag_data_len;
    // Zero-length fragments carry nothing (Suricata ignores them too); an end past the
    // largest datagram can never reassemble into anything valid.
    bool valid = (v4 || v6) && p.has(decode::kFlagFragment) && p.l3 != nullptr &&
                 p.frag_data != nullptr && len > 0 &&
                 (v4 ? kIpv4MinHeader + off + len : off + len) <= kMaxIpLen;
    uint32_t hdr_len = 0;
    if (valid && off == 0) {
        if (v4) {
            hdr_len = p.ip_hdr_len;
            valid = hdr_len >= kIpv4MinHeader && hdr_len <= kIpv4MaxHeader && hdr_len <= p.l3_len;
        } else {
            hdr_len = p.frag_unfrag_len;
            valid = hdr_len >= kIpv6Header && hdr_len <= p.l3_len &&
                    p.frag_prev_nh_offset < hdr_len &&
                    (p.frag_prev_nh_offset == 6 || p.frag_prev_nh_offset >= kIpv6Header);
        }
    }
    if (!valid) {
        ++ctr_.invalid;
        return DefragResult::kDropped;
    }

    const uint8_t proto = v4 ? p.proto : 0;  // an IPv6 fragment's upper layer is not keyed
    const uint32_t h = hash_key(p, proto);
    uint32_t ti = find(p, proto, h);
    const bool created = ti == kNil;
    if (created) {
        ti = new_tracker(p, proto, h);
        if (ti == kNil) {
            ++ctr_.tracker_drops;
            sync_gauges();
            return DefragResult::kDropped;
        }
    } else {
        Tracker& t = trackers_[ti];
        t.last_seen_ns = std::max(t.last_seen_ns, p.ts_ns);
        lru_unlink(ti);
        lru_append(ti);
    }
    Tracker& t = trackers_[ti];

    // Fragment as it would be held, for the policy comparisons.
    const Frag nf{kNil, kNil, static_cast<uint32_t>(off), static_cast<uint32_t>(len), t.next_seq};
    const uint64_t nend = off + len;
    bool overlap = false;
    bool redundant = false;  // inside a held fragment that wins all its bytes
    uint32_t dominated = 0;  // held fragments inside this one that this one beats
    for (uint32_t fi = t.frags; fi != kNil; fi = frags_.at(fi).next) {
        const Frag& f = frags_.at(fi);
        const uint64_t fend = uint64_t{f.offset} + f.len;
        if (f.offset < nend && off < fend) {
            overlap = true;
            if (f.offset <= off && nend <= fend && beats(f, nf)) {
                redundant = true;
            } else if (off <= f.offset && fend <= nend && beats(nf, f)) {
                ++dominated;
            }
        }
    }
    if (overlap) {
        ++ctr_.overlaps;
    }

    if (!redundant) {
        if (t.nfrags - dominated + 1 > cfg_.max_frags_per_tracker) {
            ++ctr_.too_many_frags;
            release_tracker(ti);
            sync_gauges();
            return DefragResult::kDropped;
        }
        const bool keep_hdr = off == 0 && t.hdr_len == 0;
        const uint32_t hdr_chunks = keep_hdr ? chunks_for(hdr_len) : 0;
        const uint64_t cost = (created ? kDefragTrackerBytes : 0) + kDefragFragBytes +
                              uint64_t{chunks_for(nf.len) + hdr_chunks} * kDefragChunkBytes;
        if (memuse_ + cost > cfg_.memcap) {
            expire_idle(p.ts_ns);  // cannot take t: it was just touched
            // Then the oldest other datagrams; t is the LRU tail, so the loop never takes it.
            while (memuse_ + cost > cfg_.memcap && lru_head_ != kNil && lru_head_ != ti) {
                evict_oldest();
            }
        }
        uint32_t fi = kNil;
        uint32_t data_chunk = kNil;
        uint32_t hdr_chunk = kNil;
        bool ok = memuse_ + cost <= cfg_.memcap;
        if (ok) {
            fi = frags_.alloc();
            data_chunk = fi == kNil ? kNil : store(p.frag_data, nf.len);
            hdr_chunk = keep_hdr && data_chunk != kNil ? store(p.l3, hdr_len) : kNil;
            ok = fi != kNil && data_chunk != kNil && (!keep_hdr || hdr_chunk != kNil);
        }
        if (!ok) {
            // The pool could not grow (or the memcap is full): same outcome for the sender.
            if (fi != kNil) {
                frags_.release(fi);
            }
            free_chain(data_chunk);
            ++ctr_.memcap_drops;
            if (created) {
                release_tracker(ti);
            }
            sync_gauges();
            return DefragResult::kDropped;
        }

        // Drop held fragments this one hides entirely, then insert sorted by offset.
        uint32_t* link = &t.frags;
        while (*link != kNil) {
            Frag& f = frags_.at(*link);
            if (off <= f.offset && uint64_t{f.offset} + f.len <= nend && beats(nf, f)) {
                const uint32_t dead = *link;
                *link = f.next;
                free_chain(f.chunk);
                frags_.release(dead);
                --t.nfrags;
                t.mem -= kDefragFragBytes + chunks_for(f.len) * kDefragChunkBytes;
                memuse_ -= kDefragFragBytes + chunks_for(f.len) * kDefragChunkBytes;
            } else {
                link = &f.next;
            }
        }
        link = &t.frags;
        while (*link != kNil && frags_.at(*link).offset <= nf.offset) {
            link = &frags_.at(*link).next;
        }
        Frag& stored = frags_.at(fi);
        stored = nf;
        stored.chunk = data_chunk;
        stored.next = *link;
        *link = fi;
        ++t.nfrags;
        ++t.next_seq;
        t.mem += static_cast<uint32_t>(cost);
        memuse_ += cost;
        if (keep_hdr) {
            t.hdr_chunk = hdr_chunk;
            t.hdr_len = static_cast<uint16_t>(hdr_len);
            if (v6) {
                t.prev_nh_offset = p.frag_prev_nh_offset;
                t.next_header = p.frag_next_header;
            }
        }
    }
    if (!p.frag_more) {
        // Several last fragments: the shortest datagram wins; data past it is ignored.
        t.end = std::min(t.end, static_cast<uint32_t>(nend));
    }

    DefragResult result = DefragResult::kHeld;
    if (complete(t)) {
        // Whether it rebuilt or was invalid, the datagram is finished: a late duplicate
        // starts a new tracker that cannot complete on its own.
        result = reassemble(t, out, out_len);
        release_tracker(ti);
    }
    sync_gauges();
    return result;
}

Defragmenter::Defragmenter(const DefragConfig& config) {
    impl_ = std::make_unique<Impl>(config, counters_);
}

Defragmenter::~Defragmenter() = default;

DefragResult Defragmenter::process(const decode::Packet& p, const uint8_t** out,
                                   uint32_t* out_len) {
    return impl_->process(p, out, out_len);
}

void Defragmenter::expire(int64_t now_ns) {
    impl_->expire(now_ns);
}

void Defragmenter::export_stats(StatsSnapshot& out) const {
    const DefragCounters& c = counters_;
    out.add("defrag.ipv4.fragments", c.ipv4_fragments.get());
    out.add("defrag.ipv4.reassembled", c.ipv4_reassembled.get());
    out.add("defrag.ipv6.fragments", c.ipv6_fragments.get());
    out.add("defrag.ipv6.reassembled", c.ipv6_reassembled.get());
    out.add("defrag.timeouts", c.timeouts.get());
    out.add("defrag.memcap_drops", c.memcap_drops.get());
    out.add("defrag.overlaps", c.overlaps.get());
    out.add("defrag.max_frag_hits", c.too_many_frags.get());
    out.add("defrag.invalid", c.invalid.get());
    out.add("defrag.trackers", c.trackers_active.get());
    out.add("defrag.memuse", c.memuse.get());
    out.add("defrag.max_trackers_reached", c.tracker_drops.get());
    out.add("defrag.evicted", c.evicted.get());
}

}  // namespace picket::sensor::defrag
