// flow: direction and state of the packet's flow. Options (comma separated, any order):
// to_server/from_client, to_client/from_server, established, not_established, stateless,
// only_stream, no_stream, only_frag, no_frag. Sets Rule::flow_flags (the compiler groups
// rules by direction with them) and appends a HeaderOption that checks them, following
// Suricata's FlowMatch: without a flow no direction and no "established" can match (but
// not_established does); stateless matches any state; only_stream/no_stream compare with
// PacketContext::from_stream; only_frag/no_frag with a defragmented (kFlagReassembled) packet.
#include "sensor/detect/keywords/keywords.h"

#include <memory>

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

class FlowOption final : public HeaderOption {
public:
    explicit FlowOption(uint16_t flags) : flags_(flags) {}
    const char* keyword() const override { return "flow"; }
    bool match(const PacketContext& pc) const override {
        const bool has_flow = pc.flow != nullptr;
        if ((flags_ & kFlowToServer) != 0 && !(has_flow && pc.dir == flow::Direction::kToServer)) {
            return false;
        }
        if ((flags_ & kFlowToClient) != 0 && !(has_flow && pc.dir == flow::Direction::kToClient)) {
            return false;
        }
        const bool est = has_flow && pc.established;
        if ((flags_ & kFlowEstablished) != 0 && !est) {
            return false;
        }
        if ((flags_ & kFlowNotEstablished) != 0 && est) {
            return false;
        }
        if ((flags_ & kFlowOnlyStream) != 0 && !pc.from_stream) {
            return false;
        }
        if ((flags_ & kFlowNoStream) != 0 && pc.from_stream) {
            return false;
        }
        const bool frag = pc.p != nullptr && pc.p->has(decode::kFlagReassembled);
        if ((flags_ & kFlowOnlyFrag) != 0 && !frag) {
            return false;
        }
        if ((flags_ & kFlowNoFrag) != 0 && frag) {
            return false;
        }
        return true;
    }
    uint64_t hash() const override { return hash_mix(hash_str("flow"), flags_); }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const FlowOption*>(&other);
        return o != nullptr && o->flags_ == flags_;
    }

private:
    uint16_t flags_;
};

struct FlowName {
    const char* name;
    uint16_t flag;
};

constexpr FlowName kFlowNames[] = {
    {"to_server", kFlowToServer},      {"from_client", kFlowToServer},
    {"to_client", kFlowToClient},      {"from_server", kFlowToClient},
    {"established", kFlowEstablished}, {"not_established", kFlowNotEstablished},
    {"stateless", kFlowStateless},     {"only_stream", kFlowOnlyStream},
    {"no_stream", kFlowNoStream},      {"only_frag", kFlowOnlyFrag},
    {"no_frag", kFlowNoFrag},
};

const char* canonical(uint16_t flag) {
    for (const FlowName& n : kFlowNames) {
        if (n.flag == flag) {
            return n.name;
        }
    }
    return "?";
}

// Pairs that cannot be combined (Suricata rejects them too).
constexpr uint16_t kConflicts[][2] = {
    {kFlowToServer, kFlowToClient},     {kFlowEstablished, kFlowNotEstablished},
    {kFlowEstablished, kFlowStateless}, {kFlowNotEstablished, kFlowStateless},
    {kFlowOnlyStream, kFlowNoStream},   {kFlowOnlyFrag, kFlowNoFrag},
};

}  // namespace

bool parse_flow(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "flow: at least one option is required";
        return false;
    }
    uint16_t flags = 0;
    while (true) {
        size_t comma = s.find(',');
        std::string_view tok = trim_blanks(s.substr(0, comma));
        uint16_t flag = 0;
        for (const FlowName& n : kFlowNames) {
            if (tok == n.name) {
                flag = n.flag;
                break;
            }
        }
        if (flag == 0) {
            *error = "flow: unknown option '" + std::string(tok) + "'";
            return false;
        }
        if ((flags & flag) != 0) {
            *error = "flow: '" + std::string(canonical(flag)) + "' given twice";
            return false;
        }
        flags |= flag;
        if (comma == std::string_view::npos) {
            break;
        }
        s = s.substr(comma + 1);
    }
    const uint16_t all = static_cast<uint16_t>(flags | st.rule->flow_flags);
    for (const auto& c : kConflicts) {
        if ((all & c[0]) != 0 && (all & c[1]) != 0) {
            *error = "flow: '" + std::string(canonical(c[1])) + "' conflicts with '" +
                     canonical(c[0]) + "'";
            return false;
        }
    }
    st.rule->flow_flags = all;
    st.rule->header_options.push_back(std::make_unique<FlowOption>(flags));
    return true;
}

}  // namespace picket::sensor::detect::keywords
