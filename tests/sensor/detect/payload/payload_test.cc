// Payload keywords and content inspection: parse functions called directly on a hand-built
// ParseState, then inspect_buffer on byte strings.
#include <gtest/gtest.h>

#include <string>

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {
namespace {

namespace kw = keywords;

class Payload : public ::testing::Test {
protected:
    Payload() { st.rule = &rule; }

    bool add(KeywordParseFn fn, std::string_view value, bool has_value = true) {
        err.clear();
        return fn(st, value, has_value, &err);
    }
    // Adds and expects success.
    void ok(KeywordParseFn fn, std::string_view value, bool has_value = true) {
        ASSERT_TRUE(add(fn, value, has_value)) << value << ": " << err;
    }
    // Links the options as the end of parse_rule does, then inspects.
    bool match(std::string_view data, size_t list = 0) {
        link_payload_options(rule.buffers.at(list));
        return inspect_buffer(rule.buffers.at(list), reinterpret_cast<const uint8_t*>(data.data()),
                              static_cast<uint32_t>(data.size()), pc, *scratch);
    }
    // Parses a list of "keyword:value" items on a fresh rule.
    void reset() {
        rule = Rule{};
        st = ParseState{};
        st.rule = &rule;
    }

    Rule rule;
    ParseState st;
    PacketContext pc;
    PayloadScratchPtr scratch = make_payload_scratch();
    std::string err;
};

// ----------------------------------------------------------------------------- content

TEST_F(Payload, ContentBasicAndHex) {
    ok(kw::parse_content, "\"ab|43 44|e\"");
    EXPECT_TRUE(match("xxabCDe"));
    EXPECT_FALSE(match("xxabcde"));
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_EQ(ci.bytes, "abCDe");
    EXPECT_FALSE(ci.nocase);
}

TEST_F(Payload, ContentEscapes) {
    ok(kw::parse_content, R"("a\"b\;c\\d\:")");
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_EQ(ci.bytes, "a\"b;c\\d:");
    EXPECT_TRUE(match("--a\"b;c\\d:--"));
}

TEST_F(Payload, ContentParseErrors) {
    EXPECT_FALSE(add(kw::parse_content, "abc"));
    EXPECT_EQ(err, "content: pattern must be enclosed in double quotes");
    EXPECT_FALSE(add(kw::parse_content, "\"|41 4|\""));
    EXPECT_EQ(err, "content: odd number of hex digits");
    EXPECT_FALSE(add(kw::parse_content, "\"|41 4G|\""));
    EXPECT_EQ(err, "content: invalid hex character 'G'");
    EXPECT_FALSE(add(kw::parse_content, "\"|41\""));
    EXPECT_EQ(err, "content: unterminated hex block");
    EXPECT_FALSE(add(kw::parse_content, "\"\""));
    EXPECT_EQ(err, "content: empty pattern");
    EXPECT_FALSE(add(kw::parse_content, R"("a\x")"));
    EXPECT_EQ(err, "content: invalid escape '\\x'");
    EXPECT_FALSE(add(kw::parse_content, R"("a"b")"));
    EXPECT_EQ(err, "content: unescaped '\"' in pattern");
    EXPECT_TRUE(rule.buffers.empty());
}

TEST_F(Payload, Nocase) {
    ok(kw::parse_content, "\"HeLLo\"");
    ok(kw::parse_nocase, "", false);
    EXPECT_TRUE(match("say hello!"));
    EXPECT_TRUE(match("SAY HELLO"));
    EXPECT_FALSE(match("say hell0"));
    EXPECT_FALSE(add(kw::parse_nocase, "", false));
    EXPECT_EQ(err, "nocase: already set on this content");
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_TRUE(ci.nocase);
}

TEST_F(Payload, ModifierWithoutContent) {
    EXPECT_FALSE(add(kw::parse_nocase, "", false));
    EXPECT_EQ(err, "nocase: needs a preceding content");
    EXPECT_FALSE(add(kw::parse_depth, "3"));
    EXPECT_EQ(err, "depth: needs a preceding content");
    EXPECT_FALSE(add(kw::parse_within, "3"));
    EXPECT_EQ(err, "within: needs a preceding content");
    EXPECT_FALSE(add(kw::parse_fast_pattern, "", false));
    EXPECT_EQ(err, "fast_pattern: needs a preceding content");
}

TEST_F(Payload, OffsetDepthBoundaries) {
    ok(kw::parse_content, "\"abc\"");
    ok(kw::parse_offset, "2");
    ok(kw::parse_depth, "4");  // window [2, 6)
    EXPECT_TRUE(match("xxabcx"));
    EXPECT_TRUE(match("xxxabc"));    // ends exactly at 6
    EXPECT_FALSE(match("xxxxabc"));  // ends at 7
    EXPECT_FALSE(match("xabcxxx"));  // starts before the offset
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_EQ(ci.offset, 2);
    EXPECT_EQ(ci.depth, 6);
}

TEST_F(Payload, ModifierConflicts) {
    ok(kw::parse_content, "\"abc\"");
    EXPECT_FALSE(add(kw::parse_depth, "2"));
    EXPECT_EQ(err, "depth: 2 is smaller than the content length 3");
    EXPECT_FALSE(add(kw::parse_depth, "x"));
    EXPECT_EQ(err, "depth: invalid value 'x' (a number in [0, 65535] or a byte_extract variable)");
    ok(kw::parse_depth, "3");
    EXPECT_FALSE(add(kw::parse_depth, "5"));
    EXPECT_EQ(err, "depth: already set on this content");
    const char* mix =
        "cannot mix relative (distance/within) and absolute (offset/depth/startswith) modifiers "
        "on one content";
    EXPECT_FALSE(add(kw::parse_distance, "0"));
    EXPECT_EQ(err, std::string("distance: ") + mix);
    ok(kw::parse_content, "\"xyz\"");
    ok(kw::parse_within, "5");
    EXPECT_FALSE(add(kw::parse_offset, "1"));
    EXPECT_EQ(err, std::string("offset: ") + mix);
    ok(kw::parse_content, "\"long\"");
    EXPECT_FALSE(add(kw::parse_within, "3"));
    EXPECT_EQ(err, "within: 3 is smaller than the content length 4");
    ok(kw::parse_startswith, "", false);
    EXPECT_FALSE(add(kw::parse_offset, "1"));
    EXPECT_EQ(err, "offset: cannot be used with startswith");
    EXPECT_FALSE(add(kw::parse_depth, "10"));
    EXPECT_EQ(err, "depth: cannot be used with startswith");
    ok(kw::parse_content, "\"q\"");
    ok(kw::parse_depth, "10");
    EXPECT_FALSE(add(kw::parse_startswith, "", false));
    EXPECT_EQ(err, "startswith: cannot be used with depth or offset");
}

TEST_F(Payload, StartsWithEndsWith) {
    ok(kw::parse_content, "\"GET\"");
    ok(kw::parse_startswith, "", false);
    EXPECT_TRUE(match("GET /"));
    EXPECT_FALSE(match(" GET /"));
    reset();
    ok(kw::parse_content, "\".exe\"");
    ok(kw::parse_endswith, "", false);
    EXPECT_TRUE(match("a.exe"));
    EXPECT_TRUE(match("a.exe.exe"));  // the second occurrence ends the buffer
    EXPECT_FALSE(match("a.exe "));
    reset();
    ok(kw::parse_content, "\"ab\"");
    ok(kw::parse_startswith, "", false);
    ok(kw::parse_endswith, "", false);
    EXPECT_TRUE(match("ab"));
    EXPECT_FALSE(match("abab"));
}

TEST_F(Payload, DistanceWithinWindows) {
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"bc\"");
    ok(kw::parse_distance, "2");
    ok(kw::parse_within, "3");  // "bc" must start at cursor+2 and end by cursor+2+3
    EXPECT_TRUE(match("a..bc"));
    EXPECT_TRUE(match("a...bc"));    // ends exactly at 1+2+3 = 6
    EXPECT_FALSE(match("a....bc"));  // ends at 7
    EXPECT_FALSE(match("a.bc"));     // starts before distance
}

TEST_F(Payload, NegativeDistance) {
    ok(kw::parse_content, "\"def\"");
    ok(kw::parse_content, "\"bc\"");
    ok(kw::parse_distance, "-5");
    ok(kw::parse_within, "4");
    EXPECT_TRUE(match("abcdef"));   // cursor 6, window [1, 5)
    EXPECT_FALSE(match("bcxdef"));  // "bc" at 0 is before the window
}

TEST_F(Payload, ClassicBacktracking) {
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_distance, "0");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(match("a a ab"));
    EXPECT_FALSE(match("a a a b"));
}

TEST_F(Payload, NoBacktrackWithDistanceOnly) {
    // A later "a" only shrinks a distance-only window, so one try is enough; still matches.
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_distance, "0");
    EXPECT_TRUE(match("xa---b"));
    EXPECT_FALSE(match("b--a--"));
}

TEST_F(Payload, NegatedContent) {
    ok(kw::parse_content, "!\"evil\"");
    EXPECT_TRUE(match("good stuff"));
    EXPECT_FALSE(match("so evil"));
    reset();
    ok(kw::parse_content, "\"user\"");
    ok(kw::parse_content, "!\"root\"");
    ok(kw::parse_within, "6");
    EXPECT_TRUE(match("user admin"));
    EXPECT_FALSE(match("user root"));
    EXPECT_TRUE(match("user adminroot"));  // "root" outside the 6-byte window
    // The next "user" occurrence is tried when the negated window fails.
    EXPECT_TRUE(match("user root user guest"));
    reset();
    ok(kw::parse_content, "!\"xx\"");
    ok(kw::parse_depth, "4");
    EXPECT_TRUE(match("abcdxx"));
    EXPECT_FALSE(match("axxd"));
}

TEST_F(Payload, Uricontent) {
    ok(kw::parse_uricontent, "\"/index\"");
    ASSERT_EQ(rule.buffers.size(), 1u);
    EXPECT_EQ(rule.buffers[0].buffer, BufferId::kHttpUri);
    ok(kw::parse_nocase, "", false);
    EXPECT_TRUE(match("/INDEX.php"));
}

TEST_F(Payload, FastPattern) {
    ok(kw::parse_content, "\"abcdef\"");
    ok(kw::parse_fast_pattern, "1,3");
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_TRUE(ci.fast_pattern);
    EXPECT_TRUE(ci.has_chop);
    EXPECT_EQ(ci.chop_offset, 1);
    EXPECT_EQ(ci.chop_length, 3);
    ok(kw::parse_content, "\"zz\"");
    EXPECT_FALSE(add(kw::parse_fast_pattern, "", false));
    EXPECT_EQ(err, "fast_pattern: can be used on only one content in a rule");
    reset();
    ok(kw::parse_content, "\"abc\"");
    EXPECT_FALSE(add(kw::parse_fast_pattern, "2,2"));
    EXPECT_EQ(err, "fast_pattern: offset 2 + length 2 exceeds the content length 3");
    EXPECT_FALSE(add(kw::parse_fast_pattern, "bogus"));
    EXPECT_EQ(err, "fast_pattern: expected 'only' or '<offset>,<length>', got 'bogus'");
    ok(kw::parse_fast_pattern, "only");
    EXPECT_FALSE(add(kw::parse_depth, "5"));
    EXPECT_EQ(err, "depth: cannot be used with fast_pattern:only");
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_TRUE(ci.fast_pattern_only);
    reset();
    ok(kw::parse_content, "\"abc\"");
    ok(kw::parse_offset, "1");
    EXPECT_FALSE(add(kw::parse_fast_pattern, "only"));
    EXPECT_EQ(err,
              "fast_pattern: only cannot be used with offset, depth, distance, within, "
              "startswith or endswith");
}

TEST_F(Payload, HashEquals) {
    ok(kw::parse_content, "\"abc\"");
    ok(kw::parse_nocase, "", false);
    ok(kw::parse_content, "\"abc\"");
    ok(kw::parse_nocase, "", false);
    ok(kw::parse_content, "\"abc\"");
    const auto& o = rule.buffers[0].options;
    EXPECT_TRUE(o[0]->equals(*o[1]));
    EXPECT_EQ(o[0]->hash(), o[1]->hash());
    EXPECT_FALSE(o[0]->equals(*o[2]));
    ok(kw::parse_byte_test, "1,=,5,0");
    ok(kw::parse_byte_test, "1,=,5,0");
    ok(kw::parse_byte_test, "1,=,6,0");
    EXPECT_TRUE(o[3]->equals(*o[4]));
    EXPECT_EQ(o[3]->hash(), o[4]->hash());
    EXPECT_FALSE(o[3]->equals(*o[5]));
    EXPECT_FALSE(o[3]->equals(*o[0]));
}

// ----------------------------------------------------------------------------- pcre

TEST_F(Payload, PcreBasicAndCaseless) {
    ok(kw::parse_pcre, "\"/ab+c/i\"");
    EXPECT_TRUE(match("xxABBBC"));
    EXPECT_FALSE(match("xxac"));
    reset();
    ok(kw::parse_pcre, "\"/^GET/\"");
    EXPECT_TRUE(match("GET /"));
    EXPECT_FALSE(match(" GET /"));
}

TEST_F(Payload, PcreRelativeAndCursor) {
    ok(kw::parse_content, "\"key=\"");
    ok(kw::parse_pcre, "\"/^[0-9]+/R\"");
    EXPECT_TRUE(match("key=123"));
    EXPECT_FALSE(match("key=x123"));
    EXPECT_TRUE(match("key=x key=42"));  // backtracks to the second "key="
    reset();
    ok(kw::parse_pcre, "\"/a+/\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_within, "1");  // pcre sets the cursor to the end of its match
    EXPECT_TRUE(match("aaa-aab"));
    EXPECT_FALSE(match("aaa-aa-b"));
}

TEST_F(Payload, PcreNegatedAndBufferFlag) {
    ok(kw::parse_pcre, "!\"/admin/\"");
    EXPECT_TRUE(match("user"));
    EXPECT_FALSE(match("the admin"));
    reset();
    ok(kw::parse_content, "\"x\"");
    ok(kw::parse_pcre, "\"/\\/index\\.php/U\"");
    ASSERT_EQ(rule.buffers.size(), 2u);
    EXPECT_EQ(rule.buffers[1].buffer, BufferId::kHttpUri);
    EXPECT_EQ(st.current, &rule.buffers[0]);
    EXPECT_TRUE(match("/index.php", 1));
}

TEST_F(Payload, PcreErrors) {
    EXPECT_FALSE(add(kw::parse_pcre, "\"/x(/\""));
    EXPECT_EQ(err, "bad pcre '/x(/': missing closing parenthesis at offset 2");
    EXPECT_FALSE(add(kw::parse_pcre, "!\"/x/q\""));
    EXPECT_EQ(err, "bad pcre '!/x/q': unknown flag 'q'");
    EXPECT_FALSE(add(kw::parse_pcre, "\"x\""));
    EXPECT_EQ(err, "bad pcre 'x': expected /regex/flags");
    st.sticky = BufferId::kHttpHost;
    EXPECT_FALSE(add(kw::parse_pcre, "\"/x/U\""));
    EXPECT_EQ(err, "bad pcre '/x/U': buffer flag conflicts with the sticky buffer '" +
                       std::string(buffer_def(BufferId::kHttpHost).name) + "'");
}

TEST_F(Payload, PcreWithoutJit) {
    st.pcre_jit = false;
    ok(kw::parse_pcre, "\"/a.c/s\"");
    EXPECT_TRUE(match("a\nc"));
    EXPECT_FALSE(match("abd"));
}

// ----------------------------------------------------------------------------- byte_test

TEST_F(Payload, ByteTestOperators) {
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

TEST_F(Payload, ByteTestStringAndBitmask) {
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

TEST_F(Payload, ByteTestRelativeAndErrors) {
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
    EXPECT_EQ(err, "byte_test: invalid value 'nosuchvar'");
}

// ----------------------------------------------------------------------------- byte_jump

// byte_jump:0 reads nothing and moves by post_offset (suricata-verify bug-4623).
TEST_F(Payload, ByteJumpZeroBytesStepsByPostOffset) {
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

TEST_F(Payload, ByteJump) {
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

// ----------------------------------------------------------------------------- byte_extract

TEST_F(Payload, ByteExtractDrivesDistanceAndByteTest) {
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

TEST_F(Payload, ByteExtractForms) {
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

// ----------------------------------------------------------------------------- byte_math

TEST_F(Payload, ByteMath) {
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

// ----------------------------------------------------------------------------- isdataat

TEST_F(Payload, Isdataat) {
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
    EXPECT_EQ(err, "isdataat: invalid value 'x'");
}

// ----------------------------------------------------------------------------- bsize, dsize

TEST_F(Payload, Bsize) {
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

TEST_F(Payload, Dsize) {
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

// ----------------------------------------------------------------------------- limits

TEST_F(Payload, RecursionLimitStops) {
    // The last "a" is retried at each of its occurrences because the bounded "b" after it
    // never matches: 4000 tries, stopped at the limit.
    for (int i = 0; i < 6; ++i) {
        ok(kw::parse_content, "\"a\"");
        if (i > 0) {
            ok(kw::parse_distance, "0");
        }
    }
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_distance, "0");
    ok(kw::parse_within, "1");
    const std::string data(4000, 'a');
    EXPECT_FALSE(match(data));
    EXPECT_EQ(scratch->last_recursion_count, 3000u);
    EXPECT_EQ(scratch->recursion_limit_hits.get(), 1u);
    // A small limit makes an otherwise matching case fail, counted.
    reset();
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_distance, "0");
    ok(kw::parse_within, "1");
    scratch->recursion_limit = 4;
    EXPECT_FALSE(match("a a a ab"));
    EXPECT_EQ(scratch->recursion_limit_hits.get(), 2u);
    scratch->recursion_limit = 3000;
    EXPECT_TRUE(match("a a a ab"));
}

// ----------------------------------------------------------------------------- linking

TEST_F(Payload, NextRelationIsDecidedWhenLinked) {
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_distance, "0");
    ok(kw::parse_pcre, "\"/c/R\"");
    ok(kw::parse_content, "\"d\"");
    ok(kw::parse_within, "5");
    BufferMatch& m = rule.buffers.at(0);
    link_payload_options(m);
    ASSERT_EQ(m.options.size(), 4u);
    // a: the next option up to the next content is b, relative through distance only.
    EXPECT_EQ(m.options[0]->next_relation(), (NextRelation{true, false}));
    // b: followed by a relative pcre, which bounds the window.
    EXPECT_EQ(m.options[1]->next_relation(), (NextRelation{true, true}));
    // the pcre: followed by a content with within.
    EXPECT_EQ(m.options[2]->next_relation(), (NextRelation{true, true}));
    EXPECT_EQ(m.options[3]->next_relation(), (NextRelation{false, false}));
    EXPECT_EQ(m.options[0]->kind(), PayloadKind::kContent);
    EXPECT_EQ(m.options[2]->kind(), PayloadKind::kPcre);
}

}  // namespace
}  // namespace picket::sensor::detect
