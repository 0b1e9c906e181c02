// max_pool2d: square window over each channel of NCHW input. Padding counts
// as -infinity. Ties go to the first maximum in row-major window order.
#include "core/graph/ops/pool_geometry.h"
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema max_pool2d_schema() {
  OpSchema s;
  s.name = "max_pool2d";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "2-D max pooling over NCHW input";
  s.attrs = {
      {"kernel", AttrType::kInt, false, int64_t{2}, 1, "window height and width"},
      {"stride", AttrType::kInt, false, int64_t{0}, 0, "stride (0: the kernel size)"},
      {"padding", AttrType::kInt, false, int64_t{0}, 0, "implicit -inf padding on each side"},
  };
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    require_rank(in[0], 3, "max_pool2d input");
    return pool_output_shape(pool_window(a), in[0]);
  };
  s.forward_flops = [](const Attrs& a, const std::vector<Shape>&, const Shape& out) {
    int64_t k = a.get_int("kernel");
    return static_cast<double>(out.numel() * k * k);
  };
  s.backward_needs_output = true;  // the kernel finds each window's max by comparing with it
  s.backward_flops_factor = 1.0;
  return s;
}

}  // namespace devmap::ops
