// rawbytes: Snort 2.9's content modifier "look at the raw packet data, ignoring any decoding
// done by preprocessors" (Snort manual 3.5.3, format `rawbytes;`, no argument). Suricata 7
// accepts it for compatibility as a "dummy keyword ... without effect" (detect-rawbytes.c) and
// rejects it with a value, without a preceding content, twice on one content, and after a
// sticky buffer. The payload Picket inspects is already raw, so a content with rawbytes
// matches exactly what it matches without it.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

namespace kw = keywords;

class Rawbytes : public ::testing::Test {
protected:
    Rawbytes() { st.rule = &rule; }
    bool add(KeywordParseFn fn, std::string_view value, bool has_value) {
        err.clear();
        return fn(st, value, has_value, &err);
    }
    bool match(std::string_view data) {
        return inspect_buffer(rule.buffers.at(0), reinterpret_cast<const uint8_t*>(data.data()),
                              static_cast<uint32_t>(data.size()), pc, *scratch);
    }

    Rule rule;
    ParseState st;
    PacketContext pc;
    PayloadScratchPtr scratch = make_payload_scratch();
    std::string err;
};

TEST_F(Rawbytes, IsANoOpOnThePacketPayload) {
    // Snort's example: telnet option negotiation bytes, which a normalizer would remove.
    ASSERT_TRUE(add(kw::parse_content, "\"|FF F1|\"", true)) << err;
    ASSERT_TRUE(add(kw::parse_rawbytes, "", false)) << err;
    EXPECT_TRUE(match("ab\xff\xf1z"));
    EXPECT_FALSE(match("ab\xff\xf2z"));
    EXPECT_FALSE(match(""));
    ContentInfo ci;
    ASSERT_TRUE(get_content_info(*rule.buffers[0].options[0], &ci));
    EXPECT_EQ(ci.bytes, "\xff\xf1");
}

TEST_F(Rawbytes, KeepsTheOtherModifiers) {
    // rawbytes between modifiers changes none of them (Snort: "offset and depth ... work on
    // the raw bytes").
    ASSERT_TRUE(add(kw::parse_content, "\"GET\"", true)) << err;
    ASSERT_TRUE(add(kw::parse_rawbytes, "", false)) << err;
    ASSERT_TRUE(add(kw::parse_nocase, "", false)) << err;
    ASSERT_TRUE(add(kw::parse_offset, "1", true)) << err;
    ASSERT_TRUE(add(kw::parse_depth, "3", true)) << err;
    EXPECT_TRUE(match(" get /"));
    EXPECT_FALSE(match("get /"));    // before the offset
    EXPECT_FALSE(match("  GET /"));  // ends past offset + depth
    ASSERT_TRUE(add(kw::parse_content, "\"/\"", true)) << err;
    ASSERT_TRUE(add(kw::parse_distance, "1", true)) << err;
    ASSERT_TRUE(add(kw::parse_rawbytes, "", false)) << err;
    ASSERT_TRUE(add(kw::parse_within, "1", true)) << err;
    EXPECT_TRUE(match(" GET /"));
    EXPECT_FALSE(match(" GET  /"));
}

TEST_F(Rawbytes, NeedsAPrecedingContent) {
    EXPECT_FALSE(add(kw::parse_rawbytes, "", false));
    EXPECT_EQ(err, "rawbytes: needs a preceding content");
    // A pcre is not a content (Suricata: "rawbytes needs a preceding content option").
    ASSERT_TRUE(add(kw::parse_pcre, "\"/x/\"", true)) << err;
    EXPECT_FALSE(add(kw::parse_rawbytes, "", false));
    EXPECT_EQ(err, "rawbytes: needs a preceding content");
}

TEST(RawbytesRule, AcceptedInAWholeRuleAndMatchesAsWithout) {
    RuleDiagnostic d;
    auto with = parse_rule(
        "alert tcp any any -> any 23 (content:\"|FF FA 18 00|\"; rawbytes; depth:4; sid:1;)",
        ParseEnv{}, &d);
    ASSERT_NE(with, nullptr) << d.reason;
    auto without = parse_rule(
        "alert tcp any any -> any 23 (content:\"|FF FA 18 00|\"; depth:4; sid:2;)", ParseEnv{}, &d);
    ASSERT_NE(without, nullptr) << d.reason;
    ASSERT_EQ(with->buffers.size(), 1u);
    EXPECT_EQ(with->buffers[0].buffer, BufferId::kPacket);
    PacketContext pc;
    PayloadScratchPtr scratch = make_payload_scratch();
    const std::string inputs[] = {std::string("\xff\xfa\x18\x00xterm", 9),
                                  std::string("x\xff\xfa\x18\x00", 5), std::string("\xff\xfa\x18")};
    const bool want[] = {true, false, false};
    for (size_t i = 0; i < 3; ++i) {
        const auto* data = reinterpret_cast<const uint8_t*>(inputs[i].data());
        const auto len = static_cast<uint32_t>(inputs[i].size());
        EXPECT_EQ(inspect_buffer(with->buffers[0], data, len, pc, *scratch), want[i]) << i;
        EXPECT_EQ(inspect_buffer(without->buffers[0], data, len, pc, *scratch), want[i]) << i;
    }
    // Snort 2.9 rules also carry it after a pcre's content.
    EXPECT_NE(
        parse_rule("alert tcp any any -> any any (content:\"a\"; rawbytes; pcre:\"/b/R\"; sid:3;)",
                   ParseEnv{}, &d),
        nullptr)
        << d.reason;
}

// Rejected by Suricata 7 ("rawbytes has no value", "can't use multiple rawbytes modifiers for
// the same content", "rawbytes cannot be combined with the ... sticky buffer") and by Snort
// (format `rawbytes;`); the expected texts follow nocase's.

TEST_F(Rawbytes, RejectsAValue) {
    ASSERT_TRUE(add(kw::parse_content, "\"x\"", true)) << err;
    EXPECT_FALSE(add(kw::parse_rawbytes, "1", true));
    EXPECT_EQ(err, "rawbytes: takes no value");
}

TEST_F(Rawbytes, RejectsARepeat) {
    ASSERT_TRUE(add(kw::parse_content, "\"x\"", true)) << err;
    ASSERT_TRUE(add(kw::parse_rawbytes, "", false)) << err;
    EXPECT_FALSE(add(kw::parse_rawbytes, "", false));
    EXPECT_EQ(err, "rawbytes: already set on this content");
}

TEST(RawbytesRule, RejectedAfterAStickyBuffer) {
    RuleDiagnostic d;
    EXPECT_EQ(
        parse_rule("alert http any any -> any any (http.uri; content:\"x\"; rawbytes; sid:1;)",
                   ParseEnv{}, &d),
        nullptr);
    EXPECT_EQ(d.category, "bad rawbytes");
}

}  // namespace
}  // namespace picket::sensor::detect
