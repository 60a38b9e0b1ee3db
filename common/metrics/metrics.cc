#include "common/metrics/metrics.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "common/log.h"

namespace picket::metrics {
namespace {

constexpr std::string_view kCollectorErrorsName = "picket_metrics_collector_errors_total";
constexpr std::string_view kCollectorErrorsHelp =
    "Scrapes on which a metrics collector threw; its series were left out of that scrape.";

bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

const char* type_name(Type type) {
    switch (type) {
        case Type::kCounter:
            return "counter";
        case Type::kGauge:
            return "gauge";
        case Type::kHistogram:
            return "histogram";
    }
    return "untyped";
}

// Text-format escaping: backslash and newline always, double quotes only in label values (HELP
// text keeps them as they are).
std::string escape(std::string_view text, bool quotes) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"' && quotes) {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

// Throws unless every label name is valid and none repeats (a repeated name would make the
// sample unparsable for Prometheus). `reserved_le` rejects "le" on histogram series, whose
// buckets add it themselves.
void check_labels(std::string_view metric, const Labels& labels, bool reserved_le) {
    for (size_t i = 0; i < labels.size(); ++i) {
        const std::string& name = labels[i].first;
        if (!valid_label_name(name)) {
            throw std::invalid_argument("metric " + std::string(metric) +
                                        ": invalid label name \"" + name + "\"");
        }
        if (reserved_le && name == "le") {
            throw std::invalid_argument("histogram " + std::string(metric) +
                                        ": label \"le\" is reserved for buckets");
        }
        for (size_t j = 0; j < i; ++j) {
            if (labels[j].first == name) {
                throw std::invalid_argument("metric " + std::string(metric) +
                                            ": duplicate label \"" + name + "\"");
            }
        }
    }
}

void check_metric_name(std::string_view name) {
    if (!valid_metric_name(name)) {
        throw std::invalid_argument("invalid metric name \"" + std::string(name) + "\"");
    }
}

void check_bounds(std::string_view metric, const std::vector<double>& bounds) {
    for (size_t i = 0; i < bounds.size(); ++i) {
        if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i - 1] < bounds[i]))) {
            throw std::invalid_argument("histogram " + std::string(metric) +
                                        ": bucket bounds must be finite and strictly ascending");
        }
    }
}

double load_double(const std::atomic<uint64_t>& bits) {
    return std::bit_cast<double>(bits.load(std::memory_order_relaxed));
}

void add_double(std::atomic<uint64_t>& bits, double v) {
    uint64_t old = bits.load(std::memory_order_relaxed);
    while (!bits.compare_exchange_weak(old, std::bit_cast<uint64_t>(std::bit_cast<double>(old) + v),
                                       std::memory_order_relaxed, std::memory_order_relaxed)) {
    }
}

}  // namespace

bool valid_metric_name(std::string_view name) {
    if (name.empty() || !(is_alpha(name[0]) || name[0] == '_' || name[0] == ':')) {
        return false;
    }
    return std::all_of(name.begin() + 1, name.end(),
                       [](char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == ':'; });
}

bool valid_label_name(std::string_view name) {
    if (name.empty() || !(is_alpha(name[0]) || name[0] == '_') || name.starts_with("__")) {
        return false;
    }
    return std::all_of(name.begin() + 1, name.end(),
                       [](char c) { return is_alpha(c) || is_digit(c) || c == '_'; });
}

std::string escape_label_value(std::string_view value) {
    return escape(value, true);
}

std::string format_value(double value) {
    if (std::isnan(value)) {
        return "NaN";
    }
    if (std::isinf(value)) {
        return value > 0 ? "+Inf" : "-Inf";
    }
    // Integers print without fraction or exponent as long as every integer is representable
    // (|v| <= 2^53), so counters read "1234567" rather than "1.234567e+06".
    constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
    if (std::trunc(value) == value && std::fabs(value) <= kExactIntegers) {
        return std::to_string(static_cast<int64_t>(value));
    }
    // Shortest round-trip digits in %g style, exponent when it is < -4 or >= 6: "0.0001", "2.5",
    // "1e-05", "1.70000000025e+09". That is what client_golang prints (Go's 'g', -1), so le
    // labels and values read the same as from any Go exporter.
    char buf[64];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general);
    if (ec != std::errc()) {
        return "NaN";  // cannot happen with 64 bytes; keeps the exposition parsable anyway
    }
    return std::string(buf, end);
}

// ---------------------------------------------------------------------------------------------
// Exposition

Exposition::Family& Exposition::family(std::string_view name, std::string_view help, Type type) {
    for (Family& f : families_) {
        if (f.name == name) {
            if (f.type != type || f.help != help) {
                throw std::invalid_argument("metric " + std::string(name) +
                                            " added again with another type or help");
            }
            return f;
        }
    }
    check_metric_name(name);
    Family& f = families_.emplace_back();
    f.name = std::string(name);
    f.help = std::string(help);
    f.type = type;
    return f;
}

void Exposition::add(std::string_view name, std::string_view help, Type type, const Labels& labels,
                     double value) {
    if (type == Type::kHistogram) {
        throw std::invalid_argument("metric " + std::string(name) +
                                    ": use Exposition::histogram() for histograms");
    }
    check_labels(name, labels, false);
    Family& f = family(name, help, type);
    f.samples.push_back(Sample{"", labels, value});
}

void Exposition::histogram(std::string_view name, std::string_view help, const Labels& labels,
                           const std::vector<double>& bounds,
                           const std::vector<uint64_t>& cumulative, uint64_t count, double sum) {
    if (bounds.size() != cumulative.size()) {
        throw std::invalid_argument("histogram " + std::string(name) +
                                    ": bounds and cumulative counts differ in length");
    }
    check_bounds(name, bounds);
    check_labels(name, labels, true);
    Family& f = family(name, help, Type::kHistogram);
    for (size_t i = 0; i <= bounds.size(); ++i) {
        Labels with_le = labels;
        with_le.emplace_back("le", i < bounds.size() ? format_value(bounds[i]) : "+Inf");
        const uint64_t n = i < bounds.size() ? cumulative[i] : count;
        f.samples.push_back(Sample{"_bucket", std::move(with_le), static_cast<double>(n)});
    }
    f.samples.push_back(Sample{"_sum", labels, sum});
    f.samples.push_back(Sample{"_count", labels, static_cast<double>(count)});
}

void Exposition::declare(std::string_view name, std::string_view help, Type type) {
    family(name, help, type);
}

std::string Exposition::render() const {
    std::string out;
    for (const Family& f : families_) {
        out += "# HELP ";
        out += f.name;
        out += ' ';
        out += escape(f.help, false);
        out += "\n# TYPE ";
        out += f.name;
        out += ' ';
        out += type_name(f.type);
        out += '\n';
        for (const Sample& s : f.samples) {
            out += f.name;
            out += s.suffix;
            if (!s.labels.empty()) {
                out += '{';
                for (size_t i = 0; i < s.labels.size(); ++i) {
                    if (i > 0) {
                        out += ',';
                    }
                    out += s.labels[i].first;
                    out += "=\"";
                    out += escape_label_value(s.labels[i].second);
                    out += '"';
                }
                out += '}';
            }
            out += ' ';
            out += format_value(s.value);
            out += '\n';
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Instruments

void Counter::inc(double v) {
    if (!(v >= 0)) {  // also drops NaN: a counter must never go down or become NaN
        return;
    }
    add_double(bits_, v);
}

double Counter::value() const {
    return load_double(bits_);
}

void Gauge::set(double v) {
    bits_.store(std::bit_cast<uint64_t>(v), std::memory_order_relaxed);
}

void Gauge::add(double v) {
    add_double(bits_, v);
}

double Gauge::value() const {
    return load_double(bits_);
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
    check_bounds("(unnamed)", bounds_);
    buckets_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);  // zeroed (C++20)
}

void Histogram::observe(double v) {
    // Buckets hold per-bucket (not cumulative) counts so an observation is one atomic add;
    // snapshot() accumulates. NaN lands in +Inf (and poisons _sum), as in client_golang.
    const size_t i = std::isnan(v)
                         ? bounds_.size()
                         : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                               bounds_.begin());  // first bound >= v: "le"
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    add_double(sum_bits_, v);
}

Histogram::Snapshot Histogram::snapshot() const {
    Snapshot s;
    s.bounds = bounds_;
    s.cumulative.resize(bounds_.size());
    uint64_t running = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        running += buckets_[i].load(std::memory_order_relaxed);
        s.cumulative[i] = running;
    }
    // count is derived from the same loads as the buckets, so +Inf >= every bucket even while
    // observe() runs concurrently; only _sum may be an observation ahead or behind.
    s.count = running + buckets_[bounds_.size()].load(std::memory_order_relaxed);
    s.sum = load_double(sum_bits_);
    return s;
}

std::vector<double> latency_buckets() {
    // 1-2.5-5 steps: readable le labels ("0.0025") that dashboards can hard-code.
    return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
            0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
}

// ---------------------------------------------------------------------------------------------
// Registry

namespace {

struct Series {
    Labels labels;
    Labels sorted;  // identity of the series: label order does not make a new series
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
};

struct OwnedFamily {
    std::string name;
    std::string help;
    Type type = Type::kCounter;
    std::vector<double> bounds;  // histograms: every series of the family shares them
    std::vector<Series> series;
};

}  // namespace

struct Registry::Impl {
    // Guards families (and the instruments' creation) and collectors. Instruments themselves
    // are atomics and are read without it being needed, but render() holds it while walking.
    mutable std::mutex mu;
    std::vector<OwnedFamily> families;
    std::unordered_map<std::string, size_t> by_name;
    std::vector<Collector> collectors;

    // Serialises the collector phase of concurrent scrapes, so a collector never runs twice at
    // once; also guards `warned`.
    mutable std::mutex render_mu;
    mutable std::vector<bool> warned;  // per collector: first failure already logged
    mutable std::atomic<uint64_t> collector_errors{0};

    Series& series(std::string_view name, std::string_view help, Type type, const Labels& labels,
                   const std::vector<double>* bounds);
};

Series& Registry::Impl::series(std::string_view name, std::string_view help, Type type,
                               const Labels& labels, const std::vector<double>* bounds) {
    check_metric_name(name);
    if (name == kCollectorErrorsName) {
        throw std::invalid_argument(std::string(name) + " is reserved for the registry");
    }
    check_labels(name, labels, type == Type::kHistogram);
    if (bounds != nullptr) {
        check_bounds(name, *bounds);
    }
    Labels sorted = labels;
    std::sort(sorted.begin(), sorted.end());

    std::lock_guard<std::mutex> lock(mu);
    auto it = by_name.find(std::string(name));
    OwnedFamily* fam = nullptr;
    if (it != by_name.end()) {
        fam = &families[it->second];
        if (fam->type != type || fam->help != help) {
            throw std::invalid_argument("metric " + std::string(name) +
                                        " created again with another type or help");
        }
        if (bounds != nullptr && fam->bounds != *bounds) {
            throw std::invalid_argument("histogram " + std::string(name) +
                                        " created again with other buckets");
        }
        for (Series& s : fam->series) {
            if (s.sorted == sorted) {
                return s;
            }
        }
    } else {
        by_name.emplace(std::string(name), families.size());
        fam = &families.emplace_back();
        fam->name = std::string(name);
        fam->help = std::string(help);
        fam->type = type;
        if (bounds != nullptr) {
            fam->bounds = *bounds;
        }
    }
    Series& s = fam->series.emplace_back();
    s.labels = labels;
    s.sorted = std::move(sorted);
    switch (type) {
        case Type::kCounter:
            s.counter = std::make_unique<Counter>();
            break;
        case Type::kGauge:
            s.gauge = std::make_unique<Gauge>();
            break;
        case Type::kHistogram:
            s.histogram = std::make_unique<Histogram>(fam->bounds);
            break;
    }
    return s;
}

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

Counter& Registry::counter(std::string_view name, std::string_view help, const Labels& labels) {
    return *impl_->series(name, help, Type::kCounter, labels, nullptr).counter;
}

Gauge& Registry::gauge(std::string_view name, std::string_view help, const Labels& labels) {
    return *impl_->series(name, help, Type::kGauge, labels, nullptr).gauge;
}

Histogram& Registry::histogram(std::string_view name, std::string_view help, const Labels& labels,
                               std::vector<double> bounds) {
    return *impl_->series(name, help, Type::kHistogram, labels, &bounds).histogram;
}

void Registry::add_collector(Collector collector) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->collectors.push_back(std::move(collector));
}

std::string Registry::render() const {
    Exposition exp;
    std::vector<Collector> collectors;
    {
        std::lock_guard<std::mutex> lock(impl_->mu);
        for (const OwnedFamily& f : impl_->families) {
            for (const Series& s : f.series) {
                switch (f.type) {
                    case Type::kCounter:
                        exp.counter(f.name, f.help, s.labels, s.counter->value());
                        break;
                    case Type::kGauge:
                        exp.gauge(f.name, f.help, s.labels, s.gauge->value());
                        break;
                    case Type::kHistogram: {
                        Histogram::Snapshot snap = s.histogram->snapshot();
                        exp.histogram(f.name, f.help, s.labels, snap.bounds, snap.cumulative,
                                      snap.count, snap.sum);
                        break;
                    }
                }
            }
        }
        // Copied so a collector may create instruments (taking `mu`) without deadlocking.
        collectors = impl_->collectors;
    }

    std::lock_guard<std::mutex> lock(impl_->render_mu);
    impl_->warned.resize(collectors.size(), false);
    for (size_t i = 0; i < collectors.size(); ++i) {
        // Each collector works on a copy, so one that throws halfway leaves nothing behind: a
        // scrape never carries half of a collector's families.
        Exposition trial = exp;
        std::string error;
        try {
            collectors[i](trial);
            exp = std::move(trial);
            continue;
        } catch (const std::exception& e) {
            error = e.what();
        } catch (...) {
            error = "unknown exception";
        }
        impl_->collector_errors.fetch_add(1, std::memory_order_relaxed);
        std::string message = "metrics: collector #" + std::to_string(i) + " threw (" + error +
                              "); its series are left out of this scrape";
        if (!impl_->warned[i]) {
            impl_->warned[i] = true;  // every scrape would repeat it: warn once, then debug
            log::warning(message);
        } else {
            log::debug(message);
        }
    }
    exp.counter(kCollectorErrorsName, kCollectorErrorsHelp, {},
                static_cast<double>(impl_->collector_errors.load(std::memory_order_relaxed)));
    return exp.render();
}

}  // namespace picket::metrics
