// libFuzzer target for the rule language front-end: parse_rule on arbitrary text, the loader's
// line handling (comments, '\' continuations, duplicates) and the address/port spec parsers.
// Seeds: tests/fuzz/corpus/rule_parser/.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"

using namespace picket::sensor::detect;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    static const VarTable vars = VarTable::suricata_defaults();
    static const ClassificationTable classes = parse_classification_config(
        "config classification: trojan-activity,A Network Trojan was detected,1\n"
        "config classification: policy-violation,Potential Corporate Privacy Violation,1\n"
        "config classification: misc-activity,Misc activity,3\n",
        "classification.config", nullptr);
    // Names interned by one input stay for the next ones, as across reloads in the sensor.
    static FlowbitRegistry flowbits;

    ParseEnv env;
    env.vars = &vars;
    env.classifications = &classes;
    env.flowbits = &flowbits;
    env.file = "fuzz.rules";

    RuleDiagnostic diag;
    std::unique_ptr<Rule> rule = parse_rule(text, env, &diag);
    (void)diag.to_string();

    RuleLoader loader(env);
    loader.add_text(text, "fuzz.rules");
    LoadedRules out = loader.finish();
    (void)out.summary.to_string();

    AddressSet a;
    PortSet p;
    std::string error;
    if (parse_address_spec(text, &vars, &a, &error)) {
        (void)a.contains(picket::sensor::decode::Address{});
    }
    if (parse_port_spec(text, &vars, &p, &error)) {
        (void)p.contains(80);
    }
    return 0;
}
