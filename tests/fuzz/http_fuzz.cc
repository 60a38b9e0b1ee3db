// libFuzzer target for sensor/applayer/http. Input: byte 0 picks config variations (bit 0:
// tiny limits, bit 1: double_decode, bit 2: decompress requests, bit 3: max_pipelined 2), then
// a sequence of operations, each a control byte c:
//   c >= 0xc0: control op in direction (c >> 5) & 1 (1 = to_client); c & 3: 0 gap of unknown
//              size, 1 gap of (c >> 2) & 7 bytes, 2 close, 3 release_completed.
//   c <  0xc0: feed the next (c & 0x3f) + 1 bytes (or what is left) in direction (c >> 6) & 1.
// After every operation it traps unless
// memory() <= HttpParser::memory_bound(config) and every transaction reported changed is held.
// The same bytes also go through HttpSplitter, normalize_uri and probe.
// Seed corpus: tests/fuzz/corpus/http (plain HTTP exchanges written as such ops).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "sensor/applayer/http/http.h"

namespace {

using namespace picket::sensor::applayer::http;

// Traps with the failed condition's line on stderr (the reproducer's log says which).
#define check(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "http_fuzz: check failed line %d: %s\n", __LINE__, #cond); \
            __builtin_trap();                                                          \
        }                                                                              \
    } while (0)

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) {
        return 0;
    }
    uint8_t mode = data[0];
    ++data;
    --size;
    HttpConfig cfg;
    if (mode & 1) {
        cfg.max_line_bytes = 64;
        cfg.max_header_bytes = 256;
        cfg.max_header_count = 8;
        cfg.request_body_limit = 100;
        cfg.response_body_limit = 300;
        cfg.decompress_limit = 200;
        cfg.oversize_dir_length = 5;
    }
    cfg.double_decode = (mode & 2) != 0;
    cfg.decompress_request = (mode & 4) != 0;
    if (mode & 8) {
        cfg.max_pipelined = 2;
    }
    const size_t bound = HttpParser::memory_bound(cfg);

    HttpCounters ctr;
    HttpParser parser(&cfg, &ctr);
    HttpSplitter splitter(cfg);
    size_t pos = 0;
    while (pos < size) {
        uint8_t c = data[pos++];
        if ((c & 0xc0) == 0xc0) {
            Dir dir = (c >> 5) & 1 ? Dir::kToClient : Dir::kToServer;
            switch (c & 3) {
                case 0:
                    parser.on_gap(dir);
                    break;
                case 1:
                    parser.on_gap(dir, (c >> 2) & 7);
                    break;
                case 2:
                    parser.on_close(dir);
                    break;
                default:
                    parser.release_completed();
                    break;
            }
        } else {
            Dir dir = (c >> 6) & 1 ? Dir::kToClient : Dir::kToServer;
            size_t n = (c & 0x3f) + 1;
            if (n > size - pos) {
                n = size - pos;
            }
            FeedResult r = parser.feed(dir, data + pos, n);
            for (uint32_t i = 0; i < r.count; ++i) {
                check(parser.find_tx(r.first_id + i) != nullptr);
            }
            size_t b = splitter.scan(dir, data + pos, n);
            check(b <= n);
            pos += n;
        }
        check(parser.memory() <= bound);
        check(ctr.memuse.get() == parser.memory());
        for (size_t i = 0; i < parser.tx_count(); ++i) {
            const HttpTx& t = parser.tx_at(i);
            check(t.request_body.size() <= cfg.request_body_limit);
            check(t.response_body.size() <= cfg.response_body_limit);
            check(i == 0 || t.id == parser.tx_at(i - 1).id + 1);
        }
        check(parser.tx_count() <= cfg.max_pipelined);
    }
    EventSet ev;
    std::string_view all(reinterpret_cast<const char*>(data), size);
    std::string norm = normalize_uri(all, cfg, &ev);
    check(norm.size() <= all.size());
    (void)normalize_host(all);
    (void)probe(Dir::kToServer, data, size);
    (void)probe(Dir::kToClient, data, size);
    return 0;
}
