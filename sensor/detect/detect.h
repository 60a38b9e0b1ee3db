// Detection: loads Suricata 7 / Snort 2.9 rules, compiles them into an immutable DetectEngine
// (rules grouped by protocol, direction and port; one Hyperscan database per group and
// inspection buffer; rules without a usable fast pattern in a short per-group list), and
// matches packets against it. The engine is built on a control thread and shared read-only by
// all workers; each worker owns a DetectWorker (Hyperscan scratch, PCRE2 match data,
// thresholds' hot state) tied to that engine generation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"
#include "sensor/decode/decode.h"
#include "sensor/flow/flow.h"

namespace picket::sensor::detect {

struct Rule;
class FlowbitRegistry;

struct DetectConfig {
    std::vector<std::string> rule_files;
    // vars.address-groups / vars.port-groups from sensor.yaml; Suricata's defaults are
    // used for any that is not given (HOME_NET, EXTERNAL_NET, HTTP_PORTS, ...).
    std::map<std::string, std::string> address_vars;
    std::map<std::string, std::string> port_vars;
    std::string classification_file;  // "" = none (alerts get no category)
    std::string reference_file;
    std::string threshold_file;  // threshold.config: suppress, threshold, event_filter
    bool pcre_jit = true;
    uint32_t packet_alert_max = 15;  // alerts kept per packet (Suricata's packet-alert-max)
};

struct RuleDiagnostic {
    std::string file;
    uint32_t line = 0;
    uint32_t sid = 0;      // 0 when the sid could not be read
    std::string reason;    // e.g. "unknown keyword 'lua'"
    std::string category;  // summary bucket: "unknown keyword", "bad pcre", "duplicate sid", ...
    std::string to_string() const;  // "file:line sid N: reason"
};

struct LoadSummary {
    uint32_t files = 0;
    uint32_t rules_seen = 0;  // enabled rule lines
    uint32_t loaded = 0;
    uint32_t skipped = 0;
    std::map<std::string, uint32_t> skipped_by_reason;
    std::vector<RuleDiagnostic> diagnostics;  // one per skipped rule
    // Rules that loaded with a caveat, and threshold.config problems, as "warning: ..." text
    // ("a.rules:3 sid 10: flowbit 'x' is checked but never set").
    std::vector<std::string> warnings;
    double parse_ms = 0;
    double compile_ms = 0;
    uint64_t memory_bytes = 0;  // compiled databases + rule structures (estimate)
    uint32_t groups = 0;
    uint32_t hs_databases = 0;
    uint32_t no_fast_pattern_rules = 0;
    // Loaded rules that need an app-layer protocol (http, dns, tls, ...): they match once the
    // app layer identifies flows; until then they are kept out of the matching structures.
    uint32_t app_layer_rules = 0;
    // Several lines; the last is exactly "rules: N loaded, M skipped".
    std::string to_string() const;
};

enum class AlertAction : uint8_t { kAllowed, kBlocked };

// One alert as handed from a worker to the output thread. Rule pointers stay valid while the
// engine generation that produced them lives (the output thread holds a reference).
struct AlertRecord {
    const Rule* rule = nullptr;
    uint32_t rule_index = 0;  // into DetectEngine::rule_infos()
    AlertAction action = AlertAction::kAllowed;
    bool drop_rule = false;  // the rule's action is drop or reject
    uint64_t tx_id = 0;
};

// What the output side needs to know of a rule, without the rule model.
struct RuleInfo {
    uint32_t gid = 1, sid = 0, rev = 0;
    std::string msg;
    std::string category;
    int priority = 3;
    std::vector<std::string> metadata;  // "key value" entries
};

class DetectEngine {
public:
    // Loads, checks and compiles. Never throws for bad rules (they are skipped and
    // diagnosed); throws std::runtime_error for unreadable rule files or config files.
    static std::shared_ptr<const DetectEngine> load(const DetectConfig& config,
                                                    std::shared_ptr<FlowbitRegistry> flowbits,
                                                    LoadSummary* summary);
    ~DetectEngine();
    uint32_t rule_count() const;
    const DetectConfig& config() const;
    const std::shared_ptr<FlowbitRegistry>& flowbit_registry() const;
    // One entry per loaded rule, indexed like AlertRecord::rule_index.
    std::vector<RuleInfo> rule_infos() const;
    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    DetectEngine();
    std::unique_ptr<Impl> impl_;
};

// Counters a worker keeps about detection ("detect.alert", ...).
struct DetectCounters {
    Counter alerts;          // detect.alert
    Counter alerts_dropped;  // detect.alert_queue_overflow (output queue full)
    Counter alerts_suppressed;
    Counter prefilter_candidates;
    Counter rules_evaluated;
};

// Per-worker detection state that outlives engine generations: the flowbit stores hanging on
// the worker's flows (their names live in the FlowbitRegistry, which outlives engines too).
// Owned by the worker next to its flow table; used by the DetectWorker of each generation.
class WorkerFlowState {
public:
    explicit WorkerFlowState(std::shared_ptr<FlowbitRegistry> registry);
    ~WorkerFlowState();
    WorkerFlowState(const WorkerFlowState&) = delete;
    WorkerFlowState& operator=(const WorkerFlowState&) = delete;
    // Gives back what detection attached to f; the flow table's on_free callback calls it.
    void release_flow(flow::Flow& f);
    // A generation whose rules named new flowbits may need wider stores (worker thread).
    void adopt(const DetectEngine& engine);
    // Detection counters, cumulative across generations (written by the worker).
    DetectCounters& counters() { return counters_; }
    // "detect.alert", "detect.alert_queue_overflow", ...; any thread.
    void export_stats(StatsSnapshot& out) const;
    struct Impl;
    Impl& impl() { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
    DetectCounters counters_;
};

class DetectWorker {
public:
    // flow_state: the worker's state that survives reloads; must outlive this DetectWorker.
    DetectWorker(std::shared_ptr<const DetectEngine> engine, WorkerFlowState* flow_state);
    ~DetectWorker();
    // Inspects one decoded packet (with its flow, or nullptr). Fills `out` with up to
    // packet_alert_max alerts, in Suricata's order (action priority, then sid), and returns
    // how many. Applies flowbits, thresholds and noalert. No allocation in steady state.
    uint32_t inspect(const decode::Packet& p, flow::Flow* f, flow::Direction dir, AlertRecord* out,
                     uint32_t out_cap);
    const DetectEngine& engine() const { return *engine_; }
    DetectCounters& counters() { return flow_state_->counters(); }

private:
    std::shared_ptr<const DetectEngine> engine_;
    WorkerFlowState* flow_state_;
    struct Scratch;
    std::unique_ptr<Scratch> scratch_;
};

}  // namespace picket::sensor::detect
