// A temporary directory for one test: created empty under the system's temporary directory
// ($TMPDIR, else /tmp) as <prefix>-XXXXXX, removed with everything in it at destruction. Any
// thread may use one; each object is owned by the test that made it.
#pragma once

#include <filesystem>
#include <string>

namespace picket::testing {

class TempDir {
public:
    // A failed mkdtemp fails the current test (the path is then empty).
    explicit TempDir(const std::string& prefix = "picket-test");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    // path()/name as a string (the form most product APIs take).
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

}  // namespace picket::testing
