#include "sensor/output/output.h"

#include <new>
#include <stdexcept>
#include <type_traits>

namespace picket::sensor::output {

static_assert(std::is_trivially_copyable_v<AlertEvent>, "AlertQueue copies events by memcpy");

ByteRing::ByteRing(size_t size)
    : size_(size),
      buf_(static_cast<uint8_t*>(::operator new(size_, std::align_val_t(kCacheLine)))) {}

ByteRing::~ByteRing() {
    ::operator delete(buf_, std::align_val_t(kCacheLine));
}

uint8_t* ByteRing::reserve(size_t payload, uint32_t kind) {
    const size_t need = record_bytes(payload);
    const uint64_t head = head_.load(std::memory_order_relaxed);
    const size_t offset = head % size_;
    const size_t to_end = size_ - offset;
    // A record never wraps: when it does not fit before the end of the buffer, a padding
    // record fills the rest and the record starts at offset 0.
    const size_t pad = to_end < need ? to_end : 0;
    const size_t total = pad + need;
    if (need > size_ || head + total - cached_tail_ > size_) {
        cached_tail_ = tail_.load(std::memory_order_acquire);
        if (need > size_ || head + total - cached_tail_ > size_) {
            return nullptr;
        }
    }
    uint8_t* at = buf_ + offset;
    if (pad != 0) {
        // to_end >= 16: sizes are multiples of 16.
        const uint32_t filler[2] = {static_cast<uint32_t>(pad), kPad};
        std::memcpy(at, filler, sizeof(filler));
        at = buf_;
    }
    const uint32_t h[2] = {static_cast<uint32_t>(need), kind};
    std::memcpy(at, h, sizeof(h));
    pending_head_ = head + total;
    return at + kHeader;
}

void ByteRing::commit() {
    head_.store(pending_head_, std::memory_order_release);
}

namespace {

size_t checked_ring_size(size_t ring_bytes, uint32_t bytes_max) {
    const size_t size = ring_bytes & ~(ByteRing::kCacheLine - 1);
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
    return ByteRing::record_bytes(sizeof(AlertEvent) + static_cast<size_t>(packet_len) +
                                  static_cast<size_t>(payload_len) +
                                  static_cast<size_t>(app_json_len));
}

AlertQueue::AlertQueue(size_t ring_bytes, uint32_t bytes_max)
    : ring_(checked_ring_size(ring_bytes, bytes_max)), bytes_max_(bytes_max) {}

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
    uint8_t* at =
        ring_.reserve(sizeof(AlertEvent) + packet_len + payload_len + app_json_len, kEvent);
    if (at == nullptr) {
        ++overflows_;
        return false;
    }
    AlertEvent copy = ev;
    copy.packet = nullptr;
    copy.payload = nullptr;
    copy.packet_len = packet_len;
    copy.payload_len = payload_len;
    copy.app_json = nullptr;
    copy.app_json_len = app_json_len;
    std::memcpy(at, &copy, sizeof(AlertEvent));
    uint8_t* data = at + sizeof(AlertEvent);
    if (packet_len != 0) {
        std::memcpy(data, packet, packet_len);
    }
    if (payload_len != 0) {
        std::memcpy(data + packet_len, payload, payload_len);
    }
    if (app_json_len != 0) {
        std::memcpy(data + packet_len + payload_len, app_json, app_json_len);
    }
    ring_.commit();
    ++pushed_;
    return true;
}

}  // namespace picket::sensor::output
