#include "kernels/cpu/avg_pool2d.h"

#include <algorithm>

#include "core/graph/ops/pool_geometry.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

struct AvgPoolGeometry : ops::PoolGeometry {
  AvgPoolGeometry(const Node& node, int64_t batch) : ops::PoolGeometry(ops::pool_geometry(node, batch)) {}
  int64_t in_plane() const { return height * width; }
  int64_t out_plane() const { return out_h * out_w; }
  // The first output index whose window reaches input position pos:
  // ceil((pos + padding - kernel + 1) / stride), at least 0.
  int64_t first_window(int64_t pos) const {
    const int64_t a = pos + padding - kernel + 1;
    return a <= 0 ? 0 : (a + stride - 1) / stride;
  }
};

}  // namespace

void AvgPool2dKernel::forward(const ForwardArgs& args) {
  const AvgPoolGeometry g(args.node, args.inputs[0].shape[0]);
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  const float area = static_cast<float>(g.kernel * g.kernel);
  parallel_for(args.ctx.pool, g.planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const float* plane = x + pl * g.in_plane();
      float* out = y + pl * g.out_plane();
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t h0 = oh * g.stride - g.padding;
        const int64_t h_lo = std::max<int64_t>(h0, 0), h_hi = std::min(h0 + g.kernel, g.height);
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const int64_t w0 = ow * g.stride - g.padding;
          const int64_t w_lo = std::max<int64_t>(w0, 0), w_hi = std::min(w0 + g.kernel, g.width);
          float acc = 0.0f;
          for (int64_t ih = h_lo; ih < h_hi; ++ih)
            for (int64_t iw = w_lo; iw < w_hi; ++iw) acc += plane[ih * g.width + iw];
          out[oh * g.out_w + ow] = acc / area;
        }
      }
    }
  });
}

void AvgPool2dKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const AvgPoolGeometry g(args.node, args.d_output.shape[0]);
  const float* dy = args.d_output.data;
  const float area = static_cast<float>(g.kernel * g.kernel);
  parallel_for(args.ctx.pool, g.planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const float* d_out = dy + pl * g.out_plane();
      float* d_in = dx + pl * g.in_plane();
      for (int64_t h = 0; h < g.height; ++h) {
        const int64_t oh_lo = g.first_window(h), oh_hi = std::min(g.out_h, (h + g.padding) / g.stride + 1);
        for (int64_t w = 0; w < g.width; ++w) {
          const int64_t ow_lo = g.first_window(w), ow_hi = std::min(g.out_w, (w + g.padding) / g.stride + 1);
          float acc = 0.0f;
          for (int64_t oh = oh_lo; oh < oh_hi; ++oh)
            for (int64_t ow = ow_lo; ow < ow_hi; ++ow) acc += d_out[oh * g.out_w + ow];
          d_in[h * g.width + w] = acc / area;
        }
      }
    }
  });
}

}  // namespace devmap::cpu
