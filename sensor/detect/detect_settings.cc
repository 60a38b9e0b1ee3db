// The sensor.yaml keys that only detection reads (detect.mpm-algo, detect.ip-only-acl,
// detect.compile-threads, action-order, profiling.rules.*), with Suricata's names. Setup code:
// throws ConfigError like the rest of the configuration.
#include "sensor/detect/detect.h"

namespace picket::sensor::detect {

const char* mpm_algo_name(MpmAlgo algo) {
    return algo == MpmAlgo::kNone ? "none" : "hs";
}

void read_detect_settings(const Config& c, DetectConfig* out) {
    out->mpm_algo = c.get_choice("detect.mpm-algo", "hs", {"hs", "none"}) == "none"
                        ? MpmAlgo::kNone
                        : MpmAlgo::kHyperscan;
    out->ip_only_acl = c.get_bool("detect.ip-only-acl", true);
    out->compile_threads = static_cast<uint32_t>(
        c.get_int("detect.compile-threads", 0, 0, static_cast<int64_t>(kMaxCompileThreads)));
    if (c.has("action-order")) {
        // Suricata's action-order: the four actions, each once, in the order they take effect.
        const std::vector<std::string> names = c.get_string_list("action-order");
        const std::string where = c.source() + ": action-order: ";
        if (names.size() != 4) {
            throw ConfigError(where +
                              "expected the four actions pass, drop, reject and alert, "
                              "each once; got " +
                              std::to_string(names.size()));
        }
        bool seen[4] = {false, false, false, false};
        for (size_t i = 0; i < names.size(); ++i) {
            Action a = Action::kAlert;
            if (names[i] == "pass") {
                a = Action::kPass;
            } else if (names[i] == "drop") {
                a = Action::kDrop;
            } else if (names[i] == "reject") {
                a = Action::kReject;
            } else if (names[i] != "alert") {
                throw ConfigError(where + "unknown action '" + names[i] +
                                  "' (expected pass, drop, reject or alert)");
            }
            if (seen[static_cast<size_t>(a)]) {
                throw ConfigError(where + "'" + names[i] + "' given twice");
            }
            seen[static_cast<size_t>(a)] = true;
            out->action_order[i] = a;
        }
    }
    out->profiling.enabled = c.get_bool("profiling.rules.enabled", false);
    out->profiling.limit =
        static_cast<uint32_t>(c.get_int("profiling.rules.limit", 10, 1, 1000000));
    out->profiling.filename = c.get_string("profiling.rules.filename", "rule_perf.json");
    if (out->profiling.filename.empty()) {
        throw ConfigError(c.source() + ": profiling.rules.filename: must not be empty");
    }
}

}  // namespace picket::sensor::detect
