// Helpers shared by the benchmarks: which rule files a --rules argument names, and the
// process's memory figures from /proc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace picket::bench {

// A directory means every *.rules file in it (sorted); anything else is one file.
inline std::vector<std::string> rule_files(const std::string& path) {
    std::vector<std::string> out;
    if (std::filesystem::is_directory(path)) {
        for (const auto& e : std::filesystem::directory_iterator(path)) {
            if (e.path().extension() == ".rules") {
                out.push_back(e.path().string());
            }
        }
        std::sort(out.begin(), out.end());
    } else {
        out.push_back(path);
    }
    return out;
}

// A field of /proc/self/status in kB ("VmRSS", "VmHWM"); 0 when absent.
inline uint64_t proc_status_kb(const std::string& field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    const std::string key = field + ":";
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) == 0) {
            return std::strtoull(line.c_str() + key.size(), nullptr, 10);
        }
    }
    return 0;
}

}  // namespace picket::bench
