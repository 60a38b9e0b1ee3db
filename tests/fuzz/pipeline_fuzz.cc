// libFuzzer target for the worker's packet path: decode -> defrag -> decode_reassembled ->
// flow lookup, over a sequence of packets (so fragments meet their siblings and flows see
// both directions). Input: records of [link-type index: 1 byte][length: 2 bytes LE][frame].
// Limits are tiny so that memcap drops, tracker exhaustion and flow eviction are reached.
// Seed corpus: tests/fuzz/corpus/pipeline (corpus/make_pipeline_corpus.py).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/defrag/defrag.h"
#include "sensor/flow/flow.h"

namespace {

using namespace picket::sensor;

constexpr int kLinkTypes[] = {decode::kDltEn10mb, decode::kDltRaw, decode::kDltLinuxSll,
                              decode::kDltLinuxSll2, decode::kDltNull};
constexpr size_t kNumLinkTypes = sizeof(kLinkTypes) / sizeof(kLinkTypes[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    decode::DecodeContext ctx{decode::DecodeOptions{decode::ChecksumMode::kNo}};
    defrag::DefragConfig dc;
    dc.memcap = 64 * 1024;
    dc.max_trackers = 8;
    dc.max_frags_per_tracker = 16;
    dc.timeout_ns = 1000000000;
    defrag::Defragmenter defrag(dc);
    flow::FlowConfig fc;
    fc.memcap = 16 * sizeof(flow::Flow);
    fc.hash_size = 16;
    fc.hash_seed = 1;
    flow::FlowTable flows(fc);
    size_t frees = 0;
    flows.set_on_free([&frees](flow::Flow&) { ++frees; });

    int64_t ts = 1000000000;
    size_t pos = 0;
    while (pos + 3 <= size) {
        const int linktype = kLinkTypes[data[pos] % kNumLinkTypes];
        size_t len = static_cast<size_t>(data[pos + 1]) | (static_cast<size_t>(data[pos + 2]) << 8);
        pos += 3;
        len = len > size - pos ? size - pos : len;
        // An exact-size copy so ASan sees any read past the frame.
        const std::vector<uint8_t> frame(data + pos, data + pos + len);
        pos += len;
        ts += 300000000;  // 0.3 s per packet: timeouts fire within a few packets

        decode::Packet p;
        decode::DecodeResult r =
            decode::decode_packet(ctx, linktype, frame.data(), static_cast<uint32_t>(frame.size()),
                                  static_cast<uint32_t>(frame.size()), ts, p);
        if (r == decode::DecodeResult::kInvalid) {
            continue;
        }
        if (r == decode::DecodeResult::kFragment) {
            const uint8_t* dgram = nullptr;
            uint32_t dgram_len = 0;
            if (defrag.process(p, &dgram, &dgram_len) != defrag::DefragResult::kReassembled) {
                continue;
            }
            if (decode::decode_reassembled(ctx, dgram, dgram_len, p) ==
                decode::DecodeResult::kInvalid) {
                continue;
            }
        }
        if (p.ip_version != 0) {
            flow::Direction dir;
            flows.lookup(p, &dir);
        }
        flows.expire(ts, 4);
        defrag.expire(ts);
    }
    const size_t active = flows.active();
    const size_t before = frees;
    flows.clear();
    // Every flow still alive is freed exactly once by clear().
    if (frees - before != active || flows.active() != 0) {
        __builtin_trap();
    }
    return 0;
}
