// sameip: the packet's source and destination addresses are equal (IP packets only).
#include "sensor/detect/keywords/keywords.h"

#include <memory>

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

class SameIpOption final : public HeaderOption {
public:
    const char* keyword() const override { return "sameip"; }
    bool match(const PacketContext& pc) const override {
        return pc.p != nullptr && pc.p->ip_version != 0 && pc.p->src == pc.p->dst;
    }
    uint64_t hash() const override { return hash_str("sameip"); }
    bool equals(const HeaderOption& other) const override {
        return dynamic_cast<const SameIpOption*>(&other) != nullptr;
    }
};

}  // namespace

bool parse_sameip(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (has_value && !trim_blanks(value).empty()) {
        *error = "sameip: takes no value";
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<SameIpOption>());
    return true;
}

}  // namespace picket::sensor::detect::keywords
