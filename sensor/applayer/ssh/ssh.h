// SSH app-layer parser: each direction's identification line ("SSH-protoversion-softwareversion
// SP comments CRLF", RFC 4253 4.2; the server may send other lines first), then the binary
// packets (RFC 4253 6) up to NEWKEYS, keeping the KEXINIT (RFC 4253 7.1) of each side for HASSH.
// After NEWKEYS a direction is encrypted and its bytes are ignored. Buffers are bounded: a
// banner line, one KEXINIT. One SshParser per flow, called only by the flow's worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/applayer/digest.h"

namespace picket::sensor::applayer::ssh {

// Same values as flow::Direction, kept local so this module does not depend on the flow table.
enum class Dir : uint8_t { kToServer = 0, kToClient = 1 };

// Each event is counted as "app_layer.ssh.events.<event_name()>"; the names are Suricata's
// (app-layer-event:ssh.<name>).
enum class Event : uint8_t {
    kInvalidBanner,  // a line that is not an identification line where one must be: gives up
    kLongBanner,     // an identification line over max_banner (kept truncated)
    kInvalidRecord,  // a binary packet whose lengths do not hold together: gives up
    kLongKexRecord,  // a KEXINIT over max_kex_record (skipped, no HASSH)
    kCount,
};
inline constexpr size_t kEventCount = static_cast<size_t>(Event::kCount);
const char* event_name(Event e);

// One side's identification line and KEXINIT.
struct Side {
    bool has_banner = false;
    std::string proto_version;     // "2.0", "1.99"
    std::string software_version;  // up to the first SP: "OpenSSH_8.4p1"
    std::string comments;          // after the SP, if any
    bool has_kex = false;
    // HASSH (client) or HASSH-server: "kex;enc;mac;cmp" with this side's lists in its own
    // direction (the client's c2s, the server's s2c), and its lower-case hex MD5.
    std::string hassh_string;
    std::string hassh;
    bool encrypted = false;  // NEWKEYS seen: nothing more is read
};

// Lower-case hex MD5 (sensor/applayer/digest.h).
using applayer::md5_hex;

enum class ProbeResult : uint8_t { kNo, kYes, kNeedMore };
// Protocol detection on the first bytes of a direction: "SSH-".
ProbeResult probe(const uint8_t* data, size_t len);
// The server may send other lines before its identification line (RFC 4253 4.2): whether a
// line of data[0, len) after the first starts with "SSH-". Asked last, after every other
// protocol's probe said no, on the server's bytes only.
bool probe_server_lines(const uint8_t* data, size_t len);

struct SshCounters {
    Counter banners;   // identification lines parsed (both directions)
    Counter kexinits;  // KEXINIT messages parsed
    Counter events[kEventCount];
};
// "app_layer.ssh.banners", "app_layer.ssh.kexinits", "app_layer.ssh.events.<name>".
void export_stats(const SshCounters& c, StatsSnapshot& out);

struct SshConfig {
    uint32_t max_banner = 255;         // RFC 4253 4.2: 255 bytes with CR LF
    uint32_t max_pre_banner = 8192;    // bytes of other lines the server may send first
    uint32_t max_kex_record = 65536;   // a bigger KEXINIT is skipped (long_kex_record)
    uint32_t max_packet = 256 * 1024;  // packet_length above this is invalid_record
};

// What feed() made newly available.
enum Update : uint32_t {
    kNone = 0,
    kBanner = 1U << 0,     // this direction's identification line
    kKexInit = 1U << 1,    // this direction's KEXINIT (HASSH)
    kEncrypted = 1U << 2,  // this direction's NEWKEYS
};

class SshParser {
public:
    SshParser(const SshConfig& config, SshCounters* counters);

    // In-order stream bytes of one direction, in any pieces. Returns an OR of Update bits.
    uint32_t feed(Dir dir, const uint8_t* data, size_t len);

    const Side& client() const { return side_[0]; }
    const Side& server() const { return side_[1]; }
    const Side& side(Dir d) const { return side_[static_cast<int>(d)]; }
    // Both directions are past NEWKEYS or gave up: the session is logged, nothing more comes.
    bool done() const { return st_[0].phase == Phase::kDone && st_[1].phase == Phase::kDone; }
    uint32_t events() const { return events_; }  // bit (1 << Event), all raised on the flow
    bool has(Event e) const { return (events_ >> static_cast<unsigned>(e)) & 1U; }
    size_t memory() const;

    // Kept for the app layer's EVE records: the session was logged, and the events already
    // written as anomaly records (bit (1 << Event)).
    bool eve_logged = false;
    uint32_t eve_events_logged = 0;
    // The events detection has been shown (a view is handed out when one is new).
    uint32_t events_viewed = 0;

private:
    enum class Phase : uint8_t { kBanner, kRecords, kDone };
    struct State {
        Phase phase = Phase::kBanner;
        std::string line;                     // the banner line so far (at most max_banner bytes)
        bool line_long = false;               // past max_banner: the rest of the line is dropped
        uint32_t pre_banner = 0;              // bytes of non-banner lines (server only)
        uint8_t hdr[6] = {0, 0, 0, 0, 0, 0};  // packet_length, padding_length, message type
        uint8_t hdr_have = 0;
        uint32_t left = 0;         // bytes of the current packet after the header
        bool keep = false;         // the current packet is a KEXINIT being buffered
        bool newkeys = false;      // the current packet is NEWKEYS
        std::vector<uint8_t> rec;  // KEXINIT: the bytes after the message type
    };

    void raise(Event e);
    uint32_t banner_bytes(int d, const uint8_t* data, size_t len, size_t* used);
    uint32_t banner_line(int d);
    uint32_t packet_bytes(int d, const uint8_t* data, size_t len);
    uint32_t packet_end(int d);
    void parse_kexinit(int d, const uint8_t* p, size_t len);

    SshConfig config_;
    SshCounters* counters_;
    State st_[2];
    Side side_[2];
    uint32_t events_ = 0;
};

}  // namespace picket::sensor::applayer::ssh
