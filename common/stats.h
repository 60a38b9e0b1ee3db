// A flat snapshot of counters keyed by dotted names ("decoder.ipv4", "flow.active"), as
// Suricata names its stats. Modules fill one per worker; the exporter merges them and turns
// the names into nested JSON. Built by the stats thread, never on the packet path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace picket {

class StatsSnapshot {
public:
    // Adds n to the named value (so per-worker snapshots sum when merged).
    void add(std::string_view name, uint64_t n) { values_[std::string(name)] += n; }
    void set(std::string_view name, uint64_t n) { values_[std::string(name)] = n; }
    uint64_t get(std::string_view name) const {
        auto it = values_.find(std::string(name));
        return it == values_.end() ? 0 : it->second;
    }
    bool has(std::string_view name) const { return values_.count(std::string(name)) != 0; }
    void merge(const StatsSnapshot& other) {
        for (const auto& [k, v] : other.values_) {
            values_[k] += v;
        }
    }
    const std::map<std::string, uint64_t>& values() const { return values_; }

private:
    std::map<std::string, uint64_t> values_;
};

}  // namespace picket
