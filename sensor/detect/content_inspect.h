// Content inspection: evaluates the payload options of one buffer (content and its
// modifiers, pcre, byte_test, byte_jump, byte_extract, byte_math, isdataat, bsize) in rule
// order with Suricata's relative-matching semantics, including backtracking: when a later
// relative option fails after the first occurrence of an earlier content, the next
// occurrence is tried. Internal to sensor/detect; called by DetectWorker on a worker thread.
#pragma once

#include <cstdint>
#include <memory>

#include "sensor/detect/rule.h"

namespace picket::sensor::detect {

// Per-worker scratch: PCRE2 match data and JIT stack, byte_extract variables, recursion
// bookkeeping. Created once per worker and engine generation; reused for every packet.
struct PayloadScratch;
struct PayloadScratchDeleter {
    void operator()(PayloadScratch* s) const;
};
using PayloadScratchPtr = std::unique_ptr<PayloadScratch, PayloadScratchDeleter>;
PayloadScratchPtr make_payload_scratch();

// True when every option of m matches data[0, len). No allocation.
bool inspect_buffer(const BufferMatch& m, const uint8_t* data, uint32_t len,
                    const PacketContext& pc, PayloadScratch& scratch);

}  // namespace picket::sensor::detect
