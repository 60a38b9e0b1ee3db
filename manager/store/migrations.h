// Numbered schema migrations of the manager store (internal to manager/store). Migration i
// (1-based) takes the schema from version i-1 to i; each runs in one transaction with the
// schema_version update. Never edit a released migration: append a new one.
#pragma once

#include <span>

namespace picket::manager::store {

std::span<const char* const> migrations();

}  // namespace picket::manager::store
