// Early-return macros for absl::Status / absl::StatusOr code in manager/ (header-only; no
// dependency beyond Abseil's status types).
//   ASSIGN_OR_RETURN(T v, expr);  // expr is a StatusOr<T>: its error is returned
//   RETURN_IF_ERROR(expr);        // expr is a Status: its error is returned
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define PK_ASSIGN_OR_RETURN_IMPL(var, tmp, expr) \
    auto tmp = (expr);                           \
    if (!tmp.ok()) {                             \
        return tmp.status();                     \
    }                                            \
    var = std::move(*tmp)
#define PK_CONCAT2(a, b) a##b
#define PK_CONCAT(a, b) PK_CONCAT2(a, b)
#define ASSIGN_OR_RETURN(var, expr) \
    PK_ASSIGN_OR_RETURN_IMPL(var, PK_CONCAT(status_or_, __LINE__), expr)
#define RETURN_IF_ERROR(expr)          \
    do {                               \
        absl::Status status_ = (expr); \
        if (!status_.ok()) {           \
            return status_;            \
        }                              \
    } while (0)
