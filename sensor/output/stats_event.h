// EVE stats records that validate against Suricata's own EVE schema (etc/schema.json, the
// "stats" object, where every object has additionalProperties false). conform_stats rewrites
// the object make_stats_event builds (plus whatever the engine adds to it) into that shape:
// Picket counters that are Suricata's counters under another name are renamed, counters the
// schema has no place for are dropped (they stay in the Prometheus metrics). Pure functions;
// any thread.
#pragma once

#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

namespace picket::sensor::output {

// Every integer counter the schema's stats object allows, as a dotted path, sorted
// ("app_layer.error.http.parser", ..., "uptime"). "detect.engines" (an array) is not listed.
std::span<const std::string_view> schema_stats_counters();

// The schema's name for a Picket counter that is the same counter under another name
// ("flow.evicted" -> "flow.get_used", "decoder.event.null.pkt_too_small" ->
// "decoder.event.ltnull.pkt_too_small"); any other name is returned unchanged.
std::string_view schema_stats_name(std::string_view picket_name);

// Rewrites a stats object (the "stats" member of a stats event) in place so that it validates
// against the schema: integer counters are renamed with schema_stats_name and kept if
// schema_stats_counters lists them (a counter already under the schema's name wins over a
// renamed one); "detect.engines" keeps its items' id, last_reload, rules_loaded, rules_failed
// and rules_skipped; everything else (non-integer values, "rates", Picket-only counters) is
// dropped. Idempotent.
void conform_stats(nlohmann::json& stats);

}  // namespace picket::sensor::output
