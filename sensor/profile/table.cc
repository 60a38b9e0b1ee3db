// The profile's table: text for a terminal, Markdown for docs/performance.md, JSON for tools.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "sensor/profile/profile.h"

namespace picket::sensor::profile {
namespace {

// 1234567.8 -> "1,234,568" (decimals = 0) or "1,234,567.8" (decimals = 1).
std::string grouped(double v, int decimals = 0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, std::fabs(v));
    std::string s = buf;
    const size_t dot = s.find('.');
    const size_t int_len = dot == std::string::npos ? s.size() : dot;
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i < int_len && i > 0 && (int_len - i) % 3 == 0) {
            out += ',';
        }
        out += s[i];
    }
    // A negative value that rounds to zero prints without its sign.
    const bool negative = v < 0 && out.find_first_not_of("0.,") != std::string::npos;
    return (negative ? "-" : "") + out;
}

std::string signed_text(double v, int decimals) {
    std::string s = grouped(v, decimals);
    return s.front() == '-' || s.find_first_not_of("0.,") == std::string::npos ? s : "+" + s;
}

std::string fixed(double v, int decimals, const char* unit = "") {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f%s", decimals, v, unit);
    return buf;
}

// Display width of UTF-8 text (the table uses "–" and "Δ").
size_t width(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) {
        n += (c & 0xC0) != 0x80 ? 1 : 0;
    }
    return n;
}

struct Row {
    std::string name;
    std::string skipped;
    std::vector<std::string> cells;  // after the name, as kColumns
    nlohmann::json json;
};

const std::vector<std::string> kColumns = {
    "packets/s",        "spread (min–max)",   "Mbit/s",   "Δ packets/s", "Δ %",
    "worker ns/packet", "Δ worker ns/packet", "start-up", "notes"};

struct Table {
    std::string title;
    std::string legend;
    std::vector<Row> rows;
    nlohmann::json json;
};

Table build(const Report& report) {
    Table t;
    const StepFigures* prev = nullptr;
    StepFigures prev_store;
    uint64_t first_packets = 0, first_bytes = 0;
    uint32_t workers = 0;
    bool have_first = false;
    nlohmann::json steps = nlohmann::json::array();
    for (const StepResult& step : report.steps) {
        Row row;
        row.name = step.name;
        row.skipped = step.skipped;
        nlohmann::json j = {{"name", step.name}};
        if (!step.skipped.empty() || step.runs.empty()) {
            row.skipped = step.skipped.empty() ? "no runs" : step.skipped;
            j["skipped"] = row.skipped;
            row.json = j;
            steps.push_back(j);
            t.rows.push_back(std::move(row));
            continue;
        }
        const StepFigures f = figures(step);
        if (!have_first) {
            have_first = true;
            first_packets = f.packets;
            first_bytes = f.bytes;
            workers = step.workers;
        }
        std::vector<std::string> notes;
        if (step.rules_loaded != 0) {
            notes.push_back(
                grouped(static_cast<double>(step.rules_loaded)) + " rules" +
                (step.rules_skipped != 0
                     ? " (" + grouped(static_cast<double>(step.rules_skipped)) + " skipped)"
                     : ""));
        }
        if (f.packets != first_packets) {
            notes.push_back(grouped(static_cast<double>(f.packets)) + " packets");
        }
        if (step.workers != workers) {
            notes.push_back(std::to_string(step.workers) + " workers");
        }
        // The change is within the noise when the two steps' run ranges overlap.
        const bool noise = prev != nullptr && step.runs.size() > 1 && f.pps_min <= prev->pps_max &&
                           prev->pps_min <= f.pps_max;
        if (noise) {
            notes.push_back("within noise");
        }
        std::string note_text;
        for (const auto& n : notes) {
            note_text += (note_text.empty() ? "" : "; ") + n;
        }
        row.cells = {
            grouped(f.pps),
            grouped(f.pps_min) + "–" + grouped(f.pps_max),
            grouped(f.mbps, 1),
            prev ? signed_text(f.pps - prev->pps, 0) : "—",
            prev ? signed_text((f.pps - prev->pps) / prev->pps * 100, 1) + "%" : "—",
            grouped(f.worker_ns_per_packet, 1),
            prev ? signed_text(f.worker_ns_per_packet - prev->worker_ns_per_packet, 1) : "—",
            fixed(f.setup_seconds, 2, " s"),
            note_text};
        j["stages"] = engine::stage_name(step.stages);
        j["workers"] = step.workers;
        j["packets"] = f.packets;
        j["bytes"] = f.bytes;
        j["packets_per_sec"] = f.pps;
        j["packets_per_sec_min"] = f.pps_min;
        j["packets_per_sec_max"] = f.pps_max;
        j["mbit_per_sec"] = f.mbps;
        j["ns_per_packet"] = f.ns_per_packet;
        j["worker_ns_per_packet"] = f.worker_ns_per_packet;
        j["setup_sec"] = f.setup_seconds;
        j["rules_loaded"] = step.rules_loaded;
        j["rules_skipped"] = step.rules_skipped;
        if (prev != nullptr) {
            j["delta_packets_per_sec"] = f.pps - prev->pps;
            j["delta_percent"] = (f.pps - prev->pps) / prev->pps * 100;
            j["delta_ns_per_packet"] = f.ns_per_packet - prev->ns_per_packet;
            j["delta_worker_ns_per_packet"] = f.worker_ns_per_packet - prev->worker_ns_per_packet;
            j["within_noise"] = noise;
        }
        nlohmann::json runs = nlohmann::json::array();
        for (const RunSample& r : step.runs) {
            runs.push_back({{"seconds", r.seconds},
                            {"packets", r.packets},
                            {"bytes", r.bytes},
                            {"setup_seconds", r.setup_seconds},
                            {"busy_seconds", r.busy_seconds}});
        }
        j["runs"] = runs;
        row.json = j;
        steps.push_back(j);
        t.rows.push_back(std::move(row));
        prev_store = f;
        prev = &prev_store;
    }
    std::string inputs;
    for (const auto& i : report.inputs) {
        inputs += (inputs.empty() ? "" : ", ") + i;
    }
    t.title =
        "Configuration profile of " + inputs + ": " + grouped(static_cast<double>(first_packets)) +
        " packets, " + fixed(static_cast<double>(first_bytes) / 1e6, 1) + " MB on the wire; " +
        std::to_string(workers) + (workers == 1 ? " worker" : " workers") + "; " +
        std::to_string(report.repeat) + (report.repeat == 1 ? " run" : " runs") + " per step.";
    t.legend =
        "Medians over the runs of Engine::run() (start-up, which includes compiling rules, is "
        "apart); spread = slowest and fastest run; Δ = change from the step above that ran; worker "
        "ns/packet = the workers' time on batches per packet, without waiting for the reader "
        "(which bounds packets/s while the stages are cheap).";
    t.json = {{"inputs", report.inputs}, {"repeat", report.repeat}, {"steps", steps}};
    return t;
}

std::string text(const Table& t) {
    std::vector<size_t> widths;
    size_t name_width = width("step");
    for (const auto& c : kColumns) {
        widths.push_back(width(c));
    }
    for (const Row& r : t.rows) {
        name_width = std::max(name_width, width(r.name));
        for (size_t i = 0; i < r.cells.size(); ++i) {
            widths[i] = std::max(widths[i], width(r.cells[i]));
        }
    }
    auto pad = [](const std::string& s, size_t w, bool left) {
        const std::string fill(w > width(s) ? w - width(s) : 0, ' ');
        return left ? s + fill : fill + s;
    };
    const size_t last = kColumns.size() - 1;  // notes: left-aligned, unpadded
    std::string out = t.title + "\n" + t.legend + "\n\n" + pad("step", name_width, true);
    for (size_t i = 0; i < kColumns.size(); ++i) {
        out += "  " + (i == last ? kColumns[i] : pad(kColumns[i], widths[i], false));
    }
    out += "\n";
    for (const Row& r : t.rows) {
        std::string line = pad(r.name, name_width, true);
        if (!r.skipped.empty()) {
            line += "  skipped: " + r.skipped;
        } else {
            for (size_t i = 0; i < r.cells.size(); ++i) {
                line += "  " + (i == last ? r.cells[i] : pad(r.cells[i], widths[i], false));
            }
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out += line + "\n";
    }
    return out;
}

std::string markdown(const Table& t) {
    std::string out = t.title + " " + t.legend + "\n\n| step |";
    std::string rule = "|---|";
    for (size_t i = 0; i < kColumns.size(); ++i) {
        out += " " + kColumns[i] + " |";
        rule += i + 1 == kColumns.size() ? "---|" : "---:|";
    }
    out += "\n" + rule + "\n";
    for (const Row& r : t.rows) {
        out += "| " + r.name + " |";
        if (!r.skipped.empty()) {
            out += " skipped: " + r.skipped + " |";
            for (size_t i = 1; i < kColumns.size(); ++i) {
                out += " |";
            }
        } else {
            for (const auto& c : r.cells) {
                out += " " + c + " |";
            }
        }
        out += "\n";
    }
    return out;
}

}  // namespace

std::string format_report(const Report& report, Format format) {
    const Table t = build(report);
    switch (format) {
        case Format::kText:
            return text(t);
        case Format::kMarkdown:
            return markdown(t);
        case Format::kJson:
            return t.json.dump(2) + "\n";
    }
    return "";
}

}  // namespace picket::sensor::profile
