#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sensor/capture/capture.h"
#include "tests/sensor/capture/test_frames.h"
#include "tests/support/pcap_writer.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::capture {
namespace {

using testing::eth_udp;
using testing::ipv4_udp;
namespace fs = std::filesystem;

using picket::testing::PcapOptions;
using picket::testing::TempDir;
using picket::testing::write_pcap;

// As libpcap's pcap_dump wrote these files before: snaplen 65535; frame i stamped
// 1700000000 + i seconds, i microseconds.
constexpr PcapOptions kEth{picket::testing::kLinktypeEthernet, 65535, 1700000000, 1};
constexpr PcapOptions kRaw{picket::testing::kLinktypeRaw, 65535, 1700000000, 1};

RawPacket view(const std::vector<uint8_t>& f) {
    RawPacket p;
    p.data = f.data();
    p.caplen = static_cast<uint32_t>(f.size());
    p.wirelen = p.caplen;
    return p;
}

std::string payload_of(const RawPacket& p, size_t link_header) {
    const size_t off = link_header + 28;
    return std::string(reinterpret_cast<const char*>(p.data + off), p.caplen - off);
}

// ---------------------------------------------------------------------------------------
// BPF

TEST(BpfFilter, CompilesAndExposesProgram) {
    BpfFilter f("udp port 9999", DLT_EN10MB);
    EXPECT_FALSE(f.empty());
    EXPECT_EQ(f.expression(), "udp port 9999");
    EXPECT_EQ(f.linktype(), DLT_EN10MB);
    ASSERT_NE(f.program(), nullptr);
    EXPECT_GT(static_cast<const bpf_program*>(f.program())->bf_len, 0u);
}

TEST(BpfFilter, BadExpressionMessage) {
    try {
        BpfFilter f("udp prot 9999", DLT_EN10MB);
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        EXPECT_STREQ(
            e.what(),
            "bad BPF expression 'udp prot 9999': can't parse filter expression: syntax error");
    }
}

TEST(BpfFilter, EmptyAcceptsAll) {
    BpfFilter f;
    const auto frame = eth_udp(1, 2, "x");
    EXPECT_TRUE(f.empty());
    EXPECT_EQ(f.program(), nullptr);
    EXPECT_TRUE(f.matches(view(frame)));
}

TEST(BpfFilter, MatchesCraftedFrames) {
    BpfFilter f("udp port 9999", DLT_EN10MB);
    const auto hit_dst = eth_udp(1234, 9999, "a");
    const auto hit_src = eth_udp(9999, 53, "b");
    const auto miss = eth_udp(1234, 9998, "c");
    EXPECT_TRUE(f.matches(view(hit_dst)));
    EXPECT_TRUE(f.matches(view(hit_src)));
    EXPECT_FALSE(f.matches(view(miss)));

    BpfFilter raw("udp dst port 53", DLT_RAW);
    const auto raw_hit = ipv4_udp(1000, 53, "q");
    const auto raw_miss = ipv4_udp(53, 1000, "q");
    RawPacket p = view(raw_hit);
    p.linktype = DLT_RAW;
    EXPECT_TRUE(raw.matches(p));
    EXPECT_FALSE(raw.matches(view(raw_miss)));
}

TEST(BpfFilter, MoveKeepsProgram) {
    BpfFilter a("udp port 9999", DLT_EN10MB);
    BpfFilter b(std::move(a));
    const auto hit = eth_udp(1234, 9999, "a");
    EXPECT_TRUE(b.matches(view(hit)));
    BpfFilter c;
    c = std::move(b);
    EXPECT_EQ(c.expression(), "udp port 9999");
    EXPECT_FALSE(c.matches(view(eth_udp(1, 2, "z"))));
}

// ---------------------------------------------------------------------------------------
// PcapFileReader

TEST(PcapFileReader, ReadsFilesAndDirectoryInNameOrder) {
    TempDir dir;
    fs::create_directory(dir.file("d"));
    write_pcap(dir.file("d/b.pcap"), {eth_udp(1, 2, "b0"), eth_udp(1, 2, "b1")}, kEth);
    write_pcap(dir.file("d/a.pcap"),
               {eth_udp(1, 2, "a0"), eth_udp(1, 2, "a1"), eth_udp(1, 2, "a2")}, kEth);
    write_pcap(dir.file("d/c.pcap"), {ipv4_udp(1, 2, "c0")}, kRaw);
    write_pcap(dir.file("first.pcap"), {eth_udp(1, 2, "f0")}, kEth);

    PcapFileReader r({dir.file("first.pcap"), dir.file("d")});
    const std::vector<std::string> want_files = {dir.file("first.pcap"), dir.file("d/a.pcap"),
                                                 dir.file("d/b.pcap"), dir.file("d/c.pcap")};
    EXPECT_EQ(r.files(), want_files);

    std::vector<std::string> payloads;
    std::vector<uint64_t> cnts;
    std::vector<int> linktypes;
    std::vector<int64_t> ts;
    RawPacket p;
    ReadResult rc;
    while ((rc = r.next(p)) == ReadResult::kOk) {
        payloads.push_back(payload_of(p, p.linktype == DLT_EN10MB ? 14 : 0));
        cnts.push_back(p.pcap_cnt);
        linktypes.push_back(p.linktype);
        ts.push_back(p.ts_ns);
    }
    EXPECT_EQ(rc, ReadResult::kEof);
    EXPECT_EQ(r.error(), "");
    EXPECT_EQ(payloads, (std::vector<std::string>{"f0", "a0", "a1", "a2", "b0", "b1", "c0"}));
    EXPECT_EQ(cnts, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(linktypes, (std::vector<int>{DLT_EN10MB, DLT_EN10MB, DLT_EN10MB, DLT_EN10MB,
                                           DLT_EN10MB, DLT_EN10MB, DLT_RAW}));
    EXPECT_EQ(ts[2], 1700000001LL * 1000000000 + 1000);  // a1: second record of its file
    EXPECT_EQ(r.packets_read(), 7u);
    EXPECT_EQ(r.bytes_read(), 6u * (14 + 28 + 2) + (28 + 2));
    EXPECT_EQ(r.next(p), ReadResult::kEof);
}

TEST(PcapFileReader, FilterRecompiledPerLinkTypeAndCounted) {
    TempDir dir;
    write_pcap(dir.file("a.pcap"),
               {eth_udp(1, 9999, "e0"), eth_udp(1, 80, "e1"), eth_udp(9999, 1, "e2")}, kEth);
    write_pcap(dir.file("b.pcap"), {ipv4_udp(1, 80, "r0"), ipv4_udp(1, 9999, "r1")}, kRaw);
    PcapFileReader r({dir.path()});
    BpfFilter f("udp port 9999", DLT_EN10MB);
    r.set_filter(f);
    std::vector<std::string> payloads;
    std::vector<uint64_t> cnts;
    RawPacket p;
    while (r.next(p) == ReadResult::kOk) {
        payloads.push_back(payload_of(p, p.linktype == DLT_EN10MB ? 14 : 0));
        cnts.push_back(p.pcap_cnt);
    }
    EXPECT_EQ(r.error(), "");
    EXPECT_EQ(payloads, (std::vector<std::string>{"e0", "e2", "r1"}));
    EXPECT_EQ(cnts, (std::vector<uint64_t>{1, 3, 5}));
    EXPECT_EQ(r.packets_read(), 5u);
    EXPECT_EQ(r.packets_filtered(), 2u);
}

void put_le32(std::string& s, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        s.push_back(static_cast<char>(v >> (8 * i)));
    }
}

TEST(PcapFileReader, ReadsPcapng) {
    TempDir dir;
    std::string f;
    // Section header block: type, length, byte-order magic, version 1.0, section length -1.
    put_le32(f, 0x0A0D0D0A);
    put_le32(f, 28);
    put_le32(f, 0x1A2B3C4D);
    put_le32(f, 0x00000001);
    put_le32(f, 0xffffffff);
    put_le32(f, 0xffffffff);
    put_le32(f, 28);
    // Interface description block: Ethernet, snaplen 65535, default microsecond resolution.
    put_le32(f, 1);
    put_le32(f, 20);
    put_le32(f, DLT_EN10MB);
    put_le32(f, 65535);
    put_le32(f, 20);
    const std::vector<std::vector<uint8_t>> frames = {eth_udp(5, 6, "ng0"), eth_udp(5, 6, "ng-1")};
    const uint64_t ts_us[2] = {1700000000123456ULL, 1700000001000001ULL};
    for (size_t i = 0; i < frames.size(); ++i) {
        const uint32_t len = static_cast<uint32_t>(frames[i].size());
        const uint32_t padded = (len + 3) & ~3u;
        put_le32(f, 6);
        put_le32(f, 32 + padded);
        put_le32(f, 0);
        put_le32(f, static_cast<uint32_t>(ts_us[i] >> 32));
        put_le32(f, static_cast<uint32_t>(ts_us[i]));
        put_le32(f, len);
        put_le32(f, len + 100);  // original length larger: a snapped packet
        f.append(reinterpret_cast<const char*>(frames[i].data()), len);
        f.append(padded - len, '\0');
        put_le32(f, 32 + padded);
    }
    std::ofstream(dir.file("x.pcapng"), std::ios::binary) << f;

    PcapFileReader r({dir.file("x.pcapng")});
    RawPacket p;
    ASSERT_EQ(r.next(p), ReadResult::kOk);
    EXPECT_EQ(payload_of(p, 14), "ng0");
    EXPECT_EQ(p.caplen, frames[0].size());
    EXPECT_EQ(p.wirelen, frames[0].size() + 100);
    EXPECT_EQ(p.ts_ns, 1700000000123456000LL);
    EXPECT_EQ(p.linktype, DLT_EN10MB);
    EXPECT_EQ(p.pcap_cnt, 1u);
    ASSERT_EQ(r.next(p), ReadResult::kOk);
    EXPECT_EQ(payload_of(p, 14), "ng-1");
    EXPECT_EQ(p.ts_ns, 1700000001000001000LL);
    EXPECT_EQ(p.pcap_cnt, 2u);
    EXPECT_EQ(r.next(p), ReadResult::kEof);
}

TEST(PcapFileReader, TruncatedFileReturnsPacketsThenError) {
    TempDir dir;
    // Three 60-byte frames: 24-byte file header, then records of 16 + 60 = 76 bytes.
    const std::string pad(60 - 14 - 28, 'p');
    write_pcap(dir.file("t.pcap"), {eth_udp(1, 2, pad), eth_udp(1, 2, pad), eth_udp(1, 2, pad)},
               kEth);
    ASSERT_EQ(fs::file_size(dir.file("t.pcap")), 24u + 3 * 76);
    fs::resize_file(dir.file("t.pcap"), 24 + 2 * 76 + 38);  // last record cut in half

    PcapFileReader r({dir.file("t.pcap")});
    RawPacket p;
    EXPECT_EQ(r.next(p), ReadResult::kOk);
    EXPECT_EQ(r.next(p), ReadResult::kOk);
    EXPECT_EQ(p.pcap_cnt, 2u);
    EXPECT_EQ(r.next(p), ReadResult::kError);
    EXPECT_EQ(r.error(), dir.file("t.pcap") +
                             ": truncated or corrupt capture at byte offset 176 after packet 2: "
                             "truncated dump file; tried to read 60 captured bytes, only got 22");
    EXPECT_EQ(r.next(p), ReadResult::kError);  // reading does not continue past an error
    EXPECT_EQ(r.packets_read(), 2u);
}

// Suricata ends a damaged file and goes on: skip_damaged() takes the error and the next
// file is read, pcap_cnt counting on; with nothing damaged it takes nothing.
TEST(PcapFileReader, SkipDamagedGoesOnWithTheNextFile) {
    TempDir dir;
    const std::string pad(60 - 14 - 28, 'p');
    write_pcap(dir.file("a.pcap"), {eth_udp(1, 2, pad), eth_udp(1, 2, pad)}, kEth);
    write_pcap(dir.file("b.pcap"), {eth_udp(3, 4, pad)}, kEth);
    fs::resize_file(dir.file("a.pcap"), 24 + 76 + 10);  // the second record's header cut

    PcapFileReader r({dir.file("a.pcap"), dir.file("b.pcap")});
    RawPacket p;
    std::string what;
    EXPECT_FALSE(r.skip_damaged(&what));
    ASSERT_EQ(r.next(p), ReadResult::kOk);
    ASSERT_EQ(r.next(p), ReadResult::kError);
    ASSERT_TRUE(r.skip_damaged(&what));
    EXPECT_EQ(what, dir.file("a.pcap") +
                        ": truncated or corrupt capture at byte offset 100 after packet 1: "
                        "truncated dump file; tried to read 16 header bytes, only got 10");
    EXPECT_EQ(r.error(), "");
    EXPECT_FALSE(r.skip_damaged(&what));
    ASSERT_EQ(r.next(p), ReadResult::kOk);
    EXPECT_EQ(p.pcap_cnt, 2u);
    EXPECT_EQ(r.next(p), ReadResult::kEof);
    EXPECT_EQ(r.packets_read(), 2u);
}

TEST(PcapFileReader, GarbageFileNamed) {
    TempDir dir;
    std::ofstream(dir.file("junk.pcap")) << "this is not a capture file, just some text.\n";
    try {
        PcapFileReader r({dir.file("junk.pcap")});
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        EXPECT_EQ(std::string(e.what()), dir.file("junk.pcap") + ": unknown file format");
    }
}

TEST(PcapFileReader, MissingFileNamed) {
    TempDir dir;
    try {
        PcapFileReader r({dir.file("nope.pcap")});
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        EXPECT_EQ(std::string(e.what()), dir.file("nope.pcap") + ": No such file or directory");
    }
}

// ---------------------------------------------------------------------------------------
// Dispatcher

constexpr size_t kMinQueue = 4 * (262144 + 32);

uint32_t hash_first_payload_byte(const RawPacket& p) {
    return p.data[0];
}

// Packet i: byte 0 = i % 7 (picks the worker), bytes 1..8 = i, then a length that varies.
std::vector<uint8_t> dispatch_packet(uint64_t i) {
    std::vector<uint8_t> d(9 + (i * 37) % 1500);
    d[0] = static_cast<uint8_t>(i % 7);
    std::memcpy(&d[1], &i, 8);
    for (size_t k = 9; k < d.size(); ++k) {
        d[k] = static_cast<uint8_t>(i + k);
    }
    return d;
}

TEST(Dispatcher, RejectsTooSmallQueue) {
    EXPECT_THROW(Dispatcher(2, kMinQueue - 64, hash_first_payload_byte, true), CaptureError);
    EXPECT_THROW(Dispatcher(0, kMinQueue, hash_first_payload_byte, true), CaptureError);
}

TEST(Dispatcher, BlockingDeliversEveryPacketOnceInOrderOnItsWorker) {
    constexpr uint32_t kWorkers = 3;
    constexpr uint64_t kPackets = 60000;  // ~45 MB through 1 MB rings: they fill many times
    Dispatcher d(kWorkers, kMinQueue, hash_first_payload_byte, true);
    std::vector<std::vector<uint64_t>> seen(kWorkers);
    std::atomic<uint64_t> bad{0};
    // The workers poll until the producer's finish(); should it never come, they give up at
    // the deadline and abort the dispatcher, which unblocks the producer too.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::atomic<bool> timed_out{false};
    std::vector<std::thread> workers;
    for (uint32_t w = 0; w < kWorkers; ++w) {
        workers.emplace_back([&, w] {
            PacketSource& src = d.source(w);
            Batch b;
            uint64_t batches = 0;
            for (;;) {
                const ReadResult rc = src.next_batch(b, 50);
                if (rc == ReadResult::kEof) {
                    break;
                }
                if (rc != ReadResult::kOk) {
                    if (std::chrono::steady_clock::now() >= give_up) {
                        timed_out.store(true);
                        d.abort();
                        break;
                    }
                    continue;
                }
                for (uint32_t k = 0; k < b.count; ++k) {
                    uint64_t i;
                    std::memcpy(&i, b.pkts[k].data + 1, 8);
                    const auto want = dispatch_packet(i);
                    if (b.pkts[k].caplen != want.size() || b.pkts[k].wirelen != want.size() + 4 ||
                        b.pkts[k].pcap_cnt != i + 1 || b.pkts[k].ts_ns != static_cast<int64_t>(i) ||
                        std::memcmp(b.pkts[k].data, want.data(), want.size()) != 0) {
                        ++bad;
                    }
                    seen[w].push_back(i);
                }
                src.release(b);
                if (++batches % 200 == 0) {  // let the producer find the ring full
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                }
            }
        });
    }
    for (uint64_t i = 0; i < kPackets && !timed_out.load(); ++i) {
        const auto data = dispatch_packet(i);
        RawPacket p;
        p.data = data.data();
        p.caplen = static_cast<uint32_t>(data.size());
        p.wirelen = p.caplen + 4;
        p.ts_ns = static_cast<int64_t>(i);
        p.pcap_cnt = i + 1;
        EXPECT_TRUE(d.push(p)) << "packet " << i;
    }
    d.finish();
    for (auto& t : workers) {
        t.join();
    }
    ASSERT_FALSE(timed_out.load())
        << "gave up after 60 s waiting for the end of input (kEof) on the workers; packets "
           "seen per worker: "
        << seen[0].size() << ", " << seen[1].size() << ", " << seen[2].size();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_EQ(d.dropped(), 0u);
    uint64_t total = 0;
    for (uint32_t w = 0; w < kWorkers; ++w) {
        std::vector<uint64_t> want;
        for (uint64_t i = 0; i < kPackets; ++i) {
            if ((i % 7) % kWorkers == w) {
                want.push_back(i);
            }
        }
        EXPECT_EQ(seen[w], want) << "worker " << w;
        EXPECT_EQ(d.dispatched(w), want.size());
        const CaptureStats st = d.source(w).stats();
        EXPECT_EQ(st.packets, want.size());
        EXPECT_EQ(st.drops, 0u);
        total += seen[w].size();
    }
    EXPECT_EQ(total, kPackets);
}

TEST(Dispatcher, NonBlockingCountsDropsExactly) {
    Dispatcher d(1, kMinQueue, nullptr, false);
    std::vector<uint8_t> data(1000, 0xab);
    RawPacket p;
    p.data = data.data();
    p.caplen = 1000;
    p.wirelen = 1000;
    // Each record is 32 + 1008 bytes; 1008 of them fit in 1048704 bytes, 384 bytes remain.
    uint64_t accepted = 0;
    for (int i = 0; i < 2000; ++i) {
        p.pcap_cnt = static_cast<uint64_t>(i + 1);
        accepted += d.push(p) ? 1 : 0;
    }
    EXPECT_EQ(accepted, 1008u);
    EXPECT_EQ(d.dropped(), 992u);
    EXPECT_EQ(d.source(0).stats().packets, 1008u);
    EXPECT_EQ(d.source(0).stats().drops, 992u);

    PacketSource& src = d.source(0);
    Batch b;
    std::vector<uint64_t> cnts;
    while (src.next_batch(b, 0) == ReadResult::kOk) {
        EXPECT_LE(b.count, kMaxBatch);
        for (uint32_t k = 0; k < b.count; ++k) {
            cnts.push_back(b.pkts[k].pcap_cnt);
        }
        src.release(b);
    }
    ASSERT_EQ(cnts.size(), 1008u);
    EXPECT_EQ(cnts.front(), 1u);
    EXPECT_EQ(cnts.back(), 1008u);

    // The next record does not fit before the end: a padding record wraps it to the start.
    data[0] = 0x11;
    p.pcap_cnt = 5000;
    ASSERT_TRUE(d.push(p));
    ASSERT_EQ(src.next_batch(b, 0), ReadResult::kOk);
    ASSERT_EQ(b.count, 1u);
    EXPECT_EQ(b.pkts[0].pcap_cnt, 5000u);
    EXPECT_EQ(b.pkts[0].caplen, 1000u);
    EXPECT_EQ(b.pkts[0].data[0], 0x11);
    EXPECT_EQ(b.pkts[0].data[999], 0xab);
    src.release(b);
    EXPECT_EQ(src.next_batch(b, 5), ReadResult::kTimeout);
    d.finish();
    EXPECT_EQ(src.next_batch(b, 5), ReadResult::kEof);
}

TEST(Dispatcher, AbortUnblocksPush) {
    Dispatcher d(1, kMinQueue, nullptr, true);
    std::vector<uint8_t> data(200000, 1);
    RawPacket p;
    p.data = data.data();
    p.caplen = 200000;
    p.wirelen = 200000;
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(d.push(p));  // 5 x 200032 bytes fit, the sixth does not
    }
    std::thread stopper([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        d.abort();
    });
    EXPECT_FALSE(d.push(p));
    stopper.join();
    EXPECT_EQ(d.dropped(), 1u);
}

TEST(Dispatcher, PacketLimitDropsExactly) {
    Dispatcher d(1, kMinQueue, nullptr, false, /*queue_packets=*/2);
    std::vector<uint8_t> data(100, 0xcd);
    RawPacket p = view(data);
    std::vector<bool> pushed;
    for (uint64_t i = 1; i <= 5; ++i) {
        p.pcap_cnt = i;
        pushed.push_back(d.push(p));
    }
    EXPECT_EQ(pushed, (std::vector<bool>{true, true, false, false, false}));
    PacketSource& src = d.source(0);
    Batch b;
    ASSERT_EQ(src.next_batch(b, 0), ReadResult::kOk);
    ASSERT_EQ(b.count, 2u);
    EXPECT_EQ(b.pkts[0].pcap_cnt, 1u);
    EXPECT_EQ(b.pkts[1].pcap_cnt, 2u);
    // Handed out but not released: the two still count against the limit.
    p.pcap_cnt = 6;
    EXPECT_FALSE(d.push(p));
    src.release(b);
    for (uint64_t i = 7; i <= 9; ++i) {
        p.pcap_cnt = i;
        pushed.push_back(d.push(p));
    }
    EXPECT_EQ(pushed, (std::vector<bool>{true, true, false, false, false, true, true, false}));
    EXPECT_EQ(d.dropped(), 5u);
    EXPECT_EQ(src.stats().packets, 4u);
    EXPECT_EQ(src.stats().drops, 5u);
    ASSERT_EQ(src.next_batch(b, 0), ReadResult::kOk);
    ASSERT_EQ(b.count, 2u);
    EXPECT_EQ(b.pkts[0].pcap_cnt, 7u);
    EXPECT_EQ(b.pkts[1].pcap_cnt, 8u);
    src.release(b);
}

TEST(Dispatcher, BlockingWithPacketLimitLosesNothing) {
    constexpr uint64_t kPackets = 20000;
    Dispatcher d(1, kMinQueue, nullptr, true, /*queue_packets=*/2);
    std::atomic<uint64_t> bad{0};
    uint64_t seen = 0;
    uint32_t max_batch = 0;
    // As above: a worker that never sees the end of input gives up and aborts the dispatcher.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::atomic<bool> timed_out{false};
    std::thread worker([&] {
        PacketSource& src = d.source(0);
        Batch b;
        for (;;) {
            const ReadResult rc = src.next_batch(b, 50);
            if (rc == ReadResult::kEof) {
                break;
            }
            if (rc != ReadResult::kOk) {
                if (std::chrono::steady_clock::now() >= give_up) {
                    timed_out.store(true);
                    d.abort();
                    break;
                }
                continue;
            }
            max_batch = std::max(max_batch, b.count);
            for (uint32_t k = 0; k < b.count; ++k) {
                bad += b.pkts[k].pcap_cnt != seen + 1 ? 1 : 0;
                ++seen;
            }
            src.release(b);
        }
    });
    std::vector<uint8_t> data(64, 1);
    RawPacket p = view(data);
    for (uint64_t i = 1; i <= kPackets && !timed_out.load(); ++i) {
        p.pcap_cnt = i;
        EXPECT_TRUE(d.push(p)) << "packet " << i;
    }
    d.finish();
    worker.join();
    ASSERT_FALSE(timed_out.load())
        << "gave up after 60 s waiting for the end of input (kEof) on the worker; packets seen: "
        << seen;
    EXPECT_EQ(seen, kPackets);
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_EQ(d.dropped(), 0u);
    EXPECT_LE(max_batch, 2u);  // never more than the limit queued
}

// ---------------------------------------------------------------------------------------
// PcapReplay

struct Replayed {
    std::vector<int64_t> ts;
    std::vector<uint64_t> cnt;
    std::vector<std::string> payload;
    ReadResult end = ReadResult::kOk;
};

Replayed replay_all(PcapReplay& r, size_t limit) {
    Replayed out;
    RawPacket p;
    while (out.ts.size() < limit) {
        out.end = r.next(p);
        if (out.end != ReadResult::kOk) {
            break;
        }
        out.ts.push_back(p.ts_ns);
        out.cnt.push_back(p.pcap_cnt);
        out.payload.push_back(payload_of(p, 14));
    }
    return out;
}

TEST(PcapReplay, ShiftsEveryPassForward) {
    TempDir dir;
    // Timestamps 1700000000 + i s + i us: span 2.000002 s, mean gap 1.000001 s.
    write_pcap(dir.file("a.pcap"), {eth_udp(1, 2, "p0"), eth_udp(1, 2, "p1"), eth_udp(1, 2, "p2")},
               kEth);
    PcapFileReader reader({dir.file("a.pcap")});
    PcapReplay replay(reader, 3);
    const Replayed got = replay_all(replay, 100);
    EXPECT_EQ(got.end, ReadResult::kEof);
    constexpr int64_t kBase = 1700000000LL * 1000000000;
    constexpr int64_t kPeriod = 2000002000LL + 1000001000LL;
    std::vector<int64_t> want_ts;
    for (int64_t pass = 0; pass < 3; ++pass) {
        for (int64_t i = 0; i < 3; ++i) {
            want_ts.push_back(kBase + i * 1000001000 + pass * kPeriod);
        }
    }
    EXPECT_EQ(got.ts, want_ts);
    EXPECT_EQ(got.cnt, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
    EXPECT_EQ(got.payload,
              (std::vector<std::string>{"p0", "p1", "p2", "p0", "p1", "p2", "p0", "p1", "p2"}));
    EXPECT_EQ(replay.pass(), 2u);
    EXPECT_EQ(replay.shift_ns(), 2 * kPeriod);
    EXPECT_EQ(reader.packets_read(), 9u);
}

TEST(PcapReplay, OnePassIsThePlainReader) {
    TempDir dir;
    write_pcap(dir.file("a.pcap"), {eth_udp(1, 2, "p0"), eth_udp(1, 2, "p1")}, kEth);
    PcapFileReader reader({dir.file("a.pcap")});
    PcapReplay replay(reader, 1);
    const Replayed got = replay_all(replay, 100);
    EXPECT_EQ(got.end, ReadResult::kEof);
    EXPECT_EQ(got.ts,
              (std::vector<int64_t>{1700000000LL * 1000000000, 1700000001LL * 1000000000 + 1000}));
    EXPECT_EQ(replay.shift_ns(), 0);
}

TEST(PcapReplay, EndlessKeepsTimeMovingAcrossFilesOutOfOrder) {
    TempDir dir;
    // b.pcap is read second but its packets are older: every pass still starts after the
    // latest timestamp of the one before.
    write_pcap(dir.file("a.pcap"), {eth_udp(1, 2, "a0"), eth_udp(1, 2, "a1")}, kEth);
    write_pcap(dir.file("b.pcap"), {eth_udp(1, 2, "b0")},
               {picket::testing::kLinktypeEthernet, 65535, 1699999990, 0});

    PcapFileReader reader({dir.path()});
    PcapReplay replay(reader, 0);
    const Replayed got = replay_all(replay, 3000);
    EXPECT_EQ(got.end, ReadResult::kOk);
    ASSERT_EQ(got.ts.size(), 3000u);
    // Span: 1699999990 s .. 1700000001.000001 s; three packets, so gap = span / 2.
    constexpr int64_t kSpan = 11LL * 1000000000 + 1000;
    constexpr int64_t kPeriod = kSpan + kSpan / 2;
    uint64_t backwards_across_passes = 0;
    for (size_t i = 0; i < got.ts.size(); ++i) {
        const int64_t pass = static_cast<int64_t>(i / 3);
        EXPECT_EQ(got.ts[i], got.ts[i % 3] + pass * kPeriod) << i;
        if (i >= 3 && i % 3 == 2) {
            // b0, the oldest packet of a pass, against a1, the latest of the pass before.
            backwards_across_passes += got.ts[i] <= got.ts[i - 4] ? 1 : 0;
        }
    }
    EXPECT_EQ(backwards_across_passes, 0u);
    EXPECT_EQ(got.cnt.back(), 3000u);
    EXPECT_EQ(replay.pass(), 999u);
}

TEST(PcapReplay, SinglePacketRepeatsOncePerSecond) {
    TempDir dir;
    write_pcap(dir.file("a.pcap"), {eth_udp(1, 2, "p0")}, kEth);
    PcapFileReader reader({dir.file("a.pcap")});
    PcapReplay replay(reader, 4);
    const Replayed got = replay_all(replay, 100);
    constexpr int64_t kBase = 1700000000LL * 1000000000;
    EXPECT_EQ(got.ts, (std::vector<int64_t>{kBase, kBase + 1000000000, kBase + 2000000000,
                                            kBase + 3000000000}));
}

TEST(PcapReplay, StopsWhenAPassYieldsNothing) {
    TempDir dir;
    write_pcap(dir.file("a.pcap"), {eth_udp(1, 2, "p0"), eth_udp(1, 2, "p1")}, kEth);
    PcapFileReader reader({dir.file("a.pcap")});
    BpfFilter f("tcp", DLT_EN10MB);
    reader.set_filter(f);
    PcapReplay replay(reader, 0);  // endless, but the filter rejects everything
    RawPacket p;
    EXPECT_EQ(replay.next(p), ReadResult::kEof);
    EXPECT_EQ(reader.packets_read(), 2u);
    EXPECT_EQ(reader.packets_filtered(), 2u);
}

// ---------------------------------------------------------------------------------------
// AF_PACKET and live capture: errors that need no traffic (the namespace test has the rest).

TEST(AfPacket, UnknownInterface) {
    AfPacketOptions o;
    o.iface = "picket-nope0";
    try {
        open_afpacket(o);
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        EXPECT_STREQ(e.what(), "interface 'picket-nope0': no such interface");
    }
}

TEST(PcapLiveReader, UnknownInterface) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "needs root (libpcap checks permission before the interface)";
    }
    try {
        PcapLiveReader r("picket-nope0", 1500, 1, false);
        FAIL() << "no exception";
    } catch (const CaptureError& e) {
        EXPECT_STREQ(e.what(), "interface 'picket-nope0': no such interface");
    }
}

}  // namespace
}  // namespace picket::sensor::capture
