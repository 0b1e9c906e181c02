// batch_norm: each channel normalised over the batch (and, for feature maps,
// its positions), then scaled and shifted: PyTorch's nn.BatchNorm2d for
// [C, H, W] samples and nn.BatchNorm1d for [C] samples, with momentum, eps,
// affine=True and track_running_stats=True.
//
// When training the kernels use the batch's mean and biased variance and
// update the running statistics once per call (one micro-batch):
//   running_mean = (1 - momentum) running_mean + momentum mean
//   running_var  = (1 - momentum) running_var + momentum var * M / (M - 1)
//   num_batches_tracked += 1
// with M the values per channel (batch x positions). When evaluating and
// predicting they use the running statistics.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema batch_norm_schema() {
  OpSchema s;
  s.name = "batch_norm";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "(x - mean) / sqrt(var + eps) * weight + bias per channel, over the batch when training";
  s.attrs = {
      {"momentum", AttrType::kFloat, false, 0.1, 0, "weight of the batch in the running statistics (PyTorch's 0.1)"},
      {"eps", AttrType::kFloat, false, 1e-5, 0, "added to the variance (PyTorch's default 1e-5)"},
  };
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    const double eps = a.get_float("eps"), momentum = a.get_float("momentum");
    if (!(eps > 0.0)) throw_invalid("eps must be > 0, got " + std::to_string(eps));
    if (!(momentum >= 0.0 && momentum <= 1.0))
      throw_invalid("momentum must be in [0, 1], got " + std::to_string(momentum));
    if (in[0].rank() != 1 && in[0].rank() != 3)
      throw_invalid("input must be [C] features or a [C,H,W] feature map per sample, got " + in[0].to_string());
    return in[0];
  };
  // PyTorch's names and initialisation; the running statistics and the
  // batch count are state (not trained). num_batches_tracked is a float32
  // scalar in memory and int64 in the weights file, as PyTorch's buffer.
  s.params = [](const Attrs&, const std::vector<Shape>& in) {
    const Shape c{in[0][0]};
    return std::vector<ParamSpec>{
        {"weight", c, 1, ParamInit::kOnes},
        {"bias", c, 1, ParamInit::kZeros},
        {"running_mean", c, 1, ParamInit::kZeros, false},
        {"running_var", c, 1, ParamInit::kOnes, false},
        {"num_batches_tracked", Shape{}, 1, ParamInit::kZeros, false, FileDtype::kI64},
    };
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape& out) {
    return 8.0 * static_cast<double>(out.numel());
  };
  s.backward_flops_factor = 2.0;
  // The GPU kernel keeps 4 doubles per channel (mean, 1/std and, in
  // backward, the means of dy and dy xhat); the CPU kernel uses none.
  s.workspace_bytes = [](const Attrs&, const std::vector<Shape>& in, const Shape&, int64_t) {
    return static_cast<uint64_t>(in[0][0]) * 4 * sizeof(double);
  };
  s.couples_samples = true;
  s.has_state = true;
  return s;
}

}  // namespace devmap::ops
