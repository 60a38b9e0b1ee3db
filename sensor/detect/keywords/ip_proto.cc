// ip_proto: the IP protocol of the packet (after IPv6 extension headers), by number or name,
// with an optional !, < or > ([!<>]N). Names come from a built-in copy of /etc/protocols
// (case-insensitive) so that rule loading does not depend on the host's files.
#include "sensor/detect/keywords/keywords.h"

#include <strings.h>
#include <memory>

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

struct ProtoName {
    const char* name;
    uint8_t number;
};

constexpr ProtoName kProtoNames[] = {
    {"hopopt", 0},      {"icmp", 1},         {"igmp", 2},        {"ggp", 3},
    {"ipencap", 4},     {"st", 5},           {"tcp", 6},         {"egp", 8},
    {"igp", 9},         {"pup", 12},         {"udp", 17},        {"hmp", 20},
    {"xns-idp", 22},    {"rdp", 27},         {"iso-tp4", 29},    {"dccp", 33},
    {"xtp", 36},        {"ddp", 37},         {"idpr-cmtp", 38},  {"ipv6", 41},
    {"ipv6-route", 43}, {"ipv6-frag", 44},   {"idrp", 45},       {"rsvp", 46},
    {"gre", 47},        {"esp", 50},         {"ah", 51},         {"skip", 57},
    {"ipv6-icmp", 58},  {"icmpv6", 58},      {"ipv6-nonxt", 59}, {"ipv6-opts", 60},
    {"rspf", 73},       {"vmtp", 81},        {"eigrp", 88},      {"ospf", 89},
    {"ax.25", 93},      {"ipip", 94},        {"etherip", 97},    {"encap", 98},
    {"pim", 103},       {"ipcomp", 108},     {"vrrp", 112},      {"l2tp", 115},
    {"isis", 124},      {"sctp", 132},       {"fc", 133},        {"mobility-header", 135},
    {"udplite", 136},   {"mpls-in-ip", 137}, {"manet", 138},     {"hip", 139},
    {"shim6", 140},     {"wesp", 141},       {"rohc", 142},
};

enum class ProtoOp : uint8_t { kEq, kNot, kLt, kGt };

class IpProtoOption final : public HeaderOption {
public:
    IpProtoOption(ProtoOp op, uint8_t proto) : op_(op), proto_(proto) {}
    const char* keyword() const override { return "ip_proto"; }
    bool match(const PacketContext& pc) const override {
        if (pc.p == nullptr || pc.p->ip_version == 0) {
            return false;
        }
        uint8_t v = pc.p->proto;
        switch (op_) {
            case ProtoOp::kEq:
                return v == proto_;
            case ProtoOp::kNot:
                return v != proto_;
            case ProtoOp::kLt:
                return v < proto_;
            case ProtoOp::kGt:
                return v > proto_;
        }
        return false;
    }
    uint64_t hash() const override {
        return hash_mix(hash_mix(hash_str("ip_proto"), static_cast<uint64_t>(op_)), proto_);
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const IpProtoOption*>(&other);
        return o != nullptr && o->op_ == op_ && o->proto_ == proto_;
    }

private:
    ProtoOp op_;
    uint8_t proto_;
};

}  // namespace

bool parse_ip_proto(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "ip_proto: a protocol number or name is required";
        return false;
    }
    std::string_view text = s;
    ProtoOp op = ProtoOp::kEq;
    if (s[0] == '!' || s[0] == '<' || s[0] == '>') {
        op = s[0] == '!' ? ProtoOp::kNot : s[0] == '<' ? ProtoOp::kLt : ProtoOp::kGt;
        s = trim_blanks(s.substr(1));
    }
    uint64_t number = 0;
    bool found = false;
    if (!s.empty() && s[0] >= '0' && s[0] <= '9') {
        if (!parse_decimal(s, 255, &number)) {
            *error = "ip_proto: invalid protocol number '" + std::string(text) + "' (0-255)";
            return false;
        }
        found = true;
    } else {
        for (const ProtoName& n : kProtoNames) {
            if (std::string_view(n.name).size() == s.size() &&
                strncasecmp(n.name, s.data(), s.size()) == 0) {
                number = n.number;
                found = true;
                break;
            }
        }
    }
    if (!found) {
        *error = "ip_proto: unknown protocol '" + std::string(text) + "'";
        return false;
    }
    if ((op == ProtoOp::kLt && number == 0) || (op == ProtoOp::kGt && number == 255)) {
        *error = "ip_proto: '" + std::string(text) + "' can never match";
        return false;
    }
    st.rule->header_options.push_back(
        std::make_unique<IpProtoOption>(op, static_cast<uint8_t>(number)));
    return true;
}

}  // namespace picket::sensor::detect::keywords
