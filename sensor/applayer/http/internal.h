// Internal to sensor/applayer/http: the per-direction parser state and the ParserAccess
// helper whose member functions are spread over http.cc (transactions and the feed loop),
// start_line.cc, headers.cc, body.cc and decompress.cc. Not a public header.
#pragma once

#include <lzma.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "sensor/applayer/http/http.h"

namespace picket::sensor::applayer::http {

// RFC 9110 methods plus WebDAV and friends; anything else that is a token is accepted with
// the unknown_method event.
inline constexpr std::string_view kMethods[] = {
    "GET",        "POST",       "HEAD",   "PUT",        "DELETE",      "OPTIONS",
    "TRACE",      "CONNECT",    "PATCH",  "PROPFIND",   "PROPPATCH",   "MKCOL",
    "COPY",       "MOVE",       "LOCK",   "UNLOCK",     "SEARCH",      "REPORT",
    "CHECKOUT",   "CHECKIN",    "MERGE",  "MKACTIVITY", "SUBSCRIBE",   "UNSUBSCRIBE",
    "NOTIFY",     "POLL",       "BCOPY",  "BDELETE",    "BMOVE",       "BPROPFIND",
    "BPROPPATCH", "ACL",        "UPDATE", "LABEL",      "MKWORKSPACE", "VERSION-CONTROL",
    "UNCHECKOUT", "MKCALENDAR", "PURGE",  "LINK",       "UNLINK",
};

inline bool is_known_method(std::string_view m) {
    return std::find(std::begin(kMethods), std::end(kMethods), m) != std::end(kMethods);
}

// RFC 9110 5.6.2 tchar.
inline bool is_tchar(uint8_t c) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        return true;
    }
    return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

inline bool is_ws(char c) {
    return c == ' ' || c == '\t';
}

inline std::string_view trim(std::string_view s) {
    while (!s.empty() && is_ws(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_ws(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

inline bool iequals(std::string_view a, std::string_view b) {
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

inline bool istarts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

inline const Header* find_header(const std::vector<Header>& list, std::string_view name) {
    for (const Header& h : list) {
        if (iequals(h.name, name)) {
            return &h;
        }
    }
    return nullptr;
}

// Case-insensitive substring search.
inline bool icontains(std::string_view s, std::string_view needle) {
    for (size_t i = 0; i + needle.size() <= s.size(); ++i) {
        if (iequals(s.substr(i, needle.size()), needle)) {
            return true;
        }
    }
    return false;
}

// Name comparison for the fields that frame a response (libhtp's "nocase_nozero"): NUL bytes
// and surrounding whitespace/control bytes in the received name are ignored.
inline bool loose_name_equals(std::string_view name, std::string_view want) {
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

inline const Header* find_header_loose(const std::vector<Header>& list, std::string_view name) {
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

inline std::string header_value(const std::vector<Header>& list, std::string_view name) {
    const Header* h = find_header(list, name);
    return h == nullptr ? std::string() : h->value;
}

// Content-Length: digits, possibly repeated identically ("5, 5" from joined duplicates,
// RFC 9110 8.6). Returns false if invalid.
inline bool parse_content_length(std::string_view v, uint64_t* out) {
    bool have = false;
    uint64_t first = 0;
    while (true) {
        size_t comma = v.find(',');
        std::string_view part = trim(v.substr(0, comma));
        // At most 18 digits: no value can overflow.
        const std::optional<uint64_t> n =
            part.size() <= 18 ? strings::parse_u64(part) : std::nullopt;
        if (!n || (have && *n != first)) {
            return false;
        }
        first = *n;
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
inline bool is_chunked(std::string_view te) {
    size_t comma = te.rfind(',');
    std::string_view last = trim(comma == std::string_view::npos ? te : te.substr(comma + 1));
    return iequals(last, "chunked");
}

// libhtp's response test: "chunked" anywhere in the value, case-insensitive, NULs ignored.
inline bool contains_chunked(std::string_view v) {
    std::string clean;
    for (char c : v) {
        if (c != '\0') {
            clean.push_back(c);
        }
    }
    return icontains(clean, "chunked");
}

inline size_t heap(const std::string& s) {
    return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

inline size_t heap(const std::vector<Header>& v) {
    size_t n = v.capacity() * sizeof(Header);
    for (const Header& h : v) {
        n += heap(h.name) + heap(h.value);
    }
    return n;
}

// zlib allocations are counted so that memory() includes the inflate state and window.
struct ZAlloc {
    size_t bytes = 0;
};

// n bytes behind a 16-byte header that remembers n, counted in the ZAlloc at `opaque`.
inline void* counted_alloc(void* opaque, size_t n) {
    auto* p = static_cast<size_t*>(std::malloc(n + 16));
    if (p == nullptr) {
        return nullptr;
    }
    p[0] = n;
    static_cast<ZAlloc*>(opaque)->bytes += n + 16;
    return reinterpret_cast<uint8_t*>(p) + 16;
}

inline void counted_free(void* opaque, void* addr) {
    if (addr == nullptr) {
        return;
    }
    auto* p = reinterpret_cast<size_t*>(static_cast<uint8_t*>(addr) - 16);
    static_cast<ZAlloc*>(opaque)->bytes -= p[0] + 16;
    std::free(p);
}

inline voidpf zalloc_counted(voidpf opaque, uInt items, uInt size) {
    return counted_alloc(opaque, static_cast<size_t>(items) * size);
}

inline void zfree_counted(voidpf opaque, voidpf addr) {
    counted_free(opaque, addr);
}

// liblzma allocates through the same counter.
inline void* lzma_alloc_counted(void* opaque, size_t nmemb, size_t size) {
    if (size != 0 && nmemb > SIZE_MAX / 2 / size) {
        return nullptr;
    }
    return counted_alloc(opaque, nmemb * size);
}

inline void lzma_free_counted(void* opaque, void* addr) {
    counted_free(opaque, addr);
}

// zlib's inflate state plus a 32 KiB window, with slack; used by memory_bound().
inline constexpr size_t kInflateBound = 64 * 1024 + 2048;
// An lzma layer: the decoder's own state beyond its memlimit-capped dictionary, with slack.
inline constexpr size_t kLzmaOverhead = 128 * 1024;
// The LZMA "alone" header: properties byte, 32-bit dictionary size, 64-bit size.
inline constexpr size_t kLzmaPropsSize = 5;

// The dictionary an lzma layer allocates: the largest power of two within half the memlimit
// (the decoder's other state fits in the other half), at least 4 KiB, never more than the
// stream asks for. libhtp grows its dictionary on demand up to the memlimit instead; both
// decode what stays within the window and fail on what reaches further back.
inline uint32_t lzma_dict_cap(size_t memlimit, uint32_t wanted) {
    uint64_t cap = 4096;
    while (cap * 2 <= memlimit / 2 && cap < (uint64_t{1} << 30)) {
        cap *= 2;
    }
    return static_cast<uint32_t>(std::min<uint64_t>(cap, std::max<uint32_t>(wanted, 4096)));
}

// "lzma" as libhtp compares it: case-insensitive, NUL bytes ignored.
inline bool is_lzma_token(std::string_view tok) {
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
inline constexpr size_t kMaxLayers = 4;
// Bytes a layer keeps before its first output, to pass them on if they were not compressed.
inline constexpr size_t kLayerHeadMax = 1024;

// multipart/form-data: the longest boundary taken (RFC 2046 allows 70), the bytes of one part's
// head (its header lines), the line after a delimiter (transport padding).
inline constexpr size_t kMaxBoundary = 200;
inline constexpr size_t kMaxPartHead = 8192;
inline constexpr size_t kMaxDelimLine = 256;

// The multipart body being split (request direction; idle otherwise). The delimiter
// "\r\n--boundary" is searched byte by byte with its KMP failure table, so a delimiter split
// over any number of feed() calls is found and nothing is buffered but its partial match.
struct Multipart {
    enum S : uint8_t { kOff, kPreamble, kAfterDelim, kHead, kContent, kSkip, kEpilogue };
    S s = kOff;
    std::string delim;          // "\r\n--" + boundary
    std::vector<uint8_t> fail;  // fail[m]: longest proper border of delim[0..m)
    size_t matched = 0;         // delim[0..matched) held back (maybe content)
    std::string buf;            // kAfterDelim line / kHead bytes
    int file = -1;              // kContent: index in request_files, -1: a form field
    void reset() { *this = Multipart{}; }
    size_t memory() const { return heap(delim) + fail.capacity() + heap(buf); }
};

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
    // to_client: a head ended by "\n\r" + "\r\n" swallows a CR LF that follows (libhtp reads
    // "\n\r\r\n\r\n" as two line ends); 2: a CR then a LF may follow, 1: a LF. Not reset
    // with the message: the head may have completed a response without body.
    uint8_t swallow_crlf = 0;
    size_t boundary = 0;
    Multipart mp;

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
        mp.reset();
    }
    size_t memory() const {
        size_t n = sizeof(DirState) + heap(line) + heap(hdrs) + heap(raw) + heap(pending_name) +
                   zalloc.bytes + mp.memory();
        for (const Layer& l : layers) {
            n += heap(l.head);
        }
        return n;
    }
};

// The parser working on one direction during one call; holds no state of its own between
// calls beyond the references.
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
    // The data of the feed() being parsed (null in on_close / on_gap): what libhtp looks at
    // beyond a line (the byte after it, what follows a complete response).
    const uint8_t* feed_data = nullptr;
    size_t feed_len = 0;
    // The byte after the current line is in this feed and is not LF (libhtp's next_no_lf).
    bool next_byte_not_lf() const {
        return feed_data != nullptr && cur_pos < feed_len && feed_data[cur_pos] != '\n';
    }

    // http.cc: transactions and the feed loop
    HttpTx* new_tx();
    bool take_line(const uint8_t* data, size_t len, size_t* pos);
    void check_crlf();
    void complete_request();
    void complete();
    void finish_response();
    size_t feed_left() const;
    size_t cur_pos = 0;
    void run(const uint8_t* data, size_t len);
    void body(const uint8_t* data, size_t n);
    bool keep(const uint8_t* data, size_t n);
    void body_part_done();
    void on_line(std::string_view line);

    // start_line.cc
    void request_line(std::string_view line);
    static bool is_start_junk(char c);
    static std::string_view skip_start_junk(std::string_view l);
    HttpTx* response_tx();
    void response_without_head(std::string_view bytes, bool line_complete);
    static bool is_htp_space(char c);
    // Bytes collected at a line start of a head-less body before giving up on "HTTP".
    static constexpr size_t kHeadlessProbeMax = 64;
    void headless(const uint8_t* data, size_t len, size_t* pos);
    bool partial_status_not_http() const;
    bool status_junk_ignored(std::string_view line) const;
    void response_head_line(std::string_view line);
    std::string close_head_tail();
    void trailing_body(HttpTx* t, std::string_view bytes);
    void status_line(std::string_view line);

    // headers.cc
    void header_line(std::string_view line);
    bool folded(std::string_view line) const;
    bool response_fold(std::string_view line);
    void parse_field(std::string_view line);
    static void build(const std::vector<Header>& list, const std::string& start_line,
                      std::string_view skip, std::string* headers, std::string* names,
                      std::string* start);
    void fill_request_fields(HttpTx* t);
    void fill_response_fields(HttpTx* t);
    void end_of_head();
    bool start_body(const std::vector<Header>& l, HttpTx* t);

    // body.cc
    size_t layers_of(const std::vector<Header>& l);
    bool frame_body(const std::vector<Header>& l, HttpTx* t, bool until_close_allowed);
    void chunk_size(std::string_view line);
    void not_chunked(std::string_view line, bool terminated);
    static bool is_chunk_ctl(char c) {
        return c == '\r' || c == '\n' || c == ' ' || c == '\t' || c == '\v' || c == '\f';
    }
    bool partial_chunk_line_invalid() const;

    // multipart.cc
    void multipart_start(HttpTx* t);
    void multipart_bytes(const uint8_t* data, size_t n);
    void multipart_end();
    void multipart_content(const char* data, size_t n);
    void multipart_part_head(std::string_view head);
    void multipart_part_end(bool complete);

    // decompress.cc
    void inflate_bytes(const uint8_t* data, size_t n);
    bool sink(const uint8_t* data, size_t n);
    void remember(HttpParser::DirState::Layer& l, const uint8_t* data, size_t n);
    bool start_inflate(HttpParser::DirState::Layer& l, int bits);
    bool pass_through(size_t li);
    bool push(size_t li, const uint8_t* data, size_t n);
    std::optional<bool> settle_step(size_t li, const uint8_t* out, size_t produced, bool error,
                                    bool stream_end);
    bool inflate_layer(size_t li, const uint8_t* data, size_t n);
    bool start_lzma(HttpParser::DirState::Layer& l);
    bool lzma_layer(size_t li, const uint8_t* data, size_t n, bool header);
    void stop_inflate();
};

}  // namespace picket::sensor::applayer::http
