// Rule profiling (profiling.rules) and detect.mpm-algo through a real Engine over generated
// traffic: exact per-rule checks and matches, derived from the generator's record, with the
// Hyperscan prefilter and without one; the merge across workers and reload generations; the
// JSON and table layouts; and alerts that stay byte-identical whether profiling is on or off
// and whichever mpm-algo runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/config.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/rule_profile.h"
#include "sensor/engine/engine.h"
#include "tests/support/temp_dir.h"
#include "tools/trafficgen/generator.h"

namespace picket::sensor::detect {
namespace {

namespace fs = std::filesystem;
using engine::Engine;
using engine::SensorConfig;

constexpr const char* kOne = "ATK-one-xyz";

// One rule per kind of candidate: a fast pattern that the prefilter narrows to the attack
// packets, a pcre without content (checked on every UDP packet), header-only ICMP and TCP
// rules, a rule whose fast pattern occurs but whose second content never does, an `ip` rule
// checked on every IP packet.
constexpr const char* kCountRules =
    "alert tcp any any -> any any (msg:\"one\"; content:\"ATK-one-xyz\"; sid:101; rev:2;)\n"
    "alert udp any any -> any any (msg:\"udp\"; pcre:\"/./s\"; sid:102;)\n"
    "alert icmp any any -> any any (msg:\"echo request\"; itype:8; sid:103;)\n"
    "alert icmp any any -> any any (msg:\"echo reply\"; itype:0; sid:104;)\n"
    "alert tcp any any -> any any (msg:\"never\"; content:\"ATK-one-xyz\"; fast_pattern; "
    "content:\"NOPE-NEVER\"; sid:105;)\n"
    "alert tcp any any -> any any (msg:\"syn\"; flags:S; sid:106;)\n"
    "alert ip any any -> any any (msg:\"udp by proto\"; ip_proto:17; sid:107;)\n";

// Many keyword kinds at once, for the alert comparisons: flowbits, thresholds, a pass rule, a
// drop rule, negated content, nocase, a chopped fast pattern, relative matches, byte_test,
// address variables.
constexpr const char* kMixedRules =
    "alert tcp any any -> any any (msg:\"passwd\"; content:\"/etc/passwd\"; sid:201;)\n"
    "alert tcp any any -> any any (msg:\"cmd\"; content:\"CMD.EXE\"; nocase; sid:202;)\n"
    "alert tcp any any -> any [80,8080] (msg:\"get\"; flow:to_server,established; "
    "content:\"GET \"; depth:4; content:\"HTTP/1.1\"; distance:0; sid:203;)\n"
    "alert tcp any [80,8080] -> any any (msg:\"200\"; flow:to_client; content:\"HTTP/1.1 200\"; "
    "depth:12; threshold:type limit, track by_src, count 2, seconds 60; sid:204;)\n"
    "alert tcp any any -> any any (msg:\"ua\"; content:\"User-Agent: \"; "
    "pcre:\"/^User-Agent: [^\\r\\n]*Mozilla/mi\"; sid:205;)\n"
    "alert udp any 53 -> any any (msg:\"dns response\"; byte_test:1,&,128,2; sid:206;)\n"
    "alert udp any any -> any 53 (msg:\"dns A IN\"; pcre:\"/\\x00\\x01\\x00\\x01/\"; sid:207;)\n"
    "alert tcp any any -> any any (msg:\"post\"; flow:to_server; content:\"POST \"; depth:5; "
    "flowbits:set,picket.post; flowbits:noalert; sid:208;)\n"
    "alert tcp any any -> any any (msg:\"post reply\"; flow:to_client; "
    "flowbits:isset,picket.post; content:\"HTTP/1.1 \"; depth:9; sid:209;)\n"
    "alert tcp any any -> any any (msg:\"big\"; dsize:>1400; content:!\"zzzzqqqq\"; sid:210;)\n"
    "alert icmp any any -> any any (msg:\"echo\"; itype:8; detection_filter:track by_src, "
    "count 2, seconds 60; sid:211;)\n"
    "pass tcp any any -> any any (msg:\"json\"; content:\"application/json\"; sid:212;)\n"
    "alert tcp any any -> any any (msg:\"chop\"; content:\"Content-Length: \"; "
    "fast_pattern:8,8; sid:213;)\n"
    "alert tcp $HOME_NET any -> $EXTERNAL_NET any (msg:\"syn out\"; flags:S; sid:214;)\n"
    "alert tcp any any -> 10.0.0.0/8 any (msg:\"synack in\"; flags:SA; sid:215;)\n"
    "alert ip any any -> any any (msg:\"ttl\"; ttl:128; sid:216;)\n"
    "alert tcp any any -> any any (msg:\"two\"; content:\"ATK two\"; content:\"HTTP\"; "
    "distance:0; sid:217;)\n"
    "drop tcp any any -> any any (msg:\"drop one\"; content:\"ATK-one-xyz\"; sid:218;)\n";

class RuleProfileTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(fs::temp_directory_path() /
                            ("picket-rule-profile-" + std::to_string(getpid())));
        fs::create_directories(*dir_);
        tools::trafficgen::Options o;
        o.seed = 11;
        o.sessions = 300;
        o.frag_share = 0.2;  // reassembled DNS answers are inspected once, as one packet
        o.attacks = {kOne, "ATK two"};
        o.attack_share = 0.2;
        record_ = new tools::trafficgen::Record(
            tools::trafficgen::generate(o, (*dir_ / "t.pcap").string()));
        std::ofstream(*dir_ / "counts.rules") << kCountRules;
        std::ofstream(*dir_ / "mixed.rules") << kMixedRules;
    }
    static void TearDownTestSuite() {
        fs::remove_all(*dir_);
        delete dir_;
        delete record_;
    }

    // A run over the generated pcap; `out` is its log directory (created).
    static SensorConfig config(const std::string& rules, const std::string& out, uint32_t workers,
                               const std::vector<std::string>& sets) {
        Config c;
        YAML::Node list(YAML::NodeType::Sequence);
        list.push_back((*dir_ / "t.pcap").string());
        c.set_value("pcap-file.paths", list);
        fs::create_directories(*dir_ / out);
        c.set_value("default-log-dir", YAML::Node((*dir_ / out).string()));
        c.set_value("workers", YAML::Node(workers));
        c.set_value("stats-interval", YAML::Node(3600));
        for (const auto& s : sets) {
            c.set(s);
        }
        SensorConfig sc = engine::load_sensor_config(c);
        read_detect_settings(c, &sc.detect);
        sc.detect.rule_files = {(*dir_ / rules).string()};
        return sc;
    }

    static std::string read(const fs::path& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    static const RuleProfileEntry& entry(const RuleProfile& p, uint32_t sid, uint32_t rev) {
        auto it = std::find_if(p.rules().begin(), p.rules().end(),
                               [&](const auto& e) { return e.sid == sid && e.rev == rev; });
        EXPECT_NE(it, p.rules().end()) << "sid " << sid << " rev " << rev;
        return *it;
    }

    static uint64_t attacks_of(const std::string& s) {
        return static_cast<uint64_t>(
            std::count_if(record_->attacks.begin(), record_->attacks.end(),
                          [&](const tools::trafficgen::AttackRecord& a) { return a.string == s; }));
    }

    // IP packets the engine inspects: every IP frame but the fragments, plus one per
    // reassembled datagram.
    static uint64_t inspected_ip() {
        const auto& r = *record_;
        return r.ipv4 + r.ipv6 - r.ipv4_fragments - r.ipv6_fragments + r.reassembled;
    }

    static fs::path* dir_;
    static tools::trafficgen::Record* record_;
};

fs::path* RuleProfileTest::dir_ = nullptr;
tools::trafficgen::Record* RuleProfileTest::record_ = nullptr;

TEST_F(RuleProfileTest, GeneratedTrafficIsWhatTheExpectationsAssume) {
    // Each attack string sits in exactly one packet, and nothing else contains it.
    EXPECT_EQ(record_->attack_string_packets, record_->attacks.size());
    EXPECT_GT(attacks_of(kOne), 0u);
    EXPECT_GT(record_->reassembled, 0u);
    EXPECT_GT(record_->icmpv4, 0u);
    // ICMP echo sessions are request/reply pairs.
    EXPECT_EQ(record_->icmpv4 % 2, 0u);
}

TEST_F(RuleProfileTest, ExactChecksAndMatchesWithHyperscan) {
    Engine e(config("counts.rules", "hs", 2, {"profiling.rules.enabled=yes"}));
    const engine::RunResult r = e.run();
    ASSERT_EQ(r.exit_code, 0) << r.error;
    const RuleProfile p = e.rule_profile();
    const auto& rec = *record_;
    const uint64_t one = attacks_of(kOne);
    const uint64_t icmp = rec.icmpv4 + rec.icmpv6;
    const uint64_t tcp_sessions = rec.sessions.http + rec.sessions.tls;

    EXPECT_EQ(p.rules().size(), 7u);
    EXPECT_EQ(p.generations(), 1u);
    EXPECT_EQ(p.worker_arrays(), 2u);
    EXPECT_EQ(entry(p, 101, 2).checks, one);
    EXPECT_EQ(entry(p, 101, 2).matches, one);
    EXPECT_EQ(entry(p, 102, 0).checks, rec.udp);
    EXPECT_EQ(entry(p, 102, 0).matches, rec.udp);
    EXPECT_EQ(entry(p, 103, 0).checks, icmp);
    EXPECT_EQ(entry(p, 103, 0).matches, rec.icmpv4 / 2);
    EXPECT_EQ(entry(p, 104, 0).checks, icmp);
    EXPECT_EQ(entry(p, 104, 0).matches, rec.icmpv4 / 2);
    EXPECT_EQ(entry(p, 105, 0).checks, one);
    EXPECT_EQ(entry(p, 105, 0).matches, 0u);
    EXPECT_EQ(entry(p, 106, 0).checks, rec.tcp);
    EXPECT_EQ(entry(p, 106, 0).matches, tcp_sessions);
    EXPECT_EQ(entry(p, 107, 0).checks, inspected_ip());
    EXPECT_EQ(entry(p, 107, 0).matches, rec.udp);
    // Every check took some time, and the worst one is part of the total.
    for (const auto& en : p.rules()) {
        EXPECT_GE(en.ticks, en.checks) << en.sid;
        EXPECT_LE(en.worst_ticks, en.ticks) << en.sid;
    }
    EXPECT_GT(p.ticks_per_us(), 0);
    // The engine's own counter is the sum of the checks.
    uint64_t checks = 0;
    for (const auto& en : p.rules()) {
        checks += en.checks;
    }
    EXPECT_EQ(checks, r.stats.get("detect.rules_evaluated"));
}

TEST_F(RuleProfileTest, ExactChecksAndMatchesWithoutPrefilter) {
    // Raw content per packet (stream.raw-on-ack=no): every TCP packet is then one check of
    // each content rule. (With Suricata's chunk timing a packet whose data waits for its
    // chunk is no check; ExactChecksAndMatchesWithHyperscan counts that mode.) TLS sessions
    // are inspected in full: by default their encrypted packets are no check either.
    Engine e(config("counts.rules", "none", 2,
                    {"profiling.rules.enabled=yes", "detect.mpm-algo=none", "stream.raw-on-ack=no",
                     "app-layer.protocols.tls.encryption-handling=full"}));
    EXPECT_EQ(e.load_summary().hs_databases, 0u);
    const engine::RunResult r = e.run();
    ASSERT_EQ(r.exit_code, 0) << r.error;
    const RuleProfile p = e.rule_profile();
    const auto& rec = *record_;
    const uint64_t one = attacks_of(kOne);

    // Every TCP packet now verifies the content rules; matches do not change.
    EXPECT_EQ(entry(p, 101, 2).checks, rec.tcp);
    EXPECT_EQ(entry(p, 101, 2).matches, one);
    EXPECT_EQ(entry(p, 102, 0).checks, rec.udp);
    EXPECT_EQ(entry(p, 102, 0).matches, rec.udp);
    EXPECT_EQ(entry(p, 103, 0).checks, rec.icmpv4 + rec.icmpv6);
    EXPECT_EQ(entry(p, 103, 0).matches, rec.icmpv4 / 2);
    EXPECT_EQ(entry(p, 105, 0).checks, rec.tcp);
    EXPECT_EQ(entry(p, 105, 0).matches, 0u);
    EXPECT_EQ(entry(p, 106, 0).checks, rec.tcp);
    EXPECT_EQ(entry(p, 106, 0).matches, rec.sessions.http + rec.sessions.tls);
    EXPECT_EQ(entry(p, 107, 0).checks, inspected_ip());
    EXPECT_EQ(entry(p, 107, 0).matches, rec.udp);
}

TEST_F(RuleProfileTest, OffKeepsNoFigures) {
    Engine e(config("counts.rules", "off", 1, {}));
    ASSERT_EQ(e.run().exit_code, 0);
    const RuleProfile p = e.rule_profile();
    EXPECT_FALSE(p.profiling());
    EXPECT_TRUE(p.rules().empty());
}

TEST_F(RuleProfileTest, ReloadGenerationsMergeByGidSidRev) {
    // Generation 2 keeps every rule but raises sid 101 to rev 3.
    std::string next = kCountRules;
    next.replace(next.find("rev:2"), 5, "rev:3");
    std::ofstream(*dir_ / "counts-rev3.rules") << next;
    SensorConfig sc = config("counts.rules", "reload", 2, {"profiling.rules.enabled=yes"});
    Engine e(sc);
    ASSERT_EQ(e.run().exit_code, 0);
    DetectConfig dc = sc.detect;
    dc.rule_files = {(*dir_ / "counts-rev3.rules").string()};
    std::string error;
    ASSERT_TRUE(e.reload(dc, nullptr, &error)) << error;  // workers are done: retires gen 1
    const RuleProfile p = e.rule_profile();
    EXPECT_EQ(p.generations(), 2u);
    EXPECT_EQ(p.worker_arrays(), 4u);
    EXPECT_EQ(p.rules().size(), 8u);  // 7 rules + sid 101 rev 3
    EXPECT_EQ(entry(p, 101, 2).checks, attacks_of(kOne));
    EXPECT_EQ(entry(p, 101, 3).checks, 0u);
    EXPECT_EQ(entry(p, 102, 0).checks, record_->udp);  // gen 2 added zero
}

TEST_F(RuleProfileTest, JsonHoldsEveryRuleAndBothAggregates) {
    Engine e(config("counts.rules", "json", 1, {"profiling.rules.enabled=yes"}));
    ASSERT_EQ(e.run().exit_code, 0);
    const RuleProfile p = e.rule_profile();
    const fs::path path = *dir_ / "json" / "rule_perf.json";
    std::string error;
    ASSERT_TRUE(p.write_json(path.string(), &error)) << error;
    const nlohmann::json j = nlohmann::json::parse(read(path));

    EXPECT_EQ(j["mpm_algo"], "hs");
    EXPECT_EQ(j["generations"], 1);
    EXPECT_EQ(j["worker_arrays"], 1);
    EXPECT_GT(j["ticks_per_us"].get<double>(), 0);
    ASSERT_EQ(j["rules"].size(), 7u);
    uint64_t checks = 0, matches = 0, ticks = 0;
    uint64_t last_ticks = UINT64_MAX;
    for (const auto& r : j["rules"]) {
        checks += r["checks"].get<uint64_t>();
        matches += r["matches"].get<uint64_t>();
        ticks += r["ticks"].get<uint64_t>();
        EXPECT_LE(r["ticks"].get<uint64_t>(), last_ticks);  // costliest first
        last_ticks = r["ticks"].get<uint64_t>();
    }
    EXPECT_EQ(j["totals"]["rules"], 7);
    EXPECT_EQ(j["totals"]["checks"], checks);
    EXPECT_EQ(j["totals"]["matches"], matches);
    EXPECT_EQ(j["totals"]["ticks"], ticks);

    const auto rule = *std::find_if(j["rules"].begin(), j["rules"].end(),
                                    [](const nlohmann::json& r) { return r["sid"] == 105; });
    EXPECT_EQ(rule["gid"], 1);
    EXPECT_EQ(rule["rev"], 0);
    EXPECT_EQ(rule["msg"], "never");
    EXPECT_EQ(rule["file"], (*dir_ / "counts.rules").string());
    EXPECT_EQ(rule["line"], 5);
    EXPECT_EQ(rule["keywords"], nlohmann::json::array({"content"}));
    EXPECT_EQ(rule["fast_pattern"], "pkt_data:\"ATK-one-xyz\"");
    for (const char* k :
         {"checks", "matches", "ticks", "us", "avg_ticks", "avg_us", "worst_ticks", "worst_us"}) {
        EXPECT_TRUE(rule.contains(k)) << k;
    }

    std::map<std::string, std::pair<uint64_t, uint64_t>> by_kw;  // rules, checks
    for (const auto& g : j["by_keyword"]) {
        by_kw[g["keyword"]] = {g["rules"].get<uint64_t>(), g["checks"].get<uint64_t>()};
    }
    const auto& rec = *record_;
    const uint64_t one = attacks_of(kOne);
    const std::map<std::string, std::pair<uint64_t, uint64_t>> want_kw = {
        {"content", {2, 2 * one}},
        {"pcre", {1, rec.udp}},
        {"itype", {2, 2 * (rec.icmpv4 + rec.icmpv6)}},
        {"flags", {1, rec.tcp}},
        {"ip_proto", {1, inspected_ip()}},
    };
    EXPECT_EQ(by_kw, want_kw);

    std::map<std::string, std::pair<uint64_t, uint64_t>> by_fp;
    for (const auto& g : j["by_fast_pattern"]) {
        by_fp[g["fast_pattern"]] = {g["rules"].get<uint64_t>(), g["checks"].get<uint64_t>()};
    }
    const std::map<std::string, std::pair<uint64_t, uint64_t>> want_fp = {
        {"pkt_data:\"ATK-one-xyz\"", {2, 2 * one}},
        {"none", {5, rec.udp + 2 * (rec.icmpv4 + rec.icmpv6) + rec.tcp + inspected_ip()}},
    };
    EXPECT_EQ(by_fp, want_fp);
}

TEST_F(RuleProfileTest, TableListsTheTopRules) {
    Engine e(config("counts.rules", "table", 1, {"profiling.rules.enabled=yes"}));
    ASSERT_EQ(e.run().exit_code, 0);
    const RuleProfile p = e.rule_profile();
    const std::string t = p.format_table(3);
    std::vector<std::string> lines;
    std::stringstream ss(t);
    for (std::string l; std::getline(ss, l);) {
        lines.push_back(l);
    }
    // Header (2 lines), "top 3" + column line + 3 rows, keywords (title, columns, 5 rows),
    // fast patterns (title, columns, 2 rows).
    ASSERT_EQ(lines.size(), 2u + 5u + 7u + 4u);
    EXPECT_EQ(lines[0].rfind("rule profiling: 7 rules, 1 worker array over 1 generation, "
                             "mpm-algo hs, ",
                             0),
              0u);
    EXPECT_EQ(lines[2], "top 3 rules by ticks:");
    EXPECT_EQ(lines[3],
              "   num        sid  gid  rev       checks    matches          ticks           us "
              " avg ticks  worst ticks  keywords                 fast pattern");
    // Rows in the order of rules(): the costliest first.
    for (size_t i = 0; i < 3; ++i) {
        std::istringstream row(lines[4 + i]);
        uint64_t num = 0, sid = 0, gid = 0, rev = 0, checks = 0, matches = 0, ticks = 0;
        row >> num >> sid >> gid >> rev >> checks >> matches >> ticks;
        const RuleProfileEntry& en = p.rules()[i];
        EXPECT_EQ(num, i + 1);
        EXPECT_EQ(sid, en.sid);
        EXPECT_EQ(gid, en.gid);
        EXPECT_EQ(rev, en.rev);
        EXPECT_EQ(checks, en.checks);
        EXPECT_EQ(matches, en.matches);
        EXPECT_EQ(ticks, en.ticks);
    }
    EXPECT_EQ(lines[7], "by keyword (a rule counts under each of its keywords):");
    EXPECT_EQ(lines[14], "top 2 fast patterns by ticks:");
}

// Alerts of one run, as fast.log wrote them. One worker: thresholds see packets in file order.
// The alert queue is large enough for every alert of the file (a full queue drops alerts,
// depending on how fast the output thread drains it, which would make runs differ).
std::string run_alerts(SensorConfig sc) {
    sc.alert_queue_bytes = 512ULL << 20;
    {
        Engine e(sc);
        const engine::RunResult r = e.run();
        EXPECT_EQ(r.exit_code, 0);
        EXPECT_EQ(r.stats.get("detect.alert_queue_overflow"), 0u);
    }
    std::ifstream in(sc.log_dir + "/fast.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Alerts per sid in a fast.log ("... [**] [gid:sid:rev] msg [**] ...").
std::map<uint32_t, uint64_t> alerts_by_sid(const std::string& fast_log) {
    std::map<uint32_t, uint64_t> n;
    std::istringstream in(fast_log);
    for (std::string line; std::getline(in, line);) {
        const size_t at = line.find("[**] [");
        EXPECT_NE(at, std::string::npos) << line;
        if (at == std::string::npos) {
            continue;
        }
        unsigned gid = 0, sid = 0, rev = 0;
        EXPECT_EQ(std::sscanf(line.c_str() + at, "[**] [%u:%u:%u]", &gid, &sid, &rev), 3) << line;
        ++n[sid];
    }
    return n;
}

TEST_F(RuleProfileTest, SameAlertsWithAndWithoutProfilingAndPrefilter) {
    // The counting rules first: their alerts per sid follow from the generator's record and
    // the rule text alone, and must come out the same in all four modes.
    //   101 content:"ATK-one-xyz": each injected copy sits whole in one TCP segment, and
    //       nothing else carries the string (GeneratedTrafficIsWhatTheExpectationsAssume);
    //   102 udp pcre:"/./s": every UDP datagram (all DNS, never empty), a fragmented one once;
    //   107 ip_proto:17: the same datagrams;
    //   103 itype:8 / 104 itype:0: ICMPv4 echo comes in request/reply pairs (ICMPv6 echo is
    //       128/129, so neither rule matches it);
    //   105: its second content never occurs;
    //   106 flags:S (exactly SYN): one handshake SYN per TCP session (HTTP and TLS).
    const auto& rec = *record_;
    const std::map<uint32_t, uint64_t> want_counts = {
        {101, attacks_of(kOne)},
        {102, rec.udp},
        {103, rec.icmpv4 / 2},
        {104, rec.icmpv4 / 2},
        {106, rec.sessions.http + rec.sessions.tls},
        {107, rec.udp},
    };
    const std::vector<std::vector<std::string>> modes = {
        {},
        {"profiling.rules.enabled=yes"},
        {"detect.mpm-algo=none"},
        {"detect.mpm-algo=none", "profiling.rules.enabled=yes"},
    };
    std::string counts_base;
    for (size_t m = 0; m < modes.size(); ++m) {
        const std::string out =
            run_alerts(config("counts.rules", "counts-mode" + std::to_string(m), 1, modes[m]));
        EXPECT_EQ(alerts_by_sid(out), want_counts) << "mode " << m;
        if (m == 0) {
            counts_base = out;
        } else {
            EXPECT_EQ(out, counts_base) << "mode " << m;
        }
    }

    // The mixed rules: the same alerts whether profiling is on or off and with the prefilter
    // or without it. Their exact counts do not follow from the record (the pass rule passes
    // every flow that carries "application/json" before the attack, thresholds and
    // detection_filter count per source address, $HOME_NET splits clients by address), so
    // this part is a differential check only; the counting rules above pin the absolute
    // values.
    const std::string base = run_alerts(config("mixed.rules", "mixed-hs", 1, {}));
    const std::string hs_prof =
        run_alerts(config("mixed.rules", "mixed-hs-prof", 1, {"profiling.rules.enabled=yes"}));
    const std::string none =
        run_alerts(config("mixed.rules", "mixed-none", 1, {"detect.mpm-algo=none"}));
    const std::string none_prof =
        run_alerts(config("mixed.rules", "mixed-none-prof", 1,
                          {"detect.mpm-algo=none", "profiling.rules.enabled=yes"}));
    EXPECT_EQ(hs_prof, base);
    EXPECT_EQ(none, base);
    EXPECT_EQ(none_prof, base);
    // Not vacuous: the attack strings alert (one line per injected attack, the drop rule too).
    const uint64_t one = attacks_of(kOne);
    const uint64_t lines = static_cast<uint64_t>(std::count(base.begin(), base.end(), '\n'));
    EXPECT_GE(lines, 2 * one + attacks_of("ATK two"));
}

// ET Open rules that are, option for option, a Snort 3 community rule (ET's "GPL" rules carry
// the Snort sid + 2100000): the 14 enabled rules of emerging-icmp_info.rules, each
// `alert icmp $EXTERNAL_NET any -> $HOME_NET any (itype:8; content:"..."; depth:N;)` in both
// rulesets (contents and depths compared byte for byte). With HOME_NET and EXTERNAL_NET both
// `any`, as in the oracle's run, Snort 3's alert count on app-mix.pcap is the count Picket
// must give. Counts from oracles/snort3-community/alerts.tsv (Snort 3.12.2.0, see its
// README.md); a pair the file does not list had no alert. A separate scan of app-mix.pcap
// (ICMPv4 echo requests whose data after the 8-byte ICMP header holds the content within the
// depth) gives the same counts.
struct OraclePair {
    uint32_t et_sid;
    uint32_t snort_sid;
    uint64_t alerts;
};
constexpr OraclePair kIcmpInfoPairs[] = {
    {2100366, 366, 2}, {2100368, 368, 0}, {2100369, 369, 0},  {2100370, 370, 0}, {2100371, 371, 0},
    {2100373, 373, 0}, {2100374, 374, 0}, {2100376, 376, 0},  {2100377, 377, 0}, {2100378, 378, 0},
    {2100379, 379, 0}, {2100380, 380, 0}, {2100480, 480, 30}, {2100482, 482, 0},
};

// The whole ET Open ruleset over the shared app-mix.pcap (248 alerts), when both are present
// next to the repository: the ~3,550 packet-level rules, every one verified on every packet of
// its group without the prefilter, must give the alerts of the prefilter run. Differential
// only: no Suricata run of ET Open on these pcaps is stored; the rules that have a Snort 3 twin
// are checked against the oracle's counts in the next test. About 20 s (a few minutes under
// the sanitizers).
TEST_F(RuleProfileTest, EtOpenSameAlertsWithoutPrefilter) {
    const fs::path data(PICKET_SHARED_DATA_DIR);
    const fs::path et = data / "rules" / "et-open";
    const fs::path pcap = data / "pcaps" / "app-mix.pcap";
    if (!fs::is_directory(et) || !fs::is_regular_file(pcap)) {
        GTEST_SKIP() << et << " or " << pcap << " not present";
    }
    std::vector<std::string> files;
    for (const auto& f : fs::directory_iterator(et)) {
        if (f.path().extension() == ".rules") {
            files.push_back(f.path().string());
        }
    }
    std::sort(files.begin(), files.end());
    auto with_et = [&](SensorConfig sc) {
        sc.pcap_paths = {pcap.string()};
        sc.detect.rule_files = files;
        sc.detect.classification_file = (et / "classification.config").string();
        return sc;
    };
    const std::string hs = run_alerts(with_et(config("mixed.rules", "et-hs", 1, {})));
    const std::string none =
        run_alerts(with_et(config("mixed.rules", "et-none", 1, {"detect.mpm-algo=none"})));
    EXPECT_EQ(none, hs);
    EXPECT_GT(std::count(hs.begin(), hs.end(), '\n'), 100);
}

// The ET rules that have a Snort 3 twin (kIcmpInfoPairs, emerging-icmp_info.rules) over
// app-mix.pcap with HOME_NET and EXTERNAL_NET both `any`, as in the oracle's run: with the
// prefilter and without, each gives the Snort 3 oracle's count. Only that file is loaded, so
// this stays fast under the sanitizers.
TEST_F(RuleProfileTest, EtIcmpInfoGivesTheSnort3OracleCounts) {
    const fs::path data(PICKET_SHARED_DATA_DIR);
    const fs::path et = data / "rules" / "et-open";
    const fs::path rules = et / "emerging-icmp_info.rules";
    const fs::path pcap = data / "pcaps" / "app-mix.pcap";
    const fs::path oracle = data / "oracles" / "snort3-community" / "alerts.tsv";
    if (!fs::is_regular_file(rules) || !fs::is_regular_file(pcap) || !fs::is_regular_file(oracle)) {
        GTEST_SKIP() << rules << ", " << pcap << " or " << oracle << " not present";
    }
    // The counts listed above are the oracle's.
    std::map<uint32_t, uint64_t> snort;
    {
        std::ifstream in(oracle);
        for (std::string line; std::getline(in, line);) {
            std::istringstream row(line);
            std::string file, gid_sid;
            uint64_t n = 0;
            if (row >> file >> gid_sid >> n && file == "app-mix.pcap" &&
                gid_sid.rfind("1:", 0) == 0) {
                snort[static_cast<uint32_t>(std::stoul(gid_sid.substr(2)))] = n;
            }
        }
    }
    ASSERT_FALSE(snort.empty()) << oracle << " lists nothing for app-mix.pcap";
    for (const auto& pair : kIcmpInfoPairs) {
        const auto it = snort.find(pair.snort_sid);
        EXPECT_EQ(it == snort.end() ? 0 : it->second, pair.alerts)
            << "snort sid " << pair.snort_sid;
    }
    auto with_icmp_info = [&](SensorConfig sc) {
        sc.pcap_paths = {pcap.string()};
        sc.detect.rule_files = {rules.string()};
        sc.detect.classification_file = (et / "classification.config").string();
        sc.detect.address_vars["HOME_NET"] = "any";  // the oracle's snort.lua values
        sc.detect.address_vars["EXTERNAL_NET"] = "any";
        return sc;
    };
    const std::string hs = run_alerts(with_icmp_info(config("mixed.rules", "icmp-hs", 1, {})));
    const std::string none =
        run_alerts(with_icmp_info(config("mixed.rules", "icmp-none", 1, {"detect.mpm-algo=none"})));
    EXPECT_EQ(none, hs);
    const std::map<uint32_t, uint64_t> got = alerts_by_sid(hs);
    for (const auto& pair : kIcmpInfoPairs) {
        const auto it = got.find(pair.et_sid);
        EXPECT_EQ(it == got.end() ? 0 : it->second, pair.alerts)
            << "ET sid " << pair.et_sid << " (Snort 3 sid " << pair.snort_sid << ")";
    }
}

TEST(RuleProfileFormat, FastPatternAndKeywordGroup) {
    EXPECT_EQ(format_fast_pattern(BufferId::kPacket, "GET /x", false), "pkt_data:\"GET /x\"");
    EXPECT_EQ(format_fast_pattern(BufferId::kPacket, std::string("a\r\n|\"b\0", 7), true),
              "pkt_data:\"a|0d 0a 7c 22|b|00|\" nocase");
    EXPECT_EQ(format_fast_pattern(BufferId::kHttpUri, ";\\", false), "http.uri:\"|3b 5c|\"");
    RuleProfileEntry e;
    EXPECT_EQ(keyword_group(e), "header-only");
    e.keywords = {"content", "flow", "pcre"};
    EXPECT_EQ(keyword_group(e), "content,flow,pcre");
}

TEST(RuleProfileLoad, PcreWithoutContentIsFlagged) {
    picket::testing::TempDir tmp("picket-pcre-flag");
    const fs::path dir = tmp.path();
    std::ofstream(dir / "p.rules")
        << "# comment\n"
           "alert tcp any any -> any any (msg:\"anchored\"; content:\"abc\"; pcre:\"/abc\\d/\"; "
           "sid:1;)\n"
           "alert tcp any any -> any any (msg:\"evil\"; pcre:\"/a.*b/\"; sid:2;)\n"
           "alert udp any any -> any any (msg:\"negated only\"; content:!\"x\"; pcre:\"/y/\"; "
           "sid:3;)\n"
           "alert tcp any any -> any any (msg:\"no pcre\"; dsize:>5; sid:4;)\n";
    DetectConfig dc;
    dc.rule_files = {(dir / "p.rules").string()};
    LoadSummary sum;
    DetectEngine::load(dc, nullptr, &sum);
    const std::string f = (dir / "p.rules").string();
    EXPECT_EQ(sum.pcre_without_content_rules, 2u);
    EXPECT_EQ(sum.warnings,
              (std::vector<std::string>{
                  f + ":3 sid 2: pcre without content anchor: every packet of its port group "
                      "runs the regex",
                  f + ":4 sid 3: pcre without content anchor: every packet of its port group "
                      "runs the regex"}));
    const std::string text = sum.to_string();
    EXPECT_NE(text.find("\n  2 rules run a pcre without a content anchor (warnings below)\n"),
              std::string::npos);
    EXPECT_NE(text.find("\nwarning: " + f + ":3 sid 2: pcre without content anchor"),
              std::string::npos);
}

TEST(RuleProfileLoad, SummaryNamesMpmNone) {
    LoadSummary s;
    s.mpm_algo = MpmAlgo::kNone;
    s.pcre_without_content_rules = 1;
    EXPECT_EQ(s.to_string(),
              "rule files: 0, rules seen: 0\n"
              "parse 0.0 ms, compile 0.0 ms, memory 0.0 MiB\n"
              "groups 0, hyperscan databases 0, rules without fast pattern 0\n"
              "  mpm-algo none: no prefilter, every rule of a group is checked on every packet\n"
              "  1 rule runs a pcre without a content anchor (warnings below)\n"
              "rules: 0 loaded, 0 skipped");
}

TEST(DetectSettings, ReadsKeysAndRejectsBadValues) {
    DetectConfig d;
    read_detect_settings(Config(), &d);
    EXPECT_EQ(d.mpm_algo, MpmAlgo::kHyperscan);
    EXPECT_FALSE(d.profiling.enabled);
    EXPECT_EQ(d.profiling.limit, 10u);
    EXPECT_EQ(d.profiling.filename, "rule_perf.json");

    Config c = Config::load_string(
        "detect: {mpm-algo: none}\n"
        "profiling: {rules: {enabled: yes, limit: 3, filename: perf.json}}\n",
        "s.yaml");
    read_detect_settings(c, &d);
    EXPECT_EQ(d.mpm_algo, MpmAlgo::kNone);
    EXPECT_TRUE(d.profiling.enabled);
    EXPECT_EQ(d.profiling.limit, 3u);
    EXPECT_EQ(d.profiling.filename, "perf.json");
    EXPECT_STREQ(mpm_algo_name(MpmAlgo::kNone), "none");
    EXPECT_STREQ(mpm_algo_name(MpmAlgo::kHyperscan), "hs");

    Config bad = Config::load_string("detect: {mpm-algo: ac}\n", "s.yaml");
    try {
        read_detect_settings(bad, &d);
        FAIL() << "no exception";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "s.yaml:1: detect.mpm-algo: expected one of hs, none, got 'ac'");
    }
}

TEST(DetectSettings, ActionOrder) {
    DetectConfig d;
    read_detect_settings(Config(), &d);
    EXPECT_EQ(d.action_order, (std::array<Action, 4>{Action::kPass, Action::kDrop, Action::kReject,
                                                     Action::kAlert}));
    read_detect_settings(
        Config::load_string("action-order: [drop, pass, reject, alert]\n", "s.yaml"), &d);
    EXPECT_EQ(d.action_order, (std::array<Action, 4>{Action::kDrop, Action::kPass, Action::kReject,
                                                     Action::kAlert}));
    for (const auto& [yaml, msg] : std::vector<std::pair<std::string, std::string>>{
             {"action-order: [drop, pass, alert]\n",
              "s.yaml: action-order: expected the four actions pass, drop, reject and alert, each "
              "once; got 3"},
             {"action-order: [drop, pass, alert, sdrop]\n",
              "s.yaml: action-order: unknown action 'sdrop' (expected pass, drop, reject or "
              "alert)"},
             {"action-order: [drop, pass, alert, drop]\n",
              "s.yaml: action-order: 'drop' given twice"},
         }) {
        DetectConfig e;
        try {
            read_detect_settings(Config::load_string(yaml, "s.yaml"), &e);
            ADD_FAILURE() << "no exception for " << yaml;
        } catch (const ConfigError& err) {
            EXPECT_EQ(std::string(err.what()), msg);
        }
    }
}

}  // namespace
}  // namespace picket::sensor::detect
