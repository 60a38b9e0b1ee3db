// DNS: the input is parsed as one UDP message, probed, and then fed as a TCP stream (both
// directions, cut where the first byte says) through DnsParser, so the length-prefix framing,
// name decompression and transaction matching all see the same bytes.
#include <cstddef>
#include <cstdint>

#include "sensor/applayer/dns/dns.h"

using namespace picket::sensor::applayer::dns;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Message m;
    parse_message(data, size, &m);
    probe(data, size, false);
    probe(data, size, true);

    DnsCounters counters;
    DnsConfig cfg;
    cfg.max_pending = 4;
    DnsParser udp(cfg, &counters, false);
    udp.feed(Dir::kToServer, data, size);
    udp.feed(Dir::kToClient, data, size);

    DnsParser tcp(cfg, &counters, true);
    size_t step = size > 0 ? 1 + data[0] % 17 : 1;
    for (size_t off = 0, i = 0; off < size; off += step, ++i) {
        size_t n = size - off < step ? size - off : step;
        tcp.feed(i % 3 == 2 ? Dir::kToClient : Dir::kToServer, data + off, n);
    }
    tcp.finish();
    (void)tcp.memory();
    return 0;
}
