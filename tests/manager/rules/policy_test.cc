#include "manager/rules/rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/strings.h"

namespace picket::rules {
namespace {

using Lines = std::vector<std::string>;

RuleEntry make_rule(uint32_t sid, std::string text, std::string group = "emerging-scan.rules",
                    bool enabled = true) {
    RuleEntry r;
    r.source = "et";
    r.group = std::move(group);
    r.sid = sid;
    r.rev = 1;
    r.enabled = enabled;
    r.text = std::move(text);
    return r;
}

std::string alert(uint32_t sid, std::string_view extra = "") {
    return strings::cat("alert tcp any any -> any any (msg:\"ET SCAN test ", sid, "\"; ", extra,
                        "sid:", sid, "; rev:1;)");
}

Policy parse(PolicyKind kind, std::string_view text) {
    Policy p;
    absl::Status st = parse_policy_file(kind, text, &p);
    EXPECT_TRUE(st.ok()) << st;
    return p;
}

TEST(PolicyFileNames, RoundTrip) {
    EXPECT_EQ(policy_file_name(PolicyKind::kModify), "modify.conf");
    EXPECT_EQ(policy_kind("drop.conf"), PolicyKind::kDrop);
    EXPECT_EQ(policy_kind("enable.conf"), PolicyKind::kEnable);
    EXPECT_EQ(policy_kind("other.conf"), std::nullopt);
}

TEST(ParsePolicy, SelectorsOfEachType) {
    Policy p = parse(PolicyKind::kDisable,
                     "# comment\n"
                     "\n"
                     "1:2019401\n"
                     "2019402  # trailing comment\n"
                     "re:heartbleed\n"
                     "group:emerging-icmp.rules\n"
                     "emerging-info.rules\n"
                     "metadata: Policy Balanced-IPS drop\n"
                     "classtype:trojan-activity\n"
                     "3:1, 2019403 ,4\n");
    ASSERT_EQ(p.disable.size(), 8u);
    EXPECT_EQ(p.disable[0].line, 3u);
    EXPECT_EQ(p.disable[0].selectors[0].type, RuleSelector::Type::kId);
    EXPECT_EQ(p.disable[0].selectors[0].gid, 1u);
    EXPECT_EQ(p.disable[0].selectors[0].sid, 2019401u);
    EXPECT_EQ(p.disable[1].text, "2019402");
    EXPECT_EQ(p.disable[1].selectors[0].sid, 2019402u);
    EXPECT_EQ(p.disable[2].selectors[0].type, RuleSelector::Type::kRegex);
    EXPECT_EQ(p.disable[2].selectors[0].pattern, "heartbleed");
    EXPECT_EQ(p.disable[3].selectors[0].type, RuleSelector::Type::kGroup);
    EXPECT_EQ(p.disable[3].selectors[0].pattern, "emerging-icmp.rules");
    EXPECT_EQ(p.disable[4].selectors[0].type, RuleSelector::Type::kGroup);
    EXPECT_EQ(p.disable[4].selectors[0].pattern, "emerging-info.rules");
    EXPECT_EQ(p.disable[5].selectors[0].type, RuleSelector::Type::kMetadata);
    EXPECT_EQ(p.disable[5].selectors[0].key, "policy");
    EXPECT_EQ(p.disable[5].selectors[0].value, "balanced-ips drop");
    EXPECT_EQ(p.disable[6].selectors[0].type, RuleSelector::Type::kClasstype);
    EXPECT_EQ(p.disable[6].selectors[0].pattern, "trojan-activity");
    ASSERT_EQ(p.disable[7].selectors.size(), 3u);
    EXPECT_EQ(p.disable[7].selectors[0].gid, 3u);
    EXPECT_EQ(p.disable[7].selectors[0].sid, 1u);
    EXPECT_EQ(p.disable[7].selectors[1].gid, 1u);
    EXPECT_EQ(p.disable[7].selectors[1].sid, 2019403u);
    EXPECT_EQ(p.disable[7].selectors[2].sid, 4u);
}

TEST(ParsePolicy, UnknownSelector) {
    Policy p;
    absl::Status st = parse_policy_file(PolicyKind::kDisable, "1:1\n\nfoo:bar\n", &p);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), "disable.conf:3: unknown selector 'foo:bar'");
    EXPECT_TRUE(p.disable.empty());
}

TEST(ParsePolicy, AllProblemsListedOnePerLine) {
    Policy p;
    absl::Status st = parse_policy_file(PolicyKind::kEnable,
                                        "1:abc\nre:foo(bar\n2019401\nmetadata: policy\n", &p);
    EXPECT_EQ(st.message(),
              "enable.conf:1: '1:abc' is not a rule id (GID:SID or SID)\n"
              "enable.conf:2: regex 'foo(bar' does not compile: missing closing parenthesis at "
              "offset 7\n"
              "enable.conf:4: metadata selector needs 'metadata: KEY VALUE'");
    EXPECT_TRUE(p.enable.empty());
}

TEST(ParsePolicy, ModifyLines) {
    Policy p = parse(PolicyKind::kModify,
                     "2019401 \"seconds \\d+\" \"seconds 3600\"\n"
                     "re:classtype:trojan-activity \"(alert)(.*)\" \"drop\\\\2\"\n"
                     "modifysid * \"^drop(.*)noalert(.*)\" | \"alert${1}noalert${2}\"\n"
                     "2019402 rev:1 rev:2\n");
    ASSERT_EQ(p.modify.size(), 4u);
    EXPECT_EQ(p.modify[0].from, "seconds \\d+");
    EXPECT_EQ(p.modify[0].to, "seconds 3600");
    EXPECT_EQ(p.modify[1].selectors[0].pattern, "classtype:trojan-activity");
    EXPECT_EQ(p.modify[1].to, "drop\\2");
    EXPECT_EQ(p.modify[2].selectors[0].type, RuleSelector::Type::kAll);
    EXPECT_EQ(p.modify[2].to, "alert${1}noalert${2}");
    EXPECT_EQ(p.modify[3].from, "rev:1");
    EXPECT_EQ(p.modify[3].to, "rev:2");
}

TEST(ParsePolicy, ModifyProblems) {
    Policy p;
    absl::Status st = parse_policy_file(PolicyKind::kModify,
                                        "2019401 \"seconds\"\n"
                                        "2019401 \"(a\" \"b\"\n"
                                        "2019401 \"(a)\" \"\\2\"\n"
                                        "2019401 \"a\n",
                                        &p);
    EXPECT_EQ(st.message(),
              "modify.conf:1: expected SELECTOR \"FROM\" \"TO\", got 2 words\n"
              "modify.conf:2: regex '(a' does not compile: missing closing parenthesis at "
              "offset 2\n"
              "modify.conf:3: replacement refers to group 2 but the pattern has 1\n"
              "modify.conf:4: unclosed quote");
}

class ApplyPolicyTest : public ::testing::Test {
protected:
    std::vector<RuleEntry> rules_ = {
        make_rule(1, alert(1, "classtype:trojan-activity; ")),
        make_rule(2, alert(2, "metadata:policy balanced-ips drop, policy security-ips alert; ")),
        make_rule(3, alert(3), "emerging-icmp.rules"),
        make_rule(4, alert(4, "content:\"HeartBleed\"; "), "emerging-deleted.rules", false),
        make_rule(5, "pass tcp any any -> any any (msg:\"p\"; sid:5; rev:1;)"),
        make_rule(6, alert(6, "flowbits:set,x; flowbits:noalert; ")),
    };
};

TEST_F(ApplyPolicyTest, IdSelectorDisables) {
    Policy p = parse(PolicyKind::kDisable, "\n\n\n1:2\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_FALSE(rules_[1].enabled);
    EXPECT_TRUE(rules_[0].enabled);
    EXPECT_EQ(r.disabled, 1u);
    EXPECT_EQ(r.changes, (Lines{"disabled 1:2 (disable.conf:4)"}));
    EXPECT_TRUE(r.warnings.empty());
}

TEST_F(ApplyPolicyTest, GidMustMatch) {
    Policy p = parse(PolicyKind::kDisable, "3:2\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_TRUE(rules_[1].enabled);
    EXPECT_EQ(r.warnings, (Lines{"disable.conf:1: 3:2 matched no rule"}));
}

TEST_F(ApplyPolicyTest, CommaIdList) {
    Policy p = parse(PolicyKind::kDisable, "1, 1:3,99\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_EQ(r.disabled, 2u);
    EXPECT_EQ(r.changes, (Lines{"disabled 1:1 (disable.conf:1)", "disabled 1:3 (disable.conf:1)"}));
    EXPECT_TRUE(r.warnings.empty());
}

TEST_F(ApplyPolicyTest, RegexIsCaselessAndSeesDisabledRules) {
    Policy p = parse(PolicyKind::kEnable, "re:heartbleed\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_TRUE(rules_[3].enabled);
    EXPECT_EQ(r.enabled, 1u);
    EXPECT_EQ(r.changes, (Lines{"enabled 1:4 (enable.conf:1)"}));
}

TEST_F(ApplyPolicyTest, GroupFnmatch) {
    Policy p = parse(PolicyKind::kDisable, "group:*deleted*\ngroup:emerging-icmp\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_FALSE(rules_[2].enabled);
    EXPECT_EQ(r.disabled, 1u);  // rule 4 was disabled already
    EXPECT_EQ(r.changes, (Lines{"disabled 1:3 (disable.conf:2)"}));
    EXPECT_TRUE(r.warnings.empty());  // group:*deleted* matched rule 4
}

TEST_F(ApplyPolicyTest, GroupPatternMustMatchWholeName) {
    Policy p = parse(PolicyKind::kDisable, "group:emerging-icmp?rules\ngroup:icmp\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_FALSE(rules_[2].enabled);
    EXPECT_EQ(r.warnings, (Lines{"disable.conf:2: group:icmp matched no rule"}));
}

TEST_F(ApplyPolicyTest, MetadataKeyAndWholeValue) {
    Policy p = parse(PolicyKind::kDisable,
                     "metadata: policy Security-IPS alert\nmetadata: policy balanced-ips\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_FALSE(rules_[1].enabled);
    EXPECT_EQ(r.changes, (Lines{"disabled 1:2 (disable.conf:1)"}));
    EXPECT_EQ(r.warnings, (Lines{"disable.conf:2: metadata: policy balanced-ips matched no rule"}));
}

TEST_F(ApplyPolicyTest, Classtype) {
    Policy p = parse(PolicyKind::kDisable, "classtype:trojan-activity\nclasstype:trojan\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_FALSE(rules_[0].enabled);
    EXPECT_EQ(r.changes, (Lines{"disabled 1:1 (disable.conf:1)"}));
    EXPECT_EQ(r.warnings, (Lines{"disable.conf:2: classtype:trojan matched no rule"}));
}

TEST_F(ApplyPolicyTest, EnableWinsOverDisableAndCountsNet) {
    Policy p = parse(PolicyKind::kDisable, "group:emerging-scan.rules\n");
    ASSERT_TRUE(parse_policy_file(PolicyKind::kEnable, "1:1\n1:4\n", &p).ok());
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_TRUE(rules_[0].enabled);   // disabled, then enabled: no net change
    EXPECT_FALSE(rules_[1].enabled);  // disabled
    EXPECT_TRUE(rules_[3].enabled);   // commented out in the source, enabled
    EXPECT_EQ(r.disabled, 3u);        // 2, 5, 6
    EXPECT_EQ(r.enabled, 1u);
    EXPECT_EQ(r.changes, (Lines{"disabled 1:2 (disable.conf:1)", "enabled 1:4 (enable.conf:2)",
                                "disabled 1:5 (disable.conf:1)", "disabled 1:6 (disable.conf:1)"}));
    EXPECT_TRUE(r.warnings.empty());
}

TEST_F(ApplyPolicyTest, ModifyWithBackrefs) {
    Policy p = parse(PolicyKind::kModify,
                     "1 \"(rev):(\\d+)\" \"\\1:9$2\"\n"
                     "1:2 \"(ET) (SCAN)\" \"${2} \\g<1>\"\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_EQ(rules_[0].text,
              "alert tcp any any -> any any (msg:\"ET SCAN test 1\"; classtype:trojan-activity; "
              "sid:1; rev:91;)");
    EXPECT_EQ(rules_[1].text,
              "alert tcp any any -> any any (msg:\"SCAN ET test 2\"; metadata:policy balanced-ips "
              "drop, policy security-ips alert; sid:2; rev:1;)");
    EXPECT_EQ(r.modified, 2u);
    EXPECT_EQ(r.changes, (Lines{"modified 1:1 (modify.conf:1)", "modified 1:2 (modify.conf:2)"}));
    EXPECT_TRUE(r.warnings.empty());
}

TEST_F(ApplyPolicyTest, ModifyReplacesEveryOccurrenceOnDisabledRulesToo) {
    Policy p = parse(PolicyKind::kModify, "4 any ANY\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_EQ(rules_[3].text,
              "alert tcp ANY ANY -> ANY ANY (msg:\"ET SCAN test 4\"; content:\"HeartBleed\"; "
              "sid:4; rev:1;)");
    EXPECT_FALSE(rules_[3].enabled);
    EXPECT_EQ(r.modified, 1u);
}

TEST(ApplyPolicy, ModifyEmptyMatchesAsPythonReSub) {
    // Python 3.7+: re.sub("x*", "-", "abxd") == "-a-b--d-".
    std::vector<RuleEntry> rules = {make_rule(9, "abxd")};
    Policy p = parse(PolicyKind::kModify, "9 \"x*\" -\n");
    PolicyReport r = apply_policy(p, &rules);
    EXPECT_EQ(rules[0].text, "-a-b--d-");
    EXPECT_EQ(r.modified, 1u);
}

TEST_F(ApplyPolicyTest, ModifyPatternNotMatchingWarns) {
    Policy p = parse(PolicyKind::kModify, "1:1 \"seconds \\d+\" \"seconds 3600\"\n1:77 a b\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_EQ(r.modified, 0u);
    EXPECT_EQ(rules_[0].text, alert(1, "classtype:trojan-activity; "));
    EXPECT_EQ(r.warnings, (Lines{"modify.conf:1: 'seconds \\d+' matched no selected rule's text",
                                 "modify.conf:2: 1:77 matched no rule"}));
}

TEST_F(ApplyPolicyTest, DropOnlyEnabledRulesAndNotNoalert) {
    Policy p = parse(PolicyKind::kDrop, "1:1\n1:4\n1:5\n1:6\n");
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_EQ(rules_[0].text.substr(0, 9), "drop tcp ");
    EXPECT_EQ(rules_[3].text.substr(0, 10), "alert tcp ");  // disabled: left alone
    // suricata-update rewrites whatever the leading action is (re.sub("^\w+", "drop")).
    EXPECT_EQ(rules_[4].text, "drop tcp any any -> any any (msg:\"p\"; sid:5; rev:1;)");
    EXPECT_EQ(rules_[5].text.substr(0, 10), "alert tcp ");  // flowbits:noalert
    EXPECT_EQ(r.dropped, 2u);
    EXPECT_EQ(r.changes, (Lines{"dropped 1:1 (drop.conf:1)", "dropped 1:5 (drop.conf:3)"}));
    EXPECT_TRUE(r.warnings.empty());
}

TEST_F(ApplyPolicyTest, DropRunsBeforeModify) {
    // suricata-update's main.py: disable, enable, drop, then modify, rule by rule.
    Policy p = parse(PolicyKind::kDrop, "1:1\n");
    ASSERT_TRUE(parse_policy_file(PolicyKind::kModify, "re:^drop \"^drop\" \"reject\"\n", &p).ok());
    ASSERT_TRUE(parse_policy_file(PolicyKind::kEnable, "1:4\n", &p).ok());
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_EQ(rules_[0].text.substr(0, 11), "reject tcp ");
    EXPECT_TRUE(rules_[3].enabled);
    EXPECT_EQ(r.changes, (Lines{"dropped 1:1 (drop.conf:1)", "modified 1:1 (modify.conf:1)",
                                "enabled 1:4 (enable.conf:1)"}));
}

TEST_F(ApplyPolicyTest, LinesMatchingNothingWarn) {
    Policy p = parse(PolicyKind::kDisable, "1:999\nre:nothing-here\n");
    ASSERT_TRUE(parse_policy_file(PolicyKind::kEnable, "group:nope.rules\n", &p).ok());
    ASSERT_TRUE(parse_policy_file(PolicyKind::kDrop, "classtype:none\n", &p).ok());
    PolicyReport r = apply_policy(p, &rules_);
    EXPECT_EQ(r.warnings, (Lines{"disable.conf:1: 1:999 matched no rule",
                                 "disable.conf:2: re:nothing-here matched no rule",
                                 "enable.conf:1: group:nope.rules matched no rule",
                                 "drop.conf:1: classtype:none matched no rule"}));
    EXPECT_TRUE(r.changes.empty());
}

TEST(ApplyPolicyScale, FiftyThousandRulesTwoHundredLines) {
    std::vector<RuleEntry> rules;
    rules.reserve(50'000);
    for (uint32_t sid = 1; sid <= 50'000; ++sid) {
        std::string group = strings::cat("emerging-g", sid % 50, ".rules");
        rules.push_back(make_rule(sid,
                                  alert(sid, strings::cat("classtype:c", sid % 7,
                                                          "; metadata:bucket b", sid % 100, "; ")),
                                  std::move(group)));
    }
    std::string disable, enable;
    for (uint32_t i = 0; i < 150; ++i) {  // 150 id lines: sids 1..150
        strings::append(disable, "1:", i + 1, "\n");
    }
    strings::append(disable, "group:emerging-g3.rules\n");  // sid % 50 == 3: 1000 rules
    strings::append(disable, "re:test 4999\\d\"\n");        // 49990..49999: 10 rules
    strings::append(disable, "metadata: bucket b77\n");     // sid % 100 == 77: 500 rules
    for (uint32_t i = 0; i < 46; ++i) {
        strings::append(enable, "re:test ", 100 + i, "\"\n");  // sids 100..145 come back
    }
    strings::append(enable, "1:200000\n");  // matches nothing
    Policy p = parse(PolicyKind::kDisable, disable);
    ASSERT_TRUE(parse_policy_file(PolicyKind::kEnable, enable, &p).ok());
    ASSERT_EQ(p.disable.size() + p.enable.size(), 200u);
    PolicyReport r = apply_policy(p, &rules);
    // Disabled: 1..150 (150) + g3 (1000, of which 3, 53, 103 are in 1..150) + b77 (500, of which
    // 77 is in 1..150; none is g3 since sid % 50 == 27) + 49990..49999 (10, none g3 or b77)
    // = 150 + 997 + 499 + 10 = 1656; 46 of them (100..145) are enabled again: net 1610.
    EXPECT_EQ(r.disabled, 1610u);
    EXPECT_EQ(r.enabled, 0u);
    EXPECT_EQ(r.changes.size(), 1610u);
    EXPECT_EQ(r.warnings, (Lines{"enable.conf:47: 1:200000 matched no rule"}));
    EXPECT_TRUE(rules[99].enabled);    // sid 100
    EXPECT_FALSE(rules[146].enabled);  // sid 147
    EXPECT_FALSE(rules[49'992].enabled);
}

}  // namespace
}  // namespace picket::rules
