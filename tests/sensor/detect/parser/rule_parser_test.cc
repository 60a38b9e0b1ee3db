#include <gtest/gtest.h>

#include <string>

#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

std::unique_ptr<Rule> parse(const std::string& text, const ParseEnv& env = {}) {
    RuleDiagnostic d;
    std::unique_ptr<Rule> r = parse_rule(text, env, &d);
    EXPECT_NE(r, nullptr) << text << "\n -> " << d.category << ": " << d.reason;
    return r;
}

RuleDiagnostic parse_fail(const std::string& text, const ParseEnv& env = {}) {
    RuleDiagnostic d;
    EXPECT_EQ(parse_rule(text, env, &d), nullptr) << text;
    return d;
}

const BufferMatch* find_buffer(const Rule& r, BufferId id) {
    for (const BufferMatch& m : r.buffers) {
        if (m.buffer == id) {
            return &m;
        }
    }
    return nullptr;
}

TEST(RuleHeader, ActionsProtocolsAndDirection) {
    auto r = parse("alert tcp any any -> any any (sid:1;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->action, Action::kAlert);
    EXPECT_EQ(r->proto.l4, ProtoSpec::kTcp);
    EXPECT_EQ(r->proto.app, AppProto::kUnknown);
    EXPECT_FALSE(r->bidirectional);
    EXPECT_EQ(r->sid, 1u);
    EXPECT_EQ(r->gid, 1u);
    EXPECT_TRUE(r->buffers.empty());

    EXPECT_EQ(parse("drop udp any any <> any any (sid:1;)")->action, Action::kDrop);
    EXPECT_TRUE(parse("drop udp any any <> any any (sid:1;)")->bidirectional);
    EXPECT_EQ(parse("pass ip any any -> any any (sid:1;)")->action, Action::kPass);
    EXPECT_EQ(parse("reject tcp any any -> any any (sid:1;)")->action, Action::kReject);
    EXPECT_EQ(parse("rejectsrc tcp any any -> any any (sid:1;)")->action, Action::kReject);
    EXPECT_EQ(parse("rejectdst tcp any any -> any any (sid:1;)")->action, Action::kReject);
    EXPECT_EQ(parse("rejectboth tcp any any -> any any (sid:1;)")->action, Action::kReject);
}

TEST(RuleHeader, Protocols) {
    struct Case {
        const char* proto;
        ProtoSpec::L4 l4;
        AppProto app;
        int ipv;
        bool pkt, stream;
    };
    const Case cases[] = {
        {"ip", ProtoSpec::kIp, AppProto::kUnknown, 0, false, false},
        {"ipv4", ProtoSpec::kIp, AppProto::kUnknown, 4, false, false},
        {"ipv6", ProtoSpec::kIp, AppProto::kUnknown, 6, false, false},
        {"tcp", ProtoSpec::kTcp, AppProto::kUnknown, 0, false, false},
        {"tcp-pkt", ProtoSpec::kTcp, AppProto::kUnknown, 0, true, false},
        {"tcp-stream", ProtoSpec::kTcp, AppProto::kUnknown, 0, false, true},
        {"udp", ProtoSpec::kUdp, AppProto::kUnknown, 0, false, false},
        {"icmp", ProtoSpec::kIcmp, AppProto::kUnknown, 0, false, false},
        {"icmpv4", ProtoSpec::kIcmp, AppProto::kUnknown, 4, false, false},
        {"icmpv6", ProtoSpec::kIcmp, AppProto::kUnknown, 6, false, false},
        {"http", ProtoSpec::kTcp, AppProto::kHttp, 0, false, false},
        {"http1", ProtoSpec::kTcp, AppProto::kHttp, 0, false, false},
        {"tls", ProtoSpec::kTcp, AppProto::kTls, 0, false, false},
        {"smtp", ProtoSpec::kTcp, AppProto::kSmtp, 0, false, false},
        {"ftp", ProtoSpec::kTcp, AppProto::kFtp, 0, false, false},
        {"ssh", ProtoSpec::kTcp, AppProto::kSsh, 0, false, false},
        {"smb", ProtoSpec::kTcp, AppProto::kSmb, 0, false, false},
        {"dns", ProtoSpec::kIp, AppProto::kDns, 0, false, false},
        {"dcerpc", ProtoSpec::kIp, AppProto::kDcerpc, 0, false, false},
        {"ftp-data", ProtoSpec::kTcp, AppProto::kFtpData, 0, false, false},
    };
    for (const Case& c : cases) {
        auto r = parse(std::string("alert ") + c.proto + " any any -> any any (sid:1;)");
        ASSERT_NE(r, nullptr) << c.proto;
        EXPECT_EQ(r->proto.l4, c.l4) << c.proto;
        EXPECT_EQ(r->proto.app, c.app) << c.proto;
        EXPECT_EQ(r->proto.ip_version, c.ipv) << c.proto;
        EXPECT_EQ(r->proto.tcp_pkt_only, c.pkt) << c.proto;
        EXPECT_EQ(r->proto.tcp_stream_only, c.stream) << c.proto;
    }
}

TEST(RuleHeader, AddressesPortsAndVariables) {
    auto r = parse(
        "alert http $HOME_NET [1024:,!8080] -> [$EXTERNAL_NET, !203.0.113.0/24] $HTTP_PORTS "
        "(sid:7;)");
    ASSERT_NE(r, nullptr);
    EXPECT_FALSE(r->src.any);
    EXPECT_EQ(r->src.include.size(), 3u);
    EXPECT_FALSE(r->sport.contains(1023));
    EXPECT_TRUE(r->sport.contains(1024));
    EXPECT_FALSE(r->sport.contains(8080));
    EXPECT_TRUE(r->dst.any);
    EXPECT_EQ(r->dst.exclude.size(), 4u);
    ASSERT_EQ(r->dport.include.size(), 1u);
    EXPECT_EQ(r->dport.include[0].lo, 80);

    VarTable vars = VarTable::with_overrides({{"HOME_NET", "2001:db8::/32"}}, {});
    ParseEnv env;
    env.vars = &vars;
    auto v6 = parse("alert tcp $HOME_NET any -> any any (sid:8;)", env);
    ASSERT_NE(v6, nullptr);
    ASSERT_EQ(v6->src.include.size(), 1u);
}

TEST(RuleHeader, Errors) {
    RuleDiagnostic d = parse_fail("alert tcp any any any any (sid:1;)");
    EXPECT_EQ(d.category, "bad header");
    EXPECT_EQ(d.reason, "header has 6 fields, expected 'action proto src sport -> dst dport'");
    EXPECT_EQ(d.sid, 1u);

    d = parse_fail("alarm tcp any any -> any any (sid:2;)");
    EXPECT_EQ(d.reason, "unknown action 'alarm'");
    d = parse_fail("alert tcp any any <- any any (sid:3;)");
    EXPECT_EQ(d.reason, "bad direction '<-' (expected -> or <>)");
    d = parse_fail("alert foo any any -> any any (sid:4;)");
    EXPECT_EQ(d.category, "bad header");
    EXPECT_EQ(d.reason, "unknown protocol 'foo'");
    d = parse_fail("alert http2 any any -> any any (sid:5;)");
    EXPECT_EQ(d.category, "unsupported protocol");
    EXPECT_EQ(d.reason, "unsupported protocol 'http2'");
    d = parse_fail("alert tcp 10.0.0.300 any -> any any (sid:6;)");
    EXPECT_EQ(d.category, "bad address");
    EXPECT_EQ(d.reason, "bad address '10.0.0.300'");
    d = parse_fail("alert tcp any any -> any 99999 (sid:7;)");
    EXPECT_EQ(d.category, "bad port");
    EXPECT_EQ(d.reason, "bad port '99999'");
    d = parse_fail("alert tcp $NOT_A_VAR any -> any any (sid:8;)");
    EXPECT_EQ(d.reason, "unknown address variable '$NOT_A_VAR'");
}

TEST(RuleOptions, QuotesAndEscapes) {
    // Inside quotes ';' needs no escape; \; \" \\ are unescaped by msg.
    auto r = parse(R"(alert tcp any any -> any any (msg:"a \"quoted\" \; semi; and \\ back"; )"
                   R"(reference: url , example.com/a\;b ; sid:10; rev:3;  ) )");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->msg, R"(a "quoted" ; semi; and \ back)");
    ASSERT_EQ(r->references.size(), 1u);
    EXPECT_EQ(r->references[0].first, "url");
    EXPECT_EQ(r->references[0].second, "example.com/a;b");
    EXPECT_EQ(r->rev, 3u);
}

TEST(RuleOptions, UnquotedSemicolonEndsOption) {
    RuleDiagnostic d = parse_fail("alert tcp any any -> any any (reference:url,a;b; sid:11;)");
    EXPECT_EQ(d.category, "unknown keyword");
    EXPECT_EQ(d.reason, "unknown keyword 'b'");
    EXPECT_EQ(d.sid, 11u);
}

TEST(RuleOptions, LastOptionWithoutSemicolonAndCase) {
    auto r = parse("alert tcp any any -> any any (MSG:\"x\"; SID:12)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->msg, "x");
    EXPECT_EQ(r->sid, 12u);
}

TEST(RuleOptions, SyntaxErrors) {
    RuleDiagnostic d = parse_fail("alert tcp any any -> any any");
    EXPECT_EQ(d.category, "syntax");
    EXPECT_EQ(d.reason, "missing '(' before the options");
    d = parse_fail("alert tcp any any -> any any (msg:\"x\"; sid:1;");
    EXPECT_EQ(d.reason, "unterminated option list (missing ')')");
    // A quote that never closes falls back to the first ';' and the keyword complains.
    d = parse_fail("alert tcp any any -> any any (msg:\"x; sid:1;)");
    EXPECT_EQ(d.category, "bad msg");
    EXPECT_EQ(d.reason, "msg: unterminated quoted string");
    EXPECT_EQ(d.sid, 1u);
    d = parse_fail("alert tcp any any -> any any (msg:\"x\";; sid:1;)");
    EXPECT_EQ(d.reason, "empty option (';;')");
    d = parse_fail("alert tcp any any -> any any (sid:1;) trailing");
    EXPECT_EQ(d.reason, "unexpected text after ')'");
    d = parse_fail("alert tcp any any -> any any (m$g:\"x\"; sid:1;)");
    EXPECT_EQ(d.reason, "bad option 'm$g:\"x\"'");
}

TEST(RuleOptions, MetaKeywords) {
    auto r = parse(
        "alert tcp any any -> any any (msg:\"ET TEST\"; gid:3; sid:2000001; rev:7; "
        "priority:2; reference:cve,2020-1234; reference:url,example.com/x; "
        "metadata: created_at 2020_01_01, former_category MALWARE,updated_at 2021_02_03; "
        "target:dest_ip; classtype:trojan-activity;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->msg, "ET TEST");
    EXPECT_EQ(r->gid, 3u);
    EXPECT_EQ(r->sid, 2000001u);
    EXPECT_EQ(r->rev, 7u);
    EXPECT_EQ(r->priority, 2);
    EXPECT_TRUE(r->priority_set);
    ASSERT_EQ(r->references.size(), 2u);
    EXPECT_EQ(r->references[0], (std::pair<std::string, std::string>("cve", "2020-1234")));
    EXPECT_EQ(r->references[1], (std::pair<std::string, std::string>("url", "example.com/x")));
    ASSERT_EQ(r->metadata.size(), 3u);
    EXPECT_EQ(r->metadata[0], "created_at 2020_01_01");
    EXPECT_EQ(r->metadata[1], "former_category MALWARE");
    EXPECT_EQ(r->metadata[2], "updated_at 2021_02_03");
    EXPECT_EQ(r->target, Rule::Target::kDst);
    EXPECT_EQ(r->classtype, "trojan-activity");
    EXPECT_EQ(r->category, "");  // no classification table given
    EXPECT_EQ(r->file, "");
    EXPECT_EQ(r->text,
              "alert tcp any any -> any any (msg:\"ET TEST\"; gid:3; sid:2000001; rev:7; "
              "priority:2; reference:cve,2020-1234; reference:url,example.com/x; "
              "metadata: created_at 2020_01_01, former_category MALWARE,updated_at 2021_02_03; "
              "target:dest_ip; classtype:trojan-activity;)");
    EXPECT_EQ(parse("alert tcp any any -> any any (target:src_ip; sid:1;)")->target,
              Rule::Target::kSrc);
}

TEST(RuleOptions, MetaKeywordErrors) {
    RuleDiagnostic d = parse_fail("alert tcp any any -> any any (sid:abc;)");
    EXPECT_EQ(d.category, "bad sid");
    EXPECT_EQ(d.reason, "sid: must be a positive number, got 'abc'");
    EXPECT_EQ(d.sid, 0u);
    d = parse_fail("alert tcp any any -> any any (sid:0;)");
    EXPECT_EQ(d.reason, "sid: must be a positive number, got '0'");
    d = parse_fail("alert tcp any any -> any any (sid:1; sid:2;)");
    EXPECT_EQ(d.reason, "sid: given twice");
    d = parse_fail("alert tcp any any -> any any (rev:x; sid:5;)");
    EXPECT_EQ(d.category, "bad rev");
    EXPECT_EQ(d.reason, "rev: must be a number, got 'x'");
    EXPECT_EQ(d.sid, 5u);
    d = parse_fail("alert tcp any any -> any any (reference:nocomma; sid:5;)");
    EXPECT_EQ(d.reason, "reference: expected 'system,id', got 'nocomma'");
    d = parse_fail("alert tcp any any -> any any (target:both; sid:5;)");
    EXPECT_EQ(d.reason, "target: must be src_ip or dest_ip, got 'both'");
    d = parse_fail("alert tcp any any -> any any (msg:\"x\";)");
    EXPECT_EQ(d.category, "missing sid");
    EXPECT_EQ(d.reason, "rule has no sid");
}

TEST(RuleOptions, ClassificationLookup) {
    const ClassificationTable classes = parse_classification_config(
        "# comment\n\nconfig classification: trojan-activity,A Network Trojan was detected, 1\n"
        "config classification: misc-activity,Misc activity,3\n",
        "classification.config", nullptr);
    ParseEnv env;
    env.classifications = &classes;
    auto r = parse("alert tcp any any -> any any (classtype:trojan-activity; sid:1;)", env);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->category, "A Network Trojan was detected");
    EXPECT_EQ(r->priority, 1);
    EXPECT_FALSE(r->priority_set);

    auto p =
        parse("alert tcp any any -> any any (priority:4; classtype:trojan-activity; sid:1;)", env);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->priority, 4);

    auto none = parse("alert tcp any any -> any any (sid:1;)", env);
    EXPECT_EQ(none->priority, 3);
    EXPECT_EQ(none->category, "");

    RuleDiagnostic d = parse_fail("alert tcp any any -> any any (classtype:nope; sid:9;)", env);
    EXPECT_EQ(d.category, "unknown classtype");
    EXPECT_EQ(d.reason, "unknown classtype 'nope'");
    EXPECT_EQ(d.sid, 9u);
}

TEST(RuleOptions, UnknownAndUnsupportedKeywords) {
    RuleDiagnostic d = parse_fail("alert tcp any any -> any any (frobnicate:3; sid:20;)");
    EXPECT_EQ(d.category, "unknown keyword");
    EXPECT_EQ(d.reason, "unknown keyword 'frobnicate'");
    EXPECT_EQ(d.sid, 20u);
    d = parse_fail("alert tcp any any -> any any (lua:script.lua; sid:21;)");
    EXPECT_EQ(d.category, "unsupported keyword");
    EXPECT_EQ(d.reason, "unsupported keyword 'lua'");
    d = parse_fail("alert http any any -> any any (iprep:src,Bad,>,30; sid:22;)");
    EXPECT_EQ(d.reason, "unsupported keyword 'iprep'");
    d = parse_fail("alert tcp any any -> any any (ipopts:rr; sid:23;)");
    EXPECT_EQ(d.reason, "unsupported keyword 'ipopts'");
}

TEST(RuleOptions, TransformsAndAppKeywords) {
    auto r = parse(
        "alert dns any any -> any any (dns.query; dotprefix; to_lowercase; content:\".evil.com\"; "
        "endswith; sid:30;)");
    ASSERT_NE(r, nullptr);
    const BufferMatch* q = find_buffer(*r, BufferId::kDnsQuery);
    ASSERT_NE(q, nullptr);
    // dotprefix (1) then to_lowercase (2), the first in the low bits.
    EXPECT_EQ(q->transforms, 0x21u);
    r = parse("alert http any any -> any any (urilen:>10,raw; sid:31;)");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->app_needed, AppProto::kHttp);
    EXPECT_NE(parse("alert tls any any -> any any (tls.version:1.2; sid:32;)"), nullptr);
    EXPECT_NE(parse("alert dns any any -> any any (dns.opcode:!0; sid:33;)"), nullptr);
    RuleDiagnostic d =
        parse_fail("alert dns any any -> any any (dns.query; content:\"a\"; dotprefix; sid:34;)");
    EXPECT_EQ(d.reason, "dotprefix: transforms must directly follow the sticky buffer");
    d = parse_fail("alert tcp any any -> any any (dotprefix; content:\"a\"; sid:35;)");
    EXPECT_EQ(d.reason, "dotprefix: must follow a sticky buffer (e.g. dns.query; dotprefix;)");
    d = parse_fail("alert http any any -> any any (urilen:abc; sid:36;)");
    EXPECT_EQ(d.reason,
              "urilen: invalid value 'abc' (expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M "
              "with N from 0 to 65535)");
    d = parse_fail("alert dns any any -> any any (tls.version:1.2; sid:37;)");
    EXPECT_EQ(d.reason, "tls.version: not usable on a rule for another app-layer protocol");
}

TEST(Buffers, TableAndLookups) {
    for (size_t i = 0; i < kNumBuffers; ++i) {
        const BufferDef& d = buffer_def(static_cast<BufferId>(i));
        EXPECT_EQ(static_cast<size_t>(d.id), i);
        BufferId id;
        ASSERT_TRUE(find_sticky_buffer(d.name, &id)) << d.name;
        EXPECT_EQ(id, d.id) << d.name;
    }
    BufferId id;
    struct Sticky {
        const char* name;
        BufferId id;
    };
    const Sticky sticky[] = {
        {"pkt_data", BufferId::kPacket},
        {"file_data", BufferId::kFileData},
        {"file.data", BufferId::kFileData},
        {"dns_query", BufferId::kDnsQuery},
        {"tls_sni", BufferId::kTlsSni},
        {"tls_cert_subject", BufferId::kTlsCertSubject},
        {"tls_cert_issuer", BufferId::kTlsCertIssuer},
        {"ja3_hash", BufferId::kJa3Hash},
        {"ja3_string", BufferId::kJa3String},
        {"http_header_names", BufferId::kHttpHeaderNames},
        {"http_start", BufferId::kHttpStart},
        {"http.uri.raw", BufferId::kHttpUriRaw},
        {"http.request_body", BufferId::kHttpRequestBody},
    };
    for (const Sticky& s : sticky) {
        ASSERT_TRUE(find_sticky_buffer(s.name, &id)) << s.name;
        EXPECT_EQ(id, s.id) << s.name;
    }
    // Underscore HTTP names are content modifiers in Suricata, not sticky buffers.
    EXPECT_FALSE(find_sticky_buffer("http_uri", &id));
    EXPECT_FALSE(find_sticky_buffer("content", &id));
    const Sticky modifiers[] = {
        {"http_uri", BufferId::kHttpUri},
        {"http_raw_uri", BufferId::kHttpUriRaw},
        {"http_method", BufferId::kHttpMethod},
        {"http_header", BufferId::kHttpHeader},
        {"http_raw_header", BufferId::kHttpHeaderRaw},
        {"http_cookie", BufferId::kHttpCookie},
        {"http_user_agent", BufferId::kHttpUserAgent},
        {"http_host", BufferId::kHttpHost},
        {"http_raw_host", BufferId::kHttpHostRaw},
        {"http_client_body", BufferId::kHttpRequestBody},
        {"http_server_body", BufferId::kHttpResponseBody},
        {"http_stat_code", BufferId::kHttpStatCode},
        {"http_stat_msg", BufferId::kHttpStatMsg},
    };
    for (const Sticky& m : modifiers) {
        ASSERT_TRUE(find_buffer_modifier(m.name, &id)) << m.name;
        EXPECT_EQ(id, m.id) << m.name;
    }
    EXPECT_FALSE(find_buffer_modifier("http.uri", &id));
    EXPECT_FALSE(find_buffer_modifier("dns_query", &id));
}

TEST(Buffers, StickyBuffersCollectFollowingPayloadOptions) {
    auto r = parse(
        "alert http any any -> any any (http.uri; content:\"a\"; content:\"b\"; pkt_data; "
        "content:\"c\"; file_data; content:\"d\"; http.uri; content:\"e\"; sid:1;)");
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->buffers.size(), 3u);
    const BufferMatch* uri = find_buffer(*r, BufferId::kHttpUri);
    const BufferMatch* pkt = find_buffer(*r, BufferId::kPacket);
    const BufferMatch* body = find_buffer(*r, BufferId::kFileData);
    ASSERT_NE(uri, nullptr);
    ASSERT_NE(pkt, nullptr);
    ASSERT_NE(body, nullptr);
    EXPECT_EQ(uri->options.size(), 3u);
    EXPECT_EQ(pkt->options.size(), 1u);
    EXPECT_EQ(body->options.size(), 1u);
    EXPECT_STREQ(uri->options[0]->keyword(), "content");
}

TEST(Buffers, EmptyStickyBufferLeavesNoList) {
    auto r = parse("alert http any any -> any any (http.uri; sid:1;)");
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->buffers.empty());
    RuleDiagnostic d = parse_fail("alert http any any -> any any (http.uri:x; sid:1;)");
    EXPECT_EQ(d.category, "bad http.uri");
    EXPECT_EQ(d.reason, "http.uri: takes no value");
}

TEST(Buffers, ContentModifiersMoveThePreviousContent) {
    auto r = parse(
        "alert tcp any any -> any any (content:\"GET\"; http_method; content:\"/x\"; nocase; "
        "http_uri; content:\"y\"; distance:0; http_uri; content:\"raw\"; sid:1;)");
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(r->buffers.size(), 3u);
    const BufferMatch* method = find_buffer(*r, BufferId::kHttpMethod);
    const BufferMatch* uri = find_buffer(*r, BufferId::kHttpUri);
    const BufferMatch* pkt = find_buffer(*r, BufferId::kPacket);
    ASSERT_NE(method, nullptr);
    ASSERT_NE(uri, nullptr);
    ASSERT_NE(pkt, nullptr);
    EXPECT_EQ(method->options.size(), 1u);
    EXPECT_EQ(uri->options.size(), 2u);  // "/x" then the relative "y"
    EXPECT_EQ(pkt->options.size(), 1u);  // plain content after a modifier: packet payload

    auto u = parse("alert tcp any any -> any any (uricontent:\"/a\"; sid:2;)");
    ASSERT_NE(u, nullptr);
    ASSERT_EQ(u->buffers.size(), 1u);
    EXPECT_EQ(u->buffers[0].buffer, BufferId::kHttpUri);
}

TEST(Buffers, ContentModifierErrors) {
    RuleDiagnostic d = parse_fail("alert tcp any any -> any any (http_uri; sid:1;)");
    EXPECT_EQ(d.category, "bad http_uri");
    EXPECT_EQ(d.reason, "http_uri: no preceding content");
    d = parse_fail("alert tcp any any -> any any (http.uri; content:\"a\"; http_header; sid:2;)");
    EXPECT_EQ(d.category, "bad http_header");
    EXPECT_EQ(d.reason, "http_header: content is already in http.uri");
    d = parse_fail("alert tcp any any -> any any (content:\"a\"; http_uri:1; sid:3;)");
    EXPECT_EQ(d.reason, "http_uri: takes no value");
}

TEST(ConfigFiles, ClassificationErrorsNameFileAndLine) {
    std::vector<std::string> errors;
    const ClassificationTable t = parse_classification_config(
        "config classification: a,Alpha, 2\n"
        "config classification: b,Beta, with comma,1\n"
        "  # indented comment\n"
        "config classification: broken\n"
        "something else\n"
        "config classification: c,Gamma,x\n",
        "cls.config", &errors);
    EXPECT_EQ(t.entries.size(), 2u);
    ASSERT_NE(t.find("b"), nullptr);
    EXPECT_EQ(t.find("b")->description, "Beta, with comma");
    EXPECT_EQ(t.find("b")->priority, 1);
    EXPECT_EQ(t.find("a")->priority, 2);
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors[0], "cls.config:4: expected 'name,description,priority', got 'broken'");
    EXPECT_EQ(errors[1],
              "cls.config:5: expected 'config classification: name,description,priority'");
    EXPECT_EQ(errors[2], "cls.config:6: expected 'name,description,priority', got 'c,Gamma,x'");
}

TEST(ConfigFiles, ReferenceConfig) {
    std::vector<std::string> errors;
    const ReferenceTable t = parse_reference_config(
        "# refs\nconfig reference: bugtraq   http://www.securityfocus.com/bid/\n"
        "config reference: url http://\nconfig reference: broken\n",
        "ref.config", &errors);
    ASSERT_EQ(t.url_prefix.size(), 2u);
    EXPECT_EQ(t.url_prefix.at("bugtraq"), "http://www.securityfocus.com/bid/");
    EXPECT_EQ(t.url_prefix.at("url"), "http://");
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0], "ref.config:4: expected 'config reference: system url'");
}

TEST(ConfigFiles, UnreadableFileThrows) {
    try {
        load_classification_file("/nonexistent/classification.config", nullptr);
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(),
                     "/nonexistent/classification.config: cannot open: No such file or directory");
    }
}

}  // namespace
}  // namespace picket::sensor::detect
