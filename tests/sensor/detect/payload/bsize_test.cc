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
    EXPECT_EQ(err, "bsize: invalid range '6<>3' (the first value must be below the second)");
}

TEST_F(BsizeKeyword, RangeIsExclusive) {
    ok(kw::parse_bsize, "2<>4");
    EXPECT_TRUE(match("abc"));
    EXPECT_FALSE(match("ab"));
    EXPECT_FALSE(match("abcd"));
    EXPECT_FALSE(match(""));
}

TEST_F(BsizeKeyword, ParseErrors) {
    EXPECT_FALSE(add(kw::parse_bsize, "", false));
    EXPECT_EQ(err, "bsize: a value is required");
    EXPECT_FALSE(add(kw::parse_bsize, " <0 "));
    EXPECT_EQ(err, "bsize: '<0' can never match (values are 0-18446744073709551615)");
    EXPECT_FALSE(add(kw::parse_bsize, "18446744073709551616"));
    EXPECT_EQ(err, "bsize: value out of range 0-18446744073709551615 in '18446744073709551616'");
    EXPECT_FALSE(add(kw::parse_bsize, "3<>3"));
    EXPECT_EQ(err, "bsize: invalid range '3<>3' (the first value must be below the second)");
    EXPECT_FALSE(add(kw::parse_bsize, "abc"));
    EXPECT_EQ(err,
              "bsize: invalid value 'abc' (expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M "
              "with N from 0 to 18446744073709551615)");
    EXPECT_TRUE(rule.buffers.empty());
    // bsize is 64-bit: a value above 32 bits loads (it was refused before #22).
    ok(kw::parse_bsize, "4294967296");
}

}  // namespace
}  // namespace picket::sensor::detect
