#include "common/strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picket::strings {
namespace {

TEST(StringsTest, CatTakesStringsCharsAndIntegers) {
    const std::string s = "b";
    EXPECT_EQ(cat("a", s, std::string_view("c"), 'd', 42, -7, uint64_t{18446744073709551615u}),
              "abcd42-718446744073709551615");
    std::string out = "x";
    append(out, "=", 1u);
    EXPECT_EQ(out, "x=1");
}

TEST(StringsTest, JoinPutsTheSeparatorBetweenParts) {
    EXPECT_EQ(join(std::vector<std::string>{"a", "b", "c"}, ", "), "a, b, c");
    EXPECT_EQ(join(std::vector<int>{1, 2}, "/"), "1/2");
    EXPECT_EQ(join(std::vector<std::string>{}, ","), "");
}

TEST(StringsTest, SplitHasNoEmptyPieceAfterTheLastSeparator) {
    using V = std::vector<std::string_view>;
    EXPECT_EQ(split("a\nb\n", '\n'), (V{"a", "b"}));
    EXPECT_EQ(split("a\n\nb", '\n'), (V{"a", "", "b"}));
    EXPECT_EQ(split("\n", '\n'), (V{""}));
    EXPECT_EQ(split("", '\n'), V{});
    EXPECT_EQ(split("abc", ','), (V{"abc"}));
}

TEST(StringsTest, TrimAndUnquote) {
    EXPECT_EQ(trim(" \t a b \r\n"), "a b");
    EXPECT_EQ(trim("   "), "");
    EXPECT_EQ(unquote(" \" 10 \" "), "10");
    EXPECT_EQ(unquote("\"10"), "\"10");
}

TEST(StringsTest, ParseU32AcceptsOnlyDecimalDigitsThatFit) {
    EXPECT_EQ(parse_u32("0"), 0u);
    EXPECT_EQ(parse_u32("4294967295"), 4294967295u);
    EXPECT_EQ(parse_u32("4294967296"), std::nullopt);
    EXPECT_EQ(parse_u32("00000000001"), std::nullopt);  // 11 digits
    EXPECT_EQ(parse_u32(""), std::nullopt);
    EXPECT_EQ(parse_u32("-1"), std::nullopt);
    EXPECT_EQ(parse_u32("+1"), std::nullopt);
    EXPECT_EQ(parse_u32(" 1"), std::nullopt);
    EXPECT_EQ(parse_u32("1x"), std::nullopt);
    uint32_t out = 7;
    EXPECT_TRUE(parse_u32("42", &out));
    EXPECT_EQ(out, 42u);
    EXPECT_FALSE(parse_u32("4x", &out));
    EXPECT_EQ(out, 42u);  // untouched on failure
    EXPECT_EQ(parse_u64("18446744073709551615"), 18446744073709551615u);
    EXPECT_EQ(parse_u64("18446744073709551616"), std::nullopt);
}

TEST(StringsTest, DurationsInSecondsWithOneUnit) {
    EXPECT_EQ(parse_duration_seconds("0"), 0u);
    EXPECT_EQ(parse_duration_seconds("3600"), 3600u);
    EXPECT_EQ(parse_duration_seconds("90s"), 90u);
    EXPECT_EQ(parse_duration_seconds("30m"), 1800u);
    EXPECT_EQ(parse_duration_seconds("6h"), 21600u);
    EXPECT_EQ(parse_duration_seconds("7d"), 604800u);
    EXPECT_EQ(parse_duration_seconds("999999999d"), 999999999ull * 86400);
    for (const char* bad : {"", "s", "d", "1w", "1.5h", "-1s", " 1s", "1s ", "1hs", "1ms",
                            "1000000000", "10000000000d"}) {
        EXPECT_EQ(parse_duration_seconds(bad), std::nullopt) << bad;
    }
}

TEST(StringsTest, HexDigitsBothCases) {
    EXPECT_EQ(hex_value('0'), 0);
    EXPECT_EQ(hex_value('9'), 9);
    EXPECT_EQ(hex_value('a'), 10);
    EXPECT_EQ(hex_value('F'), 15);
    EXPECT_EQ(hex_value('g'), -1);
    EXPECT_EQ(hex_value(' '), -1);
    EXPECT_EQ(hex_encode(std::string_view("\x00\xff\x1a", 3)), "00ff1a");
}

TEST(StringsTest, JsonStringEscapesControlsAndInvalidUtf8) {
    std::string out;
    append_json_string(out,
                       "a\"b\\c\nd\re\tf\bg\fh\x01"
                       "\x7f");
    EXPECT_EQ(out, "\"a\\\"b\\\\c\\nd\\re\\tf\\bg\\fh\\u0001\x7f\"");
    out.clear();
    append_json_string(out, "caf\xc3\xa9");  // valid UTF-8 is kept
    EXPECT_EQ(out, "\"caf\xc3\xa9\"");
    out.clear();
    append_json_string(out, "\xc3(\xff\xed\xa0\x80");  // bad sequence, 0xff, a surrogate
    EXPECT_EQ(out, "\"\\u00c3(\\u00ff\\u00ed\\u00a0\\u0080\"");
    out.clear();
    append_json_string(out, "\xc0\xaf");  // overlong '/'
    EXPECT_EQ(out, "\"\\u00c0\\u00af\"");
}

}  // namespace
}  // namespace picket::strings
