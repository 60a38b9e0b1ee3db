// Active responses for inline (IPS) mode: TCP resets to one or both ends of a connection and
// ICMP / ICMPv6 port unreachable for UDP, built from a decoded packet. The builders are pure
// functions; a Responder sends them, either through raw IP sockets of the sensor's network
// namespace (NFQUEUE) or out of the bridge's interfaces (AF_PACKET inline). A Responder
// belongs to one worker. Factories throw ResponderError; sending never throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>

#include "sensor/decode/decode.h"

namespace picket::sensor::capture {
class BridgeInjector;  // sensor/capture/inline.h
}  // namespace picket::sensor::capture

namespace picket::sensor::engine {

class ResponderError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Largest frame a builder writes: Ethernet + 2 VLAN tags + IPv6 + ICMPv6 quoting up to the
// IPv6 minimum MTU (RFC 4443 2.4(c): the error must fit in 1280 bytes).
inline constexpr size_t kMaxResponseFrame = 22 + 1280;

// TCP RST|ACK for the TCP packet p (no options, window 0, IPv4 DF / IPv6 hop limit 64).
// to_sender: addresses and ports swapped; seq = p.ack, ack = p.seq + segment length (payload,
// +1 for SYN, +1 for FIN) - acceptable in SYN-SENT and exactly the sender's rcv_nxt.
// Otherwise, toward p's receiver from p's sender: seq = p.seq + segment length (RFC 5961:
// Linux resets only on an exact rcv_nxt match, and that is rcv_nxt once p got through), or
// p.seq when p was dropped inline (original_dropped: the receiver never saw it); ack = p.ack.
// with_ethernet: p must be an Ethernet frame; its link header (VLAN tags included) is copied,
// MAC addresses swapped toward the sender. Returns the frame length, 0 when p is not TCP,
// carries RST itself, is a fragment, is not Ethernet while with_ethernet, or cap is too small.
size_t build_tcp_rst(const decode::Packet& p, bool to_sender, uint8_t* out, size_t cap,
                     bool with_ethernet, bool original_dropped = false);

// ICMP destination unreachable / port unreachable (type 3 code 3) for an IPv4 UDP packet,
// quoting its IP header and the first 8 bytes after it (RFC 792); ICMPv6 type 1 code 4 for
// IPv6, quoting as much of the packet as fits in 1280 bytes. Sent to p's sender, from p's
// destination address. Returns the frame length, 0 when p is not UDP or cap is too small.
size_t build_icmp_unreachable(const decode::Packet& p, uint8_t* out, size_t cap,
                              bool with_ethernet);

enum class RejectTarget : uint8_t {
    kSender,    // Suricata's rejectsrc: RST / ICMP to the packet's sender
    kReceiver,  // rejectdst: RST to its receiver (no ICMP for UDP)
    kBoth,      // rejectboth
};

struct ResponderStats {
    uint64_t sent = 0;    // frames sent
    uint64_t failed = 0;  // built but not sent (socket error)
};

class Responder {
public:
    virtual ~Responder() = default;
    // Sends the responses for p; returns how many frames went out. TCP: RSTs to the targets;
    // UDP: ICMP port unreachable to the sender (kSender, kBoth). Anything else: nothing.
    virtual uint32_t reject(const decode::Packet& p, RejectTarget target,
                            bool original_dropped) = 0;
    virtual ResponderStats stats() const = 0;
};

// Raw IP sockets (AF_INET and AF_INET6, SOCK_RAW, IPPROTO_RAW) opened in the calling thread's
// network namespace: for NFQUEUE, where the sensor runs on the router and responses are routed
// like its own traffic (OUTPUT chain, not queued again). Needs CAP_NET_RAW. Throws
// ResponderError("raw socket: ...") when neither family can be opened.
std::unique_ptr<Responder> make_raw_socket_responder();

// Responses leave through the bridge's own sockets: the one toward the sender out of the side
// the packet arrived on, the one toward the receiver out of the other side, so each reaches
// its end like a frame the bridge forwarded. The injector (capture::bridge_injector of the
// worker's source) must outlive the responder.
std::unique_ptr<Responder> make_bridge_responder(capture::BridgeInjector& injector);

}  // namespace picket::sensor::engine
