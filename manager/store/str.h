// String concatenation for manager/store messages (internal). Debian's Abseil is built with its
// own absl::string_view, which absl::StrCat accepts but std::string_view does not; this helper
// takes both.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace picket::manager::store {

inline void str_append(std::string& out, const std::string& s) {
    out += s;
}
inline void str_append(std::string& out, std::string_view s) {
    out.append(s);
}
inline void str_append(std::string& out, const char* s) {
    out += s;
}
inline void str_append(std::string& out, char c) {
    out += c;
}
#if !defined(ABSL_USES_STD_STRING_VIEW)
inline void str_append(std::string& out, absl::string_view s) {
    out.append(s.data(), s.size());
}
#endif
template <std::integral T>
requires(!std::same_as<T, char>) void str_append(std::string& out, T v) {
    out += std::to_string(v);
}

template <typename... Args>
std::string cat(const Args&... args) {
    std::string out;
    (str_append(out, args), ...);
    return out;
}

}  // namespace picket::manager::store
