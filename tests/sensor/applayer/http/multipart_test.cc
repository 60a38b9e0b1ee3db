// multipart/form-data uploads (HttpTx::request_files), request bodies of other methods, and
// request bodies labelled gzip that are not compressed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sensor/applayer/http/http.h"

namespace picket::sensor::applayer::http {
namespace {

using namespace std::string_literals;

const uint8_t* u8(const std::string& s) {
    return reinterpret_cast<const uint8_t*>(s.data());
}

std::string post(const std::string& content_type, const std::string& body,
                 const std::string& method = "POST") {
    return method + " /upload.php?x=1 HTTP/1.1\r\nHost: h\r\nContent-Type: " + content_type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Two files and a form field; the first file's content holds a CRLF and a near-delimiter.
const std::string kTwoFilesBody =
    "preamble ignored\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"comment\"\r\n"
    "\r\n"
    "hello field\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"f1\"; filename=\"a.txt\"\r\n"
    "Content-Type: text/plain\r\n"
    "\r\n"
    "first\r\n--XyX file\r\n-\r\n--X\r\n"
    "--XyZ  \r\n"
    "content-disposition: form-data; name=\"f2\"; filename=\"evil.exe\"\r\n"
    "Content-Type: application/octet-stream\r\n"
    "\r\n"
    "MZ\x90\x00second"s
    "\r\n--XyZ--\r\n"
    "epilogue\r\n";

std::string files_dump(const HttpTx& t) {
    std::string s;
    for (const HttpFile& f : t.request_files) {
        s += "[" + f.name + "|" + f.content_type + "|" + f.data + "|" + std::to_string(f.size) +
             (f.complete ? "|complete" : "|cut") + (f.truncated ? "|trunc" : "") + "]";
    }
    return s;
}

const std::string kTwoFilesExpected =
    "[a.txt|text/plain|first\r\n--XyX file\r\n-\r\n--X|25|complete]"
    "[evil.exe|application/octet-stream|MZ\x90\x00second|10|complete]"s;

TEST(HttpMultipart, TwoFilesExactContent) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string req = post("multipart/form-data; boundary=XyZ", kTwoFilesBody);
    p.feed(Dir::kToServer, u8(req), req.size());
    ASSERT_EQ(p.tx_count(), 1u);
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(t.request_progress, HttpTx::kRequestComplete);
    EXPECT_TRUE(t.request_multipart);
    EXPECT_EQ(files_dump(t), kTwoFilesExpected);
    // http.request_body keeps the raw multipart body.
    EXPECT_EQ(t.request_body, kTwoFilesBody.substr(0, cfg.request_body_limit));
    EXPECT_TRUE(t.events.empty());
}

// Every split of the body into two feed() calls, and byte by byte: the same files.
TEST(HttpMultipart, TwoFilesEverySplit) {
    HttpConfig cfg;
    std::string req = post("multipart/form-data; boundary=XyZ", kTwoFilesBody);
    for (size_t cut = 0; cut <= req.size(); ++cut) {
        HttpCounters ctr;
        HttpParser p(&cfg, &ctr);
        p.feed(Dir::kToServer, u8(req), cut);
        p.feed(Dir::kToServer, u8(req) + cut, req.size() - cut);
        ASSERT_EQ(p.tx_count(), 1u) << cut;
        EXPECT_EQ(files_dump(p.tx_at(0)), kTwoFilesExpected) << cut;
        EXPECT_TRUE(p.tx_at(0).events.empty()) << cut;
    }
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    for (size_t i = 0; i < req.size(); ++i) {
        p.feed(Dir::kToServer, u8(req) + i, 1);
    }
    EXPECT_EQ(files_dump(p.tx_at(0)), kTwoFilesExpected);
}

// Chunked transfer: the parts are split out of the dechunked body.
TEST(HttpMultipart, ChunkedBody) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string req =
        "POST /u HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=XyZ\r\n"
        "Transfer-Encoding: chunked\r\n\r\n";
    for (size_t i = 0; i < kTwoFilesBody.size(); i += 7) {
        std::string piece = kTwoFilesBody.substr(i, 7);
        char hex[16];
        snprintf(hex, sizeof(hex), "%zx\r\n", piece.size());
        req += hex + piece + "\r\n";
    }
    req += "0\r\n\r\n";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(files_dump(p.tx_at(0)), kTwoFilesExpected);
}

TEST(HttpMultipart, QuotedBoundaryAndPathFilename) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string body =
        "--a;b c\r\n"
        "Content-Disposition: form-data; name=\"up\"; filename=\"C:\\\\Users\\\\x\\\\evil.exe\"\r\n"
        "\r\n"
        "payload\r\n"
        "--a;b c--";
    std::string req = post("Multipart/Form-Data; charset=utf-8; boundary=\"a;b c\"", body);
    p.feed(Dir::kToServer, u8(req), req.size());
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(files_dump(t), "[C:\\Users\\x\\evil.exe||payload|7|complete]");
    EXPECT_TRUE(t.events.empty());
}

TEST(HttpMultipart, Rfc5987FilenameWins) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string body =
        "--b\r\n"
        "Content-Disposition: form-data; name=n; filename=plain.txt; "
        "filename*=UTF-8''na%C3%AFve%20x.txt\r\n"
        "\r\n"
        "x\r\n"
        "--b--\r\n";
    std::string req = post("multipart/form-data; boundary=b", body);
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(files_dump(p.tx_at(0)), "[na\xc3\xafve x.txt||x|1|complete]");
}

TEST(HttpMultipart, MissingClosingBoundary) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string body =
        "--b\r\n"
        "Content-Disposition: form-data; name=f; filename=\"a.bin\"\r\n"
        "\r\n"
        "data tail\r\n--";
    std::string req = post("multipart/form-data; boundary=b", body);
    p.feed(Dir::kToServer, u8(req), req.size());
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(t.request_progress, HttpTx::kRequestComplete);
    // The held "\r\n--" was content after all.
    EXPECT_EQ(files_dump(t), "[a.bin||data tail\r\n--|13|cut]");
    EXPECT_TRUE(t.events.has(Event::kMultipartGenericError));
    EXPECT_FALSE(t.events.has(Event::kMultipartNoFiledata));
    EXPECT_EQ(ctr.events[static_cast<size_t>(Event::kMultipartGenericError)].get(), 1u);
}

TEST(HttpMultipart, NoBoundaryIsAPlainBody) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string req = post("multipart/form-data", "--b\r\n\r\nx\r\n--b--");
    p.feed(Dir::kToServer, u8(req), req.size());
    const HttpTx& t = p.tx_at(0);
    EXPECT_FALSE(t.request_multipart);
    EXPECT_TRUE(t.request_files.empty());
    EXPECT_EQ(t.request_body, "--b\r\n\r\nx\r\n--b--");
    EXPECT_TRUE(t.events.has(Event::kMultipartGenericError));
    EXPECT_STREQ(event_name(Event::kMultipartGenericError), "multipart_generic_error");
}

TEST(HttpMultipart, InvalidAndOversizedPartHeads) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string body =
        "--b\r\n"
        "no colon here\r\n"
        "Content-Disposition: form-data; filename=\"ok.txt\"\r\n"
        "\r\n"
        "one\r\n"
        "--b\r\n"
        "X-Long: " +
        std::string(9000, 'a') +
        "\r\n\r\n"
        "skipped\r\n"
        "--b\r\n"
        "Content-Disposition: form-data; filename=\"two.txt\"\r\n"
        "\r\n"
        "two\r\n"
        "--b\r\n"
        "Content-Disposition: form-data; filename=\"three.txt\"\r\n";
    std::string req = post("multipart/form-data; boundary=b", body);
    p.feed(Dir::kToServer, u8(req), req.size());
    const HttpTx& t = p.tx_at(0);
    EXPECT_EQ(files_dump(t), "[ok.txt||one|3|complete][two.txt||two|3|complete]");
    EXPECT_TRUE(t.events.has(Event::kMultipartInvalidHeader));
    EXPECT_TRUE(t.events.has(Event::kMultipartGenericError));
    EXPECT_TRUE(t.events.has(Event::kMultipartNoFiledata));
    EXPECT_LE(p.memory(), HttpParser::memory_bound(cfg));
}

TEST(HttpMultipart, FileDataLimitedAndFilesBounded) {
    HttpConfig cfg;
    cfg.request_body_limit = 8;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string body;
    for (int i = 0; i < 12; ++i) {
        body += "--b\r\nContent-Disposition: form-data; filename=\"f";
        body += std::to_string(i);
        body += "\"\r\n\r\n0123456789abcdef\r\n";
    }
    body += "--b--\r\n";
    std::string req = post("multipart/form-data; boundary=b", body);
    p.feed(Dir::kToServer, u8(req), req.size());
    const HttpTx& t = p.tx_at(0);
    ASSERT_EQ(t.request_files.size(), kMaxFilesPerTx);
    for (size_t i = 0; i < kMaxFilesPerTx; ++i) {
        EXPECT_EQ(t.request_files[i].name, std::string(1, 'f').append(std::to_string(i)));
        EXPECT_EQ(t.request_files[i].data, "01234567");
        EXPECT_EQ(t.request_files[i].size, 16u);
        EXPECT_TRUE(t.request_files[i].truncated);
    }
    EXPECT_EQ(t.request_body, body.substr(0, 8));
}

// Suricata splits POST bodies only: a multipart PUT is a plain body.
TEST(HttpMultipart, PutIsNotSplit) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string req = post("multipart/form-data; boundary=b", "--b\r\n\r\nx\r\n--b--", "PUT");
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_TRUE(p.tx_at(0).request_files.empty());
    EXPECT_EQ(p.tx_at(0).request_body, "--b\r\n\r\nx\r\n--b--");
}

struct FileSink : BodyObserver {
    std::string raw;
    std::vector<std::string> files;
    void on_body(const HttpTx&, Dir, const uint8_t* data, size_t len) override {
        raw.append(reinterpret_cast<const char*>(data), len);
    }
    void on_file_data(const HttpTx&, size_t file, const uint8_t* data, size_t len) override {
        files.resize(std::max(files.size(), file + 1));
        files[file].append(reinterpret_cast<const char*>(data), len);
    }
};

TEST(HttpMultipart, ObserverSeesWholeFilesNotTheRawBody) {
    HttpConfig cfg;
    cfg.request_body_limit = 4;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    auto sink = std::make_unique<FileSink>();
    FileSink* s = sink.get();
    p.set_body_observer(std::move(sink));
    std::string req = post("multipart/form-data; boundary=XyZ", kTwoFilesBody);
    for (size_t i = 0; i < req.size(); i += 5) {
        p.feed(Dir::kToServer, u8(req) + i, std::min<size_t>(5, req.size() - i));
    }
    EXPECT_EQ(s->raw, "");
    ASSERT_EQ(s->files.size(), 2u);
    EXPECT_EQ(s->files[0], "first\r\n--XyX file\r\n-\r\n--X");
    EXPECT_EQ(s->files[1], "MZ\x90\x00second"s);
}

// Request bodies of any method framed by Content-Length or chunked are bodies.
TEST(HttpRequestBody, OtherMethods) {
    HttpConfig cfg;
    for (const char* m : {"PUT", "PATCH", "DELETE", "OPTIONS", "FOO"}) {
        HttpCounters ctr;
        HttpParser p(&cfg, &ctr);
        std::string req = std::string(m) +
                          " /r HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" + m +
                          " /r HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "3\r\nabc\r\n0\r\n\r\n";
        p.feed(Dir::kToServer, u8(req), req.size());
        ASSERT_EQ(p.tx_count(), 2u) << m;
        EXPECT_EQ(p.tx_at(0).request_body, "hello") << m;
        EXPECT_EQ(p.tx_at(1).request_body, "abc") << m;
        EXPECT_EQ(p.tx_at(1).request_progress, HttpTx::kRequestComplete) << m;
    }
}

// A request body labelled gzip that is not compressed is kept as sent (libhtp passes it on).
TEST(HttpRequestBody, GzipLabelledPlainBodyKeptAsSent) {
    HttpConfig cfg;
    HttpCounters ctr;
    HttpParser p(&cfg, &ctr);
    std::string req =
        "PUT /f HTTP/1.1\r\nHost: h\r\nContent-Encoding: gzip\r\nContent-Length: 11\r\n\r\n"
        "plain words";
    p.feed(Dir::kToServer, u8(req), req.size());
    EXPECT_EQ(p.tx_at(0).request_body, "plain words");
    EXPECT_TRUE(p.tx_at(0).events.has(Event::kDecompressionError));
}

}  // namespace
}  // namespace picket::sensor::applayer::http
