#include "common/bundle/bundle.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "absl/strings/match.h"
#include "tests/common/bundle/bundle_fixture.h"

namespace picket::bundle {
namespace {

namespace fs = std::filesystem;
using google::protobuf::util::MessageDifferencer;

using testing::add_file;
using testing::read;
using testing::TempDir;
using testing::write;

constexpr const char* kTempPrefix = "bundle_test";

// A small valid bundle, version 7.
Bundle sample() {
    Bundle b;
    auto* m = b.mutable_manifest();
    m->set_name("et-open");
    m->set_version(7);
    m->set_parent_version(6);
    m->set_author("alice");
    m->set_message("weekly update");
    m->set_created_at(1700000000123456789);
    add_file(b, "rules/a.rules", "alert tcp any any -> any 80 (msg:\"a\"; sid:1; rev:1;)\n");
    add_file(b, "config.yaml", "stats:\n  interval: 10\n");
    update_manifest_files(b);
    return b;
}

TEST(Sha256, KnownVectors) {
    EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Manifest, CanonicalFormIsExactAndSortsFiles) {
    Bundle b;
    auto* m = b.mutable_manifest();
    m->set_name("n");
    m->set_version(3);  // not part of the canonical form
    m->set_author("a b");
    m->set_message("line1\nline2");
    m->set_created_at(42);
    auto* f2 = m->add_files();
    f2->set_path("rules/z.rules");
    f2->set_sha256(std::string(64, 'b'));
    f2->set_size(5);
    auto* f1 = m->add_files();
    f1->set_path("config.yaml");
    f1->set_sha256(std::string(64, 'a'));
    f1->set_size(0);
    EXPECT_EQ(canonical_manifest(*m),
              "picket-bundle-manifest/1\n"
              "name 1:n\n"
              "author 3:a b\n"
              "message 11:line1\nline2\n"
              "created_at 42\n"
              "files 2\n"
              "file 11:config.yaml " +
                  std::string(64, 'a') +
                  " 0\n"
                  "file 13:rules/z.rules " +
                  std::string(64, 'b') + " 5\n");
    Bundle other = b;
    other.mutable_manifest()->set_version(9);
    other.mutable_manifest()->set_parent_version(8);
    EXPECT_EQ(bundle_sha256(b), bundle_sha256(other));
    other.mutable_manifest()->set_message("changed");
    EXPECT_NE(bundle_sha256(b), bundle_sha256(other));
}

TEST(Manifest, JsonRoundTrip) {
    Bundle b = sample();
    b.set_signature(std::string("\x01\xff", 2));
    b.set_signing_key_id("0123456789abcdef");
    bool listed = false;
    auto parsed = manifest_from_json(manifest_to_json(b), &listed);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(listed);
    Bundle expected = b;
    expected.clear_files();
    EXPECT_TRUE(MessageDifferencer::Equals(*parsed, expected)) << parsed->DebugString();
}

TEST(Manifest, CorruptOrTruncatedManifestIsRefused) {
    std::string json = manifest_to_json(sample());
    auto truncated = manifest_from_json(json.substr(0, json.rfind('}')));  // last brace cut
    EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(truncated.status().message(), "manifest.json: not valid JSON ("))
        << truncated.status();
    EXPECT_NE(truncated.status().message().find("unexpected end of input"), std::string::npos)
        << truncated.status();

    EXPECT_EQ(manifest_from_json("[1, 2]").status().message(), "manifest.json: not a JSON object");
    EXPECT_EQ(manifest_from_json(R"({"name": "x", "version": -1})").status().message(),
              "manifest.json: 'version' must be a non-negative integer");
    EXPECT_EQ(manifest_from_json(R"({"name": 5})").status().message(),
              "manifest.json: 'name' must be a string");
    EXPECT_EQ(manifest_from_json(R"({"format": 2})").status().message(),
              "manifest.json: 'format' must be 1 (got 2)");
    EXPECT_EQ(manifest_from_json(R"({"files": [{"path": "a", "size": 1}]})").status().message(),
              "manifest.json: files[0]: 'sha256' must be a string");
    EXPECT_EQ(
        manifest_from_json(R"({"files": [{"path": "a", "sha256": "00"}]})").status().message(),
        "manifest.json: files[0]: 'size' is missing");
    EXPECT_EQ(manifest_from_json(R"({"signature": "XYZ"})").status().message(),
              "manifest.json: 'signature' must be lowercase hex");
}

TEST(Paths, EscapesAndOddNamesAreRefused) {
    EXPECT_TRUE(check_path("rules/emerging-dns.rules").ok());
    EXPECT_TRUE(check_path("config.yaml").ok());
    EXPECT_EQ(check_path("../x").message(), "path '../x': '..' escapes the bundle directory");
    EXPECT_EQ(check_path("rules/../../x").message(),
              "path 'rules/../../x': '..' escapes the bundle directory");
    EXPECT_EQ(check_path("/etc/passwd").message(),
              "path '/etc/passwd': absolute paths are not allowed");
    EXPECT_EQ(check_path("a//b").message(), "path 'a//b': empty component");
    EXPECT_EQ(check_path("rules/").message(), "path 'rules/': empty component");
    EXPECT_EQ(check_path(".hidden").message(), "path '.hidden': components may not start with '.'");
    EXPECT_EQ(check_path("a\\b").message(),
              "path 'a\\b': only [A-Za-z0-9._+-] and '/' are allowed");
    EXPECT_EQ(check_path("manifest.json").message(),
              "path 'manifest.json': manifest.json is reserved for the manifest");
    EXPECT_EQ(check_path("").message(), "path '': empty");
    EXPECT_EQ(check_path("a/b/c/d/e/f/g/h/i").message(),
              "path 'a/b/c/d/e/f/g/h/i': more than 8 components");
}

TEST(Directory, RoundTripIsByteIdentical) {
    TempDir tmp(kTempPrefix);
    fs::path src = tmp.path() / "src";
    const std::map<std::string, std::string> files = {
        {"rules/a.rules", "alert tcp any any -> any 80 (msg:\"a\"; sid:1; rev:1;)\r\n"},
        {"rules/b.rules", "# alert udp any any -> any 53 (msg:\"b\"; sid:2;)\nno newline"},
        {"config.yaml", "vars:\n  address-groups:\n    HOME_NET: \"[10.0.0.0/8]\"\n"},
        {"tuning.yaml", "disable: [2]\n"},
        {"threshold.config", "suppress gen_id 1, sig_id 1\n"},
        {"empty.txt", ""},
    };
    for (const auto& [path, content] : files) {
        write(src / path, content);
    }
    write(src / ".git" / "HEAD", "ignored\n");  // hidden entries are not part of a bundle

    auto loaded = load_bundle_dir(src);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(loaded->manifest().name(), "src");  // no manifest.json: named after the directory
    EXPECT_EQ(loaded->manifest().version(), 0u);
    ASSERT_EQ(loaded->files_size(), 6);
    EXPECT_EQ(loaded->manifest().files(0).path(), "config.yaml");
    EXPECT_EQ(loaded->manifest().files(1).path(), "empty.txt");
    EXPECT_EQ(loaded->manifest().files(1).sha256(), sha256_hex(""));
    EXPECT_EQ(loaded->manifest().files(1).size(), 0u);
    EXPECT_EQ(loaded->manifest().files(2).path(), "rules/a.rules");
    EXPECT_EQ(loaded->manifest().files(5).path(), "tuning.yaml");

    // Give it a manifest.json, as a stored bundle has, and load again.
    auto* m = loaded->mutable_manifest();
    m->set_name("site-a");
    m->set_version(12);
    m->set_parent_version(11);
    m->set_author("bob");
    m->set_message("tune dns");
    m->set_created_at(1700000000000000001);
    write(src / "manifest.json", manifest_to_json(*loaded));
    auto again = load_bundle_dir(src);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(MessageDifferencer::Equals(*again, *loaded));

    fs::path out = tmp.path() / versioned_dir_name(*again);
    ASSERT_TRUE(write_bundle_dir(*again, out).ok());
    EXPECT_FALSE(fs::exists(fs::path(out.string() + ".tmp")));
    size_t count = 0;
    for (const auto& e : fs::recursive_directory_iterator(out)) {
        if (e.is_regular_file()) {
            ++count;
            std::string rel = e.path().lexically_relative(out).generic_string();
            EXPECT_EQ(read(e.path()), read(src / rel)) << rel;
        }
    }
    EXPECT_EQ(count, 7u);  // six files + manifest.json
    auto reloaded = load_bundle_dir(out);
    ASSERT_TRUE(reloaded.ok()) << reloaded.status();
    EXPECT_TRUE(MessageDifferencer::Equals(*reloaded, *loaded));

    // A new versioned directory only: an existing one is never overwritten.
    EXPECT_EQ(write_bundle_dir(*again, out).code(), absl::StatusCode::kAlreadyExists);
}

TEST(Directory, LeftoverTmpIsReplaced) {
    TempDir tmp(kTempPrefix);
    fs::path out = tmp.path() / "v1";
    write(tmp.path() / "v1.tmp" / "junk", "x");
    Bundle b = sample();
    ASSERT_TRUE(write_bundle_dir(b, out).ok());
    EXPECT_FALSE(fs::exists(out / "junk"));
    EXPECT_FALSE(fs::exists(tmp.path() / "v1.tmp"));
    EXPECT_EQ(read(out / "config.yaml"), "stats:\n  interval: 10\n");
}

TEST(Directory, VersionedDirName) {
    Bundle b = sample();
    EXPECT_EQ(versioned_dir_name(b), "000000000007-" + bundle_sha256(b).substr(0, 12));
}

TEST(Directory, ManifestListingMustMatchTheDirectory) {
    TempDir tmp(kTempPrefix);
    fs::path dir = tmp.path() / "b";
    Bundle b = sample();
    ASSERT_TRUE(write_bundle_dir(b, dir).ok());

    write(dir / "rules" / "a.rules", "alert tcp any any -> any 81 (sid:1;)\n");  // tampered
    write(dir / "rules" / "extra.rules", "\n");
    fs::remove(dir / "config.yaml");
    auto loaded = load_bundle_dir(dir);
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(loaded.status().message(),
              "config.yaml: listed in manifest.json but missing\n"
              "rules/a.rules: sha256 " +
                  sha256_hex("alert tcp any any -> any 81 (sid:1;)\n") +
                  " does not match manifest.json (" + b.manifest().files(1).sha256() +
                  ")\n"
                  "rules/extra.rules: not listed in manifest.json");
}

TEST(Directory, CorruptManifestFileIsRefused) {
    TempDir tmp(kTempPrefix);
    fs::path dir = tmp.path() / "b";
    ASSERT_TRUE(write_bundle_dir(sample(), dir).ok());
    std::string json = read(dir / "manifest.json");
    write(dir / "manifest.json", json.substr(0, 40));
    auto loaded = load_bundle_dir(dir);
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StartsWith(loaded.status().message(), "manifest.json: not valid JSON"))
        << loaded.status();
}

TEST(Directory, SymlinkOutOfTheDirectoryIsRefused) {
    TempDir tmp(kTempPrefix);
    fs::path dir = tmp.path() / "b";
    write(dir / "rules" / "a.rules", "alert ip any any -> any any (sid:1;)\n");
    write(tmp.path() / "secret", "outside\n");
    fs::create_symlink(tmp.path() / "secret", dir / "rules" / "b.rules");
    auto loaded = load_bundle_dir(dir);
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(loaded.status().message(),
              "rules/b.rules: symlink points outside the bundle directory (" +
                  fs::canonical(tmp.path() / "secret").string() + ")");

    fs::remove(dir / "rules" / "b.rules");
    fs::create_symlink("../../secret", dir / "rules" / "c.rules");  // relative, same escape
    EXPECT_EQ(load_bundle_dir(dir).status().code(), absl::StatusCode::kInvalidArgument);

    // A symlink that stays inside is read through.
    fs::remove(dir / "rules" / "c.rules");
    fs::create_symlink("a.rules", dir / "rules" / "d.rules");
    auto inside = load_bundle_dir(dir);
    ASSERT_TRUE(inside.ok()) << inside.status();
    ASSERT_EQ(inside->files_size(), 2);
    EXPECT_EQ(inside->files(1).path(), "rules/d.rules");
    EXPECT_EQ(inside->files(1).content(), "alert ip any any -> any any (sid:1;)\n");
}

TEST(Directory, BadFileNameIsRefusedNamingIt) {
    TempDir tmp(kTempPrefix);
    fs::path dir = tmp.path() / "b";
    write(dir / "rules" / "my rules.rules", "x\n");
    EXPECT_EQ(load_bundle_dir(dir).status().message(),
              "path 'rules/my rules.rules': only [A-Za-z0-9._+-] and '/' are allowed");
}

TEST(Directory, LimitsApplyWhileLoading) {
    TempDir tmp(kTempPrefix);
    fs::path dir = tmp.path() / "b";
    write(dir / "rules" / "a.rules", std::string(100, 'x'));
    write(dir / "rules" / "b.rules", std::string(100, 'y'));
    Limits small;
    small.max_file_bytes = 99;
    EXPECT_EQ(load_bundle_dir(dir, small).status().message(),
              "rules/a.rules: 100 bytes, over the limit of 99");
    Limits few;
    few.max_files = 1;
    EXPECT_EQ(load_bundle_dir(dir, few).status().code(), absl::StatusCode::kResourceExhausted);
    Limits total;
    total.max_total_bytes = 150;
    EXPECT_EQ(load_bundle_dir(dir, total).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(Directory, WriteRefusesPathsThatEscape) {
    TempDir tmp(kTempPrefix);
    for (const std::string bad : {"../escaped", "/tmp/abs", "rules/../../escaped"}) {
        Bundle b = sample();
        add_file(b, bad, "x");
        update_manifest_files(b);
        fs::path out = tmp.path() / "d" / "v1";
        absl::Status s = write_bundle_dir(b, out);
        EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
        EXPECT_NE(s.message().find("path '" + bad + "'"), std::string::npos) << s;
        EXPECT_FALSE(fs::exists(out));
        EXPECT_FALSE(fs::exists(tmp.path() / "escaped"));
        EXPECT_FALSE(fs::exists(tmp.path() / "d" / "escaped"));
    }
}

TEST(Verify, ValidBundlePasses) {
    EXPECT_TRUE(verify_bundle(sample()).ok());
}

TEST(Verify, HashMismatchNamesTheFile) {
    Bundle b = sample();
    b.mutable_files(0)->set_content("alert tcp any any -> any 80 (msg:\"A\"; sid:1; rev:1;)\n");
    absl::Status s = verify_bundle(b);
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(s.message(), "rules/a.rules: sha256 " + sha256_hex(b.files(0).content()) +
                               " does not match the manifest (" + b.manifest().files(1).sha256() +
                               ")");

    Bundle truncated = sample();
    truncated.mutable_files(0)->set_content("alert");
    EXPECT_EQ(verify_bundle(truncated).message(),
              "rules/a.rules: size 5 does not match the manifest (53)");
}

TEST(Verify, MissingAndExtraFiles) {
    Bundle missing = sample();
    missing.mutable_files()->RemoveLast();  // config.yaml
    EXPECT_EQ(verify_bundle(missing).code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(verify_bundle(missing).message(), "config.yaml: listed in the manifest but missing");

    Bundle extra = sample();
    add_file(extra, "rules/extra.rules", "");
    EXPECT_EQ(verify_bundle(extra).message(), "rules/extra.rules: file not listed in the manifest");

    Bundle twice = sample();
    add_file(twice, "config.yaml", "stats:\n  interval: 10\n");
    EXPECT_EQ(verify_bundle(twice).message(), "config.yaml: file present twice");
}

TEST(Verify, ManifestSanity) {
    Bundle b = sample();
    b.mutable_manifest()->set_name("");
    b.mutable_manifest()->set_version(0);
    EXPECT_EQ(verify_bundle(b).message(),
              "manifest: name '' must be 1-64 characters of [A-Za-z0-9._-]\n"
              "manifest: version must be > 0");
    VerifyOptions push;
    push.require_version = false;
    b.mutable_manifest()->set_name("ok");
    EXPECT_TRUE(verify_bundle(b, push).ok());

    Bundle parent = sample();
    parent.mutable_manifest()->set_parent_version(7);
    EXPECT_EQ(verify_bundle(parent).message(),
              "manifest: parent_version 7 must be lower than version 7");

    Bundle no_rules = sample();
    no_rules.mutable_files()->DeleteSubrange(0, 1);
    update_manifest_files(no_rules);
    EXPECT_EQ(verify_bundle(no_rules).message(), "bundle has no rules file (rules/*.rules)");

    Bundle bad_utf8 = sample();
    bad_utf8.mutable_manifest()->set_author("\xc3\x28");
    EXPECT_EQ(verify_bundle(bad_utf8).message(),
              "manifest: author must be valid UTF-8, at most 4096 bytes");

    Bundle bad_sha = sample();
    bad_sha.mutable_manifest()->mutable_files(0)->set_sha256("ABC");
    EXPECT_EQ(verify_bundle(bad_sha).message(),
              "manifest: config.yaml: sha256 must be 64 lowercase hex characters\n"
              "config.yaml: sha256 " +
                  sha256_hex("stats:\n  interval: 10\n") + " does not match the manifest (ABC)");

    Bundle none;
    EXPECT_EQ(verify_bundle(none).message(), "bundle has no manifest");
}

TEST(Verify, Limits) {
    Bundle b = sample();
    VerifyOptions o;
    o.limits.max_file_bytes = 30;
    EXPECT_EQ(verify_bundle(b, o).code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(verify_bundle(b, o).message(), "rules/a.rules: 53 bytes, over the limit of 30");
    VerifyOptions files;
    files.limits.max_files = 1;
    EXPECT_EQ(verify_bundle(b, files).message(), "bundle has 2 files, over the limit of 1");
    VerifyOptions total;
    total.limits.max_total_bytes = 60;
    EXPECT_EQ(verify_bundle(b, total).message(),
              "bundle files total 75 bytes, over the limit of 60");
}

TEST(Signature, SignedBundleVerifies) {
    auto keys = generate_key_pair();
    ASSERT_TRUE(keys.ok()) << keys.status();
    EXPECT_TRUE(keys->private_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    EXPECT_TRUE(keys->public_pem.starts_with("-----BEGIN PUBLIC KEY-----"));
    Bundle b = sample();
    b.mutable_manifest()->set_version(0);  // signed by the author before the push
    b.mutable_manifest()->set_parent_version(0);
    ASSERT_TRUE(sign_bundle(b, keys->private_pem).ok());
    EXPECT_EQ(b.signature().size(), 64u);
    EXPECT_EQ(b.signing_key_id(), *key_id(keys->public_pem));
    EXPECT_EQ(*key_id(keys->private_pem), *key_id(keys->public_pem));
    EXPECT_EQ(b.signing_key_id().size(), 16u);

    // The manager assigns the version afterwards: the signature still holds.
    b.mutable_manifest()->set_version(8);
    b.mutable_manifest()->set_parent_version(7);
    VerifyOptions o;
    o.public_key_pem = keys->public_pem;
    EXPECT_TRUE(verify_bundle(b, o).ok()) << verify_bundle(b, o);

    // ... and survives manifest.json on disk.
    TempDir tmp(kTempPrefix);
    ASSERT_TRUE(write_bundle_dir(b, tmp.path() / "v8").ok());
    auto loaded = load_bundle_dir(tmp.path() / "v8");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_TRUE(verify_bundle(*loaded, o).ok());
}

TEST(Signature, UnsignedRefusedWhenKeyConfigured) {
    auto keys = generate_key_pair();
    ASSERT_TRUE(keys.ok());
    VerifyOptions o;
    o.public_key_pem = keys->public_pem;
    absl::Status s = verify_bundle(sample(), o);
    EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(s.message(), "bundle is unsigned; a signature by key " + *key_id(keys->public_pem) +
                               " is required");
    EXPECT_TRUE(verify_bundle(sample()).ok());  // no key configured: not checked
}

TEST(Signature, TamperedManifestRefused) {
    auto keys = generate_key_pair();
    ASSERT_TRUE(keys.ok());
    Bundle b = sample();
    ASSERT_TRUE(sign_bundle(b, keys->private_pem).ok());
    VerifyOptions o;
    o.public_key_pem = keys->public_pem;
    std::string bad = "bad signature: the manifest was not signed by key " +
                      *key_id(keys->public_pem) + " or was altered after signing";

    Bundle message = b;
    message.mutable_manifest()->set_message("something else");
    EXPECT_EQ(verify_bundle(message, o).code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(verify_bundle(message, o).message(), bad);

    // Swapping a file and its manifest hash together is caught by the signature.
    Bundle swapped = b;
    swapped.mutable_files(0)->set_content("alert ip any any -> any any (sid:1;)\n");
    update_manifest_files(swapped);
    EXPECT_EQ(verify_bundle(swapped, o).message(), bad);

    Bundle flipped = b;
    std::string s = flipped.signature();
    s[0] = static_cast<char>(s[0] ^ 1);
    flipped.set_signature(s);
    EXPECT_EQ(verify_bundle(flipped, o).message(), bad);
}

TEST(Signature, WrongKeyRefused) {
    auto signer = generate_key_pair();
    auto trusted = generate_key_pair();
    ASSERT_TRUE(signer.ok() && trusted.ok());
    Bundle b = sample();
    ASSERT_TRUE(sign_bundle(b, signer->private_pem).ok());
    VerifyOptions o;
    o.public_key_pem = trusted->public_pem;
    EXPECT_EQ(verify_bundle(b, o).message(), "bundle is signed by key '" +
                                                 *key_id(signer->public_pem) + "', expected key " +
                                                 *key_id(trusted->public_pem));
    // Claiming the trusted key id does not help.
    b.set_signing_key_id(*key_id(trusted->public_pem));
    EXPECT_EQ(verify_bundle(b, o).code(), absl::StatusCode::kPermissionDenied);
    EXPECT_EQ(verify_bundle(b, o).message().substr(0, 14), "bad signature:");
}

TEST(Signature, BadKeys) {
    Bundle b = sample();
    EXPECT_EQ(sign_bundle(b, "not a key").message(), "not a PEM private key");
    VerifyOptions o;
    o.public_key_pem = "garbage";
    EXPECT_EQ(verify_bundle(b, o).message(), "configured public key: not a PEM public key");
    EXPECT_EQ(verify_bundle(b, o).code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace picket::bundle
