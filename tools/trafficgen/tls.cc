#include <algorithm>
#include <cstring>
#include <string>

#include "tools/trafficgen/planner.h"
#include "tools/trafficgen/wire.h"

namespace picket::tools::trafficgen {
namespace {

// One TLS record (RFC 8446 5.1), legacy_record_version 0x0303.
void tls_record(std::string& out, uint8_t type, std::string_view body) {
    out += static_cast<char>(type);
    append16(out, 0x0303);
    append16(out, static_cast<uint16_t>(body.size()));
    out += body;
}

}  // namespace

void plan_tls(Planner& p, Session& s, Rng& r, int64_t t) {
    Conn c;
    p.make_conn(r, c, Kind::kTls, 443);
    ++p.rec.sessions.tls;
    t = handshake(s, c, t);
    const std::string& sni = c.server->name;
    std::string sid(p.binary_slice(r, 32));
    std::string key(p.binary_slice(r, 32));
    // ClientHello (RFC 8446 4.1.2), extensions as a browser sends them.
    std::string ext;
    std::string sn;
    append16(sn, static_cast<uint16_t>(sni.size() + 3));
    sn += '\0';
    append16(sn, static_cast<uint16_t>(sni.size()));
    sn += sni;
    auto add_ext = [&ext](uint16_t type, const std::string& data) {
        append16(ext, type);
        append16(ext, static_cast<uint16_t>(data.size()));
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
    append16(ks, 36);
    append16(ks, 0x001d);
    append16(ks, 32);
    ks += key;
    add_ext(0x0033, ks);
    std::string hello;
    append16(hello, 0x0303);
    hello += p.binary_slice(r, 32);
    hello += static_cast<char>(32);
    hello += sid;
    static const uint16_t kSuites[] = {0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f,
                                       0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013,
                                       0xc014, 0x009c, 0x009d, 0x002f, 0x0035};
    append16(hello, static_cast<uint16_t>(2 * std::size(kSuites)));
    for (uint16_t cs : kSuites) {
        append16(hello, cs);
    }
    hello += '\x01';
    hello += '\0';
    // Pad like browsers do (RFC 7685) so the ClientHello is at least 512 bytes.
    size_t so_far = 4 + hello.size() + 2 + ext.size();
    if (so_far < 508) {
        add_ext(0x0015, std::string(508 - so_far - 4, '\0'));
    }
    append16(hello, static_cast<uint16_t>(ext.size()));
    hello += ext;
    std::string hs;
    hs += '\x01';
    hs += '\0';
    append16(hs, static_cast<uint16_t>(hello.size()));
    hs += hello;
    std::string out;
    tls_record(out, 0x16, hs);
    t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                  t + r.range(100, 3000), false);
    // ServerHello + ChangeCipherSpec + encrypted handshake (opaque).
    std::string sh;
    append16(sh, 0x0303);
    sh += p.binary_slice(r, 32);
    sh += static_cast<char>(32);
    sh += sid;
    append16(sh, 0x1301);
    sh += '\0';
    std::string sext;
    append16(sext, 0x002b);
    append16(sext, 2);
    append16(sext, 0x0304);
    append16(sext, 0x0033);
    append16(sext, 36);
    append16(sext, 0x001d);
    append16(sext, 32);
    sext += p.binary_slice(r, 32);
    append16(sh, static_cast<uint16_t>(sext.size()));
    sh += sext;
    hs.clear();
    hs += '\x02';
    hs += '\0';
    append16(hs, static_cast<uint16_t>(sh.size()));
    hs += sh;
    out.clear();
    out += '\x16';
    append16(out, 0x0303);
    append16(out, static_cast<uint16_t>(hs.size()));
    out += hs;
    out += std::string("\x14\x03\x03\x00\x01\x01", 6);
    tls_record(out, 0x17, p.binary_slice(r, static_cast<size_t>(r.range(2000, 5000))));
    t = send_data(s, c, false, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                  t + c.rtt + r.range(500, 10000), true);
    out.assign("\x14\x03\x03\x00\x01\x01", 6);
    tls_record(out, 0x17, p.binary_slice(r, 53));
    t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                  t + r.range(200, 2000), false);
    int n = static_cast<int>(r.range(1, 4));
    for (int i = 0; i < n; ++i) {
        out.clear();
        tls_record(out, 0x17, p.binary_slice(r, static_cast<size_t>(r.range(80, 900))));
        t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                      t + (i == 0 ? r.range(50, 500) : think_time(r)), false);
        size_t total = body_size(r);
        out.clear();
        while (total > 0) {
            size_t m = std::min<size_t>(total, 16384);
            tls_record(out, 0x17, p.binary_slice(r, m + 17));
            total -= m;
        }
        t = send_data(s, c, false, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                      t + c.rtt + r.range(200, 30000), true);
    }
    out.clear();
    tls_record(out, 0x15, p.binary_slice(r, 19));  // encrypted close_notify
    t = send_data(s, c, true, reinterpret_cast<const uint8_t*>(out.data()), out.size(),
                  t + r.range(1000, 200000), false);
    teardown(s, c, r, t + 50);
}

}  // namespace picket::tools::trafficgen
