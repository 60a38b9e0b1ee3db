// The frames of the capture tests: Ethernet 02:00:00:00:00:01 -> 02:00:00:00:00:02, IPv4
// 198.18.0.<src> -> 198.18.0.<dst> (the benchmarking range, RFC 2544), TOS 0, id 0, UDP
// without a checksum, built with the shared builders of tests/support/frames.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tests/support/frames.h"

namespace picket::sensor::capture::testing {

// IPv4 + UDP, no link header (DLT_RAW).
inline std::vector<uint8_t> ipv4_udp(uint16_t sport, uint16_t dport, const std::string& payload,
                                     uint8_t src = 1, uint8_t dst = 2) {
    namespace frames = picket::testing::frames;
    frames::V4 h;
    h.with_proto(frames::kUdp)
        .with_addrs({198, 18, 0, src}, {198, 18, 0, dst})
        .with_tos(0)
        .with_id(0)
        .with_l4_checksum(false);
    return frames::ipv4(h,
                        frames::udp(sport, dport, frames::Bytes(payload.begin(), payload.end())));
}

inline std::vector<uint8_t> eth_udp(uint16_t sport, uint16_t dport, const std::string& payload,
                                    uint8_t src = 1, uint8_t dst = 2) {
    namespace frames = picket::testing::frames;
    return frames::eth(frames::kServerMac, frames::kClientMac, 0x0800,
                       ipv4_udp(sport, dport, payload, src, dst));
}

}  // namespace picket::sensor::capture::testing
