// Internal to sensor/applayer: the JSON writers EVE records and alert metadata share, the
// protocol object renderers (records.cc) and the per-flow file tracker (file_log.cc). Not a
// public header; other modules include applayer.h.
#pragma once

#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/strings.h"
#include "sensor/applayer/applayer.h"

namespace picket::sensor::applayer {

namespace json {

// `"key":` after a comma unless it is the object's first member.
inline void key(std::string* out, bool* first, const char* name) {
    if (!*first) {
        out->push_back(',');
    }
    *first = false;
    out->push_back('"');
    *out += name;
    *out += "\":";
}

inline void member(std::string* out, bool* first, const char* name, std::string_view value) {
    key(out, first, name);
    strings::append_json_string(*out, value);
}

// The member only when the value is not empty.
inline void member_if(std::string* out, bool* first, const char* name, std::string_view value) {
    if (!value.empty()) {
        member(out, first, name, value);
    }
}

inline void member_num(std::string* out, bool* first, const char* name, uint64_t value) {
    key(out, first, name);
    char buf[24];
    char* e = buf + sizeof buf;
    char* p = e;
    do {
        *--p = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0);
    out->append(p, static_cast<size_t>(e - p));
}

inline void member_bool(std::string* out, bool* first, const char* name, bool value) {
    key(out, first, name);
    *out += value ? "true" : "false";
}

}  // namespace json

// `"http":{...}` of a transaction, as Suricata's EveHttpLogJSONBasic (+ Extended, + the
// header arrays of dump-all-headers).
void render_http(const http::HttpTx& tx, bool extended, bool request_headers, bool response_headers,
                 std::string* out);
// `"tls":{...}` of a session (Suricata's JsonTlsLogJSONBasic / Extended).
void render_tls(const tls::TlsParser& p, bool extended, bool ja3, bool ja3s, std::string* out);
// "aa:bb:..." lower-case hex SHA-1 of a DER certificate, as Suricata's tls.fingerprint.
std::string cert_fingerprint(const std::vector<uint8_t>& der);
// "2024-01-01T00:00:00" (UTC) from Unix seconds.
std::string tls_date(int64_t t);
// Suricata's names of the parsers' events (uppercase), Picket's own uppercased when Suricata
// has none. to_server: the direction the event was raised in (HTTP names depend on it).
std::string http_event_name(http::Event e, bool to_server);
std::string dns_event_name(dns::Event e);
std::string tls_event_name(tls::Event e);
// `"ssh":{"client":{...},"server":{...}}` (Suricata's rs_ssh_log_json).
void render_ssh(const ssh::SshParser& p, std::string* out);
// `"ftp":{...}` of a transaction (Suricata's EVE ftp), `"ftp_data":{filename, command}` of a data
// connection (applayer_ftp.cc).
void render_ftp(const ftp::FtpTx& t, std::string* out);
void render_ftp_data(const ftp::Expectation& e, std::string* out);
// "NOERROR", "NXDOMAIN", ... (decimal when unnamed).
std::string dns_rcode_name(uint8_t rcode);

// One HTTP body being logged as a file (EVE fileinfo).
struct FileLog {
    uint64_t tx_id = 0;
    http::Dir dir = http::Dir::kToServer;
    int file = -1;  // a multipart upload: index in HttpTx::request_files; -1: the whole body
    std::string filename;
    uint64_t size = 0;
    bool gaps = false;
    EVP_MD_CTX* md[3] = {nullptr, nullptr, nullptr};  // md5, sha1, sha256 when enabled
    std::string head;                                 // first kMagicBytes (file_magic)
    FileLog() = default;
    FileLog(const FileLog&) = delete;
    FileLog& operator=(const FileLog&) = delete;
    ~FileLog();
};

inline constexpr size_t kMagicBytes = 4096;

// A file's hashes (the ones log asks for) and magic head, fed as its bytes come (file_log.cc;
// HTTP bodies and ftp-data files).
void file_log_start(FileLog* f, const AppLogConfig& log);
void file_log_add(FileLog* f, const AppLogConfig& log, const uint8_t* data, size_t len);

// The files of one HTTP flow: opened on a body's first byte, fed every body byte the parser
// decodes, closed (logged) by the app layer when the body ends.
class FileTracker : public http::BodyObserver {
public:
    explicit FileTracker(const AppLogConfig* log) : log_(log) {}
    void on_body(const http::HttpTx& tx, http::Dir dir, const uint8_t* data, size_t len) override;
    void on_file_data(const http::HttpTx& tx, size_t file, const uint8_t* data,
                      size_t len) override;
    std::vector<std::unique_ptr<FileLog>>& open() { return open_; }
    size_t memory() const;

private:
    FileLog* open_file(const http::HttpTx& tx, http::Dir dir, int file);
    void add(FileLog* f, const uint8_t* data, size_t len);
    const AppLogConfig* log_;
    std::vector<std::unique_ptr<FileLog>> open_;
};

}  // namespace picket::sensor::applayer
