// Header fields: collection, folding, the buffers built from them and the end of a message
// head (framing decisions, CONNECT, transactions moving on).
#include "sensor/applayer/http/internal.h"

#include "common/strings.h"

namespace picket::sensor::applayer::http {

// ---- headers
void ParserAccess::header_line(std::string_view line) {
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
bool ParserAccess::folded(std::string_view line) const {
    return !line.empty() && (is_ws(line[0]) || (!request() && line[0] == '\0'));
}

// Response heads, as libhtp and browsers read them: a name whose colon comes on a folded
// continuation line ("Transfer-Encoding\r\n :chunked") is joined to it, and a folded line
// that is itself "Name: value" (" Transfer-Encoding: chunked") is a field of its own.
bool ParserAccess::response_fold(std::string_view line) {
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

void ParserAccess::parse_field(std::string_view line) {
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
void ParserAccess::build(const std::vector<Header>& list, const std::string& start_line,
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

namespace {

// The header fields a transaction keeps a copy of, by (lowercase) name.
struct Field {
    const char* name;
    std::string HttpTx::*dst;
};
constexpr Field kRequestFields[] = {
    {"cookie", &HttpTx::cookie},
    {"user-agent", &HttpTx::user_agent},
    {"content-type", &HttpTx::content_type_req},
    {"content-length", &HttpTx::content_len_req},
    {"referer", &HttpTx::referer},
    {"accept", &HttpTx::accept},
    {"accept-encoding", &HttpTx::accept_enc},
    {"accept-language", &HttpTx::accept_lang},
    {"connection", &HttpTx::connection},
};
constexpr Field kResponseFields[] = {
    {"set-cookie", &HttpTx::response_cookie},
    {"content-type", &HttpTx::content_type_resp},
    {"content-length", &HttpTx::content_len_resp},
    {"location", &HttpTx::location},
    {"server", &HttpTx::server},
};

template <size_t N>
void copy_fields(const std::vector<Header>& l, const Field (&fields)[N], HttpTx* t) {
    for (const Field& f : fields) {
        t->*f.dst = header_value(l, f.name);
    }
}

}  // namespace

void ParserAccess::fill_request_fields(HttpTx* t) {
    build(t->request_header_list, t->request_line, "cookie", &t->request_headers,
          &t->request_header_names, &t->request_start);
    copy_fields(t->request_header_list, kRequestFields, t);
}

void ParserAccess::fill_response_fields(HttpTx* t) {
    build(t->response_header_list, t->response_line, "set-cookie", &t->response_headers,
          &t->response_header_names, &t->response_start);
    copy_fields(t->response_header_list, kResponseFields, t);
}

void ParserAccess::end_of_head() {
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
        finish_response();
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
        if (!start_body(t->request_header_list, t)) {
            complete_request();
        }
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
        finish_response();
        return;
    }
    if (!start_body(t->response_header_list, t)) {
        finish_response();
    }
}

// After a head: true when a body follows (framed, its Content-Encoding layers set up).
// Only a response may run until the connection closes.
bool ParserAccess::start_body(const std::vector<Header>& l, HttpTx* t) {
    if (!frame_body(l, t, !request())) {
        return false;
    }
    const bool decompress = request() ? cfg.decompress_request : cfg.decompress_response;
    d.nlayers = decompress ? layers_of(l) : 0;
    d.header_bytes = 0;
    // Suricata splits multipart bodies of POST requests only (other methods: a plain body).
    // Not in the splitter's framing-only parser (nothing kept, no observer).
    if (request() && iequals(t->method, "POST") &&
        (cfg.request_body_limit > 0 || p.body_observer() != nullptr)) {
        multipart_start(t);
    }
    return true;
}

}  // namespace picket::sensor::applayer::http
