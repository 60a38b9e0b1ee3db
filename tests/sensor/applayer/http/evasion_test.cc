// libhtp's reading of odd responses, as the HTTP evader families exercise it (issue #22): what
// follows a complete response, heads cut by the close, odd head ends, Content-Encoding names
// with NULs. The e2e side is tests/e2e/http_evasions_test.py.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "sensor/applayer/http/http.h"

namespace picket::sensor::applayer::http {
namespace {

using namespace std::string_literals;

const std::string kGet = "GET /f HTTP/1.1\r\nHost: a\r\n\r\n";

const uint8_t* u8(const std::string& s) {
    return reinterpret_cast<const uint8_t*>(s.data());
}

std::string gzip(const std::string& in) {
    z_stream zs{};
    EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY), Z_OK);
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

struct Result {
    std::vector<std::string> bodies;  // response body of each transaction, oldest first
    std::vector<uint16_t> status;
    std::vector<bool> complete;
};

// One GET, then the answer in the given pieces (one feed() each), then the close.
Result answer(const std::vector<std::string>& pieces, bool close = true) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    p.feed(Dir::kToServer, u8(kGet), kGet.size());
    for (const std::string& s : pieces) {
        p.feed(Dir::kToClient, u8(s), s.size());
    }
    if (close) {
        p.on_close(Dir::kToClient);
    }
    Result r;
    for (size_t i = 0; i < p.tx_count(); ++i) {
        r.bodies.push_back(p.tx_at(i).response_body);
        r.status.push_back(p.tx_at(i).status);
        r.complete.push_back(p.tx_at(i).response_progress == HttpTx::kResponseComplete);
    }
    return r;
}

// The same answer fed whole and one byte per feed(): each gives `bodies`.
void expect_bodies(const std::string& resp, const std::vector<std::string>& bodies) {
    EXPECT_EQ(answer({resp}).bodies, bodies) << "whole";
    std::vector<std::string> bytes;
    for (char c : resp) {
        bytes.emplace_back(1, c);
    }
    EXPECT_EQ(answer(bytes).bodies, bodies) << "byte by byte";
}

TEST(HttpEvasion, DataAfterAShortContentLengthBodyIsMoreOfIt) {
    // libhtp's RES_FINALIZE: lines that follow a complete response in the same data and do
    // not start with "HTTP" are more body of that response (clen: Content-Length half the
    // file, the rest before the close).
    Result r = answer({"HTTP/1.1 200 ok\r\nContent-length: 3\r\n\r\nabcdef\r\nghi"});
    EXPECT_EQ(r.bodies, std::vector<std::string>{"abcdef\r\nghi"});
    EXPECT_EQ(r.complete, std::vector<bool>{true});
    // Without the close the response waits for the rest of its line.
    Result open = answer({"HTTP/1.1 200 ok\r\nContent-length: 3\r\n\r\nabcdef"}, false);
    EXPECT_EQ(open.bodies, std::vector<std::string>{"abcdef"});
    EXPECT_EQ(open.complete, std::vector<bool>{false});
    // A line starting with "HTTP" (after whitespace) is the next response.
    Result two =
        answer({"HTTP/1.1 200 ok\r\nContent-length: 3\r\n\r\nabc\r\n"
                "HTTP/1.1 404 no\r\nContent-length: 2\r\n\r\nxy"});
    EXPECT_EQ(two.bodies, (std::vector<std::string>{"abc\r\n", "xy"}));
    EXPECT_EQ(two.status, (std::vector<uint16_t>{200, 404}));
    // A response that ends with its data completes at once; what comes in a later feed is a
    // response without head of its own (a transaction of its own), as in libhtp.
    Result later = answer({"HTTP/1.1 200 ok\r\nContent-length: 3\r\n\r\nabc", "def"});
    EXPECT_EQ(later.bodies, (std::vector<std::string>{"abc", "def"}));
    // Bytes after a 204 in the same data are the 204's body ("Unexpected response body").
    Result nb = answer({"HTTP/1.1 204 ok\r\n\r\nX5O!P%@AP"});
    EXPECT_EQ(nb.bodies, std::vector<std::string>{"X5O!P%@AP"});
    EXPECT_EQ(nb.status, std::vector<uint16_t>{204});
    // And after a chunked body's trailer.
    Result ch =
        answer({"HTTP/1.1 200 ok\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n"
                "\r\ncd"});
    EXPECT_EQ(ch.bodies, std::vector<std::string>{"abcd"});
}

TEST(HttpEvasion, UnterminatedHeadLineAtTheCloseIsBody) {
    // "HTTP\n" then the file and the close: the file is the last (unterminated) head line,
    // which libhtp passes to the body at the close.
    expect_bodies("HTTP\nX5O!P%@AP[4", {"X5O!P%@AP[4"});
    // A head whose lines end with lone CRs only (no LF at all): parsed at the close, the part
    // after the last CR is the body.
    expect_bodies("HTTP/1.1 200 ok\rContent-type: a/b\rContent-length: 4\r\rbody", {"body"});
    // A head that a VT line or a " ." fold does not end: the rest is body at the close.
    expect_bodies("HTTP/1.1 200 ok\r\nContent-length: 4\n\x0b\nbody", {"body"});
    expect_bodies("HTTP/1.1 200 ok\r\nContent-length: 4\n .\nbody", {"body"});
    // A NUL line folds: "\r\n\0\r\n" is no empty line either.
    expect_bodies("HTTP/1.1 200 ok\r\nContent-length: 4\r\n\0\r\nbody"s, {"body"});
    // A tail starting with "HTTP" is no body.
    expect_bodies("HTTP/1.1 200 ok\r\nA: b\r\nHTTP/1.1 200", {""});
    // A complete head line is a header line, not body.
    Result r = answer({"HTTP\nX5O!P%@AP[4\n"});
    EXPECT_EQ(r.bodies, std::vector<std::string>{""});
}

TEST(HttpEvasion, LfCrThenEmptyLineTakesTheNextCrLf) {
    // libhtp reads "\n\r\r\n\r\n" as two line ends: a gzip body after it is intact.
    const std::string gz = gzip("X5O!P%@AP[4");
    const std::string head =
        "HTTP/1.1 200 ok\r\nContent-Encoding: gzip\r\nContent-length: " + std::to_string(gz.size());
    expect_bodies(head + "\n\r\r\n\r\n" + gz, {"X5O!P%@AP[4"});
    // "\n\r\r\n" alone ends the head too, the body follows at once.
    expect_bodies(head + "\n\r\r\n" + gz, {"X5O!P%@AP[4"});
    // Only one CR LF is taken: a second one is body.
    expect_bodies("HTTP/1.1 200 ok\r\nA: b\n\r\r\n\r\n\r\nab", {"\r\nab"});
}

TEST(HttpEvasion, SpaceLineEndsTheHeadOnlyBeforeData) {
    // " \n" ends the head only when the byte after it is there and is no LF (libhtp's
    // next_no_lf): in "\n \n\n" the last LF ends it, and the body has no stray LF.
    const std::string gz = gzip("X5O!P%@AP[4");
    const std::string cl = "Content-length: " + std::to_string(gz.size());
    EXPECT_EQ(
        answer({"HTTP/1.1 200 ok\r\nContent-Encoding: gzip\r\n" + cl + "\n \n\n" + gz}).bodies,
        std::vector<std::string>{"X5O!P%@AP[4"});
    EXPECT_EQ(
        answer({"HTTP/1.1 200 ok\r\nContent-Encoding: gzip\r\n" + cl + "\n\t\n\n" + gz}).bodies,
        std::vector<std::string>{"X5O!P%@AP[4"});
    // Followed by data, " \n" ends the head.
    EXPECT_EQ(answer({"HTTP/1.1 200 ok\r\nContent-length: 2\n \nab"}).bodies,
              std::vector<std::string>{"ab"});
}

TEST(HttpEvasion, ContentEncodingNameWithNulIsTheCoding) {
    // libhtp compares the whole value without case and NUL bytes first: "gz\0ip" is gzip,
    // "def\0late" deflate.
    const std::string gz = gzip("X5O!P%@AP[4");
    auto with = [&](const std::string& ce, const std::string& body) {
        return answer({"HTTP/1.1 200 ok\r\nContent-Encoding:" + ce +
                       "\r\nContent-length: " + std::to_string(body.size()) + "\r\n\r\n" + body})
            .bodies;
    };
    EXPECT_EQ(with("gz\0ip"s, gz), std::vector<std::string>{"X5O!P%@AP[4"});
    EXPECT_EQ(with("X-GZ\0IP"s, gz), std::vector<std::string>{"X5O!P%@AP[4"});
    // In a list the tokens are matched as they are: "x gz\0ip" names no coding.
    EXPECT_EQ(with("x gz\0ip"s, gz), std::vector<std::string>{gz});
}

}  // namespace
}  // namespace picket::sensor::applayer::http
