#include "sensor/output/output.h"

#include "common/time_util.h"

namespace picket::sensor::output {

nlohmann::json nest_stats(const StatsSnapshot& stats) {
    nlohmann::json root = nlohmann::json::object();
    for (const auto& [name, value] : stats.values()) {
        nlohmann::json* cur = &root;
        size_t start = 0;
        while (true) {
            size_t dot = name.find('.', start);
            std::string part =
                name.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            if (dot == std::string::npos) {
                if (cur->contains(part) && (*cur)[part].is_object()) {
                    (*cur)[part]["_value"] = value;
                } else {
                    (*cur)[part] = value;
                }
                break;
            }
            nlohmann::json& next = (*cur)[part];
            if (!next.is_object()) {
                nlohmann::json leaf = next;
                next = nlohmann::json::object();
                if (!leaf.is_null()) {
                    next["_value"] = leaf;
                }
            }
            cur = &next;
            start = dot + 1;
        }
    }
    return root;
}

nlohmann::json make_stats_event(int64_t ts_ns, int64_t uptime_sec, const StatsSnapshot& stats,
                                const Rates& rates) {
    nlohmann::json s = nest_stats(stats);
    s["uptime"] = uptime_sec;
    nlohmann::json workers = nlohmann::json::array();
    for (const auto& w : rates.workers) {
        workers.push_back({{"worker", w.worker},
                           {"pkts", w.packets},
                           {"bytes", w.bytes},
                           {"pkts_per_sec", w.pkts_per_sec},
                           {"mbit_per_sec", w.mbit_per_sec}});
    }
    s["rates"] = {{"interval_sec", rates.interval_sec},
                  {"pkts_per_sec", rates.pkts_per_sec},
                  {"mbit_per_sec", rates.mbit_per_sec},
                  {"workers", workers}};
    return {{"timestamp", format_eve_timestamp(ts_ns)}, {"event_type", "stats"}, {"stats", s}};
}

}  // namespace picket::sensor::output
