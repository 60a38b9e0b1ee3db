#include "tools/trafficgen/pcap_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace picket::tools::trafficgen {

PcapWriter::PcapWriter(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    }
    for (int i = 0; i < kBuffers; ++i) {
        free_.push_back(std::make_unique<Buffer>());
        free_.back()->data.resize(kBufferSize);
    }
    cur_ = std::move(free_.back());
    free_.pop_back();
    thread_ = std::thread([this] { write_loop(); });
    uint8_t hdr[24];
    const uint32_t magic = 0xa1b2c3d4;  // microsecond timestamps, written in host order
    const uint16_t major = 2, minor = 4;
    const uint32_t zero = 0, snaplen = 262144, linktype = 1;  // LINKTYPE_ETHERNET
    std::memcpy(hdr, &magic, 4);
    std::memcpy(hdr + 4, &major, 2);
    std::memcpy(hdr + 6, &minor, 2);
    std::memcpy(hdr + 8, &zero, 4);
    std::memcpy(hdr + 12, &zero, 4);
    std::memcpy(hdr + 16, &snaplen, 4);
    std::memcpy(hdr + 20, &linktype, 4);
    append(hdr, sizeof(hdr));
}

PcapWriter::~PcapWriter() {
    stop_thread();
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void PcapWriter::packet(int64_t ts_us, const uint8_t* frame, uint32_t len) {
    uint32_t rh[4] = {static_cast<uint32_t>(ts_us / 1000000),
                      static_cast<uint32_t>(ts_us % 1000000), len, len};
    append(reinterpret_cast<const uint8_t*>(rh), sizeof(rh));
    append(frame, len);
}

void PcapWriter::close() {
    hand_off();
    stop_thread();
    if (!error_.empty()) {
        throw std::runtime_error(error_);
    }
    if (::close(fd_) != 0) {
        fd_ = -1;
        throw std::runtime_error("cannot close " + path_ + ": " + std::strerror(errno));
    }
    fd_ = -1;
}

void PcapWriter::append(const uint8_t* p, size_t n) {
    if (cur_->used + n > cur_->data.size()) {
        hand_off();
    }
    std::memcpy(cur_->data.data() + cur_->used, p, n);
    cur_->used += n;
    total_ += n;
}

void PcapWriter::hand_off() {
    std::unique_lock<std::mutex> lock(mu_);
    full_.push_back(std::move(cur_));
    cv_.notify_all();
    cv_.wait(lock, [this] { return !free_.empty(); });
    if (!error_.empty()) {
        throw std::runtime_error(error_);
    }
    cur_ = std::move(free_.back());
    free_.pop_back();
    cur_->used = 0;
}

void PcapWriter::write_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_.wait(lock, [this] { return stop_ || !full_.empty(); });
        if (full_.empty()) {
            return;
        }
        std::unique_ptr<Buffer> b = std::move(full_.front());
        full_.pop_front();
        lock.unlock();
        std::string err = write_all(*b);
        lock.lock();
        if (!err.empty() && error_.empty()) {
            error_ = err;
        }
        free_.push_back(std::move(b));
        cv_.notify_all();
    }
}

std::string PcapWriter::write_all(const Buffer& b) {
    size_t done = 0;
    while (done < b.used) {
        ssize_t w = ::write(fd_, b.data.data() + done, b.used - done);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return "cannot write " + path_ + ": " + std::strerror(errno);
        }
        done += static_cast<size_t>(w);
    }
    return {};
}

void PcapWriter::stop_thread() {
    if (!thread_.joinable()) {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

}  // namespace picket::tools::trafficgen
