// The loader's report: a rule's diagnostic line and the load summary `-T` prints (parser.h).
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sensor/detect/parser.h"

namespace picket::sensor::detect {

std::string RuleDiagnostic::to_string() const {
    return file + ":" + std::to_string(line) + " sid " + std::to_string(sid) + ": " + reason;
}

std::string LoadSummary::to_string() const {
    std::ostringstream o;
    o << "rule files: " << files << ", rules seen: " << rules_seen << "\n";
    std::vector<std::pair<std::string, uint32_t>> reasons(skipped_by_reason.begin(),
                                                          skipped_by_reason.end());
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [reason, n] : reasons) {
        o << "  skipped (" << reason << "): " << n << "\n";
    }
    char times[256];
    std::snprintf(times, sizeof(times), "parse %.1f ms, compile %.1f ms, memory %.1f MiB\n",
                  parse_ms, compile_ms, static_cast<double>(memory_bytes) / (1024.0 * 1024.0));
    o << times;
    // (A summary that did not time its compile, e.g. one a test or a caller filled by hand,
    // has no phases line rather than one of zeros.)
    if (fast_pattern_ms + grouping_ms + hyperscan_ms + finish_ms > 0 || reused_databases > 0) {
        std::snprintf(times, sizeof(times),
                      "  compile phases: fast patterns %.1f ms, grouping %.1f ms, hyperscan %.1f "
                      "ms (%u threads, %.1f ms cpu, slowest %.1f ms, %u reused), rest %.1f ms\n",
                      fast_pattern_ms, grouping_ms, hyperscan_ms, compile_threads, hyperscan_cpu_ms,
                      slowest_database_ms, reused_databases, finish_ms);
        o << times;
    }
    if (peak_rss_bytes != 0) {
        std::snprintf(times, sizeof(times), "  peak memory during the load %.1f MiB%s\n",
                      static_cast<double>(peak_rss_bytes) / (1024.0 * 1024.0),
                      peak_rss_since_start ? " (the process's peak so far)" : "");
        o << times;
    }
    o << "groups " << groups << ", hyperscan databases " << hs_databases
      << ", rules without fast pattern " << no_fast_pattern_rules << "\n";
    if (app_layer_rules != 0) {
        o << "  " << app_layer_rules
          << " loaded rules need an app-layer protocol (http, dns, tls, ...) and wait for it\n";
    }
    if (mpm_algo == MpmAlgo::kNone) {
        o << "  mpm-algo none: no prefilter, every rule of a group is checked on every packet\n";
    }
    if (pcre_without_content_rules != 0) {
        o << "  " << pcre_without_content_rules
          << (pcre_without_content_rules == 1 ? " rule runs" : " rules run")
          << " a pcre without a content anchor (warnings below)\n";
    }
    for (const auto& w : warnings) {
        o << "warning: " << w << "\n";
    }
    o << "rules: " << loaded << " loaded, " << skipped << " skipped";
    return o.str();
}

}  // namespace picket::sensor::detect
