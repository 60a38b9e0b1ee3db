// libFuzzer target for a bundle's unpacking on the sensor (sensor/agent/bundle_apply.cc over
// common/bundle): what the manager sends in ApplyBundle is verified, written into the state
// directory (write_bundle_dir), its tuning.yaml / threshold.config / config.yaml vars /
// classification.config / reference.config / acl.rules turned into the DetectConfig, recorded
// as the last good bundle and read back from disk (load_last_good, load_bundle_dir). bundle_fuzz
// covers the manifest and the in-memory checks; this covers the files reaching the disk.
// The state directory lives in a sandbox directory on /dev/shm (tmpfs: fsync is cheap); after
// every input the sandbox must hold nothing but the state directory, whatever the paths said
// ("../x", "/etc/x", "a/../../b", "rules/../../x"), else the harness traps: a path escaped.
// Input: byte 0 bit 0 set: the rest is a serialized picket.v1.Bundle, used as is. Otherwise
// the rest is records [path length: 1][content length: 2 LE][path][content] that become the
// bundle's files (manifest name "fuzz", version 1, file list computed), so that well-formed
// bundles with hostile paths and contents are reached without guessing SHA-256 sums.
// Seed corpus: tests/fuzz/corpus/bundle_archive (make_corpus.sh adds deploy/ bundles).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <google/protobuf/stubs/logging.h>

#include "common/bundle/bundle.h"
#include "sensor/agent/agent.h"

namespace fs = std::filesystem;

namespace {

fs::path sandbox() {
    static const fs::path dir = [] {
        std::error_code ec;
        fs::path base =
            fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
        fs::path d = base / ("picket-bundle-archive-fuzz." + std::to_string(getpid()));
        fs::remove_all(d, ec);
        fs::create_directories(d / "state");
        // At exit, after the static path above may already be destroyed: a copy of our own.
        static char path[4096];
        std::snprintf(path, sizeof(path), "%s", d.c_str());
        std::atexit([] {
            std::error_code e;
            fs::remove_all(fs::path(path), e);
        });
        return d;
    }();
    return dir;
}

// Nothing but sandbox/state may exist in the sandbox; then state is emptied for the next run.
void check_and_reset() {
    const fs::path box = sandbox();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(box, ec)) {
        if (e.path().filename() != "state") {
            std::fprintf(stderr, "bundle_archive_fuzz: escaped the state directory: %s\n",
                         e.path().c_str());
            __builtin_trap();
        }
    }
    for (const auto& e : fs::directory_iterator(box / "state", ec)) {
        fs::remove_all(e.path(), ec);
    }
}

}  // namespace

// Invalid UTF-8 in a string field is a parse failure that libprotobuf also logs, once per
// input: silence it so that the fuzzer's own output stays readable.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    google::protobuf::SetLogHandler(nullptr);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace picket;
    if (size < 1 || size > 200000) {
        return 0;
    }
    bundle::Bundle b;
    if ((data[0] & 1) != 0) {
        if (!b.ParseFromArray(data + 1, static_cast<int>(size - 1))) {
            return 0;
        }
    } else {
        b.mutable_manifest()->set_name("fuzz");
        b.mutable_manifest()->set_version(1);
        size_t pos = 1;
        while (pos + 3 <= size && b.files_size() < 32) {
            const size_t plen = data[pos];
            const size_t clen = static_cast<size_t>(data[pos + 1] | data[pos + 2] << 8);
            pos += 3;
            if (plen > size - pos) {
                break;
            }
            auto* f = b.add_files();
            f->set_path(reinterpret_cast<const char*>(data + pos), plen);
            pos += plen;
            const size_t n = clen < size - pos ? clen : size - pos;
            f->set_content(reinterpret_cast<const char*>(data + pos), n);
            pos += n;
        }
        bundle::update_manifest_files(b);
    }
    const fs::path state = sandbox() / "state";
    sensor::detect::DetectConfig base;
    auto prepared = sensor::agent::prepare_bundle(b, state, base);
    if (prepared.ok()) {
        if (sensor::agent::record_last_good(state, prepared->running.ref).ok()) {
            auto last = sensor::agent::load_last_good(state, base);
            if (!last.ok() || !last->has_value()) {
                std::fprintf(stderr, "bundle_archive_fuzz: a prepared bundle did not load: %s\n",
                             last.ok() ? "none" : std::string(last.status().message()).c_str());
                __builtin_trap();
            }
        }
        // What was written reads back as the same bundle.
        auto again = bundle::load_bundle_dir(state / "bundles" / bundle::versioned_dir_name(b));
        if (!again.ok() || bundle::bundle_sha256(*again) != bundle::bundle_sha256(b)) {
            std::fprintf(
                stderr, "bundle_archive_fuzz: bundle dir does not read back: %s\n",
                again.ok() ? "sha differs" : std::string(again.status().message()).c_str());
            __builtin_trap();
        }
    }
    check_and_reset();
    return 0;
}
