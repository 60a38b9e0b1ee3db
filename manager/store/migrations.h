// Numbered schema migrations of the manager store (internal to manager/store). Migration i
// (1-based) takes the schema from version i-1 to i; each runs in one transaction with the
// schema_version update. Never edit a released migration: append a new one.
#pragma once

#include <span>

#include "absl/status/statusor.h"

namespace picket::manager::store {

class Conn;

// The SQLite texts; postgres_migration(i) is step i (1-based) in PostgreSQL's dialect.
std::span<const char* const> migrations();
const char* postgres_migration(int version);

// Brings the database on `c` (the writer connection, outside a transaction) to version
// `target` and returns the version it has now (the file's own when that is higher than
// target). FAILED_PRECONDITION when the file's version is newer than Store::kSchemaVersion.
absl::StatusOr<int> migrate(Conn& c, int target);

}  // namespace picket::manager::store
