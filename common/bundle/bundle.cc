// Bundles in memory: hashing, path rules, the manifest (canonical form and JSON), verification
// and signing. Directories on disk are in dir.cc, the tuning overlay in tuning.cc, diffs in
// diff.cc.
#include "common/bundle/bundle.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <type_traits>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <nlohmann/json.hpp>

#include "common/bundle/internal.h"
#include "common/strings.h"

namespace picket::bundle {
namespace {

constexpr size_t kMaxPathBytes = 255;
constexpr size_t kMaxPathComponents = 8;
constexpr size_t kMaxNameBytes = 64;
constexpr size_t kMaxTextBytes = 4096;
constexpr int kManifestFormat = 1;

// Signatures and hashes are canonical lowercase hex: uppercase digits are refused.
int lower_hex_value(char c) {
    return c >= 'A' && c <= 'F' ? -1 : strings::hex_value(c);
}

std::optional<std::string> hex_decode(std::string_view hex) {
    if (hex.size() % 2 != 0) {
        return std::nullopt;
    }
    std::string out;
    out.reserve(hex.size() / 2);
    for (size_t i = 0; i < hex.size(); i += 2) {
        int hi = lower_hex_value(hex[i]);
        int lo = lower_hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>(hi << 4 | lo));
    }
    return out;
}

bool is_sha256_hex(std::string_view s) {
    return s.size() == 64 &&
           std::all_of(s.begin(), s.end(), [](char c) { return lower_hex_value(c) >= 0; });
}

bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        size_t n = 0;
        uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + n >= s.size()) {
            return false;  // truncated sequence
        }
        for (size_t k = 1; k <= n; ++k) {
            auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) {
                return false;
            }
            cp = cp << 6 | (cc & 0x3F);
        }
        // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
        static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
        if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += n + 1;
    }
    return true;
}

bool valid_name(std::string_view name) {
    return !name.empty() && name.size() <= kMaxNameBytes &&
           std::all_of(name.begin(), name.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
           });
}

struct PkeyFree {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct BioFree {
    void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxFree {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Bio = std::unique_ptr<BIO, BioFree>;
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// Reads a PEM key: private if `want_private`, else a public key or (for convenience) the public
// half of a private key.
absl::StatusOr<Pkey> read_key(std::string_view pem, bool want_private) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    if (!bio) {
        return absl::InternalError("cannot allocate a BIO");
    }
    Pkey key;
    if (want_private) {
        key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    } else {
        key.reset(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
        if (!key) {
            Bio again(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
            key.reset(PEM_read_bio_PrivateKey(again.get(), nullptr, nullptr, nullptr));
        }
    }
    if (!key) {
        return absl::InvalidArgumentError(want_private ? "not a PEM private key"
                                                       : "not a PEM public key");
    }
    if (EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519) {
        return absl::InvalidArgumentError("key is not an Ed25519 key");
    }
    return key;
}

absl::StatusOr<std::string> raw_public_key(EVP_PKEY* key) {
    unsigned char raw[32];
    size_t len = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key, raw, &len) != 1 || len != sizeof raw) {
        return absl::InternalError("cannot read the raw Ed25519 public key");
    }
    return std::string(reinterpret_cast<char*>(raw), len);
}

std::string key_id_of_raw(std::string_view raw) {
    return sha256_hex(raw).substr(0, 16);
}

// An Ed25519 key read from PEM, with its key id.
struct IdentifiedKey {
    Pkey key;
    std::string id;
};

absl::StatusOr<IdentifiedKey> read_identified_key(std::string_view pem, bool want_private) {
    auto key = read_key(pem, want_private);
    if (!key.ok()) {
        return key.status();
    }
    auto raw = raw_public_key(key->get());
    if (!raw.ok()) {
        return raw.status();
    }
    return IdentifiedKey{std::move(*key), key_id_of_raw(*raw)};
}

}  // namespace

namespace internal {

void add_problem(std::vector<std::pair<absl::StatusCode, std::string>>& problems,
                 absl::StatusCode code, std::string message) {
    problems.emplace_back(code, std::move(message));
}

absl::Status join_problems(const std::vector<std::pair<absl::StatusCode, std::string>>& problems) {
    if (problems.empty()) {
        return absl::OkStatus();
    }
    std::vector<std::string> lines;
    lines.reserve(problems.size());
    for (const auto& p : problems) {
        lines.push_back(p.second);
    }
    return absl::Status(problems.front().first, strings::join(lines, "\n"));
}

}  // namespace internal

using internal::add_problem;
using internal::join_problems;

// ---------------------------------------------------------------------------------------
// Hashing, paths, manifest

std::string sha256_hex(std::string_view bytes) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
    return strings::hex_encode(std::string_view(reinterpret_cast<char*>(md), len));
}

absl::Status check_path(std::string_view path) {
    auto bad = [&](std::string_view why) {
        return absl::InvalidArgumentError(strings::cat("path '", path, "': ", why));
    };
    if (path.empty()) {
        return bad("empty");
    }
    if (path.size() > kMaxPathBytes) {
        return bad("longer than 255 bytes");
    }
    if (path.front() == '/') {
        return bad("absolute paths are not allowed");
    }
    if (path == kManifestFile) {
        return bad("manifest.json is reserved for the manifest");
    }
    size_t components = 0;
    size_t start = 0;
    while (start <= path.size()) {
        size_t slash = path.find('/', start);
        std::string_view part = path.substr(
            start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        if (part.empty()) {
            return bad("empty component");
        }
        if (part == "..") {
            return bad("'..' escapes the bundle directory");
        }
        if (part.front() == '.') {
            return bad("components may not start with '.'");
        }
        for (char c : part) {
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-' || c == '+';
            if (!ok) {
                return bad("only [A-Za-z0-9._+-] and '/' are allowed");
            }
        }
        if (++components > kMaxPathComponents) {
            return bad("more than 8 components");
        }
        if (slash == std::string_view::npos) {
            break;
        }
        start = slash + 1;
    }
    return absl::OkStatus();
}

std::string canonical_manifest(const Manifest& m) {
    auto field = [](std::string& out, std::string_view key, std::string_view value) {
        strings::append(out, key, " ", value.size(), ":", value, "\n");
    };
    std::string out = "picket-bundle-manifest/1\n";
    field(out, "name", m.name());
    field(out, "author", m.author());
    field(out, "message", m.message());
    strings::append(out, "created_at ", m.created_at(), "\n");
    std::vector<const picket::v1::FileEntry*> files;
    files.reserve(m.files_size());
    for (const auto& f : m.files()) {
        files.push_back(&f);
    }
    std::sort(files.begin(), files.end(),
              [](const auto* a, const auto* b) { return a->path() < b->path(); });
    strings::append(out, "files ", files.size(), "\n");
    for (const auto* f : files) {
        strings::append(out, "file ", f->path().size(), ":", f->path(), " ", f->sha256(), " ",
                        f->size(), "\n");
    }
    return out;
}

std::string bundle_sha256(const Bundle& bundle) {
    return sha256_hex(canonical_manifest(bundle.manifest()));
}

picket::v1::BundleRef bundle_ref(const Bundle& bundle) {
    picket::v1::BundleRef ref;
    ref.set_name(bundle.manifest().name());
    ref.set_version(bundle.manifest().version());
    ref.set_sha256(bundle_sha256(bundle));
    return ref;
}

std::string manifest_to_json(const Bundle& bundle) {
    const Manifest& m = bundle.manifest();
    nlohmann::ordered_json j;
    j["format"] = kManifestFormat;
    j["name"] = m.name();
    j["version"] = m.version();
    j["parent_version"] = m.parent_version();
    j["author"] = m.author();
    j["message"] = m.message();
    j["created_at"] = m.created_at();
    j["files"] = nlohmann::ordered_json::array();
    for (const auto& f : m.files()) {
        nlohmann::ordered_json e;
        e["path"] = f.path();
        e["sha256"] = f.sha256();
        e["size"] = f.size();
        j["files"].push_back(std::move(e));
    }
    j["signing_key_id"] = bundle.signing_key_id();
    j["signature"] = strings::hex_encode(bundle.signature());
    // Invalid UTF-8 cannot pass verify_bundle; replace rather than throw if it gets here.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

absl::StatusOr<Bundle> manifest_from_json(std::string_view text, bool* files_listed) {
    auto bad = [](std::string_view why) {
        return absl::InvalidArgumentError(strings::cat("manifest.json: ", why));
    };
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception& e) {
        return bad(strings::cat("not valid JSON (", e.what(), ")"));
    }
    if (!j.is_object()) {
        return bad("not a JSON object");
    }
    Bundle bundle;
    Manifest* m = bundle.mutable_manifest();
    // An optional field: absent leaves *out as it is; present, it must be of the wanted type.
    auto get_field = [&](const nlohmann::json& obj, const char* key, auto* out, auto has_type,
                         const char* type_name) -> absl::Status {
        auto it = obj.find(key);
        if (it == obj.end()) {
            return absl::OkStatus();
        }
        if (!has_type(*it)) {
            return bad(strings::cat("'", key, "' must be ", type_name));
        }
        *out = it->template get<std::remove_pointer_t<decltype(out)>>();
        return absl::OkStatus();
    };
    auto get_string = [&](const char* key, std::string* out) {
        return get_field(
            j, key, out, [](const nlohmann::json& v) { return v.is_string(); }, "a string");
    };
    auto get_uint = [&](const nlohmann::json& obj, const char* key, uint64_t* out) {
        return get_field(
            obj, key, out, [](const nlohmann::json& v) { return v.is_number_unsigned(); },
            "a non-negative integer");
    };
    uint64_t format = kManifestFormat;  // absent: a hand-written manifest, current format
    if (auto s = get_uint(j, "format", &format); !s.ok()) {
        return s;
    }
    if (format != static_cast<uint64_t>(kManifestFormat)) {
        return bad(strings::cat("'format' must be ", kManifestFormat, " (got ", format, ")"));
    }
    std::string name, author, message, key_id, signature_hex;
    uint64_t version = 0, parent = 0;
    for (auto s :
         {get_string("name", &name), get_string("author", &author), get_string("message", &message),
          get_string("signing_key_id", &key_id), get_string("signature", &signature_hex),
          get_uint(j, "version", &version), get_uint(j, "parent_version", &parent)}) {
        if (!s.ok()) {
            return s;
        }
    }
    int64_t created_at = 0;
    if (auto it = j.find("created_at"); it != j.end()) {
        if (!it->is_number_integer() ||
            (it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))) {
            return bad("'created_at' must be an integer (Unix ns)");
        }
        created_at = it->get<int64_t>();
    }
    auto signature = hex_decode(signature_hex);
    if (!signature) {
        return bad("'signature' must be lowercase hex");
    }
    m->set_name(name);
    m->set_version(version);
    m->set_parent_version(parent);
    m->set_author(author);
    m->set_message(message);
    m->set_created_at(created_at);
    bundle.set_signature(*signature);
    bundle.set_signing_key_id(key_id);
    auto files = j.find("files");
    if (files_listed != nullptr) {
        *files_listed = files != j.end();
    }
    if (files != j.end()) {
        if (!files->is_array()) {
            return bad("'files' must be an array");
        }
        for (size_t i = 0; i < files->size(); ++i) {
            const auto& e = (*files)[i];
            std::string where = strings::cat("files[", i, "]");
            if (!e.is_object()) {
                return bad(strings::cat(where, " must be an object"));
            }
            auto path = e.find("path");
            auto sha = e.find("sha256");
            if (path == e.end() || !path->is_string()) {
                return bad(strings::cat(where, ": 'path' must be a string"));
            }
            if (sha == e.end() || !sha->is_string()) {
                return bad(strings::cat(where, ": 'sha256' must be a string"));
            }
            uint64_t size = 0;
            if (e.find("size") == e.end()) {
                return bad(strings::cat(where, ": 'size' is missing"));
            }
            if (auto s = get_uint(e, "size", &size); !s.ok()) {
                return bad(strings::cat(where, ": 'size' must be a non-negative integer"));
            }
            auto* f = m->add_files();
            f->set_path(path->get<std::string>());
            f->set_sha256(sha->get<std::string>());
            f->set_size(size);
        }
    }
    return bundle;
}

void update_manifest_files(Bundle& bundle) {
    std::vector<const picket::v1::BundleFile*> files;
    for (const auto& f : bundle.files()) {
        files.push_back(&f);
    }
    std::sort(files.begin(), files.end(),
              [](const auto* a, const auto* b) { return a->path() < b->path(); });
    Manifest* m = bundle.mutable_manifest();
    m->clear_files();
    for (const auto* f : files) {
        auto* e = m->add_files();
        e->set_path(f->path());
        e->set_sha256(sha256_hex(f->content()));
        e->set_size(f->content().size());
    }
}

// ---------------------------------------------------------------------------------------
// Verification and signing

absl::Status verify_bundle(const Bundle& bundle, const VerifyOptions& options) {
    using Code = absl::StatusCode;
    std::vector<std::pair<Code, std::string>> problems;
    const Limits& limits = options.limits;
    if (!bundle.has_manifest()) {
        return absl::InvalidArgumentError("bundle has no manifest");
    }
    const Manifest& m = bundle.manifest();
    if (!valid_name(m.name())) {
        add_problem(problems, Code::kInvalidArgument,
                    strings::cat("manifest: name '", m.name(),
                                 "' must be 1-64 characters of [A-Za-z0-9._-]"));
    }
    for (const auto& [field, value] :
         {std::pair<const char*, const std::string*>{"author", &m.author()},
          {"message", &m.message()}}) {
        if (value->size() > kMaxTextBytes || !valid_utf8(*value)) {
            add_problem(problems, Code::kInvalidArgument,
                        strings::cat("manifest: ", field, " must be valid UTF-8, at most ",
                                     kMaxTextBytes, " bytes"));
        }
    }
    if (options.require_version && m.version() == 0) {
        add_problem(problems, Code::kInvalidArgument, "manifest: version must be > 0");
    }
    if (m.version() > 0 && m.parent_version() >= m.version()) {
        add_problem(problems, Code::kInvalidArgument,
                    strings::cat("manifest: parent_version ", m.parent_version(),
                                 " must be lower than version ", m.version()));
    }
    if (m.created_at() < 0) {
        add_problem(problems, Code::kInvalidArgument, "manifest: created_at is negative");
    }

    if (static_cast<uint64_t>(m.files_size()) > limits.max_files ||
        static_cast<uint64_t>(bundle.files_size()) > limits.max_files) {
        add_problem(problems, Code::kResourceExhausted,
                    strings::cat("bundle has ", std::max(m.files_size(), bundle.files_size()),
                                 " files, over the limit of ", limits.max_files));
        return join_problems(problems);  // do not walk an oversized list
    }
    std::map<std::string_view, const picket::v1::FileEntry*> entries;
    uint64_t total = 0;
    bool has_rules = false;
    for (const auto& e : m.files()) {
        if (auto s = check_path(e.path()); !s.ok()) {
            add_problem(problems, s.code(), strings::cat("manifest: ", s.message()));
            continue;
        }
        if (!entries.emplace(e.path(), &e).second) {
            add_problem(problems, Code::kInvalidArgument,
                        strings::cat("manifest: ", e.path(), ": listed twice"));
        }
        if (!is_sha256_hex(e.sha256())) {
            add_problem(problems, Code::kInvalidArgument,
                        strings::cat("manifest: ", e.path(),
                                     ": sha256 must be 64 lowercase hex characters"));
        }
        if (e.size() > limits.max_file_bytes) {
            add_problem(problems, Code::kResourceExhausted,
                        strings::cat(e.path(), ": ", e.size(), " bytes, over the limit of ",
                                     limits.max_file_bytes));
        }
        // Saturating: sizes come from the wire and may be anything.
        total = e.size() > UINT64_MAX - total ? UINT64_MAX : total + e.size();
        std::string_view p = e.path();
        if (p.starts_with(kRulesDir) && p.ends_with(".rules")) {
            has_rules = true;
        }
    }
    if (total > limits.max_total_bytes) {
        add_problem(problems, Code::kResourceExhausted,
                    strings::cat("bundle files total ", total, " bytes, over the limit of ",
                                 limits.max_total_bytes));
    }
    // "a" and "a/b" cannot both be files: writing one would fail on the other, or, in a tool
    // that unpacks in order, turn a file into a directory under an earlier name.
    for (const auto& [path, e] : entries) {
        for (size_t slash = path.find('/'); slash != std::string_view::npos;
             slash = path.find('/', slash + 1)) {
            if (entries.count(path.substr(0, slash)) != 0) {
                add_problem(problems, Code::kInvalidArgument,
                            strings::cat("manifest: ", path.substr(0, slash),
                                         ": is both a file and a directory (", path, ")"));
            }
        }
    }
    if (!has_rules) {
        add_problem(problems, Code::kInvalidArgument, "bundle has no rules file (rules/*.rules)");
    }

    std::set<std::string_view> seen;
    for (const auto& f : bundle.files()) {
        if (auto s = check_path(f.path()); !s.ok()) {
            add_problem(problems, s.code(), std::string(s.message()));
            continue;
        }
        if (!seen.insert(f.path()).second) {
            add_problem(problems, Code::kInvalidArgument,
                        strings::cat(f.path(), ": file present twice"));
            continue;
        }
        auto it = entries.find(f.path());
        if (it == entries.end()) {
            add_problem(problems, Code::kDataLoss,
                        strings::cat(f.path(), ": file not listed in the manifest"));
            continue;
        }
        if (f.content().size() != it->second->size()) {
            add_problem(problems, Code::kDataLoss,
                        strings::cat(f.path(), ": size ", f.content().size(),
                                     " does not match the manifest (", it->second->size(), ")"));
            continue;
        }
        std::string sha = sha256_hex(f.content());
        if (sha != it->second->sha256()) {
            add_problem(problems, Code::kDataLoss,
                        strings::cat(f.path(), ": sha256 ", sha, " does not match the manifest (",
                                     it->second->sha256(), ")"));
        }
    }
    for (const auto& [path, e] : entries) {
        if (!seen.count(path)) {
            add_problem(problems, Code::kDataLoss,
                        strings::cat(path, ": listed in the manifest but missing"));
        }
    }

    if (problems.empty()) {
        // Counted only on intact content (the sizes were bounded above).
        uint64_t rules = count_rules(bundle);
        if (rules > limits.max_rules) {
            add_problem(
                problems, Code::kResourceExhausted,
                strings::cat("bundle has ", rules, " rules, over the limit of ", limits.max_rules));
        }
    }

    // The shape of a signature whether or not a key is configured to check it: a manager without
    // a key must not store (and hand to sensors that have one) a signature no key can match.
    const std::string& sig = bundle.signature();
    const std::string& kid = bundle.signing_key_id();
    if (!sig.empty() && sig.size() != 64) {
        add_problem(problems, Code::kInvalidArgument,
                    strings::cat("signature: ", sig.size(), " bytes, an Ed25519 signature has 64"));
    }
    if (!kid.empty() && (kid.size() != 16 || !std::all_of(kid.begin(), kid.end(), [](char c) {
                             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                         }))) {
        add_problem(
            problems, Code::kInvalidArgument,
            strings::cat("signing_key_id '", kid, "': 16 lowercase hex characters expected"));
    }
    if (sig.empty() != kid.empty()) {
        add_problem(problems, Code::kInvalidArgument,
                    sig.empty() ? "signing_key_id without a signature"
                                : "signature without a signing_key_id");
    }

    if (!options.public_key_pem.empty()) {
        auto key = read_key(options.public_key_pem, false);
        if (!key.ok()) {
            add_problem(problems, Code::kFailedPrecondition,
                        strings::cat("configured public key: ", key.status().message()));
            return join_problems(problems);
        }
        auto raw = raw_public_key(key->get());
        std::string expected_id = raw.ok() ? key_id_of_raw(*raw) : "";
        if (bundle.signature().empty()) {
            add_problem(problems, Code::kPermissionDenied,
                        strings::cat("bundle is unsigned; a signature by key ", expected_id,
                                     " is required"));
        } else if (bundle.signing_key_id() != expected_id) {
            add_problem(problems, Code::kPermissionDenied,
                        strings::cat("bundle is signed by key '", bundle.signing_key_id(),
                                     "', expected key ", expected_id));
        } else {
            std::string data = canonical_manifest(m);
            MdCtx ctx(EVP_MD_CTX_new());
            bool ok =
                ctx && bundle.signature().size() == 64 &&
                EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key->get()) == 1 &&
                EVP_DigestVerify(
                    ctx.get(), reinterpret_cast<const unsigned char*>(bundle.signature().data()),
                    bundle.signature().size(), reinterpret_cast<const unsigned char*>(data.data()),
                    data.size()) == 1;
            if (!ok) {
                add_problem(problems, Code::kPermissionDenied,
                            strings::cat("bad signature: the manifest was not signed by key ",
                                         expected_id, " or was altered after signing"));
            }
        }
    }
    return join_problems(problems);
}

absl::StatusOr<KeyPair> generate_key_pair() {
    Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
    if (!key) {
        return absl::InternalError("Ed25519 key generation failed");
    }
    KeyPair pair;
    for (bool priv : {true, false}) {
        Bio bio(BIO_new(BIO_s_mem()));
        int ok = priv ? PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                                 nullptr)
                      : PEM_write_bio_PUBKEY(bio.get(), key.get());
        if (ok != 1) {
            return absl::InternalError("PEM encoding failed");
        }
        char* data = nullptr;
        long len = BIO_get_mem_data(bio.get(), &data);
        (priv ? pair.private_pem : pair.public_pem).assign(data, static_cast<size_t>(len));
    }
    return pair;
}

absl::StatusOr<std::string> key_id(std::string_view pem) {
    auto key = read_identified_key(pem, false);
    if (!key.ok()) {
        return key.status();
    }
    return key->id;
}

absl::Status sign_bundle(Bundle& bundle, std::string_view private_key_pem) {
    auto key = read_identified_key(private_key_pem, true);
    if (!key.ok()) {
        return key.status();
    }
    std::string data = canonical_manifest(bundle.manifest());
    MdCtx ctx(EVP_MD_CTX_new());
    unsigned char sig[64];
    size_t sig_len = sizeof sig;
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key->key.get()) != 1 ||
        EVP_DigestSign(ctx.get(), sig, &sig_len,
                       reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1) {
        return absl::InternalError("Ed25519 signing failed");
    }
    bundle.set_signature(std::string(reinterpret_cast<char*>(sig), sig_len));
    bundle.set_signing_key_id(key->id);
    return absl::OkStatus();
}

std::string RuleId::to_string() const {
    return strings::cat(gid, ":", sid);
}

}  // namespace picket::bundle
