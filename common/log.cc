#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace picket::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
std::mutex g_mu;
const char* level_name(Level l) {
    switch (l) {
        case Level::kDebug:
            return "debug";
        case Level::kInfo:
            return "info";
        case Level::kWarning:
            return "warning";
        case Level::kError:
            return "error";
    }
    return "?";
}
}  // namespace

void set_level(Level level) {
    g_level.store(level);
}
Level level() {
    return g_level.load();
}

void write(Level level, std::string_view message) {
    if (level < g_level.load()) {
        return;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    std::fprintf(stderr, "picket: %s: %.*s\n", level_name(level), static_cast<int>(message.size()),
                 message.data());
}

}  // namespace picket::log
