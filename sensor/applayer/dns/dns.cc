#include "sensor/applayer/dns/dns.h"

#include <arpa/inet.h>

#include <cstdio>
#include <iterator>

#include "sensor/applayer/byte_reader.h"
#include "sensor/applayer/event_stats.h"

namespace picket::sensor::applayer::dns {

namespace {

constexpr size_t kHeaderLen = 12;
constexpr size_t kMaxNameWire = 255;  // RFC 1035 2.3.4, length octets and root included
// Pointers must go strictly backwards, so a chain always ends; the cap bounds the work a
// crafted chain of one-byte hops can cause.
constexpr int kMaxJumps = 64;

void set_event(uint32_t* events, Event e) {
    *events |= 1U << static_cast<unsigned>(e);
}

bool valid_opcode(uint8_t op) {
    return op <= 2 || (op >= 4 && op <= 6);
}

// Reads the name at msg[pos]; *next is the offset after it in the record (after the first
// pointer when compressed). On failure the event is set and false returned.
bool read_name(const uint8_t* msg, size_t len, size_t pos, std::string* out, size_t* next,
               uint32_t* events) {
    if (out != nullptr) {
        out->clear();
    }
    size_t seg_start = pos;  // where the labels currently being read began
    bool jumped = false;
    bool first = true;
    size_t wire = 0;
    int jumps = 0;
    for (;;) {
        if (pos >= len) {
            set_event(events, Event::kTruncated);
            return false;
        }
        uint8_t b = msg[pos];
        if (b == 0) {
            if (!jumped) {
                *next = pos + 1;
            }
            return true;
        }
        if ((b & 0xC0) == 0xC0) {
            if (pos + 1 >= len) {
                set_event(events, Event::kTruncated);
                return false;
            }
            size_t target = static_cast<size_t>(b & 0x3F) << 8 | msg[pos + 1];
            if (target > pos) {
                set_event(events, Event::kInvalidPointer);
                return false;
            }
            if (target >= seg_start || ++jumps > kMaxJumps) {
                set_event(events, Event::kCompressionLoop);
                return false;
            }
            if (!jumped) {
                *next = pos + 2;
                jumped = true;
            }
            seg_start = target;
            pos = target;
            continue;
        }
        if ((b & 0xC0) != 0) {  // 0x40 / 0x80: longer than 63 or a deprecated label type
            set_event(events, Event::kLabelTooLong);
            return false;
        }
        wire += 1 + static_cast<size_t>(b);
        if (wire + 1 > kMaxNameWire) {
            set_event(events, Event::kNameTooLong);
            return false;
        }
        if (pos + 1 + b > len) {
            set_event(events, Event::kTruncated);
            return false;
        }
        if (out != nullptr) {
            if (!first) {
                out->push_back('.');
            }
            out->append(reinterpret_cast<const char*>(msg + pos + 1), b);
        }
        first = false;
        pos += 1 + static_cast<size_t>(b);
    }
}

bool parse_header(const uint8_t* data, size_t len, Header* h, uint32_t* events) {
    if (len < kHeaderLen) {
        set_event(events, Event::kTruncated);
        return false;
    }
    h->id = be16(data);
    h->flags = be16(data + 2);
    h->qr = (h->flags & 0x8000) != 0;
    h->opcode = static_cast<uint8_t>((h->flags >> 11) & 0x0F);
    h->aa = (h->flags & 0x0400) != 0;
    h->tc = (h->flags & 0x0200) != 0;
    h->rd = (h->flags & 0x0100) != 0;
    h->ra = (h->flags & 0x0080) != 0;
    h->z = (h->flags & 0x0040) != 0;
    h->ad = (h->flags & 0x0020) != 0;
    h->cd = (h->flags & 0x0010) != 0;
    h->rcode = static_cast<uint8_t>(h->flags & 0x000F);
    h->qdcount = be16(data + 4);
    h->ancount = be16(data + 6);
    h->nscount = be16(data + 8);
    h->arcount = be16(data + 10);
    if (h->z) {
        set_event(events, Event::kZFlagSet);
    }
    if (!valid_opcode(h->opcode)) {
        set_event(events, Event::kInvalidOpcode);
    }
    return true;
}

bool render_rdata(const uint8_t* msg, size_t len, size_t start, Answer* a, uint32_t* events) {
    const uint8_t* rd = msg + start;
    size_t end = start + a->rdlength;
    size_t next = 0;
    switch (a->rtype) {
        case 1: {  // A
            if (a->rdlength != 4) {
                break;
            }
            char buf[INET_ADDRSTRLEN];
            std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", rd[0], rd[1], rd[2], rd[3]);
            a->rdata = buf;
            return true;
        }
        case 28: {  // AAAA
            if (a->rdlength != 16) {
                break;
            }
            char buf[INET6_ADDRSTRLEN];
            if (inet_ntop(AF_INET6, rd, buf, sizeof buf) == nullptr) {
                break;
            }
            a->rdata = buf;
            return true;
        }
        case 2:   // NS
        case 5:   // CNAME
        case 12:  // PTR
            if (!read_name(msg, len, start, &a->rdata, &next, events)) {
                return false;
            }
            if (next != end) {
                break;
            }
            return true;
        case 15:  // MX
            if (a->rdlength < 3) {
                break;
            }
            a->mx_preference = be16(rd);
            if (!read_name(msg, len, start + 2, &a->rdata, &next, events)) {
                return false;
            }
            if (next != end) {
                break;
            }
            return true;
        case 16: {  // TXT: one or more <length><bytes> character-strings
            size_t p = start;
            if (a->rdlength == 0) {
                break;
            }
            while (p < end) {
                size_t n = msg[p];
                if (p + 1 + n > end) {
                    a->rdata.clear();
                    set_event(events, Event::kMalformedData);
                    return false;
                }
                a->rdata.append(reinterpret_cast<const char*>(msg + p + 1), n);
                p += 1 + n;
            }
            return true;
        }
        default:
            return true;
    }
    a->rdata.clear();
    set_event(events, Event::kMalformedData);
    return false;
}

// Walks one resource record at *pos; stores it in *a when a is not null.
bool read_record(const uint8_t* msg, size_t len, size_t* pos, Answer* a, uint32_t* events) {
    Answer scratch;
    Answer* r = a != nullptr ? a : &scratch;
    size_t next = 0;
    if (!read_name(msg, len, *pos, a != nullptr ? &r->name : nullptr, &next, events)) {
        return false;
    }
    if (next + 10 > len) {
        set_event(events, Event::kTruncated);
        return false;
    }
    r->rtype = be16(msg + next);
    r->rclass = be16(msg + next + 2);
    r->ttl = be32(msg + next + 4);
    r->rdlength = be16(msg + next + 8);
    size_t rstart = next + 10;
    if (rstart + r->rdlength > len) {
        set_event(events, Event::kTruncated);
        return false;
    }
    if (a != nullptr && !render_rdata(msg, len, rstart, a, events)) {
        return false;
    }
    *pos = rstart + r->rdlength;
    return true;
}

constexpr const char* kEventNames[] = {
    "malformed_data",   "truncated",       "name_too_long", "label_too_long",
    "compression_loop", "invalid_pointer", "not_a_request", "not_a_response",
    "z_flag_set",       "invalid_opcode",  "flooded",
};
static_assert(std::size(kEventNames) == kEventCount);

}  // namespace

const char* event_name(Event e) {
    const auto i = static_cast<size_t>(e);
    return i < kEventCount ? kEventNames[i] : "unknown";
}

void Message::clear() {
    header = Header{};
    questions.clear();
    answers.clear();
    authorities = 0;
    events = 0;
    header_ok = false;
    complete = false;
}

bool parse_message(const uint8_t* data, size_t len, Message* out) {
    out->clear();
    if (!parse_header(data, len, &out->header, &out->events)) {
        return false;
    }
    out->header_ok = true;
    size_t pos = kHeaderLen;
    for (unsigned i = 0; i < out->header.qdcount; ++i) {
        Question q;
        size_t next = 0;
        bool keep = out->questions.size() < kMaxQuestions;
        if (!read_name(data, len, pos, keep ? &q.name : nullptr, &next, &out->events)) {
            return false;
        }
        if (next + 4 > len) {
            set_event(&out->events, Event::kTruncated);
            return false;
        }
        q.qtype = be16(data + next);
        q.qclass = be16(data + next + 2);
        pos = next + 4;
        if (keep) {
            out->questions.push_back(std::move(q));
        }
    }
    for (unsigned i = 0; i < out->header.ancount; ++i) {
        if (out->answers.size() < kMaxAnswers) {
            Answer a;
            if (!read_record(data, len, &pos, &a, &out->events)) {
                return false;
            }
            out->answers.push_back(std::move(a));
        } else if (!read_record(data, len, &pos, nullptr, &out->events)) {
            return false;
        }
    }
    for (unsigned i = 0; i < out->header.nscount; ++i) {
        if (!read_record(data, len, &pos, nullptr, &out->events)) {
            return false;
        }
        ++out->authorities;
    }
    out->complete = true;
    return true;
}

ProbeResult probe(const uint8_t* data, size_t len, bool is_tcp) {
    size_t msg_len = len;
    if (is_tcp) {
        if (len < 2) {
            return ProbeResult::kNeedMore;
        }
        msg_len = be16(data);
        data += 2;
        len -= 2;
        if (len > msg_len) {
            len = msg_len;
        }
    }
    // Header plus the smallest question (root name, type, class).
    if (msg_len < kHeaderLen + 5) {
        return ProbeResult::kNo;
    }
    if (len < kHeaderLen) {
        return ProbeResult::kNeedMore;
    }
    Header h;
    uint32_t events = 0;
    parse_header(data, len, &h, &events);
    if (events != 0 || h.qdcount == 0 || h.qdcount > kMaxQuestions) {
        return ProbeResult::kNo;
    }
    // Every record takes at least 5 (question) or 11 (RR) bytes: counts that cannot fit in the
    // message are not DNS.
    size_t min_len = kHeaderLen + 5 * static_cast<size_t>(h.qdcount) +
                     11 * (static_cast<size_t>(h.ancount) + h.nscount + h.arcount);
    if (min_len > msg_len) {
        return ProbeResult::kNo;
    }
    size_t next = 0;
    if (!read_name(data, len, kHeaderLen, nullptr, &next, &events)) {
        if (events == (1U << static_cast<unsigned>(Event::kTruncated)) && len < msg_len) {
            return ProbeResult::kNeedMore;
        }
        return ProbeResult::kNo;
    }
    if (next + 4 > len) {
        return len < msg_len ? ProbeResult::kNeedMore : ProbeResult::kNo;
    }
    return ProbeResult::kYes;
}

void export_stats(const DnsCounters& c, StatsSnapshot& out) {
    out.add("app_layer.dns.queries", c.queries.get());
    out.add("app_layer.dns.responses", c.responses.get());
    export_event_counters(out, "app_layer.dns.events.", c.events, event_name);
}

DnsParser::DnsParser(const DnsConfig& config, DnsCounters* counters, bool is_tcp)
    : config_(config), counters_(counters), is_tcp_(is_tcp) {
    if (config_.max_pending == 0) {
        config_.max_pending = 1;
    }
}

size_t DnsParser::feed(Dir dir, const uint8_t* data, size_t len) {
    messages_.clear();
    completed_.clear();
    if (is_tcp_) {
        tcp_[static_cast<size_t>(dir)].feed(
            data, len, [&](const uint8_t* m, size_t n) { on_message(dir, m, n); });
    } else {
        on_message(dir, data, len);
    }
    return messages_.size();
}

void DnsParser::count_events(uint32_t events) {
    for (size_t i = 0; i < kEventCount; ++i) {
        if ((events >> i) & 1U) {
            ++counters_->events[i];
        }
    }
}

void DnsParser::on_message(Dir dir, const uint8_t* data, size_t len) {
    messages_.push_back(Parsed{dir, Message{}});
    Message& m = messages_.back().message;
    parse_message(data, len, &m);
    if (m.header_ok) {
        if (dir == Dir::kToServer) {
            if (m.header.qr) {
                set_event(&m.events, Event::kNotARequest);
            } else {
                ++counters_->queries;
                if (pending_.size() >= config_.max_pending) {
                    set_event(&m.events, Event::kFlooded);
                    completed_.push_back(std::move(pending_.front()));
                    pending_.erase(pending_.begin());
                }
                Transaction tx;
                tx.id = m.header.id;
                tx.has_query = true;
                tx.query = m;
                pending_.push_back(std::move(tx));
            }
        } else {
            if (!m.header.qr) {
                set_event(&m.events, Event::kNotAResponse);
            } else {
                ++counters_->responses;
                Transaction tx;
                for (auto it = pending_.begin(); it != pending_.end(); ++it) {
                    if (it->id == m.header.id) {
                        tx = std::move(*it);
                        pending_.erase(it);
                        break;
                    }
                }
                tx.id = m.header.id;
                tx.has_response = true;
                tx.response = m;
                completed_.push_back(std::move(tx));
            }
        }
    }
    count_events(m.events);
}

void DnsParser::finish() {
    completed_.clear();
    messages_.clear();
    for (Transaction& tx : pending_) {
        completed_.push_back(std::move(tx));
    }
    pending_.clear();
}

namespace {
// Heap bytes of a string: nothing while it fits the small-string buffer.
size_t heap(const std::string& s) {
    return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
}

size_t message_heap(const Message& m) {
    size_t n = m.questions.capacity() * sizeof(Question) + m.answers.capacity() * sizeof(Answer);
    for (const Question& q : m.questions) {
        n += heap(q.name);
    }
    for (const Answer& a : m.answers) {
        n += heap(a.name) + heap(a.rdata);
    }
    return n;
}

size_t transactions_heap(const std::vector<Transaction>& v) {
    size_t n = v.capacity() * sizeof(Transaction);
    for (const Transaction& tx : v) {
        n += message_heap(tx.query) + message_heap(tx.response);
    }
    return n;
}

void strip(Message* m) {
    std::vector<Question>().swap(m->questions);
    std::vector<Answer>().swap(m->answers);
}
}  // namespace

size_t DnsParser::memory() const {
    size_t n = sizeof(*this) + tcp_[0].memory() + tcp_[1].memory();
    n += messages_.capacity() * sizeof(Parsed);
    for (const Parsed& p : messages_) {
        n += message_heap(p.message);
    }
    return n + transactions_heap(completed_) + transactions_heap(pending_);
}

void DnsParser::compact() {
    std::vector<Parsed>().swap(messages_);
    std::vector<Transaction>().swap(completed_);
    for (Transaction& tx : pending_) {
        strip(&tx.query);
        strip(&tx.response);
    }
}

std::string type_name(uint16_t type) {
    switch (type) {
        case 1:
            return "A";
        case 2:
            return "NS";
        case 5:
            return "CNAME";
        case 6:
            return "SOA";
        case 10:
            return "NULL";
        case 12:
            return "PTR";
        case 13:
            return "HINFO";
        case 15:
            return "MX";
        case 16:
            return "TXT";
        case 28:
            return "AAAA";
        case 33:
            return "SRV";
        case 35:
            return "NAPTR";
        case 41:
            return "OPT";
        case 43:
            return "DS";
        case 46:
            return "RRSIG";
        case 47:
            return "NSEC";
        case 48:
            return "DNSKEY";
        case 52:
            return "TLSA";
        case 64:
            return "SVCB";
        case 65:
            return "HTTPS";
        case 252:
            return "AXFR";
        case 255:
            return "ANY";
        case 257:
            return "CAA";
        default:
            return std::to_string(type);
    }
}

}  // namespace picket::sensor::applayer::dns
