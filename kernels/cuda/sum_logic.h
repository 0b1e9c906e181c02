// The operands of launch_sum (memory_kernels.cu), checked on the host.
// launch_sum adds its parts in passes of kSumPartsPerPass; every pass after
// the first reads the partial sum back from `out`. So `out` may be the
// first part (each thread reads parts[0][i] before it writes out[i]), or no
// part at all; any other overlap would be overwritten by an earlier pass
// (or read by another thread) before it is added.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/base/error.h"

namespace devmap::cuda {

inline constexpr int kSumPartsPerPass = 16;

// Empty when `out` and `parts` (each `count` floats) follow the rule above;
// otherwise what breaks it.
inline std::string sum_operand_problem(const float* out, std::span<const float* const> parts, int64_t count) {
  if (count <= 0) return {};
  const auto overlaps = [&](const float* a, const float* b) { return a < b + count && b < a + count; };
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!overlaps(out, parts[k])) continue;
    if (k == 0 && out == parts[0]) continue;
    return "launch_sum: the output overlaps part " + std::to_string(k) + " of " + std::to_string(parts.size()) +
           (k == 0 ? " without being it" : "") + "; the output may only be the first part (a caller bug)";
  }
  return {};
}

// Throws devmap::Error (kRuntime) with sum_operand_problem's words.
inline void check_sum_operands(const float* out, std::span<const float* const> parts, int64_t count) {
  const std::string problem = sum_operand_problem(out, parts, count);
  if (!problem.empty()) throw_runtime(problem);
}

}  // namespace devmap::cuda
