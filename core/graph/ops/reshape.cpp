// flatten and reshape: change the per-sample shape, keep the bytes.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema flatten_schema() {
  OpSchema s;
  s.name = "flatten";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "collapse each sample to a vector (NCHW order)";
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) { return Shape{in[0].numel()}; };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape&) { return 0.0; };
  s.backward_needs_inputs = false;
  s.backward_flops_factor = 0.0;
  return s;
}

OpSchema reshape_schema() {
  OpSchema s;
  s.name = "reshape";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "give each sample a new shape with the same number of elements";
  s.attrs = {{"shape", AttrType::kIntList, true, std::vector<int64_t>{}, 1, "per-sample shape"}};
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    Shape out(a.get_ints("shape"));
    if (out.numel() != in[0].numel())
      throw_invalid("cannot reshape " + in[0].to_string() + " (" + std::to_string(in[0].numel()) + " elements) to " +
                    out.to_string() + " (" + std::to_string(out.numel()) + " elements)");
    return out;
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape&) { return 0.0; };
  s.backward_needs_inputs = false;
  s.backward_flops_factor = 0.0;
  return s;
}

}  // namespace devmap::ops
