// Pipeline throughput: decode + defrag + flows over pcap files with 1 and 2 workers, beside
// the physical limit of this input path measured in the same run: a bare libpcap read loop
// (pcap_next_ex touching each packet) over the same file, from the page cache.
//
//   pipeline_bench [--rounds N] [--workers 1,2] FILE.pcap [FILE...]
//
// Prints, per file, the median of N rounds (alternating baseline and pipeline runs so drift
// hits both) and a last line per file:
//   pipeline: file=NAME bare_pps=A w1_pps=B w1_ratio=B/A w2_pps=C w2_ratio=C/A gbps_w1=...
// Never pass/fail on time: figures go to docs/performance.md.
#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/time_util.h"
#include "sensor/engine/engine.h"

namespace {

struct Figure {
    double secs = 0;
    uint64_t packets = 0;
    uint64_t bytes = 0;
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

Figure pipeline(const std::string& path, uint32_t workers) {
    picket::Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back(path);
    c.set_value("pcap-file.paths", list);
    c.set_value("workers", YAML::Node(workers));
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    c.set_value("stats-interval", YAML::Node(3600));
    auto sc = picket::sensor::engine::load_sensor_config(c);
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
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    int rounds = 3;
    std::vector<uint32_t> worker_counts{1, 2};
    std::vector<std::string> files;
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
        } else if (a.rfind("--", 0) == 0) {
            std::fprintf(stderr, "usage: pipeline_bench [--rounds N] [--workers 1,2] FILE...\n");
            return 2;
        } else {
            files.push_back(a);
        }
    }
    if (files.empty()) {
        std::fprintf(stderr, "usage: pipeline_bench [--rounds N] [--workers 1,2] FILE...\n");
        return 2;
    }
    for (const auto& file : files) {
        bare_read(file);  // warm the page cache
        std::vector<double> bare_pps, bare_gbps;
        std::vector<std::vector<double>> pps(worker_counts.size()), gbps(worker_counts.size());
        Figure last;
        for (int r = 0; r < rounds; ++r) {
            Figure b = bare_read(file);
            bare_pps.push_back(static_cast<double>(b.packets) / b.secs);
            bare_gbps.push_back(static_cast<double>(b.bytes) * 8 / 1e9 / b.secs);
            last = b;
            for (size_t i = 0; i < worker_counts.size(); ++i) {
                Figure f = pipeline(file, worker_counts[i]);
                if (f.packets != b.packets) {
                    std::fprintf(stderr,
                                 "pipeline_bench: %s: pipeline saw %llu packets, bare "
                                 "read %llu\n",
                                 file.c_str(), static_cast<unsigned long long>(f.packets),
                                 static_cast<unsigned long long>(b.packets));
                    return 1;
                }
                pps[i].push_back(static_cast<double>(f.packets) / f.secs);
                gbps[i].push_back(static_cast<double>(f.bytes) * 8 / 1e9 / f.secs);
            }
        }
        std::string name = file.substr(file.find_last_of('/') + 1);
        double base = median(bare_pps);
        std::printf("%s: %llu packets, %.1f MB, median of %d rounds\n", name.c_str(),
                    static_cast<unsigned long long>(last.packets),
                    static_cast<double>(last.bytes) / 1e6, rounds);
        std::printf("  %-28s %12.0f packets/s %8.2f Gbit/s\n", "bare libpcap read (baseline)", base,
                    median(bare_gbps));
        std::string line =
            "pipeline: file=" + name + " bare_pps=" + std::to_string(static_cast<long long>(base));
        for (size_t i = 0; i < worker_counts.size(); ++i) {
            double m = median(pps[i]);
            char label[64];
            std::snprintf(label, sizeof(label), "pipeline, %u worker%s", worker_counts[i],
                          worker_counts[i] == 1 ? "" : "s");
            std::printf("  %-28s %12.0f packets/s %8.2f Gbit/s  %5.1f%% of baseline\n", label, m,
                        median(gbps[i]), 100.0 * m / base);
            char part[160];
            std::snprintf(part, sizeof(part), " w%u_pps=%.0f w%u_ratio=%.3f w%u_gbps=%.2f",
                          worker_counts[i], m, worker_counts[i], m / base, worker_counts[i],
                          median(gbps[i]));
            line += part;
        }
        std::printf("%s\n", line.c_str());
    }
    return 0;
}
