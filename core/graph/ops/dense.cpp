// dense: y = x W^T + b with W of shape [units, in] (PyTorch's Linear).
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema dense_schema() {
  OpSchema s;
  s.name = "dense";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "fully connected layer y = x W^T + b";
  s.attrs = {
      {"units", AttrType::kInt, true, int64_t{0}, 1, "number of outputs"},
      {"bias", AttrType::kBool, false, true, 0, "add a learned bias"},
  };
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    if (in[0].rank() != 1)
      throw_invalid("input must be a vector per sample, got " + in[0].to_string() + " (put a flatten op in front)");
    return Shape{a.get_int("units")};
  };
  s.params = [](const Attrs& a, const std::vector<Shape>& in) {
    int64_t u = a.get_int("units"), n = in[0][0];
    std::vector<ParamSpec> p{{"weight", Shape{u, n}, n, ParamInit::kUniformFanIn}};
    if (a.get_bool("bias")) p.push_back({"bias", Shape{u}, n, ParamInit::kUniformFanIn});
    return p;
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>& in, const Shape& out) {
    return 2.0 * static_cast<double>(in[0][0] * out[0]);
  };
  s.input_gradient_flops_factor = 1.0;
  s.split_attr = "units";
  return s;
}

}  // namespace devmap::ops
