// Payload keyword dsize (payload size, a header option).
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using DsizeKeyword = PayloadFixture;

TEST_F(DsizeKeyword, Dsize) {
    decode::Packet p{};
    pc.p = &p;
    ok(kw::parse_dsize, "10<>20");
    ASSERT_EQ(rule.header_options.size(), 1u);
    const HeaderOption& h = *rule.header_options[0];
    EXPECT_STREQ(h.keyword(), "dsize");
    p.payload_len = 15;
    EXPECT_TRUE(h.match(pc));
    p.payload_len = 20;
    EXPECT_FALSE(h.match(pc));
    EXPECT_FALSE(add(kw::parse_dsize, ">5"));
    EXPECT_EQ(err, "dsize: only one dsize per rule");
    reset();
    ok(kw::parse_dsize, "!0");
    p.payload_len = 0;
    EXPECT_FALSE(rule.header_options[0]->match(pc));
    // Suricata's "requires payload": !N and >=N never match an empty packet; <N, <=N, =0 do.
    struct Case {
        const char* arg;
        uint16_t len;
        bool want;
    };
    const Case cases[] = {{"!9", 0, false},   {"!9", 10, true},  {"!9", 9, false},
                          {">=1", 0, false},  {">=1", 1, true},  {"<10", 0, true},
                          {"<=10", 0, true},  {"0", 0, true},    {"10", 10, true},
                          {"!1-5", 0, false}, {"!1-5", 6, true}, {"!1-5", 3, false},
                          {"0x0a", 10, true}};
    for (const Case& c : cases) {
        reset();
        ok(kw::parse_dsize, c.arg);
        p.payload_len = c.len;
        EXPECT_EQ(rule.header_options[0]->match(pc), c.want) << c.arg << " len " << c.len;
    }
    reset();
    EXPECT_FALSE(add(kw::parse_dsize, "70000"));
    EXPECT_EQ(err, "dsize: value out of range 0-65535 in '70000'");
}

TEST_F(DsizeKeyword, ComparisonForms) {
    decode::Packet p{};
    pc.p = &p;
    struct Case {
        const char* arg;
        uint16_t len;
        bool want;
    };
    const Case cases[] = {{"<5", 4, true},        {"<5", 5, false},  {">5", 6, true},
                          {">5", 5, false},       {"!=5", 5, false}, {"!=5", 6, true},
                          {"65535", 65535, true}, {"=7", 7, true},   {"=7", 8, false}};
    for (const Case& c : cases) {
        reset();
        ok(kw::parse_dsize, c.arg);
        p.payload_len = c.len;
        EXPECT_EQ(rule.header_options[0]->match(pc), c.want) << c.arg << " len " << c.len;
    }
    // Without a packet nothing matches.
    pc.p = nullptr;
    EXPECT_FALSE(rule.header_options[0]->match(pc));
}

TEST_F(DsizeKeyword, ParseErrors) {
    EXPECT_FALSE(add(kw::parse_dsize, "", false));
    EXPECT_EQ(err, "dsize: a value is required");
    EXPECT_FALSE(add(kw::parse_dsize, "abc"));
    EXPECT_EQ(err,
              "dsize: invalid value 'abc' (expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M "
              "with N from 0 to 65535)");
    EXPECT_FALSE(add(kw::parse_dsize, "9<>2"));
    EXPECT_EQ(err, "dsize: invalid range '9<>2' (the first value must be below the second)");
    // >=0 always matches: refused like every integer keyword's (it was accepted before #22).
    EXPECT_FALSE(add(kw::parse_dsize, ">=0"));
    EXPECT_EQ(err, "dsize: '>=0' always matches (values are 0-65535)");
    EXPECT_TRUE(rule.header_options.empty());
    EXPECT_TRUE(rule.buffers.empty());
}

}  // namespace
}  // namespace picket::sensor::detect
