// Writes classic pcap files (the libpcap 2.4 format, little-endian, microsecond timestamps)
// without libpcap, for tests that replay or read a capture. Packet i is stamped
// first_second + i seconds and i * usec_step microseconds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace picket::testing {

// The file header's link types (LINKTYPE_*, which differ from some DLT_* values).
inline constexpr uint32_t kLinktypeEthernet = 1;
inline constexpr uint32_t kLinktypeRaw = 101;  // DLT_RAW on the wire

struct PcapOptions {
    uint32_t linktype = kLinktypeEthernet;
    uint32_t snaplen = 262144;
    uint32_t first_second = 1700000000;
    uint32_t usec_step = 0;
};

// Fails the current test when the file cannot be written.
void write_pcap(const std::filesystem::path& path, const std::vector<std::vector<uint8_t>>& frames,
                const PcapOptions& options = {});

}  // namespace picket::testing
