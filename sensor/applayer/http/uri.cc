// URI and host normalisation (http.uri, http.host). See README.md for the rules and order.
#include "sensor/applayer/http/http.h"

#include "common/strings.h"

namespace picket::sensor::applayer::http {

namespace {

void add(EventSet* ev, Event e) {
    if (ev != nullptr) {
        ev->set(e);
    }
}

// One pass of %XX (and %uXXXX) decoding. Invalid escapes stay as sent.
std::string percent_decode(std::string_view in, const HttpConfig& cfg, EventSet* ev) {
    std::string out;
    out.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
        uint8_t c = static_cast<uint8_t>(in[i]);
        if (c != '%') {
            out.push_back(static_cast<char>(c));
            continue;
        }
        if (cfg.u_encode && i + 5 < in.size() && (in[i + 1] == 'u' || in[i + 1] == 'U')) {
            int h[4];
            bool ok = true;
            for (int k = 0; k < 4; ++k) {
                h[k] = strings::hex_value(in[i + 2 + k]);
                ok = ok && h[k] >= 0;
            }
            if (ok) {
                uint32_t cp = (h[0] << 12) | (h[1] << 8) | (h[2] << 4) | h[3];
                add(ev, Event::kUEncoding);
                if (cp < 0x80) {
                    out.push_back(static_cast<char>(cp));
                } else if (cp >= 0xff01 && cp <= 0xff5e) {
                    // IIS "best fit": full-width forms map onto ASCII (%uff0e is '.').
                    add(ev, Event::kUEncodingNonAscii);
                    out.push_back(static_cast<char>(cp - 0xfee0));
                } else {
                    add(ev, Event::kUEncodingNonAscii);
                    out.push_back('?');
                }
                i += 5;
                continue;
            }
        }
        if (i + 2 < in.size()) {
            int hi = strings::hex_value(in[i + 1]);
            int lo = strings::hex_value(in[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out.push_back(static_cast<char>((hi << 4) | lo));
                i += 2;
                continue;
            }
        }
        add(ev, Event::kInvalidPercentEncoding);
        out.push_back('%');
    }
    return out;
}

// True when s holds a %XX escape (what a %25XX decodes to).
bool has_escape(std::string_view s) {
    for (size_t i = 0; i + 2 < s.size(); ++i) {
        if (s[i] == '%' && strings::hex_value(s[i + 1]) >= 0 && strings::hex_value(s[i + 2]) >= 0) {
            return true;
        }
    }
    return false;
}

// RFC 3986 5.2.4 remove_dot_segments, except that ".." at the root is an event and is dropped
// (never climbs above it).
std::string remove_dots(std::string_view in, EventSet* ev) {
    std::vector<std::string_view> segs;
    bool absolute = !in.empty() && in[0] == '/';
    size_t pos = absolute ? 1 : 0;
    bool trailing_slash = false;
    while (pos <= in.size()) {
        size_t slash = in.find('/', pos);
        std::string_view seg =
            in.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
        bool last = slash == std::string_view::npos;
        if (seg == ".") {
            trailing_slash = last;
        } else if (seg == "..") {
            if (segs.empty()) {
                add(ev, Event::kDirectoryTraversal);
            } else {
                segs.pop_back();
            }
            trailing_slash = last;
        } else {
            segs.push_back(seg);
            trailing_slash = false;
        }
        if (last) {
            break;
        }
        pos = slash + 1;
    }
    std::string out;
    out.reserve(in.size());
    if (absolute) {
        out.push_back('/');
    }
    for (size_t i = 0; i < segs.size(); ++i) {
        if (i > 0) {
            out.push_back('/');
        }
        out.append(segs[i]);
    }
    if (trailing_slash && !segs.empty()) {
        out.push_back('/');
    }
    return out;
}

}  // namespace

std::string normalize_uri(std::string_view raw, const HttpConfig& cfg, EventSet* ev) {
    size_t q = raw.find('?');
    std::string_view path = raw.substr(0, q);
    std::string_view query = q == std::string_view::npos ? std::string_view() : raw.substr(q);

    std::string p;
    if (cfg.percent_decode) {
        p = percent_decode(path, cfg, ev);
        // Only escapes that came from %25 make a double encoding; a literal "%2e" in the raw
        // path was decoded by the pass above.
        std::string_view pv(p);
        if (path.find("%25") != std::string_view::npos && has_escape(pv)) {
            add(ev, Event::kDoubleEncoding);
            if (cfg.double_decode) {
                p = percent_decode(p, cfg, ev);
            }
        }
    } else {
        p.assign(path);
    }
    if (p.find('\0') != std::string::npos || raw.find('\0') != std::string_view::npos) {
        add(ev, Event::kNulByte);
    }
    if (cfg.backslash_to_slash) {
        for (char& c : p) {
            if (c == '\\') {
                c = '/';
            }
        }
    }
    if (cfg.collapse_slashes) {
        std::string c;
        c.reserve(p.size());
        for (char ch : p) {
            if (ch == '/' && !c.empty() && c.back() == '/') {
                continue;
            }
            c.push_back(ch);
        }
        p.swap(c);
    }
    if (cfg.path_normalize) {
        p = remove_dots(p, ev);
    }
    if (cfg.oversize_dir_length > 0) {
        size_t run = 0;
        for (char ch : p) {
            run = ch == '/' ? 0 : run + 1;
            if (run > cfg.oversize_dir_length) {
                add(ev, Event::kOversizeDirLength);
                break;
            }
        }
    }
    p.append(query);
    return p;
}

std::string normalize_host(std::string_view raw) {
    std::string_view h = raw;
    // A joined duplicate ("a.com, b.net") is only lowercased: which port belongs where is
    // ambiguous.
    bool joined = h.find(',') != std::string_view::npos;
    if (!joined) {
        if (!h.empty() && h[0] == '[') {
            size_t close = h.find(']');
            if (close != std::string_view::npos) {
                h = h.substr(0, close + 1);
            }
        } else {
            size_t colon = h.find(':');
            if (colon != std::string_view::npos) {
                h = h.substr(0, colon);
            }
        }
        while (!h.empty() && h.back() == '.') {
            h.remove_suffix(1);
        }
    }
    std::string out(h);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return out;
}

}  // namespace picket::sensor::applayer::http
