// Internal to tools/trafficgen: writes a classic pcap (Ethernet, microsecond timestamps) through
// large buffers. The generating thread fills one buffer while a writer thread it owns hands the
// previous ones to write(2), so generation overlaps disk I/O. All public methods are called
// from the generating thread; the writer thread only runs write_loop().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace picket::tools::trafficgen {

class PcapWriter {
public:
    // Opens (truncates) path, starts the writer thread and queues the file header. Throws
    // std::runtime_error when the file cannot be opened.
    explicit PcapWriter(const std::string& path);
    ~PcapWriter();
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    void packet(int64_t ts_us, const uint8_t* frame, uint32_t len);
    // Flushes, joins the writer thread and closes the file; throws std::runtime_error with the
    // first write error, if any.
    void close();
    uint64_t written() const { return total_; }

private:
    static constexpr int kBuffers = 4;
    static constexpr size_t kBufferSize = 8u << 20;
    struct Buffer {
        std::vector<uint8_t> data;
        size_t used = 0;
    };

    void append(const uint8_t* p, size_t n);
    void hand_off();
    void write_loop();
    std::string write_all(const Buffer& b);
    void stop_thread();

    std::string path_;
    int fd_ = -1;
    std::unique_ptr<Buffer> cur_;
    uint64_t total_ = 0;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Buffer>> full_;
    std::vector<std::unique_ptr<Buffer>> free_;
    std::string error_;  // first write error, reported by the generating thread
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace picket::tools::trafficgen
