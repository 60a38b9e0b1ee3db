// Payload keyword asn1 (keywords/asn1.cc): the option grammar and its refusals (the cases of
// Suricata 7's parser tests), and the checks on BER elements (its detection tests, X.690's
// example A.3, nesting, indefinite lengths, truncation, the frame and depth bounds, offsets).
#include <gtest/gtest.h>

#include <string>

#include "tests/sensor/detect/payload/payload_fixture.h"

namespace picket::sensor::detect {
namespace {

using Asn1Keyword = PayloadFixture;
using Params = payload::Asn1Option::Params;

// X.690 (07/2002) Annex A.3: a PersonnelRecord, 136 bytes, whose outer element (60 81 85) is
// 133 bytes long.
const std::string kA3 = std::string(
    "\x60\x81\x85\x61\x10\x1A\x04"
    "John"
    "\x1A\x01"
    "P"
    "\x1A\x05"
    "Smith"
    "\xA0\x0A\x1A\x08"
    "Director"
    "\x42\x01\x33\xA1\x0A\x43\x08"
    "19710917"
    "\xA2\x12\x61\x10\x1A\x04"
    "Mary"
    "\x1A\x01"
    "T"
    "\x1A\x05"
    "Smith"
    "\xA3\x42\x31\x1F\x61\x11\x1A\x05"
    "Ralph"
    "\x1A\x01"
    "T"
    "\x1A\x05"
    "Smith"
    "\xA0\x0A\x43\x08"
    "19571111"
    "\x31\x1F\x61\x11\x1A\x05"
    "Susan"
    "\x1A\x01"
    "B"
    "\x1A\x05"
    "Jones"
    "\xA0\x0A\x43\x08"
    "19590717",
    136);

std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int c : b) {
        s.push_back(static_cast<char>(c));
    }
    return s;
}

// A universal primitive REAL: 09 82 HH LL, then len bytes of 0x05 (decimal encoding, NR5).
std::string real(uint32_t len) {
    return bytes({0x09, 0x82, static_cast<int>(len >> 8), static_cast<int>(len & 0xff)}) +
           std::string(len, '\x05');
}

const Params& params(const Rule& r) {
    return static_cast<const payload::Asn1Option&>(*r.buffers.at(0).options.back()).p;
}

TEST_F(Asn1Keyword, ParsesOptions) {
    ok(kw::parse_asn1, "oversize_length 1024");
    EXPECT_EQ(params(rule), (Params{false, false, true, 1024, false, 0, false, 0}));
    reset();
    ok(kw::parse_asn1, "oversize_length 0");
    EXPECT_EQ(params(rule), (Params{false, false, true, 0, false, 0, false, 0}));
    reset();
    ok(kw::parse_asn1, "oversize_length 4294967295");
    EXPECT_EQ(params(rule).oversize_length, 4294967295u);
    reset();
    ok(kw::parse_asn1, "absolute_offset 65535");
    EXPECT_EQ(params(rule), (Params{false, false, false, 0, true, 65535, false, 0}));
    reset();
    ok(kw::parse_asn1, "relative_offset -65535");
    EXPECT_EQ(params(rule), (Params{false, false, false, 0, false, 0, true, -65535}));
    reset();
    ok(kw::parse_asn1, "relative_offset 65535");
    EXPECT_EQ(params(rule).relative_offset, 65535);
    reset();
    ok(kw::parse_asn1, "bitstring_overflow");
    EXPECT_EQ(params(rule), (Params{true, false, false, 0, false, 0, false, 0}));
    reset();
    ok(kw::parse_asn1, "double_overflow");
    EXPECT_EQ(params(rule), (Params{false, true, false, 0, false, 0, false, 0}));
    // Separated by commas, blanks or both, newlines included; a trailing comma.
    reset();
    ok(kw::parse_asn1, "oversize_length 1024 absolute_offset 10, bitstring_overflow");
    EXPECT_EQ(params(rule), (Params{true, false, true, 1024, true, 10, false, 0}));
    reset();
    ok(kw::parse_asn1,
       "\n\t double_overflow, oversize_length 1024 relative_offset 10,\n "
       "bitstring_overflow");
    EXPECT_EQ(params(rule), (Params{true, true, true, 1024, false, 0, true, 10}));
    reset();
    ok(kw::parse_asn1, "oversize_length 1024,");
    EXPECT_EQ(params(rule).oversize_length, 1024u);
    // ET Open's form (sids 2102383, 2103001-2103003).
    reset();
    ok(kw::parse_asn1,
       "double_overflow, bitstring_overflow, relative_offset 54, "
       "oversize_length 2048");
    EXPECT_EQ(params(rule), (Params{true, true, true, 2048, false, 0, true, 54}));
    EXPECT_EQ(rule.buffers.at(0).buffer, BufferId::kPacket);
}

TEST_F(Asn1Keyword, RefusesBadOptions) {
    auto refused = [this](std::string_view v, bool has_value = true) {
        reset();
        EXPECT_FALSE(add(kw::parse_asn1, v, has_value)) << v;
        EXPECT_TRUE(rule.buffers.empty()) << v;
        return err;
    };
    const std::string need =
        "asn1: an option is required (bitstring_overflow, double_overflow, oversize_length N, "
        "absolute_offset N, relative_offset N)";
    EXPECT_EQ(refused("", false), need);
    EXPECT_EQ(refused(" "), need);
    EXPECT_EQ(refused("oversize_length -1"),
              "asn1: oversize_length needs a number from 0 to 4294967295, got '-1'");
    EXPECT_EQ(refused("oversize_length 4294967296"),
              "asn1: oversize_length needs a number from 0 to 4294967295, got '4294967296'");
    EXPECT_EQ(refused("oversize_length"),
              "asn1: oversize_length needs a number from 0 to 4294967295, got ''");
    EXPECT_EQ(refused("oversize_length 0x10"),
              "asn1: oversize_length needs a number from 0 to 4294967295, got '0x10'");
    EXPECT_EQ(refused("absolute_offset -1"),
              "asn1: absolute_offset needs a number from 0 to 65535, got '-1'");
    EXPECT_EQ(refused("absolute_offset 65536"),
              "asn1: absolute_offset needs a number from 0 to 65535, got '65536'");
    EXPECT_EQ(refused("absolute_offset"),
              "asn1: absolute_offset needs a number from 0 to 65535, got ''");
    EXPECT_EQ(refused("relative_offset -65536"),
              "asn1: relative_offset needs a number from -65535 to 65535, got '-65536'");
    EXPECT_EQ(refused("relative_offset 65536"),
              "asn1: relative_offset needs a number from -65535 to 65535, got '65536'");
    EXPECT_EQ(refused("relative_offset, bitstring_overflow"),
              "asn1: relative_offset needs a number from -65535 to 65535, got ''");
    EXPECT_EQ(refused("oversize_length 1024, some_other_param 360"),
              "asn1: unknown option 'some_other_param'");
    EXPECT_EQ(refused("oversize_length 1024,,"), "asn1: empty option in 'oversize_length 1024,,'");
    EXPECT_EQ(refused(",bitstring_overflow"), "asn1: empty option in ',bitstring_overflow'");
    EXPECT_EQ(refused("bitstring_overflowabsolute_offset"),
              "asn1: unknown option 'bitstring_overflowabsolute_offset'");
    EXPECT_EQ(refused("BITSTRING_OVERFLOW"), "asn1: unknown option 'BITSTRING_OVERFLOW'");
}

TEST_F(Asn1Keyword, OversizeLength) {
    ok(kw::parse_asn1, "oversize_length 132, absolute_offset 0");
    EXPECT_TRUE(match(kA3));
    reset();
    ok(kw::parse_asn1, "oversize_length 133 absolute_offset 0");
    EXPECT_FALSE(match(kA3));
    // A nested element: the longest child of A.3 is A3 42 (66 bytes).
    reset();
    ok(kw::parse_asn1, "oversize_length 65, absolute_offset 3");
    EXPECT_TRUE(match(kA3));
    reset();
    ok(kw::parse_asn1, "oversize_length 66, absolute_offset 3");
    EXPECT_FALSE(match(kA3));
    // No offset: byte 0.
    reset();
    ok(kw::parse_asn1, "oversize_length 132");
    EXPECT_TRUE(match(kA3));
}

TEST_F(Asn1Keyword, BitstringOverflow) {
    ok(kw::parse_asn1, "bitstring_overflow, absolute_offset 0");
    EXPECT_TRUE(match(bytes({0x03, 0x01, 0xFF})));
    EXPECT_TRUE(match(bytes({0x03, 0x01, 0x09})));   // 9 unused bits of 8
    EXPECT_FALSE(match(bytes({0x03, 0x01, 0x08})));  // 8 of 8: not more than the length
    EXPECT_FALSE(match(bytes({0x03, 0x01, 0x07})));
    EXPECT_FALSE(match(bytes({0x03, 0x02, 0x10, 0x00})));  // 16 of 16
    EXPECT_TRUE(match(bytes({0x03, 0x02, 0x11, 0x00})));
    // Constructed (23), or not universal (83: context-specific [3]): not checked.
    EXPECT_FALSE(match(bytes({0x23, 0x03, 0x03, 0x01, 0x07})));
    EXPECT_FALSE(match(bytes({0x83, 0x01, 0xFF})));
    // Inside a SEQUENCE, and inside an indefinite-length one (ended by 00 00).
    EXPECT_TRUE(match(bytes({0x30, 0x03, 0x03, 0x01, 0xFF})));
    EXPECT_TRUE(match(bytes({0x30, 0x80, 0x03, 0x01, 0xFF, 0x00, 0x00})));
    // An indefinite length without its end-of-contents is malformed: not checked.
    EXPECT_FALSE(match(bytes({0x30, 0x80, 0x03, 0x01, 0xFF})));
    // In the second top-level element.
    EXPECT_TRUE(match(bytes({0x05, 0x00, 0x03, 0x01, 0xFF})));
    // The high tag number form (1F 03: universal tag 3 written long) is a BIT STRING too.
    EXPECT_TRUE(match(bytes({0x1F, 0x03, 0x01, 0xFF})));
}

TEST_F(Asn1Keyword, DoubleOverflow) {
    ok(kw::parse_asn1, "double_overflow, absolute_offset 0");
    EXPECT_TRUE(match(real(257)));
    EXPECT_FALSE(match(real(256)));
    // Binary encoding (first byte 0x80): not the decimal form the overflow needs.
    std::string binary = real(300);
    binary[4] = '\x80';
    EXPECT_FALSE(match(binary));
    // Not a REAL (OCTET STRING 04 of the same length).
    std::string octets = real(300);
    octets[0] = '\x04';
    EXPECT_FALSE(match(octets));
}

TEST_F(Asn1Keyword, Offsets) {
    // relative_offset from the end of the previous content (Suricata's "AA" test).
    ok(kw::parse_content, "\"AA\"");
    ok(kw::parse_asn1, "relative_offset 0, oversize_length 130");
    EXPECT_TRUE(match("AA" + kA3));
    // From 'x': 78 60 is an element whose first child (81 85 ...) runs past the end.
    EXPECT_FALSE(match("AAx" + kA3));
    reset();
    ok(kw::parse_content, "\"AA\"");
    ok(kw::parse_asn1, "relative_offset 1, oversize_length 130");
    EXPECT_TRUE(match("AAx" + kA3));
    // Negative: back from the end of "John" (byte 11) to the start of A.3.
    reset();
    ok(kw::parse_content, "\"John\"");
    ok(kw::parse_asn1, "relative_offset -11, oversize_length 130");
    EXPECT_TRUE(match(kA3));
    reset();
    ok(kw::parse_content, "\"John\"");
    ok(kw::parse_asn1, "relative_offset -10, oversize_length 130");
    EXPECT_FALSE(match(kA3));  // from byte 1: 81 85 ... is no element that fits
    // Before the buffer's start, or at or past its end: no match.
    reset();
    ok(kw::parse_content, "\"John\"");
    ok(kw::parse_asn1, "relative_offset -12, oversize_length 0");
    EXPECT_FALSE(match(kA3));
    reset();
    ok(kw::parse_asn1, "absolute_offset 3, oversize_length 0");
    EXPECT_FALSE(match(bytes({0x04, 0x01, 0x41})));
    EXPECT_TRUE(match(bytes({0x00, 0x00, 0x00, 0x04, 0x01, 0x41})));
    EXPECT_FALSE(match(""));
    // absolute_offset wins over relative_offset when both are given, as in Suricata.
    reset();
    ok(kw::parse_content, "\"AA\"");
    ok(kw::parse_asn1, "relative_offset 0, absolute_offset 0, oversize_length 130");
    EXPECT_FALSE(match("AA" + kA3));
    EXPECT_TRUE(match(kA3 + "AA"));
}

TEST_F(Asn1Keyword, TruncatedAndMalformed) {
    ok(kw::parse_asn1, "oversize_length 100, bitstring_overflow");
    // An OCTET STRING claiming 4096 bytes with 3 present runs past the buffer: not checked.
    EXPECT_FALSE(match(bytes({0x04, 0x82, 0x10, 0x00, 0x41, 0x42, 0x43})));
    // Likewise a SEQUENCE whose child runs past the SEQUENCE's end: the whole element is
    // dropped, its well-formed bit string included.
    EXPECT_FALSE(match(bytes({0x30, 0x04, 0x03, 0x01, 0xFF, 0x04, 0x05})));
    // An element decoded whole before a malformed one still counts; one after it does not.
    EXPECT_TRUE(match(bytes({0x03, 0x01, 0xFF, 0x04, 0x05, 0x00})));
    EXPECT_FALSE(match(bytes({0x04, 0x05, 0x00, 0x03, 0x01, 0xFF})));
    // Reserved length 0xFF, a length of 9 bytes, an indefinite primitive, a 5-digit tag.
    EXPECT_FALSE(match(bytes({0x03, 0xFF, 0x03, 0x01, 0xFF})));
    EXPECT_FALSE(match(bytes({0x04, 0x89, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x41})));
    EXPECT_FALSE(match(bytes({0x03, 0x80, 0x03, 0x01, 0xFF, 0x00, 0x00})));
    EXPECT_FALSE(match(bytes({0x1F, 0x81, 0x81, 0x81, 0x81, 0x01, 0x01, 0xFF})));
    // A long-form length of 8 bytes is fine when it fits.
    EXPECT_TRUE(match(bytes({0x03, 0x88, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF})));
}

TEST_F(Asn1Keyword, FrameAndDepthBounds) {
    ok(kw::parse_asn1, "bitstring_overflow");
    std::string nulls;
    for (int i = 0; i < 29; ++i) {
        nulls += bytes({0x05, 0x00});
    }
    // 30 top-level elements: decoded.
    EXPECT_TRUE(match(nulls + bytes({0x03, 0x01, 0xFF})));
    // 31: Suricata gives the whole decoding up, even with the hit in the first element.
    EXPECT_FALSE(match(nulls + bytes({0x05, 0x00, 0x03, 0x01, 0xFF})));
    EXPECT_FALSE(match(bytes({0x03, 0x01, 0xFF}) + nulls + bytes({0x05, 0x00})));
    // Nesting: the bit string at depth 29 (30 levels) is decoded, at depth 30 it is not.
    auto nest = [](int levels) {
        std::string s = bytes({0x03, 0x01, 0xFF});
        for (int i = 0; i < levels; ++i) {
            s = bytes({0x30, static_cast<int>(s.size())}) + s;
        }
        return s;
    };
    EXPECT_TRUE(match(nest(29)));
    EXPECT_FALSE(match(nest(30)));
}

TEST_F(Asn1Keyword, SharedWhenEqual) {
    ok(kw::parse_asn1, "bitstring_overflow, relative_offset -3");
    ok(kw::parse_asn1, "relative_offset -3 bitstring_overflow");
    ok(kw::parse_asn1, "relative_offset 3 bitstring_overflow");
    const auto& o = rule.buffers.at(0).options;
    EXPECT_TRUE(o[0]->equals(*o[1]));
    EXPECT_EQ(o[0]->hash(), o[1]->hash());
    EXPECT_FALSE(o[0]->equals(*o[2]));
    EXPECT_NE(o[0]->hash(), o[2]->hash());
    EXPECT_STREQ(o[0]->keyword(), "asn1");
}

}  // namespace
}  // namespace picket::sensor::detect
