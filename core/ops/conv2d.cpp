// conv2d: NCHW input, OIHW weight, square kernel, symmetric zero padding.
#include "core/ops/schema_util.h"
#include "core/ops/schemas.h"

namespace devmap::ops {

OpSchema conv2d_schema() {
  OpSchema s;
  s.name = "conv2d";
  s.summary = "2-D convolution (cross-correlation) over NCHW input";
  s.attrs = {
      {"filters", AttrType::kInt, true, int64_t{0}, 1, "number of output channels"},
      {"kernel", AttrType::kInt, true, int64_t{0}, 1, "kernel height and width"},
      {"stride", AttrType::kInt, false, int64_t{1}, 1, "stride in both directions"},
      {"padding", AttrType::kInt, false, int64_t{0}, 0, "zero padding on each side"},
      {"bias", AttrType::kBool, false, true, 0, "add a learned bias per output channel"},
  };
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    require_rank(in[0], 3, "conv2d input");
    int64_t k = a.get_int("kernel"), st = a.get_int("stride"), p = a.get_int("padding");
    int64_t oh = window_out(in[0][1], k, st, p, in[0], "kernel");
    int64_t ow = window_out(in[0][2], k, st, p, in[0], "kernel");
    return Shape{a.get_int("filters"), oh, ow};
  };
  s.params = [](const Attrs& a, const std::vector<Shape>& in) {
    int64_t k = a.get_int("kernel"), c = in[0][0], o = a.get_int("filters");
    std::vector<ParamSpec> p{{"weight", Shape{o, c, k, k}, c * k * k, ParamInit::kUniformFanIn}};
    if (a.get_bool("bias")) p.push_back({"bias", Shape{o}, c * k * k, ParamInit::kUniformFanIn});
    return p;
  };
  s.forward_flops = [](const Attrs& a, const std::vector<Shape>& in, const Shape& out) {
    int64_t k = a.get_int("kernel");
    return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(in[0][0] * k * k);
  };
  s.backward_flops_factor = 2.0;
  return s;
}

}  // namespace devmap::ops
