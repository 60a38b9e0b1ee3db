// Internal to tools/trafficgen: the record's counters, from an independent decode of every frame
// on its way to the file. It is deliberately not sensor/decode: the record is the oracle that
// the sensor's decoder and flow table are checked against, so it must not come from them. It
// only has to read what the generator writes (Ethernet, 802.1Q, ARP, IPv4/IPv6 with fragments,
// TCP/UDP/ICMP headers). Runs on the generating thread.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tools/trafficgen/generator.h"
#include "tools/trafficgen/wire.h"

namespace picket::tools::trafficgen {

class Tally {
public:
    Tally(Record& rec, const std::vector<std::string>& attacks) : rec_(rec), attacks_(attacks) {}

    // Counts one frame of len bytes into the record.
    void observe(const uint8_t* f, uint32_t len);

private:
    struct FlowKey {
        uint8_t a[16], b[16];
        uint16_t pa, pb, vlan;
        uint8_t proto;
        bool operator==(const FlowKey& o) const {
            return std::memcmp(this, &o, sizeof(*this)) == 0;
        }
    };
    struct FragKey {
        uint8_t src[16], dst[16];
        uint32_t id;
        uint16_t vlan;
        uint8_t proto;
        uint8_t v6;
        bool operator==(const FragKey& o) const {
            return std::memcmp(this, &o, sizeof(*this)) == 0;
        }
    };
    struct FragState {
        uint32_t got = 0;
        uint32_t total = 0;  // known once the last fragment (MF=0) was seen
        uint8_t l4[8] = {};  // first 8 bytes of the L4 header, from the offset-0 fragment
        bool have_first = false;
    };

    void scan_attacks(const uint8_t* f, uint32_t len);
    void ipv4(const uint8_t* p, uint32_t len, uint16_t vlan);
    void ipv6(const uint8_t* p, uint32_t len, uint16_t vlan);
    void fragment(const FragKey& k, uint32_t offset, bool mf, const uint8_t* data, uint32_t n,
                  bool v6, const uint8_t* src, const uint8_t* dst);
    void l4(bool v6, uint8_t proto, const uint8_t* src, const uint8_t* dst, const uint8_t* p,
            uint32_t len, uint16_t vlan);

    Record& rec_;
    const std::vector<std::string>& attacks_;
    std::unordered_set<FlowKey, BytesHash<FlowKey>> flow_set_;
    std::unordered_map<FragKey, FragState, BytesHash<FragKey>> frags_;
};

}  // namespace picket::tools::trafficgen
