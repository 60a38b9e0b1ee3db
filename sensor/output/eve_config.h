// What the EVE output writes and where: Suricata's `outputs: - eve-log:` section, read by the
// sensor's configuration (sensor/engine) and used by the output thread and the workers. Names
// in comments are Suricata's option names; defaults are those of Suricata 7's shipped
// suricata.yaml.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace picket::sensor::output {

// eve-log.filetype.
enum class EveFiletype : uint8_t { kRegular, kUnixStream, kUnixDgram, kSyslog, kRedis };

// eve-log.redis.* (filetype: redis).
struct RedisOptions {
    std::string server = "127.0.0.1";  // redis.server
    uint16_t port = 6379;              // redis.port
    // redis.mode: list (= lpush), lpush, rpush, channel (= publish), publish.
    enum class Mode : uint8_t { kLpush, kRpush, kPublish } mode = Mode::kLpush;
    std::string key = "suricata";  // redis.key: the list or channel name
    // Reconnect backoff: first retry after min, doubling up to max.
    uint32_t reconnect_min_ms = 100;
    uint32_t reconnect_max_ms = 5000;
    // Records held while the connection is slow (pipelined, not yet written); beyond this
    // they are dropped and counted.
    uint32_t max_pending = 4096;
};

// eve-log.{facility, level, identity} and the socket (filetype: syslog). Records go to the
// local syslog daemon's datagram socket in the RFC 3164 form "<PRI>IDENT: JSON".
struct SyslogOptions {
    std::string facility = "local5";  // eve-log.facility
    std::string level = "Info";       // eve-log.level (Suricata's names: Emergency..Debug)
    std::string identity = "picket";  // eve-log.identity
    std::string socket = "/dev/log";  // eve-log.syslog-socket (Picket's; tests bind their own)
};

// Where records go. filename: for regular files, relative to the log directory unless
// absolute; for unix_stream / unix_dgram, the socket's path (same rule).
struct SinkOptions {
    EveFiletype filetype = EveFiletype::kRegular;
    std::string filename = "eve.json";
    std::string log_dir = ".";
    SyslogOptions syslog;
    RedisOptions redis;
    // Seconds between attempts to reopen a file or socket that failed (full disk, missing
    // directory, socket not there yet).
    uint32_t retry_sec = 1;
};

// eve-log.types: each type on or off.
struct EveTypes {
    bool alert = true;
    bool anomaly = true;
    bool http = true;
    bool dns = true;
    bool tls = true;
    bool ssh = true;
    bool ftp = true;    // ftp and ftp_data
    bool files = true;  // fileinfo
    bool drop = true;   // IPS modes only
    bool flow = true;
    bool stats = true;
};

// types: - http: {extended, dump-all-headers}
struct HttpLogOptions {
    bool extended = true;
    bool dump_request_headers = false;   // dump-all-headers: request | both
    bool dump_response_headers = false;  // dump-all-headers: response | both
};

// types: - dns: {version, requests, responses, formats}
struct DnsLogOptions {
    int version = 2;  // 2: a "query" record per request, an "answer" per response; 3: one record
    bool requests = true;
    bool responses = true;
    bool detailed = true;  // formats: [detailed]: "answers": [{rrname, rrtype, ttl, rdata}]
    bool grouped = true;   // formats: [grouped]: "grouped": {"A": ["1.2.3.4"]}
};

// types: - tls: {extended, ja3, ja3s}; Suricata logs ja3/ja3s when app-layer.protocols.tls.
// ja3-fingerprints is on; here the tls options turn them on directly as well.
struct TlsLogOptions {
    bool extended = true;  // notbefore, notafter, fingerprint... (version is always there)
    bool ja3 = true;
    bool ja3s = true;
};

// types: - files: {force-magic, force-hash: [md5, sha1, sha256]}
struct FileLogOptions {
    bool magic = false;  // force-magic (libmagic)
    bool md5 = false;
    bool sha1 = false;
    bool sha256 = false;
};

// types: - anomaly: {types: {decode, stream, applayer}, packethdr}. Suricata's defaults:
// applayer on, decode and stream off (they fill disks on bad links).
struct AnomalyLogOptions {
    bool decode = false;
    bool stream = false;
    bool applayer = true;
    bool packethdr = false;
};

// types: - drop: {alerts, flows: all | start}
struct DropLogOptions {
    bool alerts = true;      // alerts: the rule that dropped the packet as an "alert" object
    bool flows_all = false;  // flows: all (every dropped packet) | start (first per flow)
};

// types: - stats: {totals, threads, deltas}
struct StatsLogOptions {
    bool totals = true;
    bool threads = false;
    bool deltas = false;
};

// types: - alert: {...}: options beyond output.h's AlertOutputOptions.
struct AlertLogOptions {
    bool payload = false;            // payload (base64)
    bool payload_printable = false;  // payload-printable
    bool packet = false;             // packet (base64)
    bool metadata = true;            // metadata: rule metadata, flowbits, flowvars, pktvars
    bool http_body = false;          // http-body (base64)
    bool http_body_printable = false;
    bool tagged_packets = true;  // tagged-packets
    bool verdict = false;        // verdict (default on in IPS modes; the sensor decides)
    bool verdict_set = false;    // verdict was given in the configuration
    // xff: {enabled, mode: extra-data | overwrite, deployment: reverse | forward, header}
    // (types.alert.xff, else eve-log.xff); output.h's XffOptions holds the same for the writer.
    bool xff_enabled = false;
    bool xff_overwrite = false;  // mode: overwrite (else extra-data)
    bool xff_reverse = true;     // deployment: reverse (else forward)
    std::string xff_header = "X-Forwarded-For";
};

struct EveConfig {
    bool enabled = true;  // eve-log.enabled
    SinkOptions sink;
    EveTypes types;
    AlertLogOptions alert;
    HttpLogOptions http;
    DnsLogOptions dns;
    TlsLogOptions tls;
    FileLogOptions files;
    AnomalyLogOptions anomaly;
    DropLogOptions drop;
    StatsLogOptions stats;
    bool ethernet = false;           // ethernet: "ether" object {src_mac, dest_mac}
    bool community_id = false;       // community-id
    uint16_t community_id_seed = 0;  // community-id-seed
    // Bytes of each worker's record buffer (workers -> writer thread); a full buffer drops
    // records and counts them in eve.dropped.<type>. Picket's option: record-queue-size.
    uint64_t record_queue_bytes = 4ULL << 20;
};

}  // namespace picket::sensor::output
