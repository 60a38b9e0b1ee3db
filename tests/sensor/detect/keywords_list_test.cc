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
