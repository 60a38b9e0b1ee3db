// Tagging (Suricata's tag keyword): after a rule with tag options matched, the packets that
// follow on the same flow (session tags) or from or to one of its packet's addresses (host
// tags) are tagged until the tag's limit; the engine logs each tagged packet once, as an EVE
// "packet" record. The alerting packet itself is not tagged (Suricata skips it too): the
// engine checks a packet (tag_packet) before its own inspection can install tags.
//
// Limits, by metric: packets: the next `count` packets; bytes: packets while the captured
// bytes tagged so far, this packet included, stay within `count` (the first packet past the
// limit ends the tag); seconds: packets whose time, in whole seconds, is at most `count`
// seconds past the alert's (packet timestamps, never the wall clock). A tag ends at its limit
// and is removed. A new match of the same rule (gid, sid, tag option) on a session or host
// that still has that tag renews it: the limit counts again from the new alerting packet.
//
// Memory. Session tags live in the flow's FlowbitStore (the per-worker pool of flowbits.h,
// acquired on the first tag of a flow): at most kMaxSessionTags per flow; a flow never tagged
// costs one pointer test per packet. Host tags live in one process-wide table shared by every
// worker and generation (hosts span flows and so workers), like the xbits table: kHostTagSlots
// slots, lock-free (atomics), no allocation; a slot frees when its tag ends or expires
// (seconds: its window; packets and bytes: kHostTagMaxAge seconds of packet time after the
// alert). While no host tag is live the per-packet check is one atomic load. A tag that finds
// no room is dropped and counted (tags_dropped()).
// Threads: the session functions run on the flow's worker; the host table on any worker.
#pragma once

#include <cstdint>

#include "sensor/decode/decode.h"
#include "sensor/detect/rule.h"

namespace picket::sensor::detect {

inline constexpr uint32_t kMaxSessionTags = 4;
inline constexpr uint32_t kHostTagSlots = 4096;
inline constexpr uint32_t kHostTagProbe = 16;
inline constexpr int64_t kHostTagMaxAge = 3600;  // seconds (packets and bytes host tags)

// One tag's window.
struct TagWindow {
    uint32_t count = 0;
    TagMetric metric = TagMetric::kPackets;
    int64_t start_s = 0;  // the alerting packet's time, whole seconds
    uint64_t used = 0;    // packets or bytes tagged so far
};

// Whether the packet of time ts_s and captured length len is within w's limit, counting it
// when it is. False: w has ended.
bool tag_window_step(TagWindow& w, int64_t ts_s, uint32_t len);

struct SessionTag {
    uint32_t gid = 0, sid = 0;
    uint8_t index = 0;  // which tag option of the rule
    TagWindow window;
};
// The session tags of one flow (in its FlowbitStore).
struct SessionTags {
    SessionTag tag[kMaxSessionTags];
    uint8_t n = 0;
};

// Installs (or renews) the session tag spec (option index of rule gid:sid) on t for the alert
// at ts_ns. False when t is full (counted in tags_dropped()).
bool session_tag_add(SessionTags& t, const TagSpec& spec, uint32_t gid, uint32_t sid, uint8_t index,
                     int64_t ts_ns);
// Steps every session tag of t with packet p, removing those that ended; true when p is
// tagged by at least one.
bool session_tags_step(SessionTags& t, const decode::Packet& p);

// Installs (or renews) a host tag for address a. False when its probe window has no room.
bool host_tag_add(const decode::Address& a, const TagSpec& spec, uint32_t gid, uint32_t sid,
                  uint8_t index, int64_t ts_ns);
// True when p's source or destination has a live host tag that tags p (counting p).
bool host_tags_step(const decode::Packet& p);
// False while no host tag can be live at packet time ts_ns (the cheap test before the table).
bool host_tags_maybe(int64_t ts_ns);

class FlowbitPool;
// After rule r matched on packet p (flow f, nullptr = none): installs or renews r's tags,
// session tags in f's store (acquired from pool on first use), host tags in the table.
void apply_tags(const Rule& r, const decode::Packet& p, flow::Flow* f, FlowbitPool& pool);
// Whether p is tagged, counting it in the tags that tag it. Call once per packet, before its
// inspection. A flow without tags and no live host tag cost a pointer test and one load.
bool tag_packet(const decode::Packet& p, const flow::Flow* f);

// Tags dropped for want of room (session tags of a full flow or pool, host table full).
uint64_t tags_dropped();
// Empties the host table and the counter (tests).
void tags_clear();

}  // namespace picket::sensor::detect
