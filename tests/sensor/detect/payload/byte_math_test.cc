// Payload keyword byte_math.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using ByteMathKeyword = PayloadFixture;

TEST_F(ByteMathKeyword, ByteMath) {
    ok(kw::parse_byte_math, "bytes 1, offset 0, oper +, rvalue 2, result r");
    ok(kw::parse_byte_test, "1,=,r,1");
    EXPECT_TRUE(match("\x03\x05"));
    EXPECT_FALSE(match("\x03\x04"));
    reset();
    ok(kw::parse_byte_extract, "1,0,m");
    ok(kw::parse_byte_math, "bytes 2, offset 1, oper <<, rvalue m, result r, endian little");
    ok(kw::parse_byte_test, "2,=,r,3");
    EXPECT_TRUE(match(std::string_view("\x02\x03\x00\x00\x0c", 5)));
    reset();
    ok(kw::parse_byte_math, "bytes 2, offset 0, oper /, rvalue 4, result q, string dec");
    ok(kw::parse_byte_test, "1,=,q,0,relative,string,dec");
    EXPECT_TRUE(match("205"));  // "20" / 4 = 5, compared with the digit after it
    EXPECT_FALSE(match("203"));
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes 1, offset 0, oper /, rvalue 0, result z"));
    EXPECT_EQ(err, "byte_math: division by zero");
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes 1, offset 0, oper +, result z"));
    EXPECT_EQ(err, "byte_math: bytes, offset, oper, rvalue and result are required");
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes 5, offset 0, oper +, rvalue 1, result z"));
    EXPECT_EQ(err, "byte_math: number of bytes must be 1..4 without 'string', got 5");
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes 1, offset 0, oper %, rvalue 1, result z"));
    EXPECT_EQ(err, "byte_math: invalid oper '%'");
}

TEST_F(ByteMathKeyword, ReadPastTheBufferIsNoMatch) {
    ok(kw::parse_byte_math, "bytes 2, offset 1, oper -, rvalue 1, result r");
    ok(kw::parse_byte_test, "1,=,r,0");
    EXPECT_TRUE(match(std::string_view("\x04\x00\x05", 3)));   // 5 - 1 = 4
    EXPECT_FALSE(match(std::string_view("\x03\x00\x05", 3)));  // 4 != 3
    EXPECT_FALSE(match(std::string_view("\x04\x00", 2)));      // bytes 1..2 out of bounds
}

TEST_F(ByteMathKeyword, ParseErrors) {
    EXPECT_FALSE(add(kw::parse_byte_math, "", false));
    EXPECT_EQ(err, "byte_math: needs arguments");
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes x, offset 0, oper +, rvalue 1, result z"));
    EXPECT_EQ(err, "byte_math: invalid bytes 'x' (1 to 10 or a byte_extract/byte_math variable)");
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes 1, offset 0, oper +, rvalue 1, result 9z"));
    EXPECT_EQ(err, "byte_math: invalid result name '9z'");
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes 1, offset 0, oper +, rvalue 1, result z, dce"));
    EXPECT_EQ(err, "byte_math: dce is not supported");
    EXPECT_FALSE(add(kw::parse_byte_math, "bytes 1, offset 0, oper +, rvalue 1, result z, x 1"));
    EXPECT_EQ(err, "byte_math: unknown option 'x 1'");
    EXPECT_TRUE(st.byte_vars.empty());
}

}  // namespace
}  // namespace picket::sensor::detect
