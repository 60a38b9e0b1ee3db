// FTP in the app layer: the control connection (ftp/ftp.h's parser, its views and EVE ftp
// records), the data-channel expectations it registers (ftp/expect.h, shared by the workers),
// and the ftp-data flows that match one (their file: file.data / file.name, EVE ftp_data and
// fileinfo). See "FTP" in README.md.
#include <algorithm>
#include <cstring>
#include <string>

#include "sensor/applayer/applayer.h"
#include "sensor/applayer/internal.h"
#include "sensor/applayer/records.h"

namespace picket::sensor::applayer {

namespace {

void copy_addr(const decode::Address& a, bool* v6, uint8_t out[16]) {
    *v6 = !a.is_v4();
    std::memset(out, 0, 16);
    std::memcpy(out, *v6 ? a.b : a.v4(), *v6 ? 16 : 4);
}

// A PORT / EPRT naming another host than the control connection's client (Suricata's
// ftpbounce compares the PORT address with the client's; an address of the other family is
// not compared).
bool is_bounce(const ftp::FtpTx& t, const flow::Flow& f) {
    if (!t.active || !t.has_address) {
        return false;
    }
    const bool client_v6 = !f.client_addr.is_v4();
    if (client_v6 != t.endpoint.v6) {
        return false;
    }
    return std::memcmp(t.endpoint.addr, client_v6 ? f.client_addr.b : f.client_addr.v4(),
                       client_v6 ? 16 : 4) != 0;
}

std::string upper_name(const char* s) {
    std::string out(s);
    for (char& c : out) {
        c = c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c;
    }
    return out;
}

}  // namespace

// `"ftp":{...}` of a transaction, as Suricata's EVE ftp record (and alert metadata).
void render_ftp(const ftp::FtpTx& t, std::string* out) {
    *out += "\"ftp\":{";
    bool first = true;
    if (t.has_command) {
        json::member(out, &first, "command", t.command);
        json::member_if(out, &first, "command_data", t.command_data);
    }
    if (!t.replies.empty()) {
        json::key(out, &first, "reply");
        out->push_back('[');
        for (size_t k = 0; k < t.replies.size(); ++k) {
            if (k != 0) {
                out->push_back(',');
            }
            strings::append_json_string(*out, t.replies[k]);
        }
        out->push_back(']');
    }
    bool any_code = false;
    for (const std::string& c : t.codes) {
        any_code = any_code || !c.empty();
    }
    if (any_code) {
        json::key(out, &first, "completion_code");
        out->push_back('[');
        bool f1 = true;
        for (const std::string& c : t.codes) {
            if (c.empty()) {
                continue;
            }
            if (!f1) {
                out->push_back(',');
            }
            f1 = false;
            strings::append_json_string(*out, c);
        }
        out->push_back(']');
    }
    if (t.has_dyn_port) {
        json::member_num(out, &first, "dynamic_port", t.endpoint.port);
        json::member(out, &first, "mode", t.active ? "active" : "passive");
    }
    json::member(out, &first, "reply_received", t.codes.empty() ? "no" : "yes");
    json::member_bool(out, &first, "command_truncated", t.command_truncated);
    json::member_bool(out, &first, "reply_truncated", t.reply_truncated);
    out->push_back('}');
}

void render_ftp_data(const ftp::Expectation& e, std::string* out) {
    *out += "\"ftp_data\":{";
    bool first = true;
    if (e.filename_len != 0) {
        json::member(out, &first, "filename", e.name());
    }
    json::member(out, &first, "command", ftp::data_command_name(e.command));
    out->push_back('}');
}

// A new TCP flow's first bytes: is it a data connection an FTP control connection announced?
bool AppLayer::ftp_match_expectation(FlowState& s, flow::Flow& f) {
    if (!config_.ftp || ftp_expect_ == nullptr || ftp_expect_->live() == 0) {
        return false;
    }
    ftp::ExpectKey k;
    bool v6 = false;
    copy_addr(f.client_addr, &k.v6, k.orig);
    copy_addr(f.server_addr, &v6, k.resp);
    k.resp_port = f.server_port;
    if (v6 != k.v6) {
        return false;
    }
    auto d = std::make_unique<FtpDataState>();
    if (!ftp_expect_->take(k, f.last_ts_ns, &d->exp)) {
        return false;
    }
    // The file's bytes go from the FTP client for an upload, from the server for a download;
    // in active mode the server opened the data connection, so its "client" is the FTP server.
    const bool from_data_client = ftp::is_upload(d->exp.command) != d->exp.active;
    d->file_dir = from_data_client ? flow::Direction::kToServer : flow::Direction::kToClient;
    if (config_.log.files && ftp::is_file(d->exp.command)) {
        d->file = std::make_unique<FileLog>();
        d->file->filename.assign(d->exp.name());
        file_log_start(d->file.get(), config_.log);
    }
    s.proto = AppProto::kFtpData;
    s.ftpdata = std::move(d);
    ++flows_ftpdata_;
    return true;
}

void AppLayer::ftpdata_view(const FlowState& s, inspect::AppView& v) {
    v = inspect::AppView{};
    v.proto = AppProto::kFtpData;
    v.tx_id = 0;
    const FtpDataState& d = *s.ftpdata;
    v.ftpdata_command = d.exp.command == ftp::DataCommand::kRetr   ? inspect::kFtpRetr
                        : d.exp.command == ftp::DataCommand::kStor ? inspect::kFtpStor
                                                                   : 0;
    if (ftp::is_file(d.exp.command)) {
        v.buf[bi(BufferId::kFileData)] = std::string_view(d.kept.data(), d.kept.size());
        if (d.exp.filename_len != 0) {
            v.buf[bi(BufferId::kFileName)] = d.exp.name();
        }
    }
}

uint32_t AppLayer::ftpdata_on_data(FlowState& s, flow::Direction dir, const uint8_t* data,
                                   size_t len, TxUpdate* out, uint32_t cap) {
    FtpDataState& d = *s.ftpdata;
    if (dir != d.file_dir || len == 0) {
        return 0;  // the other direction carries no file (acks, or nothing)
    }
    d.size += len;
    if (d.file) {
        file_log_add(d.file.get(), config_.log, data, len);
    }
    const size_t limit = config_.ftp_config.file_inspect_limit;
    const bool grew = d.kept.size() < limit;
    if (grew) {
        d.kept.append(reinterpret_cast<const char*>(data), std::min(len, limit - d.kept.size()));
    }
    account(&s);
    if (!grew || cap == 0 || !ftp::is_file(d.exp.command)) {
        return 0;
    }
    ftpdata_view(s, out[0].view);
    return 1;
}

void AppLayer::ftpdata_on_eof(FlowState& s, flow::Direction dir) {
    if (s.ftpdata->file_dir == dir) {
        s.ftpdata->closed = true;
        log_ftpdata(s);
    }
}

void AppLayer::log_ftpdata(FlowState& s) {
    FtpDataState& d = *s.ftpdata;
    if (d.eve_logged) {
        return;
    }
    d.eve_logged = true;
    if (config_.log.ftp) {
        // Suricata's ftp_data record: the file name and the command, from the client's side.
        record_begin("ftp_data", flow::Direction::kToServer, false, 0);
        render_ftp_data(d.exp, &records_json_);
        record_end();
    }
    if (d.file) {
        d.file->gaps = d.gaps;
        record_begin("fileinfo", d.file_dir, false, 0);
        records_json_ += "\"app_proto\":\"ftp-data\",";
        write_fileinfo(*d.file, d.closed && !d.gaps, 0, &records_json_);
        record_end();
        d.file.reset();
    }
}

// FTP transactions [lo, hi] as detection sees them from dir: to the server the command (verb
// and argument, and whether it is a bounce), both ways the transaction's events.
uint32_t AppLayer::ftp_views(FlowState& s, flow::Direction dir, uint64_t lo, uint64_t hi,
                             TxUpdate* out, uint32_t cap) {
    uint32_t n = 0;
    for (uint64_t id = lo; id <= hi && n < cap; ++id) {
        const ftp::FtpTx* t = s.ftp->find_tx(id);
        if (t == nullptr) {
            continue;
        }
        inspect::AppView& v = out[n].view;
        v = inspect::AppView{};
        v.proto = AppProto::kFtp;
        v.tx_id = t->id;
        v.events = t->events;
        if (dir == flow::Direction::kToServer) {
            if (!t->has_command && t->events == 0) {
                continue;
            }
            if (t->has_command) {
                v.buf[bi(BufferId::kFtpCommand)] = t->command;
                // An empty argument is still a buffer (bsize:0 matches a bare command).
                v.buf[bi(BufferId::kFtpCommandData)] =
                    std::string_view(t->command_data.data(), t->command_data.size());
            }
            v.ftp_bounce = t->bounce;
        } else if (t->codes.empty() && t->events == 0) {
            continue;
        }
        ++n;
    }
    return n;
}

uint32_t AppLayer::ftp_on_data(FlowState& s, flow::Flow& f, flow::Direction dir,
                               const uint8_t* data, size_t len, TxUpdate* out, uint32_t cap) {
    const ftp::FeedResult r = s.ftp->feed(static_cast<ftp::Dir>(dir), data, len);
    for (uint32_t i = 0; i < r.count; ++i) {
        ftp::FtpTx* t = s.ftp->find_tx_mut(r.first_id + i);
        if (t == nullptr) {
            continue;
        }
        if (dir == flow::Direction::kToServer && t->has_command && !t->counted) {
            t->counted = true;
            t->bounce = is_bounce(*t, f);
            ++tx_ftp_;
        }
        if (!t->wants_expect || t->expect_registered || ftp_expect_ == nullptr) {
            continue;
        }
        // The transfer's data connection: passive, the client connects to the server's port;
        // active, the server connects to the port the client gave (addresses are the control
        // connection's: a NATed PORT / 227 address would not match the packets).
        t->expect_registered = true;
        ftp::Expectation e;
        bool v6 = false;
        const decode::Address& orig = t->data_active ? f.server_addr : f.client_addr;
        const decode::Address& resp = t->data_active ? f.client_addr : f.server_addr;
        copy_addr(orig, &e.key.v6, e.key.orig);
        copy_addr(resp, &v6, e.key.resp);
        e.key.resp_port = t->data_port;
        e.owner = reinterpret_cast<uintptr_t>(&f);
        e.expires_ns = f.last_ts_ns + int64_t{config_.ftp_config.expect_timeout_s} * 1000000000;
        e.command = t->data_command;
        e.active = t->data_active;
        e.ctrl_tx = t->id;
        if (ftp::is_file(t->data_command)) {
            const size_t n = std::min(t->command_data.size(), ftp::Expectation::kMaxName);
            std::memcpy(e.filename, t->command_data.data(), n);
            e.filename_len = static_cast<uint8_t>(n);
        }
        if (ftp_expect_->add(e, f.last_ts_ns)) {
            ++ftp_expectations_;
        } else {
            ++ftp_expect_full_;
        }
    }
    if (config_.log.ftp || config_.log.anomaly) {
        log_ftp(s, false);
    }
    account(&s);
    if (r.count == 0) {
        return 0;
    }
    return ftp_views(s, dir, r.first_id, r.first_id + r.count - 1, out, cap);
}

void AppLayer::log_ftp(FlowState& s, bool force) {
    const AppLogConfig& l = config_.log;
    for (size_t i = 0; i < s.ftp->tx_count(); ++i) {
        auto* t = s.ftp->find_tx_mut(s.ftp->tx_at(i).id);
        if (l.anomaly && !t->eve_events_logged && t->events != 0) {
            t->eve_events_logged = true;
            for (size_t e = 0; e < ftp::kEventCount; ++e) {
                if (((t->events >> e) & 1) != 0) {
                    log_anomaly("ftp", upper_name(ftp::event_name(static_cast<ftp::Event>(e))),
                                flow::Direction::kToServer, true, t->id);
                }
            }
        }
        // One record per transaction, as Suricata: when its final reply came, else at the end.
        if (!l.ftp || t->eve_logged || !(t->complete || force)) {
            continue;
        }
        t->eve_logged = true;
        record_begin("ftp", flow::Direction::kToServer, true, t->id);
        render_ftp(*t, &records_json_);
        record_end();
    }
}

}  // namespace picket::sensor::applayer
