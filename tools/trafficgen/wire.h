// Internal to tools/trafficgen: big-endian field access, the RFC 1071 Internet checksum and the
// FNV-1a hash that derives MACs and keys flow tables. Header-only: every frame goes through
// these, on the generating thread.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace picket::tools::trafficgen {

// The checksum code sums native 64-bit words and relies on RFC 1071's byte-order
// independence to store the result without swapping; that shortcut is little-endian only.
static_assert(std::endian::native == std::endian::little, "trafficgen assumes little-endian");

constexpr uint8_t kProtoIcmp = 1, kProtoTcp = 6, kProtoUdp = 17, kProtoIcmpv6 = 58;

inline void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}
inline uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t get32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
           static_cast<uint32_t>(p[2]) << 8 | p[3];
}

// Big-endian appends for payloads built as strings (DNS messages, TLS records).
inline void append16(std::string& s, uint16_t v) {
    s += static_cast<char>(v >> 8);
    s += static_cast<char>(v & 0xff);
}
inline void append32(std::string& s, uint32_t v) {
    append16(s, static_cast<uint16_t>(v >> 16));
    append16(s, static_cast<uint16_t>(v));
}

// Adds the whole Words at p to the one's-complement sum, advancing p and n past them.
template <typename Word>
inline uint64_t csum_words(uint64_t acc, const uint8_t*& p, size_t& n) {
    while (n >= sizeof(Word)) {
        Word w;
        std::memcpy(&w, p, sizeof(Word));
        acc += w;
        acc += (acc < w);
        p += sizeof(Word);
        n -= sizeof(Word);
    }
    return acc;
}

// One's-complement sum in the little-endian domain (see the static_assert above): 8-byte
// words, then the 4-, 2- and 1-byte tail.
inline uint64_t csum_add(uint64_t acc, const uint8_t* p, size_t n) {
    acc = csum_words<uint64_t>(acc, p, n);
    acc = csum_words<uint32_t>(acc, p, n);
    acc = csum_words<uint16_t>(acc, p, n);
    return csum_words<uint8_t>(acc, p, n);
}
inline uint16_t csum_fold(uint64_t acc) {
    acc = (acc & 0xffffffffULL) + (acc >> 32);
    acc = (acc & 0xffffffffULL) + (acc >> 32);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(~acc);
}
// Stores the folded checksum so that the two bytes read big-endian are the RFC 1071 value.
inline void store_csum(uint8_t* field, uint16_t folded) {
    std::memcpy(field, &folded, 2);
}

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL;

// FNV-1a over n bytes, continuing from h.
inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = kFnvBasis) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
        h = (h ^ p[i]) * 0x100000001b3ULL;
    }
    return h;
}

// Hash for plain key structs compared with memcmp (zero-initialised, so padding is zero).
template <typename Key>
struct BytesHash {
    size_t operator()(const Key& k) const { return fnv1a(&k, sizeof(k)); }
};

}  // namespace picket::tools::trafficgen
