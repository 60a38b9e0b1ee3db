// EVE protocol records of the app layer (http, dns, tls, fileinfo, anomaly): real byte
// streams through AppLayer, exact record strings, and every record checked against
// Suricata's EVE JSON schema.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sensor/applayer/applayer.h"

namespace picket::sensor::applayer {
namespace {

using flow::Direction;
using Bytes = std::vector<uint8_t>;

// One record as "event_type dir [tx_id] members": dir is > (to server) or < (to client).
struct Rec {
    std::string type;
    Direction dir;
    bool has_tx;
    uint64_t tx;
    std::string json;
};

class Harness {
public:
    explicit Harness(const AppLogConfig& log) : config_(make(log)), app_(config_) {}
    ~Harness() { app_.release_flow(flow_); }

    void feed(Direction d, const std::string& s, bool tcp = true) {
        app_.on_data(flow_, d, reinterpret_cast<const uint8_t*>(s.data()), s.size(), tcp, out_, 8);
        take();
    }
    void feed(Direction d, const Bytes& b, bool tcp = true) {
        app_.on_data(flow_, d, b.data(), b.size(), tcp, out_, 8);
        take();
    }
    void eof(Direction d) {
        app_.on_eof(flow_, d, out_, 8);
        take();
    }
    void finish() {
        app_.finish_records(flow_);
        take();
    }
    std::string metadata(uint64_t tx) {
        std::string s;
        app_.render_metadata(flow_, tx, &s);
        return s;
    }
    std::vector<Rec> recs;

private:
    static AppLayerConfig make(const AppLogConfig& log) {
        AppLayerConfig c;
        c.log = log;
        return c;
    }
    void take() {
        for (const AppRecord& r : app_.records()) {
            recs.push_back({r.event_type, r.dir, r.has_tx_id, r.tx_id,
                            app_.records_json().substr(r.offset, r.len)});
        }
        app_.clear_records();
    }
    AppLayerConfig config_;
    AppLayer app_;
    flow::Flow flow_;
    TxUpdate out_[8];
};

// Every record produced by the cases below, for the schema check: with
// PICKET_RECORDS_OUT set (the schema test runs this binary again with it), appended to that
// file as whole EVE lines under a minimal envelope. ctest runs each case in its own process,
// so the check cannot collect them in memory.
void keep(const Harness& h) {
    const char* path = std::getenv("PICKET_RECORDS_OUT");
    if (path == nullptr) {
        return;
    }
    std::ofstream out(path, std::ios::app);
    for (const Rec& r : h.recs) {
        out << "{\"timestamp\":\"2024-01-01T00:00:00.000000+0000\",\"flow_id\":1,"
            << "\"event_type\":\"" << r.type << "\",\"src_ip\":\"1.2.3.4\",\"src_port\":1234,"
            << "\"dest_ip\":\"1.2.3.5\",\"dest_port\":80,\"proto\":\"TCP\",";
        if (r.has_tx) {
            out << "\"tx_id\":" << r.tx << ",";
        }
        out << r.json << "}\n";
    }
}

AppLogConfig http_only() {
    AppLogConfig l;
    l.http = true;
    return l;
}

const char* kGet =
    "GET /index.html?a=1 HTTP/1.1\r\nHost: www.example.com:8080\r\nUser-Agent: curl/8.0\r\n"
    "Referer: http://ref.example/\r\n\r\n";
const char* kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: 11\r\n\r\n"
    "hello world";

const char* kHttpObject =
    "\"http\":{\"hostname\":\"www.example.com\",\"http_port\":8080,\"url\":\"/index.html?a=1\","
    "\"http_user_agent\":\"curl/8.0\",\"http_content_type\":\"text/html\","
    "\"http_refer\":\"http://ref.example/\",\"http_method\":\"GET\",\"protocol\":\"HTTP/1.1\","
    "\"status\":200,\"length\":11}";

TEST(HttpRecords, GetAnd200OneRecordWhenTheResponseEnds) {
    Harness h(http_only());
    h.feed(Direction::kToServer, kGet);
    EXPECT_TRUE(h.recs.empty());  // the response is still to come
    h.feed(Direction::kToClient, kOk);
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].type, "http");
    EXPECT_EQ(h.recs[0].dir, Direction::kToServer);
    EXPECT_TRUE(h.recs[0].has_tx);
    EXPECT_EQ(h.recs[0].tx, 0u);
    EXPECT_EQ(h.recs[0].json, kHttpObject);
    // Alerts carry the same object.
    EXPECT_EQ(h.metadata(0), kHttpObject);
    // Logged once: the flow's end adds nothing.
    h.finish();
    EXPECT_EQ(h.recs.size(), 1u);
    keep(h);
}

TEST(HttpRecords, DumpAllHeaders) {
    AppLogConfig l = http_only();
    l.http_request_headers = true;
    l.http_response_headers = true;
    Harness h(l);
    h.feed(Direction::kToServer, "GET / HTTP/1.1\r\nHost: a.example\r\nX-A: 1\r\n\r\n");
    h.feed(Direction::kToClient, "HTTP/1.1 302 Found\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n");
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].json,
              "\"http\":{\"hostname\":\"a.example\",\"url\":\"/\",\"http_method\":\"GET\","
              "\"protocol\":\"HTTP/1.1\",\"status\":302,\"redirect\":\"/b\",\"length\":0,"
              "\"request_headers\":[{\"name\":\"Host\",\"value\":\"a.example\"},"
              "{\"name\":\"X-A\",\"value\":\"1\"}],"
              "\"response_headers\":[{\"name\":\"Location\",\"value\":\"/b\"},"
              "{\"name\":\"Content-Length\",\"value\":\"0\"}]}");
    keep(h);
}

TEST(HttpRecords, NotExtendedHasTheBasicFieldsOnly) {
    AppLogConfig l = http_only();
    l.http_extended = false;
    Harness h(l);
    h.feed(Direction::kToServer, kGet);
    h.feed(Direction::kToClient, kOk);
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].json,
              "\"http\":{\"hostname\":\"www.example.com\",\"http_port\":8080,"
              "\"url\":\"/index.html?a=1\",\"http_user_agent\":\"curl/8.0\","
              "\"http_content_type\":\"text/html\"}");
    keep(h);
}

TEST(HttpRecords, PipelinedPairTwoRecords) {
    Harness h(http_only());
    h.feed(Direction::kToServer,
           "GET /1 HTTP/1.1\r\nHost: p.example\r\n\r\nGET /2 HTTP/1.1\r\nHost: p.example\r\n\r\n");
    EXPECT_TRUE(h.recs.empty());
    h.feed(Direction::kToClient,
           "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nAHTTP/1.1 404 Not Found\r\n"
           "Content-Length: 2\r\n\r\nBB");
    ASSERT_EQ(h.recs.size(), 2u);
    EXPECT_EQ(h.recs[0].tx, 0u);
    EXPECT_EQ(h.recs[1].tx, 1u);
    EXPECT_EQ(h.recs[0].json,
              "\"http\":{\"hostname\":\"p.example\",\"url\":\"/1\",\"http_method\":\"GET\","
              "\"protocol\":\"HTTP/1.1\",\"status\":200,\"length\":1}");
    EXPECT_EQ(h.recs[1].json,
              "\"http\":{\"hostname\":\"p.example\",\"url\":\"/2\",\"http_method\":\"GET\","
              "\"protocol\":\"HTTP/1.1\",\"status\":404,\"length\":2}");
    keep(h);
}

TEST(HttpRecords, UnfinishedRequestLoggedAtFlowEnd) {
    Harness h(http_only());
    h.feed(Direction::kToServer,
           "POST /up HTTP/1.1\r\nHost: u.example\r\nContent-Length: 10\r\n\r\nabc");
    EXPECT_TRUE(h.recs.empty());
    h.finish();
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].tx, 0u);
    EXPECT_EQ(h.recs[0].json,
              "\"http\":{\"hostname\":\"u.example\",\"url\":\"/up\",\"http_method\":\"POST\","
              "\"protocol\":\"HTTP/1.1\",\"length\":0}");
    h.finish();
    EXPECT_EQ(h.recs.size(), 1u);  // once
    keep(h);
}

TEST(HttpRecords, OffByDefault) {
    Harness h(AppLogConfig{});
    h.feed(Direction::kToServer, kGet);
    h.feed(Direction::kToClient, kOk);
    h.finish();
    EXPECT_TRUE(h.recs.empty());
}

// ---- fileinfo

TEST(FileRecords, ResponseBodyHashes) {
    AppLogConfig l;
    l.files = true;
    l.file_md5 = l.file_sha1 = l.file_sha256 = true;
    Harness h(l);
    h.feed(Direction::kToServer, kGet);
    // The body in two pieces: hashed as it comes.
    std::string ok = kOk;
    h.feed(Direction::kToClient, ok.substr(0, ok.size() - 5));
    EXPECT_TRUE(h.recs.empty());
    h.feed(Direction::kToClient, ok.substr(ok.size() - 5));
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].type, "fileinfo");
    EXPECT_EQ(h.recs[0].dir, Direction::kToClient);
    EXPECT_EQ(h.recs[0].tx, 0u);
    EXPECT_EQ(h.recs[0].json,
              std::string(kHttpObject) +
                  ",\"app_proto\":\"http\",\"fileinfo\":{\"filename\":\"/index.html\","
                  "\"gaps\":false,\"state\":\"CLOSED\","
                  "\"md5\":\"5eb63bbbe01eeed093cb22bb8f5acdc3\","
                  "\"sha1\":\"2aae6c35c94fcfb415dbe95f408b9ce91ee846ed\","
                  "\"sha256\":\"b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9\","
                  "\"stored\":false,\"size\":11,\"tx_id\":0}");
    keep(h);
}

TEST(FileRecords, HashesTheWholeBodyPastTheInspectionLimit) {
    AppLogConfig l;
    l.files = true;
    l.file_md5 = true;
    Harness h(l);
    h.feed(Direction::kToServer, "GET /big HTTP/1.1\r\nHost: b\r\n\r\n");
    // 10000 bytes, more than the 4096-byte response-body-limit.
    std::string body(10000, 'x');
    h.feed(Direction::kToClient, "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n" + body);
    ASSERT_EQ(h.recs.size(), 1u);
    unsigned char md[16];
    unsigned int n = 0;
    EVP_Digest(body.data(), body.size(), md, &n, EVP_md5(), nullptr);
    char hex[33];
    for (unsigned i = 0; i < 16; ++i) {
        std::snprintf(hex + 2 * i, 3, "%02x", md[i]);
    }
    EXPECT_NE(h.recs[0].json.find(std::string("\"md5\":\"") + hex + "\""), std::string::npos)
        << h.recs[0].json;
    EXPECT_NE(h.recs[0].json.find("\"size\":10000,"), std::string::npos);
    keep(h);
}

TEST(FileRecords, CutBodyIsTruncatedAtFlowEndWithMagic) {
    AppLogConfig l;
    l.files = true;
    l.file_md5 = true;
    l.file_sha256 = true;
    l.file_magic = true;
    Harness h(l);
    h.feed(Direction::kToServer,
           "POST /upload?x HTTP/1.1\r\nHost: f\r\nContent-Disposition: attachment; "
           "filename=\"report.txt\"\r\nContent-Length: 100\r\n\r\nplain text");
    EXPECT_TRUE(h.recs.empty());
    h.finish();
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].dir, Direction::kToServer);
    // TRUNCATED: no md5 (Suricata gives md5/sha1 of closed files only), sha256 of what came.
    EXPECT_EQ(h.recs[0].json,
              "\"http\":{\"hostname\":\"f\",\"url\":\"/upload?x\",\"http_method\":\"POST\","
              "\"protocol\":\"HTTP/1.1\",\"length\":0},\"app_proto\":\"http\",\"fileinfo\":{"
              "\"filename\":\"report.txt\",\"magic\":\"ASCII text, with no line terminators\","
              "\"gaps\":false,\"state\":\"TRUNCATED\",\"sha256\":"
              "\"c9ecf5e54c7b3f2640ecca21f96d4c3625a2b7935104f41c5ede29935a9e52c9\","
              "\"stored\":false,\"size\":10,\"tx_id\":0}");
    keep(h);
}

// ---- anomaly

TEST(AnomalyRecords, HttpEvent) {
    AppLogConfig l;
    l.anomaly = true;
    Harness h(l);
    h.feed(Direction::kToServer, "GET / HTTP/1.1\r\nUser-Agent: x\r\n\r\n");
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].type, "anomaly");
    EXPECT_EQ(h.recs[0].dir, Direction::kToServer);
    EXPECT_TRUE(h.recs[0].has_tx);
    EXPECT_EQ(h.recs[0].tx, 0u);
    EXPECT_EQ(h.recs[0].json,
              "\"anomaly\":{\"app_proto\":\"http\",\"type\":\"applayer\","
              "\"event\":\"MISSING_HOST_HEADER\",\"layer\":\"proto_parser\"}");
    // Once per event.
    h.feed(Direction::kToClient, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    h.finish();
    EXPECT_EQ(h.recs.size(), 1u);
    keep(h);
}

// ---- dns

std::string dns_name(const std::string& name) {
    std::string m;
    size_t p = 0;
    while (p <= name.size()) {
        size_t e = name.find('.', p);
        if (e == std::string::npos) {
            e = name.size();
        }
        m.push_back(static_cast<char>(e - p));
        m += name.substr(p, e - p);
        p = e + 1;
    }
    m.push_back('\0');
    return m;
}

std::string u16(unsigned v) {
    return std::string{static_cast<char>(v >> 8), static_cast<char>(v & 0xff)};
}

std::string dns_query(uint16_t id) {
    return u16(id) + u16(0x0100) + u16(1) + u16(0) + u16(0) + u16(0) + dns_name("www.example.com") +
           u16(1) + u16(1);
}

std::string dns_answer_a(const std::string& addr4) {
    // Name: pointer to the question (offset 12), type A, class IN, TTL 300.
    return u16(0xc00c) + u16(1) + u16(1) + u16(0) + u16(300) + u16(4) + addr4;
}

std::string dns_response(uint16_t id, uint16_t flags, bool answers) {
    std::string m = u16(id) + u16(flags) + u16(1) + u16(answers ? 2 : 0) + u16(0) + u16(0) +
                    dns_name("www.example.com") + u16(1) + u16(1);
    if (answers) {
        m += dns_answer_a(std::string("\x5d\xb8\xd8\x22", 4));
        m += dns_answer_a(std::string("\x5d\xb8\xd8\x23", 4));
    }
    return m;
}

AppLogConfig dns_only(int version) {
    AppLogConfig l;
    l.dns = true;
    l.dns_version = version;
    return l;
}

TEST(DnsRecords, V2QueryAndAnswer) {
    Harness h(dns_only(2));
    h.feed(Direction::kToServer, dns_query(0x1234), false);
    h.feed(Direction::kToClient, dns_response(0x1234, 0x8180, true), false);
    ASSERT_EQ(h.recs.size(), 2u);
    EXPECT_EQ(h.recs[0].type, "dns");
    EXPECT_EQ(h.recs[0].dir, Direction::kToServer);
    EXPECT_FALSE(h.recs[0].has_tx);
    EXPECT_EQ(h.recs[0].json,
              "\"dns\":{\"version\":2,\"type\":\"query\",\"id\":4660,"
              "\"rrname\":\"www.example.com\",\"rrtype\":\"A\",\"tx_id\":0,\"opcode\":0}");
    EXPECT_EQ(h.recs[1].dir, Direction::kToClient);
    EXPECT_EQ(h.recs[1].json,
              "\"dns\":{\"version\":2,\"type\":\"answer\",\"id\":4660,\"flags\":\"8180\","
              "\"qr\":true,\"rd\":true,\"ra\":true,\"opcode\":0,\"rrname\":\"www.example.com\","
              "\"rrtype\":\"A\",\"rcode\":\"NOERROR\",\"answers\":["
              "{\"rrname\":\"www.example.com\",\"rrtype\":\"A\",\"ttl\":300,"
              "\"rdata\":\"93.184.216.34\"},"
              "{\"rrname\":\"www.example.com\",\"rrtype\":\"A\",\"ttl\":300,"
              "\"rdata\":\"93.184.216.35\"}],"
              "\"grouped\":{\"A\":[\"93.184.216.34\",\"93.184.216.35\"]}}");
    keep(h);
}

TEST(DnsRecords, V2RequestsOffAndNotGrouped) {
    AppLogConfig l = dns_only(2);
    l.dns_requests = false;
    l.dns_grouped = false;
    l.dns_detailed = false;
    Harness h(l);
    h.feed(Direction::kToServer, dns_query(7), false);
    h.feed(Direction::kToClient, dns_response(7, 0x8180, true), false);
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].json,
              "\"dns\":{\"version\":2,\"type\":\"answer\",\"id\":7,\"flags\":\"8180\","
              "\"qr\":true,\"rd\":true,\"ra\":true,\"opcode\":0,\"rrname\":\"www.example.com\","
              "\"rrtype\":\"A\",\"rcode\":\"NOERROR\"}");
    keep(h);
}

TEST(DnsRecords, Nxdomain) {
    Harness h(dns_only(2));
    h.feed(Direction::kToServer, dns_query(9), false);
    h.feed(Direction::kToClient, dns_response(9, 0x8183, false), false);
    ASSERT_EQ(h.recs.size(), 2u);
    EXPECT_EQ(h.recs[1].json,
              "\"dns\":{\"version\":2,\"type\":\"answer\",\"id\":9,\"flags\":\"8183\","
              "\"qr\":true,\"rd\":true,\"ra\":true,\"opcode\":0,\"rrname\":\"www.example.com\","
              "\"rrtype\":\"A\",\"rcode\":\"NXDOMAIN\"}");
    keep(h);
}

TEST(DnsRecords, V3RequestAndResponse) {
    Harness h(dns_only(3));
    h.feed(Direction::kToServer, dns_query(0x1234), false);
    h.feed(Direction::kToClient, dns_response(0x1234, 0x8180, true), false);
    ASSERT_EQ(h.recs.size(), 2u);
    EXPECT_TRUE(h.recs[0].has_tx);
    EXPECT_EQ(h.recs[0].tx, 0u);
    EXPECT_EQ(h.recs[1].tx, 0u);
    EXPECT_EQ(h.recs[0].json,
              "\"dns\":{\"version\":3,\"type\":\"request\",\"id\":4660,\"flags\":\"100\","
              "\"rd\":true,\"opcode\":0,\"rcode\":\"NOERROR\","
              "\"queries\":[{\"rrname\":\"www.example.com\",\"rrtype\":\"A\"}]}");
    EXPECT_EQ(h.recs[1].json,
              "\"dns\":{\"version\":3,\"type\":\"response\",\"id\":4660,\"flags\":\"8180\","
              "\"qr\":true,\"rd\":true,\"ra\":true,\"opcode\":0,\"rcode\":\"NOERROR\","
              "\"queries\":[{\"rrname\":\"www.example.com\",\"rrtype\":\"A\"}],\"answers\":["
              "{\"rrname\":\"www.example.com\",\"rrtype\":\"A\",\"ttl\":300,"
              "\"rdata\":\"93.184.216.34\"},"
              "{\"rrname\":\"www.example.com\",\"rrtype\":\"A\",\"ttl\":300,"
              "\"rdata\":\"93.184.216.35\"}],"
              "\"grouped\":{\"A\":[\"93.184.216.34\",\"93.184.216.35\"]}}");
    keep(h);
}

// ---- tls

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
Bytes handshake_record(uint8_t type, const Bytes& body) {
    Bytes h;
    put8(h, type);
    put24(h, static_cast<unsigned>(body.size()));
    append(h, body);
    Bytes r;
    put8(r, 22);
    put16(r, 0x0301);
    put16(r, static_cast<unsigned>(h.size()));
    append(r, h);
    return r;
}
Bytes u16_list(const std::vector<uint16_t>& v) {
    Bytes b;
    put16(b, static_cast<unsigned>(v.size() * 2));
    for (uint16_t x : v) {
        put16(b, x);
    }
    return b;
}

// The Chrome-like ClientHello of tls_test.cc (GREASE, SNI www.example.com): its JA3 is
// "771,4865-49195-47,0-10-11-16-43-65281,29-23,0".
Bytes client_hello() {
    Bytes b;
    put16(b, 0x0303);
    b.insert(b.end(), 32, 0x11);
    put8(b, 0);
    append(b, u16_list({0x0a0a, 0x1301, 0xc02b, 0x002f}));
    put8(b, 1);
    put8(b, 0);
    const std::string host = "www.example.com";
    Bytes sni;
    put16(sni, static_cast<unsigned>(host.size() + 3));
    put8(sni, 0);
    put16(sni, static_cast<unsigned>(host.size()));
    sni.insert(sni.end(), host.begin(), host.end());
    const Bytes alpn = {0, 12, 2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    const Bytes versions = {6, 0x3a, 0x3a, 0x03, 0x04, 0x03, 0x03};
    const std::vector<std::pair<uint16_t, Bytes>> exts = {
        {0x1a1a, {}},      {0, sni},   {10, u16_list({0x2a2a, 29, 23})},
        {11, Bytes{1, 0}}, {16, alpn}, {43, versions},
        {0xff01, Bytes{0}}};
    Bytes e;
    for (const auto& [type, body] : exts) {
        put16(e, type);
        put16(e, static_cast<unsigned>(body.size()));
        append(e, body);
    }
    put16(b, static_cast<unsigned>(e.size()));
    append(b, e);
    return handshake_record(1, b);
}

// The ServerHello of tls_test.cc: JA3S "771,49199,65281-0-11-16", TLS 1.2.
Bytes server_hello() {
    Bytes body;
    put16(body, 0x0303);
    body.insert(body.end(), 32, 0x22);
    put8(body, 0);
    put16(body, 49199);
    put8(body, 0);
    Bytes exts = {0xff, 0x01, 0, 1, 0};
    append(exts, Bytes{0x00, 0x00, 0, 0});
    append(exts, Bytes{0x00, 0x0b, 0, 2, 1, 0});
    append(exts, Bytes{0x00, 0x10, 0, 5, 0, 3, 2, 'h', '2'});
    put16(body, static_cast<unsigned>(exts.size()));
    append(body, exts);
    return handshake_record(2, body);
}

// A self-signed certificate like tls_test.cc's: subject C=US, O=Picket Test, CN=test.example,
// serial 0x1234ABCD, valid 1700000000..1800000000. *fp: its SHA-1 as "aa:bb:...".
Bytes certificate(std::string* fp) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 0x1234ABCD);
    ASN1_TIME_set(X509_getm_notBefore(x), 1700000000);
    ASN1_TIME_set(X509_getm_notAfter(x), 1800000000);
    X509_set_pubkey(x, key);
    X509_NAME* n = X509_get_subject_name(x);
    auto add = [](X509_NAME* nm, const char* f, const char* v) {
        X509_NAME_add_entry_by_txt(nm, f, MBSTRING_ASC, reinterpret_cast<const unsigned char*>(v),
                                   -1, -1, 0);
    };
    add(n, "C", "US");
    add(n, "O", "Picket Test");
    add(n, "CN", "test.example");
    X509_set_issuer_name(x, n);
    X509_sign(x, key, EVP_sha256());
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    X509_digest(x, EVP_sha1(), md, &len);
    fp->clear();
    for (unsigned i = 0; i < len; ++i) {
        char h[4];
        std::snprintf(h, sizeof h, i == 0 ? "%02x" : ":%02x", md[i]);
        *fp += h;
    }
    unsigned char* der = nullptr;
    const int der_len = i2d_X509(x, &der);
    Bytes d(der, der + der_len);
    OPENSSL_free(der);
    X509_free(x);
    EVP_PKEY_free(key);
    Bytes body;
    put24(body, static_cast<unsigned>(d.size() + 3));
    put24(body, static_cast<unsigned>(d.size()));
    append(body, d);
    return handshake_record(11, body);
}

TEST(TlsRecords, HandshakeLoggedOnceWhenTheCertificateArrives) {
    AppLogConfig l;
    l.tls = true;
    Harness h(l);
    h.feed(Direction::kToServer, client_hello());
    std::string fp;
    Bytes server = server_hello();
    append(server, certificate(&fp));
    ASSERT_EQ(fp.size(), 59u);
    EXPECT_TRUE(h.recs.empty());
    h.feed(Direction::kToClient, server);
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].type, "tls");
    EXPECT_EQ(h.recs[0].dir, Direction::kToServer);
    EXPECT_FALSE(h.recs[0].has_tx);
    EXPECT_EQ(h.recs[0].json,
              "\"tls\":{\"subject\":\"C=US, O=Picket Test, CN=test.example\","
              "\"issuerdn\":\"C=US, O=Picket Test, CN=test.example\",\"serial\":\"12:34:AB:CD\","
              "\"fingerprint\":\"" +
                  fp +
                  "\",\"sni\":\"www.example.com\",\"version\":\"TLS 1.2\","
                  "\"notbefore\":\"2023-11-14T22:13:20\",\"notafter\":\"2027-01-15T08:00:00\","
                  "\"ja3\":{\"hash\":\"76d1087a673aa13a11cccd79e3574bdb\","
                  "\"string\":\"771,4865-49195-47,0-10-11-16-43-65281,29-23,0\"},"
                  "\"ja3s\":{\"hash\":\"ae53107a2e47ea20c72ac44821a728bf\","
                  "\"string\":\"771,49199,65281-0-11-16\"}}");
    h.finish();
    EXPECT_EQ(h.recs.size(), 1u);
    keep(h);
}

TEST(TlsRecords, UnfinishedHandshakeAtFlowEndWithoutJa3) {
    AppLogConfig l;
    l.tls = true;
    l.tls_ja3 = false;
    Harness h(l);
    h.feed(Direction::kToServer, client_hello());
    EXPECT_TRUE(h.recs.empty());
    h.finish();
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].json, "\"tls\":{\"sni\":\"www.example.com\",\"version\":\"UNDETERMINED\"}");
    keep(h);
}

// ---- ssh

// A binary packet (RFC 4253 6) of type `type` carrying `payload` after the type byte.
Bytes ssh_packet(uint8_t type, const Bytes& payload) {
    const size_t body = 2 + payload.size();
    size_t pad = 8 - (4 + body) % 8;
    if (pad < 4) {
        pad += 8;
    }
    std::string v;
    const auto len = static_cast<uint32_t>(body + pad);
    for (int shift = 24; shift >= 0; shift -= 8) {
        v.push_back(static_cast<char>(len >> shift));
    }
    v.push_back(static_cast<char>(pad));
    v.push_back(static_cast<char>(type));
    v.append(payload.begin(), payload.end());
    v.append(pad, '\0');
    return Bytes(v.begin(), v.end());
}

Bytes ssh_kexinit(const std::vector<std::string>& lists) {
    std::string p(16, '\x11');
    for (const std::string& l : lists) {
        const auto n = static_cast<uint32_t>(l.size());
        for (int shift = 24; shift >= 0; shift -= 8) {
            p.push_back(static_cast<char>(n >> shift));
        }
        p += l;
    }
    p.append(5, '\0');
    return ssh_packet(20, Bytes(p.begin(), p.end()));
}

Bytes ssh_side(const std::string& banner, const std::vector<std::string>& lists) {
    Bytes b(banner.begin(), banner.end());
    append(b, ssh_kexinit(lists));
    append(b, ssh_packet(21, {}));  // NEWKEYS
    return b;
}

TEST(SshRecords, OneRecordOnceBothSidesAreEncrypted) {
    AppLogConfig l;
    l.ssh = true;
    Harness h(l);
    h.feed(Direction::kToClient,
           ssh_side("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n",
                    {"k1", "h", "e-c2s", "e-s2c", "m-c2s", "m-s2c", "c-c2s", "c-s2c", "", ""}));
    EXPECT_TRUE(h.recs.empty());
    h.feed(Direction::kToServer,
           ssh_side("SSH-2.0-PuTTY_Release_0.78\r\n",
                    {"k2", "h", "E-c2s", "E-s2c", "M-c2s", "M-s2c", "C-c2s", "C-s2c", "", ""}));
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].type, "ssh");
    EXPECT_EQ(h.recs[0].dir, Direction::kToServer);
    EXPECT_TRUE(h.recs[0].has_tx);
    EXPECT_EQ(h.recs[0].tx, 0u);
    // md5("k2;E-c2s;M-c2s;C-c2s") and md5("k1;e-s2c;m-s2c;c-s2c"), by Python's hashlib.
    EXPECT_EQ(h.recs[0].json,
              "\"ssh\":{\"client\":{\"proto_version\":\"2.0\","
              "\"software_version\":\"PuTTY_Release_0.78\",\"hassh\":{"
              "\"hash\":\"b4c4a848e55e1afee0f3ba7db0f44cba\",\"string\":\"k2;E-c2s;M-c2s;C-c2s\"}},"
              "\"server\":{\"proto_version\":\"2.0\",\"software_version\":\"OpenSSH_9.2p1\","
              "\"hassh\":{\"hash\":\"2942e32f5c383a3c5c5cb84ec7476f68\",\"string\":\"k1;e-s2c;m-"
              "s2c;c-s2c\"}}}");
    EXPECT_EQ(h.metadata(0), h.recs[0].json);
    h.finish();
    EXPECT_EQ(h.recs.size(), 1u);
    keep(h);
}

TEST(SshRecords, BannersOnlyLoggedAtFlowEndAndEventsAsAnomalies) {
    AppLogConfig l;
    l.ssh = true;
    l.anomaly = true;
    Harness h(l);
    h.feed(Direction::kToServer, std::string("SSH-2.0-libssh_0.9.6\r\n"));
    h.feed(Direction::kToClient, std::string("SSH-2.0\r\n"));
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].type, "anomaly");
    EXPECT_EQ(h.recs[0].json,
              "\"anomaly\":{\"app_proto\":\"ssh\",\"type\":\"applayer\","
              "\"event\":\"INVALID_BANNER\",\"layer\":\"proto_parser\"}");
    h.finish();
    ASSERT_EQ(h.recs.size(), 2u);
    EXPECT_EQ(h.recs[1].json,
              "\"ssh\":{\"client\":{\"proto_version\":\"2.0\","
              "\"software_version\":\"libssh_0.9.6\"}}");
    keep(h);
}

// ---- ftp

TEST(FtpRecords, OneRecordPerTransactionWhenItsFinalReplyCame) {
    AppLogConfig l;
    l.ftp = true;
    Harness h(l);
    h.feed(Direction::kToClient, std::string("220 FTP server ready\r\n"));
    ASSERT_EQ(h.recs.size(), 1u);
    EXPECT_EQ(h.recs[0].type, "ftp");
    EXPECT_EQ(h.recs[0].dir, Direction::kToServer);
    EXPECT_TRUE(h.recs[0].has_tx);
    EXPECT_EQ(h.recs[0].tx, 0u);
    EXPECT_EQ(h.recs[0].json,
              "\"ftp\":{\"reply\":[\"FTP server ready\"],\"completion_code\":[\"220\"],"
              "\"reply_received\":\"yes\",\"command_truncated\":false,"
              "\"reply_truncated\":false}");
    h.feed(Direction::kToServer, std::string("PASV\r\n"));
    EXPECT_EQ(h.recs.size(), 1u);
    h.feed(Direction::kToClient, std::string("227 Entering Passive Mode (1,2,3,4,4,1).\r\n"));
    ASSERT_EQ(h.recs.size(), 2u);
    EXPECT_EQ(h.recs[1].tx, 1u);
    EXPECT_EQ(h.recs[1].json,
              "\"ftp\":{\"command\":\"PASV\",\"reply\":[\"Entering Passive Mode "
              "(1,2,3,4,4,1).\"],\"completion_code\":[\"227\"],\"dynamic_port\":1025,"
              "\"mode\":\"passive\",\"reply_received\":\"yes\",\"command_truncated\":false,"
              "\"reply_truncated\":false}");
    h.feed(Direction::kToServer, std::string("RETR a.txt\r\n"));
    h.feed(Direction::kToClient, std::string("150 Opening\r\n"));
    EXPECT_EQ(h.recs.size(), 2u);  // 150 is preliminary
    h.finish();
    ASSERT_EQ(h.recs.size(), 3u);
    EXPECT_EQ(h.recs[2].json,
              "\"ftp\":{\"command\":\"RETR\",\"command_data\":\"a.txt\",\"reply\":["
              "\"Opening\"],\"completion_code\":[\"150\"],\"reply_received\":\"yes\","
              "\"command_truncated\":false,\"reply_truncated\":false}");
    keep(h);
}

TEST(FtpRecords, LongCommandIsAnAnomalyAndTruncated) {
    AppLogConfig l;
    l.ftp = true;
    l.anomaly = true;
    Harness h(l);
    h.feed(Direction::kToClient, std::string("220 FTP\r\n"));
    h.feed(Direction::kToServer, "CWD " + std::string(5000, 'a') + "\r\n");
    ASSERT_EQ(h.recs.size(), 2u);
    EXPECT_EQ(h.recs[1].type, "anomaly");
    EXPECT_EQ(h.recs[1].json,
              "\"anomaly\":{\"app_proto\":\"ftp\",\"type\":\"applayer\","
              "\"event\":\"REQUEST_COMMAND_TOO_LONG\",\"layer\":\"proto_parser\"}");
    h.finish();
    ASSERT_EQ(h.recs.size(), 3u);
    EXPECT_EQ(h.recs[2].json, "\"ftp\":{\"command\":\"CWD\",\"command_data\":\"" +
                                  std::string(4092, 'a') +
                                  "\",\"reply_received\":\"no\",\"command_truncated\":true,"
                                  "\"reply_truncated\":false}");
    keep(h);
}

// ---- schema

TEST(RecordsSchema, EveryRecordValidates) {
    const std::filesystem::path schema =
        std::filesystem::path(PICKET_SHARED_DATA_DIR) / "eve-schema" / "schema.json";
    if (!std::filesystem::exists(schema)) {
        GTEST_SKIP() << schema << " absent";
    }
    if (std::system("python3 -c 'import jsonschema' 2>/dev/null") != 0) {
        GTEST_SKIP() << "python3-jsonschema absent";
    }
    // Run every other case of this binary again, writing their records.
    const std::string path = testing::TempDir() + "applayer_records.jsonl";
    std::remove(path.c_str());
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string run = "PICKET_RECORDS_OUT=" + path + " " + self +
                            " --gtest_filter='*Records.*:-RecordsSchema.*' >/dev/null";
    ASSERT_EQ(std::system(run.c_str()), 0);
    size_t lines = 0;
    {
        std::ifstream in(path);
        std::string line;
        while (std::getline(in, line)) {
            ++lines;
        }
    }
    // 1+1+1+2+1 http, 3 fileinfo, 1 anomaly, 2+1+2+2 dns, 2 tls, 1+2 ssh (one an anomaly),
    // 3+3 ftp (one an anomaly).
    EXPECT_EQ(lines, 28u);
    const std::string cmd =
        "python3 -c 'import json, sys, jsonschema\n"
        "s = json.load(open(sys.argv[1]))\n"
        "v = jsonschema.Draft7Validator(s)\n"
        "bad = 0\n"
        "for line in open(sys.argv[2]):\n"
        "    for e in v.iter_errors(json.loads(line)):\n"
        "        bad += 1\n"
        "        print(line.strip()[:300], \"->\", e.message[:300])\n"
        "sys.exit(1 if bad else 0)\n' " +
        schema.string() + " " + path;
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    std::remove(path.c_str());
}

}  // namespace
}  // namespace picket::sensor::applayer
