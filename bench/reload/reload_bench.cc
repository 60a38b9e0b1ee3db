// Rule reload under load: one sensor engine replays a pcap (repeated) as fast as it can with a
// ruleset loaded, while the same ruleset is reloaded K times back to back; the same run
// without reloads is the baseline. Each run is a forked child so that its peak memory is its
// own. Prints packets processed vs expected (lost packets), the worst time a worker spent on
// one batch (the stall a reload could cause), reload durations and peak RSS.
//
//   reload_bench --rules DIR|FILE [--classification F] [--repeat N] [--reloads K]
//                [--workers W] FILE.pcap
//
// Last line: reload: lost=L stall_us=S base_stall_us=B reload_ms_median=M peak_mb=P base_peak_mb=Q
// Never pass/fail on time: figures go to docs/performance.md.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/bench_util.h"
#include "common/config.h"
#include "common/time_util.h"
#include "sensor/engine/engine.h"

namespace {

using picket::sensor::engine::Engine;

struct Figures {
    double elapsed_sec = 0;
    uint64_t packets = 0;
    uint64_t drops = 0;
    uint64_t max_batch_us = 0;
    uint64_t peak_kb = 0;
    uint32_t reloads = 0;
    double reload_ms[64] = {};
};

Figures run(const std::string& pcap, int repeat, int workers, int reloads,
            const picket::sensor::detect::DetectConfig& dc) {
    picket::Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    for (int i = 0; i < repeat; ++i) {
        list.push_back(pcap);
    }
    c.set_value("pcap-file.paths", list);
    c.set_value("workers", YAML::Node(workers));
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    c.set_value("outputs.fast.enabled", YAML::Node(false));
    c.set_value("stats-interval", YAML::Node(3600));
    auto sc = picket::sensor::engine::load_sensor_config(c);
    sc.detect = dc;
    Engine engine(sc);
    Figures f;
    picket::sensor::engine::RunResult result;
    std::thread runner([&] { result = engine.run(); });
    while (engine.collect_stats().get("decoder.pkts") == 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int i = 0; i < reloads && i < 64; ++i) {
        std::string error;
        const int64_t t0 = picket::monotonic_ns();
        if (!engine.reload(dc, nullptr, &error)) {
            std::fprintf(stderr, "reload_bench: reload failed: %s\n", error.c_str());
            std::exit(1);
        }
        f.reload_ms[f.reloads++] = static_cast<double>(picket::monotonic_ns() - t0) / 1e6;
    }
    runner.join();
    if (result.exit_code != 0) {
        std::fprintf(stderr, "reload_bench: %s\n", result.error.c_str());
        std::exit(1);
    }
    f.elapsed_sec = result.elapsed_sec;
    f.packets = result.stats.get("decoder.pkts");
    f.drops = result.stats.get("capture.kernel_drops");
    f.max_batch_us = result.stats.get("engine.max_batch_us");
    f.peak_kb = picket::bench::proc_status_kb("VmHWM");
    return f;
}

// Runs one configuration in a child process and returns its figures through a pipe.
Figures in_child(const std::string& pcap, int repeat, int workers, int reloads,
                 const picket::sensor::detect::DetectConfig& dc) {
    int fds[2];
    if (pipe(fds) != 0) {
        std::perror("pipe");
        std::exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        Figures f = run(pcap, repeat, workers, reloads, dc);
        if (write(fds[1], &f, sizeof(f)) != static_cast<ssize_t>(sizeof(f))) {
            _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    Figures f;
    ssize_t n = read(fds[0], &f, sizeof(f));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (n != static_cast<ssize_t>(sizeof(f)) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "reload_bench: child run failed\n");
        std::exit(1);
    }
    return f;
}

uint64_t count_packets(const std::string& pcap) {
    std::ifstream in(pcap, std::ios::binary);
    char hdr[24];
    in.read(hdr, 24);
    uint64_t n = 0;
    char rec[16];
    while (in.read(rec, 16)) {
        uint32_t incl;
        std::memcpy(&incl, rec + 8, 4);
        in.seekg(incl, std::ios::cur);
        ++n;
    }
    return n;
}

}  // namespace

int main(int argc, char** argv) {
    std::string rules, classification, pcap;
    int repeat = 20, reloads = 10, workers = 1;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--rules" && i + 1 < argc) {
            rules = argv[++i];
        } else if (a == "--classification" && i + 1 < argc) {
            classification = argv[++i];
        } else if (a == "--repeat" && i + 1 < argc) {
            repeat = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--reloads" && i + 1 < argc) {
            reloads = std::clamp(std::atoi(argv[++i]), 0, 64);
        } else if (a == "--workers" && i + 1 < argc) {
            workers = std::max(1, std::atoi(argv[++i]));
        } else if (a.rfind("--", 0) == 0) {
            std::fprintf(stderr,
                         "usage: reload_bench --rules DIR|FILE [--classification F] "
                         "[--repeat N] [--reloads K] [--workers W] FILE.pcap\n");
            return 2;
        } else {
            pcap = a;
        }
    }
    if (rules.empty() || pcap.empty()) {
        std::fprintf(stderr, "reload_bench: --rules and a pcap are required\n");
        return 2;
    }
    picket::sensor::detect::DetectConfig dc;
    dc.rule_files = picket::bench::rule_files(rules);
    dc.classification_file = classification;
    const uint64_t expected = count_packets(pcap) * static_cast<uint64_t>(repeat);

    Figures base = in_child(pcap, repeat, workers, 0, dc);
    Figures rel = in_child(pcap, repeat, workers, reloads, dc);
    std::vector<double> ms(rel.reload_ms, rel.reload_ms + rel.reloads);
    std::sort(ms.begin(), ms.end());
    const double med = ms.empty() ? 0 : ms[ms.size() / 2];
    auto line = [&](const char* name, const Figures& f) {
        std::printf(
            "  %-16s %10llu packets (expected %llu, lost %lld), %.2f s, %.0f packets/s, "
            "worst batch %llu us, peak RSS %.1f MB\n",
            name, static_cast<unsigned long long>(f.packets),
            static_cast<unsigned long long>(expected),
            static_cast<long long>(expected) - static_cast<long long>(f.packets), f.elapsed_sec,
            static_cast<double>(f.packets) / f.elapsed_sec,
            static_cast<unsigned long long>(f.max_batch_us), static_cast<double>(f.peak_kb) / 1e3);
    };
    std::printf("%s x %d, %d worker(s), rules %s\n", pcap.c_str(), repeat, workers, rules.c_str());
    line("no reloads", base);
    line("with reloads", rel);
    if (!ms.empty()) {
        std::printf("  %u reloads during the run: min %.0f ms, median %.0f ms, max %.0f ms\n",
                    rel.reloads, ms.front(), med, ms.back());
    }
    std::printf(
        "reload: lost=%lld stall_us=%llu base_stall_us=%llu reload_ms_median=%.0f "
        "peak_mb=%.1f base_peak_mb=%.1f\n",
        static_cast<long long>(expected) - static_cast<long long>(rel.packets),
        static_cast<unsigned long long>(rel.max_batch_us),
        static_cast<unsigned long long>(base.max_batch_us), med,
        static_cast<double>(rel.peak_kb) / 1e3, static_cast<double>(base.peak_kb) / 1e3);
    return 0;
}
