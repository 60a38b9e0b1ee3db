// Clock helpers. Packet time is int64 nanoseconds since the Unix epoch throughout.
#pragma once

#include <cstdint>
#include <string>

namespace picket {

int64_t wall_clock_ns();
int64_t monotonic_ns();
// A packet time broken into UTC calendar fields with microseconds (what every log line prints).
struct UtcTime {
    int year, month, day, hour, minute, second, usec;
};
UtcTime split_utc(int64_t ts_ns);

// Suricata's EVE timestamp form: 2024-01-02T03:04:05.123456+0000 (UTC).
std::string format_eve_timestamp(int64_t ts_ns);

}  // namespace picket
