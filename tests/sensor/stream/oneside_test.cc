// One-sided captures and midstream pickups (issue #22), as Suricata 7's TCP state machine
// (stream-tcp.c) treats them: stream.async-oneside on/off x stream.midstream on/off, for a
// capture of only the client's side (with and without its SYN) and of only the server's side
// (from its SYN/ACK). Each case checks the exact state and events of every packet, and the
// bytes the raw stream and the app layer get, with the engine's IDS settings (app_on_ack and
// raw_on_ack unless async-oneside), then at the flow's end (flush).
#include <gtest/gtest.h>

#include <string>

#include "sensor/stream/stream.h"
#include "tests/sensor/stream/stream_rig.h"

namespace picket::sensor::stream {
namespace {

using namespace testrig;  // NOLINT(build/namespaces): the shared rig

// As the engine builds it for an IDS (sensor/engine/worker_context.h).
StreamConfig ids_config(bool async_oneside, bool midstream) {
    StreamConfig c;
    c.async_oneside = async_oneside;
    c.midstream = midstream;
    c.app_on_ack = !async_oneside;
    c.raw_on_ack = c.app_on_ack;
    return c;
}

const std::string kReq1 = "GET /one HTTP/1.1\r\n\r\n";  // 21 bytes
const std::string kReq2 = "GET /two HTTP/1.1\r\n\r\n";
const std::string kResp = "HTTP/1.1 200 OK\r\n\r\n";  // 19 bytes
constexpr Direction kTs = Direction::kToServer;
constexpr Direction kTc = Direction::kToClient;

// The client's side only: its SYN, its ACK of a SYN/ACK the tap never saw, two requests.
struct ClientSide {
    StreamUpdate syn, ack, req1, req2;
};
ClientSide client_side(Rig& rig) {
    ClientSide o;
    o.syn = rig.send({true, kIsnC, 0, kSyn});
    o.ack = rig.send({true, kIsnC + 1, kIsnS + 1, kAck});
    o.req1 = rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, kReq1});
    o.req2 = rig.send({true, kIsnC + 22, kIsnS + 1, kAck | kPsh, kReq2});
    return o;
}

// The server's side only: its SYN/ACK and a response to a request the tap never saw.
struct ServerSide {
    StreamUpdate synack, resp;
};
ServerSide server_side(Rig& rig, uint32_t isn_c, uint32_t isn_s) {
    ServerSide o;
    o.synack = rig.send({false, isn_s, isn_c + 1, kSyn | kAck});
    o.resp = rig.send({false, isn_s + 1, isn_c + 1 + 21, kAck | kPsh, kResp});
    return o;
}

// ---- client side only, from its SYN ----

// Suricata's SYN_SENT without async-oneside: an ACK from the SYN's sender is ignored
// ("return 0", no event), so the session never leaves syn_sent and nothing is reassembled,
// with or without midstream (the session exists). Rules still see each packet's payload.
TEST(OneSide, ClientSideWithoutAsyncIsNeverEstablished) {
    for (bool midstream : {false, true}) {
        Rig rig(ids_config(false, midstream));
        ClientSide o = client_side(rig);
        EXPECT_EQ(o.syn.state, SessionState::kSynSent) << midstream;
        for (const StreamUpdate* u : {&o.ack, &o.req1, &o.req2}) {
            EXPECT_EQ(u->state, SessionState::kSynSent) << midstream;
            EXPECT_EQ(u->events, 0u) << midstream;  // not even kEventStreamAdd
        }
        rig.flush();
        EXPECT_EQ(rig.out(kTs), "") << midstream;
        EXPECT_EQ(rig.app(kTs), "") << midstream;
        EXPECT_EQ(rig.st().state(rig.flow()), SessionState::kSynSent) << midstream;
        EXPECT_EQ(rig.stats().get("tcp.sessions"), 1u) << midstream;
        EXPECT_EQ(rig.stats().get("tcp.midstream_pickups"), 0u) << midstream;
    }
}

// With async-oneside the ACK at ISN + 1 establishes (STREAMTCP_FLAG_ASYNC): every request
// goes to the raw stream and the app layer at its own packet.
TEST(OneSide, ClientSideWithAsyncIsEstablishedAtTheAck) {
    for (bool midstream : {false, true}) {
        Rig rig(ids_config(true, midstream));
        ClientSide o = client_side(rig);
        EXPECT_EQ(o.syn.state, SessionState::kSynSent);
        EXPECT_EQ(o.ack.state, SessionState::kEstablished);
        EXPECT_EQ(o.ack.events, 0u);
        EXPECT_EQ(o.req1.state, SessionState::kEstablished);
        EXPECT_EQ(o.req1.events, 0u);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(o.req1.app_data(kTs).new_data()),
                              o.req1.app_data(kTs).new_len()),
                  kReq1);
        EXPECT_EQ(rig.out(kTs), kReq1 + kReq2) << midstream;
        EXPECT_EQ(rig.app(kTs), kReq1 + kReq2) << midstream;
        rig.flush();
        EXPECT_EQ(rig.out(kTs), kReq1 + kReq2) << midstream;
        EXPECT_EQ(rig.stats().get("tcp.midstream_pickups"), 0u);
    }
}

// async-oneside checks the one thing it can: the ACK follows the SYN exactly
// (stream.3whs_async_wrong_seq otherwise; the packet is ignored, the session waits).
TEST(OneSide, AsyncAckMustFollowTheSyn) {
    Rig rig(ids_config(true, false));
    rig.send({true, kIsnC, 0, kSyn});
    StreamUpdate u = rig.send({true, kIsnC + 5, kIsnS + 1, kAck | kPsh, "early"});
    EXPECT_EQ(u.state, SessionState::kSynSent);
    EXPECT_EQ(u.events, static_cast<uint32_t>(kEventAsyncWrongSeq));
    // The server's own packets are not the client's ACK either (its SYN/ACK was missed).
    u = rig.send({false, kIsnS + 1, kIsnC + 1, kAck | kPsh, "resp"});
    EXPECT_EQ(u.state, SessionState::kSynSent);
    EXPECT_EQ(u.events, static_cast<uint32_t>(kEventAsyncWrongSeq));
    u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, "GET"});
    EXPECT_EQ(u.state, SessionState::kEstablished);
    EXPECT_EQ(u.events, 0u);
    EXPECT_EQ(rig.out(kTs), "GET");
    EXPECT_EQ(rig.out(kTc), "");
}

// Without async-oneside a SYN/ACK that was missed is never made up for: the server's data
// (which acknowledges the SYN) is ignored as the client's ACK is (Suricata's SYN_SENT).
TEST(OneSide, MissedSynAckWithoutAsyncStaysSynSent) {
    Rig rig(ids_config(false, true));
    rig.send({true, kIsnC, 0, kSyn});
    StreamUpdate u = rig.send({false, kIsnS + 1, kIsnC + 1, kAck | kPsh, "resp"});
    EXPECT_EQ(u.state, SessionState::kSynSent);
    EXPECT_EQ(u.events, 0u);
    u = rig.send({true, kIsnC + 1, kIsnS + 5, kAck | kPsh, "GET"});
    EXPECT_EQ(u.state, SessionState::kSynSent);
    // A FIN in syn_sent is ignored too; only the SYN/ACK (retransmitted) moves the session.
    u = rig.send({true, kIsnC + 4, kIsnS + 5, kAck | kFin});
    EXPECT_EQ(u.state, SessionState::kSynSent);
    EXPECT_EQ(rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck}).state, SessionState::kSynRecv);
    rig.flush();
    EXPECT_EQ(rig.out(kTs), "");
    EXPECT_EQ(rig.out(kTc), "");
}

// ---- client data only, no handshake ----

TEST(OneSide, ClientDataWithoutSynNeedsMidstream) {
    for (bool async : {false, true}) {
        Rig rig(ids_config(async, false));
        StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, kReq1});
        EXPECT_EQ(u.state, SessionState::kNone);
        EXPECT_EQ(u.events, static_cast<uint32_t>(kEventNotTracked));
        u = rig.send({true, kIsnC + 22, kIsnS + 1, kAck | kPsh, kReq2});
        EXPECT_EQ(u.events, static_cast<uint32_t>(kEventNotTracked));
        rig.flush();
        EXPECT_EQ(rig.out(kTs), "");
        EXPECT_EQ(rig.stats().get("tcp.sessions"), 0u);
    }
}

// Midstream picks the session up at the first ACK (established, both sides assumed to scale
// by 14). Without async-oneside nothing acknowledges the data (Suricata's IDS timing: no
// STREAMTCP_FLAG_ASYNC), so it reaches the raw stream and the app layer at the flow's end;
// with it, at each packet.
TEST(OneSide, ClientDataWithMidstream) {
    for (bool async : {false, true}) {
        Rig rig(ids_config(async, true));
        StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kAck | kPsh, kReq1});
        EXPECT_EQ(u.state, SessionState::kEstablished);
        EXPECT_EQ(u.events, kEventMidstream | (async ? 0u : kEventStreamAdd)) << async;
        u = rig.send({true, kIsnC + 22, kIsnS + 1, kAck | kPsh, kReq2});
        EXPECT_EQ(u.events, async ? 0u : static_cast<uint32_t>(kEventStreamAdd)) << async;
        EXPECT_EQ(rig.out(kTs), async ? kReq1 + kReq2 : "") << async;
        EXPECT_EQ(rig.app(kTs), async ? kReq1 + kReq2 : "") << async;
        rig.flush();
        EXPECT_EQ(rig.out(kTs), kReq1 + kReq2) << async;
        EXPECT_EQ(rig.app(kTs), kReq1 + kReq2) << async;
        EXPECT_EQ(rig.stats().get("tcp.midstream_pickups"), 1u);
    }
}

// ---- server side only, from its SYN/ACK ----

// Neither option: a SYN/ACK starts nothing (no event), nor does anything after it.
TEST(OneSide, ServerSideNeedsMidstreamOrAsync) {
    Rig rig(ids_config(false, false));
    ServerSide o = server_side(rig, kIsnC, kIsnS);
    EXPECT_EQ(o.synack.state, SessionState::kNone);
    EXPECT_EQ(o.synack.events, static_cast<uint32_t>(kEventNotTracked));
    EXPECT_EQ(o.resp.state, SessionState::kNone);
    EXPECT_EQ(o.resp.events, static_cast<uint32_t>(kEventNotTracked));
    rig.flush();
    EXPECT_EQ(rig.out(kTc), "");
    EXPECT_EQ(rig.stats().get("tcp.sessions"), 0u);
}

// async-oneside alone picks a session up from a SYN/ACK (Suricata: "midstream || async"),
// and the server's next segment at its ISN + 1 establishes it: the response goes out at once.
TEST(OneSide, ServerSideWithAsync) {
    for (bool midstream : {false, true}) {
        Rig rig(ids_config(true, midstream));
        ServerSide o = server_side(rig, kIsnC, kIsnS);
        EXPECT_EQ(o.synack.state, SessionState::kSynRecv);
        EXPECT_EQ(o.synack.events, static_cast<uint32_t>(kEventMidstream));
        EXPECT_EQ(o.resp.state, SessionState::kEstablished);
        EXPECT_EQ(o.resp.events, 0u);
        EXPECT_EQ(rig.out(kTc), kResp) << midstream;
        EXPECT_EQ(rig.app(kTc), kResp) << midstream;
        EXPECT_EQ(rig.stats().get("tcp.midstream_pickups"), 1u);
    }
}

// Midstream without async-oneside: Suricata's SYN_RECV takes the server's data as "more to
// the client after packet loss" only when its sequence number is after the client's next one
// (it compares numbers of two different sequence spaces) and it acknowledges more than the
// SYN/ACK did. Then the data waits for an acknowledgement (flow end); otherwise the packet is
// refused (stream.3whs_wrong_seq_wrong_ack) and the session stays in syn_recv.
TEST(OneSide, ServerSideWithMidstreamOnlyDependsOnTheIsns) {
    {
        Rig rig(ids_config(false, true));
        ServerSide o = server_side(rig, kIsnC, kIsnS);  // server ISN 50000 "after" 1001
        EXPECT_EQ(o.synack.state, SessionState::kSynRecv);
        EXPECT_EQ(o.resp.state, SessionState::kEstablished);
        EXPECT_EQ(o.resp.events, static_cast<uint32_t>(kEventStreamAdd));
        EXPECT_EQ(rig.out(kTc), "");
        rig.flush();
        EXPECT_EQ(rig.out(kTc), kResp);
        EXPECT_EQ(rig.app(kTc), kResp);
    }
    {
        Rig rig(ids_config(false, true));
        ServerSide o = server_side(rig, 1000000u, kIsnS);  // 50001 is "before" 1000001
        EXPECT_EQ(o.synack.state, SessionState::kSynRecv);
        EXPECT_EQ(o.resp.state, SessionState::kSynRecv);
        EXPECT_EQ(o.resp.events, static_cast<uint32_t>(kEventWrongSeqWrongAck));
        rig.flush();
        EXPECT_EQ(rig.out(kTc), "");
        EXPECT_EQ(rig.app(kTc), "");
    }
}

// ---- the other checks of SYN_RECV, and packets with no session ----

TEST(OneSide, SynRecvChecksTheHandshakeAck) {
    StreamConfig cfg = ids_config(false, false);
    {
        Rig rig(cfg);
        rig.send({true, kIsnC, 0, kSyn});
        rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck});
        // The right sequence number with a wrong ACK: refused (Linux and Solaris would not
        // reset, so this can evade).
        StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 99, kAck, "x"});
        EXPECT_EQ(u.state, SessionState::kSynRecv);
        EXPECT_EQ(u.events, static_cast<uint32_t>(kEventRightSeqWrongAck));
        // Neither fits.
        u = rig.send({true, kIsnC + 900000, kIsnS + 99, kAck, "y"});
        EXPECT_EQ(u.events, static_cast<uint32_t>(kEventWrongSeqWrongAck));
        // The client's data after a missed segment, in the window the SYN/ACK gave.
        u = rig.send({true, kIsnC + 11, kIsnS + 1, kAck, "z"});
        EXPECT_EQ(u.state, SessionState::kEstablished);
        rig.flush();
        EXPECT_EQ(rig.out(kTs), std::string(10, '\0') + "z");
    }
    {
        // The server's data after a handshake ACK we missed.
        Rig rig(cfg);
        rig.send({true, kIsnC, 0, kSyn});
        rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck});
        StreamUpdate u = rig.send({false, kIsnS + 1, kIsnC + 1, kAck, "hi"});
        EXPECT_EQ(u.state, SessionState::kEstablished);
        EXPECT_EQ(u.events, static_cast<uint32_t>(kEventStreamAdd));
    }
    {
        // Inline, the same packet is refused: an IPS sees every packet.
        cfg.inline_mode = true;
        cfg.app_on_ack = cfg.raw_on_ack = false;
        Rig rig(cfg);
        rig.send({true, kIsnC, 0, kSyn});
        rig.send({false, kIsnS, kIsnC + 1, kSyn | kAck});
        StreamUpdate u = rig.send({false, kIsnS + 1, kIsnC + 1, kAck, "hi"});
        EXPECT_EQ(u.state, SessionState::kSynRecv);
        EXPECT_EQ(u.events, static_cast<uint32_t>(kEventAckInWrongDir));
        EXPECT_EQ(rig.out(kTc), "");
    }
}

TEST(OneSide, PacketsWithoutASession) {
    for (bool midstream : {false, true}) {
        Rig rig(ids_config(false, midstream));
        StreamUpdate u = rig.send({true, kIsnC + 1, kIsnS + 1, kRst | kAck});
        EXPECT_EQ(u.state, SessionState::kNone);
        EXPECT_EQ(u.events, kEventNotTracked | kEventRstNoSession) << midstream;
        // A FIN without data is no pickup even with midstream.
        u = rig.send({true, kIsnC + 1, kIsnS + 1, kFin | kAck});
        EXPECT_EQ(u.state, SessionState::kNone);
        EXPECT_EQ(u.events, kEventNotTracked | kEventFinNoSession) << midstream;
        // Neither ACK nor SYN nor FIN: nothing, no event.
        u = rig.send({true, kIsnC + 1, 0, kPsh, "data"});
        EXPECT_EQ(u.state, SessionState::kNone);
        EXPECT_EQ(u.events, static_cast<uint32_t>(kEventNotTracked)) << midstream;
        // A FIN with data: picked up with midstream (Suricata's FIN_WAIT1: closing).
        u = rig.send({true, kIsnC + 1, kIsnS + 1, kFin | kAck, "bye"});
        EXPECT_EQ(u.state, midstream ? SessionState::kClosing : SessionState::kNone);
        EXPECT_EQ(u.events, midstream ? kEventMidstream | kEventStreamAdd
                                      : kEventNotTracked | kEventFinNoSession);
        EXPECT_EQ(rig.stats().get("tcp.sessions"), midstream ? 1u : 0u);
    }
}

}  // namespace
}  // namespace picket::sensor::stream
