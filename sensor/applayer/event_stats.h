// Shared by the app-layer parsers (http, dns, tls): exporting one counter per engine event.
// Header-only, so that each parser library stays free of the others.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/counter.h"
#include "common/stats.h"

namespace picket::sensor::applayer {

// Adds "<prefix><event_name(e)>" for every event e (zeros included); `events` is indexed by
// the event's value.
template <typename Event, typename Events>
void export_event_counters(StatsSnapshot& out, std::string_view prefix, const Events& events,
                           const char* (*event_name)(Event)) {
    std::string name(prefix);
    const size_t base = name.size();
    size_t i = 0;
    for (const Counter& c : events) {
        name.resize(base);
        name += event_name(static_cast<Event>(i++));
        out.add(name, c.get());
    }
}

}  // namespace picket::sensor::applayer
