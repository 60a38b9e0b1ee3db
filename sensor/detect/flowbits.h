// Flowbits: names interned once into dense ids (FlowbitRegistry, shared by every engine
// generation so that flow state survives a reload), a per-flow bitset (FlowbitStore) handed
// out by a per-worker pool (FlowbitPool) and hung on its flow slot (FlowbitsSlot), and the
// rule-side helpers: applying a matched rule's set/unset/toggle, and load-time warnings.
// Threads: the registry is used by the control thread (rule loading; it locks); a pool and the
// stores it handed out belong to one worker and are never shared.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/counter.h"
#include "sensor/detect/rule.h"
#include "sensor/detect/tag.h"
#include "sensor/flow/flow.h"

namespace picket::sensor::detect {

// Interns flowbit names ("ET.http.binary") into ids 0, 1, 2, ... Thread-safe. Ids are never
// reused or removed, so a flow's bits keep their meaning across rule reloads.
class FlowbitRegistry {
public:
    // A stream_size rule was parsed with this registry: from then on the engine tracks TCP
    // sequence numbers (TcpSeqState) for every TCP flow. Sticky for the registry's life.
    // Interns a flowint name into 0 .. kMaxFlowints-1; false when that many exist already.
    bool intern_int(std::string_view name, uint8_t* id);
    void want_tcp_seq() { tcp_seq_.store(true, std::memory_order_relaxed); }
    bool tcp_seq_wanted() const { return tcp_seq_.load(std::memory_order_relaxed); }

    // Interns a flowvar / pktvar name (two namespaces) into 0 .. kMaxVarNames-1; false when
    // that many exist already.
    bool intern_var(VarScope scope, std::string_view name, uint16_t* id);
    std::string var_name(VarScope scope, uint16_t id) const;  // "" for an unknown id
    uint32_t var_count(VarScope scope) const;
    std::string int_name(uint8_t id) const;  // "" for an unknown id
    uint32_t int_count() const;

    uint32_t intern(std::string_view name);
    bool find(std::string_view name, uint32_t* id) const;
    std::string name(uint32_t id) const;  // "" for an unknown id
    uint32_t size() const;

private:
    mutable std::mutex mu_;
    std::deque<std::string> names_;  // stable storage for the map's keys
    std::unordered_map<std::string_view, uint32_t> ids_;
    std::atomic<bool> tcp_seq_{false};
    std::vector<std::string> int_names_;     // flowint names by id (under mu_)
    std::vector<std::string> var_names_[2];  // by VarScope, names by id (under mu_)
};

// String variables of one flow (flowvar) or one packet (pktvar): up to kMaxVarsPerSet values of
// at most kMaxVarLen bytes, kVarSetBytes in all, kept in the order they were first set (the
// order of the alert's "flowvars" / "pktvars"). A new value of a variable replaces the old one
// in place. No allocation: a full set refuses the value.
inline constexpr uint32_t kMaxVarsPerSet = 16;
inline constexpr uint32_t kVarSetBytes = 1024;
struct VarSet {
    struct Entry {
        uint16_t id;
        uint16_t off;
        uint16_t len;
    };
    Entry entries[kMaxVarsPerSet];
    uint16_t count = 0;
    uint16_t used = 0;            // bytes of `bytes` in use
    VarSet* next_free = nullptr;  // pool bookkeeping
    uint8_t bytes[kVarSetBytes];

    void clear() {
        count = 0;
        used = 0;
    }
    // The value of variable id; false when it has none.
    bool get(uint16_t id, std::string_view* out) const;
    // Sets id to v[0, min(len, kMaxVarLen)); false (nothing changed) when the set is full.
    bool set(uint16_t id, const uint8_t* v, uint32_t len);
};

// TCP sequence space per direction (by the sender's flow::Direction), for stream_size: what
// Suricata computes as next_seq - isn. isn is the SYN's sequence number, or for a direction
// first seen without a SYN (midstream) its first sequence number minus one; next is one past
// the highest sequence number sent (SYN and FIN count one each).
struct TcpSeqState {
    uint32_t isn[2] = {0, 0};
    uint32_t next[2] = {0, 0};
    uint8_t known = 0;  // bit (1 << direction): isn/next of that direction are set
    // Suricata's stream size of direction d: 0 for a direction not seen yet.
    uint32_t size(int d) const { return (known & (1u << d)) != 0 ? next[d] - isn[d] : 0; }
};
// Records packet p of direction dir (a TCP packet) in s. No allocation.
void tcp_seq_note(TcpSeqState& s, const decode::Packet& p, flow::Direction dir);

// The flowint variables of one flow (Suricata's flowint values are 32-bit unsigned).
inline constexpr uint32_t kMaxFlowints = 16;
struct FlowintValues {
    uint32_t v[kMaxFlowints] = {};
    uint32_t set = 0;  // bit per variable: has a value
    bool has(uint8_t id) const { return (set >> id) & 1u; }
};
// Runs ops in order on vals: modifiers change vals, a comparison or isset/notset that fails,
// or an operand variable without a value, returns false (the rest is not run; the changes
// before it stay). The engine runs a rule's flowints on its flow's values once every other
// option of the rule matched (Suricata evaluates its packet-match list after the payload).
bool run_flowints(const std::vector<FlowintOp>& ops, FlowintValues& vals);

// xbits with track tx (Suricata 8): the bits of the flow's app-layer transactions. An entry is
// a hash of (bit name, app protocol, transaction id), never 0; when all kTxBitSlots are taken
// the oldest entry goes (the bits of a transaction are set and read while it is inspected,
// so the oldest belong to finished transactions). Fixed size: no allocation.
inline constexpr uint32_t kTxBitSlots = 8;
struct TxBits {
    uint64_t key[kTxBitSlots] = {};  // 0 = free
    uint8_t next = 0;                // the slot the next new entry takes
    bool test(uint64_t k) const {
        for (uint64_t e : key) {
            if (e == k) {
                return true;
            }
        }
        return false;
    }
    void set(uint64_t k) {
        if (!test(k)) {
            key[next] = k;
            next = static_cast<uint8_t>((next + 1) % kTxBitSlots);
        }
    }
};

// The bits of one flow. Ids at or above capacity() read as unset and cannot be set (a store
// from before a reload that added names; see FlowbitPool::grow_bits).
struct FlowbitStore {
    uint64_t* words = nullptr;
    uint32_t nwords = 0;
    FlowbitStore* next_free = nullptr;  // pool bookkeeping
    uint32_t chunk = 0;                 // pool bookkeeping: index of the owning chunk
    TcpSeqState tcp;                    // stream_size (tcp_seq_note); cleared with the bits
    FlowintValues ints;                 // flowint; cleared with the bits
    VarSet* vars = nullptr;  // flowvar values: a block of the pool's (FlowbitPool::vars_of)
    SessionTags tags;        // tag:session (tag.h); cleared with the bits
    TxBits tx_bits;          // xbits track tx; cleared with the bits

    uint32_t capacity() const { return nwords * 64; }
    bool test(uint32_t id) const {
        return id < capacity() && (words[id >> 6] & (uint64_t{1} << (id & 63))) != 0;
    }
    void set(uint32_t id) {
        if (id < capacity()) {
            words[id >> 6] |= uint64_t{1} << (id & 63);
        }
    }
    void unset(uint32_t id) {
        if (id < capacity()) {
            words[id >> 6] &= ~(uint64_t{1} << (id & 63));
        }
    }
    void toggle(uint32_t id) {
        if (id < capacity()) {
            words[id >> 6] ^= uint64_t{1} << (id & 63);
        }
    }
    void clear();
};

struct FlowbitPoolCounters {
    Counter acquired;        // stores handed out
    Counter exhausted;       // acquire() refused: max_stores in use
    Counter in_use;          // gauge
    Counter vars_exhausted;  // vars_of() refused: max_var_sets in use
};

// Per-worker pool of fixed-size stores. Memory is allocated in chunks of `chunk` stores the
// first time the pool grows to a new high-water mark and is reused afterwards, so the steady
// state allocates nothing; at most max_stores stores exist. Not thread-safe: one worker.
//
// Lead's API: create one pool per worker, living as long as its flow table (not per engine
// generation), with nbits = FlowbitPool::bits_for(registry.size()). For each packet, set
// PacketContext::flowbits = flowbits_of(flow). When a matched rule has actions
// (has_flowbit_actions), call flowbits_acquire(flow, pool) and, if not nullptr,
// apply_flowbit_actions(rule, *store). In the flow table's on_free callback call
// flowbits_release(flow, pool). After a reload whose registry grew past pool.nbits(), call
// pool.grow_bits(bits_for(registry.size())) on the worker: new stores get the new size; older
// ones keep working for the ids they cover and are retired (not reused) when released; a
// chunk whose stores are all retired is freed.
class FlowbitPool {
public:
    explicit FlowbitPool(uint32_t nbits, size_t max_stores = size_t{1} << 20, size_t chunk = 256,
                         size_t max_var_sets = size_t{1} << 16);
    FlowbitPool(const FlowbitPool&) = delete;
    FlowbitPool& operator=(const FlowbitPool&) = delete;
    ~FlowbitPool();

    // A zeroed store, or nullptr when max_stores are in use (counted in exhausted).
    FlowbitStore* acquire();
    void release(FlowbitStore* s);
    void grow_bits(uint32_t nbits);
    // The flow variables of s, taking an empty block (about 1.1 KB) from the pool on first use
    // (chunks of 64, at most max_var_sets blocks); returned when s is released. nullptr: none
    // left (counted in vars_exhausted).
    VarSet* vars_of(FlowbitStore& s);
    uint32_t nbits() const { return nwords_ * 64; }
    const FlowbitPoolCounters& counters() const { return counters_; }

    // Capacity for a registry of n names: rounded up to 64 with at least 64 bits of headroom,
    // so that small rule updates do not need grow_bits.
    static uint32_t bits_for(uint32_t n) { return ((n + 63) / 64 + 1) * 64; }

private:
    struct Chunk {
        std::unique_ptr<FlowbitStore[]> stores;
        std::unique_ptr<uint64_t[]> words;
        size_t size = 0;
        size_t live = 0;  // stores not retired (only counted down after a grow)
    };
    bool add_chunk();
    void retire(FlowbitStore* s);

    uint32_t nwords_;
    size_t max_stores_;
    size_t chunk_;
    size_t total_ = 0;  // stores in live chunks
    FlowbitStore* free_ = nullptr;
    std::vector<Chunk> chunks_;
    size_t max_var_sets_;
    size_t var_total_ = 0;
    VarSet* var_free_ = nullptr;
    std::vector<std::unique_ptr<VarSet[]>> var_chunks_;
    FlowbitPoolCounters counters_;
};

// The name detect_engine.cc's first draft uses.
using FlowbitStorePool = FlowbitPool;

// The flow's FlowbitStore (nullptr = no bit ever set): detection's flow slot.
using FlowbitsSlot = flow::FlowStorage<FlowbitStore, flow::FlowSlot::kFlowbits>;

inline FlowbitStore* flowbits_of(const flow::Flow* f) {
    return f == nullptr ? nullptr : FlowbitsSlot::get(*f);
}
// The flow's store, acquiring one from pool on first use; nullptr if the pool is exhausted.
FlowbitStore* flowbits_acquire(flow::Flow& f, FlowbitPool& pool);
// Returns the flow's store (if any) to pool and clears the slot.
void flowbits_release(flow::Flow& f, FlowbitPool& pool);

// True when r has set/unset/toggle operations.
bool has_flowbit_actions(const Rule& r);
// Applies r's set/unset/toggle operations in rule order (conditions are ignored: they are
// HeaderOptions). Call after r matched. No allocation.
void apply_flowbit_actions(const Rule& r, FlowbitStore& s);
// Evaluates one isset/isnotset operation against s (nullptr = no bit set).
bool flowbit_condition(const FlowbitOp& op, const FlowbitStore* s);

// Stores the captures of rule r (PayloadScratch::cap_*, filled by its pcres on the match just
// made) into the flow's variables (flow, may be nullptr: flow captures are then dropped) and
// the packet's (pkt). Returns how many values could not be stored (no flow, no room). Call
// once r matched.
uint32_t store_captures(const Rule& r, const PayloadScratch& s, VarSet* flow, VarSet* pkt);

// The names an alert's "metadata" prints, by id, snapshot of a registry for one engine
// generation (the workers read them without the registry's lock; names interned later are
// left out).
struct VarNames {
    std::vector<std::string> flowbits;
    std::vector<std::string> flowints;
    std::vector<std::string> flowvars;
    std::vector<std::string> pktvars;
};
VarNames snapshot_var_names(const FlowbitRegistry& reg);
// Suricata's alert "metadata" object of the flow's state and the packet's variables as of the
// alert: "metadata":{"flowbits":[names],"flowints":{name:value},"flowvars":[{name:value}],
// "pktvars":[{name:value}]} (Suricata's EveAddMetadata order; bits and ints by id, variables in
// the order first set; values printable as payload_printable). Appended to out (',' first when
// out is not empty); nothing when there is nothing to print. Allocates only while out grows.
// Flowbits named traffic/id/NAME and traffic/label/NAME (Suricata 7's traffic tagging) are not
// listed as flowbits: they follow as "traffic":{"id":[NAME...],"label":[NAME...]}.
void append_vars_metadata(const FlowbitStore* flow, const VarSet* pkt, const VarNames& names,
                          std::string* out);

// Load-time check: every bit some rule checks (isset/isnotset) but no rule sets, unsets or
// toggles yields one warning naming the first checking rule, e.g.
// "a.rules:3 sid 10: flowbit 'x' is checked but never set". Names come from reg when given,
// else "#<id>". Rules that load with such bits still load (Suricata warns too).
std::vector<std::string> flowbit_warnings(const std::vector<const Rule*>& rules,
                                          const FlowbitRegistry* reg = nullptr);

// ---------------------------------------------------------------------------------------
// xbits (Suricata's hostbits / ip_pair bits): bits per host (track ip_src / ip_dst, the
// packet's source or destination address) or per unordered address pair (ip_pair), each with
// an expiry (packet time). One process-wide table shared by every worker and engine
// generation, like Suricata's host and ippair tables: fixed size, lock-free (atomics), no
// allocation. A set that finds no free or expired slot in its probe window is dropped and
// counted (xbits_dropped()).

//
// track tx bits live in the flow's FlowbitStore (TxBits), keyed by the transaction of the
// AppView being inspected: set when the rule matched on that transaction, read by isset on the
// same transaction (another direction's inspection included), unseen by the flow's other
// transactions. A rule matched without a transaction (a packet rule) sets nothing, as Suricata.
// kIpBoth: set/unset/toggle act on the source and the destination host; isset is true when
// both hosts have the bit, isnotset when neither has it.

// isset (true) / isnotset (false) of a host or ip_pair op on packet p.
bool xbit_isset(const XbitOp& op, const decode::Packet& p);
// The condition of op (kIsset or kIsnotset, any track) for packet p, the flow's store (nullptr:
// no bit set) and the transaction being inspected (nullptr: none, so a tx bit reads unset).
bool xbit_condition(const XbitOp& op, const decode::Packet& p, const FlowbitStore* flow,
                    const AppView* view);
// The TxBits key of a tx op's bit on transaction view; never 0.
uint64_t tx_bit_key(uint64_t name_hash, const AppView& view);
// Applies r's xbits set/unset/toggle operations in rule order. Call after r matched. Tx sets
// need flow (the flow's store, acquired by the caller) and view (the transaction r matched
// on); without them they do nothing.
void apply_xbit_actions(const Rule& r, const decode::Packet& p, FlowbitStore* flow = nullptr,
                        const AppView* view = nullptr);
// True when r sets a track tx bit (the engine acquires the flow's store for it).
bool has_tx_xbit_sets(const Rule& r);
inline bool has_xbit_actions(const Rule& r) {
    return r.has_xbit_actions;
}
uint64_t xbits_dropped();
// Empties the table (tests).
void xbits_clear();

}  // namespace picket::sensor::detect
