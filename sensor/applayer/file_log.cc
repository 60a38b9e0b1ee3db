// EVE fileinfo records for HTTP bodies: a FileTracker per flow (when log.files is on) sees
// every decoded body byte (http::BodyObserver), hashes it as it goes, and the app layer logs
// the file when its body ends. See "Records" in README.md.
#include <magic.h>
#include <openssl/evp.h>

#include <string>
#include <string_view>

#include "sensor/applayer/applayer.h"
#include "sensor/applayer/internal.h"
#include "sensor/applayer/records.h"

namespace picket::sensor::applayer {

namespace {

bool ieq(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        auto lc = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
        if (lc(a[i]) != lc(b[i])) {
            return false;
        }
    }
    return true;
}

// The filename parameter of a Content-Disposition value (quoted or a token); empty if none.
std::string_view disposition_filename(std::string_view v) {
    for (size_t i = 0; i + 9 <= v.size(); ++i) {
        if (!ieq(v.substr(i, 9), "filename=") || (i > 0 && v[i - 1] != ' ' && v[i - 1] != ';')) {
            continue;
        }
        std::string_view rest = v.substr(i + 9);
        if (!rest.empty() && rest.front() == '"') {
            rest.remove_prefix(1);
            return rest.substr(0, rest.find('"'));
        }
        return rest.substr(0, rest.find_first_of("; \t"));
    }
    return {};
}

void append_hex(std::string* out, const unsigned char* p, unsigned int n) {
    static const char kHex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < n; ++i) {
        out->push_back(kHex[p[i] >> 4]);
        out->push_back(kHex[p[i] & 0xf]);
    }
}

}  // namespace

// As Suricata names an HTTP file: the Content-Disposition filename, else the URI's path.
std::string_view http_file_name(const http::HttpTx& tx, http::Dir dir) {
    const auto& headers =
        dir == http::Dir::kToServer ? tx.request_header_list : tx.response_header_list;
    for (const http::Header& h : headers) {
        if (ieq(h.name, "content-disposition")) {
            std::string_view f = disposition_filename(h.value);
            if (!f.empty()) {
                return f;
            }
        }
    }
    const std::string_view uri = tx.uri;
    return uri.substr(0, uri.find('?'));
}

FileLog::~FileLog() {
    for (EVP_MD_CTX*& c : md) {
        EVP_MD_CTX_free(c);
        c = nullptr;
    }
}

FileLog* FileTracker::open_file(const http::HttpTx& tx, http::Dir dir, int file) {
    for (auto& o : open_) {
        if (o->tx_id == tx.id && o->dir == dir && o->file == file) {
            return o.get();
        }
    }
    open_.push_back(std::make_unique<FileLog>());
    FileLog* f = open_.back().get();
    f->tx_id = tx.id;
    f->dir = dir;
    f->file = file;
    f->filename = file >= 0 ? tx.request_files[static_cast<size_t>(file)].name
                            : std::string(http_file_name(tx, dir));
    file_log_start(f, *log_);
    return f;
}

void file_log_start(FileLog* f, const AppLogConfig& log) {
    const EVP_MD* kinds[3] = {EVP_md5(), EVP_sha1(), EVP_sha256()};
    const bool want[3] = {log.file_md5, log.file_sha1, log.file_sha256};
    for (int i = 0; i < 3; ++i) {
        if (want[i]) {
            f->md[i] = EVP_MD_CTX_new();
            if (f->md[i] != nullptr && EVP_DigestInit_ex(f->md[i], kinds[i], nullptr) != 1) {
                EVP_MD_CTX_free(f->md[i]);
                f->md[i] = nullptr;
            }
        }
    }
}

void file_log_add(FileLog* f, const AppLogConfig& log, const uint8_t* data, size_t len) {
    if (len == 0) {
        return;
    }
    f->size += len;
    for (EVP_MD_CTX* c : f->md) {
        if (c != nullptr) {
            EVP_DigestUpdate(c, data, len);
        }
    }
    if (log.file_magic && f->head.size() < kMagicBytes) {
        f->head.append(reinterpret_cast<const char*>(data),
                       std::min(len, kMagicBytes - f->head.size()));
    }
}

void FileTracker::add(FileLog* f, const uint8_t* data, size_t len) {
    file_log_add(f, *log_, data, len);
}

void FileTracker::on_body(const http::HttpTx& tx, http::Dir dir, const uint8_t* data, size_t len) {
    add(open_file(tx, dir, -1), data, len);
}

void FileTracker::on_file_data(const http::HttpTx& tx, size_t file, const uint8_t* data,
                               size_t len) {
    add(open_file(tx, http::Dir::kToServer, static_cast<int>(file)), data, len);
}

size_t FileTracker::memory() const {
    // An EVP_MD_CTX with its digest state is a few hundred bytes.
    size_t n = sizeof(FileTracker) + open_.capacity() * sizeof(void*);
    for (const auto& f : open_) {
        n += sizeof(FileLog) + heap(f->filename) + heap(f->head);
        for (const EVP_MD_CTX* c : f->md) {
            n += c != nullptr ? 256 : 0;
        }
    }
    return n;
}

void AppLayer::log_files(FlowState& s, bool all) {
    auto& open = files(s)->open();
    for (size_t i = 0; i < open.size();) {
        FileLog& fl = *open[i];
        const http::HttpTx* tx = s.http->find_tx(fl.tx_id);
        const bool to_server = fl.dir == http::Dir::kToServer;
        const bool ended =
            tx == nullptr || (to_server ? tx->request_progress == http::HttpTx::kRequestComplete
                                        : tx->response_progress == http::HttpTx::kResponseComplete);
        if (!ended && !all) {
            ++i;
            continue;
        }
        bool closed =
            ended && tx != nullptr && !(to_server ? tx->request_body_cut : tx->response_body_cut);
        if (closed && fl.file >= 0) {
            // A multipart file is closed by its delimiter, not by the end of the body.
            closed = static_cast<size_t>(fl.file) < tx->request_files.size() &&
                     tx->request_files[static_cast<size_t>(fl.file)].complete;
        }
        const auto fd = static_cast<flow::Direction>(fl.dir);
        record_begin("fileinfo", s.reversed ? flip(fd) : fd, false, fl.tx_id);
        std::string* out = &records_json_;
        if (tx != nullptr) {
            render_http(*tx, true, false, false, out);
            out->push_back(',');
        }
        *out += "\"app_proto\":\"http\",";
        write_fileinfo(fl, closed, fl.tx_id, out);
        record_end();
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

// `"fileinfo":{...}` of one file (Suricata's EveFileInfo).
void AppLayer::write_fileinfo(FileLog& fl, bool closed, uint64_t tx_id, std::string* out) {
    *out += "\"fileinfo\":{";
    bool first = true;
    json::member(out, &first, "filename", fl.filename);
    if (config_.log.file_magic && !fl.head.empty()) {
        if (magic_ == nullptr && !magic_failed_) {
            magic_ = magic_open(MAGIC_NONE);
            if (magic_ != nullptr && magic_load(magic_, nullptr) != 0) {
                magic_close(magic_);
                magic_ = nullptr;
            }
            magic_failed_ = magic_ == nullptr;
        }
        const char* m =
            magic_ != nullptr ? magic_buffer(magic_, fl.head.data(), fl.head.size()) : nullptr;
        if (m != nullptr) {
            json::member(out, &first, "magic", m);
        }
    }
    json::member_bool(out, &first, "gaps", fl.gaps);
    json::member(out, &first, "state", closed ? "CLOSED" : "TRUNCATED");
    static const char* const kNames[3] = {"md5", "sha1", "sha256"};
    for (int k = 0; k < 3; ++k) {
        // md5 and sha1 only of a closed file, as Suricata.
        if (fl.md[k] == nullptr || (k < 2 && !closed)) {
            continue;
        }
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (EVP_DigestFinal_ex(fl.md[k], md, &n) == 1) {
            json::key(out, &first, kNames[k]);
            out->push_back('"');
            append_hex(out, md, n);
            out->push_back('"');
        }
    }
    json::member_bool(out, &first, "stored", false);
    json::member_num(out, &first, "size", fl.size);
    json::member_num(out, &first, "tx_id", tx_id);
    out->push_back('}');
}

}  // namespace picket::sensor::applayer
