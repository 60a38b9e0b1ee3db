// IPv4 and IPv6 fragment reassembly, per worker. Fragments of one datagram are keyed by
// (family, src, dst, id, proto for IPv4, VLAN); overlaps are resolved by a target policy
// (first, last, bsd, linux), trackers expire after a timeout, and all memory held counts
// against a memcap: past it new fragments are dropped and counted. Only the owning worker
// calls it. Memory comes from pools sized at construction, so the steady state allocates
// nothing.
#pragma once

#include <cstdint>
#include <memory>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/decode/decode.h"

namespace picket::sensor::defrag {

enum class OverlapPolicy : uint8_t {
    kFirst,  // the oldest data wins (Windows, Solaris)
    kLast,   // the newest data wins (some Cisco)
    kBsd,    // data with a lower or equal offset than the existing one wins; otherwise oldest
    kLinux,  // like BSD, but a fragment at the same offset as an existing one overwrites it
};

// Parses "first", "last", "bsd", "linux" (also Suricata's "windows" -> first,
// "solaris" -> first, "bsd-right" -> last); returns false for anything else.
bool parse_policy(const char* name, OverlapPolicy* out);

// Memory accounting for the memcap and the defrag.memuse gauge: a datagram in reassembly
// costs kDefragTrackerBytes; each fragment held costs kDefragFragBytes plus its data in
// kDefragChunkBytes chunks of kDefragChunkDataBytes payload each; the header kept from the
// offset-0 fragment (IPv4 header, IPv6 unfragmentable part) is stored in chunks too.
inline constexpr uint32_t kDefragTrackerBytes = 128;
inline constexpr uint32_t kDefragFragBytes = 32;
inline constexpr uint32_t kDefragChunkBytes = 256;
inline constexpr uint32_t kDefragChunkDataBytes = 252;

struct DefragConfig {
    OverlapPolicy policy = OverlapPolicy::kBsd;
    int64_t timeout_ns = 60LL * 1000000000;  // Suricata default 60 s
    uint64_t memcap = 32ULL * 1024 * 1024;   // bytes of fragment data and trackers held
    uint32_t max_trackers = 65535;           // datagrams in reassembly at once
    uint32_t max_frags_per_tracker = 256;    // more fragments than this: drop the datagram
};

struct DefragCounters {
    Counter ipv4_fragments, ipv4_reassembled, ipv6_fragments, ipv6_reassembled;
    Counter timeouts;         // trackers expired before completion
    Counter memcap_drops;     // fragments dropped because the memcap was reached
    Counter overlaps;         // fragments that overlapped data already held
    Counter too_many_frags;   // datagrams abandoned for exceeding max_frags_per_tracker
    Counter invalid;          // reassembled datagram would exceed 65535 bytes, bad offsets...
    Counter tracker_drops;    // fragments dropped because all max_trackers were in use
    Counter evicted;          // oldest datagrams given up for new fragments under pressure
    Counter trackers_active;  // gauge
    Counter memuse;           // gauge, bytes
};

enum class DefragResult : uint8_t {
    kHeld,         // fragment stored; nothing to inspect yet
    kReassembled,  // *out / *out_len hold the whole datagram, starting at the IP header
    kDropped,      // memcap, invalid or too many fragments; counted
};

class Defragmenter {
public:
    explicit Defragmenter(const DefragConfig& config);
    ~Defragmenter();
    Defragmenter(const Defragmenter&) = delete;
    Defragmenter& operator=(const Defragmenter&) = delete;

    // p must carry kFlagFragment. On kReassembled the buffer belongs to the defragmenter and
    // stays valid until the next call to process() or expire().
    DefragResult process(const decode::Packet& p, const uint8_t** out, uint32_t* out_len);
    // Drops trackers idle for longer than the timeout (packet time). Call a few times per
    // second of packet time.
    void expire(int64_t now_ns);

    const DefragCounters& counters() const { return counters_; }
    // "defrag.ipv4.fragments", "defrag.ipv4.reassembled", "defrag.ipv6.fragments",
    // "defrag.ipv6.reassembled", "defrag.timeouts", "defrag.memcap_drops", "defrag.overlaps",
    // "defrag.max_frag_hits", "defrag.invalid", "defrag.trackers", "defrag.memuse",
    // "defrag.max_trackers_reached".
    void export_stats(StatsSnapshot& out) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    DefragCounters counters_;
};

}  // namespace picket::sensor::defrag
