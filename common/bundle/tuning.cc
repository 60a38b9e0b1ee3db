// Rule scanning and the tuning overlay (tuning.yaml): enable / disable / modify by sid on the
// rule text, suppress / threshold entries rendered as threshold.config lines.
#include "common/bundle/bundle.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <memory>
#include <set>

#include "common/bundle/internal.h"
#include "common/strings.h"

namespace picket::bundle {

namespace {

// Rule actions of both languages: Suricata's (pass, drop, reject*, alert; sdrop and log from
// Snort 2 rule sets) and Snort 3's (block, react, rewrite besides the shared ones).
bool is_action(std::string_view word) {
    static constexpr std::string_view kActions[] = {
        "alert",      "pass",  "drop", "reject", "rejectsrc", "rejectdst",
        "rejectboth", "sdrop", "log",  "block",  "react",     "rewrite"};
    return std::find(std::begin(kActions), std::end(kActions), word) != std::end(kActions);
}

// The first word of a live (not commented-out) rule line is an action and a space follows.
bool starts_live_rule(std::string_view line) {
    line = strings::trim(line);
    size_t end = 0;
    while (end < line.size() && !strings::is_space(line[end]) && line[end] != '(') {
        ++end;
    }
    return end < line.size() && is_action(line.substr(0, end));
}

// Parenthesis depth at the end of `text` and whether it ends inside double quotes, starting
// from (depth, quote); a backslash escapes the next character, as in both rule languages.
void paren_state(std::string_view text, int& depth, bool& quote) {
    for (size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\\') {
            ++i;
        } else if (c == '"') {
            quote = !quote;
        } else if (!quote && c == '(') {
            ++depth;
        } else if (!quote && c == ')' && depth > 0) {
            --depth;
        }
    }
}

// One physical line: [begin, next) in the text, its content without terminator and '\r'.
struct PhysicalLine {
    std::string_view content;
    size_t next = 0;
};

PhysicalLine physical_line(std::string_view text, size_t pos) {
    size_t nl = text.find('\n', pos);
    size_t content_end = nl == std::string_view::npos ? text.size() : nl;
    PhysicalLine line{text.substr(pos, content_end - pos),
                      nl == std::string_view::npos ? text.size() : nl + 1};
    if (!line.content.empty() && line.content.back() == '\r') {
        line.content.remove_suffix(1);
    }
    return line;
}

}  // namespace

namespace internal {

std::vector<LogicalLine> split_logical_lines(std::string_view text) {
    std::vector<LogicalLine> out;
    size_t pos = 0;
    uint32_t line_no = 0;
    while (pos < text.size()) {
        LogicalLine line;
        line.begin = pos;
        line.line_no = line_no + 1;
        for (;;) {
            PhysicalLine p = physical_line(text, pos);
            std::string_view content = p.content;
            ++line_no;
            pos = p.next;
            if (!content.empty() && content.back() == '\\' && pos < text.size()) {
                content.remove_suffix(1);
                line.joined.append(content);
                continue;
            }
            line.joined.append(content);
            break;
        }
        // A Snort 3 rule may span lines without '\': Snort reads it up to the ')' closing its
        // option list. A live rule whose '(' is still open takes the following lines up to that
        // ')' ('#' lines in between are comments and dropped; each line joins with one space).
        // No ')' before the next rule or the end of the file: the line stays alone, as the
        // sensor's loader reports such a rule on its own line.
        int depth = 0;
        bool quote = false;
        paren_state(line.joined, depth, quote);
        if (depth > 0 && line.joined.find('(') != std::string::npos &&
            starts_live_rule(line.joined)) {
            std::string joined = line.joined;
            size_t scan = pos;
            uint32_t scan_no = line_no;
            bool closed = false;
            while (scan < text.size() && !closed) {
                PhysicalLine p = physical_line(text, scan);
                std::string_view piece = strings::trim(p.content);
                if (starts_live_rule(piece)) {
                    break;
                }
                scan = p.next;
                ++scan_no;
                if (piece.empty() || piece.front() == '#') {
                    continue;
                }
                if (!piece.empty() && piece.back() == '\\') {
                    piece.remove_suffix(1);
                }
                joined.push_back(' ');
                joined.append(piece);
                paren_state(piece, depth, quote);
                closed = depth == 0;
            }
            if (closed) {
                line.joined = std::move(joined);
                pos = scan;
                line_no = scan_no;
            }
        }
        line.end = pos;
        out.push_back(std::move(line));
    }
    return out;
}

bool is_rules_file(std::string_view path) {
    return path.starts_with(kRulesDir) && path.ends_with(".rules") &&
           path.size() > kRulesDir.size() + 6;
}

}  // namespace internal

namespace {

using internal::LogicalLine;

using strings::is_space;
using strings::trim;

// A sid, gid, rev or count as rule options and tuning.yaml write it: optional spaces and
// double quotes around 1..10 digits.
std::optional<uint32_t> parse_u32(std::string_view s) {
    return strings::parse_u32(strings::unquote(s));
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return (x | 0x20) == (y | 0x20);
           });
}

}  // namespace

std::optional<ScannedRule> scan_rule(std::string_view line) {
    line = trim(line);
    ScannedRule rule;
    if (!line.empty() && line.front() == '#') {
        rule.enabled = false;
        while (!line.empty() && (line.front() == '#' || is_space(line.front()))) {
            line.remove_prefix(1);
        }
    }
    size_t word_end = 0;
    while (word_end < line.size() && !is_space(line[word_end])) {
        ++word_end;
    }
    if (word_end == line.size() || !is_action(line.substr(0, word_end))) {
        return std::nullopt;
    }
    size_t open = line.find('(', word_end);
    if (open == std::string_view::npos) {
        return std::nullopt;
    }
    bool have_sid = false;
    size_t j = open + 1;
    const size_t n = line.size();
    while (j < n) {
        while (j < n && is_space(line[j])) {
            ++j;
        }
        if (j >= n || line[j] == ')') {
            break;
        }
        size_t key_start = j;
        while (j < n && line[j] != ':' && line[j] != ';' && line[j] != ')') {
            ++j;
        }
        std::string_view key = trim(line.substr(key_start, j - key_start));
        if (j >= n || line[j] == ')') {
            break;
        }
        if (line[j] == ';') {
            ++j;
            continue;  // option without value ("nocase;")
        }
        size_t value_start = ++j;
        bool in_quote = false;
        while (j < n) {
            char c = line[j];
            if (c == '\\' && j + 1 < n) {
                j += 2;
                continue;
            }
            if (c == '"') {
                in_quote = !in_quote;
            } else if (c == ';' && !in_quote) {
                break;
            }
            ++j;
        }
        if (j >= n && in_quote) {
            // An unbalanced quote inside a value (pcre:"/^["']?post/Ri" in ET Open): Suricata
            // ends an option at the first unescaped ';' whatever the quotes, so do the same.
            for (j = value_start; j < n && line[j] != ';'; ++j) {
                if (line[j] == '\\' && j + 1 < n) {
                    ++j;
                }
            }
        }
        std::string_view value = line.substr(value_start, j - value_start);
        if (j >= n) {
            // Last option without ';': the value runs up to the closing parenthesis.
            value = trim(value);
            if (!value.empty() && value.back() == ')') {
                value.remove_suffix(1);
            }
        } else {
            ++j;
        }
        if (iequals(key, "sid")) {
            auto v = parse_u32(value);
            if (!v) {
                return std::nullopt;
            }
            rule.id.sid = *v;
            have_sid = true;
        } else if (iequals(key, "gid")) {
            auto v = parse_u32(value);
            if (!v) {
                return std::nullopt;
            }
            rule.id.gid = *v;
        } else if (iequals(key, "rev")) {
            rule.rev = parse_u32(value).value_or(0);
        }
    }
    if (!have_sid || rule.id.sid == 0) {
        return std::nullopt;
    }
    rule.body = std::string(line);
    return rule;
}

// ---------------------------------------------------------------------------------------
// tuning.yaml

namespace {

absl::Status yaml_error(const YAML::Mark& mark, std::string_view where, std::string_view why) {
    if (mark.is_null()) {
        return absl::InvalidArgumentError(strings::cat("tuning.yaml: ", where, ": ", why));
    }
    return absl::InvalidArgumentError(
        strings::cat("tuning.yaml:", mark.line + 1, ": ", where, ": ", why));
}

std::optional<RuleId> parse_rule_id(std::string_view s) {
    s = trim(s);
    RuleId id;
    size_t colon = s.find(':');
    if (colon != std::string_view::npos) {
        auto gid = parse_u32(s.substr(0, colon));
        if (!gid) {
            return std::nullopt;
        }
        id.gid = *gid;
        s = s.substr(colon + 1);
    }
    auto sid = parse_u32(s);
    if (!sid || *sid == 0) {
        return std::nullopt;
    }
    id.sid = *sid;
    return id;
}

absl::StatusOr<RuleId> id_from_scalar(const YAML::Node& node, const std::string& where) {
    if (!node.IsScalar()) {
        return yaml_error(node.Mark(), where, "a sid must be N or \"GID:SID\"");
    }
    auto id = parse_rule_id(node.Scalar());
    if (!id) {
        return yaml_error(node.Mark(), where,
                          strings::cat("'", node.Scalar(), "' is not a sid (N or GID:SID)"));
    }
    return *id;
}

// sid: N (or "G:N") plus optional gid: G.
absl::StatusOr<RuleId> id_from_entry(const YAML::Node& entry, const std::string& where) {
    YAML::Node sid = entry["sid"];
    if (!sid) {
        return yaml_error(entry.Mark(), where, "missing 'sid'");
    }
    auto id = id_from_scalar(sid, where);
    if (!id.ok()) {
        return id.status();
    }
    if (YAML::Node gid = entry["gid"]) {
        auto g = gid.IsScalar() ? parse_u32(gid.Scalar()) : std::nullopt;
        if (!g) {
            return yaml_error(gid.Mark(), where, "'gid' must be a number");
        }
        id->gid = *g;
    }
    return id;
}

absl::StatusOr<std::string> string_field(const YAML::Node& entry, const char* key,
                                         const std::string& where, bool required) {
    YAML::Node v = entry[key];
    if (!v) {
        if (required) {
            return yaml_error(entry.Mark(), where, strings::cat("missing '", key, "'"));
        }
        return std::string();
    }
    if (!v.IsScalar()) {
        return yaml_error(v.Mark(), where, strings::cat("'", key, "' must be a string"));
    }
    return v.Scalar();
}

absl::Status check_keys(const YAML::Node& entry, const std::string& where,
                        std::initializer_list<std::string_view> allowed) {
    for (const auto& kv : entry) {
        std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "?";
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
            return yaml_error(kv.first.Mark(), where,
                              strings::cat("unknown key '", key,
                                           "' (allowed: ", strings::join(allowed, ", "), ")"));
        }
    }
    return absl::OkStatus();
}

absl::Status parse_tuning_node(const YAML::Node& root, Tuning& out) {
    if (!root || root.IsNull()) {
        return absl::OkStatus();
    }
    if (!root.IsMap()) {
        return yaml_error(root.Mark(), "top level", "must be a map");
    }
    if (auto s =
            check_keys(root, "top level", {"enable", "disable", "modify", "suppress", "threshold"});
        !s.ok()) {
        return s;
    }
    auto sequence = [&](const char* key) -> absl::StatusOr<YAML::Node> {
        YAML::Node seq = root[key];
        if (seq && !seq.IsNull() && !seq.IsSequence()) {
            return yaml_error(seq.Mark(), key, "must be a list");
        }
        return seq;
    };
    for (auto [key, list] : {std::pair<const char*, std::vector<RuleId>*>{"enable", &out.enable},
                             {"disable", &out.disable}}) {
        auto seq = sequence(key);
        if (!seq.ok()) {
            return seq.status();
        }
        for (size_t i = 0; *seq && i < seq->size(); ++i) {
            auto id = id_from_scalar((*seq)[i], strings::cat(key, "[", i, "]"));
            if (!id.ok()) {
                return id.status();
            }
            list->push_back(*id);
        }
    }
    auto entries = [&](const char* key, std::initializer_list<std::string_view> allowed,
                       auto&& parse_one) -> absl::Status {
        auto seq = sequence(key);
        if (!seq.ok()) {
            return seq.status();
        }
        for (size_t i = 0; *seq && i < seq->size(); ++i) {
            std::string where = strings::cat(key, "[", i, "]");
            YAML::Node entry = (*seq)[i];
            if (!entry.IsMap()) {
                return yaml_error(entry.Mark(), where, "must be a map");
            }
            if (auto s = check_keys(entry, where, allowed); !s.ok()) {
                return s;
            }
            auto id = id_from_entry(entry, where);
            if (!id.ok()) {
                return id.status();
            }
            if (auto s = parse_one(entry, *id, where); !s.ok()) {
                return s;
            }
        }
        return absl::OkStatus();
    };
    auto s = entries("modify", {"sid", "gid", "from", "to"},
                     [&](const YAML::Node& e, RuleId id, const std::string& where) {
                         auto from = string_field(e, "from", where, true);
                         auto to = string_field(e, "to", where, true);
                         if (!from.ok() || !to.ok()) {
                             return from.ok() ? to.status() : from.status();
                         }
                         if (from->empty()) {
                             return yaml_error(e.Mark(), where, "'from' is empty");
                         }
                         out.modify.push_back({id, *from, *to});
                         return absl::OkStatus();
                     });
    if (!s.ok()) {
        return s;
    }
    s = entries(
        "suppress", {"sid", "gid", "track", "ip"},
        [&](const YAML::Node& e, RuleId id, const std::string& where) {
            auto track = string_field(e, "track", where, false);
            auto ip = string_field(e, "ip", where, false);
            if (!track.ok() || !ip.ok()) {
                return track.ok() ? ip.status() : track.status();
            }
            if (!track->empty() && *track != "by_src" && *track != "by_dst" &&
                *track != "by_either") {
                return yaml_error(
                    e.Mark(), where,
                    strings::cat("track '", *track, "' must be by_src, by_dst or by_either"));
            }
            if (track->empty() != ip->empty()) {
                return yaml_error(e.Mark(), where, "'track' and 'ip' go together");
            }
            if (ip->find_first_of(",\n\r#") != std::string::npos &&
                !(ip->front() == '[' && ip->back() == ']' &&
                  ip->find_first_of("\n\r#") == std::string::npos)) {
                return yaml_error(e.Mark(), where,
                                  strings::cat("ip '", *ip, "': a list must be written [a,b]"));
            }
            out.suppress.push_back({id, *track, *ip});
            return absl::OkStatus();
        });
    if (!s.ok()) {
        return s;
    }
    return entries("threshold", {"sid", "gid", "type", "track", "count", "seconds"},
                   [&](const YAML::Node& e, RuleId id, const std::string& where) {
                       auto type = string_field(e, "type", where, true);
                       auto track = string_field(e, "track", where, true);
                       auto count = string_field(e, "count", where, true);
                       auto seconds = string_field(e, "seconds", where, true);
                       for (const auto* f : {&type, &track, &count, &seconds}) {
                           if (!f->ok()) {
                               return f->status();
                           }
                       }
                       if (*type != "limit" && *type != "threshold" && *type != "both") {
                           return yaml_error(
                               e.Mark(), where,
                               strings::cat("type '", *type, "' must be limit, threshold or both"));
                       }
                       if (*track != "by_src" && *track != "by_dst" && *track != "by_rule" &&
                           *track != "by_both") {
                           return yaml_error(
                               e.Mark(), where,
                               strings::cat("track '", *track,
                                            "' must be by_src, by_dst, by_rule or by_both"));
                       }
                       auto c = parse_u32(*count);
                       auto sec = parse_u32(*seconds);
                       if (!c || *c == 0) {
                           return yaml_error(e.Mark(), where, "'count' must be a number > 0");
                       }
                       if (!sec || *sec == 0) {
                           return yaml_error(e.Mark(), where, "'seconds' must be a number > 0");
                       }
                       out.threshold.push_back({id, *type, *track, *c, *sec});
                       return absl::OkStatus();
                   });
}

// A compiled modify pattern.
struct Regex {
    pcre2_code* code = nullptr;
    pcre2_match_context* match = nullptr;
    ~Regex() {
        pcre2_match_context_free(match);
        pcre2_code_free(code);
    }
};

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    int n = pcre2_get_error_message(code, buf, sizeof buf);
    return n < 0 ? strings::cat("PCRE2 error ", code) : std::string(reinterpret_cast<char*>(buf));
}

absl::StatusOr<std::unique_ptr<Regex>> compile_regex(const std::string& pattern) {
    auto re = std::make_unique<Regex>();
    int err = 0;
    PCRE2_SIZE offset = 0;
    re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), 0, &err,
                             &offset, nullptr);
    if (re->code == nullptr) {
        return absl::InvalidArgumentError(strings::cat(pcre2_message(err), " at offset ", offset));
    }
    // Bounded backtracking: a pathological pattern fails instead of hanging the control thread.
    re->match = pcre2_match_context_create(nullptr);
    pcre2_set_match_limit(re->match, 1000000);
    pcre2_set_depth_limit(re->match, 10000);
    return re;
}

// Global substitution. Returns the number of replacements (0 = no match) or an error.
absl::StatusOr<int> substitute(const Regex& re, const std::string& subject,
                               const std::string& replacement, std::string* out) {
    PCRE2_SIZE len = subject.size() + replacement.size() + 64;
    for (int attempt = 0; attempt < 2; ++attempt) {
        out->assign(len, '\0');
        int rc =
            pcre2_substitute(re.code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(),
                             0, PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, nullptr,
                             re.match, reinterpret_cast<PCRE2_SPTR>(replacement.data()),
                             replacement.size(), reinterpret_cast<PCRE2_UCHAR*>(out->data()), &len);
        if (rc == PCRE2_ERROR_NOMEMORY) {
            continue;  // len now holds the size needed
        }
        if (rc < 0) {
            return absl::InvalidArgumentError(pcre2_message(rc));
        }
        out->resize(len);
        return rc;
    }
    return absl::InternalError("substitution output size changed between attempts");
}

// One logical line of one file and its (possibly tuned) state.
struct Entry {
    size_t file = 0;
    LogicalLine line;
    std::optional<ScannedRule> rule;
    bool changed = false;
};

std::string_view terminator(std::string_view original) {
    if (original.ends_with("\r\n")) {
        return "\r\n";
    }
    if (original.ends_with("\n")) {
        return "\n";
    }
    return "";
}

}  // namespace

absl::StatusOr<Tuning> parse_tuning(std::string_view yaml_text) {
    Tuning tuning;
    try {
        YAML::Node root = YAML::Load(std::string(yaml_text));
        if (auto s = parse_tuning_node(root, tuning); !s.ok()) {
            return s;
        }
    } catch (const YAML::Exception& e) {
        return absl::InvalidArgumentError(
            strings::cat("tuning.yaml:", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
    }
    return tuning;
}

TuningResult apply_tuning(const std::map<std::string, std::string>& rules_text_by_file,
                          const Tuning& tuning) {
    TuningResult result;
    TuningReport& report = result.report;
    std::vector<const std::string*> names;
    std::vector<std::string_view> texts;
    std::vector<Entry> entries;
    std::map<RuleId, std::vector<size_t>> index;
    for (const auto& [name, text] : rules_text_by_file) {
        size_t file = names.size();
        names.push_back(&name);
        texts.push_back(text);
        for (auto& line : internal::split_logical_lines(text)) {
            Entry e;
            e.file = file;
            e.rule = scan_rule(line.joined);
            e.line = std::move(line);
            if (e.rule) {
                index[e.rule->id].push_back(entries.size());
            }
            entries.push_back(std::move(e));
        }
    }
    auto where = [&](const Entry& e) { return strings::cat(*names[e.file], ":", e.line.line_no); };
    auto lookup = [&](RuleId id, const std::string& entry) -> const std::vector<size_t>* {
        auto it = index.find(id);
        if (it == index.end()) {
            // A retired sid (gone upstream) must not refuse the whole bundle: the entry is
            // ignored and said so.
            report.warnings.push_back(strings::cat(entry, ": sid ", id.to_string(),
                                                   " not found in the rules: ignored"));
            return nullptr;
        }
        return &it->second;
    };

    std::set<RuleId> disabled_ids(tuning.disable.begin(), tuning.disable.end());
    // enable[] then disable[]: switch every rule with the sid, warn where it already is so.
    auto switch_rules = [&](const std::vector<RuleId>& ids, const char* list, bool enable) {
        for (size_t i = 0; i < ids.size(); ++i) {
            RuleId id = ids[i];
            std::string entry = strings::cat(list, "[", i, "]");
            if (enable && disabled_ids.count(id)) {
                report.errors.push_back(
                    strings::cat(entry, ": sid ", id.to_string(), " is also in disable"));
                continue;
            }
            const char* state = enable ? "enabled" : "disabled";
            const auto* hits = lookup(id, entry);
            for (size_t k = 0; hits && k < hits->size(); ++k) {
                Entry& e = entries[(*hits)[k]];
                if (e.rule->enabled == enable) {
                    report.warnings.push_back(strings::cat(entry, ": sid ", id.to_string(),
                                                           " is already ", state, " (", where(e),
                                                           ")"));
                    continue;
                }
                e.rule->enabled = enable;
                e.changed = true;
                report.changes.push_back(
                    strings::cat(state, " ", id.to_string(), " (", where(e), ")"));
            }
        }
    };
    switch_rules(tuning.enable, "enable", true);
    switch_rules(tuning.disable, "disable", false);
    for (size_t i = 0; i < tuning.modify.size(); ++i) {
        const ModifyEntry& m = tuning.modify[i];
        std::string entry = strings::cat("modify[", i, "] (sid ", m.id.to_string(), ")");
        auto re = compile_regex(m.from);
        if (!re.ok()) {
            report.errors.push_back(strings::cat(entry, ": regex '", m.from,
                                                 "' does not compile: ", re.status().message()));
            continue;
        }
        const auto* hits = lookup(m.id, entry);
        for (size_t k = 0; hits && k < hits->size(); ++k) {
            Entry& e = entries[(*hits)[k]];
            std::string out;
            auto n = substitute(**re, e.rule->body, m.to, &out);
            if (!n.ok()) {
                report.errors.push_back(strings::cat(entry, ": regex '", m.from, "' on ", where(e),
                                                     ": ", n.status().message()));
                continue;
            }
            if (*n == 0) {
                report.errors.push_back(strings::cat(entry, ": regex '", m.from,
                                                     "' does not match the rule (", where(e), ")"));
                continue;
            }
            auto rescanned = scan_rule(out);
            if (!rescanned || !rescanned->enabled || rescanned->id != m.id ||
                out.find('\n') != std::string::npos) {
                report.errors.push_back(strings::cat(entry,
                                                     ": the result is no longer one rule with sid ",
                                                     m.id.to_string(), " (", where(e), "): ", out));
                continue;
            }
            if (rescanned->body == e.rule->body) {
                report.warnings.push_back(
                    strings::cat(entry, ": the replacement changes nothing (", where(e), ")"));
                continue;
            }
            e.rule->body = rescanned->body;
            e.rule->rev = rescanned->rev;
            e.changed = true;
            report.changes.push_back(
                strings::cat("modified ", m.id.to_string(), " (", where(e), ")"));
        }
    }

    for (size_t file = 0; file < names.size(); ++file) {
        result.rules[*names[file]];  // every input file appears, even empty ones
    }
    for (const Entry& e : entries) {
        std::string& out = result.rules[*names[e.file]];
        std::string_view original = texts[e.file].substr(e.line.begin, e.line.end - e.line.begin);
        if (!e.changed) {
            out.append(original);
            continue;
        }
        strings::append(out, e.rule->enabled ? "" : "# ", e.rule->body, terminator(original));
    }

    for (size_t i = 0; i < tuning.suppress.size(); ++i) {
        const SuppressEntry& s = tuning.suppress[i];
        if (!lookup(s.id, strings::cat("suppress[", i, "]"))) {
            continue;
        }
        strings::append(result.threshold_config, "suppress gen_id ", s.id.gid, ", sig_id ",
                        s.id.sid);
        if (!s.track.empty()) {
            strings::append(result.threshold_config, ", track ", s.track, ", ip ", s.ip);
        }
        result.threshold_config.push_back('\n');
        report.changes.push_back(strings::cat("suppress ", s.id.to_string()));
    }
    for (size_t i = 0; i < tuning.threshold.size(); ++i) {
        const ThresholdEntry& t = tuning.threshold[i];
        if (!lookup(t.id, strings::cat("threshold[", i, "]"))) {
            continue;
        }
        strings::append(result.threshold_config, "threshold gen_id ", t.id.gid, ", sig_id ",
                        t.id.sid, ", type ", t.type, ", track ", t.track, ", count ", t.count,
                        ", seconds ", t.seconds, "\n");
        report.changes.push_back(strings::cat("threshold ", t.id.to_string()));
    }
    return result;
}

absl::StatusOr<TuningResult> effective_rules(const Bundle& bundle) {
    std::map<std::string, std::string> rules;
    const std::string* tuning_text = nullptr;
    const std::string* threshold_text = nullptr;
    for (const auto& f : bundle.files()) {
        if (internal::is_rules_file(f.path())) {
            rules[f.path()] = f.content();
        } else if (f.path() == kTuningFile) {
            tuning_text = &f.content();
        } else if (f.path() == kThresholdFile) {
            threshold_text = &f.content();
        }
    }
    Tuning tuning;
    if (tuning_text != nullptr) {
        auto parsed = parse_tuning(*tuning_text);
        if (!parsed.ok()) {
            return parsed.status();
        }
        tuning = std::move(*parsed);
    }
    TuningResult result = apply_tuning(rules, tuning);
    if (threshold_text != nullptr && !threshold_text->empty()) {
        std::string base = *threshold_text;
        if (base.back() != '\n') {
            base.push_back('\n');
        }
        result.threshold_config.insert(0, base);
    }
    return result;
}

std::vector<ScannedRule> scan_rules(std::string_view rules_file_text) {
    std::vector<ScannedRule> out;
    for (const LogicalLine& line : internal::split_logical_lines(rules_file_text)) {
        if (auto rule = scan_rule(line.joined)) {
            out.push_back(std::move(*rule));
        }
    }
    return out;
}

uint64_t count_rules(const Bundle& bundle) {
    uint64_t n = 0;
    for (const auto& f : bundle.files()) {
        if (!internal::is_rules_file(f.path())) {
            continue;
        }
        for (const LogicalLine& line : internal::split_logical_lines(f.content())) {
            if (scan_rule(line.joined)) {
                ++n;
            }
        }
    }
    return n;
}

absl::Status check_content(const Bundle& bundle) {
    std::vector<std::string> problems;
    for (const auto& f : bundle.files()) {
        if (f.path() != kConfigFile) {
            continue;
        }
        try {
            YAML::Node root = YAML::Load(f.content());
            if (root && !root.IsNull() && !root.IsMap()) {
                problems.push_back("config.yaml: the top level must be a map");
            } else if (auto syntax = rule_syntax_by_file(bundle); !syntax.ok()) {
                problems.emplace_back(syntax.status().message());
            }
        } catch (const YAML::Exception& e) {
            problems.push_back(
                strings::cat("config.yaml:", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
        }
    }
    auto effective = effective_rules(bundle);
    if (!effective.ok()) {
        problems.emplace_back(effective.status().message());
    } else {
        for (const auto& e : effective->report.errors) {
            problems.push_back(strings::cat("tuning.yaml: ", e));
        }
    }
    if (problems.empty()) {
        return absl::OkStatus();
    }
    return absl::InvalidArgumentError(strings::join(problems, "\n"));
}

}  // namespace picket::bundle
