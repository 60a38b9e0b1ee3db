// AF_PACKET inline bridge: client c0 - m0 [bridge namespace, no kernel bridge] m1 - s0 server,
// in namespaces each test creates and deletes. The test's threads are the workers. Offloads
// as the README says: tx checksum off on the endpoints, GRO/LRO off on the bridge ports.
// Needs root; skipped otherwise. Label "netns".
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "sensor/capture/inline.h"
#include "sensor/decode/decode.h"
#include "sensor/engine/respond.h"
#include "tests/sensor/capture/inline_netns.h"

namespace picket::sensor::capture {
namespace {

using testing::ForwardLoop;
using testing::InNetns;

const std::string kDrop = "PICKET-DROP";

class BridgeNetns : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() != 0) {
            GTEST_SKIP() << "needs root to create network namespaces";
        }
        ns_ = std::make_unique<testing::ThreeNs>("br");
        ASSERT_TRUE(ns_->create());
        const auto& n = *ns_;
        for (const auto& x : {n.client, n.middle, n.server}) {
            ASSERT_TRUE(n.run(x, "sysctl -q -w net.ipv6.conf.all.disable_ipv6=1") &&
                        n.run(x, "sysctl -q -w net.ipv6.conf.default.disable_ipv6=1"));
        }
        ASSERT_TRUE(
            n.run(n.client, "ip addr add 10.77.3.1/24 dev c0") &&
            n.run(n.server, "ip addr add 10.77.3.2/24 dev s0") &&
            n.run(n.client, "ethtool -K c0 tx off") && n.run(n.server, "ethtool -K s0 tx off") &&
            n.run(n.middle, "ethtool -K m0 gro off") && n.run(n.middle, "ethtool -K m1 gro off"));
    }

    std::unique_ptr<InlineSource> open(uint16_t fanout_id = 0) {
        InNetns enter(ns_->middle);
        EXPECT_TRUE(enter.ok());
        AfPacketInlineOptions o;
        o.iface1 = "m0";
        o.iface2 = "m1";
        o.fanout_id = fanout_id;
        o.block_size = 1 << 18;
        o.block_count = 8;
        return make_afpacket_inline_source(o);
    }

    std::vector<double> ping(int count, double interval = 0.2) {
        char cmd[128];
        std::snprintf(cmd, sizeof(cmd), "ping -n -c %d -i %.3f -W 1 10.77.3.2", count, interval);
        return testing::ping_times(ns_->out(ns_->client, cmd));
    }

    sockaddr_in server_addr(uint16_t port) const {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        inet_pton(AF_INET, "10.77.3.2", &a.sin_addr);
        return a;
    }

    std::unique_ptr<testing::ThreeNs> ns_;
};

TEST_F(BridgeNetns, PingPassesOnlyWhileTheLoopForwards) {
    EXPECT_EQ(ping(2).size(), 0u);  // no kernel bridge: nothing connects the two veths
    auto src = open();
    {
        ForwardLoop loop(*src, [](const RawPacket&) { return Verdict::kAccept; });
        EXPECT_EQ(ping(3).size(), 3u);
        loop.stop();
        EXPECT_EQ(loop.error(), "");
    }
    EXPECT_EQ(ping(2).size(), 0u);  // source still open, nobody releases: nothing forwarded
    const InlineStats st = src->inline_stats();
    EXPECT_EQ(st.dropped, 0u);
    EXPECT_EQ(st.tx_errors, 0u);
    EXPECT_GE(st.accepted, 6u);  // 3 requests, 3 replies, ARP
}

TEST_F(BridgeNetns, MarkedUdpDatagramIsDroppedTheNextPasses) {
    auto src = open();
    ForwardLoop loop(*src, [](const RawPacket& p) {
        EXPECT_EQ(p.linktype, 1);
        return testing::contains(p, kDrop) ? Verdict::kDrop : Verdict::kAccept;
    });
    const int rx = testing::socket_in(ns_->server, AF_INET, SOCK_DGRAM);
    const int tx = testing::socket_in(ns_->client, AF_INET, SOCK_DGRAM);
    sockaddr_in a = server_addr(7777);
    ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    const std::string first = kDrop + "-1";
    for (const std::string& m : {first, std::string("hello-2")}) {
        ASSERT_EQ(sendto(tx, m.data(), m.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof(a)),
                  static_cast<ssize_t>(m.size()));
    }
    std::vector<std::string> got;
    char buf[256];
    while (testing::readable(rx, got.empty() ? 3000 : 300)) {
        const ssize_t r = recv(rx, buf, sizeof(buf), 0);
        ASSERT_GT(r, 0);
        got.emplace_back(buf, static_cast<size_t>(r));
    }
    EXPECT_EQ(got, std::vector<std::string>{"hello-2"});
    loop.stop();
    EXPECT_EQ(src->inline_stats().dropped, 1u);
    close(rx);
    close(tx);
}

TEST_F(BridgeNetns, TcpTransfersOneMegabyteIntactWithTwoWorkers) {
    const uint16_t fanout = static_cast<uint16_t>(0x7000 | (getpid() & 0xffe));
    auto w0 = open(fanout);
    auto w1 = open(fanout);
    ForwardLoop l0(*w0, [](const RawPacket&) { return Verdict::kAccept; });
    ForwardLoop l1(*w1, [](const RawPacket&) { return Verdict::kAccept; });

    std::vector<uint8_t> data(1 << 20);
    std::mt19937 rng(7);
    for (auto& b : data) {
        b = static_cast<uint8_t>(rng());
    }
    const int ls = testing::socket_in(ns_->server, AF_INET, SOCK_STREAM);
    sockaddr_in a = server_addr(8080);
    ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_EQ(listen(ls, 1), 0);
    std::thread server([&] {
        const int s = accept(ls, nullptr, nullptr);
        size_t off = 0;
        while (s >= 0 && off < data.size()) {
            const ssize_t n = send(s, data.data() + off, data.size() - off, 0);
            if (n <= 0) {
                break;
            }
            off += static_cast<size_t>(n);
        }
        if (s >= 0) {
            close(s);
        }
    });
    const int cs = testing::socket_in(ns_->client, AF_INET, SOCK_STREAM);
    ASSERT_EQ(connect(cs, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    std::vector<uint8_t> got;
    uint8_t buf[65536];
    while (testing::readable(cs, 5000)) {
        const ssize_t n = recv(cs, buf, sizeof(buf), 0);
        if (n <= 0) {
            break;
        }
        got.insert(got.end(), buf, buf + n);
    }
    server.join();
    close(cs);
    close(ls);
    l0.stop();
    l1.stop();
    EXPECT_EQ(got.size(), data.size());
    EXPECT_EQ(testing::fnv1a(got.data(), got.size()), testing::fnv1a(data.data(), data.size()));
    const InlineStats s0 = w0->inline_stats();
    const InlineStats s1 = w1->inline_stats();
    EXPECT_EQ(s0.tx_errors + s1.tx_errors, 0u);
    // One flow: the symmetric fanout hash puts both directions on the same worker.
    EXPECT_TRUE(s0.accepted < 10 || s1.accepted < 10)
        << "flow split: " << s0.accepted << " / " << s1.accepted;
}

TEST_F(BridgeNetns, TcpRejectResetsBothEndsThroughTheBridge) {
    auto src = open();
    auto responder = engine::make_bridge_responder(*bridge_injector(*src));
    decode::DecodeContext ctx;
    std::atomic<uint32_t> rejected{0};
    ForwardLoop loop(*src, [&](const RawPacket& raw) {
        if (!testing::contains(raw, "PICKET-REJECT")) {
            return Verdict::kAccept;
        }
        decode::Packet p;
        decode::decode_packet(ctx, raw.linktype, raw.data, raw.caplen, raw.wirelen, raw.ts_ns, p);
        rejected += responder->reject(p, engine::RejectTarget::kBoth, true);
        return Verdict::kDrop;
    });
    const int ls = testing::socket_in(ns_->server, AF_INET, SOCK_STREAM);
    const int cs = testing::socket_in(ns_->client, AF_INET, SOCK_STREAM);
    sockaddr_in a = server_addr(8081);
    ASSERT_EQ(bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_EQ(listen(ls, 1), 0);
    ASSERT_EQ(connect(cs, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    const int ss = accept(ls, nullptr, nullptr);
    ASSERT_GE(ss, 0);
    char buf[64];
    ASSERT_EQ(send(cs, "hello", 5, 0), 5);
    ASSERT_TRUE(testing::readable(ss, 3000));
    ASSERT_EQ(recv(ss, buf, sizeof(buf), 0), 5);
    ASSERT_EQ(send(cs, "PICKET-REJECT", 13, 0), 13);
    ASSERT_TRUE(testing::readable(cs, 3000));
    EXPECT_EQ(recv(cs, buf, sizeof(buf), 0), -1);
    EXPECT_EQ(errno, ECONNRESET);
    ASSERT_TRUE(testing::readable(ss, 3000));
    EXPECT_EQ(recv(ss, buf, sizeof(buf), 0), -1);
    EXPECT_EQ(errno, ECONNRESET);
    loop.stop();
    EXPECT_GE(rejected.load(), 2u);
    EXPECT_EQ(responder->stats().failed, 0u);
    EXPECT_GE(src->inline_stats().injected, 2u);
    close(ss);
    close(cs);
    close(ls);
}

// Not pass/fail: round trips through the AF_PACKET loop vs a kernel bridge, same namespaces.
TEST_F(BridgeNetns, LatencyFigures) {
    std::vector<double> loop_rtt;
    {
        auto src = open();
        ForwardLoop loop(*src, [](const RawPacket&) { return Verdict::kAccept; });
        ping(1);
        loop_rtt = ping(300, 0.005);
    }
    ASSERT_TRUE(ns_->run(ns_->middle, "ip link add br0 type bridge forward_delay 0") &&
                ns_->run(ns_->middle, "ip link set m0 master br0") &&
                ns_->run(ns_->middle, "ip link set m1 master br0") &&
                ns_->run(ns_->middle, "ip link set br0 up"));
    ping(3);  // the bridge port goes to forwarding state
    const auto kernel = ping(300, 0.005);
    std::printf(
        "ping RTT ms (300 x 5 ms): kernel bridge p50 %.3f p99 %.3f (%zu replies); "
        "AF_PACKET inline loop p50 %.3f p99 %.3f (%zu replies)\n",
        testing::percentile(kernel, 0.5), testing::percentile(kernel, 0.99), kernel.size(),
        testing::percentile(loop_rtt, 0.5), testing::percentile(loop_rtt, 0.99), loop_rtt.size());
    EXPECT_EQ(loop_rtt.size(), 300u);
}

}  // namespace
}  // namespace picket::sensor::capture
