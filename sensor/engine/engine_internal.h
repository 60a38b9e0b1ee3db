// The engine's private parts shared by its .cc files: a detection generation and the output
// thread's state. Internal to sensor/engine.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "sensor/detect/flowbits.h"
#include "sensor/engine/worker_context.h"

namespace picket::sensor::engine {

// A worker's detection state on cache lines of its own: DetectWorker is allocated per worker
// in a row, and its worker reads it per packet while the neighbouring worker writes its own
// scratch, which DetectWorker allocates right after it.
struct alignas(kCacheLine) PaddedDetectWorker {
    PaddedDetectWorker(std::shared_ptr<const detect::DetectEngine> engine,
                       detect::WorkerFlowState* flow_state)
        : worker(std::move(engine), flow_state) {}
    detect::DetectWorker worker;
};

struct Engine::Generation {
    uint64_t id = 0;
    std::shared_ptr<const detect::DetectEngine> engine;
    std::vector<std::unique_ptr<PaddedDetectWorker>> workers;  // one per worker
    std::vector<output::AlertMeta> metas;
    // The registry's flowbit, flowint, flowvar and pktvar names as of this generation, by id:
    // what the workers write in an alert's "metadata" without taking the registry's lock.
    detect::VarNames var_names;
    std::shared_ptr<const filter::AclClassifier> acl;  // acl-file, switched with the rules
    std::vector<GenSlot> slots;                        // one per worker
};

struct Engine::Output {
    std::unique_ptr<output::EveWriter> eve;
    std::unique_ptr<output::FastLogWriter> fast;
    std::unique_ptr<output::AlertSink> sink;
    std::vector<output::AlertQueue*> queues;
    std::vector<output::RecordQueue*> record_queues;
    output::RecordOptions record_options;
    std::vector<std::string> interfaces;
    std::string line;
    // Records written per output::RecordType (read by collect_stats on the output thread and
    // at the end of the run).
    Counter records_written[output::kRecordTypes];
    // The sink's own count of records it could not deliver (destination away, full disk),
    // copied after each drain (the sink is the output thread's alone).
    Counter sink_dropped;
    int64_t last_ns = 0;
    std::vector<uint64_t> last_pkts, last_bytes;
    uint64_t last_total_pkts = 0, last_total_bytes = 0;
};

}  // namespace picket::sensor::engine
