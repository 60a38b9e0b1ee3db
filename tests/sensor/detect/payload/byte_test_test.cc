// Payload keyword byte_test.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using ByteTestKeyword = PayloadFixture;

TEST_F(ByteTestKeyword, ByteTestOperators) {
    const std::string data("\x00\x10\x20\x30", 4);
    struct Case {
        const char* arg;
        bool want;
    };
    const Case cases[] = {
        {"2,=,0x1020,1", true},        {"2,!=,0x1020,1", false}, {"2,<,4129,1", true},
        {"2,<,4128,1", false},         {"2,>,4127,1", true},     {"2,>,4128,1", false},
        {"2,<=,4128,1", true},         {"2,>=,4129,1", false},   {"1,&,0x10,1", true},
        {"1,&,0x01,1", false},         {"1,^,0x10,1", false},    {"1,^,0x11,1", true},
        {"2,=,0x2010,1,little", true}, {"1,!,0x10,1", false},    {"1,!<,0x10,1", true},
        {"4,=,0x00102030,0", true},    {"4,=,1,1", false},  // out of bounds
    };
    for (const Case& c : cases) {
        reset();
        ok(kw::parse_byte_test, c.arg);
        EXPECT_EQ(match(data), c.want) << c.arg;
    }
}

TEST_F(ByteTestKeyword, ByteTestStringAndBitmask) {
    struct Case {
        const char* arg;
        std::string data;
        bool want;
    };
    const Case cases[] = {
        {"3,=,123,0,string,dec", "123x", true},
        {"3,=,291,0,string,hex", "123x", true},
        {"3,=,83,0,string,oct", "123x", true},
        {"4,=,12,0,string,dec", "12ab", true},  // leading digits, as strtoull
        {"2,=,1,0,string,dec", "ab", false},    // no digit
        {"2,=,0x0f,0,bitmask 0x0ff0", std::string("\x00\xf0", 2), true},
        {"2,=,0xf,0,bitmask 0x0f00", std::string("\x0f\x00", 2), true},
        {"2,=,0xf,0,bitmask 0x0f00", std::string("\x0e\x00", 2), false},
    };
    for (const Case& c : cases) {
        reset();
        ok(kw::parse_byte_test, c.arg);
        EXPECT_EQ(match(c.data), c.want) << c.arg;
    }
}

TEST_F(ByteTestKeyword, ByteTestRelativeAndErrors) {
    ok(kw::parse_content, "\"len\"");
    ok(kw::parse_byte_test, "1,>,5,0,relative");
    EXPECT_TRUE(match("len\x09"));
    EXPECT_FALSE(match("len\x01"));
    EXPECT_TRUE(match("len\x01 len\x09"));  // relative byte_test backtracks the content
    EXPECT_FALSE(add(kw::parse_byte_test, "9,=,1,0"));
    EXPECT_EQ(err, "byte_test: number of bytes must be 1..8 without 'string', got 9");
    EXPECT_FALSE(add(kw::parse_byte_test, "1,~,1,0"));
    EXPECT_EQ(err, "byte_test: invalid operator '~'");
    EXPECT_FALSE(add(kw::parse_byte_test, "1,=,1,0,dce"));
    EXPECT_EQ(err, "byte_test: dce is not supported");
    EXPECT_FALSE(add(kw::parse_byte_test, "1,=,1,0,hex"));
    EXPECT_EQ(err, "byte_test: hex/dec/oct need 'string'");
    EXPECT_FALSE(add(kw::parse_byte_test, "1,=,nosuchvar,0"));
    EXPECT_EQ(err,
              "byte_test: invalid value 'nosuchvar' (0 to 18446744073709551615 or a "
              "byte_extract/byte_math variable)");
}

}  // namespace
}  // namespace picket::sensor::detect
