// The tag keyword (Suricata 7): what its parser records (defaults, every form) and refuses, and
// the tagging itself (detect/tag.h) on hand-built packets: packet, byte and second limits in
// packet time, session tags on a flow's store, host tags by source or destination, renewal,
// and the bounds (tags per flow, the host table's probe window).
#include <gtest/gtest.h>

#include <string>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/tag.h"
#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::Fixture;
using test::parse_error;
using test::tcp_packet;
using test::v4;

constexpr int64_t kSec = 1000000000;
constexpr int64_t kT0 = 1700000000 * kSec;  // the alert's packet time

TagSpec parsed(const char* value) {
    Fixture f;
    EXPECT_TRUE(f.parse(parse_tag, value)) << value << ": " << f.error;
    EXPECT_EQ(f.rule.tags.size(), 1u) << value;
    return f.rule.tags.empty() ? TagSpec{} : f.rule.tags[0];
}

TEST(TagParseTest, RecordsEveryFormWithSuricatasDefaults) {
    EXPECT_EQ(parsed("session"), (TagSpec{TagScope::kSession, TagMetric::kPackets, 256, false}));
    EXPECT_EQ(parsed("host"), (TagSpec{TagScope::kHost, TagMetric::kPackets, 256, false}));
    EXPECT_EQ(parsed("session,5,packets"),
              (TagSpec{TagScope::kSession, TagMetric::kPackets, 5, false}));
    EXPECT_EQ(parsed("session,30,seconds"),
              (TagSpec{TagScope::kSession, TagMetric::kSeconds, 30, false}));
    EXPECT_EQ(parsed("host,100,packets,src"),
              (TagSpec{TagScope::kHost, TagMetric::kPackets, 100, true}));
    EXPECT_EQ(parsed("host,3600,seconds,dst"),
              (TagSpec{TagScope::kHost, TagMetric::kSeconds, 3600, false}));
    EXPECT_EQ(parsed("host, 100, bytes"),
              (TagSpec{TagScope::kHost, TagMetric::kBytes, 100, false}));
    EXPECT_EQ(parsed("\"session,0,bytes\""),
              (TagSpec{TagScope::kSession, TagMetric::kBytes, 0, false}));
    EXPECT_EQ(parsed("session,4294967295,packets").count, 4294967295u);
}

TEST(TagParseTest, SeveralTagsInOneRuleUpToEight) {
    Fixture f;
    for (int i = 0; i < 8; ++i) {
        ASSERT_TRUE(f.parse(parse_tag, i % 2 == 0 ? "session" : "host,1,seconds,src")) << f.error;
    }
    EXPECT_EQ(f.rule.tags.size(), 8u);
    EXPECT_FALSE(f.parse(parse_tag, "session"));
    EXPECT_EQ(f.error, "tag: more than 8 tags in one rule");
    EXPECT_EQ(f.rule.tags.size(), 8u);
}

TEST(TagParseTest, RefusesWithReason) {
    EXPECT_EQ(parse_error(parse_tag, "", false),
              "tag: expected <session|host>[,<count>,<packets|seconds|bytes>[,<src|dst>]]");
    EXPECT_EQ(parse_error(parse_tag, "flow,5,packets"),
              "tag: invalid type 'flow' (session or host)");
    EXPECT_EQ(parse_error(parse_tag, "session,5"),
              "tag: a count needs a metric (packets, seconds or bytes)");
    EXPECT_EQ(parse_error(parse_tag, "session,x,packets"), "tag: invalid count 'x'");
    EXPECT_EQ(parse_error(parse_tag, "session,4294967296,packets"),
              "tag: invalid count '4294967296'");
    EXPECT_EQ(parse_error(parse_tag, "session,5,pkts"),
              "tag: invalid metric 'pkts' (packets, seconds or bytes)");
    EXPECT_EQ(parse_error(parse_tag, "host,5,packets,both"),
              "tag: invalid direction 'both' (src or dst)");
    EXPECT_EQ(parse_error(parse_tag, "session,5,packets,src"),
              "tag: a direction (src) is for host tags only");
    Fixture f;
    EXPECT_FALSE(f.parse(parse_tag, "session,5,packets,dst"));
    EXPECT_TRUE(f.rule.tags.empty());
}

TEST(TagWindowTest, PacketsCountsTheNextN) {
    TagWindow w{3, TagMetric::kPackets, 0, 0};
    EXPECT_TRUE(tag_window_step(w, 0, 100));
    EXPECT_TRUE(tag_window_step(w, 0, 100));
    EXPECT_TRUE(tag_window_step(w, 0, 100));
    EXPECT_FALSE(tag_window_step(w, 0, 100));
    EXPECT_EQ(w.used, 3u);
}

TEST(TagWindowTest, BytesIncludeThePacketAndEndAtTheFirstPastTheLimit) {
    TagWindow w{250, TagMetric::kBytes, 0, 0};
    EXPECT_TRUE(tag_window_step(w, 0, 100));  // 100
    EXPECT_TRUE(tag_window_step(w, 0, 150));  // 250: exactly the limit
    EXPECT_FALSE(tag_window_step(w, 0, 1));   // 251
    EXPECT_EQ(w.used, 250u);
    TagWindow v{250, TagMetric::kBytes, 0, 0};
    EXPECT_TRUE(tag_window_step(v, 0, 200));
    EXPECT_FALSE(tag_window_step(v, 0, 60));  // would make 260
}

TEST(TagWindowTest, SecondsInWholeSecondsOfPacketTime) {
    TagWindow w{2, TagMetric::kSeconds, 100, 0};
    EXPECT_TRUE(tag_window_step(w, 100, 60));
    EXPECT_TRUE(tag_window_step(w, 102, 60));  // 2 s after: still in
    EXPECT_FALSE(tag_window_step(w, 103, 60));
}

decode::Packet at(int64_t ts_ns, uint32_t caplen, const char* src = "10.0.0.1",
                  const char* dst = "10.0.0.2") {
    decode::Packet p = tcp_packet(0x18);
    p.ts_ns = ts_ns;
    p.caplen = caplen;
    p.src = v4(src);
    p.dst = v4(dst);
    return p;
}

Rule rule_with(const char* tag_value, uint32_t sid = 1) {
    Fixture f;
    EXPECT_TRUE(f.parse(parse_tag, tag_value)) << f.error;
    Rule r;
    r.gid = 1;
    r.sid = sid;
    r.tags = f.rule.tags;
    return r;
}

class TagEngineTest : public ::testing::Test {
protected:
    void SetUp() override { tags_clear(); }
    void TearDown() override {
        flowbits_release(fl, pool);
        tags_clear();
    }
    FlowbitPool pool{FlowbitPool::bits_for(0)};
    flow::Flow fl;
};

TEST_F(TagEngineTest, UntaggedFlowHasNoStoreAndNothingIsTagged) {
    EXPECT_FALSE(tag_packet(at(kT0, 60), &fl));
    EXPECT_FALSE(tag_packet(at(kT0, 60), nullptr));
    EXPECT_EQ(flowbits_of(&fl), nullptr);
    EXPECT_FALSE(host_tags_maybe(kT0));
}

TEST_F(TagEngineTest, SessionPacketsTagsTheFollowingPacketsOfThatFlowOnly) {
    const Rule r = rule_with("session,2,packets");
    apply_tags(r, at(kT0, 60), &fl, pool);  // the alerting packet: checked before, not tagged
    ASSERT_NE(flowbits_of(&fl), nullptr);
    EXPECT_EQ(flowbits_of(&fl)->tags.n, 1);
    flow::Flow other;
    EXPECT_FALSE(tag_packet(at(kT0 + 1, 60), &other));  // another flow
    EXPECT_TRUE(tag_packet(at(kT0 + 1, 60), &fl));
    EXPECT_TRUE(tag_packet(at(kT0 + 2, 60), &fl));
    EXPECT_FALSE(tag_packet(at(kT0 + 3, 60), &fl));
    EXPECT_EQ(flowbits_of(&fl)->tags.n, 0);  // ended and removed
    EXPECT_FALSE(tag_packet(at(kT0 + 4, 60), &fl));
}

TEST_F(TagEngineTest, SessionDefaultIs256Packets) {
    apply_tags(rule_with("session"), at(kT0, 60), &fl, pool);
    int tagged = 0;
    for (int i = 0; i < 300; ++i) {
        tagged += tag_packet(at(kT0 + i, 60), &fl) ? 1 : 0;
    }
    EXPECT_EQ(tagged, 256);
}

TEST_F(TagEngineTest, SessionBytesAndSeconds) {
    apply_tags(rule_with("session,1000,bytes"), at(kT0, 60), &fl, pool);
    EXPECT_TRUE(tag_packet(at(kT0, 400), &fl));
    EXPECT_TRUE(tag_packet(at(kT0, 600), &fl));  // 1000
    EXPECT_FALSE(tag_packet(at(kT0, 60), &fl));  // 1060: the tag ends
    EXPECT_FALSE(tag_packet(at(kT0, 10), &fl));  // ended even though 10 bytes would fit
    apply_tags(rule_with("session,3,seconds", 2), at(kT0 + kSec / 2, 60), &fl, pool);
    EXPECT_TRUE(tag_packet(at(kT0 + 3 * kSec, 60), &fl));
    EXPECT_TRUE(tag_packet(at(kT0 + 3 * kSec + kSec - 1, 60), &fl));  // second 3 after second 0
    EXPECT_FALSE(tag_packet(at(kT0 + 4 * kSec, 60), &fl));
}

TEST_F(TagEngineTest, NewMatchOfTheSameRuleRenewsItsTag) {
    const Rule r = rule_with("session,2,packets");
    apply_tags(r, at(kT0, 60), &fl, pool);
    EXPECT_TRUE(tag_packet(at(kT0 + 1, 60), &fl));
    apply_tags(r, at(kT0 + 2, 60), &fl, pool);  // renewed: two more from here
    EXPECT_EQ(flowbits_of(&fl)->tags.n, 1);
    EXPECT_TRUE(tag_packet(at(kT0 + 3, 60), &fl));
    EXPECT_TRUE(tag_packet(at(kT0 + 4, 60), &fl));
    EXPECT_FALSE(tag_packet(at(kT0 + 5, 60), &fl));
}

TEST_F(TagEngineTest, AtMostFourSessionTagsPerFlowTheRestDropped) {
    for (uint32_t sid = 1; sid <= 5; ++sid) {
        apply_tags(rule_with("session,1,packets", sid), at(kT0, 60), &fl, pool);
    }
    EXPECT_EQ(flowbits_of(&fl)->tags.n, kMaxSessionTags);
    EXPECT_EQ(tags_dropped(), 1u);
    EXPECT_TRUE(tag_packet(at(kT0 + 1, 60), &fl));  // tagged once however many tags
    EXPECT_FALSE(tag_packet(at(kT0 + 2, 60), &fl));
}

TEST_F(TagEngineTest, SessionTagWithoutFlowTagsNothing) {
    apply_tags(rule_with("session"), at(kT0, 60), nullptr, pool);
    EXPECT_FALSE(tag_packet(at(kT0 + 1, 60), nullptr));
    EXPECT_EQ(tags_dropped(), 0u);
}

TEST_F(TagEngineTest, HostDstTagsPacketsFromAndToThatAddressOnAnyFlow) {
    // Alert on 10.0.0.1 -> 10.0.0.2: the default host tag is the destination's.
    apply_tags(rule_with("host,3,packets"), at(kT0, 60), &fl, pool);
    EXPECT_EQ(flowbits_of(&fl), nullptr);  // host tags do not touch the flow
    EXPECT_TRUE(host_tags_maybe(kT0));
    EXPECT_FALSE(tag_packet(at(kT0 + 1, 60, "10.0.0.1", "10.0.0.9"), nullptr));  // other hosts
    EXPECT_TRUE(tag_packet(at(kT0 + 1, 60, "10.0.0.7", "10.0.0.2"), nullptr));   // to it
    EXPECT_TRUE(tag_packet(at(kT0 + 2, 60, "10.0.0.2", "10.0.0.8"), nullptr));   // from it
    EXPECT_TRUE(tag_packet(at(kT0 + 3, 60, "10.0.0.2", "10.0.0.1"), &fl));
    EXPECT_FALSE(tag_packet(at(kT0 + 4, 60, "10.0.0.2", "10.0.0.1"), &fl));  // 3 done
}

TEST_F(TagEngineTest, HostSrcSecondsExpireInPacketTime) {
    apply_tags(rule_with("host,10,seconds,src"), at(kT0, 60), &fl, pool);
    EXPECT_FALSE(tag_packet(at(kT0 + kSec, 60, "10.0.0.2", "10.0.0.9"), nullptr));
    EXPECT_TRUE(tag_packet(at(kT0 + kSec, 60, "10.0.0.9", "10.0.0.1"), nullptr));
    EXPECT_TRUE(tag_packet(at(kT0 + 10 * kSec, 60, "10.0.0.1", "10.0.0.3"), nullptr));
    EXPECT_FALSE(tag_packet(at(kT0 + 11 * kSec, 60, "10.0.0.1", "10.0.0.3"), nullptr));
    EXPECT_FALSE(host_tags_maybe(kT0 + 11 * kSec));  // past every host tag: no table lookup
}

TEST_F(TagEngineTest, HostBytesCountAcrossFlows) {
    apply_tags(rule_with("host,100,bytes,src"), at(kT0, 60), nullptr, pool);
    EXPECT_TRUE(tag_packet(at(kT0 + 1, 60, "10.0.0.1", "10.0.0.5"), nullptr));
    EXPECT_TRUE(tag_packet(at(kT0 + 2, 40, "10.0.0.6", "10.0.0.1"), nullptr));  // 100
    EXPECT_FALSE(tag_packet(at(kT0 + 3, 1, "10.0.0.1", "10.0.0.5"), nullptr));
}

TEST_F(TagEngineTest, HostTableProbeWindowIsBounded) {
    // One host, many rules: 16 tags fit in its probe window, the 17th is dropped.
    for (uint32_t sid = 1; sid <= kHostTagProbe + 1; ++sid) {
        apply_tags(rule_with("host,1,packets", sid), at(kT0, 60), nullptr, pool);
    }
    EXPECT_EQ(tags_dropped(), 1u);
    // The packet is counted by every tag of the host: each ends after it, freeing its slot.
    EXPECT_TRUE(tag_packet(at(kT0 + 1, 60, "10.0.0.5", "10.0.0.2"), nullptr));
    EXPECT_FALSE(tag_packet(at(kT0 + 2, 60, "10.0.0.5", "10.0.0.2"), nullptr));
    apply_tags(rule_with("host,1,packets", 99), at(kT0 + 3, 60), nullptr, pool);
    EXPECT_EQ(tags_dropped(), 1u);
    EXPECT_TRUE(tag_packet(at(kT0 + 4, 60, "10.0.0.5", "10.0.0.2"), nullptr));
}

TEST_F(TagEngineTest, HostPacketsTagExpiresAfterAnHourUnused) {
    apply_tags(rule_with("host,5,packets"), at(kT0, 60), nullptr, pool);
    EXPECT_TRUE(host_tags_maybe(kT0 + (kHostTagMaxAge - 1) * kSec));
    EXPECT_FALSE(host_tags_maybe(kT0 + kHostTagMaxAge * kSec));
    EXPECT_FALSE(tag_packet(at(kT0 + kHostTagMaxAge * kSec, 60, "10.0.0.2", "10.0.0.1"), nullptr));
}

}  // namespace
}  // namespace picket::sensor::detect
