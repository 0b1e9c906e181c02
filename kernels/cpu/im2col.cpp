#include "kernels/cpu/im2col.h"

#include <algorithm>
#include <cstring>

namespace devmap::cpu {
namespace {

// Output columns [lo, hi) whose input column ow*S-P+kw lies inside [0, W).
struct ValidRange {
  int64_t lo, hi;
};

ValidRange valid_range(int64_t kw, int64_t stride, int64_t pad, int64_t in, int64_t out) {
  int64_t first = pad - kw;  // smallest ow with ow*S >= P-kw
  int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  int64_t last = in - 1 + pad - kw;  // largest ow with ow*S <= W-1+P-kw
  int64_t hi = last < 0 ? 0 : std::min(out, last / stride + 1);
  lo = std::min(lo, out);
  return {lo, std::max(lo, hi)};
}

}  // namespace

ConvGeometry ConvGeometry::of(const Node& node) {
  ConvGeometry g;
  const Shape& in = node.input_shapes[0];
  g.channels = in[0];
  g.height = in[1];
  g.width = in[2];
  g.filters = node.attrs.get_int("filters");
  g.kernel = node.attrs.get_int("kernel");
  g.stride = node.attrs.get_int("stride");
  g.padding = node.attrs.get_int("padding");
  g.out_h = node.out_shape[1];
  g.out_w = node.out_shape[2];
  return g;
}

void im2col_plane(const ConvGeometry& g, const float* plane, float* cols, int64_t ld) {
  const int64_t k = g.kernel, s = g.stride, p = g.padding, ow_n = g.out_w;
  for (int64_t kh = 0; kh < k; ++kh) {
    for (int64_t kw = 0; kw < k; ++kw) {
      float* row = cols + (kh * k + kw) * ld;
      const ValidRange r = valid_range(kw, s, p, g.width, ow_n);
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        float* dst = row + oh * ow_n;
        const int64_t ih = oh * s - p + kh;
        if (ih < 0 || ih >= g.height) {
          std::fill(dst, dst + ow_n, 0.0f);
          continue;
        }
        const float* src = plane + ih * g.width;  // input column of ow: ow*s + kw - p
        const int64_t shift = kw - p;
        std::fill(dst, dst + r.lo, 0.0f);
        if (s == 1) {
          if (r.hi > r.lo)
            std::memcpy(dst + r.lo, src + r.lo + shift, static_cast<size_t>(r.hi - r.lo) * sizeof(float));
        } else {
          for (int64_t ow = r.lo; ow < r.hi; ++ow) dst[ow] = src[ow * s + shift];
        }
        std::fill(dst + r.hi, dst + ow_n, 0.0f);
      }
    }
  }
}

void col2im_plane(const ConvGeometry& g, const float* cols, int64_t ld, float* plane) {
  const int64_t k = g.kernel, s = g.stride, p = g.padding, ow_n = g.out_w;
  std::fill(plane, plane + g.in_plane(), 0.0f);
  for (int64_t kh = 0; kh < k; ++kh) {
    for (int64_t kw = 0; kw < k; ++kw) {
      const float* row = cols + (kh * k + kw) * ld;
      const ValidRange r = valid_range(kw, s, p, g.width, ow_n);
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t ih = oh * s - p + kh;
        if (ih < 0 || ih >= g.height) continue;
        const float* src = row + oh * ow_n;
        float* dst = plane + ih * g.width;  // input column of ow: ow*s + kw - p
        const int64_t shift = kw - p;
        if (s == 1) {
          for (int64_t ow = r.lo; ow < r.hi; ++ow) dst[ow + shift] += src[ow];  // contiguous: vectorises
        } else {
          for (int64_t ow = r.lo; ow < r.hi; ++ow) dst[ow * s + shift] += src[ow];
        }
      }
    }
  }
}

}  // namespace devmap::cpu
