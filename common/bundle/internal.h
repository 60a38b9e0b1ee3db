// Internal to common/bundle (not a public header): splitting rules files into logical lines and
// collecting problems, shared by the manifest, directory, tuning and diff code.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace picket::bundle::internal {

// One logical line of a rules file: physical lines joined where a line ends with '\'
// (Suricata's continuation). [begin, end) covers the original bytes including the line
// terminators, so unchanged lines can be copied verbatim.
struct LogicalLine {
    size_t begin = 0;
    size_t end = 0;
    uint32_t line_no = 0;  // 1-based number of the first physical line
    std::string joined;    // continuations removed, no terminator, no trailing '\r'
};

std::vector<LogicalLine> split_logical_lines(std::string_view text);

// "rules/....rules"
bool is_rules_file(std::string_view path);

// Every problem found in a bundle, so that one error names all of them: the first problem's code
// and the messages one per line.
using Problems = std::vector<std::pair<absl::StatusCode, std::string>>;
void add_problem(Problems& problems, absl::StatusCode code, std::string message);
absl::Status join_problems(const Problems& problems);

}  // namespace picket::bundle::internal
