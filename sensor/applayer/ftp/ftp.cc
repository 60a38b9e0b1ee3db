// FTP commands and replies, line by line; see ftp.h.
#include "sensor/applayer/ftp/ftp.h"

#include <algorithm>
#include <cstring>

#include "sensor/applayer/event_stats.h"

namespace picket::sensor::applayer::ftp {
namespace {

constexpr const char* kEventNames[kEventCount] = {
    "request_command_too_long",
    "response_command_too_long",
};

// RFC 959 5.3.1 and the usual extensions (RFC 2228, 2389, 2428, 3659): the verbs that make a
// client's first line FTP for protocol detection.
constexpr const char* kVerbs[] = {
    "USER", "PASS", "ACCT", "CWD",  "CDUP", "SMNT", "QUIT", "REIN", "PORT", "PASV", "TYPE",
    "STRU", "MODE", "RETR", "STOR", "STOU", "APPE", "ALLO", "REST", "RNFR", "RNTO", "ABOR",
    "DELE", "RMD",  "MKD",  "PWD",  "LIST", "NLST", "SITE", "SYST", "STAT", "HELP", "NOOP",
    "FEAT", "OPTS", "AUTH", "PBSZ", "PROT", "EPRT", "EPSV", "MDTM", "SIZE", "MLSD", "MLST",
    "XPWD", "XCWD", "XMKD", "XRMD", "LANG", "CLNT", "HOST",
};

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

char upper(char c) {
    return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c;
}

// A number of at most `max` after optional blanks; moves *i past it.
bool number(std::string_view s, size_t* i, uint32_t max, uint32_t* out) {
    while (*i < s.size() && is_blank(s[*i])) {
        ++*i;
    }
    uint32_t v = 0;
    size_t digits = 0;
    while (*i < s.size() && is_digit(s[*i])) {
        if (++digits > 5) {
            return false;
        }
        v = v * 10 + static_cast<uint32_t>(s[*i] - '0');
        ++*i;
    }
    while (*i < s.size() && is_blank(s[*i])) {
        ++*i;
    }
    if (digits == 0 || v > max) {
        return false;
    }
    *out = v;
    return true;
}

// "h1,h2,h3,h4,p1,p2" from s[*i]: six numbers 0-255 separated by commas.
bool six_numbers(std::string_view s, size_t i, Endpoint* out) {
    uint32_t v[6];
    for (int k = 0; k < 6; ++k) {
        if (!number(s, &i, 255, &v[k])) {
            return false;
        }
        if (k < 5) {
            if (i >= s.size() || s[i] != ',') {
                return false;
            }
            ++i;
        }
    }
    *out = Endpoint{};
    for (int k = 0; k < 4; ++k) {
        out->addr[k] = static_cast<uint8_t>(v[k]);
    }
    out->port = static_cast<uint16_t>(v[4] * 256 + v[5]);
    return true;
}

bool parse_v4(std::string_view s, uint8_t out[4]) {
    size_t i = 0;
    for (int k = 0; k < 4; ++k) {
        uint32_t v = 0;
        size_t digits = 0;
        while (i < s.size() && is_digit(s[i])) {
            if (++digits > 3) {
                return false;
            }
            v = v * 10 + static_cast<uint32_t>(s[i] - '0');
            ++i;
        }
        if (digits == 0 || v > 255) {
            return false;
        }
        out[k] = static_cast<uint8_t>(v);
        if (k < 3) {
            if (i >= s.size() || s[i] != '.') {
                return false;
            }
            ++i;
        }
    }
    return i == s.size();
}

int hex_value(char c) {
    if (is_digit(c)) {
        return c - '0';
    }
    const char u = upper(c);
    return u >= 'A' && u <= 'F' ? u - 'A' + 10 : -1;
}

// An IPv6 address in text (RFC 4291 2.2: groups of hex, one "::", an IPv4 tail).
bool parse_v6(std::string_view s, uint8_t out[16]) {
    uint16_t head[8] = {}, tail[8] = {};
    size_t nh = 0, nt = 0;
    bool gap = false;
    size_t i = 0;
    if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
        gap = true;
        i = 2;
    }
    while (i < s.size()) {
        if (nh + nt >= 8) {
            return false;
        }
        // An IPv4 tail takes two groups.
        const size_t end = std::min(s.find(':', i), s.size());
        const std::string_view part = s.substr(i, end - i);
        if (end == s.size() && part.find('.') != std::string_view::npos) {
            uint8_t v4[4];
            if (nh + nt > 6 || !parse_v4(part, v4)) {
                return false;
            }
            uint16_t* g = gap ? tail : head;
            size_t& n = gap ? nt : nh;
            g[n++] = static_cast<uint16_t>(v4[0] << 8 | v4[1]);
            g[n++] = static_cast<uint16_t>(v4[2] << 8 | v4[3]);
            i = end;
            break;
        }
        if (part.empty() || part.size() > 4) {
            return false;
        }
        uint16_t v = 0;
        for (char c : part) {
            const int h = hex_value(c);
            if (h < 0) {
                return false;
            }
            v = static_cast<uint16_t>(v << 4 | h);
        }
        (gap ? tail[nt++] : head[nh++]) = v;
        i = end;
        if (i < s.size()) {
            ++i;  // ':'
            if (i < s.size() && s[i] == ':') {
                if (gap) {
                    return false;
                }
                gap = true;
                ++i;
            } else if (i == s.size()) {
                return false;  // a trailing single ':'
            }
        }
    }
    if ((!gap && nh != 8) || (gap && nh + nt > 7)) {
        return false;
    }
    uint16_t g[8] = {};
    std::copy(head, head + nh, g);
    std::copy(tail, tail + nt, g + (8 - nt));
    for (int k = 0; k < 8; ++k) {
        out[2 * k] = static_cast<uint8_t>(g[k] >> 8);
        out[2 * k + 1] = static_cast<uint8_t>(g[k] & 0xff);
    }
    return true;
}

DataCommand data_command_of(std::string_view verb) {
    static constexpr struct {
        const char* verb;
        DataCommand c;
    } kData[] = {
        {"STOR", DataCommand::kStor}, {"APPE", DataCommand::kAppe}, {"STOU", DataCommand::kStou},
        {"RETR", DataCommand::kRetr}, {"LIST", DataCommand::kList}, {"NLST", DataCommand::kNlst},
        {"MLSD", DataCommand::kMlsd},
    };
    for (const auto& e : kData) {
        if (verb == e.verb) {
            return e.c;
        }
    }
    return DataCommand::kNone;
}

}  // namespace

const char* event_name(Event e) {
    const auto i = static_cast<size_t>(e);
    return i < kEventCount ? kEventNames[i] : "unknown";
}

const char* data_command_name(DataCommand c) {
    static constexpr const char* kNames[] = {"",     "STOR", "APPE", "STOU",
                                             "RETR", "LIST", "NLST", "MLSD"};
    const auto i = static_cast<size_t>(c);
    return i < std::size(kNames) ? kNames[i] : "";
}

ProbeResult probe(Dir dir, const uint8_t* data, size_t len, bool port21) {
    const std::string_view s(reinterpret_cast<const char*>(data), len);
    if (dir == Dir::kToClient) {
        static constexpr char kGreeting[] = "220";
        const size_t n = std::min<size_t>(s.size(), 3);
        if (s.substr(0, n) != std::string_view(kGreeting, n)) {
            return ProbeResult::kNo;
        }
        if (s.size() < 4) {
            return ProbeResult::kNeedMore;
        }
        if (s[3] != ' ' && s[3] != '-') {
            return ProbeResult::kNo;
        }
        if (port21) {
            return ProbeResult::kYes;
        }
        const size_t eol = s.find('\n');
        if (eol == std::string_view::npos) {
            return ProbeResult::kNeedMore;
        }
        for (size_t i = 4; i + 3 <= eol; ++i) {
            if (upper(s[i]) == 'F' && upper(s[i + 1]) == 'T' && upper(s[i + 2]) == 'P') {
                return ProbeResult::kYes;
            }
        }
        return ProbeResult::kNo;
    }
    if (!port21) {
        return ProbeResult::kNo;
    }
    size_t n = 0;
    while (n < s.size() && n < 4 && s[n] != ' ' && s[n] != '\r' && s[n] != '\n') {
        ++n;
    }
    if (n == s.size()) {
        return s.size() < 5 ? ProbeResult::kNeedMore : ProbeResult::kNo;
    }
    char verb[5] = {};
    for (size_t i = 0; i < n; ++i) {
        verb[i] = upper(s[i]);
    }
    for (const char* v : kVerbs) {
        if (std::strcmp(v, verb) == 0) {
            return ProbeResult::kYes;
        }
    }
    return ProbeResult::kNo;
}

bool parse_port(std::string_view arg, Endpoint* out) {
    return six_numbers(arg, 0, out);
}

bool parse_eprt(std::string_view arg, Endpoint* out) {
    while (!arg.empty() && is_blank(arg.front())) {
        arg.remove_prefix(1);
    }
    while (!arg.empty() && is_blank(arg.back())) {
        arg.remove_suffix(1);
    }
    // <d>proto<d>addr<d>port<d>: the delimiter is any printable ASCII byte (RFC 2428 2).
    if (arg.size() < 7 || arg.front() < 33 || arg.front() > 126) {
        return false;
    }
    const char d = arg.front();
    std::string_view f[3];
    size_t at = 1;
    for (auto& field : f) {
        const size_t e = arg.find(d, at);
        if (e == std::string_view::npos) {
            return false;
        }
        field = arg.substr(at, e - at);
        at = e + 1;
    }
    if (at != arg.size()) {
        return false;
    }
    Endpoint ep;
    if (f[0] == "1") {
        if (!parse_v4(f[1], ep.addr)) {
            return false;
        }
    } else if (f[0] == "2") {
        ep.v6 = true;
        if (!parse_v6(f[1], ep.addr)) {
            return false;
        }
    } else {
        return false;
    }
    size_t i = 0;
    uint32_t port = 0;
    if (!number(f[2], &i, 65535, &port) || i != f[2].size() || port == 0) {
        return false;
    }
    ep.port = static_cast<uint16_t>(port);
    *out = ep;
    return true;
}

bool parse_pasv_reply(std::string_view text, Endpoint* out) {
    for (size_t i = 0; i < text.size(); ++i) {
        if (is_digit(text[i]) && (i == 0 || !is_digit(text[i - 1])) && six_numbers(text, i, out)) {
            return out->port != 0;
        }
    }
    return false;
}

bool parse_epsv_reply(std::string_view text, uint16_t* port) {
    const size_t open = text.find('(');
    if (open == std::string_view::npos || open + 5 > text.size()) {
        return false;
    }
    const char d = text[open + 1];
    if (d < 33 || d > 126 || text[open + 2] != d || text[open + 3] != d) {
        return false;
    }
    size_t i = open + 4;
    uint32_t p = 0;
    if (!number(text, &i, 65535, &p) || i >= text.size() || text[i] != d || p == 0) {
        return false;
    }
    *port = static_cast<uint16_t>(p);
    return true;
}

void export_stats(const FtpCounters& c, StatsSnapshot& out) {
    out.add("app_layer.ftp.commands", c.commands.get());
    out.add("app_layer.ftp.replies", c.replies.get());
    export_event_counters(out, "app_layer.ftp.events.", c.events, event_name);
}

FtpParser::FtpParser(const FtpConfig& config, FtpCounters* counters)
    : config_(config), counters_(counters) {}

const FtpTx* FtpParser::find_tx(uint64_t id) const {
    for (const FtpTx& t : txs_) {
        if (t.id == id) {
            return &t;
        }
    }
    return nullptr;
}

FtpTx* FtpParser::find_tx_mut(uint64_t id) {
    return const_cast<FtpTx*>(find_tx(id));
}

size_t FtpParser::memory() const {
    size_t n = buf_[0].capacity() + buf_[1].capacity() + multi_code_.capacity();
    for (const FtpTx& t : txs_) {
        n += sizeof(FtpTx) + t.command.capacity() + t.command_data.capacity() +
             (t.replies.capacity() + t.codes.capacity()) * sizeof(std::string);
        for (const auto& r : t.replies) {
            n += r.capacity();
        }
    }
    return n;
}

void FtpParser::raise(FtpTx* tx, Event e) {
    const uint32_t bit = 1U << static_cast<unsigned>(e);
    events_ |= bit;
    if (tx != nullptr) {
        tx->events |= bit;
    }
    if (counters_ != nullptr) {
        ++counters_->events[static_cast<size_t>(e)];
    }
}

void FtpParser::note(uint64_t id) {
    if (res_.count == 0) {
        res_.first_id = id;
        res_.count = 1;
    } else if (id >= res_.first_id + res_.count) {
        res_.count = static_cast<uint32_t>(id - res_.first_id + 1);
    }
}

FtpTx& FtpParser::open_tx() {
    // Bounded: the oldest go first (logged or not; the app layer logs a tx when it completes).
    while (txs_.size() >= config_.max_tx) {
        txs_.pop_front();
    }
    txs_.emplace_back();
    FtpTx& t = txs_.back();
    t.id = next_id_++;
    return t;
}

FeedResult FtpParser::feed(Dir dir, const uint8_t* data, size_t len) {
    res_ = FeedResult{};
    const int d = static_cast<int>(dir);
    size_t i = 0;
    while (i < len) {
        const auto* nl = static_cast<const uint8_t*>(std::memchr(data + i, '\n', len - i));
        const size_t end = nl != nullptr ? static_cast<size_t>(nl - data) : len;
        const size_t room =
            config_.max_line > buf_[d].size() ? config_.max_line - buf_[d].size() : 0;
        const size_t take = std::min(end - i, room);
        buf_[d].append(reinterpret_cast<const char*>(data + i), take);
        if (take < end - i) {
            long_[d] = true;
        }
        i = end;
        if (nl != nullptr) {
            ++i;
            line(d);
            buf_[d].clear();
            long_[d] = false;
        }
    }
    return res_;
}

void FtpParser::line(int d) {
    std::string_view l(buf_[d]);
    if (!l.empty() && l.back() == '\r') {
        l.remove_suffix(1);
    }
    if (d == static_cast<int>(Dir::kToServer)) {
        command_line(l, long_[d]);
    } else {
        reply_line(l, long_[d]);
    }
}

void FtpParser::command_line(std::string_view l, bool truncated) {
    if (l.empty() && !truncated) {
        return;  // a blank line is no command
    }
    FtpTx& t = open_tx();
    t.has_command = true;
    const size_t sp = l.find(' ');
    const std::string_view verb = l.substr(0, sp);
    t.command.resize(verb.size());
    std::transform(verb.begin(), verb.end(), t.command.begin(), upper);
    if (sp != std::string_view::npos) {
        t.command_data.assign(l.substr(sp + 1));
    }
    t.command_truncated = truncated;
    if (counters_ != nullptr) {
        ++counters_->commands;
    }
    if (truncated) {
        raise(&t, Event::kRequestCommandTooLong);
    }
    if (t.command == "PORT" || t.command == "EPRT") {
        Endpoint ep;
        if (t.command == "PORT" ? parse_port(t.command_data, &ep)
                                : parse_eprt(t.command_data, &ep)) {
            t.has_dyn_port = true;
            t.active = true;
            t.has_address = true;
            t.endpoint = ep;
            dyn_ = ep;
            dyn_active_ = true;
        }
    } else if ((t.data_command = data_command_of(t.command)) != DataCommand::kNone &&
               dyn_.port != 0) {
        // The channel announced last is this transfer's; the next needs its own.
        t.wants_expect = true;
        t.data_active = dyn_active_;
        t.data_port = dyn_.port;
        dyn_ = Endpoint{};
    }
    note(t.id);
}

void FtpParser::reply_line(std::string_view l, bool truncated) {
    // The transaction answered: the oldest command still waiting, else one without a command
    // (the greeting, or a reply nobody asked for).
    FtpTx* t = nullptr;
    for (FtpTx& x : txs_) {
        if (!x.complete && (x.has_command || !multi_code_.empty())) {
            t = &x;
            break;
        }
    }
    const bool coded = l.size() >= 3 && is_digit(l[0]) && is_digit(l[1]) && is_digit(l[2]) &&
                       (l.size() == 3 || l[3] == ' ' || l[3] == '-');
    std::string_view code = coded ? l.substr(0, 3) : std::string_view();
    bool last = true;  // this line ends the reply
    std::string_view text = l;
    if (!multi_code_.empty()) {
        // Inside a multi-line reply: only "<code> " ends it (RFC 959 4.2); other lines are text.
        last = coded && code == multi_code_ && (l.size() == 3 || l[3] == ' ');
        if (last) {
            text = l.size() > 4 ? l.substr(4) : std::string_view();
        }
    } else if (coded) {
        text = l.size() > 4 ? l.substr(4) : std::string_view();
        last = l.size() == 3 || l[3] == ' ';
    } else if (l.empty() && !truncated) {
        return;
    }
    if (t == nullptr) {
        t = &open_tx();
    }
    if (multi_code_.empty()) {
        // A new reply: its code (a line without one is kept as text, code "").
        t->codes.emplace_back(code);
        if (counters_ != nullptr) {
            ++counters_->replies;
        }
        if (!last) {
            multi_code_.assign(code);
        }
    }
    t->replies.emplace_back(text);
    if (truncated) {
        t->reply_truncated = true;
        raise(t, Event::kResponseCommandTooLong);
    }
    if (last) {
        const std::string reply_code = multi_code_.empty() ? std::string(code) : multi_code_;
        multi_code_.clear();
        // 1xx is a preliminary reply: another follows (RFC 959 4.2).
        t->complete = reply_code.empty() || reply_code[0] != '1';
        if (t->has_command && !t->has_dyn_port) {
            Endpoint ep;
            uint16_t port = 0;
            if (reply_code == "227" && parse_pasv_reply(text, &ep)) {
                t->has_dyn_port = t->has_address = true;
                t->endpoint = ep;
                dyn_ = ep;
                dyn_active_ = false;
            } else if (reply_code == "229" && parse_epsv_reply(text, &port)) {
                t->has_dyn_port = true;
                t->endpoint = Endpoint{};
                t->endpoint.port = port;
                dyn_ = t->endpoint;
                dyn_active_ = false;
            }
        }
    }
    note(t->id);
}

}  // namespace picket::sensor::applayer::ftp
