// Internal to sensor/stream: helpers shared by its .cc files and its tests. Not a public
// header; other modules include only stream.h.
#pragma once

#include <cstdint>

#include "sensor/stream/stream.h"

namespace picket::sensor::stream {

bool prefix_match(const PolicyNet& n, const decode::Address& a);

// Overlap rule: does a new segment [s, e) overwrite a held segment [ls, le) where they
// overlap, for a receiver using policy `pol`? (Stream offsets, s/e and ls/le overlap.)
bool new_data_wins(Policy pol, uint64_t s, uint64_t e, uint64_t ls, uint64_t le);

}  // namespace picket::sensor::stream
