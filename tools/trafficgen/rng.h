// Internal to tools/trafficgen: the generator's only source of randomness. xoshiro256** seeded
// through splitmix64, fully specified, so the output does not depend on the standard library's
// distributions (which differ between implementations). Not thread-safe; each user owns one.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace picket::tools::trafficgen {

class Rng {
public:
    explicit Rng(uint64_t seed) {
        for (auto& s : s_) {
            seed += 0x9e3779b97f4a7c15ULL;
            uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            s = z ^ (z >> 31);
        }
    }
    uint64_t next() {
        const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = std::rotl(s_[3], 45);
        return result;
    }
    // Uniform in [0, n).
    uint64_t below(uint64_t n) {
        return static_cast<uint64_t>((static_cast<__uint128_t>(next()) * n) >> 64);
    }
    // Uniform in [lo, hi].
    int64_t range(int64_t lo, int64_t hi) {
        return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
    }
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    bool chance(double p) { return unit() < p; }
    template <typename T, size_t N>
    const T& pick(const T (&arr)[N]) {
        return arr[below(N)];
    }

private:
    uint64_t s_[4];
};

}  // namespace picket::tools::trafficgen
