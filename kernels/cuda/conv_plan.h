// ConvPlans: for each convolution shape (batch included) the cuDNN
// descriptors and the algorithms of its three passes, chosen once and
// cached for the life of the worker.
//
// Choice: cuDNN's heuristics (cudnnGet*Algorithm_v7; nothing is run or
// timed, so the same shape gets the same algorithm in every run and the
// results stay reproducible), filtered to algorithms that are
//   - deterministic (CUDNN_DETERMINISTIC: no atomics, same bits every run),
//   - FMA math (the descriptors ask for CUDNN_FMA_MATH: no TF32),
//   - within the workspace limit (the conv's own planned figure:
//     conv_request below),
// taking the first that remains in cuDNN's order. When the heuristics
// offer none, the deterministic fallbacks (implicit GEMM forward,
// BWD_DATA_ALGO_1, BWD_FILTER_ALGO_1) are tried for support and size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "core/exec/kernel.h"
#include "core/graph/graph.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cudnn_desc.h"

namespace devmap::cuda {

struct ConvShape {
  int64_t batch, channels, height, width, filters, kernel, stride, padding, dilation, groups, out_h, out_w;
  static ConvShape of(const Node& node, int64_t batch);
  auto key() const {
    return std::tie(batch, channels, height, width, filters, kernel, stride, padding, dilation, groups);
  }
  bool operator<(const ConvShape& o) const { return key() < o.key(); }
};

struct ConvPlan {
  TensorDesc x, y, bias;
  FilterDesc w;
  ConvDesc conv;
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;
  size_t workspace_bytes() const;  // the largest of the three
};

class ConvPlans {
 public:
  // The largest workspace a conv2d may ask for (per pass).
  static constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

  explicit ConvPlans(CudaDevice& device) : device_(device) {}

  // The plan for `shape` whose passes each fit in `workspace_limit` bytes
  // (at most kMaxWorkspaceBytes). Throws devmap::Error naming the shape when
  // no deterministic FMA algorithm fits.
  const ConvPlan& get(const ConvShape& shape, size_t workspace_limit);

 private:
  std::unique_ptr<ConvPlan> make(const ConvShape& shape, size_t workspace_limit);

  CudaDevice& device_;
  std::map<std::pair<ConvShape, size_t>, std::unique_ptr<ConvPlan>> plans_;
};

// What a conv2d asks ConvPlans for at `batch` samples: its shape, and the
// workspace its algorithms must fit in, which is its own planned figure:
// the op schema's workspace_bytes at that batch (what the memory plan
// counts for this op), at most kMaxWorkspaceBytes. Never the device's
// shared workspace, which is as large as the largest op on the device: so
// the same conv runs the same algorithms whatever shares its device (the
// all-GPU and the split runs alike). Needs no GPU.
struct ConvRequest {
  ConvShape shape;
  size_t workspace_limit = 0;
};
ConvRequest conv_request(const Node& node, int64_t batch);
// The request of a kernel call: the same, after checking that the executor
// handed over at least the limit (throws devmap::Error otherwise: an
// executor bug). The size of ctx's workspace changes nothing else.
ConvRequest conv_request(const Node& node, int64_t batch, const KernelContext& ctx);

}  // namespace devmap::cuda
