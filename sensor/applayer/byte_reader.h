// Big-endian reads for the app-layer parsers (dns, tls): the plain loads, and a bounds-checked
// cursor over a byte range. Header-only; the parsers include it, nothing else needs to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace picket::sensor::applayer {

inline uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t be24(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 16 | static_cast<uint32_t>(p[1]) << 8 | p[2];
}
inline uint32_t be32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | be24(p + 1);
}

// Bounds-checked big-endian reader; every read fails once the input is exhausted.
class ByteReader {
public:
    ByteReader() = default;
    ByteReader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
    bool u8(uint8_t* v) {
        if (n_ < 1) {
            return false;
        }
        *v = *p_;
        skip_unchecked(1);
        return true;
    }
    bool u16(uint16_t* v) {
        if (n_ < 2) {
            return false;
        }
        *v = be16(p_);
        skip_unchecked(2);
        return true;
    }
    bool u24(uint32_t* v) {
        if (n_ < 3) {
            return false;
        }
        *v = be24(p_);
        skip_unchecked(3);
        return true;
    }
    bool bytes(size_t k, const uint8_t** out) {
        if (n_ < k) {
            return false;
        }
        *out = p_;
        skip_unchecked(k);
        return true;
    }
    // A vector with a 1-, 2- or 3-byte length prefix, returned as a sub-reader.
    bool vec(int prefix, ByteReader* out) {
        uint32_t k = 0;
        if (prefix == 1) {
            uint8_t v;
            if (!u8(&v)) {
                return false;
            }
            k = v;
        } else if (prefix == 2) {
            uint16_t v;
            if (!u16(&v)) {
                return false;
            }
            k = v;
        } else if (!u24(&k)) {
            return false;
        }
        const uint8_t* p;
        if (!bytes(k, &p)) {
            return false;
        }
        *out = ByteReader(p, k);
        return true;
    }
    // A vector of 1- or 2-byte values (by T) behind a `prefix`-byte length, appended to *out;
    // a trailing odd byte is ignored, and nothing is read when the length does not fit.
    template <typename T>
    void list(int prefix, std::vector<T>* out) {
        ByteReader l;
        if (!vec(prefix, &l)) {
            return;
        }
        T v;
        while (l.read(&v)) {
            out->push_back(v);
        }
    }
    size_t left() const { return n_; }
    const uint8_t* data() const { return p_; }

private:
    bool read(uint8_t* v) { return u8(v); }
    bool read(uint16_t* v) { return u16(v); }
    void skip_unchecked(size_t k) {
        p_ += k;
        n_ -= k;
    }
    const uint8_t* p_ = nullptr;
    size_t n_ = 0;
};

}  // namespace picket::sensor::applayer
