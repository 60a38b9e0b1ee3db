// Fuzzes what a bundle's receiver parses from untrusted bytes: the same input is read as a
// serialized picket.v1.Bundle (what SensorLink / PushBundle deliver) and verified, as
// manifest.json text, and as tuning.yaml applied to a small rules file; the diff and content
// check run on the parsed bundle. Nothing may crash, leak or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/bundle/bundle.h"

namespace {

const picket::bundle::Bundle& reference() {
    static const picket::bundle::Bundle b = [] {
        picket::bundle::Bundle r;
        r.mutable_manifest()->set_name("ref");
        r.mutable_manifest()->set_version(1);
        auto* f = r.add_files();
        f->set_path("rules/a.rules");
        f->set_content("alert tcp any any -> any 80 (msg:\"a\"; sid:1; rev:1;)\n");
        auto* c = r.add_files();
        c->set_path("config.yaml");
        c->set_content("a: 1\n");
        picket::bundle::update_manifest_files(r);
        return r;
    }();
    return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace picket::bundle;
    std::string text(reinterpret_cast<const char*>(data), size);

    Bundle bundle;
    if (bundle.ParseFromString(text)) {
        VerifyOptions options;
        options.limits.max_file_bytes = 1 << 16;
        options.limits.max_total_bytes = 1 << 18;
        (void)verify_bundle(bundle, options);
        (void)bundle_sha256(bundle);
        (void)manifest_to_json(bundle);
        if (bundle.files_size() <= 16) {
            (void)check_content(bundle);
            (void)diff_bundles(reference(), bundle);
        }
    }

    bool listed = false;
    auto parsed = manifest_from_json(text, &listed);
    if (parsed.ok()) {
        (void)canonical_manifest(parsed->manifest());
        auto again = manifest_from_json(manifest_to_json(*parsed));
        (void)again;
    }

    auto tuning = parse_tuning(text);
    if (tuning.ok()) {
        std::map<std::string, std::string> rules = {
            {"rules/a.rules",
             "alert tcp any any -> any 80 (msg:\"a\"; sid:1; rev:1;)\n"
             "# alert udp any any -> any 53 (sid:2;)\n"}};
        (void)apply_tuning(rules, *tuning);
    }
    (void)scan_rule(text);
    (void)check_path(text);
    return 0;
}
