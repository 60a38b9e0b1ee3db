// Start lines: the request line, the status line, and responses that arrive without one
// (headless bodies, junk before "HTTP/").
#include "sensor/applayer/http/internal.h"

#include "common/strings.h"

namespace picket::sensor::applayer::http {

// ---- start lines
void ParserAccess::request_line(std::string_view line) {
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
        // HTTP/0.9 simple request: no headers, no body, and nothing after it is a request
        // (libhtp's REQ_IGNORE_DATA_AFTER_HTTP_0_9). "GET /HTTP/1.1\r\nHost: x\r\n\r\n"
        // (no space before the version) is such a request: its "Host:" line would otherwise
        // be an invalid request line that abandons the flow, and its answer, which starts
        // with "HTTP/", would go unread (Snort 3's http_inspect and libhtp read it).
        complete_request();
        d.st = St::kIgnore;
        return;
    }
    d.st = St::kHeaders;
}

bool ParserAccess::is_start_junk(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f' || c == '\0';
}

std::string_view ParserAccess::skip_start_junk(std::string_view l) {
    while (!l.empty() && is_start_junk(l.front())) {
        l.remove_prefix(1);
    }
    return l;
}

// The transaction the next response answers (one is made up if no request waits).
HttpTx* ParserAccess::response_tx() {
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
void ParserAccess::response_without_head(std::string_view bytes, bool line_complete) {
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
bool ParserAccess::is_htp_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// A head-less body, line by line as libhtp's RES_LINE / RES_FINALIZE read it: a line that
// starts with "HTTP" (case-insensitive, after whitespace) ends this response and is the
// status line of the next one (" foobar\r\nHTTP/1.1 200 ok..." is a junk line, then a
// response: http-evader 487); any other line is more body. Only a line start is
// buffered (in d.line, at most kHeadlessProbeMax bytes); the rest streams to the body.
void ParserAccess::headless(const uint8_t* data, size_t len, size_t* pos) {
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
            HttpTx* t = d.tx;
            if (t->response_line.empty() && t->status == 0) {
                // A response that had no status line yet (junk where one was due): libhtp
                // stays in RES_LINE when the data goes on after a body line, so this status
                // line is the same transaction's (http-evader 487: " foobar\r\n" then the
                // real answer, whose file is the request's). Here whatever the segmentation
                // (libhtp ends the transaction if its data ended right after the junk).
                std::string start;
                start.swap(d.line);
                d.reset_message();
                d.line.swap(start);
            } else {
                complete();
            }
            d.line_len = d.line.size();
            d.line_last = static_cast<uint8_t>(d.line.back());
            d.line_overflow = false;
            return;
        }
    }
}

// libhtp's RES_LINE, for a complete line where the status line is due that is not one
// (htp_treat_response_line_as_body): it is dropped, not taken as a head-less body, when the
// data at hand goes on for at least two more bytes and either the next one is 'H' (the real
// status line is likely to follow) or the line, without its end, is at most 2 bytes
// (libhtp's response_ignored_lines). " foobar\r\nHTTP/1.1 200 ok" in one segment is thus
// the response with its head (http-evader 487: the file keeps its Content-Disposition
// name); with the segment ending after the junk, the junk is body.
bool ParserAccess::status_junk_ignored(std::string_view line) const {
    if (feed_data == nullptr || cur_pos >= feed_len || feed_len - cur_pos < 2) {
        return false;
    }
    return feed_data[cur_pos] == 'H' || line.size() <= 2;
}

// A partial line where a status line is due that can no longer start with "HTTP".
bool ParserAccess::partial_status_not_http() const {
    std::string_view l = skip_start_junk(d.line);
    size_t n = std::min<size_t>(l.size(), 4);
    return n > 0 && !iequals(l.substr(0, n), std::string_view("HTTP").substr(0, n));
}

// Response status and header lines. A lone CR (not before the LF) also ends a line, as in
// libhtp and browsers ("200 ok\rTransfer-Encoding: chunked", "Content-Encoding:\r gzip"
// folded); empty pieces between lone CRs are dropped ("\n\r" line ends). An empty or
// whitespace-only line ("\n \n", "\n\t\n") ends the head.
void ParserAccess::response_head_line(std::string_view line) {
    const bool had_cr = d.line_cr;
    // "\n\r" ends a line as one terminator: the CR after a bare LF is dropped. An empty line
    // right after it ("\n\r" "\r\n") also takes a CR LF that follows: libhtp reads
    // "\n\r\r\n\r\n" as two line ends, so the body starts after all six bytes.
    bool lfcr_empty = false;
    if (d.prev_bare_lf && !line.empty() && line.front() == '\r') {
        line.remove_prefix(1);
        lfcr_empty = line.empty() && had_cr;
    }
    d.prev_bare_lf = !had_cr;
    // Only an empty line or a lone SP/HT before a bare LF ("\n \n", libhtp's
    // htp_connp_is_line_terminator) ends the head; " \r\n" or "\r\r\n" do not, nor does
    // " \n" right before another LF (or at the end of the data): "\n \n\n" ends the head at
    // the last LF (libhtp's next_no_lf), a gzip body after it starts with no stray LF.
    const bool terminator =
        line.empty() || (line.size() == 1 && is_ws(line[0]) && !had_cr && next_byte_not_lf());
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
                if (seg_start == 0 && status_junk_ignored(line)) {
                    break;  // still waiting for the status line
                }
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
                if (lfcr_empty) {
                    d.swallow_crlf = 2;
                }
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

// At the close, the unterminated line of a response head (d.line): its pieces ended by lone
// CRs are header lines; what follows the last CR is returned when it is body: libhtp's
// RES_FINALIZE passes the data buffered at the close to the body unless it starts with "HTTP"
// (after whitespace and NULs). Empty when there is no such tail.
std::string ParserAccess::close_head_tail() {
    if (d.line.empty() || d.line_overflow) {
        return std::string();
    }
    if (d.st == St::kStartLine && partial_status_not_http()) {
        // A short junk line still waiting for its end where the status line is due: at the
        // close libhtp takes it as a line, and as body (nothing follows it).
        std::string partial;
        partial.swap(d.line);
        d.line_len = 0;
        response_without_head(partial, false);
        return std::string();
    }
    std::string line;
    line.swap(d.line);
    d.line_len = 0;
    size_t cr = line.rfind('\r');
    std::string_view tail(line);
    if (cr != std::string::npos) {
        d.line_cr = true;
        response_head_line(std::string_view(line).substr(0, cr));
        tail.remove_prefix(cr + 1);
    }
    if (d.st != St::kHeaders || d.tx == nullptr) {
        return std::string();
    }
    std::string_view l = skip_start_junk(tail);
    if (l.empty() || (l.size() >= 4 && istarts_with(l, "HTTP"))) {
        return std::string();
    }
    return std::string(tail);
}

// Body bytes for transaction t after its head was published (and maybe completed, which
// resets the direction's state): they are appended as libhtp appends them.
void ParserAccess::trailing_body(HttpTx* t, std::string_view bytes) {
    if (t == nullptr) {
        return;
    }
    HttpTx* cur = d.tx;
    d.tx = t;
    body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    d.tx = cur;
}

void ParserAccess::status_line(std::string_view line) {
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

}  // namespace picket::sensor::applayer::http
