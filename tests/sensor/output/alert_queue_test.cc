// AlertQueue: single-producer single-consumer ring of alert records.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sensor/output/output.h"

namespace picket::sensor::output {
namespace {

AlertEvent event_with_id(uint64_t id) {
    AlertEvent ev;
    ev.ts_ns = static_cast<int64_t>(id) * 1000;
    ev.pcap_cnt = id;
    ev.sport = static_cast<uint16_t>(id);
    ev.proto = 6;
    return ev;
}

// Deterministic content for record `id`, byte i.
uint8_t pattern(uint64_t id, uint32_t i) {
    return static_cast<uint8_t>(id * 31 + i * 7 + 3);
}

TEST(AlertQueue, RoundTripsEventPacketAndPayload) {
    AlertQueue q(1 << 16, 1024);
    AlertMeta meta;
    meta.sid = 42;
    AlertEvent ev = event_with_id(5);
    ev.meta = &meta;
    ev.app_proto = "http";
    ev.vlan_count = 1;
    ev.vlan_id[0] = 10;
    const uint8_t packet[] = {1, 2, 3, 4, 5};
    const uint8_t payload[] = {9, 8, 7};
    ASSERT_TRUE(q.push(ev, packet, sizeof(packet), payload, sizeof(payload)));
    std::vector<AlertEvent> seen;
    std::vector<std::vector<uint8_t>> packets, payloads;
    const size_t n = q.drain([&](const AlertEvent& e) {
        seen.push_back(e);
        packets.emplace_back(e.packet, e.packet + e.packet_len);
        payloads.emplace_back(e.payload, e.payload + e.payload_len);
    });
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(seen[0].meta, &meta);
    EXPECT_EQ(seen[0].pcap_cnt, 5u);
    EXPECT_STREQ(seen[0].app_proto, "http");
    EXPECT_EQ(seen[0].vlan_id[0], 10);
    EXPECT_EQ(packets[0], std::vector<uint8_t>({1, 2, 3, 4, 5}));
    EXPECT_EQ(payloads[0], std::vector<uint8_t>({9, 8, 7}));
    EXPECT_EQ(q.drain([](const AlertEvent&) {}), 0u);
    EXPECT_EQ(q.pushed(), 1u);
}

TEST(AlertQueue, EmptyDataGivesNullViews) {
    AlertQueue q(1 << 16, 1024);
    ASSERT_TRUE(q.push(event_with_id(1), nullptr, 100, nullptr, 0));
    bool null_views = false;
    q.drain([&](const AlertEvent& e) {
        null_views =
            e.packet == nullptr && e.payload == nullptr && e.packet_len == 0 && e.payload_len == 0;
    });
    EXPECT_TRUE(null_views);
}

TEST(AlertQueue, CapsDataAtBytesMax) {
    AlertQueue q(1 << 16, 100);
    std::vector<uint8_t> big(500);
    for (uint32_t i = 0; i < big.size(); ++i) {
        big[i] = pattern(1, i);
    }
    ASSERT_TRUE(q.push(event_with_id(1), big.data(), 500, big.data(), 500));
    uint32_t packet_len = 0, payload_len = 0;
    bool intact = false;
    q.drain([&](const AlertEvent& e) {
        packet_len = e.packet_len;
        payload_len = e.payload_len;
        intact = std::equal(e.packet, e.packet + 100, big.begin()) &&
                 std::equal(e.payload, e.payload + 100, big.begin());
    });
    EXPECT_EQ(packet_len, 100u);
    EXPECT_EQ(payload_len, 100u);
    EXPECT_TRUE(intact);
}

TEST(AlertQueue, RejectsRingBelowTwoLargestRecords) {
    const size_t min = 2 * AlertQueue::record_bytes(1000, 1000);
    EXPECT_THROW(AlertQueue(min - 64, 1000), std::invalid_argument);
    EXPECT_NO_THROW(AlertQueue((min + 63) & ~size_t{63}, 1000));
}

TEST(AlertQueue, OverflowCountedExactlyWhenFull) {
    // Records of 0 data bytes; a ring of exactly 10 of them (size a multiple of 64).
    const size_t rec = AlertQueue::record_bytes(0, 0);
    size_t ring = rec;
    size_t slots = 1;
    while (ring % 64 != 0 || ring < 2 * AlertQueue::record_bytes(64, 64) || slots < 10) {
        ring += rec;
        ++slots;
    }
    AlertQueue q(ring, 64);
    ASSERT_EQ(q.capacity(), ring);
    for (size_t i = 0; i < slots; ++i) {
        ASSERT_TRUE(q.push(event_with_id(i), nullptr, 0, nullptr, 0)) << i;
    }
    EXPECT_EQ(q.overflows(), 0u);
    EXPECT_FALSE(q.push(event_with_id(99), nullptr, 0, nullptr, 0));
    EXPECT_FALSE(q.push(event_with_id(100), nullptr, 0, nullptr, 0));
    EXPECT_EQ(q.overflows(), 2u);
    EXPECT_EQ(q.pushed(), slots);
    // Draining one frees exactly one slot.
    EXPECT_EQ(q.drain([](const AlertEvent&) {}, 1), 1u);
    EXPECT_TRUE(q.push(event_with_id(101), nullptr, 0, nullptr, 0));
    EXPECT_FALSE(q.push(event_with_id(102), nullptr, 0, nullptr, 0));
    EXPECT_EQ(q.overflows(), 3u);
    std::vector<uint64_t> ids;
    q.drain([&](const AlertEvent& e) { ids.push_back(e.pcap_cnt); });
    ASSERT_EQ(ids.size(), slots);
    EXPECT_EQ(ids.front(), 1u);
    EXPECT_EQ(ids.back(), 101u);
}

TEST(AlertQueue, WrapsWithPaddingAndKeepsOrder) {
    // Records of varying size so that some do not fit before the end of the ring.
    const uint32_t bytes_max = 300;
    const size_t ring = (2 * AlertQueue::record_bytes(bytes_max, bytes_max) + 63) & ~size_t{63};
    AlertQueue q(ring, bytes_max);
    std::vector<uint8_t> data(bytes_max);
    uint64_t next_in = 0, next_out = 0;
    bool ok = true;
    for (int round = 0; round < 200; ++round) {
        const uint32_t len = static_cast<uint32_t>((round * 37) % bytes_max);
        for (uint32_t i = 0; i < len; ++i) {
            data[i] = pattern(next_in, i);
        }
        if (q.push(event_with_id(next_in), nullptr, 0, data.data(), len)) {
            ++next_in;
        }
        q.drain(
            [&](const AlertEvent& e) {
                ok = ok && e.pcap_cnt == next_out;
                for (uint32_t i = 0; i < e.payload_len; ++i) {
                    ok = ok && e.payload[i] == pattern(next_out, i);
                }
                ++next_out;
            },
            round % 3 == 0 ? 0 : 1);
    }
    q.drain([&](const AlertEvent& e) {
        ok = ok && e.pcap_cnt == next_out;
        ++next_out;
    });
    EXPECT_TRUE(ok);
    EXPECT_EQ(next_out, next_in);
    EXPECT_GT(next_in, 100u);
}

TEST(AlertQueue, ProducerAndConsumerThreadsEveryRecordOnceInOrder) {
    constexpr uint64_t kRecords = 200000;
    constexpr uint32_t kMax = 512;
    AlertQueue q(64 * 1024, kMax);
    std::atomic<bool> done{false};
    uint64_t overflows_seen = 0;
    // Both loops below wait on the other thread; a queue that stopped moving would hang them,
    // so both give up at one deadline (far beyond the ~0.1 s this takes) and say so.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::atomic<bool> timed_out{false};
    uint64_t producer_reached = 0;

    std::thread producer([&] {
        std::vector<uint8_t> packet(kMax), payload(kMax);
        for (uint64_t id = 0; id < kRecords && !timed_out.load(); ++id) {
            const uint32_t plen = static_cast<uint32_t>(id % 97);
            const uint32_t ylen = static_cast<uint32_t>((id * 13) % (kMax + 1));
            for (uint32_t i = 0; i < plen; ++i) {
                packet[i] = pattern(id + 1, i);
            }
            for (uint32_t i = 0; i < ylen; ++i) {
                payload[i] = pattern(id, i);
            }
            while (!q.push(event_with_id(id), packet.data(), plen, payload.data(), ylen)) {
                ++overflows_seen;
                if (std::chrono::steady_clock::now() >= deadline) {
                    timed_out.store(true);
                    break;
                }
                std::this_thread::yield();
            }
            producer_reached = id;
        }
        done.store(true, std::memory_order_release);
    });

    uint64_t expected = 0;
    uint64_t bad = 0;
    auto check = [&](const AlertEvent& e) {
        const uint64_t id = e.pcap_cnt;
        bad += id != expected;
        bad += e.packet_len != id % 97;
        bad += e.payload_len != (id * 13) % (kMax + 1);
        for (uint32_t i = 0; i < e.packet_len; ++i) {
            bad += e.packet[i] != pattern(id + 1, i);
        }
        for (uint32_t i = 0; i < e.payload_len; ++i) {
            bad += e.payload[i] != pattern(id, i);
        }
        ++expected;
    };
    while (!done.load(std::memory_order_acquire) && !timed_out.load()) {
        if (q.drain(check) == 0) {
            timed_out.store(std::chrono::steady_clock::now() >= deadline);
            std::this_thread::yield();
        }
    }
    producer.join();
    q.drain(check);

    ASSERT_FALSE(timed_out.load())
        << "gave up after 60 s waiting for the producer to push all " << kRecords
        << " records through the queue; the producer reached record id " << producer_reached
        << ", records drained: " << expected;

    EXPECT_EQ(expected, kRecords);
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(q.pushed(), kRecords);
    EXPECT_EQ(q.overflows(), overflows_seen);
}

}  // namespace
}  // namespace picket::sensor::output
