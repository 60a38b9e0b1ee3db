#include <gtest/gtest.h>

#include <cstring>

#include "sensor/decode/decode.h"
#include "tests/support/frames.h"

namespace picket::sensor::decode {
namespace {

using namespace picket::testing::frames;  // NOLINT: the builders

uint32_t hash_of(int linktype, const Bytes& f) {
    return dispatch_hash(linktype, f.data(), static_cast<uint32_t>(f.size()));
}

V4 v4(uint8_t a, uint8_t b) {
    V4 h;
    h.src[3] = a;
    h.dst[3] = b;
    return h;
}

TEST(DispatchHash, Ipv4SymmetricAndPortFree) {
    const uint32_t ab = hash_of(kDltEn10mb, eth(0x0800, ipv4(v4(1, 2), tcp(1234, 80, 0x02))));
    const uint32_t ba = hash_of(kDltEn10mb, eth(0x0800, ipv4(v4(2, 1), tcp(80, 1234, 0x12))));
    const uint32_t other_ports =
        hash_of(kDltEn10mb, eth(0x0800, ipv4(v4(1, 2), tcp(5555, 443, 0x02))));
    const uint32_t other_pair = hash_of(kDltEn10mb, eth(0x0800, ipv4(v4(1, 3), tcp(1, 2, 0x02))));
    EXPECT_NE(ab, 0u);
    EXPECT_EQ(ab, ba);
    EXPECT_EQ(ab, other_ports);
    EXPECT_NE(ab, other_pair);
}

TEST(DispatchHash, Ipv6Symmetric) {
    V6 fwd;
    V6 rev;
    std::memcpy(rev.src, fwd.dst, 16);
    std::memcpy(rev.dst, fwd.src, 16);
    const uint32_t ab = hash_of(kDltEn10mb, eth(0x86dd, ipv6(fwd, tcp(1, 2, 0x02))));
    const uint32_t ba = hash_of(kDltEn10mb, eth(0x86dd, ipv6(rev, tcp(2, 1, 0x12))));
    V6 other = fwd;
    other.dst[15] = 9;
    const uint32_t ac = hash_of(kDltEn10mb, eth(0x86dd, ipv6(other, tcp(1, 2, 0x02))));
    EXPECT_NE(ab, 0u);
    EXPECT_EQ(ab, ba);
    EXPECT_NE(ab, ac);
}

TEST(DispatchHash, FragmentsMatchTheirFlow) {
    V4 whole = v4(1, 2);
    V4 first = whole;
    first.frag = 0x2000;
    V4 second = v4(2, 1);  // even a fragment of the reverse direction
    second.frag = 3;
    const uint32_t h = hash_of(kDltEn10mb, eth(0x0800, ipv4(whole, tcp(1, 2, 0x02))));
    EXPECT_EQ(hash_of(kDltEn10mb, eth(0x0800, ipv4(first, Bytes(16, 'a')))), h);
    EXPECT_EQ(hash_of(kDltEn10mb, eth(0x0800, ipv4(second, Bytes(8, 'b')))), h);

    const uint32_t h6 = hash_of(kDltEn10mb, eth(0x86dd, ipv6(V6{}, tcp(1, 2, 0x02))));
    const Bytes f6 = eth(0x86dd, ipv6(V6().with_nh(44).with_l4_checksum(false),
                                      cat({frag6(kTcp, 64, false, 1), Bytes(8, 'c')})));
    EXPECT_EQ(hash_of(kDltEn10mb, f6), h6);
}

TEST(DispatchHash, VlanIsPartOfTheKey) {
    const Bytes ip = ipv4(v4(1, 2), tcp(1, 2, 0x02));
    const uint32_t untagged = hash_of(kDltEn10mb, eth(0x0800, ip));
    const uint32_t v10 = hash_of(kDltEn10mb, eth(0x0800, ip, {{0x8100, 10}}));
    const uint32_t v11 = hash_of(kDltEn10mb, eth(0x0800, ip, {{0x8100, 11}}));
    const uint32_t v10_rev =
        hash_of(kDltEn10mb, eth(0x0800, ipv4(v4(2, 1), tcp(2, 1, 0x12)), {{0x8100, 10}}));
    const uint32_t qinq = hash_of(kDltEn10mb, eth(0x0800, ip, {{0x88a8, 10}, {0x8100, 11}}));
    EXPECT_NE(untagged, v10);
    EXPECT_NE(v10, v11);
    EXPECT_EQ(v10, v10_rev);
    EXPECT_NE(qinq, v10);
    EXPECT_NE(qinq, 0u);
}

TEST(DispatchHash, OtherLinkTypes) {
    const Bytes ip = ipv4(v4(1, 2), tcp(1, 2, 0x02));
    const Bytes rev = ipv4(v4(2, 1), tcp(2, 1, 0x12));
    Bytes sll(16, 0);
    sll[14] = 0x08;
    Bytes sll2(20, 0);
    sll2[0] = 0x08;
    const Bytes loop = {0, 0, 0, 2};
    const uint32_t h = hash_of(kDltRaw, ip);
    EXPECT_NE(h, 0u);
    EXPECT_EQ(hash_of(kDltRaw, rev), h);
    EXPECT_EQ(hash_of(kLinktypeRaw, rev), h);
    EXPECT_EQ(hash_of(kDltLinuxSll, cat({sll, rev})), h);
    EXPECT_EQ(hash_of(kDltLinuxSll2, cat({sll2, rev})), h);
    EXPECT_EQ(hash_of(kDltLoop, cat({loop, rev})), h);
    EXPECT_EQ(hash_of(kDltEn10mb, eth(0x0800, rev)), h);
}

TEST(DispatchHash, NonIpAndShortFramesAreZero) {
    EXPECT_EQ(hash_of(kDltEn10mb, eth(0x0806, arp_body())), 0u);
    EXPECT_EQ(hash_of(kDltEn10mb, Bytes(13, 0)), 0u);
    EXPECT_EQ(hash_of(kDltEn10mb, eth(0x0800, Bytes(19, 0x45))), 0u);
    EXPECT_EQ(hash_of(kDltEn10mb, eth(0x86dd, Bytes(39, 0x60))), 0u);
    EXPECT_EQ(hash_of(999, ipv4(v4(1, 2), tcp(1, 2, 0x02))), 0u);
    EXPECT_EQ(dispatch_hash(kDltEn10mb, nullptr, 0), 0u);
    const Bytes f = eth(0x0800, ipv4(v4(1, 2), tcp(1, 2, 0x02)), {{0x8100, 1}, {0x8100, 2}});
    for (uint32_t n = 0; n < 38; ++n) {
        const Bytes prefix(f.begin(), f.begin() + n);
        EXPECT_EQ(dispatch_hash(kDltEn10mb, prefix.data(), n), 0u) << n;
    }
    EXPECT_NE(dispatch_hash(kDltEn10mb, f.data(), 42), 0u);
}

}  // namespace
}  // namespace picket::sensor::decode
