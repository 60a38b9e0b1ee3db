// acl.rules parser (syntax: docs/acl.md). One rule per line:
//   ACTION PROTO SRC SPORT (->|<>) DST DPORT [priority N]
// Lists ([a, b]) and "<>" expand into several AclRules; icmp expands per family. Control
// thread only; errors name source:line and what is wrong.
#include "sensor/filter/filter.h"

#include <arpa/inet.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/strings.h"

namespace picket::sensor::filter {

namespace {

using strings::cat;

constexpr uint32_t kDefaultPriority = 1000;
constexpr size_t kMaxRulesPerLine = 100000;
constexpr size_t kMaxErrors = 20;

struct Addr {
    AclFamily family = AclFamily::kAny;  // kAny: the "any" keyword
    AclPrefix prefix;
};

struct Ports {
    uint16_t lo = 0, hi = 65535;
};

struct Proto {
    bool any = true;
    bool icmp = false;    // "icmp": 1 over IPv4, 58 over IPv6
    bool icmpv6 = false;  // "icmpv6": IPv6 only
    uint8_t number = 0;
};

std::string quoted(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    out += s;
    out += '"';
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

// A decimal number of at most `max` (digits only, as strings::parse_u32).
template <class T>
bool parse_uint(std::string_view s, T max, T* out) {
    const std::optional<uint32_t> v = strings::parse_u32(s);
    if (!v || *v > max) {
        return false;
    }
    *out = static_cast<T>(*v);
    return true;
}

// Whitespace-separated tokens; a [...] list is one token even with spaces inside.
bool tokenize(std::string_view line, std::vector<std::string_view>* out, std::string* error) {
    size_t i = 0;
    while (i < line.size()) {
        if (line[i] == ' ' || line[i] == '\t') {
            ++i;
            continue;
        }
        const size_t start = i;
        if (line[i] == '[') {
            const size_t close = line.find(']', i);
            if (close == std::string_view::npos) {
                *error = cat("unterminated list: ", quoted(line.substr(i)), " has no \"]\"");
                return false;
            }
            i = close + 1;
        } else {
            while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
                ++i;
            }
        }
        out->push_back(line.substr(start, i - start));
    }
    return true;
}

// The elements of "[a, b, c]" or the single token itself.
bool list_items(std::string_view tok, std::string_view what, std::vector<std::string_view>* out,
                std::string* error) {
    if (tok.empty() || tok.front() != '[') {
        out->push_back(tok);
        return true;
    }
    std::string_view body = tok.substr(1, tok.size() - 2);
    if (trim(body).empty()) {
        *error = cat("empty ", what, " list");
        return false;
    }
    while (true) {
        const size_t comma = body.find(',');
        const std::string_view item = trim(body.substr(0, comma));
        if (item.empty()) {
            *error = cat("empty item in ", what, " list ", quoted(tok));
            return false;
        }
        if (item == "any" || item.front() == '[') {
            *error = cat(quoted(item), " inside the ", what, " list ", quoted(tok));
            return false;
        }
        out->push_back(item);
        if (comma == std::string_view::npos) {
            return true;
        }
        body.remove_prefix(comma + 1);
    }
}

bool parse_addr(std::string_view text, std::string_view what, Addr* out, std::string* error) {
    if (text == "any") {
        *out = Addr{};
        return true;
    }
    if (!text.empty() && text.front() == '!') {
        *error = cat("negated ", what, " ", quoted(text),
                     " is not supported: write a higher-priority rule for the exception");
        return false;
    }
    const size_t slash = text.find('/');
    const std::string addr(text.substr(0, slash));
    const bool v6 = addr.find(':') != std::string::npos;
    Addr a;
    a.family = v6 ? AclFamily::kIpv6 : AclFamily::kIpv4;
    uint8_t buf[16];
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr.c_str(), buf) != 1) {
        *error = cat("bad ", what, " ", quoted(text), ": not an IPv4 or IPv6 address");
        return false;
    }
    a.prefix.addr = v6 ? decode::Address::from_v6(buf) : decode::Address::from_v4(buf);
    if (v6 && a.prefix.addr.is_v4()) {
        *error = cat("bad ", what, " ", quoted(text),
                     ": an IPv4-mapped IPv6 address never matches, write the IPv4 address");
        return false;
    }
    const uint8_t max = v6 ? 128 : 32;
    a.prefix.len = max;
    if (slash != std::string_view::npos &&
        !parse_uint<uint8_t>(text.substr(slash + 1), max, &a.prefix.len)) {
        *error = cat("bad ", what, " ", quoted(text), ": prefix length must be 0-", max);
        return false;
    }
    *out = a;
    return true;
}

bool parse_ports(std::string_view text, std::string_view what, Ports* out, std::string* error) {
    if (text == "any") {
        *out = Ports{};
        return true;
    }
    Ports p;
    const size_t colon = text.find(':');
    bool ok;
    if (colon == std::string_view::npos) {
        ok = parse_uint<uint16_t>(text, 65535, &p.lo);
        p.hi = p.lo;
    } else {
        const std::string_view lo = text.substr(0, colon), hi = text.substr(colon + 1);
        ok = (lo.empty() || parse_uint<uint16_t>(lo, 65535, &p.lo)) &&
             (hi.empty() || parse_uint<uint16_t>(hi, 65535, &p.hi)) && !(lo.empty() && hi.empty());
    }
    if (!ok) {
        *error = cat("bad ", what, " ", quoted(text),
                     ": expected any, N, N:M, N: or :M with ports 0-65535");
        return false;
    }
    if (p.lo > p.hi) {
        *error = cat("bad ", what, " ", quoted(text), ": range starts after it ends");
        return false;
    }
    *out = p;
    return true;
}

bool parse_proto(std::string_view text, Proto* out, std::string* error) {
    Proto p;
    if (text == "any" || text == "ip") {
        *out = p;
        return true;
    }
    p.any = false;
    // The protocol names; "icmp" takes its number from each rule's family.
    static constexpr struct {
        std::string_view name;
        uint8_t number;
        bool icmp, icmpv6;
    } kNames[] = {
        {"tcp", decode::kProtoTcp, false, false},
        {"udp", decode::kProtoUdp, false, false},
        {"sctp", decode::kProtoSctp, false, false},
        {"icmp", 0, true, false},
        {"icmpv6", decode::kProtoIcmpv6, false, true},
        {"ipv6-icmp", decode::kProtoIcmpv6, false, true},
    };
    const auto* named = std::find_if(std::begin(kNames), std::end(kNames),
                                     [&](const auto& n) { return n.name == text; });
    if (named != std::end(kNames)) {
        p.number = named->number;
        p.icmp = named->icmp;
        p.icmpv6 = named->icmpv6;
    } else if (!parse_uint<uint8_t>(text, 255, &p.number)) {
        *error = cat("unknown protocol ", quoted(text),
                     " (expected any, ip, tcp, udp, sctp, icmp, icmpv6 or a number 0-255)");
        return false;
    }
    *out = p;
    return true;
}

// Every item of a field's list (list_items()), each parsed by
// parse(item, what, &value, error) and appended to out.
template <class T, class Parse>
bool parse_list(std::string_view tok, std::string_view what, Parse&& parse, std::vector<T>* out,
                std::string* error) {
    std::vector<std::string_view> items;
    if (!list_items(tok, what, &items, error)) {
        return false;
    }
    for (std::string_view item : items) {
        T value;
        if (!parse(item, what, &value, error)) {
            return false;
        }
        out->push_back(value);
    }
    return true;
}

bool has_ports(const Proto& p) {
    return !p.any && !p.icmp &&
           (p.number == decode::kProtoTcp || p.number == decode::kProtoUdp ||
            p.number == decode::kProtoSctp);
}

// Parses one non-empty line into rules appended to out; false with *error on a fault.
bool parse_line(std::string_view line, uint32_t line_no, std::vector<AclRule>* out,
                std::string* error) {
    std::vector<std::string_view> tok;
    if (!tokenize(line, &tok, error)) {
        return false;
    }
    static constexpr const char* kShape = "ACTION PROTO SRC SPORT -> DST DPORT [priority N]";
    if (tok.size() < 7) {
        *error = cat("incomplete rule: expected ", kShape);
        return false;
    }
    AclRule base;
    base.id = line_no;
    base.priority = kDefaultPriority;
    if (tok[0] == "pass") {
        base.action = AclAction::kPass;
    } else if (tok[0] == "drop") {
        base.action = AclAction::kDrop;
    } else if (tok[0] == "bypass") {
        base.action = AclAction::kBypass;
    } else {
        *error = cat("unknown action ", quoted(tok[0]), " (expected pass, drop or bypass)");
        return false;
    }
    Proto proto;
    if (!parse_proto(tok[1], &proto, error)) {
        return false;
    }
    if (tok[4] != "->" && tok[4] != "<>") {
        *error = cat("expected \"->\" or \"<>\" after the source port, got ", quoted(tok[4]));
        return false;
    }
    const bool both_ways = tok[4] == "<>";
    size_t i = 7;
    if (i < tok.size() && tok[i] == "priority") {
        if (i + 1 >= tok.size()) {
            *error = "priority needs a number";
            return false;
        }
        if (!parse_uint<uint32_t>(tok[i + 1], 4294967295u, &base.priority)) {
            *error = cat("bad priority ", quoted(tok[i + 1]), ": expected a number 0-4294967295");
            return false;
        }
        i += 2;
    }
    if (i < tok.size()) {
        *error = cat("unexpected ", quoted(tok[i]), " after the rule: expected ", kShape);
        return false;
    }

    std::vector<Addr> src, dst;
    std::vector<Ports> sport, dport;
    // A port other than "any" needs a protocol that has ports.
    auto parse_port_item = [&](std::string_view item, std::string_view what, Ports* p,
                               std::string* err) {
        if (!parse_ports(item, what, p, err)) {
            return false;
        }
        if ((p->lo != 0 || p->hi != 65535) && !has_ports(proto)) {
            *err = cat(what, " ", quoted(item), " needs protocol tcp, udp or sctp, not ",
                       quoted(tok[1]));
            return false;
        }
        return true;
    };
    if (!parse_list(tok[2], "source address", parse_addr, &src, error) ||
        !parse_list(tok[5], "destination address", parse_addr, &dst, error) ||
        !parse_list(tok[3], "source port", parse_port_item, &sport, error) ||
        !parse_list(tok[6], "destination port", parse_port_item, &dport, error)) {
        return false;
    }
    const size_t expansion =
        src.size() * dst.size() * sport.size() * dport.size() * (both_ways ? 2 : 1);
    if (expansion > kMaxRulesPerLine) {
        *error = cat("the lists expand to ", expansion, " rules (the limit is ", kMaxRulesPerLine,
                     " per line)");
        return false;
    }

    const size_t before = out->size();
    bool mixed = false;
    auto emit = [&](AclFamily family, const Addr& s, const Addr& d, uint8_t number) {
        for (const Ports& sp : sport) {
            for (const Ports& dp : dport) {
                AclRule r = base;
                r.family = family;
                r.src = s.prefix;
                r.dst = d.prefix;
                r.sport_lo = sp.lo;
                r.sport_hi = sp.hi;
                r.dport_lo = dp.lo;
                r.dport_hi = dp.hi;
                r.any_proto = proto.any;
                r.proto = proto.any ? 0 : number;
                out->push_back(r);
                if (both_ways) {
                    std::swap(r.src, r.dst);
                    std::swap(r.sport_lo, r.dport_lo);
                    std::swap(r.sport_hi, r.dport_hi);
                    out->push_back(r);
                }
            }
        }
    };
    static constexpr uint8_t kZero[4] = {};
    Addr any4, any6;
    any4.prefix.addr = decode::Address::from_v4(kZero);  // 0.0.0.0/0
    any4.family = AclFamily::kIpv4;
    any6.family = AclFamily::kIpv6;
    for (const Addr& s : src) {
        for (const Addr& d : dst) {
            AclFamily family = s.family == AclFamily::kAny ? d.family : s.family;
            if (s.family != AclFamily::kAny && d.family != AclFamily::kAny &&
                s.family != d.family) {
                mixed = true;
                continue;
            }
            if (proto.icmp && family == AclFamily::kAny) {
                // "icmp any any": ICMPv4 over IPv4 and ICMPv6 over IPv6.
                emit(AclFamily::kIpv4, any4, any4, decode::kProtoIcmp);
                emit(AclFamily::kIpv6, any6, any6, decode::kProtoIcmpv6);
                continue;
            }
            if (proto.icmpv6 && family == AclFamily::kIpv4) {
                mixed = true;
                continue;
            }
            if (proto.icmpv6 && family == AclFamily::kAny) {
                emit(AclFamily::kIpv6, any6, any6, decode::kProtoIcmpv6);
                continue;
            }
            const uint8_t number = proto.icmp ? (family == AclFamily::kIpv6 ? decode::kProtoIcmpv6
                                                                            : decode::kProtoIcmp)
                                              : proto.number;
            const Addr& any_side = family == AclFamily::kIpv4 ? any4 : any6;
            emit(family, s.family == AclFamily::kAny && family != AclFamily::kAny ? any_side : s,
                 d.family == AclFamily::kAny && family != AclFamily::kAny ? any_side : d, number);
        }
    }
    if (out->size() == before) {
        *error = mixed ? "no packet can match: the source and destination (or icmpv6) are of "
                         "different address families"
                       : "the rule expands to nothing";
        return false;
    }
    return true;
}

}  // namespace

absl::StatusOr<std::vector<AclRule>> parse_acl_rules(std::string_view text,
                                                     std::string_view source_name) {
    std::vector<AclRule> rules;
    std::string errors;
    size_t error_count = 0;
    uint32_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        const size_t hash = line.find('#');
        if (hash != std::string_view::npos) {
            line = line.substr(0, hash);
        }
        line = trim(line);
        if (line.empty()) {
            continue;
        }
        std::string error;
        if (parse_line(line, line_no, &rules, &error)) {
            continue;
        }
        if (++error_count <= kMaxErrors) {
            if (!errors.empty()) {
                errors += "\n";
            }
            errors += cat(source_name, ":", line_no, ": ", error);
        }
    }
    if (error_count > kMaxErrors) {
        errors += cat("\n", source_name, ": ", error_count - kMaxErrors, " more errors");
    }
    if (error_count != 0) {
        return absl::InvalidArgumentError(errors);
    }
    return rules;
}

}  // namespace picket::sensor::filter
