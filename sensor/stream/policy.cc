// Overlap policy names, per-destination policy networks, and the overlap decision itself.
#include <arpa/inet.h>

#include <charconv>
#include <cstring>
#include <string>

#include "sensor/stream/internal.h"
#include "sensor/stream/stream.h"

namespace picket::sensor::stream {

namespace {

struct PolicyName {
    const char* name;
    Policy policy;
};

constexpr PolicyName kPolicyNames[] = {
    {"first", Policy::kFirst},   {"last", Policy::kLast},          {"bsd", Policy::kBsd},
    {"linux", Policy::kLinux},   {"old-linux", Policy::kOldLinux}, {"windows", Policy::kWindows},
    {"vista", Policy::kVista},   {"solaris", Policy::kSolaris},    {"hpux10", Policy::kHpux10},
    {"hpux11", Policy::kHpux11}, {"irix", Policy::kIrix},          {"macos", Policy::kMacos},
};

}  // namespace

bool parse_policy(std::string_view name, Policy* out) {
    for (const PolicyName& p : kPolicyNames) {
        if (name == p.name) {
            *out = p.policy;
            return true;
        }
    }
    if (name == "windows2k3") {  // Suricata's name; same rules as windows
        *out = Policy::kWindows;
        return true;
    }
    return false;
}

const char* policy_name(Policy p) {
    for (const PolicyName& n : kPolicyNames) {
        if (n.policy == p) {
            return n.name;
        }
    }
    return "?";
}

bool parse_cidr(std::string_view text, PolicyNet* out) {
    std::string addr(text);
    int prefix = -1;
    const size_t slash = addr.find('/');
    if (slash != std::string::npos) {
        const std::string_view len = std::string_view(addr).substr(slash + 1);
        int v = 0;
        auto [ptr, ec] = std::from_chars(len.data(), len.data() + len.size(), v);
        if (ec != std::errc() || ptr != len.data() + len.size() || len.empty()) {
            return false;
        }
        prefix = v;
        addr.resize(slash);
    }
    uint8_t b[16];
    if (inet_pton(AF_INET, addr.c_str(), b) == 1) {
        if (prefix > 32) {
            return false;
        }
        out->net = decode::Address::from_v4(b);
        out->prefix_len = static_cast<uint8_t>(96 + (prefix < 0 ? 32 : prefix));
    } else if (inet_pton(AF_INET6, addr.c_str(), b) == 1) {
        if (prefix > 128) {
            return false;
        }
        out->net = decode::Address::from_v6(b);
        out->prefix_len = static_cast<uint8_t>(prefix < 0 ? 128 : prefix);
    } else {
        return false;
    }
    // Host bits cleared so matching is a plain masked compare.
    for (int i = 0; i < 16; ++i) {
        const int bits = static_cast<int>(out->prefix_len) - i * 8;
        if (bits <= 0) {
            out->net.b[i] = 0;
        } else if (bits < 8) {
            out->net.b[i] &= static_cast<uint8_t>(0xff00 >> bits);
        }
    }
    return true;
}

bool prefix_match(const PolicyNet& n, const decode::Address& a) {
    const int full = n.prefix_len / 8;
    if (std::memcmp(n.net.b, a.b, static_cast<size_t>(full)) != 0) {
        return false;
    }
    const int rest = n.prefix_len % 8;
    if (rest == 0) {
        return true;
    }
    const uint8_t mask = static_cast<uint8_t>(0xff00 >> rest);
    return (a.b[full] & mask) == n.net.b[full];
}

// Suricata's DoHandleDataOverlap (stream-tcp-list.c), as a pure function of the new
// segment [s, e), one segment already held [ls, le) and the receiver's policy: true when
// the new data replaces the held data where they overlap. The rules follow Novak & Sturges,
// "Target-Based TCP Stream Reassembly" (2007).
bool new_data_wins(Policy pol, uint64_t s, uint64_t e, uint64_t ls, uint64_t le) {
    const bool solaris_like = pol == Policy::kSolaris || pol == Policy::kHpux11;
    if (pol == Policy::kLast) {
        return true;
    }
    if (s == ls) {
        if (e < le) {
            return false;  // the held segment covers the new one's end: every policy keeps it
        }
        if (e > le && pol == Policy::kLinux) {
            return true;
        }
        return pol == Policy::kOldLinux || solaris_like;
    }
    if (s < ls) {
        if (e >= le && solaris_like) {
            return true;
        }
        switch (pol) {
            case Policy::kBsd:
            case Policy::kHpux10:
            case Policy::kIrix:
            case Policy::kWindows:
            case Policy::kOldLinux:
            case Policy::kLinux:
            case Policy::kMacos:
                return true;  // starts before the held segment: the new data wins
            default:
                return false;
        }
    }
    // Starts after the held segment: only Solaris/HP-UX 11 take new data, and only when it
    // also ends after it.
    return e > le && solaris_like;
}

}  // namespace picket::sensor::stream
