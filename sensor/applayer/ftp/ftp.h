// FTP control-channel parser (RFC 959): the client's commands and the server's replies, line by
// line across segment boundaries, multi-line replies (RFC 959 4.2: "123-" ... "123 "), one
// transaction per command with the reply codes that answered it, and the data-channel
// parameters of PORT / EPRT (RFC 2428) and of the 227 / 229 replies to PASV / EPSV. Lines are
// bounded (max_line): a longer one is kept truncated and raises an event. One FtpParser per
// flow, called only by the flow's worker. The data-channel expectation table is expect.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/counter.h"
#include "common/stats.h"

namespace picket::sensor::applayer::ftp {

// Same values as flow::Direction, kept local so this module does not depend on the flow table.
enum class Dir : uint8_t { kToServer = 0, kToClient = 1 };

// Each event is counted as "app_layer.ftp.events.<event_name()>"; the names are Suricata 7's
// (app-layer-event:ftp.<name>, rules/ftp-events.rules).
enum class Event : uint8_t {
    kRequestCommandTooLong,   // a command line over max_line (kept truncated)
    kResponseCommandTooLong,  // a reply line over max_line (kept truncated)
    kCount,
};
inline constexpr size_t kEventCount = static_cast<size_t>(Event::kCount);
const char* event_name(Event e);

enum class ProbeResult : uint8_t { kNo, kYes, kNeedMore };
// Protocol detection on the first bytes of a direction. To the client: a 220 greeting
// ("220 " / "220-") on server port 21, or one that names FTP on any port (SMTP greets with 220
// too). To the server: a known FTP command verb followed by SP or CRLF, on server port 21 only
// (POP3's USER / PASS would pass otherwise). port21: the flow's server port is 21.
ProbeResult probe(Dir dir, const uint8_t* data, size_t len, bool port21);

// An address and port of the data channel.
struct Endpoint {
    bool v6 = false;
    uint8_t addr[16] = {};  // IPv4 in the first 4 bytes
    uint16_t port = 0;
};
// PORT's argument "h1,h2,h3,h4,p1,p2" (RFC 959 4.1.2; blanks around the numbers allowed, each
// 0-255).
bool parse_port(std::string_view arg, Endpoint* out);
// EPRT's argument "<d>proto<d>addr<d>port<d>" (RFC 2428 2): proto 1 (IPv4) or 2 (IPv6).
bool parse_eprt(std::string_view arg, Endpoint* out);
// The text of a 227 reply: the first "h1,h2,h3,h4,p1,p2" in it (RFC 959 leaves the format
// open; servers write "Entering Passive Mode (h1,...,p2)." or without parentheses).
bool parse_pasv_reply(std::string_view text, Endpoint* out);
// The text of a 229 reply: "(<d><d><d>port<d>)" (RFC 2428 3).
bool parse_epsv_reply(std::string_view text, uint16_t* port);

// The data-transfer commands: which one will use the data channel, and which way its file goes.
enum class DataCommand : uint8_t { kNone, kStor, kAppe, kStou, kRetr, kList, kNlst, kMlsd };
const char* data_command_name(DataCommand c);  // "STOR", ...; "" for kNone
// STOR / APPE / STOU: the client sends the file.
inline bool is_upload(DataCommand c) {
    return c == DataCommand::kStor || c == DataCommand::kAppe || c == DataCommand::kStou;
}
// A transfer whose bytes are a named file (not a directory listing).
inline bool is_file(DataCommand c) {
    return is_upload(c) || c == DataCommand::kRetr;
}

struct FtpTx {
    uint64_t id = 0;
    bool has_command = false;  // false: replies with no command (the greeting)
    std::string command;       // the verb, upper-cased (ftp.command)
    std::string command_data;  // after the first SP (ftp.command_data)
    bool command_truncated = false;
    std::vector<std::string> replies;  // each reply line's text after the code
    std::vector<std::string> codes;    // each reply's code ("150", "226")
    bool reply_truncated = false;
    bool complete = false;  // a final (non-1xx) reply came
    // PORT / EPRT (active) or the 227 / 229 reply to PASV / EPSV (passive): the data channel
    // it announced (EVE dynamic_port, mode). endpoint: PORT / EPRT's address and port, the
    // 227 reply's (229: the port only).
    bool has_dyn_port = false;
    bool active = false;
    bool has_address = false;
    Endpoint endpoint;
    // A transfer command (STOR, RETR, LIST...): the channel announced before it, which its
    // data connection will use (the app layer registers the expectation once).
    DataCommand data_command = DataCommand::kNone;
    bool wants_expect = false;
    bool expect_registered = false;
    bool data_active = false;
    uint16_t data_port = 0;
    uint32_t events = 0;  // bit (1 << Event)
    // Kept for the app layer: logged as EVE ftp, its events as anomaly records, viewed.
    bool eve_logged = false;
    bool eve_events_logged = false;
    bool counted = false;  // app_layer.tx.ftp
    bool bounce = false;   // ftpbounce: set by the app layer, which knows the client
};

struct FtpCounters {
    Counter commands;
    Counter replies;
    Counter events[kEventCount];
};
// "app_layer.ftp.commands", "app_layer.ftp.replies", "app_layer.ftp.events.<name>".
void export_stats(const FtpCounters& c, StatsSnapshot& out);

struct FtpConfig {
    uint32_t max_line = 4096;  // Suricata's app-layer.protocols.ftp.max-line-length default
    uint32_t max_tx = 64;      // transactions held (the oldest logged ones go first)
    // Seconds an expectation waits for its data connection (expect.h).
    uint32_t expect_timeout_s = 60;
    // Bytes of an ftp-data file kept for file.data (the rest is hashed and counted only).
    uint32_t file_inspect_limit = 64 * 1024;
};

// What feed() made newly available.
struct FeedResult {
    uint64_t first_id = 0;  // transactions [first_id, first_id + count) changed
    uint32_t count = 0;
};

class FtpParser {
public:
    FtpParser(const FtpConfig& config, FtpCounters* counters);

    // In-order stream bytes of one direction, in any pieces.
    FeedResult feed(Dir dir, const uint8_t* data, size_t len);

    const FtpTx* find_tx(uint64_t id) const;
    size_t tx_count() const { return txs_.size(); }
    const FtpTx& tx_at(size_t i) const { return txs_[i]; }
    FtpTx* find_tx_mut(uint64_t id);
    // The data channel announced last (PORT / EPRT / 227 / 229), for the next transfer command.
    bool has_dyn_port() const { return dyn_.port != 0; }
    const Endpoint& dyn_endpoint() const { return dyn_; }
    bool dyn_active() const { return dyn_active_; }
    uint32_t events() const { return events_; }
    size_t memory() const;

private:
    void line(int d);
    void command_line(std::string_view l, bool truncated);
    void reply_line(std::string_view l, bool truncated);
    FtpTx& open_tx();
    void note(uint64_t id);
    void raise(FtpTx* tx, Event e);

    FtpConfig config_;
    FtpCounters* counters_;
    std::string buf_[2];             // the current line of each direction (at most max_line bytes)
    bool long_[2] = {false, false};  // the current line went past max_line
    std::deque<FtpTx> txs_;
    uint64_t next_id_ = 0;
    // A multi-line reply in progress: its code ("123"), empty when none.
    std::string multi_code_;
    Endpoint dyn_;
    bool dyn_active_ = false;
    uint32_t events_ = 0;
    FeedResult res_;
};

}  // namespace picket::sensor::applayer::ftp
