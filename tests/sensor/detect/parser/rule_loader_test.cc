#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

std::string last_line(const std::string& s) {
    const size_t nl = s.rfind('\n');
    return nl == std::string::npos ? s : s.substr(nl + 1);
}

TEST(RuleLoader, DiagnosticsNameFileLineSidAndReason) {
    const ClassificationTable classes = parse_classification_config(
        "config classification: misc-activity,Misc activity,3\n", "c", nullptr);
    ParseEnv env;
    env.classifications = &classes;
    RuleLoader loader(env);
    loader.add_text(
        "alert tcp any any -> any any (msg:\"ok\"; classtype:misc-activity; sid:1; rev:1;)\n"
        "alert tcp any any -> any any (msg:\"x\"; frobnicate; sid:2;)\n"
        "alert tcp any any -> any any (msg:\"x\"; lua:a.lua; sid:3;)\n"
        "alert tcp any any -> any any (msg:\"x\";)\n"
        "alert tcp any any -> any any (classtype:nope; sid:5;)\n"
        "alert tcp 1.2.3.256 any -> any any (sid:6;)\n"
        "alert tcp any 0:70000 -> any any (sid:7;)\n"
        "alert tcp any any => any any (sid:8;)\n"
        "alert tcp any any -> any any (msg:\"unterminated; sid:9;)\n"
        "alert tcp any any -> any any (sid:10; rev:z;)\n"
        "alert sctp any any -> any any (sid:11;)\n"
        "alert tcp any any -> any any (sid:12;)\n",
        "t.rules");
    LoadedRules out = loader.finish();
    const LoadSummary& s = out.summary;
    EXPECT_EQ(s.files, 1u);
    EXPECT_EQ(s.rules_seen, 12u);
    EXPECT_EQ(s.loaded, 2u);
    EXPECT_EQ(s.skipped, 10u);
    ASSERT_EQ(out.rules.size(), 2u);
    EXPECT_EQ(out.rules[0]->sid, 1u);
    EXPECT_EQ(out.rules[0]->file, "t.rules");
    EXPECT_EQ(out.rules[0]->line, 1u);
    EXPECT_EQ(out.rules[0]->category, "Misc activity");
    EXPECT_EQ(out.rules[1]->sid, 12u);
    EXPECT_EQ(out.rules[1]->line, 12u);

    ASSERT_EQ(s.diagnostics.size(), 10u);
    const char* expected[] = {
        "t.rules:2 sid 2: unknown keyword 'frobnicate'",
        "t.rules:3 sid 3: unsupported keyword 'lua'",
        "t.rules:4 sid 0: rule has no sid",
        "t.rules:5 sid 5: unknown classtype 'nope'",
        "t.rules:6 sid 6: bad address '1.2.3.256'",
        "t.rules:7 sid 7: bad port '0:70000'",
        "t.rules:8 sid 8: bad direction '=>' (expected -> or <>)",
        "t.rules:9 sid 9: msg: unterminated quoted string",
        "t.rules:10 sid 10: rev: must be a number, got 'z'",
        "t.rules:11 sid 11: unsupported protocol 'sctp'",
    };
    for (size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(s.diagnostics[i].to_string(), expected[i]) << i;
    }
    const std::map<std::string, uint32_t> by_reason = {
        {"unknown keyword", 1}, {"unsupported keyword", 1},
        {"missing sid", 1},     {"unknown classtype", 1},
        {"bad address", 1},     {"bad port", 1},
        {"bad header", 1},      {"bad msg", 1},
        {"bad rev", 1},         {"unsupported protocol", 1},
    };
    EXPECT_EQ(s.skipped_by_reason, by_reason);
}

TEST(RuleLoader, DisabledBlankAndMultiLineRules) {
    RuleLoader loader(ParseEnv{});
    loader.add_text(
        "# a comment\n"
        "\n"
        "#alert tcp any any -> any any (msg:\"disabled\"; sid:100;)\n"
        "   # alert tcp any any -> any any (msg:\"disabled too\"; sid:101;)\n"
        "alert tcp any any -> any any (msg:\"multi \\\n"
        "line\"; \\\r\n"
        "   sid:102; \\\n"
        "   rev:2;)\r\n"
        "\t\n"
        "alert udp any any -> any 53 (msg:\"last, no newline\"; sid:103;)",
        "m.rules");
    LoadedRules out = loader.finish();
    EXPECT_EQ(out.summary.rules_seen, 2u);
    EXPECT_EQ(out.summary.loaded, 2u);
    EXPECT_EQ(out.summary.skipped, 0u);
    ASSERT_EQ(out.rules.size(), 2u);
    EXPECT_EQ(out.rules[0]->sid, 102u);
    EXPECT_EQ(out.rules[0]->rev, 2u);
    EXPECT_EQ(out.rules[0]->msg, "multi line");
    EXPECT_EQ(out.rules[0]->line, 5u);
    EXPECT_EQ(out.rules[0]->text,
              "alert tcp any any -> any any (msg:\"multi line\";    sid:102;    rev:2;)");
    EXPECT_EQ(out.rules[1]->sid, 103u);
    EXPECT_EQ(out.rules[1]->line, 10u);
}

TEST(RuleLoader, DuplicateSidKeepsHigherRev) {
    RuleLoader loader(ParseEnv{});
    loader.add_text(
        "alert tcp any any -> any any (msg:\"a\"; sid:1; rev:1;)\n"
        "alert tcp any any -> any any (msg:\"b\"; sid:1; rev:3;)\n"
        "alert tcp any any -> any any (msg:\"c\"; sid:1; rev:2;)\n"
        "alert tcp any any -> any any (msg:\"d\"; sid:2; rev:1;)\n"
        "alert tcp any any -> any any (msg:\"e\"; gid:3; sid:2; rev:1;)\n",
        "a.rules");
    loader.add_text("alert tcp any any -> any any (msg:\"f\"; sid:2; rev:1;)\n", "b.rules");
    LoadedRules out = loader.finish();
    EXPECT_EQ(out.summary.files, 2u);
    EXPECT_EQ(out.summary.rules_seen, 6u);
    EXPECT_EQ(out.summary.loaded, 3u);
    EXPECT_EQ(out.summary.skipped, 3u);
    ASSERT_EQ(out.rules.size(), 3u);
    EXPECT_EQ(out.rules[0]->msg, "b");
    EXPECT_EQ(out.rules[1]->msg, "d");
    EXPECT_EQ(out.rules[2]->msg, "e");
    ASSERT_EQ(out.summary.diagnostics.size(), 3u);
    EXPECT_EQ(out.summary.diagnostics[0].to_string(),
              "a.rules:1 sid 1: duplicate sid (gid 1 rev 1), keeping rev 3 from a.rules:2");
    EXPECT_EQ(out.summary.diagnostics[1].to_string(),
              "a.rules:3 sid 1: duplicate sid (gid 1 rev 2), keeping rev 3 from a.rules:2");
    EXPECT_EQ(out.summary.diagnostics[2].to_string(),
              "b.rules:1 sid 2: duplicate sid (gid 1 rev 1), keeping rev 1 from a.rules:4");
    EXPECT_EQ(out.summary.skipped_by_reason.at("duplicate sid"), 3u);
}

TEST(RuleLoader, FilesAndUnreadableFile) {
    const std::string path = ::testing::TempDir() + "/picket_loader_test.rules";
    {
        std::ofstream f(path);
        f << "alert tcp any any -> any any (msg:\"x\"; sid:1;)\n"
             "alert tcp any any -> any any (msg:\"x\"; bogus; sid:2;)\n";
    }
    LoadedRules out = load_rule_files({path}, ParseEnv{});
    EXPECT_EQ(out.summary.loaded, 1u);
    EXPECT_EQ(out.summary.skipped, 1u);
    ASSERT_EQ(out.summary.diagnostics.size(), 1u);
    EXPECT_EQ(out.summary.diagnostics[0].to_string(), path + ":2 sid 2: unknown keyword 'bogus'");
    std::remove(path.c_str());
    try {
        load_rule_files({"/nonexistent/x.rules"}, ParseEnv{});
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "/nonexistent/x.rules: cannot open: No such file or directory");
    }
}

TEST(LoadSummary, ToStringEndsWithCounts) {
    LoadSummary s;
    s.files = 2;
    s.rules_seen = 10;
    s.loaded = 7;
    s.skipped = 3;
    s.skipped_by_reason = {{"unknown keyword", 1}, {"duplicate sid", 2}};
    s.parse_ms = 1.3;
    s.compile_ms = 3.5;
    s.memory_bytes = 3 * 1024 * 1024;
    s.groups = 4;
    s.hs_databases = 5;
    s.no_fast_pattern_rules = 6;
    EXPECT_EQ(s.to_string(),
              "rule files: 2, rules seen: 10\n"
              "  skipped (duplicate sid): 2\n"
              "  skipped (unknown keyword): 1\n"
              "parse 1.3 ms, compile 3.5 ms, memory 3.0 MiB\n"
              "groups 4, hyperscan databases 5, rules without fast pattern 6\n"
              "rules: 7 loaded, 3 skipped");
    EXPECT_EQ(last_line(LoadSummary{}.to_string()), "rules: 0 loaded, 0 skipped");
}

}  // namespace
}  // namespace picket::sensor::detect
