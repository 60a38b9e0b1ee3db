#include "common/bundle/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <nlohmann/json.hpp>

#include "common/bundle/internal.h"

namespace picket::bundle {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxPathBytes = 255;
constexpr size_t kMaxPathComponents = 8;
constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxTextBytes = 4096;
constexpr int kManifestFormat = 1;

std::string hex_encode(std::string_view bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out.push_back(kDigits[c >> 4]);
        out.push_back(kDigits[c & 15]);
    }
    return out;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;  // uppercase is not canonical and refused
}

std::optional<std::string> hex_decode(std::string_view hex) {
    if (hex.size() % 2 != 0) {
        return std::nullopt;
    }
    std::string out;
    out.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = hex_value(hex[i]);
        int lo = hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>(hi << 4 | lo));
    }
    return out;
}

bool is_sha256_hex(std::string_view s) {
    return s.size() == 64 &&
           std::all_of(s.begin(), s.end(), [](char c) { return hex_value(c) >= 0; });
}

bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        size_t n = 0;
        uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + n >= s.size()) {
            return false;  // truncated sequence
        }
        for (size_t k = 1; k <= n; ++k) {
            auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) {
                return false;
            }
            cp = cp << 6 | (cc & 0x3F);
        }
        // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
        static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += n + 1;
    }
    return true;
}

bool valid_name(std::string_view name) {
    return !name.empty() && name.size() <= kMaxNameBytes &&
           std::all_of(name.begin(), name.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
           });
}

struct PkeyFree {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioFree {
    void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Bio = std::unique_ptr<BIO, BioFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// Reads a PEM key: private if `want_private`, else a public key or (for convenience) the public
// half of a private key.
absl::StatusOr<Pkey> read_key(std::string_view pem, bool want_private) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) {
        return absl::InternalError("cannot allocate a BIO");
    }
    Pkey key;
    if (want_private) {
        key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    } else {
        key.reset(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
        if (!key) {
            Bio again(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
            key.reset(PEM_read_bio_PrivateKey(again.get(), nullptr, nullptr, nullptr));
        }
    }
    if (!key) {
        return absl::InvalidArgumentError(want_private ? "not a PEM private key"
                                                       : "not a PEM public key");
    }
    if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
        return absl::InvalidArgumentError("key is not an Ed25519 key");
    }
    return key;
}

absl::StatusOr<std::string> raw_public_key(EVP_PKEY* key) {
    unsigned char raw[32];
    size_t len = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1 || len != sizeof raw) {
        return absl::InternalError("cannot read the raw Ed25519 public key");
    }
    return std::string(reinterpret_cast<char*>(raw), len);
}

std::string key_id_of_raw(std::string_view raw) {
    return sha256_hex(raw).substr(0, 16);
}

// -------------------------------------------------------------------------------------
// Files

absl::Status errno_status(const std::string& what) {
    int e = errno;
    return absl::Status(e == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kInternal,
                        internal::cat(what, ": ", std::strerror(e)));
}

// Reads a regular file, refusing symlinks at the last component and anything over max_bytes.
absl::StatusOr<std::string> read_file(const fs::path& path, const std::string& name,
                                      uint64_t max_bytes) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        return errno_status(internal::cat(name, ": cannot open"));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        auto status = errno_status(internal::cat(name, ": cannot stat"));
        ::close(fd);
        return status;
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return absl::InvalidArgumentError(internal::cat(name, ": not a regular file"));
    }
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
        ::close(fd);
        return absl::ResourceExhaustedError(
            internal::cat(name, ": ", st.st_size, " bytes, over the limit of ", max_bytes));
    }
    std::string out;
    out.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < out.size()) {
        ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            auto status = errno_status(internal::cat(name, ": cannot read"));
            ::close(fd);
            return status;
        }
        if (n == 0) {
            break;  // shrank while reading: keep what is there, the hash covers it
        }
        got += static_cast<size_t>(n);
    }
    out.resize(got);
    ::close(fd);
    return out;
}

absl::Status fsync_path(const fs::path& path, bool directory) {
    int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        return errno_status(internal::cat(path.string(), ": cannot open for fsync"));
    }
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) {
        return errno_status(internal::cat(path.string(), ": fsync"));
    }
    return absl::OkStatus();
}

absl::Status write_new_file(const fs::path& path, std::string_view content) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return errno_status(internal::cat(path.string(), ": cannot create"));
    }
    size_t done = 0;
    while (done < content.size()) {
        ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            auto status = errno_status(internal::cat(path.string(), ": write"));
            ::close(fd);
            return status;
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0) {
        auto status = errno_status(internal::cat(path.string(), ": fsync"));
        ::close(fd);
        return status;
    }
    if (::close(fd) != 0) {
        return errno_status(internal::cat(path.string(), ": close"));
    }
    return absl::OkStatus();
}

// Writes relative path -> content into a new directory atomically (see write_bundle_dir).
// Paths must have passed check_path.
absl::Status write_dir_atomically(
    const std::vector<std::pair<std::string, std::string_view>>& files, const fs::path& dir) {
    std::error_code ec;
    if (fs::symlink_status(dir, ec).type() != fs::file_type::not_found) {
        return absl::AlreadyExistsError(internal::cat(dir.string(), ": already exists"));
    }
    fs::path tmp = dir;
    tmp += ".tmp";
    fs::remove_all(tmp, ec);
    if (ec) {
        return absl::InternalError(
            internal::cat(tmp.string(), ": cannot remove leftover: ", ec.message()));
    }
    if (!fs::create_directories(tmp, ec) || ec) {
        return absl::InternalError(internal::cat(tmp.string(), ": cannot create: ", ec.message()));
    }
    std::set<fs::path> dirs = {tmp};
    for (const auto& [path, content] : files) {
        fs::path target = tmp / fs::path(path);
        fs::path parent = target.parent_path();
        if (dirs.insert(parent).second) {
            fs::create_directories(parent, ec);
            if (ec) {
                return absl::InternalError(
                    internal::cat(parent.string(), ": cannot create: ", ec.message()));
            }
            for (fs::path p = parent.parent_path(); p != tmp && dirs.insert(p).second;
                 p = p.parent_path()) {
            }
        }
        if (auto status = write_new_file(target, content); !status.ok()) {
            return status;
        }
    }
    for (const auto& d : dirs) {
        if (auto status = fsync_path(d, true); !status.ok()) {
            return status;
        }
    }
    if (::rename(tmp.c_str(), dir.c_str()) != 0) {
        return errno_status(internal::cat("rename ", tmp.string(), " -> ", dir.string()));
    }
    fs::path parent = dir.parent_path();
    return fsync_path(parent.empty() ? fs::path(".") : parent, true);
}

void add_problem(std::vector<std::pair<absl::StatusCode, std::string>>& problems,
                 absl::StatusCode code, std::string message) {
    problems.emplace_back(code, std::move(message));
}

absl::Status join_problems(const std::vector<std::pair<absl::StatusCode, std::string>>& problems) {
    if (problems.empty()) {
        return absl::OkStatus();
    }
    std::vector<std::string> lines;
    lines.reserve(problems.size());
    for (const auto& p : problems) {
        lines.push_back(p.second);
    }
    return absl::Status(problems.front().first, internal::join(lines, "\n"));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Hashing, paths, manifest

std::string sha256_hex(std::string_view bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
    return hex_encode(std::string_view(reinterpret_cast<char*>(md), len));
}

absl::Status check_path(std::string_view path) {
    auto bad = [&](std::string_view why) {
        return absl::InvalidArgumentError(internal::cat("path '", path, "': ", why));
    };
    if (path.empty()) {
        return bad("empty");
    }
    if (path.size() > kMaxPathBytes) {
        return bad("longer than 255 bytes");
    }
    if (path.front() == '/') {
        return bad("absolute paths are not allowed");
    }
    if (path == kManifestFile) {
        return bad("manifest.json is reserved for the manifest");
    }
    size_t components = 0;
    size_t start = 0;
    while (start <= path.size()) {
        size_t slash = path.find('/', start);
        std::string_view part = path.substr(
            start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        if (part.empty()) {
            return bad("empty component");
        }
        if (part == "..") {
            return bad("'..' escapes the bundle directory");
        }
        if (part.front() == '.') {
            return bad("components may not start with '.'");
        }
        for (char c : part) {
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-' || c == '+';
            if (!ok) {
                return bad("only [A-Za-z0-9._+-] and '/' are allowed");
            }
        }
        if (++components > kMaxPathComponents) {
            return bad("more than 8 components");
        }
        if (slash == std::string_view::npos) {
            break;
        }
        start = slash + 1;
    }
    return absl::OkStatus();
}

std::string canonical_manifest(const Manifest& m) {
    auto field = [](std::string& out, std::string_view key, std::string_view value) {
        internal::append(out, key, " ", value.size(), ":", value, "\n");
    };
    std::string out = "picket-bundle-manifest/1\n";
    field(out, "name", m.name());
    field(out, "author", m.author());
    field(out, "message", m.message());
    internal::append(out, "created_at ", m.created_at(), "\n");
    std::vector<const picket::v1::FileEntry*> files;
    files.reserve(m.files_size());
    for (const auto& f : m.files()) {
        files.push_back(&f);
    }
    std::sort(files.begin(), files.end(),
              [](const auto* a, const auto* b) { return a->path() < b->path(); });
    internal::append(out, "files ", files.size(), "\n");
    for (const auto* f : files) {
        internal::append(out, "file ", f->path().size(), ":", f->path(), " ", f->sha256(), " ",
                         f->size(), "\n");
    }
    return out;
}

std::string bundle_sha256(const Bundle& bundle) {
    return sha256_hex(canonical_manifest(bundle.manifest()));
}

picket::v1::BundleRef bundle_ref(const Bundle& bundle) {
    picket::v1::BundleRef ref;
    ref.set_name(bundle.manifest().name());
    ref.set_version(bundle.manifest().version());
    ref.set_sha256(bundle_sha256(bundle));
    return ref;
}

std::string manifest_to_json(const Bundle& bundle) {
    const Manifest& m = bundle.manifest();
    nlohmann::ordered_json j;
    j["format"] = kManifestFormat;
    j["name"] = m.name();
    j["version"] = m.version();
    j["parent_version"] = m.parent_version();
    j["author"] = m.author();
    j["message"] = m.message();
    j["created_at"] = m.created_at();
    j["files"] = nlohmann::ordered_json::array();
    for (const auto& f : m.files()) {
        nlohmann::ordered_json e;
        e["path"] = f.path();
        e["sha256"] = f.sha256();
        e["size"] = f.size();
        j["files"].push_back(std::move(e));
    }
    j["signing_key_id"] = bundle.signing_key_id();
    j["signature"] = hex_encode(bundle.signature());
    // Invalid UTF-8 cannot pass verify_bundle; replace rather than throw if it gets here.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

absl::StatusOr<Bundle> manifest_from_json(std::string_view text, bool* files_listed) {
    auto bad = [](std::string_view why) {
        return absl::InvalidArgumentError(internal::cat("manifest.json: ", why));
    };
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        return bad(internal::cat("not valid JSON (", e.what(), ")"));
    }
    if (!j.is_object()) {
        return bad("not a JSON object");
    }
    Bundle bundle;
    Manifest* m = bundle.mutable_manifest();
    auto get_string = [&](const char* key, std::string* out) -> absl::Status {
        auto it = j.find(key);
        if (it == j.end()) {
            return absl::OkStatus();
        }
        if (!it->is_string()) {
            return bad(internal::cat("'", key, "' must be a string"));
        }
        *out = it->get<std::string>();
        return absl::OkStatus();
    };
    auto get_uint = [&](const nlohmann::json& obj, const char* key, uint64_t* out) -> absl::Status {
        auto it = obj.find(key);
        if (it == obj.end()) {
            return absl::OkStatus();
        }
        if (!it->is_number_unsigned()) {
            return bad(internal::cat("'", key, "' must be a non-negative integer"));
        }
        *out = it->get<uint64_t>();
        return absl::OkStatus();
    };
    uint64_t format = kManifestFormat;  // absent: a hand-written manifest, current format
    if (auto s = get_uint(j, "format", &format); !s.ok()) {
        return s;
    }
    if (format != static_cast<uint64_t>(kManifestFormat)) {
        return bad(internal::cat("'format' must be ", kManifestFormat, " (got ", format, ")"));
    }
    std::string name, author, message, key_id, signature_hex;
    uint64_t version = 0, parent = 0;
    for (auto s :
         {get_string("name", &name), get_string("author", &author), get_string("message", &message),
          get_string("signing_key_id", &key_id), get_string("signature", &signature_hex),
          get_uint(j, "version", &version), get_uint(j, "parent_version", &parent)}) {
        if (!s.ok()) {
            return s;
        }
    }
    int64_t created_at = 0;
    if (auto it = j.find("created_at"); it != j.end()) {
        if (!it->is_number_integer() ||
            (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
            return bad("'created_at' must be an integer (Unix ns)");
        }
        created_at = it->get<int64_t>();
    }
    auto signature = hex_decode(signature_hex);
    if (!signature) {
        return bad("'signature' must be lowercase hex");
    }
    m->set_name(name);
    m->set_version(version);
    m->set_parent_version(parent);
    m->set_author(author);
    m->set_message(message);
    m->set_created_at(created_at);
    bundle.set_signature(*signature);
    bundle.set_signing_key_id(key_id);
    auto files = j.find("files");
    if (files_listed != nullptr) {
        *files_listed = files != j.end();
    }
    if (files != j.end()) {
        if (!files->is_array()) {
            return bad("'files' must be an array");
        }
        for (size_t i = 0; i < files->size(); ++i) {
            const auto& e = (*files)[i];
            std::string where = internal::cat("files[", i, "]");
            if (!e.is_object()) {
                return bad(internal::cat(where, " must be an object"));
            }
            auto path = e.find("path");
            auto sha = e.find("sha256");
            if (path == e.end() || !path->is_string()) {
                return bad(internal::cat(where, ": 'path' must be a string"));
            }
            if (sha == e.end() || !sha->is_string()) {
                return bad(internal::cat(where, ": 'sha256' must be a string"));
            }
            uint64_t size = 0;
            if (e.find("size") == e.end()) {
                return bad(internal::cat(where, ": 'size' is missing"));
            }
            if (auto s = get_uint(e, "size", &size); !s.ok()) {
                return bad(internal::cat(where, ": 'size' must be a non-negative integer"));
            }
            auto* f = m->add_files();
            f->set_path(path->get<std::string>());
            f->set_sha256(sha->get<std::string>());
            f->set_size(size);
        }
    }
    return bundle;
}

void update_manifest_files(Bundle& bundle) {
    std::vector<const picket::v1::BundleFile*> files;
    for (const auto& f : bundle.files()) {
        files.push_back(&f);
    }
    std::sort(files.begin(), files.end(),
              [](const auto* a, const auto* b) { return a->path() < b->path(); });
    Manifest* m = bundle.mutable_manifest();
    m->clear_files();
    for (const auto* f : files) {
        auto* e = m->add_files();
        e->set_path(f->path());
        e->set_sha256(sha256_hex(f->content()));
        e->set_size(f->content().size());
    }
}

// ---------------------------------------------------------------------------------------
// Directories

absl::StatusOr<Bundle> load_bundle_dir(const fs::path& dir, const Limits& limits) {
    std::error_code ec;
    auto root_status = fs::status(dir, ec);
    if (ec || !fs::is_directory(root_status)) {
        return absl::NotFoundError(internal::cat(dir.string(), ": not a directory"));
    }
    fs::path root = fs::canonical(dir, ec);
    if (ec) {
        return absl::NotFoundError(internal::cat(dir.string(), ": ", ec.message()));
    }

    Bundle bundle;
    bool files_listed = false;
    fs::path manifest_path = root / kManifestFile;
    if (fs::symlink_status(manifest_path, ec).type() != fs::file_type::not_found) {
        auto text = read_file(manifest_path, std::string(kManifestFile), 1u << 20);
        if (!text.ok()) {
            return text.status();
        }
        auto parsed = manifest_from_json(*text, &files_listed);
        if (!parsed.ok()) {
            return parsed.status();
        }
        bundle = std::move(*parsed);
    } else {
        bundle.mutable_manifest()->set_name(root.filename().string());
    }
    Manifest listed = bundle.manifest();

    // Collect first, then read in path order: directory order is unspecified and errors must be
    // deterministic.
    std::vector<std::pair<std::string, fs::path>> found;  // bundle path, file to read
    fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
    if (ec) {
        return absl::InternalError(internal::cat(dir.string(), ": cannot list: ", ec.message()));
    }
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) {
            return absl::InternalError(
                internal::cat(dir.string(), ": cannot list: ", ec.message()));
        }
        const fs::path& p = it->path();
        std::string rel = p.lexically_relative(root).generic_string();
        auto type = it->symlink_status(ec).type();
        if (p.filename().string().front() == '.') {
            if (type == fs::file_type::directory) {
                it.disable_recursion_pending();
            }
            continue;  // hidden entries (.git, editor files) are not part of a bundle
        }
        if (rel == kManifestFile || type == fs::file_type::directory) {
            continue;
        }
        fs::path source = p;
        if (type == fs::file_type::symlink) {
            fs::path target = fs::canonical(p, ec);
            if (ec) {
                return absl::InvalidArgumentError(
                    internal::cat(rel, ": dangling symlink (", ec.message(), ")"));
            }
            auto inside = target.lexically_relative(root);
            if (inside.empty() || inside.begin()->string() == "..") {
                return absl::InvalidArgumentError(internal::cat(
                    rel, ": symlink points outside the bundle directory (", target.string(), ")"));
            }
            if (!fs::is_regular_file(target, ec)) {
                return absl::InvalidArgumentError(
                    internal::cat(rel, ": symlink to something other than a regular file"));
            }
            source = target;
        } else if (type != fs::file_type::regular) {
            return absl::InvalidArgumentError(
                internal::cat(rel, ": not a regular file (devices, fifos, sockets are refused)"));
        }
        if (auto s = check_path(rel); !s.ok()) {
            return s;
        }
        if (found.size() >= limits.max_files) {
            return absl::ResourceExhaustedError(
                internal::cat(dir.string(), ": more than ", limits.max_files, " files"));
        }
        found.emplace_back(std::move(rel), std::move(source));
    }
    std::sort(found.begin(), found.end());
    uint64_t total = 0;
    for (auto& [rel, source] : found) {
        auto content = read_file(source, rel, limits.max_file_bytes);
        if (!content.ok()) {
            return content.status();
        }
        total += content->size();
        if (total > limits.max_total_bytes) {
            return absl::ResourceExhaustedError(internal::cat(
                dir.string(), ": files total more than ", limits.max_total_bytes, " bytes"));
        }
        auto* f = bundle.add_files();
        f->set_path(rel);
        f->set_content(std::move(*content));
    }
    update_manifest_files(bundle);

    if (files_listed) {
        // The directory must hold exactly what manifest.json lists.
        std::vector<std::pair<absl::StatusCode, std::string>> problems;
        std::map<std::string, const picket::v1::FileEntry*> want;
        for (const auto& e : listed.files()) {
            want[e.path()] = &e;
        }
        std::map<std::string, const picket::v1::FileEntry*> have;
        for (const auto& e : bundle.manifest().files()) {
            have[e.path()] = &e;
        }
        for (const auto& [path, e] : want) {
            auto h = have.find(path);
            if (h == have.end()) {
                add_problem(problems, absl::StatusCode::kDataLoss,
                            internal::cat(path, ": listed in manifest.json but missing"));
            } else if (h->second->sha256() != e->sha256()) {
                add_problem(problems, absl::StatusCode::kDataLoss,
                            internal::cat(path, ": sha256 ", h->second->sha256(),
                                          " does not match manifest.json (", e->sha256(), ")"));
            }
        }
        for (const auto& [path, e] : have) {
            if (!want.count(path)) {
                add_problem(problems, absl::StatusCode::kDataLoss,
                            internal::cat(path, ": not listed in manifest.json"));
            }
        }
        if (auto s = join_problems(problems); !s.ok()) {
            return s;
        }
    }
    return bundle;
}

absl::Status write_bundle_dir(const Bundle& bundle, const fs::path& dir, const Limits& limits) {
    VerifyOptions options;
    options.limits = limits;
    options.require_version = false;
    if (auto s = verify_bundle(bundle, options); !s.ok()) {
        return s;
    }
    std::string manifest = manifest_to_json(bundle);
    std::vector<std::pair<std::string, std::string_view>> files;
    files.reserve(bundle.files_size() + 1);
    for (const auto& f : bundle.files()) {
        files.emplace_back(f.path(), f.content());
    }
    files.emplace_back(std::string(kManifestFile), manifest);
    return write_dir_atomically(files, dir);
}

absl::Status write_effective_dir(const TuningResult& result, const fs::path& dir) {
    std::vector<std::pair<std::string, std::string_view>> files;
    for (const auto& [path, text] : result.rules) {
        if (auto s = check_path(path); !s.ok()) {
            return s;
        }
        files.emplace_back(path, text);
    }
    if (!result.rules.count(std::string(kThresholdFile))) {
        files.emplace_back(std::string(kThresholdFile), result.threshold_config);
    }
    return write_dir_atomically(files, dir);
}

std::string versioned_dir_name(const Bundle& bundle) {
    std::string version = std::to_string(bundle.manifest().version());
    if (version.size() < 12) {
        version.insert(0, 12 - version.size(), '0');
    }
    return internal::cat(version, "-", bundle_sha256(bundle).substr(0, 12));
}

// ---------------------------------------------------------------------------------------
// Verification and signing

absl::Status verify_bundle(const Bundle& bundle, const VerifyOptions& options) {
    using Code = absl::StatusCode;
    std::vector<std::pair<Code, std::string>> problems;
    const Limits& limits = options.limits;
    if (!bundle.has_manifest()) {
        return absl::InvalidArgumentError("bundle has no manifest");
    }
    const Manifest& m = bundle.manifest();
    if (!valid_name(m.name())) {
        add_problem(problems, Code::kInvalidArgument,
                    internal::cat("manifest: name '", m.name(),
                                  "' must be 1-64 characters of [A-Za-z0-9._-]"));
    }
    for (const auto& [field, value] :
         {std::pair<const char*, const std::string*>{"author", &m.author()},
          {"message", &m.message()}}) {
        if (value->size() > kMaxTextBytes || !valid_utf8(*value)) {
            add_problem(problems, Code::kInvalidArgument,
                        internal::cat("manifest: ", field, " must be valid UTF-8, at most ",
                                      kMaxTextBytes, " bytes"));
        }
    }
    if (options.require_version && m.version() == 0) {
        add_problem(problems, Code::kInvalidArgument, "manifest: version must be > 0");
    }
    if (m.version() > 0 && m.parent_version() >= m.version()) {
        add_problem(problems, Code::kInvalidArgument,
                    internal::cat("manifest: parent_version ", m.parent_version(),
                                  " must be lower than version ", m.version()));
    }
    if (m.created_at() < 0) {
        add_problem(problems, Code::kInvalidArgument, "manifest: created_at is negative");
    }

    if (static_cast<uint64_t>(m.files_size()) > limits.max_files ||
        static_cast<uint64_t>(bundle.files_size()) > limits.max_files) {
        add_problem(problems, Code::kResourceExhausted,
                    internal::cat("bundle has ", std::max(m.files_size(), bundle.files_size()),
                                  " files, over the limit of ", limits.max_files));
        return join_problems(problems);  // do not walk an oversized list
    }
    std::map<std::string_view, const picket::v1::FileEntry*> entries;
    uint64_t total = 0;
    bool has_rules = false;
    for (const auto& e : m.files()) {
        if (auto s = check_path(e.path()); !s.ok()) {
            add_problem(problems, s.code(), internal::cat("manifest: ", s.message()));
            continue;
        }
        if (!entries.emplace(e.path(), &e).second) {
            add_problem(problems, Code::kInvalidArgument,
                        internal::cat("manifest: ", e.path(), ": listed twice"));
        }
        if (!is_sha256_hex(e.sha256())) {
            add_problem(problems, Code::kInvalidArgument,
                        internal::cat("manifest: ", e.path(),
                                      ": sha256 must be 64 lowercase hex characters"));
        }
        if (e.size() > limits.max_file_bytes) {
            add_problem(problems, Code::kResourceExhausted,
                        internal::cat(e.path(), ": ", e.size(), " bytes, over the limit of ",
                                      limits.max_file_bytes));
        }
        // Saturating: sizes come from the wire and may be anything.
        total = e.size() > UINT64_MAX - total ? UINT64_MAX : total + e.size();
        std::string_view p = e.path();
        if (p.starts_with(kRulesDir) && p.ends_with(".rules")) {
            has_rules = true;
        }
    }
    if (total > limits.max_total_bytes) {
        add_problem(problems, Code::kResourceExhausted,
                    internal::cat("bundle files total ", total, " bytes, over the limit of ",
                                  limits.max_total_bytes));
    }
    // "a" and "a/b" cannot both be files: writing one would fail on the other, or, in a tool
    // that unpacks in order, turn a file into a directory under an earlier name.
    for (const auto& [path, e] : entries) {
        for (size_t slash = path.find('/'); slash != std::string_view::npos;
             slash = path.find('/', slash + 1)) {
            if (entries.count(path.substr(0, slash)) != 0) {
                add_problem(problems, Code::kInvalidArgument,
                            internal::cat("manifest: ", path.substr(0, slash),
                                          ": is both a file and a directory (", path, ")"));
            }
        }
    }
    if (!has_rules) {
        add_problem(problems, Code::kInvalidArgument, "bundle has no rules file (rules/*.rules)");
    }

    std::set<std::string_view> seen;
    for (const auto& f : bundle.files()) {
        if (auto s = check_path(f.path()); !s.ok()) {
            add_problem(problems, s.code(), std::string(s.message()));
            continue;
        }
        if (!seen.insert(f.path()).second) {
            add_problem(problems, Code::kInvalidArgument,
                        internal::cat(f.path(), ": file present twice"));
            continue;
        }
        auto it = entries.find(f.path());
        if (it == entries.end()) {
            add_problem(problems, Code::kDataLoss,
                        internal::cat(f.path(), ": file not listed in the manifest"));
            continue;
        }
        if (f.content().size() != it->second->size()) {
            add_problem(problems, Code::kDataLoss,
                        internal::cat(f.path(), ": size ", f.content().size(),
                                      " does not match the manifest (", it->second->size(), ")"));
            continue;
        }
        std::string sha = sha256_hex(f.content());
        if (sha != it->second->sha256()) {
            add_problem(problems, Code::kDataLoss,
                        internal::cat(f.path(), ": sha256 ", sha, " does not match the manifest (",
                                      it->second->sha256(), ")"));
        }
    }
    for (const auto& [path, e] : entries) {
        if (!seen.count(path)) {
            add_problem(problems, Code::kDataLoss,
                        internal::cat(path, ": listed in the manifest but missing"));
        }
    }

    if (problems.empty()) {
        // Counted only on intact content (the sizes were bounded above).
        uint64_t rules = count_rules(bundle);
        if (rules > limits.max_rules) {
            add_problem(problems, Code::kResourceExhausted,
                        internal::cat("bundle has ", rules, " rules, over the limit of ",
                                      limits.max_rules));
        }
    }

    if (!options.public_key_pem.empty()) {
        auto key = read_key(options.public_key_pem, false);
        if (!key.ok()) {
            add_problem(problems, Code::kFailedPrecondition,
                        internal::cat("configured public key: ", key.status().message()));
            return join_problems(problems);
        }
        auto raw = raw_public_key(key->get());
        std::string expected_id = raw.ok() ? key_id_of_raw(*raw) : "";
        if (bundle.signature().empty()) {
            add_problem(problems, Code::kPermissionDenied,
                        internal::cat("bundle is unsigned; a signature by key ", expected_id,
                                      " is required"));
        } else if (bundle.signing_key_id() != expected_id) {
            add_problem(problems, Code::kPermissionDenied,
                        internal::cat("bundle is signed by key '", bundle.signing_key_id(),
                                      "', expected key ", expected_id));
        } else {
            std::string data = canonical_manifest(m);
            MdCtx ctx(EVP_MD_CTX_new());
            bool ok =
                ctx && bundle.signature().size() == 64 &&
                EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key->get()) == 1 &&
                EVP_DigestVerify(
                    ctx.get(), reinterpret_cast<const unsigned char*>(bundle.signature().data()),
                    bundle.signature().size(), reinterpret_cast<const unsigned char*>(data.data()),
                    data.size()) == 1;
            if (!ok) {
                add_problem(problems, Code::kPermissionDenied,
                            internal::cat("bad signature: the manifest was not signed by key ",
                                          expected_id, " or was altered after signing"));
            }
        }
    }
    return join_problems(problems);
}

absl::StatusOr<KeyPair> generate_key_pair() {
    Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
    if (!key) {
        return absl::InternalError("Ed25519 key generation failed");
    }
    KeyPair pair;
    for (bool priv : {true, false}) {
        Bio bio(BIO_new(BIO_s_mem()));
        int ok = priv ? PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                                 nullptr)
                      : PEM_write_bio_PUBKEY(bio.get(), key.get());
        if (ok != 1) {
            return absl::InternalError("PEM encoding failed");
        }
        char* data = nullptr;
        long len = BIO_get_mem_data(bio.get(), &data);
        (priv ? pair.private_pem : pair.public_pem).assign(data, static_cast<size_t>(len));
    }
    return pair;
}

absl::StatusOr<std::string> key_id(std::string_view pem) {
    auto key = read_key(pem, false);
    if (!key.ok()) {
        return key.status();
    }
    auto raw = raw_public_key(key->get());
    if (!raw.ok()) {
        return raw.status();
    }
    return key_id_of_raw(*raw);
}

absl::Status sign_bundle(Bundle& bundle, std::string_view private_key_pem) {
    auto key = read_key(private_key_pem, true);
    if (!key.ok()) {
        return key.status();
    }
    auto raw = raw_public_key(key->get());
    if (!raw.ok()) {
        return raw.status();
    }
    std::string data = canonical_manifest(bundle.manifest());
    MdCtx ctx(EVP_MD_CTX_new());
    unsigned char sig[64];
    size_t sig_len = sizeof sig;
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key->get()) != 1 ||
        EVP_DigestSign(ctx.get(), sig, &sig_len,
                       reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
        return absl::InternalError("Ed25519 signing failed");
    }
    bundle.set_signature(std::string(reinterpret_cast<char*>(sig), sig_len));
    bundle.set_signing_key_id(key_id_of_raw(*raw));
    return absl::OkStatus();
}

std::string RuleId::to_string() const {
    return internal::cat(gid, ":", sid);
}

}  // namespace picket::bundle
