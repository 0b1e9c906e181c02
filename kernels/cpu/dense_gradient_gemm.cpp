// The fused multiply-adds are explicit (_mm512_fmadd_ps), so the chains do
// not depend on the compiler contracting `a * b + c`. Each lane of a vector
// is one output (the vectors run along the outputs' columns), so a chain
// paused by storing its partial sum as a float and resumed by loading it
// again is the same chain. Every function here is built for AVX-512.
#include "kernels/cpu/dense_gradient_gemm.h"

#include <algorithm>
#include <type_traits>

#include "kernels/cpu/cpu_dispatch.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace devmap::cpu {
namespace {

using V16 = __m512;
constexpr int kLanes = 16;

// The first n lanes of a vector, 1 <= n <= 16.
__mmask16 first_lanes(int64_t n) {
  return n >= kLanes ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << n) - 1);
}

// The columns a tile of NV vectors covers from column `at`: NV - 1 whole
// vectors and a last one of `last` lanes.
struct Columns {
  int64_t at;
  __mmask16 last;
};

template <int NV>
DEVMAP_INLINE __mmask16 lanes_of(int v, const Columns& c) {
  return v == NV - 1 ? c.last : static_cast<__mmask16>(0xFFFF);
}

// Runs tile<NV>(columns) over [begin, end) in tiles of kVectors vectors,
// then one of the 1 or 2 vectors left, its last one partial.
template <int kVectors, class Tile>
DEVMAP_INLINE void for_column_tiles(int64_t begin, int64_t end, const Tile& tile) {
  static_assert(kVectors == 3, "the tiles left over have 1 or 2 vectors");
  for (int64_t i = begin; i < end; i += kVectors * kLanes) {
    const int64_t width = std::min<int64_t>(kVectors * kLanes, end - i);
    const int64_t vectors = (width + kLanes - 1) / kLanes;
    const Columns c{i, first_lanes(width - (vectors - 1) * kLanes)};
    if (vectors == kVectors)
      tile(std::integral_constant<int, kVectors>{}, c);
    else if (vectors == 2)
      tile(std::integral_constant<int, 2>{}, c);
    else
      tile(std::integral_constant<int, 1>{}, c);
  }
}

// dx for rows [m, m + MR), NV vectors of columns, over units [u0, u1): the
// chains start from zero at u0 == 0, else from the partial sums in dx.
template <int MR, int NV>
DEVMAP_TARGET_AVX512 DEVMAP_INLINE void input_gradient_tile(const DenseGradientOperands& o, float* dx, int64_t m,
                                                            const Columns& c, int64_t u0, int64_t u1) {
  const int64_t in = o.forward.in, units = o.forward.units;
  float* out = dx + m * in + c.at;
  V16 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = u0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(lanes_of<NV>(v, c), out + r * in + v * kLanes);
  const float* w = o.forward.w + u0 * in + c.at;
  const float* dy = o.dy + m * units;
  for (int64_t u = u0; u < u1; ++u, w += in) {
    V16 wv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) wv[v] = _mm512_maskz_loadu_ps(lanes_of<NV>(v, c), w + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const V16 d = _mm512_set1_ps(dy[r * units + u]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(d, wv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_mask_storeu_ps(out + r * in + v * kLanes, lanes_of<NV>(v, c), acc[r][v]);
}

// dx: blocks of kInputUnitBlock units (their rows of w, kInputVectors
// vectors wide, stay in L1 while every row of dy passes), in tiles of
// kInputRows rows by kInputVectors vectors (24 accumulators of the 32
// registers). The blocks and tiles change the speed, never the bits.
constexpr int kInputRows = 8, kInputVectors = 3;
constexpr int64_t kInputUnitBlock = 64;

DEVMAP_TARGET_AVX512 void input_gradient_avx512(const DenseGradientOperands& o, float* dx, ColumnRange inputs) {
  const int64_t rows = o.forward.rows, units = o.forward.units;  // units >= 1 (the op's schema)
  for (int64_t u0 = 0; u0 < units; u0 += kInputUnitBlock) {
    const int64_t u1 = std::min(units, u0 + kInputUnitBlock);
    for_column_tiles<kInputVectors>(inputs.begin, inputs.end, [&](auto vectors, const Columns& c) DEVMAP_TARGET_AVX512 {
      constexpr int NV = decltype(vectors)::value;
      int64_t m = 0;
      for (; m + kInputRows <= rows; m += kInputRows) input_gradient_tile<kInputRows, NV>(o, dx, m, c, u0, u1);
      for (; m < rows; ++m) input_gradient_tile<1, NV>(o, dx, m, c, u0, u1);
    });
  }
}

// dW for units [u, u + NU), NV vectors of columns: each chunk's chains in
// registers, then stored or added (the tile's dW stays in L1 between
// chunks).
template <int NU, int NV>
DEVMAP_TARGET_AVX512 DEVMAP_INLINE void weight_gradient_tile(const DenseGradientOperands& o, GradientChunks chunks,
                                                             float* dw, int64_t u, const Columns& c) {
  const int64_t rows = o.forward.rows, in = o.forward.in, units = o.forward.units;
  const int64_t chunk = chunks.rows > 0 ? chunks.rows : std::max<int64_t>(rows, 1);
  float* out = dw + u * in + c.at;
  for (int64_t first = 0; first == 0 || first < rows; first += chunk) {
    V16 acc[NU][NV];
#pragma GCC unroll 8
    for (int r = 0; r < NU; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
    const int64_t end = std::min(rows, first + chunk);
    for (int64_t m = first; m < end; ++m) {
      const float* x = o.forward.x + m * in + c.at;
      V16 xv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) xv[v] = _mm512_maskz_loadu_ps(lanes_of<NV>(v, c), x + v * kLanes);
      const float* dy = o.dy + m * units + u;
#pragma GCC unroll 8
      for (int r = 0; r < NU; ++r) {
        const V16 d = _mm512_set1_ps(dy[r]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(d, xv[v], acc[r][v]);
      }
    }
    const bool store = first == 0 && !chunks.accumulate;
#pragma GCC unroll 8
    for (int r = 0; r < NU; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const __mmask16 lanes = lanes_of<NV>(v, c);
        float* p = out + r * in + v * kLanes;
        const V16 share = store ? acc[r][v] : _mm512_add_ps(_mm512_maskz_loadu_ps(lanes, p), acc[r][v]);
        _mm512_mask_storeu_ps(p, lanes, share);
      }
  }
}

// dW: tiles of kWeightUnits units by kWeightVectors vectors (24
// accumulators), a tile's units' rows of dW walked along their columns.
constexpr int kWeightUnits = 8, kWeightVectors = 3;

DEVMAP_TARGET_AVX512 void weight_gradient_avx512(const DenseGradientOperands& o, GradientChunks chunks, float* dw,
                                                 ColumnRange units) {
  const int64_t in = o.forward.in;
  int64_t u = units.begin;
  for (; u + kWeightUnits <= units.end; u += kWeightUnits)
    for_column_tiles<kWeightVectors>(0, in, [&](auto vectors, const Columns& c) DEVMAP_TARGET_AVX512 {
      weight_gradient_tile<kWeightUnits, decltype(vectors)::value>(o, chunks, dw, u, c);
    });
  for (; u < units.end; ++u)
    for_column_tiles<kWeightVectors>(0, in, [&](auto vectors, const Columns& c) DEVMAP_TARGET_AVX512 {
      weight_gradient_tile<1, decltype(vectors)::value>(o, chunks, dw, u, c);
    });
}

}  // namespace

void dense_gemm_input_gradient(const DenseGradientOperands& o, float* dx, ColumnRange inputs) {
  input_gradient_avx512(o, dx, inputs);
}

void dense_gemm_weight_gradient(const DenseGradientOperands& o, GradientChunks chunks, float* dw, ColumnRange units) {
  weight_gradient_avx512(o, chunks, dw, units);
}

}  // namespace devmap::cpu

#else  // no AVX-512 path on this architecture: the dense kernel calls sgemm

namespace devmap::cpu {

void dense_gemm_input_gradient(const DenseGradientOperands&, float*, ColumnRange) {}
void dense_gemm_weight_gradient(const DenseGradientOperands&, GradientChunks, float*, ColumnRange) {}

}  // namespace devmap::cpu

#endif
