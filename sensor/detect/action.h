// The action a rule's header names (alert, drop, reject, pass). Shared by the rule model
// (rule.h) and the alerts the engine reports (detect.h), so that consumers of alerts need not
// include the rule model.
#pragma once

#include <cstdint>

namespace picket::sensor::detect {

enum class Action : uint8_t { kAlert, kDrop, kReject, kPass };

// Where a reject sends its RST / ICMP error, as Suricata's actions: reject and rejectsrc to
// the matching packet's sender, rejectdst to its receiver, rejectboth to both. As a mask
// (kSender | kReceiver == kBoth), so that a packet's rejects combine.
enum class RejectTo : uint8_t { kNone = 0, kSender = 1, kReceiver = 2, kBoth = 3 };

}  // namespace picket::sensor::detect
