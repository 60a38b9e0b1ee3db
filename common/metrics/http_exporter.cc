#include "common/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/log.h"

namespace picket::metrics {
namespace {

constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kIndexPage =
    "<html><head><title>Picket metrics</title></head>"
    "<body><h1>Picket metrics</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n";

struct ListenAddress {
    enum class Kind { kAny, kIpv4, kIpv6, kHostname };
    Kind kind = Kind::kAny;
    std::string host;  // without brackets; empty for kAny
    int port = 0;
};

bool all_digits(std::string_view s) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// RFC 1123 host name: dot-separated labels of letters, digits and '-', no label starting or
// ending with '-'. A name made only of digits and dots is a mistyped IPv4 address, not a host.
bool valid_hostname(std::string_view s) {
    if (s.empty() || s.size() > 253) {
        return false;
    }
    bool has_letter = false;
    size_t start = 0;
    while (start <= s.size()) {
        size_t dot = s.find('.', start);
        if (dot == std::string_view::npos) {
            dot = s.size();
        }
        std::string_view label = s.substr(start, dot - start);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
            return false;
        }
        for (char c : label) {
            const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            if (!alpha && !(c >= '0' && c <= '9') && c != '-') {
                return false;
            }
            has_letter = has_letter || alpha;
        }
        start = dot + 1;
    }
    return has_letter;
}

absl::StatusOr<ListenAddress> parse_listen(std::string_view listen) {
    auto bad = [&](std::string_view why) {
        return absl::InvalidArgumentError("metrics listen address \"" + std::string(listen) +
                                          "\": " + std::string(why));
    };
    const size_t colon = listen.rfind(':');
    if (colon == std::string_view::npos) {
        return bad("expected HOST:PORT (\"127.0.0.1:9750\", \"[::1]:9750\", \":9750\")");
    }
    std::string_view host = listen.substr(0, colon);
    std::string_view port = listen.substr(colon + 1);
    if (!all_digits(port) || port.size() > 5 || std::stoi(std::string(port)) > 65535) {
        return bad("port must be a number from 0 to 65535");
    }
    ListenAddress out;
    out.port = std::stoi(std::string(port));
    if (host.empty()) {
        out.kind = ListenAddress::Kind::kAny;
        return out;
    }
    if (host.front() == '[') {
        if (host.size() < 3 || host.back() != ']') {
            return bad("unterminated IPv6 address");
        }
        out.host = std::string(host.substr(1, host.size() - 2));
        in6_addr a6{};
        if (inet_pton(AF_INET6, out.host.c_str(), &a6) != 1) {
            return bad("invalid IPv6 address");
        }
        out.kind = ListenAddress::Kind::kIpv6;
        return out;
    }
    out.host = std::string(host);
    in_addr a4{};
    if (inet_pton(AF_INET, out.host.c_str(), &a4) == 1) {
        out.kind = ListenAddress::Kind::kIpv4;
        return out;
    }
    if (host.find(':') != std::string_view::npos) {
        return bad("an IPv6 address goes in brackets (\"[::1]:9750\")");
    }
    if (!valid_hostname(host)) {
        return bad("invalid host");
    }
    out.kind = ListenAddress::Kind::kHostname;
    return out;
}

bool civetweb_has_ipv6() {
    return mg_check_feature(MG_FEATURES_IPV6) != 0;
}

// mg_init_library is documented as "not thread safe" and must precede mg_start.
void init_civetweb_once() {
    static std::once_flag once;
    std::call_once(once, [] { mg_init_library(0); });
}

}  // namespace

absl::Status check_listen_address(std::string_view listen) {
    return parse_listen(listen).status();
}

struct HttpExporter::Impl {
    const Registry* registry = nullptr;
    std::string url;
    int port = 0;
    std::string wake_host;  // numeric address stop() connects to (see wake_listener)
    bool wake_ipv6 = false;
    std::atomic<uint64_t> scrapes{0};

    std::mutex mu;
    mg_context* ctx = nullptr;  // null once stopped
    bool starting = true;       // civetweb's messages are collected for the start() error
    std::vector<std::string> start_messages;

    static int on_request(mg_connection* conn);
    static int handle(Impl& impl, mg_connection* conn);
    static int on_log(const mg_connection* conn, const char* message);
};

namespace {

// Writes one complete response; the connection closes after it (keep-alive is off: with two
// worker threads an idle keep-alive client would hold half the pool).
int respond(mg_connection* conn, int status, std::string_view reason, std::string_view content_type,
            std::string_view body, bool head, std::string_view extra_headers = {}) {
    std::string header = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
                         "\r\nContent-Type: " + std::string(content_type) +
                         "\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\nCache-Control: no-store\r\nConnection: close\r\n" +
                         std::string(extra_headers) + "\r\n";
    mg_write(conn, header.data(), header.size());
    if (!head && !body.empty()) {
        mg_write(conn, body.data(), body.size());
    }
    return status;
}

// civetweb's listening thread polls its sockets in 2-second slices and looks at the stop flag
// only between them, so mg_stop() alone takes up to 2 s. A connection to the port ends the
// poll at once. Best effort: failures (already closed: ECONNREFUSED) are expected.
void wake_listener(const std::string& host, bool ipv6, int port) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    if (ipv6) {
        auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(static_cast<uint16_t>(port));
        inet_pton(AF_INET6, host.c_str(), &a->sin6_addr);
        len = sizeof(*a);
    } else {
        auto* a = reinterpret_cast<sockaddr_in*>(&ss);
        a->sin_family = AF_INET;
        a->sin_port = htons(static_cast<uint16_t>(port));
        inet_pton(AF_INET, host.c_str(), &a->sin_addr);
        len = sizeof(*a);
    }
    const int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return;
    }
    timeval tv{0, 100 * 1000};  // bounds a blocking connect on Linux
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    (void)connect(fd, reinterpret_cast<sockaddr*>(&ss), len);
    close(fd);
}

}  // namespace

int HttpExporter::Impl::on_request(mg_connection* conn) {
    // Never let an exception unwind into civetweb's C frames. Only bad_alloc can get here;
    // the client then sees the connection close without a response.
    try {
        return handle(*static_cast<Impl*>(mg_get_user_data(mg_get_context(conn))), conn);
    } catch (...) {
        return 500;
    }
}

int HttpExporter::Impl::handle(Impl& impl, mg_connection* conn) {
    const mg_request_info* ri = mg_get_request_info(conn);
    const std::string_view method = ri->request_method != nullptr ? ri->request_method : "";
    const std::string_view path = ri->local_uri != nullptr ? ri->local_uri : "";
    const bool head = method == "HEAD";
    const bool get_or_head = head || method == "GET";
    constexpr std::string_view kText = "text/plain; charset=utf-8";

    if (path != "/metrics" && path != "/") {
        return respond(conn, 404, "Not Found", kText, "404 Not Found\n", head);
    }
    if (!get_or_head) {
        return respond(conn, 405, "Method Not Allowed", kText, "405 Method Not Allowed\n", false,
                       "Allow: GET, HEAD\r\n");
    }
    if (path == "/") {
        return respond(conn, 200, "OK", "text/html; charset=utf-8", kIndexPage, head);
    }
    std::string body;
    try {
        body = impl.registry->render();
    } catch (const std::exception& e) {
        // Not expected: render() already contains collector failures.
        log::warning(std::string("metrics: rendering /metrics failed: ") + e.what());
        return respond(conn, 500, "Internal Server Error", kText, "500 Internal Server Error\n",
                       head);
    }
    if (!head) {
        impl.scrapes.fetch_add(1, std::memory_order_relaxed);
    }
    return respond(conn, 200, "OK", kMetricsContentType, body, head);
}

int HttpExporter::Impl::on_log(const mg_connection* conn, const char* message) {
    const mg_context* ctx = conn != nullptr ? mg_get_context(conn) : nullptr;
    auto* impl = ctx != nullptr ? static_cast<Impl*>(mg_get_user_data(ctx)) : nullptr;
    if (impl != nullptr) {
        std::lock_guard<std::mutex> lock(impl->mu);
        if (impl->starting) {
            impl->start_messages.emplace_back(message);
            return 1;
        }
    }
    // Runtime messages are mostly about misbehaving clients: debug, so a scanner cannot fill
    // the log. Returning 1 keeps civetweb from writing to stderr itself.
    log::debug(std::string("metrics http: ") + message);
    return 1;
}

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::start(std::string_view listen,
                                                                  const Registry& registry) {
    absl::StatusOr<ListenAddress> addr = parse_listen(listen);
    if (!addr.ok()) {
        return addr.status();
    }
    auto unavailable = [&](std::string_view why) {
        return absl::UnavailableError("metrics: cannot listen on " + std::string(listen) + ": " +
                                      std::string(why));
    };
    std::string bind_host = addr->host;
    std::string url_host = addr->host;
    std::string wake_host = addr->host;
    bool ipv6 = false;
    switch (addr->kind) {
        case ListenAddress::Kind::kAny:
            url_host = "127.0.0.1";
            wake_host = "127.0.0.1";
            break;
        case ListenAddress::Kind::kIpv4:
            if (addr->host == "0.0.0.0") {
                url_host = "127.0.0.1";
                wake_host = "127.0.0.1";
            }
            break;
        case ListenAddress::Kind::kIpv6:
            ipv6 = true;
            url_host = addr->host == "::" ? "[::1]" : "[" + addr->host + "]";
            wake_host = addr->host == "::" ? "::1" : addr->host;
            break;
        case ListenAddress::Kind::kHostname: {
            // Resolved here (IPv4 preferred) so civetweb only ever sees a numeric address.
            addrinfo hints{};
            hints.ai_family = civetweb_has_ipv6() ? AF_UNSPEC : AF_INET;
            hints.ai_socktype = SOCK_STREAM;
            addrinfo* res = nullptr;
            const int rc = getaddrinfo(addr->host.c_str(), nullptr, &hints, &res);
            if (rc != 0 || res == nullptr) {
                return unavailable(std::string("cannot resolve host: ") + gai_strerror(rc));
            }
            const addrinfo* pick = res;
            for (const addrinfo* r = res; r != nullptr; r = r->ai_next) {
                if (r->ai_family == AF_INET) {
                    pick = r;
                    break;
                }
            }
            char text[INET6_ADDRSTRLEN] = {};
            if (pick->ai_family == AF_INET) {
                inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(pick->ai_addr)->sin_addr,
                          text, sizeof(text));
            } else {
                inet_ntop(AF_INET6,
                          &reinterpret_cast<const sockaddr_in6*>(pick->ai_addr)->sin6_addr, text,
                          sizeof(text));
                ipv6 = true;
            }
            freeaddrinfo(res);
            bind_host = text;
            wake_host = text;
            break;
        }
    }
    if (ipv6 && !civetweb_has_ipv6()) {
        // Debian 12's libcivetweb is built without USE_IPV6.
        return unavailable("the civetweb library was built without IPv6 support");
    }
    // civetweb syntax: "ADDR:PORT", "[V6]:PORT", "+PORT" = every address (IPv4 and, when
    // civetweb has IPv6, IPv6 too). Port 0 is accepted and bound to a free port.
    const std::string port_text = std::to_string(addr->port);
    std::string ports;
    if (addr->kind == ListenAddress::Kind::kAny) {
        ports = "+" + port_text;
    } else if (ipv6) {
        ports = "[" + bind_host + "]:" + port_text;
    } else {
        ports = bind_host + ":" + port_text;
    }

    init_civetweb_once();
    auto impl = std::make_unique<Impl>();
    impl->registry = &registry;
    impl->wake_host = wake_host;
    impl->wake_ipv6 = ipv6;

    mg_callbacks callbacks{};
    callbacks.begin_request = &Impl::on_request;
    callbacks.log_message = &Impl::on_log;
    // No document_root: civetweb serves no files; every request goes to on_request.
    const char* options[] = {"listening_ports",    ports.c_str(), "num_threads", "2",
                             "request_timeout_ms", "5000",        nullptr};
    // mg_start ignores SIGPIPE process-wide (on UNIX); the binaries want that anyway.
    mg_context* ctx = mg_start(&callbacks, impl.get(), options);
    std::vector<std::string> messages;
    {
        std::lock_guard<std::mutex> lock(impl->mu);
        impl->starting = false;
        messages.swap(impl->start_messages);
        impl->ctx = ctx;
    }
    if (ctx == nullptr) {
        std::string why;
        for (const std::string& m : messages) {
            why += (why.empty() ? "" : "; ") + m;
        }
        return unavailable(why.empty() ? "civetweb failed to start" : why);
    }
    for (const std::string& m : messages) {
        log::debug("metrics http: " + m);
    }
    // Owned from here on, so every early return below stops the server.
    std::unique_ptr<HttpExporter> exporter(new HttpExporter(std::move(impl)));
    mg_server_port bound[4] = {};
    if (mg_get_server_ports(ctx, 4, bound) < 1) {
        return unavailable("civetweb reports no listening port");
    }
    exporter->impl_->port = bound[0].port;
    exporter->impl_->url = "http://" + url_host + ":" + std::to_string(bound[0].port) + "/metrics";
    return exporter;
}

HttpExporter::HttpExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpExporter::~HttpExporter() {
    stop();
}

int HttpExporter::port() const {
    return impl_->port;
}

std::string HttpExporter::url() const {
    return impl_->url;
}

uint64_t HttpExporter::scrapes() const {
    return impl_->scrapes.load(std::memory_order_relaxed);
}

void HttpExporter::stop() {
    mg_context* ctx = nullptr;
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        ctx = impl_->ctx;
        impl_->ctx = nullptr;
    }
    if (ctx == nullptr) {
        return;
    }
    // Outside `mu`: mg_stop joins the workers, whose on_log may take it. It runs on its own
    // thread so that this one can wake civetweb's listener until mg_stop returns.
    std::atomic<bool> stopped{false};
    std::thread stopper([ctx, &stopped] {
        mg_stop(ctx);
        stopped.store(true);
    });
    while (!stopped.load()) {
        wake_listener(impl_->wake_host, impl_->wake_ipv6, impl_->port);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stopper.join();
}

}  // namespace picket::metrics
