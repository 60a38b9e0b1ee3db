// Internal to sensor/filter: string concatenation for error messages. Not `"lit" + string`:
// GCC 12 raises a false -Wrestrict on it (GCC PR 105329), and not absl::StrCat: Debian's
// Abseil has its own string_view, which std::string_view does not convert to.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

namespace picket::sensor::filter::internal {

template <class T>
void append_one(std::string& out, const T& v) {
    if constexpr (std::is_arithmetic_v<T>) {
        out += std::to_string(v);
    } else {
        out.append(std::string_view(v));
    }
}

template <class... Args>
std::string cat(const Args&... args) {
    std::string out;
    (append_one(out, args), ...);
    return out;
}

}  // namespace picket::sensor::filter::internal
