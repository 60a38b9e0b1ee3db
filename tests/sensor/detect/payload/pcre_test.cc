// Payload keyword pcre.
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using PcreKeyword = PayloadFixture;

TEST_F(PcreKeyword, PcreBasicAndCaseless) {
    ok(kw::parse_pcre, "\"/ab+c/i\"");
    EXPECT_TRUE(match("xxABBBC"));
    EXPECT_FALSE(match("xxac"));
    reset();
    ok(kw::parse_pcre, "\"/^GET/\"");
    EXPECT_TRUE(match("GET /"));
    EXPECT_FALSE(match(" GET /"));
}

TEST_F(PcreKeyword, PcreRelativeAndCursor) {
    ok(kw::parse_content, "\"key=\"");
    ok(kw::parse_pcre, "\"/^[0-9]+/R\"");
    EXPECT_TRUE(match("key=123"));
    EXPECT_FALSE(match("key=x123"));
    EXPECT_TRUE(match("key=x key=42"));  // backtracks to the second "key="
    reset();
    ok(kw::parse_pcre, "\"/a+/\"");
    ok(kw::parse_content, "\"b\"");
    ok(kw::parse_within, "1");  // pcre sets the cursor to the end of its match
    EXPECT_TRUE(match("aaa-aab"));
    EXPECT_FALSE(match("aaa-aa-b"));
}

TEST_F(PcreKeyword, PcreNegatedAndBufferFlag) {
    ok(kw::parse_pcre, "!\"/admin/\"");
    EXPECT_TRUE(match("user"));
    EXPECT_FALSE(match("the admin"));
    reset();
    ok(kw::parse_content, "\"x\"");
    ok(kw::parse_pcre, "\"/\\/index\\.php/U\"");
    ASSERT_EQ(rule.buffers.size(), 2u);
    EXPECT_EQ(rule.buffers[1].buffer, BufferId::kHttpUri);
    EXPECT_EQ(st.current, &rule.buffers[0]);
    EXPECT_TRUE(match("/index.php", 1));
}

TEST_F(PcreKeyword, PcreErrors) {
    EXPECT_FALSE(add(kw::parse_pcre, "\"/x(/\""));
    EXPECT_EQ(err, "bad pcre '/x(/': missing closing parenthesis at offset 2");
    EXPECT_FALSE(add(kw::parse_pcre, "!\"/x/q\""));
    EXPECT_EQ(err, "bad pcre '!/x/q': unknown flag 'q'");
    EXPECT_FALSE(add(kw::parse_pcre, "\"x\""));
    EXPECT_EQ(err, "bad pcre 'x': expected /regex/flags");
    st.sticky = BufferId::kHttpHost;
    EXPECT_FALSE(add(kw::parse_pcre, "\"/x/U\""));
    EXPECT_EQ(err, "bad pcre '/x/U': buffer flag conflicts with the sticky buffer '" +
                       std::string(buffer_def(BufferId::kHttpHost).name) + "'");
}

// ET Open writes "file.data; pcre:/.../QR": Q (the response body) under file.data is the file.
TEST_F(PcreKeyword, ResponseBodyFlagUnderFileDataIsTheFile) {
    st.sticky = BufferId::kFileData;
    EXPECT_TRUE(add(kw::parse_pcre, "\"/^\\d{5}/QR\"")) << err;
    st.sticky = BufferId::kHttpUri;
    EXPECT_FALSE(add(kw::parse_pcre, "\"/x/Q\""));
}

TEST_F(PcreKeyword, PcreWithoutJit) {
    st.pcre_jit = false;
    ok(kw::parse_pcre, "\"/a.c/s\"");
    EXPECT_TRUE(match("a\nc"));
    EXPECT_FALSE(match("abd"));
}

}  // namespace
}  // namespace picket::sensor::detect
