// Rule profiling internals shared by the matcher (detect_engine.cc) and the report
// (rule_profile.cc): the per-rule counters a worker keeps and the clock it reads. Internal to
// sensor/detect; the public face is RuleProfile in detect.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "sensor/detect/rule.h"

namespace picket::sensor::detect {

// One rule's figures in one worker, indexed by Rule::index. 32 bytes: two rules per line.
struct RuleCounters {
    uint64_t checks = 0;
    uint64_t matches = 0;
    uint64_t ticks = 0;
    uint64_t worst_ticks = 0;
};

// The profiling clock. rdtsc costs ~20 cycles and needs no system call; the TSC of this
// platform is invariant (constant_tsc, nonstop_tsc), so ticks from different cores add up and
// one calibration against steady_clock at the end converts them. It is not serialising: a
// few cycles of a neighbouring rule may be counted, which an average over many checks absorbs.
inline uint64_t profile_ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
#endif
}

inline int64_t profile_steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// The rule's match keywords (header options, payload options, flowbits, threshold,
// detection_filter), sorted and unique.
std::vector<std::string> rule_keywords(const Rule& r);

// A fast pattern as a rule would write it: buffer, content with |hex| for bytes that are not
// printable (and for | " ; \), then " nocase". pkt_data:"GET |2f|x" nocase
std::string format_fast_pattern(BufferId buffer, const std::string& bytes, bool nocase);

}  // namespace picket::sensor::detect
