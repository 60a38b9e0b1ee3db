// Rule load + compile time (issue #24, target 1): DetectEngine::load of a ruleset and of
// subsets of it, per phase, in three ways measured in the same run:
//   serial    one compile thread, no database reuse (the baseline)
//   parallel  detect.compile-threads 2 (two threads, whatever else runs), no reuse
//   reload    a second load of the same rules in the process that loaded them (the first
//             engine still alive, as during a reload): databases reused
// Each measurement runs in a forked child, so that its peak RSS is its own (VmHWM of the child,
// also the load's own peak as LoadSummary reports it). Medians of --rounds rounds.
//
//   rule_load_bench --rules DIR|FILE [--classification F] [--rounds N] [--subset-size N]
//                   [--tmp DIR]
//
// Rulesets: "all" (every rule of --rules), "packet" (the rules with no app-layer buffer whose
// source or destination address is not "any", the first --subset-size in file order: mostly
// port-specific packet rules, the subset that compiled slowest before #24: 7.8 s against
// 2.2 s for all of ET Open) and "sample" (every 11th pair of rules, up to --subset-size). The
// subsets are written under --tmp (default /tmp). Last lines: "ratio RULESET parallel/serial=R
// reload/serial=Q" (total load times) and "subset RULESET/all serial=S parallel=P". Never pass/fail
// on time: figures go to docs/performance.md.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/bench_util.h"
#include "sensor/detect/detect.h"

namespace {

using picket::sensor::detect::DetectConfig;
using picket::sensor::detect::DetectEngine;
using picket::sensor::detect::LoadSummary;

// One load's figures, as a child sends them to the parent.
struct Figures {
    double total_ms = 0;  // parse + compile, wall clock
    double parse_ms = 0;
    double fast_pattern_ms = 0;
    double grouping_ms = 0;
    double hyperscan_ms = 0;
    double hyperscan_cpu_ms = 0;
    double slowest_ms = 0;
    double finish_ms = 0;
    double load_peak_mb = 0;  // LoadSummary::peak_rss_bytes
    double child_peak_mb = 0;
    uint32_t loaded = 0;
    uint32_t databases = 0;
    uint32_t reused = 0;
    uint32_t threads = 0;
};

Figures from_summary(const LoadSummary& s) {
    Figures f;
    f.parse_ms = s.parse_ms;
    f.total_ms = s.parse_ms + s.compile_ms;
    f.fast_pattern_ms = s.fast_pattern_ms;
    f.grouping_ms = s.grouping_ms;
    f.hyperscan_ms = s.hyperscan_ms;
    f.hyperscan_cpu_ms = s.hyperscan_cpu_ms;
    f.slowest_ms = s.slowest_database_ms;
    f.finish_ms = s.finish_ms;
    f.load_peak_mb = static_cast<double>(s.peak_rss_bytes) / (1024.0 * 1024.0);
    f.loaded = s.loaded;
    f.databases = s.hs_databases;
    f.reused = s.reused_databases;
    f.threads = s.compile_threads;
    return f;
}

enum class Mode { kSerial, kParallel, kReload };
const char* mode_name(Mode m) {
    return m == Mode::kSerial ? "serial" : m == Mode::kParallel ? "parallel" : "reload";
}

// Runs one measurement in a child; false when the child failed.
bool measure(const std::vector<std::string>& files, const std::string& classification, Mode mode,
             Figures* out) {
    int fds[2];
    if (pipe(fds) != 0) {
        return false;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        DetectConfig config;
        config.rule_files = files;
        config.classification_file = classification;
        config.compile_threads = mode == Mode::kSerial ? 1 : 2;
        config.reuse_databases = mode == Mode::kReload;
        Figures f;
        try {
            LoadSummary sum;
            auto first = DetectEngine::load(config, nullptr, &sum);
            if (mode == Mode::kReload) {
                auto second = DetectEngine::load(config, nullptr, &sum);
            }
            f = from_summary(sum);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "rule_load_bench: %s\n", e.what());
            _exit(1);
        }
        f.child_peak_mb =
            static_cast<double>(picket::bench::proc_status_kb("VmHWM")) / 1024.0;  // after load
        const ssize_t n = write(fds[1], &f, sizeof(f));
        _exit(n == static_cast<ssize_t>(sizeof(f)) ? 0 : 1);
    }
    close(fds[1]);
    Figures f;
    const ssize_t n = read(fds[0], &f, sizeof(f));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (n != static_cast<ssize_t>(sizeof(f)) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return false;
    }
    *out = f;
    return true;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    if (v.empty()) {
        return 0;
    }
    return v.size() % 2 != 0 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The median of each figure over the rounds.
Figures median_of(const std::vector<Figures>& runs) {
    auto med = [&](double Figures::*field) {
        std::vector<double> v;
        for (const auto& f : runs) {
            v.push_back(f.*field);
        }
        return median(v);
    };
    Figures m = runs.front();
    m.total_ms = med(&Figures::total_ms);
    m.parse_ms = med(&Figures::parse_ms);
    m.fast_pattern_ms = med(&Figures::fast_pattern_ms);
    m.grouping_ms = med(&Figures::grouping_ms);
    m.hyperscan_ms = med(&Figures::hyperscan_ms);
    m.hyperscan_cpu_ms = med(&Figures::hyperscan_cpu_ms);
    m.slowest_ms = med(&Figures::slowest_ms);
    m.finish_ms = med(&Figures::finish_ms);
    m.load_peak_mb = med(&Figures::load_peak_mb);
    m.child_peak_mb = med(&Figures::child_peak_mb);
    return m;
}

bool is_rule_line(const std::string& line) {
    for (const char* a : {"alert ", "drop ", "pass ", "reject "}) {
        if (line.rfind(a, 0) == 0) {
            return true;
        }
    }
    return false;
}

// A rule that inspects an app-layer buffer (such rules wait for the app layer, join no port
// group and so cannot show the port-group cost).
bool uses_app_buffer(const std::string& line) {
    for (const char* k : {"http.", "http_", "tls.", "dns.", "file.data", "file_data", "ja3"}) {
        if (line.find(k) != std::string::npos) {
            return true;
        }
    }
    return false;
}

// Writes the two subsets; returns their paths (packet, sample).
std::pair<std::string, std::string> write_subsets(const std::vector<std::string>& files,
                                                  const std::string& dir, size_t size) {
    std::vector<std::string> ports, sample;
    size_t index = 0;
    for (const auto& file : files) {
        std::ifstream in(file);
        std::string line;
        while (std::getline(in, line)) {
            if (!is_rule_line(line)) {
                continue;
            }
            ++index;
            if (index % 11 < 2 && sample.size() < size) {
                sample.push_back(line);
            }
            std::istringstream header(line);
            std::string action, proto, src, sport, dir_tok, dst;
            header >> action >> proto >> src >> sport >> dir_tok >> dst;
            if ((src != "any" || dst != "any") && !uses_app_buffer(line) && ports.size() < size) {
                ports.push_back(line);
            }
        }
    }
    auto write = [&](const std::string& name, const std::vector<std::string>& lines) {
        const std::string path = dir + "/rule_load_bench." + std::to_string(getpid()) + "." + name;
        std::ofstream out(path);
        for (const auto& l : lines) {
            out << l << "\n";
        }
        return path;
    };
    return {write("packet.rules", ports), write("sample.rules", sample)};
}

void usage() {
    std::fprintf(stderr,
                 "usage: rule_load_bench --rules DIR|FILE [--classification F] [--rounds N] "
                 "[--subset-size N] [--tmp DIR]\n");
}

}  // namespace

int main(int argc, char** argv) {
    std::string rules, classification, tmp = "/tmp";
    int rounds = 3;
    size_t subset_size = 4480;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage();
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--rules") {
            rules = value();
        } else if (a == "--classification") {
            classification = value();
        } else if (a == "--rounds") {
            rounds = std::max(1, std::atoi(value().c_str()));
        } else if (a == "--subset-size") {
            subset_size = static_cast<size_t>(std::max(1, std::atoi(value().c_str())));
        } else if (a == "--tmp") {
            tmp = value();
        } else {
            usage();
            return 2;
        }
    }
    if (rules.empty()) {
        usage();
        return 2;
    }
    const std::vector<std::string> all = picket::bench::rule_files(rules);
    const auto [ports, sample] = write_subsets(all, tmp, subset_size);
    struct Set {
        std::string name;
        std::vector<std::string> files;
    };
    const std::vector<Set> sets = {{"all", all}, {"packet", {ports}}, {"sample", {sample}}};
    const Mode modes[] = {Mode::kSerial, Mode::kParallel, Mode::kReload};
    std::printf("rule_load_bench: %s, %d rounds (medians), hardware threads %u\n", rules.c_str(),
                rounds, std::thread::hardware_concurrency());
    std::printf(
        "| ruleset | mode | rules | total ms | parse | fast patterns | grouping | hyperscan "
        "(threads, cpu ms, slowest) | rest | databases (reused) | peak RSS MiB (load) |\n");
    std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    Figures results[3][3];
    int rc = 0;
    for (size_t s = 0; s < sets.size(); ++s) {
        std::vector<Figures> runs[3];
        // Interleaved, so that a drift of the machine's speed falls on every mode alike.
        for (int r = 0; r < rounds; ++r) {
            for (int m = 0; m < 3; ++m) {
                Figures f;
                if (!measure(sets[s].files, classification, modes[m], &f)) {
                    std::fprintf(stderr, "rule_load_bench: %s %s: the load failed\n",
                                 sets[s].name.c_str(), mode_name(modes[m]));
                    rc = 1;
                    continue;
                }
                runs[m].push_back(f);
            }
        }
        for (int m = 0; m < 3; ++m) {
            if (runs[m].empty()) {
                continue;
            }
            const Figures f = median_of(runs[m]);
            results[s][m] = f;
            std::printf(
                "| %s | %s | %u | %.0f | %.0f | %.0f | %.0f | %.0f (%u, %.0f, %.0f) | %.0f | %u "
                "(%u) | %.0f (%.0f) |\n",
                sets[s].name.c_str(), mode_name(modes[m]), f.loaded, f.total_ms, f.parse_ms,
                f.fast_pattern_ms, f.grouping_ms, f.hyperscan_ms, f.threads, f.hyperscan_cpu_ms,
                f.slowest_ms, f.finish_ms, f.databases, f.reused, f.child_peak_mb, f.load_peak_mb);
        }
    }
    for (size_t s = 0; s < sets.size(); ++s) {
        const double base = results[s][0].total_ms;
        if (base > 0) {
            std::printf("ratio %s parallel/serial=%.2f reload/serial=%.2f\n", sets[s].name.c_str(),
                        results[s][1].total_ms / base, results[s][2].total_ms / base);
        }
    }
    for (size_t s = 1; s < sets.size(); ++s) {
        if (results[0][0].total_ms > 0 && results[0][1].total_ms > 0) {
            std::printf("subset %s/all serial=%.2f parallel=%.2f\n", sets[s].name.c_str(),
                        results[s][0].total_ms / results[0][0].total_ms,
                        results[s][1].total_ms / results[0][1].total_ms);
        }
    }
    std::remove(ports.c_str());
    std::remove(sample.c_str());
    return rc;
}
