// Payload keyword content and its modifiers (nocase, offset, depth, distance, within,
// startswith, endswith, fast_pattern), uricontent, and the inspection of a content chain.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using ContentKeyword = PayloadFixture;

TEST_F(ContentKeyword, ContentBasicAndHex) {
    ok(kw::parse_content, "\"ab|43 44|e\"");
    EXPECT_TRUE(match("xxabCDe"));
    EXPECT_FALSE(match("xxabcde"));
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_EQ(ci.bytes, "abCDe");
    EXPECT_FALSE(ci.nocase);
}

TEST_F(ContentKeyword, ContentEscapes) {
    ok(kw::parse_content, R"("a\"b\;c\\d\:")");
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_EQ(ci.bytes, "a\"b;c\\d:");
    EXPECT_TRUE(match("--a\"b;c\\d:--"));
}

TEST_F(ContentKeyword, ContentParseErrors) {
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

TEST_F(ContentKeyword, Nocase) {
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

TEST_F(ContentKeyword, ModifierWithoutContent) {
    EXPECT_FALSE(add(kw::parse_nocase, "", false));
    EXPECT_EQ(err, "nocase: needs a preceding content");
    EXPECT_FALSE(add(kw::parse_depth, "3"));
    EXPECT_EQ(err, "depth: needs a preceding content");
    EXPECT_FALSE(add(kw::parse_within, "3"));
    EXPECT_EQ(err, "within: needs a preceding content");
    EXPECT_FALSE(add(kw::parse_fast_pattern, "", false));
    EXPECT_EQ(err, "fast_pattern: needs a preceding content");
}

TEST_F(ContentKeyword, OffsetDepthBoundaries) {
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

TEST_F(ContentKeyword, ModifierConflicts) {
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

TEST_F(ContentKeyword, StartsWithEndsWith) {
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

TEST_F(ContentKeyword, DistanceWithinWindows) {
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"bc\"");
    ok(kw::parse_distance, "2");
    ok(kw::parse_within, "3");  // "bc" must start at cursor+2 and end by cursor+2+3
    EXPECT_TRUE(match("a..bc"));
    EXPECT_TRUE(match("a...bc"));    // ends exactly at 1+2+3 = 6
    EXPECT_FALSE(match("a....bc"));  // ends at 7
    EXPECT_FALSE(match("a.bc"));     // starts before distance
}

TEST_F(ContentKeyword, NegativeDistance) {
    ok(kw::parse_content, "\"def\"");
    ok(kw::parse_content, "\"bc\"");
    ok(kw::parse_distance, "-5");
    ok(kw::parse_within, "4");
    EXPECT_TRUE(match("abcdef"));   // cursor 6, window [1, 5)
    EXPECT_FALSE(match("bcxdef"));  // "bc" at 0 is before the window
}

TEST_F(ContentKeyword, ClassicBacktracking) {
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_distance, "0");
    ok(kw::parse_within, "1");
    EXPECT_TRUE(match("a a ab"));
    EXPECT_FALSE(match("a a a b"));
}

TEST_F(ContentKeyword, NoBacktrackWithDistanceOnly) {
    // A later "a" only shrinks a distance-only window, so one try is enough; still matches.
    ok(kw::parse_content, "\"a\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_distance, "0");
    EXPECT_TRUE(match("xa---b"));
    EXPECT_FALSE(match("b--a--"));
}

TEST_F(ContentKeyword, NegatedContent) {
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

TEST_F(ContentKeyword, Uricontent) {
    ok(kw::parse_uricontent, "\"/index\"");
    ASSERT_EQ(rule.buffers.size(), 1u);
    EXPECT_EQ(rule.buffers[0].buffer, BufferId::kHttpUri);
    ok(kw::parse_nocase, "", false);
    EXPECT_TRUE(match("/INDEX.php"));
}

TEST_F(ContentKeyword, FastPattern) {
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

TEST_F(ContentKeyword, HashEquals) {
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

TEST_F(ContentKeyword, RecursionLimitStops) {
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

TEST_F(ContentKeyword, NextRelationIsDecidedWhenLinked) {
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
