// Worker scaling and the zero-loss cut-off rate: offers traffic at controlled rates to the real
// sensor Engine (its live-like replay of a pcap: the reader thread paces packets into the
// worker queues and drops what a full queue cannot take, counted as capture.queue_drops, as a
// live capture drops) and measures, per detection configuration and worker count, the share
// of offered packets processed at each rate of a ladder, then the highest rate with no loss
// (the cut-off) by bisection between the last lossless and the first lossy rate. Each row's
// engine is built once; every cell runs in a forked child of it. See README.md.
//
//   cutoff_bench [--rules DIR|FILE|generated] [--pcap FILE] [--workers 1,2] [--configs LIST]
//                [--ladder GBPS,...] [--secs S] [--steps N] [--repeat N] [--quick]
//                [--set KEY=VALUE]...
//
// Without --rules it loads ET Open from ../shared/data/rules/et-open (beside the source tree)
// when present, else a generated ruleset. Without --pcap it generates traffic with
// picket_trafficgen. Prints one table per configuration in the shape vendors publish (rows =
// workers, columns = offered Gbit/s, cells = % processed, last column = cut-off), a summary,
// and a last line:
//   cutoff: rules=NAME mean_bytes=B ... hs-jit_w1_gbps=X hs-jit_w2_gbps=Y ... wall_s=T
// Never pass/fail on time: figures go to docs/performance.md.
#include <pcap/pcap.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "bench/common/bench_util.h"
#include "common/config.h"
#include "common/time_util.h"
#include "sensor/capture/capture.h"
#include "sensor/detect/detect.h"
#include "sensor/engine/engine.h"
#include "tools/trafficgen/generator.h"

#ifndef PICKET_CUTOFF_SOURCE_DIR
#define PICKET_CUTOFF_SOURCE_DIR "."
#endif

namespace {

using picket::sensor::engine::Engine;
using picket::sensor::engine::SensorConfig;

// One detection configuration compared in the run.
struct ConfigSpec {
    std::string id;     // machine-readable name: hs-jit, hs-nojit, pcre-jit, pcre-nojit
    std::string title;  // what the table says
    bool prefilter = true;
    bool jit = true;
    bool available = true;
    std::string why_unavailable;
};

struct Options {
    std::string rules;  // empty = ET Open if present, else generated; "generated" forces it
    std::string classification;
    std::string pcap;  // empty = generated
    std::vector<uint32_t> workers{1, 2};
    std::vector<std::string> configs{"hs-jit", "hs-nojit", "pcre-jit", "pcre-nojit"};
    std::vector<double> ladder_gbps;  // empty = derived from each configuration's capacity
    double cell_secs = 1.0;
    double calib_secs = 1.0;
    int steps = 3;
    int repeat = 2;  // tries per cell; the best counts
    bool quick = false;
    std::vector<std::string> sets;  // --set KEY=VALUE, applied to every engine
    std::string gen_size = "8M";
    bool keep = false;
};

struct Traffic {
    std::string path;
    std::string what;
    uint64_t packets = 0;
    uint64_t bytes = 0;
    double mean_bytes() const { return packets ? static_cast<double>(bytes) / packets : 0; }
};

struct Ruleset {
    std::string name;  // et-open, generated, or the file/dir name
    std::vector<std::string> files;
    std::string classification;
    std::string what;
};

// One measured cell.
struct Cell {
    double gbps = 0;  // offered (nominal)
    double pps = 0;
    uint64_t offered = 0;      // packets the replayer offered (read from the file)
    uint64_t processed = 0;    // decoder.pkts: packets a worker took through the pipeline
    uint64_t drops = 0;        // capture.queue_drops
    double achieved_pps = 0;   // offered / time the replayer took to offer them
    double busiest_share = 0;  // the busiest worker's share of the processed packets
    uint64_t alerts = 0;       // detect.alert: configurations must agree on lossless cells
    bool lossless() const { return drops == 0 && processed == offered; }
    double pct() const { return offered ? 100.0 * static_cast<double>(processed) / offered : 0; }
    // The reader shares the cores with the workers: when it could not keep the pace, the cell
    // did not see its nominal rate (marked in the table).
    bool source_limited() const { return achieved_pps < 0.97 * pps; }
    // The rate this cell proves lossless: the nominal one, or what was really offered when the
    // replayer fell short.
    double lossless_gbps() const {
        if (!lossless()) {
            return 0;
        }
        return source_limited() ? gbps * achieved_pps / pps : gbps;
    }
};

struct Row {
    uint32_t workers = 0;
    std::vector<Cell> ladder;  // same order as the table's columns
    std::vector<Cell> bisect;  // the bisection's cells, in order (printed as they run)
    double cutoff_gbps = 0;    // highest lossless offered rate found; 0 = none
    bool cutoff_open = false;  // no loss even at the top of the ladder: cut-off >= top
};

struct Table {
    ConfigSpec spec;
    double capacity_pps = 0;  // exact offline reading, capacity_workers workers
    uint32_t capacity_workers = 1;
    std::vector<double> columns_gbps;
    std::vector<Row> rows;
    picket::sensor::detect::LoadSummary load;
    Traffic traffic;                     // what the rows replay (the input or a sample of it)
    uint64_t queue_packets = 0;          // capture.queue-packets the rows ran with; 0 = not capped
    uint64_t queue_default_packets = 0;  // about what the byte-sized queue holds
    std::string queue_text;              // what the table says about the queue
    double capacity_gbps = 0;            // capacity_pps in the calibration input's frame sizes
};

bool in_child_process = false;  // a forked measurement child: leave the work dir alone

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "cutoff_bench: %s\n", msg.c_str());
    if (in_child_process) {
        std::fflush(stdout);
        _exit(1);
    }
    std::exit(1);
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t pos = 0;
    while (pos <= s.size()) {
        size_t next = s.find(sep, pos);
        if (next == std::string::npos) {
            next = s.size();
        }
        if (next > pos) {
            out.push_back(s.substr(pos, next - pos));
        }
        pos = next + 1;
    }
    return out;
}

std::string with_commas(uint64_t v) {
    const std::string digits = std::to_string(v);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) {
            out += ',';
        }
        out += digits[i];
    }
    return out;
}

// Three significant digits: 0.15, 1.5, 4.12, 12.3.
std::string fmt_rate(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3g", v);
    return buf;
}

// ---------------------------------------------------------------------------------------
// Inputs

constexpr uint32_t kGeneratedRules = 3000;

// A deterministic ruleset of packet-level rules (no app-layer buffers, so all of them are
// active): rare random literals with a PCRE behind them, and a share of rules whose literal
// is common in the generated traffic so that their PCRE runs on many packets (what makes
// JIT on/off visible). Used when ET Open is not available.
Ruleset generated_ruleset(const std::string& dir, uint32_t count) {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    auto next = [&x] {  // splitmix64: same output on every platform
        x += 0x9e3779b97f4a7c15ULL;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    };
    auto word = [&next](size_t len) {
        static const char kAlpha[] = "abcdefghijklmnopqrstuvwxyz0123456789";
        std::string w;
        for (size_t i = 0; i < len; ++i) {
            w += kAlpha[next() % (sizeof(kAlpha) - 1)];
        }
        return w;
    };
    static const char* kTcpPorts[] = {"80", "8080", "443", "any", "$HTTP_PORTS", "[80,443,8080]"};
    static const char* kCommon[] = {"User-Agent|3a| ", "Host|3a| ", "HTTP/1.1", "Content-Type|3a| ",
                                    "Accept|3a| "};
    std::string path = dir + "/generated.rules";
    std::ofstream out(path);
    uint32_t common = 0;
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t sid = 9000000 + i;
        const uint64_t kind = next() % 100;
        std::string rule;
        if (kind < 1) {
            // A literal common in HTTP headers, then a PCRE from there on that almost never
            // matches: PCRE runs on many packets.
            const char* lit = kCommon[next() % (sizeof(kCommon) / sizeof(kCommon[0]))];
            rule = "alert tcp any any -> any any (msg:\"cutoff gen common " + std::to_string(i) +
                   "\"; content:\"" + lit + "\"; pcre:\"/[a-z]{3,12}\\/" + word(6) +
                   "[0-9]{2,}/Ri\"; sid:" + std::to_string(sid) + "; rev:1;)";
            ++common;
        } else if (kind < 80) {
            const char* port = kTcpPorts[next() % (sizeof(kTcpPorts) / sizeof(kTcpPorts[0]))];
            std::string w = word(6 + next() % 5);
            rule = "alert tcp any any -> any " + std::string(port) + " (msg:\"cutoff gen tcp " +
                   std::to_string(i) + "\"; flow:established,to_server; content:\"" + w +
                   "\"; nocase; pcre:\"/" + w +
                   "[^\\r\\n]{0,32}(?:\\.php|\\.exe)/i\"; sid:" + std::to_string(sid) + "; rev:1;)";
        } else if (kind < 95) {
            rule = "alert udp any any -> any 53 (msg:\"cutoff gen udp " + std::to_string(i) +
                   "\"; content:\"|0" + std::to_string(1 + next() % 9) + "|" + word(6) +
                   "\"; nocase; sid:" + std::to_string(sid) + "; rev:1;)";
        } else {
            rule = "alert ip any any -> any any (msg:\"cutoff gen ip " + std::to_string(i) +
                   "\"; content:\"" + word(8) + "\"; sid:" + std::to_string(sid) + "; rev:1;)";
        }
        out << rule << "\n";
    }
    // Two rules that do match the injected attack strings, so the run raises some alerts.
    out << "alert tcp any any -> any any (msg:\"cutoff gen passwd\"; content:\"/etc/passwd\"; "
           "sid:8999998; rev:1;)\n";
    out << "alert tcp any any -> any any (msg:\"cutoff gen cmd.exe\"; content:\"cmd.exe\"; "
           "nocase; sid:8999999; rev:1;)\n";
    if (!out) {
        die(path + ": cannot write the generated ruleset");
    }
    Ruleset r;
    r.name = "generated";
    r.files = {path};
    r.what = "generated ruleset (" + std::to_string(count + 2) + " packet-level rules, " +
             std::to_string(common) + " with a common literal and a PCRE)";
    return r;
}

Ruleset pick_ruleset(const Options& o, const std::string& work) {
    if (o.rules == "generated") {
        return generated_ruleset(work, kGeneratedRules);
    }
    if (!o.rules.empty()) {
        Ruleset r;
        r.files = picket::bench::rule_files(o.rules);
        if (r.files.empty()) {
            die(o.rules + ": no .rules files");
        }
        std::filesystem::path p(o.rules);
        r.name = p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
        r.classification = o.classification;
        if (r.classification.empty() && std::filesystem::is_directory(o.rules) &&
            std::filesystem::exists(o.rules + "/classification.config")) {
            r.classification = o.rules + "/classification.config";
        }
        r.what = o.rules + " (" + std::to_string(r.files.size()) + " files)";
        return r;
    }
    const std::string et = std::string(PICKET_CUTOFF_SOURCE_DIR) + "/../shared/data/rules/et-open";
    if (std::filesystem::is_directory(et) && !picket::bench::rule_files(et).empty()) {
        Ruleset r;
        r.name = "et-open";
        r.files = picket::bench::rule_files(et);
        if (std::filesystem::exists(et + "/classification.config")) {
            r.classification = et + "/classification.config";
        }
        r.what = "ET Open, " + std::filesystem::weakly_canonical(et).string() + " (" +
                 std::to_string(r.files.size()) + " files)";
        return r;
    }
    std::printf("ET Open not found at %s: skipping it, using a generated ruleset\n", et.c_str());
    return generated_ruleset(work, kGeneratedRules);
}

// Counts packets and bytes the way the engine reads them (caplen bytes).
void count_traffic(Traffic& t, bool allow_empty = false) {
    picket::sensor::capture::PcapFileReader reader({t.path});
    picket::sensor::capture::RawPacket p;
    while (reader.next(p) == picket::sensor::capture::ReadResult::kOk) {
    }
    if (!reader.error().empty()) {
        die(reader.error());
    }
    t.packets = reader.packets_read();
    t.bytes = reader.bytes_read();
    if (t.packets == 0 && !allow_empty) {
        die(t.path + ": no packets");
    }
}

Traffic pick_traffic(const Options& o, const std::string& work) {
    Traffic t;
    if (!o.pcap.empty()) {
        t.path = o.pcap;
        t.what = o.pcap;
    } else {
        picket::tools::trafficgen::Options g;
        g.seed = 1;
        if (!picket::tools::trafficgen::parse_size(o.gen_size, &g.size_bytes)) {
            die("bad --gen-size " + o.gen_size);
        }
        g.attacks = {"/etc/passwd", "cmd.exe"};
        g.attack_share = 0.05;
        t.path = work + "/traffic.pcap";
        picket::tools::trafficgen::generate(g, t.path);
        t.what = "generated (trafficgen seed 1, " + o.gen_size +
                 ", attacks /etc/passwd and cmd.exe in 5% of HTTP sessions)";
    }
    count_traffic(t);
    return t;
}

// The host pair of an IPv4/IPv6 frame (Ethernet with up to two VLAN tags, or raw IP), as a
// direction-independent hash; false for anything else (ARP, other link types).
bool host_pair_hash(int linktype, const u_char* d, uint32_t len, uint64_t* out) {
    uint32_t off = 0;
    uint16_t type = 0;
    if (linktype == DLT_EN10MB) {
        if (len < 14) {
            return false;
        }
        type = static_cast<uint16_t>(d[12] << 8 | d[13]);
        off = 14;
        for (int tags = 0; tags < 2 && (type == 0x8100 || type == 0x88a8); ++tags) {
            if (len < off + 4) {
                return false;
            }
            type = static_cast<uint16_t>(d[off + 2] << 8 | d[off + 3]);
            off += 4;
        }
    } else if (linktype == DLT_RAW || linktype == 101 || linktype == 228 || linktype == 229) {
        if (len < 1) {
            return false;
        }
        type = (d[0] >> 4) == 6 ? 0x86dd : 0x0800;
    } else {
        return false;
    }
    uint32_t alen = 0, src = 0;
    if (type == 0x0800) {
        alen = 4;
        src = off + 12;
    } else if (type == 0x86dd) {
        alen = 16;
        src = off + 8;
    } else {
        return false;
    }
    if (len < src + 2 * alen) {
        return false;
    }
    const u_char* a = d + src;
    const u_char* b = d + src + alen;
    if (std::memcmp(a, b, alen) > 0) {
        std::swap(a, b);
    }
    uint64_t h = 1469598103934665603ULL;  // FNV-1a over the lower address, then the higher
    for (const u_char* p : {a, b}) {
        for (uint32_t i = 0; i < alen; ++i) {
            h = (h ^ p[i]) * 1099511628211ULL;
        }
    }
    *out = h;
    return true;
}

// About `count` packets of `full` chosen by host pair: every packet between the chosen pairs of
// hosts (both directions, every fragment) and an even share of the non-IP frames, as a
// classic pcap. The replay loops over whole files, so a slow configuration replays this
// smaller file to keep its low-rate cells short; whole conversations keep the traffic's
// make-up (handshakes, payload sizes) where a prefix of the capture would not.
Traffic sample_traffic(const Traffic& full, uint64_t count, const std::string& path) {
    double share = static_cast<double>(count) / static_cast<double>(full.packets);
    for (int attempt = 0;; ++attempt) {
        char err[PCAP_ERRBUF_SIZE];
        pcap_t* in = pcap_open_offline(full.path.c_str(), err);
        if (in == nullptr) {
            die(full.path + ": " + err);
        }
        pcap_dumper_t* out = pcap_dump_open(in, path.c_str());
        if (out == nullptr) {
            die(path + ": " + pcap_geterr(in));
        }
        const int linktype = pcap_datalink(in);
        const uint64_t threshold = static_cast<uint64_t>(share * 1e6);
        pcap_pkthdr* h = nullptr;
        const u_char* data = nullptr;
        uint64_t other = 0;
        while (pcap_next_ex(in, &h, &data) == 1) {
            uint64_t pair = 0;
            bool keep = false;
            if (host_pair_hash(linktype, data, h->caplen, &pair)) {
                keep = pair % 1000000 < threshold;
            } else {
                // Non-IP frames: an even share (the running count crosses an integer).
                const double before = static_cast<double>(other) * share;
                ++other;
                keep = std::floor(static_cast<double>(other) * share) > std::floor(before);
            }
            if (keep) {
                pcap_dump(reinterpret_cast<u_char*>(out), h, data);
            }
        }
        pcap_dump_close(out);
        pcap_close(in);
        Traffic t;
        t.path = path;
        count_traffic(t, /*allow_empty=*/true);
        // A few long conversations can make the sample small: widen it until it is at least
        // half of what was asked.
        if (t.packets * 2 >= count || share >= 1 || attempt == 6) {
            if (t.packets == 0) {
                die(full.path + ": sampling by host pair left no packets");
            }
            char what[160];
            std::snprintf(what, sizeof(what),
                          "a sample of the input by host pair (%.1f%% of the pairs)",
                          std::min(100.0, share * 100));
            t.what = what;
            return t;
        }
        share = std::min(1.0, share * 2);
    }
}

// ---------------------------------------------------------------------------------------
// Runs

bool user_sized_queue(const Options& o) {
    return std::any_of(o.sets.begin(), o.sets.end(),
                       [](const std::string& s) { return s.rfind("capture.queue-", 0) == 0; });
}

// Replay engines (replay = true) run the cells; an exact engine (false) measures capacity.
SensorConfig engine_config(const Options& o, const Ruleset& rs, const ConfigSpec& spec,
                           uint32_t workers, const Traffic& t, uint64_t queue_packets,
                           const std::string& work, bool replay) {
    picket::Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    if (replay) {
        list.push_back(t.path);
        // Live-like replay: paced, and a full worker queue drops instead of waiting. Each
        // cell sets its own passes and rate (set_pace); these placeholders (one unpaced pass)
        // make a cell that did not take its pace fail the offered-packet check instead of
        // running forever.
        c.set_value("pcap-file.loop", YAML::Node(1));
        c.set_value("pcap-file.rate", YAML::Node(0));
    } else {
        // Plain offline reading: the reader waits for a full queue, nothing is lost. Enough
        // copies of the file that the calibration's stop, not the input, ends the run.
        for (int i = 0; i < 20000; ++i) {
            list.push_back(t.path);
        }
    }
    c.set_value("pcap-file.paths", list);
    c.set_value("workers", YAML::Node(workers));
    c.set_value("default-log-dir", YAML::Node(work));
    c.set_value("outputs.eve.enabled", YAML::Node(false));
    c.set_value("outputs.fast.enabled", YAML::Node(false));
    c.set_value("stats-interval", YAML::Node(3600));
    c.set_value("detect.pcre-jit", YAML::Node(spec.jit));
    // The PCRE-only baseline: no multi-pattern prefilter, every rule of the group checked
    // (detect.mpm-algo: none). The load must then show no Hyperscan database, else the
    // configuration is reported as not measured.
    c.set_value("detect.mpm-algo", YAML::Node(spec.prefilter ? "hs" : "none"));
    if (queue_packets > 0) {
        c.set_value("capture.queue-size", YAML::Node(queue_packets));  // a packet count
    }
    for (const auto& s : o.sets) {
        c.set(s);
    }
    SensorConfig sc = picket::sensor::engine::load_sensor_config(c);
    sc.detect.rule_files = rs.files;
    sc.detect.classification_file = rs.classification;
    return sc;
}

uint32_t thread_count() {
    uint32_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
        ++n;
    }
    return n;
}

bool write_all(int fd, const void* data, size_t len) {
    const char* p = static_cast<const char*>(data);
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

// Runs fn in a forked child and returns what it returned. Every cell runs in a child of the
// process that built the engine (rules loaded, pools allocated, no thread started yet), so
// each cell gets a pristine engine without paying the rule load again (ET Open: seconds), and
// no cell inherits another's flows, counters or heap.
template <typename T, typename Fn>
T in_child(Fn&& fn) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (thread_count() != 1) {
        die("fork with " + std::to_string(thread_count()) +
            " threads: the engine must not start threads before run()");
    }
    int fds[2];
    if (pipe(fds) != 0) {
        die(std::string("pipe: ") + std::strerror(errno));
    }
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        die(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
        in_child_process = true;
        close(fds[0]);
        const T value = fn();
        std::fflush(stdout);
        // _exit: the parent owns the work directory and the engine's memory.
        _exit(write_all(fds[1], &value, sizeof(value)) ? 0 : 1);
    }
    close(fds[1]);
    T value{};
    size_t got = 0;
    while (got < sizeof(value)) {
        ssize_t n = read(fds[0], reinterpret_cast<char*>(&value) + got, sizeof(value) - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        got += static_cast<size_t>(n);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != sizeof(value) || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        die("a measurement child failed (see above)");
    }
    return value;
}

// The cell's pace. The engine reads pcap_loops and pcap_rate_pps when run() starts its reader,
// and this runs in the child just before run(); the engine has no setter for them (see
// docs/perf-cutoff.md). The config member is not a const object, so writing it through the
// const accessor is defined behaviour. run_cell_once checks the result: exactly loops x
// packets offered, at no more than the rate.
void set_pace(Engine& engine, uint64_t loops, double pps) {
    auto& c = const_cast<SensorConfig&>(engine.config());
    c.pcap_loops = loops;
    c.pcap_rate_pps = pps;
}

// What the calibration child reports.
struct Calibration {
    double pps = 0;
    double setup_secs = 0;
    uint32_t loaded = 0;
    uint32_t hs_databases = 0;
    uint64_t queue_bytes = 0;
};

// Capacity, on an exact engine: plain offline reading, the reader waits for the worker(s),
// which run flat out and lose nothing. Not an unpaced replay: behind a full queue a worker sees
// flows with holes, and some configurations slow down a lot then (the PCRE-only baseline ran
// 10x slower), which would place the ladder far too low. The rate is taken between two samples
// of decoder.pkts, the first after a warm-up, so that start-up (thread start, first touches of
// the flow pool) is not in it; then the run stops. The engine lives and dies in a child: the
// kernel takes it back at _exit, far quicker than its destructor (ET Open: seconds).
Calibration calibrate(const Options& o, const Ruleset& rs, const ConfigSpec& spec, uint32_t workers,
                      const Traffic& t, const std::string& work) {
    return in_child<Calibration>([&] {
        Calibration cal;
        SensorConfig sc = engine_config(o, rs, spec, workers, t, 0, work, /*replay=*/false);
        const int64_t s0 = picket::monotonic_ns();
        Engine engine(std::move(sc));
        cal.setup_secs = static_cast<double>(picket::monotonic_ns() - s0) / 1e9;
        cal.loaded = engine.load_summary().loaded;
        cal.hs_databases = engine.load_summary().hs_databases;
        cal.queue_bytes = engine.config().queue_bytes;
        if (!spec.prefilter && cal.hs_databases > 0) {
            return cal;  // not the configuration asked for: the caller reports it
        }
        std::thread sampler([&] {
            const auto warmup = std::chrono::duration<double>(std::min(0.2, o.calib_secs / 3));
            std::this_thread::sleep_for(warmup);
            const uint64_t p0 = engine.collect_stats().get("decoder.pkts");
            const int64_t t0 = picket::monotonic_ns();
            std::this_thread::sleep_for(std::chrono::duration<double>(o.calib_secs) - warmup);
            const uint64_t p1 = engine.collect_stats().get("decoder.pkts");
            const int64_t t1 = picket::monotonic_ns();
            cal.pps = static_cast<double>(p1 - p0) / (static_cast<double>(t1 - t0) / 1e9);
            engine.stop();
        });
        auto r = engine.run();
        sampler.join();
        if (r.exit_code != 0) {
            die(r.error);
        }
        return cal;
    });
}

// One try of one cell: `gbps` offered for about cell_secs (whole passes over the file, at
// least one).
Cell run_cell_once(const Options& o, const Traffic& t, Engine& engine, double gbps) {
    return in_child<Cell>([&] {
        Cell cell;
        cell.gbps = gbps;
        cell.pps = gbps * 1e9 / 8 / t.mean_bytes();
        const double target = cell.pps * o.cell_secs;
        const uint64_t loops = std::max<uint64_t>(
            1, static_cast<uint64_t>(std::ceil(target / static_cast<double>(t.packets))));
        const uint64_t total = loops * t.packets;
        set_pace(engine, loops, cell.pps);
        // The replayer's own pace: when did it offer the last packet? A watcher polls the
        // capture counter (what the metrics exporter reads) every 2 ms.
        std::atomic<bool> running{true};
        std::atomic<int64_t> offered_done_ns{0};
        std::thread watcher([&] {
            while (running.load()) {
                if (engine.collect_stats().get("capture.kernel_packets") >= total) {
                    offered_done_ns.store(picket::monotonic_ns());
                    return;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            }
        });
        const int64_t t0 = picket::monotonic_ns();
        auto r = engine.run();
        const int64_t t1 = picket::monotonic_ns();
        running.store(false);
        watcher.join();
        if (r.exit_code != 0) {
            die(r.error);
        }
        // Zero loss is decided by the busiest worker: the dispatcher hashes flows, so a few
        // large flows make the shares uneven. Its share of the processed packets (exact when
        // lossless; the engine does not count drops per worker).
        std::vector<picket::sensor::engine::WorkerTotals> shares;
        engine.collect_stats(&shares);
        cell.offered = r.stats.get("capture.kernel_packets");
        cell.processed = r.stats.get("decoder.pkts");
        cell.drops = r.stats.get("capture.queue_drops");
        cell.alerts = r.stats.get("detect.alert");
        if (cell.offered != total || cell.processed + cell.drops != cell.offered) {
            die("accounting: offered " + std::to_string(cell.offered) + " (expected " +
                std::to_string(loops) + " passes = " + std::to_string(total) + "), processed " +
                std::to_string(cell.processed) + " + dropped " + std::to_string(cell.drops));
        }
        uint64_t busiest = 0;
        for (const auto& w : shares) {
            busiest = std::max(busiest, w.packets);
        }
        cell.busiest_share =
            cell.processed ? static_cast<double>(busiest) / static_cast<double>(cell.processed) : 0;
        const int64_t done = offered_done_ns.load() != 0 ? offered_done_ns.load() : t1;
        cell.achieved_pps = static_cast<double>(total) / (static_cast<double>(done - t0) / 1e9);
        if (cell.achieved_pps > 1.05 * cell.pps + 1000) {
            die("the replay ran at " + std::to_string(cell.achieved_pps) + " pps, above the " +
                std::to_string(cell.pps) + " pps asked: the engine did not take the cell's pace");
        }
        return cell;
    });
}

void print_cell(const ConfigSpec& spec, uint32_t workers, const Cell& c, const char* kind) {
    std::printf(
        "  %-10s w%u %-6s %8s Gbit/s %9.0f pps: offered %s, processed %6.2f%%, dropped %s, "
        "offered at %.0f pps, busiest worker %.0f%%, alerts %s%s\n",
        spec.id.c_str(), workers, kind, fmt_rate(c.gbps).c_str(), c.pps,
        with_commas(c.offered).c_str(), c.pct(), with_commas(c.drops).c_str(), c.achieved_pps,
        100 * c.busiest_share, with_commas(c.alerts).c_str(),
        c.source_limited() ? " (source-limited)" : "");
    std::fflush(stdout);
}

// A cell tried up to `repeat` times; the best try counts (the most packets processed). On a
// shared machine another tenant's burst can cost a cell packets; the best try is what the
// sensor sustains when the cores are its own. Every try is printed.
Cell run_cell(const Options& o, const Traffic& t, Engine& engine, const ConfigSpec& spec,
              uint32_t workers, double gbps, const char* kind) {
    Cell best;
    for (int i = 0; i < o.repeat; ++i) {
        Cell c = run_cell_once(o, t, engine, gbps);
        print_cell(spec, workers, c, kind);
        if (i == 0 || c.pct() > best.pct() ||
            (c.pct() == best.pct() && c.achieved_pps > best.achieved_pps)) {
            best = c;
        }
        if (best.lossless() && !best.source_limited()) {
            break;  // cannot do better
        }
    }
    return best;
}

// Ladder columns: a 1-1.5-2-3-5-7 series (1-2-5 in quick mode) per decade.
const std::vector<double>& series(bool quick) {
    static const std::vector<double> kFull{1, 1.5, 2, 3, 5, 7};
    static const std::vector<double> kQuick{1, 2, 5};
    return quick ? kQuick : kFull;
}

// The first series value above v.
double next_series_value(double v, bool quick) {
    for (int d = static_cast<int>(std::floor(std::log10(v))) - 1;; ++d) {
        for (double s : series(quick)) {
            const double x = s * std::pow(10.0, d);
            if (x > v * 1.001) {
                return x;
            }
        }
    }
}

// The last series value below v.
double prev_series_value(double v, bool quick) {
    double best = 0;
    for (int d = static_cast<int>(std::floor(std::log10(v))) - 1;; ++d) {
        for (double s : series(quick)) {
            const double x = s * std::pow(10.0, d);
            if (x >= v * 0.999) {
                return best;
            }
            best = x;
        }
    }
}

// Columns spanning 0.3x the calibrated capacity to 1.5x that times the workers the cores can
// run (at least 2x), so that every table has both lossless and lossy cells.
std::vector<double> derive_ladder(double cap_gbps, uint32_t max_workers, bool quick) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const double lo = 0.3 * cap_gbps;
    const double hi = std::max(2.0, 1.5 * std::min<double>(max_workers, cores)) * cap_gbps;
    std::vector<double> out;
    for (double v = next_series_value(lo * 0.999, quick); v <= hi * 1.001;
         v = next_series_value(v, quick)) {
        out.push_back(v);
    }
    if (out.empty()) {
        out.push_back(next_series_value(cap_gbps, quick));
    }
    return out;
}

constexpr uint64_t kMinPassPackets = 1000;  // shortest replayed file
constexpr uint64_t kMinQueuePackets = 256;
constexpr uint64_t kRecordOverhead = 32;  // dispatcher record header + alignment, about
constexpr int kMaxExtraColumns = 6;
constexpr int kMaxLowerColumns = 3;

// A row's bisection, one cell at a time so that rows and configurations can take turns.
struct Bisect {
    double lo = 0, hi = 0;
    int steps_left = 0;
    bool done = true;
};

// After the ladder: bisection between the last lossless and the first lossy column. A
// lossless cell whose replayer fell short proves only the rate it really offered, so the
// cut-off is the highest rate actually offered without loss below the first lossy rate.
Bisect start_bisect(const Options& o, Row& row) {
    Bisect b;
    auto first_lossy = std::find_if_not(row.ladder.begin(), row.ladder.end(),
                                        [](const Cell& c) { return c.lossless(); });
    for (auto it = row.ladder.begin(); it != first_lossy; ++it) {
        b.lo = std::max(b.lo, it->lossless_gbps());
    }
    row.cutoff_gbps = b.lo;
    if (first_lossy == row.ladder.end()) {
        row.cutoff_open = true;
        return b;
    }
    b.hi = first_lossy->gbps;
    b.steps_left = o.steps;
    b.done = b.steps_left == 0;
    return b;
}

// One bisection cell: geometric (the ladder is logarithmic), or, when even the first column
// lost packets, half the lowest lossy rate until a rate is lossless (same step budget).
void bisect_step(const Options& o, const Traffic& t, Engine& engine, const ConfigSpec& spec,
                 Row& row, Bisect& b) {
    const bool down = b.lo == 0;
    const double rate = down ? b.hi / 2 : std::sqrt(b.lo * b.hi);
    Cell c = run_cell(o, t, engine, spec, row.workers, rate, down ? "down" : "bisect");
    row.bisect.push_back(c);
    if (c.lossless()) {
        b.lo = std::max(b.lo, c.lossless_gbps());
    } else {
        b.hi = rate;
    }
    row.cutoff_gbps = b.lo;
    b.done = --b.steps_left <= 0;
}

// One configuration: its table, the rows' engines (built once; every cell forks from one) and
// the ladder's extension state.
struct ConfigRun {
    Table tb;
    std::vector<std::unique_ptr<Engine>> engines;  // one per row
    int extra_columns = 0;
};

// Phase 1 of a configuration: calibration (in a child) and columns.
void calibrate_config(const Options& o, const Ruleset& rs, const Traffic& full, ConfigRun& run,
                      const std::string& work) {
    Table& tb = run.tb;
    const ConfigSpec& spec = tb.spec;
    const uint32_t w0 = o.workers.front();
    const Calibration cal = calibrate(o, rs, spec, w0, full, work);
    tb.load.loaded = cal.loaded;
    tb.load.hs_databases = cal.hs_databases;
    if (!spec.prefilter && cal.hs_databases > 0) {
        tb.spec.available = false;
        tb.spec.why_unavailable =
            "detect.mpm-algo: none still built Hyperscan databases";
        std::printf("%s: not measured: %s\n", spec.id.c_str(), tb.spec.why_unavailable.c_str());
        return;
    }
    tb.capacity_pps = cal.pps;
    tb.capacity_workers = w0;
    tb.queue_default_packets =
        cal.queue_bytes / static_cast<uint64_t>(full.mean_bytes() + kRecordOverhead);
    const double cap_gbps = tb.capacity_pps * full.mean_bytes() * 8 / 1e9;
    tb.capacity_gbps = cap_gbps;
    std::printf(
        "%s: %u rules loaded, %u Hyperscan databases, engine set-up %.2f s; capacity with %u "
        "worker%s (exact offline reading of the input) %.0f pps (%.3g Gbit/s)\n",
        spec.id.c_str(), tb.load.loaded, tb.load.hs_databases, cal.setup_secs, w0,
        w0 == 1 ? "" : "s", tb.capacity_pps, cap_gbps);
    std::fflush(stdout);
    tb.columns_gbps =
        o.ladder_gbps.empty() ? derive_ladder(cap_gbps, o.workers.back(), o.quick) : o.ladder_gbps;
}

// Phase 2, for all configurations: what the rows replay. The same packets for every table, so
// that configurations compare on equal input. The replay loops over whole files, so a cell
// lasts at least one pass: when the slowest configuration's lowest column would need more than
// two cells' time for one pass of the input, everyone replays a sample of it.
Traffic rows_traffic(const Options& o, const Traffic& full, const std::vector<ConfigRun>& runs,
                     const std::string& work) {
    double lowest_gbps = 0;
    for (const auto& run : runs) {
        if (run.tb.spec.available &&
            (lowest_gbps == 0 || run.tb.columns_gbps.front() < lowest_gbps)) {
            lowest_gbps = run.tb.columns_gbps.front();
        }
    }
    const double lowest_pps = lowest_gbps * 1e9 / 8 / full.mean_bytes();
    const uint64_t pass =
        std::max<uint64_t>(kMinPassPackets, static_cast<uint64_t>(2 * lowest_pps * o.cell_secs));
    if (lowest_gbps == 0 || pass >= full.packets) {
        return full;
    }
    Traffic t = sample_traffic(full, pass, work + "/sample.pcap");
    std::printf(
        "rows replay %s: %s packets per pass, mean %.0f B/packet (the slowest "
        "configuration's lowest column needs a short pass)\n",
        t.what.c_str(), with_commas(t.packets).c_str(), t.mean_bytes());
    return t;
}

// Phase 3 of a configuration: its queue and its rows' engines.
void build_rows(const Options& o, const Ruleset& rs, const Traffic& rows_input, ConfigRun& run,
                const std::string& work) {
    Table& tb = run.tb;
    const ConfigSpec& spec = tb.spec;
    tb.traffic = rows_input;
    // A queue hides overload for as long as it takes to fill: cap it at 5% of a cell at the
    // calibrated capacity, so that the cut-off is the sustained rate, not the rate plus what
    // the queue absorbed. Only slow configurations or short cells are capped (the default
    // 8 MB queue holds about 10,000 packets of this traffic).
    const uint64_t cap_packets = static_cast<uint64_t>(0.05 * tb.capacity_pps * o.cell_secs);
    if (!user_sized_queue(o) && cap_packets < tb.queue_default_packets) {
        tb.queue_packets = std::max(kMinQueuePackets, cap_packets);
    }
    tb.queue_text = user_sized_queue(o) ? "as set with --set"
                    : tb.queue_packets  ? with_commas(tb.queue_packets) + " packets (capped)"
                                        : "8 MB (default)";

    // The rows' engines are built side by side (the rule load is most of the set-up and reads
    // only its const inputs); the threads end before the first cell forks.
    std::vector<SensorConfig> configs;
    for (uint32_t w : o.workers) {
        configs.push_back(
            engine_config(o, rs, spec, w, tb.traffic, tb.queue_packets, work, /*replay=*/true));
    }
    run.engines.resize(configs.size());
    std::vector<std::string> errors(configs.size());
    const int64_t s0 = picket::monotonic_ns();
    std::vector<std::thread> builders;
    for (size_t i = 0; i < configs.size(); ++i) {
        builders.emplace_back([&, i] {
            try {
                run.engines[i] = std::make_unique<Engine>(std::move(configs[i]));
            } catch (const std::exception& e) {
                errors[i] = e.what();
            }
        });
    }
    for (auto& b : builders) {
        b.join();
    }
    for (const auto& e : errors) {
        if (!e.empty()) {
            die(e);
        }
    }
    std::printf("%s: %zu row engines built in %.2f s; queue per worker %s\n", spec.id.c_str(),
                run.engines.size(), static_cast<double>(picket::monotonic_ns() - s0) / 1e9,
                tb.queue_text.c_str());
    for (uint32_t w : o.workers) {
        Row row;
        row.workers = w;
        tb.rows.push_back(row);
    }
    std::fflush(stdout);
}

// Every measurement, interleaved: the ladder column by column, each column for every
// configuration and row in turn, then the bisections step by step, so that the machine's drift
// (other tenants of its cores) hits every configuration and row alike and their comparison is
// fair. A configuration's ladder grows one column while a row has not lost a packet (the
// calibration only places the ladder; a neighbour's burst during it puts it too low) and, at
// the end, gets lower columns while every row lost packets at its first column.
void measure_all(const Options& o, std::vector<ConfigRun>& runs) {
    for (size_t i = 0;; ++i) {
        bool any = false;
        for (auto& run : runs) {
            Table& tb = run.tb;
            if (!tb.spec.available || i >= tb.columns_gbps.size()) {
                continue;
            }
            any = true;
            for (size_t r = 0; r < tb.rows.size(); ++r) {
                tb.rows[r].ladder.push_back(run_cell(o, tb.traffic, *run.engines[r], tb.spec,
                                                     tb.rows[r].workers, tb.columns_gbps[i],
                                                     "ladder"));
            }
            const bool some_row_lossless =
                std::any_of(tb.rows.begin(), tb.rows.end(), [](const Row& row) {
                    return std::all_of(row.ladder.begin(), row.ladder.end(),
                                       [](const Cell& c) { return c.lossless(); });
                });
            if (i + 1 == tb.columns_gbps.size() && o.ladder_gbps.empty() && some_row_lossless &&
                run.extra_columns < kMaxExtraColumns) {
                tb.columns_gbps.push_back(next_series_value(tb.columns_gbps.back(), o.quick));
                ++run.extra_columns;
            }
        }
        if (!any) {
            break;
        }
    }
    for (auto& run : runs) {
        Table& tb = run.tb;
        for (int lower = 0;
             tb.spec.available && o.ladder_gbps.empty() && lower < kMaxLowerColumns &&
             std::none_of(tb.rows.begin(), tb.rows.end(),
                          [](const Row& row) { return row.ladder.front().lossless(); });
             ++lower) {
            const double g = prev_series_value(tb.columns_gbps.front(), o.quick);
            tb.columns_gbps.insert(tb.columns_gbps.begin(), g);
            for (size_t r = 0; r < tb.rows.size(); ++r) {
                Row& row = tb.rows[r];
                row.ladder.insert(row.ladder.begin(), run_cell(o, tb.traffic, *run.engines[r],
                                                               tb.spec, row.workers, g, "ladder"));
            }
        }
    }
    std::vector<std::vector<Bisect>> state(runs.size());
    for (size_t c = 0; c < runs.size(); ++c) {
        for (auto& row : runs[c].tb.rows) {
            state[c].push_back(runs[c].tb.spec.available ? start_bisect(o, row) : Bisect{});
        }
    }
    for (bool any = true; any;) {
        any = false;
        for (size_t c = 0; c < runs.size(); ++c) {
            for (size_t r = 0; r < state[c].size(); ++r) {
                if (!state[c][r].done) {
                    any = true;
                    bisect_step(o, runs[c].tb.traffic, *runs[c].engines[r], runs[c].tb.spec,
                                runs[c].tb.rows[r], state[c][r]);
                }
            }
        }
    }
}

std::string cutoff_text(double gbps, bool open, double mean_bytes) {
    if (gbps <= 0) {
        return "none (lossy at every rate tried)";
    }
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%s%s Gbit/s (%s Mpps)", open ? ">= " : "",
                  fmt_rate(gbps).c_str(), fmt_rate(gbps * 1e9 / 8 / mean_bytes / 1e6).c_str());
    return buf;
}

void print_table(std::FILE* out, const Table& tb, const Ruleset& rs) {
    std::fprintf(out, "\n### %s\n\n", tb.spec.title.c_str());
    if (!tb.spec.available) {
        std::fprintf(out, "Not measured: %s.\n", tb.spec.why_unavailable.c_str());
        return;
    }
    const double mean = tb.traffic.mean_bytes();
    std::fprintf(
        out,
        "%% of offered packets processed. %s, %u rules loaded; %s packets per pass, mean %.0f "
        "B/packet; queue per worker %s; capacity with %u worker%s (exact offline reading of the "
        "input) %.3g Gbit/s (%.3g Mpps).\n\n",
        rs.name.c_str(), tb.load.loaded, with_commas(tb.traffic.packets).c_str(), mean,
        tb.queue_text.c_str(), tb.capacity_workers, tb.capacity_workers == 1 ? "" : "s",
        tb.capacity_gbps, tb.capacity_pps / 1e6);
    std::string head = "| workers |";
    std::string rule = "|---:|";
    for (double g : tb.columns_gbps) {
        head += ' ';
        head += fmt_rate(g);
        head += " Gbit/s |";
        rule += "---:|";
    }
    std::fprintf(out, "%s cut-off (0 loss) |\n%s---:|\n", head.c_str(), rule.c_str());
    bool any_limited = false;
    for (const auto& row : tb.rows) {
        std::string line = "| " + std::to_string(row.workers) + " |";
        for (const auto& c : row.ladder) {
            char buf[32];
            if (c.lossless()) {
                std::snprintf(buf, sizeof(buf), "100");
            } else {
                // Never round a lossy cell up to 100.
                std::snprintf(buf, sizeof(buf), "%.1f", std::min(99.9, c.pct()));
            }
            line += ' ';
            line += buf;
            line += c.source_limited() ? "* |" : " |";
            any_limited = any_limited || c.source_limited();
        }
        line += ' ';
        line += cutoff_text(row.cutoff_gbps, row.cutoff_open, mean);
        line += " |";
        std::fprintf(out, "%s\n", line.c_str());
    }
    if (any_limited) {
        std::fprintf(
            out,
            "\n\\* the replayer fell more than 3%% short of this rate (it shares the cores "
            "with the workers).\n");
    }
}

std::string work_dir;
void remove_work_dir() {
    if (!work_dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(work_dir, ec);
    }
}

void usage() {
    std::fprintf(stderr,
                 "usage: cutoff_bench [--rules DIR|FILE|generated] [--classification F]\n"
                 "                    [--pcap FILE | --gen-size SIZE] [--workers 1,2]\n"
                 "                    [--configs hs-jit,hs-nojit,pcre-jit,pcre-nojit]\n"
                 "                    [--ladder GBPS,...] [--secs S] [--calib-secs S] [--steps N]\n"
                 "                    [--repeat N] [--quick] [--set KEY=VALUE]... [--keep]\n");
}

double load_average() {
    double la[1] = {0};
    return getloadavg(la, 1) == 1 ? la[0] : -1;
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    bool secs_given = false, steps_given = false, calib_given = false, repeat_given = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char* name) -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "cutoff_bench: %s needs a value\n", name);
                usage();
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--rules") {
            o.rules = value("--rules");
        } else if (a == "--classification") {
            o.classification = value("--classification");
        } else if (a == "--pcap") {
            o.pcap = value("--pcap");
        } else if (a == "--gen-size") {
            o.gen_size = value("--gen-size");
        } else if (a == "--workers") {
            o.workers.clear();
            for (const auto& w : split(value("--workers"), ',')) {
                o.workers.push_back(static_cast<uint32_t>(std::max(1, std::atoi(w.c_str()))));
            }
        } else if (a == "--configs") {
            o.configs = split(value("--configs"), ',');
        } else if (a == "--ladder") {
            o.ladder_gbps.clear();
            for (const auto& g : split(value("--ladder"), ',')) {
                o.ladder_gbps.push_back(std::atof(g.c_str()));
            }
            std::sort(o.ladder_gbps.begin(), o.ladder_gbps.end());
        } else if (a == "--secs") {
            o.cell_secs = std::atof(value("--secs").c_str());
            secs_given = true;
        } else if (a == "--calib-secs") {
            o.calib_secs = std::atof(value("--calib-secs").c_str());
            calib_given = true;
        } else if (a == "--steps") {
            o.steps = std::max(0, std::atoi(value("--steps").c_str()));
            steps_given = true;
        } else if (a == "--repeat") {
            o.repeat = std::max(1, std::atoi(value("--repeat").c_str()));
            repeat_given = true;
        } else if (a == "--quick") {
            o.quick = true;
        } else if (a == "--set") {
            o.sets.push_back(value("--set"));
        } else if (a == "--keep") {
            o.keep = true;
        } else {
            usage();
            return 2;
        }
    }
    if (o.quick) {
        o.cell_secs = secs_given ? o.cell_secs : 0.25;
        o.calib_secs = calib_given ? o.calib_secs : 0.4;
        o.steps = steps_given ? o.steps : 2;
        o.repeat = repeat_given ? o.repeat : 1;
    }
    if (o.workers.empty() || o.cell_secs <= 0 || o.calib_secs <= 0 ||
        std::any_of(o.ladder_gbps.begin(), o.ladder_gbps.end(), [](double g) { return g <= 0; })) {
        usage();
        return 2;
    }
    std::sort(o.workers.begin(), o.workers.end());
    o.workers.erase(std::unique(o.workers.begin(), o.workers.end()), o.workers.end());

    std::vector<ConfigSpec> specs;
    for (const auto& id : o.configs) {
        ConfigSpec s;
        s.id = id;
        if (id == "hs-jit") {
            s.title = "Hyperscan prefilter, PCRE2 JIT (default)";
        } else if (id == "hs-nojit") {
            s.title = "Hyperscan prefilter, PCRE2 without JIT";
            s.jit = false;
        } else if (id == "pcre-jit") {
            s.title = "PCRE-only baseline (no Hyperscan prefilter), PCRE2 JIT";
            s.prefilter = false;
        } else if (id == "pcre-nojit") {
            s.title = "PCRE-only baseline (no Hyperscan prefilter), PCRE2 without JIT";
            s.prefilter = false;
            s.jit = false;
        } else {
            std::fprintf(stderr, "cutoff_bench: unknown configuration '%s'\n", id.c_str());
            usage();
            return 2;
        }
        specs.push_back(s);
    }

    char tmpl[] = "/tmp/picket-cutoff-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        die(std::string("mkdtemp: ") + std::strerror(errno));
    }
    work_dir = tmpl;
    if (o.keep) {
        std::printf("work directory (kept): %s\n", work_dir.c_str());
    } else {
        std::atexit(remove_work_dir);
    }
    const int64_t start_ns = picket::monotonic_ns();
    try {
        const Ruleset rs = pick_ruleset(o, work_dir);
        const Traffic t = pick_traffic(o, work_dir);
        std::printf("rules: %s\n", rs.what.c_str());
        std::printf(
            "traffic: %s: %s packets, %.1f MB, mean %.0f B/packet (Gbit/s = frame bytes as "
            "captured x 8 / s)\n",
            t.what.c_str(), with_commas(t.packets).c_str(), static_cast<double>(t.bytes) / 1e6,
            t.mean_bytes());
        std::printf(
            "rig: paced replay through the sensor Engine (pcap-file.loop + pcap-file.rate, "
            "drops counted as capture.queue_drops), one forked run per cell; %.2f s of traffic "
            "per cell, best of %d tries; bisection %d steps; %u cores; load average %.2f%s\n",
            o.cell_secs, o.repeat, o.steps, std::thread::hardware_concurrency(), load_average(),
            o.quick ? "; quick mode" : "");
        std::fflush(stdout);

        std::vector<ConfigRun> runs(specs.size());
        std::string no_prefilter_switch;  // set once an engine has shown it lacks the switch
        for (size_t c = 0; c < specs.size(); ++c) {
            runs[c].tb.spec = specs[c];
            if (!specs[c].prefilter && !no_prefilter_switch.empty()) {
                // No second rule load to learn the same.
                runs[c].tb.spec.available = false;
                runs[c].tb.spec.why_unavailable = no_prefilter_switch;
                std::printf("%s: not measured: %s\n", specs[c].id.c_str(),
                            no_prefilter_switch.c_str());
                continue;
            }
            calibrate_config(o, rs, t, runs[c], work_dir);
            if (!specs[c].prefilter && !runs[c].tb.spec.available) {
                no_prefilter_switch = runs[c].tb.spec.why_unavailable;
            }
        }
        const Traffic rows_input = rows_traffic(o, t, runs, work_dir);
        for (auto& run : runs) {
            if (run.tb.spec.available) {
                build_rows(o, rs, rows_input, run, work_dir);
            }
        }
        measure_all(o, runs);

        std::printf("\n## Zero-loss cut-off: %s, %.2f s per cell\n", rs.name.c_str(), o.cell_secs);
        for (const auto& run : runs) {
            print_table(stdout, run.tb, rs);
        }
        // Summary: every configuration's cut-off beside the default's, same workers.
        std::printf(
            "\n### Cut-off by configuration\n\n| configuration | workers | cut-off | vs "
            "default |\n|---|---:|---:|---:|\n");
        const Table* base = nullptr;
        for (const auto& run : runs) {
            if (run.tb.spec.id == "hs-jit" && run.tb.spec.available) {
                base = &run.tb;
            }
        }
        std::string last = "cutoff: rules=" + rs.name;
        char part[160];
        std::snprintf(part, sizeof(part), " mean_bytes=%.0f secs=%.2f steps=%d repeat=%d",
                      t.mean_bytes(), o.cell_secs, o.steps, o.repeat);
        last += part;
        for (const auto& run : runs) {
            const Table& tb = run.tb;
            if (!tb.spec.available) {
                std::printf("| %s | - | not measured | - |\n", tb.spec.title.c_str());
                last += " " + tb.spec.id + "=unavailable";
                continue;
            }
            for (size_t i = 0; i < tb.rows.size(); ++i) {
                const Row& row = tb.rows[i];
                std::string ratio = "-";
                if (base != nullptr && base->rows[i].cutoff_gbps > 0) {
                    char buf[32];
                    std::snprintf(buf, sizeof(buf), "%.2fx",
                                  row.cutoff_gbps / base->rows[i].cutoff_gbps);
                    ratio = buf;
                }
                std::printf(
                    "| %s | %u | %s | %s |\n", tb.spec.title.c_str(), row.workers,
                    cutoff_text(row.cutoff_gbps, row.cutoff_open, tb.traffic.mean_bytes()).c_str(),
                    ratio.c_str());
                std::snprintf(part, sizeof(part), " %s_w%u_gbps=%.4g%s", tb.spec.id.c_str(),
                              row.workers, row.cutoff_gbps, row.cutoff_open ? "+" : "");
                last += part;
            }
        }
        std::snprintf(part, sizeof(part), " wall_s=%.0f",
                      static_cast<double>(picket::monotonic_ns() - start_ns) / 1e9);
        last += part;
        std::printf("\n%s\n", last.c_str());
        std::fflush(stdout);
        // Every engine goes back to the kernel at exit: their destructors would take seconds
        // each (ET Open) for nothing.
        for (auto& run : runs) {
            for (auto& e : run.engines) {
                (void)e.release();
            }
        }
    } catch (const std::exception& e) {
        die(e.what());
    }
    return 0;
}
