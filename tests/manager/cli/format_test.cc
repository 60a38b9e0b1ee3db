// picketctl output formatting from canned FleetAdmin responses: tables and JSON documents.
#include <gtest/gtest.h>

#include "manager/cli/picketctl.h"

namespace picket::manager::cli {
namespace {

namespace v1 = picket::v1;
using nlohmann::json;

// 2026-11-29T23:56:05Z
constexpr int64_t kT0 = 1795996565LL * 1000000000LL;

v1::ListSensorsResponse two_sensors() {
    v1::ListSensorsResponse r;
    v1::Sensor* a = r.add_sensors();
    a->set_name("s1");
    a->set_connected(true);
    a->set_host("h1");
    a->set_version("0.1.0");
    a->mutable_labels()->insert({"zone", "a"});
    (*a->mutable_labels())["site"] = "paris";
    a->mutable_bundle()->set_name("et-open");
    a->mutable_bundle()->set_version(42);
    a->set_last_seen(kT0);
    a->set_ips_mode(true);
    v1::Sensor* b = r.add_sensors();
    b->set_name("sensor-two");
    b->set_connected(false);
    return r;
}

v1::Deployment canned_deployment() {
    v1::Deployment d;
    d.set_id("7");
    d.set_kind(v1::DEPLOYMENT_KIND_DEPLOY);
    d.set_version(42);
    d.set_selector("all");
    d.set_state(v1::DEPLOYMENT_STATE_FAILED);
    d.set_created_at(kT0);
    v1::DeploymentTarget* t1 = d.add_targets();
    t1->set_sensor("s1");
    t1->set_state(v1::TARGET_STATE_APPLIED);
    t1->set_version(42);
    t1->set_previous_version(41);
    t1->set_rules_loaded(100);
    t1->set_rules_skipped(2);
    t1->set_compile_ms(35);
    v1::DeploymentTarget* t2 = d.add_targets();
    t2->set_sensor("s2");
    t2->set_state(v1::TARGET_STATE_REJECTED);
    t2->set_version(42);
    t2->set_error("rules/a.rules:3: sid 5: bad content\nsecond line");
    return d;
}

TEST(RenderTable, AlignsColumnsAndTrimsTrailingSpace) {
    EXPECT_EQ(render_table({"A", "LONGER", "C"}, {{"xyz", "1", ""}, {"q", "22222222", "z"}}),
              "A    LONGER    C\n"
              "xyz  1\n"
              "q    22222222  z\n");
}

TEST(RenderTable, PadsShortRows) {
    EXPECT_EQ(render_table({"A", "B"}, {{"x"}}), "A  B\nx\n");
}

TEST(FormatValues, TimeBytesAndRefs) {
    EXPECT_EQ(format_time(kT0), "2026-11-29T23:56:05Z");
    EXPECT_EQ(format_time(kT0 + 999999999), "2026-11-29T23:56:05Z");
    EXPECT_EQ(format_time(0), "-");
    EXPECT_EQ(format_bytes(1023), "1023 B");
    EXPECT_EQ(format_bytes(1536), "1.5 KiB");
    EXPECT_EQ(format_bytes(3ull << 30), "3.0 GiB");
    v1::BundleRef ref;
    EXPECT_EQ(format_bundle_ref(ref), "-");
    ref.set_name("dmz");
    ref.set_version(3);
    EXPECT_EQ(format_bundle_ref(ref), "dmz@3");
}

TEST(FormatValues, EnumNames) {
    EXPECT_EQ(target_state_name(v1::TARGET_STATE_TIMED_OUT), "timed_out");
    EXPECT_EQ(target_state_name(v1::TARGET_STATE_CANCELLED), "cancelled");
    EXPECT_EQ(deployment_state_name(v1::DEPLOYMENT_STATE_ROLLED_BACK), "rolled_back");
    EXPECT_EQ(deployment_kind_name(v1::DEPLOYMENT_KIND_AUTO_ROLLBACK), "auto_rollback");
    EXPECT_EQ(capture_mode_name(v1::CAPTURE_MODE_AF_PACKET), "af_packet");
    EXPECT_EQ(change_kind_name(v1::CHANGE_KIND_CHANGED), "changed");
    EXPECT_EQ(alert_action_name(v1::ALERT_ACTION_BLOCKED), "blocked");
    EXPECT_EQ(alert_action_name(v1::ALERT_ACTION_UNSPECIFIED), "unspecified");
}

TEST(Sensors, Table) {
    EXPECT_EQ(sensors_text(two_sensors()),
              "NAME        CONNECTED  BUNDLE      MODE  HOST  LABELS             LAST SEEN\n"
              "s1          yes        et-open@42  ips   h1    site=paris,zone=a  "
              "2026-11-29T23:56:05Z\n"
              "sensor-two  no         -           ids   -     -                  -\n");
}

TEST(Sensors, JsonHasTheScriptedNames) {
    json doc = sensors_json(two_sensors());
    ASSERT_EQ(doc.size(), 2u);
    EXPECT_EQ(doc[0]["name"], "s1");
    EXPECT_EQ(doc[0]["connected"], true);
    EXPECT_EQ(doc[0]["version"], 42);
    EXPECT_EQ(doc[0]["labels"], (json{{"site", "paris"}, {"zone", "a"}}));
    EXPECT_EQ(doc[0]["sensor_version"], "0.1.0");
    EXPECT_EQ(doc[0]["last_seen"], "2026-11-29T23:56:05Z");
    EXPECT_EQ(doc[1]["name"], "sensor-two");
    EXPECT_EQ(doc[1]["connected"], false);
    EXPECT_EQ(doc[1]["version"], 0);
    EXPECT_EQ(doc[1]["labels"], json::object());
    EXPECT_EQ(doc[1]["last_seen"], nullptr);
}

TEST(Sensors, EmptyListIsAnEmptyArrayAndAHeader) {
    v1::ListSensorsResponse none;
    EXPECT_EQ(sensors_json(none), json::array());
    EXPECT_EQ(sensors_text(none), "NAME  CONNECTED  BUNDLE  MODE  HOST  LABELS  LAST SEEN\n");
}

TEST(Sensor, ShowListsCountersSorted) {
    v1::GetSensorResponse r;
    *r.mutable_sensor() = two_sensors().sensors(0);
    (*r.mutable_counters())["decoder.pkts"] = 10;
    (*r.mutable_counters())["capture.kernel_drops"] = 1;
    r.set_counters_timestamp(kT0);
    std::string text = sensor_text(r);
    EXPECT_NE(text.find("name:            s1\n"), std::string::npos) << text;
    EXPECT_NE(text.find("COUNTER               VALUE\n"
                        "capture.kernel_drops  1\n"
                        "decoder.pkts          10\n"),
              std::string::npos)
        << text;
    json doc = sensor_json(r);
    EXPECT_EQ(doc["counters"], (json{{"capture.kernel_drops", 1}, {"decoder.pkts", 10}}));
}

TEST(Push, TextAndJson) {
    v1::PushBundleResponse r;
    r.set_version(42);
    r.set_sha256("0123456789abcdef0123");
    v1::Manifest m;
    m.set_name("et-open");
    m.add_files()->set_path("rules/a.rules");
    EXPECT_EQ(push_text(r, m), "pushed et-open as version 42 (1 files, sha256 0123456789ab)\n");
    json doc = push_json(r, m);
    EXPECT_EQ(doc["version"], 42);
    EXPECT_EQ(doc["sha256"], "0123456789abcdef0123");
    EXPECT_EQ(doc["name"], "et-open");
}

TEST(Bundles, ListTable) {
    v1::ListBundlesResponse r;
    v1::BundleSummary* s = r.add_bundles();
    s->mutable_manifest()->set_name("et-open");
    s->mutable_manifest()->set_version(2);
    s->mutable_manifest()->set_author("ops");
    s->mutable_manifest()->set_message("update\nmore");
    s->set_sha256("aaaaaaaaaaaaaaaa");
    s->set_rule_files(3);
    s->set_total_bytes(2048);
    s->set_pushed_at(kT0);
    EXPECT_EQ(bundles_text(r),
              "VERSION  NAME     SHA256        SIGNED  RULE FILES  SIZE     PUSHED                "
              "AUTHOR  MESSAGE\n"
              "2        et-open  aaaaaaaaaaaa  no      3           2.0 KiB  2026-11-29T23:56:05Z  "
              "ops     update ...\n");
    json doc = bundles_json(r);
    EXPECT_EQ(doc[0]["version"], 2);
    EXPECT_EQ(doc[0]["manifest"]["message"], "update\nmore");
}

TEST(Bundles, Diff) {
    v1::BundleDiff d;
    d.set_from_version(1);
    d.set_to_version(2);
    v1::RuleDiff* added = d.add_rules_added();
    added->set_gid(1);
    added->set_sid(100);
    added->set_file("rules/a.rules");
    added->set_new_text("alert ip any any -> any any (sid:100;)");
    added->set_new_enabled(true);
    v1::RuleDiff* changed = d.add_rules_changed();
    changed->set_gid(1);
    changed->set_sid(7);
    changed->set_file("rules/a.rules");
    changed->set_old_text("alert tcp any any -> any any (sid:7;)");
    changed->set_new_text("# alert tcp any any -> any any (sid:7;)");
    changed->set_old_enabled(true);
    changed->set_new_enabled(false);
    v1::ConfigChange* c = d.add_config_changes();
    c->set_file("config.yaml");
    c->set_key("vars.address-groups.HOME_NET");
    c->set_kind(v1::CHANGE_KIND_CHANGED);
    c->set_old_value("10.0.0.0/8");
    c->set_new_value("[10.0.0.0/8, 192.168.0.0/16]");
    EXPECT_EQ(diff_text(d),
              "bundle 1 -> 2: 1 rules added, 0 removed, 1 changed; 1 config changes; 0 files "
              "changed\n"
              "+ 1:100  rules/a.rules\n"
              "    alert ip any any -> any any (sid:100;)\n"
              "~ 1:7  rules/a.rules (disabled)\n"
              "  - alert tcp any any -> any any (sid:7;)\n"
              "  + # alert tcp any any -> any any (sid:7;)\n"
              "\n"
              "CONFIG   FILE         KEY                           OLD         NEW\n"
              "changed  config.yaml  vars.address-groups.HOME_NET  10.0.0.0/8  [10.0.0.0/8, "
              "192.168.0.0/16]\n");
    json doc = diff_json(d);
    EXPECT_EQ(doc["rules_added"][0]["sid"], 100);
    EXPECT_EQ(doc["rules_changed"][0]["new_enabled"], false);
    EXPECT_EQ(doc["rules_removed"], json::array());
    EXPECT_EQ(doc["config_changes"][0]["kind"], "changed");
}

TEST(Deployment, JsonHasTheScriptedNames) {
    json doc = deployment_json(canned_deployment());
    EXPECT_EQ(doc["deployment"], "7");
    EXPECT_EQ(doc["state"], "failed");
    ASSERT_EQ(doc["targets"].size(), 2u);
    EXPECT_EQ(doc["targets"][0]["sensor"], "s1");
    EXPECT_EQ(doc["targets"][0]["state"], "applied");
    EXPECT_EQ(doc["targets"][0]["version"], 42);
    EXPECT_EQ(doc["targets"][0]["error"], "");
    EXPECT_EQ(doc["targets"][1]["state"], "rejected");
    EXPECT_EQ(doc["targets"][1]["error"], "rules/a.rules:3: sid 5: bad content\nsecond line");
}

TEST(Deployment, Text) {
    EXPECT_EQ(deployment_text(canned_deployment()),
              "deployment:  7\n"
              "kind:        deploy\n"
              "version:     42\n"
              "selector:    all\n"
              "state:       failed\n"
              "created:     2026-11-29T23:56:05Z\n"
              "\n"
              "SENSOR  STATE     VERSION  PREVIOUS  CANARY  DETAIL\n"
              "s1      applied   42       41        no      100 rules, 2 skipped, 35 ms\n"
              "s2      rejected  42       -         no      rules/a.rules:3: sid 5: bad content "
              "...\n");
}

TEST(Deployment, FinalAndAllApplied) {
    v1::Deployment d = canned_deployment();
    EXPECT_TRUE(deployment_final(d));
    EXPECT_FALSE(deployment_all_applied(d));
    d.set_state(v1::DEPLOYMENT_STATE_IN_PROGRESS);
    d.mutable_targets(1)->set_state(v1::TARGET_STATE_SENT);
    EXPECT_FALSE(deployment_final(d));
    d.mutable_targets(1)->set_state(v1::TARGET_STATE_APPLIED);
    EXPECT_TRUE(deployment_final(d));
    EXPECT_TRUE(deployment_all_applied(d));
    EXPECT_FALSE(deployment_all_applied(v1::Deployment()));
}

TEST(History, TextAndJson) {
    v1::HistoryResponse r;
    v1::RunPeriod* run = r.add_runs();
    run->set_sensor("s1");
    run->mutable_bundle()->set_name("et-open");
    run->mutable_bundle()->set_version(42);
    run->set_started_at(kT0);
    run->set_packets(1000);
    run->set_drops(1);
    run->set_alerts(5);
    run->set_deployment_id("7");
    v1::Deployment* d = r.add_deployments();
    *d = canned_deployment();
    d->clear_targets();  // a fleet's history carries the manager's counts, not the targets
    d->mutable_target_counts()->set_total(2);
    d->mutable_target_counts()->set_applied(1);
    d->mutable_target_counts()->set_rejected(1);
    EXPECT_EQ(history_text(r),
              "Runs\n"
              "SENSOR  BUNDLE      STARTED               ENDED    PACKETS  DROPS  ALERTS  "
              "DEPLOYMENT\n"
              "s1      et-open@42  2026-11-29T23:56:05Z  running  1000     1      5       7\n"
              "\n"
              "Deployments\n"
              "ID  KIND    VERSION  SELECTOR  STATE   APPLIED  CREATED\n"
              "7   deploy  42       all       failed  1/2      2026-11-29T23:56:05Z\n");
    json doc = history_json(r);
    EXPECT_EQ(doc["runs"][0]["version"], 42);
    EXPECT_EQ(doc["runs"][0]["ended_at"], nullptr);
    EXPECT_EQ(doc["deployments"][0]["deployment"], "7");
    EXPECT_EQ(doc["deployments"][0]["target_counts"], (json{{"total", 2},
                                                            {"pending", 0},
                                                            {"sent", 0},
                                                            {"applied", 1},
                                                            {"rejected", 1},
                                                            {"timed_out", 0},
                                                            {"cancelled", 0}}));
    EXPECT_EQ(doc["deployments"][0]["targets"], json::array());
}

v1::ListAlertsResponse two_alerts() {
    v1::ListAlertsResponse r;
    v1::AlertEntry* e1 = r.add_alerts();
    e1->set_sensor("edge1");
    v1::Alert* a = e1->mutable_alert();
    a->set_timestamp(kT0 + 123456789);
    a->set_gid(1);
    a->set_sid(2100498);
    a->set_rev(7);
    a->set_msg("GPL ATTACK_RESPONSE id check returned root");
    a->set_src_ip("10.0.0.5");
    a->set_src_port(80);
    a->set_dst_ip("192.168.1.20");
    a->set_dst_port(51544);
    a->set_proto("TCP");
    a->set_action(v1::ALERT_ACTION_BLOCKED);
    a->set_severity(1);
    a->set_bundle_version(42);
    v1::AlertEntry* e2 = r.add_alerts();
    e2->set_sensor("s2");
    v1::Alert* b = e2->mutable_alert();
    b->set_timestamp(kT0 - 61'000'000'000);
    b->set_gid(1);
    b->set_sid(9000001);
    b->set_rev(1);
    b->set_msg("local ping");
    b->set_src_ip("2001:db8::1");
    b->set_dst_ip("2001:db8::2");
    b->set_proto("IPV6-ICMP");
    b->set_action(v1::ALERT_ACTION_ALLOWED);
    r.set_total_received(1234);
    r.set_dropped_by_sensors(5);
    return r;
}

TEST(Alerts, Table) {
    EXPECT_EQ(alerts_text(two_alerts()),
              "TIME                  SENSOR  SID:REV    ACTION   PROTO      SRC -> DST          "
              "               MSG\n"
              "2026-11-29T23:56:05Z  edge1   2100498:7  blocked  TCP        10.0.0.5:80 -> "
              "192.168.1.20:51544  GPL ATTACK_RESPONSE id check returned root\n"
              "2026-11-29T23:55:04Z  s2      9000001:1  allowed  IPV6-ICMP  2001:db8::1 -> "
              "2001:db8::2         local ping\n"
              "\n"
              "2 shown; 1234 received since the manager started, 5 dropped by sensors\n");
}

TEST(Alerts, PortsOfIpv6AreBracketed) {
    v1::ListAlertsResponse r;
    v1::AlertEntry* e = r.add_alerts();
    e->set_sensor("s1");
    e->mutable_alert()->set_sid(1);
    e->mutable_alert()->set_src_ip("2001:db8::1");
    e->mutable_alert()->set_src_port(443);
    e->mutable_alert()->set_dst_ip("2001:db8::2");
    e->mutable_alert()->set_dst_port(0);
    EXPECT_EQ(
        alerts_text(r),
        "TIME  SENSOR  SID:REV  ACTION       PROTO  SRC -> DST                            MSG\n"
        "-     s1      1:0      unspecified  -      [2001:db8::1]:443 -> [2001:db8::2]:0\n"
        "\n"
        "1 shown; 0 received since the manager started, 0 dropped by sensors\n");
}

TEST(Alerts, Json) {
    json doc = alerts_json(two_alerts());
    EXPECT_EQ(doc, (json{{"alerts",
                          {{{"sensor", "edge1"},
                            {"time", "2026-11-29T23:56:05Z"},
                            {"timestamp", kT0 + 123456789},
                            {"gid", 1},
                            {"sid", 2100498},
                            {"rev", 7},
                            {"msg", "GPL ATTACK_RESPONSE id check returned root"},
                            {"src_ip", "10.0.0.5"},
                            {"src_port", 80},
                            {"dst_ip", "192.168.1.20"},
                            {"dst_port", 51544},
                            {"proto", "TCP"},
                            {"action", "blocked"},
                            {"severity", 1},
                            {"bundle_version", 42}},
                           {{"sensor", "s2"},
                            {"time", "2026-11-29T23:55:04Z"},
                            {"timestamp", kT0 - 61'000'000'000},
                            {"gid", 1},
                            {"sid", 9000001},
                            {"rev", 1},
                            {"msg", "local ping"},
                            {"src_ip", "2001:db8::1"},
                            {"src_port", 0},
                            {"dst_ip", "2001:db8::2"},
                            {"dst_port", 0},
                            {"proto", "IPV6-ICMP"},
                            {"action", "allowed"},
                            {"severity", 0},
                            {"bundle_version", 0}}}},
                         {"total_received", 1234},
                         {"dropped_by_sensors", 5}}));
    v1::ListAlertsResponse none;
    EXPECT_EQ(alerts_json(none),
              (json{{"alerts", json::array()}, {"total_received", 0}, {"dropped_by_sensors", 0}}));
}

TEST(Loopback, Targets) {
    EXPECT_TRUE(is_loopback_target("127.0.0.1:50051"));
    EXPECT_TRUE(is_loopback_target("127.9.8.7:1"));
    EXPECT_TRUE(is_loopback_target("localhost:50051"));
    EXPECT_TRUE(is_loopback_target("LOCALHOST:1"));
    EXPECT_TRUE(is_loopback_target("[::1]:50051"));
    EXPECT_TRUE(is_loopback_target("::1"));
    EXPECT_TRUE(is_loopback_target("[::ffff:127.0.0.1]:5"));
    EXPECT_TRUE(is_loopback_target("dns:///localhost:50051"));
    EXPECT_TRUE(is_loopback_target("ipv4:127.0.0.1:1,127.0.0.2:1"));
    EXPECT_TRUE(is_loopback_target("unix:/run/picket.sock"));
    EXPECT_FALSE(is_loopback_target("10.0.0.1:50051"));
    EXPECT_FALSE(is_loopback_target("128.0.0.1:50051"));
    EXPECT_FALSE(is_loopback_target("[2001:db8::1]:50051"));
    EXPECT_FALSE(is_loopback_target("manager.example.com:50051"));
    EXPECT_FALSE(is_loopback_target("localhost.example.com:1"));
    EXPECT_FALSE(is_loopback_target("ipv4:127.0.0.1:1,10.0.0.1:1"));
    EXPECT_FALSE(is_loopback_target("[::1:50051"));
    EXPECT_FALSE(is_loopback_target(""));
    EXPECT_FALSE(is_loopback_target("0.0.0.0:1"));
}

TEST(StatusText, CodeNameAndMessage) {
    EXPECT_EQ(status_text(absl::NotFoundError("bundle version 7 not found")),
              "NOT_FOUND: bundle version 7 not found");
    EXPECT_EQ(status_text(to_absl(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "x"))),
              "FAILED_PRECONDITION: x");
    EXPECT_TRUE(to_absl(grpc::Status::OK).ok());
}

v1::RuleDiff rule_diff(uint32_t sid, const std::string& old_text, const std::string& new_text,
                       bool old_enabled = true, bool new_enabled = true) {
    v1::RuleDiff d;
    d.set_gid(1);
    d.set_sid(sid);
    d.set_file("rules/et/e.rules");
    d.set_old_text(old_text);
    d.set_new_text(new_text);
    d.set_old_enabled(old_enabled);
    d.set_new_enabled(new_enabled);
    return d;
}

TEST(RulesUpdate, ChangesAreNamedAsOperatorsDo) {
    const std::string a = "alert tcp any any -> any 80 (msg:\"x\"; sid:1; rev:1;)";
    const std::string drop = "drop tcp any any -> any 80 (msg:\"x\"; sid:1; rev:1;)";
    const std::string b = "alert tcp any any -> any 80 (msg:\"y\"; sid:1; rev:2;)";
    EXPECT_EQ(rule_change_kind(rule_diff(1, "", a), true, false), "added");
    EXPECT_EQ(rule_change_kind(rule_diff(1, a, ""), false, true), "removed");
    EXPECT_EQ(rule_change_kind(rule_diff(1, a, "# " + a, true, false), false, false), "disabled");
    EXPECT_EQ(rule_change_kind(rule_diff(1, "# " + a, a, false, true), false, false), "enabled");
    EXPECT_EQ(rule_change_kind(rule_diff(1, a, drop), false, false), "action");
    EXPECT_EQ(rule_change_kind(rule_diff(1, a, b), false, false), "modified");

    v1::UpdateRulesResponse r;
    r.set_version(7);
    r.set_message("version 7 from et@3f2a9c1b7d4e");
    r.set_rules(4);
    r.set_rules_enabled(3);
    r.add_warnings("disable.conf:2: 99 matched no rule");
    r.mutable_diff()->set_from_version(6);
    r.mutable_diff()->set_to_version(7);
    *r.mutable_diff()->add_rules_added() = rule_diff(5, "", a);
    *r.mutable_diff()->add_rules_changed() = rule_diff(1, a, drop);
    *r.mutable_diff()->add_rules_changed() = rule_diff(2, a, "# " + a, true, false);
    json j = rules_update_json(r);
    EXPECT_EQ(j["version"], 7);
    EXPECT_EQ(j["changes"], (json{{"added", 1},
                                  {"removed", 0},
                                  {"modified", 0},
                                  {"enabled", 0},
                                  {"disabled", 1},
                                  {"action", 1}}));
    EXPECT_EQ(j["diff"][1]["change"], "action");
    std::string text = rules_update_text(r);
    EXPECT_NE(text.find("changes: 1 added, 0 removed, 0 modified, 0 enabled, 1 disabled, 1 "
                        "action changed\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("warning: disable.conf:2: 99 matched no rule\n"), std::string::npos);

    v1::UpdateRulesResponse none;
    none.set_message("no change: version 7 already holds et@3f2a9c1b7d4e");
    EXPECT_TRUE(rules_update_json(none)["version"].is_null());
    EXPECT_EQ(rules_update_text(none).find("changes:"), std::string::npos);
}

}  // namespace
}  // namespace picket::manager::cli
