// Internal to common/bundle (not a public header): string building for messages and splitting
// rules files into logical lines, shared by the files, tuning and diff code.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/string_view.h"

namespace picket::bundle::internal {

// Debian 12's Abseil has its own absl::string_view (not std::string_view), so absl::StrCat does
// not take std::string_view; these small helpers take both.
inline void append_one(std::string& out, std::string_view s) {
    out.append(s);
}
inline void append_one(std::string& out, const char* s) {
    out.append(s);
}
inline void append_one(std::string& out, const std::string& s) {
    out.append(s);
}
inline void append_one(std::string& out, absl::string_view s) {
    out.append(s.data(), s.size());
}
inline void append_one(std::string& out, char c) {
    out.push_back(c);
}
template <std::integral T>
requires(!std::same_as<T, char> && !std::same_as<T, bool>) void append_one(std::string& out, T v) {
    out.append(std::to_string(v));
}

template <typename... A>
void append(std::string& out, const A&... a) {
    (append_one(out, a), ...);
}

template <typename... A>
std::string cat(const A&... a) {
    std::string out;
    (append_one(out, a), ...);
    return out;
}

template <typename Range>
std::string join(const Range& parts, std::string_view sep) {
    std::string out;
    bool first = true;
    for (const auto& p : parts) {
        if (!first) {
            out.append(sep);
        }
        first = false;
        append_one(out, p);
    }
    return out;
}

// One logical line of a rules file: physical lines joined where a line ends with '\'
// (Suricata's continuation). [begin, end) covers the original bytes including the line
// terminators, so unchanged lines can be copied verbatim.
struct LogicalLine {
    size_t begin = 0;
    size_t end = 0;
    uint32_t line_no = 0;  // 1-based number of the first physical line
    std::string joined;    // continuations removed, no terminator, no trailing '\r'
};

std::vector<LogicalLine> split_logical_lines(std::string_view text);

// "rules/....rules"
bool is_rules_file(std::string_view path);

}  // namespace picket::bundle::internal
