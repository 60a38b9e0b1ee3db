// policy.cc: suricata-update's policy files (enable.conf, disable.conf, drop.conf, modify.conf).
//
// Behaviour follows suricata-update's suricata/update/matchers.py and main.py:
// - lines are stripped, blank and '#' lines skipped, and everything from the first " #" is a
//   trailing comment (main.py: line.rsplit(" #")[0]); in modify.conf only a " #" outside
//   quotes starts a comment, so a quoted replacement may hold " #" (a departure, on purpose);
// - selectors are tried as matchers.py's parse_rule_match: "*", an id list ("1:2", "2,3"),
//   "re:" (compiled with re.I there, so PCRE2_CASELESS here), "group:" or a bare "*.rules"
//   (fnmatch over the basename, then the basename without its extension), "metadata: K V"
//   (key and the whole remaining value, both lowercased); "classtype:NAME" is Picket's own;
// - modify.conf lines are shlex tokens: SELECTOR FROM TO (quotes optional) or Oinkmaster's
//   "modifysid SELECTOR FROM | TO"; "\$" is read as "$" first; FROM is case-sensitive and
//   replaces every occurrence (Python's re.sub);
// - per rule, main.py runs disable, enable, drop, then modify (in file order), so drop sees the
//   rule before modify.conf and modify selectors see the dropped text. Drop rewrites the leading
//   action word whatever it is (re.sub("^\w+", "drop")), skipping flowbits:noalert rules; Picket
//   drops only rules enabled at that point (rules.h's contract; suricata-update also rewrites
//   disabled rules, which Picket never ships).
#include "manager/rules/rules.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <unordered_map>
#include <utility>

#include "absl/strings/ascii.h"
#include "common/strings.h"

namespace picket::rules {

using strings::cat;

std::string_view policy_file_name(PolicyKind kind) {
    switch (kind) {
        case PolicyKind::kEnable:
            return "enable.conf";
        case PolicyKind::kDisable:
            return "disable.conf";
        case PolicyKind::kDrop:
            return "drop.conf";
        case PolicyKind::kModify:
            return "modify.conf";
    }
    return "";
}

std::optional<PolicyKind> policy_kind(std::string_view file_name) {
    for (PolicyKind k :
         {PolicyKind::kEnable, PolicyKind::kDisable, PolicyKind::kDrop, PolicyKind::kModify}) {
        if (policy_file_name(k) == file_name) {
            return k;
        }
    }
    return std::nullopt;
}

namespace {

std::string_view strip(std::string_view s) {
    return strings::trim(s);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
        if (i == s.size() || s[i] == sep) {
            out.push_back(s.substr(start, i - start));
            start = i + 1;
        }
    }
    return out;
}

bool consume_prefix(std::string_view* s, std::string_view prefix) {
    if (!s->starts_with(prefix)) {
        return false;
    }
    s->remove_prefix(prefix.size());
    return true;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        c = absl::ascii_tolower(static_cast<unsigned char>(c));
    }
    return out;
}

bool to_u32(std::string_view s, uint32_t* out) {
    return strings::parse_u32(s, out);
}

// ---------------------------------------------------------------------------------------
// PCRE2

struct CodeFree {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataFree {
    void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
using CodePtr = std::unique_ptr<pcre2_code, CodeFree>;
using MatchDataPtr = std::unique_ptr<pcre2_match_data, MatchDataFree>;

std::string pcre2_message(int code) {
    PCRE2_UCHAR buf[256];
    int n = pcre2_get_error_message(code, buf, sizeof(buf));
    if (n < 0) {
        return cat("PCRE2 error ", code);
    }
    return std::string(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// Compiles a pattern; on failure returns the "PCRE2's message at offset N" text in *error.
CodePtr compile_regex(std::string_view pattern, uint32_t options, std::string* error) {
    int code = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   options, &code, &offset, nullptr);
    if (re == nullptr) {
        *error = cat(pcre2_message(code), " at offset ", offset);
        return nullptr;
    }
    return CodePtr(re);
}

// A compiled regex with its own match data (the update is single-threaded).
struct Regex {
    CodePtr code;
    MatchDataPtr md;

    bool init(std::string_view pattern, uint32_t options, std::string* error) {
        code = compile_regex(pattern, options, error);
        if (!code) {
            return false;
        }
        pcre2_jit_compile(code.get(), PCRE2_JIT_COMPLETE);  // optional: falls back silently
        md.reset(pcre2_match_data_create_from_pattern(code.get(), nullptr));
        return md != nullptr;
    }
    // >0 on a match, PCRE2_ERROR_NOMATCH (<0) otherwise.
    int match(std::string_view subject, size_t start, uint32_t options) const {
        return pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(),
                           start, options, md.get(), nullptr);
    }
    bool search(std::string_view subject) const { return match(subject, 0, 0) > 0; }
};

// ---------------------------------------------------------------------------------------
// Text helpers

// Python's fnmatch on POSIX (case-sensitive): '*', '?', "[seq]", "[!seq]".
bool fnmatch(std::string_view pat, std::string_view s) {
    size_t p = 0, i = 0, star_p = std::string_view::npos, star_i = 0;
    while (i < s.size()) {
        if (p < pat.size() && pat[p] == '*') {
            star_p = p++;
            star_i = i;
            continue;
        }
        if (p < pat.size()) {
            if (pat[p] == '?') {
                ++p;
                ++i;
                continue;
            }
            if (pat[p] == '[') {
                size_t j = p + 1;
                bool negate = j < pat.size() && pat[j] == '!';
                if (negate) {
                    ++j;
                }
                size_t first = j;
                if (j < pat.size() && pat[j] == ']') {
                    ++j;  // a leading ']' is literal
                }
                while (j < pat.size() && pat[j] != ']') {
                    ++j;
                }
                if (j < pat.size()) {  // a closed set
                    bool in = false;
                    for (size_t k = first; k < j; ++k) {
                        if (k + 2 < j && pat[k + 1] == '-') {
                            in = in || (pat[k] <= s[i] && s[i] <= pat[k + 2]);
                            k += 2;
                        } else {
                            in = in || pat[k] == s[i];
                        }
                    }
                    if (in != negate) {
                        p = j + 1;
                        ++i;
                        continue;
                    }
                } else if (s[i] == '[') {  // an unclosed '[' is literal
                    ++p;
                    ++i;
                    continue;
                }
            } else if (pat[p] == s[i]) {
                ++p;
                ++i;
                continue;
            }
        }
        if (star_p == std::string_view::npos) {
            return false;
        }
        p = star_p + 1;
        i = ++star_i;
    }
    while (p < pat.size() && pat[p] == '*') {
        ++p;
    }
    return p == pat.size();
}

// Strips a trailing comment: from the first " #" (outside quotes when `quotes`).
std::string_view strip_trailing_comment(std::string_view line, bool quotes) {
    char quote = 0;
    for (size_t i = 0; i < line.size(); ++i) {
        char c = line[i];
        if (quotes) {
            if (quote != 0) {
                if (c == '\\' && quote == '"' && i + 1 < line.size()) {
                    ++i;
                } else if (c == quote) {
                    quote = 0;
                }
                continue;
            }
            if (c == '"' || c == '\'') {
                quote = c;
                continue;
            }
            if (c == '\\' && i + 1 < line.size()) {
                ++i;
                continue;
            }
        }
        if (c == ' ' && i + 1 < line.size() && line[i + 1] == '#') {
            return strip(line.substr(0, i));
        }
    }
    return line;
}

// POSIX shlex.split (Python's default): whitespace-separated words, '...' literal, "..." with
// \\ \" \$ \` escapes, a backslash outside quotes escapes the next character. nullopt on an
// unclosed quote.
std::optional<std::vector<std::string>> shlex_split(std::string_view s) {
    std::vector<std::string> out;
    std::string cur;
    bool in_word = false;
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == ' ' || c == '\t') {
            if (in_word) {
                out.push_back(std::move(cur));
                cur.clear();
                in_word = false;
            }
            continue;
        }
        in_word = true;
        if (c == '\'') {
            size_t end = s.find('\'', i + 1);
            if (end == std::string_view::npos) {
                return std::nullopt;
            }
            cur.append(s.substr(i + 1, end - i - 1));
            i = end;
        } else if (c == '"') {
            size_t j = i + 1;
            for (; j < s.size() && s[j] != '"'; ++j) {
                if (s[j] == '\\' && j + 1 < s.size() &&
                    (s[j + 1] == '\\' || s[j + 1] == '"' || s[j + 1] == '$' || s[j + 1] == '`')) {
                    ++j;
                }
                cur.push_back(s[j]);
            }
            if (j >= s.size()) {
                return std::nullopt;
            }
            i = j;
        } else if (c == '\\' && i + 1 < s.size()) {
            cur.push_back(s[++i]);
        } else {
            cur.push_back(c);
        }
    }
    if (in_word) {
        out.push_back(std::move(cur));
    }
    return out;
}

// ---------------------------------------------------------------------------------------
// Selectors

// Parses one selector (matchers.py's parse_rule_match); an error is the reason only.
absl::StatusOr<std::vector<RuleSelector>> parse_selector(std::string_view s) {
    s = strip(s);
    std::vector<RuleSelector> out;
    RuleSelector sel;
    if (s == "*") {
        sel.type = RuleSelector::Type::kAll;
        out.push_back(sel);
        return out;
    }
    if (!s.empty() && absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) {
        for (std::string_view entry : split(s, ',')) {
            entry = strip(entry);
            RuleSelector id;
            id.type = RuleSelector::Type::kId;
            size_t colon = entry.find(':');
            bool ok = colon == std::string_view::npos
                          ? to_u32(entry, &id.sid)
                          : to_u32(entry.substr(0, colon), &id.gid) &&
                                to_u32(entry.substr(colon + 1), &id.sid);
            if (!ok || entry.empty() || !std::all_of(entry.begin(), entry.end(), [](char c) {
                    return c == ':' || (c >= '0' && c <= '9');
                })) {
                return absl::InvalidArgumentError(
                    cat("'", entry, "' is not a rule id (GID:SID or SID)"));
            }
            out.push_back(id);
        }
        return out;
    }
    if (consume_prefix(&s, "re:")) {
        sel.type = RuleSelector::Type::kRegex;
        sel.pattern = std::string(strip(s));
        std::string error;
        if (!compile_regex(sel.pattern, PCRE2_CASELESS, &error)) {
            return absl::InvalidArgumentError(
                cat("regex '", sel.pattern, "' does not compile: ", error));
        }
    } else if (consume_prefix(&s, "group:") || s.ends_with(".rules")) {
        sel.type = RuleSelector::Type::kGroup;
        sel.pattern = std::string(strip(s));
        if (sel.pattern.empty()) {
            return absl::InvalidArgumentError("group selector without a pattern");
        }
    } else if (consume_prefix(&s, "metadata:")) {
        sel.type = RuleSelector::Type::kMetadata;
        s = strip(s);
        size_t sp = s.find(' ');
        if (sp == std::string_view::npos) {
            return absl::InvalidArgumentError("metadata selector needs 'metadata: KEY VALUE'");
        }
        sel.key = lower(strip(s.substr(0, sp)));
        sel.value = lower(strip(s.substr(sp + 1)));
    } else if (consume_prefix(&s, "classtype:")) {
        sel.type = RuleSelector::Type::kClasstype;
        sel.pattern = std::string(strip(s));
        if (sel.pattern.empty()) {
            return absl::InvalidArgumentError("classtype selector without a name");
        }
    } else {
        return absl::InvalidArgumentError(cat("unknown selector '", s, "'"));
    }
    out.push_back(std::move(sel));
    return out;
}

// A modify.conf replacement, as pieces: literal text or a group number. Python's template
// (\1..\99, \g<N>, \\, \n, \t, \r; other escapes kept as written) plus $N and ${N}.
struct Piece {
    std::string literal;
    int group = -1;  // >= 0: a group reference
};

absl::StatusOr<std::vector<Piece>> parse_template(std::string_view to, uint32_t capture_count) {
    std::vector<Piece> pieces;
    auto lit = [&](std::string_view t) {
        if (pieces.empty() || pieces.back().group >= 0) {
            pieces.push_back({});
        }
        pieces.back().literal.append(t);
    };
    auto group = [&](uint32_t g) -> absl::Status {
        if (g > capture_count) {
            return absl::InvalidArgumentError(
                cat("replacement refers to group ", g, " but the pattern has ", capture_count));
        }
        pieces.push_back({"", static_cast<int>(g)});
        return absl::OkStatus();
    };
    auto digits = [&](size_t i, size_t max) {
        size_t j = i;
        while (j < to.size() && j - i < max &&
               absl::ascii_isdigit(static_cast<unsigned char>(to[j]))) {
            ++j;
        }
        return j;
    };
    // \N or $N at *i (one or two digits after the marker): the group, *i on its last digit.
    auto numbered = [&](size_t* i) -> absl::Status {
        size_t end = digits(*i + 1, 2);
        uint32_t g = 0;
        (void)to_u32(to.substr(*i + 1, end - *i - 1), &g);
        *i = end - 1;
        return group(g);
    };
    for (size_t i = 0; i < to.size(); ++i) {
        char c = to[i];
        if (c == '\\' && i + 1 < to.size()) {
            char n = to[i + 1];
            if (absl::ascii_isdigit(static_cast<unsigned char>(n))) {
                if (auto st = numbered(&i); !st.ok()) {
                    return st;
                }
            } else if (n == 'g' && i + 2 < to.size() && to[i + 2] == '<') {
                size_t close = to.find('>', i + 3);
                uint32_t g = 0;
                if (close == std::string_view::npos ||
                    !to_u32(to.substr(i + 3, close - i - 3), &g)) {
                    return absl::InvalidArgumentError("replacement has a bad \\g<N>");
                }
                if (auto st = group(g); !st.ok()) {
                    return st;
                }
                i = close;
            } else {
                switch (n) {
                    case '\\':
                        lit("\\");
                        break;
                    case 'n':
                        lit("\n");
                        break;
                    case 't':
                        lit("\t");
                        break;
                    case 'r':
                        lit("\r");
                        break;
                    default:
                        lit(to.substr(i, 2));
                }
                ++i;
            }
        } else if (c == '$' && i + 1 < to.size() &&
                   absl::ascii_isdigit(static_cast<unsigned char>(to[i + 1]))) {
            if (auto st = numbered(&i); !st.ok()) {
                return st;
            }
        } else if (c == '$' && i + 2 < to.size() && to[i + 1] == '{') {
            size_t close = to.find('}', i + 2);
            uint32_t g = 0;
            if (close != std::string_view::npos && to_u32(to.substr(i + 2, close - i - 2), &g)) {
                if (auto st = group(g); !st.ok()) {
                    return st;
                }
                i = close;
            } else {
                lit("$");
            }
        } else {
            lit(std::string_view(&to[i], 1));
        }
    }
    return pieces;
}

struct ModifySpec {
    std::string selector, from, to;
};

// Splits a modify.conf line into its three parts (an error is the reason only).
absl::StatusOr<ModifySpec> split_modify(std::string_view text) {
    std::string line;
    line.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {  // "\$" -> "$", as main.py's load_filters
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '$') {
            continue;
        }
        line.push_back(text[i]);
    }
    auto tokens = shlex_split(line);
    if (!tokens) {
        return absl::InvalidArgumentError("unclosed quote");
    }
    if (tokens->size() == 3) {
        return ModifySpec{(*tokens)[0], (*tokens)[1], (*tokens)[2]};
    }
    if (tokens->size() == 5 && (*tokens)[0] == "modifysid" && (*tokens)[3] == "|") {
        return ModifySpec{(*tokens)[1], (*tokens)[2], (*tokens)[4]};
    }
    return absl::InvalidArgumentError(
        cat("expected SELECTOR \"FROM\" \"TO\", got ", tokens->size(), " words"));
}

std::vector<PolicyLine>& lines_of(Policy* policy, PolicyKind kind) {
    switch (kind) {
        case PolicyKind::kEnable:
            return policy->enable;
        case PolicyKind::kDisable:
            return policy->disable;
        case PolicyKind::kDrop:
            return policy->drop;
        case PolicyKind::kModify:
            break;
    }
    return policy->modify;
}

}  // namespace

absl::Status parse_policy_file(PolicyKind kind, std::string_view text, Policy* policy) {
    const std::string_view file = policy_file_name(kind);
    std::vector<std::string> problems;
    std::vector<PolicyLine> parsed;
    uint32_t number = 0;
    for (std::string_view raw : split(text, '\n')) {
        ++number;
        std::string_view line = strip(raw);
        if (line.empty() || line[0] == '#') {
            continue;
        }
        line = strip_trailing_comment(line, kind == PolicyKind::kModify);
        PolicyLine pl;
        pl.kind = kind;
        pl.line = number;
        pl.text = std::string(line);
        auto fail = [&](std::string_view reason) {
            problems.push_back(cat(file, ":", number, ": ", reason));
        };
        std::string_view selector = line;
        if (kind == PolicyKind::kModify) {
            auto spec = split_modify(line);
            if (!spec.ok()) {
                fail(std::string(spec.status().message()));
                continue;
            }
            std::string error;
            CodePtr from = compile_regex(spec->from, 0, &error);
            if (!from) {
                fail(cat("regex '", spec->from, "' does not compile: ", error));
                continue;
            }
            uint32_t captures = 0;
            pcre2_pattern_info(from.get(), PCRE2_INFO_CAPTURECOUNT, &captures);
            if (auto t = parse_template(spec->to, captures); !t.ok()) {
                fail(std::string(t.status().message()));
                continue;
            }
            pl.from = spec->from;
            pl.to = spec->to;
            auto sel = parse_selector(spec->selector);
            if (!sel.ok()) {
                fail(std::string(sel.status().message()));
                continue;
            }
            pl.selectors = *std::move(sel);
        } else {
            auto sel = parse_selector(selector);
            if (!sel.ok()) {
                fail(std::string(sel.status().message()));
                continue;
            }
            pl.selectors = *std::move(sel);
        }
        parsed.push_back(std::move(pl));
    }
    if (!problems.empty()) {
        return absl::InvalidArgumentError(strings::join(problems, "\n"));
    }
    auto& dest = lines_of(policy, kind);
    for (auto& pl : parsed) {
        dest.push_back(std::move(pl));
    }
    return absl::OkStatus();
}

namespace {

// ---------------------------------------------------------------------------------------
// Rule options, scanned once per rule text (quotes and backslash escapes honoured)

struct RuleInfo {
    bool parsed = false;
    std::vector<std::pair<std::string, std::string>> metadata;  // lowercased key, value
    std::string classtype;
    bool noalert = false;
};

void scan_options(std::string_view text, RuleInfo* info) {
    info->parsed = true;
    info->metadata.clear();
    info->classtype.clear();
    info->noalert = false;
    size_t open = text.find('(');
    size_t close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
        return;
    }
    std::string_view body = text.substr(open + 1, close - open - 1);
    size_t i = 0;
    while (i < body.size()) {
        size_t start = i;
        bool quoted = false;
        for (; i < body.size(); ++i) {
            if (body[i] == '\\' && i + 1 < body.size()) {
                ++i;
            } else if (body[i] == '"') {
                quoted = !quoted;
            } else if (body[i] == ';' && !quoted) {
                break;
            }
        }
        std::string_view opt = strip(body.substr(start, i - start));
        ++i;
        size_t colon = opt.find(':');
        std::string_view name = strip(opt.substr(0, colon));
        std::string_view value =
            colon == std::string_view::npos ? std::string_view() : strip(opt.substr(colon + 1));
        if (name == "metadata") {
            for (std::string_view entry : split(value, ',')) {
                entry = strip(entry);
                size_t sp = entry.find(' ');
                if (sp == std::string_view::npos) {
                    continue;
                }
                info->metadata.emplace_back(lower(entry.substr(0, sp)),
                                            lower(strip(entry.substr(sp + 1))));
            }
        } else if (name == "classtype") {
            info->classtype = std::string(value);
        } else if (name == "flowbits" && value == "noalert") {
            info->noalert = true;
        }
    }
}

// One policy line ready to run: its compiled regexes and what it has matched so far.
struct Compiled {
    const PolicyLine* line = nullptr;
    bool usable = true;
    std::vector<std::unique_ptr<Regex>> selector_re;  // per selector (null unless kRegex)
    std::unordered_map<std::string, bool> group_cache;
    Regex from;
    std::vector<Piece> to;
    bool matched_rule = false;
    bool from_matched = false;
};

struct Rule {
    RuleEntry* entry;
    RuleInfo info;
};

bool selector_matches(Compiled& c, size_t i, Rule& rule) {
    const RuleSelector& sel = c.line->selectors[i];
    RuleEntry& r = *rule.entry;
    switch (sel.type) {
        case RuleSelector::Type::kAll:
            return true;
        case RuleSelector::Type::kId:
            return sel.gid == r.gid && sel.sid == r.sid;
        case RuleSelector::Type::kRegex:
            return c.selector_re[i]->search(r.text);
        case RuleSelector::Type::kGroup: {
            auto it = c.group_cache.find(r.group);
            if (it != c.group_cache.end()) {
                return it->second;
            }
            std::string_view base = r.group;
            size_t slash = base.rfind('/');
            if (slash != std::string_view::npos) {
                base = base.substr(slash + 1);
            }
            bool m = fnmatch(sel.pattern, base);
            size_t dot = base.rfind('.');
            if (!m && dot != std::string_view::npos && dot > 0) {
                m = fnmatch(sel.pattern, base.substr(0, dot));
            }
            c.group_cache.emplace(r.group, m);
            return m;
        }
        case RuleSelector::Type::kMetadata:
        case RuleSelector::Type::kClasstype:
            if (!rule.info.parsed) {
                scan_options(r.text, &rule.info);
            }
            if (sel.type == RuleSelector::Type::kClasstype) {
                return rule.info.classtype == sel.pattern;
            }
            for (const auto& [k, v] : rule.info.metadata) {
                if (k == sel.key && v == sel.value) {
                    return true;
                }
            }
            return false;
    }
    return false;
}

bool line_matches(Compiled& c, Rule& rule) {
    for (size_t i = 0; i < c.line->selectors.size(); ++i) {
        if (selector_matches(c, i, rule)) {
            return true;
        }
    }
    return false;
}

std::string file_line(const PolicyLine& l) {
    return cat(policy_file_name(l.kind), ":", l.line);
}

// The lines of one file, compiled, with an index from gid:sid to the lines that only list ids
// (so a rule is tested against its own id lines and the other lines, never every id line).
struct Stage {
    std::vector<Compiled> lines;
    std::unordered_map<uint64_t, std::vector<size_t>> by_id;
    std::vector<size_t> others;

    void build(const std::vector<PolicyLine>& src, std::vector<std::string>* warnings) {
        lines.resize(src.size());
        for (size_t n = 0; n < src.size(); ++n) {
            Compiled& c = lines[n];
            c.line = &src[n];
            bool ids_only = !src[n].selectors.empty();
            std::string error;
            for (const RuleSelector& sel : src[n].selectors) {
                c.selector_re.emplace_back();
                ids_only = ids_only && sel.type == RuleSelector::Type::kId;
                if (sel.type == RuleSelector::Type::kRegex) {
                    auto re = std::make_unique<Regex>();
                    if (!re->init(sel.pattern, PCRE2_CASELESS, &error)) {
                        c.usable = false;
                    }
                    c.selector_re.back() = std::move(re);
                }
            }
            if (src[n].kind == PolicyKind::kModify && c.usable) {
                if (c.from.init(src[n].from, 0, &error)) {
                    uint32_t captures = 0;
                    pcre2_pattern_info(c.from.code.get(), PCRE2_INFO_CAPTURECOUNT, &captures);
                    auto t = parse_template(src[n].to, captures);
                    if (t.ok()) {
                        c.to = *std::move(t);
                    } else {
                        c.usable = false;
                        error = std::string(t.status().message());
                    }
                } else {
                    c.usable = false;
                }
            }
            if (!c.usable) {  // a Policy built by hand, never through parse_policy_file
                warnings->push_back(cat(file_line(src[n]), ": skipped: ", error));
                continue;
            }
            if (ids_only) {
                for (const RuleSelector& sel : src[n].selectors) {
                    auto& v = by_id[(uint64_t{sel.gid} << 32) | sel.sid];
                    if (v.empty() || v.back() != n) {
                        v.push_back(n);
                    }
                }
            } else {
                others.push_back(n);
            }
        }
    }

    // The lines that may match the rule, in file order.
    void candidates(const RuleEntry& r, std::vector<size_t>* out) const {
        out->clear();
        auto it = by_id.find((uint64_t{r.gid} << 32) | r.sid);
        if (it == by_id.end()) {
            out->assign(others.begin(), others.end());
            return;
        }
        std::merge(it->second.begin(), it->second.end(), others.begin(), others.end(),
                   std::back_inserter(*out));
    }

    void warn_unmatched(std::vector<std::string>* warnings) const {
        for (const Compiled& c : lines) {
            if (!c.usable) {
                continue;
            }
            std::string_view text = c.line->text;
            if (c.line->kind == PolicyKind::kModify) {
                auto spec = split_modify(text);
                if (!c.matched_rule && spec.ok()) {
                    warnings->push_back(
                        cat(file_line(*c.line), ": ", spec->selector, " matched no rule"));
                } else if (!c.from_matched) {
                    warnings->push_back(cat(file_line(*c.line), ": '", c.line->from,
                                            "' matched no selected rule's text"));
                }
            } else if (!c.matched_rule) {
                warnings->push_back(cat(file_line(*c.line), ": ", text, " matched no rule"));
            }
        }
    }
};

// Python's re.sub over the whole text; returns the number of replacements.
size_t substitute(const Compiled& c, std::string* text) {
    const Regex& re = c.from;
    std::string out;
    size_t pos = 0, copied = 0, count = 0;
    const std::string& s = *text;
    bool last_empty = false;
    while (pos <= s.size()) {
        uint32_t opts = last_empty ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
        int rc = re.match(s, pos, opts);
        if (rc <= 0) {
            if (!last_empty) {
                break;
            }
            last_empty = false;
            ++pos;  // after an empty match, step over one byte and search again
            continue;
        }
        PCRE2_SIZE* ov = pcre2_get_ovector_pointer(re.md.get());
        size_t ms = ov[0], me = ov[1];
        out.append(s, copied, ms - copied);
        for (const Piece& p : c.to) {
            if (p.group < 0) {
                out.append(p.literal);
            } else if (p.group < rc && ov[2 * p.group] != PCRE2_UNSET) {
                out.append(s, ov[2 * p.group], ov[2 * p.group + 1] - ov[2 * p.group]);
            }
        }
        copied = me;
        ++count;
        last_empty = ms == me;
        pos = me;
    }
    if (count > 0) {
        out.append(s, copied, std::string::npos);
        *text = std::move(out);
    }
    return count;
}

// Rewrites the leading action word (re.sub("^\w+", "drop")); false when already drop.
bool make_drop(std::string* text) {
    size_t n = 0;
    while (n < text->size() &&
           (absl::ascii_isalnum(static_cast<unsigned char>((*text)[n])) || (*text)[n] == '_')) {
        ++n;
    }
    if (n == 0 || text->compare(0, n, "drop") == 0) {
        return false;
    }
    text->replace(0, n, "drop");
    return true;
}

}  // namespace

PolicyReport apply_policy(const Policy& policy, std::vector<RuleEntry>* rules) {
    PolicyReport report;
    Stage disable, enable, drop, modify;
    disable.build(policy.disable, &report.warnings);
    enable.build(policy.enable, &report.warnings);
    drop.build(policy.drop, &report.warnings);
    modify.build(policy.modify, &report.warnings);

    std::vector<size_t> cand;
    for (RuleEntry& entry : *rules) {
        Rule rule{&entry, {}};
        const bool was_enabled = entry.enabled;
        const PolicyLine* state_line = nullptr;  // the line behind the last enabled change

        // disable.conf, then enable.conf: the first matching line switches the rule; later
        // lines are tested only until each has matched some rule (for the "matched no rule"
        // warnings).
        for (auto [stage, to] : {std::pair<Stage*, bool>{&disable, false}, {&enable, true}}) {
            stage->candidates(entry, &cand);
            const PolicyLine* switched_by = nullptr;
            for (size_t n : cand) {
                Compiled& c = stage->lines[n];
                const bool needed = switched_by == nullptr && entry.enabled != to;
                if (!needed && c.matched_rule) {
                    continue;
                }
                if (line_matches(c, rule)) {
                    c.matched_rule = true;
                    if (needed) {
                        switched_by = c.line;
                    }
                }
            }
            if (switched_by != nullptr) {
                entry.enabled = to;
                state_line = switched_by;
            }
        }

        drop.candidates(entry, &cand);
        const PolicyLine* dropped_by = nullptr;
        for (size_t n : cand) {
            Compiled& c = drop.lines[n];
            if (dropped_by != nullptr && c.matched_rule) {
                continue;
            }
            if (line_matches(c, rule)) {
                c.matched_rule = true;
                if (dropped_by == nullptr && entry.enabled) {
                    if (!rule.info.parsed) {
                        scan_options(entry.text, &rule.info);
                    }
                    if (!rule.info.noalert && make_drop(&entry.text)) {
                        dropped_by = c.line;
                    }
                }
            }
        }

        // modify.conf: every matching line in file order, on the text as it is by then.
        modify.candidates(entry, &cand);
        std::vector<std::string> modified_by;
        for (size_t n : cand) {
            Compiled& c = modify.lines[n];
            if (!line_matches(c, rule)) {
                continue;
            }
            c.matched_rule = true;
            std::string before = entry.text;
            if (substitute(c, &entry.text) > 0) {
                c.from_matched = true;
                if (entry.text != before) {
                    modified_by.push_back(file_line(*c.line));
                    rule.info.parsed = false;  // options may have changed
                }
            }
        }

        const std::string id = cat(entry.gid, ":", entry.sid);
        if (was_enabled != entry.enabled) {
            (entry.enabled ? report.enabled : report.disabled)++;
            report.changes.push_back(cat(entry.enabled ? "enabled " : "disabled ", id, " (",
                                         file_line(*state_line), ")"));
        }
        if (dropped_by != nullptr) {
            ++report.dropped;
            report.changes.push_back(cat("dropped ", id, " (", file_line(*dropped_by), ")"));
        }
        if (!modified_by.empty()) {
            ++report.modified;
            report.changes.push_back(
                cat("modified ", id, " (", strings::join(modified_by, ", "), ")"));
        }
    }
    disable.warn_unmatched(&report.warnings);
    enable.warn_unmatched(&report.warnings);
    drop.warn_unmatched(&report.warnings);
    modify.warn_unmatched(&report.warnings);
    return report;
}

}  // namespace picket::rules
