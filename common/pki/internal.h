// Internal to common/pki (not a public header): OpenSSL error reporting shared by the
// certificate code (pki.cc) and the token code (tokens.cc).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace picket::pki::internal {

// Drains the thread's OpenSSL error queue into one line (so a later call does not report a
// stale error).
std::string openssl_error();

// InternalError "what: <the queued OpenSSL errors>".
absl::Status openssl_failure(std::string_view what);

}  // namespace picket::pki::internal
