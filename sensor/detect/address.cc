// Address and port specs of the rule header, and the variables they may use. Specs are
// evaluated as set algebra on sorted, disjoint ranges: a list is the union of its positive
// items minus the union of its negated items (a list of negations only starts from "any"),
// which is how Suricata resolves [10.0.0.0/8,!10.1.0.0/16] and nested lists.
#include "sensor/detect/parser.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/strings.h"

namespace picket::sensor::detect {
unsigned __int128 address_to_u128(const decode::Address& a) {
    unsigned __int128 v = 0;
    for (uint8_t byte : a.b) {
        v = (v << 8) | byte;
    }
    return v;
}

decode::Address address_from_u128(unsigned __int128 v) {
    decode::Address a;
    for (int i = 15; i >= 0; --i) {
        a.b[i] = static_cast<uint8_t>(v & 0xff);
        v >>= 8;
    }
    return a;
}

namespace {

using U128 = unsigned __int128;
using Range = std::pair<U128, U128>;  // inclusive
using RangeList = std::vector<Range>;

constexpr U128 kMaxAddress = ~U128{0};
constexpr U128 kMaxPort = 65535;
constexpr int kMaxVarDepth = 32;

U128 to_u128(const decode::Address& a) {
    return address_to_u128(a);
}
decode::Address from_u128(U128 v) {
    return address_from_u128(v);
}

// Sorts and merges overlapping or adjacent ranges.
RangeList normalise(RangeList r) {
    std::sort(r.begin(), r.end());
    RangeList out;
    for (const Range& x : r) {
        if (!out.empty() &&
            (out.back().second == kMaxAddress || x.first <= out.back().second + 1)) {
            out.back().second = std::max(out.back().second, x.second);
        } else {
            out.push_back(x);
        }
    }
    return out;
}

// a minus b; both normalised.
RangeList subtract(const RangeList& a, const RangeList& b) {
    RangeList out;
    for (Range x : a) {
        bool alive = true;
        for (const Range& y : b) {
            if (y.second < x.first || y.first > x.second) {
                continue;
            }
            if (y.first > x.first) {
                out.emplace_back(x.first, y.first - 1);
            }
            if (y.second >= x.second) {
                alive = false;
                break;
            }
            x.first = y.second + 1;
        }
        if (alive) {
            out.push_back(x);
        }
    }
    return out;
}

struct SpecParser {
    enum Kind { kAddress, kPort } kind;
    const VarTable* vars;
    std::vector<std::string> var_stack;
    std::string error;

    U128 max() const { return kind == kAddress ? kMaxAddress : kMaxPort; }
    const char* what() const { return kind == kAddress ? "address" : "port"; }

    bool fail(std::string msg) {
        if (error.empty()) {
            error = std::move(msg);
        }
        return false;
    }
    bool bad(std::string_view part) {
        return fail(std::string("bad ") + what() + " '" + std::string(part) + "'");
    }

    bool parse(std::string_view text, RangeList* out) {
        text = trim_blanks(text);
        if (text.empty()) {
            return fail(std::string("empty ") + what());
        }
        if (text.front() == '!') {
            RangeList inner;
            if (!parse(text.substr(1), &inner)) {
                return false;
            }
            *out = subtract({{0, max()}}, inner);
            return true;
        }
        if (text.front() == '[') {
            return parse_list(text, out);
        }
        if (text.front() == '$') {
            return parse_var(text, out);
        }
        if (text == "any") {
            *out = {{0, max()}};
            return true;
        }
        return kind == kAddress ? parse_address(text, out) : parse_port(text, out);
    }

    bool parse_list(std::string_view text, RangeList* out) {
        if (text.back() != ']') {
            return fail(std::string("bad ") + what() + " list '" + std::string(text) + "'");
        }
        std::string_view body = text.substr(1, text.size() - 2);
        RangeList pos, neg;
        bool any_pos = false;
        int depth = 0;
        size_t start = 0;
        for (size_t i = 0; i <= body.size(); ++i) {
            const char c = i < body.size() ? body[i] : ',';
            if (c == '[') {
                ++depth;
            } else if (c == ']') {
                if (--depth < 0) {
                    return fail(std::string("bad ") + what() + " list '" + std::string(text) + "'");
                }
            } else if (c == ',' && depth == 0) {
                std::string_view item = trim_blanks(body.substr(start, i - start));
                start = i + 1;
                if (item.empty()) {
                    return fail(std::string("empty item in ") + what() + " list '" +
                                std::string(text) + "'");
                }
                RangeList r;
                if (item.front() == '!') {
                    if (!parse(item.substr(1), &r)) {
                        return false;
                    }
                    neg.insert(neg.end(), r.begin(), r.end());
                } else {
                    if (!parse(item, &r)) {
                        return false;
                    }
                    any_pos = true;
                    pos.insert(pos.end(), r.begin(), r.end());
                }
            }
        }
        if (depth != 0) {
            return fail(std::string("bad ") + what() + " list '" + std::string(text) + "'");
        }
        RangeList base = any_pos ? normalise(std::move(pos)) : RangeList{{0, max()}};
        *out = subtract(base, normalise(std::move(neg)));
        return true;
    }

    bool parse_var(std::string_view text, RangeList* out) {
        std::string name(text.substr(1));
        const std::map<std::string, std::string, std::less<>>* table = nullptr;
        if (vars != nullptr) {
            table = kind == kAddress ? &vars->address : &vars->port;
        }
        if (table == nullptr || table->find(name) == table->end()) {
            return fail(std::string("unknown ") + what() + " variable '$" + name + "'");
        }
        const std::string& value = table->find(name)->second;
        if (std::find(var_stack.begin(), var_stack.end(), name) != var_stack.end() ||
            var_stack.size() >= static_cast<size_t>(kMaxVarDepth)) {
            return fail(std::string(what()) + " variable loop at '$" + name + "'");
        }
        var_stack.push_back(name);
        const bool ok = parse(value, out);
        var_stack.pop_back();
        return ok;
    }

    static bool parse_uint(std::string_view s, uint32_t max_value, uint32_t* out) {
        const auto n = strings::parse_u32(s);
        if (!n || *n > max_value) {
            return false;
        }
        *out = *n;
        return true;
    }

    // One address without prefix: v4 lands in the v4-mapped space.
    static bool parse_ip(std::string_view s, U128* out, bool* v4) {
        char buf[64];
        if (s.empty() || s.size() >= sizeof(buf)) {
            return false;
        }
        std::memcpy(buf, s.data(), s.size());
        buf[s.size()] = '\0';
        uint8_t bytes[16];
        if (s.find(':') == std::string_view::npos) {
            if (inet_pton(AF_INET, buf, bytes) != 1) {
                return false;
            }
            *out = to_u128(decode::Address::from_v4(bytes));
            *v4 = true;
            return true;
        }
        if (inet_pton(AF_INET6, buf, bytes) != 1) {
            return false;
        }
        *out = to_u128(decode::Address::from_v6(bytes));
        *v4 = false;
        return true;
    }

    bool parse_address(std::string_view text, RangeList* out) {
        if (const size_t dash = text.find('-'); dash != std::string_view::npos) {
            U128 lo, hi;
            bool v4a, v4b;
            if (!parse_ip(trim_blanks(text.substr(0, dash)), &lo, &v4a) ||
                !parse_ip(trim_blanks(text.substr(dash + 1)), &hi, &v4b) || v4a != v4b || lo > hi) {
                return bad(text);
            }
            *out = {{lo, hi}};
            return true;
        }
        const size_t slash = text.find('/');
        U128 addr;
        bool v4;
        if (!parse_ip(text.substr(0, slash), &addr, &v4)) {
            return bad(text);
        }
        uint32_t prefix = 128;
        if (slash != std::string_view::npos) {
            std::string_view p = text.substr(slash + 1);
            U128 mask_addr;
            bool mask_v4;
            if (parse_uint(p, v4 ? 32 : 128, &prefix)) {
                if (v4) {
                    prefix += 96;
                }
            } else if (v4 && p.find('.') != std::string_view::npos &&
                       parse_ip(p, &mask_addr, &mask_v4)) {
                // a.b.c.d/255.255.255.0: the mask must be contiguous ones.
                const auto m = static_cast<uint32_t>(mask_addr);
                const uint32_t inv = ~m;
                if ((inv & (inv + 1)) != 0) {
                    return bad(text);
                }
                prefix = 96 + static_cast<uint32_t>(__builtin_popcount(m));
            } else {
                return bad(text);
            }
        }
        const U128 host = prefix >= 128 ? U128{0} : (kMaxAddress >> prefix);
        const U128 lo = addr & ~host;
        *out = {{lo, lo | host}};
        return true;
    }

    bool parse_port(std::string_view text, RangeList* out) {
        const size_t colon = text.find(':');
        uint32_t lo = 0, hi = 65535;
        if (colon == std::string_view::npos) {
            if (!parse_uint(text, 65535, &lo)) {
                return bad(text);
            }
            hi = lo;
        } else {
            std::string_view a = trim_blanks(text.substr(0, colon));
            std::string_view b = trim_blanks(text.substr(colon + 1));
            if ((a.empty() && b.empty()) || (!a.empty() && !parse_uint(a, 65535, &lo)) ||
                (!b.empty() && !parse_uint(b, 65535, &hi)) || lo > hi) {
                return bad(text);
            }
        }
        *out = {{lo, hi}};
        return true;
    }
};

// Runs the parser and checks the result is not empty (Suricata rejects "!any" and lists that
// cancel out).
bool run(SpecParser& p, std::string_view text, RangeList* out, std::string* error) {
    RangeList r;
    if (!p.parse(text, &r)) {
        *error = p.error;
        return false;
    }
    *out = normalise(std::move(r));
    if (out->empty()) {
        *error =
            std::string(p.what()) + " '" + std::string(trim_blanks(text)) + "' matches nothing";
        return false;
    }
    return true;
}

// Keeps whichever of (include R) or (any minus complement of R) has fewer ranges.
template <typename Set, typename Conv>
void store(const RangeList& r, U128 max, Set* out, Conv conv) {
    out->include.clear();
    out->exclude.clear();
    out->any = false;
    const RangeList c = subtract({{0, max}}, r);
    if (c.empty()) {
        out->any = true;
        return;
    }
    const bool as_exclusion = c.size() < r.size();
    auto& dst = as_exclusion ? out->exclude : out->include;
    out->any = as_exclusion;
    for (const Range& x : as_exclusion ? c : r) {
        dst.push_back(conv(x));
    }
}

template <typename Ranges, typename T, typename Less>
bool in_ranges(const Ranges& ranges, const T& v, Less less) {
    // Ranges are sorted and disjoint: the candidate is the last range with lo <= v.
    auto it = std::upper_bound(ranges.begin(), ranges.end(), v,
                               [&](const T& x, const auto& r) { return less(x, r.lo); });
    if (it == ranges.begin()) {
        return false;
    }
    --it;
    return !less(it->hi, v);
}

}  // namespace

bool AddressSet::contains(const decode::Address& a) const {
    auto less = [](const decode::Address& x, const decode::Address& y) { return x < y; };
    if (!any && !in_ranges(include, a, less)) {
        return false;
    }
    return exclude.empty() || !in_ranges(exclude, a, less);
}

bool PortSet::contains(uint16_t port) const {
    auto less = [](uint16_t x, uint16_t y) { return x < y; };
    if (!any && !in_ranges(include, port, less)) {
        return false;
    }
    return exclude.empty() || !in_ranges(exclude, port, less);
}

bool parse_address_spec(std::string_view text, const VarTable* vars, AddressSet* out,
                        std::string* error) {
    SpecParser p{SpecParser::kAddress, vars, {}, {}};
    RangeList r;
    if (!run(p, text, &r, error)) {
        return false;
    }
    store(r, kMaxAddress, out, [](const Range& x) {
        return IpRange{from_u128(x.first), from_u128(x.second)};
    });
    return true;
}

bool parse_port_spec(std::string_view text, const VarTable* vars, PortSet* out,
                     std::string* error) {
    SpecParser p{SpecParser::kPort, vars, {}, {}};
    RangeList r;
    if (!run(p, text, &r, error)) {
        return false;
    }
    store(r, kMaxPort, out, [](const Range& x) {
        return PortRange{static_cast<uint16_t>(x.first), static_cast<uint16_t>(x.second)};
    });
    return true;
}

VarTable VarTable::suricata_defaults() {
    VarTable v;
    v.address = {
        {"HOME_NET", "[192.168.0.0/16,10.0.0.0/8,172.16.0.0/12]"},
        {"EXTERNAL_NET", "!$HOME_NET"},
        {"HTTP_SERVERS", "$HOME_NET"},
        {"SMTP_SERVERS", "$HOME_NET"},
        {"SQL_SERVERS", "$HOME_NET"},
        {"DNS_SERVERS", "$HOME_NET"},
        {"TELNET_SERVERS", "$HOME_NET"},
        {"AIM_SERVERS", "$EXTERNAL_NET"},  // as in Suricata 7's suricata.yaml
        {"DC_SERVERS", "$HOME_NET"},
        {"DNP3_SERVER", "$HOME_NET"},
        {"DNP3_CLIENT", "$HOME_NET"},
        {"MODBUS_CLIENT", "$HOME_NET"},
        {"MODBUS_SERVER", "$HOME_NET"},
        {"ENIP_CLIENT", "$HOME_NET"},
        {"ENIP_SERVER", "$HOME_NET"},
    };
    v.port = {
        {"HTTP_PORTS", "80"},
        {"SHELLCODE_PORTS", "!80"},
        {"ORACLE_PORTS", "1521"},
        {"SSH_PORTS", "22"},
        {"DNP3_PORTS", "20000"},
        {"MODBUS_PORTS", "502"},
        {"FILE_DATA_PORTS", "[$HTTP_PORTS,110,143]"},
        {"FTP_PORTS", "21"},
        {"GENEVE_PORTS", "6081"},
        {"VXLAN_PORTS", "4789"},
        {"TEREDO_PORTS", "3544"},
    };
    return v;
}

VarTable VarTable::with_overrides(const std::map<std::string, std::string>& address_vars,
                                  const std::map<std::string, std::string>& port_vars) {
    VarTable v = suricata_defaults();
    for (const auto& [name, value] : address_vars) {
        v.address[name] = value;
    }
    for (const auto& [name, value] : port_vars) {
        v.port[name] = value;
    }
    return v;
}

bool VarTable::validate(std::string* error) const {
    std::string e;
    for (const auto& [name, value] : address) {
        AddressSet s;
        if (!parse_address_spec("$" + name, this, &s, &e)) {
            *error = "address variable " + name + ": " + e;
            return false;
        }
    }
    for (const auto& [name, value] : port) {
        PortSet s;
        if (!parse_port_spec("$" + name, this, &s, &e)) {
            *error = "port variable " + name + ": " + e;
            return false;
        }
    }
    return true;
}

}  // namespace picket::sensor::detect
