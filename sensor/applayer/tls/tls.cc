#include "sensor/applayer/tls/tls.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string_view>

#include "sensor/applayer/byte_reader.h"
#include "sensor/applayer/event_stats.h"

namespace picket::sensor::applayer::tls {

namespace {

constexpr uint32_t kMaxRecord = 16384 + 2048;  // TLSCiphertext limit, RFC 5246 6.2.3
constexpr uint8_t kCcs = 20, kHandshake = 22, kApplicationData = 23, kHeartbeat = 24;

// The extensions block that may end a ClientHello or ServerHello (RFC 8446 4.2): appends each
// extension's type to *types and hands its body to on_ext(type, body). False when the block
// does not decode; absent (nothing left) is fine.
template <typename F>
bool read_extensions(ByteReader& r, std::vector<uint16_t>* types, F&& on_ext) {
    if (r.left() == 0) {
        return true;
    }
    ByteReader exts;
    if (!r.vec(2, &exts)) {
        return false;
    }
    while (exts.left() > 0) {
        uint16_t type;
        ByteReader e;
        if (!exts.u16(&type) || !exts.vec(2, &e)) {
            return false;
        }
        types->push_back(type);
        on_ext(type, e);
    }
    return true;
}

void append_list(std::string* s, const std::vector<uint16_t>& v) {
    bool first = true;
    for (uint16_t x : v) {
        if (is_grease(x)) {
            continue;
        }
        if (!first) {
            s->push_back('-');
        }
        *s += std::to_string(x);
        first = false;
    }
}

// RFC 8446 4.1.3: the random of a HelloRetryRequest (SHA-256 of "HelloRetryRequest").
constexpr uint8_t kHrrRandom[32] = {
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C};

bool is_tls13(uint16_t v) {
    return v == 0x0304 || (v >> 8) == 0x7f;
}

// ---- DER (X.690) -------------------------------------------------------------------------

constexpr const char* kEventNames[] = {
    "invalid_record_type",
    "invalid_record_version",
    "invalid_record_length",
    "record_overflow",
    "invalid_handshake_message",
    "handshake_too_long",
    "certificate_too_long",
    "invalid_certificate",
    "truncated_message",
    "multiple_sni",
    "invalid_sni",
    "sslv2_client_hello",
};
static_assert(std::size(kEventNames) == kEventCount);

}  // namespace

std::string version_string(uint16_t version) {
    switch (version) {
        case 0:
            return "UNDETERMINED";
        case 0x0002:
            return "SSLv2";
        case 0x0300:
            return "SSLv3";
        case 0x0301:
            return "TLSv1";
        case 0x0302:
            return "TLS 1.1";
        case 0x0303:
            return "TLS 1.2";
        case 0x0304:
            return "TLS 1.3";
        default:
            break;
    }
    char buf[24];
    if ((version >> 8) == 0x7f && (version & 0xff) >= 16 && (version & 0xff) <= 28) {
        std::snprintf(buf, sizeof buf, "TLS 1.3 draft-%u", version & 0xffu);
    } else {
        std::snprintf(buf, sizeof buf, "0x%04x", version);
    }
    return buf;
}

const char* event_name(Event e) {
    const auto i = static_cast<size_t>(e);
    return i < kEventCount ? kEventNames[i] : "unknown";
}

ProbeResult probe(const uint8_t* data, size_t len) {
    if (len == 0) {
        return ProbeResult::kNeedMore;
    }
    if (data[0] == kHandshake) {
        if (len < 3) {
            return ProbeResult::kNeedMore;
        }
        if (data[1] != 3 || data[2] > 4) {
            return ProbeResult::kNo;
        }
        if (len < 6) {
            return ProbeResult::kNeedMore;
        }
        size_t rec = be16(data + 3);
        if (rec < 4 || rec > kMaxRecord) {
            return ProbeResult::kNo;
        }
        return data[5] == 1 || data[5] == 2 ? ProbeResult::kYes : ProbeResult::kNo;
    }
    // SSLv2 ClientHello: 2-byte header with the high bit, msg type 1, version 2 or 3.x.
    if (data[0] & 0x80) {
        if (len < 5) {
            return ProbeResult::kNeedMore;
        }
        size_t rec = static_cast<size_t>(data[0] & 0x7F) << 8 | data[1];
        bool version_ok = (data[3] == 0 && data[4] == 2) || (data[3] == 3 && data[4] <= 4);
        return rec >= 9 && data[2] == 1 && version_ok ? ProbeResult::kYes : ProbeResult::kNo;
    }
    return ProbeResult::kNo;
}

void export_stats(const TlsCounters& c, StatsSnapshot& out) {
    out.add("app_layer.tls.client_hellos", c.client_hellos.get());
    out.add("app_layer.tls.server_hellos", c.server_hellos.get());
    out.add("app_layer.tls.certificates", c.certificates.get());
    export_event_counters(out, "app_layer.tls.events.", c.events, event_name);
}

TlsParser::TlsParser(const TlsConfig& config, TlsCounters* counters)
    : config_(config), counters_(counters) {}

void TlsParser::raise(Event e) {
    uint32_t bit = 1U << static_cast<unsigned>(e);
    // Counted once per flow, like Suricata's app-layer events.
    if ((events_ & bit) == 0) {
        ++counters_->events[static_cast<size_t>(e)];
    }
    events_ |= bit;
}

bool TlsParser::early_data() const {
    return has_ch_ && !has_sh_ &&
           std::find(ch_.extensions.begin(), ch_.extensions.end(), 42) != ch_.extensions.end();
}

uint32_t TlsParser::feed(Dir dir, const uint8_t* data, size_t len) {
    update_ = 0;
    Side& s = side_[static_cast<size_t>(dir)];
    while (len > 0 && !failed_) {
        if (s.body_left == 0) {
            // Record header: 5 bytes, or 2 for an SSLv2 record (only as the client's first).
            if (s.hdr_have == 0 && s.first && dir == Dir::kToServer && (data[0] & 0x80)) {
                s.sslv2 = true;
            }
            size_t need = s.sslv2 ? 2 : 5;
            while (s.hdr_have < need && len > 0) {
                s.hdr[s.hdr_have++] = *data++;
                --len;
            }
            if (s.hdr_have < need) {
                break;
            }
            s.hdr_have = 0;
            s.first = false;
            if (s.sslv2) {
                s.body_left = static_cast<uint32_t>(s.hdr[0] & 0x7F) << 8 | s.hdr[1];
                s.v2.clear();
                if (s.body_left == 0) {
                    raise(Event::kInvalidRecordLength);
                    failed_ = true;
                }
                continue;
            }
            s.type = s.hdr[0];
            uint32_t rec_len = be16(s.hdr + 3);
            if (s.type < kCcs || s.type > kHeartbeat) {
                raise(Event::kInvalidRecordType);
                failed_ = true;
                break;
            }
            if (s.hdr[1] != 3) {
                raise(Event::kInvalidRecordVersion);
                failed_ = true;
                break;
            }
            if (rec_len > kMaxRecord) {
                raise(Event::kRecordOverflow);
                failed_ = true;
                break;
            }
            if (s.type == kCcs && !s.encrypted) {
                // Everything this side sends from here on is under the new keys.
                s.encrypted = true;
                s.hs.clear();
                s.hs_skip = 0;
                update_ |= kEncrypted;
            }
            if (s.type == kApplicationData && !early_data()) {
                update_ |= kAppDataBegin;
            }
            if (rec_len == 0 && s.type == kHandshake) {
                raise(Event::kInvalidRecordLength);
            }
            s.body_left = rec_len;
            continue;
        }
        size_t take = len < s.body_left ? len : s.body_left;
        if (s.sslv2) {
            s.v2.insert(s.v2.end(), data, data + take);
        } else if (s.type == kHandshake && !s.encrypted) {
            handshake_bytes(dir, s, data, take);
        }
        data += take;
        len -= take;
        s.body_left -= static_cast<uint32_t>(take);
        if (s.body_left == 0 && !s.sslv2) {
            update_ |= kRecordEnd | (s.type == kApplicationData ? kAppData : kNone);
        }
        if (s.body_left == 0 && s.sslv2) {
            s.sslv2 = false;
            parse_sslv2_client_hello(s.v2.data(), s.v2.size());
            s.v2.clear();
            s.v2.shrink_to_fit();
        }
    }
    return update_;
}

void TlsParser::handshake_bytes(Dir dir, Side& s, const uint8_t* data, size_t len) {
    while (len > 0 && !s.encrypted) {
        if (s.hs_skip > 0) {
            size_t k = len < s.hs_skip ? len : s.hs_skip;
            s.hs_skip -= static_cast<uint32_t>(k);
            data += k;
            len -= k;
            continue;
        }
        if (s.hs.empty() && len >= 4) {  // common case: whole message in hand, no copy
            uint32_t mlen = be24(data + 1);
            if (mlen <= config_.max_handshake_message && len >= 4 + static_cast<size_t>(mlen)) {
                handshake_message(dir, data[0], data + 4, mlen);
                data += 4 + mlen;
                len -= 4 + mlen;
                continue;
            }
        }
        while (s.hs.size() < 4 && len > 0) {
            s.hs.push_back(*data++);
            --len;
        }
        if (s.hs.size() < 4) {
            return;
        }
        uint32_t mlen = be24(s.hs.data() + 1);
        if (mlen > config_.max_handshake_message) {
            raise(s.hs[0] == 11 ? Event::kCertificateTooLong : Event::kHandshakeTooLong);
            s.hs_skip = mlen;
            s.hs.clear();
            continue;
        }
        size_t missing = 4 + static_cast<size_t>(mlen) - s.hs.size();
        size_t k = len < missing ? len : missing;
        s.hs.insert(s.hs.end(), data, data + k);
        data += k;
        len -= k;
        if (s.hs.size() == 4 + static_cast<size_t>(mlen)) {
            handshake_message(dir, s.hs[0], s.hs.data() + 4, mlen);
            s.hs.clear();
            if (s.hs.capacity() > 4096) {
                s.hs.shrink_to_fit();  // don't keep a 64 KiB certificate buffer per flow
            }
        }
    }
}

void TlsParser::handshake_message(Dir dir, uint8_t type, const uint8_t* body, size_t len) {
    // A ClientHello (1) goes to the server, a ServerHello (2) to the client.
    if ((type == 1 && dir != Dir::kToServer) || (type == 2 && dir != Dir::kToClient)) {
        raise(Event::kInvalidHandshakeMessage);
        return;
    }
    switch (type) {
        case 1:  // ClientHello
            parse_client_hello(body, len);
            return;
        case 2:  // ServerHello
            parse_server_hello(body, len);
            return;
        case 11:  // Certificate; the client's own (mutual TLS) is not inspected
            if (dir == Dir::kToClient) {
                parse_certificate_message(body, len);
            }
            return;
        default:
            return;
    }
}

void TlsParser::parse_client_hello(const uint8_t* body, size_t len) {
    ++counters_->client_hellos;
    if (has_ch_) {
        return;  // a second ClientHello (after HelloRetryRequest): JA3 stays the first one's
    }
    ClientHello ch;
    ByteReader r(body, len);
    const uint8_t* random;
    ByteReader sid, suites, comp;
    if (!r.u16(&ch.legacy_version) || !r.bytes(32, &random) || !r.vec(1, &sid) ||
        !r.vec(2, &suites) || suites.left() % 2 != 0 || !r.vec(1, &comp)) {
        raise(Event::kInvalidHandshakeMessage);
        return;
    }
    ch.session_id.assign(sid.data(), sid.data() + sid.left());
    uint16_t v;
    while (suites.u16(&v)) {
        ch.cipher_suites.push_back(v);
    }
    bool sni_seen = false;
    const bool exts_ok = read_extensions(r, &ch.extensions, [&](uint16_t type, ByteReader& e) {
        ByteReader l;
        switch (type) {
            case 0: {  // server_name, RFC 6066 3
                if (sni_seen) {
                    raise(Event::kMultipleSni);
                    break;
                }
                sni_seen = true;
                if (e.left() == 0) {
                    break;  // the empty form a server echoes back
                }
                if (!e.vec(2, &l)) {
                    raise(Event::kInvalidSni);
                    break;
                }
                bool host_seen = false;
                while (l.left() > 0) {
                    uint8_t nt;
                    ByteReader host;
                    if (!l.u8(&nt) || !l.vec(2, &host)) {
                        raise(Event::kInvalidSni);
                        break;
                    }
                    if (nt != 0) {
                        continue;
                    }
                    if (host_seen) {
                        raise(Event::kMultipleSni);
                        continue;
                    }
                    host_seen = true;
                    ch.sni.assign(reinterpret_cast<const char*>(host.data()), host.left());
                }
                break;
            }
            case 10:  // supported_groups
                e.list(2, &ch.groups);
                break;
            case 11:  // ec_point_formats
                e.list(1, &ch.point_formats);
                break;
            case 16: {  // ALPN
                if (e.vec(2, &l)) {
                    ByteReader name;
                    while (l.vec(1, &name)) {
                        ch.alpn.emplace_back(reinterpret_cast<const char*>(name.data()),
                                             name.left());
                    }
                }
                break;
            }
            case 43:  // supported_versions
                e.list(1, &ch.supported_versions);
                break;
            default:
                break;
        }
    });
    if (!exts_ok) {
        raise(Event::kInvalidHandshakeMessage);
        return;
    }
    // JA3 (Salesforce): SSLVersion,Ciphers,Extensions,EllipticCurves,EllipticCurvePointFormats
    ch.ja3 = std::to_string(ch.legacy_version);
    ch.ja3.push_back(',');
    append_list(&ch.ja3, ch.cipher_suites);
    ch.ja3 += ",";
    append_list(&ch.ja3, ch.extensions);
    ch.ja3 += ",";
    append_list(&ch.ja3, ch.groups);
    ch.ja3 += ",";
    for (size_t i = 0; i < ch.point_formats.size(); ++i) {
        if (i != 0) {
            ch.ja3 += "-";
        }
        ch.ja3 += std::to_string(ch.point_formats[i]);
    }
    ch.ja3_hash = md5_hex(ch.ja3);
    ch_ = std::move(ch);
    has_ch_ = true;
    update_ |= kClientHello;
}

// SSLv2 CLIENT-HELLO (RFC 5246 E.2): msg_type(1)=1, version(2), cipher_spec_length(2),
// session_id_length(2), challenge_length(2), cipher_specs (3 bytes each), session_id,
// challenge. Only the 3-byte specs of the form 00 XX YY are TLS suites.
void TlsParser::parse_sslv2_client_hello(const uint8_t* body, size_t len) {
    raise(Event::kSslv2ClientHello);
    ByteReader r(body, len);
    uint8_t type;
    uint16_t version, spec_len, sid_len, chal_len;
    const uint8_t* specs;
    if (!r.u8(&type) || type != 1 || !r.u16(&version) || !r.u16(&spec_len) || !r.u16(&sid_len) ||
        !r.u16(&chal_len) || spec_len % 3 != 0 || !r.bytes(spec_len, &specs)) {
        raise(Event::kInvalidHandshakeMessage);
        return;
    }
    ++counters_->client_hellos;
    if (has_ch_) {
        return;
    }
    ClientHello ch;
    ch.sslv2 = true;
    ch.legacy_version = version;
    for (size_t i = 0; i + 3 <= spec_len; i += 3) {
        if (specs[i] == 0) {
            ch.cipher_suites.push_back(be16(specs + i + 1));
        }
    }
    ch_ = std::move(ch);
    has_ch_ = true;
    update_ |= kClientHello;
}

void TlsParser::parse_server_hello(const uint8_t* body, size_t len) {
    ++counters_->server_hellos;
    if (has_sh_ && !sh_.hello_retry_request) {
        return;
    }
    ServerHello sh;
    ByteReader r(body, len);
    const uint8_t* random;
    ByteReader sid;
    if (!r.u16(&sh.legacy_version) || !r.bytes(32, &random) || !r.vec(1, &sid) ||
        !r.u16(&sh.cipher_suite) || !r.u8(&sh.compression)) {
        raise(Event::kInvalidHandshakeMessage);
        return;
    }
    sh.hello_retry_request = std::memcmp(random, kHrrRandom, 32) == 0;
    const bool exts_ok = read_extensions(r, &sh.extensions, [&](uint16_t type, ByteReader& e) {
        if (type == 43) {
            e.u16(&sh.selected_version);
        } else if (type == 16) {
            ByteReader l, name;
            if (e.vec(2, &l) && l.vec(1, &name)) {
                sh.alpn.assign(reinterpret_cast<const char*>(name.data()), name.left());
            }
        }
    });
    if (!exts_ok) {
        raise(Event::kInvalidHandshakeMessage);
        return;
    }
    // JA3S: SSLVersion,Cipher,SSLExtension
    sh.ja3s = std::to_string(sh.legacy_version);
    sh.ja3s.push_back(',');
    sh.ja3s.append(std::to_string(sh.cipher_suite));
    sh.ja3s.push_back(',');
    append_list(&sh.ja3s, sh.extensions);
    sh.ja3s_hash = md5_hex(sh.ja3s);
    sh_ = std::move(sh);
    has_sh_ = true;
    update_ |= kServerHello;
    if (!sh_.hello_retry_request && is_tls13(sh_.version())) {
        // TLS 1.3: everything the server sends after ServerHello is encrypted (RFC 8446 2).
        Side& s = side_[static_cast<size_t>(Dir::kToClient)];
        s.encrypted = true;
        s.hs.clear();
        s.hs_skip = 0;
        update_ |= kEncrypted;
    }
}

void TlsParser::parse_certificate_message(const uint8_t* body, size_t len) {
    if (has_cert_) {
        return;
    }
    ByteReader r(body, len);
    ByteReader list;
    if (!r.vec(3, &list) || r.left() != 0) {
        raise(Event::kInvalidHandshakeMessage);
        return;
    }
    CertInfo info;
    while (list.left() > 0) {
        ByteReader der;
        if (!list.vec(3, &der)) {
            raise(Event::kInvalidHandshakeMessage);
            return;
        }
        if (info.chain.size() < config_.max_certificates) {
            info.chain.emplace_back(der.data(), der.data() + der.left());
        }
    }
    if (info.chain.empty()) {
        return;  // an empty Certificate message (no certificate)
    }
    if (!parse_certificate(info.chain[0].data(), info.chain[0].size(), &info)) {
        raise(Event::kInvalidCertificate);
    }
    ++counters_->certificates;
    cert_ = std::move(info);
    has_cert_ = true;
    update_ |= kCertificate;
}

void TlsParser::finish() {
    if (failed_) {
        return;
    }
    for (const Side& s : side_) {
        if (s.hdr_have != 0 || s.body_left != 0 || !s.hs.empty() || s.hs_skip != 0) {
            raise(Event::kTruncatedMessage);
            return;
        }
    }
}

size_t TlsParser::memory() const {
    size_t n = sizeof(*this);
    for (const Side& s : side_) {
        n += s.hs.capacity() + s.v2.capacity();
    }
    for (const auto& c : cert_.chain) {
        n += c.capacity();
    }
    n += ch_.cipher_suites.capacity() * 2 + ch_.extensions.capacity() * 2 + ch_.ja3.capacity();
    return n;
}

}  // namespace picket::sensor::applayer::tls
