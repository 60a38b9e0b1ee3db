#include "sensor/output/output.h"

#include <new>
#include <stdexcept>
#include <type_traits>

namespace picket::sensor::output {

static_assert(std::is_trivially_copyable_v<AlertEvent>, "AlertQueue copies events by memcpy");

namespace {

constexpr size_t kCacheLine = 64;

size_t checked_ring_size(size_t ring_bytes, uint32_t bytes_max) {
    const size_t size = ring_bytes & ~(kCacheLine - 1);
    const size_t min = 2 * AlertQueue::record_bytes(bytes_max, bytes_max);
    if (size < min) {
        throw std::invalid_argument("alert queue: " + std::to_string(ring_bytes) +
                                    " bytes is below the minimum " + std::to_string(min) +
                                    " (two alerts of the largest packet and payload, " +
                                    std::to_string(bytes_max) + " bytes each)");
    }
    return size;
}

}  // namespace

size_t AlertQueue::record_bytes(uint32_t packet_len, uint32_t payload_len, uint32_t app_json_len) {
    const size_t raw = sizeof(RecordHeader) + sizeof(AlertEvent) + static_cast<size_t>(packet_len) +
                       static_cast<size_t>(payload_len) + static_cast<size_t>(app_json_len);
    return (raw + kAlign - 1) & ~(kAlign - 1);
}

AlertQueue::AlertQueue(size_t ring_bytes, uint32_t bytes_max)
    : size_(checked_ring_size(ring_bytes, bytes_max)),
      bytes_max_(bytes_max),
      buf_(static_cast<uint8_t*>(::operator new(size_, std::align_val_t(kCacheLine)))) {}

AlertQueue::~AlertQueue() {
    ::operator delete(buf_, std::align_val_t(kCacheLine));
}

bool AlertQueue::push(const AlertEvent& ev, const uint8_t* packet, uint32_t packet_len,
                      const uint8_t* payload, uint32_t payload_len, const uint8_t* app_json,
                      uint32_t app_json_len) {
    if (packet == nullptr) {
        packet_len = 0;
    }
    if (payload == nullptr) {
        payload_len = 0;
    }
    packet_len = packet_len < bytes_max_ ? packet_len : bytes_max_;
    payload_len = payload_len < bytes_max_ ? payload_len : bytes_max_;
    if (app_json == nullptr || app_json_len > bytes_max_) {
        app_json_len = 0;  // metadata is all or nothing: a cut JSON fragment is no JSON
    }
    const size_t need = record_bytes(packet_len, payload_len, app_json_len);
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const size_t offset = head % size_;
    const size_t to_end = size_ - offset;
    // A record never wraps: when it does not fit before the end of the buffer, a padding
    // record fills the rest and the event starts at offset 0.
    const size_t pad = to_end < need ? to_end : 0;
    const size_t total = pad + need;
    if (head + total - cached_tail_ > size_) {
        cached_tail_ = tail_.load(std::memory_order_acquire);
        if (head + total - cached_tail_ > size_) {
            ++overflows_;
            return false;
        }
    }

    uint8_t* at = buf_ + offset;
    if (pad != 0) {
        const RecordHeader filler{static_cast<uint32_t>(pad), kPad, 0};
        std::memcpy(at, &filler, sizeof(filler));  // to_end >= 16: sizes are multiples of 16
        at = buf_;
    }
    const RecordHeader h{static_cast<uint32_t>(need), kEvent, 0};
    std::memcpy(at, &h, sizeof(h));
    AlertEvent copy = ev;
    copy.packet = nullptr;
    copy.payload = nullptr;
    copy.packet_len = packet_len;
    copy.payload_len = payload_len;
    copy.app_json = nullptr;
    copy.app_json_len = app_json_len;
    std::memcpy(at + sizeof(RecordHeader), &copy, sizeof(AlertEvent));
    uint8_t* data = at + sizeof(RecordHeader) + sizeof(AlertEvent);
    if (packet_len != 0) {
        std::memcpy(data, packet, packet_len);
    }
    if (payload_len != 0) {
        std::memcpy(data + packet_len, payload, payload_len);
    }
    if (app_json_len != 0) {
        std::memcpy(data + packet_len + payload_len, app_json, app_json_len);
    }
    head_.store(head + total, std::memory_order_release);
    ++pushed_;
    return true;
}

}  // namespace picket::sensor::output
