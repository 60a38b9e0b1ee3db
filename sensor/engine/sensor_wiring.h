// picket-sensor's wiring around the engine (sensor_wiring.cc): the fleet agent (--manager)
// and the Prometheus collector (--metrics-listen). Used by sensor/main.cc only; part of the
// picket_sensor_cli library, not of picket_engine.
#pragma once

#include <memory>
#include <string>

#include "common/metrics/metrics.h"
#include "common/metrics/sensor_series.h"
#include "sensor/agent/agent.h"
#include "sensor/engine/engine.h"
#include "sensor/engine/sensor_options.h"

namespace picket::sensor::engine {

std::string host_name();

// "pcap-file:/x.pcap", "pcap-live:eth0", "af-packet:eth0": the manager's form of the same.
std::string capture_text(const SensorConfig& sc);

// --manager: the agent's options from the command line, and the rules to start on (the last
// good bundle, else the local ones, else an empty rules file so that detection is on and a
// bundle can be applied later). Returns -1 to go on, else kExitUsage after the message.
int prepare_managed(const ManagerArgs& margs, SensorConfig& sc, agent::AgentOptions& agent_options);

// Starts the fleet agent on its own thread for the running engine: its stats and reload hooks
// and the engine's alert tap. The engine must outlive the agent.
std::unique_ptr<agent::Agent> start_agent(Engine& engine, const SensorConfig& sc,
                                          agent::AgentOptions agent_options,
                                          const std::string& version);

// --metrics-listen: one collector that renders this sensor's live counters on every scrape,
// with the same series the manager exports for it. `fixed` holds what does not change.
void add_sensor_collector(metrics::Registry& registry, const Engine& engine,
                          const agent::Agent* agent, metrics::SensorSeriesInput fixed);

}  // namespace picket::sensor::engine
