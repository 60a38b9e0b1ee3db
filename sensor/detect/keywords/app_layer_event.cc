// app-layer-event:<proto>.<event> — the flow's app-layer parser raised that event on the
// transaction being inspected (HTTP) or on the session (DNS message, TLS, SSH). Names are
// Suricata's (rules/*-events.rules); the table that maps them onto Picket's parser events is
// the inspection contract's (inspect::find_app_event). A name Picket's parsers never raise is
// refused with the name, not loaded as a rule that cannot match.
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

class AppLayerEventOption final : public HeaderOption {
public:
    AppLayerEventOption(AppProto proto, uint8_t bit) : proto_(proto), bit_(bit) {}
    const char* keyword() const override { return "app-layer-event"; }
    bool match(const PacketContext& pc) const override {
        return pc.view != nullptr && pc.view->proto == proto_ &&
               ((pc.view->events >> bit_) & 1U) != 0;
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0xae7e).add(static_cast<uint64_t>(proto_)).add(bit_);
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const AppLayerEventOption*>(&other);
        return o != nullptr && o->proto_ == proto_ && o->bit_ == bit_;
    }

private:
    AppProto proto_;
    uint8_t bit_;
};

}  // namespace

namespace keywords {

bool parse_app_layer_event(ParseState& st, std::string_view value, bool has_value,
                           std::string* error) {
    const std::string name(trim_blanks(value));
    if (!has_value || name.empty()) {
        *error = "app-layer-event: needs a value such as http.missing_host_header";
        return false;
    }
    const inspect::AppEventName* e = inspect::find_app_event(name);
    if (e == nullptr) {
        *error = "app-layer-event: unknown or unsupported event '" + name +
                 "' (Picket raises http.*, dns.*, tls.* and ssh.* events; see docs/rules.md)";
        return false;
    }
    Rule& r = *st.rule;
    const AppProto have = r.proto.app != AppProto::kUnknown ? r.proto.app : r.app_needed;
    if (have != AppProto::kUnknown && have != e->proto) {
        *error = "app-layer-event: '" + name + "' on a rule for another app-layer protocol";
        return false;
    }
    r.app_needed = e->proto;
    r.header_options.push_back(std::make_unique<AppLayerEventOption>(e->proto, e->bit));
    return true;
}

}  // namespace keywords
}  // namespace picket::sensor::detect
