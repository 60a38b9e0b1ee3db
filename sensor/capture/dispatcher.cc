#include "sensor/capture/capture.h"

#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include "common/counter.h"

namespace picket::sensor::capture {

namespace {

constexpr size_t kCacheLine = 64;
constexpr uint32_t kMaxCaplen = 262144;
constexpr size_t kAlign = 16;

// One record in the ring: this header, then caplen bytes, padded to kAlign. A padding record
// (linktype kPadLinktype) fills the space up to the end of the buffer when the next record
// would not fit there, so that every record is contiguous.
struct RecordHeader {
    uint32_t size;  // whole record, header included, multiple of kAlign
    uint32_t caplen;
    uint32_t wirelen;
    int32_t linktype;
    int64_t ts_ns;
    uint64_t pcap_cnt;
};
static_assert(sizeof(RecordHeader) == 32 && sizeof(RecordHeader) % kAlign == 0);
constexpr int32_t kPadLinktype = -1;
constexpr size_t kMaxRecord = sizeof(RecordHeader) + kMaxCaplen;
constexpr size_t kMinQueueBytes = 4 * kMaxRecord;

constexpr size_t record_size(uint32_t caplen) {
    return sizeof(RecordHeader) + ((static_cast<size_t>(caplen) + kAlign - 1) & ~(kAlign - 1));
}

// Sleep in short steps once spinning has not helped; never longer than `step_max`.
class Backoff {
public:
    void wait() {
        if (spins_ < 64) {
            ++spins_;
            std::this_thread::yield();
            return;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
        if (sleep_us_ < 1000) {
            sleep_us_ *= 2;
        }
    }

private:
    uint32_t spins_ = 0;
    uint32_t sleep_us_ = 20;
};

}  // namespace

// Positions are byte counts since construction (never wrap in practice: 2^64 bytes); the
// buffer offset is position % size. head_ is written by the producer only, tail_ by the
// consumer only, each on its own cache line together with what the same thread reads.
// With a packet limit, the consumer also publishes how many packets it has released; the
// producer compares that with what it pushed, the same way it compares head with tail.
struct Dispatcher::Queue final : public PacketSource {
    Queue(size_t bytes, uint64_t packets)
        : size(bytes),
          max_packets(packets),
          buf(static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(64)))) {}
    ~Queue() override { ::operator delete(buf, std::align_val_t(64)); }

    // --- consumer (worker) side
    ReadResult next_batch(Batch& batch, int timeout_ms) override;
    void release(Batch& batch) override {
        if (max_packets != 0) {
            released_local += batch.count;
            released.store(released_local, std::memory_order_release);
        }
        tail.store(batch.cookie, std::memory_order_release);
    }
    CaptureStats stats() override { return CaptureStats{dispatched.get(), dropped.get()}; }
    std::string error() const override { return {}; }

    // --- producer side: true when a record of `total` bytes (padding included) fits now.
    bool fits(uint64_t head, size_t total) {
        if (head + total - cached_tail > size) {
            cached_tail = tail.load(std::memory_order_acquire);
            if (head + total - cached_tail > size) {
                return false;
            }
        }
        if (max_packets != 0 && pushed - cached_released >= max_packets) {
            cached_released = released.load(std::memory_order_acquire);
            if (pushed - cached_released >= max_packets) {
                return false;
            }
        }
        return true;
    }

    const size_t size;
    const uint64_t max_packets;  // 0 = no packet limit
    uint8_t* const buf;

    alignas(kCacheLine) std::atomic<uint64_t> head{0};  // producer publishes records
    uint64_t cached_tail = 0;                           // producer's view of tail
    uint64_t pushed = 0;                                // producer: packets pushed
    uint64_t cached_released = 0;                       // producer's view of released
    Counter dispatched;
    Counter dropped;

    alignas(kCacheLine) std::atomic<uint64_t> tail{0};  // consumer frees records
    std::atomic<uint64_t> released{0};                  // consumer: packets released
    uint64_t released_local = 0;
    uint64_t read_pos = 0;     // consumer: next record to hand out (>= tail)
    uint64_t cached_head = 0;  // consumer's view of head

    alignas(kCacheLine) std::atomic<bool> finished{false};
};

ReadResult Dispatcher::Queue::next_batch(Batch& batch, int timeout_ms) {
    batch.count = 0;
    if (read_pos == cached_head) {
        cached_head = head.load(std::memory_order_acquire);
        if (read_pos == cached_head) {
            using Clock = std::chrono::steady_clock;
            const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
            Backoff backoff;
            for (;;) {
                // finished is stored after the last head: reading it first, then head, sees
                // every record pushed before finish().
                const bool done = finished.load(std::memory_order_acquire);
                cached_head = head.load(std::memory_order_acquire);
                if (read_pos != cached_head) {
                    break;
                }
                if (done) {
                    return ReadResult::kEof;
                }
                if (Clock::now() >= deadline) {
                    return ReadResult::kTimeout;
                }
                backoff.wait();
            }
        }
    }
    while (batch.count < kMaxBatch && read_pos != cached_head) {
        const auto* rec = reinterpret_cast<const RecordHeader*>(buf + read_pos % size);
        read_pos += rec->size;
        if (rec->linktype == kPadLinktype) {
            continue;
        }
        RawPacket& p = batch.pkts[batch.count];
        p.data = reinterpret_cast<const uint8_t*>(rec + 1);
        p.caplen = rec->caplen;
        p.wirelen = rec->wirelen;
        p.ts_ns = rec->ts_ns;
        p.linktype = rec->linktype;
        p.pcap_cnt = rec->pcap_cnt;
        batch.verdict[batch.count] = Verdict::kAccept;
        ++batch.count;
    }
    // A padding record is published together with the record after it, so count >= 1 here.
    batch.cookie = read_pos;
    return ReadResult::kOk;
}

Dispatcher::Dispatcher(uint32_t workers, size_t queue_bytes, DispatchHash hash, bool blocking,
                       uint64_t queue_packets)
    : hash_(hash), blocking_(blocking) {
    if (workers == 0) {
        throw CaptureError("dispatcher: at least one worker is needed");
    }
    if (hash == nullptr && workers > 1) {
        throw CaptureError("dispatcher: a hash function is needed for several workers");
    }
    queue_bytes &= ~(kCacheLine - 1);
    if (queue_bytes < kMinQueueBytes) {
        throw CaptureError("dispatcher: queue_bytes " + std::to_string(queue_bytes) +
                           " is below the minimum " + std::to_string(kMinQueueBytes) +
                           " (4 records of the largest packet, 262144 bytes)");
    }
    queues_.reserve(workers);
    for (uint32_t i = 0; i < workers; ++i) {
        queues_.push_back(std::make_unique<Queue>(queue_bytes, queue_packets));
    }
}

Dispatcher::~Dispatcher() = default;

bool Dispatcher::push(const RawPacket& p) {
    const uint32_t n = static_cast<uint32_t>(queues_.size());
    Queue& q = *queues_[n == 1 ? 0 : hash_(p) % n];
    const uint32_t caplen = p.caplen < kMaxCaplen ? p.caplen : kMaxCaplen;
    const size_t need = record_size(caplen);
    const uint64_t head = q.head.load(std::memory_order_relaxed);
    const size_t offset = head % q.size;
    const size_t to_end = q.size - offset;
    const size_t pad = to_end < need ? to_end : 0;
    const size_t total = pad + need;

    if (!q.fits(head, total)) {
        if (!blocking_) {
            ++q.dropped;
            return false;
        }
        Backoff backoff;
        do {
            if (aborted_.load(std::memory_order_relaxed)) {
                ++q.dropped;
                return false;
            }
            backoff.wait();
        } while (!q.fits(head, total));
    }

    size_t at = offset;
    if (pad != 0) {
        auto* rec = reinterpret_cast<RecordHeader*>(q.buf + offset);
        rec->size = static_cast<uint32_t>(pad);
        rec->linktype = kPadLinktype;
        at = 0;
    }
    auto* rec = reinterpret_cast<RecordHeader*>(q.buf + at);
    rec->size = static_cast<uint32_t>(need);
    rec->caplen = caplen;
    rec->wirelen = p.wirelen;
    rec->linktype = p.linktype;
    rec->ts_ns = p.ts_ns;
    rec->pcap_cnt = p.pcap_cnt;
    if (caplen != 0) {
        std::memcpy(rec + 1, p.data, caplen);
    }
    q.head.store(head + total, std::memory_order_release);
    ++q.pushed;
    ++q.dispatched;
    return true;
}

void Dispatcher::finish() {
    for (auto& q : queues_) {
        q->finished.store(true, std::memory_order_release);
    }
}

void Dispatcher::abort() {
    aborted_.store(true, std::memory_order_relaxed);
}

PacketSource& Dispatcher::source(uint32_t worker) {
    return *queues_.at(worker);
}

uint64_t Dispatcher::dropped() const {
    uint64_t n = 0;
    for (const auto& q : queues_) {
        n += q->dropped.get();
    }
    return n;
}

uint64_t Dispatcher::dispatched(uint32_t worker) const {
    return queues_.at(worker)->dispatched.get();
}

}  // namespace picket::sensor::capture
