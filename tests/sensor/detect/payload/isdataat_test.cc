// Payload keyword isdataat.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using IsdataatKeyword = PayloadFixture;

TEST_F(IsdataatKeyword, Isdataat) {
    ok(kw::parse_isdataat, "4");
    EXPECT_TRUE(match("abcde"));
    EXPECT_FALSE(match("abcd"));
    reset();
    ok(kw::parse_content, "\"ab\"");
    ok(kw::parse_isdataat, "2,relative");
    EXPECT_TRUE(match("abcd"));
    EXPECT_FALSE(match("abc"));
    reset();
    ok(kw::parse_content, "\"ab\"");
    ok(kw::parse_isdataat, "!1,relative");
    EXPECT_TRUE(match("xab"));
    EXPECT_FALSE(match("abc"));
    EXPECT_TRUE(match("abc ab"));  // backtracks to the last "ab"
    EXPECT_FALSE(add(kw::parse_isdataat, "x"));
    EXPECT_EQ(err,
              "isdataat: invalid value 'x' (expected [!]N with N from 0 to 65535 or a "
              "byte_extract/byte_math variable)");
}

TEST_F(IsdataatKeyword, NegatedAbsolute) {
    ok(kw::parse_isdataat, "!3");
    EXPECT_TRUE(match("abc"));    // no byte at offset 3
    EXPECT_FALSE(match("abcd"));  // a byte at offset 3
    EXPECT_TRUE(match(""));
}

TEST_F(IsdataatKeyword, ParseErrors) {
    EXPECT_FALSE(add(kw::parse_isdataat, "", false));
    EXPECT_EQ(err, "isdataat: needs a value");
    EXPECT_FALSE(add(kw::parse_isdataat, "70000"));
    EXPECT_EQ(err,
              "isdataat: invalid value '70000' (expected [!]N with N from 0 to 65535 or a "
              "byte_extract/byte_math variable)");
    EXPECT_FALSE(add(kw::parse_isdataat, "!y,relative"));
    EXPECT_EQ(err,
              "isdataat: invalid value '!y' (expected [!]N with N from 0 to 65535 or a "
              "byte_extract/byte_math variable)");
    EXPECT_FALSE(add(kw::parse_isdataat, "4,bogus"));
    EXPECT_EQ(err, "isdataat: unknown option 'bogus'");
    EXPECT_TRUE(rule.buffers.empty());
}

}  // namespace
}  // namespace picket::sensor::detect
