// The app-layer glue: protocol detection by content, the views detection gets, EVE metadata.
#include "sensor/applayer/applayer.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>

#include <memory>
#include <string>

namespace picket::sensor::applayer {
namespace {

using flow::Direction;
using inspect::AppProto;
using inspect::BufferId;

std::string_view buf(const inspect::AppView& v, BufferId b) {
    return v.buf[static_cast<size_t>(b)];
}

class AppLayerTest : public ::testing::Test {
protected:
    void TearDown() override { app_.release_flow(flow_); }

    uint32_t feed(Direction d, const std::string& s, bool tcp = true) {
        return app_.on_data(flow_, d, reinterpret_cast<const uint8_t*>(s.data()), s.size(), tcp,
                            out_, 8);
    }

    AppLayerConfig config_;
    AppLayer app_{config_};
    flow::Flow flow_;
    TxUpdate out_[8];
};

TEST_F(AppLayerTest, HttpIsFoundByContentOnAnyPortAndSplitAcrossCalls) {
    // Too little to tell: the probe holds the bytes and waits.
    EXPECT_EQ(feed(Direction::kToServer, "GE"), 0u);
    EXPECT_EQ(app_.proto_name(flow_), nullptr);
    // A known method and a space are enough; the request line is still incomplete.
    EXPECT_EQ(feed(Direction::kToServer, "T /a/../admin%2fx HT"), 0u);
    EXPECT_STREQ(app_.proto_name(flow_), "http");
    uint32_t n = feed(Direction::kToServer,
                      "TP/1.1\r\nHost: Example.COM:8081\r\nUser-Agent: curl/8\r\n\r\n");
    ASSERT_GE(n, 1u);
    EXPECT_EQ(app_.proto(flow_), AppProto::kHttp);
    EXPECT_STREQ(app_.proto_name(flow_), "http");
    const inspect::AppView& v = out_[n - 1].view;
    EXPECT_EQ(v.proto, AppProto::kHttp);
    EXPECT_EQ(v.tx_id, 0u);
    EXPECT_EQ(buf(v, BufferId::kHttpUriRaw), "/a/../admin%2fx");
    EXPECT_EQ(buf(v, BufferId::kHttpUri), "/admin/x");
    EXPECT_EQ(buf(v, BufferId::kHttpMethod), "GET");
    EXPECT_EQ(buf(v, BufferId::kHttpHost), "example.com");
    EXPECT_EQ(buf(v, BufferId::kHttpUserAgent), "curl/8");
    EXPECT_EQ(buf(v, BufferId::kHttpStatCode).data(), nullptr);  // no response yet

    n = feed(Direction::kToClient,
             "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello");
    ASSERT_GE(n, 1u);
    const inspect::AppView& r = out_[n - 1].view;
    EXPECT_EQ(buf(r, BufferId::kHttpStatCode), "404");
    EXPECT_EQ(buf(r, BufferId::kHttpResponseBody), "hello");
    EXPECT_EQ(buf(r, BufferId::kHttpContentType), "text/html");
    // Request buffers stay visible from the response side.
    EXPECT_EQ(buf(r, BufferId::kHttpUri), "/admin/x");

    std::string json;
    app_.render_metadata(flow_, 0, &json);
    EXPECT_EQ(json,
              "\"http\":{\"hostname\":\"example.com\",\"http_port\":8081,"
              "\"url\":\"/a/../admin%2fx\","
              "\"http_user_agent\":\"curl/8\",\"http_content_type\":\"text/html\","
              "\"http_method\":\"GET\",\"protocol\":\"HTTP/1.1\",\"status\":404,\"length\":5}");
}

TEST_F(AppLayerTest, MetadataKeepsValidUtf8AndEscapesTheRest) {
    // One JSON writer for EVE: valid UTF-8 is copied as sent, control characters and bytes
    // that are not UTF-8 become \u00XX.
    uint32_t n = feed(Direction::kToServer,
                      "GET / HTTP/1.1\r\nHost: x\r\nUser-Agent: caf\xc3\xa9 \x01\xff\x7f\r\n\r\n");
    ASSERT_GE(n, 1u);
    std::string json;
    app_.render_metadata(flow_, 0, &json);
    EXPECT_EQ(json,
              "\"http\":{\"hostname\":\"x\",\"url\":\"/\","
              "\"http_user_agent\":\"caf\xc3\xa9 \\u0001\\u00ff\x7f\",\"http_method\":\"GET\","
              "\"protocol\":\"HTTP/1.1\",\"length\":0}");
}

TEST_F(AppLayerTest, HttpRequestHeaderForXff) {
    EXPECT_EQ(app_.http_request_header(flow_, 0, "X-Forwarded-For"), nullptr);
    feed(Direction::kToServer, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n");
    feed(Direction::kToServer,
         "GET /b HTTP/1.1\r\nHost: a\r\nx-forwarded-for: 10.2.2.2, 10.3.3.3\r\n\r\n");
    // Names match in any case; tx 0 has none; kAnyTx finds the oldest transaction with one.
    EXPECT_EQ(app_.http_request_header(flow_, 0, "X-Forwarded-For"), nullptr);
    const std::string* v = app_.http_request_header(flow_, 1, "X-Forwarded-For");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, "10.2.2.2, 10.3.3.3");
    v = app_.http_request_header(flow_, AppLayer::kAnyTx, "X-FORWARDED-FOR");
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, "10.2.2.2, 10.3.3.3");
    EXPECT_EQ(app_.http_request_header(flow_, 7, "X-Forwarded-For"), nullptr);
}

TEST_F(AppLayerTest, MidstreamResponseFirstReversesTheFlow) {
    // No SYN seen either way, and the first bytes "to the server" are a response: the flow
    // was picked up the wrong way round; they are parsed as the response.
    const std::string resp = "HTTP/1.1 200 OK\r\nServer: nginx/1.2\r\nContent-Length: 2\r\n\r\nok";
    uint32_t n = feed(Direction::kToServer, resp);
    EXPECT_EQ(app_.proto(flow_), AppProto::kHttp);
    ASSERT_GE(n, 1u);
    const inspect::AppView& v = out_[n - 1].view;
    EXPECT_EQ(buf(v, BufferId::kHttpStatCode), "200");
    EXPECT_EQ(buf(v, BufferId::kHttpServer), "nginx/1.2");
    EXPECT_EQ(buf(v, BufferId::kHttpResponseBody), "ok");
    EXPECT_EQ(buf(v, BufferId::kHttpMethod).data(), nullptr);
}

TEST_F(AppLayerTest, ResponseFirstFromTheSynSenderIsNotReversed) {
    // With the handshake seen, the direction is known: a "client" that starts with a status
    // line is not HTTP.
    flow_.tcp_flags_seen[0] = 0x02;
    flow_.tcp_flags_seen[1] = 0x12;
    feed(Direction::kToServer, "HTTP/1.1 200 OK\r\nServer: x\r\n\r\n");
    EXPECT_EQ(app_.proto(flow_), AppProto::kUnknown);
}

TEST_F(AppLayerTest, NotAProtocolFails) {
    EXPECT_EQ(feed(Direction::kToServer, std::string(64, 'z')), 0u);
    EXPECT_EQ(feed(Direction::kToClient, std::string(64, 'q')), 0u);
    EXPECT_STREQ(app_.proto_name(flow_), "failed");
    EXPECT_EQ(app_.proto(flow_), AppProto::kUnknown);
    StatsSnapshot s;
    app_.export_stats(s);
    EXPECT_EQ(s.get("app_layer.flow.failed_tcp"), 1u);
}

TEST_F(AppLayerTest, ExportsEveryCounterByName) {
    StatsSnapshot s;
    app_.export_stats(s);
    // 18 of the glue's own, HTTP 3 + 30 events, DNS 2 + 11 events, TLS 3 + 12 events, SSH 2 + 4
    // events, FTP 2 + 2 events: all exported at zero too.
    EXPECT_EQ(s.values().size(), 89u);
    for (const char* name : {"app_layer.flow.http",
                             "app_layer.flow.tls",
                             "app_layer.flow.dns_tcp",
                             "app_layer.flow.dns_udp",
                             "app_layer.flow.failed_tcp",
                             "app_layer.flow.failed_udp",
                             "app_layer.tx.tls",
                             "app_layer.tx.dns_tcp",
                             "app_layer.tx.dns_udp",
                             "app_layer.memcap_evicted",
                             "app_layer.memcap_drop",
                             "app_layer.memuse",
                             "app_layer.http.events.missing_crlf",
                             "app_layer.http.events.unmatched_response",
                             "app_layer.dns.events.malformed_data",
                             "app_layer.dns.events.flooded",
                             "app_layer.tls.events.invalid_record_type",
                             "app_layer.tls.events.sslv2_client_hello",
                             "app_layer.flow.ssh",
                             "app_layer.ssh.banners",
                             "app_layer.ssh.kexinits",
                             "app_layer.ssh.events.invalid_banner",
                             "app_layer.ssh.events.long_kex_record",
                             "app_layer.flow.ftp",
                             "app_layer.flow.ftp_data",
                             "app_layer.tx.ftp",
                             "app_layer.ftp.expectations",
                             "app_layer.ftp.expectations_full",
                             "app_layer.ftp.commands",
                             "app_layer.ftp.replies",
                             "app_layer.ftp.events.request_command_too_long",
                             "app_layer.ftp.events.response_command_too_long",
                             "app_layer.http.events.invalid_transfer_encoding_value_in_request",
                             "app_layer.http.events.multipart_generic_error"}) {
        EXPECT_TRUE(s.has(name)) << name;
    }
}

TEST_F(AppLayerTest, SshIsFoundByItsBannerAndFillsTheSendersBuffers) {
    // The server speaks first, with a line before its banner (RFC 4253 4.2): detection waits
    // for the client's "SSH-".
    EXPECT_EQ(feed(Direction::kToClient, "Hi\r\n"), 0u);
    EXPECT_EQ(app_.proto_name(flow_), nullptr);
    EXPECT_EQ(feed(Direction::kToServer, "SS"), 0u);
    EXPECT_EQ(app_.proto_name(flow_), nullptr);
    ASSERT_EQ(feed(Direction::kToServer, "H-2.0-PUTTY\r\n"), 1u);
    EXPECT_STREQ(app_.proto_name(flow_), "ssh");
    EXPECT_EQ(app_.proto(flow_), AppProto::kSsh);
    const inspect::AppView& c = out_[0].view;
    EXPECT_EQ(c.proto, AppProto::kSsh);
    EXPECT_EQ(buf(c, BufferId::kSshProto), "2.0");
    EXPECT_EQ(buf(c, BufferId::kSshSoftware), "PUTTY");
    EXPECT_EQ(buf(c, BufferId::kSshHassh).data(), nullptr);
    ASSERT_EQ(feed(Direction::kToClient, "SSH-1.99-OpenSSH_3.5p1 FreeBSD-20030924\r\n"), 1u);
    const inspect::AppView& s = out_[0].view;
    EXPECT_EQ(buf(s, BufferId::kSshProto), "1.99");
    EXPECT_EQ(buf(s, BufferId::kSshSoftware), "OpenSSH_3.5p1");
    EXPECT_EQ(s.events, 0u);
    uint64_t tx = 7;
    EXPECT_TRUE(app_.guess_tx(flow_, &tx));
    EXPECT_EQ(tx, 0u);
    std::string json;
    app_.render_metadata(flow_, 0, &json);
    EXPECT_EQ(json,
              "\"ssh\":{\"client\":{\"proto_version\":\"2.0\",\"software_version\":\"PUTTY\"},"
              "\"server\":{\"proto_version\":\"1.99\",\"software_version\":\"OpenSSH_3.5p1\"}}");
}

TEST_F(AppLayerTest, SshServerLinesBeforeItsBannerAreDetectedAndParsed) {
    ASSERT_EQ(feed(Direction::kToClient, "Authorized use only\r\nSSH-2.0-OpenSSH_9.2p1\r\n"), 1u);
    EXPECT_STREQ(app_.proto_name(flow_), "ssh");
    EXPECT_EQ(buf(out_[0].view, BufferId::kSshSoftware), "OpenSSH_9.2p1");
    EXPECT_EQ(out_[0].view.events, 0u);
}

TEST_F(AppLayerTest, SshEventReachesDetectionInAView) {
    ASSERT_EQ(feed(Direction::kToServer, "SSH-2.0-x\r\n"), 1u);
    // A packet whose padding is longer than the packet: invalid_record, and a view says so.
    ASSERT_EQ(feed(Direction::kToServer, std::string("\0\0\0\x0a\x0c\x14", 6)), 1u);
    EXPECT_EQ(out_[0].view.events, 1u << 2);
    EXPECT_EQ(feed(Direction::kToServer, "more"), 0u);
}

TEST_F(AppLayerTest, HttpInvalidTransferEncodingInRequestIsAViewEvent) {
    const uint32_t n = feed(Direction::kToServer,
                            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, "
                            "identity\r\nContent-Length: 1\r\n\r\nx");
    ASSERT_GE(n, 1u);
    const inspect::AppView& v = out_[n - 1].view;
    const inspect::AppEventName* e =
        inspect::find_app_event("http.invalid_transfer_encoding_value_in_request");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(v.events, uint64_t{1} << e->bit);
    EXPECT_EQ(buf(v, BufferId::kHttpRequestBody), "x");
}

TEST_F(AppLayerTest, ChunkedRequestHasNoTransferEncodingEvent) {
    const uint32_t n = feed(Direction::kToServer,
                            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                            "1\r\nx\r\n0\r\n\r\n");
    ASSERT_GE(n, 1u);
    EXPECT_EQ(out_[n - 1].view.events, 0u);
}

// FTP: a control connection announces a passive data connection; the data connection lands on
// another worker's AppLayer (they share the expectation table) and is ftp-data, its bytes the
// RETR'd file.
flow::Flow make_flow(const char* client, uint16_t cport, const char* server, uint16_t sport) {
    flow::Flow f;
    uint8_t b[4];
    inet_pton(AF_INET, client, b);
    f.client_addr = decode::Address::from_v4(b);
    inet_pton(AF_INET, server, b);
    f.server_addr = decode::Address::from_v4(b);
    f.client_port = cport;
    f.server_port = sport;
    f.proto = 6;
    f.last_ts_ns = 1'000'000'000;
    return f;
}

uint32_t feed_flow(AppLayer& app, flow::Flow& f, Direction d, const std::string& s, TxUpdate* out) {
    return app.on_data(f, d, reinterpret_cast<const uint8_t*>(s.data()), s.size(), true, out, 8);
}

TEST(AppLayerFtpTest, ControlViewsExpectationAndDataFlowOnAnotherWorker) {
    AppLayerConfig cfg;
    cfg.ftp_expect = std::make_shared<ftp::ExpectTable>(64);
    AppLayer w0(cfg), w1(cfg);
    TxUpdate out[8];
    flow::Flow ctl = make_flow("10.0.0.1", 40000, "10.0.0.2", 21);
    EXPECT_EQ(feed_flow(w0, ctl, Direction::kToClient, "220 ready\r\n", out), 1u);
    EXPECT_EQ(w0.proto(ctl), AppProto::kFtp);
    EXPECT_STREQ(w0.proto_name(ctl), "ftp");
    ASSERT_EQ(feed_flow(w0, ctl, Direction::kToServer, "PORT 10,0,0,9,4,1\r\n", out), 1u);
    EXPECT_EQ(out[0].view.proto, AppProto::kFtp);
    EXPECT_EQ(buf(out[0].view, BufferId::kFtpCommand), "PORT");
    EXPECT_EQ(buf(out[0].view, BufferId::kFtpCommandData), "10,0,0,9,4,1");
    EXPECT_TRUE(out[0].view.ftp_bounce);  // 10.0.0.9 is not the client
    feed_flow(w0, ctl, Direction::kToClient, "200 ok\r\n", out);
    ASSERT_EQ(feed_flow(w0, ctl, Direction::kToServer, "pasv\r\n", out), 1u);
    EXPECT_EQ(buf(out[0].view, BufferId::kFtpCommand), "PASV");
    EXPECT_EQ(buf(out[0].view, BufferId::kFtpCommandData), "");
    EXPECT_FALSE(out[0].view.ftp_bounce);
    feed_flow(w0, ctl, Direction::kToClient, "227 Entering Passive Mode (10,0,0,2,19,137)\r\n",
              out);
    EXPECT_EQ(cfg.ftp_expect->live(), 0u);  // nothing until a transfer command uses it
    ASSERT_EQ(feed_flow(w0, ctl, Direction::kToServer, "RETR /pub/x.bin\r\n", out), 1u);
    EXPECT_EQ(cfg.ftp_expect->live(), 1u);

    // A flow to another port is not the data connection.
    flow::Flow other = make_flow("10.0.0.1", 40002, "10.0.0.2", 5002);
    feed_flow(w1, other, Direction::kToClient, "hello", out);
    EXPECT_NE(w1.proto(other), AppProto::kFtpData);
    flow::Flow data = make_flow("10.0.0.1", 40001, "10.0.0.2", 19 * 256 + 137);
    ASSERT_EQ(feed_flow(w1, data, Direction::kToClient, "GET / HTTP/1.1\r\n", out), 1u);
    EXPECT_EQ(w1.proto(data), AppProto::kFtpData);
    EXPECT_STREQ(w1.proto_name(data), "ftp-data");
    EXPECT_EQ(out[0].view.proto, AppProto::kFtpData);
    EXPECT_EQ(buf(out[0].view, BufferId::kFileData), "GET / HTTP/1.1\r\n");
    EXPECT_EQ(buf(out[0].view, BufferId::kFileName), "/pub/x.bin");
    EXPECT_EQ(out[0].view.ftpdata_command, inspect::kFtpRetr);
    ASSERT_EQ(feed_flow(w1, data, Direction::kToClient, "more", out), 1u);
    EXPECT_EQ(buf(out[0].view, BufferId::kFileData), "GET / HTTP/1.1\r\nmore");
    // The download's other direction carries no file.
    EXPECT_EQ(feed_flow(w1, data, Direction::kToServer, "x", out), 0u);
    EXPECT_EQ(cfg.ftp_expect->live(), 0u);  // taken once

    // The control connection ends: its open expectations go with it.
    feed_flow(w0, ctl, Direction::kToClient, "150 ok\r\n226 ok\r\n", out);
    feed_flow(w0, ctl, Direction::kToServer, "EPSV\r\n", out);
    feed_flow(w0, ctl, Direction::kToClient, "229 Extended (|||6000|)\r\n", out);
    feed_flow(w0, ctl, Direction::kToServer, "STOR up\r\n", out);
    EXPECT_EQ(cfg.ftp_expect->live(), 1u);
    w0.release_flow(ctl);
    EXPECT_EQ(cfg.ftp_expect->live(), 0u);
    w1.release_flow(data);
    w1.release_flow(other);
}

TEST(AppLayerFtpTest, ActiveUploadFileGoesToTheClientOfTheDataConnection) {
    AppLayerConfig cfg;
    cfg.ftp_expect = std::make_shared<ftp::ExpectTable>(64);
    AppLayer app(cfg);
    TxUpdate out[8];
    flow::Flow ctl = make_flow("10.0.0.1", 40000, "10.0.0.2", 21);
    feed_flow(app, ctl, Direction::kToServer, "USER a\r\n", out);
    EXPECT_EQ(app.proto(ctl), AppProto::kFtp);  // a client command on port 21
    ASSERT_EQ(feed_flow(app, ctl, Direction::kToServer, "PORT 10,0,0,1,4,1\r\n", out), 1u);
    EXPECT_FALSE(out[0].view.ftp_bounce);  // the client's own address
    feed_flow(app, ctl, Direction::kToServer, "STOR a.txt\r\n", out);
    // Active: the server connects from port 20 to the client's port 1025.
    flow::Flow data = make_flow("10.0.0.2", 20, "10.0.0.1", 1025);
    EXPECT_EQ(feed_flow(app, data, Direction::kToServer, "ack?", out), 0u);
    EXPECT_EQ(app.proto(data), AppProto::kFtpData);
    ASSERT_EQ(feed_flow(app, data, Direction::kToClient, "FILE", out), 1u);
    EXPECT_EQ(buf(out[0].view, BufferId::kFileData), "FILE");
    EXPECT_EQ(out[0].view.ftpdata_command, inspect::kFtpStor);
    app.release_flow(data);
    app.release_flow(ctl);
}

TEST(AppLayerFtpTest, LongCommandEventReachesDetection) {
    AppLayerConfig cfg;
    cfg.ftp_config.max_line = 32;
    AppLayer app(cfg);
    TxUpdate out[8];
    flow::Flow ctl = make_flow("10.0.0.1", 40000, "10.0.0.2", 21);
    feed_flow(app, ctl, Direction::kToClient, "220 x\r\n", out);
    ASSERT_EQ(
        feed_flow(app, ctl, Direction::kToServer, "SITE " + std::string(100, 'A') + "\r\n", out),
        1u);
    const inspect::AppEventName* e = inspect::find_app_event("ftp.request_command_too_long");
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(out[0].view.events, uint64_t{1} << e->bit);
    EXPECT_EQ(buf(out[0].view, BufferId::kFtpCommandData), std::string(27, 'A'));
    app.release_flow(ctl);
}

// The inspection contract's event names sit on the parsers' Event values: each entry's bit is
// the parser event whose name it gives.
TEST(AppEventTable, BitsAreTheParsersEvents) {
    const inspect::AppEventTable t = inspect::app_event_table();
    ASSERT_EQ(t.count, 48u);
    for (size_t i = 0; i < t.count; ++i) {
        const inspect::AppEventName& e = t.entries[i];
        std::string name;
        switch (e.proto) {
            case AppProto::kHttp:
                name = http::event_name(static_cast<http::Event>(e.bit));
                break;
            case AppProto::kDns:
                name = dns::event_name(static_cast<dns::Event>(e.bit));
                break;
            case AppProto::kTls:
                name = tls::event_name(static_cast<tls::Event>(e.bit));
                break;
            case AppProto::kSsh:
                name = ssh::event_name(static_cast<ssh::Event>(e.bit));
                break;
            case AppProto::kFtp:
                name = ftp::event_name(static_cast<ftp::Event>(e.bit));
                break;
            default:
                name = "?";
        }
        EXPECT_EQ(name, e.picket_name) << e.name;
        EXPECT_EQ(inspect::find_app_event(e.name), &e) << e.name;
    }
    EXPECT_EQ(inspect::find_app_event("http.no_such_event"), nullptr);
}

// A DNS query for www.Evil.example (id 0x1234, type A).
std::string dns_query() {
    std::string m = {0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    for (std::string label : {"www", "Evil", "example"}) {
        m.push_back(static_cast<char>(label.size()));
        m += label;
    }
    m += std::string("\x00\x00\x01\x00\x01", 5);
    return m;
}

TEST_F(AppLayerTest, DnsOverUdpQueryView) {
    ASSERT_EQ(feed(Direction::kToServer, dns_query(), false), 1u);
    EXPECT_EQ(app_.proto(flow_), AppProto::kDns);
    const inspect::AppView& v = out_[0].view;
    EXPECT_EQ(v.proto, AppProto::kDns);
    EXPECT_EQ(v.dns_opcode, 0);
    EXPECT_EQ(buf(v, BufferId::kDnsQuery), "www.Evil.example");
    std::string json;
    app_.render_metadata(flow_, v.tx_id, &json);
    EXPECT_EQ(json,
              "\"dns\":{\"version\":2,\"query\":[{\"type\":\"query\",\"id\":4660,\"rrname\":"
              "\"www.Evil.example\",\"rrtype\":\"A\",\"tx_id\":0,\"opcode\":0}]}");
    StatsSnapshot s;
    app_.export_stats(s);
    EXPECT_EQ(s.get("app_layer.flow.dns_udp"), 1u);
    EXPECT_EQ(s.get("app_layer.tx.dns_udp"), 1u);
}

TEST_F(AppLayerTest, DnsOverTcpWithLengthPrefix) {
    std::string q = dns_query();
    std::string framed = std::string(1, 0) + std::string(1, static_cast<char>(q.size())) + q;
    ASSERT_EQ(feed(Direction::kToServer, framed), 1u);
    EXPECT_EQ(app_.proto(flow_), AppProto::kDns);
    EXPECT_EQ(buf(out_[0].view, BufferId::kDnsQuery), "www.Evil.example");
}

TEST_F(AppLayerTest, DisabledProtocolIsNotDetected) {
    config_.http = false;
    AppLayer app(config_);
    flow::Flow f;
    std::string req = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    app.on_data(f, Direction::kToServer, reinterpret_cast<const uint8_t*>(req.data()), req.size(),
                true, out_, 8);
    EXPECT_EQ(app.proto(f), AppProto::kUnknown);
    app.release_flow(f);
}

// Memcap: N UDP DNS flows, each with one query (www.Evil.example) and its own id.
class AppLayerMemcapTest : public ::testing::Test {
protected:
    static constexpr size_t kFlows = 6;
    void TearDown() override {
        for (flow::Flow& f : flows_) {
            if (app_) {
                app_->release_flow(f);
            }
        }
    }
    void make(uint64_t memcap) {
        AppLayerConfig c;
        c.memcap = memcap;
        app_ = std::make_unique<AppLayer>(c);
    }
    uint32_t query(size_t i, Direction d = Direction::kToServer) {
        std::string q = dns_query();
        q[1] = static_cast<char>(i);  // message id 0x12<i>
        if (d == Direction::kToClient) {
            q[2] = static_cast<char>(q[2] | 0x80);  // QR: the response
        }
        return app_->on_data(flows_[i], d, reinterpret_cast<const uint8_t*>(q.data()), q.size(),
                             false, out_, 8);
    }
    uint64_t stat(const char* name) const {
        StatsSnapshot s;
        app_->export_stats(s);
        return s.get(name);
    }
    // The cost of one such flow, as accounted, measured on an unlimited app layer.
    static uint64_t per_flow() {
        AppLayer app(AppLayerConfig{});
        flow::Flow f;
        std::string q = dns_query();
        TxUpdate out[8];
        app.on_data(f, Direction::kToServer, reinterpret_cast<const uint8_t*>(q.data()), q.size(),
                    false, out, 8);
        const uint64_t n = app.memuse();
        app.release_flow(f);
        EXPECT_EQ(app.memuse(), 0u);
        return n;
    }

    std::unique_ptr<AppLayer> app_;
    flow::Flow flows_[kFlows];
    TxUpdate out_[8];
};

TEST_F(AppLayerMemcapTest, UdpDnsFlowKeepsOnlyItsTransactionMetadata) {
    // Before the memcap work a UDP DNS flow kept its parsed message, a copy of it in the
    // pending query, two deques and a 520-byte alert log: kilobytes. Now: about 650 bytes
    // (663 on x86-64 libstdc++: the state, the parser, one pending header, one metadata entry;
    // the SSH parser's pointer in the state added 8, FTP's two pointers, the control parser and
    // the ftp-data state, 16).
    const uint64_t p = per_flow();
    EXPECT_GT(p, 0u);
    EXPECT_LE(p, 680u);
}

TEST_F(AppLayerMemcapTest, OldestFlowsAreEvictedFirstAndTheNewestIsParsed) {
    const uint64_t p = per_flow();
    make(3 * p + p / 2);  // room for three flows
    for (size_t i = 0; i < 3; ++i) {
        ASSERT_EQ(query(i), 1u);
    }
    EXPECT_EQ(app_->memuse(), 3 * p);
    EXPECT_EQ(stat("app_layer.memcap_evicted"), 0u);
    // Flow 0's response touches it: flow 1 is now the least recently used.
    ASSERT_EQ(query(0, Direction::kToClient), 1u);
    ASSERT_EQ(query(3), 1u);
    EXPECT_EQ(buf(out_[0].view, BufferId::kDnsQuery), "www.Evil.example");
    EXPECT_EQ(stat("app_layer.memcap_evicted"), 1u);
    // Flow 1 lost its state but keeps its protocol; it is not parsed again.
    EXPECT_STREQ(app_->proto_name(flows_[1]), "dns");
    EXPECT_EQ(app_->proto(flows_[1]), AppProto::kDns);
    EXPECT_EQ(app_->alert_log(flows_[1]), nullptr);
    std::string json;
    app_->render_metadata(flows_[1], 0, &json);
    EXPECT_EQ(json, "");
    EXPECT_EQ(query(1, Direction::kToClient), 0u);
    // Two more flows: flows 2 then 0 go (0 was touched after 2).
    ASSERT_EQ(query(4), 1u);
    ASSERT_EQ(query(5), 1u);
    EXPECT_EQ(buf(out_[0].view, BufferId::kDnsQuery), "www.Evil.example");
    EXPECT_EQ(stat("app_layer.memcap_evicted"), 3u);
    EXPECT_EQ(stat("app_layer.memcap_drop"), 0u);
    EXPECT_EQ(stat("app_layer.memuse"), 3 * p);
    EXPECT_NE(app_->alert_log(flows_[3]), nullptr);
    EXPECT_EQ(app_->alert_log(flows_[0]), nullptr);
    EXPECT_EQ(app_->alert_log(flows_[2]), nullptr);
    json.clear();
    app_->render_metadata(flows_[5], 0, &json);
    EXPECT_EQ(json,
              "\"dns\":{\"version\":2,\"query\":[{\"type\":\"query\",\"id\":4613,\"rrname\":"
              "\"www.Evil.example\",\"rrtype\":\"A\",\"tx_id\":0,\"opcode\":0}]}");
    // Every flow gives back what it held, evicted or not.
    for (flow::Flow& f : flows_) {
        app_->release_flow(f);
    }
    EXPECT_EQ(app_->memuse(), 0u);
    EXPECT_EQ(stat("app_layer.memuse"), 0u);
}

TEST_F(AppLayerMemcapTest, StateThatCannotFitIsDroppedOnce) {
    make(16);  // less than one empty state
    EXPECT_EQ(query(0), 0u);
    EXPECT_STREQ(app_->proto_name(flows_[0]), "failed");
    EXPECT_EQ(query(0), 0u);  // the flow is marked: no second attempt, no second count
    EXPECT_EQ(stat("app_layer.memcap_drop"), 1u);
    EXPECT_EQ(stat("app_layer.memcap_evicted"), 0u);
    EXPECT_EQ(stat("app_layer.flow.dns_udp"), 0u);
    EXPECT_EQ(app_->memuse(), 0u);
}

TEST_F(AppLayerMemcapTest, AlertLogIsKeptOnlyForFlowsThatAlerted) {
    make(1 << 20);
    ASSERT_EQ(query(0), 1u);
    ASSERT_EQ(query(1), 1u);
    const uint64_t p = app_->memuse() / 2;
    inspect::TxAlertLog* log = app_->alert_log(flows_[0]);
    ASSERT_NE(log, nullptr);
    log->add(0, 2001);
    // Flow 1 asks (nothing recorded for it): flow 0 gets its own copy of what it recorded.
    EXPECT_FALSE(app_->alert_log(flows_[1])->seen(0, 2001));
    EXPECT_EQ(app_->memuse(), 2 * p + sizeof(inspect::TxAlertLog));
    EXPECT_TRUE(app_->alert_log(flows_[0])->seen(0, 2001));
    // Flow 1 recorded nothing: it never gets a log of its own.
    app_->alert_log(flows_[2]);
    EXPECT_EQ(app_->memuse(), 2 * p + sizeof(inspect::TxAlertLog));
}

TEST_F(AppLayerMemcapTest, FailedFlowsHoldNoState) {
    make(1 << 20);
    const std::string junk = "not dns at all, not even close";
    EXPECT_EQ(
        app_->on_data(flows_[0], Direction::kToServer,
                      reinterpret_cast<const uint8_t*>(junk.data()), junk.size(), false, out_, 8),
        0u);
    EXPECT_STREQ(app_->proto_name(flows_[0]), "failed");
    EXPECT_EQ(app_->memuse(), 0u);
    EXPECT_EQ(stat("app_layer.flow.failed_udp"), 1u);
}

}  // namespace
}  // namespace picket::sensor::applayer
