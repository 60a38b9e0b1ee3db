#include "sensor/applayer/http/http.h"

#include <lzma.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace picket::sensor::applayer::http {

namespace {

constexpr const char* kEventNames[kEventCount] = {
    "missing_crlf",
    "header_too_long",
    "line_too_long",
    "invalid_chunk_size",
    "chunk_size_too_long",
    "invalid_content_length",
    "decompression_bomb",
    "decompression_error",
    "invalid_request_line",
    "invalid_status_line",
    "too_many_transactions",
    "double_encoding",
    "invalid_percent_encoding",
    "u_encoding",
    "u_encoding_non_ascii",
    "directory_traversal",
    "oversize_dir_length",
    "nul_byte",
    "gap",
    "abandoned",
    "unknown_method",
    "missing_colon",
    "invalid_header_name",
    "missing_host",
    "chunked_and_content_length",
    "unmatched_response",
};

// RFC 9110 methods plus WebDAV and friends; anything else that is a token is accepted with
// the unknown_method event.
constexpr std::string_view kMethods[] = {
    "GET",        "POST",       "HEAD",   "PUT",        "DELETE",      "OPTIONS",
    "TRACE",      "CONNECT",    "PATCH",  "PROPFIND",   "PROPPATCH",   "MKCOL",
    "COPY",       "MOVE",       "LOCK",   "UNLOCK",     "SEARCH",      "REPORT",
    "CHECKOUT",   "CHECKIN",    "MERGE",  "MKACTIVITY", "SUBSCRIBE",   "UNSUBSCRIBE",
    "NOTIFY",     "POLL",       "BCOPY",  "BDELETE",    "BMOVE",       "BPROPFIND",
    "BPROPPATCH", "ACL",        "UPDATE", "LABEL",      "MKWORKSPACE", "VERSION-CONTROL",
    "UNCHECKOUT", "MKCALENDAR", "PURGE",  "LINK",       "UNLINK",
};

bool is_known_method(std::string_view m) {
    return std::find(std::begin(kMethods), std::end(kMethods), m) != std::end(kMethods);
}

// RFC 9110 5.6.2 tchar.
bool is_tchar(uint8_t c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        return true;
    }
    return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

bool is_ws(char c) {
    return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_ws(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_ws(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') {
            x = static_cast<char>(x - 'A' + 'a');
        }
        if (y >= 'A' && y <= 'Z') {
            y = static_cast<char>(y - 'A' + 'a');
        }
        if (x != y) {
            return false;
        }
    }
    return true;
}

bool istarts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

const Header* find_header(const std::vector<Header>& list, std::string_view name) {
    for (const Header& h : list) {
        if (iequals(h.name, name)) {
            return &h;
        }
    }
    return nullptr;
}

// Case-insensitive substring search.
bool icontains(std::string_view s, std::string_view needle) {
    for (size_t i = 0; i + needle.size() <= s.size(); ++i) {
        if (iequals(s.substr(i, needle.size()), needle)) {
            return true;
        }
    }
    return false;
}

// Name comparison for the fields that frame a response (libhtp's "nocase_nozero"): NUL bytes
// and surrounding whitespace/control bytes in the received name are ignored.
bool loose_name_equals(std::string_view name, std::string_view want) {
    size_t j = 0;
    size_t b = 0, e = name.size();
    auto junk = [](char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r'; };
    while (b < e && (junk(name[b]) || name[b] == '\0')) {
        ++b;
    }
    while (e > b && (junk(name[e - 1]) || name[e - 1] == '\0')) {
        --e;
    }
    for (size_t i = b; i < e; ++i) {
        if (name[i] == '\0') {
            continue;
        }
        if (j >= want.size() || !iequals(name.substr(i, 1), want.substr(j, 1))) {
            return false;
        }
        ++j;
    }
    return j == want.size();
}

const Header* find_header_loose(const std::vector<Header>& list, std::string_view name) {
    if (const Header* h = find_header(list, name)) {
        return h;
    }
    for (const Header& h : list) {
        if (loose_name_equals(h.name, name)) {
            return &h;
        }
    }
    return nullptr;
}

std::string header_value(const std::vector<Header>& list, std::string_view name) {
    const Header* h = find_header(list, name);
    return h == nullptr ? std::string() : h->value;
}

// Content-Length: digits, possibly repeated identically ("5, 5" from joined duplicates,
// RFC 9110 8.6). Returns false if invalid.
bool parse_content_length(std::string_view v, uint64_t* out) {
    bool have = false;
    uint64_t first = 0;
    while (true) {
        size_t comma = v.find(',');
        std::string_view part = trim(v.substr(0, comma));
        if (part.empty() || part.size() > 18) {
            return false;
        }
        uint64_t n = 0;
        for (char c : part) {
            if (c < '0' || c > '9') {
                return false;
            }
            n = n * 10 + static_cast<uint64_t>(c - '0');
        }
        if (have && n != first) {
            return false;
        }
        first = n;
        have = true;
        if (comma == std::string_view::npos) {
            break;
        }
        v.remove_prefix(comma + 1);
    }
    *out = first;
    return true;
}

// The last transfer coding is chunked (RFC 9112 6.3 rule 4).
bool is_chunked(std::string_view te) {
    size_t comma = te.rfind(',');
    std::string_view last = trim(comma == std::string_view::npos ? te : te.substr(comma + 1));
    return iequals(last, "chunked");
}

// libhtp's response test: "chunked" anywhere in the value, case-insensitive, NULs ignored.
bool contains_chunked(std::string_view v) {
    std::string clean;
    for (char c : v) {
        if (c != '\0') {
            clean.push_back(c);
        }
    }
    return icontains(clean, "chunked");
}

size_t heap(const std::string& s) {
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

size_t heap(const std::vector<Header>& v) {
    size_t n = v.capacity() * sizeof(Header);
    for (const Header& h : v) {
        n += heap(h.name) + heap(h.value);
    }
    return n;
}

size_t tx_memory(const HttpTx& t) {
    size_t n = sizeof(HttpTx);
    for (const std::string* s : {&t.method,
                                 &t.uri,
                                 &t.uri_raw,
                                 &t.protocol,
                                 &t.request_line,
                                 &t.request_headers,
                                 &t.request_headers_raw,
                                 &t.request_header_names,
                                 &t.cookie,
                                 &t.user_agent,
                                 &t.host,
                                 &t.host_raw,
                                 &t.content_type_req,
                                 &t.content_len_req,
                                 &t.referer,
                                 &t.accept,
                                 &t.accept_enc,
                                 &t.accept_lang,
                                 &t.connection,
                                 &t.request_body,
                                 &t.request_start,
                                 &t.response_protocol,
                                 &t.stat_code,
                                 &t.stat_msg,
                                 &t.response_line,
                                 &t.response_headers,
                                 &t.response_headers_raw,
                                 &t.response_header_names,
                                 &t.response_cookie,
                                 &t.content_type_resp,
                                 &t.content_len_resp,
                                 &t.location,
                                 &t.server,
                                 &t.response_body,
                                 &t.response_start}) {
        n += heap(*s);
    }
    return n + heap(t.request_header_list) + heap(t.response_header_list);
}

// zlib allocations are counted so that memory() includes the inflate state and window.
struct ZAlloc {
    size_t bytes = 0;
};

voidpf zalloc_counted(voidpf opaque, uInt items, uInt size) {
    size_t n = static_cast<size_t>(items) * size;
    auto* p = static_cast<size_t*>(std::malloc(n + 16));
    if (p == nullptr) {
        return Z_NULL;
    }
    p[0] = n;
    static_cast<ZAlloc*>(opaque)->bytes += n + 16;
    return reinterpret_cast<uint8_t*>(p) + 16;
}

void zfree_counted(voidpf opaque, voidpf addr) {
    if (addr == nullptr) {
        return;
    }
    auto* p = reinterpret_cast<size_t*>(static_cast<uint8_t*>(addr) - 16);
    static_cast<ZAlloc*>(opaque)->bytes -= p[0] + 16;
    std::free(p);
}

// liblzma allocates through the same counter.
void* lzma_alloc_counted(void* opaque, size_t nmemb, size_t size) {
    if (size != 0 && nmemb > SIZE_MAX / 2 / size) {
        return nullptr;
    }
    size_t n = nmemb * size;
    auto* p = static_cast<size_t*>(std::malloc(n + 16));
    if (p == nullptr) {
        return nullptr;
    }
    p[0] = n;
    static_cast<ZAlloc*>(opaque)->bytes += n + 16;
    return reinterpret_cast<uint8_t*>(p) + 16;
}

void lzma_free_counted(void* opaque, void* addr) {
    zfree_counted(opaque, addr);
}

// zlib's inflate state plus a 32 KiB window, with slack; used by memory_bound().
constexpr size_t kInflateBound = 64 * 1024 + 2048;
// An lzma layer: the decoder's own state beyond its memlimit-capped dictionary, with slack.
constexpr size_t kLzmaOverhead = 128 * 1024;
// The LZMA "alone" header: properties byte, 32-bit dictionary size, 64-bit size.
constexpr size_t kLzmaPropsSize = 5;

// The dictionary an lzma layer allocates: the largest power of two within half the memlimit
// (the decoder's other state fits in the other half), at least 4 KiB, never more than the
// stream asks for. libhtp grows its dictionary on demand up to the memlimit instead; both
// decode what stays within the window and fail on what reaches further back.
uint32_t lzma_dict_cap(size_t memlimit, uint32_t wanted) {
    uint64_t cap = 4096;
    while (cap * 2 <= memlimit / 2 && cap < (uint64_t{1} << 30)) {
        cap *= 2;
    }
    return static_cast<uint32_t>(std::min<uint64_t>(cap, std::max<uint32_t>(wanted, 4096)));
}

// "lzma" as libhtp compares it: case-insensitive, NUL bytes ignored.
bool is_lzma_token(std::string_view tok) {
    std::string_view want = "lzma";
    size_t j = 0;
    for (char c : tok) {
        if (c == '\0') {
            continue;
        }
        char lc = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
        if (j >= want.size() || lc != want[j]) {
            return false;
        }
        ++j;
    }
    return j == want.size();
}

}  // namespace

const char* event_name(Event e) {
    size_t i = static_cast<size_t>(e);
    return i < kEventCount ? kEventNames[i] : "unknown";
}

void HttpCounters::export_stats(StatsSnapshot& out) const {
    out.add("app_layer.http.transactions", transactions.get());
    out.add("app_layer.http.memuse", memuse.get());
    out.add("app_layer.http.flows_abandoned", flows_abandoned.get());
    std::string name = "app_layer.http.events.";
    size_t base = name.size();
    for (size_t i = 0; i < kEventCount; ++i) {
        name.resize(base);
        name += kEventNames[i];
        out.add(name, events[i].get());
    }
}

// ---------------------------------------------------------------------------------------
// Per-direction state.

namespace {

enum class St : uint8_t {
    kStartLine,     // request line / status line (empty lines before it are skipped)
    kHeaders,       // header lines until the empty line
    kBodyLength,    // Content-Length body, `remaining` bytes left
    kChunkSize,     // chunk-size line
    kChunkData,     // chunk data, `remaining` bytes left
    kChunkDataEnd,  // the CRLF after chunk data
    kTrailers,      // trailer lines after the last chunk
    kBodyClose,     // body until the connection closes
    kBodyHeadless,  // response body without a head, until a line that starts with "HTTP"
    kIgnore,        // tunnel, CONNECT waiting for its answer, or closed
};

// Content-Encoding layers decoded at most (libhtp's response-body-decompress-layer-limit
// is a config value; this bounds the state whatever it says).
constexpr size_t kMaxLayers = 4;
// Bytes a layer keeps before its first output, to pass them on if they were not compressed.
constexpr size_t kLayerHeadMax = 1024;

}  // namespace

struct HttpParser::DirState {
    St st = St::kStartLine;
    std::string line;
    bool line_cr = false;        // the line's terminator had a CR
    bool line_overflow = false;  // dropping the rest of a too-long line
    uint8_t line_last = 0;       // last raw byte of the line (CR detection past the limit)
    uint64_t line_len = 0;       // raw bytes of the line so far
    bool crlf_event = false;     // missing_crlf already raised for this message
    bool prev_bare_lf = false;   // to_client head: the previous line ended with a bare LF
    std::string pending_name;    // to_client head: a line without colon a fold may complete
    bool header_overflow = false;
    size_t header_bytes = 0;
    std::vector<Header> hdrs;       // head (or trailers) being collected
    std::string raw;                // raw head bytes
    size_t last_header = SIZE_MAX;  // index folded lines continue
    bool in_trailers = false;
    HttpTx* tx = nullptr;
    uint64_t remaining = 0;
    uint64_t next_resp_id = 0;       // to_client: the transaction the next response answers
    bool connect_wait = false;       // to_server: CONNECT sent, answer pending
    bool headless_mid_line = false;  // kBodyHeadless: inside a line (else at a line start)
    size_t boundary = 0;

    // Body decompression: one layer per Content-Encoding coding (libhtp's chain), each
    // telling gzip / zlib / raw deflate apart by itself and passing data through unchanged
    // when it turns out not to be compressed at all.
    struct Layer {
        enum Mode : uint8_t { kDetect, kGzipHeader, kInflate, kPass, kDone };
        Mode mode = kDetect;
        bool lzma = false;       // an lzma layer (else gzip / zlib / raw deflate)
        bool inflating = false;  // zs (or ls, for lzma) initialised
        bool produced = false;   // inflate gave output (no passthrough any more)
        bool head_overflow = false;
        uint8_t gz_flags = 0;
        uint8_t gz_state = 0;  // gzip header: 0 fixed, 1 xlen, 2 extra, 3 name, 4 comment, 5 hcrc
        uint32_t gz_need = 0;
        uint32_t gz_pos = 0;
        std::string head;  // bytes taken before the first output (for passthrough)
        z_stream zs{};
        lzma_stream ls{};  // all zero: LZMA_STREAM_INIT
    };
    std::array<Layer, kMaxLayers> layers;
    size_t nlayers = 0;
    bool inflate_done = false;
    uint64_t in_total = 0, out_total = 0;
    ZAlloc zalloc;
    lzma_allocator lzalloc{lzma_alloc_counted, lzma_free_counted, &zalloc};

    ~DirState() { end_inflate(); }
    void end_layer(Layer& l) {
        if (l.inflating) {
            if (l.lzma) {
                lzma_end(&l.ls);
            } else {
                inflateEnd(&l.zs);
            }
            l.inflating = false;
        }
        l.head.clear();
        l.head.shrink_to_fit();
    }
    void end_inflate() {
        for (Layer& l : layers) {
            end_layer(l);
        }
    }
    void reset_message() {
        st = St::kStartLine;
        crlf_event = false;
        prev_bare_lf = false;
        pending_name.clear();
        header_overflow = false;
        header_bytes = 0;
        hdrs.clear();
        raw.clear();
        last_header = SIZE_MAX;
        in_trailers = false;
        tx = nullptr;
        remaining = 0;
        headless_mid_line = false;
        end_inflate();
        for (Layer& l : layers) {
            l = Layer{};
        }
        nlayers = 0;
        inflate_done = false;
        in_total = out_total = 0;
    }
    size_t memory() const {
        size_t n = sizeof(DirState) + heap(line) + heap(hdrs) + heap(raw) + heap(pending_name) +
                   zalloc.bytes;
        for (const Layer& l : layers) {
            n += heap(l.head);
        }
        return n;
    }
};

// Internal helpers that need the private state; kept out of the header.
struct ParserAccess {
    HttpParser& p;
    Dir dir;
    HttpParser::DirState& d;
    const HttpConfig& cfg;
    uint64_t lo = UINT64_MAX, hi = 0;

    void mark(const HttpTx* t) {
        if (t != nullptr) {
            lo = std::min(lo, t->id);
            hi = std::max(hi, t->id);
        }
    }
    FeedResult result() const {
        FeedResult r;
        if (lo != UINT64_MAX) {
            r.first_id = lo;
            r.count = static_cast<uint32_t>(hi - lo + 1);
        }
        r.failed = p.failed_;
        return r;
    }
    void event(Event e, HttpTx* t) {
        p.ctr_->count(e);
        if (t != nullptr) {
            t->events.set(e);
        }
    }
    void events(const EventSet& es, HttpTx* t) {
        for (size_t i = 0; i < kEventCount; ++i) {
            if (es.has(static_cast<Event>(i))) {
                event(static_cast<Event>(i), t);
            }
        }
    }
    bool request() const { return dir == Dir::kToServer; }

    HttpTx* new_tx() {
        if (p.txs_.size() >= cfg.max_pipelined) {
            // Make room with completed transactions, but not with those completed during this
            // call: the caller has not run detection on their final state yet.
            p.release_before(lo);
        }
        if (p.txs_.size() >= cfg.max_pipelined || cfg.max_pipelined == 0) {
            event(Event::kTooManyTransactions, nullptr);
            p.abandon();
            return nullptr;
        }
        auto t = std::make_unique<HttpTx>();
        t->id = p.next_id_++;
        HttpTx* raw = t.get();
        p.txs_.push_back(std::move(t));
        ++p.ctr_->transactions;
        mark(raw);
        return raw;
    }

    // ---- lines

    // Returns false when the line is still incomplete (all of data consumed). The buffer
    // holds at most max_line_bytes + 1 bytes (room for a CR); the rest of a longer line is
    // dropped and the line truncated (line_too_long).
    bool take_line(const uint8_t* data, size_t len, size_t* pos) {
        const uint8_t* start = data + *pos;
        size_t avail = len - *pos;
        const void* nl = std::memchr(start, '\n', avail);
        size_t n =
            nl == nullptr ? avail : static_cast<size_t>(static_cast<const uint8_t*>(nl) - start);
        if (!d.line_overflow) {
            size_t room = cfg.max_line_bytes + 1 - d.line.size();
            size_t take = std::min(n, room);
            d.line.append(reinterpret_cast<const char*>(start), take);
            d.line_overflow = take < n;
        }
        if (n > 0) {
            d.line_last = start[n - 1];
            d.line_len += n;
        }
        *pos += nl == nullptr ? avail : n + 1;
        if (nl == nullptr) {
            return false;
        }
        d.line_cr = d.line_len > 0 && d.line_last == '\r';
        if (d.line_cr && !d.line_overflow) {
            d.line.pop_back();
        }
        if (d.line_overflow || d.line.size() > cfg.max_line_bytes) {
            d.line.resize(std::min(d.line.size(), cfg.max_line_bytes));
            event(Event::kLineTooLong, d.tx);
        }
        d.line_overflow = false;
        d.line_len = 0;
        return true;
    }

    void check_crlf() {
        if (!d.line_cr && !d.crlf_event && d.tx != nullptr) {
            d.crlf_event = true;
            event(Event::kMissingCrlf, d.tx);
        }
    }

    // ---- start lines

    void request_line(std::string_view line) {
        std::string_view l = trim(line);
        size_t sp1 = l.find_first_of(" \t");
        std::string_view method = l.substr(0, sp1);
        bool token = !method.empty();
        for (char c : method) {
            token = token && is_tchar(static_cast<uint8_t>(c));
        }
        if (sp1 == std::string_view::npos || !token) {
            event(Event::kInvalidRequestLine, nullptr);
            p.abandon();
            return;
        }
        std::string_view rest = trim(l.substr(sp1));
        std::string_view uri = rest, proto;
        size_t sp2 = rest.find_last_of(" \t");
        if (sp2 != std::string_view::npos) {
            uri = trim(rest.substr(0, sp2));
            proto = rest.substr(sp2 + 1);
        }
        HttpTx* t = new_tx();
        if (t == nullptr) {
            return;
        }
        d.tx = t;
        t->method.assign(method);
        t->uri_raw.assign(uri);
        t->protocol.assign(proto);
        t->request_line.assign(line);
        if (!proto.empty() && !istarts_with(proto, "HTTP/")) {
            event(Event::kInvalidRequestLine, t);
        }
        if (!is_known_method(method)) {
            event(Event::kUnknownMethod, t);
        }
        if (line.find('\0') != std::string_view::npos) {
            event(Event::kNulByte, t);
        }
        // Absolute form: the authority gives the host; http.uri is the path and query.
        std::string_view path = uri;
        if (istarts_with(uri, "http://") || istarts_with(uri, "https://")) {
            size_t a = uri.find("://") + 3;
            size_t e = uri.find_first_of("/?", a);
            std::string_view auth =
                uri.substr(a, e == std::string_view::npos ? std::string_view::npos : e - a);
            size_t at = auth.rfind('@');
            if (at != std::string_view::npos) {
                auth.remove_prefix(at + 1);
            }
            t->host_raw.assign(auth);
            path = e == std::string_view::npos ? std::string_view("/") : uri.substr(e);
        }
        if (iequals(method, "CONNECT") || path == "*") {
            t->uri.assign(uri);
        } else {
            EventSet es;
            t->uri = normalize_uri(path, cfg, &es);
            events(es, t);
        }
        t->request_progress = HttpTx::kRequestLine;
        if (proto.empty()) {
            // HTTP/0.9 simple request: no headers, no body.
            complete_request();
            return;
        }
        d.st = St::kHeaders;
    }

    static bool is_start_junk(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f' ||
               c == '\0';
    }
    static std::string_view skip_start_junk(std::string_view l) {
        while (!l.empty() && is_start_junk(l.front())) {
            l.remove_prefix(1);
        }
        return l;
    }

    // The transaction the next response answers (one is made up if no request waits).
    HttpTx* response_tx() {
        HttpTx* t = p.find_tx_mut(d.next_resp_id);
        if (t == nullptr) {
            t = new_tx();
            if (t == nullptr) {
                return nullptr;
            }
            // Nothing asked for this: an empty request, already complete.
            t->request_progress = HttpTx::kRequestComplete;
            event(Event::kUnmatchedResponse, t);
            d.next_resp_id = t->id;
        }
        d.tx = t;
        mark(t);
        return t;
    }

    // Where a status line is due, data that does not start with "HTTP" (after whitespace,
    // control bytes and NULs) is a body without a head: what browsers do with an HTTP/0.9
    // answer or bytes after a 204/304, and what libhtp does (htp_treat_response_line_as_body).
    // It lasts until the close or a line that looks like a status line (headless()).
    // line_complete: bytes end with the line's terminator.
    void response_without_head(std::string_view bytes, bool line_complete) {
        HttpTx* t = response_tx();
        if (t == nullptr) {
            return;
        }
        event(Event::kInvalidStatusLine, t);
        d.st = St::kBodyHeadless;
        d.headless_mid_line = !line_complete;
        body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }

    // libhtp's htp_is_space (no NUL).
    static bool is_htp_space(char c) {
        return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
    }
    // Bytes collected at a line start of a head-less body before giving up on "HTTP".
    static constexpr size_t kHeadlessProbeMax = 64;

    // A head-less body, line by line as libhtp's RES_LINE / RES_FINALIZE read it: a line that
    // starts with "HTTP" (case-insensitive, after whitespace) ends this response and is the
    // status line of the next one (" foobar\r\nHTTP/1.1 200 ok..." is a junk line, then a
    // response: http-evader 487); any other line is more body. Only a line start is
    // buffered (in d.line, at most kHeadlessProbeMax bytes); the rest streams to the body.
    void headless(const uint8_t* data, size_t len, size_t* pos) {
        while (*pos < len && d.st == St::kBodyHeadless && !p.failed_) {
            if (d.headless_mid_line) {
                const uint8_t* start = data + *pos;
                const void* nl = std::memchr(start, '\n', len - *pos);
                size_t n = nl == nullptr
                               ? len - *pos
                               : static_cast<size_t>(static_cast<const uint8_t*>(nl) - start) + 1;
                body(start, n);
                *pos += n;
                d.headless_mid_line = nl == nullptr;
                continue;
            }
            char c = static_cast<char>(data[(*pos)++]);
            d.line.push_back(c);
            std::string_view l = d.line;
            while (!l.empty() && is_htp_space(l.front())) {
                l.remove_prefix(1);
            }
            size_t n = std::min<size_t>(l.size(), 4);
            bool http = iequals(l.substr(0, n), std::string_view("HTTP").substr(0, n));
            if (c == '\n' || !http || d.line.size() > kHeadlessProbeMax) {
                std::string bytes;
                bytes.swap(d.line);
                d.headless_mid_line = c != '\n';
                body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
                continue;
            }
            if (n == 4) {
                // The status line of the next response: its start stays in d.line, where
                // take_line goes on collecting it.
                cur_pos = *pos >= d.line.size() ? *pos - d.line.size() : 0;
                complete();
                d.line_len = d.line.size();
                d.line_last = static_cast<uint8_t>(d.line.back());
                d.line_overflow = false;
                return;
            }
        }
    }

    // A partial line where a status line is due that can no longer start with "HTTP".
    bool partial_status_not_http() const {
        std::string_view l = skip_start_junk(d.line);
        size_t n = std::min<size_t>(l.size(), 4);
        return n > 0 && !iequals(l.substr(0, n), std::string_view("HTTP").substr(0, n));
    }

    // Response status and header lines. A lone CR (not before the LF) also ends a line, as in
    // libhtp and browsers ("200 ok\rTransfer-Encoding: chunked", "Content-Encoding:\r gzip"
    // folded); empty pieces between lone CRs are dropped ("\n\r" line ends). An empty or
    // whitespace-only line ("\n \n", "\n\t\n") ends the head.
    void response_head_line(std::string_view line) {
        const bool had_cr = d.line_cr;
        // "\n\r" ends a line as one terminator: the CR after a bare LF is dropped.
        if (d.prev_bare_lf && !line.empty() && line.front() == '\r') {
            line.remove_prefix(1);
        }
        d.prev_bare_lf = !had_cr;
        // Only an empty line or a lone SP/HT before a bare LF ("\n \n", libhtp's
        // htp_connp_is_line_terminator) ends the head; " \r\n" or "\r\r\n" do not.
        const bool terminator = line.empty() || (line.size() == 1 && is_ws(line[0]) && !had_cr);
        size_t start = 0;
        while (!p.failed_) {
            size_t cr = line.find('\r', start);
            bool last = cr == std::string_view::npos;
            std::string_view seg = line.substr(start, last ? std::string_view::npos : cr - start);
            size_t seg_start = start;
            start = last ? line.size() : cr + 1;
            if (!last && seg.empty()) {
                continue;
            }
            d.line_cr = last ? had_cr : true;
            if (d.st == St::kStartLine) {
                std::string_view l = skip_start_junk(seg);
                if (l.empty()) {
                    if (last) {
                        break;
                    }
                    continue;
                }
                d.crlf_event = false;
                if (!istarts_with(l, "HTTP")) {
                    std::string bytes(line.substr(seg_start));
                    bytes.append(had_cr ? "\r\n" : "\n");
                    response_without_head(bytes, true);
                    break;
                }
                status_line(l);
                check_crlf();
            } else if (d.st == St::kHeaders || d.st == St::kTrailers) {
                if (last && terminator) {
                    d.raw.append(seg);
                    d.raw.append(d.line_cr ? "\r\n" : "\n");
                    end_of_head();
                    break;
                }
                if (!trim(seg).empty()) {
                    header_line(seg);
                }
            } else {
                break;
            }
            if (last) {
                break;
            }
        }
        d.line_cr = had_cr;
    }

    void status_line(std::string_view line) {
        std::string_view l = trim(line);
        if (!istarts_with(l, "HTTP")) {
            event(Event::kInvalidStatusLine, nullptr);
            p.abandon();
            return;
        }
        HttpTx* t = p.find_tx_mut(d.next_resp_id);
        if (t == nullptr) {
            t = new_tx();
            if (t == nullptr) {
                return;
            }
            // Nothing asked for this: an empty request, already complete.
            t->request_progress = HttpTx::kRequestComplete;
            event(Event::kUnmatchedResponse, t);
            d.next_resp_id = t->id;
        }
        d.tx = t;
        mark(t);
        size_t sp1 = l.find_first_of(" \t");
        std::string_view proto = l.substr(0, sp1);
        std::string_view rest =
            sp1 == std::string_view::npos ? std::string_view() : trim(l.substr(sp1));
        size_t sp2 = rest.find_first_of(" \t");
        std::string_view code = rest.substr(0, sp2);
        std::string_view msg =
            sp2 == std::string_view::npos ? std::string_view() : trim(rest.substr(sp2));
        t->response_protocol.assign(proto);
        t->stat_code.assign(code);
        t->stat_msg.assign(msg);
        t->response_line.assign(line);
        bool ok = code.size() == 3;
        uint16_t status = 0;
        for (char c : code) {
            ok = ok && c >= '0' && c <= '9';
            status = static_cast<uint16_t>(status * 10 + (c - '0'));
        }
        t->status = ok ? status : 0;
        if (!ok) {
            event(Event::kInvalidStatusLine, t);
        }
        t->response_progress = HttpTx::kResponseLine;
        d.st = St::kHeaders;
    }

    // ---- headers

    void header_line(std::string_view line) {
        size_t add = line.size() + (d.line_cr ? 2 : 1);
        if (d.header_overflow) {
            return;
        }
        if (d.header_bytes + add > cfg.max_header_bytes) {
            d.header_overflow = true;
            event(Event::kHeaderTooLong, d.tx);
            return;
        }
        d.header_bytes += add;
        d.raw.append(line);
        d.raw.append(d.line_cr ? "\r\n" : "\n");
        if (!request()) {
            if (folded(line)) {
                if (response_fold(line)) {
                    return;
                }
            } else {
                d.pending_name.clear();
            }
        }
        if (folded(line) && d.last_header < d.hdrs.size()) {
            // obs-fold (RFC 9112 5.2): joined to the previous field with one space.
            std::string_view more = trim(line);
            if (!more.empty()) {
                std::string& v = d.hdrs[d.last_header].value;
                if (!v.empty()) {
                    v.push_back(' ');
                }
                v.append(more);
            }
            return;
        }
        parse_field(line);
    }

    // obs-fold continuation line. In responses a leading NUL folds too, as libhtp's
    // htp_is_folding_char has it ("Content-Encoding:\n\0gzip" is gzip; http-evader 327).
    bool folded(std::string_view line) const {
        return !line.empty() && (is_ws(line[0]) || (!request() && line[0] == '\0'));
    }

    // Response heads, as libhtp and browsers read them: a name whose colon comes on a folded
    // continuation line ("Transfer-Encoding\r\n :chunked") is joined to it, and a folded line
    // that is itself "Name: value" (" Transfer-Encoding: chunked") is a field of its own.
    bool response_fold(std::string_view line) {
        std::string_view more = trim(line);
        if (!d.pending_name.empty()) {
            std::string joined = d.pending_name;
            if (!more.empty()) {
                joined.push_back(' ');
                joined.append(more);
            }
            d.pending_name.clear();
            if (joined.find(':') != std::string::npos) {
                parse_field(joined);
            } else if (joined.size() <= cfg.max_line_bytes) {
                d.pending_name = std::move(joined);
            }
            return true;
        }
        size_t colon = more.find(':');
        if (colon == std::string_view::npos || colon == 0) {
            return false;
        }
        std::string_view name = more.substr(0, colon);
        bool letter = false, token = true;
        for (char c : name) {
            letter = letter || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            token = token && is_tchar(static_cast<uint8_t>(c));
        }
        if (!letter || !token) {
            return false;
        }
        parse_field(line);
        return true;
    }

    void parse_field(std::string_view line) {
        std::string_view l = line;
        if (!l.empty() && is_ws(l[0])) {
            event(Event::kInvalidHeaderName, d.tx);
            l = trim(l);
        }
        size_t colon = l.find(':');
        if (colon == std::string_view::npos) {
            event(Event::kMissingColon, d.tx);
            d.last_header = SIZE_MAX;
            if (!request() && !l.empty() && l.size() <= cfg.max_line_bytes) {
                d.pending_name.assign(l);  // its colon may come on a folded line
            }
            return;
        }
        std::string_view name = l.substr(0, colon);
        std::string_view value = trim(l.substr(colon + 1));
        std::string_view tname = trim(name);
        bool valid = !tname.empty() && tname.size() == name.size();
        for (char c : tname) {
            valid = valid && is_tchar(static_cast<uint8_t>(c));
        }
        if (!valid) {
            event(Event::kInvalidHeaderName, d.tx);
        }
        if (tname.empty()) {
            d.last_header = SIZE_MAX;
            return;
        }
        for (size_t i = 0; i < d.hdrs.size(); ++i) {
            if (iequals(d.hdrs[i].name, tname)) {
                d.hdrs[i].value.append(", ");
                d.hdrs[i].value.append(value);
                d.last_header = i;
                return;
            }
        }
        if (d.hdrs.size() >= cfg.max_header_count) {
            if (!d.header_overflow) {
                d.header_overflow = true;
                event(Event::kHeaderTooLong, d.tx);
            }
            return;
        }
        d.hdrs.push_back(Header{std::string(tname), std::string(value)});
        d.last_header = d.hdrs.size() - 1;
    }

    // http.header / http.header_names / http.start from the header list (Suricata 7's
    // detect-http-header*.c, detect-http-start.c layouts).
    static void build(const std::vector<Header>& list, const std::string& start_line,
                      std::string_view skip, std::string* headers, std::string* names,
                      std::string* start) {
        headers->clear();
        names->clear();
        start->clear();
        start->append(start_line).append("\r\n");
        for (const Header& h : list) {
            if (!iequals(h.name, skip)) {
                headers->append(h.name).append(": ").append(h.value).append("\r\n");
            }
            names->append("\r\n").append(h.name);
            start->append(h.name).append(": ").append(h.value).append("\r\n");
        }
        if (!list.empty()) {
            names->append("\r\n\r\n");
            start->append("\r\n");
        }
    }

    void fill_request_fields(HttpTx* t) {
        const auto& l = t->request_header_list;
        build(l, t->request_line, "cookie", &t->request_headers, &t->request_header_names,
              &t->request_start);
        t->cookie = header_value(l, "cookie");
        t->user_agent = header_value(l, "user-agent");
        t->content_type_req = header_value(l, "content-type");
        t->content_len_req = header_value(l, "content-length");
        t->referer = header_value(l, "referer");
        t->accept = header_value(l, "accept");
        t->accept_enc = header_value(l, "accept-encoding");
        t->accept_lang = header_value(l, "accept-language");
        t->connection = header_value(l, "connection");
    }

    void fill_response_fields(HttpTx* t) {
        const auto& l = t->response_header_list;
        build(l, t->response_line, "set-cookie", &t->response_headers, &t->response_header_names,
              &t->response_start);
        t->response_cookie = header_value(l, "set-cookie");
        t->content_type_resp = header_value(l, "content-type");
        t->content_len_resp = header_value(l, "content-length");
        t->location = header_value(l, "location");
        t->server = header_value(l, "server");
    }

    // Number of decoding layers for a Content-Encoding value (libhtp): the value is split on
    // commas and spaces; a token containing "gzip" or "deflate" (case-insensitive: x-gzip,
    // x-deflate...) adds a layer, anything else ("identity", unknown codings) is skipped. Every
    // layer detects the actual format itself, so the order does not matter.
    // With lzma_enabled, a token that is exactly "lzma" (NULs ignored) adds an lzma layer.
    size_t layers_of(const std::vector<Header>& l) {
        for (auto& layer : d.layers) {
            layer.lzma = false;
        }
        const Header* h = find_header_loose(l, "content-encoding");
        if (h == nullptr) {
            return 0;
        }
        size_t limit = cfg.decompress_layer_limit == 0
                           ? kMaxLayers
                           : std::min(cfg.decompress_layer_limit, kMaxLayers);
        size_t n = 0;
        std::string_view v = h->value;
        while (!v.empty() && n < limit) {
            size_t e = v.find_first_of(", ");
            std::string_view tok = v.substr(0, e);
            if (icontains(tok, "gzip") || icontains(tok, "deflate")) {
                ++n;
            } else if (cfg.lzma_enabled && is_lzma_token(tok)) {
                d.layers[n++].lzma = true;
            }
            if (e == std::string_view::npos) {
                break;
            }
            v.remove_prefix(e + 1);
        }
        return n;
    }

    // Sets up the body framing from the head's headers. Returns false if there is no body.
    bool frame_body(const std::vector<Header>& l, HttpTx* t, bool until_close_allowed) {
        // Responses follow libhtp: the framing fields are found with NULs and stray
        // whitespace in their names ignored, and any Transfer-Encoding value that contains
        // "chunked" ("chunked x", "x chunked", two fields joined) means chunked. A body that
        // then does not parse as chunks is taken as sent (see chunk_size()).
        const Header* te = request() ? find_header(l, "transfer-encoding")
                                     : find_header_loose(l, "transfer-encoding");
        const Header* cl =
            request() ? find_header(l, "content-length") : find_header_loose(l, "content-length");
        bool chunked =
            te != nullptr && (request() ? is_chunked(te->value) : contains_chunked(te->value));
        if (chunked) {
            if (cl != nullptr) {
                event(Event::kChunkedAndContentLength, t);
            }
            (request() ? t->request_chunked : t->response_chunked) = true;
            d.st = St::kChunkSize;
            return true;
        }
        if (cl != nullptr) {
            uint64_t n = 0;
            if (parse_content_length(cl->value, &n)) {
                if (n == 0) {
                    return false;
                }
                d.remaining = n;
                d.st = St::kBodyLength;
                return true;
            }
            event(Event::kInvalidContentLength, t);
        }
        if (until_close_allowed) {
            d.st = St::kBodyClose;
            return true;
        }
        return false;
    }

    void end_of_head() {
        HttpTx* t = d.tx;
        d.boundary = cur_pos;
        if (d.in_trailers) {
            // Trailer fields join the head's fields (as Suricata's header buffers do).
            auto& list = request() ? t->request_header_list : t->response_header_list;
            for (Header& h : d.hdrs) {
                auto found = std::find_if(list.begin(), list.end(),
                                          [&](const Header& x) { return iequals(x.name, h.name); });
                if (found != list.end()) {
                    found->value.append(", ").append(h.value);
                } else if (list.size() < cfg.max_header_count) {
                    list.push_back(std::move(h));
                }
            }
            if (request()) {
                fill_request_fields(t);
            } else {
                fill_response_fields(t);
            }
            complete();
            return;
        }
        if (request()) {
            t->request_header_list = std::move(d.hdrs);
            t->request_headers_raw = std::move(d.raw);
            d.hdrs.clear();
            d.raw.clear();
            fill_request_fields(t);
            std::string host_hdr = header_value(t->request_header_list, "host");
            if (t->host_raw.empty()) {
                t->host_raw = host_hdr;
            }
            t->host = normalize_host(t->host_raw);
            if (t->host_raw.empty() && find_header(t->request_header_list, "host") == nullptr &&
                iequals(t->protocol, "HTTP/1.1")) {
                event(Event::kMissingHost, t);
            }
            t->request_progress = HttpTx::kRequestHeaders;
            mark(t);
            if (iequals(t->method, "CONNECT")) {
                complete_request();
                d.connect_wait = true;
                d.st = St::kIgnore;
                return;
            }
            if (frame_body(t->request_header_list, t, false)) {
                d.nlayers = cfg.decompress_request ? layers_of(t->request_header_list) : 0;
                d.header_bytes = 0;
                return;
            }
            complete_request();
            return;
        }
        t->response_header_list = std::move(d.hdrs);
        t->response_headers_raw = std::move(d.raw);
        d.hdrs.clear();
        d.raw.clear();
        fill_response_fields(t);
        t->response_progress = HttpTx::kResponseHeaders;
        mark(t);
        uint16_t s = t->status;
        if (s >= 100 && s < 200 && s != 101) {
            // Interim response (100 Continue): the final one follows for the same request.
            t->response_protocol.clear();
            t->stat_code.clear();
            t->stat_msg.clear();
            t->response_line.clear();
            t->response_headers.clear();
            t->response_headers_raw.clear();
            t->response_header_names.clear();
            t->response_start.clear();
            t->response_cookie.clear();
            t->content_type_resp.clear();
            t->content_len_resp.clear();
            t->location.clear();
            t->server.clear();
            t->response_header_list.clear();
            t->status = 0;
            t->response_progress = HttpTx::kResponseNew;
            d.reset_message();
            return;
        }
        bool connect = iequals(t->method, "CONNECT");
        if (s == 101 || (connect && s >= 200 && s < 300)) {
            complete();
            p.tunnel_ = true;
            return;
        }
        if (connect) {
            // Refused CONNECT: the client may send further requests.
            HttpParser::DirState& req = *p.dir_[0];
            if (req.connect_wait) {
                req.connect_wait = false;
                req.st = St::kStartLine;
            }
        }
        // 204 / 304 have no body, unless the head frames one anyway: browsers read it, and so
        // does libhtp ("Unexpected Response body"; http-evader 476: 204 + chunked). Unlike
        // libhtp, a 304's Content-Length alone frames nothing: RFC 9110 8.6 lets it announce
        // the size of the representation, and real servers send it.
        const auto& rl = t->response_header_list;
        bool framed = find_header_loose(rl, "transfer-encoding") != nullptr ||
                      (s == 204 && find_header_loose(rl, "content-length") != nullptr);
        if (iequals(t->method, "HEAD") || ((s == 204 || s == 304) && !framed)) {
            complete();
            return;
        }
        if (frame_body(t->response_header_list, t, true)) {
            d.nlayers = cfg.decompress_response ? layers_of(t->response_header_list) : 0;
            d.header_bytes = 0;
            return;
        }
        complete();
    }

    void complete_request() {
        HttpTx* t = d.tx;
        t->request_progress = HttpTx::kRequestComplete;
        mark(t);
        d.boundary = cur_pos;
        bool cw = d.connect_wait;
        d.reset_message();
        d.connect_wait = cw;
    }

    void complete() {
        if (request()) {
            complete_request();
            return;
        }
        HttpTx* t = d.tx;
        t->response_progress = HttpTx::kResponseComplete;
        mark(t);
        d.boundary = cur_pos;
        d.reset_message();
        d.next_resp_id = t->id + 1;
    }

    // ---- bodies

    // Appends to the kept body; returns false once the body is full (nothing more wanted).
    bool keep(const uint8_t* data, size_t n) {
        HttpTx* t = d.tx;
        std::string& body = request() ? t->request_body : t->response_body;
        bool& trunc = request() ? t->request_body_truncated : t->response_body_truncated;
        size_t limit = request() ? cfg.request_body_limit : cfg.response_body_limit;
        size_t room = limit > body.size() ? limit - body.size() : 0;
        if (n > room) {
            trunc = true;
            n = room;
        }
        if (n > 0) {
            body.append(reinterpret_cast<const char*>(data), n);
            mark(t);
        }
        return !trunc;
    }

    void inflate_bytes(const uint8_t* data, size_t n) {
        if (d.inflate_done) {
            return;
        }
        d.in_total += n;
        if (!push(0, data, n)) {
            stop_inflate();
        }
    }

    // The decoded output: counted against the bomb guards and kept. False: stop decoding.
    bool sink(const uint8_t* data, size_t n) {
        HttpTx* t = d.tx;
        size_t allowed = n;
        if (d.out_total + n > cfg.decompress_limit) {
            allowed = cfg.decompress_limit - std::min<uint64_t>(d.out_total, cfg.decompress_limit);
        }
        d.out_total += n;
        bool more = keep(data, allowed);
        if (allowed < n ||
            (d.out_total > 64 * 1024 &&
             d.out_total > d.in_total * static_cast<uint64_t>(cfg.decompress_max_ratio))) {
            event(Event::kDecompressionBomb, t);
            (request() ? t->request_body_truncated : t->response_body_truncated) = true;
            return false;
        }
        // Body full: nothing more to inspect, stop spending CPU.
        return more;
    }

    void remember(HttpParser::DirState::Layer& l, const uint8_t* data, size_t n) {
        if (l.produced || l.head_overflow) {
            return;
        }
        if (l.head.size() + n > kLayerHeadMax) {
            l.head_overflow = true;
            l.head.clear();
            l.head.shrink_to_fit();
            return;
        }
        l.head.append(reinterpret_cast<const char*>(data), n);
    }

    bool start_inflate(HttpParser::DirState::Layer& l, int bits) {
        l.zs = z_stream{};
        l.zs.zalloc = zalloc_counted;
        l.zs.zfree = zfree_counted;
        l.zs.opaque = &d.zalloc;
        if (inflateInit2(&l.zs, bits) != Z_OK) {
            event(Event::kDecompressionError, d.tx);
            l.mode = HttpParser::DirState::Layer::kDone;
            return false;
        }
        l.inflating = true;
        l.mode = HttpParser::DirState::Layer::kInflate;
        return true;
    }

    // The layer's input turned out not to be compressed: what it took goes on unchanged.
    bool pass_through(size_t li) {
        auto& l = d.layers[li];
        std::string h;
        h.swap(l.head);
        d.end_layer(l);
        if (l.head_overflow) {
            l.mode = HttpParser::DirState::Layer::kDone;
            return true;
        }
        l.mode = HttpParser::DirState::Layer::kPass;
        return push(li + 1, reinterpret_cast<const uint8_t*>(h.data()), h.size());
    }

    // Feeds layer li (li == nlayers: the kept body). False: stop decoding.
    bool push(size_t li, const uint8_t* data, size_t n) {
        using Layer = HttpParser::DirState::Layer;
        if (li >= d.nlayers) {
            return sink(data, n);
        }
        Layer& l = d.layers[li];
        size_t i = 0;
        while (i < n || l.mode == Layer::kPass) {
            switch (l.mode) {
                case Layer::kDone:
                    return true;
                case Layer::kPass:
                    return i < n ? push(li + 1, data + i, n - i) : true;
                case Layer::kDetect: {
                    if (l.lzma) {
                        // The properties and dictionary size first: the dictionary is capped.
                        while (l.head.size() < kLzmaPropsSize && i < n) {
                            l.head.push_back(static_cast<char>(data[i++]));
                        }
                        if (l.head.size() < kLzmaPropsSize) {
                            return true;
                        }
                        if (!start_lzma(l)) {
                            return true;
                        }
                        std::string h;
                        h.swap(l.head);
                        if (!lzma_layer(li, reinterpret_cast<const uint8_t*>(h.data()), h.size(),
                                        true)) {
                            return false;
                        }
                        break;
                    }
                    // Two bytes tell gzip (1f 8b), zlib (RFC 1950 header) and raw deflate apart.
                    while (l.head.size() < 2 && i < n) {
                        l.head.push_back(static_cast<char>(data[i++]));
                    }
                    if (l.head.size() < 2) {
                        return true;
                    }
                    auto b0 = static_cast<uint8_t>(l.head[0]), b1 = static_cast<uint8_t>(l.head[1]);
                    if (b0 == 0x1f && b1 == 0x8b) {
                        l.mode = Layer::kGzipHeader;
                        l.gz_pos = 2;
                        break;
                    }
                    bool zlib = (b0 & 0x0f) == 8 && (b0 >> 4) <= 7 && ((b0 << 8) | b1) % 31 == 0;
                    if (!start_inflate(l, zlib ? 15 : -15)) {
                        return true;
                    }
                    std::string h;
                    h.swap(l.head);
                    if (!inflate_layer(li, reinterpret_cast<const uint8_t*>(h.data()), h.size())) {
                        return false;
                    }
                    break;
                }
                case Layer::kGzipHeader: {
                    // Our own header parser: reserved flag bits are ignored (browsers do; zlib
                    // refuses them) and the trailer is never checked.
                    uint8_t c = data[i++];
                    remember(l, &c, 1);
                    bool done = false;
                    switch (l.gz_state) {
                        case 0:
                            if (l.gz_pos == 2 && c != 8) {
                                if (!pass_through(li)) {
                                    return false;
                                }
                                break;
                            }
                            if (l.gz_pos == 3) {
                                l.gz_flags = c;
                            }
                            if (++l.gz_pos == 10) {
                                l.gz_state = 1;
                                l.gz_pos = 0;
                                done = true;
                            }
                            break;
                        case 1:  // XLEN, little endian
                            l.gz_need |= static_cast<uint32_t>(c) << (8 * l.gz_pos);
                            if (++l.gz_pos == 2) {
                                l.gz_state = 2;
                                done = true;
                            }
                            break;
                        case 2:
                            if (--l.gz_need == 0) {
                                l.gz_state = 3;
                                done = true;
                            }
                            break;
                        case 3:
                        case 4:
                            if (c == 0) {
                                ++l.gz_state;
                                done = true;
                            }
                            break;
                        case 5:
                            if (++l.gz_pos == 2) {
                                l.gz_state = 6;
                                done = true;
                            }
                            break;
                        default:
                            break;
                    }
                    // Skip the optional parts whose flag is not set.
                    while (done && l.mode == Layer::kGzipHeader) {
                        done = false;
                        if (l.gz_state == 1 && !(l.gz_flags & 0x04)) {
                            l.gz_state = 3;
                        }
                        if (l.gz_state == 2 && l.gz_need == 0) {
                            l.gz_state = 3;
                        }
                        if (l.gz_state == 3 && !(l.gz_flags & 0x08)) {
                            l.gz_state = 4;
                        }
                        if (l.gz_state == 4 && !(l.gz_flags & 0x10)) {
                            l.gz_state = 5;
                        }
                        if (l.gz_state == 5 && !(l.gz_flags & 0x02)) {
                            l.gz_state = 6;
                        }
                        if (l.gz_state == 5) {
                            l.gz_pos = 0;
                        }
                        if (l.gz_state == 6) {
                            start_inflate(l, -15);
                        }
                    }
                    break;
                }
                case Layer::kInflate:
                    return l.lzma ? lzma_layer(li, data + i, n - i, false)
                                  : inflate_layer(li, data + i, n - i);
            }
        }
        return true;
    }

    // What follows one decompressor step of layer li (zlib or lzma), which produced `produced`
    // bytes in `out`: the layer's answer when it is done with this input (false: a later
    // layer failed), nullopt to keep stepping. A failure before any output means the body was
    // mislabelled (not compressed at all): it is inspected as sent. Corrupt data after some
    // output keeps what was decoded (as libhtp and browsers do); at the end of the stream a
    // bad trailer is not looked at.
    std::optional<bool> settle_step(size_t li, const uint8_t* out, size_t produced, bool error,
                                    bool stream_end) {
        auto& l = d.layers[li];
        if (error && !l.produced && produced == 0) {
            event(Event::kDecompressionError, d.tx);
            return pass_through(li);
        }
        if (produced > 0 && !l.produced) {
            l.produced = true;
            l.head.clear();
            l.head.shrink_to_fit();
        }
        if (produced > 0 && !push(li + 1, out, produced)) {
            return false;
        }
        if (error || stream_end) {
            if (error) {
                event(Event::kDecompressionError, d.tx);
            }
            d.end_layer(l);
            l.mode = HttpParser::DirState::Layer::kDone;
            return true;
        }
        return std::nullopt;
    }

    bool inflate_layer(size_t li, const uint8_t* data, size_t n) {
        auto& l = d.layers[li];
        remember(l, data, n);
        uint8_t out[16384];
        l.zs.next_in = const_cast<Bytef*>(data);
        l.zs.avail_in = static_cast<uInt>(n);
        while (true) {
            l.zs.next_out = out;
            l.zs.avail_out = sizeof(out);
            int rc = inflate(&l.zs, Z_NO_FLUSH);
            const size_t produced = sizeof(out) - l.zs.avail_out;
            const bool error = rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR;
            if (std::optional<bool> r = settle_step(li, out, produced, error, rc == Z_STREAM_END)) {
                return *r;
            }
            if (l.zs.avail_out != 0 || rc == Z_BUF_ERROR || produced == 0) {
                return true;
            }
        }
    }

    bool start_lzma(HttpParser::DirState::Layer& l) {
        l.ls = lzma_stream{};
        l.ls.allocator = &d.lzalloc;
        if (lzma_alone_decoder(&l.ls, cfg.lzma_memlimit) != LZMA_OK) {
            event(Event::kDecompressionError, d.tx);
            lzma_end(&l.ls);
            l.mode = HttpParser::DirState::Layer::kDone;
            return false;
        }
        l.inflating = true;
        l.mode = HttpParser::DirState::Layer::kInflate;
        return true;
    }

    // Feeds an lzma layer; header: data starts with the 5 property bytes, whose dictionary
    // size is capped (lzma_dict_cap) before the decoder sees it. Errors: settle_step().
    bool lzma_layer(size_t li, const uint8_t* data, size_t n, bool header) {
        auto& l = d.layers[li];
        remember(l, data, n);
        uint8_t props[kLzmaPropsSize];
        const uint8_t* in = data;
        if (header && n >= kLzmaPropsSize) {
            std::memcpy(props, data, kLzmaPropsSize);
            uint32_t dict =
                static_cast<uint32_t>(props[1]) | (static_cast<uint32_t>(props[2]) << 8) |
                (static_cast<uint32_t>(props[3]) << 16) | (static_cast<uint32_t>(props[4]) << 24);
            dict = lzma_dict_cap(cfg.lzma_memlimit, dict);
            for (int b = 0; b < 4; ++b) {
                props[1 + b] = static_cast<uint8_t>(dict >> (8 * b));
            }
            in = props;
        }
        uint8_t out[16384];
        size_t done_in = 0;
        // The patched header first, then the rest of data as is.
        while (true) {
            if (l.ls.avail_in == 0 && done_in < n) {
                if (in == props && done_in == 0) {
                    l.ls.next_in = props;
                    l.ls.avail_in = kLzmaPropsSize;
                    done_in = kLzmaPropsSize;
                } else {
                    l.ls.next_in = data + done_in;
                    l.ls.avail_in = n - done_in;
                    done_in = n;
                }
            }
            l.ls.next_out = out;
            l.ls.avail_out = sizeof(out);
            lzma_ret rc = lzma_code(&l.ls, LZMA_RUN);
            const size_t produced = sizeof(out) - l.ls.avail_out;
            const bool error = rc != LZMA_OK && rc != LZMA_STREAM_END && rc != LZMA_BUF_ERROR;
            if (std::optional<bool> r =
                    settle_step(li, out, produced, error, rc == LZMA_STREAM_END)) {
                return *r;
            }
            if (l.ls.avail_out != 0 && l.ls.avail_in == 0 && done_in >= n) {
                return true;
            }
            if (rc == LZMA_BUF_ERROR || (produced == 0 && l.ls.avail_in == 0 && done_in >= n)) {
                return true;
            }
        }
    }

    void stop_inflate() {
        d.inflate_done = true;
        d.end_inflate();
    }

    void body(const uint8_t* data, size_t n) {
        HttpTx* t = d.tx;
        if (request()) {
            t->request_body_bytes += n;
            if (t->request_progress < HttpTx::kRequestBody) {
                t->request_progress = HttpTx::kRequestBody;
                mark(t);
            }
        } else {
            t->response_body_bytes += n;
            if (t->response_progress < HttpTx::kResponseBody) {
                t->response_progress = HttpTx::kResponseBody;
                mark(t);
            }
        }
        if (d.nlayers == 0) {
            keep(data, n);
        } else {
            inflate_bytes(data, n);
        }
    }

    // Chunk-size line, parsed as libhtp does: leading CR/LF/SP/HT/VT/FF skipped (an empty line
    // is skipped altogether), then the hex digits; whatever follows them ("fx", "f,", ";ext")
    // is ignored. No hex digit at all, or a size over INT32_MAX, means the body is not chunked
    // after all: the line and the rest of the stream are the body as sent (browsers do the
    // same, and so must we or the payload goes unseen).
    void chunk_size(std::string_view line) {
        std::string_view s = line;
        while (!s.empty() && is_chunk_ctl(s.front())) {
            s.remove_prefix(1);
        }
        if (s.empty()) {
            return;
        }
        uint64_t n = 0;
        size_t sig = 0, digits = 0;
        for (char c : s) {
            int v = hex_value(c);
            if (v < 0) {
                break;
            }
            ++digits;
            if (sig > 0 || v != 0) {
                ++sig;
            }
            if (sig <= 15) {
                n = (n << 4) | static_cast<uint64_t>(v);
            }
        }
        if (digits == 0 || sig > 8 || n > 0x7fffffff) {
            event(digits == 0 ? Event::kInvalidChunkSize : Event::kChunkSizeTooLong, d.tx);
            not_chunked(line, true);
            return;
        }
        if (n == 0) {
            d.in_trailers = true;
            d.hdrs.clear();
            d.raw.clear();
            d.header_bytes = 0;
            d.header_overflow = false;
            d.last_header = SIZE_MAX;
            d.st = St::kTrailers;
            return;
        }
        d.remaining = n;
        d.st = St::kChunkData;
    }

    // The chunked framing does not hold: the pending line (and its terminator if complete)
    // and everything after it are the body, until the stream closes.
    void not_chunked(std::string_view line, bool terminated) {
        d.st = St::kBodyClose;
        std::string bytes(line);
        if (terminated) {
            bytes.append(d.line_cr ? "\r\n" : "\n");
        }
        body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }

    static bool is_chunk_ctl(char c) {
        return c == '\r' || c == '\n' || c == ' ' || c == '\t' || c == '\v' || c == '\f';
    }
    static int hex_value(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }
    // A chunk-size line still incomplete that cannot become valid (libhtp's
    // data_probe_chunk_length): the first byte past the control bytes is not hex.
    bool partial_chunk_line_invalid() const {
        for (char c : d.line) {
            if (!is_chunk_ctl(c)) {
                return hex_value(c) < 0;
            }
        }
        return false;
    }

    size_t cur_pos = 0;

    void run(const uint8_t* data, size_t len) {
        size_t pos = 0;
        while (pos < len && !p.failed_ && !p.tunnel_) {
            cur_pos = pos;
            switch (d.st) {
                case St::kIgnore:
                    pos = len;
                    break;
                case St::kBodyClose:
                    body(data + pos, len - pos);
                    pos = len;
                    break;
                case St::kBodyHeadless:
                    headless(data, len, &pos);
                    break;
                case St::kBodyLength:
                case St::kChunkData: {
                    size_t n = static_cast<size_t>(std::min<uint64_t>(d.remaining, len - pos));
                    body(data + pos, n);
                    pos += n;
                    d.remaining -= n;
                    cur_pos = pos;
                    if (d.remaining == 0) {
                        body_part_done();
                    }
                    break;
                }
                default: {
                    if (!take_line(data, len, &pos)) {
                        if (!request() && d.st == St::kStartLine && !d.line_overflow &&
                            partial_status_not_http()) {
                            std::string partial;
                            partial.swap(d.line);
                            d.line_len = 0;
                            response_without_head(partial, false);
                            break;
                        }
                        if (d.st == St::kChunkSize && !d.line_overflow &&
                            partial_chunk_line_invalid()) {
                            std::string partial;
                            partial.swap(d.line);
                            d.line_len = 0;
                            event(Event::kInvalidChunkSize, d.tx);
                            not_chunked(partial, false);
                        }
                        break;
                    }
                    cur_pos = pos;
                    std::string line;
                    line.swap(d.line);
                    on_line(line);
                    // Keep the buffer's capacity for the next line only if it is small.
                    if (line.capacity() <= 256) {
                        line.clear();
                        d.line.swap(line);
                    }
                    break;
                }
            }
        }
    }

    void body_part_done() {
        if (d.st == St::kChunkData) {
            d.st = St::kChunkDataEnd;
        } else {
            complete();
        }
    }

    void on_line(std::string_view line) {
        switch (d.st) {
            case St::kStartLine:
                if (!request()) {
                    response_head_line(line);
                    return;
                }
                if (line.empty()) {
                    return;  // RFC 9112 2.2: empty lines before a request are ignored
                }
                d.crlf_event = false;
                request_line(line);
                check_crlf();
                return;
            case St::kHeaders:
            case St::kTrailers:
                if (!request()) {
                    check_crlf();
                    response_head_line(line);
                    return;
                }
                check_crlf();
                if (line.empty()) {
                    d.raw.append(d.line_cr ? "\r\n" : "\n");
                    end_of_head();
                    return;
                }
                header_line(line);
                return;
            case St::kChunkSize:
                check_crlf();
                chunk_size(line);
                return;
            case St::kChunkDataEnd:
                check_crlf();
                if (line.empty()) {
                    d.boundary = cur_pos;
                    d.st = St::kChunkSize;
                    return;
                }
                // Data longer than its chunk size announced: the rest of the line is
                // skipped (libhtp's RES_BODY_CHUNKED_DATA_END consumes up to the LF).
                event(Event::kInvalidChunkSize, d.tx);
                d.boundary = cur_pos;
                d.st = St::kChunkSize;
                return;
            default:
                return;
        }
    }
};

// ---------------------------------------------------------------------------------------

HttpParser::HttpParser(const HttpConfig* config, HttpCounters* counters)
    : cfg_(config), ctr_(counters) {
    dir_[0] = std::make_unique<DirState>();
    dir_[1] = std::make_unique<DirState>();
    update_memuse();
}

HttpParser::~HttpParser() {
    uint64_t cur = ctr_->memuse.get();
    ctr_->memuse.set(cur >= reported_mem_ ? cur - reported_mem_ : 0);
}

HttpTx* HttpParser::find_tx_mut(uint64_t id) {
    if (txs_.empty() || id < txs_.front()->id || id > txs_.back()->id) {
        return nullptr;
    }
    return txs_[static_cast<size_t>(id - txs_.front()->id)].get();
}

const HttpTx* HttpParser::find_tx(uint64_t id) const {
    return const_cast<HttpParser*>(this)->find_tx_mut(id);
}

size_t HttpParser::release_completed() {
    return release_before(UINT64_MAX);
}

size_t HttpParser::release_before(uint64_t id_limit) {
    size_t n = 0;
    while (!txs_.empty() && txs_.front()->complete() && txs_.front()->id < id_limit) {
        for (auto& d : dir_) {
            if (d->tx == txs_.front().get()) {
                d->tx = nullptr;
            }
        }
        txs_.pop_front();
        ++n;
    }
    if (n > 0) {
        update_memuse();
    }
    return n;
}

FeedResult HttpParser::feed(Dir dir, const uint8_t* data, size_t len) {
    DirState& d = *dir_[static_cast<size_t>(dir)];
    d.boundary = 0;
    ParserAccess a{*this, dir, d, *cfg_};
    if (failed_ || tunnel_ || len == 0) {
        return a.result();
    }
    a.run(data, len);
    update_memuse();
    return a.result();
}

FeedResult HttpParser::on_close(Dir dir) {
    DirState& d = *dir_[static_cast<size_t>(dir)];
    ParserAccess a{*this, dir, d, *cfg_};
    if (failed_ || tunnel_) {
        return a.result();
    }
    if (d.tx != nullptr && d.st != St::kIgnore) {
        if (d.st == St::kBodyHeadless && !d.line.empty()) {
            // A line start still being looked at: it is body.
            a.body(reinterpret_cast<const uint8_t*>(d.line.data()), d.line.size());
            d.line.clear();
        }
        if (d.st != St::kBodyClose && d.st != St::kBodyHeadless) {
            if (dir == Dir::kToServer) {
                d.tx->request_body_truncated = true;
            } else {
                d.tx->response_body_truncated = true;
            }
        }
        if (d.st == St::kHeaders) {
            // Cut inside the head: publish what was collected.
            a.cur_pos = 0;
            a.end_of_head();
            if (d.tx != nullptr) {
                a.complete();
            }
        } else {
            a.complete();
        }
    }
    d.reset_message();
    d.line.clear();
    d.line.shrink_to_fit();
    d.st = St::kIgnore;
    update_memuse();
    return a.result();
}

void HttpParser::on_gap(Dir dir, uint64_t gap_len) {
    DirState& d = *dir_[static_cast<size_t>(dir)];
    if (failed_ || tunnel_ || d.st == St::kIgnore) {
        return;
    }
    ParserAccess a{*this, dir, d, *cfg_};
    a.event(Event::kGap, d.tx);
    bool in_body = (d.st == St::kBodyLength || d.st == St::kChunkData) && gap_len > 0 &&
                   gap_len <= d.remaining;
    if (d.st == St::kBodyHeadless) {
        // Where the hole ends is no line start that can be trusted: body to the next LF.
        d.line.clear();
        d.headless_mid_line = true;
    }
    if (d.st == St::kBodyClose || d.st == St::kBodyHeadless || in_body) {
        // Compressed data cannot continue across a hole.
        if (d.nlayers != 0) {
            a.stop_inflate();
        }
        if (dir == Dir::kToServer) {
            d.tx->request_body_truncated = true;
        } else {
            d.tx->response_body_truncated = true;
        }
        if (in_body) {
            d.remaining -= gap_len;
            if (d.remaining == 0) {
                a.body_part_done();
            }
        }
        update_memuse();
        return;
    }
    abandon();
    update_memuse();
}

void HttpParser::abandon() {
    if (failed_) {
        return;
    }
    failed_ = true;
    ++ctr_->flows_abandoned;
    ctr_->count(Event::kAbandoned);
    for (auto& d : dir_) {
        if (d->tx != nullptr) {
            d->tx->events.set(Event::kAbandoned);
        }
        d->reset_message();
        d->line.clear();
        d->line.shrink_to_fit();
        d->hdrs.shrink_to_fit();
        d->raw.shrink_to_fit();
        d->st = St::kIgnore;
    }
}

size_t HttpParser::memory() const {
    size_t n = sizeof(HttpParser) + dir_[0]->memory() + dir_[1]->memory();
    for (const auto& t : txs_) {
        n += tx_memory(*t) + sizeof(void*) * 2;
    }
    return n;
}

size_t HttpParser::memory_bound(const HttpConfig& c) {
    // Every string is built by append, so capacity is at most twice its size plus slack.
    // Per side of a transaction: start-line strings (5 x line), header strings (raw, http.header,
    // names, start: each <= header bytes + 4 per field) and single-field copies (<= header
    // bytes in total, twice for host), the field list, and the kept body.
    size_t L = c.max_line_bytes + 64, H = c.max_header_bytes + 64, C = c.max_header_count + 1;
    size_t fields = C * sizeof(Header) * 2 + 2 * (2 * H + 64 * C);
    size_t side = 2 * (6 * L + 2 * (H + L) + 3 * (2 * H + 4 * C + L) + 3 * (H + L)) + 2 * fields;
    size_t tx =
        sizeof(HttpTx) + 2 * side + 2 * c.request_body_limit + 2 * c.response_body_limit + 64;
    size_t layer = kInflateBound + (c.lzma_enabled ? c.lzma_memlimit + kLzmaOverhead : 0);
    size_t dir = sizeof(DirState) + 4 * L + 2 * H + 2 * fields + kMaxLayers * layer;
    return sizeof(HttpParser) + c.max_pipelined * tx + 2 * dir + 4096;
}

size_t HttpParser::last_boundary(Dir dir) const {
    return dir_[static_cast<size_t>(dir)]->boundary;
}

void HttpParser::update_memuse() {
    size_t now = memory();
    uint64_t cur = ctr_->memuse.get();
    cur = cur >= reported_mem_ ? cur - reported_mem_ : 0;
    ctr_->memuse.set(cur + now);
    reported_mem_ = now;
}

// ---------------------------------------------------------------------------------------

ProbeResult probe(Dir dir, const uint8_t* data, size_t len) {
    std::string_view s(reinterpret_cast<const char*>(data), len);
    if (dir == Dir::kToClient) {
        std::string_view want = "HTTP/";
        size_t n = std::min(s.size(), want.size());
        if (!iequals(s.substr(0, n), want.substr(0, n))) {
            return ProbeResult::kNo;
        }
        return n == want.size() ? ProbeResult::kYes : ProbeResult::kNeedMore;
    }
    bool prefix = false;
    for (std::string_view m : kMethods) {
        size_t full = m.size() + 1;
        size_t n = std::min(s.size(), full);
        bool match = s.substr(0, std::min(n, m.size())) == m.substr(0, std::min(n, m.size())) &&
                     (n <= m.size() || s[m.size()] == ' ');
        if (!match) {
            continue;
        }
        if (n == full) {
            return ProbeResult::kYes;
        }
        prefix = true;
    }
    return prefix ? ProbeResult::kNeedMore : ProbeResult::kNo;
}

HttpConfig HttpSplitter::framing_only(HttpConfig c) {
    c.request_body_limit = 0;
    c.response_body_limit = 0;
    c.decompress_response = false;
    c.decompress_request = false;
    return c;
}

HttpSplitter::HttpSplitter(const HttpConfig& config)
    : cfg_(framing_only(config)), parser_(&cfg_, &ctr_) {}

size_t HttpSplitter::scan(Dir dir, const uint8_t* data, size_t len) {
    parser_.feed(dir, data, len);
    size_t b = parser_.last_boundary(dir);
    parser_.release_completed();
    return b;
}

}  // namespace picket::sensor::applayer::http
