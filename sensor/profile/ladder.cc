// Ladder files: parsing, checking, ${variable} substitution and the steps' configurations.
#include "sensor/profile/profile.h"

#include <pcap/dlt.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace picket::sensor::profile {
namespace {

// All that picket-sensor reads from its configuration: main.cc makes the same two calls.
engine::SensorConfig read_config(const Config& c, bool require_input) {
    engine::SensorConfig sc = engine::load_sensor_config(c, require_input);
    detect::read_detect_settings(c, &sc.detect);
    return sc;
}

int line_of(const YAML::Node& n) {
    return n.Mark().line >= 0 ? n.Mark().line + 1 : 1;
}

// "FILE:LINE: step N (NAME): " -- every ladder message starts so.
std::string where(const std::string& source, int line, size_t index, const std::string& name) {
    std::string w = source + ":" + std::to_string(line) + ": step " + std::to_string(index + 1);
    if (!name.empty()) {
        w += " (" + name + ")";
    }
    return w + ": ";
}

bool valid_variable_name(std::string_view name) {
    if (name.empty()) {
        return false;
    }
    for (char c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
            return false;
        }
    }
    return true;
}

// The ${NAME} references in `text`, in order. A malformed one ("${", "${}", "${a b}") sets
// *bad to its text and ends the scan.
std::vector<std::string> references(const std::string& text, std::string* bad) {
    std::vector<std::string> names;
    size_t pos = 0;
    while ((pos = text.find("${", pos)) != std::string::npos) {
        const size_t end = text.find('}', pos + 2);
        if (end == std::string::npos) {
            *bad = text.substr(pos);
            break;
        }
        const std::string name = text.substr(pos + 2, end - pos - 2);
        if (!valid_variable_name(name)) {
            *bad = text.substr(pos, end - pos + 1);
            break;
        }
        names.push_back(name);
        pos = end + 1;
    }
    return names;
}

// Every scalar of a value, keys of nested mappings excepted.
void scalars(const YAML::Node& n, std::vector<std::string>* out) {
    if (n.IsScalar()) {
        out->push_back(n.Scalar());
    } else if (n.IsSequence()) {
        for (const auto& item : n) {
            scalars(item, out);
        }
    } else if (n.IsMap()) {
        for (const auto& kv : n) {
            scalars(kv.second, out);
        }
    }
}

// Whether picket-sensor reads `key`: it does when read_config rejects a value no
// getter accepts (a list holding a mapping) at that key. This follows the sensor's own
// reading code, so a key added there is known here without a list to keep in step.
bool sensor_reads(const std::string& key) {
    Config probe;
    YAML::Node inner(YAML::NodeType::Map);
    inner["probe"] = "probe";
    YAML::Node marker(YAML::NodeType::Sequence);
    marker.push_back(inner);
    try {
        probe.set_value(key, marker);
    } catch (const ConfigError&) {
        return false;
    }
    try {
        read_config(probe, /*require_input=*/false);
    } catch (const std::exception&) {
        return true;
    }
    return false;
}

// Flattens a step's `set` mapping into leaf settings; "" when fine, else the message.
std::string flatten(const YAML::Node& map, const std::string& prefix, std::vector<Setting>* out,
                    const std::string& at_source, size_t index, const std::string& name) {
    for (const auto& kv : map) {
        const int line = line_of(kv.first);
        const std::string here = where(at_source, line, index, name);
        if (!kv.first.IsScalar() || kv.first.Scalar().empty()) {
            return here + "set: expected config keys (KEY: VALUE)";
        }
        const std::string key = prefix + kv.first.Scalar();
        if (key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos) {
            return here + key + ": empty part in the key";
        }
        if (kv.second.IsMap() && kv.second.size() != 0) {
            std::string e = flatten(kv.second, key + ".", out, at_source, index, name);
            if (!e.empty()) {
                return e;
            }
            continue;
        }
        for (const Setting& s : *out) {
            if (s.key == key) {
                return here + key + ": set twice in this step (line " + std::to_string(s.line) +
                       ")";
            }
        }
        std::vector<std::string> texts;
        scalars(kv.second, &texts);
        for (const auto& t : texts) {
            std::string bad;
            references(t, &bad);
            if (!bad.empty()) {
                return here + key + ": bad variable reference '" + bad +
                       "': expected ${NAME} (letters, digits, '_', '-', '.')";
            }
        }
        out->push_back(Setting{key, kv.second, line});
    }
    return "";
}

// The values of a variable, or none when it is absent or holds only empty strings.
const std::vector<std::string>* lookup(const Variables& vars, const std::string& name) {
    auto it = vars.find(name);
    if (it == vars.end()) {
        return nullptr;
    }
    for (const auto& v : it->second) {
        if (!v.empty()) {
            return &it->second;
        }
    }
    return nullptr;
}

// `value` with its ${variables} replaced (a new tree; the ladder's stays as written).
// *missing: the first unset variable. *error: a list variable inside a longer string.
YAML::Node substitute(const YAML::Node& value, const Variables& vars, std::string* missing,
                      std::string* error) {
    if (value.IsScalar()) {
        const std::string& s = value.Scalar();
        std::string bad;
        const std::vector<std::string> names = references(s, &bad);
        if (names.empty()) {
            return YAML::Node(s);
        }
        if (names.size() == 1 && s == "${" + names[0] + "}") {
            const auto* values = lookup(vars, names[0]);
            if (values == nullptr) {
                *missing = names[0];
                return YAML::Node();
            }
            if (values->size() == 1) {
                return YAML::Node(values->front());
            }
            YAML::Node list(YAML::NodeType::Sequence);
            for (const auto& v : *values) {
                list.push_back(v);
            }
            return list;
        }
        std::string out;
        size_t pos = 0;
        for (const auto& name : names) {
            const size_t at = s.find("${" + name + "}", pos);
            out += s.substr(pos, at - pos);
            const auto* values = lookup(vars, name);
            if (values == nullptr) {
                *missing = name;
                return YAML::Node();
            }
            if (values->size() != 1) {
                *error = "${" + name + "} holds " + std::to_string(values->size()) +
                         " values; a list can only stand for a whole value or a list item";
                return YAML::Node();
            }
            out += values->front();
            pos = at + name.size() + 3;
        }
        return YAML::Node(out + s.substr(pos));
    }
    if (value.IsSequence()) {
        YAML::Node list(YAML::NodeType::Sequence);
        for (const auto& item : value) {
            std::string bad;
            const std::vector<std::string> names =
                item.IsScalar() ? references(item.Scalar(), &bad) : std::vector<std::string>{};
            if (names.size() == 1 && item.Scalar() == "${" + names[0] + "}") {
                const auto* values = lookup(vars, names[0]);
                if (values == nullptr) {
                    *missing = names[0];
                    return YAML::Node();
                }
                for (const auto& v : *values) {
                    list.push_back(v);
                }
                continue;
            }
            list.push_back(substitute(item, vars, missing, error));
        }
        return list;
    }
    if (value.IsMap()) {
        YAML::Node map(YAML::NodeType::Map);
        for (const auto& kv : value) {
            map[kv.first.Scalar()] = substitute(kv.second, vars, missing, error);
        }
        return map;
    }
    return YAML::Node();  // null: the key falls back to its default
}

// Where a key's current value came from, when the ladder set it.
struct Origin {
    int line = 0;
    size_t index = 0;
    std::string name;
};

// A ConfigError from a step's configuration, moved to the ladder's line when the value it
// names came from the ladder. load_sensor_config's messages read "SOURCE[:LINE]: KEY: what".
std::string explain(const std::string& message, const std::string& base_source,
                    const std::map<std::string, Origin>& origins, const std::string& ladder_source,
                    const PlannedStep& step, size_t index) {
    std::string rest = message;
    if (rest.rfind(base_source + ":", 0) == 0) {
        rest = rest.substr(base_source.size() + 1);
        size_t i = 0;
        while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) {
            ++i;
        }
        if (i > 0 && i < rest.size() && rest[i] == ':') {
            rest = rest.substr(i + 1);
        }
        if (!rest.empty() && rest.front() == ' ') {
            rest = rest.substr(1);
        }
        const std::string key = rest.substr(0, rest.find(':'));
        auto it = origins.find(key);
        if (it != origins.end()) {
            return where(ladder_source, it->second.line, it->second.index, it->second.name) + rest;
        }
    }
    return where(ladder_source, step.line, index, step.name) + message;
}

}  // namespace

absl::StatusOr<Ladder> parse_ladder(std::string_view yaml, const std::string& source) {
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml));
    } catch (const YAML::Exception& e) {
        return absl::InvalidArgumentError(source + ":" + std::to_string(e.mark.line + 1) +
                                          ": bad YAML: " + e.msg);
    }
    if (!root.IsDefined() || root.IsNull()) {
        return absl::InvalidArgumentError(source +
                                          ":1: the ladder is empty: expected a list of steps, "
                                          "each {name: NAME, set: {KEY: VALUE, ...}}");
    }
    if (!root.IsSequence()) {
        return absl::InvalidArgumentError(source + ":" + std::to_string(line_of(root)) +
                                          ": expected a list of steps, each {name: NAME, set: "
                                          "{KEY: VALUE, ...}}");
    }
    if (root.size() == 0) {
        return absl::InvalidArgumentError(source + ":" + std::to_string(line_of(root)) +
                                          ": the ladder has no steps");
    }
    Ladder ladder;
    ladder.source = source;
    for (size_t i = 0; i < root.size(); ++i) {
        const YAML::Node item = root[i];
        const int line = line_of(item);
        if (!item.IsMap()) {
            return absl::InvalidArgumentError(where(source, line, i, "") +
                                              "expected a mapping {name: NAME, set: {...}}");
        }
        // A default YAML::Node counts as defined (a null), hence the flags.
        YAML::Node name_node, set_node;
        bool has_name = false, has_set = false;
        for (const auto& kv : item) {
            const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
            if (key == "name") {
                name_node.reset(kv.second);
                has_name = true;
            } else if (key == "set") {
                set_node.reset(kv.second);
                has_set = true;
            } else {
                return absl::InvalidArgumentError(where(source, line_of(kv.first), i, "") + key +
                                                  ": unknown key (a step has name and set)");
            }
        }
        if (!has_name) {
            return absl::InvalidArgumentError(where(source, line, i, "") + "missing name");
        }
        if (!name_node.IsScalar() || name_node.Scalar().empty()) {
            return absl::InvalidArgumentError(
                where(source, line_of(name_node), i, "") + "name: expected a non-empty string" +
                (name_node.IsNull() ? " (YAML reads null, ~ and nothing as no value: quote it)"
                                    : ""));
        }
        Step step;
        step.name = name_node.Scalar();
        step.line = line;
        for (size_t j = 0; j < ladder.steps.size(); ++j) {
            if (ladder.steps[j].name == step.name) {
                return absl::InvalidArgumentError(where(source, line_of(name_node), i, step.name) +
                                                  "name: also the name of step " +
                                                  std::to_string(j + 1) + " (line " +
                                                  std::to_string(ladder.steps[j].line) + ")");
            }
        }
        if (has_set && !set_node.IsNull()) {
            if (!set_node.IsMap()) {
                return absl::InvalidArgumentError(
                    where(source, line_of(set_node), i, step.name) +
                    "set: expected a mapping of config keys to values");
            }
            std::string e = flatten(set_node, "", &step.set, source, i, step.name);
            if (!e.empty()) {
                return absl::InvalidArgumentError(e);
            }
            for (const Setting& s : step.set) {
                if (!sensor_reads(s.key)) {
                    return absl::InvalidArgumentError(
                        where(source, s.line, i, step.name) + s.key +
                        ": not a key picket-sensor reads (see deploy/sensor.yaml)");
                }
            }
        }
        ladder.steps.push_back(std::move(step));
    }
    return ladder;
}

absl::StatusOr<Ladder> load_ladder(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        return absl::NotFoundError(path + ": cannot open the ladder file");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return parse_ladder(ss.str(), path);
}

std::set<std::string> referenced_variables(const Ladder& ladder) {
    std::set<std::string> names;
    for (const auto& step : ladder.steps) {
        for (const auto& s : step.set) {
            std::vector<std::string> texts;
            scalars(s.value, &texts);
            for (const auto& t : texts) {
                std::string bad;
                for (auto& n : references(t, &bad)) {
                    names.insert(std::move(n));
                }
            }
        }
    }
    return names;
}

absl::StatusOr<std::vector<PlannedStep>> plan(const Ladder& ladder, Config base,
                                              const Variables& vars) {
    const std::string base_source = base.source();
    // Output costs I/O, not inspection: off unless a step measures it.
    base.set_value("outputs.eve.enabled", YAML::Node(false));
    base.set_value("outputs.fast.enabled", YAML::Node(false));
    // The keys behind a wrong input, and what is wrong.
    struct InputProblem {
        std::vector<std::string> keys;
        std::string message;
    };
    auto check_input = [](const engine::SensorConfig& sc) -> InputProblem {
        if (sc.mode != engine::CaptureMode::kPcapFile) {
            return {{"pcap-file.paths", "capture.interface"},
                    "reads from an interface; a profile reads pcap files (-r)"};
        }
        if (sc.pcap_replay) {
            return {{"pcap-file.loop", "pcap-file.rate"},
                    "pcap-file.loop / pcap-file.rate: a profile run reads the files once"};
        }
        return {};
    };
    try {
        const engine::SensorConfig sc = read_config(base, true);
        if (const InputProblem e = check_input(sc); !e.message.empty()) {
            return absl::InvalidArgumentError(base_source + ": " + e.message);
        }
    } catch (const ConfigError& e) {
        return absl::InvalidArgumentError(e.what());
    }

    std::vector<PlannedStep> out;
    std::map<std::string, Origin> origins;
    for (size_t i = 0; i < ladder.steps.size(); ++i) {
        const Step& step = ladder.steps[i];
        PlannedStep ps;
        ps.name = step.name;
        ps.line = step.line;
        std::vector<YAML::Node> values;
        for (const Setting& s : step.set) {
            std::string missing, error;
            YAML::Node v = substitute(s.value, vars, &missing, &error);
            if (!error.empty()) {
                return absl::InvalidArgumentError(where(ladder.source, s.line, i, step.name) +
                                                  s.key + ": " + error);
            }
            if (!missing.empty() && ps.skipped.empty()) {
                ps.skipped = "${" + missing + "} is not set";
            }
            values.push_back(v);
        }
        if (!ps.skipped.empty()) {
            out.push_back(std::move(ps));
            continue;
        }
        for (size_t k = 0; k < step.set.size(); ++k) {
            base.set_value(step.set[k].key, values[k]);
            origins[step.set[k].key] = Origin{step.set[k].line, i, step.name};
        }
        // The ladder line that set one of `keys` (the latest step's), else the step's own.
        auto at = [&](const std::vector<std::string>& keys) {
            Origin o{step.line, i, step.name};
            bool found = false;
            for (const auto& k : keys) {
                auto it = origins.find(k);
                if (it != origins.end() && (!found || it->second.index > o.index)) {
                    o = it->second;
                    found = true;
                }
            }
            return where(ladder.source, o.line, o.index, o.name);
        };
        try {
            ps.config = read_config(base, true);
        } catch (const ConfigError& e) {
            return absl::InvalidArgumentError(
                explain(e.what(), base_source, origins, ladder.source, ps, i));
        }
        if (const InputProblem e = check_input(ps.config); !e.message.empty()) {
            return absl::InvalidArgumentError(at(e.keys) + e.message);
        }
        // Also caught when the engine starts, but only in the middle of the runs.
        if (!ps.config.bpf.empty()) {
            try {
                const capture::BpfFilter probe(ps.config.bpf, DLT_EN10MB, ps.config.snaplen);
                (void)probe;
            } catch (const capture::CaptureError& e) {
                return absl::InvalidArgumentError(at({"capture.bpf-filter"}) +
                                                  "capture.bpf-filter: " + e.what());
            }
        }
        // A missing rule file, too.
        if (ps.config.stages >= engine::Stage::kDetect) {
            for (const auto& f : ps.config.detect.rule_files) {
                if (access(f.c_str(), R_OK) != 0) {
                    return absl::InvalidArgumentError(at({"rule-files", "default-rule-path"}) +
                                                      "rule-files: cannot read " + f);
                }
            }
        }
        out.push_back(std::move(ps));
    }
    return out;
}

}  // namespace picket::sensor::profile
