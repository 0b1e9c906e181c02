// global_avg_pool: the mean of each channel's plane, [C, H, W] -> [C]
// (PyTorch's AdaptiveAvgPool2d(1) followed by flatten).
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema global_avg_pool_schema() {
  OpSchema s;
  s.name = "global_avg_pool";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "mean over each channel's H x W plane: [C, H, W] -> [C]";
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    require_rank(in[0], 3, "global_avg_pool input");
    return Shape{in[0][0]};
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return static_cast<double>(in[0].numel());
  };
  s.backward_needs_inputs = false;  // the gradient depends on the shapes only
  s.backward_flops_factor = 1.0;
  return s;
}

}  // namespace devmap::ops
