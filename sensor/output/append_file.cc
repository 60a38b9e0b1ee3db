// AppendFile: the open/close half of the EVE and fast.log writers.
#include "sensor/output/output.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace picket::sensor::output {

AppendFile::AppendFile(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "a");
    if (file_ == nullptr) {
        throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
    }
}

AppendFile::~AppendFile() {
    if (file_ != nullptr) {
        std::fclose(file_);
    }
}

}  // namespace picket::sensor::output
