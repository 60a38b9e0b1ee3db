// The rule language front-end: address/port variables, header and option parsing, the
// classification.config / reference.config readers and the rule file loader with its
// diagnostics. Internal to sensor/detect (DetectEngine::load uses it); runs on the control
// thread that builds an engine, never on a worker. Nothing here is thread-safe by itself, but
// every function only reads its const inputs, so several loads may run in parallel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/detect/detect.h"
#include "sensor/detect/rule.h"

namespace picket::sensor::detect {

// Address and port variables ("vars: address-groups / port-groups" of suricata.yaml). Names
// are stored without the '$'. Values are rule-syntax specs, expanded when a rule uses them
// (so a variable may refer to others: EXTERNAL_NET is "!$HOME_NET").
struct VarTable {
    std::map<std::string, std::string, std::less<>> address;
    std::map<std::string, std::string, std::less<>> port;

    // Suricata 7's default suricata.yaml values (HOME_NET, EXTERNAL_NET, HTTP_PORTS, ...).
    static VarTable suricata_defaults();
    // Defaults overridden by the given groups (DetectConfig::address_vars / port_vars).
    static VarTable with_overrides(const std::map<std::string, std::string>& address_vars,
                                   const std::map<std::string, std::string>& port_vars);
    // Parses every variable; false with "address variable HOME_NET: bad address 'x'" on the
    // first bad one (Suricata refuses to start on a bad variable).
    bool validate(std::string* error) const;
};

// Address spec as Suricata accepts it: any, a.b.c.d, v6, CIDR (v4/v6), a.b.c.d/m.m.m.m,
// a-b ranges, [lists] (nested), negation (!x, ![..]) and $VARS (vars may be nullptr: no
// variables). The result is normalised: sorted, disjoint ranges. On failure *error names the
// bad part ("bad address '10.0.0.300'").
// An address as a 128-bit big-endian integer and back (ranges, intervals, increments).
unsigned __int128 address_to_u128(const decode::Address& a);
decode::Address address_from_u128(unsigned __int128 v);

bool parse_address_spec(std::string_view text, const VarTable* vars, AddressSet* out,
                        std::string* error);
// Port spec: any, N, N:M, N:, :M, [lists] (nested), negation, $VARS.
bool parse_port_spec(std::string_view text, const VarTable* vars, PortSet* out, std::string* error);

// classification.config: "config classification: shortname,description,priority".
struct Classification {
    std::string name;
    std::string description;
    int priority = 3;
};
struct ClassificationTable {
    std::map<std::string, Classification, std::less<>> entries;
    const Classification* find(std::string_view name) const;
    // load_classification_file() below, as a member.
    static ClassificationTable load(const std::string& path,
                                    std::vector<std::string>* errors = nullptr);
};
// Tolerates comments and blank lines; a malformed line is skipped and reported in *errors as
// "file:line: reason" (errors may be nullptr). A later entry replaces an earlier one.
ClassificationTable parse_classification_config(std::string_view text, std::string_view file,
                                                std::vector<std::string>* errors);
// Throws std::runtime_error("FILE: cannot open: reason") when the file cannot be read.
ClassificationTable load_classification_file(const std::string& path,
                                             std::vector<std::string>* errors);

// reference.config: "config reference: system url".
struct ReferenceTable {
    std::map<std::string, std::string, std::less<>> url_prefix;  // system -> url prefix
};
ReferenceTable parse_reference_config(std::string_view text, std::string_view file,
                                      std::vector<std::string>* errors);
ReferenceTable load_reference_file(const std::string& path, std::vector<std::string>* errors);

// `s` with ASCII A-Z lowered: keywords, option names and actions are case-insensitive in both
// rule languages (parser.cc, snort3.cc).
std::string ascii_lower(std::string_view s);

struct ParseEnv {
    const VarTable* vars = nullptr;  // nullptr: Suricata's defaults
    // nullptr or an empty table: no classification file; any classtype is accepted and
    // category stays "". Otherwise an unknown classtype fails the rule, as in Suricata.
    const ClassificationTable* classifications = nullptr;
    FlowbitRegistry* flowbits = nullptr;  // passed through to ParseState::flowbits
    bool pcre_jit = true;
    // Which language the rule text is in. kAuto: decided per rule (Suricata first, Snort 3
    // when that fails and the text uses Snort 3-only syntax); kSuricata or kSnort3: that
    // language only (a bundle's "rule-syntax" for a rule file).
    enum class Syntax : uint8_t { kAuto, kSuricata, kSnort3 };
    Syntax syntax = Syntax::kAuto;
    // Where the rule text comes from (copied into Rule::file/line and diagnostics).
    std::string file;
    uint32_t line = 0;
};

// Parses one rule (already joined onto one line; leading/trailing space allowed). On failure
// returns nullptr and fills *diag (file, line, sid if it was read, reason, category).
std::unique_ptr<Rule> parse_rule(std::string_view text, const ParseEnv& env, RuleDiagnostic* diag);

struct LoadedRules {
    std::vector<std::unique_ptr<Rule>> rules;  // in file order, duplicates removed
    LoadSummary summary;  // files, rules_seen, loaded, skipped(+by reason), diagnostics, parse_ms
};

// Accumulates rule files, then resolves duplicate (gid, sid) pairs: the higher rev wins (the
// first one on a tie), the other is skipped with category "duplicate sid".
class RuleLoader {
public:
    explicit RuleLoader(ParseEnv env);
    // Throws std::runtime_error("FILE: cannot open: reason").
    void add_file(const std::string& path);
    // The same with the file's rules parsed as `syntax` (ParseEnv::syntax for this file only).
    void add_file(const std::string& path, ParseEnv::Syntax syntax);
    // Rules from memory (bundles, tests); `file` names them in diagnostics.
    void add_text(std::string_view text, std::string_view file);
    // The same with the text's rules parsed as `syntax` (a bundle's rule-syntax, checked by the
    // manager before the sensors see it).
    void add_text(std::string_view text, std::string_view file, ParseEnv::Syntax syntax);
    LoadedRules finish();

private:
    ParseEnv env_;
    LoadedRules out_;
    double parse_ms_ = 0;
};

// Loads every file in order; never stops at a bad rule.
LoadedRules load_rule_files(const std::vector<std::string>& files, const ParseEnv& env);
// The same, a file listed in `syntax_by_file` parsed as that syntax, any other as env.syntax.
LoadedRules load_rule_files(const std::vector<std::string>& files, const ParseEnv& env,
                            const std::map<std::string, ParseEnv::Syntax>& syntax_by_file);

}  // namespace picket::sensor::detect
