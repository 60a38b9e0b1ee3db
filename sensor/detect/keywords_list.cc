// list_keywords(): walks the keyword registry (keywords/registry.cc), the buffer table
// (buffers.cc) and the Snort 3 front-end's tables (snort3.cc).
#include "sensor/detect/keywords_list.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"
#include "sensor/detect/rule.h"
#include "sensor/detect/snort3.h"

namespace picket::sensor::detect {
namespace {

// Statuses of what the Snort 3 front-end passes on come from the Suricata parser, which
// decides (the registry, the buffer table and the unsupported list private to parser.cc): it
// parses a rule holding the option alone, so that the reason is the one a rule using it gets.
// nullptr: the rule parsed.
std::unique_ptr<RuleDiagnostic> probe(const std::string& options) {
    FlowbitRegistry flowbits;
    ParseEnv env;
    env.syntax = ParseEnv::Syntax::kSuricata;
    env.flowbits = &flowbits;
    auto d = std::make_unique<RuleDiagnostic>();
    if (parse_rule("alert tcp any any -> any any (" + options + " sid:1;)", env, d.get())) {
        return nullptr;
    }
    return d;
}

// A keyword without its value: a complaint about the value ("bad msg") means the parser
// knows the keyword.
std::string suricata_status(std::string_view name) {
    const auto d = probe(std::string(name) + ";");
    if (d == nullptr || d->category.starts_with("bad ")) {
        return "supported";
    }
    return "not supported: " + d->reason;
}

// Why a Suricata keyword Picket refuses is not supported, by name or by the prefix of its
// family: what an operator needs to judge a skipped rule. First match wins.
struct Why {
    const char* prefix;  // a name, or a family prefix ending in '.' or '_'
    const char* why;
};
constexpr Why kWhy[] = {
    {"lua", "Lua scripting is not embedded"},
    {"luajit", "Lua scripting is not embedded"},
    {"dataset", "datasets (string lists loaded from files) are not implemented"},
    {"datarep", "datasets (string lists loaded from files) are not implemented"},
    {"iprep", "IP reputation lists are not loaded"},
    {"geoip", "no GeoIP database is read"},
    {"bypass", "no capture bypass (flows are not offloaded)"},
    {"replace", "payload rewriting in IPS mode is not implemented"},
    {"prefilter", "prefilter choice is automatic (fast_pattern picks the pattern)"},
    {"requires", "Suricata 7.0.3's version/feature gate is not read"},
    {"config", "Suricata 7's per-rule logging/inspection config is not implemented"},
    {"rpc", "RPC call matching (Snort 2's rpc) is not implemented"},
    {"ipopts", "IPv4 options are not decoded into flags"},
    {"fragoffset", "fragment offsets are not matched (fragbits is)"},
    {"entropy", "Suricata 8 keyword"},
    {"absent", "Suricata 8 keyword"},
    {"l3_proto", "Suricata 8 keyword"},
    {"pkthdr", "Suricata 8 keyword"},
    {"flow.", "Suricata 8 keyword (flow age and counters)"},
    {"tcp.", "header sticky buffers are not filled"},
    {"udp.", "header sticky buffers are not filled"},
    {"ipv4.", "header sticky buffers are not filled"},
    {"ipv6.", "header sticky buffers are not filled"},
    {"icmpv4.", "header sticky buffers are not filled"},
    {"icmpv6.", "ICMPv6 header buffers and MTU are not filled"},
    {"ipv4-csum", "checksum validity is a decoder setting (-k), not a rule option"},
    {"tcpv4-csum", "checksum validity is a decoder setting (-k), not a rule option"},
    {"tcpv6-csum", "checksum validity is a decoder setting (-k), not a rule option"},
    {"udpv4-csum", "checksum validity is a decoder setting (-k), not a rule option"},
    {"udpv6-csum", "checksum validity is a decoder setting (-k), not a rule option"},
    {"icmpv4-csum", "checksum validity is a decoder setting (-k), not a rule option"},
    {"icmpv6-csum", "checksum validity is a decoder setting (-k), not a rule option"},
    {"app-layer-state", "parser states are not exposed to rules"},
    {"decode-event", "decoder events go to EVE anomaly records; rules on them are not matched"},
    {"stream-event", "stream events go to EVE anomaly records; rules on them are not matched"},
    {"engine-event", "engine events are not matched by rules"},
    {"to_md5", "hashing transforms are not implemented"},
    {"to_sha1", "hashing transforms are not implemented"},
    {"to_sha256", "hashing transforms are not implemented"},
    {"xor", "the xor transform is not implemented"},
    {"pcrexform", "the pcrexform transform is not implemented"},
    {"header_lowercase", "Suricata 8 transform"},
    {"strip_pseudo_headers", "Suricata 8 transform (HTTP/2)"},
    {"from_base64", "Suricata 8 transform (use base64_decode)"},
    {"filestore", "files are not stored"},
    {"filemagic", "libmagic types are logged in fileinfo, not matched by rules"},
    {"file.magic", "libmagic types are logged in fileinfo, not matched by rules"},
    {"filename", "use file.name"},
    {"fileext", "use file.name with endswith"},
    {"filemd5", "file hash lists are not loaded"},
    {"filesha1", "file hash lists are not loaded"},
    {"filesha256", "file hash lists are not loaded"},
    {"filesize", "file sizes are not matched"},
    {"http.request_header", "per-header name:value buffers are not filled"},
    {"http.response_header", "per-header name:value buffers are not filled"},
    {"http_request_header", "per-header name:value buffers are not filled"},
    {"http_response_header", "per-header name:value buffers are not filled"},
    {"http_raw_cookie", "the raw cookie buffer is not filled (http.cookie is)"},
    {"http2.", "no HTTP/2 parser"},
    {"tls.", "this part of the TLS handshake is not exposed to rules"},
    {"tls_", "this part of the TLS handshake is not exposed to rules"},
    {"ssl_", "this part of the TLS handshake is not exposed to rules"},
    {"ja3s.string", "the JA3S string is not kept (ja3s.hash is)"},
    {"ja4.", "JA4 is not computed"},
    {"dns.", "Suricata 8 DNS buffers (dns.query is supported)"},
    {"smb.", "no SMB parser"},
    {"dcerpc.", "no DCERPC parser"},
    {"dce_", "no DCERPC parser"},
    {"krb5_", "no Kerberos parser"},
    {"krb5.", "no Kerberos parser"},
    {"sip.", "no SIP parser (sip_method and sip_stat_code read the start line)"},
    {"snmp.", "no SNMP parser"},
    {"mqtt.", "no MQTT parser"},
    {"rfb.", "no RFB (VNC) parser"},
    {"dhcp.", "no DHCP parser"},
    {"modbus", "no Modbus parser"},
    {"dnp3_", "no DNP3 parser"},
    {"enip_", "no ENIP/CIP parser"},
    {"cip_", "no ENIP/CIP parser"},
    {"nfs_", "no NFS parser"},
    {"nfs.", "no NFS parser"},
    {"ike.", "no IKE parser"},
    {"quic.", "no QUIC parser"},
    {"bittorrent-dht.", "no BitTorrent DHT parser"},
    {"pgsql.", "no PostgreSQL parser"},
    {"frame", "protocol frames are not exposed to rules"},
    {"smtp.", "no SMTP parser"},
    {"email.", "no SMTP/MIME parser"},
    {"http_encode", "a Snort 2.9 option, not Suricata's"},
    {"resp", "a Snort 2.9 option, not Suricata's"},
    {"react", "a Snort 2.9 option, not Suricata's"},
    {"session", "a Snort 2.9 option, not Suricata's"},
    {"logto", "a Snort 2.9 option, not Suricata's"},
    {"activates", "a Snort 2.9 option, not Suricata's"},
    {"activated_by", "a Snort 2.9 option, not Suricata's"},
    {"count", "a Snort 2.9 option, not Suricata's"},
    {"sd_pattern", "a Snort 2.9 option, not Suricata's"},
    {"file_type", "a Snort 2.9 option, not Suricata's"},
    {"file_group", "a Snort 2.9 option, not Suricata's"},
    {"protected_content", "a Snort 2.9 option, not Suricata's"},
    {"hash", "a Snort 2.9 option, not Suricata's"},
    {"length", "a Snort 2.9 option, not Suricata's"},
    {"stream_reassemble", "a Snort 2.9 option, not Suricata's"},
    {"cvs", "a Snort 2.9 option, not Suricata's"},
    {"gtp_type", "a Snort 2.9 option, not Suricata's"},
    {"gtp_info", "a Snort 2.9 option, not Suricata's"},
    {"gtp_version", "a Snort 2.9 option, not Suricata's"},
    {"sip_header", "a Snort 2.9 option, not Suricata's"},
    {"sip_body", "a Snort 2.9 option, not Suricata's"},
    {"appid", "a Snort 2.9 option, not Suricata's"},
    {"service", "a Snort 2.9 option, not Suricata's"},
    {"soid", "a Snort 2.9 option, not Suricata's"},
};

const char* why_unsupported(std::string_view name) {
    for (const Why& w : kWhy) {
        const std::string_view p = w.prefix;
        const bool family = p.ends_with('.') || p.ends_with('_');
        if (family ? name.starts_with(p) : name == p) {
            return w.why;
        }
    }
    return nullptr;
}

// A pcre flag after a content, so that R (relative) has something to follow.
std::string pcre_flag_status(char flag) {
    const auto d = probe("content:\"a\"; pcre:\"/a/" + std::string(1, flag) + "\";");
    return d == nullptr ? "supported" : "not supported: " + d->reason;
}

}  // namespace

std::vector<KeywordInfo> list_keywords() {
    std::vector<KeywordInfo> out;
    auto add = [&out](const char* lang, std::string_view name, const char* kind,
                      std::string status) {
        for (const KeywordInfo& k : out) {
            if (k.language == lang && k.name == name) {
                return;  // first spelling wins (a sticky name that is also a modifier)
            }
        }
        out.push_back({lang, std::string(name), kind, std::move(status)});
    };
    // Registered keywords that do part of what Suricata does.
    const std::vector<std::pair<std::string_view, std::string>> kPartly = {
        {"app-layer-protocol",
         "partly: protocols Picket does not detect and Suricata 8's modes are refused"},
    };
    for (const KeywordDef& k : keyword_table()) {
        std::string status = "supported";
        for (const auto& [name, why] : kPartly) {
            if (std::string_view(k.name) == name) {
                status = why;
            }
        }
        add("suricata", k.name, "option", std::move(status));
    }
    for (size_t i = 0; i < kNumBuffers; ++i) {
        const BufferDef& d = buffer_def(static_cast<BufferId>(i));
        add("suricata", d.name, "sticky buffer", "supported");
        if (d.alias != nullptr) {
            add("suricata", d.alias, "sticky buffer", "supported");
        }
        if (d.modifier != nullptr) {
            add("suricata", d.modifier, "modifier", "supported");
        }
    }
    for (const char* name : extra_sticky_names()) {
        add("suricata", name, "sticky buffer", "supported");
    }
    for (const char* name : unsupported_keyword_names()) {
        std::string status = suricata_status(name);
        const char* why = why_unsupported(name);
        if (why != nullptr && status.starts_with("not supported: ")) {
            status += std::string(" (") + why + ")";
        }
        add("suricata", name, "option", std::move(status));
    }
    // Snort 3: the front-end's own tables, and for what it passes on, the Suricata parser.
    for (const snort3::BufferMap& b : snort3::buffer_table()) {
        add("snort3", b.snort, "sticky buffer",
            b.suricata != nullptr
                ? suricata_status(b.suricata)
                : "not supported: unsupported buffer '" + std::string(b.snort) + "'");
    }
    std::string fields;
    for (const snort3::BufferMap& h : snort3::header_field_table()) {
        fields.append(fields.empty() ? "" : ", ").append(h.snort);
    }
    add("snort3", "http_header.field", "sticky buffer",
        "partly: field " + fields + "; any other field is refused");
    for (const snort3::OwnKeyword& k : snort3::snort3_only_options()) {
        add("snort3", k.name, "option", k.status);
    }
    for (const snort3::OwnKeyword& k : snort3::service_headers()) {
        add("snort3", k.name, "service header", k.status);
    }
    for (const snort3::ContentModifier& m : snort3::content_modifier_table()) {
        add("snort3", "content." + std::string(m.snort), "content modifier",
            suricata_status(m.suricata));
    }
    for (const char* name : snort3::pass_through_options()) {
        add("snort3", name, "option", suricata_status(name));
    }
    for (char flag : snort3::pcre_flags()) {
        add("snort3", "pcre." + std::string(1, flag), "pcre flag", pcre_flag_status(flag));
    }
    std::sort(out.begin(), out.end(), [](const KeywordInfo& a, const KeywordInfo& b) {
        return std::tie(a.language, a.name) < std::tie(b.language, b.name);
    });
    return out;
}

}  // namespace picket::sensor::detect
