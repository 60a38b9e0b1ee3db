// The rule keywords Picket knows, for picket-sensor --list-keywords: every Suricata keyword,
// sticky buffer and content modifier of the registries, and every Snort 3 buffer and option
// of the Snort 3 front-end's tables, with whether Picket supports it. Generated from those
// tables, never a copy of them.
#pragma once

#include <span>
#include <string>
#include <vector>

namespace picket::sensor::detect {

struct KeywordInfo {
    std::string language;  // "suricata" or "snort3"
    std::string name;
    std::string kind;    // "option", "sticky buffer", "modifier"
    std::string status;  // "supported", "partly: <why>", "not supported: <why>"
};

// Sorted by language then name; one entry per (language, name).
std::vector<KeywordInfo> list_keywords();

// Read-only views of the tables, defined next to them (keywords/registry.cc, buffers.cc).
struct KeywordDef;
std::span<const KeywordDef> keyword_table();
std::vector<const char*> extra_sticky_names();
// Keywords Suricata knows and Picket does not support (parser.cc).
std::vector<const char*> unsupported_keyword_names();

}  // namespace picket::sensor::detect
