// Snort 3 service PDUs: one direction of a TCP stream cut as Snort 3's stream splitter for the
// flow's service cuts it, so that Snort 3 rules see the buffers Snort 3's rules see (issue #20,
// docs/rules.md "Snort 3 PDUs"). Snort 3 runs its rules on each PDU its service inspector's
// splitter flushes (a rebuilt packet), not on the TCP segments of that direction.
//
// PduCutter is fed the bytes of one direction in stream order, in the pieces the receiver
// acknowledged (Snort 3's IDS mode scans and flushes on acknowledgement), and hands back each
// PDU as it completes:
// - kFtpLines (ftp_server, both directions): each piece fed is cut after its last line feed,
//   the PDU being the bytes held since the previous cut up to it (one line, or several when one
//   acknowledgement covers several); bytes after the last line feed wait for the next piece.
// - kTlsRecords (ssl): cut after the last complete TLS record in each piece; at the first
//   record of a type the splitter does not follow (a record type outside 20..23: heartbeat 24,
//   anything else) it gives up cutting (Snort 3 replaces an aborted splitter by an atom
//   splitter): from that record on, acknowledged bytes wait until kMaxPdu of them do, then
//   leave together as one PDU (so a PDU may hold two 16 KB heartbeat records' headers).
// Otherwise a PDU never exceeds kMaxPdu bytes (Snort 3's max_pdu, 16,384): a longer run with
// no cut point leaves in pieces of that size. A gap (bytes lost) or the end of the direction
// flushes what is held as one PDU.
//
// Allocation: the held bytes grow one buffer per direction, up to kMaxPdu; nothing per call
// once it has that size. A PDU that lies wholly in the piece fed is handed out in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sensor/flow/flow.h"

namespace picket::sensor::detect {

enum class PduKind : uint8_t { kNone, kFtpLines, kTlsRecords };

class PduCutter {
public:
    static constexpr uint32_t kMaxPdu = 16384;
    // After a give-up: the largest PDU (Snort 3's PDU buffer).
    static constexpr uint32_t kMaxFallbackPdu = 65535;

    explicit PduCutter(PduKind kind = PduKind::kNone) : kind_(kind) {}
    PduKind kind() const { return kind_; }
    // kTlsRecords: the splitter gave up (a record type it does not follow).
    bool gave_up() const { return gave_up_; }
    // Bytes held for the next PDU.
    size_t held() const { return held_.size(); }

    // Feeds the next acknowledged bytes; emit(const uint8_t* data, uint32_t len) for each PDU
    // that completes, in order. The data passed to emit is valid during the call only.
    template <typename Emit>
    void feed(const uint8_t* data, size_t len, Emit&& emit);
    // A gap or the end of the direction: what is held leaves as one PDU (if any), and the
    // record state starts over.
    template <typename Emit>
    void flush(Emit&& emit);

private:
    // How many of data[0, len) end at the last cut point (0: none); advances the TLS state.
    size_t cut_point(const uint8_t* data, size_t len);
    template <typename Emit>
    void out(const uint8_t* data, size_t len, Emit& emit);

    PduKind kind_;
    bool gave_up_ = false;
    // TLS record header state: header bytes seen of the current record (0..4: type, version
    // 2, length 2; 5 = in the body), its length, and body bytes still to come.
    uint8_t hdr_ = 0;
    uint16_t rec_len_ = 0;
    uint32_t body_left_ = 0;
    std::vector<uint8_t> held_;
};

// Snort 3's wire-packet alerts of one direction not yet flushed in a PDU (its TCP session's
// add_alert / check_alerted): a rule that alerted on a packet does not alert again on the PDU
// rebuilt from it. At most kMax, as Snort 3 keeps (MAX_SESSION_ALERTS); cleared once a PDU has
// been inspected (Snort 3 purges them with the flushed segments).
struct WireAlerts {
    static constexpr uint32_t kMax = 8;
    uint64_t ids[kMax] = {};  // gid << 32 | sid
    uint32_t count = 0;

    void add(uint32_t gid, uint32_t sid) {
        if (count < kMax && !has(gid, sid)) {
            ids[count++] = static_cast<uint64_t>(gid) << 32 | sid;
        }
    }
    bool has(uint32_t gid, uint32_t sid) const {
        const uint64_t id = static_cast<uint64_t>(gid) << 32 | sid;
        for (uint32_t i = 0; i < count; ++i) {
            if (ids[i] == id) {
                return true;
            }
        }
        return false;
    }
    void clear() { count = 0; }
};

// The per-flow state: one cutter and one wire-alert list per direction (flow::Direction),
// hung on the flow's kSnort3Pdu slot by the engine; deleted when the flow is freed.
struct PduState {
    PduCutter dir[2];
    WireAlerts wire[2];
};
using PduSlot = flow::FlowStorage<PduState, flow::FlowSlot::kSnort3Pdu>;

// ---------------------------------------------------------------------------------------

template <typename Emit>
void PduCutter::out(const uint8_t* data, size_t len, Emit& emit) {
    while (len > 0) {
        const size_t n = len > kMaxPdu ? kMaxPdu : len;
        emit(data, static_cast<uint32_t>(n));
        data += n;
        len -= n;
    }
}

template <typename Emit>
void PduCutter::feed(const uint8_t* data, size_t len, Emit&& emit) {
    if (kind_ == PduKind::kNone || len == 0) {
        return;
    }
    if (gave_up_) {
        // Snort 3's fallback (an atom splitter): what was acknowledged waits until kMaxPdu
        // bytes do, then all of it leaves as one PDU (at most kMaxFallbackPdu).
        held_.insert(held_.end(), data, data + len);
        if (held_.size() >= kMaxPdu) {
            for (size_t at = 0; at < held_.size(); at += kMaxFallbackPdu) {
                const size_t n =
                    held_.size() - at < kMaxFallbackPdu ? held_.size() - at : kMaxFallbackPdu;
                emit(held_.data() + at, static_cast<uint32_t>(n));
            }
            held_.clear();
        }
        return;
    }
    const size_t cut = cut_point(data, len);
    if (cut != 0) {
        if (held_.empty()) {
            out(data, cut, emit);
        } else {
            held_.insert(held_.end(), data, data + cut);
            out(held_.data(), held_.size(), emit);
            held_.clear();
        }
        data += cut;
        len -= cut;
    }
    // No cut point in the rest: it waits, and leaves in kMaxPdu pieces while it is that long.
    while (len > 0) {
        const size_t room = kMaxPdu - held_.size();
        const size_t n = len < room ? len : room;
        held_.insert(held_.end(), data, data + n);
        data += n;
        len -= n;
        if (held_.size() == kMaxPdu) {
            emit(held_.data(), kMaxPdu);
            held_.clear();
        }
    }
}

template <typename Emit>
void PduCutter::flush(Emit&& emit) {
    if (!held_.empty()) {
        out(held_.data(), held_.size(), emit);
        held_.clear();
    }
    hdr_ = 0;
    body_left_ = 0;
}

}  // namespace picket::sensor::detect
