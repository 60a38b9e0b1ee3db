// libFuzzer target for what a rule source's server sends the manager (manager/rules/source.cc):
// extract_rule_files over any bytes as a tar, tar.gz, zip or single rules file (byte 0 picks
// the kind the caller claims: "", "tar.gz", "tar", "zip", "rules"), with small limits so that
// the entry and size checks are reached. Whatever it returns must hold only names without '/'
// that end in ".rules" or are one of the three config files, each within the limits, and no
// more than the limits allow in all. Nothing touches the disk (archives are read from memory).
// Seed corpus: tests/fuzz/corpus/rule_source (corpus/make_rule_source_corpus.py).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "manager/rules/rules.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) {
        return 0;
    }
    static const char* const kKinds[] = {"", "tar.gz", "tar", "zip", "rules"};
    std::string_view kind = kKinds[data[0] % 5];
    std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    picket::rules::ExtractLimits limits;
    limits.max_entries = 64;
    limits.max_file_bytes = 64 << 10;
    limits.max_total_bytes = 256 << 10;
    auto files = picket::rules::extract_rule_files("fuzz", bytes, kind, "fuzz.rules", limits);
    if (!files.ok()) {
        if (files.status().message().rfind("source fuzz", 0) != 0) {
            std::abort();  // every error names the source
        }
        return 0;
    }
    uint64_t total = 0;
    for (const auto& [name, text] : *files) {
        bool config = name == "classification.config" || name == "reference.config" ||
                      name == "threshold.config";
        if (name.empty() || name.find('/') != std::string::npos ||
            (!config && !name.ends_with(".rules")) || text.size() > limits.max_file_bytes) {
            std::abort();
        }
        total += text.size();
    }
    if (files->size() > limits.max_entries || total > limits.max_total_bytes) {
        std::abort();
    }
    return 0;
}
