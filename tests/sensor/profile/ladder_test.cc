// Ladder files: every parse and plan error with its exact message (file:line, step, key),
// flattening, ${variable} substitution, cumulative steps, skipped steps, and the default ladder
// in deploy/.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/config.h"
#include "sensor/profile/profile.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::profile {
namespace {

namespace fs = std::filesystem;

std::string parse_error(const std::string& yaml) {
    auto l = parse_ladder(yaml, "l.yaml");
    return l.ok() ? "ok" : std::string(l.status().message());
}

TEST(LadderParse, StructureErrors) {
    EXPECT_EQ(parse_error(""),
              "l.yaml:1: the ladder is empty: expected a list of steps, each {name: NAME, set: "
              "{KEY: VALUE, ...}}");
    EXPECT_EQ(parse_error("name: a\n"),
              "l.yaml:1: expected a list of steps, each {name: NAME, set: {KEY: VALUE, ...}}");
    EXPECT_EQ(parse_error("[]\n"), "l.yaml:1: the ladder has no steps");
    EXPECT_EQ(parse_error("- name: a\n  set: {a: [}\n"), "l.yaml:2: bad YAML: illegal flow end");
    EXPECT_EQ(parse_error("- name: a\n- just a string\n"),
              "l.yaml:2: step 2: expected a mapping {name: NAME, set: {...}}");
    EXPECT_EQ(parse_error("- name: a\n  sett: {}\n"),
              "l.yaml:2: step 1: sett: unknown key (a step has name and set)");
    EXPECT_EQ(parse_error("- set: {workers: 1}\n"), "l.yaml:1: step 1: missing name");
    EXPECT_EQ(parse_error("- name: \"\"\n"), "l.yaml:1: step 1: name: expected a non-empty string");
    EXPECT_EQ(parse_error("- name: [a]\n"), "l.yaml:1: step 1: name: expected a non-empty string");
    EXPECT_EQ(parse_error("- name: null\n"),
              "l.yaml:1: step 1: name: expected a non-empty string (YAML reads null, ~ and "
              "nothing as no value: quote it)");
    EXPECT_EQ(parse_error("- name: a\n- name: b\n- name: a\n"),
              "l.yaml:3: step 3 (a): name: also the name of step 1 (line 1)");
    EXPECT_EQ(parse_error("- name: a\n  set: [1]\n"),
              "l.yaml:2: step 1 (a): set: expected a mapping of config keys to values");
}

TEST(LadderParse, KeyErrors) {
    EXPECT_EQ(parse_error("- name: a\n  set:\n    workers: 1\n    engine.stage: read\n"),
              "l.yaml:4: step 1 (a): engine.stage: not a key picket-sensor reads (see "
              "deploy/sensor.yaml)");
    EXPECT_EQ(parse_error("- name: a\n  set:\n    flow:\n      memcapp: 1mb\n"),
              "l.yaml:4: step 1 (a): flow.memcapp: not a key picket-sensor reads (see "
              "deploy/sensor.yaml)");
    EXPECT_EQ(parse_error("- name: a\n  set:\n    flow..memcap: 1mb\n"),
              "l.yaml:3: step 1 (a): flow..memcap: empty part in the key");
    EXPECT_EQ(
        parse_error("- name: a\n  set:\n    engine.stages: read\n    engine: {stages: flow}\n"),
        "l.yaml:4: step 1 (a): engine.stages: set twice in this step (line 3)");
    EXPECT_EQ(parse_error("- name: a\n  set:\n    rule-files: ${x\n"),
              "l.yaml:3: step 1 (a): rule-files: bad variable reference '${x': expected ${NAME} "
              "(letters, digits, '_', '-', '.')");
    EXPECT_EQ(parse_error("- name: a\n  set:\n    rule-files: [a, \"${a b}\"]\n"),
              "l.yaml:3: step 1 (a): rule-files: bad variable reference '${a b}': expected "
              "${NAME} (letters, digits, '_', '-', '.')");
}

TEST(LadderParse, FlattensNestedKeysWithTheirLines) {
    auto l = parse_ladder(
        "# comment\n"
        "- name: base\n"
        "- name: tuned\n"
        "  set:\n"
        "    flow:\n"
        "      memcap: 64mb\n"
        "      hash-size: 1024\n"
        "    engine.stages: flow\n"
        "    vars: {address-groups: {HOME_NET: \"[10.0.0.0/8]\"}}\n"
        "    rule-files: [\"${rules}\", /x.rules]\n",
        "l.yaml");
    ASSERT_TRUE(l.ok()) << l.status();
    ASSERT_EQ(l->steps.size(), 2u);
    EXPECT_EQ(l->steps[0].name, "base");
    EXPECT_EQ(l->steps[0].line, 2);
    EXPECT_TRUE(l->steps[0].set.empty());
    EXPECT_EQ(l->steps[1].line, 3);
    std::vector<std::pair<std::string, int>> keys;
    for (const auto& s : l->steps[1].set) {
        keys.emplace_back(s.key, s.line);
    }
    EXPECT_EQ(keys, (std::vector<std::pair<std::string, int>>{{"flow.memcap", 6},
                                                              {"flow.hash-size", 7},
                                                              {"engine.stages", 8},
                                                              {"vars.address-groups.HOME_NET", 9},
                                                              {"rule-files", 10}}));
    EXPECT_EQ(referenced_variables(*l), (std::set<std::string>{"rules"}));
}

class LadderPlan : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.path();
        // The input only has to exist for planning: nothing is read.
        std::ofstream(dir_ / "t.pcap") << "x";
        std::ofstream(dir_ / "a.rules") << "";
        std::ofstream(dir_ / "b.rules") << "";
    }

    Config base(const std::string& yaml = "{}") const {
        Config c = Config::load_string(yaml, "sensor.yaml");
        YAML::Node list(YAML::NodeType::Sequence);
        list.push_back((dir_ / "t.pcap").string());
        c.set_value("pcap-file.paths", list);
        return c;
    }
    std::string file(const char* name) const { return (dir_ / name).string(); }

    absl::StatusOr<std::vector<PlannedStep>> plan_text(const std::string& yaml,
                                                       const Variables& vars = {},
                                                       const std::string& base_yaml = "{}") {
        auto l = parse_ladder(yaml, "l.yaml");
        if (!l.ok()) {
            return l.status();
        }
        return plan(*l, base(base_yaml), vars);
    }
    std::string plan_error(const std::string& yaml, const Variables& vars = {},
                           const std::string& base_yaml = "{}") {
        auto p = plan_text(yaml, vars, base_yaml);
        return p.ok() ? "ok" : std::string(p.status().message());
    }

    picket::testing::TempDir tmp_{"picket-ladder"};
    fs::path dir_;
};

TEST_F(LadderPlan, StepsAreCumulativeAndOutputsOff) {
    auto p = plan_text(
        "- name: \"null\"\n  set: {engine.stages: read, flow.memcap: 64mb}\n"
        "- name: decode\n  set: {engine.stages: decode}\n"
        "- name: eve\n  set: {outputs.eve.enabled: yes, engine.stages: flow}\n");
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(p->size(), 3u);
    EXPECT_EQ((*p)[0].config.stages, engine::Stage::kRead);
    EXPECT_EQ((*p)[1].config.stages, engine::Stage::kDecode);
    EXPECT_EQ((*p)[2].config.stages, engine::Stage::kFlow);
    EXPECT_EQ((*p)[1].config.flow.memcap, 64ULL << 20);  // from step 1
    EXPECT_EQ((*p)[2].config.flow.memcap, 64ULL << 20);
    EXPECT_FALSE((*p)[0].config.eve_enabled);
    EXPECT_FALSE((*p)[0].config.fast_log_enabled);
    EXPECT_FALSE((*p)[1].config.eve_enabled);
    EXPECT_TRUE((*p)[2].config.eve_enabled);
    EXPECT_EQ((*p)[0].config.mode, engine::CaptureMode::kPcapFile);
    EXPECT_EQ((*p)[0].config.pcap_paths, std::vector<std::string>{file("t.pcap")});
}

TEST_F(LadderPlan, DetectionSettingsToo) {
    // Keys read by detect::read_detect_settings, not load_sensor_config, are steps as well.
    auto p = plan_text("- name: hs\n- name: no mpm\n  set: {detect.mpm-algo: none}\n");
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ((*p)[0].config.detect.mpm_algo, detect::MpmAlgo::kHyperscan);
    EXPECT_EQ((*p)[1].config.detect.mpm_algo, detect::MpmAlgo::kNone);
    EXPECT_EQ(plan_error("- name: a\n  set: {detect.mpm-algo: ac}\n"),
              "l.yaml:2: step 1 (a): detect.mpm-algo: expected one of hs, none, got 'ac'");
}

TEST_F(LadderPlan, BaseConfigurationUnderTheSteps) {
    // sensor.yaml's values hold until a step changes them; --set lands in the base the same way.
    auto p = plan_text("- name: a\n- name: b\n  set: {flow.hash-size: 99}\n", {},
                       "flow: {hash-size: 7, memcap: 1mb}\nworkers: 2\n");
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ((*p)[0].config.flow.hash_size, 7u);
    EXPECT_EQ((*p)[1].config.flow.hash_size, 99u);
    EXPECT_EQ((*p)[1].config.flow.memcap, 1ULL << 20);
    EXPECT_EQ((*p)[1].config.workers, 2u);
}

TEST_F(LadderPlan, VariablesAndSkippedSteps) {
    const std::string ladder =
        "- name: flow\n  set: {engine.stages: flow}\n"
        "- name: web\n  set: {engine.stages: detect, rule-files: \"${web}\"}\n"
        "- name: all\n  set:\n    rule-files: ${rules}\n"  // block style needs no quotes
        "- name: both\n  set: {rule-files: [\"${web}\", \"${dir}/b.rules\"]}\n";
    auto p = plan_text(ladder, {{"rules", {file("a.rules"), file("b.rules")}},
                                {"dir", {dir_.string()}},
                                {"web", {""}}});  // empty = unset
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(p->size(), 4u);
    EXPECT_EQ((*p)[1].skipped, "${web} is not set");
    // The skipped step's engine.stages never applied: "all" stays at flow.
    EXPECT_EQ((*p)[2].skipped, "");
    EXPECT_EQ((*p)[2].config.stages, engine::Stage::kFlow);
    EXPECT_EQ((*p)[2].config.detect.rule_files,
              (std::vector<std::string>{file("a.rules"), file("b.rules")}));
    EXPECT_EQ((*p)[3].skipped, "${web} is not set");

    p = plan_text(
        ladder,
        {{"rules", {file("a.rules")}}, {"dir", {dir_.string()}}, {"web", {file("a.rules")}}});
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ((*p)[1].config.stages, engine::Stage::kDetect);
    EXPECT_EQ((*p)[1].config.detect.rule_files, std::vector<std::string>{file("a.rules")});
    EXPECT_EQ((*p)[3].config.detect.rule_files,
              (std::vector<std::string>{file("a.rules"), file("b.rules")}));
}

TEST_F(LadderPlan, ValueErrorsNameTheLadderLine) {
    EXPECT_EQ(plan_error("- name: a\n  set:\n    engine.stages: fast\n"),
              "l.yaml:3: step 1 (a): engine.stages: expected one of read, decode, flow, stream, "
              "app-layer, detect, "
              "got 'fast'");
    EXPECT_EQ(plan_error("- name: a\n- name: b\n  set:\n    flow:\n      memcap: lots\n"),
              "l.yaml:5: step 2 (b): flow.memcap: expected a size such as 65536, 64kb, 32mb or "
              "1gb, got 'lots'");
    EXPECT_EQ(plan_error("- name: a\n  set: {stats-interval: 0.01}\n"),
              "l.yaml:2: step 1 (a): stats-interval: must be at least 0.1 seconds");
    EXPECT_EQ(
        plan_error("- name: a\n  set: {rule-files: \"${r}/x.rules\"}\n", {{"r", {"/a", "/b"}}}),
        "l.yaml:2: step 1 (a): rule-files: ${r} holds 2 values; a list can only stand for "
        "a whole value or a list item");
    EXPECT_EQ(plan_error("- name: a\n  set: {rule-files: /nonexistent/x.rules}\n"),
              "l.yaml:2: step 1 (a): rule-files: cannot read /nonexistent/x.rules");
    EXPECT_EQ(plan_error("- name: a\n  set: {capture.bpf-filter: \"port port\"}\n"),
              "l.yaml:2: step 1 (a): capture.bpf-filter: bad BPF expression 'port port': can't "
              "parse filter expression: syntax error");
    EXPECT_EQ(plan_error("- name: a\n  set: {pcap-file.loop: 2}\n"),
              "l.yaml:2: step 1 (a): pcap-file.loop / pcap-file.rate: a profile run reads the "
              "files once");
    EXPECT_EQ(plan_error("- name: a\n  set: {pcap-file.paths: [], capture.interface: lo}\n"),
              "l.yaml:2: step 1 (a): reads from an interface; a profile reads pcap files (-r)");
}

TEST_F(LadderPlan, BaseErrorsNameTheBase) {
    EXPECT_EQ(plan_error("- name: a\n", {}, "flow:\n  memcap: lots\n"),
              "sensor.yaml:2: flow.memcap: expected a size such as 65536, 64kb, 32mb or 1gb, got "
              "'lots'");
    EXPECT_EQ(plan_error("- name: a\n", {}, "pcap-file: {rate: 10}\n"),
              "sensor.yaml: pcap-file.loop / pcap-file.rate: a profile run reads the files once");
}

TEST(DefaultLadder, ParsesAndRunsWithoutRules) {
    auto l = load_ladder(std::string(PICKET_SOURCE_DIR) + "/deploy/profile-ladder.yaml");
    ASSERT_TRUE(l.ok()) << l.status();
    std::vector<std::string> names;
    for (const auto& s : l->steps) {
        names.push_back(s.name);
    }
    EXPECT_EQ(names,
              (std::vector<std::string>{"null (read only)", "decode", "+flow", "+stream", "+http",
                                        "+dns +tls", "+web rules", "+all rules", "+eve alerts",
                                        "+eve (http dns tls flow fileinfo)"}));
    EXPECT_EQ(referenced_variables(*l), (std::set<std::string>{"rules", "web-rules"}));

    Config c;
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back("/dev/null");
    c.set_value("pcap-file.paths", list);
    auto p = plan(*l, c, {});
    ASSERT_TRUE(p.ok()) << p.status();
    std::vector<std::string> skipped;
    for (const auto& s : *p) {
        skipped.push_back(s.skipped);
    }
    EXPECT_EQ(skipped, (std::vector<std::string>{"", "", "", "", "", "", "${web-rules} is not set",
                                                 "${rules} is not set", "${rules} is not set",
                                                 "${rules} is not set"}));
    EXPECT_EQ((*p)[0].config.stages, engine::Stage::kRead);
    EXPECT_EQ((*p)[1].config.stages, engine::Stage::kDecode);
    EXPECT_EQ((*p)[2].config.stages, engine::Stage::kFlow);
    EXPECT_EQ((*p)[3].config.stages, engine::Stage::kStream);
    EXPECT_EQ((*p)[4].config.stages, engine::Stage::kAppLayer);
    EXPECT_FALSE((*p)[4].config.app_layer.dns);
    EXPECT_TRUE((*p)[5].config.app_layer.dns);
}

TEST(LoadLadder, MissingFile) {
    auto l = load_ladder("/nonexistent/ladder.yaml");
    ASSERT_FALSE(l.ok());
    EXPECT_EQ(l.status().message(), "/nonexistent/ladder.yaml: cannot open the ladder file");
}

}  // namespace
}  // namespace picket::sensor::profile
