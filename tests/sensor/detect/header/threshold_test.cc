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
    EXPECT_EQ(f.error,
              "threshold: invalid type 'sometimes' (expected limit, threshold, both or backoff)");
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, track by_host, count 1, seconds 1"));
    EXPECT_EQ(f.error,
              "threshold: invalid track 'by_host' (expected by_src, by_dst, by_rule, "
              "by_both or by_flow)");
    EXPECT_FALSE(f.parse(parse_threshold, "type backoff, track by_src, count 1, multiplier 10"));
    EXPECT_EQ(f.error, "threshold: type backoff needs track by_flow");
    EXPECT_FALSE(f.parse(parse_threshold, "type backoff, track by_flow, count 1, seconds 10"));
    EXPECT_EQ(f.error, "threshold: type backoff takes a multiplier, not seconds");
    EXPECT_FALSE(f.parse(parse_threshold, "type backoff, track by_flow, count 1"));
    EXPECT_EQ(f.error, "threshold: missing 'multiplier'");
    EXPECT_FALSE(f.parse(parse_threshold, "type backoff, track by_flow, count 1, multiplier 1"));
    EXPECT_EQ(f.error, "threshold: invalid multiplier '1' (2 to 4294967295)");
    EXPECT_FALSE(
        f.parse(parse_threshold, "type limit, track by_flow, count 1, seconds 1, multiplier 2"));
    EXPECT_EQ(f.error, "threshold: multiplier is only for type backoff");
    EXPECT_FALSE(
        f.parse(parse_detection_filter, "track by_flow, count 1, seconds 1, multiplier 2"));
    EXPECT_EQ(f.error, "detection_filter: unknown option 'multiplier'");
    EXPECT_FALSE(f.parse(parse_threshold, "type limit, track by_src, count 0, seconds 1"));
    EXPECT_EQ(f.error, "threshold: invalid count '0' (1 to 4294967295)");
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

// Suricata 8's documentation: count 1, multiplier 10 alerts on matches 1, 10, 100, ...;
// count 5, multiplier 5 on 5, 25, 125; the rule's action applies to the matches in between.
TEST(ThresholdTableTest, BackoffPerFlow) {
    Fixture f;
    f.rule.sid = 7;
    ASSERT_TRUE(f.parse(parse_threshold, "type backoff, track by_flow, count 1, multiplier 10"))
        << f.error;
    EXPECT_EQ(f.rule.threshold.type, ThresholdType::kBackoff);
    EXPECT_EQ(f.rule.threshold.track, TrackBy::kFlow);
    EXPECT_EQ(f.rule.threshold.multiplier, 10u);
    ThresholdTable t;
    t.bind({&f.rule});
    std::vector<uint32_t> alerts;
    for (uint32_t i = 1; i <= 1000; ++i) {
        if (t.check(f.rule, v4("10.0.0.1"), v4("10.0.0.2"), i, /*flow_id=*/77) == R::kAlert) {
            alerts.push_back(i);
        }
    }
    EXPECT_EQ(alerts, (std::vector<uint32_t>{1, 10, 100, 1000}));
    // Another flow between the same hosts starts its own series; no flow: not thresholded.
    EXPECT_EQ(t.check(f.rule, v4("10.0.0.1"), v4("10.0.0.2"), 0, 78), R::kAlert);
    EXPECT_EQ(t.check(f.rule, v4("10.0.0.1"), v4("10.0.0.2"), 0, 78), R::kSilent);
    EXPECT_EQ(t.check(f.rule, v4("10.0.0.1"), v4("10.0.0.2"), 0, 0), R::kAlert);
    EXPECT_EQ(t.check(f.rule, v4("10.0.0.1"), v4("10.0.0.2"), 0, 0), R::kAlert);

    Fixture g;
    ASSERT_TRUE(g.parse(parse_threshold, "type backoff, track by_flow, count 5, multiplier 5"));
    ThresholdTable t5;
    std::vector<R> got;
    std::vector<uint32_t> marks;
    for (uint32_t i = 1; i <= 200; ++i) {
        R res = t5.check(g.rule, v4("10.0.0.1"), v4("10.0.0.2"), i, 9);
        if (i <= 6) {
            got.push_back(res);
        }
        if (res == R::kAlert) {
            marks.push_back(i);
        }
    }
    EXPECT_EQ(marks, (std::vector<uint32_t>{5, 25, 125}));
    EXPECT_EQ(got, (std::vector<R>{R::kNone, R::kNone, R::kNone, R::kNone, R::kAlert, R::kSilent}));
}

TEST(ThresholdTableTest, LimitByFlowCountsEachFlowApart) {
    Bound b("type limit, track by_flow, count 1, seconds 3600");
    EXPECT_EQ(b.table.check(b.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 0, 1), R::kAlert);
    EXPECT_EQ(b.table.check(b.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 1, 1), R::kSilent);
    EXPECT_EQ(b.table.check(b.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 2, 2), R::kAlert);
    EXPECT_EQ(b.table.check(b.f.rule, v4("2.2.2.2"), v4("1.1.1.1"), 3, 2), R::kSilent);
    Bound d("track by_flow, count 1, seconds 60", /*detection=*/true);
    EXPECT_EQ(d.table.check(d.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 0, 5), R::kNone);
    EXPECT_EQ(d.table.check(d.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 1, 6), R::kNone);
    EXPECT_EQ(d.table.check(d.f.rule, v4("1.1.1.1"), v4("2.2.2.2"), 2, 5), R::kAlert);
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

// The global-thresholds page's example: more than count matches within seconds switch the
// rule to new_action for timeout seconds; every match still alerts.
TEST(ThresholdConfigTest, RateFilterChangesTheActionForTimeout) {
    Fixture r;
    r.rule.sid = 888;
    ThresholdTable t(
        parse_cfg("rate_filter gen_id 1, sig_id 888, track by_src, count 3, "
                  "seconds 60, new_action drop, timeout 300\n"));
    EXPECT_TRUE(t.bind({&r.rule}).empty());
    ASSERT_TRUE(t.applies(r.rule));
    std::vector<Action> got;
    for (int64_t ts :
         {0 * kSec, 1 * kSec, 2 * kSec, 3 * kSec, 100 * kSec, 303 * kSec, 304 * kSec}) {
        Action a = Action::kAlert;
        EXPECT_EQ(t.check(r.rule, v4("10.0.0.1"), v4("10.0.0.2"), ts, 0, &a), R::kAlert);
        got.push_back(a);
    }
    // 4th match within 60 s: drop until 3 + 300 s; the match at 304 s starts a new window.
    EXPECT_EQ(got,
              (std::vector<Action>{Action::kAlert, Action::kAlert, Action::kAlert, Action::kDrop,
                                   Action::kDrop, Action::kDrop, Action::kAlert}));
    // Another source: its own count.
    Action a = Action::kAlert;
    EXPECT_EQ(t.check(r.rule, v4("10.0.0.9"), v4("10.0.0.2"), 5 * kSec, 0, &a), R::kAlert);
    EXPECT_EQ(a, Action::kAlert);

    // Outside the window the count restarts: 3 matches 61 s apart never switch.
    ThresholdTable slow(
        parse_cfg("rate_filter gen_id 1, sig_id 888, track by_rule, count 1, "
                  "seconds 60, new_action pass, timeout 10\n"));
    slow.bind({&r.rule});
    for (int64_t ts : {0 * kSec, 61 * kSec, 122 * kSec}) {
        Action b = Action::kAlert;
        slow.check(r.rule, v4("1.1.1.1"), v4("2.2.2.2"), ts, 0, &b);
        EXPECT_EQ(b, Action::kAlert) << ts;
    }
    Action c = Action::kAlert;
    slow.check(r.rule, v4("1.1.1.1"), v4("2.2.2.2"), 123 * kSec, 0, &c);
    EXPECT_EQ(c, Action::kPass);
}

TEST(ThresholdConfigTest, RateFilterAndBackoffLines) {
    ThresholdConfig cfg;
    std::vector<std::string> errors;
    EXPECT_TRUE(parse_threshold_config(
        "rate_filter gen_id 1, sig_id 2, track by_both, count 10, seconds 5, new_action reject, "
        "timeout 30\n"
        "threshold gen_id 1, sig_id 3, type backoff, track by_flow, count 2, multiplier 4\n",
        "t.conf", nullptr, &cfg, &errors))
        << errors[0];
    ASSERT_EQ(cfg.thresholds.size(), 2u);
    EXPECT_EQ(cfg.thresholds[0].spec.type, ThresholdType::kRate);
    EXPECT_EQ(cfg.thresholds[0].spec.track, TrackBy::kBoth);
    EXPECT_EQ(cfg.thresholds[0].spec.count, 10u);
    EXPECT_EQ(cfg.thresholds[0].spec.seconds, 5u);
    EXPECT_EQ(cfg.thresholds[0].spec.new_action, Action::kReject);
    EXPECT_EQ(cfg.thresholds[0].spec.timeout, 30u);
    EXPECT_EQ(cfg.thresholds[1].spec.type, ThresholdType::kBackoff);
    EXPECT_EQ(cfg.thresholds[1].spec.multiplier, 4u);

    const char* bad =
        "rate_filter gen_id 1, sig_id 1, track by_rule, count 1, seconds 1, timeout 10\n"
        "rate_filter gen_id 1, sig_id 1, track by_rule, count 1, seconds 1, new_action sdrop, "
        "timeout 10\n"
        "rate_filter gen_id 1, sig_id 1, track by_rule, count 1, seconds 1, new_action block, "
        "timeout 10\n"
        "rate_filter gen_id 1, sig_id 1, track by_rule, count 1, seconds 1, new_action drop, "
        "timeout 0\n"
        "rate_filter gen_id 1, sig_id 1, type limit, track by_rule, count 1, seconds 1, "
        "new_action drop, timeout 1\n"
        "threshold gen_id 1, sig_id 1, type backoff, track by_src, count 1, multiplier 2\n"
        "threshold gen_id 1, sig_id 1, type backoff, track by_flow, count 1, seconds 2\n"
        "threshold gen_id 1, sig_id 1, type limit, track by_flow, count 1, seconds 2, "
        "multiplier 2\n";
    ThresholdConfig none;
    errors.clear();
    EXPECT_FALSE(parse_threshold_config(bad, "b.conf", nullptr, &none, &errors));
    EXPECT_EQ(errors, (std::vector<std::string>{
                          "b.conf:1: rate_filter needs new_action",
                          "b.conf:2: new_action 'sdrop' is not supported (alert, drop, pass or "
                          "reject)",
                          "b.conf:3: invalid new_action 'block' (expected alert, drop, pass or "
                          "reject)",
                          "b.conf:4: invalid timeout '0'",
                          "b.conf:5: unknown option 'type' for rate_filter",
                          "b.conf:6: type backoff needs track by_flow",
                          "b.conf:7: threshold needs multiplier",
                          "b.conf:8: multiplier is only for type backoff",
                      }));
    EXPECT_TRUE(none.thresholds.empty());
}

TEST(ThresholdConfigTest, ParseErrorsNameFileAndLine) {
    const char* text =
        "# comment\n"
        "\n"
        "suppress gen_id 1, sig_id 1\n"
        "rate_filter gen_id 1, sig_id 1, track by_rule, count 1, seconds 1, new_action drop\n"
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
                          "t.conf:4: rate_filter needs timeout",
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
