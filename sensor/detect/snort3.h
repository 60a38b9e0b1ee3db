// Snort 3 rule language front-end: recognises a rule written in Snort 3's syntax (service
// header or service: option, sticky buffers before their content, comma options inside
// content) and rewrites it into the Suricata text parse_rule() reads, plus the service
// condition that text cannot carry. parser.cc calls it only for a rule that fails as Suricata
// syntax, so Suricata rules parse exactly as before. Control thread only; pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/detect/rule.h"

namespace picket::sensor::detect::snort3 {

// True when the rule uses syntax only Snort 3 has: a header without addresses and ports, a
// service: or rem: option, content/pcre with comma options, http_header:field, a Snort 3
// only buffer, or an HTTP buffer name before any content (a sticky buffer in Snort 3, a
// content modifier in Suricata). Cheap: one scan of the text.
bool looks_like_snort3(std::string_view rule_text);

struct Translation {
    std::string text;                   // the rule in the Suricata syntax parse_rule() reads
    AppProto app = AppProto::kUnknown;  // service: (or service header) Picket can identify
    std::string service;                // that service as written, for diagnostics
    bool service_option = false;        // from a service: option (not the header): "OR ports"
    uint32_t sid = 0;                   // read even when translation fails (diagnostics)
};

// Rewrites a Snort 3 rule. On failure returns false with *category ("unsupported buffer",
// "unsupported service", "bad content", ...) and *reason naming the Snort keyword.
bool translate(std::string_view rule_text, Translation* out, std::string* category,
               std::string* reason);

// Applies what the Suricata text could not say (the service condition) to the parsed rule.
// False with *reason when the service contradicts the rule's buffers (service:smtp with
// file_data, which Picket only fills from HTTP).
bool apply(const Translation& t, Rule* rule, std::string* reason);

// The tables translate() uses, read by list_keywords() (--list-keywords) so that the list
// cannot drift from the mapping. A Snort 3 sticky buffer and the Suricata buffer it becomes;
// suricata == nullptr: translate() refuses it ("unsupported buffer").
struct BufferMap {
    const char* snort;
    const char* suricata;
};
std::span<const BufferMap> buffer_table();
// http_header:field NAME: the header names translate() maps to a single-header buffer.
std::span<const BufferMap> header_field_table();

// A content comma option and the Suricata keyword it becomes (fast_pattern_offset and
// fast_pattern_length both become fast_pattern:<offset>,<length>).
struct ContentModifier {
    enum class Form : uint8_t { kFlag, kValue, kFastPatternPart };
    const char* snort;
    const char* suricata;
    Form form;
};
std::span<const ContentModifier> content_modifier_table();

// An option or header word the front-end decides about itself, and its status as
// --list-keywords prints it ("supported", "partly: why", "not supported: why").
struct OwnKeyword {
    const char* name;
    const char* status;
};
// Options only Snort 3 has (service, rem, bufferlen, so), which translate() handles itself.
std::span<const OwnKeyword> snort3_only_options();
// The header words of a service rule ("alert http (...)"): the services Picket identifies and
// "file". Any other service header is refused ("unsupported service").
std::vector<OwnKeyword> service_headers();
// Snort 3 options translate() passes to the Suricata parser as written (sid, flow, byte_test,
// ...; pcre's string, content's string): the Suricata parser decides whether each is supported.
// Any option not in a table here is passed on too; this list names the Snort 3 ones.
std::span<const char* const> pass_through_options();
// pcre flags Snort rules use; pcre passes through, so the Suricata pcre parser decides them.
std::string_view pcre_flags();

}  // namespace picket::sensor::detect::snort3
