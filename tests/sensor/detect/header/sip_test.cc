// sip_method and sip_stat_code (keywords/sip.cc): parsing, and matching on the start line of
// the bytes pkt_data is matched against.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::parse_error;

const std::string kInvite =
    "INVITE sip:bob@biloxi.example.com SIP/2.0\r\n"
    "Via: SIP/2.0/UDP pc33.atlanta.example.com;branch=z9hG4bK776asdhds\r\n"
    "CSeq: 314159 INVITE\r\n\r\n";
const std::string kOptions = "options sip:100@10.0.0.2 sip/2.0\r\nCSeq: 1 OPTIONS\r\n\r\n";
const std::string kRinging = "SIP/2.0 180 Ringing\r\nCSeq: 314159 INVITE\r\n\r\n";
const std::string kNotFound = "SIP/2.0 404 Not Found\r\n\r\n";

// 1 = parsed and matched, 0 = parsed and did not match, -1 = parse error.
int eval_on(KeywordParseFn fn, std::string_view value, const std::string& payload) {
    test::Fixture f;
    if (!f.parse(fn, value)) {
        return -1;
    }
    decode::Packet p;
    p.flags = decode::kFlagIpv4 | decode::kFlagUdp;
    p.payload = reinterpret_cast<const uint8_t*>(payload.data());
    p.payload_len = static_cast<uint32_t>(payload.size());
    return f.match(test::ctx(p)) ? 1 : 0;
}

TEST(SipMethodTest, Matches) {
    EXPECT_EQ(eval_on(parse_sip_method, "invite", kInvite), 1);
    EXPECT_EQ(eval_on(parse_sip_method, "INVITE", kInvite), 1);
    EXPECT_EQ(eval_on(parse_sip_method, "bye", kInvite), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "cancel, invite", kInvite), 1);
    EXPECT_EQ(eval_on(parse_sip_method, "cancel,bye", kInvite), 0);
    // The method in traffic is compared without case too (Snort 3 upper-cases both).
    EXPECT_EQ(eval_on(parse_sip_method, "options", kOptions), 1);
    // A method Snort does not list is still a method.
    EXPECT_EQ(eval_on(parse_sip_method, "publish", "PUBLISH sip:a@b SIP/2.0\r\n\r\n"), 1);
}

TEST(SipMethodTest, Negation) {
    EXPECT_EQ(eval_on(parse_sip_method, "!invite", kInvite), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "!bye", kInvite), 1);
    EXPECT_EQ(eval_on(parse_sip_method, " ! bye ", kInvite), 1);
    // Only a request: a response or anything not SIP matches neither form.
    EXPECT_EQ(eval_on(parse_sip_method, "!bye", kRinging), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "!bye", "GET / HTTP/1.1\r\n\r\n"), 0);
}

TEST(SipMethodTest, NotSip) {
    EXPECT_EQ(eval_on(parse_sip_method, "invite", kRinging), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "invite", ""), 0);
    // HTTP, a request line without a line end, no URI scheme, another version, extra token.
    EXPECT_EQ(eval_on(parse_sip_method, "get", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "invite", "INVITE sip:bob@b SIP/2.0"), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "invite", "INVITE bob SIP/2.0\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "invite", "INVITE sip:bob@b SIP/3.0\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "invite", "INVITE sip:bob@b SIP/2.0 x\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "invite", "xx INVITE sip:bob@b SIP/2.0\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_method, "invite", "INV(TE sip:bob@b SIP/2.0\r\n"), 0);
    // Bare LF ends the line too.
    EXPECT_EQ(eval_on(parse_sip_method, "invite", "INVITE sip:bob@b SIP/2.0\n"), 1);
}

TEST(SipMethodTest, Errors) {
    EXPECT_EQ(parse_error(parse_sip_method, "", false),
              "sip_method: a method list is required (e.g. invite,cancel or !bye)");
    EXPECT_EQ(parse_error(parse_sip_method, "  "),
              "sip_method: a method list is required (e.g. invite,cancel or !bye)");
    EXPECT_EQ(parse_error(parse_sip_method, "!invite,bye"),
              "sip_method: '!' allows only one method, got '!invite,bye'");
    EXPECT_EQ(parse_error(parse_sip_method, "invite,!bye"),
              "sip_method: '!' allows only one method, got 'invite,!bye'");
    EXPECT_EQ(parse_error(parse_sip_method, "invite,,bye"),
              "sip_method: invalid method '' in 'invite,,bye'");
    EXPECT_EQ(parse_error(parse_sip_method, "\"invite\""),
              "sip_method: invalid method '\"invite\"' in '\"invite\"'");
    EXPECT_EQ(parse_error(parse_sip_method, "!"), "sip_method: invalid method '' in '!'");
}

TEST(SipStatCodeTest, Matches) {
    EXPECT_EQ(eval_on(parse_sip_stat_code, "180", kRinging), 1);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "1", kRinging), 1);  // the class
    EXPECT_EQ(eval_on(parse_sip_stat_code, "4", kRinging), 0);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "4", kNotFound), 1);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "200, 404", kNotFound), 1);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "200,181", kRinging), 0);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "180", "sip/2.0 180\r\n"), 1);  // no reason
    // Requests and anything not a SIP status line.
    EXPECT_EQ(eval_on(parse_sip_stat_code, "1,2,3,4,5,6,7,8,9", kInvite), 0);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "2", "HTTP/1.1 200 OK\r\n\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "1", "SIP/2.0 18 Ringing\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "1", "SIP/2.0 1800 Ringing\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "1", "SIP/2.0 099 x\r\n"), 0);
    EXPECT_EQ(eval_on(parse_sip_stat_code, "1", "SIP/2.0 180 Ringing"), 0);
}

TEST(SipStatCodeTest, Errors) {
    const char* range = "' (expected 100 to 999, or 1 to 9 for a class)";
    EXPECT_EQ(parse_error(parse_sip_stat_code, "", false),
              "sip_stat_code: a code list is required (e.g. 200,4)");
    EXPECT_EQ(parse_error(parse_sip_stat_code, "0"),
              std::string("sip_stat_code: invalid code '0") + range);
    EXPECT_EQ(parse_error(parse_sip_stat_code, "42"),
              std::string("sip_stat_code: invalid code '42") + range);
    EXPECT_EQ(parse_error(parse_sip_stat_code, "1000"),
              std::string("sip_stat_code: invalid code '1000") + range);
    EXPECT_EQ(parse_error(parse_sip_stat_code, "2xx"),
              std::string("sip_stat_code: invalid code '2xx") + range);
    EXPECT_EQ(parse_error(parse_sip_stat_code, "200,"),
              std::string("sip_stat_code: invalid code '") + range);
    EXPECT_EQ(parse_error(parse_sip_stat_code, "1,2,3,4,5,6,7,8,9,1,2,3,4,5,6,7,8,9,1,2,3"),
              "sip_stat_code: at most 20 codes, got 21");
}

// The bytes being matched (PacketContext::data: a stream chunk) win over the packet's.
TEST(SipMethodTest, ReadsTheInspectedBytes) {
    test::Fixture f;
    ASSERT_TRUE(f.parse(parse_sip_method, "invite"));
    decode::Packet p;
    p.payload = reinterpret_cast<const uint8_t*>(kRinging.data());
    p.payload_len = static_cast<uint32_t>(kRinging.size());
    PacketContext pc = test::ctx(p);
    EXPECT_FALSE(f.match(pc));
    pc.data = reinterpret_cast<const uint8_t*>(kInvite.data());
    pc.data_len = static_cast<uint32_t>(kInvite.size());
    EXPECT_TRUE(f.match(pc));
}

// Identical options are shared by the compiler: equal lists are equal, order matters not
// for the result but is kept as written.
TEST(SipMethodTest, HashAndEquals) {
    test::Fixture a, b, c;
    ASSERT_TRUE(a.parse(parse_sip_method, "invite,bye"));
    ASSERT_TRUE(b.parse(parse_sip_method, "INVITE, BYE"));
    ASSERT_TRUE(c.parse(parse_sip_method, "!invite"));
    const HeaderOption& oa = *a.rule.header_options[0];
    const HeaderOption& ob = *b.rule.header_options[0];
    const HeaderOption& oc = *c.rule.header_options[0];
    EXPECT_TRUE(oa.equals(ob));
    EXPECT_EQ(oa.hash(), ob.hash());
    EXPECT_FALSE(oa.equals(oc));
    EXPECT_STREQ(oa.keyword(), "sip_method");
}

}  // namespace
}  // namespace picket::sensor::detect
