#include "sensor/engine/eve_config.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "common/log.h"

namespace picket::sensor::engine {
namespace {

using Names = std::initializer_list<std::string_view>;

// The EVE types Picket writes, sorted (the order error messages list them in).
constexpr std::string_view kTypes[] = {"alert", "anomaly", "dns", "drop",  "files", "flow",
                                       "ftp",   "http",    "ssh", "stats", "tls"};
// Suricata 7/8 eve-log types Picket does not write: a real suricata.yaml lists them, so they
// are warned about, not refused. A name in neither list is a typo and an error.
constexpr std::string_view kSuricataOnlyTypes[] = {
    "arp",      "bittorrent-dht", "dcerpc", "dhcp",     "dnp3", "doh2",
    "enip",     "frame",          "http2",  "ike",      "krb5", "ldap",
    "metadata", "modbus",         "mqtt",   "netflow",  "nfs",  "pgsql",
    "pop3",     "quic",           "rdp",    "rfb",      "sdp",  "sip",
    "smb",      "smtp",           "snmp",   "template", "tftp", "websocket"};

std::string lower(std::string s) {
    for (auto& ch : s) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return s;
}

template <typename List>
std::string join(const List& names) {
    std::string out;
    for (std::string_view n : names) {
        out += (out.empty() ? "" : ", ") + std::string(n);
    }
    return out;
}

template <typename List>
bool contains(const List& names, std::string_view name) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// Reads YAML sections that common/config.h's dotted keys cannot reach (list entries). Errors
// are "SOURCE: PATH: what", as read_dpdk_config's; each warning is logged once per read.
class Reader {
public:
    explicit Reader(const Config& c) : c_(c) {}

    [[noreturn]] void fail(const std::string& path, const std::string& what) const {
        throw ConfigError(c_.source() + ": " + path + ": " + what);
    }

    void warn_once(const std::string& message) {
        if (warned_.insert(message).second) {
            log::warning(c_.source() + ": " + message);
        }
    }

    // A section of options: null (all defaults) or a map whose keys are all in known or
    // ignored (accepted for Suricata's sake, warned about, not acted on).
    void check_keys(const YAML::Node& map, const std::string& path, Names known,
                    Names ignored = {}) {
        if (!map.IsDefined() || map.IsNull()) {
            return;
        }
        if (!map.IsMap()) {
            fail(path, "expected a map of options");
        }
        for (const auto& kv : map) {
            const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
            if (contains(known, key)) {
                continue;
            }
            if (contains(ignored, key)) {
                warn_once(path + "." + key + ": not supported by Picket; ignored");
                continue;
            }
            std::set<std::string_view> all(known.begin(), known.end());
            all.insert(ignored.begin(), ignored.end());
            fail(path, "unknown option '" + key + "' (known: " + join(all) + ")");
        }
    }

    // The value of option key of a checked map section; an undefined node when the section
    // is null or the key absent or null.
    static YAML::Node value(const YAML::Node& map, std::string_view key) {
        if (!map.IsDefined() || !map.IsMap()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        const YAML::Node& cmap = map;  // const lookup: no insertion
        YAML::Node v = cmap[std::string(key)];
        if (!v.IsDefined() || v.IsNull()) {
            return YAML::Node(YAML::NodeType::Undefined);
        }
        return v;
    }

    static std::string text(const YAML::Node& v) {
        return v.IsScalar() ? v.Scalar() : std::string("a list or map");
    }

    bool get_bool(const YAML::Node& map, const std::string& path, std::string_view key,
                  bool def) const {
        const YAML::Node v = value(map, key);
        if (!v.IsDefined()) {
            return def;
        }
        const std::string s = v.IsScalar() ? lower(v.Scalar()) : std::string();
        if (s == "yes" || s == "true" || s == "on" || s == "1") {
            return true;
        }
        if (s == "no" || s == "false" || s == "off" || s == "0") {
            return false;
        }
        fail(path + "." + std::string(key), "expected yes or no, got '" + text(v) + "'");
    }

    std::string get_string(const YAML::Node& map, const std::string& path, std::string_view key,
                           std::string def) const {
        const YAML::Node v = value(map, key);
        if (!v.IsDefined()) {
            return def;
        }
        if (!v.IsScalar()) {
            fail(path + "." + std::string(key), "expected a single value");
        }
        return v.Scalar();
    }

    int64_t get_int(const YAML::Node& map, const std::string& path, std::string_view key,
                    int64_t def, int64_t min, int64_t max) const {
        const YAML::Node v = value(map, key);
        if (!v.IsDefined()) {
            return def;
        }
        const std::string s = text(v);
        int64_t n = 0;
        size_t pos = 0;
        try {
            n = std::stoll(s, &pos, 10);
        } catch (const std::exception&) {
            pos = 0;
        }
        if (s.empty() || pos != s.size() || n < min || n > max) {
            fail(path + "." + std::string(key), "expected an integer from " + std::to_string(min) +
                                                    " to " + std::to_string(max) + ", got '" + s +
                                                    "'");
        }
        return n;
    }

    uint64_t get_size(const YAML::Node& map, const std::string& path, std::string_view key,
                      uint64_t def) const {
        const YAML::Node v = value(map, key);
        uint64_t n = def;
        if (v.IsDefined() && (!v.IsScalar() || !parse_size(v.Scalar(), &n))) {
            fail(path + "." + std::string(key),
                 "expected a size such as 65536, 64kb, 32mb or 1gb, got '" + text(v) + "'");
        }
        return n;
    }

    // One of allowed, compared as written (Suricata's words are lower case).
    std::string get_choice(const YAML::Node& map, const std::string& path, std::string_view key,
                           std::string_view def, Names allowed) const {
        const YAML::Node v = value(map, key);
        if (!v.IsDefined()) {
            return std::string(def);
        }
        if (!v.IsScalar() || !contains(allowed, v.Scalar())) {
            fail(path + "." + std::string(key),
                 "expected one of " + join(allowed) + ", got '" + text(v) + "'");
        }
        return v.Scalar();
    }

    // A list of words (a single word is a list of one), each one of allowed. what names an
    // entry in the error: "unknown hash 'sha512' (known: md5, sha1, sha256)".
    std::vector<std::string> get_words(const YAML::Node& map, const std::string& path,
                                       std::string_view key, std::string_view what,
                                       Names allowed) const {
        const YAML::Node v = value(map, key);
        std::vector<std::string> out;
        if (!v.IsDefined()) {
            return out;
        }
        const std::string where = path + "." + std::string(key);
        if (v.IsScalar()) {
            out.push_back(v.Scalar());
        } else if (v.IsSequence()) {
            for (const auto& item : v) {
                if (!item.IsScalar()) {
                    fail(where, "expected a list of " + join(allowed));
                }
                out.push_back(item.Scalar());
            }
        } else {
            fail(where, "expected a list of " + join(allowed));
        }
        for (const auto& w : out) {
            if (!contains(allowed, w)) {
                fail(where, "unknown " + std::string(what) + " '" + w +
                                "' (known: " + join(allowed) + ")");
            }
        }
        return out;
    }

private:
    const Config& c_;
    std::set<std::string> warned_;
};

// An entry of a Suricata list (outputs, types): "- name" or "- name: {options}". Returns the
// name and the options (undefined for the plain form).
std::pair<std::string, YAML::Node> list_entry(const Reader& r, const YAML::Node& entry,
                                              const std::string& path, size_t i,
                                              std::string_view example) {
    if (entry.IsScalar()) {
        return {entry.Scalar(), YAML::Node(YAML::NodeType::Undefined)};
    }
    if (!entry.IsMap() || entry.size() != 1 || !entry.begin()->first.IsScalar()) {
        r.fail(
            path + "[" + std::to_string(i) + "]",
            "expected a name or a map of one name to its options, such as " + std::string(example));
    }
    return {entry.begin()->first.Scalar(), entry.begin()->second};
}

// xff: {enabled, mode, deployment, header}. A section replaces what an outer one set, keys
// it does not give taking their defaults (Suricata reads one xff section per logger).
// The drop record's options (types: - drop: {...}, and Picket's outputs.eve.drop).
void read_drop(Reader& r, const YAML::Node& node, const std::string& path, output::EveConfig* e) {
    r.check_keys(node, path, {"enabled", "alerts", "flows"});
    e->drop.alerts = r.get_bool(node, path, "alerts", e->drop.alerts);
    e->drop.flows_all = r.get_choice(node, path, "flows", e->drop.flows_all ? "all" : "start",
                                     {"all", "start"}) == "all";
}

void read_xff(Reader& r, const YAML::Node& node, const std::string& path,
              output::AlertLogOptions* a) {
    r.check_keys(node, path, {"enabled", "mode", "deployment", "header"});
    a->xff_enabled = r.get_bool(node, path, "enabled", false);
    a->xff_overwrite =
        r.get_choice(node, path, "mode", "extra-data", {"extra-data", "overwrite"}) == "overwrite";
    a->xff_reverse =
        r.get_choice(node, path, "deployment", "reverse", {"reverse", "forward"}) == "reverse";
    a->xff_header = r.get_string(node, path, "header", "X-Forwarded-For");
    if (a->xff_header.empty()) {
        r.fail(path + ".header", "must name a request header");
    }
}

// types: - alert: {...}, and Picket's outputs.eve.alert. Returns `enabled` when given.
std::optional<bool> read_alert(Reader& r, const YAML::Node& node, const std::string& path,
                               output::AlertLogOptions* a) {
    r.check_keys(node, path,
                 {"enabled", "payload", "payload-printable", "packet", "metadata", "http-body",
                  "http-body-printable", "tagged-packets", "verdict", "xff"},
                 {"payload-buffer-size", "payload-length"});
    a->payload = r.get_bool(node, path, "payload", a->payload);
    a->payload_printable = r.get_bool(node, path, "payload-printable", a->payload_printable);
    a->packet = r.get_bool(node, path, "packet", a->packet);
    // Suricata 7 also takes a map here ({app-layer, flow, rule: {...}}): read as yes.
    const YAML::Node metadata = Reader::value(node, "metadata");
    if (metadata.IsDefined() && metadata.IsMap()) {
        r.warn_once(path + ".metadata: its sub-options are not supported by Picket; read as yes");
        a->metadata = true;
    } else {
        a->metadata = r.get_bool(node, path, "metadata", a->metadata);
    }
    a->http_body = r.get_bool(node, path, "http-body", a->http_body);
    a->http_body_printable = r.get_bool(node, path, "http-body-printable", a->http_body_printable);
    a->tagged_packets = r.get_bool(node, path, "tagged-packets", a->tagged_packets);
    if (Reader::value(node, "verdict").IsDefined()) {
        a->verdict = r.get_bool(node, path, "verdict", false);
        a->verdict_set = true;
    }
    const YAML::Node xff = Reader::value(node, "xff");
    if (xff.IsDefined()) {
        read_xff(r, xff, path + ".xff", a);
    }
    if (Reader::value(node, "enabled").IsDefined()) {
        return r.get_bool(node, path, "enabled", true);
    }
    return std::nullopt;
}

// One type's options; returns whether the type is on (its `enabled`, default yes).
bool read_type(Reader& r, std::string_view name, const YAML::Node& node, const std::string& path,
               output::EveConfig* e) {
    if (name == "alert") {
        return read_alert(r, node, path, &e->alert).value_or(true);
    }
    if (name == "anomaly") {
        r.check_keys(node, path, {"enabled", "types", "packethdr"});
        const YAML::Node types = Reader::value(node, "types");
        const std::string tpath = path + ".types";
        r.check_keys(types, tpath, {"decode", "stream", "applayer"});
        auto& an = e->anomaly;
        an.decode = r.get_bool(types, tpath, "decode", an.decode);
        an.stream = r.get_bool(types, tpath, "stream", an.stream);
        an.applayer = r.get_bool(types, tpath, "applayer", an.applayer);
        an.packethdr = r.get_bool(node, path, "packethdr", an.packethdr);
        if (an.packethdr) {
            r.warn_once(path + ".packethdr: not written by Picket yet; ignored");
        }
    } else if (name == "http") {
        r.check_keys(node, path, {"enabled", "extended", "dump-all-headers"}, {"custom"});
        e->http.extended = r.get_bool(node, path, "extended", e->http.extended);
        const std::string dump = r.get_choice(node, path, "dump-all-headers", "none",
                                              {"none", "request", "response", "both"});
        e->http.dump_request_headers = dump == "request" || dump == "both";
        e->http.dump_response_headers = dump == "response" || dump == "both";
    } else if (name == "dns") {
        r.check_keys(node, path, {"enabled", "version", "requests", "responses", "formats"},
                     {"types"});
        auto& d = e->dns;
        const YAML::Node version = Reader::value(node, "version");
        if (version.IsDefined()) {
            if (!version.IsScalar() || (version.Scalar() != "2" && version.Scalar() != "3")) {
                r.fail(path + ".version", "expected 2 or 3, got '" + Reader::text(version) + "'");
            }
            d.version = version.Scalar() == "2" ? 2 : 3;
        }
        d.requests = r.get_bool(node, path, "requests", d.requests);
        d.responses = r.get_bool(node, path, "responses", d.responses);
        if (Reader::value(node, "formats").IsDefined()) {
            const auto formats =
                r.get_words(node, path, "formats", "format", {"detailed", "grouped"});
            d.detailed = contains(formats, "detailed");
            d.grouped = contains(formats, "grouped");
        }
    } else if (name == "tls") {
        r.check_keys(node, path, {"enabled", "extended", "ja3", "ja3s"},
                     {"custom", "session-resumption"});
        e->tls.extended = r.get_bool(node, path, "extended", e->tls.extended);
        e->tls.ja3 = r.get_bool(node, path, "ja3", e->tls.ja3);
        e->tls.ja3s = r.get_bool(node, path, "ja3s", e->tls.ja3s);
    } else if (name == "ssh" || name == "ftp") {
        r.check_keys(node, path, {"enabled"});
    } else if (name == "files") {
        r.check_keys(node, path, {"enabled", "force-magic", "force-hash"});
        auto& f = e->files;
        f.magic = r.get_bool(node, path, "force-magic", f.magic);
        if (Reader::value(node, "force-hash").IsDefined()) {
            const auto hashes =
                r.get_words(node, path, "force-hash", "hash", {"md5", "sha1", "sha256"});
            f.md5 = contains(hashes, "md5");
            f.sha1 = contains(hashes, "sha1");
            f.sha256 = contains(hashes, "sha256");
        }
    } else if (name == "drop") {
        read_drop(r, node, path, e);
    } else if (name == "flow") {
        r.check_keys(node, path, {"enabled"});
    } else {  // stats
        r.check_keys(node, path, {"enabled", "totals", "threads", "deltas"});
        e->stats.totals = r.get_bool(node, path, "totals", e->stats.totals);
        e->stats.threads = r.get_bool(node, path, "threads", e->stats.threads);
        e->stats.deltas = r.get_bool(node, path, "deltas", e->stats.deltas);
        if (e->stats.threads || e->stats.deltas || !e->stats.totals) {
            r.warn_once(path +
                        ": threads, deltas and totals: no are not supported by Picket; "
                        "the record holds the totals");
        }
    }
    return r.get_bool(node, path, "enabled", true);
}

bool* type_flag(output::EveTypes* t, std::string_view name) {
    if (name == "alert") {
        return &t->alert;
    }
    if (name == "anomaly") {
        return &t->anomaly;
    }
    if (name == "http") {
        return &t->http;
    }
    if (name == "dns") {
        return &t->dns;
    }
    if (name == "tls") {
        return &t->tls;
    }
    if (name == "ssh") {
        return &t->ssh;
    }
    if (name == "ftp") {
        return &t->ftp;
    }
    if (name == "files") {
        return &t->files;
    }
    if (name == "drop") {
        return &t->drop;
    }
    if (name == "flow") {
        return &t->flow;
    }
    return &t->stats;
}

// types: a list: what it names is on, everything else off (Suricata's semantics). A null
// `types:` (every entry commented out) is an empty list.
void read_types(Reader& r, const YAML::Node& node, const std::string& path, output::EveConfig* e) {
    if (node.IsDefined() && !node.IsNull() && !node.IsSequence()) {
        r.fail(path, "expected a list of types (- alert, - http: {extended: yes}, ...)");
    }
    for (std::string_view t : kTypes) {
        *type_flag(&e->types, t) = false;  // every type, however many EveTypes has
    }
    if (!node.IsDefined() || node.IsNull()) {
        return;
    }
    for (size_t i = 0; i < node.size(); ++i) {
        auto [name, options] = list_entry(r, node[i], path, i, "- flow or - http: {extended: yes}");
        if (contains(kTypes, name)) {
            *type_flag(&e->types, name) = read_type(r, name, options, path + "." + name, e);
        } else if (contains(kSuricataOnlyTypes, name)) {
            r.warn_once(path + ": '" + name + "' is not supported by Picket; ignored");
        } else {
            r.fail(path, "unknown type '" + name + "' (known: " + join(kTypes) + ")");
        }
    }
}

// An eve-log section (list layout) or outputs.eve (map layout, legacy: true, which adds the
// `alert` map of alert options and the `drop` map of drop record options).
void read_eve_log(Reader& r, const YAML::Node& node, const std::string& path, bool legacy,
                  output::EveConfig* e) {
    const Names known = {
        "enabled",  "filetype",          "filename", "facility",     "level",
        "identity", "syslog-socket",     "redis",    "community-id", "community-id-seed",
        "ethernet", "record-queue-size", "xff",      "types"};
    const Names known_legacy = {"enabled",
                                "filetype",
                                "filename",
                                "facility",
                                "level",
                                "identity",
                                "syslog-socket",
                                "redis",
                                "community-id",
                                "community-id-seed",
                                "ethernet",
                                "record-queue-size",
                                "xff",
                                "types",
                                "alert",
                                "drop",
                                "dns"};
    r.check_keys(node, path, legacy ? known_legacy : known,
                 {"threaded", "prefix", "pcap-file", "metadata"});
    e->enabled = r.get_bool(node, path, "enabled", true);

    auto& sink = e->sink;
    const std::string filetype =
        r.get_choice(node, path, "filetype", "regular",
                     {"regular", "file", "unix_stream", "unix_dgram", "syslog", "redis"});
    sink.filetype = filetype == "unix_stream"  ? output::EveFiletype::kUnixStream
                    : filetype == "unix_dgram" ? output::EveFiletype::kUnixDgram
                    : filetype == "syslog"     ? output::EveFiletype::kSyslog
                    : filetype == "redis"      ? output::EveFiletype::kRedis
                                               : output::EveFiletype::kRegular;
    sink.filename = r.get_string(node, path, "filename", sink.filename);
    if (sink.filename.empty()) {
        r.fail(path + ".filename", "must not be empty");
    }

    // Syslog, with the names Suricata accepts (facility as syslog.conf spells it; level case
    // does not matter, kept in Suricata's spelling).
    auto& sl = sink.syslog;
    sl.facility = lower(r.get_string(node, path, "facility", sl.facility));
    const Names facilities = {"auth",   "authpriv", "cron",   "daemon", "ftp",
                              "kern",   "lpr",      "mail",   "news",   "syslog",
                              "user",   "uucp",     "local0", "local1", "local2",
                              "local3", "local4",   "local5", "local6", "local7"};
    if (!contains(facilities, sl.facility)) {
        r.fail(path + ".facility",
               "expected one of " + join(facilities) + ", got '" + sl.facility + "'");
    }
    const std::string level = r.get_string(node, path, "level", sl.level);
    const Names levels = {"Emergency", "Alert",  "Critical", "Error",
                          "Warning",   "Notice", "Info",     "Debug"};
    bool level_ok = false;
    for (std::string_view l : levels) {
        if (lower(std::string(l)) == lower(level)) {
            sl.level = std::string(l);
            level_ok = true;
        }
    }
    if (!level_ok) {
        r.fail(path + ".level", "expected one of " + join(levels) + ", got '" + level + "'");
    }
    sl.identity = r.get_string(node, path, "identity", sl.identity);
    sl.socket = r.get_string(node, path, "syslog-socket", sl.socket);

    const YAML::Node redis = Reader::value(node, "redis");
    const std::string rpath = path + ".redis";
    r.check_keys(redis, rpath, {"server", "port", "mode", "key"}, {"async", "pipelining"});
    auto& rd = sink.redis;
    rd.server = r.get_string(redis, rpath, "server", rd.server);
    rd.port = static_cast<uint16_t>(r.get_int(redis, rpath, "port", rd.port, 1, 65535));
    const std::string mode = r.get_choice(redis, rpath, "mode", "list",
                                          {"list", "lpush", "rpush", "channel", "publish"});
    rd.mode = mode == "rpush"                          ? output::RedisOptions::Mode::kRpush
              : mode == "channel" || mode == "publish" ? output::RedisOptions::Mode::kPublish
                                                       : output::RedisOptions::Mode::kLpush;
    rd.key = r.get_string(redis, rpath, "key", rd.key);
    if (rd.key.empty()) {
        r.fail(rpath + ".key", "must name a list or channel");
    }

    e->community_id = r.get_bool(node, path, "community-id", e->community_id);
    e->community_id_seed = static_cast<uint16_t>(
        r.get_int(node, path, "community-id-seed", e->community_id_seed, 0, 65535));
    e->ethernet = r.get_bool(node, path, "ethernet", e->ethernet);
    e->record_queue_bytes = r.get_size(node, path, "record-queue-size", e->record_queue_bytes);
    if (e->record_queue_bytes < (64u << 10)) {
        r.fail(path + ".record-queue-size",
               "must be at least 64kb (each worker's buffer holds whole records)");
    }

    // Order matters: eve-log.xff, then types (types.alert.xff replaces it), then Picket's
    // alert map, which the compat runner's --set outputs.eve.alert.* overrides go to.
    const YAML::Node xff = Reader::value(node, "xff");
    if (xff.IsDefined()) {
        read_xff(r, xff, path + ".xff", &e->alert);
    }
    const YAML::Node types = Reader::value(node, "types");
    if (types.IsDefined() || (node.IsMap() && node["types"].IsDefined())) {
        read_types(r, types, path + ".types", e);
    }
    if (legacy) {
        const std::optional<bool> on =
            read_alert(r, Reader::value(node, "alert"), path + ".alert", &e->alert);
        if (on) {
            e->types.alert = *on;
        }
        const YAML::Node drop = Reader::value(node, "drop");
        if (drop.IsDefined()) {
            read_drop(r, drop, path + ".drop", e);
        }
        // outputs.eve.dns: the dns type's options ({version: 3, ...}), as `- dns:` takes them.
        const YAML::Node dns = Reader::value(node, "dns");
        if (dns.IsDefined()) {
            e->types.dns = read_type(r, "dns", dns, path + ".dns", e);
        }
    }
}

// Suricata's list of outputs: checks the entries' shape and returns the options of `name`
// (undefined when absent). Only one entry of each name Picket reads is allowed.
YAML::Node find_output(Reader& r, const YAML::Node& outputs, std::string_view name, bool* found) {
    *found = false;
    YAML::Node options(YAML::NodeType::Undefined);
    for (size_t i = 0; i < outputs.size(); ++i) {
        auto [entry, opts] =
            list_entry(r, outputs[i], "outputs", i, "- eve-log: {enabled: yes, ...}");
        if (entry != name) {
            continue;
        }
        if (*found) {
            r.fail("outputs[" + std::to_string(i) + "]",
                   "a second '" + entry + "' output: Picket supports one " + entry + " output");
        }
        *found = true;
        options = opts;
    }
    return options;
}

// The outputs node: undefined when there is none (or it is null), else a list or a map.
YAML::Node outputs_node(const Reader& r, const Config& c) {
    const YAML::Node& root = c.root();
    if (!root.IsMap()) {
        return YAML::Node(YAML::NodeType::Undefined);
    }
    YAML::Node outputs = root["outputs"];
    if (!outputs.IsDefined() || outputs.IsNull()) {
        return YAML::Node(YAML::NodeType::Undefined);
    }
    if (!outputs.IsSequence() && !outputs.IsMap()) {
        r.fail("outputs",
               "expected Suricata's list (- eve-log: {...}, - fast: {...}) or a map (eve: "
               "{...}, fast: {...})");
    }
    return outputs;
}

}  // namespace

output::EveConfig read_eve_config(const Config& c, bool ips) {
    Reader r(c);
    output::EveConfig e;
    const YAML::Node outputs = outputs_node(r, c);
    if (outputs.IsDefined() && outputs.IsSequence()) {
        bool found = false;
        const YAML::Node eve = find_output(r, outputs, "eve-log", &found);
        for (size_t i = 0; i < outputs.size(); ++i) {
            const std::string name =
                list_entry(r, outputs[i], "outputs", i, "- eve-log: {enabled: yes, ...}").first;
            if (name != "eve-log" && name != "fast") {
                r.warn_once("outputs: '" + name + "' is not supported by Picket; ignored");
            }
        }
        if (found) {
            read_eve_log(r, eve, "outputs.eve-log", false, &e);
        } else {
            e.enabled = false;  // Suricata writes no EVE without an eve-log output
        }
    } else if (outputs.IsDefined()) {
        // value(): an outputs map without eve (or outputs a scalar) reads as the defaults; a
        // const operator[] would hand back an invalid node that throws YAML::InvalidNode
        // (found by tests/fuzz/config_fuzz).
        read_eve_log(r, Reader::value(outputs, "eve"), "outputs.eve", true, &e);
    }
    if (!e.alert.verdict_set) {
        e.alert.verdict = ips;
    }
    return e;
}

FastLogConfig read_fast_log_config(const Config& c) {
    Reader r(c);
    FastLogConfig f;
    const YAML::Node outputs = outputs_node(r, c);
    if (outputs.IsDefined() && outputs.IsSequence()) {
        bool found = false;
        const YAML::Node fast = find_output(r, outputs, "fast", &found);
        r.check_keys(fast, "outputs.fast", {"enabled", "filename"}, {"append", "filetype"});
        f.enabled = found && r.get_bool(fast, "outputs.fast", "enabled", true);
        f.filename = r.get_string(fast, "outputs.fast", "filename", f.filename);
    } else {
        f.enabled = c.get_bool("outputs.fast.enabled", true);
        f.filename = c.get_string("outputs.fast.filename", "fast.log");
    }
    if (f.filename.empty()) {
        throw ConfigError(c.source() + ": outputs.fast.filename: must not be empty");
    }
    return f;
}

}  // namespace picket::sensor::engine
