// Bundles: the immutable, content-addressed unit the manager deploys to sensors (rules, a sensor
// config overlay, a tuning overlay). Loading and writing bundle directories, verification
// (hashes, paths, limits, Ed25519 signature), signing, the tuning overlay and bundle diffs.
// Control-plane code only (sensor agent thread, manager, picketctl): it allocates, does I/O and
// returns absl::Status; no function keeps state, so any thread may call any of them.
#pragma once

#include <compare>
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

namespace picket::bundle {

using Bundle = picket::v1::Bundle;
using Manifest = picket::v1::Manifest;

// Names of the layout (README.md). Any other safe path is carried as-is.
inline constexpr std::string_view kManifestFile = "manifest.json";
inline constexpr std::string_view kConfigFile = "config.yaml";
inline constexpr std::string_view kTuningFile = "tuning.yaml";
inline constexpr std::string_view kThresholdFile = "threshold.config";
inline constexpr std::string_view kRulesDir = "rules/";  // rules are rules/*.rules

// Defaults sized from ET Open (20 MB of rules files, 34,850 rules counting disabled ones):
// about 3x its size and 6x its rule count, so the largest real rulesets fit while a bundle
// can neither exhaust the manager's memory at push nor the sensor's at compile.
struct Limits {
    uint32_t max_files = 4096;
    uint64_t max_file_bytes = 64ull << 20;
    uint64_t max_total_bytes = 64ull << 20;
    uint64_t max_rules = 200'000;  // rules (enabled or commented out) in rules/*.rules
};

// gRPC message size limit of every Picket server and client (manager, picketctl, sensor
// agent): the largest message is a bundle (PushBundle, GetBundle with content, ApplyBundle),
// i.e. max_total_bytes of content plus its envelope. The envelope of a bundle at the other
// limits (4096 files with 255-byte paths listed twice, 64-hex hashes, 4 KiB author and message)
// is under 2.5 MiB; 4 MiB leaves room. Every other message is far smaller.
inline constexpr uint64_t kMaxEnvelopeBytes = 4ull << 20;
inline constexpr int kMaxMessageBytes =
    static_cast<int>(Limits{}.max_total_bytes + kMaxEnvelopeBytes);

// ---------------------------------------------------------------------------------------
// Hashing, paths, manifest

// Lowercase hex SHA-256 (OpenSSL EVP).
std::string sha256_hex(std::string_view bytes);

// A bundle path must be relative, '/'-separated, at most 255 bytes and 8 components, each
// component made of [A-Za-z0-9._+-] and not starting with '.', and not "manifest.json".
// The error names the path and the rule it breaks.
absl::Status check_path(std::string_view path);

// The bytes that are signed and hashed (README.md "What is signed"). Excludes version and
// parent_version, which the manager assigns after the author signed.
std::string canonical_manifest(const Manifest& manifest);
// Content address: sha256_hex(canonical_manifest(bundle.manifest())).
std::string bundle_sha256(const Bundle& bundle);
picket::v1::BundleRef bundle_ref(const Bundle& bundle);

// manifest.json text: manifest fields plus signature / signing_key_id (deterministic, so a
// round trip is byte-identical).
std::string manifest_to_json(const Bundle& bundle);
// Parses manifest.json into a Bundle holding the manifest and signature, no files. The error
// says what is wrong and where (JSON line/column, field name). `files_listed` (optional) is set
// to whether the JSON had a "files" key.
absl::StatusOr<Bundle> manifest_from_json(std::string_view text, bool* files_listed = nullptr);

// Recomputes manifest.files (path, sha256, size; sorted by path) from bundle.files.
void update_manifest_files(Bundle& bundle);

// ---------------------------------------------------------------------------------------
// Directories

// Reads a bundle directory: every regular file (hidden entries, i.e. names starting with '.',
// are skipped), hashed; manifest.json supplies the metadata and signature. When manifest.json
// is absent the manifest is new (name = the directory's name, version 0); when it lists files,
// they must match the directory exactly (hash, missing, extra). Errors name the file: unreadable,
// over a limit, a symlink leaving the directory, a special file, a path check_path refuses.
absl::StatusOr<Bundle> load_bundle_dir(const std::filesystem::path& dir, const Limits& limits = {});

// Writes the bundle (files + manifest.json) into `dir`, which must not exist: everything goes to
// "<dir>.tmp" first (removed if left over), each file and directory is fsynced, then the
// directory is renamed into place and its parent fsynced. The bundle must pass verify_bundle
// without key and version requirement first. AlreadyExists when `dir` exists.
absl::Status write_bundle_dir(const Bundle& bundle, const std::filesystem::path& dir,
                              const Limits& limits = {});

// Directory name for a stored bundle: zero-padded version + '-' + 12 hex of the content
// address ("000000000042-3f2a9c1b7d4e"), so two bundles never share a directory.
std::string versioned_dir_name(const Bundle& bundle);

// ---------------------------------------------------------------------------------------
// Verification and signing

struct VerifyOptions {
    Limits limits;
    // PEM Ed25519 public key. Empty: signatures are not checked. Set: the bundle must carry a
    // valid signature by this key.
    std::string public_key_pem;
    // Stored / deployed bundles have version > 0; a push (picketctl) has 0.
    bool require_version = true;
};

// Rules (scan_rule: enabled or commented out) in the bundle's rules/*.rules files.
uint64_t count_rules(const Bundle& bundle);

// Checks the manifest (name [A-Za-z0-9._-]{1,64}, text fields valid UTF-8 and <= 4096 bytes,
// version rules, sorted-unique safe paths, no path that is both a file and a directory, sha256
// syntax), limits (files, bytes, then rules once the content is intact), that files and manifest
// entries correspond one to one with equal size and sha256, at least one rules/*.rules file,
// and the signature. Reports every problem: the message is one line per problem ("\n"
// separated); the code is the first problem's: InvalidArgument (malformed), DataLoss (hash /
// size mismatch, missing file), ResourceExhausted (limits), PermissionDenied (signature).
absl::Status verify_bundle(const Bundle& bundle, const VerifyOptions& options = {});

struct KeyPair {
    std::string private_pem;  // PKCS#8 "PRIVATE KEY"
    std::string public_pem;   // SubjectPublicKeyInfo "PUBLIC KEY"
};
absl::StatusOr<KeyPair> generate_key_pair();
// First 16 hex of SHA-256 of the raw 32-byte public key; accepts a public or private PEM.
absl::StatusOr<std::string> key_id(std::string_view pem);
// Sets signature (Ed25519 over canonical_manifest) and signing_key_id. Sign after the manifest
// is final: any later change of a signed field invalidates it (version may still be assigned).
absl::Status sign_bundle(Bundle& bundle, std::string_view private_key_pem);

// ---------------------------------------------------------------------------------------
// Rules text

struct RuleId {
    uint32_t gid = 1;
    uint32_t sid = 0;
    auto operator<=>(const RuleId&) const = default;
    std::string to_string() const;  // "gid:sid"
};

struct ScannedRule {
    RuleId id;
    uint32_t rev = 0;
    bool enabled = true;  // false: commented out ("# alert ...")
    std::string body;     // the rule without comment prefix and surrounding whitespace
};

// Recognises a (possibly commented-out) rule: optional '#'s, an action keyword (alert, pass,
// drop, reject, rejectsrc, rejectdst, rejectboth, sdrop, log), options in parentheses with a
// numeric sid (gid defaults to 1). nullopt for anything else (comments, blank lines, rules
// without a sid). Quotes and backslash escapes inside option values are honoured.
std::optional<ScannedRule> scan_rule(std::string_view line);

// Every rule scan_rule recognises in the text of a rules file, in order, over logical lines:
// backslash continuations joined, and a live Snort 3 rule spanning lines without '\' joined
// up to the ')' closing its options (README.md "Rule recognition").
std::vector<ScannedRule> scan_rules(std::string_view rules_file_text);

// ---------------------------------------------------------------------------------------
// Rule syntax (config.yaml "rule-syntax")

// The language of a rules file's rules on the sensor: kAuto decides per rule (Suricata first,
// then Snort 3 when the text uses Snort 3-only syntax).
enum class RuleSyntax : uint8_t { kAuto, kSuricata, kSnort3 };
// "auto", "suricata", "snort3".
std::string_view rule_syntax_name(RuleSyntax syntax);

// config.yaml's `rule-syntax` map (key: a rules file "rules/a.rules", or a directory prefix
// ending in '/' covering every rules file under it; value: snort3, suricata or auto) resolved
// for every rules/*.rules file of the bundle: an exact file key first, else the longest
// directory key, else kAuto. InvalidArgument naming the key, one line per problem, when it is
// not a map, a value is unknown, or a key names no rules file or directory of the bundle
// (`config.yaml: rule-syntax: "rules/x.rules": no such rule file in the bundle`), or when
// config.yaml does not parse.
absl::StatusOr<std::map<std::string, RuleSyntax>> rule_syntax_by_file(const Bundle& bundle);

// ---------------------------------------------------------------------------------------
// Tuning overlay (tuning.yaml)

struct ModifyEntry {
    RuleId id;
    std::string from;  // PCRE2 pattern
    std::string to;    // PCRE2 substitution text ($1, ${name}, $$)
};
struct SuppressEntry {
    RuleId id;
    std::string track;  // "" (suppress entirely), by_src, by_dst, by_either
    std::string ip;     // required with track
};
struct ThresholdEntry {
    RuleId id;
    std::string type;   // limit, threshold, both
    std::string track;  // by_src, by_dst, by_rule, by_both
    uint32_t count = 0;
    uint32_t seconds = 0;
};
struct Tuning {
    std::vector<RuleId> enable;
    std::vector<RuleId> disable;
    std::vector<ModifyEntry> modify;
    std::vector<SuppressEntry> suppress;
    std::vector<ThresholdEntry> threshold;
};

// Parses tuning.yaml. A sid is written N, "N" or "G:N" (enable/disable lists) or as `sid:`
// (plus optional `gid:`) in the entry maps. Structural errors name the entry
// ("tuning.yaml: threshold[1]: missing 'count'").
absl::StatusOr<Tuning> parse_tuning(std::string_view yaml_text);

struct TuningReport {
    std::vector<std::string> changes;   // "disabled 1:2010935 (rules/a.rules:12)"
    std::vector<std::string> warnings;  // no-ops: "enable[0]: 1:5 is already enabled"
    std::vector<std::string> errors;    // unknown sid, bad regex, regex without match, ...
    bool ok() const { return errors.empty(); }
};

struct TuningResult {
    std::map<std::string, std::string> rules;  // path -> resulting text (every input file)
    std::string threshold_config;              // suppress / threshold lines from the tuning
    TuningReport report;
};

// Applies enable, disable, modify (in that order) to every occurrence of each sid, and renders
// suppress / threshold entries as threshold.config lines. Unchanged rule lines stay
// byte-identical. An entry in error changes nothing; the others still apply.
TuningResult apply_tuning(const std::map<std::string, std::string>& rules_text_by_file,
                          const Tuning& tuning);

// What the sensor loads for a bundle: its rules/*.rules files with tuning.yaml applied (if
// present), and threshold.config = the bundle's threshold.config followed by the tuning's
// lines. Error only when tuning.yaml does not parse; tuning errors are in report.errors.
absl::StatusOr<TuningResult> effective_rules(const Bundle& bundle);

// Push-time / apply-time content check: config.yaml (if any) is a YAML map whose rule-syntax
// (if any) passes rule_syntax_by_file, tuning.yaml parses and applies without error. The message
// lists every problem, one per line.
absl::Status check_content(const Bundle& bundle);

// Writes effective rules (rules/<file> and threshold.config) into a new directory with the
// same atomic protocol as write_bundle_dir.
absl::Status write_effective_dir(const TuningResult& result, const std::filesystem::path& dir);

// ---------------------------------------------------------------------------------------
// Diff

// Rules added / removed / changed by (gid, sid) over the bundles' own rules/*.rules (a changed
// text or enabled state), YAML key changes of config.yaml and tuning.yaml, and file changes by
// sha256. Versions are copied from the manifests. Error when a YAML file does not parse.
absl::StatusOr<picket::v1::BundleDiff> diff_bundles(const Bundle& from, const Bundle& to);

}  // namespace picket::bundle
