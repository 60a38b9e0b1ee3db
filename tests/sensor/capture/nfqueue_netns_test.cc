// NFQUEUE source on a router namespace between a client and a server namespace (created and
// deleted by each test): iptables -A FORWARD -j NFQUEUE inside the router, a test thread
// setting verdicts. Needs root and nfnetlink_queue; skipped otherwise. Label "netns".
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "sensor/capture/inline.h"
#include "sensor/decode/decode.h"
#include "sensor/engine/respond.h"
#include "tests/sensor/capture/inline_netns.h"

namespace picket::sensor::capture {
namespace {

using testing::ForwardLoop;
using testing::InNetns;

constexpr uint16_t kQueue = 3;
const std::string kDrop = "PICKET-DROP";

class NfqueueNetns : public ::testing::Test {
protected:
    void SetUp() override {
        if (geteuid() != 0) {
            GTEST_SKIP() << "needs root to create network namespaces";
        }
        if (!std::ifstream("/proc/net/netfilter/nfnetlink_queue").good() &&
            testing::sh("modprobe nfnetlink_queue") != 0) {
            GTEST_SKIP() << "nfnetlink_queue is not available";
        }
        ns_ = std::make_unique<testing::ThreeNs>("nfq");
        ASSERT_TRUE(ns_->create());
        const auto& n = *ns_;
        ASSERT_TRUE(n.run(n.client, "ip addr add 10.77.1.2/24 dev c0") &&
                    n.run(n.client, "ip addr add fd77:1::2/64 dev c0 nodad") &&
                    n.run(n.client, "ip route add default via 10.77.1.1") &&
                    n.run(n.client, "ip -6 route add default via fd77:1::1") &&
                    n.run(n.middle, "ip addr add 10.77.1.1/24 dev m0") &&
                    n.run(n.middle, "ip addr add fd77:1::1/64 dev m0 nodad") &&
                    n.run(n.middle, "ip addr add 10.77.2.1/24 dev m1") &&
                    n.run(n.middle, "ip addr add fd77:2::1/64 dev m1 nodad") &&
                    n.run(n.middle, "sysctl -q -w net.ipv4.ip_forward=1") &&
                    n.run(n.middle, "sysctl -q -w net.ipv6.conf.all.forwarding=1") &&
                    n.run(n.server, "ip addr add 10.77.2.2/24 dev s0") &&
                    n.run(n.server, "ip addr add fd77:2::2/64 dev s0 nodad") &&
                    n.run(n.server, "ip route add default via 10.77.2.1") &&
                    n.run(n.server, "ip -6 route add default via fd77:2::1"));
    }

    void queue_forward(const std::string& extra = "") {
        const std::string q =
            " -A FORWARD -j NFQUEUE --queue-num " + std::to_string(kQueue) + extra;
        ASSERT_TRUE(ns_->run(ns_->middle, "iptables" + q));
        ASSERT_TRUE(ns_->run(ns_->middle, "ip6tables" + q));
    }

    std::unique_ptr<InlineSource> open(NfqueueOptions o) {
        InNetns enter(ns_->middle);
        EXPECT_TRUE(enter.ok());
        o.queue = kQueue;
        return make_nfqueue_source(o);
    }

    size_t ping(const std::string& dst, int count, double interval = 0.2, int wait_s = 1) {
        char cmd[256];
        std::snprintf(cmd, sizeof(cmd), "ping -n -c %d -i %.3f -W %d %s", count, interval, wait_s,
                      dst.c_str());
        return testing::ping_times(ns_->out(ns_->client, cmd)).size();
    }

    std::unique_ptr<testing::ThreeNs> ns_;
};

// Sends `first` then `second` over UDP from the client; returns what the server received.
std::vector<std::string> udp_exchange(const testing::ThreeNs& n, int family, const char* server,
                                      const std::string& first, const std::string& second) {
    const int rx = testing::socket_in(n.server, family, SOCK_DGRAM);
    const int tx = testing::socket_in(n.client, family, SOCK_DGRAM);
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        a->sin_family = AF_INET;
        a->sin_port = htons(7777);
        inet_pton(AF_INET, server, &a->sin_addr);
        len = sizeof(*a);
    } else {
        auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(7777);
        inet_pton(AF_INET6, server, &a->sin6_addr);
        len = sizeof(*a);
    }
    std::vector<std::string> got;
    if (rx < 0 || tx < 0 || bind(rx, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
        ADD_FAILURE() << "udp sockets: " << std::strerror(errno);
    } else {
        for (const auto* m : {&first, &second}) {
            sendto(tx, m->data(), m->size(), 0, reinterpret_cast<sockaddr*>(&addr), len);
        }
        char buf[2048];
        while (testing::readable(rx, got.empty() ? 3000 : 300)) {
            const ssize_t r = recv(rx, buf, sizeof(buf), 0);
            if (r <= 0) {
                break;
            }
            got.emplace_back(buf, static_cast<size_t>(r));
        }
    }
    close(rx);
    close(tx);
    return got;
}

TEST_F(NfqueueNetns, PingPassesMarkedUdpIsDroppedAcceptMarkIsSet) {
    queue_forward();
    ASSERT_TRUE(ns_->run(ns_->middle, "iptables -t mangle -A POSTROUTING -m mark --mark 0x77"));
    NfqueueOptions o;
    o.use_mark = true;
    o.mark = 0x77;
    auto src = open(o);
    std::atomic<uint64_t> v4{0};
    std::atomic<uint64_t> other{0};
    ForwardLoop loop(*src, [&](const RawPacket& p) {
        EXPECT_EQ(p.linktype, decode::kDltRaw);
        ++((p.caplen > 0 && (p.data[0] >> 4) == 4) ? v4 : other);
        return testing::contains(p, kDrop) ? Verdict::kDrop : Verdict::kAccept;
    });
    EXPECT_EQ(ping("10.77.2.2", 3), 3u);
    const auto got = udp_exchange(*ns_, AF_INET, "10.77.2.2", kDrop + "-1", "hello-2");
    EXPECT_EQ(got, std::vector<std::string>{"hello-2"});
    loop.stop();
    EXPECT_EQ(loop.error(), "");
    EXPECT_EQ(v4.load(), 6u + 2u);  // 3 echo requests, 3 replies, 2 datagrams
    EXPECT_EQ(other.load(), 0u);
    const InlineStats is = src->inline_stats();
    EXPECT_EQ(is.accepted, 7u);
    EXPECT_EQ(is.dropped, 1u);
    EXPECT_EQ(is.tx_errors, 0u);
    const CaptureStats cs = src->stats();
    EXPECT_EQ(cs.packets, 8u);
    EXPECT_EQ(cs.drops, 0u);
    // Every accepted packet left the router with the mark.
    const std::string counters = ns_->out(ns_->middle, "iptables-save -c -t mangle");
    EXPECT_NE(counters.find("[7:"), std::string::npos) << counters;
}

TEST_F(NfqueueNetns, Ipv6PingPassesAndMarkedUdpIsDropped) {
    // Until duplicate address detection of the link-local addresses ends (~1-2 s) the router
    // cannot resolve neighbours: wait for plain forwarding to work before queueing.
    for (int i = 0; i < 10 && ping("fd77:2::2", 1) == 0; ++i) {
    }
    queue_forward();
    auto src = open({});
    std::atomic<uint64_t> v6{0};
    ForwardLoop loop(*src, [&](const RawPacket& p) {
        v6 += (p.caplen > 0 && (p.data[0] >> 4) == 6) ? 1 : 0;
        return testing::contains(p, kDrop) ? Verdict::kDrop : Verdict::kAccept;
    });
    EXPECT_EQ(ping("fd77:2::2", 3), 3u);
    const auto got = udp_exchange(*ns_, AF_INET6, "fd77:2::2", kDrop + "-1", "hello-2");
    EXPECT_EQ(got, std::vector<std::string>{"hello-2"});
    loop.stop();
    // Neighbour discovery is not forwarded: exactly 3 + 3 echoes and 2 datagrams.
    EXPECT_EQ(v6.load(), 8u);
    EXPECT_EQ(src->inline_stats().dropped, 1u);
}

TEST_F(NfqueueNetns, TcpRejectResetsBothEndsThroughRawSockets) {
    queue_forward();
    auto src = open({});
    std::unique_ptr<engine::Responder> responder;
    {
        InNetns enter(ns_->middle);
        responder = engine::make_raw_socket_responder();
    }
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
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(8080);
    inet_pton(AF_INET, "10.77.2.2", &a.sin_addr);
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
    // The client gets the RST to the sender, the server the one with the dropped segment's seq.
    ASSERT_TRUE(testing::readable(cs, 3000));
    EXPECT_EQ(recv(cs, buf, sizeof(buf), 0), -1);
    EXPECT_EQ(errno, ECONNRESET);
    ASSERT_TRUE(testing::readable(ss, 3000));
    EXPECT_EQ(recv(ss, buf, sizeof(buf), 0), -1);
    EXPECT_EQ(errno, ECONNRESET);
    loop.stop();
    EXPECT_GE(rejected.load(), 2u);
    EXPECT_EQ(responder->stats().failed, 0u);
    close(ss);
    close(cs);
    close(ls);
}

TEST_F(NfqueueNetns, FailOpenPassesTrafficWhenTheQueueIsFull) {
    queue_forward();
    NfqueueOptions o;
    o.max_len = 1;
    o.fail_open = true;
    auto src = open(o);  // bound, never read: the first packet waits, the rest overflow
    EXPECT_GE(ping("10.77.2.2", 5), 4u);
}

TEST_F(NfqueueNetns, WithoutFailOpenAFullQueueDropsAndCountsIt) {
    queue_forward();
    NfqueueOptions o;
    o.max_len = 1;
    auto src = open(o);
    EXPECT_EQ(ping("10.77.2.2", 4), 0u);
    // 4 requests: 1 waits in the queue, 3 found it full.
    const CaptureStats st = src->stats();
    EXPECT_EQ(st.drops, 3u);
    EXPECT_EQ(st.packets, 3u);  // nothing received yet, only the kernel's drops
}

TEST_F(NfqueueNetns, QueueBypassLetsTrafficThroughWithNobodyBound) {
    queue_forward(" --queue-bypass");
    EXPECT_EQ(ping("10.77.2.2", 3), 3u);
}

TEST_F(NfqueueNetns, WithoutBypassNobodyBoundDropsEverything) {
    queue_forward();
    EXPECT_EQ(ping("10.77.2.2", 2), 0u);
}

TEST_F(NfqueueNetns, SecondBindOfTheSameQueueFailsNamingIt) {
    auto first = open({});
    try {
        auto second = open({});
        FAIL() << "bound twice";
    } catch (const CaptureError& e) {
        EXPECT_STREQ(e.what(), "nfqueue 3: already bound by another socket or process");
    }
}

// Not pass/fail: round trips through the NFQUEUE loop vs plain forwarding, same namespaces.
TEST_F(NfqueueNetns, LatencyFigures) {
    const auto measure = [&] {
        return testing::ping_times(ns_->out(ns_->client, "ping -n -c 300 -i 0.005 -W 1 10.77.2.2"));
    };
    ping("10.77.2.2", 1);  // neighbours resolved
    const auto plain = measure();
    queue_forward();
    auto src = open({});
    ForwardLoop loop(*src, [](const RawPacket&) { return Verdict::kAccept; });
    const auto queued = measure();
    loop.stop();
    std::printf(
        "ping RTT ms (300 x 5 ms): plain forwarding p50 %.3f p99 %.3f (%zu replies); "
        "NFQUEUE loop p50 %.3f p99 %.3f (%zu replies)\n",
        testing::percentile(plain, 0.5), testing::percentile(plain, 0.99), plain.size(),
        testing::percentile(queued, 0.5), testing::percentile(queued, 0.99), queued.size());
    EXPECT_EQ(queued.size(), 300u);
}

}  // namespace
}  // namespace picket::sensor::capture
