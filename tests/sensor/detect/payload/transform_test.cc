// Suricata 7 transforms to_uppercase, strip_whitespace, compress_whitespace and url_decode:
// the keyword parsers (accepted and rejected forms), apply_transforms() on byte strings, and
// rules parsed with parse_rule() whose transformed buffer is then inspected as
// DetectWorker does it (apply_transforms, then inspect_buffer).
//
// Expected values come from the Suricata 7 user guide (rules/transforms.rst):
// - strip_whitespace "strips all whitespace as considered by the isspace() call in C": in the
//   C locale that is exactly space, \t, \n, \v, \f and \r.
// - compress_whitespace "compresses all consecutive whitespace into a single space".
// - to_uppercase "converts the buffer to uppercase" (ASCII letters; other bytes unchanged).
// - url_decode "decodes url-encoded data, ie replacing '+' with space and '%HH' with its value.
//   This does not decode unicode '%uZZZZ' encoding". An invalid or incomplete escape is left
//   as it is, one pass only (Suricata's own DetectTransformUrlDecodeTest01 vector below).
// - "The transforms can be chained. They are processed in the order in which they appear in a
//   rule. Each transform's output acts as input for the next one."
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/parser.h"
#include "sensor/detect/transform.h"

namespace picket::sensor::detect {
namespace {

namespace kw = keywords;

std::string run_chain(uint32_t chain, std::string_view in) {
    std::string out;
    std::string tmp;
    return std::string(apply_transforms(chain, in, &out, &tmp));
}

uint32_t chain_of(std::initializer_list<Transform> ts) {
    uint32_t c = 0;
    for (Transform t : ts) {
        EXPECT_TRUE(push_transform(&c, t));
    }
    return c;
}

// ----------------------------------------------------------------------------- apply_transforms

TEST(TransformApply, ToUppercase) {
    const uint32_t c = chain_of({Transform::kToUppercase});
    EXPECT_EQ(run_chain(c, "/Index.PHP?a=b&Z=1"), "/INDEX.PHP?A=B&Z=1");
    EXPECT_EQ(run_chain(c, "this text has been converted to uppercase"),
              "THIS TEXT HAS BEEN CONVERTED TO UPPERCASE");
    // Only a-z change: digits, punctuation, NUL and bytes above 0x7f stay as they are.
    const std::string mixed("a\x00z{`@[\xe9\xff", 9);
    EXPECT_EQ(run_chain(c, mixed), std::string("A\x00Z{`@[\xe9\xff", 9));
    EXPECT_EQ(run_chain(c, ""), "");
}

TEST(TransformApply, StripWhitespaceRemovesTheSixIsspaceBytes) {
    const uint32_t c = chain_of({Transform::kStripWhitespace});
    EXPECT_EQ(run_chain(c, "window.navigate ("), "window.navigate(");
    EXPECT_EQ(run_chain(c, "a b\tc\nd\ve\ff\rg"), "abcdefg");
    EXPECT_EQ(run_chain(c, "  lead and trail  "), "leadandtrail");
    // Not whitespace for isspace() in the C locale: NUL, 0x1c-0x1f, NBSP (0xa0), 0x85.
    const std::string keep("\x00\x1c\x1f\xa0\x85", 5);
    EXPECT_EQ(run_chain(c, keep), keep);
    EXPECT_EQ(run_chain(c, " \t\r\n\v\f"), "");  // all whitespace: empty result
    EXPECT_EQ(run_chain(c, ""), "");
}

TEST(TransformApply, CompressWhitespaceRunsBecomeOneSpace) {
    const uint32_t c = chain_of({Transform::kCompressWhitespace});
    EXPECT_EQ(run_chain(c, "a  b   c"), "a b c");
    EXPECT_EQ(run_chain(c, "a \t\r\n\v\fb"), "a b");  // a mixed run is one run
    EXPECT_EQ(run_chain(c, "\t\t x \n\n"), " x ");    // leading and trailing runs are kept, short
    EXPECT_EQ(run_chain(c, "a b c"), "a b c");        // single spaces unchanged
    EXPECT_EQ(run_chain(c, "        "), " ");
    const std::string keep("a\x00\x00\xa0\xa0z", 6);  // not whitespace: not compressed
    EXPECT_EQ(run_chain(c, keep), keep);
    EXPECT_EQ(run_chain(c, ""), "");
}

TEST(TransformApply, UrlDecode) {
    const uint32_t c = chain_of({Transform::kUrlDecode});
    // Suricata's DetectTransformUrlDecodeTest01: %25%30%30 decodes to "%00" and is not decoded
    // again; %ZZ (not hex) and a trailing %4 (incomplete) are left as they are.
    EXPECT_EQ(run_chain(c, "Suricata%20is+%27%61wesome%21%27%25%30%30%ZZ%4"),
              "Suricata is 'awesome!'%00%ZZ%4");
    EXPECT_EQ(run_chain(c, "%2f%2F%41%6a"), "//Aj");  // either case of hex digit
    EXPECT_EQ(run_chain(c, "a+b++c"), "a b  c");
    EXPECT_EQ(run_chain(c, "%2B"), "+");          // an encoded '+' stays a '+'
    EXPECT_EQ(run_chain(c, "%u0041"), "%u0041");  // %u is not decoded
    EXPECT_EQ(run_chain(c, "100%"), "100%");      // trailing '%'
    EXPECT_EQ(run_chain(c, "%%41"), "%A");        // the first '%' is not an escape
    EXPECT_EQ(run_chain(c, "%4g%g4"), "%4g%g4");  // one bad digit is enough
    EXPECT_EQ(run_chain(c, "x%41"), "xA");        // an escape ending the buffer
    EXPECT_EQ(run_chain(c, "%00"), std::string(1, '\0'));
    EXPECT_EQ(run_chain(c, "%ff"), std::string(1, '\xff'));
    EXPECT_EQ(run_chain(c, "plain"), "plain");
    EXPECT_EQ(run_chain(c, ""), "");
}

TEST(TransformApply, ChainsRunInRuleOrder) {
    using T = Transform;
    EXPECT_EQ(run_chain(chain_of({T::kStripWhitespace, T::kToUppercase}), " a d\tm i n "), "ADMIN");
    // '+' becomes a space only in url_decode: compress first leaves the three spaces.
    EXPECT_EQ(run_chain(chain_of({T::kUrlDecode, T::kCompressWhitespace}), "a+++b"), "a b");
    EXPECT_EQ(run_chain(chain_of({T::kCompressWhitespace, T::kUrlDecode}), "a+++b"), "a   b");
    // %20 only becomes whitespace after url_decode.
    EXPECT_EQ(run_chain(chain_of({T::kUrlDecode, T::kStripWhitespace}), "a%20%09b"), "ab");
    EXPECT_EQ(run_chain(chain_of({T::kStripWhitespace, T::kUrlDecode}), "a%20%09b"), "a \tb");
    EXPECT_EQ(run_chain(chain_of({T::kUrlDecode, T::kToUppercase}), "%61dmin"), "ADMIN");
    EXPECT_EQ(run_chain(chain_of({T::kToUppercase, T::kUrlDecode}), "%6a"), "j");  // %6A = 'j'
    // Three and seven steps (the ping-pong between the output and the scratch string).
    EXPECT_EQ(
        run_chain(chain_of({T::kUrlDecode, T::kCompressWhitespace, T::kToUppercase}), "get+%20/x"),
        "GET /X");
    EXPECT_EQ(run_chain(chain_of({T::kDotPrefix, T::kDotPrefix, T::kDotPrefix, T::kDotPrefix,
                                  T::kDotPrefix, T::kDotPrefix, T::kDotPrefix}),
                        "a"),
              ".......a");
    EXPECT_EQ(run_chain(0, "unchanged"), "unchanged");
}

TEST(TransformApply, OutputStringIsReused) {
    // The same output and scratch strings serve successive calls with inputs of other sizes.
    std::string out;
    std::string tmp;
    const uint32_t c = chain_of({Transform::kUrlDecode, Transform::kToUppercase});
    EXPECT_EQ(apply_transforms(c, "a%20very%20long%20input", &out, &tmp), "A VERY LONG INPUT");
    EXPECT_EQ(apply_transforms(c, "x", &out, &tmp), "X");
    EXPECT_EQ(apply_transforms(c, "", &out, &tmp), "");
}

TEST(TransformApply, Names) {
    EXPECT_STREQ(transform_name(Transform::kToUppercase), "to_uppercase");
    EXPECT_STREQ(transform_name(Transform::kStripWhitespace), "strip_whitespace");
    EXPECT_STREQ(transform_name(Transform::kCompressWhitespace), "compress_whitespace");
    EXPECT_STREQ(transform_name(Transform::kUrlDecode), "url_decode");
}

// ----------------------------------------------------------------------------- keyword parsing

class TransformParse : public ::testing::Test {
protected:
    TransformParse() { st.rule = &rule; }
    // Sets the sticky buffer as parse_rule does for "http.uri;".
    void sticky(BufferId id) {
        st.sticky = id;
        st.current = &st.list_for(id);
        st.last_content = nullptr;
    }
    bool add(KeywordParseFn fn, std::string_view value = {}, bool has_value = false) {
        err.clear();
        return fn(st, value, has_value, &err);
    }

    Rule rule;
    ParseState st;
    std::string err;
};

struct KeywordCase {
    const char* name;
    KeywordParseFn fn;
    Transform t;
};
const KeywordCase kKeywords[] = {
    {"to_uppercase", kw::parse_to_uppercase, Transform::kToUppercase},
    {"strip_whitespace", kw::parse_strip_whitespace, Transform::kStripWhitespace},
    {"compress_whitespace", kw::parse_compress_whitespace, Transform::kCompressWhitespace},
    {"url_decode", kw::parse_url_decode, Transform::kUrlDecode},
};

TEST_F(TransformParse, AfterAStickyBufferAppendsToItsChain) {
    sticky(BufferId::kHttpUri);
    for (const KeywordCase& k : kKeywords) {
        ASSERT_TRUE(add(k.fn)) << k.name << ": " << err;
    }
    ASSERT_EQ(rule.buffers.size(), 1u);
    EXPECT_EQ(rule.buffers[0].buffer, BufferId::kHttpUri);
    // 4 bits per step, first step in the low bits (transform.h): 3, 4, 5, 6.
    EXPECT_EQ(rule.buffers[0].transforms, 0x6543u);
}

TEST_F(TransformParse, TakesNoValue) {
    for (const KeywordCase& k : kKeywords) {
        sticky(BufferId::kHttpUri);
        EXPECT_FALSE(add(k.fn, "1", true)) << k.name;
        EXPECT_EQ(err, std::string(k.name) + ": takes no value");
        EXPECT_FALSE(add(k.fn, "", true)) << k.name;  // "to_uppercase:;"
        EXPECT_EQ(err, std::string(k.name) + ": takes no value");
    }
    EXPECT_EQ(rule.buffers[0].transforms, 0u);
}

TEST_F(TransformParse, NeedsAStickyBuffer) {
    for (const KeywordCase& k : kKeywords) {
        EXPECT_FALSE(add(k.fn)) << k.name;  // nothing yet
        EXPECT_EQ(err, std::string(k.name) + ": must follow a sticky buffer (e.g. dns.query; " +
                           k.name + ";)");
    }
    // The packet payload list (content without a sticky buffer) takes no transform.
    st.current = &st.list_for(BufferId::kPacket);
    EXPECT_FALSE(add(kw::parse_url_decode));
    EXPECT_EQ(err, "url_decode: must follow a sticky buffer (e.g. dns.query; url_decode;)");
}

TEST_F(TransformParse, MustComeBeforeTheBuffersFirstOption) {
    sticky(BufferId::kHttpUri);
    ASSERT_TRUE(add(kw::parse_content, "\"x\"", true)) << err;
    for (const KeywordCase& k : kKeywords) {
        EXPECT_FALSE(add(k.fn)) << k.name;
        EXPECT_EQ(err, std::string(k.name) + ": transforms must directly follow the sticky buffer");
    }
    EXPECT_EQ(rule.buffers[0].transforms, 0u);
}

TEST_F(TransformParse, AtMostSevenPerBuffer) {
    sticky(BufferId::kHttpUri);
    for (int i = 0; i < 7; ++i) {
        ASSERT_TRUE(add(kw::parse_strip_whitespace)) << i << ": " << err;
    }
    EXPECT_FALSE(add(kw::parse_url_decode));
    EXPECT_EQ(err, "url_decode: at most 7 transforms per buffer");
    EXPECT_EQ(rule.buffers[0].transforms, 0x4444444u);
    // Another buffer has its own chain.
    sticky(BufferId::kHttpHost);
    EXPECT_TRUE(add(kw::parse_url_decode)) << err;
}

// ----------------------------------------------------------------------------- whole rules

class TransformRule : public ::testing::Test {
protected:
    // Parses `options` inside an http rule; the test fails when the rule does not parse.
    void compile(const std::string& options) {
        RuleDiagnostic d;
        rule_ =
            parse_rule("alert http any any -> any any (" + options + " sid:1;)", ParseEnv{}, &d);
        ASSERT_NE(rule_, nullptr) << options << " -> " << d.category << ": " << d.reason;
        ASSERT_EQ(rule_->buffers.size(), 1u);
    }
    std::string reject(const std::string& options) {
        RuleDiagnostic d;
        EXPECT_EQ(
            parse_rule("alert http any any -> any any (" + options + " sid:1;)", ParseEnv{}, &d),
            nullptr)
            << options;
        return d.reason;
    }
    // The rule's only buffer set to `data`, transformed and inspected.
    bool match(std::string_view data) {
        const BufferMatch& bm = rule_->buffers[0];
        std::string_view buf = apply_transforms(bm.transforms, data, &xform_, &xform_tmp_);
        return inspect_buffer(bm, reinterpret_cast<const uint8_t*>(buf.data()),
                              static_cast<uint32_t>(buf.size()), pc_, *scratch_);
    }

    std::unique_ptr<Rule> rule_;
    std::string xform_;
    std::string xform_tmp_;
    PacketContext pc_;
    PayloadScratchPtr scratch_ = make_payload_scratch();
};

TEST_F(TransformRule, DocumentationExamples) {
    compile("http.uri; to_uppercase; content:\"THIS TEXT HAS BEEN CONVERTED TO UPPERCASE\";");
    EXPECT_EQ(rule_->buffers[0].buffer, BufferId::kHttpUri);
    EXPECT_TRUE(match("/this%20text This Text has been converted to uppercase"));
    EXPECT_FALSE(match("this text has been converted to lowercase"));
    compile("file_data; strip_whitespace; content:\"window.navigate(\";");
    EXPECT_TRUE(match("x = window.navigate   (u)"));
    EXPECT_TRUE(match("window.navigate\r\n\t("));
    EXPECT_TRUE(match("window . navigate("));
    EXPECT_FALSE(match("window.navigateX("));
    compile("http.request_body; url_decode; content:\"mail=test@oisf.net\";");
    EXPECT_TRUE(match("user=x&mail=test%40oisf.net"));
    EXPECT_TRUE(match("mail%3dtest%40oisf%2enet"));
    EXPECT_FALSE(match("mail=test%2540oisf.net"));  // decodes once, to "%40"
}

TEST_F(TransformRule, CompressWhitespace) {
    compile("http.request_line; compress_whitespace; content:\"GET /a HTTP/1.1\"; startswith;");
    EXPECT_TRUE(match("GET    /a \t HTTP/1.1"));
    EXPECT_TRUE(match("GET /a HTTP/1.1"));
    EXPECT_FALSE(match("GET/a HTTP/1.1"));  // no whitespace is not compressed into one
    EXPECT_FALSE(match(" GET /a HTTP/1.1"));
}

TEST_F(TransformRule, UrlDecodePlusAndBadEscapes) {
    compile("http.uri; url_decode; content:\"q=a b\";");
    EXPECT_TRUE(match("/s?q=a+b"));
    EXPECT_TRUE(match("/s?q=a%20b"));
    EXPECT_FALSE(match("/s?q=a%2Bb"));
    compile("http.uri; url_decode; content:\"%zz\"; endswith;");
    EXPECT_TRUE(match("/x%zz"));  // left as it is
    compile("http.uri; url_decode; content:\"/%\"; endswith;");
    EXPECT_TRUE(match("/a/%"));
    EXPECT_TRUE(match("/a%2f%"));
}

TEST_F(TransformRule, ChainStripThenUppercase) {
    compile("http.uri; strip_whitespace; to_uppercase; content:\"/ADMIN\"; startswith;");
    EXPECT_EQ(rule_->buffers[0].transforms, 0x34u);
    EXPECT_TRUE(match("/ad min"));
    EXPECT_TRUE(match(" /A\td\nM i n/x"));
    EXPECT_FALSE(match("x/admin"));
}

TEST_F(TransformRule, OffsetAndDepthCountInTheTransformedBuffer) {
    // "x y abc" strips to "xyabc": "abc" at [2, 5).
    compile("http.uri; strip_whitespace; content:\"abc\"; offset:2; depth:3;");
    EXPECT_TRUE(match("x y abc"));
    EXPECT_TRUE(match("   x   y   abc   "));
    EXPECT_FALSE(match("x y zabc"));  // [3, 6)
    // "a%20b%20c" decodes to "a b c": "c" is at 4, not at 8.
    compile("http.uri; url_decode; content:\"c\"; offset:4; depth:1;");
    EXPECT_TRUE(match("a%20b%20c"));
    EXPECT_FALSE(match("a+b+xc"));
    // isdataat and bsize too.
    compile("http.uri; compress_whitespace; bsize:3;");
    EXPECT_TRUE(match("a     b"));
    EXPECT_FALSE(match("a  bc"));
    compile("http.uri; url_decode; content:\"A\"; isdataat:!1,relative;");
    EXPECT_TRUE(match("x%41"));
    EXPECT_FALSE(match("%41x"));
}

TEST_F(TransformRule, NocaseAfterUppercase) {
    // A lowercase content cannot meet an uppercased buffer unless it is nocase.
    compile("http.uri; to_uppercase; content:\"admin\"; nocase;");
    EXPECT_TRUE(match("/Admin"));
    EXPECT_TRUE(match("/ADMIN"));
    EXPECT_FALSE(match("/adm1n"));
    compile("http.uri; to_uppercase; content:\"/ADMIN\"; nocase; depth:6;");
    EXPECT_TRUE(match("/admin"));
    EXPECT_FALSE(match("//admin"));
}

TEST_F(TransformRule, EmptyAndAllWhitespaceBuffers) {
    compile("http.uri; strip_whitespace; content:\"a\";");
    EXPECT_FALSE(match(""));
    EXPECT_FALSE(match(" \t\r\n"));
    compile("http.uri; strip_whitespace; content:!\"a\";");
    EXPECT_TRUE(match(" b "));
    EXPECT_FALSE(match(" a "));
    compile("http.uri; compress_whitespace; content:\" \"; startswith; endswith;");
    EXPECT_TRUE(match(" \t\r\n\v\f "));  // any run of whitespace becomes exactly " "
    EXPECT_FALSE(match(" x "));
    compile("http.uri; url_decode; content:\"   \"; startswith; endswith;");
    EXPECT_TRUE(match("+%20+"));
}

TEST_F(TransformRule, ParseErrorsInsideARule) {
    EXPECT_EQ(reject("content:\"x\"; to_uppercase;"),
              "to_uppercase: must follow a sticky buffer (e.g. dns.query; to_uppercase;)");
    EXPECT_EQ(reject("http.uri; content:\"x\"; url_decode;"),
              "url_decode: transforms must directly follow the sticky buffer");
    EXPECT_EQ(reject("http.uri; strip_whitespace:1; content:\"x\";"),
              "strip_whitespace: takes no value");
    EXPECT_EQ(reject("http.uri; compress_whitespace; compress_whitespace; compress_whitespace; "
                     "compress_whitespace; compress_whitespace; compress_whitespace; "
                     "compress_whitespace; compress_whitespace; content:\"x\";"),
              "compress_whitespace: at most 7 transforms per buffer");
    // Keyword names are case-insensitive, as every rule keyword.
    compile("http.uri; URL_DECODE; content:\"a b\";");
    EXPECT_TRUE(match("a+b"));
}

}  // namespace
}  // namespace picket::sensor::detect
