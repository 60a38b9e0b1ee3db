// Helpers for the header keyword tests: a rule under construction and a hand-built packet.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "sensor/decode/decode.h"
#include "sensor/detect/flowbits.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/rule.h"

namespace picket::sensor::detect::test {

struct Fixture {
    Rule rule;
    FlowbitRegistry registry;
    ParseState st;
    std::string error;
    Fixture() {
        st.rule = &rule;
        st.flowbits = &registry;
    }
    // Parses one keyword; returns success.
    bool parse(KeywordParseFn fn, std::string_view value, bool has_value = true) {
        error.clear();
        return fn(st, value, has_value, &error);
    }
    // Evaluates every header option of the rule.
    bool match(const PacketContext& pc) const {
        for (const auto& o : rule.header_options) {
            if (!o->match(pc)) {
                return false;
            }
        }
        return true;
    }
};

inline decode::Address v4(const char* s) {
    uint8_t b[4];
    inet_pton(AF_INET, s, b);
    return decode::Address::from_v4(b);
}

inline decode::Packet tcp_packet(uint8_t flags) {
    decode::Packet p;
    p.flags = decode::kFlagIpv4 | decode::kFlagTcp;
    p.ip_version = 4;
    p.proto = 6;
    p.tcp_flags = flags;
    p.src = v4("10.0.0.1");
    p.dst = v4("10.0.0.2");
    return p;
}

inline PacketContext ctx(const decode::Packet& p) {
    PacketContext pc;
    pc.p = &p;
    return pc;
}

// 1 = parsed and matched, 0 = parsed and did not match, -1 = parse error.
inline int eval(KeywordParseFn fn, std::string_view value, const decode::Packet& p) {
    Fixture f;
    if (!f.parse(fn, value)) {
        return -1;
    }
    return f.match(ctx(p)) ? 1 : 0;
}

// The error of a value the keyword must refuse (and the refusal leaves no option behind).
inline std::string parse_error(KeywordParseFn fn, std::string_view value, bool has_value = true) {
    Fixture f;
    EXPECT_FALSE(f.parse(fn, value, has_value)) << value;
    EXPECT_TRUE(f.rule.header_options.empty()) << value;
    return f.error;
}

}  // namespace picket::sensor::detect::test
