// bpf_bench: where should a capture BPF filter run, in the kernel (SO_ATTACH_FILTER on the
// AF_PACKET socket) or in user space (BpfFilter::matches on every frame read from the ring)?
//
// Creates a network namespace with a veth pair (needs root), sends N Ethernet/IPv4/UDP frames
// from one end as fast as sendmmsg allows (10% match "udp port 9999"), and captures on the
// other end with a TPACKET_V3 ring, alternating the two modes for several rounds. Prints each
// round, the medians, and one summary line. It measures, never judges: no pass/fail.
//
// Reproduce: ninja bpf_bench && sudo ./bench/bpf/bpf_bench [--packets 2000000] [--rounds 3]
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "sensor/capture/capture.h"

using namespace picket::sensor::capture;
using Clock = std::chrono::steady_clock;

namespace {

int sh(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str());
}

class Netns {
public:
    explicit Netns(std::string name) : name_(std::move(name)) {
        sh("ip netns del " + name_);
        if (sh("ip netns add " + name_) != 0) {
            return;
        }
        created_ = true;
        const std::string in = "ip netns exec " + name_ + " ";
        ok_ = sh(in + "sysctl -q -w net.ipv6.conf.all.disable_ipv6=1") == 0 &&
              sh(in + "sysctl -q -w net.ipv6.conf.default.disable_ipv6=1") == 0 &&
              sh(in + "ip link add veth-a type veth peer name veth-b") == 0 &&
              sh(in + "ip link set veth-a up") == 0 && sh(in + "ip link set veth-b up") == 0;
    }
    ~Netns() {
        if (created_) {
            sh("ip netns del " + name_);
        }
    }
    bool ok() const { return ok_; }
    const std::string& name() const { return name_; }

private:
    std::string name_;
    bool created_ = false;
    bool ok_ = false;
};

// The calling thread is in the namespace while this lives.
class InNetns {
public:
    explicit InNetns(const std::string& name) {
        orig_ = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        const int fd = open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
        if (orig_ < 0 || fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
            std::fprintf(stderr, "bpf_bench: cannot enter namespace %s\n", name.c_str());
            std::exit(1);
        }
        close(fd);
    }
    ~InNetns() {
        setns(orig_, CLONE_NEWNET);
        close(orig_);
    }

private:
    int orig_ = -1;
};

void put16(std::vector<uint8_t>& v, size_t at, uint16_t x) {
    v[at] = static_cast<uint8_t>(x >> 8);
    v[at + 1] = static_cast<uint8_t>(x);
}

// 60-byte Ethernet/IPv4/UDP frame, 198.18.0.0/15 (benchmarking range, RFC 2544).
std::vector<uint8_t> frame(uint16_t sport, uint16_t dport) {
    std::vector<uint8_t> f(60, 0);
    const uint8_t macs[12] = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01};
    std::memcpy(f.data(), macs, 12);
    put16(f, 12, ETH_P_IP);
    f[14] = 0x45;
    put16(f, 16, 46);
    f[22] = 64;
    f[23] = 17;
    const uint8_t addrs[8] = {198, 18, 0, 1, 198, 18, 0, 2};
    std::memcpy(&f[26], addrs, 8);
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) {
        sum += static_cast<uint32_t>(f[i] << 8 | f[i + 1]);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    put16(f, 24, static_cast<uint16_t>(~sum));
    put16(f, 34, sport);
    put16(f, 36, dport);
    put16(f, 38, 26);
    return f;
}

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct Result {
    uint64_t offered = 0;
    uint64_t seen = 0;
    uint64_t matched = 0;
    uint64_t drops = 0;
    double wall_s = 0;
    double cpu_s = 0;
    double pps() const { return static_cast<double>(offered) / wall_s; }
    double ns_per_pkt() const { return cpu_s * 1e9 / static_cast<double>(offered); }
};

Result run(const std::string& ns, bool kernel, uint64_t packets, uint16_t fanout_id) {
    const BpfFilter filter("udp port 9999", DLT_EN10MB);
    std::unique_ptr<PacketSource> src;
    int tx = -1;
    int ifindex = 0;
    {
        InNetns enter(ns);
        AfPacketOptions o;
        o.iface = "veth-b";
        o.fanout_id = fanout_id;
        o.kernel_filter = kernel ? &filter : nullptr;
        src = open_afpacket(o);
        tx = socket(AF_PACKET, SOCK_RAW, 0);
        ifindex = static_cast<int>(if_nametoindex("veth-a"));
        const int one = 1;
        setsockopt(tx, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
    }
    // 100 flows; every tenth is the one the filter wants.
    std::vector<std::vector<uint8_t>> templates;
    for (uint16_t k = 0; k < 100; ++k) {
        templates.push_back(frame(static_cast<uint16_t>(20000 + k),
                                  k % 10 == 0 ? 9999 : static_cast<uint16_t>(10000 + k)));
    }
    std::atomic<bool> sent_all{false};

    const double cpu0 = cpu_seconds();
    const auto t0 = Clock::now();
    std::thread sender([&] {
        constexpr unsigned kBurst = 64;
        sockaddr_ll to{};
        to.sll_family = AF_PACKET;
        to.sll_ifindex = ifindex;
        to.sll_protocol = htons(ETH_P_IP);
        to.sll_halen = 6;
        std::memcpy(to.sll_addr, templates[0].data(), 6);
        iovec iov[kBurst];
        mmsghdr msgs[kBurst];
        uint64_t next = 0;
        while (next < packets) {
            const unsigned n = static_cast<unsigned>(std::min<uint64_t>(kBurst, packets - next));
            for (unsigned i = 0; i < n; ++i) {
                auto& t = templates[(next + i) % templates.size()];
                iov[i] = {t.data(), t.size()};
                msgs[i] = {};
                msgs[i].msg_hdr.msg_name = &to;
                msgs[i].msg_hdr.msg_namelen = sizeof(to);
                msgs[i].msg_hdr.msg_iov = &iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            const int rc = sendmmsg(tx, msgs, n, 0);
            if (rc > 0) {
                next += static_cast<uint64_t>(rc);
            } else if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
                std::perror("bpf_bench: sendmmsg");
                break;
            }
        }
        sent_all.store(true, std::memory_order_release);
    });

    Result r;
    r.offered = packets;
    Batch b;
    auto last = t0;
    int idle_after_send = 0;
    while (idle_after_send < 3) {
        const bool done = sent_all.load(std::memory_order_acquire);
        if (src->next_batch(b, 10) != ReadResult::kOk) {
            idle_after_send += done ? 1 : 0;
            continue;
        }
        idle_after_send = 0;
        r.seen += b.count;
        if (kernel) {
            r.matched += b.count;
        } else {
            for (uint32_t k = 0; k < b.count; ++k) {
                r.matched += filter.matches(b.pkts[k]) ? 1 : 0;
            }
        }
        src->release(b);
        last = Clock::now();
    }
    // Time to the last packet; the idle polls that prove the end cost no CPU worth counting.
    r.wall_s = std::chrono::duration<double>(std::max(last, t0) - t0).count();
    r.cpu_s = cpu_seconds() - cpu0;
    sender.join();
    r.drops = src->stats().drops;
    close(tx);
    return r;
}

void print(const char* mode, const Result& r) {
    std::printf(
        "  %-6s offered=%llu seen=%llu matched=%llu ring_drops=%llu wall=%.3fs "
        "offered_pps=%.0f cpu=%.3fs cpu_ns_per_offered_pkt=%.1f\n",
        mode, static_cast<unsigned long long>(r.offered), static_cast<unsigned long long>(r.seen),
        static_cast<unsigned long long>(r.matched), static_cast<unsigned long long>(r.drops),
        r.wall_s, r.pps(), r.cpu_s, r.ns_per_pkt());
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t packets = 2000000;
    int rounds = 3;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--packets" && i + 1 < argc) {
            packets = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--rounds" && i + 1 < argc) {
            rounds = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [--packets N] [--rounds R]\n", argv[0]);
            return 2;
        }
    }
    if (packets == 0 || rounds <= 0) {
        std::fprintf(stderr, "bpf_bench: --packets and --rounds must be positive\n");
        return 2;
    }
    if (geteuid() != 0) {
        std::printf("bpf_bench: SKIPPED: needs root to create a network namespace and veth pair\n");
        return 0;
    }
    Netns ns("picket-bpfbench-" + std::to_string(getpid()));
    if (!ns.ok()) {
        std::printf("bpf_bench: SKIPPED: could not create namespace %s with a veth pair\n",
                    ns.name().c_str());
        return 0;
    }
    std::printf(
        "bpf_bench: %llu frames of 60 bytes per run over a veth pair in netns %s, "
        "10%% match 'udp port 9999', %d rounds alternating kernel/user\n",
        static_cast<unsigned long long>(packets), ns.name().c_str(), rounds);
    std::printf(
        "note: veth delivery runs the receive path (and a kernel filter) in the "
        "sender's context, so process CPU per offered packet is the fairer figure; "
        "pps is offered packets over the time to the last packet captured\n");
    std::vector<double> kpps, upps, kns, uns;
    const uint16_t fanout_base = static_cast<uint16_t>(0x7000 | (getpid() & 0x0f00));
    for (int round = 0; round < rounds; ++round) {
        std::printf("round %d\n", round + 1);
        // Alternate which mode goes first, so neither always runs on a warm machine.
        for (int k = 0; k < 2; ++k) {
            const bool kernel = (round + k) % 2 == 0;
            const Result r =
                run(ns.name(), kernel, packets, static_cast<uint16_t>(fanout_base + round * 2 + k));
            print(kernel ? "kernel" : "user", r);
            (kernel ? kpps : upps).push_back(r.pps());
            (kernel ? kns : uns).push_back(r.ns_per_pkt());
        }
    }
    const double kp = median(kpps), up = median(upps), kn = median(kns), un = median(uns);
    std::printf(
        "median: kernel offered_pps=%.0f cpu_ns_per_pkt=%.1f | user offered_pps=%.0f "
        "cpu_ns_per_pkt=%.1f | user/kernel: pps %.2f, cpu %.2f\n",
        kp, kn, up, un, up / kp, un / kn);
    std::printf(
        "bpf: kernel_pps=%.0f user_pps=%.0f kernel_ns_per_pkt=%.1f user_ns_per_pkt=%.1f "
        "faster=%s\n",
        kp, up, kn, un, kn <= un ? "kernel" : "user");
    return 0;
}
