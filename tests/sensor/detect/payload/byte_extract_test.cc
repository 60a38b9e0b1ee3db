// Payload keyword byte_extract.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using ByteExtractKeyword = PayloadFixture;

TEST_F(ByteExtractKeyword, ByteExtractDrivesDistanceAndByteTest) {
    ok(kw::parse_byte_extract, "1,0,skip");
    ASSERT_EQ(st.byte_vars.size(), 1u);
    EXPECT_EQ(st.byte_vars[0], "skip");
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_distance, "skip");
    ok(kw::parse_within, "1");
    ok(kw::parse_byte_test, "1,=,skip,0,relative");
    EXPECT_TRUE(
        match("\x02"
              "abX\x02"));
    EXPECT_FALSE(
        match("\x02"
              "abX\x03"));
    EXPECT_FALSE(
        match("\x02"
              "aXb\x02"));
    EXPECT_EQ(scratch->byte_values[0], 2u);
}

TEST_F(ByteExtractKeyword, ByteExtractForms) {
    ok(kw::parse_byte_extract, "2,1,v,little,multiplier 3");
    ok(kw::parse_byte_test, "1,=,v,0");
    // bytes 1..2 little endian = 2, times 3 = 6; the byte at 0 must equal 6
    EXPECT_TRUE(match(std::string_view("\x06\x02\x00", 3)));
    EXPECT_FALSE(match(std::string_view("\x05\x02\x00", 3)));
    reset();
    ok(kw::parse_byte_extract, "1,0,v,align 4");
    ok(kw::parse_isdataat, "v");
    EXPECT_TRUE(
        match("\x05"
              "abcdefgh"));  // 5 -> 8, isdataat 8 with len 9
    EXPECT_FALSE(
        match("\x05"
              "abcdefg"));  // len 8
    reset();
    ok(kw::parse_byte_extract, "2,0,n,string,hex");
    ok(kw::parse_content, "\"Z\"");
    ok(kw::parse_offset, "n");
    EXPECT_TRUE(match("0a--------Z"));   // offset 10
    EXPECT_FALSE(match("0b--------Z"));  // offset 11
    EXPECT_FALSE(add(kw::parse_byte_extract, "1,0,9bad"));
    EXPECT_EQ(err, "byte_extract: invalid variable name '9bad'");
    EXPECT_FALSE(add(kw::parse_byte_extract, "1,0,v,align 3"));
    EXPECT_EQ(err, "byte_extract: align must be 2 or 4, got 'align 3'");
}

TEST_F(ByteExtractKeyword, ParseErrors) {
    EXPECT_FALSE(add(kw::parse_byte_extract, "1,0"));
    EXPECT_EQ(err, "byte_extract: expected <bytes>,<offset>,<name>[,flags]");
    EXPECT_FALSE(add(kw::parse_byte_extract, "0,0,v"));
    EXPECT_EQ(err, "byte_extract: invalid number of bytes '0' (1 to 8, up to 23 with string)");
    EXPECT_FALSE(add(kw::parse_byte_extract, "24,0,v"));
    EXPECT_EQ(err, "byte_extract: invalid number of bytes '24' (1 to 8, up to 23 with string)");
    EXPECT_FALSE(add(kw::parse_byte_extract, "1,x,v"));
    EXPECT_EQ(err, "byte_extract: invalid offset 'x' (-65535 to 65535)");
    EXPECT_FALSE(add(kw::parse_byte_extract, "1,0,v,multiplier 0"));
    EXPECT_EQ(err, "byte_extract: invalid multiplier 'multiplier 0' (1 to 65535)");
    EXPECT_FALSE(add(kw::parse_byte_extract, "1,0,v,bogus"));
    EXPECT_EQ(err, "byte_extract: unknown option 'bogus'");
    EXPECT_TRUE(st.byte_vars.empty());
}

}  // namespace
}  // namespace picket::sensor::detect
