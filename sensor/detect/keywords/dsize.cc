// dsize (Suricata 7 detect-dsize.c): the packet's payload size, a header option, an unsigned
// 16-bit value in the integer-keyword grammar (parse_uint_spec, header_util.h). Like Suricata,
// !N, >=N and !N-M need a payload: none matches an empty packet (suricata-verify
// test-dsize-values).
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace payload {

class DsizeOption final : public HeaderOption {
public:
    explicit DsizeOption(const keywords::UintSpec& c) : cmp_(c) {}
    const char* keyword() const override { return "dsize"; }
    bool match(const PacketContext& pc) const override {
        if (pc.p == nullptr) {
            return false;
        }
        // Suricata marks a rule "requires payload" unless its dsize can only be < / <= N or
        // exactly 0, so !N, >=N and !N-M never match an empty packet although the comparison
        // holds.
        using keywords::UintMode;
        if (pc.p->payload_len == 0 && (cmp_.mode == UintMode::kNe || cmp_.mode == UintMode::kGte ||
                                       cmp_.mode == UintMode::kNotRange)) {
            return false;
        }
        return cmp_.match(pc.p->payload_len);
    }
    uint64_t hash() const override {
        Hasher h;
        h.add(0xd5).add(static_cast<uint64_t>(cmp_.mode)).add(cmp_.a).add(cmp_.b);
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const DsizeOption*>(&other);
        return o != nullptr && o->cmp_ == cmp_;
    }

private:
    keywords::UintSpec cmp_;
};

}  // namespace payload

namespace keywords {

bool parse_dsize(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!has_value || trim_blanks(value).empty()) {
        *error = "dsize: a value is required";
        return false;
    }
    UintSpec cmp;
    if (!parse_uint_spec("dsize", value, 65535, &cmp, error)) {
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
