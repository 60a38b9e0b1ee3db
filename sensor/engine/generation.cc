// Detection generations: building one (rules, ACL, per-worker scratch) on the control thread,
// publishing it to the workers (reload) and the SIGHUP control thread.
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/log.h"
#include "common/time_util.h"
#include "sensor/detect/flowbits.h"
#include "sensor/engine/engine_internal.h"

namespace picket::sensor::engine {

namespace {

// acl-file, read and built on the control thread. Throws ConfigError with the parser's
// "file:line: what" lines; the caller keeps the running generation.
std::shared_ptr<const filter::AclClassifier> load_acl(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw ConfigError(path + ": cannot open: " + std::strerror(errno));
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto rules = filter::parse_acl_rules(text, path);
    if (!rules.ok()) {
        throw ConfigError(std::string(rules.status().message()));
    }
    auto acl = filter::AclClassifier::build(std::move(*rules));
    if (!acl.ok()) {
        throw ConfigError(path + ": " + std::string(acl.status().message()));
    }
    return std::move(*acl);
}

}  // namespace

std::unique_ptr<Engine::Generation> Engine::build_generation(const detect::DetectConfig& config,
                                                             uint64_t id,
                                                             detect::LoadSummary* summary) {
    auto gen = std::make_unique<Generation>();
    gen->id = id;
    if (!config.acl_file.empty()) {
        gen->acl = load_acl(config.acl_file);  // first: a bad ACL costs no rule compilation
    }
    gen->engine = detect::DetectEngine::load(config, flowbits_, summary);
    if (!flowbits_) {
        // The first engine's registry serves every later one: flow state survives reloads.
        flowbits_ = gen->engine->flowbit_registry();
        for (auto& w : workers_) {
            w->enable_detection(config_, flowbits_);
        }
    }
    const std::vector<detect::RuleInfo> rules = gen->engine->rule_infos();
    gen->metas.resize(rules.size());
    for (size_t i = 0; i < rules.size(); ++i) {
        const detect::RuleInfo& r = rules[i];
        output::AlertMeta& m = gen->metas[i];
        m.gid = r.gid;
        m.sid = r.sid;
        m.rev = r.rev;
        m.signature = r.msg;
        m.category = r.category;
        m.severity = r.priority;
        for (const auto& entry : r.metadata) {
            size_t sp = entry.find(' ');
            m.metadata.emplace_back(entry.substr(0, sp),
                                    sp == std::string::npos ? "" : entry.substr(sp + 1));
        }
    }
    gen->var_names = detect::snapshot_var_names(*flowbits_);
    // Each worker's scratch (Hyperscan, PCRE2) is allocated here, off the packet path.
    for (auto& w : workers_) {
        gen->workers.push_back(
            std::make_unique<PaddedDetectWorker>(gen->engine, w->flow_state.get()));
        gen->slots.push_back(GenSlot{&gen->workers.back()->worker, gen->metas.data(),
                                     gen->acl.get(), id, &gen->var_names});
    }
    return gen;
}

void Engine::request_reload() {
    reload_requested_.store(true, std::memory_order_relaxed);
}

bool Engine::reload(const detect::DetectConfig& config, detect::LoadSummary* summary,
                    std::string* error) {
    if (!detecting_) {
        *error = "detection is off: the sensor started without rules";
        return false;
    }
    std::lock_guard<std::mutex> lock(reload_mu_);
    const int64_t t0 = monotonic_ns();
    detect::LoadSummary sum;
    std::unique_ptr<Generation> next;
    try {
        next = build_generation(config, gen_->id + 1, &sum);
    } catch (const std::exception& e) {
        {
            std::lock_guard<std::mutex> info(gen_info_mu_);
            ++reload_failures_;
        }
        *error = e.what();
        return false;
    }
    // Publish: one atomic store per worker.
    for (size_t i = 0; i < workers_.size(); ++i) {
        workers_[i]->published.store(&next->slots[i], std::memory_order_release);
    }
    // Proof of use: every worker has switched, or has ended (an idle worker still turns its
    // loop at least once per poll timeout).
    for (;;) {
        bool all = true;
        for (const auto& w : workers_) {
            if (w->gen_seen.load(std::memory_order_acquire) < next->id &&
                !w->finished.load(std::memory_order_acquire)) {
                all = false;
            }
        }
        if (all) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Alerts queued under the old generation point at its metadata: wait for two drains.
    const uint64_t epoch = drain_epoch_.load(std::memory_order_acquire);
    while (output_running_.load(std::memory_order_acquire) &&
           drain_epoch_.load(std::memory_order_acquire) < epoch + 2) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::unique_ptr<Generation> old = std::move(gen_);
    gen_ = std::move(next);
    {
        std::lock_guard<std::mutex> info(gen_info_mu_);
        load_summary_ = sum;
        detect_loaded_ns_ = wall_clock_ns();
        running_detect_ = config;
        acl_loaded_ = acl_loaded_ || gen_->acl != nullptr;
        acl_rules_ = gen_->acl ? gen_->acl->rules().size() : 0;
        last_reload_us_ = static_cast<uint64_t>(monotonic_ns() - t0) / 1000;
        ++reloads_;
    }
    for (const auto& dw : old->workers) {
        retired_profile_.add(
            dw->worker);  // no-op unless profiling.rules; no worker uses it any more
    }
    old.reset();  // the last reference to the old engine goes with it
    if (summary != nullptr) {
        *summary = std::move(sum);
    }
    return true;
}

detect::RuleProfile Engine::rule_profile() {
    std::lock_guard<std::mutex> lock(reload_mu_);
    detect::RuleProfile out = retired_profile_;
    if (gen_) {
        for (const auto& dw : gen_->workers) {
            out.add(dw->worker);
        }
    }
    out.finish();
    return out;
}

void Engine::control_main() {
    while (!stop_.load(std::memory_order_relaxed) && workers_done_.load() < workers_.size()) {
        if (reload_requested_.exchange(false)) {
            detect::LoadSummary sum;
            std::string error;
            detect::DetectConfig config;
            {
                // The rules running now (a bundle applied since start-up replaces the
                // configured ones), read again from their files.
                std::lock_guard<std::mutex> info(gen_info_mu_);
                config = running_detect_;
            }
            if (reload(config, &sum, &error)) {
                std::string text = sum.to_string();
                log::info("rules reloaded: " + text.substr(text.rfind('\n') + 1));
            } else {
                log::error("rule reload failed, the running rules stay: " + error);
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

}  // namespace picket::sensor::engine
