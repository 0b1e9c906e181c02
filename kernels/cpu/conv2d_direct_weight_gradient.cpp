// The fused multiply-adds are explicit (_mm256_fmadd_ps), so the chains do
// not depend on the compiler contracting `a * b + c`. The AVX-512 path runs
// this AVX2 build: the same eight-lane instructions, the same bits.
#include "kernels/cpu/conv2d_direct_weight_gradient.h"

#include <algorithm>
#include <vector>

#include "core/base/error.h"
#include "core/exec/cpu_path.h"
#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/parallel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DEVMAP_DIRECT_WEIGHT_GRADIENT 1
#endif

namespace devmap::cpu {

bool conv_direct_weight_gradient_runs(const ConvGeometry& g) {
#ifdef DEVMAP_DIRECT_WEIGHT_GRADIENT
  const CpuPath path = active_cpu_path();
  return (path == CpuPath::kAvx2 || path == CpuPath::kAvx512) && g.groups == 1 &&
         g.channels <= kDirectWeightGradientMaxChannels && g.positions() > 0;
#else
  (void)g;
  return false;
#endif
}

#ifdef DEVMAP_DIRECT_WEIGHT_GRADIENT
namespace {

constexpr int kLanes = 8;
constexpr int kBlockFilters = 4;  // filters per register block
constexpr int kBlockTaps = 3;     // taps per register block
// The samples whose columns are made at once stay at or under this many
// bytes (at least one sample), about a core's L2.
constexpr int64_t kGroupBytes = int64_t{256} << 10;

// The columns of a group of samples: per sample, `taps` rows of `ld`
// floats, row t holding x's value under tap t at every output position
// (im2col.h) and zeros past the positions.
struct Columns {
  int64_t taps = 0, positions = 0, ld = 0;
  explicit Columns(const ConvGeometry& g)
      : taps(g.patch()), positions(g.positions()), ld((g.positions() + kLanes - 1) / kLanes * kLanes) {}
  int64_t sample() const { return taps * ld; }
};

// `buffer` (one of the calling thread's) grown to at least `floats`.
float* thread_buffer(std::vector<float>& buffer, int64_t floats) {
  if (static_cast<int64_t>(buffer.size()) < floats) buffer.resize(static_cast<size_t>(floats));
  return buffer.data();
}

// Samples [n0, n0 + count) into `cols`, a (sample, channel) plane a task.
void make_columns(ThreadPool* pool, const DirectWeightGradient& op, const Columns& cols, int64_t n0, int64_t count,
                  float* out) {
  const ConvGeometry& g = *op.geometry;
  const int64_t kk = g.kernel * g.kernel;
  parallel_for(pool, count * g.channels, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t n = p / g.channels, c = p % g.channels;
      float* rows = out + n * cols.sample() + c * kk * cols.ld;
      im2col_plane(g, op.x + ((n0 + n) * g.channels + c) * g.in_plane(), rows, cols.ld);
      for (int64_t t = 0; t < kk; ++t) std::fill(rows + t * cols.ld + cols.positions, rows + (t + 1) * cols.ld, 0.0f);
    }
  });
}

// acc[o][t] += dy's 8 positions from `d` (filter o's `plane` floats after)
// times the columns' from `x + t * ld`; kTail: dy's lanes past tail_mask
// are zero.
template <int MO, int NT, bool kTail>
DEVMAP_TARGET_AVX2 DEVMAP_INLINE void accumulate(__m256 (&acc)[MO][NT], const float* d, int64_t plane, const float* x,
                                                 int64_t ld, __m256i tail_mask) {
  __m256 xv[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) xv[t] = _mm256_loadu_ps(x + t * ld);
#pragma GCC unroll 4
  for (int o = 0; o < MO; ++o) {
    const __m256 dv = kTail ? _mm256_maskload_ps(d + o * plane, tail_mask) : _mm256_loadu_ps(d + o * plane);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) acc[o][t] = _mm256_fmadd_ps(dv, xv[t], acc[o][t]);
  }
}

// One sample's part of the chains of filters [o0, o0 + MO) and taps [tap,
// tap + NT): the lanes taken from `lanes` ([filters][taps][8]), every
// position's vector added, and put back.
template <int MO, int NT>
DEVMAP_TARGET_AVX2 void tap_block(const Columns& cols, const float* dy, const float* x, int64_t o0, int64_t tap,
                                  __m256i tail_mask, float* lanes) {
  const int64_t full = cols.positions / kLanes * kLanes;
  __m256 acc[MO][NT];
  for (int o = 0; o < MO; ++o)
    for (int t = 0; t < NT; ++t) acc[o][t] = _mm256_loadu_ps(lanes + ((o0 + o) * cols.taps + tap + t) * kLanes);
  for (int64_t p = 0; p < full; p += kLanes)
    accumulate<MO, NT, false>(acc, dy + p, cols.positions, x + p, cols.ld, tail_mask);
  if (full < cols.positions) accumulate<MO, NT, true>(acc, dy + full, cols.positions, x + full, cols.ld, tail_mask);
  for (int o = 0; o < MO; ++o)
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(lanes + ((o0 + o) * cols.taps + tap + t) * kLanes, acc[o][t]);
}

// Samples [n0, n0 + count) (their columns at `x`) added to the lanes of
// filters [o0, o0 + MO), sample by sample.
template <int MO>
DEVMAP_TARGET_AVX2 void filter_block(const DirectWeightGradient& op, const Columns& cols, const float* x, int64_t n0,
                                     int64_t count, int64_t o0, float* lanes) {
  const ConvGeometry& g = *op.geometry;
  const __m256i tail_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(cols.positions % kLanes)),
                                               _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t n = 0; n < count; ++n) {
    const float* dy = op.dy + ((n0 + n) * g.filters + o0) * cols.positions;
    const float* xs = x + n * cols.sample();
    int64_t t = 0;
    for (; t + kBlockTaps <= cols.taps; t += kBlockTaps)
      tap_block<MO, kBlockTaps>(cols, dy, xs + t * cols.ld, o0, t, tail_mask, lanes);
    for (; t < cols.taps; ++t) tap_block<MO, 1>(cols, dy, xs + t * cols.ld, o0, t, tail_mask, lanes);
  }
}

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), as the header says.
float lane_sum(const float* l) {
  float h[4];
  for (int i = 0; i < 4; ++i) h[i] = l[i] + l[i + 4];
  return (h[0] + h[2]) + (h[1] + h[3]);
}

}  // namespace

void conv_direct_weight_gradient(ThreadPool* pool, const DirectWeightGradient& op) {
  const ConvGeometry& g = *op.geometry;
  if (!conv_direct_weight_gradient_runs(g))
    throw_runtime("conv2d: the direct weight gradient cannot run this convolution on the " +
                  std::string(cpu_path_name(active_cpu_path())) + " path");
  const Columns cols(g);
  const int64_t group =
      std::max<int64_t>(1, std::min(op.batch, kGroupBytes / (cols.sample() * int64_t{sizeof(float)})));
  thread_local std::vector<float> columns_buffer, lanes_buffer;
  float* x = thread_buffer(columns_buffer, group * cols.sample());
  float* lanes = thread_buffer(lanes_buffer, g.filters * cols.taps * kLanes);
  std::fill(lanes, lanes + g.filters * cols.taps * kLanes, 0.0f);
  const int64_t blocks = (g.filters + kBlockFilters - 1) / kBlockFilters;
  for (int64_t n0 = 0; n0 < op.batch; n0 += group) {
    const int64_t count = std::min(group, op.batch - n0);
    make_columns(pool, op, cols, n0, count, x);
    parallel_for(pool, blocks, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t o0 = b * kBlockFilters, mo = std::min<int64_t>(kBlockFilters, g.filters - o0);
        if (mo == 4) filter_block<4>(op, cols, x, n0, count, o0, lanes);
        if (mo == 3) filter_block<3>(op, cols, x, n0, count, o0, lanes);
        if (mo == 2) filter_block<2>(op, cols, x, n0, count, o0, lanes);
        if (mo == 1) filter_block<1>(op, cols, x, n0, count, o0, lanes);
      }
    });
  }
  parallel_for_elements(pool, g.filters * cols.taps, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float s = lane_sum(lanes + i * kLanes);
      op.dw[i] = op.accumulate ? op.dw[i] + s : s;
    }
  });
}

#else

void conv_direct_weight_gradient(ThreadPool*, const DirectWeightGradient&) {
  throw_runtime("conv2d: the direct weight gradient is built for x86-64 only");
}

#endif

}  // namespace devmap::cpu
