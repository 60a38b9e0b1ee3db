// The stream tests' rig: real Ethernet/IPv4 or IPv6/TCP frames with correct checksums,
// decoded by decode::decode_packet and looked up in a real flow::FlowTable whose on_free
// releases the stream state, as the worker does; what each direction delivers is collected
// per flow. Shared by stream_test.cc and oneside_test.cc.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sensor/stream/stream.h"
#include "tests/support/frames.h"

namespace picket::sensor::stream::testrig {

using decode::Packet;
using flow::Direction;

inline constexpr uint8_t kFin = 0x01;
inline constexpr uint8_t kSyn = 0x02;
inline constexpr uint8_t kRst = 0x04;
inline constexpr uint8_t kPsh = 0x08;
inline constexpr uint8_t kAck = 0x10;

// One TCP segment as the test describes it.
struct Seg {
    bool from_client = true;
    uint32_t seq = 0;
    uint32_t ack = 0;
    uint8_t flags = kAck;
    std::string data{};
    uint16_t window = 65535;
    uint8_t wscale = 0xff;  // option on SYN / SYN-ACK when != 0xff
    bool bad_checksum = false;
};

struct Hosts {
    bool v6 = false;
    uint8_t client[16] = {10, 0, 0, 1};
    uint8_t server[16] = {10, 0, 0, 2};
    uint16_t cport = 40000;
    uint16_t sport = 80;
};

inline Hosts v6_hosts() {
    Hosts h;
    h.v6 = true;
    const uint8_t c[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const uint8_t s[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    std::memcpy(h.client, c, 16);
    std::memcpy(h.server, s, 16);
    return h;
}

// Ethernet 02:..:01/02:..:02, IPv4 (TOS 0, id 0) or IPv6 (traffic class 0), TTL / hop limit 64.
inline std::vector<uint8_t> build_frame(const Hosts& hs, const Seg& s) {
    namespace frames = picket::testing::frames;
    frames::Bytes opts;
    if (s.wscale != 0xff) {
        opts = {1, 3, 3, s.wscale};  // NOP, window scale
    }
    frames::Bytes t =
        frames::tcp(s.from_client ? hs.cport : hs.sport, s.from_client ? hs.sport : hs.cport,
                    s.flags, opts, frames::Bytes(s.data.begin(), s.data.end()));
    frames::set_tcp_numbers(t, s.seq, s.ack, s.window);
    const uint8_t* src = s.from_client ? hs.client : hs.server;
    const uint8_t* dst = s.from_client ? hs.server : hs.client;
    std::vector<uint8_t> f;
    if (hs.v6) {
        frames::V6 h;
        std::copy(src, src + 16, h.src);
        std::copy(dst, dst + 16, h.dst);
        h.with_tclass(0).with_hlim(64);
        f = frames::eth(frames::kClientMac, frames::kServerMac, 0x86dd, frames::ipv6(h, t));
    } else {
        frames::V4 h;
        std::copy(src, src + 4, h.src);
        std::copy(dst, dst + 4, h.dst);
        h.with_tos(0).with_id(0);
        f = frames::eth(frames::kClientMac, frames::kServerMac, 0x0800, frames::ipv4(h, t));
    }
    if (s.bad_checksum) {
        const size_t at = 14 + (hs.v6 ? 40 : 20) + 16;
        frames::put16(f, at, static_cast<uint16_t>(frames::get16(f, at) ^ 0x5a5a));
    }
    return f;
}

// A worker in miniature: decoder, flow table, tracker. It keeps every frame alive (the
// tracker may hand out views into a packet) and collects what each direction delivers.
class Rig {
public:
    explicit Rig(StreamConfig cfg = {}, Hosts hosts = {})
        : hosts_(hosts),
          dctx_(decode::DecodeOptions{decode::ChecksumMode::kYes}),
          table_(flow_config()),
          st_(cfg) {
        table_.set_on_free([this](flow::Flow& f) { st_.release_flow(f); });
    }
    ~Rig() { table_.clear(); }

    static flow::FlowConfig flow_config() {
        flow::FlowConfig fc;
        fc.memcap = 4096 * sizeof(flow::Flow);
        fc.hash_size = 1024;
        fc.hash_seed = 7;
        return fc;
    }

    // Sends one segment; returns the first update (later ones from next() are collected too).
    StreamUpdate send(const Seg& s) {
        frames_.push_back(std::make_unique<std::vector<uint8_t>>(build_frame(hosts_, s)));
        const std::vector<uint8_t>& fr = *frames_.back();
        Packet p;
        ts_ += 1000000;
        EXPECT_EQ(decode::decode_packet(dctx_, decode::kDltEn10mb, fr.data(),
                                        static_cast<uint32_t>(fr.size()),
                                        static_cast<uint32_t>(fr.size()), ts_, p),
                  decode::DecodeResult::kOk);
        Direction dir;
        flow::Flow* f = table_.lookup(p, &dir);
        EXPECT_NE(f, nullptr);
        flow_ = f;
        StreamUpdate u = st_.process(p, *f, dir, ts_);
        const StreamUpdate first = u;
        for (;;) {
            collect(u);
            if (!u.more) {
                break;
            }
            u = st_.next(*f);
        }
        return first;
    }

    // Client SYN (isn), server SYN/ACK (isn_s), client ACK.
    void handshake(uint32_t isn_c, uint32_t isn_s, uint8_t wscale = 0xff) {
        send({true, isn_c, 0, kSyn, "", 65535, wscale});
        send({false, isn_s, isn_c + 1, kSyn | kAck, "", 65535, wscale});
        send({true, isn_c + 1, isn_s + 1, kAck});
    }

    // Output per flow (flow_id), so traffic of several flows never mixes.
    struct Outputs {
        std::string out[2];
        int gaps[2] = {0, 0};
        int eofs[2] = {0, 0};
        std::vector<uint64_t> pdus[2];
        // What StreamUpdate::app handed over (the app layer's view), same conventions.
        std::string app[2];
        int app_gaps[2] = {0, 0};
        int app_eofs[2] = {0, 0};
    };

    void collect(const StreamUpdate& u) {
        Outputs& o = outputs_[flow_->flow_id];
        for (int d = 0; d < 2; ++d) {
            const StreamChunk& c = u.chunk[d];
            std::string& out = o.out[d];
            if (c.gap != 0) {
                out.append(c.gap, '\0');  // as Suricata's tests show holes
                ++o.gaps[d];
            }
            if (c.new_len() == 0) {
                continue;
            }
            // Offsets are monotonic and contiguous with what was delivered before.
            EXPECT_EQ(c.stream_offset, out.size());
            EXPECT_LE(c.new_offset, c.window_len);
            out.append(reinterpret_cast<const char*>(c.new_data()), c.new_len());
            for (uint32_t i = 0; i < c.pdu_count; ++i) {
                o.pdus[d].push_back(c.pdu_ends[i]);
            }
        }
        for (int d = 0; d < 2; ++d) {
            if (u.chunk[d].eof) {
                ++o.eofs[d];
            }
            const StreamChunk& a = u.app[d];
            if (a.gap != 0) {
                o.app[d].append(a.gap, '\0');
                ++o.app_gaps[d];
            }
            if (a.new_len() != 0) {
                EXPECT_EQ(a.stream_offset, o.app[d].size());
                o.app[d].append(reinterpret_cast<const char*>(a.new_data()), a.new_len());
            }
            if (a.eof) {
                ++o.app_eofs[d];
            }
        }
    }

    // Ends the current flow without FIN/RST (timeout, shutdown), collecting what comes.
    void flush() {
        StreamUpdate u = st_.flush(*flow_);
        for (;;) {
            collect(u);
            if (!u.more) {
                break;
            }
            u = st_.next(*flow_);
        }
    }

    // What the current flow (the last packet's) delivered.
    const Outputs& cur() { return outputs_[flow_->flow_id]; }
    const std::string& out(Direction d) { return cur().out[static_cast<int>(d)]; }
    int gaps(Direction d) { return cur().gaps[static_cast<int>(d)]; }
    int eofs(Direction d) { return cur().eofs[static_cast<int>(d)]; }
    const std::vector<uint64_t>& pdus(Direction d) { return cur().pdus[static_cast<int>(d)]; }
    const std::string& app(Direction d) { return cur().app[static_cast<int>(d)]; }
    int app_gaps(Direction d) { return cur().app_gaps[static_cast<int>(d)]; }
    int app_eofs(Direction d) { return cur().app_eofs[static_cast<int>(d)]; }
    StreamTracker& st() { return st_; }
    flow::FlowTable& table() { return table_; }
    flow::Flow& flow() { return *flow_; }
    StatsSnapshot stats() const {
        StatsSnapshot s;
        st_.export_stats(s);
        return s;
    }
    Hosts& hosts() { return hosts_; }

private:
    Hosts hosts_;
    decode::DecodeContext dctx_;
    flow::FlowTable table_;
    StreamTracker st_;
    std::vector<std::unique_ptr<std::vector<uint8_t>>> frames_;
    flow::Flow* flow_ = nullptr;
    int64_t ts_ = 1000000000;
    std::map<uint64_t, Outputs> outputs_;
};

inline constexpr uint32_t kIsnC = 1000;
inline constexpr uint32_t kIsnS = 50000;

}  // namespace picket::sensor::stream::testrig
