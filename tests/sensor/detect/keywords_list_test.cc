// list_keywords(): what picket-sensor --list-keywords prints.
#include "sensor/detect/keywords_list.h"

#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <gtest/gtest.h>

namespace picket::sensor::detect {
namespace {

const KeywordInfo* find(const std::vector<KeywordInfo>& all, const std::string& lang,
                        const std::string& name) {
    for (const KeywordInfo& k : all) {
        if (k.language == lang && k.name == name) {
            return &k;
        }
    }
    return nullptr;
}

void expect(const std::vector<KeywordInfo>& all, const std::string& lang, const std::string& name,
            const std::string& kind, const std::string& status) {
    const KeywordInfo* k = find(all, lang, name);
    ASSERT_NE(k, nullptr) << lang << " " << name;
    EXPECT_EQ(k->kind, kind) << lang << " " << name;
    EXPECT_EQ(k->status, status) << lang << " " << name;
}

TEST(KeywordsListTest, ExactEntries) {
    const auto all = list_keywords();
    expect(all, "suricata", "content", "option", "supported");
    expect(all, "suricata", "tcp.flags", "option", "supported");
    expect(all, "suricata", "http.uri", "sticky buffer", "supported");
    expect(all, "suricata", "file_data", "sticky buffer", "supported");
    expect(all, "suricata", "http_uri", "modifier", "supported");
    expect(all, "snort3", "http_uri", "sticky buffer", "supported");
    expect(all, "snort3", "service", "option", "supported");
    expect(all, "snort3", "bufferlen", "option", "partly: relative is not supported");
    expect(all, "snort3", "js_data", "sticky buffer",
           "not supported: unsupported buffer 'js_data'");
    expect(all, "snort3", "vba_data", "sticky buffer",
           "not supported: unsupported buffer 'vba_data'");
    EXPECT_EQ(find(all, "suricata", "no_such_keyword"), nullptr);
    // Issue #22's keywords, and a Suricata keyword Picket does not support.
    expect(all, "suricata", "stream_size", "option", "supported");
    expect(all, "suricata", "flowint", "option", "supported");
    expect(all, "suricata", "base64_decode", "option", "supported");
    expect(all, "suricata", "base64_data", "option", "supported");
    expect(all, "suricata", "xbits", "option", "supported");
    expect(all, "suricata", "tag", "option", "supported");
    expect(all, "suricata", "asn1", "option", "supported");
    expect(all, "suricata", "ftpbounce", "option", "supported");
    expect(all, "suricata", "ftp.command", "sticky buffer", "supported");
    expect(all, "suricata", "ftp.command_data", "sticky buffer", "supported");
    expect(all, "suricata", "ipopts", "option",
           "not supported: unsupported keyword 'ipopts' (IPv4 options are not decoded into "
           "flags)");
    expect(all, "snort3", "stream_size", "option", "supported");
    // Variables and hostbits (issue #22).
    expect(all, "suricata", "flowvar", "option", "supported");
    expect(all, "suricata", "pktvar", "option", "supported");
    expect(all, "suricata", "hostbits", "option", "supported");
}

// Every Snort 3 keyword of issue #20's list is there, with a status, whatever that status is.
TEST(KeywordsListTest, EverySnort3KeywordIsListed) {
    const auto all = list_keywords();
    const char* names[] = {
        // Service rule headers.
        "http",
        "file",
        "ssl",
        "smtp",
        "dns",
        // Sticky buffers.
        "http_uri",
        "http_raw_uri",
        "http_header",
        "http_header.field",
        "http_raw_header",
        "http_cookie",
        "http_raw_cookie",
        "http_client_body",
        "http_raw_body",
        "http_method",
        "http_stat_code",
        "http_stat_msg",
        "http_version",
        "http_true_ip",
        "http_param",
        "file_data",
        "pkt_data",
        "raw_data",
        "js_data",
        "vba_data",
        "base64_data",
        "sip_header",
        "sip_body",
        "dce_stub_data",
        // content and its comma options; pcre and its flags.
        "content",
        "content.nocase",
        "content.offset",
        "content.depth",
        "content.distance",
        "content.within",
        "content.fast_pattern",
        "content.fast_pattern_offset",
        "content.fast_pattern_length",
        "pcre",
        "pcre.R",
        "pcre.B",
        "pcre.U",
        "pcre.I",
        "pcre.P",
        "pcre.H",
        "pcre.D",
        "pcre.M",
        "pcre.C",
        "pcre.K",
        "pcre.S",
        "pcre.Y",
        "pcre.O",
        // Other options.
        "service",
        "bufferlen",
        "isdataat",
        "byte_test",
        "byte_jump",
        "byte_extract",
        "byte_math",
        "flow",
        "flowbits",
        "detection_filter",
        "rem",
        "reference",
        "classtype",
        "metadata",
        "gid",
        "sid",
        "rev",
        "priority",
        "ssl_state",
        "ssl_version",
        "dsize",
        "flags",
        "itype",
        "icode",
        "ip_proto",
        "ttl",
        "id",
        "seq",
        "ack",
        "window",
        "sip_method",
        "sip_stat_code",
        "dce_iface",
        "dce_opnum",
        "base64_decode",
        "tag",
        "msg",
        "so",
        "replace",
    };
    for (const char* name : names) {
        const KeywordInfo* k = find(all, "snort3", name);
        ASSERT_NE(k, nullptr) << name;
        EXPECT_TRUE(k->status == "supported" || k->status.starts_with("partly: ") ||
                    k->status.starts_with("not supported: "))
            << name << ": " << k->status;
    }
}

// Statuses come from the code that decides: the front-end's tables, and for what it passes
// on, the Suricata parser (registry and unsupported list).
TEST(KeywordsListTest, Snort3StatusesFollowTheDecidingCode) {
    const auto all = list_keywords();
    expect(all, "snort3", "content.fast_pattern_offset", "content modifier", "supported");
    expect(all, "snort3", "content.nocase", "content modifier", "supported");
    expect(all, "snort3", "sid", "option", "supported");
    expect(all, "snort3", "byte_math", "option", "supported");
    expect(all, "snort3", "tag", "option", "supported");  // Suricata's tag grammar (tag.cc)
    expect(all, "snort3", "replace", "option", "not supported: unsupported keyword 'replace'");
    expect(all, "snort3", "dce_stub_data", "option",
           "not supported: unsupported keyword 'dce_stub_data'");
    expect(all, "snort3", "so", "option",
           "not supported: shared-object rules (so:) need Snort's .so plugins");
    expect(all, "snort3", "sip_method", "option", "supported");
    expect(all, "snort3", "sip_stat_code", "option", "supported");
    expect(all, "snort3", "sip_header", "sticky buffer",
           "not supported: unsupported buffer 'sip_header'");
    expect(all, "suricata", "sip_method", "option", "supported");
    expect(all, "suricata", "sip_stat_code", "option", "supported");
    expect(all, "snort3", "http", "service header", "supported");
    expect(all, "snort3", "file", "service header",
           "partly: no service condition; the buffers choose (file_data: HTTP bodies)");
    expect(all, "snort3", "pcre.R", "pcre flag", "supported");
    expect(all, "snort3", "pcre.U", "pcre flag", "supported");
    expect(all, "snort3", "pcre.K", "pcre flag",
           "not supported: pcre: bad pcre '/a/K': unknown flag 'K'");
    const KeywordInfo* field = find(all, "snort3", "http_header.field");
    ASSERT_NE(field, nullptr);
    EXPECT_TRUE(field->status.starts_with("partly: field user-agent, host, ")) << field->status;
}

TEST(KeywordsListTest, SortedAndUnique) {
    const auto all = list_keywords();
    std::set<std::pair<std::string, std::string>> seen;
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_TRUE(seen.insert({all[i].language, all[i].name}).second)
            << all[i].language << " " << all[i].name;
        if (i > 0) {
            EXPECT_LE(std::tie(all[i - 1].language, all[i - 1].name),
                      std::tie(all[i].language, all[i].name));
        }
    }
    EXPECT_GT(all.size(), 100u);
}

}  // namespace
}  // namespace picket::sensor::detect
