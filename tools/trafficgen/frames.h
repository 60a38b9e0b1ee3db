// Internal to tools/trafficgen: hosts, connections and the frames of one session. A session is
// planned in full into its own buffer (Session) before any of its packets is written; these
// functions append Ethernet/IP/TCP/UDP/ICMP/ARP frames with correct checksums to it. Called by
// the protocol planners on the generating thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/trafficgen/rng.h"

namespace picket::tools::trafficgen {

constexpr size_t kMtu = 1500;
constexpr size_t kMinFrame = 60;  // Ethernet minimum without FCS; shorter frames are padded
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kPsh = 0x08, kAck = 0x10;

struct Host {
    bool v6 = false;
    uint8_t addr[16] = {};
    uint8_t mac[6] = {};
    std::string name;  // servers only
};

// Sets h.mac to a locally administered unicast MAC derived from h.addr.
void derive_mac(Host& h);

struct Conn {
    bool v6 = false;
    const Host* client = nullptr;
    const Host* server = nullptr;
    uint16_t cport = 0, sport = 0, vlan = 0;
    uint16_t cipid = 0, sipid = 0;
    uint8_t cttl = 64, sttl = 56;
    uint32_t cflow = 0, sflow = 0;  // IPv6 flow labels
    uint32_t cseq = 0, sseq = 0;
    uint16_t cwin = 502, swin = 501;
    uint32_t mss = 1460;
    int64_t rtt = 20000;  // microseconds
    int64_t gap = 50;     // microseconds between back-to-back segments
    uint32_t frag_id = 0;
};

struct FragInfo {
    uint32_t id = 0;
    uint16_t v4word = 0;  // IPv4 flags (MF) and offset in 8-byte units
    uint8_t v6hdr[8] = {};
};

struct Pkt {
    int64_t ts;
    uint32_t off;
    uint32_t len;
    int32_t attack;  // index into Record::attacks, or -1
};

struct Session {
    std::vector<uint8_t> data;
    std::vector<Pkt> pkts;
    size_t next = 0;
    int64_t last_ts = 0;
    uint64_t seq = 0;  // creation order: tie-breaker for equal timestamps

    void reset() {
        data.clear();
        pkts.clear();
        next = 0;
        last_ts = 0;
    }
    uint64_t file_bytes() const { return data.size() + 16 * pkts.size(); }
};

// In all of these, fc ("from client") picks the direction; a frame's timestamp is never
// earlier than the session's previous one.

// Appends Ethernet [+802.1Q] + IP header for an L4 payload of l4_len bytes and returns the L4
// pointer. frag != nullptr makes it a fragment: IPv4 flags/offset word and id, or an IPv6
// Fragment header.
uint8_t* ip_frame(Session& s, Conn& c, bool fc, uint8_t proto, size_t l4_len, int64_t ts,
                  int32_t attack = -1, const FragInfo* frag = nullptr);

// One TCP segment; advances the sender's sequence number. SYNs carry MSS, SACK-permitted and
// window-scale options.
void tcp(Session& s, Conn& c, bool fc, uint8_t flags, const uint8_t* pl, size_t n, int64_t ts,
         int32_t attack = -1);

// One UDP datagram, cut into IP fragments when it exceeds the MTU (built whole in scratch first,
// since the checksum covers all of it).
void udp(Session& s, Conn& c, bool fc, const uint8_t* pl, size_t n, int64_t ts,
         std::vector<uint8_t>& scratch);

// ICMP or ICMPv6 echo request (client to server) or reply.
void icmp_echo(Session& s, Conn& c, bool request, uint16_t id, uint16_t seq, const uint8_t* pl,
               size_t n, int64_t ts);

// ARP who-has for the client's gateway (x.y.z.1) and its reply.
void arp_pair(Session& s, const Host& client, int64_t ts);

// Sends n bytes from one side in MSS-sized segments, in congestion-window bursts one RTT
// apart; the receiver ACKs every second segment (and the last one when ack_tail). Forced
// segment boundaries at `split` (0 = none). Marks the segment holding [mark, mark+mlen)
// with attack index `attack`. Returns the time of the last packet.
int64_t send_data(Session& s, Conn& c, bool fc, const uint8_t* d, size_t n, int64_t t,
                  bool ack_tail, size_t split = 0, size_t mark = SIZE_MAX, int32_t attack = -1);

// The 3-way handshake from t; returns the time of the client's ACK.
int64_t handshake(Session& s, Conn& c, int64_t t);

// FIN/ACK from both sides (the server closes first 30% of the time), then the last ACK.
void teardown(Session& s, Conn& c, Rng& r, int64_t t);

}  // namespace picket::tools::trafficgen
