// libFuzzer target for sensor/stream: the input drives a sequence of synthetic TCP segments
// (flags, sequence and acknowledgement numbers, window, payload, direction, one of four
// flows) through decode -> flow table -> one StreamTracker with small memcaps, a short depth
// and a line splitter, so held segments, overlaps under every policy, gaps, memcap drops,
// FIN/RST and flow recycling are all reached. Checks after every packet: memory within both
// memcaps; per flow and direction, delivered offsets contiguous and monotonic (gaps
// included), views readable, PDU ends inside the new bytes and ascending. At the end every
// byte of memory must have been given back.
// Input: [config: 4 bytes] then records of [8-byte header][payload]; see parse below.
// Seed corpus: tests/fuzz/corpus/stream.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/flow/flow.h"
#include "sensor/stream/stream.h"
#include "tests/support/frames.h"

namespace {

using namespace picket::sensor;

constexpr uint32_t kIsn[2] = {0xfffff000u, 0x7ffffff0u};  // client wraps early

// Ethernet (zero MACs) + IPv4 10.0.0.1 <-> 10.0.0.2 (TOS 0, id 0) + TCP (with a window-scale
// option on SYNs), checksums right unless `bad`.
std::vector<uint8_t> frame(bool from_client, uint16_t cport, uint32_t seq, uint32_t ack,
                           uint8_t flags, uint16_t window, uint8_t wscale, bool bad,
                           const uint8_t* data, size_t len) {
    namespace frames = picket::testing::frames;
    frames::Bytes opts;
    if ((flags & 0x02) != 0) {
        opts = {1, 3, 3, wscale};  // NOP, window scale
    }
    frames::Bytes t = frames::tcp(from_client ? cport : 80, from_client ? 80 : cport, flags, opts,
                                  frames::Bytes(data, data + len));
    frames::set_tcp_numbers(t, seq, ack, window);
    frames::V4 h;
    h.with_tos(0).with_id(0);
    if (!from_client) {
        std::swap(h.src, h.dst);
    }
    std::vector<uint8_t> f = frames::eth(frames::Mac{}, frames::Mac{}, 0x0800, frames::ipv4(h, t));
    if (bad) {
        f[14 + 20 + 16] ^= 1;
        f[14 + 20 + 17] ^= 1;
    }
    return f;
}

class LineSplitter : public stream::Splitter {
public:
    stream::SplitResult scan(flow::Direction, const uint8_t* data, size_t len) override {
        const void* nl = std::memchr(data, '\n', len);
        if (nl == nullptr) {
            return {stream::SplitStatus::kNeedMore, 0};
        }
        return {stream::SplitStatus::kFlush,
                static_cast<uint32_t>(static_cast<const uint8_t*>(nl) - data + 1)};
    }
};

volatile uint64_t g_sink;

struct Expect {
    uint64_t next[2] = {0, 0};
    uint64_t app_next[2] = {0, 0};  // StreamUpdate::app
};

void check(const stream::StreamUpdate& u, Expect& e, bool raw_on_ack, uint64_t* sink) {
    for (int d = 0; d < 2; ++d) {
        const stream::StreamChunk& c = u.chunk[d];
        if (c.gap == 0 && c.new_len() == 0) {
            if (c.window_len != 0 || c.pdu_count != 0) {
                std::abort();
            }
            continue;
        }
        if (c.new_offset > c.window_len || c.stream_offset != e.next[d] + c.gap) {
            std::abort();  // delivered offsets must be contiguous and monotonic
        }
        e.next[d] = c.stream_offset + c.new_len();
        for (uint32_t i = 0; i < c.window_len; ++i) {
            *sink += c.window[i];  // every byte of the view must be readable
        }
        uint64_t prev = c.stream_offset;
        for (uint32_t i = 0; i < c.pdu_count; ++i) {
            if (c.pdu_ends[i] <= prev || c.pdu_ends[i] > e.next[d]) {
                std::abort();
            }
            prev = c.pdu_ends[i];
        }
    }
    // The app layer's view: contiguous too, readable, and never ahead of the raw delivery
    // (unless raw_on_ack, where raw inspection comes later).
    for (int d = 0; d < 2; ++d) {
        const stream::StreamChunk& a = u.app[d];
        if (a.gap == 0 && a.new_len() == 0) {
            continue;
        }
        if (a.stream_offset != e.app_next[d] + a.gap) {
            std::abort();
        }
        e.app_next[d] = a.stream_offset + a.new_len();
        if (!raw_on_ack && e.app_next[d] > e.next[d]) {
            std::abort();
        }
        for (uint32_t i = a.new_offset; i < a.window_len; ++i) {
            *sink += a.window[i];
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 4) {
        return 0;
    }
    stream::StreamConfig cfg;
    cfg.midstream = (data[0] & 1) != 0;
    cfg.inline_mode = (data[0] & 2) != 0;
    cfg.checksum_validation = (data[0] & 4) == 0;
    cfg.reassembly_depth = (data[0] & 8) != 0 ? 0 : 4096;
    cfg.app_on_ack = (data[0] & 32) != 0;
    cfg.raw_on_ack = (data[0] & 64) != 0;
    const bool raw_calls = (data[0] & 128) != 0;  // trigger_raw() / raw_per_packet() too
    cfg.policy = static_cast<stream::Policy>(data[1] % 12);
    cfg.keep_tail = data[2] % 80;
    cfg.chunk_size = 64;
    cfg.memcap = (1 + data[3] % 4) * stream::StreamTracker::session_bytes();
    cfg.reassembly_memcap = 24 * 1024;
    if ((data[0] & 16) != 0) {
        stream::PolicyNet n;
        stream::parse_cidr("10.0.0.1/32", &n);
        n.policy = static_cast<stream::Policy>((data[1] >> 4) % 12);
        cfg.policies.push_back(n);
    }
    stream::StreamTracker st(cfg);
    decode::DecodeContext dctx{decode::DecodeOptions{decode::ChecksumMode::kYes}};
    flow::FlowConfig fc;
    fc.memcap = 3 * sizeof(flow::Flow);  // 4 ports over 3 flows: eviction releases sessions
    fc.hash_size = 16;
    fc.hash_seed = 1;
    flow::FlowTable table(fc);
    table.set_on_free([&st](flow::Flow& f) { st.release_flow(f); });
    LineSplitter splitter;
    std::map<uint64_t, Expect> expect;  // by flow_id
    uint64_t sink = 0;

    int64_t ts = 1000000000;
    size_t pos = 4;
    // Record: [flags][ctl][seq lo][seq hi][ack lo][ack hi][len][window hi] then len bytes.
    // ctl: bit0 from server, bit1 bad checksum, bits2-3 flow (client port), bit4 flush
    // after, bit5 set the splitter, bits6-7 window scale (0, 2, 7, 14).
    while (pos + 8 <= size) {
        const uint8_t* h = data + pos;
        pos += 8;
        const bool from_client = (h[1] & 1) == 0;
        const uint16_t cport = static_cast<uint16_t>(40000 + ((h[1] >> 2) & 3));
        const uint32_t rel_seq = static_cast<uint32_t>(h[2] | h[3] << 8);
        const uint32_t rel_ack = static_cast<uint32_t>(h[4] | h[5] << 8);
        const size_t len = std::min<size_t>(h[6], size - pos);
        const uint8_t wscales[4] = {0, 2, 7, 14};
        const int me = from_client ? 0 : 1;
        // Sequence numbers near each side's ISN so that segments meet; the SYN's own
        // number is ISN, data starts at ISN + 1.
        const uint32_t seq = kIsn[me] + rel_seq;
        const uint32_t ack = kIsn[1 - me] + rel_ack;
        const uint16_t window = static_cast<uint16_t>(h[7] << 8 | 0xff);
        const std::vector<uint8_t> fr = frame(from_client, cport, seq, ack, h[0], window,
                                              wscales[h[1] >> 6], (h[1] & 2) != 0, data + pos, len);
        pos += len;
        ts += 1000000;

        decode::Packet p;
        if (decode::decode_packet(
                dctx, decode::kDltEn10mb, fr.data(), static_cast<uint32_t>(fr.size()),
                static_cast<uint32_t>(fr.size()), ts, p) != decode::DecodeResult::kOk) {
            continue;
        }
        flow::Direction dir;
        flow::Flow* f = table.lookup(p, &dir);
        if (f == nullptr) {
            continue;
        }
        Expect& e = expect[f->flow_id];
        if ((h[1] & 32) != 0) {
            st.set_splitter(*f, &splitter);
        }
        stream::StreamUpdate u = st.process(p, *f, dir, ts);
        for (int guard = 0;; ++guard) {
            check(u, e, cfg.raw_on_ack, &sink);
            if (!u.more) {
                break;
            }
            if (guard > 100000) {
                std::abort();  // next() must make progress
            }
            u = st.next(*f);
        }
        if ((h[1] & 16) != 0) {
            u = st.flush(*f);
            for (;;) {
                check(u, e, cfg.raw_on_ack, &sink);
                if (!u.more) {
                    break;
                }
                u = st.next(*f);
            }
        }
        if (raw_calls && (h[7] & 1) != 0) {
            st.trigger_raw(*f, dir);
        }
        if (raw_calls && (h[7] & 2) != 0) {
            st.raw_per_packet(*f);
        }
        const stream::StreamCounters& c = st.counters();
        if (c.memuse.get() > cfg.memcap || c.reassembly_memuse.get() > cfg.reassembly_memcap) {
            std::abort();
        }
    }
    table.clear();
    if (st.counters().memuse.get() != 0 || st.counters().reassembly_memuse.get() != 0) {
        std::abort();  // every session and buffer given back
    }
    g_sink = sink;
    return 0;
}
