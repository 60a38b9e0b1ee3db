#include "sensor/flow/flow.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <random>
#include <vector>

namespace picket::sensor::flow {

namespace {

constexpr int64_t kNsPerSec = 1'000'000'000;

// Timeout lists: one per (protocol group, state). Every flow of a list has the same timeout,
// so a list kept in touch order is also in deadline order.
enum Group : uint8_t { kGroupTcp = 0, kGroupUdp = 1, kGroupIcmp = 2, kGroupOther = 3 };
constexpr size_t kNumStates = 3;
constexpr size_t kNumClasses = 4 * kNumStates;

uint8_t group_of(uint8_t proto) {
    switch (proto) {
        case decode::kProtoTcp:
            return kGroupTcp;
        case decode::kProtoUdp:
            return kGroupUdp;
        case decode::kProtoIcmp:
        case decode::kProtoIcmpv6:
            return kGroupIcmp;
        default:
            return kGroupOther;
    }
}

uint8_t class_of(const Flow& f) {
    return static_cast<uint8_t>(group_of(f.proto) * kNumStates + static_cast<uint8_t>(f.state));
}

// flow_id layout before mixing: worker_id (16 bits) | sequence (37 bits). The mixer is a
// bijection on [0, 2^53) that maps 0 to 0, so distinct inputs give distinct ids, a non-zero
// input gives a non-zero id, and every id is exact as a JSON (double) number.
constexpr int kIdBits = 53;
constexpr int kSeqBits = 37;
constexpr uint64_t kIdMask = (uint64_t{1} << kIdBits) - 1;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;

uint64_t mix53(uint64_t x) {
    // xorshift-right and multiplication by an odd constant are each invertible modulo 2^53.
    x ^= x >> 29;
    x = (x * 0xbf58476d1ce4e5b9ULL) & kIdMask;
    x ^= x >> 26;
    x = (x * 0x94d049bb133111ebULL) & kIdMask;
    x ^= x >> 31;
    return x;
}

uint64_t load64(const uint8_t* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// The key is normalised, so any function of it is symmetric in the packet's direction.
uint32_t hash_key_seeded(const FlowKey& k, uint64_t seed) {
    constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
    uint64_t h = seed ^ kMul;
    h = (h ^ load64(k.addr[0].b)) * kMul;
    h = (h ^ load64(k.addr[0].b + 8)) * kMul;
    h = (h ^ load64(k.addr[1].b)) * kMul;
    h = (h ^ load64(k.addr[1].b + 8)) * kMul;
    const uint64_t tail = uint64_t{k.port[0]} | (uint64_t{k.port[1]} << 16) |
                          (uint64_t{k.vlan} << 32) | (uint64_t{k.proto} << 48) |
                          (uint64_t{k.ip_version} << 56);
    h = decode::mix64(h ^ tail);
    return static_cast<uint32_t>(h ^ (h >> 32));
}

uint32_t round_up_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p < v && p < kMaxHashSize) {
        p <<= 1;
    }
    return p;
}

}  // namespace

bool FlowKey::operator==(const FlowKey& o) const {
    return port[0] == o.port[0] && port[1] == o.port[1] && vlan == o.vlan && proto == o.proto &&
           ip_version == o.ip_version && addr[0] == o.addr[0] && addr[1] == o.addr[1];
}

FlowKey make_key(const decode::Packet& p, bool* src_is_first) {
    uint16_t sport = 0;
    uint16_t dport = 0;
    if (p.proto == decode::kProtoTcp || p.proto == decode::kProtoUdp) {
        sport = p.sport;
        dport = p.dport;
    } else if ((p.proto == decode::kProtoIcmp && p.has(decode::kFlagIcmpv4)) ||
               (p.proto == decode::kProtoIcmpv6 && p.has(decode::kFlagIcmpv6))) {
        // Shared with the traffic generator's record: echo request and reply are one flow
        // keyed by the identifier; any other ICMP message is keyed by its type and code.
        const bool echo = p.proto == decode::kProtoIcmp
                              ? (p.icmp_type == 8 || p.icmp_type == 0)
                              : (p.icmp_type == 128 || p.icmp_type == 129);
        if (echo) {
            sport = p.icmp_id;
            dport = p.icmp_id;
        } else {
            sport = p.icmp_type;
            dport = p.icmp_code;
        }
    }

    bool first;
    if (p.src < p.dst) {
        first = true;
    } else if (p.dst < p.src) {
        first = false;
    } else {
        first = sport <= dport;
    }

    FlowKey k;
    k.addr[0] = first ? p.src : p.dst;
    k.addr[1] = first ? p.dst : p.src;
    k.port[0] = first ? sport : dport;
    k.port[1] = first ? dport : sport;
    const uint8_t tags = std::min<uint8_t>(p.vlan_count, 2);
    k.vlan = tags == 0 ? 0 : p.vlan_id[tags - 1];
    k.proto = p.proto;
    k.ip_version = p.ip_version;
    if (src_is_first != nullptr) {
        *src_is_first = first;
    }
    return k;
}

uint32_t hash_key(const FlowKey& k) {
    return hash_key_seeded(k, 0);
}

// Cache-line aligned: the worker writes its hot fields per packet, and the worker tables are
// allocated one after another.
struct alignas(64) FlowTable::Impl {
    enum class Removal { kTimeout, kEvict, kRecycle, kClear };

    struct List {
        Flow* head = nullptr;
        Flow* tail = nullptr;
    };

    Impl(const FlowConfig& config, FlowCounters& counters) : cfg(config), c(counters) {
        pool_size = std::min<uint64_t>(cfg.memcap / sizeof(Flow), kMaxFlowPool);
        if (pool_size > 0) {
            // Raw storage: slots are constructed on first use, so the pages of a large,
            // mostly idle pool are only committed as the table fills.
            pool = static_cast<Flow*>(
                ::operator new (pool_size * sizeof(Flow), std::align_val_t{alignof(Flow)}));
        }
        const uint32_t nb = round_up_pow2(std::max<uint32_t>(cfg.hash_size, 1));
        buckets.assign(nb, nullptr);
        bucket_mask = nb - 1;
        seed = cfg.hash_seed;
        if (seed == 0) {
            std::random_device rd;
            seed = (uint64_t{rd()} << 32) | rd();
        }

        const FlowTimeouts& t = cfg.timeouts;
        const uint32_t normal[kNumClasses] = {
            t.tcp_new,   t.tcp_established,   t.tcp_closed,  //
            t.udp_new,   t.udp_established,   t.udp_established,
            t.icmp_new,  t.icmp_established,  t.icmp_established,
            t.other_new, t.other_established, t.other_established,
        };
        const uint32_t emerg_by_state[kNumStates] = {t.emergency_new, t.emergency_established,
                                                     t.emergency_closed};
        for (size_t i = 0; i < kNumClasses; ++i) {
            tmo_ns[0][i] = int64_t{normal[i]} * kNsPerSec;
            // Emergency values only ever shorten a timeout.
            tmo_ns[1][i] = int64_t{std::min(normal[i], emerg_by_state[i % kNumStates])} * kNsPerSec;
        }
        update_gauges();
    }

    ~Impl() {
        if (pool != nullptr) {
            ::operator delete (pool, std::align_val_t{alignof(Flow)});
        }
    }

    int64_t deadline(const Flow& f) const {
        return f.last_ts_ns + tmo_ns[emergency ? 1 : 0][f.lru_class];
    }

    void update_gauges() {
        c.active.set(active);
        c.memuse.set(active * sizeof(Flow) + buckets.size() * sizeof(Flow*));
    }

    // --- LRU lists ---
    void lru_append(Flow* f) {
        List& l = lru[f->lru_class];
        f->lru_next = nullptr;
        f->lru_prev = l.tail;
        if (l.tail != nullptr) {
            l.tail->lru_next = f;
        } else {
            l.head = f;
        }
        l.tail = f;
    }

    void lru_unlink(Flow* f) {
        List& l = lru[f->lru_class];
        if (f->lru_prev != nullptr) {
            f->lru_prev->lru_next = f->lru_next;
        } else {
            l.head = f->lru_next;
        }
        if (f->lru_next != nullptr) {
            f->lru_next->lru_prev = f->lru_prev;
        } else {
            l.tail = f->lru_prev;
        }
        f->lru_prev = f->lru_next = nullptr;
    }

    // --- hash chains ---
    Flow* find(uint32_t b, const FlowKey& k) const {
        for (Flow* f = buckets[b]; f != nullptr; f = f->hnext) {
            if (f->key == k) {
                return f;
            }
        }
        return nullptr;
    }

    void hash_unlink(Flow* f) {
        Flow** pp = &buckets[f->bucket];
        while (*pp != f) {
            pp = &(*pp)->hnext;
        }
        *pp = f->hnext;
        f->hnext = nullptr;
    }

    void remove(Flow* f, Removal why) {
        hash_unlink(f);
        lru_unlink(f);
        f->end_reason = why == Removal::kEvict   ? FlowEndReason::kForced
                        : why == Removal::kClear ? FlowEndReason::kShutdown
                                                 : FlowEndReason::kTimeout;
        if (on_free) {
            on_free(*f);
        }
        // The counter of each Removal, in its order (clear() counts nothing).
        static constexpr Counter FlowCounters::*kRemoved[] = {
            &FlowCounters::timed_out, &FlowCounters::evicted, &FlowCounters::closed_pruned};
        if (why != Removal::kClear) {
            ++(c.*kRemoved[static_cast<size_t>(why)]);
        }
        f->hnext = free_list;
        free_list = f;
        --active;
        update_gauges();
    }

    // The flow whose list head is expired with the earliest deadline, or nullptr.
    Flow* oldest_expired(int64_t now_ns) const {
        Flow* best = nullptr;
        int64_t best_deadline = 0;
        for (const List& l : lru) {
            if (l.head == nullptr) {
                continue;
            }
            const int64_t d = deadline(*l.head);
            if (now_ns >= d && (best == nullptr || d < best_deadline)) {
                best = l.head;
                best_deadline = d;
            }
        }
        return best;
    }

    // The least recently used flow over all lists (smallest last_ts among the heads).
    Flow* least_recent() const {
        Flow* best = nullptr;
        for (const List& l : lru) {
            if (l.head != nullptr && (best == nullptr || l.head->last_ts_ns < best->last_ts_ns)) {
                best = l.head;
            }
        }
        return best;
    }

    Flow* alloc(int64_t now_ns) {
        if (free_list == nullptr) {
            if (pool_used < pool_size) {
                Flow* f = new (&pool[pool_used++]) Flow();
                f->hnext = free_list;
                free_list = f;
            } else {
                if (pool_size == 0) {
                    return nullptr;
                }
                if (!emergency) {
                    emergency = true;
                    ++c.emergency_entered;
                }
                // A head already past its (emergency) deadline goes first, as a timeout;
                // otherwise the least recently used flow is evicted.
                Flow* victim = oldest_expired(now_ns);
                if (victim != nullptr) {
                    remove(victim, Removal::kTimeout);
                } else {
                    remove(least_recent(), Removal::kEvict);
                }
            }
        }
        Flow* f = free_list;
        free_list = f->hnext;
        return f;
    }

    void init(Flow* f, const FlowKey& k, uint32_t b, bool src_is_first, const decode::Packet& p) {
        *f = Flow();
        f->key = k;
        seq = (seq + 1) & kSeqMask;
        if (seq == 0) {
            seq = 1;
        }
        f->flow_id = mix53((uint64_t{cfg.worker_id} << kSeqBits) | seq);
        // Mid-stream pickup of a SYN-ACK: the reply's destination opened the connection.
        const bool synack =
            k.proto == decode::kProtoTcp && (p.tcp_flags & (decode::kTcpSyn | decode::kTcpAck)) ==
                                                (decode::kTcpSyn | decode::kTcpAck);
        f->client_is_first = synack ? !src_is_first : src_is_first;
        const int ci = f->client_is_first ? 0 : 1;
        f->client_addr = k.addr[ci];
        f->server_addr = k.addr[1 - ci];
        f->client_port = k.port[ci];
        f->server_port = k.port[1 - ci];
        f->proto = k.proto;
        f->linktype = static_cast<uint16_t>(p.linktype);
        f->vlan_count = std::min<uint8_t>(p.vlan_count, 2);
        f->vlan_id[0] = p.vlan_id[0];
        f->vlan_id[1] = p.vlan_id[1];
        f->state = FlowState::kNew;
        f->first_ts_ns = p.ts_ns;
        f->last_ts_ns = p.ts_ns;
        f->bucket = b;
        f->lru_class = class_of(*f);
        f->hnext = buckets[b];
        buckets[b] = f;
        lru_append(f);

        ++c.created;
        // Flows created per protocol, in Group order; ICMPv6 apart from ICMPv4.
        static constexpr Counter FlowCounters::*kCreated[] = {
            &FlowCounters::tcp, &FlowCounters::udp, &FlowCounters::icmpv4, &FlowCounters::other};
        ++(c.*
           (k.proto == decode::kProtoIcmpv6 ? &FlowCounters::icmpv6 : kCreated[group_of(k.proto)]));
        ++active;
        update_gauges();
    }

    void update(Flow* f, const decode::Packet& p, Direction d) {
        const int di = static_cast<int>(d);
        ++f->pkts[di];
        f->bytes[di] += p.wirelen;
        // Packet time may step back a little (several capture queues); a deadline never does.
        f->last_ts_ns = std::max(f->last_ts_ns, p.ts_ns);

        if (f->proto == decode::kProtoTcp) {
            f->pkt_established = f->state == FlowState::kEstablished;
            f->tcp_flags_seen[di] |= p.tcp_flags;
            if (f->state == FlowState::kNew && d == Direction::kToClient) {
                f->state = FlowState::kEstablished;
            }
            if ((p.tcp_flags & decode::kTcpRst) != 0 ||
                ((f->tcp_flags_seen[0] & decode::kTcpFin) != 0 &&
                 (f->tcp_flags_seen[1] & decode::kTcpFin) != 0)) {
                f->state = FlowState::kClosed;
            }
        } else {
            if (f->state == FlowState::kNew && f->pkts[0] != 0 && f->pkts[1] != 0) {
                f->state = FlowState::kEstablished;
            }
            f->pkt_established = f->state == FlowState::kEstablished;
        }

        // Touch: move to the tail of its (possibly new) timeout list.
        lru_unlink(f);
        f->lru_class = class_of(*f);
        lru_append(f);
    }

    FlowConfig cfg;
    FlowCounters& c;
    Flow* pool = nullptr;
    size_t pool_size = 0;
    size_t pool_used = 0;  // slots constructed so far
    Flow* free_list = nullptr;
    std::vector<Flow*> buckets;
    uint32_t bucket_mask = 0;
    uint64_t seed = 0;
    List lru[kNumClasses];
    int64_t tmo_ns[2][kNumClasses] = {};  // [emergency][class]
    bool emergency = false;
    size_t active = 0;
    uint64_t seq = 0;
    std::function<void(Flow&)> on_free;
};

FlowTable::FlowTable(const FlowConfig& config) {
    impl_ = std::make_unique<Impl>(config, counters_);
}

FlowTable::~FlowTable() = default;

Flow* FlowTable::lookup(const decode::Packet& p, Direction* dir) {
    if (p.ip_version != 4 && p.ip_version != 6) {
        return nullptr;
    }
    Impl& t = *impl_;
    bool src_is_first = true;
    FlowKey k = make_key(p, &src_is_first);
    if (!t.cfg.use_vlan) {
        k.vlan = 0;  // vlan.use-for-tracking: false (the two directions on different VLANs)
    }
    const uint32_t b = hash_key_seeded(k, t.seed) & t.bucket_mask;

    Flow* f = t.find(b, k);
    if (f != nullptr) {
        if (p.ts_ns >= t.deadline(*f)) {
            // Idle past its timeout but not yet expired by expire(): the packet starts a new
            // flow, exactly as if expire() had run on time.
            t.remove(f, Impl::Removal::kTimeout);
            f = nullptr;
        } else if (f->proto == decode::kProtoTcp && f->state == FlowState::kClosed &&
                   (p.tcp_flags & (decode::kTcpSyn | decode::kTcpAck)) == decode::kTcpSyn) {
            t.remove(f, Impl::Removal::kRecycle);
            f = nullptr;
        }
    }
    if (f == nullptr) {
        f = t.alloc(p.ts_ns);
        if (f == nullptr) {
            ++counters_.memcap_drops;
            return nullptr;
        }
        t.init(f, k, b, src_is_first, p);
    }

    const Direction d =
        src_is_first == f->client_is_first ? Direction::kToServer : Direction::kToClient;
    t.update(f, p, d);
    if (dir != nullptr) {
        *dir = d;
    }
    return f;
}

size_t FlowTable::expire(int64_t now_ns, size_t max_flows) {
    Impl& t = *impl_;
    size_t removed = 0;
    while (removed < max_flows) {
        Flow* f = t.oldest_expired(now_ns);
        if (f == nullptr) {
            break;
        }
        t.remove(f, Impl::Removal::kTimeout);
        ++removed;
    }
    if (t.emergency &&
        t.active * 100 < t.pool_size * static_cast<uint64_t>(t.cfg.emergency_recovery)) {
        t.emergency = false;
    }
    return removed;
}

void FlowTable::set_on_free(std::function<void(Flow&)> cb) {
    impl_->on_free = std::move(cb);
}

void FlowTable::clear() {
    Impl& t = *impl_;
    for (Impl::List& l : t.lru) {
        while (l.head != nullptr) {
            t.remove(l.head, Impl::Removal::kClear);
        }
    }
    t.emergency = false;
}

void FlowTable::for_each_active(const std::function<void(Flow&)>& fn) {
    for (Impl::List& l : impl_->lru) {
        for (Flow* f = l.head; f != nullptr;) {
            Flow* next = f->lru_next;  // read first: fn must not move f, but be safe
            fn(*f);
            f = next;
        }
    }
}

size_t FlowTable::active() const {
    return impl_->active;
}

bool FlowTable::emergency() const {
    return impl_->emergency;
}

size_t FlowTable::pool_size() const {
    return impl_->pool_size;
}

size_t FlowTable::bucket_count() const {
    return impl_->buckets.size();
}

void FlowTable::export_stats(StatsSnapshot& out) const {
    const FlowCounters& c = counters_;
    out.add("flow.total", c.created.get());
    out.add("flow.active", c.active.get());
    out.add("flow.tcp", c.tcp.get());
    out.add("flow.udp", c.udp.get());
    out.add("flow.icmpv4", c.icmpv4.get());
    out.add("flow.icmpv6", c.icmpv6.get());
    out.add("flow.other", c.other.get());
    out.add("flow.timed_out", c.timed_out.get());
    out.add("flow.evicted", c.evicted.get());
    out.add("flow.tcp_reuse", c.closed_pruned.get());
    out.add("flow.memcap_drops", c.memcap_drops.get());
    out.add("flow.emerg_mode_entered", c.emergency_entered.get());
    out.add("flow.memuse", c.memuse.get());
}

}  // namespace picket::sensor::flow
