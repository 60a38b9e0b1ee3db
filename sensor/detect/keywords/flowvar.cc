// flowvar:<name>,<content> and pktvar:<name>,<content> (Suricata 7): match when the flow's (the
// packet's) string variable <name> holds <content> (Suricata's flowvar match looks for the
// content in the value: a substring, case-sensitive). <content> is written like a content
// pattern, quoted, with |hex| bytes; no negation. The variables are set by pcre captures
// (pcre.cc) once their rule matched; a packet variable lasts for the packet's inspection. Like
// Suricata, the check runs with the rule's other header options, before its payload, so a
// capture of the same rule is seen from the next rule on. Names are interned per scope
// (FlowbitRegistry::intern_var).
#include <memory>
#include <string>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"

namespace picket::sensor::detect::keywords {

namespace {

class VarMatchOption final : public HeaderOption {
public:
    VarMatchOption(VarScope scope, uint16_t var, std::string content)
        : scope_(scope), var_(var), content_(std::move(content)) {}
    const char* keyword() const override {
        return scope_ == VarScope::kFlow ? "flowvar" : "pktvar";
    }
    bool match(const PacketContext& pc) const override {
        const VarSet* set = scope_ == VarScope::kFlow
                                ? (pc.flowbits != nullptr ? pc.flowbits->vars : nullptr)
                                : pc.pkt_vars;
        std::string_view v;
        return set != nullptr && set->get(var_, &v) && v.find(content_) != std::string_view::npos;
    }
    uint64_t hash() const override {
        uint64_t h = hash_mix(hash_str(keyword()), var_);
        for (char c : content_) {
            h = hash_mix(h, static_cast<uint8_t>(c));
        }
        return h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const VarMatchOption*>(&other);
        return o != nullptr && o->scope_ == scope_ && o->var_ == var_ && o->content_ == content_;
    }

private:
    VarScope scope_;
    uint16_t var_;
    std::string content_;
};

bool parse_var(VarScope scope, ParseState& st, std::string_view value, bool has_value,
               std::string* error) {
    const std::string kw = scope == VarScope::kFlow ? "flowvar" : "pktvar";
    value = trim_blanks(value);
    const size_t comma = value.find(',');
    if (!has_value || comma == std::string_view::npos) {
        *error = kw + ": expected <name>,\"<content>\"";
        return false;
    }
    const std::string_view name = trim_blanks(value.substr(0, comma));
    bool name_ok = !name.empty();
    for (char c : name) {
        name_ok = name_ok && c != ' ' && c != '\t' && c != '"' && c != ';' &&
                  static_cast<unsigned char>(c) >= 0x20;
    }
    if (!name_ok) {
        *error = kw + ": invalid variable name '" + std::string(name) + "'";
        return false;
    }
    std::string content;
    bool negated = false;
    if (!parse_content_string(kw, value.substr(comma + 1), &content, &negated, error)) {
        return false;
    }
    if (negated) {
        *error = kw + ": a negated content is not supported";
        return false;
    }
    if (content.size() > kMaxVarLen) {
        *error = kw + ": content longer than " + std::to_string(kMaxVarLen) +
                 " bytes never matches (values keep " + std::to_string(kMaxVarLen) + ")";
        return false;
    }
    uint16_t id = 0;
    if (st.flowbits == nullptr) {
        *error = kw + ": no variable registry";
        return false;
    }
    if (!st.flowbits->intern_var(scope, name, &id)) {
        *error = kw + ": more than " + std::to_string(kMaxVarNames) + " variable names";
        return false;
    }
    st.rule->header_options.push_back(
        std::make_unique<VarMatchOption>(scope, id, std::move(content)));
    return true;
}

}  // namespace

bool parse_flowvar(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return parse_var(VarScope::kFlow, st, value, has_value, error);
}

bool parse_pktvar(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    return parse_var(VarScope::kPacket, st, value, has_value, error);
}

}  // namespace picket::sensor::detect::keywords
