// A single-producer single-consumer byte ring of variable-length records: the transport of
// AlertQueue and RecordQueue, built like capture's Dispatcher rings. Positions are byte counts
// since construction; the producer's and the consumer's sit on separate cache lines; a record
// never wraps (a padding record fills the end of the buffer). No lock and no allocation after
// construction; push never blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace picket::sensor::output {

class ByteRing {
public:
    static constexpr size_t kAlign = 16;
    static constexpr size_t kCacheLine = 64;
    static constexpr size_t kHeader = 16;  // size + kind + reserved

    // size: bytes of the buffer, a multiple of kCacheLine (the callers check their minimum).
    explicit ByteRing(size_t size);
    ~ByteRing();
    ByteRing(const ByteRing&) = delete;
    ByteRing& operator=(const ByteRing&) = delete;

    // Bytes one record of `payload` bytes takes (header + payload, padded).
    static size_t record_bytes(size_t payload) {
        return (kHeader + payload + kAlign - 1) & ~(kAlign - 1);
    }

    // Producer: room for a record of `payload` bytes; nullptr when the ring is full. Fill the
    // returned bytes, then commit().
    uint8_t* reserve(size_t payload, uint32_t kind);
    void commit();

    // Consumer: calls f(kind, const uint8_t* data) for each record, oldest first (at most max),
    // data valid during the call only; returns how many were delivered.
    template <typename F>
    size_t drain(F&& f, size_t max = SIZE_MAX);

    size_t capacity() const { return size_; }

private:
    static constexpr uint32_t kPad = 0xffffffffu;

    const size_t size_;
    uint8_t* const buf_;

    alignas(kCacheLine) std::atomic<uint64_t> head_{0};  // written by the producer only
    uint64_t cached_tail_ = 0;
    uint64_t pending_head_ = 0;  // head after the reserved record

    alignas(kCacheLine) std::atomic<uint64_t> tail_{0};  // written by the consumer only
    uint64_t cached_head_ = 0;
};

template <typename F>
size_t ByteRing::drain(F&& f, size_t max) {
    uint64_t pos = tail_.load(std::memory_order_relaxed);
    if (pos == cached_head_) {
        cached_head_ = head_.load(std::memory_order_acquire);
    }
    size_t n = 0;
    while (pos != cached_head_ && n < max) {
        const uint8_t* at = buf_ + pos % size_;
        uint32_t size = 0, kind = 0;
        std::memcpy(&size, at, 4);
        std::memcpy(&kind, at + 4, 4);
        if (kind != kPad) {
            f(kind, at + kHeader);
            ++n;
        }
        pos += size;
        if (pos == cached_head_) {
            cached_head_ = head_.load(std::memory_order_acquire);
        }
    }
    tail_.store(pos, std::memory_order_release);
    return n;
}

}  // namespace picket::sensor::output
