#include "sensor/agent/agent.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "common/bundle/bundle.h"
#include "common/log.h"
#include "common/pki/pki.h"
#include "common/time_util.h"
#include "picket/v1/picket.grpc.pb.h"

namespace picket::sensor::agent {

namespace v1 = picket::v1;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------
// Option checks

namespace {

struct HostPort {
    std::string host;
    uint32_t port = 0;
};

absl::StatusOr<HostPort> split_host_port(std::string_view s) {
    const std::string what = "manager address '" + std::string(s) + "'";
    HostPort hp;
    std::string_view port;
    if (!s.empty() && s.front() == '[') {
        size_t close = s.find(']');
        if (close == std::string_view::npos || close + 1 >= s.size() || s[close + 1] != ':') {
            return absl::InvalidArgumentError(what + ": expected [IPV6]:PORT");
        }
        hp.host = std::string(s.substr(1, close - 1));
        port = s.substr(close + 2);
    } else {
        size_t colon = s.rfind(':');
        if (colon == std::string_view::npos || s.find(':') != colon) {
            return absl::InvalidArgumentError(what + ": expected HOST:PORT ([IPV6]:PORT)");
        }
        hp.host = std::string(s.substr(0, colon));
        port = s.substr(colon + 1);
    }
    if (hp.host.empty()) {
        return absl::InvalidArgumentError(what + ": empty host");
    }
    if (port.empty() || port.size() > 5 ||
        !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        return absl::InvalidArgumentError(what + ": port must be a number in 1..65535");
    }
    hp.port = static_cast<uint32_t>(std::stoul(std::string(port)));
    if (hp.port == 0 || hp.port > 65535) {
        return absl::InvalidArgumentError(what + ": port must be a number in 1..65535");
    }
    return hp;
}

bool valid_label_key(std::string_view k) {
    return !k.empty() && k.size() <= 64 && std::all_of(k.begin(), k.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
}

std::vector<std::string> split_lines(std::string_view text) {
    std::vector<std::string> out;
    std::istringstream in{std::string(text)};
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) {
            out.push_back(line);
        }
    }
    return out;
}

absl::StatusOr<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return absl::NotFoundError("cannot read " + path);
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string local_host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof(buf) - 1) != 0) {
        return "unknown";
    }
    return buf;
}

constexpr size_t kMaxNotes = 100;

void add_capped(google::protobuf::RepeatedPtrField<std::string>* out,
                const std::vector<std::string>& lines) {
    for (const auto& l : lines) {
        if (static_cast<size_t>(out->size()) >= kMaxNotes) {
            out->Add("... (" + std::to_string(lines.size()) + " in all)");
            return;
        }
        out->Add(std::string(l));
    }
}

}  // namespace

bool is_loopback_address(std::string_view host_port) {
    auto hp = split_host_port(host_port);
    if (!hp.ok()) {
        return false;
    }
    std::string host = hp->host;
    std::transform(host.begin(), host.end(), host.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (host == "localhost") {
        return true;
    }
    in_addr v4{};
    if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
        return (ntohl(v4.s_addr) >> 24) == 127;
    }
    in6_addr v6{};
    if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&v6)) {
            return true;
        }
        return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
    }
    return false;
}

absl::Status check_manager_address(std::string_view host_port) {
    return split_host_port(host_port).status();
}

absl::StatusOr<std::vector<std::string>> parse_manager_list(std::string_view text) {
    std::vector<std::string> out;
    auto trim = [](std::string_view s) {
        while (!s.empty() && s.front() == ' ') {
            s.remove_prefix(1);
        }
        while (!s.empty() && s.back() == ' ') {
            s.remove_suffix(1);
        }
        return s;
    };
    if (trim(text).empty()) {
        return absl::InvalidArgumentError("--manager: no address given (HOST:PORT[,HOST:PORT...])");
    }
    size_t start = 0;
    for (;;) {
        const size_t comma = text.find(',', start);
        const std::string_view item = trim(text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (item.empty()) {
            return absl::InvalidArgumentError("--manager '" + std::string(text) +
                                              "': empty entry in the address list");
        }
        if (absl::Status st = check_manager_address(item); !st.ok()) {
            return st;
        }
        if (std::find(out.begin(), out.end(), item) != out.end()) {
            return absl::InvalidArgumentError("manager address '" + std::string(item) +
                                              "' given twice");
        }
        out.emplace_back(item);
        if (comma == std::string_view::npos) {
            break;
        }
        start = comma + 1;
    }
    return out;
}

std::vector<std::string> system_resolve(const std::string& host) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::vector<std::string> out;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) {
        return out;
    }
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
        char buf[INET6_ADDRSTRLEN] = {};
        const void* src = nullptr;
        if (a->ai_family == AF_INET) {
            src = &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr;
        } else if (a->ai_family == AF_INET6) {
            src = &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr;
        }
        if (src != nullptr && ::inet_ntop(a->ai_family, src, buf, sizeof(buf)) != nullptr &&
            std::find(out.begin(), out.end(), buf) == out.end()) {
            out.emplace_back(buf);
        }
    }
    ::freeaddrinfo(res);
    return out;
}

std::vector<ManagerCandidate> expand_candidates(const std::vector<std::string>& entries,
                                                const Resolver& resolve) {
    std::vector<ManagerCandidate> out;
    auto add = [&out](ManagerCandidate c) {
        if (std::find(out.begin(), out.end(), c) == out.end()) {
            out.push_back(std::move(c));
        }
    };
    for (const std::string& e : entries) {
        auto hp = split_host_port(e);
        if (!hp.ok()) {
            continue;  // parse_manager_list checked them
        }
        in_addr v4{};
        in6_addr v6{};
        const bool literal = ::inet_pton(AF_INET, hp->host.c_str(), &v4) == 1 ||
                             ::inet_pton(AF_INET6, hp->host.c_str(), &v6) == 1;
        std::vector<std::string> addrs;
        if (!literal && resolve) {
            addrs = resolve(hp->host);
        }
        if (addrs.size() < 2) {
            add({e, ""});
            continue;
        }
        std::sort(addrs.begin(), addrs.end());
        for (const std::string& a : addrs) {
            const bool v6addr = a.find(':') != std::string::npos;
            add({(v6addr ? "[" + a + "]" : a) + ":" + std::to_string(hp->port), hp->host});
        }
    }
    return out;
}

size_t first_choice(std::string_view sensor_name, size_t n) {
    if (n == 0) {
        return 0;
    }
    uint64_t h = 14695981039346656037ull;  // FNV-1a 64
    for (unsigned char c : sensor_name) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return static_cast<size_t>(h % n);
}

std::vector<size_t> walk_order(std::string_view sensor_name, size_t n) {
    std::vector<size_t> order;
    order.reserve(n);
    const size_t first = first_choice(sensor_name, n);
    for (size_t i = 0; i < n; ++i) {
        order.push_back((first + i) % n);
    }
    return order;
}

std::string new_boot_id() {
    std::random_device rd;
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 4; ++i) {
        uint32_t w = rd();
        for (int j = 0; j < 8; ++j) {
            out.push_back(kHex[(w >> (28 - 4 * j)) & 0xf]);
        }
    }
    return out;
}

absl::Status check_insecure(std::string_view host_port) {
    if (auto s = check_manager_address(host_port); !s.ok()) {
        return s;
    }
    if (!is_loopback_address(host_port)) {
        return absl::PermissionDeniedError(
            "--insecure (no TLS, no authentication) is only allowed towards a loopback manager "
            "(127.0.0.0/8, ::1, localhost), not '" +
            std::string(host_port) + "'");
    }
    return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>> parse_labels(std::string_view text) {
    std::map<std::string, std::string> out;
    if (text.empty()) {
        return out;
    }
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string_view item = text.substr(
            start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        size_t eq = item.find('=');
        if (eq == std::string_view::npos) {
            return absl::InvalidArgumentError("label '" + std::string(item) +
                                              "': expected KEY=VALUE");
        }
        std::string key(item.substr(0, eq));
        std::string value(item.substr(eq + 1));
        if (!valid_label_key(key)) {
            return absl::InvalidArgumentError("label '" + std::string(item) +
                                              "': key must be 1-64 characters of [A-Za-z0-9._-]");
        }
        if (!std::all_of(value.begin(), value.end(), [](char c) { return c > ' ' && c < 0x7f; })) {
            return absl::InvalidArgumentError("label '" + std::string(item) +
                                              "': value must be printable, without spaces");
        }
        if (!out.emplace(key, value).second) {
            return absl::InvalidArgumentError("label '" + key + "' given twice");
        }
        if (comma == std::string_view::npos) {
            break;
        }
        start = comma + 1;
    }
    return out;
}

absl::Status validate_options(const AgentOptions& o) {
    auto managers = parse_manager_list(o.manager);
    if (!managers.ok()) {
        return managers.status();
    }
    if (auto s = pki::validate_name(o.name); !s.ok()) {
        return absl::InvalidArgumentError("--name: " + std::string(s.message()));
    }
    if (o.state_dir.empty()) {
        return absl::InvalidArgumentError("--state-dir: a directory is required");
    }
    if (o.metrics_interval.count() <= 0) {
        return absl::InvalidArgumentError("metrics interval must be positive");
    }
    if (o.bootstrap) {
        if (o.insecure) {
            return absl::InvalidArgumentError(
                "--bootstrap-token-file needs TLS: it cannot be combined with --insecure");
        }
        if (!o.token.empty()) {
            return absl::InvalidArgumentError(
                "--bootstrap-token-file and --token cannot be combined");
        }
        if (!o.tls_cert.empty() || !o.tls_key.empty()) {
            return absl::InvalidArgumentError(
                "--bootstrap-token-file cannot be combined with --tls-cert / --tls-key (the "
                "enrolled key and certificate live in the state directory)");
        }
        if (o.ca.empty()) {
            return absl::InvalidArgumentError(
                "--bootstrap-token-file needs --ca (the fleet CA that signed the manager's "
                "certificate)");
        }
        return absl::OkStatus();
    }
    if (o.insecure) {
        if (!o.tls_cert.empty() || !o.tls_key.empty() || !o.ca.empty()) {
            return absl::InvalidArgumentError(
                "--insecure cannot be combined with --tls-cert / --tls-key / --ca");
        }
        for (const std::string& m : *managers) {
            if (absl::Status st = check_insecure(m); !st.ok()) {
                return st;
            }
        }
        return absl::OkStatus();
    }
    if (o.tls_cert.empty() != o.tls_key.empty()) {
        return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
    }
    if (o.ca.empty()) {
        return absl::InvalidArgumentError(
            "--ca is required (or --insecure towards a loopback manager)");
    }
    if (o.tls_cert.empty() && o.token.empty()) {
        return absl::InvalidArgumentError(
            "no sensor credentials: give --token T, --tls-cert F --tls-key F or "
            "--bootstrap-token-file F");
    }
    return absl::OkStatus();
}

std::chrono::milliseconds backoff_delay(const Backoff& b, uint32_t attempt, double unit) {
    double base = static_cast<double>(b.initial.count());
    const double cap = static_cast<double>(b.max.count());
    for (uint32_t i = 0; i < attempt && base < cap; ++i) {
        base *= 2;
    }
    base = std::min(base, cap);
    const double factor = 1.0 - b.jitter + 2.0 * b.jitter * unit;
    return std::chrono::milliseconds(static_cast<int64_t>(std::llround(base * factor)));
}

// ---------------------------------------------------------------------------------------
// Agent

Agent::Agent(AgentOptions options, SensorHooks hooks)
    : options_(std::move(options)),
      hooks_(std::move(hooks)),
      boot_id_(new_boot_id()),
      running_(options_.running),
      running_summary_(options_.running_summary),
      interval_(options_.metrics_interval),
      rng_(std::random_device{}()) {
    if (options_.host.empty()) {
        options_.host = local_host_name();
    }
}

Agent::~Agent() {
    stop();
}

void Agent::start() {
    if (thread_.joinable()) {
        return;
    }
    stop_ = false;
    thread_ = std::thread([this] { run(); });
}

void Agent::stop() {
    {
        std::lock_guard lk(mu_);
        stop_ = true;
        if (context_ != nullptr) {
            context_->TryCancel();
        }
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
}

std::string Agent::current_manager() const {
    std::lock_guard lk(mu_);
    return current_manager_;
}

v1::BundleRef Agent::running_bundle() const {
    std::lock_guard lk(mu_);
    return running_.ref;
}

void Agent::take_report(Clock::time_point now) {
    v1::MetricsReport r;
    r.set_timestamp(wall_clock_ns());
    r.set_interval_ms(static_cast<uint64_t>(interval_.count()));
    if (hooks_.stats) {
        StatsSnapshot snap = hooks_.stats();
        for (const auto& [k, v] : snap.values()) {
            (*r.mutable_counters())[k] = v;
        }
    }
    if (hooks_.worker_stats) {
        for (const auto& w : hooks_.worker_stats()) {
            auto* m = r.add_workers();
            m->set_worker(w.worker);
            m->set_packets(w.packets);
            m->set_bytes(w.bytes);
        }
    }
    {
        std::lock_guard lk(mu_);
        r.set_bundle_version(running_.ref.version());
    }
    r.set_seq(++seq_);
    pending_.push_back(std::move(r));
    while (pending_.size() > std::max<size_t>(options_.max_buffered_reports, 1)) {
        // Counted as lost only when no manager ever got it; a written one was most likely
        // stored (it is kept only to be resent should the manager not have).
        if (pending_.front().seq() > written_seq_) {
            ++counters_.reports_dropped;
        }
        pending_.pop_front();
        sent_ = sent_ > 0 ? sent_ - 1 : 0;
    }
    while (next_report_ <= now) {
        next_report_ += interval_;
    }
}

bool Agent::sleep_until(Clock::time_point deadline) {
    for (;;) {
        {
            std::unique_lock lk(mu_);
            cv_.wait_until(lk, std::min(deadline, next_report_), [this] { return stop_.load(); });
            if (stop_) {
                return false;
            }
        }
        auto now = Clock::now();
        if (now >= next_report_) {
            take_report(now);
        }
        if (now >= deadline) {
            return true;
        }
    }
}

void Agent::run() {
    next_report_ = Clock::now() + interval_;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    const std::vector<std::string> entries =
        parse_manager_list(options_.manager).value_or(std::vector<std::string>{options_.manager});
    std::vector<ManagerCandidate> candidates;
    std::vector<size_t> order;
    size_t pos = 0;
    uint32_t failures = 0;  // attempts without a Welcome since the last one
    while (!stop_) {
        if (pos == 0 || candidates.empty()) {
            // (Re)resolve at the start of every pass over the list: a DNS name's addresses
            // may change while the sensor runs.
            candidates = expand_candidates(entries, system_resolve);
            order = walk_order(options_.name, candidates.size());
            pos = 0;
        }
        const ManagerCandidate& where = candidates[order[pos]];
        bool welcomed = run_session(where);
        if (stop_) {
            break;
        }
        if (welcomed) {
            failures = 0;
        } else {
            failures = std::min<uint32_t>(failures + 1, 1u << 20);
        }
        // The manager went away, refused or cannot be reached: the next address in the list.
        // The backoff grows once per pass over the whole list that found no manager.
        pos = (pos + 1) % candidates.size();
        const uint32_t passes = failures / static_cast<uint32_t>(candidates.size());
        auto delay = backoff_delay(options_.backoff, std::min<uint32_t>(passes, 32), unit(rng_));
        log::debug("agent: next manager address in " + std::to_string(delay.count()) + " ms");
        if (!sleep_until(Clock::now() + delay)) {
            break;
        }
    }
}

namespace {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(
    const AgentOptions& o) {
    if (o.insecure) {
        return grpc::InsecureChannelCredentials();
    }
    grpc::SslCredentialsOptions ssl;
    if (!o.tls_cert.empty()) {
        auto creds = pki::load_credentials(o.tls_cert, o.tls_key, o.ca, pki::Purpose::kClient);
        if (!creds.ok()) {
            return creds.status();
        }
        ssl.pem_root_certs = creds->ca_pem;
        ssl.pem_private_key = creds->key_pem;
        ssl.pem_cert_chain = creds->cert_pem;
    } else {
        auto ca = read_file(o.ca);
        if (!ca.ok()) {
            return ca.status();
        }
        ssl.pem_root_certs = *ca;
    }
    return grpc::SslCredentials(ssl);
}

}  // namespace

bool is_validity_period_error(const absl::Status& s) {
    // pki::load_credentials words these two (common/pki/pki.cc); every other failure names a
    // file that does not load, match or chain.
    return s.code() == absl::StatusCode::kFailedPrecondition &&
           (s.message().find(" is not valid before ") != std::string_view::npos ||
            s.message().find(" expired on ") != std::string_view::npos);
}

absl::Status check_credentials(const AgentOptions& options) {
    absl::Status s = channel_credentials(options).status();
    if (!s.ok() && is_validity_period_error(s)) {
        // A clock that is off (or a certificate that lapsed) must not stop inspection: start on
        // the last good bundle and let the agent retry, with backoff, until the dates agree.
        log::warning("agent: " + std::string(s.message()) +
                     "; starting without the manager, retrying until the certificates are "
                     "valid for this host's clock");
        return absl::OkStatus();
    }
    return s;
}

// One stream. A reader thread moves incoming messages into `inbox`; this (agent) thread does
// every write, so the stream has one reader and one writer as gRPC requires.
// Bootstrap identity: renews the certificate when a third of its life is left; a failure is
// retried a minute later (the current certificate stays in use meanwhile).
void Agent::maybe_renew() {
    if (!options_.bootstrap || options_.tls_cert.empty()) {
        return;
    }
    const auto now = std::chrono::system_clock::now();
    absl::StatusOr<std::chrono::system_clock::time_point> when = renewal_time(options_);
    if (!when.ok()) {
        log::error("agent: " + std::string(when.status().message()));
        renew_at_ = now + std::chrono::minutes(1);
        return;
    }
    renew_at_ = *when;
    if (now < renew_at_) {
        return;
    }
    if (absl::Status st = renew_identity(options_); !st.ok()) {
        log::warning("agent: certificate renewal failed: " + std::string(st.message()) +
                     "; retrying in a minute");
        renew_at_ = now + std::chrono::minutes(1);
        return;
    }
    when = renewal_time(options_);
    renew_at_ = when.ok() ? *when : now + std::chrono::minutes(1);
}

bool Agent::run_session(const ManagerCandidate& where) {
    ++counters_.connect_attempts;
    {
        std::lock_guard lk(mu_);
        current_manager_ = where.target;
    }
    maybe_renew();
    auto creds = channel_credentials(options_);
    if (!creds.ok()) {
        log::error("agent: credentials: " + std::string(creds.status().message()));
        return false;
    }
    grpc::ChannelArguments args;
    // Bundles arrive in one ApplyBundle: a full ET Open bundle is ~20 MB, far above gRPC's
    // 4 MB default. The limit is the bundle limit plus its envelope, the same on every Picket
    // server and client (common/bundle kMaxMessageBytes); a larger bundle would be refused
    // anyway, so nothing bigger is ever buffered.
    args.SetMaxReceiveMessageSize(::picket::bundle::kMaxMessageBytes);
    args.SetMaxSendMessageSize(::picket::bundle::kMaxMessageBytes);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
    // A private subchannel per attempt: gRPC's own reconnect backoff on a shared subchannel
    // would otherwise stack on ours.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    if (!where.server_name.empty() && !options_.insecure) {
        // An address a DNS name resolved to: the certificate must carry the name.
        args.SetSslTargetNameOverride(where.server_name);
    }
    auto channel = grpc::CreateCustomChannel(where.target, *creds, args);
    // An address that does not answer (a dead host, a black hole) must not hold the sensor
    // for the whole Welcome timeout: the next one is tried.
    // A refused connection fails at once (as before); stop() is noticed within 100 ms.
    {
        const auto give_up = std::chrono::system_clock::now() + options_.connect_timeout;
        grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
        while (state != GRPC_CHANNEL_READY) {
            if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) {
                log::warning("agent: manager " + where.target + " not reachable");
                return false;
            }
            const auto now = std::chrono::system_clock::now();
            if (stop_ || now >= give_up) {
                if (!stop_) {
                    log::warning("agent: manager " + where.target + " not reachable within " +
                                 std::to_string(options_.connect_timeout.count()) + " ms");
                }
                return false;
            }
            channel->WaitForStateChange(state,
                                        std::min(give_up, now + std::chrono::milliseconds(100)));
            state = channel->GetState(/*try_to_connect=*/true);
        }
    }
    auto stub = v1::SensorLink::NewStub(channel);
    grpc::ClientContext ctx;
    {
        std::lock_guard lk(mu_);
        if (stop_) {
            return false;
        }
        context_ = &ctx;
    }
    auto stream = stub->Connect(&ctx);

    std::deque<v1::ManagerMessage> inbox;
    bool reader_done = false;
    std::thread reader([&] {
        v1::ManagerMessage m;
        while (stream->Read(&m)) {
            std::lock_guard lk(mu_);
            inbox.push_back(std::move(m));
            cv_.notify_all();
        }
        std::lock_guard lk(mu_);
        reader_done = true;
        cv_.notify_all();
    });

    v1::SensorMessage hello_msg;
    {
        auto* h = hello_msg.mutable_hello();
        h->set_sensor_name(options_.name);
        h->set_host(options_.host);
        h->set_version(options_.version);
        h->set_capture_mode(options_.capture_mode);
        h->set_capture_source(options_.capture_source);
        h->set_workers(options_.workers);
        for (const auto& [k, v] : options_.labels) {
            (*h->mutable_labels())[k] = v;
        }
        *h->mutable_bundle() = running_bundle();
        h->set_enrollment_token(options_.token);
        h->set_started_at(options_.started_at_ns);
        h->set_ips_mode(options_.ips_mode);
        h->set_boot_id(boot_id_);
    }
    bool acked = false;  // the manager says what it stored (Welcome.stored_report_seq)
    sent_ = 0;
    bool welcomed = false;
    bool ok = stream->Write(hello_msg);
    const auto welcome_deadline = Clock::now() + options_.welcome_timeout;
    while (ok) {
        std::vector<v1::ManagerMessage> batch;
        bool done = false;
        {
            std::unique_lock lk(mu_);
            auto deadline = welcomed ? next_report_ : std::min(next_report_, welcome_deadline);
            if (welcomed && !alerts_.empty()) {
                deadline = std::min(deadline, next_alert_batch_);
            }
            cv_.wait_until(lk, deadline, [&] {
                return stop_.load() || !inbox.empty() || reader_done ||
                       (welcomed && !alerts_.empty() && Clock::now() >= next_alert_batch_);
            });
            if (stop_) {
                break;
            }
            batch.assign(std::make_move_iterator(inbox.begin()),
                         std::make_move_iterator(inbox.end()));
            inbox.clear();
            done = reader_done;
        }
        auto now = Clock::now();
        if (now >= next_report_) {
            take_report(now);
        }
        for (auto& m : batch) {
            if (!ok) {
                break;
            }
            if (!welcomed) {
                if (!m.has_welcome()) {
                    log::warning("agent: manager sent a message before Welcome; reconnecting");
                    ok = false;
                    break;
                }
                if (!m.welcome().accepted()) {
                    log::error("agent: manager " + where.target +
                               " refused this sensor: " + m.welcome().reason());
                    ok = false;
                    break;
                }
                welcomed = true;
                connected_ = true;
                ++counters_.sessions;
                if (!last_welcomed_.empty() && last_welcomed_ != where.target) {
                    ++counters_.failovers;
                }
                last_welcomed_ = where.target;
                if (m.welcome().metrics_interval_seconds() > 0) {
                    interval_ = std::chrono::seconds(m.welcome().metrics_interval_seconds());
                    next_report_ = std::min(next_report_, Clock::now() + interval_);
                }
                // What to (re)send: after the last report the manager stored for this process,
                // or, from a manager that does not say, what was never written.
                acked = m.welcome().has_stored_report_seq();
                const uint64_t done_seq = acked ? m.welcome().stored_report_seq() : written_seq_;
                while (!pending_.empty() && pending_.front().seq() <= done_seq) {
                    pending_.pop_front();
                }
                sent_ = 0;
                log::info("agent: connected to manager " + where.target +
                          (acked ? "; it stored reports up to seq " + std::to_string(done_seq)
                                 : std::string()) +
                          ", " + std::to_string(pending_.size()) + " to send");
                continue;
            }
            v1::SensorMessage out;
            if (m.has_ping()) {
                out.mutable_pong()->set_nonce(m.ping().nonce());
                out.mutable_pong()->set_sent_at(m.ping().sent_at());
                ok = stream->Write(out);
                counters_.pongs += ok ? 1 : 0;
            } else if (m.has_apply_bundle()) {
                *out.mutable_apply_result() = apply(m.apply_bundle());
                ok = stream->Write(out);
            }
        }
        if (!ok) {
            break;
        }
        if (welcomed && std::chrono::system_clock::now() >= renew_at_) {
            // The renewal happens before the next connect, which then uses the new pair.
            log::info("agent: certificate due for renewal; reconnecting");
            break;
        }
        if (!welcomed && Clock::now() >= welcome_deadline) {
            log::warning("agent: no Welcome from " + where.target + " in time");
            break;
        }
        // Send buffered reports oldest first. With a manager that says what it stored, they
        // stay in the ring (to be resent after a reconnect or failover should that manager
        // not have stored them); otherwise one leaves once written.
        while (welcomed && ok && sent_ < pending_.size()) {
            v1::SensorMessage out;
            *out.mutable_metrics() = pending_[sent_];
            const uint64_t seq = out.metrics().seq();
            ok = stream->Write(out);
            if (ok) {
                if (seq <= written_seq_) {
                    ++counters_.reports_resent;
                }
                written_seq_ = std::max(written_seq_, seq);
                if (acked) {
                    ++sent_;
                } else {
                    pending_.pop_front();
                }
                ++counters_.reports_sent;
            }
        }
        // Alerts: one bounded batch at most every 1/kMaxBatchesPerSecond seconds.
        if (welcomed && ok && Clock::now() >= next_alert_batch_) {
            v1::SensorMessage out;
            {
                std::lock_guard lk(mu_);
                size_t n = std::min(alerts_.size(), kMaxAlertsPerBatch);
                for (size_t i = 0; i < n; ++i) {
                    *out.mutable_alerts()->add_alerts() = std::move(alerts_.front());
                    alerts_.pop_front();
                }
                out.mutable_alerts()->set_dropped(alerts_dropped_unsent_);
                if (n != 0 || alerts_dropped_unsent_ != 0) {
                    alerts_dropped_unsent_ = 0;
                    next_alert_batch_ =
                        Clock::now() + std::chrono::milliseconds(1000 / kMaxBatchesPerSecond);
                }
            }
            if (out.alerts().alerts_size() != 0 || out.alerts().dropped() != 0) {
                ok = stream->Write(out);
                if (ok) {
                    counters_.alerts_sent += static_cast<uint64_t>(out.alerts().alerts_size());
                }
            }
        }
        if (done) {
            break;
        }
    }
    {
        std::lock_guard lk(mu_);
        context_ = nullptr;
    }
    bool server_ended = false;
    {
        std::lock_guard lk(mu_);
        server_ended = reader_done;
    }
    // When the manager ended the stream, its status (why it refused or closed it: revoked,
    // bad token) is waiting for Finish; cancelling first would replace it with CANCELLED.
    if (!server_ended) {
        ctx.TryCancel();
    }
    reader.join();
    grpc::Status st = stream->Finish();
    connected_ = false;
    if (!stop_) {
        log::warning("agent: stream to " + where.target + " ended: " +
                     (st.ok() ? std::string("closed by the manager") : st.error_message()));
    }
    return welcomed;
}

void Agent::on_alert(v1::Alert alert) {
    {
        std::lock_guard lk(mu_);
        if (alerts_.size() >= kMaxPendingAlerts) {
            alerts_.pop_front();
            ++alerts_dropped_unsent_;
            ++counters_.alerts_dropped;
        }
        alert.set_bundle_version(running_.ref.version());
        alerts_.push_back(std::move(alert));
    }
    cv_.notify_all();
}

v1::ApplyResult Agent::apply(const v1::ApplyBundle& msg) {
    v1::ApplyResult r;
    r.set_deployment_id(msg.deployment_id());
    r.set_version(msg.bundle().manifest().version());
    const std::string label =
        msg.bundle().manifest().name() + " v" + std::to_string(msg.bundle().manifest().version());
    auto reject = [&](const std::vector<std::string>& errors) {
        add_capped(r.mutable_errors(), errors);
        r.set_applied(false);
        *r.mutable_running() = running_bundle();
        ++counters_.bundles_rejected;
        std::string joined;
        for (const auto& e : errors) {
            joined += "\n  " + e;
        }
        log::error("agent: bundle " + label + " rejected:" + joined);
        return r;
    };

    auto prepared = prepare_bundle(msg.bundle(), options_.state_dir, options_.base_detect,
                                   options_.bundle_public_key_pem);
    if (!prepared.ok()) {
        return reject(split_lines(std::string(prepared.status().message())));
    }
    add_capped(r.mutable_warnings(), prepared->warnings);
    RunningBundle current;
    detect::LoadSummary current_summary;
    {
        std::lock_guard lk(mu_);
        current = running_;
        current_summary = running_summary_;
    }
    if (current.ref.version() != 0 && current.ref.sha256() == prepared->running.ref.sha256()) {
        // Already running (a redelivery after a reconnect): nothing to swap.
        r.set_applied(true);
        r.set_rules_loaded(current_summary.loaded);
        r.set_rules_skipped(current_summary.skipped);
        *r.mutable_running() = current.ref;
        ++counters_.bundles_applied;
        return r;
    }

    detect::LoadSummary summary;
    std::string error;
    if (!hooks_.reload(prepared->running.config, &summary, &error)) {
        return reject({"reload failed: " + error});
    }
    r.set_rules_loaded(summary.loaded);
    r.set_rules_skipped(summary.skipped);
    r.set_compile_ms(static_cast<uint64_t>(std::llround(summary.parse_ms + summary.compile_ms)));
    std::vector<std::string> notes;
    for (const auto& d : summary.diagnostics) {
        notes.push_back(d.to_string());
    }
    if (summary.loaded == 0) {
        // The swap happened but the new engine detects nothing: put the previous rules back.
        std::vector<std::string> errors{"bundle " + label + ": no rule loaded (" +
                                        std::to_string(summary.skipped) + " skipped)"};
        errors.insert(errors.end(), notes.begin(), notes.end());
        detect::LoadSummary back;
        std::string back_error;
        if (!hooks_.reload(current.config, &back, &back_error)) {
            errors.push_back("restoring the previous rules failed: " + back_error);
        }
        return reject(errors);
    }
    notes.insert(notes.end(), summary.warnings.begin(), summary.warnings.end());
    add_capped(r.mutable_warnings(), notes);
    {
        std::lock_guard lk(mu_);
        running_ = prepared->running;
        running_summary_ = summary;
    }
    if (auto s = record_last_good(options_.state_dir, prepared->running.ref); !s.ok()) {
        r.add_warnings("not recorded as last good: " + std::string(s.message()));
    }
    r.set_applied(true);
    *r.mutable_running() = prepared->running.ref;
    ++counters_.bundles_applied;
    log::info("agent: bundle " + label + " applied: " + std::to_string(summary.loaded) +
              " rules loaded, " + std::to_string(summary.skipped) + " skipped");
    return r;
}

}  // namespace picket::sensor::agent
