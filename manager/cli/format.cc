// Output formatting for picketctl: aligned tables and JSON documents from FleetAdmin responses.
#include "manager/cli/picketctl.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <map>

#include "common/strings.h"
#include "google/protobuf/descriptor.h"

namespace picket::manager::cli {

namespace v1 = picket::v1;
using nlohmann::json;

namespace {

json time_json(int64_t unix_ns) {
    if (unix_ns == 0) {
        return nullptr;
    }
    return format_time(unix_ns);
}

json bundle_ref_json(const v1::BundleRef& ref) {
    return json{{"name", ref.name()}, {"version", ref.version()}, {"sha256", ref.sha256()}};
}

json labels_json(const google::protobuf::Map<std::string, std::string>& labels) {
    json out = json::object();
    for (const auto& [k, v] : labels) {
        out[k] = v;
    }
    return out;
}

// Sorted "k=v,k=v" ("-" when empty); protobuf maps iterate in no defined order.
std::string labels_text(const google::protobuf::Map<std::string, std::string>& labels) {
    std::map<std::string, std::string> sorted(labels.begin(), labels.end());
    std::vector<std::string> pairs;
    for (const auto& [k, v] : sorted) {
        pairs.push_back(k + "=" + v);
    }
    return pairs.empty() ? "-" : strings::join(pairs, ",");
}

std::string or_dash(const std::string& s) {
    return s.empty() ? "-" : s;
}

std::string version_text(uint64_t version) {
    return version == 0 ? "-" : std::to_string(version);
}

std::string short_sha(const std::string& sha) {
    return sha.empty() ? "-" : sha.substr(0, 12);
}

// "key:  value" lines with the keys padded to the longest.
std::string render_fields(const std::vector<std::pair<std::string, std::string>>& fields) {
    size_t width = 0;
    for (const auto& f : fields) {
        width = std::max(width, f.first.size());
    }
    std::string out;
    for (const auto& [k, v] : fields) {
        out += k + ":" + std::string(width - k.size() + 2, ' ') + v + "\n";
    }
    return out;
}

json sensor_entry_json(const v1::Sensor& s) {
    return json{
        {"name", s.name()},
        {"connected", s.connected()},
        {"version", s.bundle().version()},
        {"labels", labels_json(s.labels())},
        {"bundle", bundle_ref_json(s.bundle())},
        {"host", s.host()},
        {"sensor_version", s.version()},
        {"capture_mode", capture_mode_name(s.capture_mode())},
        {"capture_source", s.capture_source()},
        {"workers", s.workers()},
        {"ips_mode", s.ips_mode()},
        {"peer", s.peer()},
        {"first_seen", time_json(s.first_seen())},
        {"last_seen", time_json(s.last_seen())},
        {"revoked", s.revoked()},
        {"revoked_at", time_json(s.revoked_at())},
    };
}

json manifest_json(const v1::Manifest& m) {
    json files = json::array();
    for (const v1::FileEntry& f : m.files()) {
        files.push_back(json{{"path", f.path()}, {"sha256", f.sha256()}, {"size", f.size()}});
    }
    return json{
        {"name", m.name()},     {"version", m.version()}, {"parent_version", m.parent_version()},
        {"author", m.author()}, {"message", m.message()}, {"created_at", time_json(m.created_at())},
        {"files", files}};
}

json rule_diff_json(const v1::RuleDiff& r) {
    return json{{"gid", r.gid()},
                {"sid", r.sid()},
                {"file", r.file()},
                {"old_text", r.old_text()},
                {"new_text", r.new_text()},
                {"old_enabled", r.old_enabled()},
                {"new_enabled", r.new_enabled()}};
}

json target_json(const v1::DeploymentTarget& t) {
    return json{{"sensor", t.sensor()},
                {"state", target_state_name(t.state())},
                {"version", t.version()},
                {"error", t.error()},
                {"previous_version", t.previous_version()},
                {"canary", t.canary()},
                {"sent_at", time_json(t.sent_at())},
                {"finished_at", time_json(t.finished_at())},
                {"rules_loaded", t.rules_loaded()},
                {"rules_skipped", t.rules_skipped()},
                {"compile_ms", t.compile_ms()}};
}

// "10.0.0.1:1234", "[2001:db8::1]:443"; the bare address when `with_port` is false.
std::string endpoint_text(const std::string& ip, uint32_t port, bool with_port) {
    if (!with_port) {
        return or_dash(ip);
    }
    const bool v6 = ip.find(':') != std::string::npos;
    return (v6 ? "[" + ip + "]" : or_dash(ip)) + ":" + std::to_string(port);
}

std::string first_line(const std::string& s) {
    size_t nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl) + " ...";
}

// The printed name of a protobuf enum value: its name without the enum's prefix, in lowercase
// (TARGET_STATE_TIMED_OUT -> "timed_out"); "unspecified" for a number the enum does not have.
// The prefix is that of the enum's 0 value, X_UNSPECIFIED.
template <typename E>
std::string_view enum_name(E value) {
    static const std::map<int, std::string> kNames = [] {
        const google::protobuf::EnumDescriptor* d = google::protobuf::GetEnumDescriptor<E>();
        const std::string zero(d->FindValueByNumber(0)->name());
        const size_t prefix = zero.size() - std::string_view("UNSPECIFIED").size();
        std::map<int, std::string> names;
        for (int i = 0; i < d->value_count(); ++i) {
            std::string name(d->value(i)->name());
            name.erase(0, prefix);
            std::transform(name.begin(), name.end(), name.begin(),
                           [](unsigned char c) { return std::tolower(c); });
            names.emplace(d->value(i)->number(), std::move(name));
        }
        return names;
    }();
    auto it = kNames.find(static_cast<int>(value));
    return it == kNames.end() ? std::string_view("unspecified") : std::string_view(it->second);
}

}  // namespace

// ---------------------------------------------------------------------------------------

std::string_view target_state_name(v1::TargetState state) {
    return enum_name(state);
}

std::string_view deployment_state_name(v1::DeploymentState state) {
    return enum_name(state);
}

std::string_view deployment_kind_name(v1::DeploymentKind kind) {
    return enum_name(kind);
}

std::string_view capture_mode_name(v1::CaptureMode mode) {
    return enum_name(mode);
}

std::string_view change_kind_name(v1::ChangeKind kind) {
    return enum_name(kind);
}

std::string_view alert_action_name(v1::AlertAction action) {
    return enum_name(action);
}

std::string format_time(int64_t unix_ns) {
    if (unix_ns == 0) {
        return "-";
    }
    int64_t secs = unix_ns / 1000000000;
    if (unix_ns < 0 && unix_ns % 1000000000 != 0) {
        --secs;  // floor, so that the printed second is the one the instant falls in
    }
    time_t t = static_cast<time_t>(secs);
    tm utc{};
    gmtime_r(&t, &utc);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buf;
}

std::string format_bundle_ref(const v1::BundleRef& ref) {
    if (ref.version() == 0) {
        return "-";
    }
    return (ref.name().empty() ? std::string("?") : ref.name()) + "@" +
           std::to_string(ref.version());
}

std::string format_bytes(uint64_t bytes) {
    static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) {
        return std::to_string(bytes) + " B";
    }
    double v = static_cast<double>(bytes);
    size_t unit = 0;
    while (v >= 1024 && unit + 1 < std::size(kUnits)) {
        v /= 1024;
        ++unit;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
    return buf;
}

std::string render_table(const std::vector<std::string>& header,
                         const std::vector<std::vector<std::string>>& rows) {
    size_t ncols = header.size();
    for (const auto& r : rows) {
        ncols = std::max(ncols, r.size());
    }
    std::vector<size_t> width(ncols, 0);
    auto measure = [&](const std::vector<std::string>& row) {
        for (size_t i = 0; i < row.size(); ++i) {
            width[i] = std::max(width[i], row[i].size());
        }
    };
    measure(header);
    for (const auto& r : rows) {
        measure(r);
    }
    std::string out;
    auto emit = [&](const std::vector<std::string>& row) {
        std::string line;
        for (size_t i = 0; i < ncols; ++i) {
            const std::string cell = i < row.size() ? row[i] : std::string();
            line += cell;
            if (i + 1 < ncols) {
                line += std::string(width[i] - cell.size() + 2, ' ');
            }
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out += line + "\n";
    };
    emit(header);
    for (const auto& r : rows) {
        emit(r);
    }
    return out;
}

bool target_final(v1::TargetState state) {
    return state == v1::TARGET_STATE_APPLIED || state == v1::TARGET_STATE_REJECTED ||
           state == v1::TARGET_STATE_TIMED_OUT || state == v1::TARGET_STATE_CANCELLED;
}

bool deployment_final(const v1::Deployment& d) {
    if (d.state() == v1::DEPLOYMENT_STATE_SUCCEEDED || d.state() == v1::DEPLOYMENT_STATE_FAILED ||
        d.state() == v1::DEPLOYMENT_STATE_ROLLED_BACK ||
        d.state() == v1::DEPLOYMENT_STATE_SUPERSEDED) {
        return true;
    }
    return std::all_of(d.targets().begin(), d.targets().end(),
                       [](const v1::DeploymentTarget& t) { return target_final(t.state()); });
}

bool deployment_all_applied(const v1::Deployment& d) {
    return d.targets_size() > 0 &&
           std::all_of(d.targets().begin(), d.targets().end(), [](const v1::DeploymentTarget& t) {
               return t.state() == v1::TARGET_STATE_APPLIED;
           });
}

// ---------------------------------------------------------------------------------------

json sensors_json(const v1::ListSensorsResponse& response) {
    json out = json::array();
    for (const v1::Sensor& s : response.sensors()) {
        out.push_back(sensor_entry_json(s));
    }
    return out;
}

std::string sensors_text(const v1::ListSensorsResponse& response) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::Sensor& s : response.sensors()) {
        // A revoked sensor is never connected: the column says why it cannot be.
        std::string connected = s.revoked() ? "revoked" : (s.connected() ? "yes" : "no");
        rows.push_back({s.name(), connected, format_bundle_ref(s.bundle()),
                        s.ips_mode() ? "ips" : "ids", or_dash(s.host()), labels_text(s.labels()),
                        format_time(s.last_seen())});
    }
    return render_table({"NAME", "CONNECTED", "BUNDLE", "MODE", "HOST", "LABELS", "LAST SEEN"},
                        rows);
}

json revoke_json(const v1::RevokeSensorResponse& response) {
    return json{{"name", response.sensor().name()},
                {"revoked_now", response.revoked_now()},
                {"disconnected", response.disconnected()},
                {"revoked_at", time_json(response.sensor().revoked_at())}};
}

std::string revoke_text(const v1::RevokeSensorResponse& response) {
    const std::string& name = response.sensor().name();
    if (!response.revoked_now()) {
        return "sensor " + name + " was already revoked (at " +
               format_time(response.sensor().revoked_at()) + ")\n";
    }
    return "revoked sensor " + name +
           (response.disconnected() ? " (its stream was closed)" : " (it was not connected)") +
           "; re-enroll it with: picket-manager --db DB --enroll " + name + "\n";
}

json sensor_json(const v1::GetSensorResponse& response) {
    json out = sensor_entry_json(response.sensor());
    json counters = json::object();
    for (const auto& [k, v] : response.counters()) {
        counters[k] = v;
    }
    out["counters"] = counters;
    out["counters_timestamp"] = time_json(response.counters_timestamp());
    json workers = json::array();
    for (const v1::WorkerMetrics& w : response.workers()) {
        workers.push_back(
            json{{"worker", w.worker()}, {"packets", w.packets()}, {"bytes", w.bytes()}});
    }
    out["workers_metrics"] = workers;
    return out;
}

std::string sensor_text(const v1::GetSensorResponse& response) {
    const v1::Sensor& s = response.sensor();
    std::string capture = std::string(capture_mode_name(s.capture_mode()));
    if (!s.capture_source().empty()) {
        capture += " " + s.capture_source();
    }
    std::string out = render_fields({
        {"name", s.name()},
        {"connected", s.connected() ? "yes" : "no"},
        {"revoked", s.revoked() ? format_time(s.revoked_at()) : "no"},
        {"bundle",
         format_bundle_ref(s.bundle()) +
             (s.bundle().sha256().empty() ? "" : " (" + short_sha(s.bundle().sha256()) + ")")},
        {"host", or_dash(s.host())},
        {"peer", or_dash(s.peer())},
        {"sensor version", or_dash(s.version())},
        {"mode", s.ips_mode() ? "ips (inline)" : "ids (passive)"},
        {"capture", capture},
        {"workers", std::to_string(s.workers())},
        {"labels", labels_text(s.labels())},
        {"first seen", format_time(s.first_seen())},
        {"last seen", format_time(s.last_seen())},
        {"counters at", format_time(response.counters_timestamp())},
    });
    if (!response.counters().empty()) {
        std::map<std::string, uint64_t> sorted(response.counters().begin(),
                                               response.counters().end());
        std::vector<std::vector<std::string>> rows;
        for (const auto& [k, v] : sorted) {
            rows.push_back({k, std::to_string(v)});
        }
        out += "\n" + render_table({"COUNTER", "VALUE"}, rows);
    }
    if (!response.workers().empty()) {
        std::vector<std::vector<std::string>> rows;
        for (const v1::WorkerMetrics& w : response.workers()) {
            rows.push_back({std::to_string(w.worker()), std::to_string(w.packets()),
                            std::to_string(w.bytes())});
        }
        out += "\n" + render_table({"WORKER", "PACKETS", "BYTES"}, rows);
    }
    return out;
}

json push_json(const v1::PushBundleResponse& response, const v1::Manifest& pushed) {
    return json{{"version", response.version()},
                {"sha256", response.sha256()},
                {"name", pushed.name()},
                {"files", pushed.files_size()}};
}

std::string push_text(const v1::PushBundleResponse& response, const v1::Manifest& pushed) {
    return "pushed " + pushed.name() + " as version " + std::to_string(response.version()) + " (" +
           std::to_string(pushed.files_size()) + " files, sha256 " + short_sha(response.sha256()) +
           ")\n";
}

json bundle_summary_json(const v1::BundleSummary& s) {
    json m = manifest_json(s.manifest());
    m.erase("files");
    return json{{"version", s.manifest().version()},
                {"name", s.manifest().name()},
                {"manifest", m},
                {"sha256", s.sha256()},
                {"signed", s.signed_()},
                {"signing_key_id", s.signing_key_id()},
                {"total_bytes", s.total_bytes()},
                {"rule_files", s.rule_files()},
                {"pushed_at", time_json(s.pushed_at())}};
}

json bundles_json(const v1::ListBundlesResponse& response) {
    json out = json::array();
    for (const v1::BundleSummary& s : response.bundles()) {
        out.push_back(bundle_summary_json(s));
    }
    return out;
}

std::string bundles_text(const v1::ListBundlesResponse& response) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::BundleSummary& s : response.bundles()) {
        const v1::Manifest& m = s.manifest();
        rows.push_back({std::to_string(m.version()), m.name(), short_sha(s.sha256()),
                        s.signed_() ? "yes" : "no", std::to_string(s.rule_files()),
                        format_bytes(s.total_bytes()), format_time(s.pushed_at()),
                        or_dash(m.author()), first_line(m.message())});
    }
    return render_table({"VERSION", "NAME", "SHA256", "SIGNED", "RULE FILES", "SIZE", "PUSHED",
                         "AUTHOR", "MESSAGE"},
                        rows);
}

json bundle_json(const v1::GetBundleResponse& response) {
    json out = bundle_summary_json(response.summary());
    out["manifest"] = manifest_json(response.bundle().manifest());
    return out;
}

std::string bundle_text(const v1::GetBundleResponse& response) {
    const v1::BundleSummary& s = response.summary();
    const v1::Manifest& m = response.bundle().manifest();
    std::string out = render_fields({
        {"version", std::to_string(s.manifest().version())},
        {"name", s.manifest().name()},
        {"sha256", or_dash(s.sha256())},
        {"parent", version_text(s.manifest().parent_version())},
        {"author", or_dash(s.manifest().author())},
        {"message", or_dash(s.manifest().message())},
        {"created", format_time(s.manifest().created_at())},
        {"pushed", format_time(s.pushed_at())},
        {"signed", s.signed_() ? "yes (key " + s.signing_key_id() + ")" : "no"},
        {"size", format_bytes(s.total_bytes()) + " in " + std::to_string(m.files_size()) +
                     " files (" + std::to_string(s.rule_files()) + " rules files)"},
    });
    std::vector<std::vector<std::string>> rows;
    for (const v1::FileEntry& f : m.files()) {
        rows.push_back({f.path(), std::to_string(f.size()), short_sha(f.sha256())});
    }
    out += "\n" + render_table({"FILE", "SIZE", "SHA256"}, rows);
    return out;
}

json diff_json(const v1::BundleDiff& diff) {
    auto rules = [](const auto& list) {
        json out = json::array();
        for (const v1::RuleDiff& r : list) {
            out.push_back(rule_diff_json(r));
        }
        return out;
    };
    json config = json::array();
    for (const v1::ConfigChange& c : diff.config_changes()) {
        config.push_back(json{{"file", c.file()},
                              {"key", c.key()},
                              {"kind", change_kind_name(c.kind())},
                              {"old_value", c.old_value()},
                              {"new_value", c.new_value()}});
    }
    json files = json::array();
    for (const v1::FileChange& f : diff.file_changes()) {
        files.push_back(json{{"path", f.path()},
                             {"kind", change_kind_name(f.kind())},
                             {"old_sha256", f.old_sha256()},
                             {"new_sha256", f.new_sha256()}});
    }
    return json{{"from_version", diff.from_version()},
                {"to_version", diff.to_version()},
                {"rules_added", rules(diff.rules_added())},
                {"rules_removed", rules(diff.rules_removed())},
                {"rules_changed", rules(diff.rules_changed())},
                {"config_changes", config},
                {"file_changes", files}};
}

std::string diff_text(const v1::BundleDiff& diff) {
    std::string out = "bundle " + std::to_string(diff.from_version()) + " -> " +
                      std::to_string(diff.to_version()) + ": " +
                      std::to_string(diff.rules_added_size()) + " rules added, " +
                      std::to_string(diff.rules_removed_size()) + " removed, " +
                      std::to_string(diff.rules_changed_size()) + " changed; " +
                      std::to_string(diff.config_changes_size()) + " config changes; " +
                      std::to_string(diff.file_changes_size()) + " files changed\n";
    auto rule_id = [](const v1::RuleDiff& r) {
        return std::to_string(r.gid()) + ":" + std::to_string(r.sid());
    };
    for (const v1::RuleDiff& r : diff.rules_added()) {
        out += "+ " + rule_id(r) + "  " + r.file() + (r.new_enabled() ? "" : " (disabled)") +
               "\n    " + r.new_text() + "\n";
    }
    for (const v1::RuleDiff& r : diff.rules_removed()) {
        out += "- " + rule_id(r) + "  " + r.file() + "\n    " + r.old_text() + "\n";
    }
    for (const v1::RuleDiff& r : diff.rules_changed()) {
        std::string note;
        if (r.old_enabled() != r.new_enabled()) {
            note = r.new_enabled() ? " (enabled)" : " (disabled)";
        }
        out += "~ " + rule_id(r) + "  " + r.file() + note + "\n";
        if (r.old_text() != r.new_text()) {
            out += "  - " + r.old_text() + "\n  + " + r.new_text() + "\n";
        }
    }
    if (!diff.config_changes().empty()) {
        std::vector<std::vector<std::string>> rows;
        for (const v1::ConfigChange& c : diff.config_changes()) {
            rows.push_back({std::string(change_kind_name(c.kind())), c.file(), c.key(),
                            or_dash(c.old_value()), or_dash(c.new_value())});
        }
        out += "\n" + render_table({"CONFIG", "FILE", "KEY", "OLD", "NEW"}, rows);
    }
    if (!diff.file_changes().empty()) {
        std::vector<std::vector<std::string>> rows;
        for (const v1::FileChange& f : diff.file_changes()) {
            rows.push_back({std::string(change_kind_name(f.kind())), f.path(),
                            short_sha(f.old_sha256()), short_sha(f.new_sha256())});
        }
        out += "\n" + render_table({"FILE CHANGE", "PATH", "OLD SHA256", "NEW SHA256"}, rows);
    }
    return out;
}

namespace {

json target_counts_json(const v1::TargetCounts& n) {
    return json{{"total", n.total()},        {"pending", n.pending()},
                {"sent", n.sent()},          {"applied", n.applied()},
                {"rejected", n.rejected()},  {"timed_out", n.timed_out()},
                {"cancelled", n.cancelled()}};
}

}  // namespace

json deployment_json(const v1::Deployment& d) {
    json targets = json::array();
    for (const v1::DeploymentTarget& t : d.targets()) {
        targets.push_back(target_json(t));
    }
    return json{{"deployment", d.id()},
                {"kind", deployment_kind_name(d.kind())},
                {"version", d.version()},
                {"selector", d.selector()},
                {"state", deployment_state_name(d.state())},
                {"message", d.message()},
                {"canary_percent", d.canary_percent()},
                {"soak_seconds", d.soak_seconds()},
                {"created_at", time_json(d.created_at())},
                {"finished_at", time_json(d.finished_at())},
                {"rollback_deployment", d.rollback_deployment_id()},
                {"rolls_back_deployment", d.rolls_back_deployment_id()},
                {"target_counts", target_counts_json(d.target_counts())},
                {"targets", targets}};
}

std::string deployment_text(const v1::Deployment& d) {
    std::vector<std::pair<std::string, std::string>> fields = {
        {"deployment", d.id()},
        {"kind", std::string(deployment_kind_name(d.kind()))},
        {"version", d.version() == 0 ? "per target" : std::to_string(d.version())},
        {"selector", d.selector()},
        {"state", std::string(deployment_state_name(d.state()))},
    };
    if (d.canary_percent() != 0) {
        fields.push_back({"canary", std::to_string(d.canary_percent()) + "%, soak " +
                                        std::to_string(d.soak_seconds()) + "s"});
    }
    if (!d.message().empty()) {
        fields.push_back({"message", d.message()});
    }
    fields.push_back({"created", format_time(d.created_at())});
    if (d.finished_at() != 0) {
        fields.push_back({"finished", format_time(d.finished_at())});
    }
    if (!d.rollback_deployment_id().empty()) {
        fields.push_back({"rolled back by", d.rollback_deployment_id()});
    }
    if (!d.rolls_back_deployment_id().empty()) {
        fields.push_back({"rolls back", d.rolls_back_deployment_id()});
    }
    std::vector<std::vector<std::string>> rows;
    for (const v1::DeploymentTarget& t : d.targets()) {
        std::string detail = first_line(t.error());
        if (detail.empty() && t.state() == v1::TARGET_STATE_APPLIED) {
            detail = std::to_string(t.rules_loaded()) + " rules, " +
                     std::to_string(t.rules_skipped()) + " skipped, " +
                     std::to_string(t.compile_ms()) + " ms";
        }
        rows.push_back({t.sensor(), std::string(target_state_name(t.state())),
                        version_text(t.version()), version_text(t.previous_version()),
                        t.canary() ? "yes" : "no", or_dash(detail)});
    }
    return render_fields(fields) + "\n" +
           render_table({"SENSOR", "STATE", "VERSION", "PREVIOUS", "CANARY", "DETAIL"}, rows);
}

json history_json(const v1::HistoryResponse& response) {
    json runs = json::array();
    for (const v1::RunPeriod& r : response.runs()) {
        runs.push_back(json{{"sensor", r.sensor()},
                            {"bundle", bundle_ref_json(r.bundle())},
                            {"version", r.bundle().version()},
                            {"started_at", time_json(r.started_at())},
                            {"ended_at", time_json(r.ended_at())},
                            {"packets", r.packets()},
                            {"bytes", r.bytes()},
                            {"drops", r.drops()},
                            {"alerts", r.alerts()},
                            {"deployment", r.deployment_id()}});
    }
    json deployments = json::array();
    for (const v1::Deployment& d : response.deployments()) {
        deployments.push_back(deployment_json(d));
    }
    return json{{"runs", runs}, {"deployments", deployments}};
}

std::string history_text(const v1::HistoryResponse& response) {
    std::vector<std::vector<std::string>> runs;
    for (const v1::RunPeriod& r : response.runs()) {
        runs.push_back({r.sensor(), format_bundle_ref(r.bundle()), format_time(r.started_at()),
                        r.ended_at() == 0 ? "running" : format_time(r.ended_at()),
                        std::to_string(r.packets()), std::to_string(r.drops()),
                        std::to_string(r.alerts()), or_dash(r.deployment_id())});
    }
    std::vector<std::vector<std::string>> deps;
    for (const v1::Deployment& d : response.deployments()) {
        // Counted by the manager (the targets themselves are left out of a fleet's history).
        deps.push_back({d.id(), std::string(deployment_kind_name(d.kind())),
                        d.version() == 0 ? "per target" : std::to_string(d.version()), d.selector(),
                        std::string(deployment_state_name(d.state())),
                        std::to_string(d.target_counts().applied()) + "/" +
                            std::to_string(d.target_counts().total()),
                        format_time(d.created_at())});
    }
    return "Runs\n" +
           render_table(
               {"SENSOR", "BUNDLE", "STARTED", "ENDED", "PACKETS", "DROPS", "ALERTS", "DEPLOYMENT"},
               runs) +
           "\nDeployments\n" +
           render_table({"ID", "KIND", "VERSION", "SELECTOR", "STATE", "APPLIED", "CREATED"}, deps);
}

json alerts_json(const v1::ListAlertsResponse& response) {
    json alerts = json::array();
    for (const v1::AlertEntry& e : response.alerts()) {
        const v1::Alert& a = e.alert();
        alerts.push_back(json{{"sensor", e.sensor()},
                              {"time", time_json(a.timestamp())},
                              {"timestamp", a.timestamp()},
                              {"gid", a.gid()},
                              {"sid", a.sid()},
                              {"rev", a.rev()},
                              {"msg", a.msg()},
                              {"src_ip", a.src_ip()},
                              {"src_port", a.src_port()},
                              {"dst_ip", a.dst_ip()},
                              {"dst_port", a.dst_port()},
                              {"proto", a.proto()},
                              {"action", alert_action_name(a.action())},
                              {"severity", a.severity()},
                              {"bundle_version", a.bundle_version()}});
    }
    return json{{"alerts", alerts},
                {"total_received", response.total_received()},
                {"dropped_by_sensors", response.dropped_by_sensors()}};
}

std::string alerts_text(const v1::ListAlertsResponse& response) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::AlertEntry& e : response.alerts()) {
        const v1::Alert& a = e.alert();
        // Both ports 0 = a protocol without ports (ICMP): print the bare addresses.
        const bool ports = a.src_port() != 0 || a.dst_port() != 0;
        rows.push_back({format_time(a.timestamp()), e.sensor(),
                        std::to_string(a.sid()) + ":" + std::to_string(a.rev()),
                        std::string(alert_action_name(a.action())), or_dash(a.proto()),
                        endpoint_text(a.src_ip(), a.src_port(), ports) + " -> " +
                            endpoint_text(a.dst_ip(), a.dst_port(), ports),
                        first_line(a.msg())});
    }
    return render_table({"TIME", "SENSOR", "SID:REV", "ACTION", "PROTO", "SRC -> DST", "MSG"},
                        rows) +
           "\n" + std::to_string(response.alerts_size()) + " shown; " +
           std::to_string(response.total_received()) + " received since the manager started, " +
           std::to_string(response.dropped_by_sensors()) + " dropped by sensors\n";
}

// ---- bootstrap tokens and readmit

json bootstrap_token_json(const v1::BootstrapTokenInfo& t) {
    return json{{"id", t.id()},
                {"uses", t.uses()},
                {"used", t.used()},
                {"uses_left", t.uses() > t.used() ? t.uses() - t.used() : 0},
                {"expires_at", time_json(t.expires_at())},
                {"created_at", time_json(t.created_at())},
                {"revoked_at", time_json(t.revoked_at())},
                {"labels", labels_json(t.labels())},
                {"name_pattern", t.name_pattern()},
                {"state", t.state()},
                {"created_by", t.created_by()}};
}

json token_create_json(const v1::CreateBootstrapTokenResponse& response) {
    json out = bootstrap_token_json(response.info());
    out["token"] = response.token();
    return out;
}

// The token alone, so that `picketctl enroll token create > token` makes the sensor's file;
// --json has the details.
std::string token_create_text(const v1::CreateBootstrapTokenResponse& response) {
    return response.token() + "\n";
}

json tokens_json(const v1::ListBootstrapTokensResponse& response) {
    json list = json::array();
    for (const v1::BootstrapTokenInfo& t : response.tokens()) {
        list.push_back(bootstrap_token_json(t));
    }
    return json{{"tokens", list}};
}

std::string tokens_text(const v1::ListBootstrapTokensResponse& response) {
    std::vector<std::vector<std::string>> rows;
    for (const v1::BootstrapTokenInfo& t : response.tokens()) {
        rows.push_back({t.id(), t.state(),
                        std::to_string(t.used()) + "/" + std::to_string(t.uses()),
                        format_time(t.expires_at()), labels_text(t.labels()),
                        t.name_pattern().empty() ? "-" : t.name_pattern()});
    }
    return render_table({"ID", "STATE", "USED", "EXPIRES", "LABELS", "NAME PATTERN"}, rows);
}

json token_revoke_json(const v1::RevokeBootstrapTokenResponse& response) {
    json out = bootstrap_token_json(response.info());
    out["revoked_now"] = response.revoked_now();
    return out;
}

std::string token_revoke_text(const v1::RevokeBootstrapTokenResponse& response) {
    return (response.revoked_now() ? "revoked bootstrap token " : "bootstrap token ") +
           response.info().id() + (response.revoked_now() ? "" : " was already revoked") + " (" +
           std::to_string(response.info().used()) + " of " +
           std::to_string(response.info().uses()) + " uses spent)\n";
}

json readmit_json(const v1::ReadmitSensorResponse& response) {
    return json{{"name", response.sensor().name()}, {"readmitted_now", response.readmitted_now()}};
}

std::string readmit_text(const v1::ReadmitSensorResponse& response) {
    const std::string& name = response.sensor().name();
    if (!response.readmitted_now()) {
        return "sensor " + name + " was not revoked\n";
    }
    return "readmitted sensor " + name +
           ": it may enroll again (its revoked certificates stay refused)\n";
}

}  // namespace picket::manager::cli
