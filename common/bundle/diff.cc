// diff_bundles: rules by (gid, sid), YAML overlays by key path, files by sha256.
#include <yaml-cpp/yaml.h>

#include <map>

#include "common/bundle/bundle.h"
#include "common/bundle/internal.h"
#include "common/strings.h"

namespace picket::bundle {
namespace {

struct RuleSeen {
    std::string file;
    std::string text;  // the logical line, trimmed (keeps a leading '#')
    std::string body;
    bool enabled = true;
};

std::string_view trim(std::string_view s) {
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && space(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && space(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

// A sid seen twice keeps its first enabled occurrence (else its first), as the engine would load
// only one of them.
std::map<RuleId, RuleSeen> collect_rules(const Bundle& bundle) {
    std::map<RuleId, RuleSeen> out;
    for (const auto& f : bundle.files()) {
        if (!internal::is_rules_file(f.path())) {
            continue;
        }
        for (const auto& line : internal::split_logical_lines(f.content())) {
            auto rule = scan_rule(line.joined);
            if (!rule) {
                continue;
            }
            auto it = out.find(rule->id);
            if (it != out.end() && (it->second.enabled || !rule->enabled)) {
                continue;
            }
            out[rule->id] = {f.path(), std::string(trim(line.joined)), rule->body, rule->enabled};
        }
    }
    return out;
}

std::string emit(const YAML::Node& node) {
    YAML::Emitter e;
    e.SetMapFormat(YAML::Flow);
    e.SetSeqFormat(YAML::Flow);
    e << node;
    return e.c_str();
}

void flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>& out) {
    if (node.IsMap() && node.size() > 0) {
        for (const auto& kv : node) {
            std::string key = kv.first.IsScalar() ? kv.first.Scalar() : emit(kv.first);
            flatten(kv.second, prefix.empty() ? key : strings::cat(prefix, ".", key), out);
        }
        return;
    }
    if (prefix.empty() && node.IsNull()) {
        return;  // empty document
    }
    out[prefix] = emit(node);
}

absl::StatusOr<std::map<std::string, std::string>> flat_yaml(const Bundle& bundle,
                                                             std::string_view path) {
    std::map<std::string, std::string> out;
    for (const auto& f : bundle.files()) {
        if (f.path() != path) {
            continue;
        }
        try {
            flatten(YAML::Load(f.content()), "", out);
        } catch (const YAML::Exception& e) {
            return absl::InvalidArgumentError(strings::cat("bundle ", bundle.manifest().version(),
                                                           ": ", path, ":", e.mark.line + 1, ":",
                                                           e.mark.column + 1, ": ", e.msg));
        }
    }
    return out;
}

picket::v1::RuleDiff rule_diff(RuleId id, const RuleSeen* from, const RuleSeen* to) {
    picket::v1::RuleDiff d;
    d.set_gid(id.gid);
    d.set_sid(id.sid);
    d.set_file(to != nullptr ? to->file : from->file);
    if (from != nullptr) {
        d.set_old_text(from->text);
        d.set_old_enabled(from->enabled);
    }
    if (to != nullptr) {
        d.set_new_text(to->text);
        d.set_new_enabled(to->enabled);
    }
    return d;
}

}  // namespace

absl::StatusOr<picket::v1::BundleDiff> diff_bundles(const Bundle& from, const Bundle& to) {
    picket::v1::BundleDiff diff;
    diff.set_from_version(from.manifest().version());
    diff.set_to_version(to.manifest().version());

    auto a = collect_rules(from);
    auto b = collect_rules(to);
    for (const auto& [id, old_rule] : a) {
        auto it = b.find(id);
        if (it == b.end()) {
            *diff.add_rules_removed() = rule_diff(id, &old_rule, nullptr);
        } else if (it->second.body != old_rule.body || it->second.enabled != old_rule.enabled) {
            *diff.add_rules_changed() = rule_diff(id, &old_rule, &it->second);
        }
    }
    for (const auto& [id, new_rule] : b) {
        if (!a.count(id)) {
            *diff.add_rules_added() = rule_diff(id, nullptr, &new_rule);
        }
    }

    for (std::string_view file : {kConfigFile, kTuningFile}) {
        auto old_keys = flat_yaml(from, file);
        if (!old_keys.ok()) {
            return old_keys.status();
        }
        auto new_keys = flat_yaml(to, file);
        if (!new_keys.ok()) {
            return new_keys.status();
        }
        auto add = [&](const std::string& key, picket::v1::ChangeKind kind,
                       const std::string* old_value, const std::string* new_value) {
            auto* c = diff.add_config_changes();
            c->set_file(std::string(file));
            c->set_key(key);
            c->set_kind(kind);
            c->set_old_value(old_value ? *old_value : "");
            c->set_new_value(new_value ? *new_value : "");
        };
        // Walk both sorted maps together so the output is sorted by key.
        auto i = old_keys->begin();
        auto j = new_keys->begin();
        while (i != old_keys->end() || j != new_keys->end()) {
            if (j == new_keys->end() || (i != old_keys->end() && i->first < j->first)) {
                add(i->first, picket::v1::CHANGE_KIND_REMOVED, &i->second, nullptr);
                ++i;
            } else if (i == old_keys->end() || j->first < i->first) {
                add(j->first, picket::v1::CHANGE_KIND_ADDED, nullptr, &j->second);
                ++j;
            } else {
                if (i->second != j->second) {
                    add(i->first, picket::v1::CHANGE_KIND_CHANGED, &i->second, &j->second);
                }
                ++i;
                ++j;
            }
        }
    }

    std::map<std::string, std::string> old_files, new_files;
    for (const auto& e : from.manifest().files()) {
        old_files[e.path()] = e.sha256();
    }
    for (const auto& e : to.manifest().files()) {
        new_files[e.path()] = e.sha256();
    }
    std::map<std::string, picket::v1::FileChange> changes;
    for (const auto& [path, sha] : old_files) {
        auto it = new_files.find(path);
        if (it == new_files.end() || it->second != sha) {
            auto& c = changes[path];
            c.set_path(path);
            c.set_kind(it == new_files.end() ? picket::v1::CHANGE_KIND_REMOVED
                                             : picket::v1::CHANGE_KIND_CHANGED);
            c.set_old_sha256(sha);
            c.set_new_sha256(it == new_files.end() ? "" : it->second);
        }
    }
    for (const auto& [path, sha] : new_files) {
        if (!old_files.count(path)) {
            auto& c = changes[path];
            c.set_path(path);
            c.set_kind(picket::v1::CHANGE_KIND_ADDED);
            c.set_new_sha256(sha);
        }
    }
    for (auto& [path, c] : changes) {
        *diff.add_file_changes() = std::move(c);
    }
    return diff;
}

}  // namespace picket::bundle
