#include "kernels/cuda/conv_plan.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/format_bytes.h"
#include "kernels/cuda/cuda_check.h"

namespace devmap::cuda {
namespace {

std::string describe(const ConvShape& s) {
  return "input [" + std::to_string(s.batch) + "," + std::to_string(s.channels) + "," + std::to_string(s.height) + "," +
         std::to_string(s.width) + "], " + std::to_string(s.filters) + " filters " + std::to_string(s.kernel) + "x" +
         std::to_string(s.kernel) + ", stride " + std::to_string(s.stride) + ", padding " + std::to_string(s.padding) +
         ", dilation " + std::to_string(s.dilation) + ", groups " + std::to_string(s.groups);
}

// The three passes differ only in their types and functions; each trait
// lists cuDNN's heuristic candidates, the deterministic fallbacks, and the
// exact workspace of one algorithm (nullopt when unsupported).
struct ForwardPass {
  using Algo = cudnnConvolutionFwdAlgo_t;
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr const char* name = "forward";
  static std::vector<Perf> candidates(cudnnHandle_t h, const ConvPlan& p) {
    int max = 0, got = 0;
    check(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max), "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<Perf> perf(static_cast<size_t>(std::max(max, 1)));
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), max, &got,
                                                 perf.data()),
          "cudnnGetConvolutionForwardAlgorithm_v7");
    perf.resize(static_cast<size_t>(got));
    return perf;
  }
  static std::vector<Algo> fallbacks() {
    return {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM};
  }
  static std::optional<size_t> workspace(cudnnHandle_t h, const ConvPlan& p, Algo a) {
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), a, &bytes) !=
        CUDNN_STATUS_SUCCESS)
      return std::nullopt;
    return bytes;
  }
};

struct BackwardDataPass {
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr const char* name = "backward data";
  static std::vector<Perf> candidates(cudnnHandle_t h, const ConvPlan& p) {
    int max = 0, got = 0;
    check(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max),
          "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
    std::vector<Perf> perf(static_cast<size_t>(std::max(max, 1)));
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), max, &got,
                                                      perf.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    perf.resize(static_cast<size_t>(got));
    return perf;
  }
  static std::vector<Algo> fallbacks() { return {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1}; }
  static std::optional<size_t> workspace(cudnnHandle_t h, const ConvPlan& p, Algo a) {
    size_t bytes = 0;
    if (cudnnGetConvolutionBackwardDataWorkspaceSize(h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), a, &bytes) !=
        CUDNN_STATUS_SUCCESS)
      return std::nullopt;
    return bytes;
  }
};

struct BackwardFilterPass {
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr const char* name = "backward filter";
  static std::vector<Perf> candidates(cudnnHandle_t h, const ConvPlan& p) {
    int max = 0, got = 0;
    check(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max),
          "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
    std::vector<Perf> perf(static_cast<size_t>(std::max(max, 1)));
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), max, &got,
                                                        perf.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    perf.resize(static_cast<size_t>(got));
    return perf;
  }
  static std::vector<Algo> fallbacks() { return {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1}; }
  static std::optional<size_t> workspace(cudnnHandle_t h, const ConvPlan& p, Algo a) {
    size_t bytes = 0;
    if (cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), a, &bytes) !=
        CUDNN_STATUS_SUCCESS)
      return std::nullopt;
    return bytes;
  }
};

// The first deterministic, non-tensor-op algorithm in cuDNN's order whose
// exact workspace fits, else the first fallback that is supported and fits.
template <class Pass>
std::pair<typename Pass::Algo, size_t> choose(cudnnHandle_t h, const ConvPlan& plan, const ConvShape& shape,
                                              size_t limit) {
  std::string seen;
  for (const typename Pass::Perf& p : Pass::candidates(h, plan)) {
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    seen += (seen.empty() ? "" : ", ") + std::to_string(static_cast<int>(p.algo)) +
            (p.determinism == CUDNN_DETERMINISTIC ? "" : " (nondeterministic)");
    if (p.determinism != CUDNN_DETERMINISTIC) continue;
    if (p.mathType != CUDNN_FMA_MATH && p.mathType != CUDNN_DEFAULT_MATH) continue;
    const std::optional<size_t> bytes = Pass::workspace(h, plan, p.algo);
    if (bytes && *bytes <= limit) return {p.algo, *bytes};
  }
  for (typename Pass::Algo a : Pass::fallbacks()) {
    const std::optional<size_t> bytes = Pass::workspace(h, plan, a);
    if (bytes && *bytes <= limit) return {a, *bytes};
  }
  throw_runtime(std::string("conv2d: cuDNN offers no deterministic FMA algorithm for the ") + Pass::name + " pass of " +
                describe(shape) + " within a workspace of " + format_bytes(limit) +
                " (heuristic candidates: " + (seen.empty() ? "none" : seen) + ")");
}

}  // namespace

ConvShape ConvShape::of(const Node& node, int64_t batch) {
  const Shape& in = node.input_shapes[0];
  return ConvShape{batch,
                   in[0],
                   in[1],
                   in[2],
                   node.attrs.get_int("filters"),
                   node.attrs.get_int("kernel"),
                   node.attrs.get_int("stride"),
                   node.attrs.get_int("padding"),
                   node.attrs.get_int("dilation"),
                   node.attrs.get_int("groups"),
                   node.out_shape[1],
                   node.out_shape[2]};
}

ConvRequest conv_request(const Node& node, int64_t batch) {
  return ConvRequest{ConvShape::of(node, batch), static_cast<size_t>(std::min<uint64_t>(
                                                     node.workspace_bytes(batch), ConvPlans::kMaxWorkspaceBytes))};
}

ConvRequest conv_request(const Node& node, int64_t batch, const KernelContext& ctx) {
  ConvRequest r = conv_request(node, batch);
  const size_t given = ctx.workspace == nullptr ? 0 : ctx.workspace_bytes;
  if (given < r.workspace_limit)
    throw_runtime("conv2d '" + node.name + "': workspace of " + std::to_string(given) + " bytes is smaller than the " +
                  std::to_string(r.workspace_limit) + " bytes its op schema plans at a batch of " +
                  std::to_string(batch) + " (executor bug)");
  return r;
}

size_t ConvPlan::workspace_bytes() const {
  return std::max({forward_bytes, backward_data_bytes, backward_filter_bytes});
}

const ConvPlan& ConvPlans::get(const ConvShape& shape, size_t workspace_limit) {
  const size_t limit = std::min(workspace_limit, kMaxWorkspaceBytes);
  auto key = std::make_pair(shape, limit);
  auto it = plans_.find(key);
  if (it == plans_.end()) it = plans_.emplace(key, make(shape, limit)).first;
  return *it->second;
}

std::unique_ptr<ConvPlan> ConvPlans::make(const ConvShape& s, size_t limit) {
  cudnnHandle_t h = device_.cudnn();
  auto plan = std::make_unique<ConvPlan>();
  plan->x.set(s.batch, s.channels, s.height, s.width);
  plan->w.set(s.filters, s.channels / s.groups, s.kernel, s.kernel);
  plan->conv.set(s.padding, s.stride, s.dilation, s.groups);
  int n = 0, c = 0, oh = 0, ow = 0;
  check(cudnnGetConvolution2dForwardOutputDim(plan->conv.get(), plan->x.get(), plan->w.get(), &n, &c, &oh, &ow),
        "cudnnGetConvolution2dForwardOutputDim");
  if (n != s.batch || c != s.filters || oh != s.out_h || ow != s.out_w)
    throw_runtime("conv2d: cuDNN's output shape [" + std::to_string(n) + "," + std::to_string(c) + "," +
                  std::to_string(oh) + "," + std::to_string(ow) + "] differs from the schema's for " + describe(s));
  plan->y.set(s.batch, s.filters, s.out_h, s.out_w);
  plan->bias.set(1, s.filters, 1, 1);
  std::tie(plan->forward, plan->forward_bytes) = choose<ForwardPass>(h, *plan, s, limit);
  std::tie(plan->backward_data, plan->backward_data_bytes) = choose<BackwardDataPass>(h, *plan, s, limit);
  std::tie(plan->backward_filter, plan->backward_filter_bytes) = choose<BackwardFilterPass>(h, *plan, s, limit);
  return plan;
}

}  // namespace devmap::cuda
