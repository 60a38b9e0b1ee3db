// Digests the app-layer parsers put in their records: the MD5 fingerprints (JA3, JA3S, HASSH)
// are defined as lower-case hex MD5 of a text, whatever MD5's worth as a hash.
#pragma once

#include <string>
#include <string_view>

namespace picket::sensor::applayer {

// Lower-case hex MD5 (OpenSSL EVP); "" only if OpenSSL fails.
std::string md5_hex(std::string_view s);

}  // namespace picket::sensor::applayer
