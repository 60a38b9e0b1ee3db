// Staged rollouts: a background thread that drives the manager's open deployments through the
// store's state machine: canaries first, a soak time under a health gate, then the rest, or an
// automatic rollback of the canaries; it also times out targets that never answer. Owned by
// manager/service (one Rollout per manager); every public method is thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "manager/store/store.h"

namespace picket::manager::rollout {

// Bounds a canary must hold over the soak window. 0 = "use the default" in requests.
struct HealthGate {
    double max_drop_ratio = 0.01;        // drops / packets over the window
    double max_alerts_per_second = 100;  // per sensor, over the window
};

// The latest monotonic counters of one sensor (flat EVE names) and the report's timestamp.
// `stored`: read from the store (the sensor streams to another manager replica): only the
// counters the store keeps (decoder.pkts, capture.kernel_drops = every drop, detect.alert) and
// the manager clock. The gate compares two snapshots of one kind only: when a sensor's kind
// changes during a soak (it moved between replicas), its baseline starts over.
struct CounterSnapshot {
    int64_t timestamp = 0;  // ns, sensor clock (stored: the manager's)
    std::map<std::string, uint64_t> counters;
    bool stored = false;
};

struct GateVerdict {
    bool ok = true;
    std::string reason;  // "drop ratio 0.0500 > 0.0100 on s2"
};

// Pure gate check between two snapshots of one sensor. Packets = the larger delta of
// decoder.pkts and capture.kernel_packets, drops = capture.kernel_drops + capture.queue_drops,
// alerts = detect.alert; a counter that went backwards (sensor restart) counts from zero. With no
// packets the drop ratio is 0 (no drops) or 1; the alert rate needs a positive time span.
GateVerdict evaluate_gate(const HealthGate& gate, const std::string& sensor,
                          const CounterSnapshot& base, const CounterSnapshot& current);

struct RolloutOptions {
    std::chrono::milliseconds poll_interval{500};
    // A target sent and not answered within this time is timed out; so is a canary target
    // still pending this long after its deployment was created (sensor offline).
    int64_t target_timeout_seconds = 60;
    HealthGate default_gate;
    std::function<int64_t()> now;  // ns since the epoch; empty = wall clock
    // Several manager replicas on one database: only the leader drives deployments (the
    // thread's passes are skipped elsewhere). Empty = always (one manager).
    std::function<bool()> is_leader;
};

class Rollout {
public:
    // Latest counters of a sensor, nullopt when it has not reported (yet).
    using CountersFn = std::function<std::optional<CounterSnapshot>(const std::string& sensor)>;
    // Called after targets became dispatchable (stage advanced, rollback created).
    using WakeFn = std::function<void()>;

    Rollout(store::Store& store, RolloutOptions options, CountersFn counters, WakeFn wake);
    ~Rollout();  // stop()
    Rollout(const Rollout&) = delete;
    Rollout& operator=(const Rollout&) = delete;

    void start();  // background thread: step() every poll_interval or on kick()
    void stop();   // idempotent
    void kick();   // run a pass now (a result arrived, a deployment was created)

    // The gate of a deployment (request values; 0 fields take the defaults), kept in memory.
    void set_gate(int64_t deployment_id, const HealthGate& requested);
    HealthGate gate(int64_t deployment_id) const;
    // The gate a deployment runs under: the one set_gate kept, else the one stored with the
    // deployment (0 fields: the defaults), so that a manager restart keeps each one's own.
    HealthGate gate(const store::Deployment& d) const;

    // One pass over the open deployments. Public for tests that drive it without the thread.
    absl::Status step();

private:
    struct Soak {
        int64_t started_at = 0;                           // manager clock, ns
        std::map<std::string, CounterSnapshot> baseline;  // per canary, first snapshot seen
    };

    int64_t now() const;
    absl::Status drive(const store::Deployment& d, bool* woke);
    // Ends a deployment in its canary stage: rolled back (with a rollback deployment of the
    // canaries that applied) or failed.
    absl::Status fail(const store::Deployment& d, const std::vector<store::Target>& canaries,
                      const std::string& reason, bool* woke);
    void run();

    store::Store& store_;
    RolloutOptions options_;
    CountersFn counters_;
    WakeFn wake_;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    bool kicked_ = false;
    std::map<int64_t, HealthGate> gates_;
    std::map<int64_t, Soak> soaks_;  // only touched by step() (one pass at a time: step_mu_)
    bool lead_lost_ = false;         // run() only: a pass was skipped as a follower
    std::mutex step_mu_;
    std::thread thread_;
};

}  // namespace picket::manager::rollout
