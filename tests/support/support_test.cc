// The shared test library itself: TempDir's lifetime, the exact bytes of write_pcap and of a
// built frame (expected values computed independently with Python's struct module).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/support/frames.h"
#include "tests/support/pcap_writer.h"
#include "tests/support/temp_dir.h"

namespace picket::testing {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    return out;
}

TEST(TempDir, CreatedEmptyAndRemovedWithItsContents) {
    fs::path kept;
    {
        TempDir dir("picket-support-test");
        kept = dir.path();
        ASSERT_TRUE(fs::is_directory(kept));
        EXPECT_TRUE(fs::is_empty(kept));
        EXPECT_EQ(kept.filename().string().rfind("picket-support-test-", 0), 0u);
        EXPECT_EQ(dir.file("a"), (kept / "a").string());
        fs::create_directories(kept / "sub");
        std::ofstream(dir.file("sub/x")) << "x";
    }
    EXPECT_FALSE(fs::exists(kept));
}

TEST(WritePcap, ClassicHeaderAndOneRecordPerFrame) {
    TempDir dir;
    write_pcap(dir.file("a.pcap"), {{'a', 'b', 'c'}});
    EXPECT_EQ(read_bytes(dir.file("a.pcap")),
              from_hex("d4c3b2a10200040000000000000000000000040001000000"
                       "00f15365000000000300000003000000616263"));
}

TEST(WritePcap, OptionsSetLinktypeSnaplenAndTimestamps) {
    TempDir dir;
    write_pcap(dir.file("b.pcap"), {{1}, {2, 3}}, {kLinktypeRaw, 65535, 1699999990, 1});
    EXPECT_EQ(read_bytes(dir.file("b.pcap")),
              from_hex("d4c3b2a1020004000000000000000000ffff000065000000"
                       "f6f0536500000000010000000100000001"
                       "f7f053650100000002000000020000000203"));
}

TEST(Frames, Ipv4UdpWithBothChecksums) {
    namespace f = frames;
    const f::Bytes got = f::ipv4(f::V4{}.with_proto(f::kUdp), f::udp(1234, 53, {'q'}));
    EXPECT_EQ(got, from_hex("4510001d123400004011548a0a0000010a00000204d20035000975d271"));
    EXPECT_EQ(f::fold(f::sum16(got.data(), 20)), 0);
}

TEST(Frames, EthernetMacsAndTags) {
    namespace f = frames;
    EXPECT_EQ(f::eth(f::kServerMac, f::kClientMac, 0x86dd, {0xee}, {{0x8100, 0x0064}}),
              from_hex("0200000000020200000000018100006486ddee"));
}

}  // namespace
}  // namespace picket::testing
