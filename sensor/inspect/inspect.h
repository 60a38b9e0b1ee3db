// The inspection contract between the app layer and detection: the ids of the inspection
// buffers, the app-layer protocol ids, the per-transaction view (AppView) the app layer fills
// and detection reads, and the per-flow log of alerts already raised per transaction. This
// header pulls in nothing of the detection engine (no Hyperscan, no PCRE2, no rule model): the
// app layer includes it and links `picket_inspect` only; detection re-exports these names in
// namespace picket::sensor::detect (buffer_id.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace picket::sensor::inspect {

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
    kHttpResponseBody,  // http.response_body
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
    kSshProto,     // the sender's identification line: protoversion
    kSshSoftware,  // softwareversion
    kSshHassh,     // client KEXINIT (to_server)
    kSshHasshString,
    kSshHasshServer,  // server KEXINIT (to_client)
    kSshHasshServerString,
    kFtpCommand,      // ftp.command: the command's verb (upper-cased), to_server
    kFtpCommandData,  // ftp.command_data: what follows the verb and its SP, to_server
    // file.data / file_data and file.name: one file of an HTTP transaction (to_client: the
    // response body; to_server: a multipart upload's file part, or a POST / PUT body), or the
    // file of an ftp-data flow (its bytes in the transfer's direction, named by the STOR /
    // RETR argument). A transaction with several files gives one AppView per file (Suricata's
    // file.data is a multi-buffer: a rule matches when one file matches).
    kFileData,
    kFileName,
    kCount
};
inline constexpr size_t kNumBuffers = static_cast<size_t>(BufferId::kCount);

enum class AppProto : uint8_t {
    kUnknown,
    kHttp,
    kDns,
    kTls,
    kSmtp,
    kFtp,
    kSmb,
    kSsh,
    kDcerpc,
    kFtpData,  // an FTP data connection announced on its control connection
};
inline constexpr size_t kNumAppProtos = 10;
// "http", "dns", "tls", "ftp-data", ... ("unknown" for kUnknown): EVE's app_proto.
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
    // app-layer-event: the events the protocol's parser raised on this transaction (HTTP) or
    // flow (DNS message, TLS and SSH session), bit (1 << the parser's Event value); the names
    // are in app_event_table().
    uint64_t events = 0;
    // ftpbounce: the transaction is a PORT / EPRT command whose address is not the control
    // connection's client (Suricata's ftpbounce).
    bool ftp_bounce = false;
    // ftpdata_command: the transfer command of an ftp-data flow, kFtpRetr or kFtpStor (0:
    // another one, or not ftp-data).
    uint8_t ftpdata_command = 0;
};
inline constexpr uint8_t kFtpRetr = 1;
inline constexpr uint8_t kFtpStor = 2;

// app-layer-event names as Suricata writes them ("http.missing_host_header") and the
// AppView::events bit of each: the parser's Event value (sensor/applayer/<proto>/<proto>.h,
// whose event_name() is `picket_name`; tests/sensor/applayer checks the two agree).
struct AppEventName {
    AppProto proto;
    const char* name;         // Suricata's, with the protocol prefix
    uint8_t bit;              // the parser's Event value
    const char* picket_name;  // the parser's event_name()
};
struct AppEventTable {
    const AppEventName* entries;
    size_t count;
};
AppEventTable app_event_table();
// The entry of a Suricata name, or nullptr.
const AppEventName* find_app_event(std::string_view name);

// Alerts already raised per transaction on one flow, so that a transaction inspected again as
// it progresses (request line, headers, body, response) alerts at most once per rule. Owned by
// the app layer per flow; bounded (the oldest entries go first).
struct TxAlertLog {
    static constexpr size_t kMax = 64;
    uint64_t key[kMax] = {};  // ((tx_id + 1) << 32) | sid ; 0 = free
    uint32_t next = 0;
    bool seen(uint64_t tx_id, uint32_t sid) const {
        const uint64_t k = ((tx_id + 1) << 32) | sid;
        for (uint64_t e : key) {
            if (e == k) {
                return true;
            }
        }
        return false;
    }
    void add(uint64_t tx_id, uint32_t sid) {
        key[next] = ((tx_id + 1) << 32) | sid;
        next = (next + 1) % kMax;
    }
};

}  // namespace picket::sensor::inspect
