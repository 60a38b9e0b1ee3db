#include <cstdio>
#include <ctime>
#include <string>

#include "tools/trafficgen/planner.h"

namespace picket::tools::trafficgen {
namespace {

const char* const kUserAgents[] = {
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.2 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.6099.144 Mobile Safari/537.36",
    "curl/7.88.1",
    "Wget/1.21.3",
    "python-requests/2.31.0",
    "Go-http-client/1.1",
    "okhttp/4.12.0",
    "Microsoft-CryptoAPI/10.0",
};
const char* const kExts[] = {".html", ".php", ".js", ".css",  ".png", ".jpg", ".json",
                             "",      "",     "/",   ".aspx", ".svg", ".txt"};
const char* const kQueryKeys[] = {"id",   "q",     "page", "lang",       "ref", "session",
                                  "sort", "limit", "v",    "utm_source", "cat", "token"};
const char* const kServerNames[] = {"nginx/1.24.0", "Apache/2.4.57 (Debian)",
                                    "cloudflare",   "Microsoft-IIS/10.0",
                                    "gws",          "envoy",
                                    "openresty",    "LiteSpeed"};
const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

std::string http_date(int64_t ts_us) {
    time_t secs = static_cast<time_t>(ts_us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday],
                  tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                  tm.tm_sec);
    return buf;
}

std::string make_path(Rng& r) {
    std::string p;
    int depth = static_cast<int>(r.range(0, 4));
    for (int i = 0; i < depth; ++i) {
        p += "/";
        p += r.pick(kWords);
    }
    const char* ext = r.pick(kExts);
    if (depth == 0) {
        return r.chance(0.5) ? "/" : std::string("/") + r.pick(kLorem) + ".html";
    }
    if (ext[0] == '.') {
        p += "/";
        p += r.pick(kLorem);
        if (r.chance(0.3)) {
            // Two appends, not "-" + to_string(): GCC 12 raises a false -Wrestrict on that.
            p += '-';
            p += std::to_string(r.range(1, 999));
        }
    }
    p += ext;
    return p;
}

std::string make_query(Rng& r) {
    std::string q;
    int n = static_cast<int>(r.range(1, 4));
    for (int i = 0; i < n; ++i) {
        q += i == 0 ? "?" : "&";
        q += r.pick(kQueryKeys);
        q += "=";
        switch (r.below(3)) {
            case 0:
                q += std::to_string(r.range(0, 100000));
                break;
            case 1:
                q += r.pick(kLorem);
                break;
            default:
                q += hex_token(r, static_cast<int>(r.range(8, 32)));
                break;
        }
    }
    return q;
}

// Whether the attack string can stand in a request-line query (no space or control byte).
bool uri_safe(const std::string& a) {
    for (unsigned char ch : a) {
        if (ch <= 0x20 || ch == 0x7f) {
            return false;
        }
    }
    return true;
}

void build_response(Planner& p, Rng& r, std::string& resp, std::string& chunked,
                    const std::string& method, int64_t t) {
    int status;
    const char* reason;
    double u = r.unit();
    if (method == "DELETE") {
        status = u < 0.7 ? 204 : 404;
    } else if (method == "POST" || method == "PUT") {
        status = u < 0.6 ? 200 : u < 0.85 ? 201 : u < 0.95 ? 400 : 500;
    } else {
        status = u < 0.78   ? 200
                 : u < 0.83 ? 301
                 : u < 0.86 ? 302
                 : u < 0.94 ? 404
                 : u < 0.96 ? 403
                            : (r.chance(0.7) ? 500 : 503);
    }
    switch (status) {
        case 200:
            reason = "OK";
            break;
        case 201:
            reason = "Created";
            break;
        case 204:
            reason = "No Content";
            break;
        case 301:
            reason = "Moved Permanently";
            break;
        case 302:
            reason = "Found";
            break;
        case 400:
            reason = "Bad Request";
            break;
        case 403:
            reason = "Forbidden";
            break;
        case 404:
            reason = "Not Found";
            break;
        case 500:
            reason = "Internal Server Error";
            break;
        default:
            reason = "Service Unavailable";
            break;
    }
    size_t blen = 0;
    bool binary = false;
    const char* ctype = "text/html; charset=utf-8";
    if (status == 200 && method != "OPTIONS") {
        blen = body_size(r);
        double c = r.unit();
        if (c < 0.55) {
            ctype = "text/html; charset=utf-8";
        } else if (c < 0.7) {
            ctype = "application/json";
        } else if (c < 0.78) {
            ctype = "application/javascript";
        } else if (c < 0.84) {
            ctype = "text/css";
        } else {
            ctype = r.chance(0.5) ? "image/jpeg" : "image/png";
            binary = true;
        }
    } else if (status != 204 && method != "OPTIONS") {
        blen = static_cast<size_t>(r.range(0, 1) ? r.range(150, 600) : r.range(600, 3000));
    }
    bool chunk = status == 200 && !binary && method != "HEAD" && r.chance(0.15);
    resp.clear();
    resp += "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
    resp += "Date: " + http_date(t) + "\r\n";
    resp += std::string("Server: ") + r.pick(kServerNames) + "\r\n";
    if (method == "OPTIONS") {
        resp += "Allow: OPTIONS, GET, HEAD, POST, PUT, DELETE\r\nContent-Length: 0\r\n";
    } else if (status != 204) {
        resp += std::string("Content-Type: ") + ctype + "\r\n";
        if (chunk) {
            resp += "Transfer-Encoding: chunked\r\n";
        } else {
            resp += "Content-Length: " + std::to_string(blen) + "\r\n";
        }
    }
    if (status == 301 || status == 302) {
        resp += "Location: https://" + std::string(r.pick(kWords)) + ".example.com/" +
                r.pick(kWords) + "/\r\n";
    }
    if (r.chance(0.2)) {
        resp += "Set-Cookie: sid=" + hex_token(r, 24) + "; Path=/; HttpOnly\r\n";
    }
    if (r.chance(0.5)) {
        resp += "Cache-Control: max-age=" + std::to_string(r.range(0, 86400)) + "\r\n";
    }
    resp += "Connection: keep-alive\r\n\r\n";
    if (method == "HEAD" || blen == 0) {
        return;
    }
    std::string_view body = binary ? p.binary_slice(r, blen) : p.text_slice(r, blen);
    if (!chunk) {
        resp += body;
        return;
    }
    chunked.clear();
    size_t pos = 0;
    while (pos < body.size()) {
        size_t n = std::min<size_t>(static_cast<size_t>(r.range(500, 8192)), body.size() - pos);
        char hx[16];
        std::snprintf(hx, sizeof(hx), "%zx\r\n", n);
        chunked += hx;
        chunked += body.substr(pos, n);
        chunked += "\r\n";
        pos += n;
    }
    chunked += "0\r\n\r\n";
    resp += chunked;
}

}  // namespace

void plan_http(Planner& p, Session& s, Rng& r, int64_t t) {
    Conn c;
    uint16_t port = r.chance(0.85) ? 80 : 8080;
    p.make_conn(r, c, Kind::kHttp, port);
    ++p.rec.sessions.http;
    int nreq = 1;
    while (nreq < 8 && r.chance(0.5)) {
        ++nreq;
    }
    int attack_req = -1;
    std::string attack;
    bool attack_in_uri = false;
    if (!p.opt.attacks.empty() && r.chance(p.opt.attack_share)) {
        attack = p.opt.attacks[p.attack_next++ % p.opt.attacks.size()];
        attack_req = static_cast<int>(r.below(static_cast<uint64_t>(nreq)));
        attack_in_uri = uri_safe(attack) && r.chance(0.5);
    }
    t = handshake(s, c, t);
    std::string host = c.server->name;
    if (port != 80) {
        host += ":" + std::to_string(port);
    }
    const char* ua = r.pick(kUserAgents);
    std::string cookie;
    if (r.chance(0.35)) {
        cookie = "session=" + hex_token(r, 32);
        if (r.chance(0.5)) {
            cookie += "; _ga=GA1.2." + std::to_string(r.range(100000000, 999999999)) + "." +
                      std::to_string(r.range(1600000000, 1704000000));
        }
    }
    std::string req, resp, chunked;
    for (int i = 0; i < nreq; ++i) {
        t += i == 0 ? r.range(50, 2000) : think_time(r);
        bool this_attack = i == attack_req;
        // Method
        double u = r.unit();
        std::string method = u < 0.70   ? "GET"
                             : u < 0.85 ? "POST"
                             : u < 0.89 ? "PUT"
                             : u < 0.94 ? "HEAD"
                             : u < 0.97 ? "DELETE"
                                        : "OPTIONS";
        if (this_attack && !attack_in_uri && method != "POST" && method != "PUT") {
            method = "POST";
        }
        bool has_body = method == "POST" || method == "PUT";
        std::string uri = method == "OPTIONS" && r.chance(0.3) ? "*" : make_path(r);
        if (uri != "*" && (r.chance(0.5) || (this_attack && attack_in_uri))) {
            uri += make_query(r);
        }
        size_t attack_uri_pos = SIZE_MAX;
        if (this_attack && attack_in_uri) {
            uri += uri.find('?') == std::string::npos ? "?" : "&";
            uri += r.pick(kQueryKeys);
            uri += "=";
            attack_uri_pos = method.size() + 1 + uri.size();
            uri += attack;
        }
        // Body
        std::string body, ctype;
        size_t attack_body_pos = SIZE_MAX;
        if (has_body) {
            double b = r.unit();
            if (b < 0.5) {
                ctype = "application/x-www-form-urlencoded";
                int n = static_cast<int>(r.range(1, 8));
                for (int k = 0; k < n; ++k) {
                    body += k ? "&" : "";
                    body += std::string(r.pick(kQueryKeys)) + "=" + std::string(r.pick(kLorem));
                }
            } else if (b < 0.9) {
                ctype = "application/json";
                body = "{";
                int n = static_cast<int>(r.range(1, 10));
                for (int k = 0; k < n; ++k) {
                    body += k ? "," : "";
                    body += std::string("\"") + r.pick(kWords) + "\":\"" + r.pick(kLorem) + "\"";
                }
                body += "}";
            } else {
                ctype = "application/octet-stream";
                body = std::string(p.binary_slice(r, static_cast<size_t>(r.range(2000, 65536))));
            }
            if (this_attack && !attack_in_uri) {
                std::string prefix = ctype == "application/json" ? "{\"data\":\"" : "data=";
                attack_body_pos = prefix.size();
                std::string suffix = ctype == "application/json" ? "\"," : "&";
                if (ctype == "application/json") {
                    body = prefix + attack + "\"," + body.substr(1);
                } else {
                    body = prefix + attack + suffix + body;
                }
            }
        }
        req.clear();
        req += method + " " + uri + " HTTP/1.1\r\n";
        req += "Host: " + host + "\r\n";
        req += std::string("User-Agent: ") + ua + "\r\n";
        req += r.chance(0.6) ? "Accept: text/html,application/xhtml+xml,application/xml;"
                               "q=0.9,image/avif,image/webp,*/*;q=0.8\r\n"
                             : "Accept: */*\r\n";
        if (r.chance(0.7)) {
            req += "Accept-Encoding: gzip, deflate, br\r\nAccept-Language: en-US,en;q=0.9\r\n";
        }
        if (!cookie.empty()) {
            req += "Cookie: " + cookie + "\r\n";
        }
        if (has_body) {
            req += "Content-Type: " + ctype + "\r\n";
            req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
        }
        req +=
            i + 1 == nreq && r.chance(0.3) ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
        req += "\r\n";
        size_t hdr_len = req.size();
        req += body;
        size_t mark = SIZE_MAX;
        int32_t aidx = -1;
        // Headers travel alone when the attack in the body would not fit in the first
        // segment, and sometimes anyway (clients that write headers and body apart).
        size_t split = 0;
        if (has_body && (r.chance(0.3) || (this_attack && !attack_in_uri &&
                                           hdr_len + attack_body_pos + attack.size() > c.mss))) {
            split = hdr_len;
        }
        if (this_attack) {
            mark = attack_in_uri ? attack_uri_pos : hdr_len + attack_body_pos;
            aidx = static_cast<int32_t>(p.rec.attacks.size());
            AttackRecord ar;
            ar.string = attack;
            ar.location = attack_in_uri ? "uri" : "body";
            ar.flow = tuple(c, "tcp");
            p.rec.attacks.push_back(ar);
        }
        ++p.rec.http_requests;
        int64_t resp_delay = r.chance(0.8) ? r.range(200, 20000) : r.range(20000, 300000);
        bool pure_ack = resp_delay > 40000 || req.size() > c.mss;
        t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(req.data()), req.size(), t,
                      pure_ack, split, mark, aidx);
        t += c.rtt + resp_delay;
        build_response(p, r, resp, chunked, method, t);
        t = send_data(s, c, false, reinterpret_cast<const uint8_t*>(resp.data()), resp.size(), t,
                      true);
    }
    t += r.chance(0.6) ? r.range(1000, 100000) : r.range(100000, 5000000);
    teardown(s, c, r, t);
}

}  // namespace picket::tools::trafficgen
