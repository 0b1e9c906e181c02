// Every function here is built for AVX2. A row of n <= 8 outputs reads its
// 2n inputs of each input row as two loads of 8 floats, splits them into the
// windows' left and right columns with one shuffle and one cross-lane
// permute each, and (backward) interleaves the two columns' gradients back
// the same way. Loads and stores are masked only past a row's end: masked
// ones throughout made pool1's backward 2.5x slower on a Zen 3.
// Comparisons give all-ones lanes where true, and a select is a blend by
// them.
#include <algorithm>

#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/max_pool2x2_vectors.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace devmap::cpu {
namespace {

constexpr int64_t kLanes = 8;

// All-ones in the first n lanes (n clamped to [0, 8]).
DEVMAP_TARGET_AVX2 DEVMAP_INLINE __m256i first(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(n, 0, kLanes))),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The first `count` floats at p (count clamped to [0, 8]), zeros after: a
// plain load when all 8 are wanted (a masked one costs more).
DEVMAP_TARGET_AVX2 DEVMAP_INLINE __m256 load_first(const float* p, int64_t count) {
  return count >= kLanes ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, first(count));
}

// Writes the first `count` lanes of v at p (count clamped to [0, 8]): a
// plain store when all 8 are (a masked store costs far more).
DEVMAP_TARGET_AVX2 DEVMAP_INLINE void store_first(float* p, int64_t count, __m256 v) {
  if (count >= kLanes) return _mm256_storeu_ps(p, v);
  if (count > 0) _mm256_maskstore_ps(p, first(count), v);
}

// Elements [0, 2n) of an input row from p, as the windows' left column
// (even elements) and right column (odd ones), lane j for output j; lanes
// from n on are zero.
struct Columns {
  __m256 left, right;
};
DEVMAP_TARGET_AVX2 DEVMAP_INLINE Columns load_columns(const float* p, int64_t n) {
  const __m256 lo = load_first(p, 2 * n), hi = load_first(p + kLanes, 2 * n - kLanes);
  // Within each 128-bit half: lo's two evens (odds), then hi's; the halves'
  // 64-bit quarters reordered to lo 0-3, hi 0-3... lo 4-7, hi 4-7.
  constexpr int kQuarters = 0xd8;  // quarters 0, 2, 1, 3
  const __m256 evens = _mm256_shuffle_ps(lo, hi, 0x88), odds = _mm256_shuffle_ps(lo, hi, 0xdd);
  return {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), kQuarters)),
          _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odds), kQuarters))};
}

// Writes elements [0, 2n) of a d_in row: left[j] at 2j, right[j] at 2j + 1.
DEVMAP_TARGET_AVX2 DEVMAP_INLINE void store_columns(float* p, int64_t n, __m256 left, __m256 right) {
  const __m256 low = _mm256_unpacklo_ps(left, right), high = _mm256_unpackhi_ps(left, right);
  store_first(p, 2 * n, _mm256_permute2f128_ps(low, high, 0x20));
  store_first(p + kLanes, 2 * n - kLanes, _mm256_permute2f128_ps(low, high, 0x31));
}

DEVMAP_TARGET_AVX2 DEVMAP_INLINE __m256 is_nan(__m256 v) {
  return _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
}

// max_pool2d.cpp's pick(v, m): v where v > m or v is the first NaN, else m.
DEVMAP_TARGET_AVX2 DEVMAP_INLINE __m256 pick(__m256 v, __m256 m) {
  const __m256 replaces = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_andnot_ps(is_nan(m), is_nan(v)));
  return _mm256_blendv_ps(m, v, replaces);
}

// max_pool2d.cpp's matches(v, m): equal, or both NaN.
DEVMAP_TARGET_AVX2 DEVMAP_INLINE __m256 matches(__m256 v, __m256 m) {
  return _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_EQ_OQ), _mm256_and_ps(is_nan(v), is_nan(m)));
}

// All lanes without the relu before the pool, else those above zero (the
// relu's backward).
DEVMAP_TARGET_AVX2 DEVMAP_INLINE __m256 kept(bool relu, __m256 v) {
  return relu ? _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ) : _mm256_castsi256_ps(_mm256_set1_epi32(-1));
}

// gr in the lanes an element takes the gradient (`lanes`, and kept), +0.0
// in the others.
DEVMAP_TARGET_AVX2 DEVMAP_INLINE __m256 taken(__m256 lanes, bool relu, __m256 v, __m256 gr) {
  return _mm256_and_ps(_mm256_and_ps(lanes, kept(relu, v)), gr);
}

}  // namespace

DEVMAP_TARGET_AVX2 void max_pool2x2_forward_avx2(const Plane2x2& g, const float* in, float* out) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = in + 2 * oh * g.width;
    const float* r1 = r0 + g.width;
    for (int64_t ow = 0; ow < g.out_w; ow += kLanes) {
      const int64_t n = std::min(kLanes, g.out_w - ow);
      const Columns top = load_columns(r0 + 2 * ow, n), bottom = load_columns(r1 + 2 * ow, n);
      const __m256 m = pick(bottom.right, pick(bottom.left, pick(top.right, top.left)));
      store_first(out + oh * g.out_w + ow, n, m);
    }
  }
}

DEVMAP_TARGET_AVX2 void max_pool2x2_backward_avx2(const Plane2x2& g, const float* in, const float* m,
                                                  const float* d_out, float* d_in, bool relu) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = in + 2 * oh * g.width;
    const float* r1 = r0 + g.width;
    float* d0 = d_in + 2 * oh * g.width;
    float* d1 = d0 + g.width;
    for (int64_t ow = 0; ow < g.out_w; ow += kLanes) {
      const int64_t n = std::min(kLanes, g.out_w - ow);
      const __m256 mx = load_first(m + oh * g.out_w + ow, n), gr = load_first(d_out + oh * g.out_w + ow, n);
      const Columns top = load_columns(r0 + 2 * ow, n), bottom = load_columns(r1 + 2 * ow, n);
      const __m256 a = matches(top.left, mx);
      const __m256 b = _mm256_andnot_ps(a, matches(top.right, mx));
      const __m256 c = _mm256_andnot_ps(_mm256_or_ps(a, b), matches(bottom.left, mx));
      const __m256 d = _mm256_andnot_ps(_mm256_or_ps(_mm256_or_ps(a, b), c), _mm256_castsi256_ps(first(kLanes)));
      store_columns(d0 + 2 * ow, n, taken(a, relu, top.left, gr), taken(b, relu, top.right, gr));
      store_columns(d1 + 2 * ow, n, taken(c, relu, bottom.left, gr), taken(d, relu, bottom.right, gr));
    }
    for (int64_t w = 2 * g.out_w; w < g.width; ++w) d0[w] = d1[w] = 0.0f;  // odd width
  }
  std::fill(d_in + 2 * g.out_h * g.width, d_in + g.height * g.width, 0.0f);  // odd height
}

}  // namespace devmap::cpu

#endif
