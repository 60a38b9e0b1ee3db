// pcre captures into flow and packet variables (Suricata 7's "PCRE extraction": named groups
// (?P<flow_NAME>..) / (?P<pkt_NAME>..) and the "/re/, flow:NAME, pkt:NAME" list), the variable
// sets they are stored in, flowvar / pktvar matching, and the alert "metadata" JSON.
#include <gtest/gtest.h>

#include <string>

#include "sensor/detect/flowbits.h"
#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

class PcreCapture : public PayloadFixture {
protected:
    PcreCapture() { st.flowbits = &registry; }

    // The capture slot i as stored by the last exec ("<unset>" when its group did not match).
    std::string slot(size_t i) const {
        if (scratch->cap_len[i] < 0) {
            return "<unset>";
        }
        return std::string(reinterpret_cast<const char*>(scratch->cap_bytes[i]),
                           static_cast<size_t>(scratch->cap_len[i]));
    }
    const payload::PcreOption& pcre(size_t i) const {
        return static_cast<const payload::PcreOption&>(*rule.buffers.at(0).options.at(i));
    }
    std::string var(const VarSet& v, VarScope scope, const char* name) {
        uint16_t id = 0;
        EXPECT_TRUE(registry.intern_var(scope, name, &id));
        std::string_view out;
        return v.get(id, &out) ? std::string(out) : "<none>";
    }

    FlowbitRegistry registry;
};

TEST_F(PcreCapture, NamedGroupsGoToFlowAndPacketVariables) {
    ok(kw::parse_pcre, "\"/User-Agent: (?P<flow_ua>[^\\r]*)\\r\\n(?:X: (?P<pkt_x>\\d+))?/\"");
    ASSERT_EQ(rule.var_captures.size(), 2u);
    EXPECT_EQ(rule.var_captures[0].scope, VarScope::kFlow);
    EXPECT_EQ(rule.var_captures[1].scope, VarScope::kPacket);
    EXPECT_EQ(registry.var_name(VarScope::kFlow, rule.var_captures[0].var), "ua");
    EXPECT_EQ(registry.var_name(VarScope::kPacket, rule.var_captures[1].var), "x");
    ASSERT_EQ(pcre(0).captures.size(), 2u);
    EXPECT_EQ(pcre(0).captures[0].group, 1);
    EXPECT_EQ(pcre(0).captures[1].group, 2);

    EXPECT_TRUE(match("GET / HTTP/1.1\r\nUser-Agent: curl/8.1\r\nX: 42\r\n"));
    EXPECT_EQ(slot(0), "curl/8.1");
    EXPECT_EQ(slot(1), "42");
    // The optional group did not take part: its slot says so, not the old value.
    EXPECT_TRUE(match("User-Agent: wget\r\nY: 1"));
    EXPECT_EQ(slot(0), "wget");
    EXPECT_EQ(slot(1), "<unset>");

    VarSet flow, pkt;
    EXPECT_EQ(store_captures(rule, *scratch, &flow, &pkt), 0u);
    EXPECT_EQ(var(flow, VarScope::kFlow, "ua"), "wget");
    EXPECT_EQ(pkt.count, 0u);
    // No flow: the flow capture is dropped and counted, the packet's would still be stored.
    EXPECT_EQ(store_captures(rule, *scratch, nullptr, &pkt), 1u);
}

TEST_F(PcreCapture, OtherNamedGroupsAndPlainPcresCaptureNothing) {
    ok(kw::parse_pcre, "\"/(?P<name>a+)(b)/\"");
    EXPECT_TRUE(rule.var_captures.empty());
    EXPECT_TRUE(pcre(0).captures.empty());
    EXPECT_TRUE(match("xaab"));
}

TEST_F(PcreCapture, CaptureListMapsGroupsInOrder) {
    // Suricata's eve-metadata test rule: pkt:uid, pkt:username; names may hold '/'.
    ok(kw::parse_pcre, "\"/uid=(\\d+)\\(([^)]+)\\)/, pkt:uid, pkt:username\"");
    ok(kw::parse_pcre, "\"/gid=(\\d+),x/i,flow:ua/ubuntu/gid\"");
    ASSERT_EQ(rule.var_captures.size(), 3u);
    EXPECT_EQ(registry.var_name(VarScope::kPacket, rule.var_captures[1].var), "username");
    EXPECT_EQ(registry.var_name(VarScope::kFlow, rule.var_captures[2].var), "ua/ubuntu/gid");
    EXPECT_EQ(pcre(1).captures.at(0).slot, 2);
    EXPECT_TRUE(match("uid=0(root) gid=0,X"));  // the second is caseless: its flags were read
    EXPECT_EQ(slot(0), "0");
    EXPECT_EQ(slot(1), "root");
    EXPECT_EQ(slot(2), "0");
    // A comma inside the regex is not a list.
    reset();
    st.flowbits = &registry;
    ok(kw::parse_pcre, "\"/a,b/\"");
    EXPECT_TRUE(rule.var_captures.empty());
    EXPECT_TRUE(match("xa,b"));
}

TEST_F(PcreCapture, LongValuesAreCut) {
    ok(kw::parse_pcre, "\"/v=(?P<pkt_v>x+)/\"");
    EXPECT_TRUE(match("v=" + std::string(300, 'x')));
    EXPECT_EQ(scratch->cap_len[0], 256);
}

TEST_F(PcreCapture, RefusedForms) {
    EXPECT_FALSE(add(kw::parse_pcre, "!\"/(?P<flow_a>x)/\""));
    EXPECT_EQ(err, "bad pcre '!/(?P<flow_a>x)/': a negated pcre cannot capture into variables");
    EXPECT_FALSE(add(kw::parse_pcre, "\"/(a)/, alert:a\""));
    EXPECT_EQ(err,
              "bad pcre '/(a)/, alert:a': 'alert:a': alert: captures (alert.context) are "
              "Suricata 8's, not supported");
    EXPECT_FALSE(add(kw::parse_pcre, "\"/(a) (b)/, pkt:key, pkt:value\""));
    EXPECT_EQ(err,
              "bad pcre '/(a) (b)/, pkt:key, pkt:value': the pkt:key,pkt:value pair form is not "
              "supported");
    EXPECT_FALSE(add(kw::parse_pcre, "\"/(a)/, flow:a, pkt:b\""));
    EXPECT_EQ(err, "bad pcre '/(a)/, flow:a, pkt:b': 2 capture names for 1 groups");
    EXPECT_FALSE(add(kw::parse_pcre, "\"/(?P<flow_a>a)(b)/, pkt:b\""));
    EXPECT_EQ(err,
              "bad pcre '/(?P<flow_a>a)(b)/, pkt:b': named flow_/pkt_ groups and a capture list "
              "cannot be combined");
    EXPECT_FALSE(add(kw::parse_pcre, "\"/(a)/, flow:\""));
    EXPECT_EQ(err, "bad pcre '/(a)/, flow:': invalid variable name in 'flow:'");
    EXPECT_FALSE(add(kw::parse_pcre,
                     "\"/(1)(2)(3)(4)(5)(6)(7)(8)(9)(10)(11)(12)(13)(14)(15)(?P<pkt_x>16)/\""));
    EXPECT_EQ(err,
              "bad pcre '/(1)(2)(3)(4)(5)(6)(7)(8)(9)(10)(11)(12)(13)(14)(15)(?P<pkt_x>16)/': "
              "capture group 16 is past group 15, the last one read");
    EXPECT_FALSE(add(kw::parse_pcre,
                     "\"/(a)(b)(c)(d)(e)(f)(g)(h)(i)/, pkt:a, pkt:b, pkt:c, pkt:d, pkt:e, pkt:f, "
                     "pkt:g, pkt:h, pkt:i\""));
    EXPECT_TRUE(err.ends_with("': more than 8 captures")) << err;
    // At most 16 per rule.
    reset();
    st.flowbits = &registry;
    for (int i = 0; i < 2; ++i) {
        ok(kw::parse_pcre,
           "\"/(a)(b)(c)(d)(e)(f)(g)(h)/, pkt:a, pkt:b, pkt:c, pkt:d, pkt:e, "
           "pkt:f, pkt:g, pkt:h\"");
    }
    EXPECT_FALSE(add(kw::parse_pcre, "\"/(?P<pkt_z>a)/\""));
    EXPECT_EQ(err, "bad pcre '/(?P<pkt_z>a)/': more than 16 captures in one rule");
}

TEST(VarSetTest, SetReplaceAndLimits) {
    VarSet v;
    v.clear();
    const auto* a = reinterpret_cast<const uint8_t*>("alpha");
    const auto* b = reinterpret_cast<const uint8_t*>("bb");
    ASSERT_TRUE(v.set(7, a, 5));
    ASSERT_TRUE(v.set(3, b, 2));
    ASSERT_TRUE(v.set(7, b, 1));  // replaced in place: 7 stays first
    std::string_view out;
    ASSERT_TRUE(v.get(7, &out));
    EXPECT_EQ(out, "b");
    ASSERT_TRUE(v.get(3, &out));
    EXPECT_EQ(out, "bb");
    EXPECT_FALSE(v.get(4, &out));
    EXPECT_EQ(v.entries[0].id, 7);
    EXPECT_EQ(v.used, 3);
    // 1024 bytes in all: four values of 256 do not fit next to the 3 bytes in use.
    const std::string big(300, 'z');
    const auto* z = reinterpret_cast<const uint8_t*>(big.data());
    EXPECT_TRUE(v.set(10, z, 300));  // cut at 256
    ASSERT_TRUE(v.get(10, &out));
    EXPECT_EQ(out.size(), 256u);
    EXPECT_TRUE(v.set(11, z, 256));
    EXPECT_TRUE(v.set(12, z, 256));
    EXPECT_FALSE(v.set(13, z, 256));  // 3 + 768 + 256 > 1024
    EXPECT_TRUE(v.set(13, z, 253));
    EXPECT_FALSE(v.set(3, z, 3));  // a longer value that does not fit keeps the old one
    ASSERT_TRUE(v.get(3, &out));
    EXPECT_EQ(out, "bb");
    // 16 variables at most.
    VarSet w;
    w.clear();
    for (uint16_t id = 0; id < 16; ++id) {
        ASSERT_TRUE(w.set(id, a, 1));
    }
    EXPECT_FALSE(w.set(16, a, 1));
    EXPECT_TRUE(w.set(15, a, 2));  // an existing one still changes
}

TEST(VarSetTest, FlowVariablesComeFromThePoolAndGoBack) {
    FlowbitPool pool(64, 16, 4, 2);
    FlowbitStore* s1 = pool.acquire();
    FlowbitStore* s2 = pool.acquire();
    FlowbitStore* s3 = pool.acquire();
    ASSERT_NE(pool.vars_of(*s1), nullptr);
    EXPECT_EQ(pool.vars_of(*s1), s1->vars);  // the same block on the next call
    ASSERT_NE(pool.vars_of(*s2), nullptr);
    EXPECT_EQ(pool.vars_of(*s3), nullptr);  // two blocks at most
    EXPECT_EQ(pool.counters().vars_exhausted.get(), 1u);
    const auto* x = reinterpret_cast<const uint8_t*>("x");
    ASSERT_TRUE(s1->vars->set(0, x, 1));
    pool.release(s1);
    VarSet* again = pool.vars_of(*s3);
    ASSERT_NE(again, nullptr);
    EXPECT_EQ(again->count, 0u);  // handed out empty
    pool.release(s2);
    pool.release(s3);
}

TEST(VarsMetadataTest, SuricataShapeAndOrder) {
    FlowbitRegistry reg;
    const uint32_t bit_a = reg.intern("seen");
    reg.intern("never");
    const uint32_t bit_c = reg.intern("ET.x");
    uint8_t n1 = 0, n2 = 0;
    ASSERT_TRUE(reg.intern_int("count", &n1));
    ASSERT_TRUE(reg.intern_int("unset", &n2));
    uint16_t ua = 0, gid = 0, uid = 0;
    ASSERT_TRUE(reg.intern_var(VarScope::kFlow, "gid", &gid));
    ASSERT_TRUE(reg.intern_var(VarScope::kFlow, "ua", &ua));
    ASSERT_TRUE(reg.intern_var(VarScope::kPacket, "uid", &uid));
    const VarNames names = snapshot_var_names(reg);

    FlowbitPool pool(64);
    FlowbitStore* s = pool.acquire();
    s->set(bit_c);
    s->set(bit_a);
    s->ints.v[n1] = 7;
    s->ints.set |= 1u << n1;
    VarSet* fv = pool.vars_of(*s);
    const std::string agent = "curl \"8\"\x01\r\n";
    ASSERT_TRUE(fv->set(ua, reinterpret_cast<const uint8_t*>(agent.data()),
                        static_cast<uint32_t>(agent.size())));
    ASSERT_TRUE(fv->set(gid, reinterpret_cast<const uint8_t*>("0"), 1));
    VarSet pkt;
    pkt.clear();
    ASSERT_TRUE(pkt.set(uid, reinterpret_cast<const uint8_t*>("1000"), 4));

    std::string out;
    append_vars_metadata(s, &pkt, names, &out);
    EXPECT_EQ(out,
              "\"metadata\":{\"flowbits\":[\"seen\",\"ET.x\"],\"flowints\":{\"count\":7},"
              "\"flowvars\":[{\"ua\":\"curl \\\"8\\\".\\r\\n\"},{\"gid\":\"0\"}],"
              "\"pktvars\":[{\"uid\":\"1000\"}]}");
    // After other members: a comma first. Only packet variables: just those.
    out = "\"http\":{}";
    append_vars_metadata(nullptr, &pkt, names, &out);
    EXPECT_EQ(out, "\"http\":{},\"metadata\":{\"pktvars\":[{\"uid\":\"1000\"}]}");
    // Nothing set: no "metadata" at all.
    out = "x";
    pkt.clear();
    FlowbitStore* empty = pool.acquire();
    append_vars_metadata(empty, &pkt, names, &out);
    EXPECT_EQ(out, "x");
    // Names interned after the snapshot are left out.
    uint16_t late = 0;
    ASSERT_TRUE(reg.intern_var(VarScope::kPacket, "late", &late));
    ASSERT_TRUE(pkt.set(late, reinterpret_cast<const uint8_t*>("1"), 1));
    out.clear();
    append_vars_metadata(nullptr, &pkt, names, &out);
    EXPECT_EQ(out, "");
    pool.release(s);
    pool.release(empty);
}

TEST(VarsMetadataTest, TrafficFlowbitsGoToTheTrafficObject) {
    // Suricata 7's traffic tagging: flowbits traffic/id/NAME and traffic/label/NAME are the
    // record's "traffic" ids and labels, not flowbits.
    FlowbitRegistry reg;
    const uint32_t label = reg.intern("traffic/label/cli-http");
    const uint32_t id = reg.intern("traffic/id/curl");
    const uint32_t junk = reg.intern("junkbit");
    const uint32_t label2 = reg.intern("traffic/label/tools");
    const VarNames names = snapshot_var_names(reg);
    FlowbitPool pool(4);
    FlowbitStore* s = pool.acquire();
    s->set(label);
    s->set(id);
    s->set(junk);
    std::string out;
    append_vars_metadata(s, nullptr, names, &out);
    EXPECT_EQ(out,
              "\"metadata\":{\"flowbits\":[\"junkbit\"]},"
              "\"traffic\":{\"id\":[\"curl\"],\"label\":[\"cli-http\"]}");
    // Only traffic bits: no "metadata", the traffic object alone (after other members).
    s->unset(junk);
    s->unset(id);
    s->set(label2);
    out = "\"http\":{}";
    append_vars_metadata(s, nullptr, names, &out);
    EXPECT_EQ(out, "\"http\":{},\"traffic\":{\"label\":[\"cli-http\",\"tools\"]}");
    pool.release(s);
}

}  // namespace
}  // namespace picket::sensor::detect
