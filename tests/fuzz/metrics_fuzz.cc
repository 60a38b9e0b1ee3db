// libFuzzer target for what the manager does with a sensor's messages, short of gRPC: the input
// is a sequence of serialized picket.v1.SensorMessage (Hello, MetricsReport, AlertBatch, ...)
// from up to four sensors, applied to the manager's LiveState as SensorLink does
// (on_hello, on_metrics with its per-run deltas, on_alerts into the alert ring); then the
// Prometheus series are built from the live state as the manager's collector does
// (metrics::append_sensor_series, sensor labels from Hello, capture text, per-worker series)
// and rendered, and the rollout health gate is evaluated between each sensor's first and
// latest snapshot. Checks: the deltas given to the store are never negative (the store
// refuses those and the report is lost), the ring stays bounded, and the rendered exposition
// stays well-formed whatever strings a sensor sends (every line a comment or a sample of a
// picket_ family: a newline or quote in a label value must not start a line of its own).
// Input: records of [sensor: 1 byte][length: 2 bytes LE][SensorMessage bytes].
// Seed corpus: tests/fuzz/corpus/metrics (corpus/make_metrics_corpus.py).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>

#include "common/metrics/metrics.h"
#include "common/metrics/sensor_series.h"
#include "manager/rollout/rollout.h"
#include "manager/service/service.h"
#include "picket/v1/picket.pb.h"

namespace {

using picket::manager::service::LiveState;

#define check(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            std::fprintf(stderr, "metrics_fuzz: check failed line %d: %s\n", __LINE__, #cond); \
            __builtin_trap();                                                                  \
        }                                                                                      \
    } while (0)

}  // namespace

// Invalid UTF-8 in a string field is a parse failure that libprotobuf also logs, once per
// input: silence it so that the fuzzer's own output stays readable.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    google::protobuf::SetLogHandler(nullptr);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    constexpr size_t kRing = 8;
    LiveState live(kRing);
    const char* names[4] = {"s1", "s2", "edge-3", "s.4"};
    std::map<std::string, picket::v1::Hello> hellos;
    std::map<std::string, picket::manager::rollout::CounterSnapshot> first;
    size_t pos = 0;
    while (pos + 3 <= size) {
        const std::string sensor = names[data[pos] & 3];
        size_t len = static_cast<size_t>(data[pos + 1] | data[pos + 2] << 8);
        pos += 3;
        len = len < size - pos ? len : size - pos;
        picket::v1::SensorMessage m;
        const bool ok = m.ParseFromArray(data + pos, static_cast<int>(len));
        pos += len;
        if (!ok) {
            continue;
        }
        switch (m.msg_case()) {
            case picket::v1::SensorMessage::kHello:
                live.on_hello(sensor, m.hello(), "ipv4:127.0.0.1:1");
                hellos[sensor] = m.hello();
                break;
            case picket::v1::SensorMessage::kMetrics: {
                picket::manager::store::RunTotals d;
                if (live.on_metrics(sensor, m.metrics(), &d)) {
                    check(d.packets >= 0 && d.bytes >= 0 && d.drops >= 0 && d.alerts >= 0);
                    auto snap = live.counters(sensor);
                    if (snap && first.count(sensor) == 0) {
                        first[sensor] = *snap;
                    }
                }
                break;
            }
            case picket::v1::SensorMessage::kAlerts:
                live.on_alerts(sensor, m.alerts());
                break;
            default:
                break;
        }
        check(live.recent_alerts().size() <= kRing);
    }

    // The collector's view, as manager/service/metrics.cc builds it from the store and live
    // state (the store's labels and host come from the Hello).
    const auto all = live.all();
    std::vector<picket::metrics::SensorSeriesInput> inputs;
    for (const auto& [name, l] : all) {
        picket::metrics::SensorSeriesInput in;
        in.sensor = name;
        in.up = true;
        auto h = hellos.find(name);
        if (h != hellos.end()) {
            in.host = h->second.host();
            in.version = h->second.version();
            in.labels.insert(h->second.labels().begin(), h->second.labels().end());
            in.bundle_version = h->second.bundle().version();
            in.bundle_sha = h->second.bundle().sha256();
        }
        in.capture = l.capture_source;
        l.fill_series(&in);
        inputs.push_back(std::move(in));

        auto cur = live.counters(name);
        auto base = first.find(name);
        if (cur && base != first.end()) {
            picket::manager::rollout::HealthGate gate;
            (void)picket::manager::rollout::evaluate_gate(gate, name, base->second, *cur);
        }
    }
    picket::metrics::Exposition out;
    picket::metrics::append_sensor_series(out, inputs);
    const std::string text = out.render();
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        check(end != std::string::npos);  // every line ends with '\n'
        const std::string line = text.substr(start, end - start);
        check(line.rfind("# HELP picket_", 0) == 0 || line.rfind("# TYPE picket_", 0) == 0 ||
              line.rfind("picket_", 0) == 0);
        start = end + 1;
    }
    return 0;
}
