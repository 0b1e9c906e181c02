#include "core/graph/ops/conv2d_cpu_layout.h"

#include <algorithm>

#include "core/base/error.h"

namespace devmap {
namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

ConvGeometry ConvGeometry::of(const Attrs& attrs, const Shape& in, const Shape& out) {
  ConvGeometry g;
  g.channels = in[0];
  g.height = in[1];
  g.width = in[2];
  g.filters = attrs.get_int("filters");
  g.kernel = attrs.get_int("kernel");
  g.stride = attrs.get_int("stride");
  g.padding = attrs.get_int("padding");
  g.dilation = attrs.get_int("dilation");
  g.groups = attrs.get_int("groups");
  g.out_h = out[1];
  g.out_w = out[2];
  return g;
}

ConvAlgorithm parse_conv_algorithm(const std::string& name) {
  if (name == "auto") return ConvAlgorithm::kAuto;
  if (name == "gemm") return ConvAlgorithm::kGemm;
  if (name == "winograd") return ConvAlgorithm::kWinograd;
  if (name == "onednn") return ConvAlgorithm::kOneDnn;
  throw_invalid("unknown conv2d algorithm '" + name + "' (known: auto, gemm, winograd, onednn)");
}

std::string winograd_unsupported(const ConvGeometry& g) {
  if (g.stride != 1) return "stride " + std::to_string(g.stride) + " (needs 1)";
  if (g.dilation != 1) return "dilation " + std::to_string(g.dilation) + " (needs 1)";
  if (g.groups != 1) return "groups " + std::to_string(g.groups) + " (needs 1)";
  if (g.kernel < 3 || g.kernel > 5) return "kernel " + std::to_string(g.kernel) + " (needs 3, 4 or 5)";
  if (g.padding >= g.kernel)
    return "padding " + std::to_string(g.padding) + " (needs less than the kernel, " + std::to_string(g.kernel) + ")";
  return {};
}

std::string onednn_unsupported(const ConvGeometry& g) {
  if (g.groups != 1) return "groups " + std::to_string(g.groups) + " (needs 1)";
  return {};
}

ConvAlgorithm resolve_conv_algorithm(ConvAlgorithm requested, const ConvGeometry& g) {
  const std::string why_not = winograd_unsupported(g);
  switch (requested) {
    case ConvAlgorithm::kGemm: return ConvAlgorithm::kGemm;
    case ConvAlgorithm::kWinograd:
      if (!why_not.empty()) throw_invalid("conv2d algorithm winograd cannot run with " + why_not);
      return ConvAlgorithm::kWinograd;
    case ConvAlgorithm::kOneDnn:
      if (const std::string no = onednn_unsupported(g); !no.empty())
        throw_invalid("conv2d algorithm onednn cannot run with " + no);
      return ConvAlgorithm::kOneDnn;
    case ConvAlgorithm::kAuto: break;
  }
  // Few channels or filters make the transformed-domain GEMMs too thin to
  // repay the transforms; at kernel 3 F(4x4, 3x3) saves only 4x, which
  // oneDNN's direct kernels beat (bench/README.md).
  if (why_not.empty() && g.kernel >= 4 && g.channels >= 8 && g.filters >= 8) return ConvAlgorithm::kWinograd;
  return onednn_unsupported(g).empty() ? ConvAlgorithm::kOneDnn : ConvAlgorithm::kGemm;
}

ConvAlgorithm conv_algorithm_of(const Attrs& attrs, const ConvGeometry& g) {
  return resolve_conv_algorithm(parse_conv_algorithm(attrs.get_string("algorithm")), g);
}

GemmConvLayout::GemmConvLayout(const ConvGeometry& g) {
  const int64_t per_sample = g.patch() * g.positions();
  group =
      std::max<int64_t>(1, kGroupColsBytes / static_cast<int64_t>(sizeof(float)) / std::max<int64_t>(per_sample, 1));
  cols = 0;
  block = cols + g.patch() * group * g.positions();
  dw = block + (group > 1 ? g.filters * group * g.positions() : 0);
  lane = dw + g.filters * g.patch();
}

WinogradConvLayout::WinogradConvLayout(const ConvGeometry& g) {
  r = static_cast<int>(g.kernel);
  alpha = m + r - 1;
  tiles_h = ceil_div(g.out_h, m);
  tiles_w = ceil_div(g.out_w, m);
  dx_tiles_h = ceil_div(g.height, m);
  dx_tiles_w = ceil_div(g.width, m);
  const int64_t per_sample = std::max(tiles_h * tiles_w, dx_tiles_h * dx_tiles_w);
  group = std::max<int64_t>(1, kGroupTiles / std::max<int64_t>(per_sample, 1));
  tiles_padded = ceil_div(group * per_sample, kVector) * kVector;
  plane = std::max((tiles_h * m + r - 1) * (tiles_w * m + r - 1), (dx_tiles_h * m + r - 1) * (dx_tiles_w * m + r - 1));
  const int64_t a2 = int64_t{alpha} * alpha;
  shared = ceil_div(a2 * point_stride(g.filters, g.channels), kAlign) * kAlign;
  planes = 0;
  transformed = ceil_div(planes + (group + 1) * plane, kAlign) * kAlign;
  dw = transformed + a2 * (point_stride(g.channels, tiles_padded) + point_stride(g.filters, tiles_padded));
  lane = ceil_div(dw + a2 * point_stride(g.filters, g.channels), kAlign) * kAlign;
}

OneDnnConvLayout::OneDnnConvLayout(const ConvGeometry& g) {
  const auto padded = [](int64_t channels) { return ceil_div(channels, kBlock) * kBlock; };
  const auto aligned = [](int64_t floats) { return ceil_div(floats, kAlign) * kAlign; };
  const int64_t src_sample = padded(g.channels) * g.in_plane(), dst_sample = padded(g.filters) * g.positions();
  group = std::max<int64_t>(
      1, kGroupBytes / static_cast<int64_t>(sizeof(float)) / std::max<int64_t>(src_sample + dst_sample, 1));
  weights = aligned(padded(g.filters) * padded(g.channels) * g.kernel * g.kernel);
  shared = 2 * weights;
  src = 0;
  dst = src + aligned(group * src_sample);
  dw_blocked = dst + aligned(group * dst_sample);
  dw_group = dw_blocked + weights;
  dw = dw_group + aligned(g.filters * g.patch());
  lane = dw + aligned(g.filters * g.patch());
}

uint64_t conv_cpu_workspace_bytes(const ConvGeometry& g, ConvAlgorithm algorithm, int64_t lanes) {
  int64_t shared = 0, lane = 0;
  if (algorithm == ConvAlgorithm::kWinograd) {
    const WinogradConvLayout lay(g);
    shared = lay.shared;
    lane = lay.lane;
  } else if (algorithm == ConvAlgorithm::kOneDnn) {
    const OneDnnConvLayout lay(g);
    shared = lay.shared;
    lane = lay.lane;
  } else {
    lane = GemmConvLayout(g).lane;
  }
  return static_cast<uint64_t>(shared + lanes * lane) * sizeof(float);
}

}  // namespace devmap
