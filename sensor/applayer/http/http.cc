// The HTTP parser's public face (HttpParser, probe, HttpSplitter) and its feed loop: lines,
// transactions, completion. The rest of the parser is in start_line.cc, headers.cc, body.cc
// and decompress.cc (see internal.h).
#include "sensor/applayer/http/http.h"

#include <algorithm>
#include <cstring>

#include "sensor/applayer/event_stats.h"
#include "sensor/applayer/http/internal.h"

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
    "invalid_transfer_encoding_value_in_request",
    "multipart_generic_error",
    "multipart_invalid_header",
    "multipart_no_filedata",
};

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
    n += t.request_files.capacity() * sizeof(HttpFile);
    for (const HttpFile& f : t.request_files) {
        n += heap(f.name) + heap(f.content_type) + heap(f.data);
    }
    return n + heap(t.request_header_list) + heap(t.response_header_list);
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
    export_event_counters(out, "app_layer.http.events.", events, event_name);
}

// ---------------------------------------------------------------------------------------
// The feed loop: lines, transactions, completion.

HttpTx* ParserAccess::new_tx() {
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
bool ParserAccess::take_line(const uint8_t* data, size_t len, size_t* pos) {
    const uint8_t* start = data + *pos;
    size_t avail = len - *pos;
    const void* nl = std::memchr(start, '\n', avail);
    size_t n = nl == nullptr ? avail : static_cast<size_t>(static_cast<const uint8_t*>(nl) - start);
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

void ParserAccess::check_crlf() {
    if (!d.line_cr && !d.crlf_event && d.tx != nullptr) {
        d.crlf_event = true;
        event(Event::kMissingCrlf, d.tx);
    }
}

void ParserAccess::complete_request() {
    multipart_end();
    HttpTx* t = d.tx;
    t->request_progress = HttpTx::kRequestComplete;
    mark(t);
    d.boundary = cur_pos;
    bool cw = d.connect_wait;
    d.reset_message();
    d.connect_wait = cw;
}

void ParserAccess::complete() {
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

// Bytes of this feed after the current position, less a CR LF the head's end swallows.
size_t ParserAccess::feed_left() const {
    if (feed_data == nullptr || cur_pos >= feed_len) {
        return 0;
    }
    size_t n = feed_len - cur_pos;
    const uint8_t* b = feed_data + cur_pos;
    if (d.swallow_crlf == 2 && b[0] == '\r') {
        return n - ((n > 1 && b[1] == '\n') ? 2 : 1);
    }
    return d.swallow_crlf == 1 && b[0] == '\n' ? n - 1 : n;
}

// A message complete by its framing. A response is not done yet when more data follows in
// the same feed: libhtp (RES_FINALIZE) reads on, and a line that does not start with "HTTP"
// is more body of this response ("Unexpected response body"): the rest of a body longer than
// its Content-Length, bytes after a 204. Such lines are read as a head-less body of the same
// transaction (headless()), which a line starting with "HTTP" ends. With nothing more in the
// feed the response completes at once, as in libhtp.
void ParserAccess::finish_response() {
    if (request() || feed_left() == 0) {
        complete();
        return;
    }
    d.st = St::kBodyHeadless;
    d.headless_mid_line = false;
    d.line.clear();
    d.line_len = 0;
}

void ParserAccess::run(const uint8_t* data, size_t len) {
    size_t pos = 0;
    feed_data = data;
    feed_len = len;
    while (pos < len && !p.failed_ && !p.tunnel_) {
        if (d.swallow_crlf != 0) {
            // After "\n\r" + "\r\n" ended a head: a CR, then a LF, are part of it.
            uint8_t want = d.swallow_crlf == 2 ? '\r' : '\n';
            d.swallow_crlf = data[pos] == want && want == '\r' ? 1 : 0;
            if (data[pos] == want) {
                ++pos;
                continue;
            }
        }
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
                    // A start that cannot be a status line streams on as body once it
                    // is longer than a junk line libhtp would wait for (and maybe drop).
                    if (!request() && d.st == St::kStartLine && !d.line_overflow &&
                        d.line.size() > kHeadlessProbeMax && partial_status_not_http()) {
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

// Body bytes as sent (dechunked): counted, then kept or decoded.
void ParserAccess::body(const uint8_t* data, size_t n) {
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

// Appends to the kept body; returns false once the body is full (nothing more wanted).
bool ParserAccess::keep(const uint8_t* data, size_t n) {
    HttpTx* t = d.tx;
    const bool mp = request() && d.mp.s != Multipart::kOff;
    if (p.observer_ && n > 0 && !mp) {
        p.observer_->on_body(*t, dir, data, n);
    }
    if (mp) {
        multipart_bytes(data, n);
    }
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
    // An observer wants the rest of the body even when the kept part is full, and so do the
    // files of a multipart body.
    return !trunc || p.observer_ || (mp && d.mp.s != Multipart::kEpilogue);
}

void ParserAccess::body_part_done() {
    if (d.st == St::kChunkData) {
        d.st = St::kChunkDataEnd;
    } else {
        finish_response();
    }
}

void ParserAccess::on_line(std::string_view line) {
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
    // In a response head cut by the close, an unterminated last line that does not start with
    // "HTTP" is body (libhtp's RES_FINALIZE at the close): "HTTP\nX5O!...", or a head whose
    // lines all end with lone CRs (which end lines in libhtp: they are parsed first).
    std::string tail;
    if (dir == Dir::kToClient && (d.st == St::kStartLine || d.st == St::kHeaders)) {
        tail = a.close_head_tail();
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
                d.tx->request_body_cut = true;
            } else {
                d.tx->response_body_truncated = true;
                d.tx->response_body_cut = true;
            }
        }
        if (d.st == St::kHeaders) {
            // Cut inside the head: publish what was collected (and the tail above).
            HttpTx* t = d.tx;
            a.cur_pos = 0;
            a.end_of_head();
            if (!tail.empty()) {
                a.trailing_body(t, tail);
            }
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
            d.tx->request_body_cut = true;
        } else {
            d.tx->response_body_truncated = true;
            d.tx->response_body_cut = true;
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
            (d.get() == dir_[0].get() ? d->tx->request_body_cut : d->tx->response_body_cut) = true;
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
    // multipart files: name and content type come from one part head each.
    size_t files = kMaxFilesPerTx *
                   (sizeof(HttpFile) + 2 * c.request_body_limit + 2 * 2 * (kMaxPartHead + 64));
    size_t tx = sizeof(HttpTx) + 2 * side + 2 * c.request_body_limit + 2 * c.response_body_limit +
                64 + files;
    size_t mp = 2 * (kMaxBoundary + 64) + (kMaxBoundary + 8) + 2 * (kMaxPartHead + 64);
    size_t layer = kInflateBound + (c.lzma_enabled ? c.lzma_memlimit + kLzmaOverhead : 0);
    size_t dir = sizeof(DirState) + 4 * L + 2 * H + 2 * fields + kMaxLayers * layer + mp;
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
