// Suricata transforms: keywords given right after a sticky buffer that rewrite the buffer
// before its options inspect it (`dns.query; dotprefix; content:".evil.com"; endswith;`). A
// buffer's chain is a BufferMatch::transforms value: up to 7 transforms of 4 bits each, the
// first in the low bits, 0 ending the chain.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace picket::sensor::detect {

enum class Transform : uint8_t {
    kNone = 0,
    kDotPrefix,           // dotprefix: "." + buffer (so ".example.com" matches a whole label)
    kToLowercase,         // to_lowercase
    kToUppercase,         // to_uppercase
    kStripWhitespace,     // strip_whitespace: every space, tab, CR, LF, VT, FF removed
    kCompressWhitespace,  // compress_whitespace: each run of whitespace becomes one space
    kUrlDecode,           // url_decode: %XX decoded, '+' becomes a space
};
inline constexpr uint32_t kMaxTransforms = 7;

// Appends t to chain; false when the chain is full.
bool push_transform(uint32_t* chain, Transform t);
// The keyword's name ("dotprefix"), for diagnostics and the rule profile.
const char* transform_name(Transform t);
// Applies the chain to `in`, writing the result to *out; the steps alternate between *out and
// *tmp. Both belong to the caller's (worker's) scratch and are reused: no allocation once
// their capacity suffices. Returns the transformed bytes.
std::string_view apply_transforms(uint32_t chain, std::string_view in, std::string* out,
                                  std::string* tmp);

}  // namespace picket::sensor::detect
