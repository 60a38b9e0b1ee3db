#include "sensor/applayer/http/http.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

namespace picket::sensor::applayer::http {
namespace {

using namespace std::string_literals;

const uint8_t* u8(const std::string& s) {
    return reinterpret_cast<const uint8_t*>(s.data());
}

// zlib-made test bodies: window_bits 15+16 gzip, 15 zlib-wrapped deflate, -15 raw deflate.
std::string compress(const std::string& in, int window_bits) {
    z_stream zs{};
    EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&zs, in.size()) + 64, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    return out;
}

std::string chunked(const std::string& body, size_t piece) {
    std::string out;
    char hex[32];
    for (size_t i = 0; i < body.size(); i += piece) {
        size_t n = std::min(piece, body.size() - i);
        snprintf(hex, sizeof(hex), "%zx", n);
        out += hex;
        out += i == 0 ? ";name=value\r\n" : "\r\n";
        out += body.substr(i, n) + "\r\n";
    }
    return out + "0\r\nX-Trailer: done\r\n\r\n";
}

std::string dump(const HttpTx& t) {
    std::string s = "id=" + std::to_string(t.id);
    auto f = [&](const char* name, const std::string& v) { s += "|"s + name + "=" + v; };
    f("method", t.method);
    f("uri", t.uri);
    f("uri_raw", t.uri_raw);
    f("protocol", t.protocol);
    f("request_line", t.request_line);
    f("request_headers", t.request_headers);
    f("request_headers_raw", t.request_headers_raw);
    f("request_header_names", t.request_header_names);
    f("cookie", t.cookie);
    f("user_agent", t.user_agent);
    f("host", t.host);
    f("host_raw", t.host_raw);
    f("ct", t.content_type_req);
    f("cl", t.content_len_req);
    f("referer", t.referer);
    f("accept", t.accept);
    f("accept_enc", t.accept_enc);
    f("accept_lang", t.accept_lang);
    f("connection", t.connection);
    f("request_body", t.request_body);
    f("request_start", t.request_start);
    f("response_protocol", t.response_protocol);
    f("stat_code", t.stat_code);
    f("stat_msg", t.stat_msg);
    f("response_line", t.response_line);
    f("response_headers", t.response_headers);
    f("response_headers_raw", t.response_headers_raw);
    f("response_header_names", t.response_header_names);
    f("response_cookie", t.response_cookie);
    f("ct_resp", t.content_type_resp);
    f("cl_resp", t.content_len_resp);
    f("location", t.location);
    f("server", t.server);
    f("response_body", t.response_body);
    f("response_start", t.response_start);
    s += "|status=" + std::to_string(t.status) + "|rp=" + std::to_string(t.request_progress) +
         "|sp=" + std::to_string(t.response_progress) +
         "|rt=" + std::to_string(t.request_body_truncated) +
         "|st=" + std::to_string(t.response_body_truncated) +
         "|rb=" + std::to_string(t.request_body_bytes) +
         "|sb=" + std::to_string(t.response_body_bytes) + "|ev=" + std::to_string(t.events.bits());
    return s;
}

struct Step {
    Dir dir;
    std::string data;
    bool close = false;
};

// Runs the steps, each step's bytes cut into pieces of `piece` bytes (0: whole), and returns
// the transactions held at the end, dumped, plus the event counters.
std::vector<std::string> run(const HttpConfig& cfg, const std::vector<Step>& steps, size_t piece) {
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    for (const Step& s : steps) {
        if (s.close) {
            p.on_close(s.dir);
            continue;
        }
        size_t n = piece == 0 ? s.data.size() : piece;
        for (size_t i = 0; i < s.data.size(); i += n) {
            p.feed(s.dir, u8(s.data) + i, std::min(n, s.data.size() - i));
        }
    }
    std::vector<std::string> out;
    for (size_t i = 0; i < p.tx_count(); ++i) {
        out.push_back(dump(p.tx_at(i)));
    }
    std::string ev;
    for (size_t i = 0; i < kEventCount; ++i) {
        ev += std::to_string(ctr.events[i].get()) + ",";
    }
    out.push_back(ev + "failed=" + std::to_string(p.failed()));
    return out;
}

const std::string kGet =
    "GET /a/./b/../c%2Ed?x=%41 HTTP/1.1\r\n"
    "Host: WWW.Example.COM:8080\r\n"
    "User-Agent: curl/8.0 \r\n"
    "Accept: */*\r\n"
    "Cookie: a=b\r\n"
    "Accept-Encoding: gzip\r\n"
    "Accept-Language: en\r\n"
    "Referer: http://r/\r\n"
    "Connection: keep-alive\r\n"
    "\r\n";

TEST(HttpParser, GetWithHeadersExactFields) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    FeedResult r = p.feed(Dir::kToServer, u8(kGet), kGet.size());
    EXPECT_EQ(r.first_id, 0u);
    EXPECT_EQ(r.count, 1u);
    EXPECT_FALSE(r.failed);
    ASSERT_EQ(p.tx_count(), 1u);
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(t.id, 0u);
    EXPECT_EQ(t.method, "GET");
    EXPECT_EQ(t.uri, "/a/c.d?x=%41");
    EXPECT_EQ(t.uri_raw, "/a/./b/../c%2Ed?x=%41");
    EXPECT_EQ(t.protocol, "HTTP/1.1");
    EXPECT_EQ(t.request_line, "GET /a/./b/../c%2Ed?x=%41 HTTP/1.1");
    EXPECT_EQ(t.request_headers,
              "Host: WWW.Example.COM:8080\r\nUser-Agent: curl/8.0\r\nAccept: */*\r\n"
              "Accept-Encoding: gzip\r\nAccept-Language: en\r\nReferer: http://r/\r\n"
              "Connection: keep-alive\r\n");
    EXPECT_EQ(t.request_headers_raw, kGet.substr(kGet.find("\r\n") + 2));
    EXPECT_EQ(t.request_header_names,
              "\r\nHost\r\nUser-Agent\r\nAccept\r\nCookie\r\nAccept-Encoding\r\n"
              "Accept-Language\r\nReferer\r\nConnection\r\n\r\n");
    EXPECT_EQ(t.request_start,
              "GET /a/./b/../c%2Ed?x=%41 HTTP/1.1\r\nHost: WWW.Example.COM:8080\r\n"
              "User-Agent: curl/8.0\r\nAccept: */*\r\nCookie: a=b\r\nAccept-Encoding: gzip\r\n"
              "Accept-Language: en\r\nReferer: http://r/\r\nConnection: keep-alive\r\n\r\n");
    EXPECT_EQ(t.cookie, "a=b");
    EXPECT_EQ(t.user_agent, "curl/8.0");
    EXPECT_EQ(t.host, "www.example.com");
    EXPECT_EQ(t.host_raw, "WWW.Example.COM:8080");
    EXPECT_EQ(t.accept, "*/*");
    EXPECT_EQ(t.accept_enc, "gzip");
    EXPECT_EQ(t.accept_lang, "en");
    EXPECT_EQ(t.referer, "http://r/");
    EXPECT_EQ(t.connection, "keep-alive");
    EXPECT_EQ(t.content_len_req, "");
    EXPECT_EQ(t.request_progress, HttpTx::kRequestComplete);
    EXPECT_EQ(t.response_progress, HttpTx::kResponseNew);
    EXPECT_TRUE(t.events.empty());
    EXPECT_EQ(ctr.transactions.get(), 1u);

    const std::string resp =
        "HTTP/1.1 200 OK\r\nServer: nginx\r\nSet-Cookie: s=1\r\nContent-Type: text/html\r\n"
        "Content-Length: 5\r\nLocation: /x\r\n\r\nhello";
    r = p.feed(Dir::kToClient, u8(resp), resp.size());
    EXPECT_EQ(r.first_id, 0u);
    EXPECT_EQ(r.count, 1u);
    EXPECT_EQ(t.response_protocol, "HTTP/1.1");
    EXPECT_EQ(t.stat_code, "200");
    EXPECT_EQ(t.stat_msg, "OK");
    EXPECT_EQ(t.status, 200);
    EXPECT_EQ(t.response_line, "HTTP/1.1 200 OK");
    EXPECT_EQ(t.response_headers,
              "Server: nginx\r\nContent-Type: text/html\r\nContent-Length: 5\r\n"
              "Location: /x\r\n");
    EXPECT_EQ(t.response_header_names,
              "\r\nServer\r\nSet-Cookie\r\nContent-Type\r\nContent-Length\r\nLocation\r\n\r\n");
    EXPECT_EQ(t.response_cookie, "s=1");
    EXPECT_EQ(t.server, "nginx");
    EXPECT_EQ(t.content_type_resp, "text/html");
    EXPECT_EQ(t.content_len_resp, "5");
    EXPECT_EQ(t.location, "/x");
    EXPECT_EQ(t.response_body, "hello");
    EXPECT_EQ(t.response_progress, HttpTx::kResponseComplete);
    EXPECT_TRUE(t.complete());
    EXPECT_EQ(p.release_completed(), 1u);
    EXPECT_EQ(p.tx_count(), 0u);
}

TEST(HttpParser, PostWithContentLength) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req =
        "POST /form HTTP/1.1\r\nHost: a\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 7\r\n\r\na=1&b=2GET /next HTTP/1.1\r\nHost: a\r\n\r\n";
    FeedResult r = p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(r.first_id, 0u);
    EXPECT_EQ(r.count, 2u);
    ASSERT_EQ(p.tx_count(), 2u);
    EXPECT_EQ(p.tx_at(0).request_body, "a=1&b=2");
    EXPECT_EQ(p.tx_at(0).request_body_bytes, 7u);
    EXPECT_EQ(p.tx_at(0).content_len_req, "7");
    EXPECT_EQ(p.tx_at(0).content_type_req, "application/x-www-form-urlencoded");
    EXPECT_EQ(p.tx_at(0).request_progress, HttpTx::kRequestComplete);
    EXPECT_EQ(p.tx_at(1).uri, "/next");
}

TEST(HttpParser, RequestBodyLimitTruncates) {
    HttpConfig cfg;
    cfg.request_body_limit = 4;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(p.tx_at(0).request_body, "0123");
    EXPECT_TRUE(p.tx_at(0).request_body_truncated);
    EXPECT_EQ(p.tx_at(0).request_body_bytes, 10u);
}

const std::string kText =
    "<html><body>The quick brown fox jumps over the lazy dog. 0123456789 "
    "The quick brown fox jumps over the lazy dog again.</body></html>";

std::string response_with(const std::string& encoding, const std::string& body_on_wire,
                          bool chunk) {
    std::string head = "HTTP/1.1 200 OK\r\nContent-Encoding: " + encoding + "\r\n";
    if (chunk) {
        return head + "Transfer-Encoding: chunked\r\n\r\n" + chunked(body_on_wire, 10);
    }
    return head + "Content-Length: " + std::to_string(body_on_wire.size()) + "\r\n\r\n" +
           body_on_wire;
}

const std::string kSimpleGet = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

TEST(HttpParser, ChunkedGzipResponse) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    std::string resp = response_with("gzip", compress(kText, 15 + 16), true);
    p.feed(Dir::kToClient, u8(resp), resp.size());
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(t.response_body, kText);
    EXPECT_TRUE(t.response_chunked);
    EXPECT_FALSE(t.response_body_truncated);
    EXPECT_EQ(t.response_progress, HttpTx::kResponseComplete);
    // The trailer joins the header buffers.
    EXPECT_EQ(t.response_headers,
              "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\nX-Trailer: done\r\n");
    EXPECT_TRUE(t.events.empty());
}

TEST(HttpParser, DeflateRawAndZlibWrapped) {
    for (int bits : {-15, 15}) {
        HttpConfig cfg;
        HttpCounters ctr;
        HttpParser p(&cfg, &ctr);
        p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
        std::string resp = response_with("deflate", compress(kText, bits), false);
        p.feed(Dir::kToClient, u8(resp), resp.size());
        EXPECT_EQ(p.tx_at(0).response_body, kText) << bits;
        EXPECT_TRUE(p.tx_at(0).events.empty()) << bits;
    }
}

TEST(HttpParser, CorruptGzipIsAnEvent) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    std::string gz = compress(kText, 15 + 16);
    gz[gz.size() / 2] ^= 0x55;
    gz[gz.size() / 2 + 1] ^= 0x55;
    std::string resp = response_with("gzip", gz, false);
    p.feed(Dir::kToClient, u8(resp), resp.size());
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kDecompressionError));
    EXPECT_EQ(p.tx_at(0).response_progress, HttpTx::kResponseComplete);
    // A body labelled gzip that is not compressed at all is inspected as sent.
    HttpParser q(&cfg, &ctr);
    q.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    resp = response_with("gzip", "plain text", false);
    q.feed(Dir::kToClient, u8(resp), resp.size());
    EXPECT_EQ(q.tx_at(0).response_body, "plain text");
    EXPECT_TRUE(q.tx_at(0).events.has(Event::kDecompressionError));
}

TEST(HttpParser, PipelinedRequestsAndResponses) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string reqs =
        "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
        "HEAD /3 HTTP/1.1\r\nHost: a\r\n\r\n";
    FeedResult r = p.feed(Dir::kToServer, u8(reqs), reqs.size());
    EXPECT_EQ(r.first_id, 0u);
    EXPECT_EQ(r.count, 3u);
    const std::string resps =
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"
        "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"
        "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    r = p.feed(Dir::kToClient, u8(resps), resps.size());
    EXPECT_EQ(r.first_id, 0u);
    EXPECT_EQ(r.count, 3u);
    ASSERT_EQ(p.tx_count(), 3u);
    EXPECT_EQ(p.tx_at(0).uri, "/1");
    EXPECT_EQ(p.tx_at(0).response_body, "one");
    EXPECT_EQ(p.tx_at(1).uri, "/2");
    EXPECT_EQ(p.tx_at(1).status, 404);
    EXPECT_EQ(p.tx_at(1).stat_msg, "Not Found");
    EXPECT_EQ(p.tx_at(1).response_body, "two");
    EXPECT_EQ(p.tx_at(2).method, "HEAD");
    EXPECT_EQ(p.tx_at(2).response_body, "");
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(p.tx_at(i).complete()) << i;
        EXPECT_EQ(p.tx_at(i).id, i);
    }
    EXPECT_EQ(p.find_tx(1)->uri, "/2");
    EXPECT_EQ(p.release_completed(), 3u);
    // The next request and response carry on with id 3.
    const std::string more = "GET /4 HTTP/1.1\r\nHost: a\r\n\r\n";
    r = p.feed(Dir::kToServer, u8(more), more.size());
    EXPECT_EQ(r.first_id, 3u);
    EXPECT_EQ(r.count, 1u);
    EXPECT_EQ(p.find_tx(3)->uri, "/4");
}

TEST(HttpParser, HeadResponseHasNoBody) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string reqs = "HEAD / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n";
    p.feed(Dir::kToServer, u8(reqs), reqs.size());
    const std::string resps =
        "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
        "HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n";
    p.feed(Dir::kToClient, u8(resps), resps.size());
    EXPECT_EQ(p.tx_at(0).response_progress, HttpTx::kResponseComplete);
    EXPECT_EQ(p.tx_at(1).status, 304);
    EXPECT_EQ(p.tx_at(1).response_progress, HttpTx::kResponseComplete);
}

TEST(HttpParser, Http10BodyUntilClose) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req = "GET / HTTP/1.0\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    const std::string resp = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello ";
    p.feed(Dir::kToClient, u8(resp), resp.size());
    p.feed(Dir::kToClient, u8("world"s), 5);
    EXPECT_EQ(p.tx_at(0).response_progress, HttpTx::kResponseBody);
    EXPECT_FALSE(p.tx_at(0).events.has(Event::kMissingHost));
    FeedResult r = p.on_close(Dir::kToClient);
    EXPECT_EQ(r.count, 1u);
    EXPECT_EQ(p.tx_at(0).response_body, "hello world");
    EXPECT_EQ(p.tx_at(0).response_progress, HttpTx::kResponseComplete);
    EXPECT_FALSE(p.tx_at(0).response_body_truncated);
}

TEST(HttpParser, ObsFoldJoined) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req =
        "GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: Mozilla/5.0\r\n  (X11;\r\n\tLinux)\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(p.tx_at(0).user_agent, "Mozilla/5.0 (X11; Linux)");
    EXPECT_EQ(p.tx_at(0).request_headers, "Host: a\r\nUser-Agent: Mozilla/5.0 (X11; Linux)\r\n");
}

TEST(HttpParser, DuplicateHeadersJoined) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req =
        "GET / HTTP/1.1\r\nHost: ABC.com\r\nUser-Agent: SuriTester/0.8\r\nAccept: */*\r\n"
        "user-agent: GGGG\r\nHOST: efg.net\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(t.user_agent, "SuriTester/0.8, GGGG");
    EXPECT_EQ(t.host_raw, "ABC.com, efg.net");
    EXPECT_EQ(t.host, "abc.com, efg.net");
    EXPECT_EQ(t.request_header_names, "\r\nHost\r\nUser-Agent\r\nAccept\r\n\r\n");
    EXPECT_EQ(t.request_headers,
              "Host: ABC.com, efg.net\r\nUser-Agent: SuriTester/0.8, GGGG\r\nAccept: */*\r\n");
}

TEST(HttpParser, AbsoluteUriGivesHost) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req =
        "GET http://User@Proxy.Example.:3128/a//b?q HTTP/1.1\r\nHost: other\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(p.tx_at(0).host_raw, "Proxy.Example.:3128");
    EXPECT_EQ(p.tx_at(0).host, "proxy.example");
    EXPECT_EQ(p.tx_at(0).uri, "/a/b?q");
}

struct UriCase {
    std::string raw;
    std::string norm;
    std::vector<Event> events;
};

TEST(NormalizeUri, Table) {
    const std::vector<UriCase> cases = {
        {"/index.html", "/index.html", {}},
        {"/a%2eb", "/a.b", {}},
        {"/%2e%2e/etc/passwd", "/etc/passwd", {Event::kDirectoryTraversal}},
        {"/a/%2E%2E/b", "/b", {}},
        {"/a/./b", "/a/b", {}},
        {"/a/b/..", "/a/", {}},
        {"/a/b/.", "/a/b/", {}},
        {"/../../x", "/x", {Event::kDirectoryTraversal}},
        {"/a/../../x", "/x", {Event::kDirectoryTraversal}},
        {"//a///b", "/a/b", {}},
        {"/a\\b\\..\\c", "/a/c", {}},
        {"/a%5cb", "/a/b", {}},
        {"/a%zzb%4", "/a%zzb%4", {Event::kInvalidPercentEncoding}},
        {"/a%u0041b", "/aAb", {Event::kUEncoding}},
        {"/a%uff0e%uff0e/b", "/a../b", {Event::kUEncoding, Event::kUEncodingNonAscii}},
        {"/%u2215x", "/?x", {Event::kUEncoding, Event::kUEncodingNonAscii}},
        {"/a%252e", "/a%2e", {Event::kDoubleEncoding}},
        {"/a%00b", "/a\0b"s, {Event::kNulByte}},
        {"/p/../q?a=%2e%2e/../x&b=//", "/q?a=%2e%2e/../x&b=//", {}},
        {"/A%20B?x y", "/A B?x y", {}},
        {"", "", {}},
        {"rel/../../x", "x", {Event::kDirectoryTraversal}},
    };
    HttpConfig cfg;
    for (const UriCase& c : cases) {
        EventSet ev;
        EXPECT_EQ(normalize_uri(c.raw, cfg, &ev), c.norm) << c.raw;
        EventSet want_ev;
        for (Event e : c.events) {
            want_ev.set(e);
        }
        EXPECT_EQ(ev.bits(), want_ev.bits()) << c.raw;
    }
    // Oversize directory: one segment longer than oversize_dir_length.
    EventSet ev;
    // (built with append: GCC 12's -Wrestrict misfires on "/" + std::string(n, c) at -O3)
    std::string longseg = std::string(1, '/').append(301, 'a').append("/b");
    EXPECT_EQ(normalize_uri(longseg, cfg, &ev), longseg);
    EXPECT_TRUE(ev.has(Event::kOversizeDirLength));
    ev = EventSet();
    normalize_uri(std::string(1, '/').append(300, 'a').append("/b"), cfg, &ev);
    EXPECT_TRUE(ev.empty());
    // Raw NUL byte.
    ev = EventSet();
    EXPECT_EQ(normalize_uri("/a\0b"s, cfg, &ev), "/a\0b"s);
    EXPECT_TRUE(ev.has(Event::kNulByte));
    // Double decoding when configured.
    HttpConfig dd;
    dd.double_decode = true;
    ev = EventSet();
    EXPECT_EQ(normalize_uri("/a/%252e%252e/b", dd, &ev), "/b");
    EXPECT_TRUE(ev.has(Event::kDoubleEncoding));
    // Everything off: only the raw path.
    HttpConfig off;
    off.percent_decode = off.u_encode = off.backslash_to_slash = off.collapse_slashes =
        off.path_normalize = false;
    ev = EventSet();
    EXPECT_EQ(normalize_uri("//a/../%2e\\b", off, &ev), "//a/../%2e\\b");
    EXPECT_TRUE(ev.empty());
}

TEST(NormalizeHost, Forms) {
    EXPECT_EQ(normalize_host("WWW.Example.COM"), "www.example.com");
    EXPECT_EQ(normalize_host("Example.com.:8080"), "example.com");
    EXPECT_EQ(normalize_host("[2001:DB8::1]:443"), "[2001:db8::1]");
    EXPECT_EQ(normalize_host(""), "");
}

TEST(HttpParser, BadChunkSizeEvent) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    const std::string resp =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nrest of it";
    p.feed(Dir::kToClient, u8(resp), resp.size());
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kInvalidChunkSize));
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kInvalidChunkSize)].get(), 1u);
    // Not chunked after all (libhtp): the bad line and the rest are the body until the close.
    EXPECT_EQ(p.tx_at(0).response_body, "zz\r\nrest of it");
    HttpParser q(&cfg, &ctr);
    q.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    const std::string big =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00001ffffffffffffffff\r\n";
    q.feed(Dir::kToClient, u8(big), big.size());
    EXPECT_TRUE(q.tx_at(0).events.has(Event::kChunkSizeTooLong));
}

TEST(HttpParser, ChunkedAndContentLength) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req =
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n0\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(p.tx_at(0).request_body, "hello");
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kChunkedAndContentLength));
    EXPECT_EQ(p.tx_at(0).request_progress, HttpTx::kRequestComplete);
}

TEST(HttpParser, InvalidContentLength) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kInvalidContentLength));
    const std::string ok =
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nhi";
    p.feed(Dir::kToServer, u8(ok), ok.size());
    EXPECT_EQ(p.tx_at(1).request_body, "hi");
    EXPECT_FALSE(p.tx_at(1).events.has(Event::kInvalidContentLength));
}

TEST(HttpParser, HugeHeaderBoundedMemory) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string req = "GET / HTTP/1.1\r\nHost: a\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    std::string line = "X-Pad: " + std::string(1000, 'p') + "\r\n";
    for (int i = 0; i < 1000; ++i) {  // ~1 MB of header lines
        std::string l = "X-" + std::to_string(i) + line;
        p.feed(Dir::kToServer, u8(l), l.size());
        ASSERT_LE(p.memory(), 300u * 1024);
    }
    p.feed(Dir::kToServer, u8("\r\n"s), 2);
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kHeaderTooLong));
    EXPECT_EQ(p.tx_at(0).request_progress, HttpTx::kRequestComplete);
    EXPECT_LE(p.tx_at(0).request_headers_raw.size(), cfg.max_header_bytes);
    EXPECT_LE(p.memory(), HttpParser::memory_bound(cfg));
    EXPECT_EQ(ctr.memuse.get(), p.memory());

    // One endless line: truncated at max_line_bytes, memory stays flat.
    HttpParser q(&cfg, &ctr);
    std::string start = "GET /";
    q.feed(Dir::kToServer, u8(start), start.size());
    std::string junk(64 * 1024, 'a');
    for (int i = 0; i < 32; ++i) {
        q.feed(Dir::kToServer, u8(junk), junk.size());
        ASSERT_LE(q.memory(), 64u * 1024);
    }
    q.feed(Dir::kToServer, u8(" HTTP/1.1\r\nHost: a\r\n\r\n"s), 23);
    ASSERT_EQ(q.tx_count(), 1u);
    EXPECT_EQ(q.tx_at(0).request_line.size(), cfg.max_line_bytes);
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kLineTooLong)].get(), 1u);
}

TEST(HttpParser, EndlessChunkStreamBoundedMemory) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    p.feed(Dir::kToClient, u8(head), head.size());
    std::string chunk = "1000\r\n" + std::string(4096, 'c') + "\r\n";
    for (int i = 0; i < 2000; ++i) {  // 8 MB of chunks
        p.feed(Dir::kToClient, u8(chunk), chunk.size());
    }
    EXPECT_EQ(p.tx_at(0).response_body.size(), cfg.response_body_limit);
    EXPECT_TRUE(p.tx_at(0).response_body_truncated);
    EXPECT_EQ(p.tx_at(0).response_body_bytes, 2000u * 4096);
    EXPECT_LE(p.memory(), 32u * 1024);
}

TEST(HttpParser, DecompressionBomb) {
    std::string zeros(10 * 1024 * 1024, '\0');
    std::string gz = compress(zeros, 15 + 16);
    ASSERT_LT(gz.size(), 64u * 1024);
    std::string resp = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: " +
                       std::to_string(gz.size()) + "\r\n\r\n" + gz;
    {
        // Body limit above the decompression limit: stops at decompress_limit.
        HttpConfig cfg;
        cfg.response_body_limit = 16 * 1024 * 1024;
        HttpCounters ctr;
        HttpParser p(&cfg, &ctr);
        p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
        p.feed(Dir::kToClient, u8(resp), resp.size());
        const HttpTx& t = p.tx_at(0);
        EXPECT_EQ(t.response_body.size(), cfg.decompress_limit);
        EXPECT_TRUE(t.events.has(Event::kDecompressionBomb));
        EXPECT_TRUE(t.response_body_truncated);
        EXPECT_EQ(t.response_progress, HttpTx::kResponseComplete);
        EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kDecompressionBomb)].get(), 1u);
        EXPECT_LE(p.memory(), 2u * cfg.decompress_limit + 128 * 1024);
    }
    {
        // Ratio guard.
        HttpConfig cfg;
        cfg.response_body_limit = 16 * 1024 * 1024;
        cfg.decompress_limit = 16 * 1024 * 1024;
        cfg.decompress_max_ratio = 100;
        HttpCounters ctr;
        HttpParser p(&cfg, &ctr);
        p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
        p.feed(Dir::kToClient, u8(resp), resp.size());
        EXPECT_TRUE(p.tx_at(0).events.has(Event::kDecompressionBomb));
        EXPECT_LT(p.tx_at(0).response_body.size(), 1024u * 1024);
    }
    {
        // Default limits: inflating stops once the inspected body is full; no event.
        HttpConfig cfg;
        HttpCounters ctr;
        HttpParser p(&cfg, &ctr);
        p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
        p.feed(Dir::kToClient, u8(resp), resp.size());
        EXPECT_EQ(p.tx_at(0).response_body, std::string(4096, '\0'));
        EXPECT_TRUE(p.tx_at(0).response_body_truncated);
        EXPECT_TRUE(p.tx_at(0).events.empty());
        EXPECT_EQ(p.tx_at(0).response_progress, HttpTx::kResponseComplete);
    }
}

TEST(HttpParser, GarbageAbandons) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string junk = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 garbage\r\n\r\n"s;
    FeedResult r = p.feed(Dir::kToServer, u8(junk), junk.size());
    EXPECT_TRUE(r.failed);
    EXPECT_TRUE(p.failed());
    EXPECT_EQ(p.tx_count(), 0u);
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kInvalidRequestLine)].get(), 1u);
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kAbandoned)].get(), 1u);
    EXPECT_EQ(ctr.flows_abandoned.get(), 1u);
    // Further input is ignored safely.
    r = p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    EXPECT_TRUE(r.failed);
    EXPECT_EQ(r.count, 0u);
    HttpParser q(&cfg, &ctr);
    std::string bad_resp = "SSH-2.0-OpenSSH\r\n";
    q.feed(Dir::kToClient, u8(bad_resp), bad_resp.size());
    // libhtp: a response that is not HTTP is a head-less body until the close, in a
    // transaction of its own (no request waits), not an abandoned flow.
    EXPECT_FALSE(q.failed());
    ASSERT_EQ(q.tx_count(), 1u);
    EXPECT_EQ(q.tx_at(0).response_body, "SSH-2.0-OpenSSH\r\n");
    EXPECT_TRUE(q.tx_at(0).events.has(Event::kUnmatchedResponse));
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kInvalidStatusLine)].get(), 1u);
}

TEST(HttpParser, UnknownMethodAndMissingHostAndCrlf) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req = "FOO /x HTTP/1.1\nAccept: a\n\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(t.method, "FOO");
    EXPECT_EQ(t.accept, "a");
    EXPECT_EQ(t.request_headers_raw, "Accept: a\n\n");
    EXPECT_TRUE(t.events.has(Event::kUnknownMethod));
    EXPECT_TRUE(t.events.has(Event::kMissingHost));
    EXPECT_TRUE(t.events.has(Event::kMissingCrlf));
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kMissingCrlf)].get(), 1u);
}

TEST(HttpParser, InterimContinueThenFinal) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req =
        "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    const std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
    p.feed(Dir::kToClient, u8(cont), cont.size());
    EXPECT_EQ(p.tx_at(0).response_progress, HttpTx::kResponseNew);
    p.feed(Dir::kToServer, u8("ok"s), 2);
    const std::string fin = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
    p.feed(Dir::kToClient, u8(fin), fin.size());
    EXPECT_EQ(p.tx_at(0).status, 201);
    EXPECT_EQ(p.tx_at(0).response_line, "HTTP/1.1 201 Created");
    EXPECT_TRUE(p.tx_at(0).complete());
    EXPECT_EQ(p.tx_count(), 1u);
}

TEST(HttpParser, ConnectTunnel) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(p.tx_at(0).uri, "example.com:443");
    EXPECT_EQ(p.tx_at(0).request_progress, HttpTx::kRequestComplete);
    const std::string resp = "HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x01"s;
    p.feed(Dir::kToClient, u8(resp), resp.size());
    EXPECT_TRUE(p.tunnel());
    EXPECT_TRUE(p.tx_at(0).complete());
    FeedResult r = p.feed(Dir::kToServer, u8("\x16\x03\x01 tls"s), 7);
    EXPECT_EQ(r.count, 0u);
    EXPECT_FALSE(p.failed());
    EXPECT_EQ(p.tx_count(), 1u);
}

TEST(HttpParser, UnmatchedResponse) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    FeedResult r = p.feed(Dir::kToClient, u8(resp), resp.size());
    EXPECT_EQ(r.count, 1u);
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kUnmatchedResponse));
    EXPECT_TRUE(p.tx_at(0).complete());
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    EXPECT_EQ(p.tx_at(1).id, 1u);
    p.feed(Dir::kToClient, u8(resp), resp.size());
    EXPECT_TRUE(p.tx_at(1).complete());
    EXPECT_FALSE(p.tx_at(1).events.has(Event::kUnmatchedResponse));
}

TEST(HttpParser, TooManyTransactions) {
    HttpConfig cfg;
    cfg.max_pipelined = 2;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string reqs = kSimpleGet + kSimpleGet + kSimpleGet;
    FeedResult r = p.feed(Dir::kToServer, u8(reqs), reqs.size());
    EXPECT_TRUE(r.failed);
    EXPECT_EQ(p.tx_count(), 2u);
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kTooManyTransactions)].get(), 1u);
    // Completed transactions are released to make room, so a long keep-alive flow is fine.
    HttpParser q(&cfg, &ctr);
    std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    for (int i = 0; i < 10; ++i) {
        q.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
        q.feed(Dir::kToClient, u8(resp), resp.size());
    }
    EXPECT_FALSE(q.failed());
    EXPECT_EQ(q.tx_at(q.tx_count() - 1).id, 9u);
}

TEST(HttpParser, AutoReleaseKeepsTransactionsCompletedInTheSameCall) {
    HttpConfig cfg;
    cfg.max_pipelined = 2;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    p.feed(Dir::kToClient, u8(resp), resp.size());
    // tx 0 completed in an earlier call: freed to make room for tx 2.
    std::string two = kSimpleGet + kSimpleGet;
    FeedResult r = p.feed(Dir::kToServer, u8(two), two.size());
    EXPECT_FALSE(r.failed);
    EXPECT_EQ(r.first_id, 1u);
    EXPECT_EQ(r.count, 2u);
    EXPECT_EQ(p.tx_at(0).id, 1u);
    // Three unsolicited responses in one call: the first two complete in this call and must
    // stay for detection, so the third does not fit.
    HttpParser q(&cfg, &ctr);
    std::string three = resp + resp + resp;
    r = q.feed(Dir::kToClient, u8(three), three.size());
    EXPECT_TRUE(r.failed);
    EXPECT_EQ(r.first_id, 0u);
    EXPECT_EQ(r.count, 2u);
    EXPECT_EQ(q.tx_count(), 2u);
}

TEST(HttpParser, Gaps) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    const std::string req = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc";
    p.feed(Dir::kToServer, u8(req), req.size());
    p.on_gap(Dir::kToServer, 4);
    p.feed(Dir::kToServer, u8("xyz"s), 3);
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    EXPECT_FALSE(p.failed());
    EXPECT_EQ(p.tx_at(0).request_body, "abcxyz");
    EXPECT_TRUE(p.tx_at(0).request_body_truncated);
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kGap));
    EXPECT_EQ(p.tx_at(1).uri, "/");
    // A gap in a head cannot be resynchronised.
    p.feed(Dir::kToServer, u8("GET /x HTTP/1.1\r\nHo"s), 19);
    p.on_gap(Dir::kToServer);
    EXPECT_TRUE(p.failed());
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kGap)].get(), 2u);
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kAbandoned)].get(), 1u);
}

TEST(HttpParser, CloseMidMessage) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    const std::string resp = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort";
    p.feed(Dir::kToClient, u8(resp), resp.size());
    p.on_close(Dir::kToClient);
    EXPECT_TRUE(p.tx_at(0).complete());
    EXPECT_TRUE(p.tx_at(0).response_body_truncated);
    EXPECT_EQ(p.tx_at(0).response_body, "short");
}

TEST(HttpParser, ByteByByteEquivalence) {
    std::string gz = compress(kText, 15 + 16);
    std::vector<std::vector<Step>> scenarios = {
        {{Dir::kToServer, kGet},
         {Dir::kToClient, "HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 5\r\n\r\nhello"}},
        {{Dir::kToServer,
          "POST /f HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\na=1&b=2GET /n HTTP/1.1\r\n"
          "Host: b\r\n\r\n"}},
        {{Dir::kToServer, kSimpleGet}, {Dir::kToClient, response_with("gzip", gz, true)}},
        {{Dir::kToServer, kSimpleGet},
         {Dir::kToClient, response_with("deflate", compress(kText, -15), true)}},
        {{Dir::kToServer, kSimpleGet},
         {Dir::kToClient, response_with("deflate", compress(kText, 15), false)}},
        {{Dir::kToServer,
          "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
          "HEAD /3 HTTP/1.1\r\nHost: a\r\n\r\n"},
         {Dir::kToClient,
          "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"
          "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ntwo\r\n0\r\n\r\n"
          "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"}},
        {{Dir::kToServer, "GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: M\r\n  (X11;\r\n\tL)\r\n\r\n"}},
        {{Dir::kToServer,
          "GET / HTTP/1.1\r\nHost: ABC.com\r\nUser-Agent: S\r\nuser-agent: G\r\n\r\n"}},
        {{Dir::kToServer, "GET / HTTP/1.0\r\n\r\n"},
         {Dir::kToClient, "HTTP/1.0 200 OK\r\n\r\nuntil close"},
         {Dir::kToClient, "", true}},
        {{Dir::kToServer, kSimpleGet},
         {Dir::kToClient, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nrest"}},
        {{Dir::kToServer, "FOO /%u0041/../%2e%2e/a\\b HTTP/1.1\nAccept: a\n\n"}},
        {{Dir::kToServer,
          std::string("GET /").append(20000, 'x').append(" HTTP/1.1\r\nHost: a\r\n\r\n")}},
        {{Dir::kToServer, "\x01\x02 garbage\r\n"s}},
    };
    HttpConfig cfg;
    for (size_t i = 0; i < scenarios.size(); ++i) {
        std::vector<std::string> whole = run(cfg, scenarios[i], 0);
        for (size_t piece : {1, 2, 3, 7, 64}) {
            EXPECT_EQ(run(cfg, scenarios[i], piece), whole)
                << "scenario " << i << " piece " << piece;
        }
    }
}

TEST(Probe, YesNoNeedMore) {
    auto pr = [](Dir d, const std::string& s) { return probe(d, u8(s), s.size()); };
    EXPECT_EQ(pr(Dir::kToServer, "GET / HTTP/1.1\r\n"), ProbeResult::kYes);
    EXPECT_EQ(pr(Dir::kToServer, "POST "), ProbeResult::kYes);
    EXPECT_EQ(pr(Dir::kToServer, "PROPFIND /"), ProbeResult::kYes);
    EXPECT_EQ(pr(Dir::kToServer, "GE"), ProbeResult::kNeedMore);
    EXPECT_EQ(pr(Dir::kToServer, "GET"), ProbeResult::kNeedMore);
    EXPECT_EQ(pr(Dir::kToServer, ""), ProbeResult::kNeedMore);
    EXPECT_EQ(pr(Dir::kToServer, "GETX /"), ProbeResult::kNo);
    EXPECT_EQ(pr(Dir::kToServer, "\x16\x03\x01"s), ProbeResult::kNo);
    EXPECT_EQ(pr(Dir::kToServer, "get / HTTP/1.1"), ProbeResult::kNo);
    EXPECT_EQ(pr(Dir::kToClient, "HTTP/1.1 200 OK"), ProbeResult::kYes);
    EXPECT_EQ(pr(Dir::kToClient, "HTT"), ProbeResult::kNeedMore);
    EXPECT_EQ(pr(Dir::kToClient, "SSH-2.0"), ProbeResult::kNo);
}

TEST(Splitter, Boundaries) {
    HttpConfig cfg;
    HttpSplitter s(cfg);
    const std::string a = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";  // 27 bytes
    const std::string b = "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel";
    std::string ab = a + b;
    // The POST head ends inside the data: flush up to it.
    EXPECT_EQ(s.scan(Dir::kToServer, u8(ab), ab.size()), ab.size() - 3);
    EXPECT_EQ(s.scan(Dir::kToServer, u8("l"s), 1), 0u);
    EXPECT_EQ(s.scan(Dir::kToServer, u8("oGET"s), 4), 1u);
    const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    EXPECT_EQ(s.scan(Dir::kToClient, u8(head), head.size()), head.size());
    EXPECT_EQ(s.scan(Dir::kToClient, u8("5\r\nhel"s), 6), 0u);
    EXPECT_EQ(s.scan(Dir::kToClient, u8("lo\r\n3\r\n"s), 7), 4u);
    EXPECT_EQ(s.scan(Dir::kToClient, u8("abc\r\n0\r\n\r\nHTTP"s), 14), 10u);
    EXPECT_EQ(s.scan(Dir::kToClient, u8("/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab"s), 36), 36u);
    EXPECT_FALSE(s.failed());
}

TEST(HttpCounters, ExportNames) {
    HttpConfig cfg;
    HttpCounters ctr;
    {
        HttpParser p(&cfg, &ctr);
        std::string req = "GET /../x HTTP/1.1\r\nHost: a\r\n\r\n";
        p.feed(Dir::kToServer, u8(req), req.size());
        StatsSnapshot s;
        ctr.export_stats(s);
        EXPECT_EQ(s.get("app_layer.http.transactions"), 1u);
        EXPECT_EQ(s.get("app_layer.http.memuse"), p.memory());
        EXPECT_EQ(s.get("app_layer.http.events.directory_traversal"), 1u);
        EXPECT_TRUE(s.has("app_layer.http.events.decompression_bomb"));
        EXPECT_TRUE(s.has("app_layer.http.events.missing_crlf"));
        EXPECT_EQ(s.values().size(), 3u + kEventCount);
    }
    EXPECT_EQ(ctr.memuse.get(), 0u);
    EXPECT_STREQ(event_name(Event::kUnmatchedResponse), "unmatched_response");
}

// ---- libhtp-compatible framing and decoding (HTTP evader cases) ----

// One GET, then `resp` to the client, then the close; returns the transaction 0 body.
std::string evader_body(const std::string& resp, HttpConfig cfg = HttpConfig()) {
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    p.feed(Dir::kToClient, u8(resp), resp.size());
    p.on_close(Dir::kToClient);
    std::string all;
    for (size_t i = 0; i < p.tx_count(); ++i) {
        all += p.tx_at(i).response_body;
    }
    return all;
}

const std::string kTeHead = "HTTP/1.1 200 ok\r\nTransfer-Encoding: chunked\r\n\r\n";

TEST(HttpEvader, ChunkSizeLinesAsLibhtpReadsThem) {
    // Junk after the hex digits is ignored (evader 009, 010).
    EXPECT_EQ(evader_body(kTeHead + "3x\r\nabc\r\n2,\r\nde\r\n0\r\n\r\n"), "abcde");
    // Leading CR / LF / FF before the size, and empty lines, are skipped (017-022, 101, 103).
    EXPECT_EQ(evader_body(kTeHead + "\n3\r\nabc\r\n\rf\r\n0123456789abcde\r\n\r\n\x0c"
                                    "2\r\nfg\r\n0\r\n\r\n"),
              "abc0123456789abcdefg");
    // Data past the announced size is skipped up to the LF.
    EXPECT_EQ(evader_body(kTeHead + "3\r\nabcXYZ\r\n2\r\nde\r\n0\r\n\r\n"), "abcde");
}

TEST(HttpEvader, ChunkedThatIsNotChunkedIsTheBody) {
    // HTTP/1.0 + chunked with a plain body and no LF (044): taken as sent, line included.
    EXPECT_EQ(evader_body("HTTP/1.0 200 ok\r\nTransfer-Encoding: chunked\r\n\r\nX5O!P%@AP"),
              "X5O!P%@AP");
    // A complete bad size line is body too, terminator included.
    EXPECT_EQ(evader_body(kTeHead + "zz\r\nrest"), "zz\r\nrest");
    // Over INT32_MAX.
    EXPECT_EQ(evader_body(kTeHead + "80000000\r\nab"), "80000000\r\nab");
}

TEST(HttpEvader, TransferEncodingContainingChunked) {
    // 065, 066, 080: any value containing "chunked", or two fields joined.
    EXPECT_EQ(
        evader_body("HTTP/1.1 200 ok\r\nTransfer-Encoding: x chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"),
        "ab");
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
                          "lalala\r\n\r\n2\r\nab\r\n0\r\n\r\n"),
              "ab");
    // NUL and whitespace in the name (291, 293, 089).
    EXPECT_EQ(evader_body(std::string("HTTP/1.1 200 ok\r\nTransfer\0-Encoding:chunked\r\n\r\n"
                                      "2\r\nab\r\n0\r\n\r\n",
                                      59)),
              "ab");
}

TEST(HttpEvader, LoneCrAndOddHeadEnds) {
    // A lone CR ends a line (385, 075, 189): status line then a field; a field then a fold.
    EXPECT_EQ(evader_body("HTTP/1.1 200 \rTransfer-Encoding:chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"),
              "ab");
    EXPECT_EQ(
        evader_body("HTTP/1.1 200 ok\r\nTransfer-Encoding: \r chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"),
        "ab");
    // "\n \n" and "\n\t\n" end the head (416, 425) ...
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nContent-length: 4\n \nbody"), "body");
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nContent-length: 4\n\t\nbody"), "body");
    // ... " \r\n" and "\r\r\n" do not (424, 284), "\n\r" is one line end (405, 411).
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nContent-length: 4\r\n \r\n\r\nbody"), "body");
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nA: b\r\n\r\r\nContent-length: 4\r\n\r\nbody"),
              "body");
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\n\rContent-length: 4\n\r\r\nbody"), "body");
    // Junk before the status line (390, 482, 490, 495).
    EXPECT_EQ(evader_body(std::string("\0HTTP/1.1 200 ok\r\nContent-length: 2\r\n\r\nab", 41)),
              "ab");
    EXPECT_EQ(evader_body(" \t\r\n\r\rHTTP/1.1 200 ok\r\nContent-length: 2\r\n\r\nab"), "ab");
}

TEST(HttpEvader, FoldedFieldNames) {
    // A folded "Name: value" line is a field (268, 274); a name whose colon comes on the
    // folded line is completed by it (296, 300, 318).
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nConnection: close\r\n Transfer-Encoding: chunked\r\n"
                          "\r\n2\r\nab\r\n0\r\n\r\n"),
              "ab");
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nTransfer-Encoding\r\n \r\n :\r\n chunked\r\n\r\n"
                          "2\r\nab\r\n0\r\n\r\n"),
              "ab");
}

TEST(HttpEvader, ResponsesWithoutHead) {
    // HTTP/0.9 style answer (266): the body until the close.
    EXPECT_EQ(evader_body("X5O!P%@AP[4"), "X5O!P%@AP[4");
    // A body after a 304 (453) lands in a transaction of its own.
    EXPECT_EQ(evader_body("HTTP/1.1 304 ok\r\nContent-length: 4\r\n\r\nbody"), "body");
}

std::string gz_head_patch(std::string gz, uint8_t flags, const std::string& insert) {
    gz[3] = static_cast<char>(flags);
    return gz.substr(0, 10) + insert + gz.substr(10);
}

TEST(HttpEvader, ContentEncodingLayers) {
    auto resp = [](const std::string& ce_fields, const std::string& body) {
        return "HTTP/1.1 200 ok\r\n" + ce_fields +
               "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    };
    HttpConfig three;
    three.decompress_layer_limit = 3;
    std::string gz = compress(kText, 15 + 16);
    std::string raw = compress(kText, -15);
    // Two layers in one or two fields (125, 126), either order of formats (131, 132).
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip, gzip\r\n", compress(gz, 15 + 16))), kText);
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip\r\nContent-Encoding: deflate\r\n",
                               compress(gz, -15))),
              kText);
    // More layers announced than applied: the extra one passes data through (152, 156).
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip\r\nContent-Encoding: gzip\r\n", gz)), kText);
    // Tokens: identity skipped, x-deflate / "x gzip" / "deflate," (139, 164, 167, 122).
    EXPECT_EQ(evader_body(resp("Content-Encoding: identity,gzip\r\n", gz)), kText);
    EXPECT_EQ(evader_body(resp("Content-Encoding: x-deflate\r\n", raw)), kText);
    EXPECT_EQ(evader_body(resp("Content-Encoding: x gzip\r\n", gz)), kText);
    EXPECT_EQ(evader_body(resp("Content-Encoding: deflate,\r\n", raw)), kText);
    // Three layers need the limit raised (151).
    std::string three_layers = compress(compress(raw, 15 + 16), -15);
    EXPECT_EQ(evader_body(resp("Content-Encoding: deflate,gzip\r\nContent-Encoding: deflate\r\n",
                               three_layers),
                          three),
              kText);
    // gzip header flags: reserved bits ignored, FNAME and FHCRC skipped (202, 213, 225).
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip\r\n", gz_head_patch(gz, 0x80, ""))), kText);
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip\r\n",
                               gz_head_patch(gz, 0x08, std::string(" \0", 2)))),
              kText);
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip\r\n",
                               gz_head_patch(gz, 0x02, std::string("\0\0", 2)))),
              kText);
    // Bad CRC or no trailer at all (203, 223): the decoded data is kept.
    std::string bad_crc = gz;
    bad_crc[bad_crc.size() - 8] ^= 0x5a;
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip\r\n", bad_crc)), kText);
    EXPECT_EQ(evader_body(resp("Content-Encoding: gzip\r\n", gz.substr(0, gz.size() - 8))), kText);
}

TEST(HttpEvader, NulStartsAFoldedLine) {
    // 327, 347: "Content-Encoding:\n\0gzip" is a fold (libhtp's htp_is_folding_char), so the
    // body is decoded.
    auto resp = [](const std::string& coding, const std::string& body) {
        return std::string("HTTP/1.1 200 ok\r\nContent-Encoding:\n\0", 36) + coding +
               "\r\nYet-another-header: foo\r\nContent-length: " + std::to_string(body.size()) +
               "\r\n\r\n" + body;
    };
    EXPECT_EQ(evader_body(resp("gzip", compress(kText, 15 + 16))), kText);
    EXPECT_EQ(evader_body(resp("deflate", compress(kText, -15))), kText);
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string r = resp("gzip", "");
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    p.feed(Dir::kToClient, u8(r), r.size());
    ASSERT_EQ(p.tx_count(), 1u);
    EXPECT_EQ(p.tx_at(0).response_headers,
              std::string("Content-Encoding: \0gzip\r\nYet-another-header: foo\r\n"
                          "Content-length: 0\r\n",
                          69));
    // Requests keep RFC folding: a NUL there starts no fold.
    HttpParser q(&cfg, &ctr);
    std::string req("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\0c\r\n\r\n", 39);
    q.feed(Dir::kToServer, u8(req), req.size());
    ASSERT_EQ(q.tx_count(), 1u);
    EXPECT_EQ(q.tx_at(0).request_headers, "Host: a\r\nX-A: b\r\n");
}

TEST(HttpEvader, BodyOf204Or304WhenTheHeadFramesOne) {
    // 476: a 204 with Transfer-Encoding: chunked has its chunked body (libhtp: "Unexpected
    // Response body"), as does a 304 with Transfer-Encoding; without framing fields a 204
    // has none.
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string r =
        "HTTP/1.1 204 ok\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nX5O!\r\n4\r\nP%@A\r\n0\r\n\r\n";
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    p.feed(Dir::kToClient, u8(r), r.size());
    ASSERT_EQ(p.tx_count(), 1u);
    EXPECT_EQ(p.tx_at(0).response_body, "X5O!P%@A");
    EXPECT_EQ(p.tx_at(0).response_progress, HttpTx::kResponseComplete);
    EXPECT_TRUE(p.tx_at(0).response_chunked);
    EXPECT_EQ(
        evader_body("HTTP/1.1 304 ok\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"),
        "ab");
    // A 304 may carry the Content-Length of the representation (RFC 9110 8.6): still no body.
    HttpParser n(&cfg, &ctr);
    std::string r304 = "HTTP/1.1 304 ok\r\nContent-Length: 3\r\n\r\n";
    n.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    n.feed(Dir::kToClient, u8(r304), r304.size());
    ASSERT_EQ(n.tx_count(), 1u);
    EXPECT_EQ(n.tx_at(0).response_progress, HttpTx::kResponseComplete);
    HttpParser q(&cfg, &ctr);
    std::string r2 = "HTTP/1.1 204 ok\r\nServer: x\r\n\r\n";
    q.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    q.feed(Dir::kToClient, u8(r2), r2.size());
    ASSERT_EQ(q.tx_count(), 1u);
    EXPECT_EQ(q.tx_at(0).response_progress, HttpTx::kResponseComplete);
    EXPECT_EQ(q.tx_at(0).response_body, "");
}

TEST(HttpEvader, JunkLineThenResponse) {
    // 487: " foobar\r\n" where the status line is due. libhtp's RES_LINE drops such a line
    // when the data at hand goes on with 'H' (or the line is at most 2 bytes), so in one
    // segment the response keeps its head and the body is the file alone.
    const std::string resp =
        " foobar\r\nHTTP/1.1 200 ok\r\nTransfer-Encoding: chunked\r\n\r\n"
        "4\r\nX5O!\r\n4\r\nP%@A\r\n0\r\n\r\n";
    HttpConfig cfg;
    std::vector<Step> steps = {{Dir::kToServer, kSimpleGet}, {Dir::kToClient, resp}};
    std::vector<std::string> whole = run(cfg, steps, 0);
    ASSERT_EQ(whole.size(), 2u);
    EXPECT_NE(whole[0].find("|method=GET|"), std::string::npos) << whole[0];
    EXPECT_NE(whole[0].find("|response_line=HTTP/1.1 200 ok|"), std::string::npos) << whole[0];
    EXPECT_NE(whole[0].find("|response_body=X5O!P%@A|"), std::string::npos) << whole[0];
    EXPECT_NE(whole[0].find("|status=200|rp=4|sp=4|"), std::string::npos) << whole[0];
    // Pieces of 7 end inside the junk line: it ends in the next piece, which goes on with
    // "HTTP": dropped too. Pieces of 1, 2 or 3 bytes end the data right after the line (or
    // one byte after it): then it is the body of a response without head, and the next line
    // that starts with "HTTP" is the status line of the same response (Picket's choice where
    // libhtp would end the transaction).
    EXPECT_EQ(run(cfg, steps, 7), whole);
    EXPECT_EQ(run(cfg, steps, 64), whole);
    for (size_t piece : {1u, 2u, 3u}) {
        std::vector<std::string> got = run(cfg, steps, piece);
        ASSERT_EQ(got.size(), 2u);
        EXPECT_NE(got[0].find("|response_line=HTTP/1.1 200 ok|"), std::string::npos) << piece;
        EXPECT_NE(got[0].find("|response_body= foobar\r\nX5O!P%@A|"), std::string::npos)
            << piece << got[0];
    }
    // The rule exactly: two more bytes, the next one 'H' (not 'h', no whitespace first), or
    // a line of at most 2 bytes. Otherwise the line is body, and lines that do not start with
    // "HTTP" stay body, however many; "  http" (any case, after whitespace) starts a response;
    // a long line streams through.
    EXPECT_EQ(evader_body("junk\r\nHTTP/1.1 200 ok\r\nContent-Length: 2\r\n\r\nok"), "ok");
    EXPECT_EQ(evader_body("ab\r\nxHTTP/1.1 200 ok\r\n"), "xHTTP/1.1 200 ok\r\n");
    EXPECT_EQ(evader_body("abc\r\nxHTTP/1.1 200 ok\r\n"), "abc\r\nxHTTP/1.1 200 ok\r\n");
    EXPECT_EQ(evader_body("junk\r\nH"), "junk\r\nH");
    EXPECT_EQ(evader_body("junk\r\nhttp/1.1 200 ok\r\nContent-Length: 2\r\n\r\nok"), "junk\r\nok");
    EXPECT_EQ(evader_body("aaa\r\nbbb\nHTTPX\r\n"), "aaa\r\nbbb\n");
    EXPECT_EQ(evader_body("a\r\nb\nHTTPX\r\n"), "");  // both short lines dropped
    EXPECT_EQ(evader_body("junk\n  http/1.0 200 ok\r\nContent-Length: 2\r\n\r\nok"), "junk\nok");
    std::string long_line(2000, 'x');
    EXPECT_EQ(evader_body("junk\n" + long_line + "\nmore"), "junk\n" + long_line + "\nmore");
    // A short junk start cut by the close is body.
    EXPECT_EQ(evader_body(" foob"), " foob");
}

// The body of http-evader 116: "Content-Encoding: lzma", LZMA "alone" format with an 8 MiB
// dictionary and no size (end marker), holding the EICAR test string.
const std::string kLzmaEicar(
    "\x5d\x00\x00\x80\x00\xff\xff\xff\xff\xff\xff\xff\xff\x00\x2c\x0d\x45\xe2\x23\x4b"
    "\x38\x09\xfe\x24\x2c\x5b\x4b\x36\x90\x31\xdc\x4b\x24\x35\xb6\x32\xdf\xaf\x31\x4c"
    "\x3c\xdf\xcf\x3a\x4b\x75\x73\xe5\x8b\xc8\x7e\x89\xb3\x80\x5e\xf7\x94\x1f\x8d\xa9"
    "\xc3\x1e\xfa\x49\x6c\x05\xfc\x84\x05\x5a\x71\xfc\x39\xba\x92\x65\x8b\x97\x43\xa7"
    "\xdd\x78\x50\x97\xbf\xff\xc4\x18\xa0\x00",
    90);
const std::string kEicar = "X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*";

TEST(HttpEvader, LzmaContentEncoding) {
    auto resp = [](const std::string& body) {
        return "HTTP/1.1 200 ok\r\nContent-length: " + std::to_string(body.size()) +
               "\r\nContent-Encoding:lzma\r\n\r\n" + body;
    };
    HttpConfig on;
    on.lzma_enabled = true;
    // 116: decoded although the stream asks for 8 MiB (the dictionary is capped below the
    // 1 MiB memlimit), in any segmentation.
    EXPECT_EQ(evader_body(resp(kLzmaEicar), on), kEicar);
    std::vector<Step> steps = {{Dir::kToServer, kSimpleGet}, {Dir::kToClient, resp(kLzmaEicar)}};
    std::vector<std::string> whole = run(on, steps, 0);
    EXPECT_NE(whole[0].find("|response_body=" + kEicar + "|"), std::string::npos) << whole[0];
    for (size_t piece : {1u, 2u, 3u, 7u, 64u}) {
        EXPECT_EQ(run(on, steps, piece), whole) << piece;
    }
    // Off by default (Suricata's lzma-enabled): the body as sent.
    EXPECT_EQ(evader_body(resp(kLzmaEicar)), kLzmaEicar);
    // A memlimit the decoder cannot work in, or data that is not lzma: kept as sent, with
    // decompression_error.
    HttpConfig tiny = on;
    tiny.lzma_memlimit = 1024;
    EXPECT_EQ(evader_body(resp(kLzmaEicar), tiny), kLzmaEicar);
    HttpCounters ctr;
    HttpParser p(&on, &ctr);
    std::string plain = resp("hello, not lzma at all");
    p.feed(Dir::kToServer, u8(kSimpleGet), kSimpleGet.size());
    p.feed(Dir::kToClient, u8(plain), plain.size());
    ASSERT_EQ(p.tx_count(), 1u);
    EXPECT_EQ(p.tx_at(0).response_body, "hello, not lzma at all");
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kDecompressionError));
    EXPECT_LE(p.memory(), HttpParser::memory_bound(on));
    // "lzma" must be the whole token (NULs ignored).
    EXPECT_EQ(evader_body("HTTP/1.1 200 ok\r\nContent-Encoding: x-lzma\r\n\r\n" + kLzmaEicar, on),
              kLzmaEicar);
    EXPECT_EQ(evader_body(std::string("HTTP/1.1 200 ok\r\nContent-Encoding: lz\0ma\r\n\r\n", 44) +
                              kLzmaEicar,
                          on),
              kEicar);
}

TEST(HttpEvader, RequestBodyDecompressedByDefault) {
    // Suricata 7.0.16+ decodes gzip request bodies (http-post-data-decompression).
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string body = compress("name=john", 15 + 16);
    std::string req =
        "POST /hi.php HTTP/1.1\r\nHost: a\r\nContent-Encoding: gzip\r\nContent-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    p.feed(Dir::kToServer, u8(req), req.size());
    ASSERT_EQ(p.tx_count(), 1u);
    EXPECT_EQ(p.tx_at(0).request_body, "name=john");
    EXPECT_EQ(p.tx_at(0).request_progress, HttpTx::kRequestComplete);
}

// http-mix.pcap, 128.2.6.136:46568 -> 173.194.75.103:80: no space before the version, so the
// request line is an HTTP/0.9 one (uri "/HTTP/1.1") and "Host: ..." follows it. The answer
// starts with "HTTP/": it is read as a status line (Snort 3's http_inspect does; libhtp too),
// so http.stat_code is "403" (Snort 3 community rule 1:1201).
TEST(HttpParser, StatusLineAfterHttp09LookingRequest) {
    HttpConfig cfg;
    const std::string req = "GET /HTTP/1.1\r\nHost: www.google.com\r\n\r\n";
    const std::string resp =
        "HTTP/1.0 403 Forbidden\r\nContent-Length: 5\r\nServer: GFE/2.0\r\n\r\nSorry";
    for (size_t piece : {0, 1, 7}) {
        HttpCounters ctr;
        HttpParser p(&cfg, &ctr);
        for (size_t i = 0; i < req.size(); i += piece == 0 ? req.size() : piece) {
            p.feed(Dir::kToServer, u8(req) + i,
                   std::min(piece == 0 ? req.size() : piece, req.size() - i));
        }
        for (size_t i = 0; i < resp.size(); i += piece == 0 ? resp.size() : piece) {
            p.feed(Dir::kToClient, u8(resp) + i,
                   std::min(piece == 0 ? resp.size() : piece, resp.size() - i));
        }
        EXPECT_FALSE(p.failed()) << piece;
        ASSERT_EQ(p.tx_count(), 1u) << piece;  // "Host: ..." is no second request
        const HttpTx& t = p.tx_at(0);
        EXPECT_EQ(t.method, "GET");
        EXPECT_EQ(t.uri, "/HTTP/1.1");
        EXPECT_EQ(t.protocol, "");
        EXPECT_EQ(t.request_headers, "");
        EXPECT_EQ(t.request_progress, HttpTx::kRequestComplete);
        EXPECT_EQ(t.response_line, "HTTP/1.0 403 Forbidden");
        EXPECT_EQ(t.response_protocol, "HTTP/1.0");
        EXPECT_EQ(t.stat_code, "403");
        EXPECT_EQ(t.stat_msg, "Forbidden");
        EXPECT_EQ(t.status, 403);
        EXPECT_EQ(t.server, "GFE/2.0");
        EXPECT_EQ(t.response_body, "Sorry");
        EXPECT_EQ(t.response_progress, HttpTx::kResponseComplete);
        EXPECT_TRUE(t.events.empty()) << piece;
        EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kInvalidRequestLine)].get(), 0u);
        EXPECT_EQ(ctr.flows_abandoned.get(), 0u);
    }
}

}  // namespace
}  // namespace picket::sensor::applayer::http
