// TCP session tracking and stream reassembly, per worker. A StreamTracker follows each TCP
// flow's handshake, sequence numbers, windows, FIN/RST, and rebuilds each direction's byte
// stream: out-of-order segments are held until the hole fills, overlaps are resolved by the
// receiving host's target policy (Suricata's os-policy), acknowledged holes become reported
// gaps. Each call returns the bytes that became contiguous, as a view that also carries the
// last bytes already delivered, so a pattern straddling segments matches without rescanning.
// Only the owning worker calls it; no locks, nothing thrown, memory bounded by two memcaps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/decode/decode.h"
#include "sensor/flow/flow.h"

namespace picket::sensor::stream {

// Overlap policies, named as Suricata's stream.reassembly / host-os-policy.
enum class Policy : uint8_t {
    kFirst,
    kLast,
    kBsd,
    kLinux,
    kOldLinux,
    kWindows,
    kVista,
    kSolaris,
    kHpux10,
    kHpux11,
    kIrix,
    kMacos,
};

// "first", "last", "bsd", "linux", "old-linux", "windows", "vista", "solaris", "hpux10",
// "hpux11", "irix", "macos"; also Suricata's "windows2k3" (-> windows). Case-sensitive.
bool parse_policy(std::string_view name, Policy* out);
const char* policy_name(Policy p);

// A destination network with its own policy (Suricata's host-os-policy). IPv4 networks are
// stored v4-mapped (prefix_len 96 + n), like decode::Address, so "0.0.0.0/0" matches every
// IPv4 host and "::/0" every host.
struct PolicyNet {
    decode::Address net;
    uint8_t prefix_len = 0;  // 0..128, in the 128-bit (v4-mapped) space
    Policy policy = Policy::kBsd;
};
// Parses "10.0.0.0/8", "192.0.2.1" (a /32), "2001:db8::/32", "::1". False on bad text.
bool parse_cidr(std::string_view text, PolicyNet* out);

struct StreamConfig {
    bool midstream = false;                   // pick up sessions whose SYN was not seen
    bool inline_mode = false;                 // IPS: data already accepted wins every overlap
    uint64_t reassembly_depth = 1024 * 1024;  // bytes per direction; 0 = unlimited
    uint64_t memcap = 64ULL * 1024 * 1024;    // session state (tcp.memuse)
    uint64_t reassembly_memcap = 256ULL * 1024 * 1024;  // stream buffers (tcp.reassembly_memuse)
    bool checksum_validation = true;                    // drop segments with a wrong TCP checksum
    Policy policy = Policy::kBsd;     // for destinations no entry of `policies` matches
    std::vector<PolicyNet> policies;  // longest prefix wins
    // Upper bound of the inspection window's tail (bytes of already-delivered data kept in
    // front of the new bytes), Suricata's reassembly toserver/toclient-chunk-size.
    uint32_t chunk_size = 2560;
    // Tail actually kept (e.g. longest content pattern - 1); clamped to chunk_size. 0 lets
    // in-order data be handed over without a copy.
    uint32_t keep_tail = 0;
    // Suricata's IDS-mode timing for the app layer (StreamUpdate::app): a direction's data
    // goes to the app layer on the other side's packets, up to what that side acknowledged,
    // and all of it at the close or flush(). Off: the app layer gets what the raw chunk gets.
    bool app_on_ack = false;
    // Suricata's IDS-mode timing for raw stream inspection (StreamUpdate::chunk): a
    // direction's data is handed out on that direction's own packets, up to what the other
    // side acknowledged, once chunk_size such bytes wait, the app layer ended a message there
    // (trigger_raw()), the depth was reached, the session closed, or at flush(). Off: chunk
    // is the data as soon as it is contiguous.
    bool raw_on_ack = false;
    // Suricata's stream.async-oneside: only one side of a session may be seen. A client ACK
    // after its SYN (the SYN/ACK not seen) establishes the session, a SYN/ACK starts one even
    // without midstream, and a SYN/ACK pickup establishes on the server's next segment. Off
    // (Suricata's default), a session whose SYN/ACK was not seen is never established: its
    // packets are not reassembled (see README "One-sided captures").
    bool async_oneside = false;
};

// Suricata's TCP states, folded: kClosing covers FIN_WAIT1/2, CLOSE_WAIT, CLOSING and
// LAST_ACK (at least one FIN seen, not both acknowledged); kClosed is TIME_WAIT/CLOSED (both
// FINs acknowledged) or an accepted RST.
enum class SessionState : uint8_t {
    kNone,  // not tracked: not TCP, not seen from its SYN (midstream off), or memcap
    kSynSent,
    kSynRecv,
    kEstablished,
    kClosing,
    kClosed,
};
const char* state_name(SessionState s);

// What the application-layer parser tells the tracker about the bytes it was shown.
enum class SplitStatus : uint8_t {
    kFlush,     // a message (PDU) ends `flush_at` bytes into the data shown
    kNeedMore,  // no message end in these bytes; keep state and show me the next bytes
    kAbort,     // not my protocol / unrecoverable: stop calling me for this direction
};
struct SplitResult {
    SplitStatus status = SplitStatus::kNeedMore;
    uint32_t flush_at = 0;  // kFlush: 1..len
};

// Snort 3 style stream splitter: finds message boundaries in the reassembled stream so the
// stream code needs no protocol knowledge. scan() sees each delivered byte exactly once, in
// order; after kFlush it is called again with the bytes after the flush point. The splitter
// keeps its own partial-message state between calls. Owned by the caller (the app layer),
// which keeps it alive while it is set on a session.
class Splitter {
public:
    virtual ~Splitter();
    virtual SplitResult scan(flow::Direction dir, const uint8_t* data, size_t len) = 0;
    // Bytes were skipped (a reassembly gap) before the next scan() in this direction:
    // resynchronise or abort there.
    virtual void gap(flow::Direction dir) { (void)dir; }
};

// Why a packet's data was not (fully) reassembled, and other per-packet facts; bit flags.
enum UpdateEvent : uint32_t {
    kEventNotTracked = 1u << 0,       // no session: see SessionState::kNone
    kEventMidstream = 1u << 1,        // this packet picked the session up midstream
    kEventBadChecksum = 1u << 2,      // TCP checksum wrong: packet ignored
    kEventOutOfWindow = 1u << 3,      // segment beyond the receiver's window: ignored
    kEventRetransmission = 1u << 4,   // every data byte was already delivered
    kEventOverlap = 1u << 5,          // data overlapped data already held or delivered
    kEventOverlapDiffData = 1u << 6,  // ... and the overlapping bytes differ
    kEventSegmentMemcap = 1u << 7,    // segment dropped: reassembly memcap
    kEventDepthReached = 1u << 8,     // data past reassembly_depth was cut
    kEventRstInvalid = 1u << 9,       // RST with an unacceptable sequence number: ignored
    kEventSessionMemcap = 1u << 10,   // no session could be created: memcap
    kEventStreamAdd = 1u << 11,       // raw_on_ack: the packet's data is part of the stream
                                      // and waits for raw inspection (Suricata's
                                      // PKT_STREAM_ADD): kept, delivered or a retransmission
    // Suricata's stream events for packets its TCP state machine refuses (named after them);
    // the packet is not reassembled.
    kEventRstNoSession = 1u << 12,      // stream.rst_but_no_session: RST, no session
    kEventFinNoSession = 1u << 13,      // stream.fin_but_no_session: FIN, no session picked up
    kEventAsyncWrongSeq = 1u << 14,     // stream.3whs_async_wrong_seq: async-oneside, the
                                        // ACK after the SYN is not at ISN + 1
    kEventWrongSeqWrongAck = 1u << 15,  // stream.3whs_wrong_seq_wrong_ack: in syn_recv
    kEventRightSeqWrongAck = 1u << 16,  // stream.3whs_right_seq_wrong_ack_evasion: syn_recv
    kEventAckInWrongDir = 1u << 17,     // stream.3whs_ack_in_wrong_dir: inline, syn_recv
};

// Bytes delivered for one direction. window[0, window_len) is one contiguous piece of the
// stream: up to keep_tail bytes delivered earlier (never across a gap), then the new bytes
// at window + new_offset. Valid until the next call to the tracker for this flow.
struct StreamChunk {
    const uint8_t* window = nullptr;
    uint32_t window_len = 0;
    uint32_t new_offset = 0;
    uint64_t stream_offset = 0;  // stream offset of the first new byte (0 = byte after SYN)
    uint64_t gap = 0;            // bytes skipped right before the new bytes (0 = no gap)
    bool eof = false;            // this direction's stream ended (FIN reached, or closed)
    bool depth_reached = false;  // nothing more will be delivered: reassembly_depth
    bool splitter_aborted = false;
    bool pdus_truncated = false;  // more PDU ends than kMaxPdusPerChunk: the rest not listed
    // Stream offsets (exclusive) where PDUs found by the session's splitter end, ascending,
    // all within the new bytes.
    const uint64_t* pdu_ends = nullptr;
    uint32_t pdu_count = 0;

    const uint8_t* new_data() const { return window + new_offset; }
    uint32_t new_len() const { return window_len - new_offset; }
};

inline constexpr uint32_t kMaxPdusPerChunk = 1024;

struct StreamUpdate {
    SessionState state = SessionState::kNone;
    uint32_t events = 0;  // UpdateEvent bits
    // Raw data by direction (flow::Direction): what became contiguous, unless
    // StreamConfig::raw_on_ack, then what is due for raw inspection now (see there).
    StreamChunk chunk[2];
    // What the app layer gets, by direction: the same as chunk[] unless
    // StreamConfig::app_on_ack, then a run of bytes the receiver acknowledged (new_offset 0,
    // no tail, no PDU ends), with its own gap and eof.
    StreamChunk app[2];
    // More data is ready (a second hole was skipped, or a closing flush): call next().
    bool more = false;

    const StreamChunk& data(flow::Direction d) const { return chunk[static_cast<int>(d)]; }
    const StreamChunk& app_data(flow::Direction d) const { return app[static_cast<int>(d)]; }
    bool has(uint32_t e) const { return (events & e) != 0; }
};

struct StreamCounters {
    Counter sessions, ssn_memcap_drop, ssn_memcap_reclaimed, segment_memcap_drop, reassembly_gap,
        overlap, overlap_diff_data, midstream_pickups, invalid_checksum, retransmissions,
        out_of_window, reassembly_depth_reached, rst_invalid;
    Counter memcap_no_tail;     // in-order segments handed over without a tail at the memcap
    Counter memuse;             // gauge: bytes of session state
    Counter reassembly_memuse;  // gauge: bytes of stream buffers, bitmaps, segment lists
};

class StreamTracker {
public:
    explicit StreamTracker(const StreamConfig& config);
    ~StreamTracker();
    StreamTracker(const StreamTracker&) = delete;
    StreamTracker& operator=(const StreamTracker&) = delete;

    // One TCP packet after the flow lookup (dir from FlowTable::lookup). Non-TCP packets
    // return an empty update. Typical use:
    //   StreamUpdate u = st.process(p, *f, dir, p.ts_ns);
    //   for (;;) { consume(u); if (!u.more) break; u = st.next(*f); }
    StreamUpdate process(const decode::Packet& p, flow::Flow& f, flow::Direction dir,
                         int64_t now_ns);
    // Continues a delivery that process() or flush() left with `more`.
    StreamUpdate next(flow::Flow& f);
    // End of the flow without a FIN/RST (timeout, shutdown): delivers everything held,
    // skipping holes (reported as gaps). Loop on `more` as for process().
    StreamUpdate flush(flow::Flow& f);
    // Frees the flow's session and gives its memory back; call from FlowTable's on_free.
    void release_flow(flow::Flow& f);

    // raw_on_ack: the app layer ended a message of direction dir (an HTTP request or
    // response, a TLS application record): its raw data is handed out on the next packet of
    // dir without waiting for chunk_size bytes (Suricata's TRIGGER_RAW).
    void trigger_raw(flow::Flow& f, flow::Direction dir);
    // raw_on_ack, for a session whose protocol no parser here knows (so no message ends will
    // trigger raw inspection as Suricata's parsers do): what the raw cursor holds goes out on
    // each direction's next packet, then chunks are the data as soon as it is contiguous.
    void raw_per_packet(flow::Flow& f);
    // Whether raw data of dir still follows raw_on_ack's timing (kEventStreamAdd then says the
    // packet's data waits for it).
    bool raw_on_ack(const flow::Flow& f, flow::Direction dir) const;
    // Message boundaries for this session (nullptr: none). Not owned. Needs a session.
    bool set_splitter(flow::Flow& f, Splitter* s);
    // Tail kept in front of new bytes, for sessions from now on and existing ones as data
    // arrives; clamped to chunk_size. For a new ruleset whose longest pattern changed.
    void set_keep_tail(uint32_t bytes);
    uint32_t keep_tail() const;

    SessionState state(const flow::Flow& f) const;
    // Policy used for data sent to `dst` (longest matching prefix, else config.policy).
    Policy policy_for(const decode::Address& dst) const;

    // Bytes one session costs against `memcap` (tcp.memuse = sessions * this).
    static size_t session_bytes();

    const StreamCounters& counters() const { return counters_; }
    // "tcp.sessions", "tcp.ssn_memcap_drop", "tcp.ssn_memcap_reclaimed" (half-open sessions
    // freed for a new one at the memcap), "tcp.reassembly_memcap_no_tail" (in-order segments
    // delivered from the packet without a tail at the reassembly memcap),
    // "tcp.segment_memcap_drop", "tcp.reassembly_gap",
    // "tcp.overlap", "tcp.overlap_diff_data", "tcp.midstream_pickups", "tcp.invalid_checksum",
    // "tcp.retransmissions", "tcp.out_of_window", "tcp.reassembly_depth_reached",
    // "tcp.rst_invalid", "tcp.memuse", "tcp.reassembly_memuse". Added to out.
    void export_stats(StatsSnapshot& out) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
    StreamCounters counters_;
};

}  // namespace picket::sensor::stream
