#include "manager/rules/rules.h"

#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace picket::rules {
namespace {

using namespace std::chrono_literals;

constexpr char kRule[] = "alert ip any any -> any any (msg:\"x\"; sid:1; rev:1;)\n";
// sha256sum of kRule.
constexpr char kRuleSha[] = "2ae99f5ad8c285626d3e3626193d0671aea7b5c52a8deee9ca3cc6ec99ffcc65";

struct Entry {
    std::string path;
    std::string data;
    unsigned type = AE_IFREG;
};

la_ssize_t append_cb(struct archive*, void* user, const void* buf, size_t n) {
    static_cast<std::string*>(user)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
}

// format: "tar.gz", "tar" or "zip".
std::string make_archive(const std::string& format, const std::vector<Entry>& entries) {
    std::string out;
    struct archive* a = archive_write_new();
    if (format == "zip") {
        archive_write_set_format_zip(a);
    } else {
        archive_write_set_format_pax_restricted(a);
    }
    if (format == "tar.gz") {
        archive_write_add_filter_gzip(a);
    }
    archive_write_open2(a, &out, nullptr, &append_cb, nullptr, nullptr);
    for (const Entry& e : entries) {
        struct archive_entry* ae = archive_entry_new();
        archive_entry_set_pathname(ae, e.path.c_str());
        archive_entry_set_filetype(ae, e.type);
        archive_entry_set_perm(ae, 0644);
        if (e.type == AE_IFLNK) {
            archive_entry_set_symlink(ae, e.data.c_str());
            archive_entry_set_size(ae, 0);
        } else {
            archive_entry_set_size(ae, static_cast<la_int64_t>(e.data.size()));
        }
        archive_write_header(a, ae);
        if (e.type == AE_IFREG && !e.data.empty()) {
            archive_write_data(a, e.data.data(), e.data.size());
        }
        archive_entry_free(ae);
    }
    archive_write_close(a);
    archive_write_free(a);
    return out;
}

std::string read_all(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_all(const std::filesystem::path& p, const std::string& data) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << data;
}

// ---- check_source_spec -----------------------------------------------------------------

TEST(CheckSourceSpec, AcceptsUrlsAndAbsolutePaths) {
    EXPECT_TRUE(check_source_spec({"et-open",
                                   "https://rules.example/x.tar.gz",
                                   {"X-Key: k"},
                                   "https://rules.example/x.tar.gz.md5"})
                    .ok());
    EXPECT_TRUE(check_source_spec({"local_1", "/var/lib/rules", {}, ""}).ok());
}

TEST(CheckSourceSpec, RefusesBadSpecs) {
    EXPECT_EQ(check_source_spec({"a b", "/x", {}, ""}).message(),
              "source a b: invalid name (want 1 to 64 of [A-Za-z0-9._-], not starting with '.')");
    // A bundle path component may not start with '.'; rules/local/ is the site's own rules.
    EXPECT_EQ(check_source_spec({".hidden", "/x", {}, ""}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(check_source_spec({"local", "/x", {}, ""}).message(),
              "source local: 'local' is reserved for the bundle's own rules (rules/local/)");
    EXPECT_EQ(check_source_spec({std::string(65, 'a'), "/x", {}, ""}).code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(check_source_spec({"s", "", {}, ""}).message(), "source s: empty location");
    EXPECT_EQ(check_source_spec({"s", "rules/x", {}, ""}).message(),
              "source s: location rules/x: neither a URL nor an absolute path");
    EXPECT_EQ(check_source_spec({"s", "ftp://h/x", {}, ""}).message(),
              "source s: location ftp://h/x: only http:// and https:// URLs");
    EXPECT_EQ(check_source_spec({"s", "/x", {"NoColon"}, ""}).message(),
              "source s: header \"NoColon\": want \"Name: value\"");
    EXPECT_EQ(check_source_spec({"s", "/x", {"A: b\r\nEvil: 1"}, ""}).message(),
              "source s: header \"A: b\\r\\nEvil: 1\": has CR or LF");
    EXPECT_EQ(check_source_spec({"s", "/x", {}, "file:///etc/passwd"}).message(),
              "source s: checksum URL file:///etc/passwd: only http:// and https:// URLs");
}

// ---- extract_rule_files ------------------------------------------------------------------

TEST(ExtractRuleFiles, TarGzKeepsRulesAndConfigsByBasename) {
    const std::string tgz =
        make_archive("tar.gz", {{"rules/", "", AE_IFDIR},
                                {"rules/emerging-scan.rules", kRule},
                                {"rules/classification.config", "config classification: a,b,1\n"},
                                {"rules/LICENSE", "text"},
                                {"rules/sid-msg.map", "1 || x"},
                                {"rules/link.rules", "/etc/passwd", AE_IFLNK}});
    auto files = extract_rule_files("et", tgz, "", "x.tar.gz");
    ASSERT_TRUE(files.ok()) << files.status();
    std::map<std::string, std::string> want = {
        {"classification.config", "config classification: a,b,1\n"},
        {"emerging-scan.rules", kRule}};
    EXPECT_EQ(*files, want);
}

TEST(ExtractRuleFiles, ZipWorks) {
    const std::string zip = make_archive("zip", {{"a/x.rules", kRule}, {"b/y.rules", "# y\n"}});
    auto files = extract_rule_files("z", zip, "zip", "");
    ASSERT_TRUE(files.ok()) << files.status();
    std::map<std::string, std::string> want = {{"x.rules", kRule}, {"y.rules", "# y\n"}};
    EXPECT_EQ(*files, want);
}

TEST(ExtractRuleFiles, RefusesPathEscapes) {
    auto up = extract_rule_files("s", make_archive("tar", {{"../x.rules", kRule}}), "tar", "");
    EXPECT_EQ(up.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(up.status().message(), "source s: ../x.rules: path has \"..\"");
    auto mid =
        extract_rule_files("s", make_archive("tar", {{"a/../../x.rules", kRule}}), "tar", "");
    EXPECT_EQ(mid.status().message(), "source s: a/../../x.rules: path has \"..\"");
    auto abs = extract_rule_files("s", make_archive("tar.gz", {{"/etc/x.rules", kRule}}), "", "");
    EXPECT_EQ(abs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(abs.status().message(), "source s: /etc/x.rules: absolute path");
}

TEST(ExtractRuleFiles, RefusesTooManyEntriesFast) {
    std::vector<Entry> entries;
    for (int i = 0; i < 10'001; ++i) {
        entries.push_back({"d/" + std::to_string(i), ""});
    }
    const std::string tar = make_archive("tar.gz", entries);
    auto r = extract_rule_files("big", tar, "tar.gz", "");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(r.status().message(), "source big: archive has more than 10000 entries");
    entries.resize(9'999);  // with x.rules: exactly the limit
    entries.push_back({"x.rules", kRule});
    EXPECT_TRUE(extract_rule_files("big", make_archive("tar.gz", entries), "", "").ok());
}

TEST(ExtractRuleFiles, TruncatedGzipIsDataLoss) {
    std::string rules;
    for (int i = 0; i < 4000; ++i) {
        rules += "alert tcp any any -> any " + std::to_string(i * 7919 % 65536) + " (msg:\"r" +
                 std::to_string(i * 104729) + "\"; sid:" + std::to_string(i) + ";)\n";
    }
    const std::string tgz = make_archive("tar.gz", {{"rules/a.rules", rules}});
    auto r = extract_rule_files("t", tgz.substr(0, tgz.size() / 2), "", "");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(r.status().message(), "source t: rules/a.rules: truncated gzip input");
}

TEST(ExtractRuleFiles, DuplicateBasenameNamesBothEntries) {
    auto r = extract_rule_files(
        "d", make_archive("tar", {{"a/x.rules", kRule}, {"b/x.rules", kRule}}), "", "");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              "source d: a/x.rules and b/x.rules have the same basename x.rules");
}

TEST(ExtractRuleFiles, NoRulesAndBinaryRules) {
    auto none = extract_rule_files("n", make_archive("tar", {{"README", "x"}}), "", "");
    EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(none.status().message(), "source n: no .rules file in the archive");
    auto bin = extract_rule_files(
        "n", make_archive("tar", {{"r/b.rules", std::string("ab\0cd", 5)}}), "", "");
    EXPECT_EQ(bin.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(bin.status().message(), "source n: r/b.rules: not a rules file (binary data)");
}

TEST(ExtractRuleFiles, FileAndTotalLimits) {
    ExtractLimits limits;
    limits.max_file_bytes = 10;
    auto file = extract_rule_files("l", make_archive("tar", {{"x.rules", kRule}}), "", "", limits);
    EXPECT_EQ(file.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(file.status().message(),
              "source l: x.rules: 53 bytes, over the limit of 10 per file");
    limits = {};
    limits.max_total_bytes = 100;
    auto total = extract_rule_files(
        "l", make_archive("tar", {{"x.rules", kRule}, {"junk", std::string(60, 'j')}}), "", "",
        limits);
    EXPECT_EQ(total.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(total.status().message(),
              "source l: archive exceeds the limit of 100 uncompressed bytes (at junk)");
}

TEST(ExtractRuleFiles, SingleRulesFile) {
    auto named = extract_rule_files("s", kRule, "", "https://h/path/local.rules");
    ASSERT_TRUE(named.ok()) << named.status();
    EXPECT_EQ(*named, (std::map<std::string, std::string>{{"local.rules", kRule}}));
    auto appended = extract_rule_files("s", kRule, "rules", "feed.txt");
    ASSERT_TRUE(appended.ok()) << appended.status();
    EXPECT_EQ(*appended, (std::map<std::string, std::string>{{"feed.txt.rules", kRule}}));
    auto bin = extract_rule_files("s", std::string("\x01\0", 2), "", "x.rules");
    EXPECT_EQ(bin.status().message(), "source s: x.rules: not a rules file (binary data)");
}

// ---- local sources -----------------------------------------------------------------------

TEST(FetchSource, LocalFileAndNotModified) {
    testing::TempDir dir;
    write_all(dir.path() / "local.rules", kRule);
    SourceSpec spec{"loc", dir.file("local.rules"), {}, ""};
    auto first = fetch_source(spec, {});
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->not_modified);
    EXPECT_EQ(first->bytes, kRule);
    EXPECT_EQ(first->sha256, kRuleSha);
    EXPECT_EQ(first->kind, "rules");
    auto second = fetch_source(spec, {"", "", kRuleSha});
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_TRUE(second->not_modified);
    EXPECT_EQ(second->bytes, "");
    EXPECT_EQ(second->sha256, kRuleSha);
}

TEST(FetchSource, MissingPathIsNotFound) {
    auto r = fetch_source({"m", "/nonexistent/picket/x.rules", {}, ""}, {});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(r.status().message(),
              "source m: /nonexistent/picket/x.rules: No such file or directory");
}

TEST(FetchSource, DirectoryIsADeterministicTar) {
    testing::TempDir a("picket-src-a");
    testing::TempDir b("picket-src-b");
    // Same files, written in different orders and at different times.
    write_all(a.path() / "emerging-scan.rules", kRule);
    write_all(a.path() / "sub/local.rules", "# local\n");
    write_all(a.path() / "reference.config", "config reference: url http://\n");
    write_all(b.path() / "reference.config", "config reference: url http://\n");
    write_all(b.path() / "sub/local.rules", "# local\n");
    write_all(b.path() / "emerging-scan.rules", kRule);
    std::filesystem::last_write_time(b.path() / "sub/local.rules",
                                     std::filesystem::file_time_type::clock::now() - 1000h);
    auto ra = fetch_source({"d", a.path().string(), {}, ""}, {});
    auto rb = fetch_source({"d", b.path().string(), {}, ""}, {});
    ASSERT_TRUE(ra.ok()) << ra.status();
    ASSERT_TRUE(rb.ok()) << rb.status();
    EXPECT_EQ(ra->kind, "tar");
    EXPECT_EQ(ra->sha256, rb->sha256);
    EXPECT_EQ(ra->bytes, rb->bytes);
    EXPECT_EQ(ra->bytes.size(), 10240u);  // libarchive's ustar: one 10 KiB block
    auto files = extract_rule_files("d", ra->bytes, ra->kind, "");
    ASSERT_TRUE(files.ok()) << files.status();
    std::map<std::string, std::string> want = {
        {"emerging-scan.rules", kRule},
        {"local.rules", "# local\n"},
        {"reference.config", "config reference: url http://\n"}};
    EXPECT_EQ(*files, want);
}

// ---- ArchiveStore ------------------------------------------------------------------------

TEST(ArchiveStore, PutGetAndCorruption) {
    testing::TempDir dir;
    ArchiveStore store(dir.path() / "objects");
    auto sha = store.put(kRule);
    ASSERT_TRUE(sha.ok()) << sha.status();
    EXPECT_EQ(*sha, kRuleSha);
    const auto object = dir.path() / "objects" / std::string(kRuleSha).substr(0, 2) / kRuleSha;
    EXPECT_EQ(read_all(object), kRule);
    EXPECT_EQ(*store.put(kRule), kRuleSha);  // already there
    auto got = store.get(kRuleSha);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, kRule);

    const std::string absent(64, 'a');
    EXPECT_EQ(store.get(absent).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(store.get("../../etc/passwd").status().code(), absl::StatusCode::kInvalidArgument);

    write_all(object, "tampered");
    auto bad = store.get(kRuleSha);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(bad.status().message(),
              "archive store " + (dir.path() / "objects").string() + ": " + object.string() +
                  ": content hashes to "
                  "d121be3103007b41edf96f8262925f8c7d61894afe9a041843b631f69445bc57, not " +
                  kRuleSha);
}

// ---- HTTP --------------------------------------------------------------------------------

// A loopback server (Python's http.server) serving the files of a folder with a fixed ETag,
// plus endpoints for errors, a redirect, a slow answer, a keyed path and the User-Agent.
constexpr char kServer[] = R"PY(
import hashlib, http.server, os, sys, time
root = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def send(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def file(self, name):
        with open(os.path.join(root, name), "rb") as f:
            return f.read()
    def do_GET(self):
        p = self.path
        if p == "/500":
            return self.send(500, b"oops")
        if p == "/redirect":
            return self.send(302, headers=[("Location", "/f/rules.tar.gz")])
        if p == "/loop":
            return self.send(302, headers=[("Location", "/loop")])
        if p == "/slow":
            time.sleep(3)
            return self.send(200, b"late")
        if p == "/ua":
            return self.send(200, self.headers.get("User-Agent", "").encode())
        if p == "/keyed":
            if self.headers.get("X-Key") != "k":
                return self.send(403, b"no key")
            return self.send(200, self.file("rules.tar.gz"))
        if p == "/md5/rules.tar.gz":
            return self.send(200, (hashlib.md5(self.file("rules.tar.gz")).hexdigest() + "  rules.tar.gz\n").encode())
        if p == "/sha256/rules.tar.gz":
            return self.send(200, hashlib.sha256(self.file("rules.tar.gz")).hexdigest().encode())
        if p == "/badsum":
            return self.send(200, b"0123456789abcdef0123456789abcdef\n")
        if p.startswith("/f/") and os.path.exists(os.path.join(root, p[3:])):
            v = [("ETag", '"v1"'), ("last-modified", "Wed, 21 Oct 2015 07:28:00 GMT")]
            if self.headers.get("If-None-Match") == '"v1"':
                return self.send(304, headers=v)
            return self.send(200, self.file(p[3:]), v)
        return self.send(404, b"not found")
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(os.path.join(root, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(root, "port.tmp"), os.path.join(root, "port"))
srv.serve_forever()
)PY";

class HttpSource : public ::testing::Test {
protected:
    void SetUp() override {
        tgz_ = make_archive("tar.gz", {{"rules/emerging-scan.rules", kRule}});
        write_all(dir_.path() / "rules.tar.gz", tgz_);
        write_all(dir_.path() / "plain.rules", kRule);
        write_all(dir_.path() / "big.rules", std::string(2 << 20, 'a'));
        write_all(dir_.path() / "server.py", kServer);
        pid_ = fork();
        ASSERT_GE(pid_, 0);
        if (pid_ == 0) {
            execlp("python3", "python3", dir_.file("server.py").c_str(), dir_.path().c_str(),
                   static_cast<char*>(nullptr));
            _exit(127);
        }
        const auto port_file = dir_.path() / "port";
        ASSERT_TRUE(testing::wait_until([&] { return std::filesystem::exists(port_file); }, 30s,
                                        "the server's port file"));
        port_ = std::stoi(read_all(port_file));
        ASSERT_TRUE(testing::wait_until([&] { return accepts(); }, 30s,
                                        "the server to accept connections"));
    }
    void TearDown() override {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
    }
    bool accepts() const {
        const int fd = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(static_cast<uint16_t>(port_));
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        close(fd);
        return ok;
    }
    std::string url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(port_) + path;
    }

    testing::TempDir dir_{"picket-http"};
    std::string tgz_;
    pid_t pid_ = -1;
    int port_ = 0;
};

TEST_F(HttpSource, EtagThenNotModified) {
    SourceSpec spec{"et", url("/f/plain.rules"), {}, ""};
    auto first = fetch_source(spec, {});
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->not_modified);
    EXPECT_EQ(first->bytes, kRule);
    EXPECT_EQ(first->sha256, kRuleSha);
    EXPECT_EQ(first->etag, "\"v1\"");
    EXPECT_EQ(first->last_modified, "Wed, 21 Oct 2015 07:28:00 GMT");
    EXPECT_EQ(first->kind, "rules");
    auto second = fetch_source(spec, {first->etag, first->last_modified, first->sha256});
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_TRUE(second->not_modified);
    EXPECT_EQ(second->bytes, "");
    EXPECT_EQ(second->sha256, kRuleSha);
    EXPECT_EQ(second->etag, "\"v1\"");
    EXPECT_EQ(second->last_modified, "Wed, 21 Oct 2015 07:28:00 GMT");
}

TEST_F(HttpSource, ArchiveViaRedirectAndUserAgent) {
    auto r = fetch_source({"et", url("/redirect"), {}, ""}, {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->bytes, tgz_);
    EXPECT_EQ(r->kind, "tar.gz");
    auto files = extract_rule_files("et", r->bytes, r->kind, "");
    ASSERT_TRUE(files.ok()) << files.status();
    EXPECT_EQ(*files, (std::map<std::string, std::string>{{"emerging-scan.rules", kRule}}));
    auto ua = fetch_source({"ua", url("/ua"), {}, ""}, {});
    ASSERT_TRUE(ua.ok()) << ua.status();
    EXPECT_EQ(ua->bytes, "picket-manager");
}

TEST_F(HttpSource, HttpErrors) {
    auto nf = fetch_source({"s", url("/nothing"), {}, ""}, {});
    EXPECT_EQ(nf.status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(nf.status().message(), "source s: GET " + url("/nothing") + ": HTTP 404");
    auto se = fetch_source({"s", url("/500"), {}, ""}, {});
    EXPECT_EQ(se.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(se.status().message(), "source s: GET " + url("/500") + ": HTTP 500");
    auto loop = fetch_source({"s", url("/loop"), {}, ""}, {});
    EXPECT_EQ(loop.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(loop.status().message(),
              "source s: GET " + url("/loop") + ": Maximum (5) redirects followed");
}

TEST_F(HttpSource, HeadersAreSent) {
    auto denied = fetch_source({"k", url("/keyed"), {}, ""}, {});
    EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(denied.status().message(), "source k: GET " + url("/keyed") + ": HTTP 403");
    auto ok = fetch_source({"k", url("/keyed"), {"X-Key: k"}, ""}, {});
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(ok->bytes, tgz_);
}

TEST_F(HttpSource, Timeout) {
    FetchOptions options;
    options.timeout = 300ms;
    auto r = fetch_source({"slow", url("/slow"), {}, ""}, {}, options);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_TRUE(
        std::string(r.status().message())
            .starts_with("source slow: GET " + url("/slow") + ": Operation timed out after "))
        << r.status();
}

TEST_F(HttpSource, ChecksumUrl) {
    auto md5 = fetch_source({"c", url("/f/rules.tar.gz"), {}, url("/md5/rules.tar.gz")}, {});
    ASSERT_TRUE(md5.ok()) << md5.status();
    EXPECT_EQ(md5->bytes, tgz_);
    auto sha = fetch_source({"c", url("/f/rules.tar.gz"), {}, url("/sha256/rules.tar.gz")}, {});
    ASSERT_TRUE(sha.ok()) << sha.status();
    auto plain = fetch_source({"c", url("/f/plain.rules"), {}, url("/badsum")}, {});
    EXPECT_EQ(plain.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(plain.status().message(), "source c: checksum mismatch: " + url("/badsum") +
                                            " says 0123456789abcdef0123456789abcdef, archive is "
                                            "d80efb49922ceb0e53de5cdf1dbb177c");
}

TEST_F(HttpSource, MaxBytes) {
    FetchOptions options;
    options.max_bytes = 1 << 20;
    auto r = fetch_source({"b", url("/f/big.rules"), {}, ""}, {}, options);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(r.status().message(),
              "source b: GET " + url("/f/big.rules") + ": body exceeds the limit of 1048576 bytes");
}

TEST_F(HttpSource, ConnectionRefusedIsUnavailable) {
    // A port that was free a moment ago: nothing listens there.
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    close(fd);
    const std::string dead = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/x";
    auto r = fetch_source({"down", dead, {}, ""}, {});
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(std::string(r.status().message())
                    .starts_with("source down: GET " + dead + ": Failed to connect to 127.0.0.1"))
        << r.status();
}

}  // namespace
}  // namespace picket::rules
