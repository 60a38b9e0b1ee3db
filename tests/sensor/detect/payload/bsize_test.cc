// Payload keyword bsize (size of the current buffer).
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using BsizeKeyword = PayloadFixture;

TEST_F(BsizeKeyword, Bsize) {
    struct Case {
        const char* arg;
        size_t len;
        bool want;
    };
    const Case cases[] = {
        {"5", 5, true},    {"5", 4, false},    {"<5", 4, true},    {"<5", 5, false},
        {">5", 6, true},   {">5", 5, false},   {"<=5", 5, true},   {">=5", 4, false},
        {"3<>6", 4, true}, {"3<>6", 3, false}, {"3<>6", 6, false}, {"!5", 4, true},
        {"=0", 0, true},   {"3-6", 5, true},
    };
    for (const Case& c : cases) {
        reset();
        ok(kw::parse_bsize, c.arg);
        EXPECT_EQ(match(std::string(c.len, 'x')), c.want) << c.arg << " len " << c.len;
    }
    EXPECT_FALSE(add(kw::parse_bsize, "6<>3"));
    EXPECT_EQ(err, "bsize: invalid value '6<>3' (expected N, <N, <=N, >N, >=N, !N or N<>M)");
}

TEST_F(BsizeKeyword, RangeIsExclusive) {
    ok(kw::parse_bsize, "2<>4");
    EXPECT_TRUE(match("abc"));
    EXPECT_FALSE(match("ab"));
    EXPECT_FALSE(match("abcd"));
    EXPECT_FALSE(match(""));
}

TEST_F(BsizeKeyword, ParseErrors) {
    const char* forms = "' (expected N, <N, <=N, >N, >=N, !N or N<>M)";
    EXPECT_FALSE(add(kw::parse_bsize, "", false));
    EXPECT_EQ(err, std::string("bsize: invalid value '") + forms);
    EXPECT_FALSE(add(kw::parse_bsize, " <0 "));  // can never match
    EXPECT_EQ(err, std::string("bsize: invalid value '<0") + forms);
    EXPECT_FALSE(add(kw::parse_bsize, "4294967296"));
    EXPECT_EQ(err, std::string("bsize: invalid value '4294967296") + forms);
    EXPECT_FALSE(add(kw::parse_bsize, "3<>3"));
    EXPECT_EQ(err, std::string("bsize: invalid value '3<>3") + forms);
    EXPECT_TRUE(rule.buffers.empty());
}

}  // namespace
}  // namespace picket::sensor::detect
