// Shared fixtures for the PKI tests: a fresh temporary directory per test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace picket::pki::test_util {

using picket::testing::TempDir;

inline std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace picket::pki::test_util
