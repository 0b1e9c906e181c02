// conv2d by Winograd F(4x4, KxK) on the CPU (stride 1, kernel 3 to 5,
// padding below the kernel): tiles transformed eight at a time, one
// single-threaded OpenBLAS sgemm per transformed-domain point, lanes of
// consecutive samples on the pool as in the GEMM path (conv2d.h).
#pragma once

#include <cstdint>

#include "core/exec/thread_pool.h"
#include "core/graph/ops/conv2d_cpu_layout.h"
#include "kernels/cpu/winograd.h"

namespace devmap::cpu {

// The workspace is laid out as WinogradConvLayout says: the transformed
// weights, then one block per lane. Per group of samples of a lane:
//   forward:  V = BT x BT^T of each input tile (the tile of 4x4 outputs
//             reads (3+K)x(3+K) inputs); per point xi of the alpha^2:
//             M[xi] [O, tiles] = U[xi] [O, C] * V[xi] [C, tiles]; y = AT M AT^T
//             (+ bias), cropped to the output.
//   dW:       with F(K, 4): V as above, D = G dy G^T of each 4x4 tile of dy;
//             dW~_lane[xi] (+)= D[xi] [O, tiles] * V[xi]^T; after every lane,
//             dW [+]= AT (dW~_0 + dW~_1 + ...) AT^T, the lanes added in order.
//   dx:       the forward pass over dy with the weights flipped and their
//             channels swapped, padding K-1-P.
// Every GEMM runs on one thread and every sum has a fixed order, so the
// result bits depend on the inputs, the batch and the lane count, never on
// the pool size.
class WinogradConv {
 public:
  explicit WinogradConv(const ConvGeometry& g);

  // relu_output: y = max(conv, 0), applied to each group's outputs as they
  // are written (ForwardArgs::relu_output).
  void forward(ThreadPool* pool, int64_t batch, int64_t lanes, const float* x, const float* w, const float* bias,
               float* y, float* workspace, bool relu_output = false) const;
  // dW overwritten, or added to when accumulate.
  void backward_weights(ThreadPool* pool, int64_t batch, int64_t lanes, const float* x, const float* dy, float* dw,
                        bool accumulate, float* workspace) const;
  // dx overwritten.
  void backward_input(ThreadPool* pool, int64_t batch, int64_t lanes, const float* dy, const float* w, float* dx,
                      float* workspace) const;

  // One correlation over zero-padded planes: out[n][co] = sum over ci of
  // in[n][ci] (padded by pad) correlated with filter (co, ci).
  struct Pass {
    int64_t in_channels, in_h, in_w, pad;
    int64_t out_channels, out_h, out_w, tiles_h, tiles_w;
    int64_t tiles() const { return tiles_h * tiles_w; }
  };

 private:
  void correlate(const Pass& p, ThreadPool* pool, int64_t batch, int64_t lanes, const float* in, const float* bias,
                 float* out, float* workspace, bool relu_output) const;

  ConvGeometry g_;
  WinogradConvLayout lay_;
  int kernel_;  // K: F(4, K) for forward and the input gradient, F(K, 4) for the weight gradient
};

}  // namespace devmap::cpu
