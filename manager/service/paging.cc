#include "manager/service/paging.h"

#include <algorithm>
#include <charconv>

#include "absl/status/status.h"

namespace picket::manager::service {

absl::StatusOr<PageRequest> page_request(uint32_t page_size, uint32_t default_size,
                                         const std::string& token, std::string_view kind,
                                         const std::function<bool(std::string_view)>& valid) {
    PageRequest p;
    p.size = std::min(page_size == 0 ? default_size : page_size, kMaxPageSize);
    if (token.empty()) {
        return p;
    }
    const std::string_view t(token);
    if (t.size() <= kind.size() + 1 || t.substr(0, kind.size()) != kind || t[kind.size()] != ':' ||
        !valid(t.substr(kind.size() + 1))) {
        return absl::InvalidArgumentError("page_token '" + token.substr(0, 64) +
                                          "' is not one this manager issued");
    }
    p.after = token.substr(kind.size() + 1);
    return p;
}

std::string page_token(std::string_view kind, std::string_view key) {
    std::string t(kind);
    t += ':';
    t += key;
    return t;
}

bool is_decimal_key(std::string_view key) {
    return !key.empty() && key.size() <= 19 &&
           std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
}

uint64_t decimal_key(std::string_view key) {
    uint64_t v = 0;
    std::from_chars(key.data(), key.data() + key.size(), v);
    return v;
}

}  // namespace picket::manager::service
