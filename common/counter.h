// Single-writer counters: one worker increments, any thread may read (the stats exporter).
// Relaxed load + store compiles to a plain add on x86; no lock prefix on the hot path.
#pragma once

#include <atomic>
#include <cstdint>

namespace picket {

class Counter {
public:
    Counter() = default;
    Counter(const Counter&) = delete;
    Counter& operator=(const Counter&) = delete;

    void add(uint64_t n) {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    Counter& operator++() {
        add(1);
        return *this;
    }
    Counter& operator+=(uint64_t n) {
        add(n);
        return *this;
    }
    // For gauges kept by their one writer (e.g. flows active, memory in use).
    void set(uint64_t n) { v_.store(n, std::memory_order_relaxed); }
    uint64_t get() const { return v_.load(std::memory_order_relaxed); }

private:
    std::atomic<uint64_t> v_{0};
};

}  // namespace picket
