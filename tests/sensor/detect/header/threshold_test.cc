#include <gtest/gtest.h>

#include "sensor/detect/threshold.h"
#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::Fixture;
using test::v4;
using R = ThresholdResult;

constexpr int64_t kSec = 1000000000;

std::vector<R> run(ThresholdTable& t, const Rule& r, const std::vector<int64_t>& ts,
                   const char* src = "10.0.0.1", const char* dst = "10.0.0.2") {
    std::vector<R> out;
    for (int64_t x : ts) {
        out.push_back(t.check(r, v4(src), v4(dst), x));
    }
    return out;
}

struct Bound {
    Fixture f;
    ThresholdTable table;
    explicit Bound(std::string_view kw_value, bool detection = false, ThresholdConfig cfg = {},
                   ThresholdOptions opt = {})
        : table(std::move(cfg), opt) {
        f.rule.sid = 5;
        EXPECT_TRUE(f.parse(detection ? parse_detection_filter : parse_threshold, kw_value))
            << f.error;
        EXPECT_TRUE(table.bind({&f.rule}).empty());
    }
};

TEST(ThresholdKeywordTest, Parse) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_threshold, "type both, track by_dst, count 5, seconds 30"));
    EXPECT_TRUE(f.rule.has_threshold);
    EXPECT_EQ(f.rule.threshold.type, ThresholdType::kBoth);
    EXPECT_EQ(f.rule.threshold.track, TrackBy::kDst);
    EXPECT_EQ(f.rule.threshold.count, 5u);
    EXPECT_EQ(f.rule.threshold.seconds, 30u);
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, track by_src, count 1, seconds 1"));
    EXPECT_EQ(f.error, "threshold: only one threshold per rule");
    EXPECT_FALSE(f.parse(parse_detection_filter, "track by_src, count 1, seconds 1"));
    EXPECT_EQ(f.error, "detection_filter: cannot be combined with threshold");

    Fixture d;
    ASSERT_TRUE(d.parse(parse_detection_filter, "seconds 60, count 10, track by_rule"));
    EXPECT_TRUE(d.rule.has_detection_filter);
    EXPECT_EQ(d.rule.detection_filter.type, ThresholdType::kDetectionFilter);
    EXPECT_EQ(d.rule.detection_filter.track, TrackBy::kRule);
    EXPECT_EQ(d.rule.detection_filter.count, 10u);
    EXPECT_EQ(d.rule.detection_filter.seconds, 60u);
}

TEST(ThresholdKeywordTest, Errors) {
    Fixture f;
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, track by_src, count 1"));
    EXPECT_EQ(f.error, "threshold: missing 'seconds'");
    EXPECT_FALSE(f.parse(parse_threshold, "type sometimes, track by_src, count 1, seconds 1"));
    EXPECT_EQ(f.error, "threshold: invalid type 'sometimes' (expected limit, threshold or both)");
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, track by_flow, count 1, seconds 1"));
    EXPECT_EQ(f.error,
              "threshold: invalid track 'by_flow' (expected by_src, by_dst, by_rule or by_both)");
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, track by_src, count 0, seconds 1"));
    EXPECT_EQ(f.error, "threshold: invalid count '0'");
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, type limit, count 1, seconds 1"));
    EXPECT_EQ(f.error, "threshold: 'type' given twice");
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, track by_src, count 1, seconds 1, x 1"));
    EXPECT_EQ(f.error, "threshold: unknown option 'x'");
    EXPECT_FALSE(f.parse(parse_detection_filter, "type limit, track by_src, count 1, seconds 1"));
    EXPECT_EQ(f.error, "detection_filter: unknown option 'type'");
    EXPECT_FALSE(f.rule.has_threshold);
    EXPECT_FALSE(f.rule.has_detection_filter);
}

TEST(ThresholdTableTest, Limit) {
    Bound b("type limit, track by_src, count 2, seconds 10");
    EXPECT_EQ(run(b.table, b.f.rule, {0, 1 * kSec, 2 * kSec, 10 * kSec, 10 * kSec + 1}),
              (std::vector<R>{R::kAlert, R::kAlert, R::kSilent, R::kSilent, R::kAlert}));
    // Another source has its own window.
    EXPECT_EQ(run(b.table, b.f.rule, {3 * kSec}, "10.9.9.9"), (std::vector<R>{R::kAlert}));
}

TEST(ThresholdTableTest, Threshold) {
    Bound b("type threshold, track by_src, count 3, seconds 60");
    EXPECT_EQ(
        run(b.table, b.f.rule,
            {0, 1 * kSec, 2 * kSec, 3 * kSec, 4 * kSec, 5 * kSec, 61 * kSec, 62 * kSec, 63 * kSec}),
        (std::vector<R>{R::kNone, R::kNone, R::kAlert, R::kNone, R::kNone, R::kAlert, R::kNone,
                        R::kNone, R::kAlert}));
}

TEST(ThresholdTableTest, ThresholdCountOneAlwaysAlerts) {
    Bound b("type threshold, track by_src, count 1, seconds 60");
    EXPECT_EQ(run(b.table, b.f.rule, {0, 1, 100 * kSec}),
              (std::vector<R>{R::kAlert, R::kAlert, R::kAlert}));
    EXPECT_EQ(b.table.stats().entries, 0u);
}

TEST(ThresholdTableTest, Both) {
    Bound b("type both, track by_dst, count 2, seconds 60");
    EXPECT_EQ(run(b.table, b.f.rule, {0, 1 * kSec, 2 * kSec, 3 * kSec, 61 * kSec, 62 * kSec}),
              (std::vector<R>{R::kNone, R::kAlert, R::kSilent, R::kSilent, R::kNone, R::kAlert}));
}

TEST(ThresholdTableTest, DetectionFilter) {
    Bound b("track by_src, count 2, seconds 10", /*detection=*/true);
    EXPECT_EQ(
        run(b.table, b.f.rule, {0, 1 * kSec, 2 * kSec, 3 * kSec, 20 * kSec, 21 * kSec, 22 * kSec}),
        (std::vector<R>{R::kNone, R::kNone, R::kAlert, R::kAlert, R::kNone, R::kNone, R::kAlert}));
}

TEST(ThresholdTableTest, TrackByBothIsSymmetricAndByRuleIsGlobal) {
    Bound both("type limit, track by_both, count 1, seconds 60");
    EXPECT_EQ(both.table.check(both.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 0), R::kAlert);
    EXPECT_EQ(both.table.check(both.f.rule, v4("2.2.2.2"), v4("1.1.1.1"), 1), R::kSilent);
    EXPECT_EQ(both.table.check(both.f.rule, v4("1.1.1.1"), v4("3.3.3.3"), 2), R::kAlert);
    Bound rule("type limit, track by_rule, count 1, seconds 60");
    EXPECT_EQ(rule.table.check(rule.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 0), R::kAlert);
    EXPECT_EQ(rule.table.check(rule.f.rule, v4("5.5.5.5"), v4("6.6.6.6"), 1), R::kSilent);
}

TEST(ThresholdTableTest, EvictsOldestWhenFull) {
    ThresholdOptions opt;
    opt.max_entries = 2;
    opt.stripes = 1;
    Bound b("type limit, track by_src, count 1, seconds 60", false, {}, opt);
    EXPECT_EQ(run(b.table, b.f.rule, {0}, "1.0.0.1")[0], R::kAlert);
    EXPECT_EQ(run(b.table, b.f.rule, {1}, "1.0.0.2")[0], R::kAlert);
    EXPECT_EQ(run(b.table, b.f.rule, {2}, "1.0.0.1")[0], R::kSilent);  // touches .1
    EXPECT_EQ(run(b.table, b.f.rule, {3}, "1.0.0.3")[0], R::kAlert);   // evicts .2
    EXPECT_EQ(b.table.stats().evictions, 1u);
    EXPECT_EQ(b.table.stats().entries, 2u);
    EXPECT_EQ(run(b.table, b.f.rule, {4}, "1.0.0.1")[0], R::kSilent);
    EXPECT_EQ(run(b.table, b.f.rule, {5}, "1.0.0.2")[0], R::kAlert);  // forgotten: new window
    StatsSnapshot snap;
    b.table.export_stats(snap);
    EXPECT_EQ(snap.get("detect.threshold.evictions"), 2u);
}

ThresholdConfig parse_cfg(std::string_view text, const AddressVars* vars = nullptr) {
    ThresholdConfig cfg;
    std::vector<std::string> errors;
    EXPECT_TRUE(parse_threshold_config(text, "threshold.config", vars, &cfg, &errors));
    EXPECT_TRUE(errors.empty());
    return cfg;
}

TEST(SuppressTest, BySrcCidr) {
    Fixture f;
    f.rule.sid = 5;
    ThresholdTable t(parse_cfg("suppress gen_id 1, sig_id 5, track by_src, ip 10.1.0.0/16\n"));
    EXPECT_TRUE(t.bind({&f.rule}).empty());
    EXPECT_TRUE(t.applies(f.rule));
    EXPECT_EQ(t.check(f.rule, v4("10.1.2.3"), v4("8.8.8.8"), 0), R::kSilent);
    EXPECT_EQ(t.check(f.rule, v4("10.1.255.255"), v4("8.8.8.8"), 0), R::kSilent);
    EXPECT_EQ(t.check(f.rule, v4("10.2.0.1"), v4("8.8.8.8"), 0), R::kAlert);
    EXPECT_EQ(t.check(f.rule, v4("8.8.8.8"), v4("10.1.2.3"), 0), R::kAlert);  // dst ignored
}

TEST(SuppressTest, ByDstEitherVarsAndWholeRule) {
    AddressVars vars = {{"SCANNERS", "[192.168.0.0/24,!192.168.0.7]"}};
    Fixture a, b, c, other;
    a.rule.sid = 1;
    b.rule.sid = 2;
    c.rule.sid = 3;
    other.rule.sid = 4;
    other.rule.gid = 3;
    ThresholdTable t(
        parse_cfg("suppress gen_id 1, sig_id 1, track by_dst, ip $SCANNERS\n"
                  "suppress gen_id 1, sig_id 2, track by_either, ip 2001:db8::/32\n"
                  "suppress gen_id 1, sig_id 3\n",
                  &vars));
    t.bind({&a.rule, &b.rule, &c.rule, &other.rule});
    EXPECT_EQ(t.check(a.rule, v4("1.1.1.1"), v4("192.168.0.9"), 0), R::kSilent);
    EXPECT_EQ(t.check(a.rule, v4("1.1.1.1"), v4("192.168.0.7"), 0), R::kAlert);
    uint8_t six[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    EXPECT_EQ(t.check(b.rule, v4("1.1.1.1"), decode::Address::from_v6(six), 0), R::kSilent);
    EXPECT_EQ(t.check(b.rule, decode::Address::from_v6(six), v4("1.1.1.1"), 0), R::kSilent);
    EXPECT_EQ(t.check(b.rule, v4("1.1.1.1"), v4("2.2.2.2"), 0), R::kAlert);
    EXPECT_EQ(t.check(c.rule, v4("1.1.1.1"), v4("2.2.2.2"), 0), R::kSilent);
    EXPECT_FALSE(t.applies(other.rule));
}

TEST(ThresholdConfigTest, OverridesAndWildcards) {
    Fixture own, plain, other_gid;
    own.rule.sid = 10;
    plain.rule.sid = 11;
    other_gid.rule.gid = 2;
    other_gid.rule.sid = 1;
    ASSERT_TRUE(own.parse(parse_threshold, "type limit, track by_src, count 100, seconds 60"));
    ThresholdTable t(parse_cfg(
        "threshold gen_id 1, sig_id 10, type limit, track by_src, count 1, seconds 60\n"
        "event_filter gen_id 1, sig_id 0, type threshold, track by_src, count 2, seconds 60\n"));
    EXPECT_TRUE(t.bind({&own.rule, &plain.rule, &other_gid.rule}).empty());
    // sid 10: the config's limit 1 replaced the rule's limit 100.
    EXPECT_EQ(run(t, own.rule, {0, 1}), (std::vector<R>{R::kAlert, R::kSilent}));
    // sid 11: the gid-1 wildcard applies (no threshold of its own).
    EXPECT_EQ(run(t, plain.rule, {0, 1}), (std::vector<R>{R::kNone, R::kAlert}));
    // gid 2: not covered.
    EXPECT_FALSE(t.applies(other_gid.rule));
}

TEST(ThresholdConfigTest, GlobalWildcardSkipsRulesWithTheirOwn) {
    Fixture own, plain;
    own.rule.sid = 1;
    plain.rule.sid = 2;
    ASSERT_TRUE(own.parse(parse_detection_filter, "track by_src, count 1, seconds 60"));
    ThresholdTable t(
        parse_cfg("threshold gen_id 0, sig_id 0, type limit, track by_rule, count 1, seconds 9\n"));
    t.bind({&own.rule, &plain.rule});
    EXPECT_EQ(run(t, own.rule, {0, 1}), (std::vector<R>{R::kNone, R::kAlert}));
    EXPECT_EQ(run(t, plain.rule, {0, 1}), (std::vector<R>{R::kAlert, R::kSilent}));
}

TEST(ThresholdConfigTest, ParseErrorsNameFileAndLine) {
    const char* text =
        "# comment\n"
        "\n"
        "suppress gen_id 1, sig_id 1\n"
        "rate_filter gen_id 1, sig_id 1, track by_rule, count 1, seconds 1, new_action drop, "
        "timeout 10\n"
        "threshold gen_id 1, \\\n"
        "  sig_id 2, type limit, track by_src, count 1, seconds 1\n"
        "suppress gen_id 0, sig_id 5\n"
        "suppress gen_id 1, sig_id 1, track by_src\n"
        "suppress gen_id 1, sig_id 1, track by_src, ip 300.1.1.1\n"
        "threshold gen_id 1, sig_id 3, type limit, count 1, seconds 1\n"
        "limit gen_id 1, sig_id 1\n"
        "suppress gen_id 1, sig_id 1, track by_rule, ip 1.2.3.4\n"
        "event_filter gen_id 1, sig_id 4, type limit, track by_src, count x, seconds 1\n"
        "suppress gen_id 1, sig_id 1, track by_src, ip $NOPE\n";
    ThresholdConfig cfg;
    std::vector<std::string> errors;
    EXPECT_FALSE(parse_threshold_config(text, "t.conf", nullptr, &cfg, &errors));
    EXPECT_EQ(errors, (std::vector<std::string>{
                          "t.conf:4: rate_filter is not supported",
                          "t.conf:7: sig_id 5 needs a gen_id other than 0",
                          "t.conf:8: suppress needs both track and ip, or neither",
                          "t.conf:9: ip: bad address '300.1.1.1'",
                          "t.conf:10: threshold needs track",
                          "t.conf:11: unknown directive 'limit' (expected suppress, threshold, "
                          "event_filter or rate_filter)",
                          "t.conf:12: invalid track 'by_rule' for suppress (expected by_src, "
                          "by_dst or by_either)",
                          "t.conf:13: invalid count 'x'",
                          "t.conf:14: ip: unknown address variable '$NOPE'",
                      }));
    ASSERT_EQ(cfg.suppress.size(), 1u);
    EXPECT_EQ(cfg.suppress[0].line, 3u);
    ASSERT_EQ(cfg.thresholds.size(), 1u);
    EXPECT_EQ(cfg.thresholds[0].sid, 2u);
    EXPECT_EQ(cfg.thresholds[0].line, 5u);  // a continued line reports where it starts
    EXPECT_EQ(cfg.thresholds[0].spec.type, ThresholdType::kLimit);

    Fixture r;
    r.rule.sid = 1;
    ThresholdTable t(std::move(cfg));
    EXPECT_EQ(t.bind({&r.rule}),
              (std::vector<std::string>{"t.conf:5: threshold for unknown rule 1:2"}));
}

TEST(ThresholdConfigTest, UnreadableFile) {
    ThresholdConfig cfg;
    std::vector<std::string> errors;
    EXPECT_FALSE(load_threshold_config("/nonexistent/threshold.config", nullptr, &cfg, &errors));
    EXPECT_EQ(errors, (std::vector<std::string>{"/nonexistent/threshold.config: cannot read"}));
}

}  // namespace
}  // namespace picket::sensor::detect
