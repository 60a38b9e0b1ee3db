// The rule file loader's line handling for Snort 3's multi-line rules (RuleLoader::add_text in
// sensor/detect/parser.cc): a rule header whose '(' is not closed on its line is joined with the
// following lines up to its ')', '#' lines between its options are dropped, it is reported at
// its first line, and an unclosed rule is skipped with a diagnostic while the next one loads.
#include <gtest/gtest.h>

#include <string>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

LoadedRules load(const std::string& text) {
    static FlowbitRegistry flowbits;
    ParseEnv env;
    env.flowbits = &flowbits;
    RuleLoader loader(env);
    loader.add_text(text, "m.rules");
    return loader.finish();
}

TEST(RuleFileMultiLine, Snort3RuleSpansLinesWithComments) {
    const LoadedRules out = load(
        "# local rules\n"
        "alert http (\n"
        "    msg:\"multi\";\n"
        "    # a comment between options\n"
        "\n"
        "    http_uri;\n"
        "    content:\"/admin\",nocase;\n"
        "    sid:1000001; rev:1;\n"
        ")\n"
        "alert tcp any any -> any any (msg:\"one line\"; sid:1000002;)\n");
    EXPECT_EQ(out.summary.rules_seen, 2u);
    EXPECT_EQ(out.summary.loaded, 2u);
    ASSERT_EQ(out.rules.size(), 2u);
    EXPECT_EQ(out.rules[0]->sid, 1000001u);
    EXPECT_EQ(out.rules[0]->line, 2u);
    EXPECT_EQ(out.rules[0]->msg, "multi");
    EXPECT_EQ(out.rules[0]->syntax, RuleSyntax::kSnort3);
    EXPECT_EQ(out.rules[0]->text,
              "alert http ( msg:\"multi\"; http_uri; content:\"/admin\",nocase; sid:1000001; "
              "rev:1; )");
    EXPECT_EQ(out.rules[1]->sid, 1000002u);
    EXPECT_EQ(out.rules[1]->line, 10u);
}

TEST(RuleFileMultiLine, CloseOnTheLastOptionLineAndParenthesesInQuotes) {
    const LoadedRules out = load(
        "alert tcp $EXTERNAL_NET any -> $HOME_NET 80 (msg:\"a (b\";\n"
        "  content:\"x)\"; pcre:\"/(a|b)/\";\n"
        "  sid:2; rev:3;)\n"
        "alert udp any any -> any 53 (msg:\"next\"; sid:3;)\n");
    EXPECT_EQ(out.summary.rules_seen, 2u);
    EXPECT_EQ(out.summary.loaded, 2u);
    ASSERT_EQ(out.rules.size(), 2u);
    EXPECT_EQ(out.rules[0]->sid, 2u);
    EXPECT_EQ(out.rules[0]->rev, 3u);
    EXPECT_EQ(out.rules[0]->msg, "a (b");
    EXPECT_EQ(out.rules[0]->line, 1u);
    EXPECT_EQ(out.rules[1]->line, 4u);
}

TEST(RuleFileMultiLine, BackslashContinuationInsideAMultiLineRule) {
    const LoadedRules out = load(
        "alert tcp any any -> any any (\n"
        "  msg:\"joined \\\n"
        "by backslash\";\n"
        "  sid:4;\n"
        ")\n");
    EXPECT_EQ(out.summary.loaded, 1u);
    ASSERT_EQ(out.rules.size(), 1u);
    EXPECT_EQ(out.rules[0]->msg, "joined by backslash");
    EXPECT_EQ(out.rules[0]->line, 1u);
}

TEST(RuleFileMultiLine, NewHeaderBeforeTheCloseIsDiagnosedAndTheNextRuleLoads) {
    const LoadedRules out = load(
        "alert tcp any any -> any any (msg:\"ok\"; sid:10;)\n"
        "alert http (\n"
        "    msg:\"never closed\";\n"
        "    sid:11;\n"
        "\n"
        "alert tcp any any -> any any (msg:\"after\"; sid:12;)\n");
    EXPECT_EQ(out.summary.rules_seen, 3u);
    EXPECT_EQ(out.summary.loaded, 2u);
    EXPECT_EQ(out.summary.skipped, 1u);
    ASSERT_EQ(out.rules.size(), 2u);
    EXPECT_EQ(out.rules[1]->sid, 12u);
    EXPECT_EQ(out.rules[1]->line, 6u);
    ASSERT_EQ(out.summary.diagnostics.size(), 1u);
    EXPECT_EQ(out.summary.diagnostics[0].category, "rule not closed");
    EXPECT_EQ(out.summary.diagnostics[0].to_string(),
              "m.rules:2 sid 0: rule not closed: no ')' before line 6");
    EXPECT_EQ(out.summary.skipped_by_reason.at("rule not closed"), 1u);
}

TEST(RuleFileMultiLine, UnclosedAtEndOfFile) {
    const LoadedRules out = load(
        "alert tcp any any -> any any (msg:\"ok\"; sid:20;)\n"
        "alert tcp any any -> any any (msg:\"open\";\n"
        "  sid:21;\n");
    EXPECT_EQ(out.summary.rules_seen, 2u);
    EXPECT_EQ(out.summary.loaded, 1u);
    ASSERT_EQ(out.summary.diagnostics.size(), 1u);
    EXPECT_EQ(out.summary.diagnostics[0].to_string(),
              "m.rules:2 sid 0: rule not closed: no ')' before the end of the file");
}

TEST(RuleFileMultiLine, OneLineRulesBehaveAsBefore) {
    // A ')' where an option would start closes the rule: the text after it is the parser's
    // to refuse, as before; a commented-out header does not start a rule; a line that is not
    // a rule header is not joined with the next one.
    const LoadedRules out = load(
        "alert tcp any any -> any any (sid:30;) trailing\n"
        "# alert http (\n"
        "not a rule (\n"
        "alert tcp any any -> any any (msg:\"x\"; sid:31)\n");
    EXPECT_EQ(out.summary.rules_seen, 3u);
    EXPECT_EQ(out.summary.loaded, 1u);
    ASSERT_EQ(out.rules.size(), 1u);
    EXPECT_EQ(out.rules[0]->sid, 31u);
    EXPECT_EQ(out.rules[0]->line, 4u);
    ASSERT_EQ(out.summary.diagnostics.size(), 2u);
    EXPECT_EQ(out.summary.diagnostics[0].to_string(), "m.rules:1 sid 0: unexpected text after ')'");
    EXPECT_EQ(out.summary.diagnostics[0].line, 1u);
    EXPECT_EQ(out.summary.diagnostics[1].line, 3u);
    EXPECT_EQ(out.summary.diagnostics[1].category, "syntax");
}

}  // namespace
}  // namespace picket::sensor::detect
