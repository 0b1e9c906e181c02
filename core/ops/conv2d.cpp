// conv2d: NCHW input, OIHW weight, square kernel, symmetric zero padding.
#include <algorithm>

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
    int64_t patch = 0;
    if (__builtin_mul_overflow(in[0][0], k * k, &patch) || patch > (int64_t{1} << 32))
      throw_invalid("channels x kernel x kernel (" + std::to_string(in[0][0]) + " x " + std::to_string(k) + " x " +
                    std::to_string(k) + ") is too large");
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
  // The scratch a conv2d kernel may use (kernels/cpu/conv2d.h lays its
  // own out exactly so; the GPU's cuDNN algorithms are chosen to fit): up
  // to 8 lanes of consecutive samples, each with the im2col matrix of a
  // group of samples (about 64 KiB, at least one sample), the GEMM result
  // of a group when it holds several samples, and a partial weight gradient.
  s.workspace_bytes = [](const Attrs& a, const std::vector<Shape>& in, const Shape& out, int64_t batch) {
    const int64_t k = a.get_int("kernel"), patch = in[0][0] * k * k, positions = out[1] * out[2];
    const int64_t filters = a.get_int("filters");
    const int64_t sample_cols = patch * positions;  // floats
    const int64_t group = std::max<int64_t>(1, (int64_t{16} << 10) / std::max<int64_t>(sample_cols, 1));
    // In double: absurd shapes give an absurd figure, never an overflow.
    const double lane = static_cast<double>(sample_cols) * static_cast<double>(group) +
                        (group > 1 ? static_cast<double>(filters * group * positions) : 0.0) +
                        static_cast<double>(filters) * static_cast<double>(patch);
    const double bytes = static_cast<double>(std::clamp<int64_t>(batch, 1, 8)) * lane * 4;
    return bytes < 0x1p62 ? static_cast<uint64_t>(bytes) : uint64_t{1} << 62;
  };
  return s;
}

}  // namespace devmap::ops
