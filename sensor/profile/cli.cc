// picket-sensor --profile-configs: the ladder's variables from the command line, the plan,
// the runs and the table (what main() used to do itself).
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "sensor/profile/profile.h"

namespace picket::sensor::profile {

// Runs the ladder over the -r files: the table on stdout, progress on stderr. Exit 2 for a bad
// ladder or arguments, 1 when a run fails.
int run_cli(const CliArgs& a, Config base, const std::string& exclusive_rules,
            const std::vector<std::string>& extra_rules) {
    auto ladder = load_ladder(a.ladder);
    if (!ladder.ok()) {
        std::fprintf(stderr, "picket-sensor: %s\n", std::string(ladder.status().message()).c_str());
        return kCliUsage;
    }
    const std::set<std::string> used = referenced_variables(*ladder);
    // ${rules}: what this command line would load (-S replaces rule-files, -s adds). Absolute,
    // so that default-rule-path is not put in front of them a second time.
    std::vector<std::string> rules = engine::load_sensor_config(base).detect.rule_files;
    if (!exclusive_rules.empty()) {
        rules = {exclusive_rules};
    }
    rules.insert(rules.end(), extra_rules.begin(), extra_rules.end());
    Variables vars;
    for (const auto& r : rules) {
        vars["rules"].push_back(std::filesystem::absolute(r).string());
    }
    std::set<std::string> given;
    for (const auto& v : a.vars) {
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0) {
            std::fprintf(stderr, "picket-sensor: --profile-var %s: expected NAME=VALUE\n",
                         v.c_str());
            return kCliUsage;
        }
        const std::string name = v.substr(0, eq);
        std::string value = v.substr(eq + 1);
        if (used.count(name) == 0) {
            std::fprintf(stderr, "picket-sensor: --profile-var %s: %s has no ${%s}\n", v.c_str(),
                         a.ladder.c_str(), name.c_str());
            return kCliUsage;
        }
        if (given.insert(name).second) {
            vars[name].clear();  // the command line replaces ${rules} from -S / rule-files
        }
        std::error_code ec;
        if (!value.empty() && std::filesystem::exists(value, ec)) {
            value = std::filesystem::absolute(value).string();  // relative to here, as -S
        }
        vars[name].push_back(value);
    }
    if ((!exclusive_rules.empty() || !extra_rules.empty()) && used.count("rules") == 0) {
        std::fprintf(stderr, "picket-sensor: warning: %s has no ${rules}: -S / -s are not used\n",
                     a.ladder.c_str());
    }
    auto steps = plan(*ladder, std::move(base), vars);
    if (!steps.ok()) {
        std::fprintf(stderr, "picket-sensor: %s\n", std::string(steps.status().message()).c_str());
        return kCliUsage;
    }
    RunOptions options;
    options.repeat = a.repeat;
    options.progress = [](const std::string& line) {
        std::fprintf(stderr, "picket-sensor: profile: %s\n", line.c_str());
    };
    auto report = run(*steps, options);
    if (!report.ok()) {
        std::fprintf(stderr, "picket-sensor: profile: %s\n",
                     std::string(report.status().message()).c_str());
        return report.status().code() == absl::StatusCode::kFailedPrecondition ? kCliUsage : 1;
    }
    const Format format = a.format == "markdown" ? Format::kMarkdown
                          : a.format == "json"   ? Format::kJson
                                                 : Format::kText;
    std::fputs(format_report(*report, format).c_str(), stdout);
    for (const auto& s : *steps) {
        if (!s.skipped.empty()) {
            std::fprintf(stderr,
                         "picket-sensor: profile: steps were skipped: give their variables with "
                         "--profile-var NAME=VALUE (-S FILE / -s FILE set ${rules})\n");
            break;
        }
    }
    return 0;
}

}  // namespace picket::sensor::profile
