// Parsing of stream_size and xbits (Suricata 7's grammar: what loads and what is refused with
// which reason), and stream_size / xbits evaluation on hand-built packet contexts. tag: see
// tag_test.cc.
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

TEST(StreamSizeParseTest, AcceptsEveryDirectionAndOperator) {
    for (const char* v :
         {"server,<,5", "client,>,1800", "both,=,1", "either,!=,0", "server,<=,4294967295",
          "client,>=,10", " server , < , 15 ", "\"client,=,1\""}) {
        Fixture f;
        EXPECT_TRUE(f.parse(parse_stream_size, v)) << v << ": " << f.error;
        EXPECT_EQ(f.rule.header_options.size(), 1u) << v;
        EXPECT_TRUE(f.registry.tcp_seq_wanted()) << v;
    }
}

TEST(StreamSizeParseTest, RefusesWithReason) {
    EXPECT_EQ(parse_error(parse_stream_size, "", false),
              "stream_size: expected <server|client|both|either>,<operator>,<number>");
    EXPECT_EQ(parse_error(parse_stream_size, "server,<"),
              "stream_size: expected <server|client|both|either>,<operator>,<number>, got "
              "'server,<'");
    EXPECT_EQ(parse_error(parse_stream_size, "up,<,5"),
              "stream_size: invalid direction 'up' (server, client, both or either)");
    EXPECT_EQ(parse_error(parse_stream_size, "server,=>,5"),
              "stream_size: invalid operator '=>' (<, >, =, !=, <= or >=)");
    EXPECT_EQ(parse_error(parse_stream_size, "server,<,4294967296"),
              "stream_size: invalid number '4294967296' (0 to 4294967295)");
    EXPECT_EQ(parse_error(parse_stream_size, "server,<,-1"),
              "stream_size: invalid number '-1' (0 to 4294967295)");
    EXPECT_EQ(parse_error(parse_stream_size, "server,<,5,6"),
              "stream_size: invalid number '5,6' (0 to 4294967295)");
}

TEST(StreamSizeMatchTest, ComparesNextSeqMinusIsn) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_stream_size, "server,<,6"));
    decode::Packet p = tcp_packet(0x10);
    PacketContext pc = ctx(p);
    EXPECT_FALSE(f.match(pc));  // no store: no TCP session seen
    uint64_t words[1] = {0};
    FlowbitStore store;
    store.words = words;
    store.nwords = 1;
    pc.flowbits = &store;
    EXPECT_FALSE(f.match(pc));  // nothing tracked yet
    decode::Packet synack = tcp_packet(0x12);
    synack.tcp_seq = 0xfffffffe;  // the sequence space wraps
    tcp_seq_note(store.tcp, synack, flow::Direction::kToClient);
    EXPECT_EQ(store.tcp.size(1), 1u);
    EXPECT_EQ(store.tcp.size(0), 0u);
    EXPECT_TRUE(f.match(pc));
    decode::Packet data = tcp_packet(0x18);
    data.tcp_seq = 0xffffffff;
    data.payload_len = 5;
    tcp_seq_note(store.tcp, data, flow::Direction::kToClient);
    EXPECT_EQ(store.tcp.size(1), 6u);
    EXPECT_FALSE(f.match(pc));
    // A UDP packet never matches.
    decode::Packet udp = tcp_packet(0);
    udp.flags = decode::kFlagIpv4 | decode::kFlagUdp;
    PacketContext upc = ctx(udp);
    upc.flowbits = &store;
    Fixture g;
    ASSERT_TRUE(g.parse(parse_stream_size, "server,>,0"));
    EXPECT_TRUE(g.match(pc));
    EXPECT_FALSE(g.match(upc));
}

TEST(XbitsParseTest, AcceptsDocumentedForms) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_xbits, "set,ET.ipcheck,track ip_src")) << f.error;
    ASSERT_TRUE(f.parse(parse_xbits, "set, ET.PROPFIND, track ip_src, expire 360")) << f.error;
    ASSERT_TRUE(f.parse(parse_xbits, "unset,a,track ip_dst,expire 30")) << f.error;
    ASSERT_TRUE(f.parse(parse_xbits, "toggle,a,track ip_pair")) << f.error;
    ASSERT_TRUE(f.parse(parse_xbits, "isset,ET.2020_8260.2,track ip_src,expire 10")) << f.error;
    ASSERT_TRUE(f.parse(parse_xbits, "isnotset,a,track ip_pair")) << f.error;
    ASSERT_EQ(f.rule.xbits.size(), 6u);
    EXPECT_EQ(f.rule.xbits[0].expire_s, 30u);  // Suricata's default
    EXPECT_EQ(f.rule.xbits[1].expire_s, 360u);
    EXPECT_EQ(f.rule.xbits[1].track, XbitTrack::kIpSrc);
    EXPECT_EQ(f.rule.xbits[2].track, XbitTrack::kIpDst);
    EXPECT_EQ(f.rule.xbits[3].track, XbitTrack::kIpPair);
    EXPECT_EQ(f.rule.xbits[3].cmd, FlowbitCmd::kToggle);
    EXPECT_EQ(f.rule.xbits[0].name_hash, f.rule.xbits[0].name_hash);
    EXPECT_NE(f.rule.xbits[0].name_hash, f.rule.xbits[1].name_hash);
    EXPECT_EQ(f.rule.header_options.size(), 2u);  // isset and isnotset
    EXPECT_TRUE(f.rule.has_xbit_actions);
    Fixture c;
    ASSERT_TRUE(c.parse(parse_xbits, "isset,a,track ip_src"));
    EXPECT_FALSE(c.rule.has_xbit_actions);
}

TEST(XbitsParseTest, TakesTrackAndExpireInEitherOrder) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_xbits, "set,a,expire 60,track ip_pair")) << f.error;
    ASSERT_EQ(f.rule.xbits.size(), 1u);
    EXPECT_EQ(f.rule.xbits[0].track, XbitTrack::kIpPair);
    EXPECT_EQ(f.rule.xbits[0].expire_s, 60u);
    EXPECT_EQ(parse_error(parse_xbits, "set,a,expire 60"),
              "xbits: track <ip_src|ip_dst|ip_pair|tx> is required");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,track ip_src,track ip_dst"),
              "xbits: track given twice ('track ip_dst')");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,expire 5,expire 6"),
              "xbits: expire given twice ('expire 6')");
}

TEST(XbitsParseTest, AcceptsTrackTx) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_xbits, "set,ET.req,track tx")) << f.error;
    ASSERT_TRUE(f.parse(parse_xbits, "isset, ET.req, track tx")) << f.error;
    ASSERT_TRUE(f.parse(parse_xbits, "set,b,track tx,expire 60")) << f.error;  // no effect
    ASSERT_EQ(f.rule.xbits.size(), 3u);
    EXPECT_EQ(f.rule.xbits[0].track, XbitTrack::kTx);
    EXPECT_EQ(f.rule.xbits[0].cmd, FlowbitCmd::kSet);
    EXPECT_EQ(f.rule.xbits[1].track, XbitTrack::kTx);
    EXPECT_EQ(f.rule.xbits[1].cmd, FlowbitCmd::kIsset);
    EXPECT_EQ(f.rule.xbits[0].name_hash, f.rule.xbits[1].name_hash);
    EXPECT_EQ(f.rule.header_options.size(), 1u);  // the isset
    EXPECT_TRUE(f.rule.has_xbit_actions);
    EXPECT_TRUE(has_tx_xbit_sets(f.rule));
    Fixture host;
    ASSERT_TRUE(host.parse(parse_xbits, "set,a,track ip_src"));
    EXPECT_FALSE(has_tx_xbit_sets(host.rule));
}

TEST(XbitsMatchTest, TxBitsBelongToOneTransaction) {
    Fixture setter;
    ASSERT_TRUE(setter.parse(parse_xbits, "set,req,track tx"));
    Fixture check;
    ASSERT_TRUE(check.parse(parse_xbits, "isset,req,track tx"));
    Fixture other;
    ASSERT_TRUE(other.parse(parse_xbits, "isset,another,track tx"));
    decode::Packet p = tcp_packet(0x18);
    AppView tx1;
    tx1.proto = AppProto::kHttp;
    tx1.tx_id = 1;
    AppView tx2 = tx1;
    tx2.tx_id = 2;
    AppView dns1;
    dns1.proto = AppProto::kDns;
    dns1.tx_id = 1;
    FlowbitPool pool(64);
    FlowbitStore* s = pool.acquire();
    ASSERT_NE(s, nullptr);
    PacketContext pc = ctx(p);
    pc.flowbits = s;
    pc.view = &tx1;
    EXPECT_FALSE(check.match(pc));
    apply_xbit_actions(setter.rule, p, s, &tx1);
    EXPECT_TRUE(check.match(pc));   // the same transaction
    EXPECT_FALSE(other.match(pc));  // another bit
    pc.view = &tx2;
    EXPECT_FALSE(check.match(pc));  // another transaction of the flow
    pc.view = &dns1;
    EXPECT_FALSE(check.match(pc));  // the same id in another protocol
    pc.view = nullptr;
    EXPECT_FALSE(check.match(pc));  // no transaction: a packet rule
    pc.view = &tx1;
    pc.flowbits = nullptr;
    EXPECT_FALSE(check.match(pc));  // no flow state
    // Without a transaction or a store a set does nothing.
    apply_xbit_actions(setter.rule, p, s, nullptr);
    apply_xbit_actions(setter.rule, p, nullptr, &tx2);
    pc.flowbits = s;
    pc.view = &tx2;
    EXPECT_FALSE(check.match(pc));
    pool.release(s);
}

TEST(XbitsMatchTest, TxBitsKeepTheLatestEightEntries) {
    Fixture setter;
    ASSERT_TRUE(setter.parse(parse_xbits, "set,req,track tx"));
    Fixture check;
    ASSERT_TRUE(check.parse(parse_xbits, "isset,req,track tx"));
    decode::Packet p = tcp_packet(0x18);
    FlowbitPool pool(64);
    FlowbitStore* s = pool.acquire();
    ASSERT_NE(s, nullptr);
    AppView v;
    v.proto = AppProto::kHttp;
    for (uint64_t id = 0; id < kTxBitSlots + 1; ++id) {  // transactions 0..8
        v.tx_id = id;
        apply_xbit_actions(setter.rule, p, s, &v);
        apply_xbit_actions(setter.rule, p, s, &v);  // a second set takes no new entry
    }
    PacketContext pc = ctx(p);
    pc.flowbits = s;
    pc.view = &v;
    v.tx_id = 0;
    EXPECT_FALSE(check.match(pc));  // the oldest went
    v.tx_id = 1;
    EXPECT_TRUE(check.match(pc));
    v.tx_id = 8;
    EXPECT_TRUE(check.match(pc));
    s->clear();
    EXPECT_FALSE(check.match(pc));
    pool.release(s);
}

TEST(XbitsParseTest, RefusesWithReason) {
    EXPECT_EQ(parse_error(parse_xbits, "", false),
              "xbits: expected <cmd>,<name>,track <ip_src|ip_dst|ip_pair|tx>[,expire <seconds>]");
    EXPECT_EQ(parse_error(parse_xbits, "flip,a,track ip_src"),
              "xbits: unknown command 'flip' (set, unset, toggle, isset or isnotset)");
    EXPECT_EQ(parse_error(parse_xbits, "set"), "xbits: invalid bit name ''");
    EXPECT_EQ(parse_error(parse_xbits, "set,a b,track ip_src"), "xbits: invalid bit name 'a b'");
    EXPECT_EQ(parse_error(parse_xbits, "set,a"),
              "xbits: track <ip_src|ip_dst|ip_pair|tx> is required");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,ip_src"),
              "xbits: expected 'track <ip_src|ip_dst|ip_pair|tx>', got 'ip_src'");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,track flow"),
              "xbits: invalid track 'flow' (ip_src, ip_dst, ip_pair or tx)");
    // Suricata 8 has set and isset alone for transactions.
    EXPECT_EQ(parse_error(parse_xbits, "unset,a,track tx"),
              "xbits: track tx takes set or isset only, not 'unset' (Suricata 8 has no other "
              "transaction bit command)");
    EXPECT_EQ(parse_error(parse_xbits, "toggle,a,track tx"),
              "xbits: track tx takes set or isset only, not 'toggle' (Suricata 8 has no other "
              "transaction bit command)");
    EXPECT_EQ(parse_error(parse_xbits, "isnotset,a,track tx"),
              "xbits: track tx takes set or isset only, not 'isnotset' (Suricata 8 has no other "
              "transaction bit command)");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,track ip_src,expire 0"),
              "xbits: expire must be a number of seconds above 0, got '0'");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,track ip_src,expire x"),
              "xbits: expire must be a number of seconds above 0, got 'x'");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,track ip_src,ttl 5"),
              "xbits: expected 'expire <seconds>', got 'ttl 5'");
    EXPECT_EQ(parse_error(parse_xbits, "set,a,track ip_src,expire 5,x"),
              "xbits: too many arguments in 'set,a,track ip_src,expire 5,x'");
}

TEST(XbitsMatchTest, HostBitsExpireByPacketTime) {
    xbits_clear();
    Fixture setter;
    ASSERT_TRUE(setter.parse(parse_xbits, "set,h,track ip_dst,expire 5"));
    Fixture by_src;
    ASSERT_TRUE(by_src.parse(parse_xbits, "isset,h,track ip_src"));
    Fixture by_dst;
    ASSERT_TRUE(by_dst.parse(parse_xbits, "isset,h,track ip_dst"));
    decode::Packet p = tcp_packet(0x18);  // 10.0.0.1 -> 10.0.0.2
    p.ts_ns = 1000000000;
    apply_xbit_actions(setter.rule, p);
    EXPECT_TRUE(by_dst.match(ctx(p)));
    EXPECT_FALSE(by_src.match(ctx(p)));
    decode::Packet back = tcp_packet(0x18);  // 10.0.0.2 -> 10.0.0.1
    back.src = test::v4("10.0.0.2");
    back.dst = test::v4("10.0.0.1");
    back.ts_ns = 5999999999;
    EXPECT_TRUE(by_src.match(ctx(back)));
    back.ts_ns = 6000000000;
    EXPECT_FALSE(by_src.match(ctx(back)));
    EXPECT_EQ(xbits_dropped(), 0u);
}

TEST(FlowintParseTest, AcceptsDocumentedForms) {
    Fixture f;
    for (const char* v :
         {"usernamecount, +, 1", "loginfail, notset", "loginfail, =, 1", "loginfail,isset",
          "loginfail, >, 5", "myvar,==,3", "myvar,!=,3", "myvar,<,3", "myvar,<=,3", "myvar,>=,3",
          "myvar,-,1", "a,isnotset", "cntpackets, ==, maxvar", "ET.infostealer.dll.download, +, 1",
          "x,=,4294967295"}) {
        EXPECT_TRUE(f.parse(parse_flowint, v)) << v << ": " << f.error;
    }
    ASSERT_EQ(f.rule.flowints.size(), 15u);
    EXPECT_TRUE(f.rule.header_options.empty());  // the engine runs them after the other options
    EXPECT_EQ(f.rule.flowints[0].cmd, FlowintCmd::kAdd);
    EXPECT_EQ(f.rule.flowints[11].cmd, FlowintCmd::kNotset);
    EXPECT_TRUE(f.rule.flowints[12].value_is_var);
    EXPECT_EQ(f.rule.flowints[14].value, 4294967295u);
    EXPECT_EQ(parse_error(parse_flowint, "a,=,b"), "flowint: invalid value 'b'");  // 2+ chars
}

TEST(FlowintParseTest, RefusesWithReason) {
    EXPECT_EQ(parse_error(parse_flowint, "", false), "flowint: expected <name>,<op>[,<value>]");
    EXPECT_EQ(parse_error(parse_flowint, "1abc,+,1"), "flowint: invalid variable name '1abc'");
    EXPECT_EQ(parse_error(parse_flowint, "a"), "flowint: an operator is needed after 'a'");
    EXPECT_EQ(parse_error(parse_flowint, "a,*,2"),
              "flowint: invalid operator '*' (=, +, -, ==, !=, <, <=, >, >=, isset, notset, "
              "isnotset)");
    EXPECT_EQ(parse_error(parse_flowint, "a,+"), "flowint: + needs a value");
    EXPECT_EQ(parse_error(parse_flowint, "a,isset,1"), "flowint: isset takes no value");
    EXPECT_EQ(parse_error(parse_flowint, "a,=,4294967296"),
              "flowint: invalid value '4294967296' (0 to 4294967295)");
    EXPECT_EQ(parse_error(parse_flowint, "a,=,b.c"), "flowint: invalid value 'b.c'");
    EXPECT_EQ(parse_error(parse_flowint, "a,=,1,2"), "flowint: too many arguments in 'a,=,1,2'");
}

TEST(FlowintParseTest, AtMost16Names) {
    Fixture f;
    for (int i = 0; i < 16; ++i) {
        std::string v = "v";
        v += std::to_string(i);
        v += ",=,1";
        ASSERT_TRUE(f.parse(parse_flowint, v)) << f.error;
    }
    EXPECT_TRUE(f.parse(parse_flowint, "v3,+,1"));  // a known name
    EXPECT_FALSE(f.parse(parse_flowint, "v16,=,1"));
    EXPECT_EQ(f.error, "flowint: more than 16 flowint names");
}

TEST(FlowintRunTest, InOrderOnValues) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_flowint, "n,+,1"));
    ASSERT_TRUE(f.parse(parse_flowint, "n,>,2"));
    FlowintValues v;
    EXPECT_FALSE(run_flowints(f.rule.flowints, v));  // 1: the + stays applied
    EXPECT_EQ(v.v[0], 1u);
    EXPECT_EQ(v.set, 1u);
    v.v[0] = 2;
    v.set = 1;
    EXPECT_TRUE(run_flowints(f.rule.flowints, v));  // 3 > 2
    EXPECT_EQ(v.v[0], 3u);
    Fixture g;
    ASSERT_TRUE(g.parse(parse_flowint, "n,-,5"));
    FlowintValues w;
    EXPECT_TRUE(run_flowints(g.rule.flowints, w));
    EXPECT_EQ(w.v[0], 4294967291u);  // 0 - 5, 32-bit
    Fixture h;  // a comparison against an unset variable, or an unset operand, fails
    ASSERT_TRUE(h.parse(parse_flowint, "a,==,bb"));
    FlowintValues x;
    x.set = 1;
    EXPECT_FALSE(run_flowints(h.rule.flowints, x));
    x.set = 3;
    EXPECT_TRUE(run_flowints(h.rule.flowints, x));  // 0 == 0
}

}  // namespace
}  // namespace picket::sensor::detect
