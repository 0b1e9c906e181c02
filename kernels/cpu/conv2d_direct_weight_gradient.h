// The weight gradient of a convolution with few input channels (an image
// network's first layer: 1 or 3 channels), computed directly from x and dy.
// oneDNN's AVX2 weight-gradient kernel pads the input channels to its block
// of 8, so for one channel it does 8x the work (the reference CNN's conv1:
// 8 GFLOP/s on a Zen 3), and im2col + GEMM makes it a GEMM of filters x
// patch outputs over a long inner dimension, which libraries run at a
// third of the peak. The oneDNN algorithm (conv2d_onednn.h) takes its
// weight gradient from here where conv_direct_weight_gradient_runs says.
//
// Every output is one fixed chain of fused multiply-adds, so its bits depend
// on the samples' x and dy alone (not on the threads nor the filters beside
// it):
//   dW[o, c, kh, kw] = sum over samples n and output positions p = (oh, ow)
//     of dy[n, o, p] * x[n, c, oh*S - pad + kh*D, ow*S - pad + kw*D]
// (x zero outside the image; S the stride, D the dilation) in 8 lanes:
// lane l is a chain from zero over the positions p = 8j + l of the
// row-major OH*OW positions, in the order (n, j); past the last position a
// lane multiplies zero by zero. The lanes are then added ((l0 + l4) + (l2 +
// l6)) + ((l1 + l5) + (l3 + l7)), and the sum is added to dW (one rounding)
// when accumulating, else stored. The AVX2 and AVX-512 paths run the same
// 8-lane instructions (the same bits); the baseline path has no FMA and does
// not run it.
#pragma once

#include <cstdint>

#include "core/exec/thread_pool.h"
#include "core/graph/ops/conv2d_cpu_layout.h"

namespace devmap::cpu {

// The most input channels the direct weight gradient takes: below oneDNN's
// AVX2 channel block.
inline constexpr int64_t kDirectWeightGradientMaxChannels = 7;

// Whether conv_direct_weight_gradient takes this convolution on the active
// CPU path: groups 1, at most kDirectWeightGradientMaxChannels input
// channels, on a path with FMA (AVX2 or AVX-512).
bool conv_direct_weight_gradient_runs(const ConvGeometry& g);

// The operands of one weight gradient: x [batch, C, H, W] and dy [batch, O,
// OH, OW], NCHW and dense; dw [O, C, K, K].
struct DirectWeightGradient {
  const ConvGeometry* geometry = nullptr;
  int64_t batch = 0;
  const float* x = nullptr;
  const float* dy = nullptr;
  float* dw = nullptr;
  bool accumulate = false;  // dw += the batch's gradient, else dw = it
};

// Computes the weight gradient above: the samples' columns (im2col.h) made
// a few samples at a time, the filters split over the pool.
// Only where conv_direct_weight_gradient_runs(*op.geometry).
void conv_direct_weight_gradient(ThreadPool* pool, const DirectWeightGradient& op);

}  // namespace devmap::cpu
