#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sensor/filter/filter.h"

namespace picket::sensor::filter {
namespace {

std::vector<std::string> texts(const std::string& input) {
    auto rules = parse_acl_rules(input, "acl.rules");
    EXPECT_TRUE(rules.ok()) << rules.status();
    std::vector<std::string> out;
    for (const AclRule& r : *rules) {
        std::string line = std::to_string(r.id);
        line += ": ";
        line += to_string(r);
        out.push_back(line);
    }
    return out;
}

std::string error(const std::string& input) {
    auto rules = parse_acl_rules(input, "acl.rules");
    EXPECT_FALSE(rules.ok());
    EXPECT_EQ(rules.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(rules.status().message());
}

TEST(AclParserTest, OneRule) {
    auto rules = parse_acl_rules("drop tcp 10.0.0.0/8 any -> 192.0.2.1 22 priority 7\n", "a");
    ASSERT_TRUE(rules.ok()) << rules.status();
    ASSERT_EQ(rules->size(), 1u);
    const AclRule& r = (*rules)[0];
    EXPECT_EQ(r.family, AclFamily::kIpv4);
    EXPECT_EQ(r.src.len, 8);
    EXPECT_TRUE(r.src.addr.is_v4());
    EXPECT_EQ(r.src.addr.v4()[0], 10);
    EXPECT_EQ(r.dst.len, 32);
    EXPECT_EQ(r.sport_lo, 0);
    EXPECT_EQ(r.sport_hi, 65535);
    EXPECT_EQ(r.dport_lo, 22);
    EXPECT_EQ(r.dport_hi, 22);
    EXPECT_FALSE(r.any_proto);
    EXPECT_EQ(r.proto, 6);
    EXPECT_EQ(r.priority, 7u);
    EXPECT_EQ(r.action, AclAction::kDrop);
    EXPECT_EQ(r.id, 1u);
}

TEST(AclParserTest, CommentsBlankLinesAndCrlf) {
    EXPECT_EQ(texts("# header\n\n   \npass udp any any -> any 53   # dns\r\n\tbypass ip any any "
                    "-> 192.0.2.0/24 any\n"),
              (std::vector<std::string>{
                  "4: pass 17 any any -> any 53 priority 1000",
                  "5: bypass any 0.0.0.0/0 any -> 192.0.2.0/24 any priority 1000",
              }));
}

TEST(AclParserTest, PortForms) {
    EXPECT_EQ(texts("drop tcp any 1024: -> any :1023\n"
                    "drop udp any 0 -> any 65535\n"
                    "drop sctp any 5:6 -> any any\n"),
              (std::vector<std::string>{
                  "1: drop 6 any 1024:65535 -> any 0:1023 priority 1000",
                  "2: drop 17 any 0 -> any 65535 priority 1000",
                  "3: drop 132 any 5:6 -> any any priority 1000",
              }));
}

TEST(AclParserTest, ListsExpandInOrder) {
    EXPECT_EQ(texts("drop tcp [10.0.0.1, 10.0.0.2] any -> any [80,443]\n"),
              (std::vector<std::string>{
                  "1: drop 6 10.0.0.1 any -> 0.0.0.0/0 80 priority 1000",
                  "1: drop 6 10.0.0.1 any -> 0.0.0.0/0 443 priority 1000",
                  "1: drop 6 10.0.0.2 any -> 0.0.0.0/0 80 priority 1000",
                  "1: drop 6 10.0.0.2 any -> 0.0.0.0/0 443 priority 1000",
              }));
}

TEST(AclParserTest, MixedFamilyListKeepsSameFamilyPairs) {
    EXPECT_EQ(texts("pass ip [192.0.2.0/24, 2001:db8::/32] any -> [198.51.100.1, ::1] any\n"),
              (std::vector<std::string>{
                  "1: pass any 192.0.2.0/24 any -> 198.51.100.1 any priority 1000",
                  "1: pass any 2001:db8::/32 any -> ::1 any priority 1000",
              }));
}

TEST(AclParserTest, BothDirections) {
    EXPECT_EQ(texts("bypass tcp 192.0.2.1 any <> 198.51.100.0/24 443 priority 3\n"),
              (std::vector<std::string>{
                  "1: bypass 6 192.0.2.1 any -> 198.51.100.0/24 443 priority 3",
                  "1: bypass 6 198.51.100.0/24 443 -> 192.0.2.1 any priority 3",
              }));
}

TEST(AclParserTest, IcmpPerFamily) {
    EXPECT_EQ(texts("drop icmp any any -> any any\n"
                    "drop icmp 192.0.2.1 any -> any any\n"
                    "drop icmp any any -> 2001:db8::1 any\n"
                    "drop icmpv6 any any -> any any\n"
                    "drop 47 any any -> any any\n"),
              (std::vector<std::string>{
                  "1: drop 1 0.0.0.0/0 any -> 0.0.0.0/0 any priority 1000",
                  "1: drop 58 ::/0 any -> ::/0 any priority 1000",
                  "2: drop 1 192.0.2.1 any -> 0.0.0.0/0 any priority 1000",
                  "3: drop 58 ::/0 any -> 2001:db8::1 any priority 1000",
                  "4: drop 58 ::/0 any -> ::/0 any priority 1000",
                  "5: drop 47 any any -> any any priority 1000",
              }));
}

TEST(AclParserTest, Errors) {
    EXPECT_EQ(error("alert tcp any any -> any any"),
              "acl.rules:1: unknown action \"alert\" (expected pass, drop or bypass)");
    EXPECT_EQ(error("drop tcp any any -> any"),
              "acl.rules:1: incomplete rule: expected ACTION PROTO SRC SPORT -> DST DPORT "
              "[priority N]");
    EXPECT_EQ(error("drop tcpp any any -> any any"),
              "acl.rules:1: unknown protocol \"tcpp\" (expected any, ip, tcp, udp, sctp, icmp, "
              "icmpv6 or a number 0-255)");
    EXPECT_EQ(error("drop 256 any any -> any any"),
              "acl.rules:1: unknown protocol \"256\" (expected any, ip, tcp, udp, sctp, icmp, "
              "icmpv6 or a number 0-255)");
    EXPECT_EQ(error("drop tcp 10.0.0.300 any -> any any"),
              "acl.rules:1: bad source address \"10.0.0.300\": not an IPv4 or IPv6 address");
    EXPECT_EQ(error("drop tcp any any -> 10.0.0.0/33 any"),
              "acl.rules:1: bad destination address \"10.0.0.0/33\": prefix length must be 0-32");
    EXPECT_EQ(error("drop tcp 2001:db8::/129 any -> any any"),
              "acl.rules:1: bad source address \"2001:db8::/129\": prefix length must be 0-128");
    EXPECT_EQ(error("drop tcp ::ffff:10.0.0.1 any -> any any"),
              "acl.rules:1: bad source address \"::ffff:10.0.0.1\": an IPv4-mapped IPv6 address "
              "never matches, write the IPv4 address");
    EXPECT_EQ(error("drop tcp !10.0.0.0/8 any -> any any"),
              "acl.rules:1: negated source address \"!10.0.0.0/8\" is not supported: write a "
              "higher-priority rule for the exception");
    EXPECT_EQ(error("drop tcp any 2000:1000 -> any any"),
              "acl.rules:1: bad source port \"2000:1000\": range starts after it ends");
    EXPECT_EQ(error("drop tcp any any -> any 65536"),
              "acl.rules:1: bad destination port \"65536\": expected any, N, N:M, N: or :M with "
              "ports 0-65535");
    EXPECT_EQ(error("drop tcp any any -> any :"),
              "acl.rules:1: bad destination port \":\": expected any, N, N:M, N: or :M with "
              "ports 0-65535");
    EXPECT_EQ(error("drop icmp any any -> any 80"),
              "acl.rules:1: destination port \"80\" needs protocol tcp, udp or sctp, not "
              "\"icmp\"");
    EXPECT_EQ(error("drop tcp any any => any any"),
              "acl.rules:1: expected \"->\" or \"<>\" after the source port, got \"=>\"");
    EXPECT_EQ(error("drop tcp 10.0.0.1 any -> 2001:db8::1 any"),
              "acl.rules:1: no packet can match: the source and destination (or icmpv6) are of "
              "different address families");
    EXPECT_EQ(error("drop icmpv6 10.0.0.1 any -> any any"),
              "acl.rules:1: no packet can match: the source and destination (or icmpv6) are of "
              "different address families");
    EXPECT_EQ(error("drop tcp any any -> any any priority"),
              "acl.rules:1: priority needs a number");
    EXPECT_EQ(error("drop tcp any any -> any any priority 4294967296"),
              "acl.rules:1: bad priority \"4294967296\": expected a number 0-4294967295");
    EXPECT_EQ(error("drop tcp any any -> any any prio 3"),
              "acl.rules:1: unexpected \"prio\" after the rule: expected ACTION PROTO SRC SPORT "
              "-> DST DPORT [priority N]");
    EXPECT_EQ(error("drop tcp [10.0.0.1, any -> any any"),
              "acl.rules:1: unterminated list: \"[10.0.0.1, any -> any any\" has no \"]\"");
    EXPECT_EQ(error("drop tcp [10.0.0.1,,10.0.0.2] any -> any any"),
              "acl.rules:1: empty item in source address list \"[10.0.0.1,,10.0.0.2]\"");
    EXPECT_EQ(error("drop tcp [] any -> any any"), "acl.rules:1: empty source address list");
    EXPECT_EQ(error("drop tcp any [80, any] -> any any"),
              "acl.rules:1: \"any\" inside the source port list \"[80, any]\"");
}

TEST(AclParserTest, OneErrorPerBadLine) {
    EXPECT_EQ(error("pass tcp any any -> any 80\n"
                    "drop tcp any any -> any 99999\n"
                    "# fine\n"
                    "block ip any any -> any any\n"),
              "acl.rules:2: bad destination port \"99999\": expected any, N, N:M, N: or :M with "
              "ports 0-65535\n"
              "acl.rules:4: unknown action \"block\" (expected pass, drop or bypass)");
}

TEST(AclParserTest, ErrorsAreCapped) {
    std::string text;
    for (int i = 0; i < 25; ++i) {
        text += "x\n";
    }
    const std::string e = error(text);
    EXPECT_EQ(e.substr(e.rfind('\n') + 1), "acl.rules: 5 more errors");
    EXPECT_EQ(e.substr(0, e.find('\n')),
              "acl.rules:1: incomplete rule: expected ACTION PROTO SRC SPORT -> DST DPORT "
              "[priority N]");
}

TEST(AclParserTest, ExpansionLimit) {
    std::string list = "[";
    for (int i = 0; i < 400; ++i) {
        list += i == 0 ? "" : ",";
        list += std::to_string(i + 1);
    }
    list += "]";
    EXPECT_EQ(error("drop tcp any " + list + " -> any " + list),
              "acl.rules:1: the lists expand to 160000 rules (the limit is 100000 per line)");
}

}  // namespace
}  // namespace picket::sensor::filter
