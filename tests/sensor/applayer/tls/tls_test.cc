// TLS parser: hand-written ClientHello/ServerHello bytes with JA3/JA3S strings and MD5s worked
// out independently (the JA3 README's own example, and md5sum of the expected strings), GREASE
// removal, byte-by-byte and record-split feeding, and a real OpenSSL handshake over memory BIOs
// (TLS 1.2 with a self-signed certificate made in the test, and TLS 1.3). Garbage and truncated
// input end in exact events.
#include "sensor/applayer/tls/tls.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <string>
#include <vector>

namespace picket::sensor::applayer::tls {
namespace {

using Bytes = std::vector<uint8_t>;

void put8(Bytes& b, unsigned v) {
    b.push_back(static_cast<uint8_t>(v));
}
void put16(Bytes& b, unsigned v) {
    put8(b, v >> 8);
    put8(b, v);
}
void put24(Bytes& b, unsigned v) {
    put8(b, v >> 16);
    put16(b, v & 0xffff);
}
void append(Bytes& b, const Bytes& x) {
    b.insert(b.end(), x.begin(), x.end());
}

struct Ext {
    uint16_t type;
    Bytes body;
};
Bytes u16_list(const std::vector<uint16_t>& v) {
    Bytes b;
    put16(b, static_cast<unsigned>(v.size() * 2));
    for (uint16_t x : v) {
        put16(b, x);
    }
    return b;
}
Bytes sni_ext(const std::string& host) {
    Bytes b;
    put16(b, static_cast<unsigned>(host.size() + 3));
    put8(b, 0);
    put16(b, static_cast<unsigned>(host.size()));
    b.insert(b.end(), host.begin(), host.end());
    return b;
}

// Handshake message (type, 24-bit length, body).
Bytes handshake(uint8_t type, const Bytes& body) {
    Bytes b;
    put8(b, type);
    put24(b, static_cast<unsigned>(body.size()));
    append(b, body);
    return b;
}
// Records of at most `max` bytes each carrying `payload`.
Bytes records(uint8_t type, const Bytes& payload, size_t max = 16384) {
    Bytes b;
    for (size_t off = 0; off < payload.size(); off += max) {
        size_t n = std::min(max, payload.size() - off);
        put8(b, type);
        put16(b, 0x0301);
        put16(b, static_cast<unsigned>(n));
        b.insert(b.end(), payload.begin() + static_cast<long>(off),
                 payload.begin() + static_cast<long>(off + n));
    }
    return b;
}

Bytes client_hello_body(uint16_t version, const std::vector<uint16_t>& suites,
                        const std::vector<Ext>& exts) {
    Bytes b;
    put16(b, version);
    b.insert(b.end(), 32, 0x11);  // random
    put8(b, 0);                   // session id
    append(b, u16_list(suites));
    put8(b, 1);
    put8(b, 0);  // compression: null
    Bytes e;
    for (const Ext& x : exts) {
        put16(e, x.type);
        put16(e, static_cast<unsigned>(x.body.size()));
        append(e, x.body);
    }
    put16(b, static_cast<unsigned>(e.size()));
    append(b, e);
    return b;
}

// The example of the JA3 README (salesforce/ja3): its string and MD5 are published there.
Bytes ja3_readme_client_hello() {
    return client_hello_body(
        0x0301, {47, 53, 5, 10, 49161, 49162, 49171, 49172, 50, 56, 19, 4},
        {{0, sni_ext("example.org")}, {10, u16_list({23, 24, 25})}, {11, Bytes{1, 0}}});
}

// A Chrome-like ClientHello with GREASE in suites, extensions, groups and versions.
Bytes grease_client_hello() {
    Bytes alpn = {0, 12, 2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    Bytes versions = {6, 0x3a, 0x3a, 0x03, 0x04, 0x03, 0x03};
    return client_hello_body(0x0303, {0x0a0a, 0x1301, 0xc02b, 0x002f},
                             {{0x1a1a, {}},
                              {0, sni_ext("www.example.com")},
                              {10, u16_list({0x2a2a, 29, 23})},
                              {11, Bytes{1, 0}},
                              {16, alpn},
                              {43, versions},
                              {0xff01, Bytes{0}}});
}

uint32_t ev(Event e) {
    return 1U << static_cast<unsigned>(e);
}

TEST(TlsClientHello, Ja3ReadmeExample) {
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    Bytes stream = records(22, handshake(1, ja3_readme_client_hello()));
    EXPECT_EQ(p.feed(Dir::kToServer, stream.data(), stream.size()), kClientHello | kRecordEnd);
    ASSERT_NE(p.client_hello(), nullptr);
    const ClientHello& ch = *p.client_hello();
    EXPECT_EQ(ch.sni, "example.org");
    EXPECT_EQ(ch.ja3, "769,47-53-5-10-49161-49162-49171-49172-50-56-19-4,0-10-11,23-24-25,0");
    EXPECT_EQ(ch.ja3_hash, "ada70206e40642a3e4461f35503241d5");
    EXPECT_EQ(p.events(), 0u);
    EXPECT_FALSE(p.failed());
    EXPECT_EQ(c.client_hellos.get(), 1u);
}

TEST(TlsClientHello, GreaseRemoved) {
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    Bytes stream = records(22, handshake(1, grease_client_hello()));
    p.feed(Dir::kToServer, stream.data(), stream.size());
    ASSERT_NE(p.client_hello(), nullptr);
    const ClientHello& ch = *p.client_hello();
    EXPECT_EQ(ch.ja3, "771,4865-49195-47,0-10-11-16-43-65281,29-23,0");
    EXPECT_EQ(ch.ja3_hash, "76d1087a673aa13a11cccd79e3574bdb");
    EXPECT_EQ(ch.sni, "www.example.com");
    EXPECT_EQ(ch.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
    EXPECT_EQ(ch.supported_versions, (std::vector<uint16_t>{0x3a3a, 0x0304, 0x0303}));
    EXPECT_EQ(ch.cipher_suites.size(), 4u);  // kept as sent
    EXPECT_EQ(ch.extensions.size(), 7u);
}

TEST(TlsClientHello, SameResultWhateverTheSplit) {
    Bytes hs = handshake(1, grease_client_hello());
    // The handshake message spread over records of 7 bytes, then fed one byte at a time.
    Bytes stream = records(22, hs, 7);
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    uint32_t updates = 0;
    for (size_t i = 0; i < stream.size(); ++i) {
        updates |= p.feed(Dir::kToServer, &stream[i], 1);
        if (i + 1 < stream.size()) {
            EXPECT_EQ(p.client_hello(), nullptr) << i;
        }
    }
    EXPECT_EQ(updates, kClientHello | kRecordEnd);
    ASSERT_NE(p.client_hello(), nullptr);
    EXPECT_EQ(p.client_hello()->ja3_hash, "76d1087a673aa13a11cccd79e3574bdb");
    EXPECT_EQ(p.events(), 0u);
    p.finish();
    EXPECT_EQ(p.events(), 0u);
    // Every two-piece split of the one-record form.
    Bytes one = records(22, hs);
    for (size_t cut = 0; cut <= one.size(); ++cut) {
        TlsParser q(TlsConfig{}, &c);
        q.feed(Dir::kToServer, one.data(), cut);
        q.feed(Dir::kToServer, one.data() + cut, one.size() - cut);
        ASSERT_NE(q.client_hello(), nullptr) << cut;
        EXPECT_EQ(q.client_hello()->ja3, "771,4865-49195-47,0-10-11-16-43-65281,29-23,0");
    }
}

TEST(TlsClientHello, MultipleSni) {
    Bytes body =
        client_hello_body(0x0303, {0x002f}, {{0, sni_ext("a.example")}, {0, sni_ext("b.example")}});
    Bytes stream = records(22, handshake(1, body));
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    p.feed(Dir::kToServer, stream.data(), stream.size());
    ASSERT_NE(p.client_hello(), nullptr);
    EXPECT_EQ(p.client_hello()->sni, "a.example");
    EXPECT_EQ(p.events(), ev(Event::kMultipleSni));
}

TEST(TlsServerHello, Ja3sAndVersion) {
    Bytes body;
    put16(body, 0x0303);
    body.insert(body.end(), 32, 0x22);
    put8(body, 0);
    put16(body, 49199);
    put8(body, 0);
    Bytes exts = {0xff, 0x01, 0, 1, 0};                        // renegotiation_info, empty
    append(exts, Bytes{0x00, 0x00, 0, 0});                     // server_name ack
    append(exts, Bytes{0x00, 0x0b, 0, 2, 1, 0});               // ec_point_formats
    append(exts, Bytes{0x00, 0x10, 0, 5, 0, 3, 2, 'h', '2'});  // ALPN "h2"
    put16(body, static_cast<unsigned>(exts.size()));
    append(body, exts);
    Bytes stream = records(22, handshake(2, body));
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    EXPECT_EQ(p.feed(Dir::kToClient, stream.data(), stream.size()), kServerHello | kRecordEnd);
    ASSERT_NE(p.server_hello(), nullptr);
    EXPECT_EQ(p.server_hello()->ja3s, "771,49199,65281-0-11-16");
    EXPECT_EQ(p.server_hello()->ja3s_hash, "ae53107a2e47ea20c72ac44821a728bf");
    EXPECT_EQ(p.server_hello()->alpn, "h2");
    EXPECT_EQ(version_string(p.version()), "TLS 1.2");
    // A ServerHello sent towards the server is out of place.
    TlsParser q(TlsConfig{}, &c);
    q.feed(Dir::kToServer, stream.data(), stream.size());
    EXPECT_EQ(q.server_hello(), nullptr);
    EXPECT_EQ(q.events(), ev(Event::kInvalidHandshakeMessage));
}

TEST(TlsVersion, Strings) {
    EXPECT_EQ(version_string(0), "UNDETERMINED");
    EXPECT_EQ(version_string(0x0002), "SSLv2");
    EXPECT_EQ(version_string(0x0300), "SSLv3");
    EXPECT_EQ(version_string(0x0301), "TLSv1");
    EXPECT_EQ(version_string(0x0302), "TLS 1.1");
    EXPECT_EQ(version_string(0x0303), "TLS 1.2");
    EXPECT_EQ(version_string(0x0304), "TLS 1.3");
    EXPECT_EQ(version_string(0x7f17), "TLS 1.3 draft-23");
    EXPECT_EQ(version_string(0x1234), "0x1234");
    EXPECT_TRUE(is_grease(0x0a0a));
    EXPECT_TRUE(is_grease(0xfafa));
    EXPECT_FALSE(is_grease(0x0a1a));
}

TEST(TlsErrors, InvalidRecordTypeFails) {
    Bytes junk = {0x47, 0x45, 0x54, 0x20, 0x2f, 0x20, 0x48, 0x54};
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    EXPECT_EQ(p.feed(Dir::kToServer, junk.data(), junk.size()), kNone);
    EXPECT_TRUE(p.failed());
    EXPECT_EQ(p.events(), ev(Event::kInvalidRecordType));
    // Later input is ignored.
    Bytes stream = records(22, handshake(1, grease_client_hello()));
    p.feed(Dir::kToServer, stream.data(), stream.size());
    EXPECT_EQ(p.client_hello(), nullptr);
    StatsSnapshot s;
    export_stats(c, s);
    EXPECT_EQ(s.get("app_layer.tls.events.invalid_record_type"), 1u);
}

TEST(TlsErrors, RecordOverflowAndVersion) {
    TlsCounters c;
    Bytes big = {22, 3, 3, 0x48, 0x01};  // 18433 > 2^14 + 2048
    TlsParser p(TlsConfig{}, &c);
    p.feed(Dir::kToClient, big.data(), big.size());
    EXPECT_TRUE(p.failed());
    EXPECT_EQ(p.events(), ev(Event::kRecordOverflow));
    Bytes badver = {22, 2, 0, 0, 4};
    TlsParser q(TlsConfig{}, &c);
    q.feed(Dir::kToClient, badver.data(), badver.size());
    EXPECT_EQ(q.events(), ev(Event::kInvalidRecordVersion));
}

TEST(TlsErrors, TruncatedAtEveryLength) {
    Bytes stream = records(22, handshake(1, grease_client_hello()));
    TlsCounters c;
    for (size_t n = 1; n < stream.size(); ++n) {
        TlsParser p(TlsConfig{}, &c);
        p.feed(Dir::kToServer, stream.data(), n);
        EXPECT_EQ(p.client_hello(), nullptr);
        p.finish();
        EXPECT_EQ(p.events(), ev(Event::kTruncatedMessage)) << n;
    }
}

TEST(TlsErrors, BodyLengthsDisagree) {
    Bytes body = grease_client_hello();
    body[35] = 0x40;  // cipher_suites length (after version, random, session id) too big
    Bytes stream = records(22, handshake(1, body));
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    p.feed(Dir::kToServer, stream.data(), stream.size());
    EXPECT_EQ(p.client_hello(), nullptr);
    EXPECT_EQ(p.events(), ev(Event::kInvalidHandshakeMessage));
    EXPECT_FALSE(p.failed());
}

TEST(TlsErrors, CertificateTooLongIsSkipped) {
    Bytes certs;
    put24(certs, 3000 + 3);
    put24(certs, 3000);
    certs.insert(certs.end(), 3000, 0x30);
    Bytes stream = records(22, handshake(11, certs), 1000);
    TlsConfig cfg;
    cfg.max_handshake_message = 2048;
    TlsCounters c;
    TlsParser p(cfg, &c);
    p.feed(Dir::kToClient, stream.data(), stream.size());
    EXPECT_EQ(p.cert(), nullptr);
    EXPECT_EQ(p.events(), ev(Event::kCertificateTooLong));
    EXPECT_FALSE(p.failed());
    EXPECT_LT(p.memory(), 2048u + 1024u);
}

TEST(TlsSslv2, ClientHelloFlagged) {
    // SSLv2 CLIENT-HELLO advertising TLS 1.0 with two suites (one SSLv2-only spec).
    Bytes body = {1, 0x03, 0x01, 0, 6, 0, 0, 0, 16, 0x07, 0x00, 0xc0, 0x00, 0x00, 0x2f};
    body.insert(body.end(), 16, 0xab);
    Bytes rec = {static_cast<uint8_t>(0x80), static_cast<uint8_t>(body.size())};
    append(rec, body);
    EXPECT_EQ(probe(rec.data(), rec.size()), ProbeResult::kYes);
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    EXPECT_EQ(p.feed(Dir::kToServer, rec.data(), rec.size()), kClientHello);
    ASSERT_NE(p.client_hello(), nullptr);
    EXPECT_TRUE(p.client_hello()->sslv2);
    EXPECT_EQ(p.client_hello()->legacy_version, 0x0301);
    EXPECT_EQ(p.client_hello()->cipher_suites, (std::vector<uint16_t>{0x002f}));
    EXPECT_EQ(p.events(), ev(Event::kSslv2ClientHello));
}

TEST(TlsProbe, Starts) {
    Bytes stream = records(22, handshake(1, grease_client_hello()));
    EXPECT_EQ(probe(stream.data(), 0), ProbeResult::kNeedMore);
    EXPECT_EQ(probe(stream.data(), 2), ProbeResult::kNeedMore);
    EXPECT_EQ(probe(stream.data(), 5), ProbeResult::kNeedMore);
    EXPECT_EQ(probe(stream.data(), 6), ProbeResult::kYes);
    Bytes http = {'G', 'E', 'T', ' ', '/', ' '};
    EXPECT_EQ(probe(http.data(), http.size()), ProbeResult::kNo);
    Bytes appdata = {23, 3, 3, 0, 10, 0};
    EXPECT_EQ(probe(appdata.data(), appdata.size()), ProbeResult::kNo);
}

// ---- Real handshakes with OpenSSL over memory BIOs -----------------------------------------

struct Capture {
    Bytes to_server, to_client;
};

X509* make_cert(EVP_PKEY* key) {
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 0x1234ABCD);
    ASN1_TIME_set(X509_getm_notBefore(x), 1700000000);
    ASN1_TIME_set(X509_getm_notAfter(x), 1800000000);
    X509_set_pubkey(x, key);
    X509_NAME* subj = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(subj, "C", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("US"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(subj, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("Picket Test"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("test.example"), -1, -1, 0);
    X509_NAME* iss = X509_NAME_new();
    X509_NAME_add_entry_by_txt(iss, "C", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("US"),
                               -1, -1, 0);
    X509_NAME_add_entry_by_txt(iss, "O", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("Let's Encrypt"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(iss, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("R3"), -1, -1, 0);
    X509_set_issuer_name(x, iss);
    X509_NAME_free(iss);
    X509_sign(x, key, EVP_sha256());
    return x;
}

// Runs a handshake to completion and records what each side wrote.
Capture run_handshake(int max_version, const char* sni, Bytes* cert_der) {
    Capture cap;
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = make_cert(key);
    unsigned char* der = nullptr;
    int der_len = i2d_X509(cert, &der);
    cert_der->assign(der, der + der_len);
    OPENSSL_free(der);

    SSL_CTX* sctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_use_certificate(sctx, cert);
    SSL_CTX_use_PrivateKey(sctx, key);
    SSL_CTX_set_max_proto_version(sctx, max_version);
    SSL_CTX_set_max_proto_version(cctx, max_version);
    SSL* s = SSL_new(sctx);
    SSL* c = SSL_new(cctx);
    SSL_set_tlsext_host_name(c, sni);
    BIO* c_in = BIO_new(BIO_s_mem());
    BIO* c_out = BIO_new(BIO_s_mem());
    BIO* s_in = BIO_new(BIO_s_mem());
    BIO* s_out = BIO_new(BIO_s_mem());
    SSL_set_bio(c, c_in, c_out);
    SSL_set_bio(s, s_in, s_out);
    SSL_set_connect_state(c);
    SSL_set_accept_state(s);
    auto pump = [](BIO* from, BIO* to, Bytes* log) {
        char buf[4096];
        int n;
        while ((n = BIO_read(from, buf, sizeof buf)) > 0) {
            log->insert(log->end(), buf, buf + n);
            BIO_write(to, buf, n);
        }
    };
    for (int i = 0; i < 10 && !(SSL_is_init_finished(c) && SSL_is_init_finished(s)); ++i) {
        SSL_do_handshake(c);
        pump(c_out, s_in, &cap.to_server);
        SSL_do_handshake(s);
        pump(s_out, c_in, &cap.to_client);
    }
    EXPECT_TRUE(SSL_is_init_finished(c) && SSL_is_init_finished(s));
    SSL_free(c);
    SSL_free(s);
    SSL_CTX_free(cctx);
    SSL_CTX_free(sctx);
    X509_free(cert);
    EVP_PKEY_free(key);
    return cap;
}

TEST(TlsOpenssl, Tls12ServerCertificate) {
    Bytes der;
    Capture cap = run_handshake(TLS1_2_VERSION, "test.example", &der);
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    EXPECT_EQ(p.feed(Dir::kToServer, cap.to_server.data(), cap.to_server.size()) & kClientHello,
              kClientHello);
    EXPECT_EQ(p.feed(Dir::kToClient, cap.to_client.data(), cap.to_client.size()),
              kServerHello | kCertificate | kEncrypted | kRecordEnd);
    ASSERT_NE(p.client_hello(), nullptr);
    EXPECT_EQ(p.client_hello()->sni, "test.example");
    EXPECT_EQ(p.client_hello()->ja3.substr(0, 4), "771,");
    EXPECT_EQ(p.client_hello()->ja3_hash, md5_hex(p.client_hello()->ja3));
    EXPECT_EQ(p.client_hello()->ja3_hash.size(), 32u);
    EXPECT_EQ(version_string(p.version()), "TLS 1.2");
    ASSERT_NE(p.cert(), nullptr);
    const CertInfo& ci = *p.cert();
    EXPECT_TRUE(ci.parsed);
    EXPECT_EQ(ci.subject, "C=US, O=Picket Test, CN=test.example");
    EXPECT_EQ(ci.issuer, "C=US, O=Let's Encrypt, CN=R3");
    EXPECT_EQ(ci.serial, "12:34:AB:CD");
    EXPECT_EQ(ci.not_before, 1700000000);
    EXPECT_EQ(ci.not_after, 1800000000);
    ASSERT_EQ(ci.chain.size(), 1u);
    EXPECT_EQ(ci.chain[0], der);
    EXPECT_EQ(p.events(), 0u);
    EXPECT_FALSE(p.failed());
    EXPECT_EQ(c.certificates.get(), 1u);

    // The same byte by byte, directions interleaved.
    TlsParser q(TlsConfig{}, &c);
    for (uint8_t b : cap.to_server) {
        q.feed(Dir::kToServer, &b, 1);
    }
    for (uint8_t b : cap.to_client) {
        q.feed(Dir::kToClient, &b, 1);
    }
    ASSERT_NE(q.cert(), nullptr);
    EXPECT_EQ(q.cert()->subject, ci.subject);
    EXPECT_EQ(q.client_hello()->ja3, p.client_hello()->ja3);
    EXPECT_EQ(q.server_hello()->ja3s, p.server_hello()->ja3s);
    q.finish();
    EXPECT_EQ(q.events(), 0u);
}

TEST(TlsOpenssl, Tls13CertificateIsEncrypted) {
    Bytes der;
    Capture cap = run_handshake(TLS1_3_VERSION, "v13.example", &der);
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    p.feed(Dir::kToServer, cap.to_server.data(), cap.to_server.size());
    // TLS 1.3 sends the rest of its handshake in application data records (type 23).
    EXPECT_EQ(p.feed(Dir::kToClient, cap.to_client.data(), cap.to_client.size()),
              kServerHello | kEncrypted | kAppData | kAppDataBegin | kRecordEnd);
    EXPECT_EQ(p.client_hello()->sni, "v13.example");
    EXPECT_EQ(version_string(p.version()), "TLS 1.3");
    EXPECT_EQ(p.server_hello()->selected_version, 0x0304);
    EXPECT_EQ(p.cert(), nullptr);
    EXPECT_EQ(p.events(), 0u);
}

// Suricata's handshake end: the first application data record (its header is enough), but
// not TLS 1.3 early data before the ServerHello; every record's end asks for the raw stream.
TEST(TlsAppData, HandshakeEndsWithTheFirstApplicationDataRecord) {
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    const Bytes ch = records(22, handshake(1, ja3_readme_client_hello()));
    EXPECT_EQ(p.feed(Dir::kToServer, ch.data(), ch.size()), kClientHello | kRecordEnd);
    Bytes app = records(23, Bytes(40, 0xab));
    // The header alone: the handshake is done; the record's end comes with its last byte.
    EXPECT_EQ(p.feed(Dir::kToServer, app.data(), 5), kAppDataBegin);
    EXPECT_EQ(p.feed(Dir::kToServer, app.data() + 5, app.size() - 6), kNone);
    EXPECT_EQ(p.feed(Dir::kToServer, app.data() + app.size() - 1, 1), kAppData | kRecordEnd);
}

TEST(TlsAppData, EarlyDataBeforeTheServerHelloDoesNotEndTheHandshake) {
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    const Bytes ch = records(
        22,
        handshake(1, client_hello_body(0x0303, {0x1301}, {{0, sni_ext("e.example")}, {42, {}}})));
    EXPECT_EQ(p.feed(Dir::kToServer, ch.data(), ch.size()), kClientHello | kRecordEnd);
    const Bytes early = records(23, Bytes(20, 0xcd));
    EXPECT_EQ(p.feed(Dir::kToServer, early.data(), early.size()), kAppData | kRecordEnd);
    Bytes sh_body;
    put16(sh_body, 0x0303);
    sh_body.insert(sh_body.end(), 32, 0x22);
    put8(sh_body, 0);
    put16(sh_body, 0x1301);
    put8(sh_body, 0);
    put16(sh_body, 0);
    const Bytes sh = records(22, handshake(2, sh_body));
    EXPECT_EQ(p.feed(Dir::kToClient, sh.data(), sh.size()), kServerHello | kRecordEnd);
    EXPECT_EQ(p.feed(Dir::kToServer, early.data(), early.size()),
              kAppDataBegin | kAppData | kRecordEnd);
}

TEST(TlsCert, GarbageDerIsInvalidCertificate) {
    Bytes certs;
    put24(certs, 3 + 4);
    put24(certs, 4);
    append(certs, Bytes{0x30, 0x02, 0x02, 0x00});
    Bytes stream = records(22, handshake(11, certs));
    TlsCounters c;
    TlsParser p(TlsConfig{}, &c);
    EXPECT_EQ(p.feed(Dir::kToClient, stream.data(), stream.size()), kCertificate | kRecordEnd);
    ASSERT_NE(p.cert(), nullptr);
    EXPECT_FALSE(p.cert()->parsed);
    EXPECT_EQ(p.cert()->chain.size(), 1u);
    EXPECT_EQ(p.events(), ev(Event::kInvalidCertificate));
}

}  // namespace
}  // namespace picket::sensor::applayer::tls
