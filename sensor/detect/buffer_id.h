// Inspection buffer ids and app-layer protocol ids: shared by the rule model (rule.h) and the
// public detection API (detect.h), which hands app-layer buffers to detection as an AppView.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace picket::sensor::detect {

// ---------------------------------------------------------------------------------------
// Inspection buffers. One table row per buffer: its Suricata sticky-buffer name(s), its Snort
// 2.9 content-modifier name (content:"x"; http_uri;) if any, and the app-layer protocol that
// fills it. Buffers whose filler does not exist yet still parse and compile; they never match
// until the app layer provides them.
enum class BufferId : uint8_t {
    kPacket,  // the packet's payload (pkt_data); also the default buffer of content
    kHttpUri,
    kHttpUriRaw,
    kHttpMethod,
    kHttpRequestLine,
    kHttpProtocol,
    kHttpHeader,
    kHttpHeaderRaw,
    kHttpHeaderNames,
    kHttpCookie,
    kHttpUserAgent,
    kHttpHost,
    kHttpHostRaw,
    kHttpContentType,
    kHttpContentLen,
    kHttpReferer,
    kHttpRequestBody,
    kHttpStatCode,
    kHttpStatMsg,
    kHttpResponseLine,
    kHttpResponseBody,  // http.response_body, file.data / file_data on HTTP
    kHttpStart,
    kHttpLocation,
    kHttpServer,
    kHttpAccept,
    kHttpAcceptEnc,
    kHttpAcceptLang,
    kHttpConnection,
    kDnsQuery,
    kTlsSni,
    kTlsCertSubject,
    kTlsCertIssuer,
    kTlsCertSerial,
    kTlsCerts,
    kJa3Hash,
    kJa3String,
    kJa3sHash,
    kCount
};
inline constexpr size_t kNumBuffers = static_cast<size_t>(BufferId::kCount);

enum class AppProto : uint8_t { kUnknown, kHttp, kDns, kTls, kSmtp, kFtp, kSmb, kSsh, kDcerpc };
inline constexpr size_t kNumAppProtos = 9;
// "http", "dns", "tls", ... ("unknown" for kUnknown): EVE's app_proto.
const char* app_proto_name(AppProto p);

// One app-layer transaction as detection sees it, in the direction of the packet being
// inspected: every buffer the parser filled (an empty view = absent), and the few values
// header-like keywords read. Built by the app layer per inspection; views point into the
// parser's transaction and stay valid for the inspect call only.
struct AppView {
    AppProto proto = AppProto::kUnknown;
    uint64_t tx_id = 0;
    std::string_view buf[kNumBuffers];
    int32_t dns_opcode = -1;   // dns.opcode; -1 = not a DNS transaction
    uint16_t tls_version = 0;  // tls.version: 0x0303 = TLS 1.2, 0x0304 = TLS 1.3; 0 = unknown
};

}  // namespace picket::sensor::detect
