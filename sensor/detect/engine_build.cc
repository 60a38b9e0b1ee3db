// DetectEngine::load (control thread): loads and orders the rules, places them in transport
// and destination-port groups, has the prefilter databases built (engine_prefilter.cc) and
// sums up the load.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <thread>

#include "sensor/detect/engine_impl.h"
#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Resets the process's peak resident size (VmHWM) so that it measures this load; false when
// the kernel does not allow it.
bool reset_peak_rss() {
    std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
    if (f == nullptr) {
        return false;
    }
    const bool ok = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && ok;
}

// VmHWM of /proc/self/status in bytes; 0 when it cannot be read.
uint64_t peak_rss() {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    if (f == nullptr) {
        return 0;
    }
    char line[256];
    unsigned long long kib = 0;
    while (std::fgets(line, sizeof(line), f) != nullptr) {
        if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1) {
            break;
        }
    }
    std::fclose(f);
    return static_cast<uint64_t>(kib) * 1024;
}

// detect.compile-threads 0: the hardware threads that are not running something else now
// (/proc/loadavg's runnable tasks, this thread aside), at least one. A machine whose cores are
// busy gains nothing from more compile threads, only memory and cache misses.
uint32_t spare_cpus() {
    const uint32_t hw = std::max(1u, std::thread::hardware_concurrency());
    std::FILE* f = std::fopen("/proc/loadavg", "r");
    if (f == nullptr) {
        return hw;
    }
    double l1 = 0, l5 = 0, l15 = 0;
    unsigned running = 0, total = 0;
    const int n = std::fscanf(f, "%lf %lf %lf %u/%u", &l1, &l5, &l15, &running, &total);
    std::fclose(f);
    if (n != 5 || running == 0) {
        return hw;
    }
    const uint32_t busy = running - 1;
    return busy >= hw ? 1 : hw - busy;
}

// Which transport classes a rule can apply to.
uint8_t class_mask(const Rule& r) {
    switch (r.proto.l4) {
        case ProtoSpec::kTcp:
            return 1u << kClassTcp;
        case ProtoSpec::kUdp:
            return 1u << kClassUdp;
        case ProtoSpec::kIcmp:
            return 1u << kClassIcmp;
        case ProtoSpec::kIp:
            break;
    }
    if (r.proto.app == AppProto::kDns) {
        return (1u << kClassTcp) | (1u << kClassUdp);
    }
    return 0x0f;
}

// "any" with exclusions (e.g. !80) is still port-specific: it misses some ports.
bool ports_are_specific(const PortSet& s) {
    return !s.any || !s.exclude.empty();
}

// Ports are only meaningful for TCP and UDP; for ICMP and other IP one group holds all.
}  // namespace

// Picks the rule's fast pattern: an explicit fast_pattern wins; otherwise the longest
// non-negated content (ties: the first). Returns false when the rule has no usable content.
bool choose_fast_pattern(const Rule& r, FastPattern* out, bool app_only) {
    bool found = false;
    bool found_explicit = false;
    size_t best_len = 0;
    for (const auto& bm : r.buffers) {
        if (app_only && bm.buffer == BufferId::kPacket) {
            continue;
        }
        for (const auto& opt : bm.options) {
            ContentInfo ci;
            if (!get_content_info(*opt, &ci) || ci.negated || ci.bytes.empty()) {
                continue;
            }
            std::string bytes = ci.bytes;
            if (ci.has_chop && ci.chop_offset < bytes.size()) {
                bytes = bytes.substr(ci.chop_offset, ci.chop_length);
            }
            if (found_explicit && !ci.fast_pattern) {
                continue;
            }
            bool take = !found || (ci.fast_pattern && !found_explicit) || bytes.size() > best_len;
            if (take) {
                out->buffer = bm.buffer;
                out->transforms = bm.transforms;
                out->bytes = bytes;
                out->nocase = ci.nocase;
                const bool bounded = bm.buffer == BufferId::kPacket && bm.transforms == 0 &&
                                     !ci.relative && !ci.fast_pattern_only && ci.depth > 0 &&
                                     ci.offset >= 0 && ci.depth > ci.offset;
                out->lo = bounded ? static_cast<uint32_t>(ci.offset) : 0;
                out->hi = bounded ? static_cast<uint32_t>(ci.depth) : 0;
                best_len = bytes.size();
                found = true;
                found_explicit = found_explicit || ci.fast_pattern;
            }
        }
    }
    return found;
}

namespace {

// The app-layer protocol a rule inspects (its buffers', or what a keyword such as urilen
// needs); kUnknown for packet rules, which may still name a protocol in their header
// (`alert http ... content:"x";` matches packets of HTTP flows).
AppProto rule_app(const Rule& r) {
    for (const auto& bm : r.buffers) {
        if (bm.buffer != BufferId::kPacket) {
            // file.data / file.name are HTTP's, or ftp-data's on an ftp-data rule.
            if ((bm.buffer == BufferId::kFileData || bm.buffer == BufferId::kFileName) &&
                r.proto.app == AppProto::kFtpData) {
                return AppProto::kFtpData;
            }
            return buffer_def(bm.buffer).app;
        }
    }
    return r.app_needed;
}

// A rule whose payload is matched by pcre alone: no content gives it a fast pattern, so the
// prefilter cannot skip it and the regex runs on every packet of its group (of its address
// range, when the address index takes it).
bool pcre_without_content(const Rule& r) {
    FastPattern fp;
    if (choose_fast_pattern(r, &fp)) {
        return false;
    }
    for (const auto& bm : r.buffers) {
        for (const auto& opt : bm.options) {
            if (std::string_view(opt->keyword()) == "pcre") {
                return true;
            }
        }
    }
    return false;
}

bool rule_sets_flowbits(const Rule& r) {
    for (const auto& op : r.flowbits) {
        if (op.cmd == FlowbitCmd::kSet || op.cmd == FlowbitCmd::kUnset ||
            op.cmd == FlowbitCmd::kToggle) {
            return true;
        }
    }
    return false;
}

// Suricata's protocol-detection-only rule (SIG_TYPE_PDONLY): no protocol in the header, no
// buffer, and app-layer-protocol as its only match besides flow:to_server/to_client and
// flowbits:set (docs/rules.md, "Protocol-only rules").
bool is_pd_only(const Rule& r) {
    if (r.proto.app != AppProto::kUnknown || r.app_needed != AppProto::kUnknown ||
        !r.buffers.empty() || r.header_options.empty() || !r.flowints.empty() || !r.xbits.empty() ||
        (r.flow_flags & ~(kFlowToServer | kFlowToClient)) != 0) {
        return false;
    }
    bool pd = false;
    for (const auto& h : r.header_options) {
        const std::string_view k = h->keyword();
        if (k == "app-layer-protocol") {
            pd = true;
        } else if (k != "flow") {  // flow: only to_server / to_client (flow_flags above)
            return false;
        }
    }
    if (!pd) {
        return false;
    }
    for (const auto& op : r.flowbits) {
        if (op.cmd != FlowbitCmd::kSet && op.cmd != FlowbitCmd::kNoalert) {
            return false;
        }
    }
    return true;
}

}  // namespace

DetectEngine::DetectEngine() : impl_(new Impl) {}
DetectEngine::~DetectEngine() = default;
uint32_t DetectEngine::rule_count() const {
    return static_cast<uint32_t>(impl_->rules.size());
}
const DetectConfig& DetectEngine::config() const {
    return impl_->config;
}

std::vector<RuleInfo> DetectEngine::rule_infos() const {
    std::vector<RuleInfo> out(impl_->rules.size());
    for (const auto& r : impl_->rules) {
        RuleInfo& i = out[r->index];
        i.gid = r->gid;
        i.sid = r->sid;
        i.rev = r->rev;
        i.msg = r->msg;
        i.category = r->category;
        i.priority = r->priority;
        i.metadata = r->metadata;
    }
    return out;
}

std::shared_ptr<const DetectEngine> DetectEngine::load(const DetectConfig& config,
                                                       std::shared_ptr<FlowbitRegistry> flowbits,
                                                       LoadSummary* summary) {
    const bool peak_reset = reset_peak_rss();
    std::shared_ptr<DetectEngine> engine(new DetectEngine());
    Impl& d = *engine->impl_;
    d.config = config;
    d.flowbits = flowbits ? std::move(flowbits) : std::make_shared<FlowbitRegistry>();

    VarTable vars = VarTable::suricata_defaults();
    for (const auto& [k, v] : config.address_vars) {
        vars.address[k] = v;
    }
    for (const auto& [k, v] : config.port_vars) {
        vars.port[k] = v;
    }
    ClassificationTable classes;
    if (!config.classification_file.empty()) {
        classes = ClassificationTable::load(config.classification_file);
    }
    ParseEnv env;
    env.vars = &vars;
    env.classifications = &classes;
    env.flowbits = d.flowbits.get();
    env.pcre_jit = config.pcre_jit;
    auto syntax = [](DetectConfig::FileSyntax s) {
        switch (s) {
            case DetectConfig::FileSyntax::kSuricata:
                return ParseEnv::Syntax::kSuricata;
            case DetectConfig::FileSyntax::kSnort3:
                return ParseEnv::Syntax::kSnort3;
            case DetectConfig::FileSyntax::kAuto:
                break;
        }
        return ParseEnv::Syntax::kAuto;
    };
    env.syntax = syntax(config.rule_syntax);
    std::map<std::string, ParseEnv::Syntax> syntax_by_file;
    for (const auto& [file, s] : config.rule_file_syntax) {
        syntax_by_file[file] = syntax(s);
    }
    LoadedRules loaded = load_rule_files(config.rule_files, env, syntax_by_file);
    LoadSummary sum = std::move(loaded.summary);
    sum.mpm_algo = config.mpm_algo;
    // In file order, before the evaluation order moves flowbit setters first.
    for (const auto& r : loaded.rules) {
        if (pcre_without_content(*r)) {
            ++sum.pcre_without_content_rules;
            sum.warnings.push_back(r->file + ":" + std::to_string(r->line) + " sid " +
                                   std::to_string(r->sid) +
                                   ": pcre without content anchor: every packet of its port "
                                   "group runs the regex");
        }
    }

    // Evaluation order (Suricata's signature ordering): by action in the configured
    // action-order, then flowbit setters first (so a bit set by one rule is visible to a
    // checker of the same action on the same packet), then xbits / hostbits setters first
    // (Suricata orders host and ip_pair bit setters before their readers, and a tx bit set on
    // a transaction is then seen by the checkers inspecting that transaction in the same
    // pass), then file order. Stable.
    d.action_rank = action_ranks(config.action_order);
    std::stable_sort(loaded.rules.begin(), loaded.rules.end(),
                     [&d](const std::unique_ptr<Rule>& a, const std::unique_ptr<Rule>& b) {
                         const uint8_t ra = d.action_rank[static_cast<size_t>(a->action)];
                         const uint8_t rb = d.action_rank[static_cast<size_t>(b->action)];
                         if (ra != rb) {
                             return ra < rb;
                         }
                         const bool fa = rule_sets_flowbits(*a);
                         if (fa != rule_sets_flowbits(*b)) {
                             return fa;
                         }
                         return a->has_xbit_actions && !b->has_xbit_actions;
                     });
    d.rules = std::move(loaded.rules);
    for (size_t i = 0; i < d.rules.size(); ++i) {
        Rule& r = *d.rules[i];
        r.index = static_cast<uint32_t>(i);
        // Only the header (addresses, ports, protocol) decides whether it can match.
        r.ip_only = r.buffers.empty() && r.header_options.empty() && r.flow_flags == 0 &&
                    r.app_needed == AppProto::kUnknown && r.proto.app == AppProto::kUnknown;
        r.pd_only = is_pd_only(r);
        r.packet_buffer = false;
        for (const BufferMatch& b : r.buffers) {
            r.packet_buffer = r.packet_buffer || b.buffer == BufferId::kPacket;
        }
        bool dsize = false;
        for (const auto& h : r.header_options) {
            dsize = dsize || std::string_view(h->keyword()) == "dsize";
        }
        r.stream_capable = r.packet_buffer && !r.proto.tcp_pkt_only &&
                           (r.flow_flags & kFlowNoStream) == 0 && !dsize;
        if (r.stream_capable && r.syntax == RuleSyntax::kSnort3) {
            d.snort3_pdu_services |= r.proto.app == AppProto::kUnknown || r.service_or_ports
                                         ? ~0u
                                         : 1u << static_cast<unsigned>(r.proto.app);
        }
    }

    const auto t0 = std::chrono::steady_clock::now();
    const size_t n = d.rules.size();
    std::vector<FastPattern> fps(n);
    std::vector<bool> has_fp(n, false);
    for (size_t i = 0; i < n; ++i) {
        has_fp[i] = choose_fast_pattern(*d.rules[i], &fps[i]);
        d.rules[i]->stream_prefiltered =
            has_fp[i] && fps[i].buffer == BufferId::kPacket && fps[i].transforms == 0;
        if (config.mpm_algo == MpmAlgo::kNone) {
            d.ref_stream_fps.resize(n);
            if (d.rules[i]->stream_prefiltered) {
                d.ref_stream_fps[i] = fps[i];
            }
        }
        if (!has_fp[i]) {
            ++sum.no_fast_pattern_rules;
        }
    }

    sum.fast_pattern_ms = ms_since(t0);
    auto t_phase = std::chrono::steady_clock::now();

    // Parts: each distinct rule set built once. Rules that need an app-layer protocol wait
    // for the app layer (no flow has one yet) and join no part. Their databases are planned
    // per transport class once the class's parts are known: the any-port part alone, the
    // port parts sharing databases where their patterns are close (plan_part_databases).
    std::map<std::pair<std::vector<uint32_t>, bool>, uint32_t> part_ids;
    std::vector<DbJob> jobs;
    AclCache acl_cache;
    std::vector<std::pair<uint32_t, DbUse>> part_uses;  // part index, its database
    std::vector<std::pair<uint32_t, DbUse>> pkt_uses;   // part index, its pkt_db
    auto plan = [&](const std::vector<uint32_t>& ids, bool tcp) {
        std::vector<std::vector<PatternKey>*> ps, pkt_ps;
        std::vector<uint32_t> fresh, pkt_fresh;
        for (uint32_t id : ids) {
            if (id == kNoGroup || d.parts[id].patterns.empty()) {
                continue;
            }
            Part& part = d.parts[id];
            // Part::pkt_split: on TCP, when some of the part's patterns are only the stream's.
            part.pkt_split = tcp && part.pkt_patterns.size() < part.patterns.size();
            if (part.pkt_split && !part.pkt_patterns.empty()) {
                pkt_ps.push_back(&part.pkt_patterns);
                pkt_fresh.push_back(id);
            } else {
                std::vector<PatternKey>().swap(part.pkt_patterns);
                std::vector<std::vector<uint32_t>>().swap(part.pkt_pattern_rules);
            }
            ps.push_back(&part.patterns);
            fresh.push_back(id);
        }
        std::vector<DbUse> uses = plan_part_databases(ps, tcp, &jobs);
        for (size_t i = 0; i < fresh.size(); ++i) {
            part_uses.emplace_back(fresh[i], std::move(uses[i]));
        }
        // First matches are enough on a payload (no stream window to place them in).
        uses = plan_part_databases(pkt_ps, false, &jobs);
        for (size_t i = 0; i < pkt_fresh.size(); ++i) {
            pkt_uses.emplace_back(pkt_fresh[i], std::move(uses[i]));
        }
    };
    auto part_of = [&](std::vector<uint32_t> members, bool tcp) {
        if (members.empty()) {
            return kNoGroup;
        }
        std::sort(members.begin(), members.end());
        auto key = std::make_pair(std::move(members), tcp);
        auto it = part_ids.find(key);
        if (it != part_ids.end()) {
            return it->second;
        }
        uint32_t id = static_cast<uint32_t>(d.parts.size());
        d.parts.emplace_back();
        build_part(d.rules, fps, has_fp, key.first, config.mpm_algo, config.ip_only_acl,
                   d.parts.back(), &d.memory, &acl_cache);
        if (tcp) {
            d.max_stream_pattern = std::max(d.max_stream_pattern, d.parts.back().max_pattern);
        }
        part_ids.emplace(std::move(key), id);
        return id;
    };
    std::vector<AppProto> apps(n);
    uint32_t app_rules = 0;
    for (uint32_t i = 0; i < n; ++i) {
        apps[i] = rule_app(*d.rules[i]);
        app_rules += apps[i] != AppProto::kUnknown ? 1 : 0;
    }
    sum.app_layer_rules = app_rules;
    for (int c = 0; c < kNumClasses; ++c) {
        std::vector<uint32_t> any_port;
        // Port-specific rules with their port ranges; the ports fall into elementary
        // intervals (between consecutive range bounds) whose ports all have the same rules.
        std::vector<std::pair<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>>> specific;
        for (uint32_t i = 0; i < n; ++i) {
            const Rule& r = *d.rules[i];
            if ((class_mask(r) & (1u << c)) == 0 || apps[i] != AppProto::kUnknown) {
                continue;
            }
            if (!class_has_ports(c) || (!ports_are_specific(r.dport) &&
                                        !(r.bidirectional && ports_are_specific(r.sport)))) {
                any_port.push_back(i);
                continue;
            }
            if (r.bidirectional && (!ports_are_specific(r.dport) || !ports_are_specific(r.sport))) {
                any_port.push_back(i);
                continue;
            }
            auto ranges = port_set_ranges(r.dport);
            if (r.bidirectional) {
                auto more = port_set_ranges(r.sport);
                ranges.insert(ranges.end(), more.begin(), more.end());
            }
            specific.emplace_back(i, std::move(ranges));
        }
        const bool tcp = c == kClassTcp;
        const uint32_t any_part = part_of(any_port, tcp);
        plan({any_part}, tcp);
        size_t any_count = any_port.size();
        if (!class_has_ports(c)) {
            d.class_group[c] = Group{any_part, kNoGroup};
            d.max_candidates = std::max(d.max_candidates, any_count);
            continue;
        }
        std::vector<uint32_t> starts = {0};
        for (const auto& [ri, ranges] : specific) {
            for (const auto& [lo, hi] : ranges) {
                starts.push_back(lo);
                if (hi < 65535) {
                    starts.push_back(hi + 1);
                }
            }
        }
        std::sort(starts.begin(), starts.end());
        starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
        std::vector<std::vector<uint32_t>> by_interval(starts.size());
        for (const auto& [ri, ranges] : specific) {
            for (const auto& [lo, hi] : ranges) {
                size_t k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), lo) -
                                               starts.begin() - 1);
                for (; k < starts.size() && starts[k] <= hi; ++k) {
                    if (by_interval[k].empty() || by_interval[k].back() != ri) {
                        by_interval[k].push_back(ri);
                    }
                }
            }
        }
        d.port_group[c].assign(65536, Group{any_part, kNoGroup});
        std::map<std::vector<uint32_t>, uint32_t> local;  // port-specific list -> part
        std::vector<uint32_t> port_parts;
        for (size_t k = 0; k < starts.size(); ++k) {
            if (by_interval[k].empty()) {
                continue;
            }
            auto it = local.find(by_interval[k]);
            if (it == local.end()) {
                it = local.emplace(by_interval[k], part_of(by_interval[k], tcp)).first;
                port_parts.push_back(it->second);
                d.max_candidates = std::max(d.max_candidates, any_count + by_interval[k].size());
            }
            const uint32_t end = k + 1 < starts.size() ? starts[k + 1] : 65536;
            for (uint32_t port = starts[k]; port < end; ++port) {
                d.port_group[c][port].port_part = it->second;
            }
        }
        plan(port_parts, tcp);
        d.max_candidates = std::max(d.max_candidates, any_count);
    }
    std::vector<std::vector<DbUse>> app_uses;
    build_app_sets(d, apps, config.mpm_algo, &jobs, &app_uses);
    sum.grouping_ms = ms_since(t_phase);

    // The Hyperscan databases, on up to compile_threads threads.
    t_phase = std::chrono::steady_clock::now();
    uint32_t threads = config.compile_threads;
    if (threads == 0) {
        threads = spare_cpus();
    }
    threads = std::min<uint32_t>(
        {threads, kMaxCompileThreads, static_cast<uint32_t>(std::max<size_t>(jobs.size(), 1))});
    compile_databases(&jobs, threads, config.reuse_databases);
    sum.compile_threads = threads;
    for (const DbJob& job : jobs) {
        if (!job.error.empty()) {
            throw std::runtime_error(job.error);
        }
        sum.hyperscan_cpu_ms += job.ms;
        sum.slowest_database_ms = std::max(sum.slowest_database_ms, job.ms);
        sum.reused_databases += job.reused ? 1 : 0;
        size_t size = 0;
        hs_database_size(job.db.get(), &size);
        d.memory += size;
        d.databases.push_back(job.db);
    }
    for (auto& [id, use] : part_uses) {
        Part& part = d.parts[id];
        part.db = jobs[use.job].db.get();
        remap_pattern_rules(use, jobs[use.job].patterns.size(), &part.pattern_rules);
    }
    for (auto& [id, use] : pkt_uses) {
        Part& part = d.parts[id];
        part.pkt_db = jobs[use.job].db.get();
        remap_pattern_rules(use, jobs[use.job].patterns.size(), &part.pkt_pattern_rules);
    }
    for (size_t a = 0; a < kNumAppProtos; ++a) {
        for (size_t k = 0; k < app_uses[a].size(); ++k) {
            AppDb& adb = d.app_sets[a].dbs[k];
            adb.db = jobs[app_uses[a][k].job].db.get();
        }
    }
    for (DbJob& job : jobs) {
        std::vector<PatternKey>().swap(job.patterns);  // the databases hold them now
    }
    sum.hyperscan_ms = ms_since(t_phase);
    t_phase = std::chrono::steady_clock::now();

    std::vector<const Rule*> rule_ptrs;
    for (const auto& r : d.rules) {
        rule_ptrs.push_back(r.get());
    }
    d.thresholds = std::make_unique<ThresholdTable>();
    if (!config.threshold_file.empty()) {
        std::vector<std::string> errors;
        d.thresholds->load_config(config.threshold_file, vars, &errors);
        sum.warnings.insert(sum.warnings.end(), errors.begin(), errors.end());
    }
    for (auto& w : d.thresholds->bind(rule_ptrs)) {
        sum.warnings.push_back(std::move(w));
    }
    for (auto& w : flowbit_warnings(rule_ptrs, d.flowbits.get())) {
        sum.warnings.push_back(std::move(w));
    }

    sum.groups = static_cast<uint32_t>(d.parts.size());
    sum.hs_databases = static_cast<uint32_t>(jobs.size());
    for (const auto& set : d.app_sets) {
        sum.groups += set.rule_count != 0 ? 1 : 0;
    }
    d.memory += n * sizeof(Rule);
    for (int c = 0; c < kNumClasses; ++c) {
        d.memory += d.port_group[c].size() * sizeof(Group);
    }
    sum.memory_bytes = d.memory;
    sum.finish_ms = ms_since(t_phase);
    sum.compile_ms = ms_since(t0);
    sum.peak_rss_bytes = peak_rss();
    sum.peak_rss_since_start = !peak_reset;
    if (summary != nullptr) {
        *summary = std::move(sum);
    }
    return engine;
}

}  // namespace picket::sensor::detect
