// fragbits: the IPv4 flag bits M (more fragments), D (don't fragment), R (reserved), with an
// optional modifier: none = exactly these bits, + = at least these, * = any of these,
// ! = not all of these (Suricata's FragBitsMatch). The modifier may lead or trail (Snort's
// "M+"). IPv4 only; the bits are read from the IP header itself.
#include "sensor/detect/keywords/keywords.h"

#include <memory>

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

constexpr uint8_t kBitR = 0x4, kBitD = 0x2, kBitM = 0x1;  // top three bits of IPv4 byte 6

enum class Modifier : uint8_t { kExact, kPlus, kAny, kNot };

class FragbitsOption final : public HeaderOption {
public:
    FragbitsOption(Modifier mod, uint8_t bits) : mod_(mod), bits_(bits) {}
    const char* keyword() const override { return "fragbits"; }
    bool match(const PacketContext& pc) const override {
        const decode::Packet* p = pc.p;
        if (p == nullptr || p->ip_version != 4 || p->l3 == nullptr || p->l3_len < 8) {
            return false;
        }
        uint8_t pbits = static_cast<uint8_t>(p->l3[6] >> 5);
        switch (mod_) {
            case Modifier::kExact:
                return pbits == bits_;
            case Modifier::kPlus:
                return (pbits & bits_) == bits_;
            case Modifier::kAny:
                return (pbits & bits_) != 0;
            case Modifier::kNot:
                return (pbits & bits_) != bits_;
        }
        return false;
    }
    uint64_t hash() const override {
        return hash_mix(hash_mix(hash_str("fragbits"), static_cast<uint64_t>(mod_)), bits_);
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const FragbitsOption*>(&other);
        return o != nullptr && o->mod_ == mod_ && o->bits_ == bits_;
    }

private:
    Modifier mod_;
    uint8_t bits_;
};

}  // namespace

bool parse_fragbits(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "fragbits: a value is required";
        return false;
    }
    Modifier mod = Modifier::kExact;
    bool have_mod = false;
    uint8_t bits = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == ' ' || c == '\t') {
            continue;
        }
        if (c == '+' || c == '*' || c == '!') {
            if (have_mod) {
                *error = "fragbits: only one modifier is allowed in '" + std::string(s) + "'";
                return false;
            }
            have_mod = true;
            mod = c == '+' ? Modifier::kPlus : c == '*' ? Modifier::kAny : Modifier::kNot;
            continue;
        }
        if (c == 'M' || c == 'm') {
            bits |= kBitM;
        } else if (c == 'D' || c == 'd') {
            bits |= kBitD;
        } else if (c == 'R' || c == 'r') {
            bits |= kBitR;
        } else {
            *error = "fragbits: invalid bit '" + std::string(1, c) + "' in '" + std::string(s) +
                     "' (expected M, D, R and one of + * !)";
            return false;
        }
    }
    if (bits == 0) {
        *error = "fragbits: no bit given in '" + std::string(s) + "'";
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<FragbitsOption>(mod, bits));
    return true;
}

}  // namespace picket::sensor::detect::keywords
