// The per-element logic of the hand-written average pooling kernels, host
// and device (see host_device.h): the CPU kernels' operations in the CPU
// kernels' order (kernels/cpu/avg_pool2d.h, kernels/cpu/global_avg_pool.h),
// so the GPU gives the CPU's bits.
#pragma once

#include <cstdint>

#include "kernels/cuda/host_device.h"
#include "kernels/cuda/pool_logic.h"

namespace devmap::cuda::avg_pool {

// y[i] for output element i: the window's in-plane pixels added in
// row-major order from 0, over kernel*kernel (padding counts as zeros).
DEVMAP_HD inline float forward_element(const PoolGeometry& g, const float* x, int64_t i) {
  const int64_t out_plane = g.out_h * g.out_w, pl = i / out_plane, r = i % out_plane;
  const float* plane = x + pl * g.height * g.width;
  const int64_t h0 = (r / g.out_w) * g.stride - g.padding, w0 = (r % g.out_w) * g.stride - g.padding;
  float acc = 0.0f;
  for (int64_t ih = pool::hi(h0, 0); ih < pool::lo(h0 + g.kernel, g.height); ++ih)
    for (int64_t iw = pool::hi(w0, 0); iw < pool::lo(w0 + g.kernel, g.width); ++iw) acc += plane[ih * g.width + iw];
  return acc / static_cast<float>(g.kernel * g.kernel);
}

// dx[i] for input element i: the dy of every window covering it, added in
// output order (oh, then ow) from 0, over kernel*kernel.
DEVMAP_HD inline float backward_element(const PoolGeometry& g, const float* dy, int64_t i) {
  const int64_t in_plane = g.height * g.width, out_plane = g.out_h * g.out_w;
  const int64_t pl = i / in_plane, pos = i % in_plane, h = pos / g.width, w = pos % g.width;
  const float* d_out = dy + pl * out_plane;
  const int64_t oh_end = pool::lo(g.out_h, (h + g.padding) / g.stride + 1);
  const int64_t ow_end = pool::lo(g.out_w, (w + g.padding) / g.stride + 1);
  float acc = 0.0f;
  for (int64_t oh = pool::first_window(h, g); oh < oh_end; ++oh)
    for (int64_t ow = pool::first_window(w, g); ow < ow_end; ++ow) acc += d_out[oh * g.out_w + ow];
  return acc / static_cast<float>(g.kernel * g.kernel);
}

// global_avg_pool y[pl]: the plane's sum in double in reduce.h's order
// (element j to accumulator j % 8, accumulators added pairwise), over area.
DEVMAP_HD inline float global_forward_element(const float* x, int64_t area, int64_t pl) {
  const float* p = x + pl * area;
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 8 <= area; j += 8)
    for (int k = 0; k < 8; ++k) acc[k] += static_cast<double>(p[j + k]);
  for (int k = 0; j < area; ++j, ++k) acc[k] += static_cast<double>(p[j]);
  const double sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  return static_cast<float>(sum / static_cast<double>(area));
}

// global_avg_pool dx[i] = dy[its plane] / area, in float.
DEVMAP_HD inline float global_backward_element(const float* dy, int64_t area, int64_t i) {
  return dy[i / area] / static_cast<float>(area);
}

}  // namespace devmap::cuda::avg_pool
