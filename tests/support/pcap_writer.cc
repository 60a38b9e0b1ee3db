#include "tests/support/pcap_writer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace picket::testing {
namespace {

void put_le32(std::string& s, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        s.push_back(static_cast<char>(v >> (8 * i)));
    }
}

}  // namespace

void write_pcap(const std::filesystem::path& path, const std::vector<std::vector<uint8_t>>& frames,
                const PcapOptions& options) {
    std::string out;
    put_le32(out, 0xa1b2c3d4);
    put_le32(out, 0x00040002);  // version 2.4
    put_le32(out, 0);           // thiszone
    put_le32(out, 0);           // sigfigs
    put_le32(out, options.snaplen);
    put_le32(out, options.linktype);
    for (size_t i = 0; i < frames.size(); ++i) {
        const auto n = static_cast<uint32_t>(i);
        put_le32(out, options.first_second + n);
        put_le32(out, n * options.usec_step);
        put_le32(out, static_cast<uint32_t>(frames[i].size()));
        put_le32(out, static_cast<uint32_t>(frames[i].size()));
        out.append(frames[i].begin(), frames[i].end());
    }
    std::ofstream f(path, std::ios::binary);
    f << out;
    f.close();
    if (!f) {
        ADD_FAILURE() << "cannot write " << path;
    }
}

}  // namespace picket::testing
