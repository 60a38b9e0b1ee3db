// TLS: the input drives a two-direction conversation. Each chunk starts with a control byte:
// bit 7 picks the direction, the low bits the chunk length (1..64), so the fuzzer explores
// record and handshake-message splits in both directions as well as the bytes themselves.
#include <cstddef>
#include <cstdint>

#include "sensor/applayer/tls/tls.h"

using namespace picket::sensor::applayer::tls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    probe(data, size);
    TlsCounters counters;
    TlsConfig cfg;
    cfg.max_handshake_message = 8192;
    cfg.max_certificates = 4;
    TlsParser p(cfg, &counters);
    size_t off = 0;
    while (off < size) {
        uint8_t ctl = data[off++];
        Dir dir = (ctl & 0x80) ? Dir::kToClient : Dir::kToServer;
        size_t n = 1 + (ctl & 0x3F);
        if (n > size - off) {
            n = size - off;
        }
        p.feed(dir, data + off, n);
        off += n;
    }
    p.finish();
    if (p.client_hello() != nullptr && p.client_hello()->ja3.empty() && !p.client_hello()->sslv2) {
        __builtin_trap();  // a parsed ClientHello always has a JA3 string
    }
    (void)p.memory();
    // The certificate decoder on its own, straight from the input.
    CertInfo ci;
    parse_certificate(data, size, &ci);
    return 0;
}
