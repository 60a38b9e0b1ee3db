// EVE JSON output. EveWriter appends one JSON object per line to LOGDIR/eve.json, in
// Suricata's field layout, so tools that read Suricata's eve.json read ours. Stats events
// nest the flat dotted counter names ("decoder.event.ipv4.trunc_pkt") into objects. One
// writer thread owns an EveWriter (the stats/output thread); workers never write to it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/stats.h"

namespace picket::sensor::output {

struct WorkerRate {
    uint32_t worker = 0;
    uint64_t packets = 0;  // cumulative
    uint64_t bytes = 0;    // cumulative
    double pkts_per_sec = 0;
    double mbit_per_sec = 0;
};

struct Rates {
    double interval_sec = 0;
    double pkts_per_sec = 0;
    double mbit_per_sec = 0;
    std::vector<WorkerRate> workers;
};

// Turns {"a.b": 1, "a.c.d": 2} into {"a": {"b": 1, "c": {"d": 2}}}. A name that is both a
// leaf and a prefix of another keeps the leaf under "<name>._value" rather than losing it.
nlohmann::json nest_stats(const StatsSnapshot& stats);

// The EVE stats event: {"timestamp", "event_type": "stats", "stats": {"uptime", ...nested
// counters..., "rates": {...}}}.
nlohmann::json make_stats_event(int64_t ts_ns, int64_t uptime_sec, const StatsSnapshot& stats,
                                const Rates& rates);

class EveWriter {
public:
    // Opens (appends to) path; throws std::runtime_error naming the path on failure.
    explicit EveWriter(const std::string& path);
    ~EveWriter();
    EveWriter(const EveWriter&) = delete;
    EveWriter& operator=(const EveWriter&) = delete;

    void write(const nlohmann::json& event);
    void flush();
    const std::string& path() const { return path_; }

private:
    std::string path_;
    FILE* file_ = nullptr;
};

}  // namespace picket::sensor::output
