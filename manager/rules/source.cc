// source.cc: see rules.h. Fetching (libcurl, or the local file system), unpacking (libarchive,
// from memory only: nothing of an archive is ever written to disk, so a hostile entry path can
// only be refused, never followed) and the content-addressed store of fetched bytes.
#include "manager/rules/rules.h"

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "common/strings.h"

namespace picket::rules {
namespace {

namespace fs = std::filesystem;

bool starts_with(std::string_view s, std::string_view p) {
    return s.starts_with(p);
}
bool ends_with(std::string_view s, std::string_view p) {
    return s.ends_with(p);
}
bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return absl::ascii_tolower(static_cast<unsigned char>(x)) ==
                      absl::ascii_tolower(static_cast<unsigned char>(y));
           });
}

std::string hex_digest(const EVP_MD* md, std::string_view bytes) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(bytes.data(), bytes.size(), out, &len, md, nullptr);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) {
        hex.push_back(kHex[out[i] >> 4]);
        hex.push_back(kHex[out[i] & 0xf]);
    }
    return hex;
}

std::string sha256_of(std::string_view bytes) {
    return hex_digest(EVP_sha256(), bytes);
}

bool is_hex(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isxdigit(c); });
}

bool is_http_url(std::string_view s) {
    return (starts_with(s, "http://") && s.size() > 7) ||
           (starts_with(s, "https://") && s.size() > 8);
}

std::string prefix(const SourceSpec& spec) {
    return strings::cat("source ", spec.name, ": ");
}

// What bytes are, from their first bytes; "rules" when no archive magic matches.
std::string detect_kind(std::string_view bytes) {
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
        static_cast<unsigned char>(bytes[1]) == 0x8b) {
        return "tar.gz";
    }
    if (bytes.size() >= 4 && bytes.substr(0, 4) == std::string_view("PK\3\4", 4)) {
        return "zip";
    }
    if (bytes.size() >= 262 && bytes.substr(257, 5) == "ustar") {
        return "tar";
    }
    return "rules";
}

// ---- HTTP -----------------------------------------------------------------------------

void init_curl_once() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct HttpResponse {
    long status = 0;
    std::string body;
    std::string etag;
    std::string last_modified;
};

struct Transfer {
    std::string body;
    uint64_t max_bytes = 0;
    bool too_big = false;
    std::string etag;
    std::string last_modified;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t len = size * n;
    if (t->body.size() + len > t->max_bytes) {
        t->too_big = true;
        return 0;  // CURLE_WRITE_ERROR: stops the transfer
    }
    t->body.append(data, len);
    return len;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    const size_t len = size * n;
    std::string_view line(data, len);
    // Each response of a redirect chain starts with its status line: only the last response's
    // validators count.
    if (starts_with(line, "HTTP/")) {
        t->etag.clear();
        t->last_modified.clear();
        return len;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
        return len;
    }
    std::string_view name = strings::trim(line.substr(0, colon));
    std::string_view value = strings::trim(line.substr(colon + 1));
    if (iequals(name, "ETag")) {
        t->etag = std::string(value);
    } else if (iequals(name, "Last-Modified")) {
        t->last_modified = std::string(value);
    }
    return len;
}

absl::Status http_error(const SourceSpec& spec, std::string_view url, long status) {
    std::string msg = strings::cat(prefix(spec), "GET ", url, ": HTTP ", status);
    if (status == 404) {
        return absl::NotFoundError(msg);
    }
    if (status == 401 || status == 403) {
        return absl::PermissionDeniedError(msg);
    }
    if (status >= 500) {
        return absl::UnavailableError(msg);
    }
    return absl::InvalidArgumentError(msg);
}

// One GET; conditional headers only when `previous` has validators. A status >= 400 is an
// error; 304 is returned as is.
absl::StatusOr<HttpResponse> http_get(const SourceSpec& spec, const std::string& url,
                                      const FetchState* previous, const FetchOptions& options) {
    init_curl_once();
    std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
    if (!curl) {
        return absl::InternalError(strings::cat(prefix(spec), "GET ", url, ": curl_easy_init"));
    }
    struct SlistFree {
        void operator()(curl_slist* l) const { curl_slist_free_all(l); }
    };
    std::unique_ptr<curl_slist, SlistFree> headers;
    auto add_header = [&](const std::string& h) {
        curl_slist* next = curl_slist_append(headers.get(), h.c_str());
        if (next != nullptr) {
            (void)headers.release();
            headers.reset(next);
        }
    };
    for (const std::string& h : spec.headers) {
        add_header(h);
    }
    if (previous != nullptr && !previous->etag.empty()) {
        add_header("If-None-Match: " + previous->etag);
    }
    if (previous != nullptr && !previous->last_modified.empty()) {
        add_header("If-Modified-Since: " + previous->last_modified);
    }

    Transfer t;
    t.max_bytes = options.max_bytes;
    char errbuf[CURL_ERROR_SIZE] = {};
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.connect_timeout.count()));
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options.max_bytes));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "picket-manager");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);

    const CURLcode rc = curl_easy_perform(c);
    const std::string where = strings::cat(prefix(spec), "GET ", url, ": ");
    if (t.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
        return absl::ResourceExhaustedError(
            strings::cat(where, "body exceeds the limit of ", options.max_bytes, " bytes"));
    }
    if (rc != CURLE_OK) {
        std::string what = errbuf[0] != '\0' ? std::string(errbuf) : curl_easy_strerror(rc);
        if (rc == CURLE_OPERATION_TIMEDOUT) {
            return absl::DeadlineExceededError(where + what);
        }
        return absl::UnavailableError(where + what);
    }
    HttpResponse r;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    if (r.status >= 400) {
        return http_error(spec, url, r.status);
    }
    r.body = std::move(t.body);
    r.etag = std::move(t.etag);
    r.last_modified = std::move(t.last_modified);
    return r;
}

absl::Status verify_checksum(const SourceSpec& spec, std::string_view bytes,
                             const FetchOptions& options) {
    absl::StatusOr<HttpResponse> r = http_get(spec, spec.checksum_url, nullptr, options);
    if (!r.ok()) {
        return r.status();
    }
    // The first whitespace-separated word ("<hex>  file.tar.gz" as md5sum writes it).
    std::string_view body = strings::trim(r->body);
    std::string want(body.substr(0, body.find_first_of(" \t\r\n")));
    for (char& c : want) {
        c = absl::ascii_tolower(static_cast<unsigned char>(c));
    }
    std::string have;
    if (want.size() == 32 && is_hex(want)) {
        have = hex_digest(EVP_md5(), bytes);
    } else if (want.size() == 64 && is_hex(want)) {
        have = sha256_of(bytes);
    } else {
        return absl::InvalidArgumentError(
            strings::cat(prefix(spec), "checksum ", spec.checksum_url,
                         ": the first word is not an MD5 or SHA-256 hex digest"));
    }
    if (want != have) {
        return absl::DataLossError(strings::cat(prefix(spec),
                                                "checksum mismatch: ", spec.checksum_url, " says ",
                                                want, ", archive is ", have));
    }
    return absl::OkStatus();
}

// ---- local paths ----------------------------------------------------------------------

absl::StatusOr<std::string> read_file(const std::string& where, const fs::path& path,
                                      uint64_t max_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return absl::ErrnoToStatus(errno, strings::cat(where, path.string()));
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string bytes = std::move(ss).str();
    if (bytes.size() > max_bytes) {
        return absl::ResourceExhaustedError(strings::cat(where, path.string(), ": ", bytes.size(),
                                                         " bytes, over the limit of ", max_bytes));
    }
    return bytes;
}

la_ssize_t append_to_string(struct archive*, void* user, const void* buf, size_t n) {
    static_cast<std::string*>(user)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
}

// A ustar of the regular files under dir, in sorted path order, with every varying field
// (mtime, owner, mode) fixed so that the same files always give the same bytes and sha256.
absl::StatusOr<std::string> tar_directory(const std::string& where, const fs::path& dir,
                                          uint64_t max_bytes) {
    std::vector<std::string> paths;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        // symlink_status: a link is neither followed nor packed.
        if (it->symlink_status(ec).type() == fs::file_type::regular) {
            paths.push_back(it->path().lexically_relative(dir).generic_string());
        }
    }
    if (ec) {
        return absl::ErrnoToStatus(ec.value(), strings::cat(where, dir.string()));
    }
    std::sort(paths.begin(), paths.end());

    std::string out;
    std::unique_ptr<struct archive, decltype(&archive_write_free)> a(archive_write_new(),
                                                                     &archive_write_free);
    std::unique_ptr<struct archive_entry, decltype(&archive_entry_free)> e(archive_entry_new(),
                                                                           &archive_entry_free);
    auto fail = [&](std::string_view what) {
        return absl::InternalError(strings::cat(where, dir.string(), ": tar ", what, ": ",
                                                archive_error_string(a.get()) != nullptr
                                                    ? archive_error_string(a.get())
                                                    : "unknown error"));
    };
    if (archive_write_set_format_ustar(a.get()) != ARCHIVE_OK ||
        archive_write_add_filter_none(a.get()) != ARCHIVE_OK ||
        archive_write_open2(a.get(), &out, nullptr, &append_to_string, nullptr, nullptr) !=
            ARCHIVE_OK) {
        return fail("open");
    }
    uint64_t total = 0;
    for (const std::string& rel : paths) {
        absl::StatusOr<std::string> data = read_file(where, dir / rel, max_bytes);
        if (!data.ok()) {
            return data.status();
        }
        total += data->size();
        if (total > max_bytes) {
            return absl::ResourceExhaustedError(strings::cat(
                where, dir.string(), ": the files exceed the limit of ", max_bytes, " bytes"));
        }
        archive_entry_clear(e.get());
        archive_entry_set_pathname(e.get(), rel.c_str());
        archive_entry_set_filetype(e.get(), AE_IFREG);
        archive_entry_set_perm(e.get(), 0644);
        archive_entry_set_size(e.get(), static_cast<la_int64_t>(data->size()));
        archive_entry_set_mtime(e.get(), 0, 0);
        archive_entry_set_uid(e.get(), 0);
        archive_entry_set_gid(e.get(), 0);
        if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK) {
            return fail(rel);
        }
        if (!data->empty() && archive_write_data(a.get(), data->data(), data->size()) !=
                                  static_cast<la_ssize_t>(data->size())) {
            return fail(rel);
        }
    }
    if (archive_write_close(a.get()) != ARCHIVE_OK) {
        return fail("close");
    }
    return out;
}

// ---- extraction -----------------------------------------------------------------------

bool is_kept_config(std::string_view base) {
    return base == "classification.config" || base == "reference.config" ||
           base == "threshold.config";
}

bool is_rules_name(std::string_view base) {
    return base.size() > 6 && ends_with(base, ".rules");
}

std::string_view basename_of(std::string_view path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool has_dotdot(std::string_view path) {
    size_t start = 0;
    for (;;) {
        const size_t end = path.find_first_of("/\\", start);
        if (path.substr(start, end == std::string_view::npos ? end : end - start) == "..") {
            return true;
        }
        if (end == std::string_view::npos) {
            return false;
        }
        start = end + 1;
    }
}

std::string archive_error(struct archive* a) {
    const char* s = archive_error_string(a);
    return s != nullptr ? s : "unknown error";
}

absl::StatusOr<std::map<std::string, std::string>> extract_archive(std::string_view source_name,
                                                                   std::string_view bytes,
                                                                   const ExtractLimits& limits) {
    const std::string where = strings::cat("source ", source_name, ": ");
    std::unique_ptr<struct archive, decltype(&archive_read_free)> a(archive_read_new(),
                                                                    &archive_read_free);
    archive_read_support_format_tar(a.get());
    archive_read_support_format_zip(a.get());
    archive_read_support_filter_gzip(a.get());
    if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
        return absl::DataLossError(
            strings::cat(where, "cannot open the archive: ", archive_error(a.get())));
    }
    std::map<std::string, std::string> files;
    std::map<std::string, std::string> entry_of;  // basename -> the entry path it came from
    uint64_t entries = 0;
    uint64_t total = 0;
    std::string previous;
    for (;;) {
        struct archive_entry* e = nullptr;
        const int rc = archive_read_next_header(a.get(), &e);
        if (rc == ARCHIVE_EOF) {
            break;
        }
        if (rc < ARCHIVE_WARN) {
            return absl::DataLossError(strings::cat(where, "corrupt archive ",
                                                    previous.empty()
                                                        ? std::string("at its first entry")
                                                        : strings::cat("after entry ", previous),
                                                    ": ", archive_error(a.get())));
        }
        if (++entries > limits.max_entries) {
            return absl::ResourceExhaustedError(
                strings::cat(where, "archive has more than ", limits.max_entries, " entries"));
        }
        const char* raw = archive_entry_pathname(e);
        if (raw == nullptr) {
            return absl::InvalidArgumentError(
                strings::cat(where, "entry ", entries, " has no path (or not in UTF-8)"));
        }
        const std::string path = raw;
        previous = path;
        if (starts_with(path, "/") || starts_with(path, "\\")) {
            return absl::InvalidArgumentError(strings::cat(where, path, ": absolute path"));
        }
        if (has_dotdot(path)) {
            return absl::InvalidArgumentError(strings::cat(where, path, ": path has \"..\""));
        }
        // Hard links (a regular type with a link target), symlinks, devices: skipped.
        if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e) != nullptr) {
            continue;
        }
        const std::string base(basename_of(path));
        const bool keep = is_rules_name(base) || is_kept_config(base);
        if (keep && archive_entry_size_is_set(e) &&
            static_cast<uint64_t>(archive_entry_size(e)) > limits.max_file_bytes) {
            return absl::ResourceExhaustedError(
                strings::cat(where, path, ": ", archive_entry_size(e), " bytes, over the limit of ",
                             limits.max_file_bytes, " per file"));
        }
        // Every file is read (not skipped) so that its uncompressed bytes count toward
        // max_total_bytes: a compression bomb among ignored files stops there too.
        std::string data;
        char buf[64 * 1024];
        for (;;) {
            const la_ssize_t n = archive_read_data(a.get(), buf, sizeof buf);
            if (n == 0) {
                break;
            }
            if (n < 0) {
                return absl::DataLossError(strings::cat(where, path, ": ", archive_error(a.get())));
            }
            total += static_cast<uint64_t>(n);
            if (total > limits.max_total_bytes) {
                return absl::ResourceExhaustedError(
                    strings::cat(where, "archive exceeds the limit of ", limits.max_total_bytes,
                                 " uncompressed bytes (at ", path, ")"));
            }
            if (keep) {
                if (data.size() + static_cast<uint64_t>(n) > limits.max_file_bytes) {
                    return absl::ResourceExhaustedError(
                        strings::cat(where, path, ": over the limit of ", limits.max_file_bytes,
                                     " bytes per file"));
                }
                data.append(buf, static_cast<size_t>(n));
            }
        }
        if (!keep) {
            continue;
        }
        if (data.find('\0') != std::string::npos) {
            return absl::InvalidArgumentError(strings::cat(where, path, ": not a ",
                                                           is_rules_name(base) ? "rules" : "text",
                                                           " file (binary data)"));
        }
        auto [it, inserted] = entry_of.emplace(base, path);
        if (!inserted) {
            return absl::InvalidArgumentError(
                strings::cat(where, it->second, " and ", path, " have the same basename ", base));
        }
        files.emplace(base, std::move(data));
    }
    if (!std::any_of(files.begin(), files.end(),
                     [](const auto& f) { return is_rules_name(f.first); })) {
        return absl::InvalidArgumentError(strings::cat(where, "no .rules file in the archive"));
    }
    return files;
}

bool valid_sha256(std::string_view s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

}  // namespace

absl::Status check_source_spec(const SourceSpec& spec) {
    const std::string where = prefix(spec);
    const bool name_ok = !spec.name.empty() && spec.name.size() <= 64 &&
                         std::all_of(spec.name.begin(), spec.name.end(), [](char c) {
                             return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
                         });
    if (!name_ok || spec.name.front() == '.') {
        return absl::InvalidArgumentError(strings::cat(
            where, "invalid name (want 1 to 64 of [A-Za-z0-9._-], not starting with '.')"));
    }
    if (spec.name == "local") {
        // rules/local/ holds the site's own rules, which every update keeps.
        return absl::InvalidArgumentError(
            strings::cat(where, "'local' is reserved for the bundle's own rules (rules/local/)"));
    }
    if (spec.location.empty()) {
        return absl::InvalidArgumentError(strings::cat(where, "empty location"));
    }
    if (spec.location.find("://") != std::string::npos) {
        if (!is_http_url(spec.location)) {
            return absl::InvalidArgumentError(strings::cat(where, "location ", spec.location,
                                                           ": only http:// and https:// URLs"));
        }
    } else if (spec.location[0] != '/') {
        return absl::InvalidArgumentError(strings::cat(where, "location ", spec.location,
                                                       ": neither a URL nor an absolute path"));
    }
    for (const std::string& h : spec.headers) {
        if (h.find_first_of("\r\n") != std::string::npos) {
            return absl::InvalidArgumentError(
                strings::cat(where, "header \"", absl::CEscape(h), "\": has CR or LF"));
        }
        const size_t colon = h.find(':');
        if (colon == std::string::npos || colon == 0) {
            return absl::InvalidArgumentError(
                strings::cat(where, "header \"", h, "\": want \"Name: value\""));
        }
    }
    if (!spec.checksum_url.empty() && !is_http_url(spec.checksum_url)) {
        return absl::InvalidArgumentError(strings::cat(where, "checksum URL ", spec.checksum_url,
                                                       ": only http:// and https:// URLs"));
    }
    return absl::OkStatus();
}

absl::StatusOr<FetchResult> fetch_source(const SourceSpec& spec, const FetchState& previous,
                                         const FetchOptions& options) {
    if (absl::Status s = check_source_spec(spec); !s.ok()) {
        return s;
    }
    const std::string where = prefix(spec);
    FetchResult result;
    if (is_http_url(spec.location)) {
        absl::StatusOr<HttpResponse> r = http_get(spec, spec.location, &previous, options);
        if (!r.ok()) {
            return r.status();
        }
        if (r->status == 304) {
            result.not_modified = true;
            result.sha256 = previous.sha256;
            result.etag = previous.etag;
            result.last_modified = previous.last_modified;
            return result;
        }
        result.bytes = std::move(r->body);
        result.etag = std::move(r->etag);
        result.last_modified = std::move(r->last_modified);
        result.kind = detect_kind(result.bytes);
    } else {
        std::error_code ec;
        const fs::file_status st = fs::status(spec.location, ec);
        if (ec || !fs::exists(st)) {
            return absl::NotFoundError(
                strings::cat(where, spec.location, ": ", std::strerror(ENOENT)));
        }
        if (fs::is_directory(st)) {
            absl::StatusOr<std::string> tar =
                tar_directory(where, spec.location, options.max_bytes);
            if (!tar.ok()) {
                return tar.status();
            }
            result.bytes = std::move(*tar);
            result.kind = "tar";
        } else if (fs::is_regular_file(st)) {
            absl::StatusOr<std::string> data = read_file(where, spec.location, options.max_bytes);
            if (!data.ok()) {
                return data.status();
            }
            result.bytes = std::move(*data);
            result.kind = detect_kind(result.bytes);
        } else {
            return absl::InvalidArgumentError(
                strings::cat(where, spec.location, ": neither a regular file nor a directory"));
        }
    }
    result.sha256 = sha256_of(result.bytes);
    if (!is_http_url(spec.location) && !previous.sha256.empty() &&
        result.sha256 == previous.sha256) {
        FetchResult same;
        same.not_modified = true;
        same.sha256 = previous.sha256;
        same.etag = previous.etag;
        same.last_modified = previous.last_modified;
        same.kind = result.kind;
        return same;
    }
    if (!spec.checksum_url.empty()) {
        if (absl::Status s = verify_checksum(spec, result.bytes, options); !s.ok()) {
            return s;
        }
    }
    return result;
}

absl::StatusOr<std::map<std::string, std::string>> extract_rule_files(std::string_view source_name,
                                                                      std::string_view bytes,
                                                                      std::string_view kind,
                                                                      std::string_view rules_name,
                                                                      const ExtractLimits& limits) {
    const std::string where = strings::cat("source ", source_name, ": ");
    const std::string k = kind.empty() ? detect_kind(bytes) : std::string(kind);
    if (k == "tar.gz" || k == "tar" || k == "zip") {
        return extract_archive(source_name, bytes, limits);
    }
    if (k != "rules") {
        return absl::InvalidArgumentError(
            strings::cat(where, "unknown archive kind \"", kind, "\" (tar.gz, tar, zip or rules)"));
    }
    std::string name(basename_of(rules_name));
    if (name.empty()) {
        name = std::string(source_name);
    }
    if (!ends_with(name, ".rules")) {
        name += ".rules";
    }
    if (bytes.size() > limits.max_file_bytes) {
        return absl::ResourceExhaustedError(strings::cat(where, name, ": ", bytes.size(),
                                                         " bytes, over the limit of ",
                                                         limits.max_file_bytes, " per file"));
    }
    if (bytes.find('\0') != std::string_view::npos) {
        return absl::InvalidArgumentError(
            strings::cat(where, name, ": not a rules file (binary data)"));
    }
    return std::map<std::string, std::string>{{name, std::string(bytes)}};
}

ArchiveStore::ArchiveStore(std::filesystem::path dir) : dir_(std::move(dir)) {}

absl::StatusOr<std::string> ArchiveStore::put(std::string_view bytes) {
    const std::string sha = sha256_of(bytes);
    const fs::path sub = dir_ / sha.substr(0, 2);
    const fs::path final_path = sub / sha;
    const std::string where = strings::cat("archive store ", dir_.string(), ": ");
    std::error_code ec;
    if (fs::is_regular_file(final_path, ec) && fs::file_size(final_path, ec) == bytes.size()) {
        return sha;
    }
    fs::create_directories(sub, ec);
    if (ec) {
        return absl::ErrnoToStatus(ec.value(), strings::cat(where, "mkdir ", sub.string()));
    }
    static std::atomic<uint64_t> counter{0};
    const fs::path tmp = sub / strings::cat(".", sha, ".tmp.", getpid(), ".", counter.fetch_add(1));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        return absl::ErrnoToStatus(errno, strings::cat(where, "create ", tmp.string()));
    }
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            return absl::ErrnoToStatus(err, strings::cat(where, "write ", tmp.string()));
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return absl::ErrnoToStatus(err, strings::cat(where, "fsync ", tmp.string()));
    }
    ::close(fd);
    if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        return absl::ErrnoToStatus(err, strings::cat(where, "rename to ", final_path.string()));
    }
    // The rename is durable only once its directory is.
    const int dfd = ::open(sub.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return sha;
}

absl::StatusOr<std::string> ArchiveStore::get(std::string_view sha256) const {
    const std::string where = strings::cat("archive store ", dir_.string(), ": ");
    if (!valid_sha256(sha256)) {
        return absl::InvalidArgumentError(
            strings::cat(where, "\"", sha256, "\" is not a lowercase hex SHA-256"));
    }
    const fs::path path = dir_ / std::string(sha256.substr(0, 2)) / std::string(sha256);
    std::error_code ec;
    if (!fs::exists(path, ec)) {
        return absl::NotFoundError(strings::cat(where, "no object ", sha256));
    }
    absl::StatusOr<std::string> data = read_file(where, path, std::numeric_limits<uint64_t>::max());
    if (!data.ok()) {
        return data.status();
    }
    const std::string have = sha256_of(*data);
    if (have != sha256) {
        return absl::DataLossError(
            strings::cat(where, path.string(), ": content hashes to ", have, ", not ", sha256));
    }
    return data;
}

}  // namespace picket::rules
