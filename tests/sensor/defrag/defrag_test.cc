// Fragment reassembly: exact output bytes (rebuilt IPv4/IPv6 headers included), the
// Sturges/Novak overlap pattern per policy, and the limits (timeout, memcap, trackers,
// fragments per datagram, size). Packets are built with tests/support/frames.h and the Packet
// fields filled as sensor/decode/decode.h documents, so the decoder is not needed.
#include "sensor/defrag/defrag.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "tests/support/frames.h"

// Counts every heap allocation in this test binary, to check that the steady state has none.
namespace {
std::atomic<uint64_t> g_allocations{0};
}
__attribute__((noinline)) void* operator new(size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    void* p = std::malloc(n == 0 ? 1 : n);
    if (p == nullptr) {
        throw std::bad_alloc();
    }
    return p;
}
__attribute__((noinline)) void operator delete(void* p) noexcept {
    std::free(p);
}
__attribute__((noinline)) void operator delete(void* p, size_t) noexcept {
    std::free(p);
}

namespace picket::sensor::defrag {
namespace {

using decode::Address;
using decode::Packet;

constexpr int64_t kSec = 1000000000;

// A fragment as captured: its bytes (from the IP header on) and the decoded view of them.
struct TestFrag {
    std::vector<uint8_t> bytes;
    Packet p;
};

struct V4 {
    uint16_t id = 12;
    uint32_t offset = 0;  // bytes, a multiple of 8
    bool more = true;
    std::string data{};
    uint8_t proto = 17;
    std::array<uint8_t, 4> src{10, 0, 0, 1};
    std::array<uint8_t, 4> dst{10, 0, 0, 2};
    std::vector<uint8_t> options{};  // a multiple of 4 bytes
    uint16_t vlan0 = 0;
    uint16_t vlan1 = 0;
    int64_t ts_ns = 0;
};

struct V6 {
    uint32_t id = 12;
    uint32_t offset = 0;
    bool more = true;
    std::string data{};
    uint8_t next_header = 17;
    bool hop_by_hop = false;  // an 8-byte Hop-by-Hop header before the Fragment header
    uint16_t vlan0 = 0;
    int64_t ts_ns = 0;
};

const std::array<uint8_t, 16> kSrc6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
const std::array<uint8_t, 16> kDst6{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};

namespace frames = picket::testing::frames;

// RFC 1071 checksum over a header (tests/support/frames.h, independent of the code under test).
uint16_t ip_checksum(const uint8_t* p, size_t len) {
    return frames::fold(frames::sum16(p, len));
}

// Raw IPv4 (TOS 0, TTL 64, no L4 checksum: the data is a slice of a datagram).
TestFrag v4_frag(const V4& s) {
    TestFrag f;
    const uint32_t hlen = 20 + static_cast<uint32_t>(s.options.size());
    const uint32_t total = hlen + static_cast<uint32_t>(s.data.size());
    frames::V4 h;
    h.with_proto(s.proto)
        .with_addrs(s.src, s.dst)
        .with_tos(0)
        .with_id(s.id)
        .with_frag(static_cast<uint16_t>((s.more ? 0x2000 : 0) | s.offset / 8))
        .with_opts(frames::Bytes(s.options.begin(), s.options.end()))
        .with_l4_checksum(false);
    f.bytes = frames::ipv4(h, frames::Bytes(s.data.begin(), s.data.end()));
    uint8_t* b = f.bytes.data();

    Packet& p = f.p;
    p.data = b;
    p.caplen = p.wirelen = total;
    p.ts_ns = s.ts_ns;
    p.linktype = 101;
    p.flags = decode::kFlagIpv4 | decode::kFlagFragment;
    p.ethertype = 0x0800;
    p.vlan_id[0] = s.vlan0;
    p.vlan_id[1] = s.vlan1;
    p.vlan_count = static_cast<uint8_t>((s.vlan0 != 0) + (s.vlan1 != 0));
    p.ip_version = 4;
    p.l3 = b;
    p.l3_len = total;
    p.ip_hdr_len = static_cast<uint16_t>(hlen);
    p.src = Address::from_v4(s.src.data());
    p.dst = Address::from_v4(s.dst.data());
    p.proto = s.proto;
    p.ttl = 64;
    p.ip_id = s.id;
    p.frag_id = s.id;
    p.frag_offset = s.offset;
    p.frag_more = s.more;
    p.frag_next_header = s.proto;
    p.frag_data = b + hlen;
    p.frag_data_len = static_cast<uint32_t>(s.data.size());
    return f;
}

// Raw IPv6 (traffic class 0, hop limit 64), an optional Hop-by-Hop header, then the Fragment
// header.
TestFrag v6_frag(const V6& s) {
    TestFrag f;
    const uint32_t unfrag = s.hop_by_hop ? 48 : 40;
    const uint32_t total = unfrag + 8 + static_cast<uint32_t>(s.data.size());
    frames::V6 h;
    h.with_addrs(kSrc6, kDst6).with_tclass(0).with_hlim(64).with_nh(s.hop_by_hop ? 0 : 44);
    h.with_l4_checksum(false);
    f.bytes = frames::ipv6(
        h, frames::cat({s.hop_by_hop ? frames::ext8(44) : frames::Bytes{},
                        frames::frag6(s.next_header, static_cast<uint16_t>(s.offset), s.more, s.id),
                        frames::Bytes(s.data.begin(), s.data.end())}));
    uint8_t* b = f.bytes.data();
    uint8_t* fh = b + unfrag;

    Packet& p = f.p;
    p.data = b;
    p.caplen = p.wirelen = total;
    p.ts_ns = s.ts_ns;
    p.linktype = 101;
    p.flags = decode::kFlagIpv6 | decode::kFlagFragment;
    p.ethertype = 0x86dd;
    p.vlan_id[0] = s.vlan0;
    p.vlan_count = s.vlan0 != 0;
    p.ip_version = 6;
    p.l3 = b;
    p.l3_len = total;
    p.ip_hdr_len = static_cast<uint16_t>(unfrag + 8);
    p.src = Address::from_v6(kSrc6.data());
    p.dst = Address::from_v6(kDst6.data());
    p.proto = s.next_header;
    p.ttl = 64;
    p.frag_id = s.id;
    p.frag_offset = s.offset;
    p.frag_more = s.more;
    p.frag_next_header = s.next_header;
    p.frag_prev_nh_offset = static_cast<uint16_t>(s.hop_by_hop ? 40 : 6);
    p.frag_unfrag_len = static_cast<uint16_t>(unfrag);
    p.frag_data = fh + 8;
    p.frag_data_len = static_cast<uint32_t>(s.data.size());
    return f;
}

// Runs a fragment through d; on kReassembled copies the output (valid until the next call).
struct Fed {
    DefragResult result;
    std::vector<uint8_t> out;
};

Fed feed(Defragmenter& d, const TestFrag& f) {
    const uint8_t* out = nullptr;
    uint32_t len = 0;
    Fed r{d.process(f.p, &out, &len), {}};
    r.out.assign(out, out + len);
    return r;
}

std::vector<uint8_t> bytes(std::initializer_list<int> v) {
    return std::vector<uint8_t>(v.begin(), v.end());
}

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::string& s) {
    a.insert(a.end(), s.begin(), s.end());
    return a;
}

// "AB" -> "AAAAAAAABBBBBBBB": the Novak pattern is written in 8-byte blocks.
std::string blocks(const std::string& letters) {
    std::string s;
    for (char c : letters) {
        s.append(8, c);
    }
    return s;
}

DefragConfig config(OverlapPolicy policy = OverlapPolicy::kBsd) {
    DefragConfig c;
    c.policy = policy;
    c.timeout_ns = 10 * kSec;
    return c;
}

const DefragResult kHeld = DefragResult::kHeld;
const DefragResult kReassembled = DefragResult::kReassembled;
const DefragResult kDropped = DefragResult::kDropped;

// ---------------------------------------------------------------- in order / out of order

TEST(DefragIpv4, InOrderRebuildsHeaderAndPayload) {
    Defragmenter d(config());
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .data = "BBBBBBBB"})).result, kHeld);
    Fed r = feed(d, v4_frag({.offset = 16, .more = false, .data = "CCC"}));
    ASSERT_EQ(r.result, kReassembled);
    // Total length 39, MF and offset cleared, checksum 0x66b8 over the rebuilt header.
    const auto expected = cat(bytes({0x45, 0x00, 0x00, 0x27, 0x00, 0x0c, 0x00, 0x00, 0x40, 0x11,
                                     0x66, 0xb8, 10,   0,    0,    1,    10,   0,    0,    2}),
                              "AAAAAAAABBBBBBBBCCC");
    EXPECT_EQ(r.out, expected);
    EXPECT_EQ(ip_checksum(r.out.data(), 20), 0);
    EXPECT_EQ(d.counters().ipv4_fragments.get(), 3u);
    EXPECT_EQ(d.counters().ipv4_reassembled.get(), 1u);
    EXPECT_EQ(d.counters().overlaps.get(), 0u);
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
}

TEST(DefragIpv4, OutOfOrderGivesTheSameDatagram) {
    Defragmenter d(config());
    EXPECT_EQ(feed(d, v4_frag({.offset = 16, .more = false, .data = "CCC"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    Fed r = feed(d, v4_frag({.offset = 8, .data = "BBBBBBBB"}));
    ASSERT_EQ(r.result, kReassembled);
    const auto expected = cat(bytes({0x45, 0x00, 0x00, 0x27, 0x00, 0x0c, 0x00, 0x00, 0x40, 0x11,
                                     0x66, 0xb8, 10,   0,    0,    1,    10,   0,    0,    2}),
                              "AAAAAAAABBBBBBBBCCC");
    EXPECT_EQ(r.out, expected);
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
}

TEST(DefragIpv4, KeepsTheOptionsOfTheFirstFragment) {
    Defragmenter d(config());
    // Options are not copied into later fragments (RFC 791): only the first has them.
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .more = false, .data = "BBBB"})).result, kHeld);
    Fed r = feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA", .options = {1, 1, 1, 0}}));
    ASSERT_EQ(r.result, kReassembled);
    auto header = bytes({0x46, 0x00, 0x00, 36, 0x00, 0x0c, 0x00, 0x00, 0x40, 0x11, 0, 0,
                         10,   0,    0,    1,  10,   0,    0,    2,    1,    1,    1, 0});
    frames::put16(header, 10, ip_checksum(header.data(), 24));
    EXPECT_EQ(r.out, cat(header, "AAAAAAAABBBB"));
    EXPECT_EQ(ip_checksum(r.out.data(), 24), 0);
}

TEST(DefragIpv6, InOrderRebuildsHeaderAndPayload) {
    Defragmenter d(config());
    EXPECT_EQ(feed(d, v6_frag({.offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    EXPECT_EQ(feed(d, v6_frag({.offset = 8, .data = "BBBBBBBB"})).result, kHeld);
    Fed r = feed(d, v6_frag({.offset = 16, .more = false, .data = "CCC"}));
    ASSERT_EQ(r.result, kReassembled);
    // Payload length 19, Next Header 17 in place of 44, no Fragment header.
    auto header = bytes({0x60, 0, 0, 0, 0, 19, 17, 64});
    header.insert(header.end(), kSrc6.begin(), kSrc6.end());
    header.insert(header.end(), kDst6.begin(), kDst6.end());
    EXPECT_EQ(r.out, cat(header, "AAAAAAAABBBBBBBBCCC"));
    EXPECT_EQ(d.counters().ipv6_fragments.get(), 3u);
    EXPECT_EQ(d.counters().ipv6_reassembled.get(), 1u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
}

TEST(DefragIpv6, OutOfOrderWithHopByHopPatchesTheExtensionHeader) {
    Defragmenter d(config());
    const V6 last{.offset = 16, .more = false, .data = "CCC", .hop_by_hop = true};
    const V6 first{.offset = 0, .data = "AAAAAAAA", .hop_by_hop = true};
    const V6 middle{.offset = 8, .data = "BBBBBBBB", .hop_by_hop = true};
    EXPECT_EQ(feed(d, v6_frag(last)).result, kHeld);
    EXPECT_EQ(feed(d, v6_frag(middle)).result, kHeld);
    Fed r = feed(d, v6_frag(first));
    ASSERT_EQ(r.result, kReassembled);
    // The IPv6 header still names Hop-by-Hop (0); the Hop-by-Hop header now names UDP.
    auto header = bytes({0x60, 0, 0, 0, 0, 8 + 19, 0, 64});
    header.insert(header.end(), kSrc6.begin(), kSrc6.end());
    header.insert(header.end(), kDst6.begin(), kDst6.end());
    const auto hbh = bytes({17, 0, 1, 4, 0, 0, 0, 0});
    header.insert(header.end(), hbh.begin(), hbh.end());
    EXPECT_EQ(r.out, cat(header, "AAAAAAAABBBBBBBBCCC"));
}

TEST(DefragIpv6, AtomicFragmentIsReturnedWithoutItsFragmentHeader) {
    Defragmenter d(config());
    // RFC 6946: offset 0 and M=0 is a whole datagram.
    Fed r = feed(d, v6_frag({.offset = 0, .more = false, .data = "hello"}));
    ASSERT_EQ(r.result, kReassembled);
    auto header = bytes({0x60, 0, 0, 0, 0, 5, 17, 64});
    header.insert(header.end(), kSrc6.begin(), kSrc6.end());
    header.insert(header.end(), kDst6.begin(), kDst6.end());
    EXPECT_EQ(r.out, cat(header, "hello"));
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
}

// ---------------------------------------------------------------- Sturges/Novak pattern

// The fragments of "Target-Based Fragmentation Reassembly" (Novak, 2005) as Suricata's
// DefragSturgesNovak*Test sends them: nine originals, then seven overlapping ones, then Q
// (the last fragment). Letters fill their whole fragment.
struct NovakFrag {
    char c;
    uint32_t offset;
    uint32_t len;
};
constexpr NovakFrag kNovak[] = {
    {'A', 0, 24},   {'B', 32, 16},  {'C', 48, 24}, {'D', 80, 8},  {'E', 104, 16}, {'F', 120, 24},
    {'G', 144, 16}, {'H', 160, 16}, {'I', 176, 8}, {'J', 8, 32},  {'K', 48, 24},  {'L', 72, 24},
    {'M', 96, 24},  {'N', 128, 8},  {'O', 152, 8}, {'P', 160, 8}, {'Q', 176, 16},
};

struct NovakResult {
    int held = 0;  // fragments before Q answered kHeld
    uint64_t overlaps = 0;
    std::vector<uint8_t> out;
    uint64_t trackers_after = 0;
    uint64_t memuse_after = 0;
};

template <typename Build>
NovakResult run_novak(OverlapPolicy policy, Build build) {
    Defragmenter d(config(policy));
    NovakResult r;
    for (size_t i = 0; i + 1 < std::size(kNovak); ++i) {
        const NovakFrag& f = kNovak[i];
        r.held += feed(d, build(f.offset, true, std::string(f.len, f.c))).result == kHeld;
    }
    const NovakFrag& q = kNovak[std::size(kNovak) - 1];
    r.out = feed(d, build(q.offset, false, std::string(q.len, q.c))).out;
    r.overlaps = d.counters().overlaps.get();
    r.trackers_after = d.counters().trackers_active.get();
    r.memuse_after = d.counters().memuse.get();
    return r;
}

NovakResult novak_v4(OverlapPolicy policy) {
    return run_novak(policy, [](uint32_t off, bool more, std::string data) {
        return v4_frag({.id = 1, .offset = off, .more = more, .data = std::move(data)});
    });
}

NovakResult novak_v6(OverlapPolicy policy) {
    return run_novak(policy, [](uint32_t off, bool more, std::string data) {
        return v6_frag({.id = 1, .offset = off, .more = more, .data = std::move(data)});
    });
}

std::string payload_v4(const NovakResult& r) {
    return std::string(r.out.begin() + std::min<size_t>(20, r.out.size()), r.out.end());
}
std::string payload_v6(const NovakResult& r) {
    return std::string(r.out.begin() + std::min<size_t>(40, r.out.size()), r.out.end());
}

// Expected data from Suricata's src/defrag.c, slot by slot (8 bytes each).
const std::string kNovakBsd = blocks("AAAJJBCCCLLLMMMFFFGGHHIQ");
const std::string kNovakLinux = blocks("AAAJJBKKKLLLMMMFFFGGPHQQ");
const std::string kNovakFirst = blocks("AAAJBBCCCLDLMEEFFFGGHHIQ");
const std::string kNovakLast = blocks("AJJJJBKKKLLLMMMFNFGOPHQQ");

TEST(DefragNovak, BsdIpv4) {
    NovakResult r = novak_v4(OverlapPolicy::kBsd);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    ASSERT_EQ(r.out.size(), 20u + 192u);
    EXPECT_EQ(r.out[2] << 8 | r.out[3], 212);
    EXPECT_EQ(payload_v4(r), kNovakBsd);
    EXPECT_EQ(r.trackers_after, 0u);
    EXPECT_EQ(r.memuse_after, 0u);
}

TEST(DefragNovak, LinuxIpv4) {
    NovakResult r = novak_v4(OverlapPolicy::kLinux);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    EXPECT_EQ(payload_v4(r), kNovakLinux);
    EXPECT_EQ(r.memuse_after, 0u);
}

TEST(DefragNovak, FirstIpv4) {
    NovakResult r = novak_v4(OverlapPolicy::kFirst);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    EXPECT_EQ(payload_v4(r), kNovakFirst);
    EXPECT_EQ(r.memuse_after, 0u);
}

TEST(DefragNovak, LastIpv4) {
    NovakResult r = novak_v4(OverlapPolicy::kLast);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    EXPECT_EQ(payload_v4(r), kNovakLast);
    EXPECT_EQ(r.memuse_after, 0u);
}

TEST(DefragNovak, BsdIpv6) {
    NovakResult r = novak_v6(OverlapPolicy::kBsd);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    ASSERT_EQ(r.out.size(), 40u + 192u);
    EXPECT_EQ(r.out[4] << 8 | r.out[5], 192);
    EXPECT_EQ(payload_v6(r), kNovakBsd);
    EXPECT_EQ(r.trackers_after, 0u);
    EXPECT_EQ(r.memuse_after, 0u);
}

TEST(DefragNovak, LinuxIpv6) {
    NovakResult r = novak_v6(OverlapPolicy::kLinux);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    EXPECT_EQ(payload_v6(r), kNovakLinux);
}

TEST(DefragNovak, FirstIpv6) {
    NovakResult r = novak_v6(OverlapPolicy::kFirst);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    EXPECT_EQ(payload_v6(r), kNovakFirst);
}

TEST(DefragNovak, LastIpv6) {
    NovakResult r = novak_v6(OverlapPolicy::kLast);
    EXPECT_EQ(r.held, 16);
    EXPECT_EQ(r.overlaps, 8u);  // J to P, and Q over I
    EXPECT_EQ(payload_v6(r), kNovakLast);
}

// Suricata's DefragTestJeremyLinux: a later fragment straddling two held ones.
TEST(DefragNovak, LinuxStraddlingFragment) {
    Defragmenter d(config(OverlapPolicy::kLinux));
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .offset = 0, .data = std::string(24, 'A')})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .offset = 40, .data = std::string(48, 'B')})).result,
              kHeld);
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .offset = 24, .data = std::string(48, 'C')})).result,
              kHeld);
    Fed r = feed(d, v4_frag({.id = 1, .offset = 88, .more = false, .data = std::string(14, 'D')}));
    ASSERT_EQ(r.result, kReassembled);
    EXPECT_EQ(
        std::string(r.out.begin() + 20, r.out.end()),
        std::string(24, 'A') + std::string(48, 'C') + std::string(16, 'B') + std::string(14, 'D'));
}

TEST(DefragNovak, LastPolicyFreesFragmentsItHides) {
    DefragConfig c = config(OverlapPolicy::kLast);
    c.max_frags_per_tracker = 1;
    Defragmenter d(c);
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    // Covers A entirely and wins: A is released, so the one-fragment limit still holds.
    Fed r = feed(d, v4_frag({.offset = 0, .more = false, .data = "XXXXXXXXXXXX"}));
    ASSERT_EQ(r.result, kReassembled);
    EXPECT_EQ(std::string(r.out.begin() + 20, r.out.end()), "XXXXXXXXXXXX");
    EXPECT_EQ(d.counters().overlaps.get(), 1u);
    EXPECT_EQ(d.counters().too_many_frags.get(), 0u);
}

TEST(DefragNovak, DuplicatesDoNotCountTowardsTheFragmentLimit) {
    DefragConfig c = config(OverlapPolicy::kBsd);
    c.max_frags_per_tracker = 2;
    Defragmenter d(c);
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "aaaaaaaa"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "aaaaaaaa"})).result, kHeld);
    EXPECT_EQ(d.counters().memuse.get(),
              kDefragTrackerBytes + kDefragFragBytes + 2 * kDefragChunkBytes);
    Fed r = feed(d, v4_frag({.offset = 8, .more = false, .data = "BB"}));
    ASSERT_EQ(r.result, kReassembled);
    EXPECT_EQ(std::string(r.out.begin() + 20, r.out.end()), "AAAAAAAABB");
    EXPECT_EQ(d.counters().overlaps.get(), 2u);
}

TEST(DefragPolicy, ParsesNamesAndSuricataAliases) {
    OverlapPolicy p = OverlapPolicy::kBsd;
    EXPECT_TRUE(parse_policy("first", &p));
    EXPECT_EQ(p, OverlapPolicy::kFirst);
    EXPECT_TRUE(parse_policy("last", &p));
    EXPECT_EQ(p, OverlapPolicy::kLast);
    EXPECT_TRUE(parse_policy("linux", &p));
    EXPECT_EQ(p, OverlapPolicy::kLinux);
    EXPECT_TRUE(parse_policy("bsd", &p));
    EXPECT_EQ(p, OverlapPolicy::kBsd);
    EXPECT_TRUE(parse_policy("windows", &p));
    EXPECT_EQ(p, OverlapPolicy::kFirst);
    EXPECT_TRUE(parse_policy("last", &p));
    EXPECT_TRUE(parse_policy("solaris", &p));
    EXPECT_EQ(p, OverlapPolicy::kFirst);
    EXPECT_TRUE(parse_policy("bsd-right", &p));
    EXPECT_EQ(p, OverlapPolicy::kLast);
    EXPECT_TRUE(parse_policy("Linux", &p));
    EXPECT_EQ(p, OverlapPolicy::kLinux);
    EXPECT_FALSE(parse_policy("macos", &p));
    EXPECT_FALSE(parse_policy("", &p));
    EXPECT_FALSE(parse_policy("bsd-", &p));
    EXPECT_FALSE(parse_policy(nullptr, &p));
    EXPECT_EQ(p, OverlapPolicy::kLinux);
}

// ---------------------------------------------------------------- limits

TEST(DefragLimits, TimeoutExpiresIdleTrackers) {
    Defragmenter d(config());  // 10 s
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA", .ts_ns = 0})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .data = "BBBBBBBB", .ts_ns = 5 * kSec})).result, kHeld);
    d.expire(15 * kSec);  // idle exactly the timeout: kept
    EXPECT_EQ(d.counters().timeouts.get(), 0u);
    EXPECT_EQ(d.counters().trackers_active.get(), 1u);
    d.expire(15 * kSec + 1);
    EXPECT_EQ(d.counters().timeouts.get(), 1u);
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
    // The rest of the datagram now starts a new tracker and cannot complete.
    EXPECT_EQ(
        feed(d, v4_frag({.offset = 16, .more = false, .data = "C", .ts_ns = 16 * kSec})).result,
        kHeld);
    EXPECT_EQ(d.counters().ipv4_reassembled.get(), 0u);
    EXPECT_EQ(d.counters().trackers_active.get(), 1u);
}

TEST(DefragLimits, MemcapEvictsTheOldestDatagramForANewOne) {
    // First fragment of a datagram: tracker + fragment + one data chunk + one header chunk.
    const uint64_t first = kDefragTrackerBytes + kDefragFragBytes + 2 * kDefragChunkBytes;
    const uint64_t more = kDefragFragBytes + kDefragChunkBytes;
    DefragConfig c = config();
    c.memcap = first + more;
    Defragmenter d(c);
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    EXPECT_EQ(d.counters().memuse.get(), first);
    // A new datagram does not fit: the oldest one (1) is given up for it, not the new one.
    EXPECT_EQ(feed(d, v4_frag({.id = 2, .offset = 0, .data = "ZZZZZZZZ"})).result, kHeld);
    EXPECT_EQ(d.counters().evicted.get(), 1u);
    EXPECT_EQ(d.counters().memcap_drops.get(), 0u);
    EXPECT_EQ(d.counters().memuse.get(), first);
    EXPECT_EQ(d.counters().trackers_active.get(), 1u);
    Fed r = feed(d, v4_frag({.id = 2, .offset = 8, .more = false, .data = "BBBBBBBB"}));
    ASSERT_EQ(r.result, kReassembled);
    EXPECT_EQ(std::string(r.out.begin() + 20, r.out.end()), "ZZZZZZZZBBBBBBBB");
    EXPECT_EQ(d.counters().memuse.get(), 0u);
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
}

TEST(DefragLimits, MemcapDropsWhatTheDatagramItselfCannotHold) {
    const uint64_t first = kDefragTrackerBytes + kDefragFragBytes + 2 * kDefragChunkBytes;
    const uint64_t more = kDefragFragBytes + kDefragChunkBytes;
    DefragConfig c = config();
    c.memcap = first + more;
    Defragmenter d(c);
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .offset = 8, .data = "BBBBBBBB"})).result, kHeld);
    EXPECT_EQ(d.counters().memuse.get(), first + more);
    // Nothing else to give up: the fragment is dropped and what is held stays.
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .offset = 16, .data = "CCCCCCCC"})).result, kDropped);
    EXPECT_EQ(d.counters().memcap_drops.get(), 1u);
    EXPECT_EQ(d.counters().evicted.get(), 0u);
    EXPECT_EQ(d.counters().memuse.get(), first + more);
    EXPECT_EQ(d.counters().trackers_active.get(), 1u);
}

TEST(DefragLimits, LargeFragmentsUseSeveralChunks) {
    Defragmenter d(config());
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .data = std::string(1480, 'x')})).result, kHeld);
    EXPECT_EQ(d.counters().memuse.get(),
              kDefragTrackerBytes + kDefragFragBytes + 6 * kDefragChunkBytes);
    Fed r = feed(d, v4_frag({.offset = 0, .more = true, .data = "AAAAAAAA"}));
    EXPECT_EQ(r.result, kHeld);
    r = feed(d, v4_frag({.offset = 1488, .more = false, .data = "end"}));
    ASSERT_EQ(r.result, kReassembled);
    EXPECT_EQ(std::string(r.out.begin() + 20, r.out.end()),
              "AAAAAAAA" + std::string(1480, 'x') + "end");
    EXPECT_EQ(r.out[2] << 8 | r.out[3], 20 + 1491);
}

TEST(DefragLimits, TooManyFragmentsDropsTheDatagram) {
    DefragConfig c = config();
    c.max_frags_per_tracker = 3;
    Defragmenter d(c);
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .data = "BBBBBBBB"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 16, .data = "CCCCCCCC"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 24, .data = "DDDDDDDD"})).result, kDropped);
    EXPECT_EQ(d.counters().too_many_frags.get(), 1u);
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
}

TEST(DefragLimits, TrackerLimitReclaimsExpiredThenEvictsTheOldest) {
    DefragConfig c = config();
    c.max_trackers = 2;
    Defragmenter d(c);
    EXPECT_EQ(feed(d, v4_frag({.id = 1, .data = "A"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.id = 2, .data = "A", .ts_ns = kSec})).result, kHeld);
    // Nothing idle for 10 s at 2 s: the oldest datagram (1) is given up.
    EXPECT_EQ(feed(d, v4_frag({.id = 3, .data = "A", .ts_ns = 2 * kSec})).result, kHeld);
    EXPECT_EQ(d.counters().evicted.get(), 1u);
    EXPECT_EQ(d.counters().tracker_drops.get(), 0u);
    // At 11.5 s only tracker 2 (last seen at 1 s) is idle for longer than 10 s: it times out.
    EXPECT_EQ(feed(d, v4_frag({.id = 4, .data = "A", .ts_ns = 11 * kSec + kSec / 2})).result,
              kHeld);
    EXPECT_EQ(d.counters().timeouts.get(), 1u);
    EXPECT_EQ(d.counters().evicted.get(), 1u);
    EXPECT_EQ(d.counters().trackers_active.get(), 2u);
}

TEST(DefragLimits, FragmentPastTheLargestDatagramIsInvalid) {
    Defragmenter d(config());
    // Suricata's DefragTooLargeIpv4Test: 20 + 65464 + 71 > 65535.
    EXPECT_EQ(
        feed(d, v4_frag({.offset = 65464, .more = false, .data = std::string(71, 'A')})).result,
        kDropped);
    EXPECT_EQ(
        feed(d, v6_frag({.offset = 65528, .more = false, .data = std::string(8, 'A')})).result,
        kDropped);
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .data = ""})).result, kDropped);  // no data
    EXPECT_EQ(d.counters().invalid.get(), 3u);
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
}

TEST(DefragLimits, ReassembledDatagramOver65535IsInvalid) {
    Defragmenter d(config());
    // A 60-byte header and 65500 bytes of data: every fragment fits, the datagram does not.
    const std::vector<uint8_t> options(40, 1);
    EXPECT_EQ(
        feed(d, v4_frag({.offset = 0, .data = std::string(32760, 'a'), .options = options})).result,
        kHeld);
    EXPECT_EQ(
        feed(d, v4_frag({.offset = 32760, .more = false, .data = std::string(32740, 'b')})).result,
        kDropped);
    EXPECT_EQ(d.counters().invalid.get(), 1u);
    EXPECT_EQ(d.counters().ipv4_reassembled.get(), 0u);
    EXPECT_EQ(d.counters().trackers_active.get(), 0u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
}

// ---------------------------------------------------------------- keys

TEST(DefragKeys, DifferentVlanIdProtoOrAddressNeverMix) {
    Defragmenter d(config());
    EXPECT_EQ(feed(d, v4_frag({.data = "AAAAAAAA", .vlan0 = 1})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .more = false, .data = "B", .vlan0 = 2})).result,
              kHeld);
    EXPECT_EQ(
        feed(d, v4_frag({.offset = 8, .more = false, .data = "B", .vlan0 = 1, .vlan1 = 7})).result,
        kHeld);
    EXPECT_EQ(
        feed(d, v4_frag({.id = 13, .offset = 8, .more = false, .data = "B", .vlan0 = 1})).result,
        kHeld);
    EXPECT_EQ(
        feed(d, v4_frag({.offset = 8, .more = false, .data = "B", .proto = 6, .vlan0 = 1})).result,
        kHeld);
    EXPECT_EQ(
        feed(d,
             v4_frag({.offset = 8, .more = false, .data = "B", .src = {10, 0, 0, 3}, .vlan0 = 1}))
            .result,
        kHeld);
    EXPECT_EQ(feed(d, v6_frag({.offset = 8, .more = false, .data = "B", .vlan0 = 1})).result,
              kHeld);
    EXPECT_EQ(d.counters().trackers_active.get(), 7u);
    EXPECT_EQ(d.counters().ipv4_reassembled.get(), 0u);
    // The matching fragment completes only its own datagram.
    Fed r = feed(d, v4_frag({.offset = 8, .more = false, .data = "b", .vlan0 = 1}));
    ASSERT_EQ(r.result, kReassembled);
    EXPECT_EQ(std::string(r.out.begin() + 20, r.out.end()), "AAAAAAAAb");
    EXPECT_EQ(d.counters().trackers_active.get(), 6u);
}

TEST(DefragKeys, LateDuplicatesDoNotReassembleAgain) {
    Defragmenter d(config());
    EXPECT_EQ(feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .data = "BBBBBBBB"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 16, .more = false, .data = "CCC"})).result, kReassembled);
    EXPECT_EQ(feed(d, v4_frag({.offset = 16, .more = false, .data = "CCC"})).result, kHeld);
    EXPECT_EQ(feed(d, v4_frag({.offset = 8, .data = "BBBBBBBB"})).result, kHeld);
    EXPECT_EQ(d.counters().ipv4_reassembled.get(), 1u);
    EXPECT_EQ(d.counters().trackers_active.get(), 1u);
    d.expire(11 * kSec);
    EXPECT_EQ(d.counters().timeouts.get(), 1u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
}

// ---------------------------------------------------------------- memory

TEST(DefragMemory, SteadyStateDoesNotAllocate) {
    Defragmenter d(config());
    std::vector<TestFrag> frags;
    for (uint16_t id = 0; id < 200; ++id) {
        frags.push_back(v4_frag({.id = id, .offset = 8, .data = std::string(1480, 'b')}));
        frags.push_back(v4_frag({.id = id, .offset = 0, .data = "AAAAAAAA"}));
        frags.push_back(v4_frag({.id = id, .offset = 1488, .more = false, .data = "end"}));
        frags.push_back(v6_frag({.id = id, .offset = 0, .data = "AAAAAAAA"}));
        frags.push_back(v6_frag({.id = id, .offset = 8, .more = false, .data = "BB"}));
    }
    const uint8_t* out = nullptr;
    uint32_t len = 0;
    uint64_t reassembled = 0;
    // Warm-up: the pools grow to what this traffic needs.
    for (size_t i = 0; i < 5; ++i) {
        reassembled += d.process(frags[i].p, &out, &len) == kReassembled;
    }
    const uint64_t before = g_allocations.load();
    for (size_t i = 5; i < frags.size(); ++i) {
        reassembled += d.process(frags[i].p, &out, &len) == kReassembled;
    }
    d.expire(0);
    EXPECT_EQ(g_allocations.load() - before, 0u);
    EXPECT_EQ(reassembled, 400u);
    EXPECT_EQ(d.counters().memuse.get(), 0u);
}

// ---------------------------------------------------------------- stats

TEST(DefragStats, ExportsEveryCounterByName) {
    DefragConfig c = config();
    c.max_trackers = 2;
    Defragmenter d(c);
    feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"}));
    feed(d, v4_frag({.offset = 0, .data = "AAAAAAAA"}));  // overlap (duplicate)
    feed(d, v4_frag({.offset = 8, .more = false, .data = "B"}));
    feed(d, v6_frag({.offset = 8, .more = false, .data = "B"}));
    feed(d, v6_frag({.offset = 0, .data = "AAAAAAAA"}));
    feed(d, v4_frag({.offset = 65528, .more = false, .data = "toolong!"}));  // invalid
    feed(d, v4_frag({.id = 99, .offset = 16, .data = "CCCCCCCC"}));          // held
    feed(d, v6_frag({.id = 5, .offset = 0, .data = "x"}));                   // held: 2 trackers now
    feed(d, v6_frag({.id = 6, .offset = 0, .data = "y"}));  // no tracker left: 99 evicted

    StatsSnapshot s;
    d.export_stats(s);
    EXPECT_EQ(s.values().size(), 13u);
    EXPECT_EQ(s.get("defrag.ipv4.fragments"), 5u);
    EXPECT_EQ(s.get("defrag.ipv4.reassembled"), 1u);
    EXPECT_EQ(s.get("defrag.ipv6.fragments"), 4u);
    EXPECT_EQ(s.get("defrag.ipv6.reassembled"), 1u);
    EXPECT_EQ(s.get("defrag.timeouts"), 0u);
    EXPECT_EQ(s.get("defrag.memcap_drops"), 0u);
    EXPECT_EQ(s.get("defrag.overlaps"), 1u);
    EXPECT_EQ(s.get("defrag.max_frag_hits"), 0u);
    EXPECT_EQ(s.get("defrag.invalid"), 1u);
    EXPECT_EQ(s.get("defrag.trackers"), 2u);
    EXPECT_EQ(s.get("defrag.memuse"),
              uint64_t{2 * (kDefragTrackerBytes + kDefragFragBytes + 2 * kDefragChunkBytes)});
    EXPECT_EQ(s.get("defrag.max_trackers_reached"), 0u);
    EXPECT_EQ(s.get("defrag.evicted"), 1u);
}

}  // namespace
}  // namespace picket::sensor::defrag
