// The reader thread of the Dispatcher modes (offline files, libpcap live): reads, paces a
// replay, and hands each packet to its worker's queue.
#include <chrono>
#include <thread>

#include "common/time_util.h"
#include "sensor/engine/engine_internal.h"

namespace picket::sensor::engine {

// Waits until monotonic time `due_ns` or a stop request, in short sleeps so that SIGINT ends a
// slowly paced replay at once. False when stopping.
bool Engine::wait_until(int64_t due_ns) const {
    for (;;) {
        if (stop_.load(std::memory_order_relaxed)) {
            return false;
        }
        const int64_t left = due_ns - monotonic_ns();
        if (left <= 0) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 10000000)));
    }
}

void Engine::reader_main() {
    capture::RawPacket p;
    capture::PcapFileReader* const file_reader = sources_->file_reader();
    capture::PcapLiveReader* const live_reader = sources_->live_reader();
    capture::Dispatcher& dispatcher = *sources_->dispatcher();
    if (file_reader != nullptr) {
        const uint64_t loops = config_.pcap_replay ? config_.pcap_loops : 1;
        capture::PcapReplay replay(*file_reader, loops);
        // Pacing: packet n is due at start + n / rate, so an oversleep is caught up by a short
        // burst and the mean rate stays exact.
        const double ns_per_packet = config_.pcap_rate_pps > 0 ? 1e9 / config_.pcap_rate_pps : 0;
        const int64_t start = monotonic_ns();
        uint64_t sent = 0;
        while (!stop_.load(std::memory_order_relaxed)) {
            capture::ReadResult r = replay.next(p);
            if (r == capture::ReadResult::kOk) {
                if (ns_per_packet > 0 &&
                    !wait_until(start +
                                static_cast<int64_t>(static_cast<double>(sent) * ns_per_packet))) {
                    break;
                }
                ++sent;
                dispatcher.push(p);  // false: dropped and counted (replay only)
                reader_.packets.store(file_reader->packets_read(), std::memory_order_relaxed);
                reader_.filtered.store(file_reader->packets_filtered(), std::memory_order_relaxed);
                continue;
            }
            if (r == capture::ReadResult::kError) {
                std::string damage;
                if (!config_.pcap_strict && file_reader->skip_damaged(&damage)) {
                    // As Suricata: a read error ends that file, the run goes on.
                    reader_warnings_.push_back(std::move(damage));
                    continue;
                }
                reader_error_ = file_reader->error();
            }
            break;
        }
        reader_.packets.store(file_reader->packets_read(), std::memory_order_relaxed);
        reader_.filtered.store(file_reader->packets_filtered(), std::memory_order_relaxed);
    } else if (live_reader != nullptr) {
        auto read_kernel_stats = [this, live_reader] {
            const capture::CaptureStats cs = live_reader->stats();
            reader_.kernel_packets.store(cs.packets, std::memory_order_relaxed);
            reader_.kernel_drops.store(cs.drops, std::memory_order_relaxed);
        };
        int64_t next_stats = monotonic_ns();
        while (!stop_.load(std::memory_order_relaxed)) {
            capture::ReadResult r = live_reader->next(p, kPollTimeoutMs);
            if (r == capture::ReadResult::kOk) {
                dispatcher.push(p);
            } else if (r == capture::ReadResult::kError) {
                reader_error_ = live_reader->error();
                break;
            }
            // pcap_stats is a syscall: once per timer interval, not per packet.
            if (monotonic_ns() >= next_stats) {
                read_kernel_stats();
                next_stats = monotonic_ns() + kTimerIntervalNs;
            }
        }
        read_kernel_stats();
    }
    dispatcher.finish();
    reader_cpu_ns_.store(thread_cpu_ns(), std::memory_order_relaxed);
}

}  // namespace picket::sensor::engine
