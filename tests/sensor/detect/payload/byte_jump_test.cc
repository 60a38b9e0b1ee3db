// Payload keyword byte_jump.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using ByteJumpKeyword = PayloadFixture;

// byte_jump:0 reads nothing and moves by post_offset (suricata-verify bug-4623).
TEST_F(ByteJumpKeyword, ByteJumpZeroBytesStepsByPostOffset) {
    ok(kw::parse_content, "\"|3a 01|\"");
    ok(kw::parse_byte_jump, "0,0,relative,post_offset -4");
    ok(kw::parse_pcre, "\"/^\\x7c\\xe0\\x3a/R\"");
    EXPECT_TRUE(match("zz\x7c\xe0\x3a\x01"));
    EXPECT_FALSE(match("zz\x7c\xe1\x3a\x01"));
    reset();
    ok(kw::parse_byte_jump, "0,2");
    ok(kw::parse_content, "\"c\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(match("abc"));
    EXPECT_FALSE(match("acb"));
}

TEST_F(ByteJumpKeyword, ByteJump) {
    // length byte 3, then 3 bytes, then "X"
    ok(kw::parse_byte_jump, "1,0");
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(
        match("\x03"
              "abcX"));
    EXPECT_FALSE(
        match("\x03"
              "abXc"));
    reset();
    ok(kw::parse_byte_jump, "1,0,multiplier 2");
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(
        match("\x02"
              "abcdX"));
    reset();
    ok(kw::parse_byte_jump, "1,0,post_offset -1");
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(
        match("\x03"
              "abXc"));
    reset();
    ok(kw::parse_byte_jump, "1,0,align");  // value 1 aligned to 4: 1 + 4 = 5
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(
        match("\x01"
              "abcdX"));
    reset();
    ok(kw::parse_byte_jump, "1,0,from_beginning");
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(
        match("\x03"
              "abXc"));
    reset();
    ok(kw::parse_byte_jump, "1,0,from_end,post_offset -2");
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(
        match(std::string_view("\x00"
                               "abcXd",
                               6)));
    reset();
    ok(kw::parse_byte_jump, "1,0");
    EXPECT_FALSE(
        match("\x05"
              "abcd"));  // jump lands at the end: no match (Suricata 7)
    EXPECT_TRUE(
        match("\x04"
              "abcde"));
    reset();
    ok(kw::parse_byte_jump, "2,0,string,dec");
    ok(kw::parse_content, "\"X\"");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(match("03abcX"));
    EXPECT_FALSE(add(kw::parse_byte_jump, "1,0,from_beginning,from_end"));
    EXPECT_EQ(err, "byte_jump: from_beginning and from_end cannot be combined");
}

TEST_F(ByteJumpKeyword, JumpPastTheBufferIsNoMatch) {
    ok(kw::parse_content, "\"L\"");
    ok(kw::parse_byte_jump, "1,0,relative");
    EXPECT_TRUE(match("L\x01xy"));   // lands at 3, inside the buffer of 4
    EXPECT_FALSE(match("L\x02xy"));  // lands at 4, the end
    EXPECT_FALSE(match("L"));        // nothing to read after the content
}

TEST_F(ByteJumpKeyword, ParseErrors) {
    EXPECT_FALSE(add(kw::parse_byte_jump, "1"));
    EXPECT_EQ(err, "byte_jump: expected <bytes>,<offset>[,flags]");
    EXPECT_FALSE(add(kw::parse_byte_jump, "", false));
    EXPECT_EQ(err, "byte_jump: expected <bytes>,<offset>[,flags]");
    EXPECT_FALSE(add(kw::parse_byte_jump, "x,0"));
    EXPECT_EQ(err,
              "byte_jump: invalid number of bytes 'x' (0 to 8, up to 23 with string, or a "
              "byte_extract/byte_math variable)");
    EXPECT_FALSE(add(kw::parse_byte_jump, "1,70000"));
    EXPECT_EQ(
        err,
        "byte_jump: invalid offset '70000' (-65535 to 65535 or a byte_extract/byte_math variable)");
    EXPECT_FALSE(add(kw::parse_byte_jump, "1,0,multiplier 0"));
    EXPECT_EQ(err, "byte_jump: invalid multiplier 'multiplier 0' (1 to 65535)");
    EXPECT_FALSE(add(kw::parse_byte_jump, "1,0,post_offset x"));
    EXPECT_EQ(err, "byte_jump: invalid post_offset 'post_offset x' (-65535 to 65535)");
    EXPECT_FALSE(add(kw::parse_byte_jump, "1,0,bogus"));
    EXPECT_EQ(err, "byte_jump: unknown option 'bogus'");
    EXPECT_TRUE(rule.buffers.empty());
}

}  // namespace
}  // namespace picket::sensor::detect
