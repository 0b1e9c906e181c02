// layer_norm: each sample normalised over all its features, then scaled and
// shifted elementwise: PyTorch's nn.LayerNorm(normalized_shape = the
// per-sample shape, eps, elementwise_affine=True).
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema layer_norm_schema() {
  OpSchema s;
  s.name = "layer_norm";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "(x - mean) / sqrt(var + eps) * weight + bias over each sample's features";
  s.attrs = {{"eps", AttrType::kFloat, false, 1e-5, 0, "added to the variance (PyTorch's default 1e-5)"}};
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    const double eps = a.get_float("eps");
    if (!(eps > 0.0)) throw_invalid("eps must be > 0, got " + std::to_string(eps));
    if (in[0].numel() < 2)
      throw_invalid("input must have at least 2 features per sample to normalise, got " + in[0].to_string());
    return in[0];
  };
  // PyTorch's names and initialisation: weight ones, bias zeros.
  s.params = [](const Attrs&, const std::vector<Shape>& in) {
    return std::vector<ParamSpec>{{"weight", in[0], 1, ParamInit::kOnes}, {"bias", in[0], 1, ParamInit::kZeros}};
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape& out) {
    return 8.0 * static_cast<double>(out.numel());
  };
  s.backward_flops_factor = 2.0;
  // The GPU kernel's backward keeps each sample's mean and 1/std (two
  // doubles) for the parameter gradients; the CPU kernel uses none.
  s.workspace_bytes = [](const Attrs&, const std::vector<Shape>&, const Shape&, int64_t batch) {
    return static_cast<uint64_t>(batch) * 2 * sizeof(double);
  };
  return s;
}

}  // namespace devmap::ops
