// Test-only fixtures for the fleet store tests (store_test, store_security_test): fixed
// timestamps, a temporary directory for the database and a store opened with the test failing
// (not crashing) when it cannot be.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "manager/store/store.h"
#include "tests/support/temp_dir.h"

namespace picket::manager::store::testing {

inline constexpr int64_t kSec = 1'000'000'000;
inline constexpr int64_t kBase = 1'699'999'980 * kSec;  // a minute boundary

// kBase + seconds, in the store's nanoseconds.
inline int64_t at(int64_t seconds) {
    return kBase + seconds * kSec;
}

using picket::testing::TempDir;

// nullptr (and a failed expectation) when the store does not open.
inline std::unique_ptr<Store> open_store(const std::string& path, StoreOptions opt = {}) {
    auto s = Store::Open(path, opt);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
}

// The permission bits of path (0600 for the database and its -wal and -shm files).
inline int mode_of(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return static_cast<int>(st.st_mode & 0777);
}

}  // namespace picket::manager::store::testing
