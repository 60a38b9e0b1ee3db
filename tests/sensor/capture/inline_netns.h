// Three network namespaces in a line (client - middle - server) for the inline capture tests:
// the middle one routes (NFQUEUE) or bridges (AF_PACKET inline). Created per test with
// pid-based names and deleted in the destructor, also after a failed assertion.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sensor/capture/capture.h"

namespace picket::sensor::capture::testing {

inline int sh(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str());
}

// Runs cmd, returns its stdout.
inline std::string sh_out(const std::string& cmd) {
    std::string out;
    FILE* f = popen((cmd + " 2>/dev/null").c_str(), "r");
    if (f == nullptr) {
        return out;
    }
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        out.append(buf, n);
    }
    pclose(f);
    return out;
}

// Moves the calling thread into a named namespace for its lifetime, then back. Sockets
// opened meanwhile stay in that namespace.
class InNetns {
public:
    explicit InNetns(const std::string& name) {
        orig_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        const int fd = open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
        ok_ = orig_ >= 0 && fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
        if (fd >= 0) {
            close(fd);
        }
    }
    ~InNetns() {
        if (orig_ >= 0) {
            setns(orig_, CLONE_NEWNET);
            close(orig_);
        }
    }
    InNetns(const InNetns&) = delete;
    InNetns& operator=(const InNetns&) = delete;
    bool ok() const { return ok_; }

private:
    int orig_ = -1;
    bool ok_ = false;
};

class ThreeNs {
public:
    explicit ThreeNs(const std::string& tag) {
        const std::string base = "picket-" + tag + "-" + std::to_string(getpid()) + "-";
        client = base + "c";
        middle = base + "m";
        server = base + "s";
        for (const auto& n : {client, middle, server}) {
            sh("ip netns del " + n);  // a leftover of a crashed run with the same pid
        }
    }
    ~ThreeNs() {
        for (const auto& n : {client, middle, server}) {
            if (created_) {
                sh("ip netns del " + n);
            }
        }
    }
    ThreeNs(const ThreeNs&) = delete;
    ThreeNs& operator=(const ThreeNs&) = delete;

    // Namespaces and veths: client c0 <-> m0 middle m1 <-> s0 server, all up.
    bool create() {
        created_ = true;
        bool ok = true;
        for (const auto& n : {client, middle, server}) {
            ok = ok && sh("ip netns add " + n) == 0 && run(n, "ip link set lo up");
        }
        return ok &&
               sh("ip link add c0 netns " + client + " type veth peer name m0 netns " + middle) ==
                   0 &&
               sh("ip link add m1 netns " + middle + " type veth peer name s0 netns " + server) ==
                   0 &&
               run(client, "ip link set c0 up") && run(middle, "ip link set m0 up") &&
               run(middle, "ip link set m1 up") && run(server, "ip link set s0 up");
    }
    bool run(const std::string& ns, const std::string& cmd) const {
        return sh("ip netns exec " + ns + " " + cmd) == 0;
    }
    std::string out(const std::string& ns, const std::string& cmd) const {
        return sh_out("ip netns exec " + ns + " " + cmd);
    }

    std::string client, middle, server;

private:
    bool created_ = false;
};

// Round-trip times (ms) of the replies in `ping` output ("time=0.123 ms").
inline std::vector<double> ping_times(const std::string& text) {
    std::vector<double> t;
    for (size_t at = text.find("time="); at != std::string::npos; at = text.find("time=", at + 5)) {
        t.push_back(std::strtod(text.c_str() + at + 5, nullptr));
    }
    return t;
}

inline double percentile(std::vector<double> v, double q) {
    if (v.empty()) {
        return -1;
    }
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    return v[i];
}

// FNV-1a over a byte range, to compare what was sent with what arrived.
inline uint64_t fnv1a(const uint8_t* d, size_t n, uint64_t h = 1469598103934665603ull) {
    for (size_t i = 0; i < n; ++i) {
        h = (h ^ d[i]) * 1099511628211ull;
    }
    return h;
}

// A socket opened inside namespace ns (it stays there).
inline int socket_in(const std::string& ns, int family, int type) {
    InNetns enter(ns);
    if (!enter.ok()) {
        return -1;
    }
    return socket(family, type | SOCK_CLOEXEC, 0);
}

// Waits up to ms for fd to become readable.
inline bool readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1;
}

// A worker: reads batches from a source and sets each verdict with `decide` until stopped.
class ForwardLoop {
public:
    using Decide = std::function<Verdict(const RawPacket&)>;
    ForwardLoop(PacketSource& source, Decide decide)
        : thread_([this, &source, decide = std::move(decide)] {
              Batch b;
              while (!stop_.load(std::memory_order_relaxed)) {
                  const ReadResult r = source.next_batch(b, 20);
                  if (r == ReadResult::kError) {
                      error_ = source.error();
                      return;
                  }
                  if (r != ReadResult::kOk) {
                      continue;
                  }
                  for (uint32_t i = 0; i < b.count; ++i) {
                      b.verdict[i] = decide(b.pkts[i]);
                  }
                  source.release(b);
              }
          }) {}
    ~ForwardLoop() { stop(); }
    ForwardLoop(const ForwardLoop&) = delete;
    ForwardLoop& operator=(const ForwardLoop&) = delete;
    void stop() {
        stop_ = true;
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    // Read after stop().
    const std::string& error() const { return error_; }

private:
    std::atomic<bool> stop_{false};
    std::string error_;
    std::thread thread_;  // last: starts after the members it uses
};

inline bool contains(const RawPacket& p, const std::string& needle) {
    const auto* end = p.data + p.caplen;
    return std::search(p.data, end, needle.begin(), needle.end()) != end;
}

}  // namespace picket::sensor::capture::testing
