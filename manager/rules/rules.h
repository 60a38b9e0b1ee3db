// Rule sources and the rules update (issue "Rule sources and update policy"): fetching upstream
// rulesets (HTTP(S) with ETag / If-Modified-Since, or a local path), unpacking their archives
// safely, keeping the fetched bytes content-addressed, suricata-update's policy files
// (enable.conf, disable.conf, drop.conf, modify.conf) and the update that merges sources,
// applies policy, validates every rule with the sensor's own parser and builds a bundle.
// Control-plane code only (the manager's update thread and FleetAdmin, picketctl's checks): it
// allocates, does I/O and returns absl::Status; no function keeps state between calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "picket/v1/picket.pb.h"

namespace picket::rules {

// ---------------------------------------------------------------------------------------
// Sources (source.cc)

// One upstream ruleset as `picketctl rules source add` stored it.
struct SourceSpec {
    std::string name;      // [A-Za-z0-9._-]{1,64}, not starting with '.', not "local"
    std::string location;  // http:// or https:// URL, or an absolute local path (file or dir)
    std::vector<std::string> headers;  // extra HTTP request headers, "Name: value"
    std::string checksum_url;          // optional: a URL whose body holds the MD5 or SHA-256 hex
                                       // of the archive (ET's "*.tar.gz.md5"); checked when set
    bool enabled = true;
};

// "source NAME: ..." errors for a bad name, an empty / relative location, a URL of another
// scheme, a header without ':' or with CR/LF.
absl::Status check_source_spec(const SourceSpec& spec);

// What the previous successful fetch of the source returned (kept by the manager).
struct FetchState {
    std::string etag;           // ETag response header, verbatim (quotes included)
    std::string last_modified;  // Last-Modified response header, verbatim
    std::string sha256;         // of the bytes fetched
};

struct FetchOptions {
    std::chrono::milliseconds timeout{60'000};  // whole transfer
    std::chrono::milliseconds connect_timeout{10'000};
    uint64_t max_bytes = 256ull << 20;  // larger bodies are refused (ResourceExhausted)
};

struct FetchResult {
    // The server answered 304 Not Modified to If-None-Match / If-Modified-Since: `bytes` is
    // empty and the previous fetch's bytes are still current.
    bool not_modified = false;
    std::string bytes;   // the body (an archive or a .rules file); for a local directory, a tar
                         // of its files made by fetch_source (so it is stored like any other)
    std::string sha256;  // of bytes (the previous sha256 when not_modified)
    std::string etag;    // of this response (the previous one when not_modified)
    std::string last_modified;  // idem
    std::string kind;           // "tar.gz", "tar", "zip", "rules": what bytes are
};

// Fetches a source. HTTP(S) via libcurl: follows redirects (at most 5), sends If-None-Match /
// If-Modified-Since from `previous`, the spec's headers, a User-Agent "picket-manager"; an HTTP
// status >= 400 is an error naming the source, the URL and the status; so are DNS / connect /
// TLS / timeout failures (curl's message). When checksum_url is set its body's first hex word
// must equal the MD5 or SHA-256 of the bytes (DataLoss otherwise). A local path is read as
// is (file) or as every regular file under it (directory); not_modified when the sha256
// equals previous.sha256. Every error message starts with "source NAME: ".
absl::StatusOr<FetchResult> fetch_source(const SourceSpec& spec, const FetchState& previous,
                                         const FetchOptions& options = {});

struct ExtractLimits {
    uint32_t max_entries = 10'000;  // entries in the archive (any kind)
    uint64_t max_file_bytes = 64ull << 20;
    uint64_t max_total_bytes = 128ull << 20;  // uncompressed
};

// The files of a fetched ruleset: basename -> content, for every "*.rules" file and
// classification.config, reference.config, threshold.config, wherever they sit in the archive
// ("rules/emerging-scan.rules" -> "emerging-scan.rules"). `kind` is FetchResult::kind or ""
// (detect from the bytes: gzip magic, "ustar", "PK\3\4", else a rules file named
// `rules_name`). Errors (InvalidArgument / ResourceExhausted / DataLoss) name the source and
// the entry: a truncated or corrupt archive, an entry whose path is absolute or has "..",
// more than max_entries, a file or total over the limits, two entries with one basename,
// no .rules file at all, a .rules file that is not text (NUL bytes) or not UTF-8-ish rules.
// Symlinks, hard links and devices in the archive are skipped, never followed.
absl::StatusOr<std::map<std::string, std::string>> extract_rule_files(
    std::string_view source_name, std::string_view bytes, std::string_view kind,
    std::string_view rules_name, const ExtractLimits& limits = {});

// Fetched bytes kept by content address: <dir>/<sha256[0:2]>/<sha256>, written to a temporary
// name, fsynced and renamed (so a crash never leaves a partial object under its final name).
class ArchiveStore {
public:
    explicit ArchiveStore(std::filesystem::path dir);
    // Stores bytes (no-op when already there); returns the sha256.
    absl::StatusOr<std::string> put(std::string_view bytes);
    // NotFound when absent; DataLoss when the stored bytes no longer hash to sha256.
    absl::StatusOr<std::string> get(std::string_view sha256) const;

private:
    std::filesystem::path dir_;
};

// ---------------------------------------------------------------------------------------
// Policy (policy.cc): suricata-update's enable.conf, disable.conf, drop.conf, modify.conf

enum class PolicyKind : uint8_t { kEnable, kDisable, kDrop, kModify };
// "enable.conf", "disable.conf", "drop.conf", "modify.conf".
std::string_view policy_file_name(PolicyKind kind);
// The kind a file name stands for; nullopt for any other name.
std::optional<PolicyKind> policy_kind(std::string_view file_name);

// One selector of a policy line (suricata-update's matchers).
struct RuleSelector {
    // kAll is suricata-update's "*" (every rule; Oinkmaster's "modifysid * ...").
    enum class Type : uint8_t { kId, kRegex, kGroup, kMetadata, kClasstype, kAll };
    Type type = Type::kId;
    uint32_t gid = 1;     // kId ("1:2019401" or "2019401")
    uint32_t sid = 0;     // kId
    std::string pattern;  // kRegex: PCRE2 over the rule text, caseless (suricata-update's re.I);
                          // kGroup: fnmatch over the file's basename, or the basename without
                          // its extension ("emerging-*.rules", "emerging-icmp");
                          // kClasstype: the class name (Picket's own selector)
    // kMetadata: "metadata: KEY VALUE", both lowercased; matches a rule metadata entry whose
    // first word is KEY and whose whole remaining text is VALUE ("policy balanced-ips drop"),
    // as suricata-update's MetadataRuleMatch.
    std::string key, value;
};

struct PolicyLine {
    PolicyKind kind = PolicyKind::kDisable;
    uint32_t line = 0;                    // 1-based, in its file
    std::string text;                     // the line as written (for reports)
    std::vector<RuleSelector> selectors;  // a line "1:1,1:2,1:3" lists several ids; any matches
    // modify.conf only: PCRE2 pattern and replacement; the replacement's \1..\9 and \g<N>
    // (Python's, as suricata-update) as well as $1 / ${1} refer to groups.
    std::string from, to;
};

// The policy of one update: every line of the files present.
struct Policy {
    std::vector<PolicyLine> enable, disable, drop, modify;
};

// Parses one policy file's text ('#' comments, blank lines and trailing " #..." comments
// skipped, as suricata-update). Every problem is an InvalidArgument line "FILE:LINE: reason"
// (an unknown selector, a sid that is not a number, a regex that does not compile with PCRE2
// and its error and offset, a modify line that is not SELECTOR FROM TO in shell words (quotes
// optional, as suricata-update's shlex) or "modifysid SELECTOR FROM | TO", a replacement
// naming a group the pattern lacks); all problems are listed, one per line. Nothing is added
// to *policy when there is a problem.
absl::Status parse_policy_file(PolicyKind kind, std::string_view text, Policy* policy);

// A rule as the update sees it.
struct RuleEntry {
    std::string source;  // source name
    std::string group;   // the rules file's basename ("emerging-scan.rules")
    uint32_t line = 0;   // 1-based line in the source's file
    uint32_t gid = 1, sid = 0, rev = 0;
    bool enabled = true;  // false: commented out in the source
    std::string text;     // the rule without leading '#' and surrounding whitespace
};

struct PolicyReport {
    // Rules changed, net: enabled / disabled count rules whose final state differs from the
    // source's (disabled by disable.conf then re-enabled by enable.conf counts nowhere);
    // dropped / modified count rules whose text drop.conf / modify.conf changed.
    uint32_t enabled = 0, disabled = 0, dropped = 0, modified = 0;
    // Lines that matched no rule: "disable.conf:3: re:foo matched no rule" (warnings, never
    // errors); and a modify line whose pattern did not match a selected rule's text.
    std::vector<std::string> warnings;
    // One per changed rule: "disabled 1:2010935 (disable.conf:4)".
    std::vector<std::string> changes;
};

// Applies the policy as suricata-update does, in its order (policy.cc says where that order
// comes from), rule by rule: disable.conf, then enable.conf (an enable line wins over a disable
// line), then drop.conf (a rule enabled by then, not flowbits:noalert, has its leading action
// word, whatever it is, replaced by drop), then modify.conf (every matching line in file order,
// on enabled and disabled rules alike; the result replaces `text`, gid/sid/rev/enabled are not
// re-read). A regex selector matches the rule text without its '#' prefix, as suricata-update's
// raw text.
PolicyReport apply_policy(const Policy& policy, std::vector<RuleEntry>* rules);

}  // namespace picket::rules

namespace picket::rules {

// ---------------------------------------------------------------------------------------
// The update (update.cc): sources + policy + the newest bundle -> the next bundle

// What one source holds after fetch_source and extract_rule_files.
struct SourceFiles {
    std::string name;
    std::string sha256;                        // of the fetched bytes
    std::map<std::string, std::string> files;  // extract_rule_files' output
};

struct UpdateInput {
    std::vector<SourceFiles> sources;  // every enabled source
    // Policy files by name: enable.conf, disable.conf, drop.conf, modify.conf, tuning.yaml.
    std::map<std::string, std::string> policy_files;
    // The newest stored bundle (with its files), or nullptr when none was ever pushed.
    const picket::v1::Bundle* previous = nullptr;
    std::string bundle_name = "rules";  // the new bundle's name when there is no previous one
    std::string author;
    std::string message;
};

struct SourceCounts {
    std::string name;
    uint32_t files = 0;          // .rules files
    uint32_t rules = 0;          // rules (enabled or not) kept from it after merging
    uint32_t rules_enabled = 0;  // enabled after the policy
};

struct UpdateOutput {
    // The next bundle (manifest version 0, files and manifest entries set; unsigned): the
    // newest bundle's files except its rules (rules/local/ is kept: the site's own rules),
    // rules/SOURCE/FILE.rules of every source with the policy applied, the sources'
    // classification.config / reference.config (concatenated in source order) when any has
    // one, tuning.yaml from the policy when it has one, and the policy's other files under
    // policy/ (the record of what produced the version; sensors ignore them).
    picket::v1::Bundle bundle;
    bool changed = true;  // false: the same files as `previous` (nothing to store)
    picket::v1::BundleDiff diff;  // previous -> bundle (empty without previous)
    std::vector<SourceCounts> sources;
    uint32_t rules = 0, rules_enabled = 0;
    PolicyReport policy;
    // Enabled rules the sensor's parser refuses: count and the first 100 "file:line sid N:
    // reason" (file is the bundle path, line the line in it).
    uint32_t unsupported = 0;
    std::vector<std::string> unsupported_rules;
    // Sids in two sources ("1:2000: et-open rev 3 and talos rev 5: talos kept"), policy lines
    // that matched nothing, tuning warnings.
    std::vector<std::string> warnings;
};

// What the sensors' parser makes of a bundle's rules (its config.yaml vars, its rule-syntax,
// tuning.yaml applied): enabled rules, how many load, and the first `max_listed` problems as
// "file:line sid N: reason" (duplicate sids are not problems: the sensor keeps one).
struct RuleCheck {
    uint32_t enabled = 0;
    uint32_t loaded = 0;
    uint32_t unsupported = 0;
    std::vector<std::string> problems;
};
absl::StatusOr<RuleCheck> check_rules(const picket::v1::Bundle& bundle, size_t max_listed = 100);

// Checks policy files as PutRulePolicy stores them: known names, each parses (modify and
// re: regexes compile), tuning.yaml parses. InvalidArgument listing every problem "FILE:LINE:
// reason", one per line.
absl::Status check_policy_files(const std::map<std::string, std::string>& files);

// Builds the next bundle. Errors: a policy file that does not parse, no source, a source
// without rules, a merged bundle that fails the bundle checks (limits, config.yaml rule-syntax
// naming a file that no longer exists). Rules the parser refuses are reported, not errors.
absl::StatusOr<UpdateOutput> build_update(const UpdateInput& input);

}  // namespace picket::rules
