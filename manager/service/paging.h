// Paging of FleetAdmin's List* RPCs: page_size (0 = the RPC's default, at most kMaxPageSize)
// and an opaque page_token that is "<kind>:<key>", the key of the last item of the previous
// page. Keys are unique and each list has a fixed order, so an item added or removed between
// two pages neither repeats nor hides another.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

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

// Keys that are decimal numbers (versions, sequence numbers): 1 to 19 digits, no sign.
bool is_decimal_key(std::string_view key);
uint64_t decimal_key(std::string_view key);  // of a key is_decimal_key() accepted

}  // namespace picket::manager::service
