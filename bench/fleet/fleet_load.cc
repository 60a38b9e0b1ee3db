// fleet_load: scale benchmark of picket-manager. Starts a real picket-manager child process
// (--insecure on 127.0.0.1, temporary SQLite database), opens K simulated sensor streams
// (SensorLink.Connect: Hello, a MetricsReport every --interval seconds staggered across the
// streams, Pong for every Ping, an immediate "applied" ApplyResult for every ApplyBundle),
// measures the manager's CPU and memory for --soak seconds, then pushes a small bundle, deploys
// it to "all" and times how long until every target is applied. Prints one summary line:
//   fleet: K=... connect_s=... cpu_pct=... rss_mb=... hwm_mb=... reports_per_s=...
//          deploy_all_applied_ms=... (then extra fields)
// With --kill-restart it then SIGKILLs the manager, restarts it on the same database and port,
// lets every stream reconnect with backoff and checks that nothing the manager had stored is
// gone.
// With --managers N (N >= 2) it starts a PostgreSQL server of its own and N picket-manager
// replicas on one database in it, spreads the streams over them (stream i on replica i mod N,
// the next replica in the list when its stream ends, as the sensor's agent with --manager a,b),
// deploys through replica 0; with --kill-replica it then SIGKILLs the leader replica and times
// how its streams fail over to the others, checks that nothing stored is lost and deploys again
// through a surviving replica.
// Threads: the streams use gRPC's callback API (one ClientBidiReactor per connection attempt),
// so their reactions run on gRPC's own few threads; one scheduler thread sends the metrics
// reports and starts reconnect attempts when their backoff ends; the main thread does process
// control, /proc sampling and the FleetAdmin calls. No thread per stream.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"

#include "common/bundle/bundle.h"
#include "picket/v1/picket.grpc.pb.h"
#include "picket/v1/picket.pb.h"
#ifdef PICKET_FLEET_POSTGRES
#include "tests/support/postgres_server.h"
#endif

namespace {

namespace v1 = picket::v1;
using Clock = std::chrono::steady_clock;

struct Options {
    int sensors = 1000;
    double interval_s = 5.0;
    double soak_s = 20.0;
    std::string manager_bin;
    int streams_per_channel = 1;
    int connect_window = 500;
    double connect_timeout_s = 180.0;
    double deploy_timeout_s = 120.0;
    bool kill_restart = false;
    int managers = 1;
    bool kill_replica = false;
    bool warmup = true;
    // Bytes of comment lines added to the bundle (rules/padding.rules): a bundle of a real
    // ruleset's size (ET Open's rules are about 20 MB) for the fan-out's memory.
    uint64_t bundle_pad_bytes = 0;
    // picketctl, timed listing the sensors and the history while the fleet reports ("" = next
    // to the manager binary, cli/picketctl, when it is there).
    std::string picketctl;
};

// Reconnect backoff of a simulated sensor after its stream ended: 0.5 s doubling to 5 s, each
// delay multiplied by a uniform factor in [0.8, 1.2] (the real sensor's agent uses the same
// shape with a 30 s cap; 5 s keeps the benchmark short).
constexpr double kBackoffInitialS = 0.5;
constexpr double kBackoffMaxS = 5.0;
constexpr double kBackoffJitter = 0.2;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

int64_t wall_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& target) {
    grpc::ChannelArguments args;
    // A private subchannel pool: each channel opens its own TCP connection, as separate
    // sensors would.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(picket::bundle::kMaxMessageBytes);
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
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

// ---------------------------------------------------------------------------------------
// Simulated sensors

enum class LinkState { kConnecting, kConnected, kFailed, kEnded };

class Call;

struct SimSensor {
    int index = 0;
    std::string name;
    int64_t started_at = 0;
    std::mutex mu;
    Call* call = nullptr;   // under mu; the live attempt, if any
    uint64_t seq = 0;       // under mu
    uint64_t pkts = 0;      // under mu
    v1::BundleRef running;  // under mu
    uint32_t attempt = 0;   // under mu; failed attempts since the last Welcome
    std::string error;      // under mu; the last attempt's error
    std::atomic<LinkState> state{LinkState::kConnecting};
    bool was_connected = false;        // under mu; welcomed before the kill (--kill-restart)
    bool reconnected = false;          // under mu; welcomed again after the kill
    size_t addr = 0;                   // under mu; the replica (index in Fleet::targets) of the
                                       // live attempt, or of the next one
    bool orphan = false;               // under mu; connected to the killed manager at the kill
    Clock::time_point reconnected_at;  // under mu; an orphan's Welcome after the kill
};

struct Fleet {
    std::vector<std::string> targets;  // one per manager replica
    int streams_per_channel = 1;
    std::vector<std::unique_ptr<SimSensor>> sensors;
    // --streams-per-channel S > 1: the streams i with the same i / (S * N) share, per replica,
    // one channel (index group * N + replica): S streams on each, until a failover moves
    // streams onto their group's channel to another replica.
    std::vector<std::shared_ptr<grpc::Channel>> group_channels;

    std::mutex mu;
    std::condition_variable cv;
    int settled = 0;           // under mu: initial attempts that ended in Welcome or failure
    int reconnected = 0;       // under mu: orphans welcomed again after the kill
    int other_reconnects = 0;  // under mu: other sensors welcomed again after the kill
    int live_calls = 0;        // under mu: attempts whose OnDone has not run yet
    std::string first_error;   // under mu
    // Attempts whose OnDone ran, deleted by the scheduler thread (never in a reaction). An
    // ended attempt's ClientContext keeps its call, and so its transport and socket, and its
    // channel keeps reconnecting in the background (pick_first): kept until the end, they ran
    // this process out of file descriptors after the kill at 10,000 sensors.
    std::vector<Call*> graveyard;  // under mu

    std::atomic<uint64_t> reports_sent{0};  // report writes that completed ok
    std::atomic<uint64_t> report_write_failures{0};
    std::atomic<int64_t> reports_queued{0};  // reports queued, write not completed yet
    std::atomic<uint64_t> pings{0};
    std::atomic<uint64_t> applies{0};
    std::atomic<bool> metrics_paused{true};
    std::atomic<bool> reconnect{false};  // an ended stream reconnects (after the kill)
    std::atomic<bool> stopping{false};

    // Scheduler: reconnect attempts due at a time (sensor index), min-heap.
    std::mutex timer_mu;
    std::condition_variable timer_cv;
    std::priority_queue<std::pair<Clock::time_point, int>,
                        std::vector<std::pair<Clock::time_point, int>>, std::greater<>>
        timers;                  // under timer_mu
    std::mt19937_64 rng{12345};  // under timer_mu
};

void schedule_reconnect(Fleet& fleet, int index, uint32_t attempt) {
    std::lock_guard<std::mutex> lock(fleet.timer_mu);
    double base = kBackoffInitialS;
    for (uint32_t i = 0; i < attempt && base < kBackoffMaxS; ++i) {
        base *= 2;
    }
    base = std::min(base, kBackoffMaxS);
    const double unit = std::uniform_real_distribution<double>(0.0, 1.0)(fleet.rng);
    const double delay = base * (1.0 - kBackoffJitter + 2.0 * kBackoffJitter * unit);
    fleet.timers.emplace(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(delay)),
                         index);
    fleet.timer_cv.notify_one();
}

// One SensorLink.Connect attempt of a sensor. A read is always outstanding until the stream
// ends; writes go through a queue (gRPC allows one write in flight). A hold keeps OnDone from
// running while the scheduler may still start a write: it is released once the read side
// ended (closed_) and no write is in flight, decided under the sensor's mutex. No gRPC call is
// made with the mutex held (a reaction may run inline in the calling thread).
class Call : public grpc::ClientBidiReactor<v1::SensorMessage, v1::ManagerMessage> {
public:
    Call(Fleet& fleet, SimSensor& s, std::shared_ptr<grpc::Channel> channel)
        : fleet_(fleet), s_(s), stub_(v1::SensorLink::NewStub(std::move(channel))) {}

    // Under s_.mu: queues a message. Returns false when the stream is closed; *start is the
    // message the caller must StartWrite once it released the mutex (nullptr: a write is
    // already in flight and OnWriteDone continues with the queue).
    bool queue_locked(v1::SensorMessage&& m, const v1::SensorMessage** start) {
        *start = nullptr;
        if (closed_ || !welcomed_) {
            return false;
        }
        if (m.has_metrics()) {
            ++fleet_.reports_queued;
        }
        outq_.push_back(std::move(m));
        if (!writing_) {
            writing_ = true;
            *start = &outq_.front();
        }
        return true;
    }

    void write(const v1::SensorMessage* m) { StartWrite(m); }

    void start() {
        v1::SensorMessage hello_msg;
        {
            std::lock_guard<std::mutex> lock(s_.mu);
            v1::Hello* hello = hello_msg.mutable_hello();
            hello->set_sensor_name(s_.name);
            hello->set_host("fleet-bench");
            hello->set_version("0.1.0");
            hello->set_capture_mode(v1::CAPTURE_MODE_AF_PACKET);
            hello->set_capture_source("eth1");
            hello->set_workers(1);
            (*hello->mutable_labels())["site"] = "site" + std::to_string(s_.index % 10);
            (*hello->mutable_labels())["role"] = s_.index % 2 == 0 ? "edge" : "core";
            hello->set_started_at(s_.started_at);
            if (s_.running.version() != 0) {
                *hello->mutable_bundle() = s_.running;
            }
            s_.call = this;
            outq_.push_back(std::move(hello_msg));
            writing_ = true;
        }
        {
            std::lock_guard<std::mutex> lock(fleet_.mu);
            ++fleet_.live_calls;
        }
        stub_->async()->Connect(&ctx_, this);
        AddHold();
        StartWrite(&outq_.front());
        StartRead(&in_);
        StartCall();
    }

    void cancel() { ctx_.TryCancel(); }

    void OnWriteDone(bool ok) override {
        const v1::SensorMessage* next = nullptr;
        bool release = false;
        {
            std::lock_guard<std::mutex> lock(s_.mu);
            if (outq_.front().has_metrics()) {
                --fleet_.reports_queued;
                ++(ok ? fleet_.reports_sent : fleet_.report_write_failures);
            }
            outq_.pop_front();
            if (!ok) {
                // The stream is broken: what is still queued is never written.
                for (const v1::SensorMessage& m : outq_) {
                    if (m.has_metrics()) {
                        --fleet_.reports_queued;
                        ++fleet_.report_write_failures;
                    }
                }
                outq_.clear();
            }
            if (!outq_.empty()) {
                next = &outq_.front();
            } else {
                writing_ = false;
                release = closed_ && !released_;
                released_ = released_ || release;
            }
        }
        if (next != nullptr) {
            StartWrite(next);
        } else if (release) {
            RemoveHold();
        }
    }

    void OnReadDone(bool ok) override {
        if (!ok) {
            close();
            return;
        }
        if (!welcomed_) {
            if (!in_.has_welcome() || !in_.welcome().accepted()) {
                {
                    std::lock_guard<std::mutex> lock(s_.mu);
                    error_ = "no welcome";
                }
                cancel();
                close();
                return;
            }
            on_welcome();
            StartRead(&in_);
            return;
        }
        v1::SensorMessage out;
        if (in_.has_ping()) {
            out.mutable_pong()->set_nonce(in_.ping().nonce());
            out.mutable_pong()->set_sent_at(in_.ping().sent_at());
            ++fleet_.pings;
        } else if (in_.has_apply_bundle()) {
            const v1::ApplyBundle& ab = in_.apply_bundle();
            v1::ApplyResult* r = out.mutable_apply_result();
            r->set_deployment_id(ab.deployment_id());
            r->set_version(ab.bundle().manifest().version());
            r->set_applied(true);
            r->set_rules_loaded(count_rule_lines(ab.bundle()));
            r->set_compile_ms(1);
            *r->mutable_running() = picket::bundle::bundle_ref(ab.bundle());
            ++fleet_.applies;
            // Not kept until the next message: K streams holding a 20 MB bundle each would
            // measure this process, not the manager.
            in_.Clear();
        }
        if (out.has_pong() || out.has_apply_result()) {
            const v1::SensorMessage* start = nullptr;
            {
                std::lock_guard<std::mutex> lock(s_.mu);
                if (out.has_apply_result()) {
                    s_.running = out.apply_result().running();
                }
                queue_locked(std::move(out), &start);
            }
            if (start != nullptr) {
                StartWrite(start);
            }
        }
        StartRead(&in_);
    }

    void OnDone(const grpc::Status& status) override {
        bool settle_initial = false;
        bool retry = false;
        uint32_t attempt = 0;
        std::string error;
        {
            std::lock_guard<std::mutex> lock(s_.mu);
            if (s_.call == this) {
                s_.call = nullptr;
            }
            error = !error_.empty() ? error_
                    : status.ok()
                        ? std::string("stream ended")
                        : std::to_string(status.error_code()) + " " + status.error_message();
            if (!fleet_.stopping) {
                s_.error = error;
            }
            if (!welcomed_ && s_.state == LinkState::kConnecting) {
                s_.state = LinkState::kFailed;
                settle_initial = true;
            } else if (welcomed_ && !fleet_.stopping) {
                s_.state = LinkState::kEnded;
            }
            if (welcomed_) {
                s_.attempt = 0;
            }
            retry = fleet_.reconnect && !fleet_.stopping && s_.was_connected;
            // As the sensor's agent: the next address in the list, the backoff growing once
            // per pass over the whole list without a Welcome.
            const size_t n = fleet_.targets.size();
            attempt = s_.attempt / static_cast<uint32_t>(n);
            if (retry) {
                s_.addr = (s_.addr + 1) % n;
            }
            if (retry && !welcomed_) {
                s_.attempt = std::min<uint32_t>(s_.attempt + 1, 1u << 20);
            }
        }
        if (retry) {
            schedule_reconnect(fleet_, s_.index, attempt);
        }
        std::lock_guard<std::mutex> lock(fleet_.mu);
        fleet_.graveyard.push_back(this);  // `this` is not touched after the unlock
        if (settle_initial) {
            ++fleet_.settled;
            if (fleet_.first_error.empty()) {
                fleet_.first_error = error;
            }
        }
        --fleet_.live_calls;
        fleet_.cv.notify_all();
    }

private:
    void on_welcome() {
        bool first = false;
        bool again = false;
        bool orphan = false;
        {
            std::lock_guard<std::mutex> lock(s_.mu);
            welcomed_ = true;
            s_.attempt = 0;
            if (s_.state == LinkState::kConnecting) {
                first = true;
            }
            s_.state = LinkState::kConnected;
            if (fleet_.reconnect && s_.was_connected && !s_.reconnected) {
                s_.reconnected = true;
                s_.reconnected_at = Clock::now();
                again = true;
                orphan = s_.orphan;
            }
        }
        if (first || again) {
            std::lock_guard<std::mutex> lock(fleet_.mu);
            fleet_.settled += first ? 1 : 0;
            fleet_.reconnected += again && orphan ? 1 : 0;
            fleet_.other_reconnects += again && !orphan ? 1 : 0;
            fleet_.cv.notify_all();
        }
    }

    void close() {
        bool release = false;
        {
            std::lock_guard<std::mutex> lock(s_.mu);
            closed_ = true;
            release = !writing_ && !released_;
            released_ = released_ || release;
        }
        if (release) {
            RemoveHold();
        }
    }

    Fleet& fleet_;
    SimSensor& s_;
    std::unique_ptr<v1::SensorLink::Stub> stub_;
    grpc::ClientContext ctx_;
    v1::ManagerMessage in_;               // owned by the read in flight
    std::deque<v1::SensorMessage> outq_;  // under s_.mu; front() is the write in flight
    bool writing_ = false;                // under s_.mu
    bool closed_ = false;                 // under s_.mu
    bool released_ = false;               // under s_.mu
    bool welcomed_ = false;               // set by the reaction thread before any write is queued
    std::string error_;                   // under s_.mu
};

// Starts a connection attempt of sensor `index` (initial connect or reconnect).
void start_attempt(Fleet& fleet, int index) {
    SimSensor& s = *fleet.sensors[static_cast<size_t>(index)];
    Call* call = nullptr;
    {
        std::lock_guard<std::mutex> lock(s.mu);
        if (fleet.stopping) {
            return;
        }
        std::shared_ptr<grpc::Channel> channel;
        if (fleet.streams_per_channel > 1) {
            const size_t n = fleet.targets.size();
            const size_t group = static_cast<size_t>(index / fleet.streams_per_channel) / n;
            channel = fleet.group_channels[group * n + s.addr];
        } else {
            // Every attempt opens a fresh channel, as the real sensor does (gRPC's own
            // subchannel backoff would otherwise stack on ours).
            channel = make_channel(fleet.targets[s.addr]);
        }
        call = new Call(fleet, s, channel);  // deleted through fleet.graveyard after OnDone
    }
    call->start();
}

// One report of a sensor: monotonic totals, as a real sensor sends them. Under s.mu.
v1::SensorMessage metrics_report(SimSensor& s, uint64_t interval_ms) {
    s.pkts += 1000;
    v1::SensorMessage m;
    v1::MetricsReport* r = m.mutable_metrics();
    r->set_timestamp(wall_ns());
    r->set_interval_ms(interval_ms);
    r->set_seq(++s.seq);
    r->set_bundle_version(s.running.version());
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

// A report for sensor i, if its stream is up. The counters only advance for a queued report,
// so the manager's run totals / 1000 count exactly the reports it stored.
void send_report(Fleet& fleet, size_t i, uint64_t interval_ms) {
    SimSensor& s = *fleet.sensors[i];
    const v1::SensorMessage* start = nullptr;
    Call* call = nullptr;
    {
        std::lock_guard<std::mutex> lock(s.mu);
        call = s.call;
        if (call == nullptr) {
            return;
        }
        v1::SensorMessage m = metrics_report(s, interval_ms);
        if (!call->queue_locked(std::move(m), &start)) {
            s.pkts -= 1000;
            --s.seq;
            return;
        }
    }
    if (start != nullptr) {
        call->write(start);
    }
}

// The scheduler thread: stream i reports at offset i * interval / K within each interval (the
// schedule runs on while paused, nothing is sent then), and reconnect attempts start when due.
void run_scheduler(Fleet& fleet, double interval_s) {
    const size_t k = fleet.sensors.size();
    const auto interval = std::chrono::duration<double>(interval_s);
    const uint64_t interval_ms = static_cast<uint64_t>(interval_s * 1000);
    const Clock::time_point t0 = Clock::now();
    uint64_t tick = 0;
    auto due_of = [&](uint64_t t) {
        const size_t i = t % k;
        const uint64_t round = t / k;
        return t0 + std::chrono::duration_cast<Clock::duration>(
                        interval * (static_cast<double>(round) +
                                    static_cast<double>(i) / static_cast<double>(k)));
    };
    while (!fleet.stopping) {
        std::vector<Call*> dead;
        {
            std::lock_guard<std::mutex> lock(fleet.mu);
            dead.swap(fleet.graveyard);
        }
        for (Call* c : dead) {
            delete c;
        }
        std::vector<int> reconnects;
        {
            std::unique_lock<std::mutex> lock(fleet.timer_mu);
            Clock::time_point wake =
                std::min(due_of(tick), Clock::now() + std::chrono::milliseconds(100));
            if (!fleet.timers.empty()) {
                wake = std::min(wake, fleet.timers.top().first);
            }
            fleet.timer_cv.wait_until(lock, wake);
            const Clock::time_point now = Clock::now();
            while (!fleet.timers.empty() && fleet.timers.top().first <= now) {
                reconnects.push_back(fleet.timers.top().second);
                fleet.timers.pop();
            }
        }
        for (int index : reconnects) {
            start_attempt(fleet, index);
        }
        const Clock::time_point now = Clock::now();
        while (!fleet.stopping && due_of(tick) <= now) {
            if (!fleet.metrics_paused) {
                send_report(fleet, tick % k, interval_ms);
            }
            ++tick;
        }
    }
}

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

// `replica` empty: one manager (argv exactly --listen ADDR --db PATH --insecure, which
// tests/e2e/fleet_load_test.py's wrapper relies on); else --replica-name too.
pid_t spawn_manager(const std::string& bin, const std::string& listen, const std::string& db,
                    const std::string& log_path, const std::string& replica = "") {
    pid_t pid = fork();
    if (pid != 0) {
        return pid;
    }
    // The parent blocks SIGTERM/SIGINT for its signal thread; the mask survives exec.
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    if (replica.empty()) {
        execl(bin.c_str(), bin.c_str(), "--listen", listen.c_str(), "--db", db.c_str(),
              "--insecure", static_cast<char*>(nullptr));
    } else {
        execl(bin.c_str(), bin.c_str(), "--listen", listen.c_str(), "--db", db.c_str(),
              "--insecure", "--replica-name", replica.c_str(), static_cast<char*>(nullptr));
    }
    _exit(127);
}

// Processes to end if this tool is stopped by a signal (run.sh's timeout): the managers and
// the PostgreSQL server it started. A thread of its own waits for SIGTERM/SIGINT (blocked in
// every other thread), SIGKILLs the managers, stops the server and exits 143.
struct Cleanup {
    std::mutex mu;
    std::vector<pid_t> managers;          // under mu
    std::function<void()> stop_postgres;  // under mu
    std::string work_dir;                 // under mu; removed too
};

Cleanup& cleanup() {
    static Cleanup c;
    return c;
}

void track_manager(pid_t old_pid, pid_t new_pid) {
    std::lock_guard<std::mutex> lock(cleanup().mu);
    auto& v = cleanup().managers;
    v.erase(std::remove(v.begin(), v.end(), old_pid), v.end());
    if (new_pid > 0) {
        v.push_back(new_pid);
    }
}

void start_signal_thread() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::thread([set] {
        int sig = 0;
        sigwait(&set, &sig);
        std::fprintf(stderr, "fleet_load: signal %d: stopping the managers and PostgreSQL\n", sig);
        std::lock_guard<std::mutex> lock(cleanup().mu);
        for (pid_t pid : cleanup().managers) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
        if (cleanup().stop_postgres) {
            cleanup().stop_postgres();
        }
        if (!cleanup().work_dir.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(cleanup().work_dir, ec);
        }
        _exit(143);
    }).detach();
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

// CPU seconds of a PostgreSQL server: the postmaster (its PID is the first line of
// DATADIR/postmaster.pid) with its reaped children (cutime, cstime), plus its live children
// (every /proc/PID/stat whose ppid is the postmaster). -1 when unreadable.
double postgres_cpu_s(const std::string& data_dir) {
    std::ifstream pidf(data_dir + "/postmaster.pid");
    long pm = 0;
    if (!(pidf >> pm) || pm <= 0) {
        return -1;
    }
    const double tck = static_cast<double>(sysconf(_SC_CLK_TCK));
    // Fields after the command's ")": [1] ppid, [11] utime, [12] stime, [13] cutime, [14]
    // cstime.
    auto fields = [](const std::string& path) {
        std::ifstream in(path);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::vector<std::string> f;
        size_t close_paren = text.rfind(')');
        if (close_paren != std::string::npos && close_paren + 2 < text.size()) {
            std::istringstream s(text.substr(close_paren + 2));
            std::string x;
            while (s >> x) {
                f.push_back(x);
            }
        }
        return f;
    };
    std::vector<std::string> f = fields("/proc/" + std::to_string(pm) + "/stat");
    if (f.size() < 15) {
        return -1;
    }
    double ticks = std::stod(f[11]) + std::stod(f[12]) + std::stod(f[13]) + std::stod(f[14]);
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        std::vector<std::string> c = fields(e.path().string() + "/stat");
        if (c.size() > 12 && c[1] == std::to_string(pm)) {
            ticks += std::stod(c[11]) + std::stod(c[12]);
        }
    }
    return ticks / tck;
}

// A replica's role as its log last said it ("manager replica NAME: leader"); "" if never.
std::string replica_role(const std::string& log_path, const std::string& name) {
    std::ifstream in(log_path);
    const std::string key = "manager replica " + name + ": ";
    std::string line;
    std::string role;
    while (std::getline(in, line)) {
        const size_t at = line.find(key);
        if (at != std::string::npos) {
            role = line.substr(at + key.size());
            role = role.substr(0, role.find_first_of(" \t"));
        }
    }
    return role;
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
    double rpc_ms = -1;    // the Deploy RPC itself (creating the deployment and its targets)
    int targets = 0;
    int retries = 0;  // Deploy calls answered UNAVAILABLE and made again
    int applied = 0;
    std::string id;  // the deployment, once Deploy succeeded
    std::string error;
};

// Runs `command` (output discarded); its wall time in ms, or -1 when it did not exit 0 (said
// on stderr).
double time_command(const std::string& command) {
    const Clock::time_point t0 = Clock::now();
    const int rc = std::system((command + " >/dev/null 2>&1").c_str());
    const double ms = seconds_since(t0) * 1000.0;
    if (rc != 0) {
        std::fprintf(stderr, "fleet_load: '%s' failed (status %d)\n", command.c_str(), rc);
        return -1;
    }
    return ms;
}

// `tag` makes a second bundle differ from the first (a comment in its rules, its message).
DeployOutcome push_and_deploy(const std::shared_ptr<grpc::Channel>& channel,
                              const std::filesystem::path& work, double timeout_s,
                              uint64_t pad_bytes, const std::string& tag = "") {
    DeployOutcome out;
    namespace fs = std::filesystem;
    fs::path dir = work / ("fleet-bench" + tag);
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
        if (!tag.empty()) {
            r << "# " << tag << "\n";
        }
        if (pad_bytes > 0) {
            std::ofstream pad(dir / "rules" / "padding.rules");
            std::string line(63, '#');
            line.push_back('\n');
            for (uint64_t n = 0; n < pad_bytes; n += line.size()) {
                pad << line;
            }
        }
        std::ofstream c(dir / "config.yaml");
        c << "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n";
    }
    auto b = picket::bundle::load_bundle_dir(dir);
    if (!b.ok()) {
        out.error = "load_bundle_dir: " + std::string(b.status().message());
        return out;
    }
    b->mutable_manifest()->set_author("fleet_load");
    b->mutable_manifest()->set_message("fleet scale benchmark" + tag);
    b->mutable_manifest()->set_created_at(wall_ns());
    auto admin = v1::FleetAdmin::NewStub(channel);
    v1::PushBundleRequest preq;
    *preq.mutable_bundle() = std::move(*b);
    v1::PushBundleResponse presp;
    {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
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
    // UNAVAILABLE is retried (up to 5 times, as an operator would): with replicas on
    // PostgreSQL the Deploy's transaction, which locks every target's sensor row, can deadlock
    // with another replica's writer updating those rows for reports (a manager issue).
    for (;;) {
        grpc::ClientContext ctx;
        const double left_s = std::max(0.001, timeout_s - seconds_since(t0));
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(static_cast<int64_t>(left_s * 1000)));
        grpc::Status st = admin->Deploy(&ctx, dreq, &dresp);
        if (st.error_code() == grpc::StatusCode::UNAVAILABLE && out.retries < 5 &&
            seconds_since(t0) < timeout_s) {
            ++out.retries;
            std::fprintf(stderr, "fleet_load: Deploy: %s; again\n", st.error_message().c_str());
            continue;
        }
        if (!st.ok()) {
            out.error = "Deploy: " + st.error_message();
            return out;
        }
        out.rpc_ms = seconds_since(t0) * 1000.0;
        break;
    }
    const std::string id = dresp.deployment().id();
    out.id = id;
    while (seconds_since(t0) < timeout_s) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
        v1::GetDeploymentRequest greq;
        greq.set_id(id);
        greq.set_counts_only(true);  // 10,000 targets every 50 ms would load the manager
        v1::GetDeploymentResponse gresp;
        grpc::Status st = admin->GetDeployment(&ctx, greq, &gresp);
        if (st.ok()) {
            out.targets = static_cast<int>(gresp.deployment().target_counts().total());
            out.applied = static_cast<int>(gresp.deployment().target_counts().applied());
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

// The deployment as the manager has it; nullopt when GetDeployment failed.
std::optional<v1::Deployment> get_deployment(const std::shared_ptr<grpc::Channel>& channel,
                                             const std::string& id) {
    auto admin = v1::FleetAdmin::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::GetDeploymentRequest req;
    req.set_id(id);
    v1::GetDeploymentResponse resp;
    if (!admin->GetDeployment(&ctx, req, &resp).ok()) {
        return std::nullopt;
    }
    return resp.deployment();
}

// Same state, same targets in the same states (by sensor name).
bool same_deployment_state(const v1::Deployment& a, const v1::Deployment& b) {
    if (a.state() != b.state() || a.targets_size() != b.targets_size()) {
        return false;
    }
    std::map<std::string, std::pair<int, uint64_t>> ta;
    for (const v1::DeploymentTarget& t : a.targets()) {
        ta[t.sensor()] = {t.state(), t.version()};
    }
    for (const v1::DeploymentTarget& t : b.targets()) {
        auto it = ta.find(t.sensor());
        if (it == ta.end() ||
            it->second != std::make_pair(static_cast<int>(t.state()), t.version())) {
            return false;
        }
    }
    return true;
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
                 "                  [--streams-per-channel N] [--connect-window N]\n"
                 "                  [--connect-timeout S] [--deploy-timeout S] [--kill-restart]\n"
                 "                  [--managers N [--kill-replica] [--no-warmup]]\n"
                 "                  [--bundle-mb MB] [--picketctl PATH]\n");
}

bool parse(int argc, char** argv, Options* o) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--kill-restart") {
            o->kill_restart = true;
            continue;
        }
        if (a == "--kill-replica") {
            o->kill_replica = true;
            continue;
        }
        if (a == "--no-warmup") {
            o->warmup = false;
            continue;
        }
        if (i + 1 >= argc) {
            std::fprintf(stderr, "fleet_load: %s needs a value\n", a.c_str());
            return false;
        }
        std::string v = argv[++i];
        try {
            size_t used = 0;
            if (a == "--sensors") {
                o->sensors = std::stoi(v, &used);
            } else if (a == "--interval") {
                o->interval_s = std::stod(v, &used);
            } else if (a == "--soak") {
                o->soak_s = std::stod(v, &used);
            } else if (a == "--manager-bin") {
                o->manager_bin = v;
                used = v.size();
            } else if (a == "--streams-per-channel") {
                o->streams_per_channel = std::stoi(v, &used);
            } else if (a == "--connect-window") {
                o->connect_window = std::stoi(v, &used);
            } else if (a == "--connect-timeout") {
                o->connect_timeout_s = std::stod(v, &used);
            } else if (a == "--managers") {
                o->managers = std::stoi(v, &used);
            } else if (a == "--deploy-timeout") {
                o->deploy_timeout_s = std::stod(v, &used);
            } else if (a == "--picketctl") {
                o->picketctl = v;
                used = v.size();
            } else if (a == "--bundle-mb") {
                const double mb = std::stod(v, &used);
                if (!(mb >= 0 && mb <= 60)) {
                    std::fprintf(stderr, "fleet_load: --bundle-mb must be in [0, 60]\n");
                    return false;
                }
                o->bundle_pad_bytes = static_cast<uint64_t>(mb * 1024 * 1024);
            } else {
                std::fprintf(stderr, "fleet_load: unknown option %s\n", a.c_str());
                return false;
            }
            if (used != v.size()) {
                throw std::invalid_argument(v);
            }
        } catch (const std::exception&) {
            std::fprintf(stderr, "fleet_load: %s: '%s' is not a number\n", a.c_str(), v.c_str());
            return false;
        }
    }
    if (o->manager_bin.empty()) {
        std::fprintf(stderr, "fleet_load: --manager-bin is required\n");
        return false;
    }
    if (o->sensors <= 0 || o->interval_s <= 0 || o->soak_s <= 0 || o->streams_per_channel <= 0 ||
        o->connect_window <= 0 || o->managers <= 0) {
        std::fprintf(stderr,
                     "fleet_load: --sensors, --interval, --soak, --streams-per-channel, "
                     "--connect-window and --managers must be above 0\n");
        return false;
    }
    if (o->managers > 1 && o->kill_restart) {
        std::fprintf(stderr,
                     "fleet_load: --managers above 1 goes with --kill-replica, not "
                     "--kill-restart\n");
        return false;
    }
    if (o->managers == 1 && o->kill_replica) {
        std::fprintf(stderr, "fleet_load: --kill-replica needs --managers 2 or more\n");
        return false;
    }
    return true;
}

// Raises RLIMIT_NOFILE for K connections here and K in the manager (which inherits it): the soft
// limit to the hard one, and the hard one too when it is below what K needs and this process may
// (root / CAP_SYS_RESOURCE). Warns when the limit stays too low.
void raise_fd_limit(int connections) {
    const rlim_t want = static_cast<rlim_t>(connections) + 1024;
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return;
    }
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        rlimit up{want, want};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            std::fprintf(stderr, "fleet_load: raised the fd hard limit from %llu to %llu\n",
                         static_cast<unsigned long long>(rl.rlim_max),
                         static_cast<unsigned long long>(want));
            return;
        }
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < static_cast<rlim_t>(connections) + 256) {
        std::fprintf(stderr,
                     "fleet_load: warning: fd limit %llu (hard limit, not raisable by this user) "
                     "is below connections + 256 = %d: streams will fail; raise it with ulimit -Hn "
                     "as root\n",
                     static_cast<unsigned long long>(rl.rlim_cur), connections + 256);
    }
}

// Waits until the manager answers on `target`. Each try is a fresh channel: a channel whose
// first connect was refused waits out gRPC's reconnect backoff (1 s), which would make a restart
// look slower than it is. The deadline of a try doubles from 200 ms to 5 s (a manager busy with
// thousands of reconnecting streams may take longer than 200 ms to answer a handshake).
std::shared_ptr<grpc::Channel> wait_manager(const std::string& target, double timeout_s) {
    const Clock::time_point t0 = Clock::now();
    int64_t try_ms = 200;
    while (seconds_since(t0) < timeout_s) {
        auto channel = make_channel(target);
        if (channel->WaitForConnected(std::chrono::system_clock::now() +
                                      std::chrono::milliseconds(try_ms))) {
            return channel;
        }
        try_ms = std::min<int64_t>(try_ms * 2, 5000);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return nullptr;
}

// Waits until no report write is in flight (at most 10 s), so reports_sent is final.
void wait_reports_written(Fleet& fleet) {
    const Clock::time_point t0 = Clock::now();
    while (fleet.reports_queued.load() > 0 && seconds_since(t0) < 10) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// A picket-manager child: the one manager (SQLite), or a replica on the PostgreSQL database.
struct Replica {
    std::string name;  // "" for the one manager; rN for a replica
    std::string target;
    std::string log_path;
    pid_t pid = -1;
    std::shared_ptr<grpc::Channel> admin;
};

struct KillOutcome {
    int expected = 0;          // streams connected to the killed manager at the kill
    int reconnected = 0;       // of those, welcomed again (restarted manager / another replica)
    int other_reconnects = 0;  // streams of other replicas that ended and were welcomed again
    double reconnect_s = -1;   // from the kill to the last of them reconnected (-1: not all)
    double median_s = -1;      // median of those streams' kill-to-Welcome times
    double restart_s = -1;     // from the kill to the restarted manager answering
    int64_t stored_before = -1;
    int64_t stored_after = -1;
    uint64_t sent_at_kill = 0;
    bool deployment_kept = false;
    std::string error;
};

// After the deploy: metrics resume for one interval (reports in flight at the kill), the
// stored figures are noted, manager `victim` is SIGKILLed; with one manager it is restarted on
// the same database and port, with replicas its streams move to the next replica in their
// list. Every stream of the killed manager reconnects with backoff; then the stored figures are
// read again through `*after_admin` (the restarted manager, or the replica after the victim).
KillOutcome kill_phase(Fleet& fleet, const Options& opt, std::vector<Replica>& reps, size_t victim,
                       const std::string& db, const std::string& deployment_id,
                       std::shared_ptr<grpc::Channel>* after_admin) {
    KillOutcome k;
    const bool restart = reps.size() == 1;
    std::shared_ptr<grpc::Channel> admin =
        restart ? reps[0].admin : reps[(victim + 1) % reps.size()].admin;
    for (auto& s : fleet.sensors) {
        std::lock_guard<std::mutex> lock(s->mu);
        s->was_connected = s->state == LinkState::kConnected;
        s->orphan = s->was_connected && s->addr == victim;
        k.expected += s->orphan ? 1 : 0;
    }
    fleet.reconnect = true;
    fleet.metrics_paused = false;
    std::this_thread::sleep_for(std::chrono::duration<double>(opt.interval_s));
    k.stored_before = reports_stored(admin, opt.sensors);
    std::optional<v1::Deployment> dep_before;
    if (!deployment_id.empty()) {
        dep_before = get_deployment(admin, deployment_id);
    }
    fleet.metrics_paused = true;
    const Clock::time_point k0 = Clock::now();
    Replica& v = reps[victim];
    kill(v.pid, SIGKILL);
    waitpid(v.pid, nullptr, 0);
    track_manager(v.pid, -1);
    v.pid = -1;
    v.admin = nullptr;
    wait_reports_written(fleet);
    k.sent_at_kill = fleet.reports_sent.load();
    if (restart) {
        v.pid = spawn_manager(opt.manager_bin, v.target, db, v.log_path);
        if (v.pid < 0) {
            k.error = "fork failed";
            return k;
        }
        track_manager(-1, v.pid);
        v.admin = wait_manager(v.target, 60);
        if (v.admin != nullptr) {
            k.restart_s = seconds_since(k0);
        }
    }
    {
        std::unique_lock<std::mutex> lock(fleet.mu);
        fleet.cv.wait_for(lock, std::chrono::duration<double>(opt.connect_timeout_s),
                          [&] { return fleet.reconnected >= k.expected; });
        k.reconnected = fleet.reconnected;
    }
    if (k.reconnected >= k.expected) {
        k.reconnect_s = seconds_since(k0);
    }
    std::vector<double> times;
    for (auto& s : fleet.sensors) {
        std::lock_guard<std::mutex> lock(s->mu);
        if (s->orphan && s->reconnected) {
            times.push_back(std::chrono::duration<double>(s->reconnected_at - k0).count());
        }
    }
    if (!times.empty()) {
        std::sort(times.begin(), times.end());
        k.median_s = times[times.size() / 2];
    }
    {
        std::lock_guard<std::mutex> lock(fleet.mu);
        k.other_reconnects = fleet.other_reconnects;
    }
    if (restart && v.admin == nullptr) {
        v.admin = wait_manager(v.target, 60);
    }
    *after_admin = restart ? v.admin : admin;
    if (*after_admin == nullptr) {
        k.error = "restarted manager not reachable on " + v.target;
        return k;
    }
    // No report is sent from the kill on, so what History counts now is what survived.
    k.stored_after = reports_stored(*after_admin, opt.sensors);
    if (dep_before.has_value()) {
        std::optional<v1::Deployment> dep_after = get_deployment(*after_admin, deployment_id);
        k.deployment_kept = dep_after.has_value() && same_deployment_state(*dep_before, *dep_after);
        if (!k.deployment_kept) {
            std::fprintf(
                stderr, "fleet_load: deployment %s before the kill: %s\nafter: %s\n",
                deployment_id.c_str(), dep_before->ShortDebugString().substr(0, 400).c_str(),
                dep_after.has_value() ? dep_after->ShortDebugString().substr(0, 400).c_str()
                                      : "GetDeployment failed");
        }
    } else {
        k.error = "no deployment to compare (the deploy failed)";
    }
    return k;
}

void stop_all(std::vector<Replica>& reps) {
    for (Replica& r : reps) {
        if (r.pid > 0) {
            stop_manager(r.pid);
            track_manager(r.pid, -1);
            r.pid = -1;
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    // As in picket-manager: Debian's abseil tracks every absl::Mutex (gRPC's) in a global lock
    // graph; a perf of this tool at 10,000 streams found a quarter of its CPU there, taken from
    // the manager it measures on the same cores.
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
    Options opt;
    if (!parse(argc, argv, &opt)) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    start_signal_thread();  // before any other thread: they inherit the blocked signals
    // One connection per stream, or per --streams-per-channel streams.
    raise_fd_limit((opt.sensors + opt.streams_per_channel - 1) / opt.streams_per_channel);
    const bool ha = opt.managers > 1;
    const bool killing = opt.kill_restart || opt.kill_replica;

    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/picket-fleet-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        std::perror("fleet_load: mkdtemp");
        return 1;
    }
    const fs::path work = tmpl;
    {
        std::lock_guard<std::mutex> lock(cleanup().mu);
        cleanup().work_dir = work.string();
    }
    std::string db = (work / "fleet.db").string();
#ifdef PICKET_FLEET_POSTGRES
    std::unique_ptr<picket::testing::PostgresServer> pg;
#endif
    std::string pg_data;
    if (ha) {
        std::string why = "fleet_load was built without libpq";
#ifdef PICKET_FLEET_POSTGRES
        pg = picket::testing::PostgresServer::start(&why);
        if (pg != nullptr) {
            db = pg->fresh_dsn();
            pg_data = pg->dir() + "/data";
            std::lock_guard<std::mutex> lock(cleanup().mu);
            cleanup().stop_postgres = [&pg] { pg.reset(); };
        }
        if (pg == nullptr)
#endif
        {
            std::fprintf(stderr, "fleet_load: --managers %d needs PostgreSQL binaries: %s\n",
                         opt.managers, why.c_str());
            std::error_code ec;
            fs::remove_all(work, ec);
            return 3;
        }
    }
    std::vector<Replica> reps(static_cast<size_t>(opt.managers));
    bool started = true;
    for (size_t r = 0; r < reps.size(); ++r) {
        Replica& rep = reps[r];
        rep.name = ha ? "r" + std::to_string(r) : "";
        rep.target = "127.0.0.1:" + std::to_string(free_port());
        rep.log_path = (work / (ha ? "manager-" + rep.name + ".log" : "manager.log")).string();
        rep.pid = spawn_manager(opt.manager_bin, rep.target, db, rep.log_path, rep.name);
        if (rep.pid < 0) {
            std::perror("fleet_load: fork");
            started = false;
            break;
        }
        track_manager(-1, rep.pid);
        // One at a time: each replica migrates / checks the schema at start.
        rep.admin = wait_manager(rep.target, 30);
        if (rep.admin == nullptr) {
            std::fprintf(stderr, "fleet_load: manager %s not reachable on %s within 30 s\n",
                         rep.name.c_str(), rep.target.c_str());
            print_log_tail(rep.log_path);
            started = false;
            break;
        }
    }
    if (!started) {
        stop_all(reps);
        std::error_code ec;
        fs::remove_all(work, ec);
        return 1;
    }
    auto sample_all = [&] {
        std::vector<ProcSample> v;
        for (const Replica& r : reps) {
            v.push_back(r.pid > 0 ? sample_proc(r.pid) : ProcSample{});
        }
        return v;
    };
    auto sum = [](const std::vector<ProcSample>& v) {
        ProcSample t;
        for (const ProcSample& p : v) {
            t.cpu_s += p.cpu_s;
            t.rss_mb += p.rss_mb;
            t.hwm_mb += p.hwm_mb;
            t.threads += p.threads;
        }
        return t;
    };
    const ProcSample idle = sum(sample_all());

    // ---- connect K streams, at most --connect-window handshakes in flight; stream i on
    // replica i mod N
    Fleet fleet;
    for (const Replica& r : reps) {
        fleet.targets.push_back(r.target);
    }
    fleet.streams_per_channel = opt.streams_per_channel;
    const int64_t started_at = wall_ns();
    for (int i = 0; i < opt.sensors; ++i) {
        auto s = std::make_unique<SimSensor>();
        s->index = i;
        char name[32];
        std::snprintf(name, sizeof(name), "sim-%05d", i);
        s->name = name;
        s->started_at = started_at;
        s->addr = static_cast<size_t>(i) % reps.size();
        if (opt.streams_per_channel > 1 && i % (opt.streams_per_channel * opt.managers) == 0) {
            for (const Replica& r : reps) {
                fleet.group_channels.push_back(make_channel(r.target));
            }
        }
        fleet.sensors.push_back(std::move(s));
    }
    std::thread scheduler([&] { run_scheduler(fleet, opt.interval_s); });
    const Clock::time_point c0 = Clock::now();
    bool connect_timed_out = false;
    for (int i = 0; i < opt.sensors && !connect_timed_out; ++i) {
        {
            std::unique_lock<std::mutex> lock(fleet.mu);
            connect_timed_out =
                !fleet.cv.wait_until(lock,
                                     c0 + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(opt.connect_timeout_s)),
                                     [&] { return i - fleet.settled < opt.connect_window; });
        }
        if (!connect_timed_out) {
            start_attempt(fleet, i);
        }
    }
    {
        std::unique_lock<std::mutex> lock(fleet.mu);
        fleet.cv.wait_until(lock,
                            c0 + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(opt.connect_timeout_s)),
                            [&] { return fleet.settled >= opt.sensors; });
    }
    const double connect_s = seconds_since(c0);
    int connected = 0;
    int failed = 0;
    for (auto& s : fleet.sensors) {
        connected += s->state == LinkState::kConnected ? 1 : 0;
    }
    failed = opt.sensors - connected;
    std::string first_error;
    {
        std::lock_guard<std::mutex> lock(fleet.mu);
        first_error = fleet.first_error;
    }
    std::fprintf(stderr, "fleet_load: %d/%d streams connected in %.2f s (%d failed%s%s)\n",
                 connected, opt.sensors, connect_s, failed,
                 first_error.empty() ? "" : ", first: ", first_error.c_str());

    // ---- replicas: one report stored first. The first report of the fleet creates the metric
    // names; two replicas creating them at once lose a report each (the store's
    // metric_name_id: SELECT, then INSERT, which fails on the unique name; the report's
    // transaction with it), and a sensor's lost first report never enters run totals. Not what
    // this benchmark measures: --no-warmup shows it.
    if (ha && opt.warmup && connected > 0) {
        size_t first = 0;
        while (fleet.sensors[first]->state != LinkState::kConnected) {
            ++first;
        }
        send_report(fleet, first, static_cast<uint64_t>(opt.interval_s * 1000));
        wait_reports_written(fleet);
        const Clock::time_point w0 = Clock::now();
        while (reports_stored(reps[0].admin, opt.sensors) < 1 && seconds_since(w0) < 10) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }

    // ---- soak: metrics at the configured rate, managers (and PostgreSQL) measured
    fleet.metrics_paused = false;
    const std::vector<ProcSample> before = sample_all();
    const double pg_before = pg_data.empty() ? -1 : postgres_cpu_s(pg_data);
    const double self_before = self_cpu_s();
    const uint64_t reports_before = fleet.reports_sent.load();
    const Clock::time_point s0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(opt.soak_s));
    const double soak_wall = seconds_since(s0);
    const std::vector<ProcSample> after_each = sample_all();
    const double pg_after = pg_data.empty() ? -1 : postgres_cpu_s(pg_data);
    const ProcSample after = sum(after_each);
    const double self_after = self_cpu_s();
    const ProcSample self = sample_proc(getpid());
    const long bench_threads = self.threads;
    const double bench_rss_mb = self.rss_mb;
    const uint64_t reports = fleet.reports_sent.load() - reports_before;
    const double cpu_pct = (after.cpu_s - sum(before).cpu_s) / soak_wall * 100.0;
    const double self_pct = (self_after - self_before) / soak_wall * 100.0;
    const double reports_per_s = static_cast<double>(reports) / soak_wall;
    std::string replica_fields;
    if (ha) {
        char buf[160];
        for (size_t r = 0; r < reps.size(); ++r) {
            std::snprintf(buf, sizeof(buf), " mgr%zu_cpu_pct=%.1f mgr%zu_rss_mb=%.1f", r,
                          (after_each[r].cpu_s - before[r].cpu_s) / soak_wall * 100.0, r,
                          after_each[r].rss_mb);
            replica_fields += buf;
        }
        std::snprintf(
            buf, sizeof(buf), " pg_cpu_pct=%.1f",
            pg_before < 0 || pg_after < 0 ? -1.0 : (pg_after - pg_before) / soak_wall * 100.0);
        replica_fields += buf;
    }

    // ---- deploy, through replica 0
    DeployOutcome d;
    if (connected > 0) {
        d = push_and_deploy(reps[0].admin, work, opt.deploy_timeout_s, opt.bundle_pad_bytes);
    } else {
        d.error = "no stream connected";
    }
    if (!d.error.empty()) {
        std::fprintf(stderr, "fleet_load: deploy: %s (%d/%d targets applied)\n", d.error.c_str(),
                     d.applied, d.targets);
    }
    // ---- an operator's view while the fleet reports: `picketctl sensors` (every page) and
    // `picketctl history`, each a process of its own, timed from start to exit.
    double sensors_cli_ms = -1;
    double history_cli_ms = -1;
    {
        std::string cli = opt.picketctl;
        if (cli.empty()) {
            const fs::path next = fs::path(opt.manager_bin).parent_path() / "cli" / "picketctl";
            std::error_code ec;
            cli = fs::exists(next, ec) ? next.string() : "";
        }
        if (!cli.empty()) {
            sensors_cli_ms =
                time_command(cli + " --manager " + reps[0].target + " --insecure sensors");
            history_cli_ms =
                time_command(cli + " --manager " + reps[0].target + " --insecure history");
        }
    }
    const ProcSample end = sum(sample_all());
    int ended = 0;
    for (auto& s : fleet.sensors) {
        ended += s->state == LinkState::kEnded ? 1 : 0;
    }

    // ---- metrics stop; check what the managers stored. The store writes reports
    // asynchronously: poll until every report is counted, the count stays put for 5 s, or 60 s
    // passed.
    fleet.metrics_paused = true;
    wait_reports_written(fleet);
    const uint64_t sent_total = fleet.reports_sent.load();
    const Clock::time_point q0 = Clock::now();
    int64_t stored = -1;
    for (int64_t prev = -2, still = 0; seconds_since(q0) < 60;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        stored = reports_stored(reps[0].admin, opt.sensors);
        still = stored == prev ? still + 1 : 0;
        if (stored < 0 || still >= 5 || static_cast<uint64_t>(stored) >= sent_total) {
            break;
        }
        prev = stored;
    }
    const double drain_s = seconds_since(q0);

    // ---- kill -9: the one manager (restarted) or the leader replica (its streams fail over)
    KillOutcome k;
    size_t victim = 0;
    std::string victim_role;
    DeployOutcome d2;
    if (killing) {
        if (ha) {
            // The leader runs the rollout passes: the most interesting one to lose. Its log
            // says so ("manager replica rN: leader"); wait up to 10 s for exactly one.
            const Clock::time_point l0 = Clock::now();
            for (;;) {
                std::vector<size_t> leaders;
                for (size_t r = 0; r < reps.size(); ++r) {
                    if (replica_role(reps[r].log_path, reps[r].name) == "leader") {
                        leaders.push_back(r);
                    }
                }
                if (leaders.size() == 1) {
                    victim = leaders[0];
                    victim_role = "leader";
                    break;
                }
                if (seconds_since(l0) > 10) {
                    std::fprintf(stderr,
                                 "fleet_load: %zu replicas say leader in their logs; killing r0\n",
                                 leaders.size());
                    victim_role = replica_role(reps[0].log_path, reps[0].name);
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }
        std::shared_ptr<grpc::Channel> after_admin;
        k = kill_phase(fleet, opt, reps, victim, db, d.id, &after_admin);
        if (!k.error.empty()) {
            std::fprintf(stderr, "fleet_load: kill: %s\n", k.error.c_str());
        }
        if (k.reconnected < k.expected) {
            for (auto& s : fleet.sensors) {
                std::lock_guard<std::mutex> lock(s->mu);
                if (s->orphan && !s->reconnected) {
                    std::fprintf(stderr, "fleet_load: %s did not reconnect: %s\n", s->name.c_str(),
                                 s->error.c_str());
                    break;
                }
            }
        }
        if (ha && after_admin != nullptr) {
            // A second deploy through a surviving replica reaches every sensor, the failed-over
            // ones included.
            d2 = push_and_deploy(after_admin, work, opt.deploy_timeout_s, opt.bundle_pad_bytes,
                                 "-after-failover");
            if (!d2.error.empty()) {
                std::fprintf(stderr, "fleet_load: deploy after the kill: %s (%d/%d applied)\n",
                             d2.error.c_str(), d2.applied, d2.targets);
            }
        }
    }

    // ---- stop streams, then the managers
    fleet.stopping = true;
    fleet.timer_cv.notify_all();
    scheduler.join();
    std::vector<Call*> live;
    for (auto& s : fleet.sensors) {
        std::lock_guard<std::mutex> lock(s->mu);
        if (s->call != nullptr) {
            live.push_back(s->call);
        }
    }
    for (Call* c : live) {
        c->cancel();  // the scheduler, which deletes ended Calls, has stopped
    }
    {
        std::unique_lock<std::mutex> lock(fleet.mu);
        if (!fleet.cv.wait_for(lock, std::chrono::seconds(30),
                               [&] { return fleet.live_calls == 0; })) {
            std::fprintf(stderr, "fleet_load: %d streams still open 30 s after cancel\n",
                         fleet.live_calls);
        }
    }
    {
        std::lock_guard<std::mutex> lock(fleet.mu);
        if (fleet.live_calls == 0) {
            for (Call* c : fleet.graveyard) {
                delete c;
            }
            fleet.graveyard.clear();
        }
    }
    double mgr_stop_s = -1;
    for (Replica& r : reps) {
        if (r.pid > 0) {
            mgr_stop_s = std::max(mgr_stop_s, stop_manager(r.pid));
            track_manager(r.pid, -1);
            r.pid = -1;
        }
    }
    if (failed > 0 || ended > 0 || (killing && k.reconnected < k.expected) ||
        (ha && killing && d2.ms < 0)) {
        for (const Replica& r : reps) {
            print_log_tail(r.log_path);
        }
    }
#ifdef PICKET_FLEET_POSTGRES
    {
        std::lock_guard<std::mutex> lock(cleanup().mu);
        cleanup().stop_postgres = nullptr;
        pg.reset();  // pg_ctl stop -m immediate, its directory removed
    }
#endif
    std::error_code ec;
    fs::remove_all(work, ec);

    std::string kill_fields;
    int64_t lost = 0;
    int64_t unstored = 0;
    if (killing) {
        lost = k.stored_before < 0 || k.stored_after < 0
                   ? -1
                   : std::max<int64_t>(0, k.stored_before - k.stored_after);
        unstored =
            k.stored_after < 0
                ? -1
                : std::max<int64_t>(0, static_cast<int64_t>(k.sent_at_kill) - k.stored_after);
        char buf[768];
        if (ha) {
            std::snprintf(
                buf, sizeof(buf),
                " killed=%s killed_role=%s failover_s=%.2f reconnect_median_s=%.2f "
                "deploy2_all_applied_ms=%s applied2=%d/%d deploy2_retries=%d",
                reps[victim].name.c_str(), victim_role.empty() ? "-" : victim_role.c_str(),
                k.reconnect_s, k.median_s,
                d2.ms < 0 ? "none" : std::to_string(static_cast<long long>(d2.ms + 0.5)).c_str(),
                d2.applied, d2.targets, d2.retries);
            kill_fields = buf;
        }
        std::snprintf(buf, sizeof(buf),
                      " reconnected=%d/%d reconnect_s=%.2f mgr_restart_s=%.2f lost_reports=%lld "
                      "deployment_state_kept=%d unstored_at_kill=%lld stored_before_kill=%lld "
                      "stored_after_restart=%lld sent_at_kill=%llu other_reconnects=%d",
                      k.reconnected, k.expected, k.reconnect_s, k.restart_s,
                      static_cast<long long>(lost), k.deployment_kept ? 1 : 0,
                      static_cast<long long>(unstored), static_cast<long long>(k.stored_before),
                      static_cast<long long>(k.stored_after),
                      static_cast<unsigned long long>(k.sent_at_kill), k.other_reconnects);
        kill_fields += buf;
    }
    std::printf(
        "fleet: K=%d managers=%d connect_s=%.2f cpu_pct=%.1f rss_mb=%.1f hwm_mb=%.1f "
        "reports_per_s=%.1f "
        "deploy_all_applied_ms=%s connected=%d failed=%d ended_early=%d report_write_failures=%llu "
        "mgr_threads=%ld bench_threads=%ld bench_rss_mb=%.1f idle_rss_mb=%.1f end_hwm_mb=%.1f "
        "applied=%d/%d "
        "bench_cpu_pct=%.1f reports_sent_total=%llu reports_stored_total=%lld "
        "store_settle_s=%.0f deploy_first_applied_ms=%.0f deploy_half_applied_ms=%.0f "
        "deploy_rpc_ms=%.0f deploy_retries=%d mgr_stop_s=%.1f picketctl_sensors_ms=%.0f "
        "picketctl_history_ms=%.0f%s%s\n",
        opt.sensors, opt.managers, connect_s, cpu_pct, after.rss_mb, after.hwm_mb, reports_per_s,
        d.ms < 0 ? "none" : std::to_string(static_cast<long long>(d.ms + 0.5)).c_str(), connected,
        failed, ended, static_cast<unsigned long long>(fleet.report_write_failures.load()),
        after.threads, bench_threads, bench_rss_mb, idle.rss_mb, end.hwm_mb, d.applied, d.targets,
        self_pct, static_cast<unsigned long long>(sent_total), static_cast<long long>(stored),
        drain_s, d.first_ms, d.half_ms, d.rpc_ms, d.retries, mgr_stop_s, sensors_cli_ms,
        history_cli_ms, replica_fields.c_str(), kill_fields.c_str());
    std::fflush(stdout);
    bool ok = connected == opt.sensors && d.ms >= 0;
    if (killing) {
        ok = ok && k.error.empty() && k.reconnected == k.expected && lost == 0 && k.deployment_kept;
    }
    if (ha && killing) {
        ok = ok && d2.ms >= 0;
    }
    return ok ? 0 : 1;
}
