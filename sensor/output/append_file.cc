// AppendFile: the open/close half of the EVE and fast.log writers.
#include "sensor/output/output.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/log.h"

namespace picket::sensor::output {

AppendFile::AppendFile(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "a");
    if (file_ == nullptr) {
        throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
    }
}

void AppendFile::reopen() {
    std::fflush(file_);
    FILE* f = std::fopen(path_.c_str(), "a");
    if (f == nullptr) {
        log::warning(path_ + ": cannot reopen for writing: " + std::strerror(errno) +
                     "; still writing to the file opened before");
        return;
    }
    std::fclose(file_);
    file_ = f;
}

AppendFile::~AppendFile() {
    if (file_ != nullptr) {
        std::fclose(file_);
    }
}

}  // namespace picket::sensor::output
