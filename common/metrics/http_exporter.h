// Serves a Registry over HTTP with civetweb: GET /metrics (text format 0.0.4,
// "Content-Type: text/plain; version=0.0.4; charset=utf-8"), GET / (a one-line page linking
// /metrics), 404 for any other path, 405 for any method but GET/HEAD. Two civetweb worker
// threads; each scrape renders the registry afresh.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/metrics/metrics.h"

namespace picket::metrics {

// "HOST:PORT" ("127.0.0.1:9750", "[::1]:0", "0.0.0.0:9750", ":9750" = all addresses). Port 0
// picks a free port (see HttpExporter::port()); a host name is resolved by start().
// InvalidArgument for anything else, naming the text. Debian 12's civetweb has no IPv6:
// "[...]" addresses pass this check but start() returns Unavailable.
absl::Status check_listen_address(std::string_view listen);

class HttpExporter {
public:
    // Binds and starts serving `registry` (which must outlive the exporter).
    // InvalidArgument for a malformed address, Unavailable when it cannot be bound (in use, not
    // a local address): the message names the address.
    static absl::StatusOr<std::unique_ptr<HttpExporter>> start(std::string_view listen,
                                                               const Registry& registry);
    ~HttpExporter();  // stop()
    HttpExporter(const HttpExporter&) = delete;
    HttpExporter& operator=(const HttpExporter&) = delete;

    int port() const;          // the bound port
    std::string url() const;   // "http://127.0.0.1:PORT/metrics"
    uint64_t scrapes() const;  // GET /metrics served
    void stop();               // idempotent

    struct Impl;

private:
    explicit HttpExporter(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace picket::metrics
