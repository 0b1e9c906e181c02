// max_pool2d: square window over each channel of NCHW input. Padding counts
// as -infinity. Ties go to the first maximum in row-major window order.
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema max_pool2d_schema() {
  OpSchema s;
  s.name = "max_pool2d";
  s.summary = "2-D max pooling over NCHW input";
  s.attrs = {
      {"kernel", AttrType::kInt, false, int64_t{2}, 1, "window height and width"},
      {"stride", AttrType::kInt, false, int64_t{0}, 0, "stride (0: the kernel size)"},
      {"padding", AttrType::kInt, false, int64_t{0}, 0, "implicit -inf padding on each side"},
  };
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    require_rank(in[0], 3, "max_pool2d input");
    int64_t k = a.get_int("kernel"), st = a.get_int("stride"), p = a.get_int("padding");
    if (st == 0) st = k;
    if (p * 2 > k) throw_invalid("padding " + std::to_string(p) + " is more than half the kernel " + std::to_string(k));
    return Shape{in[0][0], window_out(in[0][1], k, st, p, in[0], "window"),
                 window_out(in[0][2], k, st, p, in[0], "window")};
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
