#include <cstring>

#include "tools/trafficgen/planner.h"

namespace picket::tools::trafficgen {

void plan_icmp(Planner& p, Session& s, Rng& r, int64_t t) {
    Conn c;
    p.make_conn(r, c, Kind::kIcmp, 0);
    ++p.rec.sessions.icmp;
    int n = static_cast<int>(r.range(1, 4));
    bool windows = c.cttl == 128;
    uint8_t pl[56];
    size_t plen = windows ? 32 : 56;
    for (int i = 0; i < n; ++i) {
        int64_t ts = t + i * (windows ? 1000000 : r.range(999000, 1001000));
        if (windows) {
            for (size_t k = 0; k < 32; ++k) {
                pl[k] = static_cast<uint8_t>('a' + k % 23);
            }
        } else {
            // Linux ping: struct timeval (little-endian), then 0x10, 0x11, ...
            uint64_t sec = static_cast<uint64_t>(ts / 1000000);
            uint64_t usec = static_cast<uint64_t>(ts % 1000000);
            std::memcpy(pl, &sec, 8);
            std::memcpy(pl + 8, &usec, 8);
            for (size_t k = 16; k < 56; ++k) {
                pl[k] = static_cast<uint8_t>(k);
            }
        }
        uint16_t seq = static_cast<uint16_t>(i + 1);
        icmp_echo(s, c, true, c.cport, seq, pl, plen, ts);
        icmp_echo(s, c, false, c.cport, seq, pl, plen, ts + c.rtt);
    }
}

}  // namespace picket::tools::trafficgen
