// Pipeline throughput: decode + defrag + flows (+ stream, app layer; + rules and the ACL with
// --rules / --acl) over pcap files with 1 and 2 workers, beside the physical limit of this
// input path measured in the same run: a bare libpcap read loop (pcap_next_ex touching each
// packet) over the same file, from the page cache.
//
//   pipeline_bench [--rounds N] [--workers 1,2] [--rules FILE] [--acl FILE] FILE.pcap [FILE...]
//
// --acl loads an acl.rules file (docs/acl.md); the ACL needs detection on, so without --rules
// a one-rule file that never matches is used. With --acl each worker count runs twice per
// round: the ACL classified per capture batch (lookup_batch, the sensor's default) and per
// packet (lookup, SensorConfig::acl_batch false), so both figures come from the same run.
//
// Prints, per file, the median of N rounds (alternating baseline and pipeline runs so drift
// hits both) and a last line per file:
//   pipeline: file=NAME bare_pps=A w1_pps=B w1_ratio=B/A w2_pps=C w2_ratio=C/A gbps_w1=...
//
// Per worker count it also prints where the time went, from each thread's own CPU clock
// (CLOCK_THREAD_CPUTIME_ID, read as the thread ends), medians over the rounds:
//   worker i: its packets, its CPU seconds, packets per second of its CPU;
//   reader: the dispatching thread's CPU seconds and its share of all the run's thread CPU
//           (workers + reader + output);
//   own-core estimate: packets / max(largest worker CPU, reader CPU): the rate if every thread
//           had a core of its own (the slowest one sets the pace).
// How to read them: on this 2-core machine the reader and 2 workers share 2 cores, so the
// wall-clock packets/s cannot grow with workers; the per-worker packets/s of CPU and the
// estimate can. On a machine with more cores than threads, the measured pps should approach
// the estimate; if it stays well below it, the threads are waiting for each other (queues,
// shared cache lines), which is what this line is for. When the reader's share approaches
// 1 / (workers + 1) its CPU, not the workers', bounds the estimate: more workers won't help.
// Never pass/fail on time: figures go to docs/performance.md.
#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/time_util.h"
#include "sensor/engine/engine.h"

namespace {

using picket::sensor::engine::RunResult;

struct Figure {
    double secs = 0;
    uint64_t packets = 0;
    uint64_t bytes = 0;
    std::vector<RunResult::WorkerRun> workers;
    double reader_cpu = 0;
    double output_cpu = 0;
};

struct Options {
    std::string rules;
    std::string acl;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

Figure bare_read(const std::string& path) {
    char err[PCAP_ERRBUF_SIZE];
    pcap_t* p = pcap_open_offline(path.c_str(), err);
    if (p == nullptr) {
        std::fprintf(stderr, "pipeline_bench: %s: %s\n", path.c_str(), err);
        std::exit(1);
    }
    Figure f;
    pcap_pkthdr* h = nullptr;
    const u_char* data = nullptr;
    uint64_t sink = 0;
    int64_t t0 = picket::monotonic_ns();
    while (pcap_next_ex(p, &h, &data) == 1) {
        ++f.packets;
        f.bytes += h->len;
        sink += data[0] + data[h->caplen - 1];
    }
    f.secs = static_cast<double>(picket::monotonic_ns() - t0) / 1e9;
    pcap_close(p);
    if (sink == 42) {
        std::puts("");  // keep the loop's reads observable
    }
    return f;
}

Figure pipeline(const std::string& path, uint32_t workers, const Options& o, bool acl_batch) {
    picket::Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back(path);
    c.set_value("pcap-file.paths", list);
    c.set_value("workers", YAML::Node(workers));
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    c.set_value("stats-interval", YAML::Node(3600));
    if (!o.acl.empty()) {
        c.set_value("acl-file", YAML::Node(o.acl));
    }
    auto sc = picket::sensor::engine::load_sensor_config(c);
    if (!o.rules.empty()) {
        sc.detect.rule_files = {o.rules};
        sc.fast_log_enabled = false;
    }
    sc.acl_batch = acl_batch;
    picket::sensor::engine::Engine engine(sc);
    auto r = engine.run();
    if (r.exit_code != 0) {
        std::fprintf(stderr, "pipeline_bench: %s\n", r.error.c_str());
        std::exit(1);
    }
    Figure f;
    f.secs = r.elapsed_sec;
    f.packets = r.stats.get("decoder.pkts");
    f.bytes = r.stats.get("decoder.bytes");
    f.workers = r.workers;
    f.reader_cpu = r.reader_cpu_sec;
    f.output_cpu = r.output_cpu_sec;
    return f;
}

// The rounds of one configuration (a worker count, the ACL batched or not).
struct Series {
    uint32_t workers = 1;
    bool acl_batch = true;
    std::vector<double> pps, gbps, reader_cpu, reader_share, est_pps;
    std::vector<std::vector<double>> worker_cpu;  // [worker][round]
    std::vector<uint64_t> worker_packets;         // the same every round
};

void add_round(Series& s, const Figure& f) {
    s.pps.push_back(static_cast<double>(f.packets) / f.secs);
    s.gbps.push_back(static_cast<double>(f.bytes) * 8 / 1e9 / f.secs);
    s.worker_cpu.resize(f.workers.size());
    s.worker_packets.resize(f.workers.size());
    double total_cpu = f.reader_cpu + f.output_cpu;
    double max_cpu = f.reader_cpu;
    for (size_t i = 0; i < f.workers.size(); ++i) {
        s.worker_cpu[i].push_back(f.workers[i].cpu_sec);
        s.worker_packets[i] = f.workers[i].packets;
        total_cpu += f.workers[i].cpu_sec;
        max_cpu = std::max(max_cpu, f.workers[i].cpu_sec);
    }
    s.reader_cpu.push_back(f.reader_cpu);
    s.reader_share.push_back(total_cpu > 0 ? f.reader_cpu / total_cpu : 0);
    s.est_pps.push_back(max_cpu > 0 ? static_cast<double>(f.packets) / max_cpu : 0);
}

void usage() {
    std::fprintf(stderr,
                 "usage: pipeline_bench [--rounds N] [--workers 1,2] [--rules FILE] [--acl FILE] "
                 "FILE...\n");
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 3;
    std::vector<uint32_t> worker_counts{1, 2};
    std::vector<std::string> files;
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--rounds" && i + 1 < argc) {
            rounds = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--workers" && i + 1 < argc) {
            worker_counts.clear();
            std::string list = argv[++i];
            size_t pos = 0;
            while (pos < list.size()) {
                size_t comma = list.find(',', pos);
                worker_counts.push_back(
                    static_cast<uint32_t>(std::atoi(list.substr(pos, comma - pos).c_str())));
                pos = comma == std::string::npos ? list.size() : comma + 1;
            }
        } else if (a == "--rules" && i + 1 < argc) {
            o.rules = argv[++i];
        } else if (a == "--acl" && i + 1 < argc) {
            o.acl = argv[++i];
        } else if (a.rfind("--", 0) == 0) {
            usage();
            return 2;
        } else {
            files.push_back(a);
        }
    }
    if (files.empty()) {
        usage();
        return 2;
    }
    std::string temp_rules;
    if (!o.acl.empty() && o.rules.empty()) {
        // The ACL lives in a detection generation: one rule that never matches.
        temp_rules = "/tmp/pipeline_bench_" + std::to_string(getpid()) + ".rules";
        std::ofstream(temp_rules)
            << "alert udp any any -> any 9 (msg:\"bench\"; content:\"q7Zx!never\"; sid:1;)\n";
        o.rules = temp_rules;
    }
    std::vector<bool> acl_modes{true};
    if (!o.acl.empty()) {
        acl_modes.push_back(false);
    }
    for (const auto& file : files) {
        bare_read(file);  // warm the page cache
        std::vector<double> bare_pps, bare_gbps;
        std::vector<Series> series;
        for (uint32_t w : worker_counts) {
            for (bool batch : acl_modes) {
                series.push_back(Series{w, batch, {}, {}, {}, {}, {}, {}, {}});
            }
        }
        Figure last;
        for (int r = 0; r < rounds; ++r) {
            Figure b = bare_read(file);
            bare_pps.push_back(static_cast<double>(b.packets) / b.secs);
            bare_gbps.push_back(static_cast<double>(b.bytes) * 8 / 1e9 / b.secs);
            last = b;
            for (Series& s : series) {
                Figure f = pipeline(file, s.workers, o, s.acl_batch);
                if (f.packets != b.packets) {
                    std::fprintf(stderr,
                                 "pipeline_bench: %s: pipeline saw %llu packets, bare "
                                 "read %llu\n",
                                 file.c_str(), static_cast<unsigned long long>(f.packets),
                                 static_cast<unsigned long long>(b.packets));
                    return 1;
                }
                add_round(s, f);
            }
        }
        std::string name = file.substr(file.find_last_of('/') + 1);
        double base = median(bare_pps);
        std::printf("%s: %llu packets, %.1f MB, median of %d rounds%s\n", name.c_str(),
                    static_cast<unsigned long long>(last.packets),
                    static_cast<double>(last.bytes) / 1e6, rounds,
                    o.acl.empty() ? "" : (", acl " + o.acl).c_str());
        std::printf("  %-34s %12.0f packets/s %8.2f Gbit/s\n", "bare libpcap read (baseline)", base,
                    median(bare_gbps));
        std::string line =
            "pipeline: file=" + name + " bare_pps=" + std::to_string(static_cast<long long>(base));
        for (const Series& s : series) {
            double m = median(s.pps);
            char label[64];
            std::snprintf(label, sizeof(label), "pipeline, %u worker%s%s", s.workers,
                          s.workers == 1 ? "" : "s",
                          o.acl.empty() ? "" : (s.acl_batch ? ", acl batch" : ", acl per pkt"));
            std::printf(
                "  %-34s %12.0f packets/s %8.2f Gbit/s  %5.1f%% of baseline  (min %.0f, "
                "max %.0f)\n",
                label, m, median(s.gbps), 100.0 * m / base,
                *std::min_element(s.pps.begin(), s.pps.end()),
                *std::max_element(s.pps.begin(), s.pps.end()));
            for (size_t i = 0; i < s.worker_cpu.size(); ++i) {
                const double cpu = median(s.worker_cpu[i]);
                const auto [lo, hi] =
                    std::minmax_element(s.worker_cpu[i].begin(), s.worker_cpu[i].end());
                std::printf(
                    "    worker %zu: %10llu packets, cpu %7.3f s (%.3f-%.3f), %10.0f packets/s of "
                    "its cpu\n",
                    i, static_cast<unsigned long long>(s.worker_packets[i]), cpu, *lo, *hi,
                    cpu > 0 ? static_cast<double>(s.worker_packets[i]) / cpu : 0);
            }
            std::printf(
                "    reader: cpu %.3f s, %.1f%% of the threads' cpu; own-core estimate "
                "%.0f packets/s\n",
                median(s.reader_cpu), 100.0 * median(s.reader_share), median(s.est_pps));
            const std::string tag = "w" + std::to_string(s.workers) +
                                    (o.acl.empty() ? "" : (s.acl_batch ? "_aclbatch" : "_aclpkt"));
            char part[256];
            std::snprintf(part, sizeof(part),
                          " %s_pps=%.0f %s_ratio=%.3f %s_gbps=%.2f %s_est_pps=%.0f "
                          "%s_reader_share=%.3f",
                          tag.c_str(), m, tag.c_str(), m / base, tag.c_str(), median(s.gbps),
                          tag.c_str(), median(s.est_pps), tag.c_str(), median(s.reader_share));
            line += part;
        }
        std::printf("%s\n", line.c_str());
    }
    if (!temp_rules.empty()) {
        std::remove(temp_rules.c_str());
    }
    return 0;
}
