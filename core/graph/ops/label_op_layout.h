// The workspace of the label-checking ops (softmax_cross_entropy and
// accuracy) as the GPU kernels lay it out (kernels/cuda/loss.cpp): one
// double per sample (the per-sample values the fixed-order batch sum reads),
// then, 64-byte aligned, the bad-sample word of the label check. The op
// schemas plan this figure (core/graph/ops/loss.cpp), so the memory plan counts
// what the GPU kernels use; the CPU kernels use none of it.
#pragma once

#include <cstdint>

#include "core/base/bytes.h"

namespace devmap {

// Offset of the bad-sample word: the per-sample doubles, 64-byte aligned.
inline uint64_t label_op_flag_offset(int64_t batch) {
  return round_up_to_cache_line(static_cast<uint64_t>(batch) * sizeof(double));
}

// The whole workspace: the per-sample doubles and a 64-byte flag block.
inline uint64_t label_op_workspace_bytes(int64_t batch) {
  return label_op_flag_offset(batch) + 64;
}

}  // namespace devmap
