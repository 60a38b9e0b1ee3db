// libFuzzer target for the rule set's side files (sensor/detect/parser.h):
// classification.config and reference.config text, then a rule whose classtype and
// reference keywords name what the files defined (the table lookups the rule parser does),
// and the address/port variable tables (address-groups / port-groups) built from the same
// text read as "NAME: value" lines, as the sensor's vars: section would give them.
// Seed corpus: tests/fuzz/corpus/classification (ET Open's classification.config,
// reference.config and the shipped variable groups, via make_corpus.sh).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/detect/parser.h"

using namespace picket::sensor::detect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 65536) {
        return 0;
    }
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> errors;
    ClassificationTable classes =
        parse_classification_config(text, "classification.config", &errors);
    ReferenceTable refs = parse_reference_config(text, "reference.config", &errors);

    // A rule naming the first class and reference system defined.
    std::string rule = "alert tcp any any -> any any (msg:\"x\"; ";
    if (!classes.entries.empty()) {
        const std::string& name = classes.entries.begin()->first;
        if (classes.find(name) == nullptr) {
            __builtin_trap();
        }
        rule += "classtype:" + name + "; ";
    }
    if (!refs.url_prefix.empty()) {
        rule += "reference:" + refs.url_prefix.begin()->first + ",example; ";
    }
    rule += "sid:1; rev:1;)";
    ParseEnv env;
    env.classifications = &classes;
    env.file = "fuzz.rules";
    RuleDiagnostic diag;
    (void)parse_rule(rule, env, &diag);

    // "NAME: value" lines as variable groups; at most 16 of each.
    std::map<std::string, std::string> address_vars, port_vars;
    size_t start = 0;
    while (start < text.size() && address_vars.size() + port_vars.size() < 32) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            end = text.size();
        }
        const std::string_view line = text.substr(start, end - start);
        const size_t colon = line.find(':');
        if (colon != std::string_view::npos && colon > 0) {
            std::string name(line.substr(0, colon));
            std::string value(line.substr(colon + 1));
            (name.find("PORT") != std::string::npos ? port_vars : address_vars)[name] = value;
        }
        start = end + 1;
    }
    VarTable vars = VarTable::with_overrides(address_vars, port_vars);
    std::string error;
    (void)vars.validate(&error);
    return 0;
}
