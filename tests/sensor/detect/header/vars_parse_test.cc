// flowvar / pktvar and hostbits: Suricata 7's grammar (what loads, what is refused with which
// reason) and their checks on hand-built packet contexts.
#include <gtest/gtest.h>

#include <string>

#include "sensor/detect/flowbits.h"
#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::ctx;
using test::Fixture;
using test::parse_error;
using test::tcp_packet;

TEST(FlowvarParseTest, AcceptsDocumentedForms) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_flowvar, "myvar,\"example\"")) << f.error;
    ASSERT_TRUE(f.parse(parse_flowvar, " ua/ubuntu/repo , \"fr|0d 0a|\"")) << f.error;
    ASSERT_TRUE(f.parse(parse_pktvar, "uid,\"0\"")) << f.error;
    EXPECT_EQ(f.rule.header_options.size(), 3u);
    EXPECT_STREQ(f.rule.header_options[0]->keyword(), "flowvar");
    EXPECT_STREQ(f.rule.header_options[2]->keyword(), "pktvar");
    EXPECT_EQ(f.registry.var_count(VarScope::kFlow), 2u);
    EXPECT_EQ(f.registry.var_count(VarScope::kPacket), 1u);
    EXPECT_EQ(f.registry.var_name(VarScope::kFlow, 1), "ua/ubuntu/repo");
}

TEST(FlowvarParseTest, RefusesWithReason) {
    EXPECT_EQ(parse_error(parse_flowvar, "", false), "flowvar: expected <name>,\"<content>\"");
    EXPECT_EQ(parse_error(parse_flowvar, "myvar"), "flowvar: expected <name>,\"<content>\"");
    EXPECT_EQ(parse_error(parse_pktvar, ",\"x\""), "pktvar: invalid variable name ''");
    EXPECT_EQ(parse_error(parse_flowvar, "a b,\"x\""), "flowvar: invalid variable name 'a b'");
    EXPECT_EQ(parse_error(parse_flowvar, "a,x"),
              "flowvar: pattern must be enclosed in double quotes");
    EXPECT_EQ(parse_error(parse_flowvar, "a,\"\""), "flowvar: empty pattern");
    EXPECT_EQ(parse_error(parse_flowvar, "a,\"|4|\""), "flowvar: odd number of hex digits");
    EXPECT_EQ(parse_error(parse_pktvar, "a,!\"x\""), "pktvar: a negated content is not supported");
    EXPECT_EQ(parse_error(parse_flowvar, "a,\"" + std::string(257, 'x') + "\""),
              "flowvar: content longer than 256 bytes never matches (values keep 256)");
}

TEST(FlowvarMatchTest, HoldsTheContent) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_flowvar, "ua,\"curl\""));
    Fixture g;
    ASSERT_TRUE(g.parse(parse_pktvar, "ua,\"curl\""));  // another namespace, same name
    uint16_t flow_ua = 0, pkt_ua = 0;
    ASSERT_TRUE(f.registry.intern_var(VarScope::kFlow, "ua", &flow_ua));
    ASSERT_TRUE(g.registry.intern_var(VarScope::kPacket, "ua", &pkt_ua));
    decode::Packet p = tcp_packet(0x18);
    PacketContext pc = ctx(p);
    EXPECT_FALSE(f.match(pc));  // no flow state
    EXPECT_FALSE(g.match(pc));  // no packet variables

    FlowbitPool pool(64);
    FlowbitStore* s = pool.acquire();
    pc.flowbits = s;
    EXPECT_FALSE(f.match(pc));  // no variable block yet
    VarSet* fv = pool.vars_of(*s);
    ASSERT_TRUE(fv->set(flow_ua, reinterpret_cast<const uint8_t*>("xcurl/8"), 7));
    EXPECT_TRUE(f.match(pc));  // a substring, as Suricata's flowvar match
    ASSERT_TRUE(fv->set(flow_ua, reinterpret_cast<const uint8_t*>("Curl"), 4));
    EXPECT_FALSE(f.match(pc));  // case-sensitive

    VarSet pkt;
    pkt.clear();
    pc.pkt_vars = &pkt;
    EXPECT_FALSE(g.match(pc));
    ASSERT_TRUE(pkt.set(pkt_ua, reinterpret_cast<const uint8_t*>("curl"), 4));
    EXPECT_TRUE(g.match(pc));
    pool.release(s);
}

TEST(HostbitsParseTest, AcceptsDocumentedForms) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_hostbits, "set,scanner")) << f.error;
    ASSERT_TRUE(f.parse(parse_hostbits, "isset,scanner,src")) << f.error;
    ASSERT_TRUE(f.parse(parse_hostbits, "unset, a, dst")) << f.error;
    ASSERT_TRUE(f.parse(parse_hostbits, "toggle,a,dst,expire 60")) << f.error;
    ASSERT_TRUE(f.parse(parse_hostbits, "isnotset,a,src,120")) << f.error;
    ASSERT_EQ(f.rule.xbits.size(), 5u);
    EXPECT_EQ(f.rule.xbits[0].track, XbitTrack::kIpSrc);  // src by default
    EXPECT_EQ(f.rule.xbits[0].expire_s, 300u);            // Suricata 7's hostbits lifetime
    EXPECT_EQ(f.rule.xbits[2].track, XbitTrack::kIpDst);
    EXPECT_EQ(f.rule.xbits[3].expire_s, 60u);
    EXPECT_EQ(f.rule.xbits[4].expire_s, 120u);
    EXPECT_EQ(f.rule.xbits[4].cmd, FlowbitCmd::kIsnotset);
    EXPECT_EQ(f.rule.header_options.size(), 2u);  // isset and isnotset
    EXPECT_TRUE(f.rule.has_xbit_actions);
    // hostbits and xbits with track ip_src name one bit.
    Fixture x;
    ASSERT_TRUE(x.parse(parse_xbits, "set,scanner,track ip_src"));
    EXPECT_EQ(x.rule.xbits[0].name_hash, f.rule.xbits[0].name_hash);
    EXPECT_EQ(x.rule.xbits[0].expire_s, 30u);  // xbits' default stays 30
}

TEST(HostbitsParseTest, AcceptsBothAndNoalert) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_hostbits, "set,pair,both")) << f.error;
    ASSERT_TRUE(f.parse(parse_hostbits, "isset , pair , both ")) << f.error;
    ASSERT_TRUE(f.parse(parse_hostbits, "toggle,pair,both,expire 9")) << f.error;
    ASSERT_EQ(f.rule.xbits.size(), 3u);
    EXPECT_EQ(f.rule.xbits[0].track, XbitTrack::kIpBoth);
    EXPECT_EQ(f.rule.xbits[1].track, XbitTrack::kIpBoth);
    EXPECT_EQ(f.rule.xbits[2].expire_s, 9u);
    EXPECT_FALSE(f.rule.noalert);
    ASSERT_TRUE(f.parse(parse_hostbits, "noalert")) << f.error;
    EXPECT_TRUE(f.rule.noalert);
    EXPECT_EQ(f.rule.xbits.size(), 3u);  // noalert adds no bit
}

TEST(HostbitsParseTest, RefusesWithReason) {
    EXPECT_EQ(parse_error(parse_hostbits, "", false),
              "hostbits: expected <cmd>,<name>[,<src|dst|both>[,expire <seconds>]]");
    EXPECT_EQ(parse_error(parse_hostbits, "mark,a"),
              "hostbits: unknown command 'mark' (set, unset, toggle, isset, isnotset or noalert)");
    EXPECT_EQ(parse_error(parse_hostbits, "noalert,a"),
              "hostbits: noalert takes no bit name, got 'a'");
    EXPECT_EQ(parse_error(parse_hostbits, "set"), "hostbits: invalid bit name ''");
    EXPECT_EQ(parse_error(parse_hostbits, "set,a|b"), "hostbits: invalid bit name 'a|b'");
    EXPECT_EQ(parse_error(parse_hostbits, "set,a,ip_src"),
              "hostbits: invalid direction 'ip_src' (src, dst or both)");
    // Suricata's hostbits take a bare direction; the track form is xbits'.
    EXPECT_EQ(parse_error(parse_hostbits, "set,a,track ip_src"),
              "hostbits: invalid direction 'track ip_src' (src, dst or both; 'track "
              "<ip_src|ip_dst>' is xbits' syntax)");
    EXPECT_EQ(parse_error(parse_hostbits, "set,a,src,expire 0"),
              "hostbits: expire must be a number of seconds above 0, got '0'");
    EXPECT_EQ(parse_error(parse_hostbits, "set,a,src,soon"),
              "hostbits: expire must be a number of seconds above 0, got 'soon'");
    EXPECT_EQ(parse_error(parse_hostbits, "set,a,src,5,x"),
              "hostbits: too many arguments in 'set,a,src,5,x'");
}

TEST(HostbitsMatchTest, PerHostAcrossDirectionsAndExpiry) {
    xbits_clear();
    Fixture setter;
    ASSERT_TRUE(setter.parse(parse_hostbits, "set,bad,dst,expire 10"));
    Fixture by_src;
    ASSERT_TRUE(by_src.parse(parse_hostbits, "isset,bad,src"));
    Fixture not_dst;
    ASSERT_TRUE(not_dst.parse(parse_hostbits, "isnotset,bad,dst"));
    decode::Packet p = tcp_packet(0x18);  // 10.0.0.1 -> 10.0.0.2
    p.ts_ns = 1000000000;
    EXPECT_TRUE(not_dst.match(ctx(p)));
    apply_xbit_actions(setter.rule, p);  // marks 10.0.0.2
    EXPECT_FALSE(not_dst.match(ctx(p)));
    EXPECT_FALSE(by_src.match(ctx(p)));  // 10.0.0.1 is not marked
    decode::Packet back = tcp_packet(0x18);
    back.src = test::v4("10.0.0.2");
    back.dst = test::v4("10.0.0.9");
    back.ts_ns = 10999999999;
    EXPECT_TRUE(by_src.match(ctx(back)));
    back.ts_ns = 11000000000;  // 10 s after the set
    EXPECT_FALSE(by_src.match(ctx(back)));
}

TEST(HostbitsMatchTest, BothMarksAndChecksEachHost) {
    xbits_clear();
    Fixture setter;
    ASSERT_TRUE(setter.parse(parse_hostbits, "set,pair,both,expire 10"));
    Fixture both;
    ASSERT_TRUE(both.parse(parse_hostbits, "isset,pair,both"));
    Fixture neither;
    ASSERT_TRUE(neither.parse(parse_hostbits, "isnotset,pair,both"));
    Fixture by_src;
    ASSERT_TRUE(by_src.parse(parse_hostbits, "isset,pair,src"));
    Fixture unset_both;
    ASSERT_TRUE(unset_both.parse(parse_hostbits, "unset,pair,both"));
    decode::Packet p = tcp_packet(0x18);  // 10.0.0.1 -> 10.0.0.2
    p.ts_ns = 1000000000;
    EXPECT_FALSE(both.match(ctx(p)));
    EXPECT_TRUE(neither.match(ctx(p)));
    apply_xbit_actions(setter.rule, p);  // marks 10.0.0.1 and 10.0.0.2
    EXPECT_TRUE(both.match(ctx(p)));
    EXPECT_FALSE(neither.match(ctx(p)));
    // Each host carries the bit on its own: 10.0.0.2 as a source to a third host,
    // and 10.0.0.1 as a source too.
    decode::Packet from_dst = tcp_packet(0x18);
    from_dst.src = test::v4("10.0.0.2");
    from_dst.dst = test::v4("10.0.0.9");
    from_dst.ts_ns = 2000000000;
    EXPECT_TRUE(by_src.match(ctx(from_dst)));
    EXPECT_FALSE(both.match(ctx(from_dst)));     // 10.0.0.9 is not marked
    EXPECT_FALSE(neither.match(ctx(from_dst)));  // 10.0.0.2 is
    decode::Packet from_src = from_dst;
    from_src.src = test::v4("10.0.0.1");
    EXPECT_TRUE(by_src.match(ctx(from_src)));
    // unset both clears each host.
    apply_xbit_actions(unset_both.rule, p);
    EXPECT_FALSE(by_src.match(ctx(from_dst)));
    EXPECT_FALSE(by_src.match(ctx(from_src)));
    EXPECT_TRUE(neither.match(ctx(p)));
}

}  // namespace
}  // namespace picket::sensor::detect
