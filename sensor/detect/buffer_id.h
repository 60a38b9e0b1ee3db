// Detection's names for the inspection contract (sensor/inspect/inspect.h): buffer ids, app
// protocol ids, AppView and TxAlertLog, re-exported into namespace picket::sensor::detect for
// the rule model (rule.h) and the public detection API (detect.h).
#pragma once

#include "sensor/inspect/inspect.h"

namespace picket::sensor::detect {

using inspect::app_proto_name;
using inspect::AppProto;
using inspect::AppView;
using inspect::BufferId;
using inspect::kNumAppProtos;
using inspect::kNumBuffers;
using inspect::TxAlertLog;

}  // namespace picket::sensor::detect
