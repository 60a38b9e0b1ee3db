// Content inspection: evaluates the payload options of one buffer (content and its
// modifiers, pcre, byte_test, byte_jump, byte_extract, byte_math, isdataat, bsize) in rule
// order with Suricata's relative-matching semantics, including backtracking: when a later
// relative option fails after the first occurrence of an earlier content, the next
// occurrence is tried. Internal to sensor/detect; called by DetectWorker on a worker thread.
//
// Notes (payload keywords, see keywords/payload.h for the option classes):
// - inspect_buffer follows Suricata 7's DetectEngineContentInspection: options are evaluated
//   recursively from cursor 0; a content (or pcre) that matched but whose following options
//   failed is retried at its next occurrence (search restarts at match start + 1) only when a
//   following option bounds the window (within, or any relative pcre/byte_*/isdataat; for a
//   pcre also distance). Whether a later option depends on an earlier one is decided once
//   from the final option list (link_payload_options, at the end of parse_rule), so modifiers
//   that move a content to another buffer after the fact (http_uri) cannot leave stale flags.
// - Each evaluation is limited to PayloadScratch::recursion_limit steps (Suricata's
//   inspection_recursion_limit, 3000); hitting it fails the buffer and bumps
//   recursion_limit_hits.
// - byte_extract / byte_math values live in PayloadScratch::byte_values, indexed by the
//   position of the name in ParseState::byte_vars; they persist across inspect_buffer calls
//   of the same rule so a variable extracted in one buffer can be used by a later one.
// - Rule::contents is NOT filled by the keyword parsers (modifiers arrive later): the
//   compiler walks Rule::buffers and calls get_content_info().
// - dce options are rejected as unsupported; pcre flag O is accepted (defaults apply).
// - A pcre that captures into variables copies its groups into PayloadScratch::cap_* on each
//   successful exec; the engine stores them once the whole rule matched (store_captures).
#pragma once

#include <cstdint>
#include <memory>

#include "common/counter.h"
#include "sensor/detect/rule.h"

struct pcre2_real_match_data_8;
struct pcre2_real_match_context_8;
struct pcre2_real_jit_stack_8;

namespace picket::sensor::detect {

// Per-worker scratch: PCRE2 match data and JIT stack, byte_extract variables, recursion
// bookkeeping. Created once per worker and engine generation; reused for every packet.
struct PayloadScratch {
    static constexpr uint32_t kMaxByteVars = 32;  // byte_extract + byte_math names per rule
    uint64_t byte_values[kMaxByteVars] = {};
    pcre2_real_match_data_8* match_data = nullptr;
    pcre2_real_match_context_8* match_context = nullptr;
    pcre2_real_jit_stack_8* jit_stack = nullptr;
    uint32_t recursion_limit = 3000;    // Suricata's detect.inspection-recursion-limit
    uint32_t last_recursion_count = 0;  // steps used by the last inspect_buffer
    Counter recursion_limit_hits;       // evaluations stopped by the limit
    Counter pcre_errors;                // pcre2 match errors other than "no match"
    // pcre captures into variables (Rule::var_captures), by slot: the bytes (cut at
    // kMaxVarLen) of the last successful exec of the capturing pcre, cap_len -1 when its group
    // did not take part. Written only by pcres that capture.
    int32_t cap_len[kMaxRuleCaptures] = {};
    uint8_t cap_bytes[kMaxRuleCaptures][kMaxVarLen];
    // base64_decode's output (kBase64Max bytes, allocated once by make_payload_scratch).
    static constexpr uint32_t kBase64Max = 65536;
    std::unique_ptr<uint8_t[]> base64;
    ~PayloadScratch();
};
struct PayloadScratchDeleter {
    void operator()(PayloadScratch* s) const;
};
using PayloadScratchPtr = std::unique_ptr<PayloadScratch, PayloadScratchDeleter>;
PayloadScratchPtr make_payload_scratch();

// True for content options; fills *out (bytes, nocase, negation, fast_pattern, and the
// absolute offset/depth window when the content is not relative and uses no variable).
bool get_content_info(const PayloadOption& opt, ContentInfo* out);

// Decides each option's next relation from the final option list (parse time, after
// modifiers such as http_uri have moved contents between lists). inspect_buffer relies on it.
void link_payload_options(BufferMatch& m);

// True when every option of m matches data[0, len). No allocation.
bool inspect_buffer(const BufferMatch& m, const uint8_t* data, uint32_t len,
                    const PacketContext& pc, PayloadScratch& scratch);

}  // namespace picket::sensor::detect
