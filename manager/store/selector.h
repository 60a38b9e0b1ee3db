// Sensor selectors and the rules for sensor names and labels. SQLite-free (library
// picket_selector): picketctl checks its arguments with it, the store resolves selectors.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace picket::manager::store {

// ---- Selectors: `all` | `NAME[,NAME...]` | `label=KEY=VALUE[,label=KEY=VALUE...]` (AND).
class Selector {
public:
    enum class Kind { kAll, kNames, kLabels };
    // INVALID_ARGUMENT with the offending term for anything else.
    static absl::StatusOr<Selector> parse(std::string_view text);

    Kind kind() const { return kind_; }
    const std::vector<std::string>& names() const { return names_; }
    const std::vector<std::pair<std::string, std::string>>& labels() const { return labels_; }
    bool matches(std::string_view name, const std::map<std::string, std::string>& labels) const;
    std::string to_string() const;  // canonical form, stored with deployments

private:
    Kind kind_ = Kind::kAll;
    std::vector<std::string> names_;                           // sorted, unique
    std::vector<std::pair<std::string, std::string>> labels_;  // sorted, unique keys
};

// Sensor names: 1-64 of [A-Za-z0-9._-], not "all". Label keys: 1-64 of [A-Za-z0-9._/-];
// label values: 1-128 of [A-Za-z0-9._:/@+-]. So every sensor and label can be selected.
absl::Status validate_sensor_name(std::string_view name);
absl::Status validate_label(std::string_view key, std::string_view value);

}  // namespace picket::manager::store
