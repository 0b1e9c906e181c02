// The per-element logic of the hand-written max pooling kernels, host and
// device (see host_device.h): the CPU kernel's rules (kernels/cpu/max_pool2d.h):
// padding counts as -inf, a window's chosen element is its first maximum in
// row-major order, a NaN wins (the first NaN).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/graph/ops/pool_geometry.h"
#include "kernels/cuda/host_device.h"

namespace devmap::cuda {

using PoolGeometry = devmap::ops::PoolGeometry;

namespace pool {

DEVMAP_HD inline int64_t lo(int64_t a, int64_t b) {
  return a < b ? a : b;
}
DEVMAP_HD inline int64_t hi(int64_t a, int64_t b) {
  return a < b ? b : a;
}

// a replaces b as the running maximum: a is larger, or a is the first NaN.
DEVMAP_HD inline bool replaces(float a, float b) {
  return (a > b) || (a != a && b == b);
}

// v is the window's chosen value m (equal, or both NaN).
DEVMAP_HD inline bool matches(float v, float m) {
  return v == m || (v != v && m != m);
}

// The maximum of window (oh, ow) of one plane, by the first-maximum rule.
DEVMAP_HD inline float window_max(const PoolGeometry& g, const float* plane, int64_t oh, int64_t ow) {
  float m = -INFINITY;
  const int64_t h0 = oh * g.stride - g.padding, w0 = ow * g.stride - g.padding;
  for (int64_t ih = hi(h0, 0); ih < lo(h0 + g.kernel, g.height); ++ih)
    for (int64_t iw = hi(w0, 0); iw < lo(w0 + g.kernel, g.width); ++iw) {
      const float v = plane[ih * g.width + iw];
      if (replaces(v, m)) m = v;
    }
  return m;
}

// The plane index of window (oh, ow)'s first element that matches m (-1: none).
DEVMAP_HD inline int64_t window_choice(const PoolGeometry& g, const float* plane, int64_t oh, int64_t ow, float m) {
  const int64_t h0 = oh * g.stride - g.padding, w0 = ow * g.stride - g.padding;
  for (int64_t ih = hi(h0, 0); ih < lo(h0 + g.kernel, g.height); ++ih)
    for (int64_t iw = hi(w0, 0); iw < lo(w0 + g.kernel, g.width); ++iw)
      if (matches(plane[ih * g.width + iw], m)) return ih * g.width + iw;
  return -1;
}

// The first output index whose window reaches input position `pos`:
// ceil((pos + padding - kernel + 1) / stride), at least 0.
DEVMAP_HD inline int64_t first_window(int64_t pos, const PoolGeometry& g) {
  const int64_t a = pos + g.padding - g.kernel + 1;
  return a <= 0 ? 0 : (a + g.stride - 1) / g.stride;
}

// y[i] for output element i of the whole tensor.
DEVMAP_HD inline float forward_element(const PoolGeometry& g, const float* x, int64_t i) {
  const int64_t out_plane = g.out_h * g.out_w, pl = i / out_plane, r = i % out_plane;
  return window_max(g, x + pl * g.height * g.width, r / g.out_w, r % g.out_w);
}

// dx[i] for input element i: the dy of every window whose chosen element it
// is, added in output order (oh, then ow), the order of the CPU kernel's
// additions. y (the forward output) gives the maxima; null: recomputed.
DEVMAP_HD inline float backward_element(const PoolGeometry& g, const float* x, const float* y, const float* dy,
                                        int64_t i) {
  const int64_t in_plane = g.height * g.width, out_plane = g.out_h * g.out_w;
  const int64_t pl = i / in_plane, pos = i % in_plane, h = pos / g.width, w = pos % g.width;
  const float* plane = x + pl * in_plane;
  const int64_t oh_end = lo(g.out_h, (h + g.padding) / g.stride + 1);
  const int64_t ow_end = lo(g.out_w, (w + g.padding) / g.stride + 1);
  float acc = 0.0f;
  for (int64_t oh = first_window(h, g); oh < oh_end; ++oh)
    for (int64_t ow = first_window(w, g); ow < ow_end; ++ow) {
      const int64_t o = pl * out_plane + oh * g.out_w + ow;
      const float m = y != nullptr ? y[o] : window_max(g, plane, oh, ow);
      if (window_choice(g, plane, oh, ow, m) == pos) acc += dy[o];
    }
  return acc;
}

}  // namespace pool
}  // namespace devmap::cuda
