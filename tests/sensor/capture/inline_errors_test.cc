// Option parsing and setup errors of the inline backends: no privileges needed (interfaces
// are checked with if_nametoindex before any socket is opened).
#include <gtest/gtest.h>

#include <string>

#include "sensor/capture/inline.h"

namespace picket::sensor::capture {
namespace {

std::string queue_error(const std::string& spec) {
    try {
        parse_queue_range(spec);
    } catch (const CaptureError& e) {
        return e.what();
    }
    return "no error";
}

TEST(QueueRange, SingleQueueAndRange) {
    const QueueRange one = parse_queue_range("5");
    EXPECT_EQ(one.first, 5);
    EXPECT_EQ(one.count, 1u);
    const QueueRange four = parse_queue_range("0:3");
    EXPECT_EQ(four.first, 0);
    EXPECT_EQ(four.count, 4u);
    const QueueRange top = parse_queue_range("65535:65535");
    EXPECT_EQ(top.first, 65535);
    EXPECT_EQ(top.count, 1u);
}

TEST(QueueRange, BadRangesNameTheProblem) {
    EXPECT_EQ(queue_error("3:1"), "bad queue range '3:1': last queue 1 is below first 3");
    EXPECT_EQ(queue_error("a:3"), "bad queue range 'a:3': 'a' is not a number");
    EXPECT_EQ(queue_error("0:70000"), "bad queue range '0:70000': queue 70000 is above 65535");
    EXPECT_EQ(queue_error(""), "bad queue range '': '' is not a number");
    EXPECT_EQ(queue_error("1:"), "bad queue range '1:': '' is not a number");
    EXPECT_EQ(queue_error("-1"), "bad queue range '-1': '-1' is not a number");
    EXPECT_EQ(queue_error("1:2:3"), "bad queue range '1:2:3': '2:3' is not a number");
}

std::string bridge_error(const std::string& a, const std::string& b) {
    AfPacketInlineOptions o;
    o.iface1 = a;
    o.iface2 = b;
    try {
        make_afpacket_inline_source(o);
    } catch (const CaptureError& e) {
        return e.what();
    }
    return "no error";
}

TEST(Bridge, UnknownInterfaceAndBridgeToItself) {
    EXPECT_EQ(bridge_error("nosuch0", "lo"),
              "bridge nosuch0:lo: interface 'nosuch0': no such interface");
    EXPECT_EQ(bridge_error("lo", "nosuch1"),
              "bridge lo:nosuch1: interface 'nosuch1': no such interface");
    EXPECT_EQ(bridge_error("lo", "lo"), "bridge lo:lo: cannot bridge interface 'lo' to itself");
}

TEST(Bridge, ParseSpec) {
    EXPECT_EQ(parse_bridge("eth0:eth1"), (std::pair<std::string, std::string>{"eth0", "eth1"}));
    for (const std::string bad : {"eth0", ":eth1", "eth0:", "a:b:c"}) {
        try {
            parse_bridge(bad);
            ADD_FAILURE() << bad;
        } catch (const CaptureError& e) {
            EXPECT_EQ(std::string(e.what()), "bad bridge '" + bad + "': expected IF1:IF2");
        }
    }
}

}  // namespace
}  // namespace picket::sensor::capture
