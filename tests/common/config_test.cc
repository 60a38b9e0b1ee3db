#include "common/config.h"

#include <gtest/gtest.h>

#include "common/stats.h"
#include "common/time_util.h"

namespace picket {
namespace {

TEST(ConfigTest, ReadsNestedValuesWithDefaults) {
    Config c = Config::load_string("flow:\n  memcap: 64mb\n  hash-size: 1024\nstats-interval: 8\n");
    EXPECT_EQ(c.get_size("flow.memcap", 0), 64ULL * 1024 * 1024);
    EXPECT_EQ(c.get_int("flow.hash-size", 0), 1024);
    EXPECT_EQ(c.get_int("stats-interval", 0), 8);
    EXPECT_EQ(c.get_int("missing.key", 42), 42);
    EXPECT_FALSE(c.has("missing"));
}

TEST(ConfigTest, SetOverridesAndCreatesKeys) {
    Config c = Config::load_string("defrag:\n  policy: bsd\n");
    c.set("defrag.policy=linux");
    c.set("stream.midstream=true");
    c.set("vars.address-groups.HOME_NET=[10.0.0.0/8]");
    EXPECT_EQ(c.get_string("defrag.policy", ""), "linux");
    EXPECT_TRUE(c.get_bool("stream.midstream", false));
    EXPECT_EQ(c.get_string_list("vars.address-groups.HOME_NET"),
              std::vector<std::string>{"10.0.0.0/8"});
}

TEST(ConfigTest, BadValuesNameFileLineAndKey) {
    Config c = Config::load_string("a: 1\nflow:\n  memcap: lots\n", "sensor.yaml");
    try {
        c.get_size("flow.memcap", 0);
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "sensor.yaml:3: flow.memcap: expected a size such as 65536, 64kb, 32mb or 1gb, "
                  "got 'lots'");
    }
    EXPECT_THROW(c.get_int("a", 0, 5, 10), ConfigError);
    EXPECT_THROW(c.set("novalue"), ConfigError);
    EXPECT_THROW(c.set("a..b=1"), ConfigError);
}

TEST(ConfigTest, BadYamlNamesLine) {
    try {
        Config::load_string("a: 1\nb: [1, 2\n", "x.yaml");
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("x.yaml:"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("bad YAML"), std::string::npos) << e.what();
    }
}

TEST(ConfigTest, ChoiceListsAllowedWords) {
    Config c = Config::load_string("mode: turbo\n", "s.yaml");
    try {
        c.get_choice("mode", "pcap", {"pcap", "afpacket"});
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "s.yaml:1: mode: expected one of pcap, afpacket, got 'turbo'");
    }
}

TEST(ConfigTest, ParsesSizesAndDurations) {
    uint64_t v = 0;
    EXPECT_TRUE(parse_size("1gb", &v));
    EXPECT_EQ(v, 1ULL << 30);
    EXPECT_TRUE(parse_size("512KB", &v));
    EXPECT_EQ(v, 512ULL * 1024);
    EXPECT_FALSE(parse_size("12xb", &v));
    EXPECT_FALSE(parse_size("", &v));
    EXPECT_FALSE(parse_size("99999999999999999999", &v));
    Config c = Config::load_string("t1: 2m\nt2: 30\n");
    EXPECT_EQ(c.get_seconds("t1", 0), 120);
    EXPECT_EQ(c.get_seconds("t2", 0), 30);
}

TEST(StatsSnapshotTest, MergeSums) {
    StatsSnapshot a, b;
    a.add("decoder.pkts", 3);
    b.add("decoder.pkts", 4);
    b.set("flow.active", 2);
    a.merge(b);
    EXPECT_EQ(a.get("decoder.pkts"), 7u);
    EXPECT_EQ(a.get("flow.active"), 2u);
}

TEST(TimeTest, EveTimestampFormat) {
    EXPECT_EQ(format_eve_timestamp(1700000000123456789LL), "2023-11-14T22:13:20.123456+0000");
}

}  // namespace
}  // namespace picket
