// EVE's JSON writing on arbitrary bytes. (1) strings::append_json_string: the output is always
// one JSON string that a strict parser accepts; valid UTF-8 comes back unchanged, every byte of
// an invalid sequence comes back as U+00XX. (2) The app layer's records with every record type
// on, for arbitrary HTTP (first byte's low bit: TCP to port 80 traffic) or DNS (UDP) payloads
// split into both directions: every record's members, wrapped in braces, parse as one JSON
// object; so does the alert metadata of the first transactions, HTTP bodies included.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "sensor/applayer/applayer.h"

namespace {

using namespace picket;

void check_string(std::string_view in) {
    std::string out;
    strings::append_json_string(out, in);
    const nlohmann::json j = nlohmann::json::parse(out);  // throws (aborts) on invalid JSON
    const std::string back = j.get<std::string>();
    // Rebuild what the writer promises: valid sequences as they are, other bytes as U+00XX
    // (two UTF-8 bytes each).
    std::string expect;
    const auto* p = reinterpret_cast<const uint8_t*>(in.data());
    for (size_t i = 0; i < in.size();) {
        const size_t n = p[i] < 0x80 ? 1 : strings::utf8_sequence(p + i, in.size() - i);
        if (n != 0) {
            expect.append(in.data() + i, n);
            i += n;
        } else {
            expect.push_back(static_cast<char>(0xc0 | (p[i] >> 6)));
            expect.push_back(static_cast<char>(0x80 | (p[i] & 0x3f)));
            ++i;
        }
    }
    if (back != expect) {
        std::fprintf(stderr, "json string round trip: %s\n", out.c_str());
        std::abort();
    }
}

sensor::applayer::AppLayerConfig all_records() {
    sensor::applayer::AppLayerConfig c;
    auto& l = c.log;
    l.http = l.dns = l.tls = l.files = l.anomaly = true;
    l.http_request_headers = l.http_response_headers = true;
    l.file_md5 = l.file_sha1 = l.file_sha256 = true;
    l.alert_http_body = l.alert_http_body_printable = true;
    return c;
}

void check_records(sensor::applayer::AppLayer& app) {
    for (const auto& r : app.records()) {
        const std::string obj = "{" + app.records_json().substr(r.offset, r.len) + "}";
        if (!nlohmann::json::accept(obj)) {
            std::fprintf(stderr, "record is not JSON: %s\n", obj.c_str());
            std::abort();
        }
    }
    app.clear_records();
}

// The alert metadata of the flow's first transactions (with the HTTP bodies) is JSON members.
void check_metadata(const sensor::applayer::AppLayer& app, const sensor::flow::Flow& f) {
    std::string meta;
    for (uint64_t tx = 0; tx < 4; ++tx) {
        meta.clear();
        app.render_metadata(f, tx, &meta);
        if (!meta.empty() && !nlohmann::json::accept("{" + meta + "}")) {
            std::fprintf(stderr, "alert metadata is not JSON: %s\n", meta.c_str());
            std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    check_string(std::string_view(reinterpret_cast<const char*>(data), size));
    if (size < 2) {
        return 0;
    }
    static sensor::applayer::AppLayer app(all_records());
    using sensor::flow::Direction;
    const bool tcp = (data[0] & 1) != 0;
    const size_t split = 1 + data[1] % (size - 1);
    sensor::flow::Flow f;
    f.proto = tcp ? 6 : 17;
    f.server_port = tcp ? 80 : 53;
    sensor::applayer::TxUpdate out[8];
    app.on_data(f, Direction::kToServer, data + 2, split > 2 ? split - 2 : 0, tcp, out, 8);
    check_records(app);
    app.on_data(f, Direction::kToClient, data + split, size - split, tcp, out, 8);
    check_records(app);
    check_metadata(app, f);
    if (tcp) {
        app.on_eof(f, Direction::kToServer, out, 8);
        app.on_eof(f, Direction::kToClient, out, 8);
        check_records(app);
    }
    app.finish_records(f);
    check_records(app);
    app.release_flow(f);
    return 0;
}
