// DNS app-layer parser (RFC 1035) for UDP datagrams and TCP streams. parse_message() decodes
// one message (header, questions, answers); DnsTcpReassembler cuts a TCP stream into messages
// (2-byte length prefix, RFC 1035 4.2.2); DnsParser is the per-flow object that matches
// responses to queries by id. Malformed input becomes named events, never an exception.
// Only the worker that owns the flow calls these; counters are that worker's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"

namespace picket::sensor::applayer::dns {

// Same values as flow::Direction, kept local so this module does not depend on the flow table.
enum class Dir : uint8_t { kToServer = 0, kToClient = 1 };

// Each event is counted as "app_layer.dns.events.<event_name()>".
enum class Event : uint8_t {
    kMalformedData,    // structure that cannot be decoded (bad rdata length, pointer past end)
    kTruncated,        // the message ends inside the header, a name or a record
    kNameTooLong,      // a name longer than 255 octets on the wire (RFC 1035 2.3.4)
    kLabelTooLong,     // a label length byte 0x40..0xbf (> 63, or a reserved label type)
    kCompressionLoop,  // a pointer into the name being read, or too many jumps
    kInvalidPointer,   // a pointer that does not go backwards (RFC 1035 4.1.4 "prior")
    kNotARequest,      // QR=1 seen towards the server
    kNotAResponse,     // QR=0 seen towards the client
    kZFlagSet,         // the reserved Z bit is 1
    kInvalidOpcode,    // opcode not in {0,1,2,4,5,6}
    kFlooded,          // too many unanswered queries on the flow; the oldest was dropped
    kCount,
};
inline constexpr size_t kEventCount = static_cast<size_t>(Event::kCount);
const char* event_name(Event e);

struct Header {
    uint16_t id = 0;
    uint16_t flags = 0;  // the raw 16-bit flags word
    bool qr = false;
    uint8_t opcode = 0;
    bool aa = false, tc = false, rd = false, ra = false, z = false, ad = false, cd = false;
    uint8_t rcode = 0;
    uint16_t qdcount = 0, ancount = 0, nscount = 0, arcount = 0;
};

// Names are the labels joined with '.', without a trailing dot, bytes as in the packet (case
// kept, no escaping), like Suricata's dns.query buffer. The root name is "".
struct Question {
    std::string name;
    uint16_t qtype = 0;
    uint16_t qclass = 0;
};

struct Answer {
    std::string name;
    uint16_t rtype = 0;
    uint16_t rclass = 0;
    uint32_t ttl = 0;
    uint16_t rdlength = 0;
    // A: "1.2.3.4"; AAAA: inet_ntop text; CNAME/PTR/NS: the name; MX: the exchange name
    // (preference in mx_preference); TXT: the character-strings joined with no separator.
    // Other types: empty.
    std::string rdata;
    uint16_t mx_preference = 0;
};

// Only this many records of each kind are stored; later ones are still walked (for events).
inline constexpr size_t kMaxQuestions = 16;
inline constexpr size_t kMaxAnswers = 64;

struct Message {
    Header header;
    std::vector<Question> questions;
    std::vector<Answer> answers;  // the answer section only
    uint16_t authorities = 0;     // authority records walked successfully
    uint32_t events = 0;          // bit (1 << Event)
    bool header_ok = false;       // the 12-byte header was present
    bool complete = false;        // every section parsed to its end

    bool has(Event e) const { return (events >> static_cast<unsigned>(e)) & 1U; }
    void clear();
};

// Parses one DNS message (a UDP payload, or one TCP message without its length prefix).
// Returns true when the header, questions, answers and authorities all parsed (out->complete);
// on false, what was parsed before the error stays in *out (e.g. the questions of a message
// whose answers are corrupt) and out->events says why. Stops at the first structural error.
// The additional section is not parsed.
bool parse_message(const uint8_t* data, size_t len, Message* out);

enum class ProbeResult : uint8_t { kNo, kYes, kNeedMore };
// Protocol detection: a plausible header (opcode valid, Z clear, 1..16 questions, counts not
// absurd) whose first question parses. For TCP, data starts with the 2-byte length prefix and
// kNeedMore is returned until the first question is complete.
ProbeResult probe(const uint8_t* data, size_t len, bool is_tcp);

// Cuts one direction of a DNS-over-TCP stream into messages. Feed in-order stream bytes in any
// pieces; on_message(const uint8_t*, size_t) runs once per complete message. Only the partial
// message is buffered, so memory stays under 2 + 65535 bytes.
class DnsTcpReassembler {
public:
    template <typename F>
    void feed(const uint8_t* data, size_t len, F&& on_message) {
        while (len > 0) {
            if (need_ == 0) {  // reading the length prefix
                len_bytes_[len_have_++] = *data++;
                --len;
                if (len_have_ == 2) {
                    need_ = static_cast<size_t>(len_bytes_[0]) << 8 | len_bytes_[1];
                    len_have_ = 0;
                    buf_.clear();
                    if (need_ == 0) {
                        on_message(data, 0);  // an empty message: parse_message flags it
                    }
                }
                continue;
            }
            size_t missing = need_ - buf_.size();
            if (buf_.empty() && len >= need_) {  // whole message in this piece: no copy
                on_message(data, need_);
                data += need_;
                len -= need_;
                need_ = 0;
                continue;
            }
            size_t take = len < missing ? len : missing;
            buf_.insert(buf_.end(), data, data + take);
            data += take;
            len -= take;
            if (buf_.size() == need_) {
                on_message(buf_.data(), buf_.size());
                need_ = 0;
                buf_.clear();
            }
        }
    }
    size_t buffered() const { return buf_.size() + len_have_; }
    size_t memory() const { return buf_.capacity(); }

private:
    std::vector<uint8_t> buf_;
    size_t need_ = 0;  // length of the message being collected; 0 while reading the prefix
    uint8_t len_bytes_[2] = {0, 0};
    uint8_t len_have_ = 0;
};

struct DnsCounters {
    Counter queries;    // messages with QR=0 seen towards the server
    Counter responses;  // messages with QR=1 seen towards the client
    Counter events[kEventCount];
};
// "app_layer.dns.queries", "app_layer.dns.responses", "app_layer.dns.events.<name>".
void export_stats(const DnsCounters& c, StatsSnapshot& out);

struct DnsConfig {
    size_t max_pending = 64;  // unanswered queries kept per flow (Suricata: request-flood 500)
};

// A query and its response, matched by id. Either side may be missing: a response with no
// query, or a query evicted unanswered (flooded) or left over at finish().
struct Transaction {
    uint16_t id = 0;
    bool has_query = false;
    bool has_response = false;
    Message query;
    Message response;
};

// Per-flow state. For UDP call feed() once per datagram; for TCP once per in-order stream
// chunk per direction. After each feed(), messages() holds the messages parsed from that call
// (with their direction) and completed() the transactions that became complete.
class DnsParser {
public:
    DnsParser(const DnsConfig& config, DnsCounters* counters, bool is_tcp);

    // Returns the number of messages parsed by this call.
    size_t feed(Dir dir, const uint8_t* data, size_t len);
    // End of flow: every unanswered query becomes a completed transaction (query only).
    void finish();

    struct Parsed {
        Dir dir;
        Message message;
    };
    const std::vector<Parsed>& messages() const { return messages_; }
    const std::vector<Transaction>& completed() const { return completed_; }
    size_t pending() const { return pending_.size(); }
    // Bytes held by this flow's parser on the heap and inline: reassembly buffers, the last
    // call's messages and completed transactions, pending queries (vectors by capacity, strings
    // beyond the small-string buffer). An estimate, cheap enough to call after every feed().
    size_t memory() const;
    // Frees what only the caller of the last feed() needed: messages() and completed() become
    // empty (their storage released), and pending queries keep only their headers (questions
    // and answers dropped), which is all the matching by id needs. For a UDP flow whose caller
    // has copied what it keeps, this leaves a few hundred bytes per flow.
    void compact();

private:
    void on_message(Dir dir, const uint8_t* data, size_t len);
    void count_events(uint32_t events);

    DnsConfig config_;
    DnsCounters* counters_;
    bool is_tcp_;
    DnsTcpReassembler tcp_[2];
    std::vector<Parsed> messages_;
    std::vector<Transaction> completed_;
    // Oldest first. A vector, not a deque: an empty libstdc++ deque already holds ~600 bytes,
    // and there are at most max_pending entries to shift.
    std::vector<Transaction> pending_;
};

// "A", "AAAA", "CNAME"..., or the decimal number for types without a mnemonic here.
std::string type_name(uint16_t type);

}  // namespace picket::sensor::applayer::dns
