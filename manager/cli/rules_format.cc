// picketctl's output of the rules commands: sources, policy files, an update's report with its
// per-sid diff, and the update history.
#include <map>
#include <string>

#include "manager/cli/picketctl.h"

namespace picket::manager::cli {
namespace {

namespace v1 = picket::v1;
using json = nlohmann::json;

std::string or_dash(const std::string& s) {
    return s.empty() ? "-" : s;
}

std::string short_hash(const std::string& s) {
    return s.empty() ? "-" : s.substr(0, 12);
}

// The rule text after its action word ("alert tcp ..." -> "tcp ...").
std::string_view after_action(std::string_view text) {
    size_t sp = text.find(' ');
    return sp == std::string_view::npos ? std::string_view() : text.substr(sp);
}

std::string id_of(const v1::RuleDiff& r) {
    return std::to_string(r.gid()) + ":" + std::to_string(r.sid());
}

json source_result_json(const v1::RuleSourceResult& r) {
    return json{{"name", r.name()},
                {"sha256", r.sha256()},
                {"etag", r.etag()},
                {"not_modified", r.not_modified()},
                {"files", r.files()},
                {"rules", r.rules()},
                {"rules_enabled", r.rules_enabled()}};
}

// fn(rule diff, added, removed) for every rule of the diff: added, then removed, then changed.
template <typename Fn>
void each_rule_change(const v1::BundleDiff& diff, Fn&& fn) {
    for (const auto& d : diff.rules_added()) {
        fn(d, true, false);
    }
    for (const auto& d : diff.rules_removed()) {
        fn(d, false, true);
    }
    for (const auto& d : diff.rules_changed()) {
        fn(d, false, false);
    }
}

}  // namespace

std::string_view rule_change_kind(const v1::RuleDiff& diff, bool added, bool removed) {
    if (added) {
        return "added";
    }
    if (removed) {
        return "removed";
    }
    if (diff.old_enabled() != diff.new_enabled()) {
        return diff.new_enabled() ? "enabled" : "disabled";
    }
    std::string_view o = diff.old_text();
    std::string_view n = diff.new_text();
    if (o != n && after_action(o) == after_action(n) && !after_action(o).empty()) {
        return "action";
    }
    return "modified";
}

json rule_source_json(const v1::RuleSource& s) {
    json headers = json::array();
    for (const auto& h : s.headers()) {
        // The value may be a secret (an API key): only the header's name is shown.
        headers.push_back(h.substr(0, h.find(':')));
    }
    return json{
        {"name", s.name()},
        {"location", s.location()},
        {"headers", headers},
        {"checksum_url", s.checksum_url()},
        {"enabled", s.enabled()},
        {"etag", s.etag()},
        {"last_modified", s.last_modified()},
        {"sha256", s.sha256()},
        {"fetched_at", s.fetched_at() == 0 ? json(nullptr) : json(format_time(s.fetched_at()))},
        {"rules", s.rules()},
        {"last_error", s.last_error()}};
}

json rule_sources_json(const v1::ListRuleSourcesResponse& r) {
    json out = json::array();
    for (const auto& s : r.sources()) {
        out.push_back(rule_source_json(s));
    }
    return json{{"sources", out}};
}

std::string rule_sources_text(const v1::ListRuleSourcesResponse& r) {
    if (r.sources().empty()) {
        return "no rule sources (picketctl rules source add NAME URL|PATH)\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : r.sources()) {
        rows.push_back({s.name(), s.enabled() ? "yes" : "no", s.location(),
                        format_time(s.fetched_at()), std::to_string(s.rules()),
                        short_hash(s.sha256()), or_dash(s.last_error())});
    }
    return render_table({"NAME", "ENABLED", "LOCATION", "FETCHED", "RULES", "SHA256", "ERROR"},
                        rows);
}

json rule_policy_json(const v1::GetRulePolicyResponse& r) {
    json files = json::array();
    for (const auto& f : r.files()) {
        files.push_back(json{{"name", f.name()},
                             {"content", f.content()},
                             {"updated_at", format_time(f.updated_at())}});
    }
    return json{{"files", files}};
}

std::string rule_policy_text(const v1::GetRulePolicyResponse& r) {
    if (r.files().empty()) {
        return "no policy files (picketctl rules policy put FILE...)\n";
    }
    std::string out;
    for (const auto& f : r.files()) {
        out += "== " + f.name() + " (" + format_time(f.updated_at()) + ") ==\n" + f.content();
        if (!f.content().empty() && f.content().back() != '\n') {
            out += '\n';
        }
    }
    return out;
}

json rules_update_json(const v1::UpdateRulesResponse& r) {
    json sources = json::array();
    for (const auto& s : r.sources()) {
        sources.push_back(source_result_json(s));
    }
    std::map<std::string, int> counts{{"added", 0},   {"removed", 0},  {"modified", 0},
                                      {"enabled", 0}, {"disabled", 0}, {"action", 0}};
    json diff = json::array();
    auto add = [&](const v1::RuleDiff& d, bool added, bool removed) {
        std::string kind(rule_change_kind(d, added, removed));
        ++counts[kind];
        diff.push_back(json{{"gid", d.gid()},
                            {"sid", d.sid()},
                            {"change", kind},
                            {"file", d.file()},
                            {"old_text", d.old_text()},
                            {"new_text", d.new_text()}});
    };
    each_rule_change(r.diff(), add);
    json out{{"version", r.version() == 0 ? json(nullptr) : json(r.version())},
             {"sha256", r.sha256()},
             {"message", r.message()},
             {"update_id", r.update_id()},
             {"sources", sources},
             {"rules", r.rules()},
             {"rules_enabled", r.rules_enabled()},
             {"policy", json{{"enabled", r.policy_enabled()},
                             {"disabled", r.policy_disabled()},
                             {"dropped", r.policy_dropped()},
                             {"modified", r.policy_modified()}}},
             {"unsupported", r.unsupported()},
             {"unsupported_rules", r.unsupported_rules()},
             {"warnings", r.warnings()},
             {"changes", counts},
             {"diff", diff}};
    if (r.has_deployment()) {
        out["deployment"] = deployment_json(r.deployment());
    }
    return out;
}

std::string rules_update_text(const v1::UpdateRulesResponse& r) {
    std::string out;
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : r.sources()) {
        rows.push_back({s.name(), s.not_modified() ? "unchanged" : "fetched",
                        short_hash(s.sha256()), std::to_string(s.files()),
                        std::to_string(s.rules()), std::to_string(s.rules_enabled())});
    }
    out += render_table({"SOURCE", "FETCH", "SHA256", "FILES", "RULES", "ENABLED"}, rows);
    out += "rules: " + std::to_string(r.rules()) + " (" + std::to_string(r.rules_enabled()) +
           " enabled); policy: " + std::to_string(r.policy_enabled()) + " enabled, " +
           std::to_string(r.policy_disabled()) + " disabled, " +
           std::to_string(r.policy_dropped()) + " dropped, " + std::to_string(r.policy_modified()) +
           " modified\n";
    if (r.unsupported() > 0) {
        out += "unsupported by the sensor's parser: " + std::to_string(r.unsupported()) + "\n";
        for (const auto& u : r.unsupported_rules()) {
            out += "  " + u + "\n";
        }
    }
    for (const auto& w : r.warnings()) {
        out += "warning: " + w + "\n";
    }
    std::map<std::string, std::vector<std::string>> by_kind;
    auto add = [&](const v1::RuleDiff& d, bool added, bool removed) {
        by_kind[std::string(rule_change_kind(d, added, removed))].push_back(id_of(d));
    };
    each_rule_change(r.diff(), add);
    if (r.version() != 0 && r.diff().from_version() == 0) {
        out += "changes: none to show (the first bundle: nothing to compare with)\n";
    } else if (r.version() != 0) {
        std::string summary;
        for (const char* k : {"added", "removed", "modified", "enabled", "disabled", "action"}) {
            size_t n = by_kind.contains(k) ? by_kind[k].size() : 0;
            summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " +
                       (std::string(k) == "action" ? "action changed" : k);
        }
        out += "changes: " + summary + "\n";
        for (const auto& [kind, ids] : by_kind) {
            std::string line = "  " + kind + ":";
            size_t shown = 0;
            for (const auto& id : ids) {
                if (++shown > 20) {
                    line += " ... (" + std::to_string(ids.size()) + " in all)";
                    break;
                }
                line += " " + id;
            }
            out += line + "\n";
        }
    }
    out += r.message() + "\n";
    if (r.has_deployment()) {
        out += deployment_text(r.deployment());
    }
    return out;
}

json rule_updates_json(const v1::RuleUpdateHistoryResponse& r) {
    json updates = json::array();
    for (const auto& u : r.updates()) {
        json sources = json::array();
        for (const auto& s : u.sources()) {
            sources.push_back(source_result_json(s));
        }
        updates.push_back(json{{"id", u.id()},
                               {"started_at", format_time(u.started_at())},
                               {"finished_at", format_time(u.finished_at())},
                               {"trigger", u.trigger()},
                               {"result", u.result()},
                               {"message", u.message()},
                               {"version", u.version() == 0 ? json(nullptr) : json(u.version())},
                               {"sources", sources}});
    }
    return json{{"updates", updates}};
}

std::string rule_updates_text(const v1::RuleUpdateHistoryResponse& r) {
    if (r.updates().empty()) {
        return "no rules updates yet (picketctl rules update)\n";
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& u : r.updates()) {
        rows.push_back({std::to_string(u.id()), format_time(u.started_at()), u.trigger(),
                        u.result(), u.version() == 0 ? "-" : std::to_string(u.version()),
                        u.message().substr(0, u.message().find('\n'))});
    }
    return render_table({"ID", "STARTED", "TRIGGER", "RESULT", "VERSION", "MESSAGE"}, rows);
}

}  // namespace picket::manager::cli
