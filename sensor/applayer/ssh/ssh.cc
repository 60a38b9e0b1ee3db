// SSH identification lines and the cleartext binary packets up to NEWKEYS; see ssh.h.
#include "sensor/applayer/ssh/ssh.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "sensor/applayer/byte_reader.h"
#include "sensor/applayer/event_stats.h"

namespace picket::sensor::applayer::ssh {
namespace {

constexpr const char* kEventNames[kEventCount] = {
    "invalid_banner",
    "long_banner",
    "invalid_record",
    "long_kex_record",
};

constexpr uint8_t kMsgKexInit = 20;  // RFC 4253 12
constexpr uint8_t kMsgNewKeys = 21;

bool starts_ssh(std::string_view s) {
    return s.size() >= 4 && s.substr(0, 4) == "SSH-";
}

// One name-list (RFC 4251 5): uint32 length, then that many bytes.
bool name_list(ByteReader& r, std::string_view* out) {
    const uint8_t* p;
    if (!r.bytes(4, &p)) {
        return false;
    }
    const uint32_t n = be32(p);
    if (!r.bytes(n, &p)) {
        return false;
    }
    *out = std::string_view(reinterpret_cast<const char*>(p), n);
    return true;
}

}  // namespace

const char* event_name(Event e) {
    const auto i = static_cast<size_t>(e);
    return i < kEventCount ? kEventNames[i] : "unknown";
}

ProbeResult probe(const uint8_t* data, size_t len) {
    static constexpr char kTag[] = "SSH-";
    const size_t n = std::min<size_t>(len, 4);
    if (std::memcmp(data, kTag, n) != 0) {
        return ProbeResult::kNo;
    }
    return n == 4 ? ProbeResult::kYes : ProbeResult::kNeedMore;
}

bool probe_server_lines(const uint8_t* data, size_t len) {
    const std::string_view s(reinterpret_cast<const char*>(data), len);
    return s.find("\nSSH-") != std::string_view::npos;
}

void export_stats(const SshCounters& c, StatsSnapshot& out) {
    out.add("app_layer.ssh.banners", c.banners.get());
    out.add("app_layer.ssh.kexinits", c.kexinits.get());
    export_event_counters(out, "app_layer.ssh.events.", c.events, event_name);
}

SshParser::SshParser(const SshConfig& config, SshCounters* counters)
    : config_(config), counters_(counters) {}

void SshParser::raise(Event e) {
    const uint32_t bit = 1U << static_cast<unsigned>(e);
    // Counted once per flow, like Suricata's app-layer events.
    if ((events_ & bit) == 0) {
        ++counters_->events[static_cast<size_t>(e)];
    }
    events_ |= bit;
}

size_t SshParser::memory() const {
    size_t n = sizeof(SshParser);
    for (int d = 0; d < 2; ++d) {
        n += st_[d].line.capacity() + st_[d].rec.capacity();
        n += side_[d].proto_version.capacity() + side_[d].software_version.capacity() +
             side_[d].comments.capacity() + side_[d].hassh_string.capacity() +
             side_[d].hassh.capacity();
    }
    return n;
}

uint32_t SshParser::feed(Dir dir, const uint8_t* data, size_t len) {
    const int d = static_cast<int>(dir);
    uint32_t upd = 0;
    while (len > 0 && st_[d].phase != Phase::kDone) {
        if (st_[d].phase == Phase::kBanner) {
            size_t used = 0;
            upd |= banner_bytes(d, data, len, &used);
            data += used;
            len -= used;
        } else {
            upd |= packet_bytes(d, data, len);
            len = 0;
        }
    }
    return upd;
}

// Collects one line (up to LF); a line longer than max_banner keeps its first max_banner bytes.
uint32_t SshParser::banner_bytes(int d, const uint8_t* data, size_t len, size_t* used) {
    State& s = st_[d];
    const auto* lf = static_cast<const uint8_t*>(std::memchr(data, '\n', len));
    const size_t take = lf != nullptr ? static_cast<size_t>(lf - data) + 1 : len;
    *used = take;
    if (!s.line_long) {
        const size_t room =
            config_.max_banner - std::min<size_t>(s.line.size(), config_.max_banner);
        s.line.append(reinterpret_cast<const char*>(data), std::min(take, room));
        if (take > room) {
            s.line_long = true;
        }
    }
    // A line that is neither finished nor long can wait; so can a long one's remainder.
    if (lf == nullptr) {
        if (s.line_long && !starts_ssh(s.line) && d == 0) {
            raise(Event::kInvalidBanner);
            s.phase = Phase::kDone;
        }
        return kNone;
    }
    return banner_line(d);
}

// A complete line in s.line (LF included unless it was cut at max_banner).
uint32_t SshParser::banner_line(int d) {
    State& s = st_[d];
    std::string_view line(s.line);
    const bool was_long = s.line_long;
    s.line_long = false;
    if (!starts_ssh(line)) {
        // RFC 4253 4.2: the server may send other lines first; the client may not.
        s.pre_banner += static_cast<uint32_t>(line.size());
        if (d == 0 || s.pre_banner > config_.max_pre_banner) {
            raise(Event::kInvalidBanner);
            s.phase = Phase::kDone;
        }
        s.line.clear();
        return kNone;
    }
    if (was_long) {
        raise(Event::kLongBanner);
    }
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
        line.remove_suffix(1);
    }
    line.remove_prefix(4);
    const size_t dash = line.find('-');
    if (dash == std::string_view::npos || dash == 0) {
        raise(Event::kInvalidBanner);
        s.phase = Phase::kDone;
        s.line.clear();
        s.line.shrink_to_fit();
        return kNone;
    }
    Side& side = side_[d];
    side.proto_version.assign(line.substr(0, dash));
    std::string_view rest = line.substr(dash + 1);
    const size_t sp = rest.find(' ');
    side.software_version.assign(rest.substr(0, sp));
    if (sp != std::string_view::npos) {
        side.comments.assign(rest.substr(sp + 1));
    }
    side.has_banner = true;
    ++counters_->banners;
    s.line.clear();
    s.line.shrink_to_fit();
    // SSH 1 (protoversion 1.x other than 1.99) has no binary packets of the SSH 2 kind.
    s.phase = side.proto_version.starts_with("1.") && side.proto_version != "1.99"
                  ? Phase::kDone
                  : Phase::kRecords;
    return kBanner;
}

// Binary packets (RFC 4253 6): uint32 packet_length, byte padding_length, payload (its first
// byte the message type), padding; no MAC before the first NEWKEYS.
uint32_t SshParser::packet_bytes(int d, const uint8_t* data, size_t len) {
    State& s = st_[d];
    uint32_t upd = 0;
    while (len > 0 && s.phase == Phase::kRecords) {
        if (s.hdr_have < sizeof(s.hdr)) {
            const size_t n = std::min<size_t>(len, sizeof(s.hdr) - s.hdr_have);
            std::memcpy(s.hdr + s.hdr_have, data, n);
            s.hdr_have = static_cast<uint8_t>(s.hdr_have + n);
            data += n;
            len -= n;
            if (s.hdr_have < sizeof(s.hdr)) {
                break;
            }
            const uint32_t plen = be32(s.hdr);
            const uint8_t pad = s.hdr[4];
            // The payload holds at least the message type; padding is at least 4 bytes.
            if (plen < 2u + 4u || plen > config_.max_packet || pad < 4 || pad > plen - 2) {
                raise(Event::kInvalidRecord);
                s.phase = Phase::kDone;
                break;
            }
            s.left = plen - 2;
            s.newkeys = s.hdr[5] == kMsgNewKeys;
            s.keep = s.hdr[5] == kMsgKexInit && !side_[d].has_kex;
            if (s.keep && s.left > config_.max_kex_record) {
                raise(Event::kLongKexRecord);
                s.keep = false;
            }
            if (s.keep) {
                s.rec.reserve(s.left);
            }
        }
        const size_t n = std::min<size_t>(len, s.left);
        if (s.keep) {
            s.rec.insert(s.rec.end(), data, data + n);
        }
        s.left -= static_cast<uint32_t>(n);
        data += n;
        len -= n;
        if (s.left == 0) {
            upd |= packet_end(d);
        }
    }
    return upd;
}

uint32_t SshParser::packet_end(int d) {
    State& s = st_[d];
    uint32_t upd = 0;
    if (s.keep) {
        // The payload after the message type: the packet minus padding_length, its own byte
        // and the type byte.
        const size_t payload = s.rec.size() - s.hdr[4];
        parse_kexinit(d, s.rec.data(), payload);
        s.rec.clear();
        s.rec.shrink_to_fit();
        s.keep = false;
        if (side_[d].has_kex) {
            upd |= kKexInit;
        }
    }
    s.hdr_have = 0;
    if (s.newkeys) {
        // Everything after NEWKEYS is encrypted (RFC 4253 7.3).
        side_[d].encrypted = true;
        s.phase = Phase::kDone;
        upd |= kEncrypted;
    }
    return upd;
}

// KEXINIT (RFC 4253 7.1): cookie[16], then name-lists kex, server_host_key, enc c2s, enc s2c,
// mac c2s, mac s2c, comp c2s, comp s2c, lang c2s, lang s2c; boolean, uint32. HASSH takes the
// sender's direction: the client's c2s lists, the server's s2c lists.
void SshParser::parse_kexinit(int d, const uint8_t* p, size_t len) {
    ByteReader r(p, len);
    std::string_view lists[10];
    const uint8_t* cookie;
    bool ok = r.bytes(16, &cookie);
    for (int i = 0; ok && i < 10; ++i) {
        ok = name_list(r, &lists[i]);
    }
    if (!ok) {
        raise(Event::kInvalidRecord);
        return;
    }
    const int k = d == 0 ? 0 : 1;  // c2s or s2c column
    Side& side = side_[d];
    side.hassh_string.clear();
    side.hassh_string.append(lists[0]).append(";").append(lists[2 + k]).append(";");
    side.hassh_string.append(lists[4 + k]).append(";").append(lists[6 + k]);
    side.hassh = md5_hex(side.hassh_string);
    side.has_kex = true;
    ++counters_->kexinits;
}

}  // namespace picket::sensor::applayer::ssh
