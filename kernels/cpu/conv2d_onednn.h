// conv2d by oneDNN's direct convolution on the CPU (groups 1), in the
// lanes of conv2d.h: every primitive call is single-threaded and runs on
// the pool as part of one lane, on a group of the lane's samples.
#pragma once

#include <cstdint>
#include <string>

#include "core/exec/cpu_path.h"
#include "core/exec/thread_pool.h"
#include "core/graph/ops/conv2d_cpu_layout.h"

namespace devmap::cpu {

// The workspace is laid out as OneDnnConvLayout says: the weights in the
// primitives' layouts, then one block per lane. Per group of G samples of a
// lane (the last group of a lane may be smaller), on copies of the group's
// tensors in oneDNN's channel-blocked layouts:
//   forward:  y = conv(x, W) (+ bias);
//   dx:       dx = conv_backward_data(dy, W);
//   dW:       dW_group = conv_backward_weights(x, dy); the lane adds its
//             groups in order into dW_lane; then dW [+]= dW_0 + dW_1 + ...,
//             the lanes added in order. Where conv_direct_weight_gradient_runs
//             (at most 7 input channels, on the AVX2 and AVX-512 paths) dW comes from conv2d_direct_weight_gradient.h
//             instead: oneDNN's AVX2 kernel pads the channels to 8.
// oneDNN computes each sample's output and input gradient the same way
// whatever the group it is in (tests/kernels/conv2d_onednn_test.cpp checks
// it), and the weight gradient's sums follow the lanes and groups, which
// depend only on the batch and the lane count: the bits never depend on
// the pool size.
//
// oneDNN's instruction set is the active CPU path's (avx512_core, avx2,
// sse41 for the baseline), fixed for the process by the first primitive
// made (kernels/cpu/onednn_runtime.h); it runs its own threads nowhere
// (every call is made with one).

class OneDnnConv {
 public:
  explicit OneDnnConv(const ConvGeometry& g);

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

  // "onednn:jit:avx512_core": oneDNN's name of the forward kernel it runs.
  std::string implementation() const;
  // The backward's: implementation(), with "+dW:direct/PATH" where the
  // weight gradient is the direct kernel's.
  std::string backward_implementation() const;

 private:
  ConvGeometry g_;
  OneDnnConvLayout lay_;
};

}  // namespace devmap::cpu
