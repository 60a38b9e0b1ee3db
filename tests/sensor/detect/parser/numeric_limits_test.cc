// Numeric limits as Suricata 7 parses them (issue #22, docs/rules.md "Numeric limits"): each
// numeric keyword at the edges of its range (0, max, max+1, negative, hex, ranges, blanks)
// through the whole rule parser. A case either loads or is refused with exactly the reason the
// diagnostic ("file:line sid N: reason") carries.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"

namespace picket::sensor::detect {
namespace {

struct Case {
    const char* proto;    // the rule's protocol
    const char* options;  // the options before "sid:1;"
    const char* reason;   // "" = loads
};

// The expected-form hint of the integer-keyword grammar for a maximum.
#define GRAMMAR(max) \
    "(expected N, !N, <N, <=N, >N, >=N, N-M, N<>M or !N-M with N from 0 to " max ")"
#define BYTEVAR " or a byte_extract/byte_math variable)"

const Case kCases[] = {
    // ttl: unsigned 8-bit integer keyword.
    {"ip", "ttl:0;", ""},
    {"ip", "ttl:255;", ""},
    {"ip", "ttl:256;", "ttl: value out of range 0-255 in '256'"},
    {"ip", "ttl:-1;", "ttl: invalid value '-1' " GRAMMAR("255")},
    {"ip", "ttl:0x40;", ""},
    {"ip", "ttl:0XfF;", ""},
    {"ip", "ttl:0x100;", "ttl: value out of range 0-255 in '0x100'"},
    {"ip", "ttl:0x;", "ttl: invalid value '0x' " GRAMMAR("255")},
    {"ip", "ttl: 10 - 20 ;", ""},
    {"ip", "ttl:> 254;", ""},
    {"ip", "ttl:10<>0x20;", ""},
    {"ip", "ttl:!3-7;", ""},
    {"ip", "ttl:7-3;", "ttl: invalid range '7-3' (the first value must be below the second)"},
    {"ip", "ttl:5-5;", "ttl: invalid range '5-5' (the first value must be below the second)"},
    {"ip", "ttl:>255;", "ttl: '>255' can never match (values are 0-255)"},
    {"ip", "ttl:<0;", "ttl: '<0' can never match (values are 0-255)"},
    {"ip", "ttl:<=255;", "ttl: '<=255' always matches (values are 0-255)"},
    {"ip", "ttl:>=0;", "ttl: '>=0' always matches (values are 0-255)"},
    {"ip", "ttl:<255;", ""},
    {"ip", "ttl:>=1;", ""},
    {"ip", "ttl:>-5;", "ttl: invalid value '>-5' " GRAMMAR("255")},
    {"ip", "ttl:<>5;", "ttl: invalid value '<>5' " GRAMMAR("255")},
    {"ip", "ttl:>1-5;", "ttl: invalid value '>1-5' " GRAMMAR("255")},
    // Bitmasks and unit suffixes are Suricata 8 additions: refused with the grammar.
    {"ip", "ttl:&0xc0=0x80;", "ttl: invalid value '&0xc0=0x80' " GRAMMAR("255")},
    {"ip", "ttl:1kb;", "ttl: invalid value '1kb' " GRAMMAR("255")},
    {"ip", "ttl:99999999999999999999999;",
     "ttl: value out of range 0-255 in '99999999999999999999999'"},
    // itype / icode: unsigned 8-bit.
    {"icmp", "itype:0x08;", ""},
    {"icmp", "itype:256;", "itype: value out of range 0-255 in '256'"},
    {"icmp", "icode:>254;", ""},
    {"icmp", "icode:>255;", "icode: '>255' can never match (values are 0-255)"},
    // dsize: unsigned 16-bit.
    {"tcp", "dsize:0;", ""},
    {"tcp", "dsize:65535;", ""},
    {"tcp", "dsize:65536;", "dsize: value out of range 0-65535 in '65536'"},
    {"tcp", "dsize:0x10;", ""},
    {"tcp", "dsize: 1 <> 0x20 ;", ""},
    {"tcp", "dsize:!1-5;", ""},
    {"tcp", "dsize:>=0;", "dsize: '>=0' always matches (values are 0-65535)"},
    {"tcp", "dsize:-1;", "dsize: invalid value '-1' " GRAMMAR("65535")},
    // bsize: unsigned 64-bit.
    {"tcp", "bsize:18446744073709551615;", ""},
    {"tcp", "bsize:4294967296;", ""},
    {"tcp", "bsize:0xffffffffffffffff;", ""},
    {"tcp", "bsize:18446744073709551616;",
     "bsize: value out of range 0-18446744073709551615 in '18446744073709551616'"},
    {"tcp", "bsize:>18446744073709551615;",
     "bsize: '>18446744073709551615' can never match (values are 0-18446744073709551615)"},
    // urilen: unsigned 16-bit, then ",raw" / ",norm".
    {"http", "urilen:65535;", ""},
    {"http", "urilen:0x10,raw;", ""},
    {"http", "urilen: 5<>10 , norm;", ""},
    {"http", "urilen:65536;", "urilen: value out of range 0-65535 in '65536'"},
    {"http", "urilen:-1,raw;", "urilen: invalid value '-1' " GRAMMAR("65535")},
    // dns.opcode: [!]N, unsigned 8-bit (Suricata 7's syntax).
    {"dns", "dns.opcode:0;", ""},
    {"dns", "dns.opcode:!15;", ""},
    {"dns", "dns.opcode:255;", ""},
    {"dns", "dns.opcode:256;", "dns.opcode: value out of range 0-255 in '256'"},
    {"dns", "dns.opcode:>1;",
     "dns.opcode: invalid value '>1' (expected N or !N with N from 0 to 255)"},
    // Exact-value header keywords.
    {"tcp", "window:65535;", ""},
    {"tcp", "window:!0;", ""},
    {"tcp", "window:65536;", "window: value out of range 0-65535 in '65536'"},
    {"tcp", "window:>5;", "window: invalid value '>5' (expected N or !N with N from 0 to 65535)"},
    {"ip", "id:65535;", ""},
    {"ip", "id:\"7\";", ""},
    {"ip", "id:65536;", "id: value out of range 0-65535 in '65536'"},
    {"tcp", "seq:4294967295;", ""},
    {"tcp", "seq:4294967296;", "seq: value out of range 0-4294967295 in '4294967296'"},
    {"tcp", "ack:0;", ""},
    {"tcp", "ack:-1;", "ack: invalid value '-1' (expected N with N from 0 to 4294967295)"},
    {"icmp", "icmp_id:65535;", ""},
    {"icmp", "icmp_id:65536;", "icmp_id: value out of range 0-65535 in '65536'"},
    {"icmp", "icmp_seq:0;", ""},
    {"icmp", "icmp_seq:70000;", "icmp_seq: value out of range 0-65535 in '70000'"},
    {"ip", "tos:0xff;", ""},
    {"ip", "tos:x1F;", ""},
    {"ip", "tos:256;", "tos: value out of range 0-255 in '256'"},
    // content modifiers: offset/depth unsigned 16-bit, distance/within +-1 MiB.
    {"tcp", "content:\"ab\"; offset:65535;", ""},
    {"tcp", "content:\"ab\"; offset:0x10;", ""},
    {"tcp", "content:\"ab\"; offset:65536;",
     "offset: invalid value '65536' (a number in [0, 65535] or a byte_extract variable)"},
    {"tcp", "content:\"ab\"; offset:-1;",
     "offset: invalid value '-1' (a number in [0, 65535] or a byte_extract variable)"},
    {"tcp", "content:\"ab\"; depth:65535;", ""},
    {"tcp", "content:\"ab\"; depth:1;", "depth: 1 is smaller than the content length 2"},
    {"tcp", "content:\"ab\"; depth:65536;",
     "depth: invalid value '65536' (a number in [0, 65535] or a byte_extract variable)"},
    {"tcp", "content:\"a\"; content:\"b\"; distance:1048576;", ""},
    {"tcp", "content:\"a\"; content:\"b\"; distance:-1048576;", ""},
    {"tcp", "content:\"a\"; content:\"b\"; distance:70000;", ""},
    {"tcp", "content:\"a\"; content:\"b\"; distance:1048577;",
     "distance: invalid value '1048577' (a number in [-1048576, 1048576] or a byte_extract "
     "variable)"},
    {"tcp", "content:\"a\"; content:\"b\"; distance:-1048577;",
     "distance: invalid value '-1048577' (a number in [-1048576, 1048576] or a byte_extract "
     "variable)"},
    {"tcp", "content:\"a\"; content:\"b\"; within:1048576;", ""},
    {"tcp", "content:\"a\"; content:\"b\"; within:1048577;",
     "within: invalid value '1048577' (a number in [-1048576, 1048576] or a byte_extract "
     "variable)"},
    {"tcp", "content:\"a\"; content:\"b\"; within:0;",
     "within: 0 is smaller than the content length 1"},
    // isdataat: 0-65535 or a byte variable.
    {"tcp", "isdataat:65535;", ""},
    {"tcp", "isdataat:!0,relative;", ""},
    {"tcp", "isdataat:65536;",
     "isdataat: invalid value '65536' (expected [!]N with N from 0 to 65535" BYTEVAR},
    {"tcp", "isdataat:-1;",
     "isdataat: invalid value '-1' (expected [!]N with N from 0 to 65535" BYTEVAR},
    // byte_test: binary 1-8 bytes (0 loads and never matches), string up to 20 decimal.
    {"tcp", "byte_test:8,=,18446744073709551615,0;", ""},
    {"tcp", "byte_test:0,=,1,0;", ""},
    {"tcp", "byte_test:2,=,0xffff,-65535;", ""},
    {"tcp", "byte_test:20,=,1,0,string,dec;", ""},
    {"tcp", "byte_test:9,=,1,0;",
     "byte_test: number of bytes must be 1..8 without 'string', got 9"},
    {"tcp", "byte_test:21,=,1,0,string,dec;",
     "byte_test: number of bytes must be 1..20 with 'string', got 21"},
    {"tcp", "byte_test:24,=,1,0;",
     "byte_test: invalid number of bytes '24' (0 to 8, up to 23 with string," BYTEVAR},
    {"tcp", "byte_test:1,=,1,65536;", "byte_test: invalid offset '65536' (-65535 to 65535" BYTEVAR},
    {"tcp", "byte_test:8,=,18446744073709551616,0;",
     "byte_test: invalid value '18446744073709551616' (0 to 18446744073709551615" BYTEVAR},
    {"tcp", "byte_test:1,=,-1,0;",
     "byte_test: invalid value '-1' (0 to 18446744073709551615" BYTEVAR},
    // byte_jump.
    {"tcp", "byte_jump:8,65535;", ""},
    {"tcp", "byte_jump:0,0,from_end,post_offset -8;", ""},
    {"tcp", "byte_jump:2,0,multiplier 65535,post_offset -65535;", ""},
    {"tcp", "byte_jump:9,0;", "byte_jump: number of bytes must be 1..8 without 'string', got 9"},
    {"tcp", "byte_jump:2,0,multiplier 65536;",
     "byte_jump: invalid multiplier 'multiplier 65536' (1 to 65535)"},
    {"tcp", "byte_jump:2,0,post_offset 65536;",
     "byte_jump: invalid post_offset 'post_offset 65536' (-65535 to 65535)"},
    {"tcp", "byte_jump:2,-65536;", "byte_jump: invalid offset '-65536' (-65535 to 65535" BYTEVAR},
    // byte_extract.
    {"tcp", "byte_extract:8,65535,v;", ""},
    {"tcp", "byte_extract:9,0,v;",
     "byte_extract: number of bytes must be 1..8 without 'string', got 9"},
    {"tcp", "byte_extract:0,0,v;",
     "byte_extract: invalid number of bytes '0' (1 to 8, up to 23 with string)"},
    {"tcp", "byte_extract:4,65536,v;", "byte_extract: invalid offset '65536' (-65535 to 65535)"},
    {"tcp", "byte_extract:4,0,v,multiplier 65536;",
     "byte_extract: invalid multiplier 'multiplier 65536' (1 to 65535)"},
    // byte_math.
    {"tcp", "byte_math:bytes 4, offset 0, oper +, rvalue 4294967295, result r;", ""},
    {"tcp", "byte_math:bytes 10, offset 0, oper +, rvalue 1, result r, string dec;", ""},
    {"tcp", "byte_math:bytes 4, offset 0, oper +, rvalue 4294967296, result r;",
     "byte_math: invalid rvalue '4294967296' (0 to 4294967295" BYTEVAR},
    {"tcp", "byte_math:bytes 5, offset 0, oper +, rvalue 1, result r;",
     "byte_math: number of bytes must be 1..4 without 'string', got 5"},
    {"tcp", "byte_math:bytes 11, offset 0, oper +, rvalue 1, result r, string dec;",
     "byte_math: invalid bytes '11' (1 to 10" BYTEVAR},
    {"tcp", "byte_math:bytes 1, offset 65536, oper +, rvalue 1, result r;",
     "byte_math: invalid offset '65536' (-65535 to 65535)"},
    // stream_size, flowint: unsigned 32-bit.
    {"tcp", "stream_size:server,<,4294967295;", ""},
    {"tcp", "stream_size:both,>=,0;", ""},
    {"tcp", "stream_size:server,<,4294967296;",
     "stream_size: invalid number '4294967296' (0 to 4294967295)"},
    {"tcp", "stream_size:server,<,-1;", "stream_size: invalid number '-1' (0 to 4294967295)"},
    {"tcp", "flowint:cnt,+,4294967295;", ""},
    {"tcp", "flowint:cnt,+,4294967296;", "flowint: invalid value '4294967296' (0 to 4294967295)"},
    // threshold / detection_filter: count 1-4294967295, seconds 0-4294967295.
    {"tcp", "threshold:type limit, track by_src, count 4294967295, seconds 4294967295;", ""},
    {"tcp", "threshold:type limit, track by_src, count 0, seconds 60;",
     "threshold: invalid count '0' (1 to 4294967295)"},
    {"tcp", "threshold:type limit, track by_src, count 1, seconds 4294967296;",
     "threshold: invalid seconds '4294967296' (0 to 4294967295)"},
    {"tcp", "detection_filter:track by_src, count 4294967296, seconds 1;",
     "detection_filter: invalid count '4294967296' (1 to 4294967295)"},
    {"tcp", "detection_filter:track by_dst, count 1, seconds -1;",
     "detection_filter: invalid seconds '-1' (0 to 4294967295)"},
};

#undef GRAMMAR
#undef BYTEVAR

TEST(NumericLimits, EachKeywordAtItsEdges) {
    FlowbitRegistry flowbits;
    ParseEnv env;
    env.flowbits = &flowbits;
    for (const Case& c : kCases) {
        const std::string text =
            std::string("alert ") + c.proto + " any any -> any any (" + c.options + " sid:1;)";
        RuleDiagnostic d;
        const std::unique_ptr<Rule> r = parse_rule(text, env, &d);
        if (c.reason[0] == '\0') {
            EXPECT_NE(r, nullptr) << text << "\n -> " << d.reason;
        } else {
            EXPECT_EQ(r, nullptr) << text;
            EXPECT_EQ(d.reason, c.reason) << text;
            EXPECT_EQ(d.sid, 1u) << text;
        }
    }
}

// What a value means does not depend on how it is written: hex, blanks and quotes give the
// same comparison as the plain decimal form.
TEST(NumericLimits, SpellingsMeanTheSame) {
    FlowbitRegistry flowbits;
    ParseEnv env;
    env.flowbits = &flowbits;
    const char* pairs[][2] = {
        {"ttl:0x40;", "ttl:64;"},
        {"ttl: > 0x0a ;", "ttl:>10;"},
        {"ttl:\" 10 <> 20 \";", "ttl:10-20;"},
        {"dsize:0x10;", "dsize:16;"},
        {"dsize: 1 <> 0x20 ;", "dsize:1<>32;"},
        {"itype:0X08;", "itype:8;"},
        {"tos:x1f;", "tos:31;"},
        {"content:\"ab\"; offset:0x10;", "content:\"ab\"; offset:16;"},
    };
    for (const auto& p : pairs) {
        RuleDiagnostic d1, d2;
        const auto a =
            parse_rule(std::string("alert tcp any any -> any any (") + p[0] + " sid:1;)", env, &d1);
        const auto b =
            parse_rule(std::string("alert tcp any any -> any any (") + p[1] + " sid:1;)", env, &d2);
        ASSERT_NE(a, nullptr) << p[0] << ": " << d1.reason;
        ASSERT_NE(b, nullptr) << p[1] << ": " << d2.reason;
        ASSERT_EQ(a->header_options.size(), b->header_options.size()) << p[0];
        for (size_t i = 0; i < a->header_options.size(); ++i) {
            EXPECT_EQ(a->header_options[i]->hash(), b->header_options[i]->hash()) << p[0];
            EXPECT_TRUE(a->header_options[i]->equals(*b->header_options[i])) << p[0];
        }
        ASSERT_EQ(a->buffers.size(), b->buffers.size()) << p[0];
        for (size_t i = 0; i < a->buffers.size(); ++i) {
            ASSERT_EQ(a->buffers[i].options.size(), b->buffers[i].options.size()) << p[0];
            for (size_t k = 0; k < a->buffers[i].options.size(); ++k) {
                EXPECT_TRUE(a->buffers[i].options[k]->equals(*b->buffers[i].options[k])) << p[0];
            }
        }
    }
}

}  // namespace
}  // namespace picket::sensor::detect
