// libFuzzer target for detection itself (issue #27): a small rule set generated from the input
// by a fixed grammar (content and its modifiers, pcre, byte_test / byte_jump / byte_extract /
// byte_math, isdataat, asn1, dsize, bsize, sticky buffers with transforms, flow, flowbits, noalert,
// thresholds, varied headers) x a sequence of packets, stream chunks and app-layer
// transactions, through the real DetectEngine twice: once with the Hyperscan prefilter
// (detect.mpm-algo hs) and once without (none). detect/README.md says both give exactly the same
// alerts; any difference (or a different load result or stream tail) aborts with both alert
// lists, the rules and the event that differed.
//
// Input: [rule bytes length: 2 bytes LE][rule bytes][event records]. The rule bytes drive the
// grammar (a read past their end gives 0, so any length makes whole rules); each event is
// [kind][endpoints][ports + app][arg][length][data]: see Event below. Seeds:
// tests/fuzz/corpus/detect (corpus/make_detect_corpus.py).
//
// The two engines are cached while the rule text stays the same (libFuzzer often mutates only
// the events), except when a rule has a threshold: its state lives in the engine.
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sensor/decode/decode.h"
#include "sensor/detect/detect.h"
#include "sensor/flow/flow.h"
#include "tests/support/frames.h"

namespace {

using namespace picket::sensor;
using detect::AppProto;
using detect::BufferId;

// Reads front to back; past the end every read gives 0.
class Reader {
public:
    Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
    bool done() const { return pos_ >= size_; }
    // Up to n bytes (fewer at the end).
    std::string_view bytes(size_t n) {
        n = n < size_ - pos_ ? n : size_ - pos_;
        std::string_view v(reinterpret_cast<const char*>(data_ + pos_), n);
        pos_ += n;
        return v;
    }

private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
};

template <size_t N>
const char* pick(Reader& r, const char* const (&table)[N]) {
    return table[r.u8() % N];
}

// ---------------------------------------------------------------------------------------
// The rule grammar.

constexpr const char* kActions[] = {"alert", "alert",  "alert", "alert",
                                    "drop",  "reject", "pass",  "alert"};
constexpr const char* kProtos[] = {"tcp",     "tcp",        "tcp", "udp", "ip",   "http",
                                   "tcp-pkt", "tcp-stream", "dns", "tls", "icmp", "ipv6"};
constexpr const char* kAddrs[] = {"any",
                                  "any",
                                  "any",
                                  "10.0.0.1",
                                  "10.0.0.0/24",
                                  "!10.0.0.1",
                                  "[10.0.0.1,192.168.1.0/24]",
                                  "$HOME_NET",
                                  "$EXTERNAL_NET",
                                  "2001:db8::1",
                                  "[!10.0.0.2,10.0.0.0/8]",
                                  "192.168.1.5",
                                  "[2001:db8::/64,8.8.8.8]",
                                  "!2001:db8::2"};
constexpr const char* kPorts[] = {"any",      "any",   "any",    "80", "!80",
                                  "[80,443]", "1024:", "1:1023", "53", "[40000:40010,8080]",
                                  "!53",      "443"};
constexpr const char* kSticky[] = {
    "pkt_data",          "http.uri",  "http.uri.raw",    "http.method",      "http.header",
    "http.request_body", "file.data", "http.user_agent", "http.host",        "http.cookie",
    "dns.query",         "tls.sni",   "http.stat_code",  "tls.cert_subject", "ja3.hash"};
constexpr const char* kTransforms[] = {"to_lowercase",        "to_uppercase", "strip_whitespace",
                                       "compress_whitespace", "url_decode",   "dotprefix"};
constexpr const char* kModifiers[] = {"http_uri",        "http_raw_uri",     "http_method",
                                      "http_header",     "http_client_body", "http_cookie",
                                      "http_user_agent", "http_host",        "http_stat_code"};
constexpr const char* kFlows[] = {
    "flow:established",           "flow:to_server",   "flow:to_client",
    "flow:established,to_server", "flow:only_stream", "flow:no_stream",
    "flow:not_established",       "flow:stateless",   "flow:from_server,established"};
constexpr const char* kFlowbits[] = {"flowbits:set,a",    "flowbits:isset,a", "flowbits:isnotset,a",
                                     "flowbits:toggle,b", "flowbits:unset,a", "flowbits:isset,b",
                                     "flowbits:set,b",    "flowbits:noalert"};
constexpr const char* kThresholds[] = {"threshold:type limit,track by_src,count 1,seconds 60",
                                       "threshold:type threshold,track by_dst,count 2,seconds 60",
                                       "threshold:type both,track by_src,count 2,seconds 10",
                                       "detection_filter:track by_src,count 2,seconds 60"};
constexpr const char* kHeaderOpts[] = {
    "ttl:64",     "ttl:<100",     "flags:S",       "flags:AP+",    "tos:0",
    "sameip",     "urilen:>3",    "urilen:<5,raw", "dns.opcode:0", "tls.version:1.2",
    "ip_proto:6", "window:>1000", "ftpbounce"};
constexpr const char* kCmp[] = {"", "<", ">", "<=", ">=", "!"};
constexpr const char* kByteOps[] = {"<", ">", "=", "!=", "<=", ">=", "&", "^", "!<"};
constexpr const char* kBases[] = {"dec", "hex", "oct"};
constexpr const char* kMathOps[] = {"+", "-", "*", "/", "<<", ">>"};
constexpr const char* kPcreAtoms[] = {".", "[a-f]", "\\d", "\\s", "\\w", "[^0]", "(ab|c)", "\\x00"};
constexpr const char* kQuantifiers[] = {"", "", "", "+", "*", "?", "{1,3}", "+?"};

// Content and pcre bytes: letters and digits as they are, anything else hex-escaped, so no
// quote, ';' or '\' can end the value.
bool plain(uint8_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

void append_content_bytes(std::string_view b, std::string* out) {
    static const char kHex[] = "0123456789abcdef";
    for (char ch : b) {
        const auto c = static_cast<uint8_t>(ch);
        if (plain(c) || c == ' ') {
            out->push_back(static_cast<char>(c));
        } else {
            out->push_back('|');
            out->push_back(kHex[c >> 4]);
            out->push_back(kHex[c & 15]);
            out->push_back('|');
        }
    }
}

std::string number(Reader& r, int lo, int span) {
    return std::to_string(lo + r.u8() % span);
}

class RuleGen {
public:
    explicit RuleGen(Reader& r) : r_(r) {}

    std::string rule(uint32_t sid) {
        vars_ = 0;
        std::string s = pick(r_, kActions);
        s += ' ';
        s += pick(r_, kProtos);
        s += ' ';
        s += pick(r_, kAddrs);
        s += ' ';
        s += pick(r_, kPorts);
        s += r_.u8() % 6 == 0 ? " <> " : " -> ";
        s += pick(r_, kAddrs);
        s += ' ';
        s += pick(r_, kPorts);
        s += " (";
        const int n = r_.u8() % 7;
        for (int i = 0; i < n; ++i) {
            option(&s);
            s += "; ";
        }
        s += "sid:" + std::to_string(sid) + ";)\n";
        return s;
    }

private:
    // "v0" .. "v2" once byte_extract / byte_math defined them, else a small number.
    std::string value(int lo, int span) {
        const uint8_t b = r_.u8();
        if (vars_ > 0 && b >= 0xe0) {
            return "v" + std::to_string(b % vars_);
        }
        return std::to_string(lo + b % span);
    }
    std::string new_var() {
        const int v = vars_ < 3 ? vars_++ : 2;
        return "v" + std::to_string(v);
    }

    void content(std::string* s) {
        const uint8_t flags = r_.u8();
        const uint8_t mods = r_.u8();
        *s += "content:";
        *s += (flags & 1) ? "!\"" : "\"";
        append_content_bytes(r_.bytes(1 + r_.u8() % 8), s);
        *s += '"';
        if (mods & 1) {
            *s += "; nocase";
        }
        if (mods & 2) {
            *s += "; offset:" + value(0, 16);
        }
        if (mods & 4) {
            *s += "; depth:" + value(1, 32);
        }
        if (mods & 8) {
            *s += "; distance:" + value(-4, 16);
        }
        if (mods & 16) {
            *s += "; within:" + value(1, 32);
        }
        if (mods & 32) {
            const uint8_t k = r_.u8() % 4;
            *s += k == 0   ? "; fast_pattern"
                  : k == 1 ? "; fast_pattern:only"
                  : k == 2 ? "; fast_pattern:" + number(r_, 0, 4) + "," + number(r_, 1, 4)
                           : "; rawbytes";
        }
        if (mods & 64) {
            *s += (flags & 2) ? "; startswith" : "; endswith";
        }
        if (mods & 128) {
            *s += "; ";
            *s += pick(r_, kModifiers);
        }
    }

    void pcre(std::string* s) {
        const uint8_t flags = r_.u8();
        *s += (flags & 1) ? "pcre:!\"/" : "pcre:\"/";
        if (flags & 2) {
            *s += '^';
        }
        const int atoms = 1 + r_.u8() % 5;
        for (int i = 0; i < atoms; ++i) {
            const uint8_t a = r_.u8();
            if (a < 0x90) {
                // A literal byte: letters and digits plain, anything else \xHH.
                const uint8_t c = r_.u8();
                if (plain(c)) {
                    s->push_back(static_cast<char>(c));
                } else {
                    char esc[8];
                    std::snprintf(esc, sizeof(esc), "\\x%02x", c);
                    *s += esc;
                }
            } else {
                *s += kPcreAtoms[a % (sizeof(kPcreAtoms) / sizeof(kPcreAtoms[0]))];
            }
            *s += pick(r_, kQuantifiers);
        }
        if (flags & 4) {
            *s += '$';
        }
        *s += '/';
        if (flags & 8) {
            *s += 'i';
        }
        if (flags & 16) {
            *s += 's';
        }
        if (flags & 32) {
            *s += 'm';
        }
        if (flags & 64) {
            *s += 'R';
        }
        if (flags & 128) {
            *s += 'U';  // Snort's buffer flag: the http uri
        }
        *s += '"';
    }

    // The flags byte_test / byte_jump / byte_extract share.
    void number_flags(uint8_t f, bool string_ok, std::string* s) {
        if (f & 1) {
            *s += ",relative";
        }
        if (f & 2) {
            *s += ",little";
        }
        if (string_ok && (f & 4)) {
            *s += ",string,";
            *s += pick(r_, kBases);
        }
    }

    void option(std::string* s) {
        const uint8_t kind = r_.u8() % 20;
        switch (kind) {
            case 0:
            case 1:
            case 2:
            case 3:
                content(s);
                return;
            case 4:
            case 5:
                pcre(s);
                return;
            case 6: {
                const uint8_t f = r_.u8();
                *s += "byte_test:" + value(1, (f & 4) ? 10 : 4) + ",";
                *s += pick(r_, kByteOps);
                *s += "," + value(0, 64) + "," + value(-2, 16);
                number_flags(f, true, s);
                if (f & 8) {
                    *s += ",bitmask 0x" + std::to_string(1 + r_.u8() % 9) + "f";
                }
                return;
            }
            case 7: {
                const uint8_t f = r_.u8();
                *s += "byte_jump:" + value((f & 4) ? 1 : 0, (f & 4) ? 6 : 5) + "," + value(-2, 16);
                number_flags(f, true, s);
                if (f & 8) {
                    *s += ",align";
                }
                if (f & 16) {
                    *s += (f & 32) ? ",from_beginning" : ",from_end";
                }
                if (f & 64) {
                    *s += ",post_offset " + number(r_, -4, 12);
                }
                if (f & 128) {
                    *s += ",multiplier " + number(r_, 1, 4);
                }
                return;
            }
            case 8: {
                const uint8_t f = r_.u8();
                *s += "byte_extract:" + number(r_, 1, (f & 4) ? 5 : 4) + "," + number(r_, -1, 16) +
                      "," + new_var();
                number_flags(f, true, s);
                if (f & 8) {
                    *s += ",multiplier " + number(r_, 1, 4);
                }
                if (f & 16) {
                    *s += ",align 2";
                }
                return;
            }
            case 9: {
                const uint8_t f = r_.u8();
                *s += "byte_math:bytes " + number(r_, 1, 4) + ",offset " + number(r_, 0, 12) +
                      ",oper " + pick(r_, kMathOps) + ",rvalue " + number(r_, 1, 8) + ",result " +
                      new_var();
                if (f & 1) {
                    *s += ",relative";
                }
                if (f & 2) {
                    *s += ",endian little";
                }
                return;
            }
            case 10: {
                const uint8_t f = r_.u8();
                if (f & 4) {
                    // asn1: BER decoding from an absolute or relative (maybe negative) offset.
                    *s += (f & 8) ? "asn1:bitstring_overflow"
                                  : "asn1:oversize_length " + number(r_, 0, 40);
                    *s += (f & 16) ? ", double_overflow" : "";
                    *s += (f & 32) ? ", relative_offset " + number(r_, -8, 16)
                                   : ", absolute_offset " + number(r_, 0, 16);
                    return;
                }
                *s += (f & 1) ? "isdataat:!" : "isdataat:";
                *s += value(0, 40);
                if (f & 2) {
                    *s += ",relative";
                }
                return;
            }
            case 11:
            case 12: {
                const uint8_t f = r_.u8();
                *s += (kind == 11) ? "dsize:" : "bsize:";
                if (f % 7 == 6) {
                    *s += number(r_, 0, 20) + "<>" + number(r_, 2, 60);
                } else {
                    *s += kCmp[f % 6];
                    *s += number(r_, 0, 64);
                }
                return;
            }
            case 13:
            case 14: {
                *s += pick(r_, kSticky);
                const int t = r_.u8() % 4;
                for (int i = 0; i < t; ++i) {
                    *s += "; ";
                    *s += pick(r_, kTransforms);
                }
                return;
            }
            case 15:
                *s += pick(r_, kFlows);
                return;
            case 16:
                *s += pick(r_, kFlowbits);
                return;
            case 17:
                *s += (r_.u8() & 1) ? "noalert" : pick(r_, kHeaderOpts);
                return;
            case 18:
                // Rarely: a rule set with a threshold cannot stay loaded (engines_for()).
                *s += (r_.u8() & 3) == 0 ? pick(r_, kThresholds) : pick(r_, kHeaderOpts);
                return;
            default:
                *s += pick(r_, kHeaderOpts);
                return;
        }
    }

    Reader& r_;
    int vars_ = 0;
};

// ---------------------------------------------------------------------------------------
// Traffic.

constexpr uint8_t kV4Hosts[][4] = {{10, 0, 0, 1}, {10, 0, 0, 2}, {192, 168, 1, 5}, {8, 8, 8, 8}};
constexpr uint16_t kPortsUsed[] = {80, 443, 53, 8080, 40000, 40001, 1234, 22};

// A raw IP datagram (DLT_RAW) from `client` to `server` (swapped when to_client) with
// protocol `proto` (6, 17 or 1) and `payload`. Checksums are left 0 (decoded without checks).
std::vector<uint8_t> build_frame(bool v6, int client, int server, uint16_t cport, uint16_t sport,
                                 bool to_client, uint8_t proto, uint8_t arg,
                                 std::string_view payload) {
    namespace frames = picket::testing::frames;
    int src = client, dst = server;
    uint16_t sp = cport, dp = sport;
    if (to_client) {
        std::swap(src, dst);
        std::swap(sp, dp);
    }
    const frames::Bytes data(payload.begin(), payload.end());
    frames::Bytes l4;
    if (proto == 1) {
        l4 = frames::icmp(arg, 0, 1, arg, data);  // ICMPv6 on v6: type, code 0, id, seq
    } else if (proto == 6) {
        l4 = frames::tcp(sp, dp, arg & 0x3f, {}, data);
        frames::set_tcp_numbers(l4, arg, 0, (arg & 0x80) ? 0x4000 : 0x0100);
    } else {
        l4 = frames::udp(sp, dp, data);
    }
    const uint8_t ttl = (arg & 1) ? 64 : 128;
    if (v6) {
        // 2001:db8::1 .. 2001:db8::4
        std::array<uint8_t, 16> a{0x20, 0x01, 0x0d, 0xb8};
        std::array<uint8_t, 16> b = a;
        a[15] = static_cast<uint8_t>(1 + src);
        b[15] = static_cast<uint8_t>(1 + dst);
        frames::V6 h;
        h.with_addrs(a, b).with_tclass(0).with_hlim(ttl).with_nh(proto == 1 ? 58 : proto);
        return frames::ipv6(h.with_l4_checksum(false), l4);
    }
    frames::V4 h;
    h.with_addrs(std::to_array(kV4Hosts[src]), std::to_array(kV4Hosts[dst]))
        .with_proto(proto)
        .with_tos((arg & 2) ? 0x10 : 0)
        .with_id(arg)
        .with_ttl(ttl)
        .with_l4_checksum(false)
        .with_ip_checksum(false);
    return frames::ipv4(h, l4);
}

// Event kinds (first byte % 8).
enum EventKind : uint8_t {
    kTcpPacket,   // a TCP packet, no stream view
    kTcpStream,   // a TCP packet whose payload is also the new bytes of its direction's stream
    kStreamOnly,  // a stream chunk on a pseudo packet (no payload): stream_only
    kUdpPacket,
    kHttpTx,  // an HTTP transaction: data split at 0 bytes into its buffers
    kDnsTx,
    kTlsTx,
    kIcmpPacket,
};

constexpr BufferId kHttpBuffers[] = {
    BufferId::kHttpUri,          BufferId::kHttpUriRaw,    BufferId::kHttpMethod,
    BufferId::kHttpHeader,       BufferId::kHttpHeaderRaw, BufferId::kHttpRequestBody,
    BufferId::kHttpResponseBody, BufferId::kHttpUserAgent, BufferId::kHttpHost,
    BufferId::kHttpCookie,       BufferId::kHttpStatCode,  BufferId::kHttpHostRaw};
constexpr BufferId kTlsBuffers[] = {BufferId::kTlsSni, BufferId::kTlsCertSubject,
                                    BufferId::kTlsCertIssuer, BufferId::kJa3Hash,
                                    BufferId::kJa3String};

// One event, decoded from the input: [kind][endpoints][ports + app][arg][len][data].
struct Event {
    EventKind kind;
    int client, server;  // host indices
    bool v6, to_client, established, in_stream;
    uint16_t cport, sport;
    AppProto app;
    uint8_t arg;  // TCP flags / ICMP type / stream tail / tx id / dns opcode
    std::string_view data;
};

Event read_event(Reader& r) {
    Event e;
    e.kind = static_cast<EventKind>(r.u8() % 8);
    const uint8_t ep = r.u8();
    e.client = ep & 3;
    e.server = (ep >> 2) & 3;
    e.v6 = (ep & 0x10) != 0;
    e.to_client = (ep & 0x20) != 0;
    e.established = (ep & 0x40) != 0;
    e.in_stream = (ep & 0x80) != 0;
    const uint8_t pp = r.u8();
    e.sport = kPortsUsed[pp & 7];
    e.cport = kPortsUsed[(pp >> 3) & 7];
    constexpr AppProto kApps[] = {AppProto::kUnknown, AppProto::kHttp, AppProto::kDns,
                                  AppProto::kTls};
    e.app = kApps[pp >> 6];
    e.arg = r.u8();
    e.data = r.bytes(r.u8());
    return e;
}

// What one inspection produced, compared between the two engines.
struct Outcome {
    std::vector<std::string> alerts;  // "sid 3 stream tx 0 drop"
    bool passed = false, silent_drop = false, silent_reject = false;
    bool operator==(const Outcome& o) const {
        return alerts == o.alerts && passed == o.passed && silent_drop == o.silent_drop &&
               silent_reject == o.silent_reject;
    }
    std::string to_string() const {
        std::string s;
        for (const auto& a : alerts) {
            s += "  " + a + "\n";
        }
        if (alerts.empty()) {
            s += "  (no alert)\n";
        }
        s += std::string("  passed ") + (passed ? "yes" : "no") + ", silent drop " +
             (silent_drop ? "yes" : "no") + ", silent reject " + (silent_reject ? "yes" : "no") +
             "\n";
        return s;
    }
};

// One engine with a worker, a flow table and the per-flow state the sensor keeps beside it
// (stream bytes per direction, the transactions' alert log).
class Run {
public:
    explicit Run(std::shared_ptr<const detect::DetectEngine> engine)
        : engine_(std::move(engine)),
          flow_state_(engine_->flowbit_registry()),
          worker_(engine_, &flow_state_),
          flows_(flow_config()),
          infos_(engine_->rule_infos()) {
        flows_.set_on_free([this](flow::Flow& f) {
            flow_state_.release_flow(f);
            per_flow_.erase(&f);
        });
    }
    ~Run() { flows_.clear(); }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    Outcome inspect(const Event& e, const decode::Packet& p) {
        Outcome o;
        flow::Direction dir = flow::Direction::kToServer;
        flow::Flow* f = flows_.lookup(p, &dir);
        flows_.expire(p.ts_ns, 4);
        detect::InspectExtras x;
        x.app = e.app;
        detect::AlertRecord out[kCap];
        uint32_t n = 0;
        detect::StreamView sv;
        if (f != nullptr && e.established) {
            f->pkt_established = true;
        }
        PerFlow* pf = f != nullptr ? &per_flow_[f] : nullptr;
        std::string* stream =
            pf != nullptr ? &pf->stream[dir == flow::Direction::kToServer ? 0 : 1] : nullptr;
        switch (e.kind) {
            case kTcpStream:
            case kStreamOnly:
                if (stream != nullptr && p.has(decode::kFlagTcp)) {
                    // The window: up to `arg` bytes already inspected, then the new ones.
                    const size_t tail = std::min<size_t>(stream->size(), e.arg);
                    stream->erase(0, stream->size() - tail);
                    stream->append(e.data);
                    sv.data = reinterpret_cast<const uint8_t*>(stream->data());
                    sv.len = static_cast<uint32_t>(stream->size());
                    sv.new_off = static_cast<uint32_t>(tail);
                    x.stream = &sv;
                    x.pkt_in_stream = e.kind == kTcpStream && e.in_stream;
                    x.stream_only = e.kind == kStreamOnly;
                }
                n = worker_.inspect(p, f, dir, out, kCap, &x);
                break;
            case kHttpTx:
            case kDnsTx:
            case kTlsTx: {
                detect::AppView v;
                v.tx_id = e.arg & 3;
                if (e.kind == kHttpTx) {
                    v.proto = AppProto::kHttp;
                    split(e.data, kHttpBuffers, &v);
                } else if (e.kind == kDnsTx) {
                    v.proto = AppProto::kDns;
                    v.buf[static_cast<size_t>(BufferId::kDnsQuery)] = e.data;
                    v.dns_opcode = (e.arg & 0x80) ? -1 : (e.arg >> 2) & 15;
                } else {
                    v.proto = AppProto::kTls;
                    split(e.data, kTlsBuffers, &v);
                    v.tls_version = (e.arg & 4) ? 0x0304 : 0x0303;
                }
                x.app = v.proto;
                // A transaction's raw content options may see the stream bytes of its
                // direction, as the engine hands them over.
                if (e.in_stream && stream != nullptr && !stream->empty()) {
                    sv.data = reinterpret_cast<const uint8_t*>(stream->data());
                    sv.len = static_cast<uint32_t>(stream->size());
                    sv.new_off = 0;
                    x.stream = &sv;
                }
                n = worker_.inspect_tx(p, f, dir, v, pf != nullptr ? &pf->log : nullptr, out, kCap,
                                       &x);
                break;
            }
            default:
                n = worker_.inspect(p, f, dir, out, kCap, &x);
                break;
        }
        for (uint32_t i = 0; i < n; ++i) {
            o.alerts.push_back("sid " + std::to_string(infos_[out[i].rule_index].sid) +
                               (out[i].from_stream ? " stream" : " packet") + " tx " +
                               std::to_string(out[i].tx_id) + (out[i].drop_rule ? " drop" : ""));
        }
        o.passed = x.passed;
        o.silent_drop = x.silent_drop;
        o.silent_reject = x.silent_reject;
        // Keep the stream bounded: what a window may need is at most 255 bytes of tail.
        if (stream != nullptr && stream->size() > 1024) {
            stream->erase(0, stream->size() - 255);
        }
        return o;
    }

private:
    static constexpr uint32_t kCap = 15;  // packet_alert_max's default
    struct PerFlow {
        std::string stream[2];  // to server, to client
        detect::TxAlertLog log;
    };
    static flow::FlowConfig flow_config() {
        flow::FlowConfig fc;
        fc.memcap = 32 * sizeof(flow::Flow);
        fc.hash_size = 16;
        fc.hash_seed = 1;
        return fc;
    }
    template <size_t N>
    static void split(std::string_view data, const BufferId (&ids)[N], detect::AppView* v) {
        size_t k = 0;
        while (k < N) {
            const size_t z = data.find('\0');
            v->buf[static_cast<size_t>(ids[k++])] = data.substr(0, z);
            if (z == std::string_view::npos) {
                break;
            }
            data.remove_prefix(z + 1);
        }
    }

    std::shared_ptr<const detect::DetectEngine> engine_;
    detect::WorkerFlowState flow_state_;
    detect::DetectWorker worker_;
    flow::FlowTable flows_;
    std::unordered_map<const flow::Flow*, PerFlow> per_flow_;
    std::vector<detect::RuleInfo> infos_;  // by AlertRecord::rule_index
};

// The rule file: a memfd, rewritten for each new rule set and read through /proc/self/fd.
std::string rule_file(const std::string& rules) {
    static int fd = memfd_create("detect_fuzz.rules", 0);
    if (fd < 0) {
        std::perror("detect_fuzz: memfd_create");
        std::abort();
    }
    if (ftruncate(fd, 0) != 0 ||
        pwrite(fd, rules.data(), rules.size(), 0) != static_cast<ssize_t>(rules.size())) {
        std::perror("detect_fuzz: writing the rules");
        std::abort();
    }
    return "/proc/self/fd/" + std::to_string(fd);
}

struct Engines {
    std::shared_ptr<const detect::DetectEngine> hs, none;
    detect::LoadSummary hs_summary, none_summary;
};

[[noreturn]] void differ(const std::string& rules, const std::string& what) {
    std::fprintf(stderr, "detect_fuzz: detect.mpm-algo hs and none differ: %s\n--- rules:\n%s---\n",
                 what.c_str(), rules.c_str());
    std::abort();
}

// Loading costs far more than inspecting (ThresholdTable and the per-port groups are sized
// for a sensor), so the last kCacheSize rule sets stay loaded: the custom mutator below mostly
// changes the events of an input, and libFuzzer returns to the same inputs often. A rule set
// with a threshold is loaded afresh every time, as its state lives in the engine (so a
// reproducer never depends on the inputs run before it).
std::shared_ptr<const Engines> engines_for(const std::string& rules) {
    constexpr size_t kCacheSize = 16;
    static std::list<std::pair<std::string, std::shared_ptr<const Engines>>> cache;  // MRU first
    for (auto it = cache.begin(); it != cache.end(); ++it) {
        if (it->first == rules) {
            cache.splice(cache.begin(), cache, it);
            return cache.front().second;
        }
    }
    auto e = std::make_shared<Engines>();
    detect::DetectConfig cfg;
    cfg.rule_files = {rule_file(rules)};
    cfg.mpm_algo = detect::MpmAlgo::kHyperscan;
    e->hs = detect::DetectEngine::load(cfg, nullptr, &e->hs_summary);
    cfg.mpm_algo = detect::MpmAlgo::kNone;
    e->none = detect::DetectEngine::load(cfg, nullptr, &e->none_summary);
    const bool stateful = rules.find("threshold:") != std::string::npos ||
                          rules.find("detection_filter:") != std::string::npos;
    if (!stateful) {
        cache.emplace_front(rules, e);
        if (cache.size() > kCacheSize) {
            cache.pop_back();
        }
    }
    return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) {
        return 0;
    }
    const size_t rule_len = std::min<size_t>(data[0] | (data[1] << 8), size - 2);
    Reader rr(data + 2, rule_len);
    Reader er(data + 2 + rule_len, size - 2 - rule_len);

    RuleGen gen(rr);
    std::string rules;
    const uint32_t nrules = 1 + rr.u8() % 6;
    for (uint32_t i = 0; i < nrules; ++i) {
        rules += gen.rule(i + 1);
    }
    const std::shared_ptr<const Engines> engines = engines_for(rules);
    const Engines& eng = *engines;
    // DETECT_FUZZ_PRINT=1: show what an input means (to read a reproducer or check a seed).
    static const bool print = std::getenv("DETECT_FUZZ_PRINT") != nullptr;
    if (print) {
        std::fprintf(stderr, "--- rules:\n%s--- %s\n", rules.c_str(),
                     eng.hs_summary.to_string().c_str());
        for (const auto& d : eng.hs_summary.diagnostics) {
            std::fprintf(stderr, "  %s\n", d.to_string().c_str());
        }
    }
    if (eng.hs_summary.loaded != eng.none_summary.loaded ||
        eng.hs_summary.skipped != eng.none_summary.skipped) {
        differ(rules, "rules loaded: hs " + std::to_string(eng.hs_summary.loaded) + ", none " +
                          std::to_string(eng.none_summary.loaded));
    }
    if (eng.hs->stream_tail_bytes() != eng.none->stream_tail_bytes()) {
        differ(rules, "stream tail: hs " + std::to_string(eng.hs->stream_tail_bytes()) + ", none " +
                          std::to_string(eng.none->stream_tail_bytes()));
    }
    if (eng.hs_summary.loaded == 0) {
        return 0;
    }

    Run hs(eng.hs);
    Run none(eng.none);
    decode::DecodeContext ctx{decode::DecodeOptions{decode::ChecksumMode::kNo}};
    int64_t ts = 1000000000;
    for (int i = 0; i < 64 && !er.done(); ++i) {
        const Event e = read_event(er);
        uint8_t proto = 6;
        if (e.kind == kUdpPacket || e.kind == kDnsTx) {
            proto = 17;
        } else if (e.kind == kIcmpPacket) {
            proto = 1;
        }
        // A stream-only chunk comes on a pseudo packet: headers, no payload.
        const std::string_view payload = e.kind == kStreamOnly ? std::string_view() : e.data;
        const std::vector<uint8_t> frame = build_frame(e.v6, e.client, e.server, e.cport, e.sport,
                                                       e.to_client, proto, e.arg, payload);
        ts += 1000000;
        decode::Packet p;
        if (decode::decode_packet(
                ctx, decode::kDltRaw, frame.data(), static_cast<uint32_t>(frame.size()),
                static_cast<uint32_t>(frame.size()), ts, p) != decode::DecodeResult::kOk) {
            continue;
        }
        const Outcome a = hs.inspect(e, p);
        const Outcome b = none.inspect(e, p);
        if (print) {
            std::fprintf(stderr, "event %d: kind %d, %zu bytes\n%s", i, e.kind, e.data.size(),
                         a.to_string().c_str());
        }
        if (!(a == b)) {
            std::string hex;
            for (char c : e.data) {
                char h[4];
                std::snprintf(h, sizeof(h), "%02x", static_cast<uint8_t>(c));
                hex += h;
            }
            differ(rules, "event " + std::to_string(i) + " (kind " + std::to_string(e.kind) +
                              ", data " + hex + ")\n--- hs:\n" + a.to_string() + "--- none:\n" +
                              b.to_string());
        }
    }
    return 0;
}

// Mostly mutates the events only (7 times in 8), so that the rule set stays loaded
// (engines_for()); otherwise the whole input, rules included.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
    if (size >= 2 && seed % 8 != 0) {
        const size_t prefix = 2 + std::min<size_t>(data[0] | (data[1] << 8), size - 2);
        if (prefix < max_size) {
            return prefix + LLVMFuzzerMutate(data + prefix, size - prefix, max_size - prefix);
        }
    }
    return LLVMFuzzerMutate(data, size, max_size);
}
