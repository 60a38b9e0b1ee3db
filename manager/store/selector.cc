// Selector parsing and matching, name and label rules.
#include "manager/store/selector.h"

#include <algorithm>

#include "common/strings.h"

namespace picket::manager::store {

using strings::cat;

namespace {

constexpr std::string_view kLabelPrefix = "label=";

bool all_of_chars(std::string_view s, std::string_view extra) {
    return std::all_of(s.begin(), s.end(), [extra](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               extra.find(c) != std::string_view::npos;
    });
}

// Spaces and tabs only (unlike strings::trim): a selector with a newline stays invalid.
std::string_view trim_blanks(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

}  // namespace

absl::Status validate_sensor_name(std::string_view name) {
    if (name.empty() || name.size() > 64 || !all_of_chars(name, "._-")) {
        return absl::InvalidArgumentError(
            cat("invalid sensor name '", name, "': use 1-64 of [A-Za-z0-9._-]"));
    }
    if (name == "all") {
        return absl::InvalidArgumentError("invalid sensor name 'all': reserved for selectors");
    }
    return absl::OkStatus();
}

absl::Status validate_label(std::string_view key, std::string_view value) {
    if (key.empty() || key.size() > 64 || !all_of_chars(key, "._/-")) {
        return absl::InvalidArgumentError(
            cat("invalid label key '", key, "': use 1-64 of [A-Za-z0-9._/-]"));
    }
    if (value.empty() || value.size() > 128 || !all_of_chars(value, "._:/@+-")) {
        return absl::InvalidArgumentError(cat("invalid value '", value, "' of label '", key,
                                              "': use 1-128 of [A-Za-z0-9._:/@+-]"));
    }
    return absl::OkStatus();
}

absl::StatusOr<Selector> Selector::parse(std::string_view text) {
    std::string_view whole = trim_blanks(text);
    if (whole.empty()) {
        return absl::InvalidArgumentError(
            "empty selector: use all, NAME[,NAME...] or label=KEY=VALUE[,label=KEY=VALUE...]");
    }
    Selector sel;
    if (whole == "all") {
        return sel;
    }
    bool any_label = false;
    bool any_name = false;
    size_t pos = 0;
    while (pos <= whole.size()) {
        size_t comma = whole.find(',', pos);
        if (comma == std::string_view::npos) {
            comma = whole.size();
        }
        std::string_view term = trim_blanks(whole.substr(pos, comma - pos));
        pos = comma + 1;
        if (term.empty()) {
            return absl::InvalidArgumentError(
                cat("selector '", whole, "': empty term between commas"));
        }
        if (term == "all") {
            return absl::InvalidArgumentError(
                cat("selector '", whole, "': 'all' cannot be combined with other terms"));
        }
        if (term.substr(0, kLabelPrefix.size()) == kLabelPrefix) {
            std::string_view kv = term.substr(kLabelPrefix.size());
            size_t eq = kv.find('=');
            if (eq == std::string_view::npos) {
                return absl::InvalidArgumentError(
                    cat("selector '", whole, "': term '", term, "' must be label=KEY=VALUE"));
            }
            std::string_view key = kv.substr(0, eq);
            std::string_view value = kv.substr(eq + 1);
            if (absl::Status st = validate_label(key, value); !st.ok()) {
                return absl::InvalidArgumentError(cat("selector '", whole, "': ", st.message()));
            }
            for (const auto& [k, v] : sel.labels_) {
                if (k == key && v != value) {
                    return absl::InvalidArgumentError(cat("selector '", whole, "': label '", key,
                                                          "' required to equal both '", v,
                                                          "' and '", value, "'"));
                }
            }
            sel.labels_.emplace_back(key, value);
            any_label = true;
        } else {
            if (absl::Status st = validate_sensor_name(term); !st.ok()) {
                return absl::InvalidArgumentError(
                    cat("selector '", whole, "': ", st.message(),
                        " (selectors: all, NAME[,NAME...], label=KEY=VALUE[,label=KEY=VALUE...])"));
            }
            sel.names_.emplace_back(term);
            any_name = true;
        }
    }
    if (any_label && any_name) {
        return absl::InvalidArgumentError(
            cat("selector '", whole, "': cannot mix sensor names and labels"));
    }
    sel.kind_ = any_label ? Kind::kLabels : Kind::kNames;
    std::sort(sel.names_.begin(), sel.names_.end());
    sel.names_.erase(std::unique(sel.names_.begin(), sel.names_.end()), sel.names_.end());
    std::sort(sel.labels_.begin(), sel.labels_.end());
    sel.labels_.erase(std::unique(sel.labels_.begin(), sel.labels_.end()), sel.labels_.end());
    return sel;
}

bool Selector::matches(std::string_view name,
                       const std::map<std::string, std::string>& labels) const {
    switch (kind_) {
        case Kind::kAll:
            return true;
        case Kind::kNames:
            return std::binary_search(names_.begin(), names_.end(), name);
        case Kind::kLabels:
            return std::all_of(labels_.begin(), labels_.end(), [&labels](const auto& kv) {
                auto it = labels.find(kv.first);
                return it != labels.end() && it->second == kv.second;
            });
    }
    return false;
}

std::string Selector::to_string() const {
    switch (kind_) {
        case Kind::kAll:
            return "all";
        case Kind::kNames:
            return strings::join(names_, ",");
        case Kind::kLabels: {
            std::string out;
            for (const auto& [k, v] : labels_) {
                out += cat(out.empty() ? "" : ",", kLabelPrefix, k, "=", v);
            }
            return out;
        }
    }
    return {};
}

}  // namespace picket::manager::store
