// fleet_load: scale benchmark of picket-manager. Starts a real picket-manager child process
// (--insecure on 127.0.0.1, temporary SQLite database), opens K simulated sensor streams
// (SensorLink.Connect: Hello, a MetricsReport every --interval seconds staggered across the
// streams, Pong for every Ping, an immediate "applied" ApplyResult for every ApplyBundle),
// measures the manager's CPU and memory for --soak seconds, then pushes a small bundle, deploys
// it to "all" and times how long until every target is applied. Prints one summary line:
//   fleet: K=... connect_s=... cpu_pct=... rss_mb=... hwm_mb=... reports_per_s=...
//          deploy_all_applied_ms=... (then extra fields)
// Threads: one reader thread per stream (handshake, then Read loop), one shared metrics timer
// thread, the main thread (process control, measurement, FleetAdmin calls). Writes on one
// stream are serialized by that stream's mutex (gRPC allows one writer at a time).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "common/bundle/bundle.h"
#include "picket/v1/picket.grpc.pb.h"
#include "picket/v1/picket.pb.h"

namespace {

namespace v1 = picket::v1;
using Clock = std::chrono::steady_clock;

struct Options {
    int sensors = 1000;
    double interval_s = 5.0;
    double soak_s = 20.0;
    std::string manager_bin;
    int streams_per_channel = 1;
    double connect_timeout_s = 180.0;
    double deploy_timeout_s = 120.0;
};

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

int64_t wall_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// ---------------------------------------------------------------------------------------
// Simulated sensors

enum class LinkState { kConnecting, kConnected, kFailed, kEnded };

struct SimSensor {
    int index = 0;
    std::string name;
    std::shared_ptr<grpc::Channel> channel;
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::SensorMessage, v1::ManagerMessage>> stream;
    std::mutex write_mu;  // serializes Write on `stream`
    std::atomic<LinkState> state{LinkState::kConnecting};
    uint64_t seq = 0;   // under write_mu
    uint64_t pkts = 0;  // under write_mu
    std::atomic<uint64_t> bundle_version{0};
    int64_t started_at = 0;
    std::string error;  // set by the reader thread before state becomes kFailed / kEnded
};

struct Fleet {
    std::vector<std::unique_ptr<SimSensor>> sensors;
    std::mutex mu;
    std::condition_variable cv;
    int settled = 0;  // connected + failed, under mu
    std::atomic<uint64_t> reports_sent{0};
    std::atomic<uint64_t> report_write_failures{0};
    std::atomic<uint64_t> pings{0};
    std::atomic<uint64_t> applies{0};
    std::atomic<bool> stop{false};
};

bool write_locked(SimSensor& s, const v1::SensorMessage& m) {
    std::lock_guard<std::mutex> lock(s.write_mu);
    return s.stream->Write(m);
}

uint64_t count_rule_lines(const v1::Bundle& bundle) {
    uint64_t n = 0;
    for (const v1::BundleFile& f : bundle.files()) {
        if (f.path().rfind("rules/", 0) != 0) {
            continue;
        }
        std::istringstream in(f.content());
        std::string line;
        while (std::getline(in, line)) {
            auto rule = picket::bundle::scan_rule(line);
            n += rule.has_value() && rule->enabled ? 1 : 0;
        }
    }
    return n;
}

void settle(Fleet& fleet) {
    std::lock_guard<std::mutex> lock(fleet.mu);
    ++fleet.settled;
    fleet.cv.notify_all();
}

// Reader thread of one stream: handshake, then answer Ping / ApplyBundle until the stream ends.
void run_sensor(Fleet& fleet, SimSensor& s) {
    auto stub = v1::SensorLink::NewStub(s.channel);
    s.stream = stub->Connect(&s.ctx);
    v1::SensorMessage hello_msg;
    v1::Hello* hello = hello_msg.mutable_hello();
    hello->set_sensor_name(s.name);
    hello->set_host("fleet-bench");
    hello->set_version("0.1.0");
    hello->set_capture_mode(v1::CAPTURE_MODE_AF_PACKET);
    hello->set_capture_source("eth1");
    hello->set_workers(1);
    (*hello->mutable_labels())["site"] = "site" + std::to_string(s.index % 10);
    (*hello->mutable_labels())["role"] = s.index % 2 == 0 ? "edge" : "core";
    hello->set_started_at(s.started_at);
    v1::ManagerMessage in;
    if (!write_locked(s, hello_msg) || !s.stream->Read(&in) || !in.has_welcome() ||
        !in.welcome().accepted()) {
        grpc::Status st = s.stream->Finish();
        s.error = st.ok() ? std::string("no welcome")
                          : std::to_string(st.error_code()) + " " + st.error_message();
        s.state = LinkState::kFailed;
        settle(fleet);
        return;
    }
    s.state = LinkState::kConnected;
    settle(fleet);
    while (s.stream->Read(&in)) {
        v1::SensorMessage out;
        if (in.has_ping()) {
            out.mutable_pong()->set_nonce(in.ping().nonce());
            out.mutable_pong()->set_sent_at(in.ping().sent_at());
            ++fleet.pings;
        } else if (in.has_apply_bundle()) {
            const v1::ApplyBundle& ab = in.apply_bundle();
            v1::ApplyResult* r = out.mutable_apply_result();
            r->set_deployment_id(ab.deployment_id());
            r->set_version(ab.bundle().manifest().version());
            r->set_applied(true);
            r->set_rules_loaded(count_rule_lines(ab.bundle()));
            r->set_compile_ms(1);
            *r->mutable_running() = picket::bundle::bundle_ref(ab.bundle());
            s.bundle_version = ab.bundle().manifest().version();
            ++fleet.applies;
        } else {
            continue;
        }
        if (!write_locked(s, out)) {
            break;
        }
    }
    grpc::Status st = s.stream->Finish();
    if (!fleet.stop) {
        s.error = std::to_string(st.error_code()) + " " + st.error_message();
    }
    s.state = LinkState::kEnded;
}

// One report of a sensor: monotonic totals, as a real sensor sends them.
v1::SensorMessage metrics_report(SimSensor& s, uint64_t interval_ms) {
    s.pkts += 1000;
    v1::SensorMessage m;
    v1::MetricsReport* r = m.mutable_metrics();
    r->set_timestamp(wall_ns());
    r->set_interval_ms(interval_ms);
    r->set_seq(++s.seq);
    r->set_bundle_version(s.bundle_version.load());
    auto& c = *r->mutable_counters();
    c["capture.kernel_packets"] = s.pkts;
    c["capture.kernel_drops"] = 0;
    c["decoder.pkts"] = s.pkts;
    c["decoder.bytes"] = s.pkts * 600;
    c["decoder.ipv4"] = s.pkts;
    c["decoder.tcp"] = s.pkts * 3 / 4;
    c["decoder.udp"] = s.pkts / 4;
    c["detect.alert"] = s.pkts / 1000;
    c["detect.alert_queue_overflow"] = 0;
    c["flow.active"] = 120;
    c["flow.total"] = s.pkts / 20;
    c["tcp.sessions"] = s.pkts / 40;
    c["tcp.reassembly_memuse"] = 1 << 20;
    v1::WorkerMetrics* w = r->add_workers();
    w->set_worker(0);
    w->set_packets(s.pkts);
    w->set_bytes(s.pkts * 600);
    return m;
}

// Stream i reports at offset i * interval / K within each interval.
void run_metrics(Fleet& fleet, double interval_s) {
    const size_t k = fleet.sensors.size();
    const auto interval = std::chrono::duration<double>(interval_s);
    const uint64_t interval_ms = static_cast<uint64_t>(interval_s * 1000);
    const Clock::time_point t0 = Clock::now();
    for (uint64_t tick = 0; !fleet.stop; ++tick) {
        const size_t i = tick % k;
        const uint64_t round = tick / k;
        auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                            interval * (static_cast<double>(round) +
                                        static_cast<double>(i) / static_cast<double>(k)));
        // Sleep in short slices so stop is noticed.
        while (!fleet.stop && Clock::now() < due) {
            std::this_thread::sleep_until(
                std::min(due, Clock::now() + std::chrono::milliseconds(100)));
        }
        if (fleet.stop) {
            break;
        }
        SimSensor& s = *fleet.sensors[i];
        if (s.state != LinkState::kConnected) {
            continue;
        }
        std::lock_guard<std::mutex> lock(s.write_mu);
        if (s.stream->Write(metrics_report(s, interval_ms))) {
            ++fleet.reports_sent;
        } else {
            ++fleet.report_write_failures;
        }
    }
}

// A thread with a small stack (the default 8 MiB reservation adds up at 10,000 streams).
class SmallThread {
public:
    explicit SmallThread(std::function<void()> fn) : fn_(std::move(fn)) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        started_ = pthread_create(&tid_, &attr, &SmallThread::entry, this) == 0;
        pthread_attr_destroy(&attr);
    }
    ~SmallThread() { join(); }
    SmallThread(const SmallThread&) = delete;
    SmallThread& operator=(const SmallThread&) = delete;
    bool started() const { return started_; }
    void join() {
        if (started_) {
            pthread_join(tid_, nullptr);
            started_ = false;
        }
    }

private:
    static void* entry(void* self) {
        static_cast<SmallThread*>(self)->fn_();
        return nullptr;
    }
    std::function<void()> fn_;
    pthread_t tid_{};
    bool started_ = false;
};

// ---------------------------------------------------------------------------------------
// The manager process

int free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    int port = -1;
    socklen_t len = sizeof(a);
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
        port = ntohs(a.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

pid_t spawn_manager(const std::string& bin, const std::string& listen, const std::string& db,
                    const std::string& log_path) {
    pid_t pid = fork();
    if (pid != 0) {
        return pid;
    }
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    execl(bin.c_str(), bin.c_str(), "--listen", listen.c_str(), "--db", db.c_str(), "--insecure",
          static_cast<char*>(nullptr));
    _exit(127);
}

struct ProcSample {
    double cpu_s = 0;  // utime + stime
    double rss_mb = 0;
    double hwm_mb = 0;
    long threads = 0;
};

ProcSample sample_proc(pid_t pid) {
    ProcSample p;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // Fields after the ")" closing the command name: state is field 3, utime 14, stime 15.
    size_t close_paren = text.rfind(')');
    if (close_paren != std::string::npos) {
        std::istringstream in(text.substr(close_paren + 2));
        std::vector<std::string> f;
        std::string x;
        while (in >> x) {
            f.push_back(x);
        }
        if (f.size() > 12) {
            const double tck = static_cast<double>(sysconf(_SC_CLK_TCK));
            p.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / tck;  // fields 14, 15
        }
    }
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        auto kb = [&](const char* key) {
            return std::stod(line.substr(std::strlen(key))) / 1024.0;
        };
        if (line.rfind("VmRSS:", 0) == 0) {
            p.rss_mb = kb("VmRSS:");
        } else if (line.rfind("VmHWM:", 0) == 0) {
            p.hwm_mb = kb("VmHWM:");
        } else if (line.rfind("Threads:", 0) == 0) {
            p.threads = std::stol(line.substr(8));
        }
    }
    return p;
}

double self_cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// SIGTERM, then SIGKILL after 60 s. Returns the seconds until it exited (-1: killed).
double stop_manager(pid_t pid) {
    const Clock::time_point t0 = Clock::now();
    kill(pid, SIGTERM);
    while (seconds_since(t0) < 60) {
        if (waitpid(pid, nullptr, WNOHANG) == pid) {
            return seconds_since(t0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::fprintf(stderr, "fleet_load: manager did not stop within 60 s of SIGTERM, SIGKILL\n");
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return -1;
}

void print_log_tail(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    std::string line;
    while (std::getline(in, line)) {
        lines.push_back(line);
    }
    size_t from = lines.size() > 10 ? lines.size() - 10 : 0;
    for (size_t i = from; i < lines.size(); ++i) {
        std::fprintf(stderr, "  manager: %s\n", lines[i].c_str());
    }
}

// ---------------------------------------------------------------------------------------
// Bundle push + deploy

struct DeployOutcome {
    double ms = -1;        // -1: not every target applied
    double first_ms = -1;  // first target applied
    double half_ms = -1;   // half of the targets applied
    int targets = 0;
    int applied = 0;
    std::string error;
};

DeployOutcome push_and_deploy(const std::shared_ptr<grpc::Channel>& channel,
                              const std::filesystem::path& work, double timeout_s) {
    DeployOutcome out;
    namespace fs = std::filesystem;
    fs::path dir = work / "fleet-bench";
    fs::create_directories(dir / "rules");
    {
        std::ofstream r(dir / "rules" / "local.rules");
        r << "# fleet bench rules\n"
             "alert tcp any any -> any 80 (msg:\"bench http\"; content:\"GET\"; sid:1000001; "
             "rev:1;)\n"
             "alert udp any any -> any 53 (msg:\"bench dns\"; content:\"|01 00|\"; sid:1000002; "
             "rev:1;)\n"
             "alert icmp any any -> any any (msg:\"bench icmp\"; itype:8; sid:1000003; rev:1;)\n"
             "drop tcp any any -> any 23 (msg:\"bench telnet\"; flags:S; sid:1000004; rev:1;)\n";
        std::ofstream c(dir / "config.yaml");
        c << "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n";
    }
    auto b = picket::bundle::load_bundle_dir(dir);
    if (!b.ok()) {
        out.error = "load_bundle_dir: " + std::string(b.status().message());
        return out;
    }
    b->mutable_manifest()->set_author("fleet_load");
    b->mutable_manifest()->set_message("fleet scale benchmark");
    b->mutable_manifest()->set_created_at(wall_ns());
    auto admin = v1::FleetAdmin::NewStub(channel);
    v1::PushBundleRequest preq;
    *preq.mutable_bundle() = std::move(*b);
    v1::PushBundleResponse presp;
    {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        grpc::Status st = admin->PushBundle(&ctx, preq, &presp);
        if (!st.ok()) {
            out.error = "PushBundle: " + st.error_message();
            return out;
        }
    }
    v1::DeployRequest dreq;
    dreq.set_version(presp.version());
    dreq.set_selector("all");
    v1::DeployResponse dresp;
    const Clock::time_point t0 = Clock::now();
    {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        grpc::Status st = admin->Deploy(&ctx, dreq, &dresp);
        if (!st.ok()) {
            out.error = "Deploy: " + st.error_message();
            return out;
        }
    }
    const std::string id = dresp.deployment().id();
    while (seconds_since(t0) < timeout_s) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::GetDeploymentRequest greq;
        greq.set_id(id);
        v1::GetDeploymentResponse gresp;
        grpc::Status st = admin->GetDeployment(&ctx, greq, &gresp);
        if (st.ok()) {
            out.targets = gresp.deployment().targets_size();
            out.applied = 0;
            for (const v1::DeploymentTarget& t : gresp.deployment().targets()) {
                out.applied += t.state() == v1::TARGET_STATE_APPLIED ? 1 : 0;
            }
            const double now_ms = seconds_since(t0) * 1000.0;
            if (out.first_ms < 0 && out.applied > 0) {
                out.first_ms = now_ms;
            }
            if (out.half_ms < 0 && out.targets > 0 && out.applied * 2 >= out.targets) {
                out.half_ms = now_ms;
            }
            if (out.targets > 0 && out.applied == out.targets) {
                out.ms = seconds_since(t0) * 1000.0;
                return out;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    out.error = "timeout after " + std::to_string(static_cast<int>(timeout_s)) + " s";
    return out;
}

// Reports the manager counted into run totals: every report adds 1000 to decoder.pkts and
// the first report of a process counts from zero, so the packets of all runs / 1000. -1 when
// History failed.
int64_t reports_stored(const std::shared_ptr<grpc::Channel>& channel, int sensors) {
    auto admin = v1::FleetAdmin::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::HistoryRequest req;
    req.set_limit(static_cast<uint32_t>(sensors) * 4 + 16);
    v1::HistoryResponse resp;
    if (!admin->History(&ctx, req, &resp).ok()) {
        return -1;
    }
    uint64_t pkts = 0;
    for (const v1::RunPeriod& r : resp.runs()) {
        pkts += r.packets();
    }
    return static_cast<int64_t>(pkts / 1000);
}

// ---------------------------------------------------------------------------------------

void usage() {
    std::fprintf(stderr,
                 "usage: fleet_load --manager-bin PATH [--sensors K] [--interval S] [--soak S]\n"
                 "                  [--streams-per-channel N] [--connect-timeout S]\n"
                 "                  [--deploy-timeout S]\n");
}

bool parse(int argc, char** argv, Options* o) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (i + 1 >= argc) {
            return false;
        }
        std::string v = argv[++i];
        try {
            if (a == "--sensors") {
                o->sensors = std::stoi(v);
            } else if (a == "--interval") {
                o->interval_s = std::stod(v);
            } else if (a == "--soak") {
                o->soak_s = std::stod(v);
            } else if (a == "--manager-bin") {
                o->manager_bin = v;
            } else if (a == "--streams-per-channel") {
                o->streams_per_channel = std::stoi(v);
            } else if (a == "--connect-timeout") {
                o->connect_timeout_s = std::stod(v);
            } else if (a == "--deploy-timeout") {
                o->deploy_timeout_s = std::stod(v);
            } else {
                return false;
            }
        } catch (const std::exception&) {
            return false;
        }
    }
    return !o->manager_bin.empty() && o->sensors > 0 && o->interval_s > 0 && o->soak_s > 0 &&
           o->streams_per_channel > 0;
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& target) {
    grpc::ChannelArguments args;
    // A private subchannel pool: each channel opens its own TCP connection, as separate
    // sensors would.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    if (!parse(argc, argv, &opt)) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < static_cast<rlim_t>(opt.sensors) + 256) {
        std::fprintf(stderr, "fleet_load: warning: fd limit %llu is below K + 256\n",
                     static_cast<unsigned long long>(rl.rlim_cur));
    }

    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/picket-fleet-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        std::perror("fleet_load: mkdtemp");
        return 1;
    }
    const fs::path work = tmpl;
    const int port = free_port();
    const std::string target = "127.0.0.1:" + std::to_string(port);
    const std::string log_path = (work / "manager.log").string();
    const pid_t mgr =
        spawn_manager(opt.manager_bin, target, (work / "fleet.db").string(), log_path);
    if (mgr < 0) {
        std::perror("fleet_load: fork");
        return 1;
    }
    auto admin_channel = make_channel(target);
    if (!admin_channel->WaitForConnected(std::chrono::system_clock::now() +
                                         std::chrono::seconds(15))) {
        std::fprintf(stderr, "fleet_load: manager not reachable on %s within 15 s\n",
                     target.c_str());
        print_log_tail(log_path);
        stop_manager(mgr);
        return 1;
    }
    const ProcSample idle = sample_proc(mgr);

    // ---- connect K streams
    Fleet fleet;
    const int64_t started_at = wall_ns();
    std::shared_ptr<grpc::Channel> channel;
    for (int i = 0; i < opt.sensors; ++i) {
        auto s = std::make_unique<SimSensor>();
        s->index = i;
        char name[32];
        std::snprintf(name, sizeof(name), "sim-%05d", i);
        s->name = name;
        if (i % opt.streams_per_channel == 0) {
            channel = make_channel(target);
        }
        s->channel = channel;
        s->started_at = started_at;
        fleet.sensors.push_back(std::move(s));
    }
    const Clock::time_point c0 = Clock::now();
    std::vector<std::unique_ptr<SmallThread>> readers;
    readers.reserve(fleet.sensors.size());
    int thread_failures = 0;
    for (auto& s : fleet.sensors) {
        SimSensor* sp = s.get();
        auto t = std::make_unique<SmallThread>([&fleet, sp] { run_sensor(fleet, *sp); });
        if (!t->started()) {
            ++thread_failures;
            sp->error = "pthread_create failed";
            sp->state = LinkState::kFailed;
            std::lock_guard<std::mutex> lock(fleet.mu);
            ++fleet.settled;
        }
        readers.push_back(std::move(t));
    }
    {
        std::unique_lock<std::mutex> lock(fleet.mu);
        fleet.cv.wait_for(lock, std::chrono::duration<double>(opt.connect_timeout_s),
                          [&] { return fleet.settled >= opt.sensors; });
    }
    const double connect_s = seconds_since(c0);
    int connected = 0;
    int failed = 0;
    std::string first_error;
    for (auto& s : fleet.sensors) {
        LinkState st = s->state;
        if (st == LinkState::kConnected) {
            ++connected;
        } else {
            ++failed;
            if (first_error.empty() && st != LinkState::kConnecting) {
                first_error = s->error;
            }
        }
    }
    std::fprintf(stderr, "fleet_load: %d/%d streams connected in %.2f s (%d failed%s%s)\n",
                 connected, opt.sensors, connect_s, failed,
                 first_error.empty() ? "" : ", first: ", first_error.c_str());

    // ---- soak: metrics at the configured rate, manager measured
    std::thread metrics([&] { run_metrics(fleet, opt.interval_s); });
    const ProcSample before = sample_proc(mgr);
    const double self_before = self_cpu_s();
    const uint64_t reports_before = fleet.reports_sent.load();
    const Clock::time_point s0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(opt.soak_s));
    const double soak_wall = seconds_since(s0);
    const ProcSample after = sample_proc(mgr);
    const double self_after = self_cpu_s();
    const uint64_t reports = fleet.reports_sent.load() - reports_before;
    const double cpu_pct = (after.cpu_s - before.cpu_s) / soak_wall * 100.0;
    const double self_pct = (self_after - self_before) / soak_wall * 100.0;
    const double reports_per_s = static_cast<double>(reports) / soak_wall;

    // ---- deploy
    DeployOutcome d;
    if (connected > 0) {
        d = push_and_deploy(admin_channel, work, opt.deploy_timeout_s);
    } else {
        d.error = "no stream connected";
    }
    if (!d.error.empty()) {
        std::fprintf(stderr, "fleet_load: deploy: %s (%d/%d targets applied)\n", d.error.c_str(),
                     d.applied, d.targets);
    }
    const ProcSample end = sample_proc(mgr);
    int ended = 0;
    for (auto& s : fleet.sensors) {
        ended += s->state == LinkState::kEnded ? 1 : 0;
    }

    // ---- stop streams, then the manager; first check what the manager stored
    fleet.stop = true;
    metrics.join();
    // The store writes reports asynchronously: poll until every report is counted, the count
    // stays put for 5 s, or 60 s passed.
    const uint64_t sent_total = fleet.reports_sent.load();
    const Clock::time_point q0 = Clock::now();
    int64_t stored = -1;
    for (int64_t prev = -2, still = 0; seconds_since(q0) < 60;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        stored = reports_stored(admin_channel, opt.sensors);
        still = stored == prev ? still + 1 : 0;
        if (stored < 0 || still >= 5 || static_cast<uint64_t>(stored) >= sent_total) {
            break;
        }
        prev = stored;
    }
    const double drain_s = seconds_since(q0);
    for (auto& s : fleet.sensors) {
        s->ctx.TryCancel();
    }
    for (auto& t : readers) {
        t->join();
    }
    const double mgr_stop_s = stop_manager(mgr);
    if (failed > 0 || ended > 0) {
        print_log_tail(log_path);
    }
    std::error_code ec;
    fs::remove_all(work, ec);

    std::printf(
        "fleet: K=%d connect_s=%.2f cpu_pct=%.1f rss_mb=%.1f hwm_mb=%.1f reports_per_s=%.1f "
        "deploy_all_applied_ms=%s connected=%d failed=%d ended_early=%d report_write_failures=%llu "
        "mgr_threads=%ld idle_rss_mb=%.1f end_hwm_mb=%.1f applied=%d/%d bench_cpu_pct=%.1f "
        "reports_sent_total=%llu reports_stored_total=%lld store_settle_s=%.0f "
        "deploy_first_applied_ms=%.0f deploy_half_applied_ms=%.0f mgr_stop_s=%.1f\n",
        opt.sensors, connect_s, cpu_pct, after.rss_mb, after.hwm_mb, reports_per_s,
        d.ms < 0 ? "none" : std::to_string(static_cast<long long>(d.ms + 0.5)).c_str(), connected,
        failed, ended, static_cast<unsigned long long>(fleet.report_write_failures.load()),
        after.threads, idle.rss_mb, end.hwm_mb, d.applied, d.targets, self_pct,
        static_cast<unsigned long long>(sent_total), static_cast<long long>(stored), drain_s,
        d.first_ms, d.half_ms, mgr_stop_s);
    std::fflush(stdout);
    return connected == opt.sensors && d.ms >= 0 ? 0 : 1;
}
