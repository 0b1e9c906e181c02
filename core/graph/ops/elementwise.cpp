// relu and dropout: shape-preserving elementwise ops.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema relu_schema() {
  OpSchema s;
  s.name = "relu";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "max(x, 0)";
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) { return in[0]; };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape& out) {
    return static_cast<double>(out.numel());
  };
  s.backward_needs_inputs = false;  // the gradient rule reads the output
  s.backward_needs_output = true;
  s.backward_flops_factor = 1.0;
  return s;
}

// Inverted dropout: during training each element is zeroed with probability
// `rate` and the rest scaled by 1/(1-rate); evaluation passes x through. The
// mask is a counter-based random function of (seed, op name, step, sample,
// element), so the backward pass recomputes it and any process gets the same.
OpSchema dropout_schema() {
  OpSchema s;
  s.name = "dropout";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "inverted dropout (training only)";
  s.attrs = {{"rate", AttrType::kFloat, false, 0.5, 0, "probability of zeroing an element, in [0, 1)"}};
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    double r = a.get_float("rate");
    if (!(r >= 0.0 && r < 1.0)) throw_invalid("rate must be in [0, 1), got " + std::to_string(r));
    return in[0];
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape& out) {
    return static_cast<double>(out.numel());
  };
  s.backward_needs_inputs = false;
  s.backward_flops_factor = 1.0;
  return s;
}

}  // namespace devmap::ops
