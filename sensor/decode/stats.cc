// Decode context bookkeeping that is not on the per-packet path: event names and the
// "decoder.*" statistics export (stats thread).
#include "sensor/decode/decode.h"

#include <algorithm>
#include <string>

namespace picket::sensor::decode {

const char* event_name(DecodeEvent e) {
    static constexpr const char* kNames[] = {
#define PICKET_X(id, name) name,
        PICKET_DECODE_EVENTS(PICKET_X)
#undef PICKET_X
    };
    const auto i = static_cast<size_t>(e);
    return i < kNumDecodeEvents ? kNames[i] : "unknown";
}

DecodeContext::DecodeContext(const DecodeOptions& options)
    : options_(options), validate_(options.checksum != ChecksumMode::kNo) {}

void DecodeContext::export_stats(StatsSnapshot& out) const {
    const DecodeCounters& c = counters_;
    const struct {
        const char* name;
        const Counter& value;
    } plain[] = {
        {"decoder.pkts", c.pkts},
        {"decoder.bytes", c.bytes},
        {"decoder.invalid", c.invalid},
        {"decoder.ethernet", c.ethernet},
        {"decoder.sll", c.sll},
        {"decoder.null", c.null},
        {"decoder.raw", c.raw},
        {"decoder.vlan", c.vlan},
        {"decoder.vlan_qinq", c.vlan_qinq},
        {"decoder.ipv4", c.ipv4},
        {"decoder.ipv6", c.ipv6},
        {"decoder.tcp", c.tcp},
        {"decoder.udp", c.udp},
        {"decoder.icmpv4", c.icmpv4},
        {"decoder.icmpv6", c.icmpv6},
        {"decoder.arp", c.arp},
        {"decoder.other_l3", c.other_l3},
        {"decoder.other_l4", c.other_l4},
        {"decoder.ipv4_frag", c.ipv4_frag},
        {"decoder.ipv6_frag", c.ipv6_frag},
    };
    for (const auto& e : plain) {
        out.add(e.name, e.value.get());
    }
    // Derived values are recomputed from the snapshot's totals so that several workers
    // exporting into one snapshot still give the right average and maximum.
    const uint64_t pkts = out.get("decoder.pkts");
    out.set("decoder.avg_pkt_size", pkts == 0 ? 0 : out.get("decoder.bytes") / pkts);
    out.set("decoder.max_pkt_size",
            std::max(out.get("decoder.max_pkt_size"), c.max_pkt_size.get()));
    const bool disabled = options_.checksum == ChecksumMode::kAuto && !validate_;
    out.add("decoder.checksum_validation_disabled", disabled ? 1 : 0);
    std::string name;
    for (size_t i = 0; i < kNumDecodeEvents; ++i) {
        name = "decoder.event.";
        name += event_name(static_cast<DecodeEvent>(i));
        out.add(name, c.events[i].get());
    }
}

}  // namespace picket::sensor::decode
