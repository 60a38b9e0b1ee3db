// DNS parser: messages built here byte by byte; exact parsed values and exact event sets for
// every malformation the parser names; TCP framing split at every byte boundary; query /
// response matching and its bounds.
#include "sensor/applayer/dns/dns.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picket::sensor::applayer::dns {
namespace {

using Bytes = std::vector<uint8_t>;

uint32_t ev(Event e) {
    return 1U << static_cast<unsigned>(e);
}

void put16(Bytes& b, uint16_t v) {
    b.push_back(static_cast<uint8_t>(v >> 8));
    b.push_back(static_cast<uint8_t>(v));
}
void put32(Bytes& b, uint32_t v) {
    put16(b, static_cast<uint16_t>(v >> 16));
    put16(b, static_cast<uint16_t>(v));
}
void header(Bytes& b, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns,
            uint16_t ar) {
    put16(b, id);
    put16(b, flags);
    put16(b, qd);
    put16(b, an);
    put16(b, ns);
    put16(b, ar);
}
// Uncompressed name from dotted text.
void name(Bytes& b, const std::string& dotted) {
    size_t start = 0;
    while (start < dotted.size()) {
        size_t dot = dotted.find('.', start);
        if (dot == std::string::npos) {
            dot = dotted.size();
        }
        b.push_back(static_cast<uint8_t>(dot - start));
        b.insert(b.end(), dotted.begin() + static_cast<long>(start),
                 dotted.begin() + static_cast<long>(dot));
        start = dot + 1;
    }
    b.push_back(0);
}
void ptr(Bytes& b, uint16_t off) {
    put16(b, static_cast<uint16_t>(0xC000 | off));
}

// Query id 0x1234, RD, one question "WWW.Example.com" A IN.
Bytes make_query() {
    Bytes b;
    header(b, 0x1234, 0x0100, 1, 0, 0, 0);
    name(b, "WWW.Example.com");
    put16(b, 1);
    put16(b, 1);
    return b;
}

// Response to make_query with compression: CNAME www -> cdn.example.com (suffix compressed),
// A 93.184.216.34, AAAA 2001:db8::1, MX 10 mail.example.com, TXT "v=spf1" "-all", one NS
// authority record.
Bytes make_response() {
    Bytes b;
    header(b, 0x1234, 0x8180, 1, 5, 1, 0);
    name(b, "WWW.Example.com");  // at offset 12; "Example.com" at 16
    put16(b, 1);
    put16(b, 1);
    // CNAME
    ptr(b, 12);
    put16(b, 5);
    put16(b, 1);
    put32(b, 300);
    put16(b, 6);
    b.insert(b.end(), {3, 'c', 'd', 'n'});
    ptr(b, 16);
    size_t cdn = b.size() - 6;  // "cdn" label offset
    // A for cdn.Example.com
    ptr(b, static_cast<uint16_t>(cdn));
    put16(b, 1);
    put16(b, 1);
    put32(b, 60);
    put16(b, 4);
    b.insert(b.end(), {93, 184, 216, 34});
    // AAAA
    ptr(b, static_cast<uint16_t>(cdn));
    put16(b, 28);
    put16(b, 1);
    put32(b, 60);
    put16(b, 16);
    b.insert(b.end(), {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    // MX 10 mail.Example.com
    ptr(b, 16);
    put16(b, 15);
    put16(b, 1);
    put32(b, 3600);
    put16(b, 9);
    put16(b, 10);
    b.insert(b.end(), {4, 'm', 'a', 'i', 'l'});
    ptr(b, 16);
    // TXT
    ptr(b, 16);
    put16(b, 16);
    put16(b, 1);
    put32(b, 30);
    put16(b, 12);
    b.insert(b.end(), {6, 'v', '=', 's', 'p', 'f', '1', 4, '-', 'a', 'l', 'l'});
    // NS authority
    ptr(b, 16);
    put16(b, 2);
    put16(b, 1);
    put32(b, 86400);
    put16(b, 6);
    b.insert(b.end(), {3, 'n', 's', '1'});
    ptr(b, 16);
    return b;
}

TEST(DnsParse, Query) {
    Bytes q = make_query();
    Message m;
    ASSERT_TRUE(parse_message(q.data(), q.size(), &m));
    EXPECT_EQ(m.header.id, 0x1234);
    EXPECT_FALSE(m.header.qr);
    EXPECT_EQ(m.header.opcode, 0);
    EXPECT_TRUE(m.header.rd);
    EXPECT_EQ(m.header.flags, 0x0100);
    ASSERT_EQ(m.questions.size(), 1u);
    EXPECT_EQ(m.questions[0].name, "WWW.Example.com");
    EXPECT_EQ(m.questions[0].qtype, 1);
    EXPECT_EQ(m.questions[0].qclass, 1);
    EXPECT_EQ(m.events, 0u);
    EXPECT_TRUE(m.complete);
}

TEST(DnsParse, ResponseWithCompression) {
    Bytes r = make_response();
    Message m;
    ASSERT_TRUE(parse_message(r.data(), r.size(), &m));
    EXPECT_EQ(m.events, 0u);
    EXPECT_TRUE(m.header.qr);
    EXPECT_TRUE(m.header.ra);
    EXPECT_EQ(m.header.rcode, 0);
    ASSERT_EQ(m.answers.size(), 5u);
    EXPECT_EQ(m.answers[0].name, "WWW.Example.com");
    EXPECT_EQ(m.answers[0].rtype, 5);
    EXPECT_EQ(m.answers[0].ttl, 300u);
    EXPECT_EQ(m.answers[0].rdata, "cdn.Example.com");
    EXPECT_EQ(m.answers[1].name, "cdn.Example.com");
    EXPECT_EQ(m.answers[1].rdata, "93.184.216.34");
    EXPECT_EQ(m.answers[2].rtype, 28);
    EXPECT_EQ(m.answers[2].rdata, "2001:db8::1");
    EXPECT_EQ(m.answers[3].name, "Example.com");
    EXPECT_EQ(m.answers[3].rdata, "mail.Example.com");
    EXPECT_EQ(m.answers[3].mx_preference, 10);
    EXPECT_EQ(m.answers[4].rdata, "v=spf1-all");
    EXPECT_EQ(m.authorities, 1);
    EXPECT_EQ(type_name(m.answers[0].rtype), "CNAME");
    EXPECT_EQ(type_name(99), "99");
}

TEST(DnsParse, SelfPointerIsCompressionLoop) {
    Bytes b;
    header(b, 1, 0, 1, 0, 0, 0);
    ptr(b, 12);  // points at itself
    put16(b, 1);
    put16(b, 1);
    Message m;
    EXPECT_FALSE(parse_message(b.data(), b.size(), &m));
    EXPECT_EQ(m.events, ev(Event::kCompressionLoop));
    EXPECT_TRUE(m.questions.empty());
}

TEST(DnsParse, PointerIntoOwnLabelsIsCompressionLoop) {
    Bytes b;
    header(b, 1, 0, 1, 0, 0, 0);
    b.insert(b.end(), {3, 'a', 'b', 'c'});
    ptr(b, 12);  // back to the start of this same name
    put16(b, 1);
    put16(b, 1);
    Message m;
    EXPECT_FALSE(parse_message(b.data(), b.size(), &m));
    EXPECT_EQ(m.events, ev(Event::kCompressionLoop));
}

TEST(DnsParse, ForwardPointerIsInvalid) {
    Bytes b;
    header(b, 1, 0, 1, 0, 0, 0);
    ptr(b, 18);  // forward, to the root byte after the question
    put16(b, 1);
    put16(b, 1);
    b.push_back(0);
    Message m;
    EXPECT_FALSE(parse_message(b.data(), b.size(), &m));
    EXPECT_EQ(m.events, ev(Event::kInvalidPointer));
}

TEST(DnsParse, Label64) {
    Bytes b;
    header(b, 1, 0, 1, 0, 0, 0);
    b.push_back(64);
    b.insert(b.end(), 64, 'a');
    b.push_back(0);
    put16(b, 1);
    put16(b, 1);
    Message m;
    EXPECT_FALSE(parse_message(b.data(), b.size(), &m));
    EXPECT_EQ(m.events, ev(Event::kLabelTooLong));
}

TEST(DnsParse, Label63IsFine) {
    Bytes b;
    header(b, 1, 0, 1, 0, 0, 0);
    b.push_back(63);
    b.insert(b.end(), 63, 'a');
    b.push_back(0);
    put16(b, 1);
    put16(b, 1);
    Message m;
    ASSERT_TRUE(parse_message(b.data(), b.size(), &m));
    ASSERT_EQ(m.questions.size(), 1u);
    EXPECT_EQ(m.questions[0].name, std::string(63, 'a'));
}

// Labels 63+63+63+62 take 256 wire bytes with their length octets and the root; 63+63+63+61
// take 255, the maximum.
Bytes long_name_query(uint8_t last) {
    Bytes b;
    header(b, 1, 0, 1, 0, 0, 0);
    for (uint8_t l : {uint8_t{63}, uint8_t{63}, uint8_t{63}, last}) {
        b.push_back(l);
        b.insert(b.end(), l, 'x');
    }
    b.push_back(0);
    put16(b, 1);
    put16(b, 1);
    return b;
}

TEST(DnsParse, Name256TooLong) {
    Bytes b = long_name_query(62);
    Message m;
    EXPECT_FALSE(parse_message(b.data(), b.size(), &m));
    EXPECT_EQ(m.events, ev(Event::kNameTooLong));
}

TEST(DnsParse, Name255Fine) {
    Bytes b = long_name_query(61);
    Message m;
    ASSERT_TRUE(parse_message(b.data(), b.size(), &m));
    ASSERT_EQ(m.questions.size(), 1u);
    EXPECT_EQ(m.questions[0].name.size(), 253u);
}

TEST(DnsParse, TruncatedEverywhere) {
    Bytes r = make_response();
    // Every strict prefix fails with exactly "truncated" and never reads past the end.
    for (size_t n = 0; n < r.size(); ++n) {
        Bytes cut(r.begin(), r.begin() + static_cast<long>(n));
        Message m;
        EXPECT_FALSE(parse_message(cut.data(), cut.size(), &m)) << n;
        EXPECT_EQ(m.events, ev(Event::kTruncated)) << n;
    }
}

TEST(DnsParse, HeaderEvents) {
    Bytes q = make_query();
    q[2] = 0x38;  // opcode 7
    q[3] = 0x40;  // Z
    Message m;
    EXPECT_TRUE(parse_message(q.data(), q.size(), &m));
    EXPECT_EQ(m.header.opcode, 7);
    EXPECT_EQ(m.events, ev(Event::kInvalidOpcode) | ev(Event::kZFlagSet));
}

TEST(DnsParse, BadARdataLength) {
    Bytes b;
    header(b, 1, 0x8180, 0, 1, 0, 0);
    name(b, "a.b");
    put16(b, 1);
    put16(b, 1);
    put32(b, 5);
    put16(b, 3);
    b.insert(b.end(), {1, 2, 3});
    Message m;
    EXPECT_FALSE(parse_message(b.data(), b.size(), &m));
    EXPECT_EQ(m.events, ev(Event::kMalformedData));
}

TEST(DnsProbe, UdpAndTcp) {
    Bytes q = make_query();
    EXPECT_EQ(probe(q.data(), q.size(), false), ProbeResult::kYes);
    Bytes junk(40, 0xff);
    EXPECT_EQ(probe(junk.data(), junk.size(), false), ProbeResult::kNo);
    Bytes t;
    put16(t, static_cast<uint16_t>(q.size()));
    t.insert(t.end(), q.begin(), q.end());
    EXPECT_EQ(probe(t.data(), 1, true), ProbeResult::kNeedMore);
    EXPECT_EQ(probe(t.data(), 10, true), ProbeResult::kNeedMore);
    EXPECT_EQ(probe(t.data(), 20, true), ProbeResult::kNeedMore);
    EXPECT_EQ(probe(t.data(), t.size(), true), ProbeResult::kYes);
    Bytes http = {'G', 'E',  'T',  ' ', '/', ' ', 'H', 'T', 'T', 'P', '/',  '1', '.',
                  '1', '\r', '\n', 'H', 'o', 's', 't', ':', ' ', 'x', '\r', '\n'};
    EXPECT_EQ(probe(http.data(), http.size(), false), ProbeResult::kNo);
    EXPECT_EQ(probe(http.data(), http.size(), true), ProbeResult::kNo);
}

TEST(DnsTcp, FramingSplitAtEveryBoundary) {
    Bytes q = make_query();
    Bytes r = make_response();
    Bytes stream;
    for (const Bytes* m : {&q, &r, &q}) {
        put16(stream, static_cast<uint16_t>(m->size()));
        stream.insert(stream.end(), m->begin(), m->end());
    }
    for (size_t cut1 = 0; cut1 <= stream.size(); ++cut1) {
        DnsTcpReassembler ra;
        std::vector<Bytes> got;
        auto cb = [&](const uint8_t* d, size_t n) { got.emplace_back(d, d + n); };
        ra.feed(stream.data(), cut1, cb);
        ra.feed(stream.data() + cut1, stream.size() - cut1, cb);
        ASSERT_EQ(got.size(), 3u) << cut1;
        EXPECT_EQ(got[0], q);
        EXPECT_EQ(got[1], r);
        EXPECT_EQ(got[2], q);
        EXPECT_EQ(ra.buffered(), 0u);
    }
    // One byte at a time.
    DnsTcpReassembler ra;
    std::vector<Bytes> got;
    for (uint8_t byte : stream) {
        ra.feed(&byte, 1, [&](const uint8_t* d, size_t n) { got.emplace_back(d, d + n); });
    }
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[1], r);
}

TEST(DnsParser, UdpTransactionMatching) {
    DnsCounters c;
    DnsParser p(DnsConfig{}, &c, false);
    Bytes q = make_query();
    Bytes r = make_response();
    EXPECT_EQ(p.feed(Dir::kToServer, q.data(), q.size()), 1u);
    EXPECT_TRUE(p.completed().empty());
    EXPECT_EQ(p.pending(), 1u);
    EXPECT_EQ(p.feed(Dir::kToClient, r.data(), r.size()), 1u);
    ASSERT_EQ(p.completed().size(), 1u);
    const Transaction& tx = p.completed()[0];
    EXPECT_EQ(tx.id, 0x1234);
    EXPECT_TRUE(tx.has_query);
    EXPECT_TRUE(tx.has_response);
    EXPECT_EQ(tx.query.questions[0].name, "WWW.Example.com");
    EXPECT_EQ(tx.response.answers[1].rdata, "93.184.216.34");
    EXPECT_EQ(p.pending(), 0u);
    // Wrong direction.
    p.feed(Dir::kToServer, r.data(), r.size());
    EXPECT_EQ(p.messages()[0].message.events, ev(Event::kNotARequest));
    p.feed(Dir::kToClient, q.data(), q.size());
    EXPECT_EQ(p.messages()[0].message.events, ev(Event::kNotAResponse));
    StatsSnapshot s;
    export_stats(c, s);
    EXPECT_EQ(s.get("app_layer.dns.queries"), 1u);
    EXPECT_EQ(s.get("app_layer.dns.responses"), 1u);
    EXPECT_EQ(s.get("app_layer.dns.events.not_a_request"), 1u);
    EXPECT_EQ(s.get("app_layer.dns.events.not_a_response"), 1u);
    EXPECT_TRUE(s.has("app_layer.dns.events.compression_loop"));
}

TEST(DnsParser, FloodEvictsOldest) {
    DnsCounters c;
    DnsConfig cfg;
    cfg.max_pending = 2;
    DnsParser p(cfg, &c, false);
    Bytes q = make_query();
    for (uint16_t id = 1; id <= 3; ++id) {
        q[0] = 0;
        q[1] = static_cast<uint8_t>(id);
        p.feed(Dir::kToServer, q.data(), q.size());
    }
    EXPECT_EQ(p.messages()[0].message.events, ev(Event::kFlooded));
    ASSERT_EQ(p.completed().size(), 1u);
    EXPECT_EQ(p.completed()[0].id, 1);
    EXPECT_FALSE(p.completed()[0].has_response);
    EXPECT_EQ(p.pending(), 2u);
    p.finish();
    ASSERT_EQ(p.completed().size(), 2u);
    EXPECT_EQ(p.completed()[0].id, 2);
    EXPECT_EQ(p.completed()[1].id, 3);
    EXPECT_EQ(c.events[static_cast<size_t>(Event::kFlooded)].get(), 1u);
}

TEST(DnsParser, TcpTwoMessagesInOneSegment) {
    DnsCounters c;
    DnsParser p(DnsConfig{}, &c, true);
    Bytes q = make_query();
    Bytes stream;
    for (int i = 0; i < 2; ++i) {
        put16(stream, static_cast<uint16_t>(q.size()));
        stream.insert(stream.end(), q.begin(), q.end());
    }
    EXPECT_EQ(p.feed(Dir::kToServer, stream.data(), 5), 0u);
    EXPECT_EQ(p.feed(Dir::kToServer, stream.data() + 5, stream.size() - 5), 2u);
    EXPECT_EQ(c.queries.get(), 2u);
    Bytes r = make_response();
    Bytes rs;
    put16(rs, static_cast<uint16_t>(r.size()));
    rs.insert(rs.end(), r.begin(), r.end());
    EXPECT_EQ(p.feed(Dir::kToClient, rs.data(), rs.size()), 1u);
    EXPECT_EQ(p.completed().size(), 1u);
    EXPECT_EQ(p.pending(), 1u);
}

}  // namespace
}  // namespace picket::sensor::applayer::dns
