// conv2d on the CPU: im2col + one OpenBLAS sgemm per chunk of samples.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/kernel.h"
#include "kernels/cpu/im2col.h"

namespace devmap::cpu {

// Forward:  y[n,o,:,:] = W[o] * x[n] (+ b[o]).
// Backward: dW, db (overwritten, or added to when accumulate), dx (overwritten;
// skipped when its view is null).
//
// The batch is processed in chunks of `chunk_samples(node, batch)` samples.
// For a chunk of n samples the workspace holds, as float32:
//   cols  [C*K*K, n*OH*OW]  im2col of the chunk (backward: reused for dcols)
//   block [O,     n*OH*OW]  the GEMM's output (forward) or the chunk's dy
//                           gathered from NCHW (backward)
// so workspace_bytes(node, batch) = n * (C*K*K + O) * OH*OW * 4 with
// n = min(batch, max(1, max_workspace_bytes / per-sample bytes)): bounded by
// max_workspace_bytes unless a single sample needs more, and monotone in
// batch, so a workspace sized for the largest micro-batch fits every smaller
// one. dW sums the chunks in order, so its bits are fixed for a given batch.
class Conv2dKernel final : public OpKernel {
 public:
  static constexpr size_t kDefaultMaxWorkspaceBytes = size_t{64} << 20;

  explicit Conv2dKernel(size_t max_workspace_bytes = kDefaultMaxWorkspaceBytes)
      : max_workspace_bytes_(max_workspace_bytes) {}

  void forward(const ForwardArgs& args) override;
  void backward(const BackwardArgs& args) override;
  size_t workspace_bytes(const Node& node, int64_t batch) const override;

  // Samples per chunk for a batch of `batch` (at least 1, at most batch).
  int64_t chunk_samples(const Node& node, int64_t batch) const;

 private:
  int64_t chunk_samples(const ConvGeometry& g, int64_t batch) const;

  size_t max_workspace_bytes_;
};

}  // namespace devmap::cpu
