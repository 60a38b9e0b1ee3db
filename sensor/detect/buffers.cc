// The inspection buffer table: Suricata 7 sticky-buffer names, their Suricata 5 underscore
// aliases, and the Snort 2.9 / Suricata content modifiers (content:"x"; http_uri;).
// In Suricata the underscore name of most HTTP buffers is a content modifier, not a sticky
// buffer (http_uri modifies the previous content; http.uri starts a buffer); the few
// underscore names that are sticky (dns_query, tls_sni, ja3_hash, http_header_names,
// http_start, ...) are the aliases below.
#include "sensor/detect/keywords_list.h"
#include "sensor/detect/rule.h"

#include <array>
#include <vector>

namespace picket::sensor::detect {
namespace {

using B = BufferId;
using A = AppProto;

constexpr std::array<BufferDef, kNumBuffers> kBuffers = {{
    {B::kPacket, "pkt_data", nullptr, nullptr, A::kUnknown},
    {B::kHttpUri, "http.uri", nullptr, "http_uri", A::kHttp},
    {B::kHttpUriRaw, "http.uri.raw", nullptr, "http_raw_uri", A::kHttp},
    {B::kHttpMethod, "http.method", nullptr, "http_method", A::kHttp},
    {B::kHttpRequestLine, "http.request_line", "http_request_line", nullptr, A::kHttp},
    {B::kHttpProtocol, "http.protocol", "http_protocol", nullptr, A::kHttp},
    {B::kHttpHeader, "http.header", nullptr, "http_header", A::kHttp},
    {B::kHttpHeaderRaw, "http.header.raw", nullptr, "http_raw_header", A::kHttp},
    {B::kHttpHeaderNames, "http.header_names", "http_header_names", nullptr, A::kHttp},
    {B::kHttpCookie, "http.cookie", nullptr, "http_cookie", A::kHttp},
    {B::kHttpUserAgent, "http.user_agent", nullptr, "http_user_agent", A::kHttp},
    {B::kHttpHost, "http.host", nullptr, "http_host", A::kHttp},
    {B::kHttpHostRaw, "http.host.raw", nullptr, "http_raw_host", A::kHttp},
    {B::kHttpContentType, "http.content_type", "http_content_type", nullptr, A::kHttp},
    {B::kHttpContentLen, "http.content_len", "http_content_len", nullptr, A::kHttp},
    {B::kHttpReferer, "http.referer", "http_referer", nullptr, A::kHttp},
    {B::kHttpRequestBody, "http.request_body", nullptr, "http_client_body", A::kHttp},
    {B::kHttpStatCode, "http.stat_code", nullptr, "http_stat_code", A::kHttp},
    {B::kHttpStatMsg, "http.stat_msg", nullptr, "http_stat_msg", A::kHttp},
    {B::kHttpResponseLine, "http.response_line", "http_response_line", nullptr, A::kHttp},
    {B::kHttpResponseBody, "http.response_body", nullptr, "http_server_body", A::kHttp},
    {B::kHttpStart, "http.start", "http_start", nullptr, A::kHttp},
    {B::kHttpLocation, "http.location", nullptr, nullptr, A::kHttp},
    {B::kHttpServer, "http.server", nullptr, nullptr, A::kHttp},
    {B::kHttpAccept, "http.accept", "http_accept", nullptr, A::kHttp},
    {B::kHttpAcceptEnc, "http.accept_enc", "http_accept_enc", nullptr, A::kHttp},
    {B::kHttpAcceptLang, "http.accept_lang", "http_accept_lang", nullptr, A::kHttp},
    {B::kHttpConnection, "http.connection", "http_connection", nullptr, A::kHttp},
    {B::kDnsQuery, "dns.query", "dns_query", nullptr, A::kDns},
    {B::kTlsSni, "tls.sni", "tls_sni", nullptr, A::kTls},
    {B::kTlsCertSubject, "tls.cert_subject", "tls_cert_subject", nullptr, A::kTls},
    {B::kTlsCertIssuer, "tls.cert_issuer", "tls_cert_issuer", nullptr, A::kTls},
    {B::kTlsCertSerial, "tls.cert_serial", "tls_cert_serial", nullptr, A::kTls},
    {B::kTlsCerts, "tls.certs", nullptr, nullptr, A::kTls},
    {B::kJa3Hash, "ja3.hash", "ja3_hash", nullptr, A::kTls},
    {B::kJa3String, "ja3.string", "ja3_string", nullptr, A::kTls},
    {B::kJa3sHash, "ja3s.hash", "ja3s_hash", nullptr, A::kTls},
    {B::kSshProto, "ssh.proto", "ssh_proto", nullptr, A::kSsh},
    {B::kSshSoftware, "ssh.software", "ssh_software", nullptr, A::kSsh},
    {B::kSshHassh, "ssh.hassh", nullptr, nullptr, A::kSsh},
    {B::kSshHasshString, "ssh.hassh.string", nullptr, nullptr, A::kSsh},
    {B::kSshHasshServer, "ssh.hassh.server", nullptr, nullptr, A::kSsh},
    {B::kSshHasshServerString, "ssh.hassh.server.string", nullptr, nullptr, A::kSsh},
    {B::kFtpCommand, "ftp.command", nullptr, nullptr, A::kFtp},
    {B::kFtpCommandData, "ftp.command_data", nullptr, nullptr, A::kFtp},
    // HTTP's, or ftp-data's on a rule whose header says ftp-data (rule_app, engine_build.cc).
    {B::kFileData, "file.data", "file_data", nullptr, A::kHttp},
    {B::kFileName, "file.name", nullptr, nullptr, A::kHttp},
}};

constexpr bool table_in_order() {
    for (size_t i = 0; i < kBuffers.size(); ++i) {
        if (static_cast<size_t>(kBuffers[i].id) != i) {
            return false;
        }
    }
    return true;
}
static_assert(table_in_order(), "kBuffers must be indexed by BufferId");

// Sticky spellings beyond name/alias: Suricata's http.uri.normalized alias of http.uri.
struct ExtraSticky {
    const char* name;
    BufferId id;
};
constexpr ExtraSticky kExtraSticky[] = {
    {"http.uri.normalized", B::kHttpUri},
};

}  // namespace

const BufferDef& buffer_def(BufferId id) {
    const auto i = static_cast<size_t>(id);
    return kBuffers[i < kNumBuffers ? i : 0];
}

bool find_sticky_buffer(std::string_view name, BufferId* out) {
    for (const BufferDef& d : kBuffers) {
        if (name == d.name || (d.alias != nullptr && name == d.alias)) {
            *out = d.id;
            return true;
        }
    }
    for (const ExtraSticky& e : kExtraSticky) {
        if (name == e.name) {
            *out = e.id;
            return true;
        }
    }
    return false;
}

bool find_buffer_modifier(std::string_view name, BufferId* out) {
    for (const BufferDef& d : kBuffers) {
        if (d.modifier != nullptr && name == d.modifier) {
            *out = d.id;
            return true;
        }
    }
    return false;
}

// Sticky spellings beyond the table's name/alias columns, for list_keywords().
std::vector<const char*> extra_sticky_names() {
    std::vector<const char*> out;
    for (const ExtraSticky& e : kExtraSticky) {
        out.push_back(e.name);
    }
    return out;
}

}  // namespace picket::sensor::detect
