// Deterministic traffic generator: writes a classic pcap (Ethernet, microsecond timestamps) of
// interleaved HTTP/1.1, DNS, TLS, ICMP echo and ARP traffic over IPv4/IPv6, with VLAN tags,
// fragmented UDP datagrams and optional injected attack strings, and returns a Record of
// exactly what it wrote (tallied from the frames on their way to the file). Same options and
// seed => byte-identical file. Single-threaded; called from tests, benchmarks and main.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace picket::tools::trafficgen {

struct Options {
    uint64_t seed = 1;
    // Exactly one of the two limits applies: size_bytes (approximate output file size; the
    // generator stops starting sessions once the planned file reaches it) when non-zero,
    // otherwise sessions.
    uint64_t size_bytes = 0;
    uint64_t sessions = 1000;
    double ipv6_share = 0.20;  // share of sessions over IPv6
    double vlan_share = 0.05;  // share of sessions whose frames carry one 802.1Q tag
    double frag_share = 0.02;  // share of UDP (DNS) flows with a datagram larger than the MTU
    std::vector<std::string> attacks;  // injected round-robin into HTTP requests
    double attack_share = 0.05;        // share of HTTP sessions that carry one
};

// Flow 5-tuple + VLAN as the client (initiator) sees it.
struct FlowTuple {
    std::string proto;  // "tcp", "udp", "icmp", "icmpv6"
    std::string src, dst;
    uint16_t sport = 0, dport = 0;
    uint16_t vlan = 0;  // 0 = untagged
};

struct AttackRecord {
    std::string string;
    std::string location;  // "uri" (request-line query) or "body" (request body)
    FlowTuple flow;
    uint64_t packet = 0;  // 1-based index of the frame in the pcap (the sensor's pcap_cnt)
};

struct SessionCounts {
    uint64_t http = 0, dns = 0, tls = 0, icmp = 0;
};

// Counter definitions match the sensor's decoder and flow counters; see README.md.
struct Record {
    uint64_t packets = 0, bytes = 0;
    uint64_t ipv4 = 0, ipv6 = 0;
    uint64_t tcp = 0, udp = 0, icmpv4 = 0, icmpv6 = 0;
    uint64_t arp = 0, vlan = 0;
    uint64_t ipv4_fragments = 0, ipv6_fragments = 0, reassembled = 0;
    uint64_t flows = 0, flows_tcp = 0, flows_udp = 0, flows_icmpv4 = 0, flows_icmpv6 = 0;
    uint64_t file_bytes = 0;                  // size of the pcap file, headers included
    int64_t first_ts_us = 0, last_ts_us = 0;  // Unix microseconds
    SessionCounts sessions;
    uint64_t http_requests = 0;
    std::vector<AttackRecord> attacks;
    // Frames in which any attack string occurs (scanned in the writer path); equals
    // attacks.size() unless an attack string also occurs in generated traffic by itself.
    uint64_t attack_string_packets = 0;
    uint64_t seed = 0;
    Options options;
};

// Checks ranges (shares in [0,1], attack strings 1..512 bytes, a non-zero limit); returns an
// empty string when valid, else a message naming the offending option.
std::string validate(const Options& options);

// Writes the pcap to path and returns its record. Throws std::invalid_argument for invalid
// options and std::runtime_error for I/O errors.
Record generate(const Options& options, const std::string& path);

nlohmann::json to_json(const Record& record);
nlohmann::json to_json(const Options& options);

// Parses "1000", "512K", "20M", "1G", "2GiB" (binary multiples, case-insensitive). Returns
// false on malformed input or overflow.
bool parse_size(const std::string& text, uint64_t* out);

}  // namespace picket::tools::trafficgen
