#include "kernels/cpu/im2col.h"

#include <algorithm>
#include <cstring>

namespace devmap::cpu {
namespace {

// Output columns [lo, hi) whose input column ow*S-P+kw lies inside [0, W)
// (kw: the tap's offset, its index times the dilation).
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

// Stride 1 with the plane and its padding in a stack buffer: every row copy
// and add then has the same length and no bounds (padding reads zeros,
// padding writes are dropped).
constexpr int64_t kPaddedMax = 4096;  // floats: 16 KiB

bool use_padded(const ConvGeometry& g) {
  return g.stride == 1 && (g.height + 2 * g.padding) * (g.width + 2 * g.padding) <= kPaddedMax;
}

// dst[0, n) = src[0, n) in 16-byte pieces (fixed-size memcpy compiles to one
// load and store), the last piece overlapping the previous one.
inline void copy_row(float* dst, const float* src, int64_t n) {
  if (n < 4) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    return;
  }
  for (int64_t i = 0; i + 4 < n; i += 4) std::memcpy(dst + i, src + i, 4 * sizeof(float));
  std::memcpy(dst + n - 4, src + n - 4, 4 * sizeof(float));
}

void im2col_padded(const ConvGeometry& g, const float* plane, float* cols, int64_t ld) {
  const int64_t k = g.kernel, d = g.dilation, p = g.padding, pw = g.width + 2 * p, ph = g.height + 2 * p,
                ow_n = g.out_w;
  float buf[kPaddedMax];
  std::fill(buf, buf + p * pw, 0.0f);
  for (int64_t ih = 0; ih < g.height; ++ih) {
    float* row = buf + (ih + p) * pw;
    std::fill(row, row + p, 0.0f);
    std::memcpy(row + p, plane + ih * g.width, static_cast<size_t>(g.width) * sizeof(float));
    std::fill(row + p + g.width, row + pw, 0.0f);
  }
  std::fill(buf + (g.height + p) * pw, buf + ph * pw, 0.0f);
  for (int64_t kh = 0; kh < k; ++kh)
    for (int64_t kw = 0; kw < k; ++kw) {
      float* row = cols + (kh * k + kw) * ld;
      for (int64_t oh = 0; oh < g.out_h; ++oh) copy_row(row + oh * ow_n, buf + (oh + kh * d) * pw + kw * d, ow_n);
    }
}

void col2im_padded(const ConvGeometry& g, const float* cols, int64_t ld, float* plane) {
  const int64_t k = g.kernel, d = g.dilation, p = g.padding, pw = g.width + 2 * p, ph = g.height + 2 * p,
                ow_n = g.out_w;
  float buf[kPaddedMax];
  std::fill(buf, buf + ph * pw, 0.0f);
  for (int64_t kh = 0; kh < k; ++kh)
    for (int64_t kw = 0; kw < k; ++kw) {
      const float* row = cols + (kh * k + kw) * ld;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        float* dst = buf + (oh + kh * d) * pw + kw * d;
        const float* src = row + oh * ow_n;
        for (int64_t ow = 0; ow < ow_n; ++ow) dst[ow] += src[ow];
      }
    }
  for (int64_t ih = 0; ih < g.height; ++ih)
    std::memcpy(plane + ih * g.width, buf + (ih + p) * pw + p, static_cast<size_t>(g.width) * sizeof(float));
}

}  // namespace

void im2col_plane(const ConvGeometry& g, const float* plane, float* cols, int64_t ld) {
  if (use_padded(g)) {
    im2col_padded(g, plane, cols, ld);
    return;
  }
  const int64_t k = g.kernel, s = g.stride, p = g.padding, d = g.dilation, ow_n = g.out_w;
  for (int64_t kh = 0; kh < k; ++kh) {
    for (int64_t kw = 0; kw < k; ++kw) {
      float* row = cols + (kh * k + kw) * ld;
      const ValidRange r = valid_range(kw * d, s, p, g.width, ow_n);
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        float* dst = row + oh * ow_n;
        const int64_t ih = oh * s - p + kh * d;
        if (ih < 0 || ih >= g.height) {
          std::fill(dst, dst + ow_n, 0.0f);
          continue;
        }
        const float* src = plane + ih * g.width;  // input column of ow: ow*s + kw*d - p
        const int64_t shift = kw * d - p;
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
  if (use_padded(g)) {
    col2im_padded(g, cols, ld, plane);  // the same additions in the same order
    return;
  }
  const int64_t k = g.kernel, s = g.stride, p = g.padding, d = g.dilation, ow_n = g.out_w;
  std::fill(plane, plane + g.in_plane(), 0.0f);
  for (int64_t kh = 0; kh < k; ++kh) {
    for (int64_t kw = 0; kw < k; ++kw) {
      const float* row = cols + (kh * k + kw) * ld;
      const ValidRange r = valid_range(kw * d, s, p, g.width, ow_n);
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t ih = oh * s - p + kh * d;
        if (ih < 0 || ih >= g.height) continue;
        const float* src = row + oh * ow_n;
        float* dst = plane + ih * g.width;  // input column of ow: ow*s + kw*d - p
        const int64_t shift = kw * d - p;
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
