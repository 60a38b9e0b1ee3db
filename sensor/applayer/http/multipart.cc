// multipart/form-data request bodies (RFC 7578 on RFC 2046): the parts are split out of the
// dechunked, decoded request body as it streams, and each part whose Content-Disposition has a
// filename becomes a file of the transaction (HttpTx::request_files: file.name, file.data).
// request_body keeps the raw multipart body as libhtp does.
#include "sensor/applayer/http/internal.h"

#include "common/strings.h"

namespace picket::sensor::applayer::http {

namespace {

// The value of parameter `name` ("boundary", "filename"...) in a header value of the form
// `token; a=b; c="d"`, unquoted (backslash escapes in a quoted string undone). nullopt: absent.
// Parameter names are matched case-insensitively and only at a parameter start, so "name="
// never matches inside "filename=".
std::optional<std::string> header_param(std::string_view v, std::string_view name) {
    size_t i = v.find(';');
    while (i != std::string_view::npos && i < v.size()) {
        ++i;  // past ';'
        while (i < v.size() && is_ws(v[i])) {
            ++i;
        }
        const size_t k0 = i;
        while (i < v.size() && v[i] != '=' && v[i] != ';') {
            ++i;
        }
        const std::string_view key = trim(v.substr(k0, i - k0));
        if (i >= v.size() || v[i] == ';') {
            continue;  // a parameter without value
        }
        ++i;  // past '='
        while (i < v.size() && is_ws(v[i])) {
            ++i;
        }
        std::string value;
        if (i < v.size() && v[i] == '"') {
            for (++i; i < v.size() && v[i] != '"'; ++i) {
                if (v[i] == '\\' && i + 1 < v.size()) {
                    ++i;
                }
                value.push_back(v[i]);
            }
            i = v.find(';', i);
        } else {
            const size_t e = v.find(';', i);
            value = std::string(trim(v.substr(i, e == std::string_view::npos ? e : e - i)));
            i = e;
        }
        if (iequals(key, name)) {
            return value;
        }
    }
    return std::nullopt;
}

// RFC 5987 ext-value `charset'lang'pct-encoded` (filename*=UTF-8''na%C3%AFve.txt): the
// percent-decoded bytes (charset not converted). The value as sent if it has no two quotes.
std::string ext_value(std::string_view v) {
    size_t q1 = v.find('\'');
    size_t q2 = q1 == std::string_view::npos ? q1 : v.find('\'', q1 + 1);
    if (q2 == std::string_view::npos) {
        return std::string(v);
    }
    std::string out;
    std::string_view s = v.substr(q2 + 1);
    for (size_t i = 0; i < s.size(); ++i) {
        int hi = 0, lo = 0;
        if (s[i] == '%' && i + 2 < s.size() && (hi = strings::hex_value(s[i + 1])) >= 0 &&
            (lo = strings::hex_value(s[i + 2])) >= 0) {
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

}  // namespace

// After a POST head with a body: sets up the split if Content-Type is multipart/form-data
// with a usable boundary. Without one the body stays a plain body (multipart_generic_error).
void ParserAccess::multipart_start(HttpTx* t) {
    d.mp.reset();
    const Header* ct = find_header(t->request_header_list, "content-type");
    if (ct == nullptr || !istarts_with(trim(ct->value), "multipart/form-data")) {
        return;
    }
    std::optional<std::string> b = header_param(ct->value, "boundary");
    if (!b || b->empty() || b->size() > kMaxBoundary) {
        event(Event::kMultipartGenericError, t);
        return;
    }
    t->request_multipart = true;
    Multipart& m = d.mp;
    m.s = Multipart::kPreamble;
    m.delim = "\r\n--" + *b;
    m.fail.assign(m.delim.size() + 1, 0);
    // KMP failure table: fail[k] = length of the longest proper border of delim[0..k).
    for (size_t k = 2; k <= m.delim.size(); ++k) {
        size_t f = m.fail[k - 1];
        while (f > 0 && m.delim[f] != m.delim[k - 1]) {
            f = m.fail[f];
        }
        if (m.delim[f] == m.delim[k - 1]) {
            ++f;
        }
        m.fail[k] = static_cast<uint8_t>(std::min<size_t>(f, 255));
    }
    // The first delimiter may open the body without a CRLF before it: start as if the CRLF
    // had been seen (preamble bytes are dropped anyway).
    m.matched = 2;
}

// Content bytes of the current part (a form field's are only in request_body).
void ParserAccess::multipart_content(const char* data, size_t n) {
    Multipart& m = d.mp;
    if (m.s != Multipart::kContent || m.file < 0 || n == 0) {
        return;
    }
    HttpTx* t = d.tx;
    HttpFile& f = t->request_files[static_cast<size_t>(m.file)];
    f.size += n;
    if (p.observer_) {
        p.observer_->on_file_data(*t, static_cast<size_t>(m.file),
                                  reinterpret_cast<const uint8_t*>(data), n);
    }
    size_t room =
        cfg.request_body_limit > f.data.size() ? cfg.request_body_limit - f.data.size() : 0;
    if (n > room) {
        f.truncated = true;
        n = room;
    }
    if (n > 0) {
        f.data.append(data, n);
        mark(t);
    }
}

// A part's head (its header lines, the blank line included): a part with a filename in its
// Content-Disposition is a file, the others are form fields.
void ParserAccess::multipart_part_head(std::string_view head) {
    Multipart& m = d.mp;
    HttpTx* t = d.tx;
    m.file = -1;
    std::optional<std::string> filename;
    std::string ctype;
    while (!head.empty()) {
        size_t nl = head.find('\n');
        std::string_view line = head.substr(0, nl);
        head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (line.empty()) {
            continue;
        }
        size_t colon = line.find(':');
        if (colon == std::string_view::npos || colon == 0) {
            event(Event::kMultipartInvalidHeader, t);
            continue;
        }
        std::string_view name = trim(line.substr(0, colon));
        std::string_view value = trim(line.substr(colon + 1));
        if (iequals(name, "content-disposition")) {
            // filename*= (RFC 5987) wins over filename= (RFC 6266 4.3).
            if (auto ext = header_param(value, "filename*")) {
                filename = ext_value(*ext);
            } else if (auto fn = header_param(value, "filename")) {
                filename = std::move(fn);
            }
        } else if (iequals(name, "content-type")) {
            ctype = std::string(value);
        }
    }
    if (filename && t->request_files.size() < kMaxFilesPerTx) {
        HttpFile f;
        f.name = std::move(*filename);
        f.content_type = std::move(ctype);
        t->request_files.push_back(std::move(f));
        m.file = static_cast<int>(t->request_files.size() - 1);
        mark(t);
        if (p.observer_) {
            // The file exists from its head on (an empty upload is a file too).
            p.observer_->on_file_data(*t, static_cast<size_t>(m.file), nullptr, 0);
        }
    }
}

void ParserAccess::multipart_part_end(bool complete) {
    Multipart& m = d.mp;
    if (m.s == Multipart::kContent && m.file >= 0) {
        HttpFile& f = d.tx->request_files[static_cast<size_t>(m.file)];
        f.complete = complete;
        if (complete && f.size == 0) {
            // "Multipart header claiming a file to present, but no actual filedata".
            event(Event::kMultipartNoFiledata, d.tx);
        }
    }
    m.file = -1;
}

// Body bytes of a multipart request, in order, any split.
void ParserAccess::multipart_bytes(const uint8_t* data, size_t n) {
    Multipart& m = d.mp;
    const char* in = reinterpret_cast<const char*>(data);
    // Content bytes are passed on in runs: [run, i) of `in` is content not yet passed.
    size_t i = 0;
    while (i < n && m.s != Multipart::kEpilogue && m.s != Multipart::kOff) {
        if (m.s == Multipart::kAfterDelim) {
            // The rest of the delimiter line: "--" closes the body, else padding up to LF.
            const char c = in[i++];
            m.buf.push_back(c);
            if (m.buf.size() == 2 && m.buf == "--") {
                m.s = Multipart::kEpilogue;
                m.buf.clear();
            } else if (c == '\n') {
                m.s = Multipart::kHead;
                m.buf.clear();
            } else if (m.buf.size() > kMaxDelimLine) {
                event(Event::kMultipartInvalidHeader, d.tx);
                m.s = Multipart::kSkip;
                m.buf.clear();
            }
            continue;
        }
        if (m.s == Multipart::kHead) {
            const char c = in[i++];
            m.buf.push_back(c);
            std::string_view b = m.buf;
            const bool end =
                b == "\n" || b == "\r\n" || b.ends_with("\n\n") || b.ends_with("\n\r\n");
            if (end) {
                multipart_part_head(b);
                m.buf.clear();
                m.s = Multipart::kContent;
                m.matched = 0;
            } else if (m.buf.size() > kMaxPartHead) {
                event(Event::kMultipartInvalidHeader, d.tx);
                m.buf.clear();
                m.s = Multipart::kSkip;
                m.matched = 0;
            }
            continue;
        }
        // kPreamble, kContent, kSkip: look for the delimiter.
        size_t run = i;
        for (; i < n; ++i) {
            const char c = in[i];
            size_t k = m.matched;
            while (k > 0 && m.delim[k] != c) {
                k = m.fail[k];
            }
            if (m.delim[k] == c) {
                ++k;
            }
            // Held bytes delim[0..matched) + c; the first matched + 1 - k are content now.
            const size_t released = m.matched + 1 - k;
            if (released > 0 && m.matched > 0) {
                // Held bytes from before `run` (or from an earlier call) come from delim.
                multipart_content(in + run, i - run);
                run = i;
                if (released <= m.matched) {
                    multipart_content(m.delim.data(), released);
                    run = i + 1;  // c stays held
                } else {
                    multipart_content(m.delim.data(), m.matched);
                    // c is content: it starts the next run.
                }
            } else if (released == 0) {
                // c is held: content before it is passed on.
                multipart_content(in + run, i - run);
                run = i + 1;
            }
            m.matched = k;
            if (k == m.delim.size()) {
                multipart_part_end(true);
                m.matched = 0;
                m.s = Multipart::kAfterDelim;
                m.buf.clear();
                ++i;
                run = i;
                break;
            }
        }
        multipart_content(in + run, i - run);
    }
}

// The request body ended (complete, or cut short): without the closing delimiter the body is
// malformed; held bytes of a partial delimiter were content after all.
void ParserAccess::multipart_end() {
    Multipart& m = d.mp;
    if (m.s == Multipart::kOff) {
        return;
    }
    if (m.s != Multipart::kEpilogue) {
        event(Event::kMultipartGenericError, d.tx);
        if (m.s == Multipart::kHead) {
            event(Event::kMultipartNoFiledata, d.tx);
        }
        if (m.s == Multipart::kContent && m.matched > 0) {
            multipart_content(m.delim.data(), m.matched);
        }
        multipart_part_end(false);
    }
    m.reset();
}

}  // namespace picket::sensor::applayer::http
