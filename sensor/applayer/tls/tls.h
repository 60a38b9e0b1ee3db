// TLS app-layer parser: record layer and handshake reassembly per direction, ClientHello
// (SNI, ALPN, JA3), ServerHello (negotiated version, JA3S) and the server's Certificate message
// (subject, issuer, serial, validity of the first certificate; the DER of all of them). Only
// the cleartext handshake is read: after ChangeCipherSpec, or a TLS 1.3 ServerHello, the rest
// of that direction is skipped. One TlsParser per flow, called only by the flow's worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/applayer/digest.h"

namespace picket::sensor::applayer::tls {

// Same values as flow::Direction, kept local so this module does not depend on the flow table.
enum class Dir : uint8_t { kToServer = 0, kToClient = 1 };

// Each event is counted as "app_layer.tls.events.<event_name()>".
enum class Event : uint8_t {
    kInvalidRecordType,        // content type not 20..24: parser fails
    kInvalidRecordVersion,     // record version major != 3: parser fails
    kInvalidRecordLength,      // an empty handshake record
    kRecordOverflow,           // record longer than 2^14 + 2048 (RFC 5246 6.2.3): parser fails
    kInvalidHandshakeMessage,  // unexpected message for its direction, or a body that does not
                               // decode (lengths disagree)
    kHandshakeTooLong,         // a handshake message over max_handshake_message: skipped
    kCertificateTooLong,       // a Certificate message over max_handshake_message: skipped
    kInvalidCertificate,       // the first certificate's DER does not decode
    kTruncatedMessage,         // the flow ended inside a record or handshake message
    kMultipleSni,              // more than one server_name extension / host_name entry
    kInvalidSni,               // server_name extension that does not decode
    kSslv2ClientHello,         // an SSLv2-format ClientHello (RFC 5246 E.2)
    kCount,
};
inline constexpr size_t kEventCount = static_cast<size_t>(Event::kCount);
const char* event_name(Event e);

struct ClientHello {
    uint16_t legacy_version = 0;  // client_version field (JA3's SSLVersion)
    bool sslv2 = false;           // came in SSLv2 format: cipher_suites hold the 2-byte
                                  // TLS suites only, no extensions, no JA3
    std::vector<uint16_t> supported_versions;  // extension 43, as sent (GREASE included)
    std::vector<uint16_t> cipher_suites;       // as sent
    std::vector<uint16_t> extensions;          // extension types in order, as sent
    std::string sni;                           // first host_name of server_name (ext 0)
    std::vector<uint16_t> groups;              // supported_groups (ext 10), as sent
    std::vector<uint8_t> point_formats;        // ec_point_formats (ext 11)
    std::vector<std::string> alpn;             // ALPN protocol names (ext 16)
    std::vector<uint8_t> session_id;
    std::string ja3;       // "771,4865-4866,0-23-65281,29-23,0" (GREASE removed)
    std::string ja3_hash;  // lower-case hex MD5 of ja3
};

struct ServerHello {
    uint16_t legacy_version = 0;
    uint16_t selected_version = 0;  // supported_versions extension, 0 if absent
    uint16_t cipher_suite = 0;
    uint8_t compression = 0;
    std::vector<uint16_t> extensions;
    std::string alpn;
    bool hello_retry_request = false;  // RFC 8446 4.1.3 magic random
    std::string ja3s;                  // "771,4865,43-51"
    std::string ja3s_hash;
    // The negotiated version: selected_version if present, else legacy_version.
    uint16_t version() const { return selected_version != 0 ? selected_version : legacy_version; }
};

// The server's certificate chain (TLS <= 1.2 only; in TLS 1.3 it is encrypted).
struct CertInfo {
    std::vector<std::vector<uint8_t>> chain;  // DER of every certificate, in message order
    // From chain[0], rendered like Suricata: "C=US, O=Let's Encrypt, CN=R3"; serial as
    // "0A:1B:..." (upper-case hex of the INTEGER's content bytes).
    bool parsed = false;  // false: chain[0] did not decode (invalid_certificate), fields empty
    std::string subject;
    std::string issuer;
    std::string serial;
    int64_t not_before = 0;  // Unix seconds (UTCTime/GeneralizedTime, 'Z' form)
    int64_t not_after = 0;
};

// Decoded fields of one DER certificate; false if it is not a well-formed Certificate.
bool parse_certificate(const uint8_t* der, size_t len, CertInfo* out);

// "SSLv2", "SSLv3", "TLSv1", "TLS 1.1", "TLS 1.2", "TLS 1.3", "TLS 1.3 draft-NN",
// "UNDETERMINED" (0), else "0x%04x": the strings Suricata logs and tls.version matches.
std::string version_string(uint16_t version);

// GREASE values (RFC 8701): 0x0a0a, 0x1a1a ... 0xfafa.
inline bool is_grease(uint16_t v) {
    return (v & 0x0f0f) == 0x0a0a && (v >> 8) == (v & 0xff);
}

// Lower-case hex MD5 (sensor/applayer/digest.h).
using applayer::md5_hex;

enum class ProbeResult : uint8_t { kNo, kYes, kNeedMore };
// Protocol detection on the first bytes of a direction: a handshake record (type 22, version
// 3.x) holding a ClientHello or ServerHello, or an SSLv2 ClientHello.
ProbeResult probe(const uint8_t* data, size_t len);

struct TlsCounters {
    Counter client_hellos;
    Counter server_hellos;
    Counter certificates;  // Certificate messages from the server with >= 1 certificate
    Counter events[kEventCount];
};
// "app_layer.tls.client_hellos", "app_layer.tls.server_hellos", "app_layer.tls.certificates",
// "app_layer.tls.events.<name>".
void export_stats(const TlsCounters& c, StatsSnapshot& out);

// app-layer.protocols.tls.encryption-handling (Suricata's): what happens to a session once its
// handshake is done (an application data record began, TlsParser's kAppDataBegin).
//   kDefault: the parser keeps tracking it (events, tls.* buffers), but the flow's payload and
//             raw stream are no longer inspected: rules with content on the payload stop matching.
//   kBypass:  as kDefault, and nothing more of the flow is parsed or inspected.
//   kFull:    inspected like any other protocol.
enum class EncryptionHandling : uint8_t { kDefault, kBypass, kFull };

struct TlsConfig {
    uint32_t max_handshake_message = 64 * 1024;  // bigger messages are skipped (event)
    uint32_t max_certificates = 16;              // certificates kept per chain
    EncryptionHandling encryption = EncryptionHandling::kDefault;
};

// What feed() made newly available.
enum Update : uint32_t {
    kNone = 0,
    kClientHello = 1U << 0,
    kServerHello = 1U << 1,
    kCertificate = 1U << 2,
    kEncrypted = 1U << 3,  // this direction's handshake turned encrypted (CCS / TLS 1.3)
    kAppData = 1U << 4,    // an application data record (type 23) ended
    // An application data record began (its header read): the handshake is done, as Suricata
    // takes it, unless it is TLS 1.3 early data (the ClientHello offered early_data and no
    // ServerHello yet).
    kAppDataBegin = 1U << 5,
    kRecordEnd = 1U << 6,  // a record (any type) ended
};

class TlsParser {
public:
    TlsParser(const TlsConfig& config, TlsCounters* counters);

    // In-order stream bytes of one direction, in any pieces. Returns an OR of Update bits.
    uint32_t feed(Dir dir, const uint8_t* data, size_t len);
    // End of flow: a record or handshake message left incomplete raises truncated_message.
    void finish();

    const ClientHello* client_hello() const { return has_ch_ ? &ch_ : nullptr; }
    const ServerHello* server_hello() const { return has_sh_ ? &sh_ : nullptr; }
    const CertInfo* cert() const { return has_cert_ ? &cert_ : nullptr; }
    // The negotiated version (ServerHello), 0 before one was seen.
    uint16_t version() const { return has_sh_ ? sh_.version() : 0; }
    // Set after a fatal record-layer error; further input is ignored.
    bool failed() const { return failed_; }
    uint32_t events() const { return events_; }  // bit (1 << Event), all raised on the flow
    bool has(Event e) const { return (events_ >> static_cast<unsigned>(e)) & 1U; }
    size_t memory() const;

    // Kept for the app layer's EVE records: the session was logged, and the events already
    // written as anomaly records (bit (1 << Event)).
    bool eve_logged = false;
    uint32_t eve_events_logged = 0;

private:
    struct Side {
        uint8_t hdr[5] = {0, 0, 0, 0, 0};
        uint8_t hdr_have = 0;
        uint32_t body_left = 0;   // bytes of the current record still to come
        uint8_t type = 0;         // content type of the current record
        bool first = true;        // no record seen yet (SSLv2 check)
        bool sslv2 = false;       // current record is SSLv2
        bool encrypted = false;   // after CCS: handshake records are not readable
        std::vector<uint8_t> hs;  // partial handshake message (header included)
        uint32_t hs_skip = 0;     // bytes of an oversized handshake message to drop
        std::vector<uint8_t> v2;  // SSLv2 record body
    };

    void raise(Event e);
    void handshake_bytes(Dir dir, Side& s, const uint8_t* data, size_t len);
    void handshake_message(Dir dir, uint8_t type, const uint8_t* body, size_t len);
    void parse_client_hello(const uint8_t* body, size_t len);
    void parse_sslv2_client_hello(const uint8_t* body, size_t len);
    void parse_server_hello(const uint8_t* body, size_t len);
    void parse_certificate_message(const uint8_t* body, size_t len);

    TlsConfig config_;
    TlsCounters* counters_;
    Side side_[2];
    ClientHello ch_;
    ServerHello sh_;
    CertInfo cert_;
    // TLS 1.3 0-RTT: the ClientHello offered early_data (extension 42) and the server has
    // not answered yet, so an application data record is no sign of a finished handshake.
    bool early_data() const;
    bool has_ch_ = false, has_sh_ = false, has_cert_ = false;
    bool failed_ = false;
    uint32_t events_ = 0;
    uint32_t update_ = 0;
};

}  // namespace picket::sensor::applayer::tls
