// Detection cost: loads every enabled rule of a ruleset (ET Open by default) and reports
// load + compile time, memory and rules loaded / skipped by reason; then the throughput of one
// worker over pcap files three ways in the same run: the pipeline without rules (the
// baseline), with the ruleset and PCRE2 JIT, and with the ruleset without JIT.
//
//   detect_bench --rules DIR_OR_FILE [--classification FILE] [--rounds N] FILE.pcap...
//
// Last line per input: detect: file=NAME base_pps=A jit_pps=B nojit_pps=C ratio=B/A
// Never pass/fail on time: figures go to docs/performance.md.
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/common/bench_util.h"
#include "common/config.h"
#include "sensor/detect/detect.h"
#include "sensor/engine/engine.h"

namespace {

using picket::sensor::engine::Engine;
using picket::sensor::engine::SensorConfig;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

struct Run {
    double pps = 0;
    double gbps = 0;
    uint64_t alerts = 0;
};

Run run_once(const std::string& pcap, const picket::sensor::detect::DetectConfig* detect) {
    picket::Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back(pcap);
    c.set_value("pcap-file.paths", list);
    c.set_value("workers", YAML::Node(1));
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    c.set_value("outputs.fast.enabled", YAML::Node(false));
    c.set_value("stats-interval", YAML::Node(3600));
    SensorConfig sc = picket::sensor::engine::load_sensor_config(c);
    if (detect != nullptr) {
        sc.detect = *detect;
    }
    Engine engine(sc);
    auto r = engine.run();
    if (r.exit_code != 0) {
        std::fprintf(stderr, "detect_bench: %s\n", r.error.c_str());
        std::exit(1);
    }
    Run out;
    out.pps = static_cast<double>(r.stats.get("decoder.pkts")) / r.elapsed_sec;
    out.gbps = static_cast<double>(r.stats.get("decoder.bytes")) * 8 / 1e9 / r.elapsed_sec;
    out.alerts = r.stats.get("detect.alert");
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::string rules, classification;
    int rounds = 3;
    std::vector<std::string> pcaps;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--rules" && i + 1 < argc) {
            rules = argv[++i];
        } else if (a == "--classification" && i + 1 < argc) {
            classification = argv[++i];
        } else if (a == "--rounds" && i + 1 < argc) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else if (a.rfind("--", 0) == 0) {
            std::fprintf(stderr,
                         "usage: detect_bench --rules DIR|FILE [--classification F] "
                         "[--rounds N] FILE.pcap...\n");
            return 2;
        } else {
            pcaps.push_back(a);
        }
    }
    if (rules.empty()) {
        std::fprintf(stderr, "detect_bench: --rules is required\n");
        return 2;
    }
    picket::sensor::detect::DetectConfig dc;
    dc.rule_files = picket::bench::rule_files(rules);
    dc.classification_file = classification;

    // Load and compile once on its own for the load figures.
    uint64_t rss0 = picket::bench::proc_status_kb("VmRSS");
    picket::sensor::detect::LoadSummary sum;
    {
        auto engine = picket::sensor::detect::DetectEngine::load(dc, nullptr, &sum);
        uint64_t rss1 = picket::bench::proc_status_kb("VmRSS");
        std::printf("ruleset: %s (%zu files)\n", rules.c_str(), dc.rule_files.size());
        std::printf("  enabled rules %u, loaded %u (%.1f%%), skipped %u\n", sum.rules_seen,
                    sum.loaded, sum.rules_seen ? 100.0 * sum.loaded / sum.rules_seen : 0.0,
                    sum.skipped);
        std::vector<std::pair<uint32_t, std::string>> reasons;
        for (const auto& [k, v] : sum.skipped_by_reason) {
            reasons.emplace_back(v, k);
        }
        std::sort(reasons.rbegin(), reasons.rend());
        for (size_t i = 0; i < reasons.size() && i < 8; ++i) {
            std::printf("    skipped %6u  %s\n", reasons[i].first, reasons[i].second.c_str());
        }
        std::printf(
            "  parse %.0f ms, compile %.0f ms, %u groups, %u Hyperscan databases, %u "
            "rules without fast pattern\n",
            sum.parse_ms, sum.compile_ms, sum.groups, sum.hs_databases, sum.no_fast_pattern_rules);
        std::printf("  memory: engine estimate %.1f MB, process RSS +%.1f MB\n",
                    static_cast<double>(sum.memory_bytes) / 1e6,
                    static_cast<double>(rss1 - rss0) / 1e3);
        std::printf(
            "load: rules_seen=%u loaded=%u skipped=%u pct=%.1f parse_ms=%.0f "
            "compile_ms=%.0f rss_mb=%.1f\n",
            sum.rules_seen, sum.loaded, sum.skipped,
            sum.rules_seen ? 100.0 * sum.loaded / sum.rules_seen : 0.0, sum.parse_ms,
            sum.compile_ms, static_cast<double>(rss1 - rss0) / 1e3);
    }
    picket::sensor::detect::DetectConfig nojit = dc;
    nojit.pcre_jit = false;
    for (const auto& pcap : pcaps) {
        std::vector<double> base, jit, nj, base_g, jit_g;
        uint64_t alerts = 0;
        for (int r = 0; r < rounds; ++r) {
            Run b = run_once(pcap, nullptr);
            Run j = run_once(pcap, &dc);
            Run n = run_once(pcap, &nojit);
            base.push_back(b.pps);
            base_g.push_back(b.gbps);
            jit.push_back(j.pps);
            jit_g.push_back(j.gbps);
            nj.push_back(n.pps);
            alerts = j.alerts;
        }
        std::string name = pcap.substr(pcap.find_last_of('/') + 1);
        double mb = median(base), mj = median(jit), mn = median(nj);
        std::printf("%s: 1 worker, median of %d rounds, %llu alerts with the ruleset\n",
                    name.c_str(), rounds, static_cast<unsigned long long>(alerts));
        std::printf("  %-26s %12.0f packets/s %7.2f Gbit/s\n", "no rules (baseline)", mb,
                    median(base_g));
        std::printf("  %-26s %12.0f packets/s %7.2f Gbit/s  %5.1f%% of baseline\n",
                    "ruleset, PCRE2 JIT", mj, median(jit_g), 100 * mj / mb);
        std::printf(
            "  %-26s %12.0f packets/s          %5.1f%% of baseline, JIT speed-up "
            "%.2fx\n",
            "ruleset, no JIT", mn, 100 * mn / mb, mj / mn);
        std::printf("detect: file=%s base_pps=%.0f jit_pps=%.0f nojit_pps=%.0f ratio=%.3f\n",
                    name.c_str(), mb, mj, mn, mj / mb);
    }
    return 0;
}
