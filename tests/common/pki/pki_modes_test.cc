// Key and certificate file modes do not depend on the umask the operator's shell (or a
// service manager) happens to have: keys 0600, certificates 0644, a new directory 0700.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/pki/pki.h"
#include "tests/support/temp_dir.h"

namespace picket::pki {
namespace {

namespace fs = std::filesystem;

unsigned mode_of(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
    return st.st_mode & 0777;
}

class UmaskTest : public ::testing::TestWithParam<mode_t> {
protected:
    void SetUp() override {
        root_ = tmp_.path();
        old_ = ::umask(GetParam());
    }
    void TearDown() override { ::umask(old_); }
    picket::testing::TempDir tmp_{"pki_modes"};
    fs::path root_;
    mode_t old_ = 0;
};

TEST_P(UmaskTest, KeysPrivateCertificatesReadable) {
    fs::path dir = root_ / "pki";
    ASSERT_TRUE(init_ca(dir, "Modes CA", 30).ok());
    ASSERT_TRUE(issue(dir, CertKind::kManager, "manager", {"127.0.0.1"}, 30).ok());
    ASSERT_TRUE(issue(dir, CertKind::kSensor, "edge-1", {}, 30).ok());
    ASSERT_TRUE(issue(dir, CertKind::kAdmin, "ops", {}, 30).ok());
    EXPECT_EQ(mode_of(dir), 0700u);
    for (const char* key : {"ca.key", "manager.key", "edge-1.key", "ops.key"}) {
        EXPECT_EQ(mode_of(dir / key), 0600u) << key;
    }
    for (const char* crt : {"ca.crt", "manager.crt", "edge-1.crt", "ops.crt"}) {
        EXPECT_EQ(mode_of(dir / crt), 0644u) << crt;
    }
    // No temporary file is left behind.
    size_t files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) {
        ++files;
    }
    EXPECT_EQ(files, 8u);
}

INSTANTIATE_TEST_SUITE_P(Umasks, UmaskTest, ::testing::Values(mode_t{0}, mode_t{022}, mode_t{077}));

}  // namespace
}  // namespace picket::pki
