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
    const Case cases[] = {{"!9", 0, false},  {"!9", 10, true}, {"!9", 9, false},
                          {">=0", 0, false}, {">=0", 1, true}, {"<10", 0, true},
                          {"<=10", 0, true}, {"0", 0, true},   {"10", 10, true}};
    for (const Case& c : cases) {
        reset();
        ok(kw::parse_dsize, c.arg);
        p.payload_len = c.len;
        EXPECT_EQ(rule.header_options[0]->match(pc), c.want) << c.arg << " len " << c.len;
    }
    reset();
    EXPECT_FALSE(add(kw::parse_dsize, "70000"));
    EXPECT_EQ(err,
              "dsize: invalid value '70000' (expected N, <N, <=N, >N, >=N, !N or N<>M, at most "
              "65535)");
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
    const char* forms = "' (expected N, <N, <=N, >N, >=N, !N or N<>M, at most 65535)";
    EXPECT_FALSE(add(kw::parse_dsize, "", false));
    EXPECT_EQ(err, std::string("dsize: invalid value '") + forms);
    EXPECT_FALSE(add(kw::parse_dsize, "abc"));
    EXPECT_EQ(err, std::string("dsize: invalid value 'abc") + forms);
    EXPECT_FALSE(add(kw::parse_dsize, "9<>2"));
    EXPECT_EQ(err, std::string("dsize: invalid value '9<>2") + forms);
    EXPECT_TRUE(rule.header_options.empty());
    EXPECT_TRUE(rule.buffers.empty());
}

}  // namespace
}  // namespace picket::sensor::detect
