// The rule model's plain helpers and the linear-scan reference. The reference is written
// directly from the rule's definition, sharing nothing with the classifier's trees, so that
// the property test compares two independent implementations.
#include "sensor/filter/filter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/strings.h"

namespace picket::sensor::filter {

namespace {

// Whether the first `len` bits of `n` bytes at a and b are equal.
bool prefix_equal(const uint8_t* a, const uint8_t* b, unsigned len) {
    const unsigned full = len / 8;
    if (std::memcmp(a, b, full) != 0) {
        return false;
    }
    const unsigned rest = len % 8;
    if (rest == 0) {
        return true;
    }
    const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
    return ((a[full] ^ b[full]) & mask) == 0;
}

bool prefix_matches(const AclPrefix& p, const decode::Address& a, uint8_t ip_version) {
    if (ip_version == 4) {
        return prefix_equal(p.addr.b + 12, a.b + 12, p.len);
    }
    return prefix_equal(p.addr.b, a.b, p.len);
}

std::string prefix_text(const AclPrefix& p, AclFamily f) {
    if (f == AclFamily::kAny) {
        return "any";
    }
    char buf[INET6_ADDRSTRLEN];
    if (f == AclFamily::kIpv4) {
        inet_ntop(AF_INET, p.addr.b + 12, buf, sizeof(buf));
    } else {
        inet_ntop(AF_INET6, p.addr.b, buf, sizeof(buf));
    }
    std::string s = buf;
    if ((f == AclFamily::kIpv4 && p.len != 32) || (f == AclFamily::kIpv6 && p.len != 128)) {
        s += strings::cat("/", p.len);
    }
    return s;
}

std::string ports_text(uint16_t lo, uint16_t hi) {
    if (lo == 0 && hi == 65535) {
        return "any";
    }
    if (lo == hi) {
        return std::to_string(lo);
    }
    return strings::cat(lo, ":", hi);
}

using u128 = unsigned __int128;

u128 to_u128(const decode::Address& a) {
    u128 x = 0;
    for (uint8_t byte : a.b) {
        x = (x << 8) | byte;
    }
    return x;
}

decode::Address from_u128(u128 x) {
    decode::Address a;
    for (int i = 15; i >= 0; --i) {
        a.b[i] = static_cast<uint8_t>(x);
        x >>= 8;
    }
    return a;
}

}  // namespace

void append_range_prefixes(const decode::Address& lo, const decode::Address& hi,
                           std::vector<FamilyPrefix>* out) {
    static constexpr u128 kV4Base = u128{0xffff} << 32;  // ::ffff:0.0.0.0, a /96
    const u128 all = ~u128{0};
    u128 a = to_u128(lo);
    const u128 b = to_u128(hi);
    while (a <= b) {
        // The largest block aligned at a that ends at or before b: 2^size_bits addresses.
        unsigned size_bits = 128;
        if (a != 0) {
            const uint64_t low = static_cast<uint64_t>(a);
            size_bits = low != 0 ? __builtin_ctzll(low)
                                 : 64 + __builtin_ctzll(static_cast<uint64_t>(a >> 64));
        }
        auto span = [&](unsigned bits) { return bits == 128 ? all : (u128{1} << bits) - 1; };
        while (span(size_bits) > b - a) {
            --size_bits;
        }
        const unsigned len = 128 - size_bits;
        const bool contains_v4 = size_bits == 128 || ((kV4Base ^ a) >> size_bits) == 0;
        if (len >= 96 && (a >> 32) == (kV4Base >> 32)) {
            out->push_back(
                {AclFamily::kIpv4, AclPrefix{from_u128(a), static_cast<uint8_t>(len - 96)}});
        } else {
            out->push_back({AclFamily::kIpv6, AclPrefix{from_u128(a), static_cast<uint8_t>(len)}});
            if (len <= 96 && contains_v4) {
                out->push_back({AclFamily::kIpv4, AclPrefix{from_u128(kV4Base), 0}});
            }
        }
        const u128 last = a + span(size_bits);
        if (last == b) {
            return;  // also the way out when b is the last address: a + 1 would wrap
        }
        a = last + 1;
    }
}

const char* action_name(AclAction a) {
    static constexpr const char* kNames[] = {"pass", "drop", "bypass"};  // AclAction's order
    const auto i = static_cast<size_t>(a);
    return i < std::size(kNames) ? kNames[i] : "?";
}

std::string to_string(const AclRule& r) {
    return strings::cat(action_name(r.action), " ",
                        r.any_proto ? std::string("any") : std::to_string(r.proto), " ",
                        prefix_text(r.src, r.family), " ", ports_text(r.sport_lo, r.sport_hi),
                        " -> ", prefix_text(r.dst, r.family), " ",
                        ports_text(r.dport_lo, r.dport_hi), " priority ", r.priority);
}

bool rule_matches(const AclRule& r, const FiveTuple& t) {
    if (t.ip_version != 4 && t.ip_version != 6) {
        return false;
    }
    if ((r.family == AclFamily::kIpv4 && t.ip_version != 4) ||
        (r.family == AclFamily::kIpv6 && t.ip_version != 6)) {
        return false;
    }
    if (!prefix_matches(r.src, t.src, t.ip_version) ||
        !prefix_matches(r.dst, t.dst, t.ip_version)) {
        return false;
    }
    if (t.sport < r.sport_lo || t.sport > r.sport_hi || t.dport < r.dport_lo ||
        t.dport > r.dport_hi) {
        return false;
    }
    return r.any_proto || r.proto == t.proto;
}

Verdict linear_lookup(std::span<const AclRule> rules, const FiveTuple& t) {
    Verdict v;
    for (size_t i = 0; i < rules.size(); ++i) {
        const AclRule& r = rules[i];
        // Strictly lower only: an equal priority keeps the earlier rule.
        if (rule_matches(r, t) && (!v.matched() || r.priority < rules[v.rule].priority)) {
            v.rule = static_cast<uint32_t>(i);
            v.action = r.action;
        }
    }
    return v;
}

std::vector<uint32_t> linear_match_all(std::span<const AclRule> rules, const FiveTuple& t) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < rules.size(); ++i) {
        if (rule_matches(rules[i], t)) {
            out.push_back(static_cast<uint32_t>(i));
        }
    }
    std::stable_sort(out.begin(), out.end(),
                     [&](uint32_t a, uint32_t b) { return rules[a].priority < rules[b].priority; });
    return out;
}

}  // namespace picket::sensor::filter
