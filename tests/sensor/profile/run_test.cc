// Running a ladder over a generated pcap (step count, exact packet and byte counts per run, rule
// counts, the table's rows and change columns; never absolute speed), the engine.stages switch
// the ladder relies on, and the table's exact layout from fixed samples.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "sensor/engine/engine.h"
#include "sensor/profile/profile.h"
#include "tools/trafficgen/generator.h"

namespace picket::sensor::profile {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        out.push_back(line);
    }
    return out;
}

class ProfileRun : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() / ("picket-profile-" + std::to_string(getpid()));
        fs::create_directories(dir_);
        tools::trafficgen::Options o;
        o.seed = 5;
        o.sessions = 150;
        o.attacks = {"/etc/passwd"};
        o.attack_share = 0.3;
        record_ = tools::trafficgen::generate(o, (dir_ / "t.pcap").string());
        std::ofstream(dir_ / "a.rules") << "alert tcp any any -> any any (msg:\"a\"; "
                                           "content:\"/etc/passwd\"; sid:1;)\n"
                                           "alert udp any any -> any 53 (msg:\"d\"; "
                                           "content:\"|01 00|\"; sid:2;)\n";
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }

    static Config base() {
        Config c;
        YAML::Node list(YAML::NodeType::Sequence);
        list.push_back((dir_ / "t.pcap").string());
        c.set_value("pcap-file.paths", list);
        c.set_value("workers", YAML::Node(1));
        c.set_value("default-log-dir", YAML::Node(dir_.string()));
        return c;
    }

    static engine::RunResult run_stage(const std::string& stage) {
        Config c = base();
        c.set_value("engine.stages", YAML::Node(stage));
        c.set_value("outputs.eve.enabled", YAML::Node(false));
        c.set_value("outputs.fast.enabled", YAML::Node(false));
        engine::SensorConfig sc = engine::load_sensor_config(c);
        sc.detect.rule_files = {(dir_ / "a.rules").string()};
        engine::Engine e(sc);
        EXPECT_EQ(e.detecting(), stage == "detect");
        return e.run();
    }

    static fs::path dir_;
    static tools::trafficgen::Record record_;
};

fs::path ProfileRun::dir_;
tools::trafficgen::Record ProfileRun::record_;

TEST_F(ProfileRun, StagesStopWhereTheySay) {
    const engine::RunResult read = run_stage("read");
    EXPECT_EQ(read.exit_code, 0);
    EXPECT_EQ(read.packets, record_.packets);
    EXPECT_EQ(read.bytes, record_.bytes);
    EXPECT_EQ(read.stats.get("decoder.pkts"), 0u);
    EXPECT_EQ(read.stats.get("flow.total"), 0u);

    const engine::RunResult decode = run_stage("decode");
    EXPECT_EQ(decode.packets, record_.packets);
    EXPECT_EQ(decode.stats.get("decoder.pkts"), record_.packets);
    EXPECT_EQ(decode.stats.get("decoder.tcp"), record_.tcp);
    EXPECT_EQ(
        decode.stats.get("defrag.ipv4.reassembled") + decode.stats.get("defrag.ipv6.reassembled"),
        record_.reassembled);
    EXPECT_EQ(decode.stats.get("flow.total"), 0u);

    const engine::RunResult flow = run_stage("flow");
    EXPECT_EQ(flow.stats.get("decoder.pkts"), record_.packets);
    EXPECT_EQ(flow.stats.get("flow.total"), record_.flows);

    const engine::RunResult detect = run_stage("detect");
    EXPECT_EQ(detect.stats.get("flow.total"), record_.flows);
    EXPECT_EQ(detect.packets, record_.packets);
}

TEST_F(ProfileRun, LadderOverAGeneratedPcap) {
    auto ladder = parse_ladder(
        "- name: \"null\"\n  set: {engine.stages: read}\n"
        "- name: decode\n  set: {engine.stages: decode}\n"
        "- name: +flow\n  set: {engine.stages: flow}\n"
        "- name: +web rules\n  set: {engine.stages: detect, rule-files: \"${web-rules}\"}\n"
        "- name: +rules\n  set: {engine.stages: detect, rule-files: \"${rules}\"}\n",
        "ladder.yaml");
    ASSERT_TRUE(ladder.ok()) << ladder.status();
    auto steps = plan(*ladder, base(), {{"rules", {(dir_ / "a.rules").string()}}});
    ASSERT_TRUE(steps.ok()) << steps.status();

    RunOptions options;
    options.repeat = 2;
    std::vector<std::string> progress;
    options.progress = [&](const std::string& line) { progress.push_back(line); };
    auto report = run(*steps, options);
    ASSERT_TRUE(report.ok()) << report.status();

    ASSERT_EQ(report->steps.size(), 5u);
    EXPECT_EQ(report->inputs, std::vector<std::string>{(dir_ / "t.pcap").string()});
    EXPECT_EQ(report->repeat, 2u);
    for (size_t i : {0, 1, 2, 4}) {
        const StepResult& s = report->steps[i];
        EXPECT_EQ(s.skipped, "") << s.name;
        ASSERT_EQ(s.runs.size(), 2u) << s.name;
        for (const RunSample& r : s.runs) {
            EXPECT_EQ(r.packets, record_.packets) << s.name;
            EXPECT_EQ(r.bytes, record_.bytes) << s.name;
            EXPECT_GT(r.seconds, 0) << s.name;
        }
    }
    EXPECT_EQ(report->steps[3].skipped, "${web-rules} is not set");
    EXPECT_TRUE(report->steps[3].runs.empty());
    EXPECT_EQ(report->steps[0].stages, engine::Stage::kRead);
    EXPECT_EQ(report->steps[2].stages, engine::Stage::kFlow);
    EXPECT_EQ(report->steps[2].rules_loaded, 0u);
    EXPECT_EQ(report->steps[4].rules_loaded, 2u);
    // One warm-up run, then 4 steps x 2 rounds, in rounds.
    ASSERT_EQ(progress.size(), 9u);
    EXPECT_EQ(progress[0].rfind("warm-up: null: ", 0), 0u) << progress[0];
    EXPECT_EQ(progress[1].rfind("round 1/2: null: ", 0), 0u) << progress[1];
    EXPECT_EQ(progress[4].rfind("round 1/2: +rules: ", 0), 0u) << progress[4];
    EXPECT_EQ(progress[5].rfind("round 2/2: null: ", 0), 0u) << progress[5];

    // Text: title, legend, blank, header, one row per step.
    const std::vector<std::string> text = lines(format_report(*report, Format::kText));
    ASSERT_EQ(text.size(), 4u + 5u);
    for (const char* column : {"packets/s", "spread (min–max)", "Mbit/s", "Δ packets/s", "Δ %",
                               "worker ns/packet", "Δ worker ns/packet", "start-up", "notes"}) {
        EXPECT_NE(text[3].find(column), std::string::npos) << column;
    }
    EXPECT_EQ(text[4].rfind("null ", 0), 0u);
    EXPECT_NE(text[4].find("—"), std::string::npos);  // no step above: no change
    EXPECT_EQ(text[7], "+web rules  skipped: ${web-rules} is not set");
    EXPECT_NE(text[8].find("2 rules"), std::string::npos) << text[8];
    EXPECT_NE(text[8].find("%"), std::string::npos) << text[8];

    // Markdown: a table of 5 rows under its header and rule.
    const std::vector<std::string> md = lines(format_report(*report, Format::kMarkdown));
    ASSERT_EQ(md.size(), 2u + 2u + 5u);
    EXPECT_EQ(
        md[2],
        "| step | packets/s | spread (min–max) | Mbit/s | Δ packets/s | Δ % | worker ns/packet "
        "| Δ worker ns/packet | start-up | notes |");
    EXPECT_EQ(md[3], "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    EXPECT_EQ(md[7], "| +web rules | skipped: ${web-rules} is not set | | | | | | | | |");

    // JSON: every step; the change fields from the second step that ran on.
    const nlohmann::json j = nlohmann::json::parse(format_report(*report, Format::kJson));
    ASSERT_EQ(j["steps"].size(), 5u);
    EXPECT_FALSE(j["steps"][0].contains("delta_packets_per_sec"));
    for (size_t i : {1, 2, 4}) {
        EXPECT_TRUE(j["steps"][i].contains("delta_packets_per_sec")) << i;
        EXPECT_TRUE(j["steps"][i].contains("delta_percent")) << i;
        EXPECT_TRUE(j["steps"][i].contains("delta_ns_per_packet")) << i;
        EXPECT_TRUE(j["steps"][i].contains("delta_worker_ns_per_packet")) << i;
        EXPECT_EQ(j["steps"][i]["packets"], record_.packets) << i;
        EXPECT_EQ(j["steps"][i]["runs"].size(), 2u) << i;
    }
    EXPECT_EQ(j["steps"][3]["skipped"], "${web-rules} is not set");
    EXPECT_EQ(j["steps"][4]["stages"], "detect");
    EXPECT_EQ(j["steps"][4]["rules_loaded"], 2);
}

TEST_F(ProfileRun, ARunErrorNamesTheStep) {
    // Cut the pcap in the middle of a record: the run reads up to the damage, then fails.
    const fs::path cut = dir_ / "cut.pcap";
    fs::copy_file(dir_ / "t.pcap", cut, fs::copy_options::overwrite_existing);
    fs::resize_file(cut, fs::file_size(cut) - 7);
    Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back(cut.string());
    c.set_value("pcap-file.paths", list);
    c.set_value("workers", YAML::Node(1));
    auto ladder = parse_ladder("- name: decode\n  set: {engine.stages: decode}\n", "l.yaml");
    ASSERT_TRUE(ladder.ok());
    auto steps = plan(*ladder, c, {});
    ASSERT_TRUE(steps.ok()) << steps.status();
    RunOptions options;
    options.warmup = false;
    auto report = run(*steps, options);
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(
        std::string(report.status().message())
            .rfind("step 1 (decode), round 1: " + cut.string() + ": truncated or corrupt capture",
                   0),
        0u)
        << report.status();
}

TEST(ProfileRunNothing, EveryStepSkipped) {
    PlannedStep s;
    s.name = "rules";
    s.skipped = "${rules} is not set";
    auto report = run({s}, RunOptions{});
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(report.status().message(),
              "no step can run: every step uses a variable that is not set (step 1: ${rules} is "
              "not set)");
}

TEST(ProfileFigures, MedianAndSpread) {
    EXPECT_EQ(median({}), 0);
    EXPECT_EQ(median({3, 1, 2}), 2);
    EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
    StepResult s;
    s.runs = {{0.010, 1000, 1000000, 0.5, 0.0002},
              {0.008, 1000, 1000000, 0.7, 0.0001},
              {0.0125, 1000, 1000000, 0.6, 0.0003}};
    const StepFigures f = figures(s);
    EXPECT_DOUBLE_EQ(f.pps, 100000);
    EXPECT_DOUBLE_EQ(f.pps_min, 80000);
    EXPECT_DOUBLE_EQ(f.pps_max, 125000);
    EXPECT_DOUBLE_EQ(f.mbps, 800);
    EXPECT_DOUBLE_EQ(f.ns_per_packet, 10000);
    EXPECT_DOUBLE_EQ(f.setup_seconds, 0.6);
    EXPECT_DOUBLE_EQ(f.worker_ns_per_packet, 200);
    EXPECT_EQ(f.packets, 1000u);
    EXPECT_EQ(f.bytes, 1000000u);
}

// The table's exact layout, from samples chosen so that every figure is known.
TEST(ProfileTable, ExactText) {
    Report r;
    r.inputs = {"t.pcap"};
    r.repeat = 3;
    StepResult null_step;
    null_step.name = "null";
    null_step.stages = engine::Stage::kRead;
    null_step.workers = 1;
    null_step.runs = {{0.010, 1000, 1000000, 0.001, 0.0001},
                      {0.008, 1000, 1000000, 0.001, 0.0001},
                      {0.0125, 1000, 1000000, 0, 0.0001}};
    StepResult decode = null_step;
    decode.name = "decode";
    decode.stages = engine::Stage::kDecode;
    decode.runs = {{0.020, 1000, 1000000, 0.001, 0.0002},
                   {0.020, 1000, 1000000, 0.001, 0.0002},
                   {0.025, 1000, 1000000, 0, 0.0002}};
    StepResult web;
    web.name = "+web rules";
    web.skipped = "${web-rules} is not set";
    StepResult rules = null_step;
    rules.name = "+rules";
    rules.stages = engine::Stage::kDetect;
    rules.rules_loaded = 12345;
    rules.rules_skipped = 3;
    rules.runs = {{0.020, 1000, 1000000, 1.5, 0.0011},
                  {0.021, 1000, 1000000, 1.4, 0.0009},
                  {0.019, 1000, 1000000, 1.6, 0.001}};
    r.steps = {null_step, decode, web, rules};

    EXPECT_EQ(format_report(r, Format::kText),
              "Configuration profile of t.pcap: 1,000 packets, 1.0 MB on the wire; 1 worker; 3 "
              "runs per step.\n"
              "Medians over the runs of Engine::run() (start-up, which includes compiling rules, "
              "is apart); spread = slowest and fastest run; Δ = change from the step above that "
              "ran; worker ns/packet = the workers' time on batches per packet, without waiting "
              "for the reader (which bounds packets/s while the stages are cheap).\n"
              "\n"
              "step        packets/s  spread (min–max)  Mbit/s  Δ packets/s     Δ %  worker "
              "ns/packet  Δ worker ns/packet  start-up  notes\n"
              "null          100,000    80,000–125,000   800.0            —       —             "
              "100.0                   —    0.00 s\n"
              "decode         50,000     40,000–50,000   400.0      -50,000  -50.0%             "
              "200.0              +100.0    0.00 s\n"
              "+web rules  skipped: ${web-rules} is not set\n"
              "+rules         50,000     47,619–52,632   400.0            0    0.0%           "
              "1,000.0              +800.0    1.50 s  12,345 rules (3 skipped); within noise\n");
    EXPECT_EQ(
        format_report(r, Format::kMarkdown),
        "Configuration profile of t.pcap: 1,000 packets, 1.0 MB on the wire; 1 worker; 3 runs per "
        "step. Medians over the runs of Engine::run() (start-up, which includes compiling rules, "
        "is apart); spread = slowest and fastest run; Δ = change from the step above that ran; "
        "worker ns/packet = the workers' time on batches per packet, without waiting for the "
        "reader (which bounds packets/s while the stages are cheap).\n"
        "\n"
        "| step | packets/s | spread (min–max) | Mbit/s | Δ packets/s | Δ % | worker ns/packet | Δ "
        "worker ns/packet | start-up | notes |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
        "| null | 100,000 | 80,000–125,000 | 800.0 | — | — | 100.0 | — | 0.00 s |  |\n"
        "| decode | 50,000 | 40,000–50,000 | 400.0 | -50,000 | -50.0% | 200.0 | +100.0 | 0.00 s |  "
        "|\n"
        "| +web rules | skipped: ${web-rules} is not set | | | | | | | | |\n"
        "| +rules | 50,000 | 47,619–52,632 | 400.0 | 0 | 0.0% | 1,000.0 | +800.0 | 1.50 s | 12,345 "
        "rules (3 skipped); within noise |\n");
}

}  // namespace
}  // namespace picket::sensor::profile
