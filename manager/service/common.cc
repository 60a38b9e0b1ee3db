// LiveState, Hub, BundleCache, bundle blobs and argument checks.
#include <algorithm>

#include "absl/strings/escaping.h"
#include "common/bundle/bundle.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "manager/loopback.h"
#include "manager/service/internal.h"
#include "manager/service/service.h"

namespace picket::manager::service {

grpc::Status to_grpc(const absl::Status& status) {
    if (status.ok()) {
        return grpc::Status::OK;
    }
    // absl and gRPC share the canonical code numbers.
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                        std::string(status.message()));
}

// ---- Arguments

namespace {

std::string_view host_part(std::string_view address, bool* has_port) {
    for (std::string_view prefix : {"ipv4:", "ipv6:", "dns:///", "dns:"}) {
        if (address.substr(0, prefix.size()) == prefix) {
            address.remove_prefix(prefix.size());
            break;
        }
    }
    *has_port = false;
    if (!address.empty() && address.front() == '[') {
        size_t close = address.find(']');
        if (close == std::string_view::npos) {
            return {};
        }
        *has_port = address.size() > close + 2 && address[close + 1] == ':';
        return address.substr(1, close - 1);
    }
    size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) {
        return address;
    }
    if (address.find(':') != colon) {
        return address;  // bare IPv6 literal without brackets: no port
    }
    *has_port = colon + 1 < address.size();
    return address.substr(0, colon);
}

}  // namespace

bool is_loopback_address(std::string_view address) {
    bool has_port = false;
    return is_loopback_host(host_part(address, &has_port), /*lenient=*/false);
}

absl::Status validate_options(const ManagerOptions& o) {
    bool has_port = false;
    std::string_view host = host_part(o.listen, &has_port);
    if (o.listen.empty() || host.empty() || !has_port) {
        return absl::InvalidArgumentError("--listen '" + o.listen +
                                          "' is not HOST:PORT (e.g. 127.0.0.1:7443)");
    }
    if (o.target_timeout_seconds <= 0) {
        return absl::InvalidArgumentError("--target-timeout must be positive");
    }
    bool any_tls = !o.tls_cert_file.empty() || !o.tls_key_file.empty() || !o.client_ca_file.empty();
    if (o.insecure) {
        if (!is_loopback_address(o.listen)) {
            return absl::InvalidArgumentError(
                "--insecure is refused on a non-loopback address ('" + o.listen +
                "'): listen on 127.0.0.1, ::1 or localhost, or use TLS");
        }
        if (any_tls) {
            return absl::InvalidArgumentError(
                "--insecure cannot be combined with --tls-cert/--tls-key/--client-ca");
        }
        if (!o.ca_key_file.empty()) {
            return absl::InvalidArgumentError(
                "--ca-key (enrollment) needs TLS: it cannot be combined with --insecure");
        }
        return absl::OkStatus();
    }
    if (o.tls_cert_file.empty() || o.tls_key_file.empty() || o.client_ca_file.empty()) {
        return absl::InvalidArgumentError(
            "--tls-cert, --tls-key and --client-ca are required unless --insecure");
    }
    if (o.admin_token.empty()) {
        return absl::InvalidArgumentError(
            "an admin token (--admin-token-file) is required unless --insecure");
    }
    if (o.enroll_validity.count() < 1 || o.enroll_validity.count() > 3650LL * 86400) {
        return absl::InvalidArgumentError("--enroll-validity must be 1 second .. 3650 days");
    }
    return absl::OkStatus();
}

// ---- Bundle blobs

std::string bundle_blob(picket::v1::Bundle bundle) {
    bundle.mutable_manifest()->set_version(0);
    bundle.mutable_manifest()->set_parent_version(0);
    auto* files = bundle.mutable_files();
    std::sort(files->begin(), files->end(),
              [](const picket::v1::BundleFile& a, const picket::v1::BundleFile& b) {
                  return a.path() < b.path();
              });
    std::string out;
    {
        google::protobuf::io::StringOutputStream raw(&out);
        google::protobuf::io::CodedOutputStream coded(&raw);
        coded.SetSerializationDeterministic(true);
        bundle.SerializeToCodedStream(&coded);
    }
    return out;
}

absl::StatusOr<picket::v1::Bundle> bundle_from_blob(const std::string& blob) {
    picket::v1::Bundle b;
    if (!b.ParseFromString(blob)) {
        return absl::DataLossError("stored bundle blob does not parse");
    }
    return b;
}

picket::v1::BundleSummary summarize(const picket::v1::Bundle& bundle,
                                    const store::BundleInfo& info) {
    picket::v1::BundleSummary s;
    *s.mutable_manifest() = bundle.manifest();
    s.mutable_manifest()->set_version(static_cast<uint64_t>(info.version));
    s.mutable_manifest()->set_parent_version(static_cast<uint64_t>(info.parent_version));
    s.set_sha256(picket::bundle::bundle_sha256(bundle));
    s.set_signed_(!bundle.signature().empty());
    s.set_signing_key_id(bundle.signing_key_id());
    uint64_t total = 0;
    uint32_t rules = 0;
    for (const auto& f : bundle.manifest().files()) {
        total += f.size();
        const std::string& p = f.path();
        if (p.rfind(picket::bundle::kRulesDir.data(), 0) == 0 && p.size() > 6 &&
            p.compare(p.size() - 6, 6, ".rules") == 0) {
            ++rules;
        }
    }
    s.set_total_bytes(total);
    s.set_rule_files(rules);
    s.set_pushed_at(info.created_at);
    return s;
}

absl::StatusOr<picket::v1::BundleSummary> BundleCache::summary(int64_t version) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = cache_.find(version);
        if (it != cache_.end()) {
            return it->second;
        }
    }
    auto stored = store_.get_bundle(version, true);
    if (!stored.ok()) {
        return stored.status();
    }
    auto bundle = bundle_from_blob(stored->blob);
    if (!bundle.ok()) {
        return bundle.status();
    }
    picket::v1::BundleSummary s = summarize(*bundle, stored->info);
    std::lock_guard<std::mutex> lock(mu_);
    cache_[version] = s;
    return s;
}

picket::v1::BundleRef BundleCache::ref(int64_t version) {
    picket::v1::BundleRef r;
    r.set_version(static_cast<uint64_t>(version));
    if (version <= 0) {
        return r;
    }
    auto s = summary(version);
    if (s.ok()) {
        r.set_name(s->manifest().name());
        r.set_sha256(s->sha256());
    }
    return r;
}

// ---- Hub

std::shared_ptr<Session> Hub::replace(const std::string& name, std::shared_ptr<Session> s) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Session>& slot = sessions_[name];
    std::shared_ptr<Session> old = std::move(slot);
    slot = std::move(s);
    return old;
}

bool Hub::remove_if(const std::string& name, const std::shared_ptr<Session>& s) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(name);
    if (it == sessions_.end() || it->second != s) {
        return false;
    }
    sessions_.erase(it);
    if (sessions_.empty()) {
        empty_cv_.notify_all();
    }
    return true;
}

bool Hub::wait_empty(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return empty_cv_.wait_for(lock, limit, [this] { return sessions_.empty(); });
}

bool Hub::revoke(const std::string& name) {
    std::shared_ptr<Session> s;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = sessions_.find(name);
        if (it == sessions_.end()) {
            return false;
        }
        s = it->second;
    }
    s->cancel(/*revoked=*/true);
    return true;
}

std::vector<std::shared_ptr<Session>> Hub::snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<Session>> out;
    out.reserve(sessions_.size());
    for (auto& [name, s] : sessions_) {
        out.push_back(s);
    }
    return out;
}

void Hub::wake(const std::vector<std::string>& names) {
    std::vector<std::shared_ptr<Session>> woken;
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (const std::string& name : names) {
            auto it = sessions_.find(name);
            if (it != sessions_.end()) {
                woken.push_back(it->second);
            }
        }
    }
    for (const auto& s : woken) {
        s->wake();
    }
}

bool Hub::contains(const std::string& name) {
    std::lock_guard<std::mutex> lock(mu_);
    return sessions_.count(name) != 0;
}

bool Core::is_leader() const {
    return coordinator == nullptr || coordinator->is_leader();
}

void Core::publish(std::string_view kind, std::string_view payload) {
    if (coordinator != nullptr) {
        coordinator->publish(kind, payload);
    }
}

void Hub::cancel_all() {
    for (const auto& s : snapshot()) {
        s->cancel(/*revoked=*/false);
    }
}

// ---- LiveState

std::string report_boot(const picket::v1::Hello& hello) {
    if (!hello.boot_id().empty()) {
        return hello.boot_id();
    }
    std::string key = std::to_string(hello.started_at());
    key.insert(key.begin(), 't');  // (not "t" + ...: GCC 12's -Wrestrict false positive)
    return key;
}

void LiveState::on_hello(const std::string& sensor, const picket::v1::Hello& hello,
                         const std::string& peer) {
    std::lock_guard<std::mutex> lock(mu_);
    SensorLive& s = sensors_[sensor];
    std::string boot = report_boot(hello);
    if (boot != s.boot) {
        // A new process: its counters and report sequence start again from zero.
        s.boot = std::move(boot);
        s.started_at = hello.started_at();
        s.last_seq = 0;
        s.latest = {};
        s.workers.clear();
    }
    s.peer = peer;
    s.capture_source = hello.capture_source();
    s.ips_mode = hello.ips_mode();
    s.bundle_sha256 = hello.bundle().sha256();
}

void LiveState::on_running(const std::string& sensor, const std::string& bundle_sha256) {
    std::lock_guard<std::mutex> lock(mu_);
    sensors_[sensor].bundle_sha256 = bundle_sha256;
}

absl::Status check_metrics_report(const picket::v1::MetricsReport& report) {
    if (report.counters_size() > kMaxReportCounters) {
        return absl::InvalidArgumentError(
            "metrics report: " + std::to_string(report.counters_size()) +
            " counters, over the limit of " + std::to_string(kMaxReportCounters));
    }
    if (report.workers_size() > kMaxReportWorkers) {
        return absl::InvalidArgumentError(
            "metrics report: " + std::to_string(report.workers_size()) +
            " workers, over the limit of " + std::to_string(kMaxReportWorkers));
    }
    for (const auto& [name, value] : report.counters()) {
        bool ok = !name.empty() && name.size() <= 128 &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
                  });
        if (!ok) {
            return absl::InvalidArgumentError("metrics report: counter name '" +
                                              absl::CEscape(name.substr(0, 64)) +
                                              "' is not 1-128 of [A-Za-z0-9._-]");
        }
    }
    return absl::OkStatus();
}

bool LiveState::on_metrics(const std::string& sensor, const picket::v1::MetricsReport& report,
                           store::RunTotals* deltas, int64_t received_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    SensorLive& s = sensors_[sensor];
    *deltas = {};
    if (report.seq() != 0 && report.seq() <= s.last_seq) {
        return false;  // duplicate after a reconnect of the same process
    }
    auto value = [&](const std::map<std::string, uint64_t>& m, const char* name) -> uint64_t {
        auto it = m.find(name);
        return it == m.end() ? 0 : it->second;
    };
    std::map<std::string, uint64_t> now(report.counters().begin(), report.counters().end());
    bool have_base = s.latest.timestamp != 0;
    // A counter moves by about 1e9 per report at the most (100 Mpps for 10 s). A jump of more
    // than 2^40 (a counter at 2^64 - 1, garbage, a wrap) is taken as a reset: the value
    // becomes the new base and adds nothing, instead of 4.6e18 packets in the run history.
    // The bound also keeps a delta, and the sum of two (drops), a positive int64_t, which the
    // store requires (tests/fuzz/metrics_fuzz).
    constexpr uint64_t kMaxDelta = uint64_t{1} << 40;
    auto diff = [&](const char* name) -> int64_t {
        uint64_t cur = value(now, name);
        uint64_t d = 0;
        if (!have_base) {
            d = report.seq() == 1 ? cur : 0;
        } else {
            uint64_t before = value(s.latest.counters, name);
            d = cur >= before ? cur - before : cur;
        }
        return d > kMaxDelta ? 0 : static_cast<int64_t>(d);
    };
    deltas->packets = diff("decoder.pkts");
    deltas->bytes = diff("decoder.bytes");
    deltas->drops = diff("capture.kernel_drops") + diff("capture.queue_drops");
    deltas->alerts = diff("detect.alert");
    s.latest.timestamp = report.timestamp();
    s.received_at = received_ns;
    s.latest.counters = std::move(now);
    s.workers.assign(report.workers().begin(), report.workers().end());
    s.last_seq = report.seq();
    return true;
}

void LiveState::on_alerts(const std::string& sensor, const picket::v1::AlertBatch& batch) {
    std::lock_guard<std::mutex> lock(mu_);
    SensorLive& s = sensors_[sensor];
    s.alerts_received += static_cast<uint64_t>(batch.alerts_size());
    s.alerts_dropped += batch.dropped();
    for (const picket::v1::Alert& a : batch.alerts()) {
        if (ring_size_ == 0) {
            break;
        }
        if (alerts_.size() == ring_size_) {
            alerts_.pop_front();
        }
        alerts_.push_back({sensor, a, ++alert_seq_});
    }
}

void LiveState::on_apply(int64_t deployment_id, const std::string& sensor,
                         const ApplyStats& stats) {
    std::lock_guard<std::mutex> lock(mu_);
    apply_[{deployment_id, sensor}] = stats;
}

std::optional<LiveState::SensorLive> LiveState::sensor(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sensors_.find(name);
    if (it == sensors_.end()) {
        return std::nullopt;
    }
    return it->second;
}

std::optional<rollout::CounterSnapshot> LiveState::counters(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sensors_.find(name);
    if (it == sensors_.end() || it->second.latest.timestamp == 0) {
        return std::nullopt;
    }
    return it->second.latest;
}

std::map<std::string, LiveState::SensorLive> LiveState::all() const {
    std::lock_guard<std::mutex> lock(mu_);
    return sensors_;
}

std::vector<LiveState::RecentAlert> LiveState::recent_alerts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {alerts_.begin(), alerts_.end()};
}

std::optional<LiveState::ApplyStats> LiveState::apply_stats(int64_t deployment_id,
                                                            const std::string& sensor) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = apply_.find({deployment_id, sensor});
    if (it == apply_.end()) {
        return std::nullopt;
    }
    return it->second;
}

}  // namespace picket::manager::service
