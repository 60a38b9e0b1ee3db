// Minimal thread-safe logging to stderr for setup and control code (never the packet path).
#pragma once

#include <string_view>

namespace picket::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void set_level(Level level);
Level level();
void write(Level level, std::string_view message);

inline void debug(std::string_view m) {
    write(Level::kDebug, m);
}
inline void info(std::string_view m) {
    write(Level::kInfo, m);
}
inline void warning(std::string_view m) {
    write(Level::kWarning, m);
}
inline void error(std::string_view m) {
    write(Level::kError, m);
}

}  // namespace picket::log
