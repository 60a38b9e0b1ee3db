// sip_method and sip_stat_code (Snort 2.9 and Snort 3): the method of a SIP request or the
// status code of a SIP response. Picket has no SIP parser, so both read the start line of the
// bytes pkt_data is matched against (a UDP datagram, a TCP segment or stream chunk): a request
// line `METHOD SP URI SP SIP/2.0` (RFC 3261 section 7.1, the URI with a scheme) or a status
// line `SIP/2.0 SP DDD SP reason` (section 7.2), each ending in a line end. Anything else is
// not SIP and matches neither keyword, negated or not (Snort 3 only evaluates them on
// messages its SIP inspector parsed). sip_header and sip_body stay unsupported.
#include <string>
#include <vector>

#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

char upper(char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (upper(a[i]) != upper(b[i])) {
            return false;
        }
    }
    return true;
}

// RFC 3261 section 25.1 token characters.
bool is_token_char(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
        return true;
    }
    return std::string_view("-.!%*_+`'~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
    if (s.empty()) {
        return false;
    }
    for (char c : s) {
        if (!is_token_char(c)) {
            return false;
        }
    }
    return true;
}

constexpr std::string_view kSipVersion = "SIP/2.0";  // case-insensitive (RFC 3261 7.1)

// The start line of a SIP message. method is empty for a response, status 0 for a request.
struct StartLine {
    std::string_view method;
    uint16_t status = 0;
};

// False when data does not start with a SIP request or status line.
bool parse_start_line(std::string_view data, StartLine* out) {
    const size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
        return false;
    }
    std::string_view line = data.substr(0, nl);
    if (!line.empty() && line.back() == '\r') {
        line.remove_suffix(1);
    }
    // Status line: SIP/2.0 SP 3DIGIT (SP reason)?
    if (line.size() >= kSipVersion.size() &&
        iequals(line.substr(0, kSipVersion.size()), kSipVersion)) {
        std::string_view rest = line.substr(kSipVersion.size());
        if (rest.size() < 4 || rest[0] != ' ' || (rest.size() > 4 && rest[4] != ' ')) {
            return false;
        }
        uint16_t code = 0;
        for (size_t i = 1; i < 4; ++i) {
            if (rest[i] < '0' || rest[i] > '9') {
                return false;
            }
            code = static_cast<uint16_t>(code * 10 + (rest[i] - '0'));
        }
        if (code < 100) {
            return false;
        }
        out->method = {};
        out->status = code;
        return true;
    }
    // Request line: Method SP Request-URI SP SIP-Version.
    const size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos) {
        return false;
    }
    const size_t sp2 = line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) {
        return false;
    }
    const std::string_view method = line.substr(0, sp1);
    const std::string_view uri = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    const size_t colon = uri.find(':');
    if (!is_token(method) || colon == std::string_view::npos || colon == 0 ||
        !iequals(version, kSipVersion)) {
        return false;
    }
    out->method = method;
    out->status = 0;
    return true;
}

bool start_line(const PacketContext& pc, StartLine* out) {
    const uint8_t* d = pc.data;
    uint32_t n = pc.data_len;
    if (d == nullptr) {
        d = pc.p->payload;
        n = pc.p->payload_len;
    }
    if (d == nullptr || n == 0) {
        return false;
    }
    return parse_start_line(std::string_view(reinterpret_cast<const char*>(d), n), out);
}

class SipMethodOption final : public HeaderOption {
public:
    // methods: upper case. negated: a single method that the request must not have.
    SipMethodOption(std::vector<std::string> methods, bool negated)
        : methods_(std::move(methods)), negated_(negated) {}
    const char* keyword() const override { return "sip_method"; }
    bool match(const PacketContext& pc) const override {
        StartLine sl;
        if (!start_line(pc, &sl) || sl.method.empty()) {
            return false;  // not SIP, or a response
        }
        bool found = false;
        for (const std::string& m : methods_) {
            found = found || iequals(sl.method, m);
        }
        return found != negated_;
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0x5119).add(negated_);
        for (const std::string& m : methods_) {
            h.add(m);
        }
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const SipMethodOption*>(&other);
        return o != nullptr && o->methods_ == methods_ && o->negated_ == negated_;
    }

private:
    std::vector<std::string> methods_;
    bool negated_;
};

class SipStatCodeOption final : public HeaderOption {
public:
    explicit SipStatCodeOption(std::vector<uint16_t> codes) : codes_(std::move(codes)) {}
    const char* keyword() const override { return "sip_stat_code"; }
    bool match(const PacketContext& pc) const override {
        StartLine sl;
        if (!start_line(pc, &sl) || sl.status == 0) {
            return false;  // not SIP, or a request
        }
        for (uint16_t c : codes_) {
            if (c == sl.status || c == sl.status / 100) {
                return true;
            }
        }
        return false;
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0x5157);
        for (uint16_t c : codes_) {
            h.add(c);
        }
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const SipStatCodeOption*>(&other);
        return o != nullptr && o->codes_ == codes_;
    }

private:
    std::vector<uint16_t> codes_;
};

std::vector<std::string_view> split_list(std::string_view v) {
    std::vector<std::string_view> out;
    while (true) {
        const size_t comma = v.find(',');
        out.push_back(trim_blanks(v.substr(0, comma)));
        if (comma == std::string_view::npos) {
            return out;
        }
        v.remove_prefix(comma + 1);
    }
}

// Snort's bound on the codes of one sip_stat_code (SIP_NUM_STAT_CODE_MAX).
constexpr size_t kMaxStatCodes = 20;

}  // namespace

namespace keywords {

// sip_method:[!]method[,method]... — any of the methods (compared without case); with '!',
// exactly one method, which the request must not have. Either way only a request matches.
bool parse_sip_method(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    const std::string_view v = trim_blanks(value);
    if (!has_value || v.empty()) {
        *error = "sip_method: a method list is required (e.g. invite,cancel or !bye)";
        return false;
    }
    std::vector<std::string> methods;
    bool negated = false;
    for (std::string_view item : split_list(v)) {
        const bool neg = !item.empty() && item.front() == '!';
        if (neg) {
            item = trim_blanks(item.substr(1));
        }
        if (!is_token(item)) {
            *error = "sip_method: invalid method '" + std::string(item) + "' in '" +
                     std::string(v) + "'";
            return false;
        }
        negated = negated || neg;
        std::string m(item);
        for (char& c : m) {
            c = upper(c);
        }
        methods.push_back(std::move(m));
    }
    if (negated && methods.size() > 1) {
        *error = "sip_method: '!' allows only one method, got '" + std::string(v) + "'";
        return false;
    }
    st.rule->header_options.push_back(
        std::make_unique<SipMethodOption>(std::move(methods), negated));
    return true;
}

// sip_stat_code:code[,code]... — a code is 100 to 999 (that status) or 1 to 9 (its class).
bool parse_sip_stat_code(ParseState& st, std::string_view value, bool has_value,
                         std::string* error) {
    const std::string_view v = trim_blanks(value);
    if (!has_value || v.empty()) {
        *error = "sip_stat_code: a code list is required (e.g. 200,4)";
        return false;
    }
    std::vector<uint16_t> codes;
    for (std::string_view item : split_list(v)) {
        const bool digits = !item.empty() && item.size() <= 3 &&
                            item.find_first_not_of("0123456789") == std::string_view::npos;
        const unsigned code = digits ? static_cast<unsigned>(std::stoul(std::string(item))) : 0;
        if (!digits || code == 0 || (code > 9 && code < 100)) {
            *error = "sip_stat_code: invalid code '" + std::string(item) +
                     "' (expected 100 to 999, or 1 to 9 for a class)";
            return false;
        }
        codes.push_back(static_cast<uint16_t>(code));
    }
    if (codes.size() > kMaxStatCodes) {
        *error = "sip_stat_code: at most 20 codes, got " + std::to_string(codes.size());
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<SipStatCodeOption>(std::move(codes)));
    return true;
}

}  // namespace keywords
}  // namespace picket::sensor::detect
