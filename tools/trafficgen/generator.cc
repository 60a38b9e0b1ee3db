#include "tools/trafficgen/generator.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace picket::tools::trafficgen {
namespace {

// The checksum code sums native 64-bit words and relies on RFC 1071's byte-order
// independence to store the result without swapping; that shortcut is little-endian only.
static_assert(std::endian::native == std::endian::little, "trafficgen assumes little-endian");

constexpr int64_t kEpochUs = 1704067200LL * 1000000LL;  // 2024-01-01T00:00:00Z
constexpr size_t kMtu = 1500;
constexpr size_t kMinFrame = 60;  // Ethernet minimum without FCS; shorter frames are padded
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kPsh = 0x08, kAck = 0x10;
constexpr uint8_t kProtoIcmp = 1, kProtoTcp = 6, kProtoUdp = 17, kProtoIcmpv6 = 58;
constexpr size_t kPoolSize = 2u << 20;
constexpr size_t kMaxAttackLen = 512;

// ---------------------------------------------------------------------------------------
// Small helpers

inline void put16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}
inline uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
inline uint32_t get32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
           static_cast<uint32_t>(p[2]) << 8 | p[3];
}

// xoshiro256** seeded through splitmix64: fully specified, so the output does not depend on
// the standard library's distributions (which differ between implementations).
class Rng {
public:
    explicit Rng(uint64_t seed) {
        for (auto& s : s_) {
            seed += 0x9e3779b97f4a7c15ULL;
            uint64_t z = seed;
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            s = z ^ (z >> 31);
        }
    }
    uint64_t next() {
        const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = std::rotl(s_[3], 45);
        return result;
    }
    // Uniform in [0, n).
    uint64_t below(uint64_t n) {
        return static_cast<uint64_t>((static_cast<__uint128_t>(next()) * n) >> 64);
    }
    // Uniform in [lo, hi].
    int64_t range(int64_t lo, int64_t hi) {
        return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
    }
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    bool chance(double p) { return unit() < p; }
    template <typename T, size_t N>
    const T& pick(const T (&arr)[N]) {
        return arr[below(N)];
    }

private:
    uint64_t s_[4];
};

// One's-complement sum in the little-endian domain (see the static_assert above).
inline uint64_t csum_add(uint64_t acc, const uint8_t* p, size_t n) {
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        acc += w;
        acc += (acc < w);
        p += 8;
        n -= 8;
    }
    if (n >= 4) {
        uint32_t w;
        std::memcpy(&w, p, 4);
        acc += w;
        acc += (acc < w);
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        uint16_t w;
        std::memcpy(&w, p, 2);
        acc += w;
        acc += (acc < w);
        p += 2;
        n -= 2;
    }
    if (n == 1) {
        acc += p[0];
        acc += (acc < p[0]);
    }
    return acc;
}
inline uint16_t csum_fold(uint64_t acc) {
    acc = (acc & 0xffffffffULL) + (acc >> 32);
    acc = (acc & 0xffffffffULL) + (acc >> 32);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(~acc);
}
// Stores the folded checksum so that the two bytes read big-endian are the RFC 1071 value.
inline void store_csum(uint8_t* field, uint16_t folded) {
    std::memcpy(field, &folded, 2);
}

std::string addr_string(bool v6, const uint8_t* a) {
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(v6 ? AF_INET6 : AF_INET, a, buf, sizeof(buf));
    return buf;
}

// ---------------------------------------------------------------------------------------
// Vocabulary

const char* const kUserAgents[] = {
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.2 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_2 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Version/17.2 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/120.0.6099.144 Mobile Safari/537.36",
    "curl/7.88.1",
    "Wget/1.21.3",
    "python-requests/2.31.0",
    "Go-http-client/1.1",
    "okhttp/4.12.0",
    "Microsoft-CryptoAPI/10.0",
};
const char* const kWords[] = {
    "api",     "static",  "images", "assets",  "blog",    "news",     "shop",    "cart",
    "account", "login",   "search", "product", "catalog", "media",    "video",   "docs",
    "support", "help",    "about",  "contact", "user",    "profile",  "orders",  "items",
    "v1",      "v2",      "js",     "css",     "img",     "download", "update",  "cdn",
    "data",    "reports", "feed",   "events",  "weather", "sports",   "finance", "travel",
    "health",  "music",   "games",  "maps",    "mail",    "portal",   "status",  "config",
};
const char* const kLorem[] = {
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
const char* const kTlds[] = {"com", "net", "org", "io", "de", "co.uk", "fr", "info"};
const char* const kExts[] = {".html", ".php", ".js", ".css",  ".png", ".jpg", ".json",
                             "",      "",     "/",   ".aspx", ".svg", ".txt"};
const char* const kQueryKeys[] = {"id",   "q",     "page", "lang",       "ref", "session",
                                  "sort", "limit", "v",    "utm_source", "cat", "token"};
const char* const kServerNames[] = {"nginx/1.24.0", "Apache/2.4.57 (Debian)",
                                    "cloudflare",   "Microsoft-IIS/10.0",
                                    "gws",          "envoy",
                                    "openresty",    "LiteSpeed"};
const char* const kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
const uint8_t kServerV4First[] = {23, 34, 35, 52, 54, 64, 69, 93, 104, 142, 151, 157, 185, 199};
const uint16_t kServerV6Prefix[][2] = {{0x2606, 0x4700}, {0x2a00, 0x1450}, {0x2001, 0x4860},
                                       {0x2a03, 0x2880}, {0x2620, 0x01ec}, {0x2600, 0x1f18},
                                       {0x2a04, 0x4e42}};
const uint16_t kVlanIds[] = {10, 20, 30, 100, 101, 200};

// ---------------------------------------------------------------------------------------
// Hosts and sessions

struct Host {
    bool v6 = false;
    uint8_t addr[16] = {};
    uint8_t mac[6] = {};
    std::string name;  // servers only
};

void derive_mac(Host& h) {
    uint64_t x = 0xcbf29ce484222325ULL;  // FNV-1a over the address
    for (int i = 0; i < (h.v6 ? 16 : 4); ++i) {
        x = (x ^ h.addr[i]) * 0x100000001b3ULL;
    }
    h.mac[0] = 0x02;  // locally administered, unicast
    for (int i = 1; i < 6; ++i) {
        h.mac[i] = static_cast<uint8_t>(x >> (8 * i));
    }
}

struct Conn {
    bool v6 = false;
    const Host* client = nullptr;
    const Host* server = nullptr;
    uint16_t cport = 0, sport = 0, vlan = 0;
    uint16_t cipid = 0, sipid = 0;
    uint8_t cttl = 64, sttl = 56;
    uint32_t cflow = 0, sflow = 0;  // IPv6 flow labels
    uint32_t cseq = 0, sseq = 0;
    uint16_t cwin = 502, swin = 501;
    uint32_t mss = 1460;
    int64_t rtt = 20000;  // microseconds
    int64_t gap = 50;     // microseconds between back-to-back segments
    uint32_t frag_id = 0;
};

struct FragInfo {
    uint32_t id = 0;
    uint16_t v4word = 0;  // IPv4 flags (MF) and offset in 8-byte units
    uint8_t v6hdr[8] = {};
};

struct Pkt {
    int64_t ts;
    uint32_t off;
    uint32_t len;
    int32_t attack;  // index into Record::attacks, or -1
};

struct Session {
    std::vector<uint8_t> data;
    std::vector<Pkt> pkts;
    size_t next = 0;
    int64_t last_ts = 0;
    uint64_t seq = 0;  // creation order: tie-breaker for equal timestamps

    void reset() {
        data.clear();
        pkts.clear();
        next = 0;
        last_ts = 0;
    }
    uint64_t file_bytes() const { return data.size() + 16 * pkts.size(); }
};

// ---------------------------------------------------------------------------------------
// Tally: an independent decode of every frame written, for the record.

struct FlowKey {
    uint8_t a[16], b[16];
    uint16_t pa, pb, vlan;
    uint8_t proto;
    bool operator==(const FlowKey& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};
struct FlowKeyHash {
    size_t operator()(const FlowKey& k) const {
        uint64_t h = 0xcbf29ce484222325ULL;
        const auto* p = reinterpret_cast<const uint8_t*>(&k);
        for (size_t i = 0; i < sizeof(k); ++i) {
            h = (h ^ p[i]) * 0x100000001b3ULL;
        }
        return h;
    }
};

struct FragKey {
    uint8_t src[16], dst[16];
    uint32_t id;
    uint16_t vlan;
    uint8_t proto;
    uint8_t v6;
    bool operator==(const FragKey& o) const { return std::memcmp(this, &o, sizeof(*this)) == 0; }
};
struct FragKeyHash {
    size_t operator()(const FragKey& k) const {
        uint64_t h = 0xcbf29ce484222325ULL;
        const auto* p = reinterpret_cast<const uint8_t*>(&k);
        for (size_t i = 0; i < sizeof(k); ++i) {
            h = (h ^ p[i]) * 0x100000001b3ULL;
        }
        return h;
    }
};
struct FragState {
    uint32_t got = 0;
    uint32_t total = 0;  // known once the last fragment (MF=0) was seen
    uint8_t l4[8] = {};  // first 8 bytes of the L4 header, from the offset-0 fragment
    bool have_first = false;
};

class Tally {
public:
    Tally(Record& rec, const std::vector<std::string>& attacks) : rec_(rec), attacks_(attacks) {}

    void observe(const uint8_t* f, uint32_t len) {
        ++rec_.packets;
        rec_.bytes += len;
        if (!attacks_.empty()) {
            scan_attacks(f, len);
        }
        if (len < 14) {
            return;
        }
        uint16_t type = get16(f + 12);
        uint32_t off = 14;
        uint16_t vlan = 0;
        bool tagged = false;
        while ((type == 0x8100 || type == 0x88a8) && off + 4 <= len) {
            if (!tagged) {
                vlan = get16(f + off) & 0x0fff;
            }
            tagged = true;
            type = get16(f + off + 2);
            off += 4;
        }
        if (tagged) {
            ++rec_.vlan;
        }
        if (type == 0x0806) {
            ++rec_.arp;
        } else if (type == 0x0800) {
            ipv4(f + off, len - off, vlan);
        } else if (type == 0x86dd) {
            ipv6(f + off, len - off, vlan);
        }
    }

private:
    void scan_attacks(const uint8_t* f, uint32_t len) {
        for (const auto& a : attacks_) {
            if (memmem(f, len, a.data(), a.size()) != nullptr) {
                ++rec_.attack_string_packets;
                return;
            }
        }
    }

    void ipv4(const uint8_t* p, uint32_t len, uint16_t vlan) {
        if (len < 20) {
            return;
        }
        ++rec_.ipv4;
        uint32_t ihl = (p[0] & 0x0f) * 4u;
        uint32_t total = std::min<uint32_t>(get16(p + 2), len);
        if (ihl < 20 || total < ihl) {
            return;
        }
        uint16_t frag = get16(p + 6);
        bool mf = (frag & 0x2000) != 0;
        uint32_t offset = (frag & 0x1fffu) * 8;
        if (mf || offset != 0) {
            ++rec_.ipv4_fragments;
            FragKey k{};
            std::memcpy(k.src, p + 12, 4);
            std::memcpy(k.dst, p + 16, 4);
            k.id = get16(p + 4);
            k.vlan = vlan;
            k.proto = p[9];
            k.v6 = 0;
            fragment(k, offset, mf, p + ihl, total - ihl, false, p + 12, p + 16);
            return;
        }
        l4(false, p[9], p + 12, p + 16, p + ihl, total - ihl, vlan);
    }

    void ipv6(const uint8_t* p, uint32_t len, uint16_t vlan) {
        if (len < 40) {
            return;
        }
        ++rec_.ipv6;
        uint32_t end = std::min<uint32_t>(40 + get16(p + 4), len);
        uint8_t nh = p[6];
        uint32_t off = 40;
        while (nh == 0 || nh == 43 || nh == 60 || nh == 44) {
            if (off + 8 > end) {
                return;
            }
            if (nh == 44) {
                ++rec_.ipv6_fragments;
                uint16_t fo = get16(p + off + 2);
                FragKey k{};
                std::memcpy(k.src, p + 8, 16);
                std::memcpy(k.dst, p + 24, 16);
                k.id = get32(p + off + 4);
                k.vlan = vlan;
                k.proto = p[off];
                k.v6 = 1;
                fragment(k, fo & 0xfff8u, (fo & 1) != 0, p + off + 8, end - off - 8, true, p + 8,
                         p + 24);
                return;
            }
            nh = p[off];
            off += (p[off + 1] + 1u) * 8;
        }
        if (off > end) {
            return;
        }
        l4(true, nh, p + 8, p + 24, p + off, end - off, vlan);
    }

    void fragment(const FragKey& k, uint32_t offset, bool mf, const uint8_t* data, uint32_t n,
                  bool v6, const uint8_t* src, const uint8_t* dst) {
        FragState& st = frags_[k];
        st.got += n;
        if (offset == 0 && n >= 8) {
            std::memcpy(st.l4, data, 8);
            st.have_first = true;
        }
        if (!mf) {
            st.total = offset + n;
        }
        if (st.total != 0 && st.got >= st.total && st.have_first) {
            ++rec_.reassembled;
            uint8_t hdr[8];
            std::memcpy(hdr, st.l4, 8);
            uint8_t proto = k.proto;
            uint16_t vlan = k.vlan;
            frags_.erase(k);
            l4(v6, proto, src, dst, hdr, 8, vlan);
        }
    }

    void l4(bool v6, uint8_t proto, const uint8_t* src, const uint8_t* dst, const uint8_t* p,
            uint32_t len, uint16_t vlan) {
        uint16_t sport = 0, dport = 0;
        uint64_t* flows = nullptr;
        if (proto == kProtoTcp && len >= 20) {
            ++rec_.tcp;
            sport = get16(p);
            dport = get16(p + 2);
            flows = &rec_.flows_tcp;
        } else if (proto == kProtoUdp && len >= 8) {
            ++rec_.udp;
            sport = get16(p);
            dport = get16(p + 2);
            flows = &rec_.flows_udp;
        } else if (proto == kProtoIcmp && !v6 && len >= 8) {
            ++rec_.icmpv4;
            if (p[0] == 8 || p[0] == 0) {
                sport = dport = get16(p + 4);
            } else {
                sport = p[0];
                dport = p[1];
            }
            flows = &rec_.flows_icmpv4;
        } else if (proto == kProtoIcmpv6 && v6 && len >= 8) {
            ++rec_.icmpv6;
            if (p[0] == 128 || p[0] == 129) {
                sport = dport = get16(p + 4);
            } else {
                sport = p[0];
                dport = p[1];
            }
            flows = &rec_.flows_icmpv6;
        } else {
            return;
        }
        FlowKey k{};
        uint8_t sa[16] = {}, da[16] = {};
        size_t alen = v6 ? 16 : 4;
        std::memcpy(sa, src, alen);
        std::memcpy(da, dst, alen);
        int c = std::memcmp(sa, da, 16);
        bool src_first = c < 0 || (c == 0 && sport <= dport);
        std::memcpy(k.a, src_first ? sa : da, 16);
        std::memcpy(k.b, src_first ? da : sa, 16);
        k.pa = src_first ? sport : dport;
        k.pb = src_first ? dport : sport;
        k.vlan = vlan;
        k.proto = static_cast<uint8_t>(proto | (v6 ? 0x80 : 0));  // families never collide
        if (flow_set_.insert(k).second) {
            ++rec_.flows;
            ++*flows;
        }
    }

    Record& rec_;
    const std::vector<std::string>& attacks_;
    std::unordered_set<FlowKey, FlowKeyHash> flow_set_;
    std::unordered_map<FragKey, FragState, FragKeyHash> frags_;
};

// ---------------------------------------------------------------------------------------
// Writer: classic pcap through large buffers. The generating thread fills one buffer while
// a writer thread hands the previous ones to write(2), so generation overlaps disk I/O.

class PcapWriter {
public:
    explicit PcapWriter(const std::string& path) : path_(path) {
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd_ < 0) {
            throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
        }
        for (int i = 0; i < kBuffers; ++i) {
            free_.push_back(std::make_unique<Buffer>());
            free_.back()->data.resize(kBufferSize);
        }
        cur_ = std::move(free_.back());
        free_.pop_back();
        thread_ = std::thread([this] { write_loop(); });
        uint8_t hdr[24];
        const uint32_t magic = 0xa1b2c3d4;  // microsecond timestamps, written in host order
        const uint16_t major = 2, minor = 4;
        const uint32_t zero = 0, snaplen = 262144, linktype = 1;  // LINKTYPE_ETHERNET
        std::memcpy(hdr, &magic, 4);
        std::memcpy(hdr + 4, &major, 2);
        std::memcpy(hdr + 6, &minor, 2);
        std::memcpy(hdr + 8, &zero, 4);
        std::memcpy(hdr + 12, &zero, 4);
        std::memcpy(hdr + 16, &snaplen, 4);
        std::memcpy(hdr + 20, &linktype, 4);
        append(hdr, sizeof(hdr));
    }
    ~PcapWriter() {
        stop_thread();
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    void packet(int64_t ts_us, const uint8_t* frame, uint32_t len) {
        uint32_t rh[4] = {static_cast<uint32_t>(ts_us / 1000000),
                          static_cast<uint32_t>(ts_us % 1000000), len, len};
        append(reinterpret_cast<const uint8_t*>(rh), sizeof(rh));
        append(frame, len);
    }
    void close() {
        hand_off();
        stop_thread();
        if (!error_.empty()) {
            throw std::runtime_error(error_);
        }
        if (::close(fd_) != 0) {
            fd_ = -1;
            throw std::runtime_error("cannot close " + path_ + ": " + std::strerror(errno));
        }
        fd_ = -1;
    }
    uint64_t written() const { return total_; }

private:
    static constexpr int kBuffers = 4;
    static constexpr size_t kBufferSize = 8u << 20;
    struct Buffer {
        std::vector<uint8_t> data;
        size_t used = 0;
    };

    void append(const uint8_t* p, size_t n) {
        if (cur_->used + n > cur_->data.size()) {
            hand_off();
        }
        std::memcpy(cur_->data.data() + cur_->used, p, n);
        cur_->used += n;
        total_ += n;
    }
    void hand_off() {
        std::unique_lock<std::mutex> lock(mu_);
        full_.push_back(std::move(cur_));
        cv_.notify_all();
        cv_.wait(lock, [this] { return !free_.empty(); });
        if (!error_.empty()) {
            throw std::runtime_error(error_);
        }
        cur_ = std::move(free_.back());
        free_.pop_back();
        cur_->used = 0;
    }
    void write_loop() {
        std::unique_lock<std::mutex> lock(mu_);
        for (;;) {
            cv_.wait(lock, [this] { return stop_ || !full_.empty(); });
            if (full_.empty()) {
                return;
            }
            std::unique_ptr<Buffer> b = std::move(full_.front());
            full_.pop_front();
            lock.unlock();
            std::string err = write_all(*b);
            lock.lock();
            if (!err.empty() && error_.empty()) {
                error_ = err;
            }
            free_.push_back(std::move(b));
            cv_.notify_all();
        }
    }
    std::string write_all(const Buffer& b) {
        size_t done = 0;
        while (done < b.used) {
            ssize_t w = ::write(fd_, b.data.data() + done, b.used - done);
            if (w < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return "cannot write " + path_ + ": " + std::strerror(errno);
            }
            done += static_cast<size_t>(w);
        }
        return {};
    }
    void stop_thread() {
        if (!thread_.joinable()) {
            return;
        }
        {
            std::lock_guard<std::mutex> lock(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

    std::string path_;
    int fd_ = -1;
    std::unique_ptr<Buffer> cur_;
    uint64_t total_ = 0;
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<Buffer>> full_;
    std::vector<std::unique_ptr<Buffer>> free_;
    std::string error_;  // first write error, reported by the generating thread
    bool stop_ = false;
    std::thread thread_;
};

// ---------------------------------------------------------------------------------------
// Generator

enum class Kind { kHttp, kDns, kTls, kIcmp };

class Generator {
public:
    explicit Generator(const Options& o) : opt_(o), rng_(o.seed) {
        build_pools();
        build_hosts();
    }

    Record run(const std::string& path);

private:
    // --- setup -------------------------------------------------------------------------
    void sanitize(std::vector<uint8_t>& pool, bool text) {
        for (const auto& a : opt_.attacks) {
            for (int guard = 0; guard < 1000000; ++guard) {
                auto it = std::search(pool.begin(), pool.end(), a.begin(), a.end());
                if (it == pool.end()) {
                    break;
                }
                uint8_t repl = text ? (a[0] == 'x' ? 'y' : 'x') : static_cast<uint8_t>(a[0] ^ 0x55);
                *it = repl;
            }
        }
    }

    void build_pools() {
        Rng r(opt_.seed ^ 0x706f6f6cULL);
        text_.reserve(kPoolSize + 256);
        const char* const tags[] = {"p", "div", "span", "li", "h2", "td", "a", "section"};
        while (text_.size() < kPoolSize) {
            const char* tag = r.pick(tags);
            std::string s = std::string("<") + tag + " class=\"" + r.pick(kWords) + "\">";
            int nw = static_cast<int>(r.range(3, 40));
            for (int i = 0; i < nw; ++i) {
                s += r.pick(kLorem);
                s += (i + 1 < nw) ? " " : "";
            }
            s += std::string("</") + tag + ">\n";
            text_.insert(text_.end(), s.begin(), s.end());
        }
        text_.resize(kPoolSize);
        binary_.resize(kPoolSize);
        for (size_t i = 0; i < kPoolSize; i += 8) {
            uint64_t v = r.next();
            std::memcpy(binary_.data() + i, &v, 8);
        }
        sanitize(text_, true);
        sanitize(binary_, false);
    }

    void build_hosts() {
        Rng r(opt_.seed ^ 0x686f737473ULL);
        clients4_.resize(1024);
        for (auto& h : clients4_) {
            if (r.chance(0.5)) {
                h.addr[0] = 10;
                h.addr[1] = static_cast<uint8_t>(r.range(0, 255));
                h.addr[2] = static_cast<uint8_t>(r.range(0, 255));
            } else {
                h.addr[0] = 192;
                h.addr[1] = 168;
                h.addr[2] = static_cast<uint8_t>(r.range(0, 255));
            }
            h.addr[3] = static_cast<uint8_t>(r.range(2, 254));
            derive_mac(h);
        }
        clients6_.resize(512);
        for (auto& h : clients6_) {
            h.v6 = true;
            h.addr[0] = 0xfd;
            for (int i = 1; i < 16; ++i) {
                h.addr[i] = static_cast<uint8_t>(r.next());
            }
            derive_mac(h);
        }
        servers4_.resize(256);
        servers6_.resize(256);
        for (size_t i = 0; i < servers4_.size(); ++i) {
            std::string name = std::string(r.pick(kWords)) + (r.chance(0.5) ? "-" : "") +
                               r.pick(kLorem) + "." + r.pick(kTlds);
            if (r.chance(0.6)) {
                name = "www." + name;
            }
            Host& h4 = servers4_[i];
            h4.addr[0] = r.pick(kServerV4First);
            h4.addr[1] = static_cast<uint8_t>(r.range(0, 255));
            h4.addr[2] = static_cast<uint8_t>(r.range(0, 255));
            h4.addr[3] = static_cast<uint8_t>(r.range(1, 254));
            h4.name = name;
            derive_mac(h4);
            Host& h6 = servers6_[i];
            h6.v6 = true;
            const auto& pre = kServerV6Prefix[r.below(std::size(kServerV6Prefix))];
            put16(h6.addr, pre[0]);
            put16(h6.addr + 2, pre[1]);
            for (int j = 4; j < 16; ++j) {
                h6.addr[j] =
                    (j < 8 || j == 15 || r.chance(0.3)) ? static_cast<uint8_t>(r.next()) : 0;
            }
            h6.name = name;
            derive_mac(h6);
        }
        const uint8_t resolvers4[][4] = {
            {8, 8, 8, 8}, {1, 1, 1, 1}, {9, 9, 9, 9}, {208, 67, 222, 222}};
        for (const auto& a : resolvers4) {
            Host h;
            std::memcpy(h.addr, a, 4);
            derive_mac(h);
            resolvers4_.push_back(h);
        }
        const uint16_t resolvers6[][8] = {{0x2001, 0x4860, 0x4860, 0, 0, 0, 0, 0x8888},
                                          {0x2606, 0x4700, 0x4700, 0, 0, 0, 0, 0x1111}};
        for (const auto& a : resolvers6) {
            Host h;
            h.v6 = true;
            for (int j = 0; j < 8; ++j) {
                put16(h.addr + 2 * j, a[j]);
            }
            derive_mac(h);
            resolvers6_.push_back(h);
        }
    }

    // Skewed choice: a few servers are popular.
    template <typename V>
    const Host& pick_skewed(Rng& r, const V& v) {
        double u = r.unit();
        return v[static_cast<size_t>(u * u * u * static_cast<double>(v.size()))];
    }

    // --- frames ------------------------------------------------------------------------
    // Appends Ethernet [+802.1Q] + IP header for an L4 payload of l4_len bytes and returns
    // the L4 pointer. frag != nullptr makes it a fragment: IPv4 flags/offset word and id, or
    // an IPv6 Fragment header.
    uint8_t* ip_frame(Session& s, Conn& c, bool fc, uint8_t proto, size_t l4_len, int64_t ts,
                      int32_t attack = -1, const FragInfo* frag = nullptr) {
        const Host& src = fc ? *c.client : *c.server;
        const Host& dst = fc ? *c.server : *c.client;
        size_t l2 = c.vlan ? 18 : 14;
        size_t l3 = c.v6 ? 40 + (frag ? 8 : 0) : 20;
        size_t len = l2 + l3 + l4_len;
        size_t flen = std::max(len, kMinFrame);
        size_t off = s.data.size();
        s.data.resize(off + flen);
        uint8_t* f = s.data.data() + off;
        if (flen > len) {
            std::memset(f + len, 0, flen - len);
        }
        std::memcpy(f, dst.mac, 6);
        std::memcpy(f + 6, src.mac, 6);
        uint8_t* p = f + 12;
        if (c.vlan) {
            put16(p, 0x8100);
            put16(p + 2, c.vlan);
            p += 4;
        }
        put16(p, c.v6 ? 0x86dd : 0x0800);
        p += 2;
        if (!c.v6) {
            p[0] = 0x45;
            p[1] = 0;
            put16(p + 2, static_cast<uint16_t>(20 + l4_len));
            uint16_t id = frag ? static_cast<uint16_t>(frag->id) : (fc ? c.cipid++ : c.sipid++);
            put16(p + 4, id);
            // DF on TCP as Linux and Windows send it; fragments carry offset and MF.
            put16(p + 6, frag ? frag->v4word : (proto == kProtoTcp ? 0x4000 : 0));
            p[8] = fc ? c.cttl : c.sttl;
            p[9] = proto;
            p[10] = p[11] = 0;
            std::memcpy(p + 12, src.addr, 4);
            std::memcpy(p + 16, dst.addr, 4);
            store_csum(p + 10, csum_fold(csum_add(0, p, 20)));
            p += 20;
        } else {
            uint32_t fl = fc ? c.cflow : c.sflow;
            put32(p, 0x60000000u | (fl & 0xfffff));
            put16(p + 4, static_cast<uint16_t>(l3 - 40 + l4_len));
            p[6] = frag ? 44 : proto;
            p[7] = fc ? c.cttl : c.sttl;
            std::memcpy(p + 8, src.addr, 16);
            std::memcpy(p + 24, dst.addr, 16);
            p += 40;
            if (frag) {
                std::memcpy(p, frag->v6hdr, 8);
                p += 8;
            }
        }
        int64_t t = std::max(ts, s.last_ts);
        s.last_ts = t;
        s.pkts.push_back(Pkt{t, static_cast<uint32_t>(off), static_cast<uint32_t>(flen), attack});
        return p;
    }

    uint64_t pseudo_sum(const Conn& c, bool fc, uint8_t proto, size_t l4_len) {
        const Host& src = fc ? *c.client : *c.server;
        const Host& dst = fc ? *c.server : *c.client;
        uint8_t ph[40];
        if (!c.v6) {
            std::memcpy(ph, src.addr, 4);
            std::memcpy(ph + 4, dst.addr, 4);
            ph[8] = 0;
            ph[9] = proto;
            put16(ph + 10, static_cast<uint16_t>(l4_len));
            return csum_add(0, ph, 12);
        }
        std::memcpy(ph, src.addr, 16);
        std::memcpy(ph + 16, dst.addr, 16);
        put32(ph + 32, static_cast<uint32_t>(l4_len));
        ph[36] = ph[37] = ph[38] = 0;
        ph[39] = proto;
        return csum_add(0, ph, 40);
    }

    void tcp(Session& s, Conn& c, bool fc, uint8_t flags, const uint8_t* pl, size_t n, int64_t ts,
             int32_t attack = -1) {
        size_t optlen = (flags & kSyn) ? 12 : 0;
        size_t l4 = 20 + optlen + n;
        uint8_t* t = ip_frame(s, c, fc, kProtoTcp, l4, ts, attack);
        uint32_t& seq = fc ? c.cseq : c.sseq;
        uint32_t ack = fc ? c.sseq : c.cseq;
        put16(t, fc ? c.cport : c.sport);
        put16(t + 2, fc ? c.sport : c.cport);
        put32(t + 4, seq);
        put32(t + 8, (flags & kAck) ? ack : 0);
        t[12] = static_cast<uint8_t>(((20 + optlen) / 4) << 4);
        t[13] = flags;
        put16(t + 14, (flags & kSyn) ? (fc ? 64240 : 65160) : (fc ? c.cwin : c.swin));
        t[16] = t[17] = 0;
        t[18] = t[19] = 0;
        if (optlen) {
            uint8_t* o = t + 20;
            o[0] = 2;  // MSS
            o[1] = 4;
            put16(o + 2, static_cast<uint16_t>(c.mss));
            o[4] = 1;  // NOP NOP SACK-permitted
            o[5] = 1;
            o[6] = 4;
            o[7] = 2;
            o[8] = 1;  // NOP, window scale 7
            o[9] = 3;
            o[10] = 3;
            o[11] = 7;
        }
        if (n) {
            std::memcpy(t + 20 + optlen, pl, n);
        }
        store_csum(t + 16, csum_fold(csum_add(pseudo_sum(c, fc, kProtoTcp, l4), t, l4)));
        seq += static_cast<uint32_t>(n) + ((flags & kSyn) ? 1 : 0) + ((flags & kFin) ? 1 : 0);
    }

    void udp(Session& s, Conn& c, bool fc, const uint8_t* pl, size_t n, int64_t ts) {
        size_t l4 = 8 + n;
        size_t l3 = c.v6 ? 40 : 20;
        if (l3 + l4 <= kMtu) {
            uint8_t* u = ip_frame(s, c, fc, kProtoUdp, l4, ts);
            write_udp(c, fc, u, pl, n);
            return;
        }
        // Fragmented datagram: build it whole (the checksum covers all of it), then cut.
        scratch_.resize(l4);
        write_udp(c, fc, scratch_.data(), pl, n);
        uint32_t id = c.v6 ? (c.frag_id++) : (fc ? c.cipid++ : c.sipid++);
        size_t chunk = c.v6 ? (kMtu - 40 - 8) / 8 * 8 : (kMtu - 20) / 8 * 8;
        for (size_t off = 0; off < l4; off += chunk) {
            size_t m = std::min(chunk, l4 - off);
            bool more = off + m < l4;
            FragInfo fi;
            fi.id = id;
            fi.v4word = static_cast<uint16_t>((off / 8) | (more ? 0x2000 : 0));
            fi.v6hdr[0] = kProtoUdp;
            fi.v6hdr[1] = 0;
            put16(fi.v6hdr + 2, static_cast<uint16_t>(off | (more ? 1 : 0)));
            put32(fi.v6hdr + 4, id);
            uint8_t* d = ip_frame(s, c, fc, kProtoUdp, m, ts, -1, &fi);
            std::memcpy(d, scratch_.data() + off, m);
            ts += 3;
        }
    }

    void write_udp(const Conn& c, bool fc, uint8_t* u, const uint8_t* pl, size_t n) {
        size_t l4 = 8 + n;
        put16(u, fc ? c.cport : c.sport);
        put16(u + 2, fc ? c.sport : c.cport);
        put16(u + 4, static_cast<uint16_t>(l4));
        u[6] = u[7] = 0;
        std::memcpy(u + 8, pl, n);
        uint16_t cs = csum_fold(csum_add(pseudo_sum(c, fc, kProtoUdp, l4), u, l4));
        if (cs == 0) {
            cs = 0xffff;  // RFC 768: a computed zero is sent as all ones
        }
        store_csum(u + 6, cs);
    }

    void icmp_echo(Session& s, Conn& c, bool request, uint16_t id, uint16_t seq, const uint8_t* pl,
                   size_t n, int64_t ts) {
        uint8_t proto = c.v6 ? kProtoIcmpv6 : kProtoIcmp;
        size_t l4 = 8 + n;
        uint8_t* m = ip_frame(s, c, request, proto, l4, ts);
        m[0] = c.v6 ? (request ? 128 : 129) : (request ? 8 : 0);
        m[1] = 0;
        m[2] = m[3] = 0;
        put16(m + 4, id);
        put16(m + 6, seq);
        std::memcpy(m + 8, pl, n);
        uint64_t acc = c.v6 ? pseudo_sum(c, request, proto, l4) : 0;
        store_csum(m + 2, csum_fold(csum_add(acc, m, l4)));
    }

    void arp_pair(Session& s, const Host& client, int64_t ts) {
        uint8_t gw_ip[4] = {client.addr[0], client.addr[1], client.addr[2], 1};
        Host gw;
        std::memcpy(gw.addr, gw_ip, 4);
        derive_mac(gw);
        for (int op = 1; op <= 2; ++op) {
            size_t off = s.data.size();
            s.data.resize(off + kMinFrame);
            uint8_t* f = s.data.data() + off;
            std::memset(f, 0, kMinFrame);
            const Host& from = op == 1 ? client : gw;
            const Host& to = op == 1 ? gw : client;
            if (op == 1) {
                std::memset(f, 0xff, 6);
            } else {
                std::memcpy(f, to.mac, 6);
            }
            std::memcpy(f + 6, from.mac, 6);
            put16(f + 12, 0x0806);
            uint8_t* a = f + 14;
            put16(a, 1);
            put16(a + 2, 0x0800);
            a[4] = 6;
            a[5] = 4;
            put16(a + 6, static_cast<uint16_t>(op));
            std::memcpy(a + 8, from.mac, 6);
            std::memcpy(a + 14, from.addr, 4);
            if (op == 2) {
                std::memcpy(a + 18, to.mac, 6);
            }
            std::memcpy(a + 24, to.addr, 4);
            int64_t t = std::max(ts + (op == 2 ? 150 : 0), s.last_ts);
            s.last_ts = t;
            s.pkts.push_back(Pkt{t, static_cast<uint32_t>(off), kMinFrame, -1});
        }
    }

    // Sends n bytes from one side in MSS-sized segments, in congestion-window bursts one RTT
    // apart; the receiver ACKs every second segment (and the last one when ack_tail). Forced
    // segment boundaries at `split` (0 = none). Marks the segment holding [mark, mark+mlen)
    // with attack index `attack`. Returns the time of the last packet.
    int64_t send_data(Session& s, Conn& c, bool fc, const uint8_t* d, size_t n, int64_t t,
                      bool ack_tail, size_t split = 0, size_t mark = SIZE_MAX,
                      int32_t attack = -1) {
        size_t pos = 0;
        int segs = 0;
        int window = 10;
        int in_window = 0;
        int64_t ack_delay = std::max<int64_t>(c.gap / 2, 5);
        while (pos < n) {
            size_t m = std::min<size_t>(c.mss, n - pos);
            if (split > pos && split < pos + m) {
                m = split - pos;
            }
            int32_t a = (mark >= pos && mark < pos + m) ? attack : -1;
            bool last = pos + m == n;
            tcp(s, c, fc, static_cast<uint8_t>(kAck | (last ? kPsh : 0)), d + pos, m, t, a);
            pos += m;
            ++segs;
            if (segs % 2 == 0 || (last && ack_tail)) {
                tcp(s, c, !fc, kAck, nullptr, 0, t + ack_delay);
            }
            t += c.gap;
            if (++in_window >= window && pos < n) {
                t += c.rtt;
                in_window = 0;
                window = std::min(window * 2, 44);
            }
        }
        return s.last_ts;
    }

    // --- content -----------------------------------------------------------------------
    std::string_view text_slice(Rng& r, size_t n) {
        size_t off = r.below(kPoolSize - n);
        return {reinterpret_cast<const char*>(text_.data() + off), n};
    }
    std::string_view binary_slice(Rng& r, size_t n) {
        size_t off = r.below(kPoolSize - n);
        return {reinterpret_cast<const char*>(binary_.data() + off), n};
    }

    static std::string http_date(int64_t ts_us) {
        time_t secs = static_cast<time_t>(ts_us / 1000000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[tm.tm_wday],
                      tm.tm_mday, kMonths[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                      tm.tm_sec);
        return buf;
    }

    static std::string hex_token(Rng& r, int n) {
        static const char kHex[] = "0123456789abcdef";
        std::string s;
        for (int i = 0; i < n; ++i) {
            s += kHex[r.below(16)];
        }
        return s;
    }

    std::string make_path(Rng& r) {
        std::string p;
        int depth = static_cast<int>(r.range(0, 4));
        for (int i = 0; i < depth; ++i) {
            p += "/";
            p += r.pick(kWords);
        }
        const char* ext = r.pick(kExts);
        if (depth == 0) {
            return r.chance(0.5) ? "/" : std::string("/") + r.pick(kLorem) + ".html";
        }
        if (ext[0] == '.') {
            p += "/";
            p += r.pick(kLorem);
            if (r.chance(0.3)) {
                p += "-" + std::to_string(r.range(1, 999));
            }
        }
        p += ext;
        return p;
    }

    std::string make_query(Rng& r) {
        std::string q;
        int n = static_cast<int>(r.range(1, 4));
        for (int i = 0; i < n; ++i) {
            q += i == 0 ? "?" : "&";
            q += r.pick(kQueryKeys);
            q += "=";
            switch (r.below(3)) {
                case 0:
                    q += std::to_string(r.range(0, 100000));
                    break;
                case 1:
                    q += r.pick(kLorem);
                    break;
                default:
                    q += hex_token(r, static_cast<int>(r.range(8, 32)));
                    break;
            }
        }
        return q;
    }

    static bool uri_safe(const std::string& a) {
        for (unsigned char ch : a) {
            if (ch <= 0x20 || ch == 0x7f) {
                return false;
            }
        }
        return true;
    }

    // --- sessions ----------------------------------------------------------------------
    bool claim_key(const Conn& c, uint8_t proto) {
        uint64_t h = 0xcbf29ce484222325ULL;
        auto mix = [&h](const uint8_t* p, size_t n) {
            for (size_t i = 0; i < n; ++i) {
                h = (h ^ p[i]) * 0x100000001b3ULL;
            }
        };
        mix(c.client->addr, 16);
        mix(c.server->addr, 16);
        uint8_t rest[7] = {proto,
                           static_cast<uint8_t>(c.cport >> 8),
                           static_cast<uint8_t>(c.cport),
                           static_cast<uint8_t>(c.sport >> 8),
                           static_cast<uint8_t>(c.sport),
                           static_cast<uint8_t>(c.vlan >> 8),
                           static_cast<uint8_t>(c.vlan)};
        mix(rest, sizeof(rest));
        return used_keys_.insert(h).second;
    }

    // Picks endpoints and an unused flow key. For ICMP, cport = sport = echo identifier.
    void make_conn(Rng& r, Conn& c, Kind kind, uint16_t sport) {
        c = Conn{};
        c.v6 = r.chance(opt_.ipv6_share);
        if (r.chance(opt_.vlan_share)) {
            c.vlan = r.pick(kVlanIds);
        }
        auto& clients = c.v6 ? clients6_ : clients4_;
        c.client = &clients[r.below(clients.size())];
        if (kind == Kind::kDns) {
            auto& res = c.v6 ? resolvers6_ : resolvers4_;
            c.server = &res[r.below(res.size())];
        } else {
            c.server = &pick_skewed(r, c.v6 ? servers6_ : servers4_);
        }
        c.sport = sport;
        bool windows = r.chance(0.4);
        uint8_t proto = kind == Kind::kIcmp  ? (c.v6 ? kProtoIcmpv6 : kProtoIcmp)
                        : kind == Kind::kDns ? kProtoUdp
                                             : kProtoTcp;
        do {
            if (kind == Kind::kIcmp) {
                c.cport = c.sport = static_cast<uint16_t>(r.range(1, 65535));
            } else {
                c.cport =
                    static_cast<uint16_t>(windows ? r.range(49152, 65535) : r.range(32768, 60999));
            }
        } while (!claim_key(c, proto));
        c.cipid = static_cast<uint16_t>(r.next());
        c.sipid = static_cast<uint16_t>(r.next());
        c.cttl = windows ? 128 : 64;
        c.sttl = static_cast<uint8_t>(r.chance(0.7) ? r.range(44, 60) : r.range(110, 122));
        c.cflow = static_cast<uint32_t>(r.next());
        c.sflow = static_cast<uint32_t>(r.next());
        c.frag_id = static_cast<uint32_t>(r.next());
        c.cseq = static_cast<uint32_t>(r.next());
        c.sseq = static_cast<uint32_t>(r.next());
        c.cwin = static_cast<uint16_t>(r.range(500, 2052));
        c.swin = static_cast<uint16_t>(r.range(235, 1026));
        c.mss = c.v6 ? 1440 : 1460;
        double u = r.unit();
        c.rtt = u < 0.3   ? r.range(1000, 10000)
                : u < 0.8 ? r.range(10000, 60000)
                          : r.range(60000, 250000);
        c.gap = r.range(12, 150);
    }

    int64_t handshake(Session& s, Conn& c, int64_t t) {
        tcp(s, c, true, kSyn, nullptr, 0, t);
        tcp(s, c, false, kSyn | kAck, nullptr, 0, t + c.rtt);
        tcp(s, c, true, kAck, nullptr, 0, t + c.rtt + 30);
        return t + c.rtt + 30;
    }

    void teardown(Session& s, Conn& c, Rng& r, int64_t t) {
        bool server_first = r.chance(0.3);
        tcp(s, c, !server_first, kFin | kAck, nullptr, 0, t);
        tcp(s, c, server_first, kFin | kAck, nullptr, 0, t + c.rtt);
        tcp(s, c, !server_first, kAck, nullptr, 0, t + c.rtt + 20);
    }

    static int64_t think_time(Rng& r) {
        double u = r.unit();
        return u < 0.6   ? r.range(500, 50000)
               : u < 0.9 ? r.range(50000, 500000)
                         : r.range(500000, 3000000);
    }

    size_t body_size(Rng& r) {
        double u = r.unit();
        if (u < 0.5) {
            return static_cast<size_t>(r.range(200, 4096));
        }
        if (u < 0.85) {
            return static_cast<size_t>(r.range(4096, 32768));
        }
        if (u < 0.97) {
            return static_cast<size_t>(r.range(32768, 200000));
        }
        return static_cast<size_t>(r.range(200000, 800000));
    }

    void plan_http(Session& s, Rng& r, int64_t t) {
        Conn c;
        uint16_t port = r.chance(0.85) ? 80 : 8080;
        make_conn(r, c, Kind::kHttp, port);
        ++rec_.sessions.http;
        int nreq = 1;
        while (nreq < 8 && r.chance(0.5)) {
            ++nreq;
        }
        int attack_req = -1;
        std::string attack;
        bool attack_in_uri = false;
        if (!opt_.attacks.empty() && r.chance(opt_.attack_share)) {
            attack = opt_.attacks[attack_next_++ % opt_.attacks.size()];
            attack_req = static_cast<int>(r.below(static_cast<uint64_t>(nreq)));
            attack_in_uri = uri_safe(attack) && r.chance(0.5);
        }
        t = handshake(s, c, t);
        std::string host = c.server->name;
        if (port != 80) {
            host += ":" + std::to_string(port);
        }
        const char* ua = r.pick(kUserAgents);
        std::string cookie;
        if (r.chance(0.35)) {
            cookie = "session=" + hex_token(r, 32);
            if (r.chance(0.5)) {
                cookie += "; _ga=GA1.2." + std::to_string(r.range(100000000, 999999999)) + "." +
                          std::to_string(r.range(1600000000, 1704000000));
            }
        }
        std::string req, resp, chunked;
        for (int i = 0; i < nreq; ++i) {
            t += i == 0 ? r.range(50, 2000) : think_time(r);
            bool this_attack = i == attack_req;
            // Method
            double u = r.unit();
            std::string method = u < 0.70   ? "GET"
                                 : u < 0.85 ? "POST"
                                 : u < 0.89 ? "PUT"
                                 : u < 0.94 ? "HEAD"
                                 : u < 0.97 ? "DELETE"
                                            : "OPTIONS";
            if (this_attack && !attack_in_uri && method != "POST" && method != "PUT") {
                method = "POST";
            }
            bool has_body = method == "POST" || method == "PUT";
            std::string uri = method == "OPTIONS" && r.chance(0.3) ? "*" : make_path(r);
            if (uri != "*" && (r.chance(0.5) || (this_attack && attack_in_uri))) {
                uri += make_query(r);
            }
            size_t attack_uri_pos = SIZE_MAX;
            if (this_attack && attack_in_uri) {
                uri += uri.find('?') == std::string::npos ? "?" : "&";
                uri += r.pick(kQueryKeys);
                uri += "=";
                attack_uri_pos = method.size() + 1 + uri.size();
                uri += attack;
            }
            // Body
            std::string body, ctype;
            size_t attack_body_pos = SIZE_MAX;
            if (has_body) {
                double b = r.unit();
                if (b < 0.5) {
                    ctype = "application/x-www-form-urlencoded";
                    int n = static_cast<int>(r.range(1, 8));
                    for (int k = 0; k < n; ++k) {
                        body += k ? "&" : "";
                        body += std::string(r.pick(kQueryKeys)) + "=" + std::string(r.pick(kLorem));
                    }
                } else if (b < 0.9) {
                    ctype = "application/json";
                    body = "{";
                    int n = static_cast<int>(r.range(1, 10));
                    for (int k = 0; k < n; ++k) {
                        body += k ? "," : "";
                        body +=
                            std::string("\"") + r.pick(kWords) + "\":\"" + r.pick(kLorem) + "\"";
                    }
                    body += "}";
                } else {
                    ctype = "application/octet-stream";
                    body = std::string(binary_slice(r, static_cast<size_t>(r.range(2000, 65536))));
                }
                if (this_attack && !attack_in_uri) {
                    std::string prefix = ctype == "application/json" ? "{\"data\":\"" : "data=";
                    attack_body_pos = prefix.size();
                    std::string suffix = ctype == "application/json" ? "\"," : "&";
                    if (ctype == "application/json") {
                        body = prefix + attack + "\"," + body.substr(1);
                    } else {
                        body = prefix + attack + suffix + body;
                    }
                }
            }
            req.clear();
            req += method + " " + uri + " HTTP/1.1\r\n";
            req += "Host: " + host + "\r\n";
            req += std::string("User-Agent: ") + ua + "\r\n";
            req += r.chance(0.6) ? "Accept: text/html,application/xhtml+xml,application/xml;"
                                   "q=0.9,image/avif,image/webp,*/*;q=0.8\r\n"
                                 : "Accept: */*\r\n";
            if (r.chance(0.7)) {
                req += "Accept-Encoding: gzip, deflate, br\r\nAccept-Language: en-US,en;q=0.9\r\n";
            }
            if (!cookie.empty()) {
                req += "Cookie: " + cookie + "\r\n";
            }
            if (has_body) {
                req += "Content-Type: " + ctype + "\r\n";
                req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
            }
            req += i + 1 == nreq && r.chance(0.3) ? "Connection: close\r\n"
                                                  : "Connection: keep-alive\r\n";
            req += "\r\n";
            size_t hdr_len = req.size();
            req += body;
            size_t mark = SIZE_MAX;
            int32_t aidx = -1;
            // Headers travel alone when the attack in the body would not fit in the first
            // segment, and sometimes anyway (clients that write headers and body apart).
            size_t split = 0;
            if (has_body &&
                (r.chance(0.3) || (this_attack && !attack_in_uri &&
                                   hdr_len + attack_body_pos + attack.size() > c.mss))) {
                split = hdr_len;
            }
            if (this_attack) {
                mark = attack_in_uri ? attack_uri_pos : hdr_len + attack_body_pos;
                aidx = static_cast<int32_t>(rec_.attacks.size());
                AttackRecord ar;
                ar.string = attack;
                ar.location = attack_in_uri ? "uri" : "body";
                ar.flow = tuple(c, "tcp");
                rec_.attacks.push_back(ar);
            }
            ++rec_.http_requests;
            int64_t resp_delay = r.chance(0.8) ? r.range(200, 20000) : r.range(20000, 300000);
            bool pure_ack = resp_delay > 40000 || req.size() > c.mss;
            t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(req.data()), req.size(), t,
                          pure_ack, split, mark, aidx);
            t += c.rtt + resp_delay;
            build_response(r, resp, chunked, method, t);
            t = send_data(s, c, false, reinterpret_cast<const uint8_t*>(resp.data()), resp.size(),
                          t, true);
        }
        t += r.chance(0.6) ? r.range(1000, 100000) : r.range(100000, 5000000);
        teardown(s, c, r, t);
    }

    void build_response(Rng& r, std::string& resp, std::string& chunked, const std::string& method,
                        int64_t t) {
        int status;
        const char* reason;
        double u = r.unit();
        if (method == "DELETE") {
            status = u < 0.7 ? 204 : 404;
        } else if (method == "POST" || method == "PUT") {
            status = u < 0.6 ? 200 : u < 0.85 ? 201 : u < 0.95 ? 400 : 500;
        } else {
            status = u < 0.78   ? 200
                     : u < 0.83 ? 301
                     : u < 0.86 ? 302
                     : u < 0.94 ? 404
                     : u < 0.96 ? 403
                                : (r.chance(0.7) ? 500 : 503);
        }
        switch (status) {
            case 200:
                reason = "OK";
                break;
            case 201:
                reason = "Created";
                break;
            case 204:
                reason = "No Content";
                break;
            case 301:
                reason = "Moved Permanently";
                break;
            case 302:
                reason = "Found";
                break;
            case 400:
                reason = "Bad Request";
                break;
            case 403:
                reason = "Forbidden";
                break;
            case 404:
                reason = "Not Found";
                break;
            case 500:
                reason = "Internal Server Error";
                break;
            default:
                reason = "Service Unavailable";
                break;
        }
        size_t blen = 0;
        bool binary = false;
        const char* ctype = "text/html; charset=utf-8";
        if (status == 200 && method != "OPTIONS") {
            blen = body_size(r);
            double c = r.unit();
            if (c < 0.55) {
                ctype = "text/html; charset=utf-8";
            } else if (c < 0.7) {
                ctype = "application/json";
            } else if (c < 0.78) {
                ctype = "application/javascript";
            } else if (c < 0.84) {
                ctype = "text/css";
            } else {
                ctype = r.chance(0.5) ? "image/jpeg" : "image/png";
                binary = true;
            }
        } else if (status != 204 && method != "OPTIONS") {
            blen = static_cast<size_t>(r.range(0, 1) ? r.range(150, 600) : r.range(600, 3000));
        }
        bool chunk = status == 200 && !binary && method != "HEAD" && r.chance(0.15);
        resp.clear();
        resp += "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
        resp += "Date: " + http_date(t) + "\r\n";
        resp += std::string("Server: ") + r.pick(kServerNames) + "\r\n";
        if (method == "OPTIONS") {
            resp += "Allow: OPTIONS, GET, HEAD, POST, PUT, DELETE\r\nContent-Length: 0\r\n";
        } else if (status != 204) {
            resp += std::string("Content-Type: ") + ctype + "\r\n";
            if (chunk) {
                resp += "Transfer-Encoding: chunked\r\n";
            } else {
                resp += "Content-Length: " + std::to_string(blen) + "\r\n";
            }
        }
        if (status == 301 || status == 302) {
            resp += "Location: https://" + std::string(r.pick(kWords)) + ".example.com/" +
                    r.pick(kWords) + "/\r\n";
        }
        if (r.chance(0.2)) {
            resp += "Set-Cookie: sid=" + hex_token(r, 24) + "; Path=/; HttpOnly\r\n";
        }
        if (r.chance(0.5)) {
            resp += "Cache-Control: max-age=" + std::to_string(r.range(0, 86400)) + "\r\n";
        }
        resp += "Connection: keep-alive\r\n\r\n";
        if (method == "HEAD" || blen == 0) {
            return;
        }
        std::string_view body = binary ? binary_slice(r, blen) : text_slice(r, blen);
        if (!chunk) {
            resp += body;
            return;
        }
        chunked.clear();
        size_t pos = 0;
        while (pos < body.size()) {
            size_t n = std::min<size_t>(static_cast<size_t>(r.range(500, 8192)), body.size() - pos);
            char hx[16];
            std::snprintf(hx, sizeof(hx), "%zx\r\n", n);
            chunked += hx;
            chunked += body.substr(pos, n);
            chunked += "\r\n";
            pos += n;
        }
        chunked += "0\r\n\r\n";
        resp += chunked;
    }

    static void dns_name(std::string& out, const std::string& name) {
        size_t start = 0;
        while (start <= name.size()) {
            size_t dot = name.find('.', start);
            if (dot == std::string::npos) {
                dot = name.size();
            }
            out += static_cast<char>(dot - start);
            out.append(name, start, dot - start);
            start = dot + 1;
        }
        out += '\0';
    }

    static void add16(std::string& s, uint16_t v) {
        s += static_cast<char>(v >> 8);
        s += static_cast<char>(v & 0xff);
    }
    static void add32(std::string& s, uint32_t v) {
        add16(s, static_cast<uint16_t>(v >> 16));
        add16(s, static_cast<uint16_t>(v));
    }

    void plan_dns(Session& s, Rng& r, int64_t t) {
        Conn c;
        make_conn(r, c, Kind::kDns, 53);
        ++rec_.sessions.dns;
        bool big = r.chance(opt_.frag_share);
        std::string name;
        if (r.chance(0.7)) {
            name = pick_skewed(r, servers4_).name;
        } else {
            name = std::string(r.pick(kWords)) + "." + r.pick(kLorem) + "-" + hex_token(r, 6) +
                   "." + r.pick(kTlds);
        }
        uint16_t qtypes[2];
        int nq = 1;
        double u = r.unit();
        qtypes[0] = big ? 16 : u < 0.5 ? 1 : u < 0.75 ? 28 : u < 0.85 ? 15 : 16;
        if (qtypes[0] == 1 && r.chance(0.4)) {
            qtypes[1] = 28;  // resolvers ask A and AAAA from the same socket
            nq = 2;
        }
        std::string q, a;
        std::string queries[2], answers[2];
        for (int i = 0; i < nq; ++i) {
            uint16_t qt = qtypes[i];
            uint16_t id = static_cast<uint16_t>(r.next());
            bool edns = big || r.chance(0.5);
            q.clear();
            add16(q, id);
            add16(q, 0x0100);  // RD
            add16(q, 1);
            add16(q, 0);
            add16(q, 0);
            add16(q, edns ? 1 : 0);
            dns_name(q, name);
            add16(q, qt);
            add16(q, 1);
            if (edns) {
                q += '\0';
                add16(q, 41);
                add16(q, big ? 4096 : 1232);
                add32(q, 0);
                add16(q, 0);
            }
            queries[i] = q;
            // Response: echo the question, then the answers (names compressed to 0xc00c).
            bool nx = !big && r.chance(0.05);
            int an = nx         ? 0
                     : qt == 1  ? static_cast<int>(r.range(1, 4))
                     : qt == 28 ? static_cast<int>(r.range(1, 2))
                     : qt == 15 ? static_cast<int>(r.range(1, 3))
                     : big      ? static_cast<int>(r.range(8, 14))
                                : static_cast<int>(r.range(1, 2));
            a.clear();
            add16(a, id);
            add16(a, nx ? 0x8183 : 0x8180);
            add16(a, 1);
            add16(a, static_cast<uint16_t>(an));
            add16(a, 0);
            add16(a, edns ? 1 : 0);
            size_t qend = q.size() - (edns ? 11 : 0);
            a.append(q, 12, qend - 12);
            for (int k = 0; k < an; ++k) {
                add16(a, 0xc00c);
                add16(a, qt);
                add16(a, 1);
                add32(a, static_cast<uint32_t>(r.range(30, 86400)));
                std::string rd;
                if (qt == 1) {
                    const Host& h = servers4_[r.below(servers4_.size())];
                    rd.assign(reinterpret_cast<const char*>(h.addr), 4);
                } else if (qt == 28) {
                    const Host& h = servers6_[r.below(servers6_.size())];
                    rd.assign(reinterpret_cast<const char*>(h.addr), 16);
                } else if (qt == 15) {
                    add16(rd, static_cast<uint16_t>(10 * (k + 1)));
                    dns_name(rd, std::string("mx") + std::to_string(k + 1) + "." + name);
                } else {
                    {
                        std::string txt;
                        if (big) {
                            txt = "v=DKIM1; k=rsa; p=";
                            std::string_view tv = text_slice(r, 230);
                            for (char ch : tv) {
                                txt += (ch == '<' || ch == '>' || ch == '\n') ? 'A' : ch;
                            }
                        } else {
                            txt = r.chance(0.5) ? "v=spf1 include:_spf." + name + " ~all"
                                                : "google-site-verification=" + hex_token(r, 43);
                        }
                        txt.resize(std::min<size_t>(txt.size(), 255));
                        rd += static_cast<char>(txt.size());
                        rd += txt;
                    }
                }
                add16(a, static_cast<uint16_t>(rd.size()));
                a += rd;
            }
            if (edns) {
                a += '\0';
                add16(a, 41);
                add16(a, 1232);
                add32(a, 0);
                add16(a, 0);
            }
            answers[i] = a;
        }
        // Both queries leave first (as a stub resolver sends them), then the answers.
        for (int i = 0; i < nq; ++i) {
            udp(s, c, true, reinterpret_cast<const uint8_t*>(queries[i].data()), queries[i].size(),
                t + i * 40);
        }
        t += c.rtt / 4 + r.range(100, 30000);
        for (int i = 0; i < nq; ++i) {
            udp(s, c, false, reinterpret_cast<const uint8_t*>(answers[i].data()), answers[i].size(),
                t + i * r.range(50, 3000));
        }
    }

    void tls_record(std::string& out, uint8_t type, std::string_view body) {
        out += static_cast<char>(type);
        add16(out, type == 0x16 && out.empty() ? 0x0301 : 0x0303);
        add16(out, static_cast<uint16_t>(body.size()));
        out += body;
    }

    void plan_tls(Session& s, Rng& r, int64_t t) {
        Conn c;
        make_conn(r, c, Kind::kTls, 443);
        ++rec_.sessions.tls;
        t = handshake(s, c, t);
        const std::string& sni = c.server->name;
        std::string sid(binary_slice(r, 32));
        std::string key(binary_slice(r, 32));
        // ClientHello (RFC 8446 4.1.2), extensions as a browser sends them.
        std::string ext;
        std::string sn;
        add16(sn, static_cast<uint16_t>(sni.size() + 3));
        sn += '\0';
        add16(sn, static_cast<uint16_t>(sni.size()));
        sn += sni;
        auto add_ext = [&ext](uint16_t type, const std::string& data) {
            add16(ext, type);
            add16(ext, static_cast<uint16_t>(data.size()));
            ext += data;
        };
        add_ext(0x0000, sn);
        add_ext(0x0017, "");
        add_ext(0xff01, std::string(1, '\0'));
        add_ext(0x000a, std::string("\x00\x06\x00\x1d\x00\x17\x00\x18", 8));
        add_ext(0x000b, std::string("\x01\x00", 2));
        add_ext(0x0023, "");
        add_ext(0x0010, std::string("\x00\x0c\x02h2\x08http/1.1", 14));
        add_ext(0x000d, std::string("\x00\x10\x04\x03\x08\x04\x04\x01\x05\x03\x08\x05\x05\x01"
                                    "\x08\x06\x06\x01",
                                    18));
        add_ext(0x002b, std::string("\x04\x03\x04\x03\x03", 5));
        add_ext(0x002d, std::string("\x01\x01", 2));
        std::string ks;
        add16(ks, 36);
        add16(ks, 0x001d);
        add16(ks, 32);
        ks += key;
        add_ext(0x0033, ks);
        std::string hello;
        add16(hello, 0x0303);
        hello += binary_slice(r, 32);
        hello += static_cast<char>(32);
        hello += sid;
        static const uint16_t kSuites[] = {0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f,
                                           0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013,
                                           0xc014, 0x009c, 0x009d, 0x002f, 0x0035};
        add16(hello, static_cast<uint16_t>(2 * std::size(kSuites)));
        for (uint16_t cs : kSuites) {
            add16(hello, cs);
        }
        hello += '\x01';
        hello += '\0';
        // Pad like browsers do (RFC 7685) so the ClientHello is at least 512 bytes.
        size_t so_far = 4 + hello.size() + 2 + ext.size();
        if (so_far < 508) {
            add_ext(0x0015, std::string(508 - so_far - 4, '\0'));
        }
        add16(hello, static_cast<uint16_t>(ext.size()));
        hello += ext;
        std::string hs;
        hs += '\x01';
        hs += '\0';
        add16(hs, static_cast<uint16_t>(hello.size()));
        hs += hello;
        std::string out;
        tls_record(out, 0x16, hs);
        t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                      t + r.range(100, 3000), false);
        // ServerHello + ChangeCipherSpec + encrypted handshake (opaque).
        std::string sh;
        add16(sh, 0x0303);
        sh += binary_slice(r, 32);
        sh += static_cast<char>(32);
        sh += sid;
        add16(sh, 0x1301);
        sh += '\0';
        std::string sext;
        add16(sext, 0x002b);
        add16(sext, 2);
        add16(sext, 0x0304);
        add16(sext, 0x0033);
        add16(sext, 36);
        add16(sext, 0x001d);
        add16(sext, 32);
        sext += binary_slice(r, 32);
        add16(sh, static_cast<uint16_t>(sext.size()));
        sh += sext;
        hs.clear();
        hs += '\x02';
        hs += '\0';
        add16(hs, static_cast<uint16_t>(sh.size()));
        hs += sh;
        out.clear();
        out += '\x16';
        add16(out, 0x0303);
        add16(out, static_cast<uint16_t>(hs.size()));
        out += hs;
        out += std::string("\x14\x03\x03\x00\x01\x01", 6);
        tls_record(out, 0x17, binary_slice(r, static_cast<size_t>(r.range(2000, 5000))));
        t = send_data(s, c, false, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                      t + c.rtt + r.range(500, 10000), true);
        out.assign("\x14\x03\x03\x00\x01\x01", 6);
        tls_record(out, 0x17, binary_slice(r, 53));
        t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                      t + r.range(200, 2000), false);
        int n = static_cast<int>(r.range(1, 4));
        for (int i = 0; i < n; ++i) {
            out.clear();
            tls_record(out, 0x17, binary_slice(r, static_cast<size_t>(r.range(80, 900))));
            t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                          t + (i == 0 ? r.range(50, 500) : think_time(r)), false);
            size_t total = body_size(r);
            out.clear();
            while (total > 0) {
                size_t m = std::min<size_t>(total, 16384);
                tls_record(out, 0x17, binary_slice(r, m + 17));
                total -= m;
            }
            t = send_data(s, c, false, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                          t + c.rtt + r.range(200, 30000), true);
        }
        out.clear();
        tls_record(out, 0x15, binary_slice(r, 19));  // encrypted close_notify
        t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                      t + r.range(1000, 200000), false);
        teardown(s, c, r, t + 50);
    }

    void plan_icmp(Session& s, Rng& r, int64_t t) {
        Conn c;
        make_conn(r, c, Kind::kIcmp, 0);
        ++rec_.sessions.icmp;
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

    FlowTuple tuple(const Conn& c, const char* proto) {
        FlowTuple ft;
        ft.proto = proto;
        ft.src = addr_string(c.v6, c.client->addr);
        ft.dst = addr_string(c.v6, c.server->addr);
        ft.sport = c.cport;
        ft.dport = c.sport;
        ft.vlan = c.vlan;
        return ft;
    }

    void plan_session(Session& s, int64_t t) {
        Rng r(rng_.next());
        if (r.chance(0.01) || session_count_ == 0) {
            arp_pair(s, clients4_[r.below(clients4_.size())], t);
            t += 300;
        }
        double u = r.unit();
        if (u < 0.55) {
            plan_http(s, r, t);
        } else if (u < 0.83) {
            plan_dns(s, r, t);
        } else if (u < 0.95) {
            plan_tls(s, r, t);
        } else {
            plan_icmp(s, r, t);
        }
        ++session_count_;
    }

    Options opt_;
    Rng rng_;
    Record rec_;
    std::vector<uint8_t> text_, binary_, scratch_;
    std::vector<Host> clients4_, clients6_, servers4_, servers6_, resolvers4_, resolvers6_;
    std::unordered_set<uint64_t> used_keys_;
    uint64_t attack_next_ = 0;
    uint64_t session_count_ = 0;
};

Record Generator::run(const std::string& path) {
    PcapWriter w(path);
    Tally tally(rec_, opt_.attacks);
    struct Item {
        int64_t ts;
        uint64_t seq;
        Session* s;
        bool operator>(const Item& o) const { return ts != o.ts ? ts > o.ts : seq > o.seq; }
    };
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    std::vector<std::unique_ptr<Session>> owned;
    std::vector<Session*> free_list;
    Rng arrivals(opt_.seed ^ 0x617272ULL);
    int64_t next_arrival = kEpochUs;
    uint64_t planned = 24;
    uint64_t started = 0;
    uint64_t pcap_cnt = 0;
    const double mean_gap_us = 2000.0;
    for (;;) {
        bool can_start = opt_.size_bytes ? planned < opt_.size_bytes : started < opt_.sessions;
        if (can_start && (heap.empty() || next_arrival <= heap.top().ts)) {
            Session* s;
            if (free_list.empty()) {
                owned.push_back(std::make_unique<Session>());
                s = owned.back().get();
            } else {
                s = free_list.back();
                free_list.pop_back();
            }
            s->reset();
            s->seq = started++;
            plan_session(*s, next_arrival);
            planned += s->file_bytes();
            heap.push(Item{s->pkts[0].ts, s->seq, s});
            next_arrival +=
                static_cast<int64_t>(-std::log(1.0 - arrivals.unit()) * mean_gap_us) + 1;
            continue;
        }
        if (heap.empty()) {
            break;
        }
        Item it = heap.top();
        heap.pop();
        Session* s = it.s;
        const Pkt& p = s->pkts[s->next++];
        const uint8_t* frame = s->data.data() + p.off;
        ++pcap_cnt;
        if (pcap_cnt == 1) {
            rec_.first_ts_us = p.ts;
        }
        rec_.last_ts_us = p.ts;
        w.packet(p.ts, frame, p.len);
        tally.observe(frame, p.len);
        if (p.attack >= 0) {
            rec_.attacks[static_cast<size_t>(p.attack)].packet = pcap_cnt;
        }
        if (s->next < s->pkts.size()) {
            heap.push(Item{s->pkts[s->next].ts, s->seq, s});
        } else {
            if (s->data.capacity() > (128u << 10)) {
                // Keep pooled sessions small: a rare huge session should not pin its memory.
                std::vector<uint8_t>().swap(s->data);
                std::vector<Pkt>().swap(s->pkts);
            }
            free_list.push_back(s);
        }
    }
    w.close();
    rec_.file_bytes = w.written();
    rec_.seed = opt_.seed;
    rec_.options = opt_;
    return rec_;
}

}  // namespace

std::string validate(const Options& o) {
    auto share_ok = [](double v) { return v >= 0.0 && v <= 1.0; };
    if (!share_ok(o.ipv6_share)) {
        return "--ipv6-share must be between 0 and 1";
    }
    if (!share_ok(o.vlan_share)) {
        return "--vlan-share must be between 0 and 1";
    }
    if (!share_ok(o.frag_share)) {
        return "--frag-share must be between 0 and 1";
    }
    if (!share_ok(o.attack_share)) {
        return "--attack-share must be between 0 and 1";
    }
    if (o.size_bytes == 0 && o.sessions == 0) {
        return "one of --size or --sessions must be greater than 0";
    }
    for (const auto& a : o.attacks) {
        if (a.empty() || a.size() > kMaxAttackLen) {
            return "--attack strings must be 1 to " + std::to_string(kMaxAttackLen) + " bytes";
        }
    }
    return {};
}

Record generate(const Options& options, const std::string& path) {
    std::string err = validate(options);
    if (!err.empty()) {
        throw std::invalid_argument(err);
    }
    Generator g(options);
    return g.run(path);
}

nlohmann::json to_json(const Options& o) {
    nlohmann::json j;
    j["seed"] = o.seed;
    j["size_bytes"] = o.size_bytes;
    j["sessions"] = o.size_bytes ? 0 : o.sessions;
    j["ipv6_share"] = o.ipv6_share;
    j["vlan_share"] = o.vlan_share;
    j["frag_share"] = o.frag_share;
    j["attacks"] = o.attacks;
    j["attack_share"] = o.attack_share;
    return j;
}

nlohmann::json to_json(const Record& r) {
    nlohmann::json j;
    j["packets"] = r.packets;
    j["bytes"] = r.bytes;
    j["ipv4"] = r.ipv4;
    j["ipv6"] = r.ipv6;
    j["tcp"] = r.tcp;
    j["udp"] = r.udp;
    j["icmpv4"] = r.icmpv4;
    j["icmpv6"] = r.icmpv6;
    j["arp"] = r.arp;
    j["vlan"] = r.vlan;
    j["ipv4_fragments"] = r.ipv4_fragments;
    j["ipv6_fragments"] = r.ipv6_fragments;
    j["reassembled"] = r.reassembled;
    j["flows"] = r.flows;
    j["flows_tcp"] = r.flows_tcp;
    j["flows_udp"] = r.flows_udp;
    j["flows_icmpv4"] = r.flows_icmpv4;
    j["flows_icmpv6"] = r.flows_icmpv6;
    j["file_bytes"] = r.file_bytes;
    j["first_ts_us"] = r.first_ts_us;
    j["last_ts_us"] = r.last_ts_us;
    j["sessions"] = {{"http", r.sessions.http},
                     {"dns", r.sessions.dns},
                     {"tls", r.sessions.tls},
                     {"icmp", r.sessions.icmp}};
    j["http_requests"] = r.http_requests;
    nlohmann::json attacks = nlohmann::json::array();
    for (const auto& a : r.attacks) {
        attacks.push_back({{"string", a.string},
                           {"location", a.location},
                           {"packet", a.packet},
                           {"flow",
                            {{"proto", a.flow.proto},
                             {"src", a.flow.src},
                             {"sport", a.flow.sport},
                             {"dst", a.flow.dst},
                             {"dport", a.flow.dport},
                             {"vlan", a.flow.vlan}}}});
    }
    j["attacks"] = attacks;
    j["attack_string_packets"] = r.attack_string_packets;
    j["seed"] = r.seed;
    j["options"] = to_json(r.options);
    return j;
}

bool parse_size(const std::string& text, uint64_t* out) {
    size_t i = 0;
    uint64_t v = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        uint64_t d = static_cast<uint64_t>(text[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
        ++i;
    }
    if (i == 0) {
        return false;
    }
    std::string suf;
    for (; i < text.size(); ++i) {
        suf += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
    }
    uint64_t mult = 1;
    if (!suf.empty()) {
        char u = suf[0];
        std::string rest = suf.substr(1);
        if (rest != "" && rest != "b" && rest != "ib") {
            return false;
        }
        switch (u) {
            case 'b':
                mult = 1;
                if (!rest.empty())
                    return false;
                break;
            case 'k':
                mult = 1ULL << 10;
                break;
            case 'm':
                mult = 1ULL << 20;
                break;
            case 'g':
                mult = 1ULL << 30;
                break;
            case 't':
                mult = 1ULL << 40;
                break;
            default:
                return false;
        }
    }
    if (v > UINT64_MAX / mult) {
        return false;
    }
    *out = v * mult;
    return true;
}

}  // namespace picket::tools::trafficgen
