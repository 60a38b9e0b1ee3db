#include <gtest/gtest.h>

#include "tests/sensor/detect/header/test_util.h"

namespace picket::sensor::detect {
namespace {

using namespace keywords;
using test::ctx;
using test::Fixture;
using test::tcp_packet;

TEST(FlowTest, FlagsAndMatch) {
    Fixture f;
    ASSERT_TRUE(f.parse(parse_flow, "established, to_server"));
    EXPECT_EQ(f.rule.flow_flags, kFlowEstablished | kFlowToServer);
    decode::Packet p = tcp_packet(0x18);
    flow::Flow fl;
    PacketContext pc = ctx(p);
    EXPECT_FALSE(f.match(pc));  // no flow
    pc.flow = &fl;
    pc.dir = flow::Direction::kToServer;
    EXPECT_FALSE(f.match(pc));  // not established
    pc.established = true;
    EXPECT_TRUE(f.match(pc));
    pc.dir = flow::Direction::kToClient;
    EXPECT_FALSE(f.match(pc));
}

TEST(FlowTest, AliasesStreamFragStateless) {
    decode::Packet p = tcp_packet(0x18);
    flow::Flow fl;
    PacketContext pc = ctx(p);
    pc.flow = &fl;
    pc.dir = flow::Direction::kToClient;

    Fixture a;
    ASSERT_TRUE(a.parse(parse_flow, "from_server,not_established"));
    EXPECT_EQ(a.rule.flow_flags, kFlowToClient | kFlowNotEstablished);
    EXPECT_TRUE(a.match(pc));

    Fixture b;
    ASSERT_TRUE(b.parse(parse_flow, "only_stream"));
    EXPECT_FALSE(b.match(pc));
    pc.from_stream = true;
    EXPECT_TRUE(b.match(pc));

    Fixture c;
    ASSERT_TRUE(c.parse(parse_flow, "no_stream"));
    EXPECT_FALSE(c.match(pc));

    Fixture d;
    ASSERT_TRUE(d.parse(parse_flow, "only_frag"));
    EXPECT_FALSE(d.match(pc));
    p.flags |= decode::kFlagReassembled;
    EXPECT_TRUE(d.match(pc));
    Fixture e;
    ASSERT_TRUE(e.parse(parse_flow, "no_frag"));
    EXPECT_FALSE(e.match(pc));

    Fixture g;
    ASSERT_TRUE(g.parse(parse_flow, "stateless"));
    PacketContext none = ctx(p);
    EXPECT_TRUE(g.match(none));
    Fixture h;
    ASSERT_TRUE(h.parse(parse_flow, "not_established"));
    EXPECT_TRUE(h.match(none));  // Suricata: no flow means not established
}

TEST(FlowTest, Errors) {
    Fixture f;
    EXPECT_FALSE(f.parse(parse_flow, "to_server,to_client"));
    EXPECT_EQ(f.error, "flow: 'to_client' conflicts with 'to_server'");
    EXPECT_FALSE(f.parse(parse_flow, "established,not_established"));
    EXPECT_EQ(f.error, "flow: 'not_established' conflicts with 'established'");
    EXPECT_FALSE(f.parse(parse_flow, "established,stateless"));
    EXPECT_EQ(f.error, "flow: 'stateless' conflicts with 'established'");
    EXPECT_FALSE(f.parse(parse_flow, "to_server,from_client"));
    EXPECT_EQ(f.error, "flow: 'to_server' given twice");
    EXPECT_FALSE(f.parse(parse_flow, "sideways"));
    EXPECT_EQ(f.error, "flow: unknown option 'sideways'");
    EXPECT_FALSE(f.parse(parse_flow, "", false));
    EXPECT_EQ(f.error, "flow: at least one option is required");
    // A second flow keyword cannot contradict the first.
    ASSERT_TRUE(f.parse(parse_flow, "to_server"));
    EXPECT_FALSE(f.parse(parse_flow, "to_client"));
    EXPECT_EQ(f.error, "flow: 'to_client' conflicts with 'to_server'");
    EXPECT_EQ(f.rule.flow_flags, kFlowToServer);
    EXPECT_EQ(f.rule.header_options.size(), 1u);
}

TEST(FlowbitRegistryTest, Interning) {
    FlowbitRegistry reg;
    EXPECT_EQ(reg.intern("a"), 0u);
    EXPECT_EQ(reg.intern("b"), 1u);
    EXPECT_EQ(reg.intern("a"), 0u);
    EXPECT_EQ(reg.size(), 2u);
    uint32_t id = 99;
    EXPECT_TRUE(reg.find("b", &id));
    EXPECT_EQ(id, 1u);
    EXPECT_FALSE(reg.find("c", &id));
    EXPECT_EQ(reg.name(1), "b");
    EXPECT_EQ(reg.name(7), "");
}

TEST(FlowbitPoolTest, AcquireReleaseReuseAndLimit) {
    FlowbitPool pool(130, /*max_stores=*/3, /*chunk=*/2);
    EXPECT_EQ(pool.nbits(), 192u);
    FlowbitStore* a = pool.acquire();
    FlowbitStore* b = pool.acquire();
    FlowbitStore* c = pool.acquire();
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(pool.acquire(), nullptr);
    EXPECT_EQ(pool.counters().exhausted.get(), 1u);
    EXPECT_EQ(pool.counters().in_use.get(), 3u);
    a->set(129);
    EXPECT_TRUE(a->test(129));
    a->set(500);  // beyond capacity: ignored
    EXPECT_FALSE(a->test(500));
    pool.release(a);
    FlowbitStore* d = pool.acquire();
    EXPECT_EQ(d, a);             // reused
    EXPECT_FALSE(d->test(129));  // and zeroed
    EXPECT_EQ(pool.counters().acquired.get(), 4u);

    flow::Flow fl;
    pool.release(d);
    FlowbitStore* s = flowbits_acquire(fl, pool);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(flowbits_of(&fl), s);
    EXPECT_EQ(flowbits_acquire(fl, pool), s);
    flowbits_release(fl, pool);
    EXPECT_EQ(flowbits_of(&fl), nullptr);
    EXPECT_EQ(pool.counters().in_use.get(), 2u);
}

TEST(FlowbitPoolTest, GrowBits) {
    FlowbitPool pool(64, 8, 2);
    FlowbitStore* old_store = pool.acquire();
    pool.grow_bits(200);
    EXPECT_EQ(pool.nbits(), 256u);
    FlowbitStore* n = pool.acquire();
    EXPECT_EQ(n->capacity(), 256u);
    n->set(199);
    EXPECT_TRUE(n->test(199));
    old_store->set(3);
    EXPECT_TRUE(old_store->test(3));
    EXPECT_FALSE(old_store->test(199));
    pool.release(old_store);  // retired: its chunk (both stores retired) is freed
    FlowbitStore* again = pool.acquire();
    EXPECT_EQ(again->capacity(), 256u);
    EXPECT_EQ(FlowbitPool::bits_for(0), 64u);
    EXPECT_EQ(FlowbitPool::bits_for(64), 128u);
    EXPECT_EQ(FlowbitPool::bits_for(65), 192u);
}

TEST(FlowbitsKeywordTest, SetThenIssetAcrossPackets) {
    FlowbitRegistry reg;
    Fixture setter, checker, notset;
    setter.st.flowbits = &reg;
    checker.st.flowbits = &reg;
    notset.st.flowbits = &reg;
    ASSERT_TRUE(setter.parse(parse_flowbits, "set, ET.login"));
    ASSERT_TRUE(setter.parse(parse_flowbits, "noalert"));
    ASSERT_TRUE(checker.parse(parse_flowbits, "isset,ET.login"));
    ASSERT_TRUE(notset.parse(parse_flowbits, "isnotset,ET.login"));
    EXPECT_TRUE(setter.rule.noalert);
    EXPECT_TRUE(setter.rule.header_options.empty());  // an action is not a condition
    ASSERT_EQ(setter.rule.flowbits.size(), 1u);
    EXPECT_EQ(setter.rule.flowbits[0].cmd, FlowbitCmd::kSet);
    EXPECT_EQ(setter.rule.flowbits[0].bits, std::vector<uint32_t>{0});
    EXPECT_TRUE(has_flowbit_actions(setter.rule));
    EXPECT_FALSE(has_flowbit_actions(checker.rule));

    decode::Packet p = tcp_packet(0x18);
    flow::Flow fl;
    FlowbitPool pool(FlowbitPool::bits_for(reg.size()));
    PacketContext pc = ctx(p);
    pc.flow = &fl;
    // Packet 1: nothing set yet.
    pc.flowbits = flowbits_of(&fl);
    EXPECT_FALSE(checker.match(pc));
    EXPECT_TRUE(notset.match(pc));
    // Setter matched on packet 1: apply its actions.
    apply_flowbit_actions(setter.rule, *flowbits_acquire(fl, pool));
    // Packet 2.
    pc.flowbits = flowbits_of(&fl);
    EXPECT_TRUE(checker.match(pc));
    EXPECT_FALSE(notset.match(pc));
    // unset and toggle.
    Fixture unsetter, toggler;
    unsetter.st.flowbits = &reg;
    toggler.st.flowbits = &reg;
    ASSERT_TRUE(unsetter.parse(parse_flowbits, "unset,ET.login"));
    ASSERT_TRUE(toggler.parse(parse_flowbits, "toggle,ET.login"));
    apply_flowbit_actions(unsetter.rule, *flowbits_of(&fl));
    EXPECT_FALSE(checker.match(pc));
    apply_flowbit_actions(toggler.rule, *flowbits_of(&fl));
    EXPECT_TRUE(checker.match(pc));
    apply_flowbit_actions(toggler.rule, *flowbits_of(&fl));
    EXPECT_FALSE(checker.match(pc));
    flowbits_release(fl, pool);
}

TEST(FlowbitsKeywordTest, AnyAndAll) {
    FlowbitRegistry reg;
    Fixture any_set, all_set, any_not, all_not, set_both;
    for (Fixture* f : {&any_set, &all_set, &any_not, &all_not, &set_both}) {
        f->st.flowbits = &reg;
    }
    ASSERT_TRUE(any_set.parse(parse_flowbits, "isset,a|b"));
    ASSERT_TRUE(all_set.parse(parse_flowbits, "isset,a&b"));
    ASSERT_TRUE(any_not.parse(parse_flowbits, "isnotset,a|b"));
    ASSERT_TRUE(all_not.parse(parse_flowbits, "isnotset,a&b"));
    ASSERT_TRUE(set_both.parse(parse_flowbits, "set,a&b"));
    EXPECT_EQ(set_both.rule.flowbits[0].bits, (std::vector<uint32_t>{0, 1}));

    FlowbitPool pool(64);
    FlowbitStore* s = pool.acquire();
    decode::Packet p = tcp_packet(0x18);
    PacketContext pc = ctx(p);
    pc.flowbits = s;
    // none set
    EXPECT_FALSE(any_set.match(pc));
    EXPECT_FALSE(all_set.match(pc));
    EXPECT_TRUE(any_not.match(pc));
    EXPECT_TRUE(all_not.match(pc));
    // a set
    s->set(0);
    EXPECT_TRUE(any_set.match(pc));
    EXPECT_FALSE(all_set.match(pc));
    EXPECT_TRUE(any_not.match(pc));
    EXPECT_FALSE(all_not.match(pc));
    // a and b set
    apply_flowbit_actions(set_both.rule, *s);
    EXPECT_TRUE(any_set.match(pc));
    EXPECT_TRUE(all_set.match(pc));
    EXPECT_FALSE(any_not.match(pc));
    EXPECT_FALSE(all_not.match(pc));
    pool.release(s);
}

TEST(FlowbitsKeywordTest, Errors) {
    Fixture f;
    EXPECT_FALSE(f.parse(parse_flowbits, "set"));
    EXPECT_EQ(f.error, "flowbits: set needs a flowbit name");
    EXPECT_FALSE(f.parse(parse_flowbits, "frob,x"));
    EXPECT_EQ(f.error, "flowbits: unknown command 'frob'");
    EXPECT_FALSE(f.parse(parse_flowbits, "set,a|b"));
    EXPECT_EQ(f.error, "flowbits: '|' is only allowed with isset and isnotset");
    EXPECT_FALSE(f.parse(parse_flowbits, "isset,a|b&c"));
    EXPECT_EQ(f.error, "flowbits: cannot mix '|' and '&' in 'a|b&c'");
    EXPECT_FALSE(f.parse(parse_flowbits, "isset,a b"));
    EXPECT_EQ(f.error, "flowbits: invalid flowbit name 'a b'");
    EXPECT_FALSE(f.parse(parse_flowbits, "isset,a|"));
    EXPECT_EQ(f.error, "flowbits: invalid flowbit name ''");
    EXPECT_FALSE(f.parse(parse_flowbits, "noalert,x"));
    EXPECT_EQ(f.error, "flowbits: noalert takes no name");
    EXPECT_FALSE(f.parse(parse_flowbits, "", false));
    EXPECT_EQ(f.error, "flowbits: a command is required");
    EXPECT_EQ(f.registry.size(), 0u);  // nothing interned by failed parses
    EXPECT_TRUE(f.rule.flowbits.empty());
}

TEST(FlowbitsKeywordTest, Warnings) {
    FlowbitRegistry reg;
    Fixture a, b, c;
    a.st.flowbits = b.st.flowbits = c.st.flowbits = &reg;
    a.rule.file = "x.rules";
    a.rule.line = 3;
    a.rule.sid = 10;
    c.rule.file = "x.rules";
    c.rule.line = 9;
    c.rule.sid = 12;
    ASSERT_TRUE(a.parse(parse_flowbits, "isset,never.set"));
    ASSERT_TRUE(b.parse(parse_flowbits, "set,is.set"));
    ASSERT_TRUE(c.parse(parse_flowbits, "isnotset,is.set|other"));
    std::vector<const Rule*> rules = {&a.rule, &b.rule, &c.rule};
    std::vector<std::string> w = flowbit_warnings(rules, &reg);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0], "x.rules:3 sid 10: flowbit 'never.set' is checked but never set");
    EXPECT_EQ(w[1], "x.rules:9 sid 12: flowbit 'other' is checked but never set");
    EXPECT_EQ(flowbit_warnings(rules)[0],
              "x.rules:3 sid 10: flowbit '#0' is checked but never set");
}

}  // namespace
}  // namespace picket::sensor::detect
