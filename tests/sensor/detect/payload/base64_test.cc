// base64_decode / base64_data (Suricata 7's base64 keywords): the RFC 4648 decoder, the
// options' parse accept/refuse cases, and matching on decoded data with bytes, offset and
// relative.
#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using Base64Keyword = PayloadFixture;

std::string decode(const std::string& in, uint32_t cap = 64) {
    std::string out(cap, '\0');
    const uint32_t n = payload::base64_decode_rfc4648(reinterpret_cast<const uint8_t*>(in.data()),
                                                      static_cast<uint32_t>(in.size()),
                                                      reinterpret_cast<uint8_t*>(out.data()), cap);
    out.resize(n);
    return out;
}

TEST(Base64Decoder, Rfc4648StopsAtTheFirstByteOutsideTheAlphabet) {
    EXPECT_EQ(decode("dGVzdA=="), "test");
    EXPECT_EQ(decode("dGVzdA"), "test");  // no padding: the whole bytes of the last group
    EXPECT_EQ(decode("dGVzdHM="), "tests");
    EXPECT_EQ(decode("dGVz dA=="), "tes");  // a space ends the data
    EXPECT_EQ(decode("SGVsbG8sIHdvcmxkIQ==xyz"), "Hello, world!");
    EXPECT_EQ(decode("+/+/"), "\xfb\xff\xbf");
    EXPECT_EQ(decode("d"), "");
    EXPECT_EQ(decode("=dGVzdA=="), "");
    EXPECT_EQ(decode("dGVzdA==", 2), "te");  // capped
}

TEST_F(Base64Keyword, ParseAcceptsAndRefuses) {
    ok(kw::parse_content, "\"x\"");
    ok(kw::parse_base64_decode, "bytes 300, offset 0, relative");
    const auto* b =
        payload::option_as<payload::Base64DecodeOption>(rule.buffers[0].options.back().get());
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->p.bytes, 300u);
    EXPECT_EQ(b->p.offset, 0u);
    EXPECT_TRUE(b->p.relative);
    ok(kw::parse_base64_decode, "", false);
    ok(kw::parse_base64_decode, "offset 0,relative");
    EXPECT_FALSE(add(kw::parse_base64_decode, "bytes 0"));
    EXPECT_EQ(err, "base64_decode: bytes must be 1 to 65535, got '0'");
    EXPECT_FALSE(add(kw::parse_base64_decode, "bytes 65536"));
    EXPECT_EQ(err, "base64_decode: bytes must be 1 to 65535, got '65536'");
    EXPECT_FALSE(add(kw::parse_base64_decode, "offset -1"));
    EXPECT_EQ(err, "base64_decode: offset must be 0 to 65535, got '-1'");
    EXPECT_FALSE(add(kw::parse_base64_decode, "bytes 4, bytes 5"));
    EXPECT_EQ(err,
              "base64_decode: unknown or repeated option 'bytes 5' (bytes <n>, offset <n>, "
              "relative)");
    EXPECT_FALSE(add(kw::parse_base64_data, "x"));
    EXPECT_EQ(err, "base64_data: takes no value");
    ok(kw::parse_base64_data, "", false);
    EXPECT_FALSE(add(kw::parse_base64_data, "", false));
    EXPECT_EQ(err, "base64_data: already given");
    EXPECT_FALSE(add(kw::parse_base64_decode, "", false));
    EXPECT_EQ(err, "base64_decode: not allowed after base64_data");

    reset();
    EXPECT_FALSE(add(kw::parse_base64_data, "", false));
    EXPECT_EQ(err, "base64_data: needs a base64_decode before it in the same buffer");
}

TEST_F(Base64Keyword, RelativeDecodeMatchesTheDecodedBytes) {
    // "<b>" then base64 of "SYSTEM secret".
    ok(kw::parse_content, "\"<b>\"");
    ok(kw::parse_base64_decode, "offset 0, relative");
    ok(kw::parse_base64_data, "", false);
    ok(kw::parse_content, "\"SYSTEM\"");
    ok(kw::parse_startswith, "", false);
    ok(kw::parse_content, "\"secret\"");
    ok(kw::parse_distance, "0");
    EXPECT_TRUE(match("xx<b>U1lTVEVNIHNlY3JldA==</b>"));
    EXPECT_FALSE(match("xx<b>U1lTVEVN</b>"));           // "SYSTEM" only
    EXPECT_FALSE(match("xx<b> U1lTVEVNIHNlY3JldA=="));  // a space: nothing decoded
    EXPECT_FALSE(match("U1lTVEVNIHNlY3JldA=="));        // no "<b>"
    // The second "<b>" is tried when the first one's data does not match.
    EXPECT_TRUE(match("<b>AAAA<b>U1lTVEVNIHNlY3JldA=="));
}

TEST_F(Base64Keyword, BytesAndAbsoluteOffset) {
    // bytes 4 from offset 2: "dGVz" -> "tes".
    ok(kw::parse_base64_decode, "bytes 4, offset 2");
    ok(kw::parse_base64_data, "", false);
    ok(kw::parse_content, "\"tes\"");
    ok(kw::parse_endswith, "", false);
    EXPECT_TRUE(match("..dGVzdHM="));
    reset();
    ok(kw::parse_base64_decode, "bytes 4, offset 2");
    ok(kw::parse_base64_data, "", false);
    ok(kw::parse_content, "\"test\"");
    EXPECT_FALSE(match("..dGVzdHM="));
    // Without bytes: to the end of the buffer ("dGVzdHM" -> "tests").
    reset();
    ok(kw::parse_base64_decode, "offset 2");
    ok(kw::parse_base64_data, "", false);
    ok(kw::parse_content, "\"tests\"");
    ok(kw::parse_endswith, "", false);
    EXPECT_TRUE(match("..dGVzdHM="));
    EXPECT_FALSE(match("...dGVzdHM="));  // offset 2 is a '.': nothing decoded
    EXPECT_FALSE(match(".."));           // offset at the end
}

TEST_F(Base64Keyword, DecodeWithoutDataOptionsNeverMatches) {
    ok(kw::parse_base64_decode, "", false);
    EXPECT_FALSE(match("dGVzdA=="));
}

}  // namespace
}  // namespace picket::sensor::detect
