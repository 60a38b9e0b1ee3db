// Small JSON writers the EVE renderers share (alerts, records): numbers, keys, base64,
// printable payloads, timestamps. Internal to sensor/output.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/strings.h"
#include "common/time_util.h"

namespace picket::sensor::output::json_util {

inline void append_uint(std::string& out, uint64_t v) {
    char buf[24];
    size_t n = 0;
    do {
        buf[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n != 0) {
        out.push_back(buf[--n]);
    }
}

inline void append_key(std::string& out, const char* key) {
    out.push_back(',');
    out.push_back('"');
    out += key;
    out += "\":";
}

// Base64 and printable forms of raw bytes, as JSON strings: common/strings.h.
inline void append_base64(std::string& out, const uint8_t* p, size_t n) {
    strings::append_json_base64(out, p, n);
}
inline void append_printable(std::string& out, const uint8_t* p, size_t n) {
    strings::append_json_printable(out, p, n);
}

inline void append_timestamp(std::string& out, int64_t ts_ns) {
    const UtcTime u = split_utc(ts_ns);
    char buf[48];
    const int n = std::snprintf(buf, sizeof(buf), "\"%04d-%02d-%02dT%02d:%02d:%02d.%06d+0000\"",
                                u.year, u.month, u.day, u.hour, u.minute, u.second, u.usec);
    out.append(buf, static_cast<size_t>(n));
}

inline bool has_ports(uint8_t proto) {
    return proto == 6 || proto == 17 || proto == 132;
}

inline bool is_icmp(uint8_t proto) {
    return proto == 1 || proto == 58;
}

// `,"vlan":[outer, inner]` for the ids a packet carried (none: nothing).
inline void append_vlan(std::string& out, const uint16_t* ids, uint8_t count) {
    if (count == 0) {
        return;
    }
    append_key(out, "vlan");
    out.push_back('[');
    append_uint(out, ids[0]);
    if (count > 1) {
        out.push_back(',');
        append_uint(out, ids[1]);
    }
    out.push_back(']');
}

// The "proto" member's value: Suricata's name, or the number as a string.
inline void append_proto(std::string& out, uint8_t proto, const char* name) {
    out.push_back('"');
    if (name != nullptr) {
        out += name;
    } else {
        append_uint(out, proto);
    }
    out.push_back('"');
}

}  // namespace picket::sensor::output::json_util
