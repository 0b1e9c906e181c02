// Small helpers shared by the op schema files.
#pragma once

#include <string>

#include "core/base/error.h"
#include "core/graph/op_schema.h"

namespace devmap::ops {

inline void require_rank(const Shape& s, int rank, const char* what) {
  if (s.rank() != rank)
    throw_invalid(std::string(what) + " must have " + std::to_string(rank) + " dimensions per sample, got " +
                  s.to_string());
}

// Output size of a sliding window; throws when the window does not fit.
inline int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, const Shape& input,
                          const char* what) {
  int64_t span = in + 2 * pad - kernel;
  if (span < 0)
    throw_invalid(std::string(what) + " of size " + std::to_string(kernel) + " does not fit input " +
                  input.to_string() + " with padding " + std::to_string(pad));
  return span / stride + 1;
}

}  // namespace devmap::ops
