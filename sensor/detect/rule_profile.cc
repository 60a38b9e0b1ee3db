// Rule profiling report: merging is in detect_engine.cc (RuleProfile::add reads the engine's
// rules); this file calibrates, aggregates by keyword and fast pattern, and formats the table
// printed at exit and rule_perf.json. Control thread only.
#include "sensor/detect/rule_profile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sensor/detect/detect.h"

namespace picket::sensor::detect {

std::vector<std::string> rule_keywords(const Rule& r) {
    std::vector<std::string> out;
    for (const auto& h : r.header_options) {
        out.emplace_back(h->keyword());
    }
    for (const auto& bm : r.buffers) {
        for (const auto& opt : bm.options) {
            out.emplace_back(opt->keyword());
        }
    }
    // flowbits:set/unset/toggle/noalert add no header option (only isset/isnotset check).
    if (!r.flowbits.empty()) {
        out.emplace_back("flowbits");
    }
    if (r.has_threshold) {
        out.emplace_back("threshold");
    }
    if (r.has_detection_filter) {
        out.emplace_back("detection_filter");
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::string format_fast_pattern(BufferId buffer, const std::string& bytes, bool nocase) {
    std::string out = buffer_def(buffer).name;
    out += ":\"";
    bool in_hex = false;
    for (unsigned char c : bytes) {
        const bool plain = c >= 0x20 && c < 0x7f && c != '|' && c != '"' && c != ';' && c != '\\';
        if (plain == in_hex) {
            out += '|';
            in_hex = !plain;
        } else if (!plain) {
            out += ' ';
        }
        if (plain) {
            out += static_cast<char>(c);
        } else {
            char hex[3];
            std::snprintf(hex, sizeof(hex), "%02x", c);
            out += hex;
        }
    }
    if (in_hex) {
        out += '|';
    }
    out += '"';
    if (nocase) {
        out += " nocase";
    }
    return out;
}

std::string keyword_group(const RuleProfileEntry& e) {
    if (e.keywords.empty()) {
        return "header-only";
    }
    std::string out;
    for (const auto& k : e.keywords) {
        out += (out.empty() ? "" : ",") + k;
    }
    return out;
}

namespace {

template <typename T>
bool costlier(const T& a, const T& b) {
    if (a.ticks != b.ticks) {
        return a.ticks > b.ticks;
    }
    return a.checks > b.checks;
}

void add_to(RuleProfileGroup& g, const RuleProfileEntry& e) {
    ++g.rules;
    g.checks += e.checks;
    g.matches += e.matches;
    g.ticks += e.ticks;
    g.worst_ticks = std::max(g.worst_ticks, e.worst_ticks);
}

std::vector<RuleProfileGroup> sorted_groups(std::map<std::string, RuleProfileGroup>& m) {
    std::vector<RuleProfileGroup> out;
    for (auto& [name, g] : m) {
        g.name = name;
        out.push_back(std::move(g));
    }
    std::stable_sort(
        out.begin(), out.end(),
        [](const RuleProfileGroup& a, const RuleProfileGroup& b) { return costlier(a, b); });
    return out;
}

double per(uint64_t total, uint64_t count) {
    return count == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(count);
}

// Long text is cut with "..." so the table stays readable.
std::string clip(const std::string& s, size_t width) {
    return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

// A fixed-width cell, so the columns after it stay aligned.
std::string cell(const std::string& s, size_t width) {
    std::string out = clip(s, width);
    return out + std::string(width - out.size(), ' ');
}

}  // namespace

void RuleProfile::finish() {
    if (arrays_ != 0) {
        // Long enough for the calibration to be accurate to ~0.1% even for a tiny run.
        constexpr int64_t kMinCalibrationNs = 20000000;
        int64_t now = profile_steady_ns();
        if (now - start_ns_ < kMinCalibrationNs) {
            std::this_thread::sleep_for(
                std::chrono::nanoseconds(kMinCalibrationNs - (now - start_ns_)));
        }
        now = profile_steady_ns();
        const uint64_t ticks = profile_ticks();
        const double us = static_cast<double>(now - start_ns_) / 1000.0;
        ticks_per_us_ = us > 0 ? static_cast<double>(ticks - start_ticks_) / us : 0;
    }
    std::stable_sort(rules_.begin(), rules_.end(),
                     [](const RuleProfileEntry& a, const RuleProfileEntry& b) {
                         if (a.ticks != b.ticks || a.checks != b.checks) {
                             return costlier(a, b);
                         }
                         return std::tie(a.gid, a.sid, a.rev) < std::tie(b.gid, b.sid, b.rev);
                     });
    index_.clear();
    for (size_t i = 0; i < rules_.size(); ++i) {
        index_.emplace(std::make_tuple(rules_[i].gid, rules_[i].sid, rules_[i].rev), i);
    }
}

std::vector<RuleProfileGroup> RuleProfile::by_keyword() const {
    std::map<std::string, RuleProfileGroup> m;
    for (const auto& e : rules_) {
        if (e.keywords.empty()) {
            add_to(m["header-only"], e);
        }
        for (const auto& k : e.keywords) {
            add_to(m[k], e);
        }
    }
    return sorted_groups(m);
}

std::vector<RuleProfileGroup> RuleProfile::by_fast_pattern() const {
    std::map<std::string, RuleProfileGroup> m;
    for (const auto& e : rules_) {
        add_to(m[e.fast_pattern.empty() ? "none" : e.fast_pattern], e);
    }
    return sorted_groups(m);
}

std::string RuleProfile::format_table(uint32_t limit) const {
    uint64_t checks = 0, matches = 0, ticks = 0;
    for (const auto& e : rules_) {
        checks += e.checks;
        matches += e.matches;
        ticks += e.ticks;
    }
    const double tpu = ticks_per_us_ > 0 ? ticks_per_us_ : 1;
    std::string out;
    char line[512];
    std::snprintf(line, sizeof(line),
                  "rule profiling: %zu rules, %u worker array%s over %u generation%s, mpm-algo "
                  "%s, %.1f ticks/us\n"
                  "  totals: %llu checks, %llu matches, %llu ticks (%.1f us)\n",
                  rules_.size(), arrays_, arrays_ == 1 ? "" : "s", generations_,
                  generations_ == 1 ? "" : "s", mpm_algo_name(mpm_algo_), ticks_per_us_,
                  static_cast<unsigned long long>(checks), static_cast<unsigned long long>(matches),
                  static_cast<unsigned long long>(ticks), static_cast<double>(ticks) / tpu);
    out += line;
    const size_t n = std::min<size_t>(limit, rules_.size());
    std::snprintf(line, sizeof(line), "top %zu rules by ticks:\n", n);
    out += line;
    std::snprintf(line, sizeof(line),
                  "  %4s %10s %4s %4s %12s %10s %14s %12s %10s %12s  %-24s %s\n", "num", "sid",
                  "gid", "rev", "checks", "matches", "ticks", "us", "avg ticks", "worst ticks",
                  "keywords", "fast pattern");
    out += line;
    for (size_t i = 0; i < n; ++i) {
        const RuleProfileEntry& e = rules_[i];
        std::snprintf(line, sizeof(line),
                      "  %4zu %10u %4u %4u %12llu %10llu %14llu %12.1f %10.1f %12llu  %s %s\n",
                      i + 1, e.sid, e.gid, e.rev, static_cast<unsigned long long>(e.checks),
                      static_cast<unsigned long long>(e.matches),
                      static_cast<unsigned long long>(e.ticks), static_cast<double>(e.ticks) / tpu,
                      per(e.ticks, e.checks), static_cast<unsigned long long>(e.worst_ticks),
                      cell(keyword_group(e), 24).c_str(),
                      e.fast_pattern.empty() ? "-" : clip(e.fast_pattern, 64).c_str());
        out += line;
    }
    auto groups = [&](const std::string& title, const char* column,
                      std::vector<RuleProfileGroup> gs, size_t rows) {
        rows = std::min(rows, gs.size());
        out += title + "\n";
        std::snprintf(line, sizeof(line), "  %-48s %6s %12s %10s %14s %12s %10s %12s\n", column,
                      "rules", "checks", "matches", "ticks", "us", "avg ticks", "worst ticks");
        out += line;
        for (size_t i = 0; i < rows; ++i) {
            const RuleProfileGroup& g = gs[i];
            std::snprintf(
                line, sizeof(line), "  %s %6u %12llu %10llu %14llu %12.1f %10.1f %12llu\n",
                cell(g.name, 48).c_str(), g.rules, static_cast<unsigned long long>(g.checks),
                static_cast<unsigned long long>(g.matches),
                static_cast<unsigned long long>(g.ticks), static_cast<double>(g.ticks) / tpu,
                per(g.ticks, g.checks), static_cast<unsigned long long>(g.worst_ticks));
            out += line;
        }
    };
    groups("by keyword (a rule counts under each of its keywords):", "keyword", by_keyword(),
           SIZE_MAX);
    std::vector<RuleProfileGroup> fps = by_fast_pattern();
    const std::string title =
        "top " + std::to_string(std::min<size_t>(limit, fps.size())) + " fast patterns by ticks:";
    groups(title, "fast pattern", std::move(fps), limit);
    return out;
}

std::string RuleProfile::to_json() const {
    const double tpu = ticks_per_us_ > 0 ? ticks_per_us_ : 1;
    auto figures = [&](nlohmann::ordered_json& j, uint64_t checks, uint64_t matches, uint64_t ticks,
                       uint64_t worst) {
        j["checks"] = checks;
        j["matches"] = matches;
        j["ticks"] = ticks;
        j["us"] = static_cast<double>(ticks) / tpu;
        j["avg_ticks"] = per(ticks, checks);
        j["avg_us"] = per(ticks, checks) / tpu;
        j["worst_ticks"] = worst;
        j["worst_us"] = static_cast<double>(worst) / tpu;
    };
    nlohmann::ordered_json doc;
    doc["mpm_algo"] = mpm_algo_name(mpm_algo_);
    doc["ticks_per_us"] = ticks_per_us_;
    doc["generations"] = generations_;
    doc["worker_arrays"] = arrays_;
    uint64_t checks = 0, matches = 0, ticks = 0, worst = 0;
    nlohmann::ordered_json rules = nlohmann::ordered_json::array();
    for (const auto& e : rules_) {
        checks += e.checks;
        matches += e.matches;
        ticks += e.ticks;
        worst = std::max(worst, e.worst_ticks);
        nlohmann::ordered_json r;
        r["gid"] = e.gid;
        r["sid"] = e.sid;
        r["rev"] = e.rev;
        r["msg"] = e.msg;
        r["file"] = e.file;
        r["line"] = e.line;
        figures(r, e.checks, e.matches, e.ticks, e.worst_ticks);
        r["keywords"] = e.keywords;
        r["fast_pattern"] = e.fast_pattern;
        rules.push_back(std::move(r));
    }
    nlohmann::ordered_json totals;
    totals["rules"] = rules_.size();
    figures(totals, checks, matches, ticks, worst);
    doc["totals"] = std::move(totals);
    doc["rules"] = std::move(rules);
    auto groups = [&](const char* key, const std::vector<RuleProfileGroup>& gs) {
        nlohmann::ordered_json arr = nlohmann::ordered_json::array();
        for (const auto& g : gs) {
            nlohmann::ordered_json j;
            j[key] = g.name;
            j["rules"] = g.rules;
            figures(j, g.checks, g.matches, g.ticks, g.worst_ticks);
            arr.push_back(std::move(j));
        }
        return arr;
    };
    doc["by_keyword"] = groups("keyword", by_keyword());
    doc["by_fast_pattern"] = groups("fast_pattern", by_fast_pattern());
    // Rule text may hold any byte: replace invalid UTF-8 instead of throwing.
    return doc.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

bool RuleProfile::write_json(const std::string& path, std::string* error) const {
    const std::string text = to_json();
    errno = 0;
    std::ofstream out(path, std::ios::trunc);
    if (out) {
        out << text;
        out.flush();
    }
    if (!out) {
        *error = path + ": cannot write: " + (errno != 0 ? std::strerror(errno) : "I/O error");
        return false;
    }
    return true;
}

}  // namespace picket::sensor::detect
