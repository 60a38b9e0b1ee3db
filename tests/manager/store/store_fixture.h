// Test-only fixtures for the fleet store tests (store_test, store_security_test): fixed
// timestamps, a temporary directory for the database and a store opened with the test failing
// (not crashing) when it cannot be.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "manager/store/store.h"
#include "tests/support/postgres_server.h"
#include "tests/support/temp_dir.h"

namespace picket::manager::store::testing {

inline constexpr int64_t kSec = 1'000'000'000;
inline constexpr int64_t kBase = 1'699'999'980 * kSec;  // a minute boundary

// kBase + seconds, in the store's nanoseconds.
inline int64_t at(int64_t seconds) {
    return kBase + seconds * kSec;
}

using picket::testing::TempDir;

// The store's two backends: every test that is not about SQLite's files runs on both.
enum class Backend { kSqlite, kPostgres };

// How gtest prints a parameter (test listings, failures).
inline void PrintTo(Backend b, std::ostream* os) {
    *os << (b == Backend::kSqlite ? "sqlite" : "postgres");
}

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::kSqlite ? "sqlite" : "postgres";
}

// Where a test's databases live: files in a temporary directory (SQLite), or fresh schemas on
// the test binary's PostgreSQL server. file(name) is the same database for the same name.
class TestDb {
public:
    explicit TestDb(Backend b) : backend_(b) {}
    // An SQLite path, or a postgres:// DSN ("" when the server is missing: the test skips).
    std::string file(const std::string& name) {
        if (backend_ == Backend::kSqlite) {
            return dir_.file(name);
        }
        auto it = dsns_.find(name);
        if (it != dsns_.end()) {
            return it->second;
        }
        std::string why;
        auto* server = picket::testing::PostgresServer::shared(&why);
        std::string dsn = server != nullptr ? server->fresh_dsn() : "";
        dsns_.emplace(name, dsn);
        return dsn;
    }
    Backend backend() const { return backend_; }

private:
    Backend backend_;
    TempDir dir_;
    std::map<std::string, std::string> dsns_;
};

// A test run once per backend (INSTANTIATE_TEST_SUITE_P(Backends, Suite, kBackends,
// backend_name)); the PostgreSQL run skips, with the reason, when no server can be started.
class BackendTest : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override {
        if (GetParam() == Backend::kPostgres) {
            std::string why;
            if (picket::testing::PostgresServer::shared(&why) == nullptr) {
                GTEST_SKIP() << why;
            }
        }
    }
    bool postgres() const { return GetParam() == Backend::kPostgres; }
    TestDb dir{GetParam()};
};

inline const auto kBackends = ::testing::Values(Backend::kSqlite, Backend::kPostgres);

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
