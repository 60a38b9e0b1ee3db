// The action a rule's header names (alert, drop, reject, pass). Shared by the rule model
// (rule.h) and the alerts the engine reports (detect.h), so that consumers of alerts need not
// include the rule model.
#pragma once

#include <cstdint>

namespace picket::sensor::detect {

enum class Action : uint8_t { kAlert, kDrop, kReject, kPass };

}  // namespace picket::sensor::detect
