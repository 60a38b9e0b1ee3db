// FTP: the input drives a two-direction conversation. Each chunk starts with a control byte:
// bit 7 picks the direction, the low bits the chunk length (1..64), so the fuzzer explores
// line splits in both directions as well as the bytes themselves. The PORT / EPRT / 227 / 229
// readers and the probe also get the whole input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sensor/applayer/ftp/ftp.h"

using namespace picket::sensor::applayer::ftp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    probe(Dir::kToServer, data, size, true);
    probe(Dir::kToClient, data, size, false);
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    Endpoint ep;
    uint16_t port = 0;
    parse_port(all, &ep);
    parse_eprt(all, &ep);
    parse_pasv_reply(all, &ep);
    parse_epsv_reply(all, &port);
    FtpCounters counters;
    FtpConfig cfg;
    cfg.max_line = 128;
    cfg.max_tx = 16;
    FtpParser p(cfg, &counters);
    size_t off = 0;
    while (off < size) {
        const uint8_t ctl = data[off++];
        const Dir dir = (ctl & 0x80) ? Dir::kToClient : Dir::kToServer;
        size_t n = 1 + (ctl & 0x3F);
        if (n > size - off) {
            n = size - off;
        }
        p.feed(dir, data + off, n);
        off += n;
    }
    if (p.tx_count() > cfg.max_tx) {
        __builtin_trap();  // transactions stay bounded
    }
    for (size_t i = 0; i < p.tx_count(); ++i) {
        const FtpTx& t = p.tx_at(i);
        if (t.command.size() + t.command_data.size() > cfg.max_line) {
            __builtin_trap();  // a command line stays bounded
        }
        if (t.wants_expect && t.data_port == 0) {
            __builtin_trap();  // an expectation always has a port
        }
    }
    return 0;
}
