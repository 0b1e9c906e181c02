// conv2d on the CPU, by one of three algorithms (core/graph/ops/conv2d_cpu_layout.h):
// im2col + single-threaded OpenBLAS sgemm per group of samples, Winograd
// (conv2d_winograd.h) or oneDNN (conv2d_onednn.h); the batch split into a
// fixed number of lanes that run on the pool.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/exec/kernel.h"
#include "core/graph/ops/conv2d_cpu_layout.h"

namespace devmap::cpu {

// Forward:  y[n,o,:,:] = W[o] * x[n, channels of o's group] (+ b[o]).
// Backward: dW, db (overwritten, or added to when accumulate), dx (overwritten;
// skipped when its view is null).
//
// The node's `algorithm` attribute (auto, gemm, winograd, onednn) picks the
// algorithm; the kernel's own, when not kAuto, overrides it (tests).
//
// Work split. The batch is cut into L = lanes(batch) = min(batch, max_lanes)
// lanes of consecutive samples (lane l holds samples [l*N/L, (l+1)*N/L)); the
// pool runs whole lanes, so each lane is computed by one thread from start to
// end. The GEMM algorithm: a lane walks its samples in groups of G = group_samples(node) (G is
// chosen so that a group's im2col matrix stays in a core's cache: one sample
// for large convolutions, several for small ones). Per group, and within it
// per conv group (attribute `groups`, in order; one GEMM each, on that conv
// group's channels, filters and rows of W):
//   forward:  cols = im2col(x_g); y_g = W * cols (+ b), written straight to
//             NCHW when G == 1, else through `block` [O, G*OH*OW];
//   backward: cols = im2col(x_g); dW_lane (+)= dy_g * cols^T;
//             then, if dx is wanted, cols = W^T * dy_g; dx_g = col2im(cols).
// The per-lane dW partials are then added in lane order (dW = [dW +] dW_0 +
// dW_1 + ...) and db sums each filter's dy over samples, then positions, in
// order. Every GEMM runs on one thread, so the result bits depend on the
// inputs, the batch, max_lanes and the algorithm, never on the pool size.
//
// Workspace (GemmConvLayout), per lane, as float32:
//   cols    [(C/groups)*K*K, G*OH*OW]
//   block   [O,     G*OH*OW]   only when G > 1
//   dw      [O, (C/groups)*K*K]  the lane's dW partial (backward)
// WinogradConvLayout for Winograd, OneDnnConvLayout for oneDNN.
// workspace_bytes(node, batch) = shared + lanes(batch) * lane_bytes(node):
// bounded for any batch and monotone in it, so a workspace sized for the
// largest micro-batch fits every smaller one.
class Conv2dKernel final : public OpKernel {
 public:
  static constexpr int64_t kDefaultMaxLanes = kConvCpuMaxLanes;

  explicit Conv2dKernel(int64_t max_lanes = kDefaultMaxLanes, ConvAlgorithm algorithm = ConvAlgorithm::kAuto)
      : max_lanes_(max_lanes < 1 ? 1 : max_lanes), algorithm_(algorithm) {}

  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& node, int64_t batch) const override;
  // "winograd/<cpu path>+<GEMM library>" (the transforms' path, then
  // blas.h's gemm_kernel_name()), "onednn:<oneDNN's kernel>" or
  // "im2col+<GEMM library>".
  std::string implementation(const Node& node) const override;
  // implementation(), with oneDNN's "+dW:direct/<cpu path>" where its
  // weight gradient is conv2d_direct_weight_gradient.h's.
  std::string backward_implementation(const Node& node) const override;
  // Every algorithm applies ForwardArgs::relu_output to each group of
  // samples' outputs as it writes them.
  bool fuses_relu() const override { return true; }

  int64_t lanes(int64_t batch) const;
  // The algorithm this kernel runs for the node (never kAuto).
  ConvAlgorithm algorithm(const Node& node) const;
  // The GEMM algorithm's samples per group.
  static int64_t group_samples(const Node& node);
  size_t lane_bytes(const Node& node) const;

 private:
  // One pass of the GEMM algorithm's backward over samples [first, first +
  // count): dx (when not null) and dw (when not null; added to when
  // accumulate).
  struct GemmPass {
    const ConvGeometry& g;
    ThreadPool* pool;
    const float *x, *dy, *w;
    float *dx, *dw;
    int64_t batch;
    bool accumulate;
    float* workspace;
  };
  void backward_gemm(const GemmPass& pass) const;

  int64_t max_lanes_;
  ConvAlgorithm algorithm_;
};

}  // namespace devmap::cpu
