// Every function here is built for AVX-512. A row of n <= 16 outputs reads
// its 2n inputs of each input row as two masked loads of 16 floats, splits
// them into the windows' left and right columns with one permute each, and
// (backward) interleaves the two columns' gradients back the same way.
#include <algorithm>

#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/max_pool2x2_vectors.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace devmap::cpu {
namespace {

constexpr int64_t kLanes = 16;

// The first n bits set.
DEVMAP_TARGET_AVX512 DEVMAP_INLINE __mmask16 first(int64_t n) {
  return static_cast<__mmask16>((1u << n) - 1u);
}

// Elements [0, 2n) of an input row from p, as the windows' left column
// (even elements) and right column (odd ones), lane j for output j; lanes
// from n on are zero.
struct Columns {
  __m512 left, right;
};
DEVMAP_TARGET_AVX512 DEVMAP_INLINE Columns load_columns(const float* p, int64_t n) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 lo = _mm512_maskz_loadu_ps(first(std::min<int64_t>(2 * n, kLanes)), p);
  const __m512 hi = _mm512_maskz_loadu_ps(first(std::max<int64_t>(2 * n - kLanes, 0)), p + kLanes);
  return {_mm512_permutex2var_ps(lo, evens, hi), _mm512_permutex2var_ps(lo, odds, hi)};
}

// Writes elements [0, 2n) of a d_in row: left[j] at 2j, right[j] at 2j + 1.
DEVMAP_TARGET_AVX512 DEVMAP_INLINE void store_columns(float* p, int64_t n, __m512 left, __m512 right) {
  const __m512i low_half = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i high_half = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  _mm512_mask_storeu_ps(p, first(std::min<int64_t>(2 * n, kLanes)), _mm512_permutex2var_ps(left, low_half, right));
  _mm512_mask_storeu_ps(p + kLanes, first(std::max<int64_t>(2 * n - kLanes, 0)),
                        _mm512_permutex2var_ps(left, high_half, right));
}

DEVMAP_TARGET_AVX512 DEVMAP_INLINE __mmask16 is_nan(__m512 v) {
  return _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
}

// max_pool2d.cpp's pick(v, m): v where v > m or v is the first NaN, else m.
DEVMAP_TARGET_AVX512 DEVMAP_INLINE __m512 pick(__m512 v, __m512 m) {
  const __mmask16 replaces = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | (is_nan(v) & ~is_nan(m));
  return _mm512_mask_blend_ps(replaces, m, v);
}

// max_pool2d.cpp's matches(v, m): equal, or both NaN.
DEVMAP_TARGET_AVX512 DEVMAP_INLINE __mmask16 matches(__m512 v, __m512 m) {
  return _mm512_cmp_ps_mask(v, m, _CMP_EQ_OQ) | (is_nan(v) & is_nan(m));
}

// All lanes without the relu before the pool, else those above zero (the
// relu's backward).
DEVMAP_TARGET_AVX512 DEVMAP_INLINE __mmask16 kept(bool relu, __m512 v) {
  return relu ? _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ) : static_cast<__mmask16>(0xffff);
}

}  // namespace

DEVMAP_TARGET_AVX512 void max_pool2x2_forward_avx512(const Plane2x2& g, const float* in, float* out) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = in + 2 * oh * g.width;
    const float* r1 = r0 + g.width;
    for (int64_t ow = 0; ow < g.out_w; ow += kLanes) {
      const int64_t n = std::min(kLanes, g.out_w - ow);
      const Columns top = load_columns(r0 + 2 * ow, n), bottom = load_columns(r1 + 2 * ow, n);
      const __m512 m = pick(bottom.right, pick(bottom.left, pick(top.right, top.left)));
      _mm512_mask_storeu_ps(out + oh * g.out_w + ow, first(n), m);
    }
  }
}

DEVMAP_TARGET_AVX512 void max_pool2x2_backward_avx512(const Plane2x2& g, const float* in, const float* m,
                                                      const float* d_out, float* d_in, bool relu) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const float* r0 = in + 2 * oh * g.width;
    const float* r1 = r0 + g.width;
    float* d0 = d_in + 2 * oh * g.width;
    float* d1 = d0 + g.width;
    for (int64_t ow = 0; ow < g.out_w; ow += kLanes) {
      const int64_t n = std::min(kLanes, g.out_w - ow);
      const __m512 mx = _mm512_maskz_loadu_ps(first(n), m + oh * g.out_w + ow);
      const __m512 gr = _mm512_maskz_loadu_ps(first(n), d_out + oh * g.out_w + ow);
      const Columns top = load_columns(r0 + 2 * ow, n), bottom = load_columns(r1 + 2 * ow, n);
      const __mmask16 a = matches(top.left, mx);
      const __mmask16 b = ~a & matches(top.right, mx);
      const __mmask16 c = ~(a | b) & matches(bottom.left, mx);
      const __mmask16 d = ~(a | b | c);
      store_columns(d0 + 2 * ow, n, _mm512_maskz_mov_ps(a & kept(relu, top.left), gr),
                    _mm512_maskz_mov_ps(b & kept(relu, top.right), gr));
      store_columns(d1 + 2 * ow, n, _mm512_maskz_mov_ps(c & kept(relu, bottom.left), gr),
                    _mm512_maskz_mov_ps(d & kept(relu, bottom.right), gr));
    }
    for (int64_t w = 2 * g.out_w; w < g.width; ++w) d0[w] = d1[w] = 0.0f;  // odd width
  }
  std::fill(d_in + 2 * g.out_h * g.width, d_in + g.height * g.width, 0.0f);  // odd height
}

}  // namespace devmap::cpu

#endif
