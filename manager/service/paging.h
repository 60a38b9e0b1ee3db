// Paging of FleetAdmin's List* RPCs: page_size (0 = the RPC's default, at most kMaxPageSize)
// and an opaque page_token that is "<kind>:<key>", the key of the last item of the previous
// page. Keys are unique and each list has a fixed order, so an item added or removed between
// two pages neither repeats nor hides another.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace picket::manager::service {

inline constexpr uint32_t kMaxPageSize = 1000;

struct PageRequest {
    uint32_t size = 0;
    std::string after;  // the previous page's last key; "" = the first page
};

// INVALID_ARGUMENT "page_token '...' is not one this manager issued" for a token that is not
// "<kind>:KEY" with valid(KEY).
absl::StatusOr<PageRequest> page_request(uint32_t page_size, uint32_t default_size,
                                         const std::string& token, std::string_view kind,
                                         const std::function<bool(std::string_view)>& valid);
std::string page_token(std::string_view kind, std::string_view key);

// One forward page of `sorted` (ascending by key(item), keys unique): add(item) for each item
// after page.after, at most page.size of them. Returns the next page's token, "" on the last.
template <typename T, typename Key, typename Add>
std::string forward_page(const std::vector<T>& sorted, const PageRequest& page,
                         std::string_view kind, Key&& key, Add&& add) {
    auto it = page.after.empty()
                  ? sorted.begin()
                  : std::upper_bound(sorted.begin(), sorted.end(), page.after,
                                     [&](const std::string& a, const T& x) { return a < key(x); });
    for (uint32_t n = 0; it != sorted.end(); ++it, ++n) {
        if (n == page.size) {
            return page_token(kind, key(*std::prev(it)));
        }
        add(*it);
    }
    return {};
}

// Keys that are decimal numbers (versions, sequence numbers): 1 to 19 digits, no sign.
bool is_decimal_key(std::string_view key);
uint64_t decimal_key(std::string_view key);  // of a key is_decimal_key() accepted

}  // namespace picket::manager::service
