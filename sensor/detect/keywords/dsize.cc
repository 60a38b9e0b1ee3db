// dsize (Suricata 7 detect-dsize.c): the packet's payload size, a header option. Forms N,
// <N, <=N, >N, >=N, !N, N<>M (exclusive range). Like Suricata, !N and >=N need a payload:
// neither matches an empty packet (suricata-verify test-dsize-values).
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

class DsizeOption final : public HeaderOption {
public:
    explicit DsizeOption(UintCmp c) : cmp_(c) {}
    const char* keyword() const override { return "dsize"; }
    bool match(const PacketContext& pc) const override {
        if (pc.p == nullptr) {
            return false;
        }
        // Suricata marks a rule "requires payload" unless its dsize can only be < / <= N or
        // exactly 0, so !N and >=0 never match an empty packet although the comparison holds.
        if (pc.p->payload_len == 0 &&
            (cmp_.op == UintCmp::Op::kNe || cmp_.op == UintCmp::Op::kGe)) {
            return false;
        }
        return cmp_.match(pc.p->payload_len);
    }
    uint64_t hash() const override {
        Hasher h;
        h.add(0xd5).add(static_cast<uint64_t>(cmp_.op)).add(cmp_.a).add(cmp_.b);
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const DsizeOption*>(&other);
        return o != nullptr && o->cmp_ == cmp_;
    }

private:
    UintCmp cmp_;
};

}  // namespace payload

namespace keywords {

bool parse_dsize(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    payload::UintCmp cmp;
    if (!has_value || !payload::parse_uint_cmp(value, 65535, &cmp)) {
        *error = "dsize: invalid value '" + std::string(trim_blanks(value)) +
                 "' (expected N, <N, <=N, >N, >=N, !N or N<>M, at most 65535)";
        return false;
    }
    for (const auto& h : st.rule->header_options) {
        if (std::string_view(h->keyword()) == "dsize") {
            *error = "dsize: only one dsize per rule";
            return false;
        }
    }
    st.rule->header_options.push_back(std::make_unique<payload::DsizeOption>(cmp));
    return true;
}

}  // namespace keywords

}  // namespace picket::sensor::detect
