// Whether a host (name or IP literal, without port or brackets) is this machine. Header-only,
// shared by picketctl (--insecure is refused towards anything else) and the manager (--insecure
// only on a loopback --listen address).
#pragma once

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace picket::manager {

// 127.0.0.0/8, ::1 and "localhost". `lenient` (picketctl) also accepts "localhost" in any case
// and IPv4-mapped ::ffff:127.x.x.x; the manager's own check is exact.
inline bool is_loopback_host(std::string_view host, bool lenient) {
    std::string h(host);
    if (lenient) {
        std::transform(h.begin(), h.end(), h.begin(),
                       [](unsigned char c) { return std::tolower(c); });
    }
    if (h == "localhost") {
        return true;
    }
    in_addr v4{};
    if (inet_pton(AF_INET, h.c_str(), &v4) == 1) {
        return (ntohl(v4.s_addr) >> 24) == 127;
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
        if (IN6_IS_ADDR_LOOPBACK(&v6)) {
            return true;
        }
        return lenient && IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
    }
    return false;
}

}  // namespace picket::manager
