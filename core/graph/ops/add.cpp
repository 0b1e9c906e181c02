// add: elementwise sum of two tensors of the same shape (residual joins).
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema add_schema() {
  OpSchema s;
  s.name = "add";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "elementwise a + b of two same-shaped inputs";
  s.num_inputs = 2;
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    if (in[0] != in[1])
      throw_invalid("inputs must have the same shape, got " + in[0].to_string() + " and " + in[1].to_string());
    return in[0];
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape& out) {
    return static_cast<double>(out.numel());
  };
  s.backward_needs_inputs = false;
  s.backward_flops_factor = 0.0;
  return s;
}

}  // namespace devmap::ops
