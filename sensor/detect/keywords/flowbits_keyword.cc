// flowbits: set, unset, toggle, isset, isnotset, noalert. Names joined by '|' mean "any"
// (isset/isnotset only, Suricata's or-list) and by '&' mean "all" (Snort 2.9; any command).
// Every operation is recorded in Rule::flowbits (actions are applied by the engine after a
// match, through apply_flowbit_actions); conditions also become a HeaderOption reading
// PacketContext::flowbits. flowbits:noalert sets Rule::noalert.
#include "sensor/detect/keywords/keywords.h"

#include <algorithm>
#include <memory>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

class FlowbitsOption final : public HeaderOption {
public:
    explicit FlowbitsOption(FlowbitOp op) : op_(std::move(op)) {}
    const char* keyword() const override { return "flowbits"; }
    bool match(const PacketContext& pc) const override {
        return flowbit_condition(op_, pc.flowbits);
    }
    uint64_t hash() const override {
        uint64_t h = hash_mix(hash_str("flowbits"), static_cast<uint64_t>(op_.cmd));
        h = hash_mix(h, op_.any_of ? 1 : 0);
        for (uint32_t b : op_.bits) {
            h = hash_mix(h, b);
        }
        return h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const FlowbitsOption*>(&other);
        return o != nullptr && o->op_.cmd == op_.cmd && o->op_.any_of == op_.any_of &&
               o->op_.bits == op_.bits;
    }

private:
    FlowbitOp op_;
};

bool valid_name(std::string_view n) {
    if (n.empty()) {
        return false;
    }
    return std::none_of(n.begin(), n.end(), [](char c) {
        return c == ' ' || c == '\t' || c == ',' || c == ';' || c == '"' ||
               static_cast<unsigned char>(c) < 0x20;
    });
}

}  // namespace

bool parse_flowbits(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "flowbits: a command is required";
        return false;
    }
    size_t comma = s.find(',');
    std::string_view cmd_text = trim_blanks(s.substr(0, comma));
    std::string_view names =
        comma == std::string_view::npos ? std::string_view() : trim_blanks(s.substr(comma + 1));
    FlowbitCmd cmd;
    if (cmd_text == "set") {
        cmd = FlowbitCmd::kSet;
    } else if (cmd_text == "unset") {
        cmd = FlowbitCmd::kUnset;
    } else if (cmd_text == "toggle") {
        cmd = FlowbitCmd::kToggle;
    } else if (cmd_text == "isset") {
        cmd = FlowbitCmd::kIsset;
    } else if (cmd_text == "isnotset") {
        cmd = FlowbitCmd::kIsnotset;
    } else if (cmd_text == "noalert") {
        if (!names.empty() || comma != std::string_view::npos) {
            *error = "flowbits: noalert takes no name";
            return false;
        }
        st.rule->noalert = true;
        return true;
    } else {
        *error = "flowbits: unknown command '" + std::string(cmd_text) + "'";
        return false;
    }
    if (names.empty()) {
        *error = "flowbits: " + std::string(cmd_text) + " needs a flowbit name";
        return false;
    }
    const bool has_or = names.find('|') != std::string_view::npos;
    const bool has_and = names.find('&') != std::string_view::npos;
    if (has_or && has_and) {
        *error = "flowbits: cannot mix '|' and '&' in '" + std::string(names) + "'";
        return false;
    }
    const bool is_condition = cmd == FlowbitCmd::kIsset || cmd == FlowbitCmd::kIsnotset;
    if (has_or && !is_condition) {
        *error = "flowbits: '|' is only allowed with isset and isnotset";
        return false;
    }
    if (st.flowbits == nullptr) {
        *error = "flowbits: no flowbit registry";
        return false;
    }
    FlowbitOp op;
    op.cmd = cmd;
    op.any_of = has_or;
    const char sep = has_or ? '|' : '&';
    std::vector<std::string_view> parts;
    while (true) {
        size_t cut = names.find(sep);
        std::string_view n = trim_blanks(names.substr(0, cut));
        if (!valid_name(n)) {
            *error = "flowbits: invalid flowbit name '" + std::string(n) + "'";
            return false;
        }
        parts.push_back(n);
        if (cut == std::string_view::npos) {
            break;
        }
        names = names.substr(cut + 1);
    }
    for (std::string_view n : parts) {
        op.bits.push_back(st.flowbits->intern(n));
    }
    if (is_condition) {
        st.rule->header_options.push_back(std::make_unique<FlowbitsOption>(op));
    }
    st.rule->flowbits.push_back(std::move(op));
    return true;
}

}  // namespace picket::sensor::detect::keywords
