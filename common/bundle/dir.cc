// Bundle directories on disk: loading one (symlink and size checks, deterministic order, the
// manifest's file list) and writing one atomically (temporary directory, fsync, rename).
#include "common/bundle/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>

#include "common/bundle/internal.h"
#include "common/strings.h"

namespace picket::bundle {
namespace {

namespace fs = std::filesystem;
using internal::add_problem;
using internal::join_problems;

absl::Status errno_status(const std::string& what) {
    int e = errno;
    return absl::Status(e == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kInternal,
                        strings::cat(what, ": ", std::strerror(e)));
}

// Calls io(at), a read(2) or write(2) of the bytes from offset `at` on, until `size` bytes are
// done or it returns 0; EINTR is retried. Returns the bytes done, or -1 with errno set.
template <typename Io>
ssize_t io_all(size_t size, Io io) {
    size_t done = 0;
    while (done < size) {
        ssize_t n = io(done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
        done += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(done);
}

// Reads a regular file, refusing symlinks at the last component and anything over max_bytes.
absl::StatusOr<std::string> read_file(const fs::path& path, const std::string& name,
                                      uint64_t max_bytes) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        return errno_status(strings::cat(name, ": cannot open"));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        auto status = errno_status(strings::cat(name, ": cannot stat"));
        ::close(fd);
        return status;
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return absl::InvalidArgumentError(strings::cat(name, ": not a regular file"));
    }
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
        ::close(fd);
        return absl::ResourceExhaustedError(
            strings::cat(name, ": ", st.st_size, " bytes, over the limit of ", max_bytes));
    }
    std::string out;
    out.resize(static_cast<size_t>(st.st_size));
    ssize_t got = io_all(out.size(), [&](size_t at) {
        return ::read(fd, out.data() + at, out.size() - at);
    });  // a file that shrank while being read keeps what is there: the hash covers it
    if (got < 0) {
        auto status = errno_status(strings::cat(name, ": cannot read"));
        ::close(fd);
        return status;
    }
    out.resize(static_cast<size_t>(got));
    ::close(fd);
    return out;
}

absl::Status fsync_path(const fs::path& path, bool directory) {
    int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) {
        return errno_status(strings::cat(path.string(), ": cannot open for fsync"));
    }
    int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) {
        return errno_status(strings::cat(path.string(), ": fsync"));
    }
    return absl::OkStatus();
}

absl::Status write_new_file(const fs::path& path, std::string_view content) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return errno_status(strings::cat(path.string(), ": cannot create"));
    }
    ssize_t done = io_all(content.size(), [&](size_t at) {
        return ::write(fd, content.data() + at, content.size() - at);
    });
    if (done < 0 || static_cast<size_t>(done) != content.size()) {
        auto status = done < 0 ? errno_status(strings::cat(path.string(), ": write"))
                               : absl::InternalError(strings::cat(path.string(), ": short write"));
        ::close(fd);
        return status;
    }
    if (::fsync(fd) != 0) {
        auto status = errno_status(strings::cat(path.string(), ": fsync"));
        ::close(fd);
        return status;
    }
    if (::close(fd) != 0) {
        return errno_status(strings::cat(path.string(), ": close"));
    }
    return absl::OkStatus();
}

// Writes relative path -> content into a new directory atomically (see write_bundle_dir).
// Paths must have passed check_path.
absl::Status write_dir_atomically(
    const std::vector<std::pair<std::string, std::string_view>>& files, const fs::path& dir) {
    std::error_code ec;
    if (fs::symlink_status(dir, ec).type() != fs::file_type::not_found) {
        return absl::AlreadyExistsError(strings::cat(dir.string(), ": already exists"));
    }
    fs::path tmp = dir;
    tmp += ".tmp";
    fs::remove_all(tmp, ec);
    if (ec) {
        return absl::InternalError(
            strings::cat(tmp.string(), ": cannot remove leftover: ", ec.message()));
    }
    if (!fs::create_directories(tmp, ec) || ec) {
        return absl::InternalError(strings::cat(tmp.string(), ": cannot create: ", ec.message()));
    }
    std::set<fs::path> dirs = {tmp};
    for (const auto& [path, content] : files) {
        fs::path target = tmp / fs::path(path);
        fs::path parent = target.parent_path();
        if (dirs.insert(parent).second) {
            fs::create_directories(parent, ec);
            if (ec) {
                return absl::InternalError(
                    strings::cat(parent.string(), ": cannot create: ", ec.message()));
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
        return errno_status(strings::cat("rename ", tmp.string(), " -> ", dir.string()));
    }
    fs::path parent = dir.parent_path();
    return fsync_path(parent.empty() ? fs::path(".") : parent, true);
}

}  // namespace

absl::StatusOr<Bundle> load_bundle_dir(const fs::path& dir, const Limits& limits) {
    std::error_code ec;
    auto root_status = fs::status(dir, ec);
    if (ec || !fs::is_directory(root_status)) {
        return absl::NotFoundError(strings::cat(dir.string(), ": not a directory"));
    }
    fs::path root = fs::canonical(dir, ec);
    if (ec) {
        return absl::NotFoundError(strings::cat(dir.string(), ": ", ec.message()));
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
        return absl::InternalError(strings::cat(dir.string(), ": cannot list: ", ec.message()));
    }
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) {
            return absl::InternalError(strings::cat(dir.string(), ": cannot list: ", ec.message()));
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
                    strings::cat(rel, ": dangling symlink (", ec.message(), ")"));
            }
            auto inside = target.lexically_relative(root);
            if (inside.empty() || inside.begin()->string() == "..") {
                return absl::InvalidArgumentError(strings::cat(
                    rel, ": symlink points outside the bundle directory (", target.string(), ")"));
            }
            if (!fs::is_regular_file(target, ec)) {
                return absl::InvalidArgumentError(
                    strings::cat(rel, ": symlink to something other than a regular file"));
            }
            source = target;
        } else if (type != fs::file_type::regular) {
            return absl::InvalidArgumentError(
                strings::cat(rel, ": not a regular file (devices, fifos, sockets are refused)"));
        }
        if (auto s = check_path(rel); !s.ok()) {
            return s;
        }
        if (found.size() >= limits.max_files) {
            return absl::ResourceExhaustedError(
                strings::cat(dir.string(), ": more than ", limits.max_files, " files"));
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
            return absl::ResourceExhaustedError(strings::cat(
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
                            strings::cat(path, ": listed in manifest.json but missing"));
            } else if (h->second->sha256() != e->sha256()) {
                add_problem(problems, absl::StatusCode::kDataLoss,
                            strings::cat(path, ": sha256 ", h->second->sha256(),
                                         " does not match manifest.json (", e->sha256(), ")"));
            }
        }
        for (const auto& [path, e] : have) {
            if (!want.count(path)) {
                add_problem(problems, absl::StatusCode::kDataLoss,
                            strings::cat(path, ": not listed in manifest.json"));
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
    return strings::cat(version, "-", bundle_sha256(bundle).substr(0, 12));
}

}  // namespace picket::bundle
