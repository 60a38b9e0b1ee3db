// app-layer-protocol:[!]<protocol> (Suricata 7) — the app-layer protocol detected on the
// direction of the packet: true once that direction's protocol is known and is (with '!': is
// not) <protocol>; "failed" is a flow whose protocol detection gave up. Before the direction's
// protocol is known neither form matches. A rule whose only condition is this keyword (plus
// flow:to_server/to_client, flowbits:set and meta options) is Suricata's protocol-detection-only
// rule: the compiler marks it Rule::pd_only and it is checked only on the packet where the
// direction's detection finished (docs/rules.md, "Protocol-only rules").
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

class AppLayerProtocolOption final : public HeaderOption {
public:
    // proto kUnknown with failed: the "failed" value.
    AppLayerProtocolOption(AppProto proto, bool failed, bool negated)
        : proto_(proto), failed_(failed), negated_(negated) {}
    const char* keyword() const override { return "app-layer-protocol"; }
    bool match(const PacketContext& pc) const override {
        if (pc.flow == nullptr) {
            return false;
        }
        const uint8_t pd = pc.flow->proto_detect;
        if ((pd & flow::proto_detect_done(pc.dir)) == 0) {
            return false;  // this direction's protocol is not known yet
        }
        const bool flow_failed = (pd & flow::kProtoDetectFailed) != 0;
        const bool is = failed_ ? flow_failed : !flow_failed && pc.app == proto_;
        return negated_ ? !is : is;
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0xa1970).add(static_cast<uint64_t>(proto_)).add(failed_).add(negated_);
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const AppLayerProtocolOption*>(&other);
        return o != nullptr && o->proto_ == proto_ && o->failed_ == failed_ &&
               o->negated_ == negated_;
    }
    bool negated() const { return negated_; }
    bool same_value(const AppLayerProtocolOption& o) const {
        return o.proto_ == proto_ && o.failed_ == failed_;
    }

private:
    AppProto proto_;
    bool failed_;
    bool negated_;
};

// The protocols Picket detects, by Suricata's names.
bool detected_proto(std::string_view name, AppProto* out) {
    struct Entry {
        const char* name;
        AppProto proto;
    };
    static constexpr Entry kNames[] = {
        {"http", AppProto::kHttp},        {"http1", AppProto::kHttp}, {"dns", AppProto::kDns},
        {"tls", AppProto::kTls},          {"ssh", AppProto::kSsh},    {"ftp", AppProto::kFtp},
        {"ftp-data", AppProto::kFtpData},
    };
    for (const Entry& e : kNames) {
        if (name == e.name) {
            *out = e.proto;
            return true;
        }
    }
    return false;
}

}  // namespace

namespace keywords {

bool parse_app_layer_protocol(ParseState& st, std::string_view value, bool has_value,
                              std::string* error) {
    const std::string_view written = trim_blanks(value);
    std::string_view v = written;
    const bool negated = !v.empty() && v.front() == '!';
    if (negated) {
        v = trim_blanks(v.substr(1));
    }
    if (!has_value || v.empty()) {
        *error = "app-layer-protocol: needs a protocol such as http, !tls or failed";
        return false;
    }
    std::string name(v);
    for (char& c : name) {
        c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    }
    if (name.find(',') != std::string::npos) {
        *error = "app-layer-protocol: '" + std::string(written) +
                 "': a mode after the protocol is Suricata 8's (Suricata 7 takes one protocol)";
        return false;
    }
    AppProto proto = AppProto::kUnknown;
    const bool failed = name == "failed";
    if (!failed && !detected_proto(name, &proto)) {
        *error = "app-layer-protocol: unknown or undetected protocol '" + std::string(v) +
                 "' (Picket detects http, dns, tls, ssh, ftp and ftp-data; also 'failed')";
        return false;
    }
    Rule& r = *st.rule;
    if (r.proto.app != AppProto::kUnknown) {
        *error = "app-layer-protocol: the rule header already names an app-layer protocol";
        return false;
    }
    // As Suricata: negated values may be combined (all must hold); a positive one stands alone.
    auto neu = std::make_unique<AppLayerProtocolOption>(proto, failed, negated);
    for (const auto& h : r.header_options) {
        const auto* o = dynamic_cast<const AppLayerProtocolOption*>(h.get());
        if (o == nullptr) {
            continue;
        }
        if (o->negated() != negated || !negated) {
            *error =
                "app-layer-protocol: can't mix a positive match with another "
                "app-layer-protocol (only negated ones combine)";
            return false;
        }
        if (o->same_value(*neu)) {
            *error = "app-layer-protocol: '" + std::string(written) + "' given twice";
            return false;
        }
    }
    r.header_options.push_back(std::move(neu));
    return true;
}

}  // namespace keywords
}  // namespace picket::sensor::detect
