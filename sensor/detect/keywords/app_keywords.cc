// Header-like keywords on an app-layer transaction: urilen (http), tls.version (tls) and
// dns.opcode (dns). Each reads PacketContext::view and marks its rule as needing that
// protocol (Rule::app_needed), so the compiler places it with the app-layer rules even when
// no buffer of the rule names the protocol.
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

bool claim_app(ParseState& st, AppProto app, const char* name, std::string* error) {
    Rule& r = *st.rule;
    AppProto have = r.proto.app != AppProto::kUnknown ? r.proto.app : r.app_needed;
    if (have != AppProto::kUnknown && have != app) {
        *error = std::string(name) + ": not usable on a rule for another app-layer protocol";
        return false;
    }
    r.app_needed = app;
    return true;
}

class UrilenOption final : public HeaderOption {
public:
    UrilenOption(const keywords::UintSpec& c, bool raw) : cmp_(c), raw_(raw) {}
    const char* keyword() const override { return "urilen"; }
    bool match(const PacketContext& pc) const override {
        if (pc.view == nullptr || pc.view->proto != AppProto::kHttp) {
            return false;
        }
        std::string_view uri =
            pc.view->buf[static_cast<size_t>(raw_ ? BufferId::kHttpUriRaw : BufferId::kHttpUri)];
        return uri.data() != nullptr && cmp_.match(uri.size());
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0x0411).add(static_cast<uint64_t>(cmp_.mode)).add(cmp_.a).add(cmp_.b).add(raw_);
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const UrilenOption*>(&other);
        return o != nullptr && o->cmp_ == cmp_ && o->raw_ == raw_;
    }

private:
    keywords::UintSpec cmp_;
    bool raw_;
};

class TlsVersionOption final : public HeaderOption {
public:
    explicit TlsVersionOption(uint16_t v) : version_(v) {}
    const char* keyword() const override { return "tls.version"; }
    bool match(const PacketContext& pc) const override {
        return pc.view != nullptr && pc.view->proto == AppProto::kTls &&
               pc.view->tls_version == version_;
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0x7151).add(version_);
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const TlsVersionOption*>(&other);
        return o != nullptr && o->version_ == version_;
    }

private:
    uint16_t version_;
};

class DnsOpcodeOption final : public HeaderOption {
public:
    explicit DnsOpcodeOption(const keywords::UintSpec& c) : cmp_(c) {}
    const char* keyword() const override { return "dns.opcode"; }
    bool match(const PacketContext& pc) const override {
        return pc.view != nullptr && pc.view->proto == AppProto::kDns && pc.view->dns_opcode >= 0 &&
               cmp_.match(static_cast<uint64_t>(pc.view->dns_opcode));
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0xd0c0).add(static_cast<uint64_t>(cmp_.mode)).add(cmp_.a).add(cmp_.b);
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const DnsOpcodeOption*>(&other);
        return o != nullptr && o->cmp_ == cmp_;
    }

private:
    keywords::UintSpec cmp_;
};

// ssh.protoversion / ssh.softwareversion (Suricata 5's keywords): the sender's protoversion or
// softwareversion starts with the value; protoversion 2_compat is "2.x" or "1.99".
class SshBannerOption final : public HeaderOption {
public:
    SshBannerOption(bool software, std::string value)
        : software_(software), value_(std::move(value)) {}
    const char* keyword() const override {
        return software_ ? "ssh.softwareversion" : "ssh.protoversion";
    }
    bool match(const PacketContext& pc) const override {
        if (pc.view == nullptr || pc.view->proto != AppProto::kSsh) {
            return false;
        }
        std::string_view v = pc.view->buf[static_cast<size_t>(software_ ? BufferId::kSshSoftware
                                                                        : BufferId::kSshProto)];
        if (v.data() == nullptr) {
            return false;
        }
        if (!software_ && value_ == "2_compat") {
            return v.starts_with("2.") || v == "1.99";
        }
        return v.starts_with(value_);
    }
    uint64_t hash() const override {
        payload::Hasher h;
        h.add(0x55a1).add(software_);
        for (char c : value_) {
            h.add(static_cast<uint64_t>(static_cast<unsigned char>(c)));
        }
        return h.h;
    }
    bool equals(const HeaderOption& other) const override {
        const auto* o = dynamic_cast<const SshBannerOption*>(&other);
        return o != nullptr && o->software_ == software_ && o->value_ == value_;
    }

private:
    bool software_;
    std::string value_;
};

bool parse_ssh_banner_value(ParseState& st, std::string_view value, bool has_value, bool software,
                            std::string* error) {
    const char* name = software ? "ssh.softwareversion" : "ssh.protoversion";
    std::string v(trim_blanks(value));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
        v = v.substr(1, v.size() - 2);
    }
    const bool ok =
        software ? !v.empty() && v.find_first_of(" \t;") == std::string::npos
                 : v == "2_compat" ||
                       (!v.empty() && v.find_first_not_of("0123456789.") == std::string::npos);
    if (!has_value || !ok) {
        *error = std::string(name) + ": invalid value '" + v + "'" +
                 (software ? " (expected a software version without spaces)"
                           : " (expected a version such as 2.0, or 2_compat)");
        return false;
    }
    if (!claim_app(st, AppProto::kSsh, name, error)) {
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<SshBannerOption>(software, std::move(v)));
    return true;
}

}  // namespace

namespace keywords {

bool parse_ssh_protoversion(ParseState& st, std::string_view value, bool has_value,
                            std::string* error) {
    return parse_ssh_banner_value(st, value, has_value, false, error);
}

bool parse_ssh_softwareversion(ParseState& st, std::string_view value, bool has_value,
                               std::string* error) {
    return parse_ssh_banner_value(st, value, has_value, true, error);
}

// urilen:<integer>[,raw|,norm] — the length of http.uri (norm, the default) or of
// http.uri.raw, an unsigned 16-bit value in the integer-keyword grammar (parse_uint_spec).
bool parse_urilen(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view v = trim_blanks(value);
    bool raw = false;
    if (size_t comma = v.find(','); comma != std::string_view::npos) {
        std::string_view kind = trim_blanks(v.substr(comma + 1));
        if (kind == "raw") {
            raw = true;
        } else if (kind != "norm") {
            *error = "urilen: unknown buffer '" + std::string(kind) + "' (expected raw or norm)";
            return false;
        }
        v = trim_blanks(v.substr(0, comma));
    }
    if (!has_value || v.empty()) {
        *error = "urilen: a value is required";
        return false;
    }
    UintSpec cmp;
    if (!parse_uint_spec("urilen", v, 65535, &cmp, error)) {
        return false;
    }
    if (!claim_app(st, AppProto::kHttp, "urilen", error)) {
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<UrilenOption>(cmp, raw));
    return true;
}

// tls.version:1.0 | 1.1 | 1.2 | 1.3 | ssl3 | 0xNNNN — the negotiated (server) version, or the
// client's when no ServerHello was seen.
bool parse_tls_version(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string v(trim_blanks(value));
    uint16_t ver = 0;
    if (v == "1.0") {
        ver = 0x0301;
    } else if (v == "1.1") {
        ver = 0x0302;
    } else if (v == "1.2") {
        ver = 0x0303;
    } else if (v == "1.3") {
        ver = 0x0304;
    } else if (v == "ssl3" || v == "3.0" || v == "SSLv3") {
        ver = 0x0300;
    } else if (v.size() > 2 && v.size() <= 6 && (v[0] == '0') && (v[1] == 'x' || v[1] == 'X') &&
               v.find_first_not_of("0123456789abcdefABCDEF", 2) == std::string::npos) {
        ver = static_cast<uint16_t>(std::stoul(v.substr(2), nullptr, 16));
    }
    if (!has_value || ver == 0) {
        *error = "tls.version: invalid value '" + v + "' (expected 1.0, 1.1, 1.2, 1.3 or 0xNNNN)";
        return false;
    }
    if (!claim_app(st, AppProto::kTls, "tls.version", error)) {
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<TlsVersionOption>(ver));
    return true;
}

// dns.opcode:[!]N, N an unsigned 8-bit number (Suricata 7's documented syntax; the opcode is
// 4 bits on the wire, so 16-255 load and never match, as in Suricata).
bool parse_dns_opcode(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    if (!has_value || trim_blanks(value).empty()) {
        *error = "dns.opcode: a value is required";
        return false;
    }
    UintSpec cmp;
    if (!parse_exact_spec("dns.opcode", value, 255, true, false, &cmp, error)) {
        return false;
    }
    if (!claim_app(st, AppProto::kDns, "dns.opcode", error)) {
        return false;
    }
    st.rule->header_options.push_back(std::make_unique<DnsOpcodeOption>(cmp));
    return true;
}

}  // namespace keywords
}  // namespace picket::sensor::detect
