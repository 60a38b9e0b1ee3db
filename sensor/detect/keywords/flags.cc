// flags (tcp.flags): TCP flags F S R P A U C E (1 = C/CWR, 2 = E/ECE as in Snort, 0 = none)
// with an optional modifier (! not all of these, + at least these, * any of these; none =
// exactly these) and an optional mask after a comma naming flags to ignore ("flags:S,12").
// Matching follows Suricata's FlagsMatch, including "flags:0" only matching a packet without
// any flag (or, with !, any packet with a flag). TCP only.
#include "sensor/detect/keywords/keywords.h"

#include <memory>

#include "sensor/detect/keywords/header_util.h"

namespace picket::sensor::detect::keywords {

namespace {

enum class Modifier : uint8_t { kExact, kNot, kPlus, kAny };

class FlagsOption final : public HeaderOption {
public:
    FlagsOption(Modifier mod, uint8_t flags, uint8_t keep)
        : mod_(mod), flags_(flags), keep_(keep) {}
    const char* keyword() const override { return "flags"; }
    bool match(const PacketContext& pc) const override {
        if (pc.p == nullptr || !pc.p->has(decode::kFlagTcp)) {
            return false;
        }
        uint8_t pflags = pc.p->tcp_flags;
        if (flags_ == 0 && pflags != 0) {
            return mod_ == Modifier::kNot;
        }
        uint8_t f = pflags & keep_;
        switch (mod_) {
            case Modifier::kAny:
                return (f & flags_) != 0;
            case Modifier::kPlus:
                return (f & flags_) == flags_;
            case Modifier::kNot:
                return (f & flags_) != flags_;
            case Modifier::kExact:
                return f == flags_;
        }
        return false;
    }
    uint64_t hash() const override {
        uint64_t h = hash_mix(hash_str("flags"), static_cast<uint64_t>(mod_));
        return hash_mix(hash_mix(h, flags_), keep_);
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const FlagsOption*>(&other);
        return o != nullptr && o->mod_ == mod_ && o->flags_ == flags_ && o->keep_ == keep_;
    }

private:
    Modifier mod_;
    uint8_t flags_;
    uint8_t keep_;  // bits of the packet's flags that are compared (not masked away)
};

// FIN 0x01 SYN 0x02 RST 0x04 PSH 0x08 ACK 0x10 URG 0x20 ECE 0x40 CWR 0x80; -1 if not a flag.
int flag_bit(char c) {
    switch (c) {
        case 'F':
        case 'f':
            return 0x01;
        case 'S':
        case 's':
            return 0x02;
        case 'R':
        case 'r':
            return 0x04;
        case 'P':
        case 'p':
            return 0x08;
        case 'A':
        case 'a':
            return 0x10;
        case 'U':
        case 'u':
            return 0x20;
        case 'E':
        case 'e':
        case '2':
            return 0x40;
        case 'C':
        case 'c':
        case '1':
            return 0x80;
        case '0':
            return 0;
        default:
            return -1;
    }
}

}  // namespace

bool parse_flags(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "flags: a value is required";
        return false;
    }
    std::string_view text = s;
    std::string_view mask;
    size_t comma = s.find(',');
    if (comma != std::string_view::npos) {
        mask = trim_blanks(s.substr(comma + 1));
        s = trim_blanks(s.substr(0, comma));
        if (mask.empty()) {
            *error = "flags: empty mask in '" + std::string(text) + "'";
            return false;
        }
    }
    Modifier mod = Modifier::kExact;
    bool have_mod = false;
    bool found = false;
    uint8_t flags = 0;
    for (char c : s) {
        if (c == ' ' || c == '\t') {
            continue;
        }
        if (c == '!' || c == '+' || c == '*') {
            if (have_mod) {
                *error = "flags: only one modifier is allowed in '" + std::string(text) + "'";
                return false;
            }
            have_mod = true;
            mod = c == '!' ? Modifier::kNot : c == '+' ? Modifier::kPlus : Modifier::kAny;
            continue;
        }
        int bit = flag_bit(c);
        if (bit < 0) {
            *error =
                "flags: invalid flag '" + std::string(1, c) + "' in '" + std::string(text) + "'";
            return false;
        }
        flags = bit == 0 ? 0 : static_cast<uint8_t>(flags | bit);
        found = true;
    }
    if (!found) {
        *error = "flags: no flag given in '" + std::string(text) + "'";
        return false;
    }
    uint8_t keep = 0xff;
    for (char c : mask) {
        if (c == ' ' || c == '\t') {
            continue;
        }
        int bit = flag_bit(c);
        if (bit < 0) {
            *error = "flags: invalid mask flag '" + std::string(1, c) + "' in '" +
                     std::string(text) + "'";
            return false;
        }
        keep = static_cast<uint8_t>(keep & ~bit);
    }
    st.rule->header_options.push_back(std::make_unique<FlagsOption>(mod, flags, keep));
    return true;
}

}  // namespace picket::sensor::detect::keywords
