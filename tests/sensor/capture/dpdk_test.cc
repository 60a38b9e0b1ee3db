// DPDK capture on virtual devices, without hugepages or PCI: net_pcap (passive read, inline
// pair) and net_af_packet on a veth pair in a namespace the test creates (root only, skipped
// otherwise). EAL can be initialised once per process, so every scenario runs in a forked
// child that reports what it saw as text; the parent compares it with exact expectations.
#include "sensor/capture/dpdk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>

#include "sensor/capture/capture.h"
#include "tests/sensor/capture/test_frames.h"
#include "tests/support/pcap_writer.h"
#include "tests/support/temp_dir.h"

namespace picket::sensor::capture {
namespace {

namespace fs = std::filesystem;
using Frame = std::vector<uint8_t>;

// Ethernet/IPv4/UDP 198.18.0.<src> -> 198.18.0.<dst>, padded with 'x' to `len` bytes.
Frame frame(uint8_t src, uint8_t dst, uint16_t sport, uint16_t dport, size_t len,
            const std::string& label) {
    std::string payload = label;
    if (len > 14 + 28 + payload.size()) {
        payload.append(len - 14 - 28 - payload.size(), 'x');
    }
    return testing::eth_udp(sport, dport, payload, src, dst);
}

using picket::testing::write_pcap;
// snaplen 65535, frame i stamped 1700000000 + i seconds.
constexpr picket::testing::PcapOptions kPcap{picket::testing::kLinktypeEthernet, 65535, 1700000000,
                                             0};

[[maybe_unused]] std::vector<Frame> read_pcap(const std::string& path) {
    std::vector<Frame> out;
    PcapFileReader r({path});
    RawPacket p;
    while (r.next(p) == ReadResult::kOk) {
        out.emplace_back(p.data, p.data + p.caplen);
    }
    return out;
}

std::string hex(const uint8_t* d, size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += digits[d[i] >> 4];
        s += digits[d[i] & 15];
    }
    return s;
}

std::string runtime_dir(const std::string& prefix) {
    if (geteuid() == 0) {
        return "/var/run/dpdk/" + prefix;
    }
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    return std::string(xdg != nullptr ? xdg : "/tmp") + "/dpdk/" + prefix;
}

// "p" + std::to_string(i) trips GCC 12's -Wrestrict false positive (PR 105651).
std::string tag(char c, size_t i) {
    std::string s(1, c);
    s += std::to_string(i);
    return s;
}

[[maybe_unused]] int first_cpu() {
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    sched_getaffinity(0, sizeof(cpus), &cpus);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &cpus)) {
            return c;
        }
    }
    return 0;
}

[[maybe_unused]] int sh(const std::string& cmd) {
    return std::system((cmd + " >/dev/null 2>&1").c_str());
}

struct ChildResult {
    int status = -1;
    std::string out;
};

// Runs fn in a forked child (a fresh process for EAL) and returns what it printed. An
// exception in the child is reported as "EXCEPTION: what".
ChildResult run_child(const std::function<std::string()>& fn) {
    int fds[2];
    if (pipe(fds) != 0) {
        return {};
    }
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        std::string out;
        try {
            out = fn();
        } catch (const std::exception& e) {
            out = std::string("EXCEPTION: ") + e.what();
        }
        for (size_t off = 0; off < out.size();) {
            const ssize_t n = write(fds[1], out.data() + off, out.size() - off);
            if (n <= 0) {
                break;
            }
            off += static_cast<size_t>(n);
        }
        _exit(0);  // no gtest teardown or static destructors in the child
    }
    close(fds[1]);
    ChildResult r;
    char buf[65536];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof(buf))) > 0) {
        r.out.append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
    waitpid(pid, &r.status, 0);
    return r;
}

class DpdkTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.path().string();
        prefix_ = "picket-test-" + std::to_string(getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    void TearDown() override {
        std::error_code ec;
        fs::remove_all(runtime_dir(prefix_), ec);
    }
    std::string file(const std::string& name) const { return dir_ + "/" + name; }
    std::vector<std::string> eal(std::vector<std::string> vdevs) const {
        std::vector<std::string> a = {"--no-huge",     "--no-pci",      "-m",
                                      "1024",          "--file-prefix", prefix_,
                                      "--log-level=3", "--no-telemetry"};
        for (auto& v : vdevs) {
            a.push_back("--vdev=" + v);
        }
        return a;
    }

    picket::testing::TempDir tmp_{"picket-dpdk-test"};
    std::string dir_;
    std::string prefix_;
};

// Reads until `want` packets or 10 s; returns "caplen wirelen hex" per packet, then whether a
// further read timed out.
std::string drain(PacketSource& src, size_t want, const std::function<void(Batch&)>& verdicts) {
    std::ostringstream out;
    Batch b;
    size_t got = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got < want && std::chrono::steady_clock::now() < end) {
        const ReadResult r = src.next_batch(b, 50);
        if (r == ReadResult::kOk) {
            for (uint32_t i = 0; i < b.count; ++i) {
                out << b.pkts[i].caplen << ' ' << b.pkts[i].wirelen << ' ' << b.pkts[i].linktype
                    << ' ' << hex(b.pkts[i].data, b.pkts[i].caplen) << '\n';
            }
            got += b.count;
            if (verdicts) {
                verdicts(b);
            }
            src.release(b);
        } else if (r != ReadResult::kTimeout) {
            out << "ERROR " << src.error() << '\n';
            return out.str();
        }
    }
    out << "then " << (src.next_batch(b, 100) == ReadResult::kTimeout ? "timeout" : "more") << '\n';
    return out.str();
}

std::string expected_lines(const std::vector<Frame>& frames) {
    std::string s;
    for (const auto& f : frames) {
        s += std::to_string(f.size()) + ' ' + std::to_string(f.size()) + " 1 " +
             hex(f.data(), f.size()) + '\n';
    }
    return s + "then timeout\n";
}

// One source, two binaries: dpdk_test (label unit) and, built with PICKET_DPDK_NETNS,
// dpdk_netns_test (label netns, run apart from the parallel unit tests like the other
// namespace tests).
#ifndef PICKET_DPDK_NETNS

TEST_F(DpdkTest, PassiveNetPcapReadsEveryPacketInOrder) {
    std::vector<Frame> frames;
    const size_t lens[] = {60, 1514, 64, 100, 1000, 60, 1514, 333};
    for (size_t i = 0; i < 200; ++i) {
        frames.push_back(
            frame(1, 2, static_cast<uint16_t>(1000 + i), 53, lens[i % 8], tag('p', i)));
    }
    write_pcap(file("in.pcap"), frames, kPcap);
    DpdkOptions o;
    o.eal_args = eal({"net_pcap0,rx_pcap=" + file("in.pcap")});
    o.interfaces = {{"net_pcap0", ""}};
    const ChildResult r = run_child([&] {
        DpdkContext ctx(o);
        std::ostringstream head;
        for (const auto& p : ctx.ports()) {
            head << p.name << ' ' << p.driver << " rx " << p.rx_queues << " tx " << p.tx_queues
                 << " rss " << p.rss << " warnings " << ctx.warnings().size() << '\n';
        }
        auto src = make_dpdk_source(ctx, 0);
        std::string body = drain(*src, frames.size(), nullptr);
        const CaptureStats st = src->stats();
        const InlineStats is = src->inline_stats();
        return head.str() + body + "stats " + std::to_string(st.packets) + ' ' +
               std::to_string(st.drops) + " inline " + std::to_string(is.accepted) + ' ' +
               std::to_string(is.dropped) + '\n';
    });
    ASSERT_TRUE(WIFEXITED(r.status));
    EXPECT_EQ(r.out, "net_pcap0 net_pcap rx 1 tx 0 rss 0 warnings 0\n" + expected_lines(frames) +
                         "stats 200 0 inline 0 0\n");
}

// A PMD without RSS gets one queue however many workers are asked for: worker 1 is refused.
TEST_F(DpdkTest, NoRssMeansOneQueue) {
    write_pcap(file("in.pcap"), {frame(1, 2, 1, 2, 60, "a")}, kPcap);
    DpdkOptions o;
    o.eal_args = eal({"net_pcap0,rx_pcap=" + file("in.pcap")});
    o.interfaces = {{"net_pcap0", ""}};
    o.rx_queues = 2;
    const ChildResult r = run_child([&] {
        cpu_set_t before, after;
        sched_getaffinity(0, sizeof(before), &before);
        DpdkContext ctx(o);
        // rte_eal_init pins the calling thread to one core; the context gives it back.
        sched_getaffinity(0, sizeof(after), &after);
        std::string s = CPU_EQUAL(&before, &after) ? "" : "affinity changed\n";
        s += "queues " + std::to_string(ctx.queues()) + "\n";
        for (const auto& w : ctx.warnings()) {
            s += w + "\n";
        }
        try {
            make_dpdk_source(ctx, 1);
        } catch (const CaptureError& e) {
            s += e.what();
        }
        return s;
    });
    EXPECT_EQ(r.out,
              "queues 1\n"
              "DPDK: port 'net_pcap0' (net_pcap): 1 RX queue(s) for 2 workers (no RSS in this "
              "PMD: its traffic all goes to worker 0)\n"
              "DPDK: worker 1: the ports have 1 RX queue(s) (a PMD without RSS has one): run at "
              "most 1 DPDK workers");
}

TEST_F(DpdkTest, InlinePairForwardsAcceptedAndDropsOneFlow) {
    // Port A receives client->server, port B server->client. Flow 198.18.0.1:4000 <->
    // 198.18.0.2:80 is dropped in both directions by the verdict loop below.
    std::vector<Frame> a_in, b_in, a_expect, b_expect;
    for (uint16_t i = 0; i < 150; ++i) {
        const uint16_t sport = static_cast<uint16_t>(i % 3 == 0 ? 4000 : 5000 + i);
        const size_t len = 60 + (i * 37) % 1400;
        a_in.push_back(frame(1, 2, sport, 80, len, tag('a', i)));
        b_in.push_back(frame(2, 1, 80, sport, len + 1, tag('b', i)));
        if (sport != 4000) {
            b_expect.push_back(a_in.back());  // A's frames leave through B
            a_expect.push_back(b_in.back());
        }
    }
    write_pcap(file("a_in.pcap"), a_in, kPcap);
    write_pcap(file("b_in.pcap"), b_in, kPcap);
    DpdkOptions o;
    o.eal_args = eal({"net_pcap0,rx_pcap=" + file("a_in.pcap") + ",tx_pcap=" + file("a_out.pcap"),
                      "net_pcap1,rx_pcap=" + file("b_in.pcap") + ",tx_pcap=" + file("b_out.pcap")});
    o.interfaces = {{"net_pcap0", "net_pcap1"}};
    o.inline_mode = true;
    const ChildResult r = run_child([&] {
        std::string s;
        {
            DpdkContext ctx(o);
            for (const auto& p : ctx.ports()) {
                s += p.name + " peer " + p.peer + " rx " + std::to_string(p.rx_queues) + " tx " +
                     std::to_string(p.tx_queues) + "\n";
            }
            auto src = make_dpdk_source(ctx, 0);
            auto* inj = bridge_injector(*src);
            int sides_seen = 0;
            std::string body = drain(*src, a_in.size() + b_in.size(), [&](Batch& b) {
                for (uint32_t i = 0; i < b.count; ++i) {
                    const uint8_t* d = b.pkts[i].data;
                    const uint16_t sport = static_cast<uint16_t>(d[34] << 8 | d[35]);
                    const uint16_t dport = static_cast<uint16_t>(d[36] << 8 | d[37]);
                    if (sport == 4000 || dport == 4000) {
                        b.verdict[i] = Verdict::kDrop;
                    }
                    // Side 0 = net_pcap0 (frames from .1), side 1 = net_pcap1.
                    sides_seen += inj->side_of(d) == (d[14 + 15] == 1 ? 0 : 1) ? 1 : 0;
                }
            });
            const InlineStats is = src->inline_stats();
            s += "then " + body.substr(body.rfind("then ") + 5);
            s += "sides " + std::to_string(sides_seen) + " accepted " +
                 std::to_string(is.accepted) + " dropped " + std::to_string(is.dropped) +
                 " tx_errors " + std::to_string(is.tx_errors) + "\n";
        }  // sources and ports closed: the tx pcaps are complete
        return s;
    });
    ASSERT_TRUE(WIFEXITED(r.status));
    EXPECT_EQ(r.out,
              "net_pcap0 peer net_pcap1 rx 1 tx 1\n"
              "net_pcap1 peer net_pcap0 rx 1 tx 1\n"
              "then timeout\n"
              "sides 300 accepted 200 dropped 100 tx_errors 0\n");
    EXPECT_EQ(read_pcap(file("b_out.pcap")), b_expect);
    EXPECT_EQ(read_pcap(file("a_out.pcap")), a_expect);
}

TEST_F(DpdkTest, BadEalArgumentsNameTheArgs) {
    DpdkOptions o;
    o.eal_args = {"--no-huge", "--file-prefix", prefix_, "--bogus-option"};
    o.interfaces = {{"net_pcap0", ""}};
    const ChildResult r = run_child([&] {
        DpdkContext ctx(o);
        return std::string("constructed");
    });
    EXPECT_EQ(r.out, "EXCEPTION: DPDK: rte_eal_init failed: Invalid argument (EAL args: -l " +
                         std::to_string(first_cpu()) + " --no-huge --file-prefix " + prefix_ +
                         " --bogus-option)");
}

TEST_F(DpdkTest, UnknownPortListsTheKnownOnes) {
    write_pcap(file("in.pcap"), {frame(1, 2, 1, 2, 60, "a")}, kPcap);
    DpdkOptions o;
    o.eal_args = eal({"net_pcap0,rx_pcap=" + file("in.pcap")});
    o.interfaces = {{"net_pcap7", ""}};
    const ChildResult r = run_child([&] {
        DpdkContext ctx(o);
        return std::string("constructed");
    });
    EXPECT_EQ(r.out,
              "EXCEPTION: DPDK: no port 'net_pcap7' (ports: net_pcap0; add a vdev with --vdev or "
              "bind the PCI device to a DPDK driver)");
}

TEST_F(DpdkTest, SecondContextInOneProcessIsRefused) {
    write_pcap(file("in.pcap"), {frame(1, 2, 1, 2, 60, "a")}, kPcap);
    DpdkOptions o;
    o.eal_args = eal({"net_pcap0,rx_pcap=" + file("in.pcap")});
    o.interfaces = {{"net_pcap0", ""}};
    const ChildResult r = run_child([&] {
        { DpdkContext first(o); }
        DpdkContext second(o);
        return std::string("constructed");
    });
    EXPECT_EQ(r.out, "EXCEPTION: DPDK: EAL can be initialised only once per process");
}

#else

// net_af_packet on a veth pair inside a namespace: frames sent on the peer arrive complete.
TEST_F(DpdkTest, AfPacketVdevInNamespace) {
    if (geteuid() != 0) {
        GTEST_SKIP() << "needs root to create a network namespace";
    }
    const std::string ns = "picket-dpdk-" + std::to_string(getpid());
    sh("ip netns del " + ns);
    ASSERT_EQ(sh("ip netns add " + ns), 0);
    const std::string in = "ip netns exec " + ns + " ";
    const bool ok = sh(in + "sysctl -q -w net.ipv6.conf.all.disable_ipv6=1") == 0 &&
                    sh(in + "sysctl -q -w net.ipv6.conf.default.disable_ipv6=1") == 0 &&
                    sh(in + "ip link add veth-a type veth peer name veth-b") == 0 &&
                    sh(in + "ip link set veth-a up") == 0 && sh(in + "ip link set veth-b up") == 0;
    std::vector<Frame> frames;
    for (uint16_t i = 0; i < 100; ++i) {
        frames.push_back(frame(1, 2, static_cast<uint16_t>(7000 + i), 9, 60 + i * 13, tag('v', i)));
    }
    DpdkOptions o;
    o.eal_args = eal({"net_af_packet0,iface=veth-a"});
    o.interfaces = {{"net_af_packet0", ""}};
    const ChildResult r = run_child([&] {
        const int nsfd = open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
        if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
            return std::string("setns failed");
        }
        close(nsfd);
        DpdkContext ctx(o);
        auto src = make_dpdk_source(ctx, 0);
        const int fd = socket(AF_PACKET, SOCK_RAW, 0);
        sockaddr_ll sll{};
        sll.sll_family = AF_PACKET;
        sll.sll_ifindex = static_cast<int>(if_nametoindex("veth-b"));
        sll.sll_halen = 6;
        for (const auto& f : frames) {
            sendto(fd, f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&sll), sizeof(sll));
        }
        close(fd);
        return ctx.ports()[0].driver + "\n" + drain(*src, frames.size(), nullptr);
    });
    sh("ip netns del " + ns);
    ASSERT_TRUE(ok);
    EXPECT_EQ(r.out, "net_af_packet\n" + expected_lines(frames));
}

#endif  // PICKET_DPDK_NETNS

}  // namespace
}  // namespace picket::sensor::capture
