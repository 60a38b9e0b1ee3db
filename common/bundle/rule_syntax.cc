// config.yaml's rule-syntax: which language each rules file of a bundle is parsed as.
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "common/bundle/bundle.h"
#include "common/bundle/internal.h"
#include "common/strings.h"

namespace picket::bundle {

namespace {

constexpr std::string_view kRuleSyntaxKey = "rule-syntax";

std::optional<RuleSyntax> parse_syntax(std::string_view value) {
    if (value == "auto") {
        return RuleSyntax::kAuto;
    }
    if (value == "suricata") {
        return RuleSyntax::kSuricata;
    }
    if (value == "snort3") {
        return RuleSyntax::kSnort3;
    }
    return std::nullopt;
}

}  // namespace

std::string_view rule_syntax_name(RuleSyntax syntax) {
    switch (syntax) {
        case RuleSyntax::kSuricata:
            return "suricata";
        case RuleSyntax::kSnort3:
            return "snort3";
        case RuleSyntax::kAuto:
            break;
    }
    return "auto";
}

absl::StatusOr<std::map<std::string, RuleSyntax>> rule_syntax_by_file(const Bundle& bundle) {
    std::map<std::string, RuleSyntax> out;
    const std::string* config = nullptr;
    for (const auto& f : bundle.files()) {
        if (internal::is_rules_file(f.path())) {
            out[f.path()] = RuleSyntax::kAuto;
        } else if (f.path() == kConfigFile) {
            config = &f.content();
        }
    }
    if (config == nullptr) {
        return out;
    }
    YAML::Node node;
    try {
        YAML::Node root = YAML::Load(*config);
        if (!root || !root.IsMap()) {
            return out;  // check_content reports a config.yaml that is not a map
        }
        node = root[std::string(kRuleSyntaxKey)];
    } catch (const YAML::Exception& e) {
        return absl::InvalidArgumentError(
            strings::cat("config.yaml:", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
    }
    if (!node || node.IsNull()) {
        return out;
    }
    const std::string where = strings::cat(kConfigFile, ": ", kRuleSyntaxKey, ": ");
    if (!node.IsMap()) {
        return absl::InvalidArgumentError(
            strings::cat(where,
                         "must be a map of rules file or directory (ending in '/') to snort3, "
                         "suricata or auto"));
    }
    std::vector<std::string> problems;
    std::map<std::string, RuleSyntax> files;  // exact keys
    std::map<std::string, RuleSyntax> dirs;   // keys ending in '/'
    for (const auto& kv : node) {
        if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
            problems.push_back(strings::cat(where, "every key and value must be a single string"));
            continue;
        }
        const std::string& key = kv.first.Scalar();
        const std::string& value = kv.second.Scalar();
        auto syntax = parse_syntax(value);
        if (!syntax) {
            problems.push_back(strings::cat(where, "\"", key, "\": unknown value '", value,
                                            "' (expected snort3, suricata or auto)"));
            continue;
        }
        if (key.ends_with('/')) {
            bool any = false;
            for (const auto& [path, unused] : out) {
                any = any || path.starts_with(key);
            }
            if (!any) {
                problems.push_back(
                    strings::cat(where, "\"", key, "\": no rule file under it in the bundle"));
                continue;
            }
            dirs[key] = *syntax;
        } else {
            if (!out.count(key)) {
                problems.push_back(
                    strings::cat(where, "\"", key, "\": no such rule file in the bundle"));
                continue;
            }
            files[key] = *syntax;
        }
    }
    if (!problems.empty()) {
        return absl::InvalidArgumentError(strings::join(problems, "\n"));
    }
    for (auto& [path, syntax] : out) {
        if (auto it = files.find(path); it != files.end()) {
            syntax = it->second;
            continue;
        }
        size_t longest = 0;
        for (const auto& [dir, s] : dirs) {
            if (path.starts_with(dir) && dir.size() > longest) {
                longest = dir.size();
                syntax = s;
            }
        }
    }
    return out;
}

}  // namespace picket::bundle
