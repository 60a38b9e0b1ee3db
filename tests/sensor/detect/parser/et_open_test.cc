// Loads the whole Emerging Threats Open ruleset (when the shared data directory is present)
// to prove that no real-world rule crashes the parser and that the summary adds up. The
// summary and the top skip reasons are printed for the record.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

namespace fs = std::filesystem;

TEST(EtOpen, LoadsWholeRulesetWithoutCrashing) {
    const fs::path dir = fs::path(PICKET_SHARED_DATA_DIR) / "rules" / "et-open";
    if (!fs::is_directory(dir)) {
        GTEST_SKIP() << dir << " not present";
    }
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ".rules") {
            files.push_back(e.path().string());
        }
    }
    std::sort(files.begin(), files.end());
    ASSERT_FALSE(files.empty());

    std::vector<std::string> class_errors;
    const ClassificationTable classes =
        load_classification_file((dir / "classification.config").string(), &class_errors);
    EXPECT_TRUE(class_errors.empty());
    FlowbitRegistry flowbits;
    ParseEnv env;
    env.classifications = &classes;
    env.flowbits = &flowbits;
    const LoadedRules out = load_rule_files(files, env);
    const LoadSummary& s = out.summary;

    std::cout << s.to_string() << "\n";
    // The most frequent reasons, to see what is missing.
    std::map<std::string, uint32_t> reasons;
    for (const RuleDiagnostic& d : s.diagnostics) {
        ++reasons[d.reason];
    }
    std::vector<std::pair<uint32_t, std::string>> top;
    for (const auto& [reason, n] : reasons) {
        top.emplace_back(n, reason);
    }
    std::sort(top.rbegin(), top.rend());
    for (size_t i = 0; i < top.size() && i < 15; ++i) {
        std::cout << "  " << top[i].first << "  " << top[i].second << "\n";
    }

    EXPECT_EQ(s.files, files.size());
    EXPECT_EQ(s.loaded + s.skipped, s.rules_seen);
    EXPECT_EQ(s.loaded, out.rules.size());
    EXPECT_EQ(s.diagnostics.size(), s.skipped);
    uint32_t by_reason = 0;
    for (const auto& [reason, n] : s.skipped_by_reason) {
        by_reason += n;
    }
    EXPECT_EQ(by_reason, s.skipped);
    EXPECT_GT(s.rules_seen, 20000u);
    // The floor: what loaded when the numeric limits were aligned on Suricata 7 (#22); a
    // change that refuses more values must not cost an ET Open rule.
    EXPECT_GE(s.loaded, 24825u);
    EXPECT_EQ(s.skipped_by_reason.count("unknown classtype"), 0u);
    EXPECT_EQ(s.skipped_by_reason.count("bad address"), 0u);
    EXPECT_EQ(s.skipped_by_reason.count("bad port"), 0u);
    EXPECT_EQ(s.skipped_by_reason.count("syntax"), 0u);
    EXPECT_EQ(s.skipped_by_reason.count("unknown keyword"), 0u);
}

}  // namespace
}  // namespace picket::sensor::detect
