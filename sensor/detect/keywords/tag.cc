// tag:<session|host>[,<count>,<packets|seconds|bytes>[,<src|dst>]] (Suricata 7). Recorded in
// Rule::tags; the engine installs the tag when the rule matches (apply_tags, ../tag.h) and
// logs the packets that follow within the limit. Without count and metric: 256 packets (the
// destination's for host). A direction is only for host tags that give count and metric, as
// Suricata's documentation says. A rule may carry several tags (at most kMaxRuleTags).
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"

namespace picket::sensor::detect::keywords {

bool parse_tag(ParseState& st, std::string_view value, bool has_value, std::string* error) {
    std::string_view s = unquote(value);
    if (!has_value || s.empty()) {
        *error = "tag: expected <session|host>[,<count>,<packets|seconds|bytes>[,<src|dst>]]";
        return false;
    }
    std::string_view parts[4];
    const int n = split_arguments(s, parts, 4, "tag", value, error);
    if (n == 0) {
        return false;
    }
    TagSpec spec;
    const bool host = parts[0] == "host";
    if (!host && parts[0] != "session") {
        *error = "tag: invalid type '" + std::string(parts[0]) + "' (session or host)";
        return false;
    }
    spec.scope = host ? TagScope::kHost : TagScope::kSession;
    if (n == 2) {
        *error = "tag: a count needs a metric (packets, seconds or bytes)";
        return false;
    }
    if (n >= 3) {
        uint64_t count = 0;
        if (!parse_decimal(parts[1], UINT32_MAX, &count)) {
            *error = "tag: invalid count '" + std::string(parts[1]) + "'";
            return false;
        }
        spec.count = static_cast<uint32_t>(count);
        if (parts[2] == "packets") {
            spec.metric = TagMetric::kPackets;
        } else if (parts[2] == "seconds") {
            spec.metric = TagMetric::kSeconds;
        } else if (parts[2] == "bytes") {
            spec.metric = TagMetric::kBytes;
        } else {
            *error =
                "tag: invalid metric '" + std::string(parts[2]) + "' (packets, seconds or bytes)";
            return false;
        }
    }
    if (n == 4) {
        if (parts[3] != "src" && parts[3] != "dst") {
            *error = "tag: invalid direction '" + std::string(parts[3]) + "' (src or dst)";
            return false;
        }
        if (!host) {
            *error = "tag: a direction (" + std::string(parts[3]) + ") is for host tags only";
            return false;
        }
        spec.host_src = parts[3] == "src";
    }
    if (st.rule->tags.size() >= kMaxRuleTags) {
        *error = "tag: more than " + std::to_string(kMaxRuleTags) + " tags in one rule";
        return false;
    }
    st.rule->tags.push_back(spec);
    return true;
}

}  // namespace picket::sensor::detect::keywords
