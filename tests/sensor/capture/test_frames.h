// Frame builders shared by the capture tests: Ethernet/IPv4/UDP frames with a payload.
#pragma once

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace picket::sensor::capture::testing {

inline void put16(std::vector<uint8_t>& v, size_t at, uint16_t x) {
    v[at] = static_cast<uint8_t>(x >> 8);
    v[at + 1] = static_cast<uint8_t>(x);
}

// IPv4 + UDP, no link header (DLT_RAW). 198.18.0.0/15 is the benchmarking range (RFC 2544).
inline std::vector<uint8_t> ipv4_udp(uint16_t sport, uint16_t dport, const std::string& payload) {
    std::vector<uint8_t> f(28 + payload.size(), 0);
    f[0] = 0x45;
    put16(f, 2, static_cast<uint16_t>(f.size()));
    f[8] = 64;
    f[9] = 17;  // UDP
    const uint8_t src[4] = {198, 18, 0, 1};
    const uint8_t dst[4] = {198, 18, 0, 2};
    std::memcpy(&f[12], src, 4);
    std::memcpy(&f[16], dst, 4);
    uint32_t sum = 0;
    for (size_t i = 0; i < 20; i += 2) {
        sum += static_cast<uint32_t>(f[i] << 8 | f[i + 1]);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    put16(f, 10, static_cast<uint16_t>(~sum));
    put16(f, 20, sport);
    put16(f, 22, dport);
    put16(f, 24, static_cast<uint16_t>(8 + payload.size()));
    std::memcpy(&f[28], payload.data(), payload.size());
    return f;
}

inline std::vector<uint8_t> eth_udp(uint16_t sport, uint16_t dport, const std::string& payload) {
    std::vector<uint8_t> f = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00};
    const auto ip = ipv4_udp(sport, dport, payload);
    f.insert(f.end(), ip.begin(), ip.end());
    return f;
}

}  // namespace picket::sensor::capture::testing
