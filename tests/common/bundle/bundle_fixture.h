// Test-only fixtures for the bundle tests (bundle_test, bundle_security_test): a temporary
// directory, whole-file write and read for unpacked bundles, and adding a file to a bundle
// without touching its manifest.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>

#include "common/bundle/bundle.h"
#include "tests/support/temp_dir.h"

// Debian's absl::string_view is not std::string_view; print it as text in failures.
namespace absl {
inline void PrintTo(string_view s, std::ostream* os) {
    *os << '"' << std::string(s) << '"';
}
}  // namespace absl

namespace picket::bundle::testing {

using picket::testing::TempDir;

// Writes content to path, creating its parent directories.
inline void write(const std::filesystem::path& path, const std::string& content) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
}

inline std::string read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Appends a file; the caller updates the manifest (update_manifest_files) when it wants it right.
inline void add_file(Bundle& b, const std::string& path, const std::string& content) {
    auto* f = b.add_files();
    f->set_path(path);
    f->set_content(content);
}

}  // namespace picket::bundle::testing
