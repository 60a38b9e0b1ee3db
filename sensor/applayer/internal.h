// Internal to sensor/applayer: the per-flow state (AppLayer::FlowState) and the small helpers
// applayer.cc and metadata.cc share. Not a public header; other modules include applayer.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sensor/applayer/applayer.h"
#include "sensor/applayer/records.h"

namespace picket::sensor::applayer {

using inspect::AppProto;
using inspect::BufferId;

// DNS transactions whose EVE metadata a flow keeps.
inline constexpr size_t kDnsMetaKept = 32;

inline size_t bi(BufferId b) {
    return static_cast<size_t>(b);
}

inline void set(inspect::AppView& v, BufferId b, const std::string& s) {
    if (!s.empty()) {
        v.buf[bi(b)] = std::string_view(s);
    }
}

// The name of an HTTP body as a file (file.name, EVE fileinfo's filename), as Suricata: the
// Content-Disposition filename, else the URI's path. Points into tx.
std::string_view http_file_name(const http::HttpTx& tx, http::Dir dir);

inline flow::Direction flip(flow::Direction d) {
    return d == flow::Direction::kToServer ? flow::Direction::kToClient
                                           : flow::Direction::kToServer;
}

// Heap bytes of a string: nothing while it fits the small-string buffer.
inline size_t heap(const std::string& s) {
    return s.capacity() > std::string().capacity() ? s.capacity() + 1 : 0;
}

// An ftp-data flow: the expectation it matched (command, file name, mode) and its file.
struct FtpDataState {
    ftp::Expectation exp;
    flow::Direction file_dir = flow::Direction::kToClient;  // the direction the file's bytes go
    std::string kept;   // the file's first bytes, for file.data (at most file_inspect_limit)
    uint64_t size = 0;  // bytes seen in file_dir
    bool gaps = false;
    bool closed = false;  // file_dir ended (FIN): the file is complete
    bool viewed_name = false;
    bool eve_logged = false;        // ftp_data and fileinfo written
    std::unique_ptr<FileLog> file;  // hashes and magic head, when log.files
};

struct AppLayer::FlowState {
    AppProto proto = AppProto::kUnknown;
    bool failed = false;
    // One of the shared, never-written markers (see marker()): the flow's app state was
    // evicted or never created (memcap), or it failed. Such a flow is not looked at again.
    bool marker = false;
    bool is_tcp = true;
    bool said_no[2] = {false, false};
    // Bit 1 << (flow direction): a message of that direction ended (take_raw_trigger()).
    uint8_t raw_trigger = 0;
    // TlsConfig::encryption: the TLS handshake is done and the flow's payload is no longer
    // inspected (payload_inspection_off()); bypassed: nor anything else (bypassed()).
    bool payload_off = false;
    bool bypassed = false;
    // A session picked up midstream whose first bytes "to the server" are an HTTP response:
    // the flow's directions are the wrong way round (Suricata reverses such a flow when the
    // protocol is detected in the other direction). The parsers and views get the flipped
    // direction.
    bool reversed = false;
    std::string probe[2];  // bytes held while undecided (at most probe_bytes each)
    std::unique_ptr<http::HttpParser> http;
    std::unique_ptr<dns::DnsParser> dns;
    std::unique_ptr<tls::TlsParser> tls;
    std::unique_ptr<ssh::SshParser> ssh;
    std::unique_ptr<ftp::FtpParser> ftp;
    std::unique_ptr<FtpDataState> ftpdata;     // applayer_ftp.cc
    std::unique_ptr<inspect::TxAlertLog> log;  // created when the first alert is recorded
    // DNS: transaction ids by message id (queries open a transaction, responses join it), and
    // what EVE says of each.
    struct DnsMeta {
        uint64_t tx_id = 0;
        uint16_t id = 0;
        uint8_t opcode = 0;
        uint16_t rrtype = 0;
        bool answered = false;
        bool query = false;  // opened by a query (has the question dns.query inspects)
        uint16_t rcode = 0;
        std::string rrname;
    };
    std::vector<DnsMeta> dns_meta;  // oldest first, at most kDnsMetaKept
    // EVE records keep their state in the parsers (HttpTx::eve_*, TlsParser::eve_*, the
    // HttpParser's body observer: the FileTracker of log.files), not here: a UDP DNS flow
    // stays small.
    uint64_t dns_next_tx = 0;
    // Transactions to inspect on the next packet of each (flow) direction: ids
    // [defer_lo, defer_lo + defer_span] unless defer_span is kNoDefer (see defer_tx()). Kept
    // small: a UDP DNS flow is ~600 bytes in all.
    static constexpr uint32_t kNoDefer = UINT32_MAX;
    uint64_t defer_lo[2] = {0, 0};
    uint32_t defer_span[2] = {kNoDefer, kNoDefer};
    bool has_defer(int d) const { return defer_span[d] != kNoDefer; }
    // Memcap accounting: the bytes counted for this state, its flow, and its place in the
    // worker's LRU list (touched on every on_data / on_eof).
    size_t mem = 0;
    flow::Flow* flow = nullptr;
    FlowState* lru_prev = nullptr;
    FlowState* lru_next = nullptr;
};

// The files an HTTP flow is logging (its parser's body observer), null when log.files is off.
inline FileTracker* files(const AppLayer::FlowState& s) {
    return s.http ? static_cast<FileTracker*>(s.http->body_observer()) : nullptr;
}

// The flow's app-layer state (or one of the shared markers): the app layer's flow slot.
using AppSlot = flow::FlowStorage<AppLayer::FlowState, flow::FlowSlot::kAppLayer>;

}  // namespace picket::sensor::applayer
