// libFuzzer target for sensor/decode. Input: byte 0 picks the link type (low 4 bits index
// kLinkTypes; bit 7 set = the frame was cut by a snap length, so wirelen > caplen), the rest
// is the captured frame. Runs decode_packet, dispatch_hash, and decode_reassembled on a copy
// of the decoded L3 datagram, and traps if a decoded view points outside its buffer.
// Seed corpus: tests/fuzz/corpus/decode (made by corpus/make_decode_corpus.py, which uses the
// same link-type table).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sensor/decode/decode.h"

namespace {

using namespace picket::sensor::decode;

constexpr int kLinkTypes[] = {kDltEn10mb,   kDltLinuxSll, kDltLinuxSll2, kDltRaw,  kDltRawOpenBsd,
                              kLinktypeRaw, kDltIpv4,     kDltIpv6,      kDltNull, kDltLoop};
constexpr size_t kNumLinkTypes = sizeof(kLinkTypes) / sizeof(kLinkTypes[0]);

void check_inside(const uint8_t* begin, size_t len, const uint8_t* p, size_t n) {
    if (p == nullptr) {
        return;
    }
    if (p < begin || p + n > begin + len) {
        __builtin_trap();
    }
}

void check_views(const Packet& p, const uint8_t* buf, size_t len) {
    check_inside(buf, len, p.l3, p.l3_len);
    check_inside(buf, len, p.l4, p.l4_len);
    check_inside(buf, len, p.payload, p.payload_len);
    check_inside(buf, len, p.frag_data, p.frag_data_len);
    if (p.l3 != nullptr && p.ip_hdr_len > p.l3_len) {
        __builtin_trap();
    }
}

DecodeContext& context() {
    // Validation on, so the checksum code runs on every input.
    static DecodeContext ctx{DecodeOptions{ChecksumMode::kYes}};
    return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > 70000) {
        return 0;
    }
    const int linktype = kLinkTypes[(data[0] & 0x0f) % kNumLinkTypes];
    const bool snapped = (data[0] & 0x80) != 0;
    // An exact-size copy: any read past the frame is a heap overflow ASan reports.
    const std::vector<uint8_t> frame(data + 1, data + size);
    const auto caplen = static_cast<uint32_t>(frame.size());
    const uint32_t wirelen = snapped ? caplen + 1500 : caplen;
    DecodeContext& ctx = context();

    Packet p;
    decode_packet(ctx, linktype, frame.data(), caplen, wirelen, 1, p);
    check_views(p, frame.data(), frame.size());
    (void)dispatch_hash(linktype, frame.data(), caplen);

    if (p.l3 != nullptr && p.l3_len > 0) {
        const std::vector<uint8_t> datagram(p.l3, p.l3 + p.l3_len);
        decode_reassembled(ctx, datagram.data(), static_cast<uint32_t>(datagram.size()), p);
        check_views(p, datagram.data(), datagram.size());
    }
    return 0;
}
