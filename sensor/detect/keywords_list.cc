// list_keywords(): walks the keyword registry (keywords/registry.cc), the buffer table
// (buffers.cc) and the Snort 3 front-end's tables (snort3.cc).
#include "sensor/detect/keywords_list.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string_view>
#include <tuple>
#include <utility>

#include "sensor/detect/flowbits.h"
#include "sensor/detect/parser.h"
#include "sensor/detect/rule.h"
#include "sensor/detect/snort3.h"

namespace picket::sensor::detect {
namespace {

// Statuses of what the Snort 3 front-end passes on come from the Suricata parser, which
// decides (the registry, the buffer table and the unsupported list private to parser.cc): it
// parses a rule holding the option alone, so that the reason is the one a rule using it gets.
// nullptr: the rule parsed.
std::unique_ptr<RuleDiagnostic> probe(const std::string& options) {
    FlowbitRegistry flowbits;
    ParseEnv env;
    env.syntax = ParseEnv::Syntax::kSuricata;
    env.flowbits = &flowbits;
    auto d = std::make_unique<RuleDiagnostic>();
    if (parse_rule("alert tcp any any -> any any (" + options + " sid:1;)", env, d.get())) {
        return nullptr;
    }
    return d;
}

// A keyword without its value: a complaint about the value ("bad msg") means the parser
// knows the keyword.
std::string suricata_status(std::string_view name) {
    const auto d = probe(std::string(name) + ";");
    if (d == nullptr || d->category.starts_with("bad ")) {
        return "supported";
    }
    return "not supported: " + d->reason;
}

// A pcre flag after a content, so that R (relative) has something to follow.
std::string pcre_flag_status(char flag) {
    const auto d = probe("content:\"a\"; pcre:\"/a/" + std::string(1, flag) + "\";");
    return d == nullptr ? "supported" : "not supported: " + d->reason;
}

}  // namespace

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
    // Registered keywords that do part of what Suricata does.
    static constexpr std::pair<const char*, const char*> kPartly[] = {
        {"tag", "partly: parsed and checked; tagged packets are not logged"},
        {"xbits", "partly: track tx (Suricata 8) is refused"},
    };
    for (const KeywordDef& k : keyword_table()) {
        std::string status = "supported";
        for (const auto& [name, why] : kPartly) {
            if (std::string_view(k.name) == name) {
                status = why;
            }
        }
        add("suricata", k.name, "option", std::move(status));
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
    for (const char* name : unsupported_keyword_names()) {
        add("suricata", name, "option", suricata_status(name));
    }
    // Snort 3: the front-end's own tables, and for what it passes on, the Suricata parser.
    for (const snort3::BufferMap& b : snort3::buffer_table()) {
        add("snort3", b.snort, "sticky buffer",
            b.suricata != nullptr
                ? suricata_status(b.suricata)
                : "not supported: unsupported buffer '" + std::string(b.snort) + "'");
    }
    std::string fields;
    for (const snort3::BufferMap& h : snort3::header_field_table()) {
        fields.append(fields.empty() ? "" : ", ").append(h.snort);
    }
    add("snort3", "http_header.field", "sticky buffer",
        "partly: field " + fields + "; any other field is refused");
    for (const snort3::OwnKeyword& k : snort3::snort3_only_options()) {
        add("snort3", k.name, "option", k.status);
    }
    for (const snort3::OwnKeyword& k : snort3::service_headers()) {
        add("snort3", k.name, "service header", k.status);
    }
    for (const snort3::ContentModifier& m : snort3::content_modifier_table()) {
        add("snort3", "content." + std::string(m.snort), "content modifier",
            suricata_status(m.suricata));
    }
    for (const char* name : snort3::pass_through_options()) {
        add("snort3", name, "option", suricata_status(name));
    }
    for (char flag : snort3::pcre_flags()) {
        add("snort3", "pcre." + std::string(1, flag), "pcre flag", pcre_flag_status(flag));
    }
    std::sort(out.begin(), out.end(), [](const KeywordInfo& a, const KeywordInfo& b) {
        return std::tie(a.language, a.name) < std::tie(b.language, b.name);
    });
    return out;
}

}  // namespace picket::sensor::detect
