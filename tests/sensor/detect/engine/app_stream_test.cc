// Detection on reassembled stream windows (StreamView) and on app-layer transactions
// (AppView via inspect_tx): crafted views, real compiled rules.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/detect/detect.h"
#include "sensor/detect/rule.h"
#include "sensor/flow/flow.h"
#include "tests/sensor/detect/engine/engine_fixture.h"
#include "tests/support/frames.h"

namespace picket::sensor::detect {
namespace {

namespace tb = picket::testing::frames;

class AppStreamTest : public testing::EngineTest {
protected:
    AppStreamTest() : EngineTest("appstream") {}

    void load(const std::string& rules, DetectConfig cfg = {}) {
        EngineTest::load(rules, std::move(cfg));
        ASSERT_EQ(summary_.skipped, 0u) << summary_.to_string();
    }

    void decode(const std::string& payload, uint16_t dport = 80) {
        tb::Bytes pl(payload.begin(), payload.end());
        frame_ = tb::eth(0x0800, tb::ipv4({}, tb::tcp(40000, dport, 0x18, {}, pl)));
        decode::decode_packet(dctx_, 1, frame_.data(), static_cast<uint32_t>(frame_.size()),
                              static_cast<uint32_t>(frame_.size()), 1000000000, p_);
        f_ = flows_->lookup(p_, &dir_);
    }

    std::vector<uint32_t> sids(const AlertRecord* out, uint32_t n) {
        std::vector<uint32_t> v;
        for (uint32_t i = 0; i < n; ++i) {
            v.push_back(out[i].rule->sid);
        }
        return v;
    }

    // Packet `payload`, with a stream window of `tail` + payload.
    std::vector<uint32_t> run_stream(const std::string& tail, const std::string& payload,
                                     bool* from_stream = nullptr) {
        decode(payload);
        window_ = tail + payload;
        StreamView sv;
        sv.data = reinterpret_cast<const uint8_t*>(window_.data());
        sv.len = static_cast<uint32_t>(window_.size());
        sv.new_off = static_cast<uint32_t>(tail.size());
        InspectExtras x;
        x.stream = &sv;
        AlertRecord out[16];
        uint32_t n = worker_->inspect(p_, f_, dir_, out, 16, &x);
        if (from_stream != nullptr) {
            *from_stream = n > 0 && out[0].from_stream;
        }
        return sids(out, n);
    }

    std::vector<uint32_t> run_tx(const AppView& view, TxAlertLog* log = nullptr) {
        decode("x");
        AlertRecord out[16];
        uint32_t n = worker_->inspect_tx(p_, f_, dir_, view, log, out, 16);
        return sids(out, n);
    }

    // The view points into uri_ / raw_ (views never own their bytes).
    AppView http_view(uint64_t tx, const std::string& uri, const std::string& raw) {
        uri_ = uri;
        raw_ = raw;
        AppView v;
        v.proto = AppProto::kHttp;
        v.tx_id = tx;
        v.buf[static_cast<size_t>(BufferId::kHttpUri)] = uri_;
        v.buf[static_cast<size_t>(BufferId::kHttpUriRaw)] = raw_;
        v.buf[static_cast<size_t>(BufferId::kHttpMethod)] = "GET";
        return v;
    }

    std::string window_, uri_, raw_;
    tb::Bytes frame_;
    decode::Packet p_;
    flow::Flow* f_ = nullptr;
    flow::Direction dir_ = flow::Direction::kToServer;
};

TEST_F(AppStreamTest, ContentStraddlingSegmentsMatchesOnTheStream) {
    load("alert tcp any any -> any any (content:\"ATTACK\"; sid:1;)\n");
    EXPECT_EQ(engine_->stream_tail_bytes(), 6u);
    bool from_stream = false;
    // "ATT" came earlier; "ACK" now: only the stream window holds the whole pattern.
    EXPECT_EQ(run_stream("xxATT", "ACKyy", &from_stream), std::vector<uint32_t>{1});
    EXPECT_TRUE(from_stream);
    // The whole pattern in the packet: a packet match (one alert, not two).
    EXPECT_EQ(run_stream("xx", "ATTACK", &from_stream), std::vector<uint32_t>{1});
    EXPECT_FALSE(from_stream);
}

TEST_F(AppStreamTest, AlreadyInspectedBytesDoNotAlertAgain) {
    load("alert tcp any any -> any any (content:\"ATTACK\"; sid:1;)\n");
    // The pattern lies entirely in the tail (inspected with the earlier packet).
    EXPECT_TRUE(run_stream("ATTACK", "benign").empty());
}

TEST_F(AppStreamTest, OnlyStreamAndNoStream) {
    load(
        "alert tcp any any -> any any (flow:only_stream; content:\"ATTACK\"; sid:1;)\n"
        "alert tcp any any -> any any (flow:no_stream; content:\"ATTACK\"; sid:2;)\n"
        "alert tcp-pkt any any -> any any (content:\"ATTACK\"; sid:3;)\n"
        "alert tcp-stream any any -> any any (content:\"ATTACK\"; sid:4;)\n");
    // Split: only the stream-capable rules match.
    EXPECT_EQ(run_stream("ATT", "ACK"), (std::vector<uint32_t>{1, 4}));
    // Whole in the packet: every rule, each once.
    EXPECT_EQ(run_stream("", "ATTACK"), (std::vector<uint32_t>{1, 2, 3, 4}));
}

// A packet whose data went into the stream: its payload is scanned with the patterns of the
// rules that still read it (dsize, no_stream, tcp-pkt), not those of the stream-capable rules,
// which see the bytes on the stream (Part::pkt_split); the alerts are those of a full scan.
TEST_F(AppStreamTest, InStreamPacketScansOnlyThePacketRulesPatterns) {
    load(
        "alert tcp any any -> any any (content:\"ATTACK\"; sid:1;)\n"
        "alert tcp any any -> any any (dsize:>0; content:\"ATTACK\"; sid:2;)\n"
        "alert tcp any any -> any any (flow:no_stream; content:\"ATTACK\"; sid:3;)\n"
        "alert tcp-pkt any any -> any any (content:\"ATTACK\"; sid:4;)\n"
        "alert tcp any any -> any any (content:\"STREAMONLY\"; sid:5;)\n");
    auto run = [&](const std::string& payload, bool in_stream, uint64_t* candidates) {
        decode(payload);
        InspectExtras x;
        x.pkt_in_stream = in_stream;
        AlertRecord out[16];
        const uint64_t before = worker_->counters().prefilter_candidates.get();
        uint32_t n = worker_->inspect(p_, f_, dir_, out, 16, &x);
        *candidates = worker_->counters().prefilter_candidates.get() - before;
        return sids(out, n);
    };
    uint64_t candidates = 0;
    // Not in the stream: every rule reads the payload.
    EXPECT_EQ(run("xxATTACKxxSTREAMONLY", false, &candidates),
              (std::vector<uint32_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(candidates, 5u);
    // In the stream (no stream view yet): the packet rules alone, and only they are candidates.
    EXPECT_EQ(run("xxATTACKxxSTREAMONLY", true, &candidates), (std::vector<uint32_t>{2, 3, 4}));
    EXPECT_EQ(candidates, 3u);
}

// Short fast patterns held to a few bytes by offset and depth (BoundedPattern) are read at
// their place instead of by the database: a payload with the pattern elsewhere makes no
// candidate; the alerts are those the rules' offsets and depths give (worked out by hand).
TEST_F(AppStreamTest, BoundedShortPatternsAreReadAtTheirPlace) {
    load(
        "alert tcp any any -> any any (content:\"|03|\"; offset:0; depth:1; sid:1;)\n"
        "alert tcp any any -> any any (content:\"ab\"; nocase; offset:2; depth:4; sid:2;)\n"
        "alert tcp any any -> any any (content:\"|00 01|\"; offset:6; depth:2; "
        "content:\"|03|\"; sid:3;)\n"
        "alert tcp any any -> any any (content:\"XYZW\"; sid:4;)\n");
    auto run = [&](const std::string& payload, uint64_t* candidates) {
        decode(payload);
        AlertRecord out[16];
        const uint64_t before = worker_->counters().prefilter_candidates.get();
        uint32_t n = worker_->inspect(p_, f_, dir_, out, 16, nullptr);
        *candidates = worker_->counters().prefilter_candidates.get() - before;
        std::vector<uint32_t> v = sids(out, n);
        std::sort(v.begin(), v.end());
        return v;
    };
    uint64_t c = 0;
    EXPECT_EQ(run(std::string("\x03zzzzzzz", 8), &c), std::vector<uint32_t>{1});
    EXPECT_EQ(c, 1u);
    // The patterns anywhere but at their place: not even candidates.
    EXPECT_TRUE(run(std::string("zzzzz\x03"
                                "ab\x00\x01",
                                10),
                    &c)
                    .empty());
    EXPECT_EQ(c, 0u);
    EXPECT_EQ(run("zzzAbzz", &c), std::vector<uint32_t>{2});  // nocase, at 3 in [2, 6)
    EXPECT_EQ(run("zzzzaB", &c), std::vector<uint32_t>{2});   // ends at the depth
    EXPECT_TRUE(run("zzzzzaB", &c).empty());                  // one byte past it
    EXPECT_EQ(run(std::string("\x03zzzzz\x00\x01XYZW", 12), &c), (std::vector<uint32_t>{1, 3, 4}));
    EXPECT_EQ(c, 3u);
}

// The same rules on random payloads and stream windows, with the Hyperscan prefilter (bounded
// patterns read at their place, the others in the database) and with mpm none: the same
// alerts on every case. Bytes from a small alphabet, so that the patterns occur often, at and
// away from their places, whole in the tail, straddling into the new bytes, or new.
TEST_F(AppStreamTest, BoundedPatternsGiveTheAlertsOfMpmNone) {
    const std::string rules =
        "alert tcp any any -> any any (content:\"|03|\"; offset:0; depth:1; sid:1;)\n"
        "alert tcp any any -> any any (content:\"ab\"; nocase; offset:1; depth:4; sid:2;)\n"
        "alert tcp any any -> any any (content:\"b|03|a\"; offset:2; depth:6; sid:3;)\n"
        "alert tcp any any -> any any (content:\"a\"; depth:3; content:\"b|03|\"; "
        "distance:0; sid:4;)\n"
        "alert tcp any any -> any any (flow:no_stream; content:\"|03|a\"; offset:1; depth:2; "
        "sid:5;)\n"
        "alert tcp any any -> any any (content:\"aabb\"; sid:6;)\n"
        "alert tcp any any -> any any (content:\"Ab|03|b\"; nocase; offset:1; depth:7; "
        "sid:7;)\n"
        "alert tcp any any -> any any (content:\"ab\"; offset:1; depth:2; sid:8;)\n";
    struct Case {
        std::string tail, payload;
    };
    std::vector<Case> cases;
    uint32_t x = 12345;
    auto rnd = [&x](uint32_t n) {
        x = x * 1103515245u + 12345u;
        return (x >> 16) % n;
    };
    const char alphabet[] = {'a', 'b', 'A', 'B', '\x03', 'z'};
    for (int i = 0; i < 3000; ++i) {
        Case k;
        for (uint32_t n = rnd(7); n > 0; --n) {
            k.tail.push_back(alphabet[rnd(sizeof(alphabet))]);
        }
        for (uint32_t n = 1 + rnd(10); n > 0; --n) {
            k.payload.push_back(alphabet[rnd(sizeof(alphabet))]);
        }
        cases.push_back(std::move(k));
    }
    std::vector<std::vector<uint32_t>> got[2];
    const MpmAlgo algos[2] = {MpmAlgo::kHyperscan, MpmAlgo::kNone};
    size_t alerted = 0;
    for (int a = 0; a < 2; ++a) {
        if (flows_) {
            flows_->clear();
        }
        DetectConfig cfg;
        cfg.mpm_algo = algos[a];
        load(rules, cfg);
        for (const Case& k : cases) {
            // A packet alone, then the same packet with its stream window.
            decode(k.payload);
            AlertRecord out[16];
            std::vector<uint32_t> s = sids(out, worker_->inspect(p_, f_, dir_, out, 16, nullptr));
            std::sort(s.begin(), s.end());
            s.push_back(0);
            std::vector<uint32_t> st = run_stream(k.tail, k.payload);
            std::sort(st.begin(), st.end());
            s.insert(s.end(), st.begin(), st.end());
            alerted += s.size() > 1 ? 1 : 0;
            got[a].push_back(std::move(s));
        }
    }
    ASSERT_EQ(got[0].size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_EQ(got[0][i], got[1][i]) << "case " << i;
    }
    EXPECT_GT(alerted, cases.size() / 2);  // the cases do exercise the rules
}

TEST_F(AppStreamTest, HttpBuffersMatchOnTheTransaction) {
    load(
        "alert http any any -> any any (http.uri; content:\"/admin/\"; sid:1;)\n"
        "alert http any any -> any any (content:\"%2e\"; http_raw_uri; sid:2;)\n"
        "alert http any any -> any any (http.method; content:\"POST\"; sid:3;)\n"
        "alert http any any -> any any (urilen:>5; sid:4;)\n"
        "alert http any any -> any any (urilen:<5,raw; sid:5;)\n");
    EXPECT_EQ(summary_.app_layer_rules, 5u);
    EXPECT_EQ(run_tx(http_view(0, "/admin/x", "/%2e/admin/x")), (std::vector<uint32_t>{1, 2, 4}));
    // A DNS transaction never meets HTTP rules.
    AppView dns;
    dns.proto = AppProto::kDns;
    dns.buf[static_cast<size_t>(BufferId::kHttpUri)] = "/admin/";
    EXPECT_TRUE(run_tx(dns).empty());
}

TEST_F(AppStreamTest, TransactionAlertsOncePerRule) {
    load("alert http any any -> any any (http.uri; content:\"/admin\"; sid:1;)\n");
    TxAlertLog log;
    AppView v = http_view(7, "/admin", "/admin");
    EXPECT_EQ(run_tx(v, &log), std::vector<uint32_t>{1});
    // The same transaction progresses (e.g. its response arrives): no second alert.
    EXPECT_TRUE(run_tx(v, &log).empty());
    // The next transaction alerts again.
    v.tx_id = 8;
    EXPECT_EQ(run_tx(v, &log), std::vector<uint32_t>{1});
}

// A multipart upload with two files comes as one view per file (same transaction): each
// file's data and name are inspected together, so a rule matches the right file only.
TEST_F(AppStreamTest, FileDataAndFileNamePerUploadedFile) {
    load(
        "alert http any any -> any any (file.data; content:\"harmless\"; sid:1;)\n"
        "alert http any any -> any any (file.name; content:\"evil.exe\"; sid:2;)\n"
        "alert http any any -> any any (file.name; content:\"evil.exe\"; file.data; "
        "content:\"harmless\"; sid:3;)\n"
        "alert http any any -> any any (file_data; content:\"MZ\"; depth:2; sid:4;)\n"
        "alert http any any -> any any (http.response_body; content:\"MZ\"; sid:5;)\n");
    AppView a = http_view(3, "/upload", "/upload");
    a.buf[static_cast<size_t>(BufferId::kFileName)] = "notes.txt";
    a.buf[static_cast<size_t>(BufferId::kFileData)] = "harmless text";
    AppView b = a;
    b.buf[static_cast<size_t>(BufferId::kFileName)] = "evil.exe";
    b.buf[static_cast<size_t>(BufferId::kFileData)] = "MZ payload";
    EXPECT_EQ(run_tx(a), std::vector<uint32_t>{1});
    EXPECT_EQ(run_tx(b), (std::vector<uint32_t>{2, 4}));
    // With the transaction's alert log: each rule once for the transaction.
    TxAlertLog log;
    EXPECT_EQ(run_tx(a, &log), std::vector<uint32_t>{1});
    EXPECT_EQ(run_tx(b, &log), (std::vector<uint32_t>{2, 4}));
    EXPECT_TRUE(run_tx(a, &log).empty());
}

TEST_F(AppStreamTest, DotprefixOnDnsQuery) {
    load(
        "alert dns any any -> any any (dns.query; dotprefix; content:\".evil.example\"; "
        "endswith; sid:1;)\n"
        "alert dns any any -> any any (dns.query; to_lowercase; content:\"upper\"; sid:2;)\n"
        "alert dns any any -> any any (dns.opcode:!0; sid:3;)\n");
    AppView v;
    v.proto = AppProto::kDns;
    v.dns_opcode = 0;
    std::string q = "www.evil.example";
    v.buf[static_cast<size_t>(BufferId::kDnsQuery)] = q;
    EXPECT_EQ(run_tx(v), std::vector<uint32_t>{1});
    q = "evil.example";  // the whole name: dotprefix makes ".evil.example"
    v.buf[static_cast<size_t>(BufferId::kDnsQuery)] = q;
    EXPECT_EQ(run_tx(v), std::vector<uint32_t>{1});
    q = "notevil.example";
    v.buf[static_cast<size_t>(BufferId::kDnsQuery)] = q;
    EXPECT_TRUE(run_tx(v).empty());
    q = "UPPER.example";
    v.buf[static_cast<size_t>(BufferId::kDnsQuery)] = q;
    v.dns_opcode = 4;
    EXPECT_EQ(run_tx(v), (std::vector<uint32_t>{2, 3}));
}

TEST_F(AppStreamTest, TlsSniJa3AndVersion) {
    load(
        "alert tls any any -> any any (tls.sni; content:\"bad.example\"; sid:1;)\n"
        "alert tls any any -> any any (ja3.hash; content:\"e7d705a3286e19ea42f587b344ee6865\"; "
        "sid:2;)\n"
        "alert tls any any -> any any (tls.version:1.2; sid:3;)\n"
        "alert tls any any -> any any (tls.version:1.3; sid:4;)\n");
    AppView v;
    v.proto = AppProto::kTls;
    v.tls_version = 0x0303;
    v.buf[static_cast<size_t>(BufferId::kTlsSni)] = "www.bad.example";
    v.buf[static_cast<size_t>(BufferId::kJa3Hash)] = "e7d705a3286e19ea42f587b344ee6865";
    EXPECT_EQ(run_tx(v), (std::vector<uint32_t>{1, 2, 3}));
}

TEST_F(AppStreamTest, SshStickyBuffersAndLegacyKeywords) {
    load(
        // ET 2019876: ssh_proto is Suricata 7's alias of the ssh.proto sticky buffer.
        "alert ssh any any -> any any (flow:to_server; ssh_proto; content:\"PUTTY\"; sid:1;)\n"
        "alert ssh any any -> any any (ssh.proto; content:\"2.0\"; sid:2;)\n"
        "alert ssh any any -> any any (ssh.software; content:\"putty\"; nocase; sid:3;)\n"
        "alert ssh any any -> any any (ssh.hassh; content:\"472b5de333ad665af5cbf10ff892c4df\"; "
        "sid:4;)\n"
        "alert ssh any any -> any any (ssh.hassh.string; content:\"curve25519\"; sid:5;)\n"
        "alert ssh any any -> any any (ssh.hassh.server; content:\"9ae1\"; sid:6;)\n"
        "alert ssh any any -> any any (ssh.hassh.server.string; content:\"zlib\"; sid:7;)\n"
        "alert ssh any any -> any any (ssh.protoversion:2_compat; sid:8;)\n"
        "alert ssh any any -> any any (ssh.protoversion:1.99; sid:9;)\n"
        "alert ssh any any -> any any (ssh.softwareversion:PuTTY; sid:10;)\n"
        "alert ssh any any -> any any (ssh_software; content:\"PuTTY\"; sid:11;)\n");
    AppView v;
    v.proto = AppProto::kSsh;
    v.buf[static_cast<size_t>(BufferId::kSshProto)] = "2.0";
    v.buf[static_cast<size_t>(BufferId::kSshSoftware)] = "PuTTY_Release_0.78";
    v.buf[static_cast<size_t>(BufferId::kSshHassh)] = "472b5de333ad665af5cbf10ff892c4df";
    v.buf[static_cast<size_t>(BufferId::kSshHasshString)] = "curve25519-sha256;aes128-ctr;a;b";
    EXPECT_EQ(run_tx(v), (std::vector<uint32_t>{2, 3, 4, 5, 8, 10, 11}));
    // The server's side: a 1.99 banner and its HASSH-server.
    AppView s;
    s.proto = AppProto::kSsh;
    s.buf[static_cast<size_t>(BufferId::kSshProto)] = "1.99";
    s.buf[static_cast<size_t>(BufferId::kSshSoftware)] = "OpenSSH_9.2p1";
    s.buf[static_cast<size_t>(BufferId::kSshHasshServer)] = "9ae112c9081fd5a2bb42ff62fbcb6e4c";
    s.buf[static_cast<size_t>(BufferId::kSshHasshServerString)] = "k;e;m;none,zlib";
    EXPECT_EQ(run_tx(s), (std::vector<uint32_t>{6, 7, 8, 9}));
    // ssh_proto holds the protocol version: a software name never matches it (as in Suricata).
    AppView p = v;
    p.buf[static_cast<size_t>(BufferId::kSshProto)] = "PUTTY";
    EXPECT_EQ(run_tx(p), (std::vector<uint32_t>{1, 3, 4, 5, 10, 11}));
}

TEST_F(AppStreamTest, AppLayerEventMatchesTheParsersEvent) {
    load(
        "alert http any any -> any any (app-layer-event:"
        "http.invalid_transfer_encoding_value_in_request; http.uri; content:\"/q\"; sid:1;)\n"
        "alert ssh any any -> any any (app-layer-event:ssh.invalid_record; sid:2;)\n"
        "alert dns any any -> any any (app-layer-event:dns.z_flag_set; sid:3;)\n"
        "alert tls any any -> any any (app-layer-event:tls.invalid_record_type; sid:4;)\n");
    AppView h = http_view(0, "/q", "/q");
    EXPECT_TRUE(run_tx(h).empty());
    const inspect::AppEventName* te =
        inspect::find_app_event("http.invalid_transfer_encoding_value_in_request");
    ASSERT_NE(te, nullptr);
    h.events = uint64_t{1} << te->bit;
    EXPECT_EQ(run_tx(h), std::vector<uint32_t>{1});
    AppView s;
    s.proto = AppProto::kSsh;
    s.events = 1u << 2;  // ssh::Event::kInvalidRecord
    EXPECT_EQ(run_tx(s), std::vector<uint32_t>{2});
    s.events = 1u << 0;  // invalid_banner: not this rule's
    EXPECT_TRUE(run_tx(s).empty());
    AppView d;
    d.proto = AppProto::kDns;
    d.events = 1u << 8;  // dns::Event::kZFlagSet
    EXPECT_EQ(run_tx(d), std::vector<uint32_t>{3});
    AppView t;
    t.proto = AppProto::kTls;
    t.events = 1u;  // tls::Event::kInvalidRecordType
    EXPECT_EQ(run_tx(t), std::vector<uint32_t>{4});
}

TEST_F(AppStreamTest, AppLayerEventRefusesAnUnknownNameWithTheName) {
    EngineTest::load(
        "alert http any any -> any any (app-layer-event:http.no_such_thing; sid:1;)\n"
        "alert dns any any -> any any (app-layer-event:http.missing_host_header; sid:2;)\n"
        "alert http any any -> any any (app-layer-event:http.missing_host_header; sid:3;)\n");
    EXPECT_EQ(summary_.loaded, 1u);
    EXPECT_EQ(summary_.skipped, 2u);
    std::string text;
    for (const RuleDiagnostic& d : summary_.diagnostics) {
        text += d.to_string() + "\n";
    }
    EXPECT_NE(text.find("app-layer-event: unknown or unsupported event 'http.no_such_thing'"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("'http.missing_host_header' on a rule for another app-layer protocol"),
              std::string::npos)
        << text;
}

TEST_F(AppStreamTest, HttpHeaderRuleOnPacketsOfHttpFlowsOnly) {
    // A protocol in the header with packet content: the flow's app protocol decides.
    load("alert http any any -> any any (content:\"hello\"; sid:1;)\n");
    decode("hello");
    AlertRecord out[4];
    InspectExtras x;
    EXPECT_EQ(worker_->inspect(p_, f_, dir_, out, 4, &x), 0u);
    x.app = AppProto::kHttp;
    EXPECT_EQ(worker_->inspect(p_, f_, dir_, out, 4, &x), 1u);
}

TEST_F(AppStreamTest, MpmNoneGivesTheSameTransactionAlerts) {
    const std::string rules =
        "alert http any any -> any any (http.uri; content:\"/admin/\"; sid:1;)\n"
        "alert http any any -> any any (http.uri; content:\"/other/\"; sid:2;)\n";
    struct Case {
        const char* uri;
        const char* raw;
        std::vector<uint32_t> want;  // worked out by hand from the two rules above
    };
    const std::vector<Case> cases = {
        {"/admin/x", "/admin/x", {1}},               // sid 1's content, not sid 2's
        {"/other/admin/", "/other/admin/", {1, 2}},  // both contents, one alert each
        {"/x/other/y", "/x/other/y", {2}},           // content is unanchored: mid-buffer matches
        {"/Admin/x", "/Admin/x", {}},                // no nocase: case-sensitive
        {"/admin", "/admin", {}},                    // "/admin/" needs its trailing slash
        {"/a", "/admin/", {}},                       // http.uri is not http.uri.raw
    };
    // The same cases with the Hyperscan prefilter and without one (every rule of the group
    // verified): each must give the hand-computed sids, so the two also agree.
    std::vector<std::vector<uint32_t>> got[2];
    const MpmAlgo algos[2] = {MpmAlgo::kHyperscan, MpmAlgo::kNone};
    for (int a = 0; a < 2; ++a) {
        if (flows_) {
            flows_->clear();  // the flows of the previous engine release their state first
        }
        DetectConfig cfg;
        cfg.mpm_algo = algos[a];
        load(rules, cfg);
        EXPECT_EQ(summary_.hs_databases == 0, algos[a] == MpmAlgo::kNone) << summary_.to_string();
        for (size_t i = 0; i < cases.size(); ++i) {
            std::vector<uint32_t> s = run_tx(http_view(i, cases[i].uri, cases[i].raw));
            std::sort(s.begin(), s.end());
            EXPECT_EQ(s, cases[i].want) << mpm_algo_name(algos[a]) << " uri " << cases[i].uri;
            got[a].push_back(s);
        }
    }
    EXPECT_EQ(got[1], got[0]);
}

}  // namespace
}  // namespace picket::sensor::detect
