#include "common/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace picket::metrics {
namespace {

struct Response {
    std::string status_line;
    std::string headers;  // "Name: value\r\n" lines, as received
    std::string body;
};

// A tiny HTTP/1.0 client: one request per connection, read until the server closes.
Response http(int port, const std::string& method, const std::string& path) {
    Response r;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_GE(fd, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
        ADD_FAILURE() << "connect to 127.0.0.1:" << port << " failed";
        close(fd);
        return r;
    }
    const std::string request = method + " " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    EXPECT_EQ(write(fd, request.data(), request.size()), static_cast<ssize_t>(request.size()));
    std::string raw;
    char buf[4096];
    ssize_t n = 0;
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        raw.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    const size_t eol = raw.find("\r\n");
    const size_t end = raw.find("\r\n\r\n");
    if (eol == std::string::npos || end == std::string::npos) {
        ADD_FAILURE() << "malformed response: " << raw;
        return r;
    }
    r.status_line = raw.substr(0, eol);
    r.headers = raw.substr(eol + 2, end + 2 - (eol + 2));
    r.body = raw.substr(end + 4);
    return r;
}

bool has_header(const Response& r, const std::string& line) {
    return r.headers.find(line + "\r\n") != std::string::npos;
}

class HttpExporterTest : public ::testing::Test {
protected:
    void SetUp() override {
        registry_.counter("picket_test_requests_total", "Requests.", {{"code", "200"}}).inc(5);
        registry_.gauge("picket_test_queue", "Queue.").set(1.5);
        registry_.histogram("picket_test_seconds", "Latency.", {}, latency_buckets()).observe(0.02);
        auto exporter = HttpExporter::start("127.0.0.1:0", registry_);
        ASSERT_TRUE(exporter.ok()) << exporter.status();
        exporter_ = std::move(*exporter);
    }

    Registry registry_;
    std::unique_ptr<HttpExporter> exporter_;
};

TEST_F(HttpExporterTest, ServesTheRegistryOnMetrics) {
    ASSERT_GT(exporter_->port(), 0);
    EXPECT_EQ(exporter_->url(),
              "http://127.0.0.1:" + std::to_string(exporter_->port()) + "/metrics");
    EXPECT_EQ(exporter_->scrapes(), 0u);
    const std::string expected = registry_.render();
    Response r = http(exporter_->port(), "GET", "/metrics");
    EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
    EXPECT_TRUE(has_header(r, "Content-Type: text/plain; version=0.0.4; charset=utf-8"))
        << r.headers;
    EXPECT_TRUE(has_header(r, "Content-Length: " + std::to_string(expected.size()))) << r.headers;
    EXPECT_EQ(r.body, expected);
    EXPECT_EQ(exporter_->scrapes(), 1u);
    // A query string does not change the path.
    EXPECT_EQ(http(exporter_->port(), "GET", "/metrics?x=1").body, expected);
    EXPECT_EQ(exporter_->scrapes(), 2u);
}

TEST_F(HttpExporterTest, HeadHasHeadersButNoBody) {
    const std::string expected = registry_.render();
    Response r = http(exporter_->port(), "HEAD", "/metrics");
    EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
    EXPECT_TRUE(has_header(r, "Content-Length: " + std::to_string(expected.size()))) << r.headers;
    EXPECT_EQ(r.body, "");
    EXPECT_EQ(exporter_->scrapes(), 0u);
}

TEST_F(HttpExporterTest, IndexPageLinksMetrics) {
    Response r = http(exporter_->port(), "GET", "/");
    EXPECT_EQ(r.status_line, "HTTP/1.1 200 OK");
    EXPECT_TRUE(has_header(r, "Content-Type: text/html; charset=utf-8")) << r.headers;
    EXPECT_EQ(r.body,
              "<html><head><title>Picket metrics</title></head>"
              "<body><h1>Picket metrics</h1><p><a href=\"/metrics\">/metrics</a></p></body>"
              "</html>\n");
}

TEST_F(HttpExporterTest, UnknownPathIs404) {
    Response r = http(exporter_->port(), "GET", "/nope");
    EXPECT_EQ(r.status_line, "HTTP/1.1 404 Not Found");
    EXPECT_EQ(r.body, "404 Not Found\n");
    EXPECT_EQ(http(exporter_->port(), "GET", "/metrics/x").status_line, "HTTP/1.1 404 Not Found");
    EXPECT_EQ(exporter_->scrapes(), 0u);
}

TEST_F(HttpExporterTest, OtherMethodsAre405) {
    Response r = http(exporter_->port(), "POST", "/metrics");
    EXPECT_EQ(r.status_line, "HTTP/1.1 405 Method Not Allowed");
    EXPECT_TRUE(has_header(r, "Allow: GET, HEAD")) << r.headers;
    EXPECT_EQ(r.body, "405 Method Not Allowed\n");
    EXPECT_EQ(http(exporter_->port(), "DELETE", "/").status_line,
              "HTTP/1.1 405 Method Not Allowed");
    EXPECT_EQ(exporter_->scrapes(), 0u);
}

TEST_F(HttpExporterTest, SecondExporterOnSamePortIsUnavailable) {
    const std::string address = "127.0.0.1:" + std::to_string(exporter_->port());
    auto second = HttpExporter::start(address, registry_);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(second.status().message().find(address), std::string_view::npos) << second.status();
    EXPECT_NE(second.status().message().find("Address already in use"), std::string_view::npos)
        << second.status();
    // The first one still serves.
    EXPECT_EQ(http(exporter_->port(), "GET", "/metrics").status_line, "HTTP/1.1 200 OK");
}

TEST_F(HttpExporterTest, StopIsIdempotentAndClosesThePort) {
    const int port = exporter_->port();
    exporter_->stop();
    exporter_->stop();
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_NE(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    close(fd);
    // The port is free again for a new exporter.
    auto again = HttpExporter::start("127.0.0.1:" + std::to_string(port), registry_);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ((*again)->port(), port);
    EXPECT_EQ(http(port, "GET", "/metrics").body, registry_.render());
}

TEST(HttpExporter, AddressNotLocalIsUnavailable) {
    Registry registry;
    auto e = HttpExporter::start("192.0.2.1:0", registry);  // TEST-NET-1: never configured here
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(e.status().message().find("192.0.2.1:0"), std::string_view::npos) << e.status();
}

TEST(HttpExporter, AllAddressesAndHostnames) {
    Registry registry;
    auto any = HttpExporter::start(":0", registry);
    ASSERT_TRUE(any.ok()) << any.status();
    EXPECT_EQ((*any)->url(), "http://127.0.0.1:" + std::to_string((*any)->port()) + "/metrics");
    EXPECT_EQ(http((*any)->port(), "GET", "/metrics").body, registry.render());
    auto local = HttpExporter::start("localhost:0", registry);
    ASSERT_TRUE(local.ok()) << local.status();
    EXPECT_EQ((*local)->url(), "http://localhost:" + std::to_string((*local)->port()) + "/metrics");
    EXPECT_EQ(http((*local)->port(), "GET", "/metrics").status_line, "HTTP/1.1 200 OK");
}

TEST(HttpExporter, BadAddressesAreInvalidArgument) {
    Registry registry;
    for (const char* bad :
         {"nope", "1.2.3.4", "127.0.0.1:99999", "127.0.0.1:", "127.0.0.1:-1", "127.0.0.1:80a",
          "::1:9750", "[::1:9750", "[nope]:9750", "1.2.3:80", "bad_host:80", "", ":"}) {
        SCOPED_TRACE(bad);
        absl::Status st = check_listen_address(bad);
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
        // Built with append: GCC 12's -Wrestrict misfires on "\"" + std::string(...).
        std::string quoted = "\"";
        quoted.append(bad).append("\"");
        EXPECT_NE(st.message().find(quoted), std::string_view::npos) << st;
        auto e = HttpExporter::start(bad, registry);
        EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    }
    EXPECT_EQ(check_listen_address("nope").message(),
              "metrics listen address \"nope\": expected HOST:PORT (\"127.0.0.1:9750\", "
              "\"[::1]:9750\", \":9750\")");
    EXPECT_EQ(check_listen_address("127.0.0.1:99999").message(),
              "metrics listen address \"127.0.0.1:99999\": port must be a number from 0 to "
              "65535");
}

TEST(HttpExporter, GoodAddressesAreAccepted) {
    for (const char* good : {"127.0.0.1:9750", "[::1]:0", "[::]:9750", "0.0.0.0:9750", ":9750",
                             "localhost:9750", "metrics.example-site.net:65535", "10.0.0.1:0"}) {
        SCOPED_TRACE(good);
        EXPECT_TRUE(check_listen_address(good).ok()) << check_listen_address(good);
    }
}

}  // namespace
}  // namespace picket::metrics
