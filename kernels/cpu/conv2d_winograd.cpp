#include "kernels/cpu/conv2d_winograd.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/base/error.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/relu.h"

namespace devmap::cpu {
namespace {

using winograd::kLanes;
using winograd::kToomCook;
using winograd::Vec;
using Table = std::array<float, winograd::kMaxAlpha * winograd::kMaxAlpha>;

// The transforms below are compiled once per CPU path (cpu_dispatch.h) and
// give the same bits on each.

// Vectors pass by reference: returning one by value changes the ABI
// between targets with and without AVX. Loads and stores go through
// may_alias vector types (a memcpy would be split into 16-byte moves).
using VecUnaligned = float __attribute__((vector_size(sizeof(Vec)), aligned(alignof(float)), may_alias));
using VecAligned = float __attribute__((vector_size(sizeof(Vec)), may_alias));

DEVMAP_INLINE void load(Vec& v, const float* p) {
  v = *reinterpret_cast<const VecUnaligned*>(p);
}

// For the transformed tiles, which start on sizeof(Vec) boundaries.
DEVMAP_INLINE void load_aligned(Vec& v, const float* p) {
  v = *reinterpret_cast<const VecAligned*>(p);
}

DEVMAP_INLINE void store_aligned(float* p, const Vec& v) {
  *reinterpret_cast<VecAligned*>(p) = v;
}

// v = the first n (<= kLanes) floats of p, then zeros.
DEVMAP_INLINE void load_partial(Vec& v, const float* p, int64_t n) {
  if (n == kLanes) {
    load(v, p);
    return;
  }
  alignas(sizeof(Vec)) float buf[kLanes] = {};
  std::copy(p, p + n, buf);
  load(v, buf);
}

// Two-vector shuffles with constant lane indices, in GCC's and Clang's spellings.
#if defined(__clang__)
#define DEVMAP_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
using ShuffleMask = int __attribute__((vector_size(kLanes * sizeof(int))));
#define DEVMAP_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, ShuffleMask{__VA_ARGS__})
#endif

// v[l][j] -> v[j][l]: the 8x8 transpose of eight vectors (in-lane unpacks
// and shuffles, then swaps of 128-bit halves on AVX).
DEVMAP_INLINE void transpose8(Vec* v) {
  Vec t[kLanes], u[kLanes];
  for (int p = 0; p < kLanes; p += 2) {
    t[p] = DEVMAP_SHUFFLE(v[p], v[p + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[p + 1] = DEVMAP_SHUFFLE(v[p], v[p + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int p = 0; p < kLanes; p += 4) {
    u[p] = DEVMAP_SHUFFLE(t[p], t[p + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[p + 1] = DEVMAP_SHUFFLE(t[p], t[p + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[p + 2] = DEVMAP_SHUFFLE(t[p + 1], t[p + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[p + 3] = DEVMAP_SHUFFLE(t[p + 1], t[p + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int j = 0; j < 4; ++j) {
    v[j] = DEVMAP_SHUFFLE(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    v[j + 4] = DEVMAP_SHUFFLE(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

// The transformed tiles are read and written as aligned vectors.
void check_aligned(const float* workspace) {
  if (reinterpret_cast<uintptr_t>(workspace) % 64 != 0)
    throw_runtime("winograd: the workspace must start on a 64-byte boundary (executor bug)");
}

[[noreturn]] void unsupported(int kernel) {
  throw_runtime("winograd: no transforms compiled for kernel " + std::to_string(kernel));
}

static_assert(WinogradConvLayout::kVector == kLanes, "the layout pads tiles to whole vectors");
static_assert(WinogradConvLayout::kTile + 5 - 1 <= winograd::kMaxAlpha, "kernel 5 must fit the largest tile");

// Runs `call` with `constexpr int K` set to the kernel size (3, 4 or 5, the
// sizes winograd_unsupported() lets through), then returns.
#define DEVMAP_FOR_KERNEL(kernel, call) \
  switch (kernel) {                     \
    case 3: {                           \
      constexpr int K = 3;              \
      call;                             \
    }                                   \
      return;                           \
    case 4: {                           \
      constexpr int K = 4;              \
      call;                             \
    }                                   \
      return;                           \
    case 5: {                           \
      constexpr int K = 5;              \
      call;                             \
    }                                   \
      return;                           \
    default: unsupported(kernel);       \
  }

// Where the tiles of a group come from: `channels` planes of in_h x in_w per
// sample, zero-padded by `pad` on the top and left (and as far as the tiles
// reach on the bottom and right); tile (ty, tx) reads the extent x extent
// padded pixels from (ty*m, tx*m), m = kTile.
constexpr int64_t kTile = WinogradConvLayout::kTile;

struct TileSource {
  const float* data;  // the group's first sample
  int64_t channels, in_h, in_w, pad;
  int64_t tiles_h, tiles_w;
  int extent;
  int64_t padded_h() const { return (tiles_h - 1) * kTile + extent; }
  int64_t padded_w() const { return (tiles_w - 1) * kTile + extent; }
};

// Tile t of a group, numbered (s * tiles_h + ty) * tiles_w + tx.
struct TileIndex {
  int64_t sample, ty, tx;
  TileIndex(int64_t t, int64_t tiles_h, int64_t tiles_w)
      : sample(t / (tiles_h * tiles_w)), ty(t % (tiles_h * tiles_w) / tiles_w), tx(t % tiles_w) {}
};

// planes[s] = channel c of sample s, zero-padded as src says.
void pad_planes(const TileSource& src, int64_t c, int64_t count, float* planes) {
  const int64_t ph = src.padded_h(), pw = src.padded_w(), plane = src.in_h * src.in_w;
  const int64_t rows = std::min(src.in_h, ph - src.pad), cols = std::min(src.in_w, pw - src.pad);
  for (int64_t s = 0; s < count; ++s) {
    float* dst = planes + s * ph * pw;
    std::fill(dst, dst + ph * pw, 0.0f);
    const float* in = src.data + (s * src.channels + c) * plane;
    for (int64_t ih = 0; ih < rows; ++ih)
      std::memcpy(dst + (ih + src.pad) * pw + src.pad, in + ih * src.in_w, static_cast<size_t>(cols) * sizeof(float));
  }
}

// out[xi * stride + c * tp + t] = (mat * tile_t * mat^T)[xi] for every
// channel c and tile t < tp of `count` samples (t = (s * tiles_h + ty) *
// tiles_w + tx); tiles past the group's are zero. mat is A x E. `planes`
// holds count + 1 padded planes; the last is zeroed here and stands in for
// the missing tiles. Each tile row is read as 8 floats (E <= 8): past the
// last tile that reads into the next plane or, for the zero plane, the
// workspace that follows it, and the extra columns are dropped.
template <int A, int E>
DEVMAP_INLINE void transform_tiles_fixed(const Table& mat, const TileSource& src, int64_t count, int64_t tp,
                                         int64_t stride, float* planes, float* out) {
  const int64_t ph = src.padded_h(), pw = src.padded_w(), per_sample = src.tiles_h * src.tiles_w;
  const int64_t valid = count * per_sample;
  const float* zeros = planes + count * ph * pw;
  std::fill(planes + count * ph * pw, planes + (count + 1) * ph * pw, 0.0f);
  for (int64_t c = 0; c < src.channels; ++c) {
    pad_planes(src, c, count, planes);
    for (int64_t t0 = 0; t0 < tp; t0 += kLanes) {
      const float* b[kLanes];
      for (int64_t l = 0; l < kLanes; ++l) {
        const TileIndex tile(t0 + l, src.tiles_h, src.tiles_w);
        b[l] = t0 + l < valid ? planes + tile.sample * ph * pw + tile.ty * kTile * pw + tile.tx * kTile : zeros;
      }
      Vec in[E * E], res[A * A];
      for (int i = 0; i < E; ++i) {
        Vec rows[kLanes];
        for (int l = 0; l < kLanes; ++l) load(rows[l], b[l] + i * pw);
        transpose8(rows);
        for (int j = 0; j < E; ++j) in[i * E + j] = rows[j];
      }
      winograd::sandwich<A, E>(mat, in, res);
      for (int xi = 0; xi < A * A; ++xi) store_aligned(out + xi * stride + c * tp + t0, res[xi]);
    }
  }
}

// The tiles' input transform (bt of F(4, K), which F(K, 4) shares), or the
// weight gradient's transform of 4x4 output-gradient tiles (g of F(K, 4)).
enum class TileTransform { kInput, kOutputGradient };

DEVMAP_INLINE void transform_tiles_body(TileTransform which, int kernel, const TileSource& src, int64_t count,
                                        int64_t tp, int64_t stride, float* planes, float* out) {
  constexpr int m = WinogradConvLayout::kTile;
  if (which == TileTransform::kInput) {
    DEVMAP_FOR_KERNEL(
        kernel, (transform_tiles_fixed<m + K - 1, m + K - 1>(kToomCook<m, K>.bt, src, count, tp, stride, planes, out)))
  } else {
    DEVMAP_FOR_KERNEL(kernel,
                      (transform_tiles_fixed<m + K - 1, m>(kToomCook<K, m>.g, src, count, tp, stride, planes, out)))
  }
}
DEVMAP_CPU_PATH_DISPATCH(void, transform_tiles,
                         (TileTransform which, int kernel, const TileSource& src, int64_t count, int64_t tp,
                          int64_t stride, float* planes, float* out),
                         (which, kernel, src, count, tp, stride, planes, out))

// The inverse of transform_tiles on the output side: out[s][c] tile (ty,
// tx) = (at * prod_t * at^T) (+ bias[c]), cropped to out_h x out_w, with
// prod_t[xi] at prod[xi * stride + c * tp + t].
struct TileSink {
  float* data;  // the group's first sample
  int64_t channels, out_h, out_w, tiles_h, tiles_w;
};

template <int M, int A>
DEVMAP_INLINE void untransform_tiles_fixed(const Table& at, const float* prod, int64_t count, int64_t tp,
                                           int64_t stride, const float* bias, const TileSink& dst) {
  const int64_t per_sample = dst.tiles_h * dst.tiles_w, valid = count * per_sample, plane = dst.out_h * dst.out_w;
  for (int64_t c = 0; c < dst.channels; ++c) {
    const float b = bias != nullptr ? bias[c] : 0.0f;
    for (int64_t t0 = 0; t0 < tp && t0 < valid; t0 += kLanes) {
      Vec in[A * A], res[M * M];
      for (int xi = 0; xi < A * A; ++xi) load_aligned(in[xi], prod + xi * stride + c * tp + t0);
      winograd::sandwich<M, A>(at, in, res);
      alignas(sizeof(Vec)) float tiles[M * M][kLanes];
      std::memcpy(tiles, res, sizeof tiles);
      for (int64_t l = 0; l < kLanes && t0 + l < valid; ++l) {
        const TileIndex tile(t0 + l, dst.tiles_h, dst.tiles_w);
        float* out = dst.data + (tile.sample * dst.channels + c) * plane + tile.ty * M * dst.out_w + tile.tx * M;
        const int64_t rows = std::min<int64_t>(M, dst.out_h - tile.ty * M);
        const int64_t cols = std::min<int64_t>(M, dst.out_w - tile.tx * M);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) out[i * dst.out_w + j] = tiles[i * M + j][l] + b;
      }
    }
  }
}

DEVMAP_INLINE void untransform_tiles_body(int kernel, const float* prod, int64_t count, int64_t tp, int64_t stride,
                                          const float* bias, const TileSink& dst) {
  constexpr int m = WinogradConvLayout::kTile;
  DEVMAP_FOR_KERNEL(kernel,
                    (untransform_tiles_fixed<m, m + K - 1>(kToomCook<m, K>.at, prod, count, tp, stride, bias, dst)))
}
DEVMAP_CPU_PATH_DISPATCH(void, untransform_tiles,
                         (int kernel, const float* prod, int64_t count, int64_t tp, int64_t stride, const float* bias,
                          const TileSink& dst),
                         (kernel, prod, count, tp, stride, bias, dst))

// u[xi * stride + f] = (g * w_(co,ci) * g^T)[xi] for the filters [f0, f0 + n)
// (f = co * cin + ci) with w_(co,ci) = W[co][ci], or, when `swapped`,
// W[ci][co] turned by 180 degrees (the input gradient's filters). W is
// [O][C][R][R]; g is A x R.
template <int A, int R>
DEVMAP_INLINE void transform_filters_fixed(const Table& g, const float* w, int64_t channels, int64_t stride,
                                           bool swapped, int64_t cin, int64_t f0, int64_t n, float* u) {
  alignas(sizeof(Vec)) float gathered[R * R][kLanes] = {};
  for (int64_t l = 0; l < n; ++l) {
    const int64_t co = (f0 + l) / cin, ci = (f0 + l) % cin;
    const float* src = w + (swapped ? ci * channels + co : co * channels + ci) * R * R;
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < R; ++j)
        gathered[i * R + j][l] = swapped ? src[(R - 1 - i) * R + (R - 1 - j)] : src[i * R + j];
  }
  Vec in[R * R], res[A * A];
  std::memcpy(in, gathered, sizeof in);
  winograd::sandwich<A, R>(g, in, res);
  alignas(sizeof(Vec)) float lanes[A * A][kLanes];
  std::memcpy(lanes, res, sizeof lanes);
  for (int xi = 0; xi < A * A; ++xi) std::copy(lanes[xi], lanes[xi] + n, u + xi * stride + f0);
}

DEVMAP_INLINE void transform_filter_block_body(int kernel, const float* w, int64_t channels, int64_t stride,
                                               bool swapped, int64_t cin, int64_t f0, int64_t n, float* u) {
  constexpr int m = WinogradConvLayout::kTile;
  DEVMAP_FOR_KERNEL(
      kernel, (transform_filters_fixed<m + K - 1, K>(kToomCook<m, K>.g, w, channels, stride, swapped, cin, f0, n, u)))
}
DEVMAP_CPU_PATH_DISPATCH(void, transform_filter_block,
                         (int kernel, const float* w, int64_t channels, int64_t stride, bool swapped, int64_t cin,
                          int64_t f0, int64_t n, float* u),
                         (kernel, w, channels, stride, swapped, cin, f0, n, u))

void transform_filters(int kernel, ThreadPool* pool, const float* w, int64_t filters, int64_t channels, bool swapped,
                       float* u) {
  const int64_t items = filters * channels, cin = swapped ? filters : channels;
  const int64_t stride = WinogradConvLayout::point_stride(filters, channels);
  parallel_for(pool, (items + kLanes - 1) / kLanes, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t f0 = b * kLanes;
      transform_filter_block(kernel, w, channels, stride, swapped, cin, f0, std::min<int64_t>(kLanes, items - f0), u);
    }
  });
}

// dW [+]= at * (sum over lanes, in order, of the lane's dW~) * at^T for the
// (o, c) pairs [f0, f0 + n); lane l's dW~[xi][f] at parts[l * stride +
// xi * point + f].
template <int K, int A>
DEVMAP_INLINE void finish_weight_block(const Table& at, const float* parts, int64_t stride, int64_t lanes,
                                       int64_t point, int64_t f0, int64_t n, bool accumulate, float* dw) {
  Vec in[A * A], res[K * K];
  for (int xi = 0; xi < A * A; ++xi) {
    load_partial(in[xi], parts + xi * point + f0, n);
    for (int64_t l = 1; l < lanes; ++l) {
      Vec part;
      load_partial(part, parts + l * stride + xi * point + f0, n);
      in[xi] += part;
    }
  }
  winograd::sandwich<K, A>(at, in, res);
  alignas(sizeof(Vec)) float lanes_out[K * K][kLanes];
  std::memcpy(lanes_out, res, sizeof lanes_out);
  for (int64_t l = 0; l < n; ++l) {
    float* dst = dw + (f0 + l) * K * K;
    for (int k = 0; k < K * K; ++k) dst[k] = accumulate ? dst[k] + lanes_out[k][l] : lanes_out[k][l];
  }
}

DEVMAP_INLINE void finish_weights_body(int kernel, const float* parts, int64_t stride, int64_t lanes, int64_t point,
                                       int64_t f0, int64_t n, bool accumulate, float* dw) {
  constexpr int m = WinogradConvLayout::kTile;
  DEVMAP_FOR_KERNEL(kernel, (finish_weight_block<K, m + K - 1>(kToomCook<K, m>.at, parts, stride, lanes, point, f0, n,
                                                               accumulate, dw)))
}
DEVMAP_CPU_PATH_DISPATCH(void, finish_weights,
                         (int kernel, const float* parts, int64_t stride, int64_t lanes, int64_t point, int64_t f0,
                          int64_t n, bool accumulate, float* dw),
                         (kernel, parts, stride, lanes, point, f0, n, accumulate, dw))

}  // namespace

WinogradConv::WinogradConv(const ConvGeometry& g) : g_(g), lay_(g), kernel_(static_cast<int>(g.kernel)) {}

void WinogradConv::correlate(const Pass& p, ThreadPool* pool, int64_t batch, int64_t lanes, const float* in,
                             const float* bias, float* out, float* workspace, bool relu_output) const {
  const float* u = workspace;  // from transform_filters
  const int64_t points = int64_t{lay_.alpha} * lay_.alpha, in_plane = p.in_h * p.in_w;
  const int64_t out_plane = p.out_h * p.out_w;
  const int64_t su = WinogradConvLayout::point_stride(p.out_channels, p.in_channels);
  parallel_for(pool, lanes, [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      float* ws = workspace + lay_.shared + l * lay_.lane;
      const auto [begin, end] = split_range(batch, lanes, l);
      for (int64_t n0 = begin; n0 < end; n0 += lay_.group) {
        const int64_t count = std::min(lay_.group, end - n0), tp = round_up(count * p.tiles(), kLanes);
        const int64_t sv = WinogradConvLayout::point_stride(p.in_channels, tp);
        const int64_t sp = WinogradConvLayout::point_stride(p.out_channels, tp);
        float* v = ws + lay_.transformed;
        float* prod = v + points * sv;
        const TileSource src{
            in + n0 * p.in_channels * in_plane, p.in_channels, p.in_h, p.in_w, p.pad, p.tiles_h, p.tiles_w, lay_.alpha};
        transform_tiles(TileTransform::kInput, kernel_, src, count, tp, sv, ws + lay_.planes, v);
        for (int64_t xi = 0; xi < points; ++xi)
          sgemm(false, false, p.out_channels, tp, p.in_channels, u + xi * su, p.in_channels, v + xi * sv, tp, 0.0f,
                prod + xi * sp, tp);
        const TileSink dst{
            out + n0 * p.out_channels * out_plane, p.out_channels, p.out_h, p.out_w, p.tiles_h, p.tiles_w};
        untransform_tiles(kernel_, prod, count, tp, sp, bias, dst);
        if (relu_output) relu_in_place(dst.data, count * p.out_channels * out_plane);
      }
    }
  });
}

void WinogradConv::forward(ThreadPool* pool, int64_t batch, int64_t lanes, const float* x, const float* w,
                           const float* bias, float* y, float* workspace, bool relu_output) const {
  check_aligned(workspace);
  transform_filters(kernel_, pool, w, g_.filters, g_.channels, /*swapped=*/false, workspace);
  const Pass p{g_.channels, g_.height, g_.width,     g_.padding,  g_.filters,
               g_.out_h,    g_.out_w,  lay_.tiles_h, lay_.tiles_w};
  correlate(p, pool, batch, lanes, x, bias, y, workspace, relu_output);
}

void WinogradConv::backward_input(ThreadPool* pool, int64_t batch, int64_t lanes, const float* dy, const float* w,
                                  float* dx, float* workspace) const {
  check_aligned(workspace);
  transform_filters(kernel_, pool, w, g_.filters, g_.channels, /*swapped=*/true, workspace);
  const Pass p{g_.filters, g_.out_h,        g_.out_w,       g_.kernel - 1 - g_.padding, g_.channels, g_.height,
               g_.width,   lay_.dx_tiles_h, lay_.dx_tiles_w};
  correlate(p, pool, batch, lanes, dy, nullptr, dx, workspace, false);
}

void WinogradConv::backward_weights(ThreadPool* pool, int64_t batch, int64_t lanes, const float* x, const float* dy,
                                    float* dw, bool accumulate, float* workspace) const {
  check_aligned(workspace);
  const int64_t points = int64_t{lay_.alpha} * lay_.alpha, o_n = g_.filters, c_n = g_.channels;
  const int64_t items = o_n * c_n, per_sample = lay_.tiles_h * lay_.tiles_w;
  const int64_t sw = WinogradConvLayout::point_stride(o_n, c_n);
  parallel_for(pool, lanes, [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l) {
      float* ws = workspace + lay_.shared + l * lay_.lane;
      const auto [begin, end] = split_range(batch, lanes, l);
      for (int64_t n0 = begin; n0 < end; n0 += lay_.group) {
        const int64_t count = std::min(lay_.group, end - n0), tp = round_up(count * per_sample, kLanes);
        const int64_t sv = WinogradConvLayout::point_stride(c_n, tp), sd = WinogradConvLayout::point_stride(o_n, tp);
        float* v = ws + lay_.transformed;
        float* d = v + points * sv;
        const TileSource xs{
            x + n0 * c_n * g_.in_plane(), c_n, g_.height, g_.width, g_.padding, lay_.tiles_h, lay_.tiles_w, lay_.alpha};
        transform_tiles(TileTransform::kInput, kernel_, xs, count, tp, sv, ws + lay_.planes, v);
        const TileSource dys{dy + n0 * o_n * g_.positions(), o_n, g_.out_h, g_.out_w, 0, lay_.tiles_h, lay_.tiles_w,
                             WinogradConvLayout::kTile};
        transform_tiles(TileTransform::kOutputGradient, kernel_, dys, count, tp, sd, ws + lay_.planes, d);
        for (int64_t xi = 0; xi < points; ++xi)
          sgemm(false, true, o_n, c_n, tp, d + xi * sd, tp, v + xi * sv, tp, n0 > begin ? 1.0f : 0.0f,
                ws + lay_.dw + xi * sw, c_n);
      }
    }
  });
  // dW [+]= at * (sum of the lanes' dW~, in lane order) * at^T, per (o, c).
  parallel_for(pool, (items + kLanes - 1) / kLanes, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t f0 = b * kLanes;
      finish_weights(kernel_, workspace + lay_.shared + lay_.dw, lay_.lane, lanes, sw, f0,
                     std::min<int64_t>(kLanes, items - f0), accumulate, dw);
    }
  });
}

}  // namespace devmap::cpu
