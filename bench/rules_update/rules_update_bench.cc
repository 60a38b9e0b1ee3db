// Cost of a rules update on the manager (manager/rules): for a ruleset (ET Open's directory
// with --rules, else 30,000 generated rules in 50 files), the time of each step of
// `picketctl rules update` that runs on the manager's CPU, measured in the same run:
//   pack     a local directory source read into one deterministic tar (fetch_source)
//   extract  the tar unpacked from memory into its rules files (extract_rule_files)
//   update   build_update for a first version: merge, policy (200 lines), render, parse every
//            enabled rule with the sensor's parser, bundle checks
//   noop     build_update again on its own result (the daily "no change" case: also a diff)
// and the baseline, the sensor's parser alone over the same files (RuleLoader, what
// `picket-sensor -T` spends): the update cannot be cheaper than its validation, so
// update/parse says what the update adds to it. Thread CPU time, median of the passes.
//
//   rules_update_bench [--rules DIR] [--passes N]
//
// Last line:
//   rules_update: rules=N pack_ms=A extract_ms=B update_ms=C noop_ms=D parse_ms=E
//                 ratio_update_parse=C/E rss_mb=F
// Never pass/fail on time: figures go to docs/performance.md.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/common/bench_util.h"
#include "manager/rules/rules.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"

namespace {

namespace fs = std::filesystem;

double cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// 30,000 rules in 50 files, ET-like: content + options, a tenth commented out.
void generate(const fs::path& dir) {
    fs::create_directories(dir);
    std::mt19937 rng(7);
    uint32_t sid = 2000000;
    for (int f = 0; f < 50; ++f) {
        std::ofstream out(dir / ("emerging-gen" + std::to_string(f) + ".rules"));
        out << "# generated for rules_update_bench\n";
        for (int i = 0; i < 600; ++i, ++sid) {
            bool off = rng() % 10 == 0;
            out << (off ? "# " : "")
                << "alert http $HOME_NET any -> $EXTERNAL_NET any (msg:\"ET GEN " << sid
                << "\"; flow:established,to_server; http.uri; content:\"/p" << rng() % 100000
                << "/x" << sid << "\"; nocase; classtype:trojan-activity; metadata:policy "
                << (rng() % 2 ? "balanced-ips" : "security-ips") << " drop; sid:" << sid
                << "; rev:" << 1 + rng() % 5 << ";)\n";
        }
    }
}

// 200 policy lines: ids, groups, regexes, metadata, as an operator's files grow.
std::map<std::string, std::string> policy(const std::vector<picket::rules::SourceFiles>& src) {
    std::vector<uint32_t> sids;
    for (const auto& s : src) {
        for (const auto& [name, text] : s.files) {
            size_t pos = 0;
            while ((pos = text.find("sid:", pos)) != std::string::npos) {
                sids.push_back(
                    static_cast<uint32_t>(std::strtoul(text.c_str() + pos + 4, nullptr, 10)));
                pos += 4;
            }
        }
    }
    std::string disable, enable, drop, modify;
    for (size_t i = 0; i < 150 && !sids.empty(); ++i) {
        disable += std::to_string(sids[(i * 7919) % sids.size()]) + "\n";
    }
    for (int i = 0; i < 20; ++i) {
        disable += "re:x" + std::to_string(2000000 + i * 997) + "\"\n";
    }
    disable += "group:*gen4*.rules\nmetadata: policy security-ips drop\n";
    for (int i = 0; i < 10; ++i) {
        enable += std::to_string(sids[(i * 104729) % sids.size()]) + "\n";
    }
    for (int i = 0; i < 10; ++i) {
        drop += std::to_string(sids[(i * 1299709) % sids.size()]) + "\n";
    }
    for (int i = 0; i < 8; ++i) {
        modify +=
            std::to_string(sids[(i * 15485863) % sids.size()]) + " \"rev:(\\d+)\" \"rev:1\\1\"\n";
    }
    return {{"disable.conf", disable},
            {"enable.conf", enable},
            {"drop.conf", drop},
            {"modify.conf", modify}};
}

}  // namespace

int main(int argc, char** argv) {
    std::string rules_dir;
    int passes = 3;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--rules") == 0 && i + 1 < argc) {
            rules_dir = argv[++i];
        } else if (std::strcmp(argv[i], "--passes") == 0 && i + 1 < argc) {
            passes = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: rules_update_bench [--rules DIR] [--passes N]\n");
            return 2;
        }
    }
    fs::path tmp;
    if (rules_dir.empty()) {
        tmp = fs::temp_directory_path() / ("rules_update_bench." + std::to_string(getpid()));
        generate(tmp);
        rules_dir = tmp.string();
    }
    namespace rules = picket::rules;
    namespace detect = picket::sensor::detect;
    rules::SourceSpec spec{"src", fs::absolute(rules_dir).string(), {}, "", true};

    std::vector<double> pack, extract, update, noop, parse;
    uint32_t rule_count = 0, unsupported = 0;
    for (int p = 0; p < passes; ++p) {
        double t0 = cpu_ms();
        auto fetched = rules::fetch_source(spec, {});
        double t1 = cpu_ms();
        if (!fetched.ok()) {
            std::fprintf(stderr, "fetch: %s\n", std::string(fetched.status().message()).c_str());
            return 1;
        }
        auto files = rules::extract_rule_files("src", fetched->bytes, fetched->kind, "src.rules");
        double t2 = cpu_ms();
        if (!files.ok()) {
            std::fprintf(stderr, "extract: %s\n", std::string(files.status().message()).c_str());
            return 1;
        }
        rules::UpdateInput in;
        in.sources.push_back({"src", fetched->sha256, *files});
        in.policy_files = policy(in.sources);
        double t3 = cpu_ms();
        auto first = rules::build_update(in);
        double t4 = cpu_ms();
        if (!first.ok()) {
            std::fprintf(stderr, "update: %s\n", std::string(first.status().message()).c_str());
            return 1;
        }
        picket::v1::Bundle stored = first->bundle;
        stored.mutable_manifest()->set_version(1);
        in.previous = &stored;
        double t5 = cpu_ms();
        auto again = rules::build_update(in);
        double t6 = cpu_ms();
        if (!again.ok() || again->changed) {
            std::fprintf(stderr, "noop: changed or failed\n");
            return 1;
        }
        // Baseline: the sensor's parser alone over the same (unmodified) files.
        auto flowbits = std::make_shared<detect::FlowbitRegistry>();
        detect::ParseEnv env;
        env.flowbits = flowbits.get();
        double t7 = cpu_ms();
        detect::RuleLoader loader(env);
        for (const auto& [name, text] : *files) {
            if (name.ends_with(".rules")) {
                loader.add_text(text, name);
            }
        }
        detect::LoadedRules loaded = loader.finish();
        double t8 = cpu_ms();
        pack.push_back(t1 - t0);
        extract.push_back(t2 - t1);
        update.push_back(t4 - t3);
        noop.push_back(t6 - t5);
        parse.push_back(t8 - t7);
        rule_count = first->rules;
        unsupported = first->unsupported;
        std::printf(
            "pass %d: rules %u (enabled %u, unsupported %u, policy disabled %u) pack %.1f "
            "extract %.1f update %.1f noop %.1f parse %.1f ms (parsed %u)\n",
            p + 1, first->rules, first->rules_enabled, first->unsupported, first->policy.disabled,
            t1 - t0, t2 - t1, t4 - t3, t6 - t5, t8 - t7, loaded.summary.loaded);
    }
    if (!tmp.empty()) {
        fs::remove_all(tmp);
    }
    (void)unsupported;
    double u = median(update), b = median(parse);
    std::printf(
        "rules_update: rules=%u pack_ms=%.1f extract_ms=%.1f update_ms=%.1f noop_ms=%.1f "
        "parse_ms=%.1f ratio_update_parse=%.2f rss_mb=%.0f\n",
        rule_count, median(pack), median(extract), u, median(noop), b, u / b,
        static_cast<double>(picket::bench::proc_status_kb("VmHWM")) / 1024.0);
    return 0;
}
