#include "kernels/cpu/max_pool2d.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/graph/ops/pool_geometry.h"
#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/max_pool2x2_vectors.h"
#include "kernels/cpu/parallel.h"

namespace devmap::cpu {
namespace {

// a replaces b as the running maximum: a is larger, or a is the first NaN.
// Written as plain comparisons so the compiler can make it branch-free.
DEVMAP_INLINE bool replaces(float a, float b) {
  return (a > b) | ((a != a) & (b == b));
}

constexpr int64_t kSegment = 256;  // output columns per backward pass (stack buffers)

struct PoolGeometry : ops::PoolGeometry {
  PoolGeometry(const Node& node, int64_t batch) : ops::PoolGeometry(ops::pool_geometry(node, batch)) {}
  int64_t in_plane() const { return height * width; }
  int64_t out_plane() const { return out_h * out_w; }

  // Input rows [lo, hi) of output row oh's window, clipped to the plane.
  std::pair<int64_t, int64_t> rows(int64_t oh) const {
    const int64_t h0 = oh * stride - padding;
    return {std::max<int64_t>(h0, 0), std::min(h0 + kernel, height)};
  }
  // Output columns [lo, hi) whose window column kw lies inside the plane.
  std::pair<int64_t, int64_t> valid_columns(int64_t kw) const {
    const int64_t first = padding - kw, last = width - 1 + padding - kw;
    int64_t lo = first <= 0 ? 0 : (first + stride - 1) / stride;
    int64_t hi = last < 0 ? 0 : std::min(out_w, last / stride + 1);
    lo = std::min(lo, out_w);
    return {lo, std::max(lo, hi)};
  }
};

// The maxima of output row oh's windows for output columns [c0, c1) into
// m[0, c1-c0), accumulated a window row and column at a time over the whole
// segment (which vectorises over ow). Starting from -inf gives the value of
// the first-maximum rule, since every window holds at least one real pixel.
void row_max(const PoolGeometry& g, const float* in, int64_t oh, int64_t c0, int64_t c1, float* m) {
  std::fill(m, m + (c1 - c0), -std::numeric_limits<float>::infinity());
  const auto [h_lo, h_hi] = g.rows(oh);
  for (int64_t ih = h_lo; ih < h_hi; ++ih) {
    const float* in_row = in + ih * g.width;
    for (int64_t kw = 0; kw < g.kernel; ++kw) {
      const auto [lo, hi] = g.valid_columns(kw);
      const int64_t shift = kw - g.padding;  // input column of ow: ow*stride + shift
      for (int64_t ow = std::max(lo, c0); ow < std::min(hi, c1); ++ow) {
        const float v = in_row[ow * g.stride + shift], cur = m[ow - c0];
        m[ow - c0] = replaces(v, cur) ? v : cur;
      }
    }
  }
}

// For output columns [c0, c1) of row oh, whose window maxima are m: the plane
// index of each window's first element equal to its maximum (or its first
// NaN) in row-major window order, which is the element the first-maximum
// rule picks. The window is scanned backwards and every match overwrites, so
// the last write is the first match; the blend is arithmetic so that it
// compiles branch-free (matches are unpredictable).
void row_argmax(const PoolGeometry& g, const float* in, int64_t oh, int64_t c0, int64_t c1, const float* m,
                int64_t* index) {
  const auto [h_lo, h_hi] = g.rows(oh);
  for (int64_t ih = h_hi - 1; ih >= h_lo; --ih) {
    const float* in_row = in + ih * g.width;
    for (int64_t kw = g.kernel - 1; kw >= 0; --kw) {
      const auto [lo, hi] = g.valid_columns(kw);
      const int64_t shift = kw - g.padding;
      for (int64_t ow = std::max(lo, c0); ow < std::min(hi, c1); ++ow) {
        const int64_t j = ow - c0, col = ow * g.stride + shift;
        const float v = in_row[col], best = m[j];
        const int64_t match = -static_cast<int64_t>((v == best) | ((v != v) & (best != best)));  // all ones or 0
        index[j] = ((ih * g.width + col) & match) | (index[j] & ~match);
      }
    }
  }
}

// The 2x2, stride 2, no padding case (the common one): windows do not
// overlap, so the backward pass writes each input element exactly once.
bool is_2x2(const PoolGeometry& g) {
  return g.kernel == 2 && g.stride == 2 && g.padding == 0;
}

// 1 where v is m's element under the first-maximum rule (equal, or both NaN).
DEVMAP_INLINE bool matches(float v, float m) {
  return (v == m) | ((v != v) & (m != m));
}

// gr where take, else +0.0f, by a bitwise select: no build branches on the
// matches, which the data decides (rows shorter than a vector run scalar).
DEVMAP_INLINE float keep_if(bool take, float gr) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(gr) & (0u - static_cast<uint32_t>(take)));
}

// Whether an element keeps its gradient through the relu before the pool:
// always without one, else where it is above zero.
DEVMAP_INLINE bool kept(bool relu, float v) {
  return !relu | (v > 0.0f);
}

DEVMAP_INLINE float pick(float v, float m) {
  return replaces(v, m) ? v : m;
}

// One plane: the first maximum of a, b (row 0), c, d (row 1) of each window,
// folded in that order one element per pass (single-step loops vectorise).
DEVMAP_INLINE void forward_2x2_body(const PoolGeometry& g, const float* in, float* out) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = in + 2 * oh * g.width;
    const float* r1 = r0 + g.width;
    float* o = out + oh * g.out_w;
    // Starting from a equals the rule's result after a, starting from -inf.
    for (int64_t ow = 0; ow < g.out_w; ++ow) o[ow] = pick(r0[2 * ow + 1], r0[2 * ow]);
    for (int64_t ow = 0; ow < g.out_w; ++ow) o[ow] = pick(r1[2 * ow], o[ow]);
    for (int64_t ow = 0; ow < g.out_w; ++ow) o[ow] = pick(r1[2 * ow + 1], o[ow]);
  }
}
void forward_2x2_baseline(const PoolGeometry& g, const float* in, float* out) {
  forward_2x2_body(g, in, out);
}

// One plane of dx: dy goes to the first element of each window that matches
// its maximum m, every other element (and rows/columns no window covers) gets
// 0; with `relu`, so does every element not above zero (the relu's backward).
DEVMAP_INLINE void backward_2x2_body(const PoolGeometry& g, const float* in, const float* m, const float* d_out,
                                     float* d_in, bool relu) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = in + 2 * oh * g.width;
    const float* r1 = r0 + g.width;
    float* d0 = d_in + 2 * oh * g.width;
    float* d1 = d0 + g.width;
    const float* mo = m + oh * g.out_w;
    const float* go = d_out + oh * g.out_w;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const float mx = mo[ow], gr = go[ow];
      const bool ma = matches(r0[2 * ow], mx);
      const bool mb = !ma & matches(r0[2 * ow + 1], mx);
      const bool mc = !(ma | mb) & matches(r1[2 * ow], mx);
      const bool md = !(ma | mb | mc);
      d0[2 * ow] = keep_if(ma & kept(relu, r0[2 * ow]), gr);
      d0[2 * ow + 1] = keep_if(mb & kept(relu, r0[2 * ow + 1]), gr);
      d1[2 * ow] = keep_if(mc & kept(relu, r1[2 * ow]), gr);
      d1[2 * ow + 1] = keep_if(md & kept(relu, r1[2 * ow + 1]), gr);
    }
    for (int64_t w = 2 * g.out_w; w < g.width; ++w) d0[w] = d1[w] = 0.0f;  // odd width
  }
  for (int64_t h = 2 * g.out_h; h < g.height; ++h) std::fill(d_in + h * g.width, d_in + (h + 1) * g.width, 0.0f);
}
void backward_2x2_baseline(const PoolGeometry& g, const float* in, const float* m, const float* d_out, float* d_in,
                           bool relu) {
  backward_2x2_body(g, in, m, d_out, d_in, relu);
}

// The 2x2 loops per path: the AVX-512 and AVX2 paths run
// max_pool2x2_vectors.h's intrinsics (whole rows in masked vectors), the
// baseline the body above.
Plane2x2 plane_2x2(const PoolGeometry& g) {
  return Plane2x2{g.height, g.width, g.out_h, g.out_w};
}
void forward_2x2(const PoolGeometry& g, const float* in, float* out) {
  const CpuPath path = active_cpu_path();
#if defined(__x86_64__) && defined(__GNUC__)
  if (path == CpuPath::kAvx512) return max_pool2x2_forward_avx512(plane_2x2(g), in, out);
  if (path == CpuPath::kAvx2) return max_pool2x2_forward_avx2(plane_2x2(g), in, out);
#endif
  forward_2x2_baseline(g, in, out);
}
void backward_2x2(const PoolGeometry& g, const float* in, const float* m, const float* d_out, float* d_in, bool relu) {
  const CpuPath path = active_cpu_path();
#if defined(__x86_64__) && defined(__GNUC__)
  if (path == CpuPath::kAvx512) return max_pool2x2_backward_avx512(plane_2x2(g), in, m, d_out, d_in, relu);
  if (path == CpuPath::kAvx2) return max_pool2x2_backward_avx2(plane_2x2(g), in, m, d_out, d_in, relu);
#endif
  backward_2x2_baseline(g, in, m, d_out, d_in, relu);
}

}  // namespace

std::string MaxPool2dKernel::implementation(const Node& node) const {
  // Only the 2x2, stride 2 case has per-path builds; the general windows
  // run the baseline build.
  const PoolGeometry g(node, 1);
  return is_2x2(g) ? path_kernel_name("max_pool2x2") : std::string("max_pool2d/baseline");
}

void MaxPool2dKernel::forward(const ForwardArgs& args) {
  const PoolGeometry g(args.node, args.inputs[0].shape[0]);
  const float* x = args.inputs[0].data;
  float* y = args.output.data;
  if (is_2x2(g)) {
    parallel_for(args.ctx.pool, g.planes, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) forward_2x2(g, x + pl * g.in_plane(), y + pl * g.out_plane());
    });
    return;
  }
  parallel_for(args.ctx.pool, g.planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl)
      for (int64_t oh = 0; oh < g.out_h; ++oh)
        row_max(g, x + pl * g.in_plane(), oh, 0, g.out_w, y + pl * g.out_plane() + oh * g.out_w);
  });
}

void MaxPool2dKernel::backward(const BackwardArgs& args) {
  float* dx = args.d_inputs[0].data;
  if (dx == nullptr) return;
  const PoolGeometry g(args.node, args.d_output.shape[0]);
  const float* x = args.inputs[0].data;
  const float* dy = args.d_output.data;
  const float* y = args.output.data;  // optional: recomputed when null
  assert(x != nullptr && "max_pool2d keeps its input for backward");
  const bool relu = args.relu_input_gradient;
  if (is_2x2(g) && y != nullptr) {
    parallel_for(args.ctx.pool, g.planes, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl)
        backward_2x2(g, x + pl * g.in_plane(), y + pl * g.out_plane(), dy + pl * g.out_plane(), dx + pl * g.in_plane(),
                     relu);
    });
    return;
  }
  parallel_for(args.ctx.pool, g.planes, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const float* in = x + pl * g.in_plane();
      const float* d_out = dy + pl * g.out_plane();
      float* d_in = dx + pl * g.in_plane();
      std::fill(d_in, d_in + g.in_plane(), 0.0f);
      // Output rows in segments of kSegment columns; gradients add in output order.
      float m_buffer[kSegment];
      int64_t index[kSegment];
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t c0 = 0; c0 < g.out_w; c0 += kSegment) {
          const int64_t c1 = std::min(c0 + kSegment, g.out_w);
          const float* m = m_buffer;
          if (y != nullptr) {
            m = y + pl * g.out_plane() + oh * g.out_w + c0;  // the forward's maxima, when the executor kept them
          } else {
            row_max(g, in, oh, c0, c1, m_buffer);
          }
          row_argmax(g, in, oh, c0, c1, m, index);
          for (int64_t j = 0; j < c1 - c0; ++j) d_in[index[j]] += d_out[oh * g.out_w + c0 + j];
        }
      }
      if (relu)  // the relu's backward, once the windows' gradients are summed
        for (int64_t i = 0; i < g.in_plane(); ++i) d_in[i] = in[i] > 0.0f ? d_in[i] : 0.0f;
    }
  });
}

}  // namespace devmap::cpu
