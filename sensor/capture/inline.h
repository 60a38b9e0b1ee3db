// Inline (IPS) capture backends: the worker's Batch::verdict[i] decides each packet's fate on
// release(). NFQUEUE (one netfilter queue per worker, verdicts over netlink) and an AF_PACKET
// bridge between two interfaces (one TPACKET_V3 ring per interface per worker, frames
// forwarded to the other interface on release). Same thread rules as PacketSource: one
// worker per source; setup functions throw CaptureError.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "sensor/capture/capture.h"

namespace picket::sensor::capture {

// Counters of what an inline source did with the verdicts, beyond CaptureStats.
struct InlineStats {
    uint64_t accepted = 0;   // verdict accept: forwarded (bridge) / NF_ACCEPT sent (nfqueue)
    uint64_t dropped = 0;    // verdict drop
    uint64_t tx_errors = 0;  // bridge: send() failed (frame lost); nfqueue: verdict send failed
    uint64_t injected = 0;   // frames sent through inject() (bridge) / raw responses
};

// A PacketSource whose release() acts on the verdicts.
class InlineSource : public PacketSource {
public:
    virtual InlineStats inline_stats() const = 0;
};

// ---------------------------------------------------------------------------------------
// NFQUEUE (NfqueueOptions: capture.h)

// Packets are raw IP (RawPacket::linktype = 12, DLT_RAW: the decoder picks IPv4/IPv6 from the
// version nibble). Throws CaptureError("nfqueue N: ...") when the queue is bound by another
// process, without CAP_NET_ADMIN, or when nfnetlink_queue is not available.
std::unique_ptr<InlineSource> make_nfqueue_source(const NfqueueOptions& options);

// "Q" or "Q:R" (inclusive, Q <= R <= 65535) -> first queue and count. A sensor with N workers
// uses queues first..first+N-1. Throws CaptureError("bad queue range 'S': ...").
struct QueueRange {
    uint16_t first = 0;
    uint32_t count = 1;
};
QueueRange parse_queue_range(const std::string& spec);

// ---------------------------------------------------------------------------------------
// AF_PACKET inline bridge (AfPacketInlineOptions: capture.h)

// Throws CaptureError("bridge IF1:IF2: ...") for an unknown interface, IF1 == IF2 or socket
// errors. Packets are Ethernet (linktype 1) with VLAN tags put back as in open_afpacket.
std::unique_ptr<InlineSource> make_afpacket_inline_source(const AfPacketInlineOptions& options);

// "IF1:IF2" -> the two names. Throws CaptureError("bad bridge 'S': ...").
std::pair<std::string, std::string> parse_bridge(const std::string& spec);

// Injection through a bridge source's sockets (responses: TCP RST, ICMP unreachable). Side 0
// is iface1, side 1 iface2. Called by the owning worker only.
class BridgeInjector {
public:
    virtual ~BridgeInjector() = default;
    // The side a packet of the current batch arrived on (0 or 1), -1 if not this source's.
    virtual int side_of(const uint8_t* data) const = 0;
    // Sends an Ethernet frame out of `side`. False on failure (counted in tx_errors).
    virtual bool inject(int side, const uint8_t* frame, size_t len) = 0;
};

// The bridge source's injector, or nullptr for any other source. Valid as long as the source.
BridgeInjector* bridge_injector(PacketSource& source);

}  // namespace picket::sensor::capture
