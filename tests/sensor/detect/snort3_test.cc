// The Snort 3 front-end (sensor/detect/snort3.h): each Snort 3 form parses into the same
// rule model (buffers, payload options, header options, protocol) as its Suricata
// equivalent; bad Snort 3 input names the Snort keyword; Suricata rules are not affected; the
// Snort 3 community ruleset loads (when the shared data directory is present).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"
#include "sensor/detect/snort3.h"
#include "sensor/flow/flow.h"
#include "tests/sensor/detect/engine/engine_fixture.h"
#include "tests/support/frames.h"

namespace picket::sensor::detect {
namespace {

namespace fs = std::filesystem;

// flowbits need a registry; one for the whole test binary is enough (names only add up).
ParseEnv env_with_flowbits() {
    static FlowbitRegistry flowbits;
    ParseEnv env;
    env.flowbits = &flowbits;
    return env;
}

std::unique_ptr<Rule> parse(const std::string& text) {
    RuleDiagnostic d;
    std::unique_ptr<Rule> r = parse_rule(text, env_with_flowbits(), &d);
    EXPECT_NE(r, nullptr) << text << "\n -> " << d.category << ": " << d.reason;
    return r;
}

RuleDiagnostic parse_fail(const std::string& text) {
    RuleDiagnostic d;
    EXPECT_EQ(parse_rule(text, ParseEnv{}, &d), nullptr) << text;
    return d;
}

// The parts of a rule that decide what it matches.
void expect_same_matching(const std::string& snort, const std::string& suricata) {
    SCOPED_TRACE(snort);
    std::unique_ptr<Rule> a = parse(snort);
    std::unique_ptr<Rule> b = parse(suricata);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(a->action, b->action);
    EXPECT_EQ(a->proto.l4, b->proto.l4);
    EXPECT_EQ(a->proto.app, b->proto.app);
    EXPECT_EQ(a->app_needed, b->app_needed);
    EXPECT_EQ(a->sid, b->sid);
    EXPECT_EQ(a->has_detection_filter, b->has_detection_filter);
    ASSERT_EQ(a->buffers.size(), b->buffers.size());
    for (size_t i = 0; i < a->buffers.size(); ++i) {
        const BufferMatch& x = a->buffers[i];
        const BufferMatch& y = b->buffers[i];
        EXPECT_EQ(x.buffer, y.buffer) << "buffer " << i;
        EXPECT_EQ(x.transforms, y.transforms);
        ASSERT_EQ(x.options.size(), y.options.size()) << "buffer " << i;
        for (size_t j = 0; j < x.options.size(); ++j) {
            EXPECT_STREQ(x.options[j]->keyword(), y.options[j]->keyword());
            EXPECT_TRUE(x.options[j]->equals(*y.options[j])) << "buffer " << i << " option " << j;
        }
    }
    ASSERT_EQ(a->header_options.size(), b->header_options.size());
    for (size_t i = 0; i < a->header_options.size(); ++i) {
        EXPECT_STREQ(a->header_options[i]->keyword(), b->header_options[i]->keyword());
        EXPECT_TRUE(a->header_options[i]->equals(*b->header_options[i])) << "header option " << i;
    }
}

TEST(Snort3, ContentCommaModifiers) {
    expect_same_matching(
        "alert tcp any any -> any 80 (content:\"abc\",nocase,offset 3,depth 10; "
        "content:\"d\",distance 0,within 5,fast_pattern; sid:1;)",
        "alert tcp any any -> any 80 (content:\"abc\"; nocase; offset:3; depth:10; "
        "content:\"d\"; distance:0; within:5; fast_pattern; sid:1;)");
    // Negation, hex, an unescaped ';' and an escaped '"' inside the string.
    expect_same_matching(
        "alert tcp any any -> any any (content:!\"a;b|0D 0A|\\\"\",nocase; sid:2;)",
        "alert tcp any any -> any any (content:!\"a\\;b|0D 0A|\\\"\"; nocase; sid:2;)");
    // fast_pattern_offset / fast_pattern_length: Suricata's fast_pattern:<offset>,<length>.
    expect_same_matching(
        "alert tcp any any -> any any (content:\"abcdef\",fast_pattern,fast_pattern_offset 1,"
        "fast_pattern_length 3; content:\"x\"; sid:3;)",
        "alert tcp any any -> any any (content:\"abcdef\"; fast_pattern:1,3; content:\"x\"; "
        "sid:3;)");
}

std::string translated(const std::string& snort) {
    snort3::Translation t;
    std::string category;
    std::string reason;
    EXPECT_TRUE(snort3::translate(snort, &t, &category, &reason)) << category << ": " << reason;
    return t.text;
}

TEST(Snort3, FastPatternOffsetAndLength) {
    // Both: fast_pattern:<offset>,<length>, after the other modifiers of the content.
    EXPECT_EQ(translated("alert tcp any any -> any any (content:\"abcdef\",fast_pattern_offset 1,"
                         "fast_pattern_length 3,nocase; sid:1;)"),
              "alert tcp any any -> any any (content:\"abcdef\"; nocase; fast_pattern:1,3; "
              "sid:1; )");
    // Offset alone: the rest of the pattern; length alone: from offset 0. The length counts
    // bytes as matched: |0D 0A| is 2, \" is 1.
    EXPECT_EQ(translated("alert tcp any any -> any any (content:\"ab|0D 0A|\\\"c\","
                         "fast_pattern_offset 2; sid:2;)"),
              "alert tcp any any -> any any (content:\"ab|0D 0A|\\\"c\"; fast_pattern:2,4; "
              "sid:2; )");
    EXPECT_EQ(translated("alert tcp any any -> any any (content:\"abcdef\",fast_pattern,"
                         "fast_pattern_length 4; sid:3;)"),
              "alert tcp any any -> any any (content:\"abcdef\"; fast_pattern:0,4; sid:3; )");
    // Plain fast_pattern and the older separate option are unchanged.
    EXPECT_EQ(translated("alert tcp any any -> any any (content:\"abc\",fast_pattern; sid:4;)"),
              "alert tcp any any -> any any (content:\"abc\"; fast_pattern; sid:4; )");
    EXPECT_EQ(translated("alert http (content:\"abcdef\"; fast_pattern:1,2; sid:5;)"),
              "alert tcp any any -> any any (content:\"abcdef\"; fast_pattern:1,2; sid:5; )");

    std::unique_ptr<Rule> r = parse(
        "alert tcp any any -> any any (content:\"abcdef\",fast_pattern_offset 2; "
        "content:\"x\"; sid:6;)");
    ASSERT_NE(r, nullptr);

    RuleDiagnostic d =
        parse_fail("alert tcp any any -> any any (content:\"abc\",fast_pattern_offset 3; sid:7;)");
    EXPECT_EQ(d.category, "bad content");
    EXPECT_EQ(d.reason,
              "snort3: content: fast_pattern_offset 3 + fast_pattern_length 0 do not fit the "
              "3-byte pattern");
    d = parse_fail(
        "alert tcp any any -> any any (content:\"abc\",fast_pattern_offset 1,"
        "fast_pattern_length 3; sid:8;)");
    EXPECT_EQ(d.reason,
              "snort3: content: fast_pattern_offset 1 + fast_pattern_length 3 do not fit the "
              "3-byte pattern");
    d = parse_fail("alert tcp any any -> any any (content:\"abc\",fast_pattern_length x; sid:9;)");
    EXPECT_EQ(d.reason, "snort3: content: fast_pattern_length needs a number 0-65535, got 'x'");
    d = parse_fail("alert tcp any any -> any any (content:\"|4|\",fast_pattern_offset 0; sid:10;)");
    EXPECT_EQ(d.reason, "snort3: content: bad hex in the string");
}

TEST(Snort3, SharedObjectRulesAreRefused) {
    RuleDiagnostic d =
        parse_fail("alert tcp any any -> any 445 (msg:\"so\"; so:eval; sid:11; gid:3;)");
    EXPECT_EQ(d.category, "unsupported keyword");
    EXPECT_EQ(d.reason, "snort3: so: shared-object rules (so:) need Snort's .so plugins");
    EXPECT_EQ(d.sid, 11u);
}

TEST(Snort3, StickyBuffersMapOntoSuricataBuffers) {
    struct Case {
        const char* snort;
        const char* suricata;
    };
    const Case cases[] = {
        {"http_uri", "http.uri"},
        {"http_raw_uri", "http.uri.raw"},
        {"http_header", "http.header"},
        {"http_raw_header", "http.header.raw"},
        {"http_cookie", "http.cookie"},
        {"http_client_body", "http.request_body"},
        {"http_method", "http.method"},
        {"http_stat_code", "http.stat_code"},
        {"http_stat_msg", "http.stat_msg"},
        {"http_version", "http.protocol"},
        {"http_raw_request", "http.request_line"},
        {"http_raw_status", "http.response_line"},
        {"file_data", "file.data"},
        {"http_header:field user-agent", "http.user_agent"},
        {"http_header:field Host", "http.host.raw"},
        {"http_header:field referer", "http.referer"},
        {"http_header:field content-type", "http.content_type"},
    };
    for (const Case& c : cases) {
        expect_same_matching(std::string("alert tcp any any -> any any (msg:\"m\"; ") + c.snort +
                                 "; content:\"/a.php\",fast_pattern,nocase; service:http; "
                                 "sid:10;)",
                             std::string("alert http any any -> any any (msg:\"m\"; ") +
                                 c.suricata +
                                 "; content:\"/a.php\"; fast_pattern; nocase; sid:10;)");
    }
    // pkt_data / raw_data return to the packet after an HTTP buffer.
    expect_same_matching(
        "alert tcp any any -> any any (http_uri; content:\"a\"; raw_data; content:\"b\"; "
        "pkt_data; content:\"c\"; sid:11;)",
        "alert tcp any any -> any any (http.uri; content:\"a\"; pkt_data; content:\"b\"; "
        "pkt_data; content:\"c\"; sid:11;)");
}

TEST(Snort3, ServiceHeaderAndServiceOption) {
    expect_same_matching(
        "alert http (msg:\"x\"; http_uri; content:\"/a.php\",fast_pattern,nocase; "
        "sid:20;)",
        "alert http any any -> any any (msg:\"x\"; http.uri; "
        "content:\"/a.php\"; fast_pattern; nocase; sid:20;)");
    // file: the buffers decide (file_data is HTTP bodies).
    expect_same_matching("alert file (file_data; content:\"MZ\",depth 2; sid:27;)",
                         "alert ip any any -> any any (file.data; content:\"MZ\"; depth:2; "
                         "sid:27;)");
    std::unique_ptr<Rule> r = parse(
        "alert tcp $EXTERNAL_NET any -> $HOME_NET 80 (flow:to_server; "
        "content:\"GET\",depth 3; service:http; sid:21;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->proto.l4, ProtoSpec::kTcp);
    EXPECT_EQ(r->proto.app, AppProto::kHttp);
    // The header's ports stay (Snort 3 evaluates the header of a service rule too).
    EXPECT_FALSE(r->dport.contains(81));
    EXPECT_TRUE(r->dport.contains(80));

    r = parse("alert udp any any -> any 53 (content:\"|00 01|\",offset 2; service:dns; sid:22;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->proto.l4, ProtoSpec::kUdp);
    EXPECT_EQ(r->proto.app, AppProto::kDns);

    r = parse("alert tcp any any -> any 443 (content:\"a\",depth 1; service:ssl; sid:23;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->proto.app, AppProto::kTls);

    // A service list, or a service Picket has no parser for: transport and ports only.
    r = parse("alert tcp any any -> any 110 (content:\"a\",depth 1; service:imap,pop3; sid:24;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->proto.l4, ProtoSpec::kTcp);
    EXPECT_EQ(r->proto.app, AppProto::kUnknown);
    r = parse("alert udp any any -> any 161 (content:\"a\",depth 1; service:snmp; sid:25;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->proto.app, AppProto::kUnknown);

    // block is Snort 3's drop.
    r = parse("block tcp any any -> any any (content:\"a\",nocase; sid:26;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->action, Action::kDrop);
}

TEST(Snort3, PcreBytesFlowAndMeta) {
    expect_same_matching(
        "alert tcp $EXTERNAL_NET any -> $HOME_NET 445 (msg:\"m\"; flow:to_server,established; "
        "flowbits:set,s3.a; content:\"|FF|SMB\",depth 8; byte_test:4,>,100,0,relative,little; "
        "isdataat:4,relative; byte_jump:4,0,relative,little; byte_extract:2,0,len,relative; "
        "pcre:\"/a;b/iR\"; dsize:>10; detection_filter:track by_src,count 5,seconds 60; "
        "rem:\"a comment\"; metadata:policy balanced-ips drop,ruleset community; "
        "reference:url,example.com; classtype:misc-activity; gid:1; sid:30; rev:2;)",
        "alert tcp $EXTERNAL_NET any -> $HOME_NET 445 (msg:\"m\"; flow:to_server,established; "
        "flowbits:set,s3.a; content:\"|FF|SMB\"; depth:8; byte_test:4,>,100,0,relative,little; "
        "isdataat:4,relative; byte_jump:4,0,relative,little; byte_extract:2,0,len,relative; "
        "pcre:\"/a;b/iR\"; dsize:>10; detection_filter:track by_src,count 5,seconds 60; "
        "metadata:policy balanced-ips drop,ruleset community; "
        "reference:url,example.com; classtype:misc-activity; gid:1; sid:30; rev:2;)");
    // pcre buffer flags keep their meaning (U: http uri).
    expect_same_matching(
        "alert tcp any any -> any any (content:\"a\",nocase; pcre:\"/x/U\"; "
        "service:http; sid:31;)",
        "alert http any any -> any any (content:\"a\"; nocase; pcre:\"/x/U\"; "
        "sid:31;)");
    // Header keywords unchanged.
    expect_same_matching(
        "alert icmp any any -> any any (itype:8; icode:0; ttl:<5; id:1; "
        "content:\"a\",depth 1; sid:32;)",
        "alert icmp any any -> any any (itype:8; icode:0; ttl:<5; id:1; "
        "content:\"a\"; depth:1; sid:32;)");
}

TEST(Snort3, BufferlenIsBsize) {
    expect_same_matching(
        "alert tcp any any -> any any (http_uri; bufferlen:5<=>10; content:\"a\"; service:http; "
        "sid:40;)",
        "alert http any any -> any any (http.uri; bsize:4<>11; content:\"a\"; sid:40;)");
    expect_same_matching(
        "alert tcp any any -> any any (http_uri; bufferlen:0<=>10; content:\"a\"; service:http; "
        "sid:41;)",
        "alert http any any -> any any (http.uri; bsize:<=10; content:\"a\"; sid:41;)");
    expect_same_matching(
        "alert tcp any any -> any any (http_uri; bufferlen:<20; content:\"a\"; service:http; "
        "sid:42;)",
        "alert http any any -> any any (http.uri; bsize:<20; content:\"a\"; sid:42;)");
}

TEST(Snort3, BadInputNamesTheSnortKeyword) {
    RuleDiagnostic d = parse_fail(
        "alert tcp any any -> any any (js_data; content:\"eval\",nocase; service:http; sid:50;)");
    EXPECT_EQ(d.category, "unsupported buffer");
    EXPECT_EQ(d.reason, "snort3: unsupported buffer 'js_data'");
    EXPECT_EQ(d.sid, 50u);

    d = parse_fail(
        "alert tcp any any -> any any (http_header:field x-forwarded-for; "
        "content:\"a\"; service:http; sid:51;)");
    EXPECT_EQ(d.category, "unsupported buffer");
    EXPECT_EQ(d.reason, "snort3: unsupported buffer 'http_header:field x-forwarded-for'");

    d = parse_fail("alert tcp any any -> any any (content:\"a\",bogus 3; sid:52;)");
    EXPECT_EQ(d.category, "bad content");
    EXPECT_EQ(d.reason, "snort3: content: unknown modifier 'bogus 3'");

    d = parse_fail("alert tcp any any -> any any (content:\"a\",depth; sid:53;)");
    EXPECT_EQ(d.category, "bad content");
    EXPECT_EQ(d.reason, "snort3: content: depth needs a value");

    d = parse_fail(
        "alert tcp any any -> any any (http_uri; bufferlen:>5,relative; content:\"a\"; sid:54;)");
    EXPECT_EQ(d.category, "bad bufferlen");
    EXPECT_EQ(d.reason, "snort3: bufferlen: '>5,relative': relative is not supported");

    d = parse_fail(
        "alert tcp any any -> any 25 (file_data; content:\"MZ\",depth 2; "
        "service:smtp; sid:55;)");
    EXPECT_EQ(d.category, "unsupported service");
    EXPECT_EQ(d.reason,
              "snort3: service:smtp: file_data is only filled from HTTP bodies in Picket");

    // The Suricata option split stops at the ';' inside the string; the sid is still found.
    d = parse_fail("alert tcp any any -> any any (content:\"a;b\",bogus; sid:58;)");
    EXPECT_EQ(d.reason, "snort3: content: unknown modifier 'bogus'");
    EXPECT_EQ(d.sid, 58u);

    d = parse_fail("alert imap (content:\"LOGIN\",nocase; sid:57;)");
    EXPECT_EQ(d.category, "unsupported service");
    EXPECT_EQ(d.reason,
              "snort3: unsupported service 'imap' in the header (Picket cannot identify it and "
              "the header has no ports)");

    // A Suricata keyword failure keeps its Suricata reason, tagged as a Snort 3 rule.
    d = parse_fail(
        "alert tcp any any -> any any (ssl_state:client_hello; content:\"a\",depth 1; "
        "service:ssl; sid:56;)");
    EXPECT_EQ(d.category, "unsupported keyword");
    EXPECT_EQ(d.reason, "snort3: unsupported keyword 'ssl_state'");
}

TEST(Snort3, SuricataRulesDoNotTakeTheSnort3Path) {
    // http_uri after a content is Suricata's content modifier: "a" goes to http.uri.
    std::unique_ptr<Rule> r =
        parse("alert http any any -> any any (content:\"a\"; http_uri; content:\"b\"; sid:60;)");
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->buffers.size(), 2u);
    EXPECT_EQ(r->buffers[0].buffer, BufferId::kPacket);   // "b"
    EXPECT_EQ(r->buffers[1].buffer, BufferId::kHttpUri);  // "a"
    EXPECT_EQ(r->buffers[0].options.size(), 1u);
    EXPECT_EQ(r->buffers[1].options.size(), 1u);

    EXPECT_FALSE(snort3::looks_like_snort3(
        "alert http any any -> any any (content:\"a\"; http_uri; sid:1;)"));
    EXPECT_FALSE(snort3::looks_like_snort3(
        "alert tcp any any -> any any (file_data; content:\"a\"; base64_data; sid:1;)"));
    // A modifier with nothing to modify stays a Suricata error (rule_parser_test checks it).
    EXPECT_FALSE(snort3::looks_like_snort3("alert tcp any any -> any any (http_uri; sid:1;)"));
    EXPECT_FALSE(snort3::looks_like_snort3(
        "alert tcp any any -> any any (http_uri:1; content:\"a\"; sid:1;)"));
    EXPECT_TRUE(snort3::looks_like_snort3("alert http (sid:1;)"));
    EXPECT_TRUE(
        snort3::looks_like_snort3("alert tcp any any -> any any (content:\"a\",nocase; sid:1;)"));
    EXPECT_TRUE(snort3::looks_like_snort3(
        "alert tcp any any -> any any (http_uri; content:\"a\"; sid:1;)"));
    EXPECT_TRUE(snort3::looks_like_snort3("alert tcp any any -> any any (service:http; sid:1;)"));

    // The rule keeps its text as written.
    const std::string text = "alert tcp any any -> any any (content:\"a;b\",nocase; sid:61;)";
    r = parse(text);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->text, text);
}

TEST(Snort3, DiagnosticsKeepTheFileLineSidForm) {
    RuleLoader loader(ParseEnv{});
    loader.add_text(
        "alert tcp any any -> any any (content:\"a\",nocase; sid:70;)\n"
        "alert tcp any any -> any any (vba_data; content:\"a\"; sid:71;)\n",
        "s3.rules");
    const LoadedRules out = loader.finish();
    EXPECT_EQ(out.summary.loaded, 1u);
    ASSERT_EQ(out.summary.diagnostics.size(), 1u);
    EXPECT_EQ(out.summary.diagnostics[0].to_string(),
              "s3.rules:2 sid 71: snort3: unsupported buffer 'vba_data'");
}

// The compiled engine: Snort 3 rules fire on the same transactions and packets as the
// Suricata rules they translate to (the cases of AppStreamTest in engine/app_stream_test.cc).
class Snort3EngineTest : public testing::EngineTest {
protected:
    Snort3EngineTest() : EngineTest("snort3") {}

    void decode(const std::string& payload) {
        picket::testing::frames::Bytes pl(payload.begin(), payload.end());
        namespace tb = picket::testing::frames;
        frame_ = tb::eth(0x0800, tb::ipv4({}, tb::tcp(40000, 80, 0x18, {}, pl)));
        decode::decode_packet(dctx_, 1, frame_.data(), static_cast<uint32_t>(frame_.size()),
                              static_cast<uint32_t>(frame_.size()), 1000000000, p_);
        f_ = flows_->lookup(p_, &dir_);
    }

    std::vector<uint32_t> run_tx(const std::string& uri, const std::string& raw) {
        decode("x");
        uri_ = uri;
        raw_ = raw;
        AppView v;
        v.proto = AppProto::kHttp;
        v.buf[static_cast<size_t>(BufferId::kHttpUri)] = uri_;
        v.buf[static_cast<size_t>(BufferId::kHttpUriRaw)] = raw_;
        v.buf[static_cast<size_t>(BufferId::kHttpMethod)] = "GET";
        AlertRecord out[16];
        const uint32_t n = worker_->inspect_tx(p_, f_, dir_, v, nullptr, out, 16);
        std::vector<uint32_t> sids;
        for (uint32_t i = 0; i < n; ++i) {
            sids.push_back(out[i].rule->sid);
        }
        return sids;
    }

    std::string uri_, raw_;
    picket::testing::frames::Bytes frame_;
    decode::Packet p_;
    flow::Flow* f_ = nullptr;
    flow::Direction dir_ = flow::Direction::kToServer;
};

TEST_F(Snort3EngineTest, HttpBuffersMatchOnTheTransaction) {
    load(
        "alert tcp any any -> any any (http_uri; content:\"/ADMIN/\",nocase; service:http; "
        "sid:1;)\n"
        "alert http (http_raw_uri; content:\"%2e\"; sid:2;)\n"
        "alert tcp any any -> any any (http_method; content:\"POST\"; service:http; sid:3;)\n"
        "alert tcp any any -> any any (http_uri; bufferlen:5<=>8; content:\"/a\",depth 2; "
        "service:http; sid:4;)\n"
        "alert tcp any any -> any any (http_uri; bufferlen:<8; content:\"/a\"; service:http; "
        "sid:5;)\n");
    ASSERT_EQ(summary_.skipped, 0u) << summary_.to_string();
    EXPECT_EQ(run_tx("/admin/x", "/%2e/admin/x"), (std::vector<uint32_t>{1, 2, 4}));
}

// service: with header ports is Snort 3's "OR ports": the rule runs on its ports whatever the
// flow's protocol; with any ports it waits for the service.
TEST_F(Snort3EngineTest, ServiceOptionIsTheServiceOrThePorts) {
    load(
        "alert tcp any any -> any 80 (content:\"hello\",depth 5; service:http; sid:1;)\n"
        "alert tcp any any -> any any (content:\"hello\",depth 5; service:http; sid:2;)\n");
    ASSERT_EQ(summary_.skipped, 0u) << summary_.to_string();
    decode("hello");
    AlertRecord out[4];
    InspectExtras x;
    auto sids = [&] {
        const uint32_t n = worker_->inspect(p_, f_, dir_, out, 4, &x);
        std::vector<uint32_t> v;
        for (uint32_t i = 0; i < n; ++i) {
            v.push_back(out[i].rule->sid);
        }
        return v;
    };
    EXPECT_EQ(sids(), (std::vector<uint32_t>{1}));
    x.app = AppProto::kHttp;
    EXPECT_EQ(sids(), (std::vector<uint32_t>{1, 2}));
    x.app = AppProto::kTls;
    EXPECT_EQ(sids(), (std::vector<uint32_t>{1}));
}

// The floor is the count reached when the front-end was written (3920 of 4004, 97.9%).
TEST(Snort3, CommunityRulesetLoads) {
    const fs::path file =
        fs::path(PICKET_SHARED_DATA_DIR) / "rules" / "snort-community" / "snort3-community.rules";
    if (!fs::exists(file)) {
        GTEST_SKIP() << file << " not present";
    }
    FlowbitRegistry flowbits;
    ParseEnv env;
    env.flowbits = &flowbits;
    const LoadedRules out = load_rule_files({file.string()}, env);
    EXPECT_EQ(out.summary.rules_seen, 4004u);
    EXPECT_GE(out.summary.loaded, 3920u);
    EXPECT_EQ(out.summary.loaded + out.summary.skipped, out.summary.rules_seen);
}

}  // namespace
}  // namespace picket::sensor::detect
