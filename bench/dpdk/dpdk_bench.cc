// dpdk_bench: how fast does the DPDK capture take packets in, against Picket's own sources on
// the same virtual setup? No NIC and no hugepages here (EAL --no-huge --no-pci), so DPDK runs
// on its virtual PMDs; the figures compare capture paths, not line-rate hardware.
//
//  1. veth: a namespace with a veth pair (needs root); one thread blasts N 64-byte UDP frames
//     with sendmmsg from veth-b as fast as it can; the capture reads veth-a, either through
//     Picket's AF_PACKET source (TPACKET_V3, 32 MB ring) or through DPDK's net_af_packet PMD
//     (TPACKET_V2, same ring bytes), both as a PacketSource with batches of 64. Reports frames
//     captured per second of capture wall time, the loss, and the reader thread's CPU per
//     frame.
//  2. file: N frames (64/128/256/64 bytes) in a pcap file, read by PcapFileReader (mmap) and
//     by DPDK's net_pcap PMD (libpcap into mbufs). Packets per second of wall time.
//
// EAL runs once per process, so every measurement is its own forked child (the AF_PACKET ones
// too, for the same conditions); modes alternate for several rounds and the medians are
// printed with the ratio. It measures, never judges: no pass/fail.
//
// Reproduce: ninja dpdk_bench && sudo ./bench/dpdk/dpdk_bench [--packets 2000000]
//            [--file-packets 1000000] [--rounds 3]
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sensor/capture/capture.h"
#include "sensor/capture/dpdk.h"

using namespace picket::sensor::capture;
using Clock = std::chrono::steady_clock;

namespace {

int sh(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str());
}

double secs(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

double thread_cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// Runs fn in a forked child and returns the line it produced ("" on failure).
std::string in_child(const std::function<std::string()>& fn) {
    int fds[2];
    if (pipe(fds) != 0) {
        return "";
    }
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        std::string out;
        try {
            out = fn();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "dpdk_bench: %s\n", e.what());
        }
        const ssize_t n = write(fds[1], out.data(), out.size());
        _exit(n == static_cast<ssize_t>(out.size()) ? 0 : 1);
    }
    close(fds[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof(buf))) > 0) {
        out.append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return out;
}

std::vector<uint8_t> udp_frame(size_t len, uint16_t sport) {
    std::vector<uint8_t> f(len, 0);
    const uint8_t hdr[] = {0x02, 0,    0,    0,  0, 0x02, 0x02, 0,  0, 0, 0,  0x01,
                           0x08, 0x00, 0x45, 0,  0, 0,    0,    0,  0, 0, 64, 17,
                           0,    0,    198,  18, 0, 1,    198,  18, 0, 2};
    std::memcpy(f.data(), hdr, sizeof(hdr));
    const uint16_t iplen = static_cast<uint16_t>(len - 14);
    f[16] = static_cast<uint8_t>(iplen >> 8);
    f[17] = static_cast<uint8_t>(iplen);
    f[34] = static_cast<uint8_t>(sport >> 8);
    f[35] = static_cast<uint8_t>(sport);
    f[37] = 9;
    const uint16_t ulen = static_cast<uint16_t>(len - 34);
    f[38] = static_cast<uint8_t>(ulen >> 8);
    f[39] = static_cast<uint8_t>(ulen);
    return f;
}

std::string eal_prefix(const std::string& what) {
    return "picket-bench-" + std::to_string(getpid()) + "-" + what;
}

std::vector<std::string> eal_args(const std::string& prefix, const std::string& vdev) {
    return {"--no-huge",     "--no-pci",       "-m",
            "1024",          "--file-prefix",  prefix,
            "--log-level=3", "--no-telemetry", "--vdev=" + vdev};
}

void remove_runtime_dir(const std::string& prefix) {
    std::error_code ec;
    std::filesystem::remove_all("/var/run/dpdk/" + prefix, ec);
}

DpdkOptions dpdk_options(const std::string& prefix, const std::string& vdev,
                         const std::string& port) {
    DpdkOptions o;
    o.eal_args = eal_args(prefix, vdev);
    o.interfaces = {{port, ""}};
    o.burst = 64;
    return o;
}

// ---------------------------------------------------------------------------------------
// veth

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

bool enter_netns(const std::string& name) {
    const int fd = open(("/var/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    const bool ok = fd >= 0 && setns(fd, CLONE_NEWNET) == 0;
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

// Sends n frames out of `iface` as fast as sendmmsg goes; returns how many the kernel took.
uint64_t blast(const std::string& iface, uint64_t n) {
    const int fd = socket(AF_PACKET, SOCK_RAW, 0);
    sockaddr_ll sll{};
    sll.sll_family = AF_PACKET;
    sll.sll_ifindex = static_cast<int>(if_nametoindex(iface.c_str()));
    sll.sll_halen = 6;
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof(sll)) != 0) {
        return 0;
    }
    constexpr unsigned kBurst = 64;
    std::vector<std::vector<uint8_t>> frames;
    for (unsigned i = 0; i < kBurst; ++i) {
        frames.push_back(udp_frame(64, static_cast<uint16_t>(1024 + i)));
    }
    iovec iov[kBurst];
    mmsghdr msgs[kBurst]{};
    for (unsigned i = 0; i < kBurst; ++i) {
        iov[i] = {frames[i].data(), frames[i].size()};
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_name = &sll;
        msgs[i].msg_hdr.msg_namelen = sizeof(sll);
    }
    uint64_t sent = 0;
    while (sent < n) {
        const unsigned want = static_cast<unsigned>(std::min<uint64_t>(kBurst, n - sent));
        const int rc = sendmmsg(fd, msgs, want, 0);
        if (rc > 0) {
            sent += static_cast<uint64_t>(rc);
        } else if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR) {
            break;
        }
    }
    close(fd);
    return sent;
}

struct LiveResult {
    double sent = 0, received = 0, wall_s = 0, cpu_s = 0;
};

// Reads until the sender is done and nothing came for 200 ms.
LiveResult capture_while_sending(PacketSource& src, const std::string& tx_iface, uint64_t packets) {
    std::atomic<uint64_t> sent{0};
    std::atomic<bool> done{false};
    std::thread sender([&] {
        sent = blast(tx_iface, packets);
        done = true;
    });
    Batch b;
    uint64_t got = 0;
    Clock::time_point first{}, last{};
    const double cpu0 = thread_cpu_s();
    Clock::time_point idle_since = Clock::now();
    for (;;) {
        const ReadResult r = src.next_batch(b, 20);
        const auto now = Clock::now();
        if (r == ReadResult::kOk) {
            if (got == 0) {
                first = now;
            }
            got += b.count;
            last = now;
            idle_since = now;
            src.release(b);
        } else if (r != ReadResult::kTimeout) {
            break;
        } else if (done && secs(idle_since, now) > 0.2) {
            break;
        }
    }
    const double cpu = thread_cpu_s() - cpu0;
    sender.join();
    LiveResult res;
    res.sent = static_cast<double>(sent.load());
    res.received = static_cast<double>(got);
    res.wall_s = secs(first, last);
    res.cpu_s = cpu;
    return res;
}

std::string encode(const LiveResult& r) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%.0f %.0f %.6f %.6f", r.sent, r.received, r.wall_s, r.cpu_s);
    return buf;
}

LiveResult decode(const std::string& s) {
    LiveResult r;
    if (std::sscanf(s.c_str(), "%lf %lf %lf %lf", &r.sent, &r.received, &r.wall_s, &r.cpu_s) != 4) {
        return {};
    }
    return r;
}

LiveResult live_afpacket(const std::string& ns, uint64_t packets) {
    return decode(in_child([&] {
        if (!enter_netns(ns)) {
            return std::string();
        }
        AfPacketOptions o;
        o.iface = "veth-a";
        o.block_size = 1 << 20;
        o.block_count = 32;
        auto src = open_afpacket(o);
        return encode(capture_while_sending(*src, "veth-b", packets));
    }));
}

LiveResult live_dpdk(const std::string& ns, uint64_t packets, int round) {
    const std::string prefix = eal_prefix("afp" + std::to_string(round));
    const LiveResult r = decode(in_child([&] {
        if (!enter_netns(ns)) {
            return std::string();
        }
        // Same ring bytes as the AF_PACKET source: 16384 frames of 2 KB = 32 MB.
        DpdkContext ctx(dpdk_options(
            prefix, "net_af_packet0,iface=veth-a,blocksz=4096,framesz=2048,framecnt=16384",
            "net_af_packet0"));
        auto src = make_dpdk_source(ctx, 0);
        return encode(capture_while_sending(*src, "veth-b", packets));
    }));
    remove_runtime_dir(prefix);
    return r;
}

// ---------------------------------------------------------------------------------------
// file

void write_file(const std::string& path, uint64_t n) {
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
    pcap_dumper_t* d = pcap_dump_open(dead, path.c_str());
    const size_t lens[] = {64, 128, 256, 64};
    std::vector<std::vector<uint8_t>> frames;
    for (size_t l : lens) {
        frames.push_back(udp_frame(l, 1024));
    }
    for (uint64_t i = 0; i < n; ++i) {
        const auto& f = frames[i % 4];
        pcap_pkthdr h{};
        h.ts.tv_sec = static_cast<time_t>(1700000000 + i / 1000000);
        h.ts.tv_usec = static_cast<suseconds_t>(i % 1000000);
        h.caplen = h.len = static_cast<bpf_u_int32>(f.size());
        pcap_dump(reinterpret_cast<u_char*>(d), &h, f.data());
    }
    pcap_dump_close(d);
    pcap_close(dead);
}

// packets per second
double file_picket(const std::string& path, uint64_t n) {
    const std::string out = in_child([&] {
        PcapFileReader r({path});
        RawPacket p;
        uint64_t got = 0;
        uint64_t bytes = 0;
        const auto t0 = Clock::now();
        while (r.next(p) == ReadResult::kOk) {
            ++got;
            bytes += p.data[p.caplen - 1];  // touch the packet, as a worker would
        }
        const double s = secs(t0, Clock::now());
        return std::to_string(got == n ? static_cast<double>(got) / s : 0.0) + " " +
               std::to_string(bytes);
    });
    return std::atof(out.c_str());
}

double file_dpdk(const std::string& path, uint64_t n, int round) {
    const std::string prefix = eal_prefix("pcap" + std::to_string(round));
    const std::string out = in_child([&] {
        DpdkContext ctx(dpdk_options(prefix, "net_pcap0,rx_pcap=" + path, "net_pcap0"));
        auto src = make_dpdk_source(ctx, 0);
        Batch b;
        uint64_t got = 0;
        uint64_t bytes = 0;
        const auto t0 = Clock::now();
        while (got < n) {
            const ReadResult r = src->next_batch(b, 1000);
            if (r != ReadResult::kOk) {
                break;
            }
            for (uint32_t i = 0; i < b.count; ++i) {
                bytes += b.pkts[i].data[b.pkts[i].caplen - 1];
            }
            got += b.count;
            src->release(b);
        }
        const double s = secs(t0, Clock::now());
        return std::to_string(got == n ? static_cast<double>(got) / s : 0.0) + " " +
               std::to_string(bytes);
    });
    remove_runtime_dir(prefix);
    return std::atof(out.c_str());
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t packets = 2000000;
    uint64_t file_packets = 1000000;
    int rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--packets") {
            packets = std::strtoull(argv[i + 1], nullptr, 10);
        } else if (a == "--file-packets") {
            file_packets = std::strtoull(argv[i + 1], nullptr, 10);
        } else if (a == "--rounds") {
            rounds = std::atoi(argv[i + 1]);
        }
    }
    std::printf(
        "dpdk_bench: DPDK 22.11 virtual PMDs vs Picket's own sources, %d rounds, "
        "medians; %u CPUs\n",
        rounds, std::thread::hardware_concurrency());

    // 1. veth
    if (geteuid() != 0) {
        std::printf("veth: skipped (needs root for the namespace)\n");
    } else {
        Netns ns("picket-dpdkbench-" + std::to_string(getpid()));
        if (!ns.ok()) {
            std::printf("veth: skipped (could not set up the namespace)\n");
        } else {
            std::printf("\nveth: %lu x 64-byte frames blasted from veth-b, captured on veth-a\n",
                        static_cast<unsigned long>(packets));
            std::printf("%-6s %-28s %12s %12s %8s %12s\n", "round", "source", "sent/s",
                        "captured/s", "loss", "cpu ns/pkt");
            std::vector<double> rate[2], cpu[2], loss[2];
            const char* names[2] = {"picket AF_PACKET (TPv3)", "DPDK net_af_packet"};
            for (int r = 0; r < rounds; ++r) {
                for (int m = 0; m < 2; ++m) {
                    const LiveResult res = m == 0 ? live_afpacket(ns.name(), packets)
                                                  : live_dpdk(ns.name(), packets, r);
                    if (res.received == 0 || res.wall_s <= 0) {
                        std::printf("%-6d %-28s failed\n", r, names[m]);
                        continue;
                    }
                    const double pps = res.received / res.wall_s;
                    const double l = 1.0 - res.received / res.sent;
                    const double c = res.cpu_s * 1e9 / res.received;
                    rate[m].push_back(pps);
                    loss[m].push_back(l);
                    cpu[m].push_back(c);
                    std::printf("%-6d %-28s %12.0f %12.0f %7.2f%% %12.0f\n", r, names[m],
                                res.sent / res.wall_s, pps, 100 * l, c);
                }
            }
            for (int m = 0; m < 2; ++m) {
                std::printf("median %-28s %12s %12.0f %7.2f%% %12.0f\n", names[m], "",
                            median(rate[m]), 100 * median(loss[m]), median(cpu[m]));
            }
            if (median(rate[0]) > 0) {
                std::printf(
                    "veth summary: DPDK net_af_packet captures %.2fx the frames/s of "
                    "picket's AF_PACKET source (baseline), at %.2fx its CPU per frame\n",
                    median(rate[1]) / median(rate[0]),
                    median(cpu[0]) > 0 ? median(cpu[1]) / median(cpu[0]) : 0.0);
            }
        }
    }

    // 2. file
    char tmpl[] = "/tmp/picket-dpdkbench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        return 1;
    }
    const std::string path = std::string(tmpl) + "/in.pcap";
    write_file(path, file_packets);
    std::printf("\nfile: %lu frames (64/128/256/64 bytes) from a pcap file\n",
                static_cast<unsigned long>(file_packets));
    std::vector<double> fr[2];
    const char* fnames[2] = {"picket PcapFileReader", "DPDK net_pcap"};
    for (int r = 0; r < rounds; ++r) {
        for (int m = 0; m < 2; ++m) {
            const double pps =
                m == 0 ? file_picket(path, file_packets) : file_dpdk(path, file_packets, r);
            fr[m].push_back(pps);
            std::printf("%-6d %-28s %12.0f pkts/s\n", r, fnames[m], pps);
        }
    }
    for (int m = 0; m < 2; ++m) {
        std::printf("median %-28s %12.0f pkts/s\n", fnames[m], median(fr[m]));
    }
    if (median(fr[0]) > 0) {
        std::printf(
            "file summary: DPDK net_pcap reads at %.2fx picket's PcapFileReader "
            "(baseline)\n",
            median(fr[1]) / median(fr[0]));
    }
    std::error_code ec;
    std::filesystem::remove_all(tmpl, ec);
    return 0;
}
