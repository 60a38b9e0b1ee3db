// flowint:<name>,<op>,<value> and flowint:<name>,<isset|notset|isnotset> (Suricata 7): 32-bit
// unsigned integer variables of the flow. op is = + - (modifiers) or == != < <= > >=
// (comparisons); value is a number (up to 10 digits, at most 4294967295) or another flowint.
// The flowints of a rule run in rule order on the flow's values once its other options matched
// (run_flowints, ../flowbits.h; called by the engine): "+,1" then ">,5" counts every
// occurrence and compares the incremented value, as Suricata documents. A comparison on a
// variable without a value does not match; + on one starts it at the value, - at 0 minus the
// value. At most 16 names (kMaxFlowints).
#include <algorithm>
#include <string>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"

namespace picket::sensor::detect::keywords {

namespace {

// Suricata's flowint names: a letter, then letters, digits, '_', '.' or '/'.
bool valid_name(std::string_view n, bool operand) {
    if (n.empty() || !((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= 'A' && n[0] <= 'Z'))) {
        return false;
    }
    return std::all_of(n.begin(), n.end(), [operand](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || (!operand && (c == '.' || c == '/'));
    });
}

}  // namespace

bool parse_flowint(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "flowint: expected <name>,<op>[,<value>]";
        return false;
    }
    std::string_view parts[3];
    const int n = split_arguments(s, parts, 3, "flowint", value, error);
    if (n == 0) {
        return false;
    }
    if (!valid_name(parts[0], false)) {
        *error = "flowint: invalid variable name '" + std::string(parts[0]) + "'";
        return false;
    }
    if (n < 2) {
        *error = "flowint: an operator is needed after '" + std::string(parts[0]) + "'";
        return false;
    }
    static constexpr struct {
        const char* text;
        FlowintCmd cmd;
    } kOps[] = {{"=", FlowintCmd::kSet},         {"+", FlowintCmd::kAdd},
                {"-", FlowintCmd::kSub},         {"==", FlowintCmd::kEq},
                {"!=", FlowintCmd::kNe},         {"<", FlowintCmd::kLt},
                {"<=", FlowintCmd::kLe},         {">", FlowintCmd::kGt},
                {">=", FlowintCmd::kGe},         {"isset", FlowintCmd::kIsset},
                {"notset", FlowintCmd::kNotset}, {"isnotset", FlowintCmd::kNotset}};
    FlowintOp op;
    bool found = false;
    for (const auto& o : kOps) {
        if (parts[1] == o.text) {
            op.cmd = o.cmd;
            found = true;
        }
    }
    if (!found) {
        *error = "flowint: invalid operator '" + std::string(parts[1]) +
                 "' (=, +, -, ==, !=, <, <=, >, >=, isset, notset, isnotset)";
        return false;
    }
    const bool check = op.cmd == FlowintCmd::kIsset || op.cmd == FlowintCmd::kNotset;
    if (check && n == 3) {
        *error = "flowint: " + std::string(parts[1]) + " takes no value";
        return false;
    }
    if (!check) {
        if (n < 3 || parts[2].empty()) {
            *error = "flowint: " + std::string(parts[1]) + " needs a value";
            return false;
        }
        const std::string_view v = parts[2];
        if (v[0] >= '0' && v[0] <= '9') {
            uint64_t num = 0;
            if (v.size() > 10 || !parse_decimal(v, UINT32_MAX, &num)) {
                *error = "flowint: invalid value '" + std::string(v) + "' (0 to 4294967295)";
                return false;
            }
            op.value = static_cast<uint32_t>(num);
        } else if (valid_name(v, true) && v.size() >= 2) {
            op.value_is_var = true;
        } else {
            *error = "flowint: invalid value '" + std::string(v) + "'";
            return false;
        }
    }
    if (st.flowbits == nullptr) {
        *error = "flowint: no variable registry";
        return false;
    }
    if (!st.flowbits->intern_int(parts[0], &op.var) ||
        (op.value_is_var && !st.flowbits->intern_int(parts[2], &op.value_var))) {
        *error = "flowint: more than " + std::to_string(kMaxFlowints) + " flowint names";
        return false;
    }
    st.rule->flowints.push_back(op);
    return true;
}

}  // namespace picket::sensor::detect::keywords
