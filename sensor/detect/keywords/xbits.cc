// xbits:<set|unset|isset|isnotset|toggle>,<name>,track <ip_src|ip_dst|ip_pair>[,expire <s>]
// (Suricata 7): bits per host or per address pair with an expiry, kept in the process-wide
// table of ../flowbits.h. set/unset/toggle are recorded in Rule::xbits and applied by the
// engine after the rule matched (apply_xbit_actions); isset/isnotset also become a
// HeaderOption. expire defaults to 30 seconds and must be above 0; track and expire may come in
// either order, as Suricata reads them by their word.
// xbits:<set|isset>,<name>,track tx (Suricata 8): bits of the app-layer transaction the rule is
// inspected on, kept in the flow's store. Other commands are refused (Suricata 8 has these
// two); an expire is accepted and has no effect (Suricata 8 parses it and never reads it). A tx
// rule must be inspected on transactions: finish_xbits (end of the rule's parse) makes a rule
// whose header names an app-layer protocol an app-layer rule (Rule::app_needed) and refuses one
// with neither such a protocol nor an app-layer buffer. Suricata 8 also wants an explicit
// firewall hook on a tx isset; Picket has no hooks and reads the bit on the transaction
// inspected.
//
// hostbits:<cmd>,<name>[,<src|dst|both>[,[expire ]<s>]] (Suricata 7's per-host bits, "no
// difference from xbits with track ip_<src|dst>"): the same host table as xbits, so
// hostbits:set,x,dst and xbits:isset,x,track ip_src name one bit. Direction src by default.
// hostbits:noalert is the rule's noalert, as in Suricata. Suricata 7 refuses 'both' ("not
// implemented") and any expire, and gives every host bit 300 seconds; Picket keeps that default
// and also takes 'both' (both hosts: set/unset/toggle act on each, isset wants the bit on both,
// isnotset on neither) and an expire.
#include <memory>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"

namespace picket::sensor::detect::keywords {

namespace {

class XbitsOption final : public HeaderOption {
public:
    explicit XbitsOption(XbitOp op) : op_(op) {}
    const char* keyword() const override { return "xbits"; }
    bool match(const PacketContext& pc) const override {
        if (pc.p == nullptr || (pc.p->ip_version == 0 && op_.track != XbitTrack::kTx)) {
            return false;
        }
        return xbit_condition(op_, *pc.p, pc.flowbits, pc.view);
    }
    uint64_t hash() const override {
        uint64_t h = hash_mix(hash_str("xbits"), static_cast<uint64_t>(op_.cmd));
        return hash_mix(hash_mix(h, static_cast<uint64_t>(op_.track)), op_.name_hash);
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const XbitsOption*>(&other);
        return o != nullptr && o->op_.cmd == op_.cmd && o->op_.track == op_.track &&
               o->op_.name_hash == op_.name_hash;
    }

private:
    XbitOp op_;
};

// Suricata 7's lifetime of a host bit set by hostbits (xbits' default is 30 seconds).
constexpr uint32_t kHostbitsExpire = 300;

bool valid_name(std::string_view n) {
    if (n.empty()) {
        return false;
    }
    for (char c : n) {
        if (c == ' ' || c == '\t' || c == ',' || c == ';' || c == '"' || c == '|' || c == '&' ||
            static_cast<unsigned char>(c) < 0x20) {
            return false;
        }
    }
    return true;
}

uint64_t name_hash(std::string_view n) {
    uint64_t h = 1469598103934665603ULL;
    for (char c : n) {
        h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ULL;
    }
    return h;
}

// set/unset/toggle go to Rule::xbits for the engine; isset/isnotset also become an option.
void add_xbit_op(ParseState& st, XbitOp op, std::string_view name) {
    op.name_hash = name_hash(name);
    if (op.cmd == FlowbitCmd::kIsset || op.cmd == FlowbitCmd::kIsnotset) {
        st.rule->header_options.push_back(std::make_unique<XbitsOption>(op));
    } else {
        st.rule->has_xbit_actions = true;
    }
    st.rule->xbits.push_back(op);
}

// "word <value>": a is the word, blanks, then something.
bool word_then_value(std::string_view a, std::string_view word) {
    return a.size() > word.size() + 1 && a.starts_with(word) &&
           (a[word.size()] == ' ' || a[word.size()] == '\t') &&
           !trim_blanks(a.substr(word.size())).empty();
}

bool parse_command(std::string_view kw, std::string_view cmd, FlowbitCmd* out, std::string* error) {
    static constexpr struct {
        const char* text;
        FlowbitCmd cmd;
    } kCmds[] = {{"set", FlowbitCmd::kSet},
                 {"unset", FlowbitCmd::kUnset},
                 {"toggle", FlowbitCmd::kToggle},
                 {"isset", FlowbitCmd::kIsset},
                 {"isnotset", FlowbitCmd::kIsnotset}};
    for (const auto& c : kCmds) {
        if (cmd == c.text) {
            *out = c.cmd;
            return true;
        }
    }
    *error = std::string(kw) + ": unknown command '" + std::string(cmd) +
             (kw == "hostbits" ? "' (set, unset, toggle, isset, isnotset or noalert)"
                               : "' (set, unset, toggle, isset or isnotset)");
    return false;
}

}  // namespace

bool parse_hostbits(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "hostbits: expected <cmd>,<name>[,<src|dst|both>[,expire <seconds>]]";
        return false;
    }
    std::string_view parts[4];
    const int n = split_arguments(s, parts, 4, "hostbits", value, error);
    if (n == 0) {
        return false;
    }
    if (parts[0] == "noalert") {
        if (n > 1) {
            *error = "hostbits: noalert takes no bit name, got '" + std::string(parts[1]) + "'";
            return false;
        }
        st.rule->noalert = true;
        return true;
    }
    XbitOp op;
    op.expire_s = kHostbitsExpire;
    if (!parse_command("hostbits", parts[0], &op.cmd, error)) {
        return false;
    }
    if (n < 2 || !valid_name(parts[1])) {
        *error = "hostbits: invalid bit name '" + std::string(n < 2 ? "" : parts[1]) + "'";
        return false;
    }
    if (n >= 3) {
        if (parts[2] == "src") {
            op.track = XbitTrack::kIpSrc;
        } else if (parts[2] == "dst") {
            op.track = XbitTrack::kIpDst;
        } else if (parts[2] == "both") {
            op.track = XbitTrack::kIpBoth;
        } else if (parts[2].starts_with("track")) {
            *error = "hostbits: invalid direction '" + std::string(parts[2]) +
                     "' (src, dst or both; 'track <ip_src|ip_dst>' is xbits' syntax)";
            return false;
        } else {
            *error =
                "hostbits: invalid direction '" + std::string(parts[2]) + "' (src, dst or both)";
            return false;
        }
    }
    if (n == 4) {
        std::string_view ex = parts[3];
        if (ex.starts_with("expire") && ex.size() > 6 && (ex[6] == ' ' || ex[6] == '\t')) {
            ex = trim_blanks(ex.substr(6));
        }
        uint64_t secs = 0;
        if (!parse_decimal(ex, UINT32_MAX, &secs) || secs == 0) {
            *error = "hostbits: expire must be a number of seconds above 0, got '" +
                     std::string(ex) + "'";
            return false;
        }
        op.expire_s = static_cast<uint32_t>(secs);
    }
    add_xbit_op(st, op, parts[1]);
    return true;
}

bool parse_xbits(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "xbits: expected <cmd>,<name>,track <ip_src|ip_dst|ip_pair|tx>[,expire <seconds>]";
        return false;
    }
    std::string_view parts[4];
    const int n = split_arguments(s, parts, 4, "xbits", value, error);
    if (n == 0) {
        return false;
    }
    XbitOp op;
    const std::string_view cmd = parts[0];
    if (cmd == "set") {
        op.cmd = FlowbitCmd::kSet;
    } else if (cmd == "unset") {
        op.cmd = FlowbitCmd::kUnset;
    } else if (cmd == "toggle") {
        op.cmd = FlowbitCmd::kToggle;
    } else if (cmd == "isset") {
        op.cmd = FlowbitCmd::kIsset;
    } else if (cmd == "isnotset") {
        op.cmd = FlowbitCmd::kIsnotset;
    } else {
        *error = "xbits: unknown command '" + std::string(cmd) +
                 "' (set, unset, toggle, isset or isnotset)";
        return false;
    }
    if (n < 2 || !valid_name(parts[1])) {
        *error = "xbits: invalid bit name '" + std::string(n < 2 ? "" : parts[1]) + "'";
        return false;
    }
    // track and expire, in either order (Suricata reads them by their word).
    std::string_view track;
    std::string_view expire;
    for (int i = 2; i < n; ++i) {
        const std::string_view a = parts[i];
        if (word_then_value(a, "track")) {
            if (!track.empty()) {
                *error = "xbits: track given twice ('" + std::string(a) + "')";
                return false;
            }
            track = trim_blanks(a.substr(5));
        } else if (word_then_value(a, "expire")) {
            if (!expire.empty()) {
                *error = "xbits: expire given twice ('" + std::string(a) + "')";
                return false;
            }
            expire = trim_blanks(a.substr(6));
        } else {
            *error = track.empty()
                         ? "xbits: expected 'track <ip_src|ip_dst|ip_pair|tx>', got '" +
                               std::string(a) + "'"
                         : "xbits: expected 'expire <seconds>', got '" + std::string(a) + "'";
            return false;
        }
    }
    if (track.empty()) {
        *error = "xbits: track <ip_src|ip_dst|ip_pair|tx> is required";
        return false;
    }
    if (track == "ip_src") {
        op.track = XbitTrack::kIpSrc;
    } else if (track == "ip_dst") {
        op.track = XbitTrack::kIpDst;
    } else if (track == "ip_pair") {
        op.track = XbitTrack::kIpPair;
    } else if (track == "tx") {
        if (op.cmd != FlowbitCmd::kSet && op.cmd != FlowbitCmd::kIsset) {
            *error = "xbits: track tx takes set or isset only, not '" + std::string(cmd) +
                     "' (Suricata 8 has no other transaction bit command)";
            return false;
        }
        op.track = XbitTrack::kTx;
    } else {
        *error =
            "xbits: invalid track '" + std::string(track) + "' (ip_src, ip_dst, ip_pair or tx)";
        return false;
    }
    if (!expire.empty()) {
        uint64_t secs = 0;
        if (!parse_decimal(expire, UINT32_MAX, &secs) || secs == 0) {
            *error = "xbits: expire must be a number of seconds above 0, got '" +
                     std::string(expire) + "'";
            return false;
        }
        op.expire_s = static_cast<uint32_t>(secs);
    }
    add_xbit_op(st, op, parts[1]);
    return true;
}

bool finish_xbits(Rule& r, std::string* error) {
    bool tx = false;
    for (const XbitOp& op : r.xbits) {
        tx = tx || op.track == XbitTrack::kTx;
    }
    if (!tx) {
        return true;
    }
    for (const BufferMatch& bm : r.buffers) {
        if (bm.buffer != BufferId::kPacket) {
            return true;  // an app-layer buffer: inspected on transactions
        }
    }
    if (r.app_needed != AppProto::kUnknown) {
        return true;
    }
    if (r.proto.app != AppProto::kUnknown) {
        r.app_needed = r.proto.app;  // alert http ... (xbits:isset,x,track tx;): a tx rule
        return true;
    }
    *error =
        "xbits: track tx needs an app-layer rule (an app-layer protocol in the header, such "
        "as http or dns, or an app-layer buffer)";
    return false;
}

}  // namespace picket::sensor::detect::keywords
