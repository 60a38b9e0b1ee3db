// The rule loader with a per-file syntax (a bundle's config.yaml rule-syntax, --rule-syntax):
// a file forced to snort3 parses every rule as Snort 3 (Rule::syntax, "snort3:" reasons), a
// file forced to suricata never tries Snort 3, and DetectConfig carries both to the engine.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "sensor/detect/detect.h"
#include "sensor/detect/parser.h"
#include "sensor/detect/rule.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::detect {
namespace {

using picket::testing::TempDir;

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
    const std::string path = dir.file(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
}

// Valid in both languages, so auto reads it as Suricata.
const char kBoth[] = "alert tcp any any -> any 80 (msg:\"both\"; content:\"abc\"; sid:1;)\n";
const char kSnort3Only[] = "alert http (msg:\"s3\"; http_uri; content:\"/a.php\",nocase; sid:2;)\n";
const char kSnort3Unsupported[] =
    "alert tcp any any -> any any (vba_data; content:\"a\"; sid:3;)\n";

struct Loaded {
    std::vector<std::pair<uint32_t, RuleSyntax>> rules;  // sid, syntax
    std::vector<std::string> diagnostics;
};

Loaded summarize(const LoadedRules& out) {
    Loaded l;
    for (const auto& r : out.rules) {
        l.rules.emplace_back(r->sid, r->syntax);
    }
    for (const auto& d : out.summary.diagnostics) {
        l.diagnostics.push_back(d.to_string());
    }
    return l;
}

TEST(RuleSyntaxLoader, ForcedSnort3AndForcedSuricataFiles) {
    TempDir dir("picket-syntax");
    const std::string s3 =
        write(dir, "s3.rules", std::string(kBoth) + kSnort3Only + kSnort3Unsupported);
    const std::string sur =
        write(dir, "sur.rules",
              "alert http (msg:\"s3\"; http_uri; content:\"/a.php\",nocase; sid:4;)\n"
              "alert tcp any any -> any 80 (msg:\"both\"; content:\"abc\"; sid:5;)\n");

    const Loaded forced = summarize(
        load_rule_files({s3, sur}, ParseEnv{},
                        {{s3, ParseEnv::Syntax::kSnort3}, {sur, ParseEnv::Syntax::kSuricata}}));
    using P = std::pair<uint32_t, RuleSyntax>;
    EXPECT_EQ(forced.rules,
              (std::vector<P>{
                  {1, RuleSyntax::kSnort3}, {2, RuleSyntax::kSnort3}, {5, RuleSyntax::kSuricata}}));
    ASSERT_EQ(forced.diagnostics.size(), 2u);
    EXPECT_EQ(forced.diagnostics[0], s3 + ":3 sid 3: snort3: unsupported buffer 'vba_data'");
    // The Suricata parser's own reason: Snort 3 was not tried.
    EXPECT_EQ(
        forced.diagnostics[1],
        sur + ":1 sid 4: header has 2 fields, expected 'action proto src sport -> dst dport'");

    // Auto (no entry): the rule valid in both is Suricata, the Snort 3-only one Snort 3.
    const Loaded automatic = summarize(load_rule_files({s3}, ParseEnv{}, {}));
    EXPECT_EQ(automatic.rules,
              (std::vector<P>{{1, RuleSyntax::kSuricata}, {2, RuleSyntax::kSnort3}}));
    EXPECT_EQ(automatic.diagnostics,
              std::vector<std::string>{s3 + ":3 sid 3: snort3: unsupported buffer 'vba_data'"});

    // A file not in the map follows env.syntax.
    ParseEnv suricata_only;
    suricata_only.syntax = ParseEnv::Syntax::kSuricata;
    const Loaded fallback = summarize(load_rule_files({s3}, suricata_only, {}));
    EXPECT_EQ(fallback.rules, (std::vector<P>{{1, RuleSyntax::kSuricata}}));
    EXPECT_EQ(fallback.diagnostics.size(), 2u);
}

TEST(RuleSyntaxLoader, DetectConfigReachesTheLoader) {
    TempDir dir("picket-syntax");
    const std::string s3 = write(dir, "s3.rules", std::string(kSnort3Only) + kBoth);
    const std::string sur = write(dir, "sur.rules", "alert http (msg:\"x\"; sid:10;)\n");
    DetectConfig config;
    config.rule_files = {s3, sur};
    config.rule_syntax = DetectConfig::FileSyntax::kSuricata;  // for sur.rules
    config.rule_file_syntax[s3] = DetectConfig::FileSyntax::kSnort3;
    LoadSummary summary;
    auto engine = DetectEngine::load(config, nullptr, &summary);
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(summary.loaded, 2u);
    EXPECT_EQ(summary.skipped, 1u);
    ASSERT_EQ(summary.diagnostics.size(), 1u);
    EXPECT_EQ(summary.diagnostics[0].file, sur);
    EXPECT_EQ(summary.diagnostics[0].sid, 10u);
    EXPECT_EQ(summary.diagnostics[0].reason.find("snort3:"), std::string::npos);
}

}  // namespace
}  // namespace picket::sensor::detect
