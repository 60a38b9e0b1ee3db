// Shared fixture of the payload keyword tests: parse functions called directly on a hand-built
// ParseState, then inspect_buffer on byte strings. Each test file names its suite with an alias
// (using ContentKeyword = PayloadFixture;).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "sensor/detect/content_inspect.h"
#include "sensor/detect/keywords/keywords.h"
#include "sensor/detect/keywords/payload.h"

namespace picket::sensor::detect {

namespace kw = keywords;

class PayloadFixture : public ::testing::Test {
protected:
    PayloadFixture() { st.rule = &rule; }

    bool add(KeywordParseFn fn, std::string_view value, bool has_value = true) {
        err.clear();
        return fn(st, value, has_value, &err);
    }
    // Adds and expects success.
    void ok(KeywordParseFn fn, std::string_view value, bool has_value = true) {
        ASSERT_TRUE(add(fn, value, has_value)) << value << ": " << err;
    }
    // Links the options as the end of parse_rule does, then inspects.
    bool match(std::string_view data, size_t list = 0) {
        link_payload_options(rule.buffers.at(list));
        return inspect_buffer(rule.buffers.at(list), reinterpret_cast<const uint8_t*>(data.data()),
                              static_cast<uint32_t>(data.size()), pc, *scratch);
    }
    // Starts again on a fresh rule.
    void reset() {
        rule = Rule{};
        st = ParseState{};
        st.rule = &rule;
    }

    Rule rule;
    ParseState st;
    PacketContext pc;
    PayloadScratchPtr scratch = make_payload_scratch();
    std::string err;
};

}  // namespace picket::sensor::detect
