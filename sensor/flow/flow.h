// Per-worker flow table. Both directions of a connection map to one Flow (the key is
// normalised, the hash symmetric); key = protocol, both addresses and ports, VLAN. Timeouts
// per protocol and state (packet time), a memcap with emergency mode (shorter timeouts, then
// eviction of the least recently used flow), a 64-bit flow_id unique across workers, and
// per-direction packet and byte counters. Only the owning worker touches its table; flows come
// from a pool sized from the memcap, so the steady state allocates nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/decode/decode.h"

namespace picket::sensor::flow {

struct FlowKey {
    decode::Address addr[2];  // addr[0] <= addr[1] (normalised), ports follow their address
    uint16_t port[2] = {0, 0};
    uint16_t vlan = 0;
    uint8_t proto = 0;
    // 4 or 6: an IPv4 flow and an IPv6 flow whose addresses are the same v4-mapped bytes
    // (::ffff:a.b.c.d) are different flows.
    uint8_t ip_version = 0;
    bool operator==(const FlowKey& o) const;
};

// Builds the normalised key; *src_is_first tells whether p's source is addr[0]. ICMP echo
// request/reply use ports {icmp_id, icmp_id}, other ICMP {type, code}; non-TCP/UDP/ICMP 0.
FlowKey make_key(const decode::Packet& p, bool* src_is_first);
uint32_t hash_key(const FlowKey& k);  // symmetric by construction of the key

enum class Direction : uint8_t { kToServer = 0, kToClient = 1 };

enum class FlowState : uint8_t { kNew, kEstablished, kClosed };

// What the engine decided for the whole flow (Suricata's flow pass / drop): kDrop once a drop
// or reject rule matched in IPS mode (every later packet is dropped uninspected), kPass once a
// pass rule or an ACL bypass matched (no more inspection). The first decision wins.
enum class FlowAction : uint8_t { kNone, kDrop, kPass };

// The slots later layers hang their per-flow state on. Each module that keeps state on a flow
// has exactly one, declared here so that the numbers are decided in one place, and reaches it
// only through its typed key, a FlowStorage<T, slot> alias of its own (e.g.
// stream::SessionSlot); the flow table clears the slots when it recycles a flow, after
// calling on_free(flow) so that their owners can release what they hold.
enum class FlowSlot : uint8_t { kFlowbits, kStream, kAppLayer, kSnort3Pdu, kCount };
inline constexpr size_t kNumFlowSlots = static_cast<size_t>(FlowSlot::kCount);

struct Flow;

// Suricata's flow end reasons: timed out (or a closed flow's slot reused), evicted by the
// table to make room, or removed at the end of the run.
enum class FlowEndReason : uint8_t { kTimeout, kForced, kShutdown };

// The typed key of one flow slot: the only way to read or write it. No cost over a plain
// array access (the slot index is a template argument).
template <typename T, FlowSlot S>
struct FlowStorage {
    static T* get(const Flow& f);
    static void set(Flow& f, T* value);
    // The value, and the slot cleared.
    static T* take(Flow& f);
};

// Flow::proto_detect bits. Done: the direction's first data reached the app layer with the
// flow's protocol known (or its detection failed). Pending: that happened on a packet of the
// other direction (TCP data handed over on its acknowledgement), so the next packet of the
// direction carries it. Failed: protocol detection gave up.
inline constexpr uint8_t proto_detect_done(Direction d) {
    return static_cast<uint8_t>(1u << static_cast<unsigned>(d));
}
inline constexpr uint8_t proto_detect_pending(Direction d) {
    return static_cast<uint8_t>(4u << static_cast<unsigned>(d));
}
inline constexpr uint8_t kProtoDetectFailed = 16;

struct Flow {
    FlowKey key;
    uint64_t flow_id = 0;
    // The initiator: the source of the first packet seen (the client).
    decode::Address client_addr, server_addr;
    uint16_t client_port = 0, server_port = 0;
    uint8_t proto = 0;
    FlowState state = FlowState::kNew;
    // What flow:established sees for the packet just looked up (Suricata's
    // FLOW_PKT_ESTABLISHED): TCP, the state before this packet (its SYN/ACK is not yet
    // established, its closing FIN or RST still is); other protocols, the state after it.
    bool pkt_established = false;
    // The packet just looked up picked its TCP session up midstream (no handshake seen):
    // Snort 3, whose stream counts such a session established at once, lets a Snort 3 rule's
    // flow:established match it.
    bool pkt_midstream = false;
    uint8_t tcp_flags_seen[2] = {0, 0};  // OR of TCP flags per direction
    uint16_t linktype = 1;  // of the packet that created it (alerts on end-of-flow pseudo packets)
    // The VLAN tags of the packet that created it (EVE records about the flow, Suricata's
    // flow vlan_id[]), kept whether or not the key uses them: with vlan.use-for-tracking false
    // the key's VLAN is 0 but the flow record still names the first packet's VLAN.
    uint16_t vlan_id[2] = {0, 0};
    uint8_t vlan_count = 0;
    int64_t first_ts_ns = 0;
    int64_t last_ts_ns = 0;
    uint64_t pkts[2] = {0, 0};   // indexed by Direction
    uint64_t bytes[2] = {0, 0};  // wire bytes per direction

    // Internal to the table (hash chain, LRU list); not for users.
    Flow* hnext = nullptr;
    Flow* lru_prev = nullptr;
    Flow* lru_next = nullptr;
    uint32_t bucket = 0;
    uint8_t lru_class = 0;        // which timeout list (protocol group x state) holds it
    bool client_is_first = true;  // client_addr == key.addr[0] (direction without compares)
    // Set by the engine (the flow table leaves it alone); see FlowAction.
    FlowAction action = FlowAction::kNone;
    // Protocol detection per direction, set by the engine (Suricata's
    // PKT_PROTO_DETECT_TS/TC_DONE): see kProtoDetect* below.
    uint8_t proto_detect = 0;
    // Set by the engine when a rule alerted on the flow (EVE flow records' "alerted").
    bool alerted = false;
    // Why the table removed the flow; set before on_free (EVE flow records' "reason").
    FlowEndReason end_reason = FlowEndReason::kTimeout;
    bool eve_logged = false;      // the engine wrote its EVE flow record
    uint8_t eve_drop_logged = 0;  // bit (1 << Direction): a drop record was written

private:
    template <typename T, FlowSlot S>
    friend struct FlowStorage;
    void* slots_[kNumFlowSlots] = {};
};

template <typename T, FlowSlot S>
inline T* FlowStorage<T, S>::get(const Flow& f) {
    return static_cast<T*>(f.slots_[static_cast<size_t>(S)]);
}
template <typename T, FlowSlot S>
inline void FlowStorage<T, S>::set(Flow& f, T* value) {
    f.slots_[static_cast<size_t>(S)] = value;
}
template <typename T, FlowSlot S>
inline T* FlowStorage<T, S>::take(Flow& f) {
    T* v = get(f);
    set(f, nullptr);
    return v;
}

struct FlowTimeouts {
    // Seconds, Suricata's defaults (flow-timeouts: new / established / closed, and the
    // emergency values used while the table is over its memcap).
    uint32_t tcp_new = 60, tcp_established = 600, tcp_closed = 60;
    uint32_t udp_new = 30, udp_established = 300;
    uint32_t icmp_new = 30, icmp_established = 300;
    uint32_t other_new = 30, other_established = 300;
    uint32_t emergency_new = 10, emergency_established = 100, emergency_closed = 20;
};

struct FlowConfig {
    uint64_t memcap = 128ULL * 1024 * 1024;  // bytes; the flow pool is memcap / sizeof(Flow)
    uint32_t hash_size = 65536;              // buckets
    FlowTimeouts timeouts;
    // Emergency mode ends once active flows fall below this share of the pool (percent).
    uint32_t emergency_recovery = 30;
    uint16_t worker_id = 0;  // mixed into flow_id so ids are unique across workers
    // vlan.use-for-tracking: the innermost VLAN id is part of the flow key (Suricata's
    // default); false when a network puts the two directions on different VLANs.
    bool use_vlan = true;
    // Seed of the bucket hash (against crafted collisions); 0 = pick one at random.
    uint64_t hash_seed = 0;
};

// Bounds applied to FlowConfig: the pool never exceeds kMaxFlowPool flows whatever the memcap,
// and hash_size is rounded up to a power of two within [1, kMaxHashSize].
inline constexpr size_t kMaxFlowPool = size_t{1} << 22;
inline constexpr uint32_t kMaxHashSize = uint32_t{1} << 24;

struct FlowCounters {
    Counter created, timed_out, evicted, closed_pruned;
    Counter tcp, udp, icmpv4, icmpv6, other;  // flows created per protocol
    Counter memcap_drops;  // packets that got no flow: pool exhausted, nothing evictable
    Counter emergency_entered;
    Counter active;  // gauge
    Counter memuse;  // gauge, bytes of flows in use
};

class FlowTable {
public:
    explicit FlowTable(const FlowConfig& config);
    ~FlowTable();
    FlowTable(const FlowTable&) = delete;
    FlowTable& operator=(const FlowTable&) = delete;

    // Finds or creates p's flow, updates its counters, timestamps and state, and sets *dir.
    // nullptr when the memcap is reached and no flow could be evicted (counted). Packets
    // without an IP layer get no flow.
    Flow* lookup(const decode::Packet& p, Direction* dir);
    // Expires flows idle past their timeout (packet time), at most max_flows per call;
    // returns how many were removed.
    size_t expire(int64_t now_ns, size_t max_flows = SIZE_MAX);
    // Called for every flow removed (timeout, eviction, recycle, clear()), before its slot is
    // reused. The callback must not call back into the table. The destructor does not call it:
    // call clear() first if later layers keep state in Flow::user.
    void set_on_free(std::function<void(Flow&)> cb);
    // Removes every flow (end of an offline run), calling on_free for each.
    void clear();
    // Calls fn for every active flow (end of input: the engine flushes them before its final
    // stats), grouped by timeout class, least recently used first within one. fn may change
    // the flow's contents (user state, action) but must not call back into the table.
    void for_each_active(const std::function<void(Flow&)>& fn);

    size_t active() const;
    bool emergency() const;
    size_t pool_size() const;     // flows the memcap allows (the preallocated pool)
    size_t bucket_count() const;  // hash_size after rounding
    const FlowCounters& counters() const { return counters_; }
    // "flow.active", "flow.total" (created), "flow.tcp", "flow.udp", "flow.icmpv4",
    // "flow.icmpv6", "flow.timed_out", "flow.evicted", "flow.memcap_drops",
    // "flow.emerg_mode_entered", "flow.memuse"; also "flow.other" (flows of other IP protocols) and
    // "flow.tcp_reuse" (closed TCP flows recycled by a new SYN, Suricata's name). Values are added
    // to out, so per-worker tables can export into one snapshot.
    void export_stats(StatsSnapshot& out) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    FlowCounters counters_;
};

}  // namespace picket::sensor::flow
