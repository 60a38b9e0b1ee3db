// The rules update: every source's rules files merged (a sid in two sources: the higher rev
// wins), suricata-update's policy applied, every enabled rule parsed by the sensor's own parser,
// and the next bundle built on the newest one (its config, ACL, tuning and rules/local/ kept).
#include <algorithm>
#include <set>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "common/bundle/bundle.h"
#include "common/strings.h"
#include "manager/rules/rules.h"
#include "manager/status.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"

namespace picket::rules {
namespace {

using strings::cat;
using strings::trim;
namespace pb = picket::v1;

constexpr std::string_view kLocalRulesDir = "rules/local/";
constexpr std::string_view kTuningFile = "tuning.yaml";
constexpr std::string_view kPolicyDir = "policy/";  // the update's policy files, for the record
constexpr size_t kMaxUnsupportedListed = 100;
constexpr uint32_t kMaxJoinedLines = 200;  // a rule spanning more lines is not a rule

// One logical line of a rules file: a rule (possibly joined from several physical lines) or
// anything else, kept verbatim.
struct Item {
    uint32_t first_line = 0;
    std::string original;  // the physical lines, '\n'-joined, as in the file
    int rule = -1;         // index into the update's rules, -1 for a non-rule line
};

struct FileModel {
    size_t source = 0;
    std::string group;  // basename
    std::string path;   // bundle path rules/SOURCE/GROUP
    std::vector<Item> items;
};

struct RuleState {
    RuleEntry entry;
    std::string original_text;  // entry.text before the policy
    bool original_enabled = true;
    bool removed = false;  // lost the merge to another source
};

// Parenthesis depth after `s`, outside double quotes (backslash escapes honoured).
int paren_depth(std::string_view s, int depth) {
    bool quoted = false;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '\\') {
            ++i;
        } else if (c == '"') {
            quoted = !quoted;
        } else if (!quoted && c == '(') {
            ++depth;
        } else if (!quoted && c == ')') {
            --depth;
        }
    }
    return depth;
}

// Splits a rules file into items: backslash continuations joined, and a live rule whose
// options span lines without '\' (Snort 3's style) joined up to the ')' closing them.
void split_items(std::string_view text, const SourceFiles& source, FileModel& file,
                 std::vector<RuleState>& rules) {
    std::vector<std::string_view> lines = strings::split(text, '\n');
    size_t i = 0;
    while (i < lines.size()) {
        size_t first = i;
        std::string joined;
        std::string original(lines[i]);
        std::string_view cur = trim(lines[i]);
        // Backslash continuation.
        while (cur.ends_with('\\') && i + 1 < lines.size() && i - first < kMaxJoinedLines) {
            joined.append(cur.substr(0, cur.size() - 1));
            ++i;
            original += '\n';
            original.append(lines[i]);
            cur = trim(lines[i]);
        }
        joined.append(cur);
        std::optional<bundle::ScannedRule> rule = bundle::scan_rule(joined);
        if (!rule && !joined.starts_with('#') && paren_depth(joined, 0) > 0) {
            // A live rule whose options continue on the next lines.
            std::string more = joined;
            size_t j = i;
            int depth = paren_depth(joined, 0);
            while (depth > 0 && j + 1 < lines.size() && j - first < kMaxJoinedLines) {
                ++j;
                std::string_view next = trim(lines[j]);
                more += ' ';
                more.append(next);
                depth = paren_depth(next, depth);
            }
            if (auto r = bundle::scan_rule(more)) {
                for (size_t k = i + 1; k <= j; ++k) {
                    original += '\n';
                    original.append(lines[k]);
                }
                i = j;
                rule = std::move(r);
            }
        }
        Item item;
        item.first_line = static_cast<uint32_t>(first + 1);
        item.original = std::move(original);
        if (rule) {
            RuleState st;
            st.entry.source = source.name;
            st.entry.group = file.group;
            st.entry.line = item.first_line;
            st.entry.gid = rule->id.gid;
            st.entry.sid = rule->id.sid;
            st.entry.rev = rule->rev;
            st.entry.enabled = rule->enabled;
            st.entry.text = rule->body;
            st.original_text = rule->body;
            st.original_enabled = rule->enabled;
            item.rule = static_cast<int>(rules.size());
            rules.push_back(std::move(st));
        }
        file.items.push_back(std::move(item));
        ++i;
    }
}

bool is_rules_path(std::string_view path) {
    return path.starts_with("rules/") && path.ends_with(".rules");
}

absl::Status parse_policy(const std::map<std::string, std::string>& files, Policy* policy) {
    std::string problems;
    for (const auto& [name, text] : files) {
        if (name == kTuningFile) {
            if (auto t = bundle::parse_tuning(text); !t.ok()) {
                problems += cat(problems.empty() ? "" : "\n", t.status().message());
            }
            continue;
        }
        std::optional<PolicyKind> kind = policy_kind(name);
        if (!kind) {
            problems += cat(problems.empty() ? "" : "\n", name,
                            ": not a policy file (enable.conf, disable.conf, drop.conf, "
                            "modify.conf or tuning.yaml)");
            continue;
        }
        if (absl::Status st = parse_policy_file(*kind, text, policy); !st.ok()) {
            problems += cat(problems.empty() ? "" : "\n", st.message());
        }
    }
    return problems.empty() ? absl::OkStatus() : absl::InvalidArgumentError(problems);
}

// The same files (path and content) in both bundles.
bool same_files(const pb::Bundle& a, const pb::Bundle& b) {
    if (a.manifest().files_size() != b.manifest().files_size()) {
        return false;
    }
    for (int i = 0; i < a.manifest().files_size(); ++i) {
        const auto& x = a.manifest().files(i);
        const auto& y = b.manifest().files(i);
        if (x.path() != y.path() || x.sha256() != y.sha256()) {
            return false;
        }
    }
    return true;
}

// config.yaml's vars.address-groups / port-groups (the keys the sensor's agent overlays).
absl::Status bundle_vars(const pb::Bundle& b, std::map<std::string, std::string>* address,
                         std::map<std::string, std::string>* port) {
    for (const auto& f : b.files()) {
        if (f.path() != bundle::kConfigFile) {
            continue;
        }
        YAML::Node root;
        try {
            root = YAML::Load(f.content());
        } catch (const YAML::Exception& e) {
            return absl::InvalidArgumentError(cat("config.yaml: ", e.what()));
        }
        if (!root || !root.IsMap() || !root["vars"] || !root["vars"].IsMap()) {
            return absl::OkStatus();
        }
        for (const char* group : {"address-groups", "port-groups"}) {
            const YAML::Node g = root["vars"][group];
            if (!g || !g.IsMap()) {
                continue;
            }
            auto* target = std::string_view(group) == "address-groups" ? address : port;
            for (const auto& kv : g) {
                if (kv.second.IsScalar()) {
                    (*target)[kv.first.Scalar()] = kv.second.Scalar();
                }
            }
        }
    }
    return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RuleCheck> check_rules(const pb::Bundle& b, size_t max_listed) {
    namespace detect = picket::sensor::detect;
    // The variables the sensors will have: Suricata's defaults with the bundle's config.yaml
    // vars over them (a sensor's own sensor.yaml may set others: documented).
    std::map<std::string, std::string> address_vars, port_vars;
    RETURN_IF_ERROR(bundle_vars(b, &address_vars, &port_vars));
    const detect::VarTable vars = detect::VarTable::with_overrides(address_vars, port_vars);
    auto flowbits = std::make_shared<detect::FlowbitRegistry>();
    detect::ParseEnv env;
    env.vars = &vars;
    env.flowbits = flowbits.get();
    ASSIGN_OR_RETURN(auto syntax_by_file, bundle::rule_syntax_by_file(b));
    // The rules as the sensors load them: tuning.yaml applied.
    ASSIGN_OR_RETURN(bundle::TuningResult effective, bundle::effective_rules(b));
    detect::RuleLoader loader(env);
    for (const auto& [path, text] : effective.rules) {
        auto it = syntax_by_file.find(path);
        bundle::RuleSyntax syntax =
            it == syntax_by_file.end() ? bundle::RuleSyntax::kAuto : it->second;
        loader.add_text(text, path,
                        syntax == bundle::RuleSyntax::kSnort3 ? detect::ParseEnv::Syntax::kSnort3
                        : syntax == bundle::RuleSyntax::kSuricata
                            ? detect::ParseEnv::Syntax::kSuricata
                            : detect::ParseEnv::Syntax::kAuto);
    }
    detect::LoadedRules loaded = loader.finish();
    RuleCheck out;
    out.enabled = loaded.summary.rules_seen;
    out.loaded = loaded.summary.loaded;
    for (const detect::RuleDiagnostic& d : loaded.summary.diagnostics) {
        if (d.category == "duplicate sid") {
            continue;
        }
        ++out.unsupported;
        if (out.problems.size() < max_listed) {
            out.problems.push_back(d.to_string());
        }
    }
    return out;
}

absl::Status check_policy_files(const std::map<std::string, std::string>& files) {
    Policy policy;
    return parse_policy(files, &policy);
}

absl::StatusOr<UpdateOutput> build_update(const UpdateInput& input) {
    if (input.sources.empty()) {
        return absl::FailedPreconditionError(
            "no enabled rule source (picketctl rules source add NAME URL|PATH)");
    }
    Policy policy;
    RETURN_IF_ERROR(parse_policy(input.policy_files, &policy));

    UpdateOutput out;
    std::vector<FileModel> files;
    std::vector<RuleState> rules;
    std::string classification, reference;
    for (size_t si = 0; si < input.sources.size(); ++si) {
        const SourceFiles& src = input.sources[si];
        SourceCounts counts;
        counts.name = src.name;
        size_t found = 0;  // rules (enabled or not) in this source's files
        for (const auto& [name, text] : src.files) {
            if (name == "classification.config") {
                classification +=
                    cat("# from source ", src.name, "\n", text, text.ends_with('\n') ? "" : "\n");
                continue;
            }
            if (name == "reference.config") {
                reference +=
                    cat("# from source ", src.name, "\n", text, text.ends_with('\n') ? "" : "\n");
                continue;
            }
            if (!name.ends_with(".rules")) {
                continue;  // threshold.config: upstream examples, all commented out
            }
            FileModel f;
            f.source = si;
            f.group = name;
            f.path = cat("rules/", src.name, "/", name);
            const size_t before = rules.size();
            split_items(text, src, f, rules);
            found += rules.size() - before;
            files.push_back(std::move(f));
            ++counts.files;
        }
        if (counts.files == 0) {
            return absl::InvalidArgumentError(cat("source ", src.name, ": no .rules file"));
        }
        if (found == 0) {
            std::string first;
            for (const auto& [name, text] : src.files) {
                if (name.ends_with(".rules")) {
                    first = name;
                    break;
                }
            }
            // An HTML error page or a renamed file answered with 200: storing it would deploy
            // a bundle without this source's rules.
            return absl::InvalidArgumentError(cat("source ", src.name,
                                                  ": no rule in its .rules files (", first,
                                                  ", ...: not a rules file?)"));
        }
        out.sources.push_back(counts);
    }
    // Merge: a (gid, sid) in several sources is kept once, the higher rev (the first source
    // in name order on a tie). Duplicates within one source are left to the sensor's loader.
    std::map<std::pair<uint32_t, uint32_t>, size_t> owner;
    for (size_t r = 0; r < rules.size(); ++r) {
        auto key = std::make_pair(rules[r].entry.gid, rules[r].entry.sid);
        auto [it, fresh] = owner.emplace(key, r);
        if (fresh) {
            continue;
        }
        RuleState& kept = rules[it->second];
        RuleState& other = rules[r];
        if (kept.entry.source == other.entry.source) {
            continue;
        }
        RuleState& winner = other.entry.rev > kept.entry.rev ? other : kept;
        RuleState& loser = &winner == &other ? kept : other;
        loser.removed = true;
        out.warnings.push_back(cat(kept.entry.gid, ":", kept.entry.sid, ": in ", kept.entry.source,
                                   " (rev ", kept.entry.rev, ") and ", other.entry.source, " (rev ",
                                   other.entry.rev, "): ", winner.entry.source, " kept"));
        it->second = &winner == &other ? r : it->second;
    }

    // Policy over the rules that stay.
    std::vector<RuleEntry> entries;
    std::vector<size_t> index;
    for (size_t r = 0; r < rules.size(); ++r) {
        if (!rules[r].removed) {
            entries.push_back(rules[r].entry);
            index.push_back(r);
        }
    }
    out.policy = apply_policy(policy, &entries);
    for (size_t k = 0; k < entries.size(); ++k) {
        rules[index[k]].entry = std::move(entries[k]);
    }
    for (const std::string& w : out.policy.warnings) {
        out.warnings.push_back(w);
    }

    // Render the rules files: unchanged rules and other lines byte-identical.
    pb::Bundle& b = out.bundle;
    std::map<std::string, std::string> new_files;
    for (const FileModel& f : files) {
        std::string text;
        for (const Item& it : f.items) {
            if (it.rule < 0) {
                text += it.original;
                text += '\n';
                continue;
            }
            const RuleState& st = rules[static_cast<size_t>(it.rule)];
            if (st.removed) {
                continue;
            }
            SourceCounts& counts = out.sources[f.source];
            ++counts.rules;
            ++out.rules;
            if (st.entry.enabled) {
                ++counts.rules_enabled;
                ++out.rules_enabled;
            }
            if (st.entry.text == st.original_text && st.entry.enabled == st.original_enabled) {
                text += it.original;
            } else {
                text += st.entry.enabled ? st.entry.text : "# " + st.entry.text;
            }
            text += '\n';
        }
        new_files[f.path] = std::move(text);
    }
    if (!classification.empty()) {
        new_files["classification.config"] = classification;
    }
    if (!reference.empty()) {
        new_files["reference.config"] = reference;
    }
    for (const auto& [name, text] : input.policy_files) {
        if (name == kTuningFile) {
            new_files[std::string(kTuningFile)] = text;  // the sensors apply it
        } else {
            // The policy that produced this version travels with it (the sensors ignore it).
            new_files[cat(kPolicyDir, name)] = text;
        }
    }
    // The newest bundle's other files stay: its config, ACL, threshold.config, tuning (unless
    // the policy has one) and the site's own rules under rules/local/.
    if (input.previous != nullptr) {
        for (const auto& f : input.previous->files()) {
            const std::string& p = f.path();
            if ((is_rules_path(p) && !p.starts_with(kLocalRulesDir)) || p.starts_with(kPolicyDir)) {
                continue;
            }
            if (new_files.contains(p)) {
                continue;
            }
            new_files[p] = f.content();
        }
    }
    pb::Manifest* m = b.mutable_manifest();
    m->set_name(input.previous != nullptr ? input.previous->manifest().name() : input.bundle_name);
    m->set_author(input.author);
    m->set_message(input.message);
    for (auto& [path, content] : new_files) {
        pb::BundleFile* bf = b.add_files();
        bf->set_path(path);
        bf->set_content(std::move(content));
    }
    bundle::update_manifest_files(b);
    bundle::VerifyOptions vo;
    vo.require_version = false;
    if (absl::Status st = bundle::verify_bundle(b, vo); !st.ok()) {
        return absl::Status(st.code(), cat("the updated bundle is not valid: ", st.message()));
    }
    if (absl::Status st = bundle::check_content(b); !st.ok()) {
        return absl::Status(st.code(), cat("the updated bundle is not valid: ", st.message()));
    }

    // Validate every enabled rule with the sensor's parser, as the sensors will load them.
    ASSIGN_OR_RETURN(RuleCheck check, check_rules(b, kMaxUnsupportedListed));
    out.unsupported = check.unsupported;
    out.unsupported_rules = std::move(check.problems);

    if (input.previous != nullptr) {
        out.changed = !same_files(*input.previous, b);
        if (out.changed) {
            ASSIGN_OR_RETURN(out.diff, bundle::diff_bundles(*input.previous, b));
        }
    }
    return out;
}

}  // namespace picket::rules
