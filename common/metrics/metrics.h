// Picket's own small Prometheus registry (prometheus-cpp is not packaged for Debian 12).
//
// Two ways to put series on /metrics:
//  - owned instruments (Counter, Gauge, Histogram), created once at start-up through the
//    Registry and updated from any thread with relaxed atomics (a Histogram observe is a few
//    atomic adds, no lock);
//  - collectors: callbacks run on every scrape that append families to an Exposition (used
//    where the values already live elsewhere: the manager's live sensor state, the engine's
//    counters), so nothing is copied between scrapes.
//
// Rendering follows the text exposition format 0.0.4: one HELP and one TYPE line per family,
// families in registration order (collectors after owned instruments, in the order added),
// label values escaped (\\, \", \n), histogram series as _bucket{le=...}/_sum/_count with a
// final +Inf bucket. Names are checked when a family is created: metric names match
// [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and must not start with "__";
// a bad name is a programming error (std::invalid_argument), not a scrape-time surprise.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace picket::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Type { kCounter, kGauge, kHistogram };

// True when `name` is a valid metric name / label name (see above).
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);
// Label value escaped for the text format (backslash, double quote, newline).
std::string escape_label_value(std::string_view value);
// A sample value as Prometheus prints it: integers without a fraction or exponent (up to
// 2^53 exactly), others with enough digits to round-trip, "NaN", "+Inf", "-Inf".
std::string format_value(double value);

// Families built for one scrape. A family name may be appended to more than once (samples are
// merged into the first family of that name; its HELP/TYPE must then be the same, else
// std::invalid_argument). Samples keep the order they were added.
class Exposition {
public:
    // Adds one sample of a counter or gauge family (created on first use).
    void add(std::string_view name, std::string_view help, Type type, const Labels& labels,
             double value);
    void counter(std::string_view name, std::string_view help, const Labels& labels, double value) {
        add(name, help, Type::kCounter, labels, value);
    }
    void gauge(std::string_view name, std::string_view help, const Labels& labels, double value) {
        add(name, help, Type::kGauge, labels, value);
    }
    // One histogram series: `bounds` ascending upper bounds without +Inf, `cumulative` the
    // cumulative count for each bound (same length), `count` the total (the +Inf bucket).
    void histogram(std::string_view name, std::string_view help, const Labels& labels,
                   const std::vector<double>& bounds, const std::vector<uint64_t>& cumulative,
                   uint64_t count, double sum);

    // An empty family (HELP/TYPE lines and no samples) is still rendered: Grafana queries on a
    // fleet with no sensors yet then say "no data" instead of "unknown metric".
    void declare(std::string_view name, std::string_view help, Type type);

    std::string render() const;
    size_t family_count() const { return families_.size(); }

private:
    struct Sample {
        std::string suffix;  // "", "_bucket", "_sum", "_count"
        Labels labels;
        double value = 0;
    };
    struct Family {
        std::string name;
        std::string help;
        Type type = Type::kCounter;
        std::vector<Sample> samples;
    };
    Family& family(std::string_view name, std::string_view help, Type type);
    std::vector<Family> families_;
};

// Monotonic counter, any thread.
class Counter {
public:
    void inc(double v = 1);  // v >= 0 (negative ignored)
    double value() const;

private:
    std::atomic<uint64_t> bits_{0};  // double stored as bits, CAS add
};

// Gauge, any thread.
class Gauge {
public:
    void set(double v);
    void add(double v);
    double value() const;

private:
    std::atomic<uint64_t> bits_{0};
};

// Fixed-bucket histogram, any thread; observe() is lock-free.
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);  // ascending, finite; +Inf implicit
    void observe(double v);
    struct Snapshot {
        std::vector<double> bounds;
        std::vector<uint64_t> cumulative;  // per bound
        uint64_t count = 0;
        double sum = 0;
    };
    Snapshot snapshot() const;
    const std::vector<double>& bounds() const { return bounds_; }

private:
    std::vector<double> bounds_;
    std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1 (last = +Inf)
    std::atomic<uint64_t> sum_bits_{0};
};

// Buckets for latencies in seconds: 100 us .. 10 s, roughly x2.5 apart.
std::vector<double> latency_buckets();

// Owns instruments and collectors; render() produces the full /metrics body. Instruments are
// created at start-up (under a mutex) and live as long as the Registry; the returned
// references stay valid. Creating the same name+labels twice returns the same instrument;
// the same name with another type or help is std::invalid_argument.
class Registry {
public:
    Registry();
    ~Registry();
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    Counter& counter(std::string_view name, std::string_view help, const Labels& labels = {});
    Gauge& gauge(std::string_view name, std::string_view help, const Labels& labels = {});
    Histogram& histogram(std::string_view name, std::string_view help, const Labels& labels,
                         std::vector<double> bounds);

    using Collector = std::function<void(Exposition&)>;
    void add_collector(Collector collector);

    // Owned instruments first, then each collector; a collector that throws is skipped and
    // counted in picket_metrics_collector_errors_total (the scrape still succeeds).
    std::string render() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace picket::metrics
