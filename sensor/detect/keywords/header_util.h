// Helpers shared by the header keyword files (ttl, tos, id, itype, icode, seq, ack, window,
// icmp_id, icmp_seq, ...): value parsing with Suricata 7's unsigned-integer grammar and one
// HeaderOption class that compares a packet field against such a value. Internal to
// sensor/detect/keywords. Parsing runs on the control thread; match() on workers (no
// allocation, no branches on anything but the packet).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "sensor/decode/decode.h"
#include "sensor/detect/rule.h"

namespace picket::sensor::detect::keywords {

// Removes one pair of surrounding double quotes ("80" -> 80), as Suricata accepts for numbers.
inline std::string_view unquote(std::string_view s) {
    s = trim_blanks(s);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
        s = trim_blanks(s.substr(1, s.size() - 2));
    }
    return s;
}

// Splits `s` at commas into at most `max` blank-trimmed parts (xbits, flowint, tag). Returns
// the number of parts; 0 with "KEYWORD: too many arguments in 'VALUE'" in *error for more.
inline int split_arguments(std::string_view s, std::string_view* parts, int max,
                           std::string_view keyword, std::string_view value, std::string* error) {
    int n = 0;
    while (true) {
        const size_t comma = s.find(',');
        if (n == max) {
            *error = std::string(keyword) + ": too many arguments in '" + std::string(value) + "'";
            return 0;
        }
        parts[n++] = trim_blanks(s.substr(0, comma));
        if (comma == std::string_view::npos) {
            return n;
        }
        s = s.substr(comma + 1);
    }
}

// Decimal digits only (no sign, no spaces); false on empty, junk or a value above max.
inline bool parse_decimal(std::string_view s, uint64_t max, uint64_t* out) {
    if (s.empty() || s.size() > 20) {
        return false;
    }
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') {
            return false;
        }
        uint64_t d = static_cast<uint64_t>(c - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (v > max) {
        return false;
    }
    *out = v;
    return true;
}

inline uint64_t hash_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

inline uint64_t hash_str(const char* s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s != '\0'; ++s) {
        h = (h ^ static_cast<uint8_t>(*s)) * 1099511628211ULL;
    }
    return h;
}

// ICMP messages that carry an identifier and a sequence number: ICMPv4 echo reply (0), echo
// (8), timestamp (13/14), information (15/16), address mask (17/18); ICMPv6 echo (128/129).
inline bool icmp_has_id_seq(const decode::Packet& p) {
    if (p.has(decode::kFlagIcmpv4)) {
        return p.icmp_type == 0 || p.icmp_type == 8 || (p.icmp_type >= 13 && p.icmp_type <= 18);
    }
    if (p.has(decode::kFlagIcmpv6)) {
        return p.icmp_type == 128 || p.icmp_type == 129;
    }
    return false;
}

// Which packets carry a header keyword's field.
inline bool has_ip(const decode::Packet& p) {
    return p.ip_version == 4 || p.ip_version == 6;
}
inline bool has_ipv4(const decode::Packet& p) {
    return p.ip_version == 4;
}
inline bool has_tcp(const decode::Packet& p) {
    return p.has(decode::kFlagTcp);
}
inline bool has_icmp(const decode::Packet& p) {
    return p.has(decode::kFlagIcmpv4) || p.has(decode::kFlagIcmpv6);
}

// The getter of a header keyword: the packet's field Member, when Has(p) says the packet
// carries it (ttl: packet_field<has_ip, &decode::Packet::ttl>).
template <bool (*Has)(const decode::Packet&), auto Member>
bool packet_field(const decode::Packet& p, uint64_t* out) {
    if (!Has(p)) {
        return false;
    }
    *out = p.*Member;
    return true;
}

enum class UintMode : uint8_t { kEq, kNe, kLt, kLte, kGt, kGte, kRange, kNotRange };

// A comparison in Suricata's integer-keyword grammar (docs: "Integer Keywords"): N, =N, !N,
// !=N, <N, <=N, >N, >=N, N-M or N<>M (exclusive: N < v < M), !N-M (outside that range).
// Shared by every keyword that compares a number this way: ttl, itype, icode (u8), dsize,
// urilen (u16), bsize (u64), and the header keywords built on FieldOption.
struct UintSpec {
    UintMode mode = UintMode::kEq;
    uint64_t a = 0, b = 0;

    bool match(uint64_t v) const {
        switch (mode) {
            case UintMode::kEq:
                return v == a;
            case UintMode::kNe:
                return v != a;
            case UintMode::kLt:
                return v < a;
            case UintMode::kLte:
                return v <= a;
            case UintMode::kGt:
                return v > a;
            case UintMode::kGte:
                return v >= a;
            case UintMode::kRange:
                return v > a && v < b;
            case UintMode::kNotRange:
                return v <= a || v >= b;
        }
        return false;
    }
    bool operator==(const UintSpec& o) const { return mode == o.mode && a == o.a && b == o.b; }
    uint64_t hash() const { return hash_mix(hash_mix(static_cast<uint64_t>(mode), a), b); }
};

// One number of the grammar: decimal digits, or 0x / 0X and hex digits (Suricata's integer
// keywords accept both), blanks around it ignored. kInvalid: empty or not a number;
// kOutOfRange: a number above max (also one too long for 64 bits).
enum class NumberParse : uint8_t { kOk, kInvalid, kOutOfRange };
NumberParse parse_uint_number(std::string_view s, uint64_t max, uint64_t* out);

// Parses text (quotes and blanks allowed around it, blanks around operators and range
// separators) into spec, values in [0, max]. Every message names the keyword, the value and
// the limit:
//   "<kw>: invalid value '<text>' (expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M with
//    N from 0 to <max>)"
//   "<kw>: value out of range 0-<max> in '<text>'"
//   "<kw>: invalid range '<text>' (the first value must be below the second)"
//   "<kw>: '<text>' can never match (values are 0-<max>)" / "... always matches (...)"
bool parse_uint_spec(const char* kw, std::string_view text, uint64_t max, UintSpec* spec,
                     std::string* error);

// Exact value with an optional leading '!' ([!]N), quotes allowed: tos (also x1F / 0x1F hex),
// window, seq, ack, id, icmp_id, icmp_seq, dns.opcode. Messages as parse_uint_spec's, the
// invalid one ending "(expected N[ or !N] with N from 0 to <max>)".
bool parse_exact_spec(const char* kw, std::string_view text, uint64_t max, bool allow_not,
                      bool allow_hex, UintSpec* spec, std::string* error);

// Reads one field of the packet; false when the packet does not have it (wrong protocol),
// in which case the option does not match.
using FieldGetter = bool (*)(const decode::Packet& p, uint64_t* out);

// One HeaderOption for every "compare a header field against a UintSpec" keyword.
class FieldOption final : public HeaderOption {
public:
    FieldOption(const char* kw, FieldGetter get, const UintSpec& spec)
        : kw_(kw), get_(get), spec_(spec) {}
    const char* keyword() const override { return kw_; }
    bool match(const PacketContext& pc) const override {
        uint64_t v = 0;
        return pc.p != nullptr && get_(*pc.p, &v) && spec_.match(v);
    }
    uint64_t hash() const override { return hash_mix(hash_str(kw_), spec_.hash()); }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const FieldOption*>(&other);
        return o != nullptr && std::strcmp(o->kw_, kw_) == 0 && o->get_ == get_ &&
               o->spec_ == spec_;
    }
    const UintSpec& spec() const { return spec_; }

private:
    const char* kw_;
    FieldGetter get_;
    UintSpec spec_;
};

// Appends a FieldOption after parsing value with parse_uint_spec; shared by ttl/itype/icode.
bool add_uint_option(ParseState& st, const char* kw, std::string_view value, bool has_value,
                     uint64_t max, FieldGetter get, std::string* error);
// Same with parse_exact_spec.
bool add_exact_option(ParseState& st, const char* kw, std::string_view value, bool has_value,
                      uint64_t max, bool allow_not, bool allow_hex, FieldGetter get,
                      std::string* error);

}  // namespace picket::sensor::detect::keywords
