// The EVE stats record against Suricata's schema: conform_stats on a stats event built from
// the counters a real run exports (picket-sensor -r http-mix.pcap with ET Open rules, plus the
// IPS, inline-capture, threshold and ACL counters such a run adds), then the result checked
// key by key and validated with python3-jsonschema against the shared schema file.
#include "sensor/output/stats_event.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sensor/output/output.h"

namespace picket::sensor::output {
namespace {

namespace fs = std::filesystem;

const fs::path kSchema = fs::path(PICKET_SHARED_DATA_DIR) / "eve-schema" / "schema.json";

// Counter names and values of the last stats record of a real run (see the file comment).
const std::vector<std::pair<const char*, uint64_t>> kRealCounters = {
    {"app_layer.dns.events.compression_loop", 0},
    {"app_layer.dns.events.flooded", 0},
    {"app_layer.dns.events.invalid_opcode", 0},
    {"app_layer.dns.events.invalid_pointer", 0},
    {"app_layer.dns.events.label_too_long", 0},
    {"app_layer.dns.events.malformed_data", 0},
    {"app_layer.dns.events.name_too_long", 0},
    {"app_layer.dns.events.not_a_request", 0},
    {"app_layer.dns.events.not_a_response", 0},
    {"app_layer.dns.events.truncated", 0},
    {"app_layer.dns.events.z_flag_set", 0},
    {"app_layer.dns.queries", 144},
    {"app_layer.dns.responses", 18},
    {"app_layer.flow.dns_tcp", 0},
    {"app_layer.flow.dns_udp", 76},
    {"app_layer.flow.failed_tcp", 3},
    {"app_layer.flow.failed_udp", 48},
    {"app_layer.flow.http", 203},
    {"app_layer.flow.tls", 13},
    {"app_layer.http.events.abandoned", 14},
    {"app_layer.http.events.chunk_size_too_long", 0},
    {"app_layer.http.events.chunked_and_content_length", 0},
    {"app_layer.http.events.decompression_bomb", 0},
    {"app_layer.http.events.decompression_error", 0},
    {"app_layer.http.events.directory_traversal", 0},
    {"app_layer.http.events.double_encoding", 0},
    {"app_layer.http.events.gap", 4},
    {"app_layer.http.events.header_too_long", 0},
    {"app_layer.http.events.invalid_chunk_size", 0},
    {"app_layer.http.events.invalid_content_length", 0},
    {"app_layer.http.events.invalid_header_name", 0},
    {"app_layer.http.events.invalid_percent_encoding", 2},
    {"app_layer.http.events.invalid_request_line", 14},
    {"app_layer.http.events.invalid_status_line", 7},
    {"app_layer.http.events.line_too_long", 0},
    {"app_layer.http.events.missing_colon", 1},
    {"app_layer.http.events.missing_crlf", 22},
    {"app_layer.http.events.missing_host", 1},
    {"app_layer.http.events.nul_byte", 0},
    {"app_layer.http.events.oversize_dir_length", 0},
    {"app_layer.http.events.too_many_transactions", 0},
    {"app_layer.http.events.u_encoding", 0},
    {"app_layer.http.events.u_encoding_non_ascii", 0},
    {"app_layer.http.events.unknown_method", 4},
    {"app_layer.http.events.unmatched_response", 32},
    {"app_layer.http.flows_abandoned", 14},
    {"app_layer.http.memuse", 0},
    {"app_layer.http.transactions", 304},
    {"app_layer.memcap_drop", 0},
    {"app_layer.memcap_evicted", 0},
    {"app_layer.memuse", 0},
    {"app_layer.tls.certificates", 7},
    {"app_layer.tls.client_hellos", 13},
    {"app_layer.tls.events.certificate_too_long", 0},
    {"app_layer.tls.events.handshake_too_long", 0},
    {"app_layer.tls.events.invalid_certificate", 0},
    {"app_layer.tls.events.invalid_handshake_message", 0},
    {"app_layer.tls.events.invalid_record_length", 0},
    {"app_layer.tls.events.invalid_record_type", 0},
    {"app_layer.tls.events.invalid_record_version", 0},
    {"app_layer.tls.events.invalid_sni", 0},
    {"app_layer.tls.events.multiple_sni", 0},
    {"app_layer.tls.events.record_overflow", 0},
    {"app_layer.tls.events.sslv2_client_hello", 0},
    {"app_layer.tls.events.truncated_message", 1},
    {"app_layer.tls.server_hellos", 12},
    {"app_layer.tx.dns_tcp", 0},
    {"app_layer.tx.dns_udp", 144},
    {"app_layer.tx.tls", 13},
    {"capture.bpf_filtered", 0},
    {"capture.inline.accepted", 12000},
    {"capture.inline.dropped", 326},
    {"capture.inline.injected", 2},
    {"capture.inline.tx_errors", 0},
    {"capture.kernel_drops", 0},
    {"capture.kernel_packets", 12326},
    {"capture.queue_drops", 0},
    {"decoder.arp", 0},
    {"decoder.avg_pkt_size", 779},
    {"decoder.bytes", 9609969},
    {"decoder.checksum_validation_disabled", 0},
    {"decoder.ethernet", 12326},
    {"decoder.event.arp.pkt_too_small", 0},
    {"decoder.event.ethernet.pkt_too_small", 0},
    {"decoder.event.icmpv4.checksum_invalid", 0},
    {"decoder.event.icmpv4.pkt_too_small", 0},
    {"decoder.event.icmpv4.unknown_code", 0},
    {"decoder.event.icmpv4.unknown_type", 0},
    {"decoder.event.icmpv6.checksum_invalid", 0},
    {"decoder.event.icmpv6.pkt_too_small", 0},
    {"decoder.event.icmpv6.unknown_code", 0},
    {"decoder.event.icmpv6.unknown_type", 0},
    {"decoder.event.ipv4.checksum_invalid", 24},
    {"decoder.event.ipv4.frag_pkt_too_large", 0},
    {"decoder.event.ipv4.hlen_too_small", 0},
    {"decoder.event.ipv4.iplen_smaller_than_hlen", 0},
    {"decoder.event.ipv4.opt_duplicate", 0},
    {"decoder.event.ipv4.opt_invalid", 0},
    {"decoder.event.ipv4.opt_invalid_len", 0},
    {"decoder.event.ipv4.opt_malformed", 0},
    {"decoder.event.ipv4.opt_unknown", 0},
    {"decoder.event.ipv4.pkt_too_small", 0},
    {"decoder.event.ipv4.trunc_pkt", 0},
    {"decoder.event.ipv4.wrong_ip_version", 0},
    {"decoder.event.ipv6.exthdr_dupl_fh", 0},
    {"decoder.event.ipv6.exthdr_dupl_hh", 0},
    {"decoder.event.ipv6.frag_invalid_length", 0},
    {"decoder.event.ipv6.frag_pkt_too_large", 0},
    {"decoder.event.ipv6.hopopts_not_first", 0},
    {"decoder.event.ipv6.pkt_too_small", 0},
    {"decoder.event.ipv6.trunc_exthdr", 0},
    {"decoder.event.ipv6.trunc_pkt", 0},
    {"decoder.event.ipv6.wrong_ip_version", 0},
    {"decoder.event.ipv6.zero_len_padn", 0},
    {"decoder.event.link.unsupported_type", 0},
    {"decoder.event.null.pkt_too_small", 0},
    {"decoder.event.null.unsupported_type", 0},
    {"decoder.event.sll.pkt_too_small", 0},
    {"decoder.event.tcp.checksum_invalid", 1807},
    {"decoder.event.tcp.hlen_too_small", 0},
    {"decoder.event.tcp.invalid_optlen", 0},
    {"decoder.event.tcp.opt_duplicate", 0},
    {"decoder.event.tcp.opt_invalid_len", 0},
    {"decoder.event.tcp.pkt_too_small", 0},
    {"decoder.event.udp.checksum_invalid", 36},
    {"decoder.event.udp.hlen_invalid", 0},
    {"decoder.event.udp.hlen_too_small", 0},
    {"decoder.event.udp.len_invalid", 0},
    {"decoder.event.udp.pkt_too_small", 0},
    {"decoder.event.vlan.header_too_small", 0},
    {"decoder.event.vlan.too_many_layers", 0},
    {"decoder.icmpv4", 0},
    {"decoder.icmpv6", 0},
    {"decoder.invalid", 0},
    {"decoder.ipv4", 12067},
    {"decoder.ipv4_frag", 0},
    {"decoder.ipv6", 259},
    {"decoder.ipv6_frag", 0},
    {"decoder.max_pkt_size", 37506},
    {"decoder.null", 0},
    {"decoder.other_l3", 0},
    {"decoder.other_l4", 0},
    {"decoder.pkts", 12326},
    {"decoder.raw", 0},
    {"decoder.sll", 0},
    {"decoder.tcp", 11869},
    {"decoder.udp", 457},
    {"decoder.vlan", 0},
    {"decoder.vlan_qinq", 0},
    {"defrag.evicted", 0},
    {"defrag.invalid", 0},
    {"defrag.ipv4.fragments", 0},
    {"defrag.ipv4.reassembled", 0},
    {"defrag.ipv6.fragments", 0},
    {"defrag.ipv6.reassembled", 0},
    {"defrag.max_frag_hits", 0},
    {"defrag.max_trackers_reached", 0},
    {"defrag.memcap_drops", 0},
    {"defrag.memuse", 0},
    {"defrag.overlaps", 0},
    {"defrag.timeouts", 0},
    {"defrag.trackers", 0},
    {"detect.alert", 9},
    {"detect.alert_queue_overflow", 0},
    {"detect.alerts_suppressed", 0},
    {"detect.last_reload_unix_ms", 1796219870143},
    {"detect.last_reload_us", 602792},
    {"detect.prefilter_candidates", 7942},
    {"detect.reload_failures", 0},
    {"detect.reloads", 0},
    {"detect.rules_evaluated", 5080},
    {"detect.rules_failed", 3},
    {"detect.rules_loaded", 5910},
    {"detect.threshold.entries", 4},
    {"detect.threshold.evictions", 0},
    {"engine.max_batch_us", 8277},
    {"filter.acl.bypass", 0},
    {"filter.acl.drop", 1},
    {"filter.acl.nomatch", 12318},
    {"filter.acl.pass", 7},
    {"filter.acl.rules", 3},
    {"flow.active", 2},
    {"flow.emerg_mode_entered", 0},
    {"flow.evicted", 0},
    {"flow.icmpv4", 0},
    {"flow.icmpv6", 0},
    {"flow.memcap_drops", 0},
    {"flow.memuse", 1048976},
    {"flow.other", 0},
    {"flow.tcp", 1137},
    {"flow.tcp_reuse", 0},
    {"flow.timed_out", 1259},
    {"flow.total", 1261},
    {"flow.udp", 124},
    {"ips.accepted", 12000},
    {"ips.blocked", 326},
    {"ips.drop_reason.decode_error", 1},
    {"ips.drop_reason.flow_drop", 5},
    {"ips.drop_reason.flow_memcap", 0},
    {"ips.drop_reason.rules", 320},
    {"ips.drop_reason.stream_memcap", 0},
    {"ips.rejected", 2},
    {"ips.responses.failed", 0},
    {"ips.responses.sent", 2},
    {"ips.verdict.drop", 324},
    {"ips.verdict.pass", 12000},
    {"ips.verdict.reject", 2},
    {"tcp.invalid_checksum", 0},
    {"tcp.memuse", 1200},
    {"tcp.midstream_pickups", 0},
    {"tcp.out_of_window", 102},
    {"tcp.overlap", 3},
    {"tcp.overlap_diff_data", 21},
    {"tcp.reassembly_depth_reached", 1},
    {"tcp.reassembly_gap", 6},
    {"tcp.reassembly_memcap_no_tail", 0},
    {"tcp.reassembly_memuse", 9216},
    {"tcp.retransmissions", 378},
    {"tcp.rst_invalid", 1},
    {"tcp.segment_memcap_drop", 0},
    {"tcp.sessions", 242},
    {"tcp.ssn_memcap_drop", 0},
    {"tcp.ssn_memcap_reclaimed", 0},
};

StatsSnapshot real_snapshot() {
    StatsSnapshot s;
    for (const auto& [name, value] : kRealCounters) {
        s.set(name, value);
    }
    return s;
}

// What Engine::write_stats_event builds: make_stats_event plus its detect additions.
nlohmann::json engine_stats_event() {
    Rates rates;
    rates.interval_sec = 0.104763548;
    rates.pkts_per_sec = 117655.4;
    rates.mbit_per_sec = 733.8;
    rates.workers.push_back({0, 6264, 4774015, 59791.8, 364.6});
    nlohmann::json ev = make_stats_event(1700000000000000000LL, 3, real_snapshot(), rates);
    ev["stats"]["detect"]["engines"] =
        nlohmann::json::array({{{"id", 0},
                                {"last_reload", "2023-11-14T22:13:17.000000+0000"},
                                {"rules_loaded", 5910},
                                {"rules_failed", 3}}});
    ev["stats"]["detect"]["last_reload_ms"] = 602.792;
    return ev;
}

std::string temp_path(const std::string& name) {
    return (fs::temp_directory_path() / (name + "." + std::to_string(::getpid()))).string();
}

// Runs python3 with a script and arguments; returns its exit status (77: jsonschema missing).
int run_python(const std::string& script, const std::vector<std::string>& args) {
    std::string py = temp_path("stats_schema_test.py");
    std::ofstream(py) << script;
    std::string cmd = "python3 " + py;
    for (const auto& a : args) {
        cmd += " '" + a + "'";
    }
    int rc = std::system(cmd.c_str());
    fs::remove(py);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

constexpr const char* kValidate = R"PY(
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(77)
schema = json.load(open(sys.argv[1]))
event = json.load(open(sys.argv[2]))
errors = list(jsonschema.Draft7Validator(schema).iter_errors(event))
for e in errors[:20]:
    print("schema error at %s: %s" % ("/".join(map(str, e.absolute_path)), e.message[:300]))
sys.exit(1 if errors else 0)
)PY";

// Lists the schema's integer stats leaves (every $ref resolved) and compares them with ours.
constexpr const char* kCompareTable = R"PY(
import json, sys
schema = json.load(open(sys.argv[1]))
ours = set(open(sys.argv[2]).read().split())
leaves = set()
def walk(node, path):
    if "$ref" in node:
        node = schema["$defs"][node["$ref"].split("/")[-1]]
    if node.get("type") == "object":
        for key, sub in node.get("properties", {}).items():
            walk(sub, path + [key])
    elif node.get("type") == "integer":
        leaves.add(".".join(path))
walk(schema["properties"]["stats"], [])
for name in sorted(leaves - ours):
    print("missing from kSchemaCounters:", name)
for name in sorted(ours - leaves):
    print("not in the schema:", name)
sys.exit(0 if leaves == ours else 1)
)PY";

TEST(StatsSchemaTest, RenamesSuricataCountersAndDropsTheRest) {
    nlohmann::json ev = engine_stats_event();
    conform_stats(ev["stats"]);
    const nlohmann::json& s = ev["stats"];
    EXPECT_EQ(ev["event_type"], "stats");
    EXPECT_EQ(s["uptime"], 3);
    // Same name in Picket and Suricata: kept as is.
    EXPECT_EQ(s["decoder"]["pkts"], 12326);
    EXPECT_EQ(s["decoder"]["event"]["ipv4"]["pkt_too_small"], 0);
    EXPECT_EQ(s["tcp"]["overlap_diff_data"], 21);
    EXPECT_EQ(s["app_layer"]["flow"], nlohmann::json({{"dns_tcp", 0},
                                                      {"dns_udp", 76},
                                                      {"failed_tcp", 3},
                                                      {"failed_udp", 48},
                                                      {"http", 203},
                                                      {"tls", 13}}));
    EXPECT_EQ(s["ips"], nlohmann::json::parse(R"({"accepted": 12000, "blocked": 326,
        "rejected": 2, "drop_reason": {"rules": 320, "flow_drop": 5, "decode_error": 1,
        "stream_memcap": 0, "flow_memcap": 0}})"));
    // Renamed onto Suricata's name for the same counter.
    EXPECT_EQ(s["app_layer"]["tx"],
              nlohmann::json({{"dns_tcp", 0}, {"dns_udp", 144}, {"http", 304}, {"tls", 13}}));
    EXPECT_EQ(s["http"], nlohmann::json({{"memuse", 0}}));
    EXPECT_EQ(s["flow"]["mgr"], nlohmann::json({{"flows_timeout", 1259}}));
    EXPECT_EQ(s["flow"]["get_used"], 0);
    EXPECT_EQ(s["flow"]["memcap"], 0);
    EXPECT_EQ(s["tcp"]["stream_depth_reached"], 1);
    EXPECT_EQ(s["decoder"]["unknown_ethertype"], 0);
    EXPECT_EQ(s["decoder"]["event"]["ltnull"],
              nlohmann::json({{"pkt_too_small", 0}, {"unsupported_type", 0}}));
    EXPECT_EQ(s["defrag"]["tracker_hard_reuse"], 0);
    // The engine's detect additions: engines kept, last_reload_ms and Picket counters gone.
    EXPECT_EQ(s["detect"], nlohmann::json::parse(R"({"alert": 9, "alert_queue_overflow": 0,
        "alerts_suppressed": 0, "engines": [{"id": 0, "last_reload":
        "2023-11-14T22:13:17.000000+0000", "rules_failed": 3, "rules_loaded": 5910}]})"));
    // No place in the schema.
    EXPECT_FALSE(s.contains("rates"));
    EXPECT_FALSE(s.contains("engine"));
    EXPECT_FALSE(s.contains("filter"));
    EXPECT_EQ(s["capture"], nlohmann::json({{"kernel_drops", 0}, {"kernel_packets", 12326}}));
    EXPECT_EQ(s["app_layer"].size(), 2u);
    EXPECT_FALSE(s["decoder"]["event"]["tcp"].contains("checksum_invalid"));
    EXPECT_FALSE(s["flow"].contains("timed_out"));
    EXPECT_FALSE(s["flow"].contains("evicted"));
}

TEST(StatsSchemaTest, Idempotent) {
    nlohmann::json ev = engine_stats_event();
    conform_stats(ev["stats"]);
    nlohmann::json again = ev["stats"];
    conform_stats(again);
    EXPECT_EQ(again, ev["stats"]);
}

TEST(StatsSchemaTest, SchemaNameWinsOverRenamedCounter) {
    StatsSnapshot snap;
    snap.set("flow.get_used", 7);
    snap.set("flow.evicted", 9);
    snap.set("a.b", 1);
    snap.set("a.b.c", 2);
    nlohmann::json s = nest_stats(snap);
    s["detect"]["engines"] = nlohmann::json::array();
    s["uptime"] = -1.5;
    conform_stats(s);
    EXPECT_EQ(s, nlohmann::json::parse(R"({"flow": {"get_used": 7}})"));
    nlohmann::json not_object = 5;
    conform_stats(not_object);
    EXPECT_EQ(not_object, nlohmann::json::object());
}

TEST(StatsSchemaTest, RenameTargetsAreSchemaCounters) {
    auto table = schema_stats_counters();
    EXPECT_TRUE(std::is_sorted(table.begin(), table.end()));
    EXPECT_EQ(table.size(), 1062u);
    const char* renamed[] = {"decoder.event.null.pkt_too_small",
                             "decoder.event.null.unsupported_type",
                             "decoder.other_l3",
                             "flow.memcap_drops",
                             "flow.evicted",
                             "flow.timed_out",
                             "defrag.evicted",
                             "tcp.reassembly_depth_reached",
                             "app_layer.http.transactions",
                             "app_layer.http.memuse"};
    for (const char* name : renamed) {
        std::string_view to = schema_stats_name(name);
        EXPECT_NE(to, name);
        EXPECT_TRUE(std::binary_search(table.begin(), table.end(), to)) << to;
    }
    EXPECT_EQ(schema_stats_name("decoder.pkts"), "decoder.pkts");
    EXPECT_EQ(schema_stats_name("flow.evicted"), "flow.get_used");
}

TEST(StatsSchemaTest, ValidatesAgainstSuricataSchema) {
    if (!fs::exists(kSchema)) {
        GTEST_SKIP() << kSchema << " absent";
    }
    nlohmann::json ev = engine_stats_event();
    conform_stats(ev["stats"]);
    std::string path = temp_path("stats_event.json");
    std::ofstream(path) << ev.dump();
    int rc = run_python(kValidate, {kSchema.string(), path});
    fs::remove(path);
    if (rc == 77) {
        GTEST_SKIP() << "python3-jsonschema not installed";
    }
    EXPECT_EQ(rc, 0) << ev.dump(2);

    // Before conform_stats the record is not valid (so the check above can fail).
    nlohmann::json raw = engine_stats_event();
    std::ofstream(path) << raw.dump();
    EXPECT_EQ(run_python(kValidate, {kSchema.string(), path}), 1);
    fs::remove(path);
}

TEST(StatsSchemaTest, EverySchemaCounterIsKeptAndValid) {
    if (!fs::exists(kSchema)) {
        GTEST_SKIP() << kSchema << " absent";
    }
    StatsSnapshot all;
    std::string names;
    for (std::string_view name : schema_stats_counters()) {
        all.set(name, 1);
        names += std::string(name) + "\n";
    }
    nlohmann::json s = nest_stats(all);
    conform_stats(s);
    EXPECT_EQ(s, nest_stats(all));
    nlohmann::json ev = {
        {"timestamp", "2023-11-14T22:13:20.000000+0000"}, {"event_type", "stats"}, {"stats", s}};
    std::string path = temp_path("stats_all.json");
    std::ofstream(path) << ev.dump();
    int rc = run_python(kValidate, {kSchema.string(), path});
    if (rc == 77) {
        fs::remove(path);
        GTEST_SKIP() << "python3-jsonschema not installed";
    }
    EXPECT_EQ(rc, 0);
    std::ofstream(path) << names;
    EXPECT_EQ(run_python(kCompareTable, {kSchema.string(), path}), 0);
    fs::remove(path);
}

}  // namespace
}  // namespace picket::sensor::output
