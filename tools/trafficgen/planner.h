// Internal to tools/trafficgen: the state one generation run shares between its setup and the
// protocol planners (http.cc, dns.cc, tls.cc, icmp.cc), and the content helpers they have in
// common. A planner writes one whole session into a Session buffer; generator.cc merges the
// sessions' packets into the file. Everything here runs on the generating thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "tools/trafficgen/frames.h"
#include "tools/trafficgen/generator.h"
#include "tools/trafficgen/rng.h"

namespace picket::tools::trafficgen {

constexpr size_t kPoolSize = 2u << 20;

// Vocabulary shared by host names, URIs, bodies and DNS names.
inline constexpr const char* kWords[] = {
    "api",     "static",  "images", "assets",  "blog",    "news",     "shop",    "cart",
    "account", "login",   "search", "product", "catalog", "media",    "video",   "docs",
    "support", "help",    "about",  "contact", "user",    "profile",  "orders",  "items",
    "v1",      "v2",      "js",     "css",     "img",     "download", "update",  "cdn",
    "data",    "reports", "feed",   "events",  "weather", "sports",   "finance", "travel",
    "health",  "music",   "games",  "maps",    "mail",    "portal",   "status",  "config",
};
inline constexpr const char* kLorem[] = {
    "lorem",      "ipsum",     "dolor",         "sit",       "amet",      "consectetur",
    "adipiscing", "elit",      "sed",           "do",        "eiusmod",   "tempor",
    "incididunt", "labore",    "dolore",        "magna",     "aliqua",    "enim",
    "minim",      "veniam",    "quis",          "nostrud",   "ullamco",   "laboris",
    "nisi",       "aliquip",   "commodo",       "consequat", "duis",      "aute",
    "irure",      "in",        "reprehenderit", "voluptate", "velit",     "esse",
    "cillum",     "fugiat",    "nulla",         "pariatur",  "excepteur", "sint",
    "occaecat",   "cupidatat", "non",           "proident",  "sunt",      "culpa",
    "qui",        "officia",   "deserunt",      "mollit",    "anim",      "id",
    "est",        "laborum",
};
inline constexpr const char* kTlds[] = {"com", "net", "org", "io", "de", "co.uk", "fr", "info"};

enum class Kind { kHttp, kDns, kTls, kIcmp };

struct Planner {
    // Builds the content pools (scrubbed of the attack strings) and the host tables from
    // seed-derived generators.
    explicit Planner(const Options& o);

    // Plans one session starting at t into s, with a generator drawn from the main one.
    void plan_session(Session& s, int64_t t);

    // Picks endpoints and an unused flow key. For ICMP, cport = sport = echo identifier.
    void make_conn(Rng& r, Conn& c, Kind kind, uint16_t sport);

    // n bytes at a random offset of the HTML-like text pool / the random-bytes pool.
    std::string_view text_slice(Rng& r, size_t n) const;
    std::string_view binary_slice(Rng& r, size_t n) const;

    Options opt;
    Rng rng;     // the main generator: one draw per session
    Record rec;  // filled by the planners (sessions, attacks) and by the writer path
    std::vector<uint8_t> text, binary, scratch;
    std::vector<Host> clients4, clients6, servers4, servers6, resolvers4, resolvers6;
    uint64_t attack_next = 0;  // round-robin index into opt.attacks
    uint64_t session_count = 0;

private:
    void build_pools();
    void build_hosts();
    bool claim_key(const Conn& c, uint8_t proto);

    std::unordered_set<uint64_t> used_keys_;
};

// Skewed choice: a few servers are popular.
template <typename V>
const Host& pick_skewed(Rng& r, const V& v) {
    double u = r.unit();
    return v[static_cast<size_t>(u * u * u * static_cast<double>(v.size()))];
}

// n lowercase hex digits.
std::string hex_token(Rng& r, int n);
// Pause between a user's requests, in microseconds.
int64_t think_time(Rng& r);
// Size of a response body: mostly a few KB, rarely up to 800 KB.
size_t body_size(Rng& r);
// The connection as the record names it, client as the source.
FlowTuple tuple(const Conn& c, const char* proto);

// The protocol planners: each writes one whole session starting at t.
void plan_http(Planner& p, Session& s, Rng& r, int64_t t);
void plan_dns(Planner& p, Session& s, Rng& r, int64_t t);
void plan_tls(Planner& p, Session& s, Rng& r, int64_t t);
void plan_icmp(Planner& p, Session& s, Rng& r, int64_t t);

}  // namespace picket::tools::trafficgen
