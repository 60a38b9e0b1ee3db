// Bundles on disk: verify, write, derive the DetectConfig, remember the last good one.
#include "sensor/agent/agent.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <system_error>

#include <yaml-cpp/yaml.h>

#include "common/bundle/bundle.h"

namespace picket::sensor::agent {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kBundlesDir = "bundles";
constexpr std::string_view kEffectiveDir = "effective";
constexpr std::string_view kCurrentFile = "current";
constexpr std::string_view kClassificationFile = "classification.config";
constexpr std::string_view kReferenceFile = "reference.config";
constexpr std::string_view kAclFile = "acl.rules";  // docs/acl.md

std::string bundle_label(const picket::v1::Bundle& b) {
    return b.manifest().name() + " v" + std::to_string(b.manifest().version());
}

const std::string* find_file(const picket::v1::Bundle& b, std::string_view path) {
    for (const auto& f : b.files()) {
        if (f.path() == path) {
            return &f.content();
        }
    }
    return nullptr;
}

// vars.address-groups / vars.port-groups of config.yaml onto the base configuration, as
// sensor.yaml's are read (scalars only).
absl::Status overlay_vars(const std::string& yaml_text, detect::DetectConfig& config) {
    YAML::Node root;
    try {
        root = YAML::Load(yaml_text);
    } catch (const YAML::Exception& e) {
        return absl::InvalidArgumentError("config.yaml: " + std::string(e.what()));
    }
    if (!root || !root.IsMap() || !root["vars"]) {
        return absl::OkStatus();
    }
    const YAML::Node vars = root["vars"];
    if (!vars.IsMap()) {
        return absl::InvalidArgumentError("config.yaml: vars: expected a map");
    }
    std::vector<std::string> problems;
    for (const char* group : {"address-groups", "port-groups"}) {
        const YAML::Node g = vars[group];
        if (!g) {
            continue;
        }
        if (!g.IsMap()) {
            problems.push_back(std::string("config.yaml: vars.") + group + ": expected a map");
            continue;
        }
        auto& target =
            std::string_view(group) == "address-groups" ? config.address_vars : config.port_vars;
        for (const auto& kv : g) {
            const std::string key = kv.first.Scalar();
            if (!kv.second.IsScalar()) {
                problems.push_back(std::string("config.yaml: vars.") + group + "." + key +
                                   ": expected a single value");
                continue;
            }
            target[key] = kv.second.Scalar();
        }
    }
    if (!problems.empty()) {
        std::string msg;
        for (const auto& p : problems) {
            msg += (msg.empty() ? "" : "\n") + p;
        }
        return absl::InvalidArgumentError(msg);
    }
    return absl::OkStatus();
}

// Writes the bundle into `dir` unless an identical copy is already there.
absl::Status ensure_bundle_dir(const picket::v1::Bundle& bundle, const fs::path& dir) {
    std::error_code ec;
    if (fs::exists(dir, ec)) {
        auto on_disk = bundle::load_bundle_dir(dir);
        if (on_disk.ok() && bundle::bundle_sha256(*on_disk) == bundle::bundle_sha256(bundle)) {
            return absl::OkStatus();
        }
        fs::remove_all(dir, ec);  // damaged copy: rewrite it
    }
    return bundle::write_bundle_dir(bundle, dir);
}

// Over logical lines, as the tuning saw them: a Snort 3 rule spanning lines counts once.
uint32_t count_enabled_rules(const bundle::TuningResult& result) {
    uint32_t n = 0;
    for (const auto& [path, text] : result.rules) {
        for (const auto& rule : bundle::scan_rules(text)) {
            n += rule.enabled ? 1 : 0;
        }
    }
    return n;
}

detect::DetectConfig::FileSyntax file_syntax(bundle::RuleSyntax s) {
    switch (s) {
        case bundle::RuleSyntax::kSuricata:
            return detect::DetectConfig::FileSyntax::kSuricata;
        case bundle::RuleSyntax::kSnort3:
            return detect::DetectConfig::FileSyntax::kSnort3;
        case bundle::RuleSyntax::kAuto:
            break;
    }
    return detect::DetectConfig::FileSyntax::kAuto;
}

// Builds the effective directory and the DetectConfig of an already verified bundle whose
// copy is in `bundle_dir`.
absl::StatusOr<PreparedBundle> derive(const picket::v1::Bundle& bundle, const fs::path& state_dir,
                                      const fs::path& bundle_dir,
                                      const detect::DetectConfig& base) {
    const std::string name = bundle::versioned_dir_name(bundle);
    auto effective = bundle::effective_rules(bundle);
    if (!effective.ok()) {
        return effective.status();
    }
    if (!effective->report.ok()) {
        std::string msg;
        for (const auto& e : effective->report.errors) {
            msg += (msg.empty() ? "tuning.yaml: " : "\ntuning.yaml: ") + e;
        }
        return absl::InvalidArgumentError(msg);
    }
    if (count_enabled_rules(*effective) == 0) {
        return absl::InvalidArgumentError("bundle " + bundle_label(bundle) +
                                          ": no enabled rule in rules/*.rules");
    }
    PreparedBundle out;
    out.warnings = effective->report.warnings;
    detect::DetectConfig& config = out.running.config;
    config = base;
    if (const std::string* yaml = find_file(bundle, bundle::kConfigFile)) {
        if (auto s = overlay_vars(*yaml, config); !s.ok()) {
            return s;
        }
    }
    // The effective directory is derived data: rebuilt on every prepare (deterministic).
    const fs::path edir = state_dir / kEffectiveDir / name;
    std::error_code ec;
    fs::create_directories(edir.parent_path(), ec);
    if (ec) {
        return absl::InternalError("cannot create " + edir.parent_path().string() + ": " +
                                   ec.message());
    }
    fs::remove_all(edir, ec);
    if (auto s = bundle::write_effective_dir(*effective, edir); !s.ok()) {
        return s;
    }
    auto syntax = bundle::rule_syntax_by_file(bundle);
    if (!syntax.ok()) {
        return syntax.status();
    }
    // The bundle's rule-syntax decides for its files; the sensor's own rule-syntax (for its
    // local rule files) does not apply to them.
    config.rule_files.clear();
    config.rule_syntax = detect::DetectConfig::FileSyntax::kAuto;
    config.rule_file_syntax.clear();
    for (const auto& [path, text] : effective->rules) {
        config.rule_files.push_back((edir / path).string());
        auto it = syntax->find(path);
        if (it != syntax->end() && it->second != bundle::RuleSyntax::kAuto) {
            config.rule_file_syntax[config.rule_files.back()] = file_syntax(it->second);
        }
    }
    config.threshold_file = effective->threshold_config.empty()
                                ? std::string()
                                : (edir / bundle::kThresholdFile).string();
    if (find_file(bundle, kClassificationFile) != nullptr) {
        config.classification_file = (bundle_dir / kClassificationFile).string();
    }
    if (find_file(bundle, kReferenceFile) != nullptr) {
        config.reference_file = (bundle_dir / kReferenceFile).string();
    }
    // Like the rules, the ACL is the bundle's: one without acl.rules runs without an ACL (the
    // sensor's own acl-file is part of the local base the bundle replaces). Parsed by the
    // engine when it builds the generation: an error refuses the bundle with its file:line.
    config.acl_file =
        find_file(bundle, kAclFile) != nullptr ? (bundle_dir / kAclFile).string() : std::string();
    out.running.ref = bundle::bundle_ref(bundle);
    return out;
}

absl::Status verify(const picket::v1::Bundle& bundle, const std::string& public_key_pem) {
    bundle::VerifyOptions opts;
    opts.public_key_pem = public_key_pem;
    opts.require_version = true;
    if (auto s = bundle::verify_bundle(bundle, opts); !s.ok()) {
        return s;
    }
    return bundle::check_content(bundle);
}

}  // namespace

absl::StatusOr<PreparedBundle> prepare_bundle(const picket::v1::Bundle& bundle,
                                              const fs::path& state_dir,
                                              const detect::DetectConfig& base,
                                              const std::string& public_key_pem) {
    if (auto s = verify(bundle, public_key_pem); !s.ok()) {
        return s;
    }
    const fs::path bdir = state_dir / kBundlesDir / bundle::versioned_dir_name(bundle);
    std::error_code ec;
    fs::create_directories(bdir.parent_path(), ec);
    if (ec) {
        return absl::InternalError("cannot create " + bdir.parent_path().string() + ": " +
                                   ec.message());
    }
    if (auto s = ensure_bundle_dir(bundle, bdir); !s.ok()) {
        return s;
    }
    return derive(bundle, state_dir, bdir, base);
}

absl::Status record_last_good(const fs::path& state_dir, const picket::v1::BundleRef& ref) {
    // The directory name is rebuilt from the ref exactly as versioned_dir_name does.
    std::string version = std::to_string(ref.version());
    if (version.size() < 12) {
        version.insert(0, 12 - version.size(), '0');
    }
    const std::string name = version + "-" + ref.sha256().substr(0, 12) + "\n";
    const fs::path final_path = state_dir / kCurrentFile;
    const fs::path tmp = state_dir / (std::string(kCurrentFile) + ".tmp");
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return absl::InternalError("cannot write " + tmp.string());
    }
    bool ok = ::write(fd, name.data(), name.size()) == static_cast<ssize_t>(name.size()) &&
              ::fsync(fd) == 0;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), final_path.c_str()) != 0) {
        return absl::InternalError("cannot write " + final_path.string());
    }
    int dfd = ::open(state_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        ::fsync(dfd);
        ::close(dfd);
    }
    return absl::OkStatus();
}

absl::StatusOr<std::optional<RunningBundle>> load_last_good(const fs::path& state_dir,
                                                            const detect::DetectConfig& base,
                                                            const std::string& public_key_pem) {
    const fs::path current = state_dir / kCurrentFile;
    std::ifstream in(current);
    if (!in) {
        return std::optional<RunningBundle>();
    }
    std::string name;
    std::getline(in, name);
    if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') {
        return absl::DataLossError(current.string() + ": not a bundle directory name");
    }
    const fs::path bdir = state_dir / kBundlesDir / name;
    auto loaded = bundle::load_bundle_dir(bdir);
    if (!loaded.ok()) {
        return absl::DataLossError(bdir.string() + ": " + std::string(loaded.status().message()));
    }
    if (auto s = verify(*loaded, public_key_pem); !s.ok()) {
        return absl::DataLossError(bdir.string() + ": " + std::string(s.message()));
    }
    if (bundle::versioned_dir_name(*loaded) != name) {
        return absl::DataLossError(bdir.string() + ": content does not match its name");
    }
    auto prepared = derive(*loaded, state_dir, bdir, base);
    if (!prepared.ok()) {
        return prepared.status();
    }
    return std::optional<RunningBundle>(std::move(prepared->running));
}

}  // namespace picket::sensor::agent
