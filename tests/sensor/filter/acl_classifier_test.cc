#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sensor/filter/filter.h"

namespace picket::sensor::filter {
namespace {

decode::Address ip(const char* text) {
    uint8_t b[16];
    if (inet_pton(AF_INET, text, b) == 1) {
        return decode::Address::from_v4(b);
    }
    inet_pton(AF_INET6, text, b);
    return decode::Address::from_v6(b);
}

FiveTuple tuple(const char* src, uint16_t sport, const char* dst, uint16_t dport, uint8_t proto) {
    FiveTuple t;
    t.src = ip(src);
    t.dst = ip(dst);
    t.ip_version = t.src.is_v4() ? 4 : 6;
    t.sport = sport;
    t.dport = dport;
    t.proto = proto;
    return t;
}

std::shared_ptr<const AclClassifier> build(const std::string& text) {
    auto rules = parse_acl_rules(text, "test.rules");
    EXPECT_TRUE(rules.ok()) << rules.status();
    auto c = AclClassifier::build(*rules);
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
}

TEST(AclClassifierTest, EmptyMatchesNothing) {
    auto c = build("");
    const Verdict v = c->lookup(tuple("10.0.0.1", 1, "10.0.0.2", 2, 6));
    EXPECT_FALSE(v.matched());
    EXPECT_EQ(v.rule, Verdict::kNoRule);
    EXPECT_EQ(c->stats().rules, 0u);
    EXPECT_EQ(c->stats().trees, 0u);
}

TEST(AclClassifierTest, LowestPriorityWinsThenRuleOrder) {
    auto c = build(
        "drop tcp 10.0.0.0/8 any -> any 80 priority 20\n"
        "pass tcp 10.1.0.0/16 any -> any any priority 10\n"
        "bypass tcp 10.1.2.0/24 any -> any 80 priority 10\n"
        "drop ip any any -> any any priority 30\n");
    // Rules 1 and 2 both match at priority 10: the earlier one wins.
    const Verdict a = c->lookup(tuple("10.1.2.3", 5000, "192.0.2.1", 80, 6));
    EXPECT_EQ(a.rule, 1u);
    EXPECT_EQ(a.action, AclAction::kPass);
    const Verdict b = c->lookup(tuple("10.2.0.1", 5000, "192.0.2.1", 80, 6));
    EXPECT_EQ(b.rule, 0u);
    EXPECT_EQ(b.action, AclAction::kDrop);
    const Verdict d = c->lookup(tuple("10.2.0.1", 5000, "192.0.2.1", 81, 17));
    EXPECT_EQ(d.rule, 3u);
    uint32_t all[8];
    EXPECT_EQ(c->match_all(tuple("10.1.2.3", 5000, "192.0.2.1", 80, 6), all), 4u);
    EXPECT_EQ(std::vector<uint32_t>(all, all + 4), (std::vector<uint32_t>{1, 2, 0, 3}));
    // A short buffer still gets the total count.
    EXPECT_EQ(c->match_all(tuple("10.1.2.3", 5000, "192.0.2.1", 80, 6), std::span(all, 1)), 4u);
    EXPECT_EQ(all[0], 1u);
}

TEST(AclClassifierTest, FamiliesAreSeparate) {
    auto c = build(
        "drop ip 0.0.0.0/0 any -> any any\n"
        "pass ip ::/0 any -> any any\n");
    EXPECT_EQ(c->lookup(tuple("192.0.2.1", 0, "198.51.100.1", 0, 1)).rule, 0u);
    EXPECT_EQ(c->lookup(tuple("2001:db8::1", 0, "2001:db8::2", 0, 58)).rule, 1u);
    // The v4-mapped form of an IPv4 address is still IPv4 for the classifier.
    EXPECT_EQ(c->lookup(tuple("::ffff:192.0.2.1", 0, "198.51.100.1", 0, 1)).rule, 0u);
    FiveTuple not_ip = tuple("192.0.2.1", 0, "198.51.100.1", 0, 1);
    not_ip.ip_version = 0;
    EXPECT_FALSE(c->lookup(not_ip).matched());
}

TEST(AclClassifierTest, AnyAnyMatchesBothFamilies) {
    auto c = build("bypass udp any any -> any 53\n");
    EXPECT_EQ(c->lookup(tuple("192.0.2.1", 1000, "198.51.100.1", 53, 17)).rule, 0u);
    EXPECT_EQ(c->lookup(tuple("2001:db8::1", 1000, "2001:db8::2", 53, 17)).rule, 0u);
    EXPECT_FALSE(c->lookup(tuple("2001:db8::1", 1000, "2001:db8::2", 53, 6)).matched());
    EXPECT_FALSE(c->lookup(tuple("2001:db8::1", 1000, "2001:db8::2", 54, 17)).matched());
}

TEST(AclClassifierTest, PortEdges) {
    auto c = build(
        "drop tcp any 0 -> any any\n"
        "drop tcp any any -> any 65535\n"
        "drop udp any 1:65534 -> any 0:0\n");
    EXPECT_EQ(c->lookup(tuple("192.0.2.1", 0, "192.0.2.2", 7, 6)).rule, 0u);
    EXPECT_EQ(c->lookup(tuple("192.0.2.1", 1, "192.0.2.2", 65535, 6)).rule, 1u);
    EXPECT_FALSE(c->lookup(tuple("192.0.2.1", 1, "192.0.2.2", 65534, 6)).matched());
    EXPECT_EQ(c->lookup(tuple("192.0.2.1", 1, "192.0.2.2", 0, 17)).rule, 2u);
    EXPECT_FALSE(c->lookup(tuple("192.0.2.1", 65535, "192.0.2.2", 0, 17)).matched());
    EXPECT_FALSE(c->lookup(tuple("192.0.2.1", 0, "192.0.2.2", 0, 17)).matched());
}

TEST(AclClassifierTest, PrefixBoundaries) {
    auto c = build(
        "drop ip 192.0.2.128/25 any -> any any\n"
        "drop ip 2001:db8::/127 any -> any any\n"
        "drop ip 203.0.113.7 any -> any any\n");
    EXPECT_FALSE(c->lookup(tuple("192.0.2.127", 0, "10.0.0.1", 0, 6)).matched());
    EXPECT_EQ(c->lookup(tuple("192.0.2.128", 0, "10.0.0.1", 0, 6)).rule, 0u);
    EXPECT_EQ(c->lookup(tuple("192.0.2.255", 0, "10.0.0.1", 0, 6)).rule, 0u);
    EXPECT_EQ(c->lookup(tuple("2001:db8::1", 0, "::1", 0, 6)).rule, 1u);
    EXPECT_FALSE(c->lookup(tuple("2001:db8::2", 0, "::1", 0, 6)).matched());
    EXPECT_EQ(c->lookup(tuple("203.0.113.7", 0, "10.0.0.1", 0, 6)).rule, 2u);
    EXPECT_FALSE(c->lookup(tuple("203.0.113.6", 0, "10.0.0.1", 0, 6)).matched());
}

TEST(AclClassifierTest, HostBitsAreIgnored) {
    AclRule r;
    r.family = AclFamily::kIpv4;
    r.src = AclPrefix{ip("10.1.2.3"), 8};
    r.dst = AclPrefix{ip("0.0.0.0"), 0};
    auto c = AclClassifier::build({r});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)->lookup(tuple("10.200.0.1", 0, "1.1.1.1", 0, 6)).rule, 0u);
    EXPECT_TRUE(rule_matches(r, tuple("10.200.0.1", 0, "1.1.1.1", 0, 6)));
}

TEST(AclClassifierTest, FromPacket) {
    decode::Packet p;
    p.src = ip("192.0.2.1");
    p.dst = ip("198.51.100.2");
    p.sport = 1234;
    p.dport = 443;
    p.proto = 6;
    p.ip_version = 4;
    const FiveTuple t = FiveTuple::from_packet(p);
    EXPECT_EQ(t.src, p.src);
    EXPECT_EQ(t.dst, p.dst);
    EXPECT_EQ(t.sport, 1234);
    EXPECT_EQ(t.dport, 443);
    EXPECT_EQ(t.proto, 6);
    EXPECT_EQ(t.ip_version, 4);
}

TEST(AclClassifierTest, BatchMatchesSingleLookups) {
    auto c = build(
        "drop tcp 10.0.0.0/8 any -> any 80\n"
        "pass udp 2001:db8::/32 any -> any 53\n");
    const std::vector<FiveTuple> ts = {
        tuple("10.0.0.1", 1, "192.0.2.1", 80, 6), tuple("2001:db8::1", 1, "::1", 53, 17),
        tuple("11.0.0.1", 1, "192.0.2.1", 80, 6), tuple("2001:db9::1", 1, "::1", 53, 17),
        tuple("10.9.9.9", 9, "192.0.2.1", 80, 6),
    };
    std::vector<Verdict> out(ts.size());
    c->lookup_batch(ts, out);
    EXPECT_EQ(out[0].rule, 0u);
    EXPECT_EQ(out[1].rule, 1u);
    EXPECT_EQ(out[1].action, AclAction::kPass);
    EXPECT_FALSE(out[2].matched());
    EXPECT_FALSE(out[3].matched());
    EXPECT_EQ(out[4].rule, 0u);
    EXPECT_EQ(out[4].action, AclAction::kDrop);
}

// Two trees (100 source-host rules, visited first, and 100 destination-host rules). After a
// match in the first tree the second is skipped when its best rule ranks after the match,
// descended but its leaf skipped when the leaf's best rule does, and scanned otherwise;
// lookup() and lookup_batch() agree.
TEST(AclClassifierTest, LaterTreeLeafSkippedOnlyWhenItCannotWin) {
    std::string text;
    for (int i = 0; i < 100; ++i) {
        text += "drop tcp any any -> 192.0.2." + std::to_string(i) + " 80 priority " +
                std::to_string(100 + i) + "\n";
    }
    for (int i = 0; i < 100; ++i) {
        text += "pass tcp 198.51.100." + std::to_string(i) + " any -> any any priority " +
                std::to_string(50 + 2 * i) + "\n";
    }
    auto c = build(text);
    EXPECT_EQ(c->stats().trees, 2u);
    const std::vector<FiveTuple> ts = {
        // src rule 110 (priority 70) beats every dst rule: the dst tree is skipped.
        tuple("198.51.100.10", 1, "192.0.2.10", 80, 6),
        // src rule 150 (priority 150) against dst rule 99 (priority 199): the dst leaf of
        // .99 holds rules of priority > 150 only.
        tuple("198.51.100.50", 1, "192.0.2.99", 80, 6),
        // src rule 190 (priority 230) against dst rule 5 (priority 105): dst wins.
        tuple("198.51.100.90", 1, "192.0.2.5", 80, 6),
        // Only the dst rule, only the src rule, neither.
        tuple("203.0.113.1", 1, "192.0.2.7", 80, 6),
        tuple("198.51.100.3", 1, "203.0.113.1", 443, 6),
        tuple("203.0.113.1", 1, "192.0.2.7", 81, 6),
    };
    std::vector<Verdict> out(ts.size());
    c->lookup_batch(ts, out);
    const uint32_t expected[] = {110, 150, 5, 7, 103, Verdict::kNoRule};
    for (size_t i = 0; i < ts.size(); ++i) {
        EXPECT_EQ(out[i].rule, expected[i]) << i;
        EXPECT_EQ(c->lookup(ts[i]).rule, expected[i]) << i;
    }
    EXPECT_EQ(out[0].action, AclAction::kPass);
    EXPECT_EQ(out[1].action, AclAction::kPass);
    EXPECT_EQ(out[2].action, AclAction::kDrop);
}

// A later tree is left at its root when the root's child there holds only rules that rank
// after the answer so far, descended when it holds a better one (whose leaf may still be
// skipped), and a lookup whose first tree has an empty root child goes on to the next tree.
// Trees: 100 source hosts (priorities 50-248, visited first), then 200 destination hosts in
// two /24s (100-199 and 300-399), whose root cut separates the /24s.
TEST(AclClassifierTest, LaterTreeLeftAtItsRootOnlyWhenItCannotWin) {
    std::string text;
    for (int i = 0; i < 100; ++i) {
        text += "drop tcp any any -> 192.0.2." + std::to_string(i) + " 80 priority " +
                std::to_string(100 + i) + "\n";
    }
    for (int i = 0; i < 100; ++i) {
        text += "drop tcp any any -> 203.0.113." + std::to_string(i) + " 80 priority " +
                std::to_string(300 + i) + "\n";
    }
    for (int i = 0; i < 100; ++i) {
        text += "pass tcp 198.51.100." + std::to_string(i) + " any -> any any priority " +
                std::to_string(50 + 2 * i) + "\n";
    }
    auto c = build(text);
    EXPECT_EQ(c->stats().trees, 2u);
    const std::vector<FiveTuple> ts = {
        // src rule 260 (priority 170); the 203.0.113/24 child ranks after it: left at the root.
        tuple("198.51.100.60", 1, "203.0.113.5", 80, 6),
        // The 192.0.2/24 child holds better rules: descended; .10 (priority 110) wins.
        tuple("198.51.100.60", 1, "192.0.2.10", 80, 6),
        // Descended, but the leaf of .90 (priority 190) cannot win.
        tuple("198.51.100.60", 1, "192.0.2.90", 80, 6),
        // No source rule: the destination tree alone.
        tuple("203.0.113.1", 1, "203.0.113.5", 80, 6),
        tuple("203.0.113.1", 1, "203.0.113.200", 80, 6),
        // An empty root child in the source tree, then the destination tree.
        tuple("198.51.100.200", 1, "192.0.2.3", 80, 6),
        tuple("198.51.100.60", 1, "192.0.2.10", 81, 6),
    };
    std::vector<Verdict> out(ts.size());
    c->lookup_batch(ts, out);
    const uint32_t expected[] = {260, 10, 260, 105, Verdict::kNoRule, 3, 260};
    for (size_t i = 0; i < ts.size(); ++i) {
        EXPECT_EQ(out[i].rule, expected[i]) << i;
        EXPECT_EQ(c->lookup(ts[i]).rule, expected[i]) << i;
    }
    EXPECT_EQ(out[0].action, AclAction::kPass);
    EXPECT_EQ(out[1].action, AclAction::kDrop);
}

TEST(AclClassifierTest, RejectsInvalidRules) {
    AclRule wide;
    wide.family = AclFamily::kIpv4;
    wide.src.len = 33;
    EXPECT_EQ(AclClassifier::build({AclRule{}, wide}).status().message(),
              "rule 1 (id 0): prefix length over 32");
    AclRule any;
    any.src.len = 8;
    any.id = 7;
    EXPECT_EQ(AclClassifier::build({any}).status().message(),
              "rule 0 (id 7): family any needs /0 prefixes");
    AclRule ports;
    ports.dport_lo = 10;
    ports.dport_hi = 9;
    EXPECT_EQ(AclClassifier::build({ports}).status().message(),
              "rule 0 (id 0): port range with lo > hi");
    EXPECT_EQ(AclClassifier::build({ports}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AclClassifierTest, MemoryBudget) {
    std::vector<AclRule> rules(1000);
    AclBuildOptions tiny;
    tiny.max_memory_bytes = 1000;
    const auto c = AclClassifier::build(rules, tiny);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(c.status().message(),
              "ACL classifier over its memory budget of 1000 bytes with 1000 rules");
}

TEST(AclClassifierTest, ToString) {
    auto rules =
        parse_acl_rules("drop tcp 10.0.0.0/8 1024: -> 2001:db8::1 [80,443] priority 5", "x");
    ASSERT_FALSE(rules.ok());
    rules = parse_acl_rules(
        "drop tcp 10.0.0.0/8 1024: -> 192.0.2.1 80 priority 5\n"
        "pass udp 2001:db8::/32 any -> any 53\n"
        "bypass any any any -> any any\n",
        "x");
    ASSERT_TRUE(rules.ok()) << rules.status();
    ASSERT_EQ(rules->size(), 3u);
    EXPECT_EQ(to_string((*rules)[0]), "drop 6 10.0.0.0/8 1024:65535 -> 192.0.2.1 80 priority 5");
    EXPECT_EQ(to_string((*rules)[1]), "pass 17 2001:db8::/32 any -> ::/0 53 priority 1000");
    EXPECT_EQ(to_string((*rules)[2]), "bypass any any any -> any any priority 1000");
}

std::vector<std::string> range(const char* lo, const char* hi) {
    std::vector<FamilyPrefix> prefixes;
    append_range_prefixes(ip(lo), ip(hi), &prefixes);
    std::vector<std::string> out;
    for (const FamilyPrefix& p : prefixes) {
        AclRule r;
        r.family = p.family;
        r.src = p.prefix;
        r.dst = p.prefix;
        const std::string text = to_string(r);  // "pass any SRC any -> DST any priority 0"
        out.push_back(text.substr(9, text.find(' ', 9) - 9));
    }
    return out;
}

TEST(AclClassifierTest, RangePrefixes) {
    EXPECT_EQ(range("10.0.0.0", "10.255.255.255"), (std::vector<std::string>{"10.0.0.0/8"}));
    EXPECT_EQ(range("192.0.2.1", "192.0.2.6"),
              (std::vector<std::string>{"192.0.2.1", "192.0.2.2/31", "192.0.2.4/31", "192.0.2.6"}));
    EXPECT_EQ(range("0.0.0.0", "255.255.255.255"), (std::vector<std::string>{"0.0.0.0/0"}));
    EXPECT_EQ(range("2001:db8::", "2001:db8::1:ffff"),
              (std::vector<std::string>{"2001:db8::/111"}));
    // The whole space: IPv6 ::/0 and, for IPv4 packets, 0.0.0.0/0.
    EXPECT_EQ(range("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
              (std::vector<std::string>{"::/0", "0.0.0.0/0"}));
    // Across the end of the v4-mapped block: its tail as IPv4, then IPv6.
    EXPECT_EQ(range("255.255.255.254", "::1:0:0:0"),
              (std::vector<std::string>{"255.255.255.254/31", "::1:0:0:0"}));
    EXPECT_EQ(range("10.0.0.2", "10.0.0.1"), (std::vector<std::string>{}));
}

}  // namespace
}  // namespace picket::sensor::filter
