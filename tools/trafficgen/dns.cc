#include <algorithm>
#include <cstring>
#include <string>

#include "tools/trafficgen/planner.h"
#include "tools/trafficgen/wire.h"

namespace picket::tools::trafficgen {
namespace {

// A name in DNS wire form (RFC 1035 3.1), uncompressed.
void dns_name(std::string& out, const std::string& name) {
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

}  // namespace

void plan_dns(Planner& p, Session& s, Rng& r, int64_t t) {
    Conn c;
    p.make_conn(r, c, Kind::kDns, 53);
    ++p.rec.sessions.dns;
    bool big = r.chance(p.opt.frag_share);
    std::string name;
    if (r.chance(0.7)) {
        name = pick_skewed(r, p.servers4).name;
    } else {
        name = std::string(r.pick(kWords)) + "." + r.pick(kLorem) + "-" + hex_token(r, 6) + "." +
               r.pick(kTlds);
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
        append16(q, id);
        append16(q, 0x0100);  // RD
        append16(q, 1);
        append16(q, 0);
        append16(q, 0);
        append16(q, edns ? 1 : 0);
        dns_name(q, name);
        append16(q, qt);
        append16(q, 1);
        if (edns) {
            q += '\0';
            append16(q, 41);
            append16(q, big ? 4096 : 1232);
            append32(q, 0);
            append16(q, 0);
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
        append16(a, id);
        append16(a, nx ? 0x8183 : 0x8180);
        append16(a, 1);
        append16(a, static_cast<uint16_t>(an));
        append16(a, 0);
        append16(a, edns ? 1 : 0);
        size_t qend = q.size() - (edns ? 11 : 0);
        a.append(q, 12, qend - 12);
        for (int k = 0; k < an; ++k) {
            append16(a, 0xc00c);
            append16(a, qt);
            append16(a, 1);
            append32(a, static_cast<uint32_t>(r.range(30, 86400)));
            std::string rd;
            if (qt == 1) {
                const Host& h = p.servers4[r.below(p.servers4.size())];
                rd.assign(reinterpret_cast<const char*>(h.addr), 4);
            } else if (qt == 28) {
                const Host& h = p.servers6[r.below(p.servers6.size())];
                rd.assign(reinterpret_cast<const char*>(h.addr), 16);
            } else if (qt == 15) {
                append16(rd, static_cast<uint16_t>(10 * (k + 1)));
                dns_name(rd, std::string("mx") + std::to_string(k + 1) + "." + name);
            } else {
                {
                    std::string txt;
                    if (big) {
                        txt = "v=DKIM1; k=rsa; p=";
                        std::string_view tv = p.text_slice(r, 230);
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
            append16(a, static_cast<uint16_t>(rd.size()));
            a += rd;
        }
        if (edns) {
            a += '\0';
            append16(a, 41);
            append16(a, 1232);
            append32(a, 0);
            append16(a, 0);
        }
        answers[i] = a;
    }
    // Both queries leave first (as a stub resolver sends them), then the answers.
    for (int i = 0; i < nq; ++i) {
        udp(s, c, true, reinterpret_cast<const uint8_t*>(queries[i].data()), queries[i].size(),
            t + i * 40, p.scratch);
    }
    t += c.rtt / 4 + r.range(100, 30000);
    for (int i = 0; i < nq; ++i) {
        udp(s, c, false, reinterpret_cast<const uint8_t*>(answers[i].data()), answers[i].size(),
            t + i * r.range(50, 3000), p.scratch);
    }
}

}  // namespace picket::tools::trafficgen
