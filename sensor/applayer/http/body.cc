// Message bodies: framing (Content-Length, chunked, until close), chunk-size lines and the
// Content-Encoding layers a body gets.
#include "sensor/applayer/http/internal.h"

#include "common/strings.h"

namespace picket::sensor::applayer::http {

// Number of decoding layers for a Content-Encoding value (libhtp): the value is split on
// commas and spaces; a token containing "gzip" or "deflate" (case-insensitive: x-gzip,
// x-deflate...) adds a layer, anything else ("identity", unknown codings) is skipped. Every
// layer detects the actual format itself, so the order does not matter.
// With lzma_enabled, a token that is exactly "lzma" (NULs ignored) adds an lzma layer.
size_t ParserAccess::layers_of(const std::vector<Header>& l) {
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
    // libhtp's fast path: the whole value, case and NUL bytes ignored, is one coding
    // ("gz\0ip" is gzip); anything else is split into tokens matched as they are.
    std::string bare;
    for (char c : v) {
        if (c != '\0') {
            bare.push_back(c);
        }
    }
    if (limit > 0 && (iequals(bare, "gzip") || iequals(bare, "x-gzip") ||
                      iequals(bare, "deflate") || iequals(bare, "x-deflate"))) {
        return 1;
    }
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
bool ParserAccess::frame_body(const std::vector<Header>& l, HttpTx* t, bool until_close_allowed) {
    // Responses follow libhtp: the framing fields are found with NULs and stray
    // whitespace in their names ignored, and any Transfer-Encoding value that contains
    // "chunked" ("chunked x", "x chunked", two fields joined) means chunked. A body that
    // then does not parse as chunks is taken as sent (see chunk_size()).
    const Header* te =
        request() ? find_header(l, "transfer-encoding") : find_header_loose(l, "transfer-encoding");
    const Header* cl =
        request() ? find_header(l, "content-length") : find_header_loose(l, "content-length");
    bool chunked =
        te != nullptr && (request() ? is_chunked(te->value) : contains_chunked(te->value));
    if (te != nullptr && request() && !chunked) {
        // Suricata: http.invalid_transfer_encoding_value_in_request. The body is then framed
        // by Content-Length, as a server that ignores the field would read it.
        event(Event::kInvalidTransferEncodingRequest, t);
    }
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

// Chunk-size line, parsed as libhtp does: leading CR/LF/SP/HT/VT/FF skipped (an empty line
// is skipped altogether), then the hex digits; whatever follows them ("fx", "f,", ";ext")
// is ignored. No hex digit at all, or a size over INT32_MAX, means the body is not chunked
// after all: the line and the rest of the stream are the body as sent (browsers do the
// same, and so must we or the payload goes unseen).
void ParserAccess::chunk_size(std::string_view line) {
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
        int v = strings::hex_value(c);
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
void ParserAccess::not_chunked(std::string_view line, bool terminated) {
    d.st = St::kBodyClose;
    std::string bytes(line);
    if (terminated) {
        bytes.append(d.line_cr ? "\r\n" : "\n");
    }
    body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// A chunk-size line still incomplete that cannot become valid (libhtp's
// data_probe_chunk_length): the first byte past the control bytes is not hex.
bool ParserAccess::partial_chunk_line_invalid() const {
    for (char c : d.line) {
        if (!is_chunk_ctl(c)) {
            return strings::hex_value(c) < 0;
        }
    }
    return false;
}

}  // namespace picket::sensor::applayer::http
