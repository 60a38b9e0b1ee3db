// Store faults: a blob damaged on disk (detected on read, repaired by pushing the same content
// again) and a write refused by the file size limit (RLIMIT_FSIZE: EFBIG, named as such).
#include <libpq-fe.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "manager/store/store.h"
#include "tests/manager/store/store_fixture.h"
#include "tests/support/temp_dir.h"

namespace picket::manager::store {
namespace {

namespace fs = std::filesystem;

using picket::testing::TempDir;

NewBundle bundle(const std::string& blob) {
    NewBundle b;
    b.name = "et-open";
    b.author = "alice";
    b.message = "update";
    b.created_at = 1'700'000'000'000'000'000;
    b.blob = blob;
    return b;
}

// What an operator (or a bad disk) could do behind the store's back: rewrite a blob's bytes.
void corrupt_blob(const std::string& path, const std::string& sha, const std::string& data) {
    if (path.starts_with("postgres")) {
        // The trigger would refuse it: switched off for the one UPDATE (the test server's
        // role is a superuser).
        PGconn* c = PQconnectdb(path.c_str());
        ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
        std::string sql =
            "ALTER TABLE blobs DISABLE TRIGGER blobs_immutable; UPDATE blobs SET "
            "data = convert_to('" +
            data + "', 'UTF8') WHERE sha256 = '" + sha +
            "'; ALTER TABLE blobs ENABLE TRIGGER blobs_immutable;";
        PGresult* r = PQexec(c, sql.c_str());
        EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(c);
        PQclear(r);
        PQfinish(c);
        return;
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    std::string sql = "DROP TRIGGER blobs_immutable; UPDATE blobs SET data = '" + data +
                      "' WHERE sha256 = '" + sha +
                      "'; CREATE TRIGGER blobs_immutable BEFORE UPDATE ON blobs "
                      "BEGIN SELECT RAISE(ABORT, 'blobs are immutable'); END;";
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << err;
    sqlite3_free(err);
    sqlite3_close(db);
}

class StoreCorruptBlob : public testing::BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, StoreCorruptBlob, testing::kBackends, testing::backend_name);

TEST_P(StoreCorruptBlob, DetectedOnReadAndRepairedByTheSamePush) {
    const std::string path = dir.file("m.db");
    auto s = Store::Open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    Store& store = **s;
    auto pushed = store.push_bundle(bundle("rules-a"));
    ASSERT_TRUE(pushed.ok()) << pushed.status();
    ASSERT_EQ(pushed->version, 1);
    corrupt_blob(path, pushed->sha256, "rules-X");

    auto got = store.get_bundle(1, true);
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(got.status().message(),
              "bundle version 1: stored blob is corrupt (sha256 " + std::string("118c88953c7e") +
                  " instead of " + pushed->sha256.substr(0, 12) +
                  "); push the bundle again and deploy that version (identical content also "
                  "repairs this one)");
    // Metadata reads do not need the blob.
    EXPECT_TRUE(store.get_bundle(1, false).ok());

    // The same content again: same version, not a new one, and the blob is whole again.
    auto again = store.push_bundle(bundle("rules-a"));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->version, 1);
    EXPECT_FALSE(again->created);
    auto fixed = store.get_bundle(1, true);
    ASSERT_TRUE(fixed.ok()) << fixed.status();
    EXPECT_EQ(fixed->blob, "rules-a");
    EXPECT_EQ(*store.latest_version(), 1);
    auto events = store.history("", 10);
    ASSERT_TRUE(events.ok());
    ASSERT_EQ(events->size(), 2u);
    EXPECT_EQ((*events)[0].kind, "bundle.repair");
    EXPECT_EQ((*events)[0].bundle_version, 1);
    EXPECT_EQ((*events)[1].kind, "bundle.push");
    // A third push of intact content changes nothing.
    ASSERT_TRUE(store.push_bundle(bundle("rules-a")).ok());
    EXPECT_EQ(store.history("", 10)->size(), 2u);
    EXPECT_TRUE(store.integrity_check().ok());
}

TEST(StoreFileSizeLimit, EfbigIsResourceExhaustedNamingTheLimit) {
    TempDir dir;
    const std::string path = dir.file("m.db");
    {
        auto s = Store::Open(path);
        ASSERT_TRUE(s.ok()) << s.status();
        ASSERT_EQ((*s)->push_bundle(bundle(std::string(10'000, 'a')))->version, 1);
    }
    // In a child: the limit and SIGXFSZ's disposition are per process.
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        auto s = Store::Open(path);
        if (!s.ok()) {
            _exit(10);
        }
        uintmax_t biggest = 0;
        for (const auto& e : fs::directory_iterator(fs::path(path).parent_path())) {
            biggest = std::max(biggest, fs::file_size(e.path()));
        }
        rlimit lim{};
        lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(biggest + 64 * 1024);
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
            _exit(11);
        }
        auto big = (*s)->push_bundle(bundle(std::string(1'000'000, 'b')));
        if (big.ok()) {
            _exit(12);
        }
        if (big.status().code() != absl::StatusCode::kResourceExhausted) {
            std::fprintf(stderr, "child: %s\n", big.status().ToString().c_str());
            _exit(13);
        }
        if (big.status().message().find("file size limit reached: EFBIG") ==
            std::string_view::npos) {
            _exit(14);
        }
        // Small writes still fit.
        auto small = (*s)->push_bundle(bundle("small"));
        _exit(small.ok() && small->version == 2 ? 0 : 15);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0);
    auto s = Store::Open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(*(*s)->latest_version(), 2);
    EXPECT_EQ((*s)->get_bundle(1)->blob, std::string(10'000, 'a'));
    EXPECT_EQ((*s)->get_bundle(2)->blob, "small");
    EXPECT_TRUE((*s)->integrity_check().ok());
}

}  // namespace
}  // namespace picket::manager::store
