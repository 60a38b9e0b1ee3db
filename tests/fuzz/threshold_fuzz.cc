// libFuzzer target for threshold.config (sensor/detect/threshold.*): suppress, threshold,
// event_filter and rate_filter lines, '\' continuations, comments, $VAR addresses. The input
// is the file text up to a NUL byte; what follows the NUL drives matches: when the file
// parses, a ThresholdTable is built from it, bound to four rules (two with their own
// threshold / detection_filter) and check() is called for matches of those rules between
// addresses and at times taken from the remaining bytes, with a tiny table so that eviction
// is reached. The same text also goes through parse_suppress_addresses().
// Seed corpus: tests/fuzz/corpus/threshold.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/detect/parser.h"
#include "sensor/detect/threshold.h"

using namespace picket::sensor;
using namespace picket::sensor::detect;

namespace {

const std::vector<std::unique_ptr<Rule>>& rules() {
    static const std::vector<std::unique_ptr<Rule>> r = [] {
        std::vector<std::unique_ptr<Rule>> out;
        ParseEnv env;
        env.file = "threshold_fuzz.rules";
        const char* texts[] = {
            "alert tcp any any -> any any (msg:\"a\"; sid:1; rev:1;)",
            "alert tcp any any -> any any (msg:\"b\"; threshold:type both, track by_dst, count "
            "2, seconds 10; sid:2; rev:1;)",
            "alert udp any any -> any any (msg:\"c\"; detection_filter:track by_src, count 3, "
            "seconds 5; sid:3; rev:1;)",
            "alert ip any any -> any any (msg:\"d\"; gid:5; sid:1; rev:1;)",
        };
        for (const char* t : texts) {
            RuleDiagnostic diag;
            auto rule = parse_rule(t, env, &diag);
            if (rule == nullptr) {
                __builtin_trap();  // the harness's own rules must parse
            }
            out.push_back(std::move(rule));
        }
        return out;
    }();
    return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 32768) {
        return 0;
    }
    const char* begin = reinterpret_cast<const char*>(data);
    const void* nul = std::memchr(data, 0, size);
    const size_t text_len =
        nul == nullptr ? size : static_cast<size_t>(static_cast<const uint8_t*>(nul) - data);
    const std::string_view text(begin, text_len);
    static const AddressVars vars = {{"HOME_NET", "[10.0.0.0/8,192.168.0.0/16]"},
                                     {"EXTERNAL_NET", "!$HOME_NET"},
                                     {"LOOP", "$LOOP"},
                                     {"DNS_SERVERS", "[8.8.8.8, 2001:db8::1]"}};

    AddressSet set;
    std::string error;
    (void)parse_suppress_addresses(text, &vars, &set, &error);

    ThresholdConfig config;
    std::vector<std::string> errors;
    (void)parse_threshold_config(text, "threshold.config", &vars, &config, &errors);
    for (const SuppressEntry& s : config.suppress) {
        (void)s.contains(decode::Address{});
    }

    ThresholdOptions options;
    options.max_entries = 8;
    options.stripes = 2;
    ThresholdTable table(std::move(config), options);
    std::vector<const Rule*> bound;
    for (const auto& r : rules()) {
        bound.push_back(r.get());
    }
    (void)table.bind(bound);

    // Matches: [rule: 2 bits | src: 3 bits | dst: 3 bits][dt: 1 byte, in 1/4 s] each.
    int64_t ts = 1000000000;
    size_t pos = nul == nullptr ? size : text_len + 1;
    for (; pos + 2 <= size; pos += 2) {
        const uint8_t c = data[pos];
        const Rule& r = *rules()[c & 3];
        uint8_t s4[4] = {10, 0, 0, static_cast<uint8_t>((c >> 2) & 7)};
        uint8_t d4[4] = {192, 168, 1, static_cast<uint8_t>(c >> 5)};
        uint8_t d6[16] = {0x20, 0x01, 0x0d, 0xb8};
        d6[15] = 1;
        const decode::Address src = decode::Address::from_v4(s4);
        const decode::Address dst =
            (c >> 5) == 7 ? decode::Address::from_v6(d6) : decode::Address::from_v4(d4);
        ts += static_cast<int64_t>(data[pos + 1]) * 250000000;
        if (table.applies(r)) {
            (void)table.check(r, src, dst, ts);
        }
        const ThresholdStats st = table.stats();
        if (st.entries > options.max_entries) {
            __builtin_trap();  // bounded memory
        }
    }
    return 0;
}
