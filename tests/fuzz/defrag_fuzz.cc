// libFuzzer target for sensor/defrag on its own: the input describes IPv4 and IPv6 fragments
// (offset, MF, length, which of four datagrams, which family) that the harness builds into
// well-formed raw IP packets, so every input reaches the reassembler instead of the decoder's
// sanity checks; overlaps, duplicates, holes, oversize datagrams, the memcap, the tracker and
// per-datagram limits and timeouts are all driven by the bytes. Checks after every fragment:
// memory within the memcap, a reassembled datagram starts with the right IP version, is at
// most 65535 + 40 bytes and decodes without reading outside it (ASan); at the end, expiring
// everything gives every byte back.
// Input: [config: 2 bytes] then records of [5-byte header][payload]; see below.
// Seed corpus: tests/fuzz/corpus/defrag (also made by tests/fuzz/make_corpus.sh).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/defrag/defrag.h"
#include "tests/support/frames.h"

namespace {

using namespace picket::sensor;

// Raw IPv4 or IPv6 fragment of datagram `key` with `len` payload bytes at byte offset `off`:
// 192.0.2.1 / 2001:db8::1 to .2+key / ::2+key, TTL 64, no checksums (decoded unchecked).
std::vector<uint8_t> fragment(bool v6, uint32_t key, uint8_t proto, uint32_t off, bool mf,
                              const uint8_t* data, size_t len) {
    namespace frames = picket::testing::frames;
    const frames::Bytes payload(data, data + len);
    if (!v6) {
        frames::V4 h;
        h.with_addrs({192, 0, 2, 1}, {192, 0, 2, static_cast<uint8_t>(2 + key)})
            .with_proto(proto)
            .with_tos(0)
            .with_id(static_cast<uint16_t>(0x1000 + key))
            .with_frag(static_cast<uint16_t>((mf ? 0x2000 : 0) | ((off / 8) & 0x1fff)))
            .with_l4_checksum(false)
            .with_ip_checksum(false);
        return frames::ipv4(h, payload);
    }
    frames::V6 h;
    std::array<uint8_t, 16> dst{0x20, 0x01, 0x0d, 0xb8};
    dst[15] = static_cast<uint8_t>(2 + key);
    h.with_addrs({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, dst)
        .with_tclass(0)
        .with_hlim(64)
        .with_nh(44)  // Fragment header
        .with_l4_checksum(false);
    return frames::ipv6(
        h, frames::cat({frames::frag6(proto, static_cast<uint16_t>(off & 0xfff8), mf, 0x1000 + key),
                        payload}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) {
        return 0;
    }
    // Config byte 0: bits 0-1 policy, bit 2 small memcap, bits 3-4 max fragments per datagram
    // (4, 16, 64, 256); byte 1: max trackers 1..8.
    defrag::DefragConfig dc;
    const defrag::OverlapPolicy policies[4] = {
        defrag::OverlapPolicy::kFirst, defrag::OverlapPolicy::kLast, defrag::OverlapPolicy::kBsd,
        defrag::OverlapPolicy::kLinux};
    dc.policy = policies[data[0] & 3];
    dc.memcap = (data[0] & 4) != 0 ? 4096 : 256 * 1024;
    const uint32_t max_frags[4] = {4, 16, 64, 256};
    dc.max_frags_per_tracker = max_frags[(data[0] >> 3) & 3];
    dc.max_trackers = 1 + data[1] % 8;
    dc.timeout_ns = 1000000000;
    defrag::Defragmenter defrag(dc);
    decode::DecodeContext ctx{decode::DecodeOptions{decode::ChecksumMode::kNo}};
    const uint8_t protos[4] = {17, 6, 1, 58};

    int64_t ts = 1000000000;
    size_t pos = 2;
    // Record: [ctl][off lo][off hi][len lo][len hi:2 bits | repeat:6 bits] then payload.
    // ctl: bit 0 IPv6, bits 1-2 datagram, bit 3 MF, bits 4-5 protocol, bit 6 advance time by
    // 0.6 s (half a timeout) and expire, bit 7 byte offset as given (else 8-aligned).
    // The payload is min(len, what is left) input bytes, then a pattern up to len (so long
    // fragments cost no input). Offset: 16 bits, in bytes.
    while (pos + 5 <= size) {
        const uint8_t* h = data + pos;
        pos += 5;
        const bool v6 = (h[0] & 1) != 0;
        const uint32_t key = (h[0] >> 1) & 3;
        const bool mf = (h[0] & 8) != 0;
        const uint8_t proto = protos[(h[0] >> 4) & 3];
        uint32_t off = static_cast<uint32_t>(h[1] | h[2] << 8);
        if ((h[0] & 0x80) == 0) {
            off &= ~7u;
        }
        const size_t len = static_cast<size_t>(h[3] | (h[4] & 3) << 8) * 4;
        const size_t take = std::min(len, size - pos);
        std::vector<uint8_t> payload(len, static_cast<uint8_t>(0xa0 + key));
        if (take != 0) {
            std::memcpy(payload.data(), data + pos, take);
        }
        pos += take;
        if ((h[0] & 0x40) != 0) {
            ts += 600000000;
            defrag.expire(ts);
        }
        ts += 1000;
        const std::vector<uint8_t> fr = fragment(v6, key, proto, off, mf, payload.data(), len);
        decode::Packet p;
        const auto caplen = static_cast<uint32_t>(fr.size());
        if (decode::decode_packet(ctx, decode::kDltRaw, fr.data(), caplen, caplen, ts, p) !=
                decode::DecodeResult::kFragment ||
            !p.has(decode::kFlagFragment)) {
            continue;
        }
        const uint8_t* dgram = nullptr;
        uint32_t dgram_len = 0;
        if (defrag.process(p, &dgram, &dgram_len) == defrag::DefragResult::kReassembled) {
            if (dgram == nullptr || dgram_len == 0 || dgram_len > 65535 + 40 ||
                (dgram[0] >> 4) != (v6 ? 6 : 4)) {
                std::abort();
            }
            // An exact-size copy: the decoder reading past the datagram is an ASan report.
            const std::vector<uint8_t> copy(dgram, dgram + dgram_len);
            decode::Packet q = p;
            (void)decode::decode_reassembled(ctx, copy.data(), dgram_len, q);
        }
        if (defrag.counters().memuse.get() > dc.memcap ||
            defrag.counters().trackers_active.get() > dc.max_trackers) {
            std::abort();
        }
    }
    defrag.expire(ts + 10 * dc.timeout_ns);
    if (defrag.counters().memuse.get() != 0 || defrag.counters().trackers_active.get() != 0) {
        std::abort();  // every tracker and chunk given back
    }
    return 0;
}
