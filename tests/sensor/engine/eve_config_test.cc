#include "sensor/engine/eve_config.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "common/config.h"
#include "sensor/engine/engine.h"

namespace picket::sensor::engine {
namespace {

using output::EveConfig;
using output::EveFiletype;
using output::RedisOptions;

Config yaml(std::string_view text) {
    return Config::load_string(text, "s.yaml");
}

EveConfig read(std::string_view text, bool ips = false) {
    return read_eve_config(yaml(text), ips);
}

// The message of the ConfigError f throws, or "no error".
template <typename F>
std::string error_from(F f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "no error";
}

std::string error_of(std::string_view text) {
    return error_from([&] { read(text); });
}

// What read_eve_config logs on stderr for text.
std::string warnings_of(std::string_view text) {
    testing::internal::CaptureStderr();
    read(text);
    return testing::internal::GetCapturedStderr();
}

void expect_all_types(const output::EveTypes& t, bool on) {
    EXPECT_EQ(t.alert, on);
    EXPECT_EQ(t.anomaly, on);
    EXPECT_EQ(t.http, on);
    EXPECT_EQ(t.dns, on);
    EXPECT_EQ(t.tls, on);
    EXPECT_EQ(t.ssh, on);
    EXPECT_EQ(t.files, on);
    EXPECT_EQ(t.drop, on);
    EXPECT_EQ(t.flow, on);
    EXPECT_EQ(t.stats, on);
}

// Suricata 7's shipped defaults, which a configuration without outputs gets.
void expect_defaults(const EveConfig& e) {
    EXPECT_TRUE(e.enabled);
    EXPECT_EQ(e.sink.filetype, EveFiletype::kRegular);
    EXPECT_EQ(e.sink.filename, "eve.json");
    EXPECT_EQ(e.sink.log_dir, ".");
    EXPECT_EQ(e.sink.syslog.facility, "local5");
    EXPECT_EQ(e.sink.syslog.level, "Info");
    EXPECT_EQ(e.sink.syslog.identity, "picket");
    EXPECT_EQ(e.sink.syslog.socket, "/dev/log");
    EXPECT_EQ(e.sink.redis.server, "127.0.0.1");
    EXPECT_EQ(e.sink.redis.port, 6379);
    EXPECT_EQ(e.sink.redis.mode, RedisOptions::Mode::kLpush);
    EXPECT_EQ(e.sink.redis.key, "suricata");
    expect_all_types(e.types, true);
    EXPECT_FALSE(e.alert.payload);
    EXPECT_FALSE(e.alert.payload_printable);
    EXPECT_FALSE(e.alert.packet);
    EXPECT_TRUE(e.alert.metadata);
    EXPECT_FALSE(e.alert.http_body);
    EXPECT_FALSE(e.alert.http_body_printable);
    EXPECT_TRUE(e.alert.tagged_packets);
    EXPECT_FALSE(e.alert.verdict);
    EXPECT_FALSE(e.alert.verdict_set);
    EXPECT_FALSE(e.alert.xff_enabled);
    EXPECT_FALSE(e.alert.xff_overwrite);
    EXPECT_TRUE(e.alert.xff_reverse);
    EXPECT_EQ(e.alert.xff_header, "X-Forwarded-For");
    EXPECT_TRUE(e.http.extended);
    EXPECT_FALSE(e.http.dump_request_headers);
    EXPECT_FALSE(e.http.dump_response_headers);
    EXPECT_EQ(e.dns.version, 2);
    EXPECT_TRUE(e.dns.requests);
    EXPECT_TRUE(e.dns.responses);
    EXPECT_TRUE(e.dns.detailed);
    EXPECT_TRUE(e.dns.grouped);
    EXPECT_TRUE(e.tls.extended);
    EXPECT_TRUE(e.tls.ja3);
    EXPECT_TRUE(e.tls.ja3s);
    EXPECT_FALSE(e.files.magic);
    EXPECT_FALSE(e.files.md5);
    EXPECT_FALSE(e.files.sha1);
    EXPECT_FALSE(e.files.sha256);
    EXPECT_FALSE(e.anomaly.decode);
    EXPECT_FALSE(e.anomaly.stream);
    EXPECT_TRUE(e.anomaly.applayer);
    EXPECT_FALSE(e.anomaly.packethdr);
    EXPECT_TRUE(e.drop.alerts);
    EXPECT_FALSE(e.drop.flows_all);
    EXPECT_TRUE(e.stats.totals);
    EXPECT_FALSE(e.stats.threads);
    EXPECT_FALSE(e.stats.deltas);
    EXPECT_FALSE(e.ethernet);
    EXPECT_FALSE(e.community_id);
    EXPECT_EQ(e.community_id_seed, 0);
    EXPECT_EQ(e.record_queue_bytes, 4ULL << 20);
}

Config with_input(std::string_view text) {
    Config c = yaml(text);
    YAML::Node list(YAML::NodeType::Sequence);
    list.push_back("x.pcap");
    c.set_value("pcap-file.paths", list);
    return c;
}

TEST(EveConfigTest, NoOutputsSectionGivesSuricatasDefaults) {
    expect_defaults(read(""));
    expect_defaults(read("outputs:\n"));
    expect_defaults(read("outputs: {eve: {}}\n"));
    // A map without eve reads as the defaults (found by config_fuzz: the missing key used to
    // throw YAML::InvalidNode out of the reader); a scalar is an error that says what fits.
    expect_defaults(read("outputs:\n  fast: {enabled: no}\n"));
    EXPECT_EQ(error_from([] { read("outputs: 7\n"); }),
              "s.yaml: outputs: expected Suricata's list (- eve-log: {...}, - fast: {...}) or a "
              "map (eve: {...}, fast: {...})");
    const FastLogConfig fast = read_fast_log_config(yaml(""));
    EXPECT_TRUE(fast.enabled);
    EXPECT_EQ(fast.filename, "fast.log");
}

TEST(EveConfigTest, SensorConfigKeepsTheLegacyFieldsInStep) {
    const SensorConfig s = load_sensor_config(with_input("default-log-dir: /var/log/picket\n"));
    // Everything but the log directory is the default.
    EveConfig e = s.eve;
    e.sink.log_dir.clear();
    e.sink.log_dir.append(".");
    expect_defaults(e);
    EXPECT_EQ(s.eve.sink.log_dir, "/var/log/picket");
    EXPECT_TRUE(s.eve_enabled);
    EXPECT_EQ(s.eve_filename, "eve.json");
    EXPECT_FALSE(s.alert_payload);
    EXPECT_FALSE(s.alert_payload_printable);
    EXPECT_FALSE(s.alert_packet);
    EXPECT_FALSE(s.alert_verdict);
    EXPECT_FALSE(s.alert_xff.enabled);
    EXPECT_TRUE(s.fast_log_enabled);
    EXPECT_EQ(s.fast_log_filename, "fast.log");
    EXPECT_EQ(s.alert_queue_bytes, 4ULL << 20);

    const SensorConfig l = load_sensor_config(with_input(R"(
outputs:
  - fast: {enabled: no, filename: alerts.txt}
  - eve-log:
      enabled: no
      filename: out.json
      types:
        - alert:
            payload: yes
            payload-printable: yes
            packet: yes
            verdict: yes
            xff: {enabled: yes, mode: overwrite, deployment: forward, header: X-Real-IP}
)"));
    EXPECT_FALSE(l.eve_enabled);
    EXPECT_EQ(l.eve_filename, "out.json");
    EXPECT_TRUE(l.alert_payload);
    EXPECT_TRUE(l.alert_payload_printable);
    EXPECT_TRUE(l.alert_packet);
    EXPECT_TRUE(l.alert_verdict);
    EXPECT_TRUE(l.alert_xff.enabled);
    EXPECT_EQ(l.alert_xff.mode, output::XffMode::kOverwrite);
    EXPECT_FALSE(l.alert_xff.reverse);
    EXPECT_EQ(l.alert_xff.header, "X-Real-IP");
    EXPECT_FALSE(l.fast_log_enabled);
    EXPECT_EQ(l.fast_log_filename, "alerts.txt");
}

TEST(EveConfigTest, VerdictFollowsIpsUnlessGiven) {
    EXPECT_TRUE(read("", true).alert.verdict);
    EXPECT_FALSE(read("", true).alert.verdict_set);
    EXPECT_FALSE(read("", false).alert.verdict);
    const EveConfig off = read("outputs: {eve: {alert: {verdict: no}}}\n", true);
    EXPECT_FALSE(off.alert.verdict);
    EXPECT_TRUE(off.alert.verdict_set);
    const SensorConfig ips = load_sensor_config(with_input("ips: {simulate: yes}\n"));
    EXPECT_TRUE(ips.alert_verdict);
    EXPECT_TRUE(ips.eve.alert.verdict);
}

TEST(EveConfigTest, ListFormReadsEveryTypeAndOption) {
    const EveConfig e = read(R"(
outputs:
  - fast: {enabled: yes, filename: fast.log}
  - eve-log:
      enabled: yes
      filetype: redis
      filename: /var/log/x/eve.json
      facility: LOCAL3
      level: warning
      identity: sensor-7
      syslog-socket: /tmp/log.sock
      redis: {server: 10.1.2.3, port: 6380, mode: channel, key: alerts}
      community-id: true
      community-id-seed: 42
      ethernet: yes
      record-queue-size: 8mb
      xff: {enabled: yes, mode: overwrite}
      types:
        - alert:
            payload: yes
            payload-printable: yes
            packet: yes
            metadata: no
            http-body: yes
            http-body-printable: yes
            tagged-packets: no
            verdict: yes
            xff: {enabled: yes, mode: extra-data, deployment: forward, header: X-Real-IP}
        - anomaly: {enabled: yes, types: {decode: yes, stream: yes, applayer: no}, packethdr: yes}
        - http: {extended: no, dump-all-headers: both}
        - dns: {version: 3, requests: no, responses: yes, formats: [grouped]}
        - tls: {extended: no, ja3: no, ja3s: yes}
        - ssh
        - files: {force-magic: yes, force-hash: [md5, sha256]}
        - drop: {alerts: no, flows: all}
        - flow
        - stats: {totals: no, threads: yes, deltas: yes}
)");
    EXPECT_TRUE(e.enabled);
    EXPECT_EQ(e.sink.filetype, EveFiletype::kRedis);
    EXPECT_EQ(e.sink.filename, "/var/log/x/eve.json");
    EXPECT_EQ(e.sink.syslog.facility, "local3");
    EXPECT_EQ(e.sink.syslog.level, "Warning");
    EXPECT_EQ(e.sink.syslog.identity, "sensor-7");
    EXPECT_EQ(e.sink.syslog.socket, "/tmp/log.sock");
    EXPECT_EQ(e.sink.redis.server, "10.1.2.3");
    EXPECT_EQ(e.sink.redis.port, 6380);
    EXPECT_EQ(e.sink.redis.mode, RedisOptions::Mode::kPublish);
    EXPECT_EQ(e.sink.redis.key, "alerts");
    EXPECT_TRUE(e.community_id);
    EXPECT_EQ(e.community_id_seed, 42);
    EXPECT_TRUE(e.ethernet);
    EXPECT_EQ(e.record_queue_bytes, 8ULL << 20);
    expect_all_types(e.types, true);
    EXPECT_TRUE(e.alert.payload);
    EXPECT_TRUE(e.alert.payload_printable);
    EXPECT_TRUE(e.alert.packet);
    EXPECT_FALSE(e.alert.metadata);
    EXPECT_TRUE(e.alert.http_body);
    EXPECT_TRUE(e.alert.http_body_printable);
    EXPECT_FALSE(e.alert.tagged_packets);
    EXPECT_TRUE(e.alert.verdict);
    EXPECT_TRUE(e.alert.verdict_set);
    // types.alert.xff replaces eve-log.xff as a whole: mode back to extra-data.
    EXPECT_TRUE(e.alert.xff_enabled);
    EXPECT_FALSE(e.alert.xff_overwrite);
    EXPECT_FALSE(e.alert.xff_reverse);
    EXPECT_EQ(e.alert.xff_header, "X-Real-IP");
    EXPECT_TRUE(e.anomaly.decode);
    EXPECT_TRUE(e.anomaly.stream);
    EXPECT_FALSE(e.anomaly.applayer);
    EXPECT_TRUE(e.anomaly.packethdr);
    EXPECT_FALSE(e.http.extended);
    EXPECT_TRUE(e.http.dump_request_headers);
    EXPECT_TRUE(e.http.dump_response_headers);
    EXPECT_EQ(e.dns.version, 3);
    EXPECT_FALSE(e.dns.requests);
    EXPECT_TRUE(e.dns.responses);
    EXPECT_FALSE(e.dns.detailed);
    EXPECT_TRUE(e.dns.grouped);
    EXPECT_FALSE(e.tls.extended);
    EXPECT_FALSE(e.tls.ja3);
    EXPECT_TRUE(e.tls.ja3s);
    EXPECT_TRUE(e.files.magic);
    EXPECT_TRUE(e.files.md5);
    EXPECT_FALSE(e.files.sha1);
    EXPECT_TRUE(e.files.sha256);
    EXPECT_FALSE(e.drop.alerts);
    EXPECT_TRUE(e.drop.flows_all);
    EXPECT_FALSE(e.stats.totals);
    EXPECT_TRUE(e.stats.threads);
    EXPECT_TRUE(e.stats.deltas);
}

TEST(EveConfigTest, EveLogXffAppliesToAlertsWithoutTheirOwn) {
    const EveConfig e = read(R"(
outputs:
  - eve-log:
      xff: {enabled: yes, mode: overwrite, header: X-Client}
)");
    EXPECT_TRUE(e.alert.xff_enabled);
    EXPECT_TRUE(e.alert.xff_overwrite);
    EXPECT_TRUE(e.alert.xff_reverse);
    EXPECT_EQ(e.alert.xff_header, "X-Client");
}

TEST(EveConfigTest, FiletypesAndRedisModes) {
    EXPECT_EQ(read("outputs: [eve-log: {filetype: file}]").sink.filetype, EveFiletype::kRegular);
    EXPECT_EQ(read("outputs: [eve-log: {filetype: unix_stream}]").sink.filetype,
              EveFiletype::kUnixStream);
    EXPECT_EQ(read("outputs: [eve-log: {filetype: unix_dgram}]").sink.filetype,
              EveFiletype::kUnixDgram);
    EXPECT_EQ(read("outputs: [eve-log: {filetype: syslog}]").sink.filetype, EveFiletype::kSyslog);
    EXPECT_EQ(read("outputs: [eve-log: {redis: {mode: list}}]").sink.redis.mode,
              RedisOptions::Mode::kLpush);
    EXPECT_EQ(read("outputs: [eve-log: {redis: {mode: lpush}}]").sink.redis.mode,
              RedisOptions::Mode::kLpush);
    EXPECT_EQ(read("outputs: [eve-log: {redis: {mode: rpush}}]").sink.redis.mode,
              RedisOptions::Mode::kRpush);
    EXPECT_EQ(read("outputs: [eve-log: {redis: {mode: publish}}]").sink.redis.mode,
              RedisOptions::Mode::kPublish);
    EXPECT_FALSE(read("outputs: [eve-log: {types: [http: {dump-all-headers: none}]}]")
                     .http.dump_request_headers);
    const EveConfig req = read("outputs: [eve-log: {types: [http: {dump-all-headers: request}]}]");
    EXPECT_TRUE(req.http.dump_request_headers);
    EXPECT_FALSE(req.http.dump_response_headers);
    const EveConfig resp =
        read("outputs: [eve-log: {types: [http: {dump-all-headers: response}]}]");
    EXPECT_FALSE(resp.http.dump_request_headers);
    EXPECT_TRUE(resp.http.dump_response_headers);
    EXPECT_FALSE(read("outputs: [eve-log: {types: [drop: {flows: start}]}]").drop.flows_all);
}

TEST(EveConfigTest, MapLayoutTakesTheDropOptions) {
    // outputs.eve.drop, as outputs.eve.alert: what --set outputs.eve.drop.flows=all reaches.
    const EveConfig e = read("outputs: {eve: {drop: {flows: all, alerts: no}}}");
    EXPECT_TRUE(e.drop.flows_all);
    EXPECT_FALSE(e.drop.alerts);
    EXPECT_EQ(error_of("outputs: {eve: {drop: {flow: all}}}"),
              "s.yaml: outputs.eve.drop: unknown option 'flow' (known: alerts, enabled, flows)");
}

// outputs.eve.dns (what `--set outputs.eve.dns.version=3` writes): the dns type's options.
TEST(EveConfigTest, MapLayoutTakesTheDnsOptions) {
    EXPECT_EQ(read("").dns.version, 2);
    const EveConfig e = read("outputs: {eve: {dns: {version: 3, requests: no}}}");
    EXPECT_EQ(e.dns.version, 3);
    EXPECT_FALSE(e.dns.requests);
    EXPECT_TRUE(e.dns.responses);
    EXPECT_TRUE(e.types.dns);
    EXPECT_FALSE(read("outputs: {eve: {dns: {enabled: no}}}").types.dns);
    EXPECT_EQ(error_of("outputs: {eve: {dns: {version: 4}}}"),
              "s.yaml: outputs.eve.dns.version: expected 2 or 3, got '4'");
}

TEST(EveConfigTest, PlainTypesAndNullOptionsAreOnWithDefaults) {
    const EveConfig e = read(R"(
outputs:
  - eve-log:
      types:
        - flow
        - http
        - dns:
)");
    EXPECT_FALSE(e.types.alert);
    EXPECT_FALSE(e.types.anomaly);
    EXPECT_TRUE(e.types.http);
    EXPECT_TRUE(e.types.dns);
    EXPECT_FALSE(e.types.tls);
    EXPECT_FALSE(e.types.files);
    EXPECT_FALSE(e.types.drop);
    EXPECT_TRUE(e.types.flow);
    EXPECT_FALSE(e.types.stats);
    EXPECT_TRUE(e.http.extended);
    EXPECT_EQ(e.dns.version, 2);
    EXPECT_TRUE(e.dns.detailed);
    EXPECT_TRUE(e.dns.grouped);
}

TEST(EveConfigTest, TypesOffByTheirOwnEnabledOrByAnEmptyList) {
    const EveConfig e = read(R"(
outputs:
  - eve-log:
      types:
        - alert: {enabled: no}
        - anomaly: {enabled: no}
        - stats
)");
    EXPECT_FALSE(e.types.alert);
    EXPECT_FALSE(e.types.anomaly);
    EXPECT_TRUE(e.types.stats);
    EXPECT_FALSE(e.types.flow);
    // `types:` with every entry commented out: nothing is logged, as in Suricata.
    expect_all_types(read("outputs:\n  - eve-log:\n      types:\n").types, false);
    expect_all_types(read("outputs: [eve-log: {types: []}]").types, false);
}

TEST(EveConfigTest, ListWithoutEveLogOrFastTurnsThemOff) {
    const Config c = yaml("outputs:\n  - stats: {enabled: yes}\n");
    EXPECT_FALSE(read_eve_config(c, false).enabled);
    EXPECT_FALSE(read_fast_log_config(c).enabled);
    // A fast entry with no options is on.
    const FastLogConfig f = read_fast_log_config(yaml("outputs: [fast, eve-log]"));
    EXPECT_TRUE(f.enabled);
    EXPECT_EQ(f.filename, "fast.log");
    EXPECT_TRUE(read("outputs: [fast, eve-log]").enabled);
}

TEST(EveConfigTest, PicketMapFormKeepsWorking) {
    const Config c = yaml(R"(
outputs:
  alert-queue-size: 8mb
  eve:
    enabled: no
    filename: picket.json
    filetype: unix_dgram
    alert:
      payload: yes
      payload-printable: no
      packet: yes
      verdict: yes
      xff: {enabled: yes, mode: overwrite, deployment: forward, header: X-Real-IP}
    types:
      - alert: {payload: no, payload-printable: yes}
      - dns: {version: 3}
  fast:
    enabled: no
    filename: f.log
)");
    const EveConfig e = read_eve_config(c, false);
    EXPECT_FALSE(e.enabled);
    EXPECT_EQ(e.sink.filename, "picket.json");
    EXPECT_EQ(e.sink.filetype, EveFiletype::kUnixDgram);
    // outputs.eve.alert is read after types (the --set overrides go there).
    EXPECT_TRUE(e.alert.payload);
    EXPECT_FALSE(e.alert.payload_printable);
    EXPECT_TRUE(e.alert.packet);
    EXPECT_TRUE(e.alert.verdict);
    EXPECT_TRUE(e.alert.verdict_set);
    EXPECT_TRUE(e.alert.xff_enabled);
    EXPECT_TRUE(e.alert.xff_overwrite);
    EXPECT_FALSE(e.alert.xff_reverse);
    EXPECT_EQ(e.alert.xff_header, "X-Real-IP");
    EXPECT_TRUE(e.types.alert);
    EXPECT_TRUE(e.types.dns);
    EXPECT_FALSE(e.types.http);
    EXPECT_FALSE(e.types.stats);
    EXPECT_EQ(e.dns.version, 3);
    const FastLogConfig f = read_fast_log_config(c);
    EXPECT_FALSE(f.enabled);
    EXPECT_EQ(f.filename, "f.log");

    // --set on the map form.
    Config set = yaml("");
    set.set("outputs.eve.alert.payload=yes");
    set.set("outputs.eve.types=[alert, flow]");
    const EveConfig s = read_eve_config(set, false);
    EXPECT_TRUE(s.alert.payload);
    EXPECT_TRUE(s.types.alert);
    EXPECT_TRUE(s.types.flow);
    EXPECT_FALSE(s.types.http);
    // Without types, outputs.eve.alert.enabled turns the alert type off alone.
    const EveConfig no_alerts = read("outputs: {eve: {alert: {enabled: no}}}");
    EXPECT_FALSE(no_alerts.types.alert);
    EXPECT_TRUE(no_alerts.types.flow);
}

TEST(EveConfigTest, ErrorsNameTheKeyTheValueAndWhatIsAllowed) {
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [htpp]}]"),
              "s.yaml: outputs.eve-log.types: unknown type 'htpp' (known: alert, anomaly, dns, "
              "drop, files, flow, ftp, http, ssh, stats, tls)");
    EXPECT_EQ(error_of("outputs: {eve: {types: [flows]}}"),
              "s.yaml: outputs.eve.types: unknown type 'flows' (known: alert, anomaly, dns, "
              "drop, files, flow, ftp, http, ssh, stats, tls)");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [http: {dump-all-header: both}]}]"),
              "s.yaml: outputs.eve-log.types.http: unknown option 'dump-all-header' (known: "
              "custom, dump-all-headers, enabled, extended)");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [alert: {payloads: yes}]}]"),
              "s.yaml: outputs.eve-log.types.alert: unknown option 'payloads' (known: enabled, "
              "http-body, http-body-printable, metadata, packet, payload, payload-buffer-size, "
              "payload-length, payload-printable, tagged-packets, verdict, xff)");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [anomaly: {types: {app: yes}}]}]"),
              "s.yaml: outputs.eve-log.types.anomaly.types: unknown option 'app' (known: "
              "applayer, decode, stream)");
    EXPECT_EQ(error_of("outputs: [eve-log: {filname: x.json}]"),
              "s.yaml: outputs.eve-log: unknown option 'filname' (known: community-id, "
              "community-id-seed, enabled, ethernet, facility, filename, filetype, identity, "
              "level, metadata, pcap-file, prefix, record-queue-size, redis, syslog-socket, "
              "threaded, types, xff)");
    EXPECT_EQ(
        error_of("outputs: {eve: {alerts: {payload: yes}}}"),
        "s.yaml: outputs.eve: unknown option 'alerts' (known: alert, community-id, "
        "community-id-seed, dns, drop, enabled, ethernet, facility, filename, filetype, identity, "
        "level, metadata, pcap-file, prefix, record-queue-size, redis, syslog-socket, "
        "threaded, types, xff)");
    EXPECT_EQ(error_of("outputs: [eve-log: {filetype: kafka}]"),
              "s.yaml: outputs.eve-log.filetype: expected one of regular, file, unix_stream, "
              "unix_dgram, syslog, redis, got 'kafka'");
    EXPECT_EQ(error_of("outputs: [eve-log: {redis: {mode: stream}}]"),
              "s.yaml: outputs.eve-log.redis.mode: expected one of list, lpush, rpush, channel, "
              "publish, got 'stream'");
    EXPECT_EQ(error_of("outputs: [eve-log: {redis: {host: x}}]"),
              "s.yaml: outputs.eve-log.redis: unknown option 'host' (known: async, key, mode, "
              "pipelining, port, server)");
    EXPECT_EQ(error_of("outputs: [eve-log: {redis: {port: 70000}}]"),
              "s.yaml: outputs.eve-log.redis.port: expected an integer from 1 to 65535, got "
              "'70000'");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [dns: {version: 1}]}]"),
              "s.yaml: outputs.eve-log.types.dns.version: expected 2 or 3, got '1'");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [dns: {formats: [detailed, flat]}]}]"),
              "s.yaml: outputs.eve-log.types.dns.formats: unknown format 'flat' (known: "
              "detailed, grouped)");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [files: {force-hash: [md5, sha512]}]}]"),
              "s.yaml: outputs.eve-log.types.files.force-hash: unknown hash 'sha512' (known: md5, "
              "sha1, sha256)");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [http: {dump-all-headers: all}]}]"),
              "s.yaml: outputs.eve-log.types.http.dump-all-headers: expected one of none, "
              "request, response, both, got 'all'");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [drop: {flows: some}]}]"),
              "s.yaml: outputs.eve-log.types.drop.flows: expected one of all, start, got 'some'");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [alert: {payload: maybe}]}]"),
              "s.yaml: outputs.eve-log.types.alert.payload: expected yes or no, got 'maybe'");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [alert: {xff: {mode: replace}}]}]"),
              "s.yaml: outputs.eve-log.types.alert.xff.mode: expected one of extra-data, "
              "overwrite, got 'replace'");
    EXPECT_EQ(error_of("outputs: [eve-log: {facility: local9}]"),
              "s.yaml: outputs.eve-log.facility: expected one of auth, authpriv, cron, daemon, "
              "ftp, kern, lpr, mail, news, syslog, user, uucp, local0, local1, local2, local3, "
              "local4, local5, local6, local7, got 'local9'");
    EXPECT_EQ(error_of("outputs: [eve-log: {level: loud}]"),
              "s.yaml: outputs.eve-log.level: expected one of Emergency, Alert, Critical, Error, "
              "Warning, Notice, Info, Debug, got 'loud'");
    EXPECT_EQ(error_of("outputs: [eve-log: {record-queue-size: lots}]"),
              "s.yaml: outputs.eve-log.record-queue-size: expected a size such as 65536, 64kb, "
              "32mb or 1gb, got 'lots'");
    EXPECT_EQ(error_of("outputs: [eve-log: {community-id-seed: -1}]"),
              "s.yaml: outputs.eve-log.community-id-seed: expected an integer from 0 to 65535, "
              "got '-1'");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: {alert: {}}}]"),
              "s.yaml: outputs.eve-log.types: expected a list of types (- alert, - http: "
              "{extended: yes}, ...)");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [flow: yes]}]"),
              "s.yaml: outputs.eve-log.types.flow: expected a map of options");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [{http: {}, dns: {}}]}]"),
              "s.yaml: outputs.eve-log.types[0]: expected a name or a map of one name to its "
              "options, such as - flow or - http: {extended: yes}");
    EXPECT_EQ(error_of("outputs: [eve-log: {enabled: yes}, fast, eve-log: {enabled: no}]"),
              "s.yaml: outputs[2]: a second 'eve-log' output: Picket supports one eve-log "
              "output");
    EXPECT_EQ(error_of("outputs: eve.json"),
              "s.yaml: outputs: expected Suricata's list (- eve-log: {...}, - fast: {...}) or a "
              "map (eve: {...}, fast: {...})");
    EXPECT_EQ(error_of("outputs: [eve-log: {filename: ''}]"),
              "s.yaml: outputs.eve-log.filename: must not be empty");
}

TEST(EveConfigTest, FastListEntryErrors) {
    EXPECT_EQ(error_from([] { read_fast_log_config(yaml("outputs: [fast: {file: x}]")); }),
              "s.yaml: outputs.fast: unknown option 'file' (known: append, enabled, filename, "
              "filetype)");
    EXPECT_EQ(
        error_from([] { read_fast_log_config(yaml("outputs: [fast: {enabled: sometimes}]")); }),
        "s.yaml: outputs.fast.enabled: expected yes or no, got 'sometimes'");
    EXPECT_EQ(error_from([] { read_fast_log_config(yaml("outputs: [fast, fast]")); }),
              "s.yaml: outputs[1]: a second 'fast' output: Picket supports one fast output");
}

TEST(EveConfigTest, SensorConfigFailsOnAnUnknownType) {
    EXPECT_EQ(
        error_from([] { load_sensor_config(with_input("outputs: [eve-log: {types: [htpp]}]")); }),
        "s.yaml: outputs.eve-log.types: unknown type 'htpp' (known: alert, anomaly, dns, "
        "drop, files, flow, ftp, http, ssh, stats, tls)");
}

// Shapes no real configuration has (found by thinking like tests/fuzz/config_fuzz): each is a
// ConfigError, never another exception.
TEST(EveConfigTest, OddShapesAreConfigErrors) {
    EXPECT_EQ(error_of("outputs: [[eve-log]]"),
              "s.yaml: outputs[0]: expected a name or a map of one name to its options, such as "
              "- eve-log: {enabled: yes, ...}");
    EXPECT_EQ(error_of("outputs: [{? [a, b] : c}]"),
              "s.yaml: outputs[0]: expected a name or a map of one name to its options, such as "
              "- eve-log: {enabled: yes, ...}");
    EXPECT_EQ(error_of("outputs: [eve-log: [1, 2]]"),
              "s.yaml: outputs.eve-log: expected a map of options");
    EXPECT_EQ(error_of("outputs: [eve-log: {? [x] : y}]"),
              "s.yaml: outputs.eve-log: unknown option '?' (known: community-id, "
              "community-id-seed, enabled, ethernet, facility, filename, filetype, identity, "
              "level, metadata, pcap-file, prefix, record-queue-size, redis, syslog-socket, "
              "threaded, types, xff)");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [[alert]]}]"),
              "s.yaml: outputs.eve-log.types[0]: expected a name or a map of one name to its "
              "options, such as - flow or - http: {extended: yes}");
    EXPECT_EQ(error_of("outputs: [eve-log: {redis: yes}]"),
              "s.yaml: outputs.eve-log.redis: expected a map of options");
    EXPECT_EQ(error_of("outputs: [eve-log: {filename: [a]}]"),
              "s.yaml: outputs.eve-log.filename: expected a single value");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [dns: {version: [2]}]}]"),
              "s.yaml: outputs.eve-log.types.dns.version: expected 2 or 3, got 'a list or map'");
    EXPECT_EQ(error_of("outputs: [eve-log: {types: [files: {force-hash: {md5: 1}}]}]"),
              "s.yaml: outputs.eve-log.types.files.force-hash: expected a list of md5, sha1, "
              "sha256");
    EXPECT_EQ(error_of("outputs: {eve: yes}"), "s.yaml: outputs.eve: expected a map of options");
}

// An excerpt of Suricata 7's shipped suricata.yaml (outputs), as a user would bring it.
constexpr std::string_view kSuricata7Outputs = R"(%YAML 1.1
---
outputs:
  # a line based alerts log similar to Snort's fast.log
  - fast:
      enabled: yes
      filename: fast.log
      append: yes
      #filetype: regular # 'regular', 'unix_stream' or 'unix_dgram'

  # Extensible Event Format (nicknamed EVE) event log in JSON format
  - eve-log:
      enabled: yes
      filetype: regular #regular|syslog|unix_dgram|unix_stream|redis
      filename: eve.json
      #threaded: false
      #prefix: "@cee: " # prefix to prepend to each log entry
      #identity: "suricata"
      #facility: local5
      #level: Info ## possible levels: Emergency, Alert, Critical,
                   ## Error, Warning, Notice, Info, Debug
      #ethernet: no  # log ethernet header in events when available
      #redis:
      #  server: 127.0.0.1
      #  port: 6379
      #  async: true ## if redis replies are read asynchronously
      #  mode: list ## possible values: list|lpush (default), rpush, channel|publish
      #  key: suricata ## key or channel to use (default to suricata)
      pcap-file: false
      community-id: false
      community-id-seed: 0
      xff:
        enabled: no
        mode: extra-data
        deployment: reverse
        header: X-Forwarded-For

      types:
        - alert:
            # payload: yes             # enable dumping payload in Base64
            # payload-buffer-size: 4kb # max size of payload buffer to output in eve-log
            # payload-printable: yes   # enable dumping payload in printable (lossy) format
            # packet: yes              # enable dumping of packet (without stream segments)
            # metadata: no             # enable inclusion of app layer metadata with alert. Default yes
            # http-body: yes           # Requires metadata; enable dumping of HTTP body in Base64
            # http-body-printable: yes # Requires metadata; enable dumping of HTTP body in printable format
            tagged-packets: yes
        - anomaly:
            enabled: yes
            types:
              # decode: no
              # stream: no
              # applayer: yes
            #packethdr: no
        - http:
            extended: yes     # enable this for extended logging information
            # custom allows additional HTTP fields to be included in eve-log.
            # the example below adds three additional fields when uncommented
            #custom: [Accept-Encoding, Accept-Language, Authorization]
            # set this value to one and only one from {both, request, response}
            # to dump all HTTP headers for every HTTP request and/or response
            # dump-all-headers: none
        - dns:
            # This configuration uses the new DNS logging format,
            # the old configuration is still available:
            # https://docs.suricata.io/en/latest/output/eve/eve-json-output.html#dns-v1-format

            # As of Suricata 5.0, version 2 of the eve dns output
            # format is the default.
            #version: 2

            # Enable/disable this logger. Default: enabled.
            #enabled: yes

            # Control logging of requests and responses:
            # - requests: enable logging of DNS queries
            # - responses: enable logging of DNS answers
            # By default both requests and responses are logged.
            #requests: no
            #responses: no

            # Format of answer logging:
            # - detailed: array item per answer
            # - grouped: answers aggregated by type
            # Default: all
            #formats: [detailed, grouped]

            # DNS record types to log, based on the query type.
            # Default: all.
            #types: [a, aaaa, cname, mx, ns, ptr, txt]
        - tls:
            extended: yes     # enable this for extended logging information
            # output TLS transaction where the session is resumed using a
            # session id
            #session-resumption: no
            # custom controls which TLS fields that are included in eve-log
            #custom: [subject, issuer, session_resumed, serial, fingerprint, sni, version, not_before, not_after, certificate, chain, ja3, ja3s, ja4]
        - files:
            force-magic: no   # force logging magic on all logged files
            # force logging of checksums, available hash functions are md5,
            # sha1 and sha256
            #force-hash: [md5]
        #- drop:
        #    alerts: yes      # log alerts that caused drops
        #    flows: all       # start or all: 'start' logs only a single drop
        #                     # per flow direction. All logs each dropped pkt.
        - smtp:
            #extended: yes # enable this for extended logging information
            # this includes: bcc, message-id, subject, x_mailer, user-agent
            # custom fields logging from the list:
            #  reply-to, bcc, message-id, subject, x-mailer, user-agent, received,
            #  x-originating-ip, in-reply-to, references, importance, priority,
            #  sensitivity, organization, content-md5, date
            #custom: [received, x-mailer, x-originating-ip, relays, reply-to, bcc]
            # output md5 of fields: body, subject
            # for the body you need to set app-layer.protocols.smtp.mime.body-md5
            # to yes
            #md5: [body, subject]

        #- dnp3
        - ftp
        - rdp
        - nfs
        - smb
        - tftp
        - ike
        - dcerpc
        - krb5
        - bittorrent-dht
        - snmp
        - rfb
        - sip
        - quic
        - dhcp:
            enabled: yes
            # When extended mode is on, all DHCP messages are logged
            # with full detail. When extended mode is off (the
            # default), just enough information to map a MAC address
            # to an IP address is logged.
            extended: no
        - ssh
        - mqtt:
            # passwords: yes           # enable output of passwords
        - http2
        - pgsql:
            enabled: no
            # passwords: yes           # enable output of passwords. Disabled by default
        - stats:
            totals: yes       # stats for all threads merged together
            threads: no       # per thread stats
            deltas: no        # include delta values
        # bi-directional flows
        - flow
        # uni-directional flows
        #- netflow

        # Metadata event type. Triggered whenever a pktvar is saved
        # and will include the pktvars, flowvars, flowbits and
        # flowints.
        #- metadata

  # deprecated - unified2 alert format for use with Barnyard2
  - unified2-alert:
      enabled: no

  # a line based log of HTTP requests (no alerts)
  - http-log:
      enabled: no
      filename: http.log
      append: yes

  # Stats.log contains data from various counters of the Suricata engine.
  - stats:
      enabled: yes
      filename: stats.log
      append: yes       # append to file (yes) or overwrite it (no)
      totals: yes       # stats for all threads merged together
      threads: no       # per thread stats

  # a full alert log containing much information for signature writers
  # or for investigating suspected false positives.
  - alert-debug:
      enabled: no
      filename: alert-debug.log
      append: yes

  # Output module for storing files on disk. Files are stored in
  # directory names consisting of the first 2 characters of the
  # SHA256 of the file.
  - file-store:
      version: 2
      enabled: no

  # packet logging
  - pcap-log:
      enabled: no
      filename: log.pcap
      limit: 1000mb
      max-files: 2000
      compression: none
      mode: normal # normal, multi or sguil.
      use-stream-depth: no #If set to "yes" packets seen after reaching stream inspection depth are ignored. "no" logs all packets
      honor-pass-rules: no # If set to "yes", flows in which a pass rule matched will stop being logged.

  - tcp-data:
      enabled: no
      type: file
      filename: tcp-data.log

  - lua:
      enabled: no
      scripts:
)";

TEST(EveConfigTest, Suricata7OutputsLoadWithWarningsOnly) {
    const EveConfig e = read(kSuricata7Outputs);
    EXPECT_TRUE(e.enabled);
    EXPECT_EQ(e.sink.filetype, EveFiletype::kRegular);
    EXPECT_EQ(e.sink.filename, "eve.json");
    EXPECT_TRUE(e.types.alert);
    EXPECT_TRUE(e.types.anomaly);
    EXPECT_TRUE(e.types.http);
    EXPECT_TRUE(e.types.dns);
    EXPECT_TRUE(e.types.tls);
    EXPECT_TRUE(e.types.files);
    EXPECT_FALSE(e.types.drop);  // commented out
    EXPECT_TRUE(e.types.flow);
    EXPECT_TRUE(e.types.stats);
    EXPECT_FALSE(e.alert.payload);
    EXPECT_FALSE(e.alert.packet);
    EXPECT_TRUE(e.alert.tagged_packets);
    EXPECT_FALSE(e.alert.xff_enabled);
    EXPECT_FALSE(e.anomaly.decode);
    EXPECT_TRUE(e.anomaly.applayer);
    EXPECT_EQ(e.dns.version, 2);
    EXPECT_FALSE(e.files.magic);
    EXPECT_FALSE(e.files.md5);
    const FastLogConfig f = read_fast_log_config(yaml(kSuricata7Outputs));
    EXPECT_TRUE(f.enabled);
    EXPECT_EQ(f.filename, "fast.log");

    EXPECT_EQ(warnings_of(kSuricata7Outputs),
              "picket: warning: s.yaml: outputs: 'unified2-alert' is not supported by Picket; "
              "ignored\n"
              "picket: warning: s.yaml: outputs: 'http-log' is not supported by Picket; ignored\n"
              "picket: warning: s.yaml: outputs: 'stats' is not supported by Picket; ignored\n"
              "picket: warning: s.yaml: outputs: 'alert-debug' is not supported by Picket; "
              "ignored\n"
              "picket: warning: s.yaml: outputs: 'file-store' is not supported by Picket; "
              "ignored\n"
              "picket: warning: s.yaml: outputs: 'pcap-log' is not supported by Picket; ignored\n"
              "picket: warning: s.yaml: outputs: 'tcp-data' is not supported by Picket; ignored\n"
              "picket: warning: s.yaml: outputs: 'lua' is not supported by Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.pcap-file: not supported by Picket; "
              "ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'smtp' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'rdp' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'nfs' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'smb' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'tftp' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'ike' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'dcerpc' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'krb5' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'bittorrent-dht' is not "
              "supported by Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'snmp' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'rfb' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'sip' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'quic' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'dhcp' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'mqtt' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'http2' is not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types: 'pgsql' is not supported by "
              "Picket; ignored\n");
}

TEST(EveConfigTest, IgnoredOptionsWarnOncePerKey) {
    EXPECT_EQ(warnings_of(R"(
outputs:
  - eve-log:
      types:
        - http: {custom: [Accept-Encoding]}
        - http: {custom: [Authorization]}
        - alert: {metadata: {app-layer: false}}
)"),
              "picket: warning: s.yaml: outputs.eve-log.types.http.custom: not supported by "
              "Picket; ignored\n"
              "picket: warning: s.yaml: outputs.eve-log.types.alert.metadata: its sub-options "
              "are not supported by Picket; read as yes\n");
    EXPECT_TRUE(read("outputs: [eve-log: {types: [alert: {metadata: {app-layer: false}}]}]")
                    .alert.metadata);
}

}  // namespace
}  // namespace picket::sensor::engine
