// list_keywords(): walks the keyword registry (keywords/registry.cc), the buffer table
// (buffers.cc) and the Snort 3 front-end's tables (snort3.cc).
#include "sensor/detect/keywords_list.h"

#include <algorithm>
#include <span>
#include <string_view>
#include <tuple>

#include "sensor/detect/rule.h"
#include "sensor/detect/snort3.h"

namespace picket::sensor::detect {

std::vector<KeywordInfo> list_keywords() {
    std::vector<KeywordInfo> out;
    auto add = [&out](const char* lang, std::string_view name, const char* kind,
                      std::string status) {
        for (const KeywordInfo& k : out) {
            if (k.language == lang && k.name == name) {
                return;  // first spelling wins (a sticky name that is also a modifier)
            }
        }
        out.push_back({lang, std::string(name), kind, std::move(status)});
    };
    for (const KeywordDef& k : keyword_table()) {
        add("suricata", k.name, "option", "supported");
    }
    for (size_t i = 0; i < kNumBuffers; ++i) {
        const BufferDef& d = buffer_def(static_cast<BufferId>(i));
        add("suricata", d.name, "sticky buffer", "supported");
        if (d.alias != nullptr) {
            add("suricata", d.alias, "sticky buffer", "supported");
        }
        if (d.modifier != nullptr) {
            add("suricata", d.modifier, "modifier", "supported");
        }
    }
    for (const char* name : extra_sticky_names()) {
        add("suricata", name, "sticky buffer", "supported");
    }
    for (const snort3::BufferMap& b : snort3::buffer_table()) {
        add("snort3", b.snort, "sticky buffer",
            b.suricata != nullptr
                ? std::string("supported")
                : "not supported: unsupported buffer '" + std::string(b.snort) + "'");
    }
    for (const char* name : snort3::snort3_only_options()) {
        add("snort3", name, "option",
            std::string_view(name) == "bufferlen" ? "partly: relative is not supported"
                                                  : "supported");
    }
    std::sort(out.begin(), out.end(), [](const KeywordInfo& a, const KeywordInfo& b) {
        return std::tie(a.language, a.name) < std::tie(b.language, b.name);
    });
    return out;
}

}  // namespace picket::sensor::detect
