// threshold: type limit|threshold|both, track by_src|by_dst|by_rule|by_both|by_flow, count N,
//            seconds M
// threshold: type backoff, track by_flow, count N, multiplier M
// detection_filter: track by_src|by_dst|by_rule|by_both|by_flow, count N, seconds M
// Pairs in any order, each exactly once. At most one of each per rule, and as in Suricata a
// rule cannot have both. backoff counts per flow only and takes a multiplier instead of
// seconds (Suricata 8's documentation). The runtime lives in sensor/detect/threshold.h.
#include "sensor/detect/keywords/keywords.h"

#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/threshold.h"

namespace picket::sensor::detect::keywords {

namespace {

bool parse_spec(const char* kw, std::string_view value, bool has_value, bool want_type,
                ThresholdSpec* out, std::string* error) {
    std::string_view s = unquote(value);
    const std::string k(kw);
    if (!has_value || s.empty()) {
        *error = k + ": a value is required";
        return false;
    }
    ThresholdSpec spec;
    bool have_type = false, have_track = false, have_count = false, have_seconds = false,
         have_multiplier = false;
    while (true) {
        size_t comma = s.find(',');
        std::string_view item = trim_blanks(s.substr(0, comma));
        size_t sp = item.find_first_of(" \t");
        std::string_view name = item.substr(0, sp);
        std::string_view arg =
            sp == std::string_view::npos ? std::string_view() : trim_blanks(item.substr(sp));
        bool* seen = nullptr;
        if (name == "type" && want_type) {
            seen = &have_type;
            if (!parse_threshold_type(arg, &spec.type)) {
                *error = k + ": invalid type '" + std::string(arg) +
                         "' (expected limit, threshold, both or backoff)";
                return false;
            }
        } else if (name == "track") {
            seen = &have_track;
            if (!parse_track_by(arg, &spec.track)) {
                *error = k + ": invalid track '" + std::string(arg) +
                         "' (expected by_src, by_dst, by_rule, by_both or by_flow)";
                return false;
            }
        } else if (name == "count" || name == "seconds") {
            const bool is_count = name == "count";
            seen = is_count ? &have_count : &have_seconds;
            uint64_t v = 0;
            if (!parse_decimal(arg, UINT32_MAX, &v) || (is_count && v == 0)) {
                *error = k + ": invalid " + std::string(name) + " '" + std::string(arg) + "' (" +
                         (is_count ? "1" : "0") + " to 4294967295)";
                return false;
            }
            (is_count ? spec.count : spec.seconds) = static_cast<uint32_t>(v);
        } else if (name == "multiplier" && want_type) {
            seen = &have_multiplier;
            uint64_t v = 0;
            if (!parse_decimal(arg, UINT32_MAX, &v) || v < 2) {
                *error = k + ": invalid multiplier '" + std::string(arg) + "' (2 to 4294967295)";
                return false;
            }
            spec.multiplier = static_cast<uint32_t>(v);
        } else {
            *error = k + ": unknown option '" + std::string(name) + "'";
            return false;
        }
        if (*seen) {
            *error = k + ": '" + std::string(name) + "' given twice";
            return false;
        }
        *seen = true;
        if (comma == std::string_view::npos) {
            break;
        }
        s = s.substr(comma + 1);
    }
    if (want_type && have_type && spec.type == ThresholdType::kBackoff) {
        if (have_track && spec.track != TrackBy::kFlow) {
            *error = k + ": type backoff needs track by_flow";
            return false;
        }
        if (have_seconds) {
            *error = k + ": type backoff takes a multiplier, not seconds";
            return false;
        }
    } else if (have_multiplier) {
        *error = k + ": multiplier is only for type backoff";
        return false;
    }
    const bool backoff = want_type && have_type && spec.type == ThresholdType::kBackoff;
    const char* missing = want_type && !have_type       ? "type"
                          : !have_track                 ? "track"
                          : !have_count                 ? "count"
                          : backoff && !have_multiplier ? "multiplier"
                          : !backoff && !have_seconds   ? "seconds"
                                                        : nullptr;
    if (missing != nullptr) {
        *error = k + ": missing '" + missing + "'";
        return false;
    }
    if (backoff) {
        spec.seconds = 0;
    }
    if (!want_type) {
        spec.type = ThresholdType::kDetectionFilter;
    }
    *out = spec;
    return true;
}

// threshold / detection_filter: at most one of each per rule, and never both.
bool set_spec(const char* kw, const char* other_kw, bool want_type, bool* has, ThresholdSpec* out,
              bool other_has, std::string_view value, bool has_value, std::string* error) {
    const std::string k(kw);
    if (*has) {
        *error = k + ": only one " + k + " per rule";
        return false;
    }
    if (other_has) {
        *error = k + ": cannot be combined with " + other_kw;
        return false;
    }
    ThresholdSpec spec;
    if (!parse_spec(kw, value, has_value, want_type, &spec, error)) {
        return false;
    }
    *out = spec;
    *has = true;
    return true;
}

}  // namespace

bool parse_threshold(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    Rule& r = *st.rule;
    return set_spec("threshold", "detection_filter", true, &r.has_threshold, &r.threshold,
                    r.has_detection_filter, value, has_value, error);
}

bool parse_detection_filter(ParseState& st, std::string_view value, bool has_value,
                            std::string* error) {
    Rule& r = *st.rule;
    return set_spec("detection_filter", "threshold", false, &r.has_detection_filter,
                    &r.detection_filter, r.has_threshold, value, has_value, error);
}

}  // namespace picket::sensor::detect::keywords
