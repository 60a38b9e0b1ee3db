// SSH: the input drives a two-direction conversation. Each chunk starts with a control byte:
// bit 7 picks the direction, the low bits the chunk length (1..64), so the fuzzer explores
// banner-line and packet splits in both directions as well as the bytes themselves.
#include <cstddef>
#include <cstdint>

#include "sensor/applayer/ssh/ssh.h"

using namespace picket::sensor::applayer::ssh;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    probe(data, size);
    SshCounters counters;
    SshConfig cfg;
    cfg.max_kex_record = 4096;
    cfg.max_pre_banner = 1024;
    SshParser p(cfg, &counters);
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
    for (const Side* s : {&p.client(), &p.server()}) {
        if (s->has_kex && s->hassh.size() != 32) {
            __builtin_trap();  // a parsed KEXINIT always has an MD5
        }
        if (s->software_version.size() > cfg.max_banner) {
            __builtin_trap();  // the banner stays bounded
        }
    }
    // Held bytes stay bounded: per direction a banner line and its fields (string growth may
    // double a capacity), one KEXINIT and the HASSH string taken from it.
    const size_t bound =
        sizeof(SshParser) + 2 * (8 * (cfg.max_banner + 64) + 4 * (cfg.max_kex_record + 64));
    if (p.memory() > bound) {
        __builtin_trap();
    }
    return 0;
}
