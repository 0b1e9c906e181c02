// dense (fully connected) on the CPU. On the AVX-512 path its own GEMMs:
// the forward in dense_gemm_forward (kernels/cpu/dense_gemm.h) with few
// rows a chunk, the gradients in dense_gradient_gemm.h; else sgemm
// (kernels/cpu/blas.h: the forward as kGeneral, the gradients as
// kDenseGradient). Split into column blocks that run on the pool.
#pragma once

#include <cstdint>
#include <string>

#include "core/exec/kernel.h"

namespace devmap::cpu {

// The forward runs in dense_gemm_forward while a library GEMM would have at
// most this many rows (a gradient chunk's, or the whole batch's): with few
// rows the library's packing of the weight costs as much as its arithmetic,
// with many the library is faster (the CNN's fc1 on the Zen 4, one thread,
// GFLOP/s own / OpenBLAS: 32 rows 102 / 75, 64 rows 90 / 71, 1000 rows 91 /
// 99).
inline constexpr int64_t kDenseOwnForwardMaxRows = 64;

// x [N, in], W [units, in], b [units], y [N, units].
// Forward:  y = x W^T + b (dense_gemm_forward adds b last; for sgemm, b is
//           broadcast into y, then one sgemm adds x W^T).
// Backward: dx = dy W (overwritten; skipped when its view is null),
//           dW (+)= dy^T x, db (+)= the column sums of dy, summed over samples
//           in order (overwritten, or added to when accumulate).
// Each GEMM is split into blocks of output columns (units for y and dW, input
// features for dx) fixed by the shape alone; one pool thread computes a
// block, so the bits do not depend on the pool size. The forward and the
// backward take a training batch's gradient chunks at once: the own GEMMs'
// outputs do not depend on the rows beside them (and the weight gradient
// adds the chunks' shares in order), and sgemm runs once per chunk, in the
// blocks a call on that chunk alone would have.
class DenseKernel final : public OpKernel {
 public:
  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  std::string implementation(const Node& node) const override;
  std::string backward_implementation(const Node& node) const override;
  bool forward_handles_gradient_chunks(const Node& node) const override;
  bool backward_handles_gradient_chunks(const Node& node) const override;
};

}  // namespace devmap::cpu
