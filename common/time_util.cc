#include "common/time_util.h"

#include <cstdio>
#include <ctime>

namespace picket {

int64_t wall_clock_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t monotonic_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

UtcTime split_utc(int64_t ts_ns) {
    int64_t secs = ts_ns / 1000000000;
    int64_t usec = (ts_ns % 1000000000) / 1000;
    if (usec < 0) {
        secs -= 1;
        usec += 1000000;
    }
    time_t t = static_cast<time_t>(secs);
    tm tmv{};
    gmtime_r(&t, &tmv);
    return UtcTime{tmv.tm_year + 1900, tmv.tm_mon + 1, tmv.tm_mday,           tmv.tm_hour,
                   tmv.tm_min,         tmv.tm_sec,     static_cast<int>(usec)};
}

std::string format_eve_timestamp(int64_t ts_ns) {
    const UtcTime u = split_utc(ts_ns);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06d+0000", u.year, u.month,
                  u.day, u.hour, u.minute, u.second, u.usec);
    return buf;
}

}  // namespace picket
