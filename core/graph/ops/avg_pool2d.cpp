// avg_pool2d: square window over each channel of NCHW input. Padding counts
// as zeros and every window divides by kernel*kernel (PyTorch's default,
// count_include_pad).
#include "core/graph/ops/pool_geometry.h"
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema avg_pool2d_schema() {
  OpSchema s;
  s.name = "avg_pool2d";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "2-D average pooling over NCHW input";
  s.attrs = {
      {"kernel", AttrType::kInt, false, int64_t{2}, 1, "window height and width"},
      {"stride", AttrType::kInt, false, int64_t{0}, 0, "stride (0: the kernel size)"},
      {"padding", AttrType::kInt, false, int64_t{0}, 0, "zero padding on each side, counted in the mean"},
  };
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    require_rank(in[0], 3, "avg_pool2d input");
    return pool_output_shape(pool_window(a), in[0]);
  };
  s.forward_flops = [](const Attrs& a, const std::vector<Shape>&, const Shape& out) {
    int64_t k = a.get_int("kernel");
    return static_cast<double>(out.numel() * k * k);
  };
  s.backward_needs_inputs = false;  // the gradient depends on the shapes only
  s.backward_flops_factor = 1.0;
  return s;
}

}  // namespace devmap::ops
