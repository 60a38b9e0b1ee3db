// tag:<session|host>[,<count>,<packets|seconds|bytes>[,<src|dst>]] (Suricata 7). Parsed and
// checked; the tagging itself (logging the packets that follow an alert) is not done, so the
// rule alerts as without the keyword (--list-keywords: partly).
#include "sensor/detect/keywords/header_util.h"
#include "sensor/detect/keywords/keywords.h"

namespace picket::sensor::detect::keywords {

bool parse_tag(ParseState&, std::string_view value, bool has_value, std::string* error) {
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
    const bool host = parts[0] == "host";
    if (!host && parts[0] != "session") {
        *error = "tag: invalid type '" + std::string(parts[0]) + "' (session or host)";
        return false;
    }
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
        if (parts[2] != "packets" && parts[2] != "seconds" && parts[2] != "bytes") {
            *error =
                "tag: invalid metric '" + std::string(parts[2]) + "' (packets, seconds or bytes)";
            return false;
        }
    }
    if (n == 4 && parts[3] != "src" && parts[3] != "dst") {
        *error = "tag: invalid direction '" + std::string(parts[3]) + "' (src or dst)";
        return false;
    }
    return true;
}

}  // namespace picket::sensor::detect::keywords
