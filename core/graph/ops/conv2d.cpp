// conv2d: NCHW input, OIHW weight ([filters, C/groups, K, K]), square
// kernel, symmetric zero padding, stride, dilation and channel groups.
#include <algorithm>

#include "core/graph/ops/conv2d_cpu_layout.h"
#include "core/graph/ops/schema_util.h"
#include "core/graph/ops/schemas.h"

namespace devmap::ops {

OpSchema conv2d_schema() {
  OpSchema s;
  s.name = "conv2d";
  s.device_kinds = {DeviceKind::kCpu, DeviceKind::kGpu};
  s.summary = "2-D convolution (cross-correlation) over NCHW input";
  s.attrs = {
      {"filters", AttrType::kInt, true, int64_t{0}, 1, "number of output channels"},
      {"kernel", AttrType::kInt, true, int64_t{0}, 1, "kernel height and width"},
      {"stride", AttrType::kInt, false, int64_t{1}, 1, "stride in both directions"},
      {"padding", AttrType::kInt, false, int64_t{0}, 0, "zero padding on each side"},
      {"dilation", AttrType::kInt, false, int64_t{1}, 1, "spacing between kernel taps"},
      {"groups", AttrType::kInt, false, int64_t{1}, 1,
       "channel groups: input channels and filters both divisible by it (depthwise: groups = channels)"},
      {"bias", AttrType::kBool, false, true, 0, "add a learned bias per output channel"},
      {"algorithm", AttrType::kString, false, std::string("auto"), 0,
       "CPU algorithm: auto, gemm (im2col + GEMM), winograd (stride 1, dilation 1, groups 1, kernel 3-5) or onednn "
       "(oneDNN's direct convolution, groups 1)"},
  };
  s.infer_shape = [](const Attrs& a, const std::vector<Shape>& in) {
    require_rank(in[0], 3, "conv2d input");
    int64_t k = a.get_int("kernel"), st = a.get_int("stride"), p = a.get_int("padding");
    const int64_t d = a.get_int("dilation"), groups = a.get_int("groups"), filters = a.get_int("filters");
    if (in[0][0] % groups != 0 || filters % groups != 0)
      throw_invalid("conv2d groups " + std::to_string(groups) + " must divide both the input channels (" +
                    std::to_string(in[0][0]) + ") and the filters (" + std::to_string(filters) + ")");
    int64_t patch = 0, span = 0;
    if (__builtin_mul_overflow(in[0][0], k * k, &patch) || patch > (int64_t{1} << 32) ||
        __builtin_mul_overflow(d, k - 1, &span) || span > (int64_t{1} << 32))
      throw_invalid("channels x kernel x kernel (" + std::to_string(in[0][0]) + " x " + std::to_string(k) + " x " +
                    std::to_string(k) + ") or the dilated kernel is too large");
    // The dilated kernel spans d*(K-1)+1 pixels.
    const char* what = d == 1 ? "kernel" : "dilated kernel";
    int64_t oh = window_out(in[0][1], span + 1, st, p, in[0], what);
    int64_t ow = window_out(in[0][2], span + 1, st, p, in[0], what);
    Shape out{filters, oh, ow};
    // An unknown or impossible algorithm is a config error, found here.
    conv_algorithm_of(a, ConvGeometry::of(a, in[0], out));
    return out;
  };
  s.params = [](const Attrs& a, const std::vector<Shape>& in) {
    int64_t k = a.get_int("kernel"), c = in[0][0] / a.get_int("groups"), o = a.get_int("filters");
    std::vector<ParamSpec> p{{"weight", Shape{o, c, k, k}, c * k * k, ParamInit::kUniformFanIn}};
    if (a.get_bool("bias")) p.push_back({"bias", Shape{o}, c * k * k, ParamInit::kUniformFanIn});
    return p;
  };
  s.forward_flops = [](const Attrs& a, const std::vector<Shape>& in, const Shape& out) {
    int64_t k = a.get_int("kernel");
    return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(in[0][0] / a.get_int("groups") * k * k);
  };
  s.backward_flops_factor = 2.0;
  s.input_gradient_flops_factor = 1.0;
  // The scratch the CPU conv2d kernel uses (core/graph/ops/conv2d_cpu_layout.h
  // lays it out; the GPU's cuDNN algorithms are chosen to fit): up to 8
  // lanes of consecutive samples, each with the scratch of its algorithm.
  s.workspace_bytes = [](const Attrs& a, const std::vector<Shape>& in, const Shape& out, int64_t batch) {
    const ConvGeometry g = ConvGeometry::of(a, in[0], out);
    // Absurd shapes (never allocated) get an absurd figure, never an overflow.
    const double rough = static_cast<double>(g.patch()) * static_cast<double>(g.positions() + g.filters) +
                         64.0 * static_cast<double>(g.channels + g.filters) *
                             static_cast<double>(std::max(g.positions(), g.in_plane()) + g.filters);
    if (rough * 16 > 0x1p58) return uint64_t{1} << 62;
    return conv_cpu_workspace_bytes(g, conv_algorithm_of(a, g), std::clamp<int64_t>(batch, 1, kConvCpuMaxLanes));
  };
  s.split_attr = "filters";  // groups 1 only (core/graph/split_op.h)
  return s;
}

}  // namespace devmap::ops
