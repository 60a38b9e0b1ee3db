// Detection: loads Suricata 7 / Snort 2.9 rules, compiles them into an immutable DetectEngine
// (rules grouped by protocol, direction and port; one Hyperscan database per group and
// inspection buffer; rules without a usable fast pattern in a short per-group list), and
// matches packets against it. The engine is built on a control thread and shared read-only by
// all workers; each worker owns a DetectWorker (Hyperscan scratch, PCRE2 match data,
// thresholds' hot state) tied to that engine generation.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "common/config.h"
#include "common/counter.h"
#include "common/stats.h"
#include "sensor/decode/decode.h"
#include "sensor/detect/action.h"
#include "sensor/detect/buffer_id.h"
#include "sensor/flow/flow.h"

namespace picket::sensor::detect {

struct Rule;
class FlowbitRegistry;
struct VarSet;
struct VarNames;

// detect.mpm-algo (Suricata's key): the multi-pattern prefilter that picks candidate rules.
// kHyperscan ("hs"): one Hyperscan literal database per rule group, built from the rules'
// fast patterns; kNone ("none"): no prefilter, every active rule of the packet's group is
// verified on every packet (the baseline the prefilter is measured against). Both give exactly
// the same alerts.
enum class MpmAlgo : uint8_t { kHyperscan, kNone };

// profiling.rules (--profile-rules): per-rule checks, matches and time, printed and written
// at exit. Off costs one predictable branch per packet.
struct RuleProfilingConfig {
    bool enabled = false;
    uint32_t limit = 10;                      // rows of the table printed at exit
    std::string filename = "rule_perf.json";  // in default-log-dir unless absolute
};

// The most threads one load compiles Hyperscan databases on (detect.compile-threads).
constexpr uint32_t kMaxCompileThreads = 8;

struct DetectConfig {
    std::vector<std::string> rule_files;
    // The language of a rule file's rules. kAuto decides per rule (Suricata first, then Snort 3
    // when the text uses Snort 3-only syntax); kSuricata never tries Snort 3; kSnort3 parses
    // every rule as Snort 3. `rule_syntax` is for every file not in `rule_file_syntax`
    // (sensor.yaml rule-syntax, --rule-syntax); `rule_file_syntax` is per file, keyed by the
    // path as in rule_files (a bundle's config.yaml rule-syntax, set by the agent).
    enum class FileSyntax : uint8_t { kAuto, kSuricata, kSnort3 };
    FileSyntax rule_syntax = FileSyntax::kAuto;
    std::map<std::string, FileSyntax> rule_file_syntax;
    // vars.address-groups / vars.port-groups from sensor.yaml; Suricata's defaults are
    // used for any that is not given (HOME_NET, EXTERNAL_NET, HTTP_PORTS, ...).
    std::map<std::string, std::string> address_vars;
    std::map<std::string, std::string> port_vars;
    std::string classification_file;  // "" = none (alerts get no category)
    std::string reference_file;
    std::string threshold_file;  // threshold.config: suppress, threshold, event_filter
    // action-order: the order rules are evaluated in (and a packet's alerts sorted by), pass
    // first by default; a matching pass rule ends the packet's inspection and discards the
    // alerts of the actions after it (docs/rules.md).
    std::array<Action, 4> action_order{Action::kPass, Action::kDrop, Action::kReject,
                                       Action::kAlert};
    bool pcre_jit = true;
    uint32_t packet_alert_max = 15;  // alerts kept per packet (Suricata's packet-alert-max)
    MpmAlgo mpm_algo = MpmAlgo::kHyperscan;
    RuleProfilingConfig profiling;
    // acl-file: the 5-tuple ACL (docs/acl.md) applied before detection; "" = none. Built and
    // published with each generation by the engine, not by DetectEngine::load.
    std::string acl_file;
    // detect.ip-only-acl: rules with no payload and no header option find their candidates
    // through a filter::AclClassifier (all_matches) instead of the address index.
    bool ip_only_acl = true;
    // detect.compile-threads: threads that compile the Hyperscan databases of one load
    // (0 = one per hardware thread that is not busy when the load starts, at least one; at most
    // kMaxCompileThreads). The databases come out the same whatever the number.
    uint32_t compile_threads = 0;
    // Reuse a database compiled by an earlier load that is still alive (the engine a reload
    // replaces) when its patterns and flags are the same, instead of compiling it again.
    bool reuse_databases = true;
};

// Reads the keys of sensor.yaml that belong to detection alone: detect.mpm-algo (hs | none)
// and profiling.rules.{enabled,limit,filename}. Throws ConfigError naming the key.
void read_detect_settings(const Config& config, DetectConfig* out);
// "hs" / "none".
const char* mpm_algo_name(MpmAlgo algo);

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
    double compile_ms = 0;  // everything after the parse; the phases below add up to about it
    // Phases of compile_ms (wall clock): fast pattern choice, transport/port grouping and the
    // parts' address indexes and IP-only classifiers, the Hyperscan databases (compiled on
    // compile_threads threads), and the rest (thresholds, flowbit checks, tables).
    double fast_pattern_ms = 0;
    double grouping_ms = 0;
    double hyperscan_ms = 0;
    double finish_ms = 0;
    double hyperscan_cpu_ms = 0;     // the databases' compile times added up (all threads)
    double slowest_database_ms = 0;  // the longest single database compile
    uint32_t compile_threads = 1;    // threads that compiled the databases
    uint32_t reused_databases = 0;   // databases taken from an earlier load instead of compiled
    // Peak resident memory of the process during the load (VmHWM, reset at the load's start
    // when the kernel allows it; else the process's peak so far), in bytes; 0 if unknown.
    uint64_t peak_rss_bytes = 0;
    bool peak_rss_since_start = false;  // the peak could not be reset: it covers the process
    uint64_t memory_bytes = 0;          // compiled databases + rule structures (estimate)
    uint32_t groups = 0;
    uint32_t hs_databases = 0;  // distinct databases (port groups with close patterns share one)
    uint32_t no_fast_pattern_rules = 0;
    // Rules with a pcre but no content to anchor it (no fast pattern): the regex runs on every
    // packet of their group ("PCRE is evil"). Each also gets a warning naming it.
    uint32_t pcre_without_content_rules = 0;
    MpmAlgo mpm_algo = MpmAlgo::kHyperscan;
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
    bool drop_rule = false;                  // the rule's action is drop or reject
    Action rule_action = Action::kAlert;     // the rule header's, or a rate_filter's new_action
    RejectTo reject_to = RejectTo::kSender;  // with rule_action kReject: the rule's target
    bool from_stream = false;                // matched on reassembled stream data
    // A drop or pass applies to the rest of the flow, not only this packet: the match was on
    // the stream or a transaction, or the rule is an app-layer or header-only rule (Suricata's
    // PACKET_ALERT_FLAG_APPLY_ACTION_TO_FLOW). Otherwise a drop drops this packet alone.
    bool flow_scope = false;
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
    // Bytes of already inspected stream data worth keeping in front of new data: the longest
    // fast pattern of the TCP groups (a match must end in the new bytes to count).
    uint32_t stream_tail_bytes() const;
    // Whether a Snort 3 rule that reads the stream may apply to a flow of this service: its
    // Snort 3 PDUs are then worth cutting (snort3_pdu.h, InspectExtras::snort3_pdu).
    bool snort3_pdus(AppProto service) const;
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
    // detect.vars_dropped: pcre captures not stored (the flow's 16 variables or 1024 bytes
    // full, no flow, no variable block left).
    Counter vars_dropped;
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
    // The variables of the packet last inspected (its alerts' "pktvars"); worker thread.
    const VarSet* packet_vars() const;
    // "detect.alert", "detect.alert_queue_overflow", ...; any thread.
    void export_stats(StatsSnapshot& out) const;
    struct Impl;
    Impl& impl() { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
    DetectCounters counters_;
};

// Reassembled TCP data of the packet's direction, for stream inspection: `data[0, len)` is
// contiguous stream bytes, of which `[new_off, len)` arrived with this packet and the bytes
// before are the tail of earlier data kept so a pattern straddling the boundary is found. A
// rule is checked on the stream only when its fast pattern ends in the new bytes, so each byte
// is inspected once per rule group however long the stream grows.
struct StreamView {
    const uint8_t* data = nullptr;
    uint32_t len = 0;
    uint32_t new_off = 0;
};

// What the worker knows of the packet beyond its headers.
struct InspectExtras {
    AppProto app = AppProto::kUnknown;   // the flow's app protocol (rule headers http, dns, tls)
    const StreamView* stream = nullptr;  // TCP stream data for this direction, if any
    // The packet's TCP data went into the stream (stream::kEventStreamAdd, IDS timing):
    // stream-capable rules (Rule::stream_capable) do not match its payload.
    bool pkt_in_stream = false;
    // The flow's payload is no longer inspected (a TLS session past its handshake,
    // app-layer.protocols.tls.encryption-handling): no rule that reads the packet payload or
    // the stream is checked (Suricata's PKT_NOPAYLOAD_INSPECTION); header-only and app-layer
    // rules still are.
    bool no_payload = false;
    // An end-of-flow pseudo packet: only the stream view is inspected (rules that cannot
    // match it are not checked).
    bool stream_only = false;
    // Snort 3 PDUs (snort3_pdu.h): this direction of the flow is cut into its service's PDUs,
    // so Snort 3 rules with flow:only_stream see those PDUs only, not the raw stream chunks
    // (the others still match each packet, as Snort 3's wire packets).
    bool snort3_pdu_dir = false;
    // This inspection is of one Snort 3 PDU, the stream view (new_off 0) on a packet without
    // payload: only Snort 3 rules that read the stream are checked, on the PDU alone.
    bool snort3_pdu = false;
    // The transactions inspected were parsed from data the receiver never acknowledged,
    // delivered when the flow ended (end-of-flow flush). Rules written in Snort 3 do not
    // inspect them: Snort 3 fills its service buffers only from data its stream flushed on
    // acknowledgement (IDS mode), while Suricata's pseudo packets do inspect it.
    bool unacked_end = false;
    // Protocol detection finished for the packet's direction with this packet (Suricata's
    // PKT_PROTO_DETECT_TS/TC_DONE; flow::Flow::proto_detect): protocol-detection-only rules
    // (Rule::pd_only) are checked on such packets only.
    bool proto_detect_pkt = false;
    mutable bool passed = false;  // out: a pass rule matched (the packet's inspection ended)
    // out: that pass applies to the flow: it matched on the stream or a transaction, or the
    // rule is an app-layer rule (alert http ...) or header-only (addresses, ports and
    // protocol, no option). A pass on a packet's own payload passes that packet alone (Suricata's
    // PACKET_ALERT_FLAG_APPLY_ACTION_TO_FLOW).
    mutable bool pass_flow = false;
    // out: a drop or reject rule with noalert matched (Suricata: "drop ... noalert;" drops
    // without an alert). Not reset by inspect(): one InspectExtras may span a packet's calls.
    mutable bool silent_drop = false;
    mutable bool silent_reject = false;
    mutable bool silent_drop_flow = false;  // one of them applies to the flow (flow_scope)
    mutable RejectTo silent_reject_to = RejectTo::kNone;  // the silent rejects' targets, or-ed
    // The rule_index of the first silent drop or reject that stands (the drop record's
    // "alert" object, Suricata's PacketAlerts.drop), or kNoSilentRule.
    static constexpr uint32_t kNoSilentRule = UINT32_MAX;
    mutable uint32_t silent_drop_rule = kNoSilentRule;
    // Packet variables (pktvar): the first inspection with this InspectExtras clears the
    // worker's and sets this; the later ones (the packet's transactions) keep what it stored.
    mutable bool vars_open = false;
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
                     uint32_t out_cap, const InspectExtras* extras = nullptr);
    // Inspects one app-layer transaction (its buffers as of this packet) against the rules
    // that use app-layer buffers or keywords of view.proto; alerts of a rule already in `log`
    // for this transaction are not repeated. Same output contract as inspect().
    uint32_t inspect_tx(const decode::Packet& p, flow::Flow* f, flow::Direction dir,
                        const AppView& view, TxAlertLog* log, AlertRecord* out, uint32_t out_cap,
                        const InspectExtras* extras = nullptr);
    const DetectEngine& engine() const { return *engine_; }
    DetectCounters& counters() { return flow_state_->counters(); }

private:
    friend class RuleProfile;  // reads the per-rule figures once the worker is done with them
    // inspect() with or without profiling: two copies of the loop, chosen once per packet.
    template <bool kProfile>
    uint32_t inspect_packet(const decode::Packet& p, flow::Flow* f, flow::Direction dir,
                            AlertRecord* out, uint32_t out_cap, const InspectExtras* extras,
                            const AppView* view, TxAlertLog* log);
    std::shared_ptr<const DetectEngine> engine_;
    WorkerFlowState* flow_state_;
    struct Scratch;
    std::unique_ptr<Scratch> scratch_;
    bool profiling_ = false;
};

// ---------------------------------------------------------------------------------------
// Rule profiling (profiling.rules). Each DetectWorker of a profiling engine keeps, per rule, a
// flat array entry indexed by the rule's index: checks (verifications after the prefilter),
// matches (every option matched, before thresholds and noalert) and CPU ticks spent on the rule
// (its checks and what a match then does; rdtsc on x86-64, nanoseconds elsewhere), plain
// integers written by that worker alone. A
// RuleProfile merges those arrays on the control thread once no worker uses them any more (a
// generation retired by a reload, or every generation after run() returns), keyed by
// gid:sid:rev: one rule's figures add up across workers and reloads, and a rule whose rev
// changed in a reload is a separate entry.

struct RuleProfileEntry {
    uint32_t gid = 1, sid = 0, rev = 0;
    std::string msg;
    std::string file;
    uint32_t line = 0;
    std::vector<std::string> keywords;  // the rule's match keywords, sorted: "content", "pcre"
    std::string fast_pattern;  // as chosen by the compiler: pkt_data:"abc|0d 0a|" nocase; ""
    uint64_t checks = 0, matches = 0, ticks = 0, worst_ticks = 0;
};

// A rule's keyword list joined by ',' ("content,flow,pcre"); "header-only" when empty.
std::string keyword_group(const RuleProfileEntry& e);

// The rules of one keyword (a rule counts under each of its keywords) or one fast pattern.
struct RuleProfileGroup {
    std::string name;  // keyword, or fast pattern ("none" for rules without one)
    uint32_t rules = 0;
    uint64_t checks = 0, matches = 0, ticks = 0, worst_ticks = 0;
};

class RuleProfile {
public:
    // Adds the figures of one worker of one generation; nothing when its engine does not
    // profile. That worker's thread must no longer run `worker` (reload has seen it switch,
    // or run() returned). Control thread.
    void add(const DetectWorker& worker);
    // Calibrates ticks against steady_clock (from the earliest worker's creation until now,
    // waiting until at least 20 ms have passed) and sorts the rules by total ticks, most first
    // (then checks, then gid:sid:rev). Call once, after the last add().
    void finish();

    const std::vector<RuleProfileEntry>& rules() const { return rules_; }
    std::vector<RuleProfileGroup> by_keyword() const;       // sorted like rules()
    std::vector<RuleProfileGroup> by_fast_pattern() const;  // sorted like rules()
    double ticks_per_us() const { return ticks_per_us_; }
    uint32_t generations() const { return generations_; }
    uint32_t worker_arrays() const { return arrays_; }
    bool profiling() const { return arrays_ != 0; }

    // What the sensor prints at exit: totals, the `limit` costliest rules, the keywords and
    // the `limit` costliest fast patterns.
    std::string format_table(uint32_t limit) const;
    // rule_perf.json: every rule, plus "by_keyword" and "by_fast_pattern".
    std::string to_json() const;
    // Writes to_json() to path; false with *error ("rule_perf.json: cannot write: ...").
    bool write_json(const std::string& path, std::string* error) const;

private:
    std::vector<RuleProfileEntry> rules_;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, size_t> index_;  // gid:sid:rev
    const void* last_engine_ = nullptr;  // to count generations (consecutive adds)
    uint32_t generations_ = 0;
    uint32_t arrays_ = 0;
    MpmAlgo mpm_algo_ = MpmAlgo::kHyperscan;
    uint64_t start_ticks_ = 0;
    int64_t start_ns_ = 0;
    double ticks_per_us_ = 0;
};

}  // namespace picket::sensor::detect
