// HTTP/1.0 and 1.1 parser and normaliser. One HttpParser per TCP flow takes the reassembled,
// in-order bytes of each direction and builds transactions (a request and its response) that
// hold the strings Suricata's HTTP sticky buffers inspect (http.uri, http.header, file.data...).
// Only the flow's owning worker calls it. It never throws; malformed traffic is an event
// (HttpCounters, HttpTx::events), and all memory it holds is bounded by the HttpConfig.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"

namespace picket::sensor::applayer::http {

enum class Dir : uint8_t { kToServer = 0, kToClient = 1 };

// Engine events, exported as "app_layer.http.events.<name>" (event_name()).
enum class Event : uint8_t {
    kMissingCrlf,              // a line ended with a bare LF (accepted)
    kHeaderTooLong,            // header section over max_header_bytes / max_header_count
    kLineTooLong,              // a line over max_line_bytes (truncated)
    kInvalidChunkSize,         // chunk-size line not hex
    kChunkSizeTooLong,         // chunk size with more than 15 significant hex digits
    kInvalidContentLength,     // not digits, overflow, or differing duplicates
    kDecompressionBomb,        // decompressed size over decompress_limit or ratio guard
    kDecompressionError,       // corrupt gzip/deflate/lzma data
    kInvalidRequestLine,       // unparseable request line (flow abandoned) or odd protocol
    kInvalidStatusLine,        // response does not start with HTTP/ or bad status code
    kTooManyTransactions,      // more than max_pipelined open transactions (flow abandoned)
    kDoubleEncoding,           // %25xx in the URI path
    kInvalidPercentEncoding,   // % not followed by two hex digits (kept as is)
    kUEncoding,                // %uXXXX in the URI path
    kUEncodingNonAscii,        // %uXXXX above 0x7f (mapped to '?', or to ASCII for full width)
    kDirectoryTraversal,       // /../ that would climb above the root
    kOversizeDirLength,        // a path segment longer than oversize_dir_length
    kNulByte,                  // NUL (raw or %00) in the URI
    kGap,                      // a hole in the stream
    kAbandoned,                // parsing given up for this flow
    kUnknownMethod,            // method token not in the known list
    kMissingColon,             // header line without ':' (dropped)
    kInvalidHeaderName,        // whitespace or non-token bytes in a header name
    kMissingHost,              // HTTP/1.1 request without Host
    kChunkedAndContentLength,  // both Transfer-Encoding: chunked and Content-Length
    kUnmatchedResponse,        // a response with no request waiting for it
    kInvalidTransferEncodingRequest,  // a request's Transfer-Encoding whose last coding is
                                      // not chunked (RFC 9112 6.3 rule 4: a 400)
    // multipart/form-data request bodies (Suricata's libhtp multipart events).
    kMultipartGenericError,   // no boundary parameter, or the body ended before --boundary--
    kMultipartInvalidHeader,  // a part header line without colon, or the part head too long
    kMultipartNoFiledata,     // the body ended inside a part's head (no content after it)
    kCount,
};
inline constexpr size_t kEventCount = static_cast<size_t>(Event::kCount);
const char* event_name(Event e);

class EventSet {
public:
    void set(Event e) { bits_ |= uint64_t{1} << static_cast<unsigned>(e); }
    bool has(Event e) const { return (bits_ >> static_cast<unsigned>(e)) & 1; }
    bool empty() const { return bits_ == 0; }
    uint64_t bits() const { return bits_; }
    void merge(const EventSet& o) { bits_ |= o.bits_; }

private:
    uint64_t bits_ = 0;
};

// Per server profile (personality). Immutable once a parser uses it.
struct HttpConfig {
    size_t request_body_limit = 4096;      // bytes of (dechunked) request body kept
    size_t response_body_limit = 4096;     // bytes of dechunked, decompressed response body kept
    size_t decompress_limit = 1 << 20;     // max decompressed bytes per body (bomb guard)
    uint32_t decompress_max_ratio = 2048;  // output/input ratio guard, checked past 64 KiB out
    bool decompress_response = true;       // gzip / deflate (/ lzma) Content-Encoding on responses
    bool decompress_request = true;        // ... and on requests (Suricata 7.0.16+ turns it on)
    // Content-Encoding layers decoded ("gzip, gzip"); libhtp's
    // response-body-decompress-layer-limit (Suricata default 2; 0 = the parser's maximum, 4).
    size_t decompress_layer_limit = 2;
    // "Content-Encoding: lzma" (raw LZMA "alone" format) adds a layer too: libhtp's
    // lzma-enabled (off by default in Suricata) and lzma-memlimit (decoder memory per layer;
    // the dictionary is capped below it, so data reaching further back is an error).
    bool lzma_enabled = false;
    size_t lzma_memlimit = 1 << 20;
    size_t max_header_bytes = 64 * 1024;  // raw header section of one message
    size_t max_header_count = 512;        // header fields kept per message
    size_t max_line_bytes = 16 * 1024;    // start line, header line, chunk-size line
    size_t max_pipelined = 64;            // transactions held at once
    // URI normalisation (http_inspect-like server profile options).
    bool percent_decode = true;
    bool u_encode = true;  // %uXXXX (IIS)
    bool backslash_to_slash = true;
    bool collapse_slashes = true;
    bool path_normalize = true;  // ./ and ../
    uint32_t oversize_dir_length = 300;
    bool double_decode = false;  // decode %25xx a second time (event either way)
};

struct HttpCounters {
    Counter transactions;  // transactions created
    Counter memuse;        // gauge: bytes held by all parsers using these counters
    Counter flows_abandoned;
    std::array<Counter, kEventCount> events;

    void count(Event e) { ++events[static_cast<size_t>(e)]; }
    // "app_layer.http.transactions", "app_layer.http.memuse",
    // "app_layer.http.events.<event_name>" for every event (zeros included).
    void export_stats(StatsSnapshot& out) const;
};

struct Header {
    std::string name;   // as first sent (case kept)
    std::string value;  // leading/trailing SP/HT trimmed; duplicates joined with ", "
};

// A file uploaded in a multipart/form-data request: one part with a filename parameter.
struct HttpFile {
    std::string name;          // file.name: filename= (or RFC 5987 filename*=) as sent
    std::string content_type;  // the part's Content-Type
    std::string data;          // file.data: the part's content, first request_body_limit bytes
    uint64_t size = 0;         // content bytes seen
    bool truncated = false;    // more content than request_body_limit
    bool complete = false;     // the part ended with its delimiter (else cut: TRUNCATED)
};
// Files kept per transaction (Suricata keeps every part; later ones are dropped here).
inline constexpr size_t kMaxFilesPerTx = 8;

// One request/response exchange. Strings are empty until the matching progress is reached.
struct HttpTx {
    uint64_t id = 0;  // 0, 1, 2... per flow

    // Request (to_server).
    std::string method;                // http.method
    std::string uri;                   // http.uri (normalised path + "?" + raw query)
    std::string uri_raw;               // http.uri.raw
    std::string protocol;              // http.protocol ("HTTP/1.1"; "" for HTTP/0.9)
    std::string request_line;          // http.request_line ("GET /x HTTP/1.1")
    std::string request_headers;       // http.header: "Name: value\r\n"..., no Cookie
    std::string request_headers_raw;   // http.header.raw: header bytes as sent, blank line incl.
    std::string request_header_names;  // http.header_names: "\r\nName1\r\nName2\r\n\r\n"
    std::string cookie;                // http.cookie (request)
    std::string user_agent, host, host_raw, content_type_req, content_len_req, referer, accept,
        accept_enc, accept_lang, connection;
    std::string request_body;   // http.request_body: dechunked, first request_body_limit bytes
    std::string request_start;  // http.start: line + "\r\n" + headers + "\r\n"
    std::vector<Header> request_header_list;  // trailers appended at completion
    // multipart/form-data POST (boundary found): its file parts, at most kMaxFilesPerTx.
    // request_body keeps the raw multipart body all the same (libhtp's request body).
    bool request_multipart = false;
    std::vector<HttpFile> request_files;

    // Response (to_client).
    std::string response_protocol, stat_code, stat_msg, response_line;
    std::string response_headers, response_headers_raw, response_header_names;
    std::string response_cookie;  // http.cookie (response): Set-Cookie
    std::string content_type_resp, content_len_resp, location, server;
    std::string response_body;  // file.data / http.response_body: dechunked + decompressed
    std::string response_start;
    std::vector<Header> response_header_list;
    uint16_t status = 0;

    enum Progress : uint8_t {
        kNew,              // nothing parsed yet (a tx created by an unsolicited response)
        kRequestLine,      // method, uri, protocol, request_line available
        kRequestHeaders,   // header buffers available
        kRequestBody,      // body in progress (request_body grows)
        kRequestComplete,  // final: nothing changes any more
    };
    enum ResponseProgress : uint8_t {
        kResponseNew,
        kResponseLine,
        kResponseHeaders,
        kResponseBody,
        kResponseComplete,
    };
    Progress request_progress = kNew;
    ResponseProgress response_progress = kResponseNew;

    bool request_body_truncated = false;   // more body than request_body_limit (or a gap)
    bool response_body_truncated = false;  // more than response_body_limit / decompress stop
    bool request_chunked = false, response_chunked = false;
    uint64_t request_body_bytes = 0;   // message body bytes seen (after dechunking)
    uint64_t response_body_bytes = 0;  // before decompression
    EventSet events;                   // events raised while parsing this transaction
    // The body of that direction was cut short (stream closed inside it, a gap, the flow
    // abandoned): an EVE file of it is TRUNCATED, not CLOSED.
    bool request_body_cut = false, response_body_cut = false;
    // Kept for the app layer's EVE records: the transaction was logged, and the events
    // already written as anomaly records (EventSet bits).
    bool eve_logged = false;
    uint64_t eve_events_logged = 0;

    bool complete() const {
        return request_progress == kRequestComplete && response_progress == kResponseComplete;
    }
};

// Sees every message body byte the parser decodes (dechunked, decompressed), before the
// kept-body limit (request_body_limit / response_body_limit): EVE file logging hashes bodies
// with it. Called during feed() / on_close(), for the transaction `tx` and its direction.
class BodyObserver {
public:
    virtual ~BodyObserver() = default;
    // A multipart request's raw body is not passed here: its files come to on_file_data.
    virtual void on_body(const HttpTx& tx, Dir dir, const uint8_t* data, size_t len) = 0;
    // Content of tx.request_files[file] (all of it, not only the kept part).
    virtual void on_file_data(const HttpTx& tx, size_t file, const uint8_t* data, size_t len) {
        (void)tx;
        (void)file;
        (void)data;
        (void)len;
    }
};

// Transactions whose state changed during one call: ids first_id .. first_id + count - 1
// (changes in one direction always form a contiguous run). Run detection on each of them.
struct FeedResult {
    uint64_t first_id = 0;
    uint32_t count = 0;
    bool failed = false;  // parser abandoned the flow: stop feeding (held txs stay readable)
};

class HttpParser {
public:
    // Both pointers must outlive the parser; counters is shared by the worker's parsers.
    HttpParser(const HttpConfig* config, HttpCounters* counters);
    ~HttpParser();
    HttpParser(const HttpParser&) = delete;
    HttpParser& operator=(const HttpParser&) = delete;

    // In-order stream bytes of one direction, any segmentation.
    FeedResult feed(Dir dir, const uint8_t* data, size_t len);
    // The direction's stream ended (FIN/RST/timeout): ends a body-until-close response and
    // completes any message cut short (marked truncated).
    FeedResult on_close(Dir dir);
    // A hole of gap_len bytes (0: unknown). Inside a body of known length it is skipped and the
    // body marked truncated; anywhere else the flow is abandoned (event gap + abandoned).
    void on_gap(Dir dir, uint64_t gap_len = 0);

    // Held transactions, oldest first. Indexes are valid until the next call that changes
    // the parser.
    size_t tx_count() const { return txs_.size(); }
    const HttpTx& tx_at(size_t i) const { return *txs_[i]; }
    const HttpTx* find_tx(uint64_t id) const;
    // The same, writable: only the EVE bookkeeping fields (eve_*) are the caller's to change.
    HttpTx* find_tx(uint64_t id) { return find_tx_mut(id); }
    HttpTx& tx_at(size_t i) { return *txs_[i]; }
    // Body bytes go to `o` too (null: none), which the parser owns from then on (it costs a
    // flow without one nothing). With an observer, a compressed body is decompressed past the
    // kept-body limit (up to decompress_limit) so that it sees it all.
    void set_body_observer(std::unique_ptr<BodyObserver> o) { observer_ = std::move(o); }
    BodyObserver* body_observer() const { return observer_.get(); }
    // Frees the transactions at the front that are complete in both directions. Call after
    // detection has seen the FeedResult that completed them. Returns how many were freed.
    size_t release_completed();
    // The same, but only those with an id below id_limit (the others wait for detection).
    size_t release_before(uint64_t id_limit);

    bool failed() const { return failed_; }
    // CONNECT answered 2xx or 101 Switching Protocols: the rest is not HTTP; data ignored.
    bool tunnel() const { return tunnel_; }
    // Bytes held now (buffers, transactions, zlib state).
    size_t memory() const;
    // What memory() can never exceed with this config, whatever the input.
    static size_t memory_bound(const HttpConfig& config);
    // For the splitter: offset just past the last unit (message head, chunk, whole body)
    // that ended inside the data of the last feed() in this direction; 0 if none.
    size_t last_boundary(Dir dir) const;

private:
    struct DirState;
    HttpTx* find_tx_mut(uint64_t id);
    void abandon();
    void update_memuse();

    const HttpConfig* cfg_;
    HttpCounters* ctr_;
    std::deque<std::unique_ptr<HttpTx>> txs_;
    std::unique_ptr<DirState> dir_[2];
    uint64_t next_id_ = 0;
    size_t reported_mem_ = 0;
    bool failed_ = false;
    bool tunnel_ = false;
    std::unique_ptr<BodyObserver> observer_;

    friend struct ParserAccess;
};

// Protocol detection on the first bytes of a direction.
enum class ProbeResult : uint8_t { kNo, kYes, kNeedMore };
// to_server: a known method followed by a space; to_client: "HTTP/".
ProbeResult probe(Dir dir, const uint8_t* data, size_t len);

// Message framing for the stream module (where to flush for inspection). Per flow, both
// directions, fed the same bytes as the parser will be (it runs a header-only HttpParser).
class HttpSplitter {
public:
    explicit HttpSplitter(const HttpConfig& config);
    // data continues the direction's stream. Returns the offset just past the last unit
    // (request/response head, chunk, whole body) that ends inside data; 0 if none does.
    size_t scan(Dir dir, const uint8_t* data, size_t len);
    bool failed() const { return parser_.failed(); }

private:
    static HttpConfig framing_only(HttpConfig c);
    HttpConfig cfg_;
    HttpCounters ctr_;
    HttpParser parser_;
};

// URI normalisation as done for http.uri: the path part (before the first '?') is percent-
// and %u-decoded, backslashes turned to slashes, "//" collapsed and dot segments removed
// (never above the root); the query is kept as sent. Events are added to *events (may be
// null).
std::string normalize_uri(std::string_view raw, const HttpConfig& config, EventSet* events);

// Host normalisation for http.host: lowercased, port and trailing dots removed.
std::string normalize_host(std::string_view raw);

}  // namespace picket::sensor::applayer::http
