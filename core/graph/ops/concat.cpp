// concat: joins two or more inputs along their first per-sample dimension:
// channels of [C, H, W] feature maps, features of [N] vectors. The other
// dimensions must agree.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema concat_schema() {
  OpSchema s;
  s.name = "concat";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "joins inputs along channels ([C, H, W]) or features ([N])";
  s.num_inputs = 2;
  s.variadic_inputs = true;
  s.infer_shape = [](const Attrs&, const std::vector<Shape>& in) {
    if (in[0].rank() < 1)
      throw_invalid("concat inputs need at least one dimension per sample, got " + in[0].to_string());
    std::vector<int64_t> out = in[0].dims();
    for (size_t i = 1; i < in.size(); ++i) {
      bool fits = in[i].rank() == in[0].rank();
      for (int d = 1; fits && d < in[0].rank(); ++d) fits = in[i][d] == in[0][d];
      if (!fits)
        throw_invalid("concat input " + std::to_string(i) + " " + in[i].to_string() + " does not fit input 0 " +
                      in[0].to_string() + " (all dimensions but the first must agree)");
      out[0] += in[i][0];
    }
    return Shape(std::move(out));
  };
  s.forward_flops = [](const Attrs&, const std::vector<Shape>&, const Shape&) { return 0.0; };
  s.backward_needs_inputs = false;
  s.backward_flops_factor = 0.0;
  return s;
}

}  // namespace devmap::ops
